/* clusterdse compare: the best configuration of each system of a store side by side, with each
 * quantity's ratio to the first system's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/sweep/report.h"
#include "clusterdse/sweep/store.h"
#include "commands.h"
#include "store_guard.h"

#define COMPARE_BLOCK_ROWS 65536

static const char usage_text[] =
    "usage: clusterdse compare OUT.h5 [--by METRIC]\n"
    "\n"
    "Prints the best feasible configuration of each system of a sweep's store side by side\n"
    "(from /results when stored, else /top), with each quantity's ratio to the first system's.\n"
    "A job that gives gpus or nodes per system compares, e.g., 4,096 H100 with 2,048 B200.\n"
    "\n"
    "  --by METRIC     time_per_iteration, tokens_per_s, time_to_train, gpu_hours, mfu,\n"
    "                  cost_to_train, energy_to_train, tokens_per_kwh (default: the job's)\n"
    "  -h, --help      this text\n"
    "\n"
    "exit codes: 0 done, 1 bad input (arguments, not a store), 2 read failure\n";

/* The quantities printed, as store columns. */
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

/* Best row per system of `dataset` by `metric`; found[s] says whether system s has one. */
static int best_per_system(cdse_store *store, const char *dataset, int metric, cdse_record *best,
                           bool *found, cdse_diag *diag)
{
    uint64_t rows = 0;
    int rc = cdse_store_rows(store, dataset, &rows, diag);
    size_t row_size = cdse_store_row_size();
    unsigned char *buf = malloc(COMPARE_BLOCK_ROWS * row_size);
    if (rc == 0 && buf == NULL) {
        cdse_diag_set(diag, "out of memory");
        rc = CDSE_ENOMEM;
    }
    for (uint64_t start = 0; rc == 0 && start < rows; start += COMPARE_BLOCK_ROWS) {
        size_t n = rows - start < COMPARE_BLOCK_ROWS ? (size_t)(rows - start) : COMPARE_BLOCK_ROWS;
        rc = cdse_store_read_rows(store, dataset, start, n, buf, diag);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            cdse_record rec;
            cdse_store_unpack(buf + i * row_size, &rec);
            int s = rec.system;
            if (rec.result.status != CDSE_ST_OK || s < 0 || s >= CDSE_MAX_SYSTEMS)
                continue;
            double cost = cdse_record_cost(&rec, metric);
            double held = found[s] ? cdse_record_cost(&best[s], metric) : 0.0;
            if (!found[s] || cost < held || (cost == held && rec.index < best[s].index)) {
                best[s] = rec;
                found[s] = true;
            }
        }
    }
    free(buf);
    return rc;
}

/* Which systems' best lie within the error band (time_low_s..time_high_s, docs/eval.md) of
 * the best of all: between those the comparison is within the model's error. */
static void band_note(FILE *out, cdse_store *store, const cdse_record *best, const bool *found,
                      int metric)
{
    int n = cdse_store_n_systems(store), top = -1;
    for (int s = 0; s < n; s++)
        if (found[s] && (top < 0 || cdse_record_cost(&best[s], metric) <
                                        cdse_record_cost(&best[top], metric)))
            top = s;
    if (top < 0 || !(best[top].time_low_s > 0.0))
        return; /* no feasible row, or a store made before the bands */
    int within = 0;
    for (int s = 0; s < n; s++)
        if (found[s] && s != top && cdse_record_bands_overlap(&best[top], &best[s], metric)) {
            if (within++ == 0)
                fprintf(out, "# within the error band of the best (%s, t_low..t_high, "
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

static void print_table(FILE *out, cdse_store *store, const cdse_record *best, const bool *found,
                        int metric)
{
    int n = cdse_store_n_systems(store), first = -1;
    fprintf(out, "# best per system by %s (%s is better); (x) = ratio to the first system\n",
            cdse_metric_name(metric), cdse_metric_higher_is_better(metric) ? "higher" : "lower");
    fprintf(out, "# %-22s", "quantity");
    for (int s = 0; s < n; s++)
        if (found[s]) {
            fprintf(out, " %24s", cdse_store_system_name(store, s));
            first = first < 0 ? s : first;
        }
    fputc('\n', out);
    for (size_t q = 0; first >= 0 && q < sizeof quantities / sizeof quantities[0]; q++) {
        const cdse_column *c = cdse_column_find(quantities[q]);
        fprintf(out, "  %-22s", quantities[q]);
        double base = cdse_column_value(c, &best[first]);
        for (int s = 0; s < n; s++) {
            if (!found[s])
                continue;
            double v = cdse_column_value(c, &best[s]);
            char cell[48];
            if (base != 0.0)
                snprintf(cell, sizeof cell, "%.6g (%.3gx)", v, v / base);
            else
                snprintf(cell, sizeof cell, "%.6g", v);
            fprintf(out, " %24s", cell);
        }
        fputc('\n', out);
    }
    for (int s = 0; s < n; s++)
        if (!found[s])
            fprintf(out, "# %s: no feasible configuration\n", cdse_store_system_name(store, s));
    band_note(out, store, best, found, metric);
}

int cdse_cmd_compare(int argc, char **argv)
{
    const char *path = NULL, *by = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(argv[i], "--by") == 0 && i + 1 < argc) {
            by = argv[++i];
        } else if (argv[i][0] != '-' && path == NULL) {
            path = argv[i];
        } else {
            fprintf(stderr, "clusterdse compare: unknown argument '%s'\n%s", argv[i], usage_text);
            return 1;
        }
    }
    if (path == NULL) {
        fprintf(stderr, "clusterdse compare: a store is required\n%s", usage_text);
        return 1;
    }
    int metric = by ? cdse_metric_parse(by) : -1;
    if (by && metric < 0) {
        fprintf(stderr, "clusterdse compare: --by %s: allowed: a metric (see --help)\n", by);
        return 1;
    }
    cdse_store_quiet_hdf5();
    cdse_cli_store_guard("clusterdse compare");
    cdse_store *store = NULL;
    cdse_diag diag = {{0}};
    int rc = cdse_store_open(path, false, &store, &diag);
    if (rc != 0) {
        fprintf(stderr, "clusterdse compare: %s\n", diag.msg);
        return rc == CDSE_EINVAL ? 1 : 2;
    }
    if (metric < 0)
        metric = cdse_store_metric(store);
    cdse_record *best = calloc(CDSE_MAX_SYSTEMS, sizeof *best);
    bool found[CDSE_MAX_SYSTEMS] = {false};
    const char *dataset = cdse_store_has(store, "results") ? "results" : "top";
    rc = best == NULL ? CDSE_ENOMEM : best_per_system(store, dataset, metric, best, found, &diag);
    int code = 0;
    if (rc != 0) {
        fprintf(stderr, "clusterdse compare: %s\n", best ? diag.msg : "out of memory");
        code = 2;
    } else {
        print_table(stdout, store, best, found, metric);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "clusterdse compare: writing the output failed: %s\n", strerror(errno));
            code = 2;
        }
    }
    free(best);
    cdse_store_close(store, NULL);
    return code;
}
