/* opt_cg.c — nonlinear conjugate gradients, Polak-Ribiere+ (restarted to
 * -g by the run when the direction is not downhill). */
#include "opt_internal.h"

#include <string.h>

static nle_status cg_alloc(nle_ctx *ctx, nle_opt *o, size_t len) {
  o->prev_g = nle__malloc(ctx, len * sizeof(double), "CG history");
  o->prev_p = nle__malloc(ctx, len * sizeof(double), "CG history");
  return o->prev_g && o->prev_p ? NLE_OK : NLE_ERR_NOMEM;
}

/* p = -g + beta p_prev, beta = max(0, g.(g - g_prev) / g_prev.g_prev). */
static void cg_apply(nle_opt *o, const double *g, double *p) {
  if (!o->hist_count) return;
  size_t len = o->hist_len;
  double gg = nle__opt_dot(o->prev_g, o->prev_g, len), beta = 0.0;
  for (size_t i = 0; i < len; i++) beta += g[i] * (g[i] - o->prev_g[i]);
  beta = gg > 0 && beta > 0 ? beta / gg : 0.0;
  for (size_t i = 0; i < len; i++) p[i] += beta * o->prev_p[i];
}

static void cg_update(nle_opt *o, const double *x, const double *xn, const double *g, const double *gn,
                      const double *p) {
  (void)x, (void)xn, (void)gn;
  memcpy(o->prev_g, g, o->hist_len * sizeof(double));
  memcpy(o->prev_p, p, o->hist_len * sizeof(double));
  o->hist_count = 1;
}

const nle__optimizer nle__opt_cg = {.kind = NLE_OPT_CG, .name = "cg", .first_step = NLE__FIRST_STEP_GRADIENT,
                                    .direction = nle__opt_steepest, .history_alloc = cg_alloc,
                                    .history_apply = cg_apply, .history_update = cg_update};
