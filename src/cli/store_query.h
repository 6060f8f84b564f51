/* Reading a store's rows for top, export and compare: the store's names, --where, a streamed
 * scan of a dataset. */
#ifndef CLUSTERDSE_CLI_STORE_QUERY_H
#define CLUSTERDSE_CLI_STORE_QUERY_H

#include "clusterdse/sweep/expr.h"
#include "clusterdse/sweep/report.h"
#include "clusterdse/sweep/store.h"

/* A job holding only the names of the store's models, systems and stacks and its metric
 * (calloc'd; NULL when out of memory). */
cdse_job *cdse_cli_names_job(const cdse_store *store);

/* Compiles --where over the columns, with the store's names; on error prints
 * `clusterdse CMD: --where ...` (and the columns for an unknown name) and returns -1. */
int cdse_cli_compile_where(const char *cmd, const char *text, const cdse_job *names,
                           cdse_expr **where);

/* What cdse_cli_scan does with each row that passes the filter: returns CDSE_OK or an error
 * code (with diag set), which stops the scan. */
/* Whether `record` passes a compiled --where (verify filters its configurations with it). */
bool cdse_cli_where_holds(const cdse_expr *where, const cdse_record *record);

typedef int (*cdse_cli_row_fn)(void *ctx, const cdse_record *rec, cdse_diag *diag);

/* Streams `dataset` block by block through the filter (feasible rows only unless `all`, then
 * `where` when not NULL) to fn; *matched counts the rows that passed. CDSE_EINVAL (diag says
 * what is allowed) when the store has no such dataset. */
int cdse_cli_scan(cdse_store *store, const char *dataset, const cdse_expr *where, bool all,
                  cdse_cli_row_fn fn, void *ctx, uint64_t *matched, cdse_diag *diag);

/* Prints a failed scan's message as `clusterdse PROG: PATH: MSG` (once the path). */
void cdse_cli_scan_error(const char *prog, const char *path, const char *msg);

/* `from`, or /results when the store has it, else /top (saying so on stderr). */
const char *cdse_cli_default_dataset(const char *cmd, const cdse_store *store, const char *path,
                                     const char *from);

#endif
