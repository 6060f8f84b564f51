/* Latency / bandwidth fits in the terms of collective.c: t = steps(n) lat + volume(n) B / bw.
 * Weighted least squares with weights 1/t^2 minimises relative error, so that 8-byte and
 * 256-MiB messages count alike. */
#include "clusterdse/calibrate/fit.h"

#include "clusterdse/config/job.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/model/collective.h"

const char *const cdse_fit_level_names[CDSE_FIT_LEVELS + 1] = {"intra_node", "inter_node", NULL};
#ifndef CDSE_VERSION
#define CDSE_VERSION "0"
#endif

/* Minimum distinct sizes per regime for a two-regime fit. */
#define FIT_MIN_REGIME_SIZES 3

/* The collective's own terms (collective.h, cdse_coll_table). */
double cdse_fit_steps(int coll, int n)
{
    return cdse_coll_steps(coll, n);
}

double cdse_fit_volume(int coll, int n)
{
    return cdse_coll_volume(coll, n);
}

/* us per byte <-> GB/s: 1 GB/s moves 1e9 bytes per 1e6 us, i.e. 1e3 bytes per us. */
static double inv_to_gbs(double us_per_byte)
{
    return us_per_byte > 0 ? 1e-3 / us_per_byte : CDSE_FIT_UNBOUNDED_GBS;
}

double cdse_fit_predict_us(int coll, const cdse_alpha_beta *ab, int n, double bytes)
{
    return cdse_fit_steps(coll, n) * ab->latency_us +
           cdse_fit_volume(coll, n) * bytes / (ab->bandwidth_gbs * 1e3);
}

/* Relative residual sum of squares for (lat, inv), each point weighted by w[i] (NULL: 1). */
static double rel_sse_w(int coll, const cdse_fit_point *p, const double *w, int n, double lat,
                        double inv)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double pred =
            cdse_fit_steps(coll, p[i].n) * lat + cdse_fit_volume(coll, p[i].n) * p[i].bytes * inv;
        double r = (pred - p[i].t_us) / p[i].t_us;
        s += (w ? w[i] : 1.0) * r * r;
    }
    return s;
}

static double rel_sse(int coll, const cdse_fit_point *p, int n, double lat, double inv)
{
    return rel_sse_w(coll, p, NULL, n, lat, inv);
}

/* Minimises sum w_i ((steps_i lat + volume_i B_i inv - t_i) / t_i)^2 with lat, inv >= 0. */
static int wls_weighted(int coll, const cdse_fit_point *p, const double *w, int n, double *lat_out,
                        double *inv_out)
{
    /* Rows (a_i, v_i) / t_i against 1: normal equations of a 2-parameter problem. */
    double saa = 0, sav = 0, svv = 0, sa = 0, sv = 0;
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        if (!(p[i].t_us > 0))
            return CDSE_EINVAL;
        double wi = w ? w[i] : 1.0;
        double a = cdse_fit_steps(coll, p[i].n) / p[i].t_us;
        double v = cdse_fit_volume(coll, p[i].n) * p[i].bytes / p[i].t_us;
        saa += wi * a * a;
        sav += wi * a * v;
        svv += wi * v * v;
        sa += wi * a;
        sv += wi * v;
        if (i > 0 && p[i].bytes != p[0].bytes)
            distinct = 1;
    }
    if (n < 2 || !distinct)
        return CDSE_EINVAL;
    /* Non-negative least squares over two variables: the unconstrained optimum if feasible,
     * else the better of the two one-variable fits on the boundary. */
    double best_lat = 0, best_inv = sv / svv, best = rel_sse_w(coll, p, w, n, 0, sv / svv);
    double lat_only = sa / saa, sse_lat = rel_sse_w(coll, p, w, n, lat_only, 0);
    if (sse_lat < best) {
        best = sse_lat;
        best_lat = lat_only;
        best_inv = 0;
    }
    double det = saa * svv - sav * sav;
    if (fabs(det) > 1e-12 * saa * svv) {
        double lat = (sa * svv - sv * sav) / det, inv = (saa * sv - sav * sa) / det;
        if (lat >= 0 && inv >= 0 && rel_sse_w(coll, p, w, n, lat, inv) <= best) {
            best_lat = lat;
            best_inv = inv;
        }
    }
    *lat_out = best_lat;
    *inv_out = best_inv;
    return 0;
}

int cdse_fit_wls(int coll, const cdse_fit_point *p, int n, cdse_alpha_beta *out)
{
    double lat, inv;
    int rc = wls_weighted(coll, p, NULL, n, &lat, &inv);
    if (rc)
        return rc;
    out->latency_us = lat;
    out->bandwidth_gbs = inv_to_gbs(inv);
    return 0;
}

/* Least absolute relative deviation by iteratively reweighted least squares (weights
 * 1 / max(|r_i|, floor)): a few outlying sizes (a cache cliff, a protocol switch) pull it
 * less than the squared fit. */
#define FIT_IRLS_ITERATIONS 50
#define FIT_IRLS_FLOOR      1e-4
int cdse_fit_robust(int coll, const cdse_fit_point *p, int n, cdse_alpha_beta *out)
{
    double *w = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (w == NULL)
        return CDSE_ENOMEM;
    double lat, inv;
    int rc = wls_weighted(coll, p, NULL, n, &lat, &inv);
    for (int it = 0; rc == 0 && it < FIT_IRLS_ITERATIONS; it++) {
        for (int i = 0; i < n; i++) {
            double pred = cdse_fit_steps(coll, p[i].n) * lat +
                          cdse_fit_volume(coll, p[i].n) * p[i].bytes * inv;
            double r = fabs(pred - p[i].t_us) / p[i].t_us;
            w[i] = 1.0 / (r > FIT_IRLS_FLOOR ? r : FIT_IRLS_FLOOR);
        }
        rc = wls_weighted(coll, p, w, n, &lat, &inv);
    }
    free(w);
    if (rc == 0) {
        out->latency_us = lat;
        out->bandwidth_gbs = inv_to_gbs(inv);
    }
    return rc;
}

static int cmp_double(const void *a, const void *b);

/* Median relative error of (lat, inv) over the points; `scratch` has room for n. */
static double median_rel(int coll, const cdse_fit_point *p, int n, double lat, double inv,
                         double *scratch)
{
    for (int i = 0; i < n; i++) {
        double pred =
            cdse_fit_steps(coll, p[i].n) * lat + cdse_fit_volume(coll, p[i].n) * p[i].bytes * inv;
        scratch[i] = fabs(pred - p[i].t_us) / p[i].t_us;
    }
    return cdse_fit_median(scratch, n);
}

/* Least median of relative errors (Rousseeuw 1984, "Least median of squares regression",
 * JASA 79:871): the optimum passes through (or next to) pairs of points, so every pair of
 * points with different sizes is solved exactly, as is every point with latency 0 or with an
 * unbounded bandwidth; the non-negative candidate with the lowest median relative error wins.
 * O(n^3 log n): fine for the few hundred points of one level and collective. */
int cdse_fit_lmeds(int coll, const cdse_fit_point *p, int n, cdse_alpha_beta *out)
{
    double *scratch = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (scratch == NULL)
        return CDSE_ENOMEM;
    double best = INFINITY, best_lat = 0, best_inv = 0;
    for (int i = 0; i < n; i++) {
        double ai = cdse_fit_steps(coll, p[i].n), vi = cdse_fit_volume(coll, p[i].n) * p[i].bytes;
        double cand[2][2] = {{0, p[i].t_us / vi}, {p[i].t_us / ai, 0}};
        for (int k = 0; k < 2; k++) {
            double m = median_rel(coll, p, n, cand[k][0], cand[k][1], scratch);
            if (m < best) {
                best = m;
                best_lat = cand[k][0];
                best_inv = cand[k][1];
            }
        }
        for (int j = i + 1; j < n; j++) {
            if (p[j].bytes == p[i].bytes && p[j].n == p[i].n)
                continue;
            double aj = cdse_fit_steps(coll, p[j].n);
            double vj = cdse_fit_volume(coll, p[j].n) * p[j].bytes;
            double det = ai * vj - aj * vi;
            if (fabs(det) <= 1e-12 * fabs(ai * vj))
                continue;
            double lat = (p[i].t_us * vj - p[j].t_us * vi) / det;
            double inv = (ai * p[j].t_us - aj * p[i].t_us) / det;
            if (lat < 0 || inv < 0)
                continue;
            double m = median_rel(coll, p, n, lat, inv, scratch);
            if (m < best) {
                best = m;
                best_lat = lat;
                best_inv = inv;
            }
        }
    }
    free(scratch);
    if (!isfinite(best))
        return CDSE_EINVAL;
    out->latency_us = best_lat;
    out->bandwidth_gbs = inv_to_gbs(best_inv);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cdse_fit_evaluate(int coll, const cdse_alpha_beta *ab, const cdse_fit_point *p, int n,
                       cdse_fit_stats *st)
{
    memset(st, 0, sizeof *st);
    if (n <= 0)
        return;
    double mean = 0, ss_res = 0, ss_tot = 0;
    double *rel = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
        mean += p[i].t_us / n;
    for (int i = 0; i < n; i++) {
        double pred = cdse_fit_predict_us(coll, ab, p[i].n, p[i].bytes);
        ss_res += (pred - p[i].t_us) * (pred - p[i].t_us);
        ss_tot += (p[i].t_us - mean) * (p[i].t_us - mean);
        double r = fabs(pred - p[i].t_us) / p[i].t_us;
        if (rel)
            rel[i] = r;
        if (r > st->worst_rel)
            st->worst_rel = r;
    }
    st->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
    if (rel) {
        st->median_rel = cdse_fit_median(rel, n);
        free(rel);
    }
}

static int cmp_point(const void *a, const void *b)
{
    const cdse_fit_point *x = a, *y = b;
    if (x->bytes != y->bytes)
        return (x->bytes > y->bytes) - (x->bytes < y->bytes);
    return (x->n > y->n) - (x->n < y->n);
}

/* Distinct sizes of sorted points; writes the first index of each into `start`. */
static int distinct_sizes(const cdse_fit_point *p, int n, int *start)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || p[i].bytes != p[i - 1].bytes)
            start[k++] = i;
    start[k] = n;
    return k;
}

/* Predicted time of the two-regime model. */
static double regimes_predict(const cdse_fit_result *r, const cdse_fit_point *p)
{
    const cdse_alpha_beta *ab =
        r->breakpoint_bytes > 0 && p->bytes > r->breakpoint_bytes ? &r->large : &r->small;
    return cdse_fit_predict_us(r->coll, ab, p->n, p->bytes);
}

/* Fits on sorted points (no hold-out). `choice` >= 0 writes that estimator's pair; -1 the one
 * with the lowest median relative error on these points. */
static int fit_sorted(int coll, const cdse_fit_point *p, int n, int choice, cdse_fit_result *r)
{
    int *start = malloc(sizeof(int) * ((size_t)n + 1));
    if (start == NULL)
        return CDSE_ENOMEM;
    int sizes = distinct_sizes(p, n, start);
    r->coll = coll;
    r->n_points = n;
    r->n_sizes = sizes;
    int rc = cdse_fit_wls(coll, p, n, &r->single);
    if (rc) {
        free(start);
        return rc;
    }
    r->small = r->large = r->single;
    r->breakpoint_bytes = 0;
    /* Breakpoint search: the split between distinct sizes with the lowest total relative SSE. */
    double best = INFINITY;
    for (int k = FIT_MIN_REGIME_SIZES; k + FIT_MIN_REGIME_SIZES <= sizes; k++) {
        int cut = start[k];
        cdse_alpha_beta s, l;
        if (cdse_fit_wls(coll, p, cut, &s) || cdse_fit_wls(coll, p + cut, n - cut, &l))
            continue;
        double sse = rel_sse(coll, p, cut, s.latency_us, 1e-3 / s.bandwidth_gbs) +
                     rel_sse(coll, p + cut, n - cut, l.latency_us, 1e-3 / l.bandwidth_gbs);
        if (sse < best) {
            best = sse;
            r->small = s;
            r->large = l;
            r->breakpoint_bytes = p[cut - 1].bytes;
        }
    }
    free(start);
    /* The profile holds one pair: choose the candidate with the lowest median relative error
     * on the fitted points. */
    cdse_alpha_beta robust = r->single, lmeds = r->single;
    cdse_fit_robust(coll, p, n, &robust);
    cdse_fit_lmeds(coll, p, n, &lmeds);
    cdse_alpha_beta cand[CDSE_FIT_CHOICE_COUNT] = {
        r->single, {r->small.latency_us, r->large.bandwidth_gbs}, r->large, robust, lmeds};
    double best_median = INFINITY;
    for (int c = 0; c < CDSE_FIT_CHOICE_COUNT; c++) {
        cdse_fit_stats st;
        cdse_fit_evaluate(coll, &cand[c], p, n, &st);
        r->candidate[c] = cand[c];
        r->candidate_median[c] = st.median_rel;
        if (choice >= 0 ? c == choice : st.median_rel < best_median - 1e-12) {
            best_median = st.median_rel;
            r->choice = c;
            r->profile = cand[c];
            r->stats = st;
        }
    }
    /* The two-regime model's own goodness of fit. */
    double mean = 0, ss_res = 0, ss_tot = 0, worst = 0;
    for (int i = 0; i < n; i++)
        mean += p[i].t_us / n;
    for (int i = 0; i < n; i++) {
        double pred = regimes_predict(r, &p[i]);
        ss_res += (pred - p[i].t_us) * (pred - p[i].t_us);
        ss_tot += (p[i].t_us - mean) * (p[i].t_us - mean);
        double rel = fabs(pred - p[i].t_us) / p[i].t_us;
        worst = rel > worst ? rel : worst;
    }
    r->regimes.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
    r->regimes.worst_rel = worst;
    return 0;
}

/* Sorted copy of the points. */
static cdse_fit_point *sorted_copy(const cdse_fit_point *pts, int n)
{
    cdse_fit_point *p = malloc(sizeof *p * (size_t)(n > 0 ? n : 1));
    if (p == NULL)
        return NULL;
    memcpy(p, pts, sizeof *p * (size_t)n);
    qsort(p, (size_t)n, sizeof *p, cmp_point);
    return p;
}

int cdse_fit_holdout(int coll, const cdse_fit_point *pts, int n, double *rel, int *n_rel)
{
    return cdse_fit_holdout_as(coll, pts, n, -1, rel, n_rel);
}

int cdse_fit_holdout_as(int coll, const cdse_fit_point *pts, int n, int choice, double *rel,
                        int *n_rel)
{
    *n_rel = 0;
    cdse_fit_point *p = sorted_copy(pts, n);
    cdse_fit_point *train = malloc(sizeof *p * (size_t)(n > 0 ? n : 1));
    int *start = malloc(sizeof(int) * ((size_t)n + 1));
    int rc = CDSE_ENOMEM;
    if (p && train && start) {
        /* Train on sizes 0, 2, 4, ... (by rank among the distinct sizes), test on 1, 3, ... */
        int sizes = distinct_sizes(p, n, start), n_train = 0;
        for (int k = 0; k < sizes; k += 2)
            for (int i = start[k]; i < start[k + 1]; i++)
                train[n_train++] = p[i];
        cdse_fit_result held;
        rc = sizes >= 4 ? fit_sorted(coll, train, n_train, choice, &held) : CDSE_EINVAL;
        for (int k = 1; rc == 0 && k < sizes; k += 2)
            for (int i = start[k]; i < start[k + 1]; i++) {
                double pred = cdse_fit_predict_us(coll, &held.profile, p[i].n, p[i].bytes);
                rel[(*n_rel)++] = fabs(pred - p[i].t_us) / p[i].t_us;
            }
    }
    free(p);
    free(train);
    free(start);
    return rc;
}

int cdse_fit_collective(int coll, const cdse_fit_point *pts, int n, cdse_fit_result *out)
{
    return cdse_fit_collective_as(coll, pts, n, -1, out);
}

int cdse_fit_collective_as(int coll, const cdse_fit_point *pts, int n, int choice,
                           cdse_fit_result *out)
{
    memset(out, 0, sizeof *out);
    if (n < 2)
        return CDSE_EINVAL;
    cdse_fit_point *p = sorted_copy(pts, n);
    double *rel = malloc(sizeof(double) * (size_t)n);
    if (!p || !rel) {
        free(p);
        free(rel);
        return CDSE_ENOMEM;
    }
    out->group_min = out->group_max = p[0].n;
    for (int i = 0; i < n; i++) {
        out->group_min = p[i].n < out->group_min ? p[i].n : out->group_min;
        out->group_max = p[i].n > out->group_max ? p[i].n : out->group_max;
    }
    int rc = fit_sorted(coll, p, n, choice, out);
    int n_rel = 0;
    if (rc == 0 && cdse_fit_holdout_as(coll, p, n, choice, rel, &n_rel) == 0 && n_rel > 0) {
        out->holdout_median = cdse_fit_median(rel, n_rel);
        out->holdout_points = n_rel;
    }
    free(p);
    free(rel);
    return rc;
}

double cdse_fit_median(double *v, int n)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void cdse_fit_remove_reduction(int coll, double reduce_gbs, cdse_fit_point *pts, int n)
{
    if (reduce_gbs <= 0 || !cdse_coll_table[coll].reduces)
        return;
    for (int i = 0; i < n; i++) {
        double reduced = (pts[i].n - 1.0) / pts[i].n * pts[i].bytes;
        double t = pts[i].t_us - reduced / (reduce_gbs * 1e3);
        pts[i].t_us = t > 0.01 * pts[i].t_us ? t : 0.01 * pts[i].t_us;
    }
}

const char *cdse_fit_choice_name(int choice)
{
    static const char *const names[CDSE_FIT_CHOICE_COUNT] = {"single", "hybrid", "large", "robust",
                                                             "lmeds"};
    return choice >= 0 && choice < CDSE_FIT_CHOICE_COUNT ? names[choice] : "?";
}

/* ------------------------------------------------------------------------------------------ */
/* The pipeline: probe rows -> fits -> a system's network -> profile text                     */

static const char *const fit_time_names[CDSE_FT_COUNT] = {"median", "avg", "itermax",
                                                          "min",    "max", "best"};

const char *cdse_fit_time_name(int time)
{
    return time >= 0 && time < CDSE_FT_COUNT ? fit_time_names[time] : "?";
}

void cdse_fit_options_default(cdse_fit_options *options)
{
    options->time = CDSE_FT_MEDIAN;
    options->dtype = -1;
    options->min_bytes = 0;
    options->max_bytes = 1e300;
    options->estimator = -1;
}

void cdse_fit_describe_sizes(const cdse_fit_options *o, char *text, size_t size)
{
    text[0] = '\0';
    if (o->min_bytes > 0 && o->max_bytes < 1e300)
        snprintf(text, size, "from %.0f to %.0f bytes", o->min_bytes, o->max_bytes);
    else if (o->min_bytes > 0)
        snprintf(text, size, "of %.0f bytes and more", o->min_bytes);
    else if (o->max_bytes < 1e300)
        snprintf(text, size, "of at most %.0f bytes", o->max_bytes);
}

static double row_time(const cdse_probe_row *r, int which)
{
    switch (which) {
    case CDSE_FT_ITERMAX:
        return r->t_itermax_us;
    case CDSE_FT_MIN:
        return r->t_min_us;
    case CDSE_FT_MAX:
        return r->t_max_us;
    case CDSE_FT_AVG:
        return r->t_avg_us;
    case CDSE_FT_BEST:
        return r->t_best_us;
    default:
        return r->t_median_us;
    }
}

/* The dtype to fit: the requested one, else float, else the first row's; NULL if absent. */
static const char *pick_dtype(const cdse_probe_result *pr, int wanted)
{
    const char *want = wanted >= 0 ? cdse_probe_dtype_name(wanted) : "float";
    for (int i = 0; i < pr->n_rows; i++)
        if (strcmp(pr->rows[i].dtype, want) == 0)
            return want;
    return wanted < 0 && pr->n_rows > 0 ? pr->rows[0].dtype : NULL;
}

/* The local reduction rate for the dtype: the rate at the largest probed size. */
static double reduce_rate(const cdse_probe_result *pr, const char *dtype, int64_t *at_bytes)
{
    double gbs = 0;
    *at_bytes = 0;
    for (int i = 0; i < pr->n_reduce; i++)
        if (strcmp(pr->reduce[i].dtype, dtype) == 0 && pr->reduce[i].bytes >= *at_bytes) {
            *at_bytes = pr->reduce[i].bytes;
            gbs = pr->reduce[i].gbs;
        }
    return gbs;
}

/* The points of one (level, collective), filtered as the options say. */
static int level_points(const cdse_probe_result *pr, const cdse_probe_fit *fit, int level, int coll,
                        cdse_fit_point *pts)
{
    const cdse_fit_options *o = &fit->options;
    int n = 0;
    for (int i = 0; i < pr->n_rows; i++) {
        const cdse_probe_row *r = &pr->rows[i];
        if (r->level != level || strcmp(r->dtype, fit->dtype) != 0 ||
            strcmp(r->collective, cdse_coll_name(coll)) != 0 || (double)r->bytes < o->min_bytes ||
            (double)r->bytes > o->max_bytes)
            continue;
        double t = row_time(r, o->time);
        if (t > 0)
            pts[n++] = (cdse_fit_point){r->group_size, (double)r->bytes, t};
    }
    return n;
}

/* Fits one (level, collective) from its n points (pts is reordered and overwritten). */
static void fit_one(cdse_level_fit *lf, int coll, cdse_fit_point *pts, int n, double reduce_gbs,
                    int choice)
{
    free(lf->holdout_rel[coll]);
    lf->holdout_rel[coll] = NULL;
    lf->n_holdout[coll] = 0;
    lf->has[coll] = false;
    if (n < 2 || cdse_fit_collective_as(coll, pts, n, choice, &lf->fit[coll]) != 0)
        return;
    lf->has[coll] = true;
    lf->holdout_rel[coll] = malloc(sizeof(double) * (size_t)n);
    if (lf->holdout_rel[coll] != NULL)
        cdse_fit_holdout_as(coll, pts, n, choice, lf->holdout_rel[coll], &lf->n_holdout[coll]);
    if (reduce_gbs > 0 && cdse_coll_table[coll].reduces) {
        cdse_fit_result comm;
        cdse_fit_remove_reduction(coll, reduce_gbs, pts, n);
        if (cdse_fit_collective_as(coll, pts, n, choice, &comm) == 0)
            lf->comm_only_gbs[coll] = comm.profile.bandwidth_gbs;
    }
}

/* The estimator of every pair: the one the options name, else the one whose pairs predict the
 * sizes left out best: the lowest median relative error over every held-out point of every fit
 * (cdse_fit_holdout_as: fit on every other size, predict the rest), the figure `fit` prints as
 * "hold-out". An estimator that follows the fitted points closely (lmeds) can predict the others
 * worse. Without any hold-out point (fewer than 4 sizes per fit): the lowest mean over the fits
 * of the in-sample median relative error. Scores within FIT_ESTIMATOR_TIE (0.1 percentage point,
 * the rounding of a printed time) count as ties and go to the simpler estimator (lower index).
 * fit->estimator_score[] keeps the figures for the printed reason. `pts` has room for every
 * row. Returns CDSE_ENOMEM or 0. */
#define FIT_ESTIMATOR_TIE 1e-3
static int choose_estimator(const cdse_probe_result *pr, cdse_probe_fit *fit, cdse_fit_point *pts)
{
    int total = 0, fits = 0;
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            total += fit->level[l].has[c] ? level_points(pr, fit, l, c, pts) : 0;
    double *rel = malloc(sizeof(double) * (size_t)(total + 1));
    if (rel == NULL)
        return CDSE_ENOMEM;
    fit->estimator_holdout = true;
    for (int e = 0; e < CDSE_FIT_CHOICE_COUNT; e++) {
        int n_rel = 0;
        double in_sample = 0;
        fits = 0;
        for (int l = 0; l < CDSE_FIT_LEVELS; l++)
            for (int c = 0; c < CDSE_COLL_COUNT; c++) {
                if (!fit->level[l].has[c])
                    continue;
                int n = level_points(pr, fit, l, c, pts), got = 0;
                if (cdse_fit_holdout_as(c, pts, n, e, rel + n_rel, &got) == 0)
                    n_rel += got;
                in_sample += fit->level[l].fit[c].candidate_median[e];
                fits++;
            }
        fit->estimator_score[e] = cdse_fit_median(rel, n_rel);
        if (n_rel == 0) {
            fit->estimator_holdout = false;
            fit->estimator_score[e] = in_sample / (fits > 0 ? fits : 1);
        }
    }
    free(rel);
    fit->estimator = 0;
    for (int e = 0; e < CDSE_FIT_CHOICE_COUNT; e++)
        if (fit->estimator_score[e] < fit->estimator_score[fit->estimator] - FIT_ESTIMATOR_TIE)
            fit->estimator = e;
    if (fit->options.estimator >= 0 && fit->options.estimator < CDSE_FIT_CHOICE_COUNT)
        fit->estimator = fit->options.estimator;
    return 0;
}

int cdse_fit_choice_parse(const char *name)
{
    for (int c = 0; c < CDSE_FIT_CHOICE_COUNT; c++)
        if (strcmp(name, cdse_fit_choice_name(c)) == 0)
            return c;
    return -1;
}

int cdse_fit_probes(const cdse_probe_result *pr, const cdse_fit_options *options,
                    cdse_probe_fit *fit, cdse_diag *diag)
{
    memset(fit, 0, sizeof *fit);
    fit->options = *options;
    const char *dtype = pick_dtype(pr, options->dtype);
    if (dtype == NULL) {
        cdse_diag_set(diag, "no probe rows%s%s", options->dtype >= 0 ? " of dtype " : "",
                      options->dtype >= 0 ? cdse_probe_dtype_name(options->dtype) : "");
        return CDSE_EINVAL;
    }
    snprintf(fit->dtype, sizeof fit->dtype, "%s", dtype);
    fit->reduce_gbs = reduce_rate(pr, fit->dtype, &fit->reduce_bytes);
    for (int i = 0; i < pr->n_rows; i++) {
        const cdse_probe_row *r = &pr->rows[i];
        if (strcmp(r->dtype, fit->dtype) != 0)
            continue;
        if (r->level >= 0 && r->level < CDSE_FIT_LEVELS)
            fit->level[r->level].n_rows++;
        else
            fit->mixed++;
    }
    cdse_fit_point *pts = malloc(sizeof *pts * (size_t)(pr->n_rows + 1));
    if (pts == NULL) {
        cdse_diag_set(diag, "out of memory");
        return CDSE_ENOMEM;
    }
    /* First each fit with its own best estimator, to learn how each estimator does on every
     * fit; then one estimator for all (options->estimator, else the lowest mean of the per-fit
     * median relative errors) so that every pair of the profile means the same thing. */
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            fit_one(&fit->level[l], c, pts, level_points(pr, fit, l, c, pts), 0, -1);
            fit->fitted += fit->level[l].has[c];
        }
    if (fit->fitted == 0) {
        free(pts);
        char sizes[96];
        cdse_fit_describe_sizes(options, sizes, sizeof sizes);
        cdse_diag_set(diag, "no collective has 2 or more sizes on level 0 or 1%s%s%s",
                      sizes[0] ? " among the messages " : "", sizes,
                      sizes[0] ? " (--min-bytes, --max-bytes)" : "");
        return CDSE_EINVAL;
    }
    if (choose_estimator(pr, fit, pts) != 0) {
        free(pts);
        cdse_diag_set(diag, "out of memory");
        return CDSE_ENOMEM;
    }
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            if (fit->level[l].has[c])
                fit_one(&fit->level[l], c, pts, level_points(pr, fit, l, c, pts), fit->reduce_gbs,
                        fit->estimator);
    free(pts);
    return 0;
}

void cdse_probe_fit_free(cdse_probe_fit *fit)
{
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            free(fit->level[l].holdout_rel[c]);
            fit->level[l].holdout_rel[c] = NULL;
        }
}

/* Copies the fitted pairs of one probe level into a network level. */
static int apply_level(const cdse_level_fit *lf, cdse_net_level *level)
{
    int written = 0;
    for (int c = 0; c < CDSE_COLL_COUNT; c++) {
        if (!lf->has[c])
            continue;
        level->coll_latency_us[c] = lf->fit[c].profile.latency_us;
        level->coll_bandwidth_gbs[c] = lf->fit[c].profile.bandwidth_gbs;
        written++;
    }
    return written;
}

int cdse_fit_target_level(int probe_level, const cdse_system *system)
{
    if (system->n_levels < 1 || probe_level < 0 || probe_level >= CDSE_FIT_LEVELS)
        return -1;
    if (probe_level == 0)
        return 0;
    return system->n_levels >= 2 ? system->n_levels - 1 : -1;
}

int cdse_fit_to_system_levels(const cdse_probe_fit *fit, cdse_system *system,
                              const bool use[CDSE_FIT_LEVELS], const char *source)
{
    int written = 0;
    for (int l = 0; l < CDSE_FIT_LEVELS; l++) {
        int k = cdse_fit_target_level(l, system);
        if (k < 0 || (use != NULL && !use[l]))
            continue;
        int pairs = apply_level(&fit->level[l], &system->level[k]);
        if (pairs > 0 && source != NULL)
            snprintf(system->level[k].measured, sizeof system->level[k].measured, "%s", source);
        written += pairs;
    }
    return written;
}

int cdse_fit_check_base(const cdse_probe_fit *fit, const cdse_system *base,
                        const bool use[CDSE_FIT_LEVELS], bool force, const char *prefix,
                        const char *inputs, const char *force_hint, FILE *out)
{
    int off = 0;
    for (int l = 0; l < CDSE_FIT_LEVELS; l++) {
        int k = cdse_fit_target_level(l, base);
        if (!use[l] || k < 0)
            continue;
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            if (!fit->level[l].has[c])
                continue;
            double fitted = fit->level[l].fit[c].profile.bandwidth_gbs;
            double datasheet = cdse_level_bandwidth(base, k, c) / 1e9;
            double ratio = fitted / datasheet;
            if (ratio <= CDSE_FIT_BASE_RATIO_MAX && ratio >= 1 / CDSE_FIT_BASE_RATIO_MAX)
                continue;
            off++;
            if (out == NULL)
                continue;
            fprintf(out,
                    "%s level %s: fitted %s bandwidth %.4g GB/s (%s rows) is %.1fx %s %s's "
                    "%.4g GB/s (%s level %s); ",
                    prefix, base->level[k].name, cdse_coll_name(c), fitted, cdse_fit_level_names[l],
                    ratio > 1 ? ratio : 1 / ratio, ratio > 1 ? "above" : "below", base->name,
                    datasheet, base->name, base->level[k].name);
            if (force)
                fprintf(out, "written anyway\n");
            else
                fprintf(out,
                        "refused: the %s may measure another path (MPI on host buffers over "
                        "shared memory instead of NCCL over NVLink, TCP instead of RDMA); check "
                        "them, or %s\n",
                        inputs, force_hint);
        }
    }
    return off;
}

int cdse_fit_to_system(const cdse_probe_fit *fit, cdse_system *system)
{
    return cdse_fit_to_system_levels(fit, system, NULL, "probes");
}

static bool level_measured(const cdse_level_fit *lf)
{
    for (int c = 0; c < CDSE_COLL_COUNT; c++)
        if (lf->has[c])
            return true;
    return false;
}

/* A level from fits alone: the link is the sendrecv fit (point to point), else the collective
 * with the highest bandwidth. */
static void fitted_level(const cdse_level_fit *lf, const char *name, int size, const char *source,
                         cdse_net_level *level)
{
    memset(level, 0, sizeof *level);
    snprintf(level->name, sizeof level->name, "%s", name);
    level->size = size;
    level->efficiency = 1.0;
    for (int c = 0; c < CDSE_COLL_COUNT; c++) {
        bool better = lf->has[c] && (c == CDSE_COLL_SENDRECV ||
                                     (!lf->has[CDSE_COLL_SENDRECV] &&
                                      lf->fit[c].profile.bandwidth_gbs > level->bandwidth_gbs));
        if (better) {
            level->bandwidth_gbs = lf->fit[c].profile.bandwidth_gbs;
            level->latency_us = lf->fit[c].profile.latency_us;
        }
    }
    apply_level(lf, level);
    snprintf(level->measured, sizeof level->measured, "%s", source ? source : "probes");
}

void cdse_fit_network(const cdse_probe_fit *fit, int ranks_per_node, cdse_system *system)
{
    cdse_fit_network_levels(fit, ranks_per_node, NULL, NULL, system);
}

void cdse_fit_network_levels(const cdse_probe_fit *fit, int ranks_per_node,
                             const bool use[CDSE_FIT_LEVELS],
                             const char *const source[CDSE_FIT_LEVELS], cdse_system *system)
{
    bool intra = level_measured(&fit->level[0]) && (use == NULL || use[0]);
    bool inter = level_measured(&fit->level[1]) && (use == NULL || use[1]);
    system->n_levels = 0;
    if (intra)
        fitted_level(&fit->level[0], "intra_node", inter ? ranks_per_node : 0,
                     source ? source[0] : NULL, &system->level[system->n_levels++]);
    if (inter)
        fitted_level(&fit->level[1], "inter_node", 0, source ? source[1] : NULL,
                     &system->level[system->n_levels++]);
}

static void write_fit_comments(FILE *out, const cdse_probe_fit *fit)
{
    fprintf(out, "# Fits (probe level: collective R2, median error, hold-out median error):\n");
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            const cdse_fit_result *f = &fit->level[l].fit[c];
            if (fit->level[l].has[c])
                fprintf(out, "#   %s %s: R2 %.3f, median err %.1f%%, hold-out %.1f%%\n",
                        cdse_fit_level_names[l], cdse_coll_name(c), f->stats.r2,
                        100 * f->stats.median_rel, 100 * f->holdout_median);
        }
    if (fit->reduce_gbs <= 0)
        return;
    fprintf(out,
            "# reduce_bandwidth = %.4g GB/s: local reduction rate (MPI_Reduce_local, %s, %lld B).\n"
            "#   The allreduce / reduce_scatter bandwidths include the reduction; without it:\n",
            fit->reduce_gbs, fit->dtype, (long long)fit->reduce_bytes);
    for (int l = 0; l < CDSE_FIT_LEVELS; l++)
        for (int c = 0; c < CDSE_COLL_COUNT; c++)
            if (fit->level[l].comm_only_gbs[c] > 0)
                fprintf(out, "#   %s %s: %.4g GB/s\n", cdse_fit_level_names[l], cdse_coll_name(c),
                        fit->level[l].comm_only_gbs[c]);
}

static void write_provenance(FILE *out, const cdse_probe_fit *fit, const cdse_probe_info *in,
                             const char *probes_path)
{
    fprintf(out, "# Network profile fitted by clusterdse %s from %s.\n", CDSE_VERSION, probes_path);
    if (in->date[0]) {
        fprintf(out, "# Measured %s on %s: %d ranks on %d node(s), %d per node; plan \"%s\".\n",
                in->date, in->hostnames, in->ranks, in->nodes, in->ranks_per_node, in->plan_name);
        fprintf(out, "# MPI library: %s\n", in->mpi_library);
    }
    if (in->env[0]) {
        fprintf(out, "# Environment selecting collective algorithms:\n");
        const char *line = in->env;
        while (*line) {
            size_t len = strcspn(line, "\n");
            if (len > 0)
                fprintf(out, "#   %.*s\n", (int)len, line);
            line += len + (line[len] == '\n');
        }
    }
    const cdse_fit_options *o = &fit->options;
    fprintf(out, "# Fitted on dtype %s, time t_%s, weighted least squares on relative error.\n",
            fit->dtype, cdse_fit_time_name(o->time));
    char sizes[96];
    cdse_fit_describe_sizes(o, sizes, sizeof sizes);
    if (sizes[0])
        fprintf(out, "# Only messages %s were fitted.\n", sizes);
    fprintf(out, "# Estimator %s for every pair (%s).\n", cdse_fit_choice_name(fit->estimator),
            fit->options.estimator >= 0 ? "--estimator"
            : fit->estimator_holdout    ? "lowest hold-out median relative error"
                                        : "lowest mean median relative error over the fits");
    fprintf(
        out,
        "# Per collective: latency (us per step) and effective bandwidth (GB/s) in the\n"
        "# terms of src/model/collective.c (ring: allreduce 2(n-1)/n B/bw + 2(n-1) lat; ...).\n");
}

int cdse_fit_write_profile(FILE *out, const cdse_probe_fit *fit, const cdse_probe_info *info,
                           const char *probes_path, const cdse_system *system,
                           const char *base_path, const char *name, const char *notes)
{
    write_provenance(out, fit, info, probes_path);
    write_fit_comments(out, fit);
    if (notes != NULL)
        fputs(notes, out);
    if (base_path != NULL) {
        fprintf(out, "# Everything but the network comes from %s.\n", base_path);
        fprintf(out, "base = \"%s\";\n", base_path);
    }
    fprintf(out, "name = \"%s\";\n", name);
    cdse_system_print_network(out, system);
    return ferror(out) ? CDSE_EIO : 0;
}

int cdse_fit_apply(const cdse_probe_result *pr, cdse_system *system, cdse_diag *diag)
{
    if (pr->n_rows == 0 || system->n_levels < 1) {
        cdse_diag_set(diag, "no probe rows or no network levels to fit");
        return CDSE_EINVAL;
    }
    cdse_fit_options options;
    cdse_fit_options_default(&options);
    cdse_probe_fit fit;
    int rc = cdse_fit_probes(pr, &options, &fit, diag);
    if (rc == CDSE_EINVAL) /* nothing to fit: no pairs written, as before */
        rc = 0;
    else if (rc == 0)
        rc = cdse_fit_to_system(&fit, system);
    cdse_probe_fit_free(&fit);
    return rc;
}
