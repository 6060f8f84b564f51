/* The metamorphic suite (metamorphic.h): a pair of configurations as a job file of its own, the
 * report of a violation with that job, checked by reading it back, and the comparison of rows. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metamorphic.h"

/* cdse_record_eval / cdse_record_system on the job's study (model/record.h). */
void meta_record_eval(const cdse_job *job, uint64_t index, cdse_record *record)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_eval(&study, index, record);
}

void meta_record_system(const cdse_job *job, uint64_t index, cdse_system *system)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_system(&study, index, system);
}

const char *const meta_relation_name[REL_COUNT] = {
    "compute_better",   "memory_bw_better",  "network_better", "hbm_more",  "recompute_more",
    "recompute_layers", "recompute_modules", "zero_higher",    "duplicate", "order",
    "definitions"};

/* ---- A pair as a job file ------------------------------------------------------------- */

/* Restricts axis `a` of `p` to the values at digits da and db of the source jobs (one or two
 * values); *ia, *ib receive their positions. */
static void restrict_axis(cdse_job *p, int a, int64_t va, int64_t vb, int *ia, int *ib)
{
    p->space.n[a] = 1;
    p->space.value[a][0] = va;
    *ia = *ib = 0;
    if (vb != va) {
        p->space.n[a] = 2;
        p->space.value[a][1] = vb;
        *ib = 1;
    }
}

/* Appends system `sys` of `src` (a pool with its members) to p->system at position `at`
 * (members after `*end`). */
static void put_system(cdse_job *p, int at, const cdse_job *src, int sys, int *end)
{
    p->system[at] = src->system[sys];
    p->system_stack[at] = src->system_stack[sys];
    for (int t = 0; t < src->system[sys].pool.n_types; t++) {
        p->system[*end] = src->system[src->system[sys].pool.member[t]];
        p->system_stack[*end] = -1;
        p->system[at].pool.member[t] = (*end)++;
    }
}

/* The axes of which a job must have one value that fits every model and system (the job is
 * refused otherwise): a pair on a value that does not fit keeps their whole lists. */
static bool is_checked_axis(int a)
{
    return a == CDSE_AXIS_GPUS || a == CDSE_AXIS_TP || a == CDSE_AXIS_PP || a == CDSE_AXIS_VPP ||
           a == CDSE_AXIS_EP || a == CDSE_AXIS_PRECISION || a == CDSE_AXIS_OFFLOAD;
}

/* `p` = the configurations da of ja and db of jb (jb is ja, or ja with one system changed) as
 * one job; *ia and *ib their indices in it. -1 when the job cannot be written that way (sizes
 * per system). */
static int pair_job(cdse_job *p, const cdse_job *ja, const int *da, const cdse_job *jb,
                    const int *db, bool wide, uint64_t *ia, uint64_t *ib)
{
    if (ja->n_system_gpus > 0 || (ja != jb && ja->n_hw_axes > 0))
        return -1;
    memcpy(p, ja, sizeof *p);
    p->text = NULL;
    p->text_len = 0;
    int pa[CDSE_AXIS_COUNT], pb[CDSE_AXIS_COUNT];
    int ma = (int)ja->space.value[CDSE_AXIS_MODEL][da[CDSE_AXIS_MODEL]];
    int mb = (int)jb->space.value[CDSE_AXIS_MODEL][db[CDSE_AXIS_MODEL]];
    p->model[0] = ja->model[ma];
    p->model[1] = jb->model[mb];
    p->n_models = ma == mb ? 1 : 2;
    restrict_axis(p, CDSE_AXIS_MODEL, 0, ma == mb ? 0 : 1, &pa[0], &pb[0]);
    int sa = (int)ja->space.value[CDSE_AXIS_SYSTEM][da[CDSE_AXIS_SYSTEM]];
    int sb = (int)jb->space.value[CDSE_AXIS_SYSTEM][db[CDSE_AXIS_SYSTEM]];
    bool two = sa != sb || ja != jb;
    int end = two ? 2 : 1;
    put_system(p, 0, ja, sa, &end);
    if (two)
        put_system(p, 1, jb, sb, &end);
    if (two && strcmp(p->system[0].name, p->system[1].name) == 0) {
        char name[CDSE_NAME_MAX];
        snprintf(name, sizeof name, "%.38s-changed", p->system[1].name);
        memcpy(p->system[1].name, name, sizeof name);
    }
    p->n_systems = end;
    restrict_axis(p, CDSE_AXIS_SYSTEM, 0, two ? 1 : 0, &pa[1], &pb[1]);
    /* Hardware axes (same job only): those of the two systems, at the two values. */
    int n_hw = 0;
    for (int h = 0; h < ja->n_hw_axes; h++) {
        const cdse_hw_axis *axis = &ja->hw_axis[h];
        if (axis->system != sa && axis->system != sb)
            continue;
        cdse_hw_axis *to = &p->hw_axis[n_hw];
        *to = *axis;
        to->system = axis->system == sa ? 0 : 1;
        double va = axis->value[da[CDSE_AXIS_HW0 + h]], vb = axis->value[db[CDSE_AXIS_HW0 + h]];
        to->value[0] = va;
        to->value[1] = vb;
        to->n = va == vb ? 1 : 2;
        restrict_axis(p, CDSE_AXIS_HW0 + n_hw, 0, va == vb ? 0 : 1, &pa[CDSE_AXIS_HW0 + n_hw],
                      &pb[CDSE_AXIS_HW0 + n_hw]);
        n_hw++;
    }
    p->n_hw_axes = n_hw;
    for (int h = n_hw; h < CDSE_MAX_HW_AXES; h++)
        restrict_axis(p, CDSE_AXIS_HW0 + h, 0, 0, &pa[CDSE_AXIS_HW0 + h], &pb[CDSE_AXIS_HW0 + h]);
    for (int a = CDSE_AXIS_GPUS; a < CDSE_AXIS_COUNT; a++) {
        if (wide && is_checked_axis(a)) {
            pa[a] = da[a];
            pb[a] = db[a];
        } else {
            restrict_axis(p, a, ja->space.value[a][da[a]], jb->space.value[a][db[a]], &pa[a],
                          &pb[a]);
        }
    }
    cdse_diag diag;
    if (cdse_space_finish(&p->space, &diag) != 0)
        return -1;
    *ia = cdse_space_encode(&p->space, pa);
    *ib = cdse_space_encode(&p->space, pb);
    return 0;
}

/* Prints the violation: the relation, what differs, both values, and the pair as a job,
 * checked by reading it back and evaluating its two rows. */
void meta_report(meta_ctx *ctx, int rel, const char *what, double a, double b, const cdse_job *ja,
                 uint64_t index_a, const cdse_job *jb, uint64_t index_b)
{
    ctx->violations[rel]++;
    if (ctx->violations[rel] > ctx->show) {
        if (ctx->show_lines)
            printf("VIOLATION %s: %s: A %.17g, B %.17g\n", meta_relation_name[rel], what, a, b);
        return;
    }
    int da[CDSE_AXIS_COUNT], db[CDSE_AXIS_COUNT];
    cdse_space_decode(&ja->space, index_a, da);
    cdse_space_decode(&jb->space, index_b, db);
    printf("VIOLATION %s: %s: A %.17g, B %.17g\n", meta_relation_name[rel], what, a, b);
    /* The two rows alone, else with the lists of the axes the loader checks kept whole. */
    uint64_t ia = 0, ib = 0;
    char *text = NULL;
    cdse_diag diag = {{0}};
    bool read = false;
    for (int wide = 0; wide < 2 && !read; wide++) {
        free(text);
        text = NULL;
        size_t len = 0;
        FILE *mem;
        if (pair_job(ctx->pair, ja, da, jb, db, wide, &ia, &ib) != 0 ||
            (mem = open_memstream(&text, &len)) == NULL) {
            printf("  (this pair cannot be written as one job: sizes per system)\n");
            return;
        }
        cdse_job_print(mem, ctx->pair);
        fclose(mem);
        read = cdse_job_load_text(text, JOB_PATH, ctx->check, &diag) == 0;
    }
    const char *check = "NOT reproduced (the job does not read back) by";
    if (read) {
        cdse_record ra, rb;
        meta_record_eval(ctx->check, ia, &ra);
        meta_record_eval(ctx->check, ib, &rb);
        bool differ = ra.result.time_per_iteration_s != rb.result.time_per_iteration_s ||
                      ra.result.mem_total_gib != rb.result.mem_total_gib ||
                      ra.result.status != rb.result.status;
        check = rel == REL_DEFINITIONS ? "the row is that of"
                : differ               ? "reproduced by"
                         : "the two rows read back equal in time, memory and status; see";
        cdse_job_free(ctx->check);
    } else {
        printf("  (the pair job does not read back: %s)\n", diag.msg);
    }
    printf("  A = row index %llu, B = row index %llu of `clusterdse eval pair.cfg --csv`; %s "
           "this pair.cfg:\n",
           (unsigned long long)ia, (unsigned long long)ib, check);
    printf("----- pair.cfg -----\n# metamorphic %s: %s\n%s----- end -----\n",
           meta_relation_name[rel], what, text);
    free(text);
}

/* ---- Comparing rows ------------------------------------------------------------------- */

/* The first column (other than index and, with skip_system, system) in which two rows differ;
 * names compared as text, numbers exactly. NULL when none. */
const cdse_column *meta_row_diff(const cdse_job *ja, const cdse_record *a, const cdse_job *jb,
                                 const cdse_record *b, bool skip_system, double *va, double *vb)
{
    for (int c = 0; c < cdse_column_count; c++) {
        const cdse_column *col = &cdse_columns[c];
        if (strcmp(col->name, "index") == 0 || (skip_system && col->kind == CDSE_COL_SYSTEM))
            continue;
        if (col->kind == CDSE_COL_MODEL || col->kind == CDSE_COL_SYSTEM ||
            col->kind == CDSE_COL_STACK) {
            char ta[256], tb[256];
            cdse_column_format(col, a, ja, ta, sizeof ta);
            cdse_column_format(col, b, jb, tb, sizeof tb);
            if (strcmp(ta, tb) != 0) {
                *va = *vb = NAN;
                return col;
            }
            continue;
        }
        *va = cdse_column_value(col, a);
        *vb = cdse_column_value(col, b);
        if (!(*va == *vb || (isnan(*va) && isnan(*vb))))
            return col;
    }
    return NULL;
}
