/* The metamorphic suite of the model (metamorphic.c, docs/testing.md), internal to its files:
 * meta_pair.c (a pair as a job file, reports, comparing rows), meta_definitions.c (the relation
 * definitions), meta_hardware.c (hardware relations), meta_strategy.c (strategy relations,
 * duplicates and order), metamorphic.c (one generated job, --emit-job, main). */
#ifndef CDSE_METAMORPHIC_H
#define CDSE_METAMORPHIC_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "clusterdse/config/job.h"
#include "clusterdse/sweep/report.h"
#include "gen.h"

/* The generated jobs resolve zoo names from the source tree (cdse_job_find_data). */
#define JOB_PATH      CDSE_SOURCE_DIR "/tests/metamorphic/generated.cfg"
#define DEFAULT_PAIRS 10000
#define DEFAULT_SEED  20261203u
/* Relative tolerance of an inequality between two evaluations (rounding of sums taken in
 * another order), and of a definition recomputed here (a few operations, IEEE doubles). */
#define REL_TOL          1e-9
#define DEF_TOL          1e-9
#define SAMPLES_PER_JOB  12  /* configurations drawn per generated job */
#define DRAWS_PER_SAMPLE 40  /* draws to find one that is not structurally impossible */
#define HARDWARE_CHANGES 3   /* random changes per hardware relation and configuration */
#define SWEEP_EVERY      4   /* every 4th job of the kind with hardware axes and pools */
#define EMIT_FEASIBLE    100 /* feasible configurations of a job for the command-line test */
#define PRINTED_PER_REL  3   /* violations printed in full per relation (--show N) */
#define SECONDS_PER_DAY  86400.0
#define SECONDS_PER_HOUR 3600.0
#define SECONDS_PER_YEAR (365.25 * 86400.0) /* Julian year, as docs/job-file.md */
#define JOULES_PER_KWH   3.6e6
#define JOULES_PER_MWH   3.6e9

enum relation {
    REL_COMPUTE = 0,
    REL_MEMORY_BW,
    REL_NETWORK,
    REL_HBM,
    REL_RECOMPUTE,
    REL_RECOMPUTE_LAYERS,
    REL_RECOMPUTE_MODULES,
    REL_ZERO,
    REL_DUPLICATE,
    REL_ORDER,
    REL_DEFINITIONS,
    REL_COUNT
};

/* The relations' names, in enum relation order. */
extern const char *const meta_relation_name[REL_COUNT];

typedef struct meta_ctx {
    meta_rng rng;
    cdse_job *job;   /* the generated job */
    cdse_job *alt;   /* its copy with one system changed (hardware relations) */
    cdse_job *dup;   /* its copy with a system listed twice */
    cdse_job *order; /* the same job with every list in another order */
    cdse_job *pair;  /* a violating pair as a job of its own */
    cdse_job *check; /* that job read back */
    uint64_t fresh;  /* fingerprints of changed copies (report.c caches by fingerprint) */
    long pairs[REL_COUNT], violations[REL_COUNT];
    long jobs, rejected;
    bool quiet;
    long show;       /* violations printed with their pair job, per relation */
    bool show_lines; /* the others as one line each */
} meta_ctx;

/* Rows whose time and memory the evaluator computed: feasible, out of memory, or over the
 * headroom (a feasible row whose reserved memory the sweep's record finds above
 * hbm x (1 - objective.memory_headroom); issue 25). */
static inline bool computed(int status)
{
    return status == CDSE_ST_OK || status == CDSE_ST_OOM || status == CDSE_ST_OVER_HEADROOM;
}

/* a <= b within the relative tolerance. */
static inline bool at_most(double a, double b, double tol)
{
    return a <= b + tol * fabs(b) + 1e-300;
}

static inline bool near(double a, double b, double tol)
{
    return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)) + 1e-300;
}

/* ---- meta_pair.c ---- */
/* cdse_record_eval / cdse_record_system on the job's study (model/record.h). */
void meta_record_eval(const cdse_job *job, uint64_t index, cdse_record *record);
void meta_record_system(const cdse_job *job, uint64_t index, cdse_system *system);
/* Prints the violation: the relation, what differs, both values, and the pair as a job,
 * checked by reading it back and evaluating its two rows. */
void meta_report(meta_ctx *ctx, int rel, const char *what, double a, double b, const cdse_job *ja,
                 uint64_t index_a, const cdse_job *jb, uint64_t index_b);
/* The first column (other than index and, with skip_system, system) in which two rows differ;
 * names compared as text, numbers exactly. NULL when none. */
const cdse_column *meta_row_diff(const cdse_job *ja, const cdse_record *a, const cdse_job *jb,
                                 const cdse_record *b, bool skip_system, double *va, double *vb);
/* ---- meta_definitions.c ---- */
/* Every definition that applies to the row at `index` (already evaluated into `rec`). */
void meta_check_definitions(meta_ctx *ctx, const cdse_job *job, uint64_t index,
                            const cdse_record *rec);
/* ---- meta_hardware.c ---- */
/* Evaluates `index` on the copy with its system changed by relation `rel`, and checks the
 * relation against `a`, the row on the job as generated. */
void meta_hardware_pair(meta_ctx *ctx, int rel, uint64_t index, const cdse_record *a);
/* The hardware relations along the job's own hardware axes (a design grid, as a user sweeps
 * one): the configuration at every better value of an axis of its system. */
void meta_hw_axis_pairs(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit);
/* ---- meta_strategy.c ---- */
void meta_duplicate_pair(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit);
void meta_order_pair(meta_ctx *ctx, uint64_t index, const cdse_record *a, const int *digit);
void meta_recompute_layer_pairs(meta_ctx *ctx, const int *digit);
void meta_recompute_module_pairs(meta_ctx *ctx, const int *digit);
void meta_recompute_pairs(meta_ctx *ctx, const int *digit);
void meta_zero_pairs(meta_ctx *ctx, const int *digit);

#endif
