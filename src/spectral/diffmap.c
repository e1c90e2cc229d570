/* diffmap.c — diffusion maps (Coifman and Lafon 2006, "Diffusion maps",
 * Appl. Comput. Harmon. Anal. 21; the lecture slides 002 only name them,
 * and note that a hole "affects less diffusion distances"). From the
 * graph's weights W:
 *   W_a = Q^-a W Q^-a   (Q = diag(W 1); a = alpha: 0 the normalised graph
 *                        Laplacian, 1/2 Fokker-Planck, 1 (default) the
 *                        Laplace-Beltrami operator, free of the density)
 *   P = D_a^-1 W_a      (D_a = diag(W_a 1): a Markov chain on the points)
 * and the embedding Psi_t(i) = (mu_1^t psi_1(i), ..., mu_d^t psi_d(i)) of
 * P's right eigenvectors after the constant one, psi_k = D_a^-1/2 u_k for
 * the eigenvectors u_k of the symmetric D_a^-1/2 W_a D_a^-1/2, normalised
 * in L^2(pi), pi = D_a 1 / sum D_a (so psi_0 = 1): Euclidean distances in
 * the embedding are diffusion distances at time t (their eq. 3.9). The
 * eigenpairs come from Laplacian eigenmaps' solver on W_a (mu = 1 - lambda
 * of the symmetric normalised Laplacian). */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* W_a = Q^-a W Q^-a on W's pattern (diagonal left out). */
static nle_status alpha_normalise(nle_ctx *ctx, const nle_csr *W, double alpha, nle_csr **Wa) {
  double *q = nle__degrees(ctx, W);
  nle_status s = q ? nle_csr_alloc(ctx, W->rows, W->cols, W->nnz, NLE_F64, Wa) : NLE_ERR_NOMEM;
  for (int64_t i = 0; !s && i < W->rows; i++) {
    (*Wa)->rowptr[i + 1] = W->rowptr[i + 1];
    for (int64_t p = W->rowptr[i]; p < W->rowptr[i + 1]; p++) {
      int32_t j = W->colind[p];
      (*Wa)->colind[p] = j;
      double v = j == i || !(q[i] > 0 && q[j] > 0) ? 0.0 : nle_csr_value(W, p);
      ((double *)(*Wa)->val)[p] = alpha == 0 ? v : v / (pow(q[i], alpha) * pow(q[j], alpha));
    }
  }
  free(q);
  return s;
}

static nle_status diffmap_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  const nle_spectral_opts *o = job->o;
  size_t n = (size_t)job->W->rows, d = (size_t)o->dim, nev = d + 1;
  nle_csr *Wa = NULL;
  double *inv_sqrt = nle__malloc(ctx, n * sizeof(double), "degrees");
  double *lambda = nle__malloc(ctx, nev * sizeof(double), "eigenvalues");
  double *U = nle__malloc(ctx, n * nev * sizeof(double), "eigenvectors");
  nle_status s = inv_sqrt && lambda && U ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = alpha_normalise(ctx, job->W, o->alpha, &Wa);
  if (!s)
    s = nle__laplacian_eigs(ctx, Wa, NLE_LAPLACIAN_SYMMETRIC, (int)nev, o->solver, o->tol, lambda, U, inv_sqrt,
                            &r->solver_used);
  double total = 0.0; /* sum of D_a: psi^T D_a psi = sum D_a makes psi_0 = 1 */
  for (size_t i = 0; !s && i < n; i++) total += inv_sqrt[i] > 0 ? 1.0 / (inv_sqrt[i] * inv_sqrt[i]) : 0.0;
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t t = 0; !s && t < d; t++) {
    double mu = 1.0 - lambda[t + 1], weight = pow(fmax(mu, 0.0), (double)o->diffusion_time) * sqrt(total);
    for (size_t i = 0; i < n; i++) r->X->data[i * d + t] = weight * inv_sqrt[i] * U[i * nev + t + 1];
  }
  if (!s) nle__fix_signs(r->X->data, n, d);
  for (size_t t = 0; !s && t < nev; t++) lambda[t] = 1.0 - lambda[t]; /* P's eigenvalues, descending */
  if (!s) {
    r->eigenvalues = lambda;
    r->n_eigenvalues = (int)nev;
    lambda = NULL;
  }
  nle_csr_free(&Wa);
  free(inv_sqrt);
  free(lambda);
  free(U);
  return s;
}

const nle__spectral_method nle__spectral_diffmap = {"diffmap", NLE_COMPONENTS_JOIN, false, false, false, false, diffmap_embed,
                                                    &nle__diffusion_map};
