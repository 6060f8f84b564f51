/* Fast "%llu", "%lld" and "%.6g". The "%.6g" rules (C11 7.21.6.1p8): with X the decimal exponent
 * of the value rounded to 6 significant digits, fixed notation with 5 - X decimals when
 * -4 <= X < 6, otherwise d.ddddde+XX (at least two exponent digits); trailing zeros and a
 * trailing point removed. */
#include "clusterdse/sweep/numfmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define G_DIGITS 6

/* 10^0 .. 10^22: every one exact in a double, so a multiplication or division by one of them is
 * a single correctly rounded operation. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* "00" .. "99": two digits per division. */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

size_t cdse_fmt_u64(char *buf, uint64_t value)
{
    char tmp[24];
    char *p = tmp + sizeof tmp;
    while (value >= 100) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * (value % 100), 2);
        value /= 100;
    }
    if (value >= 10) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * value, 2);
    } else {
        *--p = (char)('0' + value);
    }
    size_t n = (size_t)(tmp + sizeof tmp - p);
    memcpy(buf, p, n);
    buf[n] = '\0';
    return n;
}

size_t cdse_fmt_i64(char *buf, int64_t value)
{
    if (value >= 0)
        return cdse_fmt_u64(buf, (uint64_t)value);
    buf[0] = '-';
    return 1 + cdse_fmt_u64(buf + 1, (uint64_t)0 - (uint64_t)value);
}

static size_t g6_fallback(char *buf, double value)
{
    int n = snprintf(buf, CDSE_NUMFMT_MAX, "%.*g", G_DIGITS, value);
    return n > 0 ? (size_t)n : 0;
}

/* |value| x 10^(5 - e): the six digits before the point when 10^e <= |value| < 10^(e+1).
 * Returns a negative number when 10^|5 - e| is not exact. */
static double scale(double a, int e)
{
    int k = G_DIGITS - 1 - e;
    if (k > 22 || k < -22)
        return -1.0;
    return k >= 0 ? a * pow10_exact[k] : a / pow10_exact[-k];
}

/* Writes the six digits of `n` (100000..999999) with decimal exponent x as "%g" does. */
static size_t g6_text(char *buf, bool negative, uint64_t n, int x)
{
    char d[G_DIGITS];
    memcpy(d, digit_pairs + 2 * (n / 10000), 2);
    memcpy(d + 2, digit_pairs + 2 * (n / 100 % 100), 2);
    memcpy(d + 4, digit_pairs + 2 * (n % 100), 2);
    int nd = G_DIGITS; /* significant digits without trailing zeros */
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    char *p = buf;
    if (negative)
        *p++ = '-';
    if (x >= -4 && x < G_DIGITS) {
        if (x >= 0) {
            memcpy(p, d, (size_t)x + 1);
            p += x + 1;
            if (nd > x + 1) {
                *p++ = '.';
                memcpy(p, d + x + 1, (size_t)(nd - x - 1));
                p += nd - x - 1;
            }
        } else {
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -x - 1; i++)
                *p++ = '0';
            memcpy(p, d, (size_t)nd);
            p += nd;
        }
    } else {
        *p++ = d[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, d + 1, (size_t)nd - 1);
            p += nd - 1;
        }
        *p++ = 'e';
        *p++ = x < 0 ? '-' : '+';
        int ax = x < 0 ? -x : x;
        if (ax < 10)
            *p++ = '0';
        p += cdse_fmt_u64(p, (uint64_t)ax);
    }
    *p = '\0';
    return (size_t)(p - buf);
}

size_t cdse_fmt_g6(char *buf, double value)
{
    if (value == 0.0) {
        const char *zero = signbit(value) ? "-0" : "0";
        strcpy(buf, zero);
        return strlen(zero);
    }
    if (!isfinite(value))
        return g6_fallback(buf, value);
    double a = fabs(value);
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int e2 = (int)(bits >> 52) - 1023; /* a in [2^e2, 2^(e2+1)); subnormals: scale() declines */
    /* floor(e2 x log10(2)) as integers: 78913 / 2^18 = 0.30102920... (exact for |e2| < 1700) */
    int e = e2 >= 0 ? (e2 * 78913) >> 18 : -((-e2 * 78913 + (1 << 18) - 1) >> 18);
    double s = scale(a, e);
    for (int tries = 0; tries < 3 && s >= 0.0 && (s < 1e5 || s >= 1e6); tries++) {
        e += s < 1e5 ? -1 : 1;
        s = scale(a, e);
    }
    if (s < 1e5 || s >= 1e6)
        return g6_fallback(buf, value);
    /* s carries one rounding (relative 2^-53, below 1.2e-10 absolute for s < 1e6): a
     * fraction at least 1e-6 away from one half rounds the same as the exact value. */
    uint64_t n = (uint64_t)s;
    double frac = s - (double)n;
    if (fabs(frac - 0.5) < 1e-6)
        return g6_fallback(buf, value);
    if (frac > 0.5)
        n++;
    if (n == 1000000) {
        n = 100000;
        e++;
    }
    return g6_text(buf, value < 0, n, e);
}
