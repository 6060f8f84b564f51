/* The evaluator: time and memory of one training iteration of a transformer on a cluster.
 *
 * Pure function: no I/O, no allocation, no MPI. The structure follows Narayanan et al. 2021
 * ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21) and
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
 * arXiv 2205.05198): per layer and micro-batch, GEMMs on the tensor cores at a size-dependent
 * efficiency, memory-bound element-wise kernels on HBM bandwidth, tensor-parallel collectives
 * on the network levels the group spans; stages of a 1F1B (optionally interleaved) pipeline;
 * data-parallel gradient reduction overlapped with the backward pass; the optimizer step. */
#include "clusterdse/model/perf.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "clusterdse/model/comm_plan.h"
#include "clusterdse/model/bound.h"

/* Bytes of an activation element in bf16/fp16 mixed precision. FP8 training (Transformer Engine)
 * keeps activations and the attention core in bf16 and casts GEMM inputs to fp8 (Micikevicius et
 * al. 2022, "FP8 Formats for Deep Learning"). */
#define ACT_BYTES              2.0
#define FP8_GEMM_OPERAND_BYTES 1.0

/* Mixed-precision Adam state per parameter (Korthikanti et al. 2022 Sec. 5 / DESIGN.md):
 * bf16 weights 2 B, fp32 main gradients 4 B, fp32 master weights + Adam m and v 12 B. The
 * gradient buffer's dtype belongs to the stack (cdse_stack.grad_bytes); when it is narrower than
 * fp32 the optimizer keeps an fp32 copy of the gradients it updates (Megatron-LM
 * docs/distrib_optimizer.md, bytes per parameter: bf16 params + fp32 grads 6 + 12/d, fp16 params
 * + fp16 grads 4 + 16/d). */
#define WEIGHT_BYTES          2.0
#define GRAD_BYTES            4.0
#define OPTIMIZER_STATE_BYTES 12.0
/* Transformer Engine's FP8 linear layers keep an FP8 copy of each weight and of its transpose
 * from the first micro-batch of an iteration to the last (te.pytorch.Linear forward argument
 * is_first_microbatch: "the weights are cast to FP8 and cached"; Megatron-Core passes it unless
 * disable_parameter_transpose_cache): 1 B + 1 B per parameter of the layers. They also save the
 * FP8 cast of each GEMM input for the weight-gradient GEMM instead of its bf16 original. The
 * transpose exists only where FP8 GEMMs are TN only (Hopper): on GPUs whose FP8 GEMMs take any
 * operand layout (cdse_system.fp8_non_tn_gemm: Blackwell, Transformer Engine
 * is_non_tn_fp8_gemm_supported(), compute capability 10.x, 11.x and from 13,
 * transformer_engine/pytorch/utils.py) Float8Tensor.update_usage never makes it (float8_tensor.py:
 * "needs_data_transpose = False"), for weights and GEMM inputs alike. */
#define FP8_WEIGHT_COPY_BYTES 1.0
#define FP8_TRANSPOSE_BYTES   1.0
/* FP8 parameters (Transformer Engine fp8_model_init: modules "hold only quantized copies of
 * [their] parameters, as opposed to the default behavior where both higher precision and
 * quantized copies are present", transformer_engine/pytorch/quantization.py; NeMo fp8_params,
 * Megatron-Core --fp8-param-gather: "keep the compute param in fp8 ... and perform the param
 * all-gather in fp8", megatron/training/arguments.py): a layer weight is its FP8 copy, 1 B, and
 * only the transpose (TN-only FP8 GEMMs) is cached beside it. Embeddings stay bf16. */
#define FP8_PARAM_BYTES 1.0

/* HBM traffic of the optimizer step per locally updated parameter, as Megatron-LM's mixed-
 * precision optimizer runs it with Apex multi-tensor kernels, each streaming its arrays once:
 * unscale + inf/nan check of the fp32 gradients (read 4, write 4), gradient norm (read 4),
 * clipping (read 4, write 4), Adam (read master, m, v, gradient 16; write master, m, v 12),
 * copy of the master weights to the bf16 model weights (read 4, write 2), zeroing the gradient
 * buffer (write 4): 58 B. */
#define OPTIMIZER_HBM_BYTES_PER_PARAM 58.0

/* Element-wise kernels, bytes per element of the tensor they run on (read + write):
 * LayerNorm reads and writes 2 B each (4 B); GPT's fused bias-dropout-add reads input and
 * residual, writes the output and a 1-byte mask (7 B); Llama's residual add has no dropout
 * (6 B). Two of each per layer (Korthikanti et al. 2022 Fig. 2 layer structure). */
#define LAYERNORM_FWD_BYTES    4.0
#define DROPOUT_ADD_FWD_BYTES  7.0
#define RESIDUAL_ADD_FWD_BYTES 6.0
/* Backward element-wise kernels read the incoming gradient and the saved input and write the
 * input gradient (LayerNorm also reduces its weight gradient): about 1.5x the forward traffic
 * (6 B vs 4 B per element for LayerNorm). */
#define ELEMENTWISE_BWD_FACTOR 1.5
/* Fused bias-GeLU: read 2 B, write 2 B; SwiGLU reads gate and up (4 B), writes 2 B. */
#define GELU_FWD_BYTES   4.0
#define SWIGLU_FWD_BYTES 6.0
/* Unfused attention core (Megatron-LM's fused scale-mask-softmax, then dropout): softmax reads
 * and writes 2 B per score; dropout reads 2 B, writes 2 B and a 1-byte mask; backward reads the
 * output and its gradient and writes the input gradient for each. */
#define SOFTMAX_FWD_BYTES      4.0
#define ATTN_DROPOUT_FWD_BYTES 5.0
#define SOFTMAX_BWD_BYTES      6.0
#define ATTN_DROPOUT_BWD_BYTES 5.0
/* Causal flash attention computes half of the score matrix; its backward pass runs 5 of the
 * forward's 2 GEMMs-worth of work (Dao 2023, "FlashAttention-2", Sec. 3: 2.5x forward). */
#define FLASH_CAUSAL_FRACTION 0.5
#define FLASH_BWD_FACTOR      2.5
/* Megatron-Core's DDP buckets gradients, by default max(40M, 1M x the data-parallel size)
 * parameters per bucket ("sane default based on dp_group size": larger groups are latency-bound;
 * megatron/core/distributed/distributed_data_parallel.py, lines 51-54 at r0.8 commit 937571cfd4,
 * line 134 at d98e8a64d): the last bucket's reduction cannot overlap the backward pass. The size
 * is the plain data-parallel group's, without the context-parallel ranks
 * (get_data_parallel_world_size() at r0.8, process_group_dict['dp_group'] at d98e8a64d), and the
 * one size serves the dense and the expert buffers alike. */
#define DP_BUCKET_PARAMS          40e6
#define DP_BUCKET_PARAMS_PER_RANK 1e6
/* A collective that overlaps computation still occupies streaming multiprocessors: NCCL runs one
 * thread block per channel, 16-32 channels on an 8-GPU NVSwitch node (NCCL_MAX_NCHANNELS
 * defaults; nccl src/graph/tuning.cc), i.e. 15-30% of an A100's 108 SMs. The overlapped GEMMs
 * slow down by that share for as long as the collective runs: a hidden collective second costs
 * OVERLAP_INTERFERENCE seconds of computation. Measured: computation overlapped with collectives
 * runs 18.9 % slower on average, 40 % at most (GPT and Llama training on 4 A100, H100, MI250,
 * MI210; "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
 * Learning", arXiv:2507.03114, abstract). */
#define OVERLAP_INTERFERENCE 0.25

/* MoE layers (Megatron-Core alltoall token dispatcher, Shazeer et al. 2017 / Fedus et al. 2021
 * routing): the router is a GEMM h x E followed by softmax/top-k; routed tokens are permuted into
 * expert order before dispatch and back after combine (read 2 B + write 2 B per element each
 * way), and the router keeps fp32 logits and probabilities (8 B per token and expert). */
#define MOE_PERMUTE_BYTES 8.0
/* With several local experts, the tokens received from the EP ranks are sorted again by local
 * expert after the dispatch and back before the combine (Megatron-Core
 * megatron/core/transformer/moe/token_dispatcher.py, "Permutation 2: Sort tokens by local
 * expert", moe_utils.sort_chunks_by_idxs): read 2 B + write 2 B per element each way. */
#define MOE_SORT_BYTES 8.0
/* Tokens on the busiest expert rank over the balanced share, for a router trained with an
 * auxiliary balancing loss when the model gives no moe_imbalance: Switch Transformer trains
 * with capacity factors 1.0-1.25 that drop few tokens (Fedus et al. 2021, Sec. 2.2 and Table 1),
 * i.e. expert loads rarely exceed ~1.2x the mean. */
#define MOE_DEFAULT_IMBALANCE 1.2
/* FP8 dispatch (DeepEP: "FP8 dispatching and BF16 combining", github.com/deepseek-ai/DeepEP
 * README): 1 B per element plus one fp32 scale per 128 channels (DeepSeek-V3's 1 x 128 tile
 * quantization of activations, arXiv:2412.19437 Sec. 3.3.2). */
#define FP8_DISPATCH_BYTES (1.0 + 4.0 / 128.0)
#define ROUTER_BYTES       8.0
/* FP8 with per-tensor current scaling (Transformer Engine Float8CurrentScalingQuantizer,
 * NVIDIA/TransformerEngine v2.7 transformer_engine/pytorch/csrc/quantizer.cpp, quantize_impl):
 * nvte_compute_amax reads the bf16 tensor once before the cast kernel reads it again. Norms and
 * TE's activations fuse the amax into the kernel that writes the tensor (quantize_with_amax,
 * csrc/extensions/normalization.cpp and activation.cpp); every other GEMM input and every GEMM
 * output gradient (module/base.py grad_output_preprocess: quantizer(grad_output)) pays the pass.
 * Delayed scaling records the amax inside the cast kernel. */
#define FP8_AMAX_READ_BYTES 2.0

typedef struct dims {
    double b, s_local, s_full;   /* micro-batch, local and full sequence */
    double s_positions;          /* rows of a learned position table (the model's seq_len) */
    double stage_layers;         /* layers of the most loaded pipeline stage */
    double moe_share;            /* MoE layers / layers */
    int stride[CDSE_PLACE_DIMS]; /* rank stride of the TP, CP, DP and PP groups (placement) */
    double tokens;               /* b * s_local: rows of the GEMMs */
    double h, q, kv, dh, ffn, vocab;
    double t, p, c, d, v, m;
    double heads_local, kv_local; /* attention heads and key/value heads on one TP rank */
    bool gpt;                     /* plain MLP, biases and dropout (GPT) vs gated (Llama) */
    /* Mixture of experts. */
    double experts, top_k, moe_ffn, shared, e;
    double etp, edp;                     /* expert tensor- and data-parallel sizes (folding) */
    int expert_stride[CDSE_EXPERT_DIMS]; /* rank strides of the etp, ep and edp groups */
    double moe_layers;                   /* MoE layers of the model */
    double route_factor;                 /* busiest expert rank's tokens over the balanced share */
    /* Multi-head latent attention (mla): query and key/value latent ranks, RoPE dimension,
     * query/key and value dimensions per head. */
    bool mla;
    double q_rank, kv_rank, rope, d_qk, d_v;
    /* Sliding-window attention: share of the layers that slide, keys per query in them. */
    double swa_share, swa_keys;
    double node_limit; /* NVLink domains a token's routed copies may reach (0 = any) */
} dims;

/* One call of each per-layer collective, from the communication plan (0 when not issued). */
typedef struct layer_comm {
    double tp_allreduce, tp_allgather, tp_reduce_scatter; /* b s/cp h activations */
    double cp_step;                                       /* one ring step of keys/values */
    double ep_dispatch, ep_combine; /* forward dispatch (FP8 with deepep and fp8) and one
                                       BF16 all-to-all (combine, and both of the backward) */
} layer_comm;

typedef struct env {
    double peak; /* FLOP/s of the chosen precision (MFU denominator) */
    const cdse_system *sys;
    const cdse_strategy *st;
    const cdse_eff_table *gemm_table;
    double gemm_peak;      /* FLOP/s of GEMMs in the chosen precision */
    double attn_peak;      /* FLOP/s of the bf16 attention core */
    double hbm;            /* achievable HBM bytes/s */
    double operand_bytes;  /* GEMM operand element size */
    const cdse_stack *stk; /* the software stack (never NULL) */
    double gemm_scale;     /* the stack's GEMM efficiency relative to the system's table */
    layer_comm comm;
} env;

/* Per layer, per micro-batch, on one GPU. */
typedef struct layer_cost {
    double linear_fwd; /* QKV, projection, MLP GEMMs */
    double col_gemm;   /* forward GEMMs of the column-parallel layers (QKV, FC1) */
    double attn_fwd, attn_bwd;
    double ew_fwd, ew_bwd;                   /* memory-bound element-wise kernels */
    double tp_fwd;                           /* TP collectives of the forward pass (exposed) */
    double tp_bwd_exposed;                   /* backward TP collectives that cannot overlap */
    double tp_bwd_overlapped, tp_bwd_window; /* the others and the GEMMs they overlap */
    double cp_fwd, cp_bwd;                   /* CP ring exchange (before overlap) */
    double ep_fwd, ep_bwd;                   /* EP dispatch + combine all-to-alls (exposed) */
    double ep_hidden_fwd, ep_hidden_bwd;     /* computation they hide behind (overlap_hidden) */
    double shared_fwd;                       /* shared experts' forward GEMMs */
    /* Forward time and FLOPs of the modules fine-grained recomputation can repeat. */
    double mla_up_fwd, mla_up_flops; /* latent attention's up projections */
    double mlp_fwd, mlp_flops;       /* dense MLP GEMMs (dense layers) */
    double moe_fwd, moe_flops;       /* the MoE MLP: router, experts, shared experts */
    double shared_flops;             /* shared experts' GEMMs */
    double norm_bytes, act_bytes;    /* HBM traffic of the two norms and of the MLP activation
                                        function (their forward kernels) */
    /* The attention projections, the same in dense and MoE layers (computed once). */
    double qkv_fwd, proj_fwd, attn_linear_flops;
    double flops_fwd;      /* hardware FLOPs of the forward pass */
    double attn_flops_fwd; /* of which attention core */
} layer_cost;

/* Bytes per element of the FP8 transpose Transformer Engine keeps beside an FP8 weight or GEMM
 * input: FP8_TRANSPOSE_BYTES where FP8 GEMMs are TN only, none on fp8_non_tn_gemm systems. */
static double fp8_transpose_bytes(const cdse_system *sys)
{
    return sys->fp8_non_tn_gemm ? 0.0 : FP8_TRANSPOSE_BYTES;
}

/* The part of a collective that the computation window cannot hide, plus the slowdown the hidden
 * part inflicts on that computation. */
static double exposed(double comm, double window)
{
    double hidden = comm < window ? comm : window;
    return comm - hidden + OVERLAP_INTERFERENCE * hidden;
}

/* The computation of `window` that hides `comm` (exposed): that time hides nothing else. */
static double overlap_hidden(double comm, double window)
{
    return fmax(0.0, comm < window ? comm : window);
}

static double gemm_time(const env *e, double m, double n, double k, double *flops)
{
    double f = 2.0 * m * n * k;
    double bytes = (m * k + k * n + m * n) * e->operand_bytes;
    double eff = cdse_eff_lookup(e->gemm_table, f) * e->gemm_scale;
    double compute = f / (e->gemm_peak * eff);
    double memory = bytes / e->hbm;
    *flops += f;
    return compute > memory ? compute : memory;
}

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

/* GEMM libraries compute C = A B in output tiles (a thread block per tile): a GEMM of m x n costs
 * ceil(m / GEMM_TILE) ceil(n / GEMM_TILE) whole tiles ("tile quantization", NVIDIA Matrix
 * Multiplication Background User's Guide DU-09799-001, Sec. 3.1; 128 x 128 is one of cuBLAS's
 * typical tiles, Sec. 2.3). The systems' efficiency tables hold GEMMs whose sizes are tile
 * multiples; an expert's GEMM (rows set by routing, the FFN split over etp) is costed on its
 * padded tiles and counted with its real FLOPs. */
#define GEMM_TILE 128.0

static double expert_gemm_time(const env *e, double m, double n, double k, double *flops)
{
    double padded_m = ceil(m / GEMM_TILE) * GEMM_TILE, padded_n = ceil(n / GEMM_TILE) * GEMM_TILE;
    double padded_flops = 0.0;
    *flops += 2.0 * m * n * k;
    return gemm_time(e, padded_m, padded_n, k, &padded_flops);
}

/* The MLP of a MoE layer on one GPU: router, the local experts' grouped GEMMs on the tokens
 * routed to them (balanced share T k / ep per expert rank... times the capacity factor or the
 * imbalance of the busiest rank), shared experts on all tokens. Experts are split over TP like
 * the dense MLP (Megatron-Core expert tensor parallelism = tp). */
static double moe_mlp_time(const env *e, const dims *x, double *flops, double *col,
                           double *shared_time, double *shared_flops)
{
    double gated = x->gpt ? 1.0 : 2.0;
    double router = gemm_time(e, x->tokens, x->experts, x->h, flops);
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
        shared_fc1 = gemm_time(e, x->tokens, gated * width, x->h, flops);
        shared_fc2 = gemm_time(e, x->tokens, x->h, width, flops);
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
        q = gemm_time(e, x->tokens, x->q_rank, x->h, flops);
        up = gemm_time(e, x->tokens, heads * x->d_qk, x->q_rank, &up_flops);
    } else {
        q = gemm_time(e, x->tokens, heads * x->d_qk, x->h, flops);
    }
    double kv = gemm_time(e, x->tokens, x->kv_rank + x->rope, x->h, flops);
    up += gemm_time(e, x->tokens, heads * (x->dh + x->d_v), x->kv_rank, &up_flops);
    q += up;
    *flops += up_flops;
    c->mla_up_fwd = up;
    c->mla_up_flops = up_flops;
    *proj = gemm_time(e, x->tokens, x->h, heads * x->d_v, flops);
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
        qkv = gemm_time(e, x->tokens, x->q / x->t + 2.0 * x->kv_local * x->dh, x->h, &f);
        proj = gemm_time(e, x->tokens, x->h, x->q / x->t, &f);
    }
    c->qkv_fwd = qkv;
    c->proj_fwd = proj;
    c->attn_linear_flops = f;
    double mlp, mlp_col, attention_flops = f, mlp_flops = 0.0;
    if (moe) {
        mlp = moe_mlp_time(e, x, &mlp_flops, &mlp_col, &c->shared_fwd, &c->shared_flops);
        c->moe_fwd = mlp;
        c->moe_flops = mlp_flops;
    } else {
        double fc1 = gemm_time(e, x->tokens, gated * x->ffn / x->t, x->h, &mlp_flops);
        double fc2 = gemm_time(e, x->tokens, x->h, x->ffn / x->t, &mlp_flops);
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
 * two again on gradients; exposed unless the strategy overlaps them with the shared experts'
 * GEMMs or with the other micro-batch's computation (the layer's forward and backward).
 * Called after the computation costs of the layer are set. */
static void ep_costs(const env *e, const dims *x, layer_cost *c)
{
    if (x->e <= 1.0)
        return;
    double fwd = e->comm.ep_dispatch + e->comm.ep_combine;
    double bwd = 2.0 * e->comm.ep_combine;
    c->ep_fwd = fwd;
    c->ep_bwd = bwd;
    c->ep_hidden_fwd = c->ep_hidden_bwd = 0.0;
    if (e->st->moe_overlap == CDSE_MOE_OVERLAP_SHARED) {
        c->ep_fwd = exposed(fwd, c->shared_fwd);
        c->ep_bwd = exposed(bwd, 2.0 * c->shared_fwd);
        c->ep_hidden_fwd = overlap_hidden(fwd, c->shared_fwd);
        c->ep_hidden_bwd = overlap_hidden(bwd, 2.0 * c->shared_fwd);
    } else if (e->st->moe_overlap == CDSE_MOE_OVERLAP_A2A) {
        double window = 3.0 * c->linear_fwd + c->attn_fwd + c->attn_bwd + c->ew_fwd + c->ew_bwd;
        double all = exposed(fwd + bwd, window);
        double hidden = overlap_hidden(fwd + bwd, window);
        c->ep_fwd = all * fwd / (fwd + bwd);
        c->ep_bwd = all - c->ep_fwd;
        c->ep_hidden_fwd = hidden * fwd / (fwd + bwd);
        c->ep_hidden_bwd = hidden - c->ep_hidden_fwd;
    }
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

static void attention_costs(const env *e, const dims *x, bool flash, layer_cost *c)
{
    double scores = x->b * x->heads_local * x->s_local * x->s_full; /* score elements */
    if (flash) {
        double f = 4.0 * scores * x->dh * FLASH_CAUSAL_FRACTION;
        if (x->mla || x->swa_share > 0.0)
            f = flash_flops(x);
        double eff = e->sys->attention_efficiency;
        c->attn_fwd = f / (e->attn_peak * eff);
        c->attn_bwd = FLASH_BWD_FACTOR * c->attn_fwd;
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
    double fwd = x->tokens * (h_share * per_h + mlp_rows * mlp_width * act);
    c->norm_bytes = x->tokens * h_share * 2.0 * LAYERNORM_FWD_BYTES;
    c->act_bytes = x->tokens * mlp_rows * mlp_width * act;
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

static void cp_costs(const env *e, const dims *x, layer_cost *c)
{
    if (x->c <= 1.0)
        return;
    /* Ring attention: c - 1 steps forward; backward passes keys/values and their gradients
     * (plan_layer_comm). */
    double step = e->comm.cp_step;
    c->cp_fwd = (x->c - 1.0) * step;
    c->cp_bwd = 2.0 * c->cp_fwd;
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

static void fill_dims(const cdse_model *model, const cdse_strategy *st, dims *x)
{
    x->b = st->microbatch;
    x->s_full = model->seq_len;
    x->s_local = (double)model->seq_len / st->cp;
    x->s_positions = model->seq_len;
    cdse_placement_strides(st->placement, st->tp, st->cp, st->dp, st->pp, x->stride);
    /* Layers that do not divide evenly over pp x vpp chunks leave some chunks one layer longer
     * (Megatron-Core's uneven pipeline split); the longest sets the pace and the memory. */
    x->stage_layers = (double)cdse_chunk_layers(model, st) * st->vpp;
    x->tokens = x->b * x->s_local;
    x->h = model->hidden;
    x->dh = model->head_dim;
    x->q = (double)model->heads * model->head_dim;
    x->kv = (double)model->kv_heads * model->head_dim;
    x->ffn = model->ffn;
    x->vocab = model->vocab;
    x->t = st->tp;
    x->p = st->pp;
    x->c = st->cp;
    x->d = st->dp;
    x->v = st->vpp;
    x->m = st->grad_accum;
    x->heads_local = (double)model->heads / st->tp;
    x->kv_local = model->kv_heads >= st->tp ? (double)model->kv_heads / st->tp : 1.0;
    x->gpt = !model->gated_mlp;
    x->experts = model->experts;
    x->e = st->ep;
    x->etp = st->etp > 0 ? st->etp : st->tp;
    x->edp = st->edp > 0 ? st->edp : x->t * x->c * x->d / (x->etp * x->e);
    if (model->experts > 0)
        cdse_expert_strides(st->placement, (int)x->etp, st->ep, (int)x->edp, st->pp,
                            x->expert_stride);
    x->moe_layers =
        model->experts > 0 ? (model->layers - model->first_dense_layers) / model->moe_every : 0;
    x->moe_share = x->moe_layers / model->layers;
    x->top_k = model->top_k;
    x->moe_ffn = model->moe_ffn;
    x->shared = model->shared_experts;
    /* The busiest expert rank sets the pace; a capacity factor caps its tokens (dropping the
     * rest, Fedus et al. 2021 Sec. 2.2). */
    x->route_factor = model->moe_imbalance >= 1.0 ? model->moe_imbalance : MOE_DEFAULT_IMBALANCE;
    if (model->capacity_factor > 0.0 && model->capacity_factor < x->route_factor)
        x->route_factor = model->capacity_factor;
    x->mla = model->kv_lora_rank > 0;
    x->q_rank = model->q_lora_rank;
    x->kv_rank = model->kv_lora_rank;
    x->rope = model->qk_rope_head_dim;
    x->d_qk = (double)model->head_dim + model->qk_rope_head_dim;
    x->d_v = model->v_head_dim > 0 ? model->v_head_dim : model->head_dim;
    x->swa_share = 0.0;
    x->swa_keys = 0.0;
    if (model->sliding_window > 0) {
        x->swa_share = (double)cdse_model_swa_layers(model) / model->layers;
        x->swa_keys = cdse_attended_keys(x->s_full, model->sliding_window);
    }
    x->node_limit = model->moe_node_limit;
}

/* Parameters held by one GPU of the first pipeline stage (which holds the embedding): the
 * transformer layers' dense parameters, their expert parameters (sharded over EP as well as TP,
 * replicated over dp cp / ep ranks) and the embedding/output layer. */
typedef struct stage_param_count {
    double dense;   /* layers, excluding expert MLPs */
    double experts; /* routed experts held by this GPU */
    double embed;   /* embedding, positions, final norm and untied output layer */
} stage_param_count;

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

static void stage_params(const cdse_model *model, const dims *x, stage_param_count *out)
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

/* The share of a stage's layers that full recomputation recomputes: every layer
 * (recompute_layers 0), or the first recompute_layers of the stage_layers / vpp layers of each
 * chunk (Megatron-Core --recompute-method block, megatron/core/recompute.py:167-181 at
 * d98e8a64d); 0 without full recomputation. Layers are taken as alike. */
static double recomputed_share(const cdse_strategy *st, double stage_layers)
{
    if (st->recompute != CDSE_RECOMPUTE_FULL)
        return 0.0;
    if (st->recompute_layers <= 0)
        return 1.0;
    return fmin(1.0, st->recompute_layers * st->vpp / stage_layers);
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
 * layers nothing is added: the backward pass reaches a chunk's first (recomputed) layers after its
 * last layers, which keep every activation, freed at least one layer's worth of the same
 * micro-batch. */
static double recompute_buffer(const env *e, const dims *x)
{
    const cdse_strategy *st = e->st;
    if (st->recompute == CDSE_RECOMPUTE_NONE && st->recompute_modules == 0)
        return 0.0;
    if (st->recompute == CDSE_RECOMPUTE_FULL && recomputed_share(st, x->stage_layers) < 1.0)
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
static double layer_weight_bytes(const env *e)
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
 * deallocate_output_tensor; Dubey et al. Sec. 3.3.2), so no pass holds more than its layers. */
static void rank_activations(const dims *x, double per_mb, double logits, bool split, double act[3])
{
    double per_chunk = per_mb / x->v;
    double per_layer = per_mb / x->stage_layers;
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
    double layer_share = layer_weight_bytes(e) / WEIGHT_BYTES; /* 1/2 with FP8 parameters */
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

static double tier_bandwidth(const cdse_system *sys);

/* Whether the strategy moves `what` (CDSE_OFFLOAD_*) to the second tier (offload_model). */
static bool offloads(const env *e, int what)
{
    return (e->st->offload & what) != 0 && tier_bandwidth(e->sys) > 0.0;
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

/* fp32 logits of one micro-batch on the last stage (Korthikanti et al. 2022 Sec. 4.3). */
static double logits_bytes(const dims *x)
{
    return x->tokens * x->vocab / x->t * 4.0;
}

/* The transformer layers' bytes of one micro-batch of `act_per_mb` (the single stage's include its
 * fp32 logits). */
static double layer_bytes_per_mb(const dims *x, double act_per_mb)
{
    return act_per_mb - (x->p == 1.0 ? logits_bytes(x) : 0.0);
}

/* Bytes of one micro-batch, of the `act_per_mb` a stage holds, that activation offload moves:
 * all of them with every layer offloaded (the single stage's logits too, as the whole-model
 * offload has always counted them); with offload_layers the layers' share of the layers' bytes
 * only, since the offload context wraps the transformer layers and not the output layer
 * (megatron/core/transformer/transformer_block.py:714 at d98e8a64d). */
static double offloaded_bytes_per_mb(const cdse_strategy *st, const dims *x, double act_per_mb)
{
    if (st->offload_layers <= 0)
        return act_per_mb;
    return offloaded_share(st, x->stage_layers) * layer_bytes_per_mb(x, act_per_mb);
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
    double off_mb = offloaded_bytes_per_mb(e->st, x, per_mb);
    return hbm_after_offload(x, act, (act - extra) / per_mb, per_mb, off_mb);
}

/* HBM bytes of a rank's state (GiB) after offload_model took what the strategy offloads. */
static double resident_state_gib(const env *e, const cdse_result *c)
{
    return (offloads(e, CDSE_OFFLOAD_WEIGHTS) ? 0.0 : c->mem_weights_gib) + c->mem_gradients_gib +
           (offloads(e, CDSE_OFFLOAD_OPTIMIZER) ? 0.0 : c->mem_optimizer_gib) +
           c->mem_fp8_cache_gib;
}

/* Under the embedding-aware split the ranks differ in what they hold: rank 0 one layer fewer and
 * the embedding, the middle ranks full stages, the last rank one layer fewer and the output
 * layer (untied, or the tied embedding's copy: Megatron keeps the word embedding on both ends).
 * Of ranks 0, 1 and the last, the one with the most memory left in HBM after offload (with the
 * allocator's share of the activations, memory's runtime term): its state into `r`, its index in
 * `act` returned. */
static int split_peak_stage(const env *e, const dims *x, const stage_param_count *params,
                            const double dense_b[3], const double expert_b[3], const double act[3],
                            double logits, double per_mb, cdse_result *r)
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
    for (int k = 0; k < 3; k++) {
        if (k == 1 && x->p <= 2.0)
            continue; /* with two stages there is no middle rank */
        cdse_result c = *r;
        state_memory(e, x, &stage[k], dense_b, expert_b, &c);
        /* What stays in HBM after offload decides the rank that peaks. */
        double held = resident_activations(e, x, act[k], k == 2 ? logits : 0.0, per_mb);
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
 * `in_flight_out` the micro-batches whose activations are held at once. */
static void memory_model(const cdse_model *model, const env *e, const dims *x, cdse_result *r,
                         stage_param_count *params, double *updated, double *act_per_mb,
                         double *in_flight_out)
{
    const cdse_strategy *st = e->st;
    stage_params(model, x, params);
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
        rank_activations(x, per_mb, logits, cdse_split_embedding(st), ranks);
        /* Without the split the rank with the most activations before offload (rank 0: most
         * passes; the last rank: logits) is kept, with rank 0's state. With activation offload
         * the last rank's resident logits can exceed rank 0's resident passes: that case is not
         * distinguished (the logits of one micro-batch at most). */
        int peak;
        if (cdse_split_embedding(st)) {
            peak = split_peak_stage(e, x, params, dense_b, expert_b, ranks, logits, per_mb, r);
        } else { /* rank 0 holds the most passes and the embedding, the last rank the logits */
            peak = ranks[2] > ranks[0] ? 2 : 0;
            state_memory(e, x, params, dense_b, expert_b, r);
        }
        act = ranks[peak];
        /* The passes in flight, without the last rank's logits (one micro-batch's at a time). */
        *in_flight_out = (act - (peak == 2 ? logits : 0.0)) / per_mb;
    } else {
        state_memory(e, x, params, dense_b, expert_b, r);
    }
    r->mem_activations_gib = act / CDSE_GIB;
    r->mem_other_gib = e->sys->reserved_gib;
    r->mem_offloaded_gib = 0.0;
}

/* Moves the state selected by the offload mask to the second tier; returns the HBM bytes/s
 * share of the tier for one GPU, or 0 without a tier. */
static double tier_bandwidth(const cdse_system *sys)
{
    if (sys->tier.attach == CDSE_TIER_NONE)
        return 0.0;
    return sys->tier.bandwidth_gbs * 1e9 / sys->tier.shared_by;
}

/* The transfers to and from the second tier that overlap the computation (offload_model), in
 * seconds per iteration, for the state of `r` before offload_model moves it. */
static double offload_overlapped_time(const env *e, const dims *x, double act_per_mb,
                                      const cdse_result *r)
{
    const cdse_strategy *st = e->st;
    double bw = tier_bandwidth(e->sys);
    if (st->offload == 0 || bw <= 0.0)
        return 0.0;
    double t = 0.0;
    if (st->offload & CDSE_OFFLOAD_ACTIVATIONS)
        t += 2.0 * x->m * offloaded_bytes_per_mb(st, x, act_per_mb) / bw;
    if (st->offload & CDSE_OFFLOAD_WEIGHTS)
        t += 2.0 * x->m * r->mem_weights_gib * CDSE_GIB / bw;
    return t;
}

/* `compute_time`: the computation the overlapped transfers hide behind. */
static void offload_model(const env *e, const dims *x, double compute_time, double act_per_mb,
                          double in_flight, cdse_result *r)
{
    const cdse_strategy *st = e->st;
    double bw = tier_bandwidth(e->sys);
    if (st->offload == 0 || bw <= 0.0)
        return;
    double lat = e->sys->tier.latency_us * 1e-6;
    double moved = 0.0, serial = 0.0;
    double overlapped = offload_overlapped_time(e, x, act_per_mb, r);
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
        double off_mb = offloaded_bytes_per_mb(st, x, act_per_mb);
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
    r->mem_offloaded_gib = moved;
    r->t_offload_s = serial + exposed(overlapped, compute_time);
}

static double tier_capacity_per_gpu(const cdse_system *sys)
{
    return sys->tier.capacity_gib / sys->tier.shared_by;
}

/* One layer and one micro-batch on the critical path. */
typedef struct layer_step {
    double fwd, bwd, recompute; /* computation */
    double tp, cp, ep;          /* exposed communication, both directions */
    double recompute_flops;
    double recompute_launch; /* share of the forward pass's kernel launches repeated */
    double fwd_comm;         /* exposed communication of the forward pass alone */
    /* Computation of the forward and of the backward pass (with recomputation) that hides the
     * layer's own collectives (TP, CP, EP): it cannot hide another stream too. */
    double hidden_fwd, hidden_bwd;
} layer_step;

/* Distinct NVLink domains among `domains` that the top-k routing of one token touches when the
 * E experts are spread evenly over them: domains x (1 - P(a domain holds none of the k)),
 * P = prod_{i<k} (E - E/domains - i) / (E - i) (k experts drawn without replacement, uniform
 * routing), capped by node-limited routing (DeepSeek-V3 Sec. 2.1.2: at most M nodes). */
static double domains_per_token(double experts, double top_k, double domains, double limit)
{
    double none = 1.0, per_domain = experts / domains;
    for (int i = 0; i < (int)top_k; i++)
        none *= fmax(0.0, (experts - per_domain - i) / (experts - i));
    double touched = domains * (1.0 - none);
    return limit > 0.0 && touched > limit ? limit : touched;
}

/* With an expert tensor-parallel size above 1, the tokens an expert rank receives are
 * all-gathered over its etp group before the experts and reduce-scattered after them (Megatron-
 * Core's alltoall dispatcher over the expert TP group), backward the reverse: `bytes` is one
 * rank's received copies, the gathered buffer etp times that; `calls` of each per iteration.
 * They belong to the EP group's exchange of tokens (t_ep_comm_s); the times start the
 * dispatch and combine of `lc`. */
static void plan_etp_comm(const cdse_system *sys, const dims *x, double bytes, double calls,
                          cdse_comm_plan *plan, layer_comm *lc)
{
    lc->ep_dispatch = lc->ep_combine = 0.0;
    if (x->etp <= 1.0)
        return;
    int size = (int)x->etp, stride = x->expert_stride[CDSE_EXPERT_TP];
    lc->ep_dispatch = cdse_comm_plan_add(plan, sys, CDSE_GROUP_EP, CDSE_COLL_ALLGATHER, size,
                                         stride, bytes * x->etp, calls);
    lc->ep_combine = cdse_comm_plan_add(plan, sys, CDSE_GROUP_EP, CDSE_COLL_REDUCE_SCATTER, size,
                                        stride, bytes * x->etp, calls);
}

/* The EP all-to-alls of a MoE layer (MoE parallel folding: the EP group at the expert grid's
 * ep stride). Each moves the routed copies of the local tokens (T k h, split over the TP ranks
 * with sequence parallelism), times the busiest rank's share (route factor). The deepep
 * dispatcher, when the group spans several NVLink domains, sends a token across the network
 * once per domain it touches (to the same local rank there) and forwards it to its experts
 * over NVLink: two all-to-alls, one across domains (a sub-group of one rank per domain) and one
 * inside (DeepEP's internode kernels). The two stages run as a pipeline in one kernel (DeepEP
 * csrc/kernels/legacy/internode.cu, dispatch: warps in the roles kRDMASender,
 * kRDMAAndNVLForwarder and kNVLReceivers work on successive chunks of every channel at once; its
 * README reports internode dispatch and combine at the RDMA "bottleneck bandwidth"): a dispatch
 * or combine takes the slower stage's time; the filling of the pipeline (one chunk per channel)
 * is neglected. FP8 dispatch with deepep and fp8. `calls`: MoE layer passes per iteration;
 * `again`: 1 when full recomputation repeats the forward. */
static void plan_ep_comm(const cdse_system *sys, const cdse_strategy *st, const dims *x,
                         double calls, double again, cdse_comm_plan *plan, layer_comm *lc)
{
    double tokens = st->sequence_parallel ? x->tokens / x->t : x->tokens;
    double copies = tokens * x->top_k * x->route_factor; /* routed copies sent per rank */
    bool deepep = st->moe_dispatcher == CDSE_DISPATCH_DEEPEP;
    double dispatch_bytes = deepep && st->precision == CDSE_FP8 ? FP8_DISPATCH_BYTES : ACT_BYTES;
    int size = (int)x->e, stride = x->expert_stride[CDSE_EXPERT_EP];
    plan_etp_comm(sys, x, copies * x->h * ACT_BYTES, calls * (2.0 + again), plan, lc);
    cdse_span span;
    cdse_group_span(sys, size, stride, &span);
    int inside = span.factor[0], across = size / inside;
    if (!deepep || across <= 1) {
        double bytes = copies * x->h;
        if (dispatch_bytes == ACT_BYTES) { /* one op: 2 forward, 2 backward (+2 recomputed) */
            double one = cdse_comm_plan_add(plan, sys, CDSE_GROUP_EP, CDSE_COLL_ALLTOALL, size,
                                            stride, bytes * ACT_BYTES, calls * (4.0 + 2.0 * again));
            lc->ep_dispatch += one;
            lc->ep_combine += one;
            return;
        }
        lc->ep_dispatch +=
            cdse_comm_plan_add(plan, sys, CDSE_GROUP_EP, CDSE_COLL_ALLTOALL, size, stride,
                               bytes * dispatch_bytes, calls * (1.0 + again));
        lc->ep_combine += cdse_comm_plan_add(plan, sys, CDSE_GROUP_EP, CDSE_COLL_ALLTOALL, size,
                                             stride, bytes * ACT_BYTES, calls * (3.0 + again));
        return;
    }
    double node_limit = x->node_limit;
    double remote = tokens * x->route_factor *
                    domains_per_token(x->experts, x->top_k, across, node_limit) * x->h;
    double local = copies * x->h;
    double phases[2] = {1.0 + again, 3.0 + again}; /* FP8-able dispatch, BF16 all-to-alls */
    double per_byte[2] = {dispatch_bytes, ACT_BYTES};
    double one[2];
    for (int k = 0; k < 2; k++) {
        one[k] = cdse_comm_plan_add(plan, sys, CDSE_GROUP_EP, CDSE_COLL_ALLTOALL, across,
                                    stride * inside, remote * per_byte[k], calls * phases[k]);
        if (inside > 1)
            one[k] = fmax(one[k],
                          cdse_comm_plan_add(plan, sys, CDSE_GROUP_EP, CDSE_COLL_ALLTOALL, inside,
                                             stride, local * per_byte[k], calls * phases[k]));
    }
    lc->ep_dispatch += one[0];
    lc->ep_combine += one[1];
}

/* The per-layer collectives of the slowest stage, added to `plan` with their calls per
 * iteration (m micro-batches x the stage's layers), and one call of each in `lc`. Calls per
 * layer and micro-batch, as the layer costs above spend them: TP without sequence parallelism
 * 2 all-reduces forward and 2 backward (Shoeybi et al. 2019, Fig. 3); with it 2 all-gathers
 * forward, 2 exposed + 2 overlapped backward, 2 reduce-scatters forward and 2 backward
 * (Korthikanti et al. 2022 Sec. 4.2.2); CP c - 1 ring steps forward and 2 (c - 1) backward;
 * EP dispatch + combine forward and backward, in MoE layers. Full recomputation repeats the
 * forward pass's collectives. */
static void plan_layer_comm(const cdse_system *sys, const cdse_strategy *st, const dims *x,
                            cdse_comm_plan *plan, layer_comm *lc)
{
    memset(lc, 0, sizeof *lc);
    double again = recomputed_share(st, x->stage_layers); /* forward repeated */
    double passes = x->m * x->stage_layers;
    if (x->t > 1.0) {
        int size = (int)x->t, stride = x->stride[CDSE_PLACE_TP];
        double bytes = x->tokens * x->h * ACT_BYTES; /* activations of the micro-batch */
        if (!st->sequence_parallel) {
            lc->tp_allreduce =
                cdse_comm_plan_add(plan, sys, CDSE_GROUP_TP, CDSE_COLL_ALLREDUCE, size, stride,
                                   bytes, passes * (4.0 + 2.0 * again));
        } else {
            lc->tp_allgather =
                cdse_comm_plan_add(plan, sys, CDSE_GROUP_TP, CDSE_COLL_ALLGATHER, size, stride,
                                   bytes, passes * (6.0 + 2.0 * again));
            lc->tp_reduce_scatter =
                cdse_comm_plan_add(plan, sys, CDSE_GROUP_TP, CDSE_COLL_REDUCE_SCATTER, size, stride,
                                   bytes, passes * (4.0 + 2.0 * again));
        }
    }
    if (x->c > 1.0) {
        /* Ring attention: each rank passes its key/value chunk around the CP ring (Liu et al.
         * 2023, "Ring Attention"; Megatron-Core context parallelism). */
        double chunk = x->b * x->s_local * 2.0 * x->kv_local * x->dh * ACT_BYTES;
        if (x->mla) /* the up-projected keys (with their RoPE part) and values of the heads */
            chunk = x->b * x->s_local * x->heads_local * (x->d_qk + x->d_v) * ACT_BYTES;
        lc->cp_step = cdse_comm_plan_add(plan, sys, CDSE_GROUP_CP, CDSE_COLL_SENDRECV, (int)x->c,
                                         x->stride[CDSE_PLACE_CP], chunk,
                                         passes * (x->c - 1.0) * (3.0 + again));
    }
    if (x->e > 1.0 && x->moe_layers > 0.0)
        plan_ep_comm(sys, st, x, x->moe_share * passes, again, plan, lc);
}

static void setup(const cdse_model *model, const cdse_system *system, const cdse_strategy *st,
                  env *e, dims *x, cdse_comm_plan *plan)
{
    bool fp8 = st->precision == CDSE_FP8;
    double peak_bf16 = system->peak_tflops[CDSE_BF16] > 0.0 ? system->peak_tflops[CDSE_BF16]
                                                            : system->peak_tflops[CDSE_FP16];
    double peak =
        system->peak_tflops[st->precision] > 0.0 ? system->peak_tflops[st->precision] : peak_bf16;
    e->sys = system;
    e->st = st;
    e->peak = peak * 1e12;
    e->gemm_peak = peak * 1e12;
    e->attn_peak = (fp8 ? peak_bf16 : peak) * 1e12;
    e->gemm_table = fp8 && system->gemm_eff_fp8.n > 0 ? &system->gemm_eff_fp8 : &system->gemm_eff;
    e->hbm = system->hbm_bandwidth_gbs * 1e9 * system->hbm_efficiency;
    e->operand_bytes = fp8 ? FP8_GEMM_OPERAND_BYTES : ACT_BYTES;
    e->stk = st->stack != NULL ? st->stack : &cdse_stack_default;
    e->gemm_scale = e->stk->gemm_scale;
    fill_dims(model, st, x);
    plan->n = 0;
    plan_layer_comm(system, st, x, plan, &e->comm);
}

/* Forward work that fine-grained recomputation repeats in the backward pass (the modules of
 * module_savings): their forward kernels, and with `moe` the dispatch and combine again.
 * core_attn adds nothing when `selective` already repeats the attention core. */
static void module_recompute(const env *e, bool moe, const layer_cost *lc, layer_step *step)
{
    int mods = e->st->recompute_modules;
    double t = 0.0, f = 0.0;
    if ((mods & CDSE_RECOMPUTE_CORE_ATTN) && e->st->recompute != CDSE_RECOMPUTE_SELECTIVE) {
        t += lc->attn_fwd;
        f += lc->attn_flops_fwd;
    }
    if (mods & CDSE_RECOMPUTE_LAYERNORM)
        t += lc->norm_bytes / e->hbm;
    if (mods & CDSE_RECOMPUTE_MLA_UP_PROJ) {
        t += lc->mla_up_fwd;
        f += lc->mla_up_flops;
    }
    if (!moe && (mods & CDSE_RECOMPUTE_MLP)) {
        t += lc->mlp_fwd + lc->act_bytes / e->hbm;
        f += lc->mlp_flops;
    }
    if (moe && (mods & CDSE_RECOMPUTE_MOE)) {
        t += lc->moe_fwd + lc->act_bytes / e->hbm;
        f += lc->moe_flops;
        step->ep += lc->ep_fwd;
    } else if (moe) {
        if (mods & CDSE_RECOMPUTE_MOE_ACT)
            t += lc->act_bytes / e->hbm;
        if (mods & CDSE_RECOMPUTE_SHARED_EXPERTS) {
            t += lc->shared_fwd;
            f += lc->shared_flops;
        }
    }
    step->recompute += t;
    step->recompute_flops += f;
}

/* Forward collectives are on the critical path; backward TP collectives overlap the
 * weight-gradient GEMMs (Megatron-LM's asynchronous TP all-reduce), CP exchanges overlap the
 * attention core; full recomputation repeats the forward pass with its collectives. */
/* `out` receives the layer's costs; `known` as in linear_costs. */
static void layer_step_of(const env *e, const dims *x, bool moe, layer_step *step, layer_cost *out,
                          const layer_cost *known)
{
    layer_costs(e, x, moe, out, known);
    const layer_cost *lc = out;
    double tp_fwd = lc->tp_fwd;
    double cp_fwd = exposed(lc->cp_fwd, lc->attn_fwd);
    double hidden_fwd = overlap_hidden(lc->cp_fwd, lc->attn_fwd) + lc->ep_hidden_fwd;
    double hidden_bwd = overlap_hidden(lc->cp_bwd, lc->attn_bwd) + lc->ep_hidden_bwd;
    step->fwd = lc->linear_fwd + lc->attn_fwd + lc->ew_fwd;
    step->bwd = 2.0 * lc->linear_fwd + lc->attn_bwd + lc->ew_bwd;
    if (e->st->tp_comm_overlap && e->stk->overlap_tp_comm) {
        /* Every TP collective is split into chunks pipelined with the GEMM it feeds or drains
         * (Transformer Engine userbuffers; Wang et al. 2022, "Overlap Communication with Dependent
         * Computation via Decomposition"): hidden behind all linear GEMMs of the layer. */
        double all = tp_fwd + lc->tp_bwd_exposed + lc->tp_bwd_overlapped;
        double tp_hidden_fwd = overlap_hidden(tp_fwd, lc->linear_fwd);
        hidden_fwd += tp_hidden_fwd;
        hidden_bwd += overlap_hidden(all, 3.0 * lc->linear_fwd) - tp_hidden_fwd;
        tp_fwd = exposed(tp_fwd, lc->linear_fwd);
        step->tp = exposed(all, 3.0 * lc->linear_fwd);
    } else {
        step->tp = tp_fwd + lc->tp_bwd_exposed + exposed(lc->tp_bwd_overlapped, lc->tp_bwd_window);
        hidden_bwd += overlap_hidden(lc->tp_bwd_overlapped, lc->tp_bwd_window);
    }
    step->cp = cp_fwd + exposed(lc->cp_bwd, lc->attn_bwd);
    step->ep = lc->ep_fwd + lc->ep_bwd;
    step->recompute = 0.0;
    step->recompute_flops = 0.0;
    if (e->st->recompute == CDSE_RECOMPUTE_FULL) {
        /* The recomputed layers' forward again, with its collectives. */
        double share = recomputed_share(e->st, x->stage_layers);
        step->recompute = share * step->fwd;
        step->tp += share * tp_fwd;
        step->cp += share * cp_fwd;
        step->ep += share * lc->ep_fwd;
        hidden_bwd += share * hidden_fwd;
        step->recompute_flops = share * lc->flops_fwd;
    } else if (e->st->recompute == CDSE_RECOMPUTE_SELECTIVE) {
        /* The attention core is checkpointed and run again in the backward pass; with flash
         * attention that saves no memory (the core keeps no score matrix) but still costs the
         * forward kernel (Megatron-Core checkpoints core attention whatever its kernel). */
        step->recompute = lc->attn_fwd;
        step->recompute_flops = lc->attn_flops_fwd;
    }
    if (e->st->recompute != CDSE_RECOMPUTE_FULL && e->st->recompute_modules != 0) {
        module_recompute(e, moe, lc, step);
        if (moe && (e->st->recompute_modules & CDSE_RECOMPUTE_MOE))
            hidden_bwd += lc->ep_hidden_fwd; /* the dispatch and combine again */
    }
    step->hidden_fwd = hidden_fwd;
    step->hidden_bwd = hidden_bwd;
    /* The host launches the recomputed kernels again: their share of the forward pass's launches
     * is taken as the share of its FLOPs they repeat (all of them with full recomputation), a
     * figure of the layer's shape only, so no faster GPU changes it. */
    step->recompute_launch = lc->flops_fwd > 0.0 ? step->recompute_flops / lc->flops_fwd : 0.0;
    step->fwd_comm = tp_fwd + cp_fwd + lc->ep_fwd;
}

/* The average layer of a stage: MoE layers are spread evenly over the pipeline stages. */
static void average_layer_step(const env *e, const dims *x, layer_step *step)
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
    setup(model, system, &st, &e, &x, &plan);
    layer_step step;
    average_layer_step(&e, &x, &step);
    *forward_s = step.fwd + step.fwd_comm;
    *backward_s = step.bwd + step.recompute + (step.tp + step.cp + step.ep - step.fwd_comm);
    return status;
}

double cdse_embedding_state_gib(const cdse_model *model, const cdse_strategy *strategy)
{
    cdse_strategy st = *strategy;
    if (st.dp == 0)
        st.dp = st.gpus / (st.tp * st.pp * st.cp);
    dims x;
    fill_dims(model, &st, &x);
    stage_param_count params;
    stage_params(model, &x, &params);
    double w, g, o;
    const cdse_stack *stk = st.stack != NULL ? st.stack : &cdse_stack_default;
    state_bytes(st.zero, x.d * x.c, stk->grad_bytes, &w, &g, &o);
    return params.embed * (w + g + o) / CDSE_GIB;
}

typedef struct dp_windows {
    double fwd, bwd;          /* one micro-batch of the stage (bwd with recomputation) */
    double m;                 /* micro-batches per iteration */
    double layers;            /* layers of the stage */
    double tensors_per_layer; /* weight matrices of a layer */
    double recompute;         /* share of the layers whose forward runs again in backward */
    double hbm;               /* achievable HBM bytes/s */
    double p, v;              /* pipeline stages and model chunks per stage */
    double first_bwd;         /* one micro-batch of the first stage (no output layer) */
} dp_windows;

/* Host time of one eager PyTorch operation (~5 us: a CUDA kernel launch of a few us plus the
 * framework's dispatch; NVIDIA CUDA C++ Best Practices Guide: launch overhead "on the order of
 * microseconds"). DeepSpeed ZeRO-3 of 2021-22 gathers and reduce-scatters one parameter at a time
 * through torch.distributed's list-of-tensors collectives, building the list with one narrow()
 * per rank of the group (deepspeed/runtime/zero/partition_parameters.py, _allgather_param and
 * _reduce_scatter_gradient at DeepSpeed commit 11e94e6c7, June 2021); ProcessGroupNCCL runs a
 * list collective through a flat buffer with one copy kernel per rank: two host operations per
 * rank and call. */
#define HOST_OP_S              5e-6
#define DEEPSPEED_OPS_PER_RANK 2.0

/* HBM bytes moved per byte of a DeepSpeed ZeRO-3 (2021-22) call's full (gathered) buffer, on the
 * GPU in series with the collective (every call waits for the previous, see zero3_time).
 * All-gather: torch.zeros of the gathered buffer (write 1; _allgather_param at DeepSpeed
 * 11e94e6c7) and ProcessGroupNCCL's copy of its flat output into the list of per-rank tensors
 * (read 1, write 1; pytorch/pytorch torch/lib/c10d/ProcessGroupNCCL.cpp at 6f583bb56de3,
 * allgather: "Copy the flattened output tensors to the outputs"). Reduce-scatter: the gradient
 * divided by the group size in place before the reduction (read 1, write 1; stage3.py
 * average_tensor at 11e94e6c7) and ProcessGroupNCCL's copy of the list of inputs into a flat
 * buffer (read 1, write 1; reduce_scatter: "Copy the input tensors to the flattened inputs"). */
#define DEEPSPEED_GATHER_COPY_BYTES 3.0
#define DEEPSPEED_REDUCE_COPY_BYTES 4.0

/* `comm` prefetched one layer (of `units`) ahead: each layer's transfer overlaps the computation
 * of the layer before it, the first one's overlaps nothing. */
static double prefetched(double comm, double window, double units)
{
    double first = comm / units;
    return first + exposed(comm - first, window - window / units);
}

/* ZeRO-3 / FSDP for `params` parameters per GPU sharded over the group: per micro-batch, the
 * parameters are all-gathered for the forward pass and again for the backward pass (and, with
 * DeepSpeed, again for the recomputed forward), and the gradients reduce-scattered (Rajbhandari
 * et al. 2020, Sec. 5.3), each call paying the collective's latency; the gathers move
 * `weight_bytes`, the parameters in the dtype the GPUs hold them (FP8 with the stack's
 * fp8_param_gather: Megatron-FSDP gathers FP8 weights). DeepSpeed (2021-22): one call
 * per weight tensor (smaller tensors stay gathered), a torch.cuda.synchronize() before each
 * gather (_allgather_param), so nothing overlaps the computation, DEEPSPEED_OPS_PER_RANK host
 * operations per rank and call, and the HBM copies of the call's full buffer
 * (DEEPSPEED_GATHER_COPY_BYTES, DEEPSPEED_REDUCE_COPY_BYTES). FSDP2 / Megatron-FSDP: calls of
 * zero3_bucket_params parameters, at least one per layer; a layer's bucket is prefetched while the
 * previous layer computes, and the gradient reduce-scatter of a layer runs during the backward pass
 * of the layers before it. */
static double zero3_time(cdse_comm_plan *plan, const cdse_system *system, const cdse_stack *stk,
                         int comm_group, int group, int stride, double params, double weight_bytes,
                         const dp_windows *w)
{
    bool deepspeed = stk->zero3_style == CDSE_ZERO3_DEEPSPEED;
    double gathers = deepspeed ? 1.0 + w->recompute : 1.0; /* in the backward pass */
    double calls = deepspeed ? w->layers * w->tensors_per_layer
                             : fmax(ceil(params / stk->zero3_bucket_params), w->layers);
    double host = deepspeed ? group * DEEPSPEED_OPS_PER_RANK * HOST_OP_S : 0.0;
    /* DeepSpeed's and ProcessGroupNCCL's copies of the full buffer, per call. */
    double full = params / calls;
    double ag_copy = deepspeed ? weight_bytes / calls * DEEPSPEED_GATHER_COPY_BYTES / w->hbm : 0.0;
    double rs_copy =
        deepspeed ? full * stk->grad_bytes * DEEPSPEED_REDUCE_COPY_BYTES / w->hbm : 0.0;
    double ag_call =
        cdse_comm_plan_add(plan, system, comm_group, CDSE_COLL_ALLGATHER, group, stride,
                           weight_bytes / calls, w->m * (1.0 + gathers) * calls);
    double rs_call = cdse_comm_plan_add(plan, system, comm_group, CDSE_COLL_REDUCE_SCATTER, group,
                                        stride, params * stk->grad_bytes / calls, w->m * calls);
    double ag = calls * (ag_call + host + ag_copy), rs = calls * (rs_call + host + rs_copy);
    if (deepspeed)
        return w->m * ((1.0 + gathers) * ag + rs);
    double fwd = prefetched(ag, w->fwd, w->layers);
    double bwd = prefetched(gathers * ag + rs, w->bwd, w->layers);
    return w->m * (fwd + bwd);
}

/* Megatron-Core's interleaved schedule with overlap_grad_reduce: each model chunk has its own
 * gradient buffer, and its reduction is launched, whole, once the backward pass of the chunk's
 * last micro-batch is over, at the same moment on every stage (the schedule's grad_sync_func,
 * which Megatron-LM sets by default: delay_grad_reduce, megatron/training/training.py:1001-1004
 * and arguments.py:1422-1424 at r0.8 937571cfd4, align_grad_reduce at d98e8a64d; Megatron-Bridge
 * align_grad_reduce = True; NeMo's reduce_overlap_gradients; megatron/core/pipeline_parallel/
 * schedules.py backward_step_helper, 744-758 at r0.8). The first stage's last p v backward units
 * (a unit: one chunk's backward pass of one micro-batch) take chunk v - 1's micro-batches first
 * and chunk 0's last, p each (get_model_chunk_id), so chunk j's reduction can start j p units
 * before the backward pass ends. The chunks' reductions, `chunk` each (`first` for chunk 0,
 * which holds the embedding), run one after another on the data-parallel communicator; what runs
 * before the end of the pass costs its interference, chunk 0's comes after it. The first stage
 * sets the pace: the others launch chunks 1.. at the same moment and chunk 0 earlier. */
static double chunked_reduce(double first, double chunk, double v, double p, double unit)
{
    double free_at = -DBL_MAX; /* the communicator, relative to the end of the backward pass */
    for (double j = v - 1.0; j >= 1.0; j -= 1.0)
        free_at = fmax(free_at, -j * p * unit) + chunk;
    double late = fmax(0.0, free_at);
    return late + OVERLAP_INTERFERENCE * ((v - 1.0) * chunk - late) + first;
}

/* Gradient reduction for `params` parameters per GPU replicated over `group` ranks `stride`
 * apart, in the stack's gradient dtype: bucketed (DP_BUCKET_PARAMS, grown by the plain
 * data-parallel size `dp_size`) and overlapped with the last micro-batch's backward pass when the
 * stack overlaps it (Megatron-Core DDP overlap_grad_reduce; Megatron-LM of 2021-22 all-reduced
 * after the backward pass), or chunk by chunk with interleaving (chunked_reduce; `first_extra` of
 * the parameters belong to the first chunk, the rest are spread evenly); the distributed
 * optimizer's parameter all-gather of `weight_bytes` (the parameters in the dtype the GPU holds
 * them, layer_weight_bytes) overlaps the next forward pass when the stack overlaps it
 * (overlap_param_gather). Every collective is an entry of the communication plan. */
static double dp_comm_time(cdse_comm_plan *plan, const cdse_system *system, const cdse_stack *stk,
                           int comm_group, int zero, double params, double weight_bytes, int group,
                           int stride, double dp_size, double first_extra, const dp_windows *w)
{
    if (group <= 1 || params <= 0.0)
        return 0.0;
    if (zero >= 3)
        return zero3_time(plan, system, stk, comm_group, group, stride, params, weight_bytes, w);
    double grad_bytes = params * stk->grad_bytes;
    double bucket = fmin(1.0, fmax(DP_BUCKET_PARAMS, DP_BUCKET_PARAMS_PER_RANK * dp_size) / params);
    int reduce_coll = zero == 0 ? CDSE_COLL_ALLREDUCE : CDSE_COLL_REDUCE_SCATTER;
    double t;
    if (stk->overlap_grad_reduce && stk->grad_reduce_per_chunk && w->v > 1.0) {
        double even = (params - first_extra) / w->v * stk->grad_bytes;
        double chunk, first;
        if (first_extra > 0.0) {
            chunk = cdse_comm_plan_add(plan, system, comm_group, reduce_coll, group, stride, even,
                                       w->v - 1.0);
            first = cdse_comm_plan_add(plan, system, comm_group, reduce_coll, group, stride,
                                       even + first_extra * stk->grad_bytes, 1.0);
        } else {
            chunk = first = cdse_comm_plan_add(plan, system, comm_group, reduce_coll, group, stride,
                                               even, w->v);
        }
        t = chunked_reduce(first, chunk, w->v, w->p, w->first_bwd / w->v);
    } else {
        double reduce = cdse_comm_plan_add(plan, system, comm_group, reduce_coll, group, stride,
                                           grad_bytes, 1.0);
        t = stk->overlap_grad_reduce ? fmax(bucket * reduce, exposed(reduce, w->bwd)) : reduce;
    }
    if (zero == 0)
        return t;
    double ag = cdse_comm_plan_add(plan, system, comm_group, CDSE_COLL_ALLGATHER, group, stride,
                                   weight_bytes, 1.0);
    return t + (stk->overlap_param_gather ? fmax(bucket * ag, exposed(ag, w->fwd)) : ag);
}

/* `w` with its windows (the passes' times) scaled by `share`. */
static dp_windows window_share(const dp_windows *w, double share)
{
    dp_windows part = *w;
    part.fwd *= share;
    part.bwd *= share;
    part.first_bwd *= share;
    return part;
}

/* The data-parallel reductions of a stage (dp_comm_time per group): the dense parameters over the
 * dp x cp ranks holding the same weights (the group starts at the smaller of its parts' strides,
 * exact when cp and dp are adjacent in the placement, as by default: stride tp), the expert
 * parameters over the expert data-parallel group of the folded expert grid (edp ranks at its
 * stride); the layers' weights in the dtype the GPUs hold them (layer_weight_bytes), the embedding
 * in bf16. The two streams, and `other` seconds of other transfers that overlap the same passes
 * (the offload traffic), share the windows in proportion to their time with nothing hidden, so
 * that together they hide behind the passes once, as one stream of all would; `other_share`
 * receives the share of the others. Returns the dense part, `experts` receives the expert part. */
static double stage_dp_comm(cdse_comm_plan *plan, const env *e, const dims *x,
                            const stage_param_count *params, const dp_windows *w, double other,
                            double *experts, double *other_share)
{
    int dp_stride = x->stride[CDSE_PLACE_DP], cp_stride = x->stride[CDSE_PLACE_CP];
    int dense_stride = x->c > 1.0 && cp_stride < dp_stride ? cp_stride : dp_stride;
    double layer_bytes = layer_weight_bytes(e);
    int zero = e->st->zero;
    double dense_params = params->dense + params->embed;
    double dense_bytes = params->dense * layer_bytes + params->embed * WEIGHT_BYTES;
    int dense_group = (int)(x->d * x->c), expert_group = (int)x->edp;
    int expert_stride = x->expert_stride[CDSE_EXPERT_DP];
    bool experts_present = params->experts > 0.0;
    *experts = 0.0;
    *other_share = 0.0;
    if (!experts_present && !(other > 0.0))
        return dp_comm_time(plan, e->sys, e->stk, CDSE_GROUP_DP, zero, dense_params, dense_bytes,
                            dense_group, dense_stride, x->d, params->embed, w);
    /* The streams' times with no window, through a plan that is full (it keeps nothing). */
    cdse_comm_plan full;
    full.n = CDSE_COMM_PLAN_MAX;
    dp_windows closed = window_share(w, 0.0);
    double dense_all =
        dp_comm_time(&full, e->sys, e->stk, CDSE_GROUP_DP, zero, dense_params, dense_bytes,
                     dense_group, dense_stride, x->d, params->embed, &closed);
    double expert_all = 0.0;
    if (experts_present)
        expert_all = dp_comm_time(&full, e->sys, e->stk, CDSE_GROUP_EDP, zero, params->experts,
                                  params->experts * layer_bytes, expert_group, expert_stride, x->d,
                                  0.0, &closed);
    double all = dense_all + expert_all + fmax(0.0, other);
    double dense_share = all > 0.0 ? dense_all / all : 1.0;
    double expert_share = all > 0.0 ? expert_all / all : 0.0;
    *other_share = fmax(0.0, 1.0 - dense_share - expert_share);
    dp_windows dense_w = window_share(w, dense_share), expert_w = window_share(w, expert_share);
    double dense =
        dp_comm_time(plan, e->sys, e->stk, CDSE_GROUP_DP, zero, dense_params, dense_bytes,
                     dense_group, dense_stride, x->d, params->embed, &dense_w);
    if (experts_present)
        *experts = dp_comm_time(plan, e->sys, e->stk, CDSE_GROUP_EDP, zero, params->experts,
                                params->experts * layer_bytes, expert_group, expert_stride, x->d,
                                0.0, &expert_w);
    return dense;
}

/* Host and GPU are two resources that work at once: the host launches a layer's kernels
 * (launch_s_per_layer for the forward pass, twice that for the backward pass, plus the launches of
 * the kernels recomputation repeats, layer_step's recompute_launch) while the GPU runs
 * the kernels launched before, so a pass of a layer takes the longer of the two. `idle`
 * receives, per layer and micro-batch, the time the GPU waits for the host in the forward and
 * in the backward pass: the part of the launch time that exceeds the GPU time of the kernels it
 * launches (when the host is ahead, its launches overlap the GPU's work). That time runs like
 * computation: communication overlapped with a pass hides behind it too. */
typedef struct host_idle {
    double fwd, bwd;
} host_idle;

static void host_idle_of(const env *e, const layer_step *step, host_idle *idle)
{
    double launch = e->stk->launch_s_per_layer;
    /* The GPU's stream is busy for the computation and the collectives it waits for. */
    double gpu_fwd = step->fwd + step->fwd_comm;
    double gpu_bwd = step->bwd + step->recompute + step->tp + step->cp + step->ep - step->fwd_comm;
    idle->fwd = fmax(0.0, launch - gpu_fwd);
    idle->bwd = fmax(0.0, (2.0 + step->recompute_launch) * launch - gpu_bwd);
}

/* Host-side costs the GPU does not hide: the stack's per-iteration costs (data loading, loss and
 * gradient-norm reductions, logging) and, per layer and micro-batch, the GPU's wait for the
 * host's launches (host_idle_of), over the `n_layers` layers of the slowest stage: the same layers
 * whose computation and collectives the iteration counts (under the embedding-aware split the
 * last stage may hold one layer fewer than stage_layers; counting the wait over stage_layers made
 * a better network, whose saving counts n_layers layers, raise t_fixed_s by more). */
static double fixed_time(const env *e, const dims *x, double n_layers, const host_idle *idle)
{
    return e->stk->iteration_fixed_s + x->m * n_layers * (idle->fwd + idle->bwd);
}

/* Output layer and loss on the last stage (GEMM h x V/t, fp32 cross-entropy), one micro-batch:
 * forward (with the loss) and backward. */
static void output_layer_times(const env *e, const dims *x, double *fwd, double *bwd)
{
    double logits_flops = 0.0;
    /* The output layer runs in bf16 even in FP8 training (Megatron-Core's output layer is not a
     * Transformer Engine FP8 module). */
    env head = *e;
    head.gemm_table = &e->sys->gemm_eff;
    head.gemm_peak = e->attn_peak;
    head.operand_bytes = ACT_BYTES;
    double logits = gemm_time(&head, x->tokens, x->vocab / x->t, x->h, &logits_flops);
    /* The loss's HBM traffic (the stack's cross_entropy_bytes per logit, forward and backward
     * passes together) is charged to the forward pass: a stage's pace is its sum. */
    double loss = x->tokens * x->vocab / x->t * e->stk->cross_entropy_bytes / e->hbm;
    *fwd = logits + loss;
    *bwd = 2.0 * logits;
}

/* Blocking transfers on the critical path of DeepSpeed's TrainSchedule (schedule.py at 3293cf72a;
 * like Megatron it sends the boundary activation scattered over the TP ranks, pipe/engine.py
 * is_pipe_partitioned), m micro-batches on p stages: a middle stage runs four per micro-batch,
 * each waiting for its partner (receive the activation and send back the previous gradient in a
 * forward step, send on the previous activation and receive the gradient in a backward step),
 * where Megatron's 1F1B pairs a send with a receive twice per step, 2 (m + p - 1) in all. With
 * the fill and the drain, 4m + 2p - 8 for p >= 3 (at least 2 (p - 1), one micro-batch's way
 * there and back), 2m for two stages, whose ends have one neighbour each: counted on an event
 * simulation of the schedule's commands (tests/py/deepspeed_schedule.py: m 1-24, 64, 128, 240 by
 * p 2-12, 16, 24, 35, backward 1 and 3 times the forward). */
static double deepspeed_transfers(double m, double p)
{
    if (p < 3.0)
        return 2.0 * m;
    return fmax(4.0 * m + 2.0 * p - 8.0, 2.0 * (p - 1.0));
}

/* Under the embedding-aware split the last stage holds one layer fewer and the output layer: the
 * slowest stage is the longer of it and a middle stage of `n_layers` layers of cost `layer`.
 * Leaves the stage's layers in `n_layers` and its output-layer times (0 for a middle stage). */
static void split_slowest_stage(double layer, double *n_layers, double *head_fwd, double *head_bwd)
{
    if ((*n_layers - 1.0) * layer + *head_fwd + *head_bwd >= *n_layers * layer)
        *n_layers -= 1.0;
    else
        *head_fwd = *head_bwd = 0.0;
}

/* `position_len`: rows of the learned position table, which a histogram's mean-length
 * evaluation keeps at the model's seq_len. */
static void evaluate_one(const cdse_model *model, const cdse_system *system,
                         const cdse_strategy *strategy, int position_len, cdse_result *r,
                         cdse_comm_plan *plan, double exposed_s[CDSE_GROUP_COUNT])
{
    memset(r, 0, sizeof *r);
    plan->n = 0;
    r->seq_imbalance = 1.0;
    cdse_strategy st = *strategy;
    r->status = cdse_strategy_check(model, system, &st);
    r->dp = st.dp;
    r->grad_accum = st.grad_accum;
    if (r->status != CDSE_ST_OK && r->status != CDSE_ST_DTYPE_UNSUPPORTED)
        return;

    env e;
    dims x;
    setup(model, system, &st, &e, &x, plan);
    x.s_positions = position_len;
    layer_step step;
    average_layer_step(&e, &x, &step);
    double peak = e.peak / 1e12; /* TFLOP/s */

    double head_fwd, head_bwd;
    output_layer_times(&e, &x, &head_fwd, &head_bwd);

    /* The slowest stage: L/p layers plus the output layer (the last stage); when the split
     * counts the output layer as a layer, the last stage holds one layer fewer and a middle
     * stage of stage_layers may be the slower. */
    /* A layer's time counts the GPU's waits for the host's launches (host_idle_of), so that the
     * slowest stage is chosen by what its layers take, and its waits count its layers only. */
    host_idle idle;
    host_idle_of(&e, &step, &idle);
    double n_layers = x.stage_layers;
    if (cdse_split_embedding(&st))
        split_slowest_stage(step.fwd + step.bwd + step.recompute + step.tp + step.cp + step.ep +
                                idle.fwd + idle.bwd,
                            &n_layers, &head_fwd, &head_bwd);
    double stage_fwd = n_layers * step.fwd + head_fwd;
    double stage_bwd = n_layers * step.bwd + head_bwd;
    double stage_rec = n_layers * step.recompute;
    double stage_tp = n_layers * step.tp;
    double stage_cp = n_layers * step.cp;
    double stage_ep = n_layers * step.ep;
    double per_mb = stage_fwd + stage_bwd + stage_rec + stage_tp + stage_cp + stage_ep;
    /* What runs in a micro-batch's passes of the stage: the GPU's work and its waits for the
     * host's launches (host_idle_of). The data-parallel collectives hide behind it, but for the
     * computation that already hides the layers' own collectives (one window, shared). */
    double free_fwd = fmax(0.0, step.fwd - step.hidden_fwd) + idle.fwd;
    double free_bwd = fmax(0.0, step.bwd + step.recompute - step.hidden_bwd) + idle.bwd;
    double run_fwd = n_layers * free_fwd + head_fwd;
    double run_bwd = n_layers * free_bwd + head_bwd;
    double run_per_mb = per_mb + n_layers * (idle.fwd + idle.bwd);

    /* 1F1B pipeline: m micro-batches plus a bubble of (p - 1) stage times, divided by v with
     * interleaving (Narayanan et al. 2021, Sec. 2.2). DeepSpeed's TrainSchedule (pipeline_lockstep)
     * runs at the same rate: each of its 2 (m + p - 1) steps pairs a stage with one neighbour
     * only (a forward step receives from and sends to the previous stage, a backward step the
     * next; deepspeed/runtime/pipe/schedule.py at commit 3293cf72a, January 2022), so the
     * blocking transfers order the stages as 1F1B's dependencies do and nobody waits for a
     * longer pass of the other neighbour (tests/unit/test_perf.c: test_pipeline_lockstep). */
    double bubble = (x.p - 1.0) / x.v * run_per_mb;
    double pp_comm = 0.0;
    if (x.p > 1.0) {
        /* Megatron scatters the boundary activation over the TP ranks before sending
         * (Narayanan et al. 2021 Sec. 4.1); each chunk step sends forward and backward. */
        double bytes = x.tokens * x.h * ACT_BYTES / x.t;
        double steps = x.m * x.v + x.p - 1.0;
        double calls = e.stk->pipeline_lockstep ? deepspeed_transfers(x.m, x.p) : 2.0 * steps;
        double one = cdse_comm_plan_add(plan, system, CDSE_GROUP_PP, CDSE_COLL_SENDRECV, (int)x.p,
                                        x.stride[CDSE_PLACE_PP], bytes, calls);
        if (x.v > 1.0 && e.stk->overlap_p2p) {
            /* The interleaved schedule overlaps each transfer with the next chunk's computation
             * (Megatron-Core overlap_p2p_comm, available with interleaving only), except where
             * nothing else is ready: the first micro-batch's forward pass crosses p v - 1 chunk
             * boundaries before the pipeline is full, and the last one's backward pass as many
             * while it drains, each waiting for its transfer (the schedule waits on the receive
             * before the chunk's pass; Narayanan et al. 2021 Sec. 2.2.2: interleaving multiplies
             * the communication by v). */
            double fill = x.p * x.v - 1.0;
            pp_comm = (steps - fill) * exposed(2.0 * one, run_per_mb / x.v) + fill * 2.0 * one;
        } else {
            pp_comm = calls * one;
        }
    }

    stage_param_count params;
    double updated = 0.0;
    double act_per_mb = 0.0, in_flight = 0.0;
    memory_model(model, &e, &x, r, &params, &updated, &act_per_mb, &in_flight);

    /* Data-parallel gradient reduction (stage_dp_comm). DeepSpeed's pipeline engine reduces the
     * gradients after the last step of its schedule (TrainSchedule appends ReduceTiedGrads,
     * ReduceGrads and OptimizerStep to the last step): nothing hides them. */
    bool flush_reduce = e.stk->pipeline_lockstep && x.p > 1.0;
    dp_windows windows = {run_fwd,
                          flush_reduce ? 0.0 : run_bwd,
                          x.m,
                          x.stage_layers,
                          x.gpt ? 4.0 : 5.0,
                          recomputed_share(&st, x.stage_layers),
                          e.hbm,
                          x.p,
                          x.v,
                          flush_reduce ? 0.0 : x.stage_layers * free_bwd};
    /* The offload traffic overlaps the same passes as the data-parallel streams: one window. */
    double offload_share;
    double dp_expert;
    double dp_dense =
        stage_dp_comm(plan, &e, &x, &params, &windows,
                      offload_overlapped_time(&e, &x, act_per_mb, r), &dp_expert, &offload_share);
    double dp_comm = dp_dense + dp_expert;

    double optimizer = updated * OPTIMIZER_HBM_BYTES_PER_PARAM / e.hbm;
    /* Gradients accumulated by a pass of their own after every backward pass (the stack's
     * grad_accum_bytes per parameter of the stage's layers): the stage's per-micro-batch work grows
     * by it, so it is paid m times and, in the bubble, (p - 1) / v times. */
    double accum = (params.dense + params.experts) * e.stk->grad_accum_bytes / e.hbm;
    optimizer += x.m * accum;
    bubble += (x.p - 1.0) / x.v * accum;
    double compute_iter = x.m * per_mb;
    offload_model(&e, &x, offload_share * x.m * run_per_mb, act_per_mb, in_flight, r);
    /* The stack's workspaces (NCCL, cuBLAS, Transformer Engine) and what its caching allocator
     * reserves beyond the activations it hands out (they are freed and reallocated every
     * micro-batch; weights, gradients and optimizer state live in preallocated buffers), and the
     * layer that recomputation rebuilds during its backward pass (recompute_buffer). */
    r->mem_runtime_gib = e.stk->runtime_gib + e.stk->allocator_overhead * r->mem_activations_gib +
                         recompute_buffer(&e, &x) / CDSE_GIB;

    r->t_fixed_s = fixed_time(&e, &x, n_layers, &idle);
    double time =
        compute_iter + bubble + pp_comm + dp_comm + optimizer + r->t_offload_s + r->t_fixed_s;
    r->time_per_iteration_s = time;
    r->t_forward_s = x.m * stage_fwd;
    r->t_backward_s = x.m * stage_bwd;
    r->t_recompute_s = x.m * stage_rec;
    r->t_tp_comm_s = x.m * stage_tp;
    r->t_cp_comm_s = x.m * stage_cp;
    r->t_ep_comm_s = x.m * stage_ep;
    r->t_pp_comm_s = pp_comm;
    r->t_dp_comm_s = dp_comm;
    r->t_bubble_s = bubble;
    r->t_optimizer_s = optimizer;
    exposed_s[CDSE_GROUP_TP] = r->t_tp_comm_s;
    exposed_s[CDSE_GROUP_CP] = r->t_cp_comm_s;
    exposed_s[CDSE_GROUP_EP] = r->t_ep_comm_s;
    exposed_s[CDSE_GROUP_PP] = pp_comm;
    exposed_s[CDSE_GROUP_DP] = dp_dense;
    exposed_s[CDSE_GROUP_EDP] = dp_expert;

    double tokens = (double)st.global_batch * model->seq_len;
    double model_flops = cdse_model_flops_per_token(model) * tokens;
    /* Hardware FLOPs add what recomputation repeats: per layer and micro-batch on one GPU. */
    double extra = step.recompute_flops * model->layers * x.t * x.c * x.m * x.d;
    r->tokens_per_s = tokens / time;
    r->model_tflops_per_gpu = model_flops / time / st.gpus / 1e12;
    r->hardware_tflops_per_gpu = (model_flops + extra) / time / st.gpus / 1e12;
    r->mfu = r->model_tflops_per_gpu / peak;
    r->hfu = r->hardware_tflops_per_gpu / peak;

    r->mem_total_gib = r->mem_weights_gib + r->mem_gradients_gib + r->mem_optimizer_gib +
                       r->mem_activations_gib + r->mem_other_gib + r->mem_fp8_cache_gib +
                       r->mem_runtime_gib;
    /* Reserved: the CUDA context and NCCL's buffers (allocated outside PyTorch) as they are, and
     * the tensors PyTorch's caching allocator hands out (every HBM term but those two) scaled by
     * its measured reserved-over-allocated ratio, which replaces the stack's allocator_overhead
     * share of the runtime term (the larger of the two is kept). */
    double tensors = r->mem_total_gib - r->mem_other_gib - e.stk->runtime_gib;
    r->mem_reserved_gib = r->mem_other_gib + e.stk->runtime_gib +
                          fmax(CDSE_ALLOCATOR_RESERVED_OVER_ALLOCATED *
                                   (tensors - e.stk->allocator_overhead * r->mem_activations_gib),
                               tensors);
    if (r->status == CDSE_ST_OK) {
        bool hbm_full = r->mem_total_gib > system->hbm_gib;
        bool tier_full =
            r->mem_offloaded_gib > 0.0 && r->mem_offloaded_gib > tier_capacity_per_gpu(system);
        if (hbm_full || tier_full)
            r->status = CDSE_ST_OOM;
    }
}

void cdse_iteration_work(const cdse_model *model, int global_batch, double *tokens,
                         double *model_flops)
{
    if (model->n_seq_bins < 1) {
        *tokens = (double)global_batch * model->seq_len;
        *model_flops = cdse_model_flops_per_token(model) * *tokens;
        return;
    }
    double total = 0.0, mean_len = 0.0, mean_square = 0.0;
    for (int i = 0; i < model->n_seq_bins; i++) {
        double w = model->seq_bin_weight[i], len = model->seq_bin_len[i];
        total += w;
        mean_len += w * len;
        mean_square += w * len * len;
    }
    mean_len /= total;
    mean_square /= total;
    /* f(s) = f0 + f1 s per token, so a sample of length s costs s f0 + f1 s^2. */
    cdse_model probe = *model;
    probe.seq_len = 0;
    double f0 = cdse_model_flops_per_token(&probe);
    probe.seq_len = 1;
    double f1 = cdse_model_flops_per_token(&probe) - f0;
    *tokens = global_batch * mean_len;
    *model_flops = global_batch * (mean_len * f0 + mean_square * f1);
}

void cdse_result_take_memory(cdse_result *to, const cdse_result *from)
{
    to->mem_total_gib = from->mem_total_gib;
    to->mem_weights_gib = from->mem_weights_gib;
    to->mem_gradients_gib = from->mem_gradients_gib;
    to->mem_optimizer_gib = from->mem_optimizer_gib;
    to->mem_activations_gib = from->mem_activations_gib;
    to->mem_other_gib = from->mem_other_gib;
    to->mem_offloaded_gib = from->mem_offloaded_gib;
    to->mem_fp8_cache_gib = from->mem_fp8_cache_gib;
    to->mem_runtime_gib = from->mem_runtime_gib;
    to->mem_reserved_gib = from->mem_reserved_gib;
}

void cdse_result_set_throughput(cdse_result *r, double tokens, double model_flops, int gpus,
                                double peak_tflops)
{
    double hw_ratio =
        r->model_tflops_per_gpu > 0.0 ? r->hardware_tflops_per_gpu / r->model_tflops_per_gpu : 1.0;
    double time = r->time_per_iteration_s;
    r->tokens_per_s = tokens / time;
    r->model_tflops_per_gpu = model_flops / time / gpus / 1e12;
    r->hardware_tflops_per_gpu = r->model_tflops_per_gpu * hw_ratio;
    r->mfu = peak_tflops > 0.0 ? r->model_tflops_per_gpu / peak_tflops : 0.0;
    r->hfu = peak_tflops > 0.0 ? r->hardware_tflops_per_gpu / peak_tflops : 0.0;
}

/* With a sequence-length histogram, memory is that of the longest sample (seq_len) and time is
 * costed at the cost-equivalent length s_eff, whose per-sample cost s (1 + s / (6h)) equals the
 * histogram's mean cost (per-token work grows with the attention span, Narayanan et al. 2021
 * eq. 3); the data-parallel ranks wait for the slowest, whose samples cost seq_imbalance times the
 * mean (cdse_seq_imbalance). Tokens and model FLOPs are those of the histogram's samples. */
static void evaluate(const cdse_model *model, const cdse_system *system,
                     const cdse_strategy *strategy, cdse_result *r, cdse_comm_plan *plan,
                     double exposed_s[CDSE_GROUP_COUNT])
{
    evaluate_one(model, system, strategy, model->seq_len, r, plan, exposed_s);
    r->seq_imbalance = 1.0;
    if (model->n_seq_bins < 1 || (r->status != CDSE_ST_OK && r->status != CDSE_ST_OOM))
        return;
    double h = model->hidden;
    double mean_cost = cdse_seq_mean_cost(model, NULL);
    double s_eff = 3.0 * h * (sqrt(1.0 + 2.0 * mean_cost / (3.0 * h)) - 1.0);
    cdse_model timed_model = *model;
    int granule = strategy->cp > 1 ? 2 * strategy->cp : 1;
    timed_model.seq_len = (int)((s_eff + granule / 2.0) / granule) * granule;
    if (timed_model.seq_len < granule)
        timed_model.seq_len = granule;
    cdse_result timed;
    evaluate_one(&timed_model, system, strategy, model->seq_len, &timed, plan, exposed_s);
    double compute = timed.t_forward_s + timed.t_backward_s + timed.t_recompute_s +
                     timed.t_tp_comm_s + timed.t_cp_comm_s + timed.t_ep_comm_s + timed.t_bubble_s;
    double seqs = (double)strategy->global_batch / r->dp;
    double imbalance = cdse_seq_imbalance(model, r->dp, seqs);
    timed.seq_imbalance = imbalance;
    timed.t_imbalance_s = (imbalance - 1.0) * compute;
    double time = timed.time_per_iteration_s + timed.t_imbalance_s;
    timed.time_per_iteration_s = time;

    double tokens, model_flops;
    cdse_iteration_work(model, strategy->global_batch, &tokens, &model_flops);
    double peak = timed.mfu > 0.0 ? timed.model_tflops_per_gpu / timed.mfu : 0.0;
    cdse_result_set_throughput(&timed, tokens, model_flops, strategy->gpus, peak);
    /* Memory of the longest sample, from the first evaluation. */
    timed.status = r->status;
    cdse_result_take_memory(&timed, r);
    *r = timed;
}

void cdse_evaluate(const cdse_model *model, const cdse_system *system,
                   const cdse_strategy *strategy, cdse_result *r)
{
    cdse_comm_plan plan;
    double exposed_s[CDSE_GROUP_COUNT];
    evaluate(model, system, strategy, r, &plan, exposed_s);
}

void cdse_evaluate_plan(const cdse_model *model, const cdse_system *system,
                        const cdse_strategy *strategy, cdse_result *r, cdse_comm_plan *plan)
{
    double exposed_s[CDSE_GROUP_COUNT] = {0};
    evaluate(model, system, strategy, r, plan, exposed_s);
    for (int g = 0; g < CDSE_GROUP_COUNT; g++)
        cdse_comm_plan_expose(plan, g, exposed_s[g]);
}

/* Relative margins of the floor against rounding: its memory is a sum in another order than the
 * evaluator's, and its terms derived from exposed() >= OVERLAP_INTERFERENCE x the collective
 * hold with equality at worst. */
#define FLOOR_MEMORY_MARGIN (1.0 + 1e-9)
#define FLOOR_TIME_MARGIN   (1.0 - 1e-9)

#define ALL_RECOMPUTE_MODULES                                                                      \
    (CDSE_RECOMPUTE_CORE_ATTN | CDSE_RECOMPUTE_MOE_ACT | CDSE_RECOMPUTE_LAYERNORM |                \
     CDSE_RECOMPUTE_MLA_UP_PROJ | CDSE_RECOMPUTE_MLP | CDSE_RECOMPUTE_MOE |                        \
     CDSE_RECOMPUTE_SHARED_EXPERTS)

/* memory_model for `st` with every fine-grained recomputation module (each only lowers the
 * activations kept): `r` receives the memory figures, the activation bytes of one micro-batch
 * and the micro-batches in flight. */
static void least_recompute_memory(const cdse_model *model, const env *e, const dims *x,
                                   const cdse_strategy *st, cdse_result *r, double *act_per_mb,
                                   double *in_flight)
{
    cdse_strategy least = *st;
    least.recompute_modules = ALL_RECOMPUTE_MODULES;
    env mem_env = *e;
    mem_env.st = &least;
    memset(r, 0, sizeof *r);
    stage_param_count params;
    double updated;
    memory_model(model, &mem_env, x, r, &params, &updated, act_per_mb, in_flight);
}

/* The memory of the checked strategy `st` at the least the ignored axes allow: every
 * fine-grained recomputation module (each only lowers the activations kept), the stack's
 * runtime without the allocator's share of the activations; with CDSE_FLOOR_ANY_STATE, ZeRO
 * sharding all it can (stage 3, when the data-parallel group has ranks to shard over) and
 * nothing offloaded (offload moves memory to the tier, the sum stays); otherwise `st`'s ZeRO
 * stage and offload. `r` receives the memory figures; returns the GiB left in HBM. */
static double memory_floor(const cdse_model *model, const env *e, const dims *x,
                           const cdse_strategy *st, int flags, cdse_result *r)
{
    cdse_strategy least = *st;
    if (flags & CDSE_FLOOR_ANY_STATE) {
        least.zero = x->d * x->c > 1.0 ? 3 : 0;
        least.offload = 0;
        least.offload_layers = 0;
    }
    double act_per_mb, in_flight;
    least_recompute_memory(model, e, x, &least, r, &act_per_mb, &in_flight);
    env mem_env = *e;
    mem_env.st = &least;
    offload_model(&mem_env, x, 0.0, act_per_mb, in_flight, r);
    return r->mem_weights_gib + r->mem_gradients_gib + r->mem_optimizer_gib +
           r->mem_activations_gib + r->mem_other_gib + r->mem_fp8_cache_gib + e->stk->runtime_gib;
}

/* Whether the least memory fits: HBM and tier together with CDSE_FLOOR_ANY_STATE, each on its
 * own otherwise. */
static bool memory_fits(const cdse_model *model, const env *e, const dims *x,
                        const cdse_strategy *st, int flags)
{
    cdse_result r;
    double hbm = memory_floor(model, e, x, st, flags, &r);
    const cdse_system *sys = e->sys;
    double tier = sys->tier.attach != CDSE_TIER_NONE ? tier_capacity_per_gpu(sys) : 0.0;
    if (flags & CDSE_FLOOR_ANY_STATE)
        return hbm <= FLOOR_MEMORY_MARGIN * (sys->hbm_gib + tier);
    return hbm <= FLOOR_MEMORY_MARGIN * sys->hbm_gib &&
           r.mem_offloaded_gib <= FLOOR_MEMORY_MARGIN * tier;
}

/* The optimizer step, the data-parallel reduction and the offload traffic of `st` (its ZeRO
 * stage and offload, checked), at their least: the collectives and the overlapped transfers with
 * unlimited windows to hide in (what remains is their interference, exposed() with an infinite
 * window), the serial offload of the optimizer state exactly. With CDSE_FLOOR_ANY_STATE, the
 * optimizer step of a sharded optimizer alone. */
static double state_floor(const cdse_model *model, const env *e, const dims *x,
                          const cdse_strategy *st, int flags, double *optimizer, double *offload)
{
    stage_param_count params;
    stage_params(model, x, &params);
    double dense = params.dense + params.embed;
    bool sharded = (flags & CDSE_FLOOR_ANY_STATE) || st->zero >= 1;
    double updated =
        sharded ? dense / (x->d * x->c) + params.experts / x->edp : dense + params.experts;
    *optimizer = updated * OPTIMIZER_HBM_BYTES_PER_PARAM / e->hbm;
    *offload = 0.0;
    if (flags & CDSE_FLOOR_ANY_STATE)
        return 0.0;
    cdse_comm_plan scratch;
    scratch.n = 0;
    dp_windows open = {DBL_MAX,
                       DBL_MAX,
                       x->m,
                       x->stage_layers,
                       x->gpt ? 4.0 : 5.0,
                       recomputed_share(st, x->stage_layers),
                       e->hbm,
                       x->p,
                       x->v,
                       DBL_MAX};
    double dp_expert;
    double other_share;
    double dp =
        stage_dp_comm(&scratch, e, x, &params, &open, 0.0, &dp_expert, &other_share) + dp_expert;
    double bw = tier_bandwidth(e->sys);
    if (st->offload != 0 && bw > 0.0) {
        /* The state and activations offload_model moves, at their least (given ZeRO stage,
         * every recomputation module). */
        cdse_result m;
        double act_per_mb, in_flight;
        least_recompute_memory(model, e, x, st, &m, &act_per_mb, &in_flight);
        double serial = 0.0, overlapped = 0.0;
        if (st->offload & CDSE_OFFLOAD_OPTIMIZER)
            serial = 2.0 * m.mem_optimizer_gib * CDSE_GIB / bw + e->sys->tier.latency_us * 1e-6;
        /* Activations shrink with recomputation: counted only when the setting is given. */
        if ((st->offload & CDSE_OFFLOAD_ACTIVATIONS) && !(flags & CDSE_FLOOR_ANY_RECOMPUTE))
            overlapped += 2.0 * x->m * offloaded_bytes_per_mb(st, x, act_per_mb) / bw;
        if (st->offload & CDSE_OFFLOAD_WEIGHTS)
            overlapped += 2.0 * x->m * m.mem_weights_gib * CDSE_GIB / bw;
        *offload = serial + FLOOR_TIME_MARGIN * exposed(overlapped, DBL_MAX);
    }
    return FLOOR_TIME_MARGIN * dp;
}

/* The lower bound of bound.h. It keeps the terms of evaluate_one that no value of the axes it
 * ignores can shrink, computed by the same functions on a copy of the strategy whose ignored
 * axes are set to their most permissive values (no fine-grained recomputation, no MoE overlap;
 * with CDSE_FLOOR_ANY_STATE ZeRO 0 and no offload; with CDSE_FLOOR_ANY_RECOMPUTE no
 * recomputation, which only leaves out recomputation and the forward communication it
 * repeats): per micro-batch of the slowest stage the forward and backward passes, the
 * recomputation, the exposed TP communication of the better of tp_comm_overlap off and on, and
 * the exposed CP exchange; m micro-batches plus the pipeline bubble of them; the data-parallel
 * reduction and the offload traffic at their least (state_floor); the optimizer step; the
 * stack's fixed time with the launch time a layer's passes cannot hide (three launch times per
 * layer at least). EP and PP communication
 * count as 0. HUGE_VAL when the checks fail, or when even the least memory does not fit
 * (memory_fits; for any recompute setting with CDSE_FLOOR_ANY_RECOMPUTE). It sums in
 * evaluate_one's order, term by term no larger, so rounding cannot lift it above the time. */
double cdse_time_floor(const cdse_model *model, const cdse_system *system,
                       const cdse_strategy *strategy, int flags)
{
    if (model->n_seq_bins > 0 || system->pool.n_types > 0)
        return 0.0; /* timed at another length, or by another evaluator: no bound */
    cdse_strategy st = *strategy;
    if (flags & CDSE_FLOOR_ANY_RECOMPUTE) {
        st.recompute = CDSE_RECOMPUTE_NONE;
        st.recompute_layers = 0;
    }
    if (flags & CDSE_FLOOR_ANY_STATE) {
        st.zero = 0;
        st.offload = 0;
        st.offload_layers = 0;
    }
    st.recompute_modules = 0;
    st.tp_comm_overlap = false;
    st.moe_dispatcher = 0;
    st.moe_overlap = 0;
    /* With the permissive values, a failed check fails for every value of the ignored axes. */
    if (cdse_strategy_check(model, system, &st) != CDSE_ST_OK)
        return HUGE_VAL;
    env e;
    dims x;
    cdse_comm_plan plan;
    setup(model, system, &st, &e, &x, &plan);
    bool fits = memory_fits(model, &e, &x, &st, flags);
    for (int rc = 0; !fits && (flags & CDSE_FLOOR_ANY_RECOMPUTE) && rc < CDSE_RECOMPUTE_COUNT;
         rc++) {
        cdse_strategy other = st;
        other.recompute = rc;
        fits = memory_fits(model, &e, &x, &other, flags);
    }
    if (!fits)
        return HUGE_VAL;
    layer_step step;
    average_layer_step(&e, &x, &step);
    if (x.t > 1.0 && e.stk->overlap_tp_comm) {
        cdse_strategy overlap = st;
        overlap.tp_comm_overlap = true;
        env e_overlap = e;
        e_overlap.st = &overlap;
        layer_step s;
        average_layer_step(&e_overlap, &x, &s);
        step.tp = fmin(step.tp, s.tp);
    }
    double head_fwd, head_bwd;
    output_layer_times(&e, &x, &head_fwd, &head_bwd);
    double n_layers = x.stage_layers;
    /* With the split counting the output layer as a layer, the evaluator's slowest stage is the
     * longer of a middle stage (n layers) and the last (n - 1 layers and the output layer); the
     * same choice on the floor's layer cost, which is no larger, gives no more than it. */
    if (cdse_split_embedding(&st))
        split_slowest_stage(step.fwd + step.bwd + step.recompute + step.tp + step.cp, &n_layers,
                            &head_fwd, &head_bwd);
    double stage_fwd = n_layers * step.fwd + head_fwd;
    double stage_bwd = n_layers * step.bwd + head_bwd;
    double per_mb =
        stage_fwd + stage_bwd + n_layers * step.recompute + n_layers * step.tp + n_layers * step.cp;
    double bubble = (x.p - 1.0) / x.v * per_mb;
    double optimizer, offload;
    double dp = state_floor(model, &e, &x, &st, flags, &optimizer, &offload);
    /* A layer's passes take at least the host's three launch times (host_idle_of): what the
     * floor's layer time leaves of them, on the n_layers it counts. */
    double launch = e.stk->launch_s_per_layer;
    double layer = step.fwd + step.bwd + step.recompute + step.tp + step.cp;
    double fixed = e.stk->iteration_fixed_s +
                   FLOOR_TIME_MARGIN * x.m * n_layers * fmax(0.0, 3.0 * launch - layer);
    return x.m * per_mb + bubble + dp + optimizer + offload + fixed;
}
