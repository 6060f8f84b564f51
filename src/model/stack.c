/* The stack the evaluator assumes when a strategy names none. */
#include "clusterdse/model/stack.h"

/* Current Megatron-Core: a copy of calibration/stacks/megatron-core-2025.cfg, where each value
 * has its source (tests/unit/test_stack.c checks that the two agree). */
const cdse_stack cdse_stack_default = {
    .name = "megatron-core-2025",
    .gemm_scale = 1.0,
    .fused_attention = true,
    .selective_recompute = true,
    .sequence_parallel = true,
    .distributed_optimizer = true,
    .overlap_grad_reduce = true,
    .overlap_param_gather = true,
    .overlap_tp_comm = true,
    .overlap_p2p = true,
    .grad_reduce_per_chunk = true,
    .grad_bytes = 2.0,
    .zero3_style = CDSE_ZERO3_FSDP,
    .zero3_bucket_params = 4e7,
    .runtime_gib = 1.5,
    .allocator_overhead = 0.05,
    .iteration_fixed_s = 0.0,
    .launch_s_per_layer = 4e-4,
    .cross_entropy_bytes = 28.0,
    .grad_accum_bytes = 0.0, /* gradient_accumulation_fusion: the wgrad GEMM adds into main_grad */
    .fp8_scaling = CDSE_FP8_CURRENT,
    .fp8_scale_kernels = 2.0,
    .fp8_param_gather = true,
    .attention_scale = 1.0,
    .elementwise_scale = 1.0,
    .logit_bytes = CDSE_LOGIT_BYTES,
    .logit_bytes_tp = CDSE_LOGIT_BYTES,
};
