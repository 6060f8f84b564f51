/* The stack the evaluator assumes when a strategy names none. */
#include "clusterdse/model/stack.h"

/* Every overlap the evaluator models, kernels as the system's tables give them, no runtime
 * memory or fixed cost beyond the system's reserved_gib: the model as it was calibrated before
 * stack profiles existed (a100-80g-dgx on Megatron-LM 2022, h100-sxm-dgx on NeMo 24.07). */
const cdse_stack cdse_stack_neutral = {
    .name = "neutral",
    .gemm_scale = 1.0,
    .fused_attention = true,
    .selective_recompute = true,
    .sequence_parallel = true,
    .distributed_optimizer = true,
    .overlap_grad_reduce = true,
    .overlap_param_gather = true,
    .overlap_tp_comm = true,
    .overlap_p2p = true,
    .zero3_style = CDSE_ZERO3_FSDP,
    .zero3_grad_bytes = 4.0,
    .zero3_bucket_params = 40e6,
    .runtime_gib = 0.0,
    .allocator_overhead = 0.0,
    .iteration_fixed_s = 0.0,
    .launch_s_per_layer = 0.0,
};
