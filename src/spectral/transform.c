/* transform.c — the spectral methods' out-of-sample maps (Bengio, Paiement,
 * Vincent, Delalleau, Le Roux and Ouimet 2004, "Out-of-sample extensions
 * for LLE, Isomap, MDS, Eigenmaps, and spectral clustering"; the formulas
 * are in spectral.h beside nle_spectral_model). Each new point's edges to
 * the training points are found as training found its graph's:
 *   forward: its k nearest (among the model's principal components, the
 *            candidates re-ranked by their distances in Y, when training
 *            searched there);
 *   reverse: every training point n that would list y, |y - y_n|^2 within
 *            n's reach (its k-th neighbour's squared distance): a scan of
 *            all N, in the search space first, where a projection's
 *            distance is a lower bound of the true one, then confirmed in
 *            Y. So a point of the training set given again, which is not
 *            its own neighbour, gets exactly its training edges.
 * Points are independent: blocks of them in parallel, the same bits on any
 * number of threads. */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { POINT_BLOCK = 16 };

typedef nle__oos_edge edge;

typedef struct {
  nle_ctx *ctx;
  const nle_spectral_model *m;
  const nle__spectral_map *map; /* the method's (its row's) */
  const nle_matf *Ynew, *Qs; /* the new points, and in the search space */
  const nle_matf *S;         /* the training points in the search space */
  nle_matd *out;
  size_t candidates;         /* forward candidates per point, the point itself included */
  size_t map_scratch;        /* bytes of the map's scratch per block (8-byte multiple) */
  int bad_point;             /* -1, or the first point without an edge (its row) */
  double bad_nearest;
} oos_job;

const char *nle_spectral_model_map(const nle_spectral_model *m) {
  if (m->landmark_X) return m->centres ? "landmark weights, nearest centre" : "landmark weights";
  const nle__spectral_method *row = nle__spectral_row(m->method);
  return m->centres ? "nystrom, nearest centre" : row && row->map ? row->map->name : "none";
}

static int cmp_edge(const void *a, const void *b) {
  int32_t x = ((const edge *)a)->j, y = ((const edge *)b)->j;
  return (x > y) - (x < y);
}

/* The C smallest of sd[0..n) by (value, index) into heap[] (a bounded
 * max-heap), then sorted ascending; returns how many (min(C, n)). */
static size_t smallest(const double *sd, size_t n, size_t C, nle__pair *heap) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) nle__pair_heap_offer(heap, &len, C, (nle__pair){sd[i], (int64_t)i});
  qsort(heap, len, sizeof *heap, nle__pair_cmp);
  return len;
}

/* y's edges (sorted by training index), the forward ones in fwd_order (k
 * nearest, ascending); *self the training point y coincides with (or -1).
 * Returns the edge count. */
static size_t find_edges(const oos_job *j, size_t q, double *sd, nle__pair *heap, edge *edges, int32_t *fwd_order,
                         size_t *n_forward, int32_t *self) {
  const nle_spectral_model *m = j->m;
  const nle_spectral_opts *o = &m->opts;
  size_t n = m->n, D = m->D, Ds = j->S->cols;
  const float *y = j->Ynew->data + q * D, *ys = j->Qs->data + q * Ds;
  bool projected = j->S != m->Y;
  for (size_t i = 0; i < n; i++) sd[i] = nle__sqdist_fd(ys, j->S->data + i * Ds, Ds);
  *self = -1;
  size_t count = 0, nf = 0;
  if (o->radius > 0) { /* the epsilon ball: symmetric, every point in reach */
    double r2 = o->radius * o->radius;
    for (size_t i = 0; i < n; i++) {
      if (sd[i] == 0.0 && *self < 0) {
        *self = (int32_t)i;
        continue;
      }
      if (sd[i] <= r2) {
        edges[count] = (edge){(int32_t)i, (float)sd[i], 1, 1};
        fwd_order[nf++] = (int32_t)i;
        count++;
      }
    }
    *n_forward = nf;
    return count;
  }
  /* forward: C candidates in the search space, their true distances, the
   * point itself (distance 0) set aside, the k nearest kept */
  size_t c = smallest(sd, n, j->candidates, heap);
  for (size_t a = 0; a < c; a++) {
    size_t i = (size_t)heap[a].i;
    heap[a].d = (float)(projected ? nle__sqdist_fd(y, m->Y->data + i * D, D) : sd[i]);
  }
  qsort(heap, c, sizeof *heap, nle__pair_cmp);
  size_t first = 0;
  if (c && heap[0].d == 0.0) *self = (int32_t)heap[0].i, first = 1;
  for (size_t a = first; a < c && nf < (size_t)o->k; a++) {
    fwd_order[nf++] = (int32_t)heap[a].i;
    edges[count++] = (edge){(int32_t)heap[a].i, (float)heap[a].d, 1, 0};
  }
  qsort(edges, count, sizeof *edges, cmp_edge);
  *n_forward = nf;
  if (j->map->forward_only) return count; /* reconstruction weights: y's own neighbours only */
  /* reverse: the training points whose reach y falls in */
  size_t listed = count;
  for (size_t i = 0; i < n; i++) {
    /* compared as training compared: float squared distances (a projected
     * one, a lower bound, with a margin for its own rounding) */
    if ((int32_t)i == *self || (projected && !((float)sd[i] <= m->candidate_reach[i]))) continue;
    if (!((float)(sd[i] * (projected ? 1.0 - 1e-5 : 1.0)) <= m->reach[i])) continue;
    float d2 = (float)(projected ? nle__sqdist_fd(y, m->Y->data + i * D, D) : sd[i]);
    if (!(d2 <= m->reach[i])) continue;
    edge key = {(int32_t)i, d2, 0, 1};
    edge *e = bsearch(&key, edges, listed, sizeof *edges, cmp_edge);
    if (e) e->reverse = 1;
    else edges[count++] = key;
  }
  qsort(edges, count, sizeof *edges, cmp_edge);
  return count;
}

/* y's map by the method's into x (sd: the block's scratch, its distances
 * first); 1, or 0 when y has no usable edge, -1 out of memory. */
static int map_point(const oos_job *j, size_t q, double **grown, size_t *grown_doubles, double *x, double *sd) {
  const nle_spectral_model *m = j->m;
  size_t n = m->n;
  char *map_scratch = (char *)(sd + n);
  nle__pair *heap = (nle__pair *)(map_scratch + j->map_scratch);
  edge *edges = (edge *)(heap + j->candidates);
  int32_t *fwd = (int32_t *)(edges + n);
  nle__oos_point p = {m, j->Ynew->data + q * m->D, edges, 0, fwd, 0, -1, sd, grown, grown_doubles};
  p.count = find_edges(j, q, sd, heap, edges, fwd, &p.nf, &p.self);
  return j->map->point(&p, map_scratch, x);
}

static int oos_block(void *job, size_t b, void *scratch) {
  oos_job *j = job;
  const nle_spectral_model *m = j->m;
  size_t n = m->n, d = m->dim, M = j->Ynew->rows, q1 = (b + 1) * POINT_BLOCK < M ? (b + 1) * POINT_BLOCK : M;
  double *sd = scratch, *grown = NULL;
  size_t grown_doubles = 0;
  int failed = 0;
  for (size_t q = b * POINT_BLOCK; q < q1 && !failed; q++) {
    int ok = map_point(j, q, &grown, &grown_doubles, j->out->data + q * d, sd);
    if (ok < 0) {
      nle__fail(j->ctx, NLE_ERR_NOMEM, "spectral transform: out of memory for a ball of neighbours");
      failed = 1;
    } else if (!ok) {
#pragma omp critical
      if (j->bad_point < 0 || (int)q < j->bad_point) {
        j->bad_point = (int)q;
        double nearest = INFINITY;
        for (size_t i = 0; i < n; i++) nearest = fmin(nearest, sd[i]);
        j->bad_nearest = sqrt(nearest);
      }
      failed = 1;
    }
  }
  free(grown);
  return failed;
}

nle_status nle_spectral_assign(nle_ctx *ctx, const nle_spectral_model *m, const nle_matd *X, int32_t *labels) {
  if (!m->centres) return nle__fail(ctx, NLE_ERR_ARG, "spectral assign: the model is not a clustering's");
  size_t d = m->dim;
  if (X->cols != d)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral assign: %zu columns for centres of %zu", X->cols, d);
  for (size_t i = 0; i < X->rows; i++) {
    const double *x = X->data + i * d;
    double norm = 0.0, best = INFINITY;
    for (size_t t = 0; m->normalize_rows && t < d; t++) norm += x[t] * x[t];
    norm = m->normalize_rows && norm > 0 ? 1.0 / sqrt(norm) : 1.0;
    labels[i] = 0;
    for (int c = 0; c < m->clusters; c++) { /* the nearest centre, ties to the first */
      double e = 0.0;
      for (size_t t = 0; t < d; t++) e += (x[t] * norm - m->centres[(size_t)c * d + t]) * (x[t] * norm - m->centres[(size_t)c * d + t]);
      if (e < best) best = e, labels[i] = c;
    }
  }
  return NLE_OK;
}

nle_status nle_spectral_transform(nle_ctx *ctx, const nle_spectral_model *m, const nle_matf *Ynew, nle_matd **Xnew) {
  *Xnew = NULL;
  if (!m->Y) return nle__fail(ctx, NLE_ERR_ARG, "spectral transform: the model's training data is not attached");
  if (Ynew->cols != m->D)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral transform: new points have %zu columns, the training data %zu",
                     Ynew->cols, m->D);
  for (size_t i = 0; i < Ynew->rows * Ynew->cols; i++)
    if (!isfinite(Ynew->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "spectral transform: new points: row %zu, column %zu is not finite",
                       i / Ynew->cols, i % Ynew->cols);
  if (m->landmark_X) return nle__lll_transform(ctx, m, Ynew, Xnew);
  const nle__spectral_method *row = nle__spectral_row(m->method);
  if (!row || !row->map) return nle__fail(ctx, NLE_ERR_ARG, "spectral transform: the method has no map of new points");
  size_t n = m->n, M = Ynew->rows, k = (size_t)m->opts.k;
  nle_matf *Qs = NULL;
  nle_status s = m->opts.pca_dims > 0 ? nle__spectral_project(ctx, m, Ynew, &Qs) : NLE_OK;
  if (!s) s = nle_matd_alloc(ctx, M, m->dim, Xnew);
  size_t C = (m->opts.pca_dims > 0 ? (size_t)m->opts.pca_candidates : k) + 1;
  if (C > n) C = n;
  size_t map_scratch = (row->map->scratch_bytes(m) + 7) / 8 * 8;
  oos_job j = {ctx, m, row->map, Ynew, Qs ? Qs : Ynew, m->opts.pca_dims > 0 ? m->pca_Y : m->Y, *Xnew, C, map_scratch,
               -1, 0.0};
  if (!s && !j.S) s = nle__fail(ctx, NLE_ERR_ARG, "spectral transform: the model's projected training data is missing");
  size_t scratch = n * sizeof(double) + map_scratch + C * sizeof(nle__pair) + n * sizeof(edge) + n * sizeof(int32_t);
  if (!s) s = nle__check_memory(ctx, (double)scratch * 2.0, "the out-of-sample map's scratch");
  double per_point = (double)n * (double)j.S->cols + (m->geodesic_graph ? (double)m->geodesic_graph->nnz * 20.0 : 0.0);
  if (!s && M)
    s = nle__for_blocks(ctx, "spectral out-of-sample", (M + POINT_BLOCK - 1) / POINT_BLOCK,
                        nle__threads_for(ctx, (double)M * per_point), scratch, oos_block, &j);
  if (j.bad_point >= 0)
    s = nle__fail(ctx, NLE_ERR_VALUE, "spectral transform: new point (row) %d has no edge to the training points "
                  "(its nearest is at %g%s)", j.bad_point, j.bad_nearest,
                  m->opts.radius > 0 ? ", beyond the radius" : "; its affinities underflow");
  nle_matf_free(&Qs);
  if (s) nle_matd_free(Xnew);
  return s;
}
