/* The strategy axes of the design space: one row per axis, read by the index space (space.h:
 * the axis numbers, the names, the decode into a cdse_strategy), the job parser (the `space`
 * keys, src/config/job.c), the pruning bound (bound.c), the output columns (the contract of CSV,
 * tables, --where and the HDF5 store, src/sweep/report.c), the human table (src/sweep/table.c)
 * and the dry run (src/cli/dry_run.c). The same X-macro idiom as CDSE_COLLECTIVES.
 *
 * A new axis is one row appended at the end of CDSE_AXES (with POS = the next free digit
 * position, so that every index of a job without it stays the same, and COLUMN = the next free
 * column), its use in the model (src/model), and its documentation (docs/job-file.md; the
 * column in docs/eval.md, the key in README.md's summary). Its strategy field, key, column,
 * --where name, store field and HDF5 enumeration, table column and dry-run line follow from
 * the row; an enumeration's names may be written in the row (a compound literal, as
 * CHECKPOINT's).
 *
 * Row: X(ID, POS, KIND, KEY, FIELD, LO, HI, DEF, DEF_TEXT, CHOICES, VALUES, NAMES, COLUMN, UNIT,
 *        LABEL, PRUNE, HELP, COLUMN_HELP)
 *   ID        CDSE_AXIS_<ID>
 *   POS       its digit position in the mixed radix (0 varies slowest): the numbers of the rows
 *             and of the axes before them (model, system, the hardware axes) and of the stack
 *             are 0 .. CDSE_AXIS_COUNT - 1, each once (checked at compile time in space.c)
 *   KIND      INT (int field, integer values in [LO, HI]), BOOL (bool field), ENUM (int field,
 *             one of CHOICES, valued VALUES or their position), MASK (int field, a bit mask of
 *             CHOICES joined by '+'; NULL: the CDSE_OFFLOAD_* parts), GPUS (the gpus axis, given
 *             as gpus or nodes)
 *   KEY       the job key under `space`; the column and --where name is the same
 *   FIELD     the cdse_strategy field it fills, declared from the row (strategy.h): int, or
 *             bool for a BOOL
 *   LO, HI    bounds of an INT (and GPUS) value
 *   DEF       default value (a one-value axis), -1: required; DEF_TEXT as the key reference
 *             shows it
 *   NAMES     the cdse_names of the column's codes (ENUM, MASK), NULL for numbers and bools
 *   COLUMN    the column's position in the column table (src/sweep/report.c, cdse_columns):
 *             a new axis takes the next position after the last column, so that stores keep
 *             their layout (two columns at one position do not compile: -Woverride-init)
 *   UNIT      the column's unit
 *   LABEL     the human table's short label (NULL: the key)
 *   PRUNE     what the pruning bound (cdse_time_floor, bound.h) does with the axis: KEPT (taken
 *             as given: the safe choice for a new axis), FREE (ignored: the bound holds whatever
 *             its value), RECOMPUTE (free with CDSE_FLOOR_ANY_RECOMPUTE), STATE (free with
 *             CDSE_FLOOR_ANY_STATE)
 *   HELP      the key's meaning (--help-keys); COLUMN_HELP the column's (--help-columns) */
#ifndef CLUSTERDSE_AXES_H
#define CLUSTERDSE_AXES_H

#include <stdbool.h>

/* Bounds that keep every product the evaluator forms in `int` (tp * pp * cp, pp * vpp,
 * microbatch * dp) below 2^31: 2^10 per parallel degree and micro-batch, 2^20 GPUs. Both are far
 * beyond published systems (the largest training runs use tens of thousands of GPUs and degrees
 * up to a few hundred). */
#define CDSE_MAX_GPUS   1048576
#define CDSE_MAX_DEGREE 1024
#define CDSE_INT_MAX    2147483647

/* clang-format off */
#define CDSE_AXES(X)                                                                               \
    X(GPUS, 10, GPUS, "gpus", gpus, 1, CDSE_MAX_GPUS, 0, "gpus or nodes required", NULL, NULL,     \
      NULL, 3, "GPUs", NULL, KEPT, "GPUs in the job", "GPUs in the job")                          \
    X(TP, 11, INT, "tp", tp, 1, CDSE_MAX_DEGREE, 1, "[1]", NULL, NULL, NULL, 4, "", NULL, KEPT,   \
      "tensor-parallel degree", "tensor-parallel degree")                                          \
    X(PP, 12, INT, "pp", pp, 1, CDSE_MAX_DEGREE, 1, "[1]", NULL, NULL, NULL, 5, "", NULL, KEPT,   \
      "pipeline-parallel stages", "pipeline-parallel stages")                                      \
    X(CP, 13, INT, "cp", cp, 1, CDSE_MAX_DEGREE, 1, "[1]", NULL, NULL, NULL, 7, "", NULL, KEPT,   \
      "context-parallel degree", "context-parallel degree")                                        \
    X(EP, 14, INT, "ep", ep, 1, CDSE_MAX_DEGREE, 1, "[1]", NULL, NULL, NULL, 8, "", NULL, KEPT,   \
      "expert-parallel degree (MoE models)", "expert-parallel degree")                             \
    X(ETP, 26, INT, "etp", etp, 0, CDSE_MAX_DEGREE, 0, "[0]", NULL, NULL, NULL, 55, "", NULL,      \
      KEPT,                                                                                        \
      "expert tensor-parallel size (Megatron-Core --expert-tensor-parallel-size; 0 = tp): the "    \
      "MoE layers fold the ranks into etp x ep x expert-dp groups",                                \
      "expert tensor-parallel size as given (0 = tp; MoE parallel folding)")                       \
    X(VPP, 15, INT, "vpp", vpp, 1, CDSE_MAX_DEGREE, 1, "[1]", NULL, NULL, NULL, 9, "", NULL,      \
      KEPT, "virtual pipeline stages per GPU (interleaved 1F1B when > 1)",                         \
      "virtual pipeline stages per GPU")                                                           \
    X(MICROBATCH, 16, INT, "microbatch", microbatch, 1, CDSE_MAX_DEGREE, 1, "[1]", NULL, NULL,     \
      NULL, 10, "sequences", "mb", KEPT, "micro-batch size (sequences)", "micro-batch size")       \
    X(GLOBAL_BATCH, 17, INT, "global_batch", global_batch, 1, CDSE_INT_MAX, -1, "required", NULL,   \
      NULL, NULL, 11, "sequences", "gbs", KEPT,                                                    \
      "global batch size (sequences per iteration); dp and gradient accumulation derive",          \
      "global batch size")                                                                         \
    X(RECOMPUTE, 18, ENUM, "recompute", recompute, 0, 0, CDSE_RECOMPUTE_NONE, "[\"none\"]",        \
      cdse_recompute_names, NULL, &cdse_recompute_enum, 13, "", NULL, RECOMPUTE,                   \
      "activation recomputation", "activation recomputation: none, selective, full")               \
    X(SEQUENCE_PARALLEL, 19, BOOL, "sequence_parallel", sequence_parallel, 0, 1, 0, "[false]",     \
      NULL, NULL, NULL, 14, "", "sp", KEPT, "Megatron sequence parallelism (with tp > 1)",         \
      "sequence parallelism (0/1)")                                                                \
    X(ZERO, 20, INT, "zero", zero, 0, 3, 0, "[0]", NULL, NULL, NULL, 15, "", NULL, STATE,          \
      "ZeRO stage (1 = distributed optimizer)", "ZeRO stage (1 = distributed optimizer)")          \
    X(PRECISION, 21, ENUM, "precision", precision, 0, 0, CDSE_BF16, "[\"bf16\"]",                  \
      cdse_dtype_names + CDSE_BF16, cdse_precision_values, &cdse_dtype_enum, 16, "", "prec", KEPT, \
      "compute precision of GEMMs (mixed precision with fp32 master weights)",                     \
      "compute precision")                                                                         \
    X(FLASH_ATTENTION, 22, BOOL, "flash_attention", flash_attention, 0, 1, 1, "[true]", NULL,      \
      NULL, NULL, 17, "", "flash", KEPT,                                                           \
      "fused (flash) attention kernels; left out: [true], or those the job's stacks have "         \
      "([false] where none has fused attention, [false, true] where some have)",                   \
      "fused (flash) attention (0/1)")                                                             \
    X(OFFLOAD, 23, MASK, "offload", offload, 0, 0, 0, "[\"none\"]", NULL, NULL,                    \
      &cdse_offload_enum, 18, "", NULL, STATE,                                                     \
      "state offloaded to the system's second memory tier",                                        \
      "state offloaded to the second memory tier")                                                 \
    X(OFFLOAD_LAYERS, 31, INT, "offload_layers", offload_layers, 0, CDSE_MAX_DEGREE, 0, "[0]",     \
      NULL, NULL, NULL, 63, "layers", NULL, STATE,                                                 \
      "with offload \"activations\": layers of each pipeline-stage chunk whose activations are "   \
      "offloaded (Megatron-Core --cpu-offloading-num-layers); 0 = every layer; below the "         \
      "chunk's layers, else the configuration is offload_layers_invalid",                          \
      "with offload activations: layers per pipeline-stage chunk offloaded (0 = every layer)")     \
    X(RECOMPUTE_LAYERS, 32, INT, "recompute_layers", recompute_layers, 0, CDSE_MAX_DEGREE, 0,      \
      "[0]", NULL, NULL, NULL, 64, "layers", NULL, RECOMPUTE,                                      \
      "with recompute \"full\": the first layers of each pipeline-stage chunk that are "           \
      "recomputed, the others keeping their activations (Megatron-Core --recompute-method block "  \
      "--recompute-num-layers); 0 = every layer; below the chunk's layers, else the "              \
      "configuration is recompute_layers_invalid",                                                 \
      "with recompute full: layers per pipeline-stage chunk recomputed, block method (0 = every "  \
      "layer)")                                                                                    \
    X(RECOMPUTE_MODULES, 27, MASK, "recompute_modules", recompute_modules, 0, 0, 0, "[\"none\"]",  \
      cdse_recompute_module_names, NULL, &cdse_recompute_modules_enum, 56, "", "modules", FREE,    \
      "fine-grained recomputation (Megatron-Core --recompute-modules): modules whose activations " \
      "are dropped and recomputed in the backward pass",                                           \
      "fine-grained recomputation: none, or Megatron-Core module names joined by '+'")             \
    X(MOE_DISPATCHER, 28, ENUM, "moe_dispatcher", moe_dispatcher, 0, 0, CDSE_DISPATCH_ALLTOALL,    \
      "[\"alltoall\"]", cdse_moe_dispatcher_names, NULL, &cdse_moe_dispatcher_enum, 57, "",        \
      "dispatch", FREE,                                                                            \
      "MoE token exchange: alltoall (NCCL all-to-all) or deepep (hierarchical: across NVLink "     \
      "domains once per domain, node-limited, FP8 dispatch with fp8)",                             \
      "MoE token exchange: alltoall, deepep")                                                      \
    X(MOE_OVERLAP, 29, ENUM, "moe_overlap", moe_overlap, 0, 0, CDSE_MOE_OVERLAP_NONE,              \
      "[\"none\"]", cdse_moe_overlap_names, NULL, &cdse_moe_overlap_enum, 58, "", NULL, FREE,      \
      "what hides the dispatch/combine all-to-alls: none, shared_experts (Megatron-Core "          \
      "--moe-shared-expert-overlap) or a2a (--overlap-moe-expert-parallel-comm: the other "        \
      "micro-batch's computation)",                                                                \
      "what hides the MoE all-to-alls: none, shared_experts, a2a")                                 \
    X(TP_COMM_OVERLAP, 24, BOOL, "tp_comm_overlap", tp_comm_overlap, 0, 1, 0, "[false]", NULL,     \
      NULL, NULL, 19, "", "tp_overlap", FREE,                                                      \
      "tensor-parallel collectives pipelined with the GEMMs (Megatron-Core --tp-comm-overlap, "    \
      "Transformer Engine userbuffers)",                                                           \
      "tensor-parallel communication overlapped with GEMMs (0/1)")                                 \
    X(PLACEMENT, 25, ENUM, "placement", placement, 0, 0, 0, "[\"tp-cp-dp-pp\"]",                   \
      cdse_placement_names, NULL, &cdse_placement_enum, 54, "", NULL, KEPT,                        \
      "order in which the groups are laid out over the ranks, innermost first (EP is the inner "   \
      "part of dp); the groups' strides decide which network levels each collective crosses",      \
      "rank placement order, innermost first (tp-cp-dp-pp by default)")                          \
    X(CHECKPOINT, 33, ENUM, "checkpoint", checkpoint, 0, 0, 0, "[\"stack\"]",                   \
      CDSE_CHECKPOINT_NAMES_, NULL,                                                                \
      (&(const cdse_names){CDSE_CHECKPOINT_NAMES_, 4, NULL}), 103, "", "ckpt", FREE,               \
      "how checkpoints are saved (goodput): stack (the stack's checkpoint key), sync, async "      \
      "(Megatron-Core --async-save) or memory (in-memory copies on a peer node, Gemini)",          \
      "checkpoint scheme: stack (the stack's), sync, async, memory")
/* CHECKPOINT's codes: 0 = the stack's scheme, else cdse_checkpoint_mode + 1. */
#define CDSE_CHECKPOINT_NAMES_ ((const char *const[]){"stack", "sync", "async", "memory", NULL})
/* clang-format on */

/* The strategy axes above, then the others: model, system, the hardware axes and the stack. */
#define CDSE_AXIS_ONE_(ID, ...) +1
#define CDSE_STRATEGY_AXES      (0 CDSE_AXES(CDSE_AXIS_ONE_))

/* Valued by position in PRECISION's CHOICES (the dtype names from bf16 on). The rows name
 * tables of strategy.h and common.h; they are read where the table is expanded, so this header
 * includes none (strategy.h declares the strategy's fields from it). */
extern const int cdse_precision_values[];

#endif
