/* knn_ring.c — the kNN searches on rows shared out over ranks (issue 38,
 * docs/mpi.md). Each rank holds its canonical row block of Y (comm.h) and
 * keeps its own rows' neighbour lists; the reference rows travel a ring
 * in pieces of at most nle__ring_piece_bytes, so no rank holds more than its own
 * rows and two pieces in flight. The lists are the same bits as the search alone:
 * every distance is computed by the same formula from the same two rows,
 * and each row keeps the k least (distance, global index) pairs, a total
 * order, whatever the blocks' order of arrival.
 *
 * The approximate search over ranks is knn_approx_dist.c. */
#include "neighbors_internal.h"
#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  float d;
  int32_t i; /* global index */
} ring_cand;

static inline int ring_greater(ring_cand a, ring_cand b) { return a.d > b.d || (a.d == b.d && a.i > b.i); }
NLE__DEFINE_SORT(ring_sort, ring_cand, ring_greater)

/* What a ring walk does with each piece that passes: rows [begin, begin +
 * piece->rows) of the N, piece `piece` of rank `from`'s block. */
typedef nle_status (*ring_visit)(nle_ctx *ctx, void *user, const nle_matf *piece, size_t begin, int from, size_t index,
                                 bool own);

/* Bytes of rows one piece of the ring carries (a variable: the tests cut
 * small blocks into several pieces): a rank holds its own rows
 * and two pieces in flight, not two blocks (at 1,000,000 x 784 floats on 4
 * ranks a block is 784 MB, and three of them broke issue 38's memory per
 * rank). */
size_t nle__ring_piece_bytes = (size_t)32 << 20;

/* How ring_walk cuts every block: pieces of *piece_rows rows, at most
 * *pieces a block. The same on every rank (a function of N, the ranks and d
 * alone), so every rank cuts every block alike. */
static void ring_cut(const nle__rows *rows, int ranks, size_t d, size_t *piece_rows, size_t *pieces) {
  size_t cap = 0;
  for (int r = 0; r < ranks; r++) {
    nle__row_range rr = nle__rank_rows(rows->n, ranks, r);
    cap = rr.end - rr.begin > cap ? rr.end - rr.begin : cap;
  }
  size_t fit = nle__ring_piece_bytes / (d ? d * sizeof(float) : 1);
  fit = fit ? fit : 1;
  *piece_rows = cap < fit ? (cap ? cap : 1) : fit;
  *pieces = (cap + *piece_rows - 1) / *piece_rows;
}

/* Shows every rank's block of Y to visit, piece by piece: piece p of every
 * block goes once round the ring (this rank's own first) before piece p +
 * 1, each rank passing the piece it holds to the next rank and taking the
 * previous rank's. */
static nle_status ring_walk(nle_ctx *ctx, const nle_matf *Y, const nle__rows *rows, ring_visit visit, void *user) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  size_t d = Y->cols, piece_rows, pieces;
  ring_cut(rows, ranks, d, &piece_rows, &pieces);
  float *buf[2] = {NULL, NULL};
  nle_status s = NLE_OK;
  if (ranks > 1) {
    buf[0] = nle__malloc(ctx, piece_rows * d * sizeof(float), "a piece of the ring");
    buf[1] = nle__malloc(ctx, piece_rows * d * sizeof(float), "a piece of the ring");
    if (!buf[0] || !buf[1]) s = NLE_ERR_NOMEM;
  }
  s = nle__comm_agree(ctx, s);
  for (size_t p = 0; !s && p < pieces; p++) {
    size_t first = p * piece_rows;
    nle_matf piece = {0, d, Y->data + (first < Y->rows ? first : Y->rows) * d};
    piece.rows = first < Y->rows ? (Y->rows - first < piece_rows ? Y->rows - first : piece_rows) : 0;
    for (int step = 0; !s && step < ranks; step++) {
      int from = (me - step + ranks) % ranks;
      nle__row_range rr = nle__rank_rows(rows->n, ranks, from);
      if (piece.rows > 0 && Y->rows > 0) s = visit(ctx, user, &piece, rr.begin + first, from, p, step == 0);
      s = nle__comm_agree(ctx, s);
      if (s || step + 1 == ranks) break;
      float *into = buf[step % 2];
      size_t got = 0;
      s = nle__comm_shift(ctx, piece.data, piece.rows * d * sizeof(float), (me + 1) % ranks, into,
                          piece_rows * d * sizeof(float), &got, (me - 1 + ranks) % ranks);
      piece.data = into;
      piece.rows = got / (d ? d * sizeof(float) : 1);
    }
  }
  free(buf[0]);
  free(buf[1]);
  return s;
}

/* --- the exact search ----------------------------------------------------- */

typedef struct {
  const nle_matf *Y; /* this rank's rows, the queries */
  size_t begin;      /* the global index of its first */
  int k;
  ring_cand *best;   /* per row: the k best so far, sorted */
  ring_cand *merged; /* 2k scratch */
} exact_ring;

/* The block's nearest to this rank's rows, merged into their lists; the
 * own block's search counts the query itself, left out here.
 * nle_knn_query is a local search (queries against the rows it is given)
 * whatever the context's communicator: the ring relies on that. */
static nle_status exact_visit(nle_ctx *ctx, void *user, const nle_matf *block, size_t begin, int from, size_t index,
                              bool own) {
  (void)from, (void)index;
  exact_ring *e = user;
  nle_matf queries = *e->Y; /* another header: the search then keeps a query's own row */
  int kk = e->k + (own ? 1 : 0);
  if ((size_t)kk > block->rows) kk = (int)block->rows;
  nle_csr *g = NULL;
  nle_status s = nle_knn_query(ctx, block, &queries, kk, &g);
  for (size_t r = 0; !s && r < e->Y->rows; r++) {
    ring_cand *best = e->best + r * (size_t)e->k;
    const float *val = g->val;
    int a = 0, b = (int)g->rowptr[r], b1 = (int)g->rowptr[r + 1], out = 0;
    while (out < e->k) {
      ring_cand x = b < b1 ? (ring_cand){val[b], (int32_t)(begin + (size_t)g->colind[b])}
                           : (ring_cand){INFINITY, INT32_MAX};
      if (b < b1 && (size_t)x.i == e->begin + r) { /* the query itself */
        b++;
        continue;
      }
      if (a < e->k && !ring_greater(best[a], x)) e->merged[out++] = best[a++];
      else if (b < b1) e->merged[out++] = x, b++;
      else e->merged[out++] = best[a++];
    }
    memcpy(best, e->merged, (size_t)e->k * sizeof *best);
  }
  nle_csr_free(&g);
  return s;
}

static nle_status graph_from_lists(nle_ctx *ctx, size_t rows, size_t n, int k, const ring_cand *best,
                                   nle_csr **graph) {
  nle_status s = nle_csr_alloc(ctx, (int64_t)rows, (int64_t)n, (int64_t)rows * k, NLE_F32, graph);
  for (size_t i = 0; !s && i <= rows; i++) (*graph)->rowptr[i] = (int64_t)i * k;
  for (size_t q = 0; !s && q < rows * (size_t)k; q++) {
    (*graph)->colind[q] = best[q].i;
    ((float *)(*graph)->val)[q] = best[q].d;
  }
  return s;
}

nle_status nle__knn_exact_ring(nle_ctx *ctx, const nle_matf *Y, const nle__rows *rows, int k, nle_csr **graph) {
  *graph = NULL;
  size_t m = Y->rows;
  exact_ring e = {Y, rows->mine.begin, k, nle__malloc(ctx, (m ? m : 1) * (size_t)k * sizeof(ring_cand), "the lists"),
                  nle__malloc(ctx, 2 * (size_t)k * sizeof(ring_cand), "the lists")};
  nle_status s = e.best && e.merged ? NLE_OK : NLE_ERR_NOMEM;
  for (size_t q = 0; !s && q < m * (size_t)k; q++) e.best[q] = (ring_cand){INFINITY, INT32_MAX};
  s = nle__comm_agree(ctx, s);
  if (!s) s = ring_walk(ctx, Y, rows, exact_visit, &e);
  if (!s) s = graph_from_lists(ctx, m, rows->n, k, e.best, graph);
  free(e.best);
  free(e.merged);
  return nle__comm_agree(ctx, s);
}

/* --- the re-ranking --------------------------------------------------------- */

typedef struct {
  const nle_matf *Y;
  const nle_csr *cand;
  ring_cand *dist;  /* per candidate entry: its distance in Y */
  size_t pieces;    /* as ring_walk cuts the blocks */
  int64_t *start;   /* per (rank, piece): its entries' range in `entry` */
  int64_t *entry;   /* the candidate entries, bucketed by the piece holding their row */
  int32_t *query;   /* each bucketed entry's query row (this rank's) */
} rerank_ring;

/* Buckets the candidate entries by the piece of the ring that brings
 * their rows, so each piece visits only its own entries (a pass over all
 * of them per piece cost pieces x nnz). */
static nle_status bucket_candidates(nle_ctx *ctx, const nle__rows *rows, rerank_ring *e) {
  int ranks = nle__ranks(ctx);
  size_t piece_rows, nnz = (size_t)e->cand->nnz;
  ring_cut(rows, ranks, e->Y->cols, &piece_rows, &e->pieces);
  size_t buckets = (size_t)ranks * e->pieces;
  size_t *begin = nle__malloc(ctx, ((size_t)ranks + 1) * sizeof(size_t), "the candidates' pieces");
  int64_t *piece_of = nle__malloc(ctx, (nnz ? nnz : 1) * sizeof(int64_t), "the candidates' pieces");
  e->start = nle__calloc(ctx, buckets + 1, sizeof(int64_t), "the candidates' pieces");
  e->entry = nle__malloc(ctx, (nnz ? nnz : 1) * sizeof(int64_t), "the candidates' pieces");
  e->query = nle__malloc(ctx, (nnz ? nnz : 1) * sizeof(int32_t), "the candidates' pieces");
  nle_status s = begin && piece_of && e->start && e->entry && e->query ? NLE_OK : NLE_ERR_NOMEM;
  for (int r = 0; !s && r <= ranks; r++) begin[r] = r < ranks ? nle__rank_rows(rows->n, ranks, r).begin : rows->n;
  for (size_t q = 0; !s && q < nnz; q++) {
    size_t j = (size_t)e->cand->colind[q];
    int lo = 0, hi = ranks; /* the rank holding row j: begin[lo] <= j < begin[lo + 1] */
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      if (begin[mid] <= j) lo = mid;
      else hi = mid;
    }
    piece_of[q] = (int64_t)((size_t)lo * e->pieces + (j - begin[lo]) / piece_rows);
    e->start[piece_of[q] + 1]++;
  }
  for (size_t b = 0; !s && b < buckets; b++) e->start[b + 1] += e->start[b];
  for (size_t r = 0; !s && r < e->Y->rows; r++)
    for (int64_t q = e->cand->rowptr[r]; q < e->cand->rowptr[r + 1]; q++) {
      int64_t at = e->start[piece_of[q]]++;
      e->entry[at] = q;
      e->query[at] = (int32_t)r;
    }
  for (size_t b = buckets; !s && b > 0; b--) e->start[b] = e->start[b - 1]; /* the cursors back to the starts */
  if (!s) e->start[0] = 0;
  free(begin);
  free(piece_of);
  return s;
}

static nle_status rerank_visit(nle_ctx *ctx, void *user, const nle_matf *piece, size_t begin, int from, size_t index,
                               bool own) {
  (void)own;
  rerank_ring *e = user;
  size_t d = e->Y->cols, b = (size_t)from * e->pieces + index;
  int64_t q0 = e->start[b], q1 = e->start[b + 1];
#pragma omp parallel for schedule(static) num_threads(nle__threads_for(ctx, (double)(q1 - q0) * (double)d))
  for (int64_t t = q0; t < q1; t++) {
    int64_t q = e->entry[t];
    size_t j = (size_t)e->cand->colind[q];
    e->dist[q] = (ring_cand){nle__sqdist_lanes(e->Y->data + (size_t)e->query[t] * d, piece->data + (j - begin) * d, d),
                             (int32_t)j};
  }
  return NLE_OK;
}

nle_status nle__knn_rerank_ring(nle_ctx *ctx, const nle_matf *Y, const nle__rows *rows, const nle_csr *cand, int k,
                                nle_csr **graph) {
  *graph = NULL;
  size_t m = Y->rows;
  nle_status s = NLE_OK;
  for (size_t r = 0; r < m && !s; r++)
    if (cand->rowptr[r + 1] - cand->rowptr[r] < k)
      s = nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: point %zu has %lld candidates for k = %d",
                    rows->mine.begin + r, (long long)(cand->rowptr[r + 1] - cand->rowptr[r]), k);
  rerank_ring e = {Y, cand, s ? NULL : nle__malloc(ctx, (size_t)(cand->nnz ? cand->nnz : 1) * sizeof(ring_cand),
                                                    "the candidates' distances"), 0, NULL, NULL, NULL};
  ring_cand *best = s ? NULL : nle__malloc(ctx, (m ? m : 1) * (size_t)k * sizeof(ring_cand), "the lists");
  if (!s && (!e.dist || !best)) s = NLE_ERR_NOMEM;
  if (!s) s = bucket_candidates(ctx, rows, &e);
  s = nle__comm_agree(ctx, s);
  if (!s) s = ring_walk(ctx, Y, rows, rerank_visit, &e);
  for (size_t r = 0; !s && r < m; r++) {
    ring_cand *row = e.dist + cand->rowptr[r];
    ring_sort(row, (size_t)(cand->rowptr[r + 1] - cand->rowptr[r]));
    memcpy(best + r * (size_t)k, row, (size_t)k * sizeof *row);
  }
  if (!s) s = graph_from_lists(ctx, m, rows->n, k, best, graph);
  free(e.dist);
  free(e.start);
  free(e.entry);
  free(e.query);
  free(best);
  return nle__comm_agree(ctx, s);
}

nle_status nle__csr_rows(nle_ctx *ctx, const nle_csr *A, size_t begin, size_t end, nle_csr **out) {
  int64_t at = A->rowptr[begin], nnz = A->rowptr[end] - at;
  size_t width = A->dtype == NLE_F64 ? sizeof(double) : sizeof(float);
  nle_status s = nle_csr_alloc(ctx, (int64_t)(end - begin), A->cols, nnz, A->dtype, out);
  if (s) return s;
  for (size_t i = begin; i <= end; i++) (*out)->rowptr[i - begin] = A->rowptr[i] - at;
  memcpy((*out)->colind, A->colind + at, (size_t)nnz * sizeof(int32_t));
  memcpy((*out)->val, (const char *)A->val + (size_t)at * width, (size_t)nnz * width);
  return NLE_OK;
}
