/* Job files (libconfig 1.5) -> validated, immutable job: the key tables of job files, models
 * and systems, on the key-table engine of keys.h (which also describes the error shape). */
#define _XOPEN_SOURCE 700 /* realpath, strdup, strtok_r */

#include "clusterdse/config/job.h"

#include "clusterdse/config/bands.h"
#include "clusterdse/config/probe_plan.h"
#include "clusterdse/config/stack.h"
#include "hw_axes.h"
#include "keys.h"
#include "clusterdse/config/datadir.h"

#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bounds of gpus (axes.h). */
#define MAX_GPUS ((double)CDSE_MAX_GPUS)

/* ------------------------------------------------------------------------------------------ */
/* Objective metrics                                                                          */

static const char *const metric_names[CDSE_METRIC_COUNT + 1] = {
    "time_per_iteration", "tokens_per_s", "time_to_train", "gpu_hours", "mfu", "cost_to_train",
    "energy_to_train", "tokens_per_kwh",
    /* goodput (issue 29) */
    "time_to_train_effective", "interruptions_expected", "checkpoint_interval_s", "goodput", NULL};

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
           metric == CDSE_METRIC_TOKENS_PER_KWH || metric == CDSE_METRIC_CHECKPOINT_INTERVAL ||
           metric == CDSE_METRIC_GOODPUT;
}

/* --- Models --- */

static int parse_seq_histogram(parse_ctx *ctx, const config_setting_t *setting, void *target,
                               const key_spec *key);
static void print_seq_histogram(FILE *out, const void *target, const key_spec *key, int indent);

/* The model's size limits (workload.h), so that every derived size fits. */
#define MODEL_MAX_layers               CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_hidden               CDSE_MODEL_MAX_WIDTH
#define MODEL_MAX_heads                CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_kv_heads             CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_head_dim             CDSE_MODEL_MAX_WIDTH
#define MODEL_MAX_ffn                  CDSE_MODEL_MAX_FFN
#define MODEL_MAX_seq_len              CDSE_MODEL_MAX_LENGTH
#define MODEL_MAX_vocab                CDSE_MODEL_MAX_LENGTH
#define MODEL_MAX_experts              CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_top_k                CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_moe_ffn              CDSE_MODEL_MAX_FFN
#define MODEL_MAX_moe_every            CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_shared_experts       CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_first_dense_layers   CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_q_lora_rank          CDSE_MODEL_MAX_WIDTH
#define MODEL_MAX_kv_lora_rank         CDSE_MODEL_MAX_WIDTH
#define MODEL_MAX_qk_rope_head_dim     CDSE_MODEL_MAX_WIDTH
#define MODEL_MAX_v_head_dim           CDSE_MODEL_MAX_WIDTH
#define MODEL_MAX_sliding_window       CDSE_MODEL_MAX_LENGTH
#define MODEL_MAX_moe_node_limit       CDSE_MODEL_MAX_COUNT
#define MODEL_MAX_full_attention_every CDSE_MODEL_MAX_COUNT

#define MODEL_INT(key, field, lo, req, dflt, text)                                                 \
    {                                                                                              \
        .name = key, .type = KEY_INT, .offset = offsetof(cdse_model, field), .min = lo,            \
        .max = MODEL_MAX_##field, .required = req, .def_text = dflt, .help = text                  \
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
    MODEL_INT("q_lora_rank", q_lora_rank, 0, false, "0",
              "latent attention: query compression rank (0 = queries from the hidden state)"),
    MODEL_INT("kv_lora_rank", kv_lora_rank, 0, false, "0",
              "multi-head latent attention (DeepSeek-V2/V3) when > 0: key/value compression "
              "rank; head_dim is then the query/key dimension without RoPE"),
    MODEL_INT("qk_rope_head_dim", qk_rope_head_dim, 0, false, "0",
              "latent attention: decoupled RoPE dimension of queries and the shared key"),
    MODEL_INT("v_head_dim", v_head_dim, 0, false, "head_dim",
              "value dimension per head (latent attention)"),
    MODEL_INT("sliding_window", sliding_window, 0, false, "0",
              "sliding-window attention: keys a query attends to (0 = full attention)"),
    MODEL_INT("moe_node_limit", moe_node_limit, 0, false, "0",
              "node-limited routing: a token's routed copies reach at most this many NVLink "
              "domains (DeepSeek-V3: 4; 0 = no limit); used by the deepep dispatcher"),
    MODEL_INT("full_attention_every", full_attention_every, 0, false, "0",
              "with sliding_window: every n-th layer keeps full attention (GPT-OSS: 2; 0 = "
              "every layer slides)"),
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

/* Checks across keys of one model, each error at the line of the key at fault. */
static int model_finish(parse_ctx *ctx, const config_setting_t *group, cdse_model *model)
{
    const config_setting_t *heads = config_setting_get_member(group, "heads");
    const config_setting_t *kv = config_setting_get_member(group, "kv_heads");
    const config_setting_t *experts = config_setting_get_member(group, "experts");
    char allowed[CDSE_ALLOWED_MAX];
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
        return cdse__load_profile_named(ctx, setting, "calibration/systems", "system",
                                        cdse__parse_system_group, &member->system, true);
    if (config_setting_is_group(setting))
        return cdse__parse_system_group(ctx, setting, &member->system, true);
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
            rc = cdse__load_profile_named(ctx, elem, kind->subdir, kind->what, kind->parse, target,
                                          true);
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

/* Loads the stack profile NAME (a name from calibration/stacks/ or a path) into job->stack[],
 * once per file, and returns its index in *index; errors point at `at`. */
static int load_stack_named(parse_ctx *ctx, const config_setting_t *at, const char *name,
                            cdse_job *job, int *index)
{
    char path[CDSE_PATH_MAX];
    if (name[0] == '\0' ||
        cdse__resolve_file("calibration/stacks", name, ctx->job_path, path, sizeof path) != 0) {
        char names[600], allowed[800];
        cdse__list_names("calibration/stacks", ctx->job_path, names, sizeof names);
        snprintf(allowed, sizeof allowed, "a name from calibration/stacks/ (%s) or a path", names);
        return cdse__key_fail(ctx, at, NULL, at, allowed, "stack '%s' not found", name);
    }
    for (int k = 0; k < job->n_stacks; k++)
        if (strcmp(job->stack_path[k], path) == 0) {
            *index = k;
            return 0;
        }
    if (job->n_stacks >= CDSE_MAX_STACKS)
        return cdse__key_fail(ctx, at, NULL, at, "at most 8 stacks in a job",
                              "stack '%s' is one too many", name);
    int rc = cdse_stack_load_file(path, &job->stack[job->n_stacks], ctx->diag);
    if (rc != 0)
        return rc;
    snprintf(job->stack_path[job->n_stacks], CDSE_PATH_MAX, "%s", path);
    *index = job->n_stacks++;
    return 0;
}

/* Each system's default stack (its `stack` key), -1 for the built-in one. */
static int system_default_stacks(parse_ctx *ctx, const config_setting_t *setting, cdse_job *job)
{
    bool list = config_setting_is_list(setting) || config_setting_is_array(setting);
    int rc = 0;
    for (int i = 0; i < job->n_systems && rc == 0; i++) {
        job->system_stack[i] = -1;
        if (job->system[i].stack[0] == '\0')
            continue;
        const config_setting_t *elem = list && i < config_setting_length(setting)
                                           ? config_setting_get_elem(setting, i)
                                           : setting;
        rc = load_stack_named(ctx, elem, job->system[i].stack, job, &job->system_stack[i]);
    }
    return rc;
}

static int parse_systems(parse_ctx *ctx, const config_setting_t *setting, void *target,
                         const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    static const job_entry kind = {"calibration/systems",    "system",
                                   CDSE_MAX_SYSTEMS,         sizeof(cdse_system),
                                   cdse__parse_system_group, true};
    bool list = config_setting_is_list(setting) || config_setting_is_array(setting);
    /* Cluster sizes and hardware axes (lists in an inline entry) leave the tree before the
     * entries parse. */
    int n_listed = list ? config_setting_length(setting) : 1;
    int rc = 0;
    job->n_hw_axes = 0;
    struct cdse__hw_sources sources;
    memset(&sources, 0, sizeof sources);
    ctx->hw_sources = &sources;
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
    ctx->hw_sources = NULL;
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
    if (rc == 0)
        rc = system_default_stacks(ctx, setting, job);
    return rc;
}

/* `stacks`: the values of the stack axis, names from calibration/stacks/ or paths. */
static int parse_stacks(parse_ctx *ctx, const config_setting_t *setting, void *target,
                        const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    const char *allowed = "a name from calibration/stacks/ or a path, or a list of 1 to 8";
    int count = config_setting_is_aggregate(setting) ? config_setting_length(setting) : 1;
    if (config_setting_is_group(setting) || count < 1 || count > CDSE_MAX_STACKS)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d stacks", count);
    int n = 0;
    int value[CDSE_MAX_STACKS];
    for (int i = 0; i < count; i++) {
        const config_setting_t *elem =
            config_setting_is_aggregate(setting) ? config_setting_get_elem(setting, i) : setting;
        const char *name = config_setting_get_string(elem);
        if (name == NULL)
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "not a string");
        int rc = load_stack_named(ctx, elem, name, job, &value[n]);
        if (rc != 0)
            return rc;
        for (int j = 0; j < n; j++)
            if (value[j] == value[n])
                return cdse__key_fail(ctx, setting, NULL, elem, "distinct stacks",
                                      "stack '%s' appears twice", name);
        n++;
    }
    job->space.n[CDSE_AXIS_STACK] = n; /* kept by parse_space, which runs next */
    for (int i = 0; i < n; i++)
        job->space.value[CDSE_AXIS_STACK][i] = value[i];
    return 0;
}

/* --- Space --- */

/* The `space` keys, one per row of CDSE_AXES (axes.h) in its order, `nodes` after `gpus`. */
#define SPACE_KEY_INT(ID, KEY, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, HELP)                       \
    {.name = KEY,                                                                                  \
     .type = KEY_INT,                                                                              \
     .is_axis = true,                                                                              \
     .axis = CDSE_AXIS_##ID,                                                                       \
     .min = LO,                                                                                    \
     .max = HI,                                                                                    \
     .required = (DEF) < 0,                                                                        \
     .has_default = (DEF) >= 0,                                                                    \
     .def = DEF,                                                                                   \
     .def_text = DEF_TEXT,                                                                         \
     .help = HELP},
#define SPACE_KEY_OTHER(TYPE, ID, KEY, DEF, DEF_TEXT, CHOICES, VALUES, HELP)                       \
    {.name = KEY,                                                                                  \
     .type = TYPE,                                                                                 \
     .is_axis = true,                                                                              \
     .axis = CDSE_AXIS_##ID,                                                                       \
     .choices = CHOICES,                                                                           \
     .choice_value = VALUES,                                                                       \
     .has_default = true,                                                                          \
     .def = DEF,                                                                                   \
     .def_text = DEF_TEXT,                                                                         \
     .help = HELP},
#define SPACE_KEY_BOOL(ID, KEY, LO, HI, ...) SPACE_KEY_OTHER(KEY_BOOL, ID, KEY, __VA_ARGS__)
#define SPACE_KEY_ENUM(ID, KEY, LO, HI, ...) SPACE_KEY_OTHER(KEY_ENUM, ID, KEY, __VA_ARGS__)
#define SPACE_KEY_MASK(ID, KEY, LO, HI, ...) SPACE_KEY_OTHER(KEY_OFFLOAD, ID, KEY, __VA_ARGS__)
/* gpus, or nodes: gpus = nodes * gpus_per_node. */
#define SPACE_KEY_GPUS(ID, KEY, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, HELP)                      \
    {.name = KEY,                                                                                  \
     .type = KEY_INT,                                                                              \
     .is_axis = true,                                                                              \
     .axis = CDSE_AXIS_##ID,                                                                       \
     .min = LO,                                                                                    \
     .max = HI,                                                                                    \
     .def_text = DEF_TEXT,                                                                         \
     .help = HELP},                                                                                \
        {.name = "nodes",                                                                          \
         .type = KEY_INT,                                                                          \
         .is_axis = true,                                                                          \
         .axis = AXIS_NODES,                                                                       \
         .min = 1,                                                                                 \
         .max = MAX_GPUS,                                                                          \
         .def_text = DEF_TEXT,                                                                     \
         .help = "nodes in the job: gpus = nodes * gpus_per_node (all systems must agree on it)"},
#define SPACE_KEY_(ID, POS, KIND, KEY, FIELD, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, NAMES,       \
                   COLUMN, UNIT, LABEL, PRUNE, HELP, COLUMN_HELP)                                  \
    SPACE_KEY_##KIND(ID, KEY, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, HELP)

static const key_spec space_keys[] = {CDSE_AXES(SPACE_KEY_)};
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

/* The space check asks the evaluator's own validity rules (cdse_strategy_check), so that it
 * cannot disagree with the hot path: a strategy with every knob at its neutral value (one
 * GPU, no parallelism, batch 1) except those under test, and whether the check stops at
 * `rule`. Every rule before `rule` (the status enum is in check order) passes with these
 * values, so any other status means the rule itself passed. */
static cdse_strategy neutral_strategy(int gpus, int tp, int pp, int cp)
{
    cdse_strategy s = {.gpus = gpus, .tp = tp, .pp = pp, .cp = cp, .ep = 1, .vpp = 1};
    s.microbatch = 1;
    s.global_batch = gpus / (tp * pp * cp) > 0 ? gpus / (tp * pp * cp) : 1; /* one per replica */
    s.precision = CDSE_BF16;
    return s;
}

static bool rule_passes(const cdse_model *model, const cdse_system *system, cdse_strategy s,
                        int rule)
{
    return cdse_strategy_check(model, system, &s) != rule;
}

/* Whether some value of `axis` (with some value of axis2, if >= 0) passes `rule` for the
 * model on `stack` (NULL: the built-in one); make() builds the strategy from the two values. */
static bool some_value_passes_on(const cdse_model *model, const cdse_system *system,
                                 const cdse_stack *stack, const space_input *in, int axis, int rule,
                                 cdse_strategy (*make)(int64_t v, int64_t w), int axis2)
{
    int n2 = axis2 >= 0 ? in->n[axis2] : 1;
    for (int i = 0; i < in->n[axis]; i++)
        for (int j = 0; j < n2; j++) {
            cdse_strategy s = make(in->value[axis][i], axis2 >= 0 ? in->value[axis2][j] : 1);
            s.stack = stack;
            if (rule_passes(model, system, s, rule))
                return true;
        }
    return false;
}

/* Whether some value of `axis` (with some value of axis2, if >= 0) passes `rule` for the
 * model on the built-in stack; make() builds the strategy from the two values. */
static bool some_value_passes(const cdse_model *model, const cdse_system *system,
                              const space_input *in, int axis, int rule,
                              cdse_strategy (*make)(int64_t v, int64_t w), int axis2)
{
    return some_value_passes_on(model, system, NULL, in, axis, rule, make, axis2);
}

static cdse_strategy with_tp(int64_t tp, int64_t unused)
{
    (void)unused;
    return neutral_strategy((int)tp, (int)tp, 1, 1);
}

static cdse_strategy with_pp_vpp(int64_t pp, int64_t vpp)
{
    cdse_strategy s = neutral_strategy((int)pp, 1, (int)pp, 1);
    s.vpp = (int)vpp;
    return s;
}

static cdse_strategy with_ep(int64_t ep, int64_t unused)
{
    (void)unused;
    cdse_strategy s = neutral_strategy((int)ep, 1, 1, 1); /* dp = ep */
    s.ep = (int)ep;
    return s;
}

/* MoE parallel folding: an expert grid of etp x ep (0 = tp = 1 here) on etp * ep ranks. */
static cdse_strategy with_etp_ep(int64_t etp, int64_t ep)
{
    int ranks = (int)((etp > 0 ? etp : 1) * ep);
    cdse_strategy s = neutral_strategy(ranks, 1, 1, 1); /* dp = etp * ep */
    s.ep = (int)ep;
    s.etp = (int)etp;
    return s;
}

/* A stack of the job that splits the pipeline counting the embedding and the output layer as a
 * layer each (pipeline_split_embedding: up to layers + 2 chunks), or NULL. */
static const cdse_stack *split_stack(const cdse_job *job)
{
    for (int k = 0; k < job->n_stacks; k++)
        if (job->stack[k].pipeline_split_embedding)
            return &job->stack[k];
    return cdse_stack_default.pipeline_split_embedding ? &cdse_stack_default : NULL;
}

/* Errors when no value of tp, pp x vpp, ep or etp can ever work for one of the job's models. */
static int model_feasibility(parse_ctx *ctx, const config_setting_t *space, const cdse_job *job,
                             const space_input *in)
{
    char values[400], values2[400];
    const cdse_system *system = &job->system[0]; /* the model rules do not read the system */
    for (int m = 0; m < job->n_models; m++) {
        const cdse_model *model = &job->model[m];
        const config_setting_t *at;
        if (!some_value_passes(model, system, in, CDSE_AXIS_TP, CDSE_ST_TP_HEADS, with_tp, -1)) {
            axis_values_text(in, CDSE_AXIS_TP, values, sizeof values);
            at = in->setting[CDSE_AXIS_TP];
            return cdse__key_fail(
                ctx, at ? at : space, at ? NULL : "tp", at ? at : space,
                "at least one tp that divides the heads, ffn (and moe_ffn) of every model and "
                "divides its kv_heads or is a multiple of them",
                "no value in %s fits model '%s' (%d heads, ffn %d, %d kv_heads)", values,
                model->name, model->heads, model->ffn, model->kv_heads);
        }
        if (!some_value_passes_on(model, system, split_stack(job), in, CDSE_AXIS_PP,
                                  CDSE_ST_PP_LAYERS, with_pp_vpp, CDSE_AXIS_VPP)) {
            axis_values_text(in, CDSE_AXIS_PP, values, sizeof values);
            axis_values_text(in, CDSE_AXIS_VPP, values2, sizeof values2);
            at = in->setting[CDSE_AXIS_PP];
            return cdse__key_fail(
                ctx, at ? at : space, at ? NULL : "pp", at ? at : space,
                "at least one pp * vpp no larger than the layers of every model (+2 with a stack "
                "that sets pipeline_split_embedding)",
                "every pp in %s times vpp in %s exceeds the %d layers of model '%s'", values,
                values2, model->layers, model->name);
        }
        if (!some_value_passes(model, system, in, CDSE_AXIS_EP, CDSE_ST_EP, with_ep, -1)) {
            axis_values_text(in, CDSE_AXIS_EP, values, sizeof values);
            at = in->setting[CDSE_AXIS_EP];
            return cdse__key_fail(ctx, at ? at : space, at ? NULL : "ep", at ? at : space,
                                  "1, or a divisor of the model's experts",
                                  "no value in %s works for model '%s' with %d experts", values,
                                  model->name, model->experts);
        }
        if (model->experts > 0 && !some_value_passes(model, system, in, CDSE_AXIS_ETP, CDSE_ST_EP,
                                                     with_etp_ep, CDSE_AXIS_EP)) {
            axis_values_text(in, CDSE_AXIS_ETP, values, sizeof values);
            at = in->setting[CDSE_AXIS_ETP];
            return cdse__key_fail(ctx, at ? at : space, at ? NULL : "etp", at ? at : space,
                                  "0 (= tp), or a divisor of the expert FFN size (moe_ffn)",
                                  "no value in %s works for model '%s' with moe_ffn %d", values,
                                  model->name, model->moe_ffn);
        }
    }
    return 0;
}

/* Whether some gpus value is divisible by some tp * pp * cp (the first rule of the check). */
static bool gpus_feasible(const cdse_job *job, const space_input *in)
{
    for (int g = 0; g < in->n[CDSE_AXIS_GPUS]; g++)
        for (int t = 0; t < in->n[CDSE_AXIS_TP]; t++)
            for (int p = 0; p < in->n[CDSE_AXIS_PP]; p++)
                for (int c = 0; c < in->n[CDSE_AXIS_CP]; c++) {
                    cdse_strategy s = neutral_strategy(
                        (int)in->value[CDSE_AXIS_GPUS][g], (int)in->value[CDSE_AXIS_TP][t],
                        (int)in->value[CDSE_AXIS_PP][p], (int)in->value[CDSE_AXIS_CP][c]);
                    if (rule_passes(&job->model[0], &job->system[0], s, CDSE_ST_GPUS_NOT_DIVISIBLE))
                        return true;
                }
    return false;
}

/* A model that every neutral strategy fits, for the rules that read only the system. */
static const cdse_model any_model = {
    .layers = 1, .heads = 1, .kv_heads = 1, .ffn = 1, .seq_len = 2};

/* The first precision of the axis that `system` supports, or -1. */
static int supported_precision(const cdse_system *system, const space_input *in)
{
    for (int i = 0; i < in->n[CDSE_AXIS_PRECISION]; i++) {
        cdse_strategy s = neutral_strategy(1, 1, 1, 1);
        s.precision = (int)in->value[CDSE_AXIS_PRECISION][i];
        if (rule_passes(&any_model, system, s, CDSE_ST_DTYPE_UNSUPPORTED))
            return s.precision;
    }
    return -1;
}

/* Whether some offload value passes the tier rule on `system` (at a precision it supports;
 * without one the precision rule reports the system). */
static bool offload_feasible(const cdse_system *system, const space_input *in)
{
    int precision = supported_precision(system, in);
    if (precision < 0)
        return true;
    for (int i = 0; i < in->n[CDSE_AXIS_OFFLOAD]; i++) {
        cdse_strategy s = neutral_strategy(1, 1, 1, 1);
        s.precision = precision;
        s.offload = (int)in->value[CDSE_AXIS_OFFLOAD][i];
        if (rule_passes(&any_model, system, s, CDSE_ST_OFFLOAD_NO_TIER))
            return true;
    }
    return false;
}

/* Errors when no value of an axis can ever work for one of the job's models or systems. */
static int space_feasibility(parse_ctx *ctx, const config_setting_t *space, const cdse_job *job,
                             const space_input *in)
{
    char values[400];
    int rc = model_feasibility(ctx, space, job, in);
    if (rc != 0)
        return rc;
    if (!gpus_feasible(job, in)) {
        axis_values_text(in, CDSE_AXIS_GPUS, values, sizeof values);
        const config_setting_t *at =
            in->setting[CDSE_AXIS_GPUS] ? in->setting[CDSE_AXIS_GPUS] : in->setting[AXIS_NODES];
        return cdse__key_fail(ctx, at, NULL, at,
                              "at least one gpus value divisible by some tp * pp * cp",
                              "no value in %s is divisible by any tp * pp * cp", values);
    }
    for (int s = 0; s < job->n_systems; s++) {
        if (!offload_feasible(&job->system[s], in)) {
            const config_setting_t *at = in->setting[CDSE_AXIS_OFFLOAD];
            return cdse__key_fail(
                ctx, at, NULL, at, "\"none\" among the values, or a memory_tier on every system",
                "system '%s' has no second memory tier to offload to", job->system[s].name);
        }
    }
    for (int s = 0; s < job->n_systems; s++) {
        if (supported_precision(&job->system[s], in) < 0) {
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

/* `flash_attention` left out: the attention kernels the job's stacks have (the stack axis's
 * values, or each system's default stack; -1 the built-in one, which has fused attention):
 * [true] when all have fused attention, as before stacks could lack it; [false] when none has;
 * [false, true] when some have. A stack without it is then not asked for it
 * (stack_unsupported). */
static void default_flash_attention(const cdse_job *job, int n_stacks, const int64_t *stacks,
                                    cdse_space *space)
{
    bool fused = false, unfused = false;
    int n = n_stacks > 0 ? n_stacks : job->n_systems;
    for (int i = 0; i < n; i++) {
        int k = n_stacks > 0 ? (int)stacks[i] : job->system_stack[i];
        bool has = k < 0 || job->stack[k].fused_attention;
        fused |= has;
        unfused |= !has;
    }
    if (!unfused)
        return;
    space->n[CDSE_AXIS_FLASH_ATTENTION] = fused ? 2 : 1;
    space->value[CDSE_AXIS_FLASH_ATTENTION][0] = 0;
    space->value[CDSE_AXIS_FLASH_ATTENTION][1] = 1;
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
        int n_stacks = space->n[CDSE_AXIS_STACK];
        int64_t stacks[CDSE_AXIS_MAX_VALUES];
        memcpy(stacks, space->value[CDSE_AXIS_STACK], sizeof stacks);
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
        if (in->setting[CDSE_AXIS_FLASH_ATTENTION] == NULL)
            default_flash_attention(job, n_stacks, stacks, space);
        /* The stack axis comes from the top-level `stacks` (-1: each system's default). */
        space->n[CDSE_AXIS_STACK] = n_stacks > 0 ? n_stacks : 1;
        space->value[CDSE_AXIS_STACK][0] = -1;
        for (int k = 0; k < n_stacks; k++)
            space->value[CDSE_AXIS_STACK][k] = stacks[k];
        cdse_diag inner;
        if (cdse_space_finish(space, &inner) != 0)
            rc = cdse__key_fail(ctx, setting, NULL, setting,
                                "a space of fewer than 2^63 configurations", "%s", inner.msg);
    }
    free(in);
    return rc;
}

/* --- Objective --- */

const char *const cdse_store_mode_names[CDSE_STORE_MODES + 1] = {"all", "feasible", "best", NULL};
static const char *const group_names[] = {"model",     "system", "gpus", "global_batch",
                                          "precision", "design", NULL};
static const int group_bits[] = {CDSE_GROUP_MODEL,        CDSE_GROUP_SYSTEM,    CDSE_GROUP_GPUS,
                                 CDSE_GROUP_GLOBAL_BATCH, CDSE_GROUP_PRECISION, CDSE_GROUP_DESIGN};

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

/* The metrics pruning allows: those that grow with the iteration time when the model, the
 * hardware design, the GPU count and the global batch are fixed (docs/sweep.md, Pruning). */
#define PRUNE_METRICS                                                                              \
    "time_per_iteration, tokens_per_s, time_to_train, gpu_hours, cost_to_train, "                  \
    "energy_to_train, tokens_per_kwh"

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
             "for tokens, lower), tokens_per_kwh (higher), time_to_train_effective (days for "
             "tokens with failures and checkpoints, lower), interruptions_expected (for tokens, "
             "lower), checkpoint_interval_s (higher), goodput (higher)"},
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
     .choices = cdse_store_mode_names,
     .has_default = true,
     .def = CDSE_STORE_FEASIBLE,
     .def_text = "\"feasible\"",
     .help = "which configurations the sweep stores: all (with status), feasible, best (only "
             "/top, /pareto and /pareto_cost)"},
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
    FLOAT_KEY(cdse_objective, "memory_headroom", memory_headroom, 0, false, 0.5, false,
              CDSE_MEMORY_HEADROOM_DEFAULT, "0.05",
              "fraction of HBM kept free: a configuration whose reserved memory "
              "(mem_reserved_gib) is above hbm_gib x (1 - memory_headroom) has the status "
              "over_headroom and is not ranked (0 to 0.5; docs/job-file.md)"),
    {.name = "prune",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_objective, prune),
     .def_text = "false",
     .help = "skip the blocks of the space that a lower bound shows cannot enter /top or "
             "/pareto: the same results as without, fewer configurations evaluated (store = "
             "\"best\" only; metrics " PRUNE_METRICS "; docs/sweep.md, Pruning)"},
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
    if (name[0] == '\0' || cdse__resolve_file("calibration/plans", name, ctx->job_path,
                                              job->probe_plan, sizeof job->probe_plan) != 0) {
        char names[600], allowed[800];
        cdse__list_names("calibration/plans", ctx->job_path, names, sizeof names);
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
static void print_stacks(FILE *out, const void *target, const key_spec *key, int indent);

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
    {.name = "stacks",
     .type = KEY_CUSTOM,
     .parse = parse_stacks,
     .print = print_stacks,
     .type_text = "list of names",
     .def_text = "each system's stack",
     .help = "software stacks (a sweep axis): names from calibration/stacks/ or paths; without "
             "it each system runs its `stack`, else current Megatron-Core"},
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
    /* The axes appended after the stack enter only when they leave their default (0), so that
     * jobs that do not use them keep their hash. */
    h = fnv1a(h, job->space.n, sizeof job->space.n[0] * (CDSE_AXIS_STACK + 1));
    for (int a = 0; a < CDSE_AXIS_COUNT; a++) {
        if (a > CDSE_AXIS_STACK && job->space.n[a] == 1 && job->space.value[a][0] == 0)
            continue;
        if (a > CDSE_AXIS_STACK)
            h = fnv1a(h, &job->space.n[a], sizeof job->space.n[a]);
        h = fnv1a(h, job->space.value[a], sizeof job->space.value[a][0] * (size_t)job->space.n[a]);
    }
    /* Jobs that do not prune keep their hash. */
    h = fnv1a(h, &job->objective, offsetof(cdse_objective, prune));
    if (job->objective.prune)
        h = fnv1a(h, &job->objective.prune, sizeof job->objective.prune);
    /* Jobs at the default headroom keep their hash (a store made before over_headroom is
     * refused by its fewer statuses, sweep.c). */
    if (job->objective.memory_headroom != CDSE_MEMORY_HEADROOM_DEFAULT)
        h = fnv1a(h, &job->objective.memory_headroom, sizeof job->objective.memory_headroom);
    h = fnv1a(h, job->stack, sizeof job->stack[0] * (size_t)job->n_stacks);
    h = fnv1a(h, job->system_stack, sizeof job->system_stack[0] * (size_t)job->n_systems);
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

/* Pruning is exact for /top and /pareto only (store = "best") and for metrics that grow with
 * the iteration time at a fixed model, design, GPU count and global batch (not mfu: its peak
 * depends on the precision, an axis a pruned block may span). */
static int check_prune(parse_ctx *ctx, const config_setting_t *objective, const cdse_objective *o)
{
    const config_setting_t *at = config_setting_get_member(objective, "prune");
    if (o->store != CDSE_STORE_BEST)
        return cdse__key_fail(ctx, objective, "prune", at,
                              "prune = true with store = \"best\" (pruned configurations have "
                              "no row in /results)",
                              "needs store = \"best\", the job stores \"%s\"",
                              cdse_store_mode_names[o->store]);
    if (o->metric == CDSE_METRIC_MFU)
        return cdse__key_fail(ctx, objective, "prune", at, "prune with metric " PRUNE_METRICS,
                              "metric \"%s\" cannot be pruned exactly",
                              cdse_metric_name(o->metric));
    /* The goodput metrics depend on the checkpoint's size, which the ZeRO stage changes inside
     * a pruned block, and not monotonically on the iteration time (the interval is at least one
     * iteration): no exact bound yet. */
    if (o->metric >= CDSE_METRIC_TIME_TO_TRAIN_EFFECTIVE)
        return cdse__key_fail(ctx, objective, "prune", at, "prune with metric " PRUNE_METRICS,
                              "metric \"%s\" cannot be pruned exactly (the checkpoint's size "
                              "varies with the ZeRO stage inside a pruned block): sweep it "
                              "without prune",
                              cdse_metric_name(o->metric));
    return 0;
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
         metric == CDSE_METRIC_COST_TO_TRAIN || metric == CDSE_METRIC_ENERGY_TO_TRAIN ||
         metric == CDSE_METRIC_TIME_TO_TRAIN_EFFECTIVE ||
         metric == CDSE_METRIC_INTERRUPTIONS_EXPECTED)) {
        const config_setting_t *at = config_setting_get_member(objective, "metric");
        rc = cdse__key_fail(&ctx, objective, "tokens", at, "a token budget > 0, e.g. tokens = 3e11",
                            "missing (required by metric \"%s\")", cdse_metric_name(metric));
    }
    if (rc == 0 && job->objective.prune)
        rc = check_prune(&ctx, objective, &job->objective);
    const config_setting_t *top =
        objective != NULL ? config_setting_get_member(objective, "top") : NULL;
    job->objective.top_line = top != NULL ? config_setting_source_line(top) : 0;
    config_destroy(&cfg);
    if (rc != 0)
        return rc;
    if (job->objective.currency[0] == '\0')
        snprintf(job->objective.currency, sizeof job->objective.currency, "USD");
    if (job->name[0] == '\0')
        default_name(path, job->name, sizeof job->name);
    if (job->output[0] == '\0')
        snprintf(job->output, sizeof job->output, "results/%.100s.h5", job->name);
    char bands[CDSE_PATH_MAX];
    if (cdse_job_find_data("calibration", "bands", path, bands, sizeof bands) != 0) {
        cdse_diag_set(diag,
                      "%s: calibration/bands.cfg (the error bands) not found in the data "
                      "directories (CLUSTERDSE_DATA, the job's directory and its parents, "
                      "the source tree, the install prefix)",
                      path);
        return CDSE_EIO;
    }
    rc = cdse_bands_apply(bands, job, diag);
    if (rc != 0)
        return rc;
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

/* The stacks axis as the files it names (nothing when the job names none). */
static void print_stacks(FILE *out, const void *target, const key_spec *key, int indent)
{
    (void)key;
    const cdse_job *job = target;
    if (job->space.value[CDSE_AXIS_STACK][0] < 0)
        return;
    fprintf(out, "%*sstacks = (", indent, "");
    for (int i = 0; i < job->space.n[CDSE_AXIS_STACK]; i++) {
        fputs(i ? ", " : " ", out);
        cdse__print_string(out, job->stack_path[job->space.value[CDSE_AXIS_STACK][i]]);
    }
    fputs(" );\n", out);
}

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
        cdse__print_system_body(out, &job->system[s], indent);
        return;
    }
    cdse__print_system_body(mem, &job->system[s], indent);
    fclose(mem);
    cdse__hw_print_body(out, body, job, s);
    free(body);
}

/* The systems of the axis; a pool lists its members inline (they follow the listed systems in
 * job->system). */
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
                cdse__print_system_body(out, &job->system[system->pool.member[t]], indent + 10);
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
    static const key_table *const before[] = {&job_table, &space_table, &objective_table,
                                              &model_table};
    static const key_table *const after[] = {&pool_table, &member_table, &probe_table};
    fprintf(out, "# %-42s %-30s %-24s %s\n", "key", "type", "default", "meaning");
    for (size_t t = 0; t < sizeof before / sizeof before[0]; t++)
        cdse__print_key_table(out, before[t]);
    cdse__system_print_keys(out); /* systems[], peak_tflops, network[], collectives, tier */
    for (size_t t = 0; t < sizeof after / sizeof after[0]; t++)
        cdse__print_key_table(out, after[t]);
    cdse_stack_print_keys(out); /* the files of calibration/stacks/ */
}
