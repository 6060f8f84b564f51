/* clusterdse sweep: the distributed sweep of a job's space into an HDF5 store. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clusterdse/calibrate/calibrate.h"
#include "clusterdse/sweep/share.h"
#include "clusterdse/sweep/sweep.h"
#include "clusterdse/sweep/table.h"
#include "clusterdse/sweep/topk.h"
#include "commands.h"
#include "store_guard.h"
#include "dry_run.h"
#include "options.h"
#include "output_dir.h"

#define SWEEP_TOP_ROWS 10 /* rows of the table printed at the end */

static const char usage_head[] =
    "usage: mpirun -np N clusterdse sweep [JOB.cfg] [-o OUT.h5] [--resume] [--force] [--quiet]\n"
    "       clusterdse sweep [JOB.cfg] --dry-run [--ranks N]\n"
    "\n"
    "Evaluates every configuration of the job's space over the MPI ranks and stores the results\n"
    "in an HDF5 file (layout: docs/store.md). Without JOB.cfg, runs the built-in quickstart job\n"
    "(jobs/quickstart.cfg). Prints progress on stderr and the ten best configurations on stdout.\n"
    "\n";
static const char usage_tail[] =
    "\n"
    "SIGTERM or SIGUSR1 (what Slurm sends before the time limit) stop handing out work; the\n"
    "sweep finishes the chunks in flight, commits them and exits with 3: run again with\n"
    "--resume to complete the store.\n"
    "\n"
    "exit codes: 0 done, 1 bad input (job file, arguments, existing or foreign store, OUT\n"
    "            is a directory, or its directory cannot be created or written, OUT\n"
    "            locked by another sweep),\n"
    "            2 runtime failure, 3 interrupted (resume with --resume)\n";

typedef struct sweep_args {
    const char *job_path; /* NULL: the embedded quickstart job */
    const char *output;
    bool resume, force, quiet, tty, dry_run;
    long ranks; /* --ranks: for --dry-run; 0 = the communicator's size */
    double chunk;
    double flush_s;
} sweep_args;

/* The flag the signal handlers set; read by the sweep between chunks. */
static volatile sig_atomic_t stop_requested = 0;
/* Set when rank 0 abandoned its store after a failed write (cdse_store_abandon). */
static bool store_abandoned = false;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* A write past the file-size limit (ulimit -f) fails with EFBIG, which the store reports
     * and survives (cdse_store_abandon), instead of killing the rank without a word. */
    sa.sa_handler = SIG_IGN;
    sigaction(SIGXFSZ, &sa, NULL);
}

static int sweep_job(void *args, const char *arg, char *err, size_t size)
{
    sweep_args *a = args;
    if (a->job_path != NULL) {
        snprintf(err, size, "more than one job file (%s and %s)", a->job_path, arg);
        return -1;
    }
    a->job_path = arg;
    return 0;
}

/* --chunk: a whole number of configurations (also written as 1e5). */
static int sweep_chunk(void *args, const char *value, char *err, size_t size)
{
    (void)err, (void)size;
    char *end = NULL;
    double v = strtod(value, &end);
    if (end == value || *end != '\0' || !(v >= 1) || v > CDSE_SWEEP_CHUNK_LIMIT || v != floor(v))
        return -1;
    ((sweep_args *)args)->chunk = v;
    return 0;
}

#define STR_(x)        #x
#define STR(x)         STR_(x)
#define SWEEP_FIELD(f) offsetof(sweep_args, f)
/* --chunk's help and bounds, with the limits of sweep.h. */
static const char chunk_help[] =
    "fixed chunk size, 1 to " STR(CDSE_SWEEP_CHUNK_LIMIT) " configurations (default: guided,\n" STR(
        CDSE_SWEEP_CHUNK_MIN) " to " STR(CDSE_SWEEP_CHUNK_MAX) ")";
static const char chunk_allowed[] = "a whole number of configurations from 1 to " STR(
    CDSE_SWEEP_CHUNK_LIMIT) " (one chunk's results travel in one MPI message)";
static const cdse_cli_option sweep_options[] = {
    {"--output", 'o', "OUT.h5",
     "the store, at most 1023 bytes (default: the job's `output`,\n"
     "results/NAME.h5)",
     CDSE_CLI_STRING, SWEEP_FIELD(output), 0, 0, NULL, NULL},
    {"--resume", 0, NULL, "continue an interrupted store (starts one if OUT does not exist)",
     CDSE_CLI_FLAG, SWEEP_FIELD(resume), 0, 0, NULL, NULL},
    {"--force", 0, NULL,
     "replace an existing store (never the job file nor a file\n"
     "that is not a store); store a space of 10^10 or more\n"
     "configurations with objective.store = \"all\"",
     CDSE_CLI_FLAG, SWEEP_FIELD(force), 0, 0, NULL, NULL},
    {"--dry-run", 0, NULL,
     "print the space per axis, the number of configurations, the\n"
     "estimated time (at this machine's rate, measured on a sample)\n"
     "and store size; evaluate nothing else, write nothing",
     CDSE_CLI_FLAG, SWEEP_FIELD(dry_run), 0, 0, NULL, NULL},
    {"--ranks", 0, "N", "the rank count --dry-run estimates for (default: mpirun's)", CDSE_CLI_INT,
     SWEEP_FIELD(ranks), 1, 1000000000, "an integer from 1 to 1000000000", NULL},
    {"--quiet", 0, NULL, "no progress lines", CDSE_CLI_FLAG, SWEEP_FIELD(quiet), 0, 0, NULL, NULL},
    {"--tty", 0, NULL,
     "progress as one updating line even when stderr is not a terminal\n"
     "(under mpirun the ranks' stderr is a pipe: default, a line every 5 s)",
     CDSE_CLI_FLAG, SWEEP_FIELD(tty), 0, 0, NULL, NULL},
    {"--chunk", 0, "N", chunk_help, CDSE_CLI_CALL, 0, 0, 0, chunk_allowed, sweep_chunk},
    {"--flush", 0, "S", "commit to the store at least every S seconds (default 2)",
     CDSE_CLI_POSITIVE, SWEEP_FIELD(flush_s), 0, 1e12, "a positive number of seconds", NULL},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void sweep_usage(FILE *out);
static const cdse_cli_command sweep_command = {
    "sweep", sweep_options, CDSE_CLI_COUNT(sweep_options), 20, sweep_job, sweep_usage,
};

static void sweep_usage(FILE *out)
{
    fputs(usage_head, out);
    cdse_cli_print_options(&sweep_command, out);
    fputs(usage_tail, out);
}

/* Every rank parses the same arguments; rank 0 says what is wrong. -1 to go on, else the exit
 * code. */
static int parse_args(int argc, char **argv, sweep_args *a, int rank)
{
    memset(a, 0, sizeof *a);
    int rc = cdse_cli_parse_quiet(&sweep_command, argc, argv, a, rank != 0);
    if (rc >= 0)
        return rc;
    char err[CDSE_PATH_MAX + 256] = "";
    if (a->output != NULL)
        cdse_output_path_check("-o", a->output, err, sizeof err);
    if (err[0] == '\0' && a->resume && a->force)
        snprintf(err, sizeof err, "--resume and --force exclude each other");
    if (err[0] == '\0')
        return -1;
    if (rank == 0) {
        fprintf(stderr, "clusterdse sweep: %s\n", err);
        sweep_usage(stderr);
    }
    return 1;
}

/* Rank 0 loads the job; the others receive it as bytes (no file access needed on them). 0, or
 * the same code on every rank (rank 0 said why). */
static int share_job(int rank, const sweep_args *a, cdse_job *job, MPI_Comm comm)
{
    int rc = 0;
    if (rank == 0) {
        cdse_diag diag = {""};
        rc = a->job_path
                 ? cdse_job_load_file(a->job_path, job, &diag)
                 : cdse_job_load_text(cdse_embedded_quickstart_job, "<embedded>", job, &diag);
        if (rc != 0)
            fprintf(stderr, "clusterdse sweep: %s\n", diag.msg);
    }
    rc = cdse_share(comm, rc, job, sizeof *job);
    if (rc != 0)
        return rc;
    void *text = rank == 0 ? job->text : NULL; /* the others' pointer is rank 0's: not theirs */
    size_t size = job->text_len + 1;
    rc = cdse_share_alloc(comm, CDSE_OK, &text, &size);
    if (rc != 0 && rank == 0) {
        fprintf(stderr, "clusterdse sweep: out of memory for the job's text on a rank\n");
        cdse_job_free(job);
    }
    job->text = rc == 0 ? text : NULL;
    return rc;
}

static void output_path(const sweep_args *a, const cdse_job *job, char *out, size_t size)
{
    if (a->output)
        snprintf(out, size, "%s", a->output);
    else if (job->output[0])
        snprintf(out, size, "%s", job->output);
    else
        snprintf(out, size, "%s.h5", job->name);
}

/* Rank 0 creates the store's directory (with missing parents) and checks that it can write
 * there; 1 on every rank (bad input) when it cannot. */
static int prepare_output_dir(int rank, const char *path, MPI_Comm comm)
{
    int bad = 0;
    if (rank == 0) {
        char err[CDSE_PATH_MAX + 256];
        bad = cdse_output_dir_check(path, true, err, sizeof err) != 0;
        if (bad)
            fprintf(stderr, "clusterdse sweep: %s\n", err);
    }
    return cdse_share(comm, bad, NULL, 0);
}

/* Prints the best rows of /top by the job's metric (ties by index). */
static void print_top(const char *path, const cdse_job *job, int max)
{
    cdse_store *store = NULL;
    cdse_diag diag = {""};
    if (cdse_store_open(path, false, &store, &diag) != 0) {
        fprintf(stderr, "clusterdse sweep: %s\n", diag.msg);
        return;
    }
    uint64_t n = 0;
    size_t row_size = cdse_store_row_size();
    cdse_store_rows(store, "top", &n, &diag);
    unsigned char *rows = malloc(n ? n * row_size : 1);
    int metric = job->objective.metric;
    cdse_topk best;
    cdse_topk_init(&best, (size_t)max, false);
    const cdse_record **shown = malloc((size_t)max * sizeof *shown);
    int rc = rows && shown ? cdse_store_read_rows(store, "top", 0, (size_t)n, rows, &diag) : -1;
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        cdse_record rec;
        cdse_store_unpack(rows + i * row_size, &rec);
        double cost = cdse_record_cost(&rec, metric);
        rc = cdse_topk_offer(&best, &rec, isnan(cost) ? HUGE_VAL : cost);
    }
    cdse_table *table = malloc(sizeof *table);
    char err[64];
    if (rc == 0 && table != NULL &&
        cdse_table_init(table, job, cdse_table_metric_column(metric), NULL, err, sizeof err) == 0 &&
        cdse_topk_sorted(&best, shown, NULL) == CDSE_OK) {
        printf("# best %zu of %s by %s\n", best.n, path, cdse_metric_name(metric));
        for (size_t i = 0; i < best.n; i++)
            cdse_table_observe(table, shown[i]);
        cdse_table_print_header(table, stdout);
        for (size_t i = 0; i < best.n; i++)
            cdse_table_print_row(table, stdout, shown[i]);
        if (n == 0)
            printf("# no feasible configuration\n");
    }
    free(table);
    free(rows);
    free(shown);
    cdse_topk_free(&best);
    cdse_store_close(store, &diag);
}

static void print_summary(const char *path, int ranks, const cdse_sweep_stats *st)
{
    double rate = st->seconds > 0 ? (double)st->evaluated_now / st->seconds : 0;
    double write_rate = st->store_seconds > 0 ? (double)st->rows_written / st->store_seconds : 0;
    fprintf(stderr,
            "sweep: %llu configurations in %.2f s on %d rank%s (%.0f configs/s); %llu of %llu "
            "done, %llu feasible\n",
            (unsigned long long)st->evaluated_now, st->seconds, ranks, ranks > 1 ? "s" : "", rate,
            (unsigned long long)st->done, (unsigned long long)st->total,
            (unsigned long long)st->counts.feasible);
    if (st->counts.pruned > 0) /* evaluated + pruned = done */
        fprintf(stderr, "sweep: %llu evaluated, %llu pruned (%.2f%% of the done ones)\n",
                (unsigned long long)st->counts.evaluated, (unsigned long long)st->counts.pruned,
                st->done > 0 ? 100.0 * (double)st->counts.pruned / (double)st->done : 0.0);
    fprintf(stderr, "sweep: %llu rows written to %s, %.2f s in the store (%.0f rows/s)\n",
            (unsigned long long)st->rows_written, path, st->store_seconds, write_rate);
}

static int exit_code(int rc)
{
    switch (rc) {
    case CDSE_OK:
        return 0;
    case CDSE_EINTR:
        return 3;
    case CDSE_EINVAL:
    case CDSE_EEXIST:
    case CDSE_EMISMATCH:
    case CDSE_EBUSY:
        return 1;
    default:
        return 2;
    }
}

/* The job's probe section: measure this allocation's network and fit it into the systems before
 * sweeping. Measurements go next to the store (OUT.probes.h5); a resumed sweep fits those again,
 * so it completes with the network it started with. Skipped when the store exists and neither
 * --resume nor --force is given (the sweep refuses it right after). */
static int calibrate(int rank, const sweep_args *a, cdse_job *job, const char *path, MPI_Comm comm)
{
    if (job->probe_plan[0] == '\0')
        return 0;
    int refuse = rank == 0 && !a->resume && !a->force && access(path, F_OK) == 0;
    if (cdse_share(comm, refuse, NULL, 0) != 0)
        return 0;
    char probes[CDSE_PATH_MAX + 16];
    size_t len = strlen(path);
    if (len > 3 && strcmp(path + len - 3, ".h5") == 0)
        snprintf(probes, sizeof probes, "%.*s.probes.h5", (int)(len - 3), path);
    else
        snprintf(probes, sizeof probes, "%s.probes.h5", path);
    cdse_diag diag = {""};
    FILE *log = rank == 0 && !a->quiet ? stderr : NULL;
    int rc =
        cdse_sweep_calibrate(job, comm, probes, a->resume, log, rank == 0 ? stderr : NULL, &diag);
    if (rc != 0 && rank == 0)
        fprintf(stderr, "clusterdse sweep: probe: %s\n", diag.msg);
    return rc;
}

/* Rank 0 says how the sweep ended: the summary and the best rows, how to resume, or what failed. */
static void report_end(const sweep_args *a, const cdse_job *job, const char *path, int ranks,
                       int rc, const cdse_sweep_stats *stats, const cdse_diag *diag)
{
    if (rc == 0 || rc == CDSE_EINTR) {
        if (!a->quiet)
            print_summary(path, ranks, stats);
        if (stats->already_complete)
            fprintf(stderr, "sweep: %s was already complete\n", path);
    }
    if (rc == 0)
        print_top(path, job, SWEEP_TOP_ROWS);
    else if (rc == CDSE_EINTR)
        fprintf(stderr,
                "sweep: interrupted with %llu of %llu configurations done; the store is "
                "consistent: continue with\n  clusterdse sweep %s%s-o %s --resume\n",
                (unsigned long long)stats->done, (unsigned long long)stats->total,
                a->job_path ? a->job_path : "", a->job_path ? " " : "", path);
    else
        fprintf(stderr, "clusterdse sweep: %s\n", diag->msg);
}

static int run(int rank, int ranks, const sweep_args *a, MPI_Comm comm)
{
    cdse_job *job = calloc(1, sizeof *job);
    if (cdse_agree(comm, job != NULL ? CDSE_OK : CDSE_ENOMEM) != CDSE_OK) {
        if (rank == 0)
            fprintf(stderr, "clusterdse sweep: out of memory\n");
        free(job);
        return 2;
    }
    int shared = share_job(rank, a, job, comm);
    if (shared != 0) {
        free(job);
        return shared == CDSE_ENOMEM ? 2 : 1;
    }
    int refuse = 0;
    if (a->dry_run) {
        if (rank == 0)
            cdse_dry_run(job, a->ranks ? (int)a->ranks : ranks, true, stdout);
    } else {
        refuse =
            cdse_dry_run_check_store(job, a->force, "clusterdse sweep", rank == 0 ? stderr : NULL);
    }
    if (a->dry_run || refuse) {
        cdse_job_free(job);
        free(job);
        return refuse;
    }
    char path[CDSE_PATH_MAX];
    output_path(a, job, path, sizeof path);
    if (prepare_output_dir(rank, path, comm) != 0) {
        cdse_job_free(job);
        free(job);
        return 1;
    }
    int calibrated = calibrate(rank, a, job, path, comm);
    if (calibrated != 0) { /* 1: a bad plan or a refused level (probe.force), 2: a failure */
        cdse_job_free(job);
        free(job);
        return exit_code(calibrated);
    }
    cdse_sweep_options opt = {
        .output = path,
        .resume = a->resume,
        .force = a->force,
        .progress = (rank == 0 && !a->quiet) ? stderr : NULL,
        .progress_tty = a->tty || isatty(STDERR_FILENO) != 0,
        .stop = &stop_requested,
        .chunk_min = (uint64_t)a->chunk,
        .chunk_max = (uint64_t)a->chunk,
        .flush_interval_s = a->flush_s,
    };
    if (rank == 0 && !a->quiet)
        fprintf(stderr, "sweep: job %s, %llu configurations, %d rank%s, store %s%s\n", job->name,
                (unsigned long long)job->space.size, ranks, ranks > 1 ? "s" : "", path,
                a->resume ? " (resume)" : "");
    if (rank == 0 && !a->quiet && (double)job->space.size >= CDSE_DRY_RUN_ANNOUNCE)
        cdse_dry_run_announce(job, ranks, stderr);
    cdse_sweep_stats stats;
    cdse_diag diag = {""};
    int rc = cdse_sweep_run(job, &opt, comm, &stats, &diag);
    if (rank == 0)
        report_end(a, job, path, ranks, rc, &stats, &diag);
    cdse_job_free(job);
    free(job);
    if (stats.store_abandoned)
        store_abandoned = true;
    return exit_code(rc);
}

int cdse_cmd_sweep(int argc, char **argv)
{
    /* Before MPI_Init: a signal during start-up already means "stop and keep what is done". */
    install_handlers();
    MPI_Init(&argc, &argv);
    cdse_store_quiet_hdf5();
    cdse_cli_store_guard("clusterdse sweep");
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    sweep_args a;
    int code = parse_args(argc, argv, &a, rank);
    if (code < 0)
        code = run(rank, ranks, &a, MPI_COMM_WORLD);
    MPI_Finalize();
    if (store_abandoned) { /* HDF5's exit handler would flush the unfinished commit into it */
        fflush(stdout);
        fflush(stderr);
        _exit(code);
    }
    return code;
}
