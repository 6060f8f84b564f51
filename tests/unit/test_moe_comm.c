/* Expert-parallel communication as run, against hand calculations: the folded EP group's
 * all-to-alls, the deepep dispatcher's hierarchical dispatch (across NVLink domains once per
 * domain a token touches, then inside them), node-limited routing, FP8 dispatch, the etp
 * all-gather / reduce-scatter, and overlap.
 *
 * System (as test_comm_plan.c): 8-GPU NVLink nodes, 300 GB/s x 0.8 = 240e9 B/s and 2 us per
 * step; InfiniBand 25 GB/s x 0.9 = 22.5e9 B/s and 5 us. All-to-all (collective.c; nccl-tests
 * PERFORMANCE.md): of a rank's buffer B, the share addressed to peers first reached at level l,
 * (inside_l - inside_{l-1}) / n, crosses level l, plus (f_l - 1) latencies.
 * Model: 4 layers, h 1024, s 512, 64 experts, top-8, every layer MoE, balanced routing
 * (moe_imbalance 1): a rank sends 512 x 8 = 4096 routed copies per all-to-all,
 * 4096 x 1024 x 2 B = 8388608 B in BF16. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "assert_rel.h"

#include <math.h>
#include <string.h>

#include "clusterdse/model/comm_plan.h"
#include "clusterdse/model/perf.h"

static cdse_model moe(void)
{
    cdse_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "test-moe");
    m.layers = 4;
    m.hidden = 1024;
    m.heads = 16;
    m.kv_heads = 16;
    m.head_dim = 64;
    m.ffn = 4096;
    m.seq_len = 512;
    m.vocab = 4096;
    m.gated_mlp = true;
    m.experts = 64;
    m.top_k = 8;
    m.moe_ffn = 512;
    m.moe_every = 1;
    m.moe_imbalance = 1.0;
    cdse_model_fill_defaults(&m);
    return m;
}

static cdse_system sys(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    s.peak_tflops[CDSE_BF16] = 100.0;
    s.peak_tflops[CDSE_FP8] = 200.0;
    s.gemm_eff.n = 1;
    s.gemm_eff.flops[0] = 1e9;
    s.gemm_eff.eff[0] = 0.5;
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

static cdse_strategy strat(int gpus, int ep)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = gpus;
    st.tp = st.pp = st.cp = st.vpp = 1;
    st.ep = ep;
    st.microbatch = 1;
    st.global_batch = gpus;
    st.precision = CDSE_BF16;
    st.flash_attention = true;
    return st;
}

/* The EP ops of the plan, in order. */
static int ep_ops(const cdse_model *m, const cdse_system *s, const cdse_strategy *st,
                  cdse_result *r, const cdse_comm_op *out[8], cdse_comm_plan *plan)
{
    cdse_evaluate_plan(m, s, st, r, plan);
    assert_int_equal(r->status, CDSE_ST_OK);
    int n = 0;
    for (int i = 0; i < plan->n && n < 8; i++)
        if (plan->op[i].group == CDSE_GROUP_EP)
            out[n++] = &plan->op[i];
    return n;
}

/* ep 16 on 16 GPUs (two nodes), alltoall dispatcher: one all-to-all of 8388608 B over [8, 2]:
 * 7/16 B / 240e9 + 7 x 2e-6 + 8/16 B / 22.5e9 + 5e-6 = 2.2070524e-4 s, 4 calls per layer. */
static void test_flat_alltoall(void **state)
{
    (void)state;
    cdse_model m = moe();
    cdse_system s = sys();
    cdse_strategy st = strat(16, 16);
    cdse_result r;
    cdse_comm_plan plan;
    const cdse_comm_op *op[8];
    assert_int_equal(ep_ops(&m, &s, &st, &r, op, &plan), 1);
    assert_int_equal(op[0]->size, 16);
    assert_int_equal(op[0]->stride, 1);
    assert_rel(op[0]->bytes, 8388608.0, 1e-15);
    assert_rel(op[0]->calls, 16.0, 1e-15);
    assert_rel(op[0]->time_s, 2.2070524e-4, 1e-7);
}

/* deepep on the same group: the 64 experts sit 32 per node; the chance that a node holds none of
 * a token's 8 experts is prod_{i<8} (32 - i) / (64 - i) = 0.0023763911, so a token touches
 * 2 (1 - 0.0023763911) = 1.9952472 nodes: across the nodes (sub-group of 2 ranks 8 apart)
 * 512 x 1.9952472 x 1024 x 2 B = 2092168.3 B, 1/2 of it on InfiniBand:
 * 0.5 x 2092168.3 / 22.5e9 + 5e-6 = 5.1492630e-5 s; inside the node (8 ranks, stride 1) all
 * 8388608 B of copies, 7/8 on NVLink: 7/8 x 8388608 / 240e9 + 14e-6 = 4.4583467e-5 s.
 * With node-limited routing to 1 node: 512 x 1024 x 2 = 1048576 B across,
 * 0.5 x 1048576 / 22.5e9 + 5e-6 = 2.8301689e-5 s.
 * DeepEP pipelines the two stages in one kernel (legacy/internode.cu: RDMA sender, forwarder
 * and NVLink receiver warps work at once), so a dispatch or combine takes the slower stage:
 * 4 per layer (forward dispatch and combine, both backward), 4 layers, m = 1 (16 sequences over
 * dp 16), all exposed: 16 x 5.1492630e-5 s; with the node limit the NVLink stage is the slower,
 * 16 x 4.4583467e-5 s. */
static void test_hierarchical_dispatch(void **state)
{
    (void)state;
    cdse_model m = moe();
    cdse_system s = sys();
    cdse_strategy st = strat(16, 16);
    st.moe_dispatcher = CDSE_DISPATCH_DEEPEP;
    cdse_result r;
    cdse_comm_plan plan;
    const cdse_comm_op *op[8];
    assert_int_equal(ep_ops(&m, &s, &st, &r, op, &plan), 4); /* dispatch and combine, 2 levels */
    assert_int_equal(op[0]->size, 2);
    assert_int_equal(op[0]->stride, 8);
    assert_rel(op[0]->bytes, 2092168.35, 1e-8);
    assert_rel(op[0]->time_s, 5.1492630e-5, 1e-7);
    assert_rel(op[0]->calls, 4.0 * 1.0, 1e-15); /* forward dispatch */
    assert_int_equal(op[1]->size, 8);
    assert_int_equal(op[1]->stride, 1);
    assert_rel(op[1]->time_s, 4.4583467e-5, 1e-7);
    assert_rel(op[2]->calls, 4.0 * 3.0, 1e-15); /* combine, and both backward */
    assert_rel(r.t_ep_comm_s, 16.0 * 5.1492630e-5, 1e-7);
    m.moe_node_limit = 1;
    assert_int_equal(ep_ops(&m, &s, &st, &r, op, &plan), 4);
    assert_rel(op[0]->bytes, 1048576.0, 1e-15);
    assert_rel(op[0]->time_s, 2.8301689e-5, 1e-7);
    assert_rel(r.t_ep_comm_s, 16.0 * 4.4583467e-5, 1e-7);
}

/* FP8 dispatch (deepep, fp8), ep 8 inside one node: the forward dispatch moves
 * 4096 x 1024 x (1 + 4/128) B = 4325376 B once per layer, the BF16 all-to-all 8388608 B three
 * times. */
static void test_fp8_dispatch(void **state)
{
    (void)state;
    cdse_model m = moe();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 8);
    st.moe_dispatcher = CDSE_DISPATCH_DEEPEP;
    st.precision = CDSE_FP8;
    cdse_result r;
    cdse_comm_plan plan;
    const cdse_comm_op *op[8];
    assert_int_equal(ep_ops(&m, &s, &st, &r, op, &plan), 2);
    assert_rel(op[0]->bytes, 4325376.0, 1e-15);
    assert_rel(op[0]->calls, 4.0, 1e-15);
    assert_rel(op[1]->bytes, 8388608.0, 1e-15);
    assert_rel(op[1]->calls, 12.0, 1e-15);
}

/* MoE parallel folding with etp 2: tp 2, ep 4 on 8 GPUs (dp 4, edp 1). Without sequence
 * parallelism a rank dispatches all 512 tokens: 4096 copies, 8388608 B, over the EP group of
 * 4 at the expert grid's ep stride 2; the etp pair (stride 1) all-gathers and reduce-scatters
 * the received copies, gathered buffer 2 x 8388608 B, twice per layer and micro-batch each
 * (all-gather: (1/2) x 16777216 / 240e9 + 2e-6 = 3.6952533e-5 s). */
static void test_etp_group(void **state)
{
    (void)state;
    cdse_model m = moe();
    cdse_system s = sys();
    cdse_strategy st = strat(8, 4);
    st.tp = 2;
    st.etp = 2;
    cdse_result r;
    cdse_comm_plan plan;
    const cdse_comm_op *op[8];
    assert_int_equal(ep_ops(&m, &s, &st, &r, op, &plan), 3);
    assert_int_equal(op[0]->coll, CDSE_COLL_ALLGATHER);
    assert_int_equal(op[0]->size, 2);
    assert_int_equal(op[0]->stride, 1);
    assert_rel(op[0]->bytes, 16777216.0, 1e-15);
    assert_rel(op[0]->calls, 16.0, 1e-15); /* 4 layers x m 2 (8 sequences over dp 4) x 2 */
    assert_rel(op[0]->time_s, 3.6952533e-5, 1e-7);
    assert_int_equal(op[1]->coll, CDSE_COLL_REDUCE_SCATTER);
    assert_int_equal(op[2]->coll, CDSE_COLL_ALLTOALL);
    assert_int_equal(op[2]->size, 4);
    assert_int_equal(op[2]->stride, 2);
    /* etp 1 (folding): ep 8 at stride 1, edp 1, no etp collectives. */
    st.etp = 1;
    st.ep = 8;
    assert_int_equal(ep_ops(&m, &s, &st, &r, op, &plan), 1);
    assert_int_equal(op[0]->size, 8);
    assert_int_equal(op[0]->stride, 1);
}

/* Overlap: a collective hidden behind computation still costs OVERLAP_INTERFERENCE (0.25, perf*.c)
 * of its time; with 1F1B all-to-all overlap and all-to-alls far shorter than the layer's
 * computation (ep 8 on NVLink), the exposed EP time is 0.25 of the unoverlapped one. */
static void test_a2a_overlap(void **state)
{
    (void)state;
    cdse_model m = moe();
    m.seq_len = 4096;
    cdse_system s = sys();
    s.level[0].bandwidth_gbs = 3000.0;
    cdse_strategy st = strat(8, 8);
    cdse_result plain, hidden;
    cdse_evaluate(&m, &s, &st, &plain);
    st.moe_overlap = CDSE_MOE_OVERLAP_A2A;
    cdse_evaluate(&m, &s, &st, &hidden);
    assert_int_equal(hidden.status, CDSE_ST_OK);
    assert_true(plain.t_ep_comm_s > 0.0);
    assert_rel(hidden.t_ep_comm_s, 0.25 * plain.t_ep_comm_s, 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat_alltoall), cmocka_unit_test(test_hierarchical_dispatch),
        cmocka_unit_test(test_fp8_dispatch),  cmocka_unit_test(test_etp_group),
        cmocka_unit_test(test_a2a_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
