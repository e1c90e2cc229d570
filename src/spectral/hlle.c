/* hlle.c — Hessian LLE (Donoho and Grimes 2003, "Hessian eigenmaps:
 * locally linear embedding techniques for high-dimensional data", PNAS
 * 100; the lecture slides 002 name it and rate it slow but handling
 * non-convex sets, SPEC G06-12). At each point: the tangent coordinates U
 * (top d eigenvectors of the centred neighbourhood's Gram matrix; the
 * neighbourhood is the point and its k neighbours, as the paper has it, so
 * that no point is left out of M),
 * the local design [1, U, U_a U_b (a <= b)], orthonormalised by
 * Gram-Schmidt; its last d(d+1)/2 columns H estimate the Hessian, and the
 * block is H H^T (their sec. 4: the quadratic form of the Hessian
 * functional). The embedding: M's bottom eigenvectors after the constant
 * one (alignment.c). Needs k + 1 >= 1 + d + d(d+1)/2. */
#include "method.h"

#include <math.h>
#include <stdlib.h>

/* scratch: k D + 2 k^2 + k + k (1 + d + dp) doubles */
static int hlle_local(const void *model, const nle__spectral_job *job, size_t i, int32_t *idx, double *block,
                      double *scratch) {
  (void)model;
  size_t D = job->Y->cols, d = (size_t)job->o->dim, dp = d * (d + 1) / 2, cols = 1 + d + dp;
  int k = (int)(job->knn->rowptr[i + 1] - job->knn->rowptr[i]) + 1; /* the point and its neighbours */
  double *V = scratch + (size_t)k * D + (size_t)k * (size_t)k, *Q = V + (size_t)k * (size_t)k + (size_t)k;
  nle__tangent_space(job, i, k, idx, scratch); /* Q: k x cols, column-major: column c at Q + c k */
  for (int a = 0; a < k; a++) {
    size_t c = 0;
    Q[c++ * (size_t)k + (size_t)a] = 1.0;
    for (size_t t = 0; t < d; t++) Q[c++ * (size_t)k + (size_t)a] = V[a * k + (int)t];
    for (size_t t = 0; t < d; t++)
      for (size_t u = t; u < d; u++) Q[c++ * (size_t)k + (size_t)a] = V[a * k + (int)t] * V[a * k + (int)u];
  }
  for (size_t c = 0; c < cols; c++) { /* modified Gram-Schmidt, twice */
    double *qc = Q + c * (size_t)k;
    for (int pass = 0; pass < 2; pass++)
      for (size_t p = 0; p < c; p++) {
        const double *qp = Q + p * (size_t)k;
        double dot = 0.0;
        for (int a = 0; a < k; a++) dot += qc[a] * qp[a];
        for (int a = 0; a < k; a++) qc[a] -= dot * qp[a];
      }
    double norm = 0.0;
    for (int a = 0; a < k; a++) norm += qc[a] * qc[a];
    if (!(norm > 1e-24)) return -1; /* the design is rank deficient: a degenerate neighbourhood */
    norm = 1.0 / sqrt(norm);
    for (int a = 0; a < k; a++) qc[a] *= norm;
  }
  for (int a = 0; a < k; a++)
    for (int c = 0; c < k; c++) {
      double h = 0.0;
      for (size_t p = 1 + d; p < cols; p++) h += Q[p * (size_t)k + (size_t)a] * Q[p * (size_t)k + (size_t)c];
      block[a * k + c] = h;
    }
  return k;
}

static nle_status hlle_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  nle_status s = nle__check_tangent_dim(ctx, job, "hlle");
  if (s) return s;
  int k = nle__max_row(job->knn) + 1; /* neighbourhoods hold the point too */
  size_t d = (size_t)job->o->dim, dp = d * (d + 1) / 2;
  if ((size_t)job->k + 1 < 1 + d + dp)
    return nle__fail(ctx, NLE_ERR_ARG, "hlle: {@neighbors=%d} neighbours; Hessian LLE in %zu dimensions needs k "
                     ">= d + d(d+1)/2 = %zu", job->k, d, d + dp);
  nle__local_model lm = {"hlle", NULL, k,
                         (size_t)k * job->Y->cols + 2 * (size_t)k * (size_t)k + (size_t)k + (size_t)k * (1 + d + dp),
                         hlle_local, false};
  return nle__alignment_embed(ctx, job, &lm, r);
}

const nle__spectral_method nle__spectral_hlle = {"hlle", NLE_COMPONENTS_JOIN, false, true, true, false, hlle_embed,
                                                 &nle__weights_map};
