/* The job's probe section run before a sweep (see calibrate.h). */
#include "clusterdse/calibrate/calibrate.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/calibrate/fit.h"
#include "clusterdse/calibrate/probe.h"

/* Reads a whole file on rank 0 and broadcasts it; NULL on every rank if it cannot be read. */
static char *share_text(const char *path, MPI_Comm comm, int rank, cdse_diag *diag)
{
    long length = -1;
    char *text = NULL;
    if (rank == 0) {
        FILE *f = fopen(path, "rb");
        if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (length = ftell(f)) >= 0 &&
            fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)length + 1)) != NULL &&
            fread(text, 1, (size_t)length, f) == (size_t)length) {
            text[length] = '\0';
        } else {
            cdse_diag_set(diag, "%s: cannot read the probe plan", path);
            free(text);
            text = NULL;
            length = -1;
        }
        if (f != NULL)
            fclose(f);
    }
    MPI_Bcast(&length, 1, MPI_LONG, 0, comm);
    if (length < 0)
        return NULL;
    if (rank != 0 && (text = malloc((size_t)length + 1)) == NULL)
        MPI_Abort(comm, 2);
    MPI_Bcast(text, (int)length + 1, MPI_CHAR, 0, comm);
    return text;
}

/* The same return code on every rank: the worst. */
static int agree(int rc, MPI_Comm comm)
{
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, comm);
    return worst;
}

static int fit_systems(cdse_job *job, const cdse_probe_result *probes, FILE *log, cdse_diag *diag)
{
    for (int i = 0; i < job->n_systems && i < 32; i++) {
        if (!(job->probe_systems & (1u << i)))
            continue;
        int pairs = cdse_fit_apply(probes, &job->system[i], diag);
        if (pairs < 0)
            return pairs;
        if (log != NULL)
            fprintf(log, "sweep: probe: %d fitted (level, collective) pairs applied to system %s\n",
                    pairs, job->system[i].name);
    }
    return CDSE_OK;
}

int cdse_sweep_calibrate(cdse_job *job, MPI_Comm comm, const char *probes_path, bool reuse,
                         FILE *log, cdse_diag *diag)
{
    if (job->probe_plan[0] == '\0')
        return CDSE_OK;
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    cdse_probe_result probes;
    memset(&probes, 0, sizeof probes);

    int reusing = rank == 0 && reuse && access(probes_path, R_OK) == 0;
    MPI_Bcast(&reusing, 1, MPI_INT, 0, comm);
    int rc = CDSE_OK;
    char *text = NULL;
    if (reusing) {
        if (rank == 0) {
            rc = cdse_probe_read(probes_path, &probes, diag);
            if (rc == 0 && log != NULL)
                fprintf(log, "sweep: probe: reusing the measurements in %s\n", probes_path);
        }
    } else {
        text = share_text(job->probe_plan, comm, rank, diag);
        rc = agree(text != NULL ? CDSE_OK : CDSE_EIO, comm);
        cdse_probe_plan plan;
        if (rc == 0)
            rc = agree(cdse_plan_load_text(text, job->probe_plan, ranks, &plan, diag), comm);
        if (rc == 0) {
            if (rank == 0 && log != NULL)
                fprintf(log, "sweep: probe: running %s on %d ranks\n", job->probe_plan, ranks);
            rc = agree(cdse_probe_run(&plan, comm, rank == 0 ? log : NULL, &probes, diag), comm);
        }
        if (rc == 0 && rank == 0)
            rc = cdse_probe_write(probes_path, &probes, text, true, diag);
    }
    if (rc == 0 && rank == 0)
        rc = fit_systems(job, &probes, log, diag);
    rc = agree(rc, comm);
    if (rc == 0)
        MPI_Bcast(job->system, (int)sizeof job->system, MPI_BYTE, 0, comm);
    free(text);
    cdse_probe_result_free(&probes);
    return rc;
}
