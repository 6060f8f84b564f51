/* The distributed sweep. Rank 0 hands out index chunks dynamically (guided sizes with a floor)
 * and evaluates small slices of its own chunk between polls; workers evaluate whole chunks and
 * return one message per chunk: counts by status, the packed rows to store and their best
 * candidates. Rank 0 merges, appends to the store and commits (rows + done ranges + counts +
 * /top + /pareto in one flush) every flush interval. */
#define _POSIX_C_SOURCE 200809L
#include "sweep_internal.h"

#include "clusterdse/sweep/share.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- provenance ----------------------------------------------------------------------------- */

static void gather_meta(MPI_Comm comm, int rank, int ranks, cdse_store_meta *meta)
{
    memset(meta, 0, sizeof *meta);
    meta->ranks = ranks;
    int len = 0;
    MPI_Get_library_version(meta->mpi_library, &len);
    meta->mpi_library[sizeof meta->mpi_library - 1] = '\0';
    char *nl = strchr(meta->mpi_library, '\n');
    if (nl)
        *nl = '\0';
    const char *slurm = getenv("SLURM_JOB_ID");
    snprintf(meta->slurm_job_id, sizeof meta->slurm_job_id, "%s", slurm ? slurm : "");
    char name[MPI_MAX_PROCESSOR_NAME];
    memset(name, 0, sizeof name);
    MPI_Get_processor_name(name, &len);
    char *all = rank == 0 ? malloc((size_t)ranks * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               comm);
    if (rank != 0 || all == NULL)
        return;
    size_t used = 0;
    for (int r = 0; r < ranks; r++) {
        const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
        bool seen = false;
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(h, all + (size_t)q * MPI_MAX_PROCESSOR_NAME) == 0;
        if (seen || used + strlen(h) + 2 >= sizeof meta->hostnames)
            continue;
        used += (size_t)snprintf(meta->hostnames + used, sizeof meta->hostnames - used, "%s%s",
                                 used ? "," : "", h);
    }
    free(all);
}

/* ---- workers ------------------------------------------------------------------------------ */

static void worker_loop(const cdse_job *job, const cdse_sweep_options *opt, MPI_Comm comm,
                        uint64_t chunk_max)
{
    chunk c;
    int ok = sweep__chunk_init(&c, job, chunk_max) == 0;
    for (;;) {
        uint64_t msg[2];
        MPI_Status status;
        MPI_Recv(msg, 2, MPI_UINT64_T, 0, MPI_ANY_TAG, comm, &status);
        if (status.MPI_TAG == TAG_STOP)
            break;
        size_t size = 0;
        if (ok) {
            sweep__chunk_begin(&c, (cdse_range){msg[0], msg[1]});
            while (!sweep__chunk_complete(&c)) /* pruning may take several calls */
                sweep__chunk_eval(&c, job, msg[1] - msg[0]);
            c.head.interrupted = opt->stop != NULL && *opt->stop;
            size = sweep__chunk_finish(&c);
        }
        if (size > INT_MAX) /* cannot happen within CDSE_SWEEP_CHUNK_LIMIT; never cast it */
            size = 0;
        if (size == 0) { /* out of memory: report the chunk as interrupted and empty */
            chunk_header h;
            memset(&h, 0, sizeof h);
            h.begin = h.end = msg[0];
            h.interrupted = 1;
            MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, TAG_RESULT, comm);
            continue;
        }
        MPI_Send(c.msg, (int)size, MPI_BYTE, 0, TAG_RESULT, comm);
    }
    sweep__chunk_free(&c); /* also after a chunk_init that failed half-way */
}

/* ---- the sweep ---------------------------------------------------------------------------- */

/* Resume: the rows after the last whole HDF5 chunk come back into the tail buffer, pinned. */
static int reload_tail(master *m)
{
    uint64_t rows = 0;
    int rc = cdse_store_rows(m->store, "results", &rows, m->diag);
    m->rows_at_start = rows;
    m->aligned = rows / m->chunk_rows * m->chunk_rows;
    size_t n = (size_t)(rows - m->aligned);
    if (rc != 0 || n == 0)
        return rc;
    unsigned char *buf = malloc(n * m->row_size);
    if (buf == NULL) {
        cdse_diag_set(m->diag, "out of memory");
        return CDSE_ENOMEM;
    }
    rc = cdse_store_read_rows(m->store, "results", m->aligned, n, buf, m->diag);
    if (rc == 0 && sweep__push_tail(m, NULL, buf, n) != 0) {
        cdse_diag_set(m->diag, "out of memory");
        rc = CDSE_ENOMEM;
    }
    m->tail_written = m->tail_n;
    free(buf);
    return rc;
}

/* Rank 0: creates or reopens the store, and restores counts, best and the remaining gaps. */
/* Whether some configuration of the job asks a stack for what its profile says it lacks (the
 * status stack_unsupported, cdse_strategy_check): a value of flash_attention, recompute or
 * sequence_parallel that one of the stacks it runs (the stack axis, or each system's default)
 * does not have. */
static bool asks_what_a_stack_lacks(const cdse_job *job)
{
    const cdse_space *sp = &job->space;
    bool flash = false, selective = false, seq = false;
    for (int i = 0; i < sp->n[CDSE_AXIS_FLASH_ATTENTION]; i++)
        flash |= sp->value[CDSE_AXIS_FLASH_ATTENTION][i] != 0;
    for (int i = 0; i < sp->n[CDSE_AXIS_RECOMPUTE]; i++)
        selective |= sp->value[CDSE_AXIS_RECOMPUTE][i] == CDSE_RECOMPUTE_SELECTIVE;
    for (int i = 0; i < sp->n[CDSE_AXIS_SEQUENCE_PARALLEL]; i++)
        seq |= sp->value[CDSE_AXIS_SEQUENCE_PARALLEL][i] != 0;
    for (int i = 0; i < sp->n[CDSE_AXIS_STACK]; i++) {
        int value = (int)sp->value[CDSE_AXIS_STACK][i];
        int n = value >= 0 ? 1 : job->n_systems;
        for (int j = 0; j < n; j++) {
            int k = value >= 0 ? value : job->system_stack[j];
            if (!cdse_stack_has(k >= 0 ? &job->stack[k] : NULL, flash, selective, seq))
                return true;
        }
    }
    return false;
}

/* Resume: whether the store can be continued by this job (its fingerprint, the statuses it
 * counts); CDSE_EMISMATCH with the reason otherwise. */
static int resume_check(master *m)
{
    const cdse_sweep_options *opt = m->opt;
    const cdse_job *job = m->job;
    if (cdse_store_fingerprint(m->store) != job->fingerprint) {
        cdse_diag_set(m->diag,
                      "%s was made by a different job (fingerprint %016llx, this job "
                      "%016llx): refusing to resume; use another -o, or --force to start over",
                      opt->output, (unsigned long long)cdse_store_fingerprint(m->store),
                      (unsigned long long)job->fingerprint);
        return CDSE_EMISMATCH;
    }
    if (cdse_store_statuses(m->store) <= CDSE_ST_STACK_UNSUPPORTED &&
        asks_what_a_stack_lacks(job)) {
        cdse_diag_set(m->diag,
                      "%s was made before the status stack_unsupported, which this job's "
                      "configurations can have (a stack without fused attention, selective "
                      "recomputation or sequence parallelism asked for it): refusing to "
                      "resume; use another -o, or --force to start over",
                      opt->output);
        return CDSE_EMISMATCH;
    }
    if (cdse_store_statuses(m->store) <= CDSE_ST_OVER_HEADROOM) {
        /* Every job can have it (a reserved figure above the headroom line), and the store
         * has neither its count nor the columns it is judged by (mem_reserved_gib). */
        cdse_diag_set(m->diag,
                      "%s was made before the status over_headroom (objective.memory_headroom) "
                      "and the column mem_reserved_gib: refusing to resume; use another -o, "
                      "or --force to start over",
                      opt->output);
        return CDSE_EMISMATCH;
    }
    if (cdse_store_statuses(m->store) <= CDSE_ST_OVER_BUDGET && job->objective.budget > 0.0) {
        cdse_diag_set(m->diag,
                      "%s was made before the status over_budget, which this job's "
                      "configurations can have (objective.budget): refusing to resume; use "
                      "another -o, or --force to start over",
                      opt->output);
        return CDSE_EMISMATCH;
    }
    return CDSE_OK;
}

/* Resume: the stored best are re-evaluated from their indices (evaluation is pure) and offered
 * to the best-so-far. */
static int resume_best(master *m)
{
    const cdse_job *job = m->job;
    cdse_study study;
    cdse_job_study(job, &study);
    const char *sets[2] = {"top", "pareto"};
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        uint64_t n = 0;
        rc = cdse_store_rows(m->store, sets[s], &n, m->diag);
        size_t row_size = cdse_store_row_size();
        unsigned char *rows = rc == 0 ? malloc(n ? n * row_size : 1) : NULL;
        if (rc == 0 && rows == NULL)
            rc = CDSE_ENOMEM;
        if (rc == 0)
            rc = cdse_store_read_rows(m->store, sets[s], 0, (size_t)n, rows, m->diag);
        for (uint64_t i = 0; rc == 0 && i < n; i++) {
            cdse_record stored, fresh;
            cdse_store_unpack(rows + i * row_size, &stored);
            if (stored.index >= job->space.size) {
                cdse_diag_set(m->diag, "%s: /%s holds index %llu outside the space", m->opt->output,
                              sets[s], (unsigned long long)stored.index);
                rc = CDSE_EINVAL;
                break;
            }
            cdse_record_eval(&study, stored.index, &fresh);
            sweep__best_offer(m->best, &fresh);
        }
        free(rows);
    }
    return rc;
}

/* Resume: reopens the store, checks it, and restores its done ranges (*done, malloc'd), counts
 * and best. */
static int resume_store(master *m, cdse_done **done, size_t *n_done)
{
    int rc = cdse_store_open(m->opt->output, true, &m->store, m->diag);
    if (rc != 0)
        return rc;
    rc = resume_check(m);
    if (rc != 0)
        return rc;
    rc = cdse_store_read_progress(m->store, done, n_done, m->diag);
    cdse_store_sum_counts(*done, *n_done, &m->counts);
    m->feasible_seen = m->counts.feasible;
    return rc == 0 ? resume_best(m) : rc;
}

/* The work generator's gaps: the complement of the `done` ranges; returns what remains. */
static int plan_gaps(master *m, const cdse_done *done, size_t n_done, uint64_t *remaining)
{
    const cdse_job *job = m->job;
    cdse_range *ranges = malloc((n_done ? n_done : 1) * sizeof *ranges);
    for (size_t i = 0; ranges != NULL && i < n_done; i++)
        ranges[i] = (cdse_range){done[i].begin, done[i].end};
    if (ranges != NULL)
        m->gen.n_gaps = sweep__gaps(ranges, n_done, job->space.size, &m->gen.gaps);
    free(ranges);
    if (m->gen.gaps == NULL) {
        cdse_diag_set(m->diag, "out of memory");
        return CDSE_ENOMEM;
    }
    *remaining = 0;
    for (size_t i = 0; i < m->gen.n_gaps; i++)
        *remaining += m->gen.gaps[i].end - m->gen.gaps[i].begin;
    m->gen.remaining = *remaining;
    m->gen.pos = m->gen.n_gaps ? m->gen.gaps[0].begin : 0;
    m->done_total = m->done_at_start = job->space.size - *remaining;
    return CDSE_OK;
}

/* A new store holding what the job describes (cdse_store_describe): the store reads no job. */
static int create_store(master *m, const cdse_sweep_options *opt, const cdse_store_meta *meta)
{
    cdse_store_desc desc;
    cdse_store_describe(m->job, &desc);
    return cdse_store_create(opt->output, &desc, meta, opt->force, &m->store, m->diag);
}

static int master_open(master *m, const cdse_store_meta *meta, bool *already_complete)
{
    const cdse_sweep_options *opt = m->opt;
    *already_complete = false;
    bool exists = access(opt->output, F_OK) == 0;
    cdse_done *done = NULL;
    size_t n_done = 0;
    int rc;
    if (opt->resume && exists)
        rc = resume_store(m, &done, &n_done);
    else
        rc = create_store(m, opt, meta);
    if (rc == 0)
        rc = reload_tail(m);
    uint64_t remaining = 0;
    if (rc == 0)
        rc = plan_gaps(m, done, n_done, &remaining);
    free(done);
    if (rc != 0)
        return rc;
    *already_complete = remaining == 0 && opt->resume && exists;
    return CDSE_OK;
}

static int run_master(master *m, const cdse_store_meta *meta, cdse_sweep_stats *stats)
{
    bool already_complete = false;
    int rc = master_open(m, meta, &already_complete);
    cdse_share(m->comm, rc, NULL, 0); /* the workers start, or return with rank 0 */
    if (rc != 0)
        return rc;
    m->t_start = m->t_last_flush = m->t_last_progress = now_s();
    rc = sweep__master_loop(m);
    sweep__master_progress(m, true);
    bool finished = rc == 0 && m->done_total == m->job->space.size;
    if (rc == 0 && finished && !cdse_store_complete(m->store))
        rc = cdse_store_set_complete(m->store, m->diag);
    if (rc == 0 && !finished)
        rc = CDSE_EINTR;
    stats->total = m->job->space.size;
    stats->done = m->done_total;
    stats->evaluated_now = m->committed_now;
    uint64_t rows_now = 0;
    cdse_diag ignored;
    cdse_store_rows(m->store, "results", &rows_now, &ignored);
    stats->rows_written = rows_now - m->rows_at_start;
    stats->seconds = now_s() - m->t_start;
    stats->store_seconds = m->store_seconds;
    stats->counts = m->counts;
    stats->already_complete = already_complete;
    return rc;
}

/* Whether one chunk's message fits an MPI message (an int count); CDSE_EINVAL with the reason
 * otherwise. `opt` is the same on every rank: all return together. */
static int check_chunk_size(const cdse_job *job, uint64_t chunk_max, cdse_diag *diag)
{
    if (sweep__job_message_bound(job, chunk_max) <= INT_MAX)
        return CDSE_OK;
    if (job->objective.prune && sweep__message_bound(chunk_max) <= INT_MAX) {
        char line[16] = ""; /* the line of top, unless it was left at its default */
        if (job->objective.top_line > 0)
            snprintf(line, sizeof line, ":%d", job->objective.top_line);
        cdse_diag_set(diag,
                      "%s%s: objective.top = %d: a pruned chunk's best (top per group of a "
                      "unit) would not fit one MPI message; allowed: a smaller top, or no "
                      "pruning",
                      job->path, line, job->objective.top);
    } else
        cdse_diag_set(diag, "chunk size %llu: allowed: 1 to %d configurations",
                      (unsigned long long)chunk_max, CDSE_SWEEP_CHUNK_LIMIT);
    return CDSE_EINVAL;
}

/* Rank 0's state before the store is opened: the work generator and the buffers. */
static void master_init(master *m, const cdse_job *job, const cdse_sweep_options *opt,
                        MPI_Comm comm, int ranks, uint64_t chunk_min, uint64_t chunk_max,
                        cdse_diag *diag)
{
    memset(m, 0, sizeof *m);
    m->job = job;
    m->opt = opt;
    m->comm = comm;
    m->ranks = ranks;
    m->diag = diag;
    m->gen.ranks = ranks;
    m->gen.chunk_min = chunk_min;
    m->gen.chunk_max = chunk_max;
    m->gen.unit = 1;
    if (job->objective.prune) {
        int unit_axis, box_axis;
        sweep__prune_layout(&job->space, &m->gen.unit, &unit_axis, &box_axis);
    }
    m->row_size = cdse_store_row_size();
    m->chunk_rows = cdse_store_chunk_rows();
    m->scratch = malloc(m->chunk_rows * m->row_size);
    m->packed = malloc(cdse_store_chunk_bound());
    m->best = sweep__best_create(&job->objective, true);
    char note[CDSE_PARETO_COST_NOTE_MAX];
    m->pareto_cost = cdse_pareto_cost_note(job, note, sizeof note);
}

/* Closes (or, after a failed write, abandons) the store and frees rank 0's state; returns rc,
 * or the close's failure when rc was 0. */
static int master_close(master *m, int rc, cdse_sweep_stats *stats, cdse_diag *diag)
{
    if (m->store != NULL && rc == CDSE_EIO) {
        cdse_store_abandon(m->store); /* the file stays as its last commit left it */
        stats->store_abandoned = true;
    } else if (m->store != NULL) {
        cdse_diag closing;
        int crc = cdse_store_close(m->store, &closing);
        if (rc == 0 && crc != 0) {
            rc = crc;
            *diag = closing;
        }
    }
    sweep__best_free(m->best);
    free(m->gen.gaps);
    free(m->scratch);
    free(m->packed);
    free(m->tail);
    free(m->seg);
    for (size_t i = 0; i < m->q_n; i++)
        free(m->queue[m->q_head + i].data);
    free(m->queue);
    for (size_t i = 0; i < m->n_open; i++)
        free(m->open[i]);
    free(m->open);
    return rc;
}

int cdse_sweep_run(const cdse_job *job, const cdse_sweep_options *opt, MPI_Comm comm,
                   cdse_sweep_stats *stats, cdse_diag *diag)
{
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    memset(stats, 0, sizeof *stats);
    uint64_t chunk_min = opt->chunk_min ? opt->chunk_min : CDSE_SWEEP_CHUNK_MIN;
    uint64_t chunk_max = opt->chunk_max ? opt->chunk_max : CDSE_SWEEP_CHUNK_MAX;
    if (chunk_max < chunk_min)
        chunk_max = chunk_min;
    if (check_chunk_size(job, chunk_max, diag) != CDSE_OK)
        return CDSE_EINVAL;
    cdse_store_meta meta;
    gather_meta(comm, rank, ranks, &meta);
    int rc = CDSE_OK; /* rank 0's, which every rank returns */
    if (rank == 0) {
        master m;
        master_init(&m, job, opt, comm, ranks, chunk_min, chunk_max, diag);
        if (m.best == NULL || m.scratch == NULL || m.packed == NULL) {
            cdse_share(comm, CDSE_ENOMEM, NULL, 0);
            cdse_diag_set(diag, "out of memory");
            rc = CDSE_ENOMEM;
        } else {
            rc = run_master(&m, &meta, stats);
        }
        rc = master_close(&m, rc, stats, diag);
    } else if (cdse_share(comm, CDSE_OK, NULL, 0) == CDSE_OK) {
        worker_loop(job, opt, comm, chunk_max);
    }
    return cdse_share(comm, rc, NULL, 0);
}
