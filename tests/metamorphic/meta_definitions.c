/* The metamorphic suite (metamorphic.h): the relation `definitions`, every figure of a row
 * recomputed from the row's own inputs by docs/eval.md and docs/job-file.md. */
#define _POSIX_C_SOURCE 200809L /* open_memstream, clock_gettime */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metamorphic.h"

/* ---- Definitions ---------------------------------------------------------------------- */

/* Model FLOPs per token, forward and backward, by Megatron-LM's counting
 * (num_floating_point_operations, megatron/training/training.py), as docs/eval.md defines
 * model_tflops_per_gpu: per layer 12 h q (1 + kv/a) for the projections, 12 s q for scores and
 * context over the full sequence, 12 h ffn (x 3/2 gated) for the MLP (x (top_k + shared) on an
 * MoE layer), and 6 h V for the logits. Written here again from that source, not called from
 * src/model. 0 for the models it does not cover (latent or sliding-window attention, MoE
 * layers other than every layer after the dense ones, length histograms). */
static double megatron_flops_per_token(const cdse_model *m)
{
    if (m->kv_lora_rank > 0 || m->sliding_window > 0 || m->n_seq_bins > 0 ||
        (m->experts > 0 && m->moe_every != 1))
        return 0.0;
    double h = m->hidden, s = m->seq_len, q = (double)m->heads * m->head_dim;
    double gated = m->gated_mlp ? 1.5 : 1.0;
    double attention = 12.0 * h * q * (1.0 + (double)m->kv_heads / m->heads) + 12.0 * s * q;
    int moe_layers = m->experts > 0 ? m->layers - m->first_dense_layers : 0;
    double dense_mlp = 12.0 * h * m->ffn * gated;
    double moe_mlp = 12.0 * h * m->moe_ffn * gated * (m->top_k + m->shared_experts);
    return m->layers * attention + (m->layers - moe_layers) * dense_mlp + moe_layers * moe_mlp +
           6.0 * h * m->vocab;
}

/* Narayanan et al. 2021, eq. 3, for a GPT-3-shaped model (ffn 4h, q = h, no GQA, not gated):
 * 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recomputation, whose layer term counts four
 * passes (the forward twice) and whose logit term 6 B s h V three; without recomputation the
 * layer term is 3/4 of it: 72 l h^2 (1 + s/(6h)) + 6 h V per token. */
static double narayanan_flops_per_token(const cdse_model *m)
{
    if (m->gated_mlp || m->ffn != 4 * m->hidden || m->heads * m->head_dim != m->hidden ||
        m->kv_heads != m->heads || m->experts > 0 || m->kv_lora_rank > 0 || m->sliding_window > 0)
        return 0.0;
    double h = m->hidden, s = m->seq_len, l = m->layers, v = m->vocab;
    return 0.75 * 96.0 * l * h * h * (1.0 + s / (6.0 * h)) + 96.0 * l * h * h * v / (16.0 * l * h);
}

typedef struct def_check {
    meta_ctx *ctx;
    const cdse_job *job;
    uint64_t index;
    bool failed;
} def_check;

static void expect(def_check *d, const char *what, double seen, double expected, double tol)
{
    if (d->failed || near(seen, expected, tol))
        return;
    d->failed = true;
    char text[256];
    snprintf(text, sizeof text, "%s (A = the row's value, B = the definition's)", what);
    meta_report(d->ctx, REL_DEFINITIONS, text, seen, expected, d->job, d->index, d->job, d->index);
}

/* docs/job-file.md, Cost and energy: `gpus` GPUs of `sys` for `seconds` draw `*power_w` and cost
 * `*cost` (rented: GPU-hours x rental price; bought: the purchase amortized plus the energy). */
static void bill_of(const cdse_job *job, const cdse_system *sys, double gpus, double seconds,
                    double *power_w, double *cost)
{
    const cdse_cost *c = &sys->cost;
    double nodes = ceil(gpus / sys->gpus_per_node);
    *power_w = c->pue * (gpus * c->gpu_power_w + nodes * c->node_power_w);
    if (c->rental_price > 0.0) {
        *cost = gpus * c->rental_price * seconds / SECONDS_PER_HOUR;
        return;
    }
    double per_gpu = c->gpu_price + c->facility_price;
    for (int l = 0; l < sys->n_levels; l++)
        per_gpu += sys->level[l].port_price;
    *cost = gpus * per_gpu * seconds / (c->amortization_years * SECONDS_PER_YEAR) +
            *power_w * seconds / JOULES_PER_KWH * job->objective.electricity_price;
}

/* The row's power, cost and energy: its system's bill, or a pool's summed over its types for
 * the GPUs the configuration takes of each (gpus x count / total; docs/job-file.md, Pools). */
static void check_cost(def_check *d, const cdse_system *sys, const cdse_record *rec)
{
    const cdse_result *r = &rec->result;
    bool ok = r->status == CDSE_ST_OK;
    double tokens = d->job->objective.tokens;
    double seconds = ok && tokens > 0.0 ? tokens / r->tokens_per_s : 0.0;
    double power_w = 0.0, cost = 0.0;
    if (sys->pool.n_types == 0) {
        bill_of(d->job, sys, rec->strategy.gpus, seconds, &power_w, &cost);
    } else {
        double total = 0.0;
        for (int t = 0; t < sys->pool.n_types; t++)
            total += sys->pool.gpus[t];
        for (int t = 0; t < sys->pool.n_types; t++) {
            double p, c, g = rec->strategy.gpus * sys->pool.gpus[t] / total;
            bill_of(d->job, &d->job->system[sys->pool.member[t]], g, seconds, &p, &c);
            power_w += p;
            cost += c;
        }
    }
    if (ok)
        expect(d, "tokens_per_kwh = tokens_per_s x 3.6e6 / facility power", rec->tokens_per_kwh,
               power_w > 0.0 ? r->tokens_per_s * JOULES_PER_KWH / power_w : 0.0, DEF_TOL);
    expect(d, "energy_to_train_mwh = power x seconds / 3.6e9 (0 when infeasible)",
           rec->energy_to_train_mwh, power_w * seconds / JOULES_PER_MWH, DEF_TOL);
    expect(d, "cost_to_train (0 when infeasible)", rec->cost_to_train, cost, DEF_TOL);
}

/* Throughput, FLOPs and memory of a row with figures. */
static void check_throughput(def_check *d, const cdse_system *sys, const cdse_model *model,
                             const cdse_record *rec)
{
    const cdse_result *r = &rec->result;
    const cdse_strategy *st = &rec->strategy;
    double time = r->time_per_iteration_s;
    bool pool = sys->pool.n_types > 0;
    expect(d, "time_per_iteration_s > 0", time > 0.0 && isfinite(time) ? 1.0 : 0.0, 1.0, 0.0);
    for (int c = 0; c < cdse_column_count; c++) {
        const cdse_column *col = &cdse_columns[c];
        double v = cdse_column_value(col, rec);
        if (col->kind == CDSE_COL_F64 && !(isfinite(v) && v >= 0.0)) {
            char what[128];
            snprintf(what, sizeof what, "every number of a row is finite and >= 0: %s", col->name);
            expect(d, what, v, 0.0, 0.0);
        }
    }
    if (model->n_seq_bins == 0) {
        double tokens = (double)st->global_batch * model->seq_len;
        expect(d, "tokens_per_s = global_batch x seq_len / time", r->tokens_per_s, tokens / time,
               DEF_TOL);
        double per_token = megatron_flops_per_token(model);
        if (per_token > 0.0)
            expect(d, "model_tflops_per_gpu = model FLOPs / time / gpus (Megatron-LM counting)",
                   r->model_tflops_per_gpu, per_token * tokens / time / st->gpus / 1e12, DEF_TOL);
        double narayanan = narayanan_flops_per_token(model);
        if (narayanan > 0.0)
            expect(d, "model_tflops_per_gpu = Narayanan et al. 2021 eq. 3 without recomputation",
                   r->model_tflops_per_gpu, narayanan * tokens / time / st->gpus / 1e12, DEF_TOL);
    }
    if (!pool)
        expect(d, "mfu = model_tflops_per_gpu / peak of the precision", r->mfu,
               r->model_tflops_per_gpu / sys->peak_tflops[st->precision], DEF_TOL);
    expect(d, "hfu / mfu = hardware / model TFLOP/s", r->hfu * r->model_tflops_per_gpu,
           r->mfu * r->hardware_tflops_per_gpu, DEF_TOL);
    expect(d, "hardware_tflops_per_gpu >= model_tflops_per_gpu",
           at_most(r->model_tflops_per_gpu, r->hardware_tflops_per_gpu, DEF_TOL) ? 1.0 : 0.0, 1.0,
           0.0);
    double parts = r->mem_weights_gib + r->mem_gradients_gib + r->mem_optimizer_gib +
                   r->mem_activations_gib + r->mem_other_gib + r->mem_fp8_cache_gib +
                   r->mem_runtime_gib;
    expect(d, "mem_total_gib = the sum of its parts", r->mem_total_gib, parts, DEF_TOL);
    if (!pool && r->status == CDSE_ST_OK)
        expect(d, "status ok: mem_total_gib <= hbm_gib",
               at_most(r->mem_total_gib, sys->hbm_gib, DEF_TOL) ? 1.0 : 0.0, 1.0, 0.0);
}

/* Every definition that applies to the row at `index` (already evaluated into `rec`). */
void meta_check_definitions(meta_ctx *ctx, const cdse_job *job, uint64_t index,
                            const cdse_record *rec)
{
    def_check d = {ctx, job, index, false};
    ctx->pairs[REL_DEFINITIONS]++;
    cdse_system sys;
    meta_record_system(job, index, &sys);
    const cdse_result *r = &rec->result;
    if (computed(r->status))
        check_throughput(&d, &sys, &job->model[rec->model], rec);
    /* docs/eval.md: days "objective.tokens / tokens_per_s (0 without a token budget or when
     * infeasible)", gpu_hours "gpus x the time to train (0 likewise)". */
    double tokens = job->objective.tokens;
    double seconds = r->status == CDSE_ST_OK && tokens > 0.0 ? tokens / r->tokens_per_s : 0.0;
    expect(&d, "time_to_train_days = tokens / tokens_per_s / 86400 (0 when infeasible)",
           rec->time_to_train_days, seconds / SECONDS_PER_DAY, DEF_TOL);
    expect(&d, "gpu_hours = gpus x time to train in hours (0 when infeasible)", rec->gpu_hours,
           seconds * rec->strategy.gpus / SECONDS_PER_HOUR, DEF_TOL);
    check_cost(&d, &sys, rec);
}
