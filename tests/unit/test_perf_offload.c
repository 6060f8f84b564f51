/* The evaluator (src/model/perf*.c) against hand calculations: offload of optimizer state,
 * activations and weights to host memory tiers, and the breakdown total. Split from test_perf.c
 * (issue 28); the shared fixtures and the list of sources are in perf_fixtures.h. */
#include "perf_fixtures.h"

/* ---- Offload to a second memory tier --------------------------------------------------- */

/* Per-GPU tier of 512 GiB at 64 GB/s, 1 us. */
static cdse_system tier_sys(void)
{
    cdse_system s = sys();
    s.tier.attach = CDSE_TIER_PER_GPU;
    s.tier.capacity_gib = 512.0;
    s.tier.bandwidth_gbs = 64.0;
    s.tier.latency_us = 1.0;
    s.tier.shared_by = 1;
    return s;
}

/* The stage that peaks is the one that peaks after offload. test_split_peak_stage_state's model
 * with V = 20992 and the optimizer state offloaded: a layer 12596224 parameters, the embedding
 * V h + s h = 22020096, a layer's activations 77594624 B, 6 B per parameter left in HBM (weights
 * 2, gradients 4).
 *   before offload: rank 0 (12596224 + 22020096) x 18 + 4 x 77594624 = 933472256 B,
 *                   rank 1 2 x 12596224 x 18 + 6 x 77594624 = 919031808 B;
 *   after:          rank 0 (12596224 + 22020096) x 6 + 4 x 77594624 = 518076416 B,
 *                   rank 1 2 x 12596224 x 6 + 6 x 77594624 = 616722432 B, the peak
 *   (rank 3: (12596224 + 21497856) x 6 + 77594624 + logits 4 x 512 x 2 x 20992 = 368142336 B).
 * The tier holds what the rank that offloads the most places there: rank 0's optimizer state,
 * (12596224 + 22020096) x 12 B (rank 1: 2 x 12596224 x 12, rank 3: (12596224 + 21497856) x 12),
 * though rank 1 is the one reported. */
static void test_split_peak_stage_offload(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    m.vocab = 20992;
    cdse_system s = tier_sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_stack k = bare_stack();
    k.pipeline_split_embedding = true;
    st.stack = &k;
    st.offload = CDSE_OFFLOAD_OPTIMIZER;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double layer = 12596224.0;
    assert_rel(r.mem_weights_gib, 2.0 * 2.0 * layer / GIB, 1e-12);
    assert_true(r.mem_optimizer_gib == 0.0);
    assert_rel(r.mem_offloaded_gib, 12.0 * (layer + 22020096.0) / GIB, 1e-12);
    assert_rel(r.mem_activations_gib, 6.0 * 77594624.0 / GIB, 1e-12);
    assert_rel(r.mem_total_gib, 616722432.0 / GIB + 1.5, 1e-12);
}

/* Block recomputation with activation offload: the layers that keep every activation are the ones
 * that free HBM before the recomputed layers rebuild theirs, but with every layer offloaded
 * (offload_layers 0) they hold nothing there, so the layer being recomputed is rebuilt beside what
 * stays: the recomputation buffer of every-layer recomputation, s b h (34 + 5 a s / h) - 2 s b h
 * (test_recompute_layers_memory), is charged to runtime memory (issue 31: without it recompute
 * layers 2 of a chunk reported less memory than every layer). With offload_layers 1 the last 3
 * layers keep theirs in HBM: no buffer. 4 layers, p = 1, recompute_layers 1. */
static void test_recompute_layers_offload_buffer(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.recompute = CDSE_RECOMPUTE_FULL;
    st.recompute_layers = 1;
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    double kept = SBH * (34.0 + 5.0 * A * S / H), input = 2.0 * SBH;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_runtime_gib, (kept - input) / GIB, 1e-12);
    st.offload_layers = 1;
    eval_ok(&m, &s, &st, &r);
    assert_true(r.mem_runtime_gib == 0.0);
}

/* Optimizer state offloaded (ZeRO-Offload, Ren et al. 2021): 12 B x 15223808 parameters of the
 * 16-GPU case leave HBM; the step streams them in and out, not overlapped:
 * 2 * 15223808 * 12 / 64e9 + 1e-6 s. A per-node tier of 1 GiB shared by 8 GPUs holds 0.125 GiB
 * per GPU < 0.170 GiB: out of memory, at 64/8 GB/s per GPU. */
static void test_offload_optimizer(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(16, 2, 2, 1, 16);
    st.offload = CDSE_OFFLOAD_OPTIMIZER;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_true(r.mem_optimizer_gib == 0.0);
    assert_rel(r.mem_offloaded_gib, STAGE_PARAMS * 12.0 / GIB, 1e-12);
    assert_rel(r.mem_weights_gib, STAGE_PARAMS * 2.0 / GIB, 1e-12);
    assert_rel(r.t_offload_s, 2.0 * STAGE_PARAMS * 12.0 / 64e9 + 1e-6, 1e-12);

    s.tier.attach = CDSE_TIER_PER_NODE;
    s.tier.capacity_gib = 1.0;
    s.tier.shared_by = 8;
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OOM);
    assert_rel(r.t_offload_s, 2.0 * STAGE_PARAMS * 12.0 / 8e9 + 1e-6, 1e-12);
}

/* Activations offloaded with 1F1B, p = 4, m = 8, 8 layers (the case of
 * test_activations_pipeline_1f1b): the first stage holds min(p, m) = 4 micro-batches of 2
 * layers, 8 s b h (34 + 5 a s / h) bytes; layer-wise offload (perf*.c) keeps two layers' worth in
 * HBM, 2 s b h (34 + 5 a s / h) (the whole of one micro-batch here), and the other 6 on the tier:
 * resident + offloaded = the activations held without offload. The last rank holds one
 * micro-batch, its 2 layers (two layers' worth: all of it stays) and its fp32 logits
 * 4 s b V = 16777216 B, which are not offloaded: after offload it holds more than rank 0 and is
 * the rank reported (issue 31: chosen before offload, rank 0 was reported, and recomputation,
 * shrinking rank 0's passes, moved the peak to the last rank and reported more memory). The
 * tier holds rank 0's 6 layers' worth, the most any rank places there. */
static void test_offload_activations(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    assert_rel(r.mem_offloaded_gib, 6.0 * per_layer / GIB, 1e-12);
    assert_rel(r.mem_activations_gib, (2.0 * per_layer + 4.0 * S * B * V) / GIB, 1e-12);
}

/* Activation offload traffic: every micro-batch writes its activations to the tier during its
 * forward pass and reads them back for its backward pass, so an iteration of m micro-batches moves
 * 2 m times one micro-batch's activations, whatever the number in flight. p = 1, m = 4, 4 layers,
 * b = 2: one micro-batch holds 4 s b h (34 + 5 a s / h) + 4 s b V = 310378496 + 16777216 =
 * 327155712 B; traffic 2 * 4 * 327155712 B over a 900 GB/s tier (NVLink-C2C class) takes 2.9e-3 s,
 * hidden behind the computation (checked below), so 0.25 of it shows (perf*.c
 * OVERLAP_INTERFERENCE). */
static void test_offload_activations_traffic(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = tier_sys();
    s.tier.bandwidth_gbs = 900.0;
    cdse_strategy st = strat(1, 1, 1, 2, 8);
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 4);
    double one_mb = 4.0 * SBH * (34.0 + 5.0 * A * S / H) + logits_bytes(1.0);
    assert_rel(one_mb, 327155712.0, 1e-15);
    double traffic = 2.0 * 4.0 * one_mb / 900e9;
    double compute = r.t_forward_s + r.t_backward_s + r.t_recompute_s;
    assert_true(traffic < compute);
    assert_rel(r.t_offload_s, 0.25 * traffic, 1e-12);
}

/* The offload traffic and the data-parallel reduction overlap the same passes: they share the
 * window in proportion to their time with nothing hidden (issue 31: one window shared by the
 * streams that use it; each hiding behind the whole window exposed up to 1.5 d of a window
 * shorter by d, so a faster GPU trained slower). The configuration of
 * test_offload_activations_traffic on 2 GPUs (dp 2, m = 4, the same micro-batch) over a 9 GB/s
 * tier: traffic 2 x 4 x 327155712 B / 9e9 = 290.8 ms, against the passes' computation c; the
 * gradients' all-reduce takes ar (from the plan) with nothing hidden. Offload share
 * s = traffic / (traffic + ar), t_offload_s = exposed(traffic, s c). */
static void test_offload_shares_window_with_dp(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = tier_sys();
    s.tier.bandwidth_gbs = 9.0;
    cdse_strategy st = strat(2, 1, 1, 2, 16);
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    cdse_result r;
    cdse_comm_plan plan;
    cdse_evaluate_plan(&m, &s, &st, &r, &plan);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_int_equal(r.dp, 2);
    assert_int_equal(r.grad_accum, 4);
    double ar = 0.0;
    for (int i = 0; i < plan.n; i++)
        if (plan.op[i].group == CDSE_GROUP_DP && plan.op[i].coll == CDSE_COLL_ALLREDUCE)
            ar = plan.op[i].time_s;
    assert_true(ar > 0.0);
    double traffic = 2.0 * 4.0 * 327155712.0 / 9e9;
    double compute = r.t_forward_s + r.t_backward_s + r.t_recompute_s;
    double share = traffic / (traffic + ar);
    assert_true(traffic > share * compute); /* not all of it hides */
    assert_rel(r.t_offload_s, exposed_hand(traffic, share * compute), 1e-12);
}

/* Partial activation offload (Megatron-Core --cpu-offloading-num-layers N): only N of the layers
 * of each chunk leave HBM. The case of test_offload_activations (p = 4, m = 8, 2 layers per stage,
 * rank 0 holding 4 micro-batches x 2 layers = 8 layer-worths, a layer-worth s b h (34 + 5 a s / h)
 * bytes) with offload_layers = 1: one layer of each of the 4 micro-batches goes to the tier (4
 * layer-worths), less one that stays in HBM (two layers' worth of a micro-batch is live, the
 * layer computed and the one in transit, and the one layer of the chunk not offloaded covers
 * only one of them): 3 offloaded, 8 - 3 = 5 resident. The
 * traffic is the offloaded layer of each of the m = 8 micro-batches out and back: 2 x 8 x 1
 * layer-worth over 64 GB/s. */
static void test_offload_layers_memory(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    st.offload_layers = 1;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    assert_rel(r.mem_offloaded_gib, 3.0 * per_layer / GIB, 1e-12);
    assert_rel(r.mem_activations_gib, 5.0 * per_layer / GIB, 1e-12);
    /* The traffic is shorter than the computation it overlaps (checked): hidden, 0.25 of it
     * shows (perf*.c OVERLAP_INTERFERENCE). */
    double traffic = 2.0 * 8.0 * per_layer / 64e9;
    double compute = r.t_forward_s + r.t_backward_s + r.t_recompute_s;
    assert_true(traffic < compute);
    assert_rel(r.t_offload_s, 0.25 * traffic, 1e-12);
}

/* Partial activation offload with block recomputation (issue 31): both take the first layers of
 * each chunk (Transformer Engine offloads the layer groups below num_offload_group; block
 * recomputation checkpoints layer_idx < recompute_num_layers, megatron/core/recompute.py:167-181),
 * so the offloaded layers are the recomputed ones first, which keep their input only, 2 s b h,
 * and then layers that keep everything, s b h (34 + 5 a s / h) (`kept`). p = 4, m = 8, 16 layers:
 * 4 per stage; rank 0 holds 4 micro-batches.
 * recompute_layers 1, offload_layers 2: a micro-batch holds 2 s b h + 3 kept, offloads
 * 2 s b h + kept (the recomputed layer and one that keeps everything); two layers' worth live,
 * half of (2 s b h + 3 kept), is less than the 2 kept layers not offloaded: nothing offloaded
 * stays. Tier 4 (2 s b h + kept), HBM 4 x 2 kept. (Before: half of every micro-batch's bytes
 * offloaded, 4 (s b h + 1.5 kept) on the tier.) recompute_layers 2, offload_layers 1: a micro-batch
 * holds 4 s b h + 2 kept, offloads 2 s b h; tier 4 x 2 s b h, HBM 4 (2 s b h + 2 kept). The
 * traffic, the offloaded bytes of each of the m = 8 micro-batches out and back over 64 GB/s, hides:
 * 0.25 of it shows. */
static void test_offload_layers_block_recompute(void **state)
{
    (void)state;
    cdse_model m = gpt(16);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    st.recompute = CDSE_RECOMPUTE_FULL;
    st.recompute_layers = 1;
    st.offload_layers = 2;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double kept = SBH * (34.0 + 5.0 * A * S / H), input = 2.0 * SBH;
    assert_rel(r.mem_offloaded_gib, 4.0 * (input + kept) / GIB, 1e-12);
    assert_rel(r.mem_activations_gib, 4.0 * 2.0 * kept / GIB, 1e-12);
    st.recompute_layers = 2;
    st.offload_layers = 1;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_offloaded_gib, 4.0 * input / GIB, 1e-12);
    assert_rel(r.mem_activations_gib, 4.0 * (input + 2.0 * kept) / GIB, 1e-12);
    double traffic = 2.0 * 8.0 * input / 64e9;
    double compute = r.t_forward_s + r.t_backward_s + r.t_recompute_s;
    assert_true(traffic < compute);
    assert_rel(r.t_offload_s, 0.25 * traffic, 1e-12);
}

/* Partial offload traffic on a single stage (p = 1, m = 4, 4 layers, b = 2, the case of
 * test_offload_activations_traffic): offload_layers = 1 moves one of the 4 layers' activations,
 * s b h (34 + 5 a s / h) = 77594624 B per micro-batch, and not the fp32 logits (the offload
 * context wraps the transformer layers only): 2 x 4 x 77594624 B over 900 GB/s, hidden, 0.25 of
 * it shows. In HBM: the 3 other layers and the logits; the offloaded layer (the first, the one the
 * offload context wraps, transformer_block.py:714) has left by the end of the forward pass, when
 * the two layers' worth that offload keeps live (the layer computed and the one before it) are
 * layers that keep their activations. Resident 3 layers + logits, 1 layer on the tier.
 * With offload_layers = 3: the one layer kept, and one offloaded layer still live (two live of
 * which one kept): 2 layers + logits resident, 2 on the tier. */
static void test_offload_layers_traffic(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = tier_sys();
    s.tier.bandwidth_gbs = 900.0;
    cdse_strategy st = strat(1, 1, 1, 2, 8);
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    st.offload_layers = 1;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    assert_rel(per_layer, 77594624.0, 1e-15);
    double traffic = 2.0 * 4.0 * per_layer / 900e9;
    double compute = r.t_forward_s + r.t_backward_s + r.t_recompute_s;
    assert_true(traffic < compute);
    assert_rel(r.t_offload_s, 0.25 * traffic, 1e-12);
    assert_rel(r.mem_activations_gib, (3.0 * per_layer + logits_bytes(1.0)) / GIB, 1e-12);
    assert_rel(r.mem_offloaded_gib, per_layer / GIB, 1e-12);
    st.offload_layers = 3;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, (2.0 * per_layer + logits_bytes(1.0)) / GIB, 1e-12);
    assert_rel(r.mem_offloaded_gib, 2.0 * per_layer / GIB, 1e-12);
}

/* offload_layers must come with activation offload and stay below the layers of a chunk
 * (Megatron-Core: "CPU offloading can be done only for layers less than num_layers"): 8 layers
 * on p = 4 stages are chunks of 2; with vpp 2 chunks of 1. */
static void test_offload_layers_invalid(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    st.offload_layers = 1;
    cdse_result r;
    cdse_evaluate(&m, &s, &st, &r); /* no offload */
    assert_int_equal(r.status, CDSE_ST_OFFLOAD_LAYERS);
    st.offload = CDSE_OFFLOAD_WEIGHTS; /* offload, but not of activations */
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OFFLOAD_LAYERS);
    st.offload = CDSE_OFFLOAD_ACTIVATIONS;
    st.offload_layers = 2; /* the whole chunk */
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OFFLOAD_LAYERS);
    st.offload_layers = 1;
    st.vpp = 2; /* chunks of one layer */
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OFFLOAD_LAYERS);
    assert_string_equal(cdse_status_name(CDSE_ST_OFFLOAD_LAYERS), "offload_layers_invalid");
}

/* Weights offloaded (ZeRO-Infinity style): streamed in for forward and backward of each of the
 * m = 4 micro-batches, 2 m W / bw, hidden behind the computation (8 * 30447616 B / 64e9 = 3.8e-3 s
 * is shorter than the computation, checked below), so 0.25 of it shows. */
static void test_offload_weights(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(16, 2, 2, 1, 16);
    st.offload = CDSE_OFFLOAD_WEIGHTS;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_true(r.mem_weights_gib == 0.0);
    assert_rel(r.mem_offloaded_gib, STAGE_PARAMS * 2.0 / GIB, 1e-12);
    double stream = 2.0 * 4.0 * STAGE_PARAMS * 2.0 / 64e9;
    double compute = r.t_forward_s + r.t_backward_s + r.t_recompute_s + r.t_tp_comm_s;
    assert_true(stream < compute);
    assert_rel(r.t_offload_s, 0.25 * stream, 1e-9);
}

/* The breakdown adds up (perf.h: "Breakdown of the iteration time ... as seen by the critical
 * path"): with every part present (TP + SP, interleaved PP across nodes, DP with ZeRO-1, selective
 * recomputation, optimizer offload) the iteration time is the sum of the parts, each positive. */
static void test_breakdown_adds_up(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = tier_sys();
    cdse_strategy st = strat(16, 4, 2, 1, 16);
    st.vpp = 2;
    st.sequence_parallel = true;
    st.zero = 1;
    st.recompute = CDSE_RECOMPUTE_SELECTIVE;
    st.offload = CDSE_OFFLOAD_OPTIMIZER;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 2);
    assert_int_equal(r.grad_accum, 8);
    double parts[] = {r.t_forward_s, r.t_backward_s, r.t_recompute_s, r.t_tp_comm_s, r.t_pp_comm_s,
                      r.t_dp_comm_s, r.t_bubble_s,   r.t_optimizer_s, r.t_offload_s};
    double sum = r.t_ep_comm_s + r.t_cp_comm_s + r.t_fixed_s;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!(parts[i] > 0.0))
            print_error("part %zu is %g\n", i, parts[i]);
        assert_true(parts[i] > 0.0);
        sum += parts[i];
    }
    assert_rel(r.time_per_iteration_s, sum, 1e-12);
    /* Memory adds up as well: HBM total = weights + gradients + optimizer + activations + other. */
    assert_rel(r.mem_total_gib,
               r.mem_weights_gib + r.mem_gradients_gib + r.mem_optimizer_gib +
                   r.mem_activations_gib + r.mem_other_gib + r.mem_fp8_cache_gib +
                   r.mem_runtime_gib,
               1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_peak_stage_offload),
        cmocka_unit_test(test_offload_optimizer),
        cmocka_unit_test(test_offload_activations),
        cmocka_unit_test(test_offload_activations_traffic),
        cmocka_unit_test(test_offload_shares_window_with_dp),
        cmocka_unit_test(test_offload_layers_memory),
        cmocka_unit_test(test_offload_layers_block_recompute),
        cmocka_unit_test(test_offload_layers_traffic),
        cmocka_unit_test(test_offload_layers_invalid),
        cmocka_unit_test(test_recompute_layers_offload_buffer),
        cmocka_unit_test(test_offload_weights),
        cmocka_unit_test(test_breakdown_adds_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
