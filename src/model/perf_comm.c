/* The evaluator's communication: the per-layer collectives of TP, CP, EP and expert TP put into
 * the communication plan, and the data-parallel gradient reduction, ZeRO-3 parameter gathers
 * and DeepSpeed's host-side transfers, with the compute windows they hide behind. */
#include "perf_internal.h"

/* Megatron-Core's DDP buckets gradients, by default max(40M, 1M x the data-parallel size)
 * parameters per bucket ("sane default based on dp_group size": larger groups are latency-bound;
 * megatron/core/distributed/distributed_data_parallel.py, lines 51-54 at r0.8 commit 937571cfd4,
 * line 134 at d98e8a64d): the last bucket's reduction cannot overlap the backward pass. The size
 * is the plain data-parallel group's, without the context-parallel ranks
 * (get_data_parallel_world_size() at r0.8, process_group_dict['dp_group'] at d98e8a64d), and the
 * one size serves the dense and the expert buffers alike. */
#define DP_BUCKET_PARAMS          40e6
#define DP_BUCKET_PARAMS_PER_RANK 1e6

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
void perf_plan_layer_comm(const cdse_system *sys, const cdse_strategy *st, const dims *x,
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

/* FSDP2 under a pipeline schedule (the stack's fsdp2, p > 1): parameters stay gathered from the
 * first micro-batch's forward pass to the last one's backward pass and gradients are
 * reduce-scattered once, after the last micro-batch (torchtitan apply_fsdp: reshard_after_forward
 * False with pipeline parallelism; torch/distributed/pipelining/stage.py: no resharding and no
 * gradient sync before the last backward; perf_memory.c fsdp2_state_memory). One all-gather per
 * block, prefetched during the first micro-batch's forward pass, and one reduce-scatter per block
 * during the last one's backward pass, both per iteration. */
static double fsdp2_pipeline_time(cdse_comm_plan *plan, const cdse_system *system, int comm_group,
                                  int group, int stride, double params, double weight_bytes,
                                  double grad_bytes, const dp_windows *w)
{
    double calls = w->layers;
    double ag = calls * cdse_comm_plan_add(plan, system, comm_group, CDSE_COLL_ALLGATHER, group,
                                           stride, weight_bytes / calls, calls);
    double rs = calls * cdse_comm_plan_add(plan, system, comm_group, CDSE_COLL_REDUCE_SCATTER,
                                           group, stride, params * grad_bytes / calls, calls);
    return prefetched(ag, w->fwd, w->layers) + prefetched(rs, w->bwd, w->layers);
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
    if (stk->fsdp2 && w->p > 1.0 && !deepspeed)
        return fsdp2_pipeline_time(plan, system, comm_group, group, stride, params, weight_bytes,
                                   stk->grad_bytes, w);
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
double perf_stage_dp_comm(cdse_comm_plan *plan, const env *e, const dims *x,
                          const stage_param_count *params, const dp_windows *w, double other,
                          double *experts, double *other_share)
{
    int dp_stride = x->stride[CDSE_PLACE_DP], cp_stride = x->stride[CDSE_PLACE_CP];
    int dense_stride = x->c > 1.0 && cp_stride < dp_stride ? cp_stride : dp_stride;
    double layer_bytes = perf_layer_weight_bytes(e);
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
double perf_deepspeed_transfers(double m, double p)
{
    if (p < 3.0)
        return 2.0 * m;
    return fmax(4.0 * m + 2.0 * p - 8.0, 2.0 * (p - 1.0));
}
