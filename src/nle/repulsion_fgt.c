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

/* ---- new points (oos_batch.c): the training map's boxes and series are
 * planned once; an evaluation keeps state in the plan, so one range of
 * points at a time, each evaluation parallel ---- */

static bool oos_fits(const nle_matd *box) { return nle__fgt_grid_fits(box, NULL); }

static nle_status oos_plan(nle_ctx *ctx, const nle_matd *Xc, const nle_matd *region, bool student, void **plan) {
  (void)student;
  nle__fgt_plan *p = NULL;
  nle_status s = nle__fgt_plan_new(ctx, Xc, region, NULL, &p);
  *plan = p;
  return s;
}

/* The plan's forces sum (x_n - t) K: R itself. */
static nle_status oos_sums(nle_ctx *ctx, void *plan, const nle_matd *T, double *S, double *R, double *scratch,
                           int serial) {
  (void)scratch, (void)serial;
  return nle__fgt_plan_eval(ctx, plan, T, S, R);
}

static void oos_free(void *plan) {
  nle__fgt_plan *p = plan;
  nle__fgt_plan_free(&p);
}

static nle_status oos_row_sums(nle_ctx *ctx, const nle_matd *X, bool student, double *z) {
  (void)student;
  return nle_kernel_sums_fgt(ctx, X, NULL, z, NULL);
}

static const nle__oos_engine fgt_oos = {NLE__KERNEL_GAUSSIAN, NLE__KERNEL_GAUSSIAN, false, "fast Gauss transform's",
                                        oos_fits, oos_plan, oos_sums, oos_free, oos_row_sums};

const nle__engine nle__engine_fgt = {.name = "fgt", .title = "fast Gauss transform", .kernels = NLE__KERNEL_GAUSSIAN,
                                     .max_dim = 3, .forces = fgt_forces, .oos = &fgt_oos};
