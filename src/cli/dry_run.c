/* --dry-run: the space per axis, a measured rate, and estimates of time and store size. */
#define _POSIX_C_SOURCE 200809L
#include "dry_run.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "clusterdse/sweep/report.h"
#include "clusterdse/sweep/store.h"
#include "clusterdse/sweep/sweep.h"

/* The sample of --dry-run: runs of the sweep until this many seconds have passed (a second
 * spreads about a hundred runs over the space; a pruned job's runs are whole units). The
 * announcement of a large sweep that is about to start measures for less. */
#define SAMPLE_SECONDS   1.0
#define ANNOUNCE_SECONDS 0.25

static const char *value_name(const cdse_job *job, int axis, int64_t v, char *buf, size_t n)
{
    switch (axis) {
    case CDSE_AXIS_MODEL:
        return job->model[v].name;
    case CDSE_AXIS_SYSTEM:
        return job->system[v].name;
    case CDSE_AXIS_STACK:
        return v >= 0 && v < job->n_stacks ? job->stack[v].name : "(each system's stack)";
    default: {
        const char *text = cdse_axis_value_text(axis, v, buf, n);
        if (text == NULL) {
            snprintf(buf, n, "%lld", (long long)v);
            text = buf;
        }
        return text;
    }
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

/* The sweep's rate on this machine, measured with its own code on a spread sample
 * (cdse_sweep_measure): configurations done (evaluated or skipped by pruning) per second and
 * rank. */
static double sample_rate(const cdse_job *job, double seconds, cdse_sweep_sample *sample)
{
    if (cdse_sweep_measure(job, seconds, sample) != 0 || sample->seconds <= 0)
        return 0;
    return (double)sample->done / sample->seconds;
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
    double size = (double)job->space.size, rows;
    double row_bytes = (double)cdse_store_row_size();
    if (job->objective.store == CDSE_STORE_ALL)
        rows = size;
    else if (job->objective.store == CDSE_STORE_FEASIBLE)
        rows = size * feasible_share;
    else
        rows = 0;
    double top_rows = groups_of(job) * job->objective.top;
    fprintf(out, "  %-30s %s\n", "store mode", cdse_store_mode_names[job->objective.store]);
    fprintf(out, "  %-30s %.4g (+ %.4g in /top)\n", "estimated /results rows", rows, top_rows);
    fprintf(out,
            "  %-30s %.4g GB (%.0f bytes a row before compression; deflate makes it smaller)\n",
            "estimated store size, at most", (rows + top_rows) * row_bytes / 1e9, row_bytes);
}

void cdse_dry_run(const cdse_job *job, int ranks, bool store, FILE *out)
{
    cdse_sweep_sample sample;
    double rate = sample_rate(job, SAMPLE_SECONDS, &sample);
    const cdse_counts *n = &sample.counts;
    double ok = n->evaluated ? (double)n->feasible / (double)n->evaluated : 0;
    double size = (double)job->space.size;
    fprintf(out, "# dry run of job %s: nothing is evaluated beyond a sample, nothing written\n",
            job->name);
    print_axes(job, out);
    fprintf(out, "# %-30s %s\n", "estimate", "value");
    fprintf(out, "  %-30s %llu\n", "configurations", (unsigned long long)job->space.size);
    fprintf(out, "  %-30s %llu runs of %llu consecutive configurations, %s\n", "sample",
            (unsigned long long)sample.runs, (unsigned long long)sample.run_size,
            sample.done >= job->space.size ? "the whole space" : "spread over the space");
    fprintf(out, "  %-30s %llu\n", "sample evaluated", (unsigned long long)n->evaluated);
    if (job->objective.prune)
        fprintf(out, "  %-30s %llu (%.3g%% of the sample)\n", "sample skipped by pruning",
                (unsigned long long)n->pruned,
                sample.done ? 100.0 * (double)n->pruned / (double)sample.done : 0.0);
    fprintf(out, "  %-30s %.3g%% (of the sample evaluated)\n", "feasible share", 100 * ok);
    fprintf(out, "  %-30s %.4g configs/s per rank (the sweep's own code, this machine)\n",
            "measured rate", rate);
    fprintf(out, "  %-30s %d\n", "ranks", ranks);
    print_duration(out, "estimated evaluation time", rate > 0 ? size / (rate * ranks) : INFINITY);
    if (store) {
        print_store(job, ok, out);
        fprintf(out, "# a rank per core; rank 0 also writes the stored rows (none with store = "
                     "\"best\"), which the estimate leaves out\n");
    }
}

void cdse_dry_run_announce(const cdse_job *job, int ranks, FILE *out)
{
    cdse_sweep_sample sample;
    double rate = sample_rate(job, ANNOUNCE_SECONDS, &sample);
    double seconds = rate > 0 ? (double)job->space.size / (rate * ranks) : INFINITY;
    fprintf(out,
            "sweep: a large space: evaluating it takes about %.3g h on %d rank%s at %.3g "
            "configs/s per rank (measured on a sample%s; --dry-run shows more)\n",
            seconds / 3600, ranks, ranks > 1 ? "s" : "", rate,
            job->objective.prune ? ", pruning included" : "");
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
