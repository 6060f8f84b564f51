/* clusterdse probe PLAN.cfg -o PROBES.h5: measure MPI collectives on the allocation. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/calibrate/probe.h"
#include "clusterdse/sweep/share.h"
#include "commands.h"
#include "options.h"
#include "output_dir.h"

typedef struct probe_args {
    const char *plan;
    const char *output;
    bool force;
} probe_args;

static int probe_plan(void *args, const char *arg, char *err, size_t size)
{
    probe_args *a = args;
    if (a->plan != NULL) {
        snprintf(err, size, "unexpected argument '%s'", arg);
        return -1;
    }
    a->plan = arg;
    return 0;
}

#define PROBE_FIELD(f) offsetof(probe_args, f)
static const cdse_cli_option probe_options[] = {
    {"--output", 'o', "FILE", "HDF5 file to write (required)", CDSE_CLI_STRING, PROBE_FIELD(output),
     0, 0, NULL, NULL},
    {"--force", 0, NULL, "overwrite FILE if it exists", CDSE_CLI_FLAG, PROBE_FIELD(force), 0, 0,
     NULL, NULL},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void probe_usage(FILE *out);
static const cdse_cli_command probe_command = {
    "probe", probe_options, CDSE_CLI_COUNT(probe_options), 18, probe_plan, probe_usage,
};

static void probe_usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N clusterdse probe PLAN.cfg -o PROBES.h5 [--force]\n"
            "\n"
            "Times MPI collectives (allreduce, allgather, reduce_scatter, alltoall, sendrecv)\n"
            "on the communicator shapes of PLAN.cfg, prints an OSU-style table on stdout and\n"
            "stores it as /probes (and the local reduction rate as /reduce_local) in PROBES.h5.\n"
            "\n");
    cdse_cli_print_options(&probe_command, out);
    fprintf(out, "\nPlan keys (libconfig):\n");
    cdse_plan_print_keys(out);
    fprintf(out, "\nExample plans: calibration/plans/quick.cfg (tests), node.cfg (one node),\n"
                 "full.cfg (a multi-node allocation)\n"
                 "Exit codes: 0 done, 1 bad input, 2 runtime failure.\n");
}

/* Returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, probe_args *a)
{
    memset(a, 0, sizeof *a);
    int rc = cdse_cli_parse(&probe_command, argc, argv, a);
    if (rc >= 0)
        return rc;
    if (a->plan == NULL || a->output == NULL) {
        fprintf(stderr, "clusterdse probe: need PLAN.cfg and -o PROBES.h5\n");
        probe_usage(stderr);
        return 1;
    }
    char err[CDSE_PATH_MAX + 128];
    if (cdse_output_path_check("-o", a->output, err, sizeof err) != 0) {
        fprintf(stderr, "clusterdse probe: %s\n", err);
        return 1;
    }
    return -1;
}

/* Whether the directory of `path` exists and is writable: checked before measuring, so that a
 * typo in -o does not cost the whole probe run. */
static bool output_dir_writable(const char *path)
{
    char dir[CDSE_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return access(".", W_OK) == 0;
    if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    return access(dir, W_OK) == 0;
}

/* Rank 0 reads and validates the plan; every rank learns the verdict, then the plan. */
static int load_plan(const probe_args *a, int rank, int size, cdse_probe_plan *plan, char **text)
{
    int status = 0;
    *text = NULL;
    if (rank == 0) {
        cdse_diag diag = {""};
        if (!a->force && access(a->output, F_OK) == 0) {
            fprintf(stderr, "clusterdse probe: %s exists; use --force to overwrite it\n",
                    a->output);
            status = 1;
        } else if (!output_dir_writable(a->output)) {
            fprintf(stderr,
                    "clusterdse probe: cannot write %s: its directory does not exist or is not "
                    "writable\n",
                    a->output);
            status = 1;
        } else if (cdse_plan_read_file(a->plan, text, &diag) != 0) {
            fprintf(stderr, "clusterdse probe: %s\n", diag.msg);
            status = 1;
        } else if (cdse_plan_load_text(*text, a->plan, size, plan, &diag) != 0) {
            fprintf(stderr, "clusterdse probe: %s\n", diag.msg);
            status = 1;
        }
    }
    return cdse_share(MPI_COMM_WORLD, status, plan, sizeof *plan);
}

int cdse_cmd_probe(int argc, char **argv)
{
    probe_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        MPI_Init(NULL, NULL);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    cdse_probe_plan plan;
    char *text = NULL;
    int status = load_plan(&a, rank, size, &plan, &text);
    if (status == 0) {
        cdse_probe_result result;
        cdse_diag diag = {""};
        int prc = cdse_probe_run(&plan, MPI_COMM_WORLD, rank == 0 ? stdout : NULL, &result, &diag);
        if (prc != 0) {
            if (rank == 0)
                fprintf(stderr, "clusterdse probe: %s\n", diag.msg);
            status = 2;
        } else if (rank == 0) {
            prc = cdse_probe_write(a.output, &result, text, a.force, &diag);
            if (prc != 0) {
                fprintf(stderr, "clusterdse probe: %s\n", diag.msg);
                status = prc == CDSE_EEXIST ? 1 : 2;
            } else {
                printf("# wrote %d probes and %d reduction rates to %s\n", result.n_rows,
                       result.n_reduce, a.output);
            }
        }
        cdse_probe_result_free(&result);
        status = cdse_share(MPI_COMM_WORLD, status, NULL, 0);
    }
    free(text);
    if (!initialized)
        MPI_Finalize();
    return status;
}
