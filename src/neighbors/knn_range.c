/* knn_range.c — the check every kNN search makes first: the points' squared
 * distances stay in single precision's range. Its own file, below the
 * searches (knn_exact.c, knn_approx.c, knn_kdtree.c, knn_sparse.c) and the
 * choice between them (knn_graph.c), so that calls go one way. */
#include "neighbors_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* Distances are single precision, from |a|^2 + |b|^2 - 2 a.b of centred
 * rows: beyond FLT_MAX / 4 that sum overflows (every distance inf, the
 * neighbours arbitrary); below 1e-34 the nearest squared distances are
 * denormal (imprecise) or zero and the data looks constant. */
bool nle__knn_range_ok(double max_sq) { return !(max_sq > FLT_MAX / 4) && !(max_sq > 0.0 && max_sq < 1e-34); }

enum { RANGE_BLOCK = 4096 };

/* The test needs the largest squared distance from the mean; an upper bound
 * from each column's extremes, sum_j max_i (y_ij - m_j)^2, comes from the
 * same single pass as the mean and is at most d times that distance, so it
 * decides nearly every set without a second pass. The pass runs over
 * blocks of rows in parallel, each block its own column sums, added in
 * block order: the same mean for any thread count. (At a million 784-d
 * points the two serial passes read 6 GB.) */
nle_status nle__knn_check_range(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q) {
  size_t n = Y->rows, d = Y->cols, nby = (n + RANGE_BLOCK - 1) / RANGE_BLOCK;
  size_t nb = nby + (Q ? (Q->rows + RANGE_BLOCK - 1) / RANGE_BLOCK : 0), cells = (nb ? nb : 1) * (d ? d : 1);
  double *mean = nle__calloc(ctx, d ? d : 1, sizeof *mean, "the data's mean");
  double *part = nle__malloc(ctx, cells * sizeof(double), "the data's range");
  float *lo = nle__malloc(ctx, 2 * cells * sizeof(float), "the data's range");
  if (!mean || !part || !lo) {
    free(mean);
    free(part);
    free(lo);
    return NLE_ERR_NOMEM;
  }
  float *hi = lo + cells;
#pragma omp parallel for schedule(dynamic) num_threads(nle__threads_for(ctx, (double)nb * RANGE_BLOCK * (double)d))
  for (size_t b = 0; b < nb; b++) {
    const nle_matf *M = b < nby ? Y : Q;
    size_t r0 = (b < nby ? b : b - nby) * RANGE_BLOCK, r1 = r0 + RANGE_BLOCK < M->rows ? r0 + RANGE_BLOCK : M->rows;
    double *sum = part + b * d;
    float *l = lo + b * d, *h = hi + b * d;
    for (size_t j = 0; j < d; j++) sum[j] = 0.0, l[j] = INFINITY, h[j] = -INFINITY;
    for (size_t i = r0; i < r1; i++) {
      const float *row = M->data + i * d;
      for (size_t j = 0; j < d; j++) {
        float v = row[j];
        sum[j] += v;
        l[j] = v < l[j] ? v : l[j];
        h[j] = v > h[j] ? v : h[j];
      }
    }
  }
  for (size_t b = 0; b < nby; b++)
    for (size_t j = 0; j < d; j++) mean[j] += part[b * d + j];
  for (size_t j = 0; j < d; j++) mean[j] /= (double)(n ? n : 1);
  double bound = 0.0;
  for (size_t j = 0; j < d; j++) {
    double far = 0.0;
    for (size_t b = 0; b < nb; b++) {
      double u = (double)lo[b * d + j] - mean[j], v = (double)hi[b * d + j] - mean[j];
      far = fmax(far, fmax(u * u, v * v));
    }
    bound += far;
  }
  free(part);
  free(lo);
  /* the largest distance is within [bound / d, bound]: no second pass when
   * both ends pass (a NaN bound takes the exact pass, as before) */
  if (bound == 0.0 || (bound <= FLT_MAX / 4 && bound / (double)(d ? d : 1) >= 1e-34)) {
    free(mean);
    return NLE_OK;
  }
  double top = 0.0;
  size_t where = 0;
  const char *set = "point";
  for (int pass = 0; pass < (Q ? 2 : 1); pass++) {
    const nle_matf *M = pass ? Q : Y;
    for (size_t i = 0; i < M->rows; i++) {
      double sq = 0.0;
      for (size_t j = 0; j < d; j++) {
        double c = (double)M->data[i * d + j] - mean[j];
        sq += c * c;
      }
      if (sq > top) {
        top = sq;
        where = i;
        set = pass ? "query point" : "point";
      }
    }
  }
  free(mean);
  if (nle__knn_range_ok(top)) return NLE_OK;
  if (top > FLT_MAX / 4)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "%s in row %zu lies %.3g from the data's mean: squared distances overflow single precision "
                     "(3.4e38); scale the data down (standardise it, or divide it by a constant)",
                     set, where + 1, sqrt(top));
  return nle__fail(ctx, NLE_ERR_VALUE,
                     "every point lies within %.3g of the data's mean: squared distances underflow single precision; "
                     "scale the data up (standardise it, or multiply it by a constant)",
                     sqrt(top));
  return NLE_OK;
}
