/* libFuzzer harness: the `top --where` language (cdse_expr_compile, cdse_expr_eval) over three
 * variables, one of them with string values only, as `model` has. See docs/fuzzing.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/sweep/expr.h"

static const char *const names[] = {"tp", "mem_total_gib", "model"};

static int lookup(void *ctx, const char *name)
{
    (void)ctx;
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

static int string_value(void *ctx, int var, const char *str, double *value, char *msg,
                        size_t msg_size)
{
    (void)ctx;
    if (var == 2 && strcmp(str, "llama3-70b") == 0) {
        *value = 0;
        return 0;
    }
    snprintf(msg, msg_size, "no such value");
    return -1;
}

static bool named(void *ctx, int var, char *values, size_t size)
{
    (void)ctx;
    snprintf(values, size, "llama3-70b");
    return var == 2;
}

static double row_value(const void *row, int var)
{
    return ((const double *)row)[var];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cdse_expr_env env = {lookup, string_value, "tp, mem_total_gib, model", NULL, named};
    cdse_expr *expr = NULL;
    cdse_diag diag = {""};
    if (cdse_expr_compile(text, &env, &expr, &diag) == 0) {
        const double row[3] = {8, 70.5, 0};
        (void)cdse_expr_eval(expr, row_value, row);
        cdse_expr_free(expr);
    }
    free(text);
    return 0;
}
