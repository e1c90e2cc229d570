/* knn_metric.c — what the rows of an input hold and how near two of them
 * are (nle_metric), and the kNN graph of dense rows under the cosine and
 * correlation distances. Both are Euclidean distances of rows made unit
 * (correlation: centred first): |a/|a| - b/|b||^2 = 2 (1 - cos(a, b)), so
 * the rows are normalised once and the existing searches (exact, approximate
 * and the choice between them) run unchanged; their squared distances are
 * then 2 (1 - cos) and 2 (1 - r). Sparse rows: knn_sparse.c. */
#include "metric.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


NLE__ENUM_NAMES(nle_metric_name, nle_metric_parse, nle_metric, NLE_METRIC_MAP, NLE_METRIC_COUNT, false)

bool nle__metric_of_rows(nle_metric metric) {
  return metric == NLE_METRIC_EUCLIDEAN || metric == NLE_METRIC_COSINE || metric == NLE_METRIC_CORRELATION;
}

nle_status nle__metric_check(nle_ctx *ctx, nle_metric metric, const char *what) {
  if (nle__metric_of_rows(metric)) return NLE_OK;
  if (metric == NLE_METRIC_PRECOMPUTED || metric == NLE_METRIC_AFFINITIES)
    return nle__fail(ctx, NLE_ERR_ARG,
                     "%s: the metric '%s' says the input is not rows of points (a graph comes from "
                     "nle_knn_from_distances or nle_knn_from_sparse_distances, or is the affinities themselves)",
                     what, nle_metric_name(metric));
  return nle__fail(ctx, NLE_ERR_ARG, "%s: metric %d is not euclidean, cosine or correlation", what, (int)metric);
}

nle_status nle_metric_rows(nle_ctx *ctx, const nle_matf *Y, nle_metric metric, nle_matf **out) {
  *out = NULL;
  nle_status s = nle__metric_check(ctx, metric, "metric rows");
  if (s) return s;
  size_t n = Y->rows, d = Y->cols;
  s = nle_matf_alloc(ctx, n, d, out);
  if (s) return s;
  float *o = (*out)->data;
  for (size_t i = 0; i < n && !s; i++) {
    const float *y = Y->data + i * d;
    double mean = 0.0, sq = 0.0;
    for (size_t j = 0; j < d; j++) {
      if (!isfinite(y[j])) {
        s = nle__fail(ctx, NLE_ERR_VALUE, "row %zu, column %zu of the data is %g: the %s distance needs finite values",
                      i, j, (double)y[j], nle_metric_name(metric));
        break;
      }
      mean += y[j];
    }
    if (s) break;
    mean = metric == NLE_METRIC_CORRELATION ? mean / (double)(d ? d : 1) : 0.0;
    for (size_t j = 0; j < d; j++) sq += ((double)y[j] - mean) * ((double)y[j] - mean);
    if (metric == NLE_METRIC_EUCLIDEAN) {
      memcpy(o + i * d, y, d * sizeof(float));
      continue;
    }
    if (!(sq > 0.0)) {
      bool zero = true;
      for (size_t j = 0; j < d && zero; j++) zero = y[j] == 0.0f;
      s = zero ? nle__fail(ctx, NLE_ERR_VALUE, "row %zu of the data is all zeros: its %s distance is undefined", i,
                           nle_metric_name(metric))
               : nle__fail(ctx, NLE_ERR_VALUE,
                           "row %zu of the data is constant: its correlation distance is undefined", i);
      break;
    }
    double scale = 1.0 / sqrt(sq);
    for (size_t j = 0; j < d; j++) o[i * d + j] = (float)(((double)y[j] - mean) * scale);
  }
  if (s) nle_matf_free(out);
  return s;
}

nle_status nle_knn_metric(nle_ctx *ctx, const nle_matf *Y, int k, nle_metric metric, nle_knn_method method,
                          const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used) {
  *graph = NULL;
  nle_status s = nle__metric_check(ctx, metric, "kNN");
  if (s) return s;
  if (metric == NLE_METRIC_EUCLIDEAN) return nle_knn_graph(ctx, Y, k, method, approx, graph, used);
  /* Refused here (before the copy) as the searches would refuse it. */
  if (method != NLE_KNN_AUTO && method != NLE_KNN_EXACT && method != NLE_KNN_APPROX)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN graph: method %d is not auto, exact or approx", (int)method);
  nle_matf *unit = NULL;
  s = nle_metric_rows(ctx, Y, metric, &unit);
  if (!s) s = nle_knn_graph(ctx, unit, k, method, approx, graph, used);
  nle_matf_free(&unit);
  return s;
}
