/* Job files (libconfig 1.5) -> validated, immutable job: the key tables of job files, models
 * and systems, on the key-table engine of keys.h (which also describes the error shape). This
 * file: the objective, the probe section, loading a job, its fingerprint, the effective
 * job and the key reference; models, pools, systems and stacks are in job_entries.c, the space
 * in job_space.c (job_internal.h). */
#define _XOPEN_SOURCE 700 /* realpath, strdup, strtok_r */
#include "job_internal.h"

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
     .choices = cdse_metric_names,
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
    FLOAT_KEY(cdse_objective, "budget", budget, 0, true, 1e30, false, 0, "none",
              "the most a configuration's GPUs may cost to buy, in currency units: GPUs x "
              "(gpu_price + facility_price + port prices), a pool's summed over its types "
              "(docs/job-file.md, Cost and energy)"),
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

/* The level names probe.levels allows: intra_node, inter_node (the probe's own names) and the
 * innermost and outermost level names of the probe systems (the levels a probe measures). */
static bool probe_level_allowed(const cdse_job *job, const char *name, char *allowed, size_t size)
{
    bool found = strcmp(name, "intra_node") == 0 || strcmp(name, "inter_node") == 0;
    size_t len = (size_t)snprintf(allowed, size, "\"intra_node\", \"inter_node\"");
    for (int s = 0; s < CDSE_MAX_SYSTEMS && len < size; s++) {
        const cdse_system *sys = &job->system[s];
        if (!(job->probe_systems & (1u << s)) || sys->n_levels < 1)
            continue;
        int outer = sys->n_levels - 1;
        found = found || strcmp(name, sys->level[0].name) == 0 ||
                (outer > 0 && strcmp(name, sys->level[outer].name) == 0);
        len += (size_t)snprintf(allowed + len, size - len, ", \"%s\" (innermost level of %s)",
                                sys->level[0].name, sys->name);
        if (outer > 0 && len < size)
            len += (size_t)snprintf(allowed + len, size - len, ", \"%s\" (outermost level of %s)",
                                    sys->level[outer].name, sys->name);
    }
    return found;
}

/* probe.levels: after probe.systems (table order), so the names are checked against the probe
 * systems' levels. */
static int parse_probe_levels(parse_ctx *ctx, const config_setting_t *setting, void *target,
                              const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    cdse_probe_take *take = &job->probe_take;
    char allowed[CDSE_ALLOWED_MAX];
    probe_level_allowed(job, "", allowed, sizeof allowed);
    if (!config_setting_is_array(setting) && !config_setting_is_list(setting))
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "expected a list of names");
    int n = config_setting_length(setting);
    if (n > CDSE_PROBE_LEVELS_MAX)
        return cdse__key_fail(ctx, setting, NULL, setting, allowed, "more than %d names",
                              CDSE_PROBE_LEVELS_MAX);
    take->given = true;
    take->n_levels = 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *elem = config_setting_get_elem(setting, i);
        if (config_setting_type(elem) != CONFIG_TYPE_STRING)
            return cdse__key_fail(ctx, setting, NULL, elem, allowed, "expected a level name");
        const char *name = config_setting_get_string(elem);
        if (!probe_level_allowed(job, name, allowed, sizeof allowed))
            return cdse__key_fail(ctx, setting, NULL, elem, allowed,
                                  "'%s' is not a level a probe measures on the probe systems",
                                  name);
        for (int j = 0; j < take->n_levels; j++)
            if (strcmp(take->level[j], name) == 0)
                return cdse__key_fail(ctx, setting, NULL, elem, allowed, "'%s' appears twice",
                                      name);
        snprintf(take->level[take->n_levels++], CDSE_NAME_MAX, "%s", name);
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
    {.name = "levels",
     .type = KEY_CUSTOM,
     .parse = parse_probe_levels,
     .type_text = "string list",
     .def_text = "outermost, if measured",
     .help = "the levels of the probe systems that take the fitted values: names of their "
             "innermost or outermost levels, or intra_node / inter_node. By default only the "
             "outermost, like `clusterdse fit --base`: a one-node probe (MPI over shared memory, "
             "not NVLink) changes no level"},
    {.name = "force",
     .type = KEY_BOOL,
     .offset = offsetof(cdse_job, probe_take.force),
     .def_text = "false",
     .help = "take a level whose fitted bandwidth is more than 3x away from the system's "
             "(either way); without it the sweep stops with an error naming both"},
};
static const key_table probe_table = {"probe", probe_keys,
                                      (int)(sizeof probe_keys / sizeof probe_keys[0])};

static int parse_probe(parse_ctx *ctx, const config_setting_t *setting, void *target,
                       const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    /* The default systems first: probe.levels is checked against them (probe.systems, when
     * given, replaces them before probe.levels is read). */
    for (int s = 0; s < ctx->axis_systems; s++)
        if (job->system[s].pool.n_types == 0)
            job->probe_systems |= 1u << s;
    return cdse__parse_group(ctx, setting, &probe_table, job, true);
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
    fprintf(out, " ];\n");
    if (job->probe_take.given) {
        fprintf(out, "%*slevels = [", indent + 2, "");
        for (int i = 0; i < job->probe_take.n_levels; i++) {
            fputs(i ? ", " : " ", out);
            cdse__print_string(out, job->probe_take.level[i]);
        }
        fprintf(out, " ];\n");
    }
    fprintf(out, "%*sforce = %s;\n%*s};\n", indent + 2, "",
            job->probe_take.force ? "true" : "false", indent, "");
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
     .parse = job__parse_models,
     .print = print_models,
     .required = true,
     .type_text = "list of names or groups",
     .def_text = "required",
     .help = "models: names from jobs/models/, paths, or inline groups (keys: models[])"},
    {.name = "systems",
     .type = KEY_CUSTOM,
     .parse = job__parse_systems,
     .print = print_systems,
     .required = true,
     .type_text = "list of names or groups",
     .def_text = "required",
     .help = "systems: names from calibration/systems/, paths, or inline groups (keys: "
             "systems[])"},
    {.name = "stacks",
     .type = KEY_CUSTOM,
     .parse = job__parse_stacks,
     .print = print_stacks,
     .type_text = "list of names",
     .def_text = "each system's stack",
     .help = "software stacks (a sweep axis): names from calibration/stacks/ or paths; without "
             "it each system runs its `stack`, else current Megatron-Core"},
    {.name = "space",
     .type = KEY_CUSTOM,
     .parse = job__parse_space,
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
    /* Jobs without a budget keep their hash. */
    if (job->objective.budget > 0.0)
        h = fnv1a(h, &job->objective.budget, sizeof job->objective.budget);
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

void job__print_seq_histogram(FILE *out, const void *target, const key_spec *key, int indent)
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
        cdse__print_table_values(out, &job__model_table, &job->model[m], indent + 4);
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
            if (system->partition != CDSE_PARTITION_BALANCED)
                fprintf(out, "%*spartition = \"%s\";\n", indent + 4, "",
                        job__partition_names[system->partition]);
            if (system->tp_per_type)
                fprintf(out, "%*stp_per_type = true;\n", indent + 4, "");
            if (system->link_bandwidth_gbs > 0.0)
                fprintf(out, "%*slink_bandwidth = %.17g;\n%*slink_latency = %.17g;\n", indent + 4,
                        "", system->link_bandwidth_gbs, indent + 4, "", system->link_latency_us);
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
    for (int i = 0; i < job__space_table.n; i++) {
        const key_spec *k = &job__space_table.keys[i];
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
    static const key_table *const before[] = {&job_table, &job__space_table, &objective_table,
                                              &job__model_table};
    static const key_table *const after[] = {&job__pool_table, &job__member_table, &probe_table};
    fprintf(out, "# %-42s %-30s %-24s %s\n", "key", "type", "default", "meaning");
    for (size_t t = 0; t < sizeof before / sizeof before[0]; t++)
        cdse__print_key_table(out, before[t]);
    cdse__system_print_keys(out); /* systems[], peak_tflops, network[], collectives, tier */
    for (size_t t = 0; t < sizeof after / sizeof after[0]; t++)
        cdse__print_key_table(out, after[t]);
    cdse_stack_print_keys(out); /* the files of calibration/stacks/ */
}
