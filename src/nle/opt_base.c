/* opt_base.c — what the optimiser's files build on (optimize.c, fixed_rate.c,
 * checkpoint.c and the opt_*.c rows call it; it calls none of them): the
 * inner product, the largest entry, the accuracy schedule and the history's
 * reset through the optimiser's row. */
#include "opt_internal.h"

#include <math.h>

#include "../core/comm.h"

double nle__opt_dot(const double *a, const double *b, size_t len) {
  double s = 0.0;
  for (size_t i = 0; i < len; i++) s += a[i] * b[i];
  return s;
}

nle_status nle__opt_history_reset(nle_ctx *ctx, nle_opt *o, size_t len) {
  return o->type->history_reset ? o->type->history_reset(ctx, o, len) : NLE_OK;
}

/* The largest |entry|, NaNs passed over as fmax would; in parallel and
 * vectorised (fmax kept the loop scalar: 2 ms an iteration at a million
 * points), the same value for any thread count or width: a maximum is
 * exact in any order. Distributed, m is this rank's rows and the maximum
 * is over all ranks' (NaN if the ranks cannot agree). */
double nle__opt_max_abs(nle_ctx *ctx, const nle_matd *m) {
  double v = 0.0;
  size_t n = m->rows * m->cols;
  const double *x = m->data;
#pragma omp parallel for simd schedule(static) reduction(max : v) num_threads(nle__threads_for(ctx, (double)n))
  for (size_t i = 0; i < n; i++) {
    double a = fabs(x[i]);
    v = a > v ? a : v;
  }
  if (nle__distributed(ctx) && nle__comm_max_d(ctx, &v, 1)) return NAN;
  return v;
}

/* Dissertation sec. 5.4: the fast engines start coarse and reach their
 * set accuracy after accuracy_iters iterations (geometrically; the exact
 * engine ignores it). Returns whether iteration `iteration` runs at an
 * accuracy of its own (inside the schedule, with a fast engine): a fact of
 * the iteration number, so a resumed run does what the uninterrupted one did. */
int nle__opt_schedule_accuracy(nle_ctx *ctx, const nle_opt *o, int iteration) {
  int inside = o->o.accuracy_iters > 0 && iteration < o->o.accuracy_iters;
  nle_model_set_accuracy(ctx, o->model, inside ? (double)iteration / (double)o->o.accuracy_iters : 1.0);
  return inside && nle_model_engine(o->model) != NLE_REPULSION_EXACT;
}
