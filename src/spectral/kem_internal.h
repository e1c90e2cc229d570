/* kem_internal.h — what kem.c (the fit and the pencils) and kem_map.c (the
 * basis z(x), the maps G and G+, the model file) share. */
#ifndef NLE_SPECTRAL_KEM_INTERNAL_H
#define NLE_SPECTRAL_KEM_INTERNAL_H

#include "eigen.h"

/* A model with its arrays allocated (zeroed) for the given shape: centres
 * and mean always, proj when q < D (not lpp), G (dim x (m + affine)), v1
 * when the variant divides, the inverse's arrays for inv_kernels. */
nle_status nle__kem_model_new(nle_ctx *ctx, nle_kem_variant variant, bool lpp, size_t D, size_t dim, size_t kernels,
                              size_t q, nle_kem_model **out);
/* Whether the variant's map divides by v_1^T z. */
static inline bool nle__kem_divides(nle_kem_variant v) {
  return v == NLE_KEM_REWEIGHTED || v == NLE_KEM_STOCHASTIC;
}
/* The basis of the rows of X into Zt (M x m, rows zeroed here), by blocks
 * on the context's threads. */
nle_status nle__kem_basis(nle_ctx *ctx, const nle_kem_model *m, const nle_matf *X, double *Zt);
/* The local affine inverses (b_k, A_k^+, Sigma'_k) from the forward map
 * (G and v1 set). */
nle_status nle__kem_build_inverse(nle_ctx *ctx, nle_kem_model *m);

/* G(x) and its Jacobian J (dim x D) at x (D doubles), for the tests. */
nle_status nle__kem_jacobian(nle_ctx *ctx, const nle_kem_model *m, const double *x, double *y, double *J);

/* kem_map.c: this model's kind of model file (../io/model_file.h). */
struct nle__model_kind;
extern const struct nle__model_kind nle__kem_model_kind;

#endif
