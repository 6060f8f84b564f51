/* The distributed sweep: dynamic chunks of the space over MPI ranks, merged by rank 0 into the
 * store. Knows no libconfig: it takes a validated job. */
#ifndef CLUSTERDSE_SWEEP_H
#define CLUSTERDSE_SWEEP_H

#include <mpi.h>
#include <signal.h>
#include <stdio.h>

#include "clusterdse/config/job.h"
#include "clusterdse/sweep/store.h"

/* Chunk sizes (configurations): guided, remaining / (2 x ranks), between these bounds. The
 * floor keeps messages large; the ceiling bounds the memory of one chunk's rows
 * (65536 x ~300 bytes = ~20 MB). */
#define CDSE_SWEEP_CHUNK_MIN 4096
#define CDSE_SWEEP_CHUNK_MAX 65536
/* A chunk size (--chunk) is at most this: a worker returns one chunk in one MPI message, whose
 * count is an int (2^31 bytes), and a chunk costs up to ~700 bytes per configuration (its rows,
 * compressed, and its best candidates): 2^20 configurations stay below 1 GB. cdse_sweep_run
 * rejects larger sizes with CDSE_EINVAL. */
#define CDSE_SWEEP_CHUNK_LIMIT 1048576

typedef struct cdse_sweep_options {
    const char *output; /* the store */
    bool resume;        /* continue an existing store (a missing one is created) */
    bool force;         /* overwrite an existing store */
    FILE *progress;     /* progress lines (rank 0); NULL for none */
    bool progress_tty;  /* one updating line (\r) instead of a line every progress_interval_s */
    double progress_interval_s;    /* 0: 5 s */
    double flush_interval_s;       /* commit at least this often; 0: 2 s */
    uint64_t chunk_min, chunk_max; /* 0: the defaults above */
    /* Set (by a signal handler) to stop handing out work: finish, commit, return CDSE_EINTR.
     * May be NULL. */
    volatile sig_atomic_t *stop;
} cdse_sweep_options;

typedef struct cdse_sweep_stats {
    uint64_t total;         /* configurations in the space */
    uint64_t done;          /* completed, including earlier runs of a resumed store */
    uint64_t evaluated_now; /* evaluated and committed in this run */
    uint64_t rows_written;  /* rows appended to /results in this run */
    double seconds;         /* wall time of the sweep loop */
    double store_seconds;   /* of which rank 0 spent in the store (append + commit) */
    cdse_counts counts;     /* of the whole store */
    bool already_complete;  /* --resume of a complete store: nothing to do */
    bool store_abandoned;   /* rank 0 left the store unclosed after a failed write
                               (cdse_store_abandon): the process must end with _exit */
} cdse_sweep_stats;

/* Runs the sweep of `job` (identical on every rank of `comm`) into opt->output. Collective: every
 * rank returns the same code: 0, CDSE_EINTR (interrupted, resumable), CDSE_EEXIST,
 * CDSE_EMISMATCH, CDSE_EINVAL/CDSE_EIO (bad or damaged store), ... with diag (and stats) filled
 * on rank 0. */
int cdse_sweep_run(const cdse_job *job, const cdse_sweep_options *opt, MPI_Comm comm,
                   cdse_sweep_stats *stats, cdse_diag *diag);

/* What a store of `job` holds besides its rows (store.h): the job's name, path and text, its
 * objective's attributes, the space's axes, the models, systems and stacks and the note of
 * /pareto_cost. `desc` points into `job`, which must outlive it. The sweep hands it to
 * cdse_store_create: the store reads no job (src/sweep/describe.c). */
void cdse_store_describe(const cdse_job *job, cdse_store_desc *desc);

/* What a sample of a job's sweep measured (cdse_sweep_sample). */
typedef struct cdse_sweep_sample {
    uint64_t done;      /* configurations of the runs sampled: evaluated + pruned */
    uint64_t runs;      /* runs of consecutive configurations sampled */
    uint64_t run_size;  /* configurations per run (a whole pruning unit when the job prunes) */
    cdse_counts counts; /* evaluated, feasible, pruned, per status */
    uint64_t rows;      /* rows the sweep would store */
    double seconds;     /* wall time of the sample */
} cdse_sweep_sample;

/* Measures how fast one rank sweeps `job` on this machine: runs of consecutive configurations
 * spread over the space (the whole space in order when it takes less than `seconds`), each
 * through the sweep's own chunk code: evaluation, counts, the best per group, pruning (a run is
 * a whole pruning unit, so what it skips is what the sweep skips), packing and compressing the
 * rows to store. Stops after the first run that ends past `seconds`. The rate is
 * done / seconds. Returns 0, or CDSE_ENOMEM. Not collective. */
int cdse_sweep_measure(const cdse_job *job, double seconds, cdse_sweep_sample *sample);

/* ---- internal, exposed for unit tests -------------------------------------------------------
 * The best-so-far: top-K per group (objective.group_by) and the best per (model, gpus) from
 * which the Pareto front is drawn. Only feasible records count; order is (cost, index), cost
 * being cdse_record_cost(objective.metric), so results do not depend on arrival order. */
typedef struct sweep__best sweep__best;

/* `unique`: a configuration offered again is kept once (rank 0's merge, where a chunk redone
 * after a resume offers its candidates again); a chunk's own best sees each index once. */
sweep__best *sweep__best_create(const cdse_objective *objective, bool unique);
void sweep__best_free(sweep__best *best);
void sweep__best_clear(sweep__best *best);
void sweep__best_offer(sweep__best *best, const cdse_record *record);
/* /top: groups in ascending order of (model, system, gpus, global_batch, precision) over the
 * grouped fields, each group's rows by (cost, index). Returns the count; *out is malloc'd. */
size_t sweep__best_top(const sweep__best *best, cdse_record **out);
/* /pareto: per model (ascending), by gpus ascending: the best configuration at each GPU count
 * whose cost is strictly below that of every smaller GPU count. */
size_t sweep__best_pareto(const sweep__best *best, cdse_record **out);
/* /pareto_cost: the front of time to train against cost to train over the best of each /top
 * group (cdse_pareto_cost), by model, then cost ascending. */
size_t sweep__best_pareto_cost(const sweep__best *best, cdse_record **out);
/* Every record held (top and per-(model, gpus) best), by index, without repeats. */
size_t sweep__best_candidates(const sweep__best *best, cdse_record **out);

/* What a configuration offered to `best` must beat: the largest of its top group's and its
 * (model, gpus) group's thresholds (cdse_topk_groups_threshold); HUGE_VAL while either holds
 * fewer records than it keeps. */
double sweep__best_threshold(const sweep__best *best, const cdse_record *record);

/* Pruning's partition of the space (docs/sweep.md, Pruning): configurations per unit, the last
 * axis a unit fixes and the last axis a box fixes. Depends on the space alone. */
void sweep__prune_layout(const cdse_space *space, uint64_t *unit, int *unit_axis, int *box_axis);

/* Index ranges still to do: the complement of `done` (any order, may overlap) in [0, size). */
size_t sweep__gaps(const cdse_range *done, size_t n_done, uint64_t size, cdse_range **gaps);

#endif
