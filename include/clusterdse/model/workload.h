/* Transformer description and derived counts (parameters, FLOPs, bytes). Knows no hardware. */
#ifndef CLUSTERDSE_WORKLOAD_H
#define CLUSTERDSE_WORKLOAD_H

#include "clusterdse/model/common.h"

#define CDSE_MAX_SEQ_BINS 32

/* Upper bounds of a model's integer fields, chosen so that every integer the model and the
 * strategy rules form from them (layers + pp * vpp, top_k + shared_experts, ...) fits an int,
 * the default ffn = 4 * hidden stays within the ffn bound, and every double stays finite; they
 * are far above any published model (the largest have ~10^2 layers, ~10^4 hidden, ~10^5 ffn,
 * ~10^6 tokens of context, ~10^5 vocabulary). Counts: layers, heads, kv_heads, experts, top_k,
 * moe_every, shared_experts, first_dense_layers. Widths: hidden, head_dim. MLP widths: ffn,
 * moe_ffn. Lengths: seq_len, vocab. */
#define CDSE_MODEL_MAX_COUNT  (1 << 20) /* 1048576 */
#define CDSE_MODEL_MAX_WIDTH  (1 << 24) /* 16777216 */
#define CDSE_MODEL_MAX_FFN    (1 << 26) /* 67108864 = 4 * CDSE_MODEL_MAX_WIDTH */
#define CDSE_MODEL_MAX_LENGTH (1 << 30) /* 1073741824 */
/* Grid of the precomputed sequence-length imbalance: 2^0..2^12 sequences per data-parallel rank
 * and iteration, 2^0..2^14 data-parallel ranks. */
#define CDSE_SEQ_GRID_SEQS  13
#define CDSE_SEQ_GRID_RANKS 15

typedef struct cdse_model {
    char name[CDSE_NAME_MAX];
    int layers;
    int hidden;
    int heads;
    int kv_heads; /* == heads for multi-head attention; < heads for GQA; 1 for MQA */
    int head_dim; /* hidden / heads unless given */
    int ffn;      /* MLP inner size (4 * hidden for GPT) */
    int seq_len;
    int vocab;
    bool gated_mlp;       /* SwiGLU: three ffn-wide matrices instead of two */
    bool tied_embeddings; /* output layer shares the input embedding matrix */
    /* Mixture of experts; experts == 0 means dense. */
    int experts;
    int top_k;
    int moe_ffn;   /* expert FFN size */
    int moe_every; /* every n-th layer is an MoE layer (1 = all) */
    int shared_experts;
    double capacity_factor; /* 0 = dropless */
    double moe_imbalance;   /* tokens on the busiest expert rank / the average (>= 1;
                               0 = the evaluator's default for trained routers) */
    int first_dense_layers; /* leading dense layers before the MoE layers (DeepSeek-V3: 3) */
    /* Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 Sec. 2.1), on when
     * kv_lora_rank > 0: keys and values are up-projected per head from a compressed latent of
     * kv_lora_rank; queries from one of q_lora_rank (0 = queries projected from the hidden state
     * directly). head_dim is the per-head query/key dimension without position (qk_nope_head_dim),
     * qk_rope_head_dim the decoupled RoPE part shared by the heads' keys, v_head_dim the value
     * dimension (0 = head_dim). kv_heads is then heads. */
    int q_lora_rank;
    int kv_lora_rank;
    int qk_rope_head_dim;
    int v_head_dim;
    /* Sliding-window attention: a query attends to the last sliding_window keys (0 = full
     * attention everywhere); every full_attention_every-th layer keeps full attention (GPT-OSS:
     * 2, alternating; 0 = every layer slides). */
    int sliding_window;
    int full_attention_every;
    /* Node-limited routing: the routed copies of a token reach experts in at most this many
     * NVLink domains (DeepSeek-V3: 4 nodes, arXiv:2412.19437 Sec. 2.1.2); 0 = no limit. */
    int moe_node_limit;
    /* Variable sequence lengths: a histogram of sample lengths (seq_len is then the longest
     * sample, used for memory; time is costed at the mean length and the slowest DP rank). */
    int n_seq_bins;
    double seq_bin_len[CDSE_MAX_SEQ_BINS];
    double seq_bin_weight[CDSE_MAX_SEQ_BINS]; /* normalized to sum 1 by cdse_model_prepare */
    double seq_mean;                          /* mean sample length */
    double seq_imbalance[CDSE_SEQ_GRID_SEQS][CDSE_SEQ_GRID_RANKS];
} cdse_model;

/* Fills defaults (head_dim, moe_ffn, moe_every) derived from the other fields. */
void cdse_model_fill_defaults(cdse_model *model);

/* Precomputes what the evaluator needs from a sequence-length histogram (normalized weights,
 * mean, the imbalance grid by seeded Monte Carlo). Call after filling the histogram; a model
 * without one is left as it is. */
void cdse_model_prepare(cdse_model *model);

/* Expected cost of the slowest of `ranks` data-parallel ranks over the mean rank cost when each
 * rank processes `seqs` samples drawn from the histogram, a sample of length s costing
 * s (1 + s / (6 h)) (per-token work grows with the attention span, Narayanan et al. 2021 eq. 3).
 * Seeded Monte Carlo over `trials` iterations: the same arguments give the same result. */
double cdse_seq_imbalance_mc(const cdse_model *model, int ranks, int seqs, int trials,
                             uint64_t seed);

/* Mean cost s (1 + s / (6 h)) of a sample drawn from the histogram, and its variance (may be
 * NULL); the weights need not be normalized. */
double cdse_seq_mean_cost(const cdse_model *model, double *variance);

/* The precomputed imbalance, interpolated in log2(seqs) and log2(ranks); 1 without a
 * histogram. */
double cdse_seq_imbalance(const cdse_model *model, double ranks, double seqs);

/* Checks values that are wrong in themselves. Returns 0 or CDSE_EINVAL with a message naming
 * the field and what is allowed. */
int cdse_model_check(const cdse_model *model, cdse_diag *diag);

/* Parameter counts (Narayanan et al. 2021, Sec. 5.1 for the GPT case). */
double cdse_model_params_per_layer(const cdse_model *model); /* dense layer, incl. norms */
double cdse_model_attention_params(const cdse_model *model); /* QKV + output projection
                                                                (MLA: down and up projections,
                                                                their norms and the output) */
double cdse_model_mlp_params(const cdse_model *model);       /* one dense MLP */
double cdse_model_embedding_params(const cdse_model *model); /* vocab * hidden */
double cdse_model_params(const cdse_model *model);           /* whole model */
/* The routed experts' parameters over every MoE layer (0 for a dense model): the part of
 * cdse_model_params sharded over expert parallelism. */
double cdse_model_expert_params(const cdse_model *model);

/* Layers with sliding-window attention (0 without a window). */
int cdse_model_swa_layers(const cdse_model *model);

/* Keys a query attends to, averaged over the queries of a causal sequence of `seq` tokens with a
 * window of `window` keys: seq / 2 without a window (or one at least as long as the sequence),
 * window (1 - window / (2 seq)) with one (the first `window` queries see fewer keys). */
double cdse_attended_keys(double seq, double window);

/* Model FLOPs of one iteration of `tokens` tokens (forward + backward, no recomputation), counted
 * as Megatron-LM does (Narayanan et al. 2021 eq. 3, extended to GQA and gated MLPs as in
 * Megatron-LM's num_floating_point_operations): the numerator of MFU. */
double cdse_model_flops_per_token(const cdse_model *model);

#endif
