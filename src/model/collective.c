/* Collective costs on groups placed over hierarchical network levels (alpha-beta per level).
 *
 * Model (Thakur et al. 2005, "Optimization of Collective Communication Operations in MPICH";
 * NCCL's ring algorithms as described in the nccl-tests PERFORMANCE.md): a ring over n ranks
 * moves (n-1)/n of the buffer per rank for reduce-scatter and all-gather and 2(n-1)/n for
 * all-reduce, in n-1 (resp. 2(n-1)) latency-bound steps. A group spanning several levels runs
 * hierarchically, innermost level first: reduce-scatter inside, the outer level on 1/f of the
 * data, all-gather inside; so level l carries the buffer divided by the group members below it. */
#include "clusterdse/model/collective.h"

static double level_domain(const cdse_system *system, int level)
{
    int size = system->level[level].size;
    return size > 0 ? (double)size : 1e300;
}

/* The largest divisor of `size` that is a multiple of `below` and at most `fit`: a group that
 * does not fill its domains evenly (12 ranks on 8-GPU nodes) is costed as an even split
 * (6 + 6) so that the factors still multiply to the group size. */
static int members_inside(int size, int below, double fit)
{
    int best = below;
    for (int d = below; d <= size && d <= fit; d += below)
        if (size % d == 0)
            best = d;
    return best;
}

void cdse_group_span(const cdse_system *system, int size, int stride, cdse_span *span)
{
    span->n_levels = system->n_levels;
    int below = 1; /* members of the group inside one domain of the previous level */
    for (int l = 0; l < system->n_levels; l++) {
        int inside = size;
        if (l < system->n_levels - 1)
            inside = members_inside(size, below, level_domain(system, l) / stride);
        span->factor[l] = inside / below;
        below = inside;
    }
    for (int l = system->n_levels; l < CDSE_MAX_LEVELS; l++)
        span->factor[l] = 1;
}

double cdse_level_bandwidth(const cdse_system *system, int level, int coll)
{
    const cdse_net_level *lv = &system->level[level];
    if (lv->coll_bandwidth_gbs[coll] > 0.0)
        return lv->coll_bandwidth_gbs[coll] * 1e9;
    return lv->bandwidth_gbs * lv->efficiency * 1e9;
}

double cdse_level_latency(const cdse_system *system, int level, int coll)
{
    const cdse_net_level *lv = &system->level[level];
    if (lv->coll_latency_us[coll] > 0.0)
        return lv->coll_latency_us[coll] * 1e-6;
    return lv->latency_us * 1e-6;
}

/* A ring phase repeated `passes` times (1 for reduce-scatter / all-gather, 2 for all-reduce). */
static double hierarchical_ring(const cdse_system *system, const cdse_span *span, double bytes,
                                int coll, double passes)
{
    double time = 0.0;
    for (int l = 0; l < span->n_levels; l++) {
        int f = span->factor[l];
        if (f <= 1)
            continue;
        time += passes * ((double)(f - 1) / f * bytes / cdse_level_bandwidth(system, l, coll) +
                          (f - 1) * cdse_level_latency(system, l, coll));
        bytes /= f;
    }
    return time;
}

double cdse_allreduce_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    return hierarchical_ring(system, span, bytes, CDSE_COLL_ALLREDUCE, 2.0);
}

double cdse_allgather_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    return hierarchical_ring(system, span, bytes, CDSE_COLL_ALLGATHER, 1.0);
}

double cdse_reduce_scatter_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    return hierarchical_ring(system, span, bytes, CDSE_COLL_REDUCE_SCATTER, 1.0);
}

/* Pairwise exchange: of the (n-1)/n of the buffer that leaves a rank, the share addressed to
 * peers first reached at level l crosses level l's links. Levels are used one after the other
 * (a conservative sum: the inter-node share dominates in practice). */
double cdse_alltoall_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    int n = 1;
    for (int l = 0; l < span->n_levels; l++)
        n *= span->factor[l];
    if (n <= 1)
        return 0.0;
    double time = 0.0;
    int below = 1;
    for (int l = 0; l < span->n_levels; l++) {
        int f = span->factor[l];
        if (f <= 1)
            continue;
        int inside = below * f;
        double share = (double)(inside - below) / n;
        time += share * bytes / cdse_level_bandwidth(system, l, CDSE_COLL_ALLTOALL) +
                (f - 1) * cdse_level_latency(system, l, CDSE_COLL_ALLTOALL);
        below = inside;
    }
    return time;
}

double cdse_group_p2p_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    int outer = 0;
    for (int l = 0; l < span->n_levels; l++)
        if (span->factor[l] > 1)
            outer = l;
    return bytes / cdse_level_bandwidth(system, outer, CDSE_COLL_SENDRECV) +
           cdse_level_latency(system, outer, CDSE_COLL_SENDRECV);
}

/* Ranks r and r + stride share a domain of the first level whose domain is larger than stride
 * (ranks are placed contiguously). */
double cdse_sendrecv_time(const cdse_system *system, int stride, double bytes)
{
    int l = 0;
    while (l < system->n_levels - 1 && level_domain(system, l) <= stride)
        l++;
    return bytes / cdse_level_bandwidth(system, l, CDSE_COLL_SENDRECV) +
           cdse_level_latency(system, l, CDSE_COLL_SENDRECV);
}

double cdse_coll_time(const cdse_system *system, int coll, const cdse_span *span, double bytes)
{
    switch (coll) {
    case CDSE_COLL_ALLREDUCE:
        return cdse_allreduce_time(system, span, bytes);
    case CDSE_COLL_ALLGATHER:
        return cdse_allgather_time(system, span, bytes);
    case CDSE_COLL_REDUCE_SCATTER:
        return cdse_reduce_scatter_time(system, span, bytes);
    case CDSE_COLL_ALLTOALL:
        return cdse_alltoall_time(system, span, bytes);
    default:
        return cdse_group_p2p_time(system, span, bytes);
    }
}
