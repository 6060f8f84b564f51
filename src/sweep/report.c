/* Records, the column table (the contract shared by CSV, the human table and the HDF5 store),
 * and text output. */
#include "clusterdse/sweep/report.h"

#include "clusterdse/sweep/numfmt.h"

#include <math.h>

#include "clusterdse/model/bound.h"
#include "clusterdse/model/cost.h"
#include "clusterdse/model/goodput.h"
#include "clusterdse/model/pool.h"
#include <stddef.h>
#include <string.h>

/* Seconds per day and per hour, for time_to_train_days and gpu_hours. */
#define SECONDS_PER_DAY  86400.0
#define SECONDS_PER_HOUR 3600.0
/* 1 kWh = 3.6e6 J, 1 MWh = 3.6e9 J (amortization: model/cost.c). */
#define JOULES_PER_KWH 3.6e6
#define JOULES_PER_MWH 3.6e9

/* A pool's GPU types, in its members' order. */
static void pool_types(const cdse_job *job, const cdse_system *pool,
                       const cdse_system *types[CDSE_MAX_POOL_TYPES])
{
    for (int t = 0; t < pool->pool.n_types; t++)
        types[t] = &job->system[pool->pool.member[t]];
}

/* The bill of `gpus` GPUs of `system` for `seconds` (model/cost.h): cdse_system_bill, or for a
 * heterogeneous pool cdse_pool_bill, each type's bill for the GPUs the configuration takes of it
 * with its own prices and power. False when a pool's GPUs do not split into whole ones. */
static bool record_bill(const cdse_job *job, const cdse_system *system, int gpus, double seconds,
                        double electricity_price, cdse_bill *bill)
{
    if (system->pool.n_types == 0) {
        cdse_system_bill(system, gpus, seconds, electricity_price, bill);
        return true;
    }
    const cdse_system *types[CDSE_MAX_POOL_TYPES];
    pool_types(job, system, types);
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
static void record_cost(const cdse_job *job, const cdse_system *system, double seconds,
                        cdse_record *record)
{
    cdse_bill bill;
    if (!record_bill(job, system, record->strategy.gpus, seconds, job->objective.electricity_price,
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
    const cdse_job *job;
    uint64_t fingerprint;
    int system;
    int digit[CDSE_MAX_HW_AXES];
    cdse_system applied;
    double hw[CDSE_HW_COUNT];
} hw_cache;

static _Thread_local hw_cache cache;

static bool hw_cache_hit(const cdse_job *job, int system, const int *digit)
{
    if (cache.job != job || cache.fingerprint != job->fingerprint || cache.system != system)
        return false;
    for (int h = 0; h < job->n_hw_axes; h++)
        if (cache.digit[h] != digit[h])
            return false;
    return true;
}

static const cdse_system *hw_system(const cdse_job *job, int system, const int *digit)
{
    if (!hw_cache_hit(job, system, digit)) {
        cache.applied = job->system[system];
        for (int h = 0; h < job->n_hw_axes; h++) {
            const cdse_hw_axis *axis = &job->hw_axis[h];
            if (axis->system == system)
                cdse_hw_set(&cache.applied, axis->key, axis->value[digit[h]]);
            cache.digit[h] = digit[h];
        }
        cdse_hw_values(&cache.applied, cache.hw);
        cache.job = job;
        cache.fingerprint = job->fingerprint;
        cache.system = system;
    }
    return &cache.applied;
}

void cdse_record_system(const cdse_job *job, uint64_t index, cdse_system *system)
{
    int digit[CDSE_AXIS_COUNT];
    cdse_space_decode(&job->space, index, digit);
    int s = (int)job->space.value[CDSE_AXIS_SYSTEM][digit[CDSE_AXIS_SYSTEM]];
    *system = job->system[s];
    for (int h = 0; h < job->n_hw_axes; h++)
        if (job->hw_axis[h].system == s)
            cdse_hw_set(system, job->hw_axis[h].key,
                        job->hw_axis[h].value[digit[CDSE_AXIS_HW0 + h]]);
}

/* Whether a hardware axis of another system entry than `system` is at a value other than its
 * first: the configuration repeats the one at its first value (the axis does not apply to this
 * system), so only that one is evaluated. */
static bool other_system_axis(const cdse_job *job, int system, const int *digit)
{
    for (int h = 0; h < job->n_hw_axes; h++)
        if (job->hw_axis[h].system != system && digit[h] != 0)
            return true;
    return false;
}

/* Fills the record's configuration, its stack and its hardware columns; returns the system it
 * runs on (the job's, with its hardware-axis values applied). *repeat: the configuration
 * repeats another (other_system_axis). */
static const cdse_system *record_setup(const cdse_job *job, uint64_t index, cdse_record *record,
                                       bool *repeat)
{
    int digit[CDSE_AXIS_COUNT];
    cdse_space_decode(&job->space, index, digit);
    record->index = index;
    record->model = (int32_t)job->space.value[CDSE_AXIS_MODEL][digit[CDSE_AXIS_MODEL]];
    record->system = (int32_t)job->space.value[CDSE_AXIS_SYSTEM][digit[CDSE_AXIS_SYSTEM]];
    cdse_space_strategy(&job->space, digit, &record->strategy);
    /* The stack that runs it: the axis's value, else the system's, else the built-in (stored as
     * n_stacks, so that every row names its stack). */
    int stack = (int)job->space.value[CDSE_AXIS_STACK][digit[CDSE_AXIS_STACK]];
    if (stack < 0)
        stack = job->system_stack[record->system];
    record->stack = stack >= 0 ? stack : job->n_stacks;
    record->strategy.stack = stack >= 0 ? &job->stack[stack] : NULL;
    if (job->n_system_gpus > 0)
        record->strategy.gpus = job->system_gpus[record->system][digit[CDSE_AXIS_GPUS]];
    const cdse_system *system = hw_system(job, record->system, digit + CDSE_AXIS_HW0);
    if (job->n_hw_axes == 0)
        system = &job->system[record->system];
    memcpy(record->hw, cache.hw, sizeof record->hw);
    *repeat = other_system_axis(job, record->system, digit + CDSE_AXIS_HW0);
    return system;
}

/* --- goodput (issue 29) --- The record's failure, checkpoint and effective-time columns
 * (model/goodput.h) from its iteration time; `seconds` is the failure-free time to train (0
 * without a budget). Rows that are not ok and pools keep zeros. */
static _Thread_local struct {
    const cdse_job *job;
    uint64_t fingerprint;
    int model;
    cdse_param_counts counts;
} param_cache = {.model = -1};

/* The parameter counts of the record's model, kept per thread (a model's counts are fixed once
 * its job is loaded; consecutive indices share the model). */
static const cdse_param_counts *record_params(const cdse_job *job, int model)
{
    if (param_cache.job != job || param_cache.fingerprint != job->fingerprint ||
        param_cache.model != model) {
        param_cache.counts = cdse_model_param_counts(&job->model[model]);
        param_cache.job = job;
        param_cache.fingerprint = job->fingerprint;
        param_cache.model = model;
    }
    return &param_cache.counts;
}

static void record_goodput(const cdse_job *job, const cdse_system *system, double seconds,
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
    cdse_goodput_eval(record_params(job, record->model), system, &record->strategy,
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
static void record_finish(const cdse_job *job, const cdse_system *system, cdse_record *record)
{
    record->strategy.dp = record->result.dp;
    record->strategy.grad_accum = record->result.grad_accum;
    record->time_to_train_days = 0.0;
    record->gpu_hours = 0.0;
    record->cost_to_train = 0.0;
    record->energy_to_train_mwh = 0.0;
    record->tokens_per_kwh = 0.0;
    /* The headroom (objective.memory_headroom) on the HBM of the configuration's system, hardware
     * axes applied; a pool's GPU types each have their own HBM, which the pool's evaluation
     * weighs: not checked there. */
    if (record->result.status == CDSE_ST_OK && system->pool.n_types == 0 &&
        record->result.mem_reserved_gib > system->hbm_gib * (1.0 - job->objective.memory_headroom))
        record->result.status = CDSE_ST_OVER_HEADROOM;
    /* The budget (objective.budget) on the purchase price of the configuration's GPUs, hardware
     * axes applied (a design's gpu_price). */
    cdse_bill price;
    if (record->result.status == CDSE_ST_OK && job->objective.budget > 0.0 &&
        record_bill(job, system, record->strategy.gpus, 0.0, 0.0, &price) &&
        !cdse_within_budget(price.purchase_price, job->objective.budget))
        record->result.status = CDSE_ST_OVER_BUDGET;
    double seconds = 0.0;
    bool trains = record->result.status == CDSE_ST_OK && record->result.tokens_per_s > 0.0;
    if (job->objective.tokens > 0.0 && trains) {
        seconds = job->objective.tokens / record->result.tokens_per_s;
        record->time_to_train_days = seconds / SECONDS_PER_DAY;
        record->gpu_hours = seconds * record->strategy.gpus / SECONDS_PER_HOUR;
    }
    if (record->result.tokens_per_s > 0.0)
        record_cost(job, system, seconds, record);
    record_goodput(job, system, seconds, record);
    double low = job->band_low[record->stack][record->system];
    double high = job->band_high[record->stack][record->system];
    record->time_low_s = record->result.time_per_iteration_s * low;
    record->time_high_s = record->result.time_per_iteration_s * high;
    record->days_low = record->time_to_train_days * low;
    record->days_high = record->time_to_train_days * high;
    record->cost_low = record->cost_to_train * low;
    record->cost_high = record->cost_to_train * high;
}

void cdse_record_eval(const cdse_job *job, uint64_t index, cdse_record *record)
{
    bool repeat;
    const cdse_system *system = record_setup(job, index, record, &repeat);
    const cdse_model *model = &job->model[record->model];
    if (repeat) {
        memset(&record->result, 0, sizeof record->result);
        record->result.status = CDSE_ST_OTHER_SYSTEM_AXIS;
    } else if (system->pool.n_types == 0) {
        cdse_evaluate(model, system, &record->strategy, &record->result);
    } else {
        const cdse_system *types[CDSE_MAX_POOL_TYPES];
        pool_types(job, system, types);
        cdse_evaluate_pool_as(model, types, system, &record->strategy, &record->result);
    }
    record_finish(job, system, record);
}

void cdse_record_config(const cdse_job *job, uint64_t index, cdse_record *record)
{
    bool repeat;
    record_setup(job, index, record, &repeat);
    memset(&record->result, 0, sizeof record->result);
}

double cdse_record_bound(const cdse_job *job, uint64_t index, int flags, cdse_record *record)
{
    bool repeat;
    const cdse_system *system = record_setup(job, index, record, &repeat);
    const cdse_model *model = &job->model[record->model];
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
    record_finish(job, system, record);
    return cdse_record_cost(record, job->objective.metric);
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

const char *cdse_offload_name(int offload)
{
    return cdse_names_name(&cdse_offload_enum, offload);
}

#define STRATEGY(field) offsetof(cdse_record, strategy.field)
#define RESULT(field)   offsetof(cdse_record, result.field)
#define F64(key, field, unit, text)                                                                \
    {                                                                                              \
        key, CDSE_COL_F64, RESULT(field), unit, text, NULL                                         \
    }

#define GOODPUT(key, field, unit, text)                                                            \
    {                                                                                              \
        key, CDSE_COL_F64, offsetof(cdse_record, field), unit, text, NULL                          \
    }

#define HW(key, hw_key, unit, text)                                                                \
    {                                                                                              \
        key, CDSE_COL_F64, offsetof(cdse_record, hw[hw_key]), unit, text, NULL                     \
    }

/* The column of a strategy axis (axes.h) at its position in the table. */
#define AXIS_COL_INT  CDSE_COL_I32
#define AXIS_COL_GPUS CDSE_COL_I32
#define AXIS_COL_BOOL CDSE_COL_BOOL
#define AXIS_COL_ENUM CDSE_COL_ENUM
#define AXIS_COL_MASK CDSE_COL_ENUM
#define AXIS_COLUMN_(ID, POS, KIND, KEY, FIELD, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, NAMES,     \
                     COLUMN, UNIT, LABEL, PRUNE, HELP, COLUMN_HELP)                                \
    [COLUMN] = {KEY, AXIS_COL_##KIND, STRATEGY(FIELD), UNIT, COLUMN_HELP, NAMES},

const cdse_column cdse_columns[] = {
    {"index", CDSE_COL_U64, offsetof(cdse_record, index), "", "position in the job's space", NULL},
    {"model", CDSE_COL_MODEL, offsetof(cdse_record, model), "", "model name", NULL},
    {"system", CDSE_COL_SYSTEM, offsetof(cdse_record, system), "", "system name", NULL},
    [6] = {"dp", CDSE_COL_I32, RESULT(dp), "", "data-parallel degree, derived (0 if not divisible)",
           NULL},
    [12] = {"grad_accum", CDSE_COL_I32, RESULT(grad_accum), "",
            "micro-batches per pipeline per iteration, derived", NULL},
    [20] = {"status", CDSE_COL_ENUM, RESULT(status), "",
            "ok, or the first reason the configuration cannot run", &cdse_status_enum},
    F64("time_per_iteration_s", time_per_iteration_s, "s", "time of one training iteration"),
    F64("tokens_per_s", tokens_per_s, "tokens/s", "training throughput of the whole job"),
    F64("model_tflops_per_gpu", model_tflops_per_gpu, "TFLOP/s",
        "model FLOPs (no recomputation) per GPU per second"),
    F64("hardware_tflops_per_gpu", hardware_tflops_per_gpu, "TFLOP/s",
        "executed FLOPs (with recomputation) per GPU per second"),
    F64("mfu", mfu, "fraction", "model FLOPs utilization of the precision's peak"),
    F64("hfu", hfu, "fraction", "hardware FLOPs utilization of the precision's peak"),
    F64("mem_total_gib", mem_total_gib, "GiB",
        "memory per GPU in HBM (the pipeline stage that peaks)"),
    F64("mem_weights_gib", mem_weights_gib, "GiB", "weights"),
    F64("mem_gradients_gib", mem_gradients_gib, "GiB", "gradients"),
    F64("mem_optimizer_gib", mem_optimizer_gib, "GiB", "optimizer state (fp32 master and moments)"),
    F64("mem_activations_gib", mem_activations_gib, "GiB",
        "activations of the in-flight micro-batches"),
    F64("mem_other_gib", mem_other_gib, "GiB", "reserved by the system (driver, CUDA context)"),
    F64("mem_offloaded_gib", mem_offloaded_gib, "GiB", "placed on the second memory tier"),
    F64("t_forward_s", t_forward_s, "s", "forward compute per iteration"),
    F64("t_backward_s", t_backward_s, "s", "backward compute per iteration"),
    F64("t_recompute_s", t_recompute_s, "s", "recomputed forward work per iteration"),
    F64("t_tp_comm_s", t_tp_comm_s, "s", "exposed tensor-parallel communication"),
    F64("t_pp_comm_s", t_pp_comm_s, "s", "exposed pipeline send/recv"),
    F64("t_dp_comm_s", t_dp_comm_s, "s", "exposed data-parallel gradient communication"),
    F64("t_ep_comm_s", t_ep_comm_s, "s", "exposed expert-parallel alltoall"),
    F64("t_cp_comm_s", t_cp_comm_s, "s", "exposed context-parallel exchange"),
    F64("t_bubble_s", t_bubble_s, "s", "pipeline bubble"),
    F64("t_optimizer_s", t_optimizer_s, "s", "optimizer step"),
    F64("t_offload_s", t_offload_s, "s", "exposed transfers to and from the second tier"),
    F64("t_imbalance_s", t_imbalance_s, "s",
        "waiting for the slowest data-parallel rank (seq_len_histogram)"),
    {"time_to_train_days", CDSE_COL_F64, offsetof(cdse_record, time_to_train_days), "days",
     "objective.tokens / tokens_per_s (0 without a token budget or when infeasible)", NULL},
    {"gpu_hours", CDSE_COL_F64, offsetof(cdse_record, gpu_hours), "GPU-hours",
     "gpus x time to train objective.tokens (0 likewise)", NULL},
    F64("seq_imbalance", seq_imbalance, "ratio",
        "slowest data-parallel rank over the mean (1 without seq_len_histogram)"),
    {"pool_split", CDSE_COL_ENUM, RESULT(pool_split), "",
     "how a heterogeneous pool was used: none (not a pool), dp, pp", &cdse_pool_split_enum},
    F64("pool_share_0", pool_share[0], "fraction", "share of the work done by pool GPU type 0"),
    F64("pool_share_1", pool_share[1], "fraction", "share of the work done by pool GPU type 1"),
    F64("pool_share_2", pool_share[2], "fraction", "share of the work done by pool GPU type 2"),
    F64("pool_share_3", pool_share[3], "fraction", "share of the work done by pool GPU type 3"),
    [59] = {"stack", CDSE_COL_STACK, offsetof(cdse_record, stack), "",
            "software stack that runs it (calibration/stacks; \"" CDSE_STACK_DEFAULT_LABEL
            "\": the built-in, current Megatron-Core)",
            NULL},
    F64("mem_fp8_cache_gib", mem_fp8_cache_gib, "GiB",
        "FP8 copies and transposes of the weights (Transformer Engine, FP8 only; no transposes "
        "on systems with fp8_non_tn_gemm)"),
    F64("mem_runtime_gib", mem_runtime_gib, "GiB",
        "the stack's NCCL/cuBLAS/TE workspaces and caching-allocator reserve, and the layer "
        "recomputation rebuilds during its backward pass"),
    F64("t_fixed_s", t_fixed_s, "s",
        "host costs not hidden by the GPU: the GPU's wait for the kernel launches of small layers "
        "(recomputed kernels included), per-iteration work"),
    /* The system's hardware values with the job's hardware axes applied (cdse_hw_key order;
     * the names are cdse_hw_column's, checked by test_report). */
    [65] = HW("peak_bf16_tflops", CDSE_HW_PEAK_BF16, "TFLOP/s", "dense bf16 peak per GPU"),
    HW("peak_fp8_tflops", CDSE_HW_PEAK_FP8, "TFLOP/s", "dense fp8 peak per GPU (0 = none)"),
    HW("hbm_gib", CDSE_HW_HBM_GIB, "GiB", "HBM capacity per GPU"),
    HW("hbm_bandwidth_gbs", CDSE_HW_HBM_BANDWIDTH, "GB/s", "HBM bandwidth per GPU"),
    HW("gpus_per_node", CDSE_HW_GPUS_PER_NODE, "GPUs", "GPUs per node"),
    HW("net0_bandwidth_gbs", CDSE_HW_NET0_BANDWIDTH, "GB/s",
       "network level 0 bandwidth per GPU, one direction"),
    HW("net0_latency_us", CDSE_HW_NET0_LATENCY, "us", "network level 0 latency per step"),
    HW("net0_size", CDSE_HW_NET0_SIZE, "GPUs", "GPUs in one level-0 domain (scale-up domain)"),
    HW("net1_bandwidth_gbs", CDSE_HW_NET1_BANDWIDTH, "GB/s",
       "network level 1 bandwidth per GPU (0 = no level 1)"),
    HW("net1_latency_us", CDSE_HW_NET1_LATENCY, "us", "network level 1 latency per step"),
    HW("net1_size", CDSE_HW_NET1_SIZE, "GPUs", "GPUs in one level-1 domain (0 = the whole system)"),
    HW("tier_capacity_gib", CDSE_HW_TIER_CAPACITY, "GiB",
       "second memory tier capacity per attachment domain (0 = none)"),
    HW("tier_bandwidth_gbs", CDSE_HW_TIER_BANDWIDTH, "GB/s",
       "second memory tier bandwidth per attachment domain (0 = none)"),
    HW("gpu_price", CDSE_HW_GPU_PRICE, "currency", "purchase price per GPU with its node share"),
    HW("rental_price", CDSE_HW_RENTAL_PRICE, "currency/GPU-h",
       "rental price per GPU-hour (0 = bought)"),
    HW("gpu_power_w", CDSE_HW_GPU_POWER, "W", "average draw per GPU while training"),
    {"cost_to_train", CDSE_COL_F64, offsetof(cdse_record, cost_to_train), "currency",
     "amortized purchase (or rental) plus electricity for objective.tokens (0 without a budget or "
     "prices, or when infeasible)",
     NULL},
    {"energy_to_train_mwh", CDSE_COL_F64, offsetof(cdse_record, energy_to_train_mwh), "MWh",
     "facility energy (PUE included) for objective.tokens (0 without a budget or power figures, "
     "or when infeasible)",
     NULL},
    {"tokens_per_kwh", CDSE_COL_F64, offsetof(cdse_record, tokens_per_kwh), "tokens/kWh",
     "training tokens per kWh of facility energy (0 without power figures)", NULL},
    /* --- goodput (issue 29; docs/job-file.md, Failures and checkpoints) --- */
    HW("storage_write_gbs", CDSE_HW_STORAGE_WRITE, "GB/s",
       "aggregate checkpoint write bandwidth of the file system (0 = unlimited)"),
    HW("gpu_failures", CDSE_HW_GPU_FAILURES, "per 1000 GPU-days",
       "unexpected interruptions attributed to a GPU"),
    HW("node_failures", CDSE_HW_NODE_FAILURES, "per 1000 node-days",
       "unexpected interruptions attributed to a node (host, software)"),
    GOODPUT("checkpoint_gib", checkpoint_gib, "GiB",
            "checkpoint shard of the GPU that writes the most (weights, fp32 master, Adam moments "
            "as its TP/PP/DP/ZeRO sharding splits them; 0 when the system never fails)"),
    GOODPUT("checkpoint_stall_s", checkpoint_stall_s, "s",
            "training paused per checkpoint: the write (sync) or the copy to host memory "
            "(async, memory)"),
    GOODPUT("mttf_hours", mttf_hours, "hours",
            "mean time to an unexpected failure of the job (0 = no failure rates)"),
    GOODPUT("checkpoint_interval_s", checkpoint_interval_s, "s",
            "compute between checkpoints: Daly's optimum, at least one iteration and the "
            "previous save's durability (0 = none needed)"),
    GOODPUT("lost_work_s", lost_work_s, "s", "expected work redone per failure"),
    GOODPUT("goodput", goodput, "fraction",
            "effective training time ratio: failure-free time over wall time (1 = never "
            "interrupted; 0 for rows not ok)"),
    GOODPUT("interruptions_expected", interruptions_expected, "",
            "unexpected and planned interruptions over time_to_train_effective_days (0 without "
            "a token budget)"),
    GOODPUT("time_to_train_effective_days", time_to_train_effective_days, "days",
            "time_to_train_days with failures, restarts and checkpoints (time_to_train_days / "
            "goodput)"),
    {"checkpoint_flag", CDSE_COL_I32, offsetof(cdse_record, checkpoint_flag), "",
     "1: the checkpoint interval is longer than the mean time to failure; 0: not", NULL},
    {"time_low_s", CDSE_COL_F64, offsetof(cdse_record, time_low_s), "s",
     "low end of the error band of time_per_iteration_s (calibration/bands.cfg, docs/eval.md)",
     NULL},
    {"time_high_s", CDSE_COL_F64, offsetof(cdse_record, time_high_s), "s",
     "high end of the error band of time_per_iteration_s", NULL},
    {"time_to_train_days_low", CDSE_COL_F64, offsetof(cdse_record, days_low), "days",
     "time_to_train_days at the low end of the band (0 without a token budget)", NULL},
    {"time_to_train_days_high", CDSE_COL_F64, offsetof(cdse_record, days_high), "days",
     "time_to_train_days at the high end of the band (0 without a token budget)", NULL},
    {"cost_to_train_low", CDSE_COL_F64, offsetof(cdse_record, cost_low), "currency",
     "cost_to_train at the low end of the band (0 without prices)", NULL},
    {"cost_to_train_high", CDSE_COL_F64, offsetof(cdse_record, cost_high), "currency",
     "cost_to_train at the high end of the band (0 without prices)", NULL},
    F64("mem_reserved_gib", mem_reserved_gib, "GiB",
        "memory per GPU the process reserves: mem_total_gib with the caching allocator's cached "
        "but unallocated blocks (x 1.13 on tensors, docs/eval.md)"),
    CDSE_AXES(AXIS_COLUMN_)};
const int cdse_column_count = (int)(sizeof cdse_columns / sizeof cdse_columns[0]);

const cdse_column *cdse_column_find(const char *name)
{
    for (int i = 0; i < cdse_column_count; i++)
        if (strcmp(cdse_columns[i].name, name) == 0)
            return &cdse_columns[i];
    return NULL;
}

static const void *field_of(const cdse_column *column, const cdse_record *record)
{
    return (const char *)record + column->offset;
}

double cdse_column_value(const cdse_column *column, const cdse_record *record)
{
    const void *field = field_of(column, record);
    switch (column->kind) {
    case CDSE_COL_U64:
        return (double)*(const uint64_t *)field;
    case CDSE_COL_BOOL:
        return *(const bool *)field ? 1.0 : 0.0;
    case CDSE_COL_F64:
        return *(const double *)field;
    case CDSE_COL_MODEL:
    case CDSE_COL_SYSTEM:
    case CDSE_COL_STACK:
        return *(const int32_t *)field;
    default: /* CDSE_COL_I32 and the enums, stored as int */
        return *(const int *)field;
    }
}

/* Numeric columns as "%llu", "%d", 0/1 and "%.6g" would print them (numfmt.h: the same text,
 * faster). buf holds CDSE_NUMFMT_MAX bytes. Returns the length. */
static size_t format_number(int kind, const void *field, char *buf)
{
    switch (kind) {
    case CDSE_COL_U64:
        return cdse_fmt_u64(buf, *(const uint64_t *)field);
    case CDSE_COL_I32:
        return cdse_fmt_i64(buf, *(const int *)field);
    case CDSE_COL_BOOL:
        return cdse_fmt_u64(buf, *(const bool *)field ? 1 : 0);
    default:
        return cdse_fmt_g6(buf, *(const double *)field);
    }
}

/* The text of a named column (model, system, the enums); NULL for a numeric one. */
static const char *column_name_text(const cdse_column *column, const void *field,
                                    const cdse_job *job)
{
    int code = *(const int *)field; /* int32_t for model and system: the same width */
    switch (column->kind) {
    case CDSE_COL_MODEL:
        return job->model[code].name;
    case CDSE_COL_SYSTEM:
        return job->system[code].name;
    case CDSE_COL_ENUM:
        return cdse_names_name(column->names, code);
    case CDSE_COL_STACK:
        return code >= 0 && code < job->n_stacks ? job->stack[code].name : CDSE_STACK_DEFAULT_LABEL;
    default:
        return NULL;
    }
}

static bool column_is_number(const cdse_column *column)
{
    return column->kind == CDSE_COL_U64 || column->kind == CDSE_COL_I32 ||
           column->kind == CDSE_COL_BOOL || column->kind == CDSE_COL_F64;
}

void cdse_column_format(const cdse_column *column, const cdse_record *record, const cdse_job *job,
                        char *buf, size_t size)
{
    const void *field = field_of(column, record);
    if (column_is_number(column) && size >= CDSE_NUMFMT_MAX) {
        format_number(column->kind, field, buf);
        return;
    }
    const char *text = column_is_number(column) ? NULL : column_name_text(column, field, job);
    snprintf(buf, size, "%s", text != NULL ? text : "?");
}

/* RFC 4180: a field with a comma, a double quote or a line break is quoted, quotes doubled. */
static void csv_field(FILE *out, const char *text)
{
    if (strpbrk(text, ",\"\r\n") == NULL) {
        fputs(text, out);
        return;
    }
    fputc('"', out);
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

void cdse_csv_header(FILE *out)
{
    for (int i = 0; i < cdse_column_count; i++) {
        if (i > 0)
            fputc(',', out);
        csv_field(out, cdse_columns[i].name);
    }
    fputc('\n', out);
}

/* strlen(text), and in *plain whether it has none of the characters that make csv_field quote
 * it: one pass over a name instead of strlen and strpbrk. */
static size_t text_length(const char *text, bool *plain)
{
    size_t n = 0;
    bool special = false;
    for (; text[n] != '\0'; n++)
        special |= text[n] == ',' || text[n] == '"' || text[n] == '\r' || text[n] == '\n';
    *plain = !special;
    return n;
}

/* Appends `text` (n bytes) to the line at *used as a CSV field, quoted as csv_field does unless
 * it is `plain` (no comma, quote or line break: text_length); false when the line is full. */
static bool line_field(char *line, size_t cap, size_t *used, const char *text, size_t n, bool plain)
{
    if (!plain) {
        if (*used + 2 * n + 4 > cap)
            return false;
        line[(*used)++] = '"';
        for (const char *p = text; *p != '\0'; p++) {
            if (*p == '"')
                line[(*used)++] = '"';
            line[(*used)++] = *p;
        }
        line[(*used)++] = '"';
        return true;
    }
    if (*used + n + 2 > cap)
        return false;
    memcpy(line + *used, text, n);
    *used += n;
    return true;
}

/* The rows formatted by this thread, in two alternating line buffers, and where the text of each
 * float column is in the last one: consecutive rows of a store share most of them (the hardware
 * values, the memory, the zeros of what a configuration does not use), so their text is copied
 * from the previous row instead of formatted again. (Copied from there, and not from a copy
 * made when it was formatted, whose wide load would wait for the formatter's byte stores.) */
#define CSV_CACHE_COLUMNS 128
#define CSV_LINE_MAX      8192
/* The lines are CSV_LINE_MAX + CSV_LINE_SKEW bytes apart, half a 4 KiB page off a multiple of it:
 * a column's text is read from the last line at about the offset where it is written in this
 * one, and a load 4 KiB apart from a store in flight waits for it ("4K aliasing": Intel 64 and
 * IA-32 Architectures Optimization Reference Manual, Sec. 3.6.8.1; AMD's cores likewise compare
 * the low 12 bits). */
#define CSV_LINE_SKEW 2048
typedef struct csv_cache {
    char line[2][CSV_LINE_MAX + CSV_LINE_SKEW];
    int current; /* the line being written; the other is the last row */
    uint64_t bits[CSV_CACHE_COLUMNS];
    unsigned short at[CSV_CACHE_COLUMNS]; /* offset of the text in the last row's line */
    unsigned char len[CSV_CACHE_COLUMNS];
    bool valid[CSV_CACHE_COLUMNS];
} csv_cache;

static _Thread_local csv_cache csv_last;

/* A float column's text at `line + used` (CDSE_NUMFMT_MAX bytes free), `last` the last row's
 * line; returns its length. */
static size_t float_text(int column, double value, char *line, size_t used, const char *last)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    if (column >= CSV_CACHE_COLUMNS)
        return cdse_fmt_g6(line + used, value);
    size_t n;
    if (csv_last.valid[column] && csv_last.bits[column] == bits) {
        /* CDSE_NUMFMT_MAX bytes from inside the last line (at + CDSE_NUMFMT_MAX is within it:
         * the text was written where that much room was left) */
        memcpy(line + used, last + csv_last.at[column], CDSE_NUMFMT_MAX);
        n = csv_last.len[column];
    } else {
        n = cdse_fmt_g6(line + used, value);
        csv_last.len[column] = (unsigned char)n;
        csv_last.bits[column] = bits;
        csv_last.valid[column] = true;
    }
    csv_last.at[column] = (unsigned short)used;
    return n;
}

/* One row is put together in memory and written with one call: this is the path of a whole
 * store's export, at millions of rows per second. Numbers are formatted in place (they never
 * need quotes). */
void cdse_csv_row(FILE *out, const cdse_record *record, const cdse_job *job)
{
    char *line = csv_last.line[csv_last.current], buf[128];
    const char *last = csv_last.line[!csv_last.current];
    size_t used = 0;
    bool spilled = false;
    for (int i = 0; i < cdse_column_count; i++) {
        const cdse_column *c = &cdse_columns[i];
        if (i > 0)
            line[used++] = ',';
        if (column_is_number(c) && used <= CSV_LINE_MAX - CDSE_NUMFMT_MAX - 2) {
            const void *field = field_of(c, record);
            used += c->kind == CDSE_COL_F64
                        ? float_text(i, *(const double *)field, line, used, last)
                        : format_number(c->kind, field, line + used);
            continue;
        }
        if (i < CSV_CACHE_COLUMNS)
            csv_last.valid[i] = false; /* its text is not where `at` says */
        const char *text = buf;
        size_t n;
        bool plain = true; /* numbers never need quotes */
        if (column_is_number(c)) {
            n = format_number(c->kind, field_of(c, record), buf);
        } else {
            text = column_name_text(c, field_of(c, record), job);
            text = text != NULL ? text : "?";
            n = text_length(text, &plain);
        }
        if (!line_field(line, CSV_LINE_MAX, &used, text, n, plain)) {
            fwrite(line, 1, used, out); /* a row longer than the buffer: the slow way */
            used = 0;
            spilled = true; /* the line no longer holds the texts of the columns before */
            csv_field(out, text);
        }
    }
    line[used++] = '\n';
    fwrite(line, 1, used, out);
    if (spilled)
        memset(csv_last.valid, 0, sizeof csv_last.valid);
    csv_last.current = !csv_last.current;
}

void cdse_columns_print(FILE *out)
{
    fprintf(out, "# %-24s %-10s %s\n", "column", "unit", "meaning");
    for (int i = 0; i < cdse_column_count; i++)
        fprintf(out, "%-26s %-10s %s\n", cdse_columns[i].name,
                cdse_columns[i].unit[0] ? cdse_columns[i].unit : "-", cdse_columns[i].help);
}
