/* oos_internal.h — what the out-of-sample maps share between the trained
 * model (trained.c), the per-point minimiser (outofsample.c) and the
 * batched one with the fast engines (oos_batch.c). */
#ifndef NLE_OOS_INTERNAL_H
#define NLE_OOS_INTERNAL_H

#include "model_internal.h"

#include <math.h>

/* One new point's problem: attraction over `na` training points (the first
 * na when a_idx is NULL), repulsion over `nr` (the first nr when r_idx is
 * NULL) with weights r_w (1 when NULL). */
typedef struct {
  nle_model_kind kind;
  double lambda;
  const nle_matd *X;
  const double *z_rows; /* SNE: z_n */
  double z_total;       /* s-SNE, t-SNE: Z */
  const int32_t *a_idx;
  const double *a;
  size_t na;
  const int32_t *r_idx;
  const double *r_w;
  size_t nr;
} oos_problem;

/* The problem of new point y (row q of the neighbour lists nbrs, entropic
 * p_{n|y} in P or NULL): attraction weights into a[k], W- values into rw
 * (k of them, or N for squared distances). */
oos_problem nle__oos_forward_problem(const nle_trained *t, const float *y, const nle_csr *nbrs, const nle_csr *P,
                                     size_t q, double *a, double *rw);
/* Whether F(y)'s repulsion for t's model can run on `engine` (a fast one,
 * all points together), and whether t->engine's grid spans the training map
 * with the margin around it. */
int nle__oos_batched_engine(const nle_trained *t, nle_repulsion engine);
int nle__oos_engine_fits(const nle_trained *t);
/* The new points (the rows of nbrs, their training neighbours nearest
 * first) in an order with locality in the map: the Z-order of their nearest
 * neighbours' training positions. Points taken in turn read the same grid
 * nodes and share training neighbours. */
nle_status nle__oos_map_order(nle_ctx *ctx, const nle_trained *t, const nle_csr *nbrs, size_t **order);
/* Rows of Y projected on the trained model's principal components
 * (trained.c). */
nle_status nle__trained_project(nle_ctx *ctx, const nle_trained *t, const nle_matf *Y, nle_matf **P);
/* F(y) of all new points together with t->engine (oos_batch.c). */
nle_status nle__oos_forward_batched(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, const nle_csr *nbrs,
                                    const nle_csr *P, int max_iters, nle_matd *out);

/* The new point's quasi-Newton metric: the inverse Hessian estimate H (d x
 * d) of E'(x), started at I / precond (the attraction's curvature
 * at distance 0, the scaled steepest descent the minimisers took before)
 * and improved by each accepted step's BFGS update. A point's problem has
 * d unknowns, so H is exact after a few steps and the unit step is taken:
 * 10,000 test images into a 60,000-image t-SNE map took 120 energy
 * evaluations a point by scaled steepest descent. */
static inline void nle__oos_metric_init(double *H, size_t d, double precond) {
  for (size_t a = 0; a < d; a++)
    for (size_t b = 0; b < d; b++) H[a * d + b] = a == b ? 1.0 / precond : 0.0;
}

/* dir = -H g; returns the slope g'dir, < 0 for g != 0: the update keeps H
 * positive definite, and should rounding ever say otherwise, H restarts at
 * the diagonal I / precond. */
static inline double nle__oos_metric_direction(double *H, const double *g, size_t d, double precond, double *dir) {
  for (int restart = 0;; restart++) {
    double slope = 0.0;
    for (size_t a = 0; a < d; a++) {
      double v = 0.0;
      for (size_t b = 0; b < d; b++) v -= H[a * d + b] * g[b];
      dir[a] = v;
      slope += g[a] * v;
    }
    if (slope < 0.0 || restart) return slope;
    nle__oos_metric_init(H, d, precond);
  }
}

/* The BFGS update of H for the step s and gradient change y (the rank-2
 * update of L-BFGS, dissertation ch. 3): H <- (I - r s y') H (I - r y s') +
 * r s s', r = 1 / y's; skipped unless y's > 0 by a margin (E' is not convex
 * everywhere, and the fast engines' gradients carry their error), which
 * keeps H positive definite. Hy: d doubles of scratch. */
static inline void nle__oos_metric_update(double *H, const double *s, const double *y, size_t d, double *Hy) {
  double sy = 0.0, ss = 0.0, yy = 0.0, yHy = 0.0;
  for (size_t a = 0; a < d; a++) sy += s[a] * y[a], ss += s[a] * s[a], yy += y[a] * y[a];
  if (!(sy > 1e-10 * sqrt(ss * yy))) return;
  for (size_t a = 0; a < d; a++) {
    Hy[a] = 0.0;
    for (size_t b = 0; b < d; b++) Hy[a] += H[a * d + b] * y[b];
    yHy += y[a] * Hy[a];
  }
  double r = 1.0 / sy, c = (1.0 + r * yHy) * r;
  for (size_t a = 0; a < d; a++) /* one value per pair: H stays exactly symmetric */
    for (size_t b = a; b < d; b++) H[a * d + b] = H[b * d + a] = H[a * d + b] + c * s[a] * s[b] - r * (Hy[a] * s[b] + s[a] * Hy[b]);
}

/* trained.c: this model's kind of model file (../io/model_file.h). */
struct nle__model_kind;
extern const struct nle__model_kind nle__trained_model_kind;

#endif
