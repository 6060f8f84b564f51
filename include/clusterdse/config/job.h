/* libconfig job file -> validated, immutable job. Every error names file:line. No MPI. */
#ifndef CLUSTERDSE_JOB_H
#define CLUSTERDSE_JOB_H

#include <stdio.h>

#include "clusterdse/model/perf.h"
#include "clusterdse/model/record.h"
#include "clusterdse/model/space.h"

typedef enum cdse_store_mode {
    CDSE_STORE_ALL = 0, /* every configuration with its status */
    CDSE_STORE_FEASIBLE,
    CDSE_STORE_BEST, /* only /top, /pareto and /pareto_cost */
    CDSE_STORE_MODES
} cdse_store_mode;
/* "all", "feasible", "best", NULL: objective.store, the store's store_mode attribute, the dry
 * run. */
extern const char *const cdse_store_mode_names[CDSE_STORE_MODES + 1];

/* Bits of objective.group_by. */
enum {
    CDSE_GROUP_MODEL = 1,
    CDSE_GROUP_SYSTEM = 2,
    CDSE_GROUP_GPUS = 4,
    CDSE_GROUP_GLOBAL_BATCH = 8,
    CDSE_GROUP_PRECISION = 16,
    CDSE_GROUP_DESIGN = 32, /* the hardware values (record.hw): one group per design */
};

typedef struct cdse_objective {
    int metric;               /* cdse_metric */
    int top;                  /* best configurations kept per group */
    int group_by;             /* CDSE_GROUP_* mask */
    int store;                /* cdse_store_mode */
    double tokens;            /* token budget for time_to_train and gpu_hours */
    double electricity_price; /* currency units per kWh drawn (purchased systems) */
    char currency[16];        /* the unit of cost_to_train and the profiles' prices */
    bool prune;   /* skip blocks a lower bound excludes from /top and /pareto (docs/sweep.md) */
    int top_line; /* line of `top` in the job file, 0 if defaulted (for messages; not hashed) */
    /* Fraction of HBM kept free: a configuration whose reserved memory is above
     * hbm_gib x (1 - memory_headroom) is over_headroom (CDSE_MEMORY_HEADROOM_DEFAULT). */
    double memory_headroom;
    /* The most the GPUs of a configuration may cost to buy, in `currency` (cdse_bill's
     * purchase_price: GPUs x (gpu_price + facility_price + ports), a pool's summed over its
     * types); 0 = no budget. docs/job-file.md, Cost and energy. */
    double budget;
} cdse_objective;

/* The default of objective.memory_headroom: 5 % of HBM kept free beyond what the caching
 * allocator reserves, for what the model does not count (memory spikes at checkpoint saves,
 * which Megatron-LM reports separately since pull request #2839; communicators created lazily).
 * The margin tools that size GPU memory keep: Huawei's llm_datadist mem_utilization defaults to
 * 0.95 of device memory; compressed-tensors keeps 5 % of a model's memory after an out-of-memory
 * error with 1.83 GiB cached but unallocated at 78.09 of 79.18 GiB (vllm-project/
 * compressed-tensors pull request #587). */
#define CDSE_MEMORY_HEADROOM_DEFAULT 0.05

/* A validated job. Plain data apart from `text`, so it can be broadcast as bytes; the same on
 * every rank. */
/* Which measured levels a job's probe section writes into its systems (probe.levels,
 * probe.force; calibrate.h, cdse_probe_levels_taken). */
#define CDSE_PROBE_LEVELS_MAX 8
typedef struct cdse_probe_take {
    bool given; /* probe.levels is in the job; else only the outermost level when measured */
    int n_levels;
    char level[CDSE_PROBE_LEVELS_MAX][CDSE_NAME_MAX]; /* level names, intra_node or inter_node */
    bool force; /* take a level fitted more than 3x away from the system's (cdse_fit_check_base) */
} cdse_probe_take;

typedef struct cdse_job {
    char name[CDSE_NAME_MAX * 2];
    char path[CDSE_PATH_MAX];   /* the job file as given ("<embedded>" for the default job) */
    char output[CDSE_PATH_MAX]; /* default output store */
    int n_models;
    cdse_model model[CDSE_MAX_MODELS];
    int n_systems;
    cdse_system system[CDSE_MAX_SYSTEMS];
    /* Software stacks (calibration/stacks): the values of the `stacks` axis and the systems'
     * default stacks, each loaded once; the axis holds indices into stack[], -1 when the job
     * names none (each system's default, else the built-in cdse_stack_default). */
    int n_stacks;
    cdse_stack stack[CDSE_MAX_STACKS];
    char stack_path[CDSE_MAX_STACKS][CDSE_PATH_MAX]; /* the files they were read from */
    int system_stack[CDSE_MAX_SYSTEMS];              /* index into stack[] or -1 */
    cdse_space space;
    int n_hw_axes;
    cdse_hw_axis hw_axis[CDSE_MAX_HW_AXES];
    /* Cluster sizes per system (`gpus` or `nodes` in the system entries): the gpus axis digit i
     * means system_gpus[system][i]. 0: space.gpus applies to every system. */
    int n_system_gpus;
    int32_t system_gpus[CDSE_MAX_SYSTEMS][CDSE_AXIS_MAX_VALUES];
    cdse_objective objective;
    /* Error band of the predicted time (calibration/bands.cfg, cdse_bands_apply): factors on the
     * time of a configuration run by stack k (n_stacks: the built-in) on system s. */
    double band_low[CDSE_MAX_STACKS + 1][CDSE_MAX_SYSTEMS];
    double band_high[CDSE_MAX_STACKS + 1][CDSE_MAX_SYSTEMS];
    uint64_t fingerprint; /* hash of the validated content, to refuse resuming another job */
    char *text;           /* the job file text as given (malloc'd) */
    size_t text_len;
    /* Optional `probe` section: the sweep runs this probe plan on its own allocation, fits, and
     * applies the fitted network (cdse_fit_apply) to the systems in probe_systems (bit i =
     * job->system[i]) before evaluating. probe_plan[0] == '\0': no probe section. */
    char probe_plan[CDSE_PATH_MAX]; /* resolved path of the plan file */
    uint32_t probe_systems;
    cdse_probe_take probe_take; /* probe.levels and probe.force */
} cdse_job;

/* The study of a job (model/record.h): what evaluating its indices into records reads, pointers
 * into `job` (valid while it is). Cheap: build one per batch of evaluations. */
static inline void cdse_job_study(const cdse_job *job, cdse_study *study)
{
    *study = (cdse_study){
        .space = &job->space,
        .model = job->model,
        .system = job->system,
        .stack = job->stack,
        .n_stacks = job->n_stacks,
        .system_stack = job->system_stack,
        .n_hw_axes = job->n_hw_axes,
        .hw_axis = job->hw_axis,
        .n_system_gpus = job->n_system_gpus,
        .system_gpus = job->system_gpus,
        .band_low = job->band_low,
        .band_high = job->band_high,
        .tokens = job->objective.tokens,
        .electricity_price = job->objective.electricity_price,
        .memory_headroom = job->objective.memory_headroom,
        .budget = job->objective.budget,
        .metric = job->objective.metric,
        .fingerprint = job->fingerprint,
    };
}

/* Parses and validates a job file. Model and system names are looked up as
 * jobs/models/NAME.cfg and calibration/systems/NAME.cfg under the data directories
 * (cdse_job_data_dirs). On error returns CDSE_EINVAL or CDSE_EIO with diag = "file:line: ...". */
int cdse_job_load_file(const char *path, cdse_job *job, cdse_diag *diag);
/* The same from text in memory; `path` is used in messages and to resolve relative names. */
int cdse_job_load_text(const char *text, const char *path, cdse_job *job, cdse_diag *diag);
void cdse_job_free(cdse_job *job);

/* Loads one model or system profile file (the same keys as inline groups in a job). */
int cdse_model_load_file(const char *path, cdse_model *model, cdse_diag *diag);
int cdse_system_load_file(const char *path, cdse_system *system, cdse_diag *diag);
/* The network of a system as a profile's `network = ( ... );` in job-file syntax, every level
 * key and fitted collective (values that read back to the same doubles). */
void cdse_system_print_network(FILE *out, const cdse_system *system);

/* Finds NAME.cfg in SUBDIR ("jobs/models" or "calibration/systems") of: $CLUSTERDSE_DATA,
 * the directory of the job file and its parents, the source tree, the install prefix. */
int cdse_job_find_data(const char *subdir, const char *name, const char *job_path, char *out,
                       size_t out_size);

/* Prints the job-file key reference (every key: type, default, allowed values, meaning) from
 * the parser's key tables. */
void cdse_job_print_keys(FILE *out);
/* Prints the effective job (every default resolved, models and systems inline) in job-file
 * syntax; loading that text gives a job with the same fingerprint. */
void cdse_job_print(FILE *out, const cdse_job *job);

extern const char cdse_embedded_quickstart_job[];

#endif
