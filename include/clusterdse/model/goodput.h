/* Goodput: time to train as runs live it, with failures, checkpoints and restarts (issue 29;
 * docs/job-file.md, Failures and checkpoints). Pure: no I/O, no allocation. */
#ifndef CLUSTERDSE_GOODPUT_H
#define CLUSTERDSE_GOODPUT_H

#include "clusterdse/model/hardware.h"
#include "clusterdse/model/strategy.h"
#include "clusterdse/model/workload.h"

/* checkpoint_flag values. */
enum {
    CDSE_CKPT_FLAG_OK = 0,
    /* The interval the job checkpoints at is longer than the mean time to failure: the expected
     * figures hold (Daly's expression is exact for exponential failures) but most intervals
     * end in a failure, a run a designer should not plan on. */
    CDSE_CKPT_FLAG_OVER_MTTF = 1,
};

/* Bytes of a checkpoint: of the whole job, and of the GPU that writes the most. */
typedef struct cdse_checkpoint_bytes {
    double total;
    double rank;
} cdse_checkpoint_bytes;

/* What one configuration's failures and checkpoints cost. */
typedef struct cdse_goodput {
    double checkpoint_bytes;    /* the largest per GPU */
    double stall_s;             /* training paused per checkpoint */
    double durable_s;           /* from the start of a save until it survives a failure */
    double recover_s;           /* detect + restart + reload + replacement share, per failure */
    double mttf_s;              /* mean time to an unexpected failure; 0 = none (no rates) */
    double interval_s;          /* compute time between checkpoints; 0 = none needed */
    double lost_s;              /* expected work redone per failure */
    double ratio;               /* effective training time ratio: failure-free time / wall time */
    double interruptions_per_s; /* unexpected and planned, per second of wall time */
    int flag;                   /* CDSE_CKPT_FLAG_* */
} cdse_goodput;

/* The model's parameter counts a checkpoint needs (cdse_model_params and the routed experts'
 * cdse_model_expert_params), computed once per model by the caller of cdse_goodput_eval. */
typedef struct cdse_param_counts {
    double total;
    double experts;
} cdse_param_counts;

cdse_param_counts cdse_model_param_counts(const cdse_model *model);

/* Bytes per parameter in a checkpoint: the weights at the training precision (2 for bf16, fp16
 * and fp8, whose weights Transformer Engine keeps in bf16; 4 for fp32/tf32) and Adam's state
 * (fp32 first and second moments, plus an fp32 master copy unless the weights are fp32).
 * *weights receives the first part, the return value is the sum. */
double cdse_checkpoint_bytes_per_param(int precision, double *weights);

/* What a checkpoint of `strategy` holds and what its busiest GPU writes, with dp (derived)
 * given. ZeRO 0: data-parallel rank 0 of each model-parallel shard writes the whole shard;
 * ZeRO 1-2: the optimizer state is sharded over dp x cp (experts: their data-parallel group),
 * rank 0 writes the weights too; ZeRO 3: everything sharded. A shard is the model's parameters
 * over tp x pp (experts over etp x ep x pp), spread evenly over the stages (the stages holding
 * the embedding and the output layer write more; not modelled). */
cdse_checkpoint_bytes cdse_checkpoint_size(const cdse_param_counts *params,
                                           const cdse_strategy *strategy, int dp);

/* Daly 2006 (FGCS 22(3):303-312, eq. 37): the optimum compute time between checkpoints of
 * stall `delta` under exponential failures of mean `mttf`:
 *   sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] - delta   for delta < 2M,
 *   M otherwise. Young 1974's sqrt(2 delta M) is its first term. */
double cdse_daly_interval(double delta, double mttf);

/* Daly 2006 eq. 20, exact for exponential failures (failures may also strike during restarts
 * and checkpoints): the ratio of failure-free compute to wall time when every interval of
 * compute `tau` is followed by a stall `delta` and each failure costs `recover` before work
 * resumes: tau / (M e^(R/M) (e^((tau + delta)/M) - 1)). */
double cdse_daly_ratio(double tau, double delta, double recover, double mttf);

/* The goodput of a configuration of iteration time `iteration_s` (its strategy's dp derived)
 * on `system`. No failure rates and no planned interruptions: ratio 1, no checkpoints, the
 * failure-free time exactly. */
void cdse_goodput_eval(const cdse_param_counts *params, const cdse_system *system,
                       const cdse_strategy *strategy, int dp, double iteration_s,
                       cdse_goodput *out);

#endif
