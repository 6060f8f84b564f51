/* --dry-run of sweep and eval: what a run would do, before doing it. */
#ifndef CLUSTERDSE_CLI_DRY_RUN_H
#define CLUSTERDSE_CLI_DRY_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "clusterdse/config/job.h"

/* Spaces of at least this many configurations with store = "all" need --force: at ~270 bytes a
 * row before compression, 10^10 rows are terabytes. */
#define CDSE_DRY_RUN_BIG_ALL 1e10

/* Prints to `out` the size of each axis of the space, the number of configurations, the rate
 * of this machine measured on a short sample of the space, the estimated time on `ranks` ranks
 * and (when `store` is true) the estimated size of the store in the job's store mode. */
void cdse_dry_run(const cdse_job *job, int ranks, bool store, FILE *out);

/* Spaces of at least this many configurations get an estimate when the sweep starts. */
#define CDSE_DRY_RUN_ANNOUNCE 1e9

/* One line on `out`: the estimated evaluation time of the job on `ranks` ranks at the rate
 * measured on a sample (a quarter of a second), for a sweep that is about to start. */
void cdse_dry_run_announce(const cdse_job *job, int ranks, FILE *out);

/* 0 when the store mode suits the space; 1 (after a message on `err`, if not NULL, naming the job,
 * the size and what to do) for a space of CDSE_DRY_RUN_BIG_ALL configurations or more with store =
 * "all" and no --force. */
int cdse_dry_run_check_store(const cdse_job *job, bool force, const char *prog, FILE *err);

#endif
