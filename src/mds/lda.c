/* lda.c — LDA and kernel LDA in the dissertation's form (sec. 4.6.3,
 * eqs. 4.14-4.17; SPEC G06-7): the directions of S_b v = lambda T v, T =
 * S_t = S_b + S_w the total scatter (the N x N form's T = Ybar^T (Ybar
 * Ybar^T) Ybar has these directions; lambda_w = lambda / (1 - lambda) for
 * the S_w form). At most C - 1 directions are useful (S_b has rank C - 1).
 * T is singular when a feature is constant or features are collinear: an
 * error unless a ridge is given (the dissertation regularises nothing).
 * Kernel LDA (Baudat and Anouar 2000) is eq. 4.16 with the centred kernel
 * for Ybar^T Ybar: H p = lambda (K^2 + ridge I) p, H = K Q K of rank C - 1,
 * solved through the C x C matrix M^T (K^2 + ridge I)^-1 M, M's columns
 * sqrt(N_k) times the class means of K's columns. */
#include "mds_internal.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SCATTER_BLOCK = 512 };

void nle_lda_opts_init(nle_lda_opts *o) {
  memset(o, 0, sizeof *o);
  o->dim = NLE_AUTO;
  o->ridge = NLE_AUTO;
  nle_pdkernel_init(&o->kernel);
}

void nle_lda_result_free(nle_lda_result **r) {
  if (!r || !*r) return;
  nle_matd_free(&(*r)->X);
  free((*r)->eigenvalues);
  nle_projection_model_free(&(*r)->model);
  free(*r);
  *r = NULL;
}

/* The classes: counts[C], C = the largest label + 1, every class present. */
static nle_status class_counts(nle_ctx *ctx, const int32_t *labels, size_t n, int *C_out, size_t **counts) {
  int32_t top = -1;
  for (size_t i = 0; i < n; i++) {
    if (labels[i] < 0) return nle__fail(ctx, NLE_ERR_VALUE, "labels: point %zu has label %d (0..C-1)", i + 1, labels[i]);
    if (labels[i] > top) top = labels[i];
  }
  if (top < 1) return nle__fail(ctx, NLE_ERR_VALUE, "labels: one class only: LDA needs at least 2");
  if ((size_t)top >= n) return nle__fail(ctx, NLE_ERR_VALUE, "labels: label %d for %zu points", top, n);
  *counts = nle__calloc(ctx, (size_t)top + 1, sizeof(size_t), "the class counts");
  if (!*counts) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) (*counts)[labels[i]]++;
  for (int32_t c = 0; c <= top; c++)
    if (!(*counts)[c]) {
      free(*counts), *counts = NULL;
      return nle__fail(ctx, NLE_ERR_VALUE, "labels: class %d has no points (labels are 0..C-1, every class present)",
                       c);
    }
  *C_out = top + 1;
  return NLE_OK;
}

/* A scatter by blocks of SYRK: sum_i (y_i - centre(i)) (y_i - centre(i))^T,
 * centre(i) the mean (centres NULL) or its class's. */
typedef struct {
  const nle_matf *Y;
  const int32_t *labels;
  const double *mean, *centres;
  size_t splits;
  double *parts;
} scatter_job;

static int scatter_split(void *job, size_t b, void *scratch) {
  scatter_job *j = job;
  size_t n = j->Y->rows, D = j->Y->cols, r0 = n * b / j->splits, r1 = n * (b + 1) / j->splits;
  double *S = j->parts + b * D * D, *block = scratch;
  memset(S, 0, D * D * sizeof(double));
  for (size_t r = r0; r < r1; r += SCATTER_BLOCK) {
    size_t rows = r1 - r < SCATTER_BLOCK ? r1 - r : SCATTER_BLOCK;
    for (size_t i = 0; i < rows; i++) {
      const double *c = j->centres ? j->centres + (size_t)j->labels[r + i] * D : j->mean;
      for (size_t t = 0; t < D; t++) block[i * D + t] = (double)j->Y->data[(r + i) * D + t] - c[t];
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)D, (int)rows, 1.0, block, (int)D, 1.0, S, (int)D);
  }
  return 0;
}

static nle_status scatter(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const double *mean,
                          const double *centres, double *S) {
  size_t D = Y->cols, splits = 8;
  double *parts = nle__malloc(ctx, splits * D * D * sizeof(double), "the scatter");
  if (!parts) return NLE_ERR_NOMEM;
  scatter_job job = {Y, labels, mean, centres, splits, parts};
  nle_status s = nle__for_blocks(ctx, "scatter", splits, nle__threads_for(ctx, (double)Y->rows * D * D),
                                 SCATTER_BLOCK * D * sizeof(double), scatter_split, &job);
  if (!s) { /* the splits in order, then the lower triangle */
    memcpy(S, parts, D * D * sizeof(double));
    for (size_t b = 1; b < splits; b++)
      for (size_t e = 0; e < D * D; e++) S[e] += parts[b * D * D + e];
    for (size_t a = 0; a < D; a++)
      for (size_t c = 0; c < a; c++) S[a * D + c] = S[c * D + a];
  }
  free(parts);
  return s;
}

/* The mean and the class means (C x D). */
static nle_status means(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, int C, const size_t *counts,
                        double **mean, double **centres) {
  size_t n = Y->rows, D = Y->cols;
  *mean = nle__calloc(ctx, D, sizeof(double), "the mean");
  *centres = nle__calloc(ctx, (size_t)C * D, sizeof(double), "the class means");
  if (!*mean || !*centres) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < D; t++) {
      (*mean)[t] += Y->data[i * D + t];
      (*centres)[(size_t)labels[i] * D + t] += Y->data[i * D + t];
    }
  for (size_t t = 0; t < D; t++) (*mean)[t] /= (double)n;
  for (int c = 0; c < C; c++)
    for (size_t t = 0; t < D; t++) (*centres)[(size_t)c * D + t] /= (double)counts[c];
  return NLE_OK;
}

/* Mc (D x C), column k sqrt(N_k) (mu_k - mu): S_b = sum_k N_k (mu_k -
 * mu)(mu_k - mu)^T = Mc Mc^T (eq. 4.14), of rank <= C - 1. */
static void class_offsets(const double *mean, const double *centres, const size_t *counts, int C, size_t D,
                          double *Mc) {
  for (size_t a = 0; a < D; a++)
    for (int c = 0; c < C; c++)
      Mc[a * (size_t)C + (size_t)c] = sqrt((double)counts[c]) * (centres[(size_t)c * D + a] - mean[a]);
}

nle_status nle_scatter(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, double *Sb, double *Sw, double *St) {
  if (!Y || !labels) return nle__fail(ctx, NLE_ERR_ARG, "nle_scatter: NULL argument");
  int C = 0;
  size_t *counts = NULL;
  double *mean = NULL, *centres = NULL, *Mc = NULL;
  size_t D = Y->cols;
  nle_status s = class_counts(ctx, labels, Y->rows, &C, &counts);
  if (!s) s = means(ctx, Y, labels, C, counts, &mean, &centres);
  if (!s && Sb && !(Mc = nle__malloc(ctx, D * (size_t)C * sizeof(double), "the class means"))) s = NLE_ERR_NOMEM;
  if (!s && Sb) {
    class_offsets(mean, centres, counts, C, D, Mc);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)D, (int)D, C, 1.0, Mc, C, Mc, C, 0.0, Sb, (int)D);
  }
  if (!s && Sw) s = scatter(ctx, Y, labels, mean, centres, Sw);
  if (!s && St) s = scatter(ctx, Y, labels, mean, NULL, St);
  free(counts), free(mean), free(centres), free(Mc);
  return s;
}

static nle_status check_common(nle_ctx *ctx, const char *what, const nle_matf *Y, const int32_t *labels,
                               nle_lda_opts *o, int *C, size_t **counts) {
  if (!Y || !labels) return nle__fail(ctx, NLE_ERR_ARG, "%s: NULL points or labels", what);
  nle_status s = nle__check_finite_rows(ctx, "points", Y);
  if (!s) s = class_counts(ctx, labels, Y->rows, C, counts);
  if (s) return s;
  if (o->dim == NLE_AUTO) o->dim = *C - 1 < 2 ? *C - 1 : 2;
  if (o->dim < 1 || o->dim > *C - 1)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d components from %d classes: at most C - 1 = %d are useful", what,
                     o->dim, *C, *C - 1);
  if (o->ridge != NLE_AUTO && (!(o->ridge >= 0) || !isfinite(o->ridge)))
    return nle__fail(ctx, NLE_ERR_ARG, "%s: ridge %g is not >= 0", what, o->ridge);
  return NLE_OK;
}

/* Each axis of X (and its row of the map A, dim x cols) scaled so that
 * the within-class covariance S_w / (N - C) of X is I, then signed as
 * nle__fix_signs signs. */
static nle_status within_whiten(nle_ctx *ctx, const int32_t *labels, const size_t *counts, int C, nle_matd *X,
                                double *A, size_t cols) {
  size_t n = X->rows, dim = X->cols;
  double *cm = nle__malloc(ctx, (size_t)C * sizeof(double), "the class means");
  if (!cm) return NLE_ERR_NOMEM;
  for (size_t t = 0; t < dim; t++) {
    double sw = 0, *x = X->data;
    memset(cm, 0, (size_t)C * sizeof(double));
    for (size_t i = 0; i < n; i++) cm[labels[i]] += x[i * dim + t] / (double)counts[labels[i]];
    for (size_t i = 0; i < n; i++) sw += (x[i * dim + t] - cm[labels[i]]) * (x[i * dim + t] - cm[labels[i]]);
    double scale = sw > 0 && n > (size_t)C ? sqrt((double)(n - (size_t)C) / sw) : 1.0;
    for (size_t i = 0; i < n; i++) x[i * dim + t] *= scale;
    for (size_t c = 0; c < cols; c++) A[t * cols + c] *= scale;
  }
  free(cm);
  nle__fix_signs_map(X, A, cols);
  return NLE_OK;
}

/* The top d discriminant directions of H p = lambda T p for H = M M^T of
 * rank <= C (M: m x C) and T (m x m, positive definite, overwritten by its
 * Cholesky factor): T Z = M by Cholesky, the C x C problem M^T Z a =
 * lambda a, p = Z a / sqrt(lambda) (T-orthonormal). O(m^3 / 3 + m^2 C)
 * instead of a generalised m x m eigenproblem. vals[d] descending, P the
 * directions as the rows of a d x m matrix. */
static nle_status reduced_discriminants(nle_ctx *ctx, const char *what, size_t m, double *T, const double *M,
                                        size_t C, size_t d, double *vals, double *P) {
  double *Z = nle__malloc(ctx, m * C * sizeof(double), what), *G = nle__malloc(ctx, C * C * sizeof(double), what),
         *gv = nle__malloc(ctx, C * sizeof(double), what), *ga = nle__malloc(ctx, C * d * sizeof(double), what);
  nle_status s = Z && G && gv && ga ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    memcpy(Z, M, m * C * sizeof(double));
    lapack_int info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', (lapack_int)m, (lapack_int)C, T, (lapack_int)m, Z,
                                    (lapack_int)C);
    if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the total scatter is not positive definite (LAPACK %d)", what,
                            (int)info);
  }
  if (!s) {
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)C, (int)C, (int)m, 1.0, M, (int)C, Z, (int)C, 0.0, G,
                (int)C);
    for (size_t a = 0; a < C; a++)
      for (size_t b = 0; b < a; b++) G[a * C + b] = G[b * C + a] = 0.5 * (G[a * C + b] + G[b * C + a]);
    s = nle__eig_dense(ctx, what, C, G, C - d, d, gv, ga);
  }
  for (size_t t = 0; !s && t < d; t++) {
    vals[t] = gv[d - 1 - t];
    if (!(vals[t] > 0))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: eigenvalue %zu is %g: fewer than %zu discriminant directions", what,
                    t + 1, vals[t], d);
    for (size_t i = 0; !s && i < m; i++) {
      double v = 0;
      for (size_t c = 0; c < C; c++) v += Z[i * C + c] * ga[c * d + (d - 1 - t)];
      P[t * m + i] = v / sqrt(vals[t]);
    }
  }
  free(Z), free(G), free(gv), free(ga);
  return s;
}

nle_status nle_lda(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const nle_lda_opts *opts,
                   nle_lda_result **result) {
  if (!result) return nle__fail(ctx, NLE_ERR_ARG, "nle_lda: NULL result");
  *result = NULL;
  nle_lda_opts o;
  if (opts) o = *opts;
  else nle_lda_opts_init(&o);
  int C = 0;
  size_t *counts = NULL;
  nle_status s = check_common(ctx, "lda", Y, labels, &o, &C, &counts);
  if (o.ridge == NLE_AUTO) o.ridge = 0.0;
  size_t n = Y ? Y->rows : 0, D = Y ? Y->cols : 0, d = (size_t)o.dim;
  if (!s && d > D) s = nle__fail(ctx, NLE_ERR_ARG, "lda: %zu components of %zu-dimensional points", d, D);
  double t0 = nle_time_seconds();
  double *mean = NULL, *centres = NULL, *Mc = NULL, *T = NULL, *E = NULL;
  lapack_int *piv = NULL;
  nle_lda_result *r = s ? NULL : nle__calloc(ctx, 1, sizeof *r, "the LDA result");
  if (!s && !r) s = NLE_ERR_NOMEM;
  if (!s) s = nle__check_memory(ctx, 3.0 * (double)D * D * sizeof(double), "LDA's D x D scatters");
  if (!s) s = means(ctx, Y, labels, C, counts, &mean, &centres);
  if (!s) {
    Mc = nle__malloc(ctx, D * (size_t)C * sizeof(double), "the class means");
    T = nle__malloc(ctx, D * D * sizeof(double), "T");
    E = nle__malloc(ctx, D * D * sizeof(double), "T's factor");
    piv = nle__malloc(ctx, D * sizeof(lapack_int), "T's pivots");
    r->eigenvalues = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
    if (!Mc || !T || !E || !piv || !r->eigenvalues) s = NLE_ERR_NOMEM;
    else r->n_eigenvalues = (int)d;
  }
  if (!s) {
    class_offsets(mean, centres, counts, C, D, Mc);
    s = scatter(ctx, Y, labels, mean, NULL, T);
  }
  if (!s) { /* T's rank: pivoted Cholesky, pivots above 1e-10 of the largest diagonal */
    double big = 0;
    for (size_t a = 0; a < D; a++) big = fmax(big, T[a * D + a]);
    memcpy(E, T, D * D * sizeof(double));
    lapack_int rank = 0;
    lapack_int info = LAPACKE_dpstrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)D, E, (lapack_int)D, piv, &rank, 1e-10 * big);
    if (info < 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "lda: LAPACK dpstrf failed (%d)", (int)info);
    r->rank = (int)rank;
    if (!s && (size_t)rank < D && o.ridge == 0)
      s = nle__fail(ctx, NLE_ERR_VALUE, "lda: the total scatter T has rank %d < D = %zu (constant or collinear "
                    "features): give a ridge (--ridge R adds R to T's diagonal) or fewer dimensions (e.g. PCA "
                    "first)", (int)rank, D);
  }
  for (size_t t = 0; !s && t < D; t++) T[t * D + t] += o.ridge;
  if (!s) s = nle__projection_new(ctx, "lda", NLE_MAP_LINEAR, 0, D, d, NULL, &r->model);
  if (!s) s = reduced_discriminants(ctx, "lda", D, T, Mc, (size_t)C, d, r->eigenvalues, r->model->A);
  if (!s) {
    memcpy(r->model->mean, mean, D * sizeof(double));
    s = nle_projection_transform(ctx, r->model, Y, &r->X);
  }
  if (!s) {
    s = within_whiten(ctx, labels, counts, C, r->X, r->model->A, D);
  }
  if (!s) {
    r->classes = C;
    r->n = n;
    r->resolved = o;
    if (!o.keep_model) nle_projection_model_free(&r->model);
    r->seconds = nle_time_seconds() - t0;
  }
  free(counts), free(mean), free(centres), free(Mc), free(T), free(E), free(piv);
  if (s) {
    nle_lda_result_free(&r);
    return s;
  }
  *result = r;
  return NLE_OK;
}

nle_status nle_klda(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const nle_lda_opts *opts,
                    nle_lda_result **result) {
  if (!result) return nle__fail(ctx, NLE_ERR_ARG, "nle_klda: NULL result");
  *result = NULL;
  nle_lda_opts o;
  if (opts) o = *opts;
  else nle_lda_opts_init(&o);
  int C = 0;
  size_t *counts = NULL;
  nle_status s = check_common(ctx, "klda", Y, labels, &o, &C, &counts);
  if (!s && o.kernel.kind == NLE_PDK_PRECOMPUTED)
    s = nle__fail(ctx, NLE_ERR_ARG, "klda: the kernel of the points (linear, gaussian, polynomial), not precomputed");
  if (!s && o.kernel.neighbors) s = nle__fail(ctx, NLE_ERR_ARG, "klda: a dense kernel (no neighbors)");
  if (!s) s = nle__kernel_resolve(ctx, Y, &o.kernel);
  size_t n = Y ? Y->rows : 0, d = (size_t)o.dim, Cn = (size_t)C;
  double t0 = nle_time_seconds();
  if (!s) s = nle__check_memory(ctx, 2.0 * (double)n * n * sizeof(double), "kernel LDA's two N x N matrices");
  double *K = NULL, *T = NULL, *m = NULL, *M = NULL, g = 0;
  nle_lda_result *r = s ? NULL : nle__calloc(ctx, 1, sizeof *r, "the kernel LDA result");
  if (!s && !r) s = NLE_ERR_NOMEM;
  if (!s) s = nle__kernel_matrix(ctx, Y, &o.kernel, &K);
  if (!s) {
    T = nle__malloc(ctx, n * n * sizeof(double), "kernel LDA's T");
    m = nle__calloc(ctx, n, sizeof(double), "the kernel's means");
    M = nle__calloc(ctx, n * Cn, sizeof(double), "the class means");
    r->eigenvalues = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
    if (!T || !m || !M || !r->eigenvalues) s = NLE_ERR_NOMEM;
    else r->n_eigenvalues = (int)d;
  }
  if (!s) { /* centre K in place (eq. 4.18), keeping the means for new points */
    for (size_t i = 0; i < n; i++) {
      for (size_t j = 0; j < n; j++) m[i] += K[i * n + j];
      m[i] /= (double)n;
      g += m[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) K[i * n + j] += -m[i] - m[j] + g;
    /* T = K K (+ ridge I) */
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)n, (int)n, 1.0, K, (int)n, 0.0, T, (int)n);
    double trace = 0;
    for (size_t i = 0; i < n; i++) trace += T[i * n + i];
    if (o.ridge == NLE_AUTO) o.ridge = 1e-3 * trace / (double)n;
    if (!(o.ridge > 0))
      s = nle__fail(ctx, NLE_ERR_VALUE, "klda: ridge %g: the centred kernel's K^2 is singular (rank <= N - 1), "
                    "kernel LDA needs a ridge > 0", o.ridge);
    for (size_t i = 0; i < n; i++) T[i * n + i] += o.ridge;
    /* M's column k: sqrt(N_k) times the mean of the class's columns of K */
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) M[i * Cn + (size_t)labels[j]] += K[i * n + j];
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < Cn; c++) M[i * Cn + c] /= sqrt((double)counts[c]);
  }
  if (!s) s = nle__projection_new(ctx, "klda", NLE_MAP_KERNEL, n, Y->cols, d, Y, &r->model);
  if (!s) s = reduced_discriminants(ctx, "klda", n, T, M, Cn, d, r->eigenvalues, r->model->A);
  if (!s) { /* X = K-bar P */
    r->model->kernel = o.kernel, r->model->grand = g;
    memcpy(r->model->mean, m, n * sizeof(double));
    s = nle_matd_alloc(ctx, n, d, &r->X);
  }
  if (!s) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)d, (int)n, 1.0, K, (int)n, r->model->A, (int)n,
                0.0, r->X->data, (int)d);
    s = within_whiten(ctx, labels, counts, C, r->X, r->model->A, n);
  }
  if (!s) {
    r->classes = C, r->n = n, r->rank = -1;
    r->resolved = o;
    if (!o.keep_model) nle_projection_model_free(&r->model);
    r->seconds = nle_time_seconds() - t0;
  }
  free(counts), free(K), free(T), free(m), free(M);
  if (s) {
    nle_lda_result_free(&r);
    return s;
  }
  *result = r;
  return NLE_OK;
}
