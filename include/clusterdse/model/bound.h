/* Lower bounds for exact pruning (docs/sweep.md, Pruning). Pure: no I/O, no allocation. */
#ifndef CLUSTERDSE_BOUND_H
#define CLUSTERDSE_BOUND_H

#include "clusterdse/model/space.h"
#include "clusterdse/model/strategy.h"

/* What the floor may leave free (flags of cdse_time_floor): the recompute setting; the ZeRO
 * stage and the offload (the optimizer's and the model's state). */
enum { CDSE_FLOOR_ANY_RECOMPUTE = 1, CDSE_FLOOR_ANY_STATE = 2 };

/* A lower bound on time_per_iteration_s (cdse_evaluate) of every feasible configuration that
 * differs from `strategy` only on the axes the bound ignores: recompute_modules,
 * tp_comm_overlap, moe_dispatcher and moe_overlap always; recompute and
 * recompute_layers with CDSE_FLOOR_ANY_RECOMPUTE; zero, offload and offload_layers with
 * CDSE_FLOOR_ANY_STATE. The other axes (gpus, tp, pp, cp, ep, vpp, microbatch, global_batch,
 * sequence_parallel, precision, flash_attention, placement, etp, the stack) are taken as given.
 * HUGE_VAL when no such configuration is feasible (a failed check, or more memory than the GPU and
 * its tier hold even at the least the ignored axes allow); 0 (no bound) for models with a
 * sequence-length histogram and for pools. Implemented in perf.c, beside the terms it reuses. */
double cdse_time_floor(const cdse_model *model, const cdse_system *system,
                       const cdse_strategy *strategy, int flags);

/* Whether cdse_time_floor with `flags` depends on the value of `axis`. */
bool cdse_bound_axis_kept(int axis, int flags);

#endif
