/* eigen.c — the eigensolvers every spectral method shares (SPEC 4.1):
 * LAPACK's dsyevr (a range of eigenpairs of a dense symmetric matrix) and
 * dsygvd (the dense generalised pencil A v = lambda B v) for small
 * problems, and ARPACK's implicitly restarted Lanczos (dsaupd/dseupd) on a
 * symmetric operator the caller applies: the sparse matrix itself (regular
 * mode, one end of the spectrum) or its inverse through a factor
 * (shift-invert, done by the caller's apply). A solver that does not
 * converge says so in a status; it never hands back what it has. Start
 * vectors come from the context's seed, so results repeat. */
#include "eigen.h"
#include "spectral_internal.h"

#include <arpack/arpack.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

nle_status nle__lanczos(nle_ctx *ctx, const char *what, size_t n, nle__sym_apply apply, void *user, int nev,
                        nle__eig_end end, double tol, double *vals, double *vecs) {
  return nle__lanczos_basis(ctx, what, n, apply, user, nev, end, tol, 0, vals, vecs);
}

nle_status nle__lanczos_basis(nle_ctx *ctx, const char *what, size_t n, nle__sym_apply apply, void *user, int nev,
                              nle__eig_end end, double tol, int basis, double *vals, double *vecs) {
  if (nev < 1 || (size_t)nev >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d eigenpairs of a %zu x %zu operator (at most N - 1)", what, nev, n, n);
  /* ncv: 2 nev + 20 Lanczos vectors by default (ARPACK's advice is at
   * least 2 nev); more restarts than needed on the clustered spectra of kNN
   * graphs. */
  a_int nn = (a_int)n, ncv = basis > nev ? basis : 2 * nev + 20;
  ncv = ncv < nn ? ncv : nn;
  a_int lworkl = ncv * (ncv + 8);
  a_int ido = 0, info = 1, iparam[11] = {0}, ipntr[14] = {0};
  iparam[0] = 1;     /* exact shifts */
  iparam[2] = 10000; /* restarts */
  iparam[6] = 1;     /* regular mode on the operator as applied */
  const char *which = end == NLE__EIG_LARGEST ? "LA" : "SA";
  double *resid = nle__malloc(ctx, n * sizeof(double), "Lanczos");
  double *v = nle__malloc(ctx, n * (size_t)ncv * sizeof(double), "the Lanczos basis");
  double *workd = nle__malloc(ctx, 3 * n * sizeof(double), "Lanczos");
  double *workl = nle__malloc(ctx, (size_t)lworkl * sizeof(double), "Lanczos");
  double *d = nle__malloc(ctx, (size_t)ncv * 2 * sizeof(double), "Lanczos");
  a_int *select = nle__calloc(ctx, (size_t)ncv, sizeof(a_int), "Lanczos");
  nle_status s = resid && v && workd && workl && d && select ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    nle_rng r;
    nle_rng_init(&r, nle_ctx_seed(ctx), 0x6c616e63ULL);
    for (size_t i = 0; i < n; i++) resid[i] = nle_rng_uniform(&r) - 0.5;
  }
  long napply = 0;
  while (!s) {
    dsaupd_c(&ido, "I", nn, which, nev, tol, resid, ncv, v, nn, iparam, ipntr, workd, workl, lworkl, &info);
    if (ido != -1 && ido != 1) break;
    if (apply(user, workd + ipntr[0] - 1, workd + ipntr[1] - 1)) /* recorded by apply: keep its status */
      s = nle_ctx_last_status(ctx) != NLE_OK ? nle_ctx_last_status(ctx) : NLE_ERR_NUMERIC;
    napply++;
  }
  nle__log(ctx, 2, "%s: Lanczos, %ld products, %d restarts", what, napply, (int)iparam[2]);
  if (!s && info < 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: ARPACK dsaupd error %d", what, (int)info);
  if (!s && info == 1)
    s = nle__fail(ctx, NLE_ERR_NUMERIC,
                  "%s: Lanczos did not converge: %d of %d eigenpairs after %d restarts (a graph with more connected "
                  "components than eigenpairs asked for has a repeated eigenvalue; see the components policy)",
                  what, (int)iparam[4], nev, (int)iparam[2]);
  double *z = !s && vecs ? nle__malloc(ctx, n * (size_t)nev * sizeof(double), "eigenvectors") : NULL;
  if (!s && vecs && !z) s = NLE_ERR_NOMEM;
  if (!s) {
    dseupd_c(vecs != NULL, "A", select, d, z ? z : v, nn, 0.0, "I", nn, which, nev, tol, resid, ncv, v, nn, iparam,
             ipntr, workd, workl, lworkl, &info);
    if (info != 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: ARPACK dseupd error %d", what, (int)info);
  }
  if (!s) {
    memcpy(vals, d, (size_t)nev * sizeof(double));
    for (size_t i = 0; vecs && i < n; i++) /* ARPACK's columns to our rows */
      for (int t = 0; t < nev; t++) vecs[i * (size_t)nev + (size_t)t] = z[(size_t)t * n + i];
  }
  free(resid);
  free(v);
  free(workd);
  free(workl);
  free(d);
  free(z);
  free(select);
  return s;
}

nle_status nle__eig_dense(nle_ctx *ctx, const char *what, size_t n, double *A, size_t first, size_t count,
                          double *vals, double *vecs) {
  if (count < 1 || first + count > n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: eigenpairs %zu..%zu of a %zu x %zu matrix", what, first + 1,
                     first + count, n, n);
  lapack_int m = 0, nn = (lapack_int)n;
  lapack_int *support = nle__malloc(ctx, 2 * count * sizeof(lapack_int), "eigenvectors");
  double *w = nle__malloc(ctx, n * sizeof(double), "eigenvalues");
  double *z = vecs ? nle__malloc(ctx, n * count * sizeof(double), "eigenvectors") : NULL;
  nle_status s = support && w && (!vecs || z) ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    lapack_int info = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, vecs ? 'V' : 'N', 'I', 'U', nn, A, nn, 0.0, 0.0,
                                     (lapack_int)first + 1, (lapack_int)(first + count), 0.0, &m, w, z ? z : w,
                                     (lapack_int)count, support);
    if (info || (size_t)m != count)
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: LAPACK dsyevr failed (info %d, %d of %zu eigenpairs)", what, (int)info,
                    (int)m, count);
  }
  if (!s) {
    memcpy(vals, w, count * sizeof(double));
    if (vecs) memcpy(vecs, z, n * count * sizeof(double));
  }
  free(support);
  free(w);
  free(z);
  return s;
}

nle_status nle__eig_dense_general(nle_ctx *ctx, const char *what, size_t n, double *A, double *B, size_t first,
                                  size_t count, double *vals, double *vecs) {
  if (count < 1 || first + count > n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: eigenpairs %zu..%zu of a %zu x %zu pencil", what, first + 1,
                     first + count, n, n);
  double *w = nle__malloc(ctx, n * sizeof(double), "eigenvalues");
  if (!w) return NLE_ERR_NOMEM;
  nle_status s = NLE_OK;
  lapack_int info = LAPACKE_dsygvd(LAPACK_ROW_MAJOR, 1, vecs ? 'V' : 'N', 'U', (lapack_int)n, A, (lapack_int)n, B,
                                   (lapack_int)n, w);
  if (info > (lapack_int)n)
    s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the pencil's B is not positive definite (LAPACK dsygvd, minor %d)",
                  what, (int)(info - (lapack_int)n));
  else if (info)
    s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: LAPACK dsygvd failed (info %d)", what, (int)info);
  if (!s) {
    memcpy(vals, w + first, count * sizeof(double));
    for (size_t i = 0; vecs && i < n; i++) memcpy(vecs + i * count, A + i * n + first, count * sizeof(double));
  }
  free(w);
  return s;
}

enum { CENTRED_ROWS = 64 };

static int centred_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  nle__centred_op *op = job;
  size_t i1 = (b + 1) * CENTRED_ROWS < op->n ? (b + 1) * CENTRED_ROWS : op->n;
  for (size_t i = b * CENTRED_ROWS; i < i1; i++) {
    double v = 0.0;
    if (op->S) {
      const float *row = op->S + i * op->n;
      for (size_t j = 0; j < op->n; j++) v += (double)row[j] * op->x[j];
    } else {
      const double *row = op->delta + i * op->n;
      for (size_t j = 0; j < op->n; j++) v += row[j] * row[j] * op->x[j];
    }
    op->y[i] = -0.5 * (v - op->rmean[i] * op->sum_x - op->r_dot_x + op->gmean * op->sum_x);
  }
  return 0;
}

int nle__centred_apply(void *user, const double *x, double *y) {
  nle__centred_op *op = user;
  op->x = x, op->y = y, op->sum_x = op->r_dot_x = 0.0;
  for (size_t j = 0; j < op->n; j++) op->sum_x += x[j], op->r_dot_x += op->rmean[j] * x[j];
  return nle__for_blocks(op->ctx, "classical MDS", (op->n + CENTRED_ROWS - 1) / CENTRED_ROWS,
                         nle__threads_for(op->ctx, (double)op->n * (double)op->n), 0, centred_block, op) != NLE_OK;
}

void nle__fix_signs(double *V, size_t n, size_t count) {
  for (size_t t = 0; t < count; t++) {
    double big = 0.0;
    for (size_t i = 0; i < n; i++)
      if (fabs(V[i * count + t]) > fabs(big)) big = V[i * count + t];
    if (big < 0)
      for (size_t i = 0; i < n; i++) V[i * count + t] = -V[i * count + t];
  }
}

void nle__fix_signs_map(nle_matd *X, double *A, size_t cols) {
  size_t n = X->rows, d = X->cols;
  for (size_t t = 0; t < d; t++) {
    double big = 0.0;
    for (size_t i = 0; i < n; i++)
      if (fabs(X->data[i * d + t]) > fabs(big)) big = X->data[i * d + t];
    if (big >= 0) continue;
    for (size_t i = 0; i < n; i++) X->data[i * d + t] = -X->data[i * d + t];
    for (size_t c = 0; c < cols; c++) A[t * cols + c] = -A[t * cols + c];
  }
}

typedef struct {
  nle_ctx *ctx;
  const char *what;
  cholmod_common *cc;
  cholmod_factor *factor;
  cholmod_dense *rhs;
  size_t n;
} inverse_op;

static int apply_inverse(void *user, const double *x, double *y) {
  inverse_op *op = user;
  memcpy(op->rhs->x, x, op->n * sizeof(double));
  cholmod_dense *sol = cholmod_l_solve(CHOLMOD_A, op->factor, op->rhs, op->cc);
  if (!sol) {
    nle__fail(op->ctx, NLE_ERR_NUMERIC, "%s: CHOLMOD solve failed (status %d)", op->what, op->cc->status);
    return 1;
  }
  memcpy(y, sol->x, op->n * sizeof(double));
  cholmod_l_free_dense(&sol, op->cc);
  return 0;
}

nle_status nle__factor_shifted(nle_ctx *ctx, const char *what, cholmod_common *cc, const nle_csr *M, double shift,
                                bool *definite, cholmod_factor **factor) {
  int64_t n = M->rows, upper = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++) upper += M->colind[q] < i;
  cholmod_sparse *A = cholmod_l_allocate_sparse((size_t)n, (size_t)n, (size_t)(upper + n), 1, 1, 1, CHOLMOD_REAL, cc);
  if (!A) return nle__fail(ctx, NLE_ERR_NOMEM, "%s: CHOLMOD could not allocate the matrix", what);
  nle__chol_int *Ap = A->p, *Ai = A->i;
  double *Ax = A->x;
  int64_t k = 0;
  for (int64_t j = 0; j < n; j++) { /* column j: rows i < j (sorted), then the diagonal */
    Ap[j] = k;
    double diag = shift;
    for (int64_t q = M->rowptr[j]; q < M->rowptr[j + 1]; q++) {
      if (M->colind[q] < j) {
        Ai[k] = M->colind[q];
        Ax[k++] = nle_csr_value(M, q);
      } else if (M->colind[q] == j) {
        diag += nle_csr_value(M, q);
      }
    }
    Ai[k] = j;
    Ax[k++] = diag;
  }
  Ap[n] = k;
  A->sorted = 0;
  nle_status s = NLE_OK;
  *factor = cholmod_l_analyze(A, cc);
  if (!*factor || cc->status != CHOLMOD_OK)
    s = nle__fail(ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? NLE_ERR_NOMEM : NLE_ERR_NUMERIC,
                  "%s: CHOLMOD could not order the matrix (status %d)", what, cc->status);
  else
    s = nle__check_memory(ctx, cc->lnz * (sizeof(double) + sizeof(nle__chol_int)), "the Cholesky factor");
  bool done = !s && cholmod_l_factorize(A, *factor, cc);
  if (definite) *definite = done && cc->status == CHOLMOD_OK;
  if (!s && !(done && (cc->status == CHOLMOD_OK || (definite && cc->status == CHOLMOD_NOT_POSDEF))))
    s = nle__fail(ctx, cc->status == CHOLMOD_OUT_OF_MEMORY ? NLE_ERR_NOMEM : NLE_ERR_NUMERIC,
                  "%s: Cholesky factorisation failed (CHOLMOD status %d%s)", what, cc->status,
                  cc->status == CHOLMOD_NOT_POSDEF ? ": the matrix is not positive semi-definite" : "");
  cholmod_l_free_sparse(&A, cc);
  if (s) cholmod_l_free_factor(factor, cc);
  return s;
}

/* Y = (M + shift I)^-1 X for the block eigensolver: the parallel
 * many-right-hand-side solve (factor_solve.c) when it takes the factor, else
 * CHOLMOD's, column by column of a column-major copy. */
typedef struct {
  nle_ctx *ctx;
  const char *what;
  cholmod_common *cc;
  cholmod_factor *factor;
  nle__factor_solver *solver;
  cholmod_dense *rhs; /* CHOLMOD's route: the n x b column-major right-hand sides, made once */
  size_t n;
} block_inverse_op;

static int apply_inverse_block(void *user, const double *X, double *Y, size_t b) {
  block_inverse_op *op = user;
  size_t n = op->n;
  if (op->solver) {
    memcpy(Y, X, n * b * sizeof(double));
    return nle__factor_solve(op->ctx, op->solver, Y, b) != NLE_OK;
  }
  if (!op->rhs && !(op->rhs = cholmod_l_allocate_dense(n, b, n, CHOLMOD_REAL, op->cc)))
    return nle__fail(op->ctx, NLE_ERR_NOMEM, "%s: out of memory", op->what), 1;
  double *r = op->rhs->x; /* the block's width is the solver's, the same every call */
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < b; t++) r[t * n + i] = X[i * b + t];
  cholmod_dense *sol = cholmod_l_solve(CHOLMOD_A, op->factor, op->rhs, op->cc);
  if (!sol) return nle__fail(op->ctx, NLE_ERR_NUMERIC, "%s: CHOLMOD solve failed (status %d)", op->what,
                             op->cc->status), 1;
  const double *x = sol->x;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < b; t++) Y[i * b + t] = x[t * n + i];
  cholmod_l_free_dense(&sol, op->cc);
  return 0;
}

nle_status nle__smallest_by_factor(nle_ctx *ctx, const char *what, cholmod_common *cc, cholmod_factor *factor,
                                   size_t n, double shift, int nev, double tol, bool block, int basis, double *vals,
                                   double *vecs) {
  double *nu = nle__malloc(ctx, (size_t)nev * sizeof(double), "eigenvalues");
  double *Z = !vecs ? NULL : nle__malloc(ctx, n * (size_t)nev * sizeof(double), "eigenvectors");
  nle_status s = nu && (!vecs || Z) ? NLE_OK : NLE_ERR_NOMEM;
  if (!s && block) {
    block_inverse_op op = {ctx, what, cc, factor, NULL, NULL, n};
    s = nle__factor_solver_new(ctx, factor, &op.solver);
    /* not below 1e-10: the stored solves' rounding along the trivial
     * direction (eps / shift) sets the explicit residuals' floor there */
    if (!s)
      s = nle__block_eigs(ctx, what, n, apply_inverse_block, &op, 4.0 * cc->lnz, nev, NLE__EIG_LARGEST,
                          fmax(tol, 1e-10), nu, Z, NULL);
    nle__factor_solver_free(&op.solver);
    cholmod_l_free_dense(&op.rhs, cc);
  } else if (!s) {
    inverse_op op = {ctx, what, cc, factor, NULL, n};
    if (!(op.rhs = cholmod_l_allocate_dense(n, 1, n, CHOLMOD_REAL, cc)))
      s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", what);
    if (!s) s = nle__lanczos_basis(ctx, what, n, apply_inverse, &op, nev, NLE__EIG_LARGEST, tol, basis, nu, Z);
    cholmod_l_free_dense(&op.rhs, cc);
  }
  for (int t = 0; !s && t < nev; t++) { /* nu ascending = lambda descending */
    int from = nev - 1 - t;
    vals[t] = fmax(1.0 / nu[from] - shift, 0.0);
    for (size_t i = 0; vecs && i < n; i++) vecs[i * (size_t)nev + (size_t)t] = Z[i * (size_t)nev + (size_t)from];
  }
  free(nu);
  free(Z);
  return s;
}

nle_status nle__smallest_shift_invert(nle_ctx *ctx, const char *what, const nle_csr *M, double shift, int nev,
                                      double tol, bool block, double *vals, double *vecs) {
  cholmod_common cc;
  cholmod_l_start(&cc);
  cc.print = 0;
  cholmod_factor *factor = NULL;
  nle_status s = nle__factor_shifted(ctx, what, &cc, M, shift, NULL, &factor);
  /* the inverse's top is far apart from the rest: a short basis (ARPACK
   * fills the whole basis before it tests convergence). 20,000-point
   * roll, k = 12: 48 -> 18 solves (LLE, d = 2), 27 -> 14 (MLLE, LTSA,
   * HLLE), 53 -> 29 (LLE, d = 4); the maps the same to 1e-13. */
  if (!s)
    s = nle__smallest_by_factor(ctx, what, &cc, factor, (size_t)M->rows, shift, nev, tol, block, 2 * nev + 4, vals,
                                vecs);
  cholmod_l_free_factor(&factor, &cc);
  cholmod_l_finish(&cc);
  return s;
}
