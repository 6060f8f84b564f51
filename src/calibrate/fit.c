/* Latency / bandwidth fits in the terms of collective.c: t = steps(n) lat + volume(n) B / bw.
 * Weighted least squares with weights 1/t^2 minimises relative error, so that 8-byte and
 * 256-MiB messages count alike. */
#include "clusterdse/calibrate/fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/model/collective.h"

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

/* Fits on sorted points (no hold-out). */
static int fit_sorted(int coll, const cdse_fit_point *p, int n, cdse_fit_result *r)
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
        if (st.median_rel < best_median - 1e-12) {
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
        rc = sizes >= 4 ? fit_sorted(coll, train, n_train, &held) : CDSE_EINVAL;
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
    int rc = fit_sorted(coll, p, n, out);
    int n_rel = 0;
    if (rc == 0 && cdse_fit_holdout(coll, p, n, rel, &n_rel) == 0 && n_rel > 0) {
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

int cdse_fit_apply(const cdse_probe_result *pr, cdse_system *system, cdse_diag *diag)
{
    if (pr->n_rows == 0 || system->n_levels < 1) {
        cdse_diag_set(diag, "no probe rows or no network levels to fit");
        return CDSE_EINVAL;
    }
    const char *dtype = pr->rows[0].dtype;
    for (int i = 0; i < pr->n_rows; i++)
        if (strcmp(pr->rows[i].dtype, "float") == 0)
            dtype = "float";
    cdse_fit_point *pts = malloc(sizeof *pts * (size_t)pr->n_rows);
    if (pts == NULL)
        return CDSE_ENOMEM;
    int written = 0;
    for (int l = 0; l < 2; l++) {
        int target = l == 0 ? 0 : system->n_levels - 1;
        if (l == 1 && target == 0)
            break;
        for (int c = 0; c < CDSE_COLL_COUNT; c++) {
            int n = 0;
            for (int i = 0; i < pr->n_rows; i++) {
                const cdse_probe_row *r = &pr->rows[i];
                if (r->level == l && strcmp(r->dtype, dtype) == 0 &&
                    strcmp(r->collective, cdse_coll_name(c)) == 0 && r->t_median_us > 0)
                    pts[n++] = (cdse_fit_point){r->group_size, (double)r->bytes, r->t_median_us};
            }
            cdse_fit_result fit;
            if (n < 2 || cdse_fit_collective(c, pts, n, &fit) != 0)
                continue;
            system->level[target].coll_latency_us[c] = fit.profile.latency_us;
            system->level[target].coll_bandwidth_gbs[c] = fit.profile.bandwidth_gbs;
            written++;
        }
    }
    free(pts);
    if (written == 0)
        cdse_diag_set(diag, "no collective has 2 or more sizes on level 0 or 1");
    return written;
}
