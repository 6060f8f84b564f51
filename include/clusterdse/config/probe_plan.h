/* Probe plans: libconfig text -> a validated cdse_probe_plan (the collectives, datatypes, sizes
 * and communicator shapes to measure). Configuration layer: no MPI, no HDF5. */
#ifndef CLUSTERDSE_PROBE_PLAN_H
#define CLUSTERDSE_PROBE_PLAN_H

#include <stdio.h>

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

/* Datatypes a plan may name; the runner maps them to MPI types (float: MPI_FLOAT, double:
 * MPI_DOUBLE, int32: MPI_INT32_T, uint8: MPI_UINT8_T). */
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

/* group / stride given as "node" (the ranks per node, MPI_Comm_split_type shared) or "world"
 * (every rank): resolved by the runner on the allocation it runs on. */
#define CDSE_PLAN_NODE  (-1)
#define CDSE_PLAN_WORLD (-2)

typedef struct cdse_probe_shape {
    int kind;   /* cdse_shape_kind */
    int group;  /* contiguous / strided: ranks per group, or CDSE_PLAN_NODE / _WORLD */
    int stride; /* strided: distance between members (0 = world size / group), or as group */
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
/* The plan file's text (malloc'd), read with the checks of every configuration file (a regular
 * file of at most 16 MiB without NUL bytes, docs/job-file.md), for a caller that stores it. */
int cdse_plan_read_file(const char *path, char **text, cdse_diag *diag);
/* The plan keys with types, bounds, defaults and meaning (for --help and docs). */
void cdse_plan_print_keys(FILE *out);

#endif
