/* The axis table (include/clusterdse/model/axes.h) and the name tables of the enumerations:
 * every reader sees the same rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/model/bound.h"
#include "clusterdse/model/space.h"
#include "clusterdse/sweep/report.h"

/* Every strategy axis has its column, named as its key, at the position its row gives, and the
 * column reads the strategy field that the space's decode fills. */
static void test_axis_columns(void **state)
{
    (void)state;
    int strategy_axes = 0;
    for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
        const cdse_axis_info *info = cdse_axis_info_of(a);
        assert_non_null(info->key);
        if (info->kind == CDSE_AXIS_KIND_OTHER) {
            assert_int_equal(info->column, -1);
            continue;
        }
        strategy_axes++;
        assert_in_range(info->column, 0, cdse_column_count - 1);
        assert_string_equal(cdse_columns[info->column].name, info->key);
        assert_true(cdse_column_find(info->key) == &cdse_columns[info->column]);
    }
    /* 22 strategy axes at this commit: gpus, tp, pp, cp, ep, etp, vpp, microbatch,
     * global_batch, recompute, sequence_parallel, zero, precision, flash_attention, offload,
     * offload_layers, recompute_layers, recompute_modules, moe_dispatcher, moe_overlap,
     * tp_comm_overlap, placement (docs/job-file.md, `space`), plus those added since. */
    assert_int_equal(strategy_axes, CDSE_STRATEGY_AXES);
    assert_true(strategy_axes >= 22);
    assert_int_equal(CDSE_AXIS_COUNT, 11 + CDSE_STRATEGY_AXES);
}

/* The positions of the axes that stores already hold do not move (their indices are in every
 * store made before): the order of src/model/space.h at d005eb8. */
static void test_axis_positions(void **state)
{
    (void)state;
    assert_int_equal(CDSE_AXIS_GPUS, 10);
    assert_int_equal(CDSE_AXIS_TP, 11);
    assert_int_equal(CDSE_AXIS_GLOBAL_BATCH, 17);
    assert_int_equal(CDSE_AXIS_RECOMPUTE, 18);
    assert_int_equal(CDSE_AXIS_PLACEMENT, 25);
    assert_int_equal(CDSE_AXIS_ETP, 26);
    assert_int_equal(CDSE_AXIS_MOE_OVERLAP, 29);
    assert_int_equal(CDSE_AXIS_STACK, 30);
    assert_int_equal(CDSE_AXIS_OFFLOAD_LAYERS, 31);
    assert_int_equal(CDSE_AXIS_RECOMPUTE_LAYERS, 32);
}

/* Every column has a name, once (a gap in the designated positions would leave one empty). */
static void test_columns_complete(void **state)
{
    (void)state;
    for (int c = 0; c < cdse_column_count; c++) {
        assert_non_null(cdse_columns[c].name);
        for (int d = 0; d < c; d++)
            assert_string_not_equal(cdse_columns[c].name, cdse_columns[d].name);
        if (cdse_columns[c].kind == CDSE_COL_ENUM)
            assert_non_null(cdse_columns[c].names);
    }
}

/* Each name table ends in NULL after its n names, and the value texts are the tables'. */
static void test_name_tables(void **state)
{
    (void)state;
    const cdse_names *tables[] = {&cdse_recompute_enum,   &cdse_dtype_enum,
                                  &cdse_offload_enum,     &cdse_placement_enum,
                                  &cdse_status_enum,      &cdse_moe_dispatcher_enum,
                                  &cdse_moe_overlap_enum, &cdse_recompute_modules_enum,
                                  &cdse_pool_split_enum};
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        for (int i = 0; i < tables[t]->n; i++)
            assert_non_null(tables[t]->name[i]);
        assert_null(tables[t]->name[tables[t]->n]);
    }
    assert_int_equal(cdse_offload_enum.n, 8);             /* three bits */
    assert_int_equal(cdse_recompute_modules_enum.n, 128); /* seven bits */
    /* Mask 5 = bits 0 and 2: core_attn and layernorm (Megatron-Core's names, bit order). */
    assert_string_equal(cdse_recompute_modules_enum.name[5], "core_attn+layernorm");
    assert_string_equal(cdse_offload_enum.name[CDSE_OFFLOAD_WEIGHTS | CDSE_OFFLOAD_OPTIMIZER],
                        "weights+optimizer");
    char buf[32];
    assert_string_equal(cdse_axis_value_text(CDSE_AXIS_PRECISION, CDSE_FP8, buf, sizeof buf),
                        "fp8");
    assert_string_equal(
        cdse_axis_value_text(CDSE_AXIS_RECOMPUTE, CDSE_RECOMPUTE_FULL, buf, sizeof buf), "full");
    assert_string_equal(cdse_axis_value_text(CDSE_AXIS_SEQUENCE_PARALLEL, 1, buf, sizeof buf),
                        "true");
    assert_string_equal(cdse_axis_value_text(CDSE_AXIS_TP, 8, buf, sizeof buf), "8");
    assert_null(cdse_axis_value_text(CDSE_AXIS_MODEL, 0, buf, sizeof buf));
    assert_int_equal(cdse_names_find(&cdse_placement_enum, "tp-cp-dp-pp"), 0);
    assert_int_equal(cdse_names_find(&cdse_recompute_enum, "sideways"), -1);
}

/* The pruning classes of the rows (docs/sweep.md, Pruning). */
static void test_prune_classes(void **state)
{
    (void)state;
    assert_true(
        cdse_bound_axis_kept(CDSE_AXIS_TP, CDSE_FLOOR_ANY_RECOMPUTE | CDSE_FLOOR_ANY_STATE));
    assert_false(cdse_bound_axis_kept(CDSE_AXIS_MOE_OVERLAP, 0));
    assert_true(cdse_bound_axis_kept(CDSE_AXIS_RECOMPUTE, CDSE_FLOOR_ANY_STATE));
    assert_false(cdse_bound_axis_kept(CDSE_AXIS_RECOMPUTE_LAYERS, CDSE_FLOOR_ANY_RECOMPUTE));
    assert_false(cdse_bound_axis_kept(CDSE_AXIS_OFFLOAD_LAYERS, CDSE_FLOOR_ANY_STATE));
    assert_true(cdse_bound_axis_kept(CDSE_AXIS_ZERO, CDSE_FLOOR_ANY_RECOMPUTE));
    assert_true(cdse_bound_axis_kept(CDSE_AXIS_STACK, CDSE_FLOOR_ANY_STATE));
}

/* The decode fills each row's field from its axis's value. */
static void test_decode_fields(void **state)
{
    (void)state;
    cdse_space space;
    memset(&space, 0, sizeof space);
    for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
        space.n[a] = 1;
        space.value[a][0] = 1;
    }
    space.value[CDSE_AXIS_TP][0] = 8;
    space.value[CDSE_AXIS_RECOMPUTE_LAYERS][0] = 3;
    space.value[CDSE_AXIS_PRECISION][0] = CDSE_FP8;
    space.value[CDSE_AXIS_SEQUENCE_PARALLEL][0] = 0;
    int digit[CDSE_AXIS_COUNT] = {0};
    cdse_strategy s;
    cdse_space_strategy(&space, digit, &s);
    assert_int_equal(s.tp, 8);
    assert_int_equal(s.recompute_layers, 3);
    assert_int_equal(s.precision, CDSE_FP8);
    assert_false(s.sequence_parallel);
    assert_true(s.flash_attention);
    assert_int_equal(s.moe_overlap, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_axis_columns),     cmocka_unit_test(test_axis_positions),
        cmocka_unit_test(test_columns_complete), cmocka_unit_test(test_name_tables),
        cmocka_unit_test(test_prune_classes),    cmocka_unit_test(test_decode_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
