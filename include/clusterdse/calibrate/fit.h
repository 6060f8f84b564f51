/* Fitting latency and bandwidth to probe measurements, in the terms of collective.h, and
 * writing a network profile. Pure computation apart from cdse_fit_write_profile. No MPI. */
#ifndef CLUSTERDSE_FIT_H
#define CLUSTERDSE_FIT_H

#include <stdio.h>

#include "clusterdse/calibrate/probe_rows.h"

/* One measured time: `bytes` on a group of `n` ranks took `t_us` microseconds. */
typedef struct cdse_fit_point {
    int n;
    double bytes;
    double t_us;
} cdse_fit_point;

/* Latency per step (us) and effective bandwidth (GB/s, 1e9 bytes/s) as collective.c uses them
 * for one level: allreduce 2(n-1)/n B/bw + 2(n-1) lat; allgather, reduce_scatter, alltoall
 * (n-1)/n B/bw + (n-1) lat; sendrecv B/bw + lat. */
typedef struct cdse_alpha_beta {
    double latency_us;
    double bandwidth_gbs;
} cdse_alpha_beta;

/* A bandwidth the fit could not bound (no measurable size dependence) is written as this. */
#define CDSE_FIT_UNBOUNDED_GBS 1e6

double cdse_fit_steps(int coll, int n);  /* latency multiplier: 2(n-1), n-1 or 1 */
double cdse_fit_volume(int coll, int n); /* bytes multiplier: 2(n-1)/n, (n-1)/n or 1 */
double cdse_fit_predict_us(int coll, const cdse_alpha_beta *ab, int n, double bytes);

/* Weighted least squares with weights 1/t^2 (relative error), latency >= 0 and bandwidth > 0.
 * Needs at least 2 points with different sizes; returns CDSE_EINVAL otherwise. */
int cdse_fit_wls(int coll, const cdse_fit_point *pts, int n_pts, cdse_alpha_beta *out);

/* The same parameters minimising the sum of |relative error| (IRLS), non-negative. */
int cdse_fit_robust(int coll, const cdse_fit_point *pts, int n_pts, cdse_alpha_beta *out);

/* The non-negative pair with the least median relative error (exact search over point pairs). */
int cdse_fit_lmeds(int coll, const cdse_fit_point *pts, int n_pts, cdse_alpha_beta *out);

typedef struct cdse_fit_stats {
    double r2;         /* 1 - SS_res / SS_tot on the times */
    double worst_rel;  /* largest |predicted - measured| / measured */
    double median_rel; /* median of the same */
} cdse_fit_stats;

void cdse_fit_evaluate(int coll, const cdse_alpha_beta *ab, const cdse_fit_point *pts, int n_pts,
                       cdse_fit_stats *stats);

/* Which parameters go into the profile (one pair per collective and level). */
typedef enum cdse_fit_choice {
    CDSE_FIT_SINGLE = 0, /* one fit over all sizes */
    CDSE_FIT_HYBRID,     /* latency of the small-message regime, bandwidth of the large one */
    CDSE_FIT_LARGE,      /* the large-message regime's fit */
    CDSE_FIT_ROBUST,     /* least absolute relative deviation over all sizes */
    CDSE_FIT_LMEDS,      /* least median of relative errors over all sizes */
    CDSE_FIT_CHOICE_COUNT
} cdse_fit_choice;

const char *cdse_fit_choice_name(int choice); /* "single", "hybrid", "large", "robust",
                                               "lmeds" */

typedef struct cdse_fit_result {
    int coll;
    int n_points, n_sizes;
    int group_min, group_max;
    cdse_alpha_beta single;       /* all sizes */
    cdse_alpha_beta small, large; /* the two regimes; equal to single if too few sizes */
    double breakpoint_bytes;      /* largest size of the small regime; 0 = one regime */
    cdse_fit_stats regimes;       /* the two-regime model on all points */
    int choice;                   /* cdse_fit_choice: lowest median relative error */
    cdse_alpha_beta profile;      /* the chosen pair, written to the profile */
    cdse_fit_stats stats;         /* the profile pair on all points */
    double holdout_median;        /* refit on every other size, median rel. error on the rest */
    int holdout_points;           /* 0 if too few sizes for a hold-out check */
} cdse_fit_result;

/* Fits one collective on one level. `pts` need not be sorted. */
int cdse_fit_collective(int coll, const cdse_fit_point *pts, int n_pts, cdse_fit_result *out);

/* The hold-out check: fits (as cdse_fit_collective) on every other distinct size, smallest
 * first, and writes the relative errors of the profile pair on the other sizes to `rel` (room
 * for n_pts). CDSE_EINVAL with fewer than 4 sizes. */
int cdse_fit_holdout(int coll, const cdse_fit_point *pts, int n_pts, double *rel, int *n_rel);

/* Median of v (sorts v in place); 0 for n = 0. */
double cdse_fit_median(double *v, int n);

/* Removes the local reduction from allreduce / reduce_scatter times: a ring reduces
 * (n-1)/n of the buffer per rank; at `reduce_gbs` that takes (n-1)/n B / reduce_gbs. Returns
 * the points with that time subtracted (floored at 1% of the measured time). */
void cdse_fit_remove_reduction(int coll, double reduce_gbs, cdse_fit_point *pts, int n_pts);

/* Fits every collective of the probe rows of level 0 (groups within a node) and level 1 (one
 * rank per node), on t_median and the float rows (or the first dtype's), and writes the fitted
 * pairs into `system`: probe level 0 into level 0, probe level 1 into the outermost level (when
 * the system has two or more). For a job that probes its own allocation before sweeping.
 * Returns the number of (level, collective) pairs written, or a negative code. */
int cdse_fit_apply(const cdse_probe_result *probes, cdse_system *system, cdse_diag *diag);

#endif
