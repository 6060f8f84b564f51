/* clusterdse fit PROBES.h5 -o PROFILE.cfg: latency and bandwidth per network level and
 * collective from probe data, written as a network profile. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clusterdse/calibrate/fit.h"
#include "clusterdse/config/job.h"
#include "clusterdse/model/collective.h"
#include "commands.h"

#ifndef CDSE_VERSION
#define CDSE_VERSION "0"
#endif

/* Probe rows of level 0 (groups within a node) and 1 (one rank per node); mixed ones are not
 * fitted. */
#define FIT_LEVELS 2
static const char *const level_names[FIT_LEVELS] = {"intra_node", "inter_node"};
static const char *const level_help[FIT_LEVELS] = {"groups within one node",
                                                   "groups with one rank per node"};

typedef enum fit_time {
    FT_MEDIAN = 0,
    FT_AVG,
    FT_ITERMAX,
    FT_MIN,
    FT_MAX,
    FT_BEST,
    FT_COUNT
} fit_time;
static const char *const time_names[FT_COUNT] = {"median", "avg", "itermax", "min", "max", "best"};

typedef struct fit_args {
    const char *probes, *output, *base, *name;
    int time;                    /* fit_time */
    int dtype;                   /* cdse_probe_dtype, -1 = float if present, else the first */
    double min_bytes, max_bytes; /* rows outside [min, max] are not fitted */
    bool force;
} fit_args;

typedef struct level_fit {
    int n_rows;
    double *holdout_rel[CDSE_COLL_COUNT]; /* hold-out relative errors (malloc'd) */
    int n_holdout[CDSE_COLL_COUNT];
    bool has[CDSE_COLL_COUNT];
    cdse_fit_result fit[CDSE_COLL_COUNT];
    double comm_only_gbs[CDSE_COLL_COUNT]; /* allreduce / reduce_scatter without the reduction */
} level_fit;

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
            "  --force            overwrite FILE\n"
            "  -h, --help         this text\n"
            "Exit codes: 0 done, 1 bad input, 2 runtime failure.\n");
}

static int parse_fit_args(int argc, char **argv, fit_args *a)
{
    memset(a, 0, sizeof *a);
    a->dtype = -1;
    a->min_bytes = 0;
    a->max_bytes = 1e300;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool more = i + 1 < argc;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fit_usage(stdout);
            return 0;
        } else if ((strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) && more) {
            a->output = argv[++i];
        } else if (strcmp(arg, "--base") == 0 && more) {
            a->base = argv[++i];
        } else if (strcmp(arg, "--name") == 0 && more) {
            a->name = argv[++i];
        } else if (strcmp(arg, "--time") == 0 && more) {
            const char *v = argv[++i];
            a->time = -1;
            for (int t = 0; t < FT_COUNT; t++)
                if (strcmp(v, time_names[t]) == 0)
                    a->time = t;
            if (a->time < 0) {
                fprintf(
                    stderr,
                    "clusterdse fit: --time %s; allowed: median, avg, itermax, min, max, best\n",
                    v);
                return 1;
            }
        } else if (strcmp(arg, "--dtype") == 0 && more) {
            const char *v = argv[++i];
            for (int d = 0; d < CDSE_PDT_COUNT; d++)
                if (strcmp(v, cdse_probe_dtype_name(d)) == 0)
                    a->dtype = d;
            if (a->dtype < 0) {
                fprintf(stderr,
                        "clusterdse fit: --dtype %s; allowed: float, double, int32, uint8\n", v);
                return 1;
            }
        } else if ((strcmp(arg, "--min-bytes") == 0 || strcmp(arg, "--max-bytes") == 0) && more) {
            char *end = NULL;
            double v = strtod(argv[++i], &end);
            if (*end || !(v >= 0)) {
                fprintf(stderr, "clusterdse fit: %s %s; allowed: a byte count >= 0\n", arg,
                        argv[i]);
                return 1;
            }
            if (strcmp(arg, "--min-bytes") == 0)
                a->min_bytes = v;
            else
                a->max_bytes = v;
        } else if (strcmp(arg, "--force") == 0) {
            a->force = true;
        } else if (arg[0] != '-' && a->probes == NULL) {
            a->probes = arg;
        } else {
            fprintf(stderr, "clusterdse fit: unexpected argument '%s'\n", arg);
            fit_usage(stderr);
            return 1;
        }
    }
    if (a->probes == NULL || a->output == NULL) {
        fprintf(stderr, "clusterdse fit: need PROBES.h5 and -o PROFILE.cfg\n");
        fit_usage(stderr);
        return 1;
    }
    return -1;
}

static double row_time(const cdse_probe_row *r, int which)
{
    switch (which) {
    case FT_ITERMAX:
        return r->t_itermax_us;
    case FT_MIN:
        return r->t_min_us;
    case FT_MAX:
        return r->t_max_us;
    case FT_AVG:
        return r->t_avg_us;
    case FT_BEST:
        return r->t_best_us;
    default:
        return r->t_median_us;
    }
}

/* The local reduction rate for the dtype: the rate at the largest probed size. */
static double reduce_rate(const cdse_probe_result *pr, const char *dtype, int64_t *at_bytes)
{
    double gbs = 0;
    *at_bytes = 0;
    for (int i = 0; i < pr->n_reduce; i++)
        if (strcmp(pr->reduce[i].dtype, dtype) == 0 && pr->reduce[i].bytes >= *at_bytes) {
            *at_bytes = pr->reduce[i].bytes;
            gbs = pr->reduce[i].gbs;
        }
    return gbs;
}

static int fit_levels(const cdse_probe_result *pr, const fit_args *a, const char *dtype,
                      double reduce_gbs, level_fit levels[FIT_LEVELS], int *mixed)
{
    cdse_fit_point *pts = malloc(sizeof *pts * (size_t)(pr->n_rows + 1));
    if (pts == NULL)
        return CDSE_ENOMEM;
    memset(levels, 0, sizeof(level_fit) * FIT_LEVELS);
    *mixed = 0;
    for (int i = 0; i < pr->n_rows; i++) {
        const cdse_probe_row *r = &pr->rows[i];
        if (strcmp(r->dtype, dtype) != 0)
            continue;
        if (r->level >= 0 && r->level < FIT_LEVELS)
            levels[r->level].n_rows++;
        else
            (*mixed)++;
    }
    for (int l = 0; l < FIT_LEVELS; l++) {
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            int n = 0;
            for (int i = 0; i < pr->n_rows; i++) {
                const cdse_probe_row *r = &pr->rows[i];
                if (r->level != l || strcmp(r->dtype, dtype) != 0 ||
                    strcmp(r->collective, cdse_probe_coll_name(c)) != 0 ||
                    (double)r->bytes < a->min_bytes || (double)r->bytes > a->max_bytes)
                    continue;
                double t = row_time(r, a->time);
                if (t > 0)
                    pts[n++] = (cdse_fit_point){r->group_size, (double)r->bytes, t};
            }
            if (n < 2 || cdse_fit_collective(c, pts, n, &levels[l].fit[c]) != 0)
                continue;
            levels[l].has[c] = true;
            levels[l].holdout_rel[c] = malloc(sizeof(double) * (size_t)n);
            if (levels[l].holdout_rel[c] != NULL)
                cdse_fit_holdout(c, pts, n, levels[l].holdout_rel[c], &levels[l].n_holdout[c]);
            if (reduce_gbs > 0 && cdse_coll_table[c].reduces) {
                cdse_fit_result comm;
                cdse_fit_remove_reduction(c, reduce_gbs, pts, n);
                if (cdse_fit_collective(c, pts, n, &comm) == 0)
                    levels[l].comm_only_gbs[c] = comm.profile.bandwidth_gbs;
            }
        }
    }
    free(pts);
    return 0;
}

/* Median over every held-out point of every fit. */
static double pooled_holdout(const level_fit levels[FIT_LEVELS], int *count)
{
    int n = 0;
    for (int l = 0; l < FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            n += levels[l].n_holdout[c];
    double *all = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    *count = 0;
    if (all == NULL)
        return 0;
    for (int l = 0; l < FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            for (int i = 0; i < levels[l].n_holdout[c]; i++)
                all[(*count)++] = levels[l].holdout_rel[c][i];
    double m = cdse_fit_median(all, *count);
    free(all);
    return m;
}

static void free_levels(level_fit levels[FIT_LEVELS])
{
    for (int l = 0; l < FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            free(levels[l].holdout_rel[c]);
}

static void print_fits(FILE *out, const level_fit levels[FIT_LEVELS], double *worst_holdout)
{
    *worst_holdout = 0;
    fprintf(out, "# %-10s %-14s %5s %6s %5s %10s %10s %-6s %7s %8s %8s %8s   %s\n", "level",
            "collective", "n", "points", "sizes", "lat_us", "bw_GBs", "choice", "R2", "worst",
            "median", "holdout", "regimes: lat_us bw_GBs <= break_B < lat_us bw_GBs");
    for (int l = 0; l < FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            if (!levels[l].has[c])
                continue;
            const cdse_fit_result *f = &levels[l].fit[c];
            char n_text[16], holdout[16];
            if (f->group_min == f->group_max)
                snprintf(n_text, sizeof n_text, "%d", f->group_min);
            else
                snprintf(n_text, sizeof n_text, "%d-%d", f->group_min, f->group_max);
            if (f->holdout_points > 0)
                snprintf(holdout, sizeof holdout, "%7.1f%%", 100 * f->holdout_median);
            else
                snprintf(holdout, sizeof holdout, "%8s", "-");
            if (f->holdout_points > 0 && f->holdout_median > *worst_holdout)
                *worst_holdout = f->holdout_median;
            fprintf(out,
                    "  %-10s %-14s %5s %6d %5d %10.3f %10.3f %-6s %7.4f %7.1f%% %7.1f%% %8s   "
                    "%.3f %.3f <= %.0f < %.3f %.3f\n",
                    level_names[l], cdse_probe_coll_name(c), n_text, f->n_points, f->n_sizes,
                    f->profile.latency_us, f->profile.bandwidth_gbs,
                    cdse_fit_choice_name(f->choice), f->stats.r2, 100 * f->stats.worst_rel,
                    100 * f->stats.median_rel, holdout, f->small.latency_us, f->small.bandwidth_gbs,
                    f->breakpoint_bytes, f->large.latency_us, f->large.bandwidth_gbs);
        }
}

/* A libconfig float: %.6g with a decimal point (libconfig reads "1" as an integer). */
static const char *cfg_float(double v, char *buf, size_t size)
{
    snprintf(buf, size, "%.6g", v);
    if (strpbrk(buf, ".n") == NULL) {
        char *e = strchr(buf, 'e');
        char tail[32] = "";
        if (e) {
            snprintf(tail, sizeof tail, "%s", e);
            *e = '\0';
        }
        strncat(buf, ".0", size - strlen(buf) - 1);
        strncat(buf, tail, size - strlen(buf) - 1);
    }
    return buf;
}

/* Writes one level group; `fallback` is the level of a base system (NULL: from the fits). */
static void write_level(FILE *out, const char *name, int size, const level_fit *lf,
                        const cdse_net_level *fallback, bool last)
{
    double bw = 0, lat = 0, eff = 1.0;
    if (fallback) {
        bw = fallback->bandwidth_gbs;
        lat = fallback->latency_us;
        eff = fallback->efficiency;
    } else if (lf->has[CDSE_COLL_SENDRECV]) { /* point-to-point: the plain link */
        bw = lf->fit[CDSE_COLL_SENDRECV].profile.bandwidth_gbs;
        lat = lf->fit[CDSE_COLL_SENDRECV].profile.latency_us;
    } else {
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            if (lf->has[c] && lf->fit[c].profile.bandwidth_gbs > bw) {
                bw = lf->fit[c].profile.bandwidth_gbs;
                lat = lf->fit[c].profile.latency_us;
            }
    }
    char b1[32], b2[32], b3[32];
    fprintf(out, "  { name = \"%s\"; size = %d; bandwidth = %s; latency = %s; efficiency = %s;\n",
            name, size, cfg_float(bw, b1, sizeof b1), cfg_float(lat, b2, sizeof b2),
            cfg_float(eff, b3, sizeof b3));
    for (int c = 0; lf && c < CDSE_COLL_COUNT; c++) {
        if (!lf->has[c])
            continue;
        const cdse_fit_result *f = &lf->fit[c];
        fprintf(out, "    %s = { latency = %s; bandwidth = %s; };", cdse_probe_coll_name(c),
                cfg_float(f->profile.latency_us, b1, sizeof b1),
                cfg_float(f->profile.bandwidth_gbs, b2, sizeof b2));
        fprintf(out, "  # R2 %.3f, median err %.1f%%, hold-out %.1f%%\n", f->stats.r2,
                100 * f->stats.median_rel, 100 * f->holdout_median);
    }
    fprintf(out, "  }%s\n", last ? "" : ",");
}

static int write_profile(const fit_args *a, const cdse_probe_result *pr, const char *dtype,
                         double reduce_gbs, int64_t reduce_bytes,
                         const level_fit levels[FIT_LEVELS], const cdse_system *base,
                         const char *base_path)
{
    FILE *out = fopen(a->output, "w");
    if (out == NULL)
        return CDSE_EIO;
    const cdse_probe_info *in = &pr->info;
    char now[32];
    time_t t = time(NULL);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    fprintf(out, "# Network profile fitted by clusterdse fit %s on %s from %s.\n", CDSE_VERSION,
            now, a->probes);
    fprintf(out, "# Measured %s on %s: %d ranks on %d node(s), %d per node; plan \"%s\".\n",
            in->date, in->hostnames, in->ranks, in->nodes, in->ranks_per_node, in->plan_name);
    fprintf(out, "# MPI library: %s\n", in->mpi_library);
    if (in->env[0]) {
        fprintf(out, "# Environment selecting collective algorithms:\n");
        char env[sizeof in->env];
        snprintf(env, sizeof env, "%s", in->env);
        for (char *line = strtok(env, "\n"); line; line = strtok(NULL, "\n"))
            fprintf(out, "#   %s\n", line);
    }
    fprintf(out, "# Fitted on dtype %s, time t_%s, weighted least squares on relative error.\n",
            dtype, time_names[a->time]);
    if (a->min_bytes > 0 || a->max_bytes < 1e300)
        fprintf(out, "# Only messages from %.0f to %.4g bytes were fitted.\n", a->min_bytes,
                a->max_bytes);
    fprintf(out,
            "# Per collective: latency (us per step) and effective bandwidth (GB/s) in the\n"
            "# terms of src/model/collective.c (ring: allreduce 2(n-1)/n B/bw + 2(n-1) lat; ...).\n");
    if (reduce_gbs > 0) {
        fprintf(out,
                "# reduce_bandwidth = %.4g GB/s: local reduction rate (MPI_Reduce_local, %s, "
                "%lld B).\n",
                reduce_gbs, dtype, (long long)reduce_bytes);
        fprintf(out, "#   The allreduce / reduce_scatter bandwidths below include the reduction;");
        fprintf(out, " without it:\n");
        for (int l = 0; l < FIT_LEVELS; l++)
            for (int c = 0; c < CDSE_COLL_COUNT; c++)
                if (levels[l].comm_only_gbs[c] > 0)
                    fprintf(out, "#   %s %s: %.4g GB/s\n", level_names[l], cdse_probe_coll_name(c),
                            levels[l].comm_only_gbs[c]);
    }
    bool have[FIT_LEVELS];
    for (int l = 0; l < FIT_LEVELS; l++) {
        have[l] = false;
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            have[l] = have[l] || levels[l].has[c];
    }
    char name[CDSE_NAME_MAX];
    if (a->name)
        snprintf(name, sizeof name, "%s", a->name);
    else if (base)
        snprintf(name, sizeof name, "%.30s-fitted", base->name);
    else
        snprintf(name, sizeof name, "fitted");
    if (base) {
        fprintf(out, "# Everything but the network's fitted collectives comes from %s.\n",
                base_path);
        fprintf(out, "base = \"%s\";\n", base_path);
    }
    fprintf(out, "name = \"%s\";\nnetwork = (\n", name);
    if (base) {
        for (int l = 0; l < base->n_levels; l++) {
            /* Probe level 0 -> innermost level, probe level 1 -> outermost. */
            const level_fit *lf = NULL;
            if (l == 0 && have[0])
                lf = &levels[0];
            else if (l == base->n_levels - 1 && l > 0 && have[1])
                lf = &levels[1];
            level_fit empty;
            memset(&empty, 0, sizeof empty);
            write_level(out, base->level[l].name, base->level[l].size, lf ? lf : &empty,
                        &base->level[l], l == base->n_levels - 1);
        }
    } else if (have[0] && have[1]) {
        write_level(out, level_names[0], in->ranks_per_node, &levels[0], NULL, false);
        write_level(out, level_names[1], 0, &levels[1], NULL, true);
    } else {
        int l = have[1] ? 1 : 0;
        fprintf(out, "  # only %s was measured: one level spanning the whole system\n",
                level_names[l]);
        write_level(out, level_names[l], 0, &levels[l], NULL, true);
    }
    fprintf(out, ");\n");
    return fclose(out) == 0 ? 0 : CDSE_EIO;
}

/* Picks the dtype: the requested one, else float, else the first row's. */
static const char *pick_dtype(const cdse_probe_result *pr, int wanted)
{
    const char *want = wanted >= 0 ? cdse_probe_dtype_name(wanted) : "float";
    for (int i = 0; i < pr->n_rows; i++)
        if (strcmp(pr->rows[i].dtype, want) == 0)
            return want;
    return wanted < 0 && pr->n_rows > 0 ? pr->rows[0].dtype : NULL;
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
    cdse_system base;
    char base_path[CDSE_PATH_MAX] = "";
    if (a.base && load_base(&a, &base, base_path, sizeof base_path) != 0)
        return 1;
    cdse_probe_result pr;
    cdse_diag diag = {""};
    rc = cdse_probe_read(a.probes, &pr, &diag);
    if (rc != 0) {
        fprintf(stderr, "clusterdse fit: %s\n", diag.msg);
        return 1;
    }
    const char *dtype = pick_dtype(&pr, a.dtype);
    int status = 0;
    level_fit levels[FIT_LEVELS];
    int mixed = 0;
    int64_t reduce_bytes = 0;
    double reduce_gbs = dtype ? reduce_rate(&pr, dtype, &reduce_bytes) : 0;
    if (dtype == NULL || fit_levels(&pr, &a, dtype, reduce_gbs, levels, &mixed) != 0) {
        fprintf(stderr, "clusterdse fit: %s: no probe rows%s%s\n", a.probes,
                a.dtype >= 0 ? " of dtype " : "",
                a.dtype >= 0 ? cdse_probe_dtype_name(a.dtype) : "");
        cdse_probe_result_free(&pr);
        return 1;
    }
    int fitted = 0;
    for (int l = 0; l < FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            fitted += levels[l].has[c];
    printf("# clusterdse fit: %s: %d ranks on %d node(s) (%s), measured %s\n", a.probes,
           pr.info.ranks, pr.info.nodes, pr.info.hostnames, pr.info.date);
    if (a.min_bytes > 0 || a.max_bytes < 1e300)
        printf("# fitting messages from %.0f to %.4g bytes only\n", a.min_bytes, a.max_bytes);
    printf("# dtype %s, time t_%s; rows: %d %s (level 0), %d %s (level 1), %d mixed (not "
           "fitted)\n",
           dtype, time_names[a.time], levels[0].n_rows, level_help[0], levels[1].n_rows,
           level_help[1], mixed);
    if (pr.info.nodes <= 1)
        printf("# one node: only level 0 (intra_node) can be fitted; run on 2+ nodes for the "
               "inter-node level\n");
    if (fitted == 0) {
        fprintf(stderr, "clusterdse fit: no collective has 2 or more sizes on a level to fit\n");
        free_levels(levels);
        cdse_probe_result_free(&pr);
        return 1;
    }
    double worst_holdout;
    print_fits(stdout, levels, &worst_holdout);
    if (reduce_gbs > 0) {
        printf("# local reduction (MPI_Reduce_local, %s, %lld B): %.3f GB/s; allreduce / "
               "reduce_scatter bandwidth without it:",
               dtype, (long long)reduce_bytes, reduce_gbs);
        for (int l = 0; l < FIT_LEVELS; l++)
            for (int c = 0; c < CDSE_COLL_COUNT; c++)
                if (levels[l].comm_only_gbs[c] > 0)
                    printf(" %s %s %.3f GB/s;", level_names[l], cdse_probe_coll_name(c),
                           levels[l].comm_only_gbs[c]);
        printf("\n");
    }
    int n_held = 0;
    double pooled = pooled_holdout(levels, &n_held);
    printf("# hold-out (fit on every other size, predict the others with the profile's pair): "
           "median relative error %.1f%% over %d held-out points (issue target 20%%); worst "
           "per-fit median %.1f%%\n",
           100 * pooled, n_held, 100 * worst_holdout);
    if (write_profile(&a, &pr, dtype, reduce_gbs, reduce_bytes, levels, a.base ? &base : NULL,
                      base_path) != 0) {
        fprintf(stderr, "clusterdse fit: cannot write %s\n", a.output);
        status = 2;
    } else {
        printf("# wrote %s\n", a.output);
    }
    free_levels(levels);
    cdse_probe_result_free(&pr);
    return status;
}
