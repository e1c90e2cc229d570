/* select.h — k smallest (distance, index) pairs by a bounded max-heap; ties
 * go to the smaller index, as a stable sort would order them. */
#ifndef NLE_METRICS_SELECT_H
#define NLE_METRICS_SELECT_H

#include "../core/internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static inline void nle__heap_init(nle__pair *h, int k) {
  for (int c = 0; c < k; c++) h[c] = (nle__pair){INFINITY, INT64_MAX};
}

NLE__DEFINE_HEAP_REPLACE(nle__heap_replace, nle__pair, nle__pair_greater)

/* Offers x to a max-heap of size k holding the k smallest seen so far. */
static inline void nle__heap_offer(nle__pair *h, int k, nle__pair x) {
  if (nle__pair_greater(h[0], x)) nle__heap_replace(h, k, x);
}

#endif
