/* Validity rules of a configuration, checked cheaply for every point of a sweep. */
#include "clusterdse/model/strategy.h"

#include <stdio.h>
#include <string.h>

const char *const cdse_recompute_names[CDSE_RECOMPUTE_COUNT + 1] = {"none", "selective", "full",
                                                                    NULL};
const cdse_names cdse_recompute_enum = {cdse_recompute_names, CDSE_RECOMPUTE_COUNT, NULL};

const char *cdse_recompute_name(int recompute)
{
    return cdse_names_name(&cdse_recompute_enum, recompute);
}

int cdse_recompute_parse(const char *name)
{
    return cdse_names_find(&cdse_recompute_enum, name);
}

const char *const cdse_moe_dispatcher_names[CDSE_DISPATCH_COUNT + 1] = {"alltoall", "deepep", NULL};
const cdse_names cdse_moe_dispatcher_enum = {cdse_moe_dispatcher_names, CDSE_DISPATCH_COUNT, NULL};
const char *const cdse_moe_overlap_names[CDSE_MOE_OVERLAP_COUNT + 1] = {"none", "shared_experts",
                                                                        "a2a", NULL};
const cdse_names cdse_moe_overlap_enum = {cdse_moe_overlap_names, CDSE_MOE_OVERLAP_COUNT, NULL};

static const char *const offload_names[CDSE_OFFLOAD_MASKS + 1] = {
    "none",      "weights",           "activations",           "weights+activations",
    "optimizer", "weights+optimizer", "activations+optimizer", "weights+activations+optimizer",
    NULL};
const cdse_names cdse_offload_enum = {offload_names, CDSE_OFFLOAD_MASKS, NULL};

const char *const cdse_recompute_module_names[CDSE_RECOMPUTE_MODULES + 1] = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts", NULL};

void cdse_recompute_modules_text(int mask, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < CDSE_RECOMPUTE_MODULES && used < size; i++)
        if (mask & (1 << i))
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "+" : "",
                                     cdse_recompute_module_names[i]);
    if (used == 0)
        snprintf(buf, size, "none");
}

#define MODULES_TEXT_MAX 96
static char modules_text[CDSE_RECOMPUTE_MODULES_N][MODULES_TEXT_MAX];
static const char *modules_names[CDSE_RECOMPUTE_MODULES_N + 1];
const cdse_names cdse_recompute_modules_enum = {
    modules_names, CDSE_RECOMPUTE_MODULES_N,
    "none, or module names in the order "
    "core_attn+moe_act+layernorm+mla_up_proj+mlp+moe+shared_experts joined by '+'"};

/* Runs before main (GCC and clang): the table is constant from then on. */
__attribute__((constructor)) static void modules_table(void)
{
    for (int mask = 0; mask < CDSE_RECOMPUTE_MODULES_N; mask++) {
        cdse_recompute_modules_text(mask, modules_text[mask], MODULES_TEXT_MAX);
        modules_names[mask] = modules_text[mask];
    }
    modules_names[CDSE_RECOMPUTE_MODULES_N] = NULL;
}

static const char *const status_names[CDSE_ST_COUNT + 1] = {
    [CDSE_ST_OK] = "ok",
    [CDSE_ST_GPUS_NOT_DIVISIBLE] = "gpus_not_divisible",
    [CDSE_ST_TP_HEADS] = "tp_heads",
    [CDSE_ST_PP_LAYERS] = "pp_layers",
    [CDSE_ST_VPP] = "vpp_invalid",
    [CDSE_ST_BATCH_NOT_DIVISIBLE] = "batch_not_divisible",
    [CDSE_ST_CP] = "cp_invalid",
    [CDSE_ST_EP] = "ep_invalid",
    [CDSE_ST_SP_NEEDS_TP] = "sp_needs_tp",
    [CDSE_ST_ZERO_NEEDS_DP] = "zero_needs_dp",
    [CDSE_ST_DTYPE_UNSUPPORTED] = "dtype_unsupported",
    [CDSE_ST_OFFLOAD_NO_TIER] = "offload_no_tier",
    [CDSE_ST_POOL_SPLIT] = "pool_split",
    [CDSE_ST_OOM] = "oom",
    [CDSE_ST_OTHER_SYSTEM_AXIS] = "other_system_axis",
    [CDSE_ST_OFFLOAD_LAYERS] = "offload_layers_invalid",
    [CDSE_ST_RECOMPUTE_LAYERS] = "recompute_layers_invalid",
    [CDSE_ST_STACK_UNSUPPORTED] = "stack_unsupported",
    [CDSE_ST_OVER_HEADROOM] = "over_headroom",
    [CDSE_ST_OVER_BUDGET] = "over_budget",
};

const cdse_names cdse_status_enum = {status_names, CDSE_ST_COUNT, NULL};

const char *cdse_status_name(int status)
{
    return cdse_names_name(&cdse_status_enum, status);
}

int cdse_status_parse(const char *name)
{
    return cdse_names_find(&cdse_status_enum, name);
}

/* Tensor parallelism splits heads (Shoeybi et al. 2019); key/value heads are split when there
 * are at least tp of them and replicated otherwise (Megatron-Core GQA), and the FFN is split. */
static bool tp_fits(const cdse_model *model, int tp)
{
    if (model->heads % tp != 0 || model->ffn % tp != 0)
        return false;
    if (model->kv_heads >= tp)
        return model->kv_heads % tp == 0;
    return tp % model->kv_heads == 0;
}

/* MoE parallel folding (Megatron-Core megatron/core/parallel_state.py, initialize_model_parallel
 * with --expert-model-parallel-size and --expert-tensor-parallel-size): the expert grid
 * etp x ep x edp x pp covers the same world as tp x cp x dp x pp, so etp * ep must divide
 * tp * cp * dp (the world is then divisible by etp * ep * pp); experts divide over ep and each
 * expert's FFN over etp; when pp is not the outermost group, the attention and MoE layers must
 * have the same data-parallel size (its assertion), i.e. etp * ep == tp * cp. Derives edp. */
static bool expert_groups_fit(const cdse_model *model, cdse_strategy *s)
{
    if (s->etp == 0)
        s->etp = s->tp;
    if (model->experts == 0) {
        s->edp = s->cp * s->dp; /* no expert grid: the data-parallel ranks */
        return s->ep == 1 && s->etp == s->tp;
    }
    int model_ranks = s->tp * s->cp * s->dp, expert_ranks = s->etp * s->ep;
    s->edp = model_ranks / expert_ranks;
    if (model->experts % s->ep != 0 || model->moe_ffn % s->etp != 0 ||
        model_ranks % expert_ranks != 0)
        return false;
    return cdse_placement_pp_last(s->placement) || s->pp == 1 || s->edp == s->dp;
}

/* The units the pipeline divides: the layers, and the embedding and the output layer when the
 * split counts them (cdse_split_embedding). */
static int pipeline_units(const cdse_model *model, const cdse_strategy *s)
{
    return model->layers + (cdse_split_embedding(s) ? 2 : 0);
}

int cdse_chunk_layers(const cdse_model *model, const cdse_strategy *strategy)
{
    int chunks = strategy->pp * strategy->vpp, units = pipeline_units(model, strategy);
    return chunks > 0 ? (units + chunks - 1) / chunks : 0;
}

/* Partial activation offload: Megatron-Core offloads the activations of
 * cpu_offloading_num_layers layers and requires fewer than the model's layers
 * (megatron/core/transformer/transformer_config.py:1884-1889 at d98e8a64d: "CPU offloading can
 * be done only for layers less than num_layers"); per chunk here, where pipelines apply it. */
static bool offload_layers_fit(const cdse_model *model, const cdse_strategy *s)
{
    if (s->offload_layers == 0)
        return true;
    if (!(s->offload & CDSE_OFFLOAD_ACTIVATIONS) || s->offload_layers < 0)
        return false;
    return s->offload_layers < cdse_chunk_layers(model, s);
}

/* Block recomputation: Megatron-Core recomputes the first recompute_num_layers layers of each
 * chunk (megatron/core/recompute.py:167-181 at d98e8a64d, over the block's own layers,
 * transformer_block.py:334) and asks for 1 to the layers per pipeline rank
 * (transformer_config.py:1919-1925); the chunk's count itself is recompute_layers 0 here. */
static bool recompute_layers_fit(const cdse_model *model, const cdse_strategy *s)
{
    if (s->recompute_layers == 0)
        return true;
    if (s->recompute != CDSE_RECOMPUTE_FULL || s->recompute_layers < 0)
        return false;
    return s->recompute_layers < cdse_chunk_layers(model, s);
}

int cdse_strategy_check(const cdse_model *model, const cdse_system *system, cdse_strategy *strategy)
{
    cdse_strategy *s = strategy;
    s->dp = 0;
    s->grad_accum = 0;
    s->edp = 0;
    int model_parallel = s->tp * s->pp * s->cp;
    if (model_parallel <= 0 || s->gpus % model_parallel != 0)
        return CDSE_ST_GPUS_NOT_DIVISIBLE;
    s->dp = s->gpus / model_parallel;
    if (!tp_fits(model, s->tp))
        return CDSE_ST_TP_HEADS;
    /* Every pipeline chunk needs a layer; uneven splits are allowed (Megatron-Core). A split that
     * counts the embedding and the output layer as one layer each lets the first chunk hold only
     * the embedding and the last only the output layer (Dubey et al. 2024 Sec. 3.3.2). */
    if (s->pp * s->vpp > pipeline_units(model, s))
        return CDSE_ST_PP_LAYERS;
    if (s->global_batch % (s->microbatch * s->dp) != 0)
        return CDSE_ST_BATCH_NOT_DIVISIBLE;
    s->grad_accum = s->global_batch / (s->microbatch * s->dp);
    /* Megatron-LM's interleaved schedule needs a pipeline and a number of micro-batches that is a
     * multiple of the pipeline size (Narayanan et al. 2021, Sec. 2.2). */
    if (s->vpp > 1 && (s->pp < 2 || s->grad_accum % s->pp != 0))
        return CDSE_ST_VPP;
    /* DeepSpeed's pipeline engine (PipelineModule, TrainSchedule) has no virtual stages. */
    if (s->vpp > 1 && s->stack != NULL && s->stack->pipeline_lockstep)
        return CDSE_ST_VPP;
    if (!cdse_stack_has(s->stack, s->flash_attention, s->recompute == CDSE_RECOMPUTE_SELECTIVE,
                        s->sequence_parallel))
        return CDSE_ST_STACK_UNSUPPORTED;
    /* The fsdp2 stacks shard with FSDP2's fully_shard (zero = 3): torchtitan has no optimizer-
     * or gradient-only sharding (its data_parallel_shard_degree applies fully_shard; torchtitan
     * parallelize_llama.py apply_fsdp at 9dec370), ZeRO-1/2 as the model counts them are
     * Megatron's distributed optimizer, and its replicated path (data_parallel_replicate_degree:
     * DDP of fp32 parameters) is not Megatron's DDP of zero = 0 either, nor modelled. */
    if (s->stack != NULL && s->stack->fsdp2 && s->zero != 3)
        return CDSE_ST_STACK_UNSUPPORTED;
    /* Fine-grained recompute_modules are Megatron-Core's (--recompute-modules); a stack whose
     * selective checkpointing is the per-op policy (torchtitan) has none. */
    if (s->stack != NULL && s->stack->selective_policy == CDSE_SELECTIVE_OP &&
        s->recompute_modules != 0)
        return CDSE_ST_STACK_UNSUPPORTED;
    if (!offload_layers_fit(model, s))
        return CDSE_ST_OFFLOAD_LAYERS;
    if (!recompute_layers_fit(model, s))
        return CDSE_ST_RECOMPUTE_LAYERS;
    /* Load-balanced context parallelism splits the sequence into 2 cp chunks (Megatron-Core). */
    if (s->cp > 1 && model->seq_len % (2 * s->cp) != 0)
        return CDSE_ST_CP;
    if (!expert_groups_fit(model, s))
        return CDSE_ST_EP;
    if (s->sequence_parallel && s->tp == 1)
        return CDSE_ST_SP_NEEDS_TP;
    if (s->zero > 0 && s->dp * s->cp == 1)
        return CDSE_ST_ZERO_NEEDS_DP;
    if (!(system->peak_tflops[s->precision] > 0.0))
        return CDSE_ST_DTYPE_UNSUPPORTED;
    if (s->offload != 0 && system->tier.attach == CDSE_TIER_NONE)
        return CDSE_ST_OFFLOAD_NO_TIER;
    return CDSE_ST_OK;
}

/* Rank placement orders, innermost first: every permutation of the placed groups, numbered in
 * lexicographic order of their group indices (CDSE_PLACE_*), so that 0 is Megatron-LM's
 * tp-cp-dp-pp and the numbers are those stores hold. Names and orders are derived from that
 * numbering when the program is loaded; the evaluator reads the order table. */
static const char *const place_dim_names[CDSE_PLACE_DIMS] = {"tp", "cp", "dp", "pp"};

#define PLACEMENT_NAME_MAX (3 * CDSE_PLACE_DIMS)
static char placement_text[CDSE_PLACEMENT_COUNT][PLACEMENT_NAME_MAX];
static int placement_order[CDSE_PLACEMENT_COUNT][CDSE_PLACE_DIMS];
const char *cdse_placement_names[CDSE_PLACEMENT_COUNT + 1];

/* The permutation of rank `placement` (factorial number system: the first group is the
 * (placement / (n-1)!)-th of those left, and so on). */
static void placement_unrank(int placement, int order[CDSE_PLACE_DIMS])
{
    bool used[CDSE_PLACE_DIMS] = {false};
    int rest = placement, block = CDSE_PLACEMENT_COUNT;
    for (int k = 0; k < CDSE_PLACE_DIMS; k++) {
        block /= CDSE_PLACE_DIMS - k;
        int skip = rest / block;
        rest %= block;
        int d = 0;
        for (;; d++) {
            if (used[d])
                continue;
            if (skip == 0)
                break;
            skip--;
        }
        used[d] = true;
        order[k] = d;
    }
}

int cdse_placement_parse(const char *name)
{
    bool used[CDSE_PLACE_DIMS] = {false};
    int rank = 0, block = CDSE_PLACEMENT_COUNT;
    for (int k = 0; k < CDSE_PLACE_DIMS; k++) {
        int d = 0;
        while (d < CDSE_PLACE_DIMS && strncmp(name, place_dim_names[d], 2) != 0)
            d++;
        if (d == CDSE_PLACE_DIMS || used[d])
            return -1;
        block /= CDSE_PLACE_DIMS - k;
        for (int e = 0; e < d; e++)
            rank += used[e] ? 0 : block; /* groups left that sort before d */
        used[d] = true;
        name += 2;
        if (*name != (k + 1 < CDSE_PLACE_DIMS ? '-' : '\0'))
            return -1;
        name++;
    }
    return rank;
}

/* Runs before main (GCC and clang): the tables are constant from then on. */
__attribute__((constructor)) static void placement_tables(void)
{
    for (int p = 0; p < CDSE_PLACEMENT_COUNT; p++) {
        placement_unrank(p, placement_order[p]);
        char *text = placement_text[p];
        int len = 0;
        for (int k = 0; k < CDSE_PLACE_DIMS; k++)
            len += snprintf(text + len, (size_t)(PLACEMENT_NAME_MAX - len), "%s%s", k ? "-" : "",
                            place_dim_names[placement_order[p][k]]);
        cdse_placement_names[p] = text;
    }
    cdse_placement_names[CDSE_PLACEMENT_COUNT] = NULL;
}
const cdse_names cdse_placement_enum = {cdse_placement_names, CDSE_PLACEMENT_COUNT, NULL};

bool cdse_placement_pp_last(int placement)
{
    int p = placement >= 0 && placement < CDSE_PLACEMENT_COUNT ? placement : 0;
    return placement_order[p][CDSE_PLACE_DIMS - 1] == CDSE_PLACE_PP;
}

void cdse_expert_strides(int placement, int etp, int ep, int edp, int pp,
                         int strides[CDSE_EXPERT_DIMS])
{
    const int *order =
        placement_order[placement >= 0 && placement < CDSE_PLACEMENT_COUNT ? placement : 0];
    int stride = 1;
    for (int k = 0; k < CDSE_PLACE_DIMS; k++) {
        if (order[k] == CDSE_PLACE_TP) {
            strides[CDSE_EXPERT_TP] = stride;
            stride *= etp;
        } else if (order[k] == CDSE_PLACE_DP) {
            strides[CDSE_EXPERT_EP] = stride;
            strides[CDSE_EXPERT_DP] = stride * ep;
            stride *= ep * edp;
        } else if (order[k] == CDSE_PLACE_PP) {
            stride *= pp;
        }
    }
}

void cdse_placement_strides(int placement, int tp, int cp, int dp, int pp,
                            int strides[CDSE_PLACE_DIMS])
{
    int size[CDSE_PLACE_DIMS] = {tp, cp, dp, pp};
    const int *order =
        placement_order[placement >= 0 && placement < CDSE_PLACEMENT_COUNT ? placement : 0];
    int stride = 1;
    for (int k = 0; k < CDSE_PLACE_DIMS; k++) {
        strides[order[k]] = stride;
        stride *= size[order[k]];
    }
}

_Static_assert(CDSE_PLACEMENT_COUNT == 4 * 3 * 2 * 1 && CDSE_PLACE_DIMS == 4,
               "CDSE_PLACEMENT_COUNT is the number of orders of the placed groups");

int cdse_placement_ranks_without(const cdse_strategy *strategy, int dim)
{
    const cdse_strategy *s = strategy;
    int model_parallel = s->tp * s->cp * s->pp;
    if (s->tp <= 0 || s->cp <= 0 || s->pp <= 0 || s->gpus <= 0)
        return 0;
    int size[CDSE_PLACE_DIMS] = {s->tp, s->cp, s->gpus / model_parallel, s->pp};
    int ranks = 1;
    for (int d = 0; d < CDSE_PLACE_DIMS; d++)
        if (d != dim)
            ranks *= size[d];
    return ranks;
}
