/* spectral_internal.h — the sparse Laplacian factorisation shared by the
 * eigensolvers and the spectral-direction optimiser. */
#ifndef NLE_SPECTRAL_INTERNAL_H
#define NLE_SPECTRAL_INTERNAL_H

#include "../graph/graph_internal.h" /* the search internals the new-point maps reuse */

#include <suitesparse/cholmod.h>

/* CHOLMOD's 64-bit interface (cholmod_l_*) throughout: the factor of a
 * million-point kNN graph's Laplacian passes 2^31 nonzeros, beyond its int
 * interface. Indices of A and L are this type. */
typedef SuiteSparse_long nle__chol_int;

/* CHOLMOD factor of scale L + shift I, L the Laplacian of the symmetric W
 * (D - W, or I - D^-1/2 W D^-1/2 when normalised); W's diagonal is ignored. */
nle_status nle__laplacian_factor(nle_ctx *ctx, cholmod_common *cc, const nle_csr *W, bool normalised, double scale,
                                 double shift, cholmod_factor **factor);

/* The fill of the Laplacian's Cholesky factor, predicted by CHOLMOD's
 * ordering without factorising: nonzeros of the factor over those of the
 * matrix's upper triangle, and the factorisation's floating-point
 * operations. */
nle_status nle__laplacian_fill(nle_ctx *ctx, const nle_csr *W, double *ratio, double *flops);

/* The nev largest eigenvalues of D - W for a dense symmetric W, by Lanczos. */
nle_status nle__laplacian_largest_dense(nle_ctx *ctx, const nle_matd *W, int nev, double *vals);

/* nle_laplacian_smallest, by the block eigensolver when `block`. */
nle_status nle__laplacian_smallest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, bool block, double *vals,
                                   nle_matd **vecs);

/* The nev smallest eigenpairs (values ascending, vectors row-major n x nev
 * or NULL) of the M whose factor F = M + shift I is given, from F^-1: by
 * Lanczos one solve at a time with `basis` vectors (0: ARPACK's default),
 * or (block) by the block eigensolver with the parallel
 * many-right-hand-side solve below. */
nle_status nle__smallest_by_factor(nle_ctx *ctx, const char *what, cholmod_common *cc, cholmod_factor *factor,
                                   size_t n, double shift, int nev, double tol, bool block, int basis, double *vals,
                                   double *vecs);

/* CHOLMOD factor of M + shift I from our CSR (both triangles; CHOLMOD
 * reads the upper one, our rows read as its columns). `definite` NULL: a
 * matrix that is not positive definite is an error; else it says whether
 * it was (the factor then stops at its minor). */
nle_status nle__factor_shifted(nle_ctx *ctx, const char *what, cholmod_common *cc, const nle_csr *M, double shift,
                                bool *definite, cholmod_factor **factor);

/* The reduced pencil of Locally Linear Landmarks held sparse
 * (sparse_pencil.c): out = Z^T (alpha A + diag(diag)) Z as an L x L CSR
 * (both triangles, columns ascending; A or diag may be NULL), each entry
 * summed in the dense reduction's order (the same bits), never N x N. */
nle_status nle__lll_reduce_sparse(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, const nle_csr *A, double alpha,
                                  const double *diag, nle_csr **out);
/* The same from P = alpha A Z given (or NULL) in fixed point, for sums
 * over ranks (lll_dist.c): each term of each entry rounded on its own to
 * units of 2^-scale and the units summed as integers, exact in any order;
 * out's values are those int64 units (8 bytes each, as doubles would be),
 * not doubles. The pattern is the double route's. */
nle_status nle__lll_reduce_units(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, const nle_csr *P, const double *diag,
                                 int scale, nle_csr **out);
/* lll.c: P = alpha A Z (N x L) as CSR: A's rows, Z's columns (Z may hold
 * more rows than A has: A's columns index them). */
nle_status nle__lll_product(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, double alpha, nle_csr **P);

/* A x = B with a CHOLMOD supernodal factor of A, B's n rows of d values
 * row-major, in place, in parallel over the elimination tree (the same bits
 * for any number of threads). _new gives NULL (and NLE_OK) for a factor it
 * does not handle (simplicial, or not postordered): cholmod_l_solve then. The
 * factor must outlive the solver. */
typedef struct nle__factor_solver nle__factor_solver;
nle_status nle__factor_solver_new(nle_ctx *ctx, const cholmod_factor *L, nle__factor_solver **out);
nle_status nle__factor_solve(nle_ctx *ctx, nle__factor_solver *f, double *B, size_t d);
void nle__factor_solver_free(nle__factor_solver **f);

#endif
