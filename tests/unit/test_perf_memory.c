/* The evaluator (src/model/perf*.c) against hand calculations: cdse_eff_lookup, activation memory
 * (TP, SP, recomputation, CP, pipeline stages), ZeRO state memory and stage parameters. Split from
 * test_perf.c (issue 28); the shared fixtures and the list of sources are in perf_fixtures.h. */
#include "perf_fixtures.h"

/* ---- cdse_eff_lookup: linear in log10(flops), clamped ---------------------------------- */

/* Points (1e9, 0.2), (1e11, 0.6), (1e13, 0.8). */
static void test_eff_lookup(void **state)
{
    (void)state;
    cdse_eff_table t;
    memset(&t, 0, sizeof t);
    t.n = 3;
    t.flops[0] = 1e9;
    t.eff[0] = 0.2;
    t.flops[1] = 1e11;
    t.eff[1] = 0.6;
    t.flops[2] = 1e13;
    t.eff[2] = 0.8;
    assert_rel(cdse_eff_lookup(&t, 1e8), 0.2, 1e-15);  /* clamped below */
    assert_rel(cdse_eff_lookup(&t, 1e9), 0.2, 1e-15);  /* at a point */
    assert_rel(cdse_eff_lookup(&t, 1e10), 0.4, 1e-12); /* log-midpoint of the first interval */
    assert_rel(cdse_eff_lookup(&t, 1e11), 0.6, 1e-12);
    assert_rel(cdse_eff_lookup(&t, 1e12), 0.7, 1e-12);
    assert_rel(cdse_eff_lookup(&t, 1e13), 0.8, 1e-15);
    assert_rel(cdse_eff_lookup(&t, 1e16), 0.8, 1e-15); /* clamped above */
    /* 3e10: x = log10(3e10) = 10.4771; w = (x - 9) / 2 = 0.73856; 0.2 + 0.4 w = 0.49542. */
    assert_rel(cdse_eff_lookup(&t, 3e10), 0.2 + 0.4 * (log10(3.0) + 1.0) / 2.0, 1e-12);
    /* 10^9.5 = 3.16e9: a quarter of the way through the first interval in log: 0.3. */
    assert_rel(cdse_eff_lookup(&t, pow(10.0, 9.5)), 0.3, 1e-12);
    /* An empty table means efficiency 1. */
    t.n = 0;
    assert_rel(cdse_eff_lookup(&t, 1e12), 1.0, 1e-15);
}

/* ---- Activation memory, Korthikanti et al. 2022 Table 2 -------------------------------- */

/* The activations kept; `buffer` (when not NULL) receives the runtime memory, which with the
 * bare stack is the layer recomputation rebuilds during its backward pass. */
static double act_buffer_gib(int layers, int tp, bool sp, int recompute, double *buffer)
{
    cdse_model m = gpt(layers);
    cdse_system s = sys();
    cdse_strategy st = strat(tp, tp, 1, 2, 2);
    st.sequence_parallel = sp;
    st.recompute = recompute;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 1);
    if (buffer != NULL)
        *buffer = r.mem_runtime_gib;
    return r.mem_activations_gib;
}

static double act_gib(int layers, int tp, bool sp, int recompute)
{
    return act_buffer_gib(layers, tp, sp, recompute, NULL);
}

/* No parallelism: s b h (34 + 5 a s / h) per layer. 4 layers:
 * 4 * 1048576 * 74 = 310378496 B, + logits 4 * 512 * 2 * 4096 = 16777216 B. */
static void test_activations_no_parallelism(void **state)
{
    (void)state;
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    double expected = (4.0 * per_layer + logits_bytes(1.0)) / GIB;
    assert_rel(act_gib(4, 1, false, CDSE_RECOMPUTE_NONE), expected, 1e-12);
    assert_rel(act_gib(4, 1, false, CDSE_RECOMPUTE_NONE), (310378496.0 + 16777216.0) / GIB, 1e-12);
}

/* Tensor parallelism t = 4: s b h (10 + 24/t + 5 a s / (h t)) per layer. */
static void test_activations_tp(void **state)
{
    (void)state;
    double t = 4.0;
    double per_layer = SBH * (10.0 + 24.0 / t + 5.0 * A * S / (H * t));
    double expected = (4.0 * per_layer + logits_bytes(t)) / GIB;
    assert_rel(act_gib(4, 4, false, CDSE_RECOMPUTE_NONE), expected, 1e-12);
}

/* Tensor + sequence parallelism: s b h / t (34 + 5 a s / h). */
static void test_activations_tp_sp(void **state)
{
    (void)state;
    double t = 4.0;
    double per_layer = SBH / t * (34.0 + 5.0 * A * S / H);
    double expected = (4.0 * per_layer + logits_bytes(t)) / GIB;
    assert_rel(act_gib(4, 4, true, CDSE_RECOMPUTE_NONE), expected, 1e-12);
}

/* Tensor parallelism + selective recomputation: s b h (10 + 24/t) kept per layer, and during a
 * layer's backward pass the attention core it recomputed, b a/t s^2 x 5 B (softmax output 2 B,
 * dropout mask 1 B and output 2 B; Korthikanti Table 2) = s b h x 5 a s / (h t), live once: a
 * transient of the backward pass, counted with the runtime memory (issue 31 M8: it was left
 * out). */
static void test_activations_tp_selective(void **state)
{
    (void)state;
    double t = 4.0;
    double per_layer = SBH * (10.0 + 24.0 / t);
    double core = SBH * 5.0 * A * S / (H * t);
    double expected = (4.0 * per_layer + logits_bytes(t)) / GIB;
    double buffer;
    assert_rel(act_buffer_gib(4, 4, false, CDSE_RECOMPUTE_SELECTIVE, &buffer), expected, 1e-12);
    assert_rel(buffer, core / GIB, 1e-12);
}

/* Tensor + sequence parallelism + selective recomputation: 34 s b h / t, and the recomputed
 * attention core of one layer, s b h x 5 a s / (h t), as above. */
static void test_activations_tp_sp_selective(void **state)
{
    (void)state;
    double t = 8.0;
    double per_layer = 34.0 * SBH / t;
    double core = SBH * 5.0 * A * S / (H * t);
    double expected = (4.0 * per_layer + logits_bytes(t)) / GIB;
    double buffer;
    assert_rel(act_buffer_gib(4, 8, true, CDSE_RECOMPUTE_SELECTIVE, &buffer), expected, 1e-12);
    assert_rel(buffer, core / GIB, 1e-12);
}

/* Full recomputation: only the layer input, 2 s b h per layer (Korthikanti Table 2), plus the
 * logits; the one layer being recomputed rebuilds s b h (34 + 5 a s / h) but its checkpointed
 * input, s b h (34 + 5 a s / h - 2), a transient of the backward pass (runtime memory). */
static void test_activations_full_recompute(void **state)
{
    (void)state;
    double buffer;
    double expected = (4.0 * 2.0 * SBH + logits_bytes(1.0)) / GIB;
    assert_rel(act_buffer_gib(4, 1, false, CDSE_RECOMPUTE_FULL, &buffer), expected, 1e-12);
    assert_rel(buffer, SBH * (34.0 + 5.0 * A * S / H - 2.0) / GIB, 1e-12);
    /* With TP + SP the stored input is split along the sequence (Korthikanti Sec. 4.2.2): 2 s b h
     * / t per layer, and the recomputed layer holds s b h / t (34 + 5 a s / h) with its input. */
    double t = 4.0;
    double sp = (4.0 * 2.0 * SBH / t + logits_bytes(t)) / GIB;
    assert_rel(act_buffer_gib(4, 4, true, CDSE_RECOMPUTE_FULL, &buffer), sp, 1e-12);
    assert_rel(buffer, SBH / t * (34.0 + 5.0 * A * S / H - 2.0) / GIB, 1e-12);
}

/* Flash attention keeps no s x s scores, only an fp32 log-sum-exp per query row and head:
 * (34 s b h + 4 b a s) per layer without TP (Dao et al. 2022, "FlashAttention", Sec. 3.1: the
 * backward pass needs the output and the softmax statistics). */
static void test_activations_flash(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.flash_attention = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double expected = (4.0 * (34.0 * SBH + 4.0 * B * A * S) + logits_bytes(1.0)) / GIB;
    assert_rel(r.mem_activations_gib, expected, 1e-12);
}

/* Context parallelism cp = 2 splits the sequence: each rank keeps Korthikanti's per-layer
 * activations for its s / cp = 256 tokens, with the scores of its queries against the whole
 * sequence (b a (s/cp) s, 5 B each): (s/cp) b h (34 + 5 a s / h) per layer, and its share of the
 * fp32 logits 4 (s/cp) b V. */
static void test_activations_cp(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(2, 1, 1, 2, 2);
    st.cp = 2;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double s_local = S / 2.0;
    double per_layer = s_local * B * H * (34.0 + 5.0 * A * S / H);
    double expected = (4.0 * per_layer + 4.0 * s_local * B * V) / GIB;
    assert_rel(r.mem_activations_gib, expected, 1e-12);
}

/* A Llama-style layer (no dropout, RMSNorm, SwiGLU, GQA), Korthikanti's accounting generalized:
 * kept on every TP rank: two norm inputs, QKV input, FC1 input: 4 * 2 s b h; split by TP:
 * Q, K, V 2 s b (q + 2 kv) / t, projection input 2 s b q / t, gate and up outputs and the SwiGLU
 * output 3 * 2 s b ffn / t; softmax output 2 b a s^2 / t (no dropout mask or output).
 * h = 1024, a = 16, kv heads 4 (kv = 256), ffn 2816, s = 512, b = 2, t = 4, V = 4096, untied:
 *   s b = 1024; 8 * 1024 * 1024 = 8388608; 2 * 1024 * (1024 + 512) / 4 = 786432;
 *   2 * 1024 * 1024 / 4 = 524288; 6 * 1024 * 2816 / 4 = 4325376; 2 * 2 * 16 * 512^2 / 4 =
 *   4194304; per layer 18219008; 2 layers 36438016; + logits 4 * 1024 * 4096 / 4 = 4194304. */
static void test_activations_llama_gqa(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    m.gated_mlp = true;
    m.tied_embeddings = false;
    m.kv_heads = 4;
    m.ffn = 2816;
    cdse_system s = sys();
    cdse_strategy st = strat(4, 4, 1, 2, 2);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double sb = S * B, t = 4.0, q = 1024.0, kv = 256.0, ffn = 2816.0;
    double per_layer = 8.0 * sb * H + 2.0 * sb * (q + 2.0 * kv) / t + 2.0 * sb * q / t +
                       6.0 * sb * ffn / t + 2.0 * B * A * S * S / t;
    assert_rel(per_layer, 18219008.0, 1e-15); /* the arithmetic above */
    assert_rel(r.mem_activations_gib, (2.0 * per_layer + logits_bytes(t)) / GIB, 1e-12);
}

/* 1F1B, p = 4, 8 layers (2 per stage), m = 8 micro-batches (global batch 16 of b = 2): the first
 * stage holds min(p, m) = 4 micro-batches of 2 layers; no logits on the first stage. */
static void test_activations_pipeline_1f1b(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 8);
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    assert_rel(r.mem_activations_gib, 4.0 * 2.0 * per_layer / GIB, 1e-12);
    /* m = 2 < p: only 2 micro-batches are ever in flight. */
    st.global_batch = 4;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 2);
    assert_rel(r.mem_activations_gib, 2.0 * 2.0 * per_layer / GIB, 1e-12);
}

/* Interleaved, p = 4, v = 2, m = 8: 4 micro-batches x (1 + (p-1)/(p v)) = 4 * 1.375 = 5.5 of
 * L/p = 2 layers each: 11 layers' worth. */
static void test_activations_pipeline_interleaved(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    st.vpp = 2;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double p = 4.0, v = 2.0;
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    double expected = p * (1.0 + (p - 1.0) / (p * v)) * (8.0 / p) * per_layer / GIB;
    assert_rel(r.mem_activations_gib, expected, 1e-12);
    assert_rel(r.mem_activations_gib, 11.0 * per_layer / GIB, 1e-12);
}

/* Interleaved, p = 4, v = 2, m = 4 = p: Megatron-Core's warm-up on rank 0,
 * 2 (p - 1) + (v - 1) p = 10 passes, covers the m v = 8 passes of the iteration
 * (get_pp_rank_microbatches: are_all_microbatches_in_warmup), so rank 0 runs every forward first
 * and holds all 8 passes of L / (p v) = 1 layer: 8 layers' worth, not
 * 4 x (1 + 3/8) x 2 = 11 of Korthikanti's factor, which assumes m >= p + (p - 1) / v. The last
 * rank holds (v - 1) p + 1 = 5 passes and the logits 4 s b V = 16777216 B (less than a layer). */
static void test_activations_interleaved_all_warmup(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 8);
    st.vpp = 2;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 4);
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    assert_rel(per_layer, 77594624.0, 1e-15); /* 1048576 x (34 + 40) */
    assert_rel(r.mem_activations_gib, 8.0 * per_layer / GIB, 1e-12);
}

/* The stage that peaks under a split that counts the embedding and the output layer as one layer
 * each (pipeline_split_embedding; Dubey et al. 2024 Sec. 3.3.2). Six layers, p = 4, m = 8:
 * 1F1B (v = 1): rank 0 holds min(p, m) = 4 micro-batches of its 1 layer (+ the embedding) = 4
 * layers' worth; rank 1 holds p - 1 = 3 micro-batches of 2 layers = 6; rank 3 one micro-batch of
 * 1 layer and the logits 16777216 B. Rank 1 peaks: 6 layers (without the key every stage has
 * ceil(6 / 4) = 2 layers and rank 0 peaks with 4 x 2 = 8).
 * Interleaved (v = 2): 8 units over 8 chunks of one unit; rank 0 holds 2 x 3 + 4 + 1 = 11 passes,
 * 7 of them on its embedding-only chunk 0 (micro-batches 0-3, then 4-6 of the second group of
 * p = 4), 4 on chunk 1 (1 layer): 4 layers' worth; rank 1 holds 2 x 2 + 4 + 1 = 9 passes of one
 * layer: 9; rank 3 (v - 1) p + 1 = 5 passes, at most 5 layers and the logits. Rank 1 peaks: 9
 * layers (11 without the key, test_activations_pipeline_interleaved). A step-by-step walk of the
 * schedule's order (get_schedule_table) gives the same peaks: 4, 6, 4, 1 and 4, 9, 7, 5. */
static void test_activations_split_peak_stage(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    double per_layer = SBH * (34.0 + 5.0 * A * S / H);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, 8.0 * per_layer / GIB, 1e-12);
    bare.pipeline_split_embedding = true;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, 6.0 * per_layer / GIB, 1e-12);
    st.vpp = 2;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, 9.0 * per_layer / GIB, 1e-12);
    bare.pipeline_split_embedding = false;
}

/* The memory of the stage that peaks under the embedding-aware split: each rank's state with its
 * own activations. The GPT above (t = 1, no ZeRO, 2 + 4 + 12 = 18 B per parameter) with 6 layers
 * on p = 4 stages, m = 8 (test_activations_split_peak_stage): a layer holds
 * 12 h^2 + 13 h = 12596224 parameters (test_zero0's count at t = 1), the embedding
 * V h + s h = 4718592, the last stage's output layer (the tied embedding's copy) and final
 * LayerNorm V h + 2 h = 4196352; a layer's activations 77594624 B.
 *   rank 0: (1 layer + embedding) x 18 + 4 layers' activations = 622045184 B;
 *   rank 1: 2 layers x 18 + 6 layers' activations = 919031808 B (the peak: weights 2 x 2 x
 *   12596224 B, gradients 4 x, optimizer 12 x);
 *   rank 3: (1 layer + output layer) x 18 + 1 layer's activations + logits 16777216 = 396638208.
 * With V = 65536 the embedding (67633152) and the output layer (67110912) outweigh five layers
 * and the logits are 4 s b V = 268435456 B: rank 0 1754507264 B, rank 1 919031808, rank 3
 * (12596224 + 67110912) x 18 + 77594624 + 268435456 = 1780758528 B, the peak: weights
 * 2 x 79707136 B, activations 346030080 B. */
static void test_split_peak_stage_state(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    bare.pipeline_split_embedding = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double layer = 12596224.0, act_layer = 77594624.0;
    assert_rel(r.mem_weights_gib, 2.0 * 2.0 * layer / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, 4.0 * 2.0 * layer / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, 12.0 * 2.0 * layer / GIB, 1e-12);
    assert_rel(r.mem_activations_gib, 6.0 * act_layer / GIB, 1e-12);
    assert_rel(r.mem_total_gib, 919031808.0 / GIB + 1.5, 1e-12);
    m.vocab = 65536;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 2.0 * 79707136.0 / GIB, 1e-12);
    assert_rel(r.mem_activations_gib, 346030080.0 / GIB, 1e-12);
    assert_rel(r.mem_total_gib, 1780758528.0 / GIB + 1.5, 1e-12);
    bare.pipeline_split_embedding = false;
}

/* ---- Weights, gradients and optimizer state per ZeRO stage ----------------------------- */

static void zero_case(int zero, double weight_b, double grad_b, double opt_b)
{
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 2, 2, 1, 16);
    st.zero = zero;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 4);
    assert_rel(r.mem_weights_gib, STAGE_PARAMS * weight_b / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, STAGE_PARAMS * grad_b / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, STAGE_PARAMS * opt_b / GIB, 1e-12);
    assert_rel(r.mem_other_gib, 1.5, 1e-15);
    assert_rel(r.mem_total_gib,
               STAGE_PARAMS * (weight_b + grad_b + opt_b) / GIB + r.mem_activations_gib + 1.5,
               1e-12);
    /* The embedding's share: 2621440 parameters at the same bytes. */
    assert_rel(cdse_embedding_state_gib(&m, &st), EMBED_PARAMS * (weight_b + grad_b + opt_b) / GIB,
               1e-12);
}

/* ZeRO 0: 2 + 4 + 12 = 18 bytes per parameter. */
static void test_zero0(void **state)
{
    (void)state;
    double h = H, t = 2.0; /* the arithmetic of STAGE_PARAMS */
    assert_rel(2.0 * (12.0 * h * h / t + 7.0 * h / t + 6.0 * h) + V * h / t + S * h, STAGE_PARAMS,
               1e-15);
    zero_case(0, 2.0, 4.0, 12.0);
}

/* ZeRO-1 (distributed optimizer): 2 + 4 + 12/d, d = 4. */
static void test_zero1(void **state)
{
    (void)state;
    zero_case(1, 2.0, 4.0, 12.0 / 4.0);
}

/* ZeRO-2: 2 + (4 + 12)/d. */
static void test_zero2(void **state)
{
    (void)state;
    zero_case(2, 2.0, 4.0 / 4.0, 12.0 / 4.0);
}

/* ZeRO-3: 18/d. */
static void test_zero3(void **state)
{
    (void)state;
    zero_case(3, 2.0 / 4.0, 4.0 / 4.0, 12.0 / 4.0);
}

/* ZeRO shards over the d * cp ranks that hold the same weights: d = 2, cp = 2 shard 4 ways.
 * Context parallelism does not split weights: the stage holds the same 15223808 parameters. */
static void test_zero1_with_cp(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 2, 2, 1, 8);
    st.cp = 2;
    st.zero = 1;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 2);
    assert_rel(r.mem_optimizer_gib, STAGE_PARAMS * 12.0 / 4.0 / GIB, 1e-12);
    assert_rel(r.mem_weights_gib, STAGE_PARAMS * 2.0 / GIB, 1e-12);
}

/* A Llama-style model with fewer key/value heads than TP ranks: 2 kv heads on t = 4, each rank
 * keeps one kv head (replicated, Megatron-Core). h = 1024, q = 1024, head 64, ffn 2816, V 4096,
 * untied, p = 2, L = 4, d = 2 (16 GPUs), per GPU of the first stage:
 *   attention h q/t + 2 h * 64 + q h/t = 262144 + 131072 + 262144 = 655360;
 *   MLP 3 h ffn / t = 2162688; RMSNorms 2h = 2048; layer 2820096; two layers 5640192;
 *   word embedding V h / t = 1048576 (no positions: RoPE; the untied output layer is on the
 *   last stage); first stage 6688768. */
static void test_stage_params_llama_gqa(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    m.gated_mlp = true;
    m.tied_embeddings = false;
    m.kv_heads = 2;
    m.ffn = 2816;
    cdse_system s = sys();
    cdse_strategy st = strat(16, 4, 2, 1, 16);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 6688768.0 * 2.0 / GIB, 1e-12);
    assert_rel(cdse_embedding_state_gib(&m, &st), 1048576.0 * 18.0 / GIB, 1e-12);
}

/* With p = 1 the single stage of the Llama-style model above (4 layers, t = 4, d = 2) also holds
 * the untied output layer (another V h / t = 1048576) and the final RMSNorm (h = 1024):
 * 4 * 2820096 + 2 * 1048576 + 1024 = 11280384 + 2097152 + 1024 = 13378560 parameters. */
static void test_single_stage_llama_untied(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    m.gated_mlp = true;
    m.tied_embeddings = false;
    m.kv_heads = 2;
    m.ffn = 2816;
    cdse_system s = sys();
    cdse_strategy st = strat(8, 4, 1, 1, 2);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 13378560.0 * 2.0 / GIB, 1e-9);
}

/* With t = p = 1 the single GPU holds the whole model: Narayanan et al. 2021 Sec. 5.1,
 * 12 L h^2 + 13 L h + (V + s) h, plus the final LayerNorm 2h (the same total as
 * cdse_model_params, worked out in test_workload.c):
 *   L = 4: 12*4*1024^2 + 13*4*1024 + (4096 + 512)*1024 + 2*1024
 *   = 50331648 + 53248 + 4718592 + 2048 = 55105536 parameters. */
static void test_single_gpu_holds_whole_model(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 1);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 55105536.0 * 2.0 / GIB, 1e-9);
    assert_rel(r.mem_gradients_gib, 55105536.0 * 4.0 / GIB, 1e-9);
    assert_rel(r.mem_optimizer_gib, 55105536.0 * 12.0 / GIB, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eff_lookup),
        cmocka_unit_test(test_activations_no_parallelism),
        cmocka_unit_test(test_activations_tp),
        cmocka_unit_test(test_activations_tp_sp),
        cmocka_unit_test(test_activations_tp_selective),
        cmocka_unit_test(test_activations_tp_sp_selective),
        cmocka_unit_test(test_activations_full_recompute),
        cmocka_unit_test(test_activations_flash),
        cmocka_unit_test(test_activations_cp),
        cmocka_unit_test(test_activations_llama_gqa),
        cmocka_unit_test(test_activations_pipeline_1f1b),
        cmocka_unit_test(test_activations_pipeline_interleaved),
        cmocka_unit_test(test_activations_interleaved_all_warmup),
        cmocka_unit_test(test_activations_split_peak_stage),
        cmocka_unit_test(test_split_peak_stage_state),
        cmocka_unit_test(test_zero0),
        cmocka_unit_test(test_zero1),
        cmocka_unit_test(test_zero2),
        cmocka_unit_test(test_zero3),
        cmocka_unit_test(test_zero1_with_cp),
        cmocka_unit_test(test_stage_params_llama_gqa),
        cmocka_unit_test(test_single_stage_llama_untied),
        cmocka_unit_test(test_single_gpu_holds_whole_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
