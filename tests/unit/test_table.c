/* The human table (src/sweep/table.c): which columns it prints, their alignment, '-' for a
 * figure that is not computed, --columns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/sweep/table.h"

/* Two systems, one model: a dense configuration filled by hand. */
static void fill(cdse_job *job, cdse_record *r)
{
    memset(job, 0, sizeof *job);
    memset(r, 0, sizeof *r);
    snprintf(job->model[0].name, sizeof job->model[0].name, "m1");
    snprintf(job->system[0].name, sizeof job->system[0].name, "s1");
    snprintf(job->system[1].name, sizeof job->system[1].name, "s2");
    job->n_models = 1;
    job->n_systems = 2;
    r->strategy = (cdse_strategy){.gpus = 64,
                                  .tp = 8,
                                  .pp = 2,
                                  .cp = 1,
                                  .ep = 1,
                                  .vpp = 1,
                                  .microbatch = 1,
                                  .global_batch = 512,
                                  .zero = 1,
                                  .flash_attention = true};
    r->result.status = CDSE_ST_OK;
    r->result.dp = 4;
    r->result.time_per_iteration_s = 12.5;
    r->result.tokens_per_s = 83886.08;
    r->result.mfu = 0.48;
    r->result.mem_total_gib = 70.125;
    r->hw[CDSE_HW_HBM_GIB] = 80;
}

/* The table of `n` records into a string (static buffer). */
static const char *print(cdse_table *t, const cdse_record *rows, int n)
{
    static char buf[16384];
    for (int i = 0; i < n; i++)
        cdse_table_observe(t, &rows[i]);
    FILE *f = tmpfile();
    assert_non_null(f);
    cdse_table_print_header(t, f);
    for (int i = 0; i < n; i++)
        cdse_table_print_row(t, f, &rows[i]);
    rewind(f);
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = '\0';
    fclose(f);
    return buf;
}

/* The line that begins with `prefix` (up to its end, without the newline), or "". */
static const char *line_of(const char *text, const char *prefix)
{
    static char line[4096];
    line[0] = '\0';
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            size_t n = strcspn(p, "\n");
            snprintf(line, sizeof line, "%.*s", (int)n, p);
            break;
        }
    return line;
}

/* The n-th line (0 = first). */
static const char *nth_line(const char *text, int n)
{
    static char line[4096];
    for (int i = 0; i < n && text; i++)
        text = strchr(text, '\n') ? strchr(text, '\n') + 1 : NULL;
    snprintf(line, sizeof line, "%.*s", text ? (int)strcspn(text, "\n") : 0, text ? text : "");
    return line;
}

/* Rows that differ in tp, flash_attention and placement, and (within system 0) in HBM: those
 * columns are printed, under their names; the rest is on the '# same' line; a dense job (ep 1
 * everywhere) has no MoE column anywhere; days (0: no token budget) prints '-'. */
static void test_varying_columns(void **state)
{
    (void)state;
    cdse_job *job = malloc(sizeof *job);
    cdse_record rows[3];
    fill(job, &rows[0]);
    rows[1] = rows[0], rows[2] = rows[0];
    rows[1].index = 1, rows[2].index = 2;
    rows[1].strategy.tp = 4;
    rows[1].strategy.flash_attention = false;
    rows[2].strategy.placement = 1;
    rows[2].hw[CDSE_HW_HBM_GIB] = 141;
    cdse_table t;
    char err[4096];
    assert_int_equal(cdse_table_init(&t, job, "time_to_train_days", NULL, err, sizeof err), 0);
    const char *text = print(&t, rows, 3);
    const char *same = nth_line(text, 0);
    assert_non_null(strstr(same, "# same in every row: model=m1 system=s1 gpus=64 pp=2 dp=4 "));
    assert_null(strstr(same, "etp"));
    assert_null(strstr(same, "dispatch"));
    assert_null(strstr(same, "moe_overlap"));
    assert_null(strstr(same, "modules"));
    assert_null(strstr(same, " tp="));
    assert_null(strstr(same, "hbm"));
    const char *header = nth_line(text, 1);
    assert_string_equal(header, "#index hbm_gib tp flash placement   status     time_s      tok/s "
                                "   mfu  mem_gib     days");
    const char *row = nth_line(text, 3);
    assert_string_equal(row, "     1      80  4     0 tp-cp-dp-pp ok           12.5      83886 "
                             "  0.48    70.12        -");
    assert_int_equal(strlen(nth_line(text, 2)), strlen(header));
    free(job);
}

/* The error band (time_low_s, time_high_s: t_low, t_high after time_s) and the reserved memory
 * (mem_reserved_gib: res_gib after mem_gib) print when a row has them; a store made before them
 * holds 0 in every row, and its table leaves them out. Widths and digits of table.c's labels
 * (t_low, t_high, res_gib: 8 characters, 4 significant digits). */
static void test_band_columns(void **state)
{
    (void)state;
    cdse_job *job = malloc(sizeof *job);
    cdse_record row;
    fill(job, &row);
    row.time_low_s = 11.25;  /* 12.5 x 0.9 */
    row.time_high_s = 14.25; /* 12.5 x 1.14 */
    row.result.mem_reserved_gib = 79.5;
    cdse_table t;
    char err[4096];
    assert_int_equal(cdse_table_init(&t, job, NULL, NULL, err, sizeof err), 0);
    const char *text = print(&t, &row, 1);
    assert_string_equal(nth_line(text, 1), "#index status     time_s    t_low   t_high      tok/s"
                                           "    mfu  mem_gib  res_gib     days");
    assert_string_equal(nth_line(text, 2), "     0 ok           12.5    11.25    14.25      83886"
                                           "   0.48    70.12     79.5        -");
    row.time_low_s = row.time_high_s = row.result.mem_reserved_gib = 0.0;
    assert_int_equal(cdse_table_init(&t, job, NULL, NULL, err, sizeof err), 0);
    text = print(&t, &row, 1);
    assert_string_equal(nth_line(text, 1),
                        "#index status     time_s      tok/s    mfu  mem_gib     days");
    free(job);
}

/* A hardware value that differs only between systems follows the system column: not printed.
 * MoE rows (ep > 1) list the MoE knobs; a long recompute_modules value widens its column, and
 * every line keeps the header's width. */
static void test_systems_moe_alignment(void **state)
{
    (void)state;
    cdse_job *job = malloc(sizeof *job);
    cdse_record rows[2];
    fill(job, &rows[0]);
    rows[0].strategy.ep = 8;
    rows[1] = rows[0];
    rows[1].index = 7;
    rows[1].system = 1;
    rows[1].hw[CDSE_HW_HBM_GIB] = 141;
    rows[1].strategy.recompute = CDSE_RECOMPUTE_SELECTIVE;
    rows[1].strategy.recompute_modules = CDSE_RECOMPUTE_MODULES_N - 1; /* every module */
    rows[1].time_to_train_days = 41.39211;
    cdse_table t;
    char err[64];
    assert_int_equal(cdse_table_init(&t, job, "time_to_train_days", NULL, err, sizeof err), 0);
    const char *text = print(&t, rows, 2);
    assert_non_null(strstr(nth_line(text, 0), " ep=8 etp=0 "));
    assert_non_null(strstr(nth_line(text, 0), " moe_dispatcher=alltoall moe_overlap=none "));
    const char *header = nth_line(text, 1);
    assert_null(strstr(header, "hbm_gib"));
    assert_non_null(strstr(header, " system "));
    assert_non_null(strstr(header, " modules"));
    size_t width = strlen(header);
    assert_int_equal(strlen(nth_line(text, 2)), width);
    assert_int_equal(strlen(nth_line(text, 3)), width);
    /* The first row's modules ("none") is padded to the longest value below it. */
    char modules[96];
    cdse_recompute_modules_text(CDSE_RECOMPUTE_MODULES_N - 1, modules, sizeof modules);
    assert_non_null(strstr(nth_line(text, 3), modules));
    assert_non_null(strstr(nth_line(text, 3), " 41.39"));
    assert_string_equal(line_of(text, "     0"), nth_line(text, 2));
    free(job);
}

/* --columns: exactly those, in that order, by name or label; an unknown name lists the
 * allowed ones. The ranking column is printed even when it is not a result column. */
static void test_chosen_columns(void **state)
{
    (void)state;
    cdse_job *job = malloc(sizeof *job);
    cdse_record row;
    fill(job, &row);
    row.gpu_hours = 63578.29;
    cdse_table t;
    char err[4096];
    assert_int_equal(cdse_table_init(&t, job, NULL, "gpu_hours,mb,system", err, sizeof err), 0);
    const char *text = print(&t, &row, 1);
    assert_string_equal(nth_line(text, 0), "# gpu_hours mb system");
    assert_string_equal(nth_line(text, 1), "  6.358e+04  1 s1    ");
    assert_int_equal(cdse_table_init(&t, job, NULL, "tp,no_such", err, sizeof err), -1);
    assert_non_null(strstr(err, "--columns tp,no_such: no column 'no_such'; allowed: "));
    assert_non_null(strstr(err, "index, model, system, gpus, "));
    /* ... through the last column of the table, in the table's order */
    char last[96];
    snprintf(last, sizeof last, ", %s)", cdse_columns[cdse_column_count - 1].name);
    assert_non_null(strstr(err, last));
    assert_int_equal(cdse_table_init(&t, job, "gpu_hours", NULL, err, sizeof err), 0);
    text = print(&t, &row, 1);
    assert_non_null(strstr(nth_line(text, 1), "     days  gpu_hours"));
    assert_non_null(strstr(nth_line(text, 2), "        -  6.358e+04"));
    free(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varying_columns),
        cmocka_unit_test(test_systems_moe_alignment),
        cmocka_unit_test(test_chosen_columns),
        cmocka_unit_test(test_band_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
