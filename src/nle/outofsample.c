/* outofsample.c — EE's out-of-sample map F(y) (EE paper sec. 4.5, eq. 13):
 * a new point's projection minimises the EE error augmented with the new
 * point, every training projection kept fixed. Each point is a small
 * d-dimensional problem, O(N d) per evaluation, solved with the fixed-point
 * diagonal direction -g / (4 sum_n w+_n) and backtracking; points run in
 * parallel, each independently, so results do not depend on threads. */
#include "../core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nle_oos_opts_init(nle_oos_opts *o) {
  o->lambda = 1.0;
  o->sigma = 1.0;
  o->wneg = NLE_WNEG_UNIFORM;
  o->max_iters = 200;
  o->grad_tol = 1e-10;
}

/* E'(x) and its gradient for fixed weights. */
static double oos_energy(const nle_matd *X, const double *wp, const double *wm, double lambda, const double *x,
                         double *g) {
  size_t n = X->rows, d = X->cols;
  double e = 0.0;
  if (g) memset(g, 0, d * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    const double *xi = X->data + i * d;
    double d2 = 0.0;
    for (size_t t = 0; t < d; t++) d2 += (x[t] - xi[t]) * (x[t] - xi[t]);
    double k = exp(-d2);
    e += 2.0 * (wp[i] * d2 + lambda * wm[i] * k);
    if (g)
      for (size_t t = 0; t < d; t++) g[t] += 4.0 * (wp[i] - lambda * wm[i] * k) * (x[t] - xi[t]);
  }
  return e;
}

typedef struct {
  const nle_matf *Y, *Ynew;
  const nle_matd *X;
  const nle_oos_opts *o;
  nle_matd *out;
} oos_job;

enum { OOS_BLOCK = 16 };

static int oos_block(void *job, size_t b, void *scratch) {
  const oos_job *j = job;
  size_t n = j->Y->rows, D = j->Y->cols, d = j->X->cols, m = j->Ynew->rows;
  double *wp = scratch, *wm = wp + n, *x = wm + n, *g = x + d, *xt = g + d;
  size_t p1 = (b + 1) * OOS_BLOCK < m ? (b + 1) * OOS_BLOCK : m;
  for (size_t p = b * OOS_BLOCK; p < p1; p++) {
    const float *y = j->Ynew->data + p * D;
    size_t nearest = 0;
    double wsum = 0.0, best = INFINITY, c = 1.0 / (2.0 * j->o->sigma * j->o->sigma);
    for (size_t i = 0; i < n; i++) {
      double s = 0.0;
      for (size_t t = 0; t < D; t++) {
        double u = (double)y[t] - j->Y->data[i * D + t];
        s += u * u;
      }
      if (s < best) best = s, nearest = i;
      wp[i] = exp(-c * s);
      wm[i] = j->o->wneg == NLE_WNEG_SQDIST ? s : 1.0;
      wsum += wp[i];
    }
    memcpy(x, j->X->data + nearest * d, d * sizeof(double));
    double precond = 4.0 * wsum > 1e-300 ? 4.0 * wsum : 1.0, step = 1.0;
    double e = oos_energy(j->X, wp, wm, j->o->lambda, x, g);
    for (int it = 0; it < j->o->max_iters; it++) {
      double gmax = 0.0, slope = 0.0;
      for (size_t t = 0; t < d; t++) {
        gmax = fmax(gmax, fabs(g[t]));
        slope -= g[t] * g[t] / precond;
      }
      if (gmax <= j->o->grad_tol * fmax(1.0, precond)) break;
      double et = e;
      int accepted = 0;
      for (int tries = 0; tries < 60 && !accepted; tries++) {
        for (size_t t = 0; t < d; t++) xt[t] = x[t] - step * g[t] / precond;
        et = oos_energy(j->X, wp, wm, j->o->lambda, xt, NULL);
        if (et <= e + 1e-4 * step * slope) accepted = 1;
        else step *= 0.5;
      }
      if (!accepted) break;
      memcpy(x, xt, d * sizeof(double));
      e = oos_energy(j->X, wp, wm, j->o->lambda, x, g);
      step = fmin(1.0, 2.0 * step); /* a cheap problem: let the step recover */
    }
    memcpy(j->out->data + p * d, x, d * sizeof(double));
  }
  return 0;
}

nle_status nle_ee_map_forward(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X, const nle_matf *Ynew,
                              const nle_oos_opts *opts, nle_matd **Xnew) {
  *Xnew = NULL;
  nle_oos_opts defaults;
  if (!opts) {
    nle_oos_opts_init(&defaults);
    opts = &defaults;
  }
  if (Y->rows != X->rows || Y->rows < 1 || Ynew->cols != Y->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: %zu training points, %zu embedded; new points have %zu "
                                       "columns, training %zu", Y->rows, X->rows, Ynew->cols, Y->cols);
  if (!(opts->lambda > 0) || !(opts->sigma > 0) || opts->max_iters < 0 ||
      (opts->wneg != NLE_WNEG_UNIFORM && opts->wneg != NLE_WNEG_SQDIST))
    return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: lambda and sigma must be positive, W- uniform or sqdist");
  nle_status s = nle_matd_alloc(ctx, Ynew->rows, X->cols, Xnew);
  if (s) return s;
  oos_job job = {Y, Ynew, X, opts, *Xnew};
  size_t m = Ynew->rows;
  s = nle__for_blocks(ctx, "out-of-sample", (m + OOS_BLOCK - 1) / OOS_BLOCK,
                      nle__threads_for(ctx, (double)m * (double)Y->rows * (double)Y->cols),
                      (2 * Y->rows + 3 * X->cols) * sizeof(double), oos_block, &job);
  if (s) nle_matd_free(Xnew);
  return s;
}
