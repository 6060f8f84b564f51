/* Software-stack profile: what a training framework generation changes in the evaluator.
 * A plain struct (no libconfig); config/stack.c loads it from calibration/stacks/NAME.cfg. */
#ifndef CLUSTERDSE_STACK_H
#define CLUSTERDSE_STACK_H

#include "clusterdse/model/common.h"

typedef enum cdse_zero3_style {
    CDSE_ZERO3_DEEPSPEED = 0, /* DeepSpeed ZeRO-3 (2021-22): per-parameter-group fetches */
    CDSE_ZERO3_FSDP,          /* FSDP2 / Megatron-FSDP (2024-25): per-layer bucketed gathers */
} cdse_zero3_style;

/* How FP8 training scales a tensor before casting it (Transformer Engine recipes). */
typedef enum cdse_fp8_scaling {
    CDSE_FP8_DELAYED = 0, /* per-tensor scale from the amax history of earlier iterations: the
                             cast kernel records the amax it sees (DelayedScaling) */
    CDSE_FP8_CURRENT,     /* per-tensor scale from the tensor's own amax (Float8CurrentScaling):
                             an amax pass precedes every cast that no producer kernel fuses */
} cdse_fp8_scaling;

/* What "selective" recomputation (cdse_strategy.recompute) checkpoints in the stack. */
typedef enum cdse_selective_policy {
    CDSE_SELECTIVE_ATTENTION_CORE = 0, /* the attention core (Korthikanti et al. 2022 Sec. 5) */
    CDSE_SELECTIVE_OP,                 /* torchtitan's per-op policy: every other matmul's output,
                                          the attention output, the rest recomputed */
} cdse_selective_policy;

/* How the stack's context parallelism overlaps its key/value exchange with attention. */
typedef enum cdse_cp_overlap {
    CDSE_CP_OVERLAP_LAYER = 0, /* the whole exchange against the layer's whole attention */
    CDSE_CP_OVERLAP_STEP,      /* each ring step's transfer against that step's attention block
                                  (causal load balancing: 1 / cp of the layer's attention), with
                                  the partial results merged in fp32 after every step */
} cdse_cp_overlap;

/* How the stack saves its checkpoints (goodput.h). */
typedef enum cdse_checkpoint_mode {
    CDSE_CKPT_SYNC = 0, /* training waits while every rank writes to the file system */
    CDSE_CKPT_ASYNC,    /* training waits for the copy to host memory; the write runs behind */
    CDSE_CKPT_MEMORY,   /* copy to host memory, replicated to a peer node's memory (Gemini,
                           SOSP'23); a restart reads it from the peer, not the file system */
    CDSE_CKPT_MODE_COUNT
} cdse_checkpoint_mode;

typedef struct cdse_stack {
    char name[CDSE_NAME_MAX];
    /* Achieved GEMM efficiency relative to the system's gemm_efficiency table, in (0, 1]. */
    double gemm_scale;
    bool fused_attention;       /* a fused (flash / cuDNN) attention kernel is available */
    bool selective_recompute;   /* attention-core recomputation is available */
    bool sequence_parallel;     /* its recipes use sequence parallelism with TP */
    bool distributed_optimizer; /* its recipes shard the optimizer over data parallelism */
    bool overlap_grad_reduce;   /* DP gradient reduction overlaps the backward pass */
    bool overlap_param_gather;  /* distributed optimizer's gather overlaps the next forward */
    bool overlap_tp_comm;       /* TP collectives pipelined with their GEMMs */
    bool overlap_p2p;           /* interleaved pipeline overlaps its sends with computation */
    /* The TP overlap runs as PyTorch's micro-pipelined async TP (torch._inductor's
     * micro_pipeline_tp pass onto torch.distributed._symmetric_memory's fused_all_gather_matmul
     * and fused_matmul_reduce_scatter): per-peer chunks over symmetric memory, each GEMM split into
     * one piece per peer, barriers and a partial-sum reduction on the critical path. false:
     * Transformer Engine's userbuffers form (every collective behind its pass's GEMMs). */
    bool async_tp;
    /* DeepSpeed's pipeline engine (TrainSchedule): steps of blocking sends and receives, each
     * pairing a stage with one neighbour, which run at the 1F1B rate with four transfers per
     * micro-batch on the critical path; the gradients are reduced after the last step. (Named for
     * adjacent stages alternating passes; they do not wait for each other's longer pass.) */
    bool pipeline_lockstep;
    /* Its recipes split the layers over pipeline stages counting the input embedding and the
     * output layer (with the loss) as one transformer layer each: the first and last stages hold
     * one layer fewer (DeepSpeed PipelineModule partition_method 'type:transformer|embedding'). */
    bool pipeline_split_embedding;
    /* With the interleaved schedule and overlap_grad_reduce, each model chunk's gradients are
     * reduced whole once the backward pass of the chunk's last micro-batch is over, at the same
     * moment on every stage (Megatron-Core's training loops: grad_sync_func); the first chunk's
     * reduction then follows the last backward pass, not bucket by bucket within it. */
    bool grad_reduce_per_chunk;
    /* Bytes per element of the data-parallel gradient buffer and its reduction: 4 (fp32) or
     * 2 (bf16/fp16); below 4 the optimizer keeps an fp32 copy of its gradient shard. */
    double grad_bytes;
    /* ZeRO-3 / FSDP. */
    int zero3_style;            /* cdse_zero3_style */
    double zero3_bucket_params; /* parameters per all-gather / reduce-scatter call */
    /* Memory the runtime holds besides tensors (per GPU). */
    double runtime_gib;        /* CUDA context, NCCL / cuBLAS / TE workspaces */
    double allocator_overhead; /* caching allocator: reserved over allocated, minus 1 */
    /* Fixed costs. */
    double iteration_fixed_s;  /* per iteration: data loading, logging, step bookkeeping */
    double launch_s_per_layer; /* host time to launch one layer's kernels (fwd; bwd twice) */
    /* HBM bytes per logit of the loss (forward and backward): Megatron's unfused fp32
     * cross-entropy or a fused kernel (CDSE_CROSS_ENTROPY_UNFUSED_BYTES when a file omits it). */
    double cross_entropy_bytes;
    /* HBM bytes per parameter and micro-batch that accumulating the gradients outside the
     * backward kernels moves (0 when a file omits it: the wgrad GEMM accumulates in place). */
    double grad_accum_bytes;
    int fp8_scaling; /* cdse_fp8_scaling of its FP8 recipes (CDSE_FP8_DELAYED when a file omits
                        it) */
    /* Under current scaling, the kernels its FP8 quantization launches per quantized tensor
     * that move no tensor data (Transformer Engine 2.7: the amax's zeroing and the scale's
     * computation), each costed at the launch floor (0 when a file omits it). */
    double fp8_scale_kernels;
    /* In FP8 training its recipes hold the transformer layers' weights only as FP8 tensors and
     * the distributed optimizer all-gathers them in FP8 (Transformer Engine fp8_model_init; NeMo
     * fp8_params, Megatron-Core --fp8-param-gather); false when a file omits it. */
    bool fp8_param_gather;
    int checkpoint; /* cdse_checkpoint_mode (CDSE_CKPT_SYNC when a file omits it) */
    /* FSDP2 (torch.distributed.fsdp.fully_shard) as torchtitan applies it with ZeRO-3: sharded
     * fp32 parameters serve as the optimizer's master weights, bf16 copies of one block gathered
     * (and the next prefetched) for compute; with pipeline parallelism the stage's parameters
     * and fp32 gradients stay unsharded over the micro-batches of an iteration (perf_memory.c,
     * perf_comm.c). false when a file omits it. */
    bool fsdp2;
    int selective_policy; /* cdse_selective_policy (attention core when a file omits it) */
    /* Its transformer blocks run compiled by torch.compile (torchtitan training.compile): under
     * the per-op selective policy AOTAutograd's min-cut partitioner saves, of the outputs the
     * policy marks MUST_SAVE, only those the backward graph reads (perf_memory.c
     * op_policy_layer_bytes); false when a file omits it (eager: every marked output kept). */
    bool torch_compile;
    int cp_overlap; /* cdse_cp_overlap (per layer when a file omits it) */
    /* Achieved fused-attention efficiency relative to the system's attention_efficiency, in
     * (0, 1] (1 when a file omits it). */
    double attention_scale;
    /* HBM traffic of the element-wise kernels relative to the fused kernels the evaluator costs
     * (1 when a file omits it; above 1 for eager PyTorch, which runs a norm or an activation as
     * several kernels). */
    double elementwise_scale;
    /* Bytes per logit that the loss holds at its peak, beside the layers' activations
     * (CDSE_LOGIT_BYTES when a file omits it). */
    double logit_bytes;
    /* The same with tensor parallelism, whose loss runs on vocabulary shards (a vocabulary-
     * parallel loss); logit_bytes when a file omits it. */
    double logit_bytes_tp;
} cdse_stack;

/* The fp32 logits of a micro-batch that the loss keeps for its backward pass (Korthikanti et al.
 * 2022 Sec. 4.3): 4 B per logit. */
#define CDSE_LOGIT_BYTES 4.0

/* Whether `stack` (NULL: the built-in one, which has them all) has what a configuration asks
 * for: fused attention, selective recomputation, sequence parallelism. Without it the
 * configuration is the status stack_unsupported (cdse_strategy_check). */
static inline bool cdse_stack_has(const cdse_stack *stack, bool flash_attention,
                                  bool selective_recompute, bool sequence_parallel)
{
    return stack == NULL || ((!flash_attention || stack->fused_attention) &&
                             (!selective_recompute || stack->selective_recompute) &&
                             (!sequence_parallel || stack->sequence_parallel));
}

/* Megatron's vocabulary-parallel cross-entropy as unfused PyTorch operations, each streaming the
 * [tokens, V/t] logits (megatron/core/tensor_parallel/cross_entropy.py; megatron/mpu/
 * cross_entropy.py of 2021 with the model's output.float()): forward: cast of the bf16 logits to
 * fp32 (read 2, write 4), max (read 4), subtract the max (read 4, write 4), exp (read 4,
 * write 4), sum (read 4), divide by the sum for the softmax kept for backward (read 4, write 4):
 * 38 B; backward: scale the softmax by the loss gradient in place (read 4, write 4) and the
 * cast's backward to bf16 (read 4, write 2): 14 B. Megatron-Core's default
 * (TransformerConfig.cross_entropy_loss_fusion = False). */
#define CDSE_CROSS_ENTROPY_UNFUSED_BYTES 52.0

/* The evaluator's stack when a strategy names none: current Megatron-Core (the values of
 * calibration/stacks/megatron-core-2025.cfg). */
extern const cdse_stack cdse_stack_default;

#endif
