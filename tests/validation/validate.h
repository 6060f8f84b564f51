/* Internal header of the validation tool (tests/validation/validate.c: groups, report, error
 * bands and main; validate_rows.c: CSV reading and the evaluation of a row). Split from
 * validate.c (issue 28). */
#ifndef CDSE_VALIDATE_H
#define CDSE_VALIDATE_H

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

typedef struct table {
    row header;
    int rows;
    row *data;
} table;

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
    double each, mean; /* limits on |error|: the targets */
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

#define MAX_STACKS 12
#define MAX_GROUPS 32 /* the groups of published.csv, or of the held-out file */

typedef struct tally {
    const char *name;
    double worst, sum;
    int n, failed; /* rows that could not be evaluated or were `oom` */
} tally;

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

/* validate_rows.c */
const char *get(const table *t, int i, const char *col);
int read_table(const char *path, table *t);
bool contains(const char *text, const char *word);
int load_system(const char *data, const char *name, cdse_system *sys);
int load_stack(const char *data, const char *name, cdse_stack *stack);
void check_row(ctx *c, int g, int i, const cdse_system *sys, const cdse_stack *stack);

/* validate.c */
void add_residual(const char *stack, const cdse_system *sys, const char *id, double time_ratio);
void record(ctx *c, int g, const char *stack, const char *id, const char *quantity, double measured,
            double predicted);
void record_failure(ctx *c, int g, const char *stack, const char *id, const char *why);

#endif
