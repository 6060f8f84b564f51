/* One parallelization / memory configuration and its validity rules. No I/O. */
#ifndef CLUSTERDSE_STRATEGY_H
#define CLUSTERDSE_STRATEGY_H

#include "clusterdse/model/axes.h"
#include "clusterdse/model/hardware.h"
#include "clusterdse/model/stack.h"
#include "clusterdse/model/workload.h"

typedef enum cdse_recompute {
    CDSE_RECOMPUTE_NONE = 0,
    CDSE_RECOMPUTE_SELECTIVE, /* attention core (Korthikanti et al. 2022, Sec. 5) */
    CDSE_RECOMPUTE_FULL,      /* whole layer; only layer inputs are kept */
    CDSE_RECOMPUTE_COUNT
} cdse_recompute;

/* "none", "selective", "full", NULL. */
extern const char *const cdse_recompute_names[CDSE_RECOMPUTE_COUNT + 1];
extern const cdse_names cdse_recompute_enum;
const char *cdse_recompute_name(int recompute); /* "?" if out of range */
int cdse_recompute_parse(const char *name);     /* -1 if unknown */

/* Fine-grained recomputation (Megatron-Core --recompute-granularity selective
 * --recompute-modules): modules whose outputs are dropped in the forward pass and recomputed
 * in the backward pass, a bit mask. core_attn is what `selective` recomputes. */
enum {
    CDSE_RECOMPUTE_CORE_ATTN = 1,      /* attention core (scores, softmax, context) */
    CDSE_RECOMPUTE_MOE_ACT = 2,        /* the experts' activation function (SwiGLU / GeLU) */
    CDSE_RECOMPUTE_LAYERNORM = 4,      /* input and pre-MLP norms */
    CDSE_RECOMPUTE_MLA_UP_PROJ = 8,    /* latent attention's up projections (and RoPE) */
    CDSE_RECOMPUTE_MLP = 16,           /* the dense MLP of dense layers */
    CDSE_RECOMPUTE_MOE = 32,           /* the whole MoE layer, with its all-to-alls */
    CDSE_RECOMPUTE_SHARED_EXPERTS = 64 /* the shared experts */
};
#define CDSE_RECOMPUTE_MODULES   7
#define CDSE_RECOMPUTE_MODULES_N (1 << CDSE_RECOMPUTE_MODULES)
/* Megatron-Core's names, in bit order: "core_attn", "moe_act", "layernorm", "mla_up_proj",
 * "mlp", "moe", "shared_experts". */
extern const char *const cdse_recompute_module_names[CDSE_RECOMPUTE_MODULES + 1];
/* A mask as text: "none" or the names joined by '+' ("mla_up_proj+layernorm"). */
void cdse_recompute_modules_text(int mask, char *buf, size_t size);
/* Every mask's text, code = mask (built when the program is loaded, constant afterwards). */
extern const cdse_names cdse_recompute_modules_enum;

/* How MoE layers exchange tokens (Megatron-Core --moe-token-dispatcher-type):
 *   alltoall  NCCL all-to-all over the expert-parallel group, every routed copy sent on its own;
 *   deepep    hierarchical dispatch as DeepEP / HybridEP run it (flex dispatcher): a token
 *             crosses the network once per NVLink domain that holds one of its experts (at most
 *             the model's moe_node_limit), then is forwarded inside the domain over NVLink;
 *             FP8 dispatch (BF16 combine) when the precision is FP8. */
typedef enum cdse_moe_dispatcher {
    CDSE_DISPATCH_ALLTOALL = 0,
    CDSE_DISPATCH_DEEPEP,
    CDSE_DISPATCH_COUNT
} cdse_moe_dispatcher;
extern const char *const cdse_moe_dispatcher_names[CDSE_DISPATCH_COUNT + 1];
extern const cdse_names cdse_moe_dispatcher_enum;

/* What hides the dispatch and combine all-to-alls:
 *   none            nothing (exposed);
 *   shared_experts  the shared experts' GEMMs (Megatron-Core --moe-shared-expert-overlap);
 *   a2a             the other micro-batch's computation (Megatron-Core
 *                   --overlap-moe-expert-parallel-comm: 1F1B all-to-all overlap, the forward
 *                   of one micro-batch with the backward of another, as DeepSeek-V3's
 *                   DualPipe pairs them). */
typedef enum cdse_moe_overlap {
    CDSE_MOE_OVERLAP_NONE = 0,
    CDSE_MOE_OVERLAP_SHARED,
    CDSE_MOE_OVERLAP_A2A,
    CDSE_MOE_OVERLAP_COUNT
} cdse_moe_overlap;
extern const char *const cdse_moe_overlap_names[CDSE_MOE_OVERLAP_COUNT + 1];
extern const cdse_names cdse_moe_overlap_enum;

/* Offload of state to the second memory tier (bit mask). */
enum {
    CDSE_OFFLOAD_WEIGHTS = 1,
    CDSE_OFFLOAD_ACTIVATIONS = 2,
    CDSE_OFFLOAD_OPTIMIZER = 4,
};
#define CDSE_OFFLOAD_MASKS 8
/* Every mask as text, code = mask: "none", "weights", ..., "weights+activations+optimizer". */
extern const cdse_names cdse_offload_enum;

/* Rank placement: the order in which the parallel groups are laid out over the ranks, innermost
 * first (DESIGN.md "Rank placement"); the default tp, cp, dp, pp puts TP groups on consecutive
 * ranks, within a node. */
enum { CDSE_PLACE_TP = 0, CDSE_PLACE_CP, CDSE_PLACE_DP, CDSE_PLACE_PP, CDSE_PLACE_DIMS };
#define CDSE_PLACEMENT_COUNT 24 /* CDSE_PLACE_DIMS! orders */
/* Placement names, "tp-cp-dp-pp", ..., NULL-terminated, numbered in lexicographic order of the
 * group indices above (stores keep these numbers). Built from the group names when the program
 * is loaded, constant afterwards. */
extern const char *cdse_placement_names[CDSE_PLACEMENT_COUNT + 1];
extern const cdse_names cdse_placement_enum;

/* The number of an order written as the group names joined by '-', innermost first (each group
 * once), or -1. */
int cdse_placement_parse(const char *name);

/* Stride between consecutive members of each group (indexed by CDSE_PLACE_*) for a placement. */
void cdse_placement_strides(int placement, int tp, int cp, int dp, int pp,
                            int strides[CDSE_PLACE_DIMS]);

struct cdse_strategy;
/* Ranks in one group of every placed dimension but `dim` (CDSE_PLACE_*): for CDSE_PLACE_DP a
 * data-parallel replica (tp cp pp), for CDSE_PLACE_PP the ranks of a pipeline stage (tp cp dp),
 * with dp = gpus / (tp cp pp). 0 when the sizes are not positive. */
int cdse_placement_ranks_without(const struct cdse_strategy *strategy, int dim);

/* MoE parallel folding (Megatron-Core parallel_state.initialize_model_parallel): the MoE layers
 * lay the same ranks out as expert-tensor (etp) x expert (ep) x expert-data (edp) x pp groups,
 * following the placement with tp replaced by etp, cp absent and ep just inside dp (Megatron's
 * expert RankGenerator: tp=etp, ep, dp=edp, cp=1, same order). Strides of those groups. */
enum { CDSE_EXPERT_TP = 0, CDSE_EXPERT_EP, CDSE_EXPERT_DP, CDSE_EXPERT_DIMS };
void cdse_expert_strides(int placement, int etp, int ep, int edp, int pp,
                         int strides[CDSE_EXPERT_DIMS]);

/* True when pp is the outermost group of the placement. */
bool cdse_placement_pp_last(int placement);

/* The type of an axis's strategy field, by its KIND. */
#define CDSE_FIELD_TYPE_INT  int
#define CDSE_FIELD_TYPE_GPUS int
#define CDSE_FIELD_TYPE_ENUM int
#define CDSE_FIELD_TYPE_MASK int
#define CDSE_FIELD_TYPE_BOOL bool

#define CDSE_STRATEGY_FIELD_(ID, POS, KIND, KEY, FIELD, ...) CDSE_FIELD_TYPE_##KIND FIELD;

typedef struct cdse_strategy {
    /* One field per row of CDSE_AXES (axes.h), filled from the configuration's axis values
     * (cdse_space_strategy): gpus, tp, pp, cp, ep, etp (0 = tp), vpp, microbatch,
     * global_batch, recompute (cdse_recompute), sequence_parallel, zero, precision (cdse_dtype),
     * flash_attention, offload (CDSE_OFFLOAD_* mask), offload_layers, recompute_layers,
     * recompute_modules (CDSE_RECOMPUTE_* module mask), moe_dispatcher, moe_overlap,
     * tp_comm_overlap, placement (index into cdse_placement_names), ... Each row's HELP says
     * what its field means. */
    CDSE_AXES(CDSE_STRATEGY_FIELD_)
    /* The software stack that runs it (calibration/stacks); NULL = cdse_stack_default. */
    const cdse_stack *stack;
    /* Derived by cdse_strategy_check. */
    int dp;
    int grad_accum; /* micro-batches per iteration per pipeline */
    int edp;        /* expert data-parallel size: tp cp dp / (etp ep) */
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
    CDSE_ST_EP, /* ep > 1 without experts, ep not dividing experts, etp not dividing the expert
                   FFN, etp * ep not dividing tp * cp * dp, or (pp not outermost) etp * ep != tp
                   * cp: Megatron-Core's folding rules */
    CDSE_ST_SP_NEEDS_TP,       /* sequence parallelism with tp == 1 (same as without) */
    CDSE_ST_ZERO_NEEDS_DP,     /* zero > 0 with dp == 1 (same as zero 0) */
    CDSE_ST_DTYPE_UNSUPPORTED, /* precision not supported by the GPU */
    CDSE_ST_OFFLOAD_NO_TIER,   /* offload without a second memory tier */
    CDSE_ST_POOL_SPLIT,        /* a pool's GPU types cannot form whole replicas or stages */
    CDSE_ST_OOM,               /* does not fit in HBM (and second tier, if any) */
    /* Set before any check by the sweep's record (src/sweep/report.c), last so that the codes
     * above keep their values: a hardware axis of another system entry at a value other than
     * its first, a repeat of the configuration at its first value (docs/job-file.md). */
    CDSE_ST_OTHER_SYSTEM_AXIS,
    /* Appended after it so that stored codes keep their values; checked after CDSE_ST_VPP. */
    CDSE_ST_OFFLOAD_LAYERS,   /* offload_layers > 0 without activation offload, or not below the
                                 layers of a pipeline-stage chunk */
    CDSE_ST_RECOMPUTE_LAYERS, /* recompute_layers > 0 without full recomputation, or not below the
                                 layers of a pipeline-stage chunk */
    /* Appended likewise; checked after CDSE_ST_VPP's stack rule. */
    CDSE_ST_STACK_UNSUPPORTED, /* a feature the software stack does not have: fused attention,
                                  selective recomputation or sequence parallelism (cdse_stack),
                                  or a ZeRO stage other than 3 on an fsdp2 stack, or
                                  recompute_modules on a per-op-policy stack */
    /* Appended likewise; set by the sweep's record (src/sweep/report.c), not the evaluator: a
     * configuration that fits in HBM but whose reserved memory (mem_reserved_gib) is above
     * HBM x (1 - objective.memory_headroom). */
    CDSE_ST_OVER_HEADROOM,
    /* Appended likewise; set by the sweep's record: a feasible configuration whose GPUs cost
     * more to buy than objective.budget (cost.h cdse_within_budget). */
    CDSE_ST_OVER_BUDGET,
    CDSE_ST_COUNT
} cdse_status;

extern const cdse_names cdse_status_enum; /* "ok", "gpus_not_divisible", ... */
const char *cdse_status_name(int status); /* "ok", "gpus_not_divisible", ... "oom" */
int cdse_status_parse(const char *name);

/* Whether the pipeline split counts the embedding and the output layer as one layer each (the
 * stack's pipeline_split_embedding, with more than one stage; Megatron-Core
 * account_for_embedding/loss_in_pipeline_split). Inline: the evaluator asks per configuration. */
static inline bool cdse_split_embedding(const cdse_strategy *strategy)
{
    return strategy->pp > 1 && strategy->stack != NULL && strategy->stack->pipeline_split_embedding;
}

/* Layers of the longest model chunk (one of the pp x vpp pipeline chunks; uneven splits leave
 * some one layer longer), counting the embedding and the output layer as one layer each when the
 * stack's pipeline split does (Megatron-Core account_for_embedding/loss_in_pipeline_split). */
int cdse_chunk_layers(const cdse_model *model, const cdse_strategy *strategy);

/* Checks the combination against the model and system, derives dp and grad_accum, and returns
 * a cdse_status. Cheap: called for every configuration of a sweep. */
int cdse_strategy_check(const cdse_model *model, const cdse_system *system,
                        cdse_strategy *strategy);

#endif
