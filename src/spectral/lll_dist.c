/* lll_dist.c — Locally Linear Landmarks' reduced pencil over ranks (issue
 * 38, docs/mpi_spectral.md; dissertation eq. 4.5). Each rank holds a block
 * of the points' rows, so of Z's rows and of W's rows (global columns).
 * P = alpha W Z needs the rows of Z that this rank's rows of W reach: that
 * halo is fetched from their ranks (one request, one reply). Then A~ =
 * Z^T (P + diag Z) and B~ = Z^T diag Z sum one term per point and entry;
 * those sums run over every rank's points, so their order would follow the
 * partition. Each term is rounded on its own to a fixed point that every
 * rank derives alike (2^-scale, from a bound on each row's sum of |terms|
 * added by nle__comm_sum_blocks), and the integer units are added exactly:
 * any number of ranks, one included, gives the same pencil bit for bit.
 * The entries' units are summed over ranks by landmark rows (each rank
 * merging a share of the rows), then every rank holds the whole L x L
 * pencil and solves it alike. The error of an entry is half a unit per
 * term: with K_W = 200, K_Z = 10 and a million points, about 1e-13 of its
 * row's largest sum. */
#include "method.h"
#include "spectral_internal.h"

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ascending_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Bytes rounded up to whole 8-byte words: parts of a message that holds
 * int64 and double values after int32 ones keep their alignment. */
static size_t words(size_t bytes) { return (bytes + 7) / 8 * 8; }

/* ------------------------------------------------------------------------ */
/* P = alpha W Z: this rank's rows of W, Z's rows where W's columns lead      */
/* ------------------------------------------------------------------------ */

/* Z's rows for the columns of W outside this rank's rows [begin, end),
 * fetched from their ranks: *Zh holds this rank's rows of Z and then the
 * halo's (ascending point index), *halo those points (h of them). */
static nle_status fetch_halo(nle_ctx *ctx, const nle_csr *Z, int kz, const nle__rows *rows, const nle_csr *W,
                             nle_csr **Zh, int32_t **halo, size_t *h) {
  size_t n = (size_t)Z->rows, begin = rows->mine.begin, end = rows->mine.end;
  int ranks = nle__ranks(ctx);
  *Zh = NULL, *h = 0;
  size_t R = ranks > 1 ? (size_t)ranks : 1;
  int32_t *ids = nle__malloc(ctx, ((size_t)W->nnz + 1) * sizeof(int32_t), "LLL's halo");
  /* per rank: the requests' offsets and sizes, where the requests to this
   * rank landed, the replies' offsets and sizes, where the replies landed */
  size_t *sent_at = nle__calloc(ctx, 6 * R + 2, sizeof(size_t), "LLL's halo");
  size_t *sent = sent_at ? sent_at + R : NULL, *got_at = sent ? sent + R : NULL;
  size_t *reply_at = got_at ? got_at + R + 1 : NULL, *reply_size = reply_at ? reply_at + R : NULL;
  size_t *back_at = reply_size ? reply_size + R : NULL;
  nle_status s = ids && sent_at ? NLE_OK : NLE_ERR_NOMEM;
  size_t count = 0;
  for (int64_t q = 0; !s && q < W->nnz; q++)
    if ((size_t)W->colind[q] < begin || (size_t)W->colind[q] >= end) ids[count++] = W->colind[q];
  if (!s) qsort(ids, count, sizeof *ids, ascending_int32);
  size_t distinct = 0;
  for (size_t i = 0; i < count; i++)
    if (!distinct || ids[i] != ids[distinct - 1]) ids[distinct++] = ids[i];
  /* ascending points are grouped by rank in rank order */
  for (size_t i = 0; !s && i < distinct; i++) sent[nle__rank_of_row(rows->n, ranks, (size_t)ids[i])] += sizeof(int32_t);
  for (size_t r = 1; !s && r < R; r++) sent_at[r] = sent_at[r - 1] + sent[r - 1];
  void *asked = NULL, *reply = NULL, *got = NULL;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_alltoallv(ctx, ids, sent_at, sent, &asked, got_at);
  /* each asked row: its kz values (double), then its kz columns (int32) */
  size_t row_bytes = (size_t)kz * (sizeof(double) + sizeof(int32_t)), total = 0;
  for (size_t r = 0; !s && r < R; r++) total += words((got_at[r + 1] - got_at[r]) / sizeof(int32_t) * row_bytes);
  if (!s && !(reply = nle__malloc(ctx, total + 8, "LLL's halo"))) s = NLE_ERR_NOMEM;
  size_t at = 0;
  for (size_t r = 0; !s && r < R; r++) {
    size_t c = (got_at[r + 1] - got_at[r]) / sizeof(int32_t);
    const int32_t *want = (const int32_t *)((const char *)asked + got_at[r]);
    double *val = (double *)((char *)reply + at);
    int32_t *col = (int32_t *)(val + c * (size_t)kz);
    for (size_t i = 0; i < c; i++) {
      size_t local = (size_t)want[i] - begin;
      memcpy(val + i * kz, (const double *)Z->val + local * kz, (size_t)kz * sizeof(double));
      memcpy(col + i * kz, Z->colind + local * kz, (size_t)kz * sizeof(int32_t));
    }
    reply_at[r] = at, reply_size[r] = words(c * row_bytes);
    at += reply_size[r];
  }
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_alltoallv(ctx, reply, reply_at, reply_size, &got, back_at);
  if (!s) s = nle_csr_alloc(ctx, (int64_t)(n + distinct), Z->cols, (int64_t)((n + distinct) * (size_t)kz), NLE_F64, Zh);
  if (!s) {
    for (size_t i = 0; i <= n + distinct; i++) (*Zh)->rowptr[i] = (int64_t)(i * (size_t)kz);
    memcpy((*Zh)->colind, Z->colind, n * (size_t)kz * sizeof(int32_t));
    memcpy((*Zh)->val, Z->val, n * (size_t)kz * sizeof(double));
    size_t row = n; /* the replies in rank order: the halo ascending */
    for (size_t r = 0; r < R; r++) {
      size_t c = sent[r] / sizeof(int32_t);
      const double *val = (const double *)((const char *)got + back_at[r]);
      const int32_t *col = (const int32_t *)(val + c * (size_t)kz);
      memcpy((double *)(*Zh)->val + row * kz, val, c * (size_t)kz * sizeof(double));
      memcpy((*Zh)->colind + row * kz, col, c * (size_t)kz * sizeof(int32_t));
      row += c;
    }
  }
  free(asked), free(reply), free(got), free(sent_at);
  if (s) {
    free(ids);
    nle_csr_free(Zh);
    return s;
  }
  *halo = ids, *h = distinct;
  return NLE_OK;
}

/* P = alpha W Z for this rank's rows of W: W's columns renumbered into
 * Zh's rows (this rank's, then the halo's), the product lll.c forms. */
static nle_status product_rows(nle_ctx *ctx, const nle_csr *Z, int kz, const nle__rows *rows, const nle_csr *W,
                               double alpha, nle_csr **P) {
  nle_csr *Zh = NULL;
  int32_t *halo = NULL;
  size_t h = 0, n = (size_t)Z->rows, begin = rows->mine.begin;
  nle_status s = fetch_halo(ctx, Z, kz, rows, W, &Zh, &halo, &h);
  nle_csr Wr = *W; /* W's rows and values, its columns renumbered */
  Wr.cols = (int64_t)(n + h);
  Wr.colind = s ? NULL : nle__malloc(ctx, ((size_t)W->nnz + 1) * sizeof(int32_t), "LLL's halo");
  if (!s && !Wr.colind) s = NLE_ERR_NOMEM;
  for (int64_t q = 0; !s && q < W->nnz; q++) {
    size_t m = (size_t)W->colind[q];
    if (m >= begin && m < begin + n) {
      Wr.colind[q] = (int32_t)(m - begin);
    } else {
      const int32_t *at = bsearch(&W->colind[q], halo, h, sizeof *halo, ascending_int32);
      Wr.colind[q] = (int32_t)(n + (size_t)(at - halo));
    }
  }
  if (!s) s = nle__lll_product(ctx, Zh, &Wr, alpha, P);
  free(Wr.colind), free(halo);
  nle_csr_free(&Zh);
  return s;
}

/* ------------------------------------------------------------------------ */
/* Z^T (P + diag Z) summed over ranks in fixed point                          */
/* ------------------------------------------------------------------------ */

/* Landmark rows [first, end) whose units rank r merges. */
static size_t share_begin(size_t L, size_t R, size_t r) { return L * r / R; }

/* One rank's rows of an L x L matrix of units as a message: the rows'
 * lengths (int64), their units (int64), then their columns (int32). */
static size_t rows_bytes(const nle_csr *M, size_t a0, size_t a1) {
  size_t nnz = (size_t)(M->rowptr[a1] - M->rowptr[a0]);
  return words((a1 - a0) * sizeof(int64_t) + nnz * (sizeof(int64_t) + sizeof(int32_t)));
}

static void rows_pack(const nle_csr *M, size_t a0, size_t a1, char *out) {
  size_t nnz = (size_t)(M->rowptr[a1] - M->rowptr[a0]);
  int64_t *len = (int64_t *)out, *units = len + (a1 - a0);
  int32_t *col = (int32_t *)(units + nnz);
  for (size_t a = a0; a < a1; a++) len[a - a0] = M->rowptr[a + 1] - M->rowptr[a];
  memcpy(units, (const int64_t *)M->val + M->rowptr[a0], nnz * sizeof(int64_t));
  memcpy(col, M->colind + M->rowptr[a0], nnz * sizeof(int32_t));
}

/* The rows' (lengths, units, columns) views of a packed message of `rows`
 * rows. */
typedef struct {
  const int64_t *len, *units;
  const int32_t *col;
} packed_rows;

static packed_rows rows_view(const char *part, size_t rows) {
  packed_rows v = {(const int64_t *)part, NULL, NULL};
  size_t nnz = 0;
  for (size_t a = 0; a < rows; a++) nnz += (size_t)v.len[a];
  v.units = v.len + rows;
  v.col = (const int32_t *)(v.units + nnz);
  return v;
}

/* Every rank's units of the L x L matrix `mine` summed: each rank merges
 * its share of the rows from every rank's message (integers: exact), then
 * all shares are gathered on every rank into *total, in row order. */
static nle_status units_over_ranks(nle_ctx *ctx, const nle_csr *mine, nle_csr **total) {
  size_t L = (size_t)mine->rows;
  int ranks = nle__ranks(ctx);
  size_t R = ranks > 1 ? (size_t)ranks : 1, a0 = share_begin(L, R, (size_t)nle__rank(ctx)),
         a1 = share_begin(L, R, (size_t)nle__rank(ctx) + 1);
  size_t *send_at = nle__calloc(ctx, 3 * R + 2, sizeof(size_t), "LLL's pencil over ranks");
  size_t *send_bytes = send_at ? send_at + R : NULL, *recv_at = send_bytes ? send_bytes + R : NULL;
  nle_status s = send_at ? NLE_OK : NLE_ERR_NOMEM;
  size_t bytes = 0;
  for (size_t r = 0; !s && r < R; r++) {
    send_at[r] = bytes;
    send_bytes[r] = rows_bytes(mine, share_begin(L, R, r), share_begin(L, R, r + 1));
    bytes += send_bytes[r];
  }
  char *send = s ? NULL : nle__malloc(ctx, bytes + 8, "LLL's pencil over ranks");
  if (!s && !send) s = NLE_ERR_NOMEM;
  for (size_t r = 0; !s && r < R; r++) rows_pack(mine, share_begin(L, R, r), share_begin(L, R, r + 1), send + send_at[r]);
  void *recv = NULL;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_alltoallv(ctx, send, send_at, send_bytes, &recv, recv_at);
  free(send);
  /* this rank's share: each row merged over the ranks' parts, columns
   * ascending */
  packed_rows *from = s ? NULL : nle__malloc(ctx, R * sizeof *from, "LLL's pencil over ranks");
  int64_t *acc = s ? NULL : nle__malloc(ctx, (L + 1) * sizeof(int64_t), "LLL's pencil over ranks");
  int32_t *mark = s ? NULL : nle__malloc(ctx, (L + 1) * sizeof(int32_t), "LLL's pencil over ranks");
  int32_t *touched = s ? NULL : nle__malloc(ctx, (L + 1) * sizeof(int32_t), "LLL's pencil over ranks");
  size_t *cursor = s ? NULL : nle__calloc(ctx, R, sizeof(size_t), "LLL's pencil over ranks");
  if (!s && !(from && acc && mark && touched && cursor)) s = NLE_ERR_NOMEM;
  nle_csr *share = NULL;
  size_t nnz = 0;
  for (size_t r = 0; !s && r < R; r++) {
    from[r] = rows_view((const char *)recv + recv_at[r], a1 - a0);
    for (size_t a = 0; a < a1 - a0; a++) nnz += (size_t)from[r].len[a]; /* a bound: columns repeat */
  }
  if (!s) s = nle_csr_alloc(ctx, (int64_t)(a1 - a0), (int64_t)L, (int64_t)nnz, NLE_F64, &share);
  for (size_t c = 0; !s && c < L; c++) mark[c] = -1;
  int64_t kept = 0;
  for (size_t a = a0; !s && a < a1; a++) {
    size_t nt = 0;
    for (size_t r = 0; r < R; r++)
      for (int64_t t = 0; t < from[r].len[a - a0]; t++, cursor[r]++) {
        int32_t c = from[r].col[cursor[r]];
        if (mark[c] != (int32_t)a) mark[c] = (int32_t)a, acc[c] = 0, touched[nt++] = c;
        acc[c] += from[r].units[cursor[r]];
      }
    qsort(touched, nt, sizeof *touched, ascending_int32);
    for (size_t t = 0; t < nt; t++, kept++)
      share->colind[kept] = touched[t], ((int64_t *)share->val)[kept] = acc[touched[t]];
    share->rowptr[a - a0 + 1] = kept;
  }
  free(recv), free(from), free(acc), free(mark), free(touched), free(cursor);
  /* every share to every rank */
  size_t mine_bytes = s ? 0 : rows_bytes(share, 0, a1 - a0);
  char *part = s ? NULL : nle__malloc(ctx, mine_bytes + 8, "LLL's pencil over ranks");
  if (!s && !part) s = NLE_ERR_NOMEM;
  if (!s) rows_pack(share, 0, a1 - a0, part);
  nle_csr_free(&share);
  int64_t all_bytes = (int64_t)mine_bytes;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_sum_i64(ctx, &all_bytes, 1);
  char *all = s ? NULL : nle__malloc(ctx, (size_t)all_bytes + 8, "LLL's pencil over ranks");
  if (!s && !all) s = NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, part, mine_bytes, all, recv_at);
  free(part);
  size_t total_nnz = 0;
  for (size_t r = 0; !s && r < R; r++) {
    packed_rows v = rows_view(all + recv_at[r], share_begin(L, R, r + 1) - share_begin(L, R, r));
    for (size_t a = 0; a < share_begin(L, R, r + 1) - share_begin(L, R, r); a++) total_nnz += (size_t)v.len[a];
  }
  if (!s) s = nle_csr_alloc(ctx, (int64_t)L, (int64_t)L, (int64_t)total_nnz, NLE_F64, total);
  int64_t at = 0;
  for (size_t r = 0; !s && r < R; r++) {
    size_t b0 = share_begin(L, R, r), b1 = share_begin(L, R, r + 1);
    packed_rows v = rows_view(all + recv_at[r], b1 - b0);
    int64_t off = 0;
    for (size_t a = b0; a < b1; a++) {
      int64_t len = v.len[a - b0];
      memcpy((*total)->colind + at, v.col + off, (size_t)len * sizeof(int32_t));
      memcpy((int64_t *)(*total)->val + at, v.units + off, (size_t)len * sizeof(int64_t));
      at += len, off += len;
      (*total)->rowptr[a + 1] = at;
    }
  }
  free(all), free(send_at);
  return s;
}

/* out = Z^T (P + diag(diag) Z) (L x L, doubles), summed over every rank's
 * rows in fixed point. The unit: a bound on any row's sum of |terms|, from
 * per-block partials (NLE__RANK_ROW_BLOCK rows; nle__comm_sum_blocks), so
 * alike on every rank for any partition. */
static nle_status reduce_rows(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, const nle_csr *P, const double *diag,
                              nle_csr **out) {
  size_t n = (size_t)Z->rows, L = (size_t)Z->cols, blocks = (n + NLE__RANK_ROW_BLOCK - 1) / NLE__RANK_ROW_BLOCK;
  double *part = nle__calloc(ctx, (blocks ? blocks : 1) * L, sizeof(double), "LLL's pencil bound");
  double *bound = nle__malloc(ctx, L * sizeof(double), "LLL's pencil bound");
  nle_status s = part && bound ? NLE_OK : NLE_ERR_NOMEM;
  const double *zv = Z->val;
  for (size_t i = 0; !s && i < n; i++) {
    double zabs = 0.0, row = 0.0;
    for (int64_t r = Z->rowptr[i]; r < Z->rowptr[i + 1]; r++) zabs += fabs(zv[r]);
    for (int64_t r = P ? P->rowptr[i] : 0; P && r < P->rowptr[i + 1]; r++) row += fabs(((const double *)P->val)[r]);
    if (diag) row += fabs(diag[i]) * zabs;
    double *b = part + (i / NLE__RANK_ROW_BLOCK) * L;
    for (int64_t r = Z->rowptr[i]; r < Z->rowptr[i + 1]; r++) b[Z->colind[r]] += fabs(zv[r]) * row;
  }
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_sum_blocks(ctx, part, blocks, L, bound);
  double largest = 0.0;
  for (size_t a = 0; !s && a < L; a++) largest = fmax(largest, bound[a]);
  free(part), free(bound);
  /* the partials' own rounding (1e-14 of the largest) below the margin */
  int scale = nle__fixed_point_scale(largest > 0 ? largest * (1.0 + 1e-9) : 1.0, 1.0);
  nle_csr *mine = NULL;
  if (!s) s = nle__lll_reduce_units(ctx, Z, Zt, P, diag, scale, &mine);
  s = nle__comm_agree(ctx, s);
  if (!s && nle__distributed(ctx)) s = units_over_ranks(ctx, mine, out);
  else if (!s) *out = mine, mine = NULL;
  nle_csr_free(&mine);
  for (int64_t q = 0; !s && q < (*out)->nnz; q++) {
    int64_t u;
    memcpy(&u, (double *)(*out)->val + q, sizeof u);
    ((double *)(*out)->val)[q] = ldexp((double)u, -scale);
  }
  return s;
}

nle_status nle__lll_pencil_rows(nle_ctx *ctx, const nle_csr *Z, int kz, const nle_csr *W, double alpha,
                                const double *A_diag, const double *B_diag, int nev, bool largest, nle_lll_pencil form,
                                double tol, bool block, double *vals, nle_matd **V, nle__pencil_info *info) {
  *V = NULL;
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, (size_t)Z->rows, "LLL", &rows);
  if (s) return s;
  size_t n = (size_t)Z->rows;
  nle_csr *P = NULL, *Zt = NULL, *At = NULL, *Bt = NULL;
  double *ones = B_diag ? NULL : nle__malloc(ctx, (n + 1) * sizeof(double), "LLL's B");
  if (!B_diag && !ones) s = NLE_ERR_NOMEM;
  for (size_t i = 0; ones && i < n; i++) ones[i] = 1.0; /* B = I: B~ = Z^T Z */
  s = nle__comm_agree(ctx, s);
  if (!s) s = product_rows(ctx, Z, kz, &rows, W, alpha, &P);
  if (!s) s = nle_csr_transpose(ctx, Z, &Zt);
  s = nle__comm_agree(ctx, s);
  if (!s) s = reduce_rows(ctx, Z, Zt, P, A_diag, &At);
  nle_csr_free(&P);
  if (!s) s = reduce_rows(ctx, Z, Zt, NULL, B_diag ? B_diag : ones, &Bt);
  nle_csr_free(&Zt);
  free(ones);
  /* the same pencil on every rank: each solves it alone, its BLAS on one
   * thread (OpenBLAS's bits follow its threads, and a rank's threads its
   * placement) */
  int ranks = nle__alone_begin(ctx), blas = nle__blas_set_threads(1);
  if (!s) s = nle__lll_solve_csr(ctx, At, Bt, nev, largest, form, tol, block, vals, V, info);
  nle__blas_set_threads(blas);
  nle__alone_end(ctx, ranks);
  nle_csr_free(&At), nle_csr_free(&Bt);
  return nle__comm_agree(ctx, s);
}
