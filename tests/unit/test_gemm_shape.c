/* Per-layer kernel costs against hand calculations: the GEMM shape model (src/model/perf_layer.c:
 * perf_gemm_shape_factor, perf_gemm_time with a system's gemm_shape group) and ring attention's
 * merge of its per-step results (perf_cp_merge_bytes).
 *
 * Source of the rule: NVIDIA, "Matrix Multiplication Background User's Guide" (DU-09799-001),
 * Sec. 3.1 (tile quantization: a GEMM computes ceil(m / 128) ceil(n / 128) whole 128 x 128
 * output tiles) and Sec. 3.2 (wave quantization: the tiles run in waves of one tile per SM,
 * ceil(tiles / SMs) waves); split-K for GEMMs with fewer tiles than SMs (slices of at least 256
 * of K); the main loop's share k_slice / (k_slice + 256) and 6 us per kernel, fitted to
 * OpenXLA's measured cuBLAS table for sm_90 (the constants' comment in perf_layer.c).
 * SM counts: A100 108 SMs (NVIDIA A100 Tensor Core GPU Architecture whitepaper), H100 SXM5 132
 * SMs (NVIDIA H100 Tensor Core GPU Architecture whitepaper). Every expected value below is the
 * arithmetic written beside it, not the code's output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include "../../src/model/perf_internal.h"

/* A100, m = n = k = 4096: tiles 32 x 32 = 1024 >= 108 SMs, no split; waves ceil(1024 / 108) =
 * ceil(9.48) = 10; quantization 4096^2 / (10 x 108 x 128^2) = 16,777,216 / 17,694,720 =
 * 0.948148; main loop 4096 / (4096 + 256) = 0.941176; product 0.892374. The tail wave holds
 * 1024 - 9 x 108 = 52 tiles: 56 of 108 SMs idle in it. */
static void test_full_waves_a100(void **state)
{
    (void)state;
    assert_rel(perf_gemm_shape_factor(108.0, 4096.0, 4096.0, 4096.0),
               16777216.0 / 17694720.0 * 4096.0 / 4352.0, 1e-12);
    assert_rel(16777216.0 / 17694720.0 * 4096.0 / 4352.0, 0.892374, 1e-6);
}

/* Tile quantization: m = 4100 rows need ceil(4100 / 128) = 33 tile rows (the last holds 4
 * rows): tiles 33 x 32 = 1056, waves ceil(1056 / 108) = 10; useful work 4100 x 4096 /
 * (10 x 108 x 128^2) = 16,793,600 / 17,694,720 = 0.949074; x 0.941176 = 0.893246. One row
 * more than 4096 costs a 33rd tile row but, here, no extra wave. */
static void test_tile_quantization(void **state)
{
    (void)state;
    assert_rel(perf_gemm_shape_factor(108.0, 4100.0, 4096.0, 4096.0),
               16793600.0 / 17694720.0 * 4096.0 / 4352.0, 1e-12);
    assert_rel(16793600.0 / 17694720.0 * 4096.0 / 4352.0, 0.893246, 1e-6);
    /* The same GEMM on H100's 132 SMs: waves ceil(1056 / 132) = 8 exactly: 16,793,600 /
     * (8 x 132 x 128^2) = 16,793,600 / 17,301,504 = 0.970644. */
    assert_rel(perf_gemm_shape_factor(132.0, 4100.0, 4096.0, 4096.0),
               16793600.0 / 17301504.0 * 4096.0 / 4352.0, 1e-12);
}

/* Split-K: H100, m = n = 1024, k = 4096: tiles 8 x 8 = 64 < 132 SMs; split floor(132 / 64) = 2
 * (K allows floor(4096 / 256) = 16 slices); 128 work units in ceil(128 / 132) = 1 wave:
 * 1024^2 x 2 / (1 x 132 x 128^2) = 2,097,152 / 2,162,688 = 0.969697; each slice k = 2048:
 * 2048 / 2304 = 0.888889; product 0.861953. */
static void test_split_k(void **state)
{
    (void)state;
    assert_rel(perf_gemm_shape_factor(132.0, 1024.0, 1024.0, 4096.0),
               2097152.0 / 2162688.0 * 2048.0 / 2304.0, 1e-12);
    assert_rel(2097152.0 / 2162688.0 * 2048.0 / 2304.0, 0.861953, 1e-6);
    /* K too short to split: m = n = k = 256 on 132 SMs: 2 x 2 = 4 tiles; floor(256 / 256) = 1
     * slice; one wave of 4 tiles on 132 SMs: 65,536 / (132 x 16,384) = 0.030303; main loop
     * 256 / 512 = 0.5; product 0.015152: a tiny GEMM uses 1.5 % of the GPU's tile rate. */
    assert_rel(perf_gemm_shape_factor(132.0, 256.0, 256.0, 256.0),
               65536.0 / (132.0 * 16384.0) * 256.0 / 512.0, 1e-12);
}

/* perf_gemm_time on a shape system: 6 us + F / (peak x efficiency x stack scale x factor), or
 * the HBM time of its operands if longer. H100 bf16 (989.4 TFLOP/s), efficiency 0.6, m = n = k
 * = 4096: tiles 1024, waves ceil(1024 / 132) = 8, quantization 16,777,216 / 17,301,504 =
 * 0.969697, main loop 4096 / 4352 = 0.941176: F = 2 x 4096^3 = 1.374390e11 FLOPs in 6e-6 +
 * 1.374390e11 / (989.4e12 x 0.6 x 0.912656) = 6e-6 + 2.53676e-4 = 2.59676e-4 s. HBM: 3 x 4096^2 x 2
 * B / 3e12 B/s = 3.4e-5 s, shorter. */
static void test_gemm_time(void **state)
{
    (void)state;
    env e;
    memset(&e, 0, sizeof e);
    e.gemm_sms = 132.0;
    e.gemm_shape_eff = 0.6;
    e.gemm_scale = 1.0;
    e.gemm_peak = 989.4e12;
    e.hbm = 3e12;
    e.operand_bytes = 2.0;
    double flops = 0.0;
    double q = 16777216.0 / 17301504.0, loop = 4096.0 / 4352.0;
    double f = 2.0 * 4096.0 * 4096.0 * 4096.0;
    assert_rel(perf_gemm_time(&e, 4096.0, 4096.0, 4096.0, &flops),
               6e-6 + f / (989.4e12 * 0.6 * q * loop), 1e-12);
    assert_rel(6e-6 + f / (989.4e12 * 0.6 * q * loop), 2.59676e-4, 1e-5);
    assert_rel(flops, f, 1e-15);
    /* A stack at 0.9 of the profile's GEMM efficiency (cdse_stack.gemm_scale) divides the
     * compute part: 6e-6 + 2.53676e-4 / 0.9. */
    e.gemm_scale = 0.9;
    assert_rel(perf_gemm_time(&e, 4096.0, 4096.0, 4096.0, &flops),
               6e-6 + f / (989.4e12 * 0.6 * 0.9 * q * loop), 1e-12);
}

/* Ring attention's merge (Transformer Engine AttnFuncWithCPAndKVP2P, context_parallel.py):
 * the first partial output is rescaled (read 2 B, write 2 B per element), each of the other
 * cp - 1 is added in place (read 2 + 2 B, write 2 B). Llama 3 70B, TP 4, CP 2, micro-batch 1,
 * sequence 8192: 4096 local rows x 16 local heads x 128 = 8,388,608 output elements: 8,388,608
 * x (4 + 6 x 1) = 83,886,080 B; on an H100 at 3.35 TB/s x 0.90 that is 83,886,080 / 3.015e12 =
 * 27.8 us per layer forward. CP 4: 2,048 rows, 4,194,304 elements x (4 + 6 x 3) = 92,274,688 B:
 * more steps outweigh the shorter local sequence. */
static void test_cp_merge_bytes(void **state)
{
    (void)state;
    dims x;
    memset(&x, 0, sizeof x);
    x.c = 2.0;
    assert_rel(perf_cp_merge_bytes(&x, 4096.0 * 16.0 * 128.0), 83886080.0, 1e-15);
    assert_rel(83886080.0 / (3350e9 * 0.90), 27.8e-6, 2e-3);
    x.c = 4.0;
    assert_rel(perf_cp_merge_bytes(&x, 2048.0 * 16.0 * 128.0), 92274688.0, 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_waves_a100), cmocka_unit_test(test_tile_quantization),
        cmocka_unit_test(test_split_k),         cmocka_unit_test(test_gemm_time),
        cmocka_unit_test(test_cp_merge_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
