/* nlembed/spectral.h — graph Laplacians and their eigensolvers, PCA. Part of
 * the public header: include <nlembed.h>, whose opening comment states the
 * conventions every declaration here follows. */
#ifndef NLEMBED_SPECTRAL_H
#define NLEMBED_SPECTRAL_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Spectral: graph Laplacians                                                 */
/* ========================================================================== */

/* The nev smallest eigenvalues (ascending) of the Laplacian of the symmetric
 * W (D - W, or I - D^-1/2 W D^-1/2 when normalised), and when vecs is not
 * NULL their eigenvectors as the columns of an N x nev matrix: ARPACK's
 * Lanczos on (L + eps I)^-1 through a CHOLMOD factor. The zero eigenvalue
 * comes once per connected component. */
NLE_API nle_status nle_laplacian_smallest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals,
                                          nle_matd **vecs);
/* The nev largest eigenvalues (ascending), by Lanczos on L. */
NLE_API nle_status nle_laplacian_largest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals);
/* Laplacian eigenmaps (Belkin and Niyogi; slides 002): the d eigenvectors
 * after the constant one of L v = lambda D v, i.e. D^-1/2 times those of the
 * normalised Laplacian, as an N x d embedding; also the number of connected
 * components of W (more than 1 leaves the embedding degenerate). */
NLE_API nle_status nle_laplacian_eigenmap(nle_ctx *ctx, const nle_csr *W, int d, nle_matd **X, int *components);

/* ========================================================================== */
/* Spectral: PCA                                                              */
/* ========================================================================== */

typedef enum {
  NLE_PCA_AUTO = NLE_AUTO, /* exact unless randomized is much cheaper (large D) */
  NLE_PCA_EXACT = 0,       /* eigendecomposition of the D x D covariance */
  NLE_PCA_RANDOMIZED = 1   /* randomized range finder + small SVD (Halko et al.) */
} nle_pca_solver;

typedef struct {
  int n_components;      /* d, 1 <= d <= min(N, D) (default 2) */
  bool center;           /* true (default): subtract the mean */
  bool whiten;           /* false (default); true: unit variance per component */
  nle_pca_solver solver; /* default NLE_PCA_AUTO */
  int oversample;        /* randomized: extra directions (default 10) */
  int power_iters;       /* randomized: subspace iterations (default 6) */
} nle_pca_opts;

NLE_API void nle_pca_opts_init(nle_pca_opts *o);
/* Solver names "exact", "randomized" and "auto", and back (-1 if unknown). */
NLE_API const char *nle_pca_solver_name(nle_pca_solver solver);
NLE_API int nle_pca_solver_parse(const char *name);

typedef struct {
  int64_t n_samples;
  int32_t dim, n_components;
  double *mean;               /* dim (zeros when not centred) */
  double *components;         /* n_components x dim, orthonormal rows */
  double *explained_variance; /* n_components, eigenvalues of the covariance */
  double total_variance;      /* trace of the covariance */
  bool whiten;                 /* the opts' whiten, as fitted */
  nle_pca_solver solver_used;
} nle_pca_model;

/* Fits PCA to Y (the covariance uses N - 1). Component signs are fixed so the
 * largest-magnitude loading is positive. */
NLE_API nle_status nle_pca_fit(nle_ctx *ctx, const nle_matf *Y, const nle_pca_opts *opts,
                               nle_pca_model **model);
/* Projects points: X = (Y - mean) V^T, divided by sqrt(variance) if whitened. */
NLE_API nle_status nle_pca_transform(nle_ctx *ctx, const nle_pca_model *model,
                                     const nle_matf *Y, nle_matd **X);
NLE_API void nle_pca_model_free(nle_pca_model **model);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_SPECTRAL_H */
