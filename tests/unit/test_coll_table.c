/* One descriptor per collective (src/model/collective.c cdse_coll_table) and its users: the cost
 * model, the fit's terms, the bus-bandwidth factor, probe plans and job files.
 *
 * Hand values: nccl-tests doc/PERFORMANCE.md "Bus bandwidth" (allreduce 2(n-1)/n; allgather,
 * reduce_scatter, alltoall (n-1)/n; send/recv 1); ring algorithms (Thakur et al. 2005): a ring
 * all-reduce takes 2(n-1) latency-bound steps, reduce-scatter and all-gather n-1, a pairwise
 * all-to-all n-1, a send/recv one. On one network level every collective's cost formula must be
 * steps x latency + volume x bytes / bandwidth: the model `fit` estimates (fit.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/calibrate/fit.h"
#include "clusterdse/config/job.h"
#include "clusterdse/config/probe_plan.h"
#include "clusterdse/model/collective.h"

static void test_names(void **state)
{
    (void)state;
    const char *want[CDSE_COLL_COUNT] = {"allreduce", "allgather", "reduce_scatter", "alltoall",
                                         "sendrecv"};
    for (int c = 0; c < CDSE_COLL_COUNT; c++) {
        assert_string_equal(cdse_coll_name(c), want[c]);
        assert_string_equal(cdse_coll_desc_of(c)->name, want[c]);
        assert_int_equal(cdse_coll_parse(want[c]), c);
        assert_string_equal(cdse_probe_coll_name(c), want[c]);
        assert_int_equal(cdse_probe_coll_parse(want[c]), c);
    }
    assert_int_equal(cdse_coll_parse("allReduce"), -1);
    assert_int_equal(cdse_coll_parse(""), -1);
    assert_null(cdse_coll_desc_of(CDSE_COLL_COUNT));
    assert_string_equal(cdse_coll_name(-1), "?");
}

/* n = 4: allreduce 6 steps, 2 x 3/4 = 1.5; allgather, reduce_scatter, alltoall 3 steps, 0.75;
 * sendrecv 1 step, 1. */
static void test_steps_volume_busbw(void **state)
{
    (void)state;
    const double steps[CDSE_COLL_COUNT] = {6, 3, 3, 3, 1};
    const double volume[CDSE_COLL_COUNT] = {1.5, 0.75, 0.75, 0.75, 1.0};
    for (int c = 0; c < CDSE_COLL_COUNT; c++) {
        assert_float_equal(cdse_coll_steps(c, 4), steps[c], 1e-15);
        assert_float_equal(cdse_coll_volume(c, 4), volume[c], 1e-15);
        assert_float_equal(cdse_fit_steps(c, 4), steps[c], 1e-15);
        assert_float_equal(cdse_fit_volume(c, 4), volume[c], 1e-15);
        assert_float_equal(cdse_busbw_factor(c, 4), volume[c], 1e-15);
    }
}

/* One level of 8 GPUs, 100 GB/s at 50 % and 3 us: each row's cost formula on a group of 8
 * equals steps x 3 us + volume x B / 50 GB/s, the fit's model. */
static void test_cost_is_fit_model_on_one_level(void **state)
{
    (void)state;
    cdse_system s;
    memset(&s, 0, sizeof s);
    s.n_levels = 1;
    s.level[0].size = 0;
    s.level[0].bandwidth_gbs = 100.0;
    s.level[0].efficiency = 0.5;
    s.level[0].latency_us = 3.0;
    cdse_span span;
    cdse_group_span(&s, 8, 1, &span);
    double bytes = 1 << 20;
    for (int c = 0; c < CDSE_COLL_COUNT; c++) {
        double want = (cdse_coll_steps(c, 8) * 3e-6 + cdse_coll_volume(c, 8) * bytes / 50e9);
        double got = cdse_coll_time(&s, c, &span, bytes);
        if (!(fabs(got - want) <= 1e-12 * want))
            fail_msg("%s: %.17g s, fit model %.17g s", cdse_coll_name(c), got, want);
        assert_true(got == cdse_coll_table[c].time(&s, &span, bytes));
    }
    /* By hand for two rows: allreduce 14 x 3 us + 1.75 x 2^20 / 50e9; alltoall 7 x 3 us + 0.875
     * x 2^20 / 50e9. */
    assert_float_equal(cdse_coll_time(&s, CDSE_COLL_ALLREDUCE, &span, bytes),
                       42e-6 + 1.75 * 1048576.0 / 50e9, 1e-15);
    assert_float_equal(cdse_coll_time(&s, CDSE_COLL_ALLTOALL, &span, bytes),
                       21e-6 + 0.875 * 1048576.0 / 50e9, 1e-15);
}

/* Every row is a collective name a probe plan accepts and a fitted key of a network level in a
 * job file (values c + 1 us and 10 (c + 1) GB/s land in the row's slot). */
static void test_every_row_in_plans_and_jobs(void **state)
{
    (void)state;
    char plan_text[512] = "collectives = [";
    for (int c = 0; c < CDSE_COLL_COUNT; c++)
        snprintf(plan_text + strlen(plan_text), sizeof plan_text - strlen(plan_text), "%s\"%s\"",
                 c ? ", " : " ", cdse_coll_name(c));
    strcat(plan_text, " ];\nsizes = [ 1024 ];\n");
    cdse_probe_plan plan;
    cdse_diag diag;
    if (cdse_plan_load_text(plan_text, "plan.cfg", 2, &plan, &diag) != 0)
        fail_msg("%s", diag.msg);
    for (int c = 0; c < CDSE_COLL_COUNT; c++)
        assert_true(plan.coll[c]);

    char job_text[2048];
    int len = snprintf(job_text, sizeof job_text,
                       "models = ( \"gpt3-1.3b\" );\n"
                       "systems = ( { base = \"a100-80g-dgx\"; name = \"x\";\n"
                       "  network = ( { name = \"a\"; size = 0; bandwidth = 1.0; latency = 1.0;");
    for (int c = 0; c < CDSE_COLL_COUNT; c++)
        len += snprintf(job_text + len, sizeof job_text - (size_t)len,
                        " %s = { latency = %d.0; bandwidth = %d.0; };", cdse_coll_name(c), c + 1,
                        10 * (c + 1));
    snprintf(job_text + len, sizeof job_text - (size_t)len,
             " } ); } );\nspace = { gpus = 8; global_batch = 64; };\n");
    cdse_job *job = calloc(1, sizeof *job);
    assert_non_null(job);
    if (cdse_job_load_text(job_text, CDSE_SOURCE_DIR "/tests/jobs/unit.cfg", job, &diag) != 0)
        fail_msg("%s", diag.msg);
    for (int c = 0; c < CDSE_COLL_COUNT; c++) {
        assert_float_equal(job->system[0].level[0].coll_latency_us[c], c + 1.0, 0.0);
        assert_float_equal(job->system[0].level[0].coll_bandwidth_gbs[c], 10.0 * (c + 1), 0.0);
    }
    cdse_job_free(job);
    free(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_steps_volume_busbw),
        cmocka_unit_test(test_cost_is_fit_model_on_one_level),
        cmocka_unit_test(test_every_row_in_plans_and_jobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
