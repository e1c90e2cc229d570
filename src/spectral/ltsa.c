/* ltsa.c — local tangent space alignment (Zhang and Zha 2004, "Principal
 * manifolds and nonlinear dimensionality reduction via tangent space
 * alignment", SIAM J. Sci. Comput. 26; the lecture slides 002 name LTSA
 * only, SPEC G06-12). Each point's neighbourhood (the point and its k
 * nearest neighbours, as the paper has it: no point is left out of every
 * neighbourhood, which would leave its row of M empty and a second zero
 * eigenvalue; scikit-learn leaves the point out), centred, gives its
 * tangent coordinates: the top d left singular vectors V_i of the centred
 * k x D neighbourhood (here the top eigenvectors of its k x k Gram matrix).
 * The alignment block is the projector off [1/sqrt k, V_i]:
 *   B_i = I - G_i G_i^T,  G_i = [1/sqrt k, V_i]   (their eq. 5.6),
 * and the embedding the bottom eigenvectors of M = sum_i S_i B_i S_i^T
 * after the constant one (alignment.c). */
#include "method.h"

#include <math.h>
#include <stdlib.h>

/* scratch: k D + 2 k^2 + k doubles */
static int ltsa_local(const void *model, const nle__spectral_job *job, size_t i, int32_t *idx, double *block,
                      double *scratch) {
  (void)model;
  size_t D = job->Y->cols, d = (size_t)job->o->dim;
  int k = (int)(job->knn->rowptr[i + 1] - job->knn->rowptr[i]) + 1; /* the point and its neighbours */
  double *V = scratch + (size_t)k * D + (size_t)k * (size_t)k;
  nle__tangent_space(job, i, k, idx, scratch); /* V's first d columns: the tangent coordinates */
  for (int a = 0; a < k; a++)
    for (int c = 0; c < k; c++) {
      double g = 1.0 / k;
      for (size_t t = 0; t < d; t++) g += V[a * k + (int)t] * V[c * k + (int)t];
      block[a * k + c] = (a == c) - g;
    }
  return k;
}

static nle_status ltsa_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  nle_status s = nle__check_tangent_dim(ctx, job, "ltsa");
  if (s) return s;
  int k = nle__max_row(job->knn) + 1; /* neighbourhoods hold the point too */
  if (job->k + 1 <= job->o->dim)
    return nle__fail(ctx, NLE_ERR_ARG, "ltsa: k = %d neighbours cannot span a %d-dimensional tangent space (k >= d)",
                     job->k, job->o->dim);
  nle__local_model lm = {"ltsa", NULL, k, (size_t)k * job->Y->cols + 2 * (size_t)k * (size_t)k + (size_t)k,
                         ltsa_local, false};
  return nle__alignment_embed(ctx, job, &lm, r);
}

const nle__spectral_method nle__spectral_ltsa = {"ltsa", NLE_COMPONENTS_JOIN, false, true, true, false, ltsa_embed,
                                                 &nle__weights_map};
