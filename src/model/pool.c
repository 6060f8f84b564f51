/* Heterogeneous GPU pools (see pool.h). */
#include "clusterdse/model/pool.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static const char *const split_names[CDSE_POOL_PP + 2] = {"none", "dp", "pp", NULL};
const cdse_names cdse_pool_split_enum = {split_names, CDSE_POOL_PP + 1, NULL};

const char *cdse_pool_split_name(int split)
{
    return cdse_names_name(&cdse_pool_split_enum, split);
}

/* Combines the per-type results into the pool's: the slowest type that takes part sets the
 * iteration time; the memory figures are those of the type closest to its HBM capacity;
 * throughput is recomputed for the whole job, MFU against the peak of all the pool's GPUs
 * (Chowdhery et al. 2022, "PaLM", Appendix B). */
static void combine(const cdse_model *model, const cdse_system *const types[], const int g[], int n,
                    const cdse_result per_type[], const bool used[], const cdse_strategy *st,
                    cdse_result *r)
{
    int slowest = -1, fullest = 0;
    double worst_fill = -1.0;
    int status = CDSE_ST_OK;
    double gpu_share[CDSE_MAX_POOL_TYPES];
    for (int i = 0; i < n; i++)
        gpu_share[i] = (double)g[i] / st->gpus;
    for (int i = 0; i < n; i++) {
        if (!used[i])
            continue;
        if (slowest < 0)
            slowest = i;
        if (per_type[i].time_per_iteration_s > per_type[slowest].time_per_iteration_s)
            slowest = i;
        double fill = per_type[i].mem_total_gib / types[i]->hbm_gib;
        if (fill > worst_fill) {
            worst_fill = fill;
            fullest = i;
        }
        if (per_type[i].status != CDSE_ST_OK && status == CDSE_ST_OK)
            status = per_type[i].status;
    }
    int split = r->pool_split;
    double share[4];
    memcpy(share, r->pool_share, sizeof share);
    *r = per_type[slowest];
    cdse_result_take_memory(r, &per_type[fullest]);
    r->status = status;
    r->pool_split = split;
    memcpy(r->pool_share, share, sizeof share);

    double tokens, model_flops;
    cdse_iteration_work(model, st->global_batch, &tokens, &model_flops);
    double peak = 0.0; /* the pool's average peak per GPU of the chosen precision */
    for (int i = 0; i < n; i++)
        peak += types[i]->peak_tflops[st->precision] * gpu_share[i];
    cdse_result_set_throughput(r, tokens, model_flops, st->gpus, peak);
}

/* Micro-batches per replica of each type, m[i] (multiples of `step`), with sum r[i] m[i] = total
 * and the largest finish time m[i] t[i] as small as possible. Two types: every m[0] is tried
 * (exact). More types: slots go, r[i] at a time, to the type whose replicas would finish earliest.
 * Returns false when no assignment fills the batch exactly. */
static bool assign_microbatches(const int r[], const double t[], int n, int total, int step,
                                int m[])
{
    if (n == 2) {
        double best = -1.0;
        for (int m0 = 0; m0 * r[0] <= total; m0 += step) {
            int rest = total - m0 * r[0];
            if (rest % (r[1] * step) != 0)
                continue;
            int m1 = rest / r[1];
            double finish = m0 * t[0] > m1 * t[1] ? m0 * t[0] : m1 * t[1];
            if (best < 0.0 || finish < best) {
                best = finish;
                m[0] = m0;
                m[1] = m1;
            }
        }
        return best >= 0.0;
    }
    int given = 0;
    for (int i = 0; i < n; i++)
        m[i] = 0;
    while (given < total) {
        int pick = -1;
        double pick_finish = 0.0;
        for (int i = 0; i < n; i++) {
            if (given + r[i] * step > total)
                continue;
            double finish = (m[i] + step) * t[i];
            if (pick < 0 || finish < pick_finish) {
                pick = i;
                pick_finish = finish;
            }
        }
        if (pick < 0)
            return false;
        m[pick] += step;
        given += r[pick] * step;
    }
    return true;
}

/* Data-parallel split: type i has r[i] replicas; each replica of type i processes m[i]
 * micro-batches, balanced by the per-micro-batch time measured on each type. */
static bool split_dp(const cdse_model *model, const cdse_system *const types[], const int g[],
                     int n, const cdse_strategy *st, cdse_result *r)
{
    int replica = cdse_placement_ranks_without(st, CDSE_PLACE_DP);
    int replicas[CDSE_MAX_POOL_TYPES], m[CDSE_MAX_POOL_TYPES];
    double per_mb[CDSE_MAX_POOL_TYPES];
    int dp = st->gpus / replica;
    if (st->global_batch % st->microbatch != 0)
        return false;
    int total_mb = st->global_batch / st->microbatch;
    /* The probes below run 4 micro-batches per replica: their batch must fit an int. */
    if ((int64_t)st->microbatch * dp * 4 > INT_MAX)
        return false;
    for (int i = 0; i < n; i++) {
        if (g[i] % replica != 0)
            return false;
        replicas[i] = g[i] / replica;
        /* Per-micro-batch time of type i: the whole job on type i, two micro-batches apart. */
        cdse_strategy probe = *st;
        probe.global_batch = st->microbatch * dp * 2;
        cdse_result a, b;
        cdse_evaluate(model, types[i], &probe, &a);
        probe.global_batch = st->microbatch * dp * 4;
        cdse_evaluate(model, types[i], &probe, &b);
        if (a.status != CDSE_ST_OK && a.status != CDSE_ST_OOM)
            return false;
        per_mb[i] = (b.time_per_iteration_s - a.time_per_iteration_s) / 2.0;
    }
    /* The interleaved schedule needs a multiple of pp micro-batches per replica. */
    int step = st->vpp > 1 ? st->pp : 1;
    if (!assign_microbatches(replicas, per_mb, n, total_mb, step, m))
        return false;
    cdse_result per_type[CDSE_MAX_POOL_TYPES];
    bool used[CDSE_MAX_POOL_TYPES];
    r->pool_split = CDSE_POOL_DP;
    for (int i = 0; i < n; i++) {
        used[i] = m[i] > 0; /* a type given no micro-batch sits idle */
        r->pool_share[i] = (double)replicas[i] * m[i] / total_mb;
        if (!used[i])
            continue;
        cdse_strategy own = *st;
        own.global_batch = st->microbatch * dp * m[i];
        cdse_evaluate(model, types[i], &own, &per_type[i]);
    }
    combine(model, types, g, n, per_type, used, st, r);
    return true;
}

/* Pipeline split: type i holds p[i] stages of L[i] layers each, sum p[i] L[i] = layers. Layers
 * are added one per stage of a type at a time to the type whose stages stay fastest, so stage
 * times are balanced by speed; a type whose stages no longer fit in HBM takes no more. */
static bool split_pp(const cdse_model *model, const cdse_system *const types[], const int g[],
                     int n, const cdse_strategy *st, cdse_result *r)
{
    int stage = cdse_placement_ranks_without(st, CDSE_PLACE_PP);
    int p[CDSE_MAX_POOL_TYPES], layers[CDSE_MAX_POOL_TYPES];
    double per_layer[CDSE_MAX_POOL_TYPES];
    int max_layers[CDSE_MAX_POOL_TYPES];
    int step = st->vpp; /* layers per stage must be a multiple of vpp */
    int placed = 0;
    for (int i = 0; i < n; i++) {
        if (g[i] % stage != 0)
            return false;
        p[i] = g[i] / stage;
        double fwd, bwd;
        if (cdse_layer_times(model, types[i], st, &fwd, &bwd) != CDSE_ST_OK)
            return false;
        per_layer[i] = fwd + bwd;
        layers[i] = step;
        placed += p[i] * step;
        /* Memory grows linearly with the layers of a stage: two evaluations give the slope and
         * the most layers that fit in this type's HBM. */
        cdse_model one = *model, two = *model;
        one.layers = step * st->pp;
        two.layers = 2 * step * st->pp;
        cdse_result a, b;
        cdse_evaluate(&one, types[i], st, &a);
        cdse_evaluate(&two, types[i], st, &b);
        double slope = (b.mem_total_gib - a.mem_total_gib) / step;
        double room = types[i]->hbm_gib - a.mem_total_gib;
        /* room / slope can exceed an int (tiny slopes): more than layers never matters. */
        double fit = slope > 0.0 ? fmin(fmax(room / slope, -1.0), model->layers) : 0.0;
        max_layers[i] = slope > 0.0 ? step + (int)fit : model->layers;
    }
    if (placed > model->layers)
        return false;
    while (placed < model->layers) {
        int best = -1;
        double best_time = 0.0;
        for (int i = 0; i < n; i++) {
            if (placed + p[i] * step > model->layers)
                continue;
            double t = (layers[i] + step) * per_layer[i];
            if (layers[i] + step > max_layers[i])
                t += 1e30; /* only when no type has room left */
            if (best < 0 || t < best_time) {
                best = i;
                best_time = t;
            }
        }
        if (best < 0)
            return false;
        layers[best] += step;
        placed += p[best] * step;
    }
    cdse_result per_type[CDSE_MAX_POOL_TYPES];
    bool used[CDSE_MAX_POOL_TYPES];
    r->pool_split = CDSE_POOL_PP;
    for (int i = 0; i < n; i++) {
        used[i] = true;
        /* Type i's stages as if every stage held layers[i] layers. */
        cdse_model own = *model;
        own.layers = layers[i] * st->pp;
        if (own.experts > 0 && own.moe_every > 0)
            own.layers -= own.layers % own.moe_every;
        cdse_evaluate(&own, types[i], st, &per_type[i]);
        r->pool_share[i] = (double)p[i] * layers[i] / model->layers;
    }
    combine(model, types, g, n, per_type, used, st, r);
    return true;
}

void cdse_evaluate_pool(const cdse_model *model, const cdse_system *const types[],
                        const int counts[], int n, const cdse_strategy *strategy,
                        cdse_result *result)
{
    /* Structural checks on the first type (they do not depend on the GPU). */
    cdse_evaluate(model, types[0], strategy, result);
    if (result->status != CDSE_ST_OK && result->status != CDSE_ST_OOM)
        return;
    int total = 0, g[CDSE_MAX_POOL_TYPES];
    for (int i = 0; i < n; i++) {
        total += counts[i];
        if (!(types[i]->peak_tflops[strategy->precision] > 0.0)) {
            result->status = CDSE_ST_DTYPE_UNSUPPORTED; /* every GPU type must run it */
            return;
        }
    }
    for (int i = 0; i < n; i++) {
        if ((long long)strategy->gpus * counts[i] % total != 0) {
            result->status = CDSE_ST_POOL_SPLIT;
            return;
        }
        g[i] = (int)((long long)strategy->gpus * counts[i] / total);
    }
    cdse_result dp = *result, pp = *result;
    memset(dp.pool_share, 0, sizeof dp.pool_share);
    memset(pp.pool_share, 0, sizeof pp.pool_share);
    bool has_dp = split_dp(model, types, g, n, strategy, &dp);
    bool has_pp = strategy->pp > 1 && split_pp(model, types, g, n, strategy, &pp);
    if (!has_dp && !has_pp) {
        result->status = CDSE_ST_POOL_SPLIT;
        result->pool_split = CDSE_POOL_NONE;
        return;
    }
    bool take_pp = has_pp && (!has_dp || (pp.status == CDSE_ST_OK && dp.status != CDSE_ST_OK) ||
                              ((pp.status == CDSE_ST_OK) == (dp.status == CDSE_ST_OK) &&
                               pp.time_per_iteration_s < dp.time_per_iteration_s));
    *result = take_pp ? pp : dp;
}
