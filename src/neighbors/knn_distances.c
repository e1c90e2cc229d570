/* knn_distances.c — neighbourhood graphs from precomputed distances: a
 * dense N x N distance matrix (each row's k nearest, or every point within
 * a radius), or a sparse graph of distances (its rows as the
 * neighbourhoods). What the spectral commands take with --distances. */
#include "../core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The entries of a distance matrix: finite, >= 0, zero diagonal, symmetric
 * to 1e-6 relative; names the first that is not. */
static nle_status check_dense(nle_ctx *ctx, const nle_matf *D, const char *what) {
  size_t n = D->rows;
  if (D->cols != n) return nle__fail(ctx, NLE_ERR_ARG, "%s: %zu x %zu, not square", what, D->rows, D->cols);
  if (n < 2) return nle__fail(ctx, NLE_ERR_ARG, "%s: %zu points; at least 2 are needed", what, n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      float v = D->data[i * n + j], t = D->data[j * n + i];
      if (!isfinite(v) || v < 0)
        return nle__fail(ctx, NLE_ERR_VALUE, "%s: row %zu, column %zu is %g, not a finite value >= 0", what, i, j,
                         (double)v);
      if (i == j && v != 0)
        return nle__fail(ctx, NLE_ERR_VALUE, "%s: row %zu, column %zu (the diagonal) is %g, not 0", what, i, i, (double)v);
      if (j > i && fabsf(v - t) > 1e-6f * fmaxf(fabsf(v), fabsf(t)))
        return nle__fail(ctx, NLE_ERR_VALUE, "%s: not symmetric: row %zu, column %zu is %g but row %zu, column %zu is %g",
                         what, i, j, (double)v, j, i, (double)t);
    }
  return NLE_OK;
}

static int cmp_pair(const void *a, const void *b) { return nle__pair_cmp(a, b); }

nle_status nle_knn_from_distances(nle_ctx *ctx, const nle_matf *D, int k, double radius, nle_csr **graph) {
  *graph = NULL;
  nle_status s = check_dense(ctx, D, "distance matrix");
  if (s) return s;
  size_t n = D->rows;
  if (!(radius > 0) && (k < 1 || (size_t)k >= n))
    return nle__fail(ctx, NLE_ERR_ARG, "distance matrix: {@neighbors=%d} neighbours of %zu points (1 <= k < N)", k,
                     n);
  nle__pair *row = nle__malloc(ctx, n * sizeof(nle__pair), "a row of distances");
  int64_t *count = nle__calloc(ctx, n + 1, sizeof(int64_t), "the neighbourhood graph");
  if (!row || !count) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < n; i++) { /* how many each row keeps */
    size_t m = 0;
    double nearest = INFINITY;
    for (size_t j = 0; j < n; j++)
      if (j != i) {
        nearest = fmin(nearest, D->data[i * n + j]);
        m += radius > 0 ? D->data[i * n + j] <= radius : 1;
      }
    count[i + 1] = count[i] + (int64_t)(radius > 0 ? m : (size_t)k);
    if (radius > 0 && m == 0)
      s = nle__fail(ctx, NLE_ERR_VALUE, "distance matrix: row %zu has no neighbour within {@radius=%g} (its nearest "
                    "is at %g)", i, radius, nearest);
  }
  if (!s) s = nle_csr_alloc(ctx, (int64_t)n, (int64_t)n, count[n], NLE_F32, graph);
  for (size_t i = 0; !s && i < n; i++) { /* by distance, ties by index, as the kNN searches */
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
      if (j != i) row[m++] = (nle__pair){D->data[i * n + j], (int64_t)j};
    qsort(row, m, sizeof *row, cmp_pair);
    (*graph)->rowptr[i + 1] = count[i + 1];
    for (int64_t q = count[i]; q < count[i + 1]; q++) {
      (*graph)->colind[q] = (int32_t)row[q - count[i]].i;
      ((float *)(*graph)->val)[q] = (float)(row[q - count[i]].d * row[q - count[i]].d);
    }
  }
  free(row);
  free(count);
  if (s) nle_csr_free(graph);
  return s;
}

nle_status nle_knn_from_sparse_distances(nle_ctx *ctx, const nle_csr *G, bool squared, nle_csr **graph) {
  *graph = NULL;
  nle_status s = nle_csr_validate(ctx, G);
  if (s) return s;
  if (G->rows != G->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "distance graph: %lld x %lld, not square", (long long)G->rows,
                     (long long)G->cols);
  int64_t n = G->rows, widest = 0, nnz = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t m = 0;
    for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1]; q++) {
      double v = nle_csr_value(G, q);
      if (!isfinite(v) || v < 0)
        return nle__fail(ctx, NLE_ERR_VALUE, "distance graph: row %lld, column %d is %g, not a finite value >= 0",
                         (long long)i, G->colind[q], v);
      m += G->colind[q] != i;
    }
    if (m == 0) return nle__fail(ctx, NLE_ERR_VALUE, "distance graph: row %lld has no neighbour", (long long)i);
    widest = m > widest ? m : widest;
    nnz += m;
  }
  nle__pair *row = nle__malloc(ctx, (size_t)widest * sizeof(nle__pair), "a row of distances");
  s = row ? nle_csr_alloc(ctx, n, n, nnz, NLE_F32, graph) : NLE_ERR_NOMEM;
  for (int64_t i = 0, at = 0; !s && i < n; i++) {
    size_t m = 0;
    for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1]; q++)
      if (G->colind[q] != i) row[m++] = (nle__pair){nle_csr_value(G, q), G->colind[q]};
    qsort(row, m, sizeof *row, cmp_pair);
    for (size_t a = 0; a < m; a++, at++) {
      (*graph)->colind[at] = (int32_t)row[a].i;
      ((float *)(*graph)->val)[at] = (float)(squared ? row[a].d : row[a].d * row[a].d);
    }
    (*graph)->rowptr[i + 1] = at;
  }
  free(row);
  if (s) nle_csr_free(graph);
  return s;
}
