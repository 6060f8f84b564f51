/* The top-K / Pareto module on hand-made records whose expected order is worked out in the
 * comments, and against a brute-force reference (sort everything, take the first K). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/sweep/topk.h"

static cdse_record rec(uint64_t index, int model, int gpus)
{
    cdse_record r;
    memset(&r, 0, sizeof r);
    r.index = index;
    r.model = model;
    r.strategy.gpus = gpus;
    return r;
}

/* Checks the kept records, best first, against (index, key) pairs. */
static void check_sorted(const cdse_topk *t, const uint64_t *index, const double *key, size_t n)
{
    assert_int_equal(t->n, n);
    const cdse_record *out[16];
    double keys[16];
    assert_int_equal(cdse_topk_sorted(t, out, keys), CDSE_OK);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(out[i]->index, index[i]);
        assert_true(keys[i] == key[i]);
    }
}

/* (index, key): (5, 3.0) (9, 1.0) (2, 3.0) (7, 2.0) (4, 1.0).
 * Best 3 by key, ties by the smaller index: (4, 1.0) (9, 1.0) (7, 2.0); whatever the order of
 * arrival (forward, backward). */
static void test_ties_by_index(void **state)
{
    (void)state;
    static const uint64_t index[] = {5, 9, 2, 7, 4};
    static const double key[] = {3.0, 1.0, 3.0, 2.0, 1.0};
    static const uint64_t want_index[] = {4, 9, 7};
    static const double want_key[] = {1.0, 1.0, 2.0};
    for (int reverse = 0; reverse < 2; reverse++) {
        cdse_topk t;
        cdse_topk_init(&t, 3, false);
        for (int j = 0; j < 5; j++) {
            int i = reverse ? 4 - j : j;
            cdse_record r = rec(index[i], 0, 8);
            assert_int_equal(cdse_topk_offer(&t, &r, key[i]), CDSE_OK);
        }
        check_sorted(&t, want_index, want_key, 3);
        cdse_topk_free(&t);
    }
}

/* K = 10 with 3 records: all 3, best first. A K far beyond memory (the -n 49060489557738170 of
 * fuzz finding B2) allocates only for what is offered. */
static void test_k_larger_than_rows(void **state)
{
    (void)state;
    static const uint64_t want_index[] = {2, 0, 1};
    static const double want_key[] = {-1.0, 0.5, 0.5};
    size_t ks[] = {10, (size_t)49060489557738170ULL, SIZE_MAX};
    for (int c = 0; c < 3; c++) {
        cdse_topk t;
        cdse_topk_init(&t, ks[c], false);
        cdse_record r0 = rec(0, 0, 8), r1 = rec(1, 0, 8), r2 = rec(2, 0, 8);
        assert_int_equal(cdse_topk_offer(&t, &r0, 0.5), CDSE_OK);
        assert_int_equal(cdse_topk_offer(&t, &r1, 0.5), CDSE_OK);
        assert_int_equal(cdse_topk_offer(&t, &r2, -1.0), CDSE_OK);
        assert_true(t.cap <= 16); /* the first allocation, not K */
        check_sorted(&t, want_index, want_key, 3);
        cdse_topk_clear(&t);
        assert_int_equal(t.n, 0);
        cdse_topk_free(&t);
    }
}

/* `unique`: the same index offered again is kept once (K = 2: 7 twice and 3 -> 7, 3, not 7, 7);
 * without it, both copies stay. */
static void test_unique(void **state)
{
    (void)state;
    cdse_record r7 = rec(7, 0, 8), r3 = rec(3, 0, 8);
    static const uint64_t want_unique[] = {7, 3};
    static const double keys_unique[] = {1.0, 2.0};
    static const uint64_t want_dup[] = {7, 7};
    static const double keys_dup[] = {1.0, 1.0};
    for (int unique = 1; unique >= 0; unique--) {
        cdse_topk t;
        cdse_topk_init(&t, 2, unique);
        cdse_topk_offer(&t, &r7, 1.0);
        cdse_topk_offer(&t, &r3, 2.0);
        cdse_topk_offer(&t, &r7, 1.0);
        if (unique)
            check_sorted(&t, want_unique, keys_unique, 2);
        else
            check_sorted(&t, want_dup, keys_dup, 2);
        cdse_topk_free(&t);
    }
}

static int ref_compare(const void *a, const void *b)
{
    const cdse_topk_entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* 2000 records with keys from only 17 values (many ties), in a scrambled index order; not unique,
 * or unique with every record offered three times (the set of kept indices follows each
 * replacement): the kept records equal the first K of the whole set sorted by (key, index). */
static void test_against_sorting(void **state)
{
    (void)state;
    enum { N = 2000 };
    static cdse_topk_entry all[N];
    for (size_t i = 0; i < N; i++) {
        all[i].index = (i * 7919) % N; /* 7919 is prime: a permutation of 0..N-1 */
        all[i].key = (double)((all[i].index * 31) % 17);
    }
    size_t ks[] = {1, 5, 16, 17, 100, 1999, 2000, 5000};
    for (size_t c = 0; c < sizeof ks / sizeof ks[0]; c++) {
        cdse_topk t;
        bool unique = c % 2;
        cdse_topk_init(&t, ks[c], unique);
        for (int pass = 0; pass < (unique ? 3 : 1); pass++) /* unique: each offered 3 times */
            for (size_t i = 0; i < N; i++) {
                size_t j = (i + (size_t)pass * 977) % N;
                cdse_record r = rec(all[j].index, 0, 8);
                assert_int_equal(cdse_topk_offer(&t, &r, all[j].key), CDSE_OK);
            }
        cdse_topk_entry *ref = malloc(sizeof all);
        memcpy(ref, all, sizeof all);
        qsort(ref, N, sizeof *ref, ref_compare);
        size_t want = ks[c] < N ? ks[c] : N;
        assert_int_equal(t.n, want);
        const cdse_record **out = malloc(want * sizeof *out);
        double *keys = malloc(want * sizeof *keys);
        assert_int_equal(cdse_topk_sorted(&t, out, keys), CDSE_OK);
        for (size_t i = 0; i < want; i++) {
            assert_int_equal(out[i]->index, ref[i].index);
            assert_true(keys[i] == ref[i].key);
        }
        free(out);
        free(keys);
        free(ref);
        cdse_topk_free(&t);
    }
}

/* Groups by gpus, K = 2; (index, gpus, key):
 *   (0, 16, 4.0) (1, 8, 3.0) (2, 16, 1.0) (3, 8, 3.0) (4, 8, 2.0) (5, 32, 9.0)
 * Groups ascending by gpus, each best first: 8 -> 4 (2.0), 1 (3.0; ties with 3, smaller
 * index); 16 -> 2, 0; 32 -> 5. */
static void test_groups(void **state)
{
    (void)state;
    static const int gpus[] = {16, 8, 16, 8, 8, 32};
    static const double key[] = {4.0, 3.0, 1.0, 3.0, 2.0, 9.0};
    static const uint64_t want[] = {4, 1, 2, 0, 5};
    cdse_topk_groups *g = cdse_topk_groups_create(CDSE_GROUP_GPUS, 2, false);
    assert_non_null(g);
    for (int round = 0; round < 2; round++) { /* the second after a clear: the same */
        for (uint64_t i = 0; i < 6; i++) {
            cdse_record r = rec(i, (int)i % 2, gpus[i]); /* model ignored: not in the mask */
            assert_int_equal(cdse_topk_groups_offer(g, &r, key[i]), CDSE_OK);
        }
        cdse_record *out = NULL;
        size_t n = cdse_topk_groups_rows(g, &out);
        assert_int_equal(n, 5);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(out[i].index, want[i]);
        free(out);
        cdse_topk_groups_clear(g);
    }
    cdse_topk_groups_free(g);
}

/* Groups by (model, gpus), K = 1; (index, model, gpus, key):
 *   model 0: (11, 0, 8, 3.0) (10, 0, 8, 3.0) (12, 0, 16, 3.0) (13, 0, 32, 2.0) (14, 0, 64, 2.5)
 *   model 1: (20, 1, 64, 5.0) (21, 1, 128, 6.0) (22, 1, 256, 4.0)
 * Best per group: (0, 8) -> 10 (ties with 11: smaller index); (0, 16) -> 12 at 3.0, equal to
 * 8 GPUs: not strictly better, dominated; (0, 32) -> 13 (2.0 < 3.0); (0, 64) -> 14 (2.5 > 2.0:
 * dominated). Model 1 starts afresh: 20 (5.0, worse than model 0 but the first of its model);
 * 21 (6.0 > 5.0) dominated; 22 (4.0 < 5.0). Front: 10, 13, 20, 22. Offered in reverse as well. */
static void test_pareto_equal_points(void **state)
{
    (void)state;
    static const uint64_t index[] = {11, 10, 12, 13, 14, 20, 21, 22};
    static const int model[] = {0, 0, 0, 0, 0, 1, 1, 1};
    static const int gpus[] = {8, 8, 16, 32, 64, 64, 128, 256};
    static const double key[] = {3.0, 3.0, 3.0, 2.0, 2.5, 5.0, 6.0, 4.0};
    static const uint64_t want[] = {10, 13, 20, 22};
    for (int reverse = 0; reverse < 2; reverse++) {
        cdse_topk_groups *g = cdse_topk_groups_create(CDSE_GROUP_MODEL | CDSE_GROUP_GPUS, 1, true);
        assert_non_null(g);
        for (int j = 0; j < 8; j++) {
            int i = reverse ? 7 - j : j;
            cdse_record r = rec(index[i], model[i], gpus[i]);
            assert_int_equal(cdse_topk_groups_offer(g, &r, key[i]), CDSE_OK);
        }
        cdse_record *out = NULL;
        size_t n = cdse_topk_groups_pareto(g, &out);
        assert_int_equal(n, 4);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(out[i].index, want[i]);
        free(out);
        cdse_topk_groups_free(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_by_index), cmocka_unit_test(test_k_larger_than_rows),
        cmocka_unit_test(test_unique),        cmocka_unit_test(test_against_sorting),
        cmocka_unit_test(test_groups),        cmocka_unit_test(test_pareto_equal_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
