/* homotopy.c — EE's critical lambda and the homotopy over lambda (EE paper
 * sec. 4.2, 4.4): bounds l1 <= lambda1* <= u1 from the spectra of the two
 * graph Laplacians (eqs. 11-12), and the path X(lambda) tracked over
 * log-spaced lambda from above the bifurcation. */
#include "nle_internal.h"
#include "../spectral/spectral_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void nle_homotopy_opts_init(nle_homotopy_opts *o) {
  o->lambda_start = 1e-4;
  o->lambda_end = 1e2;
  o->steps = 50;
}

/* Dense Laplacian D - W of a sparse or dense symmetric W (or uniform W = 1 - I). */
static void dense_laplacian(size_t n, const nle_csr *Ws, const nle_matd *Wd, int uniform, double *L) {
  memset(L, 0, n * n * sizeof(double));
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      if (i == j) continue;
      double w = uniform ? 1.0 : Wd ? Wd->data[i * n + j] : 0.0;
      L[i * n + j] -= w;
      L[i * n + i] += w;
    }
  if (Ws)
    for (size_t i = 0; i < n; i++)
      for (int64_t q = Ws->rowptr[i]; q < Ws->rowptr[i + 1]; q++) {
        size_t j = (size_t)Ws->colind[q];
        if (j == i) continue;
        double w = nle_csr_value(Ws, q);
        L[i * n + j] -= w;
        L[i * n + i] += w;
      }
}

nle_status nle_ee_lambda_bounds(nle_ctx *ctx, const nle_csr *Wp, nle_wneg_kind wneg, const nle_matd *Wneg_dense,
                                const nle_csr *Wneg_sparse, double *l1, double *u1) {
  size_t n = (size_t)Wp->rows;
  if (n < 3) return nle__fail(ctx, NLE_ERR_ARG, "lambda* bounds need at least 3 points");
  if ((wneg == NLE_WNEG_SQDIST && !Wneg_dense) || (wneg == NLE_WNEG_KNN && !Wneg_sparse))
    return nle__fail(ctx, NLE_ERR_ARG, "lambda* bounds: the W- matrix is missing");
  nle_status s = nle__check_memory(ctx, 3.0 * (double)n * n * 8, "the dense Laplacians of the lambda* bounds");
  if (s) return s;
  double *Lp = nle__malloc(ctx, n * n * sizeof(double), "L+"), *Lm = nle__malloc(ctx, n * n * sizeof(double), "L-");
  double *ep = nle__malloc(ctx, n * sizeof(double), "eigenvalues"), *em = nle__malloc(ctx, n * sizeof(double), "eigenvalues");
  double *diag_p = nle__malloc(ctx, n * sizeof(double), "diagonals"), *diag_m = nle__malloc(ctx, n * sizeof(double), "diagonals");
  if (!Lp || !Lm || !ep || !em || !diag_p || !diag_m) s = NLE_ERR_NOMEM;
  if (!s) {
    dense_laplacian(n, Wp, NULL, 0, Lp);
    dense_laplacian(n, wneg == NLE_WNEG_KNN ? Wneg_sparse : NULL, wneg == NLE_WNEG_SQDIST ? Wneg_dense : NULL,
                    wneg == NLE_WNEG_UNIFORM, Lm);
    for (size_t i = 0; i < n; i++) {
      diag_p[i] = Lp[i * n + i];
      diag_m[i] = Lm[i * n + i];
    }
    /* min w+/w- over pairs with w- > 0, before the eigensolver overwrites L. */
    double ratio = INFINITY;
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++)
        if (i != j && -Lm[i * n + j] > 0) ratio = fmin(ratio, -Lp[i * n + j] / -Lm[i * n + j]);
    int blas_prev = nle__blas_set_threads(nle_ctx_threads(ctx));
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', (lapack_int)n, Lp, (lapack_int)n, ep);
    if (!info) info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', (lapack_int)n, Lm, (lapack_int)n, em);
    nle__blas_set_threads(blas_prev);
    if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "lambda* bounds: LAPACK dsyevd failed (info %d)", (int)info);
    if (!s) {
      double lo = em[n - 1] > 0 ? ep[1] / em[n - 1] : 0.0, hi = INFINITY;
      *l1 = fmax(lo, isfinite(ratio) ? ratio : 0.0);
      for (size_t i = 1; i < n; i++)
        if (em[i] > 0) hi = fmin(hi, ep[i] / em[i]);
      for (size_t i = 0; i < n; i++)
        if (diag_m[i] > 0) hi = fmin(hi, diag_p[i] / diag_m[i]);
      *u1 = hi;
    }
  }
  free(Lp);
  free(Lm);
  free(ep);
  free(em);
  free(diag_p);
  free(diag_m);
  return s;
}

/* Diagonals of L+ and L- and min w+/w- over the pairs with w- > 0, without
 * dense matrices. */
static void sparse_terms(const nle_csr *Wp, nle_wneg_kind wneg, const nle_matd *Wd, const nle_csr *Ws, double *diag_ratio,
                         double *pair_ratio) {
  size_t n = (size_t)Wp->rows;
  double dr = INFINITY, pr = INFINITY;
  for (size_t i = 0; i < n; i++) {
    double dp = 0.0, dm = 0.0;
    for (int64_t q = Wp->rowptr[i]; q < Wp->rowptr[i + 1]; q++)
      if ((size_t)Wp->colind[q] != i) dp += nle_csr_value(Wp, q);
    if (wneg == NLE_WNEG_UNIFORM) {
      dm = (double)(n - 1);
      /* some pair of row i has w+ = 0 unless W+ fills the row */
      if (Wp->rowptr[i + 1] - Wp->rowptr[i] < (int64_t)(n - 1)) pr = 0.0;
      for (int64_t q = Wp->rowptr[i]; q < Wp->rowptr[i + 1]; q++)
        if ((size_t)Wp->colind[q] != i) pr = fmin(pr, nle_csr_value(Wp, q));
    } else if (wneg == NLE_WNEG_SQDIST) {
      for (size_t j = 0; j < n; j++)
        if (j != i) dm += Wd->data[i * n + j];
      pr = 0.0; /* W+ is sparse, W- dense: some pair has w+ = 0 < w- */
    } else {
      for (int64_t q = Ws->rowptr[i]; q < Ws->rowptr[i + 1]; q++) {
        size_t j = (size_t)Ws->colind[q];
        double wm = nle_csr_value(Ws, q), wp = 0.0;
        if (j == i || !(wm > 0)) continue;
        dm += wm;
        for (int64_t r = Wp->rowptr[i]; r < Wp->rowptr[i + 1]; r++)
          if ((size_t)Wp->colind[r] == j) wp = nle_csr_value(Wp, r);
        pr = fmin(pr, wp / wm);
      }
    }
    if (dm > 0) dr = fmin(dr, dp / dm);
  }
  *diag_ratio = dr;
  *pair_ratio = isfinite(pr) ? pr : 0.0;
}

enum { BOUNDS_EIGS = 12 };

nle_status nle_ee_lambda_bounds_lanczos(nle_ctx *ctx, const nle_csr *Wp, nle_wneg_kind wneg, const nle_matd *Wneg_dense,
                                        const nle_csr *Wneg_sparse, double *l1, double *u1) {
  size_t n = (size_t)Wp->rows;
  if (n < 16) return nle__fail(ctx, NLE_ERR_ARG, "lambda* bounds by Lanczos need at least 16 points");
  if ((wneg == NLE_WNEG_SQDIST && !Wneg_dense) || (wneg == NLE_WNEG_KNN && !Wneg_sparse))
    return nle__fail(ctx, NLE_ERR_ARG, "lambda* bounds: the W- matrix is missing");
  int m = BOUNDS_EIGS;
  double ep[BOUNDS_EIGS], em[BOUNDS_EIGS], em_max = 0.0, diag_ratio, pair_ratio;
  nle_status s = nle_laplacian_smallest(ctx, Wp, 0, m, ep, NULL);
  if (!s && wneg == NLE_WNEG_UNIFORM) { /* L- = N I - 1 1^T: 0 once, then N */
    em[0] = 0.0;
    for (int i = 1; i < m; i++) em[i] = (double)n;
    em_max = (double)n;
  } else if (!s && wneg == NLE_WNEG_KNN) {
    s = nle_laplacian_smallest(ctx, Wneg_sparse, 0, m, em, NULL);
    if (!s) s = nle_laplacian_largest(ctx, Wneg_sparse, 0, 1, &em_max);
  } else if (!s) {
    s = nle__laplacian_largest_dense(ctx, Wneg_dense, 1, &em_max);
    m = 0; /* no small eigenvalues of the dense L-: the diagonal term alone */
  }
  if (s) return s;
  sparse_terms(Wp, wneg, Wneg_dense, Wneg_sparse, &diag_ratio, &pair_ratio);
  *l1 = fmax(em_max > 0 ? ep[1] / em_max : 0.0, pair_ratio);
  double hi = diag_ratio;
  for (int i = 1; i < m; i++) /* each term bounds lambda* by itself, so a few suffice */
    if (em[i] > 0) hi = fmin(hi, ep[i] / em[i]);
  *u1 = hi;
  return NLE_OK;
}

nle_status nle_ee_lambda_bounds_features(nle_ctx *ctx, const nle_csr *Wp, const nle_matf *F, double *l1,
                                         double *u1) {
  size_t n = (size_t)Wp->rows, nf = F->cols;
  if (n < 16) return nle__fail(ctx, NLE_ERR_ARG, "lambda* bounds by Lanczos need at least 16 points");
  if (F->rows != n || nf < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "lambda* bounds: %zu x %zu features for %zu points", F->rows, nf, n);
  double ep[2];
  nle_status s = nle_laplacian_smallest(ctx, Wp, 0, 2, ep, NULL);
  if (s) return s;
  double *sq = NULL, sum_sq = 0.0;
  s = nle__centre_features(ctx, F, NULL, &sq);
  if (s) return s;
  for (size_t i = 0; i < n; i++) sum_sq += sq[i];
  /* sum_m |f_n - f_m|^2 = N a_n + sum a - 2 f_n . sum f, and sum f = 0 */
  double max_deg = 0.0, diag_ratio = INFINITY;
  for (size_t i = 0; i < n; i++) {
    double dm = (double)n * sq[i] + sum_sq, dp = 0.0;
    for (int64_t q = Wp->rowptr[i]; q < Wp->rowptr[i + 1]; q++)
      if ((size_t)Wp->colind[q] != i) dp += nle_csr_value(Wp, q);
    max_deg = fmax(max_deg, dm);
    if (dm > 0) diag_ratio = fmin(diag_ratio, dp / dm);
  }
  free(sq);
  /* W+ is sparse and W- dense, so the pair term min w+/w- is 0. */
  *l1 = max_deg > 0 ? ep[1] / (2.0 * max_deg) : 0.0;
  *u1 = diag_ratio;
  return NLE_OK;
}

nle_status nle_homotopy_run(nle_ctx *ctx, nle_model *model, nle_opt *opt, nle_matd *X, const nle_homotopy_opts *opts,
                            nle_homotopy_fn fn, void *user, nle_opt_report *total) {
  nle_homotopy_opts defaults;
  nle_homotopy_opts_init(&defaults);
  const nle_homotopy_opts *o = opts ? opts : &defaults;
  if (!(o->lambda_start > 0) || !(o->lambda_end > 0) || o->steps < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "homotopy: lambdas must be positive and steps >= 1");
  memset(total, 0, sizeof *total);
  /* The path's position lives in the optimiser's state, so that a checkpoint
   * taken inside any step resumes there. */
  nle_opt_state *r = nle__opt_state(opt);
  if (!r->active && r->path_step == 0) {
    memset(&r->path_total, 0, sizeof r->path_total);
    r->path_all_converged = 1;
  }
  double t0 = nle_time_seconds(), seconds0 = r->path_total.seconds;
  nle_status s = NLE_OK;
  bool opened = nle__stage_begin(ctx, "homotopy"); /* one bar for the path */
  while (r->path_step < o->steps && s >= 0) {
    int i = r->path_step;
    nle__stage_range(ctx, (double)i / o->steps, (double)(i + 1) / o->steps);
    double frac = o->steps == 1 ? 1.0 : (double)i / (double)(o->steps - 1);
    double lambda = exp(log(o->lambda_start) + frac * (log(o->lambda_end) - log(o->lambda_start)));
    s = nle_model_set_lambda(ctx, model, lambda);
    nle_opt_report rep;
    if (!s) s = nle_opt_run(ctx, opt, X, &rep);
    if (s < 0) break;
    r->path_all_converged &= s == NLE_OK;
    s = NLE_OK;
    if (i == 0) r->path_total.E0 = rep.E0;
    r->path_total.iterations += rep.iterations;
    r->path_total.evaluations += rep.evaluations;
    r->path_total.E = rep.E;
    r->path_total.grad_max = rep.grad_max;
    r->path_step++;
    r->path_total.seconds = seconds0 + nle_time_seconds() - t0;
    if (fn && fn(user, i, lambda, X, &rep)) break;
    s = nle__opt_checkpoint(ctx, opt, X);
  }
  nle__stage_end(ctx, opened);
  r->path_total.seconds = seconds0 + nle_time_seconds() - t0;
  *total = r->path_total;
  total->converged = r->path_all_converged;
  if (s == NLE_ERR_CANCELLED) return s; /* resumable */
  r->path_step = 0;
  if (s < 0) return s;
  return r->path_all_converged ? NLE_OK
                               : nle__fail(ctx, NLE_WARN_NOT_CONVERGED, "homotopy: some lambda steps hit the iteration cap");
}
