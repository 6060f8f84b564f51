/* The evaluator: time and memory of one training iteration of a transformer on a cluster.
 *
 * Pure function: no I/O, no allocation, no MPI. The structure follows Narayanan et al. 2021
 * ("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21) and
 * Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
 * arXiv 2205.05198): per layer and micro-batch, GEMMs on the tensor cores at a size-dependent
 * efficiency, memory-bound element-wise kernels on HBM bandwidth, tensor-parallel collectives
 * on the network levels the group spans; stages of a 1F1B (optionally interleaved) pipeline;
 * data-parallel gradient reduction overlapped with the backward pass; the optimizer step. */
#include "perf_internal.h"

#define ALL_RECOMPUTE_MODULES                                                                      \
    (CDSE_RECOMPUTE_CORE_ATTN | CDSE_RECOMPUTE_MOE_ACT | CDSE_RECOMPUTE_LAYERNORM |                \
     CDSE_RECOMPUTE_MLA_UP_PROJ | CDSE_RECOMPUTE_MLP | CDSE_RECOMPUTE_MOE |                        \
     CDSE_RECOMPUTE_SHARED_EXPERTS)

/* Relative margins of the floor against rounding: its memory is a sum in another order than the
 * evaluator's, and its terms derived from exposed() >= OVERLAP_INTERFERENCE x the collective
 * hold with equality at worst. */
#define FLOOR_MEMORY_MARGIN (1.0 + 1e-9)
#define FLOOR_TIME_MARGIN   (1.0 - 1e-9)

/* Tokens on the busiest expert rank over the balanced share, for a router trained with an
 * auxiliary balancing loss when the model gives no moe_imbalance: Switch Transformer trains
 * with capacity factors 1.0-1.25 that drop few tokens (Fedus et al. 2021, Sec. 2.2 and Table 1),
 * i.e. expert loads rarely exceed ~1.2x the mean. */
#define MOE_DEFAULT_IMBALANCE 1.2

/* HBM traffic of the optimizer step per locally updated parameter, as Megatron-LM's mixed-
 * precision optimizer runs it with Apex multi-tensor kernels, each streaming its arrays once:
 * unscale + inf/nan check of the fp32 gradients (read 4, write 4), gradient norm (read 4),
 * clipping (read 4, write 4), Adam (read master, m, v, gradient 16; write master, m, v 12),
 * copy of the master weights to the bf16 model weights (read 4, write 2), zeroing the gradient
 * buffer (write 4): 58 B. */
#define OPTIMIZER_HBM_BYTES_PER_PARAM 58.0

void perf_fill_dims(const cdse_model *model, const cdse_strategy *st, dims *x)
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
    const cdse_stack *stack = st->stack != NULL ? st->stack : &cdse_stack_default;
    x->logit_bytes = st->tp > 1 ? stack->logit_bytes_tp : stack->logit_bytes;
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

/* perf_setup without the layer's communication plan (e->comm left unset): what the memory model
 * reads, which no communication figure enters. */
static inline void setup_env(const cdse_model *model, const cdse_system *system,
                             const cdse_strategy *st, env *e, dims *x)
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
    const cdse_gemm_shape *shape = &system->gemm_shape;
    e->gemm_sms = shape->sms > 0.0 && shape->efficiency > 0.0 ? shape->sms : 0.0;
    e->gemm_shape_eff =
        fp8 && shape->efficiency_fp8 > 0.0 ? shape->efficiency_fp8 : shape->efficiency;
    perf_fill_dims(model, st, x);
}

void perf_setup(const cdse_model *model, const cdse_system *system, const cdse_strategy *st, env *e,
                dims *x, cdse_comm_plan *plan)
{
    setup_env(model, system, st, e, x);
    plan->n = 0;
    perf_plan_layer_comm(system, st, x, plan, &e->comm);
}

/* The memory figures that follow from memory_model's and offload_model's: the runtime term, the
 * total, what the caching allocator reserves, and CDSE_ST_OOM when HBM or the tier is full. */
static inline void memory_totals(const cdse_system *system, const env *e, const dims *x,
                                 cdse_result *r)
{
    /* The stack's workspaces (NCCL, cuBLAS, Transformer Engine) and what its caching allocator
     * reserves beyond the activations it hands out (they are freed and reallocated every
     * micro-batch; weights, gradients and optimizer state live in preallocated buffers), and the
     * layer that recomputation rebuilds during its backward pass (recompute_buffer). */
    r->mem_runtime_gib = e->stk->runtime_gib + e->stk->allocator_overhead * r->mem_activations_gib +
                         perf_recompute_buffer(e, x) / CDSE_GIB;
    r->mem_total_gib = r->mem_weights_gib + r->mem_gradients_gib + r->mem_optimizer_gib +
                       r->mem_activations_gib + r->mem_other_gib + r->mem_fp8_cache_gib +
                       r->mem_runtime_gib;
    /* Reserved: the CUDA context and NCCL's buffers (allocated outside PyTorch) as they are, and
     * the tensors PyTorch's caching allocator hands out (every HBM term but those two) scaled by
     * its measured reserved-over-allocated ratio, which replaces the stack's allocator_overhead
     * share of the runtime term (the larger of the two is kept). */
    double tensors = r->mem_total_gib - r->mem_other_gib - e->stk->runtime_gib;
    r->mem_reserved_gib = r->mem_other_gib + e->stk->runtime_gib +
                          fmax(CDSE_ALLOCATOR_RESERVED_OVER_ALLOCATED *
                                   (tensors - e->stk->allocator_overhead * r->mem_activations_gib),
                               tensors);
    if (r->status == CDSE_ST_OK) {
        bool hbm_full = r->mem_total_gib > system->hbm_gib;
        bool tier_full =
            r->mem_offloaded_gib > 0.0 && r->mem_offloaded_gib > perf_tier_capacity_per_gpu(system);
        if (hbm_full || tier_full)
            r->status = CDSE_ST_OOM;
    }
}

/* With 1F1B all-to-all overlap (moe_overlap a2a) the forward pass of one micro-batch and the
 * backward pass of another run as one step of a layer: one host thread issues the two passes'
 * modules interleaved, attention forward, MLP backward, MLP forward, attention backward, with
 * the all-to-alls of each on a communication stream beside the other's computation (Megatron-Core
 * TransformerLayerSchedulePlan.run, megatron/core/models/common/model_chunk_schedule_plan.py at
 * NVIDIA/Megatron-LM d428de40c). The GPU then waits for the host over the pair, not pass by pass:
 * the all-to-alls, spread over both passes (perf_layer.c), are counted against the launches of
 * both (issue 31: counted pass by pass, a shorter computation could move exposed all-to-all time
 * from a pass the host paces to one the GPU paces, and a faster GPU trained slower). What is free
 * in the pair (its computation that hides no layer collective, and its wait) is spread over the
 * interleaved step, and the data-parallel streams of a pass (stage_time_of) hide behind a fixed
 * share of it: PAIR_FWD_SHARE for the forward, the rest for the backward, the passes' launch
 * times without recomputation (one and two launch_s_per_layer, host_idle). Fixed, so that a
 * change of one pass's computation moves no free time from one pass's streams to the other's
 * (issue 31: shared by the passes' own computation and the wait by launches, a shorter backward
 * gave the forward part of its free time, and the gradient reduction was exposed more). `idle`
 * then holds, per pass, the pass's share of the pair's free time less its own free computation
 * (one may be negative; the two add to the pair's wait). */
#define PAIR_FWD_SHARE (1.0 / 3.0)
static void host_idle_of(const env *e, const dims *x, const layer_step *step, host_idle *idle)
{
    double launch = e->stk->launch_s_per_layer;
    double launch_bwd = (2.0 + step->recompute_launch) * launch;
    /* The GPU's stream is busy for the computation and the collectives it waits for. */
    double gpu_fwd = step->fwd + step->fwd_comm;
    double gpu_bwd = step->bwd + step->recompute + step->tp + step->cp + step->ep - step->fwd_comm;
    if (x->experts > 0.0 && e->st->moe_overlap == CDSE_MOE_OVERLAP_A2A) {
        double wait = fmax(0.0, launch + launch_bwd - gpu_fwd - gpu_bwd);
        double free_fwd = fmax(0.0, step->fwd - step->hidden_fwd);
        double free_bwd = fmax(0.0, step->bwd + step->recompute - step->hidden_bwd);
        double pair = free_fwd + free_bwd + wait;
        idle->fwd = pair * PAIR_FWD_SHARE - free_fwd;
        idle->bwd = wait - idle->fwd;
        return;
    }
    idle->fwd = fmax(0.0, launch - gpu_fwd);
    idle->bwd = fmax(0.0, launch_bwd - gpu_bwd);
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
    head.gemm_shape_eff = e->sys->gemm_shape.efficiency;
    head.gemm_peak = e->attn_peak;
    head.operand_bytes = ACT_BYTES;
    double logits = perf_gemm_time(&head, x->tokens, x->vocab / x->t, x->h, &logits_flops);
    /* The loss's HBM traffic (the stack's cross_entropy_bytes per logit, forward and backward
     * passes together) is charged to the forward pass: a stage's pace is its sum. */
    double loss = x->tokens * x->vocab / x->t * e->stk->cross_entropy_bytes / e->hbm;
    *fwd = logits + loss;
    *bwd = 2.0 * logits;
}

/* Under the embedding-aware split the first and the last stage hold one layer fewer, the first
 * with the embedding, the last with the output layer; with more than two stages a middle stage
 * holds `n_layers` layers. The floor's slowest stage (cdse_time_floor): the last, or the middle
 * one when its layers of cost `layer` take longer. Leaves the stage's layers in `n_layers` and
 * its output-layer times (0 for a middle stage). */
static void split_slowest_stage(double p, double layer, double *n_layers, double *head_fwd,
                                double *head_bwd)
{
    if (p < 3.0 || (*n_layers - 1.0) * layer + *head_fwd + *head_bwd >= *n_layers * layer)
        *n_layers -= 1.0;
    else
        *head_fwd = *head_bwd = 0.0;
}

/* A pipeline stage that may set the pace: `n_layers` layers of the average layer and the output
 * layer's `head_fwd`, `head_bwd` (0 on a stage without it), and what the iteration takes on it. */
typedef struct stage_time {
    double n_layers, head_fwd, head_bwd;
    double per_mb;        /* a micro-batch's computation and exposed layer collectives */
    double run_per_mb;    /* and the GPU's waits for the host's launches */
    double bubble;        /* the pipeline's fill and drain */
    double pp_comm;       /* the boundary transfers */
    double dp_dense;      /* the data-parallel streams (perf_stage_dp_comm) */
    double dp_expert;     /* its expert part */
    double offload_share; /* the offload traffic's share of the passes */
    double fixed;         /* fixed_time */
    double total;         /* what differs between stages, summed */
} stage_time;

/* What the iteration takes on stage `s` (its layers and output layer set): its micro-batches,
 * bubble, boundary transfers, data-parallel streams of `params` with `offload` seconds of
 * offload traffic in the same windows (the windows are the stage's passes), and the GPU's waits
 * for the host. The plan receives the transfers' and the streams' collectives (the same for
 * every stage: the windows set what is exposed, not what is sent). */
static void stage_time_of(cdse_comm_plan *plan, const env *e, const dims *x, const layer_step *step,
                          const host_idle *idle, const stage_param_count *params, double offload,
                          stage_time *s)
{
    double n_layers = s->n_layers;
    s->per_mb = n_layers * step->fwd + s->head_fwd + (n_layers * step->bwd + s->head_bwd) +
                n_layers * step->recompute + n_layers * step->tp + n_layers * step->cp +
                n_layers * step->ep;
    /* What runs in a micro-batch's passes of the stage: the GPU's work and its waits for the
     * host's launches (host_idle_of). The data-parallel collectives hide behind it, but for the
     * computation that already hides the layers' own collectives (one window, shared). */
    double free_fwd = fmax(0.0, step->fwd - step->hidden_fwd) + idle->fwd;
    double free_bwd = fmax(0.0, step->bwd + step->recompute - step->hidden_bwd) + idle->bwd;
    double run_fwd = n_layers * free_fwd + s->head_fwd;
    double run_bwd = n_layers * free_bwd + s->head_bwd;
    s->run_per_mb = s->per_mb + n_layers * (idle->fwd + idle->bwd);

    /* 1F1B pipeline: m micro-batches plus a bubble of (p - 1) stage times, divided by v with
     * interleaving (Narayanan et al. 2021, Sec. 2.2). DeepSpeed's TrainSchedule (pipeline_lockstep)
     * runs at the same rate: each of its 2 (m + p - 1) steps pairs a stage with one neighbour
     * only (a forward step receives from and sends to the previous stage, a backward step the
     * next; deepspeed/runtime/pipe/schedule.py at commit 3293cf72a, January 2022), so the
     * blocking transfers order the stages as 1F1B's dependencies do and nobody waits for a
     * longer pass of the other neighbour (tests/unit/test_perf.c: test_pipeline_lockstep). */
    s->bubble = (x->p - 1.0) / x->v * s->run_per_mb;
    s->pp_comm = 0.0;
    if (x->p > 1.0) {
        /* Megatron scatters the boundary activation over the TP ranks before sending
         * (Narayanan et al. 2021 Sec. 4.1); each chunk step sends forward and backward. */
        double bytes = x->tokens * x->h * ACT_BYTES / x->t;
        double steps = x->m * x->v + x->p - 1.0;
        double calls =
            e->stk->pipeline_lockstep ? perf_deepspeed_transfers(x->m, x->p) : 2.0 * steps;
        double one = cdse_comm_plan_add(plan, e->sys, CDSE_GROUP_PP, CDSE_COLL_SENDRECV, (int)x->p,
                                        x->stride[CDSE_PLACE_PP], bytes, calls);
        if (x->v > 1.0 && e->stk->overlap_p2p) {
            /* The interleaved schedule overlaps each transfer with the next chunk's computation
             * (Megatron-Core overlap_p2p_comm, available with interleaving only), except where
             * nothing else is ready: the first micro-batch's forward pass crosses p v - 1 chunk
             * boundaries before the pipeline is full, and the last one's backward pass as many
             * while it drains, each waiting for its transfer (the schedule waits on the receive
             * before the chunk's pass; Narayanan et al. 2021 Sec. 2.2.2: interleaving multiplies
             * the communication by v). */
            double fill = x->p * x->v - 1.0;
            s->pp_comm =
                (steps - fill) * exposed(2.0 * one, s->run_per_mb / x->v) + fill * 2.0 * one;
        } else {
            s->pp_comm = calls * one;
        }
    }

    /* Data-parallel gradient reduction (stage_dp_comm). DeepSpeed's pipeline engine reduces the
     * gradients after the last step of its schedule (TrainSchedule appends ReduceTiedGrads,
     * ReduceGrads and OptimizerStep to the last step): nothing hides them. */
    bool flush_reduce = e->stk->pipeline_lockstep && x->p > 1.0;
    dp_windows windows = {run_fwd,
                          flush_reduce ? 0.0 : run_bwd,
                          x->m,
                          x->stage_layers,
                          x->gpt ? 4.0 : 5.0,
                          recomputed_share(e->st, x->stage_layers),
                          e->hbm,
                          x->p,
                          x->v,
                          flush_reduce ? 0.0 : x->stage_layers * free_bwd};
    /* The offload traffic overlaps the same passes as the data-parallel streams: one window. */
    s->dp_dense =
        perf_stage_dp_comm(plan, e, x, params, &windows, offload, &s->dp_expert, &s->offload_share);
    s->fixed = fixed_time(e, x, n_layers, idle);
    /* The offload traffic exposed beyond its serial part (perf_offload_model), which every stage
     * shares. */
    s->total = x->m * s->per_mb + s->bubble + s->pp_comm + (s->dp_dense + s->dp_expert) +
               exposed(offload, s->offload_share * x->m * s->run_per_mb) + s->fixed;
}

/* The stage that sets the pace: the last (L/p layers and the output layer). Under the
 * embedding-aware split the first and the last stage hold one layer fewer (the first with the
 * embedding, the last with the output layer), and with more than two stages the slowest is the
 * longer of the last and a middle stage of stage_layers, each with its own windows: the
 * data-parallel streams and the offload traffic hide behind the stage's own passes, and the GPU
 * waits for the host over its own layers (issue 31: chosen by its layers' time alone, the stage
 * whose passes leave less free could take the place of the other when a faster GPU shrank the
 * output layer, and the exposed streams grew more than the time saved). */
static void pace_stage(cdse_comm_plan *plan, const env *e, const dims *x, const layer_step *step,
                       const host_idle *idle, const stage_param_count *params, double offload,
                       double head_fwd, double head_bwd, stage_time *s)
{
    bool split = cdse_split_embedding(e->st);
    *s = (stage_time){.n_layers = split ? x->stage_layers - 1.0 : x->stage_layers,
                      .head_fwd = head_fwd,
                      .head_bwd = head_bwd};
    stage_time_of(plan, e, x, step, idle, params, offload, s);
    if (!split || x->p < 3.0)
        return;
    cdse_comm_plan full; /* keeps nothing: the plan holds the same collectives */
    full.n = CDSE_COMM_PLAN_MAX;
    stage_time middle = {.n_layers = x->stage_layers};
    stage_time_of(&full, e, x, step, idle, params, offload, &middle);
    if (middle.total > s->total)
        *s = middle;
}

/* The start of every evaluation: a zeroed result, the strategy checked and completed (st),
 * its dp and grad_accum; false when the status leaves nothing to evaluate. */
static inline bool result_begin(const cdse_model *model, const cdse_system *system,
                                const cdse_strategy *strategy, cdse_result *r, cdse_strategy *st)
{
    cdse_zero(r, sizeof *r);
    r->seq_imbalance = 1.0;
    *st = *strategy;
    r->status = cdse_strategy_check(model, system, st);
    r->dp = st->dp;
    r->grad_accum = st->grad_accum;
    return r->status == CDSE_ST_OK || r->status == CDSE_ST_DTYPE_UNSUPPORTED;
}

/* The throughput of an iteration of `time` seconds: tokens per second, model and hardware TFLOP/s
 * per GPU and their shares of the GPU's peak (`peak`, TFLOP/s). */
static inline void result_rates(const cdse_model *model, const cdse_strategy *st, const dims *x,
                                const layer_step *step, double time, double peak, cdse_result *r)
{
    double tokens = (double)st->global_batch * model->seq_len;
    double model_flops = cdse_model_flops_per_token(model) * tokens;
    /* Hardware FLOPs add what recomputation repeats: per layer and micro-batch on one GPU. */
    double extra = step->recompute_flops * model->layers * x->t * x->c * x->m * x->d;
    r->tokens_per_s = tokens / time;
    r->model_tflops_per_gpu = model_flops / time / st->gpus / 1e12;
    r->hardware_tflops_per_gpu = (model_flops + extra) / time / st->gpus / 1e12;
    r->mfu = r->model_tflops_per_gpu / peak;
    r->hfu = r->hardware_tflops_per_gpu / peak;
}

/* `position_len`: rows of the learned position table, which a histogram's mean-length
 * evaluation keeps at the model's seq_len. */
static void evaluate_one(const cdse_model *model, const cdse_system *system,
                         const cdse_strategy *strategy, int position_len, cdse_result *r,
                         cdse_comm_plan *plan, double exposed_s[CDSE_GROUP_COUNT])
{
    plan->n = 0;
    cdse_strategy st;
    if (!result_begin(model, system, strategy, r, &st))
        return;

    env e;
    dims x;
    perf_setup(model, system, &st, &e, &x, plan);
    x.s_positions = position_len;
    layer_step step;
    perf_average_layer_step(&e, &x, &step);
    double peak = e.peak / 1e12; /* TFLOP/s */

    double head_fwd, head_bwd;
    output_layer_times(&e, &x, &head_fwd, &head_bwd);

    /* A layer's time counts the GPU's waits for the host's launches (host_idle_of), and a stage's
     * waits count its layers only. */
    host_idle idle;
    host_idle_of(&e, &x, &step, &idle);

    stage_param_count params;
    double updated = 0.0;
    double act_per_mb = 0.0, in_flight = 0.0;
    double weights_most = 0.0;
    perf_memory_model(model, &e, &x, r, &params, &updated, &act_per_mb, &in_flight, &weights_most);
    double offload = perf_offload_overlapped_time(&e, &x, act_per_mb, weights_most);

    stage_time pace;
    pace_stage(plan, &e, &x, &step, &idle, &params, offload, head_fwd, head_bwd, &pace);
    double n_layers = pace.n_layers;
    double bubble = pace.bubble, pp_comm = pace.pp_comm, dp_expert = pace.dp_expert;
    double dp_dense = pace.dp_dense;
    double dp_comm = dp_dense + dp_expert;

    double optimizer = updated * OPTIMIZER_HBM_BYTES_PER_PARAM / e.hbm;
    /* Gradients accumulated by a pass of their own after every backward pass (the stack's
     * grad_accum_bytes per parameter of the stage's layers): the stage's per-micro-batch work grows
     * by it, so it is paid m times and, in the bubble, (p - 1) / v times. */
    double accum = (params.dense + params.experts) * e.stk->grad_accum_bytes / e.hbm;
    optimizer += x.m * accum;
    bubble += (x.p - 1.0) / x.v * accum;
    double compute_iter = x.m * pace.per_mb;
    perf_offload_model(&e, &x, pace.offload_share * x.m * pace.run_per_mb, offload, act_per_mb,
                       in_flight, r);

    r->t_fixed_s = pace.fixed;
    double time =
        compute_iter + bubble + pp_comm + dp_comm + optimizer + r->t_offload_s + r->t_fixed_s;
    r->time_per_iteration_s = time;
    r->t_forward_s = x.m * (n_layers * step.fwd + pace.head_fwd);
    r->t_backward_s = x.m * (n_layers * step.bwd + pace.head_bwd);
    r->t_recompute_s = x.m * (n_layers * step.recompute);
    r->t_tp_comm_s = x.m * (n_layers * step.tp);
    r->t_cp_comm_s = x.m * (n_layers * step.cp);
    r->t_ep_comm_s = x.m * (n_layers * step.ep);
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

    result_rates(model, &st, &x, &step, time, peak, r);
    memory_totals(system, &e, &x, r);
}

void cdse_evaluate_memory(const cdse_model *model, const cdse_system *system,
                          const cdse_strategy *strategy, cdse_result *r)
{
    cdse_strategy st;
    if (!result_begin(model, system, strategy, r, &st))
        return;
    /* evaluate_one's memory steps at the model's seq_len (evaluate keeps the memory of that
     * evaluation with a histogram too); offload_model's memory does not depend on its times. */
    env e;
    dims x;
    setup_env(model, system, &st, &e, &x);
    stage_param_count params;
    double updated = 0.0;
    double act_per_mb = 0.0, in_flight = 0.0;
    double weights_most = 0.0;
    perf_memory_model(model, &e, &x, r, &params, &updated, &act_per_mb, &in_flight, &weights_most);
    perf_offload_model(&e, &x, 0.0, 0.0, act_per_mb, in_flight, r);
    r->t_offload_s = 0.0;
    memory_totals(system, &e, &x, r);
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

/* The published ceiling (system mfu_ceiling of the run's data type): a configuration whose model
 * time would give a higher MFU than the best published run of its GPU generation reached takes
 * the time that MFU gives, the difference in t_ceiling_s. An iteration's time grows by the ratio
 * of its MFU to the ceiling; tokens/s, TFLOP/s and MFU follow. Only raises times, so lower
 * bounds (bound.h) stay bounds and every relation between configurations that held still holds
 * where both are below the ceiling. */
static void apply_ceiling(const cdse_system *system, const cdse_strategy *st, cdse_result *r)
{
    double ceiling = system->mfu_ceiling[st->precision];
    r->t_ceiling_s = 0.0;
    if (!(ceiling > 0.0) || !(r->mfu > ceiling))
        return;
    double peak = r->model_tflops_per_gpu / r->mfu;
    double tokens = r->tokens_per_s * r->time_per_iteration_s;
    double model_flops = r->model_tflops_per_gpu * 1e12 * st->gpus * r->time_per_iteration_s;
    double time = r->time_per_iteration_s * r->mfu / ceiling;
    r->t_ceiling_s = time - r->time_per_iteration_s;
    r->time_per_iteration_s = time;
    cdse_result_set_throughput(r, tokens, model_flops, st->gpus, peak);
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
    if (model->n_seq_bins < 1 || (r->status != CDSE_ST_OK && r->status != CDSE_ST_OOM)) {
        apply_ceiling(system, strategy, r);
        return;
    }
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
    apply_ceiling(system, strategy, r);
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
    double updated, weights_most;
    perf_memory_model(model, &mem_env, x, r, &params, &updated, act_per_mb, in_flight,
                      &weights_most);
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
    perf_offload_model(&mem_env, x, 0.0, 0.0, act_per_mb, in_flight, r); /* its memory only */
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
    double tier = sys->tier.attach != CDSE_TIER_NONE ? perf_tier_capacity_per_gpu(sys) : 0.0;
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
    perf_stage_params(model, x, &params);
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
    double dp = perf_stage_dp_comm(&scratch, e, x, &params, &open, 0.0, &dp_expert, &other_share) +
                dp_expert;
    double bw = perf_tier_bandwidth(e->sys);
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
        if ((st->offload & CDSE_OFFLOAD_ACTIVATIONS) && !(flags & CDSE_FLOOR_ANY_RECOMPUTE)) {
            env off_env = *e; /* full recomputation's layers keep the same with any modules */
            off_env.st = st;
            overlapped += 2.0 * x->m * perf_offloaded_bytes_per_mb(&off_env, x, act_per_mb) / bw;
        }
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
    perf_setup(model, system, &st, &e, &x, &plan);
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
    perf_average_layer_step(&e, &x, &step);
    if (x.t > 1.0 && e.stk->overlap_tp_comm) {
        cdse_strategy overlap = st;
        overlap.tp_comm_overlap = true;
        env e_overlap = e;
        e_overlap.st = &overlap;
        layer_step s;
        perf_average_layer_step(&e_overlap, &x, &s);
        step.tp = fmin(step.tp, s.tp);
    }
    double head_fwd, head_bwd;
    output_layer_times(&e, &x, &head_fwd, &head_bwd);
    double n_layers = x.stage_layers;
    /* With the split counting the output layer as a layer, the evaluator's iteration is the
     * longer of a middle stage's (n layers, p > 2) and the last stage's (n - 1 layers and the
     * output layer) whole times (pace_stage), no shorter than that of either; the floor counts
     * one of them, chosen on its layer cost, with terms no larger than that stage's. */
    if (cdse_split_embedding(&st))
        split_slowest_stage(x.p, step.fwd + step.bwd + step.recompute + step.tp + step.cp,
                            &n_layers, &head_fwd, &head_bwd);
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
