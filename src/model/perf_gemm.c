/* A GEMM's time on one GPU: the system's efficiency table by FLOPs, or the GEMM shape model
 * (tile and wave quantization, split-K, the main loop's K overhead) when the system has a
 * gemm_shape group; never faster than its operands' HBM traffic. perf_layer.c and perf.c cost
 * their GEMMs with it. */
#include <math.h>

#include "perf_internal.h"

/* The GEMM shape model (systems with a gemm_shape group). A GEMM C = A B of m x n x k runs
 * as output tiles of GEMM_TILE x GEMM_TILE, one thread block per tile, in waves of `sms` tiles
 * (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001: Sec. 3.1 tile
 * quantization, Sec. 3.2 wave quantization: "the number of tiles ... is quantized to a
 * multiple of the number of SMs"; 128 x 128 is the tile of its A100 examples). A GEMM with
 * fewer tiles than SMs is split along K into up to sms / tiles slices of at least
 * GEMM_SPLITK_MIN_K (cuBLAS split-K / stream-K), each slice a tile's work of k / split. A
 * tile's main loop amortises its prologue and epilogue over K: efficiency k / (k +
 * GEMM_K_OVERHEAD); every GEMM kernel adds GEMM_KERNEL_FIXED_S (ramp-up and drain of the
 * waves). Fitted (least squares in log time) to OpenXLA's measured cuBLAS table for H100 SXM
 * (sm_90, bf16xbf16->bf16; tensorflow/tensorflow
 * third_party/xla/xla/service/gpu/model/matmul_interpolator_data.h, 39 single GEMMs with m, n,
 * k in 256-4096): split-K slices of 256 and 6 us per kernel at every main-loop overhead tried;
 * the overhead itself is 128 at the optimum (rms error 7.7 %) and 256 here (rms 8.8 %, its
 * efficiency 0.93: 4096^3 810 vs 783 TFLOP/s measured, 2048^3 621 vs 632, 1024^3 224 vs 236,
 * 4096 x 4096 x 256 340 vs 392), because the A100 rows of tests/validation/published.csv,
 * whose attention projections and FC2 run on K = h / 8 (768-3200), are met within their
 * targets only from 256 up (Korthikanti et al. 2022 Table 5: 2.3 % mean |error| at 256 with
 * efficiency 0.76, 3.1 % and 6.7 % worst at 128; docs/zoo.md, GEMM shape model). Skinny GEMMs
 * (m or n 256 with k 4096) run 25-35 % slower than the model gives. Each system's
 * gemm_shape.efficiency is its training runs' end-to-end value, calibrated as its profile
 * says. GEMM_TILE (128) is in perf_internal.h. */
#define GEMM_SPLITK_MIN_K   256.0
#define GEMM_K_OVERHEAD     256.0
#define GEMM_KERNEL_FIXED_S 6.0e-6

/* The share of peak-rate tile work a GEMM of m x n x k achieves on `sms` SMs before the
 * profile's efficiency: tile and wave quantization (with split-K) times the main loop's
 * k-slice / (k-slice + GEMM_K_OVERHEAD). */
double perf_gemm_shape_factor(double sms, double m, double n, double k)
{
    double tiles = ceil(m / GEMM_TILE) * ceil(n / GEMM_TILE);
    if (!(tiles >= 1.0))
        return 1.0; /* an empty GEMM: its time is 0 (f = 0) */
    double split = 1.0;
    if (tiles < sms) {
        split = floor(sms / tiles);
        double slices = floor(k / GEMM_SPLITK_MIN_K);
        if (split > slices)
            split = slices > 1.0 ? slices : 1.0;
    }
    double waves = ceil(tiles * split / sms);
    double slice = k / split;
    double quantization = m * n * split / (waves * sms * GEMM_TILE * GEMM_TILE);
    return quantization * slice / (slice + GEMM_K_OVERHEAD);
}

double perf_gemm_time(const env *e, double m, double n, double k, double *flops)
{
    double f = 2.0 * m * n * k;
    double bytes = (m * k + k * n + m * n) * e->operand_bytes;
    double memory = bytes / e->hbm;
    *flops += f;
    if (e->gemm_sms > 0.0) {
        double eff =
            e->gemm_shape_eff * e->gemm_scale * perf_gemm_shape_factor(e->gemm_sms, m, n, k);
        double compute = GEMM_KERNEL_FIXED_S + f / (e->gemm_peak * eff);
        return compute > memory ? compute : memory;
    }
    double eff = cdse_eff_lookup(e->gemm_table, f) * e->gemm_scale;
    double compute = f / (e->gemm_peak * eff);
    return compute > memory ? compute : memory;
}
