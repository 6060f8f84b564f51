/* Fitting latency and bandwidth to probe measurements, in the terms of collective.h, and
 * writing a network profile. Pure computation apart from cdse_fit_write_profile (which writes
 * to a FILE * the caller gives). No MPI.
 *
 * One pipeline turns probe rows into a network, used by `clusterdse fit` and by a job's probe
 * section alike: cdse_fit_probes (rows -> fits per level and collective), cdse_fit_to_system
 * (fits -> a system's network levels), cdse_fit_write_profile (that network -> profile text). */
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
    cdse_alpha_beta candidate[CDSE_FIT_CHOICE_COUNT]; /* every estimator's pair */
    double candidate_median[CDSE_FIT_CHOICE_COUNT];   /* and its median relative error */
    double holdout_median; /* refit on every other size, median rel. error on the rest */
    int holdout_points;    /* 0 if too few sizes for a hold-out check */
} cdse_fit_result;

/* Fits one collective on one level. `pts` need not be sorted. The profile pair is the
 * estimator with the lowest median relative error on these points; cdse_fit_collective_as with
 * `choice` >= 0 (cdse_fit_choice) writes that estimator's pair instead (and holds it out). */
int cdse_fit_collective(int coll, const cdse_fit_point *pts, int n_pts, cdse_fit_result *out);
int cdse_fit_collective_as(int coll, const cdse_fit_point *pts, int n_pts, int choice,
                           cdse_fit_result *out);
int cdse_fit_choice_parse(const char *name); /* cdse_fit_choice, or -1 */

/* The hold-out check: fits (as cdse_fit_collective) on every other distinct size, smallest
 * first, and writes the relative errors of the profile pair on the other sizes to `rel` (room
 * for n_pts). CDSE_EINVAL with fewer than 4 sizes. */
int cdse_fit_holdout(int coll, const cdse_fit_point *pts, int n_pts, double *rel, int *n_rel);
int cdse_fit_holdout_as(int coll, const cdse_fit_point *pts, int n_pts, int choice, double *rel,
                        int *n_rel);

/* Median of v (sorts v in place); 0 for n = 0. */
double cdse_fit_median(double *v, int n);

/* Removes the local reduction from allreduce / reduce_scatter times: a ring reduces
 * (n-1)/n of the buffer per rank; at `reduce_gbs` that takes (n-1)/n B / reduce_gbs. Returns
 * the points with that time subtracted (floored at 1% of the measured time). */
void cdse_fit_remove_reduction(int coll, double reduce_gbs, cdse_fit_point *pts, int n_pts);

/* Which probe rows and times a fit uses. */
typedef enum cdse_fit_time {
    CDSE_FT_MEDIAN = 0, /* t_median: median over iterations of the slowest rank */
    CDSE_FT_AVG,        /* mean over ranks of the per-rank means */
    CDSE_FT_ITERMAX,    /* mean over iterations of the slowest rank */
    CDSE_FT_MIN,
    CDSE_FT_MAX,
    CDSE_FT_BEST, /* fastest iteration of the slowest rank */
    CDSE_FT_COUNT
} cdse_fit_time;

const char *cdse_fit_time_name(int time); /* "median", "avg", "itermax", "min", "max", "best" */

typedef struct cdse_fit_options {
    int time;                    /* cdse_fit_time */
    int dtype;                   /* cdse_probe_dtype; -1: float if probed, else the first row's */
    double min_bytes, max_bytes; /* rows outside [min, max] are not fitted */
    int estimator;               /* cdse_fit_choice for every pair; -1: chosen (cdse_fit_probes) */
} cdse_fit_options;

/* "of 1048576 bytes and more", "from 8 to 4096 bytes", ... or "" for every size. */
void cdse_fit_describe_sizes(const cdse_fit_options *options, char *text, size_t size);

/* The defaults (median, float, every size): what a job's probe section uses. */
void cdse_fit_options_default(cdse_fit_options *options);

/* Probe rows of level 0 (groups within a node) and 1 (one rank per node); mixed ones are not
 * fitted. */
#define CDSE_FIT_LEVELS 2
/* "intra_node", "inter_node", NULL: the levels as fits, profiles and `clusterdse fit` name them. */
extern const char *const cdse_fit_level_names[CDSE_FIT_LEVELS + 1];

typedef struct cdse_level_fit {
    int n_rows;
    bool has[CDSE_COLL_COUNT];
    cdse_fit_result fit[CDSE_COLL_COUNT];
    double *holdout_rel[CDSE_COLL_COUNT]; /* hold-out relative errors (malloc'd) */
    int n_holdout[CDSE_COLL_COUNT];
    double comm_only_gbs[CDSE_COLL_COUNT]; /* allreduce / reduce_scatter without the reduction */
} cdse_level_fit;

typedef struct cdse_probe_fit {
    cdse_fit_options options;
    char dtype[8];          /* the dtype fitted */
    double reduce_gbs;      /* local reduction rate at the largest size (0: not measured) */
    int64_t reduce_bytes;   /* that size */
    int mixed;              /* rows of mixed groups, not fitted */
    int fitted;             /* (level, collective) pairs fitted */
    int estimator;          /* cdse_fit_choice of every pair */
    bool estimator_holdout; /* scores are hold-out median errors (else in-sample means) */
    double estimator_score[CDSE_FIT_CHOICE_COUNT]; /* each estimator's score (fit.c) */
    cdse_level_fit level[CDSE_FIT_LEVELS];
} cdse_probe_fit;

/* Fits every collective with 2 or more sizes on each level. CDSE_EINVAL (diag filled) when no
 * row has the dtype or nothing can be fitted. Free with cdse_probe_fit_free. */
int cdse_fit_probes(const cdse_probe_result *probes, const cdse_fit_options *options,
                    cdse_probe_fit *fit, cdse_diag *diag);
void cdse_probe_fit_free(cdse_probe_fit *fit);

/* Writes the fitted pairs into `system`: probe level 0 into its level 0, probe level 1 into its
 * outermost level (when it has two or more). Returns the number of pairs written. */
int cdse_fit_to_system(const cdse_probe_fit *fit, cdse_system *system);

/* The system level that probe level `probe_level` describes: 0 the innermost, 1 the outermost
 * (of two or more levels); -1 none. */
int cdse_fit_target_level(int probe_level, const cdse_system *system);

/* cdse_fit_to_system for the probe levels with use[l] (NULL: all); each level written gets
 * `measured = source` (NULL: left alone). */
int cdse_fit_to_system_levels(const cdse_probe_fit *fit, cdse_system *system,
                              const bool use[CDSE_FIT_LEVELS], const char *source);

/* A fitted bandwidth more than this factor away from the level it replaces (either way) is
 * taken for a measurement of another path (MPI over shared memory instead of NCCL over NVLink,
 * TCP instead of RDMA) and refused unless forced (issue 27). */
#define CDSE_FIT_BASE_RATIO_MAX 3.0

/* Checks the fitted bandwidths of the probe levels with use[l] against the `base` levels they
 * would replace (cdse_fit_target_level): each one more than CDSE_FIT_BASE_RATIO_MAX away is one
 * line on `out` (NULL: none), "PREFIX level L: fitted C bandwidth X GB/s (P rows) is Rx
 * below|above BASE's Y GB/s (BASE level L); " then "written anyway" with `force`, else
 * "refused: the INPUTS may measure another path (...); check them, or FORCE_HINT". Returns the
 * number of such bandwidths (refused unless `force`: the caller decides). */
int cdse_fit_check_base(const cdse_probe_fit *fit, const cdse_system *base,
                        const bool use[CDSE_FIT_LEVELS], bool force, const char *prefix,
                        const char *inputs, const char *force_hint, FILE *out);

/* A network from the fits alone, for a profile without a base system: "intra_node" (the ranks
 * of a node, `ranks_per_node`) and "inter_node" levels, whichever were measured, with the link
 * bandwidth and latency of the sendrecv fit (else the fastest collective) and the fitted pairs.
 * With only inter-node rows, one level spanning the system. */
void cdse_fit_network(const cdse_probe_fit *fit, int ranks_per_node, cdse_system *system);
/* The same for the probe levels with use[l] (NULL: all), each marked measured = source[l]. */
void cdse_fit_network_levels(const cdse_probe_fit *fit, int ranks_per_node,
                             const bool use[CDSE_FIT_LEVELS],
                             const char *const source[CDSE_FIT_LEVELS], cdse_system *system);

/* The profile text: provenance comments (the probes, `probes_path`, how they were fitted, then
 * `notes` verbatim when not NULL),
 * `base = "base_path";` when base_path is not NULL, `name = "name";` and the network of
 * `system` (cdse_system_print_network). Deterministic: the same probes and system give the same
 * bytes. */
int cdse_fit_write_profile(FILE *out, const cdse_probe_fit *fit, const cdse_probe_info *info,
                           const char *probes_path, const cdse_system *system,
                           const char *base_path, const char *name, const char *notes);

/* cdse_fit_probes with the default options, then cdse_fit_to_system: for a job that probes its
 * own allocation before sweeping. Returns the number of (level, collective) pairs written, or a
 * negative code. */
int cdse_fit_apply(const cdse_probe_result *probes, cdse_system *system, cdse_diag *diag);

#endif
