/* Job files: the `space` keys (one per row of CDSE_AXES, axes.h) and the checks that an axis
 * can ever work with the job's models (job_internal.h). */
#define _XOPEN_SOURCE 700 /* realpath, strdup, strtok_r */
#include "job_internal.h"

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
const key_table job__space_table = {"space", space_keys,
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

/* job->space from the parsed axes `in`: the model, system and hardware axes index the job's
 * lists, the stack axis keeps the top-level `stacks` (-1: each system's default). */
static int space_build(parse_ctx *ctx, const config_setting_t *setting, cdse_job *job,
                       const space_input *in)
{
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
        return cdse__key_fail(ctx, setting, NULL, setting,
                              "a space of fewer than 2^63 configurations", "%s", inner.msg);
    return 0;
}

int job__parse_space(parse_ctx *ctx, const config_setting_t *setting, void *target,
                     const key_spec *key)
{
    (void)key;
    cdse_job *job = target;
    space_input *in = calloc(1, sizeof *in);
    if (in == NULL)
        return CDSE_ENOMEM;
    int rc = cdse__parse_group(ctx, setting, &job__space_table, in, true);
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
    if (rc == 0)
        rc = space_build(ctx, setting, job, in);
    free(in);
    return rc;
}
