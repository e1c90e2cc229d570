/* opt_cg.c — nonlinear conjugate gradients, Polak-Ribiere+ (restarted to
 * -g by the run when the direction is not downhill). */
#include "opt_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  double *prev_g, *prev_p; /* the previous gradient and direction */
  int count;               /* 1 once they are set */
  size_t len;              /* N d of the stored vectors */
} cg_state;

static nle_status cg_reset(nle_ctx *ctx, nle_opt *o, size_t len) {
  cg_state *st = o->state;
  st->count = 0;
  if (st->len == len && st->prev_g) return NLE_OK;
  free(st->prev_g);
  free(st->prev_p);
  st->prev_g = nle__malloc(ctx, len * sizeof(double), "CG history");
  st->prev_p = nle__malloc(ctx, len * sizeof(double), "CG history");
  st->len = st->prev_g && st->prev_p ? len : 0;
  return st->len == len ? NLE_OK : NLE_ERR_NOMEM;
}

static void cg_free(nle_opt *o) {
  cg_state *st = o->state;
  free(st->prev_g);
  free(st->prev_p);
}

/* p = -g + beta p_prev, beta = max(0, g.(g - g_prev) / g_prev.g_prev). */
static bool cg_apply(nle_opt *o, const double *g, double *p) {
  const cg_state *st = o->state;
  if (!st->count) return false;
  size_t len = st->len;
  double gg = nle__opt_dot(st->prev_g, st->prev_g, len), beta = 0.0;
  for (size_t i = 0; i < len; i++) beta += g[i] * (g[i] - st->prev_g[i]);
  beta = gg > 0 && beta > 0 ? beta / gg : 0.0;
  for (size_t i = 0; i < len; i++) p[i] += beta * st->prev_p[i];
  return true;
}

static void cg_update(nle_opt *o, bool forget, const double *x, const double *xn, const double *g, const double *gn,
                      const double *p) {
  (void)forget, (void)x, (void)xn, (void)gn; /* the new step replaces the old whether or not it is forgotten */
  cg_state *st = o->state;
  memcpy(st->prev_g, g, st->len * sizeof(double));
  memcpy(st->prev_p, p, st->len * sizeof(double));
  st->count = 1;
}

static nle__history_counters cg_counters(const nle_opt *o) {
  const cg_state *st = o->state;
  return (nle__history_counters){st->count, 0};
}

static void cg_write(const nle_opt *o, nle__afile *af, size_t len) {
  const cg_state *st = o->state;
  if (st->len != len || !st->prev_g) return;
  nle__rec_put(af, "cg_g", 'd', st->prev_g, len);
  nle__rec_put(af, "cg_p", 'd', st->prev_p, len);
}

static nle_status cg_read(nle_ctx *ctx, nle_opt *o, const nle__rec_file *f, size_t len,
                          const nle__history_counters *counters) {
  cg_state *st = o->state;
  nle_status s = nle__opt_restore(ctx, f, "cg_g", st->prev_g, len);
  if (!s) s = nle__opt_restore(ctx, f, "cg_p", st->prev_p, len);
  if (s) return s;
  if (counters->count < 0 || counters->count > 1 || counters->head != 0)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged optimiser history", f->path);
  st->count = (int)counters->count;
  return NLE_OK;
}

const nle__optimizer nle__opt_cg = {.name = "cg", .first_step = NLE__FIRST_STEP_GRADIENT,
                                    .state_size = sizeof(cg_state), .state_free = cg_free,
                                    .direction = nle__opt_steepest, .history_reset = cg_reset,
                                    .history_apply = cg_apply, .history_update = cg_update,
                                    .history_counters = cg_counters, .history_write = cg_write, .history_read = cg_read};
