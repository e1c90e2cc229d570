/* clustering.c — clustering error against reference labels (SPEC G06-9):
 * the best one-to-one matching of clusters to classes, found by the
 * Hungarian algorithm (Kuhn 1955, Munkres 1957; here the O(n^3) form with
 * row and column potentials and augmenting shortest paths), and the
 * majority class of each cluster. */
#include "metrics_internal.h"

#include <math.h>
#include <stdlib.h>

/* The assignment of rows to columns of the n x n cost matrix C (row-major)
 * with the least total cost: col_of[row]. Potentials u, v and the shortest
 * augmenting path from each new row (Jonker-Volgenant style relaxation). */
static nle_status hungarian(nle_ctx *ctx, const double *C, size_t n, size_t *col_of) {
  double *u = nle__calloc(ctx, n + 1, sizeof(double), "the matching"), *v = nle__calloc(ctx, n + 1, sizeof(double), "the matching");
  double *minv = nle__malloc(ctx, (n + 1) * sizeof(double), "the matching");
  size_t *p = nle__calloc(ctx, n + 1, sizeof(size_t), "the matching"), *way = nle__calloc(ctx, n + 1, sizeof(size_t), "the matching");
  char *used = nle__malloc(ctx, n + 1, "the matching");
  nle_status s = u && v && minv && p && way && used ? NLE_OK : NLE_ERR_NOMEM;
  /* 1-based: p[j] is the row matched to column j, column 0 a sentinel. */
  for (size_t i = 1; !s && i <= n; i++) {
    p[0] = i;
    size_t j0 = 0;
    for (size_t j = 0; j <= n; j++) minv[j] = INFINITY, used[j] = 0;
    do {
      used[j0] = 1;
      size_t i0 = p[j0], j1 = 0;
      double delta = INFINITY;
      for (size_t j = 1; j <= n; j++)
        if (!used[j]) {
          double cur = C[(i0 - 1) * n + (j - 1)] - u[i0] - v[j];
          if (cur < minv[j]) minv[j] = cur, way[j] = j0;
          if (minv[j] < delta) delta = minv[j], j1 = j;
        }
      for (size_t j = 0; j <= n; j++)
        if (used[j]) u[p[j]] += delta, v[j] -= delta;
        else minv[j] -= delta;
      j0 = j1;
    } while (p[j0] != 0);
    do {
      size_t j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0);
  }
  for (size_t j = 1; !s && j <= n; j++) col_of[p[j] - 1] = j - 1;
  free(u);
  free(v);
  free(minv);
  free(p);
  free(way);
  free(used);
  return s;
}

nle_status nle_clustering_error(nle_ctx *ctx, const int32_t *labels, const int32_t *truth, size_t n, double *matched,
                                double *majority) {
  if (n == 0) return nle__fail(ctx, NLE_ERR_ARG, "clustering error: no points");
  /* both as classes (nle_labels_encode): any integers, -1 a class like any other */
  int32_t *lc = nle__malloc(ctx, n * sizeof(int32_t), "the clusters"), *tc = nle__malloc(ctx, n * sizeof(int32_t), "the classes");
  int32_t kc = 0, kt = 0;
  nle_status s = lc && tc ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle_labels_encode(ctx, "clustering error: the clusters", labels, n, lc, &kc, NULL);
  if (!s) s = nle_labels_encode(ctx, "clustering error: the reference labels", truth, n, tc, &kt, NULL);
  size_t m = (size_t)(kc > kt ? kc : kt); /* square: absent clusters or classes count 0 */
  if (!s) s = nle__check_memory(ctx, (double)m * (double)m * 2 * sizeof(double), "the contingency table");
  double *count = s ? NULL : nle__calloc(ctx, m * m, sizeof(double), "the contingency table");
  double *cost = s ? NULL : nle__malloc(ctx, m * m * sizeof(double), "the contingency table");
  size_t *col_of = s ? NULL : nle__malloc(ctx, m * sizeof(size_t), "the matching");
  if (!s && (!count || !cost || !col_of)) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < n; i++) count[(size_t)lc[i] * m + (size_t)tc[i]] += 1.0;
  double best = 0.0, maj = 0.0;
  for (size_t a = 0; !s && a < m * m; a++) cost[a] = -count[a];
  if (!s) s = hungarian(ctx, cost, m, col_of);
  for (size_t c = 0; !s && c < m; c++) {
    best += count[c * m + col_of[c]];
    double top = 0.0;
    for (size_t t = 0; t < m; t++) top = fmax(top, count[c * m + t]);
    maj += top;
  }
  if (!s) {
    *matched = 1.0 - best / (double)n;
    *majority = 1.0 - maj / (double)n;
  }
  free(count);
  free(cost);
  free(col_of);
  free(lc), free(tc);
  return s;
}
