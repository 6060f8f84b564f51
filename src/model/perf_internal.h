/* Internal to the evaluator (src/model/perf*.c): the constants several of its parts use, the
 * per-evaluation context and per-layer cost records, and the functions one part calls in
 * another. Not part of the model's interface (include/clusterdse/model/perf.h is). */
#ifndef CDSE_MODEL_PERF_INTERNAL_H
#define CDSE_MODEL_PERF_INTERNAL_H

#include "clusterdse/model/perf.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "clusterdse/model/bound.h"
#include "clusterdse/model/comm_plan.h"

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

/* A collective that overlaps computation still occupies streaming multiprocessors: NCCL runs one
 * thread block per channel, 16-32 channels on an 8-GPU NVSwitch node (NCCL_MAX_NCHANNELS
 * defaults; nccl src/graph/tuning.cc), i.e. 15-30% of an A100's 108 SMs. The overlapped GEMMs
 * slow down by that share for as long as the collective runs: a hidden collective second costs
 * OVERLAP_INTERFERENCE seconds of computation. Measured: computation overlapped with collectives
 * runs 18.9 % slower on average, 40 % at most (GPT and Llama training on 4 A100, H100, MI250,
 * MI210; "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
 * Learning", arXiv:2507.03114, abstract). */
#define OVERLAP_INTERFERENCE 0.25

/* FP8 dispatch (DeepEP: "FP8 dispatching and BF16 combining", github.com/deepseek-ai/DeepEP
 * README): 1 B per element plus one fp32 scale per 128 channels (DeepSeek-V3's 1 x 128 tile
 * quantization of activations, arXiv:2412.19437 Sec. 3.3.2). */
#define FP8_DISPATCH_BYTES (1.0 + 4.0 / 128.0)
#define ROUTER_BYTES       8.0

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
    double node_limit;  /* NVLink domains a token's routed copies may reach (0 = any) */
    double logit_bytes; /* bytes per logit the loss holds at its peak (the stack's) */
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
    double gemm_sms;       /* the shape model's SMs (0: the efficiency tables) */
    double gemm_shape_eff; /* its efficiency at full waves and long K, this precision */
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
    double cp_window_fwd, cp_window_bwd;     /* the attention time it can hide behind */
    double ep_fwd, ep_bwd;                   /* EP dispatch + combine (before overlap) */
    double shared_fwd;                       /* shared experts' forward GEMMs */
    double shared_col;                       /* of which the column-parallel one (FC1) */
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

/* Parameters held by one GPU of the first pipeline stage (which holds the embedding): the
 * transformer layers' dense parameters, their expert parameters (sharded over EP as well as TP,
 * replicated over dp cp / ep ranks) and the embedding/output layer. */
typedef struct stage_param_count {
    double dense;   /* layers, excluding expert MLPs */
    double experts; /* routed experts held by this GPU */
    double embed;   /* embedding, positions, final norm and untied output layer */
} stage_param_count;

/* One layer and one micro-batch on the critical path. */
typedef struct layer_step {
    double fwd, bwd, recompute; /* computation */
    double tp, cp, ep;          /* exposed communication, both directions */
    double recompute_flops;
    double recompute_launch; /* share of the forward pass's kernel launches repeated */
    double fwd_comm;         /* exposed communication of the forward pass alone */
    /* Computation of the forward and of the backward pass (with recomputation) that hides the
     * layer's own collectives (TP, CP, EP; layer_windows): it cannot hide another stream too. */
    double hidden_fwd, hidden_bwd;
} layer_step;

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

/* Bytes per element of the FP8 transpose Transformer Engine keeps beside an FP8 weight or GEMM
 * input: FP8_TRANSPOSE_BYTES where FP8 GEMMs are TN only, none on fp8_non_tn_gemm systems. */
static inline double fp8_transpose_bytes(const cdse_system *sys)
{
    return sys->fp8_non_tn_gemm ? 0.0 : FP8_TRANSPOSE_BYTES;
}

/* The part of a collective that the computation window cannot hide, plus the slowdown the hidden
 * part inflicts on that computation. */
static inline double exposed(double comm, double window)
{
    double hidden = comm < window ? comm : window;
    return comm - hidden + OVERLAP_INTERFERENCE * hidden;
}

/* The share of a stage's layers that full recomputation recomputes: every layer
 * (recompute_layers 0), or the first recompute_layers of the stage_layers / vpp layers of each
 * chunk (Megatron-Core --recompute-method block, megatron/core/recompute.py:167-181 at
 * d98e8a64d); 0 without full recomputation. Layers are taken as alike. */
static inline double recomputed_share(const cdse_strategy *st, double stage_layers)
{
    if (st->recompute != CDSE_RECOMPUTE_FULL)
        return 0.0;
    if (st->recompute_layers <= 0)
        return 1.0;
    return fmin(1.0, st->recompute_layers * st->vpp / stage_layers);
}

/* perf_gemm.c: the GEMM shape model's output tile (its source there; the grouped expert
 * GEMMs of perf_layer.c pad to it too). */
#define GEMM_TILE 128.0
double perf_gemm_time(const env *e, double m, double n, double k, double *flops);
double perf_gemm_shape_factor(double sms, double m, double n, double k);

/* perf_layer.c */
double perf_cp_merge_bytes(const dims *x, double elements);
void perf_average_layer_step(const env *e, const dims *x, layer_step *step);

/* perf_memory.c */
void perf_stage_params(const cdse_model *model, const dims *x, stage_param_count *out);
double perf_recompute_buffer(const env *e, const dims *x);
double perf_layer_weight_bytes(const env *e);
double perf_offloaded_bytes_per_mb(const env *e, const dims *x, double act_per_mb);
void perf_memory_model(const cdse_model *model, const env *e, const dims *x, cdse_result *r,
                       stage_param_count *params, double *updated, double *act_per_mb,
                       double *in_flight_out, double *weights_most);
double perf_tier_bandwidth(const cdse_system *sys);
double perf_offload_overlapped_time(const env *e, const dims *x, double act_per_mb,
                                    double weights_gib);
void perf_offload_model(const env *e, const dims *x, double compute_time, double overlapped,
                        double act_per_mb, double in_flight, cdse_result *r);
double perf_tier_capacity_per_gpu(const cdse_system *sys);

/* perf_comm.c */
void perf_plan_layer_comm(const cdse_system *sys, const cdse_strategy *st, const dims *x,
                          cdse_comm_plan *plan, layer_comm *lc);
double perf_stage_dp_comm(cdse_comm_plan *plan, const env *e, const dims *x,
                          const stage_param_count *params, const dp_windows *w, double other,
                          double *experts, double *other_share);
double perf_deepspeed_transfers(double m, double p);

/* perf.c */
void perf_fill_dims(const cdse_model *model, const cdse_strategy *st, dims *x);
void perf_setup(const cdse_model *model, const cdse_system *system, const cdse_strategy *st, env *e,
                dims *x, cdse_comm_plan *plan);

#endif
