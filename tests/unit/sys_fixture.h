/* The test system of the evaluator's unit tests (test_perf_*.c through perf_fixtures.h, and
 * test_torchtitan.c): one definition, so that their hand calculations read the same numbers. */
#ifndef CDSE_TEST_SYS_FIXTURE_H
#define CDSE_TEST_SYS_FIXTURE_H

#include <string.h>

#include "clusterdse/model/hardware.h"

/* 100 TFLOP/s bf16, a constant GEMM efficiency of 0.5 (two table points with the same value),
 * 1000 GB/s HBM at full efficiency, 10^4 GiB of HBM (nothing runs out of memory), 8 GPUs per node
 * on NVLink (300 GB/s, 80%, 2 us), InfiniBand between nodes (25 GB/s, 90%, 5 us). */
static inline cdse_system sys(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "test-sys");
    s.peak_tflops[CDSE_BF16] = 100.0;
    s.peak_tflops[CDSE_FP16] = 100.0;
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

#endif
