/* The filter language of `clusterdse top --where`: parsing, precedence, strings, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clusterdse/sweep/expr.h"

/* A row of three variables: tp, mem_total_gib, model (0 = "llama3-70b", 1 = "gpt3-175b"). */
enum { V_TP = 0, V_MEM, V_MODEL, V_COUNT };
static const char *const var_names[V_COUNT] = {"tp", "mem_total_gib", "model"};

static int lookup(void *ctx, const char *name)
{
    (void)ctx;
    for (int i = 0; i < V_COUNT; i++)
        if (strcmp(name, var_names[i]) == 0)
            return i;
    return -1;
}

static int string_value(void *ctx, int var, const char *str, double *value, char *msg,
                        size_t msg_size)
{
    (void)ctx;
    if (var != V_MODEL) {
        snprintf(msg, msg_size, "%s is a number, not a string", var_names[var]);
        return -1;
    }
    if (strcmp(str, "llama3-70b") == 0)
        *value = 0;
    else if (strcmp(str, "gpt3-175b") == 0)
        *value = 1;
    else {
        snprintf(msg, msg_size, "no model \"%s\" (models: llama3-70b, gpt3-175b)", str);
        return -1;
    }
    return 0;
}

/* model takes names only: compared with a string, never with a number. */
static bool named(void *ctx, int var, char *values, size_t size)
{
    (void)ctx;
    snprintf(values, size, "llama3-70b, gpt3-175b");
    return var == V_MODEL;
}

static const cdse_expr_env env = {lookup, string_value, "tp, mem_total_gib, model", NULL, named};

static double row_value(const void *row, int var)
{
    return ((const double *)row)[var];
}

/* Compiles `text` (which must be valid) and evaluates it on the row (tp, mem, model). */
static double eval3(const char *text, double tp, double mem, double model)
{
    cdse_expr *e = NULL;
    cdse_diag diag = {""};
    int rc = cdse_expr_compile(text, &env, &e, &diag);
    if (rc != 0)
        fail_msg("compile '%s': %s", text, diag.msg);
    double row[V_COUNT] = {tp, mem, model};
    double v = cdse_expr_eval(e, row_value, row);
    cdse_expr_free(e);
    return v;
}

/* Compiles `text` (which must be invalid) and returns the 1-based position in the message. */
static int error_position(const char *text, char *msg, size_t size)
{
    cdse_expr *e = NULL;
    cdse_diag diag = {""};
    int rc = cdse_expr_compile(text, &env, &e, &diag);
    assert_int_equal(rc, CDSE_EINVAL);
    assert_null(e);
    snprintf(msg, size, "%s", diag.msg);
    int pos = -1;
    assert_int_equal(sscanf(diag.msg, "position %d:", &pos), 1);
    return pos;
}

static void test_comparisons(void **state)
{
    (void)state;
    assert_float_equal(eval3("tp==8 && mem_total_gib<70", 8, 69.5, 0), 1.0, 0);
    assert_float_equal(eval3("tp==8 && mem_total_gib<70", 8, 70, 0), 0.0, 0);
    assert_float_equal(eval3("tp==8 && mem_total_gib<70", 4, 10, 0), 0.0, 0);
    assert_float_equal(eval3("tp != 8", 4, 0, 0), 1.0, 0);
    assert_float_equal(eval3("tp <= 4", 4, 0, 0), 1.0, 0);
    assert_float_equal(eval3("tp >= 4.5", 4, 0, 0), 0.0, 0);
    assert_float_equal(eval3("tp > 2", 4, 0, 0), 1.0, 0);
    assert_float_equal(eval3("mem_total_gib < 1e2", 0, 99, 0), 1.0, 0);
}

static void test_precedence(void **state)
{
    (void)state;
    /* && binds tighter than ||: 1 || (0 && 0) = 1; (1 || 0) && 0 = 0. */
    assert_float_equal(eval3("tp==1 || tp==2 && tp==3", 1, 0, 0), 1.0, 0);
    assert_float_equal(eval3("(tp==1 || tp==2) && tp==3", 1, 0, 0), 0.0, 0);
    /* ! applies to the comparison: !(tp == 1). */
    assert_float_equal(eval3("!tp==1", 1, 0, 0), 0.0, 0);
    assert_float_equal(eval3("!(tp==1) || !(mem_total_gib > 5)", 1, 3, 0), 1.0, 0);
    /* Arithmetic: 2 + 3 * 4 = 14; (2 + 3) * 4 = 20; -tp + 10 = 6 for tp = 4; 9 / 2 = 4.5. */
    assert_float_equal(eval3("2 + 3 * 4", 0, 0, 0), 14.0, 0);
    assert_float_equal(eval3("(2 + 3) * 4", 0, 0, 0), 20.0, 0);
    assert_float_equal(eval3("-tp + 10", 4, 0, 0), 6.0, 0);
    assert_float_equal(eval3("9 / 2", 0, 0, 0), 4.5, 0);
    /* 8 GPUs per TP group of 8 with 16 GiB per GPU: 8 * 16 = 128 >= 100. */
    assert_float_equal(eval3("tp * mem_total_gib >= 100", 8, 16, 0), 1.0, 0);
    assert_float_equal(eval3("true && !false", 0, 0, 0), 1.0, 0);
}

static void test_strings(void **state)
{
    (void)state;
    assert_float_equal(eval3("model==\"llama3-70b\"", 0, 0, 0), 1.0, 0);
    assert_float_equal(eval3("model==\"llama3-70b\"", 0, 0, 1), 0.0, 0);
    assert_float_equal(eval3("\"gpt3-175b\" == model && tp == 8", 8, 0, 1), 1.0, 0);
    assert_float_equal(eval3("model != 'gpt3-175b'", 8, 0, 0), 1.0, 0);
}

static void test_errors(void **state)
{
    (void)state;
    char msg[1024];
    /* "tp==8 && mem<70": 'mem' starts at character 10. */
    assert_int_equal(error_position("tp==8 && mem<70", msg, sizeof msg), 10);
    assert_non_null(strstr(msg, "unknown name mem"));
    /* The caret line: two spaces of indent + 9 spaces puts '^' under character 10. */
    assert_non_null(strstr(msg, "\n  tp==8 && mem<70\n           ^"));
    /* A single '=' at character 3. */
    assert_int_equal(error_position("tp=8", msg, sizeof msg), 3);
    assert_non_null(strstr(msg, "=="));
    /* A single '&' at character 6. */
    assert_int_equal(error_position("tp==8 & tp<2", msg, sizeof msg), 7);
    /* Missing ')': reported at the end (character 8), naming the '(' at 1. */
    assert_int_equal(error_position("(tp == 8", msg, sizeof msg), 9);
    assert_non_null(strstr(msg, "position 1"));
    assert_int_equal(error_position("tp == 8)", msg, sizeof msg), 8);
    /* Unknown string value: the string at character 8. */
    assert_int_equal(error_position("model==\"llama2\"", msg, sizeof msg), 8);
    assert_non_null(strstr(msg, "llama3-70b, gpt3-175b"));
    /* String compared with a number column, and with < . */
    assert_int_equal(error_position("tp == \"8\"", msg, sizeof msg), 7);
    assert_int_equal(error_position("model < \"gpt3-175b\"", msg, sizeof msg), 7);
    /* A lone string is not a filter. */
    assert_int_equal(error_position("\"x\"", msg, sizeof msg), 1);
    assert_int_equal(error_position("", msg, sizeof msg), 1);
    assert_int_equal(error_position("tp ==", msg, sizeof msg), 6);
    assert_int_equal(error_position("1 < tp < 3", msg, sizeof msg), 8);
    assert_int_equal(error_position("tp == 8 tp", msg, sizeof msg), 9);
    assert_int_equal(error_position("\"abc", msg, sizeof msg), 1);
}

/* A name column compared with a number, computed with, tested alone or compared with another
 * column is an error at the column's name, listing its values (model == 0 compared the internal
 * code: it matched every row of the first model). */
static void test_named(void **state)
{
    (void)state;
    char msg[1024];
    assert_int_equal(error_position("model == 0", msg, sizeof msg), 1);
    assert_non_null(strstr(msg, "model takes names: compare it with == or != and a string in "
                                "quotes (model == \"NAME\"); values: llama3-70b, gpt3-175b"));
    assert_int_equal(error_position("tp == 8 && 1 != model", msg, sizeof msg), 17);
    assert_int_equal(error_position("model < 2", msg, sizeof msg), 1);
    assert_int_equal(error_position("model + 1 == 2", msg, sizeof msg), 1);
    assert_int_equal(error_position("-model == -1", msg, sizeof msg), 2);
    assert_int_equal(error_position("!model", msg, sizeof msg), 2);
    assert_int_equal(error_position("model", msg, sizeof msg), 1);
    assert_int_equal(error_position("(model)", msg, sizeof msg), 2);
    assert_int_equal(error_position("model == tp", msg, sizeof msg), 1);
    assert_int_equal(error_position("model == true", msg, sizeof msg), 1);
    /* By name it is fine, on either side and in parentheses; numbers stay numbers. */
    assert_float_equal(eval3("(model) == 'gpt3-175b' && tp + 1 > 8", 8, 0, 1), 1.0, 0);
    assert_float_equal(eval3("'llama3-70b' != model || tp == 1", 1, 0, 0), 1.0, 0);
}

/* `n` copies of `unit` then `tail`, in a buffer the caller frees. */
static char *repeat(const char *unit, int n, const char *tail)
{
    size_t u = strlen(unit), t = strlen(tail);
    char *text = malloc(u * (size_t)n + t + 1);
    assert_non_null(text);
    for (int i = 0; i < n; i++)
        memcpy(text + u * (size_t)i, unit, u);
    memcpy(text + u * (size_t)n, tail, t + 1);
    return text;
}

/* Fuzz finding B1: ~9,500 nested parentheses overflowed the stack. Nesting and tree depth stop
 * at CDSE_EXPR_MAX_DEPTH = 1000 with a message; up to the limit everything still works. */
static void test_depth_limit(void **state)
{
    (void)state;
    char msg[1024];
    /* 1000 '(' around tp==1: 1000 levels of nesting, a tree of depth 2 (== over tp and 1). */
    char *open = repeat("(", 1000, "tp==1"), *close = repeat(")", 1000, "");
    char *text = malloc(strlen(open) + strlen(close) + 1);
    assert_non_null(text);
    strcpy(text, open);
    strcat(text, close);
    assert_float_equal(eval3(text, 1, 0, 0), 1.0, 0);
    free(text);
    free(open);
    free(close);
    /* 1001 '(': the 1001st, at character 1001, is one too many. */
    text = repeat("(", 1001, "tp==1");
    assert_int_equal(error_position(text, msg, sizeof msg), 1001);
    assert_non_null(strstr(msg, "deeper than 1000 levels"));
    free(text);
    /* 9,500 '(' (the finding's size) without a closing one: the same message, no crash. */
    text = repeat("(", 9500, "");
    assert_int_equal(error_position(text, msg, sizeof msg), 1001);
    free(text);
    /* 999 unary minus over 1: a tree of depth 1000 (999 negations + the number), value -1. */
    text = repeat("-", 999, "1");
    assert_float_equal(eval3(text, 0, 0, 0), -1.0, 0);
    free(text);
    text = repeat("-", 1000, "1");
    error_position(text, msg, sizeof msg);
    assert_non_null(strstr(msg, "deeper than 1000 levels"));
    free(text);
    /* tp followed by 999 "|| tp": a left-deep tree of 999 '||' over tp, depth 1000; one more
     * '||' is depth 1001. */
    char *chain = repeat(" || tp", 999, "");
    text = malloc(strlen(chain) + 3);
    assert_non_null(text);
    strcpy(text, "tp");
    strcat(text, chain);
    assert_float_equal(eval3(text, 2, 0, 0), 1.0, 0);
    free(text);
    free(chain);
    chain = repeat(" || tp", 1000, "");
    text = malloc(strlen(chain) + 3);
    assert_non_null(text);
    strcpy(text, "tp");
    strcat(text, chain);
    error_position(text, msg, sizeof msg);
    assert_non_null(strstr(msg, "deeper than 1000 levels"));
    free(text);
    free(chain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comparisons), cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_strings),     cmocka_unit_test(test_errors),
        cmocka_unit_test(test_depth_limit), cmocka_unit_test(test_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
