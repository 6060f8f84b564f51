/* Records, the column table (the contract shared by CSV, the human table and the HDF5 store),
 * and text output. */
#include "clusterdse/sweep/report.h"

#include "clusterdse/sweep/numfmt.h"

#include <math.h>

#include "clusterdse/model/pool.h"
#include <stddef.h>
#include <string.h>

/* Seconds per day and per hour, for time_to_train_days and gpu_hours. */
#define SECONDS_PER_DAY  86400.0
#define SECONDS_PER_HOUR 3600.0

void cdse_record_eval(const cdse_job *job, uint64_t index, cdse_record *record)
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
    const cdse_model *model = &job->model[record->model];
    const cdse_system *system = &job->system[record->system];
    if (system->pool.n_types == 0) {
        cdse_evaluate(model, system, &record->strategy, &record->result);
    } else {
        const cdse_system *types[CDSE_MAX_POOL_TYPES];
        for (int t = 0; t < system->pool.n_types; t++)
            types[t] = &job->system[system->pool.member[t]];
        cdse_evaluate_pool(model, types, system->pool.gpus, system->pool.n_types, &record->strategy,
                           &record->result);
    }
    record->strategy.dp = record->result.dp;
    record->strategy.grad_accum = record->result.grad_accum;
    record->time_to_train_days = 0.0;
    record->gpu_hours = 0.0;
    if (job->objective.tokens > 0.0 && record->result.tokens_per_s > 0.0) {
        double seconds = job->objective.tokens / record->result.tokens_per_s;
        record->time_to_train_days = seconds / SECONDS_PER_DAY;
        record->gpu_hours = seconds * record->strategy.gpus / SECONDS_PER_HOUR;
    }
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
    default:
        return HUGE_VAL;
    }
}

const char *cdse_offload_name(int offload)
{
    static const char *const names[8] = {
        "none",      "weights",           "activations",           "weights+activations",
        "optimizer", "weights+optimizer", "activations+optimizer", "weights+activations+optimizer"};
    if (offload < 0 || offload > 7)
        return "?";
    return names[offload];
}

#define STRATEGY(field) offsetof(cdse_record, strategy.field)
#define RESULT(field)   offsetof(cdse_record, result.field)
#define F64(key, field, unit, text)                                                                \
    {                                                                                              \
        key, CDSE_COL_F64, RESULT(field), unit, text                                               \
    }

const cdse_column cdse_columns[] = {
    {"index", CDSE_COL_U64, offsetof(cdse_record, index), "", "position in the job's space"},
    {"model", CDSE_COL_MODEL, offsetof(cdse_record, model), "", "model name"},
    {"system", CDSE_COL_SYSTEM, offsetof(cdse_record, system), "", "system name"},
    {"gpus", CDSE_COL_I32, STRATEGY(gpus), "GPUs", "GPUs in the job"},
    {"tp", CDSE_COL_I32, STRATEGY(tp), "", "tensor-parallel degree"},
    {"pp", CDSE_COL_I32, STRATEGY(pp), "", "pipeline-parallel stages"},
    {"dp", CDSE_COL_I32, RESULT(dp), "", "data-parallel degree, derived (0 if not divisible)"},
    {"cp", CDSE_COL_I32, STRATEGY(cp), "", "context-parallel degree"},
    {"ep", CDSE_COL_I32, STRATEGY(ep), "", "expert-parallel degree"},
    {"vpp", CDSE_COL_I32, STRATEGY(vpp), "", "virtual pipeline stages per GPU"},
    {"microbatch", CDSE_COL_I32, STRATEGY(microbatch), "sequences", "micro-batch size"},
    {"global_batch", CDSE_COL_I32, STRATEGY(global_batch), "sequences", "global batch size"},
    {"grad_accum", CDSE_COL_I32, RESULT(grad_accum), "",
     "micro-batches per pipeline per iteration, derived"},
    {"recompute", CDSE_COL_RECOMPUTE, STRATEGY(recompute), "",
     "activation recomputation: none, selective, full"},
    {"sequence_parallel", CDSE_COL_BOOL, STRATEGY(sequence_parallel), "",
     "sequence parallelism (0/1)"},
    {"zero", CDSE_COL_I32, STRATEGY(zero), "", "ZeRO stage (1 = distributed optimizer)"},
    {"precision", CDSE_COL_PRECISION, STRATEGY(precision), "", "compute precision"},
    {"flash_attention", CDSE_COL_BOOL, STRATEGY(flash_attention), "",
     "fused (flash) attention (0/1)"},
    {"offload", CDSE_COL_OFFLOAD, STRATEGY(offload), "",
     "state offloaded to the second memory tier"},
    {"tp_comm_overlap", CDSE_COL_BOOL, STRATEGY(tp_comm_overlap), "",
     "tensor-parallel communication overlapped with GEMMs (0/1)"},
    {"status", CDSE_COL_STATUS, RESULT(status), "",
     "ok, or the first reason the configuration cannot run"},
    F64("time_per_iteration_s", time_per_iteration_s, "s", "time of one training iteration"),
    F64("tokens_per_s", tokens_per_s, "tokens/s", "training throughput of the whole job"),
    F64("model_tflops_per_gpu", model_tflops_per_gpu, "TFLOP/s",
        "model FLOPs (no recomputation) per GPU per second"),
    F64("hardware_tflops_per_gpu", hardware_tflops_per_gpu, "TFLOP/s",
        "executed FLOPs (with recomputation) per GPU per second"),
    F64("mfu", mfu, "fraction", "model FLOPs utilization of the precision's peak"),
    F64("hfu", hfu, "fraction", "hardware FLOPs utilization of the precision's peak"),
    F64("mem_total_gib", mem_total_gib, "GiB", "memory per GPU in HBM (first pipeline stage)"),
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
     "objective.tokens / tokens_per_s (0 without a token budget)"},
    {"gpu_hours", CDSE_COL_F64, offsetof(cdse_record, gpu_hours), "GPU-hours",
     "gpus x time to train objective.tokens (0 without a token budget)"},
    F64("seq_imbalance", seq_imbalance, "ratio",
        "slowest data-parallel rank over the mean (1 without seq_len_histogram)"),
    {"pool_split", CDSE_COL_POOL_SPLIT, RESULT(pool_split), "",
     "how a heterogeneous pool was used: none (not a pool), dp, pp"},
    F64("pool_share_0", pool_share[0], "fraction", "share of the work done by pool GPU type 0"),
    F64("pool_share_1", pool_share[1], "fraction", "share of the work done by pool GPU type 1"),
    F64("pool_share_2", pool_share[2], "fraction", "share of the work done by pool GPU type 2"),
    F64("pool_share_3", pool_share[3], "fraction", "share of the work done by pool GPU type 3"),
    {"placement", CDSE_COL_PLACEMENT, STRATEGY(placement), "",
     "rank placement order, innermost first (tp-cp-dp-pp by default)"},
    {"etp", CDSE_COL_I32, STRATEGY(etp), "",
     "expert tensor-parallel size as given (0 = tp; MoE parallel folding)"},
    {"recompute_modules", CDSE_COL_MODULES, STRATEGY(recompute_modules), "",
     "fine-grained recomputation: none, or Megatron-Core module names joined by '+'"},
    {"moe_dispatcher", CDSE_COL_DISPATCHER, STRATEGY(moe_dispatcher), "",
     "MoE token exchange: alltoall, deepep"},
    {"moe_overlap", CDSE_COL_MOE_OVERLAP, STRATEGY(moe_overlap), "",
     "what hides the MoE all-to-alls: none, shared_experts, a2a"},
    {"stack", CDSE_COL_STACK, offsetof(cdse_record, stack), "",
     "software stack that runs it (calibration/stacks; \"" CDSE_STACK_DEFAULT_LABEL
     "\": the built-in, current Megatron-Core)"},
    F64("mem_fp8_cache_gib", mem_fp8_cache_gib, "GiB",
        "FP8 copies and transposes of the weights (Transformer Engine, FP8 only)"),
    F64("mem_runtime_gib", mem_runtime_gib, "GiB",
        "the stack's NCCL/cuBLAS/TE workspaces and caching-allocator reserve"),
    F64("t_fixed_s", t_fixed_s, "s",
        "host costs not hidden by the GPU: kernel launches of small layers, per-iteration work"),
};
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

const char *const *cdse_column_names(int kind)
{
    if (kind == CDSE_COL_DISPATCHER)
        return cdse_moe_dispatcher_names;
    if (kind == CDSE_COL_MOE_OVERLAP)
        return cdse_moe_overlap_names;
    return NULL;
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
    case CDSE_COL_RECOMPUTE:
        return cdse_recompute_name(code);
    case CDSE_COL_PRECISION:
        return cdse_dtype_name(code);
    case CDSE_COL_STATUS:
        return cdse_status_name(code);
    case CDSE_COL_OFFLOAD:
        return cdse_offload_name(code);
    case CDSE_COL_POOL_SPLIT:
        return cdse_pool_split_name(code);
    case CDSE_COL_PLACEMENT:
        return code >= 0 && code < CDSE_PLACEMENT_COUNT ? cdse_placement_names[code] : "?";
    case CDSE_COL_DISPATCHER:
    case CDSE_COL_MOE_OVERLAP:
        return cdse_column_names(column->kind)[code];
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
    if (column->kind == CDSE_COL_MODULES) {
        cdse_recompute_modules_text(*(const int *)field, buf, size);
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

/* Appends `text` to the line at *used as a CSV field (csv_field's quoting); false when the line
 * is full. */
static bool line_field(char *line, size_t cap, size_t *used, const char *text, size_t n,
                       bool number)
{
    if (!number && strpbrk(text, ",\"\r\n") != NULL) {
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

/* One row is put together in memory and written with one call: this is the path of a whole
 * store's export, at millions of rows per second. */
void cdse_csv_row(FILE *out, const cdse_record *record, const cdse_job *job)
{
    char line[8192], buf[128];
    size_t used = 0;
    for (int i = 0; i < cdse_column_count; i++) {
        const cdse_column *c = &cdse_columns[i];
        bool number = column_is_number(c);
        const char *text = buf;
        size_t n;
        if (number) {
            n = format_number(c->kind, field_of(c, record), buf);
        } else if (c->kind == CDSE_COL_MODULES) {
            cdse_recompute_modules_text(*(const int *)field_of(c, record), buf, sizeof buf);
            n = strlen(buf);
        } else {
            text = column_name_text(c, field_of(c, record), job);
            text = text != NULL ? text : "?";
            n = strlen(text);
        }
        if (i > 0)
            line[used++] = ',';
        if (!line_field(line, sizeof line, &used, text, n, number)) {
            fwrite(line, 1, used, out); /* a row longer than the buffer: the slow way */
            used = 0;
            csv_field(out, text);
        }
    }
    line[used++] = '\n';
    fwrite(line, 1, used, out);
}

/* The human table: a selection of columns with short labels and fixed widths (negative:
 * left-aligned). A value wider than its column still gets one space before the next. */
typedef struct table_column {
    const char *column;
    const char *label;
    int width;
    int digits; /* significant digits of a float (%.Ng) */
} table_column;

static const table_column table_columns[] = {
    {"index", "index", 10, 0},
    {"model", "model", -14, 0},
    {"system", "system", -14, 0},
    {"gpus", "gpus", 6, 0},
    {"tp", "tp", 3, 0},
    {"pp", "pp", 3, 0},
    {"dp", "dp", 5, 0},
    {"cp", "cp", 3, 0},
    {"ep", "ep", 3, 0},
    {"vpp", "vpp", 3, 0},
    {"microbatch", "mb", 3, 0},
    {"global_batch", "gbs", 6, 0},
    {"recompute", "recompute", -9, 0},
    {"sequence_parallel", "sp", 2, 0},
    {"zero", "zero", 4, 0},
    {"precision", "prec", -4, 0},
    {"offload", "offload", -8, 0},
    {"etp", "etp", 3, 0},
    {"recompute_modules", "modules", -14, 0},
    {"moe_dispatcher", "dispatch", -8, 0},
    {"moe_overlap", "moe_overlap", -14, 0},
    {"stack", "stack", -18, 0},
    {"status", "status", -19, 0},
    {"time_per_iteration_s", "time_s", 10, 5},
    {"tokens_per_s", "tok/s", 10, 5},
    {"mfu", "mfu", 6, 3},
    {"mem_total_gib", "mem_gib", 8, 4},
    {"time_to_train_days", "days", 8, 4},
};
static const int table_column_count = (int)(sizeof table_columns / sizeof table_columns[0]);

void cdse_table_header(FILE *out)
{
    for (int i = 0; i < table_column_count; i++) {
        const table_column *c = &table_columns[i];
        /* The '#' takes the first character of the first column. */
        int width = i == 0 ? c->width - 1 : c->width;
        fprintf(out, "%s%*s", i == 0 ? "#" : " ", width, c->label);
    }
    fputc('\n', out);
}

void cdse_table_row(FILE *out, const cdse_record *record, const cdse_job *job)
{
    char buf[128];
    for (int i = 0; i < table_column_count; i++) {
        const table_column *c = &table_columns[i];
        const cdse_column *column = cdse_column_find(c->column);
        if (column->kind == CDSE_COL_F64)
            snprintf(buf, sizeof buf, "%.*g", c->digits, cdse_column_value(column, record));
        else
            cdse_column_format(column, record, job, buf, sizeof buf);
        fprintf(out, "%s%*s", i == 0 ? "" : " ", c->width, buf);
    }
    fputc('\n', out);
}

void cdse_columns_print(FILE *out)
{
    fprintf(out, "# %-24s %-10s %s\n", "column", "unit", "meaning");
    for (int i = 0; i < cdse_column_count; i++)
        fprintf(out, "%-26s %-10s %s\n", cdse_columns[i].name,
                cdse_columns[i].unit[0] ? cdse_columns[i].unit : "-", cdse_columns[i].help);
}
