/* Probe plans: libconfig text -> validated cdse_probe_plan, on the key-table engine of keys.h
 * (one error shape, the 2^31 wrap guard, the size and NUL checks of reading files). One key
 * table drives parsing, defaults, the rejection of unknown keys and `clusterdse probe --help`.
 * No MPI. */
#include "clusterdse/config/probe_plan.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/model/collective.h"
#include "keys.h"

static const char *const shape_names[CDSE_SHAPE_COUNT + 1] = {"world",      "node",    "per_node",
                                                              "contiguous", "strided", NULL};
static const char *const dtype_names[CDSE_PDT_COUNT + 1] = {"float", "double", "int32", "uint8",
                                                            NULL};
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

static int find_name(const char *const *names, const char *name)
{
    for (int i = 0; names[i] != NULL; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int cdse_probe_coll_parse(const char *name)
{
    return cdse_coll_parse(name);
}

/* ------------------------------------------------------------------------------------------ */
/* Sizes: a list of byte counts, or powers of two { from = B; to = B; }                      */

#define SIZES_ALLOWED                                                                              \
    "a list of 1 to 64 whole byte counts from 1 to 1073741824 (1 GiB), or powers of two "          \
    "{ from = B; to = B; }"

typedef struct size_range {
    double from, to;
} size_range;

static const key_spec range_keys[] = {
    {.name = "from",
     .type = KEY_FLOAT,
     .offset = offsetof(size_range, from),
     .min = 1,
     .max = (double)CDSE_PLAN_MAX_BYTES,
     .required = true,
     .def_text = "required",
     .help = "smallest size (bytes)"},
    {.name = "to",
     .type = KEY_FLOAT,
     .offset = offsetof(size_range, to),
     .min = 1,
     .max = (double)CDSE_PLAN_MAX_BYTES,
     .required = true,
     .def_text = "required",
     .help = "largest size (bytes): from, 2 from, 4 from, ... up to this"},
};
static const key_table range_table = {"sizes", range_keys,
                                      (int)(sizeof range_keys / sizeof range_keys[0])};

/* One size element: whole bytes within the bounds of `sizes`. */
static const key_spec size_elem = {
    .name = "sizes", .type = KEY_FLOAT, .min = 1, .max = (double)CDSE_PLAN_MAX_BYTES};

static int check_whole(parse_ctx *ctx, const config_setting_t *key, const config_setting_t *at,
                       double v)
{
    if (v == (double)(int64_t)v)
        return 0;
    return cdse__key_fail(ctx, key, NULL, at, SIZES_ALLOWED, "%.15g is not a whole number of bytes",
                          v);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int parse_size_range(parse_ctx *ctx, const config_setting_t *setting, cdse_probe_plan *plan)
{
    size_range r;
    int rc = cdse__parse_group(ctx, setting, &range_table, &r, true);
    const config_setting_t *from = config_setting_get_member(setting, "from");
    const config_setting_t *to = config_setting_get_member(setting, "to");
    if (rc == 0)
        rc = check_whole(ctx, from, from, r.from);
    if (rc == 0)
        rc = check_whole(ctx, to, to, r.to);
    if (rc == 0 && r.from > r.to)
        rc = cdse__key_fail(ctx, setting, "from", from, "from <= to",
                            "%.15g is larger than to (%.15g)", r.from, r.to);
    for (double v = r.from; rc == 0 && v <= r.to; v *= 2) /* at most 31 sizes up to 2^30 */
        plan->sizes[plan->n_sizes++] = (int64_t)v;
    return rc;
}

static int parse_sizes(parse_ctx *ctx, const config_setting_t *setting, void *target,
                       const key_spec *key)
{
    (void)key;
    cdse_probe_plan *plan = target;
    plan->n_sizes = 0;
    if (config_setting_is_group(setting))
        return parse_size_range(ctx, setting, plan);
    int n = config_setting_is_aggregate(setting) ? config_setting_length(setting) : 0;
    if (n == 0 || n > CDSE_PLAN_MAX_SIZES)
        return cdse__key_fail(ctx, setting, NULL, setting, SIZES_ALLOWED, "%s",
                              n == 0 ? "not a non-empty list" : "more than 64 sizes");
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = config_setting_get_elem(setting, (unsigned)i);
        double v = 0;
        const char *text = NULL;
        int rc = cdse__read_scalar(ctx, &size_elem, setting, elem, &v, &text);
        if (rc == 0)
            rc = check_whole(ctx, setting, elem, v);
        if (rc != 0)
            return rc;
        plan->sizes[plan->n_sizes++] = (int64_t)v;
    }
    qsort(plan->sizes, (size_t)plan->n_sizes, sizeof plan->sizes[0], cmp_i64);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Collectives and datatypes: non-empty lists of names                                        */

static int parse_names(parse_ctx *ctx, const config_setting_t *setting, void *target,
                       const key_spec *key)
{
    bool *out = (bool *)((char *)target + key->offset);
    int n = config_setting_is_array(setting) || config_setting_is_list(setting)
                ? config_setting_length(setting)
                : 0;
    if (n == 0)
        return cdse__key_fail(ctx, setting, NULL, setting, key->type_text,
                              "not a non-empty list of names");
    int n_names = 0;
    while (key->choices[n_names] != NULL)
        n_names++;
    memset(out, 0, sizeof(bool) * (size_t)n_names);
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = config_setting_get_elem(setting, (unsigned)i);
        const char *name = config_setting_get_string(elem);
        int idx = name != NULL ? find_name(key->choices, name) : -1;
        if (idx < 0)
            return cdse__key_fail(ctx, setting, NULL, elem, key->type_text, "unknown value \"%s\"",
                                  name != NULL ? name : "(not a string)");
        out[idx] = true;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Shapes                                                                                     */

typedef struct shape_input {
    int kind, group, stride; /* group, stride: 0 when not given; CDSE_PLAN_NODE / _WORLD */
} shape_input;

/* group / stride: a whole number >= key->arg, or "node" / "world" (resolved by the runner). */
static int parse_count(parse_ctx *ctx, const config_setting_t *setting, void *target,
                       const key_spec *key)
{
    int *out = (int *)((char *)target + key->offset);
    char allowed[96];
    snprintf(allowed, sizeof allowed, "an integer from %d to 2^31-1, \"node\" or \"world\"",
             key->arg);
    int type = config_setting_type(setting);
    if (type == CONFIG_TYPE_STRING) {
        const char *v = config_setting_get_string(setting);
        if (strcmp(v, "node") == 0 || strcmp(v, "world") == 0) {
            *out = strcmp(v, "node") == 0 ? CDSE_PLAN_NODE : CDSE_PLAN_WORLD;
            return 0;
        }
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "'%s' is not a count", v);
    }
    if (type == CONFIG_TYPE_INT && config_setting_get_int(setting) >= key->arg) {
        *out = config_setting_get_int(setting);
        return 0;
    }
    return cdse__key_fail(ctx, setting, NULL, setting, allowed, "out of range");
}

static const key_spec shape_keys[] = {
    {.name = "kind",
     .type = KEY_ENUM,
     .offset = offsetof(shape_input, kind),
     .choices = shape_names,
     .required = true,
     .def_text = "required",
     .help = "world: every rank; node: the ranks of each node; per_node: the first rank of every "
             "node; contiguous: groups of consecutive ranks; strided: groups of ranks stride "
             "apart"},
    {.name = "group",
     .type = KEY_CUSTOM,
     .offset = offsetof(shape_input, group),
     .parse = parse_count,
     .arg = 2,
     .type_text = "int or \"node\", \"world\"",
     .def_text = "contiguous, strided: required",
     .help = "ranks per group (contiguous, strided only), at most the number of ranks; \"node\": "
             "the ranks per node (MPI_Comm_split_type shared), \"world\": every rank"},
    {.name = "stride",
     .type = KEY_CUSTOM,
     .offset = offsetof(shape_input, stride),
     .parse = parse_count,
     .arg = 1,
     .type_text = "int or \"node\", \"world\"",
     .def_text = "ranks / group",
     .help = "distance between group members (strided only); group x stride <= ranks (a shape "
             "with \"node\" or \"world\" that does not fit the allocation is skipped)"},
};
static const key_table shape_table = {"shapes[]", shape_keys,
                                      (int)(sizeof shape_keys / sizeof shape_keys[0])};

#define SHAPES_ALLOWED                                                                             \
    "a non-empty list of at most 16 groups ( { kind = \"...\"; group = G; stride = S; }, ... )"

/* The rules that need the world size and the kind: which keys a kind takes, and fitting. */
static int shape_fits(parse_ctx *ctx, const config_setting_t *elem, const shape_input *in,
                      cdse_probe_shape *shape)
{
    const char *kind = shape_names[in->kind];
    const config_setting_t *group = config_setting_get_member(elem, "group");
    const config_setting_t *stride = config_setting_get_member(elem, "stride");
    bool grouped = in->kind == CDSE_SHAPE_CONTIGUOUS || in->kind == CDSE_SHAPE_STRIDED;
    char allowed[96];
    snprintf(allowed, sizeof allowed, "2 to %d (the number of ranks)", ctx->world_size);
    if (grouped && group == NULL)
        return cdse__key_fail(ctx, elem, "group", elem, allowed, "missing (shape \"%s\" needs it)",
                              kind);
    if (!grouped && group != NULL)
        return cdse__key_fail(ctx, group, NULL, group, "group only with contiguous, strided",
                              "shape \"%s\" takes no group", kind);
    if (in->kind != CDSE_SHAPE_STRIDED && stride != NULL)
        return cdse__key_fail(ctx, stride, NULL, stride, "stride only with strided",
                              "shape \"%s\" takes no stride", kind);
    if (grouped && in->group > ctx->world_size)
        return cdse__key_fail(ctx, group, NULL, group, allowed,
                              "group = %d is larger than the world (%d ranks)", in->group,
                              ctx->world_size);
    shape->kind = in->kind;
    shape->group = in->group;
    bool symbolic = in->group < 0 || (stride != NULL && in->stride < 0);
    shape->stride = in->kind != CDSE_SHAPE_STRIDED ? 1
                    : stride != NULL               ? in->stride
                    : in->group < 0                ? 0 /* the runner: ranks / group */
                                                   : ctx->world_size / in->group;
    shape->line = config_setting_source_line(elem);
    if (grouped && !symbolic && (int64_t)shape->group * shape->stride > ctx->world_size)
        return cdse__key_fail(ctx, elem, NULL, stride != NULL ? stride : elem,
                              "group x stride <= the number of ranks",
                              "group %d x stride %d is larger than the world (%d ranks)",
                              shape->group, shape->stride, ctx->world_size);
    return 0;
}

static int parse_shapes(parse_ctx *ctx, const config_setting_t *setting, void *target,
                        const key_spec *key)
{
    (void)key;
    cdse_probe_plan *plan = target;
    int n = config_setting_is_list(setting) ? config_setting_length(setting) : 0;
    if (n == 0 || n > CDSE_PLAN_MAX_SHAPES)
        return cdse__key_fail(ctx, setting, NULL, setting, SHAPES_ALLOWED, "%s",
                              n == 0 ? "not a non-empty list of groups" : "more than 16 shapes");
    plan->n_shapes = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = config_setting_get_elem(setting, (unsigned)i);
        shape_input in = {0, 0, 0};
        int rc = cdse__parse_group(ctx, elem, &shape_table, &in, true);
        if (rc == 0)
            rc = shape_fits(ctx, elem, &in, &plan->shape[plan->n_shapes]);
        if (rc != 0)
            return rc;
        plan->n_shapes++;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The plan                                                                                   */

#define PLAN_INT(key, field, lo, hi, dflt, text)                                                   \
    {                                                                                              \
        .name = key, .type = KEY_INT, .offset = offsetof(cdse_probe_plan, field), .min = lo,       \
        .max = hi, .has_default = true, .def = dflt, .def_text = #dflt, .help = text               \
    }

static const key_spec plan_keys[] = {
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_probe_plan, name),
     .size = CDSE_NAME_MAX,
     .def_text = "\"probe\"",
     .help = "label stored with the probes"},
    {.name = "collectives",
     .type = KEY_CUSTOM,
     .offset = offsetof(cdse_probe_plan, coll),
     .parse = parse_names,
     .choices = cdse_coll_names, /* cdse_coll_table's */
     .required = true,
     .def_text = "required",
     .type_text = "a non-empty list of: allreduce, allgather, reduce_scatter, alltoall, sendrecv",
     .help = "the collectives to measure"},
    {.name = "dtypes",
     .type = KEY_CUSTOM,
     .offset = offsetof(cdse_probe_plan, dtype),
     .parse = parse_names,
     .choices = dtype_names,
     .def_text = "[\"float\"]",
     .type_text = "a non-empty list of: float, double, int32, uint8",
     .help = "the datatypes to measure"},
    {.name = "sizes",
     .type = KEY_CUSTOM,
     .parse = parse_sizes,
     .required = true,
     .def_text = "required",
     .type_text = SIZES_ALLOWED,
     .help = "message bytes, as cdse_allreduce_time & co. count them"},
    {.name = "shapes",
     .type = KEY_CUSTOM,
     .parse = parse_shapes,
     .def_text = "( { kind = \"world\"; } )",
     .type_text = SHAPES_ALLOWED,
     .help = "communicator shapes (keys: shapes[])"},
    PLAN_INT("warmup", warmup, 0, 10000, 5, "untimed iterations before each measurement"),
    PLAN_INT("iterations_min", iterations_min, 1, 1000000, 10,
             "fewest timed iterations per measurement"),
    PLAN_INT("iterations_max", iterations_max, 1, 1000000, 1000,
             "most timed iterations per measurement"),
    {.name = "time_budget_ms",
     .type = KEY_FLOAT,
     .offset = offsetof(cdse_probe_plan, time_budget_ms),
     .min = 0.001,
     .max = 3.6e6,
     .has_default = true,
     .def = 200,
     .def_text = "200",
     .help = "target time per measurement; sets the iteration count"},
    {.name = "check",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_probe_plan, check),
     .has_default = true,
     .def = 0,
     .def_text = "false",
     .help = "verify every result (outside the timed region)"},
    {.name = "reduce_local",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_probe_plan, reduce_local),
     .has_default = true,
     .def = 1,
     .def_text = "true",
     .help = "measure the local reduction rate (MPI_Reduce_local)"},
};
static const key_table plan_table = {"", plan_keys, (int)(sizeof plan_keys / sizeof plan_keys[0])};

/* Defaults the table cannot express (a string, the name lists, the world shape). */
static void plan_defaults(cdse_probe_plan *plan, const char *path, int world_size)
{
    memset(plan, 0, sizeof *plan);
    snprintf(plan->name, sizeof plan->name, "probe");
    snprintf(plan->path, sizeof plan->path, "%s", path);
    plan->dtype[CDSE_PDT_FLOAT] = true;
    plan->n_shapes = 1;
    plan->shape[0] = (cdse_probe_shape){CDSE_SHAPE_WORLD, world_size, 1, 0};
}

int cdse_plan_load_text(const char *text, const char *path, int world_size, cdse_probe_plan *plan,
                        cdse_diag *diag)
{
    plan_defaults(plan, path, world_size);
    parse_ctx ctx = {.file = path, .job_path = path, .diag = diag, .world_size = world_size};
    config_t cfg;
    int rc = cdse__read_config(&ctx, text, &cfg);
    if (rc != 0)
        return rc;
    const config_setting_t *root = config_root_setting(&cfg);
    rc = cdse__parse_group(&ctx, root, &plan_table, plan, true);
    if (rc == 0 && plan->iterations_min > plan->iterations_max) {
        const config_setting_t *at = config_setting_get_member(root, "iterations_min");
        if (at == NULL) /* the default 10 against a smaller iterations_max */
            at = config_setting_get_member(root, "iterations_max");
        rc = cdse__key_fail(&ctx, at, NULL, at, "iterations_min <= iterations_max",
                            "%d is larger than iterations_max (%d)", plan->iterations_min,
                            plan->iterations_max);
    }
    config_destroy(&cfg);
    return rc;
}

int cdse_plan_read_file(const char *path, char **text, cdse_diag *diag)
{
    return cdse__read_file_diag(path, "probe plan", text, diag);
}

int cdse_plan_load_file(const char *path, int world_size, cdse_probe_plan *plan, cdse_diag *diag)
{
    char *text;
    int rc = cdse_plan_read_file(path, &text, diag);
    if (rc != 0)
        return rc;
    rc = cdse_plan_load_text(text, path, world_size, plan, diag);
    free(text);
    return rc;
}

void cdse_plan_print_keys(FILE *out)
{
    fprintf(out, "# %-42s %-30s %-24s %s\n", "key", "type", "default", "meaning");
    cdse__print_key_table(out, &plan_table);
    cdse__print_key_table(out, &range_table);
    cdse__print_key_table(out, &shape_table);
}
