/* Job files: models, heterogeneous pools, systems and stacks (job_internal.h). */
#define _XOPEN_SOURCE 700 /* realpath, strdup, strtok_r */
#include "job_internal.h"

/* --- Models --- */

static int parse_seq_histogram(parse_ctx *ctx, const config_setting_t *setting, void *target,
                               const key_spec *key);

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
     .print = job__print_seq_histogram,
     .type_text = "list of [length, weight]",
     .def_text = "none",
     .help = "sample lengths of variable-length training data: time is costed at the mean length "
             "and the slowest data-parallel rank, memory at seq_len"},
};
const key_table job__model_table = {"models[]", model_keys,
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
    int rc = cdse__parse_group(ctx, group, &job__model_table, model, fresh);
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

/* A member's `gpus`: one count, or a list of counts (the pool's GPUs of that type as a sweep
 * axis: one system entry per combination, expand_pool_counts). */
#define POOL_COUNTS_MAX 16

typedef struct pool_member {
    cdse_system system;
    int n_counts;
    int counts[POOL_COUNTS_MAX];
} pool_member;

/* The count lists of the listed pools (index: the entry's position in `systems`). */
struct job__pool_counts {
    int n[CDSE_MAX_SYSTEMS][CDSE_MAX_POOL_TYPES]; /* 0: not a pool with lists */
    int value[CDSE_MAX_SYSTEMS][CDSE_MAX_POOL_TYPES][POOL_COUNTS_MAX];
    const config_setting_t *at[CDSE_MAX_SYSTEMS]; /* the pool's `pool` list, for messages */
};

static int parse_member_gpus(parse_ctx *ctx, const config_setting_t *setting, void *target,
                             const key_spec *key)
{
    (void)key;
    pool_member *member = target;
    char allowed[CDSE_ALLOWED_MAX];
    snprintf(allowed, sizeof allowed,
             "an integer from 1 to %d, or a list [ ... ] of 1 to %d distinct such integers (the "
             "pool's GPUs of this type as a sweep axis)",
             CDSE_MAX_GPUS, POOL_COUNTS_MAX);
    bool list = config_setting_is_array(setting) || config_setting_is_list(setting);
    int n = list ? config_setting_length(setting) : 1;
    if (n < 1 || n > POOL_COUNTS_MAX)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "%d values", n);
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
        if (config_setting_type(elem) != CONFIG_TYPE_INT &&
            config_setting_type(elem) != CONFIG_TYPE_INT64)
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "expected an integer");
        long long v = config_setting_get_int64(elem);
        if (v < 1 || v > CDSE_MAX_GPUS)
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "%lld", v);
        for (int j = 0; j < i; j++)
            if (member->counts[j] == v)
                return cdse__key_fail(ctx, setting, NULL, elem, allowed, "%lld appears twice", v);
        member->counts[i] = (int)v;
    }
    member->n_counts = n;
    return 0;
}

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
     .type = KEY_CUSTOM,
     .parse = parse_member_gpus,
     .required = true,
     .type_text = "int or int list",
     .def_text = "required",
     .help = "GPUs of this type in the pool; a configuration takes its GPUs from the types in "
             "these proportions. A list [ ... ] makes the count a sweep axis: the pool becomes "
             "one system per combination of its members' lists, named NAME/c0+c1+..."},
};
const key_table job__member_table = {"systems[].pool[]", member_keys,
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
        rc = cdse__parse_group(ctx, elem, &job__member_table, member, true);
        if (rc == 0)
            rc = place_member(ctx, elem, &member->system, &parsed.member[i]);
        for (int j = 0; j < i && rc == 0; j++)
            if (parsed.member[j] == parsed.member[i])
                rc = cdse__key_fail(ctx, setting, NULL, elem, allowed,
                                    "GPU type '%s' appears twice", member->system.name);
        parsed.gpus[i] = member->counts[0];
        parsed.n_types = i + 1;
        if (rc == 0 && ctx->pool_counts != NULL && member->n_counts > 1) {
            int at = (int)(pool - ctx->job->system);
            ctx->pool_counts->n[at][i] = member->n_counts;
            memcpy(ctx->pool_counts->value[at][i], member->counts, sizeof member->counts);
            ctx->pool_counts->at[at] = setting;
        }
    }
    free(member);
    if (rc != 0)
        return rc;
    /* The pool's own fields are those of its first member (hardware.h), under its own name. */
    char name[CDSE_NAME_MAX];
    memcpy(name, pool->name, sizeof name);
    cdse_system options = *pool; /* the pool's own keys, whatever their order */
    *pool = ctx->job->system[parsed.member[0]];
    memcpy(pool->name, name, sizeof name);
    pool->pool = parsed;
    pool->partition = options.partition;
    pool->tp_per_type = options.tp_per_type;
    pool->link_bandwidth_gbs = options.link_bandwidth_gbs;
    pool->link_latency_us = options.link_latency_us;
    return 0;
}

const char *const job__partition_names[] = {"balanced", "even", NULL};

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
    {.name = "partition",
     .type = KEY_ENUM,
     .offset = offsetof(cdse_system, partition),
     .choices = job__partition_names,
     .has_default = true,
     .def = CDSE_PARTITION_BALANCED,
     .def_text = "\"balanced\"",
     .help = "how the work is shared among the types: balanced (layers and batch by each type's "
             "speed, within its memory) or even (Megatron-LM's equal split)"},
    {.name = "tp_per_type",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_system, tp_per_type),
     .def_text = "false",
     .help = "pipeline stages of each type may run half or twice the strategy's tensor-parallel "
             "degree over the same GPUs (the result's pool_tp)"},
    FLOAT_KEY(cdse_system, "link_bandwidth", link_bandwidth_gbs, 0, true, 1e9, false, 0, "none",
              "the network between the islands of different types, GB/s per GPU one direction: "
              "what crosses between types (the dp split's gradient reduction, the pp split's "
              "transfers) runs on it after reducing inside each island"),
    FLOAT_KEY(cdse_system, "link_latency", link_latency_us, 0, false, 1e9, false, 0, "0",
              "latency of the link between islands, us"),
};
const key_table job__pool_table = {"systems[]", pool_keys,
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

int job__parse_models(parse_ctx *ctx, const config_setting_t *setting, void *target,
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

/* The combinations of listed pool i's count lists (1 when it has none). */
static int pool_combinations(const struct job__pool_counts *pc, const cdse_job *job, int i)
{
    int k = 1;
    for (int t = 0; t < job->system[i].pool.n_types; t++)
        k *= pc->n[i][t] > 1 ? pc->n[i][t] : 1;
    return k;
}

/* Combination c of pool s's count lists in mixed radix (the last member's list fastest): its
 * members' counts into out->pool.gpus and its name NAME/c0+c1+... into out->name, NAME being
 * the pool's own name `pool_name`. */
static int pool_combination(parse_ctx *ctx, const struct job__pool_counts *pc, int s, int c,
                            const char *pool_name, cdse_system *out)
{
    char name[CDSE_NAME_MAX * 4];
    size_t len = (size_t)snprintf(name, sizeof name, "%s/", pool_name);
    int rest = c;
    int digit[CDSE_MAX_POOL_TYPES];
    for (int t = out->pool.n_types - 1; t >= 0; t--) {
        int m = pc->n[s][t] > 1 ? pc->n[s][t] : 1;
        digit[t] = rest % m;
        rest /= m;
    }
    for (int t = 0; t < out->pool.n_types; t++) {
        if (pc->n[s][t] > 1)
            out->pool.gpus[t] = pc->value[s][t][digit[t]];
        len += (size_t)snprintf(name + len, sizeof name - len, "%s%d", t ? "+" : "",
                                out->pool.gpus[t]);
    }
    if (strlen(name) >= CDSE_NAME_MAX)
        return cdse__key_fail(ctx, pc->at[s], NULL, pc->at[s],
                              "a pool name that leaves room for its counts (names hold "
                              "47 characters)",
                              "'%s' is too long", name);
    memcpy(out->name, name, strlen(name) + 1);
    return 0;
}

/* Pools whose members give count lists become one listed system per combination (the last
 * member's list varying fastest), in place of the entry, each under NAME/c0+c1+...: the GPU
 * counts of a pool are then a sweep axis through the systems axis, each combination billed and
 * budgeted as its own pool. The members' profiles (after the listed systems) move up; every
 * index into job->system (pool members, system_stack, sizes, hardware axes) follows. */
static int expand_pool_counts(parse_ctx *ctx, const config_setting_t *setting, cdse_job *job,
                              const struct job__pool_counts *pc)
{
    int listed = ctx->axis_systems, extra = 0;
    int first[CDSE_MAX_SYSTEMS], k[CDSE_MAX_SYSTEMS];
    for (int i = 0; i < listed; i++) {
        k[i] = pool_combinations(pc, job, i);
        if (k[i] > CDSE_MAX_SYSTEMS)
            return cdse__key_fail(ctx, pc->at[i], NULL, pc->at[i],
                                  "at most 32 systems including pool members and the pools "
                                  "that count lists make",
                                  "%d combinations of counts", k[i]);
        first[i] = i + extra;
        extra += k[i] - 1;
    }
    if (extra == 0)
        return 0;
    for (int i = 0; i < listed; i++)
        for (int h = 0; h < job->n_hw_axes && k[i] > 1; h++)
            if (job->hw_axis[h].system == i)
                return cdse__key_fail(ctx, pc->at[i], NULL, pc->at[i],
                                      "count lists or hardware axes on a pool, not both",
                                      "pool '%s' has both", job->system[i].name);
    if (job->n_systems + extra > CDSE_MAX_SYSTEMS) {
        int i = 0;
        while (k[i] == 1)
            i++;
        return cdse__key_fail(ctx, pc->at[i], NULL, pc->at[i],
                              "at most 32 systems including pool members and the pools that "
                              "count lists make",
                              "%d systems", job->n_systems + extra);
    }
    /* old index -> new index (of the first combination for an expanded pool) */
    int map[CDSE_MAX_SYSTEMS];
    for (int s = 0; s < job->n_systems; s++)
        map[s] = s < listed ? first[s] : s + extra;
    for (int s = job->n_systems - 1; s >= 0; s--) { /* from the end: targets are >= sources */
        int to = map[s];
        cdse_system entry = job->system[s];
        int stack = job->system_stack[s];
        int32_t sizes[CDSE_AXIS_MAX_VALUES];
        memcpy(sizes, job->system_gpus[s], sizeof sizes);
        int n = s < listed ? k[s] : 1;
        for (int c = 0; c < n; c++) {
            cdse_system *out = &job->system[to + c];
            *out = entry;
            job->system_stack[to + c] = stack;
            memcpy(job->system_gpus[to + c], sizes, sizeof sizes);
            if (n > 1 && pool_combination(ctx, pc, s, c, entry.name, out) != 0)
                return -1;
        }
    }
    job->n_systems += extra;
    ctx->axis_systems += extra;
    for (int s = 0; s < job->n_systems; s++)
        for (int t = 0; t < job->system[s].pool.n_types; t++)
            job->system[s].pool.member[t] = map[job->system[s].pool.member[t]];
    for (int h = 0; h < job->n_hw_axes; h++)
        job->hw_axis[h].system = map[job->hw_axis[h].system];
    for (int i = 0; i < ctx->axis_systems; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(job->system[i].name, job->system[j].name) == 0)
                return cdse__key_fail(ctx, setting, NULL, setting, "distinct names",
                                      "system '%s' appears twice (a pool's count list names "
                                      "its systems NAME/c0+c1+...)",
                                      job->system[i].name);
    return 0;
}

int job__parse_systems(parse_ctx *ctx, const config_setting_t *setting, void *target,
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
    struct job__pool_counts *counts = calloc(1, sizeof *counts);
    if (counts == NULL)
        return CDSE_ENOMEM;
    ctx->pool_counts = counts;
    for (int i = 0; i < ctx->axis_systems && rc == 0; i++) {
        const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
        if (config_setting_is_group(elem) && config_setting_get_member(elem, "pool") != NULL)
            rc = cdse__parse_group(ctx, elem, &job__pool_table, &job->system[i], true);
    }
    ctx->pool_counts = NULL;
    for (int i = 0; i < ctx->axis_systems && rc == 0; i++)
        for (int j = 0; j < i && rc == 0; j++)
            if (strcmp(job->system[i].name, job->system[j].name) == 0) {
                const config_setting_t *elem = list ? config_setting_get_elem(setting, i) : setting;
                rc = cdse__key_fail(ctx, setting, NULL, elem, "distinct names",
                                    "system '%s' appears twice", job->system[i].name);
            }
    if (rc == 0)
        rc = system_default_stacks(ctx, setting, job);
    if (rc == 0)
        rc = expand_pool_counts(ctx, setting, job, counts);
    free(counts);
    return rc;
}

/* `stacks`: the values of the stack axis, names from calibration/stacks/ or paths. */
int job__parse_stacks(parse_ctx *ctx, const config_setting_t *setting, void *target,
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
    job->space.n[CDSE_AXIS_STACK] = n; /* kept by job__parse_space, which runs next */
    for (int i = 0; i < n; i++)
        job->space.value[CDSE_AXIS_STACK][i] = value[i];
    return 0;
}
