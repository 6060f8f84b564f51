/* clusterdse verify OUT.h5 [-n K]: replay the communication of the best stored configurations
 * on the allocation and store predicted vs measured times under /verify. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/calibrate/probe.h"
#include "clusterdse/sweep/share.h"
#include "clusterdse/sweep/store.h"
#include "clusterdse/sweep/topk.h"
#include "clusterdse/calibrate/verify.h"
#include "commands.h"
#include "options.h"
#include "store_guard.h"
#include "store_query.h"

#define VERIFY_DEFAULT_TOP       5
#define VERIFY_DEFAULT_MAX_BYTES (64LL << 20)
#define VERIFY_MAX_TOP           100

typedef struct verify_args {
    const char *store;
    const char *where, *system;
    long top;
    long max_bytes;
    double budget_ms;
    bool datasheet; /* --datasheet: replay datasheet systems too */
} verify_args;

static int verify_store(void *args, const char *arg, char *err, size_t size)
{
    verify_args *a = args;
    if (a->store != NULL) {
        snprintf(err, size, "unexpected argument '%s'", arg);
        return -1;
    }
    a->store = arg;
    return 0;
}

#define STR_(x) #x
#define STR(x)  STR_(x)
_Static_assert(VERIFY_DEFAULT_MAX_BYTES == 67108864LL, "the --max-bytes row says 67108864");
_Static_assert(CDSE_PLAN_MAX_BYTES == 1073741824LL, "the --max-bytes row says 1073741824");
#define VERIFY_FIELD(f) offsetof(verify_args, f)
static const char top_help[] = "configurations to replay (default " STR(
    VERIFY_DEFAULT_TOP) ", at most " STR(VERIFY_MAX_TOP) ")";
static const char top_allowed[] = "1 to " STR(VERIFY_MAX_TOP);
static const cdse_cli_option verify_options[] = {
    {"-n", 0, "K", top_help, CDSE_CLI_INT, VERIFY_FIELD(top), 1, VERIFY_MAX_TOP, top_allowed, NULL},
    {"--where", 0, "EXPR",
     "only configurations where EXPR holds (the syntax of\n"
     "`clusterdse top --help`, e.g. 'tp == 8 && pp == 1')",
     CDSE_CLI_STRING, VERIFY_FIELD(where), 0, 0, NULL, NULL},
    {"--system", 0, "NAME", "only configurations on system NAME of the job", CDSE_CLI_STRING,
     VERIFY_FIELD(system), 0, 0, NULL, NULL},
    {"--max-bytes", 0, "B", "largest message to run (default 67108864 = 64 MiB)", CDSE_CLI_INT,
     VERIFY_FIELD(max_bytes), 64, (double)CDSE_PLAN_MAX_BYTES, "64 to 1073741824", NULL},
    {"--time-budget", 0, "MS", "target time per measurement (default 200)", CDSE_CLI_POSITIVE,
     VERIFY_FIELD(budget_ms), 0, 3.6e6, "0 < MS <= 3.6e6", NULL},
    {"--datasheet", 0, NULL, "also replay configurations on systems without a measured level",
     CDSE_CLI_FLAG, VERIFY_FIELD(datasheet), 0, 0, NULL, NULL},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void verify_usage(FILE *out);
static const cdse_cli_command verify_command = {
    "verify", verify_options, CDSE_CLI_COUNT(verify_options), 17, verify_store, verify_usage,
};

static void verify_usage(FILE *out)
{
    fputs("usage: mpirun -np N clusterdse verify OUT.h5 [-n K] [--where EXPR]\n"
          "                                    [--system NAME] [--max-bytes B]\n"
          "                                    [--time-budget MS] [--datasheet]\n"
          "\n"
          "Replays the communication plan of the best K configurations stored in OUT.h5 (by\n"
          "the job's objective), as the evaluator costs it: every collective of the iteration\n"
          "(TP, CP, EP, PP, DP and expert-DP groups) with its bytes, calls per iteration and\n"
          "exposed share. Each runs on groups of the configuration's size and stride (from its\n"
          "placement) where the N ranks allow it, else on the largest that fits (marked\n"
          "scaled), with messages of at most B bytes. The model's\n"
          "prediction for the configuration's system and the measured time (median over\n"
          "iterations of the slowest rank) are printed and stored as /verify in OUT.h5.\n"
          "Only configurations whose system has a measured network level (a profile\n"
          "written by clusterdse fit) are replayed: a datasheet network has nothing of this\n"
          "allocation to verify (--datasheet replays them all the same: the allocation against\n"
          "a profile that was not fitted on it).\n"
          "\n",
          out);
    cdse_cli_print_options(&verify_command, out);
    fputs("Exit codes: 0 done, 1 bad input, 2 runtime failure.\n", out);
}

/* -1 to go on, else the exit code. */
static int parse_verify_args(int argc, char **argv, verify_args *a)
{
    memset(a, 0, sizeof *a);
    a->top = VERIFY_DEFAULT_TOP;
    a->max_bytes = VERIFY_DEFAULT_MAX_BYTES;
    a->budget_ms = 200;
    int rc = cdse_cli_parse(&verify_command, argc, argv, a);
    if (rc >= 0)
        return rc;
    if (a->store != NULL)
        return -1;
    fprintf(stderr, "clusterdse verify: need OUT.h5\n");
    verify_usage(stderr);
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Whether a system's network was measured: a level that clusterdse fit marked (measured = ...)
 * or one with fitted per-collective pairs (profiles written before that key). */
static bool system_measured(const cdse_system *system)
{
    for (int l = 0; l < system->n_levels; l++) {
        if (system->level[l].measured[0])
            return true;
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            if (system->level[l].coll_bandwidth_gbs[c] > 0)
                return true;
    }
    return false;
}

/* --where, --system and which systems were measured. Returns 0 or an exit code. */
static int select_setup(const verify_args *a, const cdse_job *job, cdse_expr **where,
                        int *system_index, bool measured[CDSE_MAX_SYSTEMS])
{
    for (int s = 0; s < job->n_systems && s < CDSE_MAX_SYSTEMS; s++)
        measured[s] = a->datasheet || system_measured(&job->system[s]);
    if (a->system != NULL) {
        for (int s = 0; s < job->n_systems; s++)
            if (strcmp(job->system[s].name, a->system) == 0)
                *system_index = s;
        if (*system_index < 0) {
            fprintf(stderr, "clusterdse verify: --system %s; allowed:", a->system);
            for (int s = 0; s < job->n_systems; s++)
                fprintf(stderr, "%s %s", s ? "," : "", job->system[s].name);
            fprintf(stderr, "\n");
            return 1;
        }
        if (!measured[*system_index]) {
            fprintf(stderr,
                    "clusterdse verify: --system %s: its network has no measured level (datasheet "
                    "figures only); nothing of this allocation to verify: fit a profile for it "
                    "first (clusterdse fit ... --base, network_profile)\n",
                    a->system);
            return 1;
        }
    }
    if (a->where != NULL && cdse_cli_compile_where("verify", a->where, job, where) != 0)
        return 1;
    return 0;
}

/* Rank 0: the ops of the best K configurations. Returns an exit code (0 = go on). */
/* The job a store was made by (its text in *text, malloc'd) and the rows of its /top (*packed,
 * malloc'd; *rows of them). Returns 0 or the exit code, after a message. */
static int read_top(const verify_args *a, cdse_store *store, cdse_job *job, char **text,
                    char **packed, uint64_t *rows)
{
    cdse_diag diag = {""};
    char job_path[CDSE_PATH_MAX];
    int status = 0;
    if (cdse_store_job_path(store, job_path, sizeof job_path, &diag) != 0 ||
        cdse_store_job_text(store, text, &diag) != 0 ||
        cdse_store_rows(store, "top", rows, &diag) != 0) {
        fprintf(stderr, "clusterdse verify: %s\n", diag.msg); /* the store's words name it */
        status = 2;
    } else if (cdse_job_load_text(*text, job_path[0] ? job_path : a->store, job, &diag) != 0) {
        fprintf(stderr, "clusterdse verify: %s: %s\n", a->store, diag.msg);
        status = 1;
    }
    size_t row_size = cdse_store_row_size();
    *packed = status == 0 && *rows > 0 ? malloc(row_size * *rows) : NULL;
    if (status == 0 && *rows == 0) {
        fprintf(stderr, "clusterdse verify: %s: no configurations in /top\n", a->store);
        status = 1;
    } else if (status == 0 && !*packed) {
        status = 2;
    } else if (status == 0 &&
               cdse_store_read_rows(store, "top", 0, (size_t)*rows, *packed, &diag) != 0) {
        fprintf(stderr, "clusterdse verify: %s\n", diag.msg);
        status = 2;
    }
    return status;
}

/* The configurations of /top that -n, --where, --system and --datasheet select, into `best`;
 * *feasible of them passed the filters, *datasheet of those are on a system without a measured
 * level. Returns 0 or the exit code. */
static int select_best(const verify_args *a, const cdse_job *job, const char *packed, uint64_t rows,
                       int metric, cdse_topk *best, size_t *feasible, size_t *datasheet)
{
    cdse_expr *where = NULL;
    int system_index = -1;
    bool measured[CDSE_MAX_SYSTEMS] = {false};
    int status = select_setup(a, job, &where, &system_index, measured);
    size_t row_size = cdse_store_row_size();
    for (uint64_t i = 0; status == 0 && i < rows; i++) {
        cdse_record record;
        cdse_store_unpack(packed + i * row_size, &record);
        if (record.result.status != CDSE_ST_OK ||
            (system_index >= 0 && record.system != system_index) ||
            (where != NULL && !cdse_cli_where_holds(where, &record)))
            continue;
        (*feasible)++;
        if (!measured[record.system]) {
            (*datasheet)++;
            continue;
        }
        if (cdse_topk_offer(best, &record, cdse_record_cost(&record, metric)) != CDSE_OK)
            status = 2;
    }
    cdse_expr_free(where);
    return status;
}

/* The ops of the k best configurations (sorted), each evaluated again from its index with this
 * version's plan, as `world` ranks replay them; *ops_out is calloc'd, *n_out ops. */
static void plan_ops(const verify_args *a, const cdse_job *job, const cdse_record **sorted,
                     size_t k, int world, cdse_verify_op **ops_out, int *n_out)
{
    cdse_verify_op *ops = calloc(k * CDSE_VERIFY_MAX_OPS + 1, sizeof *ops);
    for (size_t i = 0; ops && i < k; i++) {
        cdse_record r;
        cdse_comm_plan plan;
        cdse_verify_plan(job, sorted[i]->index, &r, &plan);
        if (r.result.time_per_iteration_s != sorted[i]->result.time_per_iteration_s)
            fprintf(stderr,
                    "clusterdse verify: %s: configuration %llu evaluates to %.6g s per "
                    "iteration, the store says %.6g s (made by another version?); replaying "
                    "the plan of this version\n",
                    a->store, (unsigned long long)r.index, r.result.time_per_iteration_s,
                    sorted[i]->result.time_per_iteration_s);
        cdse_system system; /* with the configuration's hardware-axis values */
        cdse_study study;
        cdse_job_study(job, &study);
        cdse_record_system(&study, r.index, &system);
        int n = cdse_verify_ops(&r, &plan, &job->model[r.model], &system, world, a->max_bytes,
                                ops + *n_out);
        for (int j = 0; j < n; j++)
            ops[*n_out + j].top_rank = (int32_t)(i + 1);
        *n_out += n;
    }
    *ops_out = ops;
}

static int collect_ops(const verify_args *a, int world, cdse_verify_op **ops_out, int *n_out)
{
    *ops_out = NULL;
    *n_out = 0;
    cdse_diag diag = {""};
    cdse_store_quiet_hdf5();
    cdse_cli_store_guard("clusterdse verify");
    cdse_store *store = NULL;
    int opened = cdse_store_open(a->store, false, &store, &diag);
    if (opened != 0) {
        fprintf(stderr, "clusterdse verify: %s\n", diag.msg);
        return opened == CDSE_EINVAL ? 1 : 2; /* not a store: input; damaged: a read failure */
    }
    char *text = NULL, *packed = NULL;
    cdse_job *job = calloc(1, sizeof *job);
    uint64_t rows = 0;
    int status = 0;
    if (job == NULL) {
        fprintf(stderr, "clusterdse verify: out of memory\n");
        status = 2;
    } else {
        status = read_top(a, store, job, &text, &packed, &rows);
    }
    cdse_topk best;
    cdse_topk_init(&best, (size_t)a->top, false);
    int metric = status == 0 ? cdse_store_metric(store) : 0;
    size_t feasible = 0, datasheet = 0;
    if (status == 0)
        status = select_best(a, job, packed, rows, metric, &best, &feasible, &datasheet);
    if (status == 0 && datasheet > 0)
        printf("# %zu of the %zu selected configurations are on systems without a measured "
               "network level: not replayed (a datasheet network has nothing of this allocation to "
               "verify)\n",
               datasheet, feasible);
    if (status == 0 && feasible == 0 && (a->where || a->system)) {
        fprintf(stderr,
                "clusterdse verify: %s: none of the %llu configurations of /top (the best the "
                "job's objective kept, objective.top) is feasible and selected by%s%s%s%s; "
                "allowed: a --where EXPR or --system NAME that some of them meet\n",
                a->store, (unsigned long long)rows, a->where ? " --where " : "",
                a->where ? a->where : "", a->system ? " --system " : "",
                a->system ? a->system : "");
        status = 1;
    }
    if (status == 0 && best.n == 0) {
        fprintf(
            stderr,
            "clusterdse verify: %s: none of the %zu selected feasible configurations is on a "
            "system with a measured network level; fit a profile for it (clusterdse fit ... "
            "--base SYSTEM, network_profile), choose one with --system NAME, or replay datasheet "
            "systems with --datasheet\n",
            a->store, feasible);
        status = 1;
    }
    const cdse_record **sorted = status == 0 ? malloc(best.n * sizeof *sorted + 1) : NULL;
    if (status == 0 && (sorted == NULL || cdse_topk_sorted(&best, sorted, NULL) != CDSE_OK))
        status = 2;
    if (status == 0) {
        plan_ops(a, job, sorted, best.n, world, ops_out, n_out);
        printf("# clusterdse verify: %s: best %zu of %zu %s (by %s), "
               "%d collectives, on %d ranks\n",
               a->store, best.n, feasible - datasheet,
               a->where || a->system ? "selected configurations" : "feasible stored configurations",
               cdse_metric_name(metric), *n_out, world);
    }
    free(packed);
    free(sorted);
    cdse_topk_free(&best);
    free(text);
    if (job)
        cdse_job_free(job);
    free(job);
    cdse_store_close(store, &diag);
    return status;
}

static int measure_ops(const verify_args *a, int rank, cdse_verify_op *ops, int n)
{
    cdse_probe_plan timing;
    memset(&timing, 0, sizeof timing);
    timing.warmup = 3;
    timing.iterations_min = 5;
    timing.iterations_max = 1000;
    timing.time_budget_ms = a->budget_ms;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        cdse_verify_op *op = &ops[i];
        if (op->run_group_size < 2)
            continue;
        cdse_probe_shape shape = {op->run_stride > 1 ? CDSE_SHAPE_STRIDED : CDSE_SHAPE_CONTIGUOUS,
                                  op->run_group_size, op->run_stride, 0};
        cdse_probe_row row;
        cdse_diag diag = {""};
        int rc = cdse_probe_measure(&timing, MPI_COMM_WORLD, cdse_coll_parse(op->collective),
                                    CDSE_PDT_FLOAT, &shape, op->run_bytes, &row, &diag);
        if (rc != 0) {
            if (rank == 0)
                fprintf(stderr, "clusterdse verify: %s %s: %s\n", op->comm, op->collective,
                        diag.msg);
            failed = 1;
            continue;
        }
        if (rank == 0) {
            op->measured_us = row.t_median_us;
            op->measured_avg_us = row.t_avg_us;
            op->measured_best_us = row.t_best_us;
            op->ratio = op->predicted_run_us > 0 ? op->measured_us / op->predicted_run_us : 0;
            cdse_verify_table_row(stdout, op);
            fflush(stdout);
        }
    }
    return failed;
}

int cdse_cmd_verify(int argc, char **argv)
{
    verify_args a;
    int rc = parse_verify_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        MPI_Init(NULL, NULL);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    cdse_verify_op *ops = NULL;
    int n = 0, status = 0;
    if (rank == 0)
        status = collect_ops(&a, world, &ops, &n);
    if (rank == 0 && status == 0 && world < 2) {
        fprintf(stderr, "clusterdse verify: needs at least 2 ranks (mpirun -np N)\n");
        status = 1;
    }
    void *shared = ops;
    size_t bytes = rank == 0 ? (size_t)n * sizeof *ops : 0;
    status = cdse_share_alloc(MPI_COMM_WORLD, status, &shared, &bytes);
    if (status == CDSE_ENOMEM) {
        if (rank == 0)
            fprintf(stderr, "clusterdse verify: out of memory for %d ops on a rank\n", n);
        status = 2;
    }
    ops = shared;
    n = (int)(bytes / sizeof *ops);
    if (status == 0) {
        if (rank == 0) {
            printf("# times in microseconds per call; pred = model for the configuration, run_pred "
                   "= model for the group and message run here; ratio = measured / run_pred\n");
            cdse_verify_table_header(stdout);
        }
        int failed = measure_ops(&a, rank, ops, n);
        if (rank == 0) {
            cdse_diag diag = {""};
            if (failed) {
                status = 2;
            } else if (cdse_verify_write(a.store, ops, n, &diag) != 0) {
                fprintf(stderr, "clusterdse verify: %s\n", diag.msg);
                status = 2;
            } else {
                double *ratios = malloc(sizeof(double) * (size_t)(n + 1));
                int m = 0;
                for (int i = 0; ratios && i < n; i++)
                    if (ops[i].ratio > 0)
                        ratios[m++] = ops[i].ratio;
                qsort(ratios, (size_t)m, sizeof *ratios, cmp_double);
                printf("# median measured / predicted: %.3f over %d collectives; wrote /verify "
                       "to %s\n",
                       m ? (m % 2 ? ratios[m / 2] : 0.5 * (ratios[m / 2 - 1] + ratios[m / 2]))
                         : 0.0,
                       m, a.store);
                free(ratios);
            }
        }
        status = cdse_share(MPI_COMM_WORLD, status, NULL, 0);
    }
    free(ops);
    if (!initialized)
        MPI_Finalize();
    return status;
}
