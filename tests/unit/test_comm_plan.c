/* The communication plan of the evaluator (src/model/perf*.c cdse_evaluate_plan,
 * src/model/comm_plan.c, cdse_coll_time of src/model/collective.c) against hand calculations.
 *
 * Sources of the expected values, written out beside each test:
 *   - Shoeybi et al. 2019 ("Megatron-LM"), Fig. 3: two TP all-reduces forward (g) and two
 *     backward (f) per layer, on the b s h activations of the micro-batch;
 *   - Korthikanti et al. 2022 (arXiv 2205.05198) Sec. 4.2.2: with sequence parallelism the
 *     all-reduces become all-gather + reduce-scatter pairs; the backward pass re-gathers the
 *     column-parallel layers' input (2 all-gathers more);
 *   - Narayanan et al. 2021 (SC'21) Sec. 2.2 and 4.1: m v + p - 1 pipeline steps, each sending
 *     the boundary activation (b s h / t after the scatter over TP ranks) forward and backward;
 *   - Rajbhandari et al. 2020 ("ZeRO"): stage 1/2 reduce-scatter the fp32 gradients (4 B per
 *     parameter) and all-gather the bf16 weights (2 B) once per iteration; stage 3 gathers the
 *     weights for the forward and the backward pass of every micro-batch and reduce-scatters
 *     the gradients of every micro-batch;
 *   - Thakur et al. 2005 / nccl-tests PERFORMANCE.md: a ring all-reduce over n ranks moves
 *     2 (n-1)/n of the buffer in 2 (n-1) latency-bound steps;
 *   - placement (DESIGN.md "Rank placement"): groups laid out innermost first, a group's stride
 *     is the product of the sizes of the groups inside it.
 * Symbols: s sequence, b micro-batch, h hidden, t tp, p pp, d dp, c cp, m micro-batches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "clusterdse/model/perf.h"
#include "plan_fixtures.h"

/* The default stack with fp32 gradients: the hand calculations below count 4 B per gradient
 * (the default, megatron-core-2025, reduces bf16 gradients as Megatron-Bridge's recipes do). */
static cdse_stack fp32_grads;

static cdse_strategy strat(int gpus, int tp, int pp, int microbatch, int global_batch)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = gpus;
    st.tp = tp;
    st.pp = pp;
    st.cp = 1;
    st.ep = 1;
    st.vpp = 1;
    st.microbatch = microbatch;
    st.global_batch = global_batch;
    st.precision = CDSE_BF16;
    fp32_grads = cdse_stack_default;
    fp32_grads.grad_bytes = 4.0;
    st.stack = &fp32_grads;
    return st;
}

static const cdse_comm_op *find(const cdse_comm_plan *plan, int group, int coll)
{
    for (int i = 0; i < plan->n; i++)
        if (plan->op[i].group == group && plan->op[i].coll == coll)
            return &plan->op[i];
    fail_msg("no %s %s in the plan", cdse_comm_group_name(group), cdse_coll_name(coll));
    return NULL;
}

static void plan_ok(const cdse_model *m, const cdse_system *s, const cdse_strategy *st,
                    cdse_result *r, cdse_comm_plan *plan)
{
    cdse_evaluate_plan(m, s, st, r, plan);
    assert_int_equal(r->status, CDSE_ST_OK);
}

/* Sum over a group's ops of calls x time x exposed share: the group's exposed time. */
static double exposed_of(const cdse_comm_plan *plan, int group)
{
    double t = 0.0;
    for (int i = 0; i < plan->n; i++)
        if (plan->op[i].group == group)
            t += plan->op[i].calls * plan->op[i].time_s * plan->op[i].exposed_share;
    return t;
}

/* 8 layers, 32 GPUs: t = 4, p = 2, d = 4, b = 1, global batch 16 -> m = 4, 4 layers per stage.
 * TP: all-reduce of b s h 2 B = 1,048,576 B over 4 ranks of one node, 4 per layer and
 * micro-batch: 64 calls; one call 2 (3/4 B / bw + 3 lat) on NVLink.
 * PP: stages tp cp dp = 16 ranks apart (across nodes): send/recv of b s h 2 / t = 262,144 B,
 * 2 (m + p - 1) = 10 calls, each B / bw + lat on InfiniBand, all exposed (no interleaving).
 * DP: 4 ranks tp = 4 apart (two nodes x 2): all-reduce of the stage's fp32 gradients. Stage
 * parameters per GPU (Megatron layer = 12 h^2 + 13 h split over t): per layer attention
 * 4 h^2 / t = 1,048,576, MLP 8 h^2 / t = 2,097,152, biases 3 h / t + h + 4h / t + h = 1792 +
 * 2048, norms 4 h = 4096: 3,153,664; x 4 layers = 12,614,656; embedding V h / t = 1,048,576
 * and positions s h = 524,288: 14,187,520 parameters, 56,750,080 B of gradients, below one
 * 40M-parameter bucket, so the whole all-reduce is exposed (share 1). */
static void test_default_plan(void **state)
{
    (void)state;
    cdse_model m = fixture_gpt(8);
    cdse_system s = fixture_sys();
    cdse_strategy st = strat(32, 4, 2, 1, 16);
    cdse_result r;
    cdse_comm_plan plan;
    plan_ok(&m, &s, &st, &r, &plan);
    assert_int_equal(plan.n, 3);

    const cdse_comm_op *tp = find(&plan, CDSE_GROUP_TP, CDSE_COLL_ALLREDUCE);
    assert_int_equal(tp->size, 4);
    assert_int_equal(tp->stride, 1);
    assert_rel(tp->bytes, 1048576.0, 1e-15);
    assert_rel(tp->calls, 64.0, 1e-15);
    assert_rel(tp->time_s, 2.0 * (0.75 * 1048576.0 / NVLINK_BW + 3.0 * NVLINK_LAT), 1e-12);
    /* Forward all-reduces exposed, backward ones partly hidden: between 1/2 and 1. */
    assert_true(tp->exposed_share > 0.5 && tp->exposed_share <= 1.0);
    assert_rel(exposed_of(&plan, CDSE_GROUP_TP), r.t_tp_comm_s, 1e-12);

    const cdse_comm_op *pp = find(&plan, CDSE_GROUP_PP, CDSE_COLL_SENDRECV);
    assert_int_equal(pp->size, 2);
    assert_int_equal(pp->stride, 16);
    assert_rel(pp->bytes, 262144.0, 1e-15);
    assert_rel(pp->calls, 10.0, 1e-15);
    assert_rel(pp->time_s, 262144.0 / IB_BW + IB_LAT, 1e-12);
    assert_rel(pp->exposed_share, 1.0, 1e-12);
    assert_rel(r.t_pp_comm_s, 10.0 * pp->time_s, 1e-12);

    const cdse_comm_op *dp = find(&plan, CDSE_GROUP_DP, CDSE_COLL_ALLREDUCE);
    assert_int_equal(dp->size, 4);
    assert_int_equal(dp->stride, 4);
    assert_rel(dp->bytes, 14187520.0 * 4.0, 1e-12);
    assert_rel(dp->calls, 1.0, 1e-15);
    /* Span: 2 members per node, 2 nodes; the ring inside the node on the whole buffer, across
     * nodes on half of it. */
    double b = 56750080.0;
    double want = 2.0 * (0.5 * b / NVLINK_BW + NVLINK_LAT) + 2.0 * (0.5 * b / 2.0 / IB_BW + IB_LAT);
    assert_rel(dp->time_s, want, 1e-12);
    assert_rel(dp->exposed_share, 1.0, 1e-12);
    assert_rel(r.t_dp_comm_s, dp->time_s, 1e-12);
}

/* Sequence parallelism with full recomputation: all-gathers 2 forward + 2 exposed + 2
 * overlapped backward + 2 recomputed = 8 per layer and micro-batch, reduce-scatters 2 + 2 + 2 =
 * 6; on the same b s h 2 B buffer (collective.h counts the gathered buffer). m = 4, 4 layers
 * per stage: 128 and 96 calls. */
static void test_sequence_parallel_full_recompute(void **state)
{
    (void)state;
    cdse_model m = fixture_gpt(8);
    cdse_system s = fixture_sys();
    cdse_strategy st = strat(32, 4, 2, 1, 16);
    st.sequence_parallel = true;
    st.recompute = CDSE_RECOMPUTE_FULL;
    cdse_result r;
    cdse_comm_plan plan;
    plan_ok(&m, &s, &st, &r, &plan);
    const cdse_comm_op *ag = find(&plan, CDSE_GROUP_TP, CDSE_COLL_ALLGATHER);
    const cdse_comm_op *rs = find(&plan, CDSE_GROUP_TP, CDSE_COLL_REDUCE_SCATTER);
    assert_rel(ag->calls, 128.0, 1e-15);
    assert_rel(rs->calls, 96.0, 1e-15);
    assert_rel(ag->bytes, 1048576.0, 1e-15);
    assert_rel(rs->bytes, 1048576.0, 1e-15);
    assert_rel(ag->time_s, 0.75 * 1048576.0 / NVLINK_BW + 3.0 * NVLINK_LAT, 1e-12);
    assert_rel(exposed_of(&plan, CDSE_GROUP_TP), r.t_tp_comm_s, 1e-12);
}

/* ZeRO: stage 1 reduce-scatters the 4 B gradients and all-gathers the 2 B weights once per
 * iteration; stage 3 (FSDP style, the default stack) once (reduce-scatter) and twice
 * (all-gathers: forward, backward) per micro-batch (m = 4), in one call per layer of the stage
 * (4 layers; their 14,187,520 parameters are fewer than a 4e7-parameter bucket): 16 and 32 calls
 * of a quarter of the bytes. */
static void test_zero_stages(void **state)
{
    (void)state;
    cdse_model m = fixture_gpt(8);
    cdse_system s = fixture_sys();
    cdse_strategy st = strat(32, 4, 2, 1, 16);
    cdse_result r;
    cdse_comm_plan plan;
    st.zero = 1;
    plan_ok(&m, &s, &st, &r, &plan);
    const cdse_comm_op *rs = find(&plan, CDSE_GROUP_DP, CDSE_COLL_REDUCE_SCATTER);
    const cdse_comm_op *ag = find(&plan, CDSE_GROUP_DP, CDSE_COLL_ALLGATHER);
    assert_rel(rs->calls, 1.0, 1e-15);
    assert_rel(ag->calls, 1.0, 1e-15);
    assert_rel(rs->bytes, 14187520.0 * 4.0, 1e-12);
    assert_rel(ag->bytes, 14187520.0 * 2.0, 1e-12);
    assert_rel(exposed_of(&plan, CDSE_GROUP_DP), r.t_dp_comm_s, 1e-12);
    st.zero = 3;
    plan_ok(&m, &s, &st, &r, &plan);
    rs = find(&plan, CDSE_GROUP_DP, CDSE_COLL_REDUCE_SCATTER);
    ag = find(&plan, CDSE_GROUP_DP, CDSE_COLL_ALLGATHER);
    assert_rel(rs->calls, 16.0, 1e-15);
    assert_rel(ag->calls, 32.0, 1e-15);
    assert_rel(rs->bytes, 14187520.0 * 4.0 / 4.0, 1e-12);
    assert_rel(ag->bytes, 14187520.0 * 2.0 / 4.0, 1e-12);
    assert_rel(exposed_of(&plan, CDSE_GROUP_DP), r.t_dp_comm_s, 1e-12);
}

/* Context parallelism c = 2 (t = 2, p = 1, d = 8 on 32 GPUs): the ring passes each rank's keys
 * and values, b (s/c) 2 kv_local dh 2 B = 1 x 256 x 2 x 8 x 64 x 2 = 524,288 B, c - 1 = 1 step
 * forward and 2 backward per layer: 3 x 8 layers x m = 1 (global batch 8 = d). The CP group is
 * t = 2 apart; DP runs over d c = 16 ranks starting at CP's stride 2. */
static void test_context_parallel(void **state)
{
    (void)state;
    cdse_model m = fixture_gpt(8);
    cdse_system s = fixture_sys();
    cdse_strategy st = strat(32, 2, 1, 1, 8);
    st.cp = 2;
    cdse_result r;
    cdse_comm_plan plan;
    plan_ok(&m, &s, &st, &r, &plan);
    const cdse_comm_op *cp = find(&plan, CDSE_GROUP_CP, CDSE_COLL_SENDRECV);
    assert_int_equal(cp->size, 2);
    assert_int_equal(cp->stride, 2);
    assert_rel(cp->bytes, 524288.0, 1e-15);
    assert_rel(cp->calls, 24.0, 1e-15);
    assert_rel(cp->time_s, 524288.0 / NVLINK_BW + NVLINK_LAT, 1e-12);
    const cdse_comm_op *dp = find(&plan, CDSE_GROUP_DP, CDSE_COLL_ALLREDUCE);
    assert_int_equal(dp->size, 16);
    assert_int_equal(dp->stride, 2);
    assert_rel(exposed_of(&plan, CDSE_GROUP_CP), r.t_cp_comm_s, 1e-12);
}

/* Placement "dp-tp-cp-pp" with t = 4, d = 16, p = 2 on 128 GPUs: DP innermost (stride 1), TP
 * at stride d = 16, PP at stride d t c = 64. The default "tp-cp-dp-pp": TP 1, DP 4, PP 64. */
static void test_placement_strides(void **state)
{
    (void)state;
    cdse_model m = fixture_gpt(8);
    cdse_system s = fixture_sys();
    cdse_strategy st = strat(128, 4, 2, 1, 64);
    st.placement = fixture_placement("dp-tp-cp-pp");
    cdse_result r;
    cdse_comm_plan plan;
    plan_ok(&m, &s, &st, &r, &plan);
    assert_int_equal(r.dp, 16);
    assert_int_equal(find(&plan, CDSE_GROUP_TP, CDSE_COLL_ALLREDUCE)->stride, 16);
    assert_int_equal(find(&plan, CDSE_GROUP_DP, CDSE_COLL_ALLREDUCE)->stride, 1);
    assert_int_equal(find(&plan, CDSE_GROUP_PP, CDSE_COLL_SENDRECV)->stride, 64);
    /* TP 16 apart crosses nodes: 4 members, one per node, ring on InfiniBand. */
    const cdse_comm_op *tp = find(&plan, CDSE_GROUP_TP, CDSE_COLL_ALLREDUCE);
    assert_int_equal(tp->span.factor[0], 1);
    assert_int_equal(tp->span.factor[1], 4);
    assert_rel(tp->time_s, 2.0 * (0.75 * 1048576.0 / IB_BW + 3.0 * IB_LAT), 1e-12);
    st.placement = fixture_placement("tp-cp-dp-pp");
    plan_ok(&m, &s, &st, &r, &plan);
    assert_int_equal(find(&plan, CDSE_GROUP_TP, CDSE_COLL_ALLREDUCE)->stride, 1);
    assert_int_equal(find(&plan, CDSE_GROUP_DP, CDSE_COLL_ALLREDUCE)->stride, 4);
    assert_int_equal(find(&plan, CDSE_GROUP_PP, CDSE_COLL_SENDRECV)->stride, 64);
}

/* MoE: 8 experts, top-2, ep = 4, every layer MoE, capacity factor 1.0 (route factor 1): the
 * dispatch/combine all-to-all moves b s k h 2 B = 512 x 2 x 1024 x 2 = 2,097,152 B (t = 1) over
 * the 4 EP ranks at DP's stride (t c = 1), 4 per layer and micro-batch; the expert gradients
 * are reduced over d c / ep = 2 ranks at stride ep = 4. */
static void test_moe_groups(void **state)
{
    (void)state;
    cdse_model m = fixture_gpt(4);
    m.experts = 8;
    m.top_k = 2;
    m.moe_every = 1;
    m.moe_ffn = 4096;
    m.capacity_factor = 1.0;
    cdse_system s = fixture_sys();
    cdse_strategy st = strat(8, 1, 1, 1, 8);
    st.ep = 4;
    cdse_result r;
    cdse_comm_plan plan;
    plan_ok(&m, &s, &st, &r, &plan);
    const cdse_comm_op *ep = find(&plan, CDSE_GROUP_EP, CDSE_COLL_ALLTOALL);
    assert_int_equal(ep->size, 4);
    assert_int_equal(ep->stride, 1);
    assert_rel(ep->bytes, 2097152.0, 1e-15);
    assert_rel(ep->calls, 4.0 * 4.0, 1e-15); /* 4 layers, m = 1 */
    assert_rel(ep->time_s, 0.75 * 2097152.0 / NVLINK_BW + 3.0 * NVLINK_LAT, 1e-12);
    assert_rel(exposed_of(&plan, CDSE_GROUP_EP), r.t_ep_comm_s, 1e-12);
    const cdse_comm_op *edp = find(&plan, CDSE_GROUP_EDP, CDSE_COLL_ALLREDUCE);
    assert_int_equal(edp->size, 2);
    assert_int_equal(edp->stride, 4);
    assert_rel(exposed_of(&plan, CDSE_GROUP_DP) + exposed_of(&plan, CDSE_GROUP_EDP), r.t_dp_comm_s,
               1e-12);
}

/* cdse_evaluate and cdse_evaluate_plan share one code path: identical results. */
static void test_same_result(void **state)
{
    (void)state;
    cdse_model m = fixture_gpt(8);
    cdse_system s = fixture_sys();
    cdse_strategy st = strat(32, 4, 2, 1, 16);
    st.sequence_parallel = true;
    st.zero = 1;
    cdse_result a, b;
    cdse_comm_plan plan;
    cdse_evaluate(&m, &s, &st, &a);
    cdse_evaluate_plan(&m, &s, &st, &b, &plan);
    assert_memory_equal(&a, &b, sizeof a);
    st.tp = 3; /* 32 GPUs not divisible by t p = 6: no plan */
    cdse_evaluate_plan(&m, &s, &st, &b, &plan);
    assert_int_equal(b.status, CDSE_ST_GPUS_NOT_DIVISIBLE);
    assert_int_equal(plan.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_plan),
        cmocka_unit_test(test_sequence_parallel_full_recompute),
        cmocka_unit_test(test_zero_stages),
        cmocka_unit_test(test_context_parallel),
        cmocka_unit_test(test_placement_strides),
        cmocka_unit_test(test_moe_groups),
        cmocka_unit_test(test_same_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
