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

typedef enum {
  NLE_KNN_AUTO = NLE_AUTO, /* whichever a cost model in N and D expects to be
                              faster (exact below ~40,000 points at D = 784) */
  NLE_KNN_EXACT = 0,
  NLE_KNN_APPROX = 1
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

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_NEIGHBORS_H */
