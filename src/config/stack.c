/* Software-stack profiles (calibration/stacks/NAME.cfg) on the key-table engine (keys.h): a flat
 * group of keys, each required, read into the model layer's plain cdse_stack. */
#include "clusterdse/config/stack.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

static const char *const zero3_names[] = {"deepspeed", "fsdp", NULL};
static const char *const fp8_scaling_names[] = {"delayed", "current", NULL}; /* cdse_fp8_scaling */
static const char *const selective_names[] = {"attention_core", "op",
                                              NULL};                   /* cdse_selective_policy */
static const char *const cp_overlap_names[] = {"layer", "step", NULL}; /* cdse_cp_overlap */
static const char *const checkpoint_names[] = {"sync", "async", "memory",
                                               NULL}; /* cdse_checkpoint_mode */

#define STACK_FLOAT(key, field, lo, open, hi, text)                                                \
    {                                                                                              \
        .name = key, .type = KEY_FLOAT, .offset = offsetof(cdse_stack, field), .min = lo,          \
        .min_open = open, .max = hi, .required = true, .def_text = "required", .help = text        \
    }
#define STACK_BOOL(key, field, text)                                                               \
    {                                                                                              \
        .name = key, .type = KEY_BOOL, .offset = offsetof(cdse_stack, field), .required = true,    \
        .def_text = "required", .help = text                                                       \
    }

static const key_spec stack_keys[] = {
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_stack, name),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "profile name"},
    STACK_FLOAT("gemm_scale", gemm_scale, 0.0, true, 1.0,
                "achieved GEMM efficiency relative to the system's gemm_efficiency tables"),
    STACK_BOOL("fused_attention", fused_attention,
               "a fused (flash / cuDNN) attention kernel is available"),
    STACK_BOOL("selective_recompute", selective_recompute,
               "attention-core recomputation is available"),
    STACK_BOOL("sequence_parallel", sequence_parallel,
               "its recipes use sequence parallelism with TP"),
    STACK_BOOL("distributed_optimizer", distributed_optimizer,
               "its recipes shard the optimizer over data parallelism"),
    STACK_BOOL("overlap_grad_reduce", overlap_grad_reduce,
               "the data-parallel gradient reduction overlaps the backward pass"),
    STACK_BOOL("overlap_param_gather", overlap_param_gather,
               "the distributed optimizer's parameter all-gather overlaps the next forward pass"),
    STACK_BOOL("overlap_tp_comm", overlap_tp_comm,
               "TP collectives pipelined with their GEMMs (with sequence parallelism)"),
    {.name = "async_tp",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_stack, async_tp),
     .has_default = true,
     .def = 0.0,
     .def_text = "false",
     .help = "the TP overlap runs as PyTorch's async TP (symmetric-memory per-peer chunks, each "
             "GEMM split per peer, barriers and a partial-sum reduction exposed)"},
    STACK_BOOL("overlap_p2p", overlap_p2p,
               "the interleaved pipeline overlaps its sends with computation"),
    {.name = "pipeline_lockstep",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_stack, pipeline_lockstep),
     .has_default = true,
     .def = 0.0,
     .def_text = "false",
     .help = "DeepSpeed's pipeline engine (TrainSchedule): blocking steps between neighbouring "
             "stages at the 1F1B rate, gradients reduced after the last step"},
    {.name = "pipeline_split_embedding",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_stack, pipeline_split_embedding),
     .has_default = true,
     .def = 0.0,
     .def_text = "false",
     .help = "the pipeline split counts the input embedding and the output layer as one layer "
             "each (the first and last stages hold one layer fewer)"},
    {.name = "grad_reduce_per_chunk",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_stack, grad_reduce_per_chunk),
     .has_default = true,
     .def = 0.0,
     .def_text = "false",
     .help = "with the interleaved schedule, each model chunk's gradients are reduced whole after "
             "its last micro-batch's backward pass (the first chunk's after the last one)"},
    STACK_FLOAT("grad_bytes", grad_bytes, 2.0, false, 4.0,
                "bytes per element of the gradient buffer and its reduction (2: bf16/fp16, 4: "
                "fp32)"),
    {.name = "zero3_style",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_stack, zero3_style),
     .choices = zero3_names,
     .required = true,
     .def_text = "required",
     .help = "ZeRO-3 as DeepSpeed 2021-22 ran it, or as FSDP2 / Megatron-FSDP"},
    STACK_FLOAT("zero3_bucket_params", zero3_bucket_params, 1e5, false, 1e10,
                "parameters per FSDP all-gather / reduce-scatter call"),
    STACK_FLOAT("runtime_gib", runtime_gib, 0.0, false, 32.0,
                "GiB per GPU of NCCL, cuBLAS and Transformer Engine workspaces"),
    STACK_FLOAT("allocator_overhead", allocator_overhead, 0.0, false, 1.0,
                "caching allocator: reserved over allocated activation bytes, minus 1"),
    STACK_FLOAT("iteration_fixed_s", iteration_fixed_s, 0.0, false, 60.0,
                "seconds per iteration outside the model: data loading, logging"),
    STACK_FLOAT("launch_s_per_layer", launch_s_per_layer, 0.0, false, 0.01,
                "host seconds to launch one layer's forward kernels (backward: twice, plus the "
                "recomputed kernels)"),
    FLOAT_KEY(cdse_stack, "cross_entropy_bytes", cross_entropy_bytes, 1.0, false, 128.0, false,
              CDSE_CROSS_ENTROPY_UNFUSED_BYTES, "52 (unfused)",
              "HBM bytes per logit of the loss, forward and backward"),
    FLOAT_KEY(cdse_stack, "grad_accum_bytes", grad_accum_bytes, 0.0, false, 64.0, false, 0.0, "0",
              "HBM bytes per parameter and micro-batch to accumulate gradients outside the "
              "backward kernels"),
    {.name = "fp8_scaling",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_stack, fp8_scaling),
     .choices = fp8_scaling_names,
     .has_default = true,
     .def = CDSE_FP8_DELAYED,
     .def_text = "\"delayed\"",
     .help = "FP8 scaling of its recipes: delayed (amax history) or current (an amax pass "
             "before each unfused cast)"},
    FLOAT_KEY(cdse_stack, "fp8_scale_kernels", fp8_scale_kernels, 0.0, false, 16.0, false, 0.0, "0",
              "with fp8_scaling \"current\": kernels per quantized GEMM input or output "
              "gradient that move no tensor data (amax zeroing, scale computation), each a "
              "kernel launch of GPU time; every local expert's tensors are quantized separately"),
    {.name = "fp8_param_gather",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_stack, fp8_param_gather),
     .has_default = true,
     .def = 0.0,
     .def_text = "false",
     .help = "in FP8 training the layers' weights are held only as FP8 (1 B, plus the FP8 "
             "transpose, none with systems[].fp8_non_tn_gemm) and the distributed optimizer "
             "all-gathers them in FP8"},
    {.name = "checkpoint",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_stack, checkpoint),
     .choices = checkpoint_names,
     .has_default = true,
     .def = CDSE_CKPT_SYNC,
     .def_text = "\"sync\"",
     .help = "how its checkpoints are saved (goodput): sync (training waits for the file "
             "system), async (waits for the copy to host memory), memory (host memory "
             "replicated to a peer node, read back from it on a restart)"},
    {.name = "fsdp2",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_stack, fsdp2),
     .has_default = true,
     .def = 0.0,
     .def_text = "false",
     .help = "ZeRO-3 as FSDP2 (fully_shard): fp32 sharded parameters as master weights, bf16 "
             "blocks gathered and prefetched; with pipeline parallelism parameters and fp32 "
             "gradients unsharded for the iteration"},
    {.name = "selective_policy",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_stack, selective_policy),
     .choices = selective_names,
     .has_default = true,
     .def = CDSE_SELECTIVE_ATTENTION_CORE,
     .def_text = "\"attention_core\"",
     .help = "what selective recomputation keeps: attention_core (recomputes the attention "
             "core) or op (torchtitan: every other matmul's output and the attention output)"},
    {.name = "torch_compile",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_stack, torch_compile),
     .has_default = true,
     .def = 0.0,
     .def_text = "false",
     .help = "transformer blocks compiled by torch.compile: with selective_policy \"op\" the "
             "partitioner keeps only the saved outputs the backward pass reads (w2's is not)"},
    {.name = "cp_overlap",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_stack, cp_overlap),
     .choices = cp_overlap_names,
     .has_default = true,
     .def = CDSE_CP_OVERLAP_LAYER,
     .def_text = "\"layer\"",
     .help = "context parallelism's key/value exchange against attention: layer (whole "
             "exchange vs whole attention) or step (each ring step vs its block, fp32 merges)"},
    FLOAT_KEY(cdse_stack, "attention_scale", attention_scale, 0.0, true, 1.0, false, 1.0, "1",
              "achieved fused-attention efficiency relative to the system's "
              "attention_efficiency"),
    FLOAT_KEY(cdse_stack, "elementwise_scale", elementwise_scale, 1.0, false, 16.0, false, 1.0, "1",
              "HBM traffic of element-wise kernels relative to fused ones (eager > 1)"),
    FLOAT_KEY(cdse_stack, "logit_bytes", logit_bytes, 1.0, false, 32.0, false, CDSE_LOGIT_BYTES,
              "4", "bytes per logit the loss holds at its peak beside the activations"),
    FLOAT_KEY(cdse_stack, "logit_bytes_tp", logit_bytes_tp, 0.0, false, 32.0, false, 0.0,
              "logit_bytes",
              "the same with tensor parallelism (a vocabulary-parallel loss); 0: as "
              "logit_bytes"),
};
static const key_table stack_table = {"stack profile", stack_keys,
                                      (int)(sizeof stack_keys / sizeof stack_keys[0])};

int cdse_stack_load_file(const char *path, cdse_stack *stack, cdse_diag *diag)
{
    memset(stack, 0, sizeof *stack);
    char *text;
    int rc = cdse__read_file_diag(path, "stack profile", &text, diag);
    if (rc != 0)
        return rc;
    parse_ctx ctx = {.file = path, .job_path = path, .diag = diag};
    config_t cfg;
    rc = cdse__read_config(&ctx, text, &cfg);
    free(text);
    if (rc != 0)
        return rc;
    rc = cdse__parse_group(&ctx, config_root_setting(&cfg), &stack_table, stack, true);
    config_destroy(&cfg);
    if (stack->logit_bytes_tp <= 0.0) /* omitted (or 0): as without tensor parallelism */
        stack->logit_bytes_tp = stack->logit_bytes;
    return rc;
}

void cdse_stack_print_keys(FILE *out)
{
    cdse__print_key_table(out, &stack_table);
}
