/* The filter language of `clusterdse top --where`: a recursive-descent parser into a small tree
 * of nodes held in one array, evaluated recursively. */
#include "clusterdse/sweep/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum node_kind {
    N_NUM = 0,
    N_VAR,
    N_STR, /* only during parsing: replaced by N_NUM when compared with a variable */
    N_NEG,
    N_NOT,
    N_ADD,
    N_SUB,
    N_MUL,
    N_DIV,
    N_EQ,
    N_NE,
    N_LT,
    N_LE,
    N_GT,
    N_GE,
    N_AND,
    N_OR,
} node_kind;

typedef struct node {
    int kind;
    int left, right; /* child node ids, -1 if none */
    int var;
    double num;
    int pos;       /* position in the text, for messages */
    int str_begin; /* N_STR: the literal is text[str_begin, str_end) */
    int str_end;
    int depth;       /* 1 + the deeper child's depth: bounds the evaluator's recursion */
    int from_string; /* N_NUM: the code of a string compared with a variable */
} node;

struct cdse_expr {
    int n, cap;
    node *nodes;
    int root;
};

#define EXPR_NAME_MAX   64
#define EXPR_DEPTH_TEXT "1000"

typedef struct parser {
    const char *text;
    int pos;
    const cdse_expr_env *env;
    cdse_expr *expr;
    cdse_diag *diag;
    int failed;
    int nesting; /* open '(', '-' and '!' being parsed: bounds the parser's recursion */
} parser;

/* Levenshtein distance of two short names (at most EXPR_NAME_MAX characters each). */
static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    int row[EXPR_NAME_MAX + 1];
    if (la > EXPR_NAME_MAX || lb > EXPR_NAME_MAX)
        return EXPR_NAME_MAX;
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The name of the comma-separated list `known` closest to `name` into `out` ("" when none is
 * close): a name that starts with `name`, else one within a third of its length in edits. */
static void closest_name(const char *known, const char *name, char *out, size_t size)
{
    int best = (int)strlen(name) / 3 + 1;
    out[0] = '\0';
    for (const char *s = known; *s != '\0';) {
        size_t len = strcspn(s, ", ");
        char cand[EXPR_NAME_MAX + 1];
        if (len > 0 && len <= EXPR_NAME_MAX) {
            memcpy(cand, s, len);
            cand[len] = '\0';
            int d = strncmp(cand, name, strlen(name)) == 0 ? 0 : edit_distance(cand, name);
            if (d < best || (d == 0 && out[0] == '\0')) {
                best = d;
                snprintf(out, size, "%s", cand);
            }
        }
        s += len;
        s += strspn(s, ", ");
    }
}

static void fail(parser *p, int pos, const char *fmt, const char *arg)
{
    if (p->failed)
        return;
    p->failed = 1;
    char what[512];
    snprintf(what, sizeof what, fmt, arg ? arg : "");
    int len = (int)strlen(p->text);
    if (pos > len)
        pos = len;
    cdse_diag_set(p->diag, "position %d: %s\n  %s\n  %*s^", pos + 1, what, p->text, pos, "");
}

static int new_node(parser *p, int kind, int left, int right, int pos)
{
    cdse_expr *e = p->expr;
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 16;
        node *grown = realloc(e->nodes, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            fail(p, pos, "out of memory%s", NULL);
            return -1;
        }
        e->nodes = grown;
        e->cap = cap;
    }
    int depth = 0;
    if (left >= 0 && e->nodes[left].depth > depth)
        depth = e->nodes[left].depth;
    if (right >= 0 && e->nodes[right].depth > depth)
        depth = e->nodes[right].depth;
    if (depth >= CDSE_EXPR_MAX_DEPTH) {
        fail(p, pos, "the expression nests deeper than " EXPR_DEPTH_TEXT " levels%s", NULL);
        return -1;
    }
    node *nd = &e->nodes[e->n];
    memset(nd, 0, sizeof *nd);
    nd->kind = kind;
    nd->left = left;
    nd->right = right;
    nd->pos = pos;
    nd->depth = depth + 1;
    return e->n++;
}

/* Enters one level of '(', unary '-' or '!'; fails beyond CDSE_EXPR_MAX_DEPTH. */
static int enter(parser *p, int pos)
{
    if (++p->nesting > CDSE_EXPR_MAX_DEPTH) {
        fail(p, pos, "the expression nests deeper than " EXPR_DEPTH_TEXT " levels%s", NULL);
        return -1;
    }
    return 0;
}

static void skip_space(parser *p)
{
    while (isspace((unsigned char)p->text[p->pos]))
        p->pos++;
}

/* Consumes `tok` if it comes next (after spaces). */
static int accept(parser *p, const char *tok)
{
    skip_space(p);
    size_t n = strlen(tok);
    if (strncmp(p->text + p->pos, tok, n) != 0)
        return 0;
    /* "<" must not eat the "<" of "<=", nor "=" the first of "==". */
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && p->text[p->pos + 1] == '=')
        return 0;
    p->pos += (int)n;
    return 1;
}

static int parse_or(parser *p);

/* '(' expression ')', the '(' at pos. */
static int parse_group(parser *p, int pos)
{
    p->pos++;
    if (enter(p, pos) != 0)
        return -1;
    int inner = parse_or(p);
    p->nesting--;
    if (p->failed)
        return -1;
    if (!accept(p, ")")) {
        char open_pos[32];
        snprintf(open_pos, sizeof open_pos, "%d", pos + 1);
        fail(p, p->pos, "expected ')' to close the '(' at position %s", open_pos);
        return -1;
    }
    return inner;
}

/* A string in quotes `quote` (either kind), the opening quote at pos. */
static int parse_string(parser *p, int pos, char quote)
{
    int end = pos + 1;
    while (p->text[end] != '\0' && p->text[end] != quote)
        end++;
    if (p->text[end] != quote) {
        fail(p, pos, "unterminated string%s", NULL);
        return -1;
    }
    int id = new_node(p, N_STR, -1, -1, pos);
    if (id < 0)
        return -1;
    p->expr->nodes[id].str_begin = pos + 1;
    p->expr->nodes[id].str_end = end;
    p->pos = end + 1;
    return id;
}

/* A number (strtod's syntax) at pos, not followed by a letter or '_'. */
static int parse_number(parser *p, int pos)
{
    char *end;
    double v = strtod(p->text + pos, &end);
    int id = new_node(p, N_NUM, -1, -1, pos);
    if (id < 0)
        return -1;
    p->expr->nodes[id].num = v;
    p->pos = (int)(end - p->text);
    if (isalpha((unsigned char)p->text[p->pos]) || p->text[p->pos] == '_') {
        fail(p, p->pos, "unexpected character after a number%s", NULL);
        return -1;
    }
    return id;
}

/* A name at pos: a variable the environment knows, or true / false; an unknown name fails with
 * the closest known one. */
static int parse_name(parser *p, int pos)
{
    char name[EXPR_NAME_MAX];
    int len = 0;
    while (isalnum((unsigned char)p->text[p->pos]) || p->text[p->pos] == '_') {
        if (len < EXPR_NAME_MAX - 1)
            name[len++] = p->text[p->pos];
        p->pos++;
    }
    name[len] = '\0';
    int var = p->env->lookup(p->env->ctx, name);
    if (var < 0 && (strcmp(name, "true") == 0 || strcmp(name, "false") == 0)) {
        int id = new_node(p, N_NUM, -1, -1, pos);
        if (id >= 0)
            p->expr->nodes[id].num = name[0] == 't' ? 1.0 : 0.0;
        return id;
    }
    if (var < 0) {
        char msg[3 * EXPR_NAME_MAX + 64], near[EXPR_NAME_MAX + 1] = "";
        if (p->env->known_names)
            closest_name(p->env->known_names, name, near, sizeof near);
        if (near[0] != '\0')
            snprintf(msg, sizeof msg, "%s; did you mean %s?", name, near);
        else
            snprintf(msg, sizeof msg, "%s", name);
        fail(p, pos, "unknown name %s", msg);
        return -1;
    }
    int id = new_node(p, N_VAR, -1, -1, pos);
    if (id >= 0)
        p->expr->nodes[id].var = var;
    return id;
}

static int parse_primary(parser *p)
{
    skip_space(p);
    int pos = p->pos;
    char c = p->text[pos];
    if (c == '(')
        return parse_group(p, pos);
    if (c == '"' || c == '\'')
        return parse_string(p, pos, c);
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p->text[pos + 1])))
        return parse_number(p, pos);
    if (isalpha((unsigned char)c) || c == '_')
        return parse_name(p, pos);
    if (c == '\0')
        fail(p, pos, "unexpected end of expression%s", NULL);
    else if (c == '=')
        fail(p, pos, "unexpected '=' (use '==' to compare)%s", NULL);
    else if (c == '&' || c == '|')
        fail(p, pos, "unexpected '%s' (use '&&' and '||')", c == '&' ? "&" : "|");
    else
        fail(p, pos, "unexpected character%s", NULL);
    return -1;
}

static int parse_unary(parser *p)
{
    skip_space(p);
    int pos = p->pos;
    if (accept(p, "-")) {
        if (enter(p, pos) != 0)
            return -1;
        int operand = parse_unary(p);
        p->nesting--;
        if (p->failed)
            return -1;
        return new_node(p, N_NEG, operand, -1, pos);
    }
    return parse_primary(p);
}

/* A binary level: operators ops[i] map to kinds[i]. */
static int parse_binary(parser *p, int (*next)(parser *), const char *const *ops, const int *kinds,
                        int n_ops)
{
    int left = next(p);
    while (!p->failed) {
        skip_space(p);
        int pos = p->pos, matched = -1;
        for (int i = 0; i < n_ops && matched < 0; i++)
            if (accept(p, ops[i]))
                matched = i;
        if (matched < 0)
            break;
        int right = next(p);
        if (p->failed)
            return -1;
        left = new_node(p, kinds[matched], left, right, pos);
        if (left < 0)
            return -1;
    }
    return p->failed ? -1 : left;
}

static int parse_term(parser *p)
{
    static const char *const ops[] = {"*", "/"};
    static const int kinds[] = {N_MUL, N_DIV};
    return parse_binary(p, parse_unary, ops, kinds, 2);
}

static int parse_sum(parser *p)
{
    static const char *const ops[] = {"+", "-"};
    static const int kinds[] = {N_ADD, N_SUB};
    return parse_binary(p, parse_term, ops, kinds, 2);
}

/* Replaces the string node `s` compared with the variable node `v` by the variable's code. */
static int resolve_string(parser *p, int v, int s)
{
    node *sn = &p->expr->nodes[s];
    const node *vn = &p->expr->nodes[v];
    char str[256];
    int len = sn->str_end - sn->str_begin;
    if (len >= (int)sizeof str)
        len = (int)sizeof str - 1;
    memcpy(str, p->text + sn->str_begin, (size_t)len);
    str[len] = '\0';
    char msg[400] = "";
    double value = 0;
    if (p->env->string_value == NULL ||
        p->env->string_value(p->env->ctx, vn->var, str, &value, msg, sizeof msg) != 0) {
        fail(p, sn->pos, "%s", msg[0] ? msg : "this name takes no string values");
        return -1;
    }
    sn->kind = N_NUM;
    sn->num = value;
    sn->from_string = 1;
    return 0;
}

static int parse_cmp(parser *p)
{
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    static const int kinds[] = {N_EQ, N_NE, N_LE, N_GE, N_LT, N_GT};
    int left = parse_sum(p);
    if (p->failed)
        return -1;
    skip_space(p);
    int pos = p->pos, matched = -1;
    for (int i = 0; i < 6 && matched < 0; i++)
        if (accept(p, ops[i]))
            matched = i;
    if (matched < 0) {
        if (p->text[p->pos] == '=')
            fail(p, p->pos, "unexpected '=' (use '==' to compare)%s", NULL);
        return left;
    }
    int right = parse_sum(p);
    if (p->failed)
        return -1;
    node *nodes = p->expr->nodes;
    int l_str = nodes[left].kind == N_STR, r_str = nodes[right].kind == N_STR;
    if (l_str || r_str) {
        int s = l_str ? left : right, v = l_str ? right : left;
        if (l_str && r_str) {
            fail(p, nodes[right].pos, "compare a string with a column name%s", NULL);
            return -1;
        }
        if (nodes[v].kind != N_VAR) {
            fail(p, nodes[s].pos, "a string can only be compared with a column name%s", NULL);
            return -1;
        }
        if (kinds[matched] != N_EQ && kinds[matched] != N_NE) {
            fail(p, pos, "strings compare with == or != only%s", NULL);
            return -1;
        }
        if (resolve_string(p, v, s) != 0)
            return -1;
    }
    skip_space(p);
    if (strchr("=!<>", p->text[p->pos]) && p->text[p->pos] != '\0' &&
        !(p->text[p->pos] == '!' && p->text[p->pos + 1] != '=')) {
        fail(p, p->pos, "comparisons do not chain: use && between them%s", NULL);
        return -1;
    }
    return new_node(p, kinds[matched], left, right, pos);
}

static int parse_not(parser *p)
{
    skip_space(p);
    int pos = p->pos;
    if (accept(p, "!")) {
        if (enter(p, pos) != 0)
            return -1;
        int operand = parse_not(p);
        p->nesting--;
        if (p->failed)
            return -1;
        return new_node(p, N_NOT, operand, -1, pos);
    }
    return parse_cmp(p);
}

static int parse_and(parser *p)
{
    static const char *const ops[] = {"&&"};
    static const int kinds[] = {N_AND};
    return parse_binary(p, parse_not, ops, kinds, 1);
}

static int parse_or(parser *p)
{
    static const char *const ops[] = {"||"};
    static const int kinds[] = {N_OR};
    return parse_binary(p, parse_and, ops, kinds, 1);
}

/* A string literal left over (not compared with a name) is an error. */
static int check_no_strings(parser *p)
{
    for (int i = 0; i < p->expr->n; i++)
        if (p->expr->nodes[i].kind == N_STR) {
            fail(p, p->expr->nodes[i].pos, "a string can only be compared with a column name%s",
                 NULL);
            return -1;
        }
    return 0;
}

/* A variable whose values are names appears only as one side of == or != whose other side is a
 * string (then `by_name`): model == 0 would compare the model's internal code. Walks the tree
 * from node `id` (as deep as the evaluator goes). */
static int check_named(parser *p, int id, bool by_name)
{
    const node *nodes = p->expr->nodes, *nd = &nodes[id];
    if (nd->kind == N_VAR) {
        char values[400] = "", msg[512];
        if (by_name || p->env->named == NULL ||
            !p->env->named(p->env->ctx, nd->var, values, sizeof values))
            return 0;
        const char *name = p->text + nd->pos;
        int len =
            (int)strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        snprintf(msg, sizeof msg,
                 "%.*s takes names: compare it with == or != and a string in quotes (%.*s == "
                 "\"NAME\"); values: %s",
                 len, name, len, name, values);
        fail(p, nd->pos, "%s", msg);
        return -1;
    }
    bool compare = nd->kind == N_EQ || nd->kind == N_NE;
    if (nd->left >= 0 && check_named(p, nd->left, compare && nodes[nd->right].from_string) != 0)
        return -1;
    if (nd->right >= 0 && check_named(p, nd->right, compare && nodes[nd->left].from_string) != 0)
        return -1;
    return 0;
}

int cdse_expr_compile(const char *text, const cdse_expr_env *env, cdse_expr **out, cdse_diag *diag)
{
    *out = NULL;
    cdse_expr *e = calloc(1, sizeof *e);
    if (e == NULL) {
        cdse_diag_set(diag, "out of memory");
        return CDSE_ENOMEM;
    }
    parser p = {.text = text, .pos = 0, .env = env, .expr = e, .diag = diag, .failed = 0};
    e->root = parse_or(&p);
    if (!p.failed) {
        skip_space(&p);
        if (text[p.pos] != '\0') {
            if (text[p.pos] == ')')
                fail(&p, p.pos, "unmatched ')'%s", NULL);
            else if (text[p.pos] == '=')
                fail(&p, p.pos, "unexpected '=' (use '==' to compare)%s", NULL);
            else if (text[p.pos] == '&' || text[p.pos] == '|')
                fail(&p, p.pos, "unexpected '%s' (use '&&' and '||')",
                     text[p.pos] == '&' ? "&" : "|");
            else
                fail(&p, p.pos, "expected an operator (&&, ||, ==, <, ...) here%s", NULL);
        }
    }
    if (!p.failed)
        check_no_strings(&p);
    if (!p.failed && e->root >= 0)
        check_named(&p, e->root, false);
    if (p.failed || e->root < 0) {
        cdse_expr_free(e);
        return CDSE_EINVAL;
    }
    *out = e;
    return CDSE_OK;
}

static double eval_node(const cdse_expr *e, int id, double (*value)(const void *, int),
                        const void *row)
{
    const node *nd = &e->nodes[id];
    switch (nd->kind) {
    case N_NUM:
        return nd->num;
    case N_VAR:
        return value(row, nd->var);
    case N_NEG:
        return -eval_node(e, nd->left, value, row);
    case N_NOT:
        return eval_node(e, nd->left, value, row) == 0.0 ? 1.0 : 0.0;
    case N_AND:
        return (eval_node(e, nd->left, value, row) != 0.0 &&
                eval_node(e, nd->right, value, row) != 0.0)
                   ? 1.0
                   : 0.0;
    case N_OR:
        return (eval_node(e, nd->left, value, row) != 0.0 ||
                eval_node(e, nd->right, value, row) != 0.0)
                   ? 1.0
                   : 0.0;
    default:
        break;
    }
    double a = eval_node(e, nd->left, value, row), b = eval_node(e, nd->right, value, row);
    switch (nd->kind) {
    case N_ADD:
        return a + b;
    case N_SUB:
        return a - b;
    case N_MUL:
        return a * b;
    case N_DIV:
        return a / b;
    case N_EQ:
        return a == b;
    case N_NE:
        return a != b;
    case N_LT:
        return a < b;
    case N_LE:
        return a <= b;
    case N_GT:
        return a > b;
    case N_GE:
        return a >= b;
    default:
        return NAN;
    }
}

double cdse_expr_eval(const cdse_expr *expr, double (*value)(const void *row, int var),
                      const void *row)
{
    return eval_node(expr, expr->root, value, row);
}

void cdse_expr_free(cdse_expr *expr)
{
    if (expr == NULL)
        return;
    free(expr->nodes);
    free(expr);
}
