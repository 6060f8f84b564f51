/* A small filter language over named numeric variables, for `clusterdse top --where`.
 *
 *   expr := or
 *   or   := and ('||' and)*          and  := not ('&&' not)*
 *   not  := '!' not | cmp            cmp  := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
 *   sum  := term (('+'|'-') term)*   term := unary (('*'|'/') unary)*
 *   unary := '-' unary | NUMBER | NAME | "STRING" | '(' expr ')'
 *
 * A string literal may only be compared (== or !=) with a NAME, whose environment turns it into
 * the variable's numeric code (model == "llama3-70b"). A NAME whose values are names (the
 * environment's `named`) may only be compared that way: its code is no number to compare,
 * compute with or test (model == 0 is an error). `true` and `false` are 1 and 0 unless the
 * environment defines them. A comparison is 1 or 0; a row passes when the whole expression is
 * not 0. Errors name the offending character and show it under the expression. Knows nothing of
 * records or stores: variables are resolved through the environment. */
#ifndef CLUSTERDSE_EXPR_H
#define CLUSTERDSE_EXPR_H

#include "clusterdse/model/common.h"

typedef struct cdse_expr cdse_expr;

/* Deepest nesting accepted, in parentheses, '-' and '!' while parsing and in the tree's depth
 * (a chain of 1000 '&&' is 1000 deep): both the parser and the evaluator recurse, so this bounds
 * their stack use (about 200 bytes a level). Keep EXPR_DEPTH_TEXT in expr.c equal. */
#define CDSE_EXPR_MAX_DEPTH 1000

typedef struct cdse_expr_env {
    /* Returns a variable id >= 0 for `name`, or -1 if there is no such variable. */
    int (*lookup)(void *ctx, const char *name);
    /* Turns the string `str` compared with variable `var` into its code. Returns 0, or -1 with
     * a message in `msg` (what the allowed values are). May be NULL: no string comparisons. */
    int (*string_value)(void *ctx, int var, const char *str, double *value, char *msg,
                        size_t msg_size);
    /* Names of the variables, comma-separated, for the "did you mean" of the "unknown name"
     * message (may be NULL); the caller lists them in full itself. */
    const char *known_names;
    void *ctx;
    /* Whether variable `var` takes names, not numbers (an enumeration: model, recompute, ...);
     * then `values` gets its allowed names for the message ("a, b, c"). May be NULL: every
     * variable is a number. */
    bool (*named)(void *ctx, int var, char *values, size_t values_size);
} cdse_expr_env;

/* Compiles `text`. Returns 0, or CDSE_EINVAL with diag = "position P: what\n  TEXT\n  ^". */
int cdse_expr_compile(const char *text, const cdse_expr_env *env, cdse_expr **expr,
                      cdse_diag *diag);

/* Evaluates on one row; value(row, var) gives the variables. */
double cdse_expr_eval(const cdse_expr *expr, double (*value)(const void *row, int var),
                      const void *row);

void cdse_expr_free(cdse_expr *expr);

#endif
