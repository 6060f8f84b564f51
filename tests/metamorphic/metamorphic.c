/* Metamorphic test suite of the model (docs/testing.md): relations that must hold between the
 * answers for random jobs over the zoo and every strategy axis, checked through the evaluator's
 * C API (cdse_record_eval, as `clusterdse eval` and the sweep call it).
 *
 *   compute_better      a better peak, GEMM or attention efficiency is never slower
 *   memory_bw_better    a higher HBM bandwidth or efficiency is never slower
 *   network_better      a higher network bandwidth or efficiency, or a lower latency (a level's
 *                       own or a fitted collective's), is never slower
 *   hbm_more            more HBM (or second-tier capacity) is never infeasible where less was
 *                       feasible, and never slower
 *   recompute_more      none -> selective -> full is never faster (without activation offload,
 *                       whose traffic recomputation shrinks) and never more memory (off pools,
 *                       whose pipeline split fills the memory it frees)
 *   recompute_layers    more fully recomputed layers per chunk: likewise
 *   recompute_modules   a superset of recomputed modules: likewise
 *   zero_higher         a higher ZeRO stage never keeps more memory (off pools, likewise)
 *   duplicate           a configuration evaluated twice, and on a copy of its system under
 *                       another name, gives the same row
 *   order               the job with every list in another order gives the same rows
 *   definitions         tokens/s, model TFLOP/s, MFU, HFU, days, GPU-hours, cost, energy and
 *                       tokens/kWh recomputed from the row's own inputs by docs/eval.md and
 *                       docs/job-file.md (Cost and energy), and the status against the memory
 *
 * Eval against sweep and pruned against exhaustive run through the command line in
 * tests/sh/metamorphic_sweep.sh, from jobs this program writes (--emit-job).
 *
 * A violation prints the relation, both values and the pair as a job file whose two
 * configurations reproduce it (`clusterdse eval pair.cfg --csv`), after checking that they do.
 *
 * Usage: metamorphic [--pairs N] [--seed S] [--show N] [--lines] [--quiet] [--known FILE]
 *        metamorphic --emit-job sweep|prune|exhaustive [--seed S]
 *   --pairs N     pairs to check (default 10,000), over as many generated jobs as that takes
 *   --seed S      the generator's seed (default 20261203)
 *   --show N      violations printed with their pair job per relation (default 3)
 *   --lines       the other violations as one line each
 *   --quiet       no listing of refused generated jobs
 *   --known FILE  pass when each relation finds exactly the violations FILE lists (a ratchet, as
 *                 tests/validation/known_gaps.txt, for a run with violations still open)
 *   --emit-job K  print one generated job of kind K for tests/sh/metamorphic_sweep.sh
 * Exit 0: no violation (or exactly the known ones); 1: violations; 2: the zoo or a generated job
 * could not be read. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clusterdse/config/job.h"
#include "clusterdse/sweep/report.h"
#include "gen.h"

/* cdse_record_eval / cdse_record_system on the job's study (model/record.h). */
static void job_record_eval(const cdse_job *job, uint64_t index, cdse_record *record)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_eval(&study, index, record);
}

static void job_record_system(const cdse_job *job, uint64_t index, cdse_system *system)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_system(&study, index, system);
}

/* The generated jobs resolve zoo names from the source tree (cdse_job_find_data). */
#define JOB_PATH      CDSE_SOURCE_DIR "/tests/metamorphic/generated.cfg"
#define DEFAULT_PAIRS 10000
#define DEFAULT_SEED  20261203u
/* Relative tolerance of an inequality between two evaluations (rounding of sums taken in
 * another order), and of a definition recomputed here (a few operations, IEEE doubles). */
#define REL_TOL          1e-9
#define DEF_TOL          1e-9
#define SAMPLES_PER_JOB  12  /* configurations drawn per generated job */
#define DRAWS_PER_SAMPLE 40  /* draws to find one that is not structurally impossible */
#define HARDWARE_CHANGES 3   /* random changes per hardware relation and configuration */
#define SWEEP_EVERY      4   /* every 4th job of the kind with hardware axes and pools */
#define EMIT_FEASIBLE    100 /* feasible configurations of a job for the command-line test */
#define PRINTED_PER_REL  3   /* violations printed in full per relation (--show N) */
#define SECONDS_PER_DAY  86400.0
#define SECONDS_PER_HOUR 3600.0
#define SECONDS_PER_YEAR (365.25 * 86400.0) /* Julian year, as docs/job-file.md */
#define JOULES_PER_KWH   3.6e6
#define JOULES_PER_MWH   3.6e9

enum relation {
    REL_COMPUTE = 0,
    REL_MEMORY_BW,
    REL_NETWORK,
    REL_HBM,
    REL_RECOMPUTE,
    REL_RECOMPUTE_LAYERS,
    REL_RECOMPUTE_MODULES,
    REL_ZERO,
    REL_DUPLICATE,
    REL_ORDER,
    REL_DEFINITIONS,
    REL_COUNT
};

static const char *const relation_name[REL_COUNT] = {
    "compute_better",   "memory_bw_better",  "network_better", "hbm_more",  "recompute_more",
    "recompute_layers", "recompute_modules", "zero_higher",    "duplicate", "order",
    "definitions"};

typedef struct meta_ctx {
    meta_rng rng;
    cdse_job *job;   /* the generated job */
    cdse_job *alt;   /* its copy with one system changed (hardware relations) */
    cdse_job *dup;   /* its copy with a system listed twice */
    cdse_job *order; /* the same job with every list in another order */
    cdse_job *pair;  /* a violating pair as a job of its own */
    cdse_job *check; /* that job read back */
    uint64_t fresh;  /* fingerprints of changed copies (report.c caches by fingerprint) */
    long pairs[REL_COUNT], violations[REL_COUNT];
    long jobs, rejected;
    bool quiet;
    long show;       /* violations printed with their pair job, per relation */
    bool show_lines; /* the others as one line each */
} meta_ctx;

/* Rows whose time and memory the evaluator computed: feasible, out of memory, or over the
 * headroom (a feasible row whose reserved memory the sweep's record finds above
 * hbm x (1 - objective.memory_headroom); issue 25). */
static bool computed(int status)
{
    return status == CDSE_ST_OK || status == CDSE_ST_OOM || status == CDSE_ST_OVER_HEADROOM;
}

/* a <= b within the relative tolerance. */
static bool at_most(double a, double b, double tol)
{
    return a <= b + tol * fabs(b) + 1e-300;
}

static bool near(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)) + 1e-300;
}

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
static void report(meta_ctx *ctx, int rel, const char *what, double a, double b, const cdse_job *ja,
                   uint64_t index_a, const cdse_job *jb, uint64_t index_b)
{
    ctx->violations[rel]++;
    if (ctx->violations[rel] > ctx->show) {
        if (ctx->show_lines)
            printf("VIOLATION %s: %s: A %.17g, B %.17g\n", relation_name[rel], what, a, b);
        return;
    }
    int da[CDSE_AXIS_COUNT], db[CDSE_AXIS_COUNT];
    cdse_space_decode(&ja->space, index_a, da);
    cdse_space_decode(&jb->space, index_b, db);
    printf("VIOLATION %s: %s: A %.17g, B %.17g\n", relation_name[rel], what, a, b);
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
        job_record_eval(ctx->check, ia, &ra);
        job_record_eval(ctx->check, ib, &rb);
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
    printf("----- pair.cfg -----\n# metamorphic %s: %s\n%s----- end -----\n", relation_name[rel],
           what, text);
    free(text);
}

/* ---- Comparing rows ------------------------------------------------------------------- */

/* The first column (other than index and, with skip_system, system) in which two rows differ;
 * names compared as text, numbers exactly. NULL when none. */
static const cdse_column *row_diff(const cdse_job *ja, const cdse_record *a, const cdse_job *jb,
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

/* ---- Definitions ---------------------------------------------------------------------- */

/* Model FLOPs per token, forward and backward, by Megatron-LM's counting
 * (num_floating_point_operations, megatron/training/training.py), as docs/eval.md defines
 * model_tflops_per_gpu: per layer 12 h q (1 + kv/a) for the projections, 12 s q for scores and
 * context over the full sequence, 12 h ffn (x 3/2 gated) for the MLP (x (top_k + shared) on an
 * MoE layer), and 6 h V for the logits. Written here again from that source, not called from
 * src/model. 0 for the models it does not cover (latent or sliding-window attention, MoE
 * layers other than every layer after the dense ones, length histograms). */
static double megatron_flops_per_token(const cdse_model *m)
{
    if (m->kv_lora_rank > 0 || m->sliding_window > 0 || m->n_seq_bins > 0 ||
        (m->experts > 0 && m->moe_every != 1))
        return 0.0;
    double h = m->hidden, s = m->seq_len, q = (double)m->heads * m->head_dim;
    double gated = m->gated_mlp ? 1.5 : 1.0;
    double attention = 12.0 * h * q * (1.0 + (double)m->kv_heads / m->heads) + 12.0 * s * q;
    int moe_layers = m->experts > 0 ? m->layers - m->first_dense_layers : 0;
    double dense_mlp = 12.0 * h * m->ffn * gated;
    double moe_mlp = 12.0 * h * m->moe_ffn * gated * (m->top_k + m->shared_experts);
    return m->layers * attention + (m->layers - moe_layers) * dense_mlp + moe_layers * moe_mlp +
           6.0 * h * m->vocab;
}

/* Narayanan et al. 2021, eq. 3, for a GPT-3-shaped model (ffn 4h, q = h, no GQA, not gated):
 * 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recomputation, whose layer term counts four
 * passes (the forward twice) and whose logit term 6 B s h V three; without recomputation the
 * layer term is 3/4 of it: 72 l h^2 (1 + s/(6h)) + 6 h V per token. */
static double narayanan_flops_per_token(const cdse_model *m)
{
    if (m->gated_mlp || m->ffn != 4 * m->hidden || m->heads * m->head_dim != m->hidden ||
        m->kv_heads != m->heads || m->experts > 0 || m->kv_lora_rank > 0 || m->sliding_window > 0)
        return 0.0;
    double h = m->hidden, s = m->seq_len, l = m->layers, v = m->vocab;
    return 0.75 * 96.0 * l * h * h * (1.0 + s / (6.0 * h)) + 96.0 * l * h * h * v / (16.0 * l * h);
}

typedef struct def_check {
    meta_ctx *ctx;
    const cdse_job *job;
    uint64_t index;
    bool failed;
} def_check;

static void expect(def_check *d, const char *what, double seen, double expected, double tol)
{
    if (d->failed || near(seen, expected, tol))
        return;
    d->failed = true;
    char text[256];
    snprintf(text, sizeof text, "%s (A = the row's value, B = the definition's)", what);
    report(d->ctx, REL_DEFINITIONS, text, seen, expected, d->job, d->index, d->job, d->index);
}

/* docs/job-file.md, Cost and energy: `gpus` GPUs of `sys` for `seconds` draw `*power_w` and cost
 * `*cost` (rented: GPU-hours x rental price; bought: the purchase amortized plus the energy). */
static void bill_of(const cdse_job *job, const cdse_system *sys, double gpus, double seconds,
                    double *power_w, double *cost)
{
    const cdse_cost *c = &sys->cost;
    double nodes = ceil(gpus / sys->gpus_per_node);
    *power_w = c->pue * (gpus * c->gpu_power_w + nodes * c->node_power_w);
    if (c->rental_price > 0.0) {
        *cost = gpus * c->rental_price * seconds / SECONDS_PER_HOUR;
        return;
    }
    double per_gpu = c->gpu_price + c->facility_price;
    for (int l = 0; l < sys->n_levels; l++)
        per_gpu += sys->level[l].port_price;
    *cost = gpus * per_gpu * seconds / (c->amortization_years * SECONDS_PER_YEAR) +
            *power_w * seconds / JOULES_PER_KWH * job->objective.electricity_price;
}

/* The row's power, cost and energy: its system's bill, or a pool's summed over its types for
 * the GPUs the configuration takes of each (gpus x count / total; docs/job-file.md, Pools). */
static void check_cost(def_check *d, const cdse_system *sys, const cdse_record *rec)
{
    const cdse_result *r = &rec->result;
    bool ok = r->status == CDSE_ST_OK;
    double tokens = d->job->objective.tokens;
    double seconds = ok && tokens > 0.0 ? tokens / r->tokens_per_s : 0.0;
    double power_w = 0.0, cost = 0.0;
    if (sys->pool.n_types == 0) {
        bill_of(d->job, sys, rec->strategy.gpus, seconds, &power_w, &cost);
    } else {
        double total = 0.0;
        for (int t = 0; t < sys->pool.n_types; t++)
            total += sys->pool.gpus[t];
        for (int t = 0; t < sys->pool.n_types; t++) {
            double p, c, g = rec->strategy.gpus * sys->pool.gpus[t] / total;
            bill_of(d->job, &d->job->system[sys->pool.member[t]], g, seconds, &p, &c);
            power_w += p;
            cost += c;
        }
    }
    if (ok)
        expect(d, "tokens_per_kwh = tokens_per_s x 3.6e6 / facility power", rec->tokens_per_kwh,
               power_w > 0.0 ? r->tokens_per_s * JOULES_PER_KWH / power_w : 0.0, DEF_TOL);
    expect(d, "energy_to_train_mwh = power x seconds / 3.6e9 (0 when infeasible)",
           rec->energy_to_train_mwh, power_w * seconds / JOULES_PER_MWH, DEF_TOL);
    expect(d, "cost_to_train (0 when infeasible)", rec->cost_to_train, cost, DEF_TOL);
}

/* Throughput, FLOPs and memory of a row with figures. */
static void check_throughput(def_check *d, const cdse_system *sys, const cdse_model *model,
                             const cdse_record *rec)
{
    const cdse_result *r = &rec->result;
    const cdse_strategy *st = &rec->strategy;
    double time = r->time_per_iteration_s;
    bool pool = sys->pool.n_types > 0;
    expect(d, "time_per_iteration_s > 0", time > 0.0 && isfinite(time) ? 1.0 : 0.0, 1.0, 0.0);
    for (int c = 0; c < cdse_column_count; c++) {
        const cdse_column *col = &cdse_columns[c];
        double v = cdse_column_value(col, rec);
        if (col->kind == CDSE_COL_F64 && !(isfinite(v) && v >= 0.0)) {
            char what[128];
            snprintf(what, sizeof what, "every number of a row is finite and >= 0: %s", col->name);
            expect(d, what, v, 0.0, 0.0);
        }
    }
    if (model->n_seq_bins == 0) {
        double tokens = (double)st->global_batch * model->seq_len;
        expect(d, "tokens_per_s = global_batch x seq_len / time", r->tokens_per_s, tokens / time,
               DEF_TOL);
        double per_token = megatron_flops_per_token(model);
        if (per_token > 0.0)
            expect(d, "model_tflops_per_gpu = model FLOPs / time / gpus (Megatron-LM counting)",
                   r->model_tflops_per_gpu, per_token * tokens / time / st->gpus / 1e12, DEF_TOL);
        double narayanan = narayanan_flops_per_token(model);
        if (narayanan > 0.0)
            expect(d, "model_tflops_per_gpu = Narayanan et al. 2021 eq. 3 without recomputation",
                   r->model_tflops_per_gpu, narayanan * tokens / time / st->gpus / 1e12, DEF_TOL);
    }
    if (!pool)
        expect(d, "mfu = model_tflops_per_gpu / peak of the precision", r->mfu,
               r->model_tflops_per_gpu / sys->peak_tflops[st->precision], DEF_TOL);
    expect(d, "hfu / mfu = hardware / model TFLOP/s", r->hfu * r->model_tflops_per_gpu,
           r->mfu * r->hardware_tflops_per_gpu, DEF_TOL);
    expect(d, "hardware_tflops_per_gpu >= model_tflops_per_gpu",
           at_most(r->model_tflops_per_gpu, r->hardware_tflops_per_gpu, DEF_TOL) ? 1.0 : 0.0, 1.0,
           0.0);
    double parts = r->mem_weights_gib + r->mem_gradients_gib + r->mem_optimizer_gib +
                   r->mem_activations_gib + r->mem_other_gib + r->mem_fp8_cache_gib +
                   r->mem_runtime_gib;
    expect(d, "mem_total_gib = the sum of its parts", r->mem_total_gib, parts, DEF_TOL);
    if (!pool && r->status == CDSE_ST_OK)
        expect(d, "status ok: mem_total_gib <= hbm_gib",
               at_most(r->mem_total_gib, sys->hbm_gib, DEF_TOL) ? 1.0 : 0.0, 1.0, 0.0);
}

/* Every definition that applies to the row at `index` (already evaluated into `rec`). */
static void check_definitions(meta_ctx *ctx, const cdse_job *job, uint64_t index,
                              const cdse_record *rec)
{
    def_check d = {ctx, job, index, false};
    ctx->pairs[REL_DEFINITIONS]++;
    cdse_system sys;
    job_record_system(job, index, &sys);
    const cdse_result *r = &rec->result;
    if (computed(r->status))
        check_throughput(&d, &sys, &job->model[rec->model], rec);
    /* docs/eval.md: days "objective.tokens / tokens_per_s (0 without a token budget or when
     * infeasible)", gpu_hours "gpus x the time to train (0 likewise)". */
    double tokens = job->objective.tokens;
    double seconds = r->status == CDSE_ST_OK && tokens > 0.0 ? tokens / r->tokens_per_s : 0.0;
    expect(&d, "time_to_train_days = tokens / tokens_per_s / 86400 (0 when infeasible)",
           rec->time_to_train_days, seconds / SECONDS_PER_DAY, DEF_TOL);
    expect(&d, "gpu_hours = gpus x time to train in hours (0 when infeasible)", rec->gpu_hours,
           seconds * rec->strategy.gpus / SECONDS_PER_HOUR, DEF_TOL);
    check_cost(&d, &sys, rec);
}

/* ---- Hardware relations --------------------------------------------------------------- */

static double factor(meta_rng *rng, double most)
{
    return 1.05 + (most - 1.05) * meta_rng_unit(rng);
}

static void scale_table(cdse_eff_table *table, double k)
{
    for (int i = 0; i < table->n; i++)
        table->eff[i] = fmin(1.0, table->eff[i] * k);
}

/* A better compute figure: the precision's peak, a GEMM table, the attention efficiency, or
 * all of them. */
static const char *better_compute(meta_rng *rng, cdse_system *s, int precision)
{
    double k = factor(rng, 4.0);
    switch (meta_rng_below(rng, 5)) {
    case 0:
        s->peak_tflops[precision] *= k;
        return "peak_tflops of the precision x k";
    case 1:
        scale_table(&s->gemm_eff, k);
        return "gemm_efficiency x k (at most 1)";
    case 2:
        scale_table(s->gemm_eff_fp8.n > 0 ? &s->gemm_eff_fp8 : &s->gemm_eff, k);
        return "gemm_efficiency_fp8 x k (at most 1)";
    case 3:
        s->attention_efficiency = fmin(1.0, s->attention_efficiency * k);
        return "attention_efficiency x k (at most 1)";
    default:
        for (int t = 0; t < CDSE_DTYPE_COUNT; t++)
            s->peak_tflops[t] *= k;
        scale_table(&s->gemm_eff, k);
        scale_table(&s->gemm_eff_fp8, k);
        s->attention_efficiency = fmin(1.0, s->attention_efficiency * k);
        return "every peak and efficiency x k";
    }
}

static const char *better_memory_bw(meta_rng *rng, cdse_system *s)
{
    double k = factor(rng, 4.0);
    switch (meta_rng_below(rng, 3)) {
    case 0:
        s->hbm_bandwidth_gbs *= k;
        return "hbm_bandwidth x k";
    case 1:
        s->hbm_efficiency = fmin(1.0, s->hbm_efficiency * k);
        return "hbm_efficiency x k (at most 1)";
    default:
        s->hbm_bandwidth_gbs *= k;
        s->hbm_efficiency = fmin(1.0, s->hbm_efficiency * k);
        return "hbm_bandwidth and hbm_efficiency x k";
    }
}

/* One level, or every level: bandwidth, efficiency, latency, or all three (with the fitted
 * collectives' own figures). */
static const char *better_network(meta_rng *rng, cdse_system *s)
{
    double k = factor(rng, 8.0);
    int what = meta_rng_below(rng, 4);
    int only = meta_rng_below(rng, s->n_levels + 1); /* n_levels: every level */
    for (int l = 0; l < s->n_levels; l++) {
        if (only < s->n_levels && l != only)
            continue;
        cdse_net_level *level = &s->level[l];
        if (what == 0 || what == 3) {
            level->bandwidth_gbs *= k;
            for (int c = 0; c < CDSE_COLL_COUNT; c++)
                level->coll_bandwidth_gbs[c] *= k;
        }
        if (what == 1 || what == 3)
            level->efficiency = fmin(1.0, level->efficiency * k);
        if (what == 2 || what == 3) {
            level->latency_us /= k;
            for (int c = 0; c < CDSE_COLL_COUNT; c++)
                level->coll_latency_us[c] /= k;
        }
    }
    static const char *const text[] = {"network bandwidth x k", "network efficiency x k",
                                       "network latency / k",
                                       "network bandwidth, efficiency x k, latency / k"};
    return text[what];
}

static const char *more_memory(meta_rng *rng, cdse_system *s)
{
    double k = factor(rng, 3.0);
    if (s->tier.attach != CDSE_TIER_NONE && meta_rng_below(rng, 3) == 0) {
        s->tier.capacity_gib *= k;
        return "memory_tier.capacity_gib x k";
    }
    s->hbm_gib *= k;
    return "hbm_gib x k";
}

/* Checks hardware relation `rel` between row a (index ia of ja) and row b (index ib of jb), b on
 * the better system. */
static void check_better(meta_ctx *ctx, int rel, const char *change, const cdse_job *ja,
                         uint64_t ia, const cdse_record *a, const cdse_job *jb, uint64_t ib,
                         const cdse_record *b)
{
    ctx->pairs[rel]++;
    char what[256];
    const cdse_result *ra = &a->result, *rb = &b->result;
    if (rel == REL_HBM && ra->status == CDSE_ST_OK && rb->status != CDSE_ST_OK) {
        snprintf(what, sizeof what, "%s: status ok -> %s (status codes)", change,
                 cdse_status_name(rb->status));
        report(ctx, rel, what, ra->status, rb->status, ja, ia, jb, ib);
    } else if (rel != REL_HBM && rb->status != ra->status) {
        snprintf(what, sizeof what, "%s: status %s -> %s (status codes)", change,
                 cdse_status_name(ra->status), cdse_status_name(rb->status));
        report(ctx, rel, what, ra->status, rb->status, ja, ia, jb, ib);
    } else if (computed(rb->status) &&
               !at_most(rb->time_per_iteration_s, ra->time_per_iteration_s, REL_TOL)) {
        snprintf(what, sizeof what, "%s: time_per_iteration_s grows (B is the better system)",
                 change);
        report(ctx, rel, what, ra->time_per_iteration_s, rb->time_per_iteration_s, ja, ia, jb, ib);
    }
}

/* Evaluates `index` on the copy with its system changed by relation `rel`, and checks the
 * relation against `a`, the row on the job as generated. */
static void hardware_pair(meta_ctx *ctx, int rel, uint64_t index, const cdse_record *a)
{
    cdse_job *alt = ctx->alt;
    int s = a->system;
    if (ctx->job->system[s].pool.n_types > 0)
        return;
    cdse_system *sys = &alt->system[s];
    const char *change = rel == REL_COMPUTE ? better_compute(&ctx->rng, sys, a->strategy.precision)
                         : rel == REL_MEMORY_BW ? better_memory_bw(&ctx->rng, sys)
                         : rel == REL_NETWORK   ? better_network(&ctx->rng, sys)
                                                : more_memory(&ctx->rng, sys);
    alt->fingerprint = ++ctx->fresh;
    cdse_record b;
    job_record_eval(alt, index, &b);
    check_better(ctx, rel, change, ctx->job, index, a, alt, index, &b);
    *sys = ctx->job->system[s];
    alt->fingerprint = ++ctx->fresh;
}

/* The hardware relation of a hardware axis's key, and whether a higher value is the better
 * one; -1 for keys without one (sizes, prices). */
static int axis_relation(int key, bool *higher_better)
{
    *higher_better = true;
    switch (key) {
    case CDSE_HW_PEAK_BF16:
    case CDSE_HW_PEAK_FP8:
        return REL_COMPUTE;
    case CDSE_HW_HBM_BANDWIDTH:
        return REL_MEMORY_BW;
    case CDSE_HW_HBM_GIB:
    case CDSE_HW_TIER_CAPACITY:
        return REL_HBM;
    case CDSE_HW_NET0_BANDWIDTH:
    case CDSE_HW_NET1_BANDWIDTH:
        return REL_NETWORK;
    case CDSE_HW_NET0_LATENCY:
    case CDSE_HW_NET1_LATENCY:
        *higher_better = false;
        return REL_NETWORK;
    default:
        return -1;
    }
}

/* The hardware relations along the job's own hardware axes (a design grid, as a user sweeps
 * one): the configuration at every better value of an axis of its system. */
static void hw_axis_pairs(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit)
{
    const cdse_job *job = ctx->job;
    for (int h = 0; h < job->n_hw_axes; h++) {
        const cdse_hw_axis *axis = &job->hw_axis[h];
        bool higher;
        int rel = axis_relation(axis->key, &higher);
        if (axis->system != a->system || rel < 0)
            continue;
        double here = axis->value[digit[CDSE_AXIS_HW0 + h]];
        for (int v = 0; v < axis->n; v++) {
            if (!(higher ? axis->value[v] > here : axis->value[v] < here))
                continue;
            int d[CDSE_AXIS_COUNT];
            memcpy(d, digit, sizeof d);
            d[CDSE_AXIS_HW0 + h] = v;
            uint64_t ib = cdse_space_encode(&job->space, d);
            cdse_record b;
            job_record_eval(job, ib, &b);
            char change[96];
            snprintf(change, sizeof change, "hardware axis %s %g -> %g", cdse_hw_column(axis->key),
                     here, axis->value[v]);
            check_better(ctx, rel, change, job, index, a, job, ib, &b);
        }
    }
}

/* ---- Strategy relations --------------------------------------------------------------- */

/* The index with axis `a` at the digit holding `value`, or UINT64_MAX. */
static uint64_t with_value(const cdse_space *space, const int *digit, int a, int64_t value)
{
    int d[CDSE_AXIS_COUNT];
    memcpy(d, digit, sizeof d);
    for (int v = 0; v < space->n[a]; v++)
        if (space->value[a][v] == value) {
            d[a] = v;
            return cdse_space_encode(space, d);
        }
    return UINT64_MAX;
}

/* B does at least the recomputation of A: never faster, never more memory. */
static void more_recomputation(meta_ctx *ctx, int rel, uint64_t ia, uint64_t ib, const char *what)
{
    if (ia == UINT64_MAX || ib == UINT64_MAX || ia == ib)
        return;
    cdse_record a, b;
    job_record_eval(ctx->job, ia, &a);
    job_record_eval(ctx->job, ib, &b);
    /* A pool's pipeline split gives the faster GPU type as many layers as its memory holds:
     * what recomputation frees is used again, for speed (docs/job-file.md, Heterogeneous
     * pools), so neither relation holds there. */
    if (!computed(a.result.status) || !computed(b.result.status) ||
        ctx->job->system[a.system].pool.n_types > 0)
        return;
    ctx->pairs[rel]++;
    char text[256];
    /* With activation offload recomputation also shrinks what crosses the tier link (the
     * activations it drops are neither written out nor read back), which can rightly make the
     * iteration faster on a slow tier: only the memory relation holds there. */
    bool offloaded = a.strategy.offload & CDSE_OFFLOAD_ACTIVATIONS;
    if (!offloaded &&
        !at_most(a.result.time_per_iteration_s, b.result.time_per_iteration_s, REL_TOL)) {
        snprintf(text, sizeof text, "%s: time_per_iteration_s falls", what);
        report(ctx, rel, text, a.result.time_per_iteration_s, b.result.time_per_iteration_s,
               ctx->job, ia, ctx->job, ib);
    } else if (!at_most(b.result.mem_total_gib, a.result.mem_total_gib, REL_TOL)) {
        snprintf(text, sizeof text, "%s: mem_total_gib grows", what);
        report(ctx, rel, text, a.result.mem_total_gib, b.result.mem_total_gib, ctx->job, ia,
               ctx->job, ib);
    }
}

static void recompute_pairs(meta_ctx *ctx, const int *digit)
{
    const cdse_space *sp = &ctx->job->space;
    static const int lo[] = {CDSE_RECOMPUTE_NONE, CDSE_RECOMPUTE_SELECTIVE, CDSE_RECOMPUTE_NONE};
    static const int hi[] = {CDSE_RECOMPUTE_SELECTIVE, CDSE_RECOMPUTE_FULL, CDSE_RECOMPUTE_FULL};
    for (int p = 0; p < 3; p++) {
        char what[64];
        snprintf(what, sizeof what, "recompute %s -> %s", cdse_recompute_name(lo[p]),
                 cdse_recompute_name(hi[p]));
        more_recomputation(ctx, REL_RECOMPUTE, with_value(sp, digit, CDSE_AXIS_RECOMPUTE, lo[p]),
                           with_value(sp, digit, CDSE_AXIS_RECOMPUTE, hi[p]), what);
    }
}

/* recompute_layers n recomputes n layers per chunk, 0 every layer: 0 ranks last. */
static int64_t layers_rank(int64_t n)
{
    return n == 0 ? INT64_MAX : n;
}

static void recompute_layer_pairs(meta_ctx *ctx, const int *digit)
{
    const cdse_space *sp = &ctx->job->space;
    int d[CDSE_AXIS_COUNT];
    memcpy(d, digit, sizeof d);
    uint64_t full = with_value(sp, d, CDSE_AXIS_RECOMPUTE, CDSE_RECOMPUTE_FULL);
    if (full == UINT64_MAX)
        return;
    cdse_space_decode(sp, full, d);
    int a = CDSE_AXIS_RECOMPUTE_LAYERS;
    for (int i = 0; i < sp->n[a]; i++)
        for (int j = 0; j < sp->n[a]; j++)
            if (layers_rank(sp->value[a][i]) < layers_rank(sp->value[a][j])) {
                char what[96];
                snprintf(what, sizeof what, "recompute full, recompute_layers %lld -> %lld",
                         (long long)sp->value[a][i], (long long)sp->value[a][j]);
                more_recomputation(ctx, REL_RECOMPUTE_LAYERS, with_value(sp, d, a, sp->value[a][i]),
                                   with_value(sp, d, a, sp->value[a][j]), what);
            }
}

static void recompute_module_pairs(meta_ctx *ctx, const int *digit)
{
    const cdse_space *sp = &ctx->job->space;
    int a = CDSE_AXIS_RECOMPUTE_MODULES;
    for (int i = 0; i < sp->n[a]; i++)
        for (int j = 0; j < sp->n[a]; j++) {
            int64_t mi = sp->value[a][i], mj = sp->value[a][j];
            if (i == j || (mi & mj) != mi)
                continue; /* mi is a strict subset of mj */
            char what[256], ti[96], tj[96];
            cdse_recompute_modules_text((int)mi, ti, sizeof ti);
            cdse_recompute_modules_text((int)mj, tj, sizeof tj);
            snprintf(what, sizeof what, "recompute_modules %s -> %s", ti, tj);
            more_recomputation(ctx, REL_RECOMPUTE_MODULES, with_value(sp, digit, a, mi),
                               with_value(sp, digit, a, mj), what);
        }
}

static void zero_pairs(meta_ctx *ctx, const int *digit)
{
    const cdse_space *sp = &ctx->job->space;
    for (int lo = 0; lo < 3; lo++)
        for (int hi = lo + 1; hi < 4; hi++) {
            uint64_t ia = with_value(sp, digit, CDSE_AXIS_ZERO, lo);
            uint64_t ib = with_value(sp, digit, CDSE_AXIS_ZERO, hi);
            if (ia == UINT64_MAX || ib == UINT64_MAX)
                continue;
            cdse_record a, b;
            job_record_eval(ctx->job, ia, &a);
            job_record_eval(ctx->job, ib, &b);
            /* On a pool the memory ZeRO frees goes to the faster type's layers (as above). */
            if (!computed(a.result.status) || !computed(b.result.status) ||
                ctx->job->system[a.system].pool.n_types > 0)
                continue;
            ctx->pairs[REL_ZERO]++;
            if (!at_most(b.result.mem_total_gib, a.result.mem_total_gib, REL_TOL)) {
                char what[64];
                snprintf(what, sizeof what, "zero %d -> %d: mem_total_gib grows", lo, hi);
                report(ctx, REL_ZERO, what, a.result.mem_total_gib, b.result.mem_total_gib,
                       ctx->job, ia, ctx->job, ib);
            }
        }
}

/* ---- Duplicates and order ------------------------------------------------------------- */

/* ctx->dup = the job with system `s` listed a second time under another name (the last value
 * of the systems axis). Returns that value's digit, or -1. */
static int make_duplicate(meta_ctx *ctx, int s)
{
    const cdse_job *job = ctx->job;
    cdse_job *dup = ctx->dup;
    if (job->n_systems >= CDSE_MAX_SYSTEMS || job->n_hw_axes > 0 || job->n_system_gpus > 0 ||
        job->system[s].pool.n_types > 0 || job->space.n[CDSE_AXIS_SYSTEM] >= CDSE_AXIS_MAX_VALUES)
        return -1;
    memcpy(dup, job, sizeof *dup);
    dup->text = NULL;
    int n = dup->n_systems++;
    dup->system[n] = job->system[s];
    char name[CDSE_NAME_MAX];
    snprintf(name, sizeof name, "%.40s-copy", job->system[s].name);
    memcpy(dup->system[n].name, name, sizeof name);
    dup->system_stack[n] = job->system_stack[s];
    /* The error band the job loader derived for the system (cdse_bands_apply: per stack and
     * GPU generation), which a copy made here must carry as well. */
    for (int k = 0; k <= CDSE_MAX_STACKS; k++) {
        dup->band_low[k][n] = job->band_low[k][s];
        dup->band_high[k][n] = job->band_high[k][s];
    }
    int v = dup->space.n[CDSE_AXIS_SYSTEM]++;
    dup->space.value[CDSE_AXIS_SYSTEM][v] = n;
    dup->fingerprint = ++ctx->fresh;
    cdse_diag diag;
    return cdse_space_finish(&dup->space, &diag) == 0 ? v : -1;
}

static void duplicate_pair(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit)
{
    cdse_record again, b;
    double va, vb;
    const cdse_column *col;
    /* The same index again, after other evaluations. */
    job_record_eval(ctx->job, index, &again);
    ctx->pairs[REL_DUPLICATE]++;
    if ((col = row_diff(ctx->job, a, ctx->job, &again, false, &va, &vb)) != NULL) {
        char what[128];
        snprintf(what, sizeof what, "the same configuration twice: column %s", col->name);
        report(ctx, REL_DUPLICATE, what, va, vb, ctx->job, index, ctx->job, index);
    }
    int v = make_duplicate(ctx, a->system);
    if (v < 0)
        return;
    int d[CDSE_AXIS_COUNT];
    memcpy(d, digit, sizeof d);
    uint64_t ia = cdse_space_encode(&ctx->dup->space, d);
    d[CDSE_AXIS_SYSTEM] = v;
    uint64_t ib = cdse_space_encode(&ctx->dup->space, d);
    cdse_record ra;
    job_record_eval(ctx->dup, ia, &ra);
    job_record_eval(ctx->dup, ib, &b);
    ctx->pairs[REL_DUPLICATE]++;
    if ((col = row_diff(ctx->dup, &ra, ctx->dup, &b, true, &va, &vb)) != NULL) {
        char what[128];
        snprintf(what, sizeof what, "a system and its copy under another name: column %s",
                 col->name);
        report(ctx, REL_DUPLICATE, what, va, vb, ctx->dup, ia, ctx->dup, ib);
    }
}

/* The digit of the order job holding the value that digit `d` of axis `a` holds in the job;
 * models, systems and stacks matched by name. -1 when it has none. */
static int order_digit(const cdse_job *job, const cdse_job *other, int a, int d)
{
    int64_t value = job->space.value[a][d];
    for (int v = 0; v < other->space.n[a]; v++) {
        int64_t w = other->space.value[a][v];
        bool same = w == value;
        if (a == CDSE_AXIS_MODEL)
            same = strcmp(job->model[value].name, other->model[w].name) == 0;
        else if (a == CDSE_AXIS_SYSTEM)
            same = strcmp(job->system[value].name, other->system[w].name) == 0;
        else if (a == CDSE_AXIS_STACK && value >= 0 && w >= 0)
            same = strcmp(job->stack[value].name, other->stack[w].name) == 0;
        if (same)
            return v;
    }
    return -1;
}

/* The hardware axes of the order job (which follow its systems' order) at the values the job's
 * axes have at `digit`: matched by key, system name and value. -1 when one is missing. */
static int order_hw_digits(const cdse_job *job, const cdse_job *other, const int *digit, int *d)
{
    for (int h = 0; h < other->n_hw_axes; h++)
        d[CDSE_AXIS_HW0 + h] = -1;
    for (int h = 0; h < job->n_hw_axes; h++) {
        const cdse_hw_axis *axis = &job->hw_axis[h];
        double value = axis->value[digit[CDSE_AXIS_HW0 + h]];
        for (int g = 0; g < other->n_hw_axes; g++) {
            const cdse_hw_axis *to = &other->hw_axis[g];
            if (to->key != axis->key ||
                strcmp(job->system[axis->system].name, other->system[to->system].name) != 0)
                continue;
            for (int v = 0; v < to->n; v++)
                if (to->value[v] == value)
                    d[CDSE_AXIS_HW0 + g] = v;
        }
    }
    for (int h = 0; h < other->n_hw_axes; h++)
        if (d[CDSE_AXIS_HW0 + h] < 0)
            return -1;
    return 0;
}

static void order_pair(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit)
{
    const cdse_job *job = ctx->job, *other = ctx->order;
    int d[CDSE_AXIS_COUNT];
    if (order_hw_digits(job, other, digit, d) != 0) {
        report(ctx, REL_ORDER, "a hardware-axis value missing from the reordered job", 0, -1, job,
               index, job, index);
        return;
    }
    for (int ax = 0; ax < CDSE_AXIS_COUNT; ax++)
        if ((ax < CDSE_AXIS_HW0 || ax >= CDSE_AXIS_HW0 + other->n_hw_axes) &&
            (d[ax] = order_digit(job, other, ax, digit[ax])) < 0) {
            report(ctx, REL_ORDER, "a value missing from the reordered job (axis number)", ax, -1,
                   job, index, job, index);
            return;
        }
    uint64_t ib = cdse_space_encode(&other->space, d);
    cdse_record b;
    job_record_eval(other, ib, &b);
    ctx->pairs[REL_ORDER]++;
    double va, vb;
    const cdse_column *col = row_diff(job, a, other, &b, false, &va, &vb);
    if (col != NULL) {
        char what[160];
        snprintf(what, sizeof what,
                 "column %s differs in the job with its lists reordered (B: index %llu there; "
                 "the pair below has the lists in the first order)",
                 col->name, (unsigned long long)ib);
        report(ctx, REL_ORDER, what, va, vb, job, index, job, index);
    }
}

/* ---- One generated job ---------------------------------------------------------------- */

static int load(meta_ctx *ctx, const char *text, cdse_job *job)
{
    cdse_diag diag;
    if (cdse_job_load_text(text, JOB_PATH, job, &diag) == 0)
        return 0;
    ctx->rejected++;
    if (!ctx->quiet)
        printf("generated job refused: %s\n----- job -----\n%s----- end -----\n", diag.msg, text);
    return -1;
}

/* A random configuration of the job that has figures (ok or oom), or UINT64_MAX. Rows drawn
 * on the way are checked against the definitions. */
static uint64_t draw(meta_ctx *ctx, cdse_record *rec)
{
    for (int k = 0; k < DRAWS_PER_SAMPLE; k++) {
        uint64_t index = meta_rng_next(&ctx->rng) % ctx->job->space.size;
        job_record_eval(ctx->job, index, rec);
        check_definitions(ctx, ctx->job, index, rec);
        if (computed(rec->result.status))
            return index;
    }
    return UINT64_MAX;
}

/* One generated job: every SWEEP_EVERY-th of the kind the command-line test sweeps (hardware
 * axes, pools, more systems; no hardware relations: a pool or an axis on the changed key would
 * hide the change), the others of the pair kind (recompute and zero with every value). */
static void one_job(meta_ctx *ctx)
{
    static meta_job gen;
    static char text[1 << 17], shuffled[1 << 17];
    bool sweep_kind = ctx->jobs % SWEEP_EVERY == SWEEP_EVERY - 1;
    meta_job_generate(&ctx->rng, sweep_kind ? META_SWEEP : META_PAIRS, false, &gen);
    meta_rng shuffle = {meta_rng_next(&ctx->rng)};
    if (meta_job_render(&gen, NULL, text, sizeof text) < 0 ||
        meta_job_render(&gen, &shuffle, shuffled, sizeof shuffled) < 0)
        return;
    ctx->jobs++;
    if (load(ctx, text, ctx->job) != 0)
        return;
    if (load(ctx, shuffled, ctx->order) != 0) {
        cdse_job_free(ctx->job);
        return;
    }
    memcpy(ctx->alt, ctx->job, sizeof *ctx->alt);
    ctx->alt->text = NULL;
    ctx->alt->fingerprint = ++ctx->fresh;
    for (int k = 0; k < SAMPLES_PER_JOB; k++) {
        cdse_record a;
        uint64_t index = draw(ctx, &a);
        if (index == UINT64_MAX)
            continue;
        int digit[CDSE_AXIS_COUNT];
        cdse_space_decode(&ctx->job->space, index, digit);
        for (int rel = REL_COMPUTE; rel <= REL_HBM && !sweep_kind; rel++)
            for (int t = 0; t < HARDWARE_CHANGES; t++)
                hardware_pair(ctx, rel, index, &a);
        hw_axis_pairs(ctx, index, &a, digit);
        recompute_pairs(ctx, digit);
        recompute_layer_pairs(ctx, digit);
        recompute_module_pairs(ctx, digit);
        zero_pairs(ctx, digit);
        duplicate_pair(ctx, index, &a, digit);
        order_pair(ctx, index, &a, digit);
    }
    cdse_job_free(ctx->job);
    cdse_job_free(ctx->order);
}

static long pair_total(const meta_ctx *ctx)
{
    long n = 0;
    for (int rel = 0; rel < REL_DEFINITIONS; rel++)
        n += ctx->pairs[rel];
    return n;
}

/* ---- --emit-job ----------------------------------------------------------------------- */

/* A job for tests/sh/metamorphic_sweep.sh: kind sweep (store "all", 500 to 20,000
 * configurations), prune or exhaustive (the same job with objective.prune true or false, 20,000
 * to 400,000), with at least EMIT_FEASIBLE feasible configurations (a pruned sweep of a job
 * with none compares empty tables). Draws until a job reads and fits. */
static int emit_job(meta_ctx *ctx, const char *kind)
{
    bool sweep = strcmp(kind, "sweep") == 0, prune = strcmp(kind, "prune") == 0;
    if (!sweep && !prune && strcmp(kind, "exhaustive") != 0) {
        fprintf(stderr, "metamorphic: --emit-job %s: allowed: sweep, prune, exhaustive\n", kind);
        return 2;
    }
    uint64_t least = sweep ? 500 : 20000, limit = sweep ? 20000 : 400000;
    static meta_job gen;
    static char text[1 << 17];
    for (int attempt = 0; attempt < 1000; attempt++) {
        meta_job_generate(&ctx->rng, sweep ? META_SWEEP : META_PRUNE, prune, &gen);
        if (meta_job_render(&gen, NULL, text, sizeof text) < 0)
            continue;
        cdse_diag diag;
        if (cdse_job_load_text(text, JOB_PATH, ctx->job, &diag) != 0) {
            fprintf(stderr, "metamorphic: generated job refused: %s\n", diag.msg);
            continue;
        }
        uint64_t size = ctx->job->space.size, feasible = 0;
        for (uint64_t i = 0; size >= least && size <= limit && i < size; i++) {
            cdse_record rec;
            job_record_eval(ctx->job, i, &rec);
            feasible += rec.result.status == CDSE_ST_OK;
        }
        cdse_job_free(ctx->job);
        if (size >= least && size <= limit && feasible >= EMIT_FEASIBLE) {
            fputs(text, stdout);
            return 0;
        }
    }
    fprintf(stderr, "metamorphic: no job of kind %s with %llu to %llu configurations\n", kind,
            (unsigned long long)least, (unsigned long long)limit);
    return 2;
}

/* ---- main ----------------------------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr, "usage: metamorphic [--pairs N] [--seed S] [--show N] [--lines] [--quiet] "
                    "[--known FILE]\n"
                    "       metamorphic --emit-job sweep|prune|exhaustive [--seed S]\n");
    return 2;
}

/* Reads the violations a run is known to find per relation (a file of "RELATION COUNT REASON"
 * lines, '#' comments; the default run needs none since issue 31), a ratchet like
 * tests/validation/known_gaps.txt: the run passes when each relation finds exactly the number
 * listed (0 when not listed), so that a new violation fails and a fixed one asks for the line to
 * be lowered. Returns 0, or -1 with a message naming file:line. */
static int read_known(const char *path, long known[REL_COUNT])
{
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        fprintf(stderr, "metamorphic: cannot read %s\n", path);
        return -1;
    }
    char line[1024];
    int number = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, in) != NULL) {
        number++;
        char name[64];
        long count;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        int rel = REL_COUNT;
        if (sscanf(line, "%63s %ld", name, &count) == 2)
            for (rel = 0; rel < REL_COUNT && strcmp(name, relation_name[rel]) != 0; rel++)
                ;
        if (rel == REL_COUNT || count < 1) {
            fprintf(stderr,
                    "%s:%d: allowed: a relation name (compute_better ... definitions) and a "
                    "count >= 1, then the reason\n",
                    path, number);
            rc = -1;
        } else {
            known[rel] = count;
        }
    }
    fclose(in);
    return rc;
}

static void summary(const meta_ctx *ctx, unsigned long long seed, double seconds)
{
    printf("# metamorphic: seed %llu, %ld jobs generated (%ld refused), %.1f s\n", seed, ctx->jobs,
           ctx->rejected, seconds);
    printf("# %-20s %10s %10s\n", "relation", "pairs", "violations");
    for (int rel = 0; rel < REL_COUNT; rel++)
        printf("  %-20s %10ld %10ld%s\n", relation_name[rel], ctx->pairs[rel], ctx->violations[rel],
               rel == REL_DEFINITIONS ? "   (rows)" : "");
    printf("  %-20s %10ld\n", "pairs in all", pair_total(ctx));
}

int main(int argc, char **argv)
{
    long target = DEFAULT_PAIRS;
    unsigned long long seed = DEFAULT_SEED;
    const char *emit = NULL, *known_path = NULL;
    static meta_ctx ctx;
    ctx.show = PRINTED_PER_REL;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc)
            target = strtol(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--emit-job") == 0 && i + 1 < argc)
            emit = argv[++i];
        else if (strcmp(argv[i], "--quiet") == 0)
            ctx.quiet = true;
        else if (strcmp(argv[i], "--show") == 0 && i + 1 < argc)
            ctx.show = strtol(argv[++i], &end, 10);
        else if (strcmp(argv[i], "--lines") == 0)
            ctx.show_lines = true;
        else if (strcmp(argv[i], "--known") == 0 && i + 1 < argc)
            known_path = argv[++i];
        else
            return usage();
        if (end != NULL && (*end != '\0' || end == argv[i]))
            return usage(); /* a number that is not one */
    }
    if (target < 1)
        return usage();
    if (meta_zoo_load(CDSE_SOURCE_DIR) != 0)
        return 2;
    ctx.rng.state = seed;
    cdse_job **jobs[] = {&ctx.job, &ctx.alt, &ctx.dup, &ctx.order, &ctx.pair, &ctx.check};
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++)
        if ((*jobs[j] = calloc(1, sizeof(cdse_job))) == NULL)
            return 2;
    if (emit != NULL)
        return emit_job(&ctx, emit);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (pair_total(&ctx) < target && ctx.jobs < 100 + target)
        one_job(&ctx);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    summary(&ctx, seed, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    long known[REL_COUNT] = {0};
    if (known_path != NULL && read_known(known_path, known) != 0)
        return 2;
    long violations = 0;
    for (int rel = 0; rel < REL_COUNT; rel++) {
        if (ctx.violations[rel] == known[rel])
            continue;
        violations++;
        if (known_path != NULL)
            printf("metamorphic: %s: %ld violations, %s lists %ld (%s)\n", relation_name[rel],
                   ctx.violations[rel], known_path, known[rel],
                   ctx.violations[rel] > known[rel]
                       ? "a new violation: see the pairs above"
                       : "fewer: lower the number there, or remove the line at 0");
    }
    /* A generator that writes refused jobs tests less than it says. */
    bool refused = ctx.rejected * 20 > ctx.jobs;
    if (refused)
        printf("metamorphic: more than 5%% of the generated jobs were refused\n");
    if (pair_total(&ctx) < target)
        printf("metamorphic: only %ld pairs, %ld asked for\n", pair_total(&ctx), target);
    return violations > 0 || refused || pair_total(&ctx) < target ? 1 : 0;
}
