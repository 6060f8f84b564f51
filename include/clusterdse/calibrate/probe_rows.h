/* Probe rows: what one measurement produced, the /probes and /reduce_local tables of an HDF5
 * file (serial API, rank 0), and the table printed while probing. No MPI. */
#ifndef CLUSTERDSE_PROBE_ROWS_H
#define CLUSTERDSE_PROBE_ROWS_H

#include <stdio.h>

#include "clusterdse/config/probe_plan.h"

/* One measurement: a row of the /probes table. Times are per call in microseconds: per-rank
 * means over the iterations, then min / avg / max over the participating ranks; t_itermax is
 * the mean over iterations of the slowest rank of each iteration, t_median its median. */
typedef struct cdse_probe_row {
    char collective[16];
    char shape[16];
    int32_t group_size;
    int32_t stride;
    int32_t n_groups;
    int32_t level;   /* 0: every group within a node; 1: one member per node; -1 mixed */
    int32_t n_nodes; /* nodes spanned by the widest group */
    char dtype[8];
    int64_t bytes; /* payload as cdse_allreduce_time & co. count it */
    int32_t iterations;
    double t_min_us, t_avg_us, t_max_us, t_itermax_us;
    double t_median_us; /* median over iterations of the slowest rank: robust to preemption */
    double t_best_us;   /* fastest iteration of the slowest rank: the unloaded machine */
    double algbw_gbs;   /* bytes / t_avg */
    double busbw_gbs;   /* algbw x nccl-tests factor */
    int8_t check_ok;    /* 1 passed, 0 failed, -1 not checked */
} cdse_probe_row;

/* Local reduction rate: MPI_Reduce_local (MPI_SUM) of `bytes` on every rank at once. */
typedef struct cdse_reduce_row {
    char dtype[8];
    int64_t bytes;
    int32_t iterations;
    double t_avg_us; /* mean over ranks of the per-rank mean */
    double gbs;      /* bytes / t_avg: bytes of the in-out buffer reduced per second, 1e9 */
} cdse_reduce_row;

/* Provenance of a probe run. */
typedef struct cdse_probe_info {
    int ranks;
    int nodes;
    int ranks_per_node; /* the largest node */
    char mpi_library[512];
    char date[32];         /* ISO 8601 UTC */
    char hostnames[2048];  /* distinct host names, comma separated (truncated with "...") */
    char env[4096];        /* NAME=value lines of the variables that select collective algorithms */
    char algorithms[1024]; /* "COLL: MPI call, algorithm ..." lines (probe.c, collect_algorithms) */
    char plan_name[CDSE_NAME_MAX];
} cdse_probe_info;

typedef struct cdse_probe_result {
    cdse_probe_info info;
    int n_rows;
    cdse_probe_row *rows; /* malloc'd (rank 0 only after cdse_probe_run) */
    int n_reduce;
    cdse_reduce_row *reduce;
} cdse_probe_result;

void cdse_probe_result_free(cdse_probe_result *result);

/* nccl-tests bus bandwidth factor: allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall
 * (n-1)/n; sendrecv 1. Source: nccl-tests doc/PERFORMANCE.md. */
double cdse_busbw_factor(int coll, int n);

/* Serial HDF5: writes /probes, /reduce_local and the provenance attributes of /probes.
 * `plan_text` is stored as an attribute (may be NULL). Refuses an existing file unless force. */
int cdse_probe_write(const char *path, const cdse_probe_result *result, const char *plan_text,
                     bool force, cdse_diag *diag);
/* Reads a file written by cdse_probe_write, inside the store's read guard
 * (cdse_store_set_read_guard). CDSE_EINVAL for a path that is missing or not a regular file, a
 * file that is not HDF5, or one without /probes (the user's input); CDSE_EIO for a damaged
 * one. */
int cdse_probe_read(const char *path, cdse_probe_result *result, cdse_diag *diag);

/* The table printed on stdout (OSU style: '#' header, fixed columns). */
void cdse_probe_table_header(FILE *out);
void cdse_probe_table_row(FILE *out, const cdse_probe_row *row);

#endif
