/* Fabric probes: a probe plan (libconfig), MPI collectives timed on shaped sub-communicators,
 * and the /probes table of an HDF5 file. */
#ifndef CLUSTERDSE_PROBE_H
#define CLUSTERDSE_PROBE_H

#include <stdio.h>

#include <mpi.h>

#include "clusterdse/model/hardware.h"

#define CDSE_PLAN_MAX_SIZES  64
#define CDSE_PLAN_MAX_SHAPES 16
/* Largest message a plan may ask for; the probe allocates two buffers of this size per rank. */
#define CDSE_PLAN_MAX_BYTES (1LL << 30)

/* Communicator shapes. All groups of a shape run their collective at the same time, as the
 * TP or DP groups of a training job do. */
typedef enum cdse_shape_kind {
    CDSE_SHAPE_WORLD = 0,  /* one group: every rank */
    CDSE_SHAPE_NODE,       /* one group per node (MPI_Comm_split_type shared memory) */
    CDSE_SHAPE_PER_NODE,   /* one group: the first rank of every node */
    CDSE_SHAPE_CONTIGUOUS, /* groups of `group` consecutive ranks (how TP groups sit) */
    CDSE_SHAPE_STRIDED,    /* groups of `group` ranks `stride` apart (how DP groups sit) */
    CDSE_SHAPE_COUNT
} cdse_shape_kind;

const char *cdse_shape_name(int kind); /* "world", "node", "per_node", "contiguous", "strided" */

/* Datatypes a plan may name, with their MPI types. */
typedef enum cdse_probe_dtype {
    CDSE_PDT_FLOAT = 0, /* MPI_FLOAT */
    CDSE_PDT_DOUBLE,    /* MPI_DOUBLE */
    CDSE_PDT_INT32,     /* MPI_INT32_T */
    CDSE_PDT_UINT8,     /* MPI_UINT8_T (bytes) */
    CDSE_PDT_COUNT
} cdse_probe_dtype;

const char *cdse_probe_dtype_name(int dtype); /* "float", "double", "int32", "uint8" */
int cdse_probe_dtype_size(int dtype);
/* Collective names as in profiles ("allreduce", ..., "sendrecv"); -1 / "?" when unknown. */
const char *cdse_probe_coll_name(int coll);
int cdse_probe_coll_parse(const char *name);

typedef struct cdse_probe_shape {
    int kind;   /* cdse_shape_kind */
    int group;  /* contiguous / strided: ranks per group */
    int stride; /* strided: distance between members (0 = world size / group) */
    int line;   /* line in the plan file, for messages */
} cdse_probe_shape;

/* A validated probe plan. Plain data: broadcast as bytes. */
typedef struct cdse_probe_plan {
    char name[CDSE_NAME_MAX];
    char path[CDSE_PATH_MAX];
    bool coll[CDSE_COLL_COUNT]; /* which collectives to run */
    bool dtype[CDSE_PDT_COUNT]; /* which datatypes */
    int n_sizes;
    int64_t sizes[CDSE_PLAN_MAX_SIZES]; /* bytes, ascending, as in cdse_allreduce_time & co. */
    int n_shapes;
    cdse_probe_shape shape[CDSE_PLAN_MAX_SHAPES];
    int warmup;         /* untimed iterations before each measurement */
    int iterations_min; /* bounds of the adaptive iteration count */
    int iterations_max;
    double time_budget_ms; /* target time per (shape, collective, dtype, size) */
    bool check;            /* verify every result */
    bool reduce_local;     /* measure MPI_Reduce_local (the reduction rate) */
} cdse_probe_plan;

/* Parses and validates a plan for a world of `world_size` ranks (groups larger than the world
 * are errors). On error returns CDSE_EINVAL / CDSE_EIO with diag = "file:line: ...". No MPI. */
int cdse_plan_load_text(const char *text, const char *path, int world_size, cdse_probe_plan *plan,
                        cdse_diag *diag);
int cdse_plan_load_file(const char *path, int world_size, cdse_probe_plan *plan, cdse_diag *diag);
/* The plan keys with types, bounds, defaults and meaning (for --help and docs). */
void cdse_plan_print_keys(FILE *out);

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
    char date[32];        /* ISO 8601 UTC */
    char hostnames[2048]; /* distinct host names, comma separated (truncated with "...") */
    char env[4096];       /* NAME=value lines of the variables that select collective algorithms */
    char plan_name[CDSE_NAME_MAX];
} cdse_probe_info;

typedef struct cdse_probe_result {
    cdse_probe_info info;
    int n_rows;
    cdse_probe_row *rows; /* malloc'd (rank 0 only after cdse_probe_run) */
    int n_reduce;
    cdse_reduce_row *reduce;
} cdse_probe_result;

/* nccl-tests bus bandwidth factor: allreduce 2(n-1)/n; allgather, reduce_scatter, alltoall
 * (n-1)/n; sendrecv 1. Source: nccl-tests doc/PERFORMANCE.md. */
double cdse_busbw_factor(int coll, int n);

/* Runs the plan on `comm`. Collective: `plan` identical on all ranks. Rank 0 prints the table
 * to `table` (may be NULL) as it goes and receives the rows in `result`. */
int cdse_probe_run(const cdse_probe_plan *plan, MPI_Comm comm, FILE *table,
                   cdse_probe_result *result, cdse_diag *diag);
void cdse_probe_result_free(cdse_probe_result *result);

/* Times one collective of `bytes` on one shape with the timing keys of `plan` (warmup,
 * iterations, budget, check). Collective over comm: every argument identical on all ranks.
 * Rank 0 receives the row. */
int cdse_probe_measure(const cdse_probe_plan *plan, MPI_Comm comm, int coll, int dtype,
                       const cdse_probe_shape *shape, int64_t bytes, cdse_probe_row *row,
                       cdse_diag *diag);

/* Serial HDF5: writes /probes, /reduce_local and the provenance attributes of /probes.
 * `plan_text` is stored as an attribute (may be NULL). Refuses an existing file unless force. */
int cdse_probe_write(const char *path, const cdse_probe_result *result, const char *plan_text,
                     bool force, cdse_diag *diag);
/* Reads a file written by cdse_probe_write. */
int cdse_probe_read(const char *path, cdse_probe_result *result, cdse_diag *diag);

/* The table printed on stdout (OSU style: '#' header, fixed columns). */
void cdse_probe_table_header(FILE *out);
void cdse_probe_table_row(FILE *out, const cdse_probe_row *row);

#endif
