/* Which axes the lower bound of cdse_time_floor (perf*.c) takes as given. */
#include "clusterdse/model/bound.h"

bool cdse_bound_axis_kept(int axis, int flags)
{
    switch (axis) {
    case CDSE_AXIS_RECOMPUTE_MODULES:
    case CDSE_AXIS_TP_COMM_OVERLAP:
    case CDSE_AXIS_MOE_DISPATCHER:
    case CDSE_AXIS_MOE_OVERLAP:
        return false;
    case CDSE_AXIS_RECOMPUTE:
    case CDSE_AXIS_RECOMPUTE_LAYERS:
        return !(flags & CDSE_FLOOR_ANY_RECOMPUTE);
    case CDSE_AXIS_ZERO:
    case CDSE_AXIS_OFFLOAD:
    case CDSE_AXIS_OFFLOAD_LAYERS:
        return !(flags & CDSE_FLOOR_ANY_STATE);
    default:
        return true;
    }
}
