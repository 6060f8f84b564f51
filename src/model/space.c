/* The design space in mixed radix: axis 0 (model) varies slowest, the last axis fastest.
 * index = sum(digit[a] * stride[a]) with stride[last] = 1 and stride[a] = stride[a+1] * n[a+1]. */
#include "clusterdse/model/space.h"

#include <stdio.h>
#include <string.h>

/* The digit positions are 0 .. CDSE_AXIS_COUNT - 1, each once: the rows' POS and the axes before
 * them, as bits of one 64-bit word. */
#define AXIS_BIT_(ID, POS, ...) | (1ULL << (POS))
_Static_assert(CDSE_AXIS_COUNT <= 64, "the position check below needs at most 64 axes");
_Static_assert(((((1ULL << (CDSE_AXIS_HW7 + 1)) - 1) | (1ULL << CDSE_AXIS_STACK))
                    CDSE_AXES(AXIS_BIT_)) ==
                   (CDSE_AXIS_COUNT == 64 ? ~0ULL : (1ULL << CDSE_AXIS_COUNT) - 1),
               "CDSE_AXES: every POS once, no gap (axes.h)");

const int cdse_precision_values[] = {CDSE_BF16, CDSE_FP16, CDSE_FP8};

#define AXIS_INFO_(ID, POS, KIND, KEY, FIELD, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, NAMES,       \
                   COLUMN, UNIT, LABEL, ...)                                                       \
    [CDSE_AXIS_##ID] = {KEY, CDSE_AXIS_KIND_##KIND, NAMES, LABEL, COLUMN},
static const cdse_axis_info axis_info[CDSE_AXIS_COUNT] = {
    [CDSE_AXIS_MODEL] = {"models", 0, NULL, NULL, -1},
    [CDSE_AXIS_SYSTEM] = {"systems", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW0] = {"hw0", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW1] = {"hw1", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW2] = {"hw2", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW3] = {"hw3", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW4] = {"hw4", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW5] = {"hw5", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW6] = {"hw6", 0, NULL, NULL, -1},
    [CDSE_AXIS_HW7] = {"hw7", 0, NULL, NULL, -1},
    [CDSE_AXIS_STACK] = {"stacks", 0, NULL, NULL, -1},
    CDSE_AXES(AXIS_INFO_)};

const cdse_axis_info *cdse_axis_info_of(int axis)
{
    return &axis_info[axis];
}

const char *cdse_axis_value_text(int axis, int64_t value, char *buf, size_t size)
{
    const cdse_axis_info *info = &axis_info[axis];
    switch (info->kind) {
    case CDSE_AXIS_KIND_OTHER:
        return NULL;
    case CDSE_AXIS_KIND_BOOL:
        return value ? "true" : "false";
    case CDSE_AXIS_KIND_ENUM:
    case CDSE_AXIS_KIND_MASK:
        return cdse_names_name(info->names, (int)value);
    default:
        snprintf(buf, size, "%lld", (long long)value);
        return buf;
    }
}

const char *cdse_axis_name(int axis)
{
    if (axis < 0 || axis >= CDSE_AXIS_COUNT)
        return "?";
    return axis_info[axis].key != NULL ? axis_info[axis].key : "?";
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
        if (space->n[a] > 1) {
            space->divide_magic[space->n_varying] = UINT64_MAX / (uint64_t)space->n[a] + 1;
            space->varying[space->n_varying++] = a;
        }
    return CDSE_OK;
}

void cdse_space_decode(const cdse_space *space, uint64_t index, int digit[CDSE_AXIS_COUNT])
{
    /* The sweep's hot path: most axes have one value, and a 64-bit division costs tens of
     * cycles, so only the axes with several values (cdse_space_finish lists them) are divided.
     * Indices below 2^32 are divided by a multiplication: with M = floor((2^64 - 1) / n) + 1,
     * the high 64 bits of M x a are floor(a / n) for every a and n below 2^32 (Lemire, Kaser and
     * Kurz, "Faster Remainder by Direct Computation", Software: Practice and Experience 49(6),
     * 2019: their fastdiv with N = 32-bit operands and F = 64): the same digits as the division,
     * several times faster (the chain of 32-bit divisions was most of the decoding's time). */
    cdse_zero(digit, CDSE_AXIS_COUNT * sizeof digit[0]);
    if (index <= UINT32_MAX) {
        uint64_t small = index;
        for (int k = 0; k < space->n_varying; k++) {
            int a = space->varying[k];
            uint64_t n = (uint64_t)space->n[a];
#ifdef __SIZEOF_INT128__
            uint64_t quotient =
                (uint64_t)(((unsigned __int128)space->divide_magic[k] * small) >> 64);
#else
            uint64_t quotient = small / n;
#endif
            digit[a] = (int)(small - quotient * n);
            small = quotient;
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
#define AXIS_VALUE(axis)                          (space->value[axis][digit[axis]])
#define SET_INT(field, v)                         strategy->field = (int)(v);
#define SET_GPUS(field, v)                        strategy->field = (int)(v);
#define SET_ENUM(field, v)                        strategy->field = (int)(v);
#define SET_MASK(field, v)                        strategy->field = (int)(v);
#define SET_BOOL(field, v)                        strategy->field = (v) != 0;
#define AXIS_SET_(ID, POS, KIND, KEY, FIELD, ...) SET_##KIND(FIELD, AXIS_VALUE(CDSE_AXIS_##ID))
    *strategy = (cdse_strategy){0};
    CDSE_AXES(AXIS_SET_)
#undef AXIS_SET_
#undef AXIS_VALUE
    strategy->dp = 0;
    strategy->grad_accum = 0;
}
