/* Fit of latency and bandwidth: recovery of hand-chosen parameters from synthetic times, the
 * non-negativity constraint, the breakpoint search, the hold-out check and the reduction
 * removal. Model terms: src/model/collective.c (ring allreduce 2(n-1)/n B/bw + 2(n-1) lat, ...). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "clusterdse/calibrate/fit.h"

/* Exact times of allreduce on n = 4 with lat = 5 us, bw = 10 GB/s:
 * t = 2*3*5 + 2*3/4 * B / (10 GB/s) = 30 us + 1.5 B / 1e4 us.
 * B = 1e4 -> 30 + 1.5 = 31.5 us; B = 1e6 -> 30 + 150 = 180 us; B = 1e8 -> 15030 us. */
static void test_predict_by_hand(void **state)
{
    (void)state;
    cdse_alpha_beta ab = {5.0, 10.0};
    assert_float_equal(cdse_fit_predict_us(CDSE_COLL_ALLREDUCE, &ab, 4, 1e4), 31.5, 1e-9);
    assert_float_equal(cdse_fit_predict_us(CDSE_COLL_ALLREDUCE, &ab, 4, 1e6), 180.0, 1e-9);
    assert_float_equal(cdse_fit_predict_us(CDSE_COLL_ALLREDUCE, &ab, 4, 1e8), 15030.0, 1e-6);
    /* allgather n = 2: (n-1) lat + (n-1)/n B/bw = 5 + 0.5 * 1e6 / 1e4 = 55 us. */
    assert_float_equal(cdse_fit_predict_us(CDSE_COLL_ALLGATHER, &ab, 2, 1e6), 55.0, 1e-9);
    /* sendrecv: lat + B/bw = 5 + 1e6 / 1e4 = 105 us. */
    assert_float_equal(cdse_fit_predict_us(CDSE_COLL_SENDRECV, &ab, 8, 1e6), 105.0, 1e-9);
}

static int make_points(int coll, double lat, double bw, int n, cdse_fit_point *p)
{
    cdse_alpha_beta ab = {lat, bw};
    int k = 0;
    for (double b = 8; b <= 67108864; b *= 2, k++)
        p[k] = (cdse_fit_point){n, b, cdse_fit_predict_us(coll, &ab, n, b)};
    return k;
}

/* Exact data: the fit returns the parameters it was made from (lat 3.5 us, 12.5 GB/s). */
static void test_recovers_exact(void **state)
{
    (void)state;
    cdse_fit_point p[64];
    int coll_list[] = {CDSE_COLL_ALLREDUCE, CDSE_COLL_ALLGATHER, CDSE_COLL_REDUCE_SCATTER,
                       CDSE_COLL_ALLTOALL, CDSE_COLL_SENDRECV};
    for (int c = 0; c < 5; c++) {
        int n = make_points(coll_list[c], 3.5, 12.5, 4, p);
        cdse_alpha_beta ab;
        assert_int_equal(cdse_fit_wls(coll_list[c], p, n, &ab), 0);
        assert_float_equal(ab.latency_us, 3.5, 1e-6);
        assert_float_equal(ab.bandwidth_gbs, 12.5, 1e-6);
        cdse_fit_result r;
        assert_int_equal(cdse_fit_collective(coll_list[c], p, n, &r), 0);
        assert_float_equal(r.profile.latency_us, 3.5, 1e-6);
        assert_float_equal(r.profile.bandwidth_gbs, 12.5, 1e-6);
        assert_float_equal(r.stats.r2, 1.0, 1e-9);
        assert_true(r.stats.worst_rel < 1e-9);
        assert_true(r.holdout_points > 0);
        assert_true(r.holdout_median < 1e-9);
    }
}

/* Mixed group sizes at one level (n = 2 and n = 4 allgather, lat 2 us, 40 GB/s) fit jointly. */
static void test_mixed_group_sizes(void **state)
{
    (void)state;
    cdse_fit_point p[128];
    int n = make_points(CDSE_COLL_ALLGATHER, 2.0, 40.0, 2, p);
    n += make_points(CDSE_COLL_ALLGATHER, 2.0, 40.0, 4, p + n);
    cdse_fit_result r;
    assert_int_equal(cdse_fit_collective(CDSE_COLL_ALLGATHER, p, n, &r), 0);
    assert_int_equal(r.group_min, 2);
    assert_int_equal(r.group_max, 4);
    assert_float_equal(r.profile.latency_us, 2.0, 1e-6);
    assert_float_equal(r.profile.bandwidth_gbs, 40.0, 1e-6);
}

/* Times that shrink with size would need a negative latency; the constrained fit keeps
 * latency at 0. Hand data (sendrecv): t = B / 1e3 us - 5 for B = 1e4, 2e4, 4e4 -> 5, 15, 35.
 * Unconstrained weighted LS gives a negative intercept; the fit must return lat = 0. */
static void test_nonnegative(void **state)
{
    (void)state;
    cdse_fit_point p[3] = {{2, 1e4, 5}, {2, 2e4, 15}, {2, 4e4, 35}};
    cdse_alpha_beta ab;
    assert_int_equal(cdse_fit_wls(CDSE_COLL_SENDRECV, p, 3, &ab), 0);
    assert_float_equal(ab.latency_us, 0.0, 0.0);
    assert_true(ab.bandwidth_gbs > 0);
    /* With lat = 0, t = B x inv; the relative-error optimum is inv = sum(v/t) / sum(v^2/t^2)
     * = (2000 + 1333.3 + 1142.9) / (4e6 + 1.7778e6 + 1.3061e6) = 4476.2 / 7.0839e6 =
     * 6.3188e-4 us/B -> bw = 1e-3 / 6.3188e-4 = 1.5826 GB/s. */
    assert_float_equal(ab.bandwidth_gbs, 1.5826, 1e-3);
}

/* Two regimes: below 4 KiB lat 1 us and 1 GB/s, above lat 20 us and 10 GB/s (alltoall, n = 2).
 * The breakpoint search must find 4096 B and both parameter pairs. */
static void test_breakpoint(void **state)
{
    (void)state;
    cdse_fit_point p[64];
    cdse_alpha_beta small = {1.0, 1.0}, large = {20.0, 10.0};
    int n = 0;
    for (double b = 64; b <= 4194304; b *= 2, n++)
        p[n] = (cdse_fit_point){
            2, b, cdse_fit_predict_us(CDSE_COLL_ALLTOALL, b <= 4096 ? &small : &large, 2, b)};
    cdse_fit_result r;
    assert_int_equal(cdse_fit_collective(CDSE_COLL_ALLTOALL, p, n, &r), 0);
    assert_float_equal(r.breakpoint_bytes, 4096, 0);
    assert_float_equal(r.small.latency_us, 1.0, 1e-6);
    assert_float_equal(r.small.bandwidth_gbs, 1.0, 1e-6);
    assert_float_equal(r.large.latency_us, 20.0, 1e-6);
    assert_float_equal(r.large.bandwidth_gbs, 10.0, 1e-6);
    assert_float_equal(r.regimes.worst_rel, 0.0, 1e-9);
}

/* Too few points or a single size are errors, not silent fits. */
static void test_degenerate(void **state)
{
    (void)state;
    cdse_fit_point one[1] = {{2, 1024, 10}};
    cdse_fit_point same[2] = {{2, 1024, 10}, {2, 1024, 11}};
    cdse_alpha_beta ab;
    assert_int_equal(cdse_fit_wls(CDSE_COLL_ALLREDUCE, one, 1, &ab), CDSE_EINVAL);
    assert_int_equal(cdse_fit_wls(CDSE_COLL_ALLREDUCE, same, 2, &ab), CDSE_EINVAL);
    cdse_fit_result r;
    assert_int_equal(cdse_fit_collective(CDSE_COLL_ALLREDUCE, one, 1, &r), CDSE_EINVAL);
}

/* Reduction removal: allreduce n = 4, B = 4e6, 200 us measured, reduction at 10 GB/s:
 * reduced bytes (n-1)/n B = 3e6; 3e6 B / (10 GB/s = 1e4 B/us) = 300 us > 200 -> floored at 1%
 * = 2 us. B = 4e4 at 100 us: 3e4 / 1e4 = 3 us -> 97 us. allgather is left alone. */
static void test_remove_reduction(void **state)
{
    (void)state;
    cdse_fit_point p[2] = {{4, 4e6, 200}, {4, 4e4, 100}};
    cdse_fit_remove_reduction(CDSE_COLL_ALLREDUCE, 10.0, p, 2);
    assert_float_equal(p[0].t_us, 2.0, 1e-9);
    assert_float_equal(p[1].t_us, 97.0, 1e-9);
    cdse_fit_point q[1] = {{4, 4e4, 100}};
    cdse_fit_remove_reduction(CDSE_COLL_ALLGATHER, 10.0, q, 1);
    assert_float_equal(q[0].t_us, 100.0, 0);
}

/* Goodness of fit by hand: measured 10, 20, 30; predicted by lat 10 us, bw unbounded for
 * sendrecv = 10, 10, 10 -> SS_res = 0 + 100 + 400 = 500, SS_tot = 100 + 0 + 100 = 200,
 * R2 = 1 - 500/200 = -1.5; relative errors 0, 0.5, 0.667: worst 0.667, median 0.5. */
static void test_evaluate_by_hand(void **state)
{
    (void)state;
    cdse_fit_point p[3] = {{2, 1, 10}, {2, 2, 20}, {2, 3, 30}};
    cdse_alpha_beta ab = {10.0, 1e300};
    cdse_fit_stats st;
    cdse_fit_evaluate(CDSE_COLL_SENDRECV, &ab, p, 3, &st);
    assert_float_equal(st.r2, -1.5, 1e-9);
    assert_float_equal(st.worst_rel, 2.0 / 3.0, 1e-9);
    assert_float_equal(st.median_rel, 0.5, 1e-9);
}

/* Least median of relative errors ignores a minority of outliers: 9 exact sendrecv points of
 * lat 2 us, 4 GB/s (t = 2 + B / 4e3 us) and 4 points 3x slower; the exact parameters give a
 * median error of 0 (9 of 13 points exact), and no other pair does. */
static void test_lmeds_outliers(void **state)
{
    (void)state;
    cdse_fit_point p[13];
    cdse_alpha_beta ab = {2.0, 4.0};
    for (int i = 0; i < 13; i++) {
        double b = 1024.0 * (1 << i);
        double t = cdse_fit_predict_us(CDSE_COLL_SENDRECV, &ab, 2, b);
        p[i] = (cdse_fit_point){2, b, i % 3 == 1 ? 3 * t : t}; /* i = 1, 4, 7, 10 slower */
    }
    cdse_alpha_beta got;
    assert_int_equal(cdse_fit_lmeds(CDSE_COLL_SENDRECV, p, 13, &got), 0);
    assert_float_equal(got.latency_us, 2.0, 1e-9);
    assert_float_equal(got.bandwidth_gbs, 4.0, 1e-9);
    cdse_fit_result r;
    assert_int_equal(cdse_fit_collective(CDSE_COLL_SENDRECV, p, 13, &r), 0);
    assert_float_equal(r.stats.median_rel, 0.0, 1e-9);
    assert_string_equal(cdse_fit_choice_name(CDSE_FIT_LMEDS), "lmeds");
}

/* cdse_fit_apply: probe rows of level 0 (allgather, n = 4, lat 1.5 us, 30 GB/s) and level 1
 * (sendrecv, lat 4 us, 12 GB/s) land on the innermost and outermost levels of a 2-level system;
 * the other collectives stay unset (0). Mixed rows (level -1) are ignored. */
static void test_apply(void **state)
{
    (void)state;
    cdse_probe_row rows[40];
    memset(rows, 0, sizeof rows);
    cdse_alpha_beta ag = {1.5, 30.0}, sr = {4.0, 12.0};
    int n = 0;
    for (int k = 0; k < 16; k++) {
        double b = 1024.0 * (1 << k);
        cdse_probe_row *r = &rows[n++];
        snprintf(r->collective, sizeof r->collective, "allgather");
        snprintf(r->dtype, sizeof r->dtype, "float");
        r->group_size = 4;
        r->level = 0;
        r->bytes = (int64_t)b;
        r->t_median_us = cdse_fit_predict_us(CDSE_COLL_ALLGATHER, &ag, 4, b);
        r = &rows[n++];
        snprintf(r->collective, sizeof r->collective, "sendrecv");
        snprintf(r->dtype, sizeof r->dtype, "float");
        r->group_size = 2;
        r->level = 1;
        r->bytes = (int64_t)b;
        r->t_median_us = cdse_fit_predict_us(CDSE_COLL_SENDRECV, &sr, 2, b);
    }
    cdse_probe_row *mixed = &rows[n++];
    snprintf(mixed->collective, sizeof mixed->collective, "allreduce");
    snprintf(mixed->dtype, sizeof mixed->dtype, "float");
    mixed->level = -1;
    mixed->group_size = 8;
    mixed->bytes = 1024;
    mixed->t_median_us = 10;
    cdse_probe_result pr;
    memset(&pr, 0, sizeof pr);
    pr.rows = rows;
    pr.n_rows = n;
    cdse_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n_levels = 2;
    cdse_diag diag;
    assert_int_equal(cdse_fit_apply(&pr, &sys, &diag), 2);
    assert_float_equal(sys.level[0].coll_latency_us[CDSE_COLL_ALLGATHER], 1.5, 1e-6);
    assert_float_equal(sys.level[0].coll_bandwidth_gbs[CDSE_COLL_ALLGATHER], 30.0, 1e-6);
    assert_float_equal(sys.level[1].coll_latency_us[CDSE_COLL_SENDRECV], 4.0, 1e-6);
    assert_float_equal(sys.level[1].coll_bandwidth_gbs[CDSE_COLL_SENDRECV], 12.0, 1e-6);
    assert_float_equal(sys.level[0].coll_bandwidth_gbs[CDSE_COLL_ALLREDUCE], 0.0, 0);
    assert_float_equal(sys.level[1].coll_bandwidth_gbs[CDSE_COLL_ALLREDUCE], 0.0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_predict_by_hand),   cmocka_unit_test(test_recovers_exact),
        cmocka_unit_test(test_mixed_group_sizes), cmocka_unit_test(test_nonnegative),
        cmocka_unit_test(test_breakpoint),        cmocka_unit_test(test_degenerate),
        cmocka_unit_test(test_remove_reduction),  cmocka_unit_test(test_evaluate_by_hand),
        cmocka_unit_test(test_lmeds_outliers),    cmocka_unit_test(test_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
