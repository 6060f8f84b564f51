/* The design space: axes in mixed radix; index <-> configuration. Never materialized. */
#ifndef CLUSTERDSE_SPACE_H
#define CLUSTERDSE_SPACE_H

#include "clusterdse/model/axes.h"
#include "clusterdse/model/strategy.h"

/* Axis order (the digit positions of the mixed radix; the first axis varies slowest): model,
 * system, the hardware axes and gpus come first so that index ranges group configurations of
 * one model on one hardware design and system size together. Unused hardware axes have one
 * value and leave every index unchanged. The strategy axes are the rows of CDSE_AXES (axes.h),
 * each at its POS; the axes appended after the stack keep the indices of jobs without them. */
#define CDSE_AXIS_ENUM_(ID, POS, ...) CDSE_AXIS_##ID = POS,
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
    CDSE_AXIS_STACK = 30, /* index into job->stack[]; -1 = the system's default stack */
    CDSE_AXES(CDSE_AXIS_ENUM_)
    /* The model, system, hardware and stack axes, and the strategy axes. */
    CDSE_AXIS_COUNT = CDSE_AXIS_HW7 + 2 + CDSE_STRATEGY_AXES
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
    /* Per entry of varying: floor((2^64 - 1) / n) + 1, with which cdse_space_decode divides
     * indices below 2^32 by a multiplication; filled by cdse_space_finish. */
    uint64_t divide_magic[CDSE_AXIS_COUNT];
} cdse_space;

/* Job-file key of an axis under `space` ("models" and "systems" for the first two). */
const char *cdse_axis_name(int axis);

/* What the rows of CDSE_AXES say about an axis, for the readers that go over every axis (the
 * dry run, the human table). Model, system, the hardware axes and the stack: key only. */
typedef enum cdse_axis_kind {
    CDSE_AXIS_KIND_OTHER = 0, /* model, system, a hardware axis, the stack */
    CDSE_AXIS_KIND_INT,
    CDSE_AXIS_KIND_GPUS,
    CDSE_AXIS_KIND_BOOL,
    CDSE_AXIS_KIND_ENUM,
    CDSE_AXIS_KIND_MASK,
} cdse_axis_kind;
typedef struct cdse_axis_info {
    const char *key;
    int kind;                /* cdse_axis_kind */
    const cdse_names *names; /* ENUM, MASK: the names of the codes */
    const char *label;       /* the human table's short label, NULL: the key */
    int column;              /* position in the column table; -1 for the other axes */
} cdse_axis_info;
/* `axis`'s row (axis in [0, CDSE_AXIS_COUNT)). */
const cdse_axis_info *cdse_axis_info_of(int axis);
/* The text of value `value` of a strategy axis ("selective", "true", "4"); NULL for the other
 * axes, whose values index the job's models, systems, hardware values or stacks. */
const char *cdse_axis_value_text(int axis, int64_t value, char *buf, size_t size);

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
