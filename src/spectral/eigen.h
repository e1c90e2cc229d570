/* eigen.h — the eigensolvers the spectral methods share (src/spectral/
 * eigen.c): dense LAPACK for small problems, ARPACK's Lanczos on an
 * operator for large sparse ones. Eigenvalues come ascending; eigenvectors
 * as the columns of a row-major n x count array (row i: point i). */
#ifndef NLE_SPECTRAL_EIGEN_H
#define NLE_SPECTRAL_EIGEN_H

#include "../core/comm.h"
#include "../core/internal.h"

/* y = A x for a symmetric A of order n; 0, or non-zero after recording an
 * error in the context. */
typedef int (*nle__sym_apply)(void *user, const double *x, double *y);

typedef enum { NLE__EIG_LARGEST, NLE__EIG_SMALLEST } nle__eig_end;

/* The nev (< n) eigenpairs at one end of A's spectrum by ARPACK (regular
 * mode; shift-invert is an apply that solves). tol 0: machine precision.
 * Errors name `what`; no convergence is NLE_ERR_NUMERIC. vecs may be NULL. */
nle_status nle__lanczos(nle_ctx *ctx, const char *what, size_t n, nle__sym_apply apply, void *user, int nev,
                        nle__eig_end end, double tol, double *vals, double *vecs);
/* The same with `basis` Lanczos vectors (ARPACK's ncv; > nev, capped at
 * n; 0: the default 2 nev + 20). ARPACK fills the whole basis before its
 * first convergence test, so a spectrum whose wanted end stands apart
 * converges in fewer products with a shorter one. */
nle_status nle__lanczos_basis(nle_ctx *ctx, const char *what, size_t n, nle__sym_apply apply, void *user, int nev,
                              nle__eig_end end, double tol, int basis, double *vals, double *vecs);
/* Y = A X for n x b row-major blocks (row i: point i); 0, or non-zero
 * after recording an error. The same bits for any thread count. */
typedef int (*nle__block_apply)(void *user, const double *X, double *Y, size_t b);
typedef struct {
  int restarts;            /* thick restarts of the Krylov basis */
  long products;           /* operator columns applied (b per block product) */
  int block, basis;        /* the block size and the basis' largest size */
} nle__block_info;
/* The nev eigenpairs at one end of A's spectrum by a thick-restarted block
 * Krylov method (src/spectral/block_eigen.c): values ascending, vectors
 * the columns of the row-major n x nev vecs (may be NULL). tol: relative
 * residual ||A x - theta x|| / |theta|; 0: 1e-10. column_flops: what one
 * column's product costs (0: unknown), from which it decides whether to
 * test convergence before the basis is full. Needs n at least the basis
 * (about 2 nev + 4 b, b = nev / 2 within [2, 16]). */
/* The block's width nle__block_eigs takes for nev pairs (its apply gets
 * blocks of this many columns). */
size_t nle__block_width(int nev);
nle_status nle__block_eigs(nle_ctx *ctx, const char *what, size_t n, nle__block_apply apply, void *user,
                           double column_flops, int nev, nle__eig_end end, double tol, double *vals, double *vecs,
                           nle__block_info *info);
/* Eigenpairs first..first + count - 1 (0-based, ascending) of the dense
 * symmetric n x n row-major A (overwritten) by LAPACK dsyevr. */
nle_status nle__eig_dense(nle_ctx *ctx, const char *what, size_t n, double *A, size_t first, size_t count,
                          double *vals, double *vecs);
/* The same for the pencil A v = lambda B v, B symmetric positive definite
 * (both overwritten), by dsygvd: the vectors are B-orthonormal. */
nle_status nle__eig_dense_general(nle_ctx *ctx, const char *what, size_t n, double *A, double *B, size_t first,
                                  size_t count, double *vals, double *vecs);
/* y = B x for B = -1/2 J M J (classical MDS, slides "Classic Metric MDS"),
 * M symmetric of squared distances held as their squares in float (S) or
 * as distances in double (delta, squared on the fly), never forming B:
 * B x = -1/2 (M x - r (1.x) - 1 (r.x) + g 1 (1.x)), r M's row means and g
 * their mean; rows in fixed blocks in parallel. For nle__lanczos. */
typedef struct {
  nle_ctx *ctx;
  const float *S;
  const double *delta;
  const double *rmean;
  double gmean;
  size_t n;
  const double *x; /* the product's operands, set by nle__centred_apply */
  double *y;
  double sum_x, r_dot_x;
} nle__centred_op;
int nle__centred_apply(void *user, const double *x, double *y);

/* The reduced generalised eigenproblem A v = lambda B v that Locally Linear
 * Landmarks (dissertation eqs. 4.4-4.5: A~ = Z A Z^T, B~ = Z B Z^T) and
 * kernel eigenmaps (Brand eq. 8: (Z W Z^T, Z D Z^T)) share (SPEC G07-20):
 * A symmetric, B symmetric positive semi-definite, both dense n x n
 * row-major (not modified). nev eigenpairs at `end` of the spectrum, values
 * ascending, vectors the B-orthonormal columns of the row-major n x nev
 * vecs (may be NULL). B = R^T R by Cholesky (Brand eqs. 9-11); where B is
 * singular or its reciprocal condition is below 1e-10 (Brand's affine
 * pencil on homogeneous coordinates, SPEC G07-16), the problem is solved
 * in B's numerical range through its eigendecomposition (Brand's footnote
 * 1) and info says so. Dense LAPACK up to a few thousand; larger, Lanczos:
 * shift-invert through the factors of B and A + shift B for the smallest
 * end, regular on R^-T A R^-1 for the largest. */
typedef struct {
  bool singular;      /* B was (numerically) singular: solved in its range */
  size_t rank;        /* the dimension solved in (n unless singular) */
  double b_rcond;     /* B's reciprocal condition number (LAPACK's estimate,
                         or smallest / largest eigenvalue when singular) */
  bool lanczos;       /* solved by Lanczos rather than dense LAPACK */
  bool sparse;        /* held sparse: nle__sparse_pencil_solve */
} nle__pencil_info;
nle_status nle__pencil_solve(nle_ctx *ctx, const char *what, size_t n, const double *A, const double *B, int nev,
                             nle__eig_end end, double *vals, double *vecs, nle__pencil_info *info);
/* The same pencil held sparse (both CSR, both triangles; sparse_pencil.c):
 * B = P^T R^T R P by CHOLMOD, Lanczos to relative tolerance tol on
 * R^-T P A P^T R^-1 at `end` (block: the block eigensolver instead), v =
 * P^T R^-1 u. A B that is singular or
 * nearly so (reciprocal condition under 1e-10) is NLE_ERR_NUMERIC with
 * info->singular set: its range needs B's eigendecomposition, which only
 * the dense solver has. */
nle_status nle__sparse_pencil_solve(nle_ctx *ctx, const char *what, const nle_csr *A, const nle_csr *B, int nev,
                                    nle__eig_end end, double tol, bool block, double *vals, double *vecs,
                                    nle__pencil_info *info);
/* The largest order solved densely (2,500; tests lower it to reach the
 * Lanczos route on small problems). */
extern size_t nle__pencil_dense_max;

/* The same by rows over the context's ranks (eigen_rows.c, issue 38):
 * PARPACK's pdsaupd/pdseupd in regular mode with eigen.c's basis, start
 * vector, which and tolerance. `apply` gets the whole x (N, gathered from
 * every rank's rows here) and writes this rank's rows of y = A x; vals (nev,
 * ascending) on every rank, vecs this rank's rows (row-major, n_local x
 * nev; may be NULL). Needs more than one rank; a rank holding no rows waits.
 * Not the single process's bits: PARPACK sums its inner products over the
 * ranks in arrival order (docs/mpi_spectral.md). */
typedef int (*nle__rows_apply)(void *user, const double *x_all, double *y_mine);
nle_status nle__lanczos_rows(nle_ctx *ctx, const char *what, const nle__rows *rows, const nle_csr *pattern,
                             nle__rows_apply apply, void *user, int nev, nle__eig_end end, double tol, double *vals,
                             double *vecs);
/* nle__fix_signs over the ranks' rows (V: this rank's n rows): the entry
 * that decides is the one a single process's scan finds, for any
 * partition. Collective. */
nle_status nle__fix_signs_rows(nle_ctx *ctx, double *V, size_t n, size_t count);

/* Each column's largest-magnitude entry made positive: results that do not
 * depend on a solver's arbitrary signs. */
void nle__fix_signs(double *V, size_t n, size_t count);
/* Each axis of X flipped, with its row of the map A (X->cols x cols), so
 * that X's largest-magnitude coordinate on it is positive (nle__fix_signs'
 * rule, the map kept consistent: a training point maps to its row). */
void nle__fix_signs_map(nle_matd *X, double *A, size_t cols);

/* The nev smallest eigenpairs of a sparse symmetric positive semi-definite
 * M (CSR holding both triangles) from (M + shift I)^-1 through a CHOLMOD
 * factor (shift-invert: the small end becomes the large, well separated
 * end), by Lanczos or (block) by the block eigensolver. shift > 0 keeps the
 * factor definite; it must be far below the eigenvalues wanted (they come
 * back as 1/nu - shift). */
nle_status nle__smallest_shift_invert(nle_ctx *ctx, const char *what, const nle_csr *M, double shift, int nev,
                                      double tol, bool block, double *vals, double *vecs);

#endif
