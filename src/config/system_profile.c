/* System profiles: accelerator, memory tiers, efficiency tables, network levels and fitted
 * collective values (libconfig -> cdse_system), their key tables, checks across keys and the
 * effective-profile printers. On the key-table engine of keys.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/model/collective.h"
#include "keys.h"

/* Room in a section's key table for the keys written below and the hardware keys appended from
 * CDSE_HW_KEYS when the program is loaded (hw_profile_keys): a table's n counts its keys then. */
#define KEY_ROOM 48

static int parse_eff_table(parse_ctx *ctx, const config_setting_t *setting, void *target,
                           const key_spec *key);
static int parse_network(parse_ctx *ctx, const config_setting_t *setting, void *target,
                         const key_spec *key);
static int parse_coll(parse_ctx *ctx, const config_setting_t *setting, void *target,
                      const key_spec *key);
static void print_eff_table(FILE *out, const void *target, const key_spec *key, int indent);
static void print_network(FILE *out, const void *target, const key_spec *key, int indent);
static void print_coll(FILE *out, const void *target, const key_spec *key, int indent);
static int skip_key(parse_ctx *ctx, const config_setting_t *setting, void *target,
                    const key_spec *key)
{
    (void)ctx, (void)setting, (void)target, (void)key;
    return 0;
}

/* One key per data type, in cdse_dtype order: the groups peak_tflops and mfu_ceiling. */
#define DTYPE_KEYS(ROW)                                                                            \
    ROW("fp32", CDSE_FP32), ROW("tf32", CDSE_TF32), ROW("bf16", CDSE_BF16),                        \
        ROW("fp16", CDSE_FP16), ROW("fp8", CDSE_FP8)

static key_spec peak_keys[KEY_ROOM] = {
#define PEAK(key, dtype)                                                                           \
    FLOAT_KEY(cdse_system, key, peak_tflops[dtype], 0, false, 1e7, false, 0, "0",                  \
              "dense " key " peak TFLOP/s per GPU (0 = unsupported)")
    DTYPE_KEYS(PEAK),
#undef PEAK
};
/* Offsets of peak_keys are relative to the system; the group's offset is 0. */
static key_table peak_table = {"systems[].peak_tflops", peak_keys, 0}; /* n: at load (below) */

static key_spec ceiling_keys[KEY_ROOM] = {
#define CEILING(key, dtype)                                                                        \
    FLOAT_KEY(cdse_system, key, mfu_ceiling[dtype], 0, false, 1, false, 0, "0",                    \
              "highest MFU of a published " key " run on this GPU generation (0 = none)")
    DTYPE_KEYS(CEILING),
#undef CEILING
};
static key_table ceiling_table = {"systems[].mfu_ceiling", ceiling_keys,
                                  0}; /* n: at load (below) */

typedef struct coll_fit {
    double latency_us;
    double bandwidth_gbs;
} coll_fit;

static const key_spec coll_keys[] = {
    FLOAT_KEY(coll_fit, "latency", latency_us, 0, false, 1e9, true, 0, "required",
              "fitted latency (us)"),
    FLOAT_KEY(coll_fit, "bandwidth", bandwidth_gbs, 0, true, 1e9, true, 0, "required",
              "fitted effective bus bandwidth (GB/s)"),
};
static const key_table coll_table = {"systems[].network[].<collective>", coll_keys,
                                     (int)(sizeof coll_keys / sizeof coll_keys[0])};

#define COLL_KEY(key, coll)                                                                        \
    {                                                                                              \
        .name = key, .type = KEY_CUSTOM, .parse = parse_coll, .print = print_coll, .arg = coll,    \
        .type_text = "group { latency; bandwidth; }", .def_text = "unset",                         \
        .help = "fitted parameters for " key " (written by clusterdse fit)"                        \
    }

#define COLL_KEY_ROW(coll, name, ...) COLL_KEY(name, coll),

/* `measured = "..."`: printed only when set, so that datasheet levels print as before. */
static int parse_measured(parse_ctx *ctx, const config_setting_t *setting, void *target,
                          const key_spec *key)
{
    cdse_net_level *level = target;
    const char *text = config_setting_get_string(setting);
    if (text == NULL || strlen(text) >= sizeof level->measured)
        return cdse__key_fail(ctx, setting, NULL, setting, "a string of at most 159 characters",
                              "'%s' is not a string of at most 159 characters", key->name);
    snprintf(level->measured, sizeof level->measured, "%s", text);
    return 0;
}

static void print_measured(FILE *out, const void *target, const key_spec *key, int indent)
{
    const cdse_net_level *level = target;
    if (level->measured[0] == '\0')
        return;
    fprintf(out, "%*s%s = \"", indent, "", key->name);
    for (const char *c = level->measured; *c; c++)
        fputc(*c == '"' || *c == '\\' ? '\'' : *c, out);
    fputs("\";\n", out);
}

static key_spec level_keys[KEY_ROOM] = {
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_net_level, name),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "level name (nvlink, ib, ...)"},
    {.name = "size",
     .type = KEY_INT,
     .offset = offsetof(cdse_net_level, size),
     .min = 0,
     .max = INT_MAX_D,
     .required = true,
     .def_text = "required",
     .help = "GPUs in one domain of this level (0 on the last level = the whole system)"},
    FLOAT_KEY(cdse_net_level, "bandwidth", bandwidth_gbs, 0, true, 1e9, true, 0, "required",
              "GB/s per GPU, one direction"),
    FLOAT_KEY(cdse_net_level, "latency", latency_us, 0, false, 1e9, true, 0, "required",
              "latency per step (us)"),
    FLOAT_KEY(cdse_net_level, "efficiency", efficiency, 0, true, 1, false, 1.0, "1.0",
              "achievable share of bandwidth for collectives"),
    FLOAT_KEY(cdse_net_level, "port_price", port_price, 0, false, 1e12, false, 0, "0",
              "purchase price of this level per GPU: ports, switches, cables (cost_to_train)"),
    CDSE_COLLECTIVES(COLL_KEY_ROW) /* one key per row of collective.h's table */
    {.name = "measured",
     .type = KEY_CUSTOM,
     .parse = parse_measured,
     .print = print_measured,
     .type_text = "string",
     .def_text = "\"\" (datasheet)",
     .help = "where this level's collective pairs were measured (written by clusterdse fit); "
             "absent: datasheet figures"},
};
static key_table level_table = {"systems[].network[]", level_keys, 0}; /* n: at load (below) */

static const char *const attach_names[] = {"none", "per_gpu", "per_node", "pool", NULL};

static key_spec tier_keys[KEY_ROOM] = {
    {.name = "attach",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_mem_tier, attach),
     .choices = attach_names,
     .required = true,
     .def_text = "required",
     .help = "per_gpu: each GPU has its own; per_node: one per node; pool: shared by shared_by "
             "GPUs"},
    FLOAT_KEY(cdse_mem_tier, "capacity_gib", capacity_gib, 0, true, 1e9, true, 0, "required",
              "capacity per attachment domain (GiB)"),
    FLOAT_KEY(cdse_mem_tier, "bandwidth", bandwidth_gbs, 0, true, 1e9, true, 0, "required",
              "GB/s per attachment domain, one direction"),
    FLOAT_KEY(cdse_mem_tier, "latency", latency_us, 0, false, 1e9, false, 0, "0",
              "access latency (us)"),
    {.name = "shared_by",
     .type = KEY_INT,
     .offset = offsetof(cdse_mem_tier, shared_by),
     .min = 1,
     .max = INT_MAX_D,
     .def_text = "1 / gpus_per_node",
     .help = "GPUs sharing one domain (default 1 for per_gpu, gpus_per_node otherwise)"},
};
static key_table tier_table = {"systems[].memory_tier", tier_keys, 0}; /* n: at load (below) */

static key_spec cost_keys[KEY_ROOM] = {
    FLOAT_KEY(cdse_cost, "gpu_price", gpu_price, 0, false, 1e12, false, 0, "0",
              "purchase price per GPU with its share of the node (currency units)"),
    FLOAT_KEY(cdse_cost, "facility_price", facility_price, 0, false, 1e12, false, 0, "0",
              "per GPU: its share of the building, power and cooling plant"),
    FLOAT_KEY(cdse_cost, "amortization_years", amortization_years, 0, true, 100, false, 5.0, "5",
              "years over which the purchase is spread (hyperscalers depreciate servers over "
              "5-6 years)"),
    FLOAT_KEY(cdse_cost, "rental_price", rental_price, 0, false, 1e9, false, 0, "0",
              "per GPU-hour; > 0: the system is rented (power included) instead of bought"),
    FLOAT_KEY(cdse_cost, "gpu_power", gpu_power_w, 0, false, 1e6, false, 0, "0",
              "average draw per GPU while training (W; datasheet TDP as an upper estimate)"),
    FLOAT_KEY(cdse_cost, "node_power", node_power_w, 0, false, 1e7, false, 0, "0",
              "draw per node besides its GPUs: CPUs, memory, NICs, fans (W)"),
    FLOAT_KEY(cdse_cost, "pue", pue, 1, false, 10, false, 1.0, "1.0",
              "power usage effectiveness: facility power over IT power"),
};
static key_table cost_table = {"systems[].cost", cost_keys, 0}; /* n: at load (below) */

/* --- goodput (issue 29): failure rates, restart times, checkpoint storage --- */
static key_spec reliability_keys[KEY_ROOM] = {
    FLOAT_KEY(cdse_reliability, "gpu_failures", gpu_failures, 0, false, 1e6, false, 0, "0",
              "unexpected job interruptions attributed to a GPU, per 1000 GPU-days"),
    FLOAT_KEY(cdse_reliability, "node_failures", node_failures, 0, false, 1e6, false, 0, "0",
              "interruptions attributed to a node's host or software, per 1000 node-days"),
    FLOAT_KEY(cdse_reliability, "link_failures", link_failures, 0, false, 1e6, false, 0, "0",
              "interruptions attributed to a scale-out link (NIC, cable, switch; one per GPU), "
              "per 1000 link-days"),
    FLOAT_KEY(cdse_reliability, "planned_per_day", planned_per_day, 0, false, 1e4, false, 0, "0",
              "planned interruptions (maintenance, upgrades) per day of the job"),
    FLOAT_KEY(cdse_reliability, "detect_time", detect_s, 0, false, 1e7, false, 600.0, "600",
              "seconds from a failure until the job stops (PyTorch's NCCL timeout: 600)"),
    FLOAT_KEY(cdse_reliability, "restart_time", restart_s, 0, false, 1e7, false, 0, "0",
              "seconds to relaunch the job and set up its communicators, before it reads the "
              "checkpoint"),
    FLOAT_KEY(cdse_reliability, "replace_share", replace_share, 0, false, 1, false, 0, "0",
              "share of unexpected interruptions that take a node (or a scale-up domain) out "
              "of the job"),
    FLOAT_KEY(cdse_reliability, "replace_time", replace_s, 0, false, 1e8, false, 0, "0",
              "extra seconds to bring a spare into the job for those (0: hot spares)"),
};
static key_table reliability_table = {"systems[].reliability", reliability_keys,
                                      0}; /* n: at load (below) */

static key_spec storage_keys[KEY_ROOM] = {
    FLOAT_KEY(cdse_storage, "write_bandwidth", write_gbs, 0, false, 1e9, false, 0, "0",
              "aggregate write bandwidth of the checkpoint file system, GB/s (0: unlimited)"),
    FLOAT_KEY(cdse_storage, "read_bandwidth", read_gbs, 0, false, 1e9, false, 0, "write_bandwidth",
              "aggregate read bandwidth, GB/s"),
    FLOAT_KEY(cdse_storage, "node_write_bandwidth", node_write_gbs, 0, false, 1e9, false, 0, "0",
              "write bandwidth of one node to the file system, GB/s (0: unlimited)"),
    FLOAT_KEY(cdse_storage, "node_read_bandwidth", node_read_gbs, 0, false, 1e9, false, 0,
              "node_write_bandwidth", "read bandwidth of one node, GB/s"),
    FLOAT_KEY(cdse_storage, "host_copy_bandwidth", host_copy_gbs, 0, false, 1e9, false, 0, "0",
              "GPU-to-host-memory bandwidth per GPU, GB/s: the stall of an asynchronous or "
              "in-memory checkpoint (0: unlimited)"),
};
static key_table storage_table = {"systems[].storage", storage_keys, 0}; /* n: at load (below) */

static key_spec gemm_shape_keys[KEY_ROOM] = {
    FLOAT_KEY(cdse_gemm_shape, "sms", sms, 0, true, 1e5, true, 0, "required",
              "streaming multiprocessors (compute units) of the GPU, from its datasheet"),
    FLOAT_KEY(cdse_gemm_shape, "efficiency", efficiency, 0, true, 1, true, 0, "required",
              "bf16 GEMM efficiency at full waves and long K, fraction of the bf16 peak"),
    FLOAT_KEY(cdse_gemm_shape, "efficiency_fp8", efficiency_fp8, 0, false, 1, false, 0,
              "efficiency", "the same for fp8 GEMMs, fraction of the fp8 peak"),
};
static key_table gemm_shape_table = {"systems[].gemm_shape", gemm_shape_keys,
                                     0}; /* n: at load (below) */

static key_spec system_keys[KEY_ROOM] = {
    {.name = "base",
     .type = KEY_CUSTOM,
     .parse = skip_key,
     .type_text = "string",
     .def_text = "none",
     .help = "start from this profile (name or path) and override the keys given"},
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_system, name),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "system name used in outputs"},
    {.name = "gpu",
     .type = KEY_STRING,
     .offset = offsetof(cdse_system, gpu),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "accelerator model"},
    {.name = "stack",
     .type = KEY_STRING,
     .offset = offsetof(cdse_system, stack),
     .size = CDSE_NAME_MAX,
     .def_text = "built-in (current Megatron-Core)",
     .help = "software stack that runs on it when the job's stacks axis names none: a name from "
             "calibration/stacks/ or a path"},
    {.name = "gpus_per_node",
     .type = KEY_INT,
     .offset = offsetof(cdse_system, gpus_per_node),
     .min = 1,
     .max = 1e6,
     .required = true,
     .def_text = "required",
     .help = "GPUs per node"},
    {.name = "peak_tflops",
     .type = KEY_GROUP,
     .offset = 0,
     .sub = &peak_table,
     .required = true,
     .type_text = "group { fp32; tf32; bf16; fp16; fp8; }",
     .def_text = "required",
     .help = "dense peak TFLOP/s per GPU per data type"},
    {.name = "mfu_ceiling",
     .type = KEY_GROUP,
     .offset = 0,
     .sub = &ceiling_table,
     .type_text = "group { fp32; tf32; bf16; fp16; fp8; }",
     .def_text = "0 (none)",
     .help = "per data type, the highest MFU a published training run reached on this GPU "
             "generation (cite it): no configuration is predicted faster; 0 = no ceiling"},
    {.name = "gemm_efficiency",
     .type = KEY_CUSTOM,
     .offset = offsetof(cdse_system, gemm_eff),
     .parse = parse_eff_table,
     .print = print_eff_table,
     .required = true,
     .type_text = "list of [flops, efficiency]",
     .def_text = "required",
     .help = "GEMM efficiency vs GEMM FLOPs, sorted by FLOPs (interpolated in log FLOPs)"},
    {.name = "gemm_efficiency_fp8",
     .type = KEY_CUSTOM,
     .offset = offsetof(cdse_system, gemm_eff_fp8),
     .parse = parse_eff_table,
     .print = print_eff_table,
     .type_text = "list of [flops, efficiency]",
     .def_text = "gemm_efficiency",
     .help = "GEMM efficiency table for fp8 GEMMs"},
    FLOAT_KEY(cdse_system, "attention_efficiency", attention_efficiency, 0, true, 1, true, 0,
              "required", "fused (flash) attention kernels, fraction of bf16 peak"),
    {.name = "attention_seq_scale",
     .type = KEY_CUSTOM,
     .offset = offsetof(cdse_system, attention_seq_scale),
     .parse = parse_eff_table,
     .print = print_eff_table,
     .type_text = "list of [sequence, factor]",
     .def_text = "none (1 at every length)",
     .help = "fused attention's efficiency at a sequence length (per context-parallel rank) "
             "relative to attention_efficiency, interpolated in log length"},
    FLOAT_KEY(cdse_system, "hbm_gib", hbm_gib, 0, true, 1e6, true, 0, "required",
              "HBM capacity per GPU (GiB)"),
    FLOAT_KEY(cdse_system, "hbm_bandwidth", hbm_bandwidth_gbs, 0, true, 1e6, true, 0, "required",
              "HBM bandwidth per GPU (GB/s)"),
    FLOAT_KEY(cdse_system, "hbm_efficiency", hbm_efficiency, 0, true, 1, true, 0, "required",
              "achievable share of HBM bandwidth for streaming kernels"),
    FLOAT_KEY(cdse_system, "reserved_gib", reserved_gib, 0, false, 1e6, true, 0, "required",
              "HBM not available to the model: context, allocator, workspaces (GiB)"),
    {.name = "fp8_non_tn_gemm",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_system, fp8_non_tn_gemm),
     .def_text = "false",
     .help = "FP8 GEMMs take any operand layout (compute capability 10.x: B200, B300): no "
             "transposed FP8 copies of weights and GEMM inputs"},
    {.name = "network",
     .type = KEY_CUSTOM,
     .parse = parse_network,
     .print = print_network,
     .type_text = "list of level groups",
     .def_text = "required",
     .help = "network levels, innermost first (required unless network_profile is given)"},
    {.name = "network_profile",
     .type = KEY_CUSTOM,
     .parse = skip_key,
     .type_text = "string (path)",
     .def_text = "none",
     .help = "take the network levels from this fitted profile file"},
    {.name = "gemm_shape",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_system, gemm_shape),
     .sub = &gemm_shape_table,
     .type_text = "group { sms; efficiency; efficiency_fp8; }",
     .def_text = "none (the gemm_efficiency tables)",
     .help = "GEMM time from each GEMM's M, N, K: tiles and waves on the SMs, split-K, main "
             "loop length (docs/zoo.md); replaces the gemm_efficiency tables"},
    {.name = "memory_tier",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_system, tier),
     .sub = &tier_table,
     .type_text = "group",
     .def_text = "none",
     .help = "second memory tier (offload / memory expansion target)"},
    {.name = "cost",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_system, cost),
     .sub = &cost_table,
     .type_text = "group",
     .def_text = "unknown (0)",
     .help = "what a GPU costs and draws (cost_to_train, energy_to_train_mwh, tokens_per_kwh)"},
    {.name = "reliability",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_system, reliability),
     .sub = &reliability_table,
     .type_text = "group",
     .def_text = "never fails",
     .help = "failure rates and restart times (goodput, time_to_train_effective_days)"},
    {.name = "storage",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_system, storage),
     .sub = &storage_table,
     .type_text = "group",
     .def_text = "unlimited",
     .help = "where checkpoints go: file-system and host-copy bandwidths (goodput)"},
};
static key_table system_table = {"systems[]", system_keys, 0}; /* n: at load (below) */

/* ---- The hardware keys' profile keys ------------------------------------------------------ */

/* Every section of a system entry whose table a row of CDSE_HW_KEYS may extend. */
typedef struct section {
    const char *name; /* the row's GROUP: NULL for the top level */
    key_table *table;
    key_spec *keys; /* table->keys, writable */
} section;

static const section sections[] = {
    {NULL, &system_table, system_keys},
    {"peak_tflops", &peak_table, peak_keys},
    {"mfu_ceiling", &ceiling_table, ceiling_keys},
    {"network", &level_table, level_keys},
    {"memory_tier", &tier_table, tier_keys},
    {"cost", &cost_table, cost_keys},
    {"reliability", &reliability_table, reliability_keys},
    {"storage", &storage_table, storage_keys},
    {"gemm_shape", &gemm_shape_table, gemm_shape_keys},
};
#define N_SECTIONS ((int)(sizeof sections / sizeof sections[0]))

/* The section of a row and the offset in cdse_system that its keys' offsets start from (a
 * group's field, the row's network level); NULL for a section not listed above. */
static const section *row_section(const cdse_hw_info *hw, size_t *base)
{
    *base = 0;
    if (hw->group != NULL && strcmp(hw->group, "network") == 0)
        *base = offsetof(cdse_system, level) + (size_t)hw->level * sizeof(cdse_net_level);
    for (int i = 0; i < N_SECTIONS; i++) {
        if (hw->group == NULL ? sections[i].name != NULL
                              : sections[i].name == NULL || strcmp(sections[i].name, hw->group))
            continue;
        for (int k = 0; hw->group != NULL && *base == 0 && k < system_table.n; k++)
            if (system_keys[k].sub == sections[i].table)
                *base = system_keys[k].offset;
        return &sections[i];
    }
    return NULL;
}

/* A hardware key is one row of CDSE_HW_KEYS (model/hardware.h). A row whose field no key of
 * its section fills yet becomes that key here, when the program is loaded: a number of the
 * row's type within the row's bounds, 0 when not given (the field's "none"), printed in the
 * effective profile only when given, so that profiles without it print as before. Its
 * /systems field is the row's too (src/model/fields.c). A new hardware key is then its row,
 * the model's use of the field and the docs (docs/architecture.md, What a change touches). */
__attribute__((constructor)) static void hw_profile_keys(void)
{
    for (int i = 0; i < N_SECTIONS; i++)
        for (sections[i].table->n = 0; sections[i].keys[sections[i].table->n].name != NULL;)
            sections[i].table->n++;
    for (int k = 0; k < CDSE_HW_COUNT; k++) {
        const cdse_hw_info *hw = &cdse_hw_keys[k];
        size_t base;
        const section *sec = row_section(hw, &base);
        if (sec == NULL || sec->table->n >= KEY_ROOM - 1)
            continue; /* tests/unit/test_hw_keys.c: every row is a key of its section */
        bool described = false;
        for (int i = 0; i < sec->table->n && !described; i++)
            described = sec->keys[i].type != KEY_GROUP && sec->keys[i].type != KEY_CUSTOM &&
                        sec->keys[i].offset == hw->offset - base;
        if (described)
            continue;
        sec->keys[sec->table->n++] = (key_spec){.name = hw->name,
                                                .type = hw->integer ? KEY_INT : KEY_FLOAT,
                                                .offset = hw->offset - base,
                                                .min = hw->min,
                                                .min_open = hw->min_open,
                                                .max = hw->max,
                                                .has_default = true,
                                                .def = 0,
                                                .def_text = "0",
                                                .print_given_only = true,
                                                .help = hw->help};
    }
}

static int parse_eff_table(parse_ctx *ctx, const config_setting_t *setting, void *target,
                           const key_spec *key)
{
    cdse_eff_table *table = (cdse_eff_table *)((char *)target + key->offset);
    /* attention_seq_scale is a table of the same shape over sequence lengths. */
    bool seq = strcmp(key->name, "attention_seq_scale") == 0;
    const char *x_name = seq ? "sequence" : "flops";
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "a list of 1 to %d pairs [%s > 0, %s in (0, 1]] sorted by increasing %s",
             CDSE_MAX_EFF_POINTS, x_name, seq ? "factor" : "efficiency", x_name);
    if (!config_setting_is_list(setting) && !config_setting_is_array(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list");
    int n = config_setting_length(setting);
    if (n < 1 || n > CDSE_MAX_EFF_POINTS)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d points", n);
    memset(table, 0, sizeof *table);
    for (int i = 0; i < n; i++) {
        const config_setting_t *pair = config_setting_get_elem(setting, i);
        if (!config_setting_is_aggregate(pair) || config_setting_is_group(pair) ||
            config_setting_length(pair) != 2)
            return cdse__key_fail(ctx, setting, NULL, pair, allowed, "point %d is not a pair", i);
        double v[2];
        for (int j = 0; j < 2; j++) {
            const config_setting_t *x = config_setting_get_elem(pair, j);
            if (!config_setting_is_number(x))
                return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                      "point %d holds a non-number", i);
            v[j] = config_setting_type(x) == CONFIG_TYPE_FLOAT
                       ? config_setting_get_float(x)
                       : (double)config_setting_get_int64(x);
            if (config_setting_type(x) == CONFIG_TYPE_INT)
                v[j] = config_setting_get_int(x);
        }
        if (!(v[0] > 0) || !(v[1] > 0 && v[1] <= 1))
            return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                  "point %d = [%g, %g] is out of range", i, v[0], v[1]);
        if (i > 0 && !(v[0] > table->flops[i - 1]))
            return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                  "point %d: %s %g not above the previous %g", i, x_name, v[0],
                                  table->flops[i - 1]);
        table->flops[i] = v[0];
        table->eff[i] = v[1];
        table->n = i + 1;
    }
    return 0;
}

static int parse_coll(parse_ctx *ctx, const config_setting_t *setting, void *target,
                      const key_spec *key)
{
    cdse_net_level *level = target;
    coll_fit fit = {0, 0};
    int rc = cdse__parse_group(ctx, setting, &coll_table, &fit, true);
    if (rc != 0)
        return rc;
    level->coll_latency_us[key->arg] = fit.latency_us;
    level->coll_bandwidth_gbs[key->arg] = fit.bandwidth_gbs;
    return 0;
}

static int parse_network(parse_ctx *ctx, const config_setting_t *setting, void *target,
                         const key_spec *key)
{
    (void)key;
    cdse_system *system = target;
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "a list of 1 to %d level groups ( { name; size; bandwidth; latency; efficiency; }, "
             "... ), innermost first",
             CDSE_MAX_LEVELS);
    if (!config_setting_is_list(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list ( ... )");
    int n = config_setting_length(setting);
    if (n < 1 || n > CDSE_MAX_LEVELS)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d levels", n);
    system->n_levels = 0;
    memset(system->level, 0, sizeof system->level);
    for (int i = 0; i < n; i++) {
        const config_setting_t *group = config_setting_get_elem(setting, i);
        cdse_net_level *level = &system->level[i];
        int rc = cdse__parse_group(ctx, group, &level_table, level, true);
        if (rc != 0)
            return rc;
        const config_setting_t *size = config_setting_get_member(group, "size");
        if (level->size == 0 && i < n - 1)
            return cdse__key_fail(ctx, size, NULL, size, "size >= 1 on every level but the last",
                                  "size 0 (whole system) on level %d of %d", i, n);
        if (i > 0 && level->size != 0 && level->size % system->level[i - 1].size != 0) {
            char nest[120];
            snprintf(nest, sizeof nest,
                     "a multiple of the inner level's size %d, or 0 on the "
                     "last level",
                     system->level[i - 1].size);
            return cdse__key_fail(ctx, size, NULL, size, nest, "size %d does not nest",
                                  level->size);
        }
        system->n_levels = i + 1;
    }
    return 0;
}

static int system_finish(parse_ctx *ctx, const config_setting_t *group, cdse_system *system,
                         bool fresh)
{
    const config_setting_t *profile = config_setting_get_member(group, "network_profile");
    const config_setting_t *network = config_setting_get_member(group, "network");
    if (profile != NULL) {
        if (network != NULL)
            return cdse__key_fail(
                ctx, profile, NULL, profile, "network or network_profile, not both",
                "given together with network (line %d)", config_setting_source_line(network));
        if (config_setting_type(profile) != CONFIG_TYPE_STRING)
            return cdse__key_fail(ctx, profile, NULL, profile, "a path to a fitted profile file",
                                  "expected a string");
        cdse_system *fitted = calloc(1, sizeof *fitted);
        if (fitted == NULL)
            return CDSE_ENOMEM;
        int rc = cdse__load_profile_named(ctx, profile, "", "network profile",
                                          cdse__parse_system_group, fitted, false);
        if (rc == 0 && fitted->n_levels == 0)
            rc = cdse__key_fail(ctx, profile, NULL, profile, "a file holding network = ( ... )",
                                "the profile has no network levels");
        if (rc == 0) {
            system->n_levels = fitted->n_levels;
            memcpy(system->level, fitted->level, sizeof system->level);
        }
        free(fitted);
        if (rc != 0)
            return rc;
    } else if (fresh && network == NULL) {
        return cdse__key_fail(ctx, group, "network", group,
                              "a list of level groups, or network_profile", "missing (required)");
    }
    const config_setting_t *tier = config_setting_get_member(group, "memory_tier");
    if (tier != NULL && system->tier.attach == CDSE_TIER_NONE &&
        config_setting_get_member(tier, "attach") == NULL)
        return cdse__key_fail(ctx, tier, "attach", tier,
                              "one of \"per_gpu\", \"per_node\", \"pool\"", "missing (required)");
    if (tier != NULL && system->tier.shared_by == 0)
        system->tier.shared_by =
            system->tier.attach == CDSE_TIER_PER_GPU ? 1 : system->gpus_per_node;
    cdse_diag inner;
    inner.msg[0] = '\0';
    if (cdse_system_check(system, &inner) != 0)
        return cdse__key_fail(ctx, group, NULL, group, "values consistent with each other",
                              "system '%s': %s", system->name, inner.msg);
    return 0;
}

int cdse__parse_system_group(parse_ctx *ctx, const config_setting_t *group, void *target,
                             bool fresh)
{
    cdse_system *system = target;
    if (!config_setting_is_group(group))
        return cdse__key_fail(ctx, group, NULL, group, "a group { key = value; ... }",
                              "expected a group");
    const config_setting_t *base = config_setting_get_member(group, "base");
    if (base != NULL) {
        if (config_setting_type(base) != CONFIG_TYPE_STRING)
            return cdse__key_fail(ctx, base, NULL, base, "a system name or a path",
                                  "expected a string");
        int rc = cdse__load_profile_named(ctx, base, "calibration/systems", "system",
                                          cdse__parse_system_group, system, true);
        if (rc != 0)
            return rc;
        fresh = false;
    }
    int rc = cdse__parse_group(ctx, group, &system_table, system, fresh);
    if (rc != 0)
        return rc;
    /* A profile used only for its network (network_profile) need not be complete. */
    if (!fresh && base == NULL)
        return 0;
    return system_finish(ctx, group, system, fresh);
}

int cdse_system_load_file(const char *path, cdse_system *system, cdse_diag *diag)
{
    char *text;
    int rc_read = cdse__read_file_diag(path, "system profile", &text, diag);
    if (rc_read != 0)
        return rc_read;
    parse_ctx ctx = {.file = path, .job_path = path, .diag = diag};
    config_t cfg;
    memset(system, 0, sizeof *system);
    int rc = cdse__read_config(&ctx, text, &cfg);
    free(text);
    if (rc != 0)
        return rc;
    rc = cdse__parse_system_group(&ctx, config_root_setting(&cfg), system, true);
    config_destroy(&cfg);
    return rc;
}

static void print_eff_table(FILE *out, const void *target, const key_spec *key, int indent)
{
    const cdse_eff_table *table = (const cdse_eff_table *)((const char *)target + key->offset);
    if (table->n == 0)
        return;
    fprintf(out, "%*s%s = (", indent, "", key->name);
    for (int i = 0; i < table->n; i++) {
        fputs(i ? ", [" : " [", out);
        cdse__print_float(out, table->flops[i]);
        fputs(", ", out);
        cdse__print_float(out, table->eff[i]);
        fputs("]", out);
    }
    fputs(" );\n", out);
}

static void print_coll(FILE *out, const void *target, const key_spec *key, int indent)
{
    const cdse_net_level *level = target;
    if (!(level->coll_bandwidth_gbs[key->arg] > 0))
        return;
    fprintf(out, "%*s%s = { latency = ", indent, "", key->name);
    cdse__print_float(out, level->coll_latency_us[key->arg]);
    fputs("; bandwidth = ", out);
    cdse__print_float(out, level->coll_bandwidth_gbs[key->arg]);
    fputs("; };\n", out);
}

static void print_network(FILE *out, const void *target, const key_spec *key, int indent)
{
    (void)key;
    const cdse_system *system = target;
    fprintf(out, "%*snetwork = (\n", indent, "");
    for (int l = 0; l < system->n_levels; l++) {
        fprintf(out, "%*s{\n", indent + 2, "");
        cdse__print_table_values(out, &level_table, &system->level[l], indent + 4);
        fprintf(out, "%*s}%s\n", indent + 2, "", l + 1 < system->n_levels ? "," : "");
    }
    fprintf(out, "%*s);\n", indent, "");
}

void cdse__print_system_body(FILE *out, const cdse_system *system, int indent)
{
    for (int i = 0; i < system_table.n; i++) {
        const key_spec *k = &system_table.keys[i];
        static const cdse_mem_tier no_tier; /* all zero: memory_tier never given */
        if (k->sub == &tier_table && memcmp(&system->tier, &no_tier, sizeof no_tier) == 0)
            continue; /* attach = "none" with values is printed: the fingerprint hashes them */
        if (k->sub == &gemm_shape_table && !(system->gemm_shape.sms > 0.0))
            continue; /* not given: profiles without it print (and hash) as before */
        cdse__print_field(out, k, system, indent);
    }
}

void cdse__system_print_keys(FILE *out)
{
    const key_table *const tables[] = {&system_table, &peak_table,        &gemm_shape_table,
                                       &level_table,  &coll_table,        &tier_table,
                                       &cost_table,   &reliability_table, &storage_table};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        cdse__print_key_table(out, tables[t]);
}

void cdse_system_print_network(FILE *out, const cdse_system *system)
{
    print_network(out, system, NULL, 0);
}
