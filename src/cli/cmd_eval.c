/* clusterdse eval JOB.cfg: evaluates every configuration of a job's space in one process and
 * prints a table or CSV. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/sweep/report.h"
#include "clusterdse/sweep/table.h"
#include "clusterdse/sweep/topk.h"
#include "commands.h"
#include "dry_run.h"
#include "options.h"

/* Beyond this many configurations a single process takes minutes and prints gigabytes: the
 * distributed `clusterdse sweep` is the tool. */
#define EVAL_MAX_CONFIGS 10000000ULL

typedef struct eval_options {
    const char *job_path;
    bool csv;
    bool feasible_only;
    long best;     /* > 0: print only the N best feasible configurations */
    int metric;    /* -1: the job's objective.metric */
    bool show_job; /* print the effective job instead of evaluating */
    bool dry_run;  /* print the space and the estimated time instead of evaluating */
    bool all_given, feasible_given; /* --all, --feasible: alternatives, not both */
    const char *columns;            /* --columns: the table's columns, NULL for the choice */
} eval_options;

static int opt_help_keys(void *opt, const char *value, char *err, size_t size)
{
    (void)opt, (void)value, (void)err, (void)size;
    cdse_job_print_keys(stdout);
    return CDSE_CLI_DONE;
}
static int opt_help_columns(void *opt, const char *value, char *err, size_t size)
{
    (void)opt, (void)value, (void)err, (void)size;
    cdse_columns_print(stdout);
    return CDSE_CLI_DONE;
}
static int opt_help_hardware(void *opt, const char *value, char *err, size_t size)
{
    (void)opt, (void)value, (void)err, (void)size;
    cdse_columns_print_hardware(stdout);
    return CDSE_CLI_DONE;
}
static int opt_by(void *opt, const char *value, char *err, size_t size)
{
    (void)err, (void)size;
    ((eval_options *)opt)->metric = cdse_metric_parse(value);
    return ((eval_options *)opt)->metric < 0 ? -1 : 0;
}
static int opt_job(void *opt, const char *arg, char *err, size_t size)
{
    eval_options *o = opt;
    if (o->job_path != NULL) {
        snprintf(err, size, "unexpected argument '%s'", arg);
        return -1;
    }
    o->job_path = arg;
    return 0;
}

#define EVAL_FIELD(f) offsetof(eval_options, f)
static const cdse_cli_option options[] = {
    {"--csv", 0, NULL, "CSV with every column (header line first) instead of the table",
     CDSE_CLI_FLAG, EVAL_FIELD(csv), 0, 0, NULL, NULL},
    {"--all", 0, NULL, "print every configuration (the default)", CDSE_CLI_FLAG,
     EVAL_FIELD(all_given), 0, 0, NULL, NULL},
    {"--feasible", 0, NULL, "print only configurations with status ok", CDSE_CLI_FLAG,
     EVAL_FIELD(feasible_given), 0, 0, NULL, NULL},
    {"-n", 0, "N",
     "print only the N best feasible configurations, best first\n"
     "(ranked by objective.metric; ties by index)",
     CDSE_CLI_INT, EVAL_FIELD(best), 1, 1000000, "an integer from 1 to 1000000", NULL},
    {"--by", 0, "METRIC", "rank by METRIC instead (the metrics below)", CDSE_CLI_CALL, 0, 0, 0,
     "time_per_iteration, tokens_per_s, time_to_train, gpu_hours, mfu, cost_to_train, "
     "energy_to_train, tokens_per_kwh, time_to_train_effective, interruptions_expected, "
     "checkpoint_interval_s, goodput",
     opt_by},
    {"--columns", 0, "LIST",
     "the table's columns, names joined by ',' (--help-columns), in\n"
     "this order; default: the configuration columns whose value\n"
     "differs between the rows printed, then status, time_s,\n"
     "t_low, t_high, tok/s, mfu, mem_gib, res_gib, days and the\n"
     "ranking metric",
     CDSE_CLI_STRING, EVAL_FIELD(columns), 0, 0, NULL, NULL},
    {"--show-job", 0, NULL,
     "print the effective job (defaults resolved, models and\n"
     "systems inline) instead of evaluating it",
     CDSE_CLI_FLAG, EVAL_FIELD(show_job), 0, 0, NULL, NULL},
    {"--dry-run", 0, NULL,
     "print the space per axis, the number of configurations and\n"
     "the estimated time (rate measured on a sample) instead",
     CDSE_CLI_FLAG, EVAL_FIELD(dry_run), 0, 0, NULL, NULL},
    {"--help-keys", 0, NULL, "print the job-file key reference", CDSE_CLI_CALL, 0, 0, 0, NULL,
     opt_help_keys},
    {"--help-columns", 0, NULL, "print the output column reference", CDSE_CLI_CALL, 0, 0, 0, NULL,
     opt_help_columns},
    {"--help-hardware", 0, NULL, "print the hardware keys' columns as a markdown table",
     CDSE_CLI_CALL, 0, 0, 0, NULL, opt_help_hardware},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void usage(FILE *out);
static const cdse_cli_command eval_command = {
    "eval", options, CDSE_CLI_COUNT(options), 15, opt_job, usage,
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: clusterdse eval JOB.cfg [--csv] [--all | --feasible] [-n N] [--by METRIC]\n"
            "                       [--columns LIST]\n"
            "       clusterdse eval JOB.cfg --show-job\n"
            "       clusterdse eval --help-keys | --help-columns | --help-hardware\n"
            "\n"
            "Evaluates every configuration of the job's design space in this process (up to %llu\n"
            "configurations; use `clusterdse sweep` beyond) and prints one row per configuration\n"
            "in index order, infeasible ones included with their status.\n"
            "\n",
            (unsigned long long)EVAL_MAX_CONFIGS);
    cdse_cli_print_options(&eval_command, out);
    fputc('\n', out);
    cdse_cli_print_metrics(out);
    fprintf(out, "\nexit codes: 0 done, 1 bad input (the message names file:line and key), 2 "
                 "runtime failure\n");
}

/* Returns -1 to continue, or an exit code. */
static int parse_args(int argc, char **argv, eval_options *opt)
{
    int rc = cdse_cli_parse(&eval_command, argc, argv, opt);
    if (rc >= 0)
        return rc;
    opt->feasible_only = opt->feasible_given;
    if (opt->all_given && opt->feasible_given) {
        fprintf(stderr, "clusterdse eval: --all and --feasible exclude each other; allowed: one "
                        "of them (default: --all)\n");
        return 1;
    }
    if (opt->csv && opt->columns != NULL) {
        fprintf(stderr, "clusterdse eval: --columns chooses the table's columns; --csv writes "
                        "every column (allowed: one of them)\n");
        return 1;
    }
    if (opt->job_path == NULL) {
        usage(stderr);
        return 1;
    }
    return -1;
}

/* Prints the N best feasible configurations, best first: CSV, or the table (NULL: CSV). */
static int print_best(const eval_options *opt, const cdse_job *job, cdse_table *table, long *shown)
{
    int metric = opt->metric >= 0 ? opt->metric : job->objective.metric;
    cdse_topk best;
    cdse_topk_init(&best, (size_t)opt->best, false);
    int rc = CDSE_OK;
    cdse_record record;
    cdse_study study;
    cdse_job_study(job, &study);
    for (uint64_t i = 0; rc == CDSE_OK && i < job->space.size; i++) {
        cdse_record_eval(&study, i, &record);
        double cost = cdse_record_cost(&record, metric);
        if (record.result.status == CDSE_ST_OK && isfinite(cost))
            rc = cdse_topk_offer(&best, &record, cost);
    }
    const cdse_record **sorted = malloc((best.n ? best.n : 1) * sizeof *sorted);
    if (rc != CDSE_OK || sorted == NULL || cdse_topk_sorted(&best, sorted, NULL) != CDSE_OK) {
        free(sorted);
        cdse_topk_free(&best);
        fprintf(stderr, "clusterdse eval: out of memory for -n %ld\n", opt->best);
        return 2;
    }
    for (size_t i = 0; table != NULL && i < best.n; i++)
        cdse_table_observe(table, sorted[i]);
    if (table != NULL)
        cdse_table_print_header(table, stdout);
    for (size_t i = 0; i < best.n; i++) {
        if (table != NULL)
            cdse_table_print_row(table, stdout, sorted[i]);
        else
            cdse_csv_row(stdout, sorted[i], job);
    }
    *shown = (long)best.n;
    free(sorted);
    cdse_topk_free(&best);
    return 0;
}

/* Prints every configuration (or the feasible ones) in index order. The table sees them all
 * first (a first pass that evaluates without printing), to choose its columns. */
static long print_all(const eval_options *opt, const cdse_job *job, cdse_table *table)
{
    cdse_record record;
    long shown = 0;
    cdse_study study;
    cdse_job_study(job, &study);
    for (uint64_t i = 0; table != NULL && i < job->space.size; i++) {
        cdse_record_eval(&study, i, &record);
        if (!opt->feasible_only || record.result.status == CDSE_ST_OK)
            cdse_table_observe(table, &record);
    }
    if (table != NULL)
        cdse_table_print_header(table, stdout);
    for (uint64_t i = 0; i < job->space.size; i++) {
        cdse_record_eval(&study, i, &record);
        if (opt->feasible_only && record.result.status != CDSE_ST_OK)
            continue;
        if (table != NULL)
            cdse_table_print_row(table, stdout, &record);
        else
            cdse_csv_row(stdout, &record, job);
        shown++;
    }
    return shown;
}

int cdse_cmd_eval(int argc, char **argv)
{
    eval_options opt = {NULL, false, false, 0, -1, false, false, false, false, NULL};
    int rc = parse_args(argc, argv, &opt);
    if (rc >= 0)
        return rc;
    cdse_job *job = calloc(1, sizeof *job);
    if (job == NULL) {
        fprintf(stderr, "clusterdse eval: out of memory\n");
        return 2;
    }
    cdse_diag diag = {{0}};
    rc = cdse_job_load_file(opt.job_path, job, &diag);
    if (rc != 0) {
        fprintf(stderr, "%s\n", diag.msg);
        free(job);
        return rc == CDSE_ENOMEM ? 2 : 1;
    }
    if (opt.show_job || opt.dry_run) {
        if (opt.dry_run)
            cdse_dry_run(job, 1, false, stdout);
        else
            cdse_job_print(stdout, job);
        cdse_job_free(job);
        free(job);
        return 0;
    }
    if (job->space.size > EVAL_MAX_CONFIGS) {
        fprintf(stderr,
                "%s: the space has %llu configurations; allowed for eval: at most %llu (run "
                "`clusterdse sweep %s` for larger spaces)\n",
                opt.job_path, (unsigned long long)job->space.size,
                (unsigned long long)EVAL_MAX_CONFIGS, opt.job_path);
        cdse_job_free(job);
        free(job);
        return 1;
    }
    cdse_table *table = opt.csv ? NULL : malloc(sizeof *table);
    char err[4096];
    int metric = opt.metric >= 0 ? opt.metric : job->objective.metric;
    rc = 0;
    if (!opt.csv && table == NULL) {
        fprintf(stderr, "clusterdse eval: out of memory\n");
        rc = 2;
    } else if (table != NULL && cdse_table_init(table, job, cdse_table_metric_column(metric),
                                                opt.columns, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse eval: %s\n", err);
        rc = 1;
    }
    if (rc != 0) {
        free(table);
        cdse_job_free(job);
        free(job);
        return rc;
    }
    if (opt.csv)
        cdse_csv_header(stdout);
    long shown = 0;
    if (opt.best > 0)
        rc = print_best(&opt, job, table, &shown);
    else
        shown = print_all(&opt, job, table);
    free(table);
    if (rc == 0 && shown == 0)
        fprintf(stderr,
                "clusterdse eval: no feasible configuration among the %llu of %s; without -n "
                "and --feasible each is listed with the reason (status)\n",
                (unsigned long long)job->space.size, opt.job_path);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "clusterdse eval: writing standard output: %s\n", strerror(errno));
        rc = 2;
    }
    cdse_job_free(job);
    free(job);
    return rc;
}
