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

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Dense below this many points: measured on a Swiss roll (k = 12), the
 * Lanczos path is as fast at 300 points and 4x faster at 1,500. */
enum { DENSE_MAX_N = 400, ROW_BLOCK = 2048 };
/* Shift-invert when CHOLMOD predicts a factor at most this many times the
 * Laplacian's nonzeros and a factorisation of at most this many operations
 * per nonzero of W (see choose_solver). */
#define SHIFT_INVERT_MAX_FILL 40.0
#define SHIFT_INVERT_MAX_FLOPS_PER_NONZERO 7000.0

typedef struct {
  const nle_csr *W;
  const double *deg, *inv_sqrt; /* D of W's rows and D^-1/2 of every column (0 for isolated points) */
  size_t first;                 /* the point W's first row is (distributed: this rank's first; else 0) */
  nle_laplacian_kind kind;
  double shift;                 /* unnormalised: c */
  double *offdiag;              /* the product's values on W's pattern (its diagonal 0):
                                   D^-1/2 W D^-1/2, or W */
  nle_ctx *ctx;
  const double *x;
  double *y;
  size_t cols;                  /* columns of x and y */
} le_operator;

/* The product's values, once: the per-product work is then one multiply
 * and add per nonzero and column. */
static nle_status product_values(nle_ctx *ctx, le_operator *op) {
  const nle_csr *W = op->W;
  op->offdiag = nle__malloc(ctx, (size_t)W->nnz * sizeof(double), "the normalised affinities");
  if (!op->offdiag) return NLE_ERR_NOMEM;
  bool plain = op->kind == NLE_LAPLACIAN_UNNORMALISED;
  for (int64_t i = 0; i < W->rows; i++) {
    int64_t point = (int64_t)op->first + i;
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      int64_t j = W->colind[q];
      double w = j == point ? 0.0 : nle_csr_value(W, q);
      op->offdiag[q] = plain ? w : op->inv_sqrt[point] * w * op->inv_sqrt[j];
    }
  }
  return NLE_OK;
}

/* Rows [b ROW_BLOCK, ...) of Y = D^-1/2 W D^-1/2 X, or (c I - D + W) X,
 * for the N x cols X (row-major); Y holds W's rows (distributed: this
 * rank's, X every point's). */
static int apply_rows(void *job, size_t b, void *scratch) {
  (void)scratch;
  const le_operator *op = job;
  const nle_csr *W = op->W;
  size_t cols = op->cols;
  int64_t i1 = (int64_t)((b + 1) * ROW_BLOCK) < W->rows ? (int64_t)((b + 1) * ROW_BLOCK) : W->rows;
  bool plain = op->kind == NLE_LAPLACIAN_UNNORMALISED;
  for (int64_t i = (int64_t)(b * ROW_BLOCK); i < i1; i++) {
    double *yi = op->y + (size_t)i * cols; /* the row is this block's alone: sums build up in place */
    const double *xi = op->x + (op->first + (size_t)i) * cols;
    memset(yi, 0, cols * sizeof(double));
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      double a = op->offdiag[q];
      const double *xj = op->x + (size_t)W->colind[q] * cols;
      for (size_t t = 0; t < cols; t++) yi[t] += a * xj[t];
    }
    for (size_t t = 0; plain && t < cols; t++) yi[t] += (op->shift - op->deg[i]) * xi[t];
  }
  return 0;
}

static int apply_to_block(void *user, const double *X, double *Y, size_t cols) {
  le_operator *op = user;
  op->x = X, op->y = Y, op->cols = cols;
  size_t blocks = ((size_t)op->W->rows + ROW_BLOCK - 1) / ROW_BLOCK;
  return nle__for_blocks(op->ctx, "Laplacian eigenmaps", blocks,
                         nle__threads_for(op->ctx, (double)op->W->nnz * 2.0 * (double)cols), 0, apply_rows,
                         op) != NLE_OK;
}

static int apply(void *user, const double *x, double *y) { return apply_to_block(user, x, y, 1); }

/* Distributed: x every point's (gathered by the solver), y this rank's rows. */
static int apply_mine(void *user, const double *x_all, double *y_mine) { return apply_to_block(user, x_all, y_mine, 1); }

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

/* With --verbose: each pair's residual ||A z - mu z|| (z of unit norm) on
 * the operator the solver saw, the largest logged. Distributed, x is
 * gathered whole and the squares summed per 4,096-row block
 * (nle__comm_sum_blocks): the same figure for any partition. A check, not
 * a cost: nev more products. */
static nle_status log_residuals(nle_ctx *ctx, le_operator *op, const nle__rows *rows, const double *mu,
                                const double *Z, int nev) {
  if (ctx->verbosity < 1) return NLE_OK;
  size_t n = (size_t)op->W->rows, N = rows ? rows->n : n, begin = rows ? rows->mine.begin : 0;
  size_t blocks = (n + NLE__RANK_ROW_BLOCK - 1) / NLE__RANK_ROW_BLOCK;
  double *x = nle__calloc(ctx, N, sizeof(double), "the residuals");
  double *y = nle__calloc(ctx, n, sizeof(double), "the residuals");
  double *part = nle__calloc(ctx, blocks, sizeof(double), "the residuals");
  nle_status s = x && y && part ? NLE_OK : NLE_ERR_NOMEM;
  if (rows) s = nle__comm_agree(ctx, s);
  double worst = 0.0;
  for (int t = 0; !s && t < nev; t++) {
    for (size_t i = 0; i < n; i++) x[begin + i] = Z[i * (size_t)nev + (size_t)t];
    if (rows) s = nle__comm_allgather_rows(ctx, x + begin, N, sizeof(double), x);
    if (!s && apply_mine(op, x, y)) s = NLE_ERR_NUMERIC;
    if (rows) s = nle__comm_agree(ctx, s);
    memset(part, 0, (blocks ? blocks : 1) * sizeof(double));
    for (size_t i = 0; !s && i < n; i++) {
      double r = y[i] - mu[t] * x[begin + i];
      part[i / NLE__RANK_ROW_BLOCK] += r * r;
    }
    double sum = 0.0;
    if (!s && rows) s = nle__comm_sum_blocks(ctx, part, blocks, 1, &sum);
    for (size_t b = 0; !s && !rows && b < blocks; b++) sum += part[b];
    worst = fmax(worst, sqrt(sum));
  }
  if (!s) nle__log(ctx, 1, "Laplacian eigenmaps: the largest eigen-residual ||A v - lambda v|| is %.3g", worst);
  free(x);
  free(y);
  free(part);
  return s;
}

/* The same at the large end of the shifted operator, by Lanczos, (block)
 * by the block eigensolver, or (rows given: W is this rank's rows) by
 * PARPACK over the ranks. */
static nle_status solve_sparse(nle_ctx *ctx, le_operator *op, int nev, bool block, double tol, double *vals,
                               double *U, const nle__rows *rows) {
  size_t n = (size_t)op->W->rows;
  double *mu = nle__malloc(ctx, (size_t)nev * sizeof(double), "eigenvalues");
  double *Z = nle__malloc(ctx, n * (size_t)nev * sizeof(double), "eigenvectors");
  nle_status s = mu && Z ? NLE_OK : NLE_ERR_NOMEM;
  if (!s && rows)
    s = nle__lanczos_rows(ctx, "Laplacian eigenmaps", rows, op->W, apply_mine, op, nev, NLE__EIG_LARGEST, tol, mu, Z);
  else if (!s && block)
    s = nle__block_eigs(ctx, "Laplacian eigenmaps", n, apply_to_block, op, 2.0 * (double)op->W->nnz, nev,
                        NLE__EIG_LARGEST, tol, mu, Z, NULL);
  else if (!s)
    s = nle__lanczos(ctx, "Laplacian eigenmaps", n, apply, op, nev, NLE__EIG_LARGEST, tol, mu, Z);
  if (!s) s = log_residuals(ctx, op, rows, mu, Z, nev);
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
static nle_status solve_shift_invert(nle_ctx *ctx, const le_operator *op, int nev, bool block, double *vals,
                                     double *U) {
  nle_matd *V = NULL;
  nle_status s = nle__laplacian_smallest(ctx, op->W, op->kind != NLE_LAPLACIAN_UNNORMALISED, nev, block, vals, &V);
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
 * fill and the factorisation's operations before any factorisation. The
 * fill alone misses a wide graph: 20,000 Fashion-MNIST images with
 * K_W = 200 (fill 11, 12,000 operations per nonzero of W) took 160 s by
 * shift-invert to d = 50 against 3.3 s plain. Measured (2026-11-28, per
 * nonzero; shift-invert vs plain seconds, 20,000 points, k = 12): Swiss
 * roll 187 (0.17 vs 6.7), uniform 3-D cube 4,217 (0.59 vs 1.07); the
 * limit sits between the cube and the wide graph. */
static nle_eigen_solver choose_solver(nle_ctx *ctx, const nle_csr *W, nle_eigen_solver asked) {
  size_t n = (size_t)W->rows;
  if (asked != NLE_EIGEN_AUTO) return asked;
  /* under mpirun, even on one rank, as the ranks must (docs/mpi_spectral.md):
   * the same solver at any number of ranks */
  if (nle__has_comm(ctx)) return NLE_EIGEN_SPARSE;
  if (n <= DENSE_MAX_N) return NLE_EIGEN_DENSE;
  double fill = INFINITY, flops = INFINITY;
  if (nle__laplacian_fill(ctx, W, &fill, &flops)) return NLE_EIGEN_SPARSE; /* cannot order: the product needs nothing */
  nle__log(ctx, 1, "Laplacian eigenmaps: CHOLMOD predicts a factor %.1f times the Laplacian, %.3g flops (%.0f per "
           "nonzero of W)", fill, flops, flops / (double)W->nnz);
  return fill <= SHIFT_INVERT_MAX_FILL && flops <= SHIFT_INVERT_MAX_FLOPS_PER_NONZERO * (double)W->nnz
             ? NLE_EIGEN_SHIFT_INVERT
             : NLE_EIGEN_SPARSE;
}

/* Distributed (issue 38): W is this rank's rows with global columns. Every
 * rank gathers the N degrees (their D^-1/2 scale the columns), and PARPACK
 * finds the large end of the normalised affinity or of c I - L: the
 * regular mode the single process's sparse solver uses. A factorisation
 * (shift-invert) or a dense matrix would need the whole graph on one
 * rank: those solvers are refused. */
static nle_status laplacian_eigs_rows(nle_ctx *ctx, const nle_csr *W, nle_laplacian_kind kind, int nev,
                                      nle_eigen_solver solver, double tol, double *vals, double *U,
                                      double *inv_sqrt, nle_eigen_solver *used) {
  if (solver != NLE_EIGEN_AUTO && solver != NLE_EIGEN_SPARSE)
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "Laplacian eigenmaps: {@solver=%s} does not run on more than one rank "
                     "(a factorisation or a dense matrix needs the whole graph on one rank): {@solver=sparse}, "
                     "the default there (docs/mpi_spectral.md)", nle_eigen_solver_name(solver));
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, (size_t)W->rows, "Laplacian eigenmaps", &rows);
  if (s) return s;
  size_t N = rows.n, n = (size_t)W->rows;
  double *deg = nle__degrees_from(ctx, W, rows.mine.begin);
  double *all = nle__malloc(ctx, N * sizeof(double), "the degrees");
  s = deg && all ? NLE_OK : NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgather_rows(ctx, deg, N, sizeof(double), all);
  double dmax = 0.0;
  for (size_t j = 0; !s && j < N; j++) {
    dmax = fmax(dmax, all[j]);
    all[j] = all[j] > 0 ? 1.0 / sqrt(all[j]) : 0.0; /* now D^-1/2 */
  }
  for (size_t i = 0; !s && i < n; i++) inv_sqrt[i] = all[rows.mine.begin + i];
  le_operator op = {W, deg, all, rows.mine.begin, kind, 2.0 * dmax, NULL, ctx, NULL, NULL, 0};
  *used = NLE_EIGEN_SPARSE;
  if (!s) s = product_values(ctx, &op);
  s = nle__comm_agree(ctx, s);
  if (!s) s = solve_sparse(ctx, &op, nev, false, tol, vals, U, &rows);
  free(op.offdiag);
  free(deg);
  free(all);
  return s;
}

nle_status nle__laplacian_eigs(nle_ctx *ctx, const nle_csr *W, nle_laplacian_kind kind, int nev,
                               nle_eigen_solver solver, double tol, double *vals, double *U, double *inv_sqrt,
                               nle_eigen_solver *used) {
  if (nle__distributed(ctx)) return laplacian_eigs_rows(ctx, W, kind, nev, solver, tol, vals, U, inv_sqrt, used);
  size_t n = (size_t)W->rows;
  le_operator op = {W, NULL, inv_sqrt, 0, kind, 0.0, NULL, ctx, NULL, NULL, 0};
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
  nle_status s = *used == NLE_EIGEN_SPARSE || *used == NLE_EIGEN_BLOCK ? product_values(ctx, &op) : NLE_OK;
  if (!s) s = *used == NLE_EIGEN_DENSE         ? solve_dense(ctx, &op, nev, vals, U)
                 : *used == NLE_EIGEN_SHIFT_INVERT ? solve_shift_invert(ctx, &op, nev, false, vals, U)
                                                   : solve_sparse(ctx, &op, nev, *used == NLE_EIGEN_BLOCK, tol, vals, U, NULL);
  free(op.offdiag);
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
  if (nle__distributed(ctx)) s = nle__comm_agree(ctx, s);
  if (!s) s = nle__laplacian_eigs(ctx, W, o->laplacian, (int)nev, o->solver, o->tol, vals, U, inv_sqrt, &r->solver_used);
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++) {
    /* random walk: v = D^-1/2 u, so that V^T D V = U^T U = I */
    double scale = o->laplacian == NLE_LAPLACIAN_RANDOM_WALK ? inv_sqrt[i] : 1.0;
    for (size_t t = 0; t < d; t++) r->X->data[i * d + t] = scale * U[i * nev + t + 1];
  }
  if (!s && nle__distributed(ctx)) s = nle__fix_signs_rows(ctx, r->X->data, n, d);
  else if (!s) nle__fix_signs(r->X->data, n, d);
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
