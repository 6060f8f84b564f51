/* --dry-run: the space per axis, a measured rate, and estimates of time and store size. */
#define _POSIX_C_SOURCE 200809L
#include "dry_run.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "clusterdse/sweep/report.h"
#include "clusterdse/sweep/store.h"

/* The sample: at most this many configurations, or this many seconds. */
#define SAMPLE_MAX     200000
#define SAMPLE_SECONDS 0.25
/* Multiplier of the sample's index sequence (2^64 / golden ratio, odd): consecutive samples
 * land far apart in every axis, so the sample spreads over the whole space. */
#define SAMPLE_STEP 0x9E3779B97F4A7C15ULL

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *value_name(const cdse_job *job, int axis, int64_t v, char *buf, size_t n)
{
    switch (axis) {
    case CDSE_AXIS_MODEL:
        return job->model[v].name;
    case CDSE_AXIS_SYSTEM:
        return job->system[v].name;
    case CDSE_AXIS_RECOMPUTE:
        return cdse_recompute_name((int)v);
    case CDSE_AXIS_PRECISION:
        return cdse_dtype_name((int)v);
    case CDSE_AXIS_OFFLOAD:
        return cdse_offload_name((int)v);
    case CDSE_AXIS_PLACEMENT:
        return cdse_placement_names[v];
    case CDSE_AXIS_RECOMPUTE_MODULES:
        cdse_recompute_modules_text((int)v, buf, n);
        return buf;
    case CDSE_AXIS_MOE_DISPATCHER:
        return cdse_moe_dispatcher_names[v];
    case CDSE_AXIS_MOE_OVERLAP:
        return cdse_moe_overlap_names[v];
    case CDSE_AXIS_STACK:
        return v >= 0 && v < job->n_stacks ? job->stack[v].name : "(each system's stack)";
    case CDSE_AXIS_SEQUENCE_PARALLEL:
    case CDSE_AXIS_FLASH_ATTENTION:
    case CDSE_AXIS_TP_COMM_OVERLAP:
        return v ? "true" : "false";
    default:
        snprintf(buf, n, "%lld", (long long)v);
        return buf;
    }
}

static void print_axes(const cdse_job *job, FILE *out)
{
    const cdse_space *sp = &job->space;
    fprintf(out, "# %-18s %6s  %s\n", "axis", "values", "");
    for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
        int h = a - CDSE_AXIS_HW0;
        bool hw = h >= 0 && h < CDSE_MAX_HW_AXES;
        if (hw && h >= job->n_hw_axes)
            continue; /* an unused hardware axis */
        char line[160] = "", buf[128];
        size_t len = 0;
        for (int i = 0; i < sp->n[a] && len < 100; i++) {
            if (hw)
                snprintf(buf, sizeof buf, "%g", job->hw_axis[h].value[i]);
            const char *v = hw ? buf : value_name(job, a, sp->value[a][i], buf, sizeof buf);
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", i ? " " : "", v);
        }
        fprintf(out, "  %-18s %6d  %s%s\n",
                hw ? cdse_hw_column(job->hw_axis[h].key) : cdse_axis_name(a), sp->n[a], line,
                len >= 100 ? " ..." : "");
    }
}

/* Evaluates a spread sample; returns configurations per second, the feasible share in *ok. */
static double sample_rate(const cdse_job *job, uint64_t *sampled, double *ok)
{
    uint64_t size = job->space.size, n = 0, feasible = 0;
    cdse_record record;
    double start = seconds_now(), elapsed = 0;
    while (n < SAMPLE_MAX && n < size) {
        /* A space no bigger than the sample is evaluated whole, in order. */
        cdse_record_eval(job, size <= SAMPLE_MAX ? n : (n * SAMPLE_STEP) % size, &record);
        feasible += record.result.status == CDSE_ST_OK;
        n++;
        if ((n & 1023) == 0 && (elapsed = seconds_now() - start) > SAMPLE_SECONDS)
            break;
    }
    elapsed = seconds_now() - start;
    *sampled = n;
    *ok = n ? (double)feasible / (double)n : 0;
    return elapsed > 0 ? (double)n / elapsed : 0;
}

static void print_duration(FILE *out, const char *label, double s)
{
    if (s < 120)
        fprintf(out, "  %-30s %.3g s\n", label, s);
    else if (s < 2 * 86400)
        fprintf(out, "  %-30s %.3g s (%.1f h)\n", label, s, s / 3600);
    else
        fprintf(out, "  %-30s %.3g s (%.1f days)\n", label, s, s / 86400);
}

static double groups_of(const cdse_job *job)
{
    const int g = job->objective.group_by;
    double n = 1;
    n *= g & CDSE_GROUP_MODEL ? job->space.n[CDSE_AXIS_MODEL] : 1;
    n *= g & CDSE_GROUP_SYSTEM ? job->space.n[CDSE_AXIS_SYSTEM] : 1;
    n *= g & CDSE_GROUP_GPUS ? job->space.n[CDSE_AXIS_GPUS] : 1;
    n *= g & CDSE_GROUP_GLOBAL_BATCH ? job->space.n[CDSE_AXIS_GLOBAL_BATCH] : 1;
    n *= g & CDSE_GROUP_PRECISION ? job->space.n[CDSE_AXIS_PRECISION] : 1;
    for (int h = 0; h < job->n_hw_axes && (g & CDSE_GROUP_DESIGN); h++)
        n *= job->space.n[CDSE_AXIS_HW0 + h];
    return n;
}

static void print_store(const cdse_job *job, double feasible_share, FILE *out)
{
    static const char *const modes[] = {"all", "feasible", "best"};
    double size = (double)job->space.size, rows;
    double row_bytes = (double)cdse_store_row_size();
    if (job->objective.store == CDSE_STORE_ALL)
        rows = size;
    else if (job->objective.store == CDSE_STORE_FEASIBLE)
        rows = size * feasible_share;
    else
        rows = 0;
    double top_rows = groups_of(job) * job->objective.top;
    fprintf(out, "  %-30s %s\n", "store mode", modes[job->objective.store]);
    fprintf(out, "  %-30s %.4g (+ %.4g in /top)\n", "estimated /results rows", rows, top_rows);
    fprintf(out,
            "  %-30s %.4g GB (%.0f bytes a row before compression; deflate makes it smaller)\n",
            "estimated store size, at most", (rows + top_rows) * row_bytes / 1e9, row_bytes);
}

void cdse_dry_run(const cdse_job *job, int ranks, bool store, FILE *out)
{
    uint64_t sampled = 0;
    double ok = 0;
    double rate = sample_rate(job, &sampled, &ok);
    double size = (double)job->space.size;
    fprintf(out, "# dry run of job %s: nothing is evaluated beyond a sample, nothing written\n",
            job->name);
    print_axes(job, out);
    fprintf(out, "# %-30s %s\n", "estimate", "value");
    fprintf(out, "  %-30s %llu\n", "configurations", (unsigned long long)job->space.size);
    fprintf(out, "  %-30s %llu spread over the space\n", "sample evaluated",
            (unsigned long long)sampled);
    fprintf(out, "  %-30s %.3g%% (from the sample)\n", "feasible share", 100 * ok);
    fprintf(out, "  %-30s %.4g configs/s per rank\n", "measured rate", rate);
    fprintf(out, "  %-30s %d\n", "ranks", ranks);
    print_duration(out, "estimated evaluation time", rate > 0 ? size / (rate * ranks) : INFINITY);
    if (job->objective.prune)
        fprintf(out, "  %-30s %s\n", "pruning",
                "on: the time above is that of every configuration, an upper bound");
    if (store) {
        print_store(job, ok, out);
        fprintf(out, "# the sweep adds the time to send and write the stored rows (none with "
                     "store = \"best\"), which the estimate leaves out\n");
    }
}

void cdse_dry_run_announce(const cdse_job *job, int ranks, FILE *out)
{
    uint64_t sampled = 0;
    double ok = 0;
    double rate = sample_rate(job, &sampled, &ok);
    double seconds = rate > 0 ? (double)job->space.size / (rate * ranks) : INFINITY;
    fprintf(out,
            "sweep: a large space: evaluating it takes about %.3g h on %d rank%s at %.3g "
            "configs/s per rank (measured on a sample; --dry-run shows more)%s\n",
            seconds / 3600, ranks, ranks > 1 ? "s" : "", rate,
            job->objective.prune ? "; pruning skips most of it" : "");
}

int cdse_dry_run_check_store(const cdse_job *job, bool force, const char *prog, FILE *err)
{
    if (force || job->objective.store != CDSE_STORE_ALL ||
        (double)job->space.size < CDSE_DRY_RUN_BIG_ALL)
        return 0;
    double gb = (double)job->space.size * (double)cdse_store_row_size() / 1e9;
    if (err == NULL)
        return 1;
    fprintf(err,
            "%s: %s: a space of %llu configurations with objective.store = \"all\" would store "
            "every row (~%.3g GB before compression); allowed: objective.store = \"feasible\" or "
            "\"best\", or --force to store them all (--dry-run shows the estimates)\n",
            prog, job->path, (unsigned long long)job->space.size, gb);
    return 1;
}
