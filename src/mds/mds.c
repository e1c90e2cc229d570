/* mds.c — nle_mds, the front door of the MDS family (lecture slides 002,
 * "Classic Metric MDS" to "Non-Metric MDS"; SPEC G06-1..G06-4): checks the
 * options and the dissimilarities, builds the N x N matrix the SMACOF
 * family iterates on (under the memory cap, else the error points to
 * landmark MDS), starts it from the classical solution, and reports the
 * slides' stress measures. */
#include "mds_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The methods' table, in nle_mds_method's order: the direct ones solve an
 * eigenproblem (classical.c), the SMACOF family iterates on the N x N
 * dissimilarities from the classical solution (smacof.c). */
typedef struct {
  nle_status (*direct)(nle_ctx *ctx, const nle_mds_input *in, const nle_mds_opts *o, nle_mds_result *r);
  bool sammon_weights; /* SMACOF with w = 1 / delta */
  bool nonmetric;      /* disparities by PAV */
} mds_method;

static const mds_method methods[] = {
    {nle__mds_classical, false, false}, {NULL, false, false}, {NULL, true, false}, {NULL, false, true},
    {nle__mds_landmark, false, false}};

NLE__ENUM_NAMES(nle_mds_method_name, nle_mds_method_parse, nle_mds_method, NLE_MDS_METHOD_MAP, NLE_MDS_COUNT, false)
NLE__ENUM_NAMES(nle_mds_ties_name, nle_mds_ties_parse, nle_mds_ties, NLE_MDS_TIES_MAP, NLE_TIES_COUNT, false)

void nle_mds_opts_init(nle_mds_opts *o) {
  memset(o, 0, sizeof *o);
  o->dim = 2;
  o->starts = 4;
  o->max_iter = 300;
  o->tol = 1e-6;
  o->ties = NLE_TIES_PRIMARY;
  o->landmarks = NLE_AUTO;
}

void nle_mds_result_free(nle_mds_result **r) {
  if (!r || !*r) return;
  nle_matd_free(&(*r)->X);
  free((*r)->eigenvalues);
  free((*r)->history);
  nle_projection_model_free(&(*r)->model);
  free(*r);
  *r = NULL;
}

/* A dissimilarity matrix the slides' M can be: square, symmetric, zero
 * diagonal, finite and non-negative, not all zero; the first offending
 * entry named. */
static nle_status check_dissimilarities(nle_ctx *ctx, const nle_matd *M, const char *what) {
  size_t n = M->rows;
  if (M->cols != n) return nle__fail(ctx, NLE_ERR_VALUE, "%s is %zu x %zu, not square", what, M->rows, M->cols);
  bool any = false;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double v = M->data[i * n + j], t = M->data[j * n + i];
      if (!isfinite(v))
        return nle__fail(ctx, NLE_ERR_VALUE, "%s: row %zu, column %zu is %g, not finite", what, i, j, v);
      if (v < 0) return nle__fail(ctx, NLE_ERR_VALUE, "%s: row %zu, column %zu is %g, negative", what, i, j, v);
      if (i == j && v != 0)
        return nle__fail(ctx, NLE_ERR_VALUE, "%s: row %zu, column %zu (the diagonal) is %g, not 0", what, i, i, v);
      if (j > i && fabs(v - t) > 1e-12 * fmax(fabs(v), fabs(t)))
        return nle__fail(ctx, NLE_ERR_VALUE, "%s is not symmetric: row %zu, column %zu is %.17g but row %zu, "
                         "column %zu is %.17g", what, i, j, v, j, i, t);
      any = any || v > 0;
    }
  if (!any) return nle__fail(ctx, NLE_ERR_VALUE, "%s: every dissimilarity is 0", what);
  return NLE_OK;
}

static nle_status build_dissimilarities(nle_ctx *ctx, const nle_mds_input *in, float **out) {
  size_t n = in->Y ? in->Y->rows : in->dissimilarities->rows;
  double bytes = (double)n * (double)n * sizeof(float);
  nle_status s = nle__check_memory(ctx, bytes, "the N x N dissimilarities");
  if (s)
    return nle__fail(ctx, s, "the N x N dissimilarities of %zu points need %.2f GiB, over the memory cap (%.2f GiB): "
                     "landmark MDS needs only L x N (nlembed lmds, NLE_MDS_LANDMARK)", n, bytes / 1073741824.0,
                     (double)nle__memory_cap(ctx) / 1073741824.0);
  float *delta = nle__malloc_huge(n * n * sizeof(float));
  if (!delta) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for the N x N dissimilarities");
  if (in->dissimilarities) {
    for (size_t e = 0; e < n * n; e++) delta[e] = (float)in->dissimilarities->data[e];
  } else { /* Euclidean distances of the points, the diagonal exactly 0 */
    s = nle__pairwise(ctx, in->Y, in->Y, NLE__PAIR_DIST_FLOAT, NULL, delta);
    for (size_t i = 0; !s && i < n; i++) delta[i * n + i] = 0.0f;
  }
  if (s) {
    free(delta);
    return s;
  }
  *out = delta;
  return NLE_OK;
}

void nle__mds_measures(nle_ctx *ctx, const float *delta, size_t n, const nle_matd *X, double *stress1,
                       double *normalized, double *sammon, double *raw) {
  (void)ctx;
  size_t d = X->cols;
  double num = 0, sum_d2 = 0, sum_delta2 = 0, sam = 0, sum_delta = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : num, sum_d2, sum_delta2, sam, sum_delta) \
    num_threads(nle__threads_for(ctx, (double)n * (double)n * (double)d))
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      double d2 = 0;
      for (size_t t = 0; t < d; t++) {
        double diff = X->data[i * d + t] - X->data[j * d + t];
        d2 += diff * diff;
      }
      double dist = sqrt(d2), dl = delta[i * n + j], e = (dl - dist) * (dl - dist);
      num += e, sum_d2 += d2, sum_delta2 += dl * dl, sum_delta += dl;
      sam += dl > 0 ? e / dl : 0.0;
    }
  if (stress1) *stress1 = sum_d2 > 0 ? sqrt(num / sum_d2) : NAN;
  if (normalized) *normalized = sum_delta2 > 0 ? sqrt(num / sum_delta2) : NAN;
  if (sammon) *sammon = sum_delta > 0 ? sam / sum_delta : NAN;
  if (raw) *raw = num;
}

nle_status nle_mds_stress(nle_ctx *ctx, const nle_matd *M, const nle_matd *X, double *stress1, double *normalized,
                          double *sammon) {
  if (!M || !X) return nle__fail(ctx, NLE_ERR_ARG, "nle_mds_stress: NULL argument");
  nle_status s = check_dissimilarities(ctx, M, "dissimilarities");
  if (s) return s;
  if (X->rows != M->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "nle_mds_stress: %zu points for %zu dissimilarities", X->rows, M->rows);
  nle_mds_input in = {NULL, M, NULL};
  float *delta = NULL;
  s = build_dissimilarities(ctx, &in, &delta);
  if (s) return s;
  nle__mds_measures(ctx, delta, M->rows, X, stress1, normalized, sammon, NULL);
  free(delta);
  return NLE_OK;
}

static nle_status check_input(nle_ctx *ctx, nle_mds_method method, const nle_mds_input *in, const nle_mds_opts *o) {
  if (!in || (!in->Y == !in->dissimilarities))
    return nle__fail(ctx, NLE_ERR_ARG, "mds: give either the points or a dissimilarity matrix");
  if ((int)method < 0 || method >= NLE_MDS_COUNT)
    return nle__fail(ctx, NLE_ERR_ARG, "mds: unknown method %d", (int)method);
  nle_status s = in->Y ? nle__check_finite_rows(ctx, "points", in->Y) : check_dissimilarities(ctx, in->dissimilarities, "dissimilarities");
  if (s) return s;
  size_t n = in->Y ? in->Y->rows : in->dissimilarities->rows;
  if (o->dim < 1 || (size_t)o->dim >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "mds: {@dim=%s} components of %zu points (1 <= dim < N)", nle__int_text(o->dim).s, n);
  if (o->starts < 1) return nle__fail(ctx, NLE_ERR_ARG, "mds: {@starts=%s} must be >= 1", nle__int_text(o->starts).s);
  if (o->max_iter < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "mds: {@max-iter=%s} must be >= 1", nle__int_text(o->max_iter).s);
  if (!(o->tol >= 0 && o->tol < 1)) return nle__fail(ctx, NLE_ERR_ARG, "mds: {@tol=%g} must be in [0, 1)", o->tol);
  if ((int)o->ties < 0 || o->ties >= NLE_TIES_COUNT) return nle__fail(ctx, NLE_ERR_ARG, "mds: {@ties} has no value %d", o->ties);
  if (o->init && (o->init->rows != n || o->init->cols != (size_t)o->dim))
    return nle__fail(ctx, NLE_ERR_ARG, "mds: the start is %zu x %zu, not %zu x %d", o->init->rows, o->init->cols, n,
                     o->dim);
  if (in->weights) {
    if (method != NLE_MDS_METRIC)
      return nle__fail(ctx, NLE_ERR_ARG, "mds: weights are for metric MDS, not %s", nle_mds_method_name(method));
    if (in->weights->rows != n || in->weights->cols != n)
      return nle__fail(ctx, NLE_ERR_VALUE, "weights: %zu x %zu for %zu points", in->weights->rows, in->weights->cols,
                       n);
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) {
        double w = in->weights->data[i * n + j];
        if (!(w >= 0) || !isfinite(w) || w != in->weights->data[j * n + i])
          return nle__fail(ctx, NLE_ERR_VALUE, "weights: row %zu, column %zu is %g: weights are finite, "
                           "non-negative and symmetric", i, j, w);
      }
  }
  if (o->keep_model && !in->Y && (method == NLE_MDS_CLASSICAL || method == NLE_MDS_LANDMARK))
    return nle__fail(ctx, NLE_ERR_ARG, "mds: the out-of-sample map needs the points, not a dissimilarity matrix");
  return NLE_OK;
}

/* Sammon's stress divides by every delta: a zero off the diagonal (two
 * copies of a point) is refused, naming the pair (SPEC §4.3). */
static nle_status check_sammon(nle_ctx *ctx, const float *delta, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (!(delta[i * n + j] > 0))
        return nle__fail(ctx, NLE_ERR_VALUE, "sammon: rows %zu and %zu are at distance 0 (duplicates): Sammon's "
                         "stress divides by every distance; remove the duplicates", i, j);
  return NLE_OK;
}

nle_status nle_mds(nle_ctx *ctx, nle_mds_method method, const nle_mds_input *input, const nle_mds_opts *opts,
                   nle_mds_result **result) {
  if (!result) return nle__fail(ctx, NLE_ERR_ARG, "nle_mds: NULL result");
  *result = NULL;
  nle_mds_opts o;
  if (opts) o = *opts;
  else nle_mds_opts_init(&o);
  nle_status s = check_input(ctx, method, input, &o);
  if (s) return s;
  size_t n = input->Y ? input->Y->rows : input->dissimilarities->rows;
  if (o.landmarks == NLE_AUTO) o.landmarks = n < 1000 ? (int)n : 1000;
  if (o.init) o.starts = 1;
  double t0 = nle_time_seconds();
  nle_mds_result *r = nle__calloc(ctx, 1, sizeof *r, "the MDS result");
  if (!r) return NLE_ERR_NOMEM;
  r->n = n;
  r->negative_count = 0;
  r->raw_stress = r->stress1 = r->normalized_stress = r->sammon_stress = r->start_stress = NAN;
  const mds_method *m = &methods[method];
  bool opened = nle__stage_begin(ctx, nle_mds_method_name(method));
  if (m->direct) s = m->direct(ctx, input, &o, r);
  /* the N x N matrix: the SMACOF family's, and the direct methods' stress
   * measures (from points only where it is small: they need every pair) */
  float *delta = NULL;
  if (!s && (!m->direct || input->dissimilarities || n <= 20000))
    s = build_dissimilarities(ctx, input, &delta);
  if (!s && m->sammon_weights) s = check_sammon(ctx, delta, n);
  if (!s && !m->direct) {
    nle__dissim S = {n, delta, input->weights ? input->weights->data : NULL, m->sammon_weights};
    nle_matd *start = NULL;
    if (!o.init) { /* the classical solution, as the slides' first start */
      nle_mds_opts co = o;
      co.keep_model = false;
      s = nle__mds_classical(ctx, input, &co, r);
      start = r->X, r->X = NULL;
    }
    if (!s) s = nle__mds_smacof(ctx, m->nonmetric, &S, &o, o.init ? o.init : start, r);
    nle_matd_free(&start);
  }
  if (!s && delta && !m->nonmetric) { /* non-metric: its stress-1 is against the disparities */
    double raw;
    nle__mds_measures(ctx, delta, n, r->X, &r->stress1, &r->normalized_stress, &r->sammon_stress, &raw);
    if (m->direct) r->raw_stress = raw;
  }
  nle__stage_end(ctx, opened);
  free(delta);
  if (s) {
    nle_mds_result_free(&r);
    return s;
  }
  r->resolved = o;
  r->resolved.init = NULL;
  r->seconds = nle_time_seconds() - t0;
  *result = r;
  return NLE_OK;
}
