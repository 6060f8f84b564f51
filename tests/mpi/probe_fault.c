/* Fault injection for the probe runner (issue 9): the rank named by CDSE_PROBE_FAULT_RANK
 * reports its collective as failed. Every rank must return CDSE_EMPI from cdse_probe_measure
 * instead of the others waiting in MPI_Reduce for the one that left. Built with probe.c and
 * -DCDSE_PROBE_FAULT_INJECTION; run by tests/sh/probe_fault.sh under mpirun and a timeout.
 * Prints one line per rank: "rank R rc C" (C the return code); exit 0 if rc is CDSE_EMPI. */
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "clusterdse/calibrate/probe.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cdse_probe_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.warmup = argc > 1 ? 0 : 2; /* any argument: no warmup, the fault hits a timed call */
    plan.iterations_min = 5;
    plan.iterations_max = 5;
    plan.time_budget_ms = 1;
    cdse_probe_shape world = {.kind = CDSE_SHAPE_WORLD};
    cdse_probe_row row;
    cdse_diag diag = {{0}};
    int rc = cdse_probe_measure(&plan, MPI_COMM_WORLD, CDSE_COLL_ALLREDUCE, CDSE_PDT_FLOAT, &world,
                                1024, &row, &diag);
    printf("rank %d rc %d%s%s\n", rank, rc, diag.msg[0] ? ": " : "", diag.msg);
    fflush(stdout);
    MPI_Finalize();
    return rc == CDSE_EMPI ? 0 : 1;
}
