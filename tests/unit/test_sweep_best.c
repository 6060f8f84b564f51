/* The sweep's best-so-far (top-K per group, Pareto front) and remaining index ranges, on
 * synthetic records whose expected order is worked out by hand below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/sweep/sweep.h"

static cdse_record rec(uint64_t index, int gpus, double time_s, int status)
{
    cdse_record r;
    memset(&r, 0, sizeof r);
    r.index = index;
    r.strategy.gpus = gpus;
    r.result.status = status;
    r.result.time_per_iteration_s = time_s;
    r.result.tokens_per_s = 1000.0 / time_s;
    return r;
}

/* index: gpus, time (s), status
 *   0:  8, 5.0, ok        1:  8, 3.0, ok        2:  8, 3.0, ok (ties with 1: 1 first)
 *   3:  8, 4.0, ok        4: 16, 2.5, ok        5: 16, 1.0, oom (never counts)
 *   6: 32, 2.6, ok        7: 32, 1.5, ok        8: 64, 1.7, ok
 * Top 2 per gpus, by time: 8 -> 1, 2; 16 -> 4; 32 -> 7, 6; 64 -> 8.
 * Pareto (best per gpus, kept when faster than every smaller gpus count):
 *   8 -> 1 (3.0); 16 -> 4 (2.5 < 3.0); 32 -> 7 (1.5 < 2.5); 64 -> 8 (1.7 > 1.5: dominated).
 * Candidates: top and the best per gpus {1, 4, 7, 8}, by index: 1, 2, 4, 6, 7, 8. */
static const cdse_record *table(size_t *n)
{
    static cdse_record r[9];
    r[0] = rec(0, 8, 5.0, CDSE_ST_OK);
    r[1] = rec(1, 8, 3.0, CDSE_ST_OK);
    r[2] = rec(2, 8, 3.0, CDSE_ST_OK);
    r[3] = rec(3, 8, 4.0, CDSE_ST_OK);
    r[4] = rec(4, 16, 2.5, CDSE_ST_OK);
    r[5] = rec(5, 16, 1.0, CDSE_ST_OOM);
    r[6] = rec(6, 32, 2.6, CDSE_ST_OK);
    r[7] = rec(7, 32, 1.5, CDSE_ST_OK);
    r[8] = rec(8, 64, 1.7, CDSE_ST_OK);
    *n = 9;
    return r;
}

static void check_indices(const cdse_record *got, size_t n, const uint64_t *want, size_t n_want)
{
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i].index, want[i]);
}

static void check_best(sweep__best *b)
{
    cdse_record *out = NULL;
    size_t n = sweep__best_top(b, &out);
    static const uint64_t top[] = {1, 2, 4, 7, 6, 8};
    check_indices(out, n, top, 6);
    free(out);
    n = sweep__best_pareto(b, &out);
    static const uint64_t front[] = {1, 4, 7};
    check_indices(out, n, front, 3);
    free(out);
    n = sweep__best_candidates(b, &out);
    static const uint64_t cand[] = {1, 2, 4, 6, 7, 8};
    check_indices(out, n, cand, 6);
    free(out);
}

static void test_top_and_pareto(void **state)
{
    (void)state;
    cdse_objective obj = {.metric = CDSE_METRIC_TIME_PER_ITERATION,
                          .top = 2,
                          .group_by = CDSE_GROUP_GPUS,
                          .store = CDSE_STORE_FEASIBLE};
    size_t n;
    const cdse_record *r = table(&n);
    /* Forward order. */
    sweep__best *b = sweep__best_create(&obj, true);
    for (size_t i = 0; i < n; i++)
        sweep__best_offer(b, &r[i]);
    check_best(b);
    /* Offered again (a chunk redone after a resume): nothing changes. */
    for (size_t i = 0; i < n; i++)
        sweep__best_offer(b, &r[i]);
    check_best(b);
    /* Reverse order into a cleared set: the same answer. */
    sweep__best_clear(b);
    for (size_t i = n; i-- > 0;)
        sweep__best_offer(b, &r[i]);
    check_best(b);
    sweep__best_free(b);
}

/* Merging: the best of chunk-local candidates equals the best of everything. Chunks {0..4} and
 * {5..8} evaluated separately, their candidates merged. */
static void test_merge_of_candidates(void **state)
{
    (void)state;
    cdse_objective obj = {
        .metric = CDSE_METRIC_TIME_PER_ITERATION, .top = 2, .group_by = CDSE_GROUP_GPUS};
    size_t n;
    const cdse_record *r = table(&n);
    sweep__best *all = sweep__best_create(&obj, true), *local = sweep__best_create(&obj, false);
    size_t cut[3] = {0, 5, 9};
    for (int c = 0; c < 2; c++) {
        sweep__best_clear(local);
        for (size_t i = cut[c]; i < cut[c + 1]; i++)
            sweep__best_offer(local, &r[i]);
        cdse_record *cand = NULL;
        size_t m = sweep__best_candidates(local, &cand);
        for (size_t i = 0; i < m; i++)
            sweep__best_offer(all, &cand[i]);
        free(cand);
    }
    check_best(all);
    sweep__best_free(all);
    sweep__best_free(local);
}

/* tokens_per_s: higher is better. 1000/2.5 = 400 tokens/s beats 1000/3.0 = 333; without
 * groups the top 2 overall are 7 (1000/1.5 = 667) and 8 (1000/1.7 = 588). */
static void test_higher_is_better(void **state)
{
    (void)state;
    cdse_objective obj = {.metric = CDSE_METRIC_TOKENS_PER_S, .top = 2, .group_by = 0};
    size_t n;
    const cdse_record *r = table(&n);
    sweep__best *b = sweep__best_create(&obj, true);
    for (size_t i = 0; i < n; i++)
        sweep__best_offer(b, &r[i]);
    cdse_record *out = NULL;
    size_t m = sweep__best_top(b, &out);
    static const uint64_t want[] = {7, 8};
    check_indices(out, m, want, 2);
    free(out);
    sweep__best_free(b);
}

static int by_time_then_index(const void *a, const void *b)
{
    const cdse_record *x = a, *y = b;
    if (x->result.time_per_iteration_s != y->result.time_per_iteration_s)
        return x->result.time_per_iteration_s < y->result.time_per_iteration_s ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* A large top (100 of 5000 records, costs from a linear congruential generator with many ties,
 * each record offered twice): the same as sorting everything by (cost, index) with qsort. */
static void test_large_top(void **state)
{
    (void)state;
    enum { N = 5000, K = 100 };
    cdse_objective obj = {.metric = CDSE_METRIC_TIME_PER_ITERATION, .top = K, .group_by = 0};
    cdse_record *all = malloc(N * sizeof *all);
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u; /* ANSI C's rand() constants */
        all[i] = rec((uint64_t)i, 8, 1.0 + (double)((x >> 16) % 500) / 100.0, CDSE_ST_OK);
    }
    sweep__best *b = sweep__best_create(&obj, true);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < N; i++)
            sweep__best_offer(b, &all[(i * 7919 + pass) % N]);
    qsort(all, N, sizeof *all, by_time_then_index);
    cdse_record *out = NULL;
    size_t n = sweep__best_top(b, &out);
    assert_int_equal(n, K);
    for (int i = 0; i < K; i++)
        assert_int_equal(out[i].index, all[i].index);
    free(out);
    free(all);
    sweep__best_free(b);
}

/* Done [10, 20), [0, 5), [15, 30) of a space of 40: left to do [5, 10) and [30, 40). */
static void test_gaps(void **state)
{
    (void)state;
    cdse_range done[3] = {{10, 20}, {0, 5}, {15, 30}};
    cdse_range *gaps = NULL;
    size_t n = sweep__gaps(done, 3, 40, &gaps);
    assert_int_equal(n, 2);
    assert_int_equal(gaps[0].begin, 5);
    assert_int_equal(gaps[0].end, 10);
    assert_int_equal(gaps[1].begin, 30);
    assert_int_equal(gaps[1].end, 40);
    free(gaps);
    /* Nothing done: everything; all done: nothing. */
    n = sweep__gaps(NULL, 0, 7, &gaps);
    assert_int_equal(n, 1);
    assert_int_equal(gaps[0].end, 7);
    free(gaps);
    cdse_range whole = {0, 7};
    n = sweep__gaps(&whole, 1, 7, &gaps);
    assert_int_equal(n, 0);
    free(gaps);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_and_pareto),
        cmocka_unit_test(test_merge_of_candidates),
        cmocka_unit_test(test_higher_is_better),
        cmocka_unit_test(test_large_top),
        cmocka_unit_test(test_gaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
