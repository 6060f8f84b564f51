/* The best K records by (key, index), per group, and the Pareto front: the one ranking used by
 * sweep, eval, top and verify. A smaller key is better; equal keys are ordered by the smaller
 * index, so the result does not depend on the order in which records arrive. An offer costs
 * O(log K); memory grows with the records kept, never up front from K. */
#ifndef CLUSTERDSE_TOPK_H
#define CLUSTERDSE_TOPK_H

#include <stdbool.h>
#include <stddef.h>

#include "clusterdse/sweep/report.h"

typedef struct cdse_topk_entry {
    double key;
    uint64_t index;
    size_t slot; /* into cdse_topk.rec */
} cdse_topk_entry;

/* Keeps the K best records offered. `heap` is a max-heap on (key, index): heap[0] is the worst
 * record kept, the one a better offer replaces. */
typedef struct cdse_topk {
    size_t k;      /* records kept at most (>= 1) */
    size_t n, cap; /* kept, allocated (cap doubles up to k as records arrive) */
    bool unique;   /* a record whose index is already kept is not kept twice */
    cdse_topk_entry *heap;
    cdse_record *rec;
    uint64_t *seen;  /* unique: the indices kept, open addressing (UINT64_MAX: empty) */
    size_t seen_cap; /* a power of two, at least 2 x cap */
} cdse_topk;

/* Whether (key_a, index_a) ranks before (key_b, index_b). */
bool cdse_topk_before(double key_a, uint64_t index_a, double key_b, uint64_t index_b);

/* Allocates nothing. `unique`: an index offered again (a chunk redone after a resume) is kept
 * once; a hash set of the indices kept answers in O(1), so offers stay O(log K). */
void cdse_topk_init(cdse_topk *t, size_t k, bool unique);
void cdse_topk_free(cdse_topk *t);
/* Forgets the records, keeps the memory. */
void cdse_topk_clear(cdse_topk *t);
/* Offers a record ranked by `key` (not NaN: callers decide what NaN means). Returns CDSE_OK or
 * CDSE_ENOMEM (the record is then not kept). */
int cdse_topk_offer(cdse_topk *t, const cdse_record *record, double key);
/* The records kept, best first: out[i] points into t (valid until the next offer or clear);
 * `out` holds t->n pointers, `keys` (may be NULL) t->n keys. Returns CDSE_OK or CDSE_ENOMEM. */
int cdse_topk_sorted(const cdse_topk *t, const cdse_record **out, double *keys);

/* ---- groups --------------------------------------------------------------------------------- */

/* The K best per group, a group being the record's values of the CDSE_GROUP_* fields in `mask`
 * (model, system, gpus, global_batch, precision). */
typedef struct cdse_topk_groups cdse_topk_groups;

cdse_topk_groups *cdse_topk_groups_create(int mask, size_t k, bool unique);
void cdse_topk_groups_free(cdse_topk_groups *g);
void cdse_topk_groups_clear(cdse_topk_groups *g);
int cdse_topk_groups_offer(cdse_topk_groups *g, const cdse_record *record, double key);
/* Every record kept: groups in ascending order of (model, system, gpus, global_batch,
 * precision) over the grouped fields, each group best first. Returns the count and sets *out
 * (malloc'd; NULL with count 0 when memory runs out). */
size_t cdse_topk_groups_rows(const cdse_topk_groups *g, cdse_record **out);
/* The Pareto front of key against GPU count, per model: with groups by (model, gpus), the best
 * of each group whose key is strictly below that of every smaller GPU count of the same model;
 * by model, then gpus, ascending. A point equal to a smaller GPU count's is dominated. Other
 * masks: the same, taking each group's best. *out as above. */
size_t cdse_topk_groups_pareto(const cdse_topk_groups *g, cdse_record **out);

/* ---- the front of time to train against cost to train (docs/sweep.md, /pareto_cost) ------- */

/* Of the records best[0..n) (each the best of its group), per model, those that no other of the
 * same model beats on both time_to_train_days and cost_to_train: a point is kept when its cost
 * is strictly below that of every point with a smaller time, or the same time and a smaller
 * (cost, index). Records without both (infeasible, or a time or cost of 0) are left out. Rows
 * by model ascending, then cost ascending (time descending). `out` holds n records; *n_out is
 * set. Returns CDSE_OK or CDSE_ENOMEM. */
int cdse_pareto_cost(const cdse_record *best, size_t n, cdse_record *out, size_t *n_out);
/* The same over the best record of each group of g. *out as for cdse_topk_groups_rows. */
size_t cdse_topk_groups_pareto_cost(const cdse_topk_groups *g, cdse_record **out);
/* Whether the front of the groups' bests is the front over every configuration of the job
 * (prices and a token budget; group_by holding the fields that change a configuration's cost
 * per day; a metric ordering a group as time to train does). Writes into note (size bytes)
 * the definition, or why the dataset stays empty. */
#define CDSE_PARETO_COST_NOTE_MAX 512
bool cdse_pareto_cost_note(const cdse_job *job, char *note, size_t size);

#endif
