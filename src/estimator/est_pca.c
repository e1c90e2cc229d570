/* est_pca.c — the estimator family of PCA: nle_pca_fit, its map kept as
 * a linear "projection-model" x = A (y - mean) (A the components, divided
 * by the square roots of their variances when whitened) and the reverse
 * map y = mean + A^+ x. */
#include "estimator_internal.h"

#include "../core/internal.h"
#include "../mds/mds_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const methods[] = {"pca", NULL};
static const char *const abouts[] = {
    "Principal component analysis: INPUT projected on its leading principal components (exact or randomized).", NULL};

static int variant_of(const char *method) {
  (void)method;
  return 0;
}

static void opts_init(void *opts, int variant) {
  (void)variant;
  nle_pca_opts_init(opts);
}

NLE__ENUM_NAME_OF(nle_pca_solver_name, nle_pca_solver)

#define AT(f) offsetof(nle_pca_opts, f)
static const nle__option options[] = {
    {.name = "dim", .kind = NLE__OPT_INT, .offset = AT(n_components), NLE__INT_FROM(1), .short_name = 'd',
     .metavar = "N", .help = "components to keep"},
    {.name = "center", .kind = NLE__OPT_BOOL, .offset = AT(center), .alias = "no-center", .help = "subtract the mean"},
    {.name = "whiten", .kind = NLE__OPT_BOOL, .offset = AT(whiten), .help = "scale every component to unit variance"},
    {.name = "solver", .kind = NLE__OPT_ENUM, .offset = AT(solver), .auto_ok = true, .enum_name = nle_pca_solver_name_of,
     .enum_parse = nle_pca_solver_parse, .metavar = "NAME",
     .help = "auto, exact (covariance eigendecomposition) or randomized (range finder + SVD; auto picks it for "
             "D > 1000 and dim <= D / 10)"},
    {.name = "oversample", .kind = NLE__OPT_INT, .offset = AT(oversample), NLE__INT_FROM(0), .metavar = "N",
     .help = "randomized: extra directions"},
    {.name = "power-iters", .kind = NLE__OPT_INT, .offset = AT(power_iters), NLE__INT_FROM(0), .metavar = "N",
     .help = "randomized: subspace iterations"},
    {.name = NULL}};

/* The PCA model as the linear map the projection model files hold. */
static nle_status as_projection(nle_ctx *ctx, const nle_pca_model *m, nle_projection_model **out) {
  size_t D = (size_t)m->dim, d = (size_t)m->n_components;
  nle_status s = nle__projection_new(ctx, "pca", NLE_MAP_LINEAR, 0, D, d, NULL, out);
  if (s) return s;
  nle_projection_model *p = *out;
  memcpy(p->mean, m->mean, D * sizeof *p->mean);
  for (size_t t = 0; t < d; t++) {
    double scale = m->whiten && m->explained_variance[t] > 0 ? 1.0 / sqrt(m->explained_variance[t]) : 1.0;
    for (size_t j = 0; j < D; j++) p->A[t * D + j] = scale * m->components[t * D + j];
  }
  return NLE_OK;
}

static nle_status fit(nle_estimator *e, const nle__est_input *in) {
  if (!in->Y || in->distances) return nle__fail(e->ctx, NLE_ERR_ARG, "pca: takes dense points");
  const nle_pca_opts *o = e->opts;
  nle_pca_model *m = NULL;
  double t0 = nle_time_seconds();
  nle_status s = nle_pca_fit(e->ctx, in->Y, o, &m);
  nle_matd *X = NULL;
  if (!s) s = nle_pca_transform(e->ctx, m, in->Y, &X);
  double seconds = nle_time_seconds() - t0;
  if (!s) s = nle__est_keep_resolved(e, o);
  if (!s) {
    ((nle_pca_opts *)e->resolved)->solver = m->solver_used;
    e->X = X;
    X = NULL;
    if (e->keep_model) {
      nle_projection_model *p = NULL;
      s = as_projection(e->ctx, m, &p);
      e->model = p;
    }
  }
  if (!s) {
    nle__est_report_options(e, e->resolved);
    nle__json *j = &e->report;
    double kept = 0;
    for (int i = 0; i < m->n_components; i++) kept += m->explained_variance[i];
    double ratio = m->total_variance > 0 ? kept / m->total_variance : 0;
    nle__json_printf(j, ", \"components\": %d, \"seconds\": %.3f", m->n_components, seconds);
    nle__json_number(j, "total_variance", m->total_variance);
    nle__json_number(j, "explained_variance_ratio_sum", ratio);
    nle__json_numbers(j, "explained_variance", m->explained_variance, (size_t)m->n_components);
    char summary[160];
    snprintf(summary, sizeof summary, "PCA %zu-D to %d-D (%s), %.1f%% of the variance", e->D, m->n_components,
             nle_pca_solver_name(m->solver_used), 100 * ratio);
    nle__json_string(j, "summary", summary);
  }
  nle_matd_free(&X);
  nle_pca_model_free(&m);
  return s;
}

/* y = mean + A^+ x: A's rows are orthogonal, so A^+ = A^T diag(1 / |a_t|^2). */
static nle_status inverse(nle_estimator *e, const nle_matd *X, nle_matf **Y, nle_matd **Yd) {
  (void)Yd; /* in floats, as the data */
  const nle_projection_model *p = e->model;
  size_t D = p->D, d = p->dim;
  if (X->cols != d)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "pca inverse: the points have %zu columns, the embedding %zu", X->cols, d);
  nle_status s = nle_matf_alloc(e->ctx, X->rows, D, Y);
  if (s) return s;
  double *norm2 = malloc(d * sizeof *norm2);
  if (!norm2) {
    nle_matf_free(Y);
    return nle__fail(e->ctx, NLE_ERR_NOMEM, "pca: out of memory");
  }
  for (size_t t = 0; t < d; t++) {
    double n2 = 0;
    for (size_t j = 0; j < D; j++) n2 += p->A[t * D + j] * p->A[t * D + j];
    norm2[t] = n2 > 0 ? n2 : 1;
  }
  for (size_t i = 0; i < X->rows; i++) {
    float *y = (*Y)->data + i * D;
    for (size_t j = 0; j < D; j++) {
      double v = p->mean[j];
      for (size_t t = 0; t < d; t++) v += X->data[i * d + t] / norm2[t] * p->A[t * D + j];
      y[j] = (float)v;
    }
  }
  free(norm2);
  nle__est_map_report(e, "linear inverse", p->method);
  return NLE_OK;
}

const nle__family nle__family_pca = {
    .methods = methods,
    .abouts = abouts,
    .variant_of = variant_of,
    .opts_size = sizeof(nle_pca_opts),
    .opts_init = opts_init,
    .options = options,
    .fit = fit,
    .transform = nle__est_projection_transform,
    .inverse = inverse,
    .save = nle__est_projection_save,
    .free_model = nle__est_projection_free,
    /* x = A (y - mean), row by row, the same bits wherever a row falls in
     * the blocks (the kernel and triangulation maps of the MDS family's
     * projection models are not: their pairwise products round by their
     * place in a block, so they are not flagged) */
    .maps_by_rows = true,
};
