/* Shared fixtures of test_store.c and test_store_commit.c (split from test_store.c, issue 28):
 * a temporary directory per run, a small job, synthetic records. Include first. */
#define _DEFAULT_SOURCE /* flock */
#ifndef CDSE_TEST_STORE_FIXTURES_H
#define CDSE_TEST_STORE_FIXTURES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <hdf5.h>

#include "clusterdse/config/job.h"
#include "clusterdse/sweep/store.h"
#include "clusterdse/sweep/sweep.h"

static char dir[256];

static inline void path_of(const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", dir, name);
}

/* A job of one model on one system and a space of `size` configurations along one axis. */
static inline cdse_job *small_job(uint64_t size, int store_mode)
{
    cdse_job *job = calloc(1, sizeof *job);
    snprintf(job->name, sizeof job->name, "unit");
    snprintf(job->path, sizeof job->path, "<test>");
    job->n_models = 2;
    snprintf(job->model[0].name, CDSE_NAME_MAX, "model-a");
    snprintf(job->model[1].name, CDSE_NAME_MAX, "model-b");
    job->n_systems = 1;
    snprintf(job->system[0].name, CDSE_NAME_MAX, "system-x");
    for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
        job->space.n[a] = 1;
        job->space.value[a][0] = 1;
    }
    job->space.size = size;
    job->objective.metric = CDSE_METRIC_TIME_PER_ITERATION;
    job->objective.top = 3;
    job->objective.store = store_mode;
    job->fingerprint = 0x1234abcdull;
    job->text = "name = \"unit\";\n";
    job->text_len = strlen(job->text);
    return job;
}

/* A record whose fields are functions of its index, so a read back can be checked. */
static inline void synthetic(uint64_t index, cdse_record *r)
{
    memset(r, 0, sizeof *r);
    r->index = index;
    r->model = (int32_t)(index % 2);
    r->system = 0;
    r->strategy.gpus = 8;
    r->strategy.tp = 1 << (index % 4);
    r->strategy.recompute = (int)(index % 3);
    r->strategy.sequence_parallel = index % 2 == 1;
    r->strategy.precision = CDSE_BF16;
    r->result.status = index % 5 == 0 ? CDSE_ST_OOM : CDSE_ST_OK;
    r->result.time_per_iteration_s = 1.0 + (double)index / 1000.0;
    r->result.mem_total_gib = (double)(index % 80);
}

static cdse_store_meta meta = {.ranks = 1, .mpi_library = "none", .hostnames = "here"};

/* A store of `job`, described as the sweep describes it (cdse_store_describe). */
static inline int create_of_job(const char *path, const cdse_job *job, const cdse_store_meta *m,
                                bool force, cdse_store **s, cdse_diag *diag)
{
    cdse_store_desc desc;
    cdse_store_describe(job, &desc);
    return cdse_store_create(path, &desc, m, force, s, diag);
}

static inline int setup(void **state)
{
    (void)state;
    cdse_store_quiet_hdf5();
    snprintf(dir, sizeof dir, "/tmp/cdse_test_store.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static inline int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Round `round` of the writer: 1500 rows (with /results: filling the last round's partial chunk
 * and leaving a new one), its range in /progress, /top of other rows and another length than the
 * round before, /pareto and /pareto_cost likewise or (`only_top`) the same as before, then the
 * commit. */
static inline int try_commit_round(cdse_store *s, int round, bool only_top, int n_rows,
                                   uint64_t *next, cdse_counts *counts)
{
    size_t rs = cdse_store_row_size();
    unsigned char *rows = malloc((size_t)n_rows * rs);
    for (int i = 0; i < n_rows; i++) {
        cdse_record r;
        synthetic(*next + (uint64_t)i, &r);
        cdse_store_pack(&r, rows + (size_t)i * rs);
    }
    cdse_diag diag = {""};
    if (cdse_store_has(s, "results") && cdse_store_append(s, rows, (size_t)n_rows, &diag) != 0)
        _exit(11);
    free(rows);
    cdse_done done = {.begin = *next, .end = *next + (uint64_t)n_rows};
    done.status[CDSE_ST_OK] = (uint64_t)n_rows;
    *next += (uint64_t)n_rows;
    counts->evaluated = *next;
    counts->status[CDSE_ST_OK] = *next;
    counts->feasible = *next;
    cdse_record best[3][64];
    int varied = only_top ? 0 : round % 8;
    size_t n[3] = {40 + 3 * (size_t)(round % 8), 10 + 2 * (size_t)varied, 5 + (size_t)varied};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < n[t]; i++)
            synthetic(100000 * (uint64_t)(t == 0 ? round : varied) + 1000 * (uint64_t)t + 7 * i,
                      &best[t][i]);
    cdse_best_rows b = {best[0], n[0], best[1], n[1], best[2], n[2]};
    return cdse_store_commit(s, &done, n_rows > 0 ? 1 : 0, counts, &b, &diag); /* 0: no range */
}

static inline void commit_round(cdse_store *s, int round, bool only_top, int n_rows, uint64_t *next,
                                cdse_counts *counts)
{
    if (try_commit_round(s, round, only_top, n_rows, next, counts) != 0)
        _exit(12);
}

#endif
