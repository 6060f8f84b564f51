/* Variable sequence lengths (src/model/workload.c: cdse_seq_imbalance_mc, cdse_model_prepare,
 * cdse_seq_imbalance; src/model/perf*.c: cdse_evaluate with a histogram) against closed forms.
 *
 * The cost of a sample of length s is c(s) = s (1 + s / (6 h)) (workload.h). With h = 1024
 * (6 h = 6144) the two lengths used throughout cost
 *   s1 = 1536: c1 = 1536 * (1 + 1536/6144) = 1536 * 1.25 = 1920,
 *   s2 = 3072: c2 = 3072 * (1 + 3072/6144) = 3072 * 1.5  = 4608,
 * and with weights 1/2 each: mean cost mu = (c1 + c2)/2 = 3264, standard deviation
 * sigma = (c2 - c1)/2 = 1344 (a two-point distribution).
 *
 * Closed form for two ranks with n samples each. A rank's cost is n c1 + K (c2 - c1) with
 * K ~ Binomial(n, 1/2). E[max(K1, K2)] = n/2 + E|K1 - K2|/2 and K1 - K2 has the law of
 * Binomial(2n, 1/2) - n, whose mean absolute deviation is n C(2n, n) / 4^n (de Moivre's formula
 * for the mean absolute deviation of a binomial with integer mean N p,
 * E|X - Np| = 2 Np (1-p) C(N-1, Np-1) p^(Np-1) (1-p)^(N-Np) ... for N = 2n, p = 1/2 it is
 * 2 n (1/2) C(2n-1, n-1) / 2^(2n-1) = n C(2n, n) / 4^n; checked below by
 * enumeration). Dividing by the mean rank cost n mu:
 *   imbalance(2 ranks, n) = 1 + (c2 - c1)/(c1 + c2) * C(2n, n) / 4^n.
 * For n = 1: C(2,1)/4 = 1/2 gives (c1 + 3 c2) / (2 (c1 + c2)) = 15744 / 13056 = 41/34: both
 * ranks draw s1 with probability 1/4, otherwise the slower rank has s2, so E[max] =
 * (c1 + 3 c2)/4. With R ranks and one sample each, E[max] = (c1 + (2^R - 1) c2) / 2^R.
 * For large n, C(2n, n)/4^n -> 1/sqrt(pi n) (Stirling), which is the central-limit form
 * 1 + sigma z2 / (mu sqrt(n)) with z2 = E[max of two standard normals] = 1/sqrt(pi) and
 * sigma/mu = (c2 - c1)/(c1 + c2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "clusterdse/model/perf.h"
#include "clusterdse/model/workload.h"

static void assert_near_at(double actual, double expected, double tol, const char *file, int line)
{
    if (!(fabs(actual - expected) <= tol)) {
        print_error("%s:%d: actual %.17g, expected %.17g (tolerance %g, error %.3g)\n", file, line,
                    actual, expected, tol, fabs(actual - expected));
        _fail(file, line);
    }
}
#define assert_near(actual, expected, tol) assert_near_at(actual, expected, tol, __FILE__, __LINE__)

/* pi to double precision (M_PI is not in C11). */
#define PI 3.14159265358979323846

#define C1 1920.0
#define C2 4608.0
/* Monte Carlo results are compared within this many standard errors. The generator is seeded,
 * so a result is the same on every run: a pass cannot turn into a fail by chance later; 5 SE
 * leaves a two-sided false-alarm probability of 6e-7 for the one draw the seed makes. */
#define N_SE 5.0

/* A model with the two-length histogram (weights 1 and 1: cdse_model_prepare normalizes). */
static cdse_model two_lengths(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test-seqlen");
    m.layers = 2;
    m.hidden = 1024;
    m.heads = 16;
    m.kv_heads = 16;
    m.head_dim = 64;
    m.ffn = 4096;
    m.seq_len = 3072;
    m.vocab = 4096;
    m.tied_embeddings = true;
    m.n_seq_bins = 2;
    m.seq_bin_len[0] = 1536.0;
    m.seq_bin_len[1] = 3072.0;
    m.seq_bin_weight[0] = 1.0;
    m.seq_bin_weight[1] = 1.0;
    return m;
}

/* Prepared models shared by the tests (cdse_model_prepare runs a few million seeded draws, so
 * the group prepares each once): the two-length histogram with weights 1/2 each; lengths 1536
 * and 6144 with weights 3/4 and 1/4; one bin of 1536. */
typedef struct fixtures {
    cdse_model two;
    cdse_model skewed;
    cdse_model one_bin;
} fixtures;

static cdse_model skewed_lengths(void)
{
    cdse_model m = two_lengths();
    m.seq_len = 6144;
    m.seq_bin_len[1] = 6144.0;
    m.seq_bin_weight[0] = 3.0;
    m.seq_bin_weight[1] = 1.0;
    return m;
}

static int prepare_fixtures(void **state)
{
    fixtures *f = test_malloc(sizeof *f);
    f->two = two_lengths();
    cdse_model_prepare(&f->two);
    f->skewed = skewed_lengths();
    cdse_model_prepare(&f->skewed);
    f->one_bin = two_lengths();
    f->one_bin.n_seq_bins = 1;
    f->one_bin.seq_bin_weight[0] = 2.5;
    cdse_model_prepare(&f->one_bin);
    *state = f;
    return 0;
}

static int free_fixtures(void **state)
{
    test_free(*state);
    return 0;
}

/* C(2n, n) / 4^n, computed as a product to stay in range: prod_{k=1..n} (2k - 1) / (2k). */
static double central_binomial_over_4n(int n)
{
    double v = 1.0;
    for (int k = 1; k <= n; k++)
        v *= (2.0 * k - 1.0) / (2.0 * k);
    return v;
}

/* The closed form above. */
static double closed_form_two_ranks(int n)
{
    return 1.0 + (C2 - C1) / (C1 + C2) * central_binomial_over_4n(n);
}

/* Mean and variance of max(K1, K2), K ~ Binomial(n, 1/2) independent, by enumeration (an
 * independent check of the closed form and the variance the standard errors need). */
static void max_binomial_moments(int n, double *mean, double *var)
{
    double p[4097];
    p[0] = pow(0.5, n);
    for (int k = 1; k <= n; k++)
        p[k] = p[k - 1] * (n - k + 1) / k;
    double m1 = 0.0, m2 = 0.0;
    for (int a = 0; a <= n; a++)
        for (int b = 0; b <= n; b++) {
            double x = a > b ? a : b;
            m1 += p[a] * p[b] * x;
            m2 += p[a] * p[b] * x * x;
        }
    *mean = m1;
    *var = m2 - m1 * m1;
}

/* Standard error of the Monte Carlo imbalance for two ranks of n samples over `trials`
 * iterations: sd(max rank cost) / sqrt(trials) / (n mu), with sd(max cost) = (c2 - c1) sd(max K).
 */
static double se_two_ranks(int n, int trials)
{
    double mean, var;
    max_binomial_moments(n, &mean, &var);
    return (C2 - C1) * sqrt(var) / sqrt((double)trials) / (n * (C1 + C2) / 2.0);
}

/* The closed form agrees with the enumeration: E[max K] = n/2 + n C(2n,n) / (2 4^n). */
static void test_closed_form_by_enumeration(void **state)
{
    (void)state;
    int ns[] = {1, 2, 4, 16, 32, 64};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        int n = ns[i];
        double mean, var;
        max_binomial_moments(n, &mean, &var);
        assert_near(mean, n / 2.0 + n * central_binomial_over_4n(n) / 2.0, 1e-12 * n);
    }
    assert_near(closed_form_two_ranks(1), 41.0 / 34.0, 1e-15);
}

/* Two ranks, one sample each: imbalance 41/34 = 1.2058823529... The estimate of 2^20 seeded
 * trials has standard error sqrt(3/16) (c2 - c1) / mu / 2^10 = 1.741e-4 (max cost is c2 with
 * probability 3/4, c1 with 1/4). */
static void test_two_ranks_one_sample(void **state)
{
    const fixtures *f = *state;
    int trials = 1 << 20;
    double se = sqrt(3.0 / 16.0) * (C2 - C1) / ((C1 + C2) / 2.0) / 1024.0;
    assert_near(se, se_two_ranks(1, trials), 1e-12);
    double got = cdse_seq_imbalance_mc(&f->two, 2, 1, trials, 12345);
    assert_near(got, 41.0 / 34.0, N_SE * se);
}

/* Weights need not be normalized by the caller of cdse_seq_imbalance_mc: it builds its own
 * cumulative distribution from them, so weights 3 and 3 are the same histogram as 1/2 and 1/2
 * (workload.h states no precondition on the weights for this function, and a model's weights
 * are only normalized by cdse_model_prepare). */
static void test_mc_unnormalized_weights(void **state)
{
    (void)state;
    cdse_model m = two_lengths();
    m.seq_bin_weight[0] = 3.0;
    m.seq_bin_weight[1] = 3.0;
    int trials = 1 << 16;
    double got = cdse_seq_imbalance_mc(&m, 2, 1, trials, 12345);
    assert_near(got, 41.0 / 34.0, N_SE * se_two_ranks(1, trials));
}

/* Four and eight ranks, one sample each: E[max] = (c1 + (2^R - 1) c2) / 2^R, so
 *   R = 4: (1920 + 15 * 4608) / 16 / 3264 = 71040 / 52224 = 1.360294...;
 *   R = 8: (1920 + 255 * 4608) / 256 / 3264 = 1.408548...
 * The max is c1 with probability q = 2^-R, else c2: sd = (c2 - c1) sqrt(q (1 - q)). */
static void test_many_ranks_one_sample(void **state)
{
    const fixtures *f = *state;
    int trials = 1 << 18;
    int ranks[] = {4, 8};
    for (int i = 0; i < 2; i++) {
        double q = pow(0.5, ranks[i]);
        double expected = (q * C1 + (1.0 - q) * C2) / ((C1 + C2) / 2.0);
        double se = (C2 - C1) * sqrt(q * (1.0 - q)) / sqrt((double)trials) / ((C1 + C2) / 2.0);
        double got = cdse_seq_imbalance_mc(&f->two, ranks[i], 1, trials, 777);
        assert_near(got, expected, N_SE * se);
    }
    assert_near((C1 + 15.0 * C2) / 16.0 / 3264.0, 71040.0 / 52224.0, 1e-15);
}

/* Two ranks, n = 4 and 16 samples each: the binomial closed form,
 *   n = 4:  1 + (2688/6528) * 35/128 = 1.112591...;
 *   n = 16: 1 + (2688/6528) * C(32,16)/4^16 = 1 + 0.411765 * 0.139950 = 1.057626... */
static void test_two_ranks_many_samples(void **state)
{
    const fixtures *f = *state;
    int trials = 1 << 16;
    assert_near(central_binomial_over_4n(4), 35.0 / 128.0, 1e-15);
    int ns[] = {4, 16};
    for (int i = 0; i < 2; i++) {
        double got = cdse_seq_imbalance_mc(&f->two, 2, ns[i], trials, 99);
        assert_near(got, closed_form_two_ranks(ns[i]), N_SE * se_two_ranks(ns[i], trials));
    }
}

/* One bin: every rank costs the same, the imbalance is exactly 1 (c = 1920 is an integer, so
 * the sums are exact), in the Monte Carlo and everywhere on the prepared grid. */
static void test_one_bin_is_balanced(void **state)
{
    const fixtures *f = *state;
    const cdse_model *m = &f->one_bin;
    assert_true(m->seq_bin_weight[0] == 1.0);
    assert_true(m->seq_mean == 1536.0);
    assert_true(cdse_seq_imbalance_mc(m, 2, 1, 1000, 1) == 1.0);
    assert_true(cdse_seq_imbalance_mc(m, 16, 8, 1000, 2) == 1.0);
    double ranks[] = {2, 3, 64, 1000, 16384, 1e6};
    double seqs[] = {1, 5, 31, 32, 100, 4096, 1e5};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 7; j++)
            assert_near(cdse_seq_imbalance(m, ranks[i], seqs[j]), 1.0, 1e-12);
}

/* Without a histogram, or with fewer than two ranks, nothing waits: 1. */
static void test_no_histogram_or_one_rank(void **state)
{
    const fixtures *f = *state;
    cdse_model m = two_lengths();
    m.n_seq_bins = 0;
    assert_true(cdse_seq_imbalance(&m, 64, 4) == 1.0);
    assert_true(cdse_seq_imbalance_mc(&m, 64, 4, 100, 1) == 1.0);
    assert_true(cdse_seq_imbalance(&f->two, 1, 4) == 1.0);
    assert_true(cdse_seq_imbalance_mc(&f->two, 1, 4, 100, 1) == 1.0);
}

/* cdse_model_prepare normalizes the weights and sets the mean length:
 * (1536 + 3072)/2 = 2304 with weights 1/2 each; (3 * 1536 + 6144)/4 = 2688 with 3/4 and 1/4. */
static void test_prepare_mean(void **state)
{
    const fixtures *f = *state;
    assert_near(f->two.seq_mean, 2304.0, 1e-12);
    assert_near(f->two.seq_bin_weight[0], 0.5, 1e-15);
    assert_near(f->skewed.seq_mean, 2688.0, 1e-12);
    assert_near(f->skewed.seq_bin_weight[0], 0.75, 1e-15);
    assert_near(f->skewed.seq_bin_weight[1], 0.25, 1e-15);
}

/* The same seed gives bit-identical results; another seed another value (the estimate of 2^16
 * trials takes one of 2^16 + 1 values spread over ~220 standard deviations of the count). The
 * prepared grid is the same on a second preparation. */
static void test_reproducible(void **state)
{
    const fixtures *f = *state;
    double a = cdse_seq_imbalance_mc(&f->two, 2, 3, 1 << 16, 42);
    double b = cdse_seq_imbalance_mc(&f->two, 2, 3, 1 << 16, 42);
    double c = cdse_seq_imbalance_mc(&f->two, 2, 3, 1 << 16, 43);
    assert_memory_equal(&a, &b, sizeof a);
    assert_true(a != c);
    cdse_model again = two_lengths();
    cdse_model_prepare(&again);
    assert_memory_equal(f->two.seq_imbalance, again.seq_imbalance, sizeof again.seq_imbalance);
}

/* The prepared grid at its points (ranks 2^j, 2^i samples per rank) below 32 samples per rank
 * is sampled exactly with 2^18 / (ranks n) trials (workload.c SEQ_MC_DRAWS): two ranks,
 * n = 1, 2, 4, 8, 16 against the binomial closed form; 4 ranks with one sample against
 * (c1 + 15 c2)/16/mu. */
static void test_grid_exact_branch(void **state)
{
    const fixtures *f = *state;
    for (int n = 1; n <= 16; n *= 2) {
        int trials = (1 << 18) / (2 * n);
        double got = cdse_seq_imbalance(&f->two, 2, n);
        assert_near(got, closed_form_two_ranks(n), N_SE * se_two_ranks(n, trials));
    }
    double q = 1.0 / 16.0;
    double se = (C2 - C1) * sqrt(q * (1.0 - q)) / sqrt((1 << 18) / 4.0) / 3264.0;
    assert_near(cdse_seq_imbalance(&f->two, 4, 1), 71040.0 / 52224.0, N_SE * se);
}

/* From 32 samples per rank on, the grid uses the central limit theorem:
 *   imbalance = 1 + sigma z_R / (mu sqrt(n)), z_R = E[max of R standard normals].
 * (1) Its shape is exact whatever z_R is: for the same number of ranks, (g(n) - 1) sqrt(n) is
 *     the same at n = 32, 128 and 4096, and the ratio between two histograms at the same point
 *     is the ratio of their sigma/mu. The skewed histogram (c = 1920 and 6144 (1 + 1) = 12288,
 *     weights 3/4, 1/4) has mu = (3 * 1920 + 12288)/4 = 4512 and sigma = (12288 - 1920)
 *     sqrt(3/16) = 4489.3, sigma/mu = 0.99498, against 1344/3264 = 0.41176.
 * (2) Its level: for R = 2, z_2 = 1/sqrt(pi) = 0.5641896 exactly (E max(X, Y) = E|X - Y|/2 and
 *     X - Y ~ N(0, 2): E|X - Y| = 2/sqrt(pi)). workload.c estimates z_R from 64 Monte Carlo
 *     trials (expected_max_normal(ranks, 64, ...)); Var max(X, Y) = 1 - 1/pi, so one trial has
 *     sd 0.8257 and 64 trials a standard error of 0.1032: the level is checked within 5 of
 *     those, |z_est - 1/sqrt(pi)| <= 0.516, i.e. g(32) within 5 * 0.1032 * 0.41176 / sqrt(32) =
 *     0.0376 of 1 + 0.41176 / sqrt(32 pi) = 1.041068. (The binomial closed form at n = 32,
 *     1 + 0.41176 C(64,32)/4^32 = 1 + 0.41176 * 0.099347 = 1.040907, differs from the CLT
 *     form by 1.6e-4 only.) */
static void test_grid_clt_branch(void **state)
{
    const fixtures *f = *state;
    double ratio = (C2 - C1) / (C1 + C2); /* sigma / mu = 1344 / 3264 */
    double g32 = cdse_seq_imbalance(&f->two, 2, 32);
    double g128 = cdse_seq_imbalance(&f->two, 2, 128);
    double g4096 = cdse_seq_imbalance(&f->two, 2, 4096);
    assert_near((g128 - 1.0) * sqrt(128.0), (g32 - 1.0) * sqrt(32.0), 1e-12);
    assert_near((g4096 - 1.0) * 64.0, (g32 - 1.0) * sqrt(32.0), 1e-12);
    double ratio_skewed = (12288.0 - 1920.0) * sqrt(3.0 / 16.0) / 4512.0;
    assert_near((cdse_seq_imbalance(&f->skewed, 2, 64) - 1.0) /
                    (cdse_seq_imbalance(&f->two, 2, 64) - 1.0),
                ratio_skewed / ratio, 1e-12);

    double z_se = sqrt(1.0 - 1.0 / PI) / 8.0;
    double z_est = (g32 - 1.0) * sqrt(32.0) / ratio;
    print_message("z_2 estimated from 64 trials: %.6f (exact 1/sqrt(pi) = %.6f, %.2f SE)\n", z_est,
                  1.0 / sqrt(PI), (z_est - 1.0 / sqrt(PI)) / z_se);
    assert_near(z_est, 1.0 / sqrt(PI), N_SE * z_se);
    assert_near(g32, 1.0 + ratio / sqrt(32.0 * PI), N_SE * z_se * ratio / sqrt(32.0));
    assert_near(closed_form_two_ranks(32), 1.0 + ratio / sqrt(32.0 * PI), 2e-4);
}

/* The grid should be as accurate just above the branch point (32 samples per rank, CLT) as
 * just below it (16, exact sampling). An exact Monte Carlo at n = 32 with the budget the exact
 * branch spends per grid point (2^18 draws: 2^18 / 64 = 4096 trials) would land within 5 of its
 * standard errors, se_two_ranks(32, 4096) = 9.41e-4, of the binomial closed form 1.040907; the
 * CLT form itself is 1.6e-4 away. So g(2 ranks, 32) must be within 5 * 9.41e-4 + 1.6e-4 =
 * 4.86e-3 of 1.040907. (The 64-trial estimate of z_2 in cdse_model_prepare has a standard error
 * of 18% of z_2, 7.5e-3 on the imbalance at n = 32: one standard error already exceeds this
 * allowance.) */
static void test_grid_clt_accuracy_at_branch(void **state)
{
    const fixtures *f = *state;
    double clt_error = fabs(closed_form_two_ranks(32) - (1.0 + 0.41176470588 / sqrt(32.0 * PI)));
    double tol = N_SE * se_two_ranks(32, 4096) + clt_error;
    assert_near(cdse_seq_imbalance(&f->two, 2, 32), closed_form_two_ranks(32), tol);
}

/* Between grid points the value is interpolated linearly in log2(samples) and log2(ranks):
 * 48 samples per rank lies at x = log2 48 = 5.585 between 32 and 64; 3 ranks at y = log2 3
 * between 2 and 4 ranks. */
static void test_grid_interpolation(void **state)
{
    const fixtures *f = *state;
    const cdse_model *m = &f->two;
    double fx = log2(48.0) - 5.0;
    double expected = (1.0 - fx) * cdse_seq_imbalance(m, 2, 32) + fx * cdse_seq_imbalance(m, 2, 64);
    assert_near(cdse_seq_imbalance(m, 2, 48), expected, 1e-12);
    double fy = log2(3.0) - 1.0;
    expected = (1.0 - fy) * cdse_seq_imbalance(m, 2, 1) + fy * cdse_seq_imbalance(m, 4, 1);
    assert_near(cdse_seq_imbalance(m, 3, 1), expected, 1e-12);
}

/* ---- The evaluator with a histogram ---------------------------------------------------- */

/* 100 TFLOP/s, GEMM efficiency 0.5, 1000 GB/s HBM, 8 GPUs per node on fast links. */
static cdse_system test_system(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "test-sys");
    s.peak_tflops[CDSE_BF16] = 100.0;
    s.gemm_eff.n = 2;
    s.gemm_eff.flops[0] = 1e6;
    s.gemm_eff.eff[0] = 0.5;
    s.gemm_eff.flops[1] = 1e15;
    s.gemm_eff.eff[1] = 0.5;
    s.attention_efficiency = 0.4;
    s.hbm_gib = 1e4;
    s.hbm_bandwidth_gbs = 1000.0;
    s.hbm_efficiency = 1.0;
    s.reserved_gib = 1.5;
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

static cdse_strategy dp2_strategy(void)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 4;
    st.tp = 2;
    st.pp = 1;
    st.cp = 1;
    st.ep = 1;
    st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = 2; /* dp = 2: one sample per rank and iteration */
    st.precision = CDSE_BF16;
    return st;
}

/* cdse_evaluate with the two-length histogram, dp = 2 ranks of one sample each:
 *   - the imbalance is 41/34 (closed form above), within the 2^18 / 2-trial Monte Carlo error;
 *   - the time is costed at the cost-equivalent length: mean cost (1920 + 4608) / 2 = 3264 =
 *     s (1 + s / 6144) gives s_eff = 3h (sqrt(1 + 2 x 3264 / 3h) - 1) = 3072 (sqrt(3.125) - 1) =
 *     2358.6, rounded to 2359: an evaluation of the same model with seq_len = 2359 and no
 *     histogram, plus t_imbalance = (imbalance - 1) x its compute part (forward + backward +
 *     recompute + TP + CP + EP + bubble);
 *   - parameters do not depend on the sample lengths (the learned position table is seq_len x h
 *     = 3072 x h): the optimizer step and the gradient all-reduce are those at seq_len = 3072, so
 *     the time is the s_eff evaluation's with its optimizer and DP terms replaced by those at
 *     3072 (dp = 2 and fewer than 40M parameters: one bucket, the whole all-reduce shows);
 *   - throughput counts global_batch x 2304 (the mean length) tokens per iteration;
 *   - model FLOPs per token are linear in s (Megatron-LM counting, workload.c), f(s) = f0 + f1 s
 *     with, for L = 2, h = q = 1024, ffn 4096, V = 4096:
 *     f0 = 2 (12 h q 2 + 12 h ffn) + 6 h V = 150994944 + 25165824 = 176160768, f1 = 2 x 12 q =
 *     24576; a sample of length s costs s f0 + f1 s^2; the mean of s^2 is (1536^2 + 3072^2) / 2
 *     = 5898240;
 *   - memory is that of the longest sample, seq_len = 3072 without a histogram. */
static void test_evaluate_with_histogram(void **state)
{
    const fixtures *f = *state;
    const cdse_model *m = &f->two;
    cdse_system s = test_system();
    cdse_strategy st = dp2_strategy();
    cdse_result r, at_eff, at_max;
    cdse_evaluate(m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_int_equal(r.dp, 2);

    cdse_model flat = two_lengths();
    flat.n_seq_bins = 0;
    flat.seq_len = 2359;
    cdse_evaluate(&flat, &s, &st, &at_eff);
    assert_int_equal(at_eff.status, CDSE_ST_OK);
    flat.seq_len = 3072;
    cdse_evaluate(&flat, &s, &st, &at_max);
    assert_int_equal(at_max.status, CDSE_ST_OK);

    assert_near(r.seq_imbalance, 41.0 / 34.0, N_SE * se_two_ranks(1, (1 << 18) / 2));
    double compute = at_eff.t_forward_s + at_eff.t_backward_s + at_eff.t_recompute_s +
                     at_eff.t_tp_comm_s + at_eff.t_cp_comm_s + at_eff.t_ep_comm_s +
                     at_eff.t_bubble_s;
    assert_near(r.t_imbalance_s, (r.seq_imbalance - 1.0) * compute, 1e-12 * compute);
    assert_near(r.t_forward_s, at_eff.t_forward_s, 1e-12 * at_eff.t_forward_s);
    assert_near(r.t_optimizer_s, at_max.t_optimizer_s, 1e-12 * at_max.t_optimizer_s);
    assert_near(r.t_dp_comm_s, at_max.t_dp_comm_s, 1e-12 * at_max.t_dp_comm_s);
    double time = at_eff.time_per_iteration_s + r.t_imbalance_s +
                  (at_max.t_optimizer_s - at_eff.t_optimizer_s) +
                  (at_max.t_dp_comm_s - at_eff.t_dp_comm_s);
    assert_near(r.time_per_iteration_s, time, 1e-12 * time);
    assert_near(r.tokens_per_s, 2.0 * 2304.0 / time, 1e-9 * r.tokens_per_s);
    double flops = 2.0 * (2304.0 * 176160768.0 + 5898240.0 * 24576.0); /* 2 samples, 4 GPUs */
    assert_near(r.model_tflops_per_gpu, flops / time / 4.0 / 1e12, 1e-9 * r.model_tflops_per_gpu);

    assert_near(r.mem_total_gib, at_max.mem_total_gib, 1e-12 * at_max.mem_total_gib);
    assert_near(r.mem_activations_gib, at_max.mem_activations_gib, 1e-12 * at_max.mem_total_gib);
    assert_near(r.mem_weights_gib, at_max.mem_weights_gib, 1e-12 * at_max.mem_total_gib);
}

/* Issue 31 M11 (tests/findings/model/single_bin.cfg): one bin whose cost is not exact in
 * binary, s = 8192 at h = 4096: c = 8192 (1 + 8192 / 24576) = 8192 x 4/3. Every rank costs the
 * same, so the imbalance is exactly 1 on the grid, between grid points, and t_imbalance_s of an
 * evaluation is exactly 0 (it was -9.9e-14 s: the Monte Carlo ratio rounded below 1). */
static void test_one_inexact_bin_is_balanced(void **state)
{
    (void)state;
    cdse_model m = two_lengths();
    m.hidden = 4096;
    m.heads = 32;
    m.kv_heads = 8;
    m.head_dim = 128;
    m.ffn = 14336;
    m.seq_len = 8192;
    m.n_seq_bins = 1;
    m.seq_bin_len[0] = 8192.0;
    m.seq_bin_weight[0] = 1.0;
    cdse_model_prepare(&m);
    for (int i = 0; i < CDSE_SEQ_GRID_SEQS; i++)
        for (int j = 0; j < CDSE_SEQ_GRID_RANKS; j++)
            assert_true(m.seq_imbalance[i][j] == 1.0);
    double ranks[] = {2, 3, 5, 7, 64, 1000, 16384};
    double seqs[] = {1, 3, 5, 31, 33, 100, 4096};
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++)
            assert_true(cdse_seq_imbalance(&m, ranks[i], seqs[j]) == 1.0);
    cdse_system s = test_system();
    cdse_strategy st = dp2_strategy();
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    cdse_evaluate(&m, &s, &st, &r);
    assert_true(r.seq_imbalance == 1.0);
    assert_true(r.t_imbalance_s == 0.0);
}

/* Two lengths: the slowest rank is never faster than the mean anywhere on the grid or between
 * its points. */
static void test_imbalance_at_least_one(void **state)
{
    const fixtures *f = *state;
    for (double ranks = 2.0; ranks < 40000.0; ranks *= 1.37)
        for (double seqs = 1.0; seqs < 1e5; seqs *= 1.53) {
            assert_true(cdse_seq_imbalance(&f->two, ranks, seqs) >= 1.0);
            assert_true(cdse_seq_imbalance(&f->skewed, ranks, seqs) >= 1.0);
        }
}

/* A job without a histogram is unchanged: imbalance 1, no imbalance time. */
static void test_evaluate_without_histogram(void **state)
{
    (void)state;
    cdse_model m = two_lengths();
    m.n_seq_bins = 0;
    cdse_system s = test_system();
    cdse_strategy st = dp2_strategy();
    cdse_result r;
    cdse_evaluate(&m, &s, &st, &r);
    assert_int_equal(r.status, CDSE_ST_OK);
    assert_true(r.seq_imbalance == 1.0);
    assert_true(r.t_imbalance_s == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_closed_form_by_enumeration),
        cmocka_unit_test(test_two_ranks_one_sample),
        cmocka_unit_test(test_mc_unnormalized_weights),
        cmocka_unit_test(test_many_ranks_one_sample),
        cmocka_unit_test(test_two_ranks_many_samples),
        cmocka_unit_test(test_one_bin_is_balanced),
        cmocka_unit_test(test_one_inexact_bin_is_balanced),
        cmocka_unit_test(test_imbalance_at_least_one),
        cmocka_unit_test(test_no_histogram_or_one_rank),
        cmocka_unit_test(test_prepare_mean),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_grid_exact_branch),
        cmocka_unit_test(test_grid_clt_branch),
        cmocka_unit_test(test_grid_clt_accuracy_at_branch),
        cmocka_unit_test(test_grid_interpolation),
        cmocka_unit_test(test_evaluate_with_histogram),
        cmocka_unit_test(test_evaluate_without_histogram),
    };
    return cmocka_run_group_tests(tests, prepare_fixtures, free_fixtures);
}
