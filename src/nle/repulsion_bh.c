/* repulsion_bh.c — the Barnes-Hut engine (dissertation sec. 5.2.1) for the
 * models, and the fallback of the grid engines. */
#include "model_internal.h"

#include <math.h>

/* Repulsion from kernel sums (dissertation eq. 5.8): row_e = S_n, and
 * force_n = sum_m K'(x_n - x_m) = -(x_n S'_n - S'^x_n), with S' the sums of
 * -K' (K for the Gaussian, K^2 for the Student-t kernel). The opening angle
 * goes geometrically from max(2, theta) at t = 0 to the spec's theta. */
nle_status nle__bh_forces(nle_ctx *ctx, nle_model *m, const nle_matd *X, double t) {
  size_t N = X->rows, d = X->cols;
  double *S1 = m->force; /* N d: the S'^x sums first, then the forces */
  double *S2 = m->inv_z; /* N: the S' sums */
  double theta_coarse = fmax(2.0, m->spec.theta);
  double theta = pow(theta_coarse, 1.0 - t) * pow(m->spec.theta, t);
  nle_status s = m->student ? nle__kernel_sums_bh_student_pair(ctx, X, theta, m->row_e, S2, S1)
                            : nle_kernel_sums_bh(ctx, X, NLE_KERNEL_GAUSSIAN, theta, m->row_e, S1);
  if (s) return s;
  const double *Sd = m->student ? S2 : m->row_e;
  for (size_t n = 0; n < N; n++)
    for (size_t c = 0; c < d; c++) S1[n * d + c] = -(X->data[n * d + c] * Sd[n] - S1[n * d + c]);
  nle__remove_mean_force(S1, N, d);
  return NLE_OK;
}

const nle__engine nle__engine_bh = {
    .name = "bh", .title = "Barnes-Hut",
    .kernels = NLE__KERNEL_GAUSSIAN | NLE__KERNEL_STUDENT, .max_dim = 3, .forces = nle__bh_forces};
