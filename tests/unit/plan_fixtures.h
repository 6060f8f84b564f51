/* Hand-filled model and system shared by test_comm_plan.c and test_verify.c (no files loaded).
 * Include after <cmocka.h>. */
#ifndef CDSE_TEST_PLAN_FIXTURES_H
#define CDSE_TEST_PLAN_FIXTURES_H

#include <math.h>
#include <string.h>

#include "clusterdse/model/perf.h"

#include "assert_rel.h"

/* NVLink inside a node of 8 GPUs (300 GB/s at 80 %, 2 us), InfiniBand between nodes (25 GB/s
 * at 90 %, 5 us): the effective rates the hand calculations use. */
#define NVLINK_BW  (300e9 * 0.8)
#define NVLINK_LAT 2e-6
#define IB_BW      (25e9 * 0.9)
#define IB_LAT     5e-6

/* GPT-style: h = 1024, 16 heads of 64, ffn 4h, s = 512, V = 4096, tied embeddings. */
static inline cdse_model fixture_gpt(int layers)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "plan-gpt");
    m.layers = layers;
    m.hidden = 1024;
    m.heads = 16;
    m.kv_heads = 16;
    m.head_dim = 64;
    m.ffn = 4096;
    m.seq_len = 512;
    m.vocab = 4096;
    m.tied_embeddings = true;
    return m;
}

/* 100 TFLOP/s bf16 at a GEMM efficiency of 0.5, HBM large enough that nothing runs out of
 * memory, the two network levels above. */
static inline cdse_system fixture_sys(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "plan-sys");
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
    s.gpus_per_node = 8;
    s.n_levels = 2;
    s.level[0].size = 8;
    s.level[0].bandwidth_gbs = 300.0;
    s.level[0].efficiency = 0.8;
    s.level[0].latency_us = 2.0;
    s.level[1].bandwidth_gbs = 25.0;
    s.level[1].efficiency = 0.9;
    s.level[1].latency_us = 5.0;
    return s;
}

/* The number of a placement name (fails the test when there is none). */
static inline int fixture_placement(const char *name)
{
    int p = cdse_placement_parse(name);
    if (p < 0)
        fail_msg("no placement %s", name);
    return p;
}

#endif
