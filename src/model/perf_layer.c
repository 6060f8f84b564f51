/* One transformer layer's step on one GPU, per micro-batch: GEMMs at the system's efficiency,
 * attention, memory-bound element-wise kernels, the TP, CP and EP collectives of the layer and
 * what they overlap, and the recomputed modules (perf.c's evaluator composes the steps).
 * Sources for the formulas are given beside each cost; the constants are in perf_internal.h
 * where several parts of the evaluator use them. */
#include "perf_internal.h"

/* FP8 with per-tensor current scaling (Transformer Engine Float8CurrentScalingQuantizer,
 * NVIDIA/TransformerEngine v2.7 transformer_engine/pytorch/csrc/quantizer.cpp, quantize_impl):
 * nvte_compute_amax reads the bf16 tensor once before the cast kernel reads it again. Norms and
 * TE's activations fuse the amax into the kernel that writes the tensor (quantize_with_amax,
 * csrc/extensions/normalization.cpp and activation.cpp); every other GEMM input and every GEMM
 * output gradient (module/base.py grad_output_preprocess: quantizer(grad_output)) pays the pass.
 * Delayed scaling records the amax inside the cast kernel. */
#define FP8_AMAX_READ_BYTES 2.0

/* A kernel that moves no tensor data still holds its stream for a launch: "the launch overhead
 * of null kernels (kernels that don't do anything) appears to have been reduced to about 3
 * microseconds with recent hardware and software" (NVIDIA Developer Forums, "Too much time for
 * kernel launch latency", thread 233645, reply 3, 2022). Under current scaling Transformer
 * Engine 2.7 quantizes each tensor with four GPU operations (transformer_engine/common/recipe/
 * current_scaling.cu: launch_amax_kernel's cudaMemsetAsync of the amax, the amax kernel,
 * compute_scale_from_amax_kernel<<<1, 1>>>; then nvte_quantize_v2's cast), two of which move no
 * tensor data (the stack's fp8_scale_kernels), and a grouped linear layer quantizes every
 * local expert's rows separately: tex.split_quantize falls back to one quantizer call per
 * split, "Currently only have fused kernel for FP8 delayed scaling" (transformer_engine/pytorch/
 * csrc/extensions/cast.cpp, multi_tensor_quantize_impl, at TransformerEngine v2.7). */
#define KERNEL_LAUNCH_FLOOR_S 3.0e-6

/* With several local experts, the tokens received from the EP ranks are sorted again by local
 * expert after the dispatch and back before the combine (Megatron-Core
 * megatron/core/transformer/moe/token_dispatcher.py, "Permutation 2: Sort tokens by local
 * expert", moe_utils.sort_chunks_by_idxs): read 2 B + write 2 B per element each way. */
#define MOE_SORT_BYTES 8.0

/* MoE layers (Megatron-Core alltoall token dispatcher, Shazeer et al. 2017 / Fedus et al. 2021
 * routing): the router is a GEMM h x E followed by softmax/top-k; routed tokens are permuted into
 * expert order before dispatch and back after combine (read 2 B + write 2 B per element each
 * way), and the router keeps fp32 logits and probabilities (8 B per token and expert). */
#define MOE_PERMUTE_BYTES 8.0

/* Causal flash attention computes half of the score matrix; its backward pass runs 5 of the
 * forward's 2 GEMMs-worth of work (Dao 2023, "FlashAttention-2", Sec. 3: 2.5x forward). */
#define FLASH_CAUSAL_FRACTION 0.5
#define FLASH_BWD_FACTOR      2.5

/* Unfused attention core (Megatron-LM's fused scale-mask-softmax, then dropout): softmax reads
 * and writes 2 B per score; dropout reads 2 B, writes 2 B and a 1-byte mask; backward reads the
 * output and its gradient and writes the input gradient for each. */
#define SOFTMAX_FWD_BYTES      4.0
#define ATTN_DROPOUT_FWD_BYTES 5.0
#define SOFTMAX_BWD_BYTES      6.0
#define ATTN_DROPOUT_BWD_BYTES 5.0

/* Fused bias-GeLU: read 2 B, write 2 B; SwiGLU reads gate and up (4 B), writes 2 B. */
#define GELU_FWD_BYTES   4.0
#define SWIGLU_FWD_BYTES 6.0

/* Backward element-wise kernels read the incoming gradient and the saved input and write the
 * input gradient (LayerNorm also reduces its weight gradient): about 1.5x the forward traffic
 * (6 B vs 4 B per element for LayerNorm). */
#define ELEMENTWISE_BWD_FACTOR 1.5

/* Element-wise kernels, bytes per element of the tensor they run on (read + write):
 * LayerNorm reads and writes 2 B each (4 B); GPT's fused bias-dropout-add reads input and
 * residual, writes the output and a 1-byte mask (7 B); Llama's residual add has no dropout
 * (6 B). Two of each per layer (Korthikanti et al. 2022 Fig. 2 layer structure). */
#define LAYERNORM_FWD_BYTES    4.0
#define DROPOUT_ADD_FWD_BYTES  7.0
#define RESIDUAL_ADD_FWD_BYTES 6.0

static double batched_gemm_time(const env *e, double batch, double m, double n, double k,
                                double *flops)
{
    double f = 2.0 * batch * m * n * k;
    double bytes = batch * (m * k + k * n + m * n) * ACT_BYTES;
    double eff = cdse_eff_lookup(&e->sys->gemm_eff, f) * e->gemm_scale;
    double compute = f / (e->attn_peak * eff);
    double memory = bytes / e->hbm;
    *flops += f;
    return compute > memory ? compute : memory;
}

/* An expert's GEMM (rows set by routing, the FFN split over etp) is costed on its padded tiles
 * and counted with its real FLOPs: GEMM libraries compute whole output tiles ("tile
 * quantization", NVIDIA Matrix Multiplication Background User's Guide DU-09799-001, Sec. 3.1).
 * The efficiency tables hold GEMMs whose sizes are tile multiples, so the table path pads; the
 * shape model quantizes the tiles itself. */
static double expert_gemm_time(const env *e, double m, double n, double k, double *flops)
{
    if (e->gemm_sms > 0.0)
        return perf_gemm_time(e, m, n, k, flops);
    double padded_m = ceil(m / GEMM_TILE) * GEMM_TILE, padded_n = ceil(n / GEMM_TILE) * GEMM_TILE;
    double padded_flops = 0.0;
    *flops += 2.0 * m * n * k;
    return perf_gemm_time(e, padded_m, padded_n, k, &padded_flops);
}

/* The MLP of a MoE layer on one GPU: router, the local experts' grouped GEMMs on the tokens
 * routed to them (balanced share T k / ep per expert rank... times the capacity factor or the
 * imbalance of the busiest rank), shared experts on all tokens. Experts are split over TP like
 * the dense MLP (Megatron-Core expert tensor parallelism = tp). */
static double moe_mlp_time(const env *e, const dims *x, double *flops, double *col,
                           double *shared_time, double *shared_col, double *shared_flops)
{
    double gated = x->gpt ? 1.0 : 2.0;
    double router = perf_gemm_time(e, x->tokens, x->experts, x->h, flops);
    double local_experts = x->experts / x->e;
    /* Per expert: the routed copies of the tokens of the etp x ep ranks that share these
     * experts, i.e. of etp / tp attention TP groups (MoE parallel folding). */
    double rows = x->tokens * x->top_k * x->e / x->experts * x->route_factor * (x->etp / x->t);
    double one = 0.0; /* FLOPs of one local expert */
    double fc1 = local_experts * expert_gemm_time(e, rows, gated * x->moe_ffn / x->etp, x->h, &one);
    double fc2 = local_experts * expert_gemm_time(e, rows, x->h, x->moe_ffn / x->etp, &one);
    *flops += local_experts * one;
    double shared_fc1 = 0.0, shared_fc2 = 0.0;
    if (x->shared > 0.0) {
        double width = x->shared * x->moe_ffn / x->t;
        double before = *flops;
        shared_fc1 = perf_gemm_time(e, x->tokens, gated * width, x->h, flops);
        shared_fc2 = perf_gemm_time(e, x->tokens, x->h, width, flops);
        *shared_flops = *flops - before;
    }
    double elementwise =
        x->tokens *
        (x->experts * ROUTER_BYTES + x->top_k * x->route_factor * x->h * MOE_PERMUTE_BYTES) /
        e->hbm;
    if (local_experts > 1.0)
        elementwise += rows * x->experts / x->e * x->h * MOE_SORT_BYTES / e->hbm;
    *col = fc1 + shared_fc1;
    *shared_time = shared_fc1 + shared_fc2;
    *shared_col = shared_fc1;
    return router + fc1 + fc2 + shared_fc1 + shared_fc2 + elementwise;
}

/* Latent attention's projections on one GPU (Megatron-Core MLA): the down projections of queries
 * and keys/values (with the RoPE key) are replicated on every TP rank, the up projections and
 * the output projection split by heads: `qkv` receives the time of the GEMMs before the core,
 * `proj` that of the output projection. */
static void mla_linear_time(const env *e, const dims *x, double *flops, double *qkv, double *proj,
                            layer_cost *c)
{
    double heads = x->heads_local;
    double q, up = 0.0, up_flops = 0.0;
    if (x->q_rank > 0.0) {
        q = perf_gemm_time(e, x->tokens, x->q_rank, x->h, flops);
        up = perf_gemm_time(e, x->tokens, heads * x->d_qk, x->q_rank, &up_flops);
    } else {
        q = perf_gemm_time(e, x->tokens, heads * x->d_qk, x->h, flops);
    }
    double kv = perf_gemm_time(e, x->tokens, x->kv_rank + x->rope, x->h, flops);
    up += perf_gemm_time(e, x->tokens, heads * (x->dh + x->d_v), x->kv_rank, &up_flops);
    q += up;
    *flops += up_flops;
    c->mla_up_fwd = up;
    c->mla_up_flops = up_flops;
    *proj = perf_gemm_time(e, x->tokens, x->h, heads * x->d_v, flops);
    *qkv = q + kv;
}

/* `known`: a layer whose attention projections were already costed (NULL: cost them). */
static void linear_costs(const env *e, const dims *x, bool moe, layer_cost *c,
                         const layer_cost *known)
{
    double f = 0.0;
    double gated = x->gpt ? 1.0 : 2.0;
    double qkv, proj;
    if (known != NULL) {
        qkv = known->qkv_fwd;
        proj = known->proj_fwd;
        f = known->attn_linear_flops;
        c->mla_up_fwd = known->mla_up_fwd;
        c->mla_up_flops = known->mla_up_flops;
    } else if (x->mla) {
        mla_linear_time(e, x, &f, &qkv, &proj, c);
    } else {
        qkv = perf_gemm_time(e, x->tokens, x->q / x->t + 2.0 * x->kv_local * x->dh, x->h, &f);
        proj = perf_gemm_time(e, x->tokens, x->h, x->q / x->t, &f);
    }
    c->qkv_fwd = qkv;
    c->proj_fwd = proj;
    c->attn_linear_flops = f;
    double mlp, mlp_col, attention_flops = f, mlp_flops = 0.0;
    if (moe) {
        mlp = moe_mlp_time(e, x, &mlp_flops, &mlp_col, &c->shared_fwd, &c->shared_col,
                           &c->shared_flops);
        c->moe_fwd = mlp;
        c->moe_flops = mlp_flops;
    } else {
        double fc1 = perf_gemm_time(e, x->tokens, gated * x->ffn / x->t, x->h, &mlp_flops);
        double fc2 = perf_gemm_time(e, x->tokens, x->h, x->ffn / x->t, &mlp_flops);
        mlp = fc1 + fc2;
        mlp_col = fc1;
        c->mlp_fwd = mlp;
        c->mlp_flops = mlp_flops;
    }
    f = attention_flops + mlp_flops;
    c->linear_fwd = qkv + proj + mlp;
    c->col_gemm = qkv + mlp_col;
    c->flops_fwd += f;
}

/* Dispatch and combine all-to-alls (plan_ep_comm): forward dispatch + combine, backward the
 * two again on gradients, before any overlap (layer_step_of hides them with the strategy's
 * moe_overlap). */
static void ep_costs(const env *e, const dims *x, layer_cost *c)
{
    if (x->e <= 1.0)
        return;
    c->ep_fwd = e->comm.ep_dispatch + e->comm.ep_combine;
    c->ep_bwd = 2.0 * e->comm.ep_combine;
}

/* Flash attention with latent attention's head dimensions or sliding windows: 2 FLOPs per
 * query-key pair and query/key dimension, 2 per pair and value dimension, over the keys each
 * query attends to (cdse_attended_keys: half the causal sequence, or about the window). */
static double flash_flops(const dims *x)
{
    double rows = x->b * x->heads_local * x->s_local;
    double keys =
        (1.0 - x->swa_share) * cdse_attended_keys(x->s_full, 0.0) + x->swa_share * x->swa_keys;
    return 2.0 * rows * keys * (x->d_qk + x->d_v);
}

/* Ring attention's merge of the per-step partial results (Transformer Engine
 * AttnFuncWithCPAndKVP2P, transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py). Forward: each of the cp steps leaves a partial output in the activation
 * dtype; after the last one, flash_attn_fwd_out_correction_init rescales the first (read 2 B,
 * write 2 B per output element) and flash_attn_fwd_out_correction adds each further one in
 * place (out.add_(out_per_step * exp(lse_step - lse)): read 2 + 2 B, write 2 B). Backward: each
 * step's dq_, dk_, dv_ are copied (step 0) or added (dq.add_(dq_), dk.add_(dk_), dv.add_(dv_))
 * into the accumulated gradients. Counted for the slowest rank, whose steps all take the full
 * queries and half of the keys and values (the causal load-balanced split; rank cp - 1). The
 * per-row softmax statistics (one value per query and head) are negligible beside the head
 * dimension. PyTorch's ring (stack key cp_overlap = "step") merges its own way, in fp32
 * (cp_costs, CP_MERGE_FWD_BYTES): the two are never both charged. */
#define CP_MERGE_FIRST_BYTES 4.0
#define CP_MERGE_STEP_BYTES  6.0

double perf_cp_merge_bytes(const dims *x, double elements)
{
    return elements * (CP_MERGE_FIRST_BYTES + CP_MERGE_STEP_BYTES * (x->c - 1.0));
}

static void attention_costs(const env *e, const dims *x, bool flash, layer_cost *c)
{
    double scores = x->b * x->heads_local * x->s_local * x->s_full; /* score elements */
    if (flash) {
        double f = 4.0 * scores * x->dh * FLASH_CAUSAL_FRACTION;
        if (x->mla || x->swa_share > 0.0)
            f = flash_flops(x);
        /* The system's curve over the sequence (attention_seq_scale: short sequences are
         * less efficient), at the queries of one rank: with ring attention each step's block. */
        double eff = e->sys->attention_efficiency * e->stk->attention_scale *
                     cdse_eff_lookup(&e->sys->attention_seq_scale, x->s_local);
        c->attn_fwd = f / (e->attn_peak * eff);
        c->attn_bwd = FLASH_BWD_FACTOR * c->attn_fwd;
        if (x->c > 1.0 && e->stk->cp_overlap != CDSE_CP_OVERLAP_STEP) {
            double rows = x->b * x->s_local;
            double kv_heads = x->mla ? x->heads_local : x->kv_local;
            double out = rows * x->heads_local * x->d_v;
            double grads = rows * (x->heads_local * x->d_qk + 0.5 * kv_heads * (x->d_qk + x->d_v));
            c->attn_fwd += perf_cp_merge_bytes(x, out) / e->hbm;
            c->attn_bwd += perf_cp_merge_bytes(x, grads) / e->hbm;
        }
        c->attn_flops_fwd = f;
        c->flops_fwd += f;
        return;
    }
    /* Unfused attention computes the whole (masked) score matrix, windows or not. */
    double f = 0.0;
    double batch = x->b * x->heads_local;
    double qk = batched_gemm_time(e, batch, x->s_local, x->s_full, x->d_qk, &f);
    double av = batched_gemm_time(e, batch, x->s_local, x->d_v, x->s_full, &f);
    double fwd_bytes = SOFTMAX_FWD_BYTES + (x->gpt ? ATTN_DROPOUT_FWD_BYTES : 0.0);
    double bwd_bytes = SOFTMAX_BWD_BYTES + (x->gpt ? ATTN_DROPOUT_BWD_BYTES : 0.0);
    c->attn_fwd = qk + av + scores * fwd_bytes / e->hbm;
    c->attn_bwd = 2.0 * (qk + av) + scores * bwd_bytes / e->hbm;
    c->attn_flops_fwd = f;
    c->flops_fwd += f;
}

/* Elements per token that FP8 current scaling reads once more for their amax (FP8_AMAX_READ_BYTES)
 * in a layer whose MLP has `rows` rows per token of `width` columns on this GPU. Forward: the
 * projection's input (the attention output) and FC2's input (Megatron-Core's own SwiGLU / GeLU,
 * not TE's); in MoE layers also FC1's inputs (the permuted routed copies, the shared experts'
 * copy of the norm output: the MoE layer's norm is a module of its own); with latent attention
 * the up projections' inputs. QKV's and the dense FC1's inputs come from TE's fused norm +
 * linear. Backward: the output gradient of every GEMM (QKV or latent attention's projections,
 * projection, FC1 with its gate, FC2). */
static void fp8_amax_elements(const dims *x, bool moe, double rows, double width, double *fwd,
                              double *bwd)
{
    double gated = x->gpt ? 1.0 : 2.0;
    double proj_in = x->q / x->t, qkv_out = x->q / x->t + 2.0 * x->kv_local * x->dh;
    double latents = 0.0;
    if (x->mla) { /* the up projections' inputs are the latents after their own norms */
        proj_in = x->heads_local * x->d_v;
        latents = x->q_rank + x->kv_rank;
        qkv_out = latents + x->rope + x->heads_local * (x->d_qk + x->dh + x->d_v);
    }
    *fwd = latents + proj_in + rows * width + (moe ? rows * x->h : 0.0);
    *bwd = qkv_out + x->h + rows * (gated * width + x->h);
}

/* The FP8 GEMMs of a layer's forward pass on one GPU, whose inputs are quantized one by one
 * (and as many output gradients in the backward pass): QKV (latent attention: its down and up
 * projections) and the projection; the MLP's FC1 and FC2, in a MoE layer those of every local
 * expert (TE GroupedLinear, one GEMM and one quantized input per expert) and of the shared
 * experts. The router's GEMM is not an FP8 module (Megatron-Core TopKRouter.gating). */
static double fp8_quantized_tensors(const dims *x, bool moe)
{
    double attention = x->mla ? (x->q_rank > 0.0 ? 2.0 : 1.0) + 2.0 + 1.0 : 2.0;
    if (!moe)
        return attention + 2.0;
    return attention + 2.0 * x->experts / x->e + (x->shared > 0.0 ? 2.0 : 0.0);
}

static void elementwise_costs(const env *e, const dims *x, bool sp, bool moe, layer_cost *c)
{
    /* Norms and residual adds run on the full sequence on every TP rank unless sequence
     * parallelism splits them (Korthikanti et al. 2022 Sec. 4.2.2). */
    double h_share = sp ? x->h / x->t : x->h;
    double per_h =
        2.0 * LAYERNORM_FWD_BYTES + 2.0 * (x->gpt ? DROPOUT_ADD_FWD_BYTES : RESIDUAL_ADD_FWD_BYTES);
    double act = x->gpt ? GELU_FWD_BYTES : SWIGLU_FWD_BYTES;
    /* Rows entering the MLP per token (the routed copies and the shared experts in MoE layers)
     * and the MLP width each of them has on this GPU. */
    double mlp_rows = 1.0, mlp_width = x->ffn / x->t;
    if (moe) {
        mlp_rows = x->top_k * x->route_factor + (x->shared > 0.0 ? 1.0 : 0.0);
        mlp_width = (x->top_k * x->route_factor + x->shared) * x->moe_ffn / x->t / mlp_rows;
    }
    /* Eager PyTorch runs each norm and activation as several kernels (the stack's
     * elementwise_scale, 1 for fused kernels). */
    double scale = e->stk->elementwise_scale;
    double fwd = scale * x->tokens * (h_share * per_h + mlp_rows * mlp_width * act);
    c->norm_bytes = scale * x->tokens * h_share * 2.0 * LAYERNORM_FWD_BYTES;
    c->act_bytes = scale * x->tokens * mlp_rows * mlp_width * act;
    if (e->st->precision == CDSE_FP8) {
        /* Transformer Engine casts each GEMM input to fp8 and, with TN-only FP8 GEMMs, writes a
         * transposed copy for the weight gradient: read 2 B, write 1 + 1 B per element (1 B on
         * fp8_non_tn_gemm GPUs). */
        double inputs = x->h + x->q / x->t + mlp_rows * (x->h + mlp_width);
        double written = FP8_GEMM_OPERAND_BYTES + fp8_transpose_bytes(e->sys);
        fwd += x->tokens * inputs * (ACT_BYTES + written);
    }
    c->ew_fwd = fwd / e->hbm;
    c->ew_bwd = ELEMENTWISE_BWD_FACTOR * c->ew_fwd;
    if (e->st->precision == CDSE_FP8 && e->stk->fp8_scaling == CDSE_FP8_CURRENT) {
        double fwd_amax, bwd_amax;
        fp8_amax_elements(x, moe, mlp_rows, mlp_width, &fwd_amax, &bwd_amax);
        c->ew_fwd += x->tokens * fwd_amax * FP8_AMAX_READ_BYTES / e->hbm;
        c->ew_bwd += x->tokens * bwd_amax * FP8_AMAX_READ_BYTES / e->hbm;
        double scale_kernels =
            fp8_quantized_tensors(x, moe) * e->stk->fp8_scale_kernels * KERNEL_LAUNCH_FLOOR_S;
        c->ew_fwd += scale_kernels;
        c->ew_bwd += scale_kernels;
    }
}

static void tp_costs(const env *e, const dims *x, bool sp, layer_cost *c)
{
    if (x->t <= 1.0)
        return;
    if (!sp) {
        /* Two all-reduces forward (g after the row-parallel layers) and two backward (f before
         * the column-parallel layers, overlapping their weight-gradient GEMMs) (Shoeybi et al.
         * 2019, Fig. 3). */
        double ar = e->comm.tp_allreduce;
        c->tp_fwd = 2.0 * ar;
        c->tp_bwd_exposed = 0.0;
        c->tp_bwd_overlapped = 2.0 * ar;
        c->tp_bwd_window = c->col_gemm;
        return;
    }
    /* Sequence parallelism (Korthikanti et al. 2022 Sec. 4.2.2): forward, an all-gather before
     * each column-parallel layer and a reduce-scatter after each row-parallel layer. Backward, the
     * row-parallel layers must all-gather their output gradient before their GEMMs (exposed); the
     * column-parallel layers re-gather their input during the data-gradient GEMM and
     * reduce-scatter the input gradient during the weight-gradient GEMM (overlapped). */
    double ag = e->comm.tp_allgather;
    double rs = e->comm.tp_reduce_scatter;
    c->tp_fwd = 2.0 * (ag + rs);
    c->tp_bwd_exposed = 2.0 * ag;
    c->tp_bwd_overlapped = 2.0 * (ag + rs);
    c->tp_bwd_window = 2.0 * c->col_gemm;
}

/* PyTorch's ring attention (torch/distributed/tensor/experimental/_attention.py,
 * _SDPAMerger._merge_one and step, with _cp_options.convert_to_f32 True) merges each ring step's
 * partial output into the running one in fp32: out.to(float32) (read 2, write 4), out - block_out
 * (read 4 + 4, write 4), sigmoid(lse difference) * that (read 4, write 4; the per-row lse terms
 * are 1 / head_dim of it), out - product (read 4 + 4, write 4): 38 B per output element and step.
 * Its backward (_templated_ring_attention_backward) accumulates the query, key and value
 * gradients of every step in fp32 (each: cast read 2 write 4, add read 4 + 4 write 4 = 18 B):
 * 54 B per element (keys and values counted at the query's size: torchtitan repeats the
 * key/value heads before attention, torchtitan/models/llama/model.py repeat_kv). */
#define CP_MERGE_FWD_BYTES 38.0
#define CP_MERGE_BWD_BYTES 54.0

static void cp_costs(const env *e, const dims *x, layer_cost *c)
{
    c->cp_window_fwd = c->attn_fwd;
    c->cp_window_bwd = c->attn_bwd;
    if (x->c <= 1.0)
        return;
    /* Ring attention: c - 1 steps forward; backward passes keys/values and their gradients
     * (plan_layer_comm). */
    double step = e->comm.cp_step;
    c->cp_fwd = (x->c - 1.0) * step;
    c->cp_bwd = 2.0 * c->cp_fwd;
    if (e->stk->cp_overlap != CDSE_CP_OVERLAP_STEP)
        return;
    /* Step by step (_templated_ring_attention: step i waits for its keys and values, launches
     * the next step's exchange, then runs its block): a transfer hides behind one block's
     * attention only. With causal load balancing (_cp_options.enable_load_balance: each rank
     * holds sequence chunks r and 2c - 1 - r) every one of the c blocks does the same work,
     * 1 / c of the layer's attention (step 0 the causal diagonal of both chunks, the others
     * half of the keys or half of the queries in full). Summed over the c - 1 transfers:
     * (c - 1) exposed(step, attention / c) = exposed(cp_fwd, (c - 1) / c of the attention),
     * exposed() being linear in both its arguments. The merges add to the attention time. */
    double blocks = (x->c - 1.0) / x->c;
    double elements = x->tokens * x->heads_local * x->dh;
    c->attn_fwd += (x->c - 1.0) * elements * CP_MERGE_FWD_BYTES / e->hbm;
    c->attn_bwd += (x->c - 1.0) * elements * CP_MERGE_BWD_BYTES / e->hbm;
    c->cp_window_fwd = blocks * c->attn_fwd;
    c->cp_window_bwd = blocks * c->attn_bwd;
}

static void layer_costs(const env *e, const dims *x, bool moe, layer_cost *c,
                        const layer_cost *known)
{
    memset(c, 0, sizeof *c);
    linear_costs(e, x, moe, c, known);
    attention_costs(e, x, e->st->flash_attention, c);
    elementwise_costs(e, x, e->st->sequence_parallel, moe, c);
    tp_costs(e, x, e->st->sequence_parallel, c);
    cp_costs(e, x, c);
    if (moe)
        ep_costs(e, x, c);
}

/* The computation of one layer and micro-batch behind which its collectives can run, per pass
 * (the forward pass, the backward pass, and the forward work recomputation repeats in the
 * backward pass), in pieces that no two collectives' windows cut differently. */
enum {
    PIECE_SHARED,     /* shared experts' GEMMs outside TP's backward window */
    PIECE_SHARED_COL, /* shared experts' GEMMs inside it (their FC1, backward) */
    PIECE_COL,        /* the other GEMMs of TP's backward window (column-parallel, backward) */
    PIECE_LINEAR,     /* every other linear layer (projections, MLP, router, experts) */
    PIECE_ATTN,       /* attention core */
    PIECE_EW,         /* memory-bound element-wise kernels */
    PIECES
};
enum { PASS_FWD, PASS_BWD, PASS_RECOMPUTE, PASSES };
#define LINEAR_PIECES                                                                              \
    ((1 << PIECE_SHARED) | (1 << PIECE_SHARED_COL) | (1 << PIECE_COL) | (1 << PIECE_LINEAR))
#define ALL_PIECES ((1 << PIECES) - 1)

/* The layer's collectives share its computation (issue 31: each hiding behind the whole of a
 * window it shared with another, a shorter computation exposed up to twice what it saved): what
 * hides one collective's time does not hide another's. They take their windows narrowest first,
 * each from what the earlier ones left (layer_step_of): the CP ring behind the attention core of
 * its pass; EP behind the shared experts and TP's overlapped backward collectives behind the
 * column-parallel GEMMs, each in its own pieces first, then in the one they share; TP with
 * userbuffer overlap behind the linear GEMMs; EP with 1F1B all-to-all overlap behind all of it.
 * Together they hide the most their windows allow (windows nested or, for the pair, sharing one
 * piece), and when any piece shrinks no collective hides more and no piece has more left, so
 * less computation never exposes more than it saves. `left` holds what is free of each piece,
 * `hidden` per pass the computation that hides a collective. */
typedef struct layer_windows {
    double left[PASSES][PIECES];
    double hidden[PASSES];
} layer_windows;

/* max(0, v) and min(a, b) of finite values without the library calls fmax and fmin compile to
 * (their NaN rules): the hot path. */
static inline double positive(double v)
{
    return v > 0.0 ? v : 0.0;
}

static inline double smaller(double a, double b)
{
    return a < b ? a : b;
}

/* `comm` hidden behind one piece of one pass: returns the time hidden. */
static double hide_in(layer_windows *w, int pass, int piece, double comm)
{
    double *left = &w->left[pass][piece];
    double h = positive(smaller(comm, *left));
    *left -= h;
    w->hidden[pass] += h;
    return h;
}

/* `comm` hidden behind `pieces` (a mask) of the passes first..last, the same share of each:
 * then what is left of each piece grows with every piece, so no pass is left less free time by
 * a longer computation in another. Returns the time hidden. */
static double hide_spread(layer_windows *w, int first, int last, int pieces, double comm)
{
    double free_time = 0.0;
    for (int p = first; p <= last; p++)
        for (int k = 0; k < PIECES; k++)
            if (pieces & (1 << k))
                free_time += w->left[p][k];
    if (!(free_time > 0.0) || !(comm > 0.0))
        return 0.0;
    double h = smaller(comm, free_time), use = h / free_time;
    for (int p = first; p <= last; p++)
        for (int k = 0; k < PIECES; k++)
            if (pieces & (1 << k)) {
                double t = w->left[p][k] * use;
                w->left[p][k] -= t;
                w->hidden[p] += t;
            }
    return h;
}

/* What a collective of `comm` costs when `hidden` of it runs behind computation (exposed). */
static double exposed_part(double comm, double hidden)
{
    return comm - hidden + OVERLAP_INTERFERENCE * hidden;
}

/* The forward pass's pieces, scaled by `share` (the layers full recomputation runs again). */
static void forward_pieces(const layer_cost *lc, double share, double piece[PIECES])
{
    piece[PIECE_SHARED] = share * lc->shared_fwd;
    piece[PIECE_SHARED_COL] = 0.0;
    piece[PIECE_COL] = 0.0;
    piece[PIECE_LINEAR] = share * positive(lc->linear_fwd - lc->shared_fwd);
    piece[PIECE_ATTN] = share * lc->attn_fwd;
    piece[PIECE_EW] = share * lc->ew_fwd;
}

/* The backward pass's pieces (data- and weight-gradient GEMMs, each as long as the forward one):
 * `col` the GEMMs behind which TP's backward collectives run (tp_costs' window; 0 when TP
 * overlaps otherwise), `shared_col` the shared experts' part of them. */
static void backward_pieces(const layer_cost *lc, double col, double shared_col,
                            double piece[PIECES])
{
    piece[PIECE_SHARED_COL] = shared_col;
    piece[PIECE_COL] = positive(col - shared_col);
    piece[PIECE_SHARED] = positive(2.0 * lc->shared_fwd - shared_col);
    piece[PIECE_LINEAR] = positive(2.0 * lc->linear_fwd - col - piece[PIECE_SHARED]);
    piece[PIECE_ATTN] = lc->attn_bwd;
    piece[PIECE_EW] = lc->ew_bwd;
}

/* Kernel launches of a layer's forward pass, by module (the host's launch time of the kernels
 * recomputation repeats is their share of the forward's, layer_step's recompute_launch): one per
 * GEMM (cuBLAS), per norm (one fused LayerNorm/RMSNorm kernel: apex FusedLayerNorm, Transformer
 * Engine's layernorm/rmsnorm forward), per activation function (Megatron's fused bias-GeLU and
 * bias-SwiGLU) and per residual add (fused bias-dropout-add); the attention core one fused
 * kernel with flash attention, four without (Megatron-LM CoreAttention: baddbmm, fused
 * scale-mask-softmax, dropout, bmm); latent attention's down projections, latent norms and up
 * projections (Megatron-Core MLASelfAttention); the MoE MLP's router GEMM, fused top-k softmax,
 * permutation, grouped FC1, activation, grouped FC2 and unpermutation (Megatron-Core
 * moe/router.py, token_dispatcher.py, experts.py GroupedMLP), the sort by local expert and back
 * with several local experts (MOE_SORT_BYTES), and the shared experts' FC1, activation, FC2. */
#define NORM_LAUNCHES         2.0 /* the layer's two norms */
#define RESIDUAL_ADD_LAUNCHES 2.0
#define FLASH_CORE_LAUNCHES   1.0
#define UNFUSED_CORE_LAUNCHES 4.0
#define DENSE_MLP_LAUNCHES    3.0
#define MOE_MLP_LAUNCHES      7.0
#define MOE_SORT_LAUNCHES     2.0
#define ACTIVATION_LAUNCHES   1.0

static double core_launches(const env *e)
{
    return e->st->flash_attention ? FLASH_CORE_LAUNCHES : UNFUSED_CORE_LAUNCHES;
}

/* Latent attention's up projections (the recompute module mla_up_proj). */
static double mla_up_launches(const dims *x)
{
    return x->mla ? (x->q_rank > 0.0 ? 2.0 : 1.0) : 0.0;
}

static double shared_expert_launches(const dims *x)
{
    return x->shared > 0.0 ? DENSE_MLP_LAUNCHES : 0.0;
}

static double moe_mlp_launches(const dims *x)
{
    return MOE_MLP_LAUNCHES + (x->experts / x->e > 1.0 ? MOE_SORT_LAUNCHES : 0.0) +
           shared_expert_launches(x);
}

static double layer_launches(const env *e, const dims *x, bool moe)
{
    /* QKV and output projection; latent attention: the query's down projection, norm and up
     * projection (or its one projection), the key/value's three, the output projection. */
    double attention = x->mla ? (x->q_rank > 0.0 ? 3.0 : 1.0) + 3.0 + 1.0 : 2.0;
    double mlp = moe ? moe_mlp_launches(x) : DENSE_MLP_LAUNCHES;
    return NORM_LAUNCHES + RESIDUAL_ADD_LAUNCHES + attention + core_launches(e) + mlp;
}

/* Forward work that fine-grained recomputation repeats in the backward pass (the modules of
 * module_savings), added to the pieces `piece` of its pass: their forward kernels (`flops`,
 * `launches` their FLOPs and kernel launches), and with `moe` the dispatch and combine again
 * (`ep`, before overlap). core_attn adds nothing when `selective` already repeats the attention
 * core (not under the stack's per-op policy, which keeps the attention output). */
static void module_recompute(const env *e, const dims *x, bool moe, const layer_cost *lc,
                             double piece[PIECES], double *ep, double *flops, double *launches)
{
    int mods = e->st->recompute_modules;
    double act = lc->act_bytes / e->hbm;
    bool core_repeated = e->st->recompute == CDSE_RECOMPUTE_SELECTIVE &&
                         e->stk->selective_policy == CDSE_SELECTIVE_ATTENTION_CORE;
    if ((mods & CDSE_RECOMPUTE_CORE_ATTN) && !core_repeated) {
        piece[PIECE_ATTN] += lc->attn_fwd;
        *flops += lc->attn_flops_fwd;
        *launches += core_launches(e);
    }
    if (mods & CDSE_RECOMPUTE_LAYERNORM) {
        piece[PIECE_EW] += lc->norm_bytes / e->hbm;
        *launches += NORM_LAUNCHES;
    }
    if (mods & CDSE_RECOMPUTE_MLA_UP_PROJ) {
        piece[PIECE_LINEAR] += lc->mla_up_fwd;
        *flops += lc->mla_up_flops;
        *launches += mla_up_launches(x);
    }
    if (!moe && (mods & CDSE_RECOMPUTE_MLP)) {
        piece[PIECE_LINEAR] += lc->mlp_fwd;
        piece[PIECE_EW] += act;
        *flops += lc->mlp_flops;
        *launches += DENSE_MLP_LAUNCHES;
    }
    if (moe && (mods & CDSE_RECOMPUTE_MOE)) {
        piece[PIECE_LINEAR] += positive(lc->moe_fwd - lc->shared_fwd);
        piece[PIECE_SHARED] += lc->shared_fwd;
        piece[PIECE_EW] += act;
        *flops += lc->moe_flops;
        *ep += lc->ep_fwd;
        *launches += moe_mlp_launches(x);
    } else if (moe) {
        if (mods & CDSE_RECOMPUTE_MOE_ACT) {
            piece[PIECE_EW] += act;
            *launches += ACTIVATION_LAUNCHES;
        }
        if (mods & CDSE_RECOMPUTE_SHARED_EXPERTS) {
            piece[PIECE_SHARED] += lc->shared_fwd;
            *flops += lc->shared_flops;
            *launches += shared_expert_launches(x);
        }
    }
}

/* torchtitan's per-op selective checkpointing (selective_policy "op"): the forward kernels whose
 * outputs the policy does not keep run again in the backward pass. It keeps every other matmul's
 * output, counted in call order from 1 (torchtitan/parallelisms/parallelize_llama.py at 9dec370,
 * _save_list and _custom_policy, lines 214-262: "Saves output of all compute ops, except every
 * second mm"), and the attention output; a Llama block calls wq, wk, wv, wo, then w1, w3, w2
 * (model.py Attention.forward, FeedForward.forward: w2(silu(w1(x)) * w3(x))), so wk, wo and w3
 * run again, and every element-wise kernel (norms, rotary, SwiGLU, residual adds, FP8 casts),
 * none of which the policy keeps. FP8 linears count too: torchao's Float8Linear calls aten.mm
 * on Float8Tensor operands (torchao/float8/float8_linear.py at eab345c), which the policy sees
 * before the subclass dispatches it. Added to the recomputed pass's pieces; `flops` and
 * `launches` receive its FLOPs and kernel launches (the GEMMs wk, wo, w3 and the norms, residual
 * adds and activation of layer_launches). */
static void op_policy_recompute(const dims *x, const layer_cost *lc, double piece[PIECES],
                                double *flops, double *launches)
{
    double q_out = x->q / x->t, kv_out = x->kv_local * x->dh, ffn = x->ffn / x->t;
    double qkv_width = q_out + 2.0 * kv_out;
    double wk = qkv_width > 0.0 ? lc->qkv_fwd * kv_out / qkv_width : 0.0;
    /* FC1 is w1 and w3 side by side in a gated MLP; a plain MLP has no w3. */
    double w3 = x->gpt ? 0.0 : 0.5 * (lc->col_gemm - lc->qkv_fwd);
    piece[PIECE_LINEAR] += wk + lc->proj_fwd + w3;
    piece[PIECE_EW] += lc->ew_fwd;
    *flops += 2.0 * x->tokens * x->h * (kv_out + q_out + (x->gpt ? 0.0 : ffn));
    *launches +=
        2.0 + (x->gpt ? 0.0 : 1.0) + NORM_LAUNCHES + RESIDUAL_ADD_LAUNCHES + ACTIVATION_LAUNCHES;
}

/* The recomputation of a layer into `step` (recompute, its FLOPs and share of the forward's
 * launches) and into the pieces of the recomputed pass; `tp`, `cp`, `ep` receive the collectives
 * it repeats (before overlap). Full recomputation runs the recomputed layers' forward pass again
 * with its collectives; selective the attention core (with flash attention that saves no memory,
 * the core keeps no score matrix, but still costs the forward kernel: Megatron-Core checkpoints
 * core attention whatever its kernel); recompute_modules their modules. */
static void recompute_of(const env *e, const dims *x, bool moe, const layer_cost *lc,
                         layer_step *step, double piece[PIECES], double *tp, double *cp, double *ep)
{
    const cdse_strategy *st = e->st;
    *tp = *cp = *ep = 0.0;
    if (st->recompute == CDSE_RECOMPUTE_FULL) {
        double share = recomputed_share(st, x->stage_layers);
        forward_pieces(lc, share, piece);
        *tp = share * lc->tp_fwd;
        *cp = share * lc->cp_fwd;
        *ep = share * lc->ep_fwd;
        step->recompute = share * step->fwd;
        step->recompute_flops = share * lc->flops_fwd;
        step->recompute_launch = share;
        return;
    }
    double flops = 0.0, launches = 0.0;
    if (st->recompute == CDSE_RECOMPUTE_SELECTIVE &&
        e->stk->selective_policy == CDSE_SELECTIVE_OP) {
        op_policy_recompute(x, lc, piece, &flops, &launches);
    } else if (st->recompute == CDSE_RECOMPUTE_SELECTIVE) {
        piece[PIECE_ATTN] = lc->attn_fwd;
        flops = lc->attn_flops_fwd;
        launches = core_launches(e);
    }
    if (st->recompute_modules != 0)
        module_recompute(e, x, moe, lc, piece, ep, &flops, &launches);
    double t = 0.0;
    for (int k = 0; k < PIECES; k++)
        t += piece[k];
    step->recompute = t;
    step->recompute_flops = flops;
    step->recompute_launch = launches > 0.0 ? launches / layer_launches(e, x, moe) : 0.0;
}

/* PyTorch's async TP (stack key async_tp; torchtitan's parallelism.enable_async_tensor_parallel,
 * which turns on torch._inductor's micro_pipeline_tp pass; the compiled graph's all-gather ->
 * matmul and matmul -> reduce-scatter become torch.distributed._symmetric_memory's
 * fused_all_gather_matmul and fused_matmul_reduce_scatter). Read in pytorch/pytorch
 * torch/distributed/_symmetric_memory/__init__.py (_pipelined_multi_all_gather_and_consume,
 * _pipelined_produce_and_all2all, _fused_matmul_reduce_scatter_impl):
 *  - all-gather + GEMM: barrier (channel 0), the local shard copied into its symmetric buffer,
 *    barrier (channel 1), all before the first GEMM piece ("we are giving up the chance to
 *    overlap mv and b with the first shard_consumer"); then the local shard's GEMM while the
 *    first peer's shard is pulled, and t - 1 steps on two alternating streams each copying one
 *    peer's shard and multiplying it; a closing barrier: 3 barriers and the local copy (read and
 *    write of the shard, 2 S / t bytes, S the gathered activation) exposed; the transfer behind
 *    the t - 1 GEMM pieces that follow the first.
 *  - GEMM + reduce-scatter: barrier, t - 1 steps each producing one peer's partial (a GEMM piece)
 *    then barrier, copy, barrier on its stream (hidden by the other stream's piece), the local
 *    piece, a closing barrier; then the t partials of S / t summed (reduce_partials: read S,
 *    write S / t): 2 barriers and that sum exposed, the transfer behind t - 1 of t pieces.
 *  - Every fused GEMM runs as t pieces of a t-th of its rows, on two streams (async_tp_split_cost).
 *  - The peer copies are copy_ of contiguous tensors of one dtype (cudaMemcpyAsync: the copy
 *    engines, no SMs), so what hides costs the GEMMs nothing: no OVERLAP_INTERFERENCE.
 * A barrier is a signal to every peer and a wait for theirs over the NVLink domain: one latency
 * of the innermost level. The collectives are those of tp_costs: forward 2 all-gathers and 2
 * reduce-scatters; backward 4 all-gathers and 2 reduce-scatters; recomputation repeats the
 * forward's. The split GEMMs: the forward's four (QKV, projection, FC1, FC2), in backward the
 * four data-gradient GEMMs that consume or feed those collectives (each the forward GEMM's shape
 * transposed, costed as the forward's pieces). Attention projections of latent attention and the
 * MoE MLP keep their whole-GEMM cost (chunk overheads only). */
#define ASYNC_TP_AG_BARRIERS 3.0 /* entry, after the local copy, exit */
#define ASYNC_TP_RS_BARRIERS 2.0 /* entry and exit; the per-step ones behind the other stream */
#define ASYNC_TP_FWD_AG      2.0
#define ASYNC_TP_FWD_RS      2.0
#define ASYNC_TP_BWD_AG      4.0
#define ASYNC_TP_BWD_RS      2.0

/* What splitting a forward pass's fused GEMMs into t pieces of a t-th of their rows adds. The
 * pieces run on two streams at once ("computation/computation overlapping, greatly reducing
 * quantization inefficiency", _pipelined_multi_all_gather_and_consume), so each pair of them
 * fills the GPU as one GEMM of 2 / t of the rows would: t / 2 such GEMMs (none for t = 2). */
static double async_tp_split_cost(const env *e, const dims *x, bool moe, const layer_cost *lc)
{
    double t = x->t, pairs = 0.5 * t, rows = x->tokens / pairs, f = 0.0, extra = 0.0;
    if (!x->mla) {
        extra += pairs * perf_gemm_time(e, rows, x->q / t + 2.0 * x->kv_local * x->dh, x->h, &f) -
                 lc->qkv_fwd;
        extra += pairs * perf_gemm_time(e, rows, x->h, x->q / t, &f) - lc->proj_fwd;
    }
    if (!moe) {
        double gated = x->gpt ? 1.0 : 2.0;
        extra += pairs * perf_gemm_time(e, rows, gated * x->ffn / t, x->h, &f) +
                 pairs * perf_gemm_time(e, rows, x->h, x->ffn / t, &f) - lc->mlp_fwd;
    }
    return positive(extra);
}

/* The exposed fixed part of `ag` fused all-gathers and `rs` fused reduce-scatters. */
static double async_tp_fixed(const env *e, const dims *x, double ag, double rs)
{
    double barrier = e->sys->level[0].latency_us * 1e-6;
    double s = x->tokens * x->h * ACT_BYTES; /* the gathered activation (perf_plan_layer_comm) */
    double local_copy = 2.0 * s / x->t / e->hbm;
    double partial_sum = s * (1.0 + 1.0 / x->t) / e->hbm;
    return ag * (ASYNC_TP_AG_BARRIERS * barrier + local_copy) +
           rs * (ASYNC_TP_RS_BARRIERS * barrier + partial_sum);
}

/* `comm` of one pass hidden behind (t - 1) / t of what is left of its linear GEMMs: the first
 * piece of each fused GEMM runs before (all-gather: the local shard, while the first peer's is
 * pulled) or after (reduce-scatter: the local partial, while the last peer's is pulled) the
 * t - 1 pieces that the t - 1 copies pace. Returns the time hidden. */
static double hide_chunked(layer_windows *w, int pass, double t, double comm)
{
    double free_time = 0.0;
    for (int k = 0; k < PIECES; k++)
        if (LINEAR_PIECES & (1 << k))
            free_time += w->left[pass][k];
    return hide_spread(w, pass, pass, LINEAR_PIECES, smaller(comm, (t - 1.0) / t * free_time));
}

/* TP: forward and recomputed collectives exposed, the backward ones behind their GEMMs; with
 * userbuffer overlap every TP collective is split into chunks pipelined with the GEMM it
 * feeds or drains (Transformer Engine userbuffers; Wang et al. 2022, "Overlap Communication
 * with Dependent Computation via Decomposition"): behind the linear GEMMs of its pass. Sets
 * step->tp and returns the forward pass's exposed TP time;
 * `tp_overlapped` and `tp_hidden` are the backward pass's overlapped collectives and the part of
 * them already hidden (layer_step_of). */
static inline double tp_step(const env *e, const dims *x, bool moe, const layer_cost *lc,
                             layer_windows *w, bool tp_overlap, double rec_tp, double tp_overlapped,
                             double tp_hidden, layer_step *step)
{
    double tp_fwd = lc->tp_fwd;
    if (tp_overlap && e->stk->async_tp && e->st->sequence_parallel && x->t > 1.0) {
        double split = async_tp_split_cost(e, x, moe, lc);
        double again = lc->tp_fwd > 0.0 ? rec_tp / lc->tp_fwd : 0.0; /* forward share repeated */
        double bwd = lc->tp_bwd_exposed + lc->tp_bwd_overlapped;
        double fwd_fixed = async_tp_fixed(e, x, ASYNC_TP_FWD_AG, ASYNC_TP_FWD_RS) + split;
        tp_fwd = tp_fwd - hide_chunked(w, PASS_FWD, x->t, tp_fwd) + fwd_fixed;
        step->tp = tp_fwd + bwd - hide_chunked(w, PASS_BWD, x->t, bwd) +
                   async_tp_fixed(e, x, ASYNC_TP_BWD_AG, ASYNC_TP_BWD_RS) + split + rec_tp -
                   hide_chunked(w, PASS_RECOMPUTE, x->t, rec_tp) + again * fwd_fixed;
    } else if (tp_overlap) {
        double bwd = lc->tp_bwd_exposed + lc->tp_bwd_overlapped;
        tp_fwd = exposed_part(tp_fwd, hide_spread(w, PASS_FWD, PASS_FWD, LINEAR_PIECES, tp_fwd));
        step->tp =
            tp_fwd + exposed_part(bwd, hide_spread(w, PASS_BWD, PASS_BWD, LINEAR_PIECES, bwd)) +
            exposed_part(rec_tp,
                         hide_spread(w, PASS_RECOMPUTE, PASS_RECOMPUTE, LINEAR_PIECES, rec_tp));
    } else {
        step->tp =
            lc->tp_fwd + lc->tp_bwd_exposed + exposed_part(tp_overlapped, tp_hidden) + rec_tp;
    }
    return tp_fwd;
}

/* Forward collectives are on the critical path unless the strategy overlaps them; backward TP
 * collectives overlap the weight-gradient GEMMs (Megatron-LM's asynchronous TP all-reduce), CP
 * exchanges the attention core, EP all-to-alls what moe_overlap gives them; the collectives of a
 * layer share its computation (layer_windows). `out` receives the layer's costs; `known` as in
 * linear_costs. */
static void layer_step_of(const env *e, const dims *x, bool moe, layer_step *step, layer_cost *out,
                          const layer_cost *known)
{
    layer_costs(e, x, moe, out, known);
    const layer_cost *lc = out;
    const cdse_strategy *st = e->st;
    bool tp_overlap = st->tp_comm_overlap && e->stk->overlap_tp_comm;
    int ep_overlap = moe ? st->moe_overlap : CDSE_MOE_OVERLAP_NONE;
    step->fwd = lc->linear_fwd + lc->attn_fwd + lc->ew_fwd;
    step->bwd = 2.0 * lc->linear_fwd + lc->attn_bwd + lc->ew_bwd;
    layer_windows w;
    memset(&w, 0, sizeof w);
    forward_pieces(lc, 1.0, w.left[PASS_FWD]);
    double col = tp_overlap ? 0.0 : lc->tp_bwd_window;
    double shared_col = col > 0.0 ? (st->sequence_parallel ? 2.0 : 1.0) * lc->shared_col : 0.0;
    backward_pieces(lc, col, smaller(col, shared_col), w.left[PASS_BWD]);
    double rec_tp, rec_cp, rec_ep;
    recompute_of(e, x, moe, lc, step, w.left[PASS_RECOMPUTE], &rec_tp, &rec_cp, &rec_ep);

    /* CP: the ring exchange behind the attention core of its pass, at most its window
     * (cp_costs: all of the attention, or per ring step one block of it). */
    double cp_rec_window = recomputed_share(st, x->stage_layers) * lc->cp_window_fwd;
    double cp_fwd = exposed_part(
        lc->cp_fwd, hide_in(&w, PASS_FWD, PIECE_ATTN, smaller(lc->cp_fwd, lc->cp_window_fwd)));
    step->cp =
        cp_fwd +
        exposed_part(lc->cp_bwd,
                     hide_in(&w, PASS_BWD, PIECE_ATTN, smaller(lc->cp_bwd, lc->cp_window_bwd))) +
        exposed_part(rec_cp,
                     hide_in(&w, PASS_RECOMPUTE, PIECE_ATTN, smaller(rec_cp, cp_rec_window)));

    /* EP behind the shared experts of its pass; in the backward pass beside TP's overlapped
     * collectives, each first in its own piece, then in the one they share. */
    bool ep_shared = ep_overlap == CDSE_MOE_OVERLAP_SHARED;
    double ep_fwd_hidden = 0.0, ep_bwd_hidden = 0.0, ep_rec_hidden = 0.0;
    if (ep_shared) {
        ep_fwd_hidden = hide_in(&w, PASS_FWD, PIECE_SHARED, lc->ep_fwd);
        ep_rec_hidden = hide_in(&w, PASS_RECOMPUTE, PIECE_SHARED, rec_ep);
    }
    double tp_overlapped = tp_overlap ? 0.0 : lc->tp_bwd_overlapped;
    double ep_bwd = ep_shared ? lc->ep_bwd : 0.0;
    double tp_hidden = hide_in(&w, PASS_BWD, PIECE_COL, tp_overlapped);
    ep_bwd_hidden = hide_in(&w, PASS_BWD, PIECE_SHARED, ep_bwd);
    tp_hidden += hide_in(&w, PASS_BWD, PIECE_SHARED_COL, tp_overlapped - tp_hidden);
    ep_bwd_hidden += hide_in(&w, PASS_BWD, PIECE_SHARED_COL, ep_bwd - ep_bwd_hidden);

    double tp_fwd = tp_step(e, x, moe, lc, &w, tp_overlap, rec_tp, tp_overlapped, tp_hidden, step);

    /* EP: exposed; behind the shared experts; or, with 1F1B all-to-all overlap (the dispatch and
     * combine of one micro-batch run during another's computation), behind all of the layer's
     * computation that is left, the forward's share of it in proportion to its all-to-alls. */
    double ep_fwd;
    if (ep_overlap == CDSE_MOE_OVERLAP_A2A) {
        double all = lc->ep_fwd + lc->ep_bwd + rec_ep;
        step->ep = exposed_part(all, hide_spread(&w, PASS_FWD, PASS_RECOMPUTE, ALL_PIECES, all));
        ep_fwd = all > 0.0 ? step->ep * lc->ep_fwd / all : 0.0;
    } else if (ep_shared) {
        ep_fwd = exposed_part(lc->ep_fwd, ep_fwd_hidden);
        step->ep =
            ep_fwd + exposed_part(lc->ep_bwd, ep_bwd_hidden) + exposed_part(rec_ep, ep_rec_hidden);
    } else {
        ep_fwd = lc->ep_fwd;
        step->ep = lc->ep_fwd + lc->ep_bwd + rec_ep;
    }
    step->hidden_fwd = w.hidden[PASS_FWD];
    step->hidden_bwd = w.hidden[PASS_BWD] + w.hidden[PASS_RECOMPUTE];
    step->fwd_comm = tp_fwd + cp_fwd + ep_fwd;
}

/* The average layer of a stage: MoE layers are spread evenly over the pipeline stages. */
void perf_average_layer_step(const env *e, const dims *x, layer_step *step)
{
    layer_cost dense_costs, moe_costs;
    if (x->moe_share >= 1.0) { /* every layer is a MoE layer */
        layer_step_of(e, x, true, step, &moe_costs, NULL);
        return;
    }
    layer_step_of(e, x, false, step, &dense_costs, NULL);
    if (x->moe_layers <= 0.0)
        return;
    layer_step moe;
    layer_step_of(e, x, true, &moe, &moe_costs, &dense_costs);
    double f = x->moe_share;
#define MIX(field) step->field = (1.0 - f) * step->field + f * moe.field
    MIX(fwd);
    MIX(bwd);
    MIX(recompute);
    MIX(tp);
    MIX(cp);
    MIX(ep);
    MIX(recompute_flops);
    MIX(recompute_launch);
    MIX(fwd_comm);
    MIX(hidden_fwd);
    MIX(hidden_bwd);
#undef MIX
}

int cdse_layer_times(const cdse_model *model, const cdse_system *system,
                     const cdse_strategy *strategy, double *forward_s, double *backward_s)
{
    cdse_strategy st = *strategy;
    int status = cdse_strategy_check(model, system, &st);
    *forward_s = 0.0;
    *backward_s = 0.0;
    if (status != CDSE_ST_OK)
        return status;
    env e;
    dims x;
    cdse_comm_plan plan;
    perf_setup(model, system, &st, &e, &x, &plan);
    layer_step step;
    perf_average_layer_step(&e, &x, &step);
    *forward_s = step.fwd + step.fwd_comm;
    *backward_s = step.bwd + step.recompute + (step.tp + step.cp + step.ep - step.fwd_comm);
    return status;
}
