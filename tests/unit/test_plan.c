/* Probe plans: parsed values and defaults, and bad plans as errors with file:line, the key and
 * what is allowed (issue 4: unknown collective, size 0, a group larger than the world). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "clusterdse/config/probe_plan.h"

static int load(const char *text, int world, cdse_probe_plan *plan, cdse_diag *diag)
{
    diag->msg[0] = '\0';
    return cdse_plan_load_text(text, "plan.cfg", world, plan, diag);
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle) == NULL)
        fail_msg("'%s' does not contain '%s'", haystack, needle);
}

static void test_good_plan(void **state)
{
    (void)state;
    const char *text = "name = \"t\";\n"
                       "collectives = [ \"allreduce\", \"sendrecv\" ];\n"
                       "dtypes = [ \"double\", \"uint8\" ];\n"
                       "sizes = { from = 64; to = 1024; };\n"
                       "shapes = ( { kind = \"world\"; }, { kind = \"strided\"; group = 2; },\n"
                       "           { kind = \"contiguous\"; group = 4; } );\n"
                       "time_budget_ms = 10;\n"
                       "check = true;\n";
    cdse_probe_plan plan;
    cdse_diag diag;
    assert_int_equal(load(text, 8, &plan, &diag), 0);
    assert_string_equal(plan.name, "t");
    assert_true(plan.coll[CDSE_COLL_ALLREDUCE]);
    assert_true(plan.coll[CDSE_COLL_SENDRECV]);
    assert_false(plan.coll[CDSE_COLL_ALLGATHER]);
    assert_false(plan.dtype[CDSE_PDT_FLOAT]);
    assert_true(plan.dtype[CDSE_PDT_DOUBLE]);
    assert_true(plan.dtype[CDSE_PDT_UINT8]);
    /* Powers of two from 64 to 1024: 64, 128, 256, 512, 1024. */
    assert_int_equal(plan.n_sizes, 5);
    assert_int_equal(plan.sizes[0], 64);
    assert_int_equal(plan.sizes[4], 1024);
    assert_int_equal(plan.n_shapes, 3);
    /* Strided without a stride: DP-like, the group spans the world: 8 / 2 = 4. */
    assert_int_equal(plan.shape[1].kind, CDSE_SHAPE_STRIDED);
    assert_int_equal(plan.shape[1].stride, 4);
    assert_int_equal(plan.shape[1].line, 5);
    assert_int_equal(plan.shape[2].group, 4);
    assert_int_equal(plan.shape[2].stride, 1);
    /* An integer where a number is expected is accepted; defaults for the rest. */
    assert_float_equal(plan.time_budget_ms, 10.0, 0);
    assert_true(plan.check);
    assert_int_equal(plan.warmup, 5);
    assert_int_equal(plan.iterations_min, 10);
    assert_int_equal(plan.iterations_max, 1000);
    assert_true(plan.reduce_local);
}

static void test_size_list_sorted(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag;
    assert_int_equal(
        load("collectives = [\"alltoall\"];\nsizes = [ 4096, 8, 1048576 ];\n", 2, &plan, &diag), 0);
    assert_int_equal(plan.n_sizes, 3);
    assert_int_equal(plan.sizes[0], 8);
    assert_int_equal(plan.sizes[1], 4096);
    assert_int_equal(plan.sizes[2], 1048576);
    /* Default shape: the world. */
    assert_int_equal(plan.n_shapes, 1);
    assert_int_equal(plan.shape[0].kind, CDSE_SHAPE_WORLD);
}

static void test_unknown_collective(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag;
    assert_int_equal(
        load("sizes = [ 8 ];\n\ncollectives = [ \"allreduce\", \"allsum\" ];\n", 2, &plan, &diag),
        CDSE_EINVAL);
    assert_string_equal(diag.msg, "plan.cfg:3: key 'collectives': unknown value \"allsum\"; "
                                  "allowed: a non-empty list of: allreduce, allgather, "
                                  "reduce_scatter, alltoall, sendrecv");
}

static void test_size_zero(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag;
    assert_int_equal(load("collectives = [\"allreduce\"];\nsizes = [ 8,\n 0 ];\n", 2, &plan, &diag),
                     CDSE_EINVAL);
    assert_string_equal(diag.msg, "plan.cfg:3: key 'sizes': 0 is out of range; allowed: a number "
                                  ">= 1 and <= 1073741824");
    assert_int_equal(
        load("collectives = [\"allreduce\"];\nsizes = { from = 0; to = 8; };\n", 2, &plan, &diag),
        CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:2: key 'sizes.from': 0 is out of range");
    /* Not a whole number of bytes. */
    assert_int_equal(load("collectives = [\"allreduce\"];\nsizes = [ 8.5 ];\n", 2, &plan, &diag),
                     CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:2: key 'sizes': 8.5 is not a whole number of bytes; "
                              "allowed: a list of 1 to 64 whole byte counts");
}

static void test_group_larger_than_world(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag;
    const char *text = "collectives = [\"allgather\"];\nsizes = [ 8 ];\n"
                       "shapes = ( { kind = \"world\"; },\n"
                       "  { kind = \"contiguous\"; group = 8; } );\n";
    assert_int_equal(load(text, 4, &plan, &diag), CDSE_EINVAL);
    assert_string_equal(diag.msg, "plan.cfg:4: key 'shapes[1].group': group = 8 is larger than "
                                  "the world (4 ranks); allowed: 2 to 4 (the number of ranks)");
    /* The same plan is fine on 8 ranks. */
    assert_int_equal(load(text, 8, &plan, &diag), 0);
    /* group x stride beyond the world: 2 x 3 = 6 > 4. */
    assert_int_equal(load("collectives = [\"allgather\"];\nsizes = [ 8 ];\n"
                          "shapes = ( { kind = \"strided\"; group = 2; stride = 3; } );\n",
                          4, &plan, &diag),
                     CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:3:");
    assert_contains(diag.msg, "group 2 x stride 3");
}

static void test_other_errors(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag;
    /* Unknown key, with the list of keys. */
    assert_int_equal(
        load("collectives = [\"allreduce\"];\nsizes = [8];\nwarmpu = 3;\n", 2, &plan, &diag),
        CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:3: key 'warmpu': unknown key; allowed: name, collectives");
    /* Missing required key. */
    assert_int_equal(load("collectives = [\"allreduce\"];\n", 2, &plan, &diag), CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:1: key 'sizes': missing (required); allowed: a list");
    /* Unknown shape kind with the allowed kinds. */
    assert_int_equal(load("collectives = [\"allreduce\"];\nsizes = [8];\n"
                          "shapes = ( { kind = \"ring\"; } );\n",
                          2, &plan, &diag),
                     CDSE_EINVAL);
    assert_string_equal(diag.msg, "plan.cfg:3: key 'shapes[0].kind': unknown value \"ring\"; "
                                  "allowed: one of \"world\", \"node\", \"per_node\", "
                                  "\"contiguous\", \"strided\"");
    /* contiguous without a group. */
    assert_int_equal(load("collectives = [\"allreduce\"];\nsizes = [8];\n"
                          "shapes = ( { kind = \"contiguous\"; } );\n",
                          2, &plan, &diag),
                     CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:3: key 'shapes[0].group': missing (shape \"contiguous\" "
                              "needs it); allowed: 2 to 2 (the number of ranks)");
    /* Out of range integer. */
    assert_int_equal(
        load("collectives = [\"allreduce\"];\nsizes = [8];\nwarmup = -1;\n", 2, &plan, &diag),
        CDSE_EINVAL);
    assert_contains(diag.msg,
                    "plan.cfg:3: key 'warmup': -1 is out of range; allowed: an integer from 0 to "
                    "10000");
    /* Syntax error. */
    assert_int_equal(load("collectives = [\"allreduce\"];\nsizes = [8;\n", 2, &plan, &diag),
                     CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:2: syntax error");
    /* min > max iterations. */
    assert_int_equal(load("collectives = [\"allreduce\"];\nsizes = [8];\niterations_min = 50;\n"
                          "iterations_max = 10;\n",
                          2, &plan, &diag),
                     CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:3: key 'iterations_min': 50 is larger than iterations_max "
                              "(10); allowed: iterations_min <= iterations_max");
}

/* The example plans of calibration/plans parse on 2, 4, 8 and 16 ranks (issue 27: full.cfg's
 * groups are "node", resolved by the runner). */
static void test_example_plans(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag = {""};
    assert_int_equal(
        cdse_plan_load_file(CDSE_SOURCE_DIR "/calibration/plans/quick.cfg", 2, &plan, &diag), 0);
    assert_true(plan.check);
    assert_int_equal(
        cdse_plan_load_file(CDSE_SOURCE_DIR "/calibration/plans/node.cfg", 2, &plan, &diag), 0);
    assert_int_equal(
        cdse_plan_load_file(CDSE_SOURCE_DIR "/calibration/plans/full.cfg", 16, &plan, &diag), 0);
    /* 8 B .. 256 MiB in powers of two: 2^3 .. 2^28 = 26 sizes. */
    assert_int_equal(plan.n_sizes, 26);
    for (int world = 2; world <= 16; world *= 2) {
        assert_int_equal(
            cdse_plan_load_file(CDSE_SOURCE_DIR "/calibration/plans/full.cfg", world, &plan, &diag),
            0);
        assert_int_equal(plan.shape[3].group, CDSE_PLAN_NODE);
        assert_int_equal(plan.shape[4].stride, CDSE_PLAN_NODE);
    }
}

/* group / stride take "node" and "world" (kept symbolic for the runner); other strings, 0 and
 * numbers too large for the world are refused naming the key. */
static void test_node_world_counts(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag = {""};
    assert_int_equal(load("collectives = [\"allreduce\"]; sizes = [8];\n"
                          "shapes = ( { kind = \"strided\"; group = \"world\"; },\n"
                          "           { kind = \"strided\"; group = \"node\"; stride = 3; } );\n",
                          4, &plan, &diag),
                     0);
    assert_int_equal(plan.shape[0].group, CDSE_PLAN_WORLD);
    assert_int_equal(plan.shape[0].stride, 0); /* the runner: world / group */
    assert_int_equal(plan.shape[1].group, CDSE_PLAN_NODE);
    assert_int_equal(plan.shape[1].stride, 3);
    assert_int_equal(load("collectives = [\"allreduce\"]; sizes = [8];\n"
                          "shapes = ( { kind = \"contiguous\"; group = \"nodes\"; } );\n",
                          4, &plan, &diag),
                     CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "plan.cfg:2"));
    assert_non_null(strstr(diag.msg, "'nodes' is not a count"));
    assert_non_null(strstr(diag.msg, "\"node\" or \"world\""));
    assert_int_equal(load("collectives = [\"allreduce\"]; sizes = [8];\n"
                          "shapes = ( { kind = \"strided\"; group = 2; stride = 0; } );\n",
                          4, &plan, &diag),
                     CDSE_EINVAL);
    assert_int_equal(load("collectives = [\"allreduce\"]; sizes = [8];\n"
                          "shapes = ( { kind = \"strided\"; group = 2; stride = 3; } );\n",
                          4, &plan, &diag),
                     CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "larger than the world"));
}

/* Issue 15 B5: a size above 2^31 without the L suffix wraps in libconfig 1.5 (4294967304 would
 * be measured as 8 bytes); the plan is refused naming the key. Reproducer copied from the fuzz
 * findings: tests/jobs/fuzz/plan_wrap.cfg. */
static void test_wrapped_integer(void **state)
{
    (void)state;
    cdse_probe_plan plan;
    cdse_diag diag = {""};
    assert_int_equal(
        cdse_plan_load_file(CDSE_SOURCE_DIR "/tests/jobs/fuzz/plan_wrap.cfg", 2, &plan, &diag),
        CDSE_EINVAL);
    assert_contains(diag.msg, "tests/jobs/fuzz/plan_wrap.cfg:2: key 'sizes': integer 4294967304 "
                              "does not fit in 32 bits");
    /* warmup = 2^32 + 1 would wrap to 1. */
    assert_int_equal(load("collectives = [\"allreduce\"];\nsizes = [8];\nwarmup = 4294967297;\n", 2,
                          &plan, &diag),
                     CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:3: key 'warmup': integer 4294967297 does not fit");
    /* With the L suffix the size is read as 64 bits and then bounded (1 GiB). */
    assert_int_equal(
        load("collectives = [\"allreduce\"];\nsizes = [4294967304L];\n", 2, &plan, &diag),
        CDSE_EINVAL);
    assert_contains(diag.msg, "plan.cfg:2: key 'sizes': 4294967304 is out of range");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_plan),
        cmocka_unit_test(test_size_list_sorted),
        cmocka_unit_test(test_unknown_collective),
        cmocka_unit_test(test_size_zero),
        cmocka_unit_test(test_group_larger_than_world),
        cmocka_unit_test(test_other_errors),
        cmocka_unit_test(test_example_plans),
        cmocka_unit_test(test_node_world_counts),
        cmocka_unit_test(test_wrapped_integer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
