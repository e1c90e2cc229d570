/* knn_sparse_base.c — what both sparse searches (knn_sparse_exact.c,
 * knn_sparse_approx.c) build on: the rows' column lists and their walk
 * order. Its own file, below the searches and the choice between them
 * (knn_sparse.c), so that calls go one way. */
#include "knn_sparse.h"

#include <stdlib.h>

void nle__sp_transpose_free(sp_transpose *T) {
  free(T->ptr);
  free(T->row);
  free(T->val);
}

nle_status nle__sp_transpose_build(nle_ctx *ctx, const sp_rows *R, sp_transpose *T) {
  int64_t nnz = R->rowptr[R->n];
  T->ptr = nle__calloc(ctx, (size_t)R->d + 2, sizeof(int64_t), "the column lists");
  T->row = nle__malloc(ctx, (size_t)(nnz ? nnz : 1) * sizeof(int32_t), "the column lists");
  T->val = nle__malloc(ctx, (size_t)(nnz ? nnz : 1) * sizeof(double), "the column lists");
  if (!T->ptr || !T->row || !T->val) return NLE_ERR_NOMEM;
  for (int64_t p = 0; p < nnz; p++) T->ptr[R->colind[p] + 2]++;
  for (int64_t c = 0; c < R->d; c++) T->ptr[c + 2] += T->ptr[c + 1];
  /* ptr[c + 1] is column c's next free slot; after filling, ptr[c] is its
   * start. Rows in order: each column's list sorted by row. */
  for (int64_t i = 0; i < R->n; i++)
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) {
      int64_t at = T->ptr[R->colind[p] + 1]++;
      T->row[at] = (int32_t)i;
      T->val[at] = R->w[p];
    }
  return NLE_OK;
}

static int pair_cmp_q(const void *a, const void *b) { return nle__pair_cmp(a, b); }

int32_t *nle__sp_walk_order(nle_ctx *ctx, const sp_rows *R, const double *key) {
  nle__pair *tmp = nle__malloc(ctx, (size_t)R->n * sizeof *tmp, "the walk order");
  int32_t *order = nle__malloc(ctx, (size_t)R->n * sizeof *order, "the walk order");
  if (tmp && order) {
    for (int64_t i = 0; i < R->n; i++) tmp[i] = (nle__pair){key[i], i};
    qsort(tmp, (size_t)R->n, sizeof *tmp, pair_cmp_q);
    for (int64_t i = 0; i < R->n; i++) order[i] = (int32_t)tmp[i].i;
  } else {
    free(order);
    order = NULL;
  }
  free(tmp);
  return order;
}
