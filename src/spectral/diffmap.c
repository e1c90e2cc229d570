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

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* W_a = Q^-a W Q^-a on W's pattern (diagonal left out). Distributed
 * (issue 38): W is this rank's rows (the first is point rows->mine.begin)
 * with global columns, and every rank gathers the N degrees Q. */
static nle_status alpha_normalise(nle_ctx *ctx, const nle_csr *W, const nle__rows *rows, double alpha, nle_csr **Wa) {
  size_t first = rows->mine.begin;
  double *mine = nle__degrees_from(ctx, W, first), *q = mine;
  nle_status s = mine ? NLE_OK : NLE_ERR_NOMEM;
  if (nle__distributed(ctx)) { /* all N of them */
    q = nle__malloc(ctx, rows->n * sizeof(double), "the degrees");
    if (!q) s = NLE_ERR_NOMEM;
    s = nle__comm_agree(ctx, s);
    if (!s) s = nle__comm_allgather_rows(ctx, mine, rows->n, sizeof(double), q);
  }
  if (!s) s = nle_csr_alloc(ctx, W->rows, W->cols, W->nnz, NLE_F64, Wa);
  for (int64_t i = 0; !s && i < W->rows; i++) {
    int64_t point = (int64_t)first + i;
    (*Wa)->rowptr[i + 1] = W->rowptr[i + 1];
    for (int64_t p = W->rowptr[i]; p < W->rowptr[i + 1]; p++) {
      int32_t j = W->colind[p];
      (*Wa)->colind[p] = j;
      double v = j == point || !(q[point] > 0 && q[j] > 0) ? 0.0 : nle_csr_value(W, p);
      ((double *)(*Wa)->val)[p] = alpha == 0 ? v : v / (pow(q[point], alpha) * pow(q[j], alpha));
    }
  }
  if (q != mine) free(q);
  free(mine);
  return s;
}

/* The sum of D_a over all points: alone a running sum (as before); over
 * ranks per 4,096-row block, combined by nle__comm_sum_blocks (the same
 * for any partition). */
static nle_status degree_total(nle_ctx *ctx, const double *inv_sqrt, size_t n, double *total) {
  *total = 0.0;
  if (!nle__distributed(ctx)) {
    for (size_t i = 0; i < n; i++) *total += inv_sqrt[i] > 0 ? 1.0 / (inv_sqrt[i] * inv_sqrt[i]) : 0.0;
    return NLE_OK;
  }
  size_t blocks = (n + NLE__RANK_ROW_BLOCK - 1) / NLE__RANK_ROW_BLOCK;
  double *part = nle__calloc(ctx, blocks, sizeof(double), "the degrees' sums");
  nle_status s = nle__comm_agree(ctx, part ? NLE_OK : NLE_ERR_NOMEM);
  for (size_t i = 0; !s && i < n; i++)
    part[i / NLE__RANK_ROW_BLOCK] += inv_sqrt[i] > 0 ? 1.0 / (inv_sqrt[i] * inv_sqrt[i]) : 0.0;
  if (!s) s = nle__comm_sum_blocks(ctx, part, blocks, 1, total);
  free(part);
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
  nle__rows rows = {n, {0, n}};
  if (nle__distributed(ctx)) s = nle__comm_agree(ctx, s);
  if (!s && nle__distributed(ctx)) s = nle__comm_rows(ctx, n, "diffusion maps", &rows);
  if (!s) s = alpha_normalise(ctx, job->W, &rows, o->alpha, &Wa);
  if (!s)
    s = nle__laplacian_eigs(ctx, Wa, NLE_LAPLACIAN_SYMMETRIC, (int)nev, o->solver, o->tol, lambda, U, inv_sqrt,
                            &r->solver_used);
  double total = 0.0; /* sum of D_a: psi^T D_a psi = sum D_a makes psi_0 = 1 */
  if (!s) s = degree_total(ctx, inv_sqrt, n, &total);
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t t = 0; !s && t < d; t++) {
    double mu = 1.0 - lambda[t + 1], weight = pow(fmax(mu, 0.0), (double)o->diffusion_time) * sqrt(total);
    for (size_t i = 0; i < n; i++) r->X->data[i * d + t] = weight * inv_sqrt[i] * U[i * nev + t + 1];
  }
  if (!s && nle__distributed(ctx)) s = nle__fix_signs_rows(ctx, r->X->data, n, d);
  else if (!s) nle__fix_signs(r->X->data, n, d);
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
