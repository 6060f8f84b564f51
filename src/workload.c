/* Parameter and FLOP counts of a transformer. */
#include "clusterdse/workload.h"

void cdse_model_fill_defaults(cdse_model *model)
{
    if (model->kv_heads == 0)
        model->kv_heads = model->heads;
    if (model->head_dim == 0 && model->heads > 0)
        model->head_dim = model->hidden / model->heads;
    if (model->ffn == 0)
        model->ffn = 4 * model->hidden;
    if (model->experts > 0) {
        if (model->moe_ffn == 0)
            model->moe_ffn = model->ffn;
        if (model->moe_every == 0)
            model->moe_every = 1;
        if (model->top_k == 0)
            model->top_k = 1;
    }
}

#define REQUIRE_POSITIVE(field)                                                                    \
    do {                                                                                           \
        if (model->field <= 0) {                                                                   \
            cdse_diag_set(diag, "model '%s': " #field " = %d; allowed: a positive integer",        \
                          model->name, model->field);                                              \
            return CDSE_EINVAL;                                                                    \
        }                                                                                          \
    } while (0)

int cdse_model_check(const cdse_model *model, cdse_diag *diag)
{
    REQUIRE_POSITIVE(layers);
    REQUIRE_POSITIVE(hidden);
    REQUIRE_POSITIVE(heads);
    REQUIRE_POSITIVE(kv_heads);
    REQUIRE_POSITIVE(head_dim);
    REQUIRE_POSITIVE(ffn);
    REQUIRE_POSITIVE(seq_len);
    REQUIRE_POSITIVE(vocab);
    if (model->kv_heads > model->heads || model->heads % model->kv_heads != 0) {
        cdse_diag_set(diag,
                      "model '%s': kv_heads = %d does not divide heads = %d; allowed: a divisor "
                      "of heads (heads for multi-head, 1 for multi-query attention)",
                      model->name, model->kv_heads, model->heads);
        return CDSE_EINVAL;
    }
    if (model->experts < 0 || model->experts == 1) {
        cdse_diag_set(diag, "model '%s': experts = %d; allowed: 0 (dense) or at least 2",
                      model->name, model->experts);
        return CDSE_EINVAL;
    }
    if (model->experts > 0) {
        if (model->top_k < 1 || model->top_k > model->experts) {
            cdse_diag_set(diag, "model '%s': top_k = %d; allowed: 1 to experts (%d)", model->name,
                          model->top_k, model->experts);
            return CDSE_EINVAL;
        }
        REQUIRE_POSITIVE(moe_ffn);
        REQUIRE_POSITIVE(moe_every);
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
            cdse_diag_set(diag,
                          "model '%s': capacity_factor = %g; allowed: 0 (dropless) or positive",
                          model->name, model->capacity_factor);
            return CDSE_EINVAL;
        }
    }
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

double cdse_model_attention_params(const cdse_model *model)
{
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

/* Number of MoE layers: every moe_every-th layer, counting from the last of each group. */
static int moe_layers(const cdse_model *model)
{
    if (model->experts <= 0)
        return 0;
    return model->layers / model->moe_every;
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
    double layers =
        model->layers * attention + (model->layers - n_moe) * dense_mlp + n_moe * moe_mlp;
    return layers + 6.0 * h * model->vocab;
}
