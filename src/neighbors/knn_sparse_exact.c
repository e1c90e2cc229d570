/* knn_sparse_exact.c — the exact search of sparse rows (knn_sparse.c has
 * the metric's expansion and its accuracy).
 *
 * Exact search: the rows' transpose (column lists) once; each query row
 * accumulates its dot products into a dense per-thread array over the
 * columns' lists. A row that touches many rows is then scanned whole; one
 * that touches few offers those, then walks the untouched rows (whose dot
 * product is 0) in the order of their distance's constant part (Euclidean:
 * |w_r|^2; correlation: m_r; cosine: all at 2, by index) and stops once the
 * next cannot enter the heap. Rows are cut into fixed blocks, each row
 * computed by one thread: the same bits for any thread count. */
#include "knn_sparse.h"

#include <string.h>

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

/* Multiply-adds of the exact search: sum over query rows of the lengths of
 * their columns' lists (per column: its count in Q times its count in R). */
nle_status nle__sp_exact_work(nle_ctx *ctx, const sp_rows *Q, const sp_rows *R, double *work) {
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

nle_status nle__sp_exact(nle_ctx *ctx, const sp_rows *R, const sp_rows *Q, int self, int k, nle_csr **graph) {
  int64_t n = R->n, m = Q->n, nnz = R->rowptr[n];
  double work = 0.0;
  nle_status s = nle__sp_exact_work(ctx, Q, R, &work);
  if (s) return s;
  int threads = nle__threads_for(ctx, work + (double)m * 64);
  double need = (double)nnz * 12 + (double)R->d * 8 + (double)n * 4 + (double)m * k * 8 +
                (double)threads * (double)exact_scratch(n, Q->nnz_max, k) + (double)n * 16;
  s = nle__check_memory(ctx, need, "sparse exact kNN");
  if (s) return s;
  sp_transpose T = {0};
  int32_t *walk = NULL;
  s = nle__sp_transpose_build(ctx, R, &T);
  if (!s && R->metric != NLE_METRIC_COSINE) {
    walk = nle__sp_walk_order(ctx, R, R->metric == NLE_METRIC_CORRELATION ? R->m : R->a);
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
  nle__sp_transpose_free(&T);
  free(walk);
  return s;
}
