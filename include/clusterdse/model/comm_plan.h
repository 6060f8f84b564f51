/* The communication plan: one training iteration's collectives as data. The evaluator
 * (perf.c) describes the iteration's communication as a plan and costs that plan; `verify`
 * replays the same plan on sub-communicators of the same sizes and strides. No byte count or
 * stride rule exists outside it. Plain data, no allocation. */
#ifndef CLUSTERDSE_COMM_PLAN_H
#define CLUSTERDSE_COMM_PLAN_H

#include "clusterdse/model/collective.h"

/* Which parallel group a collective runs on. */
typedef enum cdse_comm_group {
    CDSE_GROUP_TP = 0, /* tensor-parallel group */
    CDSE_GROUP_CP,     /* context-parallel ring */
    CDSE_GROUP_EP,     /* expert-parallel token exchange: all-to-alls over ep (and across and
                          inside NVLink domains with deepep), all-gather / reduce-scatter over
                          etp (MoE parallel folding) */
    CDSE_GROUP_PP,     /* pipeline stages */
    CDSE_GROUP_DP,     /* ranks holding the same dense weights (dp x cp) */
    CDSE_GROUP_EDP,    /* ranks holding the same experts (the folded expert data-parallel group) */
    CDSE_GROUP_COUNT
} cdse_comm_group;

const char *cdse_comm_group_name(int group); /* "tp", "cp", "ep", "pp", "dp", "edp" */

/* One collective of the iteration: `calls` calls per iteration on the slowest pipeline stage,
 * each moving `bytes` (payload per rank as collective.h counts it) over a group of `size` ranks
 * `stride` apart, placed on the network levels as `span` says. */
typedef struct cdse_comm_op {
    int group;  /* cdse_comm_group */
    int coll;   /* cdse_coll */
    int size;   /* ranks in the group */
    int stride; /* ranks between consecutive members (from the placement) */
    cdse_span span;
    double bytes;
    double calls;
    double time_s; /* one call: cdse_coll_time(system, coll, &span, bytes) */
    /* Share of calls x time_s on the critical path after overlap (including the slowdown that
     * hidden communication inflicts on computation): the group's exposed time (t_*_comm_s of
     * the result) over the group's calls x time_s, the same for every op of a group. */
    double exposed_share;
} cdse_comm_op;

/* TP (2 with sequence parallelism), CP, EP, PP, DP (3 with interleaving: the first model chunk
 * apart), expert DP (2): 10; room for more. */
#define CDSE_COMM_PLAN_MAX 16

typedef struct cdse_comm_plan {
    int n;
    cdse_comm_op op[CDSE_COMM_PLAN_MAX];
} cdse_comm_plan;

/* Appends an op for a group of `size` >= 2 ranks `stride` apart on `system`, costs one call
 * and returns that time (time_s). exposed_share is left 0 (cdse_comm_plan_expose sets it).
 * A full plan keeps its ops (CDSE_COMM_PLAN_MAX is above what the evaluator issues) and the
 * time is still returned, so that results never depend on the plan's capacity. */
double cdse_comm_plan_add(cdse_comm_plan *plan, const cdse_system *system, int group, int coll,
                          int size, int stride, double bytes, double calls);

/* Sets exposed_share of every op of `group` so that the group's calls x time_s times its
 * share is `exposed_s`. */
void cdse_comm_plan_expose(cdse_comm_plan *plan, int group, double exposed_s);

#endif
