/* Cost of a collective on a group placed over the network levels. Knows no models. */
#ifndef CLUSTERDSE_COLLECTIVE_H
#define CLUSTERDSE_COLLECTIVE_H

#include <stdbool.h>

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

/* How a collective moves data, as the cost model runs it on each level. */
typedef enum cdse_coll_algo {
    CDSE_ALGO_RING = 0, /* ring reduce-scatter / all-gather phases, hierarchical over levels */
    CDSE_ALGO_PAIRWISE, /* pairwise exchange: each rank sends a share to every other */
    CDSE_ALGO_P2P,      /* one point-to-point transfer (one step of a ring or pipeline) */
} cdse_coll_algo;

/* One collective: everything the model, the probe, the fit and verify know about it. Adding a
 * collective is one row of cdse_coll_table (collective.c) and, for a new algorithm, its cost
 * formula; the MPI runner (calibrate/probe.c) maps each row to its MPI call and data check. */
typedef struct cdse_coll_desc {
    const char *name; /* in job files, probe plans, /probes, /verify, fitted profiles */
    int algo;         /* cdse_coll_algo */
    /* Ring passes over the buffer (2 for all-reduce: reduce-scatter then all-gather). With n
     * ranks on one level: time = passes (n-1) latency + passes (n-1)/n bytes / bandwidth
     * (pairwise: passes = 1; point-to-point: 1 latency + bytes / bandwidth). The bytes factor
     * is also nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md "Bus bandwidth"). */
    double passes;
    bool split;   /* the payload is n per-rank blocks (per destination or contribution) */
    bool reduces; /* a reduction: the receiver adds (data check, reduction rate in fit) */
    int send_blocks_n, recv_blocks_n; /* buffer of n blocks (1) or of one block (0) */
    /* Time of one call on a group placed as `span`, `bytes` as described above. */
    double (*time)(const cdse_system *system, const cdse_span *span, double bytes);
} cdse_coll_desc;

/* One row per collective: its cdse_coll, name, algorithm, ring passes, split into per-rank
 * blocks, reduction, send and receive buffers of n blocks, cost function (collective.h,
 * cdse_coll_desc). cdse_coll_table, cdse_coll_names and the fitted keys of network
 * levels in profiles are all made from these rows. */
#define CDSE_COLLECTIVES(ROW)                                                                      \
    ROW(CDSE_COLL_ALLREDUCE, "allreduce", CDSE_ALGO_RING, 2.0, false, true, 0, 0,                  \
        cdse_allreduce_time)                                                                       \
    ROW(CDSE_COLL_ALLGATHER, "allgather", CDSE_ALGO_RING, 1.0, true, false, 0, 1,                  \
        cdse_allgather_time)                                                                       \
    ROW(CDSE_COLL_REDUCE_SCATTER, "reduce_scatter", CDSE_ALGO_RING, 1.0, true, true, 1, 0,         \
        cdse_reduce_scatter_time)                                                                  \
    ROW(CDSE_COLL_ALLTOALL, "alltoall", CDSE_ALGO_PAIRWISE, 1.0, true, false, 1, 1,                \
        cdse_alltoall_time)                                                                        \
    ROW(CDSE_COLL_SENDRECV, "sendrecv", CDSE_ALGO_P2P, 1.0, false, false, 0, 0, cdse_group_p2p_time)

extern const cdse_coll_desc cdse_coll_table[CDSE_COLL_COUNT];
/* The rows' names, NULL-terminated (for key tables that list allowed names). */
extern const char *const cdse_coll_names[CDSE_COLL_COUNT + 1];

/* The row of `coll` (cdse_coll), or NULL when out of range. */
const cdse_coll_desc *cdse_coll_desc_of(int coll);
int cdse_coll_parse(const char *name); /* cdse_coll of a name, or -1 */
/* Latency steps and bytes factor of one call on n ranks of one level (the fit's terms). */
double cdse_coll_steps(int coll, int n);
double cdse_coll_volume(int coll, int n); /* = nccl-tests bus-bandwidth factor */

/* Effective bandwidth (bytes/s) and latency (s) of level l for a collective: the fitted values
 * when the profile has them, else bandwidth * efficiency and the level latency. */
double cdse_level_bandwidth(const cdse_system *system, int level, int coll);
double cdse_level_latency(const cdse_system *system, int level, int coll);

#endif
