/* Accelerator, memory tiers and network levels of a system. Knows no strategies. */
#ifndef CLUSTERDSE_HARDWARE_H
#define CLUSTERDSE_HARDWARE_H

#include "clusterdse/model/common.h"

#define CDSE_MAX_LEVELS 4
/* The smallest positive value a profile may give for a rate, a capacity or an efficiency, in its
 * own unit (TFLOP/s, GB/s, GiB, fraction): 10^-6, a millionth of a GB/s or of a TFLOP/s, far
 * below any device. With it every time the evaluator forms stays finite (the largest FLOP and
 * byte counts the model limits allow, ~10^45, over 10^-6 x 10^-6 still fit a double); without
 * it a subnormal bandwidth (1e-310) made times infinite and rows NaN. */
#define CDSE_SYSTEM_MIN_VALUE 1e-6
#define CDSE_MAX_EFF_POINTS   16

/* Collectives with their own optional fitted parameters per network level. */
typedef enum cdse_coll {
    CDSE_COLL_ALLREDUCE = 0,
    CDSE_COLL_ALLGATHER,
    CDSE_COLL_REDUCE_SCATTER,
    CDSE_COLL_ALLTOALL,
    CDSE_COLL_SENDRECV,
    CDSE_COLL_COUNT
} cdse_coll;

/* "allreduce", "allgather", "reduce_scatter", "alltoall", "sendrecv": the names of
 * cdse_coll_table (collective.h), which describes each collective. */
const char *cdse_coll_name(int coll);

/* Efficiency as a function of operation size in FLOPs; interpolated linearly in log10(flops),
 * clamped at both ends. Points are sorted by flops. */
typedef struct cdse_eff_table {
    int n;
    double flops[CDSE_MAX_EFF_POINTS];
    double eff[CDSE_MAX_EFF_POINTS];
} cdse_eff_table;

double cdse_eff_lookup(const cdse_eff_table *table, double flops);

/* One network level. Level 0 is the innermost (e.g. NVLink within a node); a GPU belongs to one
 * domain of each level; `size` is the number of GPUs in one domain (0 for the last level: the
 * whole system). Bandwidth is per GPU, one direction, as the datasheet gives it; the achievable
 * share is `efficiency`. A fitted profile may give per-collective latency/bandwidth (0 = unset). */
typedef struct cdse_net_level {
    char name[CDSE_NAME_MAX];
    int size;
    double bandwidth_gbs; /* GB/s per GPU, one direction (1 GB = 1e9 bytes) */
    double latency_us;
    double efficiency; /* fraction of bandwidth_gbs that collectives achieve, in (0, 1] */
    double port_price; /* purchase price of this level's network per GPU (ports, switches,
                          cables), currency units; 0 = in gpu_price or unknown */
    double coll_latency_us[CDSE_COLL_COUNT];
    double coll_bandwidth_gbs[CDSE_COLL_COUNT]; /* effective bus bandwidth, already includes
                                                   efficiency */
    char measured[160]; /* where the fitted pairs were measured ("" = datasheet figures) */
} cdse_net_level;

typedef enum cdse_tier_attach {
    CDSE_TIER_NONE = 0,
    CDSE_TIER_PER_GPU,  /* each GPU has its own */
    CDSE_TIER_PER_NODE, /* one per node, bandwidth shared by the node's GPUs */
    CDSE_TIER_POOL,     /* pooled memory shared by `shared_by` GPUs */
} cdse_tier_attach;

typedef struct cdse_mem_tier {
    int attach;           /* cdse_tier_attach */
    double capacity_gib;  /* per attachment domain */
    double bandwidth_gbs; /* per attachment domain, one direction */
    double latency_us;
    int shared_by; /* GPUs sharing one domain (1 per GPU, gpus_per_node per node) */
    /* One GPU's link to the tier, GB/s one direction (0 = no limit beyond its share of
     * bandwidth_gbs): host memory reached over PCIe 5.0 x16 moves at most 63 GB/s per direction
     * (32 GT/s x 16 lanes, 128b/130b encoding: PCIe Base Specification 5.0; NVIDIA H100
     * datasheet: "PCIe Gen5 128 GB/s", both directions), over NVLink-C2C 450 GB/s (GH200
     * datasheet: 900 GB/s, both directions), however fast the memory behind it. */
    double link_bandwidth_gbs;
} cdse_mem_tier;

/* What a GPU costs and draws (docs/job-file.md, Cost and energy). 0 = unknown. */
typedef struct cdse_cost {
    double gpu_price;          /* purchase price per GPU with its share of the node */
    double facility_price;     /* per GPU: its share of the building, cooling, power */
    double amortization_years; /* the purchase is spread over this many years */
    double rental_price;       /* per GPU-hour; > 0: rented (power included), no purchase */
    double gpu_power_w;        /* average draw per GPU while training */
    double node_power_w;       /* per node besides its GPUs: CPUs, memory, NICs, fans */
    double pue;                /* facility power / IT power, >= 1 */
} cdse_cost;

/* --- Failures and checkpoint storage (goodput.h; docs/job-file.md, Failures and
 * checkpoints). 0 everywhere: a system that never fails, whose checkpoints cost nothing. --- */

/* How often a job's components fail and what a restart costs. Rates are unexpected job
 * interruptions per 1000 component-days, by the component a study attributes them to: per GPU,
 * per node (host, software), per scale-out link (one NIC port per GPU). */
typedef struct cdse_reliability {
    double gpu_failures;    /* per 1000 GPU-days */
    double node_failures;   /* per 1000 node-days */
    double link_failures;   /* per 1000 link-days, one link per GPU */
    double planned_per_day; /* planned interruptions per day of the job (maintenance) */
    double detect_s;        /* from a failure until the job is stopped */
    double restart_s;       /* relaunch and communicator set-up, before the checkpoint is read */
    double replace_share;   /* share of unexpected failures that take a node out of the job */
    double replace_s;       /* extra time to bring a spare into the job for those */
} cdse_reliability;

/* Where checkpoints go: a parallel file system (aggregate and per-node limits) and the copy to
 * host memory that an asynchronous save stalls on. 0 = unlimited / unknown. */
typedef struct cdse_storage {
    double write_gbs;      /* aggregate write bandwidth of the file system, GB/s */
    double read_gbs;       /* aggregate read bandwidth, GB/s (0: write_gbs) */
    double node_write_gbs; /* per node (its client NICs), GB/s */
    double node_read_gbs;  /* per node, GB/s (0: node_write_gbs) */
    double host_copy_gbs;  /* GPU to host memory per GPU (PCIe / C2C), GB/s */
} cdse_storage;

#define CDSE_MAX_POOL_TYPES 4

/* A heterogeneous pool: GPUs of several types, each with its own profile (another entry of the
 * job's system table) and count. n_types == 0 for an ordinary system. */
typedef struct cdse_pool {
    int n_types;
    int member[CDSE_MAX_POOL_TYPES]; /* index of the member's profile in the job's systems */
    int gpus[CDSE_MAX_POOL_TYPES];   /* GPUs of that type in the pool */
} cdse_pool;

/* How a pool shares the work among its GPU types (pool.h). */
typedef enum cdse_pool_partition {
    CDSE_PARTITION_BALANCED = 0, /* by each type's speed, within its memory (the planners') */
    CDSE_PARTITION_EVEN,         /* equal layers per stage and batch per replica (Megatron-LM) */
} cdse_pool_partition;

/* The GEMM shape model (perf_layer.c, gemm_time): where it is given (sms > 0 and efficiency >
 * 0), a GEMM's efficiency follows from its own M, N and K (output tiles, waves on `sms`
 * streaming multiprocessors, split-K, the main loop's length, a fixed time per kernel) instead
 * of the gemm_efficiency tables, which then serve no GEMM. */
typedef struct cdse_gemm_shape {
    double sms;            /* streaming multiprocessors (CUs) of the GPU */
    double efficiency;     /* bf16/fp16 GEMM of full waves and long K, fraction of peak */
    double efficiency_fp8; /* the same for fp8 GEMMs, fraction of the fp8 peak (0: efficiency) */
} cdse_gemm_shape;

typedef struct cdse_system {
    char name[CDSE_NAME_MAX];
    char gpu[CDSE_NAME_MAX];
    char stack[CDSE_NAME_MAX]; /* default software stack (calibration/stacks); "": the built-in */
    double peak_tflops[CDSE_DTYPE_COUNT]; /* dense; 0 = dtype unsupported */
    /* The highest MFU a published training run reached on this GPU generation in each data
     * type (the profile cites it); the model's iteration is never faster than that. 0 = none. */
    double mfu_ceiling[CDSE_DTYPE_COUNT];
    cdse_eff_table gemm_eff;     /* GEMM efficiency vs GEMM FLOPs (bf16/fp16) */
    cdse_eff_table gemm_eff_fp8; /* n == 0: same as gemm_eff */
    cdse_gemm_shape gemm_shape;  /* sms == 0: the tables above */
    double attention_efficiency; /* fused (flash) attention, fraction of bf16 peak */
    /* The fused attention's efficiency at a sequence length (the x of the table: the queries a
     * rank attends with, the sequence over context parallelism) relative to
     * attention_efficiency, which is the efficiency of long sequences; n == 0: 1 at every
     * length. */
    cdse_eff_table attention_seq_scale;
    double hbm_gib;
    double hbm_bandwidth_gbs;
    double hbm_efficiency; /* achievable share of HBM bandwidth for streaming kernels */
    double reserved_gib;   /* CUDA/ROCm context, allocator fragmentation, workspaces */
    /* FP8 GEMMs take operands in any layout (Blackwell data-centre GPUs, compute capability
     * 10.x), so Transformer Engine keeps no transposed copies in per-tensor FP8 recipes; false:
     * TN only (Hopper, Ada), a transposed copy of every FP8 operand whose GEMM of the backward
     * pass needs the other layout. */
    bool fp8_non_tn_gemm;
    int gpus_per_node;
    int n_levels;
    cdse_net_level level[CDSE_MAX_LEVELS];
    cdse_mem_tier tier;
    cdse_cost cost;
    cdse_reliability reliability; /* goodput: failure rates and restart times */
    cdse_storage storage;         /* goodput: checkpoint bandwidths */
    cdse_pool pool;               /* a pool: the fields above are those of its first member */
    /* A pool's options (pool.h cdse_evaluate_pool_as); unused by an ordinary system. */
    int partition;    /* cdse_pool_partition: how work is shared out among the types */
    bool tp_per_type; /* pp split: each type's stages choose their own tensor-parallel degree */
    /* The network between the islands of different types (GB/s per GPU, one direction, and
     * latency in us); 0 = none: every type's collectives on its own profile's network. */
    double link_bandwidth_gbs;
    double link_latency_us;
} cdse_system;

/* The hardware-field table: one row per profile number a job may sweep (a list in a system
 * entry, docs/job-file.md "Hardware axes"), the same X-macro idiom as CDSE_AXES. A row gives
 *   ID        its cdse_hw_key constant CDSE_HW_<ID> (rows keep their order: record.hw[] and the
 *             jobs' fingerprints number keys by it; new rows are appended)
 *   GROUP     the section of the system entry (NULL: top level, "network", "cost", ...)
 *   LEVEL     the network level (innermost first), or -1 for a key outside `network`
 *   NAME      the profile key in that section ("bandwidth")
 *   FIELD     where it sits in cdse_system (offsetof(cdse_system, FIELD)). The profile key that
 *             fills it and its /systems field are the row's: when the profile's tables
 *             (src/config/system_profile.c) and the /systems fields (src/model/fields.c) have
 *             none for the field, they make one from the row when the program is loaded (a
 *             number within MIN..MAX, 0 when not given, HELP as its help)
 *   WHEN      ALWAYS, LEVEL (0 and no effect when the system has fewer levels) or TIER (read
 *             as 0 when the system has no second memory tier)
 *   INT       1: an integer field (a value is rounded)
 *   MIN, MIN_OPEN, MAX  the values an axis may take (> MIN when MIN_OPEN, else >= MIN; <= MAX):
 *             the profile key's, except that peaks stay positive so that a swept precision never
 *             becomes unsupported
 *   COLUMN, POS, UNIT, HELP  its column in records (name, position in cdse_columns, unit and
 *             meaning: src/sweep/report.c)
 * Readers: cdse_hw_key below; cdse_hw_column / cdse_hw_get / cdse_hw_set (src/model/hardware.c);
 * the keys a job may give as lists, their bounds and the list in the error message
 * (src/config/hw_axes.c); the hardware columns (src/sweep/report.c); the profile keys and
 * /systems fields of rows that have none written out (system_profile.c, fields.c). */
#define CDSE_HW_KEYS(X)                                                                            \
    X(PEAK_BF16, "peak_tflops", -1, "bf16", peak_tflops[CDSE_BF16], ALWAYS, 0, 0, 1, 1e7,          \
      "peak_bf16_tflops", 65, "TFLOP/s", "dense bf16 peak per GPU")                                \
    X(PEAK_FP8, "peak_tflops", -1, "fp8", peak_tflops[CDSE_FP8], ALWAYS, 0, 0, 1, 1e7,             \
      "peak_fp8_tflops", 66, "TFLOP/s", "dense fp8 peak per GPU (0 = none)")                       \
    X(HBM_GIB, NULL, -1, "hbm_gib", hbm_gib, ALWAYS, 0, 0, 1, 1e6, "hbm_gib", 67, "GiB",           \
      "HBM capacity per GPU")                                                                      \
    X(HBM_BANDWIDTH, NULL, -1, "hbm_bandwidth", hbm_bandwidth_gbs, ALWAYS, 0, 0, 1, 1e6,           \
      "hbm_bandwidth_gbs", 68, "GB/s", "HBM bandwidth per GPU")                                    \
    X(GPUS_PER_NODE, NULL, -1, "gpus_per_node", gpus_per_node, ALWAYS, 1, 1, 0, 1e6,               \
      "gpus_per_node", 69, "GPUs", "GPUs per node")                                                \
    X(NET0_BANDWIDTH, "network", 0, "bandwidth", level[0].bandwidth_gbs, LEVEL, 0, 0, 1, 1e9,      \
      "net0_bandwidth_gbs", 70, "GB/s", "network level 0 bandwidth per GPU, one direction")        \
    X(NET0_LATENCY, "network", 0, "latency", level[0].latency_us, LEVEL, 0, 0, 0, 1e9,             \
      "net0_latency_us", 71, "us", "network level 0 latency per step")                             \
    X(NET0_SIZE, "network", 0, "size", level[0].size, LEVEL, 1, 1, 0, 1048576, "net0_size", 72,    \
      "GPUs", "GPUs in one level-0 domain (scale-up domain)")                                      \
    X(NET1_BANDWIDTH, "network", 1, "bandwidth", level[1].bandwidth_gbs, LEVEL, 0, 0, 1, 1e9,      \
      "net1_bandwidth_gbs", 73, "GB/s", "network level 1 bandwidth per GPU (0 = no level 1)")      \
    X(NET1_LATENCY, "network", 1, "latency", level[1].latency_us, LEVEL, 0, 0, 0, 1e9,             \
      "net1_latency_us", 74, "us", "network level 1 latency per step")                             \
    X(NET1_SIZE, "network", 1, "size", level[1].size, LEVEL, 1, 0, 0, 1048576, "net1_size", 75,    \
      "GPUs", "GPUs in one level-1 domain (0 = the whole system)")                                 \
    X(TIER_CAPACITY, "memory_tier", -1, "capacity_gib", tier.capacity_gib, TIER, 0, 0, 1, 1e9,     \
      "tier_capacity_gib", 76, "GiB",                                                              \
      "second memory tier capacity per attachment domain (0 = none)")                              \
    X(TIER_BANDWIDTH, "memory_tier", -1, "bandwidth", tier.bandwidth_gbs, TIER, 0, 0, 1, 1e9,      \
      "tier_bandwidth_gbs", 77, "GB/s",                                                            \
      "second memory tier bandwidth per attachment domain (0 = none)")                             \
    X(GPU_PRICE, "cost", -1, "gpu_price", cost.gpu_price, ALWAYS, 0, 0, 0, 1e12, "gpu_price", 78,  \
      "currency", "purchase price per GPU with its node share")                                    \
    X(RENTAL_PRICE, "cost", -1, "rental_price", cost.rental_price, ALWAYS, 0, 0, 0, 1e9,           \
      "rental_price", 79, "currency/GPU-h", "rental price per GPU-hour (0 = bought)")              \
    X(GPU_POWER, "cost", -1, "gpu_power", cost.gpu_power_w, ALWAYS, 0, 0, 0, 1e6, "gpu_power_w",   \
      80, "W", "average draw per GPU while training")                                              \
    /* goodput (issue 29; docs/job-file.md, Failures and checkpoints) */                           \
    X(STORAGE_WRITE, "storage", -1, "write_bandwidth", storage.write_gbs, ALWAYS, 0, 0, 0, 1e9,    \
      "storage_write_gbs", 84, "GB/s",                                                             \
      "aggregate checkpoint write bandwidth of the file system (0 = unlimited)")                   \
    X(GPU_FAILURES, "reliability", -1, "gpu_failures", reliability.gpu_failures, ALWAYS, 0, 0, 0,  \
      1e6, "gpu_failures", 85, "per 1000 GPU-days",                                                \
      "unexpected interruptions attributed to a GPU")                                              \
    X(NODE_FAILURES, "reliability", -1, "node_failures", reliability.node_failures, ALWAYS, 0, 0,  \
      0, 1e6, "node_failures", 86, "per 1000 node-days",                                           \
      "unexpected interruptions attributed to a node (host, software)")                            \
    X(STORAGE_READ, "storage", -1, "read_bandwidth", storage.read_gbs, ALWAYS, 0, 0, 0, 1e9,       \
      "storage_read_gbs", 104, "GB/s",                                                             \
      "aggregate checkpoint read bandwidth of the file system, which a restart reloads at (0 = "   \
      "the write bandwidth)")                                                                      \
    X(REPLACE_TIME, "reliability", -1, "replace_time", reliability.replace_s, ALWAYS, 0, 0, 0,     \
      1e8, "replace_time_s", 118, "s",                                                             \
      "extra time to bring a spare into the job after a failure that takes a node (on NVL72 its "  \
      "rack) out (0 = hot spares)")                                                                \
    X(TIER_LINK_BANDWIDTH, "memory_tier", -1, "link_bandwidth", tier.link_bandwidth_gbs, TIER, 0,  \
      0, 0, 1e9, "tier_link_gbs", 119, "GB/s",                                                     \
      "one GPU's link to the second memory tier, one direction: PCIe, C2C (0 = its share of "      \
      "the tier's bandwidth alone)")

/* When a row's field counts (CDSE_HW_KEYS' WHEN). */
enum { CDSE_HW_WHEN_ALWAYS = 0, CDSE_HW_WHEN_LEVEL, CDSE_HW_WHEN_TIER };

/* Hardware keys that a job may sweep: one per row of CDSE_HW_KEYS, in its order. */
#define CDSE_HW_KEY_ENUM_(ID, GROUP, LEVEL, NAME, FIELD, WHEN, INT, MIN, MIN_OPEN, MAX, COLUMN,    \
                          POS, UNIT, HELP)                                                         \
    CDSE_HW_##ID,
typedef enum cdse_hw_key { CDSE_HW_KEYS(CDSE_HW_KEY_ENUM_) CDSE_HW_COUNT } cdse_hw_key;

/* A row of CDSE_HW_KEYS as data (cdse_hw_keys[key]). */
typedef struct cdse_hw_info {
    const char *group; /* NULL: top level */
    int level;         /* network level, -1 outside `network` */
    const char *name;
    size_t offset; /* offsetof(cdse_system, FIELD) */
    int when;      /* CDSE_HW_WHEN_* */
    bool integer;
    double min; /* exclusive when min_open */
    bool min_open;
    double max;
    const char *column;
    int position;     /* of the column in cdse_columns */
    const char *help; /* the column's meaning; the profile key's help for a key the row makes */
} cdse_hw_info;
extern const cdse_hw_info cdse_hw_keys[CDSE_HW_COUNT];

/* The store column of a key ("hbm_gib", "net0_bandwidth_gbs", ...). */
const char *cdse_hw_column(int key);
/* The value of a key in `system` (0 for a level or tier the system does not have). */
double cdse_hw_get(const cdse_system *system, int key);
/* Sets a key; integer keys take the value rounded. */
void cdse_hw_set(cdse_system *system, int key, double value);
/* Every key's value, in key order (the hardware columns of a record). */
void cdse_hw_values(const cdse_system *system, double value[CDSE_HW_COUNT]);

/* Checks values that are wrong in themselves (non-positive sizes, efficiencies outside (0, 1],
 * unsorted efficiency tables, level sizes that do not nest). */
int cdse_system_check(const cdse_system *system, cdse_diag *diag);

/* The GPU generation of a profile's `gpu` name, which the error bands are kept per
 * (calibration/bands.cfg): "ampere" (A100...), "hopper" (H100, H200), "blackwell" (B200, GB200,
 * B300, GB300), "cdna3" (MI300X, MI325X), or "other". */
const char *cdse_gpu_generation(const char *gpu);

#endif
