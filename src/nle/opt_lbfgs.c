/* opt_lbfgs.c — limited-memory BFGS: the two-loop recursion over the last
 * `memory` curvature pairs, the first trial step 1 once it has history. */
#include "opt_internal.h"

#include <math.h>
#include <stdlib.h>

/* The pairs s = x_k+1 - x_k, y = g_k+1 - g_k, a ring of `memory` slots. */
typedef struct {
  double *s, *y, *rho, *alpha;
  int count, head;
  size_t len; /* N d of the stored vectors */
} lbfgs_state;

static void lbfgs_free(nle_opt *o) {
  lbfgs_state *st = o->state;
  free(st->s);
  free(st->y);
  free(st->rho);
  free(st->alpha);
  st->s = st->y = st->rho = st->alpha = NULL;
}

static nle_status lbfgs_reset(nle_ctx *ctx, nle_opt *o, size_t len) {
  lbfgs_state *st = o->state;
  st->count = st->head = 0;
  if (st->len == len && st->s) return NLE_OK;
  lbfgs_free(o);
  size_t m = (size_t)o->o.memory;
  st->s = nle__malloc(ctx, m * len * sizeof(double), "L-BFGS history");
  st->y = nle__malloc(ctx, m * len * sizeof(double), "L-BFGS history");
  st->rho = nle__malloc(ctx, m * sizeof(double), "L-BFGS history");
  st->alpha = nle__malloc(ctx, m * sizeof(double), "L-BFGS history");
  st->len = st->s && st->y && st->rho && st->alpha ? len : 0;
  return st->len == len ? NLE_OK : NLE_ERR_NOMEM;
}

/* L-BFGS two-loop recursion (Nocedal and Wright, alg. 7.4) on p = -g. */
static bool lbfgs_apply(nle_opt *o, const double *g, double *p) {
  lbfgs_state *st = o->state;
  size_t len = st->len, m = (size_t)o->o.memory;
  for (size_t i = 0; i < len; i++) p[i] = -g[i];
  for (int t = 0; t < st->count; t++) { /* newest to oldest */
    size_t k = ((size_t)st->head + m - 1 - (size_t)t) % m;
    st->alpha[k] = st->rho[k] * nle__opt_dot(st->s + k * len, p, len);
    for (size_t i = 0; i < len; i++) p[i] -= st->alpha[k] * st->y[k * len + i];
  }
  if (st->count) { /* H0 = gamma I with gamma = s'y / y'y of the newest pair */
    size_t k = ((size_t)st->head + m - 1) % m;
    double gamma = 1.0 / (st->rho[k] * nle__opt_dot(st->y + k * len, st->y + k * len, len));
    for (size_t i = 0; i < len; i++) p[i] *= gamma;
  }
  for (int t = st->count - 1; t >= 0; t--) { /* oldest to newest */
    size_t k = ((size_t)st->head + m - 1 - (size_t)t) % m;
    double beta = st->rho[k] * nle__opt_dot(st->y + k * len, p, len);
    for (size_t i = 0; i < len; i++) p[i] += (st->alpha[k] - beta) * st->s[k * len + i];
  }
  return st->count > 0;
}

/* The pair of the step, kept only when it carries curvature. */
static void lbfgs_update(nle_opt *o, bool forget, const double *x, const double *xn, const double *g,
                         const double *gn, const double *p) {
  (void)p;
  lbfgs_state *st = o->state;
  if (forget) st->count = 0; /* the ring's head stays: the slots' order is all that counts */
  size_t len = st->len, m = (size_t)o->o.memory;
  double *s = st->s + (size_t)st->head * len, *y = st->y + (size_t)st->head * len;
  for (size_t i = 0; i < len; i++) {
    s[i] = xn[i] - x[i];
    y[i] = gn[i] - g[i];
  }
  double sy = nle__opt_dot(s, y, len);
  if (sy > 1e-12 * sqrt(nle__opt_dot(s, s, len) * nle__opt_dot(y, y, len))) { /* keep only curvature pairs */
    st->rho[st->head] = 1.0 / sy;
    st->head = (st->head + 1) % (int)m;
    if (st->count < (int)m) st->count++;
  }
}

static nle__history_counters lbfgs_counters(const nle_opt *o) {
  const lbfgs_state *st = o->state;
  return (nle__history_counters){st->count, st->head};
}

static void lbfgs_write(const nle_opt *o, nle__afile *af, size_t len) {
  const lbfgs_state *st = o->state;
  size_t m = (size_t)o->o.memory;
  if (st->len != len || !st->s) return;
  nle__rec_put(af, "lbfgs_s", 'd', st->s, m * len);
  nle__rec_put(af, "lbfgs_y", 'd', st->y, m * len);
  nle__rec_put(af, "lbfgs_rho", 'd', st->rho, m);
}

static nle_status lbfgs_read(nle_ctx *ctx, nle_opt *o, const nle__rec_file *f, size_t len,
                             const nle__history_counters *counters) {
  lbfgs_state *st = o->state;
  size_t m = (size_t)o->o.memory;
  nle_status s = nle__opt_restore(ctx, f, "lbfgs_s", st->s, m * len);
  if (!s) s = nle__opt_restore(ctx, f, "lbfgs_y", st->y, m * len);
  if (!s) s = nle__opt_restore(ctx, f, "lbfgs_rho", st->rho, m);
  if (s) return s;
  if (counters->count < 0 || counters->count > o->o.memory || counters->head < 0 || counters->head >= o->o.memory)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged optimiser history", f->path);
  st->count = (int)counters->count;
  st->head = (int)counters->head;
  return NLE_OK;
}

const nle__optimizer nle__opt_lbfgs = {.name = "lbfgs", .first_step = NLE__FIRST_STEP_QUASI_NEWTON,
                                       .state_size = sizeof(lbfgs_state), .state_free = lbfgs_free,
                                       .direction = nle__opt_steepest, .history_reset = lbfgs_reset,
                                       .history_apply = lbfgs_apply, .history_update = lbfgs_update,
                                       .history_counters = lbfgs_counters,
                                       .history_write = lbfgs_write, .history_read = lbfgs_read};
