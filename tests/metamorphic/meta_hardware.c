/* The metamorphic suite (metamorphic.h): the hardware relations (compute_better,
 * memory_bw_better, network_better, hbm_more) on a changed copy of a system and on the job's
 * hardware axes. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metamorphic.h"

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
        meta_report(ctx, rel, what, ra->status, rb->status, ja, ia, jb, ib);
    } else if (rel != REL_HBM && rb->status != ra->status) {
        snprintf(what, sizeof what, "%s: status %s -> %s (status codes)", change,
                 cdse_status_name(ra->status), cdse_status_name(rb->status));
        meta_report(ctx, rel, what, ra->status, rb->status, ja, ia, jb, ib);
    } else if (computed(rb->status) &&
               !at_most(rb->time_per_iteration_s, ra->time_per_iteration_s, REL_TOL)) {
        snprintf(what, sizeof what, "%s: time_per_iteration_s grows (B is the better system)",
                 change);
        meta_report(ctx, rel, what, ra->time_per_iteration_s, rb->time_per_iteration_s, ja, ia, jb,
                    ib);
    }
}

/* Evaluates `index` on the copy with its system changed by relation `rel`, and checks the
 * relation against `a`, the row on the job as generated. */
void meta_hardware_pair(meta_ctx *ctx, int rel, uint64_t index, const cdse_record *a)
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
    meta_record_eval(alt, index, &b);
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
void meta_hw_axis_pairs(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit)
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
            meta_record_eval(job, ib, &b);
            char change[96];
            snprintf(change, sizeof change, "hardware axis %s %g -> %g", cdse_hw_column(axis->key),
                     here, axis->value[v]);
            check_better(ctx, rel, change, job, index, a, job, ib, &b);
        }
    }
}
