/* opt_internal.h — the optimiser's state and the pieces its files share
 * (optimize.c: planning, directions and the line-search loop; fixed_rate.c:
 * t-SNE-style descent; checkpoint.c: saving and resuming a run). */
#ifndef NLE_OPT_INTERNAL_H
#define NLE_OPT_INTERNAL_H

#include "nle_internal.h"
#include "../spectral/spectral_internal.h"

struct nle_opt {
  nle_model *model;
  nle_opt_opts o;
  int64_t n;
  double *degree;          /* 4 D+ (FP) */
  cholmod_common cc;
  int cc_started;
  cholmod_factor *factor;  /* of 4 L+ + mu I (SD) */
  nle__factor_solver *solver; /* its solves (NULL: CHOLMOD's) */
  cholmod_dense *rhs;      /* N x d workspace, column-major */
  /* History of L-BFGS (pairs s = x_k+1 - x_k, y = g_k+1 - g_k, a ring) and
   * of CG (the previous gradient and direction), cleared by every run. */
  double *hist_s, *hist_y, *hist_rho, *alpha;
  int hist_count, hist_head;
  double *prev_g, *prev_p;
  size_t hist_len;         /* N d of the stored vectors */
  nle_opt_state run;       /* the run in progress, as of its last iteration */
  /* Checkpoints (nle_opt_set_checkpoint). */
  char *ckpt_path, *ckpt_fingerprint;
  int ckpt_every;
  /* SD-: the sparsified W+ of the factor, and mu; work vectors of its CG. */
  nle_csr *sd_weights;
  double mu;
  nle_matd *cg_r, *cg_z, *cg_d, *cg_ad;
};

double nle__opt_dot(const double *a, const double *b, size_t len);
double nle__opt_max_abs(const nle_matd *m);
/* Sets the model's accuracy for this iteration of the schedule; whether it
 * is an accuracy of its own (inside the schedule, with a fast engine). */
int nle__opt_schedule_accuracy(nle_ctx *ctx, const nle_opt *o, int iteration);
/* A cancelled run: its checkpoint written, a resumable state kept. */
nle_status nle__opt_cancelled(nle_ctx *ctx, nle_opt *o, const nle_matd *X);
/* Clears (and sizes for len values) the L-BFGS and CG histories. */
nle_status nle__opt_history_reset(nle_ctx *ctx, nle_opt *o, size_t len);
/* Fixed-rate gradient descent (fixed_rate.c). */
nle_status nle__opt_run_fixed_rate(nle_ctx *ctx, nle_opt *o, nle_model *model, nle_matd *X, nle_opt_report *out);

#endif
