/* The design space in mixed radix: axis 0 (model) varies slowest, the last axis fastest.
 * index = sum(digit[a] * stride[a]) with stride[last] = 1 and stride[a] = stride[a+1] * n[a+1]. */
#include "clusterdse/model/space.h"

#include <string.h>

static const char *const axis_names[CDSE_AXIS_COUNT] = {
    [CDSE_AXIS_MODEL] = "models",
    [CDSE_AXIS_SYSTEM] = "systems",
    [CDSE_AXIS_HW0] = "hw0",
    [CDSE_AXIS_HW1] = "hw1",
    [CDSE_AXIS_HW2] = "hw2",
    [CDSE_AXIS_HW3] = "hw3",
    [CDSE_AXIS_HW4] = "hw4",
    [CDSE_AXIS_HW5] = "hw5",
    [CDSE_AXIS_HW6] = "hw6",
    [CDSE_AXIS_HW7] = "hw7",
    [CDSE_AXIS_GPUS] = "gpus",
    [CDSE_AXIS_TP] = "tp",
    [CDSE_AXIS_PP] = "pp",
    [CDSE_AXIS_CP] = "cp",
    [CDSE_AXIS_EP] = "ep",
    [CDSE_AXIS_VPP] = "vpp",
    [CDSE_AXIS_MICROBATCH] = "microbatch",
    [CDSE_AXIS_GLOBAL_BATCH] = "global_batch",
    [CDSE_AXIS_RECOMPUTE] = "recompute",
    [CDSE_AXIS_SEQUENCE_PARALLEL] = "sequence_parallel",
    [CDSE_AXIS_ZERO] = "zero",
    [CDSE_AXIS_PRECISION] = "precision",
    [CDSE_AXIS_FLASH_ATTENTION] = "flash_attention",
    [CDSE_AXIS_OFFLOAD] = "offload",
    [CDSE_AXIS_TP_COMM_OVERLAP] = "tp_comm_overlap",
    [CDSE_AXIS_PLACEMENT] = "placement",
    [CDSE_AXIS_ETP] = "etp",
    [CDSE_AXIS_RECOMPUTE_MODULES] = "recompute_modules",
    [CDSE_AXIS_MOE_DISPATCHER] = "moe_dispatcher",
    [CDSE_AXIS_MOE_OVERLAP] = "moe_overlap",
    [CDSE_AXIS_STACK] = "stacks",
    [CDSE_AXIS_OFFLOAD_LAYERS] = "offload_layers",
    [CDSE_AXIS_RECOMPUTE_LAYERS] = "recompute_layers",
};

const char *cdse_axis_name(int axis)
{
    if (axis < 0 || axis >= CDSE_AXIS_COUNT)
        return "?";
    return axis_names[axis] != NULL ? axis_names[axis] : "?";
}

/* Space sizes stay below 2^63 so that indices fit a signed 64-bit integer (HDF5, Python). */
#define SPACE_SIZE_LIMIT ((uint64_t)1 << 63)

int cdse_space_finish(cdse_space *space, cdse_diag *diag)
{
    uint64_t size = 1;
    for (int a = CDSE_AXIS_COUNT - 1; a >= 0; a--) {
        int n = space->n[a];
        if (n < 1 || n > CDSE_AXIS_MAX_VALUES) {
            cdse_diag_set(diag, "axis '%s' has %d values; allowed: 1 to %d", cdse_axis_name(a), n,
                          CDSE_AXIS_MAX_VALUES);
            return CDSE_EINVAL;
        }
        space->stride[a] = size;
        /* size * n must stay strictly below 2^63. */
        if (size > (SPACE_SIZE_LIMIT - 1) / (uint64_t)n) {
            cdse_diag_set(diag,
                          "the space has 2^63 configurations or more (overflow at axis '%s'); "
                          "allowed: a product of axis lengths below 2^63",
                          cdse_axis_name(a));
            return CDSE_EINVAL;
        }
        size *= (uint64_t)n;
    }
    space->size = size;
    space->n_varying = 0;
    for (int a = CDSE_AXIS_COUNT - 1; a >= 0; a--)
        if (space->n[a] > 1)
            space->varying[space->n_varying++] = a;
    return CDSE_OK;
}

void cdse_space_decode(const cdse_space *space, uint64_t index, int digit[CDSE_AXIS_COUNT])
{
    /* The sweep's hot path: most axes have one value, and a 64-bit division costs tens of
     * cycles, so only the axes with several values (cdse_space_finish lists them) are divided,
     * and indices below 2^32 use 32-bit divisions (several times cheaper on x86-64). */
    memset(digit, 0, CDSE_AXIS_COUNT * sizeof digit[0]);
    if (index <= UINT32_MAX) {
        uint32_t small = (uint32_t)index;
        for (int k = 0; k < space->n_varying; k++) {
            int a = space->varying[k];
            uint32_t n = (uint32_t)space->n[a];
            digit[a] = (int)(small % n);
            small /= n;
        }
        return;
    }
    for (int k = 0; k < space->n_varying; k++) {
        int a = space->varying[k];
        uint64_t n = (uint64_t)space->n[a];
        digit[a] = (int)(index % n);
        index /= n;
    }
}

uint64_t cdse_space_encode(const cdse_space *space, const int digit[CDSE_AXIS_COUNT])
{
    uint64_t index = 0;
    for (int a = 0; a < CDSE_AXIS_COUNT; a++)
        index += (uint64_t)digit[a] * space->stride[a];
    return index;
}

void cdse_space_strategy(const cdse_space *space, const int digit[CDSE_AXIS_COUNT],
                         cdse_strategy *strategy)
{
#define AXIS_VALUE(axis) (space->value[axis][digit[axis]])
    *strategy = (cdse_strategy){0};
    strategy->gpus = (int)AXIS_VALUE(CDSE_AXIS_GPUS);
    strategy->tp = (int)AXIS_VALUE(CDSE_AXIS_TP);
    strategy->pp = (int)AXIS_VALUE(CDSE_AXIS_PP);
    strategy->cp = (int)AXIS_VALUE(CDSE_AXIS_CP);
    strategy->ep = (int)AXIS_VALUE(CDSE_AXIS_EP);
    strategy->vpp = (int)AXIS_VALUE(CDSE_AXIS_VPP);
    strategy->microbatch = (int)AXIS_VALUE(CDSE_AXIS_MICROBATCH);
    strategy->global_batch = (int)AXIS_VALUE(CDSE_AXIS_GLOBAL_BATCH);
    strategy->recompute = (int)AXIS_VALUE(CDSE_AXIS_RECOMPUTE);
    strategy->sequence_parallel = AXIS_VALUE(CDSE_AXIS_SEQUENCE_PARALLEL) != 0;
    strategy->zero = (int)AXIS_VALUE(CDSE_AXIS_ZERO);
    strategy->precision = (int)AXIS_VALUE(CDSE_AXIS_PRECISION);
    strategy->flash_attention = AXIS_VALUE(CDSE_AXIS_FLASH_ATTENTION) != 0;
    strategy->offload = (int)AXIS_VALUE(CDSE_AXIS_OFFLOAD);
    strategy->tp_comm_overlap = AXIS_VALUE(CDSE_AXIS_TP_COMM_OVERLAP) != 0;
    strategy->placement = (int)AXIS_VALUE(CDSE_AXIS_PLACEMENT);
    strategy->etp = (int)AXIS_VALUE(CDSE_AXIS_ETP);
    strategy->recompute_modules = (int)AXIS_VALUE(CDSE_AXIS_RECOMPUTE_MODULES);
    strategy->moe_dispatcher = (int)AXIS_VALUE(CDSE_AXIS_MOE_DISPATCHER);
    strategy->moe_overlap = (int)AXIS_VALUE(CDSE_AXIS_MOE_OVERLAP);
    strategy->offload_layers = (int)AXIS_VALUE(CDSE_AXIS_OFFLOAD_LAYERS);
    strategy->recompute_layers = (int)AXIS_VALUE(CDSE_AXIS_RECOMPUTE_LAYERS);
#undef AXIS_VALUE
    strategy->dp = 0;
    strategy->grad_accum = 0;
}
