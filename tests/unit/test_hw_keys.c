/* The hardware-field table (CDSE_HW_KEYS, model/hardware.h): every row reads and writes the
 * cdse_system field its key names, counts only where the field exists, and has its column at its
 * position. The fields are written out here by hand, from the profile keys of docs/job-file.md. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/model/fields.h"
#include "clusterdse/sweep/report.h"

/* A system with two network levels and a per-node memory tier: every row's field exists. */
static cdse_system full_system(void)
{
    cdse_system s;
    memset(&s, 0, sizeof s);
    s.n_levels = 2;
    s.gpus_per_node = 8;
    s.tier.attach = CDSE_TIER_PER_NODE;
    s.tier.shared_by = 8;
    return s;
}

/* The field each key is, by hand: cdse_hw_set writes it and cdse_hw_get reads it back. */
static void test_fields(void **state)
{
    (void)state;
    cdse_system s = full_system();
    for (int k = 0; k < CDSE_HW_COUNT; k++)
        cdse_hw_set(&s, k, 100.0 + k);
    assert_true(s.peak_tflops[CDSE_BF16] == 100.0 + CDSE_HW_PEAK_BF16);
    assert_true(s.peak_tflops[CDSE_FP8] == 100.0 + CDSE_HW_PEAK_FP8);
    assert_true(s.hbm_gib == 100.0 + CDSE_HW_HBM_GIB);
    assert_true(s.hbm_bandwidth_gbs == 100.0 + CDSE_HW_HBM_BANDWIDTH);
    assert_int_equal(s.gpus_per_node, 100 + CDSE_HW_GPUS_PER_NODE);
    assert_true(s.level[0].bandwidth_gbs == 100.0 + CDSE_HW_NET0_BANDWIDTH);
    assert_true(s.level[0].latency_us == 100.0 + CDSE_HW_NET0_LATENCY);
    assert_int_equal(s.level[0].size, 100 + CDSE_HW_NET0_SIZE);
    assert_true(s.level[1].bandwidth_gbs == 100.0 + CDSE_HW_NET1_BANDWIDTH);
    assert_true(s.level[1].latency_us == 100.0 + CDSE_HW_NET1_LATENCY);
    assert_int_equal(s.level[1].size, 100 + CDSE_HW_NET1_SIZE);
    assert_true(s.tier.capacity_gib == 100.0 + CDSE_HW_TIER_CAPACITY);
    assert_true(s.tier.bandwidth_gbs == 100.0 + CDSE_HW_TIER_BANDWIDTH);
    assert_true(s.cost.gpu_price == 100.0 + CDSE_HW_GPU_PRICE);
    assert_true(s.cost.rental_price == 100.0 + CDSE_HW_RENTAL_PRICE);
    assert_true(s.cost.gpu_power_w == 100.0 + CDSE_HW_GPU_POWER);
    assert_true(s.storage.write_gbs == 100.0 + CDSE_HW_STORAGE_WRITE);
    assert_true(s.reliability.gpu_failures == 100.0 + CDSE_HW_GPU_FAILURES);
    assert_true(s.reliability.node_failures == 100.0 + CDSE_HW_NODE_FAILURES);
    assert_true(s.storage.read_gbs == 100.0 + CDSE_HW_STORAGE_READ);
    assert_true(s.reliability.replace_s == 100.0 + CDSE_HW_REPLACE_TIME);
    assert_true(s.tier.link_bandwidth_gbs == 100.0 + CDSE_HW_TIER_LINK_BANDWIDTH);
    for (int k = 0; k < CDSE_HW_COUNT; k++)
        assert_true(cdse_hw_get(&s, k) == 100.0 + k);
    /* The tier's sharing followed gpus_per_node (8 = 8 before). */
    assert_int_equal(s.tier.shared_by, 100 + CDSE_HW_GPUS_PER_NODE);
}

/* A level the system does not have reads 0 and is not written; a missing tier reads 0. Integer
 * fields take the value rounded. */
static void test_absent(void **state)
{
    (void)state;
    cdse_system s = full_system();
    s.n_levels = 1;
    s.level[1].bandwidth_gbs = 5.0;
    s.tier.attach = CDSE_TIER_NONE;
    s.tier.capacity_gib = 64.0;
    assert_true(cdse_hw_get(&s, CDSE_HW_NET1_BANDWIDTH) == 0.0);
    cdse_hw_set(&s, CDSE_HW_NET1_BANDWIDTH, 7.0);
    assert_true(s.level[1].bandwidth_gbs == 5.0);
    assert_true(cdse_hw_get(&s, CDSE_HW_TIER_CAPACITY) == 0.0);
    cdse_hw_set(&s, CDSE_HW_NET0_SIZE, 15.6);
    assert_int_equal(s.level[0].size, 16);
    assert_true(cdse_hw_get(&s, -1) == 0.0 && cdse_hw_get(&s, CDSE_HW_COUNT) == 0.0);
}

/* Each row's column sits at the row's position, named as cdse_hw_column says, reading the
 * record's hw slot of the key; bounds are ordered. */
static void test_columns(void **state)
{
    (void)state;
    cdse_record record;
    memset(&record, 0, sizeof record);
    for (int k = 0; k < CDSE_HW_COUNT; k++) {
        const cdse_hw_info *info = &cdse_hw_keys[k];
        assert_true(info->position >= 0 && info->position < cdse_column_count);
        const cdse_column *c = &cdse_columns[info->position];
        assert_string_equal(c->name, cdse_hw_column(k));
        assert_ptr_equal(cdse_column_find(info->column), c);
        record.hw[k] = 1.5 + k;
        assert_true(cdse_column_value(c, &record) == 1.5 + k);
        assert_true(info->min < info->max);
        assert_true((info->level >= 0) ==
                    (info->group != NULL && strcmp(info->group, "network") == 0));
    }
}

/* The /systems field that holds the byte at `offset` of `table`'s struct: a scalar's name, found
 * through the records (a network level's fields for any level). NULL when none. */
static const char *field_at(const cdse_field_table *table, size_t offset, size_t *at)
{
    for (int i = 0; i < table->n; i++) {
        const cdse_field *f = &table->fields[i];
        if (offset < f->offset || offset >= f->offset + f->size * (size_t)f->count)
            continue;
        size_t inner = (offset - f->offset) % f->size;
        if (f->kind == CDSE_FIELD_RECORD)
            return field_at(f->record, inner, at);
        *at = offset - f->offset;
        return f->name;
    }
    return NULL;
}

/* Every row is a /systems field (named as its profile key, or the array of its data type for
 * the peaks) and a key of the system profile's reference (--help-keys): the profile's tables
 * and the /systems fields list it, by hand or made from the row (src/config/system_profile.c,
 * src/model/fields.c). */
static void test_profile_keys(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    cdse_job_print_keys(out);
    fclose(out);
    for (int k = 0; k < CDSE_HW_COUNT; k++) {
        const cdse_hw_info *info = &cdse_hw_keys[k];
        size_t at = 0;
        const char *field = field_at(cdse_system_field_table(), info->offset, &at);
        assert_non_null(field);
        bool peak = info->group != NULL && strcmp(info->group, "peak_tflops") == 0;
        assert_string_equal(field, peak ? "peak_tflops" : info->name);
        assert_int_equal(at % (info->integer ? sizeof(int) : sizeof(double)), 0);
        char key[128];
        snprintf(key, sizeof key, "systems[]%s%s%s.%s ", info->group ? "." : "",
                 info->group ? info->group : "", info->level >= 0 ? "[]" : "", info->name);
        assert_non_null(strstr(text, key));
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_columns),
        cmocka_unit_test(test_profile_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
