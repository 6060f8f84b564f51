/* `--where EXPR` over the store's columns, shared by top, export and verify (cmd_top.c). */
#ifndef CLUSTERDSE_CLI_WHERE_H
#define CLUSTERDSE_CLI_WHERE_H

#include <stdbool.h>

#include "clusterdse/config/job.h"
#include "clusterdse/sweep/expr.h"
#include "clusterdse/sweep/report.h"

/* Compiles `text` with `names` giving the model and system names (names == a job); prints the
 * error as `clusterdse CMD: --where ...` and returns -1, else 0. */
int cdse_cli_compile_where(const char *cmd, const char *text, const cdse_job *names,
                           cdse_expr **where);
/* Whether `record` passes. */
bool cdse_cli_where_holds(const cdse_expr *where, const cdse_record *record);

#endif
