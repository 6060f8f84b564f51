/* The evaluator (src/model/perf*.c) against hand calculations: layer times, MFU ceiling,
 * recomputation, tensor-parallel communication and asynchronous TP. Split from test_perf.c (issue
 * 28); the shared fixtures and the list of sources are in perf_fixtures.h. */
#include "perf_fixtures.h"

/* ---- Time of one layer: GEMMs, attention core, element-wise kernels --------------------- */

/* One GPT layer, t = p = d = 1, b = 2 (T = s b = 1024 tokens), no flash attention. Constant GEMM
 * efficiency 0.5 on 100 TFLOP/s: 5e13 FLOP/s; HBM 1e12 B/s. GEMM time
 * max(2 m n k / (peak eff), 2 (m k + k n + m n) / hbm) (DESIGN.md "The evaluator"):
 *   QKV  1024 x 3072 x 1024: 6442450944 FLOP -> 1.2885e-4 s; 14680064 B -> 1.47e-5 s: compute
 *   proj 1024 x 1024 x 1024: 2147483648 FLOP -> 4.295e-5 s;  6291456 B: compute
 *   FC1  1024 x 4096 x 1024: 8589934592 FLOP -> 1.718e-4 s; 18874368 B: compute
 *   FC2  1024 x 1024 x 4096: 8589934592 FLOP -> 1.718e-4 s; 18874368 B: compute
 *   linear: 24 T h^2 = 25769803776 FLOP / 5e13.
 *   scores Q K^T, batch b a = 32, 512 x 512 x 64: 1073741824 FLOP -> 2.1475e-5 s; bytes
 *   32 (512*64 + 64*512 + 512*512) 2 = 20971520 -> 2.0972e-5 s: compute (barely);
 *   A V, 512 x 64 x 512: the same. Attention GEMMs 4 b s^2 h = 2147483648 FLOP / 5e13.
 *   Softmax + dropout on b a s^2 = 8388608 scores: forward 4 + 5 B each, backward 6 + 5 B.
 *   Element-wise forward per token: 2 LayerNorms (4 B) and 2 bias-dropout-adds (7 B) on h, GeLU
 *   (4 B) on 4h: T (22 h + 16 h) B = 1024 * 38912 = 39845888 B; backward 1.5x.
 * Backward GEMMs are twice the forward (data and weight gradients). */
static void test_one_layer_times(void **state)
{
    (void)state;
    cdse_model m = gpt(1);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    double peak_eff = 100e12 * 0.5, hbm = 1e12, T = S * B;
    double linear = 24.0 * T * H * H / peak_eff;
    double attn_gemm = 4.0 * B * S * S * H / peak_eff;
    double scores = B * A * S * S;
    double ew = T * (2.0 * 4.0 * H + 2.0 * 7.0 * H + 4.0 * 4.0 * H) / hbm;
    double layer_fwd = linear + attn_gemm + scores * 9.0 / hbm + ew;
    double layer_bwd = 2.0 * linear + 2.0 * attn_gemm + scores * 11.0 / hbm + 1.5 * ew;
    assert_rel(ew, 39845888.0 / hbm, 1e-15);

    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, layer_fwd, 1e-12);
    assert_rel(bwd, layer_bwd, 1e-12);

    /* The output layer, T x V x h = 1024 x 4096 x 1024: 8589934592 FLOP / 5e13 (compute-bound),
     * and Megatron's unfused fp32 cross-entropy over T V = 4194304 logits
     * (megatron/core/tensor_parallel/cross_entropy.py): forward cast 2 + 4, max 4, subtract
     * 4 + 4, exp 4 + 4, sum 4, divide 4 + 4 = 38 B per logit; backward in-place scale 4 + 4 and
     * cast to bf16 4 + 2 = 14 B; 52 B x 4194304 = 218103808 B, 2.181e-4 s at 1e12 B/s, charged
     * to the forward pass. Forward logits + loss, backward 2 logits. */
    double logits = 2.0 * T * V * H / peak_eff;
    double loss = 218103808.0 / hbm;
    assert_rel(loss, T * V * (38.0 + 14.0) / hbm, 1e-15);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_forward_s, layer_fwd + logits + loss, 1e-12);
    assert_rel(r.t_backward_s, layer_bwd + 2.0 * logits, 1e-12);
    assert_true(r.t_recompute_s == 0.0);
    assert_true(r.t_tp_comm_s == 0.0);
    assert_true(r.t_pp_comm_s == 0.0);
    assert_true(r.t_dp_comm_s == 0.0);
    assert_true(r.t_bubble_s == 0.0);
    /* The iteration is the sum of its parts (p = d = 1: no bubble, no pipeline or DP traffic). */
    assert_rel(r.time_per_iteration_s, r.t_forward_s + r.t_backward_s + r.t_optimizer_s, 1e-12);
}

/* The published ceiling (system mfu_ceiling): one layer of gpt(1), 1 GPU, 2 sequences of 512.
 * Model FLOPs per token, Narayanan et al. 2021 eq. 3 with l = 1, h = 1024, s = 512, V = 4096:
 * 72 h^2 (1 + s/(6h) + V/(12h)) = 75497472 x (1 + 1/12 + 1/3) = 106954752; 1024 tokens:
 * 109521666048 FLOPs. A ceiling of 0.1 on 100 TFLOP/s: the iteration takes at least
 * 109521666048 / (1e14 x 0.1) = 0.0109521666048 s, the MFU is then 0.1 exactly, tokens/s
 * 1024 / 0.0109521666048. A ceiling above the model's own MFU, or one for another data type,
 * changes nothing. */
static void test_mfu_ceiling(void **state)
{
    (void)state;
    cdse_model m = gpt(1);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    cdse_result raw, r;
    eval_ok(&m, &s, &st, &raw);
    double floor_s = 109521666048.0 / (1e14 * 0.1);
    assert_rel(106954752.0 * 1024.0, 109521666048.0, 1e-15);
    assert_true(raw.mfu > 0.1 && raw.time_per_iteration_s < floor_s);
    assert_true(raw.t_ceiling_s == 0.0);

    s.mfu_ceiling[CDSE_FP8] = 0.01; /* another data type's: no effect on a bf16 run */
    eval_ok(&m, &s, &st, &r);
    assert_true(r.time_per_iteration_s == raw.time_per_iteration_s && r.t_ceiling_s == 0.0);

    s.mfu_ceiling[CDSE_BF16] = 0.1;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.time_per_iteration_s, floor_s, 1e-12);
    assert_rel(r.mfu, 0.1, 1e-12);
    assert_rel(r.tokens_per_s, 1024.0 / floor_s, 1e-12);
    assert_rel(r.t_ceiling_s, floor_s - raw.time_per_iteration_s, 1e-12);
    /* Hardware FLOPs keep their ratio to model FLOPs (no recomputation here: equal). */
    assert_rel(r.hfu, r.mfu * raw.hfu / raw.mfu, 1e-12);
    assert_rel(r.t_forward_s, raw.t_forward_s, 1e-15); /* the breakdown itself is the model's */

    s.mfu_ceiling[CDSE_BF16] = 0.99; /* above the model's own MFU */
    eval_ok(&m, &s, &st, &r);
    assert_true(r.time_per_iteration_s == raw.time_per_iteration_s && r.t_ceiling_s == 0.0);
}

/* Selective recomputation repeats the attention core's forward (Korthikanti Sec. 5); full
 * recomputation repeats the whole forward pass of every layer. */
static void test_recompute_times(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    double peak_eff = 100e12 * 0.5, hbm = 1e12, T = S * B;
    double linear = 24.0 * T * H * H / peak_eff;
    double attn_fwd = 4.0 * B * S * S * H / peak_eff + B * A * S * S * 9.0 / hbm;
    double ew = T * 38.0 * H / hbm;
    cdse_result r;
    st.recompute = CDSE_RECOMPUTE_SELECTIVE;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_recompute_s, 2.0 * attn_fwd, 1e-12);
    st.recompute = CDSE_RECOMPUTE_FULL;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_recompute_s, 2.0 * (linear + attn_fwd + ew), 1e-12);
}

/* Block recomputation (Megatron-Core --recompute-granularity full --recompute-method block
 * --recompute-num-layers N, megatron/core/recompute.py): the first N layers of each chunk keep
 * their input only, 2 s b h (Korthikanti Table 2, full recomputation), the others everything,
 * s b h (34 + 5 a s / h) without flash attention, and the single stage the fp32 logits. The
 * layer being recomputed holds its activations again only after the backward pass freed those
 * of the chunk's last, not recomputed, layers (at least one layer's worth): the peak is the end
 * of the forward pass, no recomputation buffer (full recomputation of every layer adds one, the
 * recomputed layer's activations but its checkpointed input). 4 layers, p = 1, b = 2:
 *   N = 1: 1 x 2 s b h + 3 x s b h (34 + 40) + logits;
 *   N = 3: 3 x 2 s b h + 1 x s b h (34 + 40) + logits;
 *   every layer (0): 4 x 2 s b h + logits, and s b h (34 + 40) - 2 s b h rebuilt during the
 *   backward pass (runtime memory): in total the same as N = 3. */
static void test_recompute_layers_memory(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.recompute = CDSE_RECOMPUTE_FULL;
    double kept = SBH * (34.0 + 5.0 * A * S / H), input = 2.0 * SBH;
    cdse_result r;
    st.recompute_layers = 1;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, (input + 3.0 * kept + logits_bytes(1.0)) / GIB, 1e-12);
    st.recompute_layers = 3;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, (3.0 * input + kept + logits_bytes(1.0)) / GIB, 1e-12);
    st.recompute_layers = 0;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, (4.0 * input + logits_bytes(1.0)) / GIB, 1e-12);
    assert_rel(r.mem_runtime_gib, (kept - input) / GIB, 1e-12);
}

/* The pruning floor with any recomputation bounds block recomputation too: with the HBM just
 * above the memory of recompute_layers 3 of 4, the least of the block settings (by the hand
 * count of test_recompute_layers_memory, as much as every layer recomputed) and below that of
 * recompute_layers 2 (one more layer keeps everything: s b h (34 + 40) - 2 s b h more), the
 * configuration fits and its floor must be finite and no more than its time. */
static void test_recompute_layers_floor(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result all, block;
    eval_ok(&m, &s, &st, &all);
    st.recompute_layers = 3;
    eval_ok(&m, &s, &st, &block);
    assert_rel(all.mem_total_gib * GIB, block.mem_total_gib * GIB, 1e-12);
    st.recompute_layers = 2;
    cdse_result two;
    eval_ok(&m, &s, &st, &two);
    assert_rel((two.mem_total_gib - block.mem_total_gib) * GIB, SBH * (34.0 + 40.0 - 2.0), 1e-9);
    s.hbm_gib = block.mem_total_gib + 0.5 * (two.mem_total_gib - block.mem_total_gib);
    st.recompute_layers = 3;
    eval_ok(&m, &s, &st, &block);
    st.recompute_layers = 2;
    cdse_evaluate(&m, &s, &st, &two);
    assert_int_equal(two.status, CDSE_ST_OOM);
    st.recompute_layers = 3;
    st.recompute = CDSE_RECOMPUTE_NONE;
    double floor = cdse_time_floor(&m, &s, &st, CDSE_FLOOR_ANY_RECOMPUTE);
    assert_true(floor <= block.time_per_iteration_s);
}

/* The recomputed layers' forward runs again in the backward pass, the others' not. Per layer and
 * micro-batch the forward of test_recompute_times: 24 T h^2 of GEMMs at 50 TFLOP/s, the attention
 * core 4 b s^2 h FLOPs plus its 9 b a s^2 bytes, 38 T h element-wise bytes at 1 TB/s.
 *   p = 1, 4 layers, m = 1, N = 1: one layer's forward again;
 *   p = 2, vpp 2, 8 layers (chunks of 2, 4 layers per stage), m = 8 / 2 = 4, N = 1: one of the
 *   2 layers of each of the 2 chunks, 2 layers' forward per micro-batch, 4 x 2 in all. */
static void test_recompute_layers_times(void **state)
{
    (void)state;
    double peak_eff = 100e12 * 0.5, hbm = 1e12, T = S * B;
    double linear = 24.0 * T * H * H / peak_eff;
    double attn_fwd = 4.0 * B * S * S * H / peak_eff + B * A * S * S * 9.0 / hbm;
    double ew = T * 38.0 * H / hbm;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.recompute = CDSE_RECOMPUTE_FULL;
    st.recompute_layers = 1;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_recompute_s, linear + attn_fwd + ew, 1e-12);

    cdse_model m8 = gpt(8);
    st = strat(2, 1, 2, 2, 8);
    st.vpp = 2;
    st.recompute = CDSE_RECOMPUTE_FULL;
    st.recompute_layers = 1;
    eval_ok(&m8, &s, &st, &r);
    assert_int_equal(r.grad_accum, 4);
    assert_rel(r.t_recompute_s, 4.0 * 2.0 * (linear + attn_fwd + ew), 1e-12);
}

/* recompute_layers needs full recomputation and fewer layers than a chunk holds (4 here; with
 * the chunk's count Megatron-Core recomputes every layer, which is recompute_layers 0). */
static void test_recompute_layers_invalid(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.recompute_layers = 1;
    cdse_result r;
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_RECOMPUTE_LAYERS);
    st.recompute = CDSE_RECOMPUTE_SELECTIVE;
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_RECOMPUTE_LAYERS);
    st.recompute = CDSE_RECOMPUTE_FULL;
    st.recompute_layers = 4;
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_RECOMPUTE_LAYERS);
    assert_string_equal(cdse_status_name(CDSE_ST_RECOMPUTE_LAYERS), "recompute_layers_invalid");
}

/* An uneven pipeline split (Megatron-Core): 10 layers on pp 4 leave chunks of 3, 3, 2, 2 layers;
 * the first stage holds 3 layers, as it does with 12 layers on pp 4, so its weights, memory and
 * per-micro-batch time are those of the 12-layer split (the longest chunk sets the pace). */
static void test_uneven_pipeline_split(void **state)
{
    (void)state;
    cdse_model ten = gpt(10), twelve = gpt(12);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_result a, b;
    eval_ok(&ten, &s, &st, &a);
    eval_ok(&twelve, &s, &st, &b);
    assert_rel(a.mem_weights_gib, b.mem_weights_gib, 1e-15);
    assert_rel(a.mem_activations_gib, b.mem_activations_gib, 1e-15);
    assert_rel(a.t_forward_s, b.t_forward_s, 1e-15);
}

/* Placement decides which levels a group crosses. t = 8, p = 2 on 16 GPUs (8 per node), dp 1:
 * by default the TP group is ranks 0-7, one node (NVLink); with pp innermost (pp-tp-cp-dp) the
 * TP group is ranks 0, 2, ..., 14 (stride 2): 4 per node on 2 nodes, and its all-reduces run
 * hierarchically, the inter-node step on InfiniBand. The forward pass's two all-reduces of
 * B = T h 2 bytes per layer (the exposed part; T = s b = 1024) then cost, per all-reduce,
 * 2 (3/4) B / (300e9 x 0.8) + 2 x 3 x 2e-6 + 2 (1/2) (B / 4) / (25e9 x 0.9) + 2 x 1 x 5e-6
 * (collective.c's hierarchical ring). cdse_layer_times gives the forward time of one layer, so
 * the difference between the two placements is 2 x (that - the NVLink-only all-reduce). */
static void test_placement_moves_tp_across_nodes(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 8, 2, 2, 4);
    int pp_first = -1;
    for (int i = 0; cdse_placement_names[i] != NULL; i++)
        if (strcmp(cdse_placement_names[i], "pp-tp-cp-dp") == 0)
            pp_first = i;
    double fwd_default, bwd_default, fwd_moved, bwd_moved;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd_default, &bwd_default), CDSE_ST_OK);
    st.placement = pp_first;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd_moved, &bwd_moved), CDSE_ST_OK);
    double bytes = S * B * H * 2.0;
    double nvlink = 2.0 * 7.0 / 8.0 * bytes / (300e9 * 0.8) + 2.0 * 7.0 * 2e-6;
    double split = 2.0 * 0.75 * bytes / (300e9 * 0.8) + 2.0 * 3.0 * 2e-6 +
                   2.0 * 0.5 * (bytes / 4.0) / (25e9 * 0.9) + 2.0 * 1.0 * 5e-6;
    assert_rel(fwd_moved - fwd_default, 2.0 * (split - nvlink), 1e-9);
}

/* Selective recomputation with flash attention: Megatron-Core checkpoints the attention core
 * whatever its kernel, so the backward pass runs the causal flash forward again:
 * 4 b s s h x 1/2 FLOPs (Dao 2023, causal half) at 0.4 of the 100 TFLOP/s peak (the test
 * system's attention_efficiency), per layer, 2 layers, one micro-batch; memory as without
 * recomputation (flash keeps no scores either way). */
static void test_selective_recompute_with_flash(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.flash_attention = true;
    cdse_result none, selective;
    eval_ok(&m, &s, &st, &none);
    st.recompute = CDSE_RECOMPUTE_SELECTIVE;
    eval_ok(&m, &s, &st, &selective);
    double flash_fwd = 4.0 * B * S * S * H * 0.5 / (100e12 * 0.4);
    assert_rel(selective.t_recompute_s, 2.0 * flash_fwd, 1e-12);
    assert_rel(selective.mem_activations_gib, none.mem_activations_gib, 1e-15);
    assert_true(selective.time_per_iteration_s > none.time_per_iteration_s);
}

/* TP = 2 inside a node, without and with sequence parallelism, L = 2, b = 2.
 * Message B = T h 2 bytes = 2097152; NVLink 240e9 B/s, 2 us.
 *   all-reduce 2 (1/2) B / bw + 2 lat = 8.738e-6 + 4e-6 s; all-gather = reduce-scatter =
 *   (1/2) B / bw + lat.
 * Without SP (Shoeybi et al. 2019 Fig. 3): 2 all-reduces forward on the critical path, 2 backward
 * overlapping the column-parallel GEMMs (QKV and FC1, forward time
 * 2 T h (3h/2 + 4h/2) / (peak eff) = 1.503e-4 s > 2 all-reduces), so only their interference
 * OVERLAP_INTERFERENCE = 0.25 (perf*.c) of the hidden time shows: per layer 2 ar + 0.25 * 2 ar.
 * With SP (Korthikanti Sec. 4.2.2): forward 2 (ag + rs); backward 2 ag exposed; 2 (ag + rs)
 * overlapping twice the column GEMMs: per layer 2 (ag + rs) + 2 ag + 0.25 * 2 (ag + rs). */
static void test_tp_comm_times(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    double bytes = S * B * H * 2.0, bw = 300e9 * 0.8, lat = 2e-6;
    double ar = 2.0 * 0.5 * bytes / bw + 2.0 * lat;
    double ag = 0.5 * bytes / bw + lat;
    double col = 2.0 * S * B * H * (3.0 * H / 2.0 + 4.0 * H / 2.0) / (100e12 * 0.5);
    assert_true(2.0 * ar < col && 2.0 * (2.0 * ag) < 2.0 * col);

    cdse_strategy st = strat(2, 2, 1, 2, 2);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_tp_comm_s, 2.0 * (2.0 * ar + 0.25 * 2.0 * ar), 1e-12);

    st.sequence_parallel = true;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_tp_comm_s, 2.0 * (2.0 * (ag + ag) + 2.0 * ag + 0.25 * 2.0 * (ag + ag)), 1e-12);
}

/* One GPT layer with t = 2 (Shoeybi et al. 2019: QKV and FC1 column-parallel, projection and FC2
 * row-parallel, heads split), b = 2, T = 1024 tokens, on NVLink (240e9 B/s, 2 us):
 *   GEMMs: each of the four has a t-th of the FLOPs, all still compute-bound (the smallest,
 *   projection 1024 x 1024 x 512: 1073741824 FLOP -> 2.147e-5 s vs 4194304 B -> 4.19e-6 s):
 *   linear 24 T h^2 / t / 5e13;
 *   attention core per rank, batch b a/t = 16 of 512 x 512 x 64: 536870912 FLOP -> 1.0737e-5 s vs
 *   16 (2 * 32768 + 262144) 2 = 10485760 B -> 1.0486e-5 s: compute; 4 b s^2 h / t / 5e13;
 *   scores b (a/t) s^2 = 4194304, 9 B forward, 11 B backward;
 *   element-wise: without SP the norms and residual adds run on all h (22 h B per token), GeLU on
 *   4h/t (4 B): T (22 h + 8 h) B; with SP the first part is split: T (22 h / 2 + 8 h) B.
 *   All-reduce of T h 2 = 2097152 B over 2 ranks: ar = 2 (1/2) 2097152 / 240e9 + 2 * 2e-6;
 *   all-gather = reduce-scatter = ag = (1/2) 2097152 / 240e9 + 2e-6.
 *   The column-parallel forward GEMMs (QKV + FC1) take 2 T h (3h/2 + 2h) / 5e13 = 1.503e-4 s,
 *   more than the backward collectives that overlap them.
 * Forward as a per-layer measurement sees it: compute + 2 ar (no SP) or + 2 (ag + rs) (SP).
 * Backward: 2 x GEMMs + attention backward + 1.5 x element-wise, plus 0.25 of the hidden
 * all-reduces (no SP), or the 2 exposed all-gathers plus 0.25 of the hidden 2 (ag + rs) (SP). */
static void test_layer_times_tp(void **state)
{
    (void)state;
    cdse_model m = gpt(1);
    cdse_system s = sys();
    double peak_eff = 100e12 * 0.5, hbm = 1e12, T = S * B, t = 2.0;
    double linear = 24.0 * T * H * H / t / peak_eff;
    double attn_gemm = 4.0 * B * S * S * H / t / peak_eff;
    double scores = B * (A / t) * S * S;
    assert_rel(scores, 4194304.0, 1e-15);
    double msg = T * H * 2.0, bw = 240e9, lat = 2e-6;
    double ar = 2.0 * 0.5 * msg / bw + 2.0 * lat;
    double ag = 0.5 * msg / bw + lat;

    double ew = T * (22.0 * H + 8.0 * H) / hbm;
    cdse_strategy st = strat(2, 2, 1, 2, 2);
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, linear + attn_gemm + scores * 9.0 / hbm + ew + 2.0 * ar, 1e-12);
    assert_rel(bwd,
               2.0 * linear + 2.0 * attn_gemm + scores * 11.0 / hbm + 1.5 * ew + 0.25 * 2.0 * ar,
               1e-12);

    /* Full recomputation: the backward pass first repeats the forward pass with its two
     * all-reduces (Korthikanti et al. 2022 Sec. 5; Megatron's checkpointed layer reruns its
     * forward, collectives included). */
    st.recompute = CDSE_RECOMPUTE_FULL;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    double layer_fwd = linear + attn_gemm + scores * 9.0 / hbm + ew;
    assert_rel(fwd, layer_fwd + 2.0 * ar, 1e-12);
    assert_rel(bwd,
               layer_fwd + 2.0 * ar + 2.0 * linear + 2.0 * attn_gemm + scores * 11.0 / hbm +
                   1.5 * ew + 0.25 * 2.0 * ar,
               1e-12);
    st.recompute = CDSE_RECOMPUTE_NONE;

    double ew_sp = T * (22.0 * H / t + 8.0 * H) / hbm;
    st.sequence_parallel = true;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, linear + attn_gemm + scores * 9.0 / hbm + ew_sp + 2.0 * (ag + ag), 1e-12);
    assert_rel(bwd,
               2.0 * linear + 2.0 * attn_gemm + scores * 11.0 / hbm + 1.5 * ew_sp + 2.0 * ag +
                   0.25 * 2.0 * (ag + ag),
               1e-12);
}

/* TP communication overlap (Transformer Engine userbuffers): all TP collectives of the layer,
 * 2 ar forward + 2 ar backward, pipelined behind its linear GEMMs (forward + backward = 3 x the
 * forward linear time, 3 * 24 T h^2 / 2 / 5e13 = 7.7e-4 s > 4 ar = 5.1e-5 s): only the
 * interference 0.25 * 4 ar = ar shows per layer; 2 layers: 2 ar. */
static void test_tp_comm_overlap(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(2, 2, 1, 2, 2);
    st.tp_comm_overlap = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double ar = 2.0 * 0.5 * (S * B * H * 2.0) / 240e9 + 2.0 * 2e-6;
    assert_true(4.0 * ar < 3.0 * 24.0 * S * B * H * H / 2.0 / 5e13);
    assert_rel(r.t_tp_comm_s, 2.0 * 0.25 * 4.0 * ar, 1e-12);
}

/* PyTorch's async TP (stack key async_tp; torch/distributed/_symmetric_memory/__init__.py,
 * _pipelined_multi_all_gather_and_consume and _pipelined_produce_and_all2all at pytorch/pytorch
 * 006b161f), one GPT layer with t = 4 and SP in one node, b = 2, T = 1024 tokens, h = 1024:
 *   GEMM efficiency linear in log10(FLOPs) from 0.25 at 1e8 to 0.5 at 1e10 (async_eff below),
 *   100 TFLOP/s; forward GEMMs per rank (2 M N K): QKV 2 T (3h/4) h, projection 2 T h (h/4),
 *   FC1 and FC2 2 T (4h/4) h; all compute-bound (the smallest piece, the projection's
 *   512 x 1024 x 256: 2.7e8 FLOP -> 7.6e-6 s against 1.8e6 B -> 1.8e-6 s at 1000 GB/s).
 *   Split: t = 4 pieces on two streams, costed as t / 2 = 2 GEMMs of T / 2 rows: per GEMM of f
 *   FLOPs 2 (f / 2) / (1e14 eff(f / 2)) - f / (1e14 eff(f)); forward and the backward's
 *   data-gradient GEMMs: twice.
 *   Fixed (S = T h 2 B = 2097152 B, barrier = the NVLink latency 2 us, HBM 1e12 B/s): per fused
 *   all-gather 3 barriers + the local shard's copy 2 S / 4; per fused reduce-scatter 2 barriers
 *   + the sum of 4 partials, S (1 + 1/4) read and written; forward 2 + 2 of them, backward
 *   4 all-gathers + 2 reduce-scatters.
 *   Transfers: ag = rs = (3/4) S / 240e9 + 3 x 2 us each; forward 4 ag, backward 6 ag, both
 *   below 3/4 of their pass's GEMMs (checked), so hidden whole, and on the copy engines at no
 *   cost to the GEMMs. Two layers: 2 x (fixed + split). */
static double async_eff(double f)
{
    return 0.25 + 0.25 * (log10(f) - 8.0) / 2.0;
}

static double split_extra(double f)
{
    return 2.0 * (f / 2.0) / (1e14 * async_eff(f / 2.0)) - f / (1e14 * async_eff(f));
}

static void test_async_tp(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    s.gemm_eff.flops[0] = 1e8;
    s.gemm_eff.eff[0] = 0.25;
    s.gemm_eff.flops[1] = 1e10;
    s.gemm_eff.eff[1] = 0.5;
    cdse_strategy st = strat(4, 4, 1, 2, 2);
    st.sequence_parallel = true;
    st.tp_comm_overlap = true;
    bare.async_tp = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);

    double T = S * B, sb = T * H * 2.0, hbm = 1e12, barrier = 2e-6;
    double qkv = 2.0 * T * (3.0 * H / 4.0) * H, proj = 2.0 * T * H * (H / 4.0);
    double fc = 2.0 * T * H * H;
    double linear = qkv / (1e14 * async_eff(qkv)) + proj / (1e14 * async_eff(proj)) +
                    2.0 * fc / (1e14 * async_eff(fc));
    double ag = 0.75 * sb / 240e9 + 3.0 * barrier;
    assert_true(4.0 * ag < 0.75 * linear && 6.0 * ag < 0.75 * 2.0 * linear);
    double split = split_extra(qkv) + split_extra(proj) + 2.0 * split_extra(fc);
    assert_true(split > 0.0);
    double ag_fixed = 3.0 * barrier + 2.0 * sb / 4.0 / hbm;
    double rs_fixed = 2.0 * barrier + sb * 1.25 / hbm;
    double layer =
        (2.0 * ag_fixed + 2.0 * rs_fixed) + (4.0 * ag_fixed + 2.0 * rs_fixed) + 2.0 * split;
    assert_rel(r.t_tp_comm_s, 2.0 * layer, 1e-9);

    /* The same with the userbuffers form (async_tp false): 0.25 of the 10 ag shows per layer. */
    bare.async_tp = false;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_tp_comm_s, 2.0 * 0.25 * 10.0 * ag, 1e-9);

    /* NVLink at 10 GB/s: the transfers outlast the 3/4 of the GEMMs that the t - 1 copies pace
     * (the first piece of each fused GEMM has none), which hides 3/4 of the pass's linear time
     * and no more: forward 4 ag - 0.75 linear, backward 6 ag - 0.75 x 2 linear exposed. */
    s.level[0].bandwidth_gbs = 10.0;
    s.level[0].efficiency = 1.0;
    bare.async_tp = true;
    eval_ok(&m, &s, &st, &r);
    double slow = 0.75 * sb / 10e9 + 3.0 * barrier;
    assert_true(4.0 * slow > 0.75 * linear);
    layer += (4.0 * slow - 0.75 * linear) + (6.0 * slow - 0.75 * 2.0 * linear);
    assert_rel(r.t_tp_comm_s, 2.0 * layer, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_layer_times),
        cmocka_unit_test(test_mfu_ceiling),
        cmocka_unit_test(test_recompute_times),
        cmocka_unit_test(test_selective_recompute_with_flash),
        cmocka_unit_test(test_uneven_pipeline_split),
        cmocka_unit_test(test_placement_moves_tp_across_nodes),
        cmocka_unit_test(test_tp_comm_times),
        cmocka_unit_test(test_layer_times_tp),
        cmocka_unit_test(test_tp_comm_overlap),
        cmocka_unit_test(test_async_tp),
        cmocka_unit_test(test_recompute_layers_memory),
        cmocka_unit_test(test_recompute_layers_times),
        cmocka_unit_test(test_recompute_layers_floor),
        cmocka_unit_test(test_recompute_layers_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
