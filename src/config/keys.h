/* The key-table engine shared by job files, models, system profiles and probe plans
 * (internal to src/config). One table per group describes every key (name, type, bounds,
 * default, help, target field); the tables drive parsing, the rejection of unknown keys, the
 * defaults, the effective-value printers and the key reference. Every error is one line:
 *   FILE:LINE: key 'space.tp': <what is wrong>; allowed: <what is allowed>
 *
 * libconfig 1.5 pitfalls handled here: an integer literal is not a float (floats accept ints);
 * integers above 2^31 without the L suffix wrap silently (the text is scanned for such
 * literals); config_error_file() is NULL for a missing file (files are read into memory first,
 * so the path is reported from our side). */
#ifndef CLUSTERDSE_CONFIG_KEYS_H
#define CLUSTERDSE_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <libconfig.h>

#include "clusterdse/model/hardware.h"
#include "clusterdse/model/space.h"

struct cdse_job;
struct cdse__hw_sources;
struct job__pool_counts;

typedef struct parse_ctx {
    const char *file;     /* the file being parsed, for messages */
    const char *job_path; /* the job file: relative names resolve from its directory */
    cdse_diag *diag;
    int depth; /* nesting of profile files (base, network_profile, names) */
    /* While parsing a job: pools add their member profiles to job->system after the systems
     * the job lists (the first axis_systems, the values of the systems axis). */
    struct cdse_job *job;
    int axis_systems;
    /* While parsing a job's systems: where its hardware axes and sizes were written
     * (hw_axes.h). */
    struct cdse__hw_sources *hw_sources;
    /* While parsing a job's pools: the count lists of their members (job_entries.c). */
    struct job__pool_counts *pool_counts;
    int world_size; /* probe plans: the ranks the plan runs on */
} parse_ctx;

typedef enum key_type {
    KEY_INT,     /* int field; integer literal within [min, max] */
    KEY_FLOAT,   /* double field; integer or float literal within bounds */
    KEY_BOOL,    /* bool field */
    KEY_STRING,  /* char[size] field */
    KEY_ENUM,    /* int field; one of `choices` (value = choice_value[i] or i) */
    KEY_OFFLOAD, /* int field; a bit mask from "none" or "a+b+c": bit i is choices[i] (the
                    CDSE_OFFLOAD_* parts when choices is NULL) */
    KEY_GROUP,   /* a nested group described by `sub` */
    KEY_CUSTOM,  /* parsed by `parse` */
} key_type;

typedef struct key_spec key_spec;
typedef struct key_table key_table;
typedef int (*key_parse_fn)(parse_ctx *ctx, const config_setting_t *setting, void *target,
                            const key_spec *key);
/* Prints a KEY_CUSTOM key of `target` as `name = value;` at `indent` (effective job). */
typedef void (*key_print_fn)(FILE *out, const void *target, const key_spec *key, int indent);

struct key_spec {
    const char *name;
    key_type type;
    size_t offset; /* of the field in the target struct */
    size_t size;   /* capacity of a KEY_STRING field */
    double min, max;
    bool min_open;              /* min is an exclusive bound */
    const char *const *choices; /* KEY_ENUM: NULL-terminated names */
    const int *choice_value;    /* KEY_ENUM: value of each name (NULL: its position) */
    bool is_axis;               /* a sweep axis under `space`: a scalar or a list of values */
    int axis;                   /* cdse_axis, or AXIS_NODES */
    bool required;
    bool has_default;
    bool print_given_only; /* KEY_INT, KEY_FLOAT: not printed at its default (a key added later,
                              so that effective jobs without it print as before) */
    double def;            /* default applied to fresh structs (numbers, bools, enums) */
    const char *def_text;  /* default as the reference shows it */
    const key_table *sub;  /* KEY_GROUP */
    key_parse_fn parse;    /* KEY_CUSTOM */
    key_print_fn print;    /* KEY_CUSTOM: NULL for keys that the effective job resolves away */
    int arg;               /* KEY_CUSTOM: a parameter of `parse` */
    const char *type_text; /* KEY_CUSTOM, KEY_GROUP: the type as the reference shows it */
    const char *help;
};

struct key_table {
    const char *prefix; /* how the reference names the group: "space", "models[]", ... */
    const key_spec *keys;
    int n;
};

#define INT_MAX_D 2147483647.0

/* Scratch target of the `space` table: the values of every axis, plus `nodes`. */
#define AXIS_NODES CDSE_AXIS_COUNT
typedef struct space_input {
    int n[CDSE_AXIS_COUNT + 1];
    int64_t value[CDSE_AXIS_COUNT + 1][CDSE_AXIS_MAX_VALUES];
    const config_setting_t *setting[CDSE_AXIS_COUNT + 1];
} space_input;

/* Room for any key's "allowed" text (the longest, space.placement's 24 orders plus the list
 * clause, is about 420 characters); cdse__key_allowed never cuts it. */
#define CDSE_ALLOWED_MAX 1024

/* Key path of a setting: "space.tp", "models[1].heads", "network[0].size". */
void cdse__setting_path(const config_setting_t *setting, char *buf, size_t size);
/* Reports an error on key `key` (plus `.member` when given) at the line of `at`:
 * "file:line: key 'K': <fmt ...>; allowed: <allowed>". Returns CDSE_EINVAL. */
int cdse__key_fail(const parse_ctx *ctx, const config_setting_t *key, const char *member,
                   const config_setting_t *at, const char *allowed, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

const key_spec *cdse__key_find(const key_table *table, const char *name);
/* The key names of a table, comma separated. */
void cdse__key_names(const key_table *table, char *buf, size_t size);
/* What a key allows, in words: "an integer from 1 to 2^31-1", "one of \"none\", ...". */
void cdse__key_allowed(const key_spec *key, char *buf, size_t size);

/* Reads one scalar of `key`'s type from `value` (an element for axes) into *number or *text.
 * `holder` names the key in messages. */
int cdse__read_scalar(const parse_ctx *ctx, const key_spec *key, const config_setting_t *holder,
                      const config_setting_t *value, double *number, const char **text);
void cdse__store_scalar(const key_spec *key, void *target, double number, const char *text);
void cdse__apply_defaults(const key_table *table, void *target);
int cdse__parse_axis(parse_ctx *ctx, const config_setting_t *setting, const key_spec *key,
                     space_input *in);
/* Parses `group` against `table` into `target`: rejects unknown keys, then parses the keys in
 * table order. A fresh target gets the table's defaults and must have the required keys; a
 * target that already holds values (a `base` profile) only takes the keys given. */
int cdse__parse_group(parse_ctx *ctx, const config_setting_t *group, const key_table *table,
                      void *target, bool fresh);

/* Configuration files larger than this are refused before parsing (libconfig's parse time
 * grows quadratically with the number of keys: 50,000 keys took 24 s). docs/job-file.md. */
#define CDSE_CONFIG_MAX_BYTES (16L << 20)
/* Settings (key = value) per file: libconfig 1.5 looks up every new key among its siblings,
 * so a group of n keys costs n^2 (25,000 keys took 7 s, 50,000 24 s); 10,000 stay near a
 * second. The largest profiles in the repository have a few hundred. docs/job-file.md. */
#define CDSE_CONFIG_MAX_SETTINGS 10000

/* Reads a configuration file whole into *text (malloc'd, NUL-terminated). Refuses directories,
 * FIFOs, devices and sockets (checked on the open descriptor, before reading), files above
 * CDSE_CONFIG_MAX_BYTES and NUL bytes. Returns 0, CDSE_EIO (cannot open or read) or
 * CDSE_EINVAL, with the reason in `why`; *line is the line of a NUL byte, else 0. */
int cdse__read_file(const char *path, char **text, char *why, size_t why_size, int *line);
/* The same, with the message in `diag`: "PATH: cannot read WHAT (why); allowed: ..." or
 * "PATH:LINE: a NUL byte in the WHAT; allowed: ...". */
int cdse__read_file_diag(const char *path, const char *what, char **text, cdse_diag *diag);
/* Parses `text` with libconfig into `cfg`. Rejects, naming ctx->file, the line and the key:
 * @include directives (before libconfig sees them), integer literals that libconfig would wrap
 * to 32 bits, and floats that are not finite (1e999). On error cfg is destroyed. */
int cdse__read_config(parse_ctx *ctx, const char *text, config_t *cfg);

/* Values in job-file syntax. */
void cdse__print_string(FILE *out, const char *text);
/* A float literal that reads back to the same double. */
void cdse__print_float(FILE *out, double x);
void cdse__print_scalar(FILE *out, const key_spec *key, double number, const char *text);
/* `name = value;` of one key of `target` at `indent` (groups and custom keys included). */
void cdse__print_field(FILE *out, const key_spec *key, const void *target, int indent);
void cdse__print_table_values(FILE *out, const key_table *table, const void *target, int indent);
/* One line per key of `table` for the key reference (--help-keys). */
void cdse__print_key_table(FILE *out, const key_table *table);

/* A float key of struct `st`: bounds (lo exclusive when `open`), required or a default. */
#define FLOAT_KEY(st, key, field, lo, open, hi, req, dflt, dtext, text)                            \
    {                                                                                              \
        .name = key, .type = KEY_FLOAT, .offset = offsetof(st, field), .min = lo,                  \
        .min_open = open, .max = hi, .required = req, .has_default = !(req), .def = dflt,          \
        .def_text = dtext, .help = text                                                            \
    }

/* ---- Data files (datadir.c) ---- */

/* A name with a '/' or ending in ".cfg" is a path (relative to the job file's directory);
 * otherwise NAME.cfg in SUBDIR of the first data directory that has it. 0 or -1. */
int cdse__resolve_file(const char *subdir, const char *name, const char *job_path, char *out,
                       size_t size);
/* The NAME.cfg names of the first data directory that has SUBDIR, comma separated. */
void cdse__list_names(const char *subdir, const char *job_path, char *buf, size_t size);
/* Which kind of profile a parser reads; picks the table and the post-parse checks. */
typedef int (*profile_parse_fn)(parse_ctx *ctx, const config_setting_t *group, void *target,
                                bool fresh);
/* Loads the file NAME (a zoo name or a path) found for the setting `name_setting`. */
int cdse__load_profile_named(parse_ctx *ctx, const config_setting_t *name_setting,
                             const char *subdir, const char *what, profile_parse_fn parse,
                             void *target, bool fresh);

/* ---- System profiles (system_profile.c) ---- */

/* Parses a system group (with its `base`) into `target` (a cdse_system) and checks it. */
int cdse__parse_system_group(parse_ctx *ctx, const config_setting_t *group, void *target,
                             bool fresh);
/* The keys of a system in job-file syntax, at `indent`. */
void cdse__print_system_body(FILE *out, const cdse_system *system, int indent);
/* The key reference of systems[] and its sub-groups. */
void cdse__system_print_keys(FILE *out);

#endif
