/* Heterogeneous GPU pools: a configuration evaluated on a pool of several GPU types, built on the
 * homogeneous evaluator. Pure: no I/O, no allocation, no MPI. */
#ifndef CLUSTERDSE_POOL_H
#define CLUSTERDSE_POOL_H

#include "clusterdse/model/perf.h"

#include <stdint.h>

/* Evaluates `strategy` on a pool of n GPU types: types[i] is the profile of type i and counts[i]
 * its GPUs in the pool. The strategy's GPUs are taken from the types in proportion to their
 * counts. Two ways of using the pool are costed and the faster kept:
 *   - dp: every data-parallel replica (tp x cp x pp GPUs) is of one type; replicas get shares of
 *     the global batch in proportion to their speed;
 *   - pp: every pipeline stage (tp x cp x dp GPUs) is of one type; stages get layer counts in
 *     proportion to their speed, within each type's memory.
 * A replica or stage is as slow as its slowest GPU and a collective as slow as the slowest link
 * it crosses: each type is costed as if the whole job ran on it with its share of the work, and
 * the pool takes the slowest. result->pool_split and pool_share say how the pool was used. */
void cdse_evaluate_pool(const cdse_model *model, const cdse_system *const types[],
                        const int counts[], int n, const cdse_strategy *strategy,
                        cdse_result *result);

/* Type `type` as an island of `island_gpus` GPUs of a pool with a link between its islands
 * (link_bandwidth_gbs > 0, GB/s per GPU one direction; latency in us): `copy` is the type's profile
 * with its levels clipped to the island (no level larger than island_gpus; the outermost sized
 * island_gpus) and one more level outside, the link (size 0: every island; efficiency 1, the link's
 * figure being what collectives achieve). A group that spans islands (the data-parallel group of
 * the dp split, the pipeline group of the pp split) then crosses the link hierarchically: reduced
 * inside each island first, the link carrying the island's share (collective.c). A profile already
 * at CDSE_MAX_LEVELS gets its outermost level capped by the link instead. Without a link, returns
 * `type` and leaves `copy` alone. */
const cdse_system *cdse_pool_island(const cdse_system *type, int island_gpus,
                                    double link_bandwidth_gbs, double link_latency_us,
                                    cdse_system *copy);

/* The same with the pool's options: `pool` is the pool's system entry (hardware.h), whose
 * pool.gpus[0..pool.n_types) are the counts; pool->partition = CDSE_PARTITION_EVEN shares the work
 * as Megatron-LM does on any cluster (every pipeline stage layers / pp, every replica global_batch
 * / dp: the fast types wait for the slow ones), the baseline the heterogeneous planners compare
 * against; pool->link_bandwidth_gbs > 0 costs what crosses between types on that link
 * (cdse_pool_island); pool->tp_per_type lets each type's stages of the pp split run their own
 * tensor-parallel degree (half, the same or twice the strategy's, over the same stage GPUs: Metis's
 * per-stage (dp, tp)), the combination whose slowest stage is fastest kept. result->pool_tp says
 * which. cdse_evaluate_pool is this with the balanced partition and one degree. */
void cdse_evaluate_pool_as(const cdse_model *model, const cdse_system *const types[],
                           const cdse_system *pool, const cdse_strategy *strategy,
                           cdse_result *result);

/* A memo of the homogeneous evaluations (cdse_evaluate) pool evaluations make: a type's
 * replicas' two probes and its share in each split. Keyed by what they read: the GPU type and
 * the model by address (with the layer count a stage's evaluation sets), the strategy bit for bit.
 * Configurations that differ only in an axis an evaluation does not read share it (the probes
 * run the strategy at 2 and 4 micro-batches per replica whatever the global batch); a hit returns
 * what the evaluation returned, so results are those without the memo. Valid only while the
 * models and systems at those addresses are unchanged: its owner zeroes it when they may have
 * changed (record.c: per thread and study). Direct-mapped, 2^CDSE_POOL_MEMO_BITS slots. */
#define CDSE_POOL_MEMO_BITS  10
#define CDSE_POOL_MEMO_SLOTS (1 << CDSE_POOL_MEMO_BITS)

typedef struct cdse_pool_memo_slot {
    uint64_t hash;
    const cdse_model *model; /* NULL: empty */
    const cdse_system *system;
    int layers;
    cdse_strategy strategy;
    cdse_result result;
} cdse_pool_memo_slot;

typedef struct cdse_pool_memo {
    cdse_pool_memo_slot slot[CDSE_POOL_MEMO_SLOTS];
} cdse_pool_memo;

/* cdse_evaluate_pool_as with `memo` (NULL: none); the result is the same bit for bit. */
void cdse_evaluate_pool_memo(const cdse_model *model, const cdse_system *const types[],
                             const cdse_system *pool, const cdse_strategy *strategy,
                             cdse_pool_memo *memo, cdse_result *result);

#endif
