/* Guard over extreme but valid inputs (fuzz findings B3, B7): whatever a job can hold within the
 * documented limits (model sizes up to CDSE_MODEL_MAX_*, parallel degrees and micro-batch up to
 * 1024, gpus up to 2^20, global_batch up to 2^31-1, system values across their allowed ranges),
 * the evaluator never returns a negative or non-finite time, memory, rate or utilization.
 * Inputs are drawn log-uniformly from a seeded generator, so a failure repeats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "clusterdse/model/perf.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    /* xorshift64* (Vigna 2016, "An experimental exploration of Marsaglia's xorshift generators").
     */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static double unit(void)
{
    return (double)(next_u64() >> 11) / 9007199254740992.0;
}

/* An integer in [lo, hi], log-uniform, with a one-in-four chance of each bound. */
static int draw_int(int lo, int hi)
{
    uint64_t pick = next_u64() % 4;
    if (pick == 0)
        return lo;
    if (pick == 1)
        return hi;
    double x = exp(log((double)lo) + unit() * (log((double)hi) - log((double)lo)));
    int v = (int)x;
    return v < lo ? lo : v > hi ? hi : v;
}

/* A double in [lo, hi], log-uniform (lo > 0). */
static double draw_real(double lo, double hi)
{
    return exp(log(lo) + unit() * (log(hi) - log(lo)));
}

static cdse_model draw_model(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "extreme");
    m.layers = draw_int(1, CDSE_MODEL_MAX_COUNT);
    m.hidden = draw_int(1, CDSE_MODEL_MAX_WIDTH);
    m.kv_heads = draw_int(1, 1024);
    m.heads = m.kv_heads * draw_int(1, CDSE_MODEL_MAX_COUNT / m.kv_heads);
    m.head_dim = draw_int(1, CDSE_MODEL_MAX_WIDTH);
    m.ffn = draw_int(1, CDSE_MODEL_MAX_FFN);
    m.seq_len = draw_int(1, CDSE_MODEL_MAX_LENGTH);
    m.vocab = draw_int(1, CDSE_MODEL_MAX_LENGTH);
    m.gated_mlp = next_u64() & 1;
    m.tied_embeddings = next_u64() & 1;
    if (next_u64() & 1) {
        m.experts = draw_int(2, CDSE_MODEL_MAX_COUNT);
        m.top_k = draw_int(1, m.experts);
        m.moe_ffn = draw_int(1, CDSE_MODEL_MAX_FFN);
        m.moe_every = draw_int(1, CDSE_MODEL_MAX_COUNT);
        m.shared_experts = draw_int(1, CDSE_MODEL_MAX_COUNT) - 1;
        m.capacity_factor = next_u64() & 1 ? 0.0 : draw_real(1e-6, 1e6);
        m.moe_imbalance = next_u64() & 1 ? 0.0 : draw_real(1.0, 1e6);
        m.first_dense_layers = draw_int(1, m.layers) - 1;
    }
    cdse_model_fill_defaults(&m);
    return m;
}

/* System values across the ranges the job parser and cdse_system_check accept
 * (docs/job-file.md): rates, capacities and efficiencies down to CDSE_SYSTEM_MIN_VALUE. */
static cdse_system draw_system(void)
{
    const double lo = CDSE_SYSTEM_MIN_VALUE;
    cdse_system s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "extreme");
    for (int d = 0; d < CDSE_DTYPE_COUNT; d++)
        s.peak_tflops[d] = draw_real(lo, 1e7);
    s.gemm_eff.n = 2;
    s.gemm_eff.flops[0] = 1.0;
    s.gemm_eff.eff[0] = draw_real(lo, 1.0);
    s.gemm_eff.flops[1] = 1e20;
    s.gemm_eff.eff[1] = draw_real(lo, 1.0);
    s.gemm_eff_fp8 = s.gemm_eff;
    s.attention_efficiency = draw_real(lo, 1.0);
    s.hbm_gib = draw_real(lo, 1e6);
    s.hbm_bandwidth_gbs = draw_real(lo, 1e6);
    s.hbm_efficiency = draw_real(lo, 1.0);
    s.reserved_gib = s.hbm_gib * unit() * 0.99;
    s.gpus_per_node = draw_int(2, 1000000);
    s.n_levels = 2;
    s.level[0].size = s.gpus_per_node;
    s.level[1].size = 0;
    for (int l = 0; l < 2; l++) {
        s.level[l].bandwidth_gbs = draw_real(lo, 1e9);
        s.level[l].efficiency = draw_real(lo, 1.0);
        s.level[l].latency_us = draw_real(lo, 1e9);
    }
    if (next_u64() & 1) {
        s.tier.attach = CDSE_TIER_PER_GPU + (int)(next_u64() % 3);
        s.tier.capacity_gib = draw_real(lo, 1e9);
        s.tier.bandwidth_gbs = draw_real(lo, 1e9);
        s.tier.latency_us = draw_real(lo, 1e9);
        s.tier.shared_by = draw_int(1, 1000000);
    }
    return s;
}

/* A strategy, and the model and system adjusted so that three draws in four pass the strategy
 * rules (divisibility, pipeline chunks, batch) and reach the time and memory model. */
static cdse_strategy draw_strategy(cdse_model *m, const cdse_system *s)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.tp = 1 << (next_u64() % 11);
    st.pp = 1 << (next_u64() % 11);
    st.cp = 1 << (next_u64() % 11);
    st.ep = 1 << (next_u64() % 11);
    st.vpp = 1 << (next_u64() % 11);
    st.microbatch = draw_int(1, 1024);
    st.gpus = draw_int(1, 1 << 20);
    st.global_batch = draw_int(1, 2147483647);
    st.recompute = (int)(next_u64() % CDSE_RECOMPUTE_COUNT);
    st.sequence_parallel = next_u64() & 1;
    st.zero = (int)(next_u64() % 4);
    const int precisions[] = {CDSE_BF16, CDSE_FP16, CDSE_FP8};
    st.precision = precisions[next_u64() % 3];
    st.flash_attention = next_u64() & 1;
    st.tp_comm_overlap = next_u64() & 1;
    st.offload = s->tier.attach != CDSE_TIER_NONE ? (int)(next_u64() % 8) : 0;
    st.placement = (int)(next_u64() % CDSE_PLACEMENT_COUNT);
    if (next_u64() % 4 == 0)
        return st;
    /* Make it fit: sizes multiples of the degrees, and products within their limits. */
    while (st.tp * st.pp * st.cp > (1 << 20))
        st.cp > 1 ? (st.cp /= 2) : st.pp > 1 ? (st.pp /= 2) : (st.tp /= 2);
    m->kv_heads = st.tp;
    m->heads = st.tp * draw_int(1, CDSE_MODEL_MAX_COUNT / st.tp);
    m->ffn = m->ffn < st.tp ? st.tp : m->ffn - m->ffn % st.tp;
    if (m->layers < st.pp * st.vpp)
        m->layers = st.pp * st.vpp;
    if (m->first_dense_layers >= m->layers)
        m->first_dense_layers = m->layers - 1;
    m->seq_len = m->seq_len < 2 * st.cp ? 2 * st.cp : m->seq_len - m->seq_len % (2 * st.cp);
    int dp = draw_int(1, (1 << 20) / (st.tp * st.pp * st.cp));
    st.gpus = st.tp * st.pp * st.cp * dp;
    if (m->experts > 0) {
        m->moe_ffn = m->moe_ffn < st.tp ? st.tp : m->moe_ffn - m->moe_ffn % st.tp;
        while (st.ep > 1 && (dp * st.cp) % st.ep != 0)
            st.ep /= 2;
        m->experts = m->experts < st.ep ? st.ep : m->experts - m->experts % st.ep;
        if (m->experts < 2)
            m->experts = 2;
        if (m->top_k > m->experts)
            m->top_k = m->experts;
    } else {
        st.ep = 1;
    }
    if (st.vpp > 1 && st.pp < 2)
        st.vpp = 1;
    int64_t per_step = (int64_t)st.microbatch * dp * (st.vpp > 1 ? st.pp : 1);
    if (per_step > 2147483647) {
        st.microbatch = 1;
        per_step = (int64_t)dp * (st.vpp > 1 ? st.pp : 1);
    }
    st.global_batch = (int)(per_step * draw_int(1, (int)(2147483647 / per_step)));
    st.sequence_parallel = st.sequence_parallel && st.tp > 1;
    st.zero = dp * st.cp > 1 ? st.zero : 0;
    return st;
}

static void check_result(const cdse_result *r, int trial)
{
    const struct {
        const char *name;
        double value;
    } figures[] = {
        {"time_per_iteration_s", r->time_per_iteration_s},
        {"t_forward_s", r->t_forward_s},
        {"t_backward_s", r->t_backward_s},
        {"t_recompute_s", r->t_recompute_s},
        {"t_tp_comm_s", r->t_tp_comm_s},
        {"t_pp_comm_s", r->t_pp_comm_s},
        {"t_dp_comm_s", r->t_dp_comm_s},
        {"t_ep_comm_s", r->t_ep_comm_s},
        {"t_cp_comm_s", r->t_cp_comm_s},
        {"t_bubble_s", r->t_bubble_s},
        {"t_optimizer_s", r->t_optimizer_s},
        {"t_offload_s", r->t_offload_s},
        {"tokens_per_s", r->tokens_per_s},
        {"model_tflops_per_gpu", r->model_tflops_per_gpu},
        {"hardware_tflops_per_gpu", r->hardware_tflops_per_gpu},
        {"mfu", r->mfu},
        {"hfu", r->hfu},
        {"mem_total_gib", r->mem_total_gib},
        {"mem_weights_gib", r->mem_weights_gib},
        {"mem_gradients_gib", r->mem_gradients_gib},
        {"mem_optimizer_gib", r->mem_optimizer_gib},
        {"mem_activations_gib", r->mem_activations_gib},
        {"mem_other_gib", r->mem_other_gib},
        {"mem_offloaded_gib", r->mem_offloaded_gib},
        {"t_imbalance_s", r->t_imbalance_s},
    };
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
        if (!(isfinite(figures[i].value) && figures[i].value >= 0.0))
            fail_msg("trial %d, status %s: %s = %g", trial, cdse_status_name(r->status),
                     figures[i].name, figures[i].value);
    if (r->status == CDSE_ST_OK && !(r->time_per_iteration_s > 0.0))
        fail_msg("trial %d: a feasible row with time %g", trial, r->time_per_iteration_s);
}

static void test_extreme_configurations(void **state)
{
    (void)state;
    enum { TRIALS = 200000 };
    int evaluated = 0, feasible = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
        cdse_model m = draw_model();
        cdse_system s = draw_system();
        cdse_strategy st = draw_strategy(&m, &s);
        cdse_diag diag;
        assert_int_equal(cdse_model_check(&m, &diag), CDSE_OK);
        if (cdse_system_check(&s, &diag) != CDSE_OK)
            fail_msg("trial %d: %s", trial, diag.msg);
        cdse_result r;
        cdse_evaluate(&m, &s, &st, &r);
        check_result(&r, trial);
        evaluated += r.status == CDSE_ST_OK || r.status == CDSE_ST_OOM;
        feasible += r.status == CDSE_ST_OK;
    }
    /* The guard means something only if many draws reach the time and memory model. */
    print_message("%d of %d draws fully evaluated, %d feasible\n", evaluated, TRIALS, feasible);
    assert_true(evaluated > TRIALS / 100);
}

/* The limits themselves: one past each is refused by cdse_model_check. */
static void test_limits_refused(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "limits");
    m.layers = CDSE_MODEL_MAX_COUNT;
    m.hidden = CDSE_MODEL_MAX_WIDTH;
    m.heads = 1;
    m.seq_len = CDSE_MODEL_MAX_LENGTH;
    m.vocab = CDSE_MODEL_MAX_LENGTH;
    cdse_model_fill_defaults(&m);
    /* ffn defaults to 4 * hidden = 2^26, the MLP width limit. */
    assert_int_equal(m.ffn, CDSE_MODEL_MAX_FFN);
    cdse_diag diag;
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_OK);
    m.layers = CDSE_MODEL_MAX_COUNT + 1;
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "layers = 1048577; allowed: an integer from 1 to 1048576"));
    m.layers = 2147483647; /* fuzz finding B3 */
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
    m.layers = 4;
    m.hidden = CDSE_MODEL_MAX_WIDTH + 1;
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "hidden = 16777217"));
    m.hidden = 4;
    m.seq_len = CDSE_MODEL_MAX_LENGTH + 1;
    assert_int_equal(cdse_model_check(&m, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "seq_len = 1073741825"));
}

/* A subnormal bandwidth (1e-310) made times infinite and rows NaN with status ok: rates below
 * CDSE_SYSTEM_MIN_VALUE = 1e-6 are refused. */
static void test_system_floor(void **state)
{
    (void)state;
    rng_state = 42;
    cdse_system s = draw_system();
    cdse_diag diag;
    assert_int_equal(cdse_system_check(&s, &diag), CDSE_OK);
    s.hbm_bandwidth_gbs = 1e-310;
    assert_int_equal(cdse_system_check(&s, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, ">= 1e-06"));
    s.hbm_bandwidth_gbs = 1e-6;
    assert_int_equal(cdse_system_check(&s, &diag), CDSE_OK);
    s.level[1].bandwidth_gbs = 5e-7;
    assert_int_equal(cdse_system_check(&s, &diag), CDSE_EINVAL);
    s.level[1].bandwidth_gbs = 1.0;
    s.peak_tflops[CDSE_FP8] = 1e-9;
    assert_int_equal(cdse_system_check(&s, &diag), CDSE_EINVAL);
    s.peak_tflops[CDSE_FP8] = 0.0; /* 0 = unsupported stays allowed */
    assert_int_equal(cdse_system_check(&s, &diag), CDSE_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extreme_configurations),
        cmocka_unit_test(test_limits_refused),
        cmocka_unit_test(test_system_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
