/* Cost of a collective on a group placed over the network levels. Knows no models. */
#ifndef CLUSTERDSE_COLLECTIVE_H
#define CLUSTERDSE_COLLECTIVE_H

#include "clusterdse/model/hardware.h"

/* How a group of `size` ranks with `stride` between consecutive members spreads over the levels:
 * factor[l] members of the group share one domain of level l below level l+1's domain; the
 * product of the factors is the group size. Level l is crossed when factor[l] > 1. */
typedef struct cdse_span {
    int n_levels;
    int factor[CDSE_MAX_LEVELS];
} cdse_span;

void cdse_group_span(const cdse_system *system, int size, int stride, cdse_span *span);

/* Times in seconds for `bytes` of payload per rank (the full buffer for allreduce; the gathered
 * buffer for allgather and reduce-scatter; the whole send buffer for alltoall). Hierarchical:
 * innermost level first, each level a ring (bandwidth) with per-step latency. */
double cdse_allreduce_time(const cdse_system *system, const cdse_span *span, double bytes);
double cdse_allgather_time(const cdse_system *system, const cdse_span *span, double bytes);
double cdse_reduce_scatter_time(const cdse_system *system, const cdse_span *span, double bytes);
double cdse_alltoall_time(const cdse_system *system, const cdse_span *span, double bytes);
/* One step of a ring or pipeline over the group: its members advance in lock-step, so every step
 * waits for the slowest hop, the transfer on the outermost level the group crosses. */
double cdse_group_p2p_time(const cdse_system *system, const cdse_span *span, double bytes);
/* One call of collective `coll` (cdse_coll) on a group placed as `span`: the function above
 * for its kind; a send/recv is one step of cdse_group_p2p_time. The communication plan's ops
 * are costed here, by the evaluator and by `verify` alike. */
double cdse_coll_time(const cdse_system *system, int coll, const cdse_span *span, double bytes);
/* Point-to-point transfer between two ranks `stride` apart. */
double cdse_sendrecv_time(const cdse_system *system, int stride, double bytes);

/* Effective bandwidth (bytes/s) and latency (s) of level l for a collective: the fitted values
 * when the profile has them, else bandwidth * efficiency and the level latency. */
double cdse_level_bandwidth(const cdse_system *system, int level, int coll);
double cdse_level_latency(const cdse_system *system, int level, int coll);

#endif
