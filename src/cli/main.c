/* clusterdse: a thin dispatcher to the subcommands. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

#ifndef CDSE_VERSION
#error "CDSE_VERSION is set by CMakeLists.txt (project VERSION)"
#endif
#ifndef CDSE_GIT_REV
#define CDSE_GIT_REV "unknown"
#endif

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"eval", cdse_cmd_eval, "evaluate a job's space in one process; table or --csv"},
    {"sweep", cdse_cmd_sweep, "distributed sweep over MPI ranks into an HDF5 store"},
    {"top", cdse_cmd_top, "best configurations from a store"},
    {"export", cdse_cmd_export, "every row of a store as CSV, streamed"},
    {"compare", cdse_cmd_compare, "the best configuration of each system side by side"},
    {"probe", cdse_cmd_probe, "measure MPI collectives on the allocation"},
    {"fit", cdse_cmd_fit, "fit a network profile to probe data"},
    {"verify", cdse_cmd_verify, "replay the best configurations' communication"},
    {"report", cdse_cmd_report, "HTML page of figures and tables from a store (Python)"},
    {"bench", cdse_cmd_bench, "evaluator throughput (configurations per second per core)"},
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *out)
{
    fprintf(out, "usage: clusterdse COMMAND [ARGS]   (clusterdse COMMAND --help for details)\n\n");
    for (int i = 0; i < n_commands; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 done, 1 bad input, 2 runtime failure, 3 interrupted (resume "
                 "with --resume)\n");
}

static int dispatch(int argc, char **argv, const command **found)
{
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("clusterdse %s (git %s)\n", CDSE_VERSION, CDSE_GIT_REV);
        return 0;
    }
    for (int i = 0; i < n_commands; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            *found = &commands[i];
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "clusterdse: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 1;
}

/* Whatever a command printed reaches its file, or the command fails: a write, the flush or the
 * close of the standard output that fails (a full disk, > /dev/full, a quota) is a runtime
 * failure, exit 2, with one message. A command that failed (exit code not 0) has said why
 * already: its code stays. A standard output closed by the caller is an error only when
 * something was written to it. */
static int close_stdout(const command *cmd, int code)
{
    errno = 0;
    bool failed = fflush(stdout) != 0;
    int reason = errno;
    failed = ferror(stdout) || failed;
    errno = 0;
    if (fclose(stdout) != 0 && (failed || errno != EBADF)) {
        failed = true;
        reason = reason ? reason : errno;
    }
    if (!failed || code != 0)
        return code;
    fprintf(stderr, "clusterdse%s%s: writing standard output: %s\n", cmd ? " " : "",
            cmd ? cmd->name : "", reason ? strerror(reason) : "a write failed");
    return 2;
}

int main(int argc, char **argv)
{
    const command *cmd = NULL;
    int code = dispatch(argc, argv, &cmd);
    return close_stdout(cmd, code);
}
