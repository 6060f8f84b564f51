/* Memory of one GPU for a training iteration: parameters, gradients and optimizer state by
 * ZeRO stage and pipeline stage, activations kept per micro-batch (Korthikanti et al. 2022,
 * arXiv 2205.05198, Table 2) with recomputation and offload, the busiest rank of the pipeline,
 * and the offload tier's traffic. Called by perf.c's evaluator and its floors. */
#include "perf_internal.h"

/* FP8 parameters (Transformer Engine fp8_model_init: modules "hold only quantized copies of
 * [their] parameters, as opposed to the default behavior where both higher precision and
 * quantized copies are present", transformer_engine/pytorch/quantization.py; NeMo fp8_params,
 * Megatron-Core --fp8-param-gather: "keep the compute param in fp8 ... and perform the param
 * all-gather in fp8", megatron/training/arguments.py): a layer weight is its FP8 copy, 1 B, and
 * only the transpose (TN-only FP8 GEMMs) is cached beside it. Embeddings stay bf16. */
#define FP8_PARAM_BYTES 1.0

/* Latent attention's weights on one TP rank: down projections and their RMSNorms replicated,
 * up and output projections split by heads (mla_params in workload.c for the whole layer). */
static double mla_params_per_gpu(const dims *x)
{
    double heads = x->heads_local;
    double q = x->q_rank > 0.0 ? x->h * x->q_rank + x->q_rank + x->q_rank * heads * x->d_qk
                               : x->h * heads * x->d_qk;
    double kv = x->h * (x->kv_rank + x->rope) + x->kv_rank + x->kv_rank * heads * (x->dh + x->d_v);
    return q + kv + heads * x->d_v * x->h;
}

void perf_stage_params(const cdse_model *model, const dims *x, stage_param_count *out)
{
    double norms = (x->gpt ? 4.0 : 2.0) * x->h;
    double attn = x->h * x->q / x->t + 2.0 * x->h * x->kv_local * x->dh + x->q / x->t * x->h;
    if (x->mla)
        attn = mla_params_per_gpu(x);
    double mlp_weights = x->gpt ? 2.0 : 3.0;
    double mlp = mlp_weights * x->h * x->ffn / x->t;
    double attn_biases = x->gpt ? (x->q / x->t + 2.0 * x->kv_local * x->dh + x->h) : 0.0;
    double mlp_biases = x->gpt ? x->ffn / x->t + x->h : 0.0;
    double moe_layers = x->moe_share * x->stage_layers;
    double dense_layers = x->stage_layers - moe_layers;
    double shared =
        mlp_weights * x->h * x->moe_ffn / x->t + (x->gpt ? x->moe_ffn / x->t + x->h : 0.0);
    double expert =
        mlp_weights * x->h * x->moe_ffn / x->etp + (x->gpt ? x->moe_ffn / x->etp + x->h : 0.0);
    double moe_dense = x->h * x->experts + x->shared * shared;
    out->dense = x->stage_layers * (attn + attn_biases + norms) +
                 dense_layers * (mlp + mlp_biases) + moe_layers * moe_dense;
    out->experts = x->experts > 0.0 ? moe_layers * x->experts / x->e * expert : 0.0;
    double vocab_shard = x->vocab * x->h / x->t;
    double positions = x->gpt ? x->s_positions * x->h : 0.0;
    out->embed = vocab_shard + positions;
    if (x->p == 1.0) {
        /* The single stage is also the last: final norm, and the output layer when untied. */
        out->embed += norms / 2.0;
        if (!model->tied_embeddings)
            out->embed += vocab_shard;
    }
}

/* Activation bytes of one layer and micro-batch that fine-grained recomputation does not keep
 * (Megatron-Core --recompute-modules; the terms of layer_activation_bytes below):
 *   core_attn       the unfused attention core's scores (flash attention keeps none);
 *   layernorm       the two norms' outputs (the QKV and FC1 inputs; their inputs stay);
 *   mla_up_proj     latent attention's up-projected Q, K and V (the latents stay);
 *   mlp             the dense MLP's activations (dense layers);
 *   moe_act         the activation function's output on the routed copies;
 *   shared_experts  the shared experts' activations;
 *   moe             everything of the MoE MLP but its input (router, permuted tokens, experts,
 *                   shared experts). */
static double module_savings(const env *e, const dims *x, bool moe)
{
    int mods = e->st->recompute_modules;
    if (mods == 0)
        return 0.0;
    const cdse_strategy *st = e->st;
    double sb = x->tokens, saved = 0.0;
    /* The sizes layer_activation_bytes keeps: a saved GEMM input is 1 B in FP8 training. */
    double in = st->precision == CDSE_FP8 ? FP8_GEMM_OPERAND_BYTES : ACT_BYTES;
    double mlp_bytes = x->gpt ? ACT_BYTES + in : 2.0 * ACT_BYTES + in;
    if ((mods & CDSE_RECOMPUTE_CORE_ATTN) && !st->flash_attention &&
        st->recompute != CDSE_RECOMPUTE_SELECTIVE)
        saved += x->b * x->heads_local * x->s_local * x->s_full * (x->gpt ? 5.0 : 2.0);
    if (mods & CDSE_RECOMPUTE_LAYERNORM)
        saved += 2.0 * in * sb * x->h * (st->sequence_parallel ? 1.0 / x->t : 1.0);
    if ((mods & CDSE_RECOMPUTE_MLA_UP_PROJ) && x->mla)
        saved += ACT_BYTES * sb * x->heads_local * (2.0 * x->d_qk + x->d_v);
    if (!moe) {
        if (mods & CDSE_RECOMPUTE_MLP)
            saved += mlp_bytes * sb * x->ffn / x->t;
        return saved;
    }
    double routed = sb * x->top_k * x->route_factor;
    double shared = x->shared * mlp_bytes * sb * x->moe_ffn / x->t;
    if (mods & CDSE_RECOMPUTE_MOE)
        return saved + sb * x->experts * ROUTER_BYTES + routed * (x->etp / x->t) * in * x->h +
               routed * mlp_bytes * x->moe_ffn / x->t + shared;
    if (mods & CDSE_RECOMPUTE_MOE_ACT)
        saved += routed * in * x->moe_ffn / x->t;
    if (mods & CDSE_RECOMPUTE_SHARED_EXPERTS)
        saved += shared;
    return saved;
}

/* Activation bytes of one layer and micro-batch under torchtitan's per-op selective
 * checkpointing (selective_policy "op", the policy of op_policy_recompute in perf_layer.c): the
 * block's input (the checkpoint's, split over TP ranks with sequence parallelism), the outputs of
 * the matmuls it keeps (wq, wv, w1 on the local heads and FFN columns; w2's [tokens, h] partial
 * sums), the attention output and its fp32 log-sum-exp per row, and with TP the outputs of the
 * reduce-scatters after wo and w2 (_c10d_functional.reduce_scatter_tensor is in the save list),
 * all bf16 (a Float8 matmul's output is bf16).
 * Eager, the policy's caching dispatch mode stores every output it marks MUST_SAVE
 * (torch/utils/checkpoint.py, _CachingTorchDispatchMode). A block compiled by torch.compile (the
 * stack's torch_compile; torchtitan apply_compile, parallelize_llama.py:297-306 at 9dec370) is
 * split into forward and backward graphs by AOTAutograd's min-cut partitioner
 * (torch/_functorch/partitioners.py, min_cut_rematerialization_partition): MUST_SAVE only bans a
 * node from recomputation (should_ban_recomputation), and what is saved is the cut between the
 * forward and the nodes the backward graph needs. w2's output, and with TP the reduce-scatter
 * after it, feed only the residual add that ends the block, whose backward reads no input: the
 * backward needs neither, and a compiled block does not keep them. */
static double op_policy_layer_bytes(const dims *x, bool sequence_parallel, bool compiled)
{
    double sb = x->tokens;
    double input = x->h * (sequence_parallel ? 1.0 / x->t : 1.0);
    double w2 = compiled ? 0.0 : x->h;
    double mms = x->q / x->t + x->kv_local * x->dh + (x->gpt ? 0.0 : x->ffn / x->t) + w2;
    double scatters = compiled ? 1.0 : 2.0; /* after wo (and w2) */
    double scattered = x->t > 1.0 ? scatters * x->h / x->t : 0.0;
    return sb * (ACT_BYTES * (input + mms + x->q / x->t + scattered) + 4.0 * x->heads_local);
}

static double unrecomputed_layer_bytes(const env *e, const dims *x, bool moe, int modules);

/* Activation bytes of one layer for one micro-batch (Korthikanti et al. 2022 Table 2,
 * generalized to GQA, gated MLPs, no dropout for Llama-style models, flash attention, and MoE
 * MLPs whose activations grow with the routed copies of each token). In FP8 training the inputs
 * of the linear layers are kept as their FP8 casts (1 B); the attention output is kept in bf16
 * for the fused attention's backward pass besides its FP8 cast for the projection. */
static double layer_activation_bytes(const env *e, const dims *x, bool moe)
{
    const cdse_strategy *st = e->st;
    double sb = x->tokens;
    double repl_share = st->sequence_parallel ? 1.0 / x->t : 1.0;
    if (st->recompute == CDSE_RECOMPUTE_FULL)
        return ACT_BYTES * sb * x->h * repl_share; /* the layer input only */
    if (st->recompute == CDSE_RECOMPUTE_SELECTIVE &&
        e->stk->selective_policy == CDSE_SELECTIVE_OP) {
        /* The policy saves a subset of what the layer keeps without checkpointing: never more
         * (the two formulas count different tensors; the smaller is what is kept). */
        double op = op_policy_layer_bytes(x, st->sequence_parallel, e->stk->torch_compile);
        double all = unrecomputed_layer_bytes(e, x, moe, st->recompute_modules);
        return op < all ? op : all;
    }
    bool fp8 = st->precision == CDSE_FP8;
    double in = fp8 ? FP8_GEMM_OPERAND_BYTES : ACT_BYTES; /* a saved GEMM input */
    /* Kept on every TP rank unless SP: both norm inputs, QKV and FC1 inputs, dropout masks. */
    double repl = sb * x->h * (2.0 * ACT_BYTES + 2.0 * in + (x->gpt ? 2.0 : 0.0));
    /* Split by TP: Q, K, V, projection input, MLP inputs/activations. */
    double qkv = ACT_BYTES * sb * (x->q / x->t + 2.0 * x->kv_local * x->dh);
    double proj_in = fp8 && st->flash_attention ? ACT_BYTES + in : in;
    double proj = proj_in * sb * x->q / x->t;
    if (x->mla) {
        /* Latent attention keeps the latents (replicated over TP) before and after their norms,
         * the RoPE key, and the up-projected Q, K (query/key dimension) and V of the local
         * heads; the projection's input has the value dimension. */
        double latents = 2.0 * x->q_rank + 2.0 * x->kv_rank + x->rope;
        qkv = ACT_BYTES * sb * (latents + x->heads_local * (2.0 * x->d_qk + x->d_v));
        proj = proj_in * sb * x->heads_local * x->d_v;
    }
    /* GeLU input and output (the FC2 input); SwiGLU gate, up and output. */
    double mlp_bytes = x->gpt ? ACT_BYTES + in : 2.0 * ACT_BYTES + in;
    double mlp = mlp_bytes * sb * x->ffn / x->t;
    if (moe) {
        /* Router logits and probabilities (fp32), the permuted routed tokens, the experts'
         * activations on them, and the shared experts on every token. */
        double routed = sb * x->top_k * x->route_factor;
        mlp = sb * x->experts * ROUTER_BYTES + routed * (x->etp / x->t) * in * x->h +
              routed * mlp_bytes * x->moe_ffn / x->t +
              x->shared * mlp_bytes * sb * x->moe_ffn / x->t;
    }
    double core = 0.0;
    double scores = x->b * x->heads_local * x->s_local * x->s_full;
    if (st->flash_attention)
        core = 4.0 * x->b * x->heads_local * x->s_local; /* fp32 log-sum-exp per row */
    else if (st->recompute != CDSE_RECOMPUTE_SELECTIVE)
        core = scores * (x->gpt ? 5.0 : 2.0); /* softmax out 2 B, dropout mask 1 B + out 2 B */
    double saved = st->recompute_modules != 0 ? module_savings(e, x, moe) : 0.0;
    return repl * repl_share + qkv + proj + mlp + core - saved;
}

/* layer_activation_bytes of a layer of the strategy run without recomputation, with the
 * fine-grained recomputation modules `modules`. */
static double unrecomputed_layer_bytes(const env *e, const dims *x, bool moe, int modules)
{
    cdse_strategy none = *e->st;
    none.recompute = CDSE_RECOMPUTE_NONE;
    none.recompute_modules = modules;
    env e_none = *e;
    e_none.st = &none;
    return layer_activation_bytes(&e_none, x, moe);
}

/* Activation bytes of the average layer of a stage for one micro-batch: with block
 * recomputation the recomputed layers keep their input only, the others everything a layer
 * without recomputation keeps (the granularity is full: no fine-grained modules apply). */
static double stage_layer_bytes(const env *e, const dims *x, bool moe)
{
    double kept = layer_activation_bytes(e, x, moe);
    if (e->st->recompute != CDSE_RECOMPUTE_FULL || e->st->recompute_layers <= 0)
        return kept;
    double share = recomputed_share(e->st, x->stage_layers);
    return share * kept + (1.0 - share) * unrecomputed_layer_bytes(e, x, moe, 0);
}

/* What recomputation rebuilds of one layer beyond what the layer keeps, of the layer type that
 * rebuilds the most: live during that layer's backward pass, once per stage (the layers are
 * recomputed one at a time), a transient of the backward pass beside the activations kept for it
 * (which Korthikanti et al. 2022 count, Table 2 and Fig. 1). Full recomputation rebuilds everything
 * a layer without recomputation keeps but its input, which the checkpoint holds (the granularity is
 * full: no fine-grained modules apply); selective recomputation the unfused attention core's
 * scores, softmax and dropout (flash attention keeps the same with and without it);
 * recompute_modules their modules' activations. With block recomputation of fewer than a chunk's
 * layers (every chunk's, the split's shorter end chunks too) nothing is added: the backward pass
 * reaches a chunk's first (recomputed) layers after its last layers, which keep every activation,
 * freed at least one layer's worth of the same micro-batch; unless activation offload moved every
 * layer's to the tier (offload_layers 0), when nothing of them was in HBM to free (issue 31:
 * without the buffer, recomputing fewer layers reported less memory than recomputing all). */
double perf_recompute_buffer(const env *e, const dims *x)
{
    const cdse_strategy *st = e->st;
    if (st->recompute == CDSE_RECOMPUTE_NONE && st->recompute_modules == 0)
        return 0.0;
    bool every_layer_offloaded = (st->offload & CDSE_OFFLOAD_ACTIVATIONS) &&
                                 perf_tier_bandwidth(e->sys) > 0.0 && st->offload_layers <= 0;
    /* Under the embedding-aware split the first chunk of rank 0 and the last chunk of the last
     * rank hold one layer fewer: recompute_layers of them is every layer (issue 31: without the
     * buffer there, recomputing one layer fewer than the others' chunks reported less memory
     * than recomputing all). */
    double end_chunk = x->stage_layers / x->v - (cdse_split_embedding(st) ? 1.0 : 0.0);
    if (st->recompute == CDSE_RECOMPUTE_FULL && recomputed_share(st, x->stage_layers) < 1.0 &&
        st->recompute_layers < end_chunk && !every_layer_offloaded)
        return 0.0;
    double buffer = 0.0;
    for (int moe = 0; moe < 2; moe++) {
        bool present = moe ? x->moe_layers > 0.0 : x->moe_share < 1.0;
        if (present)
            buffer = fmax(buffer, unrecomputed_layer_bytes(e, x, moe, 0) -
                                      layer_activation_bytes(e, x, moe));
    }
    return buffer;
}

/* Bytes per parameter of weights, gradients (`grad_bytes` per element) and optimizer state when
 * ZeRO shards them over `shard` ranks (Rajbhandari et al. 2020: stage 1 optimizer, 2 +
 * gradients, 3 + weights). */
static void state_bytes(int zero, double shard, double grad_bytes, double *w, double *g, double *o)
{
    *w = WEIGHT_BYTES;
    *g = grad_bytes;
    *o = OPTIMIZER_STATE_BYTES + (grad_bytes < GRAD_BYTES ? GRAD_BYTES : 0.0);
    if (zero >= 1)
        *o /= shard;
    if (zero >= 2)
        *g /= shard;
    if (zero >= 3)
        *w /= shard;
}

/* Bytes per parameter of the transformer layers' weights as a GPU holds and all-gathers them:
 * FP8 when the stack keeps FP8 parameters in FP8 training with sharded state, bf16 otherwise.
 * Megatron-LM refuses --fp8-param-gather without the distributed optimizer or FSDP
 * (megatron/training/arguments.py: "--fp8-param-gather only supported with distributed
 * optimizer, torch fsdp2, megatron fsdp, or inference mode"): zero 0 keeps bf16 weights. */
double perf_layer_weight_bytes(const env *e)
{
    bool fp8_params = e->st->precision == CDSE_FP8 && e->stk->fp8_param_gather && e->st->zero >= 1;
    return fp8_params ? FP8_PARAM_BYTES : WEIGHT_BYTES;
}

/* Chunk-micro-batches (one micro-batch through one of the v model chunks of a pipeline rank)
 * whose activations pipeline rank `rank` holds at its peak: the warm-up forward passes plus the
 * first forward of the steady state, all of them when the warm-up covers every pass
 * (Megatron-Core megatron/core/pipeline_parallel/schedules.py, get_pp_rank_microbatches:
 * p - rank - 1 warm-up passes without interleaving, 2 (p - rank - 1) + (v - 1) N with it, capped
 * at the m v passes of the iteration; N, the micro-batches run back to back on one chunk, is
 * the pipeline size by default, the least it allows: ModelParallelConfig
 * microbatch_group_size_per_vp_stage, "should range in [PP, M]"). */
static double rank_in_flight(const dims *x, double rank)
{
    double warmup = x->p - rank - 1.0;
    if (x->v > 1.0)
        warmup = 2.0 * (x->p - rank - 1.0) + (x->v - 1.0) * x->p;
    double total = x->m * x->v;
    return warmup + 1.0 < total ? warmup + 1.0 : total;
}

/* Of the first `passes` passes of a rank in schedule order (groups of N = p micro-batches on
 * chunk 0, then on chunk 1, ..., get_schedule_table of schedules.py), those on chunk `chunk`. */
static double passes_on_chunk(const dims *x, double passes, double chunk)
{
    double group = x->v > 1.0 ? x->p : x->m; /* without interleaving every pass is chunk 0 */
    double per_round = group * x->v;
    double rounds = floor(passes / per_round);
    double rest = passes - rounds * per_round - chunk * group;
    rest = rest < 0.0 ? 0.0 : (rest > group ? group : rest);
    return rounds * group + rest;
}

/* Activation bytes of the pipeline ranks that can peak, `per_mb` the bytes of one micro-batch on
 * the longest stage (stage_layers layers, v chunks): [0] rank 0, which holds the most passes
 * (1F1B: p micro-batches, Korthikanti et al. 2022 Sec. 4.2.3; interleaved: 1 + (p - 1) / (p v)
 * times that); [1] rank 1, with two passes fewer but, when the split counts the embedding as a
 * layer (`split`), full chunks where rank 0's first chunk holds one layer fewer (Dubey et al.
 * 2024 Sec. 3.3.2: "the first model chunk on the first stage has only the embedding"); [2] the
 * last rank, which runs each micro-batch's forward and backward back to back and holds the fp32
 * logits of its loss besides its passes (it peaks when the vocabulary is large against the
 * layers' activations). A stage's output is sent and freed (schedules.py
 * deallocate_output_tensor; Dubey et al. Sec. 3.3.2), so no pass holds more than its layers.
 * `per_layer`: the bytes of the layer a split's end chunk lacks (split_missing_layer). */
static void rank_activations(const dims *x, double per_mb, double logits, bool split,
                             double per_layer, double act[3])
{
    double per_chunk = per_mb / x->v;
    double first = rank_in_flight(x, 0.0);
    act[0] = first * per_chunk;
    if (split)
        act[0] -= passes_on_chunk(x, first, 0.0) * per_layer;
    act[1] = x->p > 2.0 ? rank_in_flight(x, 1.0) * per_chunk : 0.0;
    act[2] = rank_in_flight(x, x->p - 1.0) * per_chunk + logits;
    /* Without interleaving the last rank's one micro-batch holds the output layer in place of a
     * layer. With it the count keeps that layer: exact when later chunks' forwards refill what the
     * output-only passes leave, one layer high (never low) when every pass is in warm-up
     * (m = p). */
    if (split && x->v == 1.0)
        act[2] -= per_layer;
}

/* Weights, gradients, optimizer state and FP8 caches of a stage holding `params`, with the
 * bytes per parameter of memory_model. */
static void state_memory(const env *e, const dims *x, const stage_param_count *params,
                         const double dense_b[3], const double expert_b[3], cdse_result *r)
{
    double gib = CDSE_GIB;
    double layer_share = perf_layer_weight_bytes(e) / WEIGHT_BYTES; /* 1/2 with FP8 parameters */
    double dense = params->dense + params->embed;
    r->mem_weights_gib = ((params->dense * layer_share + params->embed) * dense_b[0] +
                          params->experts * layer_share * expert_b[0]) /
                         gib;
    r->mem_gradients_gib = (dense * dense_b[1] + params->experts * expert_b[1]) / gib;
    r->mem_optimizer_gib = (dense * dense_b[2] + params->experts * expert_b[2]) / gib;
    if (e->st->precision == CDSE_FP8) {
        /* With FP8 parameters the FP8 copy is the weight itself: the transpose (TN-only FP8
         * GEMMs) remains. */
        double cache = FP8_WEIGHT_COPY_BYTES + fp8_transpose_bytes(e->sys) -
                       (layer_share < 1.0 ? FP8_PARAM_BYTES : 0.0);
        r->mem_fp8_cache_gib = (params->dense + params->experts) * cache /
                               (e->st->zero >= 3 ? x->d * x->c : 1.0) / gib;
    }
}

/* FSDP2 (the stack's fsdp2 with ZeRO-3), as torchtitan applies fully_shard to each transformer
 * block and to the root module (embedding, final norm, output layer), with
 * MixedPrecisionPolicy(param_dtype bf16, reduce_dtype fp32) (torchtitan/parallelisms/
 * parallelize_llama.py at 9dec370, apply_fsdp, lines 309-339; config_manager.py
 * mixed_precision_param "bfloat16", mixed_precision_reduce "float32"):
 *  - sharded state: the fp32 parameters, which are what the optimizer updates (no separate
 *    master copy), their fp32 gradients and AdamW's two fp32 moments: 4 + 4 + 8 B / (dp cp);
 *  - without pipeline parallelism, the bf16 (FP8 with float8 all-gather: the stack's
 *    fp8_param_gather) parameters of the units gathered at once: the root (gathered for the
 *    output layer and the loss) and one block prefetched beside it (FSDP2's implicit prefetch
 *    of the next unit), and the bf16 gradients of the largest unit: 2 B per parameter of it.
 *    The root's (output layer's) gradient lives from the start of the backward pass, the
 *    memory's peak, to the root's reduce-scatter after the last block. The fp32 copy a unit's
 *    reduce-scatter makes (reduce_dtype; FSDP2 foreach_reduce) comes after the unit's backward
 *    pass has freed its activations, more bytes than the copy in every unit counted here, so
 *    it never raises the peak. The sharded fp32 gradients do not exist at that peak: torchtitan
 *    calls optimizers.zero_grad() at the start of every step (train.py:266 at 9dec370), which
 *    frees them (torch.optim.Optimizer.zero_grad, set_to_none=True by default since PyTorch
 *    2.0), and each unit's reduce-scatter creates its shard of them in the backward pass after
 *    the unit's backward has freed its activations. With one micro-batch per step they raise
 *    the peak only by what they exceed the activations (with the loss's logits) that the
 *    backward pass frees, when the step ends with the gradients and no activations: `act`
 *    bytes; with gradient accumulation each micro-batch's reduce-scatter adds into them, and
 *    they live through the later micro-batches' passes;
 *  - with pipeline parallelism, torchtitan keeps every block unsharded after its forward pass
 *    (reshard_after_forward False) and PyTorch's pipeline stage keeps parameters unsharded after
 *    backward and accumulates gradients unsharded until the last micro-batch
 *    (torch/distributed/pipelining/stage.py, backward_maybe_with_nosync:
 *    set_reshard_after_backward(False), set_requires_gradient_sync(False)), in the reduce dtype
 *    (fp32): the stage's parameters in bf16 (FP8) plus fp32 gradients, 2 (1) + 4 B each.
 * FP8 weights are cast per use (torchao): no cache lives across the iteration. */
#define FSDP2_SHARDED_PARAM_BYTES  4.0
#define FSDP2_ADAM_BYTES           8.0
#define FSDP2_UNSHARDED_GRAD_BYTES ACT_BYTES

static void fsdp2_state_memory(const env *e, const dims *x, const stage_param_count *params,
                               double act, cdse_result *r)
{
    double gib = CDSE_GIB;
    double dense = params->dense + params->embed;
    double all = dense + params->experts;
    double shard = x->d * x->c;
    double sharded_experts = params->experts / x->edp;
    double gathered = perf_layer_weight_bytes(e); /* bf16, or FP8 with float8 all-gather */
    double sharded = dense / shard + sharded_experts;
    r->mem_optimizer_gib = FSDP2_ADAM_BYTES * sharded / gib;
    r->mem_fp8_cache_gib = 0.0;
    if (x->p > 1.0) {
        r->mem_weights_gib = (FSDP2_SHARDED_PARAM_BYTES * sharded + gathered * all) / gib;
        r->mem_gradients_gib = (e->stk->grad_bytes * sharded + GRAD_BYTES * all) / gib;
        return;
    }
    double block = (params->dense + params->experts) / x->stage_layers;
    double root = params->embed;
    r->mem_weights_gib =
        (FSDP2_SHARDED_PARAM_BYTES * sharded + gathered * block + WEIGHT_BYTES * root) / gib;
    double sharded_grads = e->stk->grad_bytes * sharded;
    if (x->m <= 1.0) /* with accumulation they live through the later micro-batches' passes */
        sharded_grads = fmax(0.0, sharded_grads - act);
    r->mem_gradients_gib = (sharded_grads + FSDP2_UNSHARDED_GRAD_BYTES * fmax(block, root)) / gib;
}

/* Whether the strategy moves `what` (CDSE_OFFLOAD_*) to the second tier (offload_model). */
static bool offloads(const env *e, int what)
{
    return (e->st->offload & what) != 0 && perf_tier_bandwidth(e->sys) > 0.0;
}

/* The share of a stage's layers whose activations activation offload moves: every layer
 * (offload_layers 0), or offload_layers of the stage_layers / vpp layers of each chunk
 * (Megatron-Core --cpu-offloading-num-layers, megatron/core/model_parallel_config.py:460-461 at
 * d98e8a64d: "the number of transformer layers for which activations has to be offloaded").
 * Layers are taken as alike: the share of the bytes is the share of the layers. */
static double offloaded_share(const cdse_strategy *st, double stage_layers)
{
    if (st->offload_layers <= 0)
        return 1.0;
    return fmin(1.0, st->offload_layers * st->vpp / stage_layers);
}

/* The logits of one micro-batch on the last stage at the loss's peak: fp32 (Korthikanti et al.
 * 2022 Sec. 4.3), or what the stack's loss holds (cdse_stack.logit_bytes). */
static double logits_bytes(const dims *x)
{
    return x->tokens * x->vocab / x->t * x->logit_bytes;
}

/* The transformer layers' bytes of one micro-batch of `act_per_mb` (the single stage's include its
 * fp32 logits). */
static double layer_bytes_per_mb(const dims *x, double act_per_mb)
{
    return act_per_mb - (x->p == 1.0 ? logits_bytes(x) : 0.0);
}

/* The activation bytes of one layer and micro-batch without recomputation (the granularity is
 * full: no fine-grained modules apply), the stage's dense and MoE layers averaged. */
static double unrecomputed_average_layer(const env *e, const dims *x)
{
    double dense = x->moe_share < 1.0 ? unrecomputed_layer_bytes(e, x, false, 0) : 0.0;
    double moe = x->moe_layers > 0.0 ? unrecomputed_layer_bytes(e, x, true, 0) : 0.0;
    return (1.0 - x->moe_share) * dense + x->moe_share * moe;
}

/* Bytes of one micro-batch, of the `act_per_mb` a stage holds, that activation offload moves:
 * all of them with every layer offloaded (the single stage's logits too, as the whole-model
 * offload has always counted them); with offload_layers the bytes of the layers offloaded only,
 * since the offload context wraps the transformer layers and not the output layer
 * (megatron/core/transformer/transformer_block.py:714 at d98e8a64d). The layers offloaded are the
 * first offload_layers of each chunk: Transformer Engine's handler offloads the layer groups
 * numbered below num_offload_group (transformer_engine/pytorch/cpu_offload, tensor_push). Block
 * recomputation recomputes the first recompute_layers of each chunk, which keep their input only
 * (megatron/core/recompute.py:167-181 at d98e8a64d, use_checkpoint for layer_idx <
 * recompute_num_layers), the others everything: the offloaded layers are the recomputed ones first
 * (issue 31: taken as offload_layers of the stage's average layer, the offload moved part of a
 * layer that keeps everything, and recomputing fewer layers reported more memory than recomputing
 * all). Megatron-Core itself refuses cpu_offloading with recomputation or pipeline parallelism
 * (transformer_config.py:1891-1899 at d98e8a64d); the model composes the two orders. */
double perf_offloaded_bytes_per_mb(const env *e, const dims *x, double act_per_mb)
{
    const cdse_strategy *st = e->st;
    if (st->offload_layers <= 0)
        return act_per_mb;
    double share = offloaded_share(st, x->stage_layers);
    if (st->recompute != CDSE_RECOMPUTE_FULL || recomputed_share(st, x->stage_layers) >= 1.0 ||
        share >= 1.0) /* the layers alike, or every layer offloaded */
        return share * layer_bytes_per_mb(x, act_per_mb);
    double offloaded = st->offload_layers, recomputed = st->recompute_layers;
    double input_only = layer_activation_bytes(e, x, false); /* full recomputation: the input */
    return x->v * (fmin(offloaded, recomputed) * input_only +
                   fmax(0.0, offloaded - recomputed) * unrecomputed_average_layer(e, x));
}

/* Of one micro-batch's `off_mb` offloaded bytes (of `layers_mb` bytes of its layers), those that
 * stay in HBM: two layers' worth of the micro-batch is live (the layer computed and the one in
 * transit, of `per_mb` bytes and stage_layers layers), and the layers not offloaded already hold
 * that much when they are two or more: Transformer Engine's offload handler, which wraps every
 * layer (megatron/core/transformer/transformer_block.py:714 at d98e8a64d), offloads the layer
 * groups numbered below num_offload_group (transformer_engine/pytorch/cpu_offload, the group
 * handlers' tensor_push), the first N layers, so the layers computed last keep theirs. */
static double offloaded_in_hbm(const dims *x, double per_mb, double layers_mb, double off_mb)
{
    double two = fmin(1.0, 2.0 / x->stage_layers);
    if (off_mb >= layers_mb) /* every layer (with the single stage's logits, as always counted) */
        return fmin(off_mb, per_mb * two);
    return fmin(off_mb, fmax(0.0, layers_mb * two - (layers_mb - off_mb)));
}

/* Of `total` activation bytes holding `in_flight` micro-batches of `per_mb` bytes, those left in
 * HBM when each micro-batch moves `off_mb` (offloaded_bytes_per_mb) to the tier: all but the
 * offloaded bytes, with what offloaded_in_hbm keeps of them. */
static double hbm_after_offload(const dims *x, double total, double in_flight, double per_mb,
                                double off_mb)
{
    double layers_mb = layer_bytes_per_mb(x, per_mb);
    double resident = total - off_mb * in_flight + offloaded_in_hbm(x, per_mb, layers_mb, off_mb);
    return resident > total ? total : resident;
}

/* The activation bytes a rank holding `act` keeps in HBM after offload_model, `extra` of them
 * (the last rank's logits) not per pass, as offload_model counts them. */
static double resident_activations(const env *e, const dims *x, double act, double extra,
                                   double per_mb)
{
    if (!offloads(e, CDSE_OFFLOAD_ACTIVATIONS))
        return act;
    double off_mb = perf_offloaded_bytes_per_mb(e, x, per_mb);
    return hbm_after_offload(x, act, (act - extra) / per_mb, per_mb, off_mb);
}

/* HBM bytes of a rank's state (GiB) after offload_model took what the strategy offloads. */
static double resident_state_gib(const env *e, const cdse_result *c)
{
    return (offloads(e, CDSE_OFFLOAD_WEIGHTS) ? 0.0 : c->mem_weights_gib) + c->mem_gradients_gib +
           (offloads(e, CDSE_OFFLOAD_OPTIMIZER) ? 0.0 : c->mem_optimizer_gib) +
           c->mem_fp8_cache_gib;
}

/* GiB a rank with the state of `c` and `act` activation bytes (`extra` of them not per pass)
 * places on the second tier: what offload_model moves of it. */
static double tier_gib(const env *e, const dims *x, const cdse_result *c, double act, double extra,
                       double per_mb)
{
    double gib = (offloads(e, CDSE_OFFLOAD_WEIGHTS) ? c->mem_weights_gib : 0.0) +
                 (offloads(e, CDSE_OFFLOAD_OPTIMIZER) ? c->mem_optimizer_gib : 0.0);
    return gib + (act - resident_activations(e, x, act, extra, per_mb)) / CDSE_GIB;
}

/* The activation bytes of the layer that an end chunk of the embedding-aware split lacks against
 * a full chunk, one micro-batch: with block recomputation, which recomputes the first
 * recompute_layers layers of a chunk's own layers (megatron/core/recompute.py:167-181 at
 * d98e8a64d), one that keeps everything (issue 31: counted as the stage's average layer, an end
 * chunk whose every layer is recomputed still kept a share of a layer without recomputation, and
 * recomputing one layer fewer reported less memory than recomputing all); otherwise the average
 * layer (`per_mb` over stage_layers). */
static double split_missing_layer(const env *e, const dims *x, double per_mb)
{
    const cdse_strategy *st = e->st;
    if (st->recompute != CDSE_RECOMPUTE_FULL || st->recompute_layers <= 0 ||
        recomputed_share(st, x->stage_layers) >= 1.0)
        return per_mb / x->stage_layers;
    return unrecomputed_average_layer(e, x);
}

/* Under the embedding-aware split the ranks differ in what they hold: rank 0 one layer fewer and
 * the embedding, the middle ranks full stages, the last rank one layer fewer and the output
 * layer (untied, or the tied embedding's copy: Megatron keeps the word embedding on both ends).
 * Of ranks 0, 1 and the last, the one with the most memory left in HBM after offload (with the
 * allocator's share of the activations, memory's runtime term): its state into `r`, its index in
 * `act` returned; `tier_most` receives the most any of them places on the tier (tier_gib),
 * `weights_most` the most weights any of them holds (GiB). */
static int split_peak_stage(const env *e, const dims *x, const stage_param_count *params,
                            const double dense_b[3], const double expert_b[3], const double act[3],
                            double logits, double per_mb, cdse_result *r, double *tier_most,
                            double *weights_most)
{
    double layer_dense = params->dense / x->stage_layers;
    double layer_experts = params->experts / x->stage_layers;
    double output = x->vocab * x->h / x->t + (x->gpt ? 2.0 : 1.0) * x->h; /* + final norm */
    stage_param_count stage[3] = {
        {params->dense - layer_dense, params->experts - layer_experts, params->embed},
        {params->dense, params->experts, 0.0},
        {params->dense - layer_dense, params->experts - layer_experts, output},
    };
    double best = -1.0;
    int peak = 0;
    *tier_most = 0.0;
    *weights_most = 0.0;
    for (int k = 0; k < 3; k++) {
        if (k == 1 && x->p <= 2.0)
            continue; /* with two stages there is no middle rank */
        cdse_result c = *r;
        state_memory(e, x, &stage[k], dense_b, expert_b, &c);
        *weights_most = fmax(*weights_most, c.mem_weights_gib);
        /* What stays in HBM after offload decides the rank that peaks. */
        double extra = k == 2 ? logits : 0.0;
        double held = resident_activations(e, x, act[k], extra, per_mb);
        if (e->st->offload != 0)
            *tier_most = fmax(*tier_most, tier_gib(e, x, &c, act[k], extra, per_mb));
        double total =
            resident_state_gib(e, &c) + (1.0 + e->stk->allocator_overhead) * held / CDSE_GIB;
        if (total > best) {
            best = total;
            peak = k;
            *r = c;
        }
    }
    return peak;
}

/* Memory of the stage that peaks. `params` receives the parameter counts, `updated` the parameters
 * this GPU updates in the optimizer step, `act_per_mb` the activation bytes of one micro-batch and
 * `in_flight_out` the micro-batches whose activations are held at once; `r` the stage's figures,
 * with mem_offloaded_gib what another rank places on the tier beyond it (offload_model adds the
 * stage's own); `weights_most` the most weights (GiB) a pipeline rank holds, which need not be
 * the reported rank's: what weight offload streams on the rank that streams the most. */
void perf_memory_model(const cdse_model *model, const env *e, const dims *x, cdse_result *r,
                       stage_param_count *params, double *updated, double *act_per_mb,
                       double *in_flight_out, double *weights_most)
{
    const cdse_strategy *st = e->st;
    perf_stage_params(model, x, params);
    double dense = params->dense + params->embed;
    double dense_shard = x->d * x->c;
    double expert_shard = x->edp; /* expert state shards over the expert data-parallel group */
    double w, g, o, we, ge, oe;
    double gb = e->stk->grad_bytes;
    state_bytes(st->zero, dense_shard, gb, &w, &g, &o);
    state_bytes(st->zero, expert_shard, gb, &we, &ge, &oe);
    *updated = st->zero >= 1 ? dense / dense_shard + params->experts / expert_shard
                             : dense + params->experts;

    double moe_layers = x->moe_share * x->stage_layers;
    double dense_layers = x->stage_layers - moe_layers;
    double per_mb =
        dense_layers * stage_layer_bytes(e, x, false) + moe_layers * stage_layer_bytes(e, x, true);
    double logits = logits_bytes(x);
    if (x->p == 1.0)
        per_mb += logits; /* the single stage */
    *act_per_mb = per_mb;
    double dense_b[3] = {w, g, o}, expert_b[3] = {we, ge, oe};
    r->mem_fp8_cache_gib = 0.0;
    double act = per_mb;
    *in_flight_out = 1.0;
    if (x->p > 1.0) {
        double ranks[3];
        rank_activations(x, per_mb, logits, cdse_split_embedding(st),
                         split_missing_layer(e, x, per_mb), ranks);
        /* The rank with the most activations left in HBM after offload (issue 31: chosen before
         * it, the last rank's logits, which stay, lost to rank 0's passes, which leave, and more
         * recomputation could report more memory). */
        int peak;
        double tier_most;
        if (cdse_split_embedding(st)) {
            peak = split_peak_stage(e, x, params, dense_b, expert_b, ranks, logits, per_mb, r,
                                    &tier_most, weights_most);
        } else { /* rank 0 holds the most passes and the embedding, the last rank the logits */
            state_memory(e, x, params, dense_b, expert_b, r);
            *weights_most = r->mem_weights_gib;
            double held_first = resident_activations(e, x, ranks[0], 0.0, per_mb);
            double held_last = resident_activations(e, x, ranks[2], logits, per_mb);
            peak = held_last > held_first ? 2 : 0;
            tier_most = st->offload == 0 ? 0.0
                                         : fmax(tier_gib(e, x, r, ranks[0], 0.0, per_mb),
                                                tier_gib(e, x, r, ranks[2], logits, per_mb));
        }
        act = ranks[peak];
        double extra = peak == 2 ? logits : 0.0;
        /* The passes in flight, without the last rank's logits (one micro-batch's at a time). */
        *in_flight_out = (act - extra) / per_mb;
        /* The tier holds what the rank that offloads the most places there (rank 0, with the most
         * passes in flight, unless the state differs), which need not be the rank reported:
         * offload_model adds what the reported rank moves. */
        r->mem_offloaded_gib =
            st->offload == 0 ? 0.0 : fmax(0.0, tier_most - tier_gib(e, x, r, act, extra, per_mb));
    } else {
        state_memory(e, x, params, dense_b, expert_b, r);
        *weights_most = r->mem_weights_gib;
        r->mem_offloaded_gib = 0.0;
    }
    if (e->stk->fsdp2 && st->zero >= 3) {
        fsdp2_state_memory(e, x, params, act, r); /* the same on every rank */
        *weights_most = r->mem_weights_gib;
    }
    r->mem_activations_gib = act / CDSE_GIB;
    r->mem_other_gib = e->sys->reserved_gib;
}

/* Moves the state selected by the offload mask to the second tier; returns the HBM bytes/s
 * share of the tier for one GPU, at most its link to the tier (memory_tier.link_bandwidth), or 0
 * without a tier. */
double perf_tier_bandwidth(const cdse_system *sys)
{
    if (sys->tier.attach == CDSE_TIER_NONE)
        return 0.0;
    double share = sys->tier.bandwidth_gbs * 1e9 / sys->tier.shared_by;
    double link = sys->tier.link_bandwidth_gbs * 1e9;
    return link > 0.0 && link < share ? link : share;
}

/* The transfers to and from the second tier that overlap the computation (offload_model), in
 * seconds per iteration, on the rank that moves the most: `weights_gib` the most weights a
 * pipeline rank streams (memory_model's weights_most; issue 31: the reported rank's, which more
 * recomputation can change to one with fewer weights, made an iteration faster). */
double perf_offload_overlapped_time(const env *e, const dims *x, double act_per_mb,
                                    double weights_gib)
{
    const cdse_strategy *st = e->st;
    double bw = perf_tier_bandwidth(e->sys);
    if (st->offload == 0 || bw <= 0.0)
        return 0.0;
    double t = 0.0;
    if (st->offload & CDSE_OFFLOAD_ACTIVATIONS)
        t += 2.0 * x->m * perf_offloaded_bytes_per_mb(e, x, act_per_mb) / bw;
    if (st->offload & CDSE_OFFLOAD_WEIGHTS)
        t += 2.0 * x->m * weights_gib * CDSE_GIB / bw;
    return t;
}

/* `compute_time`: the computation the overlapped transfers (`overlapped` seconds,
 * perf_offload_overlapped_time) hide behind. */
void perf_offload_model(const env *e, const dims *x, double compute_time, double overlapped,
                        double act_per_mb, double in_flight, cdse_result *r)
{
    const cdse_strategy *st = e->st;
    double bw = perf_tier_bandwidth(e->sys);
    if (st->offload == 0 || bw <= 0.0)
        return;
    double lat = e->sys->tier.latency_us * 1e-6;
    double moved = 0.0, serial = 0.0;
    if (st->offload & CDSE_OFFLOAD_OPTIMIZER) {
        /* The optimizer step streams the state in and out (ZeRO-Offload style, Ren et al. 2021):
         * not overlapped with compute. */
        moved += r->mem_optimizer_gib;
        serial += 2.0 * r->mem_optimizer_gib * CDSE_GIB / bw + lat;
        r->mem_optimizer_gib = 0.0;
    }
    if (st->offload & CDSE_OFFLOAD_ACTIVATIONS) {
        /* Layer-wise activation offload (Megatron-Core's CPU offloading): every micro-batch
         * writes the offloaded layers' activations out during its forward pass and reads them
         * back for its backward pass, overlapped with compute; the other layers keep theirs.
         * What offloaded_in_hbm keeps stays in HBM, with whatever is not per micro-batch. */
        double off_mb = perf_offloaded_bytes_per_mb(e, x, act_per_mb);
        double total = r->mem_activations_gib * CDSE_GIB;
        double resident = hbm_after_offload(x, total, in_flight, act_per_mb, off_mb);
        moved += (total - resident) / CDSE_GIB;
        r->mem_activations_gib = resident / CDSE_GIB;
    }
    if (st->offload & CDSE_OFFLOAD_WEIGHTS) {
        /* Weights streamed in for forward and backward of every micro-batch (ZeRO-Infinity
         * style, Rajbhandari et al. 2021), overlapped with compute. */
        moved += r->mem_weights_gib;
        r->mem_weights_gib = 0.0;
    }
    /* memory_model left in mem_offloaded_gib what another pipeline rank places on the tier beyond
     * the reported one. */
    r->mem_offloaded_gib += moved;
    r->t_offload_s = serial + exposed(overlapped, compute_time);
}

double perf_tier_capacity_per_gpu(const cdse_system *sys)
{
    return sys->tier.capacity_gib / sys->tier.shared_by;
}

double cdse_embedding_state_gib(const cdse_model *model, const cdse_strategy *strategy)
{
    cdse_strategy st = *strategy;
    if (st.dp == 0)
        st.dp = st.gpus / (st.tp * st.pp * st.cp);
    dims x;
    perf_fill_dims(model, &st, &x);
    stage_param_count params;
    perf_stage_params(model, &x, &params);
    double w, g, o;
    const cdse_stack *stk = st.stack != NULL ? st.stack : &cdse_stack_default;
    state_bytes(st.zero, x.d * x.c, stk->grad_bytes, &w, &g, &o);
    return params.embed * (w + g + o) / CDSE_GIB;
}
