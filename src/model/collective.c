/* Collective costs on groups placed over hierarchical network levels (alpha-beta per level).
 *
 * Model (Thakur et al. 2005, "Optimization of Collective Communication Operations in MPICH";
 * NCCL's ring algorithms as described in the nccl-tests PERFORMANCE.md): a ring over n ranks
 * moves (n-1)/n of the buffer per rank for reduce-scatter and all-gather and 2(n-1)/n for
 * all-reduce, in n-1 (resp. 2(n-1)) latency-bound steps. A group spanning several levels runs
 * hierarchically, innermost level first: reduce-scatter inside, the outer level on 1/f of the
 * data, all-gather inside; so level l carries the buffer divided by the group members below it. */
#include "clusterdse/model/collective.h"

#include <string.h>

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
    /* A fit (`clusterdse fit`) gives both figures, and its latency may be 0 (a least-median
     * candidate through the origin): a fitted bandwidth marks the latency as fitted too. */
    if (lv->coll_latency_us[coll] > 0.0 || lv->coll_bandwidth_gbs[coll] > 0.0)
        return lv->coll_latency_us[coll] * 1e-6;
    return lv->latency_us * 1e-6;
}

/* Domains of level `l` that a group placed as `span` occupies: its members divided by those
 * inside one such domain. */
static double domains_spanned(const cdse_span *span, int l)
{
    double outer = 1.0;
    for (int k = l + 1; k < span->n_levels; k++)
        outer *= span->factor[k];
    return outer;
}

/* A ring phase repeated the collective's `passes` times (1 for reduce-scatter / all-gather, 2
 * for all-reduce). `flat`: one ring through every member, as NCCL runs all-gather and
 * reduce-scatter (ring only; NVIDIA/nccl src/graph/tuning.cc at v2.9.9-1, 3fec2fa5eea3: latency
 * = (nRanks - nNodes) intra-node steps + (nNodes - 1) network steps): the group's bytes still
 * cross each level's links once per domain as in the hierarchical form (per-NIC rings), but every
 * member is a step, so level l pays its latency f_l - 1 times in each of its domains. */
static double hierarchical_ring(const cdse_system *system, const cdse_span *span, double bytes,
                                int coll, bool flat)
{
    double passes = cdse_coll_table[coll].passes;
    double time = 0.0;
    for (int l = 0; l < span->n_levels; l++) {
        int f = span->factor[l];
        if (f <= 1)
            continue;
        double steps = (f - 1) * (flat ? domains_spanned(span, l) : 1.0);
        time += passes * ((double)(f - 1) / f * bytes / cdse_level_bandwidth(system, l, coll) +
                          steps * cdse_level_latency(system, l, coll));
        bytes /= f;
    }
    return time;
}

double cdse_allreduce_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    return hierarchical_ring(system, span, bytes, CDSE_COLL_ALLREDUCE, false);
}

double cdse_allgather_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    return hierarchical_ring(system, span, bytes, CDSE_COLL_ALLGATHER, true);
}

double cdse_reduce_scatter_time(const cdse_system *system, const cdse_span *span, double bytes)
{
    return hierarchical_ring(system, span, bytes, CDSE_COLL_REDUCE_SCATTER, true);
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

#define DESCRIPTOR_ROW(coll, name, ...) [coll] = {name, __VA_ARGS__},
#define NAME_ROW(coll, name, ...)       [coll] = name,

const cdse_coll_desc cdse_coll_table[CDSE_COLL_COUNT] = {CDSE_COLLECTIVES(DESCRIPTOR_ROW)};
const char *const cdse_coll_names[CDSE_COLL_COUNT + 1] = {CDSE_COLLECTIVES(NAME_ROW) NULL};

const cdse_coll_desc *cdse_coll_desc_of(int coll)
{
    return coll >= 0 && coll < CDSE_COLL_COUNT ? &cdse_coll_table[coll] : NULL;
}

const char *cdse_coll_name(int coll)
{
    return coll >= 0 && coll < CDSE_COLL_COUNT ? cdse_coll_table[coll].name : "?";
}

int cdse_coll_parse(const char *name)
{
    for (int c = 0; c < CDSE_COLL_COUNT; c++)
        if (strcmp(name, cdse_coll_table[c].name) == 0)
            return c;
    return -1;
}

double cdse_coll_steps(int coll, int n)
{
    const cdse_coll_desc *d = &cdse_coll_table[coll];
    return d->algo == CDSE_ALGO_P2P ? 1.0 : d->passes * (n - 1);
}

double cdse_coll_volume(int coll, int n)
{
    const cdse_coll_desc *d = &cdse_coll_table[coll];
    if (n < 1)
        return 0.0;
    return d->algo == CDSE_ALGO_P2P ? 1.0 : d->passes * (n - 1) / n;
}

double cdse_coll_time(const cdse_system *system, int coll, const cdse_span *span, double bytes)
{
    return cdse_coll_table[coll].time(system, span, bytes);
}
