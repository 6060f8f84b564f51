/* The human table of eval, top and sweep: a '#' header line and fixed-width columns separated by
 * spaces (awk, gnuplot and pandas.read_csv(sep=r"\s+", comment="#", header=None) read it).
 *
 * Which columns: the rows to print are shown to the table first (cdse_table_observe), then it
 * prints
 *   - index, then every configuration column whose value differs between two of the rows
 *     (model, system, gpus, tp, ..., flash_attention, tp_comm_overlap, placement, the offload
 *     and recompute layers, the MoE knobs, the stack); a hardware value (hbm_gib,
 *     net1_bandwidth_gbs, ...) when it differs between two rows of the same system, that is when
 *     a hardware axis was swept, under its column name;
 *   - always status, time_per_iteration_s, tokens_per_s, mfu, mem_total_gib, time_to_train_days
 *     and the ranking column when it is another one; the error band time_low_s and time_high_s
 *     (t_low, t_high) after time_s and mem_reserved_gib (res_gib) after mem_gib when a row has
 *     them (a store made before them holds 0).
 * The configuration columns with one value in every row are printed once, on a '# same in every
 * row:' line above the header, as name=value (the names --where and --columns take); the MoE
 * knobs only when a row has ep > 1, offload_layers only with activation offload,
 * recompute_layers only with full recomputation, recompute_modules only when one is set.
 * Or the columns given by name (--columns), in that order.
 *
 * time_to_train_days, gpu_hours, cost_to_train, energy_to_train_mwh and tokens_per_kwh print
 * '-' where they are 0 (no token budget, no prices or power figures, or not feasible). */
#ifndef CLUSTERDSE_TABLE_H
#define CLUSTERDSE_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "clusterdse/sweep/report.h"

#define CDSE_TABLE_MAX_COLUMNS 128

typedef struct cdse_table {
    const cdse_job *job; /* names of models, systems and stacks */
    bool chosen;         /* the columns were given: no choice by variation */
    int n_tracked;       /* columns observed: the candidates, or the chosen ones */
    int tracked[CDSE_TABLE_MAX_COLUMNS];
    int key; /* index into cdse_columns of the ranking column, -1 for none */
    /* What the observed rows held, per cdse_columns index. */
    unsigned long long rows;
    double first[CDSE_TABLE_MAX_COLUMNS];
    double last[CDSE_TABLE_MAX_COLUMNS];
    bool varies[CDSE_TABLE_MAX_COLUMNS];
    bool present[CDSE_TABLE_MAX_COLUMNS];    /* a row held a value other than 0 */
    int value_width[CDSE_TABLE_MAX_COLUMNS]; /* the widest value's characters */
    bool system_seen[CDSE_MAX_SYSTEMS];
    double system_hw[CDSE_MAX_SYSTEMS][CDSE_HW_COUNT];
    bool moe, activation_offload, full_recompute, modules;
    bool pool_tp_differs; /* a pool's type runs another tp than the strategy's (tp_per_type) */
    /* The choice (cdse_table_print_header): columns printed and their widths. */
    int n;
    int column[CDSE_TABLE_MAX_COLUMNS];
    int width[CDSE_TABLE_MAX_COLUMNS]; /* negative: left-aligned */
} cdse_table;

/* Starts a table for rows of `job` (its names; it must outlive the table). `key`: the column the
 * rows are ranked by (always printed), or NULL. `columns`: "a,b,c" (column names or the table's
 * labels, e.g. mb), or NULL for the choice by variation. Returns 0, or -1 with a message that
 * lists the allowed names in err. */
int cdse_table_init(cdse_table *table, const cdse_job *job, const char *key, const char *columns,
                    char *err, size_t size);

/* The column of a metric (cdse_metric): time_to_train -> time_to_train_days, ... */
const char *cdse_table_metric_column(int metric);

/* Shows a row that will be printed. */
void cdse_table_observe(cdse_table *table, const cdse_record *record);

/* Chooses the columns from the rows observed and prints the '# same in every row:' line (when
 * there is one) and the header line. */
void cdse_table_print_header(cdse_table *table, FILE *out);

void cdse_table_print_row(const cdse_table *table, FILE *out, const cdse_record *record);

#endif
