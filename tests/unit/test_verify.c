/* verify replays the evaluator's communication plan (src/calibrate/verify.c cdse_verify_ops and
 * cdse_verify_plan against src/model/perf*.c cdse_evaluate_plan).
 *
 * For every placement (the 24 orders of tp, cp, dp, pp) and configurations with TP with and
 * without sequence parallelism, CP, PP, DP with ZeRO 0..3 and EP on a MoE model, each replayed
 * op must be the plan's op (group, collective, size, stride, bytes, calls, exposed share) and its
 * prediction the evaluator's cost of that op. Strides are checked against the placement rule of
 * DESIGN.md ("Rank placement": groups laid out innermost first; a group's stride is the product
 * of the sizes of the groups inside it; EP is the inner part of dp; the DP gradient group spans
 * dp x cp from the smaller of their strides), worked out here from the order's name, and
 * against hand-written strides for named placements. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/calibrate/verify.h"
#include "clusterdse/model/perf.h"
#include "plan_fixtures.h"

/* The GPT fixture with 8 layers of 8 experts of ffn 4h, top-2. */
static cdse_model moe_gpt(void)
{
    cdse_model m = fixture_gpt(8);
    m.experts = 8;
    m.top_k = 2;
    m.moe_every = 1;
    m.moe_ffn = 4096;
    return m;
}

/* 64 GPUs: t = 2, c = 2, p = 2, d = 8, ep = 2, global batch 32 (m = 4). */
static cdse_strategy strat(int placement, bool sp, int zero)
{
    cdse_strategy st;
    memset(&st, 0, sizeof st);
    st.gpus = 64;
    st.tp = 2;
    st.cp = 2;
    st.pp = 2;
    st.ep = 2;
    st.vpp = 1;
    st.microbatch = 1;
    st.global_batch = 32;
    st.sequence_parallel = sp;
    st.zero = zero;
    st.precision = CDSE_BF16;
    st.placement = placement;
    return st;
}

/* Strides of tp, cp, dp, pp for an order name such as "dp-tp-cp-pp" (innermost first). */
static void strides_from_name(const char *name, const int size[4], int stride[4])
{
    static const char *const dims[4] = {"tp", "cp", "dp", "pp"};
    int below = 1;
    for (int k = 0; k < 4; k++) {
        const char *part = name + 3 * k;
        int d = 0;
        while (d < 4 && strncmp(part, dims[d], 2) != 0)
            d++;
        assert_true(d < 4);
        stride[d] = below;
        below *= size[d];
    }
}

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

/* Strides of the expert grid under MoE parallel folding (Megatron-Core's expert rank generator
 * in parallel_state.initialize_model_parallel: tp := etp, cp := 1, ep just inside dp := edp,
 * same order): walk the placement name innermost first; "tp" holds etp ranks, "cp" none, "dp"
 * holds ep x edp (ep inside), "pp" holds pp. stride[0] etp, [1] ep, [2] edp. */
static void expert_strides_from_name(const char *name, int etp, int ep, int edp, int pp,
                                     int stride[3])
{
    int below = 1;
    for (int k = 0; k < 4; k++) {
        const char *part = name + 3 * k;
        if (strncmp(part, "tp", 2) == 0) {
            stride[0] = below;
            below *= etp;
        } else if (strncmp(part, "dp", 2) == 0) {
            stride[1] = below;
            stride[2] = below * ep;
            below *= ep * edp;
        } else if (strncmp(part, "pp", 2) == 0) {
            below *= pp;
        }
    }
}

/* Size and stride the placement rule gives each op of `st` (group and collective). */
static void expected_group(const cdse_strategy *st, const char *placement, int group, int coll,
                           int *size, int *stride)
{
    int dp = st->gpus / (st->tp * st->cp * st->pp);
    int sizes[4] = {st->tp, st->cp, dp, st->pp}, s[4];
    strides_from_name(placement, sizes, s);
    int etp = st->etp > 0 ? st->etp : st->tp;
    int edp = st->tp * st->cp * dp / (etp * st->ep), e[3];
    expert_strides_from_name(placement, etp, st->ep, edp, st->pp, e);
    switch (group) {
    case CDSE_GROUP_TP:
        *size = st->tp, *stride = s[0];
        break;
    case CDSE_GROUP_CP:
        *size = st->cp, *stride = s[1];
        break;
    case CDSE_GROUP_EP: /* all-to-alls over ep; the received tokens gathered over etp */
        if (coll == CDSE_COLL_ALLTOALL)
            *size = st->ep, *stride = e[1];
        else
            *size = etp, *stride = e[0];
        break;
    case CDSE_GROUP_PP:
        *size = st->pp, *stride = s[3];
        break;
    case CDSE_GROUP_DP:
        *size = dp * st->cp, *stride = min_int(s[1], s[2]);
        break;
    default: /* expert DP: the edp ranks holding the same experts */
        *size = edp, *stride = e[2];
        break;
    }
}

static void check_replay(const cdse_comm_plan *plan, const cdse_verify_op *ops, int n,
                         const cdse_strategy *st, const char *placement)
{
    assert_int_equal(n, plan->n);
    bool seen[CDSE_GROUP_COUNT] = {false};
    for (int i = 0; i < n; i++) {
        const cdse_comm_op *p = &plan->op[i];
        const cdse_verify_op *op = &ops[i];
        seen[p->group] = true;
        assert_string_equal(op->comm, cdse_comm_group_name(p->group));
        assert_string_equal(op->collective, cdse_coll_name(p->coll));
        int size, stride;
        expected_group(st, placement, p->group, p->coll, &size, &stride);
        if (op->group_size != size || op->stride != stride)
            fail_msg("%s %s %s: group %d stride %d, placement rule: %d stride %d", placement,
                     op->comm, op->collective, op->group_size, op->stride, size, stride);
        assert_int_equal(op->group_size, p->size);
        assert_int_equal(op->stride, p->stride);
        assert_true(op->bytes == p->bytes && op->bytes > 0.0);
        assert_true(op->calls == p->calls && op->calls > 0.0);
        assert_true(op->exposed_share == p->exposed_share);
        /* The prediction is the evaluator's cost of the same op. */
        if (!(fabs(op->predicted_us - p->time_s * 1e6) <= 1e-12 * p->time_s * 1e6))
            fail_msg("%s %s %s: predicted %.17g us, evaluator %.17g us", placement, op->comm,
                     op->collective, op->predicted_us, p->time_s * 1e6);
        /* 64 ranks hold every group at its own stride. */
        assert_int_equal(op->run_group_size, op->group_size);
        assert_int_equal(op->run_stride, op->stride);
    }
    for (int g = 0; g < CDSE_GROUP_COUNT; g++)
        if (!seen[g])
            fail_msg("%s: no %s op in the plan", placement, cdse_comm_group_name(g));
}

/* Every placement x sequence parallelism x ZeRO 0..3: 24 x 2 x 4 configurations. */
static void test_every_placement(void **state)
{
    (void)state;
    cdse_model m = moe_gpt();
    cdse_system s = fixture_sys();
    int checked = 0;
    for (int pl = 0; cdse_placement_names[pl]; pl++) {
        for (int sp = 0; sp < 2; sp++) {
            for (int zero = 0; zero <= 3; zero++) {
                cdse_strategy st = strat(pl, sp, zero);
                cdse_record rec;
                memset(&rec, 0, sizeof rec);
                rec.index = (uint64_t)checked;
                rec.strategy = st;
                cdse_comm_plan plan;
                cdse_evaluate_plan(&m, &s, &st, &rec.result, &plan);
                assert_int_equal(rec.result.status, CDSE_ST_OK);
                cdse_verify_op ops[CDSE_VERIFY_MAX_OPS];
                int n = cdse_verify_ops(&rec, &plan, &m, &s, 64, INT64_C(1) << 40, ops);
                check_replay(&plan, ops, n, &st, cdse_placement_names[pl]);
                checked++;
            }
        }
    }
    assert_int_equal(checked, 24 * 2 * 4);
}

static const cdse_verify_op *find_op(const cdse_verify_op *ops, int n, const char *comm,
                                     const char *coll)
{
    for (int i = 0; i < n; i++)
        if (strcmp(ops[i].comm, comm) == 0 && strcmp(ops[i].collective, coll) == 0)
            return &ops[i];
    fail_msg("no %s %s op", comm, coll);
    return NULL;
}

/* Named placements, strides by hand (t = 2, c = 2, d = 8, p = 2):
 *   tp-cp-dp-pp: TP 1, CP 2, DP x CP from 2, EP 4, PP 32;
 *   pp-dp-cp-tp: PP 1, DP 2, CP 16, TP 32; EP at DP's 2, DP x CP from 2 (DP's, the smaller);
 *   cp-tp-dp-pp: CP 1, TP 2, DP 4, PP 32; DP x CP from 1, EP 4, expert DP from 1. */
static void test_named_strides(void **state)
{
    (void)state;
    cdse_model m = moe_gpt();
    cdse_system s = fixture_sys();
    const struct {
        const char *placement;
        int tp, cp, dp, ep, pp, edp;
    } want[] = {
        /* Expert grid (etp = tp = 2, ep = 2, edp = tp cp dp / (etp ep) = 8), cp left out of
         * it: tp-cp-dp-pp: etp 1, ep 2, edp 4; pp-dp-cp-tp: pp 1, ep 2, edp 4, etp 32;
         * cp-tp-dp-pp: etp 1, ep 2, edp 4. */
        {"tp-cp-dp-pp", 1, 2, 2, 2, 32, 4},
        {"pp-dp-cp-tp", 32, 16, 2, 2, 1, 4},
        {"cp-tp-dp-pp", 2, 1, 1, 2, 32, 4},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cdse_strategy st = strat(fixture_placement(want[i].placement), false, 0);
        cdse_record rec;
        memset(&rec, 0, sizeof rec);
        cdse_comm_plan plan;
        cdse_evaluate_plan(&m, &s, &st, &rec.result, &plan);
        cdse_verify_op ops[CDSE_VERIFY_MAX_OPS];
        int n = cdse_verify_ops(&rec, &plan, &m, &s, 64, INT64_C(1) << 40, ops);
        assert_int_equal(find_op(ops, n, "tp", "allreduce")->stride, want[i].tp);
        assert_int_equal(find_op(ops, n, "cp", "sendrecv")->stride, want[i].cp);
        assert_int_equal(find_op(ops, n, "dp", "allreduce")->stride, want[i].dp);
        assert_int_equal(find_op(ops, n, "ep", "alltoall")->stride, want[i].ep);
        assert_int_equal(find_op(ops, n, "pp", "sendrecv")->stride, want[i].pp);
        assert_int_equal(find_op(ops, n, "edp", "allreduce")->stride, want[i].edp);
    }
}

/* Through a job, as `clusterdse verify` does it: GPT-3 1.3B on A100 DGX (8 GPUs per node), 128
 * GPUs, t = 4, p = 2, so d = 16, placement dp-tp-cp-pp: the TP group is d = 16 ranks apart
 * (across nodes), DP is contiguous, PP d t = 64 apart. On 8 ranks the TP group of 4 is run
 * packed to stride 8 / 4 = 2 and marked scaled. */
static void test_job_placement(void **state)
{
    (void)state;
    cdse_job *job = calloc(1, sizeof *job);
    assert_non_null(job);
    cdse_diag diag;
    const char *text = "models = ( \"gpt3-1.3b\" );\n"
                       "systems = ( \"a100-80g-dgx\" );\n"
                       "space = { gpus = 128; tp = 4; pp = 2; global_batch = 64;\n"
                       "          placement = \"dp-tp-cp-pp\"; };\n";
    if (cdse_job_load_text(text, CDSE_SOURCE_DIR "/tests/jobs/unit.cfg", job, &diag) != 0)
        fail_msg("%s", diag.msg);
    cdse_record rec;
    cdse_comm_plan plan;
    cdse_verify_plan(job, 0, &rec, &plan);
    assert_int_equal(rec.result.status, CDSE_ST_OK);
    assert_int_equal(rec.result.dp, 16);
    cdse_verify_op ops[CDSE_VERIFY_MAX_OPS];
    int n = cdse_verify_ops(&rec, &plan, &job->model[0], &job->system[0], 8, 1 << 20, ops);
    assert_int_equal(n, plan.n);
    const cdse_verify_op *tp = find_op(ops, n, "tp", "allreduce");
    assert_int_equal(tp->group_size, 4);
    assert_int_equal(tp->stride, 16);
    assert_int_equal(tp->run_group_size, 4);
    assert_int_equal(tp->run_stride, 2);
    assert_int_equal(tp->scaled, 1);
    assert_int_equal(find_op(ops, n, "dp", "allreduce")->stride, 1);
    assert_int_equal(find_op(ops, n, "pp", "sendrecv")->stride, 64);
    /* TP bytes: b s h 2 B = 1 x 2048 x 2048 x 2 (GPT-3 1.3B: h = 2048, s = 2048). */
    assert_true(tp->bytes == 1.0 * 2048 * 2048 * 2);
    cdse_job_free(job);
    free(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_placement),
        cmocka_unit_test(test_named_strides),
        cmocka_unit_test(test_job_placement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
