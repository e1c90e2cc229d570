/* symmetrize_rows.c — what the symmetrisation (P + P^T) / 2 needs of a
 * matrix whose rows are shared out over ranks (issue 38, docs/mpi.md; each
 * rank holds its canonical rows with global column indices): its rows of
 * P^T, by an all-to-all of the transposed entries, and its rows of P sorted
 * by column; and the canonical total of a matrix's values (alone too). The
 * merge in kernels.c then makes the same rows as alone. */
#include "affinity_internal.h"
#include "../core/comm.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  int32_t row, col; /* global: the entry (row, col) of P^T */
  double val;
} moved;

typedef struct {
  int32_t col;
  int64_t at; /* its place in the row: equal columns keep their order */
  double val;
} placed;

static inline int placed_greater(placed a, placed b) { return a.col > b.col || (a.col == b.col && a.at > b.at); }
NLE__DEFINE_SORT(placed_sort, placed, placed_greater)

static int owner_of(size_t j, size_t n, int ranks) {
  int r = 0;
  while (r + 1 < ranks && j >= nle__rank_rows(n, ranks, r + 1).begin) r++;
  return r;
}

/* The entries of this rank's rows, as entries of P^T, to the ranks holding
 * their rows: in rank order, and for each rank in the order of this rank's
 * rows. */
static nle_status send_transposed(nle_ctx *ctx, const nle_csr *P, const nle__rows *rows, void **recv,
                                  size_t *recv_offsets) {
  int ranks = nle__ranks(ctx);
  size_t *offsets = nle__calloc(ctx, 2 * (size_t)ranks + 1, sizeof(size_t), "the exchange");
  moved *send = nle__malloc(ctx, (size_t)(P->nnz ? P->nnz : 1) * sizeof(moved), "the exchange");
  int *owner = nle__malloc(ctx, (size_t)(P->nnz ? P->nnz : 1) * sizeof(int), "the exchange");
  nle_status s = nle__comm_agree(ctx, offsets && send && owner ? NLE_OK : NLE_ERR_NOMEM);
  size_t *bytes = offsets ? offsets + ranks + 1 : NULL;
  for (int64_t q = 0; !s && q < P->nnz; q++) {
    owner[q] = owner_of((size_t)P->colind[q], rows->n, ranks);
    offsets[owner[q] + 1]++;
  }
  for (int r = 0; !s && r < ranks; r++) offsets[r + 1] += offsets[r];
  for (int64_t i = 0; !s && i < P->rows; i++)
    for (int64_t q = P->rowptr[i]; q < P->rowptr[i + 1]; q++)
      send[offsets[owner[q]]++] = (moved){P->colind[q], (int32_t)(rows->mine.begin + (size_t)i), nle_csr_value(P, q)};
  for (int r = ranks; !s && r > 0; r--) offsets[r] = offsets[r - 1]; /* back to the starts */
  if (!s) offsets[0] = 0;
  for (int r = 0; !s && r < ranks; r++) {
    bytes[r] = (offsets[r + 1] - offsets[r]) * sizeof(moved);
    offsets[r] *= sizeof(moved);
  }
  if (!s) s = nle__comm_alltoallv(ctx, send, offsets, bytes, recv, recv_offsets);
  free(offsets);
  free(send);
  free(owner);
  return s;
}

nle_status nle__csr_transpose_rows(nle_ctx *ctx, const nle_csr *P, const nle__rows *rows, nle_csr **T) {
  *T = NULL;
  int ranks = nle__ranks(ctx);
  void *recv = NULL;
  size_t *recv_offsets = nle__malloc(ctx, ((size_t)ranks + 1) * sizeof(size_t), "the exchange");
  nle_status s = nle__comm_agree(ctx, recv_offsets ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = send_transposed(ctx, P, rows, &recv, recv_offsets);
  size_t got = s ? 0 : recv_offsets[ranks] / sizeof(moved), mine = rows->mine.end - rows->mine.begin;
  if (!s) s = nle_csr_alloc(ctx, (int64_t)mine, P->cols, (int64_t)got, NLE_F64, T);
  const moved *in = recv;
  /* a stable counting sort by row: the senders' rows came in rank order,
   * each in order, so every row's columns ascend */
  for (size_t e = 0; !s && e < got; e++) (*T)->rowptr[(size_t)in[e].row - rows->mine.begin + 1]++;
  for (size_t i = 0; !s && i < mine; i++) (*T)->rowptr[i + 1] += (*T)->rowptr[i];
  for (size_t e = 0; !s && e < got; e++) {
    int64_t at = (*T)->rowptr[(size_t)in[e].row - rows->mine.begin]++;
    (*T)->colind[at] = in[e].col;
    ((double *)(*T)->val)[at] = in[e].val;
  }
  for (size_t i = mine; !s && i > 0; i--) (*T)->rowptr[i] = (*T)->rowptr[i - 1];
  if (!s) (*T)->rowptr[0] = 0;
  free(recv);
  free(recv_offsets);
  return nle__comm_agree(ctx, s);
}

nle_status nle__csr_sorted_rows(nle_ctx *ctx, const nle_csr *P, nle_csr **S) {
  int64_t widest = 0;
  for (int64_t i = 0; i < P->rows; i++)
    widest = P->rowptr[i + 1] - P->rowptr[i] > widest ? P->rowptr[i + 1] - P->rowptr[i] : widest;
  placed *row = nle__malloc(ctx, (size_t)(widest ? widest : 1) * sizeof(placed), "a row");
  nle_status s = row ? nle_csr_alloc(ctx, P->rows, P->cols, P->nnz, NLE_F64, S) : NLE_ERR_NOMEM;
  if (!s) memcpy((*S)->rowptr, P->rowptr, ((size_t)P->rows + 1) * sizeof(int64_t));
  for (int64_t i = 0; !s && i < P->rows; i++) {
    int64_t len = P->rowptr[i + 1] - P->rowptr[i];
    for (int64_t t = 0; t < len; t++)
      row[t] = (placed){P->colind[P->rowptr[i] + t], t, nle_csr_value(P, P->rowptr[i] + t)};
    placed_sort(row, (size_t)len);
    for (int64_t t = 0; t < len; t++) {
      (*S)->colind[P->rowptr[i] + t] = row[t].col;
      ((double *)(*S)->val)[P->rowptr[i] + t] = row[t].val;
    }
  }
  free(row);
  return nle__comm_agree(ctx, s);
}

nle_status nle__csr_rows_total(nle_ctx *ctx, const nle_csr *W, double *total) {
  size_t blocks = ((size_t)W->rows + NLE__RANK_ROW_BLOCK - 1) / NLE__RANK_ROW_BLOCK;
  double *partial = nle__calloc(ctx, blocks ? blocks : 1, sizeof(double), "the total");
  nle_status s = nle__comm_agree(ctx, partial ? NLE_OK : NLE_ERR_NOMEM);
  for (size_t b = 0; !s && b < blocks; b++) {
    size_t i1 = (b + 1) * NLE__RANK_ROW_BLOCK < (size_t)W->rows ? (b + 1) * NLE__RANK_ROW_BLOCK : (size_t)W->rows;
    for (int64_t q = W->rowptr[b * NLE__RANK_ROW_BLOCK]; q < W->rowptr[i1]; q++) partial[b] += nle_csr_value(W, q);
  }
  if (!s) s = nle__comm_sum_blocks(ctx, partial, blocks, 1, total);
  free(partial);
  return s;
}
