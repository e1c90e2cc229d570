/* linesearch.c — the one backtracking line search of the optimisers and the
 * out-of-sample maps (nle_internal.h). */
#include "nle_internal.h"

nle_status nle__armijo_backtrack(const nle__armijo *a, double E, double slope, nle__trial_fn trial, void *user,
                                 double *step, double *Et, bool *accepted, int *evaluations) {
  *accepted = false;
  for (int tries = 0; tries < a->max_tries; tries++) {
    nle_status s = trial(user, *step, Et);
    if (evaluations) ++*evaluations;
    if (s) return s;
    if (nle__armijo_accepts(a, E, *Et, *step, slope)) {
      *accepted = true;
      return NLE_OK;
    }
    *step *= a->shrink;
  }
  return NLE_OK;
}
