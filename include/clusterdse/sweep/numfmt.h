/* Numbers as text, fast: exactly the characters of printf's "%llu", "%lld" and "%.6g" (the CSV
 * columns), without the cost of a format string per field, so that a store streams out at
 * millions of rows per second. */
#ifndef CLUSTERDSE_NUMFMT_H
#define CLUSTERDSE_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes a buffer needs for any of the functions below, the terminating NUL included. */
#define CDSE_NUMFMT_MAX 32

/* Each writes the text and a NUL into buf (CDSE_NUMFMT_MAX bytes) and returns its length. */
size_t cdse_fmt_u64(char *buf, uint64_t value);
size_t cdse_fmt_i64(char *buf, int64_t value);
/* As "%.6g": six significant digits, round-half-even on the exact binary value, trailing zeros
 * dropped, exponent form below 1e-4 and from 1e6 on. Values whose rounding is too close to call
 * in double arithmetic (a decimal tie within 1e-6), and inf/nan, go through snprintf. */
size_t cdse_fmt_g6(char *buf, double value);

#endif
