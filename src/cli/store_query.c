/* Reading a store's rows for top, export and compare: the names of a store, --where over the
 * columns, and a streamed scan of a dataset (the reading overlaps the filtering). */
#include "store_query.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUERY_BLOCK_ROWS 65536 /* rows read from the store at a time */

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

static const char *bool_name(const void *ctx, int i)
{
    (void)ctx;
    return i ? "true" : "false";
}

static const char *table_name(const void *ctx, int i)
{
    return ((const char *const *)ctx)[i];
}

/* The names of a column's values: name(ctx, i) for i < n; `values_text` says them in a message
 * when they are too many to list. */
typedef struct value_names {
    const char *(*name)(const void *ctx, int i);
    const void *ctx;
    int n;
    const char *values_text;
} value_names;

/* The names of the values of `col` (true and false for a bool column); false for a number
 * column. */
static bool column_value_names(const cdse_column *col, const cdse_job *job, value_names *v)
{
    *v = (value_names){NULL, job, 0, NULL};
    switch (col->kind) {
    case CDSE_COL_ENUM:
        *v = (value_names){table_name, col->names->name, col->names->n, col->names->values_text};
        break;
    case CDSE_COL_MODEL:
        v->name = model_name, v->n = job->n_models;
        break;
    case CDSE_COL_SYSTEM:
        v->name = system_name, v->n = job->n_systems;
        break;
    case CDSE_COL_STACK:
        v->name = stack_name, v->n = job->n_stacks + 1;
        break;
    case CDSE_COL_BOOL:
        v->name = bool_name, v->n = 2;
        break;
    default:
        return false;
    }
    return true;
}

/* "a, b, c": the names of `v` (or its values_text), into out. */
static void list_names(const value_names *v, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    if (v->values_text != NULL) {
        snprintf(out, size, "%s", v->values_text);
        return;
    }
    for (int k = 0; k < v->n && used < size; k++)
        used +=
            (size_t)snprintf(out + used, size - used, "%s%s", k ? ", " : "", v->name(v->ctx, k));
}

static int column_string(void *vctx, int var, const char *str, double *value, char *msg,
                         size_t size)
{
    const names_ctx *ctx = vctx;
    const cdse_column *col = &cdse_columns[var];
    value_names v;
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
    if (col->kind == CDSE_COL_BOOL || !column_value_names(col, ctx->names, &v))
        return false;
    list_names(&v, values, size);
    return true;
}

static double column_get(const void *row, int var)
{
    return cdse_column_value(&cdse_columns[var], row);
}

/* A job holding only the names the output needs. */
cdse_job *cdse_cli_names_job(const cdse_store *store)
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
void cdse_cli_scan_error(const char *prog, const char *path, const char *msg)
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
        size_t n =
            r->rows - start < QUERY_BLOCK_ROWS ? (size_t)(r->rows - start) : QUERY_BLOCK_ROWS;
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
                      cdse_cli_row_fn fn, void *ctx, uint64_t *matched, cdse_diag *diag)
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
int cdse_cli_scan(cdse_store *store, const char *dataset, const cdse_expr *where, bool all,
                  cdse_cli_row_fn fn, void *ctx, uint64_t *matched, cdse_diag *diag)
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
    size_t bytes = QUERY_BLOCK_ROWS * cdse_store_row_size();
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
bool cdse_cli_where_holds(const cdse_expr *where, const cdse_record *record)
{
    return cdse_expr_eval(where, column_get, record) != 0.0;
}

int cdse_cli_compile_where(const char *cmd, const char *text, const cdse_job *names,
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
const char *cdse_cli_default_dataset(const char *cmd, const cdse_store *store, const char *path,
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

/* A pruned sweep's store: how many configurations were skipped (docs/sweep.md, Pruning). */
