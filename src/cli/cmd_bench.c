/* clusterdse bench: throughput of the evaluator (decode + check + model), one core. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clusterdse/config/job.h"
#include "clusterdse/model/record.h"
#include "commands.h"
#include "options.h"

/* GPT-3 175B on 1024 H100 GPUs with every strategy axis swept: 10,321,920 configurations. */
static const char bench_job[] =
    "name = \"bench-gpt3-175b-1024\";\n"
    "models = ( \"gpt3-175b\" );\n"
    "systems = ( \"h100-sxm-dgx\" );\n"
    "space = {\n"
    "  gpus = [ 1024 ];\n"
    "  tp = [ 1, 2, 4, 8, 16 ];\n"
    "  pp = [ 1, 2, 4, 8, 12, 16, 24, 32 ];\n"
    "  cp = [ 1, 2, 4, 8 ];\n"
    "  vpp = [ 1, 2, 3, 4, 6, 8 ];\n"
    "  microbatch = [ 1, 2, 3, 4, 6, 8, 16 ];\n"
    "  global_batch = [ 128, 256, 384, 512, 640, 768, 1024, 1280, 1536, 2048, 2560, 3072,\n"
    "                   4096, 6144, 8192, 12288 ];\n"
    "  recompute = [ \"none\", \"selective\", \"full\" ];\n"
    "  sequence_parallel = [ true, false ];\n"
    "  zero = [ 0, 1, 2, 3 ];\n"
    "  precision = [ \"bf16\", \"fp8\" ];\n"
    "  flash_attention = [ true, false ];\n"
    "};\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A count of configurations: digits only (strtoull alone would take "-3" as 2^64 - 3), at least
 * 1, at most 2^64 - 1. 0, or -1 for anything else. */
static int parse_count(const char *text, uint64_t *count)
{
    if (!isdigit((unsigned char)text[0]))
        return -1;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (*end != '\0' || errno == ERANGE || value == 0)
        return -1;
    *count = value;
    return 0;
}

typedef struct bench_args {
    const char *path; /* NULL: the GPT-3 175B space above */
    uint64_t limit;   /* -n: 0 for the whole space */
} bench_args;

static int bench_count(void *args, const char *value, char *err, size_t size)
{
    (void)err, (void)size;
    return parse_count(value, &((bench_args *)args)->limit);
}

static int bench_job_path(void *args, const char *arg, char *err, size_t size)
{
    bench_args *a = args;
    if (a->path != NULL || arg[0] == '-') {
        snprintf(err, size, "unexpected argument '%s'", arg);
        return -1;
    }
    a->path = arg;
    return 0;
}

static const cdse_cli_option bench_options[] = {
    {"-n", 0, "COUNT", "evaluate only the first COUNT configurations", CDSE_CLI_CALL, 0, 0, 0,
     "a positive integer", bench_count},
    {"--help", 'h', NULL, "this text", CDSE_CLI_HELP, 0, 0, 0, NULL, NULL},
};

static void usage(FILE *out);
static const cdse_cli_command bench_command = {
    "bench", bench_options, CDSE_CLI_COUNT(bench_options), 11, bench_job_path, usage,
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: clusterdse bench [JOB.cfg] [-n COUNT] [-h|--help]\n\n"
            "Measures the evaluator's rate on one core: every configuration of the space is\n"
            "decoded from its index, checked and evaluated, as the sweep does. Without JOB.cfg\n"
            "the space is GPT-3 175B on 1024 H100 GPUs with every strategy axis swept\n"
            "(10,321,920 configurations). -n evaluates only the first COUNT configurations.\n"
            "The last line is 'configs_per_s_per_core: N'.\n\n");
    cdse_cli_print_options(&bench_command, out);
}

int cdse_cmd_bench(int argc, char **argv)
{
    bench_args a = {NULL, 0};
    int code = cdse_cli_parse(&bench_command, argc, argv, &a);
    if (code >= 0)
        return code;
    const char *path = a.path;
    uint64_t limit = a.limit;

    cdse_job *job = malloc(sizeof *job);
    if (job == NULL) {
        fprintf(stderr, "clusterdse bench: out of memory\n");
        return 2;
    }
    cdse_diag diag = {{0}};
    int rc = path ? cdse_job_load_file(path, job, &diag)
                  : cdse_job_load_text(bench_job, "<bench>", job, &diag);
    if (rc != 0) {
        fprintf(stderr, "clusterdse bench: %s\n", diag.msg);
        free(job);
        return 1;
    }
    uint64_t total = job->space.size;
    uint64_t n = limit && limit < total ? limit : total;
    uint64_t counts[CDSE_ST_COUNT] = {0};
    double checksum = 0.0;
    cdse_record record;
    cdse_study study;
    cdse_job_study(job, &study);
    double start = now();
    for (uint64_t i = 0; i < n; i++) {
        cdse_record_eval(&study, i, &record);
        counts[record.result.status]++;
        checksum += record.result.time_per_iteration_s;
    }
    double seconds = now() - start;
    uint64_t modelled = counts[CDSE_ST_OK] + counts[CDSE_ST_OOM];

    printf("# clusterdse bench: %s\n", job->name);
    printf("# %-28s %16s\n", "quantity", "value");
    printf("  %-28s %16llu\n", "space_size", (unsigned long long)total);
    printf("  %-28s %16llu\n", "evaluated", (unsigned long long)n);
    printf("  %-28s %16llu\n", "fully_modelled(ok+oom)", (unsigned long long)modelled);
    printf("  %-28s %16llu\n", "feasible", (unsigned long long)counts[CDSE_ST_OK]);
    printf("  %-28s %16.3f\n", "seconds", seconds);
    printf("  %-28s %16.0f\n", "fully_modelled_per_s", modelled / seconds);
    printf("  %-28s %16.6g\n", "checksum", checksum);
    printf("configs_per_s_per_core: %.0f\n", (double)n / seconds);
    cdse_job_free(job);
    free(job);
    return 0;
}
