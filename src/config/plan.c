/* Probe plans: libconfig text -> validated cdse_probe_plan. One key table drives parsing,
 * defaults, the rejection of unknown keys and `clusterdse probe --help`. No MPI. */
#include "clusterdse/config/probe_plan.h"

#include <errno.h>
#include <libconfig.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/model/collective.h"

typedef enum plan_kind {
    PK_STRING = 0,
    PK_INT,
    PK_FLOAT,
    PK_BOOL,
    PK_COLLS,  /* list of collective names -> bool[CDSE_COLL_COUNT] */
    PK_DTYPES, /* list of datatype names -> bool[CDSE_PDT_COUNT] */
    PK_SIZES,  /* [b1, b2, ...] or { from; to; } */
    PK_SHAPES, /* ( { kind; group; stride; }, ... ) */
} plan_kind;

typedef struct plan_key {
    const char *name;
    int kind; /* plan_kind */
    double min, max;
    const char *default_text; /* NULL: required */
    const char *help;
    size_t offset;
} plan_key;

#define PLAN_FIELD(f) offsetof(cdse_probe_plan, f)

static const plan_key plan_keys[] = {
    {"name", PK_STRING, 0, 0, "\"probe\"", "label stored with the probes", PLAN_FIELD(name)},
    {"collectives", PK_COLLS, 0, 0, NULL,
     "list of: allreduce, allgather, reduce_scatter, alltoall, sendrecv", PLAN_FIELD(coll)},
    {"dtypes", PK_DTYPES, 0, 0, "[\"float\"]", "list of: float, double, int32, uint8",
     PLAN_FIELD(dtype)},
    {"sizes", PK_SIZES, 1, (double)CDSE_PLAN_MAX_BYTES, NULL,
     "message bytes: a list [b1, b2, ...] or powers of two { from = B; to = B; }",
     PLAN_FIELD(sizes)},
    {"shapes", PK_SHAPES, 0, 0, "( { kind = \"world\"; } )",
     "communicator shapes: { kind = world | node | per_node | contiguous | strided; "
     "group = G; stride = S; }",
     PLAN_FIELD(shape)},
    {"warmup", PK_INT, 0, 10000, "5", "untimed iterations before each measurement",
     PLAN_FIELD(warmup)},
    {"iterations_min", PK_INT, 1, 1000000, "10", "fewest timed iterations per measurement",
     PLAN_FIELD(iterations_min)},
    {"iterations_max", PK_INT, 1, 1000000, "1000", "most timed iterations per measurement",
     PLAN_FIELD(iterations_max)},
    {"time_budget_ms", PK_FLOAT, 0.001, 3.6e6, "200",
     "target time per measurement; sets the iteration count", PLAN_FIELD(time_budget_ms)},
    {"check", PK_BOOL, 0, 0, "false", "verify every result (outside the timed region)",
     PLAN_FIELD(check)},
    {"reduce_local", PK_BOOL, 0, 0, "true", "measure the local reduction rate (MPI_Reduce_local)",
     PLAN_FIELD(reduce_local)},
};
static const int n_plan_keys = (int)(sizeof plan_keys / sizeof plan_keys[0]);

static const char *const shape_names[CDSE_SHAPE_COUNT] = {"world", "node", "per_node", "contiguous",
                                                          "strided"};
static const char *const dtype_names[CDSE_PDT_COUNT] = {"float", "double", "int32", "uint8"};
static const int dtype_sizes[CDSE_PDT_COUNT] = {4, 8, 4, 1};

const char *cdse_shape_name(int kind)
{
    return kind >= 0 && kind < CDSE_SHAPE_COUNT ? shape_names[kind] : "?";
}

const char *cdse_probe_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < CDSE_PDT_COUNT ? dtype_names[dtype] : "?";
}

int cdse_probe_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < CDSE_PDT_COUNT ? dtype_sizes[dtype] : 0;
}

const char *cdse_probe_coll_name(int coll)
{
    return cdse_coll_name(coll);
}

static int find_name(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int cdse_probe_coll_parse(const char *name)
{
    return cdse_coll_parse(name);
}

/* Parsing context: where messages point to. */
typedef struct plan_ctx {
    const char *path;
    int world_size;
    cdse_diag *diag;
} plan_ctx;

static int fail(const plan_ctx *ctx, const config_setting_t *s, const char *fmt, const char *a,
                const char *b)
{
    char what[700];
    snprintf(what, sizeof what, fmt, a, b);
    cdse_diag_set(ctx->diag, "%s:%d: %s", ctx->path, s ? config_setting_source_line(s) : 0, what);
    return CDSE_EINVAL;
}

static void join_names(const char *const *names, int n, char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        strncat(out, names[i], size - strlen(out) - 1);
        if (i + 1 < n)
            strncat(out, ", ", size - strlen(out) - 1);
    }
}

static bool is_number(const config_setting_t *s)
{
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64 || t == CONFIG_TYPE_FLOAT;
}

static double number(const config_setting_t *s)
{
    int t = config_setting_type(s);
    if (t == CONFIG_TYPE_FLOAT)
        return config_setting_get_float(s);
    return (double)config_setting_get_int64(s);
}

static int parse_name_list(const plan_ctx *ctx, const config_setting_t *s, const plan_key *key,
                           const char *const *names, int n_names, bool *out)
{
    char allowed[256];
    join_names(names, n_names, allowed, sizeof allowed);
    if (!config_setting_is_aggregate(s) || config_setting_is_group(s) ||
        config_setting_length(s) == 0)
        return fail(ctx, s, "'%s' must be a non-empty list of names; allowed: %s", key->name,
                    allowed);
    memset(out, 0, sizeof(bool) * (size_t)n_names);
    for (int i = 0; i < config_setting_length(s); i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        const char *v = config_setting_get_string(e);
        int idx = v ? find_name(names, n_names, v) : -1;
        if (idx < 0) {
            char what[300];
            snprintf(what, sizeof what, "'%s': unknown value '%s'", key->name, v ? v : "?");
            return fail(ctx, e, "%s; allowed: %s", what, allowed);
        }
        out[idx] = true;
    }
    return 0;
}

static int check_size(const plan_ctx *ctx, const config_setting_t *s, double v)
{
    char text[64];
    snprintf(text, sizeof text, "%.0f", v);
    if (!(v >= 1 && v <= (double)CDSE_PLAN_MAX_BYTES) || v != (double)(int64_t)v)
        return fail(ctx, s,
                    "'sizes': %s bytes is out of range; allowed: whole numbers from 1 to %s", text,
                    "1073741824 (1 GiB)");
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int parse_sizes(const plan_ctx *ctx, const config_setting_t *s, cdse_probe_plan *plan)
{
    plan->n_sizes = 0;
    if (config_setting_is_group(s)) {
        const config_setting_t *from = config_setting_get_member(s, "from");
        const config_setting_t *to = config_setting_get_member(s, "to");
        for (int i = 0; i < config_setting_length(s); i++) {
            const char *n = config_setting_name(config_setting_get_elem(s, (unsigned)i));
            if (strcmp(n, "from") != 0 && strcmp(n, "to") != 0)
                return fail(ctx, config_setting_get_elem(s, (unsigned)i),
                            "'sizes': unknown key '%s'; allowed: %s", n, "from, to");
        }
        if (!from || !to || !is_number(from) || !is_number(to))
            return fail(ctx, s, "'sizes' group needs numbers %s and %s", "from", "to");
        double a = number(from), b = number(to);
        if (check_size(ctx, from, a) || check_size(ctx, to, b))
            return CDSE_EINVAL;
        if (a > b)
            return fail(ctx, s, "'sizes': from is larger than to%s%s", "", "");
        for (double v = a; v <= b; v *= 2) {
            if (plan->n_sizes == CDSE_PLAN_MAX_SIZES)
                return fail(ctx, s, "'sizes': more than %s sizes%s", "64", "");
            plan->sizes[plan->n_sizes++] = (int64_t)v;
        }
        return 0;
    }
    if (!config_setting_is_array(s) && !config_setting_is_list(s))
        return fail(ctx, s, "'sizes' must be a list of byte counts or { from = B; to = B; }%s%s",
                    "", "");
    int n = config_setting_length(s);
    if (n == 0 || n > CDSE_PLAN_MAX_SIZES)
        return fail(ctx, s, "'sizes': give 1 to %s sizes%s", "64", "");
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (!is_number(e))
            return fail(ctx, e, "'sizes': element %s is not a number%s", "", "");
        if (check_size(ctx, e, number(e)))
            return CDSE_EINVAL;
        plan->sizes[plan->n_sizes++] = (int64_t)number(e);
    }
    qsort(plan->sizes, (size_t)plan->n_sizes, sizeof plan->sizes[0], cmp_i64);
    return 0;
}

static int shape_int(const plan_ctx *ctx, const config_setting_t *e, const char *key, int min,
                     int *out)
{
    const config_setting_t *s = config_setting_get_member(e, key);
    if (s == NULL)
        return 1;
    char allowed[64];
    snprintf(allowed, sizeof allowed, "%d to %d (the number of ranks)", min, ctx->world_size);
    if (config_setting_type(s) != CONFIG_TYPE_INT && config_setting_type(s) != CONFIG_TYPE_INT64)
        return fail(ctx, s, "shape '%s' must be an integer; allowed: %s", key, allowed);
    int64_t v = config_setting_get_int64(s);
    if (v < min || v > ctx->world_size) {
        char what[128];
        snprintf(what, sizeof what, "shape %s = %lld is %s", key, (long long)v,
                 v < min ? "too small" : "larger than the world");
        if (v > ctx->world_size)
            snprintf(what + strlen(what), sizeof what - strlen(what), " (%d ranks)",
                     ctx->world_size);
        return fail(ctx, s, "%s; allowed: %s", what, allowed);
    }
    *out = (int)v;
    return 0;
}

static int parse_shape(const plan_ctx *ctx, const config_setting_t *e, cdse_probe_shape *shape)
{
    static const char *const shape_keys[] = {"kind", "group", "stride"};
    char allowed[128];
    if (!config_setting_is_group(e))
        return fail(ctx, e, "each shape is a group { kind = ...; group = G; stride = S; }%s%s", "",
                    "");
    for (int i = 0; i < config_setting_length(e); i++) {
        const char *n = config_setting_name(config_setting_get_elem(e, (unsigned)i));
        if (find_name(shape_keys, 3, n) < 0)
            return fail(ctx, config_setting_get_elem(e, (unsigned)i),
                        "shape: unknown key '%s'; allowed: %s", n, "kind, group, stride");
    }
    join_names(shape_names, CDSE_SHAPE_COUNT, allowed, sizeof allowed);
    const char *kind = NULL;
    if (!config_setting_lookup_string(e, "kind", &kind))
        return fail(ctx, e, "shape without a 'kind' string; allowed: %s%s", allowed, "");
    shape->kind = find_name(shape_names, CDSE_SHAPE_COUNT, kind);
    shape->line = config_setting_source_line(e);
    if (shape->kind < 0)
        return fail(ctx, config_setting_get_member(e, "kind"),
                    "shape kind '%s' is unknown; allowed: %s", kind, allowed);
    bool grouped = shape->kind == CDSE_SHAPE_CONTIGUOUS || shape->kind == CDSE_SHAPE_STRIDED;
    int rc_group = shape_int(ctx, e, "group", 2, &shape->group);
    if (rc_group < 0)
        return rc_group;
    int rc_stride = shape_int(ctx, e, "stride", 1, &shape->stride);
    if (rc_stride < 0)
        return rc_stride;
    if (grouped && rc_group == 1)
        return fail(ctx, e, "shape '%s' needs 'group' (ranks per group, 2 to %s)", kind,
                    "the number of ranks");
    if (!grouped && rc_group == 0)
        return fail(ctx, config_setting_get_member(e, "group"),
                    "shape '%s' takes no 'group'; it is allowed with %s", kind,
                    "contiguous, strided");
    if (shape->kind != CDSE_SHAPE_STRIDED && rc_stride == 0)
        return fail(ctx, config_setting_get_member(e, "stride"),
                    "shape '%s' takes no 'stride'; it is allowed with %s", kind, "strided");
    if (shape->kind == CDSE_SHAPE_STRIDED && rc_stride == 1)
        shape->stride = ctx->world_size / shape->group; /* DP-like: the group spans the world */
    if (shape->kind != CDSE_SHAPE_STRIDED)
        shape->stride = 1;
    if (grouped && (int64_t)shape->group * shape->stride > ctx->world_size) {
        char what[160];
        snprintf(what, sizeof what,
                 "shape '%s': group %d x stride %d is larger than the world (%d "
                 "ranks)",
                 kind, shape->group, shape->stride, ctx->world_size);
        return fail(ctx, e, "%s; allowed: group x stride <= %s", what, "the number of ranks");
    }
    return 0;
}

static int parse_shapes(const plan_ctx *ctx, const config_setting_t *s, cdse_probe_plan *plan)
{
    if (!config_setting_is_list(s) || config_setting_length(s) == 0)
        return fail(ctx, s, "'shapes' must be a non-empty list ( { kind = ...; }, ... )%s%s", "",
                    "");
    if (config_setting_length(s) > CDSE_PLAN_MAX_SHAPES)
        return fail(ctx, s, "'shapes': at most %s shapes%s", "16", "");
    plan->n_shapes = 0;
    for (int i = 0; i < config_setting_length(s); i++) {
        int rc =
            parse_shape(ctx, config_setting_get_elem(s, (unsigned)i), &plan->shape[plan->n_shapes]);
        if (rc)
            return rc;
        plan->n_shapes++;
    }
    return 0;
}

static int parse_scalar(const plan_ctx *ctx, const config_setting_t *s, const plan_key *key,
                        cdse_probe_plan *plan)
{
    char *field = (char *)plan + key->offset;
    char range[96];
    snprintf(range, sizeof range, "%g to %g", key->min, key->max);
    switch (key->kind) {
    case PK_STRING: {
        const char *v = config_setting_get_string(s);
        if (v == NULL || strlen(v) == 0 || strlen(v) >= CDSE_NAME_MAX)
            return fail(ctx, s, "'%s' must be a string of 1 to %s characters", key->name, "47");
        snprintf(field, CDSE_NAME_MAX, "%s", v);
        return 0;
    }
    case PK_INT: {
        int t = config_setting_type(s);
        if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
            return fail(ctx, s, "'%s' must be an integer; allowed: %s", key->name, range);
        int64_t v = config_setting_get_int64(s);
        if (v < key->min || v > key->max)
            return fail(ctx, s, "'%s' is out of range; allowed: %s", key->name, range);
        *(int *)field = (int)v;
        return 0;
    }
    case PK_FLOAT: {
        if (!is_number(s))
            return fail(ctx, s, "'%s' must be a number; allowed: %s", key->name, range);
        double v = number(s);
        if (v < key->min || v > key->max)
            return fail(ctx, s, "'%s' is out of range; allowed: %s", key->name, range);
        *(double *)field = v;
        return 0;
    }
    case PK_BOOL:
        if (config_setting_type(s) != CONFIG_TYPE_BOOL)
            return fail(ctx, s, "'%s' must be true or false%s", key->name, "");
        *(bool *)field = config_setting_get_bool(s);
        return 0;
    case PK_COLLS: {
        const char *coll_names[CDSE_COLL_COUNT]; /* cdse_coll_table's */
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            coll_names[c] = cdse_coll_name(c);
        return parse_name_list(ctx, s, key, coll_names, CDSE_COLL_COUNT, (bool *)field);
    }
    case PK_DTYPES:
        return parse_name_list(ctx, s, key, dtype_names, CDSE_PDT_COUNT, (bool *)field);
    case PK_SIZES:
        return parse_sizes(ctx, s, plan);
    case PK_SHAPES:
        return parse_shapes(ctx, s, plan);
    default:
        return fail(ctx, s, "internal: key '%s' has no parser%s", key->name, "");
    }
}

static void plan_defaults(cdse_probe_plan *plan, const char *path, int world_size)
{
    memset(plan, 0, sizeof *plan);
    snprintf(plan->name, sizeof plan->name, "probe");
    snprintf(plan->path, sizeof plan->path, "%s", path);
    plan->dtype[CDSE_PDT_FLOAT] = true;
    plan->n_shapes = 1;
    plan->shape[0] = (cdse_probe_shape){CDSE_SHAPE_WORLD, world_size, 1, 0};
    plan->warmup = 5;
    plan->iterations_min = 10;
    plan->iterations_max = 1000;
    plan->time_budget_ms = 200;
    plan->check = false;
    plan->reduce_local = true;
}

static int plan_parse(const plan_ctx *ctx, config_t *cfg, cdse_probe_plan *plan)
{
    const config_setting_t *root = config_root_setting(cfg);
    bool seen[sizeof plan_keys / sizeof plan_keys[0]] = {false};
    char allowed[512] = "";
    for (int k = 0; k < n_plan_keys; k++) {
        strncat(allowed, plan_keys[k].name, sizeof allowed - strlen(allowed) - 1);
        if (k + 1 < n_plan_keys)
            strncat(allowed, ", ", sizeof allowed - strlen(allowed) - 1);
    }
    for (int i = 0; i < config_setting_length(root); i++) {
        const config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
        const char *name = config_setting_name(s);
        int k = 0;
        while (k < n_plan_keys && strcmp(plan_keys[k].name, name) != 0)
            k++;
        if (k == n_plan_keys)
            return fail(ctx, s, "unknown key '%s'; allowed: %s", name, allowed);
        seen[k] = true;
        int rc = parse_scalar(ctx, s, &plan_keys[k], plan);
        if (rc)
            return rc;
    }
    for (int k = 0; k < n_plan_keys; k++)
        if (plan_keys[k].default_text == NULL && !seen[k])
            return fail(ctx, NULL, "missing key '%s': %s", plan_keys[k].name, plan_keys[k].help);
    if (plan->iterations_min > plan->iterations_max)
        return fail(ctx, NULL, "iterations_min is larger than iterations_max%s%s", "", "");
    return 0;
}

int cdse_plan_load_text(const char *text, const char *path, int world_size, cdse_probe_plan *plan,
                        cdse_diag *diag)
{
    plan_ctx ctx = {path, world_size, diag};
    plan_defaults(plan, path, world_size);
    config_t cfg;
    config_init(&cfg);
    config_set_options(&cfg, 0); /* no auto-conversion: an int where a float is expected is fine
                                    through number(), the reverse is an error */
    int rc = 0;
    if (config_read_string(&cfg, text) != CONFIG_TRUE) {
        cdse_diag_set(diag, "%s:%d: syntax error: %s", path, config_error_line(&cfg),
                      config_error_text(&cfg));
        rc = CDSE_EINVAL;
    } else {
        rc = plan_parse(&ctx, &cfg, plan);
    }
    config_destroy(&cfg);
    return rc;
}

int cdse_plan_load_file(const char *path, int world_size, cdse_probe_plan *plan, cdse_diag *diag)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        cdse_diag_set(diag, "%s: cannot open: %s", path, strerror(errno));
        return CDSE_EIO;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text == NULL || fread(text, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(text);
        cdse_diag_set(diag, "%s: cannot read", path);
        return CDSE_EIO;
    }
    text[n] = '\0';
    fclose(f);
    int rc = cdse_plan_load_text(text, path, world_size, plan, diag);
    free(text);
    return rc;
}

void cdse_plan_print_keys(FILE *out)
{
    static const char *const kind_names[] = {"string", "int",  "number", "bool",
                                             "list",   "list", "sizes",  "shapes"};
    fprintf(out, "# %-15s %-7s %-14s %-26s %s\n", "key", "type", "range", "default", "meaning");
    for (int k = 0; k < n_plan_keys; k++) {
        const plan_key *key = &plan_keys[k];
        char range[64] = "";
        if (key->kind == PK_INT || key->kind == PK_FLOAT || key->kind == PK_SIZES)
            snprintf(range, sizeof range, "%.10g..%.10g", key->min, key->max);
        fprintf(out, "  %-15s %-7s %-14s %-26s %s\n", key->name, kind_names[key->kind], range,
                key->default_text ? key->default_text : "(required)", key->help);
    }
}
