/* Parameter and FLOP counts of src/model/workload.c against hand calculations.
 *
 * Every model is filled by hand here (no files are loaded). Each expected value is written from the
 * published formula beside it, never produced by the code under test:
 *   - GPT parameters: Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU
 *     Clusters Using Megatron-LM", SC'21), Sec. 5.1: P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)),
 *     which counts weights, biases, two LayerNorms per layer, word and learned position embeddings
 *     with the output layer tied to the word embedding; the code adds the final LayerNorm (2h).
 *   - Llama parameters: Touvron et al. 2023 ("Llama 2"), Sec. 2.2 / Table 1 shapes: no biases,
 *     RMSNorm (h scale parameters per norm, two per layer plus a final one), SwiGLU MLP with three
 *     h x ffn matrices, GQA attention h (q + 2 kv) + q h, untied output layer.
 *   - FLOPs per token: Narayanan et al. 2021 eq. 3, F = 72 B s l h^2 (1 + s/(6h) + V/(12hl)) per
 *     iteration of B sequences of s tokens, so 72 l h^2 (1 + s/(6h) + V/(12hl)) per token; for GQA
 *     and SwiGLU, Megatron-LM's num_floating_point_operations (megatron/training/training.py):
 *     12 l h^2 [ (1 + g/a + s/h) q/h + (ffn/h) (3/2 if gated) ] + 6 h V per token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/workload.h"

/* Relative tolerance: the counts are sums of exact integers below 2^53 or products of a few
 * doubles. */
#define REL 1e-12

/* Relative comparison that prints both values and the caller's line on failure. */
/* GPT-3 175B (Brown et al. 2020, Table 2.1: n_layers 96, d_model 12288, n_heads 96, n_ctx 2048;
 * GPT-2 BPE vocabulary of 50257, Radford et al. 2019). */
static cdse_model gpt3_175b(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "gpt3-175b");
    m.layers = 96;
    m.hidden = 12288;
    m.heads = 96;
    m.kv_heads = 96;
    m.head_dim = 128;
    m.ffn = 4 * 12288;
    m.seq_len = 2048;
    m.vocab = 50257;
    m.gated_mlp = false;
    m.tied_embeddings = true;
    return m;
}

/* Llama 2 70B (Touvron et al. 2023, Table 1 and the released config.json: 80 layers, hidden 8192,
 * 64 heads, 8 key/value heads, intermediate size 28672, vocabulary 32000, context 4096). */
static cdse_model llama2_70b(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "llama2-70b");
    m.layers = 80;
    m.hidden = 8192;
    m.heads = 64;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.ffn = 28672;
    m.seq_len = 4096;
    m.vocab = 32000;
    m.gated_mlp = true;
    m.tied_embeddings = false;
    return m;
}

/* GPT layer: QKV h x 3h + bias 3h, projection h x h + bias h: 4h^2 + 4h. */
static void test_gpt_attention_params(void **state)
{
    (void)state;
    cdse_model m = gpt3_175b();
    double h = 12288.0;
    assert_rel(cdse_model_attention_params(&m), 4.0 * h * h + 4.0 * h, REL);
    /* 4 * 12288^2 + 4 * 12288 = 603979776 + 49152 */
    assert_rel(cdse_model_attention_params(&m), 604028928.0, REL);
}

/* GPT MLP: h x 4h + bias 4h, 4h x h + bias h: 8h^2 + 5h. */
static void test_gpt_mlp_params(void **state)
{
    (void)state;
    cdse_model m = gpt3_175b();
    double h = 12288.0;
    assert_rel(cdse_model_mlp_params(&m), 8.0 * h * h + 5.0 * h, REL);
}

/* Per layer, with two LayerNorms of 2h each: 12h^2 + 13h (Narayanan et al. 2021 Sec. 5.1). */
static void test_gpt_params_per_layer(void **state)
{
    (void)state;
    cdse_model m = gpt3_175b();
    double h = 12288.0;
    assert_rel(cdse_model_params_per_layer(&m), 12.0 * h * h + 13.0 * h, REL);
    assert_rel(cdse_model_embedding_params(&m), 50257.0 * 12288.0, REL);
}

/* Whole GPT-3 175B: 12 l h^2 (1 + 13/(12h) + (V+s)/(12lh)) + 2h (final LayerNorm)
 *   = 12*96*12288^2 + 13*96*12288 + (50257 + 2048)*12288 + 2*12288
 *   = 173946175488 + 15335424 + 642723840 + 24576 = 174604259328. */
static void test_gpt3_175b_params(void **state)
{
    (void)state;
    cdse_model m = gpt3_175b();
    double l = 96.0, h = 12288.0, V = 50257.0, s = 2048.0;
    double narayanan = 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (V + s) / (12.0 * l * h));
    assert_rel(cdse_model_params(&m), narayanan + 2.0 * h, 1e-14);
    assert_rel(cdse_model_params(&m), 174604259328.0, REL);
}

/* An untied GPT adds a second V x h matrix for the output layer. */
static void test_gpt_untied_adds_output_layer(void **state)
{
    (void)state;
    cdse_model m = gpt3_175b();
    m.tied_embeddings = false;
    assert_rel(cdse_model_params(&m), 174604259328.0 + 50257.0 * 12288.0, REL);
}

/* Llama 2 70B attention with GQA: q = 64*128 = 8192, kv = 8*128 = 1024, no biases:
 * h (q + 2kv) + q h = 8192*10240 + 8192*8192 = 83886080 + 67108864 = 150994944. */
static void test_llama_gqa_attention_params(void **state)
{
    (void)state;
    cdse_model m = llama2_70b();
    assert_rel(cdse_model_attention_params(&m), 150994944.0, REL);
}

/* SwiGLU MLP: 3 h ffn = 3*8192*28672 = 704643072; per layer + 2 RMSNorms of h:
 * 150994944 + 704643072 + 16384 = 855654400. */
static void test_llama_mlp_and_layer_params(void **state)
{
    (void)state;
    cdse_model m = llama2_70b();
    assert_rel(cdse_model_mlp_params(&m), 704643072.0, REL);
    assert_rel(cdse_model_params_per_layer(&m), 855654400.0, REL);
}

/* Whole Llama 2 70B: 80 * 855654400 + 2 * 32000*8192 (embedding and untied output) + 8192 (final
 * RMSNorm) = 68452352000 + 524288000 + 8192 = 68976648192, the count of the released checkpoint
 * (68.98e9, "70B"). No position embeddings (RoPE). */
static void test_llama2_70b_params(void **state)
{
    (void)state;
    cdse_model m = llama2_70b();
    assert_rel(cdse_model_params(&m), 68976648192.0, REL);
    /* Tying the output layer removes exactly one V x h matrix. */
    m.tied_embeddings = true;
    assert_rel(cdse_model_params(&m), 68976648192.0 - 32000.0 * 8192.0, REL);
}

/* A head size other than hidden / heads: h = 64, 4 heads of 32 (q = 128), 2 kv heads (kv = 64),
 * gated ffn 96, 2 layers, V 100, untied:
 *   attention h (q + 2kv) + q h = 64*256 + 128*64 = 16384 + 8192 = 24576
 *   MLP 3*64*96 = 18432; norms 2*64 = 128; layer 43136
 *   model 2*43136 + 2*100*64 + 64 = 86272 + 12800 + 64 = 99136. */
static void test_explicit_head_dim(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 32;
    m.ffn = 96;
    m.seq_len = 16;
    m.vocab = 100;
    m.gated_mlp = true;
    assert_rel(cdse_model_attention_params(&m), 24576.0, REL);
    assert_rel(cdse_model_params_per_layer(&m), 43136.0, REL);
    assert_rel(cdse_model_params(&m), 99136.0, REL);
}

/* Narayanan et al. 2021 eq. 3 per token for GPT-3 175B:
 * 72 l h^2 (1 + s/(6h) + V/(12hl)) = 72*96*12288^2 (1 + 2048/73728 + 50257/14155776)
 * = 1.0763734302720e12. */
static void test_gpt_flops_per_token(void **state)
{
    (void)state;
    cdse_model m = gpt3_175b();
    double l = 96.0, h = 12288.0, V = 50257.0, s = 2048.0;
    double eq3 = 72.0 * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * h * l));
    assert_rel(cdse_model_flops_per_token(&m), eq3, 1e-12);
    assert_rel(cdse_model_flops_per_token(&m), 1076373430272.0, 1e-12);
}

/* Megatron-LM's count for Llama 2 70B (g = 8 query groups, a = 64, q/h = 1):
 * 12 l h^2 [ (1 + g/a + s/h) + (ffn/h) 3/2 ] + 6 h V
 * = 12*80*8192^2 [ (1 + 0.125 + 0.5) + 3.5*1.5 ] + 6*8192*32000
 * = 64424509440 * 6.875 + 1572864000 = 442918502400 + 1572864000 = 444491366400. */
static void test_llama_gqa_swiglu_flops_per_token(void **state)
{
    (void)state;
    cdse_model m = llama2_70b();
    double l = 80.0, h = 8192.0, a = 64.0, g = 8.0, s = 4096.0, V = 32000.0, ffn = 28672.0;
    double q_ratio = 64.0 * 128.0 / h;
    double megatron =
        12.0 * l * h * h * ((1.0 + g / a + s / h) * q_ratio + ffn / h * 1.5) + 6.0 * h * V;
    assert_rel(cdse_model_flops_per_token(&m), megatron, 1e-12);
    assert_rel(cdse_model_flops_per_token(&m), 444491366400.0, 1e-12);
}

/* The same count with q != h (the explicit head_dim model above, s = 16):
 * 12 l h^2 [ (1 + 2/4 + 16/64) * 128/64 + 96/64 * 1.5 ] + 6*64*100
 * = 12*2*4096 [ 1.75*2 + 2.25 ] + 38400 = 98304 * 5.75 + 38400 = 565248 + 38400 = 603648. */
static void test_flops_per_token_query_ratio(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 32;
    m.ffn = 96;
    m.seq_len = 16;
    m.vocab = 100;
    m.gated_mlp = true;
    assert_rel(cdse_model_flops_per_token(&m), 603648.0, 1e-12);
}

/* Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts", Table 1: dim 4096, 32 layers, head 128,
 * 32 heads, 8 kv heads, hidden_dim 14336, vocabulary 32000, 8 experts, top-2), all layers MoE:
 *   attention 4096 (4096 + 2048) + 4096^2 = 25165824 + 16777216 = 41943040;
 *   experts 8 * 3 * 4096 * 14336 = 1409286144; router 8 * 4096 = 32768; RMSNorms 8192;
 *   layer 1451270144; 32 layers 46440644608; embedding + untied output 2 * 32000 * 4096 =
 *   262144000; final norm 4096: 46702792704 ("47B total parameters", Sec. 2).
 * FLOPs per token, Megatron-LM's count with num_experts_routed_to = top_k = 2, s = 4096:
 *   12 l h^2 [ (1 + 8/32 + 4096/4096) + (14336/4096) 1.5 * 2 ] + 6 h V
 *   = 6442450944 * 12.75 + 786432000 = 82141249536 + 786432000 = 82927681536. */
static void test_moe_mixtral_8x7b(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "mixtral-8x7b");
    m.layers = 32;
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 8;
    m.ffn = 14336;
    m.seq_len = 4096;
    m.vocab = 32000;
    m.gated_mlp = true;
    m.experts = 8;
    m.top_k = 2;
    cdse_model_fill_defaults(&m);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.moe_ffn, 14336);
    assert_int_equal(m.moe_every, 1);
    cdse_diag diag = {{0}};
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_OK);
    assert_rel(cdse_model_params(&m), 46702792704.0, REL);
    assert_rel(cdse_model_flops_per_token(&m), 82927681536.0, 1e-12);
}

/* Every second layer MoE with a shared expert: h 64, 4 heads of 16, gated ffn 128, 4 layers,
 * experts 4 of moe_ffn 32, top-1, 1 shared expert, V 100 untied, s 16:
 *   per layer attention 64 * 192 + 64 * 64 = 16384, norms 128: 4 * 16512 = 66048;
 *   2 dense MLPs 2 * 3 * 64 * 128 = 49152;
 *   2 MoE MLPs 2 * ((4 + 1) * 3 * 64 * 32 + 4 * 64 router) = 2 * 30976 = 61952;
 *   embeddings 2 * 6400 = 12800, final norm 64: total 190016.
 * FLOPs per token: attention 4 * (12 * 64 * 64 * 2 + 12 * 16 * 64) = 4 * 110592 = 442368;
 *   dense 2 * 12 * 64 * 128 * 1.5 = 294912; MoE 2 * 12 * 64 * 32 * 1.5 * (1 + 1) = 147456;
 *   logits 6 * 64 * 100 = 38400: 923136. */
static void test_moe_every_other_layer_shared_expert(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    m.layers = 4;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 4;
    m.head_dim = 16;
    m.ffn = 128;
    m.seq_len = 16;
    m.vocab = 100;
    m.gated_mlp = true;
    m.experts = 4;
    m.top_k = 1;
    m.moe_ffn = 32;
    m.moe_every = 2;
    m.shared_experts = 1;
    assert_rel(cdse_model_params(&m), 190016.0, REL);
    assert_rel(cdse_model_flops_per_token(&m), 923136.0, 1e-12);
}

/* Defaults: kv_heads = heads, head_dim = hidden / heads, ffn = 4 hidden. */
static void test_fill_defaults_and_check(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "t");
    m.layers = 2;
    m.hidden = 768;
    m.heads = 12;
    m.seq_len = 1024;
    m.vocab = 50257;
    cdse_model_fill_defaults(&m);
    assert_int_equal(m.kv_heads, 12);
    assert_int_equal(m.head_dim, 64);
    assert_int_equal(m.ffn, 3072);
    cdse_diag diag = {{0}};
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_OK);
    m.kv_heads = 5; /* does not divide 12 */
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "kv_heads"));
    m.kv_heads = 12;
    m.vocab = 0;
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "vocab"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt_attention_params),
        cmocka_unit_test(test_gpt_mlp_params),
        cmocka_unit_test(test_gpt_params_per_layer),
        cmocka_unit_test(test_gpt3_175b_params),
        cmocka_unit_test(test_gpt_untied_adds_output_layer),
        cmocka_unit_test(test_llama_gqa_attention_params),
        cmocka_unit_test(test_llama_mlp_and_layer_params),
        cmocka_unit_test(test_llama2_70b_params),
        cmocka_unit_test(test_explicit_head_dim),
        cmocka_unit_test(test_gpt_flops_per_token),
        cmocka_unit_test(test_llama_gqa_swiglu_flops_per_token),
        cmocka_unit_test(test_flops_per_token_query_ratio),
        cmocka_unit_test(test_moe_mixtral_8x7b),
        cmocka_unit_test(test_moe_every_other_layer_shared_expert),
        cmocka_unit_test(test_fill_defaults_and_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
