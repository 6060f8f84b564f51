/* One chunk of the sweep: its evaluation (with pruning), the message that carries its results
 * to rank 0, and the sample --dry-run measures with the same code. */
#define _POSIX_C_SOURCE 200809L
#include "sweep_internal.h"

#include "clusterdse/model/bound.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    cdse_study study;
    cdse_job_study(job, &study);
    int digit[CDSE_AXIS_COUNT] = {0};
    double least = HUGE_VAL;
    for (;;) {
        uint64_t index = begin;
        for (int k = 0; k < l->n_kept; k++)
            index += (uint64_t)digit[k] * space->stride[l->kept[k]];
        cdse_record rec;
        double bound = cdse_record_bound(&study, index, l->flags, &rec);
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
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_config(&study, begin, &rep);
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

int sweep__grow(unsigned char **buf, size_t *cap, size_t bytes)
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

int sweep__chunk_init(chunk *c, const cdse_job *job, uint64_t chunk_max)
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

void sweep__chunk_free(chunk *c)
{
    free(c->rows);
    free(c->msg);
    free(c->scratch);
    sweep__best_free(c->best);
    if (c->prune)
        pruner_free(&c->pr);
}

void sweep__chunk_begin(chunk *c, cdse_range range)
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
static inline int eval_one(chunk *c, uint64_t i, sweep__best *unit, cdse_record *rec)
{
    chunk_header *h = &c->head;
    cdse_record_eval(&c->study, i, rec);
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
            eval_one(c, i, p->best, &rec);
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
void sweep__chunk_eval(chunk *c, const cdse_job *job, uint64_t max)
{
    cdse_job_study(job, &c->study);
    if (c->prune) {
        chunk_eval_pruned(c, job, max);
        return;
    }
    chunk_header *h = &c->head;
    uint64_t stop = h->end - c->next > max ? c->next + max : h->end;
    int mode = job->objective.store;
    cdse_record rec;
    for (uint64_t i = c->next; i < stop; i++) {
        int st = eval_one(c, i, NULL, &rec);
        if (mode == CDSE_STORE_ALL || (mode == CDSE_STORE_FEASIBLE && st == CDSE_ST_OK))
            cdse_store_pack(&rec, c->rows + (h->n_rows++) * c->row_size);
    }
    c->next = stop;
}

bool sweep__chunk_complete(const chunk *c)
{
    return c->next >= c->head.end;
}

/* Builds the message in c->msg: compresses the whole HDF5 chunks of rows (so that compression
 * is spread over the ranks) and appends the rest. Returns its size, 0 if memory runs out. */
size_t sweep__chunk_finish(chunk *c)
{
    chunk_header *h = &c->head;
    cdse_record *cand = NULL;
    size_t n_cand = sweep__best_candidates(c->best, &cand);
    h->n_blobs = h->n_rows / c->chunk_rows;
    h->n_tail = h->n_rows - h->n_blobs * c->chunk_rows;
    h->n_cand = n_cand;
    size_t bound = sizeof *h + h->n_blobs * (sizeof(uint64_t) + cdse_store_chunk_bound()) +
                   h->n_tail * c->row_size + n_cand * sizeof *cand;
    if (cand == NULL || sweep__grow(&c->msg, &c->msg_cap, bound) < 0) {
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
uint64_t sweep__message_bound(uint64_t size)
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
uint64_t sweep__job_message_bound(const cdse_job *job, uint64_t chunk_max)
{
    if (!job->objective.prune)
        return sweep__message_bound(chunk_max);
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
    int rc = sweep__chunk_init(&c, job, run) < 0 || !stored.rows || !stored.scratch || !stored.out
                 ? CDSE_ENOMEM
                 : CDSE_OK;
    uint64_t step = sample_step(runs);
    double start = now_s();
    for (uint64_t k = 0; rc == CDSE_OK && k < runs; k++) {
        uint64_t r = (uint64_t)(((unsigned __int128)k * step) % runs);
        uint64_t end = size - r * run > run ? r * run + run : size;
        sweep__chunk_begin(&c, (cdse_range){r * run, end});
        while (!sweep__chunk_complete(&c))
            sweep__chunk_eval(&c, job, run);
        /* The run's own message carries its candidates; its rows are compressed below. */
        uint64_t n_rows = c.head.n_rows;
        c.head.n_rows = 0;
        if (sweep__chunk_finish(&c) == 0)
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
    sweep__chunk_free(&c);
    return rc;
}
