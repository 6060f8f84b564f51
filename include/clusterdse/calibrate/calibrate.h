/* A sweep that calibrates itself: the job's `probe` section run on the sweep's own allocation,
 * fitted, and applied to the job's systems before any configuration is evaluated. */
#ifndef CLUSTERDSE_CALIBRATE_H
#define CLUSTERDSE_CALIBRATE_H

#include <mpi.h>
#include <stdio.h>

#include "clusterdse/calibrate/fit.h"
#include "clusterdse/config/job.h"

/* Collective over `comm`; `job` identical on all ranks. Without a probe section: nothing.
 * Otherwise rank 0 reads the plan and every rank runs it (cdse_probe_run); rank 0 writes the
 * probes to `probes_path` and fits them into each system of job->probe_systems
 * (cdse_probe_apply: the levels of probe.levels, checked against the system's); the fitted systems
 * are broadcast, so every rank evaluates with the measured network. With `reuse` and an existing
 * `probes_path`, the earlier probes are fitted again instead of measuring anew (a resumed sweep
 * then completes with the same network, hence the same store). Rank 0 prints the probe table and
 * the fit to `log` and a refused level to `err` (either may be NULL). Returns 0 or a negative code
 * (CDSE_EINVAL: a level refused), the same on every rank, with diag filled on rank 0; then no
 * profile is written. */
int cdse_sweep_calibrate(cdse_job *job, MPI_Comm comm, const char *probes_path, bool reuse,
                         FILE *log, FILE *err, cdse_diag *diag);

/* The probe levels (use[l]) whose fits a probe section writes into `system`: with
 * probe.levels, those whose target level (cdse_fit_target_level) or probe name (intra_node,
 * inter_node) is listed; else only the outermost level (of two or more), as `clusterdse fit
 * --base` does, so a one-node probe changes no level. Only measured levels. */
void cdse_probe_levels_taken(const cdse_probe_take *take, const cdse_probe_fit *fit,
                             const cdse_system *system, bool use[CDSE_FIT_LEVELS]);

/* Checks the taken levels of `system` against its own (cdse_fit_check_base; `prefix` starts
 * every line, e.g. "sweep: probe:"): with take->force the lines go to `log` ("written anyway")
 * and 0 is returned; without, to `err`, and the number refused is returned. */
int cdse_probe_check(const cdse_probe_take *take, const cdse_probe_fit *fit,
                     const cdse_system *system, const char *prefix, FILE *log, FILE *err);

/* Writes the taken levels' fits into `system` (measured = "probes"); when none is taken, one
 * line on `log` saying which levels were measured and how to take one. Returns the
 * (level, collective) pairs written. */
int cdse_probe_apply(const cdse_probe_take *take, const cdse_probe_fit *fit, cdse_system *system,
                     const char *prefix, FILE *log);

#endif
