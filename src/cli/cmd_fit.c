/* clusterdse fit PROBES.h5 -o PROFILE.cfg: latency and bandwidth per network level and
 * collective from probe data, written as a network profile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/calibrate/fit.h"
#include "clusterdse/config/job.h"
#include "clusterdse/sweep/store.h"
#include "commands.h"
#include "output_dir.h"
#include "store_guard.h"

static const char *const level_names[CDSE_FIT_LEVELS] = {"intra_node", "inter_node"};
static const char *const level_help[CDSE_FIT_LEVELS] = {"groups within one node",
                                                        "groups with one rank per node"};

typedef struct fit_args {
    const char *probes, *output, *base, *name;
    const char *job, *system; /* --job JOB --system NAME: that system of the job is the base */
    cdse_fit_options options;
    bool force;
} fit_args;

static void fit_usage(FILE *out)
{
    fprintf(out,
            "usage: clusterdse fit PROBES.h5 -o PROFILE.cfg [--base SYSTEM] [--name NAME]\n"
            "                      [--time median|avg|itermax|min|max|best] [--dtype NAME]\n"
            "                      [--min-bytes B] [--max-bytes B] [--force]\n"
            "\n"
            "Fits latency (us per step) and effective bandwidth (GB/s) per network level and\n"
            "collective to the /probes table of PROBES.h5, in the terms of the sweep's collective\n"
            "model (ring allreduce 2(n-1)/n B/bw + 2(n-1) lat; allgather, reduce_scatter,\n"
            "alltoall (n-1)/n B/bw + (n-1) lat; sendrecv B/bw + lat), and writes a network\n"
            "profile (libconfig) that a job's system can use with network_profile = \"FILE\".\n"
            "Level 0 is fitted on groups within a node, level 1 on groups with one rank per node;\n"
            "groups that mix both are not used. Prints R^2, worst and median relative error per\n"
            "fit and a hold-out check (fit on every other size, error on the others).\n"
            "\n"
            "  -o, --output FILE  profile to write (required)\n"
            "  --base SYSTEM      write a complete system: SYSTEM's keys (calibration/systems/\n"
            "                     SYSTEM.cfg or a path) with the fitted collectives on its\n"
            "                     innermost and outermost network levels\n"
            "  --name NAME        profile name (default: fitted, or SYSTEM-fitted)\n"
            "  --time WHICH       time to fit: median (default: median over iterations of the\n"
            "                     slowest rank, robust to preemption), avg (mean over ranks),\n"
            "                     itermax (mean over iterations of the slowest rank), min, max\n"
            "                     (over ranks of the per-rank means), best (fastest iteration\n"
            "                     of the slowest rank: for a machine shared with other work)\n"
            "  --dtype NAME       datatype rows to fit (default float if probed)\n"
            "  --min-bytes B      fit only messages of at least B bytes: the sizes a training\n"
            "                     job sends (its TP, PP and DP messages are MBs), leaving out\n"
            "                     the small-message regime that one (latency, bandwidth) pair\n"
            "                     cannot follow together with the large one\n"
            "  --max-bytes B      fit only messages of at most B bytes (e.g. below a cache\n"
            "                     cliff; docs/calibration.md)\n"
            "  --job JOB --system NAME\n"
            "                     write the network of system NAME of job file JOB with the\n"
            "                     fits applied exactly as the job's probe section applies them\n"
            "                     (the same bytes as the profile a sweep writes for it)\n"
            "  --force            overwrite FILE\n"
            "  -h, --help         this text\n"
            "Exit codes: 0 done, 1 bad input, 2 runtime failure.\n");
}

static int parse_time(const char *v, fit_args *a)
{
    for (int t = 0; t < CDSE_FT_COUNT; t++)
        if (strcmp(v, cdse_fit_time_name(t)) == 0)
            a->options.time = t;
    if (strcmp(v, cdse_fit_time_name(a->options.time)) == 0)
        return 0;
    fprintf(stderr, "clusterdse fit: --time %s; allowed: median, avg, itermax, min, max, best\n",
            v);
    return 1;
}

static int parse_dtype(const char *v, fit_args *a)
{
    for (int d = 0; d < CDSE_PDT_COUNT; d++)
        if (strcmp(v, cdse_probe_dtype_name(d)) == 0)
            a->options.dtype = d;
    if (a->options.dtype >= 0)
        return 0;
    fprintf(stderr, "clusterdse fit: --dtype %s; allowed: float, double, int32, uint8\n", v);
    return 1;
}

static int parse_bytes(const char *arg, const char *v, fit_args *a)
{
    char *end = NULL;
    double bytes = strtod(v, &end);
    if (*end || !(bytes >= 0)) {
        fprintf(stderr, "clusterdse fit: %s %s; allowed: a byte count >= 0\n", arg, v);
        return 1;
    }
    if (strcmp(arg, "--min-bytes") == 0)
        a->options.min_bytes = bytes;
    else
        a->options.max_bytes = bytes;
    return 0;
}

/* Returns -1 to go on, else the exit code. */
static int parse_fit_args(int argc, char **argv, fit_args *a)
{
    memset(a, 0, sizeof *a);
    cdse_fit_options_default(&a->options);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool more = i + 1 < argc;
        int bad = 0;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fit_usage(stdout);
            return 0;
        } else if ((strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) && more) {
            a->output = argv[++i];
        } else if (strcmp(arg, "--base") == 0 && more) {
            a->base = argv[++i];
        } else if (strcmp(arg, "--job") == 0 && more) {
            a->job = argv[++i];
        } else if (strcmp(arg, "--system") == 0 && more) {
            a->system = argv[++i];
        } else if (strcmp(arg, "--name") == 0 && more) {
            a->name = argv[++i];
        } else if (strcmp(arg, "--time") == 0 && more) {
            bad = parse_time(argv[++i], a);
        } else if (strcmp(arg, "--dtype") == 0 && more) {
            bad = parse_dtype(argv[++i], a);
        } else if ((strcmp(arg, "--min-bytes") == 0 || strcmp(arg, "--max-bytes") == 0) && more) {
            bad = parse_bytes(arg, argv[i + 1], a);
            i++;
        } else if (strcmp(arg, "--force") == 0) {
            a->force = true;
        } else if (arg[0] != '-' && a->probes == NULL) {
            a->probes = arg;
        } else {
            fprintf(stderr, "clusterdse fit: unexpected argument '%s'\n", arg);
            fit_usage(stderr);
            return 1;
        }
        if (bad)
            return 1;
    }
    if (a->probes == NULL || a->output == NULL) {
        fprintf(stderr, "clusterdse fit: need PROBES.h5 and -o PROFILE.cfg\n");
        fit_usage(stderr);
        return 1;
    }
    if ((a->job == NULL) != (a->system == NULL) || (a->job != NULL && a->base != NULL)) {
        fprintf(stderr, "clusterdse fit: --job and --system go together, without --base\n");
        return 1;
    }
    char err[CDSE_PATH_MAX + 128];
    if (cdse_output_path_check("-o", a->output, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse fit: %s\n", err);
        return 1;
    }
    return -1;
}

/* Median over every held-out point of every fit. */
static double pooled_holdout(const cdse_probe_fit *fit, int *count)
{
    int n = 0;
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            n += fit->level[l].n_holdout[c];
    double *all = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    *count = 0;
    if (all == NULL)
        return 0;
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            for (int i = 0; i < fit->level[l].n_holdout[c]; i++)
                all[(*count)++] = fit->level[l].holdout_rel[c][i];
    double m = cdse_fit_median(all, *count);
    free(all);
    return m;
}

static void print_fit_row(FILE *out, int level, int coll, const cdse_fit_result *f)
{
    char n_text[16], holdout[16];
    if (f->group_min == f->group_max)
        snprintf(n_text, sizeof n_text, "%d", f->group_min);
    else
        snprintf(n_text, sizeof n_text, "%d-%d", f->group_min, f->group_max);
    if (f->holdout_points > 0)
        snprintf(holdout, sizeof holdout, "%7.1f%%", 100 * f->holdout_median);
    else
        snprintf(holdout, sizeof holdout, "%8s", "-");
    fprintf(out,
            "  %-10s %-14s %5s %6d %5d %10.3f %10.3f %-6s %7.4f %7.1f%% %7.1f%% %8s   "
            "%.3f %.3f <= %.0f < %.3f %.3f\n",
            level_names[level], cdse_probe_coll_name(coll), n_text, f->n_points, f->n_sizes,
            f->profile.latency_us, f->profile.bandwidth_gbs, cdse_fit_choice_name(f->choice),
            f->stats.r2, 100 * f->stats.worst_rel, 100 * f->stats.median_rel, holdout,
            f->small.latency_us, f->small.bandwidth_gbs, f->breakpoint_bytes, f->large.latency_us,
            f->large.bandwidth_gbs);
}

static void print_fits(FILE *out, const cdse_probe_fit *fit, double *worst_holdout)
{
    *worst_holdout = 0;
    fprintf(out, "# %-10s %-14s %5s %6s %5s %10s %10s %-6s %7s %8s %8s %8s   %s\n", "level",
            "collective", "n", "points", "sizes", "lat_us", "bw_GBs", "choice", "R2", "worst",
            "median", "holdout", "regimes: lat_us bw_GBs <= break_B < lat_us bw_GBs");
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            const cdse_fit_result *f = &fit->level[l].fit[c];
            if (!fit->level[l].has[c])
                continue;
            if (f->holdout_points > 0 && f->holdout_median > *worst_holdout)
                *worst_holdout = f->holdout_median;
            print_fit_row(out, l, c, f);
        }
}

static void print_summary(const fit_args *a, const cdse_probe_result *pr, const cdse_probe_fit *fit)
{
    const cdse_fit_options *o = &fit->options;
    printf("# clusterdse fit: %s: %d ranks on %d node(s) (%s), measured %s\n", a->probes,
           pr->info.ranks, pr->info.nodes, pr->info.hostnames, pr->info.date);
    if (o->min_bytes > 0 || o->max_bytes < 1e300)
        printf("# fitting messages from %.0f to %.4g bytes only\n", o->min_bytes, o->max_bytes);
    printf("# dtype %s, time t_%s; rows: %d %s (level 0), %d %s (level 1), %d mixed (not "
           "fitted)\n",
           fit->dtype, cdse_fit_time_name(o->time), fit->level[0].n_rows, level_help[0],
           fit->level[1].n_rows, level_help[1], fit->mixed);
    if (pr->info.nodes <= 1)
        printf("# one node: only level 0 (intra_node) can be fitted; run on 2+ nodes for the "
               "inter-node level\n");
    double worst_holdout;
    print_fits(stdout, fit, &worst_holdout);
    if (fit->reduce_gbs > 0) {
        printf("# local reduction (MPI_Reduce_local, %s, %lld B): %.3f GB/s; allreduce / "
               "reduce_scatter bandwidth without it:",
               fit->dtype, (long long)fit->reduce_bytes, fit->reduce_gbs);
        for (int l = 0; l < CDSE_FIT_LEVELS; l++)
            for (int c = 0; c < CDSE_COLL_COUNT; c++)
                if (fit->level[l].comm_only_gbs[c] > 0)
                    printf(" %s %s %.3f GB/s;", level_names[l], cdse_probe_coll_name(c),
                           fit->level[l].comm_only_gbs[c]);
        printf("\n");
    }
    int n_held = 0;
    double pooled = pooled_holdout(fit, &n_held);
    printf("# hold-out (fit on every other size, predict the others with the profile's pair): "
           "median relative error %.1f%% over %d held-out points (a fit that predicts within 20%% "
           "is good); worst "
           "per-fit median %.1f%%\n",
           100 * pooled, n_held, 100 * worst_holdout);
}

static int load_base(const fit_args *a, cdse_system *base, char *path, size_t size)
{
    const char *n = a->base;
    size_t len = strlen(n);
    bool is_path = strchr(n, '/') || (len > 4 && strcmp(n + len - 4, ".cfg") == 0);
    if (is_path)
        snprintf(path, size, "%s", n);
    else if (cdse_job_find_data("calibration/systems", n, NULL, path, size) != 0) {
        fprintf(stderr, "clusterdse fit: --base %s: no calibration/systems/%s.cfg found\n", n, n);
        return 1;
    }
    cdse_diag diag = {""};
    if (cdse_system_load_file(path, base, &diag) != 0) {
        fprintf(stderr, "clusterdse fit: --base: %s\n", diag.msg);
        return 1;
    }
    if (!is_path)
        snprintf(path, size, "%s", n); /* a name resolves again wherever the profile is used */
    return 0;
}

/* --job JOB --system NAME: the system as the job defines it (before any probe section). */
static int load_job_system(const fit_args *a, cdse_system *system)
{
    cdse_job *job = calloc(1, sizeof *job);
    cdse_diag diag = {""};
    if (job == NULL || cdse_job_load_file(a->job, job, &diag) != 0) {
        fprintf(stderr, "clusterdse fit: --job: %s\n", job ? diag.msg : "out of memory");
        free(job);
        return 1;
    }
    int found = -1;
    for (int s = 0; s < job->n_systems; s++)
        if (strcmp(job->system[s].name, a->system) == 0)
            found = s;
    if (found >= 0)
        *system = job->system[found];
    else
        fprintf(stderr, "clusterdse fit: --system %s: not a system of %s\n", a->system, a->job);
    cdse_job_free(job);
    free(job);
    return found >= 0 ? 0 : 1;
}

/* The network the profile describes: the base system's (or the job's system's) with the fits
 * applied, or one made from the fits alone. */
static int fitted_system(const fit_args *a, const cdse_probe_result *pr, const cdse_probe_fit *fit,
                         cdse_system *system, char *base_path, size_t size)
{
    memset(system, 0, sizeof *system);
    base_path[0] = '\0';
    if (a->base && load_base(a, system, base_path, size) != 0)
        return 1;
    if (a->job && load_job_system(a, system) != 0)
        return 1;
    if (a->base || a->job)
        cdse_fit_to_system(fit, system);
    else
        cdse_fit_network(fit, pr->info.ranks_per_node, system);
    return 0;
}

static int write_output(const fit_args *a, const cdse_probe_result *pr, const cdse_probe_fit *fit,
                        const cdse_system *system, const char *base_path)
{
    char name[CDSE_NAME_MAX];
    if (a->name)
        snprintf(name, sizeof name, "%s", a->name);
    else if (a->base || a->job)
        snprintf(name, sizeof name, "%.30s-fitted", system->name);
    else
        snprintf(name, sizeof name, "fitted");
    FILE *out = fopen(a->output, "w");
    int rc = out ? cdse_fit_write_profile(out, fit, &pr->info, a->probes, system,
                                          base_path[0] ? base_path : NULL, name)
                 : CDSE_EIO;
    if (out != NULL && fclose(out) != 0)
        rc = CDSE_EIO;
    if (rc != 0) {
        fprintf(stderr, "clusterdse fit: cannot write %s\n", a->output);
        return 2;
    }
    printf("# wrote %s\n", a->output);
    return 0;
}

int cdse_cmd_fit(int argc, char **argv)
{
    fit_args a;
    int rc = parse_fit_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.force && access(a.output, F_OK) == 0) {
        fprintf(stderr, "clusterdse fit: %s exists; use --force to overwrite it\n", a.output);
        return 1;
    }
    char dir_err[CDSE_PATH_MAX + 256];
    if (cdse_output_dir_check(a.output, false, dir_err, sizeof dir_err) != 0) {
        fprintf(stderr, "clusterdse fit: -o: %s\n", dir_err);
        return 1;
    }
    cdse_probe_result pr;
    cdse_diag diag = {""};
    cdse_store_quiet_hdf5();
    cdse_cli_file_guard("clusterdse fit", "measure again with clusterdse probe");
    rc = cdse_probe_read(a.probes, &pr, &diag);
    if (rc != 0) {
        fprintf(stderr, "clusterdse fit: %s\n", diag.msg);
        return rc == CDSE_EINVAL ? 1 : 2; /* not a probe store: input; damaged: a read failure */
    }
    cdse_probe_fit fit;
    rc = cdse_fit_probes(&pr, &a.options, &fit, &diag);
    if (rc == 0)
        print_summary(&a, &pr, &fit);
    else
        fprintf(stderr, "clusterdse fit: %s: %s\n", a.probes, diag.msg);
    int status = rc == 0 ? 0 : rc == CDSE_ENOMEM ? 2 : 1;
    cdse_system *system = malloc(sizeof *system);
    char base_path[CDSE_PATH_MAX];
    if (status == 0 &&
        (system == NULL || fitted_system(&a, &pr, &fit, system, base_path, sizeof base_path) != 0))
        status = system == NULL ? 2 : 1;
    if (status == 0)
        status = write_output(&a, &pr, &fit, system, base_path);
    free(system);
    cdse_probe_fit_free(&fit);
    cdse_probe_result_free(&pr);
    return status;
}
