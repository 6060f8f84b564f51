/* Placement orders derived from their names (src/model/strategy.c: cdse_placement_names,
 * cdse_placement_parse, cdse_placement_strides, cdse_placement_ranks_without) and the pool's
 * use of them (src/model/pool.c).
 *
 * The numbering is the contract of the stores (the placement column is an HDF5 enumeration of
 * these numbers): the list below is the one stores made before the orders were derived
 * (strategy.c at a31d589), written out by hand. Strides follow DESIGN.md "Rank placement":
 * groups laid out innermost first, a group's stride the product of the sizes inside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <string.h>

#include "clusterdse/model/pool.h"

static const char *const stored_names[24] = {
    "tp-cp-dp-pp", "tp-cp-pp-dp", "tp-dp-cp-pp", "tp-dp-pp-cp", "tp-pp-cp-dp", "tp-pp-dp-cp",
    "cp-tp-dp-pp", "cp-tp-pp-dp", "cp-dp-tp-pp", "cp-dp-pp-tp", "cp-pp-tp-dp", "cp-pp-dp-tp",
    "dp-tp-cp-pp", "dp-tp-pp-cp", "dp-cp-tp-pp", "dp-cp-pp-tp", "dp-pp-tp-cp", "dp-pp-cp-tp",
    "pp-tp-cp-dp", "pp-tp-dp-cp", "pp-cp-tp-dp", "pp-cp-dp-tp", "pp-dp-tp-cp", "pp-dp-cp-tp",
};

static void test_names_keep_store_numbers(void **state)
{
    (void)state;
    for (int i = 0; i < 24; i++) {
        assert_non_null(cdse_placement_names[i]);
        assert_string_equal(cdse_placement_names[i], stored_names[i]);
        assert_int_equal(cdse_placement_parse(stored_names[i]), i);
    }
    assert_null(cdse_placement_names[24]);
}

static void test_parse_rejects(void **state)
{
    (void)state;
    const char *bad[] = {"",
                         "tp",
                         "tp-cp-dp",
                         "tp-cp-dp-pp-",
                         "tp-tp-dp-pp",
                         "tp-cp-dp-ep",
                         "TP-CP-DP-PP",
                         "tp_cp_dp_pp",
                         "tp-cp-dp-ppx",
                         "tp-cp-dp-pp-tp",
                         "tpcp-dp-pp",
                         " tp-cp-dp-pp"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cdse_placement_parse(bad[i]) != -1)
            fail_msg("'%s' parsed as %d", bad[i], cdse_placement_parse(bad[i]));
}

/* t = 2, c = 3, d = 5, p = 7:
 *   dp-pp-cp-tp: dp 1, pp 5, cp 5 x 7 = 35, tp 35 x 3 = 105;
 *   cp-tp-pp-dp: cp 1, tp 3, pp 6, dp 42. */
static void test_strides_from_parsed_name(void **state)
{
    (void)state;
    int s[CDSE_PLACE_DIMS];
    cdse_placement_strides(cdse_placement_parse("dp-pp-cp-tp"), 2, 3, 5, 7, s);
    assert_int_equal(s[CDSE_PLACE_DP], 1);
    assert_int_equal(s[CDSE_PLACE_PP], 5);
    assert_int_equal(s[CDSE_PLACE_CP], 35);
    assert_int_equal(s[CDSE_PLACE_TP], 105);
    cdse_placement_strides(cdse_placement_parse("cp-tp-pp-dp"), 2, 3, 5, 7, s);
    assert_int_equal(s[CDSE_PLACE_CP], 1);
    assert_int_equal(s[CDSE_PLACE_TP], 3);
    assert_int_equal(s[CDSE_PLACE_PP], 6);
    assert_int_equal(s[CDSE_PLACE_DP], 42);
}

/* 96 GPUs, t = 2, c = 3, p = 4: dp = 4; a replica holds t c p = 24 ranks, a stage t c d = 24;
 * with p = 2: dp 8, replica 12, stage 48. */
static void test_ranks_without(void **state)
{
    (void)state;
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 96;
    st.tp = 2;
    st.cp = 3;
    st.pp = 4;
    assert_int_equal(cdse_placement_ranks_without(&st, CDSE_PLACE_DP), 24);
    assert_int_equal(cdse_placement_ranks_without(&st, CDSE_PLACE_PP), 24);
    st.pp = 2;
    assert_int_equal(cdse_placement_ranks_without(&st, CDSE_PLACE_DP), 12);
    assert_int_equal(cdse_placement_ranks_without(&st, CDSE_PLACE_PP), 48);
    st.tp = 0;
    assert_int_equal(cdse_placement_ranks_without(&st, CDSE_PLACE_DP), 0);
}

static cdse_system gpu_type(double slowdown)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, slowdown == 1.0 ? "type-a" : "type-b");
    s.peak_tflops[CDSE_BF16] = 100.0 / slowdown;
    s.gemm_eff.n = 1;
    s.gemm_eff.flops[0] = 1e9;
    s.gemm_eff.eff[0] = 0.5;
    s.attention_efficiency = 0.4;
    s.hbm_gib = 1e4;
    s.hbm_bandwidth_gbs = 1000.0 / slowdown;
    s.hbm_efficiency = 1.0;
    s.gpus_per_node = 8;
    s.n_levels = 1;
    s.level[0].bandwidth_gbs = 100.0;
    s.level[0].efficiency = 1.0;
    s.level[0].latency_us = 1.0;
    return s;
}

/* A pool of two types, 1 GPU each, dp = 2, micro-batch 2^28 and global batch 2^29: the dp
 * split's probe of 4 micro-batches per replica would be a global batch of 2^28 x 2 x 4 = 2^31,
 * past INT_MAX (pool.c multiplied in int before). The split is not costed: status pool_split. */
static void test_pool_probe_batch_overflow(void **state)
{
    (void)state;
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "tiny");
    m.layers = 2;
    m.hidden = 64;
    m.heads = 4;
    m.kv_heads = 4;
    m.head_dim = 16;
    m.ffn = 256;
    m.seq_len = 16;
    m.vocab = 128;
    cdse_system a = gpu_type(1.0), b = gpu_type(2.0);
    const cdse_system *types[2] = {&a, &b};
    int counts[2] = {1, 1};
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 2;
    st.tp = st.cp = st.pp = st.ep = st.vpp = 1;
    st.microbatch = 1 << 28;
    st.global_batch = 1 << 29;
    st.precision = CDSE_BF16;
    cdse_result r;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_int_equal(r.status, CDSE_ST_POOL_SPLIT);
    /* Half that micro-batch fits: 2^27 x 2 x 4 = 2^30; the split is costed. */
    st.microbatch = 1 << 27;
    cdse_evaluate_pool(&m, types, counts, 2, &st, &r);
    assert_int_not_equal(r.status, CDSE_ST_POOL_SPLIT);
    assert_int_equal(r.pool_split, CDSE_POOL_DP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_keep_store_numbers),  cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_strides_from_parsed_name),  cmocka_unit_test(test_ranks_without),
        cmocka_unit_test(test_pool_probe_batch_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
