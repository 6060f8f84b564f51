/* The record of one configuration of a study: an index of the space decoded, its system with
 * the hardware axes applied, evaluated, and the outputs derived from the result (time to train,
 * GPU-hours, cost and energy, goodput, error bands, the budget and headroom statuses), and the
 * objective metrics a record is ranked by. Pure: no I/O, no allocation; safe in the sweep's hot
 * loop. The columns that print and store records are the sweep layer's (sweep/report.h). */
#ifndef CLUSTERDSE_RECORD_H
#define CLUSTERDSE_RECORD_H

#include "clusterdse/model/perf.h"
#include "clusterdse/model/space.h"

#define CDSE_MAX_MODELS  32
#define CDSE_MAX_SYSTEMS 32
#define CDSE_MAX_STACKS  8

typedef enum cdse_metric {
    CDSE_METRIC_TIME_PER_ITERATION = 0, /* lower is better */
    CDSE_METRIC_TOKENS_PER_S,           /* higher is better */
    CDSE_METRIC_TIME_TO_TRAIN,          /* days for objective.tokens; lower is better */
    CDSE_METRIC_GPU_HOURS,              /* for objective.tokens; lower is better */
    CDSE_METRIC_MFU,                    /* higher is better */
    CDSE_METRIC_COST_TO_TRAIN,          /* currency units for objective.tokens; lower */
    CDSE_METRIC_ENERGY_TO_TRAIN,        /* MWh for objective.tokens; lower */
    CDSE_METRIC_TOKENS_PER_KWH,         /* higher is better */
    /* goodput (issue 29) */
    CDSE_METRIC_TIME_TO_TRAIN_EFFECTIVE, /* days with failures and checkpoints; lower */
    CDSE_METRIC_INTERRUPTIONS_EXPECTED,  /* over the run; lower */
    CDSE_METRIC_CHECKPOINT_INTERVAL,     /* seconds; higher (fewer saves) is better */
    CDSE_METRIC_GOODPUT,                 /* effective training time ratio; higher */
    CDSE_METRIC_COUNT
} cdse_metric;

const char *cdse_metric_name(int metric); /* "time_per_iteration", "tokens_per_s", ... */
int cdse_metric_parse(const char *name);
bool cdse_metric_higher_is_better(int metric);
/* The metrics' names, for messages and the store's metric attribute. */
extern const char *const cdse_metric_names[CDSE_METRIC_COUNT + 1];
extern const cdse_names cdse_metric_enum;

/* A hardware axis: a numeric key of a system entry given as a list (docs/job-file.md). The
 * sweep enumerates it as space axis CDSE_AXIS_HW0 + its position; the evaluator receives the
 * system with the value applied. */
typedef struct cdse_hw_axis {
    int key;    /* cdse_hw_key */
    int system; /* index of the system entry that lists it */
    int n;
    double value[CDSE_AXIS_MAX_VALUES];
} cdse_hw_axis;

/* What the record needs of a job (config/job.h's cdse_job_study fills one): the entries its
 * space's model, system and stack axes index, its hardware axes and cluster sizes, the
 * objective's figures and the error bands. Pointers into the job: valid while the job is. */
typedef struct cdse_study {
    const cdse_space *space;
    const cdse_model *model;   /* [n_models] */
    const cdse_system *system; /* [n_systems]; a pool's members are entries too */
    const cdse_stack *stack;   /* [n_stacks] */
    int n_stacks;
    const int *system_stack; /* per system: index into stack[] or -1 */
    int n_hw_axes;
    const cdse_hw_axis *hw_axis;
    /* Cluster sizes per system: the gpus axis digit i means system_gpus[system][i]; 0: the
     * space's gpus apply to every system. */
    int n_system_gpus;
    const int32_t (*system_gpus)[CDSE_AXIS_MAX_VALUES];
    /* Error band factors on the time of stack k (n_stacks: the built-in) on system s. */
    const double (*band_low)[CDSE_MAX_SYSTEMS];
    const double (*band_high)[CDSE_MAX_SYSTEMS];
    double tokens;            /* objective.tokens: the token budget (0: none) */
    double electricity_price; /* objective.electricity_price, per kWh */
    double memory_headroom;   /* objective.memory_headroom */
    double budget;            /* objective.budget (0: none) */
    int metric;               /* objective.metric (cdse_metric): what cdse_record_bound bounds */
    uint64_t fingerprint;     /* the job's: the per-thread caches are kept per study */
} cdse_study;

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
void cdse_record_eval(const cdse_study *study, uint64_t index, cdse_record *record);

/* The system configuration `index` runs on: the study's system with the hardware axes' values
 * of that configuration applied (a copy; not for the hot loop). */
void cdse_record_system(const cdse_study *study, uint64_t index, cdse_system *system);

/* The value `metric` (cdse_metric) of a record, oriented so that smaller is better. */
double cdse_record_cost(const cdse_record *record, int metric);

/* Whether the error bands of two records (time_low_s, time_high_s) make `metric` (cdse_metric)
 * of `a` and `b` indistinguishable: the better end of one's band reaches the worse end of the
 * other's. Every metric grows with the time (time, days, GPU-hours, cost, energy) or with its
 * inverse (tokens/s, MFU, tokens per kWh) at a fixed configuration. False without bands. */
bool cdse_record_bands_overlap(const cdse_record *a, const cdse_record *b, int metric);

/* Fills the configuration at `index` (model, system, strategy, stack, hardware columns) without
 * evaluating it: the result is zero. */
void cdse_record_config(const cdse_study *study, uint64_t index, cdse_record *record);

/* A lower bound on cdse_record_cost(study->metric) of the configuration at `index` and of every
 * configuration that differs from it only on the axes cdse_time_floor with `flags` ignores
 * (bound.h), for the metrics a job may prune with (each grows with the iteration time at a fixed
 * model, system, design, GPU count and global batch, and is computed here by the same operations
 * from the floor as from the time). HUGE_VAL when none of them is feasible, -HUGE_VAL when there
 * is no bound. `record` receives the configuration with the floor as its time. */
double cdse_record_bound(const cdse_study *study, uint64_t index, int flags, cdse_record *record);

#endif
