/* neighbors_internal.h — the kNN searches' internals that other stages call
 * (the new-point maps' re-ranking, the range check) and the tests reach
 * (the k-d tree and GEMM paths compared). */
#ifndef NLE_NEIGHBORS_INTERNAL_H
#define NLE_NEIGHBORS_INTERNAL_H

#include "../core/internal.h"

/* Refuses points (Y, and the queries Q when not NULL) whose single-precision
 * squared distances would overflow or underflow, naming the farthest point
 * (knn_range.c, below every search). */
nle_status nle__knn_check_range(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q);
/* Whether a largest centred squared norm keeps single-precision distances in
 * range (the test nle__knn_check_range applies; searches that centre their
 * data anyway call that only when this fails, for its message). */
bool nle__knn_range_ok(double max_sq);
/* Exact kNN by a k-d tree (knn_kdtree.c) for low-dimensional points: the
 * k nearest of Y's rows to each row of Q (Q NULL: the kNN graph of Y, self
 * left out), the same lists as the GEMM search. _pays: where it is the
 * faster (nle_knn_exact and nle_knn_query then use it). */
nle_status nle__knn_kdtree(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, int k, nle_csr **graph);
bool nle__knn_kdtree_pays(size_t n, size_t d);
/* The GEMM search whatever the dimension (for the tests' comparison). */
nle_status nle__knn_gemm(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, int k, nle_csr **graph);
/* The approximate search's joins screen by GEMM from this dimension on (0:
 * the default); for tests, which compare the two paths. */
void nle__knn_approx_wide_from(size_t d);
/* nle_knn_rerank for queries: the k nearest of each query's candidates (an
 * M x N graph into Y's rows) by their squared distances between Q and Y,
 * the queries taken in `order` (M rows; NULL: in turn), which changes only
 * which of Y's rows come from cache. */
nle_status nle__knn_rerank_queries(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, const nle_csr *candidates,
                                   int k, const int32_t *order, nle_csr **graph);

#endif
