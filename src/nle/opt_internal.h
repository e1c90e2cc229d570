/* opt_internal.h — the optimiser's state and the pieces its files share
 * (optimize.c: planning, directions and the line-search loop; fixed_rate.c:
 * t-SNE-style descent; checkpoint.c: saving and resuming a run). */
#ifndef NLE_OPT_INTERNAL_H
#define NLE_OPT_INTERNAL_H

#include "nle_internal.h"
#include "../spectral/spectral_internal.h"

/* An optimiser (a row of the table in optimize.c, one file each): how it
 * plans, the direction B p = -g it solves, how it picks its first trial
 * step, and, for L-BFGS and CG, the history that corrects the direction. */
typedef enum { NLE__GRAPH_NONE, NLE__GRAPH_WHOLE, NLE__GRAPH_SPARSIFIED } nle__graph_need;
typedef enum {
  NLE__FIRST_STEP_KEEP,         /* the last accepted step (SD, SD-, FP: B has W+'s scale) */
  NLE__FIRST_STEP_GRADIENT,     /* 1 / |p| at first, then scaled by the slopes' ratio */
  NLE__FIRST_STEP_QUASI_NEWTON  /* 1 once there is history, else as GRADIENT */
} nle__first_step;
typedef struct nle_opt nle_opt;
typedef struct nle__optimizer {
  nle_opt_kind kind;
  const char *name;              /* on the command line ("lbfgs") */
  nle__graph_need graph;         /* the W+ copy plan receives (kappa neighbours or whole) */
  bool needs_x;                  /* the direction depends on X (SD-) */
  nle__first_step first_step;
  /* At nle_opt_new, with the W+ copy (it may keep it, setting *W NULL); NULL: none. */
  nle_status (*plan)(nle_ctx *ctx, nle_opt *o, nle_csr **W);
  /* B p = -g (X NULL unless needs_x). */
  nle_status (*direction)(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p);
  /* A history of len-long vectors: allocated at each run's start, applied to
   * the direction, updated after each accepted step (NULL: none). */
  nle_status (*history_alloc)(nle_ctx *ctx, nle_opt *o, size_t len);
  void (*history_apply)(nle_opt *o, const double *g, double *p);
  void (*history_update)(nle_opt *o, const double *x, const double *xn, const double *g, const double *gn,
                         const double *p);
} nle__optimizer;

extern const nle__optimizer nle__opt_sd, nle__opt_fp, nle__opt_gd, nle__opt_lbfgs, nle__opt_cg, nle__opt_sdm;
/* The optimiser of this kind, or NULL. */
const nle__optimizer *nle__optimizer_find(nle_opt_kind kind);
/* W+ kept to each row's kappa largest weights (0: all), connected and
 * symmetrised: what the partial-Hessian directions read (opt_spectral.c). */
nle_status nle__opt_graph(nle_ctx *ctx, const nle_csr *W, int kappa, nle_csr **out);
/* p = -g (opt_gd.c). */
nle_status nle__opt_steepest(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p);

struct nle_opt {
  const nle__optimizer *type;
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
double nle__opt_max_abs(nle_ctx *ctx, const nle_matd *m);
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
