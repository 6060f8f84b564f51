/* Hardware profiles: efficiency tables and validity of a system description. */
#include "clusterdse/model/hardware.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* log10 through a per-thread memo of its last results, a direct-mapped table indexed by a hash
 * of the argument's bits: the evaluator looks up the same few table points and GEMM sizes for
 * configuration after configuration, and a hit (a multiply, a load, a compare) is several times
 * cheaper than libm's log10. A hit returns what log10 returned for the same bits: the results
 * are those of log10 itself. An entry's key 0 (+0.0) is never looked up (the callers' arguments
 * are positive), so the zeroed table starts empty. */
#define LOG10_MEMO_BITS 10

static double log10_memo(double x)
{
    static _Thread_local struct {
        uint64_t bits;
        double log10;
    } memo[1 << LOG10_MEMO_BITS];
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    /* Fibonacci hashing (Knuth, TAOCP vol. 3, Sec. 6.4): the high bits of the product mix the
     * mantissa's high bits, where the GEMM sizes differ, with the exponent. */
    size_t slot = (size_t)((bits * 0x9E3779B97F4A7C15ULL) >> (64 - LOG10_MEMO_BITS));
    if (memo[slot].bits != bits) {
        memo[slot].bits = bits;
        memo[slot].log10 = log10(x);
    }
    return memo[slot].log10;
}

double cdse_eff_lookup(const cdse_eff_table *table, double flops)
{
    if (table->n == 0)
        return 1.0;
    if (flops <= table->flops[0])
        return table->eff[0];
    int last = table->n - 1;
    if (flops >= table->flops[last])
        return table->eff[last];
    int i = 1;
    while (table->flops[i] < flops)
        i++;
    double x0 = log10_memo(table->flops[i - 1]);
    double x1 = log10_memo(table->flops[i]);
    double w = (log10_memo(flops) - x0) / (x1 - x0);
    return table->eff[i - 1] + w * (table->eff[i] - table->eff[i - 1]);
}

static int check_fraction(const char *system, const char *what, double value, cdse_diag *diag)
{
    if (!(value >= CDSE_SYSTEM_MIN_VALUE && value <= 1.0)) {
        cdse_diag_set(diag, "system '%s': %s = %g; allowed: a fraction from 1e-06 to 1", system,
                      what, value);
        return CDSE_EINVAL;
    }
    return CDSE_OK;
}

static int check_table(const char *system, const char *what, const cdse_eff_table *table,
                       cdse_diag *diag)
{
    for (int i = 0; i < table->n; i++) {
        if (!(table->flops[i] > 0.0) || (i > 0 && table->flops[i] <= table->flops[i - 1])) {
            cdse_diag_set(diag,
                          "system '%s': %s point %d: FLOPs %g; allowed: positive and strictly "
                          "increasing",
                          system, what, i + 1, table->flops[i]);
            return CDSE_EINVAL;
        }
        if (check_fraction(system, what, table->eff[i], diag) != CDSE_OK)
            return CDSE_EINVAL;
    }
    return CDSE_OK;
}

static int check_levels(const cdse_system *system, cdse_diag *diag)
{
    if (system->n_levels < 1 || system->n_levels > CDSE_MAX_LEVELS) {
        cdse_diag_set(diag, "system '%s': %d network levels; allowed: 1 to %d", system->name,
                      system->n_levels, CDSE_MAX_LEVELS);
        return CDSE_EINVAL;
    }
    int inner = 1;
    for (int l = 0; l < system->n_levels; l++) {
        const cdse_net_level *level = &system->level[l];
        bool last = l == system->n_levels - 1;
        if (level->size < 0 || (!last && level->size == 0) ||
            (level->size > 0 && (level->size <= inner || level->size % inner != 0))) {
            cdse_diag_set(diag,
                          "system '%s': network level '%s' size = %d; allowed: a multiple of the "
                          "inner level's size %d (0 only for the last level)",
                          system->name, level->name, level->size, inner);
            return CDSE_EINVAL;
        }
        bool fitted_ok = true;
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            fitted_ok &= level->coll_bandwidth_gbs[c] == 0.0 ||
                         level->coll_bandwidth_gbs[c] >= CDSE_SYSTEM_MIN_VALUE;
        if (!(level->bandwidth_gbs >= CDSE_SYSTEM_MIN_VALUE) || level->latency_us < 0.0 ||
            !fitted_ok) {
            cdse_diag_set(diag,
                          "system '%s': network level '%s': bandwidth %g GB/s, latency %g us; "
                          "allowed: bandwidths (fitted ones too) >= 1e-06, latency >= 0",
                          system->name, level->name, level->bandwidth_gbs, level->latency_us);
            return CDSE_EINVAL;
        }
        if (check_fraction(system->name, "network efficiency", level->efficiency, diag))
            return CDSE_EINVAL;
        if (level->size > 0)
            inner = level->size;
    }
    return CDSE_OK;
}

int cdse_system_check(const cdse_system *system, cdse_diag *diag)
{
    if (system->gpus_per_node < 1) {
        cdse_diag_set(diag, "system '%s': gpus_per_node = %d; allowed: a positive integer",
                      system->name, system->gpus_per_node);
        return CDSE_EINVAL;
    }
    bool any_peak = false;
    for (int d = 0; d < CDSE_DTYPE_COUNT; d++) {
        if (system->peak_tflops[d] < 0.0 ||
            (system->peak_tflops[d] > 0.0 && system->peak_tflops[d] < CDSE_SYSTEM_MIN_VALUE)) {
            cdse_diag_set(diag,
                          "system '%s': peak_tflops.%s = %g; allowed: 0 (unsupported) or >= 1e-06",
                          system->name, cdse_dtype_name(d), system->peak_tflops[d]);
            return CDSE_EINVAL;
        }
        any_peak |= system->peak_tflops[d] > 0.0;
    }
    if (!any_peak ||
        !(system->peak_tflops[CDSE_BF16] > 0.0 || system->peak_tflops[CDSE_FP16] > 0.0)) {
        cdse_diag_set(diag, "system '%s': no bf16 or fp16 peak; allowed: peak_tflops.bf16 > 0",
                      system->name);
        return CDSE_EINVAL;
    }
    if (system->gemm_eff.n < 1) {
        cdse_diag_set(diag, "system '%s': gemm_efficiency is empty; allowed: 1 to %d points",
                      system->name, CDSE_MAX_EFF_POINTS);
        return CDSE_EINVAL;
    }
    if (check_table(system->name, "gemm_efficiency", &system->gemm_eff, diag) ||
        check_table(system->name, "gemm_efficiency_fp8", &system->gemm_eff_fp8, diag) ||
        check_fraction(system->name, "attention_efficiency", system->attention_efficiency, diag) ||
        check_fraction(system->name, "hbm_efficiency", system->hbm_efficiency, diag))
        return CDSE_EINVAL;
    if (!(system->hbm_gib >= CDSE_SYSTEM_MIN_VALUE) ||
        !(system->hbm_bandwidth_gbs >= CDSE_SYSTEM_MIN_VALUE) || system->reserved_gib < 0.0 ||
        system->reserved_gib >= system->hbm_gib) {
        cdse_diag_set(diag,
                      "system '%s': hbm_gib %g, hbm_bandwidth %g, reserved_gib %g; allowed: "
                      "capacity and bandwidth >= 1e-06, 0 <= reserved_gib < hbm_gib",
                      system->name, system->hbm_gib, system->hbm_bandwidth_gbs,
                      system->reserved_gib);
        return CDSE_EINVAL;
    }
    const cdse_mem_tier *tier = &system->tier;
    if (tier->attach != CDSE_TIER_NONE && (!(tier->capacity_gib >= CDSE_SYSTEM_MIN_VALUE) ||
                                           !(tier->bandwidth_gbs >= CDSE_SYSTEM_MIN_VALUE) ||
                                           tier->latency_us < 0.0 || tier->shared_by < 1)) {
        cdse_diag_set(diag,
                      "system '%s': memory_tier capacity %g GiB, bandwidth %g GB/s, latency %g "
                      "us, shared_by %d; allowed: capacity and bandwidth >= 1e-06, sharing >= 1",
                      system->name, tier->capacity_gib, tier->bandwidth_gbs, tier->latency_us,
                      tier->shared_by);
        return CDSE_EINVAL;
    }
    return check_levels(system, diag);
}

/* ---- sweepable hardware keys ------------------------------------------------------------- */

#define HW_INFO_(ID, GROUP, LEVEL, NAME, FIELD, WHEN, INT, MIN, MIN_OPEN, MAX, COLUMN, POS, UNIT,  \
                 HELP)                                                                             \
    [CDSE_HW_##ID] = {.group = GROUP,                                                              \
                      .level = LEVEL,                                                              \
                      .name = NAME,                                                                \
                      .offset = offsetof(cdse_system, FIELD),                                      \
                      .when = CDSE_HW_WHEN_##WHEN,                                                 \
                      .integer = INT != 0,                                                         \
                      .min = MIN,                                                                  \
                      .min_open = MIN_OPEN != 0,                                                   \
                      .max = MAX,                                                                  \
                      .column = COLUMN,                                                            \
                      .position = POS,                                                             \
                      .help = HELP},
const cdse_hw_info cdse_hw_keys[CDSE_HW_COUNT] = {CDSE_HW_KEYS(HW_INFO_)};

/* A row's INT says how its field is read and written: it must be the field's type. */
#define HW_FIELD_TYPE_(ID, GROUP, LEVEL, NAME, FIELD, WHEN, INT, MIN, MIN_OPEN, MAX, COLUMN, POS,  \
                       UNIT, HELP)                                                                 \
    _Static_assert(sizeof(((cdse_system *)0)->FIELD) == ((INT) ? sizeof(int) : sizeof(double)),    \
                   "CDSE_HW_KEYS row " #ID ": INT does not match the field's type");
CDSE_HW_KEYS(HW_FIELD_TYPE_)

const char *cdse_hw_column(int key)
{
    return key >= 0 && key < CDSE_HW_COUNT ? cdse_hw_keys[key].column : "?";
}

/* Whether the field of `info` exists in `system`: a network level it has, a memory tier. */
static bool hw_present(const cdse_system *system, const cdse_hw_info *info, bool reading)
{
    if (info->when == CDSE_HW_WHEN_LEVEL)
        return info->level < system->n_levels;
    if (info->when == CDSE_HW_WHEN_TIER && reading)
        return system->tier.attach != CDSE_TIER_NONE;
    return true;
}

double cdse_hw_get(const cdse_system *system, int key)
{
    if (key < 0 || key >= CDSE_HW_COUNT)
        return 0.0;
    const cdse_hw_info *info = &cdse_hw_keys[key];
    if (!hw_present(system, info, true))
        return 0.0;
    const char *field = (const char *)system + info->offset;
    return info->integer ? (double)*(const int *)field : *(const double *)field;
}

void cdse_hw_set(cdse_system *system, int key, double value)
{
    if (key < 0 || key >= CDSE_HW_COUNT)
        return;
    const cdse_hw_info *info = &cdse_hw_keys[key];
    if (!hw_present(system, info, false))
        return;
    /* A per-node tier is shared by the node's GPUs (the profile default of shared_by). */
    if (key == CDSE_HW_GPUS_PER_NODE && system->tier.attach == CDSE_TIER_PER_NODE &&
        system->tier.shared_by == system->gpus_per_node)
        system->tier.shared_by = (int)lround(value);
    char *field = (char *)system + info->offset;
    if (info->integer)
        *(int *)field = (int)lround(value);
    else
        *(double *)field = value;
}

void cdse_hw_values(const cdse_system *system, double value[CDSE_HW_COUNT])
{
    for (int k = 0; k < CDSE_HW_COUNT; k++)
        value[k] = cdse_hw_get(system, k);
}

const char *cdse_gpu_generation(const char *gpu)
{
    if (strncmp(gpu, "GB", 2) == 0 || strncmp(gpu, "B", 1) == 0)
        return "blackwell";
    if (strncmp(gpu, "H", 1) == 0)
        return "hopper";
    if (strncmp(gpu, "A", 1) == 0)
        return "ampere";
    if (strncmp(gpu, "MI3", 3) == 0)
        return "cdna3";
    return "other";
}
