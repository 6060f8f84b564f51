/* The distributed sweep. Rank 0 hands out index chunks dynamically (guided sizes with a floor)
 * and evaluates small slices of its own chunk between polls; workers evaluate whole chunks and
 * return one message per chunk: counts by status, the packed rows to store and their best
 * candidates. Rank 0 merges, appends to the store and commits (rows + done ranges + counts +
 * /top + /pareto in one flush) every flush interval. */
#define _POSIX_C_SOURCE 200809L
#include "clusterdse/sweep/sweep.h"

#include "clusterdse/sweep/fault.h"
#include "clusterdse/sweep/topk.h"

#include "clusterdse/model/bound.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { TAG_WORK = 1, TAG_STOP = 2, TAG_RESULT = 3 };

/* Rank 0 evaluates its own chunk in slices this large between polls: ~1 ms at 10^6 /s. */
#define SWEEP_SLICE 1024
/* Work assignments queued per worker, so that it never waits for rank 0 between chunks. */
#define SWEEP_QUEUE_DEPTH 2
/* Rows held by rank 0 before a commit is forced (~64 MB at ~300 bytes a row). */
#define SWEEP_PENDING_ROWS_MAX   200000
#define SWEEP_DEFAULT_FLUSH_S    2.0
#define SWEEP_DEFAULT_PROGRESS_S 5.0
#define SWEEP_TTY_PROGRESS_S     0.25

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- best-so-far ----------------------------------------------------------------------------- */

struct sweep__best {
    int metric;
    cdse_topk_groups *top;    /* objective.top per objective.group_by */
    cdse_topk_groups *pareto; /* the best per (model, gpus) */
};

sweep__best *sweep__best_create(const cdse_objective *objective, bool unique)
{
    sweep__best *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->metric = objective->metric;
    b->top = cdse_topk_groups_create(objective->group_by,
                                     objective->top > 0 ? (size_t)objective->top : 1, unique);
    b->pareto = cdse_topk_groups_create(CDSE_GROUP_MODEL | CDSE_GROUP_GPUS, 1, unique);
    if (b->top == NULL || b->pareto == NULL) {
        sweep__best_free(b);
        return NULL;
    }
    return b;
}

void sweep__best_free(sweep__best *best)
{
    if (best == NULL)
        return;
    cdse_topk_groups_free(best->top);
    cdse_topk_groups_free(best->pareto);
    free(best);
}

void sweep__best_clear(sweep__best *best)
{
    cdse_topk_groups_clear(best->top);
    cdse_topk_groups_clear(best->pareto);
}

void sweep__best_offer(sweep__best *best, const cdse_record *record)
{
    if (record->result.status != CDSE_ST_OK)
        return;
    double cost = cdse_record_cost(record, best->metric);
    if (isnan(cost))
        return;
    cdse_topk_groups_offer(best->top, record, cost);
    cdse_topk_groups_offer(best->pareto, record, cost);
}

double sweep__best_threshold(const sweep__best *best, const cdse_record *record)
{
    double top = cdse_topk_groups_threshold(best->top, record);
    double pareto = cdse_topk_groups_threshold(best->pareto, record);
    return top > pareto ? top : pareto;
}

size_t sweep__best_top(const sweep__best *best, cdse_record **out)
{
    return cdse_topk_groups_rows(best->top, out);
}

size_t sweep__best_pareto(const sweep__best *best, cdse_record **out)
{
    return cdse_topk_groups_pareto(best->pareto, out);
}

size_t sweep__best_pareto_cost(const sweep__best *best, cdse_record **out)
{
    return cdse_topk_groups_pareto_cost(best->top, out);
}

static int index_compare(const void *a, const void *b)
{
    const cdse_record *ra = a, *rb = b;
    return ra->index < rb->index ? -1 : ra->index > rb->index;
}

size_t sweep__best_candidates(const sweep__best *best, cdse_record **out)
{
    cdse_record *top = NULL, *per_gpus = NULL;
    size_t n_top = cdse_topk_groups_rows(best->top, &top);
    size_t n_per_gpus = cdse_topk_groups_rows(best->pareto, &per_gpus);
    *out = top && per_gpus ? malloc((n_top + n_per_gpus + 1) * sizeof **out) : NULL;
    if (*out == NULL) {
        free(top);
        free(per_gpus);
        return 0;
    }
    memcpy(*out, top, n_top * sizeof **out);
    memcpy(*out + n_top, per_gpus, n_per_gpus * sizeof **out);
    free(top);
    free(per_gpus);
    size_t n = n_top + n_per_gpus;
    qsort(*out, n, sizeof **out, index_compare);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || (*out)[m - 1].index != (*out)[i].index)
            (*out)[m++] = (*out)[i];
    return m;
}

/* ---- ranges ------------------------------------------------------------------------------- */

static int range_compare(const void *a, const void *b)
{
    const cdse_range *ra = a, *rb = b;
    return ra->begin < rb->begin ? -1 : ra->begin > rb->begin;
}

size_t sweep__gaps(const cdse_range *done, size_t n_done, uint64_t size, cdse_range **gaps)
{
    cdse_range *sorted = malloc((n_done ? n_done : 1) * sizeof *sorted);
    *gaps = malloc((n_done + 1) * sizeof **gaps);
    if (sorted == NULL || *gaps == NULL) {
        free(sorted);
        free(*gaps);
        *gaps = NULL;
        return 0;
    }
    if (n_done > 0) {
        memcpy(sorted, done, n_done * sizeof *sorted);
        qsort(sorted, n_done, sizeof *sorted, range_compare);
    }
    size_t n = 0;
    uint64_t pos = 0;
    for (size_t i = 0; i < n_done && pos < size; i++) {
        if (sorted[i].begin > pos)
            (*gaps)[n++] = (cdse_range){pos, sorted[i].begin < size ? sorted[i].begin : size};
        if (sorted[i].end > pos)
            pos = sorted[i].end;
    }
    if (pos < size)
        (*gaps)[n++] = (cdse_range){pos, size};
    free(sorted);
    return n;
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

static bool workgen_next(workgen *w, cdse_range *chunk)
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
    *chunk = (cdse_range){w->pos, end};
    w->remaining -= end - w->pos;
    w->pos = end;
    return true;
}

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

/* ---- pruning (docs/sweep.md, Pruning) -------------------------------------------------------
 * A unit is a contiguous index range with every axis up to gpus fixed, and further axes while it
 * would hold more than PRUNE_UNIT_LIMIT configurations (or more coarse boxes than
 * PRUNE_LIST_MAX); chunks are whole units. A unit is split into boxes on up to three levels:
 * coarse boxes fix the axes up to global_batch (or one further than the unit), each refined, when
 * it survives its test, into boxes that fix the axes the bound keeps but for zero and offload,
 * then into boxes that fix all of them (while a box keeps PRUNE_BOX_MIN configurations or more).
 * A box's bound is the least lower bound of the metric over its values of the kept axes; the
 * boxes of a level are taken in ascending order of (bound, first index), and one whose bound
 * exceeds the unit's own threshold at its turn is skipped whole. The partition depends on the
 * space alone, the threshold on the unit's own evaluations alone, so what is pruned does not
 * depend on ranks or resumes. */

/* Configurations of a unit at most (unless a single configuration's prefix is longer). */
#define PRUNE_UNIT_LIMIT ((uint64_t)1 << 24)
/* Boxes in one level's list at most (16 bytes each). */
#define PRUNE_LIST_MAX ((uint64_t)1 << 20)
/* Configurations of a refined box at least: smaller boxes have tighter bounds (they fix more
 * axes) but cost more bounds per configuration (a bound costs about one evaluation per
 * combination of the kept axes the box leaves free). */
#define PRUNE_BOX_MIN 16
#define PRUNE_LEVELS  3

static int coarse_axis(int unit_axis)
{
    int box = unit_axis + 1 > CDSE_AXIS_GLOBAL_BATCH ? unit_axis + 1 : CDSE_AXIS_GLOBAL_BATCH;
    return box < CDSE_AXIS_COUNT ? box : CDSE_AXIS_COUNT - 1;
}

void sweep__prune_layout(const cdse_space *space, uint64_t *unit, int *unit_axis, int *box_axis)
{
    int a = CDSE_AXIS_GPUS;
    while (a + 1 < CDSE_AXIS_COUNT &&
           (space->stride[a] > PRUNE_UNIT_LIMIT ||
            space->stride[a] / space->stride[coarse_axis(a)] > PRUNE_LIST_MAX))
        a++;
    *unit = space->stride[a];
    *unit_axis = a;
    *box_axis = coarse_axis(a);
}

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

/* What a box fixing the axes up to `axis` leaves free of the axes CDSE_FLOOR_* name. */
static int level_flags(const cdse_space *space, int axis)
{
    int flags = 0;
    if (axis < CDSE_AXIS_RECOMPUTE && space->n[CDSE_AXIS_RECOMPUTE] > 1)
        flags |= CDSE_FLOOR_ANY_RECOMPUTE;
    if ((axis < CDSE_AXIS_ZERO && space->n[CDSE_AXIS_ZERO] > 1) ||
        (axis < CDSE_AXIS_OFFLOAD && space->n[CDSE_AXIS_OFFLOAD] > 1))
        flags |= CDSE_FLOOR_ANY_STATE;
    return flags;
}

/* The finest level after `from` that fixes every axis kept under `flags`: its last such axis that
 * varies, while boxes keep PRUNE_BOX_MIN configurations and lists PRUNE_LIST_MAX boxes. */
static int refined_axis(const cdse_space *space, int from, int flags)
{
    int axis = from;
    for (int a = from + 1; a < CDSE_AXIS_COUNT; a++)
        if (space->n[a] > 1 && cdse_bound_axis_kept(a, flags) &&
            space->stride[a] >= PRUNE_BOX_MIN &&
            space->stride[from] / space->stride[a] <= PRUNE_LIST_MAX)
            axis = a;
    return axis;
}

static int level_init(box_level *l, const cdse_space *space, int axis, uint64_t boxes)
{
    memset(l, 0, sizeof *l);
    l->axis = axis;
    l->size = space->stride[axis];
    l->flags = level_flags(space, axis);
    for (int a = axis + 1; a < CDSE_AXIS_COUNT; a++)
        if (space->n[a] > 1 && cdse_bound_axis_kept(a, l->flags))
            l->kept[l->n_kept++] = a;
    l->boxes = malloc((size_t)boxes * sizeof *l->boxes);
    return l->boxes != NULL ? 0 : -1;
}

static int pruner_init(pruner *p, const cdse_job *job)
{
    memset(p, 0, sizeof *p);
    const cdse_space *space = &job->space;
    int unit_axis, axis[PRUNE_LEVELS];
    sweep__prune_layout(space, &p->unit, &unit_axis, &axis[0]);
    axis[1] = refined_axis(space, axis[0], CDSE_FLOOR_ANY_STATE);
    axis[2] = refined_axis(space, axis[1], 0);
    p->best = sweep__best_create(&job->objective, false);
    int rc = p->best != NULL ? 0 : -1;
    uint64_t parent = p->unit;
    for (int k = 0; k < PRUNE_LEVELS && rc == 0; k++) {
        if (k > 0 && axis[k] == axis[k - 1])
            continue;
        rc = level_init(&p->level[p->n_levels], space, axis[k], parent / space->stride[axis[k]]);
        parent = space->stride[axis[k]];
        p->n_levels++;
    }
    return rc;
}

static void pruner_free(pruner *p)
{
    sweep__best_free(p->best);
    for (int k = 0; k < p->n_levels; k++)
        free(p->level[k].boxes);
}

/* The least bound over the box's combinations of the kept axes (odometer over their digits). */
static double box_bound(const box_level *l, const cdse_job *job, uint64_t begin)
{
    const cdse_space *space = &job->space;
    int digit[CDSE_AXIS_COUNT] = {0};
    double least = HUGE_VAL;
    for (;;) {
        uint64_t index = begin;
        for (int k = 0; k < l->n_kept; k++)
            index += (uint64_t)digit[k] * space->stride[l->kept[k]];
        cdse_record rec;
        double bound = cdse_record_bound(job, index, l->flags, &rec);
        if (bound < least)
            least = bound;
        int k = 0;
        while (k < l->n_kept && ++digit[k] == space->n[l->kept[k]])
            digit[k++] = 0;
        if (k == l->n_kept)
            return least;
    }
}

/* What a configuration of a box of `l` must beat: the largest threshold of the groups the box
 * touches (the groups differ inside a box by precision only, when it is free there). */
static double box_threshold(const pruner *p, const box_level *l, const cdse_job *job,
                            uint64_t begin)
{
    cdse_record rep;
    cdse_record_config(job, begin, &rep);
    int n = l->axis < CDSE_AXIS_PRECISION ? job->space.n[CDSE_AXIS_PRECISION] : 1;
    double most = -HUGE_VAL;
    for (int d = 0; d < n; d++) {
        if (n > 1)
            rep.strategy.precision = (int)job->space.value[CDSE_AXIS_PRECISION][d];
        double t = sweep__best_threshold(p->best, &rep);
        if (t > most)
            most = t;
    }
    return most;
}

/* Whether box `b` of level `l` is skipped at its turn: nothing in it is feasible (its bound is
 * HUGE_VAL), or its bound is above the threshold. */
static bool skipped(const pruner *p, const box_level *l, const cdse_job *job, const prune_box *b)
{
    return b->bound == HUGE_VAL || b->bound > box_threshold(p, l, job, b->begin);
}

static int box_compare(const void *a, const void *b)
{
    const prune_box *x = a, *y = b;
    if (x->bound != y->bound)
        return x->bound < y->bound ? -1 : 1;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Fills `l` with the boxes of [begin, begin + n x l->size), sorted by (bound, first index). */
static void level_fill(box_level *l, const cdse_job *job, uint64_t begin, size_t n)
{
    l->n = n;
    l->cur = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = begin + i * l->size;
        l->boxes[i] = (prune_box){box_bound(l, job, b), b};
    }
    qsort(l->boxes, n, sizeof *l->boxes, box_compare);
}

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
} chunk;

static int grow(unsigned char **buf, size_t *cap, size_t bytes)
{
    if (bytes <= *cap)
        return 0;
    unsigned char *grown = realloc(*buf, bytes);
    if (grown == NULL)
        return -1;
    *buf = grown;
    *cap = bytes;
    return 0;
}

static int chunk_init(chunk *c, const cdse_job *job, uint64_t chunk_max)
{
    memset(c, 0, sizeof *c);
    c->row_size = cdse_store_row_size();
    c->chunk_rows = cdse_store_chunk_rows();
    c->best = sweep__best_create(&job->objective, false);
    size_t rows = job->objective.store == CDSE_STORE_BEST ? 1 : (size_t)chunk_max;
    c->rows = malloc(rows * c->row_size);
    c->scratch = malloc(c->chunk_rows * c->row_size);
    if (c->best == NULL || c->rows == NULL || c->scratch == NULL)
        return -1;
    c->prune = job->objective.prune;
    if (c->prune && pruner_init(&c->pr, job) < 0)
        return -1;
    return 0;
}

static void chunk_free(chunk *c)
{
    free(c->rows);
    free(c->msg);
    free(c->scratch);
    sweep__best_free(c->best);
    if (c->prune)
        pruner_free(&c->pr);
}

static void chunk_begin(chunk *c, cdse_range range)
{
    memset(&c->head, 0, sizeof c->head);
    c->head.begin = range.begin;
    c->head.end = range.end;
    c->next = range.begin;
    for (int k = 0; k < PRUNE_LEVELS; k++)
        c->pr.level[k].n = 0;
    sweep__best_clear(c->best);
}

/* One configuration into `rec`, counted by status and offered to the chunk's best (and the
 * unit's, when pruning). Returns its status. */
static inline int eval_one(chunk *c, const cdse_job *job, uint64_t i, sweep__best *unit,
                           cdse_record *rec)
{
    chunk_header *h = &c->head;
    cdse_record_eval(job, i, rec);
    int st = rec->result.status;
    h->counts.evaluated++;
    if (st >= 0 && st < CDSE_ST_COUNT)
        h->counts.status[st]++;
    if (st == CDSE_ST_OK) {
        h->counts.feasible++;
        sweep__best_offer(c->best, rec);
        if (unit != NULL)
            sweep__best_offer(unit, rec);
    }
    return st;
}

/* The box at its turn at level k is done: the next one, and when the level's list is done, its
 * parent box (at level 0: the unit). */
static void next_box(chunk *c, int k)
{
    pruner *p = &c->pr;
    for (;;) {
        box_level *l = &p->level[k];
        if (++l->cur < l->n)
            return;
        l->n = 0;
        if (k == 0) {
            c->next += p->unit;
            return;
        }
        k--;
    }
}

/* The last level's box at its turn: skipped, or evaluated (up to `budget` configurations).
 * Returns the budget spent. */
static uint64_t last_step(chunk *c, const cdse_job *job, uint64_t budget)
{
    pruner *p = &c->pr;
    int k = p->n_levels - 1;
    box_level *l = &p->level[k];
    prune_box *b = &l->boxes[l->cur];
    uint64_t end = b->begin + l->size, spent = 1;
    if (!p->in_box && skipped(p, l, job, b)) {
        c->head.counts.pruned += l->size;
    } else {
        if (!p->in_box) {
            p->in_box = true;
            p->box_pos = b->begin;
        }
        uint64_t stop = end - p->box_pos > budget ? p->box_pos + budget : end;
        cdse_record rec;
        for (uint64_t i = p->box_pos; i < stop; i++)
            eval_one(c, job, i, p->best, &rec);
        spent = stop - p->box_pos;
        p->box_pos = stop;
        if (p->box_pos < end)
            return spent;
        p->in_box = false;
    }
    next_box(c, k);
    return spent;
}

/* Pruned evaluation of about `max` more configurations (evaluated, bounded, or skipped a box at
 * a time), unit by unit, box by box in the order of their bounds at each level. Only store =
 * "best" prunes: no rows. */
static void chunk_eval_pruned(chunk *c, const cdse_job *job, uint64_t max)
{
    pruner *p = &c->pr;
    uint64_t budget = max;
    while (budget > 0 && c->next < c->head.end) {
        uint64_t spent = 1;
        int k = 0; /* the deepest level with a list */
        while (k + 1 < p->n_levels && p->level[k + 1].n > 0)
            k++;
        box_level *l = &p->level[k];
        if (l->n == 0) { /* k == 0: a new unit */
            level_fill(l, job, c->next, (size_t)(p->unit / l->size));
            sweep__best_clear(p->best);
            p->in_box = false;
            spent = l->n;
        } else if (k == p->n_levels - 1) {
            spent = last_step(c, job, budget);
        } else {
            prune_box *b = &l->boxes[l->cur];
            if (skipped(p, l, job, b)) {
                c->head.counts.pruned += l->size;
                next_box(c, k);
            } else {
                box_level *sub = &p->level[k + 1];
                level_fill(sub, job, b->begin, (size_t)(l->size / sub->size));
                spent = sub->n;
            }
        }
        budget -= spent < budget ? spent : budget;
    }
}

/* Evaluates up to `max` more configurations of the chunk. The hot loop of the sweep. */
static void chunk_eval(chunk *c, const cdse_job *job, uint64_t max)
{
    if (c->prune) {
        chunk_eval_pruned(c, job, max);
        return;
    }
    chunk_header *h = &c->head;
    uint64_t stop = h->end - c->next > max ? c->next + max : h->end;
    int mode = job->objective.store;
    cdse_record rec;
    for (uint64_t i = c->next; i < stop; i++) {
        int st = eval_one(c, job, i, NULL, &rec);
        if (mode == CDSE_STORE_ALL || (mode == CDSE_STORE_FEASIBLE && st == CDSE_ST_OK))
            cdse_store_pack(&rec, c->rows + (h->n_rows++) * c->row_size);
    }
    c->next = stop;
}

static bool chunk_complete(const chunk *c)
{
    return c->next >= c->head.end;
}

/* Builds the message in c->msg: compresses the whole HDF5 chunks of rows (so that compression
 * is spread over the ranks) and appends the rest. Returns its size, 0 if memory runs out. */
static size_t chunk_finish(chunk *c)
{
    chunk_header *h = &c->head;
    cdse_record *cand = NULL;
    size_t n_cand = sweep__best_candidates(c->best, &cand);
    h->n_blobs = h->n_rows / c->chunk_rows;
    h->n_tail = h->n_rows - h->n_blobs * c->chunk_rows;
    h->n_cand = n_cand;
    size_t bound = sizeof *h + h->n_blobs * (sizeof(uint64_t) + cdse_store_chunk_bound()) +
                   h->n_tail * c->row_size + n_cand * sizeof *cand;
    if (cand == NULL || grow(&c->msg, &c->msg_cap, bound) < 0) {
        free(cand);
        return 0;
    }
    unsigned char *sizes = c->msg + sizeof *h;
    unsigned char *p = sizes + h->n_blobs * sizeof(uint64_t);
    for (uint64_t b = 0; b < h->n_blobs; b++) {
        uint64_t size =
            cdse_store_compress_chunk(c->rows + b * c->chunk_rows * c->row_size, c->scratch, p);
        if (size == 0) {
            free(cand);
            return 0;
        }
        memcpy(sizes + b * sizeof size, &size, sizeof size);
        p += size;
    }
    memcpy(p, c->rows + h->n_blobs * c->chunk_rows * c->row_size, h->n_tail * c->row_size);
    p += h->n_tail * c->row_size;
    memcpy(p, cand, n_cand * sizeof *cand);
    p += n_cand * sizeof *cand;
    memcpy(c->msg, h, sizeof *h);
    free(cand);
    return (size_t)(p - c->msg);
}

/* The largest message chunk_finish can build for a chunk of `size` configurations: whole HDF5
 * chunks compressed, the rows left over, and a candidate per configuration at most (the
 * candidates are distinct indices of the chunk). Saturates instead of wrapping. */
static uint64_t message_bound(uint64_t size)
{
    if (size > CDSE_SWEEP_CHUNK_LIMIT)
        return UINT64_MAX;
    uint64_t rows = cdse_store_chunk_rows();
    uint64_t blobs = (size + rows - 1) / rows;
    return sizeof(chunk_header) + blobs * (sizeof(uint64_t) + cdse_store_chunk_bound()) +
           rows * cdse_store_row_size() + size * sizeof(cdse_record);
}

/* The same for a job's chunks of up to `chunk_max` configurations. A pruned job's chunks are
 * whole units (at least one, however large), store no rows, and hold per unit at most K
 * candidates of each group (the groups of a unit differ by global batch and precision at most)
 * and its best. */
static uint64_t job_message_bound(const cdse_job *job, uint64_t chunk_max)
{
    if (!job->objective.prune)
        return message_bound(chunk_max);
    uint64_t unit;
    int unit_axis, box_axis;
    sweep__prune_layout(&job->space, &unit, &unit_axis, &box_axis);
    uint64_t units = chunk_max / unit > 0 ? chunk_max / unit : 1;
    uint64_t groups = 1;
    if ((job->objective.group_by & CDSE_GROUP_GLOBAL_BATCH) && unit_axis < CDSE_AXIS_GLOBAL_BATCH)
        groups *= (uint64_t)job->space.n[CDSE_AXIS_GLOBAL_BATCH];
    if ((job->objective.group_by & CDSE_GROUP_PRECISION) && unit_axis < CDSE_AXIS_PRECISION)
        groups *= (uint64_t)job->space.n[CDSE_AXIS_PRECISION];
    uint64_t per_unit = (uint64_t)job->objective.top * groups + 1;
    uint64_t cand = per_unit < unit ? per_unit : unit;
    if (cand > CDSE_SWEEP_CHUNK_LIMIT / units)
        return UINT64_MAX;
    return sizeof(chunk_header) + units * cand * sizeof(cdse_record);
}

/* ---- a sample of the sweep, for --dry-run ---------------------------------------------------- */

/* Configurations in a sampled run without pruning: hundreds of runs in a second (the cost of a
 * configuration varies by orders of magnitude over the space: many runs are needed), each long
 * enough for the caches the sweep's consecutive indices keep warm (the hardware design). */
#define SAMPLE_RUN 2048

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A step coprime with `runs` near runs / golden ratio: r_k = k x step mod runs visits every run
 * once, and any first n of them are spread evenly over the space (a Kronecker sequence). */
static uint64_t sample_step(uint64_t runs)
{
    uint64_t step = (uint64_t)((double)runs * 0.6180339887498949) | 1;
    while (runs > 1 && gcd(step, runs) != 1)
        step += 2;
    return step;
}

/* The rows a sample stores, gathered into whole HDF5 chunks and compressed as the sweep
 * compresses every stored row once (shuffle + deflate: most of a store = "all" sweep's time). */
typedef struct sample_rows {
    unsigned char *rows, *scratch, *out;
    size_t n, cap, row_size;
} sample_rows;

static int sample_rows_add(sample_rows *p, const unsigned char *rows, size_t n, bool flush)
{
    while (n > 0 || (flush && p->n > 0)) {
        size_t take = p->cap - p->n < n ? p->cap - p->n : n;
        memcpy(p->rows + p->n * p->row_size, rows, take * p->row_size);
        p->n += take, rows += take * p->row_size, n -= take;
        if (p->n < p->cap && !flush)
            break;
        if (p->n < p->cap) /* the last, partial chunk: the rest of it as zeros */
            memset(p->rows + p->n * p->row_size, 0, (p->cap - p->n) * p->row_size);
        if (cdse_store_compress_chunk(p->rows, p->scratch, p->out) == 0)
            return CDSE_ENOMEM;
        p->n = 0;
    }
    return CDSE_OK;
}

int cdse_sweep_measure(const cdse_job *job, double seconds, cdse_sweep_sample *s)
{
    memset(s, 0, sizeof *s);
    uint64_t size = job->space.size, run = SAMPLE_RUN;
    if (job->objective.prune) {
        int unit_axis, box_axis;
        sweep__prune_layout(&job->space, &run, &unit_axis, &box_axis);
    }
    run = run < size ? run : size;
    uint64_t runs = run > 0 ? (size + run - 1) / run : 0; /* the last one may be shorter */
    chunk c;
    sample_rows stored = {.cap = cdse_store_chunk_rows(), .row_size = cdse_store_row_size()};
    stored.rows = malloc(stored.cap * stored.row_size);
    stored.scratch = malloc(stored.cap * stored.row_size);
    stored.out = malloc(cdse_store_chunk_bound());
    int rc = chunk_init(&c, job, run) < 0 || !stored.rows || !stored.scratch || !stored.out
                 ? CDSE_ENOMEM
                 : CDSE_OK;
    uint64_t step = sample_step(runs);
    double start = now_s();
    for (uint64_t k = 0; rc == CDSE_OK && k < runs; k++) {
        uint64_t r = (uint64_t)(((unsigned __int128)k * step) % runs);
        uint64_t end = size - r * run > run ? r * run + run : size;
        chunk_begin(&c, (cdse_range){r * run, end});
        while (!chunk_complete(&c))
            chunk_eval(&c, job, run);
        /* The run's own message carries its candidates; its rows are compressed below. */
        uint64_t n_rows = c.head.n_rows;
        c.head.n_rows = 0;
        if (chunk_finish(&c) == 0)
            rc = CDSE_ENOMEM;
        bool last = k + 1 == runs || now_s() - start > seconds;
        if (rc == CDSE_OK)
            rc = sample_rows_add(&stored, c.rows, (size_t)n_rows, last);
        s->runs++;
        s->done += end - r * run;
        s->rows += n_rows;
        s->counts.evaluated += c.head.counts.evaluated;
        s->counts.feasible += c.head.counts.feasible;
        s->counts.pruned += c.head.counts.pruned;
        for (int st = 0; st < CDSE_ST_COUNT; st++)
            s->counts.status[st] += c.head.counts.status[st];
        if (last)
            break;
    }
    s->seconds = now_s() - start;
    s->run_size = run;
    free(stored.rows);
    free(stored.scratch);
    free(stored.out);
    chunk_free(&c);
    return rc;
}

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

/* ---- rank 0 ------------------------------------------------------------------------------- */

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

static int push_tail(master *m, pending *owner, const unsigned char *rows, size_t n);

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
            push_tail(m, b->owner, rows, m->chunk_rows) != 0) {
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

static int push_tail(master *m, pending *owner, const unsigned char *rows, size_t n)
{
    if (n == 0)
        return 0;
    size_t bytes = (m->tail_n + n) * m->row_size, cap_bytes = m->tail_cap * m->row_size;
    if (grow(&m->tail, &cap_bytes, bytes) < 0)
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
        rc = push_tail(m, p, data, (size_t)h.n_tail);
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

static void master_progress(master *m, bool final)
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
 * buf holds message_bound(chunk_max) bytes, allocated before any work went out: no result can be
 * larger, so none is ever left unreceived (its worker would wait forever). */
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

static int master_loop(master *m)
{
    int *outstanding =
        cdse_fault("master_loop") ? NULL : calloc((size_t)m->ranks, sizeof *outstanding);
    unsigned char *buf =
        cdse_fault("master_recv") ? NULL : malloc(job_message_bound(m->job, m->gen.chunk_max));
    chunk own;
    if (outstanding == NULL || buf == NULL || chunk_init(&own, m->job, m->gen.chunk_max) < 0) {
        if (outstanding != NULL && buf != NULL)
            chunk_free(&own);
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
            chunk_eval(&own, m->job, SWEEP_SLICE);
            if (chunk_complete(&own)) {
                own_active = false;
                if (chunk_finish(&own) == 0)
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
                chunk_begin(&own, r);
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
        master_progress(m, false);
    }
    free(buf);
    free(outstanding);
    chunk_free(&own);
    if (m->error == 0)
        m->error = master_commit(m);
    return m->error;
}

/* ---- workers ------------------------------------------------------------------------------ */

static void worker_loop(const cdse_job *job, const cdse_sweep_options *opt, MPI_Comm comm,
                        uint64_t chunk_max)
{
    chunk c;
    int ok = chunk_init(&c, job, chunk_max) == 0;
    for (;;) {
        uint64_t msg[2];
        MPI_Status status;
        MPI_Recv(msg, 2, MPI_UINT64_T, 0, MPI_ANY_TAG, comm, &status);
        if (status.MPI_TAG == TAG_STOP)
            break;
        size_t size = 0;
        if (ok) {
            chunk_begin(&c, (cdse_range){msg[0], msg[1]});
            while (!chunk_complete(&c)) /* pruning may take several calls */
                chunk_eval(&c, job, msg[1] - msg[0]);
            c.head.interrupted = opt->stop != NULL && *opt->stop;
            size = chunk_finish(&c);
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
    chunk_free(&c); /* also after a chunk_init that failed half-way */
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
    if (rc == 0 && push_tail(m, NULL, buf, n) != 0) {
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

static int master_open(master *m, const cdse_store_meta *meta, bool *already_complete)
{
    const cdse_sweep_options *opt = m->opt;
    const cdse_job *job = m->job;
    *already_complete = false;
    bool exists = access(opt->output, F_OK) == 0;
    cdse_done *done = NULL;
    size_t n_done = 0;
    int rc;
    if (opt->resume && exists) {
        rc = cdse_store_open(opt->output, true, &m->store, m->diag);
        if (rc != 0)
            return rc;
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
        rc = cdse_store_read_progress(m->store, &done, &n_done, m->diag);
        cdse_store_sum_counts(done, n_done, &m->counts);
        m->feasible_seen = m->counts.feasible;
        /* The stored best are re-evaluated from their indices: evaluation is pure. */
        const char *sets[2] = {"top", "pareto"};
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
                    cdse_diag_set(m->diag, "%s: /%s holds index %llu outside the space",
                                  opt->output, sets[s], (unsigned long long)stored.index);
                    rc = CDSE_EINVAL;
                    break;
                }
                cdse_record_eval(job, stored.index, &fresh);
                sweep__best_offer(m->best, &fresh);
            }
            free(rows);
        }
    } else {
        rc = cdse_store_create(opt->output, job, meta, opt->force, &m->store, m->diag);
    }
    if (rc != 0) {
        free(done);
        return rc;
    }
    if (rc == 0)
        rc = reload_tail(m);
    if (rc != 0) {
        free(done);
        return rc;
    }
    cdse_range *ranges = malloc((n_done ? n_done : 1) * sizeof *ranges);
    for (size_t i = 0; ranges != NULL && i < n_done; i++)
        ranges[i] = (cdse_range){done[i].begin, done[i].end};
    free(done);
    if (ranges != NULL)
        m->gen.n_gaps = sweep__gaps(ranges, n_done, job->space.size, &m->gen.gaps);
    free(ranges);
    if (m->gen.gaps == NULL) {
        cdse_diag_set(m->diag, "out of memory");
        return CDSE_ENOMEM;
    }
    uint64_t remaining = 0;
    for (size_t i = 0; i < m->gen.n_gaps; i++)
        remaining += m->gen.gaps[i].end - m->gen.gaps[i].begin;
    m->gen.remaining = remaining;
    m->gen.pos = m->gen.n_gaps ? m->gen.gaps[0].begin : 0;
    m->done_total = m->done_at_start = job->space.size - remaining;
    *already_complete = remaining == 0 && opt->resume && exists;
    return CDSE_OK;
}

static int run_master(master *m, const cdse_store_meta *meta, cdse_sweep_stats *stats)
{
    bool already_complete = false;
    int rc = master_open(m, meta, &already_complete);
    int go = rc;
    MPI_Bcast(&go, 1, MPI_INT, 0, m->comm);
    if (rc != 0)
        return rc;
    m->t_start = m->t_last_flush = m->t_last_progress = now_s();
    rc = master_loop(m);
    master_progress(m, true);
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
    if (job_message_bound(job, chunk_max) > INT_MAX) { /* opt is the same everywhere: all return */
        if (job->objective.prune && message_bound(chunk_max) <= INT_MAX) {
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
    cdse_store_meta meta;
    gather_meta(comm, rank, ranks, &meta);
    int rc;
    if (rank == 0) {
        master m;
        memset(&m, 0, sizeof m);
        m.job = job;
        m.opt = opt;
        m.comm = comm;
        m.ranks = ranks;
        m.diag = diag;
        m.gen.ranks = ranks;
        m.gen.chunk_min = chunk_min;
        m.gen.chunk_max = chunk_max;
        m.gen.unit = 1;
        if (job->objective.prune) {
            int unit_axis, box_axis;
            sweep__prune_layout(&job->space, &m.gen.unit, &unit_axis, &box_axis);
        }
        m.row_size = cdse_store_row_size();
        m.chunk_rows = cdse_store_chunk_rows();
        m.scratch = malloc(m.chunk_rows * m.row_size);
        m.packed = malloc(cdse_store_chunk_bound());
        m.best = sweep__best_create(&job->objective, true);
        char note[CDSE_PARETO_COST_NOTE_MAX];
        m.pareto_cost = cdse_pareto_cost_note(job, note, sizeof note);
        if (m.best == NULL || m.scratch == NULL || m.packed == NULL) {
            int go = CDSE_ENOMEM;
            MPI_Bcast(&go, 1, MPI_INT, 0, comm);
            cdse_diag_set(diag, "out of memory");
            rc = CDSE_ENOMEM;
        } else {
            rc = run_master(&m, &meta, stats);
        }
        if (m.store != NULL && rc == CDSE_EIO) {
            cdse_store_abandon(m.store); /* the file stays as its last commit left it */
            stats->store_abandoned = true;
        } else if (m.store != NULL) {
            cdse_diag closing;
            int crc = cdse_store_close(m.store, &closing);
            if (rc == 0 && crc != 0) {
                rc = crc;
                *diag = closing;
            }
        }
        sweep__best_free(m.best);
        free(m.gen.gaps);
        free(m.scratch);
        free(m.packed);
        free(m.tail);
        free(m.seg);
        for (size_t i = 0; i < m.q_n; i++)
            free(m.queue[m.q_head + i].data);
        free(m.queue);
        for (size_t i = 0; i < m.n_open; i++)
            free(m.open[i]);
        free(m.open);
    } else {
        int go = 0;
        MPI_Bcast(&go, 1, MPI_INT, 0, comm);
        if (go == 0)
            worker_loop(job, opt, comm, chunk_max);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
    return rc;
}
