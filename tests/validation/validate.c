/* Validation against published training measurements (tests/validation/published.csv).
 *
 * Every row of the file belongs to a group below; a row whose group is unknown, whose model or
 * system cannot be loaded, or whose configuration the model rejects (`oom`, not divisible) is a
 * failure, not a skip. Each row is evaluated on the system and with the software stack
 * (calibration/stacks/NAME.cfg) that ran it: its group's, except where the row's own cells name
 * another (DeepSpeed in `optimizer_sharding`: ZERO3_STACK; a figure whose `notes` say it links to
 * MLPerf: MLPERF_STACK, NVIDIA's MLPerf recipe as NeMo ran it). The report prints one table per
 * group, then the mean and worst |error| per group and per stack against the issues' targets (issue
 * 10: each row within 10 %, each group's mean within 5 %, Korthikanti Table 5 mean 3 %, its rows
 * and Figure 1 5 %; issue 11: each MoE row within 15 %, Mixtral 10 %). The exit status enforces:
 *   - every row evaluable and feasible (no configuration that ran is `oom`; Figure 1 shows
 *     configurations that did not fit in 80 GB, e.g. 22B without recomputation: its rows compare
 *     memory only);
 *   - the targets for every group not listed in tests/validation/known_gaps.txt;
 *   - a ratchet for the groups listed there (those that do not meet their targets yet, with the
 *     mean and worst |error| they had and the issue): such a group fails when it gets worse than
 *     listed (by more than GAP_TOLERANCE_PP percentage points) and when it meets its targets while
 *     still listed, so the file only shrinks as the model improves.
 * Settings a publication's table does not give but its authors' scripts do (the micro-batch,
 * interleaving and DDP implementation of Narayanan et al. 2021 Table 1) come from those scripts
 * (`artifacts` below). Settings nobody gives: the micro-batch size (1, 2, 4 or 8) and recomputation
 * (among those the stack offers) are the ones the model finds fastest and feasible, since the
 * authors tuned them; interleaving and the global batch come from a row of the same source,
 * model and layout that gives them, else interleaving is off (vpp 1; it is opt-in in every stack,
 * --num-layers-per-virtual-pipeline-stage) and the batch is one sequence per GPU; a vpp cell
 * "open" (interleaving stated, its depth not) tries every depth that splits the stage's layers
 * evenly (Megatron-LM accepts no other), as do the pp > 1 rows of a group whose source states
 * pipeline-parallel overlap (group_spec.pp_overlap_stated). A row whose
 * `notes` state a recipe's recompute_num_layers N (Megatron-Bridge: full, block) runs full
 * recomputation of N layers per chunk (recompute_layers); one that states
 * cpu_offloading_num_layers N offloads the activations of N layers per chunk (offload_layers)
 * without recomputation, which Megatron-Core does not combine with CPU offloading.
 * Exit 0 when all hold, 1 otherwise, 2 on bad input (also a malformed known_gaps.txt).
 *
 * Usage: validate PUBLISHED.csv DATA_DIR [-v]   (DATA_DIR holds calibration/, jobs/models and
 * tests/validation/known_gaps.txt;
 * -v prints the memory and time breakdown of each evaluated configuration) */
#include "validate.h"

/* Targets: issue 10 (each row 10 %, each group's mean 5 %, Korthikanti Table 5 3 %, its memory
 * 5 %), issue 11 (each MoE row 15 %, Mixtral 10 %; a group of MoE rows is held to 15 % on its
 * mean too, the issue giving no separate mean for them). */
static const group_spec groups[] = {
    {"Korthikanti22-T5-end-to-end", "a100-80g-dgx", "megatron-lm-2022", K_ITER_TIME, R_MEGATRON,
     0.05, 0.03, false},
    {"Korthikanti22-Fig1-memory", "a100-80g-dgx", "megatron-lm-2022", K_MEMORY, R_MEGATRON, 0.05,
     0.05, false},
    {"Korthikanti22-T4-per-layer-22B", "a100-80g-dgx", "megatron-lm-2022", K_LAYER, R_MEGATRON,
     0.10, 0.05, false},
    {"Korthikanti22-abstract-530B-2240GPU", "a100-80g-dgx", "megatron-lm-2022", K_MFU, R_MEGATRON,
     0.10, 0.05, false},
    {"Narayanan21-T1-weak-scaling", "a100-80g-dgx", "megatron-lm-2021", K_EQ3_TFLOPS, R_MEGATRON,
     0.10, 0.05, false},
    {"Narayanan21-T2-ZeRO3-vs-PTDP", "a100-80g-dgx", "megatron-lm-2021", K_EQ3_TFLOPS, R_MEGATRON,
     0.10, 0.05, false},
    {"NeMo-24.07-DGX-H100-FP8", "h100-sxm-dgx", "megatron-core-2024", K_MODEL_TFLOPS, R_MEGATRON,
     0.10, 0.05, false},
    {"MegatronCore-MoE-README", "h100-sxm-dgx", "megatron-lm-2024", K_MODEL_TFLOPS, R_MEGATRON,
     0.10, 0.10, false},
    /* The README: "pipeline-parallel communication (enabled by default)" overlapped. */
    {"MegatronLM-README-H100-weak-scaling-2024", "h100-sxm-dgx", "megatron-lm-2024", K_MODEL_TFLOPS,
     R_MEGATRON, 0.10, 0.05, true},
    {"MegatronBridge-25.09-DGX-H100", "h100-sxm-dgx", "megatron-core-2025", K_TOKENS, R_BRIDGE_MOE,
     0.15, 0.15, false},
    {"MegatronBridge-25.11-DGX-H100", "h100-sxm-dgx", "megatron-core-2025", K_TOKENS, R_BRIDGE_MOE,
     0.15, 0.15, false},
    {"MegatronBridge-25.11-DGX-GB200", "gb200-nvl72", "megatron-core-2025", K_TOKENS, R_BRIDGE_MOE,
     0.15, 0.15, false},
    /* Issue 32: each group's mean within 8 % and each run's peak memory within 10 %; no target is
     * set for a single throughput row, which is held to 25 % (the long-context rows: see
     * tests/validation/README.md). */
    {"TorchTitan-2412-GrandTeton-H100", "grandteton-h100-96g", "torchtitan-2025", K_TOKENS,
     R_MEGATRON, 0.25, 0.08, false},
    {"TorchTitan-2412-GrandTeton-H100-memory", "grandteton-h100-96g", "torchtitan-2025",
     K_PEAK_MEMORY, R_MEGATRON, 0.10, 0.10, false},
};
#define N_GROUPS (int)(sizeof groups / sizeof groups[0])

static void tally_add(tally *t, double err)
{
    if (fabs(err) > t->worst)
        t->worst = fabs(err);
    t->sum += fabs(err);
    t->n++;
}

static double tally_mean(const tally *t)
{
    return t->n ? t->sum / t->n : 0.0;
}

/* ---- Error bands (validate --bands): residuals of the predicted iteration time ---- */

/* One end-to-end row (iteration time or a throughput: not the memory or per-layer rows): its
 * stack, its GPU generation (cdse_gpu_generation) and x = ln(measured time / predicted time). */
typedef struct residual {
    char stack[CDSE_NAME_MAX];
    char generation[16];
    char id[40];
    double x;
} residual;
#define MAX_RESIDUALS 256
static residual residuals[MAX_RESIDUALS];
static int n_residuals;

void add_residual(const char *stack, const cdse_system *sys, const char *id, double time_ratio)
{
    if (n_residuals == MAX_RESIDUALS || !(time_ratio > 0.0))
        return;
    residual *r = &residuals[n_residuals++];
    snprintf(r->stack, sizeof r->stack, "%s", stack);
    snprintf(r->generation, sizeof r->generation, "%s", cdse_gpu_generation(sys->gpu));
    snprintf(r->id, sizeof r->id, "%s", id);
    r->x = log(time_ratio);
}

static tally *stack_tally(ctx *c, const char *name)
{
    for (int i = 0; i < c->n_stacks; i++)
        if (strcmp(c->stack[i].name, name) == 0)
            return &c->stack[i];
    c->stack[c->n_stacks] = (tally){.name = name};
    return &c->stack[c->n_stacks++];
}

void record(ctx *c, int g, const char *stack, const char *id, const char *quantity, double measured,
            double predicted)
{
    double err = (predicted - measured) / measured;
    printf("  %-18s %-32s %12.4g %12.4g %+8.2f%%\n", id, quantity, measured, predicted, 100 * err);
    tally_add(&c->group[g], err);
    tally_add(stack_tally(c, stack), err);
}

void record_failure(ctx *c, int g, const char *stack, const char *id, const char *why)
{
    printf("  %-18s FAILED: %s\n", id, why);
    c->group[g].failed++;
    stack_tally(c, stack)->failed++;
}

static int group_of(const char *name)
{
    for (int g = 0; g < N_GROUPS; g++)
        if (strcmp(groups[g].group, name) == 0)
            return g;
    return -1;
}

/* Known gaps (tests/validation/known_gaps.txt): groups that do not yet meet the issue's targets,
 * each with the mean and worst |error| (percent) it had when listed. Such a group must not get
 * worse (beyond GAP_TOLERANCE_PP, for floating point only) and must leave the file once it meets
 * its targets; a group not listed must meet them. */
#define GAP_TOLERANCE_PP 0.05

typedef struct gap {
    bool listed;
    double mean_pct, worst_pct;
    int issue;
} gap;

/* Lines "GROUP MEAN_PCT WORST_PCT ISSUE # why"; '#' starts a comment. Returns 0, or -1 (printed,
 * naming file:line) when a line is malformed or names no known group. */
static int read_gaps(const char *path, gap gaps[N_GROUPS])
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    char line[MAX_LINE], name[256];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            fprintf(stderr, "%s:%d: line longer than %d characters\n", path, lineno, MAX_LINE - 2);
            rc = -1;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = '\0';
        double mean, worst;
        int issue, n = sscanf(line, "%255s %lf %lf %d", name, &mean, &worst, &issue);
        if (n <= 0)
            continue;
        int g = n == 4 ? group_of(name) : -1;
        if (g < 0 || gaps[g].listed) {
            fprintf(stderr,
                    "%s:%d: expected 'GROUP MEAN_PCT WORST_PCT ISSUE' naming a group of validate "
                    "once\n",
                    path, lineno);
            rc = -1;
            continue;
        }
        gaps[g] = (gap){true, mean, worst, issue};
    }
    fclose(f);
    return rc;
}

/* The verdict on one group: PASS (meets its targets, not listed), GAP (listed, not worse), or a
 * failure. */
static const char *verdict(const group_spec *spec, const tally *t, const gap *k, bool *ok)
{
    double mean = tally_mean(t);
    bool evaluable = t->n > 0 && t->failed == 0;
    bool meets = evaluable && t->worst <= spec->each && mean <= spec->mean;
    const char *v = "PASS";
    if (!evaluable)
        v = "FAIL (rows not evaluable or infeasible)";
    else if (meets && k->listed)
        v = "FAIL (meets its targets: remove it from known_gaps.txt)";
    else if (!meets && !k->listed)
        v = "FAIL";
    else if (k->listed && (100 * mean > k->mean_pct + GAP_TOLERANCE_PP ||
                           100 * t->worst > k->worst_pct + GAP_TOLERANCE_PP))
        v = "FAIL (worse than known_gaps.txt)";
    else if (k->listed)
        v = "GAP (known, not worse)";
    *ok = *ok && strncmp(v, "FAIL", 4) != 0;
    return v;
}

static bool summary(const ctx *c, const gap gaps[N_GROUPS])
{
    bool ok = c->bad_rows == 0;
    printf("\n# %-42s %3s %6s %9s %9s  %-16s %-15s %s\n", "group", "n", "failed", "mean|err|",
           "worst", "target each/mean", "known gap", "result");
    for (int g = 0; g < N_GROUPS; g++) {
        const tally *t = &c->group[g];
        char known[32] = "-";
        if (gaps[g].listed)
            snprintf(known, sizeof known, "%.2f/%.2f #%d", gaps[g].mean_pct, gaps[g].worst_pct,
                     gaps[g].issue);
        const char *v = verdict(&groups[g], t, &gaps[g], &ok);
        printf("# %-42s %3d %6d %8.2f%% %8.2f%%  %5.0f%% / %4.0f%%    %-15s %s\n", groups[g].group,
               t->n, t->failed, 100 * tally_mean(t), 100 * t->worst, 100 * groups[g].each,
               100 * groups[g].mean, known, v);
    }
    printf("\n# %-42s %3s %6s %9s %9s\n", "stack", "n", "failed", "mean|err|", "worst");
    for (int k = 0; k < c->n_stacks; k++) {
        const tally *t = &c->stack[k];
        printf("# %-42s %3d %6d %8.2f%% %8.2f%%\n", t->name, t->n, t->failed, 100 * tally_mean(t),
               100 * t->worst);
    }
    return ok;
}

/* The held-out report (tests/validation/holdout.csv, described in tests/validation/README.md):
 * published runs that are not in published.csv. Each row names in its own columns the system
 * (`system`), the software stack (`stack`) and the quantity compared (`compare`); its `group`
 * is the file's own. The errors are a report, not a gate: the exit status is 1 only when a row
 * cannot be evaluated or is infeasible (a configuration that ran in public must fit in the
 * model), 2 on bad input. */
static int compare_kind(const char *name)
{
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {{"iter_time", K_ITER_TIME},
                 {"eq3_tflops", K_EQ3_TFLOPS},
                 {"model_tflops", K_MODEL_TFLOPS},
                 {"mfu", K_MFU},
                 {"tokens", K_TOKENS},
                 {"peak_memory", K_PEAK_MEMORY}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(name, kinds[k].name) == 0)
            return kinds[k].kind;
    return -1;
}

/* The held-out file's groups, in the order they first appear; -1 (printed, naming the file's
 * line) on an unknown `compare` in any row, too many groups, or a row whose compare or system
 * differs from its group's first row (a group is compared on one quantity, on one system; its
 * rows may name different stacks). */
static int holdout_groups(const char *path, const table *t, group_spec *specs)
{
    int n = 0;
    for (int i = 0; i < t->rows; i++) {
        const char *name = get(t, i, "group");
        int how = compare_kind(get(t, i, "compare"));
        int g = 0;
        while (g < n && strcmp(specs[g].group, name) != 0)
            g++;
        if (how < 0 || (g == n && n == MAX_GROUPS)) {
            fprintf(stderr,
                    "%s:%d: compare '%s': expected iter_time, eq3_tflops, model_tflops, mfu, "
                    "tokens or peak_memory (and at most %d groups)\n",
                    path, i + 2, get(t, i, "compare"), MAX_GROUPS);
            return -1;
        }
        if (g < n && (how != specs[g].kind || strcmp(specs[g].system, get(t, i, "system")) != 0)) {
            fprintf(stderr,
                    "%s:%d: compare '%s', system '%s': every row of group %s must have the "
                    "compare and system of its first row (system '%s')\n",
                    path, i + 2, get(t, i, "compare"), get(t, i, "system"), name, specs[g].system);
            return -1;
        }
        if (g == n)
            specs[n++] = (group_spec){
                name, get(t, i, "system"), get(t, i, "stack"), how, R_MEGATRON, 0.0, 0.0, false};
    }
    return n;
}

/* Systems and stacks of the held-out rows, each loaded once (a tally keeps its stack's name). */
typedef struct loaded {
    cdse_system systems[MAX_STACKS];
    cdse_stack stacks[MAX_STACKS];
    int n_systems, n_stacks;
} loaded;

static const cdse_system *loaded_system(const char *data, loaded *l, const char *name)
{
    for (int k = 0; k < l->n_systems; k++)
        if (strcmp(l->systems[k].name, name) == 0)
            return &l->systems[k];
    if (l->n_systems == MAX_STACKS || load_system(data, name, &l->systems[l->n_systems]) != 0)
        return NULL;
    return &l->systems[l->n_systems++];
}

static const cdse_stack *loaded_stack(const char *data, loaded *l, const char *name)
{
    for (int k = 0; k < l->n_stacks; k++)
        if (strcmp(l->stacks[k].name, name) == 0)
            return &l->stacks[k];
    if (l->n_stacks == MAX_STACKS || load_stack(data, name, &l->stacks[l->n_stacks]) != 0)
        return NULL;
    return &l->stacks[l->n_stacks++];
}

/* The stack of a held-out group's rows, or "mixed". */
static const char *group_stacks(const ctx *c, int g)
{
    for (int i = 0; i < c->t->rows; i++)
        if (strcmp(get(c->t, i, "group"), c->specs[g].group) == 0 &&
            strcmp(get(c->t, i, "stack"), c->specs[g].stack) != 0)
            return "mixed";
    return c->specs[g].stack;
}

static bool holdout_summary(const ctx *c, int n_groups)
{
    bool ok = true;
    printf("\n# %-42s %3s %6s %9s %9s  %s\n", "held-out group", "n", "failed", "mean|err|", "worst",
           "stack");
    for (int g = 0; g < n_groups; g++) {
        const tally *t = &c->group[g];
        ok = ok && t->failed == 0 && t->n > 0;
        printf("# %-42s %3d %6d %8.2f%% %8.2f%%  %s\n", c->specs[g].group, t->n, t->failed,
               100 * tally_mean(t), 100 * t->worst, group_stacks(c, g));
    }
    printf("\n# %-42s %3s %6s %9s %9s\n", "stack", "n", "failed", "mean|err|", "worst");
    for (int k = 0; k < c->n_stacks; k++) {
        const tally *t = &c->stack[k];
        printf("# %-42s %3d %6d %8.2f%% %8.2f%%\n", t->name, t->n, t->failed, 100 * tally_mean(t),
               100 * t->worst);
    }
    printf("\n# %s\n", ok ? "every held-out run evaluable and feasible"
                          : "FAIL: held-out runs not evaluable or infeasible (see FAILED above)");
    return ok;
}

static int holdout(const char *path, const char *data, bool verbose)
{
    static table t;
    static group_spec specs[MAX_GROUPS];
    static loaded l;
    if (read_table(path, &t) != 0)
        return 2;
    int n_groups = holdout_groups(path, &t, specs);
    if (n_groups < 0) {
        free(t.data);
        return 2;
    }
    ctx c = {.data = data, .t = &t, .specs = specs, .verbose = verbose};
    printf("# %-18s %-32s %12s %12s %9s\n", "id", "quantity", "measured", "predicted", "error");
    for (int g = 0; g < n_groups; g++) {
        c.group[g].name = specs[g].group;
        printf("\n## %s (held out)\n", specs[g].group);
        for (int i = 0; i < t.rows; i++) {
            if (strcmp(get(&t, i, "group"), specs[g].group) != 0)
                continue;
            const cdse_system *sys = loaded_system(data, &l, get(&t, i, "system"));
            const cdse_stack *stack = loaded_stack(data, &l, get(&t, i, "stack"));
            if (sys == NULL || stack == NULL) {
                record_failure(&c, g, get(&t, i, "stack"), get(&t, i, "id"),
                               "system or stack not loadable (calibration/)");
                continue;
            }
            check_row(&c, g, i, sys, stack);
        }
    }
    bool ok = holdout_summary(&c, n_groups);
    free(t.data);
    return ok ? 0 : 1;
}

/* The band of a group of residuals x (ln of measured over predicted time), as a factor on the
 * predicted time: [exp(m - w), exp(m + w)] with nominal two-sided coverage BAND_COVERAGE for a
 * new run of the group. A Student-t prediction interval whose centre and spread are shrunk
 * towards the pooled residuals by BAND_PRIOR_ROWS pseudo-rows:
 *   m  = sum x / (n + k)                       (towards an unbiased model),
 *   s2 = (sum (x - mean x)^2 + k S2) / (n - 1 + k),  S2 = mean of x^2 over every row,
 *   w  = t(BAND_COVERAGE quantile, n - 1 + k degrees) s sqrt(1 + 1 / (n + k)).
 * A group with few rows gets about the pooled width (n = 1: s2 = S2), however close its rows
 * happen to lie; one with many rows its own spread. A stack and generation without rows (n = 0)
 * get m = 0, s2 = S2 with k - 1 degrees: the row "*" of the file. */
#define BAND_COVERAGE   0.80
#define BAND_PRIOR_ROWS 4

/* One-sided 0.90 quantiles of Student's t (two-sided 80 %), by degrees of freedom 1..30, then
 * 40, 60, 120 and the normal's 1.2816 (any table of t, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
 * Between tabulated degrees the lower one's (larger) value is taken. */
static double t_quantile_90(int df)
{
    static const double t[31] = {0,     3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415,
                                 1.397, 1.383, 1.372, 1.363, 1.356, 1.350, 1.345, 1.341,
                                 1.337, 1.333, 1.330, 1.328, 1.325, 1.323, 1.321, 1.319,
                                 1.318, 1.316, 1.315, 1.314, 1.313, 1.311, 1.310};
    if (df < 1)
        df = 1;
    if (df <= 30)
        return t[df];
    return df < 40 ? 1.310 : df < 60 ? 1.303 : df < 120 ? 1.296 : df < 1000000 ? 1.289 : 1.2816;
}

typedef struct band {
    char stack[CDSE_NAME_MAX];
    char generation[16];
    int n;
    double mean, low, high; /* mean x; factors on the predicted time */
} band;

/* The band of the residuals of (stack, generation) ("*": none of them), leaving out row `skip`
 * (-1: none), with S2 over the other rows. */
static band band_of(const char *stack, const char *generation, int skip)
{
    double s2_all = 0.0;
    int n_all = 0;
    for (int i = 0; i < n_residuals; i++)
        if (i != skip) {
            s2_all += residuals[i].x * residuals[i].x;
            n_all++;
        }
    s2_all /= n_all > 0 ? n_all : 1;
    band b = {.n = 0};
    snprintf(b.stack, sizeof b.stack, "%s", stack);
    snprintf(b.generation, sizeof b.generation, "%s", generation);
    double sum = 0.0, sq = 0.0;
    for (int i = 0; i < n_residuals; i++)
        if (i != skip && strcmp(residuals[i].stack, stack) == 0 &&
            strcmp(residuals[i].generation, generation) == 0) {
            sum += residuals[i].x;
            b.n++;
        }
    b.mean = b.n > 0 ? sum / b.n : 0.0;
    for (int i = 0; i < n_residuals; i++)
        if (i != skip && strcmp(residuals[i].stack, stack) == 0 &&
            strcmp(residuals[i].generation, generation) == 0)
            sq += (residuals[i].x - b.mean) * (residuals[i].x - b.mean);
    double k = BAND_PRIOR_ROWS;
    double m = sum / (b.n + k);
    double s = sqrt((sq + k * s2_all) / (b.n - 1 + k));
    double w = t_quantile_90(b.n - 1 + BAND_PRIOR_ROWS) * s * sqrt(1.0 + 1.0 / (b.n + k));
    b.low = exp(m - w);
    b.high = exp(m + w);
    return b;
}

static bool inside(const band *b, double x)
{
    return exp(x) >= b->low && exp(x) <= b->high;
}

/* Writes the band table (calibration/bands.cfg) and prints the coverage over the rows: of the
 * bands as written (in-sample) and of each row's band computed without it (leave-one-out). */
static int write_bands(const char *out_path, const char *published, const char *holdout_path)
{
    static band bands[MAX_RESIDUALS];
    int n = 0;
    for (int i = 0; i < n_residuals; i++) {
        int b = 0;
        while (b < n && !(strcmp(bands[b].stack, residuals[i].stack) == 0 &&
                          strcmp(bands[b].generation, residuals[i].generation) == 0))
            b++;
        if (b == n)
            bands[n++] = band_of(residuals[i].stack, residuals[i].generation, -1);
    }
    band pooled = band_of("*", "*", -1);
    int in = 0, in_loo = 0;
    for (int i = 0; i < n_residuals; i++) {
        band own = band_of(residuals[i].stack, residuals[i].generation, -1);
        band loo = band_of(residuals[i].stack, residuals[i].generation, i);
        in += inside(&own, residuals[i].x);
        in_loo += inside(&loo, residuals[i].x);
        if (!inside(&own, residuals[i].x))
            fprintf(stderr,
                    "validate --bands: %s (%s, %s) outside its band: measured / predicted "
                    "time %.3f, band %.3f-%.3f\n",
                    residuals[i].id, residuals[i].stack, residuals[i].generation,
                    exp(residuals[i].x), own.low, own.high);
    }
    char tmp[CDSE_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "validate --bands: cannot write %s\n", tmp);
        return 2;
    }
    fprintf(f,
            "# Error bands of the predicted iteration time, per software stack and GPU "
            "generation. Generated, do not edit:\n"
            "#   build/tests/validate --bands calibration/bands.cfg %s %s .\n"
            "# (tests/sh/bands_current.sh regenerates it and compares.) From the end-to-end "
            "rows of both files\n"
            "# (iteration times and throughputs; not the memory or per-layer rows): x = ln("
            "measured / predicted time).\n"
            "# low, high: factors on the predicted time (and days, GPU-hours, cost), a "
            "Student-t prediction interval of\n"
            "# nominal coverage %.2f with centre and spread shrunk towards the pooled rows by "
            "%d pseudo-rows (docs/eval.md,\n"
            "# Error bands); \"*\": a stack and generation without rows. Coverage over the "
            "%d rows: %d inside (%.3f),\n"
            "# %d inside their band computed without them (leave-one-out, %.3f).\n",
            published, holdout_path, BAND_COVERAGE, BAND_PRIOR_ROWS, n_residuals, in,
            (double)in / n_residuals, in_loo, (double)in_loo / n_residuals);
    fprintf(f, "coverage = %.2f;\nprior_rows = %d;\nbands = (\n", BAND_COVERAGE, BAND_PRIOR_ROWS);
    for (int b = 0; b <= n; b++) {
        const band *x = b < n ? &bands[b] : &pooled;
        fprintf(f,
                "  { stack = \"%s\"; generation = \"%s\"; rows = %d; mean = %+.4f; low = %.4f; "
                "high = %.4f; }%s\n",
                x->stack, x->generation, x->n, x->mean, x->low, x->high, b < n ? "," : "");
    }
    fprintf(f, ");\n");
    if (fclose(f) != 0 || rename(tmp, out_path) != 0) {
        fprintf(stderr, "validate --bands: cannot write %s\n", out_path);
        remove(tmp);
        return 2;
    }
    printf("# bands: %d groups and \"*\" written to %s\n"
           "# coverage over %d validation rows: %d inside their band (%.3f, nominal %.2f); "
           "leave-one-out %d (%.3f)\n",
           n, out_path, n_residuals, in, (double)in / n_residuals, BAND_COVERAGE, in_loo,
           (double)in_loo / n_residuals);
    return in >= BAND_COVERAGE * n_residuals ? 0 : 1;
}

static int published_main(const char *path, const char *data, bool verbose);

int main(int argc, char **argv)
{
    bool verbose = argc == 4 && strcmp(argv[3], "-v") == 0;
    if (argc == 4 && strcmp(argv[1], "--holdout") == 0)
        return holdout(argv[2], argv[3], false);
    if (argc == 5 && strcmp(argv[1], "--holdout") == 0 && strcmp(argv[4], "-v") == 0)
        return holdout(argv[2], argv[3], true);
    if (argc == 6 && strcmp(argv[1], "--bands") == 0) {
        /* The tables' reports go to /dev/null (file descriptor 1 kept aside and restored);
         * only the residuals are kept. */
        fflush(stdout);
        int saved = dup(1), null = open("/dev/null", O_WRONLY);
        if (saved < 0 || null < 0 || dup2(null, 1) < 0) {
            fprintf(stderr, "validate --bands: cannot redirect the report\n");
            return 2;
        }
        close(null);
        int rc = published_main(argv[3], argv[5], false);
        if (rc == 0)
            rc = holdout(argv[4], argv[5], false);
        fflush(stdout);
        dup2(saved, 1);
        close(saved);
        if (rc != 0) {
            fprintf(stderr, "validate --bands: the validation itself fails (exit %d)\n", rc);
            return rc;
        }
        return write_bands(argv[2], argv[3], argv[4]);
    }
    if (argc != 3 && !verbose) {
        fprintf(stderr, "usage: validate PUBLISHED.csv DATA_DIR [-v]\n"
                        "       validate --holdout HOLDOUT.csv DATA_DIR [-v]\n"
                        "       validate --bands OUT.cfg PUBLISHED.csv HOLDOUT.csv DATA_DIR\n");
        return 2;
    }
    return published_main(argv[1], argv[2], verbose);
}

static int published_main(const char *path, const char *data, bool verbose)
{
    table t;
    if (read_table(path, &t) != 0)
        return 2;
    ctx c = {.data = data, .t = &t, .specs = groups, .verbose = verbose};
    static cdse_system systems[N_GROUPS];
    static cdse_stack stacks[N_GROUPS], zero3, mlperf;
    if (load_stack(c.data, ZERO3_STACK, &zero3) != 0 ||
        load_stack(c.data, MLPERF_STACK, &mlperf) != 0)
        return 2;
    for (int g = 0; g < N_GROUPS; g++) {
        c.group[g].name = groups[g].group;
        if (load_system(c.data, groups[g].system, &systems[g]) ||
            load_stack(c.data, groups[g].stack, &stacks[g]))
            return 2;
    }
    printf("# %-18s %-32s %12s %12s %9s\n", "id", "quantity", "measured", "predicted", "error");
    for (int g = 0; g < N_GROUPS; g++) {
        printf("\n## %s (system %s, stack %s)\n", groups[g].group, groups[g].system,
               groups[g].stack);
        for (int i = 0; i < t.rows; i++) {
            if (strcmp(get(&t, i, "group"), groups[g].group) != 0)
                continue;
            const cdse_stack *stack = &stacks[g];
            if (contains(get(&t, i, "optimizer_sharding"), "DeepSpeed"))
                stack = &zero3;
            else if (contains(get(&t, i, "notes"), "links to MLPerf") &&
                     strcmp(groups[g].stack, "megatron-core-2024") == 0)
                stack = &mlperf; /* NeMo's MLPerf recipe of 2024, a variant of that stack */
            check_row(&c, g, i, &systems[g], stack);
        }
    }
    for (int i = 0; i < t.rows; i++)
        if (group_of(get(&t, i, "group")) < 0) {
            printf("%-20s FAILED: group '%s' is not one validate knows\n", get(&t, i, "id"),
                   get(&t, i, "group"));
            c.bad_rows++;
        }
    static gap gaps[N_GROUPS];
    char gaps_path[CDSE_PATH_MAX + 64];
    snprintf(gaps_path, sizeof gaps_path, "%s/tests/validation/known_gaps.txt", c.data);
    if (read_gaps(gaps_path, gaps) != 0) {
        free(t.data);
        return 2;
    }
    bool ok = summary(&c, gaps);
    free(t.data);
    return ok ? 0 : 1;
}
