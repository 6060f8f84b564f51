/* The column table of records (the contract shared by CSV, the human table and the HDF5 store),
 * and text output. The record itself is the model's (src/model/record.c). */
#include "clusterdse/sweep/report.h"

#include "clusterdse/sweep/numfmt.h"

#include <stddef.h>
#include <string.h>

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

#define POOL_I32(key, field, unit, text)                                                           \
    {                                                                                              \
        key, CDSE_COL_I32, RESULT(field), unit, text, NULL                                         \
    }
/* One column per GPU type of a pool (cdse_result's arrays of 4): KEY_0..KEY_3. */
#define POOL_TYPES(key, field, unit, text)                                                         \
    POOL_I32(key "_0", field[0], unit, text " 0"), POOL_I32(key "_1", field[1], unit, text " 1"),  \
        POOL_I32(key "_2", field[2], unit, text " 2"),                                             \
        POOL_I32(key "_3", field[3], unit, text " 3")

#define GOODPUT(key, field, unit, text)                                                            \
    {                                                                                              \
        key, CDSE_COL_F64, offsetof(cdse_record, field), unit, text, NULL                          \
    }

/* The column of a hardware key (model/hardware.h CDSE_HW_KEYS) at its position in the table:
 * the system's value with the job's hardware axes applied. */
#define HW_COLUMN_(ID, GROUP, LEVEL, NAME, FIELD, WHEN, INT, MIN, MIN_OPEN, MAX, COLUMN, POS,      \
                   UNIT, HELP)                                                                     \
    [POS] = {COLUMN, CDSE_COL_F64, offsetof(cdse_record, hw[CDSE_HW_##ID]), UNIT, HELP, NULL},

/* The position of the status column (stores hold it there). */
#define STATUS_COLUMN 20

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
    [STATUS_COLUMN] = {"status", CDSE_COL_ENUM, RESULT(status), "",
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
    /* [65] to [80], [84] to [86] and appended ones: the hardware columns, one per row of
     * CDSE_HW_KEYS (model/hardware.h), at the row's position (below). */
    [81] = {"cost_to_train", CDSE_COL_F64, offsetof(cdse_record, cost_to_train), "currency",
            "amortized purchase (or rental) plus electricity for objective.tokens (0 without a "
            "budget or "
            "prices, or when infeasible)",
            NULL},
    {"energy_to_train_mwh", CDSE_COL_F64, offsetof(cdse_record, energy_to_train_mwh), "MWh",
     "facility energy (PUE included) for objective.tokens (0 without a budget or power figures, "
     "or when infeasible)",
     NULL},
    {"tokens_per_kwh", CDSE_COL_F64, offsetof(cdse_record, tokens_per_kwh), "tokens/kWh",
     "training tokens per kWh of facility energy (0 without power figures)", NULL},
    /* --- goodput (issue 29; docs/job-file.md, Failures and checkpoints) --- */
    [87] = GOODPUT(
        "checkpoint_gib", checkpoint_gib, "GiB",
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
    /* The axes' columns and the hardware keys' place themselves (designated, up to 104); the
     * figures after them keep the stores' layout. (The macros end in commas, which
     * clang-format cannot see.) */
    /* clang-format off */
    CDSE_AXES(AXIS_COLUMN_)
    CDSE_HW_KEYS(HW_COLUMN_)
    [105] = F64("t_ceiling_s", t_ceiling_s, "s",
                "added so that MFU stays at the system's mfu_ceiling, the best published run of "
                "the GPU generation in this data type (0 below it)"),
    /* clang-format on */
    /* --- the partition a pool's planner chose (issue 30; model/pool.h): after the columns
     * of the axes (103), the hardware key storage_read (104) and t_ceiling_s (105), so that stores
     * keep their layout; 0 for a type that takes no part, beyond
     * the pool's types and for systems that are not pools --- */
    POOL_TYPES("pool_layers", pool_layers, "layers",
               "pp split: transformer layers of each pipeline stage of pool GPU type"),
    POOL_TYPES("pool_microbatches", pool_microbatches, "",
               "micro-batches per iteration of each replica (dp split) or pipeline (pp split) "
               "of pool GPU type"),
    POOL_TYPES("pool_tp", pool_tp, "",
               "tensor-parallel degree of the stages or replicas of pool GPU type"),
    /* The hardware key replace_time (issue 29: hot spares against a repair, 'is faster storage
     * or more spare nodes worth it') places itself at 118, after the pools' columns. */
};
const int cdse_column_count = (int)(sizeof cdse_columns / sizeof cdse_columns[0]);

/* The names of objective.store (config/job.h) as the store's `store_mode` attribute holds them. */
static const cdse_names store_mode_enum = {cdse_store_mode_names, CDSE_STORE_MODES, NULL};

const cdse_record_enums cdse_record_enum_tables = {&cdse_columns[STATUS_COLUMN], &cdse_metric_enum,
                                                   &store_mode_enum};

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

void cdse_columns_print_hardware(FILE *out)
{
    fprintf(out, "| column | unit | meaning |\n|---|---|---|\n");
    for (int i = 0; i < cdse_column_count; i++)
        for (int k = 0; k < CDSE_HW_COUNT; k++) {
            const cdse_hw_info *h = &cdse_hw_keys[k];
            if (h->position != i)
                continue;
            /* the system key it comes from: NAME, GROUP.NAME or network[LEVEL].NAME */
            char key[64];
            if (h->group == NULL)
                snprintf(key, sizeof key, "%s", h->name);
            else if (h->level >= 0)
                snprintf(key, sizeof key, "%s[%d].%s", h->group, h->level, h->name);
            else
                snprintf(key, sizeof key, "%s.%s", h->group, h->name);
            fprintf(out, "| `%s` | %s | %s; key `%s` |\n", cdse_columns[i].name,
                    cdse_columns[i].unit, cdse_columns[i].help, key);
        }
}
