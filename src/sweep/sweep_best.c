/* The sweep's best-so-far (top-K per group, the best per (model, gpus) for the Pareto fronts) and
 * the index ranges still to do. */
#define _POSIX_C_SOURCE 200809L
#include "sweep_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
