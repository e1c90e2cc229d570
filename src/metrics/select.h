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

/* Offers x to a max-heap of size k holding the k smallest seen so far. */
static inline void nle__heap_offer(nle__pair *h, int k, nle__pair x) {
  if (!nle__pair_greater(h[0], x)) return;
  int p = 0;
  for (;;) {
    int l = 2 * p + 1, r = l + 1, m = p;
    nle__pair best = x;
    if (l < k && nle__pair_greater(h[l], best)) {
      m = l;
      best = h[l];
    }
    if (r < k && nle__pair_greater(h[r], best)) m = r;
    if (m == p) break;
    h[p] = h[m];
    p = m;
  }
  h[p] = x;
}

#endif
