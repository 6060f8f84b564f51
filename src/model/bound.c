/* Which axes the lower bound of cdse_time_floor (perf*.c) takes as given: each axis's PRUNE
 * (axes.h). */
#include "clusterdse/model/bound.h"

#define PRUNE_KEPT(flags)      true
#define PRUNE_FREE(flags)      false
#define PRUNE_RECOMPUTE(flags) !((flags)&CDSE_FLOOR_ANY_RECOMPUTE)
#define PRUNE_STATE(flags)     !((flags)&CDSE_FLOOR_ANY_STATE)
#define AXIS_KEPT_(ID, POS, KIND, KEY, FIELD, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, NAMES,       \
                   COLUMN, UNIT, LABEL, PRUNE, ...)                                                \
    case CDSE_AXIS_##ID:                                                                           \
        return PRUNE_##PRUNE(flags);

bool cdse_bound_axis_kept(int axis, int flags)
{
    switch (axis) {
        CDSE_AXES(AXIS_KEPT_)
    default: /* model, system, the hardware axes and the stack */
        return true;
    }
}
