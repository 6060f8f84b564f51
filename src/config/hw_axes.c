/* Hardware axes: a numeric key of a system entry given as a list becomes an axis of the design
 * space (space axes CDSE_AXIS_HW0...). The list is taken out of the libconfig tree and replaced
 * by its first value, so that the entry parses with the ordinary profile tables; the values are
 * checked here against the key's bounds and, applied to the parsed profile, by
 * cdse_system_check. */
#include "hw_axes.h"

#include <math.h>
#include <string.h>

/* One sweepable key: a row of the hardware-field table (CDSE_HW_KEYS, model/hardware.h), with
 * where it sits in a system entry and the values an axis of it may take. */
typedef cdse_hw_info hw_spec;

static int hw_spec_key(const hw_spec *s)
{
    return (int)(s - cdse_hw_keys);
}

/* The row of key `name` in section `group` (NULL: top level), network level `level` (0 outside
 * `network`), or NULL when that key cannot be swept. */
static const hw_spec *hw_spec_find(const char *group, int level, const char *name)
{
    for (int i = 0; i < CDSE_HW_COUNT; i++) {
        const hw_spec *s = &cdse_hw_keys[i];
        bool same_group = (s->group == NULL) == (group == NULL) &&
                          (group == NULL || strcmp(s->group, group) == 0);
        if (same_group && (s->level < 0 ? 0 : s->level) == level && strcmp(s->name, name) == 0)
            return s;
    }
    return NULL;
}

/* Appends the keys that may be lists to `list` (`used` bytes of `size` taken), for messages:
 * "peak_tflops.bf16, ..., network[0].bandwidth, ...". */
static void hw_sweepable(char *list, size_t size, size_t used)
{
    for (int i = 0; i < CDSE_HW_COUNT && used < size; i++) {
        const hw_spec *s = &cdse_hw_keys[i];
        char level[16] = "";
        if (s->level >= 0)
            snprintf(level, sizeof level, "[%d]", s->level);
        used += (size_t)snprintf(list + used, size - used, "%s%s%s%s%s", i ? ", " : "",
                                 s->group ? s->group : "", level, s->group ? "." : "", s->name);
    }
}

static void hw_allowed(const hw_spec *s, char *buf, size_t size)
{
    snprintf(buf, size, "a list of 1 to %d distinct %s %s %g and <= %g", CDSE_AXIS_MAX_VALUES,
             s->integer ? "integers" : "numbers", s->min_open ? ">" : ">=", s->min, s->max);
}

/* Reads the values of list `list` for `spec` into `axis`. */
static int hw_read_values(parse_ctx *ctx, const config_setting_t *list, const hw_spec *spec,
                          cdse_hw_axis *axis)
{
    char allowed[256];
    hw_allowed(spec, allowed, sizeof allowed);
    int n = config_setting_length(list);
    if (n < 1 || n > CDSE_AXIS_MAX_VALUES)
        return cdse__key_fail(ctx, list, NULL, list, allowed, "a hardware axis of %d values", n);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, i);
        int type = config_setting_type(e);
        bool number = type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64 ||
                      (type == CONFIG_TYPE_FLOAT && !spec->integer);
        double v = type == CONFIG_TYPE_FLOAT   ? config_setting_get_float(e)
                   : type == CONFIG_TYPE_INT64 ? (double)config_setting_get_int64(e)
                                               : (double)config_setting_get_int(e);
        bool in_range =
            isfinite(v) && (spec->min_open ? v > spec->min : v >= spec->min) && v <= spec->max;
        if (!number || !in_range)
            return cdse__key_fail(ctx, list, NULL, e, allowed, "element %d is not allowed", i + 1);
        for (int j = 0; j < i; j++)
            if (axis->value[j] == v)
                return cdse__key_fail(ctx, list, NULL, e, allowed, "the value %g appears twice", v);
        axis->value[i] = v;
    }
    axis->n = n;
    return 0;
}

/* Takes list `list` (key `name` of `group`/`level`) out of the tree as an axis of `system`. */
static int hw_take(parse_ctx *ctx, config_setting_t *list, const char *group, int level, int system,
                   cdse_job *job)
{
    const char *name = config_setting_name(list);
    const hw_spec *spec = hw_spec_find(group, level, name);
    if (spec == NULL) {
        char allowed[1024];
        int head = snprintf(allowed, sizeof allowed,
                            "a single value; the keys that may be lists (hardware axes): ");
        hw_sweepable(allowed, sizeof allowed, (size_t)head);
        return cdse__key_fail(ctx, list, NULL, list, allowed,
                              "a list on a key that cannot be swept");
    }
    if (job->n_hw_axes >= CDSE_MAX_HW_AXES)
        return cdse__key_fail(ctx, list, NULL, list, "at most 8 hardware axes in a job",
                              "a ninth hardware axis");
    cdse_hw_axis *axis = &job->hw_axis[job->n_hw_axes];
    memset(axis, 0, sizeof *axis);
    axis->key = hw_spec_key(spec);
    axis->system = system;
    int rc = hw_read_values(ctx, list, spec, axis);
    if (rc != 0)
        return rc;
    for (int h = 0; h < job->n_hw_axes; h++)
        if (job->hw_axis[h].key == hw_spec_key(spec) && job->hw_axis[h].system == system)
            return cdse__key_fail(ctx, list, NULL, list, "one list per key", "given twice");
    int slot = job->n_hw_axes++;
    cdse__setting_path(list, ctx->hw_sources->axis[slot].path,
                       sizeof ctx->hw_sources->axis[slot].path);
    ctx->hw_sources->axis[slot].file = config_setting_source_file(list);
    ctx->hw_sources->axis[slot].line = (int)config_setting_source_line(list);
    char key[64]; /* the name dies with the list */
    snprintf(key, sizeof key, "%s", name);
    config_setting_t *parent = config_setting_parent(list);
    unsigned index = (unsigned)config_setting_index(list);
    config_setting_remove_elem(parent, index);
    config_setting_t *scalar =
        config_setting_add(parent, key, spec->integer ? CONFIG_TYPE_INT : CONFIG_TYPE_FLOAT);
    if (scalar == NULL)
        return cdse__key_fail(ctx, parent, key, parent, "a key libconfig can hold",
                              "could not replace the list by its first value");
    if (spec->integer)
        config_setting_set_int(scalar, (int)axis->value[0]);
    else
        config_setting_set_float(scalar, axis->value[0]);
    return 0;
}

static bool hw_is_list(const config_setting_t *s)
{
    return config_setting_is_array(s) || config_setting_is_list(s);
}

/* The lists among the members of `group` (a system entry, peak_tflops, a level, the tier). */
static int hw_scan(parse_ctx *ctx, config_setting_t *group, const char *where, int level,
                   int system, cdse_job *job)
{
    for (int i = 0; i < config_setting_length(group); i++) {
        config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        if (!hw_is_list(s) || name == NULL)
            continue;
        if (where == NULL &&
            (strcmp(name, "network") == 0 || strcmp(name, "pool") == 0 ||
             strncmp(name, "gemm_efficiency", 15) == 0 || strcmp(name, "attention_seq_scale") == 0))
            continue;
        int rc = hw_take(ctx, s, where, level, system, job);
        if (rc != 0)
            return rc;
        i = -1; /* the tree changed: scan the group again (taken keys are scalars now) */
    }
    return 0;
}

int cdse__hw_extract(parse_ctx *ctx, config_setting_t *entry, int system, cdse_job *job)
{
    if (!config_setting_is_group(entry) || config_setting_get_member(entry, "pool") != NULL)
        return 0;
    int rc = hw_scan(ctx, entry, NULL, 0, system, job);
    config_setting_t *sub = config_setting_get_member(entry, "peak_tflops");
    if (rc == 0 && sub != NULL && config_setting_is_group(sub))
        rc = hw_scan(ctx, sub, "peak_tflops", 0, system, job);
    sub = config_setting_get_member(entry, "memory_tier");
    if (rc == 0 && sub != NULL && config_setting_is_group(sub))
        rc = hw_scan(ctx, sub, "memory_tier", 0, system, job);
    sub = config_setting_get_member(entry, "cost");
    if (rc == 0 && sub != NULL && config_setting_is_group(sub))
        rc = hw_scan(ctx, sub, "cost", 0, system, job);
    for (int g = 0; g < 2; g++) { /* goodput groups (issue 29) */
        const char *name = g == 0 ? "storage" : "reliability";
        sub = config_setting_get_member(entry, name);
        if (rc == 0 && sub != NULL && config_setting_is_group(sub))
            rc = hw_scan(ctx, sub, name, 0, system, job);
    }
    sub = config_setting_get_member(entry, "network");
    for (int l = 0; rc == 0 && sub != NULL && hw_is_list(sub) && l < config_setting_length(sub);
         l++) {
        config_setting_t *level = config_setting_get_elem(sub, (unsigned)l);
        if (config_setting_is_group(level))
            rc = hw_scan(ctx, level, "network", l, system, job);
    }
    return rc;
}

static int hw_fail(parse_ctx *ctx, int h, const char *allowed, const char *what)
{
    cdse_diag_set(ctx->diag, "%s:%d: key '%s': %s; allowed: %s",
                  ctx->hw_sources->axis[h].file != NULL ? ctx->hw_sources->axis[h].file : ctx->file,
                  ctx->hw_sources->axis[h].line > 0 ? ctx->hw_sources->axis[h].line : 1,
                  ctx->hw_sources->axis[h].path, what, allowed);
    return CDSE_EINVAL;
}

/* The key exists in the parsed profile (a network level, a memory tier). */
static bool hw_key_present(const cdse_system *system, int key)
{
    if (key >= CDSE_HW_NET1_BANDWIDTH && key <= CDSE_HW_NET1_SIZE)
        return system->n_levels >= 2;
    if (key == CDSE_HW_TIER_CAPACITY || key == CDSE_HW_TIER_BANDWIDTH)
        return system->tier.attach != CDSE_TIER_NONE;
    return true;
}

/* Axis h at value i (and axis g at value j when g >= 0) applied to the base profile. */
static int hw_check_pair(parse_ctx *ctx, const cdse_job *job, int h, int i, int g, int j)
{
    const cdse_hw_axis *a = &job->hw_axis[h];
    cdse_system system = job->system[a->system];
    cdse_hw_set(&system, a->key, a->value[i]);
    if (g >= 0)
        cdse_hw_set(&system, job->hw_axis[g].key, job->hw_axis[g].value[j]);
    cdse_diag inner;
    inner.msg[0] = '\0';
    if (cdse_system_check(&system, &inner) == 0)
        return 0;
    char what[sizeof inner.msg + 160];
    if (g >= 0)
        snprintf(what, sizeof what, "the value %g with %s = %g: %s", a->value[i],
                 cdse_hw_column(job->hw_axis[g].key), job->hw_axis[g].value[j], inner.msg);
    else
        snprintf(what, sizeof what, "the value %g: %s", a->value[i], inner.msg);
    return hw_fail(ctx, h, "values that give a valid system with every value of the other axes",
                   what);
}

int cdse__hw_check(parse_ctx *ctx, const config_setting_t *systems, const cdse_job *job)
{
    (void)systems;
    /* Axes of different system entries never meet: each applies to its own system only. */
    for (int h = 0; h < job->n_hw_axes; h++) {
        const cdse_hw_axis *a = &job->hw_axis[h];
        if (!hw_key_present(&job->system[a->system], a->key))
            return hw_fail(ctx, h,
                           "network[1] keys on a system with two or more levels, memory_tier "
                           "keys on a system with a memory tier",
                           "the profile has no such level or tier");
        for (int i = 0; i < a->n; i++) {
            int rc = hw_check_pair(ctx, job, h, i, -1, 0);
            for (int g = h + 1; g < job->n_hw_axes && rc == 0; g++)
                for (int j = 0;
                     j < job->hw_axis[g].n && rc == 0 && job->hw_axis[g].system == a->system; j++)
                    rc = hw_check_pair(ctx, job, h, i, g, j);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

/* The axis of `system` whose key is `name` in section `group`/`level`, or NULL. */
static const cdse_hw_axis *hw_axis_at(const cdse_job *job, int system, const char *group, int level,
                                      const char *name)
{
    const hw_spec *spec =
        hw_spec_find(group, group != NULL && strcmp(group, "network") == 0 ? level : 0, name);
    for (int h = 0; spec != NULL && h < job->n_hw_axes; h++)
        if (job->hw_axis[h].system == system && job->hw_axis[h].key == hw_spec_key(spec))
            return &job->hw_axis[h];
    return NULL;
}

static bool hw_integer(int key)
{
    return key >= 0 && key < CDSE_HW_COUNT && cdse_hw_keys[key].integer;
}

/* Prints line `line` ("<indent>name = value;") with the axis's values in place of the value. */
static void hw_print_line(FILE *out, const char *line, size_t len, const cdse_hw_axis *axis)
{
    const char *eq = memchr(line, '=', len);
    fprintf(out, "%.*s= [ ", (int)(eq - line), line);
    for (int i = 0; i < axis->n; i++) {
        fputs(i ? ", " : "", out);
        if (hw_integer(axis->key))
            fprintf(out, "%d", (int)axis->value[i]);
        else
            cdse__print_float(out, axis->value[i]);
    }
    fprintf(out, " ];\n");
}

void cdse__hw_print_body(FILE *out, const char *body, const cdse_job *job, int system)
{
    const char *group = NULL;
    int level = -1;
    for (const char *p = body; *p != '\0';) {
        const char *end = strchr(p, '\n');
        size_t len = end != NULL ? (size_t)(end - p + 1) : strlen(p);
        char name[64] = "";
        const char *q = p + strspn(p, " ");
        sscanf(q, "%63[a-z0-9_]", name);
        bool opens = len >= 3 && (p[len - 2] == '{' || p[len - 2] == '(');
        if (opens && strcmp(name, "peak_tflops") == 0)
            group = "peak_tflops";
        else if (opens && strcmp(name, "memory_tier") == 0)
            group = "memory_tier";
        else if (opens && strcmp(name, "cost") == 0)
            group = "cost";
        else if (opens && strcmp(name, "storage") == 0)
            group = "storage";
        else if (opens && strcmp(name, "reliability") == 0)
            group = "reliability";
        else if (opens && strcmp(name, "network") == 0)
            group = "network", level = -1;
        else if (group != NULL && strcmp(group, "network") == 0 && *q == '{')
            level++;
        else if (group != NULL && strcmp(group, "network") != 0 && *q == '}')
            group = NULL;
        else if (group != NULL && *q == ')')
            group = NULL;
        const cdse_hw_axis *axis = name[0] != '\0' && strchr(q, '=') != NULL && !opens
                                       ? hw_axis_at(job, system, group, level, name)
                                       : NULL;
        if (axis != NULL)
            hw_print_line(out, p, len, axis);
        else
            fwrite(p, 1, len, out);
        p += len;
    }
}

/* ---- cluster sizes per system ------------------------------------------------------------- */

#define SIZE_MAX_GPUS CDSE_MAX_GPUS /* the space.gpus bound (axes.h) */

int cdse__sizes_extract(parse_ctx *ctx, config_setting_t *entry, int system, cdse_job *job)
{
    if (system == 0)
        memset(ctx->hw_sources->size, 0, sizeof ctx->hw_sources->size);
    if (!config_setting_is_group(entry))
        return 0;
    config_setting_t *gpus = config_setting_get_member(entry, "gpus");
    config_setting_t *nodes = config_setting_get_member(entry, "nodes");
    if (gpus != NULL && nodes != NULL)
        return cdse__key_fail(ctx, nodes, NULL, nodes, "gpus or nodes, not both",
                              "given together with gpus");
    config_setting_t *s = gpus != NULL ? gpus : nodes;
    if (s == NULL)
        return 0;
    char allowed[160];
    snprintf(allowed, sizeof allowed, "an integer from 1 to %d, or a list of 1 to %d distinct ones",
             SIZE_MAX_GPUS, CDSE_AXIS_MAX_VALUES);
    bool list = hw_is_list(s);
    int n = list ? config_setting_length(s) : 1;
    if (n < 1 || n > CDSE_AXIS_MAX_VALUES)
        return cdse__key_fail(ctx, s, NULL, s, allowed, "%d values", n);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = list ? config_setting_get_elem(s, (unsigned)i) : s;
        int type = config_setting_type(e);
        long long v = type == CONFIG_TYPE_INT     ? config_setting_get_int(e)
                      : type == CONFIG_TYPE_INT64 ? config_setting_get_int64(e)
                                                  : -1;
        if (v < 1 || v > SIZE_MAX_GPUS)
            return cdse__key_fail(ctx, s, NULL, e, allowed, "element %d is not allowed", i + 1);
        for (int j = 0; j < i; j++)
            if (job->system_gpus[system][j] == v)
                return cdse__key_fail(ctx, s, NULL, e, allowed, "%lld appears twice", v);
        job->system_gpus[system][i] = (int32_t)v;
    }
    ctx->hw_sources->size[system].n = n;
    ctx->hw_sources->size[system].nodes = s == nodes;
    ctx->hw_sources->size[system].at.file = config_setting_source_file(s);
    ctx->hw_sources->size[system].at.line = (int)config_setting_source_line(s);
    cdse__setting_path(s, ctx->hw_sources->size[system].at.path,
                       sizeof ctx->hw_sources->size[system].at.path);
    config_setting_remove_elem(entry, (unsigned)config_setting_index(s));
    return 0;
}

static int size_fail(parse_ctx *ctx, int s, const char *allowed, const char *what)
{
    cdse_diag_set(ctx->diag, "%s:%d: key '%s': %s; allowed: %s",
                  ctx->hw_sources->size[s].at.file != NULL ? ctx->hw_sources->size[s].at.file
                                                           : ctx->file,
                  ctx->hw_sources->size[s].at.line > 0 ? ctx->hw_sources->size[s].at.line : 1,
                  ctx->hw_sources->size[s].at.path, what, allowed);
    return CDSE_EINVAL;
}

int cdse__sizes_check(parse_ctx *ctx, const config_setting_t *systems, cdse_job *job)
{
    int first = -1;
    for (int s = 0; s < ctx->axis_systems; s++)
        if (ctx->hw_sources->size[s].n > 0 && first < 0)
            first = s;
    job->n_system_gpus = 0;
    if (first < 0)
        return 0;
    const char *allowed = "gpus or nodes in every system entry, each with the same number of "
                          "values, or in none";
    for (int s = 0; s < ctx->axis_systems; s++) {
        if (ctx->hw_sources->size[s].n == 0)
            return cdse__key_fail(ctx, systems, NULL, systems, allowed,
                                  "system '%s' gives no gpus or nodes, system '%s' does",
                                  job->system[s].name, job->system[first].name);
        if (ctx->hw_sources->size[s].n != ctx->hw_sources->size[first].n)
            return size_fail(ctx, s, allowed, "a different number of values than the first");
        for (int h = 0; h < job->n_hw_axes && ctx->hw_sources->size[s].nodes; h++)
            if (job->hw_axis[h].key == CDSE_HW_GPUS_PER_NODE)
                return size_fail(ctx, s, "gpus = [ ... ] when gpus_per_node is a hardware axis",
                                 "nodes with a list of gpus_per_node");
        for (int i = 0; i < ctx->hw_sources->size[s].n && ctx->hw_sources->size[s].nodes; i++) {
            long long g = (long long)job->system_gpus[s][i] * job->system[s].gpus_per_node;
            if (g > SIZE_MAX_GPUS)
                return size_fail(ctx, s, "nodes * gpus_per_node <= 1048576", "too many nodes");
            job->system_gpus[s][i] = (int32_t)g;
        }
    }
    job->n_system_gpus = ctx->hw_sources->size[first].n;
    return 0;
}
