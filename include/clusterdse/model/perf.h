/* The evaluator: (model, system, strategy) -> result. Pure: no I/O, no allocation, no MPI. */
#ifndef CLUSTERDSE_PERF_H
#define CLUSTERDSE_PERF_H

#include "clusterdse/model/comm_plan.h"
#include "clusterdse/model/strategy.h"

/* Peak reserved over peak allocated memory of PyTorch's caching allocator in a Megatron-Core
 * training run, as Megatron-LM's own memory report prints it ("[Rank 0] (after 20 iterations)
 * memory (MB) | allocated: 3270.16 | max allocated: 5670.39 | reserved: 6406.00 | max reserved:
 * 6406.00", NVIDIA/Megatron-LM pull request #5662, 2026): 6406.00 / 5670.39 = 1.130. The same
 * order as GMLake's measurements of the allocator on A100-80GB over eight LLMs (Guo et al.,
 * ASPLOS'24: fragmentation cut by 15 % on average, up to 33 %, where the allocator's blocks are
 * cached but not allocated); the Megatron-LM report of 2020 (NVIDIA/Megatron-LM issue #60:
 * max allocated 12606 MB, max reserved 17482 MB, 1.39) predates expandable segments. Applied
 * to the tensors (weights, gradients, optimizer state, activations, FP8 copies), not to the
 * CUDA context or NCCL's buffers, which the allocator does not hold. */
#define CDSE_ALLOCATOR_RESERVED_OVER_ALLOCATED 1.13

typedef struct cdse_result {
    int status;     /* cdse_status */
    int dp;         /* derived data-parallel degree */
    int grad_accum; /* micro-batches per pipeline per iteration */
    double time_per_iteration_s;
    /* Breakdown of the iteration time (seconds, per iteration, as seen by the critical path). */
    double t_forward_s;
    double t_backward_s;
    double t_recompute_s;
    double t_tp_comm_s; /* exposed tensor-parallel communication */
    double t_pp_comm_s;
    double t_dp_comm_s;
    double t_ep_comm_s;
    double t_cp_comm_s;
    double t_bubble_s;
    double t_optimizer_s;
    double t_offload_s;
    double t_fixed_s; /* per-iteration host costs and kernel launches not hidden by the GPU */
    /* Added to reach the system's mfu_ceiling when the model's time would beat the best
     * published run of the GPU generation; 0 otherwise. */
    double t_ceiling_s;
    /* Throughput. */
    double tokens_per_s;
    double model_tflops_per_gpu;
    double hardware_tflops_per_gpu;
    double mfu;
    double hfu;
    /* Memory per GPU (GiB) of the pipeline stage that peaks (its state and its activations). */
    double mem_total_gib; /* in HBM */
    double mem_weights_gib;
    double mem_gradients_gib;
    double mem_optimizer_gib;
    double mem_activations_gib;
    double mem_other_gib;     /* reserved by the system (driver, CUDA context) */
    double mem_offloaded_gib; /* placed on the second tier */
    double mem_fp8_cache_gib; /* FP8 copies and transposes of the weights */
    double mem_runtime_gib;   /* the stack's workspaces and caching-allocator reserve */
    /* What the process reserves from the driver at its peak: mem_total_gib plus the caching
     * allocator's blocks cached but not allocated (CDSE_ALLOCATOR_RESERVED_OVER_ALLOCATED). */
    double mem_reserved_gib;
    /* Variable sequence lengths (model seq_len_histogram): slowest DP rank over the mean. */
    double seq_imbalance; /* 1 without a histogram */
    double t_imbalance_s; /* iteration time lost waiting for the slowest DP rank */
    /* Heterogeneous pools: how the pool was used. */
    int pool_split;       /* cdse_pool_split */
    double pool_share[4]; /* share of the work (batch or layers) done by each GPU type */
    /* The partition chosen, per GPU type (0 for a type that takes no part, and beyond the
     * pool's types): pp split, the layers of each of its pipeline stages; dp split, the
     * micro-batches each of its replicas processes per iteration. */
    int pool_layers[4];
    int pool_microbatches[4];
    int pool_tp[4]; /* the tensor-parallel degree of each type's stages or replicas */
    /* The HBM (GiB) of the GPU type whose memory figures the result holds (the one closest to
     * its capacity), for the headroom check of objective.memory_headroom; 0 when not a pool. */
    double pool_hbm_gib;
} cdse_result;

typedef enum cdse_pool_split {
    CDSE_POOL_NONE = 0, /* not a pool */
    CDSE_POOL_DP,       /* data-parallel replicas of one type each, batch shares by speed */
    CDSE_POOL_PP,       /* pipeline stages of one type each, layers per stage by speed */
} cdse_pool_split;

const char *cdse_pool_split_name(int split); /* "none", "dp", "pp" */
extern const cdse_names cdse_pool_split_enum;

/* Evaluates one configuration: runs cdse_strategy_check (dp, grad_accum are derived into the
 * result), then the time and memory model. A configuration that is structurally impossible
 * (not divisible, ...) gets only its status and zero figures; one that runs out of memory gets
 * its full figures and status CDSE_ST_OOM, so that users see by how much it misses. */
void cdse_evaluate(const cdse_model *model, const cdse_system *system,
                   const cdse_strategy *strategy, cdse_result *result);

/* The memory figures (mem_*) and the status cdse_evaluate gives `strategy`, bit for bit, without
 * its time model (every time and throughput figure 0): for callers that need only whether and how
 * much it fits (the pool's memory slope per layer, pool.c). */
void cdse_evaluate_memory(const cdse_model *model, const cdse_system *system,
                          const cdse_strategy *strategy, cdse_result *result);

/* cdse_evaluate, and the iteration's communication plan it costed: the collectives of the
 * slowest pipeline stage with their groups, bytes, calls per iteration and exposed shares (so
 * that sum over a group's ops of calls x time_s x exposed_share is the result's t_*_comm_s for
 * that group; DP and expert DP together make t_dp_comm_s). With a sequence-length histogram
 * the plan is that of the cost-equivalent length the time is computed at. A configuration
 * that is structurally impossible gets an empty plan. Pure, like cdse_evaluate. */
void cdse_evaluate_plan(const cdse_model *model, const cdse_system *system,
                        const cdse_strategy *strategy, cdse_result *result, cdse_comm_plan *plan);

/* Tokens and model FLOPs of one iteration of `global_batch` samples: seq_len tokens each, or the
 * samples of the model's sequence-length histogram (model FLOPs per token grow linearly with the
 * sample's length, Megatron-LM's counting). */
void cdse_iteration_work(const cdse_model *model, int global_batch, double *tokens,
                         double *model_flops);

/* Copies the memory figures (mem_*_gib) of `from` into `to`. */
void cdse_result_take_memory(cdse_result *to, const cdse_result *from);

/* Sets the throughput figures of `r` (tokens_per_s, model and hardware TFLOP/s per GPU, MFU,
 * HFU) for an iteration of r->time_per_iteration_s that processes `tokens` tokens and
 * `model_flops` model FLOPs on `gpus` GPUs of `peak_tflops` (average) peak, keeping the ratio of
 * hardware to model FLOPs that `r` had. */
void cdse_result_set_throughput(cdse_result *r, double tokens, double model_flops, int gpus,
                                double peak_tflops);

/* Forward and backward time (seconds) of one transformer layer for one micro-batch on one GPU,
 * as a per-layer measurement sees them: forward with its exposed TP/CP communication; backward
 * with recomputation and exposed communication. For validation against per-layer timings
 * (Korthikanti et al. 2022 Table 4). Returns the status of the configuration. */
int cdse_layer_times(const cdse_model *model, const cdse_system *system,
                     const cdse_strategy *strategy, double *forward_s, double *backward_s);

/* Part of weights + gradients + optimizer state (GiB per GPU) that belongs to the embedding and
 * output layer on the first stage (papers often count transformer layers only). */
double cdse_embedding_state_gib(const cdse_model *model, const cdse_strategy *strategy);

#endif
