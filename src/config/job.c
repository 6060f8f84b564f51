/* Job files (libconfig 1.5) -> validated, immutable job: the key tables of job files, models
 * and systems, on the key-table engine of keys.h (which also describes the error shape). */
#define _XOPEN_SOURCE 700 /* realpath, strdup, strtok_r */

#include "clusterdse/config/job.h"
#include "clusterdse/config/probe_plan.h"
#include "hw_axes.h"
#include "keys.h"
#include "clusterdse/config/datadir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CDSE_SOURCE_DIR
#define CDSE_SOURCE_DIR "."
#endif

/* Profiles may start from another profile (`base`); this bounds the chain (and stops cycles). */
#define MAX_PROFILE_DEPTH 4

/* Bounds that keep every product the evaluator forms in `int` (tp * pp * cp, pp * vpp,
 * microbatch * dp) below 2^31: 2^10 per parallel degree and micro-batch, 2^20 GPUs. Both are far
 * beyond published systems (the largest training runs use tens of thousands of GPUs and degrees
 * up to a few hundred). */
#define MAX_GPUS   1048576.0
#define MAX_DEGREE 1024.0

/* ------------------------------------------------------------------------------------------ */
/* Objective metrics                                                                          */

static const char *const metric_names[CDSE_METRIC_COUNT + 1] = {
    "time_per_iteration", "tokens_per_s",    "time_to_train",  "gpu_hours", "mfu",
    "cost_to_train",      "energy_to_train", "tokens_per_kwh", NULL};

const char *cdse_metric_name(int metric)
{
    if (metric < 0 || metric >= CDSE_METRIC_COUNT)
        return "?";
    return metric_names[metric];
}

int cdse_metric_parse(const char *name)
{
    for (int i = 0; i < CDSE_METRIC_COUNT; i++)
        if (strcmp(name, metric_names[i]) == 0)
            return i;
    return -1;
}

bool cdse_metric_higher_is_better(int metric)
{
    return metric == CDSE_METRIC_TOKENS_PER_S || metric == CDSE_METRIC_MFU ||
           metric == CDSE_METRIC_TOKENS_PER_KWH;
}

/* ------------------------------------------------------------------------------------------ */
/* Data files: models and system profiles                                                    */

static void dir_of(const char *path, char *out, size_t size)
{
    snprintf(out, size, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash == NULL)
        snprintf(out, size, ".");
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
}

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* Calls visit(dir) on each data directory in search order until it returns true. */
static bool each_data_dir(const char *job_path, bool (*visit)(const char *dir, void *arg),
                          void *arg)
{
    const char *env = getenv("CLUSTERDSE_DATA");
    if (env != NULL && env[0] != '\0') {
        char list[CDSE_PATH_MAX];
        snprintf(list, sizeof list, "%s", env);
        char *save = NULL;
        for (char *dir = strtok_r(list, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save))
            if (visit(dir, arg))
                return true;
    }
    if (job_path != NULL && job_path[0] != '<') {
        char given[CDSE_PATH_MAX], dir[PATH_MAX], up[PATH_MAX];
        dir_of(job_path, given, sizeof given);
        if (realpath(given, dir) == NULL) {
            if (visit(given, arg))
                return true;
        } else {
            /* The job file's directory and its parents, up to the root. */
            for (int depth = 0; depth < 64; depth++) {
                if (visit(dir, arg))
                    return true;
                if (strcmp(dir, "/") == 0)
                    break;
                dir_of(dir, up, sizeof up);
                memcpy(dir, up, sizeof dir);
            }
        }
    } else if (visit(".", arg)) {
        return true; /* the embedded job: the working directory */
    }
    if (visit(CDSE_SOURCE_DIR, arg))
        return true;
    char installed[PATH_MAX];
    return cdse_installed_data_dir(installed, sizeof installed) == 0 && visit(installed, arg);
}

typedef struct find_arg {
    const char *subdir;
    const char *name;
    char *out;
    size_t size;
} find_arg;

static bool visit_find(const char *dir, void *arg)
{
    find_arg *find = arg;
    if (find->subdir[0] != '\0')
        snprintf(find->out, find->size, "%s/%s/%s.cfg", dir, find->subdir, find->name);
    else
        snprintf(find->out, find->size, "%s/%s", dir, find->name);
    return readable(find->out);
}

int cdse_job_find_data(const char *subdir, const char *name, const char *job_path, char *out,
                       size_t out_size)
{
    find_arg find = {subdir, name, out, out_size};
    if (each_data_dir(job_path, visit_find, &find))
        return CDSE_OK;
    out[0] = '\0';
    return CDSE_EIO;
}

/* A name with a '/' or ending in ".cfg" is a path: relative to the job file's directory, then
 * to the data directories. */
static bool is_path(const char *name)
{
    size_t len = strlen(name);
    return strchr(name, '/') != NULL || (len > 4 && strcmp(name + len - 4, ".cfg") == 0);
}

static int resolve_file(const char *subdir, const char *name, const char *job_path, char *out,
                        size_t size)
{
    if (!is_path(name))
        return cdse_job_find_data(subdir, name, job_path, out, size);
    if (name[0] == '/') {
        snprintf(out, size, "%s", name);
        return readable(out) ? CDSE_OK : CDSE_EIO;
    }
    if (job_path != NULL && job_path[0] != '<') { /* the job file's own directory first */
        char dir[CDSE_PATH_MAX];
        dir_of(job_path, dir, sizeof dir);
        int len = snprintf(out, size, "%s/%s", dir, name);
        if (len > 0 && (size_t)len < size && readable(out))
            return CDSE_OK;
    }
    return cdse_job_find_data("", name, job_path, out, size);
}

typedef struct list_arg {
    const char *subdir;
    char *buf;
    size_t size;
} list_arg;

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the NAME.cfg files of the first data directory that has SUBDIR. */
static bool visit_list(const char *dir, void *arg)
{
    list_arg *list = arg;
    char path[CDSE_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, list->subdir);
    DIR *d = opendir(path);
    if (d == NULL)
        return false;
    char *names[128];
    int n = 0;
    for (struct dirent *e = readdir(d); e != NULL && n < 128; e = readdir(d)) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".cfg") == 0) {
            names[n] = strdup(e->d_name);
            if (names[n] != NULL)
                names[n++][len - 4] = '\0';
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], compare_names);
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        if (len < list->size)
            len += (size_t)snprintf(list->buf + len, list->size - len, "%s%s", i ? ", " : "",
                                    names[i]);
        free(names[i]);
    }
    return n > 0;
}

static void list_names(const char *subdir, const char *job_path, char *buf, size_t size)
{
    list_arg list = {subdir, buf, size};
    buf[0] = '\0';
    if (!each_data_dir(job_path, visit_list, &list))
        snprintf(buf, size, "(none found)");
}

/* Which kind of profile a parser reads; picks the table and the post-parse checks. */
typedef int (*profile_parse_fn)(parse_ctx *ctx, const config_setting_t *group, void *target,
                                bool fresh);

/* Loads the file NAME (a zoo name or a path) found for the setting `name_setting`. */
static int load_profile_named(parse_ctx *ctx, const config_setting_t *name_setting,
                              const char *subdir, const char *what, profile_parse_fn parse,
                              void *target, bool fresh)
{
    const char *name = config_setting_get_string(name_setting);
    char path[CDSE_PATH_MAX];
    if (ctx->depth >= MAX_PROFILE_DEPTH)
        return cdse__key_fail(ctx, name_setting, NULL, name_setting,
                              "profiles nested at most 4 deep",
                              "%s '%s' nests too deep (a cycle of base profiles?)", what, name);
    if (name[0] == '\0' || resolve_file(subdir, name, ctx->job_path, path, sizeof path) != 0) {
        char names[1200], allowed[1400], installed[PATH_MAX];
        if (cdse_installed_data_dir(installed, sizeof installed) != 0)
            snprintf(installed, sizeof installed, "BINDIR/../share/clusterdse");
        if (subdir[0] != '\0') {
            list_names(subdir, ctx->job_path, names, sizeof names);
            snprintf(allowed, sizeof allowed,
                     "a name from %s/ (%s), a path to a .cfg file, or an inline group", subdir,
                     names);
        } else {
            snprintf(allowed, sizeof allowed,
                     "a readable file: an absolute path, or a path relative to the job file's "
                     "directory, its parents, or a data directory");
        }
        return cdse__key_fail(
            ctx, name_setting, NULL, name_setting, allowed,
            "%s '%s' not found (searched $CLUSTERDSE_DATA, the job file's directory and "
            "its parents, %s, %s)",
            what, name, CDSE_SOURCE_DIR, installed);
    }
    char *text, why[160];
    int nul_line;
    if (cdse__read_file(path, &text, why, sizeof why, &nul_line) != 0) {
        if (nul_line > 0)
            snprintf(why + strlen(why), sizeof why - strlen(why), " at line %d", nul_line);
        return cdse__key_fail(ctx, name_setting, NULL, name_setting,
                              "a readable regular file of at most 16 MiB without NUL bytes",
                              "cannot read %s (%s)", path, why);
    }
    parse_ctx inner = {
        .file = path, .job_path = ctx->job_path, .diag = ctx->diag, .depth = ctx->depth + 1};
    config_t cfg;
    int rc = cdse__read_config(&inner, text, &cfg);
    free(text);
    if (rc != 0)
        return rc;
    rc = parse(&inner, config_root_setting(&cfg), target, fresh);
    config_destroy(&cfg);
    return rc;
}

/* --- Models --- */

static int parse_seq_histogram(parse_ctx *ctx, const config_setting_t *setting, void *target,
                               const key_spec *key);
static void print_seq_histogram(FILE *out, const void *target, const key_spec *key, int indent);

#define MODEL_INT(key, field, lo, req, dflt, text)                                                 \
    {                                                                                              \
        .name = key, .type = KEY_INT, .offset = offsetof(cdse_model, field), .min = lo,            \
        .max = INT_MAX_D, .required = req, .def_text = dflt, .help = text                          \
    }

static const key_spec model_keys[] = {
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_model, name),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "model name used in outputs"},
    MODEL_INT("layers", layers, 1, true, "required", "transformer layers"),
    MODEL_INT("hidden", hidden, 1, true, "required", "hidden size (model dimension)"),
    MODEL_INT("heads", heads, 1, true, "required", "attention (query) heads"),
    MODEL_INT("kv_heads", kv_heads, 1, false, "heads",
              "key/value heads; must divide heads (GQA: fewer than heads, MQA: 1)"),
    MODEL_INT("head_dim", head_dim, 1, false, "hidden/heads", "size of one attention head"),
    MODEL_INT("ffn", ffn, 1, false, "4*hidden", "MLP inner size"),
    MODEL_INT("seq_len", seq_len, 1, true, "required", "training sequence length (tokens)"),
    MODEL_INT("vocab", vocab, 1, true, "required", "vocabulary size as the framework pads it"),
    {.name = "gated_mlp",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_model, gated_mlp),
     .def_text = "false",
     .help = "gated MLP (SwiGLU): three ffn-wide matrices instead of two"},
    {.name = "tied_embeddings",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_model, tied_embeddings),
     .def_text = "false",
     .help = "output layer shares the input embedding matrix"},
    MODEL_INT("experts", experts, 0, false, "0", "MoE experts per MoE layer (0 = dense model)"),
    MODEL_INT("top_k", top_k, 1, false, "required if experts > 0",
              "experts each token is routed to"),
    MODEL_INT("moe_ffn", moe_ffn, 1, false, "ffn", "expert MLP inner size"),
    MODEL_INT("moe_every", moe_every, 1, false, "1", "every n-th layer is an MoE layer"),
    MODEL_INT("shared_experts", shared_experts, 0, false, "0", "experts every token goes through"),
    {.name = "capacity_factor",
     .type = KEY_FLOAT,
     .offset = offsetof(cdse_model, capacity_factor),
     .min = 0,
     .max = 1e6,
     .def_text = "0",
     .help = "expert capacity factor (0 = dropless)"},
    {.name = "moe_imbalance",
     .type = KEY_FLOAT,
     .offset = offsetof(cdse_model, moe_imbalance),
     .min = 0,
     .max = 1e6,
     .def_text = "0",
     .help = "tokens on the busiest expert rank / the average, >= 1 (0 = the evaluator's default "
             "for trained routers)"},
    MODEL_INT("first_dense_layers", first_dense_layers, 0, false, "0",
              "leading dense layers before the MoE layers (DeepSeek-V3: 3)"),
    {.name = "seq_len_histogram",
     .type = KEY_CUSTOM,
     .parse = parse_seq_histogram,
     .print = print_seq_histogram,
     .type_text = "list of [length, weight]",
     .def_text = "none",
     .help = "sample lengths of variable-length training data: time is costed at the mean length "
             "and the slowest data-parallel rank, memory at seq_len"},
};
static const key_table model_table = {"models[]", model_keys,
                                      (int)(sizeof model_keys / sizeof model_keys[0])};

static int parse_seq_histogram(parse_ctx *ctx, const config_setting_t *setting, void *target,
                               const key_spec *key)
{
    (void)key;
    cdse_model *model = target;
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "a list of 1 to %d pairs [length >= 1, weight >= 0] with distinct lengths, e.g. "
             "( [512.0, 0.3], [2048.0, 0.5], [8192.0, 0.2] )",
             CDSE_MAX_SEQ_BINS);
    if (!config_setting_is_list(setting) && !config_setting_is_array(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list");
    int n = config_setting_length(setting);
    if (n < 1 || n > CDSE_MAX_SEQ_BINS)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d bins", n);
    model->n_seq_bins = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *pair = config_setting_get_elem(setting, i);
        if (!config_setting_is_aggregate(pair) || config_setting_is_group(pair) ||
            config_setting_length(pair) != 2)
            return cdse__key_fail(ctx, setting, NULL, pair, allowed, "bin %d is not a pair", i);
        double v[2];
        for (int j = 0; j < 2; j++) {
            const config_setting_t *x = config_setting_get_elem(pair, j);
            if (!config_setting_is_number(x))
                return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                      "bin %d holds a non-number", i);
            v[j] = config_setting_type(x) == CONFIG_TYPE_FLOAT
                       ? config_setting_get_float(x)
                       : (double)config_setting_get_int64(x);
        }
        if (!(v[0] >= 1.0 && v[0] <= INT_MAX_D) || !(v[1] >= 0.0 && v[1] <= 1e300))
            return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                  "bin %d = [%g, %g] is out of range", i, v[0], v[1]);
        for (int j = 0; j < i; j++)
            if (model->seq_bin_len[j] == v[0])
                return cdse__key_fail(ctx, setting, NULL, pair, allowed, "length %g appears twice",
                                      v[0]);
        model->seq_bin_len[i] = v[0];
        model->seq_bin_weight[i] = v[1];
        model->n_seq_bins = i + 1;
    }
    return 0;
}

/* The model's size limits (workload.h), checked before anything is derived from the sizes. */
static const struct {
    const char *key;
    size_t offset;
    int max;
} model_limits[] = {
    {"layers", offsetof(cdse_model, layers), CDSE_MODEL_MAX_COUNT},
    {"hidden", offsetof(cdse_model, hidden), CDSE_MODEL_MAX_WIDTH},
    {"heads", offsetof(cdse_model, heads), CDSE_MODEL_MAX_COUNT},
    {"kv_heads", offsetof(cdse_model, kv_heads), CDSE_MODEL_MAX_COUNT},
    {"head_dim", offsetof(cdse_model, head_dim), CDSE_MODEL_MAX_WIDTH},
    {"ffn", offsetof(cdse_model, ffn), CDSE_MODEL_MAX_WIDTH},
    {"seq_len", offsetof(cdse_model, seq_len), CDSE_MODEL_MAX_LENGTH},
    {"vocab", offsetof(cdse_model, vocab), CDSE_MODEL_MAX_LENGTH},
    {"experts", offsetof(cdse_model, experts), CDSE_MODEL_MAX_COUNT},
    {"top_k", offsetof(cdse_model, top_k), CDSE_MODEL_MAX_COUNT},
    {"moe_ffn", offsetof(cdse_model, moe_ffn), CDSE_MODEL_MAX_WIDTH},
    {"moe_every", offsetof(cdse_model, moe_every), CDSE_MODEL_MAX_COUNT},
    {"shared_experts", offsetof(cdse_model, shared_experts), CDSE_MODEL_MAX_COUNT},
    {"first_dense_layers", offsetof(cdse_model, first_dense_layers), CDSE_MODEL_MAX_COUNT},
};

static int model_check_limits(parse_ctx *ctx, const config_setting_t *group,
                              const cdse_model *model)
{
    for (size_t i = 0; i < sizeof model_limits / sizeof model_limits[0]; i++) {
        int value = *(const int *)((const char *)model + model_limits[i].offset);
        if (value <= model_limits[i].max)
            continue;
        const config_setting_t *at = config_setting_get_member(group, model_limits[i].key);
        char allowed[CDSE_ALLOWED_MAX];
        snprintf(allowed, sizeof allowed,
                 "an integer up to %d (the model's size limit, so that every derived size fits)",
                 model_limits[i].max);
        return cdse__key_fail(ctx, at ? at : group, at ? NULL : model_limits[i].key, at ? at : group,
                    allowed, "%d is too large", value);
    }
    return 0;
}

/* Checks across keys of one model, each error at the line of the key at fault. */
static int model_finish(parse_ctx *ctx, const config_setting_t *group, cdse_model *model)
{
    const config_setting_t *heads = config_setting_get_member(group, "heads");
    const config_setting_t *kv = config_setting_get_member(group, "kv_heads");
    const config_setting_t *experts = config_setting_get_member(group, "experts");
    char allowed[CDSE_ALLOWED_MAX];
    if (model_check_limits(ctx, group, model) != 0)
        return CDSE_EINVAL;
    if (model->kv_heads == 0)
        model->kv_heads = model->heads;
    if (model->ffn == 0)
        model->ffn = 4 * model->hidden;
    if (model->heads % model->kv_heads != 0) {
        snprintf(allowed, sizeof allowed, "a divisor of heads = %d", model->heads);
        return cdse__key_fail(ctx, kv ? kv : group, kv ? NULL : "kv_heads", kv ? kv : group,
                              allowed, "kv_heads = %d does not divide heads = %d", model->kv_heads,
                              model->heads);
    }
    if (model->head_dim == 0 && model->hidden % model->heads != 0) {
        return cdse__key_fail(ctx, heads ? heads : group, heads ? NULL : "heads",
                              heads ? heads : group, "a divisor of hidden, or an explicit head_dim",
                              "heads = %d does not divide hidden = %d and head_dim is not given",
                              model->heads, model->hidden);
    }
    if (model->experts > 0 && model->top_k == 0)
        return cdse__key_fail(ctx, group, "top_k", experts ? experts : group,
                              "an integer from 1 to experts",
                              "missing (required when experts = %d)", model->experts);
    if (model->top_k > 0 && model->top_k > (model->experts > 0 ? model->experts : 0))
        return cdse__key_fail(ctx, group, "top_k", config_setting_get_member(group, "top_k"),
                              "an integer from 1 to experts (and experts > 0)",
                              "top_k = %d with experts = %d", model->top_k, model->experts);
    const config_setting_t *imbalance = config_setting_get_member(group, "moe_imbalance");
    if (model->moe_imbalance > 0.0 && model->moe_imbalance < 1.0)
        return cdse__key_fail(
            ctx, imbalance, NULL, imbalance, "0 (the default) or a ratio >= 1",
            "%g: the busiest expert rank cannot have fewer tokens than the average",
            model->moe_imbalance);
    const config_setting_t *dense = config_setting_get_member(group, "first_dense_layers");
    if (model->first_dense_layers >= model->layers) {
        snprintf(allowed, sizeof allowed, "0 to layers - 1 = %d", model->layers - 1);
        return cdse__key_fail(ctx, dense, NULL, dense, allowed, "%d dense layers of %d",
                              model->first_dense_layers, model->layers);
    }
    const config_setting_t *histogram = config_setting_get_member(group, "seq_len_histogram");
    if (histogram != NULL) {
        double weights = 0.0;
        for (int i = 0; i < model->n_seq_bins; i++) {
            weights += model->seq_bin_weight[i];
            if (model->seq_bin_len[i] > model->seq_len) {
                snprintf(allowed, sizeof allowed, "lengths up to seq_len = %d", model->seq_len);
                return cdse__key_fail(ctx, histogram, NULL, config_setting_get_elem(histogram, i),
                                      allowed, "length %g is longer than seq_len",
                                      model->seq_bin_len[i]);
            }
        }
        if (!(weights > 0.0))
            return cdse__key_fail(ctx, histogram, NULL, histogram, "weights with a positive sum",
                                  "the weights sum to 0");
    }
    cdse_model_fill_defaults(model);
    cdse_diag inner;
    inner.msg[0] = '\0';
    if (cdse_model_check(model, &inner) != 0)
        return cdse__key_fail(ctx, group, NULL, group, "values consistent with each other",
                              "model '%s': %s", model->name, inner.msg);
    /* Normalizes the histogram and precomputes its imbalance grid (seeded: the same on every
     * rank). */
    cdse_model_prepare(model);
    return 0;
}

static int parse_model_group(parse_ctx *ctx, const config_setting_t *group, void *target,
                             bool fresh)
{
    cdse_model *model = target;
    int rc = cdse__parse_group(ctx, group, &model_table, model, fresh);
    return rc != 0 ? rc : model_finish(ctx, group, model);
}

int cdse_model_load_file(const char *path, cdse_model *model, cdse_diag *diag)
{
    char *text;
    int rc_read = cdse__read_file_diag(path, "model file", &text, diag);
    if (rc_read != 0)
        return rc_read;
    parse_ctx ctx = {.file = path, .job_path = path, .diag = diag};
    config_t cfg;
    memset(model, 0, sizeof *model);
    int rc = cdse__read_config(&ctx, text, &cfg);
    free(text);
    if (rc != 0)
        return rc;
    rc = parse_model_group(&ctx, config_root_setting(&cfg), model, true);
    config_destroy(&cfg);
    return rc;
}

/* --- Systems --- */

static int parse_eff_table(parse_ctx *ctx, const config_setting_t *setting, void *target,
                           const key_spec *key);
static int parse_network(parse_ctx *ctx, const config_setting_t *setting, void *target,
                         const key_spec *key);
static int parse_coll(parse_ctx *ctx, const config_setting_t *setting, void *target,
                      const key_spec *key);
static void print_eff_table(FILE *out, const void *target, const key_spec *key, int indent);
static void print_network(FILE *out, const void *target, const key_spec *key, int indent);
static void print_coll(FILE *out, const void *target, const key_spec *key, int indent);
static int skip_key(parse_ctx *ctx, const config_setting_t *setting, void *target,
                    const key_spec *key)
{
    (void)ctx, (void)setting, (void)target, (void)key;
    return 0;
}

#define FLOAT_KEY(st, key, field, lo, open, hi, req, dflt, dtext, text)                            \
    {                                                                                              \
        .name = key, .type = KEY_FLOAT, .offset = offsetof(st, field), .min = lo,                  \
        .min_open = open, .max = hi, .required = req, .has_default = !(req), .def = dflt,          \
        .def_text = dtext, .help = text                                                            \
    }

static const key_spec peak_keys[] = {
#define PEAK(key, dtype)                                                                           \
    FLOAT_KEY(cdse_system, key, peak_tflops[dtype], 0, false, 1e7, false, 0, "0",                  \
              "dense " key " peak TFLOP/s per GPU (0 = unsupported)")
    PEAK("fp32", CDSE_FP32), PEAK("tf32", CDSE_TF32), PEAK("bf16", CDSE_BF16),
    PEAK("fp16", CDSE_FP16), PEAK("fp8", CDSE_FP8),
#undef PEAK
};
/* Offsets of peak_keys are relative to the system; the group's offset is 0. */
static const key_table peak_table = {"systems[].peak_tflops", peak_keys,
                                     (int)(sizeof peak_keys / sizeof peak_keys[0])};

typedef struct coll_fit {
    double latency_us;
    double bandwidth_gbs;
} coll_fit;

static const key_spec coll_keys[] = {
    FLOAT_KEY(coll_fit, "latency", latency_us, 0, false, 1e9, true, 0, "required",
              "fitted latency (us)"),
    FLOAT_KEY(coll_fit, "bandwidth", bandwidth_gbs, 0, true, 1e9, true, 0, "required",
              "fitted effective bus bandwidth (GB/s)"),
};
static const key_table coll_table = {"systems[].network[].<collective>", coll_keys,
                                     (int)(sizeof coll_keys / sizeof coll_keys[0])};

#define COLL_KEY(key, coll)                                                                        \
    {                                                                                              \
        .name = key, .type = KEY_CUSTOM, .parse = parse_coll, .print = print_coll, .arg = coll,    \
        .type_text = "group { latency; bandwidth; }", .def_text = "unset",                         \
        .help = "fitted parameters for " key " (written by clusterdse fit)"                        \
    }

static const key_spec level_keys[] = {
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_net_level, name),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "level name (nvlink, ib, ...)"},
    {.name = "size",
     .type = KEY_INT,
     .offset = offsetof(cdse_net_level, size),
     .min = 0,
     .max = INT_MAX_D,
     .required = true,
     .def_text = "required",
     .help = "GPUs in one domain of this level (0 on the last level = the whole system)"},
    FLOAT_KEY(cdse_net_level, "bandwidth", bandwidth_gbs, 0, true, 1e9, true, 0, "required",
              "GB/s per GPU, one direction"),
    FLOAT_KEY(cdse_net_level, "latency", latency_us, 0, false, 1e9, true, 0, "required",
              "latency per step (us)"),
    FLOAT_KEY(cdse_net_level, "efficiency", efficiency, 0, true, 1, false, 1.0, "1.0",
              "achievable share of bandwidth for collectives"),
    FLOAT_KEY(cdse_net_level, "port_price", port_price, 0, false, 1e12, false, 0, "0",
              "purchase price of this level per GPU: ports, switches, cables (cost_to_train)"),
    COLL_KEY("allreduce", CDSE_COLL_ALLREDUCE),
    COLL_KEY("allgather", CDSE_COLL_ALLGATHER),
    COLL_KEY("reduce_scatter", CDSE_COLL_REDUCE_SCATTER),
    COLL_KEY("alltoall", CDSE_COLL_ALLTOALL),
    COLL_KEY("sendrecv", CDSE_COLL_SENDRECV),
};
static const key_table level_table = {"systems[].network[]", level_keys,
                                      (int)(sizeof level_keys / sizeof level_keys[0])};

static const char *const attach_names[] = {"none", "per_gpu", "per_node", "pool", NULL};

static const key_spec tier_keys[] = {
    {.name = "attach",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_mem_tier, attach),
     .choices = attach_names,
     .required = true,
     .def_text = "required",
     .help = "per_gpu: each GPU has its own; per_node: one per node; pool: shared by shared_by "
             "GPUs"},
    FLOAT_KEY(cdse_mem_tier, "capacity_gib", capacity_gib, 0, true, 1e9, true, 0, "required",
              "capacity per attachment domain (GiB)"),
    FLOAT_KEY(cdse_mem_tier, "bandwidth", bandwidth_gbs, 0, true, 1e9, true, 0, "required",
              "GB/s per attachment domain, one direction"),
    FLOAT_KEY(cdse_mem_tier, "latency", latency_us, 0, false, 1e9, false, 0, "0",
              "access latency (us)"),
    {.name = "shared_by",
     .type = KEY_INT,
     .offset = offsetof(cdse_mem_tier, shared_by),
     .min = 1,
     .max = INT_MAX_D,
     .def_text = "1 / gpus_per_node",
     .help = "GPUs sharing one domain (default 1 for per_gpu, gpus_per_node otherwise)"},
};
static const key_table tier_table = {"systems[].memory_tier", tier_keys,
                                     (int)(sizeof tier_keys / sizeof tier_keys[0])};

static const key_spec cost_keys[] = {
    FLOAT_KEY(cdse_cost, "gpu_price", gpu_price, 0, false, 1e12, false, 0, "0",
              "purchase price per GPU with its share of the node (currency units)"),
    FLOAT_KEY(cdse_cost, "facility_price", facility_price, 0, false, 1e12, false, 0, "0",
              "per GPU: its share of the building, power and cooling plant"),
    FLOAT_KEY(cdse_cost, "amortization_years", amortization_years, 0, true, 100, false, 5.0, "5",
              "years over which the purchase is spread (hyperscalers depreciate servers over "
              "5-6 years)"),
    FLOAT_KEY(cdse_cost, "rental_price", rental_price, 0, false, 1e9, false, 0, "0",
              "per GPU-hour; > 0: the system is rented (power included) instead of bought"),
    FLOAT_KEY(cdse_cost, "gpu_power", gpu_power_w, 0, false, 1e6, false, 0, "0",
              "average draw per GPU while training (W; datasheet TDP as an upper estimate)"),
    FLOAT_KEY(cdse_cost, "node_power", node_power_w, 0, false, 1e7, false, 0, "0",
              "draw per node besides its GPUs: CPUs, memory, NICs, fans (W)"),
    FLOAT_KEY(cdse_cost, "pue", pue, 1, false, 10, false, 1.0, "1.0",
              "power usage effectiveness: facility power over IT power"),
};
static const key_table cost_table = {"systems[].cost", cost_keys,
                                     (int)(sizeof cost_keys / sizeof cost_keys[0])};

static const key_spec system_keys[] = {
    {.name = "base",
     .type = KEY_CUSTOM,
     .parse = skip_key,
     .type_text = "string",
     .def_text = "none",
     .help = "start from this profile (name or path) and override the keys given"},
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_system, name),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "system name used in outputs"},
    {.name = "gpu",
     .type = KEY_STRING,
     .offset = offsetof(cdse_system, gpu),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "accelerator model"},
    {.name = "gpus_per_node",
     .type = KEY_INT,
     .offset = offsetof(cdse_system, gpus_per_node),
     .min = 1,
     .max = 1e6,
     .required = true,
     .def_text = "required",
     .help = "GPUs per node"},
    {.name = "peak_tflops",
     .type = KEY_GROUP,
     .offset = 0,
     .sub = &peak_table,
     .required = true,
     .type_text = "group { fp32; tf32; bf16; fp16; fp8; }",
     .def_text = "required",
     .help = "dense peak TFLOP/s per GPU per data type"},
    {.name = "gemm_efficiency",
     .type = KEY_CUSTOM,
     .offset = offsetof(cdse_system, gemm_eff),
     .parse = parse_eff_table,
     .print = print_eff_table,
     .required = true,
     .type_text = "list of [flops, efficiency]",
     .def_text = "required",
     .help = "GEMM efficiency vs GEMM FLOPs, sorted by FLOPs (interpolated in log FLOPs)"},
    {.name = "gemm_efficiency_fp8",
     .type = KEY_CUSTOM,
     .offset = offsetof(cdse_system, gemm_eff_fp8),
     .parse = parse_eff_table,
     .print = print_eff_table,
     .type_text = "list of [flops, efficiency]",
     .def_text = "gemm_efficiency",
     .help = "GEMM efficiency table for fp8 GEMMs"},
    FLOAT_KEY(cdse_system, "attention_efficiency", attention_efficiency, 0, true, 1, true, 0,
              "required", "fused (flash) attention kernels, fraction of bf16 peak"),
    FLOAT_KEY(cdse_system, "hbm_gib", hbm_gib, 0, true, 1e6, true, 0, "required",
              "HBM capacity per GPU (GiB)"),
    FLOAT_KEY(cdse_system, "hbm_bandwidth", hbm_bandwidth_gbs, 0, true, 1e6, true, 0, "required",
              "HBM bandwidth per GPU (GB/s)"),
    FLOAT_KEY(cdse_system, "hbm_efficiency", hbm_efficiency, 0, true, 1, true, 0, "required",
              "achievable share of HBM bandwidth for streaming kernels"),
    FLOAT_KEY(cdse_system, "reserved_gib", reserved_gib, 0, false, 1e6, true, 0, "required",
              "HBM not available to the model: context, allocator, workspaces (GiB)"),
    {.name = "network",
     .type = KEY_CUSTOM,
     .parse = parse_network,
     .print = print_network,
     .type_text = "list of level groups",
     .def_text = "required",
     .help = "network levels, innermost first (required unless network_profile is given)"},
    {.name = "network_profile",
     .type = KEY_CUSTOM,
     .parse = skip_key,
     .type_text = "string (path)",
     .def_text = "none",
     .help = "take the network levels from this fitted profile file"},
    {.name = "memory_tier",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_system, tier),
     .sub = &tier_table,
     .type_text = "group",
     .def_text = "none",
     .help = "second memory tier (offload / memory expansion target)"},
    {.name = "cost",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_system, cost),
     .sub = &cost_table,
     .type_text = "group",
     .def_text = "unknown (0)",
     .help = "what a GPU costs and draws (cost_to_train, energy_to_train_mwh, tokens_per_kwh)"},
};
static const key_table system_table = {"systems[]", system_keys,
                                       (int)(sizeof system_keys / sizeof system_keys[0])};

static int parse_eff_table(parse_ctx *ctx, const config_setting_t *setting, void *target,
                           const key_spec *key)
{
    cdse_eff_table *table = (cdse_eff_table *)((char *)target + key->offset);
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "a list of 1 to %d pairs [flops > 0, efficiency in (0, 1]] sorted by increasing flops",
             CDSE_MAX_EFF_POINTS);
    if (!config_setting_is_list(setting) && !config_setting_is_array(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list");
    int n = config_setting_length(setting);
    if (n < 1 || n > CDSE_MAX_EFF_POINTS)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d points", n);
    memset(table, 0, sizeof *table);
    for (int i = 0; i < n; i++) {
        const config_setting_t *pair = config_setting_get_elem(setting, i);
        if (!config_setting_is_aggregate(pair) || config_setting_is_group(pair) ||
            config_setting_length(pair) != 2)
            return cdse__key_fail(ctx, setting, NULL, pair, allowed, "point %d is not a pair", i);
        double v[2];
        for (int j = 0; j < 2; j++) {
            const config_setting_t *x = config_setting_get_elem(pair, j);
            if (!config_setting_is_number(x))
                return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                      "point %d holds a non-number", i);
            v[j] = config_setting_type(x) == CONFIG_TYPE_FLOAT
                       ? config_setting_get_float(x)
                       : (double)config_setting_get_int64(x);
            if (config_setting_type(x) == CONFIG_TYPE_INT)
                v[j] = config_setting_get_int(x);
        }
        if (!(v[0] > 0) || !(v[1] > 0 && v[1] <= 1))
            return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                  "point %d = [%g, %g] is out of range", i, v[0], v[1]);
        if (i > 0 && !(v[0] > table->flops[i - 1]))
            return cdse__key_fail(ctx, setting, NULL, pair, allowed,
                                  "point %d: flops %g not above the previous %g", i, v[0],
                                  table->flops[i - 1]);
        table->flops[i] = v[0];
        table->eff[i] = v[1];
        table->n = i + 1;
    }
    return 0;
}

static int parse_coll(parse_ctx *ctx, const config_setting_t *setting, void *target,
                      const key_spec *key)
{
    cdse_net_level *level = target;
    coll_fit fit = {0, 0};
    int rc = cdse__parse_group(ctx, setting, &coll_table, &fit, true);
    if (rc != 0)
        return rc;
    level->coll_latency_us[key->arg] = fit.latency_us;
    level->coll_bandwidth_gbs[key->arg] = fit.bandwidth_gbs;
    return 0;
}

static int parse_network(parse_ctx *ctx, const config_setting_t *setting, void *target,
                         const key_spec *key)
{
    (void)key;
    cdse_system *system = target;
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "a list of 1 to %d level groups ( { name; size; bandwidth; latency; efficiency; }, "
             "... ), innermost first",
             CDSE_MAX_LEVELS);
    if (!config_setting_is_list(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list ( ... )");
    int n = config_setting_length(setting);
    if (n < 1 || n > CDSE_MAX_LEVELS)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d levels", n);
    system->n_levels = 0;
    memset(system->level, 0, sizeof system->level);
    for (int i = 0; i < n; i++) {
        const config_setting_t *group = config_setting_get_elem(setting, i);
        cdse_net_level *level = &system->level[i];
        int rc = cdse__parse_group(ctx, group, &level_table, level, true);
        if (rc != 0)
            return rc;
        const config_setting_t *size = config_setting_get_member(group, "size");
        if (level->size == 0 && i < n - 1)
            return cdse__key_fail(ctx, size, NULL, size, "size >= 1 on every level but the last",
                                  "size 0 (whole system) on level %d of %d", i, n);
        if (i > 0 && level->size != 0 && level->size % system->level[i - 1].size != 0) {
            char nest[120];
            snprintf(nest, sizeof nest,
                     "a multiple of the inner level's size %d, or 0 on the "
                     "last level",
                     system->level[i - 1].size);
            return cdse__key_fail(ctx, size, NULL, size, nest, "size %d does not nest",
                                  level->size);
        }
        system->n_levels = i + 1;
    }
    return 0;
}

static int parse_system_group(parse_ctx *ctx, const config_setting_t *group, void *target,
                              bool fresh);

static int system_finish(parse_ctx *ctx, const config_setting_t *group, cdse_system *system,
                         bool fresh)
{
    const config_setting_t *profile = config_setting_get_member(group, "network_profile");
    const config_setting_t *network = config_setting_get_member(group, "network");
    if (profile != NULL) {
        if (network != NULL)
            return cdse__key_fail(
                ctx, profile, NULL, profile, "network or network_profile, not both",
                "given together with network (line %d)", config_setting_source_line(network));
        if (config_setting_type(profile) != CONFIG_TYPE_STRING)
            return cdse__key_fail(ctx, profile, NULL, profile, "a path to a fitted profile file",
                                  "expected a string");
        cdse_system *fitted = calloc(1, sizeof *fitted);
        if (fitted == NULL)
            return CDSE_ENOMEM;
        int rc = load_profile_named(ctx, profile, "", "network profile", parse_system_group, fitted,
                                    false);
        if (rc == 0 && fitted->n_levels == 0)
            rc = cdse__key_fail(ctx, profile, NULL, profile, "a file holding network = ( ... )",
                                "the profile has no network levels");
        if (rc == 0) {
            system->n_levels = fitted->n_levels;
            memcpy(system->level, fitted->level, sizeof system->level);
        }
        free(fitted);
        if (rc != 0)
            return rc;
    } else if (fresh && network == NULL) {
        return cdse__key_fail(ctx, group, "network", group,
                              "a list of level groups, or network_profile", "missing (required)");
    }
    const config_setting_t *tier = config_setting_get_member(group, "memory_tier");
    if (tier != NULL && system->tier.attach == CDSE_TIER_NONE &&
        config_setting_get_member(tier, "attach") == NULL)
        return cdse__key_fail(ctx, tier, "attach", tier,
                              "one of \"per_gpu\", \"per_node\", \"pool\"", "missing (required)");
    if (tier != NULL && system->tier.shared_by == 0)
        system->tier.shared_by =
            system->tier.attach == CDSE_TIER_PER_GPU ? 1 : system->gpus_per_node;
    cdse_diag inner;
    inner.msg[0] = '\0';
    if (cdse_system_check(system, &inner) != 0)
        return cdse__key_fail(ctx, group, NULL, group, "values consistent with each other",
                              "system '%s': %s", system->name, inner.msg);
    return 0;
}

static int parse_system_group(parse_ctx *ctx, const config_setting_t *group, void *target,
                              bool fresh)
{
    cdse_system *system = target;
    if (!config_setting_is_group(group))
        return cdse__key_fail(ctx, group, NULL, group, "a group { key = value; ... }",
                              "expected a group");
    const config_setting_t *base = config_setting_get_member(group, "base");
    if (base != NULL) {
        if (config_setting_type(base) != CONFIG_TYPE_STRING)
            return cdse__key_fail(ctx, base, NULL, base, "a system name or a path",
                                  "expected a string");
        int rc = load_profile_named(ctx, base, "calibration/systems", "system", parse_system_group,
                                    system, true);
        if (rc != 0)
            return rc;
        fresh = false;
    }
    int rc = cdse__parse_group(ctx, group, &system_table, system, fresh);
    if (rc != 0)
        return rc;
    /* A profile used only for its network (network_profile) need not be complete. */
    if (!fresh && base == NULL)
        return 0;
    return system_finish(ctx, group, system, fresh);
}

int cdse_system_load_file(const char *path, cdse_system *system, cdse_diag *diag)
{
    char *text;
    int rc_read = cdse__read_file_diag(path, "system profile", &text, diag);
    if (rc_read != 0)
        return rc_read;
    parse_ctx ctx = {.file = path, .job_path = path, .diag = diag};
    config_t cfg;
    memset(system, 0, sizeof *system);
    int rc = cdse__read_config(&ctx, text, &cfg);
    free(text);
    if (rc != 0)
        return rc;
    rc = parse_system_group(&ctx, config_root_setting(&cfg), system, true);
    config_destroy(&cfg);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The job: models, systems, space, objective                                                 */

/* --- Heterogeneous pools: a system made of GPU types listed with their counts --- */

typedef struct pool_member {
    cdse_system system;
    int gpus;
} pool_member;

static int parse_member_system(parse_ctx *ctx, const config_setting_t *setting, void *target,
                               const key_spec *key)
{
    (void)key;
    pool_member *member = target;
    if (config_setting_type(setting) == CONFIG_TYPE_STRING)
        return load_profile_named(ctx, setting, "calibration/systems", "system", parse_system_group,
                                  &member->system, true);
    if (config_setting_is_group(setting))
        return parse_system_group(ctx, setting, &member->system, true);
    return cdse__key_fail(
        ctx, setting, NULL, setting,
        "a system name from calibration/systems/, a path, or an inline system group",
        "expected a name or a group");
}

static const key_spec member_keys[] = {
    {.name = "system",
     .type = KEY_CUSTOM,
     .parse = parse_member_system,
     .required = true,
     .type_text = "name or group",
     .def_text = "required",
     .help = "the GPU type: a system profile (name, path, or inline group)"},
    {.name = "gpus",
     .type = KEY_INT,
     .offset = offsetof(pool_member, gpus),
     .min = 1,
     .max = MAX_GPUS,
     .required = true,
     .def_text = "required",
     .help = "GPUs of this type in the pool; a configuration takes its GPUs from the types in "
             "these proportions"},
};
static const key_table member_table = {"systems[].pool[]", member_keys,
                                       (int)(sizeof member_keys / sizeof member_keys[0])};

/* Index of `system` in the job's table: an identical entry is shared, a new one appended after
 * the listed systems. */
static int place_member(parse_ctx *ctx, const config_setting_t *at, const cdse_system *system,
                        int *index)
{
    cdse_job *job = ctx->job;
    for (int i = 0; i < job->n_systems; i++) {
        if (memcmp(&job->system[i], system, sizeof *system) == 0) {
            *index = i;
            return 0;
        }
        if (strcmp(job->system[i].name, system->name) == 0)
            return cdse__key_fail(ctx, at, NULL, at, "one profile per system name",
                                  "a different system named '%s' is already in the job",
                                  system->name);
    }
    if (job->n_systems >= CDSE_MAX_SYSTEMS)
        return cdse__key_fail(ctx, at, NULL, at, "at most 32 systems including pool members",
                              "too many systems");
    *index = job->n_systems;
    job->system[job->n_systems++] = *system;
    return 0;
}

static int parse_pool_members(parse_ctx *ctx, const config_setting_t *setting, void *target,
                              const key_spec *key)
{
    (void)key;
    cdse_system *pool = target;
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "a list of 2 to %d groups { system = NAME or { ... }; gpus = N; } of distinct GPU "
             "types",
             CDSE_MAX_POOL_TYPES);
    if (!config_setting_is_list(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list ( ... )");
    int n = config_setting_length(setting);
    if (n < 2 || n > CDSE_MAX_POOL_TYPES)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d GPU types", n);
    if (ctx->job == NULL)
        return cdse__key_fail(ctx, setting, NULL, setting, "pools in a job's systems list",
                              "a pool cannot be a profile file");
    pool_member *member = calloc(1, sizeof *member);
    if (member == NULL)
        return CDSE_ENOMEM;
    cdse_pool parsed = {0};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const config_setting_t *elem = config_setting_get_elem(setting, i);
        memset(member, 0, sizeof *member);
        rc = cdse__parse_group(ctx, elem, &member_table, member, true);
        if (rc == 0)
            rc = place_member(ctx, elem, &member->system, &parsed.member[i]);
        for (int j = 0; j < i && rc == 0; j++)
            if (parsed.member[j] == parsed.member[i])
                rc = cdse__key_fail(ctx, setting, NULL, elem, allowed,
                                    "GPU type '%s' appears twice", member->system.name);
        parsed.gpus[i] = member->gpus;
        parsed.n_types = i + 1;
    }
    free(member);
    if (rc != 0)
        return rc;
    /* The pool's own fields are those of its first member (hardware.h), under its own name. */
    char name[CDSE_NAME_MAX];
    memcpy(name, pool->name, sizeof name);
    *pool = ctx->job->system[parsed.member[0]];
    memcpy(pool->name, name, sizeof name);
    pool->pool = parsed;
    return 0;
}

static const key_spec pool_keys[] = {
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_system, name),
     .size = CDSE_NAME_MAX,
     .required = true,
     .def_text = "required",
     .help = "pool name used in outputs"},
    {.name = "pool",
     .type = KEY_CUSTOM,
     .parse = parse_pool_members,
     .required = true,
     .type_text = "list of member groups",
     .def_text = "required",
     .help = "a heterogeneous pool: its GPU types with their counts (keys: systems[].pool[])"},
};
static const key_table pool_table = {"systems[]", pool_keys,
                                     (int)(sizeof pool_keys / sizeof pool_keys[0])};

typedef struct job_entry {
    const char *subdir;
    const char *what;
    int max;
    size_t size; /* of one struct */
    profile_parse_fn parse;
    bool skip_pools; /* leave pool groups for parse_pools */
} job_entry;

/* `models` or `systems`: a name, or a list of names and inline groups. */
static int parse_entries(parse_ctx *ctx, const config_setting_t *setting, const job_entry *kind,
                         char *first, int *count)
{
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "a %s name from %s/, a path to a .cfg file, an inline group, or a list ( ... ) of "
             "1 to %d of these",
             kind->what, kind->subdir, kind->max);
    bool list = config_setting_is_list(setting) || config_setting_is_array(setting);
    int n = list ? config_setting_length(setting) : 1;
    if (n < 1 || n > kind->max)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d entries", n);
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
        char *target = first + (size_t)i * kind->size;
        memset(target, 0, kind->size);
        int rc;
        if (kind->skip_pools && config_setting_is_group(elem) &&
            config_setting_get_member(elem, "pool") != NULL)
            rc = 0; /* a pool: parsed once every listed system is known */
        else if (config_setting_type(elem) == CONFIG_TYPE_STRING)
            rc = load_profile_named(ctx, elem, kind->subdir, kind->what, kind->parse, target, true);
        else if (config_setting_is_group(elem))
            rc = kind->parse(ctx, elem, target, true);
        else
            rc = cdse__key_fail(ctx, elem, NULL, elem, allowed, "expected a name or a group");
        if (rc != 0)
            return rc;
        /* Names come first in both structs (checked below): duplicates would make outputs
         * ambiguous. */
        for (int j = 0; j < i && target[0] != '\0'; j++)
            if (strcmp(target, first + (size_t)j * kind->size) == 0)
                return cdse__key_fail(ctx, setting, NULL, elem, "distinct names",
                                      "%s '%s' appears twice", kind->what, target);
        *count = i + 1;
    }
    return 0;
}

_Static_assert(offsetof(cdse_model, name) == 0, "parse_entries compares names at offset 0");
_Static_assert(offsetof(cdse_system, name) == 0, "parse_entries compares names at offset 0");

static int parse_models(parse_ctx *ctx, const config_setting_t *setting, void *target,
                        const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    static const job_entry kind = {"jobs/models",      "model",           CDSE_MAX_MODELS,
                                   sizeof(cdse_model), parse_model_group, false};
    return parse_entries(ctx, setting, &kind, (char *)job->model, &job->n_models);
}

static int parse_systems(parse_ctx *ctx, const config_setting_t *setting, void *target,
                         const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    static const job_entry kind = {"calibration/systems", "system",           CDSE_MAX_SYSTEMS,
                                   sizeof(cdse_system),   parse_system_group, true};
    bool list = config_setting_is_list(setting) || config_setting_is_array(setting);
    /* Cluster sizes and hardware axes (lists in an inline entry) leave the tree before the
     * entries parse. */
    int n_listed = list ? config_setting_length(setting) : 1;
    int rc = 0;
    job->n_hw_axes = 0;
    for (int i = 0; i < n_listed && i < CDSE_MAX_SYSTEMS && rc == 0; i++) {
        config_setting_t *entry =
            list ? config_setting_get_elem(setting, (unsigned)i) : (config_setting_t *)setting;
        rc = cdse__sizes_extract(ctx, entry, i, job);
        if (rc == 0)
            rc = cdse__hw_extract(ctx, entry, i, job);
    }
    if (rc == 0)
        rc = parse_entries(ctx, setting, &kind, (char *)job->system, &job->n_systems);
    ctx->axis_systems = job->n_systems;
    ctx->job = job;
    if (rc == 0)
        rc = cdse__hw_check(ctx, setting, job);
    if (rc == 0)
        rc = cdse__sizes_check(ctx, setting, job);
    if (rc != 0)
        return rc;
    for (int i = 0; i < ctx->axis_systems && rc == 0; i++) {
        const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
        if (config_setting_is_group(elem) && config_setting_get_member(elem, "pool") != NULL)
            rc = cdse__parse_group(ctx, elem, &pool_table, &job->system[i], true);
    }
    for (int i = 0; i < ctx->axis_systems && rc == 0; i++)
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(job->system[i].name, job->system[j].name) == 0) {
                const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
                rc = cdse__key_fail(ctx, setting, NULL, elem, "distinct names",
                                    "system '%s' appears twice", job->system[i].name);
            }
    return rc;
}

/* --- Space --- */

static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const precision_names[] = {"bf16", "fp16", "fp8", NULL};
static const int precision_values[] = {CDSE_BF16, CDSE_FP16, CDSE_FP8};

#define AXIS_INT(key, ax, lo, hi, req, dflt, dtext, text)                                          \
    {                                                                                              \
        .name = key, .type = KEY_INT, .is_axis = true, .axis = ax, .min = lo, .max = hi,           \
        .required = req, .has_default = !(req), .def = dflt, .def_text = dtext, .help = text       \
    }

static const key_spec space_keys[] = {
    {.name = "gpus",
     .type = KEY_INT,
     .is_axis = true,
     .axis = CDSE_AXIS_GPUS,
     .min = 1,
     .max = MAX_GPUS,
     .def_text = "gpus or nodes required",
     .help = "GPUs in the job"},
    {.name = "nodes",
     .type = KEY_INT,
     .is_axis = true,
     .axis = AXIS_NODES,
     .min = 1,
     .max = MAX_GPUS,
     .def_text = "gpus or nodes required",
     .help = "nodes in the job: gpus = nodes * gpus_per_node (all systems must agree on it)"},
    AXIS_INT("tp", CDSE_AXIS_TP, 1, MAX_DEGREE, false, 1, "[1]", "tensor-parallel degree"),
    AXIS_INT("pp", CDSE_AXIS_PP, 1, MAX_DEGREE, false, 1, "[1]", "pipeline-parallel stages"),
    AXIS_INT("cp", CDSE_AXIS_CP, 1, MAX_DEGREE, false, 1, "[1]", "context-parallel degree"),
    AXIS_INT("ep", CDSE_AXIS_EP, 1, MAX_DEGREE, false, 1, "[1]",
             "expert-parallel degree (MoE models)"),
    AXIS_INT("vpp", CDSE_AXIS_VPP, 1, MAX_DEGREE, false, 1, "[1]",
             "virtual pipeline stages per GPU (interleaved 1F1B when > 1)"),
    AXIS_INT("microbatch", CDSE_AXIS_MICROBATCH, 1, MAX_DEGREE, false, 1, "[1]",
             "micro-batch size (sequences)"),
    AXIS_INT("global_batch", CDSE_AXIS_GLOBAL_BATCH, 1, INT_MAX_D, true, 0, "required",
             "global batch size (sequences per iteration); dp and gradient accumulation derive"),
    {.name = "recompute",
     .type = KEY_ENUM,
     .is_axis = true,
     .axis = CDSE_AXIS_RECOMPUTE,
     .choices = recompute_names,
     .has_default = true,
     .def = CDSE_RECOMPUTE_NONE,
     .def_text = "[\"none\"]",
     .help = "activation recomputation"},
    {.name = "sequence_parallel",
     .type = KEY_BOOL,
     .is_axis = true,
     .axis = CDSE_AXIS_SEQUENCE_PARALLEL,
     .has_default = true,
     .def = 0,
     .def_text = "[false]",
     .help = "Megatron sequence parallelism (with tp > 1)"},
    AXIS_INT("zero", CDSE_AXIS_ZERO, 0, 3, false, 0, "[0]",
             "ZeRO stage (1 = distributed optimizer)"),
    {.name = "precision",
     .type = KEY_ENUM,
     .is_axis = true,
     .axis = CDSE_AXIS_PRECISION,
     .choices = precision_names,
     .choice_value = precision_values,
     .has_default = true,
     .def = CDSE_BF16,
     .def_text = "[\"bf16\"]",
     .help = "compute precision of GEMMs (mixed precision with fp32 master weights)"},
    {.name = "flash_attention",
     .type = KEY_BOOL,
     .is_axis = true,
     .axis = CDSE_AXIS_FLASH_ATTENTION,
     .has_default = true,
     .def = 1,
     .def_text = "[true]",
     .help = "fused (flash) attention kernels"},
    {.name = "offload",
     .type = KEY_OFFLOAD,
     .is_axis = true,
     .axis = CDSE_AXIS_OFFLOAD,
     .has_default = true,
     .def = 0,
     .def_text = "[\"none\"]",
     .help = "state offloaded to the system's second memory tier"},
    {.name = "tp_comm_overlap",
     .type = KEY_BOOL,
     .is_axis = true,
     .axis = CDSE_AXIS_TP_COMM_OVERLAP,
     .has_default = true,
     .def = 0,
     .def_text = "[false]",
     .help = "tensor-parallel collectives pipelined with the GEMMs (Megatron-Core "
             "--tp-comm-overlap, Transformer Engine userbuffers)"},
    {.name = "placement",
     .type = KEY_ENUM,
     .is_axis = true,
     .axis = CDSE_AXIS_PLACEMENT,
     .choices = cdse_placement_names,
     .has_default = true,
     .def = 0,
     .def_text = "[\"tp-cp-dp-pp\"]",
     .help = "order in which the groups are laid out over the ranks, innermost first (EP is "
             "the inner part of dp); the groups' strides decide which network levels each "
             "collective crosses"},
};
static const key_table space_table = {"space", space_keys,
                                      (int)(sizeof space_keys / sizeof space_keys[0])};

static void axis_values_text(const space_input *in, int axis, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < in->n[axis] && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? ", " : "",
                                (long long)in->value[axis][i]);
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

/* Errors when no value of an axis can ever work for one of the job's models or systems. */
static int space_feasibility(parse_ctx *ctx, const config_setting_t *space, const cdse_job *job,
                             const space_input *in)
{
    char values[400], values2[400];
    for (int m = 0; m < job->n_models; m++) {
        const cdse_model *model = &job->model[m];
        bool tp_ok = false, pp_ok = false, ep_ok = false;
        for (int i = 0; i < in->n[CDSE_AXIS_TP]; i++)
            tp_ok |= model->heads % in->value[CDSE_AXIS_TP][i] == 0;
        for (int i = 0; i < in->n[CDSE_AXIS_PP]; i++)
            for (int j = 0; j < in->n[CDSE_AXIS_VPP]; j++)
                pp_ok |= in->value[CDSE_AXIS_PP][i] * in->value[CDSE_AXIS_VPP][j] <= model->layers;
        for (int i = 0; i < in->n[CDSE_AXIS_EP]; i++) {
            int64_t ep = in->value[CDSE_AXIS_EP][i];
            ep_ok |= ep == 1 || (model->experts > 0 && model->experts % ep == 0);
        }
        if (!tp_ok) {
            axis_values_text(in, CDSE_AXIS_TP, values, sizeof values);
            const config_setting_t *at = in->setting[CDSE_AXIS_TP];
            return cdse__key_fail(ctx, at ? at : space, at ? NULL : "tp", at ? at : space,
                                  "at least one tp that divides the heads of every model",
                                  "no value in %s divides the %d heads of model '%s'", values,
                                  model->heads, model->name);
        }
        if (!pp_ok) {
            axis_values_text(in, CDSE_AXIS_PP, values, sizeof values);
            axis_values_text(in, CDSE_AXIS_VPP, values2, sizeof values2);
            const config_setting_t *at = in->setting[CDSE_AXIS_PP];
            return cdse__key_fail(
                ctx, at ? at : space, at ? NULL : "pp", at ? at : space,
                "at least one pp * vpp no larger than the layers of every model",
                "every pp in %s times vpp in %s exceeds the %d layers of model '%s'", values,
                values2, model->layers, model->name);
        }
        if (!ep_ok) {
            axis_values_text(in, CDSE_AXIS_EP, values, sizeof values);
            const config_setting_t *at = in->setting[CDSE_AXIS_EP];
            return cdse__key_fail(ctx, at ? at : space, at ? NULL : "ep", at ? at : space,
                                  "1, or a divisor of the model's experts",
                                  "no value in %s works for model '%s' with %d experts", values,
                                  model->name, model->experts);
        }
    }
    bool gpus_ok = false;
    for (int g = 0; g < in->n[CDSE_AXIS_GPUS]; g++)
        for (int t = 0; t < in->n[CDSE_AXIS_TP]; t++)
            for (int p = 0; p < in->n[CDSE_AXIS_PP]; p++)
                for (int c = 0; c < in->n[CDSE_AXIS_CP]; c++) {
                    int64_t group = in->value[CDSE_AXIS_TP][t] * in->value[CDSE_AXIS_PP][p] *
                                    in->value[CDSE_AXIS_CP][c];
                    gpus_ok |= in->value[CDSE_AXIS_GPUS][g] % group == 0;
                }
    if (!gpus_ok) {
        axis_values_text(in, CDSE_AXIS_GPUS, values, sizeof values);
        const config_setting_t *at =
            in->setting[CDSE_AXIS_GPUS] ? in->setting[CDSE_AXIS_GPUS] : in->setting[AXIS_NODES];
        return cdse__key_fail(ctx, at, NULL, at,
                              "at least one gpus value divisible by some tp * pp * cp",
                              "no value in %s is divisible by any tp * pp * cp", values);
    }
    for (int s = 0; s < job->n_systems; s++) {
        bool offload_ok = job->system[s].tier.attach != CDSE_TIER_NONE;
        for (int i = 0; i < in->n[CDSE_AXIS_OFFLOAD]; i++)
            offload_ok |= in->value[CDSE_AXIS_OFFLOAD][i] == 0;
        if (!offload_ok) {
            const config_setting_t *at = in->setting[CDSE_AXIS_OFFLOAD];
            return cdse__key_fail(
                ctx, at, NULL, at, "\"none\" among the values, or a memory_tier on every system",
                "system '%s' has no second memory tier to offload to", job->system[s].name);
        }
    }
    for (int s = 0; s < job->n_systems; s++) {
        bool ok = false;
        for (int i = 0; i < in->n[CDSE_AXIS_PRECISION]; i++)
            ok |= job->system[s].peak_tflops[in->value[CDSE_AXIS_PRECISION][i]] > 0;
        if (!ok) {
            const config_setting_t *at = in->setting[CDSE_AXIS_PRECISION];
            return cdse__key_fail(ctx, at ? at : space, at ? NULL : "precision", at ? at : space,
                                  "a precision with a non-zero peak_tflops on every system",
                                  "system '%s' supports none of the precisions given",
                                  job->system[s].name);
        }
    }
    return 0;
}

/* Sizes per system: the feasibility rules hold for each system's sizes; the gpus axis takes the
 * first system's values (the evaluator reads job->system_gpus). */
static int space_per_system(parse_ctx *ctx, const config_setting_t *setting, const cdse_job *job,
                            space_input *in)
{
    int rc = 0;
    in->n[CDSE_AXIS_GPUS] = job->n_system_gpus;
    for (int s = ctx->axis_systems - 1; s >= 0 && rc == 0; s--) {
        for (int i = 0; i < job->n_system_gpus; i++)
            in->value[CDSE_AXIS_GPUS][i] = job->system_gpus[s][i];
        rc = space_feasibility(ctx, setting, job, in);
    }
    return rc;
}

static int parse_space(parse_ctx *ctx, const config_setting_t *setting, void *target,
                       const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    space_input *in = calloc(1, sizeof *in);
    if (in == NULL)
        return CDSE_ENOMEM;
    int rc = cdse__parse_group(ctx, setting, &space_table, in, true);
    const config_setting_t *gpus = in->setting[CDSE_AXIS_GPUS];
    const config_setting_t *nodes = in->setting[AXIS_NODES];
    if (rc == 0 && gpus != NULL && nodes != NULL)
        rc = cdse__key_fail(ctx, nodes, NULL, nodes, "gpus or nodes, not both",
                            "given together with gpus (line %d)", config_setting_source_line(gpus));
    if (rc == 0 && job->n_system_gpus > 0 && (gpus != NULL || nodes != NULL))
        rc = cdse__key_fail(ctx, gpus ? gpus : nodes, NULL, gpus ? gpus : nodes,
                            "sizes in space or in every system entry, not both",
                            "the system entries give gpus or nodes");
    if (rc == 0 && job->n_system_gpus > 0) /* checked per system below */
        rc = space_per_system(ctx, setting, job, in);
    else if (rc == 0 && gpus == NULL && nodes == NULL)
        rc = cdse__key_fail(ctx, setting, "gpus", setting, "gpus = [ ... ] or nodes = [ ... ]",
                            "missing (required: gpus or nodes)");
    for (int h = 0; h < job->n_hw_axes && rc == 0 && nodes != NULL; h++)
        if (job->hw_axis[h].key == CDSE_HW_GPUS_PER_NODE)
            rc = cdse__key_fail(ctx, nodes, NULL, nodes,
                                "gpus = [ ... ] when gpus_per_node is a hardware axis",
                                "nodes with a list of gpus_per_node");
    if (rc == 0 && nodes != NULL) {
        int per_node = job->system[0].gpus_per_node;
        for (int s = 1; s < job->n_systems && rc == 0; s++)
            if (job->system[s].gpus_per_node != per_node)
                rc = cdse__key_fail(ctx, nodes, NULL, nodes,
                                    "gpus = [ ... ] when systems differ in "
                                    "gpus_per_node",
                                    "systems '%s' (%d GPUs per node) and '%s' (%d) differ",
                                    job->system[0].name, per_node, job->system[s].name,
                                    job->system[s].gpus_per_node);
        for (int i = 0; i < in->n[AXIS_NODES] && rc == 0; i++) {
            int64_t g = in->value[AXIS_NODES][i] * per_node;
            if (g > MAX_GPUS)
                rc = cdse__key_fail(ctx, nodes, NULL, nodes, "nodes * gpus_per_node <= 1048576",
                                    "%lld nodes is too many", (long long)in->value[AXIS_NODES][i]);
            in->value[CDSE_AXIS_GPUS][i] = g;
        }
        in->n[CDSE_AXIS_GPUS] = in->n[AXIS_NODES];
    }
    if (rc == 0 && job->n_system_gpus == 0)
        rc = space_feasibility(ctx, setting, job, in);
    if (rc == 0) {
        cdse_space *space = &job->space;
        memset(space, 0, sizeof *space);
        space->n[CDSE_AXIS_MODEL] = job->n_models;
        for (int m = 0; m < job->n_models; m++)
            space->value[CDSE_AXIS_MODEL][m] = m;
        space->n[CDSE_AXIS_SYSTEM] = ctx->axis_systems;
        for (int s = 0; s < ctx->axis_systems; s++)
            space->value[CDSE_AXIS_SYSTEM][s] = s;
        for (int h = 0; h < CDSE_MAX_HW_AXES; h++) {
            space->n[CDSE_AXIS_HW0 + h] = h < job->n_hw_axes ? job->hw_axis[h].n : 1;
            for (int i = 0; i < space->n[CDSE_AXIS_HW0 + h]; i++)
                space->value[CDSE_AXIS_HW0 + h][i] = i;
        }
        for (int a = CDSE_AXIS_GPUS; a < CDSE_AXIS_COUNT; a++) {
            space->n[a] = in->n[a];
            memcpy(space->value[a], in->value[a], sizeof space->value[a]);
            if (space->n[a] == 0) /* an axis no job key describes yet: its zero value */
                space->n[a] = 1;
        }
        cdse_diag inner;
        if (cdse_space_finish(space, &inner) != 0)
            rc = cdse__key_fail(ctx, setting, NULL, setting,
                                "a space of fewer than 2^63 configurations", "%s", inner.msg);
    }
    free(in);
    return rc;
}

/* --- Objective --- */

static const char *const store_names[] = {"all", "feasible", "best", NULL};
static const char *const group_names[] = {"model",     "system", "gpus", "global_batch",
                                          "precision", "design", NULL};
static const int group_bits[] = {CDSE_GROUP_MODEL,        CDSE_GROUP_SYSTEM,
                                 CDSE_GROUP_GPUS,         CDSE_GROUP_GLOBAL_BATCH,
                                 CDSE_GROUP_PRECISION,    CDSE_GROUP_DESIGN};

static int parse_group_by(parse_ctx *ctx, const config_setting_t *setting, void *target,
                          const key_spec *key)
{
    (void)key;
    cdse_objective *objective = target;
    static const key_spec one = {
        .name = "group_by", .type = KEY_ENUM, .choices = group_names, .choice_value = group_bits};
    char allowed[CDSE_ALLOWED_MAX];
    cdse__key_allowed(&one, allowed, sizeof allowed);
    strncat(allowed, ", or a list of them", sizeof allowed - strlen(allowed) - 1);
    bool list = config_setting_is_aggregate(setting);
    if (config_setting_is_group(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list");
    int n = list ? config_setting_length(setting) : 1;
    objective->group_by = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
        double bit = 0;
        const char *text = NULL;
        int rc = cdse__read_scalar(ctx, &one, setting, elem, &bit, &text);
        if (rc != 0)
            return rc;
        if (objective->group_by & (int)bit)
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "value \"%s\" appears twice",
                                  text);
        objective->group_by |= (int)bit;
    }
    return 0;
}

static void print_group_by(FILE *out, const void *target, const key_spec *key, int indent);

static const key_spec objective_keys[] = {
    {.name = "metric",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_objective, metric),
     .choices = metric_names,
     .has_default = true,
     .def = CDSE_METRIC_TIME_PER_ITERATION,
     .def_text = "\"time_per_iteration\"",
     .help = "what ranks configurations: time_per_iteration (s, lower is better), tokens_per_s "
             "(higher), time_to_train (days for tokens, lower), gpu_hours (for tokens, lower), "
             "mfu (higher), cost_to_train (currency for tokens, lower), energy_to_train (MWh "
             "for tokens, lower), tokens_per_kwh (higher)"},
    {.name = "top",
     .type = KEY_INT,
     .offset = offsetof(cdse_objective, top),
     .min = 1,
     .max = 1000000,
     .has_default = true,
     .def = 10,
     .def_text = "10",
     .help = "best configurations kept per group"},
    {.name = "group_by",
     .type = KEY_CUSTOM,
     .parse = parse_group_by,
     .print = print_group_by,
     .type_text = "string list",
     .def_text = "[]",
     .help = "the best are kept per distinct value of these: model, system, gpus, global_batch, "
             "precision, design (the hardware values: one group per point of the hardware axes)"},
    {.name = "store",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_objective, store),
     .choices = store_names,
     .has_default = true,
     .def = CDSE_STORE_FEASIBLE,
     .def_text = "\"feasible\"",
     .help = "which configurations the sweep stores: all (with status), feasible, best (only "
             "/top and /pareto)"},
    FLOAT_KEY(cdse_objective, "tokens", tokens, 0, true, 1e30, false, 0, "none",
              "token budget for time_to_train, gpu_hours, cost_to_train and energy_to_train "
              "(float, or integer with the L suffix above 2^31)"),
    FLOAT_KEY(cdse_objective, "electricity_price", electricity_price, 0, false, 1e6, false, 0, "0",
              "price of 1 kWh drawn from the grid, in currency units (cost_to_train)"),
    {.name = "currency",
     .type = KEY_STRING,
     .offset = offsetof(cdse_objective, currency),
     .size = 16,
     .def_text = "\"USD\"",
     .help = "the unit of prices and cost_to_train (a name; prices are not converted)"},
};
static const key_table objective_table = {"objective", objective_keys,
                                          (int)(sizeof objective_keys / sizeof objective_keys[0])};

/* --- Top level --- */

/* --- Probe section: measure the allocation's network before sweeping --- */

/* Plans are validated here for any world size; the sweep validates again with its own. */
#define PROBE_PLAN_ANY_WORLD 1048576

static int parse_probe_plan(parse_ctx *ctx, const config_setting_t *setting, void *target,
                            const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    if (config_setting_type(setting) != CONFIG_TYPE_STRING)
        return cdse__key_fail(ctx, setting, NULL, setting,
                              "a plan name from calibration/plans/ or a path to a plan file",
                              "expected a string");
    const char *name = config_setting_get_string(setting);
    if (name[0] == '\0' || resolve_file("calibration/plans", name, ctx->job_path, job->probe_plan,
                                        sizeof job->probe_plan) != 0) {
        char names[600], allowed[800];
        list_names("calibration/plans", ctx->job_path, names, sizeof names);
        snprintf(allowed, sizeof allowed,
                 "a plan name from calibration/plans/ (%s) or a path to a plan file", names);
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "probe plan '%s' not found",
                              name);
    }
    cdse_probe_plan *plan = malloc(sizeof *plan);
    if (plan == NULL)
        return CDSE_ENOMEM;
    int rc = cdse_plan_load_file(job->probe_plan, PROBE_PLAN_ANY_WORLD, plan, ctx->diag);
    free(plan);
    return rc;
}

static int parse_probe_systems(parse_ctx *ctx, const config_setting_t *setting, void *target,
                               const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    char allowed[CDSE_ALLOWED_MAX];
    size_t len = (size_t)snprintf(allowed, sizeof allowed, "names of the job's systems:");
    for (int s = 0; s < ctx->axis_systems && len < sizeof allowed; s++)
        len += (size_t)snprintf(allowed + len, sizeof allowed - len, "%s \"%s\"", s ? "," : "",
                                job->system[s].name);
    bool list = config_setting_is_aggregate(setting) && !config_setting_is_group(setting);
    int n = list ? config_setting_length(setting) : 1;
    job->probe_systems = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
        if (config_setting_type(elem) != CONFIG_TYPE_STRING)
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "expected a system name");
        const char *name = config_setting_get_string(elem);
        int found = -1;
        for (int s = 0; s < ctx->axis_systems; s++)
            if (strcmp(job->system[s].name, name) == 0)
                found = s;
        if (found < 0)
            return cdse__key_fail(ctx, setting, NULL, elem, allowed,
                                  "'%s' is not a system of the job", name);
        if (job->system[found].pool.n_types > 0)
            return cdse__key_fail(ctx, setting, NULL, elem, "systems that are not pools",
                                  "'%s' is a pool", name);
        if (job->probe_systems & (1u << found))
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "'%s' appears twice", name);
        job->probe_systems |= 1u << found;
    }
    return 0;
}

static const key_spec probe_keys[] = {
    {.name = "plan",
     .type = KEY_CUSTOM,
     .parse = parse_probe_plan,
     .required = true,
     .type_text = "string",
     .def_text = "required",
     .help = "the probe plan (a name from calibration/plans/ or a path) the sweep runs on its own "
             "allocation before evaluating"},
    {.name = "systems",
     .type = KEY_CUSTOM,
     .parse = parse_probe_systems,
     .type_text = "string list",
     .def_text = "every listed system",
     .help = "the systems whose network levels take the fitted values"},
};
static const key_table probe_table = {"probe", probe_keys,
                                      (int)(sizeof probe_keys / sizeof probe_keys[0])};

static int parse_probe(parse_ctx *ctx, const config_setting_t *setting, void *target,
                       const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    int rc = cdse__parse_group(ctx, setting, &probe_table, job, true);
    if (rc == 0 && config_setting_get_member(setting, "systems") == NULL)
        for (int s = 0; s < ctx->axis_systems; s++)
            if (job->system[s].pool.n_types == 0)
                job->probe_systems |= 1u << s;
    return rc;
}

static void print_probe(FILE *out, const void *target, const key_spec *key, int indent)
{
    (void)key;
    const cdse_job *job = target;
    if (job->probe_plan[0] == '\0')
        return;
    fprintf(out, "%*sprobe = {\n%*splan = ", indent, "", indent + 2, "");
    cdse__print_string(out, job->probe_plan);
    fprintf(out, ";\n%*ssystems = [", indent + 2, "");
    int printed = 0;
    for (int s = 0; s < CDSE_MAX_SYSTEMS; s++)
        if (job->probe_systems & (1u << s)) {
            fputs(printed++ ? ", " : " ", out);
            cdse__print_string(out, job->system[s].name);
        }
    fprintf(out, " ];\n%*s};\n", indent, "");
}

static void print_models(FILE *out, const void *target, const key_spec *key, int indent);
static void print_systems(FILE *out, const void *target, const key_spec *key, int indent);
static void print_space(FILE *out, const void *target, const key_spec *key, int indent);

static const key_spec job_keys[] = {
    {.name = "name",
     .type = KEY_STRING,
     .offset = offsetof(cdse_job, name),
     .size = CDSE_NAME_MAX * 2,
     .def_text = "file name",
     .help = "job name (stored with the results)"},
    {.name = "output",
     .type = KEY_STRING,
     .offset = offsetof(cdse_job, output),
     .size = CDSE_PATH_MAX,
     .def_text = "results/NAME.h5",
     .help = "HDF5 store that clusterdse sweep writes"},
    {.name = "models",
     .type = KEY_CUSTOM,
     .parse = parse_models,
     .print = print_models,
     .required = true,
     .type_text = "list of names or groups",
     .def_text = "required",
     .help = "models: names from jobs/models/, paths, or inline groups (keys: models[])"},
    {.name = "systems",
     .type = KEY_CUSTOM,
     .parse = parse_systems,
     .print = print_systems,
     .required = true,
     .type_text = "list of names or groups",
     .def_text = "required",
     .help = "systems: names from calibration/systems/, paths, or inline groups (keys: "
             "systems[])"},
    {.name = "space",
     .type = KEY_CUSTOM,
     .parse = parse_space,
     .print = print_space,
     .required = true,
     .type_text = "group",
     .def_text = "required",
     .help = "the design space: every list is a sweep axis (keys: space)"},
    {.name = "objective",
     .type = KEY_GROUP,
     .offset = offsetof(cdse_job, objective),
     .sub = &objective_table,
     .type_text = "group",
     .def_text = "defaults",
     .help = "ranking and storage (keys: objective)"},
    {.name = "probe",
     .type = KEY_CUSTOM,
     .parse = parse_probe,
     .print = print_probe,
     .type_text = "group",
     .def_text = "none",
     .help = "measure the allocation's network before sweeping, and use the fit (keys: probe)"},
};
static const key_table job_table = {"", job_keys, (int)(sizeof job_keys / sizeof job_keys[0])};

/* FNV-1a, 64 bits (Fowler, Noll, Vo; offset basis and prime from the reference). */
#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME  1099511628211ULL

static uint64_t fnv1a(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) {
        hash ^= p[i];
        hash *= FNV_PRIME;
    }
    return hash;
}

static uint64_t job_fingerprint(const cdse_job *job)
{
    uint64_t h = FNV_OFFSET;
    h = fnv1a(h, &job->n_models, sizeof job->n_models);
    h = fnv1a(h, job->model, sizeof job->model[0] * (size_t)job->n_models);
    h = fnv1a(h, &job->n_systems, sizeof job->n_systems);
    h = fnv1a(h, job->system, sizeof job->system[0] * (size_t)job->n_systems);
    h = fnv1a(h, job->space.n, sizeof job->space.n);
    for (int a = 0; a < CDSE_AXIS_COUNT; a++)
        h = fnv1a(h, job->space.value[a], sizeof job->space.value[a][0] * (size_t)job->space.n[a]);
    h = fnv1a(h, &job->objective, sizeof job->objective);
    for (int s = 0; s < job->n_systems && job->n_system_gpus > 0; s++)
        h = fnv1a(h, job->system_gpus[s], sizeof(int32_t) * (size_t)job->n_system_gpus);
    for (int a = 0; a < job->n_hw_axes; a++) { /* jobs without hardware axes keep their hash */
        const cdse_hw_axis *axis = &job->hw_axis[a];
        h = fnv1a(h, &axis->key, sizeof axis->key);
        h = fnv1a(h, &axis->system, sizeof axis->system);
        h = fnv1a(h, axis->value, sizeof axis->value[0] * (size_t)axis->n);
    }
    return h;
}

static void default_name(const char *path, char *out, size_t size)
{
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    snprintf(out, size, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot != NULL && dot != out)
        *dot = '\0';
    if (out[0] == '<' || out[0] == '\0')
        snprintf(out, size, "job");
}

int cdse_job_load_text(const char *text, const char *path, cdse_job *job, cdse_diag *diag)
{
    memset(job, 0, sizeof *job);
    snprintf(job->path, sizeof job->path, "%s", path);
    parse_ctx ctx = {.file = path, .job_path = path, .diag = diag};
    config_t cfg;
    int rc = cdse__read_config(&ctx, text, &cfg);
    if (rc != 0)
        return rc;
    rc = cdse__parse_group(&ctx, config_root_setting(&cfg), &job_table, job, true);
    const config_setting_t *objective = config_lookup(&cfg, "objective");
    int metric = job->objective.metric;
    if (rc == 0 && job->objective.tokens == 0 &&
        (metric == CDSE_METRIC_TIME_TO_TRAIN || metric == CDSE_METRIC_GPU_HOURS ||
         metric == CDSE_METRIC_COST_TO_TRAIN || metric == CDSE_METRIC_ENERGY_TO_TRAIN)) {
        const config_setting_t *at = config_setting_get_member(objective, "metric");
        rc = cdse__key_fail(&ctx, objective, "tokens", at, "a token budget > 0, e.g. tokens = 3e11",
                            "missing (required by metric \"%s\")", cdse_metric_name(metric));
    }
    config_destroy(&cfg);
    if (rc != 0)
        return rc;
    if (job->objective.currency[0] == '\0')
        snprintf(job->objective.currency, sizeof job->objective.currency, "USD");
    if (job->name[0] == '\0')
        default_name(path, job->name, sizeof job->name);
    if (job->output[0] == '\0')
        snprintf(job->output, sizeof job->output, "results/%.100s.h5", job->name);
    job->fingerprint = job_fingerprint(job);
    job->text_len = strlen(text);
    job->text = malloc(job->text_len + 1);
    if (job->text == NULL) {
        cdse_diag_set(diag, "%s: out of memory", path);
        return CDSE_ENOMEM;
    }
    memcpy(job->text, text, job->text_len + 1);
    return CDSE_OK;
}

int cdse_job_load_file(const char *path, cdse_job *job, cdse_diag *diag)
{
    memset(job, 0, sizeof *job);
    char *text;
    int rc_read = cdse__read_file_diag(path, "job file", &text, diag);
    if (rc_read != 0)
        return rc_read;
    int rc = cdse_job_load_text(text, path, job, diag);
    free(text);
    if (rc != 0)
        cdse_job_free(job);
    return rc;
}

void cdse_job_free(cdse_job *job)
{
    if (job == NULL)
        return;
    free(job->text);
    job->text = NULL;
    job->text_len = 0;
}

static void print_eff_table(FILE *out, const void *target, const key_spec *key, int indent)
{
    const cdse_eff_table *table = (const cdse_eff_table *)((const char *)target + key->offset);
    if (table->n == 0)
        return;
    fprintf(out, "%*s%s = (", indent, "", key->name);
    for (int i = 0; i < table->n; i++) {
        fputs(i ? ", [" : " [", out);
        cdse__print_float(out, table->flops[i]);
        fputs(", ", out);
        cdse__print_float(out, table->eff[i]);
        fputs("]", out);
    }
    fputs(" );\n", out);
}

static void print_seq_histogram(FILE *out, const void *target, const key_spec *key, int indent)
{
    const cdse_model *model = target;
    if (model->n_seq_bins == 0)
        return;
    fprintf(out, "%*s%s = (", indent, "", key->name);
    for (int i = 0; i < model->n_seq_bins; i++) {
        fputs(i ? ", [" : " [", out);
        cdse__print_float(out, model->seq_bin_len[i]);
        fputs(", ", out);
        cdse__print_float(out, model->seq_bin_weight[i]);
        fputs("]", out);
    }
    fputs(" );\n", out);
}

static void print_coll(FILE *out, const void *target, const key_spec *key, int indent)
{
    const cdse_net_level *level = target;
    if (!(level->coll_bandwidth_gbs[key->arg] > 0))
        return;
    fprintf(out, "%*s%s = { latency = ", indent, "", key->name);
    cdse__print_float(out, level->coll_latency_us[key->arg]);
    fputs("; bandwidth = ", out);
    cdse__print_float(out, level->coll_bandwidth_gbs[key->arg]);
    fputs("; };\n", out);
}

static void print_network(FILE *out, const void *target, const key_spec *key, int indent)
{
    (void)key;
    const cdse_system *system = target;
    fprintf(out, "%*snetwork = (\n", indent, "");
    for (int l = 0; l < system->n_levels; l++) {
        fprintf(out, "%*s{\n", indent + 2, "");
        cdse__print_table_values(out, &level_table, &system->level[l], indent + 4);
        fprintf(out, "%*s}%s\n", indent + 2, "", l + 1 < system->n_levels ? "," : "");
    }
    fprintf(out, "%*s);\n", indent, "");
}

static void print_group_by(FILE *out, const void *target, const key_spec *key, int indent)
{
    const cdse_objective *objective = target;
    fprintf(out, "%*s%s = [", indent, "", key->name);
    int printed = 0;
    for (int i = 0; group_names[i] != NULL; i++)
        if (objective->group_by & group_bits[i])
            fprintf(out, "%s\"%s\"", printed++ ? ", " : " ", group_names[i]);
    fputs(" ];\n", out);
}

static void print_models(FILE *out, const void *target, const key_spec *key, int indent)
{
    (void)key;
    const cdse_job *job = target;
    fprintf(out, "%*smodels = (\n", indent, "");
    for (int m = 0; m < job->n_models; m++) {
        fprintf(out, "%*s{\n", indent + 2, "");
        cdse__print_table_values(out, &model_table, &job->model[m], indent + 4);
        fprintf(out, "%*s}%s\n", indent + 2, "", m + 1 < job->n_models ? "," : "");
    }
    fprintf(out, "%*s);\n", indent, "");
}

static void print_system_body(FILE *out, const cdse_system *system, int indent)
{
    for (int i = 0; i < system_table.n; i++) {
        const key_spec *k = &system_table.keys[i];
        static const cdse_mem_tier no_tier; /* all zero: memory_tier never given */
        if (k->sub == &tier_table && memcmp(&system->tier, &no_tier, sizeof no_tier) == 0)
            continue; /* attach = "none" with values is printed: the fingerprint hashes them */
        cdse__print_field(out, k, system, indent);
    }
}

/* The systems of the axis; a pool lists its members inline (they follow the listed systems in
 * job->system). */
/* A system with its hardware axes as lists (the body printed to memory, then rewritten). */
static void print_system_hw(FILE *out, const cdse_job *job, int s, int indent)
{
    bool has_axes = false;
    for (int h = 0; h < job->n_hw_axes; h++)
        has_axes |= job->hw_axis[h].system == s;
    char *body = NULL;
    size_t len = 0;
    FILE *mem = has_axes ? open_memstream(&body, &len) : NULL;
    if (mem == NULL) {
        print_system_body(out, &job->system[s], indent);
        return;
    }
    print_system_body(mem, &job->system[s], indent);
    fclose(mem);
    cdse__hw_print_body(out, body, job, s);
    free(body);
}

static void print_systems(FILE *out, const void *target, const key_spec *key, int indent)
{
    (void)key;
    const cdse_job *job = target;
    int n = job->space.n[CDSE_AXIS_SYSTEM];
    fprintf(out, "%*ssystems = (\n", indent, "");
    for (int s = 0; s < n; s++) {
        const cdse_system *system = &job->system[s];
        fprintf(out, "%*s{\n", indent + 2, "");
        if (job->n_system_gpus > 0) {
            fprintf(out, "%*sgpus = [", indent + 4, "");
            for (int i = 0; i < job->n_system_gpus; i++)
                fprintf(out, "%s%d", i ? ", " : " ", (int)job->system_gpus[s][i]);
            fputs(" ];\n", out);
        }
        if (system->pool.n_types == 0) {
            print_system_hw(out, job, s, indent + 4);
        } else {
            fprintf(out, "%*sname = ", indent + 4, "");
            cdse__print_string(out, system->name);
            fprintf(out, ";\n%*spool = (\n", indent + 4, "");
            for (int t = 0; t < system->pool.n_types; t++) {
                fprintf(out, "%*s{ gpus = %d;\n%*ssystem = {\n", indent + 6, "",
                        system->pool.gpus[t], indent + 8, "");
                print_system_body(out, &job->system[system->pool.member[t]], indent + 10);
                fprintf(out, "%*s}; }%s\n", indent + 8, "",
                        t + 1 < system->pool.n_types ? "," : "");
            }
            fprintf(out, "%*s);\n", indent + 4, "");
        }
        fprintf(out, "%*s}%s\n", indent + 2, "", s + 1 < n ? "," : "");
    }
    fprintf(out, "%*s);\n", indent, "");
}

static void print_space(FILE *out, const void *target, const key_spec *key, int indent)
{
    (void)key;
    const cdse_space *space = &((const cdse_job *)target)->space;
    fprintf(out, "%*sspace = {\n", indent, "");
    for (int i = 0; i < space_table.n; i++) {
        const key_spec *k = &space_table.keys[i];
        if (k->axis == AXIS_NODES)
            continue; /* resolved into gpus */
        if (k->axis == CDSE_AXIS_GPUS && ((const cdse_job *)target)->n_system_gpus > 0)
            continue; /* given per system */
        fprintf(out, "%*s%s = [", indent + 2, "", k->name);
        for (int v = 0; v < space->n[k->axis]; v++) {
            fputs(v ? ", " : " ", out);
            cdse__print_scalar(out, k, (double)space->value[k->axis][v], NULL);
        }
        fputs(" ];\n", out);
    }
    fprintf(out, "%*s};\n", indent, "");
}

void cdse_job_print(FILE *out, const cdse_job *job)
{
    fprintf(out, "# The effective job of %s: every default resolved, models and systems inline.\n",
            job->path);
    cdse__print_table_values(out, &job_table, job, 0);
}

void cdse_job_print_keys(FILE *out)
{
    static const key_table *const tables[] = {
        &job_table,  &space_table,  &objective_table, &model_table, &system_table,
        &peak_table, &level_table,  &coll_table,      &tier_table,  &cost_table,
        &pool_table, &member_table, &probe_table};
    fprintf(out, "# %-42s %-30s %-24s %s\n", "key", "type", "default", "meaning");
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        cdse__print_key_table(out, tables[t]);
}
