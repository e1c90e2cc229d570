/* orders.c — warm-start orders for the entropic affinities (dissertation
 * sec. 2.3.4): minimum spanning tree (Kruskal) traversed breadth first,
 * minimum spanning path (algorithm 2), density D_kappa, sequential, random.
 * All work on the kappa nearest neighbours of the kNN graph, O(N kappa). */
#include "affinity_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  uint32_t key; /* the float squared distance's bits: non-negative floats
                   order like their bit patterns */
  int32_t a, b;
} edge;

/* LSD radix sort on the 32-bit keys, 8 bits a pass. Stable, so equal
 * distances keep the order the edges were made in (point, then rank): a
 * deterministic tie order, at O(E) instead of a comparison sort's
 * O(E log E). */
static void sort_edges(edge *e, edge *tmp, int64_t m) {
  for (int shift = 0; shift < 32; shift += 8) {
    int64_t count[257] = {0};
    for (int64_t q = 0; q < m; q++) count[((e[q].key >> shift) & 255) + 1]++;
    for (int b = 0; b < 256; b++) count[b + 1] += count[b];
    for (int64_t q = 0; q < m; q++) tmp[count[(e[q].key >> shift) & 255]++] = e[q];
    edge *t = e;
    e = tmp;
    tmp = t;
  } /* four passes: the sorted edges are back in the first array */
}

static int64_t find_root(int64_t *up, int64_t i) {
  while (up[i] != i) {
    up[i] = up[up[i]]; /* path halving */
    i = up[i];
  }
  return i;
}

/* Kruskal on the kappa-NN edges, then BFS from the lowest index of every
 * component; a point starts from its parent, a component's root from the
 * middle of its bounds. */
static nle_status order_mst(nle_ctx *ctx, const nle_csr *g, int kappa, int64_t *order, int64_t *parent) {
  int64_t n = g->rows, ne = n * kappa;
  edge *edges = nle__malloc(ctx, 2 * (size_t)ne * sizeof(edge), "MST edges");
  int64_t *up = nle__malloc(ctx, (size_t)n * sizeof(int64_t), "union-find");
  int64_t *deg = nle__calloc(ctx, (size_t)n + 1, sizeof(int64_t), "tree degrees");
  int64_t *adj = nle__malloc(ctx, 2 * (size_t)n * sizeof(int64_t), "tree adjacency");
  int64_t *fill = nle__malloc(ctx, (size_t)n * sizeof(int64_t), "tree cursor");
  uint8_t *seen = nle__calloc(ctx, (size_t)n, 1, "visited");
  nle_status s = (edges && up && deg && adj && fill && seen) ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
      for (int t = 0; t < kappa; t++) {
        int64_t q = g->rowptr[i] + t;
        int32_t j = g->colind[q];
        float w = g->dtype == NLE_F32 ? ((const float *)g->val)[q] : (float)((const double *)g->val)[q];
        uint32_t bits;
        memcpy(&bits, &w, 4);
        edges[m++] = (edge){bits, (int32_t)(i < j ? i : j), (int32_t)(i < j ? j : i)};
      }
    sort_edges(edges, edges + ne, m);
    for (int64_t i = 0; i < n; i++) up[i] = i;
    int64_t kept = 0;
    for (int64_t e = 0; e < m; e++) {
      int64_t ra = find_root(up, edges[e].a), rb = find_root(up, edges[e].b);
      if (ra == rb) continue;
      up[ra] = rb;
      edges[kept++] = edges[e]; /* the tree's edges, reusing the array */
    }
    for (int64_t e = 0; e < kept; e++) {
      deg[edges[e].a + 1]++;
      deg[edges[e].b + 1]++;
    }
    for (int64_t i = 0; i < n; i++) deg[i + 1] += deg[i];
    memcpy(fill, deg, (size_t)n * sizeof(int64_t));
    for (int64_t e = 0; e < kept; e++) {
      adj[fill[edges[e].a]++] = edges[e].b;
      adj[fill[edges[e].b]++] = edges[e].a;
    }
    int64_t head = 0, tail = 0;
    for (int64_t r = 0; r < n; r++) {
      if (seen[r]) continue;
      seen[r] = 1;
      parent[r] = -1;
      order[tail++] = r;
      while (head < tail) {
        int64_t u = order[head++];
        for (int64_t q = deg[u]; q < deg[u + 1]; q++)
          if (!seen[adj[q]]) {
            seen[adj[q]] = 1;
            parent[adj[q]] = u;
            order[tail++] = adj[q];
          }
      }
    }
  }
  free(edges);
  free(up);
  free(deg);
  free(adj);
  free(fill);
  free(seen);
  return s;
}

/* Algorithm 2: walk to the nearest unvisited of the kappa neighbours; when
 * none is left, jump to a random unvisited point (a seeded permutation read
 * with a cursor keeps each jump O(1) amortised). */
static nle_status order_msp(nle_ctx *ctx, const nle_csr *g, int kappa, int64_t *order, int64_t *parent) {
  int64_t n = g->rows;
  int64_t *perm = nle__malloc(ctx, (size_t)n * sizeof(int64_t), "a permutation");
  uint8_t *seen = nle__calloc(ctx, (size_t)n, 1, "visited");
  if (!perm || !seen) {
    free(perm);
    free(seen);
    return NLE_ERR_NOMEM;
  }
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6d7370ULL);
  nle_rng_shuffle(&rng, perm, n);
  int64_t cursor = 0, i = 0, prev = -1;
  for (int64_t t = 0; t < n; t++) {
    seen[i] = 1;
    order[t] = i;
    parent[i] = prev;
    prev = i;
    int64_t next = -1;
    for (int q = 0; q < kappa && next < 0; q++) { /* neighbours are sorted by distance */
      int32_t j = g->colind[g->rowptr[i] + q];
      if (!seen[j]) next = j;
    }
    while (next < 0 && cursor < n) {
      if (!seen[perm[cursor]]) next = perm[cursor];
      cursor++;
    }
    i = next;
  }
  free(perm);
  free(seen);
  return NLE_OK;
}


/* D_kappa: by increasing distance to the kappa-th neighbour, i.e. from dense
 * to sparse regions, where log beta falls steadily. Also the random order. */
static nle_status order_sorted(nle_ctx *ctx, const nle_csr *g, int kappa, int random, int64_t *order,
                               int64_t *parent) {
  int64_t n = g->rows;
  nle__pair *keys = nle__malloc(ctx, (size_t)n * sizeof(nle__pair), "order keys");
  if (!keys) return NLE_ERR_NOMEM;
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6f72646572ULL);
  for (int64_t i = 0; i < n; i++)
    keys[i] = (nle__pair){random ? nle_rng_uniform(&rng) : nle_csr_value(g, g->rowptr[i] + kappa - 1), i};
  qsort(keys, (size_t)n, sizeof *keys, nle__pair_cmp);
  for (int64_t t = 0; t < n; t++) {
    order[t] = keys[t].i;
    parent[keys[t].i] = t ? keys[t - 1].i : -1;
  }
  free(keys);
  return NLE_OK;
}

nle_status nle__ea_order(nle_ctx *ctx, const nle_csr *knn, nle_ea_order kind, int kappa, int64_t *order,
                         int64_t *parent) {
  int64_t n = knn->rows, k = knn->rowptr[1] - knn->rowptr[0];
  if (kappa < 1) return nle__fail(ctx, NLE_ERR_ARG, "order graph: {@kappa=%d} must be at least 1", kappa);
  if (kappa > k) kappa = (int)k; /* the graph has no more neighbours to offer */
  switch (kind) {
  case NLE_ORDER_MST: return order_mst(ctx, knn, kappa, order, parent);
  case NLE_ORDER_MSP: return order_msp(ctx, knn, kappa, order, parent);
  case NLE_ORDER_DENSITY: return order_sorted(ctx, knn, kappa, 0, order, parent);
  case NLE_ORDER_RANDOM: return order_sorted(ctx, knn, kappa, 1, order, parent);
  case NLE_ORDER_SEQUENTIAL:
  case NLE_ORDER_BOUNDS:
    for (int64_t i = 0; i < n; i++) {
      order[i] = i;
      parent[i] = kind == NLE_ORDER_SEQUENTIAL && i ? i - 1 : -1;
    }
    return NLE_OK;
  case NLE_ORDER_COUNT: break;
  }
  return nle__fail(ctx, NLE_ERR_ARG, "unknown order %d", (int)kind);
}
