/* Goodput: failures, checkpoints and restarts (goodput.h). Sources of the formulas:
 *  - failures are exponential (constant rates per component), the job fails when any of its
 *    components does: rate = sum of components x their rates (Kokolis et al. 2024,
 *    arXiv:2410.21680, model the job's MTTF as 1 / (nodes x r_f); Dubey et al. 2024 Sec. 3.3.4
 *    count the Llama 3 interruptions by component);
 *  - the checkpoint interval and the wall time: Daly 2006, "A higher order estimate of the
 *    optimum checkpoint interval for restart dumps", FGCS 22(3):303-312, eq. 37 and eq. 20;
 *  - an asynchronous save stalls training only for the copy to host memory (Megatron-Core
 *    dist_checkpointing async_save; PyTorch DCP async_save); the save is durable once written,
 *    so a failure in between rolls back one interval further: that lag is added to the
 *    recovery of each failure (first order, like Daly's lost-work term);
 *  - in-memory checkpoints to peers (Wang et al., "GEMINI", SOSP 2023): the copy to host
 *    memory, then to a peer node over the scale-out network; a restart reads it from there. */
#include "clusterdse/model/goodput.h"

#include <math.h>

#include "clusterdse/model/stack.h"

#define SECONDS_PER_DAY 86400.0
/* Profiles give failure rates per 1000 component-days (the unit of Kokolis et al. 2024). */
#define RATE_DAYS 1000.0
#define GB        1e9

/* The larger of two finite values: an inline comparison (libm's fmax is a call, and its NaN
 * handling is not needed here). */
static inline double max2(double a, double b)
{
    return a > b ? a : b;
}

double cdse_checkpoint_bytes_per_param(int precision, double *weights)
{
    bool fp32 = precision == CDSE_FP32 || precision == CDSE_TF32;
    double w = fp32 ? 4.0 : 2.0;      /* the weights as training holds them */
    double master = fp32 ? 0.0 : 4.0; /* fp32 master copy of low-precision weights */
    double moments = 8.0;             /* Adam's fp32 first and second moments */
    if (weights != NULL)
        *weights = w;
    return w + master + moments;
}

cdse_param_counts cdse_model_param_counts(const cdse_model *model)
{
    return (cdse_param_counts){.total = cdse_model_params(model),
                               .experts = cdse_model_expert_params(model)};
}

cdse_checkpoint_bytes cdse_checkpoint_size(const cdse_param_counts *params,
                                           const cdse_strategy *strategy, int dp)
{
    double weights, per_param = cdse_checkpoint_bytes_per_param(strategy->precision, &weights);
    double optimizer = per_param - weights;
    double experts = params->experts;
    double dense = params->total - experts;
    int etp = strategy->etp > 0 ? strategy->etp : strategy->tp;
    double dense_shard = dense / ((double)strategy->tp * strategy->pp);
    double expert_shard = experts / ((double)etp * strategy->ep * strategy->pp);
    /* Replicas of a shard: the distributed optimizer shards over dp x cp (Megatron-Core's
     * data-parallel group with context parallelism); experts over their own data-parallel
     * group, tp cp dp / (etp ep). */
    double dense_copies = (double)(dp > 0 ? dp : 1) * strategy->cp;
    double expert_copies = max2(1.0, dense_copies * strategy->tp / ((double)etp * strategy->ep));
    double shard = dense_shard + expert_shard;
    double sharded = dense_shard / dense_copies + expert_shard / expert_copies;
    cdse_checkpoint_bytes out = {.total = per_param * (dense + experts)};
    if (strategy->zero >= 3)
        out.rank = per_param * sharded;
    else if (strategy->zero >= 1)
        out.rank = weights * shard + optimizer * sharded;
    else
        out.rank = per_param * shard;
    return out;
}

double cdse_daly_interval(double delta, double mttf)
{
    if (!(delta < 2.0 * mttf))
        return mttf;
    double x = delta / (2.0 * mttf);
    return sqrt(2.0 * delta * mttf) * (1.0 + sqrt(x) / 3.0 + x / 9.0) - delta;
}

double cdse_daly_ratio(double tau, double delta, double recover, double mttf)
{
    return tau / (mttf * exp(recover / mttf) * expm1((tau + delta) / mttf));
}

/* Seconds to move `bytes` at `gbs` GB/s; 0 when the bandwidth is unknown (unlimited). */
static double transfer_s(double bytes, double gbs)
{
    return gbs > 0.0 ? bytes / (gbs * GB) : 0.0;
}

/* Stall, durable time and reload time of one checkpoint of `size` by the stack's scheme. */
static void checkpoint_times(const cdse_system *system, const cdse_strategy *strategy,
                             cdse_checkpoint_bytes size, double *stall, double *durable,
                             double *reload)
{
    const cdse_storage *st = &system->storage;
    int writers = system->gpus_per_node < strategy->gpus ? system->gpus_per_node : strategy->gpus;
    double node_bytes = size.rank * writers;
    double read_gbs = st->read_gbs > 0.0 ? st->read_gbs : st->write_gbs;
    double node_read_gbs = st->node_read_gbs > 0.0 ? st->node_read_gbs : st->node_write_gbs;
    double write =
        max2(transfer_s(size.total, st->write_gbs), transfer_s(node_bytes, st->node_write_gbs));
    double read = max2(transfer_s(size.total, read_gbs), transfer_s(node_bytes, node_read_gbs));
    double copy = transfer_s(size.rank, st->host_copy_gbs);
    const cdse_net_level *out = &system->level[system->n_levels - 1];
    double peer = transfer_s(size.rank, out->bandwidth_gbs * out->efficiency);
    /* The space's checkpoint axis (axes.h: 0 = the stack's scheme, else the mode + 1). */
    int mode = strategy->checkpoint > 0  ? strategy->checkpoint - 1
               : strategy->stack != NULL ? strategy->stack->checkpoint
                                         : CDSE_CKPT_SYNC;
    switch (mode) {
    case CDSE_CKPT_ASYNC:
        *stall = copy, *durable = copy + write, *reload = read;
        break;
    case CDSE_CKPT_MEMORY:
        *stall = copy, *durable = copy + peer, *reload = peer;
        break;
    default:
        *stall = write, *durable = write, *reload = read;
        break;
    }
}

void cdse_goodput_eval(const cdse_param_counts *params, const cdse_system *system,
                       const cdse_strategy *strategy, int dp, double iteration_s, cdse_goodput *out)
{
    const cdse_reliability *rel = &system->reliability;
    double gpus = strategy->gpus;
    double nodes = ceil(gpus / system->gpus_per_node);
    double rate = (gpus * (rel->gpu_failures + rel->link_failures) + nodes * rel->node_failures) /
                  (RATE_DAYS * SECONDS_PER_DAY);
    double planned = rel->planned_per_day / SECONDS_PER_DAY;
    *out = (cdse_goodput){.ratio = 1.0};
    if (!(rate > 0.0) && !(planned > 0.0))
        return; /* never interrupted: no checkpoint, the failure-free time exactly */
    cdse_checkpoint_bytes size = cdse_checkpoint_size(params, strategy, dp);
    double stall, durable, reload;
    checkpoint_times(system, strategy, size, &stall, &durable, &reload);
    out->checkpoint_bytes = size.rank;
    out->stall_s = stall;
    out->durable_s = durable;
    double lag = durable - stall; /* an asynchronous save's extra rollback */
    out->recover_s = rel->detect_s + rel->restart_s + reload + rel->replace_share * rel->replace_s;
    double ratio = 1.0;
    if (rate > 0.0) {
        double mttf = 1.0 / rate;
        out->mttf_s = mttf;
        /* A save cannot start before the previous one is durable, nor within an iteration. */
        double tau = max2(max2(cdse_daly_interval(stall, mttf), lag), iteration_s);
        out->interval_s = tau;
        out->lost_s = 0.5 * (tau + stall) + lag;
        /* tau -> 0 with no stall (free checkpoints every instant): the limit e^(-R/M). */
        ratio = tau > 0.0 ? cdse_daly_ratio(tau, stall, out->recover_s + lag, mttf)
                          : exp(-(out->recover_s + lag) / mttf);
        if (tau > mttf)
            out->flag = CDSE_CKPT_FLAG_OVER_MTTF;
    }
    /* A planned interruption is preceded by a checkpoint and costs a restart and a reload. */
    ratio *= max2(0.0, 1.0 - planned * (stall + rel->restart_s + reload));
    out->ratio = ratio;
    out->interruptions_per_s = rate + planned;
}
