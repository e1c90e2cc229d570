/* laplacian.c — extreme eigenpairs of sparse graph Laplacians, for Laplacian
 * eigenmaps (lecture slides 002; the spectral initialisation of the
 * embeddings) and for the bounds on EE's critical lambda (EE paper eqs.
 * 11-12) when N is too large for dense eigendecompositions.
 *
 * The smallest eigenvalues come from ARPACK's Lanczos (dsaupd) on the inverse
 * (L + eps I)^-1, applied with a CHOLMOD Cholesky factor: they become the
 * largest, and well separated, so a few dozen iterations suffice. The largest
 * ones come from Lanczos on L itself. Start vectors are drawn from our seeded
 * generator, so the results repeat. */
#include "spectral_internal.h"
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The Laplacian entries of row i / column j: scale (L_ij), with L = D - W or
 * I - D^-1/2 W D^-1/2 (isolated points: a unit diagonal). */
static double laplacian_offdiag(const double *deg, int normalised, int64_t i, int64_t j, double w) {
  if (!normalised) return -w;
  return deg[i] > 0 && deg[j] > 0 ? -w / sqrt(deg[i] * deg[j]) : 0.0;
}

static double laplacian_diag(const double *deg, int normalised, int64_t i) {
  return normalised ? 1.0 : deg[i];
}

nle_status nle__laplacian_fill(nle_ctx *ctx, const nle_csr *W, double *ratio, double *flops) {
  int64_t n = W->rows, upper = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) upper += W->colind[q] > i;
  cholmod_common cc;
  cholmod_l_start(&cc);
  cc.print = 0;
  cholmod_sparse *A = cholmod_l_allocate_sparse((size_t)n, (size_t)n, (size_t)(upper + n), 1, 1, 1, CHOLMOD_PATTERN, &cc);
  nle_status s = A ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "Laplacian: CHOLMOD could not allocate it");
  if (!s) {
    nle__chol_int *Ap = A->p, *Ai = A->i;
    int64_t k = 0;
    for (int64_t j = 0; j < n; j++) {
      Ap[j] = k;
      for (int64_t q = W->rowptr[j]; q < W->rowptr[j + 1]; q++)
        if (W->colind[q] < j) Ai[k++] = W->colind[q];
      Ai[k++] = j;
    }
    Ap[n] = k;
    A->sorted = 0;
    cholmod_factor *L = cholmod_l_analyze(A, &cc);
    if (!L || cc.status != CHOLMOD_OK)
      s = nle__fail(ctx, cc.status == CHOLMOD_OUT_OF_MEMORY ? NLE_ERR_NOMEM : NLE_ERR_NUMERIC,
                    "Laplacian: CHOLMOD could not order it (status %d)", cc.status);
    else
      *ratio = cc.lnz / (double)k, *flops = cc.fl;
    cholmod_l_free_factor(&L, &cc);
  }
  cholmod_l_free_sparse(&A, &cc);
  cholmod_l_finish(&cc);
  return s;
}

nle_status nle__laplacian_factor(nle_ctx *ctx, cholmod_common *cc, const nle_csr *W, bool normalised, double scale,
                                 double shift, cholmod_factor **factor) {
  *factor = NULL;
  int64_t n = W->rows, upper = 0;
  double *deg = nle__degrees(ctx, W);
  if (!deg) return NLE_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) upper += W->colind[q] > i;
  cholmod_sparse *A = cholmod_l_allocate_sparse((size_t)n, (size_t)n, (size_t)(upper + n), 1, 1, 1, CHOLMOD_REAL, cc);
  nle_status s = A ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "Laplacian: CHOLMOD could not allocate it");
  if (!s) {
    /* Our CSR of a symmetric matrix read as CSC: column j holds rows i < j
     * (CHOLMOD uses the upper triangle), then the diagonal. */
    nle__chol_int *Ap = A->p, *Ai = A->i;
    double *Ax = A->x;
    int64_t k = 0;
    for (int64_t j = 0; j < n; j++) {
      Ap[j] = k;
      for (int64_t q = W->rowptr[j]; q < W->rowptr[j + 1]; q++)
        if (W->colind[q] < j) {
          Ai[k] = W->colind[q];
          Ax[k++] = scale * laplacian_offdiag(deg, normalised, W->colind[q], j, nle_csr_value(W, q));
        }
      Ai[k] = j;
      Ax[k++] = scale * laplacian_diag(deg, normalised, j) + shift;
    }
    Ap[n] = k;
    *factor = cholmod_l_analyze(A, cc);
    if (!*factor || cc->status != CHOLMOD_OK)
      s = nle__fail(ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? NLE_ERR_NOMEM : NLE_ERR_NUMERIC,
                    "Laplacian: CHOLMOD could not order it (status %d)", cc->status);
    else
      s = nle__check_memory(ctx, cc->lnz * (sizeof(double) + sizeof(nle__chol_int)), "the Laplacian's Cholesky factor");
    if (!s && (!cholmod_l_factorize(A, *factor, cc) || cc->status != CHOLMOD_OK))
      s = nle__fail(ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? NLE_ERR_NOMEM : NLE_ERR_NUMERIC,
                    "Laplacian: Cholesky factorisation failed (CHOLMOD status %d%s)", cc->status,
                    cc->status == CHOLMOD_NOT_POSDEF ? ": not positive definite" : "");
  }
  cholmod_l_free_sparse(&A, cc);
  free(deg);
  if (s) cholmod_l_free_factor(factor, cc);
  return s;
}

typedef struct {
  const nle_csr *W;
  const nle_matd *Wd;     /* a dense W instead (plain Laplacian only) */
  const double *deg;
  int normalised;
  nle_ctx *ctx;
} operator_t;

/* y = L x: a product, which cannot fail. */
static int apply_op(void *user, const double *x, double *y) {
  const operator_t *op = user;
  int64_t n = op->Wd ? (int64_t)op->Wd->rows : op->W->rows;
  if (op->Wd) {
    for (int64_t i = 0; i < n; i++) {
      const double *row = op->Wd->data + (size_t)i * (size_t)n;
      double v = 0.0;
      for (int64_t j = 0; j < n; j++) v += row[j] * x[j];
      y[i] = op->deg[i] * x[i] - v + row[i] * x[i]; /* the diagonal of W does not count */
    }
    return 0;
  }
  for (int64_t i = 0; i < n; i++) {
    double v = laplacian_diag(op->deg, op->normalised, i) * x[i];
    for (int64_t q = op->W->rowptr[i]; q < op->W->rowptr[i + 1]; q++)
      if (op->W->colind[q] != i)
        v += laplacian_offdiag(op->deg, op->normalised, i, op->W->colind[q], nle_csr_value(op->W, q)) *
             x[op->W->colind[q]];
    y[i] = v;
  }
  return 0;
}

/* Lanczos for the nev largest eigenvalues of the operator (ascending), and
 * eigenvectors (row-major N x nev) when vecs is not NULL. */
static nle_status lanczos(nle_ctx *ctx, operator_t *op, int nev, double *vals, double *vecs) {
  size_t n = op->Wd ? op->Wd->rows : (size_t)op->W->rows;
  op->ctx = ctx;
  return nle__lanczos(ctx, "Laplacian eigenvalues", n, apply_op, op, nev, NLE__EIG_LARGEST, 0.0, vals, vecs);
}

static nle_status check_nev(nle_ctx *ctx, const nle_csr *W, int nev) {
  if (W->rows != W->cols || W->rows < 3)
    return nle__fail(ctx, NLE_ERR_ARG, "Laplacian eigenvalues: W must be square with at least 3 points");
  if (nev < 1 || nev > W->rows - 2)
    return nle__fail(ctx, NLE_ERR_ARG, "Laplacian eigenvalues: %d eigenpairs of %lld points", nev, (long long)W->rows);
  return NLE_OK;
}

nle_status nle_laplacian_smallest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals,
                                  nle_matd **vecs) {
  return nle__laplacian_smallest(ctx, W, normalised, nev, false, vals, vecs);
}

nle_status nle__laplacian_smallest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, bool block, double *vals,
                                   nle_matd **vecs) {
  if (vecs) *vecs = NULL;
  nle_status s = check_nev(ctx, W, nev);
  if (s) return s;
  double *deg = nle__degrees(ctx, W);
  if (!deg) return NLE_ERR_NOMEM;
  /* The shift keeps L + eps I positive definite (L is singular) while
   * leaving eps far below the eigenvalues asked for. */
  double dmax = 0.0;
  for (int64_t i = 0; i < W->rows; i++) dmax = fmax(dmax, laplacian_diag(deg, normalised, i));
  double eps = 1e-9 * (dmax > 0 ? dmax : 1.0);
  cholmod_common cc;
  cholmod_l_start(&cc);
  cc.print = 0;
  cholmod_factor *factor = NULL;
  s = nle__laplacian_factor(ctx, &cc, W, normalised, 1.0, eps, &factor);
  size_t n = (size_t)W->rows;
  if (!s && vecs) s = nle_matd_alloc(ctx, n, (size_t)nev, vecs);
  if (!s)
    s = nle__smallest_by_factor(ctx, "Laplacian eigenvalues", &cc, factor, n, eps, nev, 0.0, block, 0, vals,
                                vecs ? (*vecs)->data : NULL);
  if (s && vecs) nle_matd_free(vecs);
  free(deg);
  cholmod_l_free_factor(&factor, &cc);
  cholmod_l_finish(&cc);
  return s;
}

nle_status nle_laplacian_largest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals) {
  nle_status s = check_nev(ctx, W, nev);
  if (s) return s;
  double *deg = nle__degrees(ctx, W);
  if (!deg) return NLE_ERR_NOMEM;
  operator_t op = {W, NULL, deg, normalised, ctx};
  s = lanczos(ctx, &op, nev, vals, NULL);
  free(deg);
  return s;
}

nle_status nle_laplacian_eigenmap(nle_ctx *ctx, const nle_csr *W, int d, nle_matd **X, int *ncomp) {
  *X = NULL;
  int64_t c = nle__csr_components(ctx, W);
  if (c < 0) return NLE_ERR_NOMEM;
  *ncomp = (int)c;
  double *vals = nle__malloc(ctx, (size_t)(d + 1) * sizeof(double), "eigenvalues");
  double *deg = nle__degrees(ctx, W);
  nle_matd *U = NULL;
  nle_status s = vals && deg ? nle_laplacian_smallest(ctx, W, 1, d + 1, vals, &U) : NLE_ERR_NOMEM;
  if (!s) s = nle_matd_alloc(ctx, (size_t)W->rows, (size_t)d, X);
  for (int64_t i = 0; !s && i < W->rows; i++) {
    double inv = deg[i] > 0 ? 1.0 / sqrt(deg[i]) : 0.0;
    for (int t = 0; t < d; t++) (*X)->data[i * d + t] = inv * U->data[i * (d + 1) + t + 1];
  }
  /* Signs: the largest-magnitude entry of each column positive, so the
   * result does not depend on the eigensolver's arbitrary sign. */
  for (int t = 0; !s && t < d; t++) {
    double big = 0.0;
    for (int64_t i = 0; i < W->rows; i++)
      if (fabs((*X)->data[i * d + t]) > fabs(big)) big = (*X)->data[i * d + t];
    if (big < 0)
      for (int64_t i = 0; i < W->rows; i++) (*X)->data[i * d + t] = -(*X)->data[i * d + t];
  }
  nle_matd_free(&U);
  free(vals);
  free(deg);
  return s;
}

nle_status nle__laplacian_largest_dense(nle_ctx *ctx, const nle_matd *W, int nev, double *vals) {
  size_t n = W->rows;
  double *deg = nle__calloc(ctx, n, sizeof(double), "degrees");
  if (!deg) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      if (j != i) deg[i] += W->data[i * n + j];
  operator_t op = {NULL, W, deg, 0, ctx};
  nle_status s = lanczos(ctx, &op, nev, vals, NULL);
  free(deg);
  return s;
}
