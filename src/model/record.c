/* The record of a configuration (model/record.h): an index decoded, its system with the
 * hardware axes applied, evaluated, and the outputs derived from the result. Moved here from
 * src/sweep/report.c (issue 28), which keeps the columns. */
#include "clusterdse/model/record.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "clusterdse/model/bound.h"
#include "clusterdse/model/cost.h"
#include "clusterdse/model/goodput.h"
#include "clusterdse/model/pool.h"

/* --- Objective metrics (moved from src/config/job.c) --- */

const char *const cdse_metric_names[CDSE_METRIC_COUNT + 1] = {
    "time_per_iteration", "tokens_per_s", "time_to_train", "gpu_hours", "mfu", "cost_to_train",
    "energy_to_train", "tokens_per_kwh",
    /* goodput (issue 29) */
    "time_to_train_effective", "interruptions_expected", "checkpoint_interval_s", "goodput", NULL};

const cdse_names cdse_metric_enum = {cdse_metric_names, CDSE_METRIC_COUNT, NULL};

const char *cdse_metric_name(int metric)
{
    return cdse_names_name(&cdse_metric_enum, metric);
}

int cdse_metric_parse(const char *name)
{
    return cdse_names_find(&cdse_metric_enum, name);
}

bool cdse_metric_higher_is_better(int metric)
{
    return metric == CDSE_METRIC_TOKENS_PER_S || metric == CDSE_METRIC_MFU ||
           metric == CDSE_METRIC_TOKENS_PER_KWH || metric == CDSE_METRIC_CHECKPOINT_INTERVAL ||
           metric == CDSE_METRIC_GOODPUT;
}

/* --- Records --- */

/* Seconds per day and per hour, for time_to_train_days and gpu_hours. */
#define SECONDS_PER_DAY  86400.0
#define SECONDS_PER_HOUR 3600.0
/* 1 kWh = 3.6e6 J, 1 MWh = 3.6e9 J (amortization: model/cost.c). */
#define JOULES_PER_KWH 3.6e6
#define JOULES_PER_MWH 3.6e9

/* A pool's GPU types, in its members' order. */
static void pool_types(const cdse_study *study, const cdse_system *pool,
                       const cdse_system *types[CDSE_MAX_POOL_TYPES])
{
    for (int t = 0; t < pool->pool.n_types; t++)
        types[t] = &study->system[pool->pool.member[t]];
}

/* The bill of `gpus` GPUs of `system` for `seconds` (model/cost.h): cdse_system_bill, or for a
 * heterogeneous pool cdse_pool_bill, each type's bill for the GPUs the configuration takes of it
 * with its own prices and power. False when a pool's GPUs do not split into whole ones. */
static bool record_bill(const cdse_study *study, const cdse_system *system, int gpus,
                        double seconds, double electricity_price, cdse_bill *bill)
{
    if (system->pool.n_types == 0) {
        cdse_system_bill(system, gpus, seconds, electricity_price, bill);
        return true;
    }
    const cdse_system *types[CDSE_MAX_POOL_TYPES];
    pool_types(study, system, types);
    return cdse_pool_bill(types, system->pool.gpus, system->pool.n_types, gpus, seconds,
                          electricity_price, bill);
}

/* Cost and energy of a configuration (docs/job-file.md, Cost and energy):
 *   facility power P = pue x (gpus x gpu_power + nodes x node_power), nodes = ceil(gpus / per node)
 *   tokens_per_kwh = tokens_per_s x 3.6e6 / P;  energy_to_train = P x seconds / 3.6e9 MWh
 *   cost_to_train = gpus x rental_price x hours                      (rented), or
 *                   gpus x (gpu_price + facility_price + sum of port_price over levels)
 *                   x seconds / (amortization_years x 1 year) + kWh x electricity_price (bought)
 * A pool's figures are the sum of its types' for their shares (record_bill). */
static void record_cost(const cdse_study *study, const cdse_system *system, double seconds,
                        cdse_record *record)
{
    cdse_bill bill;
    if (!record_bill(study, system, record->strategy.gpus, seconds, study->electricity_price,
                     &bill))
        return;
    if (bill.power_w > 0.0)
        record->tokens_per_kwh = record->result.tokens_per_s * JOULES_PER_KWH / bill.power_w;
    if (!(seconds > 0.0))
        return; /* no token budget: no cost or energy to train */
    record->energy_to_train_mwh = bill.power_w * seconds * (1.0 / JOULES_PER_MWH);
    record->cost_to_train = bill.cost;
}

/* The system of a configuration with its hardware-axis values applied, and its hardware
 * columns. Consecutive indices share a design (the hardware axes vary slower than the strategy
 * axes), so both are kept per thread and rebuilt only when the job, the system or the design
 * changes: no copy per configuration. Without hardware axes the job's own system is used and
 * only the columns come from here. (A job's systems change only before its first evaluation:
 * the sweep applies a probe's fit first.) */
typedef struct hw_cache {
    const cdse_system *entries; /* the study's systems: the job they belong to */
    uint64_t fingerprint;
    int system;
    int digit[CDSE_MAX_HW_AXES];
    cdse_system applied;
    double hw[CDSE_HW_COUNT];
} hw_cache;

static _Thread_local hw_cache cache;

static bool hw_cache_hit(const cdse_study *study, int system, const int *digit)
{
    if (cache.entries != study->system || cache.fingerprint != study->fingerprint ||
        cache.system != system)
        return false;
    for (int h = 0; h < study->n_hw_axes; h++)
        if (cache.digit[h] != digit[h])
            return false;
    return true;
}

static const cdse_system *hw_system(const cdse_study *study, int system, const int *digit)
{
    if (!hw_cache_hit(study, system, digit)) {
        cache.applied = study->system[system];
        for (int h = 0; h < study->n_hw_axes; h++) {
            const cdse_hw_axis *axis = &study->hw_axis[h];
            if (axis->system == system)
                cdse_hw_set(&cache.applied, axis->key, axis->value[digit[h]]);
            cache.digit[h] = digit[h];
        }
        cdse_hw_values(&cache.applied, cache.hw);
        cache.entries = study->system;
        cache.fingerprint = study->fingerprint;
        cache.system = system;
    }
    return &cache.applied;
}

void cdse_record_system(const cdse_study *study, uint64_t index, cdse_system *system)
{
    int digit[CDSE_AXIS_COUNT];
    cdse_space_decode(study->space, index, digit);
    int s = (int)study->space->value[CDSE_AXIS_SYSTEM][digit[CDSE_AXIS_SYSTEM]];
    *system = study->system[s];
    for (int h = 0; h < study->n_hw_axes; h++)
        if (study->hw_axis[h].system == s)
            cdse_hw_set(system, study->hw_axis[h].key,
                        study->hw_axis[h].value[digit[CDSE_AXIS_HW0 + h]]);
}

/* Whether a hardware axis of another system entry than `system` is at a value other than its
 * first: the configuration repeats the one at its first value (the axis does not apply to this
 * system), so only that one is evaluated. */
static bool other_system_axis(const cdse_study *study, int system, const int *digit)
{
    for (int h = 0; h < study->n_hw_axes; h++)
        if (study->hw_axis[h].system != system && digit[h] != 0)
            return true;
    return false;
}

/* Fills the record's configuration, its stack and its hardware columns; returns the system it
 * runs on (the job's, with its hardware-axis values applied). *repeat: the configuration
 * repeats another (other_system_axis). */
static const cdse_system *record_setup(const cdse_study *study, uint64_t index, cdse_record *record,
                                       bool *repeat)
{
    int digit[CDSE_AXIS_COUNT];
    cdse_space_decode(study->space, index, digit);
    record->index = index;
    record->model = (int32_t)study->space->value[CDSE_AXIS_MODEL][digit[CDSE_AXIS_MODEL]];
    record->system = (int32_t)study->space->value[CDSE_AXIS_SYSTEM][digit[CDSE_AXIS_SYSTEM]];
    cdse_space_strategy(study->space, digit, &record->strategy);
    /* The stack that runs it: the axis's value, else the system's, else the built-in (stored as
     * n_stacks, so that every row names its stack). */
    int stack = (int)study->space->value[CDSE_AXIS_STACK][digit[CDSE_AXIS_STACK]];
    if (stack < 0)
        stack = study->system_stack[record->system];
    record->stack = stack >= 0 ? stack : study->n_stacks;
    record->strategy.stack = stack >= 0 ? &study->stack[stack] : NULL;
    if (study->n_system_gpus > 0)
        record->strategy.gpus = study->system_gpus[record->system][digit[CDSE_AXIS_GPUS]];
    const cdse_system *system = hw_system(study, record->system, digit + CDSE_AXIS_HW0);
    if (study->n_hw_axes == 0)
        system = &study->system[record->system];
    memcpy(record->hw, cache.hw, sizeof record->hw);
    *repeat = other_system_axis(study, record->system, digit + CDSE_AXIS_HW0);
    return system;
}

/* --- goodput (issue 29) --- The record's failure, checkpoint and effective-time columns
 * (model/goodput.h) from its iteration time; `seconds` is the failure-free time to train (0
 * without a budget). Rows that are not ok and pools keep zeros. */
static _Thread_local struct {
    const cdse_model *entries; /* the study's models: the job they belong to */
    uint64_t fingerprint;
    int model;
    cdse_param_counts counts;
} param_cache = {.model = -1};

/* The parameter counts of the record's model, kept per thread (a model's counts are fixed once
 * its job is loaded; consecutive indices share the model). */
static const cdse_param_counts *record_params(const cdse_study *study, int model)
{
    if (param_cache.entries != study->model || param_cache.fingerprint != study->fingerprint ||
        param_cache.model != model) {
        param_cache.counts = cdse_model_param_counts(&study->model[model]);
        param_cache.entries = study->model;
        param_cache.fingerprint = study->fingerprint;
        param_cache.model = model;
    }
    return &param_cache.counts;
}

static void record_goodput(const cdse_study *study, const cdse_system *system, double seconds,
                           cdse_record *record)
{
    record->interruptions_expected = record->time_to_train_effective_days = 0.0;
    if (record->result.status != CDSE_ST_OK || system->pool.n_types != 0) {
        record->checkpoint_gib = record->checkpoint_stall_s = record->mttf_hours = 0.0;
        record->checkpoint_interval_s = record->lost_work_s = record->goodput = 0.0;
        record->checkpoint_flag = CDSE_CKPT_FLAG_OK;
        return;
    }
    cdse_goodput g;
    cdse_goodput_eval(record_params(study, record->model), system, &record->strategy,
                      record->result.dp, record->result.time_per_iteration_s, &g);
    record->checkpoint_gib = g.checkpoint_bytes / CDSE_GIB;
    record->checkpoint_stall_s = g.stall_s;
    record->mttf_hours = g.mttf_s / SECONDS_PER_HOUR;
    record->checkpoint_interval_s = g.interval_s;
    record->lost_work_s = g.lost_s;
    record->goodput = g.ratio;
    record->checkpoint_flag = g.flag;
    if (seconds > 0.0 && g.ratio > 0.0) {
        double wall = g.ratio == 1.0 ? seconds : seconds / g.ratio;
        record->time_to_train_effective_days = wall / SECONDS_PER_DAY;
        record->interruptions_expected = wall * g.interruptions_per_s;
    } else if (seconds > 0.0) {
        record->time_to_train_effective_days = HUGE_VAL; /* never finishes */
    }
}

/* The figures derived from the result: time to train, GPU-hours, cost and energy, 0 for an
 * infeasible configuration (oom, dtype_unsupported, ...: it does not train; docs/eval.md), whose
 * time and throughput stay as information. */
static void record_finish(const cdse_study *study, const cdse_system *system, cdse_record *record)
{
    record->strategy.dp = record->result.dp;
    record->strategy.grad_accum = record->result.grad_accum;
    record->time_to_train_days = 0.0;
    record->gpu_hours = 0.0;
    record->cost_to_train = 0.0;
    record->energy_to_train_mwh = 0.0;
    record->tokens_per_kwh = 0.0;
    /* The headroom (objective.memory_headroom) on the HBM of the configuration's system, hardware
     * axes applied; on a pool, of the GPU type whose memory the result holds (pool.h). */
    double hbm = system->pool.n_types > 0 && record->result.pool_hbm_gib > 0.0
                     ? record->result.pool_hbm_gib
                     : system->hbm_gib;
    if (record->result.status == CDSE_ST_OK &&
        record->result.mem_reserved_gib > hbm * (1.0 - study->memory_headroom))
        record->result.status = CDSE_ST_OVER_HEADROOM;
    /* The budget (objective.budget) on the purchase price of the configuration's GPUs, hardware
     * axes applied (a design's gpu_price). */
    cdse_bill price;
    if (record->result.status == CDSE_ST_OK && study->budget > 0.0 &&
        record_bill(study, system, record->strategy.gpus, 0.0, 0.0, &price) &&
        !cdse_within_budget(price.purchase_price, study->budget))
        record->result.status = CDSE_ST_OVER_BUDGET;
    double seconds = 0.0;
    bool trains = record->result.status == CDSE_ST_OK && record->result.tokens_per_s > 0.0;
    if (study->tokens > 0.0 && trains) {
        seconds = study->tokens / record->result.tokens_per_s;
        record->time_to_train_days = seconds / SECONDS_PER_DAY;
        record->gpu_hours = seconds * record->strategy.gpus / SECONDS_PER_HOUR;
    }
    if (record->result.tokens_per_s > 0.0)
        record_cost(study, system, seconds, record);
    record_goodput(study, system, seconds, record);
    double low = study->band_low[record->stack][record->system];
    double high = study->band_high[record->stack][record->system];
    record->time_low_s = record->result.time_per_iteration_s * low;
    record->time_high_s = record->result.time_per_iteration_s * high;
    record->days_low = record->time_to_train_days * low;
    record->days_high = record->time_to_train_days * high;
    record->cost_low = record->cost_to_train * low;
    record->cost_high = record->cost_to_train * high;
}

/* The pool evaluator's memo (pool.h), kept per thread and cleared when the study changes: the
 * addresses it is keyed by are the study's models and systems, fixed once its job is loaded. */
static _Thread_local struct {
    const cdse_model *models;
    const cdse_system *systems;
    uint64_t fingerprint;
    cdse_pool_memo memo;
} pool_memo;

/* Out of line: cdse_record_eval stays as lean for the homogeneous systems as before the memo. */
__attribute__((noinline)) static void record_eval_pool(const cdse_study *study,
                                                       const cdse_model *model,
                                                       const cdse_system *system,
                                                       cdse_record *record)
{
    if (pool_memo.models != study->model || pool_memo.systems != study->system ||
        pool_memo.fingerprint != study->fingerprint) {
        memset(&pool_memo.memo, 0, sizeof pool_memo.memo);
        pool_memo.models = study->model;
        pool_memo.systems = study->system;
        pool_memo.fingerprint = study->fingerprint;
    }
    const cdse_system *types[CDSE_MAX_POOL_TYPES];
    pool_types(study, system, types);
    cdse_evaluate_pool_memo(model, types, system, &record->strategy, &pool_memo.memo,
                            &record->result);
}

void cdse_record_eval(const cdse_study *study, uint64_t index, cdse_record *record)
{
    bool repeat;
    const cdse_system *system = record_setup(study, index, record, &repeat);
    const cdse_model *model = &study->model[record->model];
    if (repeat) {
        memset(&record->result, 0, sizeof record->result);
        record->result.status = CDSE_ST_OTHER_SYSTEM_AXIS;
    } else if (system->pool.n_types == 0) {
        cdse_evaluate(model, system, &record->strategy, &record->result);
    } else {
        record_eval_pool(study, model, system, record);
    }
    record_finish(study, system, record);
}

void cdse_record_config(const cdse_study *study, uint64_t index, cdse_record *record)
{
    bool repeat;
    record_setup(study, index, record, &repeat);
    memset(&record->result, 0, sizeof record->result);
}

double cdse_record_bound(const cdse_study *study, uint64_t index, int flags, cdse_record *record)
{
    bool repeat;
    const cdse_system *system = record_setup(study, index, record, &repeat);
    const cdse_model *model = &study->model[record->model];
    double floor = repeat ? HUGE_VAL : cdse_time_floor(model, system, &record->strategy, flags);
    memset(&record->result, 0, sizeof record->result);
    if (isinf(floor))
        return HUGE_VAL; /* none of them is feasible (a repeat is not) */
    if (!(floor > 0.0))
        return -HUGE_VAL; /* no bound */
    /* The result's time and throughput as cdse_evaluate computes them from the time. */
    record->result.status = CDSE_ST_OK;
    record->result.time_per_iteration_s = floor;
    double tokens = (double)record->strategy.global_batch * model->seq_len;
    record->result.tokens_per_s = tokens / floor;
    record_finish(study, system, record);
    return cdse_record_cost(record, study->metric);
}

double cdse_record_cost(const cdse_record *record, int metric)
{
    if (record->result.status != CDSE_ST_OK)
        return HUGE_VAL;
    switch (metric) {
    case CDSE_METRIC_TIME_PER_ITERATION:
        return record->result.time_per_iteration_s;
    case CDSE_METRIC_TOKENS_PER_S:
        return -record->result.tokens_per_s;
    case CDSE_METRIC_TIME_TO_TRAIN:
        return record->time_to_train_days;
    case CDSE_METRIC_GPU_HOURS:
        return record->gpu_hours;
    case CDSE_METRIC_MFU:
        return -record->result.mfu;
    case CDSE_METRIC_COST_TO_TRAIN:
        return record->cost_to_train;
    case CDSE_METRIC_ENERGY_TO_TRAIN:
        return record->energy_to_train_mwh;
    case CDSE_METRIC_TOKENS_PER_KWH:
        return -record->tokens_per_kwh;
    case CDSE_METRIC_TIME_TO_TRAIN_EFFECTIVE:
        return record->time_to_train_effective_days;
    case CDSE_METRIC_INTERRUPTIONS_EXPECTED:
        return record->interruptions_expected;
    case CDSE_METRIC_CHECKPOINT_INTERVAL:
        return -record->checkpoint_interval_s;
    case CDSE_METRIC_GOODPUT:
        return -record->goodput;
    default:
        return HUGE_VAL;
    }
}

/* The band [better, worse] of cdse_record_cost(metric) of `r`. */
static bool metric_band(const cdse_record *r, int metric, double *better, double *worse)
{
    double t = r->result.time_per_iteration_s;
    if (!(t > 0.0) || !(r->time_low_s > 0.0))
        return false;
    double cost = cdse_record_cost(r, metric), low = r->time_low_s / t, high = r->time_high_s / t;
    if (cost >= 0.0) { /* grows with the time */
        *better = cost * low;
        *worse = cost * high;
    } else { /* minus a figure that grows with 1 / time */
        *better = cost / low;
        *worse = cost / high;
    }
    return true;
}

bool cdse_record_bands_overlap(const cdse_record *a, const cdse_record *b, int metric)
{
    double a_better, a_worse, b_better, b_worse;
    if (!metric_band(a, metric, &a_better, &a_worse) ||
        !metric_band(b, metric, &b_better, &b_worse))
        return false;
    return a_better <= b_worse && b_better <= a_worse;
}
