/* neighbors_internal.h — the kNN searches' internals that other stages call
 * (the new-point maps' re-ranking, the range check) and the tests reach
 * (the k-d tree and GEMM paths compared). */
#ifndef NLE_NEIGHBORS_INTERNAL_H
#define NLE_NEIGHBORS_INTERNAL_H

#include "../core/internal.h"
#include "../core/comm.h"

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

/* In double, rounded once to float (as nle_knn_exact's), summed in fixed
 * lanes (NLE__LANES: the same bits in every clone of its callers). Inline,
 * or GCC calls the one portable copy from every clone. */
static inline float nle__sqdist_lanes(const float *a, const float *b, size_t d) {
  double lane[NLE__LANES] = {0};
  size_t t = 0;
  for (; t + NLE__LANES <= d; t += NLE__LANES)
    for (size_t l = 0; l < NLE__LANES; l++) {
      double u = (double)a[t + l] - (double)b[t + l];
      lane[l] += u * u;
    }
  for (size_t l = 0; t + l < d; l++) {
    double u = (double)a[t + l] - (double)b[t + l];
    lane[l] += u * u;
  }
  return (float)nle__lanes_total(lane);
}

/* knn_ring.c: the searches on rows shared out over ranks (comm.h), Y
 * being this rank's rows of rows->n and the graphs this rank's rows with
 * global column indices, the same bits as alone. The exact search and the
 * re-ranking pass the rows around a ring. */
/* The bytes of rows one piece of the ranks' ring carries (knn_ring.c). */
extern size_t nle__ring_piece_bytes;
nle_status nle__knn_exact_ring(nle_ctx *ctx, const nle_matf *Y, const nle__rows *rows, int k, nle_csr **graph);
nle_status nle__knn_rerank_ring(nle_ctx *ctx, const nle_matf *Y, const nle__rows *rows, const nle_csr *cand, int k,
                                nle_csr **graph);
/* Rows [begin, end) of A as a matrix of their own (the same columns). */
nle_status nle__csr_rows(nle_ctx *ctx, const nle_csr *A, size_t begin, size_t end, nle_csr **out);

#endif
