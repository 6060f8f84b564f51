/* The front of time to train against cost to train (/pareto_cost, docs/sweep.md) on hand-made
 * records whose front is worked out in the comments, and the conditions under which it is the
 * front over every configuration (cdse_pareto_cost_note). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/sweep/topk.h"

static cdse_record point(uint64_t index, int model, double days, double cost, int status)
{
    cdse_record r;
    memset(&r, 0, sizeof r);
    r.index = index;
    r.model = model;
    r.result.status = status;
    r.time_to_train_days = days;
    r.cost_to_train = cost;
    return r;
}

static void check_indices(const cdse_record *got, size_t n, const uint64_t *want, size_t n_want)
{
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i].index, want[i]);
}

/* (index: model, days, cost, status), in this order of arrival:
 *   20: 1, 5.0, 1000, ok     21: 1, 6.0, 900, ok      22: 1, 7.0, 950, ok (beaten by 21)
 *   19: 0, 2.0, 100, ok      (equal to 10 on both: 10, the smaller index, stands for them)
 *   11: 0, 1.0, 300, ok      13: 0, 1.0, 300, ok      18: 0, 1.0, 250, ok (as fast, cheaper)
 *   10: 0, 2.0, 100, ok      12: 0, 3.0, 100, ok (as cheap as 10, slower)
 *   14: 0, 4.0,  50, ok      17: 0, 2.5, 120, ok (beaten by 10)
 *   15: 0, 0.5,  20, oom (never counts)              16: 0, 1.5, 0, ok (no price: left out)
 * Model 0 by (days, cost, index): 18 (1, 250), 11, 13, 10 (2, 100), 19, 17, 12, 14 (4, 50):
 * kept when cheaper than every point before it: 18, 10, 14; cheapest first: 14, 10, 18.
 * Model 1: 20 (5, 1000), 21 (6, 900), 22 (7, 950): kept 20, 21; cheapest first: 21, 20. */
static void test_front(void **state)
{
    (void)state;
    const cdse_record in[] = {
        point(20, 1, 5.0, 1000.0, CDSE_ST_OK), point(21, 1, 6.0, 900.0, CDSE_ST_OK),
        point(22, 1, 7.0, 950.0, CDSE_ST_OK),  point(19, 0, 2.0, 100.0, CDSE_ST_OK),
        point(11, 0, 1.0, 300.0, CDSE_ST_OK),  point(13, 0, 1.0, 300.0, CDSE_ST_OK),
        point(18, 0, 1.0, 250.0, CDSE_ST_OK),  point(10, 0, 2.0, 100.0, CDSE_ST_OK),
        point(12, 0, 3.0, 100.0, CDSE_ST_OK),  point(14, 0, 4.0, 50.0, CDSE_ST_OK),
        point(17, 0, 2.5, 120.0, CDSE_ST_OK),  point(15, 0, 0.5, 20.0, CDSE_ST_OOM),
        point(16, 0, 1.5, 0.0, CDSE_ST_OK),
    };
    size_t n = sizeof in / sizeof in[0], m = 0;
    cdse_record out[sizeof in / sizeof in[0]];
    assert_int_equal(cdse_pareto_cost(in, n, out, &m), CDSE_OK);
    static const uint64_t want[] = {14, 10, 18, 21, 20};
    check_indices(out, m, want, 5);
    /* The same set in reverse order of arrival gives the same front. */
    cdse_record rev[sizeof in / sizeof in[0]];
    for (size_t i = 0; i < n; i++)
        rev[i] = in[n - 1 - i];
    assert_int_equal(cdse_pareto_cost(rev, n, out, &m), CDSE_OK);
    check_indices(out, m, want, 5);
    assert_int_equal(cdse_pareto_cost(in, 0, out, &m), CDSE_OK);
    assert_int_equal(m, 0);
}

/* Groups by gpus, ranked by days; cost = gpus x days x 1.25 (a price per GPU-day), so within a
 * group the fastest is also the cheapest, as for cost_to_train (report.c).
 *   index: gpus, days, cost = gpus x days x 1.25
 *   0:  8, 4.0,  40      1:  8, 3.0,  30 (best of 8)
 *   2: 16, 2.0,  40      3: 16, 2.5,  50 (2 best of 16)
 *   4: 32, 1.9,  76      5: 64, 2.1, 168
 * Bests: 1 (3, 30), 2 (2, 40), 4 (1.9, 76), 5 (2.1, 168). By days: 4 kept, 2 kept (40 < 76),
 * 5 not (168), 1 kept (30 < 40); cheapest first: 1, 2, 4. Index 0 and 3 never enter. */
static void test_groups(void **state)
{
    (void)state;
    static const int gpus[] = {8, 8, 16, 16, 32, 64};
    static const double days[] = {4.0, 3.0, 2.0, 2.5, 1.9, 2.1};
    cdse_topk_groups *g = cdse_topk_groups_create(CDSE_GROUP_MODEL | CDSE_GROUP_GPUS, 3, true);
    assert_non_null(g);
    for (int i = 0; i < 6; i++) {
        cdse_record r = point((uint64_t)i, 0, days[i], gpus[i] * days[i] * 1.25, CDSE_ST_OK);
        r.strategy.gpus = gpus[i];
        assert_int_equal(cdse_topk_groups_offer(g, &r, days[i]), CDSE_OK);
    }
    cdse_record *out = NULL;
    size_t n = cdse_topk_groups_pareto_cost(g, &out);
    static const uint64_t want[] = {1, 2, 4};
    check_indices(out, n, want, 3);
    assert_true(out[0].cost_to_train == 30.0 && out[2].cost_to_train == 76.0);
    free(out);
    cdse_topk_groups_free(g);
}

/* A job of one priced system, a token budget, metric time_to_train and every axis of one
 * value: the front is exact. */
static cdse_job *priced_job(void)
{
    cdse_job *job = calloc(1, sizeof *job);
    assert_non_null(job);
    for (int a = 0; a < CDSE_AXIS_COUNT; a++)
        job->space.n[a] = 1;
    job->n_systems = 1;
    job->system[0].cost.gpu_price = 30000.0;
    job->system[0].cost.amortization_years = 5.0;
    job->objective.tokens = 3e11;
    job->objective.metric = CDSE_METRIC_TIME_TO_TRAIN;
    strcpy(job->objective.currency, "USD");
    return job;
}

static void expect_note(const cdse_job *job, bool exact, const char *phrase)
{
    char note[CDSE_PARETO_COST_NOTE_MAX];
    assert_int_equal(cdse_pareto_cost_note(job, note, sizeof note), exact);
    assert_non_null(strstr(note, phrase));
}

static void test_note(void **state)
{
    (void)state;
    cdse_job *job = priced_job();
    expect_note(job, true, "not beaten on both time_to_train_days and cost_to_train (USD)");
    job->space.n[CDSE_AXIS_GPUS] = 2; /* several sizes: gpus must be grouped */
    expect_note(job, false, "group_by lacks \"gpus\"");
    job->objective.group_by = CDSE_GROUP_GPUS;
    expect_note(job, true, "not beaten");
    job->n_hw_axes = 1; /* a hardware axis: the design must be grouped */
    expect_note(job, false, "group_by lacks \"design\"");
    job->objective.group_by |= CDSE_GROUP_DESIGN;
    expect_note(job, true, "not beaten");
    job->objective.metric = CDSE_METRIC_TIME_PER_ITERATION;
    expect_note(job, true, "not beaten"); /* one global batch */
    job->space.n[CDSE_AXIS_GLOBAL_BATCH] = 2;
    expect_note(job, false, "unless \"global_batch\" is in objective.group_by");
    job->objective.group_by |= CDSE_GROUP_GLOBAL_BATCH;
    expect_note(job, true, "not beaten");
    job->objective.metric = CDSE_METRIC_MFU;
    job->space.n[CDSE_AXIS_PRECISION] = 2;
    expect_note(job, false, "unless \"precision\" is in objective.group_by");
    job->objective.metric = CDSE_METRIC_ENERGY_TO_TRAIN; /* no gpu_power */
    expect_note(job, false, "needs cost.gpu_power on every system");
    job->objective.metric = CDSE_METRIC_COST_TO_TRAIN;
    expect_note(job, true, "not beaten");
    job->system[0].cost.gpu_price = 0.0;
    expect_note(job, false, "no system has a price");
    job->system[0].cost.gpu_power_w = 700.0; /* power at a priced electricity is a price */
    job->objective.electricity_price = 0.08;
    expect_note(job, true, "not beaten");
    job->objective.tokens = 0.0;
    expect_note(job, false, "no token budget");
    free(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_front),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_note),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
