/* The human table: which columns (the ones that vary in what is shown, or the ones asked for),
 * their widths, and the lines (table.h). */
#include "clusterdse/sweep/table.h"

#include <math.h>
#include <string.h>

/* How a column is shown: its short label and, for a float, the significant digits and the
 * width. Columns not listed show their name (an axis's: its LABEL, axes.h), 5 digits, and the
 * width that needs. */
typedef struct table_label {
    const char *column;
    const char *label;
    int digits;
    int width;
} table_label;

static const table_label labels[] = {
    {"time_per_iteration_s", "time_s", 5, 10},
    {"time_low_s", "t_low", 4, 8},
    {"time_high_s", "t_high", 4, 8},
    {"tokens_per_s", "tok/s", 5, 10},
    {"mfu", "mfu", 3, 6},
    {"mem_total_gib", "mem_gib", 4, 8},
    {"mem_reserved_gib", "res_gib", 4, 8},
    {"time_to_train_days", "days", 4, 8},
    {"gpu_hours", "gpu_hours", 4, 10},
    {"cost_to_train", "cost", 4, 10},
    {"energy_to_train_mwh", "energy_mwh", 4, 10},
    {"tokens_per_kwh", "tok/kwh", 4, 10},
    {"pool_share_0", "share0", 3, 6},
    {"pool_share_1", "share1", 3, 6},
    {"pool_share_2", "share2", 3, 6},
    {"pool_share_3", "share3", 3, 6},
    {"pool_layers_0", "layers0", 0, 0},
    {"pool_layers_1", "layers1", 0, 0},
    {"pool_layers_2", "layers2", 0, 0},
    {"pool_layers_3", "layers3", 0, 0},
    {"pool_microbatches_0", "mbs0", 0, 0},
    {"pool_microbatches_1", "mbs1", 0, 0},
    {"pool_microbatches_2", "mbs2", 0, 0},
    {"pool_microbatches_3", "mbs3", 0, 0},
    {"pool_tp_0", "tp0", 0, 0},
    {"pool_tp_1", "tp1", 0, 0},
    {"pool_tp_2", "tp2", 0, 0},
    {"pool_tp_3", "tp3", 0, 0},
};

#define DEFAULT_DIGITS 5

/* The configuration columns, in the order they print when they vary, followed by the column of
 * every axis (axes.h) not listed here, in axis order (config_order). The hardware values come
 * after system (every column whose offset is in cdse_record.hw). */
static const char *const config_columns[] = {
    "model",
    "system",
    "gpus",
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "etp",
    "vpp",
    "microbatch",
    "global_batch",
    "recompute",
    "recompute_layers",
    "recompute_modules",
    "sequence_parallel",
    "zero",
    "precision",
    "flash_attention",
    "offload",
    "offload_layers",
    "tp_comm_overlap",
    "placement",
    "moe_dispatcher",
    "moe_overlap",
    "stack",
    "pool_split",
};

/* Printed after the configuration columns: always, except those of `when_present`. */
static const char *const result_columns[] = {
    "status", "time_per_iteration_s", "time_low_s",       "time_high_s",        "tokens_per_s",
    "mfu",    "mem_total_gib",        "mem_reserved_gib", "time_to_train_days",
};

/* Result columns a store made before them holds as 0 in every row (the error band,
 * calibration/bands.cfg, and the reserved memory of issue 25): printed when a row has one. */
static const char *const when_present[] = {"time_low_s", "time_high_s", "mem_reserved_gib"};

/* The partition a pool's planner chose (model/pool.h): printed after the result columns when a
 * row has one (a pool's rows); the tensor-parallel degrees per type only when one differs from
 * the strategy's tp (tp_per_type). */
static const char *const pool_columns[] = {
    "pool_share_0",        "pool_share_1",        "pool_share_2",        "pool_share_3",
    "pool_layers_0",       "pool_layers_1",       "pool_layers_2",       "pool_layers_3",
    "pool_microbatches_0", "pool_microbatches_1", "pool_microbatches_2", "pool_microbatches_3",
    "pool_tp_0",           "pool_tp_1",           "pool_tp_2",           "pool_tp_3",
};

/* Columns whose 0 means "not computed" (no budget, prices or power, or not feasible): '-'. */
static const char *const dash_when_zero[] = {
    "time_to_train_days", "gpu_hours", "cost_to_train", "energy_to_train_mwh", "tokens_per_kwh",
};

static int column_index(const char *name)
{
    const cdse_column *c = cdse_column_find(name);
    return c ? (int)(c - cdse_columns) : -1;
}

static const table_label *label_of(int column)
{
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        if (strcmp(labels[i].column, cdse_columns[column].name) == 0)
            return &labels[i];
    return NULL;
}

static const char *label_text(int column)
{
    const table_label *l = label_of(column);
    if (l != NULL)
        return l->label;
    for (int a = 0; a < CDSE_AXIS_COUNT; a++)
        if (cdse_axis_info_of(a)->column == column && cdse_axis_info_of(a)->label != NULL)
            return cdse_axis_info_of(a)->label;
    return cdse_columns[column].name;
}

#define N_CONFIG_COLUMNS ((int)(sizeof config_columns / sizeof config_columns[0]))
#define CONFIG_ORDER_MAX (N_CONFIG_COLUMNS + CDSE_AXIS_COUNT)

/* The configuration columns in print order, into col[] (CONFIG_ORDER_MAX): config_columns,
 * then the column of every axis they do not list. Returns how many. */
static int config_order(int *col)
{
    int n = 0;
    for (int i = 0; i < N_CONFIG_COLUMNS; i++)
        col[n++] = column_index(config_columns[i]);
    for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
        int c = cdse_axis_info_of(a)->column;
        bool listed = c < 0;
        for (int i = 0; i < N_CONFIG_COLUMNS && !listed; i++)
            listed = col[i] == c;
        if (!listed)
            col[n++] = c;
    }
    return n;
}

static bool is_hw(int column)
{
    size_t off = cdse_columns[column].offset;
    return off >= offsetof(cdse_record, hw) &&
           off < offsetof(cdse_record, hw) + sizeof(((cdse_record *)0)->hw);
}

static bool is_name(int column)
{
    int kind = cdse_columns[column].kind;
    return kind != CDSE_COL_U64 && kind != CDSE_COL_I32 && kind != CDSE_COL_BOOL &&
           kind != CDSE_COL_F64;
}

static bool in_list(const char *const *list, size_t n, int column)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], cdse_columns[column].name) == 0)
            return true;
    return false;
}

#define IN(list, column) in_list(list, sizeof list / sizeof list[0], column)

static void track(cdse_table *t, int column)
{
    for (int i = 0; i < t->n_tracked; i++)
        if (t->tracked[i] == column)
            return;
    t->tracked[t->n_tracked++] = column;
}

const char *cdse_table_metric_column(int metric)
{
    static const char *const columns[CDSE_METRIC_COUNT] = {
        [CDSE_METRIC_TIME_PER_ITERATION] = "time_per_iteration_s",
        [CDSE_METRIC_TOKENS_PER_S] = "tokens_per_s",
        [CDSE_METRIC_TIME_TO_TRAIN] = "time_to_train_days",
        [CDSE_METRIC_GPU_HOURS] = "gpu_hours",
        [CDSE_METRIC_MFU] = "mfu",
        [CDSE_METRIC_COST_TO_TRAIN] = "cost_to_train",
        [CDSE_METRIC_ENERGY_TO_TRAIN] = "energy_to_train_mwh",
        [CDSE_METRIC_TOKENS_PER_KWH] = "tokens_per_kwh",
    };
    return metric >= 0 && metric < CDSE_METRIC_COUNT ? columns[metric] : NULL;
}

/* A column by its name or its label; -1 if neither. */
static int column_by_name(const char *name, size_t n)
{
    for (int c = 0; c < cdse_column_count; c++) {
        const char *label = label_text(c);
        if ((strlen(cdse_columns[c].name) == n && strncmp(cdse_columns[c].name, name, n) == 0) ||
            (strlen(label) == n && strncmp(label, name, n) == 0))
            return c;
    }
    return -1;
}

static void allowed_names(char *out, size_t size)
{
    size_t used = 0;
    for (int c = 0; c < cdse_column_count && used < size; c++)
        used +=
            (size_t)snprintf(out + used, size - used, "%s%s", c ? ", " : "", cdse_columns[c].name);
}

static int choose_columns(cdse_table *t, const char *list, char *err, size_t size)
{
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        int c = column_by_name(p, n);
        if (c < 0 || t->n_tracked >= CDSE_TABLE_MAX_COLUMNS) {
            char names[2048];
            allowed_names(names, sizeof names);
            snprintf(err, size, "--columns %s: %s '%.*s'; allowed: column names joined by ',' (%s)",
                     list, c < 0 ? "no column" : "too many columns at", (int)n, p, names);
            return -1;
        }
        t->tracked[t->n_tracked++] = c;
        if (p[n] == '\0')
            return 0;
        p += n + 1;
    }
}

int cdse_table_init(cdse_table *t, const cdse_job *job, const char *key, const char *columns,
                    char *err, size_t size)
{
    memset(t, 0, sizeof *t);
    if (cdse_column_count > CDSE_TABLE_MAX_COLUMNS) { /* the arrays are per column */
        snprintf(err, size, "the table holds %d columns at most, the store has %d",
                 CDSE_TABLE_MAX_COLUMNS, cdse_column_count);
        return -1;
    }
    t->job = job;
    t->key = key ? column_index(key) : -1;
    if (columns != NULL) {
        t->chosen = true;
        return choose_columns(t, columns, err, size);
    }
    track(t, column_index("index"));
    int order[CONFIG_ORDER_MAX], n_order = config_order(order);
    for (int i = 0; i < n_order; i++)
        track(t, order[i]);
    for (int c = 0; c < cdse_column_count; c++)
        if (is_hw(c))
            track(t, c);
    for (size_t i = 0; i < sizeof result_columns / sizeof result_columns[0]; i++)
        track(t, column_index(result_columns[i]));
    for (size_t i = 0; i < sizeof pool_columns / sizeof pool_columns[0]; i++)
        track(t, column_index(pool_columns[i]));
    if (t->key >= 0)
        track(t, t->key);
    return 0;
}

/* The characters of a value as cdse_table_print_row prints it. */
static int format_cell(const cdse_table *t, int column, const cdse_record *record, char *buf,
                       size_t size)
{
    const cdse_column *col = &cdse_columns[column];
    if (col->kind == CDSE_COL_F64) {
        const table_label *l = label_of(column);
        double v = cdse_column_value(col, record);
        if (v == 0.0 && IN(dash_when_zero, column))
            return snprintf(buf, size, "-");
        return snprintf(buf, size, "%.*g", l ? l->digits : DEFAULT_DIGITS, v);
    }
    cdse_column_format(col, record, t->job, buf, size);
    return (int)strlen(buf);
}

static int text_width(const cdse_table *t, int column, const cdse_record *record)
{
    char buf[128];
    return format_cell(t, column, record, buf, sizeof buf);
}

static void note_applicable(cdse_table *t, const cdse_record *r)
{
    const cdse_strategy *s = &r->strategy;
    t->moe |= s->ep > 1;
    t->activation_offload |= (s->offload & CDSE_OFFLOAD_ACTIVATIONS) != 0;
    t->full_recompute |= s->recompute == CDSE_RECOMPUTE_FULL;
    t->modules |= s->recompute_modules != 0;
    for (int i = 0; i < 4; i++)
        t->pool_tp_differs |= r->result.pool_tp[i] != 0 && r->result.pool_tp[i] != s->tp;
}

void cdse_table_observe(cdse_table *t, const cdse_record *r)
{
    note_applicable(t, r);
    for (int i = 0; i < t->n_tracked; i++) {
        int c = t->tracked[i];
        double v = cdse_column_value(&cdse_columns[c], r);
        bool changed = t->rows == 0 || !(v == t->last[c] || (isnan(v) && isnan(t->last[c])));
        if (t->rows == 0)
            t->first[c] = v;
        else if (!(v == t->first[c] || (isnan(v) && isnan(t->first[c]))) && !is_hw(c))
            t->varies[c] = true;
        t->last[c] = v;
        if (v != 0.0 && !isnan(v))
            t->present[c] = true;
        const table_label *l = label_of(c);
        bool fixed = cdse_columns[c].kind == CDSE_COL_F64 && l != NULL && l->width > 0;
        if (changed && !fixed) {
            int w = text_width(t, c, r);
            t->value_width[c] = w > t->value_width[c] ? w : t->value_width[c];
        }
    }
    /* A hardware value varies when it differs within one system (a hardware axis): between
     * systems it follows the system column. */
    int s = r->system;
    if (s >= 0 && s < CDSE_MAX_SYSTEMS) {
        for (int k = 0; k < CDSE_HW_COUNT; k++)
            if (t->system_seen[s] && !(r->hw[k] == t->system_hw[s][k]))
                t->varies[column_index(cdse_hw_column(k))] = true;
        if (!t->system_seen[s])
            memcpy(t->system_hw[s], r->hw, sizeof r->hw);
        t->system_seen[s] = true;
    }
    t->rows++;
}

/* Whether a configuration column means anything for the rows (table.h). */
static bool applicable(const cdse_table *t, int column)
{
    const char *name = cdse_columns[column].name;
    if (strcmp(name, "etp") == 0 || strcmp(name, "moe_dispatcher") == 0 ||
        strcmp(name, "moe_overlap") == 0)
        return t->moe;
    if (strcmp(name, "offload_layers") == 0)
        return t->activation_offload;
    if (strcmp(name, "recompute_layers") == 0)
        return t->full_recompute;
    if (strcmp(name, "recompute_modules") == 0)
        return t->modules;
    if (strcmp(name, "pool_split") == 0)
        return t->present[column]; /* a pool's rows: how it was used */
    return !is_hw(column);
}

static void add(cdse_table *t, int column)
{
    for (int i = 0; i < t->n; i++)
        if (t->column[i] == column)
            return;
    t->column[t->n++] = column;
}

static int width_of(const cdse_table *t, int column)
{
    const table_label *l = label_of(column);
    int label = (int)strlen(label_text(column));
    int value;
    if (cdse_columns[column].kind == CDSE_COL_F64 && l != NULL && l->width > 0)
        value = l->width;
    else
        value = t->value_width[column];
    int w = label > value ? label : value;
    if (column == t->column[0])
        w++; /* the '#' of the header takes a character of the first column */
    return is_name(column) ? -w : w;
}

static void choose(cdse_table *t)
{
    t->n = 0;
    if (t->chosen) {
        for (int i = 0; i < t->n_tracked; i++)
            add(t, t->tracked[i]);
    } else {
        add(t, column_index("index"));
        int order[CONFIG_ORDER_MAX], n_order = config_order(order);
        for (int i = 0; i < n_order; i++) {
            int c = order[i];
            if (t->varies[c])
                add(t, c);
            if (i == 1) /* after system: the hardware values of a hardware axis */
                for (int h = 0; h < cdse_column_count; h++)
                    if (is_hw(h) && t->varies[h])
                        add(t, h);
        }
        for (size_t i = 0; i < sizeof result_columns / sizeof result_columns[0]; i++) {
            int c = column_index(result_columns[i]);
            if (!IN(when_present, c) || t->present[c])
                add(t, c);
        }
        for (size_t i = 0; i < sizeof pool_columns / sizeof pool_columns[0]; i++) {
            int c = column_index(pool_columns[i]);
            bool tp = strncmp(pool_columns[i], "pool_tp_", 8) == 0;
            if (t->present[c] && (!tp || t->pool_tp_differs))
                add(t, c);
        }
        if (t->key >= 0)
            add(t, t->key);
    }
    for (int i = 0; i < t->n; i++)
        t->width[i] = width_of(t, t->column[i]);
}

/* The '# same in every row:' line: the configuration columns with one value. */
static void print_same(const cdse_table *t, FILE *out, const cdse_record *first)
{
    if (t->chosen || t->rows == 0)
        return;
    bool any = false;
    int order[CONFIG_ORDER_MAX], n_order = config_order(order);
    for (int i = 0; i < n_order; i++) {
        int c = order[i];
        if (t->varies[c] || !applicable(t, c))
            continue;
        char buf[128];
        cdse_column_format(&cdse_columns[c], first, t->job, buf, sizeof buf);
        fprintf(out, "%s %s=%s", any ? "" : "# same in every row:", cdse_columns[c].name, buf);
        any = true;
    }
    if (any)
        fputc('\n', out);
}

void cdse_table_print_header(cdse_table *t, FILE *out)
{
    choose(t);
    /* A record holding the first row's values of the tracked columns, for print_same. */
    cdse_record first;
    memset(&first, 0, sizeof first);
    for (int i = 0; i < t->n_tracked; i++) {
        int c = t->tracked[i];
        const cdse_column *col = &cdse_columns[c];
        char *field = (char *)&first + col->offset;
        double v = t->first[c];
        switch (col->kind) {
        case CDSE_COL_U64:
            *(uint64_t *)field = (uint64_t)v;
            break;
        case CDSE_COL_BOOL:
            *(bool *)field = v != 0.0;
            break;
        case CDSE_COL_F64:
            *(double *)field = v;
            break;
        case CDSE_COL_MODEL:
        case CDSE_COL_SYSTEM:
        case CDSE_COL_STACK:
            *(int32_t *)field = (int32_t)v;
            break;
        default:
            *(int *)field = (int)v;
        }
    }
    print_same(t, out, &first);
    for (int i = 0; i < t->n; i++) {
        int w = t->width[i]; /* the '#' takes a character of the first column */
        fprintf(out, "%s%*s", i == 0 ? "#" : " ",
                i > 0   ? w
                : w < 0 ? w + 1
                        : w - 1,
                label_text(t->column[i]));
    }
    fputc('\n', out);
}

void cdse_table_print_row(const cdse_table *t, FILE *out, const cdse_record *record)
{
    char line[4096];
    size_t used = 0;
    for (int i = 0; i < t->n && used < sizeof line - 256; i++) {
        int c = t->column[i];
        char buf[128];
        format_cell(t, c, record, buf, sizeof buf);
        int n =
            snprintf(line + used, sizeof line - used, "%s%*s", i == 0 ? "" : " ", t->width[i], buf);
        used += n > 0 ? (size_t)n : 0;
    }
    used = used < sizeof line - 1 ? used : sizeof line - 2;
    line[used++] = '\n';
    fwrite(line, 1, used, out);
}
