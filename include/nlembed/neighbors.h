/* nlembed/neighbors.h — exact and approximate k-nearest-neighbour graphs.
 * Part of the public header: include <nlembed.h>, whose opening comment
 * states the conventions every declaration here follows. */
#ifndef NLEMBED_NEIGHBORS_H
#define NLEMBED_NEIGHBORS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Neighbours                                                                 */
/* ========================================================================== */

typedef struct {
  int k; /* neighbours per point, 1 <= k < N (default 10) */
} nle_knn_opts;

NLE_API void nle_knn_opts_init(nle_knn_opts *o);

/* Exact k nearest neighbours of every point among the others (self excluded),
 * by blocked GEMM distances with a partial selection per row; candidates are
 * re-ranked with directly computed distances so the result is exact up to
 * float rounding of |y_n - y_m|^2. Returns an N x N CSR (float values) with k
 * entries per row, sorted by squared distance, ties by index. */
NLE_API nle_status nle_knn_exact(nle_ctx *ctx, const nle_matf *Y, const nle_knn_opts *opts,
                                 nle_csr **graph);

/* The k nearest of the reference points Y to every row of Q (new points), by
 * the same certified GEMM search: an M x N CSR (float squared distances),
 * sorted, ties by index. */
NLE_API nle_status nle_knn_query(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, int k, nle_csr **graph);

/* The k nearest among each point's candidates (an N x N graph, at least k
 * entries a row, e.g. the neighbours found among the first principal
 * components) by their squared distances in Y: an N x N CSR like
 * nle_knn_exact's (float squared distances, sorted, ties by index). */
NLE_API nle_status nle_knn_rerank(nle_ctx *ctx, const nle_matf *Y, const nle_csr *candidates, int k, nle_csr **graph);

typedef struct {
  int k;              /* neighbours per point, 1 <= k < N (default 10) */
  int n_trees;        /* random-projection trees, >= 1; NLE_AUTO (default):
                         4 + N^(1/4) / 2, at most 32 */
  int leaf_size;      /* largest leaf, >= 1; NLE_AUTO (default): max(60, k) */
  int max_candidates; /* NN-descent sample per point and iteration, >= 1;
                         NLE_AUTO (default): 30 */
  int max_iters;      /* NN-descent iterations, >= 1; NLE_AUTO (default):
                         max(5, log2 N) */
  double delta;       /* stop when fewer than delta N k entries change in an
                         iteration (default 0.001) */
} nle_knn_approx_opts;

NLE_API void nle_knn_approx_opts_init(nle_knn_approx_opts *o);

/* Approximate k nearest neighbours: a forest of random-projection trees seeds
 * every point's candidates (all pairs within each leaf, by GEMM), then
 * NN-descent refines them by local joins (Dong, Charikar and Li 2011) with
 * sampled new/old candidates and reverse neighbours. Deterministic for a given
 * seed whatever the number of threads. Same output as nle_knn_exact: rows
 * sorted by exact squared distance, ties by index. */
NLE_API nle_status nle_knn_approx(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *opts, nle_csr **graph);

#define NLE_KNN_METHOD_MAP(XX)                                                                      \
  XX(NLE_KNN_EXACT, 0, "exact")                                                                     \
  XX(NLE_KNN_APPROX, 1, "approx")
typedef enum {
  NLE_KNN_AUTO = NLE_AUTO, /* whichever a cost model in N and D expects to be
                              faster (exact below ~40,000 points at D = 784) */
  NLE_KNN_METHOD_MAP(NLE__ENUMERATOR)
  NLE_KNN_COUNT /* how many there are (range checks) */
} nle_knn_method;

/* The k-nearest-neighbour graph by the given method (approx: with the
 * options in `approx`, its k replaced by k); *used (may be NULL) receives
 * the method that ran. */
NLE_API nle_status nle_knn_graph(nle_ctx *ctx, const nle_matf *Y, int k, nle_knn_method method,
                                 const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used);
/* A neighbourhood graph from precomputed distances (not squared), as the
 * searches give one (squared distances, rows sorted, ties by index, no
 * self): from a dense N x N matrix (finite, >= 0, zero diagonal, symmetric
 * to 1e-6; the first bad entry named) each row's k nearest, or with
 * radius > 0 every point within it (a point with none is an error naming
 * it); from a sparse graph of distances, each row's entries as they are
 * (the diagonal dropped; squared: its values are squared distances already,
 * as nlembed knn writes them). */
NLE_API nle_status nle_knn_from_distances(nle_ctx *ctx, const nle_matf *D, int k, double radius, nle_csr **graph);
NLE_API nle_status nle_knn_from_sparse_distances(nle_ctx *ctx, const nle_csr *G, bool squared, nle_csr **graph);
NLE_API const char *nle_knn_method_name(nle_knn_method m);
/* "auto", "exact", "approx" back to the method (-1 if unknown). */
NLE_API int nle_knn_method_parse(const char *name);

/* ========================================================================== */
/* Neighbours: metrics and sparse rows                                        */
/* ========================================================================== */

/* What the rows of an input hold and how near two of them are. Cosine and
 * correlation are the Euclidean distances of the rows made unit length
 * (correlation: centred first), so every graph keeps squared distances, as
 * the searches above: 2 (1 - cos) and 2 (1 - r). */
#define NLE_METRIC_MAP(XX)                                                                          \
  XX(NLE_METRIC_EUCLIDEAN, 0, "euclidean")                                                          \
  XX(NLE_METRIC_COSINE, 1, "cosine")                                                                \
  XX(NLE_METRIC_CORRELATION, 2, "correlation")                                                      \
  /* the input is N x N distances (dense), or a graph of distances (sparse, no self;                \
     scikit-learn's mode='distance'); not squared */                                                \
  XX(NLE_METRIC_PRECOMPUTED, 3, "precomputed")                                                      \
  /* the input is an N x N affinity matrix W (sparse or dense, symmetric, >= 0) */                  \
  XX(NLE_METRIC_AFFINITIES, 4, "affinities")
typedef enum {
  NLE_METRIC_MAP(NLE__ENUMERATOR)
  NLE_METRIC_COUNT /* how many there are (range checks) */
} nle_metric;

NLE_API const char *nle_metric_name(nle_metric metric);
NLE_API int nle_metric_parse(const char *name); /* -1 if unknown */

/* A copy of the dense rows of Y as the metric compares them: unit length
 * (cosine), centred then unit length (correlation), unchanged (Euclidean);
 * a row that cannot be made unit (all zero; constant, for correlation) is
 * NLE_ERR_VALUE naming it. */
NLE_API nle_status nle_metric_rows(nle_ctx *ctx, const nle_matf *Y, nle_metric metric, nle_matf **out);

/* The kNN graph of sparse rows X (an N x D CSR, float or double values,
 * columns sorted and unrepeated within rows, else NLE_ERR_ARG naming the
 * row) under the metric (Euclidean, cosine, correlation), never densified:
 * an N x N CSR of float squared distances as nle_knn_exact's (k a row,
 * sorted, ties by index, no self), each within about an ulp of the true
 * value (near-duplicates recomputed without cancellation). Exact: every
 * pair by sparse products (each row against the column lists, threaded by
 * fixed blocks). Approximate (k <= 1024): the rows' coordinates in their
 * leading singular subspace (a randomised range finder, 96 directions), the
 * approximate search there for 2k candidates, re-ranked by the exact sparse
 * distances, then local joins (NN-descent) in the exact metric; approx's
 * n_trees, leaf_size, max_candidates and max_iters apply to the search among
 * the coordinates (NLE_AUTO: 4 trees, 3 iterations), delta to it and to the
 * joins. auto picks by a cost model in N, k and the column counts. The same
 * bits for any thread count. *used (may be NULL) gets the method that ran.
 * A row the metric cannot scale (all zeros; constant, for correlation) is
 * NLE_ERR_VALUE naming it, as are NaN and infinite values. */
NLE_API nle_status nle_knn_sparse(nle_ctx *ctx, const nle_csr *X, int k, nle_metric metric, nle_knn_method method,
                                  const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used);
/* The same for dense rows under any of the three metrics: the rows as
 * nle_metric_rows makes them (unit, in single precision: distances to about
 * 1e-7), then nle_knn_graph's searches and choice. */
NLE_API nle_status nle_knn_metric(nle_ctx *ctx, const nle_matf *Y, int k, nle_metric metric, nle_knn_method method,
                                  const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used);
/* The k nearest training rows X (sparse, as nle_knn_sparse's) of each new
 * sparse row Q (M x D) under the metric, by the exact search: M x N, as
 * nle_knn_query's (1 <= k <= N). */
NLE_API nle_status nle_knn_sparse_query(nle_ctx *ctx, const nle_csr *X, const nle_csr *Q, int k, nle_metric metric,
                                        nle_csr **graph);

/* The neighbourhood graph (squared distances, as the searches give) of an
 * input as the metric reads it: dense rows Y or sparse rows S searched
 * under a metric of rows (nle_knn_metric, nle_knn_sparse); or, metric
 * precomputed, a dense N x N distance matrix Y (each row's k nearest,
 * nle_knn_from_distances) or a sparse graph of distances S
 * (nle_knn_from_sparse_distances, not squared). Exactly one of Y and S;
 * metric affinities is NLE_ERR_ARG (no distances to search). */
NLE_API nle_status nle_metric_graph(nle_ctx *ctx, nle_metric metric, const nle_matf *Y, const nle_csr *S, int k,
                                    nle_knn_method method, const nle_knn_approx_opts *approx, nle_csr **graph,
                                    nle_knn_method *used);
/* Whether Y reads as a distance matrix: square, N >= 3, zero diagonal,
 * non-negative and symmetric (to 1e-6 relative): what the tool refuses to
 * embed as points unless the metric is named. */
NLE_API bool nle_looks_like_distances(const nle_matf *Y);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_NEIGHBORS_H */
