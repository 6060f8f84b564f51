/* Multi-head latent attention and sliding-window attention: parameters, model FLOPs, weights per
 * GPU and flash-attention time against hand calculations.
 *
 * Latent attention (DeepSeek-V2, arXiv:2405.04434 Sec. 2.1, eqs. 9-19): per layer
 *   queries  h q_r + q_r (RMSNorm) + q_r a (d_nope + d_rope)   (or h a (d_nope + d_rope) without
 *            query compression)
 *   keys/values  h (kv_r + d_rope) + kv_r (RMSNorm) + kv_r a (d_nope + d_v)
 *   output   a d_v h.
 * Model FLOPs per token (forward + backward = 3 x forward, Megatron's full-sequence counting):
 *   6 x projection weights + 6 a (d_nope + d_rope + d_v) s per layer; in a sliding-window layer
 *   s is replaced by the window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/perf.h"

static cdse_model base(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test");
    m.hidden = 1024;
    m.heads = 8;
    m.kv_heads = 8;
    m.gated_mlp = true;
    m.ffn = 2048;
    m.vocab = 1000;
    return m;
}

/* Small latent-attention model: L 2, h 1024, a 8, d_nope 64, d_rope 32, d_v 64, q_r 256,
 * kv_r 128, SwiGLU 2048, V 1000 untied, s 512. */
static cdse_model mla_model(void)
{
    cdse_model m = base();
    m.layers = 2;
    m.head_dim = 64;
    m.qk_rope_head_dim = 32;
    m.v_head_dim = 64;
    m.q_lora_rank = 256;
    m.kv_lora_rank = 128;
    m.seq_len = 512;
    cdse_model_fill_defaults(&m);
    return m;
}

/* DeepSeek-V3's attention (config.json of deepseek-ai/DeepSeek-V3: hidden_size 7168,
 * num_attention_heads 128, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
 * qk_rope_head_dim 64, v_head_dim 128), by hand:
 *   7168 x 1536 = 11010048; 1536; 1536 x 128 x 192 = 37748736;
 *   7168 x 576 = 4128768; 512; 512 x 128 x 256 = 16777216; 128 x 128 x 7168 = 117440512;
 *   sum 187107328.
 * DeepSeek-V2-Lite's (no query compression: hidden 2048, 16 heads, kv_lora_rank 512, same head
 * dimensions): 2048 x 16 x 192 = 6291456; 2048 x 576 = 1179648; 512; 512 x 16 x 256 = 2097152;
 * 16 x 128 x 2048 = 4194304; sum 13763072. */
static void test_mla_params(void **state)
{
    (void)state;
    cdse_model m = base();
    m.layers = 61;
    m.hidden = 7168;
    m.heads = 128;
    m.kv_heads = 128;
    m.head_dim = 128;
    m.qk_rope_head_dim = 64;
    m.v_head_dim = 128;
    m.q_lora_rank = 1536;
    m.kv_lora_rank = 512;
    assert_rel(cdse_model_attention_params(&m), 187107328.0, 1e-15);
    m.hidden = 2048;
    m.heads = 16;
    m.kv_heads = 16;
    m.q_lora_rank = 0;
    assert_rel(cdse_model_attention_params(&m), 13763072.0, 1e-15);
}

/* The small model: attention 262144 + 256 + 196608 + 163840 + 128 + 131072 + 524288 = 1278336;
 * layer + 3 x 1024 x 2048 = 6291456 + norms 2048 = 7571840; x 2 = 15143680; + 2 x 1000 x 1024
 * + final norm 1024 = 17192704.
 * FLOPs per token: 6 x 1278336 = 7670016; 6 x 8 x (64 + 32 + 64) x 512 = 3932160; MLP
 * 12 x 1024 x 2048 x 1.5 = 37748736; per layer 49350912, x 2 = 98701824; logits
 * 6 x 1024 x 1000 = 6144000; total 104845824. */
static void test_mla_model_counts(void **state)
{
    (void)state;
    cdse_model m = mla_model();
    cdse_diag diag = {{0}};
    assert_int_equal(cdse_model_check(&m, &diag), 0);
    assert_rel(cdse_model_attention_params(&m), 1278336.0, 1e-15);
    assert_rel(cdse_model_params(&m), 17192704.0, 1e-15);
    assert_rel(cdse_model_flops_per_token(&m), 104845824.0, 1e-15);
    /* Latent attention needs kv_heads == heads; RoPE/query ranks need it on. */
    m.kv_heads = 2;
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
    m = mla_model();
    m.kv_lora_rank = 0;
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
}

/* Weights per GPU (2 B each, one stage, no ZeRO), tp 1: the whole model, 17192704 x 2 B.
 * tp 2: down projections and their norms replicated 262144 + 256 + 163840 + 128 = 426368;
 * up and output projections halved (196608 + 131072 + 524288) / 2 = 425984; MLP 3145728;
 * norms 2048; layer 4000128, x 2 = 8000256; vocabulary shards 2 x 512000 and the final norm
 * 1024: 9025280 parameters. */
static void test_mla_weights_per_gpu(void **state)
{
    (void)state;
    cdse_model m = mla_model();
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
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 1;
    st.tp = st.pp = st.cp = st.ep = st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = 1;
    st.precision = CDSE_BF16;
    st.flash_attention = true;
    cdse_result r;
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_rel(r.mem_weights_gib * CDSE_GIB, 2.0 * 17192704.0, 1e-12);
    st.gpus = 2;
    st.tp = 2;
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_rel(r.mem_weights_gib * CDSE_GIB, 2.0 * 9025280.0, 1e-12);
}

/* Causal keys per query: no window 4096 / 2 = 2048; window 128 in 4096:
 * 128 (1 - 128 / 8192) = 126; a window longer than the sequence is no window. */
static void test_attended_keys(void **state)
{
    (void)state;
    assert_rel(cdse_attended_keys(4096.0, 0.0), 2048.0, 1e-15);
    assert_rel(cdse_attended_keys(4096.0, 128.0), 126.0, 1e-15);
    assert_rel(cdse_attended_keys(100.0, 200.0), 50.0, 1e-15);
}

/* GQA model with windows: L 4, h 1024, a 8, kv 2, d 128, window 128, every 2nd layer full,
 * s 1024. Two sliding layers (GPT-OSS alternates the same way).
 * FLOPs per token: projections 12 x 1024 x 1024 x (1 + 2/8) = 15728640 per layer; per key
 * 6 x 8 x 256 = 12288: full layers x 1024 = 12582912, sliding layers x 128 = 1572864; MLP
 * 37748736 per layer; logits 6144000:
 *   4 x 15728640 + 2 x 12582912 + 2 x 1572864 + 4 x 37748736 + 6144000 = 248365056
 * (270385152 without windows). */
static void test_swa_model_flops(void **state)
{
    (void)state;
    cdse_model m = base();
    m.layers = 4;
    m.kv_heads = 2;
    m.head_dim = 128;
    m.seq_len = 1024;
    m.sliding_window = 128;
    m.full_attention_every = 2;
    cdse_model_fill_defaults(&m);
    cdse_diag diag = {{0}};
    assert_int_equal(cdse_model_check(&m, &diag), 0);
    assert_int_equal(cdse_model_swa_layers(&m), 2);
    assert_rel(cdse_model_flops_per_token(&m), 248365056.0, 1e-15);
    m.sliding_window = 0;
    m.full_attention_every = 0;
    assert_rel(cdse_model_flops_per_token(&m), 270385152.0, 1e-15);
    m.full_attention_every = 2; /* a full-attention period without a window is wrong */
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
}

/* Flash-attention time of one layer, every layer sliding (window 128, s 1024, b 1, a 8, d 128,
 * tp 1), against full attention: full 4 b a s s d x 1/2 = 2147483648 FLOPs; sliding
 * 2 b a s x 120 keys (128 (1 - 128 / 2048)) x 2 d = 503316480 FLOPs; at 100 TFLOP/s x 0.4 the
 * forward pass is shorter by 1644167168 / 4e13 = 4.11041792e-5 s and the backward pass by 2.5
 * times that (FlashAttention-2's backward, perf*.c), 1.0276045e-4 s. */
static void test_swa_layer_time(void **state)
{
    (void)state;
    cdse_model m = base();
    m.layers = 4;
    m.head_dim = 128;
    m.seq_len = 1024;
    cdse_model_fill_defaults(&m);
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
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 1;
    st.tp = st.pp = st.cp = st.ep = st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = 1;
    st.precision = CDSE_BF16;
    st.flash_attention = true;
    double full_f, full_b, swa_f, swa_b;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &full_f, &full_b), CDSE_ST_OK);
    m.sliding_window = 128;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &swa_f, &swa_b), CDSE_ST_OK);
    assert_rel(full_f - swa_f, 4.11041792e-5, 1e-9);
    assert_rel(full_b - swa_b, 2.5 * 4.11041792e-5, 1e-9);
}

/* The system's attention_seq_scale (perf_layer.c attention_costs): one layer of h 1024, 8 heads
 * of 128, s 1024, flash attention on 100 TFLOP/s at attention_efficiency 0.4. The causal flash
 * forward is 4 b heads s^2 d / 2 = 4 x 8 x 1024^2 x 128 / 2 = 2147483648 FLOPs:
 * A = 2147483648 / (100e12 x 0.4) = 5.36870912e-5 s, the backward 2.5 A. With the curve
 * [[512, 0.8], [2048, 1]], interpolated in log length, 1024 lies half-way: 0.9, so the attention
 * takes A / 0.9, A / 9 more forward and 2.5 A / 9 more backward (the rest of the layer is the
 * same). At s 4096, past the last point, the factor is 1 and nothing changes. */
static void test_attention_seq_scale(void **state)
{
    (void)state;
    cdse_model m = base();
    m.layers = 1;
    m.head_dim = 128;
    m.seq_len = 1024;
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
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 1;
    st.tp = st.pp = st.cp = st.ep = st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = 1;
    st.precision = CDSE_BF16;
    st.flash_attention = true;
    double fwd, bwd, fwd_scaled, bwd_scaled;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    s.attention_seq_scale.n = 2;
    s.attention_seq_scale.flops[0] = 512.0;
    s.attention_seq_scale.eff[0] = 0.8;
    s.attention_seq_scale.flops[1] = 2048.0;
    s.attention_seq_scale.eff[1] = 1.0;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd_scaled, &bwd_scaled), CDSE_ST_OK);
    double a = 2147483648.0 / (100e12 * 0.4);
    assert_rel(fwd_scaled - fwd, a / 9.0, 1e-9);
    assert_rel(bwd_scaled - bwd, 2.5 * a / 9.0, 1e-9);

    m.seq_len = 4096;
    s.attention_seq_scale.n = 0;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd, &bwd), CDSE_ST_OK);
    s.attention_seq_scale.n = 2;
    assert_int_equal(cdse_layer_times(&m, &s, &st, &fwd_scaled, &bwd_scaled), CDSE_ST_OK);
    assert_rel(fwd_scaled, fwd, 1e-15);
    assert_rel(bwd_scaled, bwd, 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mla_params),          cmocka_unit_test(test_mla_model_counts),
        cmocka_unit_test(test_mla_weights_per_gpu), cmocka_unit_test(test_attended_keys),
        cmocka_unit_test(test_swa_model_flops),     cmocka_unit_test(test_swa_layer_time),
        cmocka_unit_test(test_attention_seq_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
