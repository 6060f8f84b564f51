/* The communication plan (see comm_plan.h). */
#include "clusterdse/model/comm_plan.h"

static const char *const group_names[CDSE_GROUP_COUNT] = {
    [CDSE_GROUP_TP] = "tp", [CDSE_GROUP_CP] = "cp", [CDSE_GROUP_EP] = "ep",
    [CDSE_GROUP_PP] = "pp", [CDSE_GROUP_DP] = "dp", [CDSE_GROUP_EDP] = "edp",
};

const char *cdse_comm_group_name(int group)
{
    if (group < 0 || group >= CDSE_GROUP_COUNT)
        return "?";
    return group_names[group];
}

double cdse_comm_plan_add(cdse_comm_plan *plan, const cdse_system *system, int group, int coll,
                          int size, int stride, double bytes, double calls)
{
    cdse_comm_op spare;
    cdse_comm_op *op = plan->n < CDSE_COMM_PLAN_MAX ? &plan->op[plan->n++] : &spare;
    const cdse_comm_op *prev = op != &spare && op > plan->op ? op - 1 : NULL;
    /* A group's second op (SP's reduce-scatter, ZeRO's all-gather) reuses the first's span. */
    if (prev != NULL && prev->size == size && prev->stride == stride)
        op->span = prev->span;
    else
        cdse_group_span(system, size, stride, &op->span);
    op->group = group;
    op->coll = coll;
    op->size = size;
    op->stride = stride;
    op->bytes = bytes;
    op->calls = calls;
    op->time_s = cdse_coll_time(system, coll, &op->span, bytes);
    op->exposed_share = 0.0;
    return op->time_s;
}

void cdse_comm_plan_expose(cdse_comm_plan *plan, int group, double exposed_s)
{
    double total = 0.0;
    for (int i = 0; i < plan->n; i++)
        if (plan->op[i].group == group)
            total += plan->op[i].calls * plan->op[i].time_s;
    for (int i = 0; i < plan->n; i++)
        if (plan->op[i].group == group)
            plan->op[i].exposed_share = total > 0.0 ? exposed_s / total : 0.0;
}
