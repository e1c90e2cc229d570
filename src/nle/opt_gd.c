/* opt_gd.c — gradient descent (B = I) with the line search; its
 * fixed-rate form is fixed_rate.c. Also the steepest-descent direction the
 * history-based optimisers start from. */
#include "opt_internal.h"

nle_status nle__opt_steepest(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p) {
  (void)ctx, (void)o, (void)X;
  for (size_t i = 0; i < g->rows * g->cols; i++) p->data[i] = -g->data[i];
  return NLE_OK;
}

const nle__optimizer nle__opt_gd = {.name = "gd", .first_step = NLE__FIRST_STEP_GRADIENT,
                                    .direction = nle__opt_steepest};
