/* fixed_rate.c — gradient descent with a fixed learning rate, momentum,
 * gains and early exaggeration, as the t-SNE codes run it. */
#include "model_internal.h"
#include "opt_internal.h"

#include <math.h>
#include <stdlib.h>

/* Each point's attraction: deg_i = sum_j (w_ij + w_ji) / 2 over W+, the
 * diagonal of its Laplacian (t-SNE: 1 / N on average). */
static double *attraction_degrees(nle_ctx *ctx, const nle_csr *W) {
  double *deg = nle__calloc(ctx, (size_t)W->rows, sizeof(double), "the attraction's degrees");
  if (!deg) return NULL;
  for (int64_t i = 0; i < W->rows; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      double w = 0.5 * nle_csr_value(W, q);
      deg[i] += w;
      deg[W->colind[q]] += w;
    }
  return deg;
}

/* Every model of the family has a stationary point where all points
 * coincide, and near it every force is linear in the positions: there a
 * small gradient says only that the map is small, not that it is done. A
 * map within one kernel length of its centre (rms) is that case: t-SNE of
 * structureless data (an isotropic 2,000-point cloud in 10-D) shrinks to
 * 1e-19 under exaggeration, below any absolute tolerance, and grows back
 * to a 60-unit map once the exaggeration ends. Exaggerated iterations are
 * never tested: theirs is not the objective minimised. */
static int map_collapsed(const nle_matd *X) {
  double ss = 0.0;
  for (size_t c = 0; c < X->cols; c++) {
    double mean = 0.0;
    for (size_t i = 0; i < X->rows; i++) mean += X->data[i * X->cols + c];
    mean /= (double)X->rows;
    for (size_t i = 0; i < X->rows; i++) ss += (X->data[i * X->cols + c] - mean) * (X->data[i * X->cols + c] - mean);
  }
  return !(ss >= (double)X->rows);
}

/* Gradient descent as the t-SNE codes run it (van der Maaten 2014): a fixed
 * learning rate with momentum (0.5 while exaggerating, then `momentum`),
 * per-coordinate gains (Jacobs' delta-bar-delta), and early exaggeration of
 * the attractive term. No line search: E may rise; the run stops at
 * max_iters, the gradient tolerance or the time budget.
 *
 * One rate does not suit every point. Point i's attraction has curvature
 * up to 4 alpha deg_i (exaggeration alpha, the kernel <= 1 in it), and a
 * step with momentum m is stable only while rate x curvature < 2 (1 + m).
 * The recipe's rates put the average point at 1 while exaggerating and 2
 * after (N / 2 against deg 1 / N), but a hub, in many other points'
 * neighbour lists, has deg tens of times the average: with one rate it
 * oscillates with growing amplitude and is thrown out of the map, where the
 * Student-t attraction, falling as 1 / distance, barely pulls it back (a
 * single-cell set whose high-count cells sit in 2,000-3,400 of the 5,000
 * cells' 30-NN lists: a 1,940-unit map, the bulk within 200). So each
 * point's rate is capped at its own bound, (1 + m) / (2 alpha deg_i): the
 * FP method's diagonal step (B = 4 D+), taken only where the common rate
 * would overshoot; the average point keeps the common rate. */
nle_status nle__opt_run_fixed_rate(nle_ctx *ctx, nle_opt *o, nle_model *model, nle_matd *X, nle_opt_report *out) {
  size_t nd = X->rows * X->cols;
  nle_opt_state *r = &o->run;
  nle_opt_report *rep = &r->rep;
  double t0 = nle_time_seconds(), seconds0 = rep->seconds;
  nle_matd *G = NULL;
  nle_status s = nle_matd_alloc(ctx, X->rows, X->cols, &G);
  if (!s && !r->velocity) {
    r->velocity = nle__calloc(ctx, nd, sizeof(double), "momentum");
    r->gain = nle__malloc(ctx, nd * sizeof(double), "gains");
    if (!r->velocity || !r->gain) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < nd; i++) r->gain[i] = 1.0;
  }
  double *u = r->velocity, *gain = r->gain, E = 0.0;
  double *deg = s ? NULL : attraction_degrees(ctx, model->spec.Wp);
  if (!s && !deg) s = NLE_ERR_NOMEM;
  while (!s && rep->iterations < o->o.max_iters) {
    int it = rep->iterations, exaggerating = it < o->o.exaggeration_iters;
    nle__opt_schedule_accuracy(ctx, o, it);
    s = nle_model_set_exaggeration(ctx, model, exaggerating ? o->o.exaggeration : 1.0);
    /* E only where it is reported: the start and the trace */
    nle__model_want_energy(model, it == 0 || (o->o.energy_every > 0 && it % o->o.energy_every == 0));
    if (!s) s = nle_model_eval(ctx, model, X, &E, G);
    nle__model_want_energy(model, 1);
    if (s == NLE_ERR_VALUE && it > 0) /* the steps overflowed: say when, and why it may be */
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "optimiser: the map became non-finite at iteration %d (the {@init-scale}, "
                    "{@lambda} or {@learning-rate} is too large for this data)", it);
    if (s) break;
    if (it == 0) rep->E0 = E;
    if (!exaggerating && nle__opt_max_abs(ctx, G) <= o->o.grad_tol && !map_collapsed(X)) {
      rep->evaluations++;
      rep->converged = true;
      break;
    }
    double mom = exaggerating ? 0.5 : o->o.momentum, x_old = 0.0, moved = 0.0;
    double lr = exaggerating || o->o.learning_rate_final == NLE_AUTO ? o->o.learning_rate : o->o.learning_rate_final;
    double bound = (1.0 + mom) / (2.0 * (exaggerating ? o->o.exaggeration : 1.0)); /* rate x deg_i at most */
    /* Each coordinate's step on its own, in parallel (a million-point map's
     * four arrays are 64 MB a pass); the sums of the step test in order, and
     * only when it is on. */
    const int gains = o->o.gains;
    const size_t cols = X->cols;
    double *x = X->data;
    const double *g = G->data;
    for (size_t i = 0; o->o.x_tol > 0 && i < nd; i++) x_old += x[i] * x[i];
#pragma omp parallel for schedule(static) num_threads(nle__threads_for(ctx, 4.0 * (double)nd))
    for (size_t i = 0; i < nd; i++) {
      if (gains) {
        gain[i] = (g[i] > 0) != (u[i] > 0) ? gain[i] + 0.2 : gain[i] * 0.8;
        if (gain[i] < 0.01) gain[i] = 0.01;
      }
      double d_i = deg[i / cols], lr_i = lr * d_i > bound ? bound / d_i : lr;
      u[i] = mom * u[i] - lr_i * gain[i] * g[i];
      x[i] += u[i];
    }
    for (size_t i = 0; o->o.x_tol > 0 && i < nd; i++) moved += u[i] * u[i];
    int x_settled = o->o.x_tol > 0 && sqrt(moved) <= o->o.x_tol * sqrt(x_old);
    rep->evaluations++;
    rep->iterations++;
    rep->seconds = seconds0 + nle_time_seconds() - t0;
    if (o->o.trace) o->o.trace(o->o.trace_user, rep->iterations, rep->seconds, E, rep->evaluations, lr);
    if (o->ckpt_every && rep->iterations % o->ckpt_every == 0) s = nle__opt_checkpoint(ctx, o, X);
    if (!s && x_settled) {
      rep->converged = true;
      break;
    }
    if (!s && o->o.time_budget > 0 && rep->seconds >= o->o.time_budget) break;
    if (!s && nle__progress(ctx, "optimising", (double)rep->iterations / (double)o->o.max_iters)) s = NLE_ERR_CANCELLED;
  }
  free(deg);
  if (s == NLE_ERR_CANCELLED) { /* the run stays resumable */
    nle_model_set_exaggeration(ctx, model, 1.0);
    nle_matd_free(&G);
    return nle__opt_cancelled(ctx, o, X);
  }
  nle_status restore = nle_model_set_exaggeration(ctx, model, 1.0);
  if (!s) s = restore;
  nle__opt_schedule_accuracy(ctx, o, o->o.max_iters); /* the final E at full accuracy */
  if (!s) s = nle_model_eval(ctx, model, X, &rep->E, G); /* the true E, without exaggeration */
  rep->grad_max = (!s && G) ? nle__opt_max_abs(ctx, G) : 0.0;
  rep->seconds = seconds0 + nle_time_seconds() - t0;
  nle_matd_free(&G);
  *out = *rep;
  r->active = 0;
  if (s) return s;
  return rep->converged ? NLE_OK
                        : nle__fail(ctx, NLE_WARN_NOT_CONVERGED, "optimiser: ran %d fixed-rate iterations", rep->iterations);
}
