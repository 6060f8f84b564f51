/* The probe runner: MPI collectives of a probe plan timed on shaped sub-communicators. The plan
 * is config/probe_plan.h (no MPI), the rows and their HDF5 tables calibrate/probe_rows.h. */
#ifndef CLUSTERDSE_PROBE_H
#define CLUSTERDSE_PROBE_H

#include <stdio.h>

#include <mpi.h>

#include "clusterdse/calibrate/probe_rows.h"
#include "clusterdse/config/probe_plan.h"

/* Runs the plan on `comm`. Collective: `plan` identical on all ranks. Rank 0 prints the table
 * to `table` (may be NULL) as it goes and receives the rows in `result`. */
int cdse_probe_run(const cdse_probe_plan *plan, MPI_Comm comm, FILE *table,
                   cdse_probe_result *result, cdse_diag *diag);

/* Times one collective of `bytes` on one shape with the timing keys of `plan` (warmup,
 * iterations, budget, check). Collective over comm: every argument identical on all ranks.
 * Rank 0 receives the row. */
int cdse_probe_measure(const cdse_probe_plan *plan, MPI_Comm comm, int coll, int dtype,
                       const cdse_probe_shape *shape, int64_t bytes, cdse_probe_row *row,
                       cdse_diag *diag);

#endif
