/* oos_base.c — what both minimisers of F(y) build on, the per-point one
 * (outofsample.c) and the batched one on the fast engines (oos_batch.c):
 * a new point's problem and the new points' order. Its own file, below
 * both, so that outofsample.c, which chooses between them, is not called
 * back. */
#include "oos_internal.h"

#include "../core/vecmath.h"
#include <math.h>
#include <stdlib.h>

/* The problem of new point y (row q of the neighbour lists): attraction
 * weights into a[k], W- values into rw (k, or N for squared distances). */
oos_problem nle__oos_forward_problem(const nle_trained *t, const float *y, const nle_csr *nbrs, const nle_csr *P,
                                   size_t q, double *a, double *rw) {
  size_t n = t->X->rows, D = t->Y->cols, k = (size_t)t->k;
  int64_t r0 = nbrs->rowptr[q];
  const int32_t *idx = nbrs->colind + r0;
  for (size_t c = 0; c < k; c++) {
    size_t nb = (size_t)idx[c];
    double d2 = nle_csr_value(nbrs, r0 + (int64_t)c), raw;
    if (P) { /* p_{n|y} + p_{y|n}, the latter when y falls in n's neighbourhood */
      raw = nle_csr_value(P, r0 + (int64_t)c);
      if (d2 <= t->radius[nb]) raw += exp(-t->beta[nb] * d2 - t->log_z[nb]);
    } else {
      raw = exp(-d2 / (2.0 * t->sigma * t->sigma));
    }
    a[c] = t->w_scale * raw;
    rw[c] = d2; /* W- on the kNN graph: squared distances */
  }
  oos_problem p = {t->kind, t->lambda, t->X, t->z_rows, t->z_total, idx, a, k, NULL, NULL, n};
  int ee = t->kind == NLE_MODEL_EE || t->kind == NLE_MODEL_TEE;
  if (ee && t->wneg == NLE_WNEG_KNN) {
    p.r_idx = idx;
    p.r_w = rw;
    p.nr = k;
  } else if (ee && t->wneg == NLE_WNEG_SQDIST) {
    for (size_t i = 0; i < n; i++) rw[i] = nle__sqdist_fd(y, t->Y->data + i * D, D);
    p.r_w = rw;
  }
  return p;
}

nle_status nle__oos_map_order(nle_ctx *ctx, const nle_trained *t, const nle_csr *nbrs, size_t **order) {
  size_t n = t->X->rows, d = t->X->cols, m = (size_t)nbrs->rows;
  *order = NULL;
  nle__pair *key = nle__malloc(ctx, (m ? m : 1) * sizeof *key, "the new points' order");
  size_t *out = nle__malloc(ctx, (m ? m : 1) * sizeof *out, "the new points' order");
  if (!key || !out) {
    free(key);
    free(out);
    return NLE_ERR_NOMEM;
  }
  double lo[64], hi[64];
  for (size_t c = 0; c < d; c++) lo[c] = INFINITY, hi[c] = -INFINITY;
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < d; c++) {
      double v = t->X->data[i * d + c];
      lo[c] = v < lo[c] ? v : lo[c];
      hi[c] = v > hi[c] ? v : hi[c];
    }
  /* Z-order: the bits of the coordinates, quantised over the map's box,
   * interleaved (52 bits in all, exact in a double). */
  unsigned bits = d < 52 ? 52 / (unsigned)d : 1;
  double levels = ldexp(1.0, (int)bits) - 1.0;
  for (size_t q = 0; q < m; q++) {
    const double *x = t->X->data + (size_t)nbrs->colind[nbrs->rowptr[q]] * d;
    uint64_t code = 0, cell[64];
    for (size_t c = 0; c < d; c++)
      cell[c] = hi[c] > lo[c] ? (uint64_t)((x[c] - lo[c]) / (hi[c] - lo[c]) * levels) : 0;
    for (unsigned b = bits; b-- > 0;)
      for (size_t c = 0; c < d; c++) code = code << 1 | (cell[c] >> b & 1u);
    key[q] = (nle__pair){(double)code, (int64_t)q};
  }
  qsort(key, m, sizeof *key, nle__pair_cmp);
  for (size_t q = 0; q < m; q++) out[q] = (size_t)key[q].i;
  free(key);
  *order = out;
  return NLE_OK;
}
