/* Top-K by (key, index) with a bounded binary max-heap per group, and the Pareto front. */
#include "clusterdse/sweep/topk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cdse_topk_before(double key_a, uint64_t index_a, double key_b, uint64_t index_b)
{
    return key_a < key_b || (key_a == key_b && index_a < index_b);
}

/* Whether heap entry a ranks after entry b (is worse). */
static bool entry_worse(const cdse_topk_entry *a, const cdse_topk_entry *b)
{
    return cdse_topk_before(b->key, b->index, a->key, a->index);
}

void cdse_topk_init(cdse_topk *t, size_t k, bool unique)
{
    memset(t, 0, sizeof *t);
    t->k = k > 0 ? k : 1;
    t->unique = unique;
}

void cdse_topk_free(cdse_topk *t)
{
    free(t->heap);
    free(t->rec);
    free(t->seen);
    t->heap = NULL;
    t->rec = NULL;
    t->seen = NULL;
    t->n = t->cap = t->seen_cap = 0;
}

/* ---- the set of kept indices (unique): linear probing, backward-shift deletion -------------- */

#define SEEN_EMPTY UINT64_MAX

static size_t seen_home(const cdse_topk *t, uint64_t index)
{
    return (size_t)((index * 0x9e3779b97f4a7c15ull) >> 32) & (t->seen_cap - 1);
}

/* The slot holding `index`, or the empty slot where it would go. */
static size_t seen_find(const cdse_topk *t, uint64_t index)
{
    size_t i = seen_home(t, index);
    while (t->seen[i] != SEEN_EMPTY && t->seen[i] != index)
        i = (i + 1) & (t->seen_cap - 1);
    return i;
}

static void seen_add(cdse_topk *t, uint64_t index)
{
    t->seen[seen_find(t, index)] = index;
}

/* Removes `index` (present) and moves later entries of its probe run back into the hole. */
static void seen_remove(cdse_topk *t, uint64_t index)
{
    size_t mask = t->seen_cap - 1, hole = seen_find(t, index);
    for (size_t j = (hole + 1) & mask; t->seen[j] != SEEN_EMPTY; j = (j + 1) & mask) {
        size_t home = seen_home(t, t->seen[j]);
        /* The entry may move to the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            t->seen[hole] = t->seen[j];
            hole = j;
        }
    }
    t->seen[hole] = SEEN_EMPTY;
}

/* Sizes the set for `cap` entries and puts the kept indices back in. */
static int seen_resize(cdse_topk *t, size_t cap)
{
    size_t want = 16;
    while (want < 2 * cap)
        want *= 2;
    uint64_t *seen = malloc(want * sizeof *seen);
    if (seen == NULL)
        return CDSE_ENOMEM;
    memset(seen, 0xff, want * sizeof *seen); /* SEEN_EMPTY */
    free(t->seen);
    t->seen = seen;
    t->seen_cap = want;
    for (size_t i = 0; i < t->n; i++)
        seen_add(t, t->heap[i].index);
    return CDSE_OK;
}

void cdse_topk_clear(cdse_topk *t)
{
    t->n = 0;
    if (t->seen != NULL)
        memset(t->seen, 0xff, t->seen_cap * sizeof *t->seen);
}

static int topk_grow(cdse_topk *t)
{
    size_t cap = t->cap ? 2 * t->cap : 16;
    if (cap > t->k || cap < t->cap)
        cap = t->k;
    cdse_topk_entry *heap = realloc(t->heap, cap * sizeof *heap);
    if (heap == NULL)
        return CDSE_ENOMEM;
    t->heap = heap;
    cdse_record *rec = realloc(t->rec, cap * sizeof *rec);
    if (rec == NULL)
        return CDSE_ENOMEM;
    t->rec = rec;
    if (t->unique && seen_resize(t, cap) != CDSE_OK)
        return CDSE_ENOMEM;
    t->cap = cap;
    return CDSE_OK;
}

static void sift_up(cdse_topk_entry *h, size_t i)
{
    cdse_topk_entry e = h[i];
    while (i > 0 && entry_worse(&e, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = e;
}

static void sift_down(cdse_topk_entry *h, size_t n, size_t i)
{
    cdse_topk_entry e = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && entry_worse(&h[c + 1], &h[c]))
            c++;
        if (!entry_worse(&h[c], &e))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

int cdse_topk_offer(cdse_topk *t, const cdse_record *record, double key)
{
    cdse_topk_entry e = {key, record->index, 0};
    bool full = t->n == t->k;
    if (full && !entry_worse(&t->heap[0], &e))
        return CDSE_OK;
    if (t->unique && t->n > 0 && t->seen[seen_find(t, e.index)] == e.index)
        return CDSE_OK;
    if (full) { /* the worst kept leaves; its slot takes the new record */
        if (t->unique) {
            seen_remove(t, t->heap[0].index);
            seen_add(t, e.index);
        }
        e.slot = t->heap[0].slot;
        t->rec[e.slot] = *record;
        t->heap[0] = e;
        sift_down(t->heap, t->n, 0);
        return CDSE_OK;
    }
    if (t->n == t->cap && topk_grow(t) != CDSE_OK)
        return CDSE_ENOMEM;
    if (t->unique)
        seen_add(t, e.index);
    e.slot = t->n;
    t->rec[e.slot] = *record;
    t->heap[t->n] = e;
    sift_up(t->heap, t->n++);
    return CDSE_OK;
}

static int entry_compare(const void *a, const void *b)
{
    const cdse_topk_entry *x = a, *y = b;
    if (cdse_topk_before(x->key, x->index, y->key, y->index))
        return -1;
    return cdse_topk_before(y->key, y->index, x->key, x->index) ? 1 : 0;
}

int cdse_topk_sorted(const cdse_topk *t, const cdse_record **out, double *keys)
{
    cdse_topk_entry *e = malloc((t->n ? t->n : 1) * sizeof *e);
    if (e == NULL)
        return CDSE_ENOMEM;
    if (t->n > 0) /* an empty heap may have no array at all */
        memcpy(e, t->heap, t->n * sizeof *e);
    qsort(e, t->n, sizeof *e, entry_compare);
    for (size_t i = 0; i < t->n; i++) {
        out[i] = &t->rec[e[i].slot];
        if (keys != NULL)
            keys[i] = e[i].key;
    }
    free(e);
    return CDSE_OK;
}

/* ---- groups --------------------------------------------------------------------------------- */

/* model, system, gpus, global_batch, precision, then the hardware values (the design). */
#define GROUP_BASE_FIELDS 5
#define GROUP_FIELDS      (GROUP_BASE_FIELDS + CDSE_HW_COUNT)

typedef struct group {
    int64_t key[GROUP_FIELDS];
    cdse_topk best;
} group;

/* Open addressing on the group key; groups[] keeps creation order and is reused after a
 * clear (their heaps keep their memory). */
struct cdse_topk_groups {
    int mask; /* CDSE_GROUP_* fields that make the key */
    size_t k;
    bool unique;
    size_t n, cap;
    group *groups;
    size_t *slot; /* slot_cap entries: group id + 1, or 0 when empty */
    size_t slot_cap;
};

static void group_key(const cdse_record *r, int mask, int64_t key[GROUP_FIELDS])
{
    key[0] = (mask & CDSE_GROUP_MODEL) ? r->model : 0;
    key[1] = (mask & CDSE_GROUP_SYSTEM) ? r->system : 0;
    key[2] = (mask & CDSE_GROUP_GPUS) ? r->strategy.gpus : 0;
    key[3] = (mask & CDSE_GROUP_GLOBAL_BATCH) ? r->strategy.global_batch : 0;
    key[4] = (mask & CDSE_GROUP_PRECISION) ? r->strategy.precision : 0;
    /* The design: the bits of each hardware value (equal means equal), or zeros. */
    _Static_assert(sizeof r->hw == CDSE_HW_COUNT * sizeof key[0], "one key field per value");
    if (mask & CDSE_GROUP_DESIGN)
        memcpy(&key[GROUP_BASE_FIELDS], r->hw, sizeof r->hw);
    else
        memset(&key[GROUP_BASE_FIELDS], 0, sizeof r->hw);
}

/* Fields that enter the hash: the design's only when grouping by it (they are 0 otherwise). */
static int hashed_fields(int mask)
{
    return (mask & CDSE_GROUP_DESIGN) ? GROUP_FIELDS : GROUP_BASE_FIELDS;
}

static uint64_t key_hash(const int64_t key[GROUP_FIELDS], int n)
{
    /* FNV-1a style mixing of the first n fields, then a 64-bit finalizer (splitmix64). */
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)key[i]) * 1099511628211ull;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return h;
}

cdse_topk_groups *cdse_topk_groups_create(int mask, size_t k, bool unique)
{
    cdse_topk_groups *g = calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    g->mask = mask;
    g->k = k > 0 ? k : 1;
    g->unique = unique;
    g->slot_cap = 64;
    g->slot = calloc(g->slot_cap, sizeof *g->slot);
    if (g->slot == NULL) {
        free(g);
        return NULL;
    }
    return g;
}

void cdse_topk_groups_free(cdse_topk_groups *g)
{
    if (g == NULL)
        return;
    for (size_t i = 0; i < g->cap; i++)
        cdse_topk_free(&g->groups[i].best);
    free(g->groups);
    free(g->slot);
    free(g);
}

void cdse_topk_groups_clear(cdse_topk_groups *g)
{
    g->n = 0;
    memset(g->slot, 0, g->slot_cap * sizeof *g->slot);
}

/* The slot of `key`: where it is, or the empty slot where it goes. */
static size_t slot_find(const cdse_topk_groups *g, const int64_t key[GROUP_FIELDS], uint64_t hash)
{
    size_t mask = g->slot_cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        size_t id = g->slot[i];
        if (id == 0 || memcmp(g->groups[id - 1].key, key, sizeof g->groups[id - 1].key) == 0)
            return i;
    }
}

static int slots_grow(cdse_topk_groups *g)
{
    size_t cap = g->slot_cap * 2;
    size_t *slot = calloc(cap, sizeof *slot);
    if (slot == NULL)
        return CDSE_ENOMEM;
    free(g->slot);
    g->slot = slot;
    g->slot_cap = cap;
    for (size_t i = 0; i < g->n; i++)
        g->slot[slot_find(g, g->groups[i].key,
                          key_hash(g->groups[i].key, hashed_fields(g->mask)))] = i + 1;
    return CDSE_OK;
}

/* The group of `key`, created if new; NULL if memory runs out. */
static group *group_get(cdse_topk_groups *g, const int64_t key[GROUP_FIELDS])
{
    uint64_t hash = key_hash(key, hashed_fields(g->mask));
    size_t i = slot_find(g, key, hash);
    if (g->slot[i] != 0)
        return &g->groups[g->slot[i] - 1];
    if (2 * (g->n + 1) > g->slot_cap) {
        if (slots_grow(g) != CDSE_OK)
            return NULL;
        i = slot_find(g, key, hash);
    }
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        group *grown = realloc(g->groups, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        for (size_t j = g->cap; j < cap; j++)
            cdse_topk_init(&grown[j].best, g->k, g->unique);
        g->groups = grown;
        g->cap = cap;
    }
    group *new = &g->groups[g->n];
    memcpy(new->key, key, sizeof new->key);
    cdse_topk_clear(&new->best);
    g->slot[i] = ++g->n;
    return new;
}

int cdse_topk_groups_offer(cdse_topk_groups *g, const cdse_record *record, double key)
{
    int64_t gkey[GROUP_FIELDS];
    group_key(record, g->mask, gkey);
    group *grp = group_get(g, gkey);
    if (grp == NULL)
        return CDSE_ENOMEM;
    return cdse_topk_offer(&grp->best, record, key);
}

double cdse_topk_groups_threshold(const cdse_topk_groups *g, const cdse_record *record)
{
    int64_t gkey[GROUP_FIELDS];
    group_key(record, g->mask, gkey);
    size_t i = slot_find(g, gkey, key_hash(gkey, hashed_fields(g->mask)));
    if (g->slot[i] == 0)
        return HUGE_VAL;
    const cdse_topk *t = &g->groups[g->slot[i] - 1].best;
    return t->n < t->k ? HUGE_VAL : t->heap[0].key;
}

static int key_compare(const void *a, const void *b)
{
    const group *ga = *(const group *const *)a, *gb = *(const group *const *)b;
    for (int i = 0; i < GROUP_FIELDS; i++)
        if (ga->key[i] != gb->key[i])
            return ga->key[i] < gb->key[i] ? -1 : 1;
    return 0;
}

/* The groups, sorted by key (a malloc'd array of pointers). */
static const group **sorted_groups(const cdse_topk_groups *g)
{
    const group **s = malloc((g->n ? g->n : 1) * sizeof *s);
    if (s == NULL)
        return NULL;
    for (size_t i = 0; i < g->n; i++)
        s[i] = &g->groups[i];
    qsort(s, g->n, sizeof *s, key_compare);
    return s;
}

size_t cdse_topk_groups_rows(const cdse_topk_groups *g, cdse_record **out)
{
    size_t total = 0;
    for (size_t i = 0; i < g->n; i++)
        total += g->groups[i].best.n;
    const group **s = sorted_groups(g);
    const cdse_record **p = malloc((total ? total : 1) * sizeof *p);
    *out = malloc((total ? total : 1) * sizeof **out);
    size_t n = 0;
    for (size_t i = 0; s && p && *out && i < g->n; i++) {
        if (cdse_topk_sorted(&s[i]->best, p + n, NULL) != CDSE_OK)
            break;
        n += s[i]->best.n;
    }
    if (n != total) {
        free(*out);
        *out = NULL;
        n = 0;
    }
    for (size_t i = 0; i < n; i++)
        (*out)[i] = *p[i];
    free(p);
    free(s);
    return n;
}

/* The best entry of a heap (a max-heap: a scan). */
static const cdse_topk_entry *heap_best(const cdse_topk *t)
{
    size_t b = 0;
    for (size_t j = 1; j < t->n; j++)
        if (entry_worse(&t->heap[b], &t->heap[j]))
            b = j;
    return &t->heap[b];
}

size_t cdse_topk_groups_pareto(const cdse_topk_groups *g, cdse_record **out)
{
    const group **s = sorted_groups(g); /* key = (model, ., gpus, ...): by model, then gpus */
    *out = malloc((g->n ? g->n : 1) * sizeof **out);
    if (s == NULL || *out == NULL) {
        free(s);
        free(*out);
        *out = NULL;
        return 0;
    }
    size_t m = 0;
    double best = HUGE_VAL;
    for (size_t i = 0; i < g->n; i++) {
        if (i == 0 || s[i]->key[0] != s[i - 1]->key[0])
            best = HUGE_VAL; /* a new model */
        if (s[i]->best.n == 0)
            continue;
        const cdse_topk_entry *e = heap_best(&s[i]->best);
        if (e->key < best) {
            best = e->key;
            (*out)[m++] = s[i]->best.rec[e->slot];
        }
    }
    free(s);
    return m;
}

/* ---- the front of time to train against cost to train --------------------------------------- */

static int front_compare(const void *a, const void *b)
{
    const cdse_record *x = *(const cdse_record *const *)a, *y = *(const cdse_record *const *)b;
    if (x->model != y->model)
        return x->model < y->model ? -1 : 1;
    if (x->time_to_train_days != y->time_to_train_days)
        return x->time_to_train_days < y->time_to_train_days ? -1 : 1;
    if (x->cost_to_train != y->cost_to_train)
        return x->cost_to_train < y->cost_to_train ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Whether a record has both coordinates of the front: feasible, a time and a cost to train. */
static bool on_both_axes(const cdse_record *r)
{
    return r->result.status == CDSE_ST_OK && r->time_to_train_days > 0.0 &&
           isfinite(r->time_to_train_days) && r->cost_to_train > 0.0 && isfinite(r->cost_to_train);
}

int cdse_pareto_cost(const cdse_record *best, size_t n, cdse_record *out, size_t *n_out)
{
    *n_out = 0;
    const cdse_record **p = malloc((n ? n : 1) * sizeof *p);
    if (p == NULL)
        return CDSE_ENOMEM;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (on_both_axes(&best[i]))
            p[m++] = &best[i];
    qsort(p, m, sizeof *p, front_compare);
    /* Per model, by time ascending: a point is on the front when it is cheaper than every
     * faster (or equally fast and earlier) point. The kept points of a model, cheapest first,
     * are then those same points in reverse. */
    size_t k = 0;
    for (size_t i = 0, first = 0; i < m; i++) {
        if (i == 0 || p[i]->model != p[i - 1]->model)
            first = k; /* a new model: its points start at out[first] */
        if (k == first || p[i]->cost_to_train < out[k - 1].cost_to_train)
            out[k++] = *p[i];
        if (i + 1 == m || p[i + 1]->model != p[i]->model)
            for (size_t a = first, b = k; a + 1 < b; a++, b--) {
                cdse_record t = out[a];
                out[a] = out[b - 1];
                out[b - 1] = t;
            }
    }
    free(p);
    *n_out = k;
    return CDSE_OK;
}

size_t cdse_topk_groups_pareto_cost(const cdse_topk_groups *g, cdse_record **out)
{
    cdse_record *bests = malloc((g->n ? g->n : 1) * sizeof *bests);
    *out = malloc((g->n ? g->n : 1) * sizeof **out);
    size_t n = 0, m = 0;
    for (size_t i = 0; bests != NULL && i < g->n; i++)
        if (g->groups[i].best.n > 0)
            bests[n++] = g->groups[i].best.rec[heap_best(&g->groups[i].best)->slot];
    if (bests == NULL || *out == NULL || cdse_pareto_cost(bests, n, *out, &m) != CDSE_OK) {
        free(*out);
        *out = NULL;
        m = 0;
    }
    free(bests);
    return m;
}

/* Whether a configuration of system s can have a price: a rental or purchase price in the
 * profile or on a hardware axis of it, or power drawn at a priced electricity. */
static bool system_priced(const cdse_job *job, int s)
{
    const cdse_system *sys = &job->system[s];
    if (sys->pool.n_types > 0) { /* billed per type (model/cost.h cdse_pool_bill) */
        for (int t = 0; t < sys->pool.n_types; t++)
            if (system_priced(job, sys->pool.member[t]))
                return true;
        return false;
    }
    double price = sys->cost.rental_price + sys->cost.gpu_price + sys->cost.facility_price;
    for (int l = 0; l < sys->n_levels; l++)
        price += sys->level[l].port_price;
    bool power = sys->cost.gpu_power_w > 0.0 || sys->cost.node_power_w > 0.0;
    for (int h = 0; h < job->n_hw_axes; h++) {
        const cdse_hw_axis *a = &job->hw_axis[h];
        bool on_price = a->key == CDSE_HW_GPU_PRICE || a->key == CDSE_HW_RENTAL_PRICE;
        for (int v = 0; a->system == s && v < a->n; v++) {
            price += on_price ? a->value[v] : 0.0;
            power |= a->key == CDSE_HW_GPU_POWER && a->value[v] > 0.0;
        }
    }
    return price > 0.0 || (power && job->objective.electricity_price > 0.0);
}

/* A grouping field that has several values in the job but is not in group_by, or NULL. */
static const char *ungrouped_field(const cdse_job *job)
{
    int by = job->objective.group_by;
    int gpus_values = job->space.n[CDSE_AXIS_GPUS];
    int systems = job->space.n[CDSE_AXIS_SYSTEM];
    bool sized_by_system = job->n_system_gpus > 0 && systems > 1; /* sizes per system */
    if (!(by & CDSE_GROUP_MODEL) && job->space.n[CDSE_AXIS_MODEL] > 1)
        return "model"; /* the front is per model */
    if (!(by & CDSE_GROUP_GPUS) &&
        (gpus_values > 1 || (sized_by_system && !(by & CDSE_GROUP_SYSTEM))))
        return "gpus";
    if (!(by & CDSE_GROUP_SYSTEM) && systems > 1)
        return "system";
    if (!(by & CDSE_GROUP_DESIGN) && job->n_hw_axes > 0)
        return "design";
    return NULL;
}

/* For the metrics that do not order a group's configurations as time to train does on their
 * own: the field that must be fixed in a group for them to, or NULL. */
static const char *metric_needs(const cdse_job *job, int *field_bit, int *axis)
{
    switch (job->objective.metric) {
    case CDSE_METRIC_TIME_PER_ITERATION: /* time to train = iterations x time per iteration */
        *field_bit = CDSE_GROUP_GLOBAL_BATCH;
        *axis = CDSE_AXIS_GLOBAL_BATCH;
        return "global_batch";
    case CDSE_METRIC_MFU: /* mfu = model FLOP/s / peak of the precision */
        *field_bit = CDSE_GROUP_PRECISION;
        *axis = CDSE_AXIS_PRECISION;
        return "precision";
    default:
        return NULL;
    }
}

/* Whether every configuration of system `s` draws power: its gpu_power, or every value of a
 * gpu_power hardware axis on it (the axis replaces the profile's value), or a pool. */
static bool system_powered(const cdse_job *job, int s)
{
    const cdse_system *sys = &job->system[s];
    bool powered = sys->cost.gpu_power_w > 0.0;
    for (int h = 0; h < job->n_hw_axes; h++) {
        const cdse_hw_axis *a = &job->hw_axis[h];
        if (a->system != s || a->key != CDSE_HW_GPU_POWER)
            continue;
        powered = true;
        for (int v = 0; v < a->n; v++)
            powered &= a->value[v] > 0.0;
    }
    return powered || sys->pool.n_types > 0;
}

bool cdse_pareto_cost_note(const cdse_job *job, char *note, size_t size)
{
    bool priced = false, powered = true; /* over the systems of the systems axis */
    for (int i = 0; i < job->space.n[CDSE_AXIS_SYSTEM]; i++) {
        const cdse_system *s = &job->system[job->space.value[CDSE_AXIS_SYSTEM][i]];
        priced |= system_priced(job, (int)(s - job->system));
        powered &= system_powered(job, (int)(s - job->system));
    }
    const char *ungrouped = ungrouped_field(job);
    int bit = 0, axis = 0;
    const char *needs = metric_needs(job, &bit, &axis);
    if (!(job->objective.tokens > 0.0)) {
        snprintf(note, size, "empty: no token budget (objective.tokens), so no cost to train");
    } else if (!priced) {
        snprintf(note, size,
                 "empty: no system has a price (cost.gpu_price, cost.rental_price, "
                 "network[].port_price, or cost.gpu_power with objective.electricity_price)");
    } else if (ungrouped != NULL) {
        snprintf(note, size,
                 "empty: objective.group_by lacks \"%s\", so a group's best stands for "
                 "configurations of different costs per day and the front of the groups' bests "
                 "would not be the front of all configurations",
                 ungrouped);
    } else if (needs != NULL && !(job->objective.group_by & bit) && job->space.n[axis] > 1) {
        snprintf(note, size,
                 "empty: objective.metric = \"%s\" ranks a group's configurations unlike time to "
                 "train unless \"%s\" is in objective.group_by (or has one value)",
                 cdse_metric_name(job->objective.metric), needs);
    } else if ((job->objective.metric == CDSE_METRIC_ENERGY_TO_TRAIN ||
                job->objective.metric == CDSE_METRIC_TOKENS_PER_KWH) &&
               !powered) {
        snprintf(note, size,
                 "empty: objective.metric = \"%s\" needs cost.gpu_power on every system to rank "
                 "a group's configurations as time to train does",
                 cdse_metric_name(job->objective.metric));
    } else {
        snprintf(note, size,
                 "per model, the best configuration of each group not beaten on both "
                 "time_to_train_days and cost_to_train (%s); rows by model, then cost ascending",
                 job->objective.currency);
        return true;
    }
    return false;
}
