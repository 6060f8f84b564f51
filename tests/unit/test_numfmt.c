/* Fast number text against the C library's printf: hand-picked cases (the expected text written
 * out, from the "%g" rules of C11 7.21.6.1p8) and millions of values compared with snprintf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>

#include "clusterdse/sweep/numfmt.h"

static void check_g6(double v, const char *want)
{
    char buf[CDSE_NUMFMT_MAX];
    size_t n = cdse_fmt_g6(buf, v);
    assert_string_equal(buf, want);
    assert_int_equal(n, strlen(want));
}

/* Fixed form for exponents -4..5, exponent form outside; trailing zeros dropped; rounding to
 * six digits may carry into the next power of ten (999999.7 -> 1e+06). */
static void test_g6_by_hand(void **state)
{
    (void)state;
    check_g6(0.0, "0");
    check_g6(-0.0, "-0");
    check_g6(1.0, "1");
    check_g6(1.5, "1.5");
    check_g6(-2.25e-7, "-2.25e-07");
    check_g6(0.0001, "0.0001");
    check_g6(0.00001, "1e-05");
    check_g6(123456.0, "123456");
    check_g6(999999.0, "999999");
    check_g6(999999.7, "1e+06");
    check_g6(1234567.0, "1.23457e+06");
    check_g6(123456789.0, "1.23457e+08");
    check_g6(0.1234564, "0.123456");
    check_g6(0.1234566, "0.123457");
    check_g6(1.5e300, "1.5e+300");
    check_g6(4.9e-324, "4.94066e-324");
    check_g6(2.5, "2.5");
    check_g6(1536.0, "1536");
    check_g6(0.425, "0.425");
    check_g6(HUGE_VAL, "inf");
    check_g6(-HUGE_VAL, "-inf");
}

/* Six-digit ties: 1234565 is exactly representable and exactly halfway: half-even keeps 6
 * (1.23456e+06); 1234575 rounds up to 8 (1.23458e+06); 999999.5 goes to 1e+06. */
static void test_g6_ties(void **state)
{
    (void)state;
    check_g6(1234565.0, "1.23456e+06");
    check_g6(1234575.0, "1.23458e+06");
    check_g6(999999.5, "1e+06");
    check_g6(0.5, "0.5");
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
    return rng;
}

static void compare_g6(double v)
{
    char got[CDSE_NUMFMT_MAX], want[64];
    cdse_fmt_g6(got, v);
    snprintf(want, sizeof want, "%.6g", v);
    if (strcmp(got, want) != 0)
        fail_msg("%.17g: got %s, printf %s", v, got, want);
}

/* Random bit patterns (every exponent), values of the sizes the columns hold (1e-9..1e12),
 * decimals with few digits (0.05, 12.5, ...) and their neighbours one ulp away, and powers of
 * ten with their neighbours. */
static void test_g6_against_printf(void **state)
{
    (void)state;
    for (int i = 0; i < 1000000; i++) {
        uint64_t bits = next();
        double v;
        memcpy(&v, &bits, sizeof v);
        compare_g6(v);
        compare_g6(ldexp((double)(next() >> 11), -53) * pow(10.0, (double)(i % 22) - 9.0));
        double d = (double)(int64_t)(next() % 20000001) / pow(10.0, (double)(i % 9));
        compare_g6(d);
        compare_g6(nextafter(d, HUGE_VAL));
        compare_g6(nextafter(d, -HUGE_VAL));
    }
    for (int e = -320; e <= 308; e++) {
        double p = pow(10.0, e);
        compare_g6(p);
        compare_g6(nextafter(p, 0.0));
        compare_g6(nextafter(p, HUGE_VAL));
        compare_g6(-p);
    }
}

static void test_integers(void **state)
{
    (void)state;
    char buf[CDSE_NUMFMT_MAX], want[32];
    assert_int_equal(cdse_fmt_u64(buf, 0), 1);
    assert_string_equal(buf, "0");
    cdse_fmt_u64(buf, UINT64_MAX);
    assert_string_equal(buf, "18446744073709551615");
    cdse_fmt_i64(buf, INT64_MIN);
    assert_string_equal(buf, "-9223372036854775808");
    cdse_fmt_i64(buf, -42);
    assert_string_equal(buf, "-42");
    for (int i = 0; i < 100000; i++) {
        int64_t v = (int64_t)next() >> (i % 63);
        cdse_fmt_i64(buf, v);
        snprintf(want, sizeof want, "%lld", (long long)v);
        assert_string_equal(buf, want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_g6_by_hand),
        cmocka_unit_test(test_g6_ties),
        cmocka_unit_test(test_g6_against_printf),
        cmocka_unit_test(test_integers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
