/* nbody_internal.h — what the kernel-sum engines (exact, Barnes-Hut,
 * FFT interpolation) share. */
#ifndef NLE_NBODY_INTERNAL_H
#define NLE_NBODY_INTERNAL_H

#include "nbody.h"

#include <math.h>

enum { NBODY_MAX_DIM = 3 };

static inline double nle__kernel_value(nle_kernel k, double d2) {
  switch (k) {
  case NLE_KERNEL_GAUSSIAN: return exp(-d2);
  case NLE_KERNEL_STUDENT: return 1.0 / (1.0 + d2);
  default: {
    double t = 1.0 / (1.0 + d2);
    return t * t;
  }
  }
}

/* NLE_OK when X is N x d with N >= 1, 1 <= d <= 3, all finite, and the
 * kernel is known; otherwise a recorded error naming `engine`. */
nle_status nle__kernel_sums_check(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const char *engine);

#endif
