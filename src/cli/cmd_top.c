/* clusterdse top: the best rows of a store by a metric or column, with a filter. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/sweep/expr.h"
#include "clusterdse/sweep/store.h"
#include "clusterdse/sweep/table.h"
#include "clusterdse/sweep/topk.h"
#include "commands.h"
#include "output_dir.h"
#include "options.h"
#include "output_file.h"
#include "store_query.h"
#include "store_guard.h"

#define TOP_DEFAULT_ROWS 10

static const char usage_head[] =
    "usage: clusterdse top OUT.h5 [-n N] [--by METRIC|COLUMN] [--where EXPR] [--csv]\n"
    "                     [--from results|top|pareto|pareto_cost] [--all] [--asc|--desc]\n"
    "                     [--columns LIST]\n"
    "\n"
    "Prints the best rows of a sweep's store.\n"
    "\n";
static const char exit_text[] =
    "\nexit codes: 0 done, 1 bad input (arguments, expression, not a store), 2 read failure\n";

/* The datasets of a sweep store that --from takes. */
static const char from_allowed[] = "results, top, pareto or pareto_cost";

/* Whether --from names a dataset of a sweep store; otherwise says what is allowed. */
static int from_valid(const char *from)
{
    static const char *const sets[] = {"results", "top", "pareto", "pareto_cost"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (strcmp(from, sets[i]) == 0)
            return 0;
    return -1;
}

typedef struct top_args {
    const char *path;
    long n;
    const char *by;
    const char *where;
    const char *from;
    const char *columns;
    bool csv, all, desc, asc;
} top_args;

/* A store's path: one. */
static int top_store(void *args, const char *arg, char *err, size_t size)
{
    top_args *a = args;
    if (a->path != NULL) {
        snprintf(err, size, "one store at a time (%s and %s)", a->path, arg);
        return -1;
    }
    a->path = arg;
    return 0;
}

static int top_from(void *args, const char *value, char *err, size_t size)
{
    (void)err, (void)size;
    ((top_args *)args)->from = value;
    return from_valid(value);
}

#define TOP_FIELD(f) offsetof(top_args, f)
static const cdse_cli_option top_options[] = {
    {"-n", 0, "N", "rows to print (default 10)", CDSE_CLI_INT, TOP_FIELD(n), 1, (double)LONG_MAX,
     "a positive integer", NULL},
    {"--by", 0, "NAME",
     "rank by a metric (below: best first) or by any column (ascending;\n"
     "see --desc).\n"
     "Default: the job's objective.metric",
     CDSE_CLI_STRING, TOP_FIELD(by), 0, 0, NULL, NULL},
    {"--where", 0, "EXPR",
     "keep rows where EXPR holds, e.g.\n"
     "  'tp==8 && mem_total_gib<70'\n"
     "  'model==\"llama3-70b\" && (recompute==\"none\" || pp<=4)'\n"
     "operators: || && ! == != < <= > >= + - * / ( ); model, system, status,\n"
     "recompute, precision, offload, pool_split, placement, recompute_modules,\n"
     "moe_dispatcher, moe_overlap and stack compare (== !=) with strings only;\n"
     "true/false with sequence_parallel, flash_attention, tp_comm_overlap",
     CDSE_CLI_STRING, TOP_FIELD(where), 0, 0, NULL, NULL},
    {"--csv", 0, NULL, "CSV with every column (the columns of `eval --csv`)", CDSE_CLI_FLAG,
     TOP_FIELD(csv), 0, 0, NULL, NULL},
    {"--columns", 0, "LIST",
     "the table's columns, names joined by ',' (eval --help-columns), in\n"
     "this order; default: the configuration columns whose value differs\n"
     "between the rows printed (the others on a '# same in every row:'\n"
     "line), then status, time_s, t_low, t_high, tok/s, mfu, mem_gib,\n"
     "res_gib, days (t_low, t_high, res_gib when the store has them)\n"
     "and --by",
     CDSE_CLI_STRING, TOP_FIELD(columns), 0, 0, NULL, NULL},
    {"--from", 0, "DATASET",
     "results (default when stored), top (best per group), pareto\n"
     "(time vs GPUs), pareto_cost (time vs cost to train)",
     CDSE_CLI_CALL, 0, 0, 0, from_allowed, top_from},
    {"--all", 0, NULL, "include infeasible rows (default: status == \"ok\" only)", CDSE_CLI_FLAG,
     TOP_FIELD(all), 0, 0, NULL, NULL},
    {"--asc", 0, NULL, NULL, CDSE_CLI_FLAG, TOP_FIELD(asc), 0, 0, NULL, NULL},
    {"--desc", 0, NULL, "direction when ranking by a column", CDSE_CLI_FLAG, TOP_FIELD(desc), 0, 0,
     NULL, NULL},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void top_usage(FILE *out);
static const cdse_cli_command top_command = {
    "top", top_options, CDSE_CLI_COUNT(top_options), 15, top_store, top_usage,
};

/* -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, top_args *a)
{
    memset(a, 0, sizeof *a);
    a->n = TOP_DEFAULT_ROWS;
    int rc = cdse_cli_parse(&top_command, argc, argv, a);
    if (rc >= 0)
        return rc;
    const char *err = NULL;
    if (a->path == NULL)
        err = "no store given";
    else if (a->asc && a->desc)
        err = "--asc and --desc exclude each other";
    else if (a->csv && a->columns)
        err = "--columns chooses the table's columns; --csv writes every column "
              "(allowed: one of them)";
    if (err == NULL)
        return -1;
    fprintf(stderr, "clusterdse top: %s\n", err);
    top_usage(stderr);
    return 1;
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
                     "time_to_train, gpu_hours, mfu, ... goodput; see --help) nor a column "
                     "(clusterdse eval --help-columns)",
                     by);
            return -1;
        }
    }
    cdse_topk_init(&k->best, (size_t)a->n, false);
    return 0;
}

/* ---- main ----------------------------------------------------------------------------------- */

static int offer_row(void *ctx, const cdse_record *rec, cdse_diag *diag)
{
    if (ranking_offer(ctx, rec) == CDSE_OK)
        return CDSE_OK;
    cdse_diag_set(diag, "out of memory after %zu rows", ((ranking *)ctx)->best.n);
    return CDSE_ENOMEM;
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

/* Prints the ranked rows (CSV, or the table with its header line and the band note) and the
 * notes on what the store does not hold; 0, or 2 when the standard output fails. */
static int print_ranked(const top_args *a, cdse_store *store, const cdse_job *names,
                        const ranking *k, cdse_table *table, const cdse_record **sorted,
                        uint64_t matched, const char *dataset)
{
    const char *by = a->by ? a->by : cdse_metric_name(cdse_store_metric(store));
    if (a->csv) {
        cdse_csv_header(stdout);
        for (size_t i = 0; i < k->best.n; i++)
            cdse_csv_row(stdout, sorted[i], names);
    } else {
        printf("# %zu of %llu matching rows of %s/%s by %s%s%s\n", k->best.n,
               (unsigned long long)matched, a->path, dataset, by,
               k->metric < 0 ? (k->sign < 0 ? " (descending)" : " (ascending)") : "",
               cdse_store_complete(store) ? "" : " [store incomplete]");
        for (size_t i = 0; i < k->best.n; i++)
            cdse_table_observe(table, sorted[i]);
        cdse_table_print_header(table, stdout);
        for (size_t i = 0; i < k->best.n; i++)
            cdse_table_print_row(table, stdout, sorted[i]);
        band_note(sorted, k->best.n, k->metric);
    }
    char note[CDSE_PARETO_COST_NOTE_MAX];
    if (strcmp(dataset, "pareto_cost") == 0 && k->best.n == 0 &&
        (cdse_store_pareto_cost_note(store, note, sizeof note), strncmp(note, "empty", 5) == 0)) {
        fprintf(stderr, "clusterdse top: note: /pareto_cost is %s\n", note);
    } else if (matched == 0 && cdse_store_get_mode(store) != CDSE_STORE_ALL)
        fprintf(stderr,
                "clusterdse top: note: %s keeps only %s configurations (store = \"%s\"); the "
                "others are counted in /counts but not stored\n",
                a->path, cdse_store_get_mode(store) == CDSE_STORE_BEST ? "the best" : "feasible",
                cdse_store_get_mode(store) == CDSE_STORE_BEST ? "best" : "feasible");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "clusterdse top: writing standard output: %s\n", strerror(errno));
        return 2;
    }
    return 0;
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
    char err[4096] = "";
    cdse_job *names = cdse_cli_names_job(store);
    ranking k;
    cdse_expr *where = NULL;
    int code = 0;
    if (names == NULL || setup_ranking(a, store, &k, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse top: %s\n", names ? err : "out of memory");
        free(names);
        cdse_store_close(store, &diag);
        return 1;
    }
    if (a->where && cdse_cli_compile_where("top", a->where, names, &where) != 0)
        code = 1;
    cdse_table *table = malloc(sizeof *table);
    const char *key = k.metric >= 0 ? cdse_table_metric_column(k.metric) : k.column->name;
    if (code == 0 && table == NULL) {
        fprintf(stderr, "clusterdse top: out of memory\n");
        code = 2;
    } else if (code == 0 && cdse_table_init(table, names, key, a->columns, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse top: %s\n", err);
        code = 1;
    }
    const char *dataset =
        code == 0 ? cdse_cli_default_dataset("top", store, a->path, a->from) : NULL;
    note_pruned(store, a->path);
    uint64_t matched = 0;
    int scanned = code == 0
                      ? cdse_cli_scan(store, dataset, where, a->all, offer_row, &k, &matched, &diag)
                      : 0;
    if (scanned != 0) {
        cdse_cli_scan_error("top", a->path, diag.msg);
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
    if (code == 0)
        code = print_ranked(a, store, names, &k, table, sorted, matched, dataset);
    free(sorted);
    free(table);
    cdse_expr_free(where);
    cdse_topk_free(&k.best);
    free(names);
    cdse_store_close(store, &diag);
    return code;
}

static void top_usage(FILE *out)
{
    fputs(usage_head, out);
    cdse_cli_print_options(&top_command, out);
    fputc('\n', out);
    cdse_cli_print_metrics(out);
    fputs(exit_text, out);
}

int cdse_cmd_top(int argc, char **argv)
{
    top_args a;
    int rc = parse_args(argc, argv, &a);
    return rc >= 0 ? rc : run(&a);
}

/* ---- export: every row, streamed --------------------------------------------------------------
 */

static const char export_usage_head[] =
    "usage: clusterdse export OUT.h5 [--from results|top|pareto|pareto_cost] [--where EXPR]\n"
    "                        [--feasible] [-o FILE.csv [--force]]\n"
    "\n"
    "Writes the rows of a store as CSV (the columns of `eval --csv`, header first) in the order\n"
    "they are stored, streaming: memory does not grow with the store.\n"
    "\n";
static const char export_usage_tail[] =
    "\n"
    "exit codes: 0 done, 1 bad input (arguments, expression, not a store, FILE exists),\n"
    "            2 read or write failure (FILE is then left as it was)\n";

typedef struct export_args {
    const char *path, *from, *where, *output;
    bool feasible, force;
} export_args;

/* Where export_row writes (`out`, named `name`), and the names it writes. */
typedef struct export_ctx {
    FILE *out;
    const char *name;
    const cdse_job *names;
    bool write_failed;
} export_ctx;

static int export_store(void *args, const char *arg, char *err, size_t size)
{
    export_args *a = args;
    if (a->path != NULL) {
        snprintf(err, size, "one store at a time (%s and %s)", a->path, arg);
        return -1;
    }
    a->path = arg;
    return 0;
}

static int export_from(void *args, const char *value, char *err, size_t size)
{
    (void)err, (void)size;
    ((export_args *)args)->from = value;
    return from_valid(value);
}

#define EXPORT_FIELD(f) offsetof(export_args, f)
static const cdse_cli_option export_options[] = {
    {"--from", 0, "DATASET",
     "results (default when stored), top (best per group), pareto\n"
     "(time vs GPUs), pareto_cost (time vs cost to train)",
     CDSE_CLI_CALL, 0, 0, 0, from_allowed, export_from},
    {"--where", 0, "EXPR", "keep rows where EXPR holds (the syntax of `clusterdse top --help`)",
     CDSE_CLI_STRING, EXPORT_FIELD(where), 0, 0, NULL, NULL},
    {"--feasible", 0, NULL, "only rows with status ok (default: every stored row)", CDSE_CLI_FLAG,
     EXPORT_FIELD(feasible), 0, 0, NULL, NULL},
    {"--output", 'o', "FILE",
     "write to FILE instead of the standard output, whole or not at all (a\n"
     "temporary file beside it, renamed to FILE at the end)",
     CDSE_CLI_STRING, EXPORT_FIELD(output), 0, 0, NULL, NULL},
    {"--force", 0, NULL, "overwrite an existing FILE (never the store read, nor an HDF5 file)",
     CDSE_CLI_FLAG, EXPORT_FIELD(force), 0, 0, NULL, NULL},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void export_usage(FILE *out);
static const cdse_cli_command export_command = {
    "export", export_options, CDSE_CLI_COUNT(export_options), 15, export_store, export_usage,
};

static void export_usage(FILE *out)
{
    fputs(export_usage_head, out);
    cdse_cli_print_options(&export_command, out);
    fputs(export_usage_tail, out);
}

/* -1 to go on, else the exit code. */
static int parse_export(int argc, char **argv, export_args *a)
{
    memset(a, 0, sizeof *a);
    int rc = cdse_cli_parse(&export_command, argc, argv, a);
    if (rc >= 0)
        return rc;
    if (a->path != NULL)
        return -1;
    fprintf(stderr, "clusterdse export: no store given\n");
    export_usage(stderr);
    return 1;
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
    const char *dataset = cdse_cli_default_dataset("export", store, a->path, a->from);
    uint64_t matched = 0;
    cdse_diag diag = {""};
    cdse_csv_header(ctx.out);
    int rc = cdse_cli_scan(store, dataset, where, !a->feasible, export_row, &ctx, &matched, &diag);
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
        cdse_cli_scan_error("export", a->path, diag.msg);
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
    cdse_job *names = cdse_cli_names_job(store);
    cdse_expr *where = NULL;
    int code = names == NULL ? 2 : 0;
    if (names == NULL)
        fprintf(stderr, "clusterdse export: out of memory\n");
    if (code == 0 && a->where && cdse_cli_compile_where("export", a->where, names, &where) != 0)
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
    int rc = parse_export(argc, argv, &a);
    if (rc >= 0)
        return rc;
    /* Before the store is opened: -o must not be the store, nor anything else to keep. */
    char out_err[2 * CDSE_PATH_MAX + 128];
    if (a.output != NULL &&
        (cdse_output_path_check("-o", a.output, out_err, sizeof out_err) != 0 ||
         cdse_output_file_check(a.output, a.path, a.force, out_err, sizeof out_err) != 0)) {
        fprintf(stderr, "clusterdse export: %s\n", out_err);
        return 1;
    }
    return export_run(&a);
}
