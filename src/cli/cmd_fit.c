/* clusterdse fit PROBES.h5 -o PROFILE.cfg: latency and bandwidth per network level and
 * collective from probe data, written as a network profile. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/calibrate/calibrate.h"
#include "clusterdse/calibrate/fit.h"
#include "clusterdse/calibrate/logs.h"
#include "clusterdse/model/collective.h"
#include "clusterdse/config/job.h"
#include "clusterdse/sweep/store.h"
#include "commands.h"
#include "options.h"
#include "output_dir.h"
#include "store_guard.h"

static const char *const level_help[CDSE_FIT_LEVELS] = {"groups within one node",
                                                        "groups with one rank per node"};

#define FIT_MAX_INPUTS 32

/* One input: a probe store (HDF5) or a nccl-tests / OSU log, with what --ranks and --level said
 * before it. */
typedef struct fit_input {
    const char *path;
    int ranks;              /* --ranks before it (0: none) */
    const char *level_name; /* --level before it (NULL: from the log) */
    bool is_log;
    cdse_log_info log;
    int rows[CDSE_FIT_LEVELS]; /* its rows per probe level */
} fit_input;

typedef struct fit_args {
    fit_input in[FIT_MAX_INPUTS];
    int n_in;
    const char *output, *base, *name, *levels;
    const char *job, *system; /* --job JOB --system NAME: that system of the job is the base */
    cdse_probe_take take;     /* and its probe.levels, probe.force */
    cdse_fit_options options;
    bool force;
    long ranks;        /* the last --ranks: for the inputs after it (0: none yet) */
    const char *level; /* the last --level: for the inputs after it */
} fit_args;

static int parse_time(void *args, const char *v, char *err, size_t size)
{
    (void)err, (void)size;
    fit_args *a = args;
    for (int t = 0; t < CDSE_FT_COUNT; t++)
        if (strcmp(v, cdse_fit_time_name(t)) == 0)
            a->options.time = t;
    return strcmp(v, cdse_fit_time_name(a->options.time)) == 0 ? 0 : -1;
}

static int parse_dtype(void *args, const char *v, char *err, size_t size)
{
    (void)err, (void)size;
    fit_args *a = args;
    for (int d = 0; d < CDSE_PDT_COUNT; d++)
        if (strcmp(v, cdse_probe_dtype_name(d)) == 0)
            a->options.dtype = d;
    return a->options.dtype >= 0 ? 0 : -1;
}

static int parse_estimator(void *args, const char *v, char *err, size_t size)
{
    (void)err, (void)size;
    fit_args *a = args;
    a->options.estimator = cdse_fit_choice_parse(v);
    return a->options.estimator >= 0 ? 0 : -1;
}

/* An input, with the --ranks and --level given before it. */
static int fit_input_arg(void *args, const char *arg, char *err, size_t size)
{
    fit_args *a = args;
    if (a->n_in == FIT_MAX_INPUTS) {
        snprintf(err, size, "unexpected argument '%s' (at most %d inputs)", arg, FIT_MAX_INPUTS);
        return -1;
    }
    a->in[a->n_in++] = (fit_input){.path = arg, .ranks = (int)a->ranks, .level_name = a->level};
    return 0;
}

#define FIT_FIELD(f) offsetof(fit_args, f)
static const cdse_cli_option fit_options[] = {
    {"--output", 'o', "FILE", "profile to write (required)", CDSE_CLI_STRING, FIT_FIELD(output), 0,
     0, NULL, NULL},
    {"--base", 0, "SYSTEM",
     "write a complete system: SYSTEM's keys (calibration/systems/\n"
     "SYSTEM.cfg or a path) with measured levels replaced: by\n"
     "default only the outermost (from inter_node rows); the\n"
     "innermost (intra_node rows) only when --levels names it",
     CDSE_CLI_STRING, FIT_FIELD(base), 0, 0, NULL, NULL},
    {"--levels", 0, "A,B",
     "the levels to replace (names of --base's levels, or\n"
     "intra_node, inter_node without --base); each must be measured",
     CDSE_CLI_STRING, FIT_FIELD(levels), 0, 0, NULL, NULL},
    {"--force", 0, NULL,
     "write a fitted bandwidth more than 3x away from the base\n"
     "level's (refused otherwise), and overwrite FILE",
     CDSE_CLI_FLAG, FIT_FIELD(force), 0, 0, NULL, NULL},
    {"--ranks", 0, "N", "ranks of the logs after it (OSU logs do not say)", CDSE_CLI_INT,
     FIT_FIELD(ranks), 2, 1000000, "a whole number from 2 to 1000000", NULL},
    {"--level", 0, "NAME",
     "level of the logs after it: intra_node, inter_node, or the\n"
     "innermost / outermost level of --base (OSU logs need it)",
     CDSE_CLI_STRING, FIT_FIELD(level), 0, 0, NULL, NULL},
    {"--name", 0, "NAME", "profile name (default: fitted, or SYSTEM-fitted)", CDSE_CLI_STRING,
     FIT_FIELD(name), 0, 0, NULL, NULL},
    {"--time", 0, "WHICH",
     "time to fit: median (default: median over iterations of the\n"
     "slowest rank, robust to preemption), avg (mean over ranks),\n"
     "itermax (mean over iterations of the slowest rank), min, max\n"
     "(over ranks of the per-rank means), best (fastest iteration\n"
     "of the slowest rank: for a machine shared with other work)",
     CDSE_CLI_CALL, 0, 0, 0, "median, avg, itermax, min, max, best", parse_time},
    {"--dtype", 0, "NAME", "datatype rows to fit (default float if present)", CDSE_CLI_CALL, 0, 0,
     0, "float, double, int32, uint8", parse_dtype},
    {"--min-bytes", 0, "B",
     "fit only messages of at least B bytes: the sizes a training\n"
     "job sends (its TP, PP and DP messages are MBs), leaving out\n"
     "the small-message regime that one (latency, bandwidth) pair\n"
     "cannot follow together with the large one",
     CDSE_CLI_REAL, FIT_FIELD(options.min_bytes), 0, HUGE_VAL, "a byte count >= 0", NULL},
    {"--max-bytes", 0, "B",
     "fit only messages of at most B bytes (e.g. below a cache\n"
     "cliff; docs/calibration.md)",
     CDSE_CLI_REAL, FIT_FIELD(options.max_bytes), 0, HUGE_VAL, "a byte count >= 0", NULL},
    {"--estimator", 0, "NAME",
     "single, hybrid, large, robust or lmeds for every pair\n"
     "(default: the one whose pairs predict held-out sizes best)",
     CDSE_CLI_CALL, 0, 0, 0, "single, hybrid, large, robust, lmeds", parse_estimator},
    {"--job", 0, "JOB", NULL, CDSE_CLI_STRING, FIT_FIELD(job), 0, 0, NULL, NULL},
    {"--system", 0, "NAME",
     "write the network of system NAME of job file JOB with the\n"
     "fits applied exactly as the job's probe section applies them\n"
     "(the same bytes as the profile a sweep writes for it)",
     CDSE_CLI_STRING, FIT_FIELD(system), 0, 0, NULL, NULL},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void fit_usage(FILE *out);
static const cdse_cli_command fit_command = {
    "fit", fit_options, CDSE_CLI_COUNT(fit_options), 18, fit_input_arg, fit_usage,
};

static void fit_usage(FILE *out)
{
    fputs("usage: clusterdse fit INPUT... -o PROFILE.cfg [--base SYSTEM] [--levels A,B]\n"
          "                      [--name NAME] [--time median|avg|itermax|min|max|best]\n"
          "                      [--dtype NAME] [--min-bytes B] [--max-bytes B]\n"
          "                      [--estimator NAME] [--force]\n"
          "   INPUT: PROBES.h5 (clusterdse probe), or a nccl-tests or OSU log, each\n"
          "          optionally after [--ranks N] [--level NAME] that apply to the logs after\n"
          "          them\n"
          "\n"
          "Fits latency (us per step) and effective bandwidth (GB/s) per network level and\n"
          "collective to measured collectives, in the terms of the sweep's collective\n"
          "model (ring allreduce 2(n-1)/n B/bw + 2(n-1) lat; allgather, reduce_scatter,\n"
          "alltoall (n-1)/n B/bw + (n-1) lat; sendrecv B/bw + lat), and writes a network\n"
          "profile (libconfig) that a job's system can use with network_profile = \"FILE\".\n"
          "Inputs: the /probes table of a probe store; nccl-tests logs (all_reduce_perf,\n"
          "all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf: size column,\n"
          "out-of-place time; --time best takes the faster of out-of-place and in-place);\n"
          "OSU logs (osu_allreduce, osu_allgather, osu_reduce_scatter, osu_alltoall,\n"
          "osu_latency, osu_bw: sizes converted to the nccl-tests convention).\n"
          "Level 0 (intra_node) is fitted on groups within a node, level 1 (inter_node) on\n"
          "groups with one rank per node; groups that mix both are not used. A log's level\n"
          "comes from its rank lines' host names and Group column (nccl-tests; a run split\n"
          "with NCCL_TESTS_SPLIT=\"DIV 8\" or \"MOD 8\" measures one level) or from --level.\n"
          "Prints R^2, worst and median relative error per fit and a hold-out check (fit on\n"
          "every other size, error on the others).\n"
          "\n",
          out);
    cdse_cli_print_options(&fit_command, out);
    fputs("Exit codes: 0 done, 1 bad input, 2 runtime failure.\n", out);
}

/* Returns -1 to go on, else the exit code. */
static int parse_fit_args(int argc, char **argv, fit_args *a)
{
    memset(a, 0, sizeof *a);
    cdse_fit_options_default(&a->options);
    int rc = cdse_cli_parse(&fit_command, argc, argv, a);
    if (rc >= 0)
        return rc;
    if (a->n_in == 0 || a->output == NULL) {
        fprintf(stderr, "clusterdse fit: need an INPUT (PROBES.h5 or a log) and -o PROFILE.cfg\n");
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
    if (a->options.min_bytes > a->options.max_bytes) {
        fprintf(stderr, "clusterdse fit: --min-bytes %.0f is above --max-bytes %.0f\n",
                a->options.min_bytes, a->options.max_bytes);
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
            cdse_fit_level_names[level], cdse_probe_coll_name(coll), n_text, f->n_points,
            f->n_sizes, f->profile.latency_us, f->profile.bandwidth_gbs,
            cdse_fit_choice_name(f->choice), f->stats.r2, 100 * f->stats.worst_rel,
            100 * f->stats.median_rel, holdout, f->small.latency_us, f->small.bandwidth_gbs,
            f->breakpoint_bytes, f->large.latency_us, f->large.bandwidth_gbs);
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
static int load_job_system(fit_args *a, cdse_system *system)
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
    if (found >= 0) {
        *system = job->system[found];
        a->take = job->probe_take;
    } else
        fprintf(stderr, "clusterdse fit: --system %s: not a system of %s\n", a->system, a->job);
    cdse_job_free(job);
    free(job);
    return found >= 0 ? 0 : 1;
}

/* The probe level (0 or 1) a level name stands for: intra_node / inter_node, or with a base
 * system its innermost / outermost level's name. -1 (message printed) otherwise. */
static int probe_level_of(const char *option, const char *name, const cdse_system *base)
{
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        if (strcmp(name, cdse_fit_level_names[l]) == 0)
            return l;
    if (base != NULL)
        for (int l = 0; l < CDSE_FIT_LEVELS; l++) {
            int k = cdse_fit_target_level(l, base);
            if (k >= 0 && strcmp(name, base->level[k].name) == 0)
                return l;
        }
    fprintf(stderr, "clusterdse fit: %s %s; allowed: intra_node, inter_node", option, name);
    if (base != NULL && base->n_levels >= 1)
        fprintf(stderr, ", %s (innermost level of %s)", base->level[0].name, base->name);
    if (base != NULL && base->n_levels >= 2)
        fprintf(stderr, ", %s (outermost level)", base->level[base->n_levels - 1].name);
    fprintf(stderr, "\n");
    return -1;
}

static int append_store(cdse_probe_result *all, cdse_probe_result *one, bool first_store)
{
    cdse_probe_row *rows =
        realloc(all->rows, sizeof *rows * (size_t)(all->n_rows + one->n_rows + 1));
    cdse_reduce_row *red =
        realloc(all->reduce, sizeof *red * (size_t)(all->n_reduce + one->n_reduce + 1));
    if (rows)
        all->rows = rows;
    if (red)
        all->reduce = red;
    if (!rows || !red)
        return CDSE_ENOMEM;
    /* a store may hold no reduce rows (or no rows): memcpy's source must not be NULL then */
    if (one->n_rows > 0)
        memcpy(all->rows + all->n_rows, one->rows, sizeof *rows * (size_t)one->n_rows);
    if (one->n_reduce > 0)
        memcpy(all->reduce + all->n_reduce, one->reduce, sizeof *red * (size_t)one->n_reduce);
    all->n_rows += one->n_rows;
    all->n_reduce += one->n_reduce;
    if (first_store)
        all->info = one->info;
    return 0;
}

static bool is_hdf5(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char head[8] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    return n == sizeof head && memcmp(head, sig, sizeof sig) == 0;
}

/* Reads every input into one set of rows; returns 0 or the exit code. */
static int read_inputs(fit_args *a, const cdse_system *base, cdse_probe_result *pr)
{
    bool stores = false;
    for (int i = 0; i < a->n_in; i++) {
        fit_input *in = &a->in[i];
        cdse_diag diag = {""};
        int first = pr->n_rows, rc;
        cdse_log_hint hint = {in->ranks, -1};
        if (in->level_name && (hint.level = probe_level_of("--level", in->level_name, base)) < 0)
            return 1;
        /* A missing input, a directory or a FIFO (which would block the read) is refused first. */
        if ((rc = cdse_store_check_path(in->path, &diag)) != CDSE_OK) {
            fprintf(stderr, "clusterdse fit: %s\n", diag.msg);
            return rc == CDSE_EINVAL ? 1 : 2;
        }
        if (is_hdf5(in->path)) {
            cdse_probe_result one;
            rc = cdse_probe_read(in->path, &one, &diag);
            if (rc == 0) {
                rc = append_store(pr, &one, !stores);
                cdse_probe_result_free(&one);
                stores = true;
            }
        } else {
            in->is_log = true;
            rc = cdse_log_read(in->path, &hint, pr, &in->log, &diag);
            if (rc == 0 && !stores) {
                cdse_probe_info *info = &pr->info;
                info->ranks = in->log.ranks > info->ranks ? in->log.ranks : info->ranks;
                info->nodes = in->log.nodes > info->nodes ? in->log.nodes : info->nodes;
                /* An intra-node log without host names (OSU): its ranks share one node. */
                int per_node = in->log.nodes > 0    ? in->log.ranks_per_node
                               : in->log.level == 0 ? in->log.ranks
                                                    : 0;
                if (per_node > info->ranks_per_node)
                    info->ranks_per_node = per_node;
            }
        }
        if (rc != 0) {
            fprintf(stderr, "clusterdse fit: %s\n", diag.msg[0] ? diag.msg : "out of memory");
            return rc == CDSE_EINVAL ? 1 : 2;
        }
        for (int r = first; r < pr->n_rows; r++)
            if (pr->rows[r].level >= 0 && pr->rows[r].level < CDSE_FIT_LEVELS)
                in->rows[pr->rows[r].level]++;
    }
    return 0;
}

/* "file, file, ..." of the inputs with rows on probe level l (at most `size`): their names, or
 * with full_path the paths as given. */
static void level_sources(const fit_args *a, int l, bool full_path, char *text, size_t size)
{
    text[0] = '\0';
    for (int i = 0; i < a->n_in; i++) {
        const fit_input *in = &a->in[i];
        if (in->rows[l] == 0)
            continue;
        size_t len = strlen(text);
        const char *slash = strrchr(in->path, '/');
        const char *file = slash && !full_path ? slash + 1 : in->path;
        int n = snprintf(text + len, size - len, "%s%s", len ? ", " : "", file);
        if (n < 0 || (size_t)n >= size - len) {
            snprintf(text + (size > 5 ? size - 5 : 0), size > 5 ? 5 : size, "...");
            return;
        }
    }
}

static void print_inputs(const fit_args *a, const cdse_probe_result *pr)
{
    for (int i = 0; i < a->n_in; i++) {
        const fit_input *in = &a->in[i];
        if (!in->is_log) {
            printf("# %s: probes, %d ranks on %d node(s) (%s), measured %s\n", in->path,
                   pr->info.ranks, pr->info.nodes, pr->info.hostnames, pr->info.date);
            continue;
        }
        const cdse_log_info *li = &in->log;
        char nodes[96] = "nodes not in the log";
        if (li->nodes > 0)
            snprintf(nodes, sizeof nodes, "%d node(s), %d per node", li->nodes, li->ranks_per_node);
        if (li->groups > 1) { /* nccl-tests' Group column (NCCL_TESTS_SPLIT) */
            size_t len = strlen(nodes);
            snprintf(nodes + len, sizeof nodes - len, ", %d groups of %d", li->groups,
                     li->group_size);
        }
        printf("# %s: %s %s%s%s, %d rows, %d ranks on %s, level %s%s%s%s\n", in->path,
               li->format == CDSE_LOG_OSU ? "OSU" : "nccl-tests", li->tool,
               li->version[0] ? " " : "", li->version, li->rows, li->ranks, nodes,
               li->level >= 0 ? cdse_fit_level_names[li->level] : "mixed (not fitted)",
               in->level_name ? " (--level)" : "", li->device[0] ? ", " : "", li->device);
        if (li->algo[0])
            printf("#   %s\n", li->algo);
        if (li->level < 0)
            printf(
                "#   its groups of %d ranks span up to %d nodes with several ranks on a node: "
                "neither one node nor one rank per node; run it on one node, or with one rank per "
                "node (on a whole allocation: NCCL_TESTS_SPLIT=\"DIV <GPUs per node>\" for "
                "the node level, \"MOD <GPUs per node>\" for the network), or name the level "
                "with --level\n",
                li->group_size, li->group_nodes);
    }
}

static void print_estimator(const cdse_probe_fit *fit)
{
    printf("# estimator %s for every fit: ", cdse_fit_choice_name(fit->estimator));
    if (fit->options.estimator >= 0)
        printf("--estimator;");
    else if (fit->estimator_holdout)
        printf("the lowest hold-out median relative error (every other size fitted, the others "
               "predicted):");
    else
        printf("too few sizes to hold any out; the lowest mean in-sample median relative error:");
    for (int e = 0; e < CDSE_FIT_CHOICE_COUNT; e++)
        printf(" %s %.2f%%%s", cdse_fit_choice_name(e), 100 * fit->estimator_score[e],
               e + 1 < CDSE_FIT_CHOICE_COUNT ? "," : "\n");
}

static void print_summary(const fit_args *a, const cdse_probe_result *pr, const cdse_probe_fit *fit)
{
    const cdse_fit_options *o = &fit->options;
    print_inputs(a, pr);
    char sizes[96];
    cdse_fit_describe_sizes(o, sizes, sizeof sizes);
    if (sizes[0])
        printf("# fitting messages %s only\n", sizes);
    printf("# dtype %s, time t_%s; rows: %d %s (level 0), %d %s (level 1), %d mixed (not "
           "fitted)\n",
           fit->dtype, cdse_fit_time_name(o->time), fit->level[0].n_rows, level_help[0],
           fit->level[1].n_rows, level_help[1], fit->mixed);
    if (fit->level[1].n_rows == 0)
        printf("# no inter-node rows: only level 0 (intra_node) can be fitted; measure on 2+ "
               "nodes with one rank per node for the inter-node level\n");
    print_estimator(fit);
    double worst_holdout;
    print_fits(stdout, fit, &worst_holdout);
    if (fit->reduce_gbs > 0) {
        printf("# local reduction (MPI_Reduce_local, %s, %lld B): %.3f GB/s; allreduce / "
               "reduce_scatter bandwidth without it:",
               fit->dtype, (long long)fit->reduce_bytes, fit->reduce_gbs);
        for (int l = 0; l < CDSE_FIT_LEVELS; l++)
            for (int c = 0; c < CDSE_COLL_COUNT; c++)
                if (fit->level[l].comm_only_gbs[c] > 0)
                    printf(" %s %s %.3f GB/s;", cdse_fit_level_names[l], cdse_probe_coll_name(c),
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

static bool level_has_fit(const cdse_probe_fit *fit, int l)
{
    for (int c = 0; c < CDSE_COLL_COUNT; c++)
        if (fit->level[l].has[c])
            return true;
    return false;
}

/* Which probe levels to write (use[]): --levels, else with a base system only the outermost,
 * else every measured one. Returns 0 or the exit code. */
static int choose_levels(const fit_args *a, const cdse_probe_fit *fit, const cdse_system *base,
                         bool use[CDSE_FIT_LEVELS])
{
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        use[l] = level_has_fit(fit, l) &&
                 (base == NULL || (l == 1 && cdse_fit_target_level(1, base) >= 0));
    if (a->levels == NULL)
        return 0;
    use[0] = use[1] = false;
    char list[512];
    snprintf(list, sizeof list, "%s", a->levels);
    for (char *name = strtok(list, ","); name != NULL; name = strtok(NULL, ",")) {
        int l = probe_level_of("--levels", name, base);
        if (l < 0)
            return 1;
        if (!level_has_fit(fit, l)) {
            fprintf(stderr,
                    "clusterdse fit: --levels %s: not measured: no %s rows (groups %s) were "
                    "fitted, and nothing is written onto a level that was not measured\n",
                    name, cdse_fit_level_names[l], level_help[l]);
            return 1;
        }
        use[l] = true;
    }
    return 0;
}

/* Refuses a fitted bandwidth more than CDSE_FIT_BASE_RATIO_MAX away from the base level's
 * (either way) unless --force (cdse_fit_check_base). Returns 0 or 1. */
static int check_against_base(const fit_args *a, const cdse_probe_fit *fit, const cdse_system *base,
                              const bool use[CDSE_FIT_LEVELS])
{
    int off = cdse_fit_check_base(fit, base, use, a->force,
                                  a->force ? "# --force:" : "clusterdse fit:", "logs",
                                  "use --force", a->force ? stdout : stderr);
    return off > 0 && !a->force ? 1 : 0;
}

/* The profile's comments on where each level comes from. */
static void level_notes(const fit_args *a, const cdse_system *system, const bool written[],
                        const char *const source[CDSE_FIT_LEVELS], char *notes, size_t size)
{
    size_t len = 0;
    len += (size_t)snprintf(notes + len, size - len, "# Inputs:\n");
    for (int i = 0; i < a->n_in && len < size; i++) {
        const fit_input *in = &a->in[i];
        if (in->is_log)
            len += (size_t)snprintf(
                notes + len, size - len, "#   %s: %s %s, %d ranks, %d node(s), level %s%s%s%s%s\n",
                in->path, in->log.format == CDSE_LOG_OSU ? "OSU" : "nccl-tests", in->log.tool,
                in->log.ranks, in->log.nodes,
                in->log.level >= 0 ? cdse_fit_level_names[in->log.level] : "mixed",
                in->log.device[0] ? ", " : "", in->log.device, in->log.algo[0] ? ", " : "",
                in->log.algo);
        else
            len += (size_t)snprintf(notes + len, size - len, "#   %s: clusterdse probe store\n",
                                    in->path);
    }
    if (len >= size)
        return;
    len += (size_t)snprintf(notes + len, size - len, "# Levels:\n");
    for (int k = 0; k < system->n_levels && len < size; k++) {
        int from = -1;
        for (int l = 0; l < CDSE_FIT_LEVELS; l++)
            if (written[l] &&
                (a->base || a->job ? cdse_fit_target_level(l, system) == k
                                   : strcmp(system->level[k].name, cdse_fit_level_names[l]) == 0))
                from = l;
        if (from >= 0)
            len +=
                (size_t)snprintf(notes + len, size - len, "#   %s: measured (%s rows: %s)\n",
                                 system->level[k].name, cdse_fit_level_names[from], source[from]);
        else
            len += (size_t)snprintf(notes + len, size - len, "#   %s: datasheet (%s)\n",
                                    system->level[k].name, a->base ? a->base : system->name);
    }
}

static int write_output(const fit_args *a, const cdse_probe_result *pr, const cdse_probe_fit *fit,
                        const cdse_system *system, const char *base_path, const char *notes)
{
    char name[CDSE_NAME_MAX], inputs[1024] = "";
    if (a->name)
        snprintf(name, sizeof name, "%s", a->name);
    else if (a->base || a->job)
        snprintf(name, sizeof name, "%.30s-fitted", system->name);
    else
        snprintf(name, sizeof name, "fitted");
    for (int i = 0; i < a->n_in; i++) {
        size_t len = strlen(inputs);
        snprintf(inputs + len, sizeof inputs - len, "%s%s", i ? ", " : "", a->in[i].path);
    }
    FILE *out = fopen(a->output, "w");
    int rc = out ? cdse_fit_write_profile(out, fit, &pr->info, inputs, system,
                                          base_path[0] ? base_path : NULL, name, notes)
                 : CDSE_EIO;
    if (out != NULL && fclose(out) != 0)
        rc = CDSE_EIO;
    if (rc != 0) {
        fprintf(stderr, "clusterdse fit: cannot write %s\n", a->output);
        remove(a->output);
        return 2;
    }
    printf("# wrote %s\n", a->output);
    return 0;
}

/* Builds the profile's network (the base's with the chosen levels replaced, or one from the
 * fits alone), checks it against the base and writes it. Returns the exit code. */
static int build_and_write(const fit_args *a, const cdse_probe_result *pr,
                           const cdse_probe_fit *fit, cdse_system *system, bool have_base,
                           const char *base_path)
{
    if (a->job != NULL) { /* byte for byte what the job's probe section writes: its levels */
        if (cdse_probe_check(&a->take, fit, system, "clusterdse fit:", stdout, stderr) > 0)
            return 1;
        cdse_probe_apply(&a->take, fit, system, "#", stdout);
        return write_output(a, pr, fit, system, base_path, NULL);
    }
    bool use[CDSE_FIT_LEVELS];
    int rc = choose_levels(a, fit, have_base ? system : NULL, use);
    if (rc == 0 && have_base)
        rc = check_against_base(a, fit, system, use);
    if (rc != 0)
        return rc;
    /* The file names in the profile's measured keys (160 characters: hardware.h); the paths as
     * given in its comments, where two levels' logs may share names in different directories. */
    char source[CDSE_FIT_LEVELS][160], paths[CDSE_FIT_LEVELS][2048];
    const char *src[CDSE_FIT_LEVELS] = {source[0], source[1]};
    const char *full[CDSE_FIT_LEVELS] = {paths[0], paths[1]};
    for (int l = 0; l < CDSE_FIT_LEVELS; l++) {
        level_sources(a, l, false, source[l], sizeof source[l]);
        level_sources(a, l, true, paths[l], sizeof paths[l]);
    }
    if (have_base) {
        for (int l = 0; l < CDSE_FIT_LEVELS; l++) {
            bool only[CDSE_FIT_LEVELS] = {l == 0, l == 1};
            if (use[l])
                cdse_fit_to_system_levels(fit, system, only, source[l]);
            int k = cdse_fit_target_level(l, system);
            if (level_has_fit(fit, l) && !use[l] && k >= 0)
                printf("# level %s kept from %s (datasheet): the %s rows were fitted but not "
                       "applied; name it in --levels to replace it\n",
                       system->level[k].name, system->name, cdse_fit_level_names[l]);
        }
    } else {
        cdse_fit_network_levels(fit, pr->info.ranks_per_node, use, src, system);
    }
    if (system->n_levels == 0) {
        fprintf(stderr, "clusterdse fit: no level to write (--levels)\n");
        return 1;
    }
    for (int k = 0; k < system->n_levels; k++)
        printf("# level %-10s %s%s\n", system->level[k].name,
               system->level[k].measured[0] ? "measured: " : "datasheet",
               system->level[k].measured);
    char *notes = malloc(8192);
    if (notes == NULL)
        return 2;
    level_notes(a, system, use, full, notes, 8192);
    rc = write_output(a, pr, fit, system, base_path, notes);
    free(notes);
    return rc;
}

int cdse_cmd_fit(int argc, char **argv)
{
    fit_args *a = malloc(sizeof *a);
    if (a == NULL)
        return 2;
    int rc = parse_fit_args(argc, argv, a);
    if (rc >= 0) {
        free(a);
        return rc;
    }
    char dir_err[CDSE_PATH_MAX + 256];
    if (!a->force && access(a->output, F_OK) == 0) {
        fprintf(stderr, "clusterdse fit: %s exists; use --force to overwrite it\n", a->output);
        free(a);
        return 1;
    }
    if (cdse_output_dir_check(a->output, false, dir_err, sizeof dir_err) != 0) {
        fprintf(stderr, "clusterdse fit: -o: %s\n", dir_err);
        free(a);
        return 1;
    }
    cdse_system *system = calloc(1, sizeof *system);
    cdse_probe_result pr = {0};
    char base_path[CDSE_PATH_MAX] = "";
    bool have_base = a->base || a->job;
    int status = system == NULL ? 2 : 0;
    if (status == 0 && a->base)
        status = load_base(a, system, base_path, sizeof base_path);
    if (status == 0 && a->job)
        status = load_job_system(a, system);
    cdse_store_quiet_hdf5();
    cdse_cli_file_guard("clusterdse fit", "measure again with clusterdse probe");
    if (status == 0)
        status = read_inputs(a, have_base ? system : NULL, &pr);
    cdse_probe_fit fit;
    memset(&fit, 0, sizeof fit);
    if (status == 0) {
        cdse_diag diag = {""};
        rc = cdse_fit_probes(&pr, &a->options, &fit, &diag);
        if (rc == 0)
            print_summary(a, &pr, &fit);
        else
            fprintf(stderr, "clusterdse fit: %s\n", diag.msg);
        status = rc == 0 ? 0 : rc == CDSE_ENOMEM ? 2 : 1;
    }
    if (status == 0)
        status = build_and_write(a, &pr, &fit, system, have_base, base_path);
    free(system);
    cdse_probe_fit_free(&fit);
    cdse_probe_result_free(&pr);
    free(a);
    return status;
}
