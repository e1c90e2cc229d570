/* sweep.c — model selection for spectral clustering (dissertation sec.
 * 4.5, "Reusing Z": "Z depends only on the topology of the data and not on
 * the particular algorithm"; fig. 4.14's grid over sigma and K_W). What
 * does not depend on the cell is made once: the kNN graph at the largest
 * K_W (a smaller K_W keeps each sorted row's first entries, the graph a
 * search at that K_W gives) and, with LLL, the landmarks and Z. What does
 * depend on it is not reused: the weights, and with them D and B~ = Z D
 * Z^T (SPEC G07-4: only for PCA and kernel PCA, where B = I, is B~ = Z Z^T
 * the same in every cell). */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nle_sweep_result_free(nle_sweep_result **r) {
  if (!r || !*r) return;
  free((*r)->cells);
  free((*r)->labels);
  free(*r);
  *r = NULL;
}

/* The rows' first k entries of a sorted kNN graph. */
static nle_status truncated(nle_ctx *ctx, const nle_csr *G, int k, nle_csr **out) {
  int64_t n = G->rows, nnz = 0;
  for (int64_t i = 0; i < n; i++) nnz += G->rowptr[i + 1] - G->rowptr[i] < k ? G->rowptr[i + 1] - G->rowptr[i] : k;
  nle_status s = nle_csr_alloc(ctx, n, G->cols, nnz, G->dtype, out);
  size_t es = G->dtype == NLE_F64 ? sizeof(double) : sizeof(float);
  for (int64_t i = 0, at = 0; !s && i < n; i++) {
    int64_t len = G->rowptr[i + 1] - G->rowptr[i] < k ? G->rowptr[i + 1] - G->rowptr[i] : k;
    memcpy((*out)->colind + at, G->colind + G->rowptr[i], (size_t)len * sizeof(int32_t));
    memcpy((char *)(*out)->val + (size_t)at * es, (const char *)G->val + (size_t)G->rowptr[i] * es, (size_t)len * es);
    at += len;
    (*out)->rowptr[i + 1] = at;
  }
  return s;
}

nle_status nle_cluster_sweep(nle_ctx *ctx, const nle_matf *Y, const int32_t *truth, const nle_cluster_opts *opts,
                             const double *sigmas, size_t n_sigma, const int *ks, size_t n_k,
                             nle_sweep_result **out) {
  *out = NULL;
  if (!Y || !truth || !sigmas || !ks || n_sigma < 1 || n_k < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "sweep: points, labels and at least one sigma and one k are needed");
  size_t n = Y->rows;
  int kmax = 0;
  for (size_t a = 0; a < n_k; a++) {
    if (ks[a] < 1 || (size_t)ks[a] >= n)
      return nle__fail(ctx, NLE_ERR_ARG, "sweep: k = %d ({@sweep-k}) for %zu points (1..N - 1)", ks[a], n);
    kmax = ks[a] > kmax ? ks[a] : kmax;
  }
  for (size_t a = 0; a < n_sigma; a++)
    if (!(sigmas[a] > 0 && isfinite(sigmas[a])))
      return nle__fail(ctx, NLE_ERR_ARG, "sweep: sigma = %g ({@sweep-sigma}) must be a finite number > 0", sigmas[a]);
  nle_cluster_opts defaults;
  if (!opts) nle_cluster_opts_init(&defaults), opts = &defaults;
  double t_start = nle_time_seconds();
  nle_sweep_result *r = nle__calloc(ctx, 1, sizeof *r, "the sweep");
  nle_sweep_cell *cells = nle__calloc(ctx, n_sigma * n_k, sizeof *cells, "the sweep");
  int32_t *labels = nle__malloc(ctx, n * sizeof(int32_t), "the sweep's labels");
  if (!r || !cells || !labels) {
    free(r), free(cells), free(labels);
    return NLE_ERR_NOMEM;
  }
  r->cells = cells, r->labels = labels, r->n = n, r->n_cells = n_sigma * n_k;
  nle_spectral_opts so = opts->spectral;
  so.k = kmax;
  nle_spectral_result scratch;
  memset(&scratch, 0, sizeof scratch);
  nle_csr *graph = NULL, *Z = NULL;
  nle_matf *projected = NULL;
  int32_t *landmarks = NULL;
  nle_status s = nle__spectral_neighbours(ctx, Y, &so, &scratch, NULL, &graph, &projected);
  size_t L = (size_t)so.landmarks;
  if (!s && L > 0 && (L > n || L < (size_t)(opts->dims == NLE_AUTO ? opts->clusters : opts->dims + 1)))
    s = nle__fail(ctx, NLE_ERR_ARG, "sweep: %zu landmarks of %zu points", L, n);
  double err = 0.0;
  if (!s && L > 0)
    s = nle__lll_basis_build(ctx, Y, projected, L, nle__lll_kz(&so, L, Y->cols), so.landmark_method, so.reg,
                             &landmarks, &Z, &err);
  nle__lll_basis basis = {landmarks, Z, err};
  r->setup_seconds = nle_time_seconds() - t_start;
  double best = INFINITY;
  for (size_t b = 0; !s && b < n_k; b++) {
    nle_csr *G = NULL;
    s = truncated(ctx, graph, ks[b], &G);
    for (size_t a = 0; !s && a < n_sigma; a++) {
      nle_sweep_cell *c = &cells[a * n_k + b];
      double t0 = nle_time_seconds();
      nle_cluster_opts co = *opts;
      co.spectral = so;
      co.spectral.k = ks[b];
      co.spectral.affinity = NLE_AFF_GAUSSIAN;
      co.spectral.sigma = sigmas[a];
      co.spectral.keep_model = false;
      nle_spectral_input in = {Y, G, NULL};
      nle_cluster_result *cr = NULL;
      c->sigma = sigmas[a], c->k = ks[b];
      c->error_majority = c->error_matched = NAN;
      nle_status cs = nle__spectral_cluster_with(ctx, &in, &co, L > 0 ? &basis : NULL, &cr);
      if (cs == NLE_ERR_NOMEM || cs == NLE_ERR_CANCELLED || cs == NLE_ERR_MEMCAP) s = cs;
      if (!cs) { /* a cell that fails (e.g. Lanczos on a graph in pieces) stays NaN: the dissertation's "did not converge" */
        c->components = cr->embedding->components;
        cs = nle_clustering_error(ctx, cr->labels, truth, n, &c->error_matched, &c->error_majority);
        if (!cs && c->error_majority < best) best = c->error_majority, r->best = a * n_k + b,
                                               memcpy(labels, cr->labels, n * sizeof(int32_t));
      } else {
        nle__log(ctx, 1, "sweep: sigma %g, k %d: %s", sigmas[a], ks[b], nle_ctx_error(ctx));
      }
      nle_cluster_result_free(&cr);
      c->seconds = nle_time_seconds() - t0;
    }
    nle_csr_free(&G);
  }
  if (!s && !isfinite(best)) s = nle__fail(ctx, NLE_ERR_NUMERIC, "sweep: every cell failed (see the log)");
  nle_csr_free(&graph), nle_csr_free(&Z);
  nle_matf_free(&projected);
  free(landmarks);
  r->total_seconds = nle_time_seconds() - t_start;
  if (s) {
    nle_sweep_result_free(&r);
    return s;
  }
  *out = r;
  return NLE_OK;
}
