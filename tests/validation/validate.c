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
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <unistd.h>

#include "clusterdse/config/job.h"
#include "clusterdse/config/stack.h"
#include "clusterdse/model/perf.h"

#define MAX_COLS 64
#define MAX_LINE 8192

typedef struct row {
    int n;
    char *field[MAX_COLS];
    char buf[MAX_LINE];
} row;

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

typedef struct table {
    row header;
    int rows;
    row *data;
} table;

static const char *get(const table *t, int i, const char *col)
{
    for (int c = 0; c < t->header.n; c++)
        if (strcmp(t->header.field[c], col) == 0)
            return c < t->data[i].n ? t->data[i].field[c] : "";
    fprintf(stderr, "validate: no column '%s'\n", col);
    exit(2);
}

static int read_table(const char *path, table *t)
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

typedef enum kind {
    K_ITER_TIME,    /* iteration time (s) */
    K_MEMORY,       /* Figure 1: states and activations of the first stage (GiB) */
    K_LAYER,        /* Table 4: one layer's forward and backward (ms) */
    K_MFU,          /* model FLOPs utilization (%) */
    K_EQ3_TFLOPS,   /* TFLOP/s per GPU counted with Narayanan et al. 2021 eq. 3 (96 coefficient) */
    K_MODEL_TFLOPS, /* model TFLOP/s per GPU as Megatron / NeMo count them */
    K_TOKENS,       /* tokens/s per GPU: Megatron-Bridge's "model TFLOP/s" counts FLOPs its own
                       way per model (causal attention halved, GPT-OSS's experts as ungated);
                       tokens per second needs no counting convention */
    K_PEAK_MEMORY,  /* the process's peak reserved memory per GPU (GiB; torchtitan logs
                       torch.cuda.max_memory_reserved, the maximum over the GPUs), against
                       cdse_result.mem_reserved_gib; the row must be feasible */
} kind;

/* How the software of a group runs the settings a row leaves open. */
typedef enum recipe {
    R_MEGATRON,   /* Megatron-LM / NeMo: recomputation none, selective (if the stack has it), full;
                     experts tensor-parallel as the dense layers (Megatron-Core's default
                     expert_tensor_parallel_size = tensor_model_parallel_size) */
    R_BRIDGE_MOE, /* Megatron-Bridge's MoE recipes (NVIDIA-NeMo/Megatron-Bridge
                     src/megatron/bridge/recipes/{qwen,deepseek,gpt_oss}): expert_tensor_
                     parallel_size 1 (the Qwen3-235B row's ep 32 over tp 2 x dp 16 needs it);
                     recomputation among their settings: none, --recompute-modules layernorm
                     moe_act (with mla_up_proj for latent attention), moe, full */
} recipe;

typedef struct group_spec {
    const char *group;  /* published.csv `group` */
    const char *system; /* calibration/systems/NAME.cfg */
    const char *stack;  /* calibration/stacks/NAME.cfg of the software that ran it */
    int kind;
    int recipe;
    double each, mean; /* limits on |error|: the issue's targets */
    /* The source states that pipeline-parallel communication overlapped the computation, which
     * Megatron-LM runs only interleaved: r0.8 sets overlap_p2p_comm False without a virtual
     * pipeline (megatron/training/arguments.py:271-277, "non-interleaved schedule does not support
     * overlapping p2p communication"), so its pp > 1 rows that leave vpp blank are interleaved at
     * a depth not published (tried as "open"). */
    bool pp_overlap_stated;
} group_spec;

/* DeepSpeed ran the ZeRO-3 rows of Narayanan et al. Table 2 (its `optimizer_sharding` cell). */
#define ZERO3_STACK "deepspeed-2022"
/* NVIDIA's MLPerf Training GPT-3 recipe as NeMo ran it ran the rows whose figure the source
 * attributes to MLPerf (their `notes`: NeMo's performance summary links NEMO2407-4's TFLOP/s to
 * the MLPerf results; NeMo-Framework-Launcher conf/training/gpt3/175b_mlperf.yaml has its
 * layout; the stack file gives the sources). */
#define MLPERF_STACK "nemo-mlperf-2024"

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
#define N_GROUPS   (int)(sizeof groups / sizeof groups[0])
#define MAX_STACKS 12
#define MAX_GROUPS 32 /* the groups of published.csv, or of the held-out file */

typedef struct tally {
    const char *name;
    double worst, sum;
    int n, failed; /* rows that could not be evaluated or were `oom` */
} tally;

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

typedef struct ctx {
    const char *data;
    bool verbose; /* -v: the memory and time breakdown of every evaluated row */
    const table *t;
    const group_spec *specs; /* groups[], or the held-out file's groups */
    tally group[MAX_GROUPS];
    tally stack[MAX_STACKS];
    int n_stacks;
    int bad_rows; /* rows of no known group */
} ctx;

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

static void add_residual(const char *stack, const cdse_system *sys, const char *id,
                         double time_ratio)
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

static void record(ctx *c, int g, const char *stack, const char *id, const char *quantity,
                   double measured, double predicted)
{
    double err = (predicted - measured) / measured;
    printf("  %-18s %-32s %12.4g %12.4g %+8.2f%%\n", id, quantity, measured, predicted, 100 * err);
    tally_add(&c->group[g], err);
    tally_add(stack_tally(c, stack), err);
}

static void record_failure(ctx *c, int g, const char *stack, const char *id, const char *why)
{
    printf("  %-18s FAILED: %s\n", id, why);
    c->group[g].failed++;
    stack_tally(c, stack)->failed++;
}

static int geti(const table *t, int i, const char *col, int fallback)
{
    const char *v = get(t, i, col);
    return *v >= '0' && *v <= '9' ? atoi(v) : fallback;
}

static bool contains(const char *text, const char *word)
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

static int load_system(const char *data, const char *name, cdse_system *sys)
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

static int load_stack(const char *data, const char *name, cdse_stack *stack)
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

static void check_row(ctx *c, int g, int i, const cdse_system *sys, const cdse_stack *stack)
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
    char quantity[300];
    switch (spec->kind) {
    case K_ITER_TIME:
        snprintf(quantity, sizeof quantity, "iteration time (s)");
        record(c, g, stack->name, id, quantity, atof(get(t, i, "meas_iter_time_s")),
               r.time_per_iteration_s);
        add_residual(stack->name, sys, id,
                     atof(get(t, i, "meas_iter_time_s")) / r.time_per_iteration_s);
        break;
    case K_MFU:
        snprintf(quantity, sizeof quantity, "MFU %% [%s]", how);
        record(c, g, stack->name, id, quantity, atof(get(t, i, "meas_mfu_pct")), 100 * r.mfu);
        add_residual(stack->name, sys, id, 100 * r.mfu / atof(get(t, i, "meas_mfu_pct")));
        break;
    case K_EQ3_TFLOPS:
        snprintf(quantity, sizeof quantity, "eq.3 TFLOP/s [%s]", how);
        record(c, g, stack->name, id, quantity, atof(get(t, i, "meas_tflops_per_gpu")),
               eq3_flops(t, i, s.global_batch) / r.time_per_iteration_s / s.gpus / 1e12);
        add_residual(stack->name, sys, id,
                     eq3_flops(t, i, s.global_batch) / r.time_per_iteration_s / s.gpus / 1e12 /
                         atof(get(t, i, "meas_tflops_per_gpu")));
        break;
    case K_PEAK_MEMORY:
        snprintf(quantity, sizeof quantity, "peak reserved GiB [%s]", how);
        record(c, g, stack->name, id, quantity, atof(get(t, i, "meas_mem_gib")),
               r.mem_reserved_gib);
        break;
    case K_TOKENS:
        snprintf(quantity, sizeof quantity, "tokens/s per GPU [%s]", how);
        record(c, g, stack->name, id, quantity, atof(get(t, i, "meas_tokens_per_s_per_gpu")),
               r.tokens_per_s / s.gpus);
        add_residual(stack->name, sys, id,
                     r.tokens_per_s / s.gpus / atof(get(t, i, "meas_tokens_per_s_per_gpu")));
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
        record(c, g, stack->name, id, quantity, meas, r.model_tflops_per_gpu);
        add_residual(stack->name, sys, id, r.model_tflops_per_gpu / meas);
        if (strchr(cell, '/')) {
            double newer = number_after(cell, "/ ");
            printf("  %-18s (the newer software's figure, information only) %12.4g %+8.2f%%\n", "",
                   newer, 100 * (r.model_tflops_per_gpu - newer) / newer);
        }
    }
    }
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
