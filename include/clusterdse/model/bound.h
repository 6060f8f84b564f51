/* Lower bounds for exact pruning (docs/sweep.md, Pruning). Pure: no I/O, no allocation. */
#ifndef CLUSTERDSE_BOUND_H
#define CLUSTERDSE_BOUND_H

#include "clusterdse/model/space.h"
#include "clusterdse/model/strategy.h"

/* A lower bound on time_per_iteration_s (cdse_evaluate) of every feasible configuration that
 * differs from `strategy` only on the axes the bound ignores: recompute_modules, zero, offload,
 * tp_comm_overlap, moe_dispatcher and moe_overlap. The other axes (gpus, tp, pp, cp, ep, vpp,
 * microbatch, global_batch, recompute, sequence_parallel, precision, flash_attention,
 * placement, etp, the stack) are taken as given. HUGE_VAL when no such configuration is
 * feasible (a failed check, or more memory than the GPU and its tier hold even at the least the
 * ignored axes allow); 0 (no bound) for models with a sequence-length histogram and for pools.
 * With `any_recompute`, a bound over every recompute setting as well. Implemented in perf.c,
 * beside the terms it reuses. */
double cdse_time_floor(const cdse_model *model, const cdse_system *system,
                       const cdse_strategy *strategy, bool any_recompute);

/* Whether cdse_time_floor depends on the value of `axis` (the axes it takes as given). */
bool cdse_bound_axis_kept(int axis);

#endif
