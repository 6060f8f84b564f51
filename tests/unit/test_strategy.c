/* Validity rules of src/model/strategy.c: one minimal example per cdse_status reason, the derived
 * dp and grad_accum, and the order of the checks.
 *
 * Rules and their sources:
 *   - gpus = tp * pp * cp * dp (Narayanan et al. 2021, Sec. 3: n = t p d, plus Megatron-Core's
 *     context-parallel dimension);
 *   - tp divides the heads and the FFN (Shoeybi et al. 2019, Sec. 3); key/value heads are split
 *     when there are at least tp of them, replicated otherwise (Megatron-Core GQA);
 *   - pp * vpp chunks each get a layer (uneven splits allowed; with the embedding and the output
 * layer counted as one layer each, chunks of only these: Dubey et al. 2024 Sec. 3.3.2); the
 * interleaved schedule needs a
 * pipeline and a number of micro-batches that is a multiple of pp (Narayanan et al. 2021,
 * Sec. 2.2.2; Megatron-LM "number of microbatches is not divisible by pipeline-parallel size when
 * using interleaved schedule");
 *   - global_batch = microbatch * dp * grad_accum (Narayanan et al. 2021, Sec. 2.2: B = b m d);
 *   - load-balanced context parallelism splits the sequence into 2 cp chunks (Megatron-Core). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "clusterdse/model/perf.h"
#include "clusterdse/model/strategy.h"

/* A small GPT: 8 layers, hidden 512, 8 heads, ffn 2048, sequence 1024. */
static cdse_model small_gpt(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "small-gpt");
    m.layers = 8;
    m.hidden = 512;
    m.heads = 8;
    m.kv_heads = 8;
    m.head_dim = 64;
    m.ffn = 2048;
    m.seq_len = 1024;
    m.vocab = 1000;
    m.tied_embeddings = true;
    return m;
}

/* bf16 and fp16 supported, fp8 not (an A100-like GPU), no second memory tier, 1000 GiB HBM. */
static cdse_system small_system(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "test");
    s.peak_tflops[CDSE_FP32] = 19.5;
    s.peak_tflops[CDSE_BF16] = 312.0;
    s.peak_tflops[CDSE_FP16] = 312.0;
    s.attention_efficiency = 0.5;
    s.hbm_gib = 1000.0;
    s.hbm_bandwidth_gbs = 2000.0;
    s.hbm_efficiency = 0.9;
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

/* A valid single-GPU configuration; each test changes what it needs. */
static cdse_strategy base(void)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 1;
    st.tp = 1;
    st.pp = 1;
    st.cp = 1;
    st.ep = 1;
    st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = 1;
    st.recompute = CDSE_RECOMPUTE_NONE;
    st.precision = CDSE_BF16;
    return st;
}

static int check(const cdse_model *m, cdse_strategy st)
{
    cdse_system sys = small_system();
    return cdse_strategy_check(m, &sys, &st);
}

/* 64 GPUs = tp 4 * pp 2 * cp 2 * dp 4; global batch 64 = microbatch 2 * dp 4 * 8 micro-batches. */
static void test_ok_derives_dp_and_grad_accum(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_system sys = small_system();
    cdse_strategy st = base();
    st.gpus = 64;
    st.tp = 4;
    st.pp = 2;
    st.cp = 2;
    st.microbatch = 2;
    st.global_batch = 64;
    assert_int_equal(cdse_strategy_check(&m, &sys, &st), CDSE_ST_OK);
    assert_int_equal(st.dp, 4);
    assert_int_equal(st.grad_accum, 8);
    /* 16 GPUs, tp 2: dp 8; batch 512 of micro-batch 4: 512 / 32 = 16. */
    st = base();
    st.gpus = 16;
    st.tp = 2;
    st.microbatch = 4;
    st.global_batch = 512;
    assert_int_equal(cdse_strategy_check(&m, &sys, &st), CDSE_ST_OK);
    assert_int_equal(st.dp, 8);
    assert_int_equal(st.grad_accum, 16);
}

/* 12 GPUs cannot hold tp 8; a zero degree is never valid. */
static void test_gpus_not_divisible(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.gpus = 12;
    st.tp = 8;
    assert_int_equal(check(&m, st), CDSE_ST_GPUS_NOT_DIVISIBLE);
    st = base();
    st.gpus = 8;
    st.tp = 2;
    st.pp = 2;
    st.cp = 3; /* 8 % 12 */
    assert_int_equal(check(&m, st), CDSE_ST_GPUS_NOT_DIVISIBLE);
    st = base();
    st.tp = 0;
    assert_int_equal(check(&m, st), CDSE_ST_GPUS_NOT_DIVISIBLE);
}

/* 8 heads are not split 3 ways; 12 heads with 3 kv heads on tp 4: 4 > 3 kv heads must be
 * replicated, which needs 3 | 4: no. 8 heads with 2 kv heads on tp 4: each kv head replicated on
 * two ranks: valid. An FFN of 2050 is not split 4 ways. */
static void test_tp_heads(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.gpus = 3;
    st.tp = 3;
    assert_int_equal(check(&m, st), CDSE_ST_TP_HEADS);

    cdse_model gqa = small_gpt();
    gqa.heads = 12;
    gqa.kv_heads = 3;
    gqa.hidden = 768;
    st = base();
    st.gpus = 4;
    st.tp = 4;
    assert_int_equal(check(&gqa, st), CDSE_ST_TP_HEADS);

    gqa = small_gpt();
    gqa.kv_heads = 2;
    assert_int_equal(check(&gqa, st), CDSE_ST_OK);
    gqa.kv_heads = 4; /* 4 kv heads on tp 4: one each */
    assert_int_equal(check(&gqa, st), CDSE_ST_OK);

    cdse_model odd_ffn = small_gpt();
    odd_ffn.ffn = 2050;
    assert_int_equal(check(&odd_ffn, st), CDSE_ST_TP_HEADS);

    /* Experts are split over the expert tensor-parallel size, tp by default (Megatron-Core
     * --expert-tensor-parallel-size; ColumnParallelLinear divides the output size by it): an
     * expert FFN of 2050 cannot be split 4 ways, a fault of the expert grid (ep_invalid). */
    cdse_model odd_expert = small_gpt();
    odd_expert.experts = 8;
    odd_expert.top_k = 2;
    odd_expert.moe_every = 1;
    odd_expert.moe_ffn = 2050;
    assert_int_equal(check(&odd_expert, st), CDSE_ST_EP);
}

/* Every pipeline chunk needs a layer: 8 layers on pp 9; on pp 2 with 5 virtual stages (10 chunks).
 * Uneven splits are allowed (Megatron-Core): 8 layers on pp 3 is valid. */
static void test_pp_layers(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.gpus = 9;
    st.pp = 9;
    st.global_batch = 9;
    assert_int_equal(check(&m, st), CDSE_ST_PP_LAYERS);
    st = base();
    st.gpus = 2;
    st.pp = 2;
    st.vpp = 5;
    st.global_batch = 4;
    assert_int_equal(check(&m, st), CDSE_ST_PP_LAYERS);
    st = base();
    st.gpus = 3;
    st.pp = 3;
    st.global_batch = 3;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
    /* A split that counts the embedding and the output layer as one layer each (stack key
     * pipeline_split_embedding) has 8 + 2 = 10 units: pp 2 x vpp 5 chunks, the first holding only
     * the embedding and the last only the output layer (Dubey et al. 2024 Sec. 3.3.2); 11 chunks
     * (no interleaving: pp 11) leave one without a unit. */
    cdse_stack split = cdse_stack_default;
    split.pipeline_split_embedding = true;
    st = base();
    st.stack = &split;
    st.gpus = 2;
    st.pp = 2;
    st.vpp = 5;
    st.global_batch = 4;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
    st = base();
    st.stack = &split;
    st.gpus = 11;
    st.pp = 11;
    st.global_batch = 11;
    assert_int_equal(check(&m, st), CDSE_ST_PP_LAYERS);
}

/* Interleaving without a pipeline (pp 1, vpp 2); with pp 4 and 6 micro-batches (6 % 4 != 0).
 * pp 4, vpp 2 with 8 micro-batches is valid; interleaving on DeepSpeed's engine is not. */
static void test_vpp(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.vpp = 2;
    st.global_batch = 4;
    assert_int_equal(check(&m, st), CDSE_ST_VPP);
    st = base();
    st.gpus = 4;
    st.pp = 4;
    st.vpp = 2;
    st.global_batch = 6;
    assert_int_equal(check(&m, st), CDSE_ST_VPP);
    st.global_batch = 8;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
    /* pp = 2 is enough when the transfers overlap computation (Megatron-LM arguments.py: with
     * --overlap-p2p-communication, pipeline-model-parallel size > 1; perf*.c models that overlap
     * for interleaving): 2 GPUs, vpp 2, 4 micro-batches. */
    st.gpus = 2;
    st.pp = 2;
    st.global_batch = 4;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
    /* DeepSpeed's pipeline engine (stack pipeline_lockstep) has no virtual stages: the same
     * configuration is refused, and runs without interleaving. */
    cdse_stack deepspeed = cdse_stack_default;
    deepspeed.pipeline_lockstep = true;
    st.stack = &deepspeed;
    assert_int_equal(check(&m, st), CDSE_ST_VPP);
    st.vpp = 1;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
}

/* dp 4, micro-batch 2: a global batch of 12 is not a multiple of 8. */
static void test_batch_not_divisible(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.gpus = 4;
    st.microbatch = 2;
    st.global_batch = 12;
    assert_int_equal(check(&m, st), CDSE_ST_BATCH_NOT_DIVISIBLE);
    st.global_batch = 16;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
}

/* Sequence 1024 on cp 3: 1024 % 6 != 0. A 1020-token sequence on cp 4: 1020 % 8 != 0. */
static void test_cp(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.gpus = 3;
    st.cp = 3;
    assert_int_equal(check(&m, st), CDSE_ST_CP);
    m.seq_len = 1020;
    st.gpus = 4;
    st.cp = 4;
    assert_int_equal(check(&m, st), CDSE_ST_CP);
    m.seq_len = 1024;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
}

/* Expert parallelism without experts; 8 experts on ep 3; 8 experts on ep 4 with dp * cp = 2. */
static void test_ep(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.gpus = 2;
    st.ep = 2;
    st.global_batch = 2;
    assert_int_equal(check(&m, st), CDSE_ST_EP);
    cdse_model moe = small_gpt();
    moe.experts = 8;
    moe.top_k = 2;
    moe.moe_ffn = 2048;
    moe.moe_every = 1;
    st.gpus = 6;
    st.ep = 3;
    st.global_batch = 6;
    assert_int_equal(check(&moe, st), CDSE_ST_EP);
    st.gpus = 2;
    st.ep = 4;
    st.global_batch = 2;
    assert_int_equal(check(&moe, st), CDSE_ST_EP);
    st.ep = 2;
    assert_int_equal(check(&moe, st), CDSE_ST_OK);
}

/* MoE parallel folding (Megatron-Core parallel_state.initialize_model_parallel): the expert grid
 * etp x ep x edp x pp covers the world, so etp * ep must divide tp * cp * dp, and edp =
 * tp cp dp / (etp ep). Qwen3-235B-A22B as Megatron-Bridge runs it: 256 GPUs, tp 2, pp 8 ->
 * dp 16; ep 32 with etp 1: 32 divides 2 x 16 = 32, edp 1; with etp = tp = 2 (the default),
 * 64 does not divide 32. With pp not the outermost group (placement tp-cp-pp-dp) the attention
 * and MoE data-parallel sizes must agree (Megatron's assertion): tp 2, pp 2, dp 4 on 16 GPUs,
 * etp 1, ep 2 -> edp 4 = dp (valid); ep 4 -> edp 2 (invalid). */
static void test_moe_folding(void **state)
{
    (void)state;
    cdse_model moe = small_gpt();
    moe.experts = 64;
    moe.top_k = 8;
    moe.moe_ffn = 1024;
    moe.moe_every = 1;
    moe.layers = 16;
    cdse_strategy st = base();
    st.gpus = 256;
    st.tp = 2;
    st.pp = 8;
    st.ep = 32;
    st.etp = 1;
    st.global_batch = 32;
    cdse_system sys = small_system();
    cdse_strategy checked = st;
    assert_int_equal(cdse_strategy_check(&moe, &sys, &checked), CDSE_ST_OK);
    assert_int_equal(checked.dp, 16);
    assert_int_equal(checked.edp, 1);
    st.etp = 0; /* = tp */
    assert_int_equal(check(&moe, st), CDSE_ST_EP);

    st.gpus = 16;
    st.pp = 2;
    st.etp = 1;
    st.ep = 2;
    st.global_batch = 8;
    st.placement = 1; /* tp-cp-pp-dp */
    assert_int_equal(check(&moe, st), CDSE_ST_OK);
    st.ep = 4;
    assert_int_equal(check(&moe, st), CDSE_ST_EP);
    st.placement = 0; /* tp-cp-dp-pp: pp outermost, any edp */
    assert_int_equal(check(&moe, st), CDSE_ST_OK);
}

/* Strides of the expert groups: the placement with tp -> etp, cp absent and ep just inside dp.
 *   tp-cp-dp-pp, etp 2, ep 4, edp 2, pp 8: etp stride 1, ep 2, edp 2 x 4 = 8;
 *   tp-cp-dp-pp, etp 1, ep 32, edp 1: 1, 1, 32;
 *   dp-tp-cp-pp (ep and edp innermost), etp 2, ep 4, edp 2: ep 1, edp 4, etp 4 x 2 = 8. */
static void test_expert_strides(void **state)
{
    (void)state;
    int s[CDSE_EXPERT_DIMS];
    cdse_expert_strides(0, 2, 4, 2, 8, s);
    assert_int_equal(s[CDSE_EXPERT_TP], 1);
    assert_int_equal(s[CDSE_EXPERT_EP], 2);
    assert_int_equal(s[CDSE_EXPERT_DP], 8);
    cdse_expert_strides(0, 1, 32, 1, 8, s);
    assert_int_equal(s[CDSE_EXPERT_TP], 1);
    assert_int_equal(s[CDSE_EXPERT_EP], 1);
    assert_int_equal(s[CDSE_EXPERT_DP], 32);
    assert_string_equal(cdse_placement_names[12], "dp-tp-cp-pp");
    cdse_expert_strides(12, 2, 4, 2, 8, s);
    assert_int_equal(s[CDSE_EXPERT_EP], 1);
    assert_int_equal(s[CDSE_EXPERT_DP], 4);
    assert_int_equal(s[CDSE_EXPERT_TP], 8);
    assert_true(cdse_placement_pp_last(0));
    assert_false(cdse_placement_pp_last(1));
}

static void test_sp_needs_tp(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.sequence_parallel = true;
    assert_int_equal(check(&m, st), CDSE_ST_SP_NEEDS_TP);
    st.gpus = 2;
    st.tp = 2;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
}

/* ZeRO shards over the dp * cp ranks that hold the same weights: with one such rank there is
 * nothing to shard. dp 1 with cp 2 shards over 2 ranks: valid. */
static void test_zero_needs_dp(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.zero = 1;
    assert_int_equal(check(&m, st), CDSE_ST_ZERO_NEEDS_DP);
    st.gpus = 2;
    st.tp = 2;
    assert_int_equal(check(&m, st), CDSE_ST_ZERO_NEEDS_DP);
    st.tp = 1;
    st.cp = 2;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
}

/* FP8 on a GPU with no FP8 peak (A100: no FP8 tensor cores, NVIDIA A100 datasheet). */
static void test_dtype_unsupported(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.precision = CDSE_FP8;
    assert_int_equal(check(&m, st), CDSE_ST_DTYPE_UNSUPPORTED);
    st.precision = CDSE_FP16;
    assert_int_equal(check(&m, st), CDSE_ST_OK);
}

static void test_offload_no_tier(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.offload = CDSE_OFFLOAD_OPTIMIZER;
    assert_int_equal(check(&m, st), CDSE_ST_OFFLOAD_NO_TIER);
    cdse_system sys = small_system();
    sys.tier.attach = CDSE_TIER_PER_GPU;
    sys.tier.capacity_gib = 512.0;
    sys.tier.bandwidth_gbs = 64.0;
    sys.tier.shared_by = 1;
    assert_int_equal(cdse_strategy_check(&m, &sys, &st), CDSE_ST_OK);
}

/* OOM is decided by cdse_evaluate: weights alone of 8 layers of 12 h^2 + 13 h parameters plus the
 * embeddings exceed a 0.001 GiB HBM (8 * (12*512^2 + 13*512) * 2 B = 50.4 MB). The figures are
 * still reported. */
static void test_oom_reports_figures(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_system sys = small_system();
    sys.hbm_gib = 0.001;
    cdse_strategy st = base();
    cdse_result r;
    cdse_evaluate(&m, &sys, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OOM);
    assert_true(r.mem_weights_gib > 8.0 * (12.0 * 512 * 512 + 13.0 * 512) * 2.0 / CDSE_GIB);
    assert_true(r.time_per_iteration_s > 0.0);
    sys.hbm_gib = 1000.0;
    cdse_evaluate(&m, &sys, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OK);
    /* A structurally impossible configuration gets its status and zero figures. */
    st.tp = 3;
    st.gpus = 3;
    cdse_evaluate(&m, &sys, &st, &r);
    assert_int_equal(r.status, CDSE_ST_TP_HEADS);
    assert_true(r.time_per_iteration_s == 0.0);
    assert_true(r.mem_weights_gib == 0.0);
}

/* The first failing check is reported: SP without TP comes before ZeRO without DP; a layer count
 * that pp does not divide comes before a batch that dp does not divide. */
static void test_order_of_checks(void **state)
{
    (void)state;
    cdse_model m = small_gpt();
    cdse_strategy st = base();
    st.sequence_parallel = true;
    st.zero = 2;
    assert_int_equal(check(&m, st), CDSE_ST_SP_NEEDS_TP);
    st = base();
    st.gpus = 18;
    st.pp = 9;
    st.global_batch = 3; /* dp 2: 3 % 2 != 0 too */
    assert_int_equal(check(&m, st), CDSE_ST_PP_LAYERS);
}

/* Rank placement (DESIGN.md "Rank placement": groups laid out innermost first): the stride of a
 * group is the product of the sizes of the groups inside it. tp 8, cp 1, dp 2, pp 2:
 *   default tp-cp-dp-pp: tp 1, cp 8, dp 8 x 1 = 8, pp 8 x 1 x 2 = 16;
 *   dp-tp-cp-pp: dp 1, tp 2, cp 2 x 8 = 16, pp 16;
 *   pp-dp-cp-tp: pp 1, dp 2, cp 2 x 2 = 4, tp 4. */
static void test_placement_strides(void **state)
{
    (void)state;
    assert_string_equal(cdse_placement_names[0], "tp-cp-dp-pp");
    int code_dp_first = -1, code_pp_first = -1, n = 0;
    for (; cdse_placement_names[n] != NULL; n++) {
        if (strcmp(cdse_placement_names[n], "dp-tp-cp-pp") == 0)
            code_dp_first = n;
        if (strcmp(cdse_placement_names[n], "pp-dp-cp-tp") == 0)
            code_pp_first = n;
    }
    assert_int_equal(n, 24);
    int s[CDSE_PLACE_DIMS];
    cdse_placement_strides(0, 8, 1, 2, 2, s);
    assert_int_equal(s[CDSE_PLACE_TP], 1);
    assert_int_equal(s[CDSE_PLACE_CP], 8);
    assert_int_equal(s[CDSE_PLACE_DP], 8);
    assert_int_equal(s[CDSE_PLACE_PP], 16);
    cdse_placement_strides(code_dp_first, 8, 1, 2, 2, s);
    assert_int_equal(s[CDSE_PLACE_DP], 1);
    assert_int_equal(s[CDSE_PLACE_TP], 2);
    assert_int_equal(s[CDSE_PLACE_CP], 16);
    assert_int_equal(s[CDSE_PLACE_PP], 16);
    cdse_placement_strides(code_pp_first, 8, 1, 2, 2, s);
    assert_int_equal(s[CDSE_PLACE_PP], 1);
    assert_int_equal(s[CDSE_PLACE_DP], 2);
    assert_int_equal(s[CDSE_PLACE_CP], 4);
    assert_int_equal(s[CDSE_PLACE_TP], 4);
}

/* Names as the CSV prints them, and back. */
static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(cdse_status_name(CDSE_ST_OK), "ok");
    assert_string_equal(cdse_status_name(CDSE_ST_OOM), "oom");
    assert_string_equal(cdse_status_name(CDSE_ST_GPUS_NOT_DIVISIBLE), "gpus_not_divisible");
    assert_string_equal(cdse_status_name(CDSE_ST_BATCH_NOT_DIVISIBLE), "batch_not_divisible");
    for (int i = 0; i < CDSE_ST_COUNT; i++)
        assert_int_equal(cdse_status_parse(cdse_status_name(i)), i);
    assert_int_equal(cdse_status_parse("nope"), -1);
    assert_string_equal(cdse_recompute_name(CDSE_RECOMPUTE_SELECTIVE), "selective");
    assert_int_equal(cdse_recompute_parse("full"), CDSE_RECOMPUTE_FULL);
    assert_int_equal(cdse_recompute_parse("all"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_derives_dp_and_grad_accum),
        cmocka_unit_test(test_gpus_not_divisible),
        cmocka_unit_test(test_tp_heads),
        cmocka_unit_test(test_pp_layers),
        cmocka_unit_test(test_vpp),
        cmocka_unit_test(test_batch_not_divisible),
        cmocka_unit_test(test_cp),
        cmocka_unit_test(test_ep),
        cmocka_unit_test(test_moe_folding),
        cmocka_unit_test(test_expert_strides),
        cmocka_unit_test(test_sp_needs_tp),
        cmocka_unit_test(test_zero_needs_dp),
        cmocka_unit_test(test_dtype_unsupported),
        cmocka_unit_test(test_offload_no_tier),
        cmocka_unit_test(test_oom_reports_figures),
        cmocka_unit_test(test_order_of_checks),
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_placement_strides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
