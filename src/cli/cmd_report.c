/* clusterdse report: runs the Python package (python/clusterdse, module clusterdse.report) that
 * draws a store into a self-contained HTML page. The package is found next to the binary:
 * installed (BINDIR/../share/clusterdse/python), in the source tree the binary was built from
 * (build/../python), or where $CLUSTERDSE_PYTHONPATH says. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clusterdse/config/datadir.h"
#include "commands.h"
#include "output_dir.h"
#include "store_guard.h"

#ifndef CDSE_VERSION
#define CDSE_VERSION "0"
#endif
#ifndef CDSE_SOURCE_DIR
#define CDSE_SOURCE_DIR "."
#endif

/* Debian's interpreter, which has python3-h5py, python3-pandas and python3-matplotlib. */
#define REPORT_PYTHON "/usr/bin/python3"

static const char usage_text[] =
    "usage: clusterdse report STORE -o DIR [--png] [--system NAME] [--gpus N] [-n K]\n"
    "\n"
    "Writes DIR/report.html, a self-contained page (figures embedded, no network needed):\n"
    "for a sweep store the Pareto fronts (time vs GPUs; time vs cost to train per model, the\n"
    "designs labelled), the best time vs cluster size per system, a tp x pp heatmap, the time\n"
    "and memory breakdowns of the best configurations, the failure counts and, for a design\n"
    "grid, the spread over the designs, the sensitivity per hardware axis and the time- vs\n"
    "cost-optimal choice; for a probe store bus bandwidth vs message size with the fit that\n"
    "`clusterdse fit` writes; for a store with /verify predicted vs measured.\n"
    "Runs " REPORT_PYTHON " -m clusterdse.report\n"
    "(python3-h5py, python3-pandas, python3-matplotlib; scripts/setup.sh installs them).\n"
    "\n"
    "  -o, --output DIR  directory of report.html (created if missing)\n"
    "  --png             also write each figure as DIR/NAME.png\n"
    "  --system NAME     system of the tp x pp heatmap (default: the best configuration's)\n"
    "  --gpus N          cluster size of the tp x pp heatmap (default: the best's)\n"
    "  -n, --top K       configurations in the breakdowns and the table (default 10)\n"
    "  -h, --help        this text\n"
    "\n"
    "environment: CLUSTERDSE_PYTHON (interpreter, default " REPORT_PYTHON "),\n"
    "             CLUSTERDSE_PYTHONPATH (directory holding the clusterdse package)\n";

/* True when DIR/clusterdse/report.py exists. */
static int has_package(const char *dir)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/clusterdse/report.py", dir);
    return n > 0 && (size_t)n < sizeof path && access(path, R_OK) == 0;
}

/* The directory holding the package, into buf; 0, or -1 when none is found. */
static int find_package(char *buf, size_t size)
{
    const char *env = getenv("CLUSTERDSE_PYTHONPATH");
    char exe[PATH_MAX];
    char candidates[3][PATH_MAX] = {{0}};
    if (env != NULL && env[0] != '\0')
        snprintf(candidates[0], sizeof candidates[0], "%s", env);
    if (cdse_exe_dir(exe, sizeof exe) == 0) {
        snprintf(candidates[1], sizeof candidates[1], "%.4000s/../share/clusterdse/python", exe);
        snprintf(candidates[2], sizeof candidates[2], "%.4000s/../python", exe);
    }
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(candidates[i]);
        if (len > 0 && len < size && has_package(candidates[i])) {
            memcpy(buf, candidates[i], len + 1);
            return 0;
        }
    }
    if (has_package(CDSE_SOURCE_DIR "/python")) {
        snprintf(buf, size, "%s", CDSE_SOURCE_DIR "/python");
        return 0;
    }
    return -1;
}

/* PYTHONPATH = DIR, then what was there before. */
static int set_pythonpath(const char *dir)
{
    const char *old = getenv("PYTHONPATH");
    char value[2 * PATH_MAX];
    if (old != NULL && old[0] != '\0')
        snprintf(value, sizeof value, "%s:%s", dir, old);
    else
        snprintf(value, sizeof value, "%s", dir);
    return setenv("PYTHONPATH", value, 1);
}

/* CLUSTERDSE_BIN = this program, which the report runs for `fit` (the probe page draws the
 * fit that `fit` writes); left as it is when the program cannot tell where it is. */
static int set_binary(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || (size_t)n >= sizeof exe - 1)
        return 0;
    exe[n] = '\0';
    return setenv("CLUSTERDSE_BIN", exe, 1);
}

/* STORE among the arguments (the first that is neither an option nor an option's value, as
 * argparse reads them), or NULL. */
static const char *store_argument(int argc, char **argv)
{
    static const char *const with_value[] = {"-o", "--output", "--system", "--gpus", "-n", "--top"};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0)
            return i + 1 < argc ? argv[i + 1] : NULL;
        if (arg[0] != '-' || arg[1] == '\0')
            return arg;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            if (strcmp(arg, with_value[k]) == 0)
                i++;
    }
    return NULL;
}

/* Runs the interpreter on argv and returns its exit code (2 when it cannot run or dies). */
static int run_python(const char *python, char **args)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "clusterdse report: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        execv(python, args);
        fprintf(stderr,
                "clusterdse report: cannot run %s: %s (install python3: "
                "scripts/setup.sh)\n",
                python, strerror(errno));
        _exit(2);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 2;
    if (WIFEXITED(status))
        return WEXITSTATUS(status) <= 3 ? WEXITSTATUS(status) : 2;
    fprintf(stderr, "clusterdse report: %s killed by signal %d\n", python, WTERMSIG(status));
    return 2;
}

int cdse_cmd_report(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
    }
    if (argc < 2) {
        fprintf(stderr, "clusterdse report: missing STORE\n%s", usage_text);
        return 1;
    }
    for (int i = 1; i + 1 < argc; i++) {
        char err[CDSE_PATH_MAX + 128];
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
            cdse_output_path_check(argv[i], argv[i + 1], err, sizeof err) != 0) {
            fprintf(stderr, "clusterdse report: %s\n", err);
            return 1;
        }
    }
    /* Before the interpreter starts: a FIFO would block its open of the store forever. */
    const char *store = store_argument(argc, argv);
    int checked = store != NULL ? cdse_cli_store_path("clusterdse report", store) : 0;
    if (checked != 0)
        return checked;
    char dir[PATH_MAX];
    if (find_package(dir, sizeof dir) != 0) {
        fprintf(stderr,
                "clusterdse report: the Python package clusterdse was not found (looked "
                "in $CLUSTERDSE_PYTHONPATH, BINDIR/../share/clusterdse/python, "
                "BINDIR/../python, %s/python)\n",
                CDSE_SOURCE_DIR);
        return 2;
    }
    if (set_pythonpath(dir) != 0 || set_binary() != 0)
        return 2;
    const char *python = getenv("CLUSTERDSE_PYTHON");
    if (python == NULL || python[0] == '\0')
        python = REPORT_PYTHON;
    /* python -m clusterdse.report ARGS... --version-string VERSION */
    char **args = calloc((size_t)argc + 6, sizeof *args);
    if (args == NULL)
        return 2;
    int n = 0;
    args[n++] = (char *)python;
    args[n++] = "-m";
    args[n++] = "clusterdse.report";
    for (int i = 1; i < argc; i++)
        args[n++] = argv[i];
    args[n++] = "--version-string";
    args[n++] = CDSE_VERSION;
    args[n] = NULL;
    int rc = run_python(python, args);
    free(args);
    return rc;
}
