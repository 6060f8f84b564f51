/* Mixed-radix encoding of the design space (src/model/space.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/model/space.h"

/* A space where every axis has one value except models (2), tp (3), pp (4) and zero (2). */
static void small_space(cdse_space *space)
{
    memset(space, 0, sizeof *space);
    for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
        space->n[a] = 1;
        space->value[a][0] = 1;
    }
    space->n[CDSE_AXIS_MODEL] = 2;
    space->value[CDSE_AXIS_MODEL][0] = 0;
    space->value[CDSE_AXIS_MODEL][1] = 1;
    space->n[CDSE_AXIS_TP] = 3;
    space->value[CDSE_AXIS_TP][0] = 1;
    space->value[CDSE_AXIS_TP][1] = 2;
    space->value[CDSE_AXIS_TP][2] = 4;
    space->n[CDSE_AXIS_PP] = 4;
    for (int i = 0; i < 4; i++)
        space->value[CDSE_AXIS_PP][i] = 1 << i; /* 1, 2, 4, 8 */
    space->n[CDSE_AXIS_ZERO] = 2;
    space->value[CDSE_AXIS_ZERO][0] = 0;
    space->value[CDSE_AXIS_ZERO][1] = 1;
    space->value[CDSE_AXIS_GPUS][0] = 64;
    space->value[CDSE_AXIS_GLOBAL_BATCH][0] = 512;
    space->value[CDSE_AXIS_RECOMPUTE][0] = CDSE_RECOMPUTE_SELECTIVE;
    space->value[CDSE_AXIS_PRECISION][0] = CDSE_BF16;
    space->value[CDSE_AXIS_OFFLOAD][0] = CDSE_OFFLOAD_OPTIMIZER;
}

static void test_strides_and_size(void **state)
{
    (void)state;
    cdse_space space;
    small_space(&space);
    cdse_diag diag;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_OK);
    /* By hand: the last axis varies fastest; axes after zero all have one value, so
     * stride[zero] = 1, stride[pp] = n[zero] = 2, stride[tp] = n[pp] * 2 = 8,
     * stride[model] = n[tp] * 8 = 24, size = 2 * 24 = 48. */
    assert_int_equal(space.stride[CDSE_AXIS_ZERO], 1);
    assert_int_equal(space.stride[CDSE_AXIS_PP], 2);
    assert_int_equal(space.stride[CDSE_AXIS_TP], 8);
    assert_int_equal(space.stride[CDSE_AXIS_MODEL], 24);
    assert_int_equal(space.size, 48);
}

static void test_decode_by_hand(void **state)
{
    (void)state;
    cdse_space space;
    small_space(&space);
    cdse_diag diag;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_OK);
    /* 37 = 1 * 24 + 13; 13 = 1 * 8 + 5; 5 = 2 * 2 + 1: model 1, tp digit 1 (tp = 2),
     * pp digit 2 (pp = 4), zero digit 1 (zero = 1). */
    int digit[CDSE_AXIS_COUNT];
    cdse_space_decode(&space, 37, digit);
    assert_int_equal(digit[CDSE_AXIS_MODEL], 1);
    assert_int_equal(digit[CDSE_AXIS_TP], 1);
    assert_int_equal(digit[CDSE_AXIS_PP], 2);
    assert_int_equal(digit[CDSE_AXIS_ZERO], 1);
    assert_int_equal(digit[CDSE_AXIS_GPUS], 0);
    assert_int_equal(cdse_space_encode(&space, digit), 37);

    cdse_strategy strategy;
    cdse_space_strategy(&space, digit, &strategy);
    assert_int_equal(strategy.tp, 2);
    assert_int_equal(strategy.pp, 4);
    assert_int_equal(strategy.zero, 1);
    assert_int_equal(strategy.gpus, 64);
    assert_int_equal(strategy.global_batch, 512);
    assert_int_equal(strategy.recompute, CDSE_RECOMPUTE_SELECTIVE);
    assert_int_equal(strategy.precision, CDSE_BF16);
    assert_int_equal(strategy.offload, CDSE_OFFLOAD_OPTIMIZER);
    assert_true(strategy.sequence_parallel); /* value 1 */
    assert_int_equal(strategy.dp, 0);        /* derived later */
}

static void test_round_trip(void **state)
{
    (void)state;
    cdse_space space;
    small_space(&space);
    cdse_diag diag;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_OK);
    int seen[48] = {0};
    for (uint64_t i = 0; i < space.size; i++) {
        int digit[CDSE_AXIS_COUNT];
        cdse_space_decode(&space, i, digit);
        for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
            assert_true(digit[a] >= 0);
            assert_true(digit[a] < space.n[a]);
        }
        assert_int_equal(cdse_space_encode(&space, digit), i);
        /* The digits of distinct indices differ: count each (model, tp, pp, zero) once. */
        int key =
            ((digit[CDSE_AXIS_MODEL] * 3 + digit[CDSE_AXIS_TP]) * 4 + digit[CDSE_AXIS_PP]) * 2 +
            digit[CDSE_AXIS_ZERO];
        seen[key]++;
    }
    for (int k = 0; k < 48; k++)
        assert_int_equal(seen[k], 1);
}

/* Indices below 2^32 are decoded with multiplications instead of divisions (space.c): in a space
 * of axes with 64, 63, 61, 59, 2, 3, 7 and 50 values (3.0e10 configurations, past 2^32) every index
 * tried, the last ones below 2^32 and the first above among them, decodes to digits within their
 * axes whose mixed-radix value (cdse_space_encode: multiplications and sums only) is the index:
 * the digits are the division's, which are the only ones with both properties. */
static void test_decode_large_radices(void **state)
{
    (void)state;
    static const int axis[] = {CDSE_AXIS_TP,         CDSE_AXIS_PP,          CDSE_AXIS_CP,
                               CDSE_AXIS_MICROBATCH, CDSE_AXIS_ZERO,        CDSE_AXIS_RECOMPUTE,
                               CDSE_AXIS_VPP,        CDSE_AXIS_GLOBAL_BATCH};
    static const int n[] = {64, 63, 61, 59, 2, 3, 7, 50};
    cdse_space space;
    small_space(&space);
    space.n[CDSE_AXIS_MODEL] = 1;
    for (int k = 0; k < 8; k++)
        space.n[axis[k]] = n[k];
    cdse_diag diag;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_OK);
    assert_int_equal(space.size, 30473452800ULL); /* 64 x 63 x 61 x 59 x 2 x 3 x 7 x 50 */
    uint64_t x = 88172645463325252ULL;            /* xorshift64 (Marsaglia 2003), a fixed seed */
    for (int t = 0; t < 200000; t++) {
        uint64_t index;
        if (t < 2000)
            index = (uint64_t)UINT32_MAX - 999 + (uint64_t)t; /* 2^32 - 1000 .. 2^32 + 999 */
        else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            index = t % 2 ? x % ((uint64_t)UINT32_MAX + 1) : x % space.size;
        }
        int digit[CDSE_AXIS_COUNT];
        cdse_space_decode(&space, index, digit);
        for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
            assert_true(digit[a] >= 0);
            assert_true(digit[a] < space.n[a]);
        }
        assert_int_equal(cdse_space_encode(&space, digit), index);
    }
}

static void test_overflow_rejected(void **state)
{
    (void)state;
    cdse_space space;
    memset(&space, 0, sizeof space);
    for (int a = 0; a < CDSE_AXIS_COUNT; a++)
        space.n[a] = 1;
    /* 10 axes of 64 values: 2^60 configurations, fine. */
    for (int a = 0; a < 10; a++)
        space.n[a] = 64;
    cdse_diag diag;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_OK);
    assert_int_equal(space.size, (uint64_t)1 << 60);
    /* 11 axes of 64: 2^66 does not fit. */
    space.n[10] = 64;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "2^63"));
    /* Exactly 2^63 (fuzz finding B13: 2^60 * 2 * 2 * 2) is refused too: the largest index must
     * fit a signed 64-bit integer, so the size stays at most 2^63 - 1. */
    space.n[10] = 2;
    space.n[11] = 2;
    space.n[12] = 2;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_EINVAL);
    /* 2^62 * 1 configurations below it still pass. */
    space.n[12] = 1;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_OK);
    assert_int_equal(space.size, (uint64_t)1 << 62);
}

static void test_empty_axis_rejected(void **state)
{
    (void)state;
    cdse_space space;
    small_space(&space);
    space.n[CDSE_AXIS_PP] = 0;
    cdse_diag diag;
    assert_int_equal(cdse_space_finish(&space, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "'pp'"));
}

static void test_axis_names(void **state)
{
    (void)state;
    assert_string_equal(cdse_axis_name(CDSE_AXIS_MODEL), "models");
    assert_string_equal(cdse_axis_name(CDSE_AXIS_GLOBAL_BATCH), "global_batch");
    assert_string_equal(cdse_axis_name(CDSE_AXIS_OFFLOAD), "offload");
    assert_string_equal(cdse_axis_name(-1), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strides_and_size),  cmocka_unit_test(test_decode_by_hand),
        cmocka_unit_test(test_round_trip),        cmocka_unit_test(test_decode_large_radices),
        cmocka_unit_test(test_overflow_rejected), cmocka_unit_test(test_empty_axis_rejected),
        cmocka_unit_test(test_axis_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
