/* Random job files over the zoo and every strategy axis (gen.h). */
#include "gen.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/config/job.h"

uint64_t meta_rng_next(meta_rng *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int meta_rng_below(meta_rng *rng, int n)
{
    return n <= 1 ? 0 : (int)(meta_rng_next(rng) % (uint64_t)n);
}

double meta_rng_unit(meta_rng *rng)
{
    return (double)(meta_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* ---- The zoo -------------------------------------------------------------------------- */

#define ZOO_MAX 64

typedef struct zoo {
    int n_models, n_systems, n_stacks;
    char model_name[ZOO_MAX][CDSE_NAME_MAX];
    cdse_model model[ZOO_MAX];
    char system_name[ZOO_MAX][CDSE_NAME_MAX];
    cdse_system system[ZOO_MAX];
    char stack_name[ZOO_MAX][CDSE_NAME_MAX];
} zoo;

static zoo the_zoo;

static int by_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The NAME of every DIR/NAME.cfg, sorted (a directory's order is not reproducible). */
static int list_cfg(const char *dir, char names[ZOO_MAX][CDSE_NAME_MAX], int *n)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "metamorphic: cannot list %s\n", dir);
        return -1;
    }
    *n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < ZOO_MAX) {
        size_t len = strlen(e->d_name);
        if (len > 4 && len - 4 < CDSE_NAME_MAX && strcmp(e->d_name + len - 4, ".cfg") == 0) {
            memcpy(names[*n], e->d_name, len - 4);
            names[*n][len - 4] = '\0';
            (*n)++;
        }
    }
    closedir(d);
    qsort(names, (size_t)*n, CDSE_NAME_MAX, by_name);
    return *n > 0 ? 0 : -1;
}

int meta_zoo_load(const char *source_dir)
{
    zoo *z = &the_zoo;
    char path[CDSE_PATH_MAX];
    cdse_diag diag;
    snprintf(path, sizeof path, "%s/jobs/models", source_dir);
    if (list_cfg(path, z->model_name, &z->n_models) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/calibration/systems", source_dir);
    if (list_cfg(path, z->system_name, &z->n_systems) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/calibration/stacks", source_dir);
    if (list_cfg(path, z->stack_name, &z->n_stacks) != 0)
        return -1;
    for (int m = 0; m < z->n_models; m++) {
        snprintf(path, sizeof path, "%s/jobs/models/%s.cfg", source_dir, z->model_name[m]);
        if (cdse_model_load_file(path, &z->model[m], &diag) != 0) {
            fprintf(stderr, "metamorphic: %s\n", diag.msg);
            return -1;
        }
    }
    for (int s = 0; s < z->n_systems; s++) {
        snprintf(path, sizeof path, "%s/calibration/systems/%s.cfg", source_dir, z->system_name[s]);
        if (cdse_system_load_file(path, &z->system[s], &diag) != 0) {
            fprintf(stderr, "metamorphic: %s\n", diag.msg);
            return -1;
        }
    }
    return 0;
}

/* ---- Lists ---------------------------------------------------------------------------- */

static void list_add(meta_list *list, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void list_add(meta_list *list, const char *fmt, ...)
{
    if (list->n >= META_MAX_LIST)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(list->item[list->n], META_ITEM_MAX, fmt, ap);
    va_end(ap);
    for (int i = 0; i < list->n; i++)
        if (strcmp(list->item[i], list->item[list->n]) == 0)
            return; /* a list holds distinct values */
    list->n++;
}

static meta_list *axis(meta_job *job, const char *key)
{
    meta_list *list = &job->axis[job->n_axes++];
    memset(list, 0, sizeof *list);
    snprintf(list->key, sizeof list->key, "%s", key);
    return list;
}

/* Each of the `n` candidates with probability `p`, at least one (a random one). */
static void pick_ints(meta_rng *rng, meta_list *list, const int *values, int n, double p)
{
    for (int i = 0; i < n; i++)
        if (meta_rng_unit(rng) < p)
            list_add(list, "%d", values[i]);
    if (list->n == 0)
        list_add(list, "%d", values[meta_rng_below(rng, n)]);
}

static void pick_words(meta_rng *rng, meta_list *list, const char *const *values, int n, double p)
{
    for (int i = 0; i < n; i++)
        if (meta_rng_unit(rng) < p)
            list_add(list, "\"%s\"", values[i]);
    if (list->n == 0)
        list_add(list, "\"%s\"", values[meta_rng_below(rng, n)]);
}

static void every_word(meta_list *list, const char *const *values, int n)
{
    for (int i = 0; i < n; i++)
        list_add(list, "\"%s\"", values[i]);
}

/* ---- Systems -------------------------------------------------------------------------- */

/* A second memory tier, so that offload configurations can run on any zoo system. */
#define TIER_TEXT                                                                                  \
    "memory_tier = { attach = \"per_node\"; capacity_gib = 1024.0; bandwidth = 200.0; "            \
    "latency = 1.0; };"

/* An entry based on zoo system `s` whose network has fitted parameters for every collective
 * on every level (as `clusterdse fit` writes them): latency 0.5 to 2 times the level's, bus
 * bandwidth 0.3 to 1 times its bandwidth x efficiency. */
static void add_fitted(meta_rng *rng, meta_job *job, int s)
{
    static const char *const colls[] = {"allreduce", "allgather", "reduce_scatter", "alltoall",
                                        "sendrecv"};
    const cdse_system *sys = &the_zoo.system[s];
    char levels[1600];
    size_t len = 0;
    for (int l = 0; l < sys->n_levels && len < sizeof levels; l++) {
        const cdse_net_level *lv = &sys->level[l];
        len += (size_t)snprintf(levels + len, sizeof levels - len,
                                "%s{ name = \"%s\"; size = %d; bandwidth = %.4f; latency = %.4f; "
                                "efficiency = %.4f;",
                                l ? ", " : "", lv->name, lv->size, lv->bandwidth_gbs,
                                lv->latency_us, lv->efficiency);
        for (int c = 0; c < 5 && len < sizeof levels; c++)
            len += (size_t)snprintf(
                levels + len, sizeof levels - len, " %s = { latency = %.4f; bandwidth = %.4f; };",
                colls[c], lv->latency_us * (0.5 + 1.5 * meta_rng_unit(rng)),
                lv->bandwidth_gbs * lv->efficiency * (0.3 + 0.7 * meta_rng_unit(rng)));
        if (len < sizeof levels)
            len += (size_t)snprintf(levels + len, sizeof levels - len, " }");
    }
    list_add(&job->systems, "{ base = \"%s\"; name = \"%.30s-fitted%d\"; network = ( %s ); }",
             the_zoo.system_name[s], the_zoo.system_name[s], job->systems.n, levels);
}

/* A zoo system by name, or an entry based on it: with a memory tier, with a rental price, with
 * a fitted network, or (for sweeps) with hardware axes. */
static void add_system(meta_rng *rng, meta_job *job, int s, bool hw_axes)
{
    const zoo *z = &the_zoo;
    const cdse_system *sys = &z->system[s];
    const char *name = z->system_name[s];
    int form = meta_rng_below(rng, hw_axes ? 5 : 4);
    if (form == 0 || sys->pool.n_types > 0) {
        list_add(&job->systems, "\"%s\"", name);
    } else if (form == 1) {
        list_add(&job->systems, "{ base = \"%s\"; name = \"%.30s-tier%d\"; %s }", name, name,
                 job->systems.n, sys->tier.attach == 0 ? TIER_TEXT : "");
    } else if (form == 2) {
        list_add(&job->systems,
                 "{ base = \"%s\"; name = \"%.30s-rent%d\"; cost = { rental_price = %.2f; "
                 "gpu_power = %.1f; pue = 1.3; }; }",
                 name, name, job->systems.n, 1.0 + 4.0 * meta_rng_unit(rng),
                 300.0 + 700.0 * meta_rng_unit(rng));
    } else if (form == 3) {
        add_fitted(rng, job, s);
    } else {
        /* Hardware axes: capacity, HBM bandwidth, bf16 peak, the first level's bandwidth and
         * the purchase price, each at the profile's value and another one. */
        double hbm = sys->hbm_gib, bw = sys->hbm_bandwidth_gbs, bf16 = sys->peak_tflops[CDSE_BF16];
        double price = sys->cost.gpu_price > 0.0 ? sys->cost.gpu_price : 20000.0;
        list_add(&job->systems,
                 "{ base = \"%s\"; name = \"%.30s-axes%d\"; hbm_gib = [ %.3f, %.3f ]; "
                 "hbm_bandwidth = [ %.1f, %.1f ]; peak_tflops = { fp32 = %.3f; tf32 = %.3f; "
                 "bf16 = [ %.3f, %.3f ]; fp16 = %.3f; fp8 = %.3f; }; "
                 "cost = { gpu_price = [ %.1f, %.1f ]; gpu_power = %.1f; node_power = 2000.0; "
                 "pue = 1.25; amortization_years = 4.0; }; }",
                 name, name, job->systems.n, hbm, hbm * (0.5 + meta_rng_unit(rng)), bw,
                 bw * (1.2 + meta_rng_unit(rng)), sys->peak_tflops[CDSE_FP32],
                 sys->peak_tflops[CDSE_TF32], bf16, bf16 * (1.2 + 2.0 * meta_rng_unit(rng)),
                 sys->peak_tflops[CDSE_FP16], sys->peak_tflops[CDSE_FP8], price,
                 price * (0.5 + meta_rng_unit(rng)),
                 sys->cost.gpu_power_w > 0.0 ? sys->cost.gpu_power_w : 700.0);
    }
}

/* A pool of two zoo systems (an equal number of GPUs each, so that every even GPU count
 * splits). */
static void add_pool(meta_rng *rng, meta_job *job)
{
    const zoo *z = &the_zoo;
    int a = meta_rng_below(rng, z->n_systems), b = meta_rng_below(rng, z->n_systems - 1);
    if (b >= a)
        b++;
    int per_type = 8 << meta_rng_below(rng, 4);
    list_add(&job->systems,
             "{ name = \"pool-%d-%d\"; pool = ( { system = \"%s\"; gpus = %d; }, "
             "{ system = \"%s\"; gpus = %d; } ); }",
             a, b, z->system_name[a], per_type, z->system_name[b], per_type);
}

/* ---- Axes ----------------------------------------------------------------------------- */

static bool divides(int d, int n)
{
    return d > 0 && n % d == 0;
}

/* Tensor-parallel sizes that fit every chosen model (the job would be refused otherwise). */
static void add_tp(meta_rng *rng, meta_job *job, const int *models, int n_models)
{
    static const int tps[] = {1, 2, 4, 8};
    meta_list *list = axis(job, "tp");
    for (int i = 0; i < 4; i++) {
        bool fits = true;
        for (int m = 0; m < n_models; m++) {
            const cdse_model *model = &the_zoo.model[models[m]];
            fits &= divides(tps[i], model->heads) && divides(tps[i], model->ffn) &&
                    (model->experts == 0 || divides(tps[i], model->moe_ffn)) &&
                    (divides(tps[i], model->kv_heads) || divides(model->kv_heads, tps[i]));
        }
        if (fits && (i == 0 || meta_rng_unit(rng) < 0.5))
            list_add(list, "%d", tps[i]);
    }
}

static void add_moe_axes(meta_rng *rng, meta_job *job, int experts)
{
    static const int eps[] = {1, 2, 4, 8};
    meta_list *ep = axis(job, "ep");
    list_add(ep, "1");
    for (int i = 1; i < 4; i++)
        if (divides(eps[i], experts) && meta_rng_unit(rng) < 0.5)
            list_add(ep, "%d", eps[i]);
    static const char *const dispatchers[] = {"alltoall", "deepep"};
    pick_words(rng, axis(job, "moe_dispatcher"), dispatchers, 2, 0.5);
    static const char *const overlaps[] = {"none", "shared_experts", "a2a"};
    pick_words(rng, axis(job, "moe_overlap"), overlaps, 3, 0.4);
    if (meta_rng_unit(rng) < 0.3) {
        meta_list *etp = axis(job, "etp");
        list_add(etp, "0");
        list_add(etp, "1");
    }
}

/* The axes every kind of job has. `recompute_all`: recompute and zero with every value (the
 * pair relations vary them). */
static void add_strategy_axes(meta_rng *rng, meta_job *job, bool recompute_all, bool moe, double p)
{
    static const int pps[] = {1, 2, 4, 8}, cps[] = {1, 2}, vpps[] = {1, 2}, mbs[] = {1, 2, 4},
                     zeros[] = {0, 1, 2, 3};
    meta_list *pp = axis(job, "pp");
    list_add(pp, "1"); /* a job whose every pp x vpp exceeds a model's layers is refused */
    pick_ints(rng, pp, pps, 4, p);
    pick_ints(rng, axis(job, "cp"), cps, 2, p * 0.6);
    pick_ints(rng, axis(job, "vpp"), vpps, 2, p * 0.6);
    pick_ints(rng, axis(job, "microbatch"), mbs, 3, p);
    static const int batches[] = {256, 512, 1024, 2048};
    pick_ints(rng, axis(job, "global_batch"), batches, 4, p * 0.5);
    static const char *const recomputes[] = {"none", "selective", "full"};
    static const char *const bools[] = {"true", "false"};
    static const char *const precisions[] = {"bf16", "fp16", "fp8"};
    static const char *const offloads[] = {"none", "optimizer", "activations", "weights",
                                           "optimizer+activations"};
    static const char *const placements[] = {"tp-cp-dp-pp", "tp-dp-cp-pp", "cp-tp-dp-pp",
                                             "tp-cp-pp-dp"};
    if (recompute_all) {
        every_word(axis(job, "recompute"), recomputes, 3);
        meta_list *zero = axis(job, "zero");
        for (int i = 0; i < 4; i++)
            list_add(zero, "%d", zeros[i]);
    } else {
        pick_words(rng, axis(job, "recompute"), recomputes, 3, p);
        pick_ints(rng, axis(job, "zero"), zeros, 4, p);
    }
    /* libconfig booleans are bare words. */
    meta_list *sp = axis(job, "sequence_parallel");
    for (int i = 0; i < 2; i++)
        if (meta_rng_unit(rng) < 0.6)
            list_add(sp, "%s", bools[i]);
    if (sp->n == 0)
        list_add(sp, "false");
    /* bf16 and "none" always: the job is refused when a system supports none of the precisions
     * or has no tier for every offload value. */
    meta_list *precision = axis(job, "precision");
    list_add(precision, "\"bf16\"");
    pick_words(rng, precision, precisions, 3, p * 0.7);
    meta_list *fa = axis(job, "flash_attention");
    for (int i = 0; i < 2; i++)
        if (meta_rng_unit(rng) < 0.5)
            list_add(fa, "%s", bools[i]);
    if (fa->n == 0)
        job->n_axes--; /* the stacks' default */
    meta_list *offload = axis(job, "offload");
    list_add(offload, "\"none\"");
    pick_words(rng, offload, offloads, 5, p * 0.4);
    meta_list *tco = axis(job, "tp_comm_overlap");
    list_add(tco, "%s", bools[meta_rng_below(rng, 2)]);
    if (meta_rng_unit(rng) < 0.3)
        list_add(tco, "%s", bools[meta_rng_below(rng, 2)]);
    pick_words(rng, axis(job, "placement"), placements, 4, p * 0.3);
    static const char *const dense_modules[] = {"none", "core_attn", "layernorm", "mlp",
                                                "core_attn+layernorm"};
    static const char *const moe_modules[] = {"none",      "moe_act", "core_attn+moe_act",
                                              "layernorm", "moe",     "shared_experts+moe_act"};
    if (moe)
        pick_words(rng, axis(job, "recompute_modules"), moe_modules, 6, p * 0.4);
    else
        pick_words(rng, axis(job, "recompute_modules"), dense_modules, 5, p * 0.4);
    /* 0 (every layer) always, so that most configurations are valid. */
    static const int layer_counts[] = {1, 2};
    meta_list *recompute_layers = axis(job, "recompute_layers");
    list_add(recompute_layers, "0");
    pick_ints(rng, recompute_layers, layer_counts, 2, p * 0.4);
    meta_list *offload_layers = axis(job, "offload_layers");
    list_add(offload_layers, "0");
    pick_ints(rng, offload_layers, layer_counts, 2, p * 0.3);
}

/* GPU counts: powers of two from 8, so that most tp x pp x cp divide them. */
static void add_gpus(meta_rng *rng, meta_job *job, double p)
{
    static const int gpus[] = {8, 16, 32, 64, 128, 256, 512, 1024};
    meta_list *list = axis(job, "gpus");
    for (int i = 0; i < 8; i++)
        if (meta_rng_unit(rng) < p)
            list_add(list, "%d", gpus[i]);
    if (list->n == 0 || meta_rng_unit(rng) < 0.5)
        list_add(list, "%d",
                 64 << meta_rng_below(rng, 4)); /* some count that any tp pp cp splits */
}

/* ---- Jobs ----------------------------------------------------------------------------- */

static const char *const prune_metrics[] = {
    "time_per_iteration", "tokens_per_s",    "time_to_train", "gpu_hours",
    "cost_to_train",      "energy_to_train", "tokens_per_kwh"};
static const char *const group_keys[] = {"model",        "system",    "gpus",
                                         "global_batch", "precision", "design"};

static void add_objective(meta_rng *rng, meta_job *job, meta_kind kind, bool prune)
{
    double tokens = meta_rng_below(rng, 5) == 0 ? 0.0 : 1e10 * (1 + meta_rng_below(rng, 300));
    char tokens_text[64] = "";
    if (tokens > 0.0 || kind == META_PRUNE)
        snprintf(tokens_text, sizeof tokens_text, "tokens = %.6g;", tokens > 0.0 ? tokens : 3e11);
    char group_by[256] = "";
    size_t len = 0;
    for (int g = 0; g < 6; g++)
        if (meta_rng_unit(rng) < 0.35)
            len += (size_t)snprintf(group_by + len, sizeof group_by - len, "%s\"%s\"",
                                    len ? ", " : "", group_keys[g]);
    const char *store = kind == META_SWEEP ? "all" : kind == META_PRUNE ? "best" : "feasible";
    const char *metric = kind == META_PRUNE ? prune_metrics[meta_rng_below(rng, 7)]
                                            : prune_metrics[meta_rng_below(rng, 3)];
    if (tokens_text[0] == '\0')
        metric = prune_metrics[meta_rng_below(rng, 2)]; /* the ones without a token budget */
    snprintf(job->objective, sizeof job->objective,
             "metric = \"%s\"; top = %d; group_by = [ %s ]; store = \"%s\"; %s "
             "electricity_price = %.3f;%s",
             metric, 1 + meta_rng_below(rng, 5), group_by, store, tokens_text,
             0.05 + 0.2 * meta_rng_unit(rng), prune ? " prune = true;" : "");
}

void meta_job_generate(meta_rng *rng, meta_kind kind, bool prune, meta_job *job)
{
    const zoo *z = &the_zoo;
    memset(job, 0, sizeof *job);
    snprintf(job->models.key, sizeof job->models.key, "models");
    snprintf(job->systems.key, sizeof job->systems.key, "systems");
    snprintf(job->stacks.key, sizeof job->stacks.key, "stacks");
    /* Small spaces for sweeps (they evaluate every configuration), wide ones for pairs. */
    double p = kind == META_PAIRS ? 0.5 : kind == META_SWEEP ? 0.35 : 0.5;
    int models[2], n_models = kind == META_PAIRS || meta_rng_below(rng, 2) ? 1 : 2;
    bool moe = false;
    int experts = 0;
    for (int m = 0; m < n_models; m++) {
        models[m] = meta_rng_below(rng, z->n_models);
        list_add(&job->models, "\"%s\"", z->model_name[models[m]]);
        if (z->model[models[m]].experts > 0) {
            moe = true;
            experts = experts ? experts : z->model[models[m]].experts;
        }
    }
    if (job->models.n < n_models)
        n_models = job->models.n;
    int n_systems = 1 + meta_rng_below(rng, kind == META_PAIRS ? 2 : 2);
    for (int s = 0; s < n_systems; s++)
        add_system(rng, job, meta_rng_below(rng, z->n_systems), kind != META_PAIRS);
    if (kind != META_PAIRS && meta_rng_below(rng, 3) == 0)
        add_pool(rng, job);
    if (meta_rng_below(rng, 2) == 0) {
        int n = 1 + meta_rng_below(rng, 2);
        for (int k = 0; k < n; k++)
            list_add(&job->stacks, "\"%s\"", z->stack_name[meta_rng_below(rng, z->n_stacks)]);
    }
    add_gpus(rng, job, kind == META_PAIRS ? 0.3 : 0.15);
    add_tp(rng, job, models, n_models);
    if (moe)
        add_moe_axes(rng, job, experts);
    add_strategy_axes(rng, job, kind == META_PAIRS, moe, p);
    add_objective(rng, job, kind, prune);
}

/* ---- Rendering ------------------------------------------------------------------------ */

typedef struct out_buf {
    char *buf;
    size_t size, len;
    bool full;
} out_buf;

static void put(out_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_buf *out, const char *fmt, ...)
{
    if (out->full)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out->buf + out->len, out->size - out->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= out->size - out->len)
        out->full = true;
    else
        out->len += (size_t)n;
}

/* The list's items in order, or shuffled (Fisher-Yates). */
static void put_list(out_buf *out, const meta_list *list, meta_rng *shuffle, const char *open,
                     const char *close)
{
    int order[META_MAX_LIST];
    for (int i = 0; i < list->n; i++)
        order[i] = i;
    for (int i = list->n - 1; shuffle != NULL && i > 0; i--) {
        int j = meta_rng_below(shuffle, i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    put(out, "%s", open);
    for (int i = 0; i < list->n; i++)
        put(out, "%s%s", i ? ", " : " ", list->item[order[i]]);
    put(out, " %s", close);
}

int meta_job_render(const meta_job *job, meta_rng *shuffle, char *buf, size_t size)
{
    out_buf out = {buf, size, 0, false};
    put(&out,
        "# A generated job of tests/metamorphic (docs/testing.md).\nname = \"metamorphic\";\n");
    put(&out, "models = ");
    put_list(&out, &job->models, shuffle, "(", ");\n");
    put(&out, "systems = ");
    put_list(&out, &job->systems, shuffle, "(", ");\n");
    if (job->stacks.n > 0) {
        put(&out, "stacks = ");
        put_list(&out, &job->stacks, shuffle, "[", "];\n");
    }
    put(&out, "space = {\n");
    for (int a = 0; a < job->n_axes; a++) {
        put(&out, "  %s = ", job->axis[a].key);
        put_list(&out, &job->axis[a], shuffle, "[", "];\n");
    }
    put(&out, "};\nobjective = { %s };\n", job->objective);
    return out.full ? -1 : (int)out.len;
}
