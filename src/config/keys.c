/* The key-table engine (keys.h): diagnostics, key tables, scalar values, groups, reading
 * files with the 2^31 wrap guard, and printing values in job-file syntax. */
#define _XOPEN_SOURCE 700

#include "keys.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Diagnostics                                                                                */

/* Key path of a setting: "space.tp", "models[1].heads", "network[0].size". */
void cdse__setting_path(const config_setting_t *setting, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    if (setting == NULL || config_setting_parent(setting) == NULL)
        return;
    cdse__setting_path(config_setting_parent(setting), buf, size);
    size_t len = strlen(buf);
    const char *name = config_setting_name(setting);
    if (name != NULL)
        snprintf(buf + len, size - len, "%s%s", len > 0 ? "." : "", name);
    else
        snprintf(buf + len, size - len, "[%d]", config_setting_index(setting));
}

/* Reports an error on key `key` (plus `.member` when given) at the line of `at`. */

int cdse__key_fail(const parse_ctx *ctx, const config_setting_t *key, const char *member,
                   const config_setting_t *at, const char *allowed, const char *fmt, ...)
{
    char what[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char path[160];
    cdse__setting_path(key, path, sizeof path);
    if (member != NULL) {
        size_t len = strlen(path);
        snprintf(path + len, sizeof path - len, "%s%s", len > 0 ? "." : "", member);
    }
    unsigned line = at != NULL ? (unsigned)config_setting_source_line(at) : 0;
    if (line == 0)
        line = 1;
    const char *file = at != NULL ? config_setting_source_file(at) : NULL;
    if (file == NULL)
        file = ctx->file;
    cdse_diag_set(ctx->diag, "%s:%u: key '%s': %s; allowed: %s", file, line, path, what, allowed);
    return CDSE_EINVAL;
}

const key_spec *cdse__key_find(const key_table *table, const char *name)
{
    for (int i = 0; i < table->n; i++)
        if (strcmp(table->keys[i].name, name) == 0)
            return &table->keys[i];
    return NULL;
}

void cdse__key_names(const key_table *table, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < table->n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "", table->keys[i].name);
}

static void format_bound(double x, char *buf, size_t size)
{
    if (x == INT_MAX_D)
        snprintf(buf, size, "2^31-1");
    else
        snprintf(buf, size, "%.15g", x);
}

/* Parts of the offload mask in bit order (CDSE_OFFLOAD_WEIGHTS = 1, ACTIVATIONS = 2,
 * OPTIMIZER = 4). */
static const char *const offload_parts[] = {"weights", "activations", "optimizer", NULL};

/* The names of a mask key's bits, in bit order, NULL-terminated: the key's choices, or the
 * offload parts when it has none. */
static const char *const *mask_parts(const key_spec *key)
{
    return key->choices != NULL ? key->choices : offload_parts;
}

/* What a key allows, in words: "an integer from 1 to 2^31-1", "one of \"none\", ...". */
void cdse__key_allowed(const key_spec *key, char *buf, size_t size)
{
    char lo[32], hi[32];
    format_bound(key->min, lo, sizeof lo);
    format_bound(key->max, hi, sizeof hi);
    size_t len = 0;
    switch (key->type) {
    case KEY_INT:
        len = (size_t)snprintf(buf, size, "an integer from %s to %s", lo, hi);
        break;
    case KEY_FLOAT:
        len = (size_t)snprintf(buf, size, "a number %s %s and <= %s",
                               key->min_open ? ">" : ">=", lo, hi);
        break;
    case KEY_BOOL:
        len = (size_t)snprintf(buf, size, "true or false");
        break;
    case KEY_STRING:
        len = (size_t)snprintf(buf, size, "a string of 1 to %zu characters", key->size - 1);
        break;
    case KEY_ENUM:
        len = (size_t)snprintf(buf, size, "one of");
        for (int i = 0; key->choices[i] != NULL && len < size; i++)
            len +=
                (size_t)snprintf(buf + len, size - len, "%s \"%s\"", i ? "," : "", key->choices[i]);
        break;
    case KEY_OFFLOAD:
        len = (size_t)snprintf(buf, size, "\"none\", or");
        for (int i = 0; mask_parts(key)[i] != NULL && len < size; i++)
            len += (size_t)snprintf(buf + len, size - len, "%s \"%s\"", i ? "," : "",
                                    mask_parts(key)[i]);
        if (len < size)
            len += (size_t)snprintf(buf + len, size - len, " joined by '+' (e.g. \"%s+%s\")",
                                    mask_parts(key)[2], mask_parts(key)[1]);
        break;
    case KEY_GROUP:
    case KEY_CUSTOM:
        len = (size_t)snprintf(buf, size, "%s", key->type_text);
        break;
    }
    if (key->is_axis && len < size)
        snprintf(buf + len, size - len, ", or a list of up to %d distinct such values",
                 CDSE_AXIS_MAX_VALUES);
}

static const char *key_type_text(const key_spec *key)
{
    static const char *const names[] = {
        [KEY_INT] = "int",       [KEY_FLOAT] = "float",  [KEY_BOOL] = "bool",
        [KEY_STRING] = "string", [KEY_ENUM] = "string",  [KEY_OFFLOAD] = "string",
        [KEY_GROUP] = "group",   [KEY_CUSTOM] = "custom"};
    static const char *const axis_names[] = {[KEY_INT] = "int list",
                                             [KEY_BOOL] = "bool list",
                                             [KEY_ENUM] = "string list",
                                             [KEY_OFFLOAD] = "string list"};
    if (key->type == KEY_CUSTOM || key->type == KEY_GROUP)
        return key->type_text;
    return key->is_axis ? axis_names[key->type] : names[key->type];
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar values                                                                              */

static int parse_offload(const char *const *parts, const char *text, int *mask)
{
    *mask = 0;
    if (strcmp(text, "none") == 0)
        return 0;
    const char *p = text;
    for (;;) {
        const char *end = strchr(p, '+');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        int bit = 0;
        for (int i = 0; parts[i] != NULL; i++)
            if (strlen(parts[i]) == len && strncmp(p, parts[i], len) == 0)
                bit = 1 << i;
        if (bit == 0 || (*mask & bit) != 0)
            return -1;
        *mask |= bit;
        if (end == NULL)
            return 0;
        p = end + 1;
    }
}

/* Reads one scalar of `key`'s type from `value` (an element for axes) into *number or *text.
 * `holder` names the key in messages. */
int cdse__read_scalar(const parse_ctx *ctx, const key_spec *key, const config_setting_t *holder,
                      const config_setting_t *value, double *number, const char **text)
{
    char allowed[CDSE_ALLOWED_MAX];
    cdse__key_allowed(key, allowed, sizeof allowed);
    int type = config_setting_type(value);
    switch (key->type) {
    case KEY_INT:
    case KEY_FLOAT: {
        if (type == CONFIG_TYPE_INT)
            *number = config_setting_get_int(value);
        else if (type == CONFIG_TYPE_INT64)
            *number = (double)config_setting_get_int64(value);
        else if (type == CONFIG_TYPE_FLOAT && key->type == KEY_FLOAT)
            *number = config_setting_get_float(value);
        else if (type == CONFIG_TYPE_FLOAT)
            return cdse__key_fail(ctx, holder, NULL, value, allowed,
                                  "the float %g where an integer is expected",
                                  config_setting_get_float(value));
        else
            return cdse__key_fail(ctx, holder, NULL, value, allowed, "expected a number");
        bool low = key->min_open ? !(*number > key->min) : !(*number >= key->min);
        if (low || !(*number <= key->max) || !isfinite(*number))
            return cdse__key_fail(ctx, holder, NULL, value, allowed, "%.15g is out of range",
                                  *number);
        return 0;
    }
    case KEY_BOOL:
        if (type != CONFIG_TYPE_BOOL)
            return cdse__key_fail(ctx, holder, NULL, value, allowed, "expected true or false");
        *number = config_setting_get_bool(value) ? 1.0 : 0.0;
        return 0;
    default:
        break;
    }
    if (type != CONFIG_TYPE_STRING)
        return cdse__key_fail(ctx, holder, NULL, value, allowed, "expected a string");
    *text = config_setting_get_string(value);
    if (key->type == KEY_ENUM) {
        for (int i = 0; key->choices[i] != NULL; i++)
            if (strcmp(*text, key->choices[i]) == 0) {
                *number = key->choice_value != NULL ? key->choice_value[i] : i;
                return 0;
            }
        return cdse__key_fail(ctx, holder, NULL, value, allowed, "unknown value \"%s\"", *text);
    }
    if (key->type == KEY_OFFLOAD) {
        int mask;
        if (parse_offload(mask_parts(key), *text, &mask) != 0)
            return cdse__key_fail(ctx, holder, NULL, value, allowed, "unknown value \"%s\"", *text);
        *number = mask;
        return 0;
    }
    if ((*text)[0] == '\0' || strlen(*text) >= key->size)
        return cdse__key_fail(ctx, holder, NULL, value, allowed, "\"%s\" has %zu characters", *text,
                              strlen(*text));
    return 0;
}

void cdse__store_scalar(const key_spec *key, void *target, double number, const char *text)
{
    char *field = (char *)target + key->offset;
    switch (key->type) {
    case KEY_INT:
    case KEY_ENUM:
    case KEY_OFFLOAD:
        *(int *)field = (int)number;
        break;
    case KEY_FLOAT:
        *(double *)field = number;
        break;
    case KEY_BOOL:
        *(bool *)field = number != 0.0;
        break;
    case KEY_STRING:
        /* The whole field is rewritten: an override of a base's longer name leaves no bytes of
         * it behind (the fingerprint hashes whole structs). */
        memset(field, 0, key->size);
        snprintf(field, key->size, "%s", text != NULL ? text : ""); /* NULL: a default, empty */
        break;
    default:
        break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Groups                                                                                     */

void cdse__apply_defaults(const key_table *table, void *target)
{
    for (int i = 0; i < table->n; i++) {
        const key_spec *key = &table->keys[i];
        if (key->type == KEY_GROUP)
            cdse__apply_defaults(key->sub, (char *)target + key->offset);
        else if (key->is_axis && key->has_default) {
            space_input *in = target;
            if (in->n[key->axis] == 0) {
                in->n[key->axis] = 1;
                in->value[key->axis][0] = (int64_t)key->def;
            }
        } else if (key->has_default)
            cdse__store_scalar(key, target, key->def, NULL);
    }
}

int cdse__parse_axis(parse_ctx *ctx, const config_setting_t *setting, const key_spec *key,
                     space_input *in)
{
    char allowed[CDSE_ALLOWED_MAX];
    cdse__key_allowed(key, allowed, sizeof allowed);
    int axis = key->axis;
    int count = config_setting_is_aggregate(setting) ? config_setting_length(setting) : 1;
    if (config_setting_is_group(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "a group is not a value");
    if (count == 0)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "the list is empty");
    if (count > CDSE_AXIS_MAX_VALUES)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d values (more than %d)",
                              count, CDSE_AXIS_MAX_VALUES);
    in->setting[axis] = setting;
    in->n[axis] = 0;
    for (int i = 0; i < count; i++) {
        const config_setting_t *elem =
            config_setting_is_aggregate(setting) ? config_setting_get_elem(setting, i) : setting;
        if (config_setting_is_aggregate(elem))
            return cdse__key_fail(ctx, setting, NULL, elem, allowed,
                                  "a nested list is not a value");
        double number = 0;
        const char *text = NULL;
        int rc = cdse__read_scalar(ctx, key, setting, elem, &number, &text);
        if (rc != 0)
            return rc;
        for (int j = 0; j < in->n[axis]; j++) {
            if (in->value[axis][j] != (int64_t)number)
                continue;
            if (text != NULL)
                return cdse__key_fail(ctx, setting, NULL, elem, allowed,
                                      "value \"%s\" appears twice", text);
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "value %.15g appears twice",
                                  number);
        }
        in->value[axis][in->n[axis]++] = (int64_t)number;
    }
    return 0;
}

static int parse_member(parse_ctx *ctx, const config_setting_t *setting, const key_spec *key,
                        void *target, bool fresh)
{
    if (key->type == KEY_CUSTOM)
        return key->parse(ctx, setting, target, key);
    if (key->type == KEY_GROUP)
        return cdse__parse_group(ctx, setting, key->sub, (char *)target + key->offset, fresh);
    if (key->is_axis)
        return cdse__parse_axis(ctx, setting, key, target);
    if (config_setting_is_aggregate(setting)) {
        char allowed[CDSE_ALLOWED_MAX];
        cdse__key_allowed(key, allowed, sizeof allowed);
        return cdse__key_fail(ctx, setting, NULL, setting, allowed,
                              "a list or group, not one value");
    }
    double number = 0;
    const char *text = NULL;
    int rc = cdse__read_scalar(ctx, key, setting, setting, &number, &text);
    if (rc == 0)
        cdse__store_scalar(key, target, number, text);
    return rc;
}

/* Parses `group` against `table` into `target`: rejects unknown keys, then parses the keys in
 * table order. A fresh target gets the table's defaults and must have the required keys; a
 * target that already holds values (a `base` profile) only takes the keys given. */
int cdse__parse_group(parse_ctx *ctx, const config_setting_t *group, const key_table *table,
                      void *target, bool fresh)
{
    char allowed[CDSE_ALLOWED_MAX];
    if (!config_setting_is_group(group))
        return cdse__key_fail(ctx, group, NULL, group, "a group { key = value; ... }",
                              "expected a group");
    int count = config_setting_length(group);
    for (int i = 0; i < count; i++) {
        const config_setting_t *member = config_setting_get_elem(group, i);
        if (cdse__key_find(table, config_setting_name(member)) == NULL) {
            cdse__key_names(table, allowed, sizeof allowed);
            return cdse__key_fail(ctx, member, NULL, member, allowed, "unknown key");
        }
    }
    if (fresh)
        cdse__apply_defaults(table, target);
    for (int k = 0; k < table->n; k++) {
        const key_spec *key = &table->keys[k];
        const config_setting_t *member = config_setting_get_member(group, key->name);
        if (member == NULL) {
            if (fresh && key->required) {
                cdse__key_allowed(key, allowed, sizeof allowed);
                return cdse__key_fail(ctx, group, key->name, group, allowed, "missing (required)");
            }
            continue;
        }
        int rc = parse_member(ctx, member, key, target, fresh);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading files                                                                              */

/* Reads an open descriptor to the end, at most CDSE_CONFIG_MAX_BYTES + 1 bytes. */
static char *read_fd(int fd, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        ssize_t got = read(fd, buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            free(buf);
            return NULL;
        }
        n += (size_t)got;
        if (got == 0 || n > CDSE_CONFIG_MAX_BYTES)
            break;
        if (n == cap - 1) {
            char *grown = realloc(buf, cap * 2);
            if (grown == NULL) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = grown;
            cap *= 2;
        }
    }
    if (buf == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int cdse__read_file(const char *path, char **text, char *why, size_t why_size, int *line)
{
    *text = NULL;
    *line = 0;
    /* O_NONBLOCK: opening a FIFO without a writer must not block; fstat refuses it next. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, why_size, "%s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return CDSE_EIO;
    }
    int rc = CDSE_EINVAL;
    size_t len = 0;
    if (S_ISDIR(st.st_mode))
        snprintf(why, why_size, "a directory, not a file");
    else if (!S_ISREG(st.st_mode))
        snprintf(why, why_size, "not a regular file (a FIFO, device or socket)");
    else if (st.st_size > CDSE_CONFIG_MAX_BYTES)
        snprintf(why, why_size, "%lld bytes, larger than 16 MiB", (long long)st.st_size);
    else if ((*text = read_fd(fd, &len)) == NULL) {
        snprintf(why, why_size, "%s", strerror(errno));
        rc = CDSE_EIO;
    } else if (len > CDSE_CONFIG_MAX_BYTES)
        snprintf(why, why_size, "larger than 16 MiB");
    else if (memchr(*text, '\0', len) != NULL) {
        const char *nul = memchr(*text, '\0', len);
        *line = 1;
        for (const char *p = *text; p < nul; p++)
            *line += *p == '\n';
        snprintf(why, why_size, "a NUL byte");
    } else
        rc = 0;
    close(fd);
    if (rc != 0) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

int cdse__read_file_diag(const char *path, const char *what, char **text, cdse_diag *diag)
{
    char why[160];
    int line;
    int rc = cdse__read_file(path, text, why, sizeof why, &line);
    if (rc != 0 && line > 0)
        cdse_diag_set(diag, "%s:%d: %s in the %s; allowed: text without NUL bytes", path, line, why,
                      what);
    else if (rc != 0)
        cdse_diag_set(diag,
                      "%s: cannot read %s (%s); allowed: a readable regular file of at most "
                      "16 MiB",
                      path, what, why);
    return rc;
}

/* The first problem libconfig would not report: an integer literal without the L suffix that
 * does not fit 32 bits (libconfig 1.5 wraps it silently), or an @include directive (refused:
 * libconfig 1.5 exits the process on an unreadable include and names the outer file in the
 * errors of an included one). Strings and comments are skipped. */
typedef struct text_finding {
    int line;          /* 0: none */
    bool include;      /* an @include, else a wrapped integer */
    char literal[64];  /* the integer as written */
    long long wrapped; /* the value libconfig stores for it (the low 32 bits) */
    long assignments;  /* '=' and ':' outside strings and comments: the settings */
} text_finding;

static const char *skip_string(const char *p, int *line)
{
    for (p++; *p != '\0' && *p != '"'; p++) {
        if (*p == '\\' && p[1] != '\0')
            p++;
        else if (*p == '\n')
            (*line)++;
    }
    return *p == '"' ? p + 1 : p;
}

static const char *skip_comment(const char *p, int *line)
{
    if (p[0] == '/' && p[1] == '*') {
        for (p += 2; *p != '\0' && !(p[0] == '*' && p[1] == '/'); p++)
            if (*p == '\n')
                (*line)++;
        return *p != '\0' ? p + 2 : p;
    }
    while (*p != '\0' && *p != '\n')
        p++;
    return p;
}

/* Scans the integer literal at p; sets `found` when it does not fit 32 bits. */
static const char *scan_integer(const char *text, const char *p, int line, text_finding *found)
{
    const char *start = p;
    bool negative = p > text && p[-1] == '-';
    bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    p += hex ? 2 : 0;
    while (hex ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p))
        p++;
    if (!hex && (*p == '.' || *p == 'e' || *p == 'E')) {
        while (isalnum((unsigned char)*p) || *p == '.' ||
               ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
            p++;
        return p;
    }
    if (*p == 'L')
        return p;
    errno = 0;
    unsigned long long v = strtoull(start, NULL, hex ? 16 : 10);
    bool overflow = errno == ERANGE || (negative ? v > 2147483648ULL : v > 2147483647ULL);
    if (overflow) {
        found->line = line;
        snprintf(found->literal, sizeof found->literal, "%s%.*s", negative ? "-" : "",
                 (int)(p - start), start);
        int32_t low = (int32_t)(uint32_t)(v & 0xffffffffULL);
        found->wrapped = negative ? -(long long)low : low;
    }
    return p;
}

static void scan_text(const char *text, text_finding *found)
{
    memset(found, 0, sizeof *found);
    int line = 1;
    const char *p = text;
    while (*p != '\0' && found->line == 0) {
        if (*p == '\n') {
            line++;
            p++;
        } else if (*p == '"') {
            p = skip_string(p, &line);
        } else if (*p == '#' || (p[0] == '/' && (p[1] == '/' || p[1] == '*'))) {
            p = skip_comment(p, &line);
        } else if (*p == '=' || *p == ':') {
            found->assignments++;
            p++;
        } else if (strncmp(p, "@include", 8) == 0) {
            found->line = line;
            found->include = true;
        } else if ((*p >= '0' && *p <= '9') && (p == text || !(isalnum((unsigned char)p[-1]) ||
                                                               p[-1] == '_' || p[-1] == '.'))) {
            p = scan_integer(text, p, line, found);
        } else {
            p++;
        }
    }
}

/* The integer setting at `line` holding `value` (the key a wrapped literal belongs to), else
 * the first integer setting at that line. */
static const config_setting_t *int_setting_at(const config_setting_t *setting, int line,
                                              long long value, bool match_value)
{
    int type = config_setting_type(setting);
    if ((type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64) &&
        (int)config_setting_source_line(setting) == line &&
        (!match_value || config_setting_get_int64(setting) == value))
        return setting;
    if (!config_setting_is_aggregate(setting))
        return NULL;
    for (int i = 0; i < config_setting_length(setting); i++) {
        const config_setting_t *found =
            int_setting_at(config_setting_get_elem(setting, i), line, value, match_value);
        if (found != NULL)
            return found;
    }
    return NULL;
}

/* The name of the nearest named setting at or above `at` ("?" if none). */
static void named_path(const config_setting_t *at, char *path, size_t size)
{
    while (at != NULL && config_setting_name(at) == NULL)
        at = config_setting_parent(at);
    snprintf(path, size, "?");
    if (at != NULL)
        cdse__setting_path(at, path, size);
}

static int wrapped_integer(parse_ctx *ctx, config_t *cfg, const text_finding *found)
{
    const config_setting_t *root = config_root_setting(cfg);
    const config_setting_t *at = int_setting_at(root, found->line, found->wrapped, true);
    if (at == NULL)
        at = int_setting_at(root, found->line, 0, false);
    char path[160];
    named_path(at, path, sizeof path);
    cdse_diag_set(ctx->diag,
                  "%s:%d: key '%s': integer %s does not fit in 32 bits (libconfig would wrap "
                  "it); allowed: integers from -2^31 to 2^31-1, or a 64-bit integer with the "
                  "L suffix (%sL), or a float (e.g. 3e11)",
                  ctx->file, found->line, path, found->literal, found->literal);
    return CDSE_EINVAL;
}

/* The first float setting that is not finite (1e999 reads as inf), or NULL. */
static const config_setting_t *non_finite(const config_setting_t *setting)
{
    if (config_setting_type(setting) == CONFIG_TYPE_FLOAT &&
        !isfinite(config_setting_get_float(setting)))
        return setting;
    if (!config_setting_is_aggregate(setting))
        return NULL;
    for (int i = 0; i < config_setting_length(setting); i++) {
        const config_setting_t *found = non_finite(config_setting_get_elem(setting, i));
        if (found != NULL)
            return found;
    }
    return NULL;
}

int cdse__read_config(parse_ctx *ctx, const char *text, config_t *cfg)
{
    text_finding found;
    scan_text(text, &found);
    if (found.line > 0 && found.include) {
        cdse_diag_set(ctx->diag,
                      "%s:%d: @include is not accepted; allowed: every setting in the file "
                      "itself (models and systems are named from the data folders, profiles "
                      "build on others with `base`)",
                      ctx->file, found.line);
        return CDSE_EINVAL;
    }
    if (found.assignments > CDSE_CONFIG_MAX_SETTINGS) {
        cdse_diag_set(ctx->diag,
                      "%s: %ld settings; allowed: at most %d settings (key = value) per file",
                      ctx->file, found.assignments, CDSE_CONFIG_MAX_SETTINGS);
        return CDSE_EINVAL;
    }
    config_init(cfg);
    if (!config_read_string(cfg, text)) {
        cdse_diag_set(ctx->diag,
                      "%s:%d: syntax error (%s); allowed: libconfig syntax: key = value; "
                      "groups { ... }, arrays [ ... ], lists ( ... ), strings in double quotes",
                      ctx->file, config_error_line(cfg), config_error_text(cfg));
        config_destroy(cfg);
        return CDSE_EINVAL;
    }
    int rc = 0;
    const config_setting_t *bad = non_finite(config_root_setting(cfg));
    if (found.line > 0) {
        rc = wrapped_integer(ctx, cfg, &found);
    } else if (bad != NULL) {
        char path[160];
        named_path(bad, path, sizeof path);
        cdse_diag_set(ctx->diag,
                      "%s:%d: key '%s': %g is not a finite number; allowed: finite "
                      "numbers (at most about 1.8e308)",
                      ctx->file, config_setting_source_line(bad), path,
                      config_setting_get_float(bad));
        rc = CDSE_EINVAL;
    }
    if (rc != 0)
        config_destroy(cfg);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Printing values in job-file syntax (the effective job)                                     */

void cdse__print_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

/* A float literal that reads back to the same double (libconfig needs the '.' or exponent to
 * keep an array of floats uniform). */
void cdse__print_float(FILE *out, double x)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", x);
    if (strtod(buf, NULL) != x)
        snprintf(buf, sizeof buf, "%.17g", x);
    if (strpbrk(buf, ".eEn") == NULL)
        strncat(buf, ".0", sizeof buf - strlen(buf) - 1);
    fputs(buf, out);
}

static const char *enum_name(const key_spec *key, int value)
{
    for (int i = 0; key->choices[i] != NULL; i++)
        if ((key->choice_value != NULL ? key->choice_value[i] : i) == value)
            return key->choices[i];
    return "?";
}

static void offload_text(const char *const *parts, int mask, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; parts[i] != NULL; i++)
        if (mask & (1 << i))
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "+" : "", parts[i]);
    if (len == 0)
        snprintf(buf, size, "none");
}

/* One scalar value of `key`: from a struct field, or (axes) from an int64 value. */
void cdse__print_scalar(FILE *out, const key_spec *key, double number, const char *text)
{
    char buf[64];
    switch (key->type) {
    case KEY_INT:
        fprintf(out, "%lld", (long long)number);
        break;
    case KEY_FLOAT:
        cdse__print_float(out, number);
        break;
    case KEY_BOOL:
        fputs(number != 0.0 ? "true" : "false", out);
        break;
    case KEY_STRING:
        cdse__print_string(out, text);
        break;
    case KEY_ENUM:
        cdse__print_string(out, enum_name(key, (int)number));
        break;
    case KEY_OFFLOAD:
        offload_text(mask_parts(key), (int)number, buf, sizeof buf);
        cdse__print_string(out, buf);
        break;
    default:
        break;
    }
}

void cdse__print_field(FILE *out, const key_spec *key, const void *target, int indent)
{
    const char *field = (const char *)target + key->offset;
    if (key->type == KEY_CUSTOM) {
        if (key->print != NULL)
            key->print(out, target, key, indent);
        return;
    }
    if (key->type == KEY_GROUP) {
        fprintf(out, "%*s%s = {\n", indent, "", key->name);
        cdse__print_table_values(out, key->sub, field, indent + 2);
        fprintf(out, "%*s};\n", indent, "");
        return;
    }
    double number = 0;
    if (key->type == KEY_INT || key->type == KEY_ENUM || key->type == KEY_OFFLOAD)
        number = *(const int *)field;
    else if (key->type == KEY_FLOAT)
        number = *(const double *)field;
    else if (key->type == KEY_BOOL)
        number = *(const bool *)field;
    bool below = key->min_open ? !(number > key->min) : number < key->min;
    if ((key->type == KEY_INT || key->type == KEY_FLOAT) && below)
        return; /* never set: an optional key (tokens), or one that applies only with another
                   (top_k with experts) */
    if (key->print_given_only && key->has_default && number == key->def)
        return;
    if (key->type == KEY_STRING && field[0] == '\0')
        return; /* an optional string never set (a system's stack) */
    fprintf(out, "%*s%s = ", indent, "", key->name);
    cdse__print_scalar(out, key, number, field);
    fputs(";\n", out);
}

void cdse__print_table_values(FILE *out, const key_table *table, const void *target, int indent)
{
    for (int i = 0; i < table->n; i++)
        cdse__print_field(out, &table->keys[i], target, indent);
}

/* ------------------------------------------------------------------------------------------ */
/* Key reference                                                                              */

void cdse__print_key_table(FILE *out, const key_table *table)
{
    for (int i = 0; i < table->n; i++) {
        const key_spec *key = &table->keys[i];
        char name[96], allowed[CDSE_ALLOWED_MAX];
        snprintf(name, sizeof name, "%s%s%s", table->prefix, table->prefix[0] ? "." : "",
                 key->name);
        cdse__key_allowed(key, allowed, sizeof allowed);
        fprintf(out, "%-44s %-30s %-24s %s. Allowed: %s\n", name, key_type_text(key),
                key->def_text ? key->def_text : "none", key->help, allowed);
    }
}
