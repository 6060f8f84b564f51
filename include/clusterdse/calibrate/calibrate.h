/* A sweep that calibrates itself: the job's `probe` section run on the sweep's own allocation,
 * fitted, and applied to the job's systems before any configuration is evaluated. */
#ifndef CLUSTERDSE_CALIBRATE_H
#define CLUSTERDSE_CALIBRATE_H

#include <mpi.h>
#include <stdio.h>

#include "clusterdse/config/job.h"

/* Collective over `comm`; `job` identical on all ranks. Without a probe section: nothing.
 * Otherwise rank 0 reads the plan and every rank runs it (cdse_probe_run); rank 0 writes the
 * probes to `probes_path` and fits them into each system of job->probe_systems
 * (cdse_fit_apply); the fitted systems are broadcast, so every rank evaluates with the measured
 * network. With `reuse` and an existing `probes_path`, the earlier probes are fitted again
 * instead of measuring anew (a resumed sweep then completes with the same network, hence the
 * same store). Rank 0 prints the probe table and the fit to `log` (may be NULL). Returns 0 or a
 * negative code, the same on every rank, with diag filled on rank 0. */
int cdse_sweep_calibrate(cdse_job *job, MPI_Comm comm, const char *probes_path, bool reuse,
                         FILE *log, cdse_diag *diag);

#endif
