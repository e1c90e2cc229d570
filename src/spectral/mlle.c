/* mlle.c — modified LLE (Zhang and Wang 2007, "MLLE: modified locally
 * linear embedding using multiple weights", NIPS 19; the lecture slides
 * 002 name it, the dissertation's sec. 4.2 describes it as "multiple local
 * weight vectors", SPEC G06-12). LLE's single weight vector per point is
 * ill-determined when k > d; MLLE keeps s_i of them, the local Gram
 * matrix's bottom eigenvectors, combined by a Householder reflection so
 * that each sums to the regularised weights' direction:
 *   V_i   the s_i bottom eigenvectors of G_i (k x k, neighbours about y_i),
 *   w_i   the regularised LLE weights, from G_i's spectrum (reg 1e-3 of
 *         its trace, as LLE),
 *   alpha = |V_i^T 1| / sqrt s_i,  h = alpha 1_s - V_i^T 1 (normalised),
 *   W_i   = (I - 2 h h^T) reflection of V_i + (1 - alpha) w_i 1^T,
 * and the block on (i, its neighbours) is [-1; W_i] [-1; W_i]^T. s_i is
 * the largest number l <= k - d of bottom eigenvalues whose sum stays
 * below eta times the other k - l's, eta the median over the points of
 * the ratio at l = k - d (their sec. 3.2). The alignment and eigenproblem
 * are LLE's (alignment.c). */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double eta; /* the median ratio of the bottom k - d eigenvalues to the top d */
} mlle_model;

/* G_i's eigenpairs, descending: scratch k D + 2 k^2 + k; V at + k D + k^2,
 * the values at + k D + 2 k^2. */
static void local_gram(const nle__spectral_job *job, size_t i, int k, double *scratch) {
  const nle_csr *knn = job->knn;
  size_t D = job->Y->cols;
  int64_t q0 = knn->rowptr[i];
  double *Z = scratch, *C = Z + (size_t)k * D, *V = C + (size_t)k * (size_t)k, *vals = V + (size_t)k * (size_t)k;
  const float *yi = job->Y->data + i * D;
  for (int a = 0; a < k; a++)
    for (size_t t = 0; t < D; t++) Z[(size_t)a * D + t] = (double)job->Y->data[(size_t)knn->colind[q0 + a] * D + t] - yi[t];
  for (int a = 0; a < k; a++)
    for (int c = 0; c <= a; c++) {
      double g = 0.0;
      for (size_t t = 0; t < D; t++) g += Z[(size_t)a * D + t] * Z[(size_t)c * D + t];
      C[a * k + c] = C[c * k + a] = g;
    }
  nle__jacobi_eig(C, k, vals, V);
  for (int a = 0; a < k; a++) vals[a] = fmax(vals[a], 0.0); /* a Gram matrix: rounding below 0 is 0 */
}

static double tail_ratio(const double *vals, int k, int d) {
  double top = 0.0, rest = 0.0;
  for (int a = 0; a < k; a++) {
    if (a < d) top += vals[a];
    else rest += vals[a];
  }
  return top > 0 ? rest / top : 0.0;
}

/* scratch: k D + 2 k^2 + k (Gram) + 3 k + k k (weights, h, W) */
static int mlle_local(const void *model, const nle__spectral_job *job, size_t i, int32_t *idx, double *block,
                      double *scratch) {
  const mlle_model *mm = model;
  const nle_csr *knn = job->knn;
  size_t D = job->Y->cols;
  int d = job->o->dim;
  int64_t q0 = knn->rowptr[i];
  int k = (int)(knn->rowptr[i + 1] - q0), m = k + 1;
  local_gram(job, i, k, scratch);
  double *V = scratch + (size_t)k * D + (size_t)k * (size_t)k, *vals = V + (size_t)k * (size_t)k;
  double *w = vals + k, *h = w + k, *ones_v = h + k, *W = ones_v + k;
  /* regularised weights: G^-1 1 through the eigenpairs, reg 1e-3 trace */
  double trace = 0.0;
  for (int a = 0; a < k; a++) trace += vals[a];
  double reg = job->o->reg * (trace > 0 ? trace : 1.0);
  for (int c = 0; c < k; c++) { /* (V^T 1)_c / (lambda_c + reg) */
    double s = 0.0;
    for (int a = 0; a < k; a++) s += V[a * k + c];
    ones_v[c] = s / (vals[c] + reg);
  }
  double sum = 0.0;
  for (int a = 0; a < k; a++) {
    double v = 0.0;
    for (int c = 0; c < k; c++) v += V[a * k + c] * ones_v[c];
    w[a] = v;
    sum += v;
  }
  for (int a = 0; a < k; a++) w[a] /= sum;
  /* s_i: the most bottom eigenvalues, at most k - d, whose sum stays
   * below eta times the rest's (their eq. 11); at least 1 */
  int si = 1;
  for (int l = k - d; l >= 1; l--) {
    double bottom = 0.0, rest = 0.0;
    for (int a = 0; a < k; a++) {
      if (a >= k - l) bottom += vals[a];
      else rest += vals[a];
    }
    if (bottom < mm->eta * rest) {
      si = l;
      break;
    }
  }
  /* Vi = the last si columns of V; alpha, h */
  double norm_sum = 0.0;
  for (int c = 0; c < si; c++) {
    double s = 0.0;
    for (int a = 0; a < k; a++) s += V[a * k + (k - si + c)];
    ones_v[c] = s; /* V_i^T 1 */
    norm_sum += s * s;
  }
  double alpha = sqrt(norm_sum) / sqrt((double)si), hn = 0.0;
  for (int c = 0; c < si; c++) h[c] = alpha - ones_v[c], hn += h[c] * h[c];
  hn = sqrt(hn);
  for (int c = 0; c < si; c++) h[c] = hn < 1e-12 ? 0.0 : h[c] / hn;
  /* W (k x si) = V_i - 2 (V_i h) h^T + (1 - alpha) w 1^T */
  for (int a = 0; a < k; a++) {
    double vh = 0.0;
    for (int c = 0; c < si; c++) vh += V[a * k + (k - si + c)] * h[c];
    for (int c = 0; c < si; c++) W[a * si + c] = V[a * k + (k - si + c)] - 2.0 * vh * h[c] + (1.0 - alpha) * w[a];
  }
  /* block = What What^T on (i, neighbours), What's row 0 = -1 (each column) */
  idx[0] = (int32_t)i;
  for (int a = 0; a < k; a++) idx[a + 1] = knn->colind[q0 + a];
  for (int a = 0; a < m; a++)
    for (int b = 0; b < m; b++) {
      double v = 0.0;
      for (int c = 0; c < si; c++) v += (a ? W[(a - 1) * si + c] : -1.0) * (b ? W[(b - 1) * si + c] : -1.0);
      block[a * m + b] = v;
    }
  return m;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  const nle__spectral_job *job;
  int k;
  double *ratio;
} ratio_job;

static int ratio_block(void *job, size_t b, void *scratch) {
  const ratio_job *j = job;
  size_t n = (size_t)j->job->knn->rows, i1 = (b + 1) * 256 < n ? (b + 1) * 256 : n;
  for (size_t i = b * 256; i < i1; i++) {
    int k = (int)(j->job->knn->rowptr[i + 1] - j->job->knn->rowptr[i]);
    local_gram(j->job, i, k, scratch);
    const double *vals = (double *)scratch + (size_t)k * j->job->Y->cols + 2 * (size_t)k * (size_t)k;
    j->ratio[i] = tail_ratio(vals, k, j->job->o->dim);
  }
  return 0;
}

static nle_status mlle_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  nle_status s = nle__check_tangent_dim(ctx, job, "mlle");
  if (s) return s;
  int k = nle__max_row(job->knn), d = job->o->dim;
  size_t n = (size_t)job->knn->rows, D = job->Y->cols;
  if (job->k <= d)
    return nle__fail(ctx, NLE_ERR_ARG, "mlle: {@neighbors=%d} neighbours; modified LLE needs k > d = %d ({@dim})", job->k, d);
  if (!(job->o->reg > 0)) return nle__fail(ctx, NLE_ERR_ARG, "mlle: the regulariser {@reg} must be > 0");
  /* eta: the median over the points of the bottom-to-top eigenvalue ratio */
  ratio_job rj = {job, k, nle__malloc(ctx, n * sizeof(double), "MLLE's ratios")};
  if (!rj.ratio) return NLE_ERR_NOMEM;
  size_t gram = (size_t)k * D + 2 * (size_t)k * (size_t)k + (size_t)k;
  s = nle__for_blocks(ctx, "MLLE ratios", (n + 255) / 256, nle__threads_for(ctx, (double)n * k * k * (double)D),
                      gram * sizeof(double), ratio_block, &rj);
  mlle_model mm = {0.0};
  if (!s) {
    qsort(rj.ratio, n, sizeof(double), cmp_double);
    mm.eta = n % 2 ? rj.ratio[n / 2] : 0.5 * (rj.ratio[n / 2 - 1] + rj.ratio[n / 2]);
  }
  free(rj.ratio);
  if (s) return s;
  nle__local_model lm = {"mlle", &mm, k + 1, gram + 3 * (size_t)k + (size_t)k * (size_t)k, mlle_local, false};
  return nle__alignment_embed(ctx, job, &lm, r);
}

const nle__spectral_method nle__spectral_mlle = {"mlle", NLE_COMPONENTS_JOIN, false, true, true, false, mlle_embed,
                                                 &nle__weights_map};
