/* spectral_internal.h — the sparse Laplacian factorisation shared by the
 * eigensolvers and the spectral-direction optimiser. */
#ifndef NLE_SPECTRAL_INTERNAL_H
#define NLE_SPECTRAL_INTERNAL_H

#include "../core/internal.h"

#include <suitesparse/cholmod.h>

/* CHOLMOD factor of scale L + shift I, L the Laplacian of the symmetric W
 * (D - W, or I - D^-1/2 W D^-1/2 when normalised); W's diagonal is ignored. */
nle_status nle__laplacian_factor(nle_ctx *ctx, cholmod_common *cc, const nle_csr *W, int normalised, double scale,
                                 double shift, cholmod_factor **factor);

/* The nev largest eigenvalues of D - W for a dense symmetric W, by Lanczos. */
nle_status nle__laplacian_largest_dense(nle_ctx *ctx, const nle_matd *W, int nev, double *vals);

#endif
