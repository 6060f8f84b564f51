/* The validation tool's rows: CSV reading and the evaluation of one row of published.csv (or
 * the held-out file) on its system and stack. Split from validate.c (issue 28). */
#include "validate.h"

static int split_csv(const char *line, row *r)
{
    r->n = 0;
    char *out = r->buf;
    const char *p = line;
    while (*p && *p != '\n' && *p != '\r' && r->n < MAX_COLS) {
        r->field[r->n++] = out;
        if (*p == '"') {
            p++;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')
                    p++;
                *out++ = *p++;
            }
            if (*p == '"')
                p++;
        } else {
            while (*p && *p != ',' && *p != '\n' && *p != '\r')
                *out++ = *p++;
        }
        *out++ = '\0';
        if (*p == ',')
            p++;
        else
            break;
    }
    if (*p == '\0' || *p == '\n' || *p == '\r') {
        /* a trailing comma leaves an empty last field */
        if (p > line && p[-1] == ',' && r->n < MAX_COLS) {
            r->field[r->n++] = out;
            *out++ = '\0';
        }
    }
    return r->n;
}

const char *get(const table *t, int i, const char *col)
{
    for (int c = 0; c < t->header.n; c++)
        if (strcmp(t->header.field[c], col) == 0)
            return c < t->data[i].n ? t->data[i].field[c] : "";
    fprintf(stderr, "validate: no column '%s'\n", col);
    exit(2);
}

int read_table(const char *path, table *t)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char line[MAX_LINE];
    t->rows = 0;
    t->data = calloc(256, sizeof *t->data);
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return -1;
    }
    split_csv(line, &t->header);
    while (t->rows < 256 && fgets(line, sizeof line, f))
        if (split_csv(line, &t->data[t->rows]) > 1)
            t->rows++;
    fclose(f);
    return 0;
}

static int geti(const table *t, int i, const char *col, int fallback)
{
    const char *v = get(t, i, col);
    return *v >= '0' && *v <= '9' ? atoi(v) : fallback;
}

bool contains(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = text; *p; p++)
        if (strncasecmp(p, word, n) == 0)
            return true;
    return false;
}

/* The number after `key` in a free-text cell such as "fwd 7.7 ms; bwd 11.9 ms". */
static double number_after(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? atof(p + strlen(key)) : NAN;
}

/* Whether the word before `p` (in `text`) negates it: "no KEY 5", "not KEY 5". */
static bool negated(const char *text, const char *p)
{
    static const char *const words[] = {"no ", "not "};
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        size_t n = strlen(words[w]);
        if ((size_t)(p - text) >= n && strncmp(p - n, words[w], n) == 0 &&
            (p - n == text || !isalnum((unsigned char)*(p - n - 1))))
            return true;
    }
    return false;
}

/* The count a recipe setting states in `notes` ("recompute_num_layers 5 (helpers.py ...)"): the
 * number after the first "KEY " followed by a digit and not negated ("no KEY 5"), 0 when none is
 * ("... None", or the key only named). */
static int stated_layers(const char *notes, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = strstr(notes, key); p != NULL; p = strstr(p + n, key))
        if (p[n] == ' ' && isdigit((unsigned char)p[n + 1]) && !negated(notes, p))
            return atoi(p + n + 1);
    return 0;
}

/* Lower-case letters and digits only: "Qwen3_30B_a3B" and "qwen3-30b-a3b" compare equal. */
static void squash(const char *in, char *out, size_t size)
{
    size_t n = 0;
    for (; *in && n + 1 < size; in++)
        if (isalnum((unsigned char)*in))
            out[n++] = (char)tolower((unsigned char)*in);
    out[n] = '\0';
}

/* The zoo model (jobs/models/NAME.cfg) whose name matches the published one (without a
 * parenthesized remark). */
static int load_zoo_model(const char *data, const char *published, cdse_model *m)
{
    char dir[CDSE_PATH_MAX], want[CDSE_NAME_MAX], have[CDSE_NAME_MAX], base[CDSE_NAME_MAX];
    snprintf(dir, sizeof dir, "%s/jobs/models", data);
    snprintf(base, sizeof base, "%s", published);
    char *note = strstr(base, " ("); /* "Mixtral 8x7B (dropless)" */
    if (note != NULL)
        *note = '\0';
    squash(base, want, sizeof want);
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    struct dirent *ent;
    int rc = -1;
    while (rc != 0 && (ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len < 5 || strcmp(ent->d_name + len - 4, ".cfg") != 0)
            continue;
        squash(ent->d_name, have, sizeof have);
        have[strlen(have) - 3] = '\0'; /* "cfg" */
        if (strcmp(have, want) != 0)
            continue;
        char path[2 * CDSE_PATH_MAX];
        cdse_diag diag;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        rc = cdse_model_load_file(path, m, &diag);
        if (rc != 0)
            fprintf(stderr, "validate: %s\n", diag.msg);
    }
    closedir(d);
    return rc;
}

/* Routing the notes name (Megatron-Bridge performance summary): "tokendrop" runs its token-drop
 * recipes, capacity factor 1 (--moe-expert-capacity-factor 1.0); "force-balanced" routes every
 * expert rank the average load (--moe-router-force-load-balancing), imbalance 1. Otherwise the
 * zoo model's dropless routing with its default imbalance. */
static void routing_of_row(const table *t, int i, cdse_model *m)
{
    const char *notes = get(t, i, "notes");
    if (contains(notes, "tokendrop"))
        m->capacity_factor = 1.0;
    if (contains(notes, "force-balanced"))
        m->moe_imbalance = 1.0;
}

/* The published size of a GPT row in billions (params_B, else the number in its name: "GPT-7.1B")
 * and how many decimals it is given to; 0 when there is none. */
static double published_size(const table *t, int i, int *decimals)
{
    const char *text = get(t, i, "params_B");
    if (!(*text >= '0' && *text <= '9')) {
        const char *dash = strrchr(get(t, i, "model"), '-');
        text = dash != NULL ? dash + 1 : "";
    }
    char *end;
    double size = strtod(text, &end);
    if (end == text || (*end != 'B' && *end != 'b' && *end != '\0'))
        return 0.0;
    const char *dot = memchr(text, '.', (size_t)(end - text));
    *decimals = dot != NULL ? (int)(end - dot - 1) : 0;
    return size;
}

/* Megatron-LM ties the output layer to the input embedding unless
 * --untie-embeddings-and-output-weights (megatron/training/arguments.py:822 at core_r0.8.0); the
 * published size says which a run used. It is untied when the count with a separate output layer
 * rounds to the published size (at the precision it is given) and the tied count does not: the
 * Megatron-LM README's 2024 table (images/model_table.png @937571cfd4) calls 30 layers of hidden
 * 4096 with a 131,072-token vocabulary "7.1B": 30 x 12 x 4096^2 = 6.04B, plus 0.54B per embedding
 * table and 0.02B of position table, biases and norms, is 6.60B tied and 7.13B untied. The rule
 * also makes the README's 70B and 314B rows untied (68.76B tied, 69.84B untied; 311.47B,
 * 313.62B); at pp > 1 that changes nothing the model reports, as the separate output layer
 * lives on the last stage, whose weights the model counts as the tied copy's either way. */
static bool untied_by_size(const table *t, int i, cdse_model *m)
{
    int decimals = 0;
    double size = published_size(t, i, &decimals);
    if (size <= 0.0)
        return false;
    double unit = pow(10.0, -decimals);
    double tied = cdse_model_params(m) / 1e9;
    m->tied_embeddings = false;
    double untied = cdse_model_params(m) / 1e9;
    m->tied_embeddings = true;
    return fabs(untied - size) <= 0.5 * unit && fabs(tied - size) > 0.5 * unit;
}

/* Rows whose shape the file gives completely (GPT: plain MLP; tied embeddings unless the
 * published size says otherwise) are modelled from their columns; the others (gated MLPs, GQA
 * head sizes, MoE layouts) from the zoo. */
static int model_of_row(const ctx *c, int i, cdse_model *m)
{
    const table *t = c->t;
    const char *name = get(t, i, "model");
    bool complete = geti(t, i, "ffn", 0) > 0 && geti(t, i, "vocab", 0) > 0;
    bool gpt = strncasecmp(name, "GPT", 3) == 0 && geti(t, i, "moe_experts", 0) == 0;
    if (!(gpt && (complete || geti(t, i, "vocab", 0) > 0))) {
        if (load_zoo_model(c->data, name, m) != 0)
            return -1;
        m->seq_len = geti(t, i, "seq_len", m->seq_len);
        routing_of_row(t, i, m);
        return 0;
    }
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->layers = geti(t, i, "layers", 0);
    m->hidden = geti(t, i, "hidden", 0);
    m->heads = geti(t, i, "heads", 0);
    m->kv_heads = geti(t, i, "kv_heads", 0);
    m->ffn = geti(t, i, "ffn", 0);
    m->seq_len = geti(t, i, "seq_len", 0);
    m->vocab = geti(t, i, "vocab", 0);
    m->tied_embeddings = true;
    cdse_model_fill_defaults(m);
    m->tied_embeddings = !untied_by_size(t, i, m);
    return 0;
}

int load_system(const char *data, const char *name, cdse_system *sys)
{
    char path[CDSE_PATH_MAX];
    cdse_diag diag;
    snprintf(path, sizeof path, "%s/calibration/systems/%s.cfg", data, name);
    if (cdse_system_load_file(path, sys, &diag) != 0) {
        fprintf(stderr, "validate: %s\n", diag.msg);
        return -1;
    }
    return 0;
}

int load_stack(const char *data, const char *name, cdse_stack *stack)
{
    char path[CDSE_PATH_MAX];
    cdse_diag diag;
    snprintf(path, sizeof path, "%s/calibration/stacks/%s.cfg", data, name);
    if (cdse_stack_load_file(path, stack, &diag) != 0) {
        fprintf(stderr, "validate: %s\n", diag.msg);
        return -1;
    }
    return 0;
}

/* Another row of the same source, model and model-parallel layout that gives `col`, or -1:
 * the abstract of Korthikanti et al. scales Table 3's 530B run (batch per replica, interleaving)
 * to 2240 GPUs. */
static int sibling_row(const table *t, int i, const char *col)
{
    for (int j = 0; j < t->rows; j++)
        if (j != i && geti(t, j, col, 0) > 0 && geti(t, j, "num_gpus", 0) > 0 &&
            strncmp(get(t, j, "source"), get(t, i, "source"), 20) == 0 &&
            strcmp(get(t, j, "hidden"), get(t, i, "hidden")) == 0 &&
            strcmp(get(t, j, "layers"), get(t, i, "layers")) == 0 &&
            geti(t, j, "tp", 1) == geti(t, i, "tp", 1) &&
            geti(t, j, "pp", 1) == geti(t, i, "pp", 1))
            return j;
    return -1;
}

/* A missing global batch: the sibling row's batch per data-parallel replica, else one sequence
 * per GPU. */
static int global_batch(const table *t, int i, const cdse_strategy *s)
{
    int gbs = geti(t, i, "gbs", 0);
    if (gbs)
        return gbs;
    int j = sibling_row(t, i, "gbs");
    if (j < 0)
        return s->gpus;
    int replicas = geti(t, j, "num_gpus", 0) / (s->tp * s->pp);
    return geti(t, j, "gbs", 0) / replicas * (s->gpus / (s->tp * s->pp));
}

/* Settings a publication's table leaves out but its authors' scripts give, matched by group and
 * hidden size. Narayanan et al. 2021 Table 1: NVIDIA/Megatron-LM examples/sc21/run_table_1.sh
 * (commit de7dc40f883c, Aug 2021, "scripts that were used to produce the results in the
 * [paper]"), all ten rows of the table: --micro-batch-size; --num-layers-per-virtual-pipeline-
 * stage as chunks per stage (76B: 60 layers / pp 4 / 5 = 3; 145.6B: 80 / 8 / 5 = 2; 310B:
 * 96 / 16 / 3 = 2; 530B: 105 / 35 / 1 = 3); --DDP-impl torch up to 18.4B, whose PyTorch
 * DistributedDataParallel all-reduces gradient buckets during the backward pass, where Megatron's
 * `local` DDP (the larger runs, and the megatron-lm-2021 stack) reduces after it. */
typedef struct artifact {
    const char *group;
    int hidden, mbs, vpp;
    bool overlap_grad_reduce; /* --DDP-impl torch */
} artifact;

static const artifact artifacts[] = {
    {"Narayanan21-T1-weak-scaling", 2304, 16, 1, true},  /* 1.7B */
    {"Narayanan21-T1-weak-scaling", 3072, 16, 1, true},  /* 3.6B */
    {"Narayanan21-T1-weak-scaling", 4096, 16, 1, true},  /* 7.5B */
    {"Narayanan21-T1-weak-scaling", 6144, 8, 1, true},   /* 18.4B */
    {"Narayanan21-T1-weak-scaling", 8192, 4, 1, false},  /* 39.1B */
    {"Narayanan21-T1-weak-scaling", 10240, 2, 3, false}, /* 76.1B */
    {"Narayanan21-T1-weak-scaling", 12288, 2, 2, false}, /* 145.6B */
    {"Narayanan21-T1-weak-scaling", 16384, 1, 2, false}, /* 310.1B */
    {"Narayanan21-T1-weak-scaling", 20480, 1, 3, false}, /* 529.6B */
    {"Narayanan21-T1-weak-scaling", 25600, 1, 1, false}, /* 1008.0B */
};

static const artifact *artifact_of_row(const table *t, int i)
{
    for (size_t k = 0; k < sizeof artifacts / sizeof artifacts[0]; k++)
        if (strcmp(get(t, i, "group"), artifacts[k].group) == 0 &&
            geti(t, i, "hidden", 0) == artifacts[k].hidden)
            return &artifacts[k];
    return NULL;
}

/* Choices the row leaves open: tried in order, the fastest feasible wins. */
typedef struct choices {
    int mbs[4], n_mbs;
    int vpp[16], n_vpp;
    int recompute[5], modules[5], n_recompute; /* pairs: CDSE_RECOMPUTE_*, module mask */
} choices;

static void add_recompute(choices *ch, int recompute, int modules)
{
    ch->recompute[ch->n_recompute] = recompute;
    ch->modules[ch->n_recompute++] = modules;
}

/* The recomputation settings of Megatron-Bridge's MoE recipes (see R_BRIDGE_MOE). */
static void bridge_recompute(const cdse_model *m, choices *ch)
{
    int norm_act = CDSE_RECOMPUTE_LAYERNORM | CDSE_RECOMPUTE_MOE_ACT;
    add_recompute(ch, CDSE_RECOMPUTE_NONE, 0);
    add_recompute(ch, CDSE_RECOMPUTE_NONE, norm_act);
    if (m->kv_lora_rank > 0)
        add_recompute(ch, CDSE_RECOMPUTE_NONE, norm_act | CDSE_RECOMPUTE_MLA_UP_PROJ);
    add_recompute(ch, CDSE_RECOMPUTE_NONE, CDSE_RECOMPUTE_MOE);
    add_recompute(ch, CDSE_RECOMPUTE_FULL, 0);
}

static int parse_recompute(const char *rc)
{
    if (contains(rc, "full"))
        return CDSE_RECOMPUTE_FULL;
    if (contains(rc, "selective"))
        return CDSE_RECOMPUTE_SELECTIVE;
    if (contains(rc, "no") || contains(rc, "sequence parallel only"))
        return *rc && !contains(rc, "not stated") ? CDSE_RECOMPUTE_NONE : -1;
    return -1;
}

static void open_choices(const table *t, int i, const group_spec *spec, const cdse_model *m,
                         const cdse_stack *stack, bool stated, choices *ch)
{
    memset(ch, 0, sizeof *ch);
    const artifact *a = artifact_of_row(t, i);
    int mbs = geti(t, i, "mbs", a != NULL ? a->mbs : 0);
    for (int b = 1; b <= 8 && !mbs; b *= 2)
        ch->mbs[ch->n_mbs++] = b;
    if (mbs)
        ch->mbs[ch->n_mbs++] = mbs;
    int sibling = sibling_row(t, i, "vpp");
    int vpp = a != NULL ? a->vpp : sibling >= 0 ? geti(t, sibling, "vpp", 1) : 1;
    bool implied = spec->pp_overlap_stated && geti(t, i, "pp", 1) > 1 && !*get(t, i, "vpp");
    if (strcmp(get(t, i, "vpp"), "open") == 0 || implied) {
        /* Interleaved, depth not published: every depth that splits the stage's layers evenly,
         * up to the array's room (Megatron-LM r0.8 asserts "number of layers per pipeline stage
         * must be divisible number of layers per virtual pipeline stage", megatron/training/
         * arguments.py:266-268 at 937571cfd4), counting the embedding and the loss as a layer
         * each where the stack's split does. */
        int pp = geti(t, i, "pp", 1);
        int units = m->layers + (stack->pipeline_split_embedding ? 2 : 0);
        int per_stage = pp > 0 && units % pp == 0 ? units / pp : 0;
        for (int v = 1; v <= per_stage && ch->n_vpp < (int)(sizeof ch->vpp / sizeof ch->vpp[0]);
             v++)
            if (per_stage % v == 0)
                ch->vpp[ch->n_vpp++] = v;
        if (ch->n_vpp == 0)
            ch->vpp[ch->n_vpp++] = 1;
    } else
        ch->vpp[ch->n_vpp++] = geti(t, i, "vpp", vpp);
    /* Recipe settings the notes state (see the header): block recomputation is full; CPU
     * offloading refuses recomputation (megatron/core/transformer/transformer_config.py:1896-1899
     * at d98e8a64d, "CPU offloading does not work when activation recomputation is enabled"). */
    const char *notes = get(t, i, "notes");
    if (stated && stated_layers(notes, "recompute_num_layers") > 0) {
        add_recompute(ch, CDSE_RECOMPUTE_FULL, 0);
        return;
    }
    if (stated && stated_layers(notes, "cpu_offloading_num_layers") > 0) {
        add_recompute(ch, CDSE_RECOMPUTE_NONE, 0);
        return;
    }
    int rc = parse_recompute(get(t, i, "recompute"));
    if (rc >= 0) {
        add_recompute(ch, rc, 0);
        return;
    }
    if (spec->recipe == R_BRIDGE_MOE) {
        bridge_recompute(m, ch);
        return;
    }
    add_recompute(ch, CDSE_RECOMPUTE_NONE, 0);
    if (stack->selective_recompute)
        add_recompute(ch, CDSE_RECOMPUTE_SELECTIVE, 0);
    add_recompute(ch, CDSE_RECOMPUTE_FULL, 0);
}

static void strategy_of_row(const table *t, int i, const group_spec *spec, const cdse_stack *stack,
                            cdse_strategy *s)
{
    memset(s, 0, sizeof *s);
    s->gpus = geti(t, i, "num_gpus", 1);
    s->tp = geti(t, i, "tp", 1);
    s->pp = geti(t, i, "pp", 1);
    s->cp = geti(t, i, "cp", 1);
    s->ep = geti(t, i, "ep", 1);
    s->etp = spec->recipe == R_BRIDGE_MOE && s->ep > 1 ? 1 : 0; /* 0: as tp */
    s->vpp = 1;
    s->microbatch = 1;
    s->global_batch = global_batch(t, i, s);
    const char *sp = get(t, i, "seq_parallel");
    const char *rc = get(t, i, "recompute");
    if (strcmp(sp, "yes") == 0 || contains(rc, "sequence parallel"))
        s->sequence_parallel = true;
    else if (strcmp(sp, "no") == 0)
        s->sequence_parallel = false;
    else /* not published: the stack's recipes use it with TP */
        s->sequence_parallel = stack->sequence_parallel && s->tp > 1;
    const char *sharding = get(t, i, "optimizer_sharding");
    int dp_cp = s->gpus / (s->tp * s->pp);
    if (contains(sharding, "ZeRO-3"))
        s->zero = 3;
    else if (contains(sharding, "ZeRO-2"))
        s->zero = dp_cp > 1 ? 2 : 0;
    else if (contains(sharding, "ZeRO-1"))
        s->zero = dp_cp > 1 ? 1 : 0;
    else if (contains(sharding, "dist") ||
             (stack->distributed_optimizer && dp_cp > 1 && !contains(sharding, "no")))
        s->zero = dp_cp > 1 ? 1 : 0;
    s->precision = contains(get(t, i, "precision"), "fp8") ? CDSE_FP8 : CDSE_BF16;
    s->flash_attention = stack->fused_attention;
    s->tp_comm_overlap = stack->overlap_tp_comm && s->sequence_parallel;
    s->stack = stack;
    const char *notes = get(t, i, "notes");
    s->recompute_layers = stated_layers(notes, "recompute_num_layers");
    s->offload_layers = stated_layers(notes, "cpu_offloading_num_layers");
    if (s->offload_layers > 0)
        s->offload = CDSE_OFFLOAD_ACTIVATIONS;
}

/* Evaluates the row's configuration; settings the row leaves open are chosen by the model
 * (fastest feasible). Returns the status of the chosen (or, if none fits, the first) one. */
static int evaluate_choices(const choices *open, const cdse_model *m, const cdse_system *sys,
                            cdse_strategy *s, cdse_result *r)
{
    const choices ch = *open;
    cdse_strategy best = *s, trial = *s;
    cdse_result res;
    bool found = false;
    int status = -1;
    for (int a = 0; a < ch.n_mbs; a++)
        for (int b = 0; b < ch.n_vpp; b++)
            for (int c = 0; c < ch.n_recompute; c++) {
                trial.microbatch = ch.mbs[a];
                trial.vpp = ch.vpp[b];
                trial.recompute = ch.recompute[c];
                trial.recompute_modules = ch.modules[c];
                /* A recipe's recompute_num_layers up to a pipeline rank's layers is valid in
                 * Megatron-Core (transformer_config.py:1919-1925 at d98e8a64d); from a chunk's
                 * layers on it recomputes every layer of the chunk, recompute_layers 0. */
                trial.recompute_layers =
                    s->recompute_layers >= cdse_chunk_layers(m, &trial) ? 0 : s->recompute_layers;
                cdse_evaluate(m, sys, &trial, &res);
                bool better = found ? res.status == CDSE_ST_OK && res.tokens_per_s > r->tokens_per_s
                                    : res.status == CDSE_ST_OK || status < 0 ||
                                          (res.status == CDSE_ST_OOM && status != CDSE_ST_OOM);
                if (!better)
                    continue;
                found = res.status == CDSE_ST_OK;
                status = res.status;
                *r = res;
                best = trial;
            }
    *s = best;
    return status;
}

static int evaluate_row(const table *t, int i, const group_spec *spec, const cdse_model *m,
                        const cdse_system *sys, const cdse_stack *stack, cdse_strategy *s,
                        cdse_result *r)
{
    choices ch;
    cdse_strategy stated = *s;
    open_choices(t, i, spec, m, stack, true, &ch);
    int status = evaluate_choices(&ch, m, sys, s, r);
    if (status == CDSE_ST_OK || (stated.recompute_layers == 0 && stated.offload_layers == 0))
        return status;
    /* A recipe setting the notes state that the model cannot run (it holds the configuration
     * above the GPU's memory): said in the report, and the row evaluated with the open choices
     * as without the statement, so that what the model cannot fit stays visible. */
    char why[96] = "";
    if (status == CDSE_ST_OOM)
        snprintf(why, sizeof why, " (%.1f of %.1f GiB, %.3f s per iteration)", r->mem_total_gib,
                 sys->hbm_gib, r->time_per_iteration_s);
    printf("    %s: the stated recompute_num_layers %d / cpu_offloading_num_layers %d: %s in the "
           "model%s; evaluated with the open choices\n",
           get(t, i, "id"), stated.recompute_layers, stated.offload_layers,
           cdse_status_name(status), why);
    *s = stated;
    s->recompute_layers = 0;
    s->offload_layers = 0;
    s->offload = 0;
    open_choices(t, i, spec, m, stack, false, &ch);
    return evaluate_choices(&ch, m, sys, s, r);
}

/* Narayanan et al. 2021 eq. 3 with full recomputation's coefficients: hardware FLOPs of one
 * iteration, 96 B s L h^2 (1 + s / (6 h) + V / (16 L h)). */
static double eq3_flops(const table *t, int i, int gbs)
{
    double b = gbs, s = geti(t, i, "seq_len", 0), l = geti(t, i, "layers", 0);
    double h = geti(t, i, "hidden", 0), v = geti(t, i, "vocab", 0);
    return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
}

static void describe(const cdse_strategy *s, const cdse_result *r, char *buf, size_t size)
{
    char modules[96] = "";
    if (s->recompute_modules) {
        modules[0] = ' ';
        cdse_recompute_modules_text(s->recompute_modules, modules + 1, sizeof modules - 1);
    }
    char layers[64] = "";
    if (s->recompute_layers > 0 || s->offload_layers > 0)
        snprintf(layers, sizeof layers, " (recompute_layers %d offload_layers %d)",
                 s->recompute_layers, s->offload_layers);
    snprintf(buf, size, "mbs %d vpp %d %s%s%s%s zero %d dp %d", s->microbatch, s->vpp,
             cdse_recompute_name(s->recompute), layers, modules, s->sequence_parallel ? " sp" : "",
             s->zero, r->dp);
}

static void breakdown(const cdse_result *r, const cdse_system *sys)
{
    printf("      memory GiB: weights %.2f grads %.2f optimizer %.2f activations %.2f fp8 %.2f "
           "runtime %.2f reserved %.2f = %.2f of %.2f; the process reserves %.2f\n",
           r->mem_weights_gib, r->mem_gradients_gib, r->mem_optimizer_gib, r->mem_activations_gib,
           r->mem_fp8_cache_gib, r->mem_runtime_gib, r->mem_other_gib, r->mem_total_gib,
           sys->hbm_gib, r->mem_reserved_gib);
    printf("      time s: fwd %.3f bwd %.3f rec %.3f tp %.3f pp %.3f dp %.3f bubble %.3f opt %.3f "
           "ep %.3f fixed %.3f ceiling %.3f = %.3f\n",
           r->t_forward_s, r->t_backward_s, r->t_recompute_s, r->t_tp_comm_s, r->t_pp_comm_s,
           r->t_dp_comm_s, r->t_bubble_s, r->t_optimizer_s, r->t_ep_comm_s, r->t_fixed_s,
           r->t_ceiling_s, r->time_per_iteration_s);
}

/* The stack as row i ran it: `stack` with the settings the row's artifact or notes state. */
static cdse_stack stack_as_run(const table *t, int i, const cdse_stack *stack)
{
    const artifact *a = artifact_of_row(t, i);
    cdse_stack as_run = *stack;
    if (a != NULL && a->overlap_grad_reduce)
        as_run.overlap_grad_reduce = true;
    /* Megatron-Bridge's Llama 3.1 405B recipe counts the embedding and the loss as a layer each
     * in the pipeline split (its notes cite account_for_embedding_in_pipeline_split and
     * account_for_loss_in_pipeline_split): the stack key models both, so both must be stated. */
    const char *notes = get(t, i, "notes");
    if (contains(notes, "account_for_embedding_in_pipeline_split True") &&
        contains(notes, "account_for_loss_in_pipeline_split True"))
        as_run.pipeline_split_embedding = true;
    /* torchtitan runs tensor parallelism asynchronously (micro-pipelined with its GEMMs) when a
     * run sets experimental.enable_async_tensor_parallel, which its rows' notes state. */
    if (contains(notes, "enable_async_tensor_parallel true"))
        as_run.overlap_tp_comm = true;
    return as_run;
}

/* A feasible end-to-end row (iteration time, MFU, TFLOP/s, peak memory or tokens/s): its
 * comparison, and its residual for the error bands. */
static void record_end_to_end(ctx *c, int g, int i, const cdse_system *sys, const char *stack,
                              const cdse_strategy *s, const cdse_result *r, const char *how)
{
    const table *t = c->t;
    const group_spec *spec = &c->specs[g];
    const char *id = get(t, i, "id");
    char quantity[300];
    switch (spec->kind) {
    case K_ITER_TIME:
        snprintf(quantity, sizeof quantity, "iteration time (s)");
        record(c, g, stack, id, quantity, atof(get(t, i, "meas_iter_time_s")),
               r->time_per_iteration_s);
        add_residual(stack, sys, id, atof(get(t, i, "meas_iter_time_s")) / r->time_per_iteration_s);
        break;
    case K_MFU:
        snprintf(quantity, sizeof quantity, "MFU %% [%s]", how);
        record(c, g, stack, id, quantity, atof(get(t, i, "meas_mfu_pct")), 100 * r->mfu);
        add_residual(stack, sys, id, 100 * r->mfu / atof(get(t, i, "meas_mfu_pct")));
        break;
    case K_EQ3_TFLOPS:
        snprintf(quantity, sizeof quantity, "eq.3 TFLOP/s [%s]", how);
        record(c, g, stack, id, quantity, atof(get(t, i, "meas_tflops_per_gpu")),
               eq3_flops(t, i, s->global_batch) / r->time_per_iteration_s / s->gpus / 1e12);
        add_residual(stack, sys, id,
                     eq3_flops(t, i, s->global_batch) / r->time_per_iteration_s / s->gpus / 1e12 /
                         atof(get(t, i, "meas_tflops_per_gpu")));
        break;
    case K_PEAK_MEMORY:
        snprintf(quantity, sizeof quantity, "peak reserved GiB [%s]", how);
        record(c, g, stack, id, quantity, atof(get(t, i, "meas_mem_gib")), r->mem_reserved_gib);
        break;
    case K_TOKENS:
        snprintf(quantity, sizeof quantity, "tokens/s per GPU [%s]", how);
        record(c, g, stack, id, quantity, atof(get(t, i, "meas_tokens_per_s_per_gpu")),
               r->tokens_per_s / s->gpus);
        add_residual(stack, sys, id,
                     r->tokens_per_s / s->gpus / atof(get(t, i, "meas_tokens_per_s_per_gpu")));
        break;
    default: {
        /* "438 (MCore v0.8) / 468 (MCore v0.9)": the figure of the software the row's stack
         * models, the first. megatron-lm-2024 is Megatron-Core r0.8: the README weak-scaling runs
         * of its other group (937571cfd4, 2024-07-15); the MoE README published 438 "as of MCore
         * v0.8" with PyTorch 24.04 and Transformer Engine 1.9 (megatron/core/transformer/moe/
         * README.md at 0b981f9c53, 2024-08-02), and replaced it by 468 "as of MCore v0.9" with
         * PyTorch 24.09 and Transformer Engine 1.11 (c230e0d7c2, 2024-11-21), newer software than
         * any stack here describes. The choice was made when the H100 BF16 GEMM table was
         * calibrated (2026-12-02), on which it weighs: with 468 the calibration would give a
         * factor of 0.93, not 0.91, and this row and the README group would miss their targets.
         * The newer figure's comparison is printed as information, outside the tallies. */
        const char *cell = get(t, i, "meas_tflops_per_gpu");
        double meas = atof(cell);
        snprintf(quantity, sizeof quantity, "model TFLOP/s [%s]", how);
        record(c, g, stack, id, quantity, meas, r->model_tflops_per_gpu);
        add_residual(stack, sys, id, r->model_tflops_per_gpu / meas);
        if (strchr(cell, '/')) {
            double newer = number_after(cell, "/ ");
            printf("  %-18s (the newer software's figure, information only) %12.4g %+8.2f%%\n", "",
                   newer, 100 * (r->model_tflops_per_gpu - newer) / newer);
        }
    }
    }
}

void check_row(ctx *c, int g, int i, const cdse_system *sys, const cdse_stack *stack)
{
    const table *t = c->t;
    const group_spec *spec = &c->specs[g];
    const char *id = get(t, i, "id");
    cdse_model m;
    cdse_strategy s;
    cdse_result r = {0};
    if (model_of_row(c, i, &m) != 0) {
        record_failure(c, g, stack->name, id, "no model for the row (jobs/models)");
        return;
    }
    /* The stack as the row ran it (tallied under the stack's name). */
    cdse_stack as_run = stack_as_run(t, i, stack);
    strategy_of_row(t, i, spec, &as_run, &s);
    if (spec->kind == K_LAYER) {
        double fwd, bwd;
        s.microbatch = geti(t, i, "mbs", 1);
        s.recompute = parse_recompute(get(t, i, "recompute"));
        const char *other = get(t, i, "meas_other");
        cdse_layer_times(&m, sys, &s, &fwd, &bwd);
        record(c, g, stack->name, id, "layer forward (ms)", number_after(other, "fwd "), 1e3 * fwd);
        record(c, g, stack->name, id, "layer backward (ms)", number_after(other, "bwd "),
               1e3 * bwd);
        return;
    }
    int status = evaluate_row(t, i, spec, &m, sys, &as_run, &s, &r);
    char how[256];
    describe(&s, &r, how, sizeof how);
    if (c->verbose) {
        printf("    %s [%s]\n", id, how);
        breakdown(&r, sys);
    }
    if (spec->kind == K_MEMORY) {
        /* Figure 1 counts transformer layers only: 18 B x 12 L h^2 / (t p) is exactly its
         * 45.5625 GiB for the 22B model; compare like with like. Its configurations without
         * recomputation did not fit in 80 GB: memory is compared, not feasibility. */
        double states = r.mem_weights_gib + r.mem_gradients_gib + r.mem_optimizer_gib -
                        cdse_embedding_state_gib(&m, &s);
        const char *meas = get(t, i, "meas_mem_gib");
        record(c, g, stack->name, id, "weights+grads+optimizer (GiB)",
               number_after(meas, "params+grads+optimizer "), states);
        record(c, g, stack->name, id, "activations (GiB)", number_after(meas, "activations "),
               r.mem_activations_gib);
        return;
    }
    if (status != CDSE_ST_OK) {
        char why[400];
        snprintf(why, sizeof why, "status %s (%s, %.1f of %.1f GiB)", cdse_status_name(status), how,
                 r.mem_total_gib, sys->hbm_gib);
        record_failure(c, g, stack->name, id, why);
        return;
    }
    record_end_to_end(c, g, i, sys, stack->name, &s, &r, how);
}
