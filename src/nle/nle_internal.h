/* nle_internal.h — what the optimiser shares with the homotopy: the state of
 * a run between iterations, which is also what a checkpoint holds. */
#ifndef NLE_NLE_INTERNAL_H
#define NLE_NLE_INTERNAL_H

#include "../core/internal.h"

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
/* Writes the checkpoint now, if one was asked for. */
nle_status nle__opt_checkpoint(nle_ctx *ctx, nle_opt *opt, const nle_matd *X);

#endif
