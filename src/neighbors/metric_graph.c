/* metric_graph.c — an input's neighbourhood graph as its metric reads it
 * (what the estimator and the tool's commands share), and the test that
 * keeps a distance matrix from being embedded as points. */
#include "../core/internal.h"

#include <math.h>

nle_status nle_metric_graph(nle_ctx *ctx, nle_metric metric, const nle_matf *Y, const nle_csr *S, int k,
                            nle_knn_method method, const nle_knn_approx_opts *approx, nle_csr **graph,
                            nle_knn_method *used) {
  if (!graph || !Y == !S) return nle__fail(ctx, NLE_ERR_ARG, "metric graph: give exactly one of Y and S");
  *graph = NULL;
  if (used) *used = NLE_KNN_AUTO;
  switch (metric) {
  case NLE_METRIC_EUCLIDEAN:
  case NLE_METRIC_COSINE:
  case NLE_METRIC_CORRELATION:
    return Y ? nle_knn_metric(ctx, Y, k, metric, method, approx, graph, used)
             : nle_knn_sparse(ctx, S, k, metric, method, approx, graph, used);
  case NLE_METRIC_PRECOMPUTED:
    return Y ? nle_knn_from_distances(ctx, Y, k, 0, graph) : nle_knn_from_sparse_distances(ctx, S, false, graph);
  case NLE_METRIC_AFFINITIES:
  case NLE_METRIC_COUNT: break;
  }
  return nle__fail(ctx, NLE_ERR_ARG, "metric graph: metric %s gives no distances to search", nle_metric_name(metric));
}

bool nle_looks_like_distances(const nle_matf *Y) {
  if (!Y || Y->rows != Y->cols || Y->rows < 3) return false;
  size_t n = Y->rows;
  for (size_t i = 0; i < n; i++) {
    if (Y->data[i * n + i] != 0) return false;
    for (size_t j = i + 1; j < n; j++) {
      float a = Y->data[i * n + j], b = Y->data[j * n + i];
      if (!(a >= 0) || !(b >= 0) || fabsf(a - b) > 1e-6f * fmaxf(a, b)) return false;
    }
  }
  return true;
}
