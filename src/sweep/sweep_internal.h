/* What the files of the sweep share (sweep.c: the run and its workers; sweep_master.c: rank 0;
 * sweep_chunk.c: a chunk, pruning and the --dry-run sample; sweep_best.c: the best-so-far and
 * gaps). Internal to src/sweep; each file defines _POSIX_C_SOURCE 200809L before it (now_s). */
#ifndef CLUSTERDSE_SWEEP_INTERNAL_H
#define CLUSTERDSE_SWEEP_INTERNAL_H

#include "clusterdse/sweep/sweep.h"
#include "clusterdse/sweep/topk.h"

#include <stdint.h>
#include <time.h>

enum { TAG_WORK = 1, TAG_STOP = 2, TAG_RESULT = 3 };

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Hands out chunks of the gaps in ascending order, guided: remaining / (2 x ranks). */
typedef struct workgen {
    cdse_range *gaps;
    size_t n_gaps, cur;
    uint64_t pos;
    uint64_t remaining;
    int ranks;
    uint64_t chunk_min, chunk_max;
    uint64_t unit; /* chunks are whole multiples of it (pruning: sweep__prune_layout); 1 */
} workgen;

/* ---- one chunk's message -------------------------------------------------------------------- */

/* A worker's message: the header, n_blobs sizes (uint64), the compressed HDF5 chunks of the
 * chunk's rows (n_blobs x chunk_rows rows), the n_tail rows left over, packed, and n_cand
 * candidate records. Ranks run the same binary, so structs travel as bytes. */
typedef struct chunk_header {
    uint64_t begin, end;
    uint64_t n_rows; /* rows to store: n_blobs x chunk_rows + n_tail */
    uint64_t n_blobs, n_tail, n_cand;
    cdse_counts counts;
    int32_t interrupted;
    int32_t pad;
} chunk_header;

/* ---- a chunk (sweep_chunk.c) ----------------------------------------------------------------- */

#define PRUNE_LEVELS 3

typedef struct prune_box {
    double bound;
    uint64_t begin;
} prune_box;

/* Boxes of one size: the axes up to `axis` fixed. */
typedef struct box_level {
    int axis;
    uint64_t size;                     /* configurations per box */
    int flags;                         /* CDSE_FLOOR_*: what the bound leaves free */
    int n_kept, kept[CDSE_AXIS_COUNT]; /* the kept axes free in a box, enumerated for its bound */
    prune_box *boxes;
    size_t n, cur; /* boxes in the list (0: none), the one at its turn */
} box_level;

/* The unit's levels: level k + 1 lists the boxes of level k's box at its turn, once that box
 * has survived its test. */
typedef struct pruner {
    uint64_t unit;
    int n_levels;
    box_level level[PRUNE_LEVELS];
    sweep__best *best; /* the unit's own */
    bool in_box;       /* the last level's box at its turn passed its test, is being evaluated */
    uint64_t box_pos;  /* then: its next index */
} pruner;

/* A chunk being evaluated. */
typedef struct chunk {
    chunk_header head;
    unsigned char *rows; /* packed rows to store, chunk_max of them */
    unsigned char *msg;  /* the message being built */
    size_t msg_cap;
    unsigned char *scratch; /* for the shuffle */
    size_t row_size, chunk_rows;
    sweep__best *best; /* the chunk's own best, for its candidates */
    uint64_t next;     /* next index to evaluate (pruning: the unit in progress or next) */
    bool prune;
    pruner pr;
    cdse_study study; /* of the job being evaluated (set by sweep__chunk_eval) */
} chunk;

int sweep__grow(unsigned char **buf, size_t *cap, size_t bytes);
int sweep__chunk_init(chunk *c, const cdse_job *job, uint64_t chunk_max);
void sweep__chunk_free(chunk *c);
void sweep__chunk_begin(chunk *c, cdse_range range);
void sweep__chunk_eval(chunk *c, const cdse_job *job, uint64_t max);
bool sweep__chunk_complete(const chunk *c);
size_t sweep__chunk_finish(chunk *c);
uint64_t sweep__message_bound(uint64_t size);
uint64_t sweep__job_message_bound(const cdse_job *job, uint64_t chunk_max);

/* ---- rank 0 (sweep_master.c) ----------------------------------------------------------------- */

/* A chunk of work received but not yet committed: done once its `left` rows are written. */
typedef struct pending {
    cdse_done done;
    uint64_t left;
} pending;

/* Rows of the tail buffer that came from one chunk of work (NULL owner: rows reloaded on
 * resume, already committed). */
typedef struct tail_seg {
    pending *owner;
    size_t count;
} tail_seg;

typedef struct blob {
    pending *owner;
    size_t size;
    unsigned char *data;
} blob;

/* Rank 0's view of /results: rows [0, aligned) are whole HDF5 chunks; the tail buffer holds the
 * rows from `aligned` on, of which the first tail_written are on disk as a partial chunk (then
 * "pinned": compressed chunks wait until it is full, since a committed partial chunk is only ever
 * rewritten with more rows, never moved). */
typedef struct master {
    const cdse_job *job;
    const cdse_sweep_options *opt;
    MPI_Comm comm;
    int ranks;
    cdse_store *store;
    sweep__best *best;
    cdse_counts counts;     /* of the committed ranges */
    uint64_t feasible_seen; /* received so far, for the progress line */
    workgen gen;
    size_t row_size, chunk_rows;
    unsigned char *scratch, *packed; /* compression of whole chunks of the tail buffer */
    uint64_t aligned;
    unsigned char *tail;
    size_t tail_n, tail_cap, tail_written;
    tail_seg *seg;
    size_t n_seg, seg_cap;
    blob *queue;
    size_t q_head, q_n, q_cap;
    pending **open; /* received, not yet committed */
    size_t n_open, open_cap;
    /* Accounting. */
    uint64_t done_total;    /* configurations completed, all runs */
    uint64_t done_at_start; /* completed by earlier runs */
    uint64_t committed_now; /* completed and committed by this run */
    uint64_t rows_at_start;
    double store_seconds;
    double t_start, t_last_flush, t_last_progress;
    bool progress_shown;
    bool stopping;
    int error; /* first error (store), stops handing out work */
    /* Whether /pareto_cost is filled (cdse_pareto_cost_note). */
    bool pareto_cost;
    cdse_diag *diag;
} master;

int sweep__push_tail(master *m, pending *owner, const unsigned char *rows, size_t n);
int sweep__master_loop(master *m);
void sweep__master_progress(master *m, bool final);

#endif
