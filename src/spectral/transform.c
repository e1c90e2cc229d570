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
#include "../affinity/affinity_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { POINT_BLOCK = 16 };

typedef struct {
  int32_t j;
  float d2;
  uint8_t forward, reverse;
} edge;

typedef struct {
  nle_ctx *ctx;
  const nle_spectral_model *m;
  const nle_matf *Ynew, *Qs; /* the new points, and in the search space */
  const nle_matf *S;         /* the training points in the search space */
  nle_matd *out;
  size_t candidates;         /* forward candidates per point, the point itself included */
  size_t lle_k, lle_scratch; /* neighbours the scratch's Gram system holds; doubles */
  bool forward_only;         /* the LLE family: no reverse edges needed */
  int bad_point;             /* -1, or the first point without an edge (its row) */
  double bad_nearest;
} oos_job;

/* The LLE family maps by reconstruction weights, from y's own neighbours;
 * the others by Nystrom's formula over both directions of its edges. */
static bool uses_weights(nle_spectral_method method) {
  return method != NLE_SPECTRAL_LE && method != NLE_SPECTRAL_DIFFMAP && method != NLE_SPECTRAL_ISOMAP;
}

const char *nle_spectral_model_map(const nle_spectral_model *m) {
  if (m->landmark_X) return m->centres ? "landmark weights, nearest centre" : "landmark weights";
  return m->centres ? "nystrom, nearest centre" : uses_weights(m->method) ? "reconstruction weights" : "nystrom";
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
  if (j->forward_only) return count; /* reconstruction weights: y's own neighbours only */
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

/* LE and diffusion maps: the Nystrom formulas of spectral.h. Scratch:
 * pw[count] (entropic: each forward edge's p_{n|y}), dfwd[nf] and p[nf],
 * ea[2 nf + 1]. */
static int kernel_map(const oos_job *j, const edge *edges, size_t count, const int32_t *fwd, size_t nf,
                      int32_t self, double *pw, double *dfwd, double *p, double *ea, double *x) {
  const nle_spectral_model *m = j->m;
  const nle_spectral_opts *o = &m->opts;
  size_t d = m->dim;
  double scale_y = 0.0;
  if (o->affinity == NLE_AFF_SELF_TUNING && nf) { /* its tuning_k-th forward neighbour's distance */
    size_t t = (size_t)o->tuning_k < nf ? (size_t)o->tuning_k : nf;
    const edge key = {fwd[t - 1], 0, 0, 0};
    const edge *e = bsearch(&key, edges, count, sizeof *edges, cmp_edge);
    scale_y = sqrt((double)e->d2);
  }
  if (o->affinity == NLE_AFF_ENTROPIC && nf) { /* y's own row, solved as training solved its rows */
    for (size_t a = 0; a < nf; a++) {
      const edge key = {fwd[a], 0, 0, 0};
      dfwd[a] = (double)((const edge *)bsearch(&key, edges, count, sizeof *edges, cmp_edge))->d2;
    }
    /* a training point given again starts at its training root, and stops there */
    nle__ea_row(dfwd, (int)nf, o->perplexity, self >= 0 ? log(m->beta[self]) : NAN, p, ea);
    for (size_t a = 0; a < nf; a++) {
      const edge key = {fwd[a], 0, 0, 0};
      pw[(const edge *)bsearch(&key, edges, count, sizeof *edges, cmp_edge) - edges] = p[a];
    }
  }
  double deg = 0.0, norm = 0.0;
  for (size_t t = 0; t < d; t++) x[t] = 0.0;
  for (size_t a = 0; a < count; a++) {
    const edge *e = &edges[a];
    double sj = m->scale ? m->scale[e->j] : 0.0;
    double w_fwd, w_rev;
    if (o->affinity == NLE_AFF_ENTROPIC) {
      w_fwd = e->forward ? pw[a] : NAN;
      w_rev = e->reverse ? exp(-m->beta[e->j] * e->d2 - m->log_z[e->j]) : NAN;
    } else {
      w_fwd = e->forward ? nle__affinity_weight(o, e->d2, scale_y, sj) : NAN;
      w_rev = e->reverse ? nle__affinity_weight(o, e->d2, sj, scale_y) : NAN;
    }
    double w = nle__symmetrize_pair(o->symmetrize, w_fwd, w_rev);
    if (isnan(w) || !(w > 0) || !(m->degrees[e->j] > 0)) continue;
    deg += w;
    double c = w; /* each training point's share before the normalisation */
    if (m->method == NLE_SPECTRAL_DIFFMAP) c = o->alpha == 0 ? w : w / pow(m->degrees[e->j], o->alpha);
    else if (o->laplacian == NLE_LAPLACIAN_SYMMETRIC) c = w / sqrt(m->degrees[e->j]);
    norm += c;
    for (size_t t = 0; t < d; t++) x[t] += c * m->X->data[(size_t)e->j * d + t];
  }
  if (!(deg > 0)) return 0;
  for (size_t t = 0; t < d; t++) {
    double lambda = m->eigenvalues[t + 1], div;
    if (m->method == NLE_SPECTRAL_DIFFMAP) div = lambda * norm; /* P's eigenvalue mu_t */
    else if (o->laplacian == NLE_LAPLACIAN_UNNORMALISED) div = deg - lambda;
    else if (o->laplacian == NLE_LAPLACIAN_SYMMETRIC) div = (1.0 - lambda) * sqrt(deg);
    else div = (1.0 - lambda) * deg;
    x[t] /= div;
  }
  return 1;
}

/* Isomap: geodesics from y through its edges, then the triangulation. */
static void isomap_map(const oos_job *j, const edge *edges, size_t count, int32_t self, double *dist, void *heap,
                       int32_t *src, double *start, double *x) {
  const nle_spectral_model *m = j->m;
  size_t d = m->dim, L = m->n_landmarks;
  for (size_t a = 0; a < count; a++) src[a] = edges[a].j, start[a] = sqrt((double)edges[a].d2);
  if (self >= 0) src[count] = self, start[count++] = 0.0; /* y is that training point: 0 away, not an edge */
  nle__dijkstra_from(m->geodesic_graph, count, src, start, dist, heap);
  for (size_t t = 0; t < d; t++) x[t] = 0.0;
  for (size_t a = 0; a < L; a++) {
    size_t l = m->landmarks ? (size_t)m->landmarks[a] : a;
    double g2 = dist[l] * dist[l] - m->landmark_mean[a];
    for (size_t t = 0; t < d; t++) x[t] += m->X->data[l * d + t] * g2;
  }
  for (size_t t = 0; t < d; t++) x[t] *= -0.5 / m->eigenvalues[t];
}

/* y's map by the method's formula into x (sd: the block's scratch, its
 * distances first); 1, or 0 when y has no usable edge, -1 out of memory. An
 * epsilon ball may hold more neighbours than the scratch's LLE system:
 * *big (grown as needed, freed by the caller) takes them. */
static int map_point(const oos_job *j, size_t q, double **big, size_t *big_k, double *x, double *sd) {
  const nle_spectral_model *m = j->m;
  size_t n = m->n, d = m->dim;
  double *dist = sd + n, *start = dist + n, *lle = start + n, *w = lle + j->lle_scratch;
  nle__pair *heap = (nle__pair *)(w + n);
  edge *edges = (edge *)(heap + j->candidates);
  int32_t *fwd = (int32_t *)(edges + n), *src = fwd + n;
  void *dheap = src + n + (n & 1);
  size_t nf = 0;
  int32_t self;
  size_t count = find_edges(j, q, sd, heap, edges, fwd, &nf, &self);
  if (j->forward_only && self >= 0) { /* its own reconstruction: weight 1 on itself */
    memcpy(x, m->X->data + (size_t)self * d, d * sizeof(double));
    return 1;
  }
  if (!count) return 0;
  if (m->method == NLE_SPECTRAL_ISOMAP) {
    isomap_map(j, edges, count, self, dist, dheap, src, start, x);
    return 1;
  }
  if (!j->forward_only) return kernel_map(j, edges, count, fwd, nf, self, dist, start, w, lle, x);
  if (nf > j->lle_k && nf > *big_k) {
    double *grown = realloc(*big, (nf * m->D + nf * nf) * sizeof(double));
    if (!grown) return -1;
    *big = grown, *big_k = nf;
  }
  nle__barycentre_weights(j->Ynew->data + q * m->D, m->Y->data, m->D, fwd, (int)nf, m->opts.reg,
                          nf > j->lle_k ? *big : lle, w);
  for (size_t t = 0; t < d; t++) x[t] = 0.0;
  for (size_t a = 0; a < nf; a++)
    for (size_t t = 0; t < d; t++) x[t] += w[a] * m->X->data[(size_t)fwd[a] * d + t];
  return 1;
}

static int oos_block(void *job, size_t b, void *scratch) {
  oos_job *j = job;
  const nle_spectral_model *m = j->m;
  size_t n = m->n, d = m->dim, M = j->Ynew->rows, q1 = (b + 1) * POINT_BLOCK < M ? (b + 1) * POINT_BLOCK : M;
  double *sd = scratch, *big = NULL;
  size_t big_k = 0;
  int failed = 0;
  for (size_t q = b * POINT_BLOCK; q < q1 && !failed; q++) {
    int ok = map_point(j, q, &big, &big_k, j->out->data + q * d, sd);
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
  free(big);
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
  size_t n = m->n, M = Ynew->rows, k = (size_t)m->opts.k;
  nle_matf *Qs = NULL;
  nle_status s = m->opts.pca_dims > 0 ? nle__spectral_project(ctx, m, Ynew, &Qs) : NLE_OK;
  if (!s) s = nle_matd_alloc(ctx, M, m->dim, Xnew);
  size_t C = (m->opts.pca_dims > 0 ? (size_t)m->opts.pca_candidates : k) + 1;
  if (C > n) C = n;
  bool lle_family = uses_weights(m->method);
  size_t lle_k = lle_family ? k : 0;
  /* the LLE family's Gram system, or the entropic row solver's scratch */
  size_t extra = lle_family ? lle_k * m->D + lle_k * lle_k : m->opts.affinity == NLE_AFF_ENTROPIC ? 2 * k + 1 : 0;
  oos_job j = {ctx, m, Ynew, Qs ? Qs : Ynew, m->opts.pca_dims > 0 ? m->pca_Y : m->Y, *Xnew, C, lle_k, extra,
               lle_family, -1, 0.0};
  if (!s && !j.S) s = nle__fail(ctx, NLE_ERR_ARG, "spectral transform: the model's projected training data is missing");
  size_t scratch = (3 * n + j.lle_scratch + n) * sizeof(double) + C * sizeof(nle__pair) + n * sizeof(edge) +
                   (2 * n + 2) * sizeof(int32_t) +
                   (m->geodesic_graph ? nle__dijkstra_scratch(m->geodesic_graph) : 0);
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
