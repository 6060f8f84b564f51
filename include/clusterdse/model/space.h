/* The design space: axes in mixed radix; index <-> configuration. Never materialized. */
#ifndef CLUSTERDSE_SPACE_H
#define CLUSTERDSE_SPACE_H

#include "clusterdse/model/strategy.h"

/* Axis order: the first axis varies slowest. Model, system, the hardware axes and gpus come
 * first so that index ranges group configurations of one model on one hardware design and
 * system size together. Unused hardware axes have one value and leave every index unchanged. */
typedef enum cdse_axis {
    CDSE_AXIS_MODEL = 0, /* value = index into job->model[] */
    CDSE_AXIS_SYSTEM,    /* value = index into job->system[] */
    CDSE_AXIS_HW0,       /* hardware axes: value = index into job->hw_axis[h].value[] */
    CDSE_AXIS_HW1,
    CDSE_AXIS_HW2,
    CDSE_AXIS_HW3,
    CDSE_AXIS_HW4,
    CDSE_AXIS_HW5,
    CDSE_AXIS_HW6,
    CDSE_AXIS_HW7,
    CDSE_AXIS_GPUS,
    CDSE_AXIS_TP,
    CDSE_AXIS_PP,
    CDSE_AXIS_CP,
    CDSE_AXIS_EP,
    CDSE_AXIS_VPP,
    CDSE_AXIS_MICROBATCH,
    CDSE_AXIS_GLOBAL_BATCH,
    CDSE_AXIS_RECOMPUTE,         /* cdse_recompute */
    CDSE_AXIS_SEQUENCE_PARALLEL, /* 0/1 */
    CDSE_AXIS_ZERO,
    CDSE_AXIS_PRECISION,         /* cdse_dtype */
    CDSE_AXIS_FLASH_ATTENTION,   /* 0/1 */
    CDSE_AXIS_OFFLOAD,           /* CDSE_OFFLOAD_* mask */
    CDSE_AXIS_TP_COMM_OVERLAP,   /* 0/1 */
    CDSE_AXIS_PLACEMENT,         /* index into cdse_placement_names */
    CDSE_AXIS_ETP,               /* expert tensor-parallel size; 0 = tp */
    CDSE_AXIS_RECOMPUTE_MODULES, /* CDSE_RECOMPUTE_* module mask */
    CDSE_AXIS_MOE_DISPATCHER,    /* cdse_moe_dispatcher */
    CDSE_AXIS_MOE_OVERLAP,       /* cdse_moe_overlap */
    CDSE_AXIS_STACK,             /* index into job->stack[]; -1 = the system's default stack */
    /* Appended last: a job without them keeps every index (one value each). */
    CDSE_AXIS_OFFLOAD_LAYERS,   /* layers per chunk with offloaded activations; 0 = all */
    CDSE_AXIS_RECOMPUTE_LAYERS, /* layers per chunk fully recomputed; 0 = all */
    CDSE_AXIS_COUNT
} cdse_axis;

#define CDSE_AXIS_MAX_VALUES 64
#define CDSE_MAX_HW_AXES     (CDSE_AXIS_HW7 - CDSE_AXIS_HW0 + 1)

typedef struct cdse_space {
    int n[CDSE_AXIS_COUNT];
    int64_t value[CDSE_AXIS_COUNT][CDSE_AXIS_MAX_VALUES];
    uint64_t stride[CDSE_AXIS_COUNT]; /* filled by cdse_space_finish */
    uint64_t size;                    /* product of n; filled by cdse_space_finish */
    /* Axes with more than one value, last axis first (the decoding order); filled by
     * cdse_space_finish. */
    int n_varying;
    int varying[CDSE_AXIS_COUNT];
} cdse_space;

/* Job-file key of an axis under `space` ("models" and "systems" for the first two). */
const char *cdse_axis_name(int axis);

/* Computes strides and size. Returns CDSE_EINVAL if an axis is empty or the size overflows
 * 2^63. */
int cdse_space_finish(cdse_space *space, cdse_diag *diag);

/* index -> digit per axis (0 <= digit[a] < n[a]). */
void cdse_space_decode(const cdse_space *space, uint64_t index, int digit[CDSE_AXIS_COUNT]);
uint64_t cdse_space_encode(const cdse_space *space, const int digit[CDSE_AXIS_COUNT]);

/* Fills the strategy fields from the digits (derived fields are left to cdse_strategy_check). */
void cdse_space_strategy(const cdse_space *space, const int digit[CDSE_AXIS_COUNT],
                         cdse_strategy *strategy);

#endif
