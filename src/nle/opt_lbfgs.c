/* opt_lbfgs.c — limited-memory BFGS: the two-loop recursion over the last
 * `memory` curvature pairs, the first trial step 1 once it has history. */
#include "opt_internal.h"

#include <math.h>
#include <stdlib.h>

static nle_status lbfgs_alloc(nle_ctx *ctx, nle_opt *o, size_t len) {
  size_t m = (size_t)o->o.memory;
  o->hist_s = nle__malloc(ctx, m * len * sizeof(double), "L-BFGS history");
  o->hist_y = nle__malloc(ctx, m * len * sizeof(double), "L-BFGS history");
  o->hist_rho = nle__malloc(ctx, m * sizeof(double), "L-BFGS history");
  o->alpha = nle__malloc(ctx, m * sizeof(double), "L-BFGS history");
  return o->hist_s && o->hist_y && o->hist_rho && o->alpha ? NLE_OK : NLE_ERR_NOMEM;
}

/* L-BFGS two-loop recursion (Nocedal and Wright, alg. 7.4) on p = -g. */
static void lbfgs_apply(nle_opt *o, const double *g, double *p) {
  size_t len = o->hist_len, m = (size_t)o->o.memory;
  for (size_t i = 0; i < len; i++) p[i] = -g[i];
  for (int t = 0; t < o->hist_count; t++) { /* newest to oldest */
    size_t k = ((size_t)o->hist_head + m - 1 - (size_t)t) % m;
    o->alpha[k] = o->hist_rho[k] * nle__opt_dot(o->hist_s + k * len, p, len);
    for (size_t i = 0; i < len; i++) p[i] -= o->alpha[k] * o->hist_y[k * len + i];
  }
  if (o->hist_count) { /* H0 = gamma I with gamma = s'y / y'y of the newest pair */
    size_t k = ((size_t)o->hist_head + m - 1) % m;
    double gamma = 1.0 / (o->hist_rho[k] * nle__opt_dot(o->hist_y + k * len, o->hist_y + k * len, len));
    for (size_t i = 0; i < len; i++) p[i] *= gamma;
  }
  for (int t = o->hist_count - 1; t >= 0; t--) { /* oldest to newest */
    size_t k = ((size_t)o->hist_head + m - 1 - (size_t)t) % m;
    double beta = o->hist_rho[k] * nle__opt_dot(o->hist_y + k * len, p, len);
    for (size_t i = 0; i < len; i++) p[i] += (o->alpha[k] - beta) * o->hist_s[k * len + i];
  }
}

/* After an accepted step from x (gradient g) to xn (gradient gn): the pair,
 * kept only when it carries curvature. */
static void lbfgs_update(nle_opt *o, const double *x, const double *xn, const double *g, const double *gn,
                         const double *p) {
  (void)p;
  size_t len = o->hist_len, m = (size_t)o->o.memory;
  double *s = o->hist_s + (size_t)o->hist_head * len, *y = o->hist_y + (size_t)o->hist_head * len;
  for (size_t i = 0; i < len; i++) {
    s[i] = xn[i] - x[i];
    y[i] = gn[i] - g[i];
  }
  double sy = nle__opt_dot(s, y, len);
  if (sy > 1e-12 * sqrt(nle__opt_dot(s, s, len) * nle__opt_dot(y, y, len))) { /* keep only curvature pairs */
    o->hist_rho[o->hist_head] = 1.0 / sy;
    o->hist_head = (o->hist_head + 1) % (int)m;
    if (o->hist_count < (int)m) o->hist_count++;
  }
}

const nle__optimizer nle__opt_lbfgs = {.kind = NLE_OPT_LBFGS, .name = "lbfgs", .first_step = NLE__FIRST_STEP_QUASI_NEWTON,
                                       .direction = nle__opt_steepest, .history_alloc = lbfgs_alloc,
                                       .history_apply = lbfgs_apply, .history_update = lbfgs_update};
