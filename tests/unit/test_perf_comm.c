/* The evaluator (src/model/perf*.c) against hand calculations: pipeline bubble, pipeline and
 * context-parallel transfers, data-parallel gradient communication. Split from test_perf.c (issue
 * 28); the shared fixtures and the list of sources are in perf_fixtures.h. */
#include "perf_fixtures.h"

/* ---- Pipeline bubble, Narayanan et al. 2021 Sec. 2.2 ------------------------------------ */

/* The 1F1B bubble is (p - 1) times the time of one micro-batch on a stage; interleaving with v
 * chunks divides it by v. The per-micro-batch stage time is the iteration's compute and exposed
 * TP/CP communication divided by m, so t_bubble = (p - 1) / (v m) (t_forward + t_backward +
 * t_recompute + t_tp + t_cp), i.e. a bubble fraction (p - 1) / (v m). With negligible network
 * cost and d = 1 the iteration is that compute times (1 + (p - 1)/(v m)) plus the optimizer. */
static void bubble_case(int tp, int pp, int vpp, int m_batches, int recompute)
{
    cdse_model m = gpt(8);
    cdse_system s = fast_sys();
    cdse_strategy st = strat(tp * pp, tp, pp, 2, 2 * m_batches);
    st.vpp = vpp;
    st.recompute = recompute;
    st.sequence_parallel = tp > 1;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, m_batches);
    double p = pp, v = vpp, mb = m_batches;
    double work = r.t_forward_s + r.t_backward_s + r.t_recompute_s + r.t_tp_comm_s + r.t_cp_comm_s +
                  r.t_ep_comm_s;
    assert_true(work > 0.0);
    assert_rel(r.t_bubble_s, (p - 1.0) / (v * mb) * work, 1e-12);
    assert_true(r.t_dp_comm_s == 0.0);
    assert_true(r.t_pp_comm_s < 1e-6 * r.time_per_iteration_s);
    assert_rel(r.time_per_iteration_s,
               work * (1.0 + (p - 1.0) / (v * mb)) + r.t_optimizer_s + r.t_pp_comm_s, 1e-12);
}

static void test_bubble_1f1b(void **state)
{
    (void)state;
    bubble_case(1, 4, 1, 8, CDSE_RECOMPUTE_NONE);  /* bubble 3/8 */
    bubble_case(1, 2, 1, 3, CDSE_RECOMPUTE_FULL);  /* bubble 1/3 */
    bubble_case(2, 4, 1, 16, CDSE_RECOMPUTE_NONE); /* with TP + SP traffic */
}

static void test_bubble_interleaved(void **state)
{
    (void)state;
    bubble_case(1, 4, 2, 8, CDSE_RECOMPUTE_NONE); /* bubble 3/16 */
    bubble_case(2, 2, 4, 4, CDSE_RECOMPUTE_SELECTIVE);
}

/* Pipeline send/recv, 1F1B, p = 4, t = 1, m = 8: the boundary activation b s h 2 / t bytes
 * = 2097152 B crosses NVLink (stages 1 rank apart) forward and backward at each of the
 * m + p - 1 = 11 steps of the critical path: 11 * 2 * (2097152 / 240e9 + 2e-6) s. */
static void test_pipeline_p2p(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double one = S * B * H * 2.0 / (300e9 * 0.8) + 2e-6;
    assert_rel(r.t_pp_comm_s, 11.0 * 2.0 * one, 1e-12);
}

/* A pipeline that spans nodes: t = 4, p = 4 on 16 GPUs, 8 per node. Stage k holds ranks 4k..4k+3,
 * so stages 0-1 and 2-3 share a node but the boundary between stages 1 and 2 (ranks 4-7 to 8-11)
 * crosses InfiniBand. In 1F1B every step waits for every boundary's transfer (Narayanan et al.
 * 2021 Sec. 2.2: the stages advance in lock-step), so each of the m + p - 1 = 11 steps costs the
 * inter-node transfer of b s h 2 / t = 524288 B, both directions:
 * 11 * 2 * (524288 / 22.5e9 + 5e-6) s. */
static void test_pipeline_p2p_across_nodes(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 4, 4, 2, 16);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 8);
    double one = S * B * H * 2.0 / 4.0 / (25e9 * 0.9) + 5e-6;
    assert_rel(r.t_pp_comm_s, 11.0 * 2.0 * one, 1e-12);
}

/* Context parallelism on a ring that spans nodes: t = 2, cp = 8 on 16 GPUs. The CP ranks of one
 * TP rank are 0, 2, ..., 14: the hop 6 -> 8 (and 14 -> 0) crosses InfiniBand, and every ring step
 * waits for it (ring attention, Liu et al. 2023: each step needs the previous rank's chunk).
 * Per layer, b = 2, s_local = 512 / 8 = 64, heads per TP rank 8, kv heads per TP rank 8:
 *   chunk = b s_local 2 kv_local d_head 2 B = 2*64*2*8*64*2 = 262144 B;
 *   step = 262144 / 22.5e9 + 5e-6 s; forward (cp - 1) = 7 steps, backward 14 steps.
 * They overlap the attention core (perf*.c; OVERLAP_INTERFERENCE 0.25 of the hidden time shows):
 *   scores b (a/t) s_local s = 2*8*64*512 = 524288;
 *   Q K^T batch 16 of 64 x 512 x 64: 67108864 FLOP / 5e13 = 1.342e-6 s, bytes
 *   16 (64*64 + 64*512 + 64*512) 2 = 2228224 -> 2.228e-6 s at 1e12 B/s: memory-bound;
 *   A V batch 16 of 64 x 64 x 512: the same figures;
 *   attention forward 2 * 2228224 / 1e12 + 524288 * 9 / 1e12 = 9.175040e-6 s;
 *   backward 4 * 2228224 / 1e12 + 524288 * 11 / 1e12 = 1.4680064e-5 s.
 * Both windows are shorter than the exchanges, so per layer
 *   (7 step - attn_fwd + 0.25 attn_fwd) + (14 step - attn_bwd + 0.25 attn_bwd), times 2 layers. */
static void test_cp_ring_across_nodes(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 2, 1, 2, 2);
    st.cp = 8;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 1);
    double hbm = 1e12, gemm_bytes = 2228224.0, scores = 524288.0;
    assert_true(67108864.0 / 5e13 < gemm_bytes / hbm); /* memory-bound, as worked out above */
    double attn_fwd = 2.0 * gemm_bytes / hbm + scores * 9.0 / hbm;
    double attn_bwd = 4.0 * gemm_bytes / hbm + scores * 11.0 / hbm;
    double step = 262144.0 / (25e9 * 0.9) + 5e-6;
    assert_true(7.0 * step > attn_fwd && 14.0 * step > attn_bwd);
    double per_layer = (7.0 * step - 0.75 * attn_fwd) + (14.0 * step - 0.75 * attn_bwd);
    assert_rel(r.t_cp_comm_s, 2.0 * per_layer, 1e-12);
}

/* The same ring inside one node (t = 1, cp = 8 on 8 GPUs: ranks 0..7) uses NVLink: step =
 * chunk / 240e9 + 2e-6 with chunk = 2*64*2*16*64*2 = 524288 B (16 kv heads per rank at t = 1).
 * Attention per layer: batch 32, figures double those above: forward 2 * 4456448 / 1e12 +
 * 1048576 * 9 / 1e12, backward 4 * 4456448 / 1e12 + 1048576 * 11 / 1e12. */
static void test_cp_ring_in_node(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 1, 2, 2);
    st.cp = 8;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double hbm = 1e12;
    double attn_fwd = 2.0 * 4456448.0 / hbm + 1048576.0 * 9.0 / hbm;
    double attn_bwd = 4.0 * 4456448.0 / hbm + 1048576.0 * 11.0 / hbm;
    double step = 524288.0 / (300e9 * 0.8) + 2e-6;
    assert_true(7.0 * step > attn_fwd && 14.0 * step > attn_bwd);
    double per_layer = (7.0 * step - 0.75 * attn_fwd) + (14.0 * step - 0.75 * attn_bwd);
    assert_rel(r.t_cp_comm_s, 2.0 * per_layer, 1e-12);
}

/* ---- Data-parallel communication ------------------------------------------------------ */

/* t = 8, p = 2, d = 2 on 32 GPUs: the two DP ranks are 8 apart, on different nodes ([1, 2]).
 * First stage per GPU (L = 4, two layers): 12 h^2/8 + 7h/8 + 6h = 1572864 + 896 + 6144 = 1579904
 * per layer, 3159808 for two, + V h / 8 + s h = 524288 + 524288: 4208384 parameters.
 * Gradients in fp32: G = 16833536 B; weights in bf16: W = 8416768 B. The stage is smaller than
 * one 40M-parameter bucket (perf*.c DP_BUCKET_PARAMS, Megatron-Core DDP default), so its one bucket
 * starts when the backward pass ends and the whole reduction is exposed:
 *   ZeRO 0: all-reduce over IB, n = 2: 2 (1/2) G / 22.5e9 + 2 * 5e-6;
 *   ZeRO 1: reduce-scatter of G and all-gather of W: (1/2) G / 22.5e9 + 5e-6 +
 *           (1/2) W / 22.5e9 + 5e-6. */
#define DP_STAGE_PARAMS 4208384.0

static void test_dp_comm_one_bucket(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 2);
    assert_int_equal(r.grad_accum, 4);
    assert_rel(r.mem_weights_gib, DP_STAGE_PARAMS * 2.0 / GIB, 1e-12);
    double bw = 25e9 * 0.9, lat = 5e-6;
    double G = DP_STAGE_PARAMS * 4.0, W = DP_STAGE_PARAMS * 2.0;
    assert_rel(r.t_dp_comm_s, 2.0 * 0.5 * G / bw + 2.0 * lat, 1e-12);
    st.zero = 1;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_dp_comm_s, 0.5 * G / bw + lat + 0.5 * W / bw + lat, 1e-12);
}

/* The backward computation of one layer and micro-batch that hides the layer's TP all-reduces
 * (TP without sequence parallelism, m micro-batches of 2 layers): the backward's two all-reduces
 * overlap the column-parallel GEMMs, so a layer's TP time is 2 ar forward + exposed(2 ar, col)
 * backward = 4 ar - 0.75 hidden, hidden = min(2 ar, col) (perf*.c exposed): hidden = (4 ar -
 * t_tp per layer) / 0.75, with ar the one all-reduce of the plan. That time hides nothing else
 * (issue 31: one window shared by the streams that use it). */
static double tp_hidden_bwd(const cdse_model *m, const cdse_system *s, const cdse_strategy *st,
                            double micro_batches)
{
    cdse_comm_plan plan;
    cdse_result r;
    cdse_evaluate_plan(m, s, st, &r, &plan);
    double ar = 0.0;
    for (int i = 0; i < plan.n; i++)
        if (plan.op[i].group == CDSE_GROUP_TP && plan.op[i].coll == CDSE_COLL_ALLREDUCE)
            ar = plan.op[i].time_s;
    assert_true(ar > 0.0);
    return (4.0 * ar - r.t_tp_comm_s / (micro_batches * 2.0)) / 0.75;
}

/* ZeRO-3, FSDP style (the default stack): per micro-batch the weights are all-gathered for the
 * forward and again for the backward pass and the gradients reduce-scattered (Rajbhandari et al.
 * 2020 Sec. 5.3), one call per layer here (the stage's 2 layers hold far fewer than the 4e7
 * parameters of a bucket), each paying the 5 us latency of the 2-rank IB group; a layer's
 * gather is prefetched during the previous layer's computation, so with L = 2 layers half of each
 * pass's communication c is exposed and the other half overlaps half the window w:
 * c / 2 + exposed(c / 2, w / 2). Forward: c = ag, w = forward of one micro-batch; backward:
 * c = ag + rs, w = backward of one micro-batch less what hides the TP all-reduces (tp_hidden_bwd,
 * 2 layers); times m = 4 micro-batches. */
static void test_dp_comm_zero3(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    st.zero = 3;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double lat = 5e-6, bw = 25e9 * 0.9;
    double G = DP_STAGE_PARAMS * 4.0, W = DP_STAGE_PARAMS * 2.0;
    double ag = 0.5 * W / bw + 2.0 * lat, rs = 0.5 * G / bw + 2.0 * lat;
    double hidden = tp_hidden_bwd(&m, &s, &st, 4.0);
    assert_true(hidden > 0.0);
    double fwd = r.t_forward_s / 4.0, bwd = r.t_backward_s / 4.0 - 2.0 * hidden;
    double per_mb = ag / 2.0 + exposed_hand(ag / 2.0, fwd / 2.0) + (ag + rs) / 2.0 +
                    exposed_hand((ag + rs) / 2.0, bwd / 2.0);
    assert_rel(r.t_dp_comm_s, 4.0 * per_mb, 1e-12);

    s.level[1].bandwidth_gbs = 400.0; /* the collectives now hide behind the layers */
    eval_ok(&m, &s, &st, &r);
    bw = 400e9 * 0.9;
    ag = 0.5 * W / bw + 2.0 * lat;
    rs = 0.5 * G / bw + 2.0 * lat;
    assert_true(ag / 2.0 < r.t_forward_s / 8.0);
    per_mb = ag / 2.0 + 0.25 * ag / 2.0 + (ag + rs) / 2.0 + 0.25 * (ag + rs) / 2.0;
    assert_rel(r.t_dp_comm_s, 4.0 * per_mb, 1e-12);
}

/* prefetched(c, w, L) = c / L + exposed(c - c / L, w - w / L) (perf*.c: each layer's transfer
 * overlaps the previous layer's computation, the first one's nothing). */
static double prefetched_hand(double c, double w, double layers)
{
    return c / layers + exposed_hand(c - c / layers, w - w / layers);
}

/* Issue 31 M2: MoE with ZeRO-3 (FSDP) has two data-parallel streams, the dense parameters over
 * the dp group and the expert parameters over the expert data-parallel group, and both overlap
 * the same passes. They share each window in proportion to their communication time
 * (s = C_d / (C_d + C_e), C = m (2 ag + rs) per stream with nothing hidden), so that together
 * they hide behind it once: per micro-batch and stream, prefetched(ag, s w_fwd, L) +
 * prefetched(ag + rs, s w_bwd, L), the calls' times (one call per layer: few parameters) from the
 * plan. Before, each stream hid behind the whole window (a window shorter by d exposed up to
 * 1.5 d: a faster GPU trained slower). 2 MoE layers of 8 experts (top-2, expert FFN 1024), 8 GPUs
 * on one node whose links run at 2 GB/s, dp 8, ep 2 (edp 4), no TP: the windows are the passes
 * (t_forward_s, t_backward_s over m = 4) less what hides the EP all-to-alls (none: no overlap of
 * them). */
static void test_dp_comm_moe_shared_window(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    m.experts = 8;
    m.top_k = 2;
    m.moe_ffn = 1024;
    m.moe_every = 1;
    m.moe_imbalance = 1.0;
    cdse_model_fill_defaults(&m);
    cdse_system s = sys();
    s.level[0].bandwidth_gbs = 2.0; /* slow enough that the streams need more than their shares */
    cdse_strategy st = strat(8, 1, 1, 1, 32);
    st.ep = 2;
    st.zero = 3;
    cdse_result r;
    cdse_comm_plan plan;
    cdse_evaluate_plan(&m, &s, &st, &r, &plan);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_int_equal(r.grad_accum, 4);
    double ag[2] = {0.0, 0.0}, rs[2] = {0.0, 0.0}; /* dense, experts: one call per layer */
    for (int i = 0; i < plan.n; i++) {
        int k = plan.op[i].group == CDSE_GROUP_DP ? 0 : plan.op[i].group == CDSE_GROUP_EDP ? 1 : -1;
        if (k < 0)
            continue;
        if (plan.op[i].coll == CDSE_COLL_ALLGATHER)
            ag[k] = 2.0 * plan.op[i].time_s;
        else if (plan.op[i].coll == CDSE_COLL_REDUCE_SCATTER)
            rs[k] = 2.0 * plan.op[i].time_s;
    }
    assert_true(ag[0] > 0.0 && ag[1] > 0.0 && rs[0] > 0.0 && rs[1] > 0.0);
    double share = (2.0 * ag[0] + rs[0]) / (2.0 * ag[0] + rs[0] + 2.0 * ag[1] + rs[1]);
    double fwd = r.t_forward_s / 4.0, bwd = r.t_backward_s / 4.0;
    double expected = 0.0;
    for (int k = 0; k < 2; k++) {
        double part = k == 0 ? share : 1.0 - share;
        expected += 4.0 * (prefetched_hand(ag[k], part * fwd, 2.0) +
                           prefetched_hand(ag[k] + rs[k], part * bwd, 2.0));
    }
    assert_rel(r.t_dp_comm_s, expected, 1e-12);
    /* The streams do not fit in their shares here: each hiding behind the whole window would
     * show less. */
    double whole = 0.0;
    for (int k = 0; k < 2; k++)
        whole +=
            4.0 * (prefetched_hand(ag[k], fwd, 2.0) + prefetched_hand(ag[k] + rs[k], bwd, 2.0));
    assert_true(whole < expected * (1.0 - 1e-6));
}

/* ZeRO-3, DeepSpeed style (2021-22, deepspeed/runtime/zero/partition_parameters.py at commit
 * 11e94e6c7): one all-gather per weight matrix (4 per GPT layer, 8 for the stage's 2 layers),
 * each after a device synchronization, so nothing overlaps; with full recomputation the weights
 * are gathered for the forward, the recomputed forward and the backward pass; fp16 gradients
 * (2 B) reduce-scattered per matrix; every call costs the 5 us latency plus two host operations
 * of 5 us per rank of the 2-rank group (list building and flattening): 20 us; and HBM copies of
 * the call's full buffer at the test system's 1000 GB/s: 3 B per gathered byte (torch.zeros, then
 * ProcessGroupNCCL's copy out of its flat buffer), 4 B per reduced byte (the in-place division by
 * the group size, then the copy into the flat buffer), i.e. 3 W / 1e12 and 4 G / 1e12 over
 * the 8 calls of a pass (perf*.c DEEPSPEED_GATHER_COPY_BYTES, DEEPSPEED_REDUCE_COPY_BYTES). */
static void test_dp_comm_zero3_deepspeed(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    cdse_stack k = bare_stack();
    k.zero3_style = CDSE_ZERO3_DEEPSPEED;
    k.grad_bytes = 2.0;
    st.stack = &k;
    st.zero = 3;
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double lat = 5e-6, bw = 25e9 * 0.9, host = 2.0 * 2.0 * 5e-6;
    double G = DP_STAGE_PARAMS * 2.0, W = DP_STAGE_PARAMS * 2.0;
    double hbm = 1000e9;
    double ag = 0.5 * W / bw + 8.0 * (lat + host) + 3.0 * W / hbm;
    double rs = 0.5 * G / bw + 8.0 * (lat + host) + 4.0 * G / hbm;
    assert_rel(r.t_dp_comm_s, 4.0 * (3.0 * ag + rs), 1e-12);
    /* Gradients in fp16 halve the gradient buffer; the optimizer keeps fp32 copies of the
     * gradients it updates, sharded by ZeRO (Megatron-LM docs/distrib_optimizer.md: 16-bit
     * gradients cost 4 + 16 / d bytes per parameter with the distributed optimizer): here
     * 2 / d + (12 + 4) / d with d = 2. */
    assert_rel(r.mem_gradients_gib, DP_STAGE_PARAMS * 2.0 / 2.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, DP_STAGE_PARAMS * 16.0 / 2.0 / GIB, 1e-12);
}

/* FP8 parameters (stack fp8_param_gather; Transformer Engine fp8_model_init, NeMo fp8_params):
 * in FP8 training the layers' weights are held only as FP8, 1 B, with their FP8 transpose (1 B)
 * beside them; the embeddings stay bf16; the distributed optimizer all-gathers what the GPU
 * holds. The ZeRO-1 case of test_dp_comm_one_bucket: layers 3159808 parameters, embeddings
 * 1048576. Weights: 3159808 x 1 + 1048576 x 2 = 5256960 B (bf16 parameters: 4208384 x 2 =
 * 8416768 B); FP8 cache: 3159808 x 1 B (without: x 2); DP: reduce-scatter of the fp32 gradients
 * G = 4208384 x 4 B as before, all-gather of 5256960 B: (1/2) G / 22.5e9 + 5e-6 +
 * (1/2) 5256960 / 22.5e9 + 5e-6. In bf16 training the key changes nothing. */
static void test_fp8_param_gather(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    s.peak_tflops[CDSE_FP8] = 200.0;
    s.gemm_eff_fp8 = s.gemm_eff;
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    st.zero = 1;
    st.precision = CDSE_FP8;
    cdse_stack k = bare_stack();
    k.fp8_param_gather = false; /* the default stack's recipes set it */
    st.stack = &k;
    cdse_result plain, fp8_params;
    eval_ok(&m, &s, &st, &plain);
    k.fp8_param_gather = true;
    eval_ok(&m, &s, &st, &fp8_params);
    double layers = 3159808.0, embed = 1048576.0, bw = 25e9 * 0.9, lat = 5e-6;
    assert_rel(plain.mem_weights_gib, (layers + embed) * 2.0 / GIB, 1e-12);
    assert_rel(plain.mem_fp8_cache_gib, layers * 2.0 / GIB, 1e-12);
    assert_rel(fp8_params.mem_weights_gib, 5256960.0 / GIB, 1e-12);
    assert_rel(fp8_params.mem_fp8_cache_gib, layers * 1.0 / GIB, 1e-12);
    double G = (layers + embed) * 4.0;
    assert_rel(plain.t_dp_comm_s, 0.5 * G / bw + lat + 0.5 * 8416768.0 / bw + lat, 1e-12);
    assert_rel(fp8_params.t_dp_comm_s, 0.5 * G / bw + lat + 0.5 * 5256960.0 / bw + lat, 1e-12);
    /* bf16 training: no FP8 copy, bf16 weights and gather whatever the key says */
    st.precision = CDSE_BF16;
    cdse_result bf16;
    eval_ok(&m, &s, &st, &bf16);
    assert_rel(bf16.mem_weights_gib, (layers + embed) * 2.0 / GIB, 1e-12);
    assert_true(bf16.mem_fp8_cache_gib == 0.0);
    assert_rel(bf16.t_dp_comm_s, plain.t_dp_comm_s, 1e-12);
    /* ZeRO-3 (FSDP, the formula of test_dp_comm_zero3: one call per layer, 2 layers, m = 4
     * micro-batches) gathers the FP8 shards: W = 5256960 B instead of 8416768 B. */
    st.precision = CDSE_FP8;
    st.zero = 3;
    cdse_result z3;
    eval_ok(&m, &s, &st, &z3);
    double ag = 0.5 * 5256960.0 / bw + 2.0 * lat, rs = 0.5 * G / bw + 2.0 * lat;
    double fwd = z3.t_forward_s / 4.0,
           bwd = z3.t_backward_s / 4.0 - 2.0 * tp_hidden_bwd(&m, &s, &st, 4.0);
    double per_mb = ag / 2.0 + exposed_hand(ag / 2.0, fwd / 2.0) + (ag + rs) / 2.0 +
                    exposed_hand((ag + rs) / 2.0, bwd / 2.0);
    assert_rel(z3.t_dp_comm_s, 4.0 * per_mb, 1e-12);
}

static void test_dp_comm_last_bucket(void **state)
{
    (void)state;
    cdse_model m = gpt(64);
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 200.0;
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double params = 32.0 * 1579904.0 + 1048576.0;
    assert_rel(r.mem_weights_gib, params * 2.0 / GIB, 1e-12);
    double ar = 2.0 * 0.5 * params * 4.0 / (200e9 * 0.9) + 2.0 * 5e-6;
    double bucket = 40e6 / params;
    assert_true(ar < r.t_backward_s / 4.0 && 0.25 < bucket); /* hidden part costs less */
    assert_rel(r.t_dp_comm_s, bucket * ar, 1e-12);
}

/* Megatron-Core's default bucket grows with the data-parallel group: max(40M, 1M x d) parameters
 * (distributed_data_parallel.py, lines 51-54 at r0.8). test_dp_comm_last_bucket's stage
 * (51605504 parameters) on d = 64 ranks (1024 GPUs, one rank of the group per node): the bucket
 * is 64M parameters, more than the stage, so the stage's one bucket starts when the backward
 * pass ends and the whole all-reduce is exposed, 2 (63/64) G / (200e9 x 0.9) + 2 x 63 x 5 us
 * (with 40M-parameter buckets, 0.775 of it). */
static void test_dp_comm_bucket_grows_with_dp(void **state)
{
    (void)state;
    cdse_model m = gpt(64);
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 200.0;
    cdse_strategy st = strat(1024, 8, 2, 1, 256);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 64);
    double params = 32.0 * 1579904.0 + 1048576.0;
    double ar = 2.0 * (63.0 / 64.0) * params * 4.0 / (200e9 * 0.9) + 2.0 * 63.0 * 5e-6;
    assert_rel(r.t_dp_comm_s, ar, 1e-12);
}

/* The interleaved schedule reduces each model chunk's gradients, whole, once the backward pass of
 * the chunk's last micro-batch is over (Megatron-LM's delay_grad_reduce / align_grad_reduce,
 * perf*.c chunked_reduce). gpt(48) with t = 1, p = 2, v = 3, d = 2 on one node (the two DP ranks
 * 1 apart, NVLink 80 %, 2 us): the first stage holds 24 layers of 12 h^2 + 13 h = 12596224
 * parameters, 8 per chunk, and the embedding V h + s h = 4718592, which sits in chunk 0. Each
 * chunk's fp32 gradients are all-reduced over the 2 ranks: c = 2 (1/2) 4 x 8 x 12596224 / bw +
 * 2 x 2 us for chunks 1 and 2, c0 the same with 4 x (8 x 12596224 + 4718592) B for chunk 0. On
 * the first stage chunk j's last backward pass ends j p = 2j units before the end of the pass
 * (a unit u: 8 layers' backward pass of one micro-batch, cdse_layer_times). The reductions run
 * one after another; chunk 0's starts after the pass:
 *   300 GB/s, c < 2u: chunks 2 and 1 hidden, 0.25 x 2c, then c0: 0.5 c + c0;
 *   40 GB/s, 2u < c < 4u: chunk 2 runs from -4u to -4u + c, chunk 1 waits for it and ends at
 *   2c - 4u > 0 past the end, which chunk 0 waits for: (2c - 4u) + 0.25 x 4u + c0. */
static void test_dp_comm_interleaved_chunks(void **state)
{
    (void)state;
    cdse_model m = gpt(48);
    double bandwidth[2] = {300.0, 40.0};
    for (int k = 0; k < 2; k++) {
        cdse_system s = sys();
        s.level[0].bandwidth_gbs = bandwidth[k];
        cdse_strategy st = strat(4, 1, 2, 1, 8);
        st.vpp = 3;
        cdse_result r;
        eval_ok(&m, &s, &st, &r);
        assert_int_equal(r.dp, 2);
        assert_int_equal(r.grad_accum, 4);
        double fwd, bwd;
        assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
        double u = 8.0 * bwd, bw = bandwidth[k] * 1e9 * 0.8;
        double c = 4.0 * 8.0 * 12596224.0 / bw + 4e-6;
        double c0 = 4.0 * (8.0 * 12596224.0 + 4718592.0) / bw + 4e-6;
        if (k == 0) {
            assert_true(c < 2.0 * u);
            assert_rel(r.t_dp_comm_s, 0.5 * c + c0, 1e-12);
        } else {
            assert_true(2.0 * u < c && c < 4.0 * u);
            assert_rel(r.t_dp_comm_s, (2.0 * c - 4.0 * u) + 0.25 * 4.0 * u + c0, 1e-12);
        }
    }
}

/* The bucket grows with the plain data-parallel size only: Megatron-Core sizes it by the DP group
 * without the context-parallel ranks (get_data_parallel_world_size() at r0.8, 'dp_group' at
 * d98e8a64d), though the gradients are reduced over dp x cp. test_dp_comm_last_bucket's stage
 * (51605504 parameters, fp32 gradients G = 4 x 51605504 B) with cp = 32 and dp = 2 on 1024 GPUs:
 * the reduction spans the 64 ranks of dp x cp, 8 apart (one per node): all-reduce
 * ar = 2 (63/64) G / (200e9 x 0.9) + 2 x 63 x 5 us, which the backward pass of one micro-batch
 * (32 sequences of 512 / 32 tokens) hides; the bucket is max(40M, 1M x 2) = 40M parameters, so
 * the exposed last bucket is 40e6 / 51605504 of ar (with the dp x cp size, 64M, the whole ar). */
static void test_dp_comm_bucket_ignores_cp(void **state)
{
    (void)state;
    cdse_model m = gpt(64);
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 200.0;
    cdse_strategy st = strat(1024, 8, 2, 32, 256);
    st.cp = 32;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 2);
    double params = 32.0 * 1579904.0 + 1048576.0;
    double ar = 2.0 * (63.0 / 64.0) * params * 4.0 / (200e9 * 0.9) + 2.0 * 63.0 * 5e-6;
    assert_true(ar < r.t_backward_s / r.grad_accum); /* hidden but for the last bucket */
    assert_rel(r.t_dp_comm_s, 40e6 / params * ar, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bubble_1f1b),
        cmocka_unit_test(test_bubble_interleaved),
        cmocka_unit_test(test_pipeline_p2p),
        cmocka_unit_test(test_pipeline_p2p_across_nodes),
        cmocka_unit_test(test_cp_ring_across_nodes),
        cmocka_unit_test(test_cp_ring_in_node),
        cmocka_unit_test(test_dp_comm_one_bucket),
        cmocka_unit_test(test_dp_comm_zero3),
        cmocka_unit_test(test_dp_comm_moe_shared_window),
        cmocka_unit_test(test_dp_comm_zero3_deepspeed),
        cmocka_unit_test(test_dp_comm_last_bucket),
        cmocka_unit_test(test_dp_comm_bucket_grows_with_dp),
        cmocka_unit_test(test_dp_comm_bucket_ignores_cp),
        cmocka_unit_test(test_dp_comm_interleaved_chunks),
        cmocka_unit_test(test_fp8_param_gather),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
