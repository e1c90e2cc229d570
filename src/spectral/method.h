/* method.h — the spectral methods' type table (Tapkee's pattern: each
 * method a thin adaptor over the shared graph and eigensolver pieces, one
 * file per method, one row in spectral.c's table). */
#ifndef NLE_SPECTRAL_METHOD_H
#define NLE_SPECTRAL_METHOD_H

#include "eigen.h"

/* What the front door hands a method: the resolved options, the points
 * (or NULL), the directed kNN graph (or NULL when W was given), the
 * symmetric weights W and its component count. */
typedef struct {
  const nle_spectral_opts *o;
  const nle_matf *Y;
  const nle_csr *knn;
  const nle_csr *W;
  int components;
} nle__spectral_job;

typedef struct {
  const char *name;
  nle_components_policy components; /* its policy when the options say auto */
  bool needs_points;                /* the coordinates, not only a graph */
  /* Fills r->X, r->eigenvalues, r->n_eigenvalues and r->solver_used. */
  nle_status (*embed)(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r);
} nle__spectral_method;

extern const nle__spectral_method nle__spectral_le, nle__spectral_lle, nle__spectral_isomap, nle__spectral_diffmap;

/* le.c: the nev smallest eigenpairs (ascending) of W's Laplacian of the
 * given kind, dense or by Lanczos as `solver` says (auto: by size); U the
 * eigenvectors of the symmetric form (u, not v = D^-1/2 u) row-major
 * n x nev; inv_sqrt[n] receives D^-1/2 (0 for isolated points). */
nle_status nle__laplacian_eigs(nle_ctx *ctx, const nle_csr *W, nle_laplacian_kind kind, int nev,
                               nle_eigen_solver solver, double tol, double *vals, double *U, double *inv_sqrt,
                               nle_eigen_solver *used);

/* graph.c: W from the directed kNN graph (squared distances): weights as
 * o->affinity says, then symmetrised by o->rule; the diagonal left out. */
nle_status nle__spectral_weights(nle_ctx *ctx, const nle_csr *knn, const nle_spectral_opts *o, nle_csr **W);
/* Whether A is symmetric (the same value at (i, j) and (j, i), to 1e-12
 * relative); names the first asymmetric pair otherwise. */
nle_status nle__csr_check_symmetric(nle_ctx *ctx, const nle_csr *A, const char *what);
/* Degrees of W, its diagonal left out. */
double *nle__degrees(nle_ctx *ctx, const nle_csr *W);

#endif
