/* pencil.c — the reduced generalised eigenproblem A v = lambda B v shared by
 * Locally Linear Landmarks (dissertation eqs. 4.4-4.5) and kernel
 * eigenmaps (Brand eqs. 8-11), SPEC G07-20. Both reduce an N x N problem
 * to a small dense pencil whose B (Z B Z^T, Z D Z^T) can be badly
 * conditioned (cond 1.2e6 on Brand's Swiss roll) or exactly singular
 * (Brand's affine variant on homogeneous coordinates, SPEC G07-16): the
 * Cholesky transformation of eqs. 9-11 is used where B is safely definite,
 * and Brand's footnote 1 ("any gram-like factorization will work") where it
 * is not: B's eigendecomposition, the problem restricted to B's range. */
#include "eigen.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Below this order the dense LAPACK route (O(n^3), all the work in BLAS-3)
 * wins; above it, Lanczos on factors (two Cholesky factorisations, then
 * O(n^2) per product) needs far fewer flops for a few eigenpairs (up to
 * four times this order, dense still when n <= 100 nev). */
size_t nle__pencil_dense_max = 2500;
/* B's reciprocal condition below this is treated as singular: B's
 * eigenvalues under RANGE_TOL x the largest are dropped. Legitimately
 * ill-conditioned reduced pencils sit near 1e-6 (SPEC G07-20); singular
 * ones at the rounding level, 1e-16. */
static const double SINGULAR_RCOND = 1e-10, RANGE_TOL = 1e-10;

static void symmetrize(double *C, size_t n) {
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) C[i * n + j] = C[j * n + i] = 0.5 * (C[i * n + j] + C[j * n + i]);
}

/* The Lanczos operators on C = R^-T A R^-1 (B = R^T R, R upper, row-major):
 * regular, or shift-invert (C + s I)^-1 = R (A + s B)^-1 R^T, F the
 * Cholesky factor of A + s B. */
typedef struct {
  size_t n;
  const double *R, *A, *F;
  double *work;
} pencil_op;

static int apply_regular(void *user, const double *x, double *y) {
  pencil_op *op = user;
  int n = (int)op->n;
  memcpy(op->work, x, op->n * sizeof(double));
  cblas_dtrsv(CblasRowMajor, CblasUpper, CblasNoTrans, CblasNonUnit, n, op->R, n, op->work, 1); /* R^-1 x */
  cblas_dsymv(CblasRowMajor, CblasUpper, n, 1.0, op->A, n, op->work, 1, 0.0, y, 1);
  cblas_dtrsv(CblasRowMajor, CblasUpper, CblasTrans, CblasNonUnit, n, op->R, n, y, 1); /* R^-T (...) */
  return 0;
}

static int apply_shift_invert(void *user, const double *x, double *y) {
  pencil_op *op = user;
  int n = (int)op->n;
  memcpy(y, x, op->n * sizeof(double));
  cblas_dtrmv(CblasRowMajor, CblasUpper, CblasTrans, CblasNonUnit, n, op->R, n, y, 1); /* R^T x */
  cblas_dtrsv(CblasRowMajor, CblasUpper, CblasTrans, CblasNonUnit, n, op->F, n, y, 1);
  cblas_dtrsv(CblasRowMajor, CblasUpper, CblasNoTrans, CblasNonUnit, n, op->F, n, y, 1); /* (A + s B)^-1 */
  cblas_dtrmv(CblasRowMajor, CblasUpper, CblasNoTrans, CblasNonUnit, n, op->R, n, y, 1);
  return 0;
}

/* Cholesky route: B = R^T R (R in `R`, already factored). Eigenpairs of
 * C = R^-T A R^-1 (Brand eqs. 9-10), then v = R^-1 u (eq. 11). */
static nle_status solve_cholesky(nle_ctx *ctx, const char *what, size_t n, const double *A, const double *B,
                                 const double *R, int nev, nle__eig_end end, double *vals, double *vecs,
                                 nle__pencil_info *info) {
  double *U = nle__malloc(ctx, n * (size_t)nev * sizeof(double), "the pencil's eigenvectors");
  if (!U) return NLE_ERR_NOMEM;
  nle_status s = NLE_OK;
  /* many eigenpairs: Lanczos's basis and restarts grow with nev while the
   * dense route does not (fig. 4.5's d = 50 at L = 3,000: ~20 s by
   * Lanczos, a few by LAPACK) */
  if (n <= nle__pencil_dense_max || ((size_t)nev * 100 >= n && n <= 4 * nle__pencil_dense_max)) {
    double *C = nle__malloc(ctx, n * n * sizeof(double), "the whitened pencil");
    if (!C) s = NLE_ERR_NOMEM;
    if (!s) {
      memcpy(C, A, n * n * sizeof(double));
      cblas_dtrsm(CblasRowMajor, CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, (int)n, (int)n, 1.0, R, (int)n, C,
                  (int)n);
      cblas_dtrsm(CblasRowMajor, CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, (int)n, (int)n, 1.0, R, (int)n,
                  C, (int)n);
      symmetrize(C, n);
      s = nle__eig_dense(ctx, what, n, C, end == NLE__EIG_SMALLEST ? 0 : n - (size_t)nev, (size_t)nev, vals, U);
    }
    free(C);
  } else {
    info->lanczos = true;
    pencil_op op = {n, R, A, NULL, nle__malloc(ctx, n * sizeof(double), "Lanczos")};
    double *F = NULL;
    if (!op.work) s = NLE_ERR_NOMEM;
    if (!s && end == NLE__EIG_SMALLEST) {
      /* shift-invert: the small end of C becomes the large, well separated
       * end. The shift, far below the eigenvalues of interest, keeps A + s B
       * definite when A is only semi-definite (A~ 1 = 0 for LE). */
      double tra = 0, trb = 0;
      for (size_t i = 0; i < n; i++) tra += A[i * n + i], trb += B[i * n + i];
      double shift = 1e-7 * fabs(tra) / trb + 1e-300;
      F = nle__malloc(ctx, n * n * sizeof(double), "the shifted pencil's factor");
      if (!F) s = NLE_ERR_NOMEM;
      for (size_t i = 0; !s && i < n * n; i++) F[i] = A[i] + shift * B[i];
      if (!s && LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, F, (lapack_int)n) != 0)
        s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: A + %g B is not positive definite (A must be positive "
                      "semi-definite for the smallest eigenpairs)", what, shift);
      op.F = F;
      if (!s) s = nle__lanczos(ctx, what, n, apply_shift_invert, &op, nev, NLE__EIG_LARGEST, 0.0, vals, U);
      if (!s) { /* nu = 1 / (lambda + s), largest nu first after reversal */
        for (int j = 0; j < nev; j++) vals[j] = 1.0 / vals[j] - shift;
        for (int a = 0, b = nev - 1; a < b; a++, b--) {
          double t = vals[a];
          vals[a] = vals[b], vals[b] = t;
          for (size_t i = 0; i < n; i++) {
            t = U[i * nev + a];
            U[i * nev + a] = U[i * nev + b], U[i * nev + b] = t;
          }
        }
      }
    } else if (!s) {
      s = nle__lanczos(ctx, what, n, apply_regular, &op, nev, end, 0.0, vals, U);
    }
    free(F);
    free(op.work);
  }
  if (!s && vecs) {
    memcpy(vecs, U, n * (size_t)nev * sizeof(double));
    cblas_dtrsm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, (int)n, nev, 1.0, R, (int)n, vecs,
                nev);
  }
  free(U);
  return s;
}

/* Footnote-1 route: B = Q diag(mu) Q^T; P = Q_r diag(mu_r)^-1/2 over the
 * eigenvalues above RANGE_TOL x the largest; the eigenpairs of P^T A P
 * (r x r), v = P u, B-orthonormal. */
static nle_status solve_range(nle_ctx *ctx, const char *what, size_t n, const double *A, const double *B, int nev,
                              nle__eig_end end, double *vals, double *vecs, nle__pencil_info *info) {
  double *Q = nle__malloc(ctx, n * n * sizeof(double), "the pencil's B eigenvectors");
  double *Bc = nle__malloc(ctx, n * n * sizeof(double), "the pencil's B");
  double *mu = nle__malloc(ctx, n * sizeof(double), "the pencil's B eigenvalues");
  double *AP = nle__malloc(ctx, n * n * sizeof(double), "the pencil's A P");
  double *C = nle__malloc(ctx, n * n * sizeof(double), "the reduced pencil");
  double *U = nle__malloc(ctx, n * (size_t)nev * sizeof(double), "the pencil's eigenvectors");
  nle_status s = Q && Bc && mu && AP && C && U ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    memcpy(Bc, B, n * n * sizeof(double));
    s = nle__eig_dense(ctx, what, n, Bc, 0, n, mu, Q); /* ascending */
  }
  size_t r = 0, lo = n;
  if (!s) {
    double top = mu[n - 1];
    if (!(top > 0)) s = nle__fail(ctx, NLE_ERR_VALUE, "%s: the scale matrix B has no positive eigenvalue", what);
    while (!s && lo > 0 && mu[lo - 1] > RANGE_TOL * top) lo--;
    r = n - lo;
    info->rank = r;
    info->b_rcond = mu[0] > 0 ? mu[0] / top : 0.0;
    if (!s && (size_t)nev > r)
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: the scale matrix B has numerical rank %zu, below the %d eigenpairs "
                    "asked for", what, r, nev);
  }
  if (!s) {
    /* P (n x r) overwrites Q's kept columns, packed to the left */
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < r; j++) Q[i * r + j] = Q[i * n + lo + j] / sqrt(mu[lo + j]);
    cblas_dsymm(CblasRowMajor, CblasLeft, CblasUpper, (int)n, (int)r, 1.0, A, (int)n, Q, (int)r, 0.0, AP, (int)r);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)r, (int)r, (int)n, 1.0, Q, (int)r, AP, (int)r, 0.0, C,
                (int)r);
    symmetrize(C, r);
    s = nle__eig_dense(ctx, what, r, C, end == NLE__EIG_SMALLEST ? 0 : r - (size_t)nev, (size_t)nev, vals, U);
  }
  if (!s && vecs)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, nev, (int)r, 1.0, Q, (int)r, U, nev, 0.0, vecs,
                nev);
  free(Q), free(Bc), free(mu), free(AP), free(C), free(U);
  return s;
}

nle_status nle__pencil_solve(nle_ctx *ctx, const char *what, size_t n, const double *A, const double *B, int nev,
                             nle__eig_end end, double *vals, double *vecs, nle__pencil_info *info) {
  nle__pencil_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  info->rank = n;
  if (nev < 1 || (size_t)nev > n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d eigenpairs of a pencil of order %zu", what, nev, n);
  for (size_t i = 0; i < n * n; i++)
    if (!isfinite(A[i]) || !isfinite(B[i]))
      return nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the reduced pencil has a non-finite entry (row %zu)", what, i / n);
  double *R = nle__malloc(ctx, n * n * sizeof(double), "the scale matrix's Cholesky factor");
  if (!R) return NLE_ERR_NOMEM;
  memcpy(R, B, n * n * sizeof(double));
  /* A symmetric matrix's upper triangle in rows is its lower triangle in
   * columns, the same bytes: LAPACK is called column-major on 'L', and the
   * factor L = R^T comes back as R in rows. Row-major, LAPACKE copied each
   * matrix into a transposed temporary and back (at 10,000 landmarks 800 MB
   * a copy, five of them). */
  double anorm = LAPACKE_dlansy(LAPACK_COL_MAJOR, '1', 'L', (lapack_int)n, R, (lapack_int)n);
  bool definite = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, R, (lapack_int)n) == 0;
  double rcond = 0.0;
  if (definite && LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', (lapack_int)n, R, (lapack_int)n, anorm, &rcond) != 0)
    rcond = 0.0;
  nle_status s;
  if (definite && rcond >= SINGULAR_RCOND) {
    info->b_rcond = rcond;
    for (size_t i = 1; i < n; i++) memset(R + i * n, 0, i * sizeof(double)); /* R's lower part: zeros */
    s = solve_cholesky(ctx, what, n, A, B, R, nev, end, vals, vecs, info);
  } else {
    info->singular = true;
    s = solve_range(ctx, what, n, A, B, nev, end, vals, vecs, info);
  }
  free(R);
  return s;
}
