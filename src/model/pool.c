/* Heterogeneous GPU pools (see pool.h). */
#include "clusterdse/model/pool.h"

#include "clusterdse/model/cost.h"

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

/* The homogeneous evaluations of one pool evaluation: `model` is the configuration's, the identity
 * of the copies that change only its layer count; memo NULL evaluates every time. */
typedef struct evaluator {
    const cdse_model *model;
    cdse_pool_memo *memo;
} evaluator;

/* 64-bit mix of the key's words (the addresses, the layers and the strategy's bytes): multiply
 * and xor-shift per word (the finalizer of MurmurHash3, Appleby); the slot is the high bits. */
static uint64_t memo_hash(const cdse_model *model, const cdse_system *system, int layers,
                          const cdse_strategy *st)
{
    uint64_t h = (uint64_t)(uintptr_t)model * 0x9E3779B97F4A7C15ULL;
    h ^= (uint64_t)(uintptr_t)system + (uint64_t)(unsigned)layers;
    unsigned char bytes[sizeof *st];
    memcpy(bytes, st, sizeof bytes);
    for (size_t k = 0; k + 8 <= sizeof bytes; k += 8) {
        uint64_t w;
        memcpy(&w, bytes + k, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 33;
    }
    for (size_t k = sizeof bytes - sizeof bytes % 8; k < sizeof bytes; k++)
        h = (h ^ bytes[k]) * 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 29);
}

/* cdse_evaluate of `m` (the evaluator's model, or a copy of it with another layer count) on
 * `system`, from the memo when it holds the same key. */
static void evaluate_memo(const evaluator *ev, const cdse_model *m, const cdse_system *system,
                          const cdse_strategy *st, cdse_result *r)
{
    if (ev->memo == NULL) {
        cdse_evaluate(m, system, st, r);
        return;
    }
    uint64_t hash = memo_hash(ev->model, system, m->layers, st);
    cdse_pool_memo_slot *slot = &ev->memo->slot[hash >> (64 - CDSE_POOL_MEMO_BITS)];
    if (slot->hash == hash && slot->model == ev->model && slot->system == system &&
        slot->layers == m->layers && memcmp(&slot->strategy, st, sizeof *st) == 0) {
        *r = slot->result;
        return;
    }
    cdse_evaluate(m, system, st, r);
    slot->hash = hash;
    slot->model = ev->model;
    slot->system = system;
    slot->layers = m->layers;
    memcpy(&slot->strategy, st, sizeof *st);
    slot->result = *r;
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
        double fill = per_type[i].mem_reserved_gib / types[i]->hbm_gib;
        if (fill > worst_fill) {
            worst_fill = fill;
            fullest = i;
        }
        if (per_type[i].status != CDSE_ST_OK && status == CDSE_ST_OK)
            status = per_type[i].status;
    }
    int split = r->pool_split;
    double share[4];
    int layers[4], microbatches[4], tp[4];
    memcpy(share, r->pool_share, sizeof share);
    memcpy(layers, r->pool_layers, sizeof layers);
    memcpy(microbatches, r->pool_microbatches, sizeof microbatches);
    memcpy(tp, r->pool_tp, sizeof tp);
    *r = per_type[slowest];
    cdse_result_take_memory(r, &per_type[fullest]);
    r->status = status;
    r->pool_split = split;
    memcpy(r->pool_share, share, sizeof share);
    memcpy(r->pool_layers, layers, sizeof layers);
    memcpy(r->pool_microbatches, microbatches, sizeof microbatches);
    memcpy(r->pool_tp, tp, sizeof tp);
    r->pool_hbm_gib = types[fullest]->hbm_gib;

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
 * micro-batches, balanced by the per-micro-batch time measured on each type (the even
 * partition: every replica the same share, total / dp, as Megatron-LM splits the batch). */
static bool split_dp(const evaluator *ev, const cdse_system *const types[], const int g[], int n,
                     const cdse_strategy *st, int partition, cdse_result *r)
{
    const cdse_model *model = ev->model;
    int replica = cdse_placement_ranks_without(st, CDSE_PLACE_DP);
    int replicas[CDSE_MAX_POOL_TYPES], m[CDSE_MAX_POOL_TYPES] = {0};
    double per_mb[CDSE_MAX_POOL_TYPES];
    int dp = st->gpus / replica;
    if (st->global_batch % st->microbatch != 0)
        return false;
    int total_mb = st->global_batch / st->microbatch;
    /* The probes below run 4 micro-batches per replica: their batch must fit an int. */
    if ((int64_t)st->microbatch * dp * 4 > INT_MAX)
        return false;
    for (int i = 0; i < n; i++) { /* every type in whole replicas, before any evaluation */
        if (g[i] % replica != 0)
            return false;
        replicas[i] = g[i] / replica;
    }
    for (int i = 0; i < n && partition == CDSE_PARTITION_EVEN; i++)
        m[i] = total_mb / dp; /* whole: the strategy check divides the batch by dp */
    for (int i = 0; i < n && partition != CDSE_PARTITION_EVEN; i++) {
        /* Per-micro-batch time of type i: the whole job on type i, two micro-batches apart. */
        cdse_strategy probe = *st;
        probe.global_batch = st->microbatch * dp * 2;
        cdse_result a, b;
        evaluate_memo(ev, model, types[i], &probe, &a);
        probe.global_batch = st->microbatch * dp * 4;
        evaluate_memo(ev, model, types[i], &probe, &b);
        if (a.status != CDSE_ST_OK && a.status != CDSE_ST_OOM)
            return false;
        per_mb[i] = (b.time_per_iteration_s - a.time_per_iteration_s) / 2.0;
    }
    /* The interleaved schedule needs a multiple of pp micro-batches per replica. */
    int step = st->vpp > 1 ? st->pp : 1;
    if (partition != CDSE_PARTITION_EVEN &&
        !assign_microbatches(replicas, per_mb, n, total_mb, step, m))
        return false;
    cdse_result per_type[CDSE_MAX_POOL_TYPES];
    bool used[CDSE_MAX_POOL_TYPES] = {false};
    r->pool_split = CDSE_POOL_DP;
    for (int i = 0; i < n; i++) {
        used[i] = m[i] > 0; /* a type given no micro-batch sits idle */
        r->pool_share[i] = (double)replicas[i] * m[i] / total_mb;
        r->pool_microbatches[i] = m[i];
        r->pool_tp[i] = used[i] ? st->tp : 0;
        if (!used[i])
            continue;
        cdse_strategy own = *st;
        own.global_batch = st->microbatch * dp * m[i];
        evaluate_memo(ev, model, types[i], &own, &per_type[i]);
    }
    combine(model, types, g, n, per_type, used, st, r);
    return true;
}

/* One GPU type's pipeline stages under one tensor-parallel degree: the strategy its stages run
 * (tp, and the micro-batch that keeps the pipeline's micro-batch of microbatch x dp sequences
 * with dp = stage GPUs / (tp x cp)), the forward and backward time of one layer, and the most
 * layers a stage of this type holds in HBM. */
typedef struct stage_kind {
    cdse_strategy st;
    double per_layer;
    int max_layers;
} stage_kind;

/* The stage kind of `type` at tensor-parallel degree `tp` (the strategy's, or another that
 * splits the stage's GPUs), false when that degree cannot run: the stage's GPUs or the
 * pipeline's micro-batch do not divide, sequence parallelism without tp, ZeRO without dp, or
 * the strategy check fails (heads, ...). Memory grows linearly with the layers of a stage: two
 * evaluations give the slope and the most layers that fit in this type's HBM. */
static bool stage_kind_of(const evaluator *ev, const cdse_system *type, const cdse_strategy *st,
                          int tp, int step, stage_kind *k)
{
    const cdse_model *model = ev->model;
    int stage = cdse_placement_ranks_without(st, CDSE_PLACE_PP);
    k->st = *st;
    if (tp != st->tp) {
        long long sequences = (long long)st->microbatch * tp; /* per stage step, over tp_0 */
        if (tp < 1 || stage % (tp * st->cp) != 0 || sequences % st->tp != 0 ||
            (st->sequence_parallel && tp == 1) || (st->zero > 0 && stage / (tp * st->cp) == 1))
            return false;
        k->st.tp = tp;
        k->st.microbatch = (int)(sequences / st->tp);
    }
    double fwd, bwd;
    if (cdse_layer_times(model, type, &k->st, &fwd, &bwd) != CDSE_ST_OK)
        return false;
    k->per_layer = fwd + bwd;
    cdse_model one = *model, two = *model;
    one.layers = step * st->pp;
    two.layers = 2 * step * st->pp;
    cdse_result a, b; /* their memory only: bit for bit that of cdse_evaluate */
    cdse_evaluate_memory(&one, type, &k->st, &a);
    cdse_evaluate_memory(&two, type, &k->st, &b);
    /* What the process reserves must fit (mem_reserved_gib: the tensors with the caching
     * allocator's cached blocks, perf.c), not only what it allocates. */
    double slope = (b.mem_reserved_gib - a.mem_reserved_gib) / step;
    double room = type->hbm_gib - a.mem_reserved_gib;
    /* room / slope can exceed an int (tiny slopes): more than layers never matters. */
    double fit = slope > 0.0 ? fmin(fmax(room / slope, -1.0), model->layers) : 0.0;
    k->max_layers = slope > 0.0 ? step + (int)fit : model->layers;
    return true;
}

/* Layers per stage of each type, layers[i] (multiples of step, at least step), with
 * sum p[i] layers[i] = total: added step per stage of a type at a time to the type whose
 * stages stay fastest, (layers[i] + step) x per_layer, a type whose stages would no longer fit
 * in HBM taking more only when no type has room left. Returns the slowest stage's time
 * max layers[i] x per_layer, or -1 when the layers cannot be placed. */
static double place_layers(const int p[], const stage_kind *const kind[], int n, int total,
                           int step, int layers[])
{
    int placed = 0;
    for (int i = 0; i < n; i++) {
        layers[i] = step;
        placed += p[i] * step;
    }
    while (placed < total) {
        int best = -1;
        double best_time = 0.0;
        for (int i = 0; i < n; i++) {
            if (placed + p[i] * step > total)
                continue;
            double t = (layers[i] + step) * kind[i]->per_layer;
            if (layers[i] + step > kind[i]->max_layers)
                t += 1e30; /* only when no type has room left */
            if (best < 0 || t < best_time) {
                best = i;
                best_time = t;
            }
        }
        if (best < 0)
            return -1.0;
        layers[best] += step;
        placed += p[best] * step;
    }
    double slowest = 0.0;
    for (int i = 0; i < n; i++)
        slowest = fmax(slowest, layers[i] * kind[i]->per_layer);
    return slowest;
}

/* Candidate tensor-parallel degrees of a type's stages with tp_per_type: the strategy's first
 * (kept on ties), then half and twice it. Metis (Um et al., USENIX ATC'24; its planner's
 * per-stage strategies (dp_deg, tp_deg) over each stage's GPUs in SamsungLabs/Metis
 * model/load_balancer.py, and its abstract: it prefers data over tensor parallelism within a
 * stage) gives each stage its own degrees; the ones next to the strategy's are those a stage
 * of another GPU type moves to. */
#define TP_CANDIDATES 3

/* The even partition (Megatron-LM): every stage holds layers / pp layers at the strategy's
 * degree; type i holds p[i] of the pp stages. */
static inline void split_pp_even(const evaluator *ev, const cdse_system *const types[],
                                 const int g[], int n, const cdse_strategy *st, const int p[],
                                 cdse_result *r)
{
    const cdse_model *model = ev->model;
    cdse_result per_type[CDSE_MAX_POOL_TYPES];
    bool used[CDSE_MAX_POOL_TYPES];
    r->pool_split = CDSE_POOL_PP;
    for (int i = 0; i < n; i++) {
        used[i] = true;
        evaluate_memo(ev, model, types[i], st, &per_type[i]);
        r->pool_share[i] = (double)p[i] / st->pp;
        r->pool_layers[i] = (model->layers + st->pp - 1) / st->pp;
        r->pool_microbatches[i] = per_type[i].grad_accum;
        r->pool_tp[i] = st->tp;
    }
    combine(model, types, g, n, per_type, used, st, r);
}

/* Every combination of the types' kinds (mixed radix), the first (the strategy's degree
 * everywhere) kept unless another's slowest stage is strictly faster. Returns the kept
 * combination's slowest stage time, its kinds in best_pick and its layers per stage of each type
 * in layers; -1 when no combination places every layer. */
static inline double best_kinds(stage_kind kinds[][TP_CANDIDATES], const int n_kinds[], int n,
                                const int p[], int n_layers, int step, int best_pick[],
                                int layers[])
{
    int pick[CDSE_MAX_POOL_TYPES] = {0};
    double best = -1.0;
    for (;;) {
        const stage_kind *kind[CDSE_MAX_POOL_TYPES];
        int trial[CDSE_MAX_POOL_TYPES];
        for (int i = 0; i < n; i++)
            kind[i] = &kinds[i][pick[i]];
        double slowest = place_layers(p, kind, n, n_layers, step, trial);
        if (slowest >= 0.0 && (best < 0.0 || slowest < best)) {
            best = slowest;
            memcpy(best_pick, pick, sizeof pick);
            memcpy(layers, trial, sizeof trial);
        }
        int d = 0;
        while (d < n && ++pick[d] == n_kinds[d])
            pick[d++] = 0;
        if (d == n)
            break;
    }
    return best;
}

/* Pipeline split: type i holds p[i] stages of L[i] layers each, sum p[i] L[i] = layers. Layers
 * are added one per stage of a type at a time to the type whose stages stay fastest, so stage
 * times are balanced by speed; a type whose stages no longer fit in HBM takes no more. With
 * tp_per_type, every combination of the types' candidate degrees is placed and the one whose
 * slowest stage is fastest kept. With the even partition (Megatron-LM), every stage holds
 * layers / pp layers at the strategy's degree. */
static bool split_pp(const evaluator *ev, const cdse_system *const types[], const int g[], int n,
                     const cdse_strategy *st, int partition, bool tp_per_type, cdse_result *r)
{
    const cdse_model *model = ev->model;
    int stage = cdse_placement_ranks_without(st, CDSE_PLACE_PP);
    int p[CDSE_MAX_POOL_TYPES], layers[CDSE_MAX_POOL_TYPES];
    int step = st->vpp; /* layers per stage must be a multiple of vpp */
    int placed = 0;
    for (int i = 0; i < n; i++) { /* every type in whole stages, before any evaluation */
        if (g[i] % stage != 0)
            return false;
        p[i] = g[i] / stage;
        placed += p[i] * step;
    }
    if (placed > model->layers)
        return false;
    if (partition == CDSE_PARTITION_EVEN) {
        split_pp_even(ev, types, g, n, st, p, r);
        return true;
    }
    stage_kind kinds[CDSE_MAX_POOL_TYPES][TP_CANDIDATES];
    int n_kinds[CDSE_MAX_POOL_TYPES];
    int degrees[TP_CANDIDATES] = {st->tp, st->tp / 2, st->tp * 2};
    int tried = tp_per_type ? TP_CANDIDATES : 1;
    for (int i = 0; i < n; i++) {
        n_kinds[i] = 0;
        for (int c = 0; c < tried; c++)
            if (degrees[c] >= 1 && (c == 0 || degrees[c] != st->tp) &&
                stage_kind_of(ev, types[i], st, degrees[c], step, &kinds[i][n_kinds[i]]))
                n_kinds[i]++;
        if (n_kinds[i] == 0)
            return false;
    }
    int best_pick[CDSE_MAX_POOL_TYPES] = {0};
    if (best_kinds(kinds, n_kinds, n, p, model->layers, step, best_pick, layers) < 0.0)
        return false;
    cdse_result per_type[CDSE_MAX_POOL_TYPES];
    bool used[CDSE_MAX_POOL_TYPES];
    r->pool_split = CDSE_POOL_PP;
    for (int i = 0; i < n; i++) {
        const cdse_strategy *own_st = &kinds[i][best_pick[i]].st;
        used[i] = true;
        /* Type i's stages as if every stage held layers[i] layers. */
        cdse_model own = *model;
        own.layers = layers[i] * st->pp;
        if (own.experts > 0 && own.moe_every > 0)
            own.layers -= own.layers % own.moe_every;
        evaluate_memo(ev, &own, types[i], own_st, &per_type[i]);
        r->pool_share[i] = (double)p[i] * layers[i] / model->layers;
        r->pool_layers[i] = layers[i];
        r->pool_microbatches[i] = per_type[i].grad_accum;
        r->pool_tp[i] = own_st->tp;
    }
    combine(model, types, g, n, per_type, used, st, r);
    return true;
}

const cdse_system *cdse_pool_island(const cdse_system *type, int island_gpus,
                                    double link_bandwidth_gbs, double link_latency_us,
                                    cdse_system *copy)
{
    if (!(link_bandwidth_gbs > 0.0))
        return type;
    *copy = *type;
    int n = copy->n_levels;
    if (n >= CDSE_MAX_LEVELS) {
        cdse_net_level *outer = &copy->level[n - 1];
        outer->bandwidth_gbs = fmin(outer->bandwidth_gbs * outer->efficiency, link_bandwidth_gbs);
        outer->efficiency = 1.0;
        outer->latency_us = fmax(outer->latency_us, link_latency_us);
        memset(outer->coll_bandwidth_gbs, 0, sizeof outer->coll_bandwidth_gbs);
        memset(outer->coll_latency_us, 0, sizeof outer->coll_latency_us);
        return copy;
    }
    for (int l = 0; l < n; l++)
        if (copy->level[l].size <= 0 || copy->level[l].size > island_gpus)
            copy->level[l].size = island_gpus;
    cdse_net_level *link = &copy->level[n];
    memset(link, 0, sizeof *link);
    strcpy(link->name, "pool-link");
    link->size = 0;
    link->bandwidth_gbs = link_bandwidth_gbs;
    link->latency_us = link_latency_us;
    link->efficiency = 1.0;
    copy->n_levels = n + 1;
    return copy;
}

/* The pool's options of cdse_evaluate_pool_as, apart from the system entry that holds them. */
typedef struct pool_options {
    int partition;
    bool tp_per_type;
    double link_bandwidth_gbs, link_latency_us;
} pool_options;

static void evaluate_pool(const cdse_model *model, const cdse_system *const types[],
                          const int counts[], int n, const pool_options *opt,
                          const cdse_strategy *strategy, cdse_pool_memo *memo, cdse_result *result);

void cdse_evaluate_pool(const cdse_model *model, const cdse_system *const types[],
                        const int counts[], int n, const cdse_strategy *strategy,
                        cdse_result *result)
{
    static const pool_options defaults = {CDSE_PARTITION_BALANCED, false, 0.0, 0.0};
    evaluate_pool(model, types, counts, n, &defaults, strategy, NULL, result);
}

void cdse_evaluate_pool_as(const cdse_model *model, const cdse_system *const types[],
                           const cdse_system *pool, const cdse_strategy *strategy,
                           cdse_result *result)
{
    cdse_evaluate_pool_memo(model, types, pool, strategy, NULL, result);
}

void cdse_evaluate_pool_memo(const cdse_model *model, const cdse_system *const types[],
                             const cdse_system *pool, const cdse_strategy *strategy,
                             cdse_pool_memo *memo, cdse_result *result)
{
    pool_options opt = {pool->partition, pool->tp_per_type, pool->link_bandwidth_gbs,
                        pool->link_latency_us};
    evaluate_pool(model, types, pool->pool.gpus, pool->pool.n_types, &opt, strategy, memo, result);
}

static void evaluate_pool(const cdse_model *model, const cdse_system *const types[],
                          const int counts[], int n, const pool_options *opt,
                          const cdse_strategy *strategy, cdse_pool_memo *memo, cdse_result *result)
{
    /* Structural checks on the first type (they do not depend on the GPU): a configuration
     * they reject gets the figures cdse_evaluate gives it, the status and the derived degrees;
     * the full evaluation runs only where cdse_evaluate would go on (an unsupported precision
     * is costed all the same) or where the pool gives no split. */
    cdse_strategy checked = *strategy;
    int structural = cdse_strategy_check(model, types[0], &checked);
    if (structural != CDSE_ST_OK) {
        if (structural == CDSE_ST_DTYPE_UNSUPPORTED) {
            cdse_evaluate(model, types[0], strategy, result);
        } else {
            memset(result, 0, sizeof *result);
            result->status = structural;
            result->dp = checked.dp;
            result->grad_accum = checked.grad_accum;
            result->seq_imbalance = 1.0;
        }
        return;
    }
    int g[CDSE_MAX_POOL_TYPES];
    for (int i = 0; i < n; i++) {
        if (!(types[i]->peak_tflops[strategy->precision] > 0.0)) {
            cdse_evaluate(model, types[0], strategy, result);
            result->status = CDSE_ST_DTYPE_UNSUPPORTED; /* every GPU type must run it */
            return;
        }
    }
    if (!cdse_pool_take(counts, n, strategy->gpus, g)) {
        cdse_evaluate(model, types[0], strategy, result);
        if (result->status == CDSE_ST_OK || result->status == CDSE_ST_OOM)
            result->status = CDSE_ST_POOL_SPLIT;
        return;
    }
    cdse_system islands[CDSE_MAX_POOL_TYPES];
    const cdse_system *typed[CDSE_MAX_POOL_TYPES];
    for (int i = 0; i < n; i++)
        typed[i] = cdse_pool_island(types[i], g[i], opt->link_bandwidth_gbs, opt->link_latency_us,
                                    &islands[i]);
    /* The islands are copies on this stack, whose address says nothing of their contents: no
     * memo with a link. */
    evaluator ev = {model, opt->link_bandwidth_gbs > 0.0 ? NULL : memo};
    cdse_result dp, pp;
    memset(&dp, 0, sizeof dp);
    memset(&pp, 0, sizeof pp);
    bool has_dp = split_dp(&ev, typed, g, n, strategy, opt->partition, &dp);
    bool has_pp = strategy->pp > 1 &&
                  split_pp(&ev, typed, g, n, strategy, opt->partition, opt->tp_per_type, &pp);
    if (!has_dp && !has_pp) {
        cdse_evaluate(model, types[0], strategy, result);
        if (result->status == CDSE_ST_OK || result->status == CDSE_ST_OOM)
            result->status = CDSE_ST_POOL_SPLIT;
        result->pool_split = CDSE_POOL_NONE;
        return;
    }
    bool take_pp = has_pp && (!has_dp || (pp.status == CDSE_ST_OK && dp.status != CDSE_ST_OK) ||
                              ((pp.status == CDSE_ST_OK) == (dp.status == CDSE_ST_OK) &&
                               pp.time_per_iteration_s < dp.time_per_iteration_s));
    *result = take_pp ? pp : dp;
    /* The job's degrees as the strategy check derives them: the slowest type's result, which
     * combine() copies, holds its own (the replicas of a type in the dp split run m[i]
     * micro-batches, a type's stages with tp_per_type another dp); those are pool_microbatches
     * and pool_tp. */
    result->dp = checked.dp;
    result->grad_accum = checked.grad_accum;
}
