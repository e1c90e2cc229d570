/* lle.c — locally linear embedding (lecture slides 002, "Locally Linear
 * Embeddings"; Roweis and Saul 2000). Each point's reconstruction weights
 * from its k neighbours,
 *   min_w |y_i - sum_j w_ij y_j|^2  s.t.  sum_j w_ij = 1,
 * by the local Gram system G w = 1 (G_ab = (y_a - y_i).(y_b - y_i)), then
 * the embedding
 *   min_X sum_i |x_i - sum_j w_ij x_j|^2  s.t.  sum_i x_i = 0,
 *                                              (1/N) sum_i x_i x_i^T = I,
 * the d bottom eigenvectors after the constant one of the sparse
 * M = (I - W)^T (I - W), scaled by sqrt N (the slides' constraints; SPEC
 * G06-5). The regulariser: reg x trace(G) added to G's diagonal, which the
 * slides leave out and which k > D needs (the weights are then not unique;
 * dissertation sec. 4.4 says the same of LLL's Z); with k <= D it moves
 * the weights by O(reg), as scikit-learn's (same default, 1e-3). */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Solves the SPD k x k system G x = b in place by Cholesky (b becomes x);
 * 0 when G is not positive definite. */
static int cholesky_solve(double *G, double *b, int k) {
  for (int j = 0; j < k; j++) {
    double d = G[j * k + j];
    for (int p = 0; p < j; p++) d -= G[j * k + p] * G[j * k + p];
    if (!(d > 0)) return 0;
    d = sqrt(d);
    G[j * k + j] = d;
    for (int i = j + 1; i < k; i++) {
      double v = G[i * k + j];
      for (int p = 0; p < j; p++) v -= G[i * k + p] * G[j * k + p];
      G[i * k + j] = v / d;
    }
  }
  for (int i = 0; i < k; i++) { /* L y = b */
    double v = b[i];
    for (int p = 0; p < i; p++) v -= G[i * k + p] * b[p];
    b[i] = v / G[i * k + i];
  }
  for (int i = k - 1; i >= 0; i--) { /* L^T x = y */
    double v = b[i];
    for (int p = i + 1; p < k; p++) v -= G[p * k + i] * b[p];
    b[i] = v / G[i * k + i];
  }
  return 1;
}

void nle__barycentre_weights(const float *y, const float *Y, size_t D, const int32_t *idx, int k, double reg,
                             double *scratch, double *w) {
  double *Z = scratch, *G = Z + (size_t)k * D;
  for (int a = 0; a < k; a++) {
    const float *ya = Y + (size_t)idx[a] * D;
    for (size_t t = 0; t < D; t++) Z[(size_t)a * D + t] = (double)ya[t] - (double)y[t];
  }
  for (int a = 0; a < k; a++)
    for (int c = 0; c <= a; c++) {
      double g = 0.0;
      for (size_t t = 0; t < D; t++) g += Z[(size_t)a * D + t] * Z[(size_t)c * D + t];
      G[a * k + c] = G[c * k + a] = g;
    }
  nle__gram_weights(G, k, reg, w);
}


void nle__gram_weights(double *G, int k, double reg, double *w) {
  double trace = 0.0;
  for (int a = 0; a < k; a++) trace += G[a * k + a];
  /* a point at its neighbours' position (duplicates): trace 0, the
   * regulariser alone, uniform weights */
  double r = trace > 0 ? reg * trace : (reg > 0 ? reg : 1.0);
  for (int a = 0; a < k; a++) G[a * k + a] += r, w[a] = 1.0;
  if (!cholesky_solve(G, w, k))
    for (int a = 0; a < k; a++) w[a] = 1.0; /* reg = 0 and a singular G: the centroid */
  double sum = 0.0;
  for (int a = 0; a < k; a++) sum += w[a];
  for (int a = 0; a < k; a++) w[a] /= sum;
}

/* LLE's block for point i: v v^T on (i, its neighbours), v = (1, -w),
 * w the regularised reconstruction weights, given as v (a rank-one
 * model). scratch: k D + k^2 + k. */
static int lle_local(const void *model, const nle__spectral_job *job, size_t i, int32_t *idx, double *block,
                     double *scratch) {
  (void)model;
  const nle_csr *knn = job->knn;
  size_t D = job->Y->cols;
  int64_t q0 = knn->rowptr[i];
  int k = (int)(knn->rowptr[i + 1] - q0), m = k + 1;
  double *w = scratch + (size_t)k * D + (size_t)k * (size_t)k;
  nle__barycentre_weights(job->Y->data + i * D, job->Y->data, D, knn->colind + q0, k, job->o->reg, scratch, w);
  idx[0] = (int32_t)i;
  for (int a = 0; a < k; a++) idx[a + 1] = knn->colind[q0 + a];
  for (int a = 0; a < m; a++) block[a] = a ? -w[a - 1] : 1.0;
  return m;
}

/* The largest k over the rows of the kNN graph. */
int nle__max_row(const nle_csr *knn) {
  int64_t k = 0;
  for (int64_t i = 0; i < knn->rows; i++) k = knn->rowptr[i + 1] - knn->rowptr[i] > k ? knn->rowptr[i + 1] - knn->rowptr[i] : k;
  return (int)k;
}

static nle_status lle_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  int k = nle__max_row(job->knn);
  size_t D = job->Y->cols;
  if (job->o->reg == 0 && (size_t)k > D)
    return nle__fail(ctx, NLE_ERR_ARG, "lle: {@neighbors=%d} neighbours in %zu dimensions make the weights not "
                     "unique; a regulariser {@reg} > 0 is needed", k, D);
  nle__local_model lm = {"lle", NULL, k + 1, (size_t)k * D + (size_t)k * (size_t)k + (size_t)k, lle_local, true};
  return nle__alignment_embed(ctx, job, &lm, r);
}

/* The LLE family's map of a new point: its reconstruction weights from its
 * own k nearest (Bengio et al. 2004), the training rows of X combined by
 * them. Scratch: the Gram system of k neighbours (an epsilon ball may hold
 * more: then the grown buffer), and the weights. */
static size_t weights_scratch(const nle_spectral_model *m) {
  size_t k = (size_t)m->opts.k;
  return (k * m->D + k * k + m->n) * sizeof(double);
}

static int weights_point(const nle__oos_point *p, void *scratch, double *x) {
  const nle_spectral_model *m = p->m;
  size_t d = m->dim, nf = p->nf, k = (size_t)m->opts.k;
  double *gram = scratch, *w = gram + k * m->D + k * k;
  if (p->self >= 0) { /* its own reconstruction: weight 1 on itself */
    memcpy(x, m->X->data + (size_t)p->self * d, d * sizeof(double));
    return 1;
  }
  if (!p->count) return 0;
  size_t need = nf * m->D + nf * nf;
  if (nf > k && need > *p->grown_doubles) {
    double *grown = realloc(*p->grown, need * sizeof(double));
    if (!grown) return -1;
    *p->grown = grown, *p->grown_doubles = need;
  }
  nle__barycentre_weights(p->y, m->Y->data, m->D, p->fwd, (int)nf, m->opts.reg, nf > k ? *p->grown : gram, w);
  for (size_t t = 0; t < d; t++) x[t] = 0.0;
  for (size_t a = 0; a < nf; a++)
    for (size_t t = 0; t < d; t++) x[t] += w[a] * m->X->data[(size_t)p->fwd[a] * d + t];
  return 1;
}

const nle__spectral_map nle__weights_map = {"reconstruction weights", true, weights_scratch, weights_point,
                                            NULL, NULL, NULL};

const nle__spectral_method nle__spectral_lle = {"lle", NLE_COMPONENTS_JOIN, false, true, true, false, lle_embed,
                                                &nle__weights_map};
