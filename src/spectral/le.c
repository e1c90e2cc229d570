/* le.c — Laplacian eigenmaps (lecture slides 002, "Laplacian eigenmaps" and
 * "Higher-d embeddings"; Belkin and Niyogi 2003): the d eigenvectors after
 * the trivial one at the small end of the graph Laplacian's spectrum, in
 * one of three normalisations (SPEC G06-6):
 *   random walk (default)  L v = lambda D v,             V^T D V = I
 *   symmetric              (I - D^-1/2 W D^-1/2) u = lambda u,  U^T U = I
 *   unnormalised (slides)  (D - W) f = lambda f,         F^T F = I
 * The first two share their eigenvalues (v = D^-1/2 u). Small graphs are
 * solved densely (LAPACK); large ones by Lanczos at the large end of the
 * normalised affinity D^-1/2 W D^-1/2 (eigenvalues 1 - lambda) or of
 * c I - L for the unnormalised one (c = 2 max degree >= lambda_max): a
 * sparse product per step, no factorisation, whose fill-in on kNN graphs
 * of high-dimensional data is what makes shift-invert slow there. */
#include "method.h"
#include "spectral_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Dense below this many points: measured on a Swiss roll (k = 12), the
 * Lanczos path is as fast at 300 points and 4x faster at 1,500. */
enum { DENSE_MAX_N = 400, ROW_BLOCK = 2048 };
/* Shift-invert when CHOLMOD predicts a factor at most this many times the
 * Laplacian's nonzeros (see choose_solver). */
#define SHIFT_INVERT_MAX_FILL 40.0

typedef struct {
  const nle_csr *W;
  const double *deg, *inv_sqrt; /* D and D^-1/2 (0 for isolated points) */
  nle_laplacian_kind kind;
  double shift;                 /* unnormalised: c */
  nle_ctx *ctx;
  const double *x;
  double *y;
} le_operator;

/* Rows [b ROW_BLOCK, ...) of y = D^-1/2 W D^-1/2 x, or (c I - D + W) x. */
static int apply_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const le_operator *op = job;
  const nle_csr *W = op->W;
  int64_t i1 = (int64_t)((b + 1) * ROW_BLOCK) < W->rows ? (int64_t)((b + 1) * ROW_BLOCK) : W->rows;
  for (int64_t i = (int64_t)(b * ROW_BLOCK); i < i1; i++) {
    double v = 0.0;
    if (op->kind == NLE_LAPLACIAN_UNNORMALISED) {
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
        if (W->colind[q] != i) v += nle_csr_value(W, q) * op->x[W->colind[q]];
      op->y[i] = v + (op->shift - op->deg[i]) * op->x[i];
    } else {
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
        if (W->colind[q] != i) v += nle_csr_value(W, q) * op->inv_sqrt[W->colind[q]] * op->x[W->colind[q]];
      op->y[i] = op->inv_sqrt[i] * v;
    }
  }
  return 0;
}

static int apply(void *user, const double *x, double *y) {
  le_operator *op = user;
  op->x = x;
  op->y = y;
  size_t blocks = ((size_t)op->W->rows + ROW_BLOCK - 1) / ROW_BLOCK;
  return nle__for_blocks(op->ctx, "Laplacian eigenmaps", blocks,
                         nle__threads_for(op->ctx, (double)op->W->nnz * 4.0), 0, apply_block, op) != NLE_OK;
}

/* The d + 1 smallest eigenpairs of the chosen Laplacian, densely. */
static nle_status solve_dense(nle_ctx *ctx, const le_operator *op, int nev, double *vals, double *U) {
  size_t n = (size_t)op->W->rows;
  nle_status s = nle__check_memory(ctx, (double)n * (double)n * sizeof(double), "the dense Laplacian");
  if (s) return s;
  double *M = nle__calloc(ctx, n * n, sizeof(double), "the dense Laplacian");
  if (!M) return NLE_ERR_NOMEM;
  const nle_csr *W = op->W;
  int normalised = op->kind != NLE_LAPLACIAN_UNNORMALISED;
  for (size_t i = 0; i < n; i++) {
    M[i * n + i] = normalised ? 1.0 : op->deg[i];
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      size_t j = (size_t)W->colind[q];
      if (j != i) M[i * n + j] -= normalised ? op->inv_sqrt[i] * nle_csr_value(W, q) * op->inv_sqrt[j]
                                             : nle_csr_value(W, q);
    }
  }
  s = nle__eig_dense(ctx, "Laplacian eigenmaps", n, M, 0, (size_t)nev, vals, U);
  free(M);
  return s;
}

/* The same by Lanczos at the large end of the shifted operator. */
static nle_status solve_sparse(nle_ctx *ctx, le_operator *op, int nev, double tol, double *vals, double *U) {
  size_t n = (size_t)op->W->rows;
  double *mu = nle__malloc(ctx, (size_t)nev * sizeof(double), "eigenvalues");
  double *Z = nle__malloc(ctx, n * (size_t)nev * sizeof(double), "eigenvectors");
  nle_status s = mu && Z ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle__lanczos(ctx, "Laplacian eigenmaps", n, apply, op, nev, NLE__EIG_LARGEST, tol, mu, Z);
  /* mu ascending is lambda descending: reverse. */
  double top = op->kind == NLE_LAPLACIAN_UNNORMALISED ? op->shift : 1.0;
  for (int t = 0; !s && t < nev; t++) {
    int from = nev - 1 - t;
    vals[t] = fmax(top - mu[from], 0.0);
    for (size_t i = 0; i < n; i++) U[i * (size_t)nev + (size_t)t] = Z[i * (size_t)nev + (size_t)from];
  }
  free(mu);
  free(Z);
  return s;
}

/* The d + 1 smallest by Lanczos on (L + eps I)^-1 (nle_laplacian_smallest:
 * the normalised Laplacian for both normalised kinds, eigenvectors u). */
static nle_status solve_shift_invert(nle_ctx *ctx, const le_operator *op, int nev, double *vals, double *U) {
  nle_matd *V = NULL;
  nle_status s = nle_laplacian_smallest(ctx, op->W, op->kind != NLE_LAPLACIAN_UNNORMALISED, nev, vals, &V);
  if (!s) memcpy(U, V->data, V->rows * V->cols * sizeof(double));
  nle_matd_free(&V);
  return s;
}

/* Dense for small graphs. Above, the two Lanczos paths trade places with
 * the graph: on a low-dimensional manifold's kNN graph the Laplacian's
 * factor stays sparse (small separators) and shift-invert converges in a
 * few dozen solves, where the plain product's small end is crowded
 * (Swiss roll, 20,000 points: 6.7 s plain); on high-dimensional data the
 * factor fills in (70,000 Fashion-MNIST images: tens of seconds) and the
 * plain product converges fast (4.4 s). CHOLMOD's ordering predicts the
 * fill before any factorisation. */
static nle_eigen_solver choose_solver(nle_ctx *ctx, const nle_csr *W, nle_eigen_solver asked) {
  size_t n = (size_t)W->rows;
  if (asked != NLE_EIGEN_AUTO) return asked;
  if (n <= DENSE_MAX_N) return NLE_EIGEN_DENSE;
  double fill = INFINITY;
  if (nle__laplacian_fill(ctx, W, &fill)) return NLE_EIGEN_SPARSE; /* cannot order: the product needs nothing */
  nle__log(ctx, 1, "Laplacian eigenmaps: CHOLMOD predicts a factor %.1f times the Laplacian", fill);
  return fill <= SHIFT_INVERT_MAX_FILL ? NLE_EIGEN_SHIFT_INVERT : NLE_EIGEN_SPARSE;
}

nle_status nle__laplacian_eigs(nle_ctx *ctx, const nle_csr *W, nle_laplacian_kind kind, int nev,
                               nle_eigen_solver solver, double tol, double *vals, double *U, double *inv_sqrt,
                               nle_eigen_solver *used) {
  size_t n = (size_t)W->rows;
  le_operator op = {W, NULL, inv_sqrt, kind, 0.0, ctx, NULL, NULL};
  double *deg = nle__degrees(ctx, W);
  if (!deg) return NLE_ERR_NOMEM;
  double dmax = 0.0;
  for (size_t i = 0; i < n; i++) {
    inv_sqrt[i] = deg[i] > 0 ? 1.0 / sqrt(deg[i]) : 0.0;
    dmax = fmax(dmax, deg[i]);
  }
  op.deg = deg;
  op.shift = 2.0 * dmax; /* Gershgorin: every eigenvalue of D - W is at most 2 max degree */
  *used = choose_solver(ctx, W, solver);
  nle_status s = *used == NLE_EIGEN_DENSE         ? solve_dense(ctx, &op, nev, vals, U)
                 : *used == NLE_EIGEN_SHIFT_INVERT ? solve_shift_invert(ctx, &op, nev, vals, U)
                                                   : solve_sparse(ctx, &op, nev, tol, vals, U);
  free(deg);
  return s;
}

static nle_status le_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  const nle_spectral_opts *o = job->o;
  if (o->landmarks > 0) return nle__lll_embed(ctx, job, r);
  const nle_csr *W = job->W;
  size_t n = (size_t)W->rows, d = (size_t)o->dim, nev = d + 1;
  double *inv_sqrt = nle__malloc(ctx, n * sizeof(double), "degrees");
  double *vals = nle__malloc(ctx, nev * sizeof(double), "eigenvalues");
  double *U = nle__malloc(ctx, n * nev * sizeof(double), "eigenvectors");
  nle_status s = inv_sqrt && vals && U ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle__laplacian_eigs(ctx, W, o->laplacian, (int)nev, o->solver, o->tol, vals, U, inv_sqrt, &r->solver_used);
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++) {
    /* random walk: v = D^-1/2 u, so that V^T D V = U^T U = I */
    double scale = o->laplacian == NLE_LAPLACIAN_RANDOM_WALK ? inv_sqrt[i] : 1.0;
    for (size_t t = 0; t < d; t++) r->X->data[i * d + t] = scale * U[i * nev + t + 1];
  }
  if (!s) nle__fix_signs(r->X->data, n, d);
  if (!s) {
    r->eigenvalues = vals;
    r->n_eigenvalues = (int)nev;
    vals = NULL;
  }
  free(inv_sqrt);
  free(vals);
  free(U);
  return s;
}

const nle__spectral_method nle__spectral_le = {"le", NLE_COMPONENTS_JOIN, false, false, false, true, le_embed,
                                               &nle__nystrom_map};
