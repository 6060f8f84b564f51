/* One parallelization / memory configuration and its validity rules. No I/O. */
#ifndef CLUSTERDSE_STRATEGY_H
#define CLUSTERDSE_STRATEGY_H

#include "clusterdse/model/hardware.h"
#include "clusterdse/model/stack.h"
#include "clusterdse/model/workload.h"

typedef enum cdse_recompute {
    CDSE_RECOMPUTE_NONE = 0,
    CDSE_RECOMPUTE_SELECTIVE, /* attention core (Korthikanti et al. 2022, Sec. 5) */
    CDSE_RECOMPUTE_FULL,      /* whole layer; only layer inputs are kept */
    CDSE_RECOMPUTE_COUNT
} cdse_recompute;

const char *cdse_recompute_name(int recompute); /* "none", "selective", "full" */
int cdse_recompute_parse(const char *name);     /* -1 if unknown */

/* Offload of state to the second memory tier (bit mask). */
enum {
    CDSE_OFFLOAD_WEIGHTS = 1,
    CDSE_OFFLOAD_ACTIVATIONS = 2,
    CDSE_OFFLOAD_OPTIMIZER = 4,
};

/* Rank placement: the order in which the parallel groups are laid out over the ranks, innermost
 * first (DESIGN.md "Rank placement"); the default tp, cp, dp, pp puts TP groups on consecutive
 * ranks, within a node. */
#define CDSE_PLACEMENT_COUNT 24
enum { CDSE_PLACE_TP = 0, CDSE_PLACE_CP, CDSE_PLACE_DP, CDSE_PLACE_PP, CDSE_PLACE_DIMS };
extern const char *const cdse_placement_names[CDSE_PLACEMENT_COUNT + 1]; /* "tp-cp-dp-pp", ... */

/* Stride between consecutive members of each group (indexed by CDSE_PLACE_*) for a placement. */
void cdse_placement_strides(int placement, int tp, int cp, int dp, int pp,
                            int strides[CDSE_PLACE_DIMS]);

typedef struct cdse_strategy {
    int gpus;
    int tp, pp, cp, ep, vpp;
    int microbatch;
    int global_batch;
    int recompute; /* cdse_recompute */
    bool sequence_parallel;
    int zero;      /* 0..3; 1 = distributed optimizer */
    int precision; /* cdse_dtype: bf16, fp16 or fp8 */
    bool flash_attention;
    bool tp_comm_overlap; /* TP collectives pipelined with the GEMMs (Transformer Engine
                             userbuffers, Megatron-Core --tp-comm-overlap) */
    int offload;          /* CDSE_OFFLOAD_* mask */
    int placement;        /* index into cdse_placement_names; 0 = tp-cp-dp-pp */
    /* The software stack that runs it (calibration/stacks); NULL = cdse_stack_default. */
    const cdse_stack *stack;
    /* Derived by cdse_strategy_check. */
    int dp;
    int grad_accum; /* micro-batches per iteration per pipeline */
} cdse_strategy;

/* Reasons a configuration is not feasible; CDSE_ST_OK when it is. Order is the order of checks. */
typedef enum cdse_status {
    CDSE_ST_OK = 0,
    CDSE_ST_GPUS_NOT_DIVISIBLE,  /* gpus % (tp * pp * cp) != 0 */
    CDSE_ST_TP_HEADS,            /* tp does not divide heads or kv_heads(when kv_heads >= tp) */
    CDSE_ST_PP_LAYERS,           /* pp * vpp > layers: a pipeline chunk without a layer */
    CDSE_ST_VPP,                 /* interleaving needs pp >= 2 and micro-batches % pp == 0 */
    CDSE_ST_BATCH_NOT_DIVISIBLE, /* global_batch % (microbatch * dp) != 0 */
    CDSE_ST_CP,                  /* seq_len % (2 * cp) != 0 */
    CDSE_ST_EP,                  /* ep > 1 without experts, or ep not dividing experts or dp*cp */
    CDSE_ST_SP_NEEDS_TP,         /* sequence parallelism with tp == 1 (same as without) */
    CDSE_ST_ZERO_NEEDS_DP,       /* zero > 0 with dp == 1 (same as zero 0) */
    CDSE_ST_DTYPE_UNSUPPORTED,   /* precision not supported by the GPU */
    CDSE_ST_OFFLOAD_NO_TIER,     /* offload without a second memory tier */
    CDSE_ST_POOL_SPLIT,          /* a pool's GPU types cannot form whole replicas or stages */
    CDSE_ST_OOM,                 /* does not fit in HBM (and second tier, if any) */
    CDSE_ST_COUNT
} cdse_status;

const char *cdse_status_name(int status); /* "ok", "gpus_not_divisible", ... "oom" */
int cdse_status_parse(const char *name);

/* Checks the combination against the model and system, derives dp and grad_accum, and returns
 * a cdse_status. Cheap: called for every configuration of a sweep. */
int cdse_strategy_check(const cdse_model *model, const cdse_system *system,
                        cdse_strategy *strategy);

#endif
