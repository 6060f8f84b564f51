/* clusterdse compare: the best configuration of each system of a store side by side, with each
 * quantity's ratio to the first system's. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/model/cost.h"
#include "clusterdse/sweep/report.h"
#include "clusterdse/sweep/store.h"
#include "clusterdse/sweep/table.h"
#include "commands.h"
#include "options.h"
#include "store_guard.h"
#include "store_query.h"

static const char usage_head[] =
    "usage: clusterdse compare OUT.h5 [--by METRIC] [--where EXPR] [--gpus N]\n"
    "\n"
    "Prints the best feasible configuration of each system of a sweep's store side by side,\n"
    "with each quantity's ratio to the first system's, and says what cost_to_train includes.\n"
    "A job that gives gpus or nodes per system compares, e.g., 4,096 H100 with 2,048 B200.\n"
    "It reads /results; a store with only /top (objective.store = \"best\") answers from /top\n"
    "what /top holds, and refuses what it cannot answer from it.\n"
    "\n";
static const char usage_tail[] =
    "\n"
    "exit codes: 0 done, 1 bad input (arguments, expression, not a store, a question /top\n"
    "            cannot answer), 2 read failure\n";

/* The quantities always printed, as store columns; the configuration columns whose value differs
 * between the systems' best rows follow microbatch. */
static const char *const quantities[] = {
    "gpus",
    "tp",
    "pp",
    "dp",
    "microbatch",
    "time_per_iteration_s",
    "time_low_s",
    "time_high_s",
    "tokens_per_s",
    "mfu",
    "mem_total_gib",
    "mem_reserved_gib",
    "time_to_train_days",
    "time_to_train_days_low",
    "time_to_train_days_high",
    "gpu_hours",
    "cost_to_train",
    "energy_to_train_mwh",
    "tokens_per_kwh",
};
#define N_QUANTITIES       (sizeof quantities / sizeof quantities[0])
#define FIRST_AFTER_CONFIG 5 /* time_per_iteration_s */

/* Configuration columns printed when the systems' best rows differ in them. */
static const char *const knobs[] = {
    "cp",
    "ep",
    "etp",
    "vpp",
    "global_batch",
    "recompute",
    "sequence_parallel",
    "zero",
    "precision",
    "flash_attention",
    "offload",
    "tp_comm_overlap",
    "placement",
    "moe_dispatcher",
    "moe_overlap",
    "stack",
    /* a heterogeneous pool's partition (docs/job-file.md, Heterogeneous pools) */
    "pool_split",
    "pool_layers_0",
    "pool_layers_1",
    "pool_layers_2",
    "pool_layers_3",
    "pool_microbatches_0",
    "pool_microbatches_1",
    "pool_microbatches_2",
    "pool_microbatches_3",
    "pool_tp_0",
    "pool_tp_1",
    "pool_tp_2",
    "pool_tp_3",
};

typedef struct compare_args {
    const char *path, *by, *where;
    long gpus; /* 0: any */
} compare_args;

typedef struct best_rows {
    int metric;
    cdse_record *best; /* [CDSE_MAX_SYSTEMS] */
    bool found[CDSE_MAX_SYSTEMS];
} best_rows;

static int offer_best(void *ctx, const cdse_record *rec, cdse_diag *diag)
{
    (void)diag;
    best_rows *b = ctx;
    int s = rec->system;
    if (s < 0 || s >= CDSE_MAX_SYSTEMS)
        return CDSE_OK;
    double cost = cdse_record_cost(rec, b->metric);
    double held = b->found[s] ? cdse_record_cost(&b->best[s], b->metric) : 0.0;
    if (!b->found[s] || cost < held || (cost == held && rec->index < b->best[s].index)) {
        b->best[s] = *rec;
        b->found[s] = true;
    }
    return CDSE_OK;
}

static int compare_store(void *args, const char *arg, char *err, size_t size)
{
    compare_args *a = args;
    if (a->path != NULL) {
        snprintf(err, size, "one store at a time (%s and %s)", a->path, arg);
        return -1;
    }
    a->path = arg;
    return 0;
}

static int compare_by(void *args, const char *value, char *err, size_t size)
{
    (void)err, (void)size;
    ((compare_args *)args)->by = value;
    return cdse_metric_parse(value) < 0 ? -1 : 0;
}

#define COMPARE_FIELD(f) offsetof(compare_args, f)
static const cdse_cli_option compare_options[] = {
    {"--by", 0, "METRIC",
     "time_per_iteration, tokens_per_s, time_to_train, gpu_hours, mfu,\n"
     "cost_to_train, energy_to_train, tokens_per_kwh,\n"
     "time_to_train_effective, interruptions_expected,\n"
     "checkpoint_interval_s, goodput (default: the job's)",
     CDSE_CLI_CALL, 0, 0, 0, "a metric (see --help)", compare_by},
    {"--where", 0, "EXPR",
     "only rows where EXPR holds (the syntax of `clusterdse top --help`),\n"
     "e.g. 'precision==\"bf16\" && tp<=4'",
     CDSE_CLI_STRING, COMPARE_FIELD(where), 0, 0, NULL, NULL},
    {"--gpus", 0, "N", "only configurations on N GPUs (\"at 1,024 GPUs, which system?\")",
     CDSE_CLI_INT, COMPARE_FIELD(gpus), 1, 1000000000, "a positive integer", NULL},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void compare_usage(FILE *out);
static const cdse_cli_command compare_command = {
    "compare", compare_options, CDSE_CLI_COUNT(compare_options), 15, compare_store, compare_usage,
};

static void compare_usage(FILE *out)
{
    fputs(usage_head, out);
    cdse_cli_print_options(&compare_command, out);
    fputs(usage_tail, out);
}

/* -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, compare_args *a)
{
    memset(a, 0, sizeof *a);
    int rc = cdse_cli_parse(&compare_command, argc, argv, a);
    if (rc >= 0)
        return rc;
    if (a->path != NULL)
        return -1;
    fprintf(stderr, "clusterdse compare: a store is required\n");
    compare_usage(stderr);
    return 1;
}

/* "overall", "per system", "per (system, gpus)": objective.group_by in words. */
static void groups_text(int group_by, char *out, size_t size)
{
    static const char *const names[] = {"model",        "system",    "gpus",
                                        "global_batch", "precision", "design"};
    size_t used = 0;
    int n = 0;
    for (int b = 0; b < 6; b++)
        n += (group_by >> b) & 1;
    if (n == 0) {
        snprintf(out, size, "overall");
        return;
    }
    used += (size_t)snprintf(out, size, "per %s", n > 1 ? "(" : "");
    for (int b = 0, k = 0; b < 6 && used < size; b++)
        if ((group_by >> b) & 1)
            used += (size_t)snprintf(out + used, size - used, "%s%s", k++ ? ", " : "", names[b]);
    if (n > 1 && used < size)
        snprintf(out + used, size - used, ")");
}

/* What a /top-only store can answer: -1 when it can (with the words for what /top holds in
 * `holds`), else the exit code after a message. `job` is the store's job (NULL if it did not
 * load). */
static int top_only_check(const compare_args *a, const cdse_store *store, const cdse_job *job,
                          int metric, char *holds, size_t size)
{
    int stored = cdse_store_metric(store);
    char groups[96] = "per group";
    if (job != NULL)
        groups_text(job->objective.group_by, groups, sizeof groups);
    if (job != NULL)
        snprintf(holds, size,
                 "/top holds the %d best %s by %s (objective.store = \"best\": "
                 "/results was not stored)",
                 job->objective.top, groups, cdse_metric_name(stored));
    else
        snprintf(holds, size,
                 "/top holds the best per group by %s (objective.store = \"best\": "
                 "/results was not stored)",
                 cdse_metric_name(stored));
    const char *why = NULL;
    if (metric != stored)
        why = "the best by another metric than the job's is not stored";
    else if (a->where != NULL)
        why = "the best rows matching an expression are not stored";
    else if (a->gpus > 0 && (job == NULL || !(job->objective.group_by & CDSE_GROUP_GPUS)))
        why = "the best on a GPU count is stored only with group_by including \"gpus\"";
    if (why == NULL)
        return -1;
    fprintf(stderr,
            "clusterdse compare: %s: %s; %s. Allowed on this store: compare without --where, "
            "--by %s%s; or sweep with objective.store = \"feasible\" to keep every feasible "
            "row\n",
            a->path, why, holds, cdse_metric_name(stored),
            job != NULL && (job->objective.group_by & CDSE_GROUP_GPUS) ? ", --gpus N" : "");
    return 1;
}

/* Whether system s's best in /top is its best: /top keeps the best per group, so a system that
 * is a group key, or a grouping by nothing else, keeps each present system's best. */
static bool top_exact(const cdse_job *job)
{
    return job != NULL && ((job->objective.group_by & CDSE_GROUP_SYSTEM) ||
                           (job->objective.group_by & ~CDSE_GROUP_SYSTEM) == 0);
}

static void print_value(FILE *out, const cdse_column *c, const cdse_record *rec,
                        const cdse_job *names, double base)
{
    char cell[64];
    if (c->kind != CDSE_COL_F64 && c->kind != CDSE_COL_I32 && c->kind != CDSE_COL_U64) {
        cdse_column_format(c, rec, names, cell, sizeof cell);
    } else {
        double v = cdse_column_value(c, rec);
        if (base != 0.0)
            snprintf(cell, sizeof cell, "%.6g (%.3gx)", v, v / base);
        else
            snprintf(cell, sizeof cell, "%.6g", v);
    }
    fprintf(out, " %24s", cell);
}

static void print_row(FILE *out, const char *name, const best_rows *b, int n, int first,
                      const cdse_job *names)
{
    const cdse_column *c = cdse_column_find(name);
    double base = cdse_column_value(c, &b->best[first]);
    fprintf(out, "  %-22s", name);
    for (int s = 0; s < n; s++)
        if (b->found[s])
            print_value(out, c, &b->best[s], names, base);
    fputc('\n', out);
}

/* The knobs whose value differs between the systems' best rows. */
static bool knob_varies(const char *name, const best_rows *b, int n, int first)
{
    const cdse_column *c = cdse_column_find(name);
    for (int s = 0; s < n; s++)
        if (b->found[s] &&
            cdse_column_value(c, &b->best[s]) != cdse_column_value(c, &b->best[first]))
            return true;
    return false;
}

static void print_table(FILE *out, const cdse_store *store, const best_rows *b,
                        const cdse_job *names)
{
    int n = cdse_store_n_systems(store), first = -1;
    fprintf(out, "# %-22s", "quantity");
    for (int s = 0; s < n; s++)
        if (b->found[s]) {
            fprintf(out, " %24s", cdse_store_system_name(store, s));
            first = first < 0 ? s : first;
        }
    fputc('\n', out);
    for (size_t q = 0; first >= 0 && q < N_QUANTITIES; q++) {
        if (q == FIRST_AFTER_CONFIG)
            for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++)
                if (knob_varies(knobs[k], b, n, first))
                    print_row(out, knobs[k], b, n, first, names);
        print_row(out, quantities[q], b, n, first, names);
    }
}

/* Which systems' best lie within the error band (time_low_s..time_high_s, docs/eval.md) of
 * the best of all: between those the comparison is within the model's error. */
static void band_note(FILE *out, const cdse_store *store, const best_rows *b)
{
    int n = cdse_store_n_systems(store), top = -1;
    for (int s = 0; s < n; s++)
        if (b->found[s] && (top < 0 || cdse_record_cost(&b->best[s], b->metric) <
                                           cdse_record_cost(&b->best[top], b->metric)))
            top = s;
    if (top < 0 || !(b->best[top].time_low_s > 0.0))
        return; /* no feasible row, or a store made before the bands */
    int within = 0;
    for (int s = 0; s < n; s++)
        if (b->found[s] && s != top &&
            cdse_record_bands_overlap(&b->best[top], &b->best[s], b->metric)) {
            if (within++ == 0)
                fprintf(out,
                        "# within the error band of the best (%s, t_low..t_high, "
                        "docs/eval.md):",
                        cdse_store_system_name(store, top));
            fprintf(out, " %s", cdse_store_system_name(store, s));
        }
    if (within > 0)
        fputs(": their order is within the model's error\n", out);
    else
        fprintf(out, "# no other system's best lies within the error band of the best (%s)\n",
                cdse_store_system_name(store, top));
}

/* A pool's cost_to_train: the sum of its types' bills for the GPUs the configuration takes of
 * each (model/cost.h cdse_pool_bill). */
static void print_pool_cost(FILE *out, const char *name, const cdse_job *job,
                            const cdse_system *pool, int gpus)
{
    int g[CDSE_MAX_POOL_TYPES];
    const char *cur = job->objective.currency;
    if (!cdse_pool_take(pool->pool.gpus, pool->pool.n_types, gpus, g))
        return;
    fprintf(out, "# cost_to_train of %s: the sum of its types' bills:", name);
    for (int t = 0; t < pool->pool.n_types; t++) {
        const cdse_system *type = &job->system[pool->pool.member[t]];
        const cdse_cost *c = &type->cost;
        if (c->rental_price > 0.0) {
            fprintf(out, "%s %d %s rented at %g %s per GPU-hour", t ? " +" : "", g[t], type->name,
                    c->rental_price, cur);
            continue;
        }
        double ports = 0.0;
        for (int l = 0; l < type->n_levels; l++)
            ports += type->level[l].port_price;
        fprintf(out, "%s %d %s bought at %g %s per GPU (with facility and ports) over %g years",
                t ? " +" : "", g[t], type->name, c->gpu_price + c->facility_price + ports, cur,
                c->amortization_years);
    }
    if (job->objective.electricity_price > 0.0)
        fprintf(out, "; electricity at %g %s per kWh\n", job->objective.electricity_price, cur);
    else
        fprintf(out, "; electricity left out (the job sets no objective.electricity_price)\n");
}

/* What each system's cost_to_train counts (src/sweep/report.c, record_cost), in words. */
static void print_cost_notes(FILE *out, const cdse_store *store, const best_rows *b,
                             const cdse_job *job)
{
    int n = cdse_store_n_systems(store);
    for (int s = 0; s < n; s++) {
        if (!b->found[s])
            continue;
        const cdse_record *r = &b->best[s];
        const char *name = cdse_store_system_name(store, s);
        if (job == NULL) {
            fprintf(out,
                    "# cost_to_train of %s: see docs/job-file.md (the store's job did not "
                    "load, so its parts are not named here)\n",
                    name);
            continue;
        }
        cdse_system sys;
        cdse_study study;
        cdse_job_study(job, &study);
        cdse_record_system(&study, r->index, &sys);
        const cdse_cost *c = &sys.cost;
        const char *cur = job->objective.currency;
        if (r->cost_to_train == 0.0) {
            fprintf(out, "# cost_to_train of %s: 0: %s\n", name,
                    job->objective.tokens > 0 ? "the system has no price (cost.gpu_price or "
                                                "cost.rental_price)"
                                              : "the job has no token budget (objective.tokens)");
        } else if (sys.pool.n_types > 0) {
            print_pool_cost(out, name, job, &sys, r->strategy.gpus);
        } else if (c->rental_price > 0.0) {
            fprintf(out,
                    "# cost_to_train of %s: rental, %g %s per GPU-hour x GPUs x hours "
                    "(power included in the rate)\n",
                    name, c->rental_price, cur);
        } else {
            double ports = 0.0;
            for (int l = 0; l < sys.n_levels; l++)
                ports += sys.level[l].port_price;
            fprintf(out,
                    "# cost_to_train of %s: purchase per GPU (GPU %g + facility %g + network "
                    "ports %g %s) amortized over %g years",
                    name, c->gpu_price, c->facility_price, ports, cur, c->amortization_years);
            if (job->objective.electricity_price > 0.0)
                fprintf(out, " + electricity at %g %s per kWh (PUE %g)\n",
                        job->objective.electricity_price, cur, c->pue);
            else
                fprintf(out, "; electricity left out (the job sets no "
                             "objective.electricity_price)\n");
        }
    }
}

/* The store's job, for group_by, top and the cost parts; NULL (not an error) if it does not
 * load, e.g. a profile it names was removed since. */
static cdse_job *store_job(cdse_store *store, const char *path)
{
    char job_path[CDSE_PATH_MAX];
    char *text = NULL;
    cdse_diag diag = {""};
    cdse_job *job = calloc(1, sizeof *job);
    if (job == NULL || cdse_store_job_path(store, job_path, sizeof job_path, &diag) != 0 ||
        cdse_store_job_text(store, &text, &diag) != 0 ||
        cdse_job_load_text(text, job_path[0] ? job_path : path, job, &diag) != 0) {
        free(job);
        job = NULL;
    }
    free(text);
    return job;
}

/* --where and --gpus as one expression (NULL for none); false when out of memory. */
static bool filter_text(const compare_args *a, char **text)
{
    *text = NULL;
    if (a->where == NULL && a->gpus == 0)
        return true;
    size_t size = (a->where ? strlen(a->where) : 0) + 64;
    *text = malloc(size);
    if (*text == NULL)
        return false;
    if (a->where && a->gpus)
        snprintf(*text, size, "(%s) && gpus == %ld", a->where, a->gpus);
    else if (a->where)
        snprintf(*text, size, "%s", a->where);
    else
        snprintf(*text, size, "gpus == %ld", a->gpus);
    return true;
}

static void print_heading(FILE *out, const compare_args *a, const char *dataset, uint64_t matched,
                          int metric, const char *holds)
{
    fprintf(out, "# best per system by %s (%s is better) among %llu feasible rows of /%s",
            cdse_metric_name(metric), cdse_metric_higher_is_better(metric) ? "higher" : "lower",
            (unsigned long long)matched, dataset);
    if (a->gpus)
        fprintf(out, " on %ld GPUs", a->gpus);
    if (a->where)
        fprintf(out, " where %s", a->where);
    fprintf(out, "; (x) = ratio to the first system\n");
    if (holds[0])
        fprintf(out, "# %s\n", holds);
}

/* The systems without a row, and why. */
static void print_missing(FILE *out, const compare_args *a, const cdse_store *store,
                          const best_rows *b, bool from_top, const cdse_job *job)
{
    for (int s = 0; s < cdse_store_n_systems(store); s++) {
        if (b->found[s])
            continue;
        const char *name = cdse_store_system_name(store, s);
        if (from_top && !(job && (job->objective.group_by & CDSE_GROUP_SYSTEM)))
            fprintf(out,
                    "# %s: none of its configurations is among the rows of /top (it may "
                    "have feasible ones)\n",
                    name);
        else
            fprintf(out, "# %s: no feasible configuration%s%s\n", name,
                    a->where || a->gpus ? " that matches" : "",
                    cdse_store_complete(store) ? "" : " so far (the store is incomplete)");
    }
}

static int run(const compare_args *a)
{
    cdse_store_quiet_hdf5();
    cdse_cli_store_guard("clusterdse compare");
    cdse_store *store = NULL;
    cdse_diag diag = {""};
    int rc = cdse_store_open(a->path, false, &store, &diag);
    if (rc != 0) {
        fprintf(stderr, "clusterdse compare: %s\n", diag.msg);
        return rc == CDSE_EINVAL ? 1 : 2;
    }
    int metric = a->by ? cdse_metric_parse(a->by) : cdse_store_metric(store);
    cdse_job *names = cdse_cli_names_job(store);
    cdse_job *job = store_job(store, a->path);
    best_rows b = {.metric = metric, .best = calloc(CDSE_MAX_SYSTEMS, sizeof(cdse_record))};
    char *text = NULL, holds[512] = "";
    cdse_expr *where = NULL;
    int code = -1;
    if (names == NULL || b.best == NULL || !filter_text(a, &text)) {
        fprintf(stderr, "clusterdse compare: out of memory\n");
        code = 2;
    }
    bool from_top = !cdse_store_has(store, "results");
    if (code < 0 && from_top)
        code = top_only_check(a, store, job, metric, holds, sizeof holds);
    if (code < 0 && text != NULL && cdse_cli_compile_where("compare", text, names, &where) != 0)
        code = 1;
    uint64_t matched = 0;
    const char *dataset = from_top ? "top" : "results";
    if (code < 0 &&
        (rc = cdse_cli_scan(store, dataset, where, false, offer_best, &b, &matched, &diag)) != 0) {
        cdse_cli_scan_error("compare", a->path, diag.msg);
        code = rc == CDSE_EINVAL ? 1 : 2;
    }
    if (code < 0) {
        if (from_top && !top_exact(job))
            snprintf(holds + strlen(holds), sizeof holds - strlen(holds),
                     "; a system's best may be missing from it: each column is that system's "
                     "best among the rows of /top");
        print_heading(stdout, a, dataset, matched, metric, holds);
        print_table(stdout, store, &b, names);
        print_missing(stdout, a, store, &b, from_top, job);
        band_note(stdout, store, &b);
        print_cost_notes(stdout, store, &b, job);
        code = 0;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "clusterdse compare: writing the output failed: %s\n", strerror(errno));
            code = 2;
        }
    }
    cdse_expr_free(where);
    free(text);
    free(b.best);
    free(names);
    if (job != NULL)
        cdse_job_free(job);
    free(job);
    cdse_store_close(store, NULL);
    return code;
}

int cdse_cmd_compare(int argc, char **argv)
{
    compare_args a;
    int rc = parse_args(argc, argv, &a);
    return rc >= 0 ? rc : run(&a);
}
