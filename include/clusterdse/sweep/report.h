/* Records (one evaluated configuration), the column table shared by CSV, tables and the HDF5
 * store, and text output. */
#ifndef CLUSTERDSE_REPORT_H
#define CLUSTERDSE_REPORT_H

#include <stdio.h>

#include "clusterdse/config/job.h"

/* One evaluated configuration. */
typedef struct cdse_record {
    uint64_t index; /* position in the space */
    int32_t model;  /* index into job->model[] */
    int32_t system; /* index into job->system[] */
    int32_t stack;  /* index into job->stack[] of the stack that ran it; n_stacks: the built-in */
    cdse_strategy strategy;
    cdse_result result;
    double time_to_train_days; /* objective.tokens / tokens_per_s; 0 without a budget */
    double gpu_hours;
    double cost_to_train;       /* currency units for objective.tokens (0: no budget or prices) */
    double energy_to_train_mwh; /* facility energy for objective.tokens (0: no budget or power) */
    double tokens_per_kwh;      /* tokens per kWh of facility energy (0: no power figures) */
    double hw[CDSE_HW_COUNT];   /* the system's hardware values (cdse_hw_key), axes applied */
    /* --- goodput (issue 29; model/goodput.h): 0 for rows that are not ok and for pools --- */
    double checkpoint_gib;               /* the largest checkpoint shard a GPU writes */
    double checkpoint_stall_s;           /* training paused per checkpoint */
    double mttf_hours;                   /* mean time to an unexpected failure (0: none) */
    double checkpoint_interval_s;        /* compute between checkpoints (0: none needed) */
    double lost_work_s;                  /* expected work redone per failure */
    double goodput;                      /* effective training time ratio, (0, 1] */
    double interruptions_expected;       /* over time_to_train_effective (0 without a budget) */
    double time_to_train_effective_days; /* time_to_train_days / goodput */
    int32_t checkpoint_flag;             /* CDSE_CKPT_FLAG_* */
    /* The error band (job->band_low / band_high of its stack and system) on the iteration time,
     * the time to train and the cost to train (each grows with the time at a fixed
     * configuration); 0 where the figure is 0. */
    double time_low_s, time_high_s;
    double days_low, days_high;
    double cost_low, cost_high;
} cdse_record;

/* Decodes `index` and evaluates it into `record`. Pure: safe in the sweep's hot loop. */
void cdse_record_eval(const cdse_job *job, uint64_t index, cdse_record *record);

/* The system configuration `index` runs on: the job's system with the hardware axes' values of
 * that configuration applied (a copy; not for the hot loop). */
void cdse_record_system(const cdse_job *job, uint64_t index, cdse_system *system);

/* The value `metric` (cdse_metric) of a record, oriented so that smaller is better. */
double cdse_record_cost(const cdse_record *record, int metric);

/* Whether the error bands of two records (time_low_s, time_high_s) make `metric` (cdse_metric)
 * of `a` and `b` indistinguishable: the better end of one's band reaches the worse end of the
 * other's. Every metric grows with the time (time, days, GPU-hours, cost, energy) or with its
 * inverse (tokens/s, MFU, tokens per kWh) at a fixed configuration. False without bands. */
bool cdse_record_bands_overlap(const cdse_record *a, const cdse_record *b, int metric);

/* Fills the configuration at `index` (model, system, strategy, stack, hardware columns) without
 * evaluating it: the result is zero. */
void cdse_record_config(const cdse_job *job, uint64_t index, cdse_record *record);

/* A lower bound on cdse_record_cost(job->objective.metric) of the configuration at `index` and of
 * every configuration that differs from it only on the axes cdse_time_floor with `flags`
 * ignores (bound.h),
 * for the metrics a job may prune with (each grows with the iteration time at a fixed model,
 * system, design, GPU count and global batch, and is computed here by the same operations from
 * the floor as from the time). HUGE_VAL when none of them is feasible, -HUGE_VAL when there is
 * no bound. `record` receives the configuration with the floor as its time. */
double cdse_record_bound(const cdse_job *job, uint64_t index, int flags, cdse_record *record);

typedef enum cdse_col_kind {
    CDSE_COL_U64 = 0, /* uint64_t */
    CDSE_COL_I32,     /* int32_t or int */
    CDSE_COL_BOOL,    /* bool, written as 0/1 */
    CDSE_COL_F64,     /* double */
    CDSE_COL_MODEL,   /* int32 index, written as the model name */
    CDSE_COL_SYSTEM,  /* int32 index, written as the system name */
    CDSE_COL_ENUM,    /* int code, written as its name in the column's `names` */
    CDSE_COL_STACK,   /* int32 index into the job's stacks (n_stacks: the built-in default),
                         written as the stack's name */
} cdse_col_kind;

/* How the stack column names the evaluator's built-in stack (a strategy without one). */
#define CDSE_STACK_DEFAULT_LABEL "default"

/* One output column: its name in CSV, tables and the HDF5 store (the contract), how to read it
 * from a record, and its meaning. */
typedef struct cdse_column {
    const char *name;
    int kind;      /* cdse_col_kind */
    size_t offset; /* offsetof(cdse_record, ...) */
    const char *unit;
    const char *help;
    const cdse_names *names; /* CDSE_COL_ENUM: the names of its codes */
} cdse_column;

extern const cdse_column cdse_columns[];
extern const int cdse_column_count;

const cdse_column *cdse_column_find(const char *name);
/* Numeric value of a column (enums as their integer code). */
double cdse_column_value(const cdse_column *column, const cdse_record *record);
/* Writes the value as text ("gpt3-175b", "selective", "0.4123", ...). */
void cdse_column_format(const cdse_column *column, const cdse_record *record, const cdse_job *job,
                        char *buf, size_t size);

void cdse_csv_header(FILE *out);
void cdse_csv_row(FILE *out, const cdse_record *record, const cdse_job *job);

/* The human table: clusterdse/sweep/table.h. */

/* Offload mask as text: "none", "weights", "activations+optimizer", ... (cdse_offload_enum) */
const char *cdse_offload_name(int offload);
/* Prints the column reference (name, unit, meaning), one column a line. */
void cdse_columns_print(FILE *out);

#endif
