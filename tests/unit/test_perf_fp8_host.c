/* The evaluator (src/model/perf*.c) against hand calculations: FP8 layers and memory, host costs,
 * runtime and reserved memory, GEMM scale and last-stage peaks. Split from test_perf.c (issue 28);
 * the shared fixtures and the list of sources are in perf_fixtures.h. */
#include "perf_fixtures.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_layer),
        cmocka_unit_test(test_fp8_current_scaling),
        cmocka_unit_test(test_dp_comm_not_overlapped),
        cmocka_unit_test(test_fp8_memory),
        cmocka_unit_test(test_fp8_non_tn_gemm),
        cmocka_unit_test(test_fp8_param_gather_memory),
        cmocka_unit_test(test_last_stage_peaks),
        cmocka_unit_test(test_host_costs),
        cmocka_unit_test(test_recompute_launches),
        cmocka_unit_test(test_runtime_memory),
        cmocka_unit_test(test_gemm_scale),
        cmocka_unit_test(test_reserved_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
