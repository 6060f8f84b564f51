/* Rank 0 of the sweep: hands out work, merges the results into the store (whole HDF5 chunks in
 * an order that never moves committed rows), commits, and reports progress. */
#define _POSIX_C_SOURCE 200809L
#include "sweep_internal.h"

#include "clusterdse/sweep/fault.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rank 0 evaluates its own chunk in slices this large between polls: ~1 ms at 10^6 /s. */
#define SWEEP_SLICE 1024
/* Work assignments queued per worker, so that it never waits for rank 0 between chunks. */
#define SWEEP_QUEUE_DEPTH 2
/* Rows held by rank 0 before a commit is forced (~64 MB at ~300 bytes a row). */
#define SWEEP_PENDING_ROWS_MAX   200000
#define SWEEP_DEFAULT_FLUSH_S    2.0
#define SWEEP_DEFAULT_PROGRESS_S 5.0
#define SWEEP_TTY_PROGRESS_S     0.25

static bool workgen_next(workgen *w, cdse_range *next)
{
    while (w->cur < w->n_gaps && w->pos >= w->gaps[w->cur].end) {
        w->cur++;
        if (w->cur < w->n_gaps)
            w->pos = w->gaps[w->cur].begin;
    }
    if (w->cur >= w->n_gaps)
        return false;
    uint64_t size = w->remaining / (2 * (uint64_t)w->ranks);
    if (size < w->chunk_min)
        size = w->chunk_min;
    if (size > w->chunk_max)
        size = w->chunk_max;
    if (w->unit > 1) /* gaps begin and end on unit boundaries: every chunk did */
        size = (size / w->unit > 0 ? size / w->unit : 1) * w->unit;
    uint64_t end = w->gaps[w->cur].end - w->pos > size ? w->pos + size : w->gaps[w->cur].end;
    *next = (cdse_range){w->pos, end};
    w->remaining -= end - w->pos;
    w->pos = end;
    return true;
}

/* Credits rows [from, to) of the tail buffer as written to their chunks of work. */
static void tail_credit(master *m, size_t from, size_t to)
{
    size_t pos = 0;
    for (size_t i = 0; i < m->n_seg && pos < to; i++) {
        size_t b = pos, e = pos + m->seg[i].count;
        size_t lo = b > from ? b : from, hi = e < to ? e : to;
        if (hi > lo && m->seg[i].owner)
            m->seg[i].owner->left -= hi - lo;
        pos = e;
    }
}

/* Drops the first `n` rows of the tail buffer. */
static void tail_pop(master *m, size_t n)
{
    memmove(m->tail, m->tail + n * m->row_size, (m->tail_n - n) * m->row_size);
    m->tail_n -= n;
    size_t i = 0;
    while (n > 0 && i < m->n_seg) {
        size_t take = m->seg[i].count < n ? m->seg[i].count : n;
        m->seg[i].count -= take;
        n -= take;
        if (m->seg[i].count == 0)
            i++;
    }
    memmove(m->seg, m->seg + i, (m->n_seg - i) * sizeof *m->seg);
    m->n_seg -= i;
}

static int write_tail_chunk(master *m)
{
    size_t size = cdse_store_compress_chunk(m->tail, m->scratch, m->packed);
    if (size == 0) {
        cdse_diag_set(m->diag, "compressing a chunk failed");
        return CDSE_ENOMEM;
    }
    int rc = cdse_store_write_chunk(m->store, m->aligned, m->packed, size, m->diag);
    if (rc != 0)
        return rc;
    tail_credit(m, m->tail_written, m->chunk_rows);
    tail_pop(m, m->chunk_rows);
    m->aligned += m->chunk_rows;
    m->tail_written = 0;
    return 0;
}

/* Writes what can be written now: whole chunks, in an order that never moves committed rows. */
static int master_drain(master *m)
{
    for (;;) {
        int rc = 0;
        if (m->tail_written > 0) { /* pinned partial chunk: fill it first */
            if (m->tail_n < m->chunk_rows)
                return 0;
            rc = write_tail_chunk(m);
        } else if (m->q_n > 0) {
            blob *b = &m->queue[m->q_head];
            rc = cdse_store_write_chunk(m->store, m->aligned, b->data, b->size, m->diag);
            if (rc == 0) {
                b->owner->left -= m->chunk_rows;
                m->aligned += m->chunk_rows;
                free(b->data);
                m->q_head++;
                m->q_n--;
                if (m->q_n == 0)
                    m->q_head = 0;
            }
        } else if (m->tail_n >= m->chunk_rows) {
            rc = write_tail_chunk(m);
        } else {
            return 0;
        }
        if (rc != 0)
            return rc;
    }
}

/* While a committed partial chunk is pinned, compressed chunks wait; a commit must leave
 * nothing waiting, so it unpacks them into the tail buffer (rarely: only the chunks that arrive
 * between a commit and the moment the partial chunk fills up). */
static int unpack_waiting(master *m)
{
    int rc = 0;
    while (rc == 0 && m->tail_written > 0 && m->q_n > 0) {
        blob *b = &m->queue[m->q_head];
        size_t bytes = m->chunk_rows * m->row_size;
        unsigned char *rows = malloc(bytes), *scratch = malloc(bytes);
        if (rows == NULL || scratch == NULL ||
            cdse_store_decompress_chunk(b->data, b->size, scratch, rows) != 0 ||
            sweep__push_tail(m, b->owner, rows, m->chunk_rows) != 0) {
            cdse_diag_set(m->diag, "out of memory or a damaged chunk message");
            rc = CDSE_ENOMEM;
        }
        free(rows);
        free(scratch);
        free(b->data);
        m->q_head++;
        m->q_n--;
        if (rc == 0)
            rc = master_drain(m);
    }
    return rc;
}

static int master_commit(master *m)
{
    double t0 = now_s();
    int rc = master_drain(m);
    if (rc == 0)
        rc = unpack_waiting(m);
    if (rc == 0 && m->tail_n > m->tail_written) { /* the partial chunk, rewritten whole */
        rc = cdse_store_write_rows(m->store, m->aligned, m->tail, m->tail_n, m->diag);
        if (rc == 0) {
            tail_credit(m, m->tail_written, m->tail_n);
            m->tail_written = m->tail_n;
        }
    }
    cdse_done *done = malloc((m->n_open ? m->n_open : 1) * sizeof *done);
    pending **finished = malloc((m->n_open ? m->n_open : 1) * sizeof *finished);
    size_t n_done = 0, kept = 0;
    uint64_t configs = 0;
    for (size_t i = 0; done != NULL && finished != NULL && i < m->n_open; i++) {
        if (m->open[i]->left == 0) {
            finished[n_done] = m->open[i];
            done[n_done++] = m->open[i]->done;
            configs += m->open[i]->done.end - m->open[i]->done.begin;
        } else {
            m->open[kept++] = m->open[i];
        }
    }
    if (done != NULL && finished != NULL)
        m->n_open = kept;
    cdse_record *top = NULL, *pareto = NULL, *front = NULL;
    size_t n_top = sweep__best_top(m->best, &top);
    size_t n_pareto = sweep__best_pareto(m->best, &pareto);
    size_t n_front = m->pareto_cost ? sweep__best_pareto_cost(m->best, &front) : 0;
    if (rc == 0 && (top == NULL || pareto == NULL || done == NULL || finished == NULL ||
                    (m->pareto_cost && front == NULL))) {
        cdse_diag_set(m->diag, "out of memory");
        rc = CDSE_ENOMEM;
    }
    cdse_counts counts = m->counts;
    for (size_t i = 0; i < n_done; i++) {
        for (int st = 0; st < CDSE_ST_COUNT; st++) {
            counts.status[st] += done[i].status[st];
            counts.evaluated += done[i].status[st];
        }
        counts.pruned += done[i].pruned;
    }
    counts.feasible = counts.status[CDSE_ST_OK];
    if (rc == 0)
        rc = cdse_store_commit(m->store, done, n_done, &counts,
                               &(cdse_best_rows){top, n_top, pareto, n_pareto, front, n_front},
                               m->diag);
    if (rc == 0)
        m->counts = counts;
    if (rc == 0)
        m->committed_now += configs;
    /* Every row of the tail buffer is on disk now: its segments need no owner any more, and the
     * finished chunks of work are referenced by nothing. */
    for (size_t i = 0; i < m->n_seg; i++)
        m->seg[i].owner = NULL;
    for (size_t i = 0; finished != NULL && i < n_done; i++)
        free(finished[i]);
    free(finished);
    free(top);
    free(pareto);
    free(front);
    free(done);
    m->store_seconds += now_s() - t0;
    m->t_last_flush = now_s();
    return rc;
}

static int push_open(master *m, pending *p)
{
    if (m->n_open == m->open_cap) {
        size_t cap = m->open_cap ? 2 * m->open_cap : 64;
        pending **grown = realloc(m->open, cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        m->open = grown;
        m->open_cap = cap;
    }
    m->open[m->n_open++] = p;
    return 0;
}

static int push_blob(master *m, pending *owner, const unsigned char *data, size_t size)
{
    if (m->q_head + m->q_n == m->q_cap) {
        if (m->q_head > 0) {
            memmove(m->queue, m->queue + m->q_head, m->q_n * sizeof *m->queue);
            m->q_head = 0;
        } else {
            size_t cap = m->q_cap ? 2 * m->q_cap : 64;
            blob *grown = realloc(m->queue, cap * sizeof *grown);
            if (grown == NULL)
                return -1;
            m->queue = grown;
            m->q_cap = cap;
        }
    }
    blob *b = &m->queue[m->q_head + m->q_n];
    b->data = malloc(size);
    if (b->data == NULL)
        return -1;
    memcpy(b->data, data, size);
    b->size = size;
    b->owner = owner;
    m->q_n++;
    return 0;
}

int sweep__push_tail(master *m, pending *owner, const unsigned char *rows, size_t n)
{
    if (n == 0)
        return 0;
    size_t bytes = (m->tail_n + n) * m->row_size, cap_bytes = m->tail_cap * m->row_size;
    if (sweep__grow(&m->tail, &cap_bytes, bytes) < 0)
        return -1;
    m->tail_cap = cap_bytes / m->row_size;
    memcpy(m->tail + m->tail_n * m->row_size, rows, n * m->row_size);
    m->tail_n += n;
    if (m->n_seg == m->seg_cap) {
        size_t cap = m->seg_cap ? 2 * m->seg_cap : 64;
        tail_seg *grown = realloc(m->seg, cap * sizeof *grown);
        if (grown == NULL)
            return -1;
        m->seg = grown;
        m->seg_cap = cap;
    }
    m->seg[m->n_seg++] = (tail_seg){owner, n};
    return 0;
}

static int master_merge(master *m, const unsigned char *msg)
{
    chunk_header h;
    memcpy(&h, msg, sizeof h);
    pending *p = malloc(sizeof *p);
    if (p == NULL || push_open(m, p) < 0) {
        free(p);
        cdse_diag_set(m->diag, "out of memory");
        return CDSE_ENOMEM;
    }
    memset(&p->done, 0, sizeof p->done);
    p->done.begin = h.begin;
    p->done.end = h.end;
    memcpy(p->done.status, h.counts.status, sizeof p->done.status);
    p->done.pruned = h.counts.pruned;
    p->left = h.n_rows;
    const unsigned char *sizes = msg + sizeof h;
    const unsigned char *data = sizes + h.n_blobs * sizeof(uint64_t);
    int rc = 0;
    for (uint64_t b = 0; b < h.n_blobs && rc == 0; b++) {
        uint64_t size;
        memcpy(&size, sizes + b * sizeof size, sizeof size);
        rc = push_blob(m, p, data, (size_t)size);
        data += size;
    }
    if (rc == 0)
        rc = sweep__push_tail(m, p, data, (size_t)h.n_tail);
    if (rc != 0) {
        cdse_diag_set(m->diag, "out of memory");
        return CDSE_ENOMEM;
    }
    const unsigned char *cand = data + h.n_tail * m->row_size;
    for (uint64_t i = 0; i < h.n_cand; i++) {
        cdse_record r;
        memcpy(&r, cand + i * sizeof r, sizeof r);
        sweep__best_offer(m->best, &r);
    }
    m->feasible_seen += h.counts.feasible;
    m->done_total += h.end - h.begin;
    if (h.interrupted)
        m->stopping = true;
    double t0 = now_s();
    rc = master_drain(m);
    m->store_seconds += now_s() - t0;
    return rc;
}

static void format_duration(double s, char *buf, size_t size)
{
    if (!isfinite(s) || s < 0) {
        snprintf(buf, size, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
    else
        snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

static void format_rate(double r, char *buf, size_t size)
{
    if (r >= 1e6)
        snprintf(buf, size, "%.2fM", r / 1e6);
    else if (r >= 1e3)
        snprintf(buf, size, "%.1fk", r / 1e3);
    else
        snprintf(buf, size, "%.0f", r);
}

void sweep__master_progress(master *m, bool final)
{
    FILE *out = m->opt->progress;
    if (out == NULL)
        return;
    double t = now_s();
    double interval = m->opt->progress_tty              ? SWEEP_TTY_PROGRESS_S
                      : m->opt->progress_interval_s > 0 ? m->opt->progress_interval_s
                                                        : SWEEP_DEFAULT_PROGRESS_S;
    if (!final && t - m->t_last_progress < interval)
        return;
    if (final && !m->progress_shown && !m->opt->progress_tty)
        return; /* a short run: the summary line says it all */
    m->t_last_progress = t;
    uint64_t total = m->job->space.size;
    double elapsed = t - m->t_start;
    double rate = elapsed > 0 ? (double)(m->done_total - m->done_at_start) / elapsed : 0;
    char eta[32], rate_s[32];
    format_duration(rate > 0 ? (double)(total - m->done_total) / rate : NAN, eta, sizeof eta);
    format_rate(rate, rate_s, sizeof rate_s);
    fprintf(out, "%ssweep: %llu/%llu (%.1f%%)  %s configs/s  ETA %s  feasible %llu%s",
            m->opt->progress_tty ? "\r" : "", (unsigned long long)m->done_total,
            (unsigned long long)total,
            total ? 100.0 * (double)m->done_total / (double)total : 100.0, rate_s, eta,
            (unsigned long long)m->feasible_seen,
            m->opt->progress_tty ? (final ? "\n" : "   ") : "\n");
    fflush(out);
    m->progress_shown = true;
}

static void send_work(master *m, int worker, int *outstanding, int *active)
{
    cdse_range r;
    if (!m->stopping && m->error == 0 && workgen_next(&m->gen, &r)) {
        uint64_t msg[2] = {r.begin, r.end};
        MPI_Send(msg, 2, MPI_UINT64_T, worker, TAG_WORK, m->comm);
        outstanding[worker]++;
    } else if (outstanding[worker] == 0) {
        MPI_Send(NULL, 0, MPI_UINT64_T, worker, TAG_STOP, m->comm);
        (*active)--;
    }
}

/* Receives one result (probed as `status`) into buf, merges it and refills the worker's queue.
 * buf holds sweep__message_bound(chunk_max) bytes, allocated before any work went out: no result
 * can be larger, so none is ever left unreceived (its worker would wait forever). */
static void master_receive(master *m, MPI_Status *status, unsigned char *buf, int *outstanding,
                           int *active)
{
    int bytes = 0;
    MPI_Get_count(status, MPI_BYTE, &bytes);
    int w = status->MPI_SOURCE;
    MPI_Recv(buf, bytes, MPI_BYTE, w, TAG_RESULT, m->comm, MPI_STATUS_IGNORE);
    outstanding[w]--;
    if (m->error == 0) {
        int rc = master_merge(m, buf);
        if (rc != 0)
            m->error = rc;
    }
    send_work(m, w, outstanding, active);
}

/* Every worker waits for work in MPI_Recv: when rank 0 cannot start handing it out, each is told
 * to stop, so that all ranks return the error together instead of hanging. */
static void stop_workers(master *m)
{
    for (int w = 1; w < m->ranks; w++)
        MPI_Send(NULL, 0, MPI_UINT64_T, w, TAG_STOP, m->comm);
}

int sweep__master_loop(master *m)
{
    int *outstanding =
        cdse_fault("master_loop") ? NULL : calloc((size_t)m->ranks, sizeof *outstanding);
    unsigned char *buf = cdse_fault("master_recv")
                             ? NULL
                             : malloc(sweep__job_message_bound(m->job, m->gen.chunk_max));
    chunk own;
    if (outstanding == NULL || buf == NULL ||
        sweep__chunk_init(&own, m->job, m->gen.chunk_max) < 0) {
        if (outstanding != NULL && buf != NULL)
            sweep__chunk_free(&own);
        free(outstanding);
        free(buf);
        stop_workers(m);
        cdse_diag_set(m->diag,
                      "out of memory before the sweep could start (%d ranks, chunks "
                      "of up to %llu configurations)",
                      m->ranks, (unsigned long long)m->gen.chunk_max);
        return CDSE_ENOMEM;
    }
    int active = m->ranks - 1;
    for (int w = 1; w < m->ranks; w++)
        for (int q = 0; q < SWEEP_QUEUE_DEPTH; q++)
            if (q == 0 || outstanding[w] > 0)
                send_work(m, w, outstanding, &active);
    bool own_active = false;
    double flush_s =
        m->opt->flush_interval_s > 0 ? m->opt->flush_interval_s : SWEEP_DEFAULT_FLUSH_S;
    for (;;) {
        if (m->opt->stop != NULL && *m->opt->stop)
            m->stopping = true;
        int flag = 1;
        MPI_Status status;
        while (flag) {
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, m->comm, &flag, &status);
            if (flag)
                master_receive(m, &status, buf, outstanding, &active);
        }
        if (own_active && (m->stopping || m->error)) {
            own_active = false; /* abandoned: not marked done, redone on resume */
        } else if (own_active) {
            sweep__chunk_eval(&own, m->job, SWEEP_SLICE);
            if (sweep__chunk_complete(&own)) {
                own_active = false;
                if (sweep__chunk_finish(&own) == 0)
                    m->error = CDSE_ENOMEM;
                else if (m->error == 0) {
                    int rc = master_merge(m, own.msg);
                    if (rc != 0)
                        m->error = rc;
                }
            }
        } else {
            cdse_range r;
            if (!m->stopping && m->error == 0 && workgen_next(&m->gen, &r)) {
                sweep__chunk_begin(&own, r);
                own_active = true;
            } else if (active == 0) {
                break;
            } else {
                MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, m->comm, &status);
                master_receive(m, &status, buf, outstanding, &active);
            }
        }
        if (m->error == 0 && (now_s() - m->t_last_flush >= flush_s ||
                              m->q_n * m->chunk_rows + m->tail_n >= SWEEP_PENDING_ROWS_MAX)) {
            int rc = master_commit(m);
            if (rc != 0)
                m->error = rc;
        }
        sweep__master_progress(m, false);
    }
    free(buf);
    free(outstanding);
    sweep__chunk_free(&own);
    if (m->error == 0)
        m->error = master_commit(m);
    return m->error;
}
