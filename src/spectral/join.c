/* join.c — a disconnected neighbourhood graph joined by the shortest edges
 * between its components (the front door's join policy; Isomap's default,
 * whose geodesics between components are otherwise infinite).
 *
 * The edges added are a minimum spanning tree of the components: the tree
 * over the components, each pair weighted by its closest pair of points,
 * of least total length, found exactly by Boruvka's rounds. Each round,
 * every component but the largest finds its closest point outside it (a
 * brute-force search from its points over all N, in parallel blocks of
 * query points), and those edges join. By the cut property each such
 * edge belongs to the minimum spanning tree (edges ordered by length, then
 * by their ends' indices: a strict order, so the same tree on any thread
 * count); leaving the largest component out of the search keeps it
 * correct and spares its points, which on real data are most of them,
 * while every other component merges with something each round: at most
 * log2(c) rounds for c components, c - 1 edges in all. Memory O(N); time
 * O(rounds x (N - largest) x N x D): a few tiny components cost a few
 * N x D passes, c equal components cost about N^2 D / threads per round.
 * scikit-learn's Isomap instead adds the closest pair of every pair of
 * components (c (c - 1) / 2 edges): with many small components that
 * fills the geodesic graph; the spanning tree is the fewest edges that
 * join it, each the shortest that can. */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { QUERY_BLOCK = 32 };

static int32_t uf_find(int32_t *parent, int32_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

typedef struct {
  const nle__join_space *space;
  const int32_t *label; /* each point's component */
  const int32_t *query; /* the points searched from */
  size_t nq, n;
  double *best_d;       /* per query: its closest point of another component */
  int32_t *best_j;
} nearest_job;

static inline double join_distance2(const nle__join_space *sp, size_t i, size_t j) {
  if (sp->Y) return nle__sqdist_fd(sp->Y->data + i * sp->Y->cols, sp->Y->data + j * sp->Y->cols, sp->Y->cols);
  double d = (double)sp->distances->data[i * sp->distances->cols + j];
  return d * d;
}

NLE_HOT static int nearest_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  nearest_job *j = job;
  size_t a1 = (b + 1) * QUERY_BLOCK < j->nq ? (b + 1) * QUERY_BLOCK : j->nq;
  for (size_t a = b * QUERY_BLOCK; a < a1; a++) {
    size_t i = (size_t)j->query[a];
    double best = INFINITY;
    int32_t arg = -1;
    for (size_t v = 0; v < j->n; v++) { /* ascending v: ties go to the smaller index */
      if (j->label[v] == j->label[i]) continue;
      double d2 = join_distance2(j->space, i, v);
      if (d2 < best) best = d2, arg = (int32_t)v;
    }
    j->best_d[a] = best, j->best_j[a] = arg;
  }
  return 0;
}

/* (d, lo, hi) before (e, lo', hi'): the strict order on candidate edges. */
static bool edge_before(double d, int32_t a, int32_t b, double e, int32_t c, int32_t f) {
  int32_t lo = a < b ? a : b, hi = a < b ? b : a, lo2 = c < f ? c : f, hi2 = c < f ? f : c;
  return d < e || (d == e && (lo < lo2 || (lo == lo2 && hi < hi2)));
}

/* Labels 0..c-1 by the smallest point of each set; returns c. */
static int32_t relabel(int32_t *parent, int32_t *label, int32_t *id, size_t n) {
  int32_t c = 0;
  for (size_t i = 0; i < n; i++) id[i] = -1;
  for (size_t i = 0; i < n; i++) {
    int32_t r = uf_find(parent, (int32_t)i);
    if (id[r] < 0) id[r] = c++;
    label[i] = id[r];
  }
  return c;
}

nle_status nle__join_components(nle_ctx *ctx, const nle__join_space *space, const nle_csr *W, nle__join_edge **edges,
                                int64_t *count) {
  *edges = NULL;
  *count = 0;
  size_t n = (size_t)W->rows;
  int32_t *parent = nle__malloc(ctx, n * sizeof(int32_t), "the components");
  int32_t *label = nle__malloc(ctx, n * sizeof(int32_t), "the components");
  int32_t *id = nle__malloc(ctx, n * sizeof(int32_t), "the components");
  int32_t *query = nle__malloc(ctx, n * sizeof(int32_t), "the components");
  double *best_d = nle__malloc(ctx, n * sizeof(double), "the joining edges");
  int32_t *best_j = nle__malloc(ctx, n * sizeof(int32_t), "the joining edges");
  int64_t *size = nle__calloc(ctx, n, sizeof(int64_t), "the components");
  nle__join_edge *pick = nle__malloc(ctx, n * sizeof(nle__join_edge), "the joining edges");
  nle__join_edge *out = nle__malloc(ctx, n * sizeof(nle__join_edge), "the joining edges");
  nle_status s = parent && label && id && query && best_d && best_j && size && pick && out ? NLE_OK : NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < n; i++) parent[i] = (int32_t)i;
  for (size_t i = 0; !s && i < n; i++) /* W's components: edges of positive weight, as the front door counts them */
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
      if (nle_csr_value(W, q) > 0) {
        int32_t a = uf_find(parent, (int32_t)i), b = uf_find(parent, W->colind[q]);
        if (a != b) parent[a < b ? b : a] = a < b ? a : b;
      }
  int64_t added = 0;
  int32_t c = s ? 0 : relabel(parent, label, id, n);
  while (!s && c > 1) {
    memset(size, 0, (size_t)c * sizeof(int64_t));
    for (size_t i = 0; i < n; i++) size[label[i]]++;
    int32_t largest = 0;
    for (int32_t k = 1; k < c; k++) largest = size[k] > size[largest] ? k : largest;
    size_t nq = 0;
    for (size_t i = 0; i < n; i++)
      if (label[i] != largest) query[nq++] = (int32_t)i;
    nearest_job job = {space, label, query, nq, n, best_d, best_j};
    double dims = space->Y ? (double)space->Y->cols : 1.0;
    s = nle__for_blocks(ctx, "joining components", (nq + QUERY_BLOCK - 1) / QUERY_BLOCK,
                        nle__threads_for(ctx, (double)nq * (double)n * (dims + 2.0)), 0, nearest_block, &job);
    /* each component's shortest edge out (none for the largest) */
    for (int32_t k = 0; !s && k < c; k++) pick[k] = (nle__join_edge){-1, -1, INFINITY};
    for (size_t a = 0; !s && a < nq; a++) {
      int32_t i = query[a], k = label[i];
      if (best_j[a] >= 0 && edge_before(best_d[a], i, best_j[a], pick[k].d2, pick[k].a, pick[k].b))
        pick[k] = (nle__join_edge){i, best_j[a], best_d[a]};
    }
    int64_t before = added;
    for (int32_t k = 0; !s && k < c; k++) {
      if (k == largest || pick[k].a < 0) continue;
      int32_t ra = uf_find(parent, pick[k].a), rb = uf_find(parent, pick[k].b);
      if (ra == rb) continue; /* the same edge, picked from its other end */
      parent[ra < rb ? rb : ra] = ra < rb ? ra : rb;
      out[added++] = pick[k];
    }
    if (!s && added == before) /* every component but one finds an edge out: cannot happen */
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "joining components: no edge between %d components (non-finite distances?)", c);
    if (!s) c = relabel(parent, label, id, n);
  }
  free(parent), free(label), free(id), free(query), free(best_d), free(best_j), free(size), free(pick);
  if (s) {
    free(out);
    return s;
  }
  *edges = out;
  *count = added;
  return NLE_OK;
}

nle_status nle__knn_add_edges(nle_ctx *ctx, const nle_csr *knn, const nle__join_edge *edges, int64_t count,
                              nle_csr **out) {
  *out = NULL;
  int64_t n = knn->rows;
  int64_t *extra = nle__calloc(ctx, (size_t)n + 1, sizeof(int64_t), "the joined graph");
  if (!extra) return NLE_ERR_NOMEM;
  for (int64_t e = 0; e < count; e++) extra[edges[e].a]++, extra[edges[e].b]++;
  nle_csr *g = NULL;
  nle_status s = nle_csr_alloc(ctx, n, n, knn->nnz + 2 * count, knn->dtype, &g);
  for (int64_t i = 0; !s && i < n; i++)
    g->rowptr[i + 1] = g->rowptr[i] + (knn->rowptr[i + 1] - knn->rowptr[i]) + extra[i];
  int64_t *fill = s ? NULL : nle__malloc(ctx, (size_t)n * sizeof(int64_t), "the joined graph");
  if (!s && !fill) s = NLE_ERR_NOMEM;
  for (int64_t i = 0; !s && i < n; i++) { /* the kNN rows as they were, then room for the new edges */
    int64_t len = knn->rowptr[i + 1] - knn->rowptr[i];
    memcpy(g->colind + g->rowptr[i], knn->colind + knn->rowptr[i], (size_t)len * sizeof(int32_t));
    size_t width = knn->dtype == NLE_F64 ? sizeof(double) : sizeof(float);
    memcpy((char *)g->val + (size_t)g->rowptr[i] * width, (const char *)knn->val + (size_t)knn->rowptr[i] * width,
           (size_t)len * width);
    fill[i] = g->rowptr[i] + len;
  }
  /* each new edge inserted where its length sorts it in both ends' rows
   * (rows are sorted by length, ties by index, as the searches leave them) */
  for (int64_t e = 0; !s && e < count; e++)
    for (int end = 0; end < 2; end++) {
      int32_t i = end ? edges[e].b : edges[e].a, j = end ? edges[e].a : edges[e].b;
      double d2 = edges[e].d2;
      int64_t q = fill[i]++;
      for (; q > g->rowptr[i]; q--) {
        double prev = nle_csr_value(g, q - 1);
        if (prev < d2 || (prev == d2 && g->colind[q - 1] < j)) break;
        g->colind[q] = g->colind[q - 1];
        if (g->dtype == NLE_F64) ((double *)g->val)[q] = ((double *)g->val)[q - 1];
        else ((float *)g->val)[q] = ((float *)g->val)[q - 1];
      }
      g->colind[q] = j;
      if (g->dtype == NLE_F64) ((double *)g->val)[q] = d2;
      else ((float *)g->val)[q] = (float)d2;
    }
  free(extra);
  free(fill);
  if (s) nle_csr_free(&g);
  *out = g;
  return s;
}
