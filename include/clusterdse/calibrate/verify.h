/* Verification: the communication of stored configurations, predicted by the collective model
 * and measured on the allocation, stored as /verify next to the sweep's results. */
#ifndef CLUSTERDSE_VERIFY_H
#define CLUSTERDSE_VERIFY_H

#include <stdio.h>

#include "clusterdse/model/comm_plan.h"
#include "clusterdse/config/job.h"
#include "clusterdse/model/record.h"

/* Collectives one configuration issues: the ops of its communication plan. */
#define CDSE_VERIFY_MAX_OPS CDSE_COMM_PLAN_MAX

/* One replayed collective: a row of /verify. Sizes and times for the configuration as the
 * model sees it, and for the group and message actually run on this allocation (smaller when
 * the allocation or --max-bytes is; `scaled` says so). */
typedef struct cdse_verify_op {
    int32_t top_rank; /* 1 = best stored configuration */
    uint64_t index;   /* position in the space */
    char model[CDSE_NAME_MAX];
    char system[CDSE_NAME_MAX];
    char comm[8];         /* the plan op's group: "tp", "cp", "ep", "pp", "dp", "edp" */
    char collective[16];  /* allreduce, allgather, reduce_scatter, alltoall, sendrecv */
    int32_t group_size;   /* of the configuration */
    int32_t stride;       /* ranks between consecutive members (from the placement) */
    double bytes;         /* message of the configuration, as collective.h counts it */
    double calls;         /* calls per iteration (the plan's) */
    double exposed_share; /* share of calls x predicted on the critical path (the plan's) */
    double predicted_us;  /* model: configuration group and message */
    int32_t run_group_size;
    int32_t run_stride;
    int64_t run_bytes;
    int8_t scaled;           /* 1 if run_* differ from the configuration's */
    double predicted_run_us; /* model: the group and message that ran */
    double measured_us;      /* median over iterations of the slowest rank */
    double measured_avg_us;  /* mean over ranks of the per-rank mean */
    double measured_best_us; /* fastest iteration of the slowest rank */
    double ratio;            /* measured_us / predicted_run_us */
} cdse_verify_op;

/* Configuration `index` of `job` evaluated again, with its communication plan (the store keeps
 * results, not plans): `record` as the sweep made it, `plan` as cdse_evaluate_plan costs it. */
void cdse_verify_plan(const cdse_job *job, uint64_t index, cdse_record *record,
                      cdse_comm_plan *plan);

/* One op per op of `plan` (the evaluator's communication plan of `record`, on `system`): its
 * group, collective, size, stride, bytes, calls and exposed share as the plan gives them, its
 * prediction (cdse_coll_time on the plan's span), and the group and message to run on `world`
 * ranks with at most `max_bytes` per message. Returns the number of ops written
 * (0 .. CDSE_VERIFY_MAX_OPS). Pure. */
int cdse_verify_ops(const cdse_record *record, const cdse_comm_plan *plan, const cdse_model *model,
                    const cdse_system *system, int world, int64_t max_bytes, cdse_verify_op *ops);

/* Writes (replacing) /verify in the HDF5 file at `path` (serial HDF5). */
int cdse_verify_write(const char *path, const cdse_verify_op *ops, int n, cdse_diag *diag);

void cdse_verify_table_header(FILE *out);
void cdse_verify_table_row(FILE *out, const cdse_verify_op *op);

#endif
