/* Parameter and FLOP counts of a transformer. */
#include "clusterdse/model/workload.h"

#include <math.h>

void cdse_model_fill_defaults(cdse_model *model)
{
    if (model->kv_heads == 0)
        model->kv_heads = model->heads;
    if (model->head_dim == 0 && model->heads > 0)
        model->head_dim = model->hidden / model->heads;
    if (model->ffn == 0)
        model->ffn = 4 * model->hidden;
    if (model->v_head_dim == 0)
        model->v_head_dim = model->head_dim;
    if (model->experts > 0) {
        if (model->moe_ffn == 0)
            model->moe_ffn = model->ffn;
        if (model->moe_every == 0)
            model->moe_every = 1;
        if (model->top_k == 0)
            model->top_k = 1;
    }
}

#define REQUIRE_RANGE(field, lo, hi)                                                               \
    do {                                                                                           \
        if (model->field < (lo) || model->field > (hi)) {                                          \
            cdse_diag_set(diag, "model '%s': " #field " = %d; allowed: an integer from %d to %d",  \
                          model->name, model->field, (lo), (hi));                                  \
            return CDSE_EINVAL;                                                                    \
        }                                                                                          \
    } while (0)
#define REQUIRE_POSITIVE(field, hi) REQUIRE_RANGE(field, 1, hi)

/* Latent attention and sliding windows: sizes that are wrong in themselves. */
static int check_attention_kind(const cdse_model *model, cdse_diag *diag)
{
    if (model->q_lora_rank < 0 || model->kv_lora_rank < 0 || model->qk_rope_head_dim < 0 ||
        model->v_head_dim < 0 || model->sliding_window < 0 || model->full_attention_every < 0) {
        cdse_diag_set(diag,
                      "model '%s': q_lora_rank %d, kv_lora_rank %d, qk_rope_head_dim %d, "
                      "v_head_dim %d, sliding_window %d, full_attention_every %d; allowed: >= 0",
                      model->name, model->q_lora_rank, model->kv_lora_rank, model->qk_rope_head_dim,
                      model->v_head_dim, model->sliding_window, model->full_attention_every);
        return CDSE_EINVAL;
    }
    bool mla = model->kv_lora_rank > 0;
    if (!mla && (model->q_lora_rank > 0 || model->qk_rope_head_dim > 0)) {
        cdse_diag_set(diag,
                      "model '%s': q_lora_rank / qk_rope_head_dim without kv_lora_rank; allowed: "
                      "them only with multi-head latent attention (kv_lora_rank > 0)",
                      model->name);
        return CDSE_EINVAL;
    }
    if (mla && model->kv_heads != model->heads) {
        cdse_diag_set(diag,
                      "model '%s': kv_heads = %d with latent attention; allowed: heads (%d): "
                      "every head up-projects its own keys and values",
                      model->name, model->kv_heads, model->heads);
        return CDSE_EINVAL;
    }
    if (model->moe_node_limit < 0) {
        cdse_diag_set(diag, "model '%s': moe_node_limit = %d; allowed: 0 (no limit) or more",
                      model->name, model->moe_node_limit);
        return CDSE_EINVAL;
    }
    if (model->full_attention_every > 0 && model->sliding_window == 0) {
        cdse_diag_set(diag,
                      "model '%s': full_attention_every = %d without sliding_window; allowed: 0, "
                      "or a sliding_window > 0",
                      model->name, model->full_attention_every);
        return CDSE_EINVAL;
    }
    return CDSE_OK;
}

/* A mixture-of-experts model's expert settings (experts > 0). */
static int check_experts(const cdse_model *model, cdse_diag *diag)
{
    if (model->top_k < 1 || model->top_k > model->experts) {
        cdse_diag_set(diag, "model '%s': top_k = %d; allowed: 1 to experts (%d)", model->name,
                      model->top_k, model->experts);
        return CDSE_EINVAL;
    }
    REQUIRE_POSITIVE(moe_ffn, CDSE_MODEL_MAX_FFN);
    REQUIRE_POSITIVE(moe_every, CDSE_MODEL_MAX_COUNT);
    if (model->shared_experts < 0) {
        cdse_diag_set(diag, "model '%s': shared_experts = %d; allowed: 0 or more", model->name,
                      model->shared_experts);
        return CDSE_EINVAL;
    }
    if (model->moe_imbalance != 0.0 && model->moe_imbalance < 1.0) {
        cdse_diag_set(diag,
                      "model '%s': moe_imbalance = %g; allowed: >= 1 (busiest expert rank's "
                      "tokens over the average)",
                      model->name, model->moe_imbalance);
        return CDSE_EINVAL;
    }
    if (model->capacity_factor < 0.0) {
        cdse_diag_set(diag, "model '%s': capacity_factor = %g; allowed: 0 (dropless) or positive",
                      model->name, model->capacity_factor);
        return CDSE_EINVAL;
    }
    return CDSE_OK;
}

int cdse_model_check(const cdse_model *model, cdse_diag *diag)
{
    REQUIRE_POSITIVE(layers, CDSE_MODEL_MAX_COUNT);
    REQUIRE_POSITIVE(hidden, CDSE_MODEL_MAX_WIDTH);
    REQUIRE_POSITIVE(heads, CDSE_MODEL_MAX_COUNT);
    REQUIRE_POSITIVE(kv_heads, CDSE_MODEL_MAX_COUNT);
    REQUIRE_POSITIVE(head_dim, CDSE_MODEL_MAX_WIDTH);
    REQUIRE_POSITIVE(ffn, CDSE_MODEL_MAX_FFN);
    REQUIRE_POSITIVE(seq_len, CDSE_MODEL_MAX_LENGTH);
    REQUIRE_POSITIVE(vocab, CDSE_MODEL_MAX_LENGTH);
    REQUIRE_RANGE(experts, 0, CDSE_MODEL_MAX_COUNT);
    REQUIRE_RANGE(top_k, 0, CDSE_MODEL_MAX_COUNT);
    REQUIRE_RANGE(moe_every, 0, CDSE_MODEL_MAX_COUNT);
    REQUIRE_RANGE(shared_experts, 0, CDSE_MODEL_MAX_COUNT);
    REQUIRE_RANGE(moe_ffn, 0, CDSE_MODEL_MAX_FFN);
    if (model->kv_heads > model->heads || model->heads % model->kv_heads != 0) {
        cdse_diag_set(diag,
                      "model '%s': kv_heads = %d does not divide heads = %d; allowed: a divisor "
                      "of heads (heads for multi-head, 1 for multi-query attention)",
                      model->name, model->kv_heads, model->heads);
        return CDSE_EINVAL;
    }
    if (model->first_dense_layers < 0 || model->first_dense_layers >= model->layers) {
        cdse_diag_set(diag, "model '%s': first_dense_layers = %d; allowed: 0 to layers - 1 (%d)",
                      model->name, model->first_dense_layers, model->layers - 1);
        return CDSE_EINVAL;
    }
    double weights = 0.0;
    for (int i = 0; i < model->n_seq_bins; i++) {
        double len = model->seq_bin_len[i];
        if (!(len >= 1.0 && len <= model->seq_len) || !(model->seq_bin_weight[i] >= 0.0)) {
            cdse_diag_set(diag,
                          "model '%s': seq_len_histogram bin %d: length %g, weight %g; allowed: "
                          "1 <= length <= seq_len (%d), weight >= 0",
                          model->name, i + 1, len, model->seq_bin_weight[i], model->seq_len);
            return CDSE_EINVAL;
        }
        weights += model->seq_bin_weight[i];
    }
    if (model->n_seq_bins > 0 && !(weights > 0.0)) {
        cdse_diag_set(diag,
                      "model '%s': seq_len_histogram weights sum to 0; allowed: a positive sum",
                      model->name);
        return CDSE_EINVAL;
    }
    if (check_attention_kind(model, diag) != CDSE_OK)
        return CDSE_EINVAL;
    if (model->experts < 0 || model->experts == 1) {
        cdse_diag_set(diag, "model '%s': experts = %d; allowed: 0 (dense) or at least 2",
                      model->name, model->experts);
        return CDSE_EINVAL;
    }
    if (model->experts > 0 && check_experts(model, diag) != CDSE_OK)
        return CDSE_EINVAL;
    return CDSE_OK;
}

/* GPT-style models (plain MLP) carry biases and LayerNorm (scale + shift); Llama-style models
 * (gated MLP) have no biases and RMSNorm (scale only). */
static bool has_biases(const cdse_model *model)
{
    return !model->gated_mlp;
}

static double norm_params(const cdse_model *model)
{
    return has_biases(model) ? 2.0 * model->hidden : (double)model->hidden;
}

/* Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 Sec. 2.1, eqs. 9-19, and the
 * released modeling code's projections): queries from the hidden state directly (W^Q) or through
 * a latent of q_lora_rank with its RMSNorm (W^DQ, W^UQ); keys and values through a latent of
 * kv_lora_rank (W^DKV, with the shared RoPE key W^KR beside it) with its RMSNorm and one
 * up-projection per head for keys and values (W^UK, W^UV); the output projection W^O. */
static double mla_params(const cdse_model *model)
{
    double h = model->hidden, a = model->heads;
    double qk = (double)model->head_dim + model->qk_rope_head_dim;
    double qr = model->q_lora_rank, kvr = model->kv_lora_rank;
    double query = qr > 0.0 ? h * qr + qr + qr * a * qk : h * a * qk;
    double kv =
        h * (kvr + model->qk_rope_head_dim) + kvr + kvr * a * (model->head_dim + model->v_head_dim);
    return query + kv + a * model->v_head_dim * h;
}

double cdse_model_attention_params(const cdse_model *model)
{
    if (model->kv_lora_rank > 0)
        return mla_params(model);
    double h = model->hidden;
    double q = (double)model->heads * model->head_dim;
    double kv = (double)model->kv_heads * model->head_dim;
    double weights = h * (q + 2.0 * kv) + q * h;
    double biases = has_biases(model) ? (q + 2.0 * kv) + h : 0.0;
    return weights + biases;
}

static double mlp_params_of(const cdse_model *model, double ffn)
{
    double h = model->hidden;
    if (model->gated_mlp)
        return 3.0 * h * ffn;
    return 2.0 * h * ffn + ffn + h;
}

double cdse_model_mlp_params(const cdse_model *model)
{
    return mlp_params_of(model, model->ffn);
}

double cdse_model_params_per_layer(const cdse_model *model)
{
    return cdse_model_attention_params(model) + cdse_model_mlp_params(model) +
           2.0 * norm_params(model);
}

double cdse_model_embedding_params(const cdse_model *model)
{
    return (double)model->vocab * model->hidden;
}

/* Number of MoE layers: every moe_every-th layer after the first_dense_layers. */
static int moe_layers(const cdse_model *model)
{
    if (model->experts <= 0)
        return 0;
    return (model->layers - model->first_dense_layers) / model->moe_every;
}

double cdse_model_params(const cdse_model *model)
{
    int n_moe = moe_layers(model);
    int n_dense = model->layers - n_moe;
    double attention_and_norms = cdse_model_attention_params(model) + 2.0 * norm_params(model);
    double moe_mlp =
        (model->experts + model->shared_experts) * mlp_params_of(model, model->moe_ffn) +
        (double)model->experts * model->hidden; /* router */
    double layers = model->layers * attention_and_norms + n_dense * cdse_model_mlp_params(model) +
                    n_moe * moe_mlp;
    double embedding = cdse_model_embedding_params(model);
    double output = model->tied_embeddings ? 0.0 : embedding;
    /* Learned position embeddings for GPT-style models; Llama-style models use RoPE. */
    double positions = has_biases(model) ? (double)model->seq_len * model->hidden : 0.0;
    return layers + embedding + output + positions + norm_params(model);
}

double cdse_model_expert_params(const cdse_model *model)
{
    return moe_layers(model) * (double)model->experts * mlp_params_of(model, model->moe_ffn);
}

int cdse_model_swa_layers(const cdse_model *model)
{
    if (model->sliding_window <= 0)
        return 0;
    if (model->full_attention_every <= 0)
        return model->layers;
    return model->layers - model->layers / model->full_attention_every;
}

double cdse_attended_keys(double seq, double window)
{
    if (window <= 0.0 || window >= seq)
        return seq / 2.0;
    return window * (1.0 - window / (2.0 * seq));
}

/* Attention model FLOPs per token of a model with latent or sliding-window attention, summed
 * over the layers, forward + backward (3 x forward).
 * Projections: 2 FLOPs per weight (Megatron's 12 h q (1 + kv/q) for GQA, the weights of
 * mla_params for latent attention). Scores and context: 2 q_dim + 2 v_dim FLOPs per key and
 * head, counted over the full sequence as Megatron does (no causal halving), and over the
 * window in sliding-window layers. */
static double attention_flops_per_token(const cdse_model *model)
{
    double h = model->hidden, s = model->seq_len;
    double q = (double)model->heads * model->head_dim;
    double projections = 6.0 * cdse_model_attention_params(model);
    if (model->kv_lora_rank <= 0)
        projections = 12.0 * h * q * (1.0 + (double)model->kv_heads / model->heads);
    double dims = (double)model->head_dim + model->qk_rope_head_dim + model->v_head_dim;
    double per_key = 6.0 * model->heads * dims; /* 2 FLOPs x (q.k + p.v), x 3 */
    int swa = cdse_model_swa_layers(model);
    double window = model->sliding_window < s ? model->sliding_window : s;
    return model->layers * projections + (model->layers - swa) * per_key * s +
           swa * per_key * window;
}

/* Megatron-LM's counting (num_floating_point_operations in megatron/training/training.py; for
 * GPT it equals Narayanan et al. 2021 eq. 3): per token, forward + backward = 3 x forward,
 *   12 h [ q (1 + kv/a + s/h) + ffn_eff ] per layer + 6 h V for the logits,
 * q = a d_head, ffn_eff = ffn (x 3/2 if gated; x top_k on MoE layers). Attention scores are
 * counted over the full sequence (no causal halving), as Megatron and NeMo report. */
double cdse_model_flops_per_token(const cdse_model *model)
{
    double h = model->hidden;
    double s = model->seq_len;
    double q = (double)model->heads * model->head_dim;
    double kv_ratio = (double)model->kv_heads / model->heads;
    double gated = model->gated_mlp ? 1.5 : 1.0;
    double attention = 12.0 * h * q * (1.0 + kv_ratio) + 12.0 * s * q;
    double dense_mlp = 12.0 * h * model->ffn * gated;
    int n_moe = moe_layers(model);
    double moe_mlp = 12.0 * h * model->moe_ffn * gated * (model->top_k + model->shared_experts);
    double mlps = (model->layers - n_moe) * dense_mlp + n_moe * moe_mlp;
    if (model->kv_lora_rank > 0 || model->sliding_window > 0)
        return attention_flops_per_token(model) + mlps + 6.0 * h * model->vocab;
    double layers =
        model->layers * attention + (model->layers - n_moe) * dense_mlp + n_moe * moe_mlp;
    return layers + 6.0 * h * model->vocab;
}

/* ---- Variable sequence lengths -------------------------------------------------------------- */

/* splitmix64 (Steele, Lea and Flood 2014): a small, seedable, well-mixed generator. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
    return (double)(splitmix64(state) >> 11) * 0x1.0p-53;
}

static double sample_cost(const cdse_model *model, double len)
{
    return len * (1.0 + len / (6.0 * model->hidden));
}

static double draw_cost(const cdse_model *model, const double cumulative[], uint64_t *rng)
{
    double u = uniform01(rng);
    int bin = 0;
    while (bin < model->n_seq_bins - 1 && u >= cumulative[bin])
        bin++;
    return sample_cost(model, model->seq_bin_len[bin]);
}

double cdse_seq_mean_cost(const cdse_model *model, double *variance)
{
    double mean = 0.0, square = 0.0, total = 0.0;
    for (int i = 0; i < model->n_seq_bins; i++) {
        double c = sample_cost(model, model->seq_bin_len[i]);
        mean += model->seq_bin_weight[i] * c;
        square += model->seq_bin_weight[i] * c * c;
        total += model->seq_bin_weight[i];
    }
    mean /= total;
    square /= total;
    if (variance != NULL)
        *variance = square - mean * mean;
    return mean;
}

double cdse_seq_imbalance_mc(const cdse_model *model, int ranks, int seqs, int trials,
                             uint64_t seed)
{
    if (model->n_seq_bins < 1 || ranks < 2 || trials < 1)
        return 1.0;
    double cumulative[CDSE_MAX_SEQ_BINS];
    double sum = 0.0;
    for (int i = 0; i < model->n_seq_bins; i++) {
        sum += model->seq_bin_weight[i];
        cumulative[i] = sum;
    }
    for (int i = 0; i < model->n_seq_bins; i++)
        cumulative[i] /= sum;
    uint64_t rng = seed;
    double max_sum = 0.0;
    for (int t = 0; t < trials; t++) {
        double slowest = 0.0;
        for (int r = 0; r < ranks; r++) {
            double cost = 0.0;
            for (int k = 0; k < seqs; k++)
                cost += draw_cost(model, cumulative, &rng);
            if (cost > slowest)
                slowest = cost;
        }
        max_sum += slowest;
    }
    double variance;
    return max_sum / trials / (seqs * cdse_seq_mean_cost(model, &variance));
}

/* Expected maximum of `ranks` standard normal variables: the integral of
 * x n phi(x) Phi(x)^(n-1) over x (order statistics, e.g. David and Nagaraja 2003, Sec. 2.1),
 * by the trapezoidal rule on [-10, 10] with step 1/256 (the integrand is smooth and negligible
 * beyond; the error is far below the Monte Carlo error of the other grid points). */
static double expected_max_normal(int ranks)
{
    const double step = 1.0 / 256.0;
    double sum = 0.0;
    for (double x = -10.0; x <= 10.0; x += step) {
        double phi = exp(-0.5 * x * x) / 2.5066282746310002;
        double cdf = 0.5 * erfc(-x / 1.4142135623730951);
        sum += x * ranks * phi * pow(cdf, ranks - 1);
    }
    return sum * step;
}

/* Seed of the Monte Carlo estimates: fixed, so every rank and every run agrees. */
#define SEQ_MC_SEED 0x5EEDC0FFEEull
/* Samples drawn per grid point at most; below 32 sequences per rank the ranks' costs are
 * sampled, from 32 on they are normal by the central limit theorem (mean n mu, variance
 * n sigma^2) and the expected maximum of the normal deviations is integrated. */
#define SEQ_MC_DRAWS     (1 << 18)
#define SEQ_MC_MIN_TRIAL 8
#define SEQ_CLT_SEQS     32

void cdse_model_prepare(cdse_model *model)
{
    if (model->n_seq_bins < 1)
        return;
    double sum = 0.0, mean = 0.0;
    for (int i = 0; i < model->n_seq_bins; i++)
        sum += model->seq_bin_weight[i];
    for (int i = 0; i < model->n_seq_bins; i++) {
        model->seq_bin_weight[i] /= sum;
        mean += model->seq_bin_weight[i] * model->seq_bin_len[i];
    }
    model->seq_mean = mean;
    double variance;
    double mu = cdse_seq_mean_cost(model, &variance);
    double sigma = sqrt(variance > 0.0 ? variance : 0.0);
    for (int j = 0; j < CDSE_SEQ_GRID_RANKS; j++) {
        int ranks = 1 << j;
        double zmax = ranks > 1 ? expected_max_normal(ranks) : 0.0;
        for (int i = 0; i < CDSE_SEQ_GRID_SEQS; i++) {
            int seqs = 1 << i;
            double value = 1.0;
            if (ranks > 1 && seqs < SEQ_CLT_SEQS) {
                int trials = SEQ_MC_DRAWS / (seqs * ranks);
                if (trials < SEQ_MC_MIN_TRIAL)
                    trials = SEQ_MC_MIN_TRIAL;
                value = cdse_seq_imbalance_mc(model, ranks, seqs, trials,
                                              SEQ_MC_SEED + (uint64_t)(i * 64 + j));
            } else if (ranks > 1) {
                value = 1.0 + sigma * zmax / (mu * sqrt((double)seqs));
            }
            /* The slowest of the ranks costs at least the mean; with every sample alike
             * (variance 0, one bin) exactly the mean. The ratio of the Monte Carlo sums can
             * round to a few ulps below 1 when a sample's cost is not exact in binary. */
            model->seq_imbalance[i][j] = variance > 0.0 ? fmax(1.0, value) : 1.0;
        }
    }
}

double cdse_seq_imbalance(const cdse_model *model, double ranks, double seqs)
{
    if (model->n_seq_bins < 1 || ranks < 2.0)
        return 1.0;
    double x = log2(seqs < 1.0 ? 1.0 : seqs);
    double y = log2(ranks);
    double xmax = CDSE_SEQ_GRID_SEQS - 1, ymax = CDSE_SEQ_GRID_RANKS - 1;
    x = x > xmax ? xmax : x;
    y = y > ymax ? ymax : y;
    int i = (int)x, j = (int)y;
    int i1 = i < xmax ? i + 1 : i, j1 = j < ymax ? j + 1 : j;
    double fx = x - i, fy = y - j;
    const double(*g)[CDSE_SEQ_GRID_RANKS] = model->seq_imbalance;
    double value = (1 - fx) * (1 - fy) * g[i][j] + fx * (1 - fy) * g[i1][j] +
                   (1 - fx) * fy * g[i][j1] + fx * fy * g[i1][j1];
    /* The weights sum to 1 up to rounding: between grid values of 1 (or just above) the sum can
     * fall below 1, and the slowest rank is never faster than the mean. */
    return fmax(1.0, value);
}
