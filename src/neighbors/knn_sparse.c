/* knn_sparse.c — k nearest neighbours of sparse rows (CSR: text as tf-idf,
 * single-cell counts) under the Euclidean, cosine and correlation distances,
 * never densified.
 *
 * Every metric is one expansion. With w the rows as the metric scales them
 * (Euclidean: as they are; cosine: divided by their norm; correlation:
 * divided by the norm of the centred row, whose mean mu over all D columns
 * counts the implicit zeros) and m = mu / |u - mu| (correlation, else 0):
 *
 *     d(i, r) = a_i + a_r - 2 w_i.w_r + 2 D m_i m_r
 *
 * with a = |w|^2 (Euclidean) or 1: |u - v|^2, 2 (1 - cos) and 2 (1 - r),
 * since (u - mu_u).(v - mu_v) = u.v - D mu_u mu_v. The dot products are
 * sums over the columns two rows share, in double, added in increasing column
 * order by every path (the exact search's column lists, the re-ranking's
 * scattered row), so a pair's value does not depend on the path that
 * computed it.
 *
 * Accuracy. The expansion errs by at most about (nnz_i + nnz_r + 8) 2^-52 S
 * with S = |w_i|^2 + |w_r|^2 + 2 D |m_i m_r| (the dot product's rounding,
 * bounded by |w_i||w_r|, and the few roundings of the norms). Where the
 * value is below 16 times that bound over single precision's unit
 * (d < (nnz_i + nnz_r + 8) 2^-24 S: near-duplicates, cancellation), it is
 * recomputed directly as sum (x_j - y_j)^2 over the union of the two rows'
 * columns (plus the shared implicit zeros' (m_i - m_r)^2 for correlation),
 * which has no cancellation; elsewhere its relative error is below 2^-28.
 * Each distance is therefore within about an ulp of the float-rounded true
 * value, exact duplicates are at 0, and distances are symmetric bit for
 * bit. The lists are sorted by the float value, ties by index, as the dense
 * searches' are.
 *
 * Exact search: the rows' transpose (column lists) once; each query row
 * accumulates its dot products into a dense per-thread array over the
 * columns' lists. A row that touches many rows is then scanned whole; one
 * that touches few offers those, then walks the untouched rows (whose dot
 * product is 0) in the order of their distance's constant part (Euclidean:
 * |w_r|^2; correlation: m_r; cosine: all at 2, by index) and stops once the
 * next cannot enter the heap. Rows are cut into fixed blocks, each row
 * computed by one thread: the same bits for any thread count.
 *
 * Approximate search: the scaled (and, for correlation, centred) rows'
 * coordinates in their leading singular subspace (a randomised range finder:
 * Gaussian directions from the context's seed and one power product; the
 * plain random projection ranks true neighbours far worse on text), the
 * dense approximate search (random-projection forest + NN-descent) there for
 * candidates, re-ranked by the exact sparse distances, then local joins in
 * the sparse metric (neighbours' neighbours and reverse neighbours, exact
 * distances) until the lists settle. docs/knn.md has the measurements. */
#include "metric.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static void sp_rows_free(sp_rows *R) {
  free(R->w);
  free(R->a);
  free(R->q);
  free(R->m);
  memset(R, 0, sizeof *R);
}

/* The scaled rows of X (`name` names it in errors: "the data", "the queries"):
 * columns strictly increasing within rows, values finite, rows that the
 * metric cannot scale refused by number (1-based, as the readers count). */
static nle_status sp_rows_prepare(nle_ctx *ctx, const nle_csr *X, nle_metric metric, const char *name, sp_rows *R) {
  memset(R, 0, sizeof *R);
  if (!X) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN: %s is NULL", name);
  nle_status s = nle_csr_validate(ctx, X);
  if (s) return s;
  if (X->cols < 1) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN: %s has no columns", name);
  if (X->rows > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "kNN supports at most 2^31 - 1 points");
  int64_t n = X->rows;
  const char *mname = nle_metric_name(metric);
  for (int64_t i = 0; i < n; i++) {
    for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++) {
      if (p > X->rowptr[i] && X->colind[p] <= X->colind[p - 1])
        return nle__fail(ctx, NLE_ERR_ARG,
                         "sparse kNN: row %lld of %s has column %d after column %d: columns must be sorted and "
                         "unrepeated within rows (scipy: X.sum_duplicates())",
                         (long long)i + 1, name, X->colind[p] + 1, X->colind[p - 1] + 1);
      double v = nle_csr_value(X, p);
      if (!isfinite(v))
        return nle__fail(ctx, NLE_ERR_VALUE, "sparse kNN: row %lld, column %d of %s is %g: the %s distance needs "
                         "finite values", (long long)i, X->colind[p], name, v, mname);
    }
  }
  s = nle__check_memory(ctx, (double)X->nnz * 8 + (double)n * 24, "the scaled sparse rows");
  if (s) return s;
  R->metric = metric;
  R->n = n;
  R->d = X->cols;
  R->rowptr = X->rowptr;
  R->colind = X->colind;
  R->w = nle__malloc(ctx, (size_t)(X->nnz ? X->nnz : 1) * sizeof(double), "the scaled sparse rows");
  R->a = nle__malloc(ctx, (size_t)n * sizeof(double) + 1, "the rows' norms");
  R->q = nle__malloc(ctx, (size_t)n * sizeof(double) + 1, "the rows' norms");
  if (metric == NLE_METRIC_CORRELATION) R->m = nle__malloc(ctx, (size_t)n * sizeof(double) + 1, "the rows' means");
  if (!R->w || !R->a || !R->q || (metric == NLE_METRIC_CORRELATION && !R->m)) {
    sp_rows_free(R);
    return NLE_ERR_NOMEM;
  }
  R->dm = metric == NLE_METRIC_CORRELATION ? (double)X->cols : 0.0;
  for (int64_t i = 0; i < n && !s; i++) {
    int64_t p0 = X->rowptr[i], p1 = X->rowptr[i + 1];
    double sum = 0.0, sq = 0.0;
    for (int64_t p = p0; p < p1; p++) {
      double v = nle_csr_value(X, p);
      sum += v;
      sq += v * v;
    }
    double mean = 0.0, scale = 1.0;
    if (metric == NLE_METRIC_CORRELATION) {
      mean = sum / (double)X->cols;
      sq = 0.0;
      for (int64_t p = p0; p < p1; p++) sq += (nle_csr_value(X, p) - mean) * (nle_csr_value(X, p) - mean);
      sq += (double)(X->cols - (p1 - p0)) * (mean * mean);
    }
    if (metric != NLE_METRIC_EUCLIDEAN) {
      if (!(sq > 0.0)) {
        bool zero = true;
        for (int64_t p = p0; p < p1 && zero; p++) zero = nle_csr_value(X, p) == 0.0;
        s = zero ? nle__fail(ctx, NLE_ERR_VALUE, "row %lld of %s is all zeros: its %s distance is undefined",
                             (long long)i, name, mname)
                 : nle__fail(ctx, NLE_ERR_VALUE, "row %lld of %s is constant: its correlation distance is undefined",
                             (long long)i, name);
        break;
      }
      scale = sqrt(sq);
    }
    double q = 0.0;
    for (int64_t p = p0; p < p1; p++) {
      double w = metric == NLE_METRIC_EUCLIDEAN ? nle_csr_value(X, p) : nle_csr_value(X, p) / scale;
      R->w[p] = w;
      q += w * w;
    }
    R->q[i] = q;
    R->a[i] = metric == NLE_METRIC_EUCLIDEAN ? q : 1.0;
    if (R->m) R->m[i] = mean / scale;
    R->q_max = fmax(R->q_max, q);
    if (R->m) R->m_max = fmax(R->m_max, fabs(R->m[i]));
    if (p1 - p0 > R->nnz_max) R->nnz_max = p1 - p0;
  }
  /* Euclidean distances are stored in single precision: as the dense
   * searches, refuse data whose squared distances overflow or underflow. */
  if (!s && metric == NLE_METRIC_EUCLIDEAN && !nle__knn_range_ok(R->q_max)) {
    if (R->q_max > FLT_MAX / 4) {
      int64_t at = 0;
      for (int64_t i = 0; i < n; i++)
        if (R->q[i] == R->q_max) at = i;
      s = nle__fail(ctx, NLE_ERR_VALUE,
                    "row %lld of %s has norm %.3g: squared distances overflow single precision (3.4e38); scale the "
                    "data down", (long long)at, name, sqrt(R->q_max));
    } else {
      s = nle__fail(ctx, NLE_ERR_VALUE,
                    "every row of %s has norm below %.3g: squared distances underflow single precision; scale the "
                    "data up", name, sqrt(R->q_max));
    }
  }
  if (s) sp_rows_free(R);
  return s;
}

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
static double direct(const sp_rows *Q, int64_t i, const sp_rows *R, int64_t r) {
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

static int sp_cand_cmp(const void *a, const void *b) {
  sp_cand x = *(const sp_cand *)a, y = *(const sp_cand *)b;
  return sp_greater(x, y) - sp_greater(y, x);
}

static inline void heap_offer(sp_cand *h, int n, sp_cand c) {
  if (!sp_greater(h[0], c)) return;
  int p = 0;
  for (;;) {
    int l = 2 * p + 1, r = l + 1, m = p;
    sp_cand best = c;
    if (l < n && sp_greater(h[l], best)) {
      m = l;
      best = h[l];
    }
    if (r < n && sp_greater(h[r], best)) m = r;
    if (m == p) break;
    h[p] = h[m];
    p = m;
  }
  h[p] = c;
}

static void heap_reset(sp_cand *h, int k) {
  for (int c = 0; c < k; c++) h[c] = (sp_cand){INFINITY, INT32_MAX};
}

/* ---- exact search ------------------------------------------------------- */

typedef struct {
  const sp_rows *Q, *R;
  const int64_t *tptr;  /* R's transpose: column j's rows trow[tptr[j] ..] */
  const int32_t *trow;
  const double *tval;
  const int32_t *walk;  /* R's rows by the constant part of an untouched
                           row's distance (Euclidean |w|^2, correlation m),
                           ties by index; NULL for cosine (all 2) */
  int self, k;
  nle_csr *graph;
} exact_job;

enum { EXACT_BLOCK = 64 };

/* Offers the untouched rows (no shared column, dot product 0) to row i's
 * heap in the order of their distance, stopping at the first that cannot
 * enter. */
static void walk_untouched(const exact_job *j, int64_t i, const uint8_t *mark, double slack, sp_cand *h) {
  const sp_rows *Q = j->Q, *R = j->R;
  int64_t n = R->n, self = j->self ? i : -1;
  int k = j->k;
  if (!j->walk) { /* cosine: every untouched row at exactly 2, by index */
    for (int64_t r = 0; r < n; r++) {
      if (mark[r] || r == self) continue;
      sp_cand c = {(float)pair_value(Q, i, R, r, 0.0), (int32_t)r};
      if (!sp_greater(h[0], c) && slack < 1.0) break;
      heap_offer(h, k, c);
    }
    return;
  }
  /* The expansion with dot 0 is monotone along the walk (correlation:
   * reversed when m_i < 0); slack covers the rows recomputed directly. */
  int down = Q->m && Q->m[i] < 0.0;
  for (int64_t at = 0; at < n; at++) {
    int64_t r = j->walk[down ? n - 1 - at : at];
    if (mark[r] || r == self) continue;
    double d = expand(Q, i, R, r, 0.0);
    if ((float)(d - slack) > h[0].d) break;
    if (d < slack && d < direct_below(Q, i, R, r)) d = direct(Q, i, R, r);
    heap_offer(h, k, (sp_cand){(float)d, (int32_t)r});
  }
}

/* Row i's list, sorted, into the graph. */
static void write_row(const exact_job *j, int64_t i, sp_cand *h) {
  int k = j->k;
  qsort(h, (size_t)k, sizeof *h, sp_cand_cmp);
  size_t out = (size_t)i * (size_t)k;
  for (int c = 0; c < k; c++) {
    j->graph->colind[out + (size_t)c] = h[c].i;
    ((float *)j->graph->val)[out + (size_t)c] = h[c].d;
  }
}

/* Whether row i's columns' lists reach more than a quarter of the rows: then
 * every row is scanned rather than the touched ones listed. */
static bool touches_most(const exact_job *j, int64_t i) {
  double work = 0.0;
  for (int64_t p = j->Q->rowptr[i]; p < j->Q->rowptr[i + 1]; p++)
    work += (double)(j->tptr[j->Q->colind[p] + 1] - j->tptr[j->Q->colind[p]]);
  return work * 4.0 > (double)j->R->n;
}

/* One row's list, touching few rows: its dot products accumulated over its
 * columns' lists into acc (the rows touched listed and marked), then the
 * untouched walked (all of acc and mark left clean). */
static void exact_row(const exact_job *j, int64_t i, double *acc, uint8_t *mark, int32_t *touched, sp_cand *h) {
  const sp_rows *Q = j->Q, *R = j->R;
  int64_t self = j->self ? i : -1, p0 = Q->rowptr[i], p1 = Q->rowptr[i + 1];
  int k = j->k;
  heap_reset(h, k);
  double slack = direct_below_max(Q, i, R);
  int64_t nt = 0;
  for (int64_t p = p0; p < p1; p++) {
    double v = Q->w[p];
    int32_t c = Q->colind[p];
    for (int64_t t = j->tptr[c]; t < j->tptr[c + 1]; t++) {
      int32_t r = j->trow[t];
      if (!mark[r]) {
        mark[r] = 1;
        touched[nt++] = r;
      }
      acc[r] += v * j->tval[t];
    }
  }
  for (int64_t t = 0; t < nt; t++) {
    int64_t r = touched[t];
    if (r != self) heap_offer(h, k, (sp_cand){(float)pair_value(Q, i, R, r, acc[r]), (int32_t)r});
  }
  walk_untouched(j, i, mark, slack, h);
  for (int64_t t = 0; t < nt; t++) {
    acc[touched[t]] = 0.0;
    mark[touched[t]] = 0;
  }
  write_row(j, i, h);
}

/* Rows that touch most rows, GROUP at a time, over tiles of TILE rows of R:
 * for each tile, the union of the group's columns in increasing order, each
 * column's list (sorted by row) read from the tile's first row on for all
 * of them at once, the dot products of row r in acc[(r - r0) GROUP + b]
 * (one cache line; a tile's accumulators stay in cache). A row lacking the
 * column adds 0 * v, which leaves its sums' bits as they are: the values are
 * the one-row path's. Tf-idf rows share their common terms, whose long lists
 * are most of the work: read once per group instead of once per row. */
enum { GROUP = 4, TILE = 8192 };

NLE_HOT static void exact_group(const exact_job *j, const int64_t *rows, int cnt, double *acc, int64_t *cursor,
                                sp_cand *heaps) {
  const sp_rows *Q = j->Q, *R = j->R;
  int64_t n = R->n, at[GROUP], end[GROUP];
  int k = j->k;
  double slack[GROUP];
  for (int b = 0; b < cnt; b++) {
    slack[b] = direct_below_max(Q, rows[b], R);
    heap_reset(heaps + (size_t)b * (size_t)k, k);
  }
  for (int64_t r0 = 0; r0 < n; r0 += TILE) {
    int64_t r1 = r0 + TILE < n ? r0 + TILE : n;
    for (int b = 0; b < cnt; b++) {
      at[b] = Q->rowptr[rows[b]];
      end[b] = Q->rowptr[rows[b] + 1];
    }
    /* the union's u-th column is the same at every tile: cursor[u] is where
     * its list stopped at the previous tile */
    for (int64_t u = 0;; u++) {
      int32_t c = INT32_MAX;
      for (int b = 0; b < cnt; b++)
        if (at[b] < end[b] && Q->colind[at[b]] < c) c = Q->colind[at[b]];
      if (c == INT32_MAX) break;
      double vq[GROUP] = {0};
      for (int b = 0; b < cnt; b++)
        if (at[b] < end[b] && Q->colind[at[b]] == c) vq[b] = Q->w[at[b]++];
      int64_t t = r0 ? cursor[u] : j->tptr[c], stop = j->tptr[c + 1];
      for (; t < stop && j->trow[t] < r1; t++) {
        double v = j->tval[t], *a = acc + (size_t)(j->trow[t] - r0) * GROUP;
#pragma omp simd
        for (int b = 0; b < GROUP; b++) a[b] += vq[b] * v;
      }
      cursor[u] = t;
    }
    /* the tile's rows, each into the group's heaps in turn; acc left clean */
    for (int64_t r = r0; r < r1; r++) {
      double *a = acc + (size_t)(r - r0) * GROUP;
      for (int b = 0; b < cnt; b++) {
        int64_t i = rows[b];
        if (j->self && r == i) continue;
        sp_cand *h = heaps + (size_t)b * (size_t)k;
        double d = expand(Q, i, R, r, a[b]);
        if ((float)(d - slack[b]) > h[0].d) continue;
        if (d < slack[b] && d < direct_below(Q, i, R, r)) d = direct(Q, i, R, r);
        heap_offer(h, k, (sp_cand){(float)d, (int32_t)r});
      }
      for (int b = 0; b < GROUP; b++) a[b] = 0.0;
    }
  }
  for (int b = 0; b < cnt; b++) write_row(j, rows[b], heaps + (size_t)b * (size_t)k);
}

/* A thread's scratch: the accumulators (a row's over R, or a group's over a
 * tile), the touched list, the heaps, the marks. */
static size_t acc_len(int64_t n) { return (size_t)n > (size_t)TILE * GROUP ? (size_t)n : (size_t)TILE * GROUP; }

static size_t exact_scratch(int64_t n, int64_t nnz_max, int k) {
  return acc_len(n) * sizeof(double) + (size_t)GROUP * (size_t)nnz_max * sizeof(int64_t) +
         (size_t)n * (sizeof(int32_t) + 1) + (size_t)k * GROUP * sizeof(sp_cand);
}

static int exact_block(void *job, size_t b, void *scratch) {
  const exact_job *j = job;
  int64_t n = j->R->n, m = j->Q->n, i0 = (int64_t)b * EXACT_BLOCK, i1 = i0 + EXACT_BLOCK < m ? i0 + EXACT_BLOCK : m;
  double *acc = scratch;
  int64_t *cursor = (int64_t *)(acc + acc_len(n)); /* a group's union: at most GROUP nnz_max columns */
  int32_t *touched = (int32_t *)(cursor + (size_t)GROUP * (size_t)j->Q->nnz_max);
  sp_cand *h = (sp_cand *)(touched + n);
  uint8_t *mark = (uint8_t *)(h + (size_t)j->k * GROUP);
  /* the scratch is a thread's for the whole loop: clean at every block,
   * left clean by every row and group */
  memset(acc, 0, acc_len(n) * sizeof *acc);
  memset(mark, 0, (size_t)n);
  int64_t group[GROUP];
  int cnt = 0;
  for (int64_t i = i0; i < i1; i++) {
    if (!touches_most(j, i)) {
      exact_row(j, i, acc, mark, touched, h);
      continue;
    }
    group[cnt++] = i;
    if (cnt == GROUP) {
      exact_group(j, group, cnt, acc, cursor, h);
      cnt = 0;
    }
  }
  if (cnt) exact_group(j, group, cnt, acc, cursor, h);
  return 0;
}

typedef struct {
  int64_t *ptr;
  int32_t *row;
  double *val;
} sp_transpose;

static void sp_transpose_free(sp_transpose *T) {
  free(T->ptr);
  free(T->row);
  free(T->val);
}

static nle_status sp_transpose_build(nle_ctx *ctx, const sp_rows *R, sp_transpose *T) {
  int64_t nnz = R->rowptr[R->n];
  T->ptr = nle__calloc(ctx, (size_t)R->d + 2, sizeof(int64_t), "the column lists");
  T->row = nle__malloc(ctx, (size_t)(nnz ? nnz : 1) * sizeof(int32_t), "the column lists");
  T->val = nle__malloc(ctx, (size_t)(nnz ? nnz : 1) * sizeof(double), "the column lists");
  if (!T->ptr || !T->row || !T->val) return NLE_ERR_NOMEM;
  for (int64_t p = 0; p < nnz; p++) T->ptr[R->colind[p] + 2]++;
  for (int64_t c = 0; c < R->d; c++) T->ptr[c + 2] += T->ptr[c + 1];
  /* ptr[c + 1] is column c's next free slot; after filling, ptr[c] is its
   * start. Rows in order: each column's list sorted by row. */
  for (int64_t i = 0; i < R->n; i++)
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) {
      int64_t at = T->ptr[R->colind[p] + 1]++;
      T->row[at] = (int32_t)i;
      T->val[at] = R->w[p];
    }
  return NLE_OK;
}

static int pair_cmp_q(const void *a, const void *b) { return nle__pair_cmp(a, b); }

/* R's rows by a per-row key, ties by index. */
static int32_t *walk_order(nle_ctx *ctx, const sp_rows *R, const double *key) {
  nle__pair *tmp = nle__malloc(ctx, (size_t)R->n * sizeof *tmp, "the walk order");
  int32_t *order = nle__malloc(ctx, (size_t)R->n * sizeof *order, "the walk order");
  if (tmp && order) {
    for (int64_t i = 0; i < R->n; i++) tmp[i] = (nle__pair){key[i], i};
    qsort(tmp, (size_t)R->n, sizeof *tmp, pair_cmp_q);
    for (int64_t i = 0; i < R->n; i++) order[i] = (int32_t)tmp[i].i;
  } else {
    free(order);
    order = NULL;
  }
  free(tmp);
  return order;
}

/* Multiply-adds of the exact search: sum over query rows of the lengths of
 * their columns' lists (per column: its count in Q times its count in R). */
static nle_status exact_work(nle_ctx *ctx, const sp_rows *Q, const sp_rows *R, double *work) {
  int64_t *cq = nle__calloc(ctx, (size_t)R->d + 1, sizeof *cq, "the column counts");
  int64_t *cr = nle__calloc(ctx, (size_t)R->d + 1, sizeof *cr, "the column counts");
  if (cq && cr) {
    for (int64_t p = 0; p < Q->rowptr[Q->n]; p++) cq[Q->colind[p]]++;
    for (int64_t p = 0; p < R->rowptr[R->n]; p++) cr[R->colind[p]]++;
    *work = 0.0;
    for (int64_t c = 0; c < R->d; c++) *work += (double)cq[c] * (double)cr[c];
  }
  free(cq);
  free(cr);
  return cq && cr ? NLE_OK : NLE_ERR_NOMEM;
}

static nle_status sparse_exact(nle_ctx *ctx, const sp_rows *R, const sp_rows *Q, int self, int k, nle_csr **graph) {
  int64_t n = R->n, m = Q->n, nnz = R->rowptr[n];
  double work = 0.0;
  nle_status s = exact_work(ctx, Q, R, &work);
  if (s) return s;
  int threads = nle__threads_for(ctx, work + (double)m * 64);
  double need = (double)nnz * 12 + (double)R->d * 8 + (double)n * 4 + (double)m * k * 8 +
                (double)threads * (double)exact_scratch(n, Q->nnz_max, k) + (double)n * 16;
  s = nle__check_memory(ctx, need, "sparse exact kNN");
  if (s) return s;
  sp_transpose T = {0};
  int32_t *walk = NULL;
  s = sp_transpose_build(ctx, R, &T);
  if (!s && R->metric != NLE_METRIC_COSINE) {
    walk = walk_order(ctx, R, R->metric == NLE_METRIC_CORRELATION ? R->m : R->a);
    if (!walk) s = NLE_ERR_NOMEM;
  }
  if (!s) s = nle_csr_alloc(ctx, m, n, m * (int64_t)k, NLE_F32, graph);
  if (!s) {
    for (int64_t i = 0; i <= m; i++) (*graph)->rowptr[i] = i * (int64_t)k;
    exact_job job = {Q, R, T.ptr, T.row, T.val, walk, self, k, *graph};
    s = nle__for_blocks(ctx, "sparse exact kNN", (size_t)((m + EXACT_BLOCK - 1) / EXACT_BLOCK), threads,
                        exact_scratch(n, Q->nnz_max, k), exact_block, &job);
    if (s) nle_csr_free(graph);
  }
  sp_transpose_free(&T);
  free(walk);
  return s;
}

/* ---- approximate search ------------------------------------------------- */

/* Measured on tf-idf documents (bench/knn_cosine.sh, 20,000 x 20,000, k =
 * 10): on the coordinates with one power product, the approximate search's
 * 20 candidates (4 trees, 3 iterations) hold 86% of a row's 10 nearest (96
 * directions; 64: 79%; the plain random projection, without the power
 * product: 17% among 30); the local joins then take recall to 0.99 in 3-6
 * passes. More directions, trees or iterations there cost more than the
 * joins they save. */
enum { PROJ_DIMS = 96, PROJ_POWER = 1, PROJ_TREES = 4, PROJ_ITERS = 3, RERANK_BLOCK = 128, MAX_JOINS = 32 };

/* Products with A, the scaled rows as the metric compares them (correlation:
 * centred, A = W - m 1^T, never formed): A M for M of D x l (by rows) and
 * A^T Y for Y of N x l (by the column lists). The l x something matrices
 * are stored in single precision (each product reads a row of them per
 * non-zero: the memory traffic is the cost), each output row accumulated in
 * double by one thread in a fixed order. */
typedef struct {
  const sp_rows *R;
  const sp_transpose *T;
  int l;
  const float *in;     /* M (D x l) or Y (N x l) */
  const double *shift; /* 1^T M, or m^T Y (correlation), else NULL */
  float *out;          /* A M (N x l) or A^T Y (D x l) */
} op_job;

enum { OP_BLOCK = 256, PROJ_MAX_DIMS = 256 };

static int rows_times_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const op_job *j = job;
  const sp_rows *R = j->R;
  size_t l = (size_t)j->l;
  double acc[PROJ_MAX_DIMS];
  int64_t i0 = (int64_t)b * OP_BLOCK, i1 = i0 + OP_BLOCK < R->n ? i0 + OP_BLOCK : R->n;
  for (int64_t i = i0; i < i1; i++) {
    for (size_t t = 0; t < l; t++) acc[t] = j->shift ? -R->m[i] * j->shift[t] : 0.0;
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) {
      const float *g = j->in + (size_t)R->colind[p] * l;
      double v = R->w[p];
      for (size_t t = 0; t < l; t++) acc[t] += v * g[t];
    }
    for (size_t t = 0; t < l; t++) j->out[(size_t)i * l + t] = (float)acc[t];
  }
  return 0;
}

static int columns_times_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const op_job *j = job;
  size_t l = (size_t)j->l;
  double acc[PROJ_MAX_DIMS];
  int64_t c0 = (int64_t)b * OP_BLOCK, c1 = c0 + OP_BLOCK < j->R->d ? c0 + OP_BLOCK : j->R->d;
  for (int64_t c = c0; c < c1; c++) {
    for (size_t t = 0; t < l; t++) acc[t] = j->shift ? -j->shift[t] : 0.0;
    for (int64_t p = j->T->ptr[c]; p < j->T->ptr[c + 1]; p++) {
      const float *y = j->in + (size_t)j->T->row[p] * l;
      double v = j->T->val[p];
      for (size_t t = 0; t < l; t++) acc[t] += v * y[t];
    }
    for (size_t t = 0; t < l; t++) j->out[(size_t)c * l + t] = (float)acc[t];
  }
  return 0;
}

/* out = A M (transposed = false) or A^T M (true). */
static nle_status apply_rows(nle_ctx *ctx, const sp_rows *R, const sp_transpose *T, int l, const float *M,
                             bool transposed, float *out, double *shift) {
  int64_t count = transposed ? R->n : R->d;
  if (R->m) { /* the centring's term: 1^T M, or m^T M */
    memset(shift, 0, (size_t)l * sizeof *shift);
    for (int64_t r = 0; r < count; r++)
      for (int t = 0; t < l; t++) shift[t] += (transposed ? R->m[r] : 1.0) * M[(size_t)r * (size_t)l + (size_t)t];
  }
  op_job job = {R, T, l, M, R->m ? shift : NULL, out};
  int64_t outs = transposed ? R->d : R->n;
  return nle__for_blocks(ctx, "sparse kNN projection", (size_t)((outs + OP_BLOCK - 1) / OP_BLOCK),
                         nle__threads_for(ctx, (double)R->rowptr[R->n] * l), 0,
                         transposed ? columns_times_block : rows_times_block, &job);
}

/* G = M^T M (l x l, double) for M of `rows` x l: partial sums over fixed
 * blocks of rows (one DGEMM each), added in block order. */
enum { GRAM_BLOCK = 2048 };

typedef struct {
  const float *M;
  int64_t rows;
  int l;
  double *part; /* per block: l x l */
} gram_job;

static int gram_block(void *job, size_t b, void *scratch) {
  const gram_job *j = job;
  double *M = scratch;
  size_t l = (size_t)j->l;
  int64_t r0 = (int64_t)b * GRAM_BLOCK, rows = j->rows - r0 < GRAM_BLOCK ? j->rows - r0 : GRAM_BLOCK;
  for (size_t t = 0; t < (size_t)rows * l; t++) M[t] = j->M[(size_t)r0 * l + t];
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j->l, j->l, (int)rows, 1.0, M, j->l, M, j->l, 0.0,
              j->part + b * l * l, j->l);
  return 0;
}

static nle_status gram(nle_ctx *ctx, const float *M, int64_t rows, int l, double *G) {
  size_t nb = (size_t)((rows + GRAM_BLOCK - 1) / GRAM_BLOCK), ll = (size_t)l * (size_t)l;
  double *part = nle__malloc(ctx, (nb ? nb : 1) * ll * sizeof *part, "the projection's Gram matrix");
  if (!part) return NLE_ERR_NOMEM;
  gram_job job = {M, rows, l, part};
  nle_status s = nle__for_blocks(ctx, "sparse kNN projection", nb, nle__threads_for(ctx, (double)rows * l * l),
                                 (size_t)GRAM_BLOCK * (size_t)l * sizeof(double), gram_block, &job);
  memset(G, 0, ll * sizeof *G);
  for (size_t b = 0; !s && b < nb; b++)
    for (size_t t = 0; t < ll; t++) G[t] += part[b * ll + t];
  free(part);
  return s;
}

/* P = Y W (N x l) for the l x l matrix W, a DGEMM per block of rows. */
typedef struct {
  const float *Y;
  const double *W;
  int l;
  int64_t n;
  float *P;
} coord_job;

static int coord_block(void *job, size_t b, void *scratch) {
  const coord_job *j = job;
  size_t l = (size_t)j->l;
  double *in = scratch, *out = in + (size_t)OP_BLOCK * l;
  int64_t r0 = (int64_t)b * OP_BLOCK, rows = j->n - r0 < OP_BLOCK ? j->n - r0 : OP_BLOCK;
  for (size_t t = 0; t < (size_t)rows * l; t++) in[t] = j->Y[(size_t)r0 * l + t];
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, j->l, j->l, 1.0, in, j->l, j->W, j->l, 0.0, out,
              j->l);
  for (size_t t = 0; t < (size_t)rows * l; t++) j->P[(size_t)r0 * l + t] = (float)out[t];
  return 0;
}

/* The rows' coordinates in their leading right singular subspace (latent
 * semantic analysis, for text), by the randomised range finder of Halko,
 * Martinsson and Tropp (2011, alg. 4.3-4.4, 5.1): Y = A Omega with Gaussian
 * Omega (D x l, a stream per column from the context's seed), `power`
 * products Y = A A^T Y (power 0: the plain random projection), then with
 * Y^T Y = R^T R (Cholesky; Q = Y R^-1 is an orthonormal basis of Y) and
 * B = Q^T A = U S V^T: the coordinates A V = Q U S = Y R^-1 U S, found from
 * the l x l matrices B B^T and R without an N x l or D x l factorisation.
 * Distances among the coordinates are those of the rows' projections on
 * the subspace. Rows of at most l columns are made dense instead. */
static nle_status project_rows(nle_ctx *ctx, const sp_rows *R, nle_matf **P) {
  int64_t n = R->n, d = R->d;
  int l = PROJ_DIMS, power = PROJ_POWER;
  if (l > PROJ_MAX_DIMS) l = PROJ_MAX_DIMS;
  if (d <= l) {
    nle_status s = nle_matf_alloc(ctx, (size_t)n, (size_t)d, P);
    for (int64_t i = 0; !s && i < n; i++) {
      float *y = (*P)->data + (size_t)i * (size_t)d;
      double mi = R->m ? R->m[i] : 0.0;
      for (int64_t c = 0; c < d; c++) y[c] = (float)-mi;
      for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) y[R->colind[p]] = (float)(R->w[p] - mi);
    }
    return s;
  }
  size_t ll = (size_t)l * (size_t)l;
  int threads = nle_ctx_threads(ctx);
  /* the transpose, Omega, Z, Y, P, the Gram blocks, the small matrices */
  double need = (double)R->rowptr[n] * 12 + (double)(d + 1) * 8 + ((double)d * 2 + (double)n * 2) * l * 4 +
                ((double)n / GRAM_BLOCK + 6) * (double)ll * 8 + (double)threads * GRAM_BLOCK * l * 8;
  nle_status s = nle__check_memory(ctx, need, "the sparse rows' projection");
  if (s) return s;
  sp_transpose T = {0};
  float *Om = nle__malloc(ctx, (size_t)d * (size_t)l * sizeof(float), "the projection");
  float *Z = nle__malloc(ctx, (size_t)d * (size_t)l * sizeof(float), "the projection");
  float *Y = nle__malloc(ctx, (size_t)n * (size_t)l * sizeof(float), "the projection");
  double *small = nle__malloc(ctx, (5 * ll + 2 * (size_t)l) * sizeof(double), "the projection");
  if (!Om || !Z || !Y || !small) s = NLE_ERR_NOMEM;
  if (!s) s = sp_transpose_build(ctx, R, &T);
  double *G = small, *Rf = small + ll, *C = small + 2 * ll, *W = small + 3 * ll, *tmp = small + 4 * ll;
  double *lam = small + 5 * ll, *shift = lam + l;
  if (!s) {
    uint64_t seed = nle_ctx_seed(ctx);
    for (int64_t c = 0; c < d; c++) {
      nle_rng rng;
      nle_rng_init(&rng, seed, 0x7370726f6a000000ULL + (uint64_t)c);
      for (int t = 0; t < l; t++) Om[(size_t)c * (size_t)l + (size_t)t] = (float)nle_rng_normal(&rng);
    }
    s = apply_rows(ctx, R, &T, l, Om, false, Y, shift);
  }
  for (int q = 0; !s && q < power; q++) {
    s = apply_rows(ctx, R, &T, l, Y, true, Z, shift);
    if (!s) s = apply_rows(ctx, R, &T, l, Z, false, Y, shift);
  }
  if (!s) s = gram(ctx, Y, n, l, G);
  /* Cholesky G = Rf^T Rf (upper Rf), with a ridge at the rounding level so
   * that a rank-deficient Y (duplicate rows, N < l) still factors */
  if (!s) {
    double top = 0.0;
    for (int t = 0; t < l; t++) top = fmax(top, G[(size_t)t * l + t]);
    double ridge = 1e-10 * top + DBL_MIN;
    memset(Rf, 0, ll * sizeof *Rf);
    for (int a = 0; a < l; a++) {
      double diag = G[(size_t)a * l + a] + ridge;
      for (int t = 0; t < a; t++) diag -= Rf[(size_t)t * l + a] * Rf[(size_t)t * l + a];
      Rf[(size_t)a * l + a] = sqrt(diag > ridge ? diag : ridge); /* a direction Y lacks */
      for (int b = a + 1; b < l; b++) {
        double v = G[(size_t)a * l + b];
        for (int t = 0; t < a; t++) v -= Rf[(size_t)t * l + a] * Rf[(size_t)t * l + b];
        Rf[(size_t)a * l + b] = v / Rf[(size_t)a * l + a];
      }
    }
  }
  /* Z = A^T Y, then Bt = A^T Q = Z Rf^-1 (row by row, forward substitution) */
  if (!s) s = apply_rows(ctx, R, &T, l, Y, true, Z, shift);
  if (!s) {
    for (int64_t c = 0; c < d; c++) {
      float *z = Z + (size_t)c * (size_t)l;
      for (int b = 0; b < l; b++) {
        double v = z[b];
        for (int t = 0; t < b; t++) v -= (double)z[t] * Rf[(size_t)t * l + b];
        z[b] = (float)(v / Rf[(size_t)b * l + b]);
      }
    }
    s = gram(ctx, Z, d, l, C); /* B B^T */
  }
  if (!s) {
    int prev = nle__blas_set_threads(1); /* an l x l problem: one thread, the same bits */
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', l, C, l, lam);
    nle__blas_set_threads(prev);
    if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "sparse kNN projection: eigensolver failed (%d)", (int)info);
  }
  if (!s) {
    /* W = Rf^-1 U Lambda^1/2 (back substitution on each column of U) */
    for (int col = 0; col < l; col++) {
      double sc = sqrt(fmax(lam[col], 0.0));
      for (int a = l - 1; a >= 0; a--) {
        double v = C[(size_t)a * l + col];
        for (int t = a + 1; t < l; t++) v -= Rf[(size_t)a * l + t] * tmp[(size_t)t * l + col];
        tmp[(size_t)a * l + col] = v / Rf[(size_t)a * l + a];
      }
      for (int a = 0; a < l; a++) W[(size_t)a * l + col] = tmp[(size_t)a * l + col] * sc;
    }
    s = nle_matf_alloc(ctx, (size_t)n, (size_t)l, P);
  }
  if (!s) {
    coord_job job = {Y, W, l, n, (*P)->data};
    s = nle__for_blocks(ctx, "sparse kNN projection", (size_t)((n + OP_BLOCK - 1) / OP_BLOCK),
                        nle__threads_for(ctx, (double)n * l * l), 2 * (size_t)OP_BLOCK * (size_t)l * sizeof(double),
                        coord_block, &job);
  }
  sp_transpose_free(&T);
  free(Om);
  free(Z);
  free(Y);
  free(small);
  if (s) nle_matf_free(P);
  return s;
}

/* The re-ranking of the projected search's candidates, and the local joins
 * (NN-descent, Dong, Charikar and Li 2011, in its "pull" form): row i's new
 * candidates are its neighbours' neighbours and their reverse neighbours
 * (rows that list them), reached through at least one link that is new
 * since the previous pass (a pair reached only through old links was
 * considered then). Each row reads the previous graph only and writes its
 * own list, so a pass is the same at any thread count; a row's list never
 * gets worse, as its members keep their distances. */
typedef struct {
  const sp_rows *R;
  const nle_csr *cand;     /* the projected search's candidates (re-ranking) */
  const nle_csr *prev;     /* the current graph (joins), else NULL */
  const uint8_t *fresh;    /* per entry of prev: new in the last pass */
  const int64_t *rptr;     /* reverse lists of prev: rows listing v are */
  const int32_t *rrow;     /* rrow[rptr[v] ..], by index, with their entry's */
  const uint8_t *rfresh;   /* flag */
  const int32_t *hubs;     /* re-ranking: rows offered to every row, or NULL */
  int n_hubs;
  int k, width;            /* kept; most candidates of a row */
  nle_csr *out;
  uint8_t *out_fresh;      /* per entry of out: not in prev's row */
  int64_t *changed;        /* per block: the count of out_fresh */
} rerank_job;

static int cmp_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Reverse neighbours taken per row: enough to reach the rows that list it
 * (hubs are listed by many), few enough to bound a row's work. */
enum { REVERSE_TAKEN = 16 };

static int rerank_block(void *job, size_t b, void *scratch) {
  const rerank_job *j = job;
  const sp_rows *R = j->R;
  int k = j->k;
  double *x = scratch; /* row i scattered over the D columns (zeros elsewhere) */
  int32_t *ids = (int32_t *)(x + R->d);
  sp_cand *h = (sp_cand *)(ids + j->width);
  int64_t i0 = (int64_t)b * RERANK_BLOCK, i1 = i0 + RERANK_BLOCK < R->n ? i0 + RERANK_BLOCK : R->n, changed = 0;
  float *val = j->out->val;
  memset(x, 0, (size_t)R->d * sizeof *x);
  for (int64_t i = i0; i < i1; i++) {
    int len = 0;
    heap_reset(h, k);
    if (!j->prev) {
      for (int64_t q = j->cand->rowptr[i]; q < j->cand->rowptr[i + 1]; q++) ids[len++] = j->cand->colind[q];
      for (int t = 0; t < j->n_hubs; t++) ids[len++] = j->hubs[t];
      qsort(ids, (size_t)len, sizeof *ids, cmp_int32);
      int u = 0;
      for (int t = 0; t < len; t++)
        if (ids[t] != i && (t == 0 || ids[t] != ids[t - 1])) ids[u++] = ids[t];
      len = u;
    } else {
      const nle_csr *G = j->prev;
      int rtake = REVERSE_TAKEN;
      for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1]; q++) {
        int32_t u = G->colind[q];
        bool link = j->fresh[q];
        /* the members keep their distances */
        heap_offer(h, k, (sp_cand){((const float *)G->val)[q], u});
        for (int64_t t = G->rowptr[u]; t < G->rowptr[u + 1]; t++)
          if (link || j->fresh[t]) ids[len++] = G->colind[t];
        for (int64_t t = j->rptr[u]; t < j->rptr[u + 1] && t - j->rptr[u] < rtake; t++)
          if (link || j->rfresh[t]) ids[len++] = j->rrow[t];
      }
      for (int64_t t = j->rptr[i]; t < j->rptr[i + 1] && t - j->rptr[i] < rtake; t++)
        if (j->rfresh[t]) ids[len++] = j->rrow[t];
      /* without repeats, without i and its members */
      qsort(ids, (size_t)len, sizeof *ids, cmp_int32);
      int u = 0;
      for (int t = 0; t < len; t++) {
        if (ids[t] == i || (t > 0 && ids[t] == ids[t - 1])) continue; /* (ids[t - 1] is intact: u <= t) */
        bool member = false;
        for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1] && !member; q++) member = G->colind[q] == ids[t];
        if (!member) ids[u++] = ids[t];
      }
      len = u;
    }
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) x[R->colind[p]] = R->w[p];
    for (int t = 0; t < len; t++) {
      int64_t r = ids[t];
      if (r == i) continue;
      /* row i's dot product with r: the shared columns' products in
       * increasing column order, the others adding zeros (which leave the
       * sum's bits as they are): the exact search's value */
      double dot = 0.0;
      for (int64_t q = R->rowptr[r]; q < R->rowptr[r + 1]; q++) dot += x[R->colind[q]] * R->w[q];
      heap_offer(h, k, (sp_cand){(float)pair_value(R, i, R, r, dot), (int32_t)r});
    }
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) x[R->colind[p]] = 0.0;
    qsort(h, (size_t)k, sizeof *h, sp_cand_cmp);
    size_t out = (size_t)i * (size_t)k;
    for (int c = 0; c < k; c++) {
      bool was = false;
      for (int e = 0; j->prev && e < k && !was; e++) was = j->prev->colind[out + (size_t)e] == h[c].i;
      j->out_fresh[out + (size_t)c] = !was;
      changed += !was;
      j->out->colind[out + (size_t)c] = h[c].i;
      val[out + (size_t)c] = h[c].d;
    }
  }
  j->changed[b] = changed;
  return 0;
}

static size_t rerank_scratch(const sp_rows *R, int width, int k) {
  return (size_t)R->d * sizeof(double) + (size_t)width * sizeof(int32_t) + (size_t)k * sizeof(sp_cand);
}

/* Reverse lists of the graph G (rows listing each row, by index) with the
 * flags of their entries. */
static nle_status reverse_lists(nle_ctx *ctx, const nle_csr *G, const uint8_t *fresh, int64_t *rptr, int32_t *rrow,
                                uint8_t *rfresh) {
  int64_t n = G->rows;
  int64_t *next = nle__malloc(ctx, (size_t)n * sizeof *next + 1, "the reverse lists");
  if (!next) return NLE_ERR_NOMEM;
  memset(rptr, 0, ((size_t)n + 1) * sizeof *rptr);
  for (int64_t q = 0; q < G->nnz; q++) rptr[G->colind[q] + 1]++;
  for (int64_t v = 0; v < n; v++) rptr[v + 1] += rptr[v];
  memcpy(next, rptr, (size_t)n * sizeof *next);
  for (int64_t w = 0; w < n; w++)
    for (int64_t q = G->rowptr[w]; q < G->rowptr[w + 1]; q++) {
      int64_t at = next[G->colind[q]]++;
      rrow[at] = (int32_t)w;
      rfresh[at] = fresh[q];
    }
  free(next);
  return NLE_OK;
}

static nle_status sparse_approx(nle_ctx *ctx, const sp_rows *R, int k, const nle_knn_approx_opts *approx,
                                nle_csr **graph) {
  int64_t n = R->n;
  nle_knn_approx_opts o;
  if (approx) o = *approx;
  else nle_knn_approx_opts_init(&o);
  /* 2k candidates from the projection (at least k + 10), re-ranked */
  int64_t want = 2 * (int64_t)k > k + 10 ? 2 * (int64_t)k : k + 10;
  o.k = (int)(want < n - 1 ? want : n - 1);
  if (o.k > 1024) o.k = k > 1024 ? k : 1024;
  if (o.n_trees == NLE_AUTO) o.n_trees = PROJ_TREES;
  if (o.max_iters == NLE_AUTO) o.max_iters = PROJ_ITERS;
  int rtake = REVERSE_TAKEN;
  int width = k * (1 + k + rtake) + rtake;
  width = width > o.k + k ? width : o.k + k;
  size_t nblocks = (size_t)((n + RERANK_BLOCK - 1) / RERANK_BLOCK);
  int threads = nle__threads_for(ctx, (double)n * width * 64);
  nle_status s = nle__check_memory(ctx, (double)n * k * (3 * 8.0 + 2) + (double)threads * rerank_scratch(R, width, k),
                                   "sparse approximate kNN");
  if (s) return s;
  nle_matf *P = NULL;
  nle_csr *cand = NULL, *cur = NULL, *next = NULL;
  double t0 = nle_time_seconds();
  s = project_rows(ctx, R, &P);
  double t1 = nle_time_seconds();
  if (!s) s = nle_knn_approx(ctx, P, &o, &cand);
  nle_matf_free(&P);
  double t2 = nle_time_seconds();
  int64_t *changed = nle__calloc(ctx, nblocks, sizeof(int64_t), "the joins");
  uint8_t *fresh = nle__malloc(ctx, (size_t)(n * k), "the joins");
  uint8_t *fresh_next = nle__malloc(ctx, (size_t)(n * k), "the joins");
  uint8_t *rfresh = nle__malloc(ctx, (size_t)(n * k), "the joins");
  int64_t *rptr = nle__malloc(ctx, ((size_t)n + 1) * sizeof(int64_t), "the joins");
  int32_t *rrow = nle__malloc(ctx, (size_t)(n * k) * sizeof(int32_t), "the joins");
  if (!s && (!changed || !fresh || !fresh_next || !rfresh || !rptr || !rrow)) s = NLE_ERR_NOMEM;
  if (!s) s = nle_csr_alloc(ctx, n, n, n * (int64_t)k, NLE_F32, &cur);
  if (!s) {
    for (int64_t i = 0; i <= n; i++) cur->rowptr[i] = i * (int64_t)k;
    /* Euclidean: the rows nearest the origin are near many rows (hubs: on
     * tf-idf rows, the shortest documents are among the 10 nearest of most
     * rows), which the local joins reach badly through truncated reverse
     * lists; they are offered to every row. */
    int32_t *hubs = R->metric == NLE_METRIC_EUCLIDEAN ? walk_order(ctx, R, R->a) : NULL;
    if (R->metric == NLE_METRIC_EUCLIDEAN && !hubs) s = NLE_ERR_NOMEM;
    rerank_job job = {R, cand, NULL, NULL, NULL, NULL, NULL, hubs, hubs ? (int)(k < n ? k : n) : 0, k, o.k + k, cur,
                      fresh, changed};
    if (!s)
      s = nle__for_blocks(ctx, "sparse kNN re-ranking", nblocks, threads, rerank_scratch(R, o.k + k, k), rerank_block,
                          &job);
    free(hubs);
  }
  nle_csr_free(&cand);
  nle__log(ctx, 2, "sparse kNN: projection %.2f s, search among projections %.2f s, re-ranking %.2f s", t1 - t0,
           t2 - t1, nle_time_seconds() - t2);
  for (int pass = 0; !s && pass < MAX_JOINS; pass++) {
    s = reverse_lists(ctx, cur, fresh, rptr, rrow, rfresh);
    if (!s) s = nle_csr_alloc(ctx, n, n, n * (int64_t)k, NLE_F32, &next);
    if (s) break;
    for (int64_t i = 0; i <= n; i++) next->rowptr[i] = i * (int64_t)k;
    rerank_job job = {R, NULL, cur, fresh, rptr, rrow, rfresh, NULL, 0, k, width, next, fresh_next, changed};
    s = nle__for_blocks(ctx, "sparse kNN joins", nblocks, threads, rerank_scratch(R, width, k), rerank_block, &job);
    if (s) break;
    int64_t total = 0;
    for (size_t b = 0; b < nblocks; b++) total += changed[b];
    nle__log(ctx, 2, "sparse kNN: join %d brought %lld of %lld entries (%.2f s)", pass + 1, (long long)total,
             (long long)(n * k), nle_time_seconds() - t2);
    nle_csr_free(&cur);
    cur = next;
    next = NULL;
    uint8_t *t = fresh;
    fresh = fresh_next;
    fresh_next = t;
    if ((double)total <= o.delta * (double)n * k) break;
  }
  free(changed);
  free(fresh);
  free(fresh_next);
  free(rfresh);
  free(rptr);
  free(rrow);
  nle_csr_free(&next);
  if (s) nle_csr_free(&cur);
  *graph = cur;
  return s;
}

/* ---- the choice and the front doors ------------------------------------- */

/* Whether the exact search is expected to be faster. Its cost is its
 * multiply-adds W (the sum over columns of their squared counts: a column in
 * most rows costs N^2) plus a scan of the N^2 pairs; the approximate
 * search's grows as N nnz_avg (projection, re-ranking and joins), a little
 * faster than linearly in N (the joins' passes) and with k. Seconds on this
 * project's 2-core machine, fitted to bench/knn_cosine.sh (tf-idf documents,
 * k = 10: about even at 20,000 x 20,000, exact 3.2 times slower at 100,000 x
 * 50,000); only their ratio matters. */
static nle_status sparse_exact_is_faster(nle_ctx *ctx, const sp_rows *R, int k, bool *faster) {
  double n = (double)R->n, nnz_avg = (double)R->rowptr[R->n] / (n > 0 ? n : 1.0), work = 0.0;
  nle_status s = exact_work(ctx, R, R, &work);
  double exact = 6.5e-10 * work + 5e-10 * n * n;
  double approx = 1e-6 * n * (nnz_avg + 4.0) * pow(n / 2e4, 0.4) * (0.5 + k / 20.0);
  *faster = exact < approx;
  return s;
}

static nle_status check_k(nle_ctx *ctx, int64_t n, int k) {
  if (n < 2) return nle__fail(ctx, NLE_ERR_ARG, "kNN needs at least 2 points, got %lld", (long long)n);
  if (k < 1 || k >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and below the number of points N = %lld", k,
                     (long long)n);
  return NLE_OK;
}

nle_status nle_knn_sparse(nle_ctx *ctx, const nle_csr *X, int k, nle_metric metric, nle_knn_method method,
                          const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used) {
  *graph = NULL;
  nle_status s = nle__metric_check(ctx, metric, "sparse kNN");
  if (s) return s;
  if (method != NLE_KNN_AUTO && method != NLE_KNN_EXACT && method != NLE_KNN_APPROX)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN graph: method %d is not auto, exact or approx", (int)method);
  if (!X) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN: X is NULL");
  s = check_k(ctx, X->rows, k);
  if (s) return s;
  if (method == NLE_KNN_APPROX && k > 1024)
    return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN supports k <= 1024, not {@neighbors=%d} (the exact search takes any k)", k);
  sp_rows R;
  s = sp_rows_prepare(ctx, X, metric, "the data", &R);
  if (s) return s;
  if (method == NLE_KNN_AUTO) {
    bool faster = true;
    if (k <= 1024) s = sparse_exact_is_faster(ctx, &R, k, &faster);
    method = faster ? NLE_KNN_EXACT : NLE_KNN_APPROX;
  }
  if (used) *used = method;
  if (!s)
    s = method == NLE_KNN_EXACT ? sparse_exact(ctx, &R, &R, 1, k, graph) : sparse_approx(ctx, &R, k, approx, graph);
  sp_rows_free(&R);
  return s;
}

nle_status nle_knn_sparse_query(nle_ctx *ctx, const nle_csr *X, const nle_csr *Q, int k, nle_metric metric,
                                nle_csr **graph) {
  *graph = NULL;
  nle_status s = nle__metric_check(ctx, metric, "sparse kNN query");
  if (s) return s;
  if (!X || !Q) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN query: X or Q is NULL");
  if (Q->cols != X->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN query: %lld columns for reference rows of %lld", (long long)Q->cols,
                     (long long)X->cols);
  if (k < 1 || k > X->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and at most the N = %lld reference points", k,
                     (long long)X->rows);
  sp_rows R, Qr;
  s = sp_rows_prepare(ctx, X, metric, "the data", &R);
  if (s) return s;
  s = sp_rows_prepare(ctx, Q, metric, "the queries", &Qr);
  if (!s && metric == NLE_METRIC_CORRELATION) Qr.dm = R.dm;
  if (!s) s = Q->rows ? sparse_exact(ctx, &R, &Qr, 0, k, graph) : nle_csr_alloc(ctx, 0, X->rows, 0, NLE_F32, graph);
  sp_rows_free(&Qr);
  sp_rows_free(&R);
  return s;
}
