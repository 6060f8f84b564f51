/* The evaluator (src/model/perf*.c, cdse_eff_lookup of src/model/hardware.c) against hand
 * calculations.
 *
 * Models, systems and strategies are filled by hand here (no files are loaded). Each expected
 * value is written from the published formula it comes from, never produced by the code under
 * test. Sources:
 *   - Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
 *     (arXiv 2205.05198): Table 2 (activation bytes per layer with TP, SP, selective and full
 *     recomputation), Sec. 4.2.3 (first pipeline stage holds p micro-batches; interleaving scales
 *     by 1 + (p-1)/(p m), m the number of interleaved stages, when the iteration has enough
 *     micro-batches), Sec. 4.3 (fp32 logits of the
 *     output layer, 4 s b v / t bytes);
 *   - Megatron-Core megatron/core/pipeline_parallel/schedules.py get_pp_rank_microbatches (warm-up
 *     passes per rank 2 (p - r - 1) + (v - 1) N, N = p by default, capped at the m v passes) and
 *     get_schedule_table (groups of N micro-batches per chunk); Dubey et al. 2024 (arXiv
 *     2407.21783) Sec. 3.3.2 (the first chunk holds only the embedding, the last only the output);
 *   - Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
 *     Megatron-LM" (SC'21): Sec. 2.2 (pipeline bubble of (p-1) micro-batch times, divided by v
 *     with interleaving), Sec. 4.1 (scatter/gather of the boundary activation over the TP ranks),
 *     eq. 3 (model FLOPs);
 *   - Rajbhandari et al. 2020, "ZeRO" (SC'20), Sec. 5 and Fig. 1: mixed-precision Adam keeps
 *     2 + 2 + 12 bytes per parameter; Megatron keeps fp32 main gradients (4 B, Korthikanti et al.
 *     2022 Sec. 5), so 2 + 4 + 12 = 18 B; ZeRO-1 shards the 12 B of optimizer state over d, ZeRO-2
 *     also the gradients, ZeRO-3 also the weights.
 * Symbols: s sequence, b micro-batch, h hidden, a heads, t tensor-parallel size, p pipeline size,
 * v virtual stages, m micro-batches per iteration, L layers, V vocabulary, d data-parallel size. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/bound.h"
#include "clusterdse/model/collective.h"
#include "clusterdse/model/perf.h"

/* Relative comparison that prints both values and the caller's line on failure. */
#define GIB CDSE_GIB

/* A GPT-style model (plain GELU MLP of 4h, biases, LayerNorm, dropout, tied embeddings):
 * h = 1024, a = 16 (head 64), s = 512, V = 4096. */
static cdse_model gpt(int layers)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test-gpt");
    m.layers = layers;
    m.hidden = 1024;
    m.heads = 16;
    m.kv_heads = 16;
    m.head_dim = 64;
    m.ffn = 4096;
    m.seq_len = 512;
    m.vocab = 4096;
    m.gated_mlp = false;
    m.tied_embeddings = true;
    return m;
}

/* 100 TFLOP/s bf16, a constant GEMM efficiency of 0.5 (two table points with the same value),
 * 1000 GB/s HBM at full efficiency, 10^4 GiB of HBM (nothing runs out of memory), 8 GPUs per node
 * on NVLink (300 GB/s, 80%, 2 us), InfiniBand between nodes (25 GB/s, 90%, 5 us). */
static cdse_system sys(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "test-sys");
    s.peak_tflops[CDSE_BF16] = 100.0;
    s.peak_tflops[CDSE_FP16] = 100.0;
    s.gemm_eff.n = 2;
    s.gemm_eff.flops[0] = 1e6;
    s.gemm_eff.eff[0] = 0.5;
    s.gemm_eff.flops[1] = 1e15;
    s.gemm_eff.eff[1] = 0.5;
    s.attention_efficiency = 0.4;
    s.hbm_gib = 1e4;
    s.hbm_bandwidth_gbs = 1000.0;
    s.hbm_efficiency = 1.0;
    s.reserved_gib = 1.5;
    s.gpus_per_node = 8;
    s.n_levels = 2;
    s.level[0].size = 8;
    s.level[0].bandwidth_gbs = 300.0;
    s.level[0].efficiency = 0.8;
    s.level[0].latency_us = 2.0;
    s.level[1].size = 0;
    s.level[1].bandwidth_gbs = 25.0;
    s.level[1].efficiency = 0.9;
    s.level[1].latency_us = 5.0;
    return s;
}

/* The same with communication made negligible: 10^9 GB/s links without latency. */
static cdse_system fast_sys(void)
{
    cdse_system s = sys();
    for (int l = 0; l < 2; l++) {
        s.level[l].bandwidth_gbs = 1e9;
        s.level[l].efficiency = 1.0;
        s.level[l].latency_us = 0.0;
    }
    return s;
}

/* The default stack (every overlap, FSDP-style ZeRO-3) with fp32 gradients, without the runtime
 * memory and host costs, which their own tests below check: the hand calculations of the other
 * mechanisms stay free of them. */
static cdse_stack bare_stack(void)
{
    cdse_stack k = cdse_stack_default;
    k.runtime_gib = 0.0;
    k.allocator_overhead = 0.0;
    k.iteration_fixed_s = 0.0;
    k.launch_s_per_layer = 0.0;
    k.cross_entropy_bytes = 52.0; /* Megatron's unfused loss (test_one_layer_times) */
    k.grad_bytes = 4.0; /* fp32 gradients: the hand calculations below count 4 B per gradient */
    k.fp8_scale_kernels = 0.0; /* current scaling's launches: test_fp8_scale_kernels.c */
    return k;
}
static cdse_stack bare;

static cdse_strategy strat(int gpus, int tp, int pp, int microbatch, int global_batch)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = gpus;
    st.tp = tp;
    st.pp = pp;
    st.cp = 1;
    st.ep = 1;
    st.vpp = 1;
    st.microbatch = microbatch;
    st.global_batch = global_batch;
    st.recompute = CDSE_RECOMPUTE_NONE;
    st.precision = CDSE_BF16;
    st.flash_attention = false;
    bare = bare_stack();
    st.stack = &bare;
    return st;
}

static void eval_ok(const cdse_model *m, const cdse_system *s, const cdse_strategy *st,
                    cdse_result *r)
{
    cdse_evaluate(m, s, st, r);
    if (r->status != CDSE_ST_OK)
        print_error("status %s\n", cdse_status_name(r->status));
    assert_int_equal(r->status, CDSE_ST_OK);
}

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

/* Common figures of the GPT above with b = 2: s b h = 512 * 2 * 1024 = 1048576, 5 a s / h =
 * 5 * 16 * 512 / 1024 = 40. With p = 1 and one micro-batch, the single stage keeps L layers of
 * activations plus the fp32 logits, 4 s b V / t bytes (Korthikanti Sec. 4.3). */
#define S   512.0
#define B   2.0
#define H   1024.0
#define A   16.0
#define V   4096.0
#define SBH (S * B * H)

static double logits_bytes(double t)
{
    return 4.0 * S * B * V / t;
}

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

/* First stage of the GPT above with L = 4, t = 2, p = 2, d = 4 (16 GPUs), per GPU:
 *   per layer: weights QKV h*3h/t + projection h*h/t + FC1 h*4h/t + FC2 4h*h/t = 12 h^2 / t;
 *   biases QKV 3h/t, FC1 4h/t (split), projection h, FC2 h (replicated); LayerNorms 2 * 2h:
 *   12 h^2/t + 7h/t + 6h = 6291456 + 3584 + 6144 = 6301184; two layers: 12602368;
 *   embedding: word V h / t = 2097152 (vocabulary-parallel), positions s h = 524288;
 *   first stage: 12602368 + 2621440 = 15223808 parameters. */
#define STAGE_PARAMS 15223808.0
#define EMBED_PARAMS 2621440.0

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

/* Interleaved pipeline, p = 4, v = 2, m = 8 in one node: m v + p - 1 = 19 chunk steps, each
 * sending the boundary activation forward and backward, 2 (2097152 / 240e9 + 2e-6) s, overlapped
 * with the next chunk's computation (Megatron-Core overlap_p2p_comm), which lasts longer (one
 * chunk of one micro-batch: (t_forward + t_backward) / (m v), checked below): 0.25 of it shows,
 * except for the p v - 1 = 7 steps of the first micro-batch's way through the pipeline and the
 * last one's way back, which wait for their transfers: 12 x 0.25 x 2 one + 7 x 2 one. */
static void test_pipeline_p2p_interleaved(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    st.vpp = 2;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double one = S * B * H * 2.0 / 240e9 + 2e-6;
    assert_true(2.0 * one < (r.t_forward_s + r.t_backward_s) / (8.0 * 2.0));
    assert_rel(r.t_pp_comm_s, 12.0 * 0.25 * 2.0 * one + 7.0 * 2.0 * one, 1e-12);
}

/* DeepSpeed's pipeline engine (stack key pipeline_lockstep; deepspeed/runtime/pipe/schedule.py
 * TrainSchedule at commit 3293cf72a, January 2022) runs at the 1F1B rate. Its steps pair a stage
 * with one neighbour only: a forward step receives the activation from and sends the previous
 * gradient to the stage before it, a backward step sends the previous activation to and receives
 * the gradient from the stage after it, all blocking (p2p.py). Hand trace for p = 2, m = 2 (f, b
 * the stage's forward and backward per micro-batch), commands in schedule order:
 *   stage 0: F0 [0, f], send act0 (met at f), F1 [f, 2f], send act1 (met at 2f + b), recv grad0,
 *            B0 [2f + b, 2f + 2b], recv grad1 (met at 3f + 2b), B1 [3f + 2b, 3f + 3b];
 *   stage 1: recv act0 (f), F0 [f, 2f], B0 [2f, 2f + b], recv act1, send grad0 (2f + b),
 *            F1 [2f + b, 3f + b], B1 [3f + b, 3f + 2b], send grad1 (3f + 2b).
 * The iteration ends at 3 (f + b) = (m + p - 1)(f + b): 1F1B's bubble (p - 1)(f + b) = f + b
 * (Narayanan et al. 2021, Sec. 2.2), not the 2 (m + p - 1) steps of the longer pass each
 * (2b over the work) that a schedule syncing with both neighbours every step would take. The
 * same holds for p = 4, m = 8 (an event simulation of the schedule's commands: 11 (f + b)).
 * f and b: t_forward_s / m and (t_backward_s + t_recompute_s) / m (no TP, CP or EP here).
 * Transfers, each one = 512 x 2 x 1024 x 2 B over NVLink (240 GB/s, 2 us), in the trace above:
 * act0, act1, grad0, grad1 each delay the iteration, 2m = 4 (Megatron's 1F1B: 2 (m + p - 1) = 6);
 * for p = 4, m = 8, 4m + 2p - 8 = 32 against 1F1B's 22 (tests/py/deepspeed_schedule.py); for
 * p = 4 and one micro-batch, its way there and back, 2 (p - 1) = 6 (4m + 2p - 8 = 4 is less). */
static void test_pipeline_lockstep(void **state)
{
    (void)state;
    cdse_model m = gpt(8);
    cdse_system s = sys();
    cdse_strategy single = strat(1, 1, 1, 2, 16); /* strat() resets the shared bare stack */
    cdse_strategy two = strat(2, 1, 2, 2, 4);
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_strategy lone = strat(4, 1, 4, 2, 2);
    cdse_result plain, lock;
    bare.pipeline_lockstep = true;
    eval_ok(&m, &s, &two, &lock);
    double f = lock.t_forward_s / 2.0, b = (lock.t_backward_s + lock.t_recompute_s) / 2.0;
    assert_true(b > f);
    assert_rel(lock.t_bubble_s, f + b, 1e-12);
    double one = 512.0 * 2.0 * 1024.0 * 2.0 / 240e9 + 2e-6;
    assert_rel(lock.t_pp_comm_s, 4.0 * one, 1e-12);
    eval_ok(&m, &s, &lone, &lock);
    assert_int_equal(lock.grad_accum, 1);
    assert_rel(lock.t_pp_comm_s, 6.0 * one, 1e-12);
    /* Odd pipelines, counted by the simulation (tests/py/deepspeed_schedule.py iteration_time
     * with and without a transfer cost, not its formula): p = 3, m = 4: 14; p = 5, m = 3: 14. */
    cdse_strategy three = strat(3, 1, 3, 2, 8), five = strat(5, 1, 5, 2, 6);
    bare.pipeline_lockstep = true; /* strat() reset it */
    eval_ok(&m, &s, &three, &lock);
    assert_int_equal(lock.grad_accum, 4);
    assert_rel(lock.t_pp_comm_s, 14.0 * one, 1e-12);
    eval_ok(&m, &s, &five, &lock);
    assert_int_equal(lock.grad_accum, 3);
    assert_rel(lock.t_pp_comm_s, 14.0 * one, 1e-12);
    eval_ok(&m, &s, &st, &lock);
    f = lock.t_forward_s / 8.0;
    b = (lock.t_backward_s + lock.t_recompute_s) / 8.0;
    assert_rel(lock.t_bubble_s, 3.0 * (f + b), 1e-12);
    assert_rel(lock.t_pp_comm_s, 32.0 * one, 1e-12);
    /* one replica: no gradient reduction, so only the transfers differ */
    bare.pipeline_lockstep = false;
    eval_ok(&m, &s, &st, &plain);
    assert_rel(plain.t_pp_comm_s, 22.0 * one, 1e-12);
    assert_rel(lock.time_per_iteration_s - plain.time_per_iteration_s, 10.0 * one, 1e-9);
    bare.pipeline_lockstep = true;
    eval_ok(&m, &s, &single, &lock);
    bare.pipeline_lockstep = false;
    eval_ok(&m, &s, &single, &plain);
    assert_rel(lock.time_per_iteration_s, plain.time_per_iteration_s, 1e-15);
}

/* DeepSpeed's pipeline engine reduces the gradients after the last step of its schedule
 * (TrainSchedule: ReduceTiedGrads, ReduceGrads, OptimizerStep): the configuration of
 * test_dp_comm_last_bucket (t = 8, p = 2, d = 2 over IB at 200 GB/s x 0.9, 32 layers and the
 * embedding per stage in fp32 gradients), whose all-reduce 2 (1/2) 4 params / 180e9 + 2 x 5e-6
 * Megatron hides but for its last bucket, shows whole. */
static void test_pipeline_lockstep_reduces_after_flush(void **state)
{
    (void)state;
    cdse_model m = gpt(64);
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 200.0;
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    bare.pipeline_lockstep = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double params = 32.0 * 1579904.0 + 1048576.0;
    double ar = 2.0 * 0.5 * params * 4.0 / (200e9 * 0.9) + 2.0 * 5e-6;
    assert_rel(r.t_dp_comm_s, ar, 1e-12);
    bare.pipeline_lockstep = false;
}

/* Gradients accumulated by a pass of their own (stack key grad_accum_bytes; DeepSpeed's
 * BF16_Optimizer.update_hp_grads after every backward pass: hp_grad.add_(lp.grad.to(fp32)), read
 * 2 + write 4 for the fp32 copy, read 4 + 4 + write 4 for the add: 18 B per parameter;
 * deepspeed/runtime/bf16_optimizer.py and pipe/engine.py _exec_backward_pass at DeepSpeed
 * 9b70ce56e, June 2022). The configuration of test_dp_comm_one_bucket (t = 8, p = 2, m = 4): the
 * stage's two layers hold 2 x 1579904 = 3159808 parameters per GPU, so each micro-batch's
 * backward pass grows by 3159808 x 18 / 1e12 s (1000 GB/s HBM): m = 4 times in the optimizer
 * term, (p - 1) = 1 time in the bubble. */
static void test_grad_accum_pass(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    cdse_result plain, accum;
    eval_ok(&m, &s, &st, &plain);
    bare.grad_accum_bytes = 18.0;
    eval_ok(&m, &s, &st, &accum);
    bare.grad_accum_bytes = 0.0;
    double pass = 3159808.0 * 18.0 / 1e12;
    assert_rel(accum.t_optimizer_s - plain.t_optimizer_s, 4.0 * pass, 1e-9);
    assert_rel(accum.t_bubble_s - plain.t_bubble_s, 1.0 * pass, 1e-9);
    assert_rel(accum.time_per_iteration_s - plain.time_per_iteration_s, 5.0 * pass, 1e-9);
}

/* A split that counts the input embedding and the output layer as one layer each (stack key
 * pipeline_split_embedding; DeepSpeed's partition_method 'type:transformer|embedding'). Six layers
 * on p = 4 stages, m = 8 micro-batches of T = 2 x 512 tokens: 6 + 2 = 8 units, 2 per stage, as
 * without the key (ceil(6 / 4) = 2). The last stage holds one layer and the output layer (the
 * logits GEMM 2 T V H = 8.6e9 FLOP, about a third of a layer's 24 T H^2 = 2.6e10): a middle stage
 * of two layers is the slowest, and no stage carries the output layer's
 * m (2 T V H / (100e12 x 0.5) + 52 T V / 1e12) forward (GEMM and loss) and m 2 (2 T V H / 5e13)
 * backward. With V = 65536 the output layer outweighs a layer (1.4e11 FLOP): the last stage is
 * the slowest, one layer (cdse_layer_times) lighter than without the key. */
static void test_pipeline_split_embedding(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    cdse_result plain, split;
    eval_ok(&m, &s, &st, &plain);
    bare.pipeline_split_embedding = true;
    eval_ok(&m, &s, &st, &split);
    double T = S * B, gemm = 2.0 * T * V * H / 5e13, loss = 52.0 * T * V / 1e12;
    assert_rel(plain.t_forward_s - split.t_forward_s, 8.0 * (gemm + loss), 1e-9);
    assert_rel(plain.t_backward_s - split.t_backward_s, 8.0 * 2.0 * gemm, 1e-9);
    /* a large vocabulary: the last stage sets the pace with one layer fewer */
    m.vocab = 65536;
    bare.pipeline_split_embedding = false;
    eval_ok(&m, &s, &st, &plain);
    bare.pipeline_split_embedding = true;
    eval_ok(&m, &s, &st, &split);
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(plain.t_forward_s - split.t_forward_s, 8.0 * fwd, 1e-9);
    assert_rel(plain.t_backward_s - split.t_backward_s, 8.0 * bwd, 1e-9);
    bare.pipeline_split_embedding = false;
}

/* The same split on p = 2 stages (issue 31): 6 + 2 = 8 units, 4 per stage, so each stage holds 3
 * layers, the first with the embedding, the last with the output layer, as 6 layers on 2 stages
 * without the key (ceil(6 / 2) = 3 and the output layer on the last). No stage holds 4 layers:
 * the passes are the same with the key and without, for the small vocabulary (the output layer
 * lighter than a layer, where a 4-layer "middle" stage was counted) and the large one. */
static void test_pipeline_split_two_stages(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    cdse_system s = sys();
    cdse_strategy st = strat(2, 1, 2, 2, 16);
    for (int vocab = 0; vocab < 2; vocab++) {
        m.vocab = vocab == 0 ? (int)V : 65536;
        cdse_result plain, split;
        bare.pipeline_split_embedding = false;
        eval_ok(&m, &s, &st, &plain);
        bare.pipeline_split_embedding = true;
        eval_ok(&m, &s, &st, &split);
        assert_rel(split.t_forward_s, plain.t_forward_s, 1e-12);
        assert_rel(split.t_backward_s, plain.t_backward_s, 1e-12);
    }
    bare.pipeline_split_embedding = false;
}

/* FP8 (Transformer Engine): the linear GEMMs run at the FP8 peak (200 TFLOP/s here) with the FP8
 * efficiency table (0.6) on 1-byte operands (all compute-bound: QKV 6442450944 FLOP -> 5.4e-5 s
 * vs 7340032 B -> 7.3e-6 s); the attention core stays in bf16 (100 TFLOP/s x 0.5); each GEMM
 * input is cast to FP8 with a transposed copy, 4 B per element of the inputs of QKV (h),
 * projection (q), FC1 (h) and FC2 (4h): T (38 h + 4 * 7 h) B of element-wise traffic. The output
 * layer stays in bf16. MFU is counted against the FP8 peak. */
static void test_fp8_layer(void **state)
{
    (void)state;
    cdse_model m = gpt(1);
    cdse_system s = sys();
    s.peak_tflops[CDSE_FP8] = 200.0;
    s.gemm_eff_fp8.n = 2;
    s.gemm_eff_fp8.flops[0] = 1e6;
    s.gemm_eff_fp8.eff[0] = 0.6;
    s.gemm_eff_fp8.flops[1] = 1e15;
    s.gemm_eff_fp8.eff[1] = 0.6;
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.precision = CDSE_FP8;
    bare.fp8_scaling = CDSE_FP8_DELAYED; /* the cast records the amax (test_fp8_current_scaling) */
    double hbm = 1e12, T = S * B;
    double linear = 24.0 * T * H * H / (200e12 * 0.6);
    double attn = 4.0 * B * S * S * H / (100e12 * 0.5) + B * A * S * S * 9.0 / hbm;
    double ew = T * (38.0 * H + 4.0 * 7.0 * H) / hbm;
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, linear + attn + ew, 1e-12);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    /* the output layer runs in bf16; the loss moves 52 B per logit (test_one_layer_times) */
    double logits = 2.0 * T * V * H / (100e12 * 0.5), loss = T * V * 52.0 / hbm;
    assert_rel(r.t_forward_s, linear + attn + ew + logits + loss, 1e-12);
    assert_rel(r.mfu, r.model_tflops_per_gpu / 200.0, 1e-12);
}

/* FP8 with per-tensor current scaling (Transformer Engine Float8CurrentScalingQuantizer,
 * TransformerEngine v2.7 csrc/quantizer.cpp quantize_impl: nvte_compute_amax reads the bf16
 * tensor, then the cast reads it again) reads 2 B more per element of every GEMM input that no
 * kernel with a fused amax writes, and of every GEMM output gradient (module/base.py
 * grad_output_preprocess). LayerNorm feeds QKV and FC1 with a fused amax (csrc/extensions/
 * normalization.cpp quantize_with_amax); the attention output (projection input) and Megatron's
 * GeLU output (FC2 input) are plain tensors. On the GPT layer (t = 1, q = kv = h, FC1 4h):
 *   forward: projection input h + FC2 input 4h = 5h per token;
 *   backward: output gradients of QKV 3h, projection h, FC1 4h, FC2 h = 9h per token.
 * On the Mixtral-style MoE layer (moe_model, t = 1, top-2, gated experts of 2048): forward
 * projection input h, FC2 inputs 2 x 2048 = 4h, FC1 inputs (the permuted routed copies, not
 * from a norm kernel) 2h = 7h; backward QKV 3h, projection h, FC1 2 x 2 x 2048 = 8h,
 * FC2 2h = 14h. T = 1024 tokens (b = 2) and 512 (b = 1), 1e12 B/s. BF16 is unaffected. */
static cdse_model moe_model(void);

static void test_fp8_current_scaling(void **state)
{
    (void)state;
    cdse_system s = sys();
    s.peak_tflops[CDSE_FP8] = 200.0;
    s.gemm_eff_fp8 = s.gemm_eff;
    double hbm = 1e12;
    struct {
        cdse_model m;
        int ep, mb;
        double fwd_h, bwd_h;
    } cases[] = {{gpt(1), 1, 2, 5.0, 9.0}, {moe_model(), 4, 1, 7.0, 14.0}};
    for (int i = 0; i < 2; i++) {
        cdse_strategy st =
            strat(cases[i].ep == 1 ? 1 : 8, 1, cases[i].ep == 1 ? 1 : 2, cases[i].mb, 16);
        st.ep = cases[i].ep;
        double T = S * cases[i].mb;
        double fwd[2][2], bwd[2][2]; /* [precision bf16, fp8][scaling delayed, current] */
        for (int p = 0; p < 2; p++)
            for (int k = 0; k < 2; k++) {
                st.precision = p ? CDSE_FP8 : CDSE_BF16;
                bare.fp8_scaling = k ? CDSE_FP8_CURRENT : CDSE_FP8_DELAYED;
                assert_int_equal(cdse_layer_times(&cases[i].m, &s, &st, &fwd[p][k], &bwd[p][k]),
                                 CDSE_ST_OK);
            }
        assert_rel(fwd[1][1] - fwd[1][0], T * cases[i].fwd_h * H * 2.0 / hbm, 1e-9);
        assert_rel(bwd[1][1] - bwd[1][0], T * cases[i].bwd_h * H * 2.0 / hbm, 1e-9);
        assert_true(fwd[0][1] == fwd[0][0] && bwd[0][1] == bwd[0][0]);
    }
}

/* FP8 memory (Transformer Engine): every linear layer keeps an FP8 copy of its weight and of the
 * transpose (1 + 1 B per parameter of the layers, 12 h^2 + 13 h per GPT layer with t = 1, i.e.
 * 2 x 12,596,224 = 25,192,448 for two layers), and saves the FP8 cast (1 B) of each GEMM input
 * instead of its bf16 original: per token and layer QKV input h and FC1 input h (1 B instead of
 * 2), FC2 input 4h (1 B instead of 2); the projection keeps its FP8 input besides the bf16
 * attention output that the fused attention's backward pass needs (+h). Against bf16:
 * -h - h - 4h + h = -5h bytes per token and layer (Korthikanti et al. 2022 Table 2 counts 34 s b h
 * in bf16 without the attention scores). One micro-batch in flight (p = 1). */
static void test_fp8_memory(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    s.peak_tflops[CDSE_FP8] = 200.0;
    s.gemm_eff_fp8 = s.gemm_eff;
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    cdse_stack k = bare_stack();
    k.fp8_param_gather = false; /* bf16 weights with FP8 copies */
    st.stack = &k;
    st.flash_attention = true;
    cdse_result bf16, fp8;
    eval_ok(&m, &s, &st, &bf16);
    st.precision = CDSE_FP8;
    eval_ok(&m, &s, &st, &fp8);
    assert_rel(fp8.mem_fp8_cache_gib, 25192448.0 * 2.0 / GIB, 1e-12);
    assert_true(bf16.mem_fp8_cache_gib == 0.0);
    double tokens = 2.0 * 512.0, h = 1024.0;
    assert_rel(bf16.mem_activations_gib - fp8.mem_activations_gib, 2.0 * tokens * 5.0 * h / GIB,
               1e-9);
}

/* FP8 GEMMs in any operand layout (systems[].fp8_non_tn_gemm, Blackwell: Transformer Engine
 * is_non_tn_fp8_gemm_supported(), transformer_engine/pytorch/utils.py; Float8Tensor.update_usage
 * makes no transpose there): no transposed FP8 copies. Hand calculation on test_fp8_memory's two
 * GPT layers (25,192,448 parameters, bf16 weights):
 *   fp8 cache: the copy only, 25,192,448 x 1 B (TN only: x 2); with FP8 parameters nothing (the
 *     weight is its FP8 copy; TN only: the transpose, x 1);
 *   the cast of each GEMM input (QKV input h, projection input h, FC1 input h, FC2 input 4h: 7h
 *     elements per token, t = 1) writes 1 B instead of 1 + 1 B: per layer and micro-batch the
 *     forward pass moves T x 7h x 1 B less (T = 2 x 512 tokens, 1e12 B/s), the backward pass 1.5
 *     times that (ELEMENTWISE_BWD_FACTOR, perf*.c);
 *   the activations (the FP8 input saved for the weight gradient, 1 B either way) are unchanged. */
static void test_fp8_non_tn_gemm(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system tn = sys();
    tn.peak_tflops[CDSE_FP8] = 200.0;
    tn.gemm_eff_fp8 = tn.gemm_eff;
    cdse_system any = tn;
    any.fp8_non_tn_gemm = true;
    cdse_strategy st = strat(2, 1, 1, 2, 4);
    st.zero = 1;
    st.flash_attention = true;
    st.precision = CDSE_FP8;
    cdse_stack k = bare_stack();
    k.fp8_param_gather = false;
    st.stack = &k;
    cdse_result r_tn, r_any;
    eval_ok(&m, &tn, &st, &r_tn);
    eval_ok(&m, &any, &st, &r_any);
    assert_rel(r_tn.mem_fp8_cache_gib, 25192448.0 * 2.0 / GIB, 1e-12);
    assert_rel(r_any.mem_fp8_cache_gib, 25192448.0 / GIB, 1e-12);
    assert_true(r_any.mem_activations_gib == r_tn.mem_activations_gib);
    double fwd_tn, bwd_tn, fwd_any, bwd_any;
    assert_int_equal(cdse_layer_times(&m, &tn, &st, &fwd_tn, &bwd_tn), CDSE_ST_OK);
    assert_int_equal(cdse_layer_times(&m, &any, &st, &fwd_any, &bwd_any), CDSE_ST_OK);
    double saved = 2.0 * S * 7.0 * H * 1.0 / 1e12;
    assert_rel(fwd_tn - fwd_any, saved, 1e-9);
    assert_rel(bwd_tn - bwd_any, 1.5 * saved, 1e-9);
    k.fp8_param_gather = true;
    eval_ok(&m, &tn, &st, &r_tn);
    eval_ok(&m, &any, &st, &r_any);
    assert_rel(r_tn.mem_fp8_cache_gib, 25192448.0 / GIB, 1e-12);
    assert_true(r_any.mem_fp8_cache_gib == 0.0);
}

/* FP8 primary weights (stack fp8_param_gather, Megatron-Bridge's fp8_cs recipes: Megatron-
 * Bridge v0.2.0 src/megatron/bridge/training/mixed_precision.py:283-289): the layers' weights are
 * FP8 (1 B) instead of bf16 (2 B) with an FP8 copy (1 B); the transpose Hopper's FP8 GEMMs need
 * stays (1 B). Hand calculation for the two GPT layers of test_fp8_memory (12 h^2 + 13 h =
 * 12,596,224 parameters each, 25,192,448 together) and the tied embedding with its learned
 * positions and the final norm on the single stage (V h + s h + 2 h = 4,194,304 + 524,288 +
 * 2,048 = 4,720,640, kept in bf16):
 *   weights   25,192,448 x 1 + 4,720,640 x 2 = 34,633,728 B (bf16: 59,826,176 B)
 *   fp8 cache 25,192,448 x 1 = 25,192,448 B (without: 50,384,896 B)
 * so the total drops by 2 x 25,192,448 B; gradients, optimizer state and activations stay.
 * Two data-parallel GPUs with ZeRO 1 (weights are not sharded: the same figures per GPU). */
static void test_fp8_param_gather_memory(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    s.peak_tflops[CDSE_FP8] = 200.0;
    s.gemm_eff_fp8 = s.gemm_eff;
    cdse_strategy st = strat(2, 1, 1, 2, 4); /* dp 2: the key needs sharded state */
    st.zero = 1;
    st.flash_attention = true;
    st.precision = CDSE_FP8;
    cdse_stack k = bare_stack();
    st.stack = &k;
    cdse_result copies, primary;
    k.fp8_param_gather = false;
    eval_ok(&m, &s, &st, &copies);
    k.fp8_param_gather = true;
    eval_ok(&m, &s, &st, &primary);
    assert_rel(copies.mem_weights_gib, 59826176.0 / GIB, 1e-12);
    assert_rel(primary.mem_weights_gib, 34633728.0 / GIB, 1e-12);
    assert_rel(copies.mem_fp8_cache_gib, 50384896.0 / GIB, 1e-12);
    assert_rel(primary.mem_fp8_cache_gib, 25192448.0 / GIB, 1e-12);
    assert_true(primary.mem_gradients_gib == copies.mem_gradients_gib);
    assert_true(primary.mem_optimizer_gib == copies.mem_optimizer_gib);
    assert_true(primary.mem_activations_gib == copies.mem_activations_gib);
    assert_rel(copies.mem_total_gib - primary.mem_total_gib, 2.0 * 25192448.0 / GIB, 1e-9);
    /* Without the distributed optimizer (zero 0) Megatron-LM refuses --fp8-param-gather: bf16
     * weights with their FP8 copies, whatever the key says. */
    cdse_result zero0;
    st.zero = 0;
    eval_ok(&m, &s, &st, &zero0);
    assert_rel(zero0.mem_weights_gib, 59826176.0 / GIB, 1e-12);
    assert_rel(zero0.mem_fp8_cache_gib, 50384896.0 / GIB, 1e-12);
    /* bf16 training ignores the key. */
    cdse_result bf16_on, bf16_off;
    st.zero = 1;
    st.precision = CDSE_BF16;
    eval_ok(&m, &s, &st, &bf16_on);
    k.fp8_param_gather = false;
    eval_ok(&m, &s, &st, &bf16_off);
    assert_true(bf16_on.mem_weights_gib == bf16_off.mem_weights_gib);
    assert_rel(bf16_on.mem_weights_gib, 59826176.0 / GIB, 1e-12);
}

/* Host costs (fixed_time in perf*.c): the stack's per-iteration cost plus, per layer and
 * micro-batch, what launching the layer's kernels takes beyond the GPU time of the layer
 * (forward: launch - f; backward, twice the kernels: 2 launch - b), here with an exaggerated
 * launch time of 1 ms per layer forward against GPU layer times f, b of the test model:
 * 0.25 + m L ((1e-3 - f) + (2e-3 - b)), m = 2 micro-batches, L = 4 layers. */
static void test_host_costs(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 2);
    cdse_stack k = bare_stack();
    k.launch_s_per_layer = 1e-3;
    k.iteration_fixed_s = 0.25;
    st.stack = &k;
    double f, b;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &f, &b), CDSE_ST_OK);
    assert_true(f < 1e-3 && b < 2e-3); /* the small layers are host-bound */
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_fixed_s, 0.25 + 2.0 * 4.0 * ((1e-3 - f) + (2e-3 - b)), 1e-12);
    /* A launch time below the GPU's layer time costs nothing. */
    k.launch_s_per_layer = 0.5 * f;
    k.iteration_fixed_s = 0.0;
    eval_ok(&m, &s, &st, &r);
    assert_true(r.t_fixed_s == 0.0);
}

/* The host launches the kernels recomputation repeats (perf_layer.c recompute_of): their share
 * of the layer forward's kernels, counted per kernel (issue 31: charged by their share of the
 * FLOPs, the norms, which have none, were relaunched for free, and recomputing them made an
 * iteration faster). The GPT layer's forward launches 13 kernels: two LayerNorms, QKV, the
 * unfused attention core (baddbmm, scale-mask-softmax, dropout, bmm: 4), the projection, two
 * bias-dropout-adds, FC1, GeLU, FC2. test_host_costs' host-bound layers (launch 1 ms per layer
 * forward): recomputing the norms adds 2/13 of a launch to the backward pass, the selective
 * attention core 4/13: t_fixed_s = m L ((1e-3 - f) + ((2 + k/13) 1e-3 - b)), b the backward GPU
 * time with the recomputation. */
static void test_recompute_launches(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 2);
    cdse_stack k = bare_stack();
    k.launch_s_per_layer = 1e-3;
    st.stack = &k;
    int modules[2] = {CDSE_RECOMPUTE_LAYERNORM, 0};
    int recompute[2] = {CDSE_RECOMPUTE_NONE, CDSE_RECOMPUTE_SELECTIVE};
    double kernels[2] = {2.0, 4.0};
    for (int i = 0; i < 2; i++) {
        st.recompute_modules = modules[i];
        st.recompute = recompute[i];
        double f, b;
        assert_int_equal(cdse_layer_times(&m, &s, &st, &f, &b), CDSE_ST_OK);
        assert_true(f < 1e-3 && b < 2e-3);
        cdse_result r;
        eval_ok(&m, &s, &st, &r);
        assert_true(r.t_recompute_s > 0.0);
        assert_rel(r.t_fixed_s, 2.0 * 4.0 * ((1e-3 - f) + ((2.0 + kernels[i] / 13.0) * 1e-3 - b)),
                   1e-12);
    }
}

/* Runtime memory: the stack's workspaces plus its allocator's reserve over the activations,
 * beside the system's reserve (1.5 GiB in sys()): 2 + 0.1 x activations. */
static void test_runtime_memory(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 2);
    cdse_stack k = bare_stack();
    k.runtime_gib = 2.0;
    k.allocator_overhead = 0.1;
    st.stack = &k;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_runtime_gib, 2.0 + 0.1 * r.mem_activations_gib, 1e-12);
    assert_rel(r.mem_other_gib, 1.5, 1e-15);
}

/* Reserved memory: the CUDA context (1.5 GiB in sys()) and NCCL's buffers (the stack's
 * runtime_gib) as they are, the tensors x 1.13, the caching allocator's peak reserved over peak
 * allocated in Megatron-LM's memory report (6406.00 / 5670.39 MB = 1.1297, NVIDIA/Megatron-LM
 * pull request #5662). The case of test_split_peak_stage_state: the peak rank holds 919031808 B
 * of tensors (weights, gradients, optimizer state, activations).
 *   bare stack: reserved = 1.5 GiB + 1.13 x 919031808 B = 1.5 + 0.967... GiB;
 *   runtime_gib 2, allocator_overhead 0.05: allocated 919031808 B + 1.5 + 2 GiB + 0.05 x the
 *   activations (6 x 77594624 B); reserved 1.5 + 2 GiB + 1.13 x 919031808 B (the allocator's
 *   share of the runtime term is inside the 13 %). */
static void test_reserved_memory(void **state)
{
    (void)state;
    cdse_model m = gpt(6);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 4, 2, 16);
    bare.pipeline_split_embedding = true;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double tensors = 919031808.0, act = 6.0 * 77594624.0;
    assert_rel(r.mem_total_gib, tensors / GIB + 1.5, 1e-12);
    assert_rel(r.mem_reserved_gib, 1.5 + 1.13 * tensors / GIB, 1e-12);
    bare.runtime_gib = 2.0;
    bare.allocator_overhead = 0.05;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_total_gib, (tensors + 0.05 * act) / GIB + 1.5 + 2.0, 1e-12);
    assert_rel(r.mem_reserved_gib, 1.5 + 2.0 + 1.13 * tensors / GIB, 1e-12);
    bare.pipeline_split_embedding = false;
}

/* A stack that reduces gradients after the backward pass (Megatron-LM of 2021-22) exposes the
 * whole all-reduce: the case of test_dp_comm_last_bucket, where the overlapped reduction costs
 * only its last bucket, now costs 2 (d - 1) / d G / bw + 2 (d - 1) lat with d = 2. */
static void test_dp_comm_not_overlapped(void **state)
{
    (void)state;
    cdse_model m = gpt(64);
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 200.0;
    cdse_strategy st = strat(32, 8, 2, 1, 8);
    cdse_stack k = bare_stack();
    k.overlap_grad_reduce = false;
    st.stack = &k;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double params = 32.0 * 1579904.0 + 1048576.0;
    assert_rel(r.t_dp_comm_s, 2.0 * 0.5 * params * 4.0 / (200e9 * 0.9) + 2.0 * 5e-6, 1e-12);
}

/* The stack's GEMM efficiency scales the system's table: at 0.8 every GEMM of the layer takes
 * 1 / 0.8 as long (all GEMMs of this layer are compute-bound); the flash attention kernel has its
 * own efficiency and element-wise kernels run on HBM, both unchanged. */
static void test_gemm_scale(void **state)
{
    (void)state;
    cdse_model m = gpt(1);
    cdse_system s = sys();
    s.attention_efficiency = 0.5;
    cdse_strategy st = strat(1, 1, 1, 2, 2);
    st.flash_attention = true;
    double f1, b1, f2, b2;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &f1, &b1), CDSE_ST_OK);
    cdse_stack k = bare_stack();
    k.gemm_scale = 0.8;
    st.stack = &k;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &f2, &b2), CDSE_ST_OK);
    double linear = 24.0 * 1024.0 * 1024.0 * 1024.0 / (100e12 * 0.5); /* 24 T h^2 / (peak eff) */
    assert_rel(f2 - f1, linear / 0.8 - linear, 1e-9);
}

/* The stage that peaks: with a vocabulary of 262,144 the last pipeline stage, which holds one
 * micro-batch (1F1B) and the fp32 logits of its loss (4 V / t bytes per token, Korthikanti et al.
 * 2022 Sec. 4.3), outweighs the first with its 2 micro-batches: per token and layer 34 h + 5 a s
 * = 34,816 + 40,960 = 75,776 B (Table 2, no SP, no recomputation, t = 1); p = 2 stages of one
 * layer each, micro-batch 1 of s = 512 tokens: first 2 x 75,776, last 75,776 + 1,048,576. */
static void test_last_stage_peaks(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    m.vocab = 262144;
    cdse_system s = sys();
    cdse_strategy st = strat(2, 1, 2, 1, 4);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, 512.0 * (75776.0 + 4.0 * 262144.0) / GIB, 1e-12);
    m.vocab = 4096; /* now the first stage peaks: 2 x 75,776 > 75,776 + 16,384 */
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_activations_gib, 512.0 * 2.0 * 75776.0 / GIB, 1e-12);
}

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

/* exposed(c, w) = c - min(c, w) + 0.25 min(c, w) (perf*.c, OVERLAP_INTERFERENCE). */
static double exposed_hand(double c, double w)
{
    double hidden = c < w ? c : w;
    return c - hidden + 0.25 * hidden;
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

/* ---- Mixture of experts --------------------------------------------------------------- */

/* A Mixtral-style model (gated experts, no biases, RMSNorm, untied), small: h = 1024, 16 heads of
 * 64, 4 layers all MoE, 8 experts of ffn 2048, top-2, V = 4096, s = 512, no routing imbalance. */
static cdse_model moe_model(void)
{
    cdse_model m = gpt(4);
    m.gated_mlp = true;
    m.tied_embeddings = false;
    m.ffn = 2048;
    m.experts = 8;
    m.top_k = 2;
    m.moe_ffn = 2048;
    m.moe_every = 1;
    m.moe_imbalance = 1.0;
    return m;
}

/* Expert parallelism ep = 4 with t = 1, p = 2: each GPU of the first stage holds, per layer, the
 * attention 4 h^2 = 4194304, two RMSNorms 2048 and the router h E = 8192 (4204544; 8409088 for
 * two layers), the word embedding V h = 4194304 (dense total 12603392), and E / ep = 2 experts of
 * 3 h ffn = 6291456 per layer: 2 * 2 * 6291456 = 25165824 expert parameters (Megatron-Core expert
 * parallelism, Lepikhin et al. 2021 "GShard"). ZeRO shards the dense state over the d data-parallel
 * ranks and the expert state over the d / ep ranks that hold the same experts:
 *   d = 4: 18 B for both (ZeRO 0);
 *   d = 8, ZeRO 1: optimizer 12/8 B dense, 12/2 B experts. */
#define MOE_DENSE   12603392.0
#define MOE_EXPERTS 25165824.0

static void test_moe_state_memory(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 4);
    assert_rel(r.mem_weights_gib, (MOE_DENSE + MOE_EXPERTS) * 2.0 / GIB, 1e-12);
    assert_rel(r.mem_gradients_gib, (MOE_DENSE + MOE_EXPERTS) * 4.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, (MOE_DENSE + MOE_EXPERTS) * 12.0 / GIB, 1e-12);

    st = strat(16, 1, 2, 1, 32);
    st.ep = 4;
    st.zero = 1;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 8);
    assert_rel(r.mem_weights_gib, (MOE_DENSE + MOE_EXPERTS) * 2.0 / GIB, 1e-12);
    assert_rel(r.mem_optimizer_gib, (MOE_DENSE * 12.0 / 8.0 + MOE_EXPERTS * 12.0 / 2.0) / GIB,
               1e-12);
}

/* EP dispatch and combine (Megatron-Core all-to-all token dispatcher): each sends the routed copies
 * of the local tokens, T k h 2 B = 512 * 2 * 1024 * 2 = 2097152 B, over the 4 EP ranks (1 apart,
 * one node): 3/4 B / 240e9 + 3 * 2e-6 (see test_collective.c); two forward and two backward per
 * MoE layer, not overlapped; 2 layers per stage, m = 4 micro-batches: 4 * 2 * 4 all-to-alls. */
static void test_moe_ep_alltoall(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.grad_accum, 4);
    double one = 0.75 * 2097152.0 / 240e9 + 3.0 * 2e-6;
    assert_rel(r.t_ep_comm_s, 4.0 * 2.0 * 4.0 * one, 1e-12);
}

/* Gradient reduction of a MoE stage: the dense parameters over the d = 8 data-parallel ranks
 * (1 apart, one node: [8, 1]), the expert parameters over the d / ep = 2 ranks holding the same
 * experts (4 apart: ranks 0 and 4, one node). Both are smaller than one 40M-parameter bucket, so
 * both all-reduces are exposed whole (ZeRO 0):
 *   dense 2 (7/8) 4 * 12603392 / 240e9 + 2 * 7 * 2e-6;
 *   experts 2 (1/2) 4 * 25165824 / 240e9 + 2 * 2e-6. */
static void test_moe_dp_comm(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(16, 1, 2, 1, 32);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 8);
    double dense = 2.0 * 7.0 / 8.0 * 4.0 * MOE_DENSE / 240e9 + 14.0 * 2e-6;
    double experts = 2.0 * 0.5 * 4.0 * MOE_EXPERTS / 240e9 + 2.0 * 2e-6;
    assert_rel(r.t_dp_comm_s, dense + experts, 1e-12);
}

/* The expert gradients use the same bucket size as the dense ones, grown by the plain DP size
 * (Megatron-Core computes one bucket_size before it builds the dense and the expert buffers,
 * distributed_data_parallel.py at r0.8 and d98e8a64d), not by the expert data-parallel size. The
 * MoE model with t = 8, etp = 1, ep = 1 and d = 8 on 128 GPUs: every GPU holds all 8 experts of
 * its 2 layers unsplit, E = 4 x 25165824 = 100663296 parameters, reduced over edp = t d / (etp ep)
 * = 64 ranks; the bucket is max(40M, 1M x 8) = 40M parameters (with the edp size, 64M), so the
 * exposed part of the expert all-reduce ar (the plan's EDP op, hidden by one micro-batch's
 * backward pass) is 40e6 / E of it. */
static void test_moe_dp_comm_bucket(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    s.level[1].bandwidth_gbs = 400.0;
    cdse_strategy st = strat(128, 8, 2, 16, 512);
    st.ep = 1;
    st.etp = 1;
    cdse_result r;
    cdse_comm_plan plan;
    cdse_evaluate_plan(&m, &s, &st, &r, &plan);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_int_equal(r.dp, 8);
    int edp_ops = 0;
    double ar = 0.0, exposed = 0.0;
    for (int i = 0; i < plan.n; i++)
        if (plan.op[i].group == CDSE_GROUP_EDP) {
            edp_ops++;
            assert_int_equal(plan.op[i].size, 64);
            assert_rel(plan.op[i].bytes, 4.0 * 100663296.0, 1e-12);
            ar = plan.op[i].time_s;
            exposed = plan.op[i].calls * plan.op[i].time_s * plan.op[i].exposed_share;
        }
    assert_int_equal(edp_ops, 1);
    assert_true(ar < r.t_backward_s / r.grad_accum);
    assert_rel(exposed, 40e6 / 100663296.0 * ar, 1e-12);
}

/* MoE activations per layer and micro-batch (perf*.c's generalization of Korthikanti Table 2),
 * b = 1, s = 512 (sb = 512), t = 1, no imbalance:
 *   kept as in a dense Llama layer: norm, QKV and FC1 inputs 4 * 2 sb h = 4194304;
 *   Q, K, V 2 sb (q + 2 kv) = 3145728; projection input 2 sb q = 1048576;
 *   softmax output 2 b a s^2 = 8388608;
 *   router logits and probabilities in fp32, 8 B per token and expert: 512 * 8 * 8 = 32768;
 *   routed copies sb k = 1024: their permuted inputs 2 h each = 2097152, and the SwiGLU gate, up
 *   and output 3 * 2 ffn each = 12582912;
 *   per layer 31490048. First stage: min(p, m) = 2 micro-batches of 2 layers: 125960192 B. */
static void test_moe_activations(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double per_layer =
        4194304.0 + 3145728.0 + 1048576.0 + 8388608.0 + 32768.0 + 2097152.0 + 12582912.0;
    assert_rel(per_layer, 31490048.0, 1e-15);
    assert_rel(r.mem_activations_gib, 2.0 * 2.0 * per_layer / GIB, 1e-12);
}

/* Forward time of one MoE layer (the Mixtral-style model, t = 1, ep = 4, b = 1: T = 512 tokens,
 * k T = 1024 routed copies; 5e13 FLOP/s for GEMMs, 1e12 B/s HBM):
 *   QKV 512 x 3072 x 1024: 3221225472 FLOP (compute-bound: 10485760 B -> 1.05e-5 s < 6.4e-5 s);
 *   projection 512 x 1024 x 1024: 1073741824 FLOP (4194304 B: compute-bound);
 *   router 512 x 8 x 1024: 8388608 FLOP -> 1.7e-7 s, but (512*1024 + 1024*8 + 512*8) 2 =
 *   1073152 B -> 1.07e-6 s: memory-bound;
 *   experts: 2 local experts, each on T k ep / E = 512 rows: FC1 512 x 4096 x 1024
 *   (4294967296 FLOP) and FC2 512 x 1024 x 2048 (2147483648 FLOP), both compute-bound;
 *   router logits/probabilities 8 B per token and expert, permutation 8 B per routed element:
 *   512 (8 * 8 + 2 * 1024 * 8) B; the second sort by local expert (2 local experts, Megatron-
 *   Core's sort_chunks_by_idxs) 8 B per element of the 2 x 512 rows received: 1024 * 1024 * 8 B;
 *   attention: Q K^T and A V, batch 16 of 512 x 512 x 64, 536870912 FLOP each (compute-bound,
 *   10485760 B -> 1.05e-5 s < 1.07e-5 s), softmax 4 B on 1 * 16 * 512^2 = 4194304 scores;
 *   element-wise: 2 RMSNorms (4 B) and 2 residual adds (6 B) on h per token, T 20 h B, and the
 *   SwiGLU (6 B per output element) of the experts on their rows: k T moe_ffn 6 B =
 *   1024 * 2048 * 6 B (the activation function runs on the routed copies, not on T tokens of the
 *   dense ffn);
 *   EP dispatch + combine: 2 (3/4 2097152 / 240e9 + 3 * 2e-6) (test_moe_ep_alltoall). */
static void test_moe_layer_forward(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    double pe = 5e13, hbm = 1e12, T = 512.0;
    double qkv = 3221225472.0 / pe, proj = 1073741824.0 / pe;
    double router = 1073152.0 / hbm;
    double experts = 2.0 * (4294967296.0 + 2147483648.0) / pe;
    double moe_ew = T * (8.0 * 8.0 + 2.0 * 1024.0 * 8.0) / hbm + 1024.0 * 1024.0 * 8.0 / hbm;
    double attn = 2.0 * 536870912.0 / pe + 4194304.0 * 4.0 / hbm;
    double ew = (T * 20.0 * H + 2.0 * T * 2048.0 * 6.0) / hbm;
    double ep = 2.0 * (0.75 * 2097152.0 / 240e9 + 3.0 * 2e-6);
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, qkv + proj + router + experts + moe_ew + attn + ew + ep, 1e-12);
}

/* The layer's collectives share its computation (issue 31, perf_layer.c layer_windows): the CP
 * ring hides behind the attention core, EP's all-to-alls with 1F1B all-to-all overlap behind what
 * the ring left of the layer, not behind all of it again (each granted the whole window, a faster
 * attention exposed 0.75 of what it saved twice and trained slower:
 * tests/findings/model/ep_cp_share_window.cfg).
 * The MoE model with t = 1, cp = 2, ep = 4 on 8 GPUs (d = 4, b = 1, 4 sequences: m = 1), NVLink
 * slowed to 4 GB/s x 0.8 = 3.2e9 B/s (2 us) so that both streams outlast their windows. Per layer,
 * T = b s / cp = 256 tokens (5e13 FLOP/s GEMMs, 1e12 B/s HBM):
 *   QKV 256 x 3072 x 1024: 1610612736 FLOP -> 3.22e-5 s (8388608 B: compute-bound);
 *   projection 256 x 1024 x 1024: 536870912 FLOP (3145728 B: compute-bound);
 *   router 256 x 8 x 1024: (262144 + 8192 + 2048) 2 = 544768 B, memory-bound;
 *   experts: T k ep / E = 256 rows each (two whole tiles), 2 local: FC1 256 x 4096 x 1024
 *   (2147483648 FLOP, 11010048 B) and FC2 256 x 1024 x 2048 (1073741824 FLOP, 5767168 B), both
 *   compute-bound; router logits and permutation T (8 x 8 + 2 x 1024 x 8) B and the sort by local
 *   expert 2 x 256 rows x 1024 x 8 B: 8404992 B;
 *   attention (unfused), batch 16 of 256 queries x 512 keys x 64: Q K^T 268435456 FLOP -> 5.4e-6 s
 *   but 16 (256 x 64 + 64 x 512 + 256 x 512) 2 = 5767168 B -> 5.8e-6 s, memory-bound, A V the
 *   same; softmax on 16 x 256 x 512 = 2097152 scores, 4 B forward, 6 B backward:
 *   attn_fwd = (2 x 5767168 + 4 x 2097152) / 1e12, attn_bwd = (4 x 5767168 + 6 x 2097152) / 1e12;
 *   element-wise T (20 h + 2 x 2048 x 6) = 11534336 B forward, 1.5x backward;
 *   linear = QKV + projection + router + experts + 8404992 B; the layer computes
 *   3 linear + attn_fwd + attn_bwd + 2.5 ew.
 * CP ring step: b s/cp 2 kv dh 2 B = 1048576 B to the neighbour, 1048576 / 3.2e9 + 2e-6 = 3.3e-4 s,
 * one forward, two backward: both longer than the core they overlap, so each costs its excess and
 * 0.25 of the core. EP: 512 routed copies x h x 2 B = 1048576 B over 4 ranks of the node,
 * 0.75 x 1048576 / 3.2e9 + 3 x 2e-6 = 2.5e-4 s, 4 per layer (dispatch and combine, forward and
 * backward), 1.0e-3 s against the 3 linear + 2.5 ew = 5.9e-4 s the ring left: exposed
 * 4 a2a - 0.75 (3 linear + 2.5 ew). 4 layers, m = 1. */
static void test_layer_streams_share_window(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    s.level[0].bandwidth_gbs = 4.0;
    cdse_strategy st = strat(8, 1, 1, 1, 4);
    st.cp = 2;
    st.ep = 4;
    st.moe_overlap = CDSE_MOE_OVERLAP_A2A;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_int_equal(r.dp, 4);
    assert_int_equal(r.grad_accum, 1);
    double pe = 5e13, hbm = 1e12, bw = 3.2e9;
    double linear = (1610612736.0 + 536870912.0 + 2.0 * (2147483648.0 + 1073741824.0)) / pe +
                    (544768.0 + 8404992.0) / hbm;
    double attn_fwd = (2.0 * 5767168.0 + 4.0 * 2097152.0) / hbm;
    double attn_bwd = (4.0 * 5767168.0 + 6.0 * 2097152.0) / hbm;
    double ew = 11534336.0 / hbm;
    double step = 1048576.0 / bw + 2e-6;
    double a2a = 0.75 * 1048576.0 / bw + 3.0 * 2e-6;
    double rest = 3.0 * linear + 2.5 * ew;
    assert_true(step > attn_fwd && 2.0 * step > attn_bwd && 4.0 * a2a > rest);
    assert_rel(r.t_cp_comm_s, 4.0 * (step - 0.75 * attn_fwd + 2.0 * step - 0.75 * attn_bwd), 1e-12);
    assert_rel(r.t_ep_comm_s, 4.0 * (4.0 * a2a - 0.75 * rest), 1e-12);
}

/* Tile quantization of the experts' GEMMs (NVIDIA Matrix Multiplication Background User's Guide
 * Sec. 3.1: a GEMM runs whole 128 x 128 output tiles). test_moe_layer_forward with the busiest
 * expert rank at 1.1 times the balanced load: each local expert gets 512 x 1.1 = 563.2 rows,
 * 5 tiles = 640 rows: FC1 640 x 4096 x 1024 (5368709120 FLOP) and FC2 640 x 1024 x 2048
 * (2684354560 FLOP) at 5e13 FLOP/s (compute-bound: 14942208 B and 8126464 B of operands take
 * under 1.5e-5 s); 4096 and 1024 columns are whole tiles. Every other term scales with the
 * 1.1 routed copies: permutation 512 (8 * 8 + 2.2 * 1024 * 8) B, the sort 2 x 563.2 rows x 1024
 * x 8 B, SwiGLU 2.2 x 512 x 2048 x 6 B, the all-to-alls 1.1 x 2097152 B. */
static void test_moe_expert_tiles(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    m.moe_imbalance = 1.1;
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    double pe = 5e13, hbm = 1e12, T = 512.0;
    double qkv = 3221225472.0 / pe, proj = 1073741824.0 / pe;
    double router = 1073152.0 / hbm;
    double experts = 2.0 * (5368709120.0 + 2684354560.0) / pe;
    double moe_ew = T * (8.0 * 8.0 + 2.2 * 1024.0 * 8.0) / hbm + 2.0 * 563.2 * 1024.0 * 8.0 / hbm;
    double attn = 2.0 * 536870912.0 / pe + 4194304.0 * 4.0 / hbm;
    double ew = (T * 20.0 * H + 2.2 * T * 2048.0 * 6.0) / hbm;
    double ep = 2.0 * (0.75 * 1.1 * 2097152.0 / 240e9 + 3.0 * 2e-6);
    double fwd, bwd;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    assert_rel(fwd, qkv + proj + router + experts + moe_ew + attn + ew + ep, 1e-12);
}

/* Full recomputation repeats every local expert's GEMMs: the hardware FLOPs exceed the model
 * FLOPs by the forward FLOPs of the layers (test_moe_layer_forward's GEMMs, per GPU, layer and
 * micro-batch): QKV 3221225472 + projection 1073741824 + router 8388608 + 2 local experts x
 * (4294967296 + 2147483648) + attention 2 x 536870912 = 18261999616 FLOP, times L = 4 layers,
 * m = 4 micro-batches (16 sequences over d = 4) and d = 4 replicas: 1168767975424 FLOP per
 * iteration (Korthikanti et al. 2022 Sec. 6: hardware FLOPs count the recomputation). */
static void test_moe_recompute_flops(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 1, 2, 1, 16);
    st.ep = 4;
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double extra =
        (r.hardware_tflops_per_gpu - r.model_tflops_per_gpu) * 1e12 * 8.0 * r.time_per_iteration_s;
    assert_rel(extra, 18261999616.0 * 4.0 * 4.0 * 4.0, 1e-9);
}

/* On one GPU (t = p = d = ep = 1) the weights are the whole model as workload.c counts it. A
 * GPT-style MoE (biases on every linear layer, LayerNorm) with h = 64, 4 heads of 16, ffn 256,
 * 2 layers of which the second is MoE (moe_every 2) with 4 experts of 128, top-1, V = 100,
 * s = 16, tied:
 *   attention 4 h^2 + 4 h = 16640, LayerNorms 4 h = 256: 2 * 16896 = 33792;
 *   dense MLP 2 h ffn + ffn + h = 32768 + 320 = 33088;
 *   MoE MLP 4 (2 h 128 + 128 + h) + router 4 h = 4 * 16576 + 256 = 66560;
 *   word and position embeddings 6400 + 1024, final LayerNorm 128: total 140992. */
static void test_moe_gpt_single_gpu_holds_whole_model(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "gpt-moe");
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 4;
    m.head_dim = 16;
    m.ffn = 256;
    m.seq_len = 16;
    m.vocab = 100;
    m.tied_embeddings = true;
    m.experts = 4;
    m.top_k = 1;
    m.moe_ffn = 128;
    m.moe_every = 2;
    m.moe_imbalance = 1.0;
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 1);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 140992.0 * 2.0 / GIB, 1e-12);
}

/* The same for the Mixtral-style model above on one GPU (no biases):
 * 4 layers of 4204544 dense + 8 * 6291456 experts = 4 * 54536192 = 218144768, word embedding and
 * untied output 2 * 4194304 = 8388608, final RMSNorm 1024: 226534400. */
static void test_moe_gated_single_gpu_holds_whole_model(void **state)
{
    (void)state;
    cdse_model m = moe_model();
    cdse_system s = sys();
    cdse_strategy st = strat(1, 1, 1, 1, 1);
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.mem_weights_gib, 226534400.0 * 2.0 / GIB, 1e-12);
}

/* ---- Throughput, MFU and HFU ----------------------------------------------------------- */

/* Model FLOPs per token by Narayanan et al. eq. 3, 72 L h^2 (1 + s/(6h) + V/(12 h L)); with
 * L = 2: 72*2*1024^2 (1 + 512/6144 + 4096/24576) = 150994944 * 1.25 = 188743680. An iteration
 * of global batch 8 x 512 tokens on 4 GPUs (d = 4, b = 2): model TFLOP/s per GPU = F * tokens /
 * time / 4 / 1e12, MFU = that / 100 TFLOP/s. Full recomputation repeats the forward pass of the
 * layers (one third of the layers' 72 L h^2 (1 + s/(6h)) per token): hardware FLOPs per token
 * 188743680 + 24*2*1024^2 (1 + 512/6144) = 188743680 + 54525952 = 243269632. */
static void test_throughput_and_utilization(void **state)
{
    (void)state;
    cdse_model m = gpt(2);
    cdse_system s = sys();
    cdse_strategy st = strat(4, 1, 1, 2, 8);
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    double L = 2.0;
    double per_token = 72.0 * L * H * H * (1.0 + S / (6.0 * H) + V / (12.0 * H * L));
    assert_rel(per_token, 188743680.0, 1e-15);
    double hw_per_token = per_token + 24.0 * L * H * H * (1.0 + S / (6.0 * H));
    assert_rel(hw_per_token, 243269632.0, 1e-15);
    double tokens = 8.0 * S;
    double time = r.time_per_iteration_s;
    assert_rel(r.tokens_per_s, tokens / time, 1e-12);
    assert_rel(r.model_tflops_per_gpu, per_token * tokens / time / 4.0 / 1e12, 1e-12);
    assert_rel(r.mfu, per_token * tokens / time / 4.0 / 100e12, 1e-12);
    assert_rel(r.hardware_tflops_per_gpu, hw_per_token * tokens / time / 4.0 / 1e12, 1e-12);
    assert_rel(r.hfu, hw_per_token * tokens / time / 4.0 / 100e12, 1e-12);
}

/* The optimizer step streams 58 B per locally updated parameter over HBM (perf*.c
 * OPTIMIZER_HBM_BYTES_PER_PARAM, Apex multi-tensor kernels): ZeRO-1 on the 16-GPU case above
 * updates 15223808 / 4 parameters: 3805952 * 58 / 1e12 s. */
static void test_optimizer_time(void **state)
{
    (void)state;
    cdse_model m = gpt(4);
    cdse_system s = sys();
    cdse_strategy st = strat(16, 2, 2, 1, 16);
    st.zero = 1;
    cdse_result r;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_optimizer_s, STAGE_PARAMS / 4.0 * 58.0 / 1e12, 1e-12);
    st.zero = 0;
    eval_ok(&m, &s, &st, &r);
    assert_rel(r.t_optimizer_s, STAGE_PARAMS * 58.0 / 1e12, 1e-12);
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
        cmocka_unit_test(test_split_peak_stage_offload),
        cmocka_unit_test(test_zero0),
        cmocka_unit_test(test_zero1),
        cmocka_unit_test(test_zero2),
        cmocka_unit_test(test_zero3),
        cmocka_unit_test(test_zero1_with_cp),
        cmocka_unit_test(test_stage_params_llama_gqa),
        cmocka_unit_test(test_single_stage_llama_untied),
        cmocka_unit_test(test_single_gpu_holds_whole_model),
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
        cmocka_unit_test(test_pipeline_p2p_interleaved),
        cmocka_unit_test(test_pipeline_lockstep),
        cmocka_unit_test(test_pipeline_lockstep_reduces_after_flush),
        cmocka_unit_test(test_grad_accum_pass),
        cmocka_unit_test(test_pipeline_split_embedding),
        cmocka_unit_test(test_pipeline_split_two_stages),
        cmocka_unit_test(test_fp8_layer),
        cmocka_unit_test(test_fp8_current_scaling),
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
        cmocka_unit_test(test_dp_comm_not_overlapped),
        cmocka_unit_test(test_fp8_memory),
        cmocka_unit_test(test_fp8_non_tn_gemm),
        cmocka_unit_test(test_fp8_param_gather_memory),
        cmocka_unit_test(test_last_stage_peaks),
        cmocka_unit_test(test_host_costs),
        cmocka_unit_test(test_recompute_launches),
        cmocka_unit_test(test_runtime_memory),
        cmocka_unit_test(test_gemm_scale),
        cmocka_unit_test(test_dp_comm_last_bucket),
        cmocka_unit_test(test_dp_comm_bucket_grows_with_dp),
        cmocka_unit_test(test_dp_comm_bucket_ignores_cp),
        cmocka_unit_test(test_dp_comm_interleaved_chunks),
        cmocka_unit_test(test_fp8_param_gather),
        cmocka_unit_test(test_offload_optimizer),
        cmocka_unit_test(test_offload_activations),
        cmocka_unit_test(test_offload_activations_traffic),
        cmocka_unit_test(test_offload_shares_window_with_dp),
        cmocka_unit_test(test_offload_layers_memory),
        cmocka_unit_test(test_offload_layers_block_recompute),
        cmocka_unit_test(test_offload_layers_traffic),
        cmocka_unit_test(test_offload_layers_invalid),
        cmocka_unit_test(test_recompute_layers_memory),
        cmocka_unit_test(test_recompute_layers_offload_buffer),
        cmocka_unit_test(test_recompute_layers_times),
        cmocka_unit_test(test_recompute_layers_floor),
        cmocka_unit_test(test_recompute_layers_invalid),
        cmocka_unit_test(test_offload_weights),
        cmocka_unit_test(test_breakdown_adds_up),
        cmocka_unit_test(test_moe_state_memory),
        cmocka_unit_test(test_moe_ep_alltoall),
        cmocka_unit_test(test_moe_dp_comm),
        cmocka_unit_test(test_moe_dp_comm_bucket),
        cmocka_unit_test(test_moe_activations),
        cmocka_unit_test(test_moe_layer_forward),
        cmocka_unit_test(test_layer_streams_share_window),
        cmocka_unit_test(test_moe_recompute_flops),
        cmocka_unit_test(test_moe_expert_tiles),
        cmocka_unit_test(test_moe_gpt_single_gpu_holds_whole_model),
        cmocka_unit_test(test_moe_gated_single_gpu_holds_whole_model),
        cmocka_unit_test(test_throughput_and_utilization),
        cmocka_unit_test(test_optimizer_time),
        cmocka_unit_test(test_reserved_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
