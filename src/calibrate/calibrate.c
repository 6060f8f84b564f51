/* The job's probe section run before a sweep (see calibrate.h). */
#include "clusterdse/calibrate/calibrate.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/calibrate/fit.h"
#include "clusterdse/calibrate/probe.h"
#include "clusterdse/sweep/share.h"

/* Reads a whole file on rank 0 and shares it: 0 with the text on every rank (theirs to free),
 * else the same code on every rank (CDSE_EIO: rank 0 could not read it, with diag; CDSE_ENOMEM:
 * a rank could not hold it). */
static int share_text(const char *path, MPI_Comm comm, int rank, char **text, cdse_diag *diag)
{
    *text = NULL;
    int rc = rank == 0 ? cdse_plan_read_file(path, text, diag) : CDSE_OK;
    size_t size = rc == 0 && rank == 0 ? strlen(*text) + 1 : 0;
    rc = cdse_share_alloc(comm, rc == 0 ? CDSE_OK : CDSE_EIO, (void **)text, &size);
    if (rc == CDSE_ENOMEM)
        cdse_diag_set(diag, "out of memory for the probe plan %s on a rank", path);
    if (rc != 0 && rank == 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* Where the fitted network of `system` is written: the probes' path with ".probes.h5" (or
 * ".h5") replaced by ".fitted-SYSTEM.cfg". */
static void profile_path(const char *probes_path, const char *system, char *out, size_t size)
{
    size_t len = strlen(probes_path);
    size_t stem = len;
    if (len > 10 && strcmp(probes_path + len - 10, ".probes.h5") == 0)
        stem = len - 10;
    else if (len > 3 && strcmp(probes_path + len - 3, ".h5") == 0)
        stem = len - 3;
    snprintf(out, size, "%.*s.fitted-%s.cfg", (int)stem, probes_path, system);
}

void cdse_probe_levels_taken(const cdse_probe_take *take, const cdse_probe_fit *fit,
                             const cdse_system *system, bool use[CDSE_FIT_LEVELS])
{
    for (int l = 0; l < CDSE_FIT_LEVELS; l++) {
        int k = cdse_fit_target_level(l, system);
        bool measured = false;
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            measured = measured || fit->level[l].has[c];
        use[l] = measured && k >= 0 && !take->given && l == CDSE_FIT_LEVELS - 1;
        for (int i = 0; measured && k >= 0 && take->given && i < take->n_levels; i++)
            if (strcmp(take->level[i], system->level[k].name) == 0 ||
                strcmp(take->level[i], cdse_fit_level_names[l]) == 0)
                use[l] = true;
    }
}

int cdse_probe_check(const cdse_probe_take *take, const cdse_probe_fit *fit,
                     const cdse_system *system, const char *prefix, FILE *log, FILE *err)
{
    bool use[CDSE_FIT_LEVELS];
    cdse_probe_levels_taken(take, fit, system, use);
    int off = cdse_fit_check_base(fit, system, use, take->force, prefix, "probes",
                                  "set probe.force = true", take->force ? log : err);
    return take->force ? 0 : off;
}

int cdse_probe_apply(const cdse_probe_take *take, const cdse_probe_fit *fit, cdse_system *system,
                     const char *prefix, FILE *log)
{
    bool use[CDSE_FIT_LEVELS];
    cdse_probe_levels_taken(take, fit, system, use);
    int pairs = cdse_fit_to_system_levels(fit, system, use, "probes");
    if (pairs > 0 || log == NULL)
        return pairs;
    char measured[256] = "";
    size_t len = 0;
    for (int l = 0; l < CDSE_FIT_LEVELS; l++) {
        int k = cdse_fit_target_level(l, system);
        bool has = false;
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            has = has || fit->level[l].has[c];
        if (has && len < sizeof measured)
            len += (size_t)snprintf(measured + len, sizeof measured - len, "%s%s (%s rows)",
                                    len ? ", " : "", k >= 0 ? system->level[k].name : "none",
                                    cdse_fit_level_names[l]);
    }
    fprintf(log,
            "%s system %s: measured %s; none taken (probe.levels %s): name a level in "
            "probe.levels to take it, with probe.force = true if it is more than 3x off (a "
            "one-node probe measures MPI over shared memory, not NVLink)\n",
            prefix, system->name, measured[0] ? measured : "no level",
            take->given ? "names none of them" : "not given: only the outermost level");
    return 0;
}

/* Applies the fit to one system and writes its network profile: the same pipeline and bytes
 * as `clusterdse fit PROBES --job JOB --system NAME`. */
static int fit_system(const cdse_probe_take *take, cdse_system *system, const cdse_probe_fit *fit,
                      const cdse_probe_result *probes, const char *probes_path, FILE *log,
                      cdse_diag *diag)
{
    int pairs = cdse_probe_apply(take, fit, system, "sweep: probe:", log);
    char path[CDSE_PATH_MAX], name[CDSE_NAME_MAX];
    profile_path(probes_path, system->name, path, sizeof path);
    snprintf(name, sizeof name, "%.30s-fitted", system->name);
    FILE *out = fopen(path, "w");
    int rc =
        out ? cdse_fit_write_profile(out, fit, &probes->info, probes_path, system, NULL, name, NULL)
            : CDSE_EIO;
    if (out != NULL && fclose(out) != 0)
        rc = CDSE_EIO;
    if (rc != 0) {
        cdse_diag_set(diag, "%s: cannot write the fitted network profile", path);
        return rc;
    }
    if (log != NULL)
        fprintf(log,
                "sweep: probe: %d fitted (level, collective) pairs applied to system %s; its "
                "network written to %s\n",
                pairs, system->name, path);
    return 0;
}

static int fit_systems(cdse_job *job, const cdse_probe_result *probes, const char *probes_path,
                       FILE *log, FILE *err, cdse_diag *diag)
{
    cdse_fit_options options;
    cdse_fit_options_default(&options);
    cdse_probe_fit fit;
    int rc = cdse_fit_probes(probes, &options, &fit, diag);
    if (rc == CDSE_EINVAL) { /* nothing to fit: the systems stay as they are */
        if (log != NULL)
            fprintf(log, "sweep: probe: %s; no system changed\n", diag->msg);
        cdse_probe_fit_free(&fit);
        return CDSE_OK;
    }
    /* Every system checked before any profile is written: a refusal writes nothing. */
    for (int i = 0; rc == 0 && i < job->n_systems && i < 32; i++)
        if (job->probe_systems & (1u << i)) {
            int off = cdse_probe_check(&job->probe_take, &fit, &job->system[i],
                                       "sweep: probe:", log, err);
            if (off > 0) {
                cdse_diag_set(diag,
                              "system %s: %d fitted bandwidth(s) more than %gx away from the "
                              "system's own (printed above); nothing written: set probe.force = "
                              "true to take them, or leave the level out of probe.levels",
                              job->system[i].name, off, CDSE_FIT_BASE_RATIO_MAX);
                rc = CDSE_EINVAL;
            }
        }
    for (int i = 0; rc == 0 && i < job->n_systems && i < 32; i++)
        if (job->probe_systems & (1u << i))
            rc =
                fit_system(&job->probe_take, &job->system[i], &fit, probes, probes_path, log, diag);
    cdse_probe_fit_free(&fit);
    return rc;
}

int cdse_sweep_calibrate(cdse_job *job, MPI_Comm comm, const char *probes_path, bool reuse,
                         FILE *log, FILE *err, cdse_diag *diag)
{
    if (job->probe_plan[0] == '\0')
        return CDSE_OK;
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    cdse_probe_result probes;
    memset(&probes, 0, sizeof probes);

    int reusing = rank == 0 && reuse && access(probes_path, R_OK) == 0;
    cdse_share(comm, CDSE_OK, &reusing, sizeof reusing);
    int rc = CDSE_OK;
    char *text = NULL;
    if (reusing) {
        if (rank == 0) {
            rc = cdse_probe_read(probes_path, &probes, diag);
            if (rc == 0 && log != NULL)
                fprintf(log, "sweep: probe: reusing the measurements in %s\n", probes_path);
        }
    } else {
        rc = share_text(job->probe_plan, comm, rank, &text, diag);
        cdse_probe_plan plan;
        if (rc == 0)
            rc = cdse_agree(comm, cdse_plan_load_text(text, job->probe_plan, ranks, &plan, diag));
        if (rc == 0) {
            if (rank == 0 && log != NULL)
                fprintf(log, "sweep: probe: running %s on %d ranks\n", job->probe_plan, ranks);
            rc = cdse_agree(comm,
                            cdse_probe_run(&plan, comm, rank == 0 ? log : NULL, &probes, diag));
        }
        if (rc == 0 && rank == 0)
            rc = cdse_probe_write(probes_path, &probes, text, true, diag);
    }
    if (rc == 0 && rank == 0)
        rc = fit_systems(job, &probes, probes_path, log, err, diag);
    rc = cdse_agree(comm, rc);
    if (rc == 0)
        cdse_share(comm, rc, job->system, sizeof job->system);
    free(text);
    cdse_probe_result_free(&probes);
    return rc;
}
