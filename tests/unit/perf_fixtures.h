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

/* Shared fixtures of the test_perf_*.c files (split from test_perf.c, issue 28). */
#ifndef CDSE_TEST_PERF_FIXTURES_H
#define CDSE_TEST_PERF_FIXTURES_H

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

#include "sys_fixture.h"

/* Relative comparison that prints both values and the caller's line on failure. */
#define GIB CDSE_GIB

/* A GPT-style model (plain GELU MLP of 4h, biases, LayerNorm, dropout, tied embeddings):
 * h = 1024, a = 16 (head 64), s = 512, V = 4096. */
static inline cdse_model gpt(int layers)
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

/* sys(): sys_fixture.h. */

/* The same with communication made negligible: 10^9 GB/s links without latency. */
static inline cdse_system fast_sys(void)
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
static inline cdse_stack bare_stack(void)
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

static inline cdse_strategy strat(int gpus, int tp, int pp, int microbatch, int global_batch)
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

static inline void eval_ok(const cdse_model *m, const cdse_system *s, const cdse_strategy *st,
                           cdse_result *r)
{
    cdse_evaluate(m, s, st, r);
    if (r->status != CDSE_ST_OK)
        print_error("status %s\n", cdse_status_name(r->status));
    assert_int_equal(r->status, CDSE_ST_OK);
}

/* Common figures of the GPT above with b = 2: s b h = 512 * 2 * 1024 = 1048576, 5 a s / h =
 * 5 * 16 * 512 / 1024 = 40. With p = 1 and one micro-batch, the single stage keeps L layers of
 * activations plus the fp32 logits, 4 s b V / t bytes (Korthikanti Sec. 4.3). */
#define S   512.0
#define B   2.0
#define H   1024.0
#define A   16.0
#define V   4096.0
#define SBH (S * B * H)

static inline double logits_bytes(double t)
{
    return 4.0 * S * B * V / t;
}

/* First stage of the GPT above with L = 4, t = 2, p = 2, d = 4 (16 GPUs), per GPU:
 *   per layer: weights QKV h*3h/t + projection h*h/t + FC1 h*4h/t + FC2 4h*h/t = 12 h^2 / t;
 *   biases QKV 3h/t, FC1 4h/t (split), projection h, FC2 h (replicated); LayerNorms 2 * 2h:
 *   12 h^2/t + 7h/t + 6h = 6291456 + 3584 + 6144 = 6301184; two layers: 12602368;
 *   embedding: word V h / t = 2097152 (vocabulary-parallel), positions s h = 524288;
 *   first stage: 12602368 + 2621440 = 15223808 parameters. */
#define STAGE_PARAMS 15223808.0
#define EMBED_PARAMS 2621440.0

/* exposed(c, w) = c - min(c, w) + 0.25 min(c, w) (perf*.c, OVERLAP_INTERFERENCE). */
static inline double exposed_hand(double c, double w)
{
    double hidden = c < w ? c : w;
    return c - hidden + 0.25 * hidden;
}

/* A Mixtral-style model (gated experts, no biases, RMSNorm, untied), small: h = 1024, 16 heads of
 * 64, 4 layers all MoE, 8 experts of ffn 2048, top-2, V = 4096, s = 512, no routing imbalance. */
static inline cdse_model moe_model(void)
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

#endif
