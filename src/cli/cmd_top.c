/* clusterdse top: the best rows of a store by a metric or column, with a filter. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/sweep/expr.h"
#include "clusterdse/sweep/store.h"
#include "clusterdse/sweep/topk.h"
#include "commands.h"
#include "output_file.h"
#include "store_guard.h"

#define TOP_DEFAULT_ROWS 10
#define TOP_BLOCK_ROWS   65536 /* rows read from the store at a time */

static const char usage_text[] =
    "usage: clusterdse top OUT.h5 [-n N] [--by METRIC|COLUMN] [--where EXPR] [--csv]\n"
    "                     [--from results|top|pareto|pareto_cost] [--all] [--asc|--desc]\n"
    "\n"
    "Prints the best rows of a sweep's store.\n"
    "\n"
    "  -n N            rows to print (default 10)\n"
    "  --by NAME       rank by a metric (time_per_iteration, tokens_per_s, time_to_train,\n"
    "                  gpu_hours, mfu: best first) or by any column (ascending; see --desc).\n"
    "                  Default: the job's objective.metric\n"
    "  --where EXPR    keep rows where EXPR holds, e.g.\n"
    "                    'tp==8 && mem_total_gib<70'\n"
    "                    'model==\"llama3-70b\" && (recompute==\"none\" || pp<=4)'\n"
    "                  operators: || && ! == != < <= > >= + - * / ( ); model, system, status,\n"
    "                  recompute, precision, offload, pool_split, placement, recompute_modules,\n"
    "                  moe_dispatcher, moe_overlap and stack compare (== !=) with strings only;\n"
    "                  true/false with sequence_parallel, flash_attention, tp_comm_overlap\n"
    "  --csv           CSV with every column (the columns of `eval --csv`)\n"
    "  --from DATASET  results (default when stored), top (best per group), pareto\n"
    "                  (time vs GPUs), pareto_cost (time vs cost to train)\n"
    "  --all           include infeasible rows (default: status == \"ok\" only)\n"
    "  --asc, --desc   direction when ranking by a column\n"
    "  -h, --help      this text\n"
    "\n"
    "exit codes: 0 done, 1 bad input (arguments, expression, not a store), 2 read failure\n";

/* Whether --from names a dataset of a sweep store; otherwise says what is allowed. */
static bool from_valid(const char *from, char *err, size_t size)
{
    static const char *const sets[] = {"results", "top", "pareto", "pareto_cost"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (strcmp(from, sets[i]) == 0)
            return true;
    snprintf(err, size, "--from takes results, top, pareto or pareto_cost, not '%s'", from);
    return false;
}

typedef struct top_args {
    const char *path;
    long n;
    const char *by;
    const char *where;
    const char *from;
    bool csv, all, desc, asc, help;
} top_args;

static int parse_args(int argc, char **argv, top_args *a, char *err, size_t size)
{
    memset(a, 0, sizeof *a);
    a->n = TOP_DEFAULT_ROWS;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
            a->help = true;
        else if (strcmp(s, "--csv") == 0)
            a->csv = true;
        else if (strcmp(s, "--all") == 0)
            a->all = true;
        else if (strcmp(s, "--desc") == 0)
            a->desc = true;
        else if (strcmp(s, "--asc") == 0)
            a->asc = true;
        else if ((strcmp(s, "-n") == 0 || strcmp(s, "--by") == 0 || strcmp(s, "--where") == 0 ||
                  strcmp(s, "--from") == 0) &&
                 !has_value) {
            snprintf(err, size, "option '%s' needs a value", s);
            return -1;
        } else if (strcmp(s, "-n") == 0) {
            char *end;
            a->n = strtol(argv[++i], &end, 10);
            if (*end != '\0' || a->n < 1) {
                snprintf(err, size, "-n takes a positive integer, not '%s'", argv[i]);
                return -1;
            }
        } else if (strcmp(s, "--by") == 0)
            a->by = argv[++i];
        else if (strcmp(s, "--where") == 0)
            a->where = argv[++i];
        else if (strcmp(s, "--from") == 0)
            a->from = argv[++i];
        else if (s[0] == '-' && s[1] != '\0') {
            snprintf(err, size, "unknown option %s", s);
            return -1;
        } else if (a->path == NULL)
            a->path = s;
        else {
            snprintf(err, size, "one store at a time (%s and %s)", a->path, s);
            return -1;
        }
    }
    if (a->help)
        return 0;
    if (a->path == NULL) {
        snprintf(err, size, "no store given");
        return -1;
    }
    if (a->from && !from_valid(a->from, err, size))
        return -1;
    if (a->asc && a->desc) {
        snprintf(err, size, "--asc and --desc exclude each other");
        return -1;
    }
    return 0;
}

/* ---- the filter's environment: the columns of a record ------------------------------------- */

typedef struct names_ctx {
    const cdse_job *names; /* model and system names of the store */
} names_ctx;

static int column_lookup(void *ctx, const char *name)
{
    (void)ctx;
    const cdse_column *c = cdse_column_find(name);
    return c ? (int)(c - cdse_columns) : -1;
}

static int find_name(const char *str, int n, const char *(*name)(const void *, int),
                     const void *ctx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(str, name(ctx, i)) == 0)
            return i;
    return -1;
}

static const char *model_name(const void *ctx, int i)
{
    return ((const cdse_job *)ctx)->model[i].name;
}

static const char *system_name(const void *ctx, int i)
{
    return ((const cdse_job *)ctx)->system[i].name;
}

static const char *stack_name(const void *ctx, int i)
{
    const cdse_job *job = ctx;
    return i < job->n_stacks ? job->stack[i].name : CDSE_STACK_DEFAULT_LABEL;
}

static const char *recompute_name(const void *ctx, int i)
{
    (void)ctx;
    return cdse_recompute_name(i);
}

static const char *dtype_name(const void *ctx, int i)
{
    (void)ctx;
    return cdse_dtype_name(i);
}

static const char *status_name(const void *ctx, int i)
{
    (void)ctx;
    return cdse_status_name(i);
}

static const char *offload_name(const void *ctx, int i)
{
    (void)ctx;
    return cdse_offload_name(i);
}

static const char *pool_split_name(const void *ctx, int i)
{
    (void)ctx;
    return cdse_pool_split_name(i);
}

static const char *placement_name(const void *ctx, int i)
{
    (void)ctx;
    return cdse_placement_names[i];
}

static const char *bool_name(const void *ctx, int i)
{
    (void)ctx;
    return i ? "true" : "false";
}

static const char *table_name(const void *ctx, int i)
{
    return ((const char *const *)ctx)[i];
}

/* The names of a column's values: name(ctx, i) for i < n. */
typedef struct value_names {
    const char *(*name)(const void *ctx, int i);
    const void *ctx;
    int n;
} value_names;

/* The names of the values of `col` (true and false for a bool column); false for a number
 * column and for recompute_modules, whose names are built (module_value). */
static bool column_value_names(const cdse_column *col, const cdse_job *job, value_names *v)
{
    const char *const *table = cdse_column_names(col->kind);
    *v = (value_names){NULL, job, 0};
    if (table != NULL) {
        *v = (value_names){table_name, table, 0};
        while (table[v->n] != NULL)
            v->n++;
        return true;
    }
    switch (col->kind) {
    case CDSE_COL_MODEL:
        v->name = model_name, v->n = job->n_models;
        break;
    case CDSE_COL_SYSTEM:
        v->name = system_name, v->n = job->n_systems;
        break;
    case CDSE_COL_STACK:
        v->name = stack_name, v->n = job->n_stacks + 1;
        break;
    case CDSE_COL_RECOMPUTE:
        v->name = recompute_name, v->n = CDSE_RECOMPUTE_COUNT;
        break;
    case CDSE_COL_PRECISION:
        v->name = dtype_name, v->n = CDSE_DTYPE_COUNT;
        break;
    case CDSE_COL_STATUS:
        v->name = status_name, v->n = CDSE_ST_COUNT;
        break;
    case CDSE_COL_OFFLOAD:
        v->name = offload_name, v->n = 8;
        break;
    case CDSE_COL_BOOL:
        v->name = bool_name, v->n = 2;
        break;
    case CDSE_COL_POOL_SPLIT:
        v->name = pool_split_name, v->n = CDSE_POOL_PP + 1;
        break;
    case CDSE_COL_PLACEMENT:
        v->name = placement_name, v->n = CDSE_PLACEMENT_COUNT;
        break;
    default:
        return false;
    }
    return true;
}

/* "a, b, c": the names of `v`, into out. */
static void list_names(const value_names *v, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < v->n && used < size; k++)
        used +=
            (size_t)snprintf(out + used, size - used, "%s%s", k ? ", " : "", v->name(v->ctx, k));
}

#define MODULE_VALUES                                                                              \
    "none, or module names in the order "                                                          \
    "core_attn+moe_act+layernorm+mla_up_proj+mlp+moe+shared_experts joined by '+'"

static int module_value(const cdse_column *col, const char *str, double *value, char *msg,
                        size_t size)
{
    char text[96];
    for (int i = 0; i < CDSE_RECOMPUTE_MODULES_N; i++) {
        cdse_recompute_modules_text(i, text, sizeof text);
        if (strcmp(str, text) == 0) {
            *value = i;
            return 0;
        }
    }
    snprintf(msg, size, "%s has no value \"%s\"; values: %s", col->name, str, MODULE_VALUES);
    return -1;
}

static int column_string(void *vctx, int var, const char *str, double *value, char *msg,
                         size_t size)
{
    const names_ctx *ctx = vctx;
    const cdse_column *col = &cdse_columns[var];
    value_names v;
    if (col->kind == CDSE_COL_MODULES)
        return module_value(col, str, value, msg, size);
    if (!column_value_names(col, ctx->names, &v)) {
        snprintf(msg, size, "%s is a number: compare it with a number", col->name);
        return -1;
    }
    int i = find_name(str, v.n, v.name, v.ctx);
    if (i >= 0) {
        *value = i;
        return 0;
    }
    char values[1024];
    list_names(&v, values, sizeof values);
    snprintf(msg, size, "%s has no value \"%s\"; values: %s", col->name, str, values);
    return -1;
}

/* Name columns compare with a name only (cdse_expr_env.named): model == 0 would compare the
 * model's position in the store. true/false columns compare with 1 and 0 as well. */
static bool column_named(void *vctx, int var, char *values, size_t size)
{
    const names_ctx *ctx = vctx;
    const cdse_column *col = &cdse_columns[var];
    value_names v;
    if (col->kind == CDSE_COL_MODULES) {
        snprintf(values, size, "%s", MODULE_VALUES);
        return true;
    }
    if (col->kind == CDSE_COL_BOOL || !column_value_names(col, ctx->names, &v))
        return false;
    list_names(&v, values, size);
    return true;
}

static double column_get(const void *row, int var)
{
    return cdse_column_value(&cdse_columns[var], row);
}

/* ---- ranking -------------------------------------------------------------------------------- */

typedef struct ranking {
    int metric;                /* >= 0: rank by cdse_record_cost of this metric */
    const cdse_column *column; /* otherwise by this column */
    double sign;               /* +1 ascending, -1 descending (columns) */
    cdse_topk best;            /* the -n best rows; grows with the rows, not with -n */
} ranking;

static int ranking_offer(ranking *k, const cdse_record *rec)
{
    double key = k->metric >= 0 ? cdse_record_cost(rec, k->metric)
                                : k->sign * cdse_column_value(k->column, rec);
    if (isnan(key))
        key = HUGE_VAL;
    return cdse_topk_offer(&k->best, rec, key);
}

static int setup_ranking(const top_args *a, const cdse_store *store, ranking *k, char *err,
                         size_t size)
{
    memset(k, 0, sizeof *k);
    k->metric = -1;
    k->sign = a->desc ? -1.0 : 1.0;
    const char *by = a->by ? a->by : cdse_metric_name(cdse_store_metric(store));
    int metric = cdse_metric_parse(by);
    if (metric >= 0) {
        k->metric = metric;
    } else {
        k->column = cdse_column_find(by);
        if (k->column == NULL) {
            snprintf(err, size,
                     "--by %s: neither a metric (time_per_iteration, tokens_per_s, "
                     "time_to_train, gpu_hours, mfu) nor a column (clusterdse eval --help-columns)",
                     by);
            return -1;
        }
    }
    cdse_topk_init(&k->best, (size_t)a->n, false);
    return 0;
}

/* ---- main ----------------------------------------------------------------------------------- */

/* A job holding only the names the output needs. */
static cdse_job *names_job(const cdse_store *store)
{
    cdse_job *job = calloc(1, sizeof *job);
    if (job == NULL)
        return NULL;
    job->n_models = cdse_store_n_models(store);
    for (int i = 0; i < job->n_models; i++)
        snprintf(job->model[i].name, CDSE_NAME_MAX, "%s", cdse_store_model_name(store, i));
    job->n_systems = cdse_store_n_systems(store);
    for (int i = 0; i < job->n_systems; i++)
        snprintf(job->system[i].name, CDSE_NAME_MAX, "%s", cdse_store_system_name(store, i));
    job->n_stacks = cdse_store_n_stacks(store);
    for (int i = 0; i < job->n_stacks; i++)
        snprintf(job->stack[i].name, CDSE_NAME_MAX, "%s", cdse_store_stack_name(store, i));
    job->objective.metric = cdse_store_metric(store);
    return job;
}

/* What scan() does with each row that passes the filter: returns CDSE_OK or an error code
 * (with diag set). */
typedef int (*row_fn)(void *ctx, const cdse_record *rec, cdse_diag *diag);

static int offer_row(void *ctx, const cdse_record *rec, cdse_diag *diag)
{
    if (ranking_offer(ctx, rec) == CDSE_OK)
        return CDSE_OK;
    cdse_diag_set(diag, "out of memory after %zu rows", ((ranking *)ctx)->best.n);
    return CDSE_ENOMEM;
}

/* Reading a block of rows (HDF5: read and decompress, in a second thread) overlaps with
 * filtering and handing out the block before it (this thread): with two cores, a scan runs at
 * the speed of the slower of the two. Only the reading thread calls HDF5. */
typedef struct block_reader {
    cdse_store *store;
    const char *dataset;
    uint64_t rows;
    unsigned char *buf[2];
    size_t n[2]; /* rows in buf[i]; 0: the end (or the reader's error, rc) */
    bool full[2];
    bool quit; /* the consumer stopped early */
    int rc;
    cdse_diag diag;
    pthread_mutex_t lock;
    pthread_cond_t changed;
} block_reader;

/* A failed scan's message: the store's own messages begin with its path, others get it in
 * front (once). */
static void scan_error(const char *prog, const char *path, const char *msg)
{
    size_t n = strlen(path);
    if (strncmp(msg, path, n) == 0 && msg[n] == ':')
        fprintf(stderr, "clusterdse %s: %s\n", prog, msg);
    else
        fprintf(stderr, "clusterdse %s: %s: %s\n", prog, path, msg);
}

static void *read_blocks(void *arg)
{
    block_reader *r = arg;
    uint64_t start = 0;
    for (unsigned k = 0;; k++) {
        int i = (int)(k % 2);
        pthread_mutex_lock(&r->lock);
        while (r->full[i] && !r->quit)
            pthread_cond_wait(&r->changed, &r->lock);
        bool quit = r->quit;
        pthread_mutex_unlock(&r->lock);
        if (quit)
            return NULL;
        size_t n = r->rows - start < TOP_BLOCK_ROWS ? (size_t)(r->rows - start) : TOP_BLOCK_ROWS;
        int rc = n > 0 ? cdse_store_read_rows(r->store, r->dataset, start, n, r->buf[i], &r->diag)
                       : CDSE_OK;
        start += n;
        pthread_mutex_lock(&r->lock);
        r->n[i] = rc == CDSE_OK ? n : 0;
        r->rc = rc;
        r->full[i] = true;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        if (n == 0 || rc != CDSE_OK)
            return NULL;
    }
}

/* Waits for block k; returns its row count (0 at the end or on the reader's error). */
static size_t block_wait(block_reader *r, unsigned k)
{
    pthread_mutex_lock(&r->lock);
    while (!r->full[k % 2])
        pthread_cond_wait(&r->changed, &r->lock);
    size_t n = r->n[k % 2];
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* Gives block k back to the reader (done = false) or tells it to stop (done = true). */
static void block_release(block_reader *r, unsigned k, bool done)
{
    pthread_mutex_lock(&r->lock);
    r->full[k % 2] = false;
    r->quit = done;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

/* Hands the rows of one block that pass the filter to `fn`. */
static int scan_block(const unsigned char *buf, size_t n, const cdse_expr *where, bool all,
                      row_fn fn, void *ctx, uint64_t *matched, cdse_diag *diag)
{
    size_t row_size = cdse_store_row_size();
    int rc = CDSE_OK;
    for (size_t i = 0; rc == CDSE_OK && i < n; i++) {
        cdse_record rec;
        cdse_store_unpack(buf + i * row_size, &rec);
        if (!all && rec.result.status != CDSE_ST_OK)
            continue;
        if (where && cdse_expr_eval(where, column_get, &rec) == 0.0)
            continue;
        (*matched)++;
        rc = fn(ctx, &rec, diag);
    }
    return rc;
}

/* Streams the dataset, block by block, through the filter to `fn`; counts rows that pass. */
static int scan(cdse_store *store, const char *dataset, const cdse_expr *where, bool all, row_fn fn,
                void *ctx, uint64_t *matched, cdse_diag *diag)
{
    *matched = 0;
    if (!cdse_store_has(store, dataset)) {
        cdse_diag_set(diag,
                      strcmp(dataset, "results") == 0
                          ? "the store has no /%s (a sweep with objective.store = \"best\" keeps "
                            "only the best); allowed: --from top, pareto or pareto_cost"
                          : "the store has no /%s (made by a version before it existed)",
                      dataset);
        return CDSE_EINVAL;
    }
    block_reader r = {.store = store, .dataset = dataset};
    int rc = cdse_store_rows(store, dataset, &r.rows, diag);
    if (rc != CDSE_OK)
        return rc;
    size_t bytes = TOP_BLOCK_ROWS * cdse_store_row_size();
    r.buf[0] = malloc(bytes);
    r.buf[1] = malloc(bytes);
    pthread_t reader;
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.changed, NULL);
    if (r.buf[0] == NULL || r.buf[1] == NULL || pthread_create(&reader, NULL, read_blocks, &r)) {
        cdse_diag_set(diag, "out of memory (or threads) for reading %s", dataset);
        rc = CDSE_ENOMEM;
    } else {
        size_t n;
        unsigned k = 0;
        while (rc == CDSE_OK && (n = block_wait(&r, k)) > 0) {
            rc = scan_block(r.buf[k % 2], n, where, all, fn, ctx, matched, diag);
            block_release(&r, k++, rc != CDSE_OK);
        }
        if (rc == CDSE_OK && r.rc != CDSE_OK) { /* the reader's error, after its last block */
            rc = r.rc;
            *diag = r.diag;
        }
        pthread_join(reader, NULL);
    }
    pthread_mutex_destroy(&r.lock);
    pthread_cond_destroy(&r.changed);
    free(r.buf[0]);
    free(r.buf[1]);
    return rc;
}

static void column_names(char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int c = 0; c < cdse_column_count && used < size; c++)
        used +=
            (size_t)snprintf(out + used, size - used, "%s%s", c ? ", " : "", cdse_columns[c].name);
}

/* Compiles --where over the columns, with the store's model and system names; prints the error
 * as `clusterdse CMD: --where ...`. */
static int compile_where(const char *cmd, const char *text, const cdse_job *names,
                         cdse_expr **where)
{
    char known[2048];
    column_names(known, sizeof known);
    names_ctx ctx = {names};
    cdse_expr_env env = {column_lookup, column_string, known, &ctx, column_named};
    cdse_diag diag = {""};
    if (cdse_expr_compile(text, &env, where, &diag) == 0)
        return 0;
    fprintf(stderr, "clusterdse %s: --where %s\n", cmd, diag.msg);
    if (strstr(diag.msg, "unknown name") != NULL)
        fprintf(stderr, "columns: %s\n", known);
    return -1;
}

/* --from, or /results when the store has it, /top otherwise (saying so). */
static const char *default_dataset(const char *cmd, const cdse_store *store, const char *path,
                                   const char *from)
{
    if (from != NULL)
        return from;
    if (cdse_store_get_mode(store) != CDSE_STORE_BEST)
        return "results";
    fprintf(stderr, "clusterdse %s: %s keeps only the best (store = \"best\"): reading /top\n", cmd,
            path);
    return "top";
}

/* Says which of the printed rows lie within the first row's error band (t_low..t_high,
 * calibration/bands.cfg): their order is within the model's error. Ranking by a column that is
 * not a metric (metric < 0): nothing. */
static void band_note(const cdse_record **sorted, size_t n, int metric)
{
    if (metric < 0 || n < 2 || !(sorted[0]->time_low_s > 0.0))
        return; /* a store made before the bands has none */
    size_t within = 0, last = 0;
    for (size_t i = 1; i < n; i++)
        if (cdse_record_bands_overlap(sorted[0], sorted[i], metric)) {
            within++;
            last = i;
        }
    if (within == 0)
        printf("# no other row lies within the first row's error band (t_low..t_high)\n");
    else if (within == last)
        printf("# rows 1-%zu lie within each other's error band (t_low..t_high, docs/eval.md): "
               "their order is within the model's error\n",
               last + 1);
    else
        printf("# %zu of rows 2-%zu lie within the first row's error band (t_low..t_high, "
               "docs/eval.md): their order is within the model's error\n",
               within, last + 1);
}

/* A pruned sweep's store: how many configurations were skipped (docs/sweep.md, Pruning). */
static void note_pruned(cdse_store *store, const char *path)
{
    cdse_counts counts;
    cdse_diag ignored;
    if (cdse_store_read_counts(store, &counts, &ignored) != 0 || counts.pruned == 0)
        return;
    fprintf(stderr,
            "clusterdse top: %s was pruned (objective.prune): %llu configurations evaluated, "
            "%llu skipped by their bound; /top and /pareto are exact\n",
            path, (unsigned long long)counts.evaluated, (unsigned long long)counts.pruned);
}

static int run(const top_args *a)
{
    cdse_store_quiet_hdf5();
    cdse_cli_store_guard("clusterdse top");
    cdse_store *store = NULL;
    cdse_diag diag = {""};
    int rc = cdse_store_open(a->path, false, &store, &diag);
    if (rc != 0) {
        fprintf(stderr, "clusterdse top: %s\n", diag.msg);
        return rc == CDSE_EIO ? 2 : 1; /* unreadable or damaged: a runtime failure */
    }
    char err[1024] = "";
    cdse_job *names = names_job(store);
    ranking k;
    cdse_expr *where = NULL;
    int code = 0;
    if (names == NULL || setup_ranking(a, store, &k, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse top: %s\n", names ? err : "out of memory");
        free(names);
        cdse_store_close(store, &diag);
        return 1;
    }
    if (a->where && compile_where("top", a->where, names, &where) != 0)
        code = 1;
    const char *dataset = code == 0 ? default_dataset("top", store, a->path, a->from) : NULL;
    note_pruned(store, a->path);
    uint64_t matched = 0;
    int scanned =
        code == 0 ? scan(store, dataset, where, a->all, offer_row, &k, &matched, &diag) : 0;
    if (scanned != 0) {
        scan_error("top", a->path, diag.msg);
        code = scanned == CDSE_EINVAL ? 1 : 2;
    }
    const cdse_record **sorted = NULL;
    if (code == 0) {
        sorted = malloc((k.best.n ? k.best.n : 1) * sizeof *sorted);
        if (sorted == NULL || cdse_topk_sorted(&k.best, sorted, NULL) != CDSE_OK) {
            fprintf(stderr, "clusterdse top: out of memory sorting %zu rows\n", k.best.n);
            code = 2;
        }
    }
    if (code == 0) {
        const char *by = a->by ? a->by : cdse_metric_name(cdse_store_metric(store));
        if (a->csv) {
            cdse_csv_header(stdout);
            for (size_t i = 0; i < k.best.n; i++)
                cdse_csv_row(stdout, sorted[i], names);
        } else {
            printf("# %zu of %llu matching rows of %s/%s by %s%s%s\n", k.best.n,
                   (unsigned long long)matched, a->path, dataset, by,
                   k.metric < 0 ? (k.sign < 0 ? " (descending)" : " (ascending)") : "",
                   cdse_store_complete(store) ? "" : " [store incomplete]");
            cdse_table_header(stdout);
            for (size_t i = 0; i < k.best.n; i++)
                cdse_table_row(stdout, sorted[i], names);
            band_note(sorted, k.best.n, k.metric);
        }
        char note[CDSE_PARETO_COST_NOTE_MAX];
        if (strcmp(dataset, "pareto_cost") == 0 && k.best.n == 0 &&
            (cdse_store_pareto_cost_note(store, note, sizeof note),
             strncmp(note, "empty", 5) == 0)) {
            fprintf(stderr, "clusterdse top: note: /pareto_cost is %s\n", note);
        } else if (matched == 0 && cdse_store_get_mode(store) != CDSE_STORE_ALL)
            fprintf(stderr,
                    "clusterdse top: note: %s keeps only %s configurations (store = \"%s\"); the "
                    "others are counted in /counts but not stored\n",
                    a->path,
                    cdse_store_get_mode(store) == CDSE_STORE_BEST ? "the best" : "feasible",
                    cdse_store_get_mode(store) == CDSE_STORE_BEST ? "best" : "feasible");
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "clusterdse top: writing standard output: %s\n", strerror(errno));
            code = 2;
        }
    }
    free(sorted);
    cdse_expr_free(where);
    cdse_topk_free(&k.best);
    free(names);
    cdse_store_close(store, &diag);
    return code;
}

int cdse_cmd_top(int argc, char **argv)
{
    top_args a;
    char err[256] = "";
    if (parse_args(argc, argv, &a, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse top: %s\n%s", err, usage_text);
        return 1;
    }
    if (a.help) {
        fputs(usage_text, stdout);
        return 0;
    }
    return run(&a);
}

/* ---- export: every row, streamed --------------------------------------------------------------
 */

static const char export_usage[] =
    "usage: clusterdse export OUT.h5 [--from results|top|pareto|pareto_cost] [--where EXPR]\n"
    "                        [--feasible] [-o FILE.csv [--force]]\n"
    "\n"
    "Writes the rows of a store as CSV (the columns of `eval --csv`, header first) in the order\n"
    "they are stored, streaming: memory does not grow with the store.\n"
    "\n"
    "  --from DATASET  results (default when stored), top (best per group), pareto\n"
    "                  (time vs GPUs), pareto_cost (time vs cost to train)\n"
    "  --where EXPR    keep rows where EXPR holds (the syntax of `clusterdse top --help`)\n"
    "  --feasible      only rows with status ok (default: every stored row)\n"
    "  -o FILE         write to FILE instead of the standard output, whole or not at all (a\n"
    "                  temporary file beside it, renamed to FILE at the end)\n"
    "  --force         overwrite an existing FILE (never the store read, nor an HDF5 file)\n"
    "  -h, --help      this text\n"
    "\n"
    "exit codes: 0 done, 1 bad input (arguments, expression, not a store, FILE exists),\n"
    "            2 read or write failure (FILE is then left as it was)\n";

typedef struct export_args {
    const char *path, *from, *where, *output;
    bool feasible, force, help;
} export_args;

/* Where export_row writes (`out`, named `name`), and the names it writes. */
typedef struct export_ctx {
    FILE *out;
    const char *name;
    const cdse_job *names;
    bool write_failed;
} export_ctx;

static int parse_export(int argc, char **argv, export_args *a, char *err, size_t size)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        bool valued = strcmp(s, "--from") == 0 || strcmp(s, "--where") == 0 ||
                      strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0;
        if (valued && i + 1 >= argc) {
            snprintf(err, size, "option '%s' needs a value", s);
            return -1;
        } else if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
            a->help = true;
        } else if (strcmp(s, "--feasible") == 0) {
            a->feasible = true;
        } else if (strcmp(s, "--force") == 0) {
            a->force = true;
        } else if (valued) {
            const char **value = s[1] == 'o' || s[2] == 'o' ? &a->output
                                 : s[2] == 'f'              ? &a->from
                                                            : &a->where;
            *value = argv[++i];
        } else if (s[0] == '-' && s[1] != '\0') {
            snprintf(err, size, "unknown option %s", s);
            return -1;
        } else if (a->path == NULL) {
            a->path = s;
        } else {
            snprintf(err, size, "one store at a time (%s and %s)", a->path, s);
            return -1;
        }
    }
    if (!a->help && a->path == NULL)
        snprintf(err, size, "no store given");
    else if (a->from)
        from_valid(a->from, err, size);
    return err[0] ? -1 : 0;
}

static int export_row(void *vctx, const cdse_record *rec, cdse_diag *diag)
{
    export_ctx *ctx = vctx;
    cdse_csv_row(ctx->out, rec, ctx->names);
    if (!ferror(ctx->out))
        return CDSE_OK;
    cdse_diag_set(diag, "writing %s: %s", ctx->name, strerror(errno));
    ctx->write_failed = true;
    return CDSE_EIO;
}

/* Writes the header and the rows that pass the filter to -o (whole or not at all: a failure
 * leaves FILE as it was) or to the standard output; returns the exit code. */
static int export_rows(const export_args *a, cdse_store *store, const cdse_job *names,
                       const cdse_expr *where)
{
    cdse_output_file file;
    char err[2 * CDSE_PATH_MAX + 128];
    if (a->output != NULL && cdse_output_file_open(&file, a->output, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse export: %s\n", err);
        return 1;
    }
    export_ctx ctx = {a->output ? file.stream : stdout, a->output ? a->output : "standard output",
                      names, false};
    static char out_buf[1 << 20]; /* large writes: the export is bound by formatting */
    setvbuf(ctx.out, out_buf, _IOFBF, sizeof out_buf);
    const char *dataset = default_dataset("export", store, a->path, a->from);
    uint64_t matched = 0;
    cdse_diag diag = {""};
    cdse_csv_header(ctx.out);
    int rc = scan(store, dataset, where, !a->feasible, export_row, &ctx, &matched, &diag);
    if (rc == 0 && a->output == NULL && (fflush(stdout) != 0 || ferror(stdout))) {
        cdse_diag_set(&diag, "writing standard output: %s", strerror(errno));
        ctx.write_failed = true;
        rc = CDSE_EIO;
    }
    if (rc == 0 && a->output != NULL && cdse_output_file_commit(&file, err, sizeof err) != 0) {
        cdse_diag_set(&diag, "%s", err);
        ctx.write_failed = true;
        rc = CDSE_EIO;
    } else if (rc != 0 && a->output != NULL) {
        cdse_output_file_discard(&file);
    }
    if (rc == 0)
        return 0;
    if (ctx.write_failed)
        fprintf(stderr, "clusterdse export: %s\n", diag.msg);
    else
        scan_error("export", a->path, diag.msg);
    return rc == CDSE_EINVAL ? 1 : 2;
}

static int export_run(const export_args *a)
{
    cdse_store_quiet_hdf5();
    cdse_cli_store_guard("clusterdse export");
    cdse_store *store = NULL;
    cdse_diag diag = {""};
    int rc_open = cdse_store_open(a->path, false, &store, &diag);
    if (rc_open != 0) {
        fprintf(stderr, "clusterdse export: %s\n", diag.msg);
        return rc_open == CDSE_EIO ? 2 : 1; /* damaged: a runtime failure; not a store: input */
    }
    cdse_job *names = names_job(store);
    cdse_expr *where = NULL;
    int code = names == NULL ? 2 : 0;
    if (names == NULL)
        fprintf(stderr, "clusterdse export: out of memory\n");
    if (code == 0 && a->where && compile_where("export", a->where, names, &where) != 0)
        code = 1;
    if (code == 0)
        code = export_rows(a, store, names, where);
    cdse_expr_free(where);
    free(names);
    cdse_store_close(store, &diag);
    return code;
}

int cdse_cmd_export(int argc, char **argv)
{
    export_args a;
    char err[256] = "";
    if (parse_export(argc, argv, &a, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse export: %s\n%s", err, export_usage);
        return 1;
    }
    if (a.help) {
        fputs(export_usage, stdout);
        return 0;
    }
    /* Before the store is opened: -o must not be the store, nor anything else to keep. */
    char out_err[2 * CDSE_PATH_MAX + 128];
    if (a.output != NULL &&
        cdse_output_file_check(a.output, a.path, a.force, out_err, sizeof out_err) != 0) {
        fprintf(stderr, "clusterdse export: %s\n", out_err);
        return 1;
    }
    return export_run(&a);
}
