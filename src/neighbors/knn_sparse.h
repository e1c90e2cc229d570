/* knn_sparse.h — what the sparse searches share (private): the rows as the
 * metric compares them, one pair's distance (the expansion, recomputed
 * directly where it may cancel: knn_sparse.c's opening comment), bounded
 * heaps, the rows' transpose and walk order. knn_sparse.c prepares the rows
 * and holds the front doors; knn_sparse_exact.c and knn_sparse_approx.c
 * the two searches. */
#ifndef NLE_NEIGHBORS_KNN_SPARSE_H
#define NLE_NEIGHBORS_KNN_SPARSE_H

#include "metric.h"

#include <math.h>
#include <stdlib.h>

/* ---- rows as the metric compares them ----------------------------------- */

/* ---- rows as the metric compares them ----------------------------------- */

typedef struct {
  nle_metric metric;
  int64_t n, d;
  const int64_t *rowptr;
  const int32_t *colind;
  double *w;    /* the scaled values, on the input's structure */
  double *a;    /* per row: the expansion's constant (|w|^2, or 1) */
  double *q;    /* per row: |w|^2, the scale of the rounding */
  double *m;    /* per row: mu / |u - mu| (correlation), else NULL */
  double dm;    /* D (correlation) */
  double q_max, m_max; /* largest |w|^2 and |m| */
  int64_t nnz_max;     /* most entries in a row */
} sp_rows;

/* ---- one pair's distance ------------------------------------------------ */

static inline int64_t row_nnz(const sp_rows *R, int64_t i) { return R->rowptr[i + 1] - R->rowptr[i]; }

/* a_i + a_r - 2 dot + 2 D m_i m_r, written symmetrically in (i, r). */
static inline double expand(const sp_rows *Q, int64_t i, const sp_rows *R, int64_t r, double dot) {
  double d = (Q->a[i] + R->a[r]) - 2.0 * dot;
  if (Q->m) d += 2.0 * Q->dm * (Q->m[i] * R->m[r]);
  return d;
}

/* Below this the expansion may carry more than 1/16 of a float ulp of
 * error: the value is recomputed directly. */
static inline double direct_below(const sp_rows *Q, int64_t i, const sp_rows *R, int64_t r) {
  double S = Q->q[i] + R->q[r];
  if (Q->m) S += 2.0 * Q->dm * fabs(Q->m[i] * R->m[r]);
  return (double)(row_nnz(Q, i) + row_nnz(R, r) + 8) * 0x1p-24 * S;
}

/* The largest direct_below of row i against any row of R. */
static inline double direct_below_max(const sp_rows *Q, int64_t i, const sp_rows *R) {
  double S = Q->q[i] + R->q_max;
  if (Q->m) S += 2.0 * Q->dm * fabs(Q->m[i]) * R->m_max;
  return (double)(row_nnz(Q, i) + R->nnz_max + 8) * 0x1p-24 * S * (1.0 + 0x1p-40);
}

/* sum over the union of the columns of (x_j - y_j)^2, x and y the centred
 * scaled rows (an absent entry is 0 - m), plus (D - |union|) (m_i - m_r)^2
 * for the columns both leave out: no cancellation. */
static inline double direct(const sp_rows *Q, int64_t i, const sp_rows *R, int64_t r) {
  int64_t p = Q->rowptr[i], pe = Q->rowptr[i + 1], t = R->rowptr[r], te = R->rowptr[r + 1], in_union = 0;
  double mi = Q->m ? Q->m[i] : 0.0, mr = Q->m ? R->m[r] : 0.0, s = 0.0;
  while (p < pe || t < te) {
    int32_t cp = p < pe ? Q->colind[p] : INT32_MAX, ct = t < te ? R->colind[t] : INT32_MAX;
    double x = -mi, y = -mr;
    if (cp <= ct) x = Q->w[p++] - mi;
    if (ct <= cp) y = R->w[t++] - mr;
    s += (x - y) * (x - y);
    in_union++;
  }
  if (Q->m) s += (Q->dm - (double)in_union) * ((mi - mr) * (mi - mr));
  return s;
}

static inline double pair_value(const sp_rows *Q, int64_t i, const sp_rows *R, int64_t r, double dot) {
  double d = expand(Q, i, R, r, dot);
  return d < direct_below(Q, i, R, r) ? direct(Q, i, R, r) : d;
}

/* ---- bounded heaps of (float distance, index) ---------------------------- */

typedef struct {
  float d;
  int32_t i;
} sp_cand;

static inline int sp_greater(sp_cand a, sp_cand b) { return a.d > b.d || (a.d == b.d && a.i > b.i); }

static inline int sp_cand_cmp(const void *a, const void *b) {
  sp_cand x = *(const sp_cand *)a, y = *(const sp_cand *)b;
  return sp_greater(x, y) - sp_greater(y, x);
}

NLE__DEFINE_HEAP_REPLACE(sp_heap_replace, sp_cand, sp_greater)

static inline void heap_offer(sp_cand *h, int n, sp_cand c) {
  if (sp_greater(h[0], c)) sp_heap_replace(h, n, c);
}

static inline void heap_reset(sp_cand *h, int k) {
  for (int c = 0; c < k; c++) h[c] = (sp_cand){INFINITY, INT32_MAX};
}

/* ---- the rows' column lists and walk order (knn_sparse_base.c) ---------- */

typedef struct {
  int64_t *ptr;
  int32_t *row;
  double *val;
} sp_transpose;

void nle__sp_transpose_free(sp_transpose *T);
nle_status nle__sp_transpose_build(nle_ctx *ctx, const sp_rows *R, sp_transpose *T);
/* R's rows by a per-row key, ties by index; NULL when out of memory. */
int32_t *nle__sp_walk_order(nle_ctx *ctx, const sp_rows *R, const double *key);

/* ---- the searches -------------------------------------------------------- */

/* knn_sparse_exact.c: the exact search's multiply-adds, and the search of Q's
 * rows among R's (self: Q is R, a row not its own neighbour). */
nle_status nle__sp_exact_work(nle_ctx *ctx, const sp_rows *Q, const sp_rows *R, double *work);
nle_status nle__sp_exact(nle_ctx *ctx, const sp_rows *R, const sp_rows *Q, int self, int k, nle_csr **graph);
/* knn_sparse_approx.c */
nle_status nle__sp_approx(nle_ctx *ctx, const sp_rows *R, int k, const nle_knn_approx_opts *approx, nle_csr **graph);

#endif
