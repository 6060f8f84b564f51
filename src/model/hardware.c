/* Hardware profiles: efficiency tables and validity of a system description. */
#include "clusterdse/model/hardware.h"

#include <math.h>
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

static const char *const hw_columns[CDSE_HW_COUNT] = {
    [CDSE_HW_PEAK_BF16] = "peak_bf16_tflops",
    [CDSE_HW_PEAK_FP8] = "peak_fp8_tflops",
    [CDSE_HW_HBM_GIB] = "hbm_gib",
    [CDSE_HW_HBM_BANDWIDTH] = "hbm_bandwidth_gbs",
    [CDSE_HW_GPUS_PER_NODE] = "gpus_per_node",
    [CDSE_HW_NET0_BANDWIDTH] = "net0_bandwidth_gbs",
    [CDSE_HW_NET0_LATENCY] = "net0_latency_us",
    [CDSE_HW_NET0_SIZE] = "net0_size",
    [CDSE_HW_NET1_BANDWIDTH] = "net1_bandwidth_gbs",
    [CDSE_HW_NET1_LATENCY] = "net1_latency_us",
    [CDSE_HW_NET1_SIZE] = "net1_size",
    [CDSE_HW_TIER_CAPACITY] = "tier_capacity_gib",
    [CDSE_HW_TIER_BANDWIDTH] = "tier_bandwidth_gbs",
    [CDSE_HW_GPU_PRICE] = "gpu_price",
    [CDSE_HW_RENTAL_PRICE] = "rental_price",
    [CDSE_HW_GPU_POWER] = "gpu_power_w",
    [CDSE_HW_STORAGE_WRITE] = "storage_write_gbs",
    [CDSE_HW_GPU_FAILURES] = "gpu_failures",
    [CDSE_HW_NODE_FAILURES] = "node_failures",
};

const char *cdse_hw_column(int key)
{
    return key >= 0 && key < CDSE_HW_COUNT ? hw_columns[key] : "?";
}

/* The network level of a NET key, else -1; *field = 0 bandwidth, 1 latency, 2 size. */
static int hw_level(int key, int *field)
{
    if (key < CDSE_HW_NET0_BANDWIDTH || key > CDSE_HW_NET1_SIZE)
        return -1;
    *field = (key - CDSE_HW_NET0_BANDWIDTH) % 3;
    return (key - CDSE_HW_NET0_BANDWIDTH) / 3;
}

static double *hw_level_field(cdse_net_level *level, int field)
{
    return field == 0 ? &level->bandwidth_gbs : &level->latency_us;
}

double cdse_hw_get(const cdse_system *system, int key)
{
    int field = 0, level = hw_level(key, &field);
    if (level >= 0) {
        if (level >= system->n_levels)
            return 0.0;
        const cdse_net_level *l = &system->level[level];
        return field == 0 ? l->bandwidth_gbs : field == 1 ? l->latency_us : (double)l->size;
    }
    switch (key) {
    case CDSE_HW_PEAK_BF16:
        return system->peak_tflops[CDSE_BF16];
    case CDSE_HW_PEAK_FP8:
        return system->peak_tflops[CDSE_FP8];
    case CDSE_HW_HBM_GIB:
        return system->hbm_gib;
    case CDSE_HW_HBM_BANDWIDTH:
        return system->hbm_bandwidth_gbs;
    case CDSE_HW_GPUS_PER_NODE:
        return (double)system->gpus_per_node;
    case CDSE_HW_TIER_CAPACITY:
        return system->tier.attach != CDSE_TIER_NONE ? system->tier.capacity_gib : 0.0;
    case CDSE_HW_TIER_BANDWIDTH:
        return system->tier.attach != CDSE_TIER_NONE ? system->tier.bandwidth_gbs : 0.0;
    case CDSE_HW_GPU_PRICE:
        return system->cost.gpu_price;
    case CDSE_HW_RENTAL_PRICE:
        return system->cost.rental_price;
    case CDSE_HW_GPU_POWER:
        return system->cost.gpu_power_w;
    case CDSE_HW_STORAGE_WRITE:
        return system->storage.write_gbs;
    case CDSE_HW_GPU_FAILURES:
        return system->reliability.gpu_failures;
    case CDSE_HW_NODE_FAILURES:
        return system->reliability.node_failures;
    default:
        return 0.0;
    }
}

void cdse_hw_set(cdse_system *system, int key, double value)
{
    int field = 0, level = hw_level(key, &field);
    if (level >= 0) {
        if (level >= system->n_levels)
            return;
        cdse_net_level *l = &system->level[level];
        if (field == 2)
            l->size = (int)lround(value);
        else
            *hw_level_field(l, field) = value;
        return;
    }
    switch (key) {
    case CDSE_HW_PEAK_BF16:
        system->peak_tflops[CDSE_BF16] = value;
        break;
    case CDSE_HW_PEAK_FP8:
        system->peak_tflops[CDSE_FP8] = value;
        break;
    case CDSE_HW_HBM_GIB:
        system->hbm_gib = value;
        break;
    case CDSE_HW_HBM_BANDWIDTH:
        system->hbm_bandwidth_gbs = value;
        break;
    case CDSE_HW_GPUS_PER_NODE:
        /* A per-node tier is shared by the node's GPUs (the profile default of shared_by). */
        if (system->tier.attach == CDSE_TIER_PER_NODE &&
            system->tier.shared_by == system->gpus_per_node)
            system->tier.shared_by = (int)lround(value);
        system->gpus_per_node = (int)lround(value);
        break;
    case CDSE_HW_TIER_CAPACITY:
        system->tier.capacity_gib = value;
        break;
    case CDSE_HW_TIER_BANDWIDTH:
        system->tier.bandwidth_gbs = value;
        break;
    case CDSE_HW_GPU_PRICE:
        system->cost.gpu_price = value;
        break;
    case CDSE_HW_RENTAL_PRICE:
        system->cost.rental_price = value;
        break;
    case CDSE_HW_GPU_POWER:
        system->cost.gpu_power_w = value;
        break;
    case CDSE_HW_STORAGE_WRITE:
        system->storage.write_gbs = value;
        break;
    case CDSE_HW_GPU_FAILURES:
        system->reliability.gpu_failures = value;
        break;
    case CDSE_HW_NODE_FAILURES:
        system->reliability.node_failures = value;
        break;
    default:
        break;
    }
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
