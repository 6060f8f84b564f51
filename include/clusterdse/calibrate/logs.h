/* Measured logs of other benchmarks read into probe rows, so that `clusterdse fit` fits them as
 * it fits its own /probes: nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf,
 * alltoall_perf, sendrecv_perf) and the OSU micro-benchmarks (osu_allreduce, osu_allgather,
 * osu_reduce_scatter, osu_alltoall, osu_latency, osu_bw). No MPI, no HDF5.
 *
 * Sizes are converted to the payload per rank as collective.h counts it (the nccl-tests
 * convention): nccl-tests' size column already is that; OSU's size is the block each rank
 * contributes for osu_allgather and the block sent to each peer for osu_alltoall (both times n),
 * the whole vector for osu_allreduce and osu_reduce_scatter, the message for osu_latency and
 * osu_bw. docs/calibration.md cites the sources. */
#ifndef CLUSTERDSE_LOGS_H
#define CLUSTERDSE_LOGS_H

#include "clusterdse/calibrate/probe_rows.h"

typedef enum cdse_log_format {
    CDSE_LOG_NONE = 0,
    CDSE_LOG_NCCL_TESTS,
    CDSE_LOG_OSU,
} cdse_log_format;

/* What the user says about a log that cannot say it itself. */
typedef struct cdse_log_hint {
    int ranks; /* 0: from the log (nccl-tests' rank lines); OSU logs need it */
    int level; /* 0 within a node, 1 one rank per node, -1: from the log's host names */
} cdse_log_hint;

/* What one log held. */
typedef struct cdse_log_info {
    int format;       /* cdse_log_format */
    char tool[48];    /* "all_reduce_perf", "osu_allreduce", ... */
    char version[64]; /* "nccl-tests 2.13.9", "OSU v7.4", or "" */
    char device[64];  /* nccl-tests: the first rank's device name; OSU: "CUDA" or "" */
    char algo[96];    /* "NCCL_ALGO=Ring NCCL_PROTO=Simple" when the log shows them */
    int ranks, nodes, ranks_per_node; /* nodes 0: the log does not say */
    /* The groups that ran the collective side by side: nccl-tests' Group column
     * (NCCL_TESTS_SPLIT), one group of every rank without it. group_nodes: nodes spanned by the
     * widest group (0: the log does not say). */
    int groups, group_size, group_nodes;
    int level; /* of its rows: 0, 1 or -1 (mixed: not fitted) */
    int rows;
} cdse_log_info;

/* Which format `path` is: CDSE_LOG_NONE for anything else (e.g. an HDF5 probe store). */
int cdse_log_sniff(const char *path);

/* Reads the log at `path` and appends its rows to `result` (rows realloc'd; info left alone).
 * CDSE_EINVAL with diag "path:line: ..." for a log it cannot read: no table, an unknown
 * benchmark, an OSU log without hint->ranks, a row that is not numbers. */
int cdse_log_read(const char *path, const cdse_log_hint *hint, cdse_probe_result *result,
                  cdse_log_info *info, cdse_diag *diag);

#endif
