/* nle_internal.h — what the optimiser shares with the homotopy: the state of
 * a run between iterations, which is also what a checkpoint holds. */
#ifndef NLE_NLE_INTERNAL_H
#define NLE_NLE_INTERNAL_H

#include "../graph/graph_internal.h" /* the search internals the new-point maps reuse */

typedef struct {
  int active;            /* a run is between iterations (a resume continues it) */
  nle_opt_report rep;    /* so far; seconds of earlier sittings included */
  double E, step, prev_slope;
  int stalled;
  double *velocity, *gain; /* fixed-rate gradient descent, N d each */
  /* The homotopy around the runs: the next lambda step and the totals. */
  int path_step;
  int path_all_converged;
  nle_opt_report path_total;
} nle_opt_state;

nle_opt_state *nle__opt_state(nle_opt *opt);
/* Whether the optimisers' table has a row for this kind. */
bool nle__opt_kind_known(nle_opt_kind kind);

/* The one line search (linesearch.c): Armijo backtracking (Nocedal and
 * Wright, alg. 3.1) from a first trial step along a descent direction whose
 * slope g.p < 0 is given. trial(user, step, &E) evaluates E at x + step p.
 * The optimisers take c1 and shrink from nle_opt_opts; the out-of-sample
 * maps take the same defaults. */
typedef struct {
  double c1;     /* sufficient decrease: E(x + a p) <= E(x) + c1 a g.p */
  double shrink; /* the step's factor after a refusal */
  int max_tries; /* trials before giving up (no decrease found) */
} nle__armijo;

static inline nle__armijo nle__armijo_default(void) {
  nle__armijo a = {1e-4, 0.5, 60};
  return a;
}

static inline bool nle__armijo_accepts(const nle__armijo *a, double E, double Et, double step, double slope) {
  return Et <= E + a->c1 * step * slope;
}

typedef nle_status (*nle__trial_fn)(void *user, double step, double *E);
/* From *step, shrinking it until the trial is accepted: *accepted, with *Et
 * the trial's E and *step the accepted step; *evaluations counts the trials.
 * A trial's error stops the search and is returned. */
nle_status nle__armijo_backtrack(const nle__armijo *a, double E, double slope, nle__trial_fn trial, void *user,
                                 double *step, double *Et, bool *accepted, int *evaluations);
/* Whether the engine serves the model (d = 0: any dimension; sq_features:
 * squared-distance W- given by features); the message names what does. */
nle_status nle__model_check_engine(nle_ctx *ctx, nle_model_kind kind, nle_wneg_kind wneg, nle_repulsion engine,
                                   int sq_features, size_t d);
/* Writes the checkpoint now, if one was asked for. */
nle_status nle__opt_checkpoint(nle_ctx *ctx, nle_opt *opt, const nle_matd *X);

/* SD-: the psd diagonal blocks of the repulsive Hessian at X (dissertation
 * sec. 3.3): prepare computes the normalisers at X, apply gives
 * out_i = 8 L^xx_ii V_i for every dimension i. */
/* Features for squared-distance W-: about their mean (into *centred, N x
 * D', unless centred is NULL) and their squared norms (N). */
nle_status nle__centre_features(nle_ctx *ctx, const nle_matf *F, double **centred, double **sq_norms);
/* Whether nle_model_eval computes the attractive energy (default 1). The
 * fixed-rate optimiser needs only the gradient on most iterations; without
 * the energy E is NaN and the log1p pass over W+ is skipped. */
void nle__model_want_energy(nle_model *m, int want);
/* The fast engines sweep the points in a locality order of W+ from this many
 * points (default 20,000); tests set it to compare both ways. */
void nle__model_set_locality_min(nle_model *m, int64_t points);
/* Logs (verbosity 2) the evaluations' repulsion and attraction seconds out
 * of `total` seconds of optimisation. */
void nle__model_log_times(nle_ctx *ctx, const nle_model *m, double total);
nle_status nle__model_curvature_prepare(nle_ctx *ctx, nle_model *m, const nle_matd *X);
nle_status nle__model_curvature_apply(nle_ctx *ctx, nle_model *m, const nle_matd *X, const nle_matd *V,
                                      nle_matd *out);

#endif
