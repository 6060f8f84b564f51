/* The field tables of cdse_model and cdse_system (see fields.h). Names are the job-file keys;
 * a key whose value spreads over several struct members (the sequence-length histogram, the
 * network's levels) gives its members names that start with the key and '_'. Keys that are not
 * values (systems[].base, systems[].network_profile: where values come from) have no field. */
#include "clusterdse/model/fields.h"

/* Room in a table for the rows written below and the fields of hardware keys appended from
 * CDSE_HW_KEYS when the program is loaded (hw_fields): a table's n counts its rows then. */
#define FIELD_ROOM 48

#define FIELD(s, key, member, kind_, n)                                                            \
    {                                                                                              \
        .name = key, .kind = kind_, .offset = offsetof(s, member),                                 \
        .size = sizeof(((s *)0)->member) / (n), .count = n                                         \
    }
#define RECORD(s, key, member, table, n)                                                           \
    {                                                                                              \
        .name = key, .kind = CDSE_FIELD_RECORD, .offset = offsetof(s, member),                     \
        .size = sizeof(((s *)0)->member) / (n), .count = n, .record = &table                       \
    }
#define TABLE(s, rows)                                                                             \
    {                                                                                              \
#s, sizeof(s), (int)(sizeof rows / sizeof rows[0]), rows                                   \
    }

static const cdse_field model_rows[] = {
    FIELD(cdse_model, "name", name, CDSE_FIELD_STRING, 1),
    FIELD(cdse_model, "layers", layers, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "hidden", hidden, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "heads", heads, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "kv_heads", kv_heads, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "head_dim", head_dim, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "ffn", ffn, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "seq_len", seq_len, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "vocab", vocab, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "gated_mlp", gated_mlp, CDSE_FIELD_BOOL, 1),
    FIELD(cdse_model, "tied_embeddings", tied_embeddings, CDSE_FIELD_BOOL, 1),
    FIELD(cdse_model, "experts", experts, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "top_k", top_k, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "moe_ffn", moe_ffn, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "moe_every", moe_every, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "shared_experts", shared_experts, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "capacity_factor", capacity_factor, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_model, "moe_imbalance", moe_imbalance, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_model, "first_dense_layers", first_dense_layers, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "q_lora_rank", q_lora_rank, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "kv_lora_rank", kv_lora_rank, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "qk_rope_head_dim", qk_rope_head_dim, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "v_head_dim", v_head_dim, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "sliding_window", sliding_window, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "full_attention_every", full_attention_every, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "moe_node_limit", moe_node_limit, CDSE_FIELD_INT, 1),
    /* The histogram: its number of bins, lengths and normalized weights (0 bins: none). */
    FIELD(cdse_model, "seq_len_histogram_bins", n_seq_bins, CDSE_FIELD_INT, 1),
    FIELD(cdse_model, "seq_len_histogram_length", seq_bin_len, CDSE_FIELD_DOUBLE,
          CDSE_MAX_SEQ_BINS),
    FIELD(cdse_model, "seq_len_histogram_weight", seq_bin_weight, CDSE_FIELD_DOUBLE,
          CDSE_MAX_SEQ_BINS),
};
const cdse_field_table cdse_model_fields = TABLE(cdse_model, model_rows);

static const cdse_field eff_rows[] = {
    FIELD(cdse_eff_table, "points", n, CDSE_FIELD_INT, 1),
    FIELD(cdse_eff_table, "flops", flops, CDSE_FIELD_DOUBLE, CDSE_MAX_EFF_POINTS),
    FIELD(cdse_eff_table, "efficiency", eff, CDSE_FIELD_DOUBLE, CDSE_MAX_EFF_POINTS),
};
static const cdse_field_table eff_fields = TABLE(cdse_eff_table, eff_rows);

static cdse_field level_rows[FIELD_ROOM] = {
    FIELD(cdse_net_level, "name", name, CDSE_FIELD_STRING, 1),
    FIELD(cdse_net_level, "size", size, CDSE_FIELD_INT, 1),
    FIELD(cdse_net_level, "bandwidth", bandwidth_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_net_level, "latency", latency_us, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_net_level, "efficiency", efficiency, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_net_level, "port_price", port_price, CDSE_FIELD_DOUBLE, 1),
    /* Fitted per collective, in cdse_coll order (allreduce, allgather, reduce_scatter,
     * alltoall, sendrecv); 0 = unset. */
    FIELD(cdse_net_level, "collective_latency", coll_latency_us, CDSE_FIELD_DOUBLE,
          CDSE_COLL_COUNT),
    FIELD(cdse_net_level, "collective_bandwidth", coll_bandwidth_gbs, CDSE_FIELD_DOUBLE,
          CDSE_COLL_COUNT),
};
static cdse_field_table level_fields = {"cdse_net_level", sizeof(cdse_net_level), 0,
                                        level_rows}; /* n: at load */

static cdse_field cost_rows[FIELD_ROOM] = {
    FIELD(cdse_cost, "gpu_price", gpu_price, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_cost, "facility_price", facility_price, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_cost, "amortization_years", amortization_years, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_cost, "rental_price", rental_price, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_cost, "gpu_power", gpu_power_w, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_cost, "node_power", node_power_w, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_cost, "pue", pue, CDSE_FIELD_DOUBLE, 1),
};
static cdse_field_table cost_fields = {"cdse_cost", sizeof(cdse_cost), 0,
                                       cost_rows}; /* n: at load */

/* goodput (issue 29) */
static cdse_field reliability_rows[FIELD_ROOM] = {
    FIELD(cdse_reliability, "gpu_failures", gpu_failures, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_reliability, "node_failures", node_failures, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_reliability, "link_failures", link_failures, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_reliability, "planned_per_day", planned_per_day, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_reliability, "detect_time", detect_s, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_reliability, "restart_time", restart_s, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_reliability, "replace_share", replace_share, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_reliability, "replace_time", replace_s, CDSE_FIELD_DOUBLE, 1),
};
static cdse_field_table reliability_fields = {"cdse_reliability", sizeof(cdse_reliability), 0,
                                              reliability_rows}; /* n: at load */

static cdse_field gemm_shape_rows[FIELD_ROOM] = {
    FIELD(cdse_gemm_shape, "sms", sms, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_gemm_shape, "efficiency", efficiency, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_gemm_shape, "efficiency_fp8", efficiency_fp8, CDSE_FIELD_DOUBLE, 1),
};
static cdse_field_table gemm_shape_fields = {"cdse_gemm_shape", sizeof(cdse_gemm_shape), 0,
                                             gemm_shape_rows}; /* n: at load */

static cdse_field storage_rows[FIELD_ROOM] = {
    FIELD(cdse_storage, "write_bandwidth", write_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_storage, "read_bandwidth", read_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_storage, "node_write_bandwidth", node_write_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_storage, "node_read_bandwidth", node_read_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_storage, "host_copy_bandwidth", host_copy_gbs, CDSE_FIELD_DOUBLE, 1),
};
static cdse_field_table storage_fields = {"cdse_storage", sizeof(cdse_storage), 0,
                                          storage_rows}; /* n: at load */

static cdse_field tier_rows[FIELD_ROOM] = {
    FIELD(cdse_mem_tier, "attach", attach, CDSE_FIELD_INT, 1),
    FIELD(cdse_mem_tier, "capacity_gib", capacity_gib, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_mem_tier, "bandwidth", bandwidth_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_mem_tier, "latency", latency_us, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_mem_tier, "shared_by", shared_by, CDSE_FIELD_INT, 1),
};
static cdse_field_table tier_fields = {"cdse_mem_tier", sizeof(cdse_mem_tier), 0,
                                       tier_rows}; /* n: at load */

static const cdse_field pool_rows[] = {
    FIELD(cdse_pool, "types", n_types, CDSE_FIELD_INT, 1),
    FIELD(cdse_pool, "system", member, CDSE_FIELD_INT, CDSE_MAX_POOL_TYPES),
    FIELD(cdse_pool, "gpus", gpus, CDSE_FIELD_INT, CDSE_MAX_POOL_TYPES),
};
static const cdse_field_table pool_fields = TABLE(cdse_pool, pool_rows);

static cdse_field system_rows[FIELD_ROOM] = {
    FIELD(cdse_system, "name", name, CDSE_FIELD_STRING, 1),
    FIELD(cdse_system, "gpu", gpu, CDSE_FIELD_STRING, 1),
    FIELD(cdse_system, "gpus_per_node", gpus_per_node, CDSE_FIELD_INT, 1),
    /* In cdse_dtype order: fp32, tf32, bf16, fp16, fp8. */
    FIELD(cdse_system, "peak_tflops", peak_tflops, CDSE_FIELD_DOUBLE, CDSE_DTYPE_COUNT),
    FIELD(cdse_system, "mfu_ceiling", mfu_ceiling, CDSE_FIELD_DOUBLE, CDSE_DTYPE_COUNT),
    RECORD(cdse_system, "gemm_efficiency", gemm_eff, eff_fields, 1),
    RECORD(cdse_system, "gemm_efficiency_fp8", gemm_eff_fp8, eff_fields, 1),
    RECORD(cdse_system, "gemm_shape", gemm_shape, gemm_shape_fields, 1),
    FIELD(cdse_system, "attention_efficiency", attention_efficiency, CDSE_FIELD_DOUBLE, 1),
    RECORD(cdse_system, "attention_seq_scale", attention_seq_scale, eff_fields, 1),
    FIELD(cdse_system, "hbm_gib", hbm_gib, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_system, "hbm_bandwidth", hbm_bandwidth_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_system, "hbm_efficiency", hbm_efficiency, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_system, "reserved_gib", reserved_gib, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_system, "fp8_non_tn_gemm", fp8_non_tn_gemm, CDSE_FIELD_BOOL, 1),
    FIELD(cdse_system, "network_levels", n_levels, CDSE_FIELD_INT, 1),
    RECORD(cdse_system, "network", level, level_fields, CDSE_MAX_LEVELS),
    RECORD(cdse_system, "memory_tier", tier, tier_fields, 1),
    RECORD(cdse_system, "pool", pool, pool_fields, 1),
    /* The pool's options under their job keys (systems[].partition, ...). */
    FIELD(cdse_system, "partition", partition, CDSE_FIELD_INT, 1),
    FIELD(cdse_system, "tp_per_type", tp_per_type, CDSE_FIELD_BOOL, 1),
    FIELD(cdse_system, "link_bandwidth", link_bandwidth_gbs, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_system, "link_latency", link_latency_us, CDSE_FIELD_DOUBLE, 1),
    FIELD(cdse_system, "stack", stack, CDSE_FIELD_STRING, 1),
    RECORD(cdse_system, "cost", cost, cost_fields, 1),
    RECORD(cdse_system, "reliability", reliability, reliability_fields, 1),
    RECORD(cdse_system, "storage", storage, storage_fields, 1),
};
static cdse_field_table system_fields = {"cdse_system", sizeof(cdse_system), 0, system_rows};

const cdse_field_table *cdse_system_field_table(void)
{
    return &system_fields;
}

/* ---- The hardware keys' fields ------------------------------------------------------------- */

/* Every table a row of CDSE_HW_KEYS may extend: the top level and the records of system_rows. */
typedef struct growable {
    cdse_field_table *table;
    cdse_field *rows; /* table->fields, writable */
} growable;
static const growable tables[] = {
    {&system_fields, system_rows},
    {&level_fields, level_rows},
    {&tier_fields, tier_rows},
    {&cost_fields, cost_rows},
    {&storage_fields, storage_rows},
    {&gemm_shape_fields, gemm_shape_rows},
    {&reliability_fields, reliability_rows},
};
#define N_TABLES ((int)(sizeof tables / sizeof tables[0]))

/* Whether a field of `table` holds the byte at `offset`. */
static bool covered(const cdse_field_table *table, size_t offset)
{
    for (int i = 0; i < table->n; i++) {
        const cdse_field *f = &table->fields[i];
        if (offset >= f->offset && offset < f->offset + f->size * (size_t)f->count)
            return true;
    }
    return false;
}

/* A row of CDSE_HW_KEYS whose field no /systems field holds yet gets one here, when the program
 * is loaded, named as its profile key (src/config/system_profile.c makes that key from the row
 * too): in the record of its section (network level, memory_tier, cost, ...) when the field
 * lies in one, else at the top level. */
__attribute__((constructor)) static void hw_fields(void)
{
    for (int t = 0; t < N_TABLES; t++)
        for (tables[t].table->n = 0; tables[t].rows[tables[t].table->n].name != NULL;)
            tables[t].table->n++;
    for (int k = 0; k < CDSE_HW_COUNT; k++) {
        const cdse_hw_info *hw = &cdse_hw_keys[k];
        const growable *into = &tables[0];
        size_t base = 0;
        for (int i = 0; i < system_fields.n; i++) {
            const cdse_field *f = &system_rows[i];
            if (f->kind != CDSE_FIELD_RECORD || hw->offset < f->offset ||
                hw->offset >= f->offset + f->size * (size_t)f->count)
                continue;
            base = f->offset + (hw->offset - f->offset) / f->size * f->size;
            for (int t = 0; t < N_TABLES; t++)
                if (tables[t].table == f->record)
                    into = &tables[t];
        }
        cdse_field_table *table = into->table;
        if (covered(table, hw->offset - base) || table->n >= FIELD_ROOM - 1)
            continue;
        into->rows[table->n++] =
            (cdse_field){.name = hw->name,
                         .kind = hw->integer ? CDSE_FIELD_INT : CDSE_FIELD_DOUBLE,
                         .offset = hw->offset - base,
                         .size = hw->integer ? sizeof(int) : sizeof(double),
                         .count = 1};
    }
}
