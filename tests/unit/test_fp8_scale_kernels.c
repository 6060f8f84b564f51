/* FP8 current scaling's data-free kernels (stack key fp8_scale_kernels, src/model/perf_layer.c
 * KERNEL_LAUNCH_FLOOR_S): each quantized GEMM input (forward) and output gradient (backward)
 * costs fp8_scale_kernels launches of 3 us, and a MoE layer quantizes every local expert's rows
 * on its own (Transformer Engine 2.7 GroupedLinear). Checked as the difference of one layer's
 * forward and backward times (cdse_layer_times) between fp8_scale_kernels 2 and 0, against hand
 * calculations:
 *
 *   dense layer: QKV, projection, FC1, FC2 = 4 tensors per pass: 4 x 2 x 3 us = 24 us;
 *   MoE layer, 16 experts over ep 4 (4 local): QKV, projection and FC1, FC2 of each local
 *     expert = 2 + 2 x 4 = 10 tensors: 10 x 2 x 3 us = 60 us;
 *   the same with one shared expert: 12 tensors: 72 us;
 *   latent attention (q_lora_rank > 0: query down and up, key/value down and up, projection)
 *     with a dense MLP: 5 + 2 = 7 tensors: 42 us;
 *   delayed scaling or bf16: nothing (0 us). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/perf.h"

#define LAUNCH_S 3e-6 /* the null-kernel launch time the model takes */

/* 2 layers, h 1024, 8 heads of 128, SwiGLU 2048, s 512. */
static cdse_model dense(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test");
    m.layers = 2;
    m.hidden = 1024;
    m.heads = 8;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.gated_mlp = true;
    m.ffn = 2048;
    m.seq_len = 512;
    m.vocab = 1000;
    cdse_model_fill_defaults(&m);
    return m;
}

/* Every layer a MoE layer: 16 experts, top-2, expert FFN 512. */
static cdse_model moe(int shared)
{
    cdse_model m = dense();
    m.experts = 16;
    m.top_k = 2;
    m.moe_ffn = 512;
    m.moe_every = 1;
    m.shared_experts = shared;
    cdse_model_fill_defaults(&m);
    return m;
}

/* Latent attention with a query latent (DeepSeek-V3's layout, smaller). */
static cdse_model mla(void)
{
    cdse_model m = dense();
    m.q_lora_rank = 256;
    m.kv_lora_rank = 128;
    m.qk_rope_head_dim = 32;
    m.v_head_dim = 128;
    cdse_model_fill_defaults(&m);
    return m;
}

static cdse_system sys(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    s.peak_tflops[CDSE_BF16] = 100.0;
    s.peak_tflops[CDSE_FP8] = 200.0;
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

/* Forward and backward time of one layer with the stack's fp8_scale_kernels set to `kernels`. */
static void layer(const cdse_model *m, int precision, int scaling, double kernels, int ep,
                  double *fwd, double *bwd)
{
    cdse_system s = sys();
    cdse_stack k = cdse_stack_default;
    k.fp8_scaling = scaling;
    k.fp8_scale_kernels = kernels;
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = ep;
    st.tp = st.pp = st.cp = st.vpp = 1;
    st.ep = ep;
    st.microbatch = 1;
    st.global_batch = ep;
    st.precision = precision;
    st.flash_attention = true;
    st.stack = &k;
    assert_int_equal(cdse_layer_times(m, &s, &st, fwd, bwd), CDSE_ST_OK);
}

/* The difference of forward and backward times between 2 and 0 data-free kernels. */
static void check(const cdse_model *m, int precision, int scaling, int ep, double expect_s)
{
    double f2, b2, f0, b0;
    layer(m, precision, scaling, 2.0, ep, &f2, &b2);
    layer(m, precision, scaling, 0.0, ep, &f0, &b0);
    if (expect_s == 0.0) {
        assert_rel(f2, f0, 1e-12);
        assert_rel(b2, b0, 1e-12);
        return;
    }
    assert_rel(f2 - f0, expect_s, 1e-6);
    assert_rel(b2 - b0, expect_s, 1e-6);
}

static void test_dense_layer(void **state)
{
    (void)state;
    cdse_model m = dense();
    check(&m, CDSE_FP8, CDSE_FP8_CURRENT, 1, 4 * 2 * LAUNCH_S);
}

static void test_moe_layer_per_local_expert(void **state)
{
    (void)state;
    cdse_model m = moe(0);
    check(&m, CDSE_FP8, CDSE_FP8_CURRENT, 4, (2 + 2 * 4) * 2 * LAUNCH_S);
}

static void test_moe_layer_shared_expert(void **state)
{
    (void)state;
    cdse_model m = moe(1);
    check(&m, CDSE_FP8, CDSE_FP8_CURRENT, 4, (2 + 2 * 4 + 2) * 2 * LAUNCH_S);
}

static void test_latent_attention(void **state)
{
    (void)state;
    cdse_model m = mla();
    check(&m, CDSE_FP8, CDSE_FP8_CURRENT, 1, (5 + 2) * 2 * LAUNCH_S);
}

static void test_delayed_and_bf16_pay_nothing(void **state)
{
    (void)state;
    cdse_model m = moe(0);
    check(&m, CDSE_FP8, CDSE_FP8_DELAYED, 4, 0.0);
    check(&m, CDSE_BF16, CDSE_FP8_CURRENT, 4, 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_layer),
        cmocka_unit_test(test_moe_layer_per_local_expert),
        cmocka_unit_test(test_moe_layer_shared_expert),
        cmocka_unit_test(test_latent_attention),
        cmocka_unit_test(test_delayed_and_bf16_pay_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
