/* fixed_rate.c — gradient descent with a fixed learning rate, momentum,
 * gains and early exaggeration, as the t-SNE codes run it. */
#include "model_internal.h"
#include "opt_internal.h"

#include <math.h>
#include <stdlib.h>

#include "../core/comm.h"

enum { ROW_BLOCK = NLE__RANK_ROW_BLOCK };

/* Per block of ROW_BLOCK rows of the n x cols array a (this rank's rows),
 * sum_i (a_i - shift_c)^2 over its entries, shift per column (NULL: 0),
 * into partial[b * stride]: the blocks' sums are then added by
 * nle__comm_sum_blocks, the same bits on any number of ranks. */
static void block_square_sums(const double *a, size_t n, size_t cols, const double *shift, double *partial,
                              size_t stride) {
  for (size_t b = 0; b * ROW_BLOCK < n; b++) {
    size_t end = (b + 1) * ROW_BLOCK < n ? (b + 1) * ROW_BLOCK : n;
    double sum = 0.0;
    for (size_t i = b * ROW_BLOCK * cols; i < end * cols; i++) {
      double v = a[i] - (shift ? shift[i % cols] : 0.0);
      sum += v * v;
    }
    partial[b * stride] = sum;
  }
}

/* Every model of the family has a stationary point where all points
 * coincide, and near it every force is linear in the positions: there a
 * small gradient says only that the map is small, not that it is done. A
 * map within one kernel length of its centre (rms) is that case: t-SNE of
 * structureless data (an isotropic 2,000-point cloud in 10-D) shrinks to
 * 1e-19 under exaggeration, below any absolute tolerance, and grows back
 * to a 60-unit map once the exaggeration ends. Exaggerated iterations are
 * never tested: theirs is not the objective minimised. */
static nle_status map_collapsed(nle_ctx *ctx, const nle_matd *X, int *collapsed) {
  size_t n = X->rows, d = X->cols, blocks = (n + ROW_BLOCK - 1) / ROW_BLOCK;
  int64_t all = (int64_t)n;
  double *partial = nle__calloc(ctx, (blocks ? blocks : 1) * (d + 1), sizeof(double), "the map's spread");
  double *mean = nle__calloc(ctx, d + 1, sizeof(double), "the map's spread");
  nle_status s = nle__comm_agree(ctx, partial && mean ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__comm_sum_i64(ctx, &all, 1);
  for (size_t i = 0; !s && i < n * d; i++) partial[i / (ROW_BLOCK * d) * d + i % d] += X->data[i];
  if (!s) s = nle__comm_sum_blocks(ctx, partial, blocks, d, mean);
  for (size_t c = 0; !s && c < d; c++) mean[c] /= (double)all;
  if (!s) block_square_sums(X->data, n, d, mean, partial, 1);
  if (!s) s = nle__comm_sum_blocks(ctx, partial, blocks, 1, mean + d);
  *collapsed = !s && !(mean[d] >= (double)all);
  free(partial);
  free(mean);
  return s;
}

/* Whether the step u settled the map: |u| <= x_tol |x before the step|
 * (Frobenius, partition-free sums; x before the step: its block partials
 * in column 0 of `partial`, 2 per block). */
static nle_status step_settled(nle_ctx *ctx, const nle_opt *o, const nle_matd *X, const double *u, double *partial,
                               int *settled) {
  size_t n = X->rows, blocks = (n + ROW_BLOCK - 1) / ROW_BLOCK;
  double sums[2];
  block_square_sums(u, n, X->cols, NULL, partial + 1, 2);
  nle_status s = nle__comm_sum_blocks(ctx, partial, blocks, 2, sums);
  *settled = !s && sqrt(sums[1]) <= o->o.x_tol * sqrt(sums[0]);
  return s;
}

/* Whether every rank stops now: the time budget read from the slowest
 * rank's clock, a cancellation by any rank's progress callback. */
static nle_status agree_stop(nle_ctx *ctx, const nle_opt *o, double *seconds, nle_status progress) {
  if (!nle__distributed(ctx)) return progress;
  int64_t cancelled = progress != NLE_OK;
  nle_status s = o->o.time_budget > 0 ? nle__comm_max_d(ctx, seconds, 1) : NLE_OK;
  if (!s) s = nle__comm_sum_i64(ctx, &cancelled, 1);
  if (!s && cancelled && !progress) return nle__fail(ctx, NLE_ERR_CANCELLED, "optimising: cancelled on another rank");
  return s ? s : progress;
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
  const nle_csr *W = model->spec.Wp;
  /* Each point's attraction: deg_i = sum_j (w_ij + w_ji) / 2 over W+, the
   * diagonal of its Laplacian (t-SNE: 1 / N on average). */
  double *deg = s ? NULL : nle__attraction_degrees(ctx, W, model->WpT ? model->WpT : W, model->row0);
  double *partial = s ? NULL : nle__malloc(ctx, (2 * (X->rows + ROW_BLOCK - 1) / ROW_BLOCK + 2) * sizeof(double), "step sums");
  if (!s && (!deg || !partial)) s = NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
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
    int collapsed = 0;
    if (!exaggerating && nle__opt_max_abs(ctx, G) <= o->o.grad_tol && !(s = map_collapsed(ctx, X, &collapsed)) &&
        !collapsed) {
      rep->evaluations++;
      rep->converged = true;
      break;
    }
    double mom = exaggerating ? 0.5 : o->o.momentum;
    double lr = exaggerating || o->o.learning_rate_final == NLE_AUTO ? o->o.learning_rate : o->o.learning_rate_final;
    double bound = (1.0 + mom) / (2.0 * (exaggerating ? o->o.exaggeration : 1.0)); /* rate x deg_i at most */
    /* Each coordinate's step on its own, in parallel (a million-point map's
     * four arrays are 64 MB a pass); the sums of the step test in order, and
     * only when it is on. */
    const int gains = o->o.gains;
    const size_t cols = X->cols;
    double *x = X->data;
    const double *g = G->data;
    if (o->o.x_tol > 0) block_square_sums(x, X->rows, cols, NULL, partial, 2);
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
    int x_settled = 0;
    if (o->o.x_tol > 0) s = step_settled(ctx, o, X, u, partial, &x_settled);
    rep->evaluations++;
    rep->iterations++;
    rep->seconds = seconds0 + nle_time_seconds() - t0;
    if (o->o.trace) o->o.trace(o->o.trace_user, rep->iterations, rep->seconds, E, rep->evaluations, lr);
    if (!s && o->ckpt_every && rep->iterations % o->ckpt_every == 0) s = nle__opt_checkpoint(ctx, o, X);
    if (!s && x_settled) {
      rep->converged = true;
      break;
    }
    if (!s) s = agree_stop(ctx, o, &rep->seconds,
                           nle__progress(ctx, "optimising", (double)rep->iterations / (double)o->o.max_iters));
    if (s == NLE_ERR_CANCELLED) break;
    if (!s && o->o.time_budget > 0 && rep->seconds >= o->o.time_budget) break;
  }
  free(deg);
  free(partial);
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
