/* The metamorphic suite (metamorphic.h): the strategy relations (recompute_more,
 * recompute_layers, recompute_modules, zero_higher), duplicates and order. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metamorphic.h"

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
    meta_record_eval(ctx->job, ia, &a);
    meta_record_eval(ctx->job, ib, &b);
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
        meta_report(ctx, rel, text, a.result.time_per_iteration_s, b.result.time_per_iteration_s,
                    ctx->job, ia, ctx->job, ib);
    } else if (!at_most(b.result.mem_total_gib, a.result.mem_total_gib, REL_TOL)) {
        snprintf(text, sizeof text, "%s: mem_total_gib grows", what);
        meta_report(ctx, rel, text, a.result.mem_total_gib, b.result.mem_total_gib, ctx->job, ia,
                    ctx->job, ib);
    }
}

void meta_recompute_pairs(meta_ctx *ctx, const int *digit)
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

void meta_recompute_layer_pairs(meta_ctx *ctx, const int *digit)
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

void meta_recompute_module_pairs(meta_ctx *ctx, const int *digit)
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

void meta_zero_pairs(meta_ctx *ctx, const int *digit)
{
    const cdse_space *sp = &ctx->job->space;
    for (int lo = 0; lo < 3; lo++)
        for (int hi = lo + 1; hi < 4; hi++) {
            uint64_t ia = with_value(sp, digit, CDSE_AXIS_ZERO, lo);
            uint64_t ib = with_value(sp, digit, CDSE_AXIS_ZERO, hi);
            if (ia == UINT64_MAX || ib == UINT64_MAX)
                continue;
            cdse_record a, b;
            meta_record_eval(ctx->job, ia, &a);
            meta_record_eval(ctx->job, ib, &b);
            /* On a pool the memory ZeRO frees goes to the faster type's layers (as above). */
            if (!computed(a.result.status) || !computed(b.result.status) ||
                ctx->job->system[a.system].pool.n_types > 0)
                continue;
            ctx->pairs[REL_ZERO]++;
            if (!at_most(b.result.mem_total_gib, a.result.mem_total_gib, REL_TOL)) {
                char what[64];
                snprintf(what, sizeof what, "zero %d -> %d: mem_total_gib grows", lo, hi);
                meta_report(ctx, REL_ZERO, what, a.result.mem_total_gib, b.result.mem_total_gib,
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

void meta_duplicate_pair(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit)
{
    cdse_record again, b;
    double va, vb;
    const cdse_column *col;
    /* The same index again, after other evaluations. */
    meta_record_eval(ctx->job, index, &again);
    ctx->pairs[REL_DUPLICATE]++;
    if ((col = meta_row_diff(ctx->job, a, ctx->job, &again, false, &va, &vb)) != NULL) {
        char what[128];
        snprintf(what, sizeof what, "the same configuration twice: column %s", col->name);
        meta_report(ctx, REL_DUPLICATE, what, va, vb, ctx->job, index, ctx->job, index);
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
    meta_record_eval(ctx->dup, ia, &ra);
    meta_record_eval(ctx->dup, ib, &b);
    ctx->pairs[REL_DUPLICATE]++;
    if ((col = meta_row_diff(ctx->dup, &ra, ctx->dup, &b, true, &va, &vb)) != NULL) {
        char what[128];
        snprintf(what, sizeof what, "a system and its copy under another name: column %s",
                 col->name);
        meta_report(ctx, REL_DUPLICATE, what, va, vb, ctx->dup, ia, ctx->dup, ib);
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

void meta_order_pair(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit)
{
    const cdse_job *job = ctx->job, *other = ctx->order;
    int d[CDSE_AXIS_COUNT];
    if (order_hw_digits(job, other, digit, d) != 0) {
        meta_report(ctx, REL_ORDER, "a hardware-axis value missing from the reordered job", 0, -1,
                    job, index, job, index);
        return;
    }
    for (int ax = 0; ax < CDSE_AXIS_COUNT; ax++)
        if ((ax < CDSE_AXIS_HW0 || ax >= CDSE_AXIS_HW0 + other->n_hw_axes) &&
            (d[ax] = order_digit(job, other, ax, digit[ax])) < 0) {
            meta_report(ctx, REL_ORDER, "a value missing from the reordered job (axis number)", ax,
                        -1, job, index, job, index);
            return;
        }
    uint64_t ib = cdse_space_encode(&other->space, d);
    cdse_record b;
    meta_record_eval(other, ib, &b);
    ctx->pairs[REL_ORDER]++;
    double va, vb;
    const cdse_column *col = meta_row_diff(job, a, other, &b, false, &va, &vb);
    if (col != NULL) {
        char what[160];
        snprintf(what, sizeof what,
                 "column %s differs in the job with its lists reordered (B: index %llu there; "
                 "the pair below has the lists in the first order)",
                 col->name, (unsigned long long)ib);
        meta_report(ctx, REL_ORDER, what, va, vb, job, index, job, index);
    }
}
