/* Validity rules of a configuration, checked cheaply for every point of a sweep. */
#include "clusterdse/model/strategy.h"

#include <stdio.h>
#include <string.h>

static const char *const recompute_names[CDSE_RECOMPUTE_COUNT] = {"none", "selective", "full"};

const char *cdse_recompute_name(int recompute)
{
    if (recompute < 0 || recompute >= CDSE_RECOMPUTE_COUNT)
        return "?";
    return recompute_names[recompute];
}

int cdse_recompute_parse(const char *name)
{
    for (int i = 0; i < CDSE_RECOMPUTE_COUNT; i++)
        if (strcmp(name, recompute_names[i]) == 0)
            return i;
    return -1;
}

const char *const cdse_moe_dispatcher_names[CDSE_DISPATCH_COUNT + 1] = {"alltoall", "deepep", NULL};
const char *const cdse_moe_overlap_names[CDSE_MOE_OVERLAP_COUNT + 1] = {"none", "shared_experts",
                                                                        "a2a", NULL};

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

static const char *const status_names[CDSE_ST_COUNT] = {
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
};

const char *cdse_status_name(int status)
{
    if (status < 0 || status >= CDSE_ST_COUNT)
        return "?";
    return status_names[status];
}

int cdse_status_parse(const char *name)
{
    for (int i = 0; i < CDSE_ST_COUNT; i++)
        if (strcmp(name, status_names[i]) == 0)
            return i;
    return -1;
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
    /* Every pipeline chunk needs a layer; uneven splits are allowed (Megatron-Core). */
    if (s->pp * s->vpp > model->layers)
        return CDSE_ST_PP_LAYERS;
    if (s->global_batch % (s->microbatch * s->dp) != 0)
        return CDSE_ST_BATCH_NOT_DIVISIBLE;
    s->grad_accum = s->global_batch / (s->microbatch * s->dp);
    /* Megatron-LM's interleaved schedule needs a pipeline and a number of micro-batches that is a
     * multiple of the pipeline size (Narayanan et al. 2021, Sec. 2.2). */
    if (s->vpp > 1 && (s->pp < 2 || s->grad_accum % s->pp != 0))
        return CDSE_ST_VPP;
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

/* Rank placement orders, innermost first: every permutation of tp, cp, dp and pp, the default
 * (Megatron-LM's tp, cp, dp, pp) first. Expert parallelism is carved out of dp (its inner part). */
const char *const cdse_placement_names[CDSE_PLACEMENT_COUNT + 1] = {
    "tp-cp-dp-pp", "tp-cp-pp-dp", "tp-dp-cp-pp", "tp-dp-pp-cp", "tp-pp-cp-dp",
    "tp-pp-dp-cp", "cp-tp-dp-pp", "cp-tp-pp-dp", "cp-dp-tp-pp", "cp-dp-pp-tp",
    "cp-pp-tp-dp", "cp-pp-dp-tp", "dp-tp-cp-pp", "dp-tp-pp-cp", "dp-cp-tp-pp",
    "dp-cp-pp-tp", "dp-pp-tp-cp", "dp-pp-cp-tp", "pp-tp-cp-dp", "pp-tp-dp-cp",
    "pp-cp-tp-dp", "pp-cp-dp-tp", "pp-dp-tp-cp", "pp-dp-cp-tp", NULL,
};

/* The orders of cdse_placement_names as group indices, innermost first (the evaluator's hot
 * path reads this table rather than the names). */
static const int placement_order[CDSE_PLACEMENT_COUNT][CDSE_PLACE_DIMS] = {
    {CDSE_PLACE_TP, CDSE_PLACE_CP, CDSE_PLACE_DP, CDSE_PLACE_PP}, /* tp-cp-dp-pp */
    {CDSE_PLACE_TP, CDSE_PLACE_CP, CDSE_PLACE_PP, CDSE_PLACE_DP}, /* tp-cp-pp-dp */
    {CDSE_PLACE_TP, CDSE_PLACE_DP, CDSE_PLACE_CP, CDSE_PLACE_PP}, /* tp-dp-cp-pp */
    {CDSE_PLACE_TP, CDSE_PLACE_DP, CDSE_PLACE_PP, CDSE_PLACE_CP}, /* tp-dp-pp-cp */
    {CDSE_PLACE_TP, CDSE_PLACE_PP, CDSE_PLACE_CP, CDSE_PLACE_DP}, /* tp-pp-cp-dp */
    {CDSE_PLACE_TP, CDSE_PLACE_PP, CDSE_PLACE_DP, CDSE_PLACE_CP}, /* tp-pp-dp-cp */
    {CDSE_PLACE_CP, CDSE_PLACE_TP, CDSE_PLACE_DP, CDSE_PLACE_PP}, /* cp-tp-dp-pp */
    {CDSE_PLACE_CP, CDSE_PLACE_TP, CDSE_PLACE_PP, CDSE_PLACE_DP}, /* cp-tp-pp-dp */
    {CDSE_PLACE_CP, CDSE_PLACE_DP, CDSE_PLACE_TP, CDSE_PLACE_PP}, /* cp-dp-tp-pp */
    {CDSE_PLACE_CP, CDSE_PLACE_DP, CDSE_PLACE_PP, CDSE_PLACE_TP}, /* cp-dp-pp-tp */
    {CDSE_PLACE_CP, CDSE_PLACE_PP, CDSE_PLACE_TP, CDSE_PLACE_DP}, /* cp-pp-tp-dp */
    {CDSE_PLACE_CP, CDSE_PLACE_PP, CDSE_PLACE_DP, CDSE_PLACE_TP}, /* cp-pp-dp-tp */
    {CDSE_PLACE_DP, CDSE_PLACE_TP, CDSE_PLACE_CP, CDSE_PLACE_PP}, /* dp-tp-cp-pp */
    {CDSE_PLACE_DP, CDSE_PLACE_TP, CDSE_PLACE_PP, CDSE_PLACE_CP}, /* dp-tp-pp-cp */
    {CDSE_PLACE_DP, CDSE_PLACE_CP, CDSE_PLACE_TP, CDSE_PLACE_PP}, /* dp-cp-tp-pp */
    {CDSE_PLACE_DP, CDSE_PLACE_CP, CDSE_PLACE_PP, CDSE_PLACE_TP}, /* dp-cp-pp-tp */
    {CDSE_PLACE_DP, CDSE_PLACE_PP, CDSE_PLACE_TP, CDSE_PLACE_CP}, /* dp-pp-tp-cp */
    {CDSE_PLACE_DP, CDSE_PLACE_PP, CDSE_PLACE_CP, CDSE_PLACE_TP}, /* dp-pp-cp-tp */
    {CDSE_PLACE_PP, CDSE_PLACE_TP, CDSE_PLACE_CP, CDSE_PLACE_DP}, /* pp-tp-cp-dp */
    {CDSE_PLACE_PP, CDSE_PLACE_TP, CDSE_PLACE_DP, CDSE_PLACE_CP}, /* pp-tp-dp-cp */
    {CDSE_PLACE_PP, CDSE_PLACE_CP, CDSE_PLACE_TP, CDSE_PLACE_DP}, /* pp-cp-tp-dp */
    {CDSE_PLACE_PP, CDSE_PLACE_CP, CDSE_PLACE_DP, CDSE_PLACE_TP}, /* pp-cp-dp-tp */
    {CDSE_PLACE_PP, CDSE_PLACE_DP, CDSE_PLACE_TP, CDSE_PLACE_CP}, /* pp-dp-tp-cp */
    {CDSE_PLACE_PP, CDSE_PLACE_DP, CDSE_PLACE_CP, CDSE_PLACE_TP}, /* pp-dp-cp-tp */
};

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
