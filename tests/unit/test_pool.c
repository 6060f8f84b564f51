/* Heterogeneous pools (src/model/pool.c, cdse_evaluate_pool) against hand calculations.
 *
 * Two GPU types are filled by hand, identical except that type B has half of type A's GEMM peak
 * (50 vs 100 TFLOP/s) and half its HBM bandwidth (500 vs 1000 GB/s); links are made negligible
 * (10^9 GB/s, no latency). Every kernel of the evaluator is costed as max(FLOPs / (peak x eff),
 * bytes / HBM bandwidth) or bytes / HBM bandwidth (perf*.c gemm_time, batched_gemm_time,
 * elementwise_costs, the optimizer's 58 B per parameter), so halving both rates doubles every
 * computation term exactly: one micro-batch (or one layer) takes a on A and 2a on B.
 *
 * The rules of pool.h / pool.c applied by hand:
 *   - dp split: replicas of tp x cp x pp GPUs, r_i of type i; micro-batch slots are handed out one
 *     per replica of a type at a time (r_i slots at once) to the type whose replicas would finish
 *     earliest, finish = (m_i + 1) x per-micro-batch time; share_i = r_i m_i / total micro-batches;
 *   - pp split: stages of tp x cp x dp GPUs, p_i of type i, each starting with vpp layers; layers
 *     are added (vpp per stage of a type) to the type whose stages stay fastest,
 *     (L_i + vpp) x per-layer time, within the layers that fit its HBM; share_i = p_i L_i / L;
 *   - each type is costed as if the whole job ran on it with its share; the pool takes the
 *     slowest type's time; the faster split wins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/collective.h"
#include "clusterdse/model/pool.h"

static void assert_status_at(int actual, int expected, const char *file, int line)
{
    if (actual != expected) {
        print_error("%s:%d: status %s, expected %s\n", file, line, cdse_status_name(actual),
                    cdse_status_name(expected));
        _fail(file, line);
    }
}
#define assert_status(actual, expected) assert_status_at(actual, expected, __FILE__, __LINE__)

/* GPT-style: h = 1024, 16 heads of 64, ffn 4096, s = 512, V = 4096, tied embeddings. */
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
    m.tied_embeddings = true;
    return m;
}

/* Type A: 100 TFLOP/s bf16 at a constant GEMM efficiency of 0.5, 1000 GB/s HBM at full
 * efficiency, 10^4 GiB, 8 GPUs per node, negligible links. Type B: 50 TFLOP/s and 500 GB/s.
 * `slowdown` = 2 gives B; 4 gives a type four times slower. */
static cdse_system gpu_type(double slowdown)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, slowdown == 1.0 ? "type-a" : "type-b");
    s.peak_tflops[CDSE_BF16] = 100.0 / slowdown;
    s.gemm_eff.n = 2;
    s.gemm_eff.flops[0] = 1e6;
    s.gemm_eff.eff[0] = 0.5;
    s.gemm_eff.flops[1] = 1e15;
    s.gemm_eff.eff[1] = 0.5;
    s.attention_efficiency = 0.4;
    s.hbm_gib = 1e4;
    s.hbm_bandwidth_gbs = 1000.0 / slowdown;
    s.hbm_efficiency = 1.0;
    s.reserved_gib = 1.5;
    s.gpus_per_node = 8;
    s.n_levels = 2;
    for (int l = 0; l < 2; l++) {
        s.level[l].size = l == 0 ? 8 : 0;
        s.level[l].bandwidth_gbs = 1e9;
        s.level[l].efficiency = 1.0;
        s.level[l].latency_us = 0.0;
    }
    return s;
}

/* The default stack without the host launch cost and runtime memory (tested in test_perf.c),
 * which would make these small test models host-bound and blur the split arithmetic below. */
static cdse_stack quiet_stack;

static cdse_strategy strat(int gpus, int tp, int pp, int global_batch)
{
    quiet_stack = cdse_stack_default;
    quiet_stack.launch_s_per_layer = 0.0;
    quiet_stack.runtime_gib = 0.0;
    quiet_stack.allocator_overhead = 0.0;
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = gpus;
    st.tp = tp;
    st.pp = pp;
    st.cp = 1;
    st.ep = 1;
    st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = global_batch;
    st.precision = CDSE_BF16;
    st.stack = &quiet_stack;
    return st;
}

static void evaluate(const cdse_model *m, const cdse_system *s, const cdse_strategy *st,
                     cdse_result *r)
{
    cdse_evaluate(m, s, st, r);
    assert_status(r->status, CDSE_ST_OK);
}

/* dp split, 8 GPUs of A + 8 of B, tp = pp = cp = 1: 16 replicas of one GPU, r_A = r_B = 8;
 * global batch 48 micro-batches. Hand-out (a = A's micro-batch time, B's is 2a; each step gives
 * 8 slots, 6 steps):
 *   step 1: A finishes at 1a, B at 2a -> A (m_A = 1);
 *   step 2: A 2a, B 2a (tie) -> either; both orders below end in the same split:
 *     A first: A(2); A 3a vs B 2a -> B(1); A 3a vs B 4a -> A(3); A 4a vs B 4a tie -> A(4) or
 *     B(2), then the other: m_A = 4, m_B = 2;
 *     B first: B(1); A 2a vs B 4a -> A(2); A 3a -> A(3); A 4a vs B 4a tie -> then the other:
 *     m_A = 4, m_B = 2.
 * So m_A = 4, m_B = 2 (both finish at 4a), shares 8 x 4 / 48 = 2/3 and 8 x 2 / 48 = 1/3.
 * Type A is costed as the 16-GPU job with 16 x 4 = 64 micro-batches, B with 32; their
 * computation is the same (4a = 2 x 2a), so B is the slower by its optimizer step (twice A's:
 * the same parameters at half the HBM bandwidth) and sets the pool's time.
 * Throughput counts the pool's 48 x 512 tokens; MFU divides by the pool's peak per GPU,
 * (8 x 100 + 8 x 50) / 16 = 75 TFLOP/s (MFU = achieved model FLOP/s over the peak FLOP/s of the
 * GPUs used, Chowdhery et al. 2022, "PaLM", Appendix B). */
static void test_dp_split_two_types(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    int counts[] = {8, 8};
    cdse_strategy st = strat(16, 1, 1, 48);
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_OK);
    assert_int_equal(r.pool_split, CDSE_POOL_DP);
    assert_rel(r.pool_share[0], 2.0 / 3.0, 1e-15);
    assert_rel(r.pool_share[1], 1.0 / 3.0, 1e-15);
    assert_int_equal(r.pool_microbatches[0], 4); /* the partition as the record shows it */
    assert_int_equal(r.pool_microbatches[1], 2);
    assert_int_equal(r.pool_layers[0], 0);

    cdse_result on_a, on_b;
    cdse_strategy own = st;
    own.global_batch = 64;
    evaluate(&m, &a, &own, &on_a);
    own.global_batch = 32;
    evaluate(&m, &b, &own, &on_b);
    /* The premise: B's 2 micro-batches take as long as A's 4; B's optimizer twice A's. */
    assert_rel(on_b.t_forward_s + on_b.t_backward_s, on_a.t_forward_s + on_a.t_backward_s, 1e-12);
    assert_rel(on_b.t_optimizer_s, 2.0 * on_a.t_optimizer_s, 1e-12);
    assert_true(on_b.time_per_iteration_s > on_a.time_per_iteration_s);
    assert_rel(r.time_per_iteration_s, on_b.time_per_iteration_s, 1e-12);

    double time = r.time_per_iteration_s;
    assert_rel(r.tokens_per_s, 48.0 * 512.0 / time, 1e-12);
    double model_tflops = cdse_model_flops_per_token(&m) * 48.0 * 512.0 / time / 16.0 / 1e12;
    assert_rel(r.model_tflops_per_gpu, model_tflops, 1e-12);
    assert_rel(r.mfu, model_tflops / 75.0, 1e-12);
}

/* pp split, pp = 2 on 8 + 8 GPUs: stages of dp = 8 GPUs, one stage of each type; 12 layers.
 * Per-layer time a on A, 2a on B. Both start with 1 layer; the greedy rule:
 *   A 2a vs B 4a -> A(2); A 3a vs B 4a -> A(3); A 4a vs B 4a (tie) ...
 *   A first: A(4); A 5a vs B 4a -> B(2); A 5a vs B 6a -> A(5); 6a tie -> A(6), B(3) or B(3),
 *   A(6); A 7a vs B 8a -> A(7); 8a tie -> A(8) then B(4), or B(4) then A(8) -- 12 layers;
 *   B first at every tie gives the same end.
 * So 8 layers on A, 4 on B (both stages 8a): shares 8/12 and 4/12. The pool's time is that of
 * the slower of: A's stages with 8 layers each (a 16-layer model on A) and B's with 4 (an
 * 8-layer model on B), 6 micro-batches each (48 / dp 8).
 * The dp split of the same strategy (replicas of 2 GPUs, 4 of each type) would give A 8 and B 4
 * micro-batches of the 12-layer model; per micro-batch a pipeline of 6-layer stages. With h the
 * output layer's time on A (2h on B), 1F1B takes (m + p - 1) stage times:
 *   pp split: A 7 (8a + h), B 7 (8a + 2h)  -> 56a + 14h;
 *   dp split: A 9 (6a + h), B 5 (12a + 2h) -> 60a + 10h;
 * the pp split is faster when a > h: the output GEMM is 2 s V h FLOPs against a layer's
 * 24 s h^2 (V / 12h = 1/3 of it), so it is. */
static void test_pp_split_two_types(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    int counts[] = {8, 8};
    cdse_strategy st = strat(16, 1, 2, 48);
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_OK);
    assert_int_equal(r.pool_split, CDSE_POOL_PP);
    assert_rel(r.pool_share[0], 8.0 / 12.0, 1e-15);
    assert_rel(r.pool_share[1], 4.0 / 12.0, 1e-15);
    assert_int_equal(r.pool_layers[0], 8);
    assert_int_equal(r.pool_layers[1], 4);
    assert_int_equal(r.pool_microbatches[0], 6); /* 48 / (micro-batch 1 x dp 8) */
    assert_int_equal(r.pool_microbatches[1], 6);

    /* Consistency with the per-type evaluations the rule describes. */
    cdse_model m16 = gpt(16), m8 = gpt(8);
    cdse_result pp_a, pp_b, dp_a, dp_b;
    evaluate(&m16, &a, &st, &pp_a);
    evaluate(&m8, &b, &st, &pp_b);
    double pp_time = fmax(pp_a.time_per_iteration_s, pp_b.time_per_iteration_s);
    assert_rel(r.time_per_iteration_s, pp_time, 1e-12);
    cdse_strategy own = st;
    own.global_batch = 64;
    evaluate(&m, &a, &own, &dp_a);
    own.global_batch = 32;
    evaluate(&m, &b, &own, &dp_b);
    double dp_time = fmax(dp_a.time_per_iteration_s, dp_b.time_per_iteration_s);
    assert_true(pp_time < dp_time);
}

/* Stage times equalized within a layer's time when they cannot be equal: 13 layers on the
 * stages of the test above (one of A, per-layer time a; one of B, 2a). From the 12-layer end
 * (A 8, B 4, both 8a), the 13th layer: A 9a vs B 10a -> A: 9 layers on A, 4 on B; stage times
 * 9a and 8a, apart by a, less than one layer of the slower type (2a). The even split that
 * Megatron-LM makes (7 and 6 layers, or 6 and 7) would take 7a on A and 12a or 14a on B.
 * cdse_layer_times gives a and 2a; their ratio is checked as the premise. */
static void test_pp_split_equalized(void **state)
{
    (void)state;
    cdse_model m = gpt(13);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    int counts[] = {8, 8};
    cdse_strategy st = strat(16, 1, 2, 48);
    double fa, ba, fb, bb;
    assert_status(cdse_layer_times(&m, &a, &st, &fa, &ba), CDSE_ST_OK);
    assert_status(cdse_layer_times(&m, &b, &st, &fb, &bb), CDSE_ST_OK);
    assert_rel(fb + bb, 2.0 * (fa + ba), 1e-12);
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_OK);
    assert_int_equal(r.pool_split, CDSE_POOL_PP);
    assert_int_equal(r.pool_layers[0], 9);
    assert_int_equal(r.pool_layers[1], 4);
    double stage_a = 9.0 * (fa + ba), stage_b = 4.0 * (fb + bb);
    assert_true(fabs(stage_a - stage_b) <= fb + bb);
}

/* The same with B's HBM cut so that its stages hold at most 3 layers: B's first-stage memory
 * grows linearly with its layers; its capacity is put halfway between the memory of 3 and of 4
 * layers per stage (6- and 8-layer models on B). The greedy rule then stops B at 3 layers and A
 * takes the other 9: shares 9/12 and 3/12. The dp split would put 6 layers per stage on B,
 * which does not fit, so the pp split is kept, status ok; the pool reports the memory of B, the
 * type closest to its capacity (pool.c combine). */
static void test_pp_split_capped_by_memory(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    cdse_strategy st = strat(16, 1, 2, 48);
    cdse_model m6 = gpt(6), m8 = gpt(8);
    cdse_result three, four;
    evaluate(&m6, &b, &st, &three);
    evaluate(&m8, &b, &st, &four);
    b.hbm_gib = (three.mem_total_gib + four.mem_total_gib) / 2.0;
    const cdse_system *types[] = {&a, &b};
    int counts[] = {8, 8};
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_OK);
    assert_int_equal(r.pool_split, CDSE_POOL_PP);
    assert_rel(r.pool_share[0], 9.0 / 12.0, 1e-15);
    assert_rel(r.pool_share[1], 3.0 / 12.0, 1e-15);
    assert_int_equal(r.pool_layers[0], 9);
    assert_int_equal(r.pool_layers[1], 3);
    assert_rel(r.mem_total_gib, three.mem_total_gib, 1e-12);
    cdse_result b_all;
    cdse_evaluate(&m, &b, &st, &b_all);
    assert_status(b_all.status, CDSE_ST_OOM);
}

/* Counts that cannot be scaled to the strategy's GPUs: 3 + 5 GPUs, a 4-GPU job would take
 * 4 x 3/8 = 1.5 GPUs of the first type. */
static void test_counts_not_scalable(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    int counts[] = {3, 5};
    cdse_strategy st = strat(4, 1, 1, 8);
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_POOL_SPLIT);
}

/* 2 + 2 GPUs with tp = 4, pp = 1: a replica needs 4 GPUs of one type, neither type has them, and
 * without pipeline stages there is no pp split: pool_split, split none. */
static void test_no_whole_replica(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    int counts[] = {1, 1};
    cdse_strategy st = strat(4, 4, 1, 4);
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_POOL_SPLIT);
    assert_int_equal(r.pool_split, CDSE_POOL_NONE);
}

/* 6 GPUs of A + 10 of a type four times slower (C), 16 replicas of one GPU, 16 micro-batches:
 * 6 m_A + 10 m_C = 16 has the one solution m_A = m_C = 1, so the dp split exists: shares 6/16
 * and 10/16, time that of C with one micro-batch per replica. (Handing out slots greedily,
 * A 1a vs C 4a -> A, then A 2a vs C 4a -> A again, leaves 4 slots that no type's 6 or 10
 * replicas can take; the rule must not stop there while a split exists.) */
static void test_dp_split_exact_fill(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), c = gpu_type(4.0);
    const cdse_system *types[] = {&a, &c};
    int counts[] = {6, 10};
    cdse_strategy st = strat(16, 1, 1, 16);
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_OK);
    assert_int_equal(r.pool_split, CDSE_POOL_DP);
    assert_rel(r.pool_share[0], 6.0 / 16.0, 1e-15);
    assert_rel(r.pool_share[1], 10.0 / 16.0, 1e-15);
    cdse_result on_c;
    evaluate(&m, &c, &st, &on_c);
    assert_rel(r.time_per_iteration_s, on_c.time_per_iteration_s, 1e-12);
}

/* The shares are parts of one global batch: they add up to 1. 8 GPUs of A + 8 of C (four times
 * slower), 16 micro-batches: A 1a vs C 4a -> A, A 2a vs C 4a -> A: all 16 slots go to A's
 * replicas (m_A = 2, m_C = 0), share_A = 8 x 2 / 16 = 1. Whatever the pool does with C's idle
 * replicas, the shares of the work cannot exceed the batch. */
static void test_dp_shares_add_up(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), c = gpu_type(4.0);
    const cdse_system *types[] = {&a, &c};
    int counts[] = {8, 8};
    cdse_strategy st = strat(16, 1, 1, 16);
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_OK);
    assert_int_equal(r.pool_split, CDSE_POOL_DP);
    assert_rel(r.pool_share[0] + r.pool_share[1], 1.0, 1e-15);
}

/* Every GPU type must support the precision: type A has fp8 (200 TFLOP/s), type B does not, so
 * an fp8 strategy on the pool is dtype_unsupported (not a pool_split). */
static void test_precision_on_every_type(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    a.peak_tflops[CDSE_FP8] = 200.0;
    const cdse_system *types[] = {&a, &b};
    int counts[] = {8, 8};
    cdse_strategy st = strat(16, 1, 1, 48);
    st.precision = CDSE_FP8;
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_DTYPE_UNSUPPORTED);
}

/* With interleaving (vpp 2) every replica needs a multiple of pp micro-batches (Megatron-LM's
 * interleaved schedule). pp = 2 on 6 GPUs of A + 10 of B (B half as fast): stages of dp = 8 GPUs
 * cannot be of one type (no pp split); replicas of 2 GPUs, 3 of A and 5 of B, 48 micro-batches:
 * 3 m_A + 5 m_B = 48 with m_A, m_B even has (16, 0) and (6, 6); finish times 16a and
 * max(6a, 12a) = 12a, so (6, 6): shares 18/48 and 30/48. (Without the multiple-of-pp rule,
 * (11, 3) would finish at max(11a, 6a) = 11a, and both types would fail the vpp check.) */
static void test_dp_split_interleaved(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    int counts[] = {6, 10};
    cdse_strategy st = strat(16, 1, 2, 48);
    st.vpp = 2;
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_status(r.status, CDSE_ST_OK);
    assert_int_equal(r.pool_split, CDSE_POOL_DP);
    assert_rel(r.pool_share[0], 18.0 / 48.0, 1e-15);
    assert_rel(r.pool_share[1], 30.0 / 48.0, 1e-15);
}

/* The even partition (Megatron-LM on any cluster; the planners' baseline): the 12-layer job of
 * test_pp_split_two_types with 6 layers on every stage. Both splits then run the whole job on
 * each type (the pp split: 6-layer stages of each type; the dp split: 8 replicas of each type,
 * 48 / 8 = 6 micro-batches each), so the pool's time is the whole job on B, the slower type,
 * whichever split is kept; each type does half the work. The balanced split (8 and 4 layers)
 * is faster: B's stage time 8a instead of 12a. */
static void test_even_partition(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    cdse_system pool;
    memset(&pool, 0, sizeof pool);
    pool.pool.n_types = 2;
    pool.pool.gpus[0] = pool.pool.gpus[1] = 8;
    pool.partition = CDSE_PARTITION_EVEN;
    cdse_strategy st = strat(16, 1, 2, 48);
    cdse_result even, balanced, on_b;
    cdse_evaluate_pool_as(&m, types, &pool, &st, &even);
    assert_status(even.status, CDSE_ST_OK);
    evaluate(&m, &b, &st, &on_b);
    assert_rel(even.time_per_iteration_s, on_b.time_per_iteration_s, 1e-12);
    assert_rel(even.pool_share[0], 0.5, 1e-15);
    assert_rel(even.pool_share[1], 0.5, 1e-15);
    if (even.pool_split == CDSE_POOL_PP) {
        assert_int_equal(even.pool_layers[0], 6);
        assert_int_equal(even.pool_layers[1], 6);
    } else {
        assert_int_equal(even.pool_microbatches[0], 6);
        assert_int_equal(even.pool_microbatches[1], 6);
    }
    pool.partition = CDSE_PARTITION_BALANCED;
    cdse_evaluate_pool_as(&m, types, &pool, &st, &balanced);
    assert_true(balanced.time_per_iteration_s < even.time_per_iteration_s);
}

/* A tensor-parallel degree per type (Metis's per-stage (dp, tp)). B's HBM is cut as in
 * test_pp_split_capped_by_memory: at tp 1 its stages hold 3 layers (A then takes 9, slowest
 * stage 9a). At tp 2 (micro-batch 2 over dp 4, the same 8 sequences per pipeline step) B's
 * weights, gradients and optimizer state halve and a layer fits in less memory, so its stages
 * hold 4 layers; a layer takes a little more than 2a there (norms and dropout are not split
 * without sequence parallelism). Placing 12 layers: A 8 (8a), B 4 (4 x t_B2 < 9a): slowest
 * stage below 9a, so B runs tp 2, A keeps tp 1 (its tp 2 is slower for the same reason).
 * The premises (B's 4-layer stages fit at tp 2; 2a < t_B2 < 9a / 4) are checked first. */
static void test_tp_per_type(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    cdse_strategy st = strat(16, 1, 2, 48);
    cdse_model m6 = gpt(6), m8 = gpt(8);
    cdse_result three, four, four_tp2;
    evaluate(&m6, &b, &st, &three);
    evaluate(&m8, &b, &st, &four);
    b.hbm_gib = (three.mem_total_gib + four.mem_total_gib) / 2.0;
    cdse_strategy st2 = st;
    st2.tp = 2;
    st2.microbatch = 2;
    evaluate(&m8, &b, &st2, &four_tp2);
    assert_true(four_tp2.mem_total_gib < b.hbm_gib);
    double fa, ba, fb2, bb2;
    assert_status(cdse_layer_times(&m, &a, &st, &fa, &ba), CDSE_ST_OK);
    assert_status(cdse_layer_times(&m, &b, &st2, &fb2, &bb2), CDSE_ST_OK);
    assert_true(fb2 + bb2 > 2.0 * (fa + ba));
    assert_true(4.0 * (fb2 + bb2) < 9.0 * (fa + ba));

    const cdse_system *types[] = {&a, &b};
    cdse_system pool;
    memset(&pool, 0, sizeof pool);
    pool.pool.n_types = 2;
    pool.pool.gpus[0] = pool.pool.gpus[1] = 8;
    cdse_result one, per_type;
    cdse_evaluate_pool_as(&m, types, &pool, &st, &one);
    assert_int_equal(one.pool_split, CDSE_POOL_PP);
    assert_int_equal(one.pool_layers[0], 9);
    assert_int_equal(one.pool_tp[1], 1);
    pool.tp_per_type = true;
    cdse_evaluate_pool_as(&m, types, &pool, &st, &per_type);
    assert_status(per_type.status, CDSE_ST_OK);
    assert_int_equal(per_type.pool_split, CDSE_POOL_PP);
    assert_int_equal(per_type.pool_tp[0], 1);
    assert_int_equal(per_type.pool_tp[1], 2);
    assert_int_equal(per_type.pool_layers[0], 8);
    assert_int_equal(per_type.pool_layers[1], 4);
    assert_int_equal(per_type.pool_microbatches[0], 6); /* the same 6 pipeline steps */
    assert_int_equal(per_type.pool_microbatches[1], 6);
}

/* The link between islands (cdse_pool_island): a type of the test (levels: 8 GPUs, then
 * everything, both 10^9 GB/s without latency) as an island of 8 GPUs with a 25 GB/s, 5 us link
 * becomes levels {8, 8, link}. A data-parallel group of 16 ranks at stride 1 spans 8 inside a
 * node, 1 node inside the island, 2 islands: factors {8, 1, 2}. Its all-reduce of 8e9 bytes
 * (hierarchical ring, collective.c: each level 2 (f - 1)/f of its bytes over its bandwidth and
 * 2 (f - 1) latencies, the next level carrying 1/f of the bytes):
 *   level 0: 2 x 7/8 x 8e9 / 1e18 = 1.4e-8 s;  level 1: f = 1, nothing;
 *   link:    2 x 1/2 x 1e9 / 25e9 + 2 x 5e-6 = 0.04 + 1e-5 s;  total 0.040010014 s. */
static void test_island_levels(void **state)
{
    (void)state;
    cdse_system a = gpu_type(1.0), copy;
    assert_ptr_equal(cdse_pool_island(&a, 8, 0.0, 0.0, &copy), &a); /* no link: the type */
    const cdse_system *island = cdse_pool_island(&a, 8, 25.0, 5.0, &copy);
    assert_ptr_equal(island, &copy);
    assert_int_equal(island->n_levels, 3);
    assert_int_equal(island->level[0].size, 8);
    assert_int_equal(island->level[1].size, 8);
    assert_int_equal(island->level[2].size, 0);
    cdse_span span;
    cdse_group_span(island, 16, 1, &span);
    assert_int_equal(span.factor[0], 8);
    assert_int_equal(span.factor[1], 1);
    assert_int_equal(span.factor[2], 2);
    assert_rel(cdse_allreduce_time(island, &span, 8e9), 0.040010014, 1e-9);
}

/* A link as fast as the types' own outer network changes nothing: two types alike but for
 * their name, 8 + 8 GPUs, outer level 25 GB/s and 5 us; the data-parallel group of the dp split
 * (16 replicas of one GPU) crosses {8 in a node, 2 nodes} without the link and {8, 1, 2 over
 * the link} with it, the same rings (a level of factor 1 costs nothing, and the flat
 * all-gather's steps count the same 2 outer domains). A link 10 times slower makes the
 * iteration slower (its gradient all-reduce cannot all hide behind the backward pass here:
 * 12 layers of h = 1024 reduce 2 x 12.6M x 12 bytes in bf16 over 2.5 GB/s, ~0.1 s, against a
 * backward pass of well under that). */
static void test_link_between_islands(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(1.0);
    for (int i = 0; i < 2; i++) {
        cdse_system *s = i == 0 ? &a : &b;
        s->level[1].bandwidth_gbs = 25.0;
        s->level[1].latency_us = 5.0;
    }
    strcpy(b.name, "type-a2");
    const cdse_system *types[] = {&a, &b};
    cdse_system pool;
    memset(&pool, 0, sizeof pool);
    pool.pool.n_types = 2;
    pool.pool.gpus[0] = pool.pool.gpus[1] = 8;
    cdse_strategy st = strat(16, 1, 1, 48);
    cdse_result plain, same, slow;
    cdse_evaluate_pool_as(&m, types, &pool, &st, &plain);
    assert_status(plain.status, CDSE_ST_OK);
    pool.link_bandwidth_gbs = 25.0;
    pool.link_latency_us = 5.0;
    cdse_evaluate_pool_as(&m, types, &pool, &st, &same);
    assert_rel(same.time_per_iteration_s, plain.time_per_iteration_s, 1e-12);
    pool.link_bandwidth_gbs = 2.5;
    cdse_evaluate_pool_as(&m, types, &pool, &st, &slow);
    assert_status(slow.status, CDSE_ST_OK);
    assert_true(slow.time_per_iteration_s > plain.time_per_iteration_s);
    assert_true(slow.t_dp_comm_s > plain.t_dp_comm_s);
}

/* cdse_evaluate_memory: the memory figures and status of cdse_evaluate bit for bit (what the pp
 * split's memory slope reads), every time figure 0; on a configuration that fits, one that runs
 * out of memory (B's HBM cut below what it needs) and one the checks reject (tp 3 does not
 * divide 16 heads). */
static void test_memory_only(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system b = gpu_type(2.0);
    cdse_strategy sts[] = {strat(16, 1, 2, 48), strat(16, 2, 2, 48), strat(12, 3, 1, 48)};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < sizeof sts / sizeof sts[0]; k++) {
            cdse_result full, mem;
            cdse_evaluate(&m, &b, &sts[k], &full);
            cdse_evaluate_memory(&m, &b, &sts[k], &mem);
            assert_int_equal(mem.status, full.status);
            assert_int_equal(mem.dp, full.dp);
            assert_true(memcmp(&mem.mem_reserved_gib, &full.mem_reserved_gib, sizeof(double)) == 0);
            assert_true(memcmp(&mem.mem_total_gib, &full.mem_total_gib, sizeof(double)) == 0);
            assert_true(
                memcmp(&mem.mem_activations_gib, &full.mem_activations_gib, sizeof(double)) == 0);
            assert_true(memcmp(&mem.mem_runtime_gib, &full.mem_runtime_gib, sizeof(double)) == 0);
            assert_true(mem.time_per_iteration_s == 0.0 && mem.tokens_per_s == 0.0);
            if (k == 0 && pass == 0)
                assert_status(full.status, CDSE_ST_OK);
            if (k == 0 && pass == 1)
                assert_status(full.status, CDSE_ST_OOM);
            if (k == 2)
                assert_true(full.status != CDSE_ST_OK && full.status != CDSE_ST_OOM);
        }
        cdse_result fit;
        cdse_evaluate(&m, &b, &sts[0], &fit);
        b.hbm_gib = fit.mem_total_gib / 2.0; /* the second pass: out of memory */
    }
}

/* The pool's memo (pool.h): with a memo, every configuration's result is the one without it, bit
 * for bit, in any order and when the memo already holds the evaluations of other configurations;
 * and the memo is filled (its slots name the model and a type). The strategies come in pairs of
 * global batches, which share the probes (2 and 4 micro-batches per replica whatever the batch). */
static cdse_pool_memo memo; /* 1024 slots: static, not on the test's stack */

static void test_memo_same_results(void **state)
{
    (void)state;
    cdse_model m = gpt(12);
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[] = {&a, &b};
    cdse_system pool;
    memset(&pool, 0, sizeof pool);
    pool.pool.n_types = 2;
    pool.pool.gpus[0] = pool.pool.gpus[1] = 8;
    pool.tp_per_type = true;
    cdse_strategy sts[8];
    int n = 0;
    for (int pp = 1; pp <= 2; pp++)
        for (int tp = 1; tp <= 2; tp++)
            for (int batch = 48; batch <= 96; batch += 48)
                sts[n++] = strat(16, tp, pp, batch);
    memset(&memo, 0, sizeof memo);
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < n; k++) {
            int i = round == 0 ? k : n - 1 - k; /* the second round backwards, memo warm */
            cdse_result plain, memoized;
            cdse_evaluate_pool_as(&m, types, &pool, &sts[i], &plain);
            cdse_evaluate_pool_memo(&m, types, &pool, &sts[i], &memo, &memoized);
            assert_true(memcmp(&plain, &memoized, sizeof plain) == 0);
        }
    }
    int filled = 0;
    for (int k = 0; k < CDSE_POOL_MEMO_SLOTS; k++) {
        if (memo.slot[k].model == NULL)
            continue;
        filled++;
        assert_ptr_equal(memo.slot[k].model, &m);
        assert_true(memo.slot[k].system == &a || memo.slot[k].system == &b);
    }
    assert_true(filled > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dp_split_two_types),
        cmocka_unit_test(test_pp_split_two_types),
        cmocka_unit_test(test_pp_split_equalized),
        cmocka_unit_test(test_pp_split_capped_by_memory),
        cmocka_unit_test(test_counts_not_scalable),
        cmocka_unit_test(test_no_whole_replica),
        cmocka_unit_test(test_dp_split_exact_fill),
        cmocka_unit_test(test_dp_shares_add_up),
        cmocka_unit_test(test_precision_on_every_type),
        cmocka_unit_test(test_dp_split_interleaved),
        cmocka_unit_test(test_even_partition),
        cmocka_unit_test(test_tp_per_type),
        cmocka_unit_test(test_island_levels),
        cmocka_unit_test(test_link_between_islands),
        cmocka_unit_test(test_memory_only),
        cmocka_unit_test(test_memo_same_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
