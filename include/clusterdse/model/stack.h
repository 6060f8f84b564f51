/* Software-stack profile: what a training framework generation changes in the evaluator.
 * A plain struct (no libconfig); config/stack.c loads it from calibration/stacks/NAME.cfg. */
#ifndef CLUSTERDSE_STACK_H
#define CLUSTERDSE_STACK_H

#include "clusterdse/model/common.h"

typedef enum cdse_zero3_style {
    CDSE_ZERO3_DEEPSPEED = 0, /* DeepSpeed ZeRO-3 (2021-22): per-parameter-group fetches */
    CDSE_ZERO3_FSDP,          /* FSDP2 / Megatron-FSDP (2024-25): per-layer bucketed gathers */
} cdse_zero3_style;

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
} cdse_stack;

/* The evaluator's stack when a strategy names none: current Megatron-Core (the values of
 * calibration/stacks/megatron-core-2025.cfg). */
extern const cdse_stack cdse_stack_default;

#endif
