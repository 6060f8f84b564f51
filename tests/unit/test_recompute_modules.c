/* Fine-grained recomputation (Megatron-Core --recompute-modules): activation memory each module
 * does not keep and the forward work it repeats, against hand calculations.
 *
 * System: 100 TFLOP/s bf16 at a constant GEMM efficiency 0.5 (5e13 FLOP/s), 1000 GB/s HBM at
 * full efficiency; one GPU, one micro-batch of b 1 x s 512 (sb = 512 rows), so the activations
 * of every layer of the single stage are held once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/perf.h"

/* 2 layers, h 1024, 8 heads of 64, SwiGLU 2048, s 512, V 1000. */
static cdse_model base(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test");
    m.layers = 2;
    m.hidden = 1024;
    m.heads = 8;
    m.kv_heads = 8;
    m.head_dim = 64;
    m.gated_mlp = true;
    m.ffn = 2048;
    m.seq_len = 512;
    m.vocab = 1000;
    cdse_model_fill_defaults(&m);
    return m;
}

static cdse_system sys(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    s.peak_tflops[CDSE_BF16] = 100.0;
    s.gemm_eff.n = 1;
    s.gemm_eff.flops[0] = 1e9;
    s.gemm_eff.eff[0] = 0.5;
    s.attention_efficiency = 0.4;
    s.hbm_gib = 1e4;
    s.hbm_bandwidth_gbs = 1000.0;
    s.hbm_efficiency = 1.0;
    s.gpus_per_node = 8;
    s.n_levels = 1;
    s.level[0].bandwidth_gbs = 100.0;
    s.level[0].efficiency = 1.0;
    return s;
}

static cdse_strategy strat(int modules)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 1;
    st.tp = st.pp = st.cp = st.ep = st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = 1;
    st.precision = CDSE_BF16;
    st.flash_attention = true;
    st.recompute_modules = modules;
    return st;
}

/* Differences (with the module) - (without) of activations (bytes) and recompute time. */
static void deltas(const cdse_model *m, int modules, double *bytes, double *recompute_s)
{
    cdse_system s = sys();
    cdse_strategy st = strat(0);
    cdse_result plain, with;
    cdse_evaluate(m, &s, &st, &plain);
    st = strat(modules);
    cdse_evaluate(m, &s, &st, &with);
    assert_int_equal(with.status, CDSE_ST_OK);
    *bytes = (plain.mem_activations_gib - with.mem_activations_gib) * CDSE_GIB;
    *recompute_s = with.t_recompute_s - plain.t_recompute_s;
}

/* layernorm: the two norms' outputs, 2 x 2 B x 512 x 1024 = 2097152 B per layer, 4194304 B for
 * two; recomputing them streams 2 x 4 B per element (LayerNorm read + write,
 * perf*.c): 2 layers x 512 x 1024 x 8 B / 1e12 B/s = 8.388608e-6 s. mlp: the dense SwiGLU's gate,
 * up and output, 3 x 2 B x 512 x 2048 = 6291456 B per layer. */
static void test_layernorm_and_mlp(void **state)
{
    (void)state;
    cdse_model m = base();
    double bytes, t;
    deltas(&m, CDSE_RECOMPUTE_LAYERNORM, &bytes, &t);
    assert_rel(bytes, 4194304.0, 1e-9);
    assert_rel(t, 8.388608e-6, 1e-9);
    deltas(&m, CDSE_RECOMPUTE_MLP, &bytes, &t);
    assert_rel(bytes, 2.0 * 6291456.0, 1e-9);
    assert_true(t > 0.0);
}

/* mla_up_proj on a latent-attention model (q_r 256, kv_r 128, d_nope 64, d_rope 32, d_v 64):
 * the up-projected Q and K (96 each) and V (64) of 8 heads, 2 B x 512 x 8 x 256 = 2097152 B per
 * layer; repeated GEMMs: query up 2 x 512 x 768 x 256 = 201326592 FLOPs (4.0265318e-6 s at
 * 5e13 FLOP/s; its 1441792 operand bytes take 1.44e-6 s at 1e12 B/s) and key/value up
 * 2 x 512 x 1024 x 128 = 134217728 FLOPs (2.6843546e-6 s): 6.7108864e-6 s per layer,
 * 1.34217728e-5 s for two. */
static void test_mla_up_proj(void **state)
{
    (void)state;
    cdse_model m = base();
    m.qk_rope_head_dim = 32;
    m.v_head_dim = 64;
    m.q_lora_rank = 256;
    m.kv_lora_rank = 128;
    double bytes, t;
    deltas(&m, CDSE_RECOMPUTE_MLA_UP_PROJ, &bytes, &t);
    assert_rel(bytes, 2.0 * 2097152.0, 1e-9);
    assert_rel(t, 1.34217728e-5, 1e-9);
}

/* MoE layers (16 experts, top-4, expert FFN 512, balanced routing): moe_act drops the
 * activation function's output on the routed copies, 512 x 4 x 2 B x 512 = 2097152 B per layer;
 * moe drops the whole MoE MLP but its input: router probabilities 512 x 16 x 8 B = 65536, the
 * permuted copies 2048 x 1024 x 2 B = 4194304 and the experts' gate, up and output
 * 3 x 2048 x 512 x 2 B = 6291456: 10551296 B per layer. */
static void test_moe_modules(void **state)
{
    (void)state;
    cdse_model m = base();
    m.experts = 16;
    m.top_k = 4;
    m.moe_ffn = 512;
    m.moe_every = 1;
    m.moe_imbalance = 1.0;
    double bytes, t;
    deltas(&m, CDSE_RECOMPUTE_MOE_ACT, &bytes, &t);
    assert_rel(bytes, 2.0 * 2097152.0, 1e-9);
    assert_true(t > 0.0);
    deltas(&m, CDSE_RECOMPUTE_MOE, &bytes, &t);
    assert_rel(bytes, 2.0 * 10551296.0, 1e-9);
    char text[80];
    cdse_recompute_modules_text(CDSE_RECOMPUTE_MLA_UP_PROJ | CDSE_RECOMPUTE_LAYERNORM, text,
                                sizeof text);
    assert_string_equal(text, "layernorm+mla_up_proj");
    cdse_recompute_modules_text(0, text, sizeof text);
    assert_string_equal(text, "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm_and_mlp),
        cmocka_unit_test(test_mla_up_proj),
        cmocka_unit_test(test_moe_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
