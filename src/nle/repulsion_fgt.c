/* repulsion_fgt.c — the fast Gauss transform engine (dissertation sec.
 * 5.2.2) for the Gaussian models, Barnes-Hut for maps wider than its
 * boxes. */
#include "model_internal.h"

#include <math.h>

static nle_status fgt_forces(nle_ctx *ctx, nle_model *m, const nle_matd *X, double t) {
  size_t N = X->rows, d = X->cols;
  nle_fgt_opts fgt = m->spec.fgt; /* the schedule: its order from 1 up */
  fgt.order = 1 + (int)lround(t * (double)(fgt.order - 1));
  if (!nle__fgt_grid_fits(X, &fgt)) return nle__bh_forces(ctx, m, X, t);
  /* the moments come as forces sum_m K (x_m - x_n), without cancellation */
  nle_status s = nle__fgt_sums(ctx, X, X, &fgt, m->row_e, m->force);
  for (size_t n = 0; !s && n < N; n++) m->row_e[n] -= 1.0; /* K(x_n, x_n) */
  if (!s) nle__remove_mean_force(m->force, N, d);
  return s;
}

const nle__engine nle__engine_fgt = {
    .id = NLE_REPULSION_FGT, .name = "fgt", .title = "fast Gauss transform",
    .kernels = NLE__KERNEL_GAUSSIAN, .max_dim = 3, .forces = fgt_forces};
