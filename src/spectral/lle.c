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

enum { DENSE_MAX_N = 400, POINT_BLOCK = 256 };

typedef struct {
  const nle_matf *Y;
  const nle_csr *knn;
  double reg;
  double *w;      /* nnz weights, on the kNN graph's pattern */
  int k_max;
} weights_job;

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

static int weights_block(void *job, size_t b, void *scratch) {
  const weights_job *j = job;
  size_t D = j->Y->cols, k_max = (size_t)j->k_max;
  double *Z = scratch, *G = Z + k_max * D, *rhs = G + k_max * k_max;
  int64_t n = j->knn->rows, i1 = (int64_t)((b + 1) * POINT_BLOCK) < n ? (int64_t)((b + 1) * POINT_BLOCK) : n;
  for (int64_t i = (int64_t)(b * POINT_BLOCK); i < i1; i++) {
    int64_t q0 = j->knn->rowptr[i];
    int k = (int)(j->knn->rowptr[i + 1] - q0);
    const float *yi = j->Y->data + (size_t)i * D;
    for (int a = 0; a < k; a++) {
      const float *ya = j->Y->data + (size_t)j->knn->colind[q0 + a] * D;
      for (size_t t = 0; t < D; t++) Z[(size_t)a * D + t] = (double)ya[t] - (double)yi[t];
    }
    double trace = 0.0;
    for (int a = 0; a < k; a++)
      for (int c = 0; c <= a; c++) {
        double g = 0.0;
        for (size_t t = 0; t < D; t++) g += Z[(size_t)a * D + t] * Z[(size_t)c * D + t];
        G[a * k + c] = G[c * k + a] = g;
      }
    for (int a = 0; a < k; a++) trace += G[a * k + a];
    /* a point at its neighbours' position (duplicates): trace 0, the
     * regulariser alone, uniform weights */
    double r = trace > 0 ? j->reg * trace : (j->reg > 0 ? j->reg : 1.0);
    for (int a = 0; a < k; a++) G[a * k + a] += r, rhs[a] = 1.0;
    if (!cholesky_solve(G, rhs, k))
      for (int a = 0; a < k; a++) rhs[a] = 1.0; /* reg = 0 and a singular G: the centroid */
    double sum = 0.0;
    for (int a = 0; a < k; a++) sum += rhs[a];
    for (int a = 0; a < k; a++) j->w[q0 + a] = rhs[a] / sum;
  }
  return 0;
}

typedef struct {
  int32_t col;
  double v;
} term;

static int cmp_term(const void *a, const void *b) {
  int32_t x = ((const term *)a)->col, y = ((const term *)b)->col;
  return (x > y) - (x < y);
}

/* M = (I - W)^T (I - W) = I - W - W^T + W^T W as CSR (both triangles,
 * sorted rows, duplicates summed). Row a of W^T W gets w_ia w_ib for every
 * i listing both a and b. */
static nle_status assemble_m(nle_ctx *ctx, const nle_csr *knn, const double *w, nle_csr **M) {
  int64_t n = knn->rows;
  int64_t *count = nle__calloc(ctx, (size_t)n + 1, sizeof(int64_t), "LLE's matrix");
  if (!count) return NLE_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = knn->rowptr[i + 1] - knn->rowptr[i];
    count[i] += 1 + k;
    for (int64_t q = knn->rowptr[i]; q < knn->rowptr[i + 1]; q++) count[knn->colind[q]] += 1 + k;
  }
  int64_t *start = nle__malloc(ctx, ((size_t)n + 1) * sizeof(int64_t), "LLE's matrix");
  term *t = NULL;
  nle_status s = start ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    start[0] = 0;
    for (int64_t i = 0; i < n; i++) start[i + 1] = start[i] + count[i];
    t = nle__malloc(ctx, (size_t)start[n] * sizeof(term), "LLE's matrix");
    if (!t) s = NLE_ERR_NOMEM;
  }
  if (!s) {
    memset(count, 0, ((size_t)n + 1) * sizeof(int64_t));
#define PUT(row, c, value) (t[start[row] + count[row]++] = (term){(int32_t)(c), (value)})
    for (int64_t i = 0; i < n; i++) {
      PUT(i, i, 1.0);
      for (int64_t q = knn->rowptr[i]; q < knn->rowptr[i + 1]; q++) {
        int32_t a = knn->colind[q];
        PUT(i, a, -w[q]);
        PUT(a, i, -w[q]);
        for (int64_t p = knn->rowptr[i]; p < knn->rowptr[i + 1]; p++) PUT(a, knn->colind[p], w[q] * w[p]);
      }
    }
#undef PUT
  }
  /* Sort and merge each row, then copy out. */
  int64_t nnz = 0;
  for (int64_t i = 0; !s && i < n; i++) {
    term *row = t + start[i];
    qsort(row, (size_t)count[i], sizeof(term), cmp_term);
    int64_t m = 0;
    for (int64_t a = 0; a < count[i]; a++) {
      if (m && row[m - 1].col == row[a].col) row[m - 1].v += row[a].v;
      else row[m++] = row[a];
    }
    count[i] = m;
    nnz += m;
  }
  if (!s) s = nle_csr_alloc(ctx, n, n, nnz, NLE_F64, M);
  for (int64_t i = 0, k = 0; !s && i < n; i++) {
    for (int64_t a = 0; a < count[i]; a++, k++) {
      (*M)->colind[k] = t[start[i] + a].col;
      ((double *)(*M)->val)[k] = t[start[i] + a].v;
    }
    (*M)->rowptr[i + 1] = k;
  }
  free(count);
  free(start);
  free(t);
  return s;
}

/* The slides' constraints made exact: the bottom eigenvalues of M lie
 * within 1e-8 of each other on manifold data, where any eigensolver's
 * vectors carry errors of eps ||M|| / gap ~ 1e-8 in directions along the
 * constant one; the columns are centred (projected off the null vector
 * M 1 = 0, known exactly), orthonormalised by modified Gram-Schmidt run
 * twice, and scaled by sqrt N: sum_i x_i = 0, (1/N) X^T X = I. */
static void constrain(double *X, size_t n, size_t d) {
  for (int pass = 0; pass < 2; pass++)
    for (size_t t = 0; t < d; t++) {
      double mean = 0.0;
      for (size_t i = 0; i < n; i++) mean += X[i * d + t];
      mean /= (double)n;
      for (size_t i = 0; i < n; i++) X[i * d + t] -= mean;
      for (size_t p = 0; p < t; p++) {
        double dot = 0.0, pp = 0.0;
        for (size_t i = 0; i < n; i++) dot += X[i * d + t] * X[i * d + p], pp += X[i * d + p] * X[i * d + p];
        for (size_t i = 0; i < n; i++) X[i * d + t] -= dot / pp * X[i * d + p];
      }
      double norm = 0.0;
      for (size_t i = 0; i < n; i++) norm += X[i * d + t] * X[i * d + t];
      double scale = sqrt((double)n / norm);
      for (size_t i = 0; i < n; i++) X[i * d + t] *= scale;
    }
}

static nle_status lle_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  const nle_spectral_opts *o = job->o;
  if (!job->Y || !job->knn)
    return nle__fail(ctx, NLE_ERR_ARG, "lle: the reconstruction weights need the points themselves (not a kNN graph "
                     "or affinities alone)");
  const nle_csr *knn = job->knn;
  size_t n = (size_t)knn->rows, d = (size_t)o->dim, nev = d + 1, D = job->Y->cols;
  int k_max = 0;
  for (size_t i = 0; i < n; i++) {
    int k = (int)(knn->rowptr[i + 1] - knn->rowptr[i]);
    k_max = k > k_max ? k : k_max;
  }
  if (o->reg == 0 && (size_t)k_max > D)
    return nle__fail(ctx, NLE_ERR_ARG, "lle: k = %d neighbours in %zu dimensions make the weights not unique; a "
                     "regulariser reg > 0 is needed", k_max, D);
  weights_job wj = {job->Y, knn, o->reg, nle__malloc(ctx, (size_t)knn->nnz * sizeof(double), "LLE's weights"),
                    k_max};
  if (!wj.w) return NLE_ERR_NOMEM;
  size_t scratch = ((size_t)k_max * D + (size_t)k_max * (size_t)k_max + (size_t)k_max) * sizeof(double);
  nle_status s = nle__for_blocks(ctx, "LLE weights", (n + POINT_BLOCK - 1) / POINT_BLOCK,
                                 nle__threads_for(ctx, (double)n * k_max * k_max * (double)D), scratch,
                                 weights_block, &wj);
  nle_csr *M = NULL;
  if (!s) s = assemble_m(ctx, knn, wj.w, &M);
  free(wj.w);
  double *vals = nle__malloc(ctx, nev * sizeof(double), "eigenvalues");
  double *U = nle__malloc(ctx, n * nev * sizeof(double), "eigenvectors");
  if (!s && (!vals || !U)) s = NLE_ERR_NOMEM;
  r->solver_used = o->solver != NLE_EIGEN_AUTO ? o->solver : n <= DENSE_MAX_N ? NLE_EIGEN_DENSE : NLE_EIGEN_SPARSE;
  if (!s && r->solver_used == NLE_EIGEN_DENSE) {
    s = nle__check_memory(ctx, (double)n * (double)n * sizeof(double), "LLE's dense matrix");
    double *A = s ? NULL : nle__calloc(ctx, n * n, sizeof(double), "LLE's dense matrix");
    if (!s && !A) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++) A[i * n + (size_t)M->colind[q]] = nle_csr_value(M, q);
    if (!s) s = nle__eig_dense(ctx, "lle", n, A, 0, nev, vals, U);
    free(A);
  } else if (!s) {
    /* M's eigenvalues lie in [0, (1 + max |w|_1)^2]; the shift sits far
     * below the small ones asked for (about 1e-4 to 1e-8 of the top on
     * manifold data) yet keeps the factor definite. */
    double diag = 0.0;
    for (size_t i = 0; i < n; i++)
      for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
        if ((size_t)M->colind[q] == i) diag = fmax(diag, nle_csr_value(M, q));
    s = nle__smallest_shift_invert(ctx, "lle", M, 1e-12 * (diag > 0 ? diag : 1.0), (int)nev, o->tol, vals, U);
  }
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++)
    for (size_t t = 0; t < d; t++) r->X->data[i * d + t] = U[i * nev + t + 1];
  if (!s) constrain(r->X->data, n, d);
  if (!s) nle__fix_signs(r->X->data, n, d);
  if (!s) {
    r->eigenvalues = vals;
    r->n_eigenvalues = (int)nev;
    vals = NULL;
  }
  nle_csr_free(&M);
  free(vals);
  free(U);
  return s;
}

const nle__spectral_method nle__spectral_lle = {"lle", NLE_COMPONENTS_ERROR, true, lle_embed};
