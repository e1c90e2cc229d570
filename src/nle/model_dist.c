/* model_dist.c — the model distributed over ranks (issue 38, docs/mpi.md):
 * each rank holds a canonical block of rows of W+ (global columns) and of
 * the map, and evaluates E and its gradient for its rows. What crosses
 * between ranks per evaluation: the map (every rank's rows, N x d doubles:
 * the attraction reads its rows' neighbours and the repulsion engines sum
 * over the whole map), and for the exact engine its per-row sums (N
 * doubles); per-block partials of E. Every total is added in the order a
 * single process adds it, so any number of ranks gives one process's bits. */
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"

/* One entry of W+ on its way to the owner of its column. */
typedef struct {
  int32_t row, col; /* in the transpose: (j, i) of W+'s entry (i, j) */
  double val;
} moved_entry;

/* This rank's rows of W+'s transpose: each entry sent to its column's
 * owner, in row order, and bucketed there stably by column, so each row
 * of the transpose lists its entries by ascending row of W+, as
 * nle_csr_transpose does alone. */
static nle_status dist_transpose(nle_ctx *ctx, const nle_model *m, const nle_csr *W, nle_csr **out) {
  int ranks = nle__ranks(ctx);
  size_t n = (size_t)m->n, nnz = (size_t)W->nnz;
  size_t *offsets = nle__calloc(ctx, 3 * (size_t)ranks + 2, sizeof(size_t), "transpose");
  moved_entry *send = nle__malloc(ctx, (nnz ? nnz : 1) * sizeof *send, "transpose");
  void *recv = NULL;
  nle_status s = offsets && send ? NLE_OK : NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
  size_t *bytes = offsets ? offsets + ranks : NULL, *recv_at = offsets ? offsets + 2 * ranks : NULL;
  if (!s) {
    for (size_t q = 0; q < nnz; q++) bytes[nle__rank_of_row(n, ranks, (size_t)W->colind[q])] += sizeof(moved_entry);
    for (int r = 1; r < ranks; r++) offsets[r] = offsets[r - 1] + bytes[r - 1];
    size_t *cursor = recv_at; /* reused as write cursors before the exchange */
    for (int r = 0; r < ranks; r++) cursor[r] = offsets[r] / sizeof(moved_entry);
    for (int64_t i = 0; i < W->rows; i++)
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
        int32_t j = W->colind[q];
        send[cursor[nle__rank_of_row(n, ranks, (size_t)j)]++] =
            (moved_entry){j, (int32_t)(m->row0 + (size_t)i), nle_csr_value(W, q)};
      }
    s = nle__comm_alltoallv(ctx, send, offsets, bytes, &recv, recv_at);
  }
  free(send);
  size_t got = s ? 0 : recv_at[ranks] / sizeof(moved_entry), rows = m->row1 - m->row0;
  if (!s) s = nle_csr_alloc(ctx, (int64_t)rows, m->n, (int64_t)got, W->dtype, out);
  if (!s) {
    const moved_entry *e = recv;
    nle_csr *t = *out;
    memset(t->rowptr, 0, (rows + 1) * sizeof(int64_t));
    for (size_t k = 0; k < got; k++) t->rowptr[(size_t)e[k].row - m->row0 + 1]++;
    for (size_t r = 0; r < rows; r++) t->rowptr[r + 1] += t->rowptr[r];
    int64_t *cursor = nle__malloc(ctx, (rows ? rows : 1) * sizeof(int64_t), "transpose");
    if (!cursor) s = NLE_ERR_NOMEM;
    for (size_t r = 0; !s && r < rows; r++) cursor[r] = t->rowptr[r];
    for (size_t k = 0; !s && k < got; k++) {
      int64_t at = cursor[(size_t)e[k].row - m->row0]++;
      t->colind[at] = e[k].col;
      if (t->dtype == NLE_F32) ((float *)t->val)[at] = (float)e[k].val;
      else ((double *)t->val)[at] = e[k].val;
    }
    free(cursor);
  }
  free(recv);
  free(offsets);
  return nle__comm_agree(ctx, s);
}

nle_status nle__model_dist_attach(nle_ctx *ctx, nle_model *m) {
  const nle_csr *W = m->spec.Wp;
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, (size_t)W->rows, "W+", &rows);
  if (s) return s;
  if (W->cols != (int64_t)rows.n)
    s = nle__fail(ctx, NLE_ERR_ARG, "model: a rank's rows of W+ must have the %zu columns of all points, not %lld",
                  rows.n, (long long)W->cols);
  s = nle__comm_agree(ctx, s);
  if (s) return s;
  m->distributed = 1;
  m->n = (int64_t)rows.n;
  m->row0 = rows.mine.begin;
  m->row1 = rows.mine.end;
  s = dist_transpose(ctx, m, W, &m->WpT);
  if (s) return s;
  /* Symmetric on every rank: no transpose kept, each row counts twice. */
  int64_t differ = W->nnz != m->WpT->nnz || W->dtype != m->WpT->dtype ||
                   memcmp(W->rowptr, m->WpT->rowptr, (size_t)(W->rows + 1) * sizeof(int64_t)) ||
                   memcmp(W->colind, m->WpT->colind, (size_t)W->nnz * sizeof(int32_t)) ||
                   memcmp(W->val, m->WpT->val, (size_t)W->nnz * (W->dtype == NLE_F32 ? sizeof(float) : sizeof(double)));
  s = nle__comm_sum_i64(ctx, &differ, 1);
  if (!s && !differ) nle_csr_free(&m->WpT);
  /* the cut: W+'s entries whose column another rank holds (what a halo of
   * the map would carry; docs/scale.md's --cut) */
  int64_t counts[2] = {0, W->nnz};
  for (int64_t q = 0; q < W->nnz; q++) counts[0] += (size_t)W->colind[q] < m->row0 || (size_t)W->colind[q] >= m->row1;
  if (!s) s = nle__comm_sum_i64(ctx, counts, 2);
  if (!s)
    nle__log(ctx, 1, "W+'s entries across ranks: %.2f%% of %lld",
             100.0 * (double)counts[0] / (double)(counts[1] ? counts[1] : 1), (long long)counts[1]);
  return s;
}

nle_status nle__model_dist_map(nle_ctx *ctx, nle_model *m, const nle_matd *X) {
  return nle__comm_allgather_rows(ctx, X->data, (size_t)m->n, X->cols * sizeof(double), m->map);
}

nle_status nle__model_dist_rows(nle_ctx *ctx, nle_model *m, double *v) {
  nle_status s = nle__comm_allgather_rows(ctx, v + m->row0, (size_t)m->n, sizeof(double), m->gathered);
  if (!s) memcpy(v, m->gathered, (size_t)m->n * sizeof(double));
  return s;
}

nle_status nle__dist_ordered_sum(nle_ctx *ctx, const double *partials, size_t count, double *total) {
  double sum = 0.0;
  if (!nle__distributed(ctx)) {
    for (size_t b = 0; b < count; b++) sum += partials[b];
    *total = sum;
    return NLE_OK;
  }
  int64_t all = (int64_t)count;
  nle_status s = nle__comm_sum_i64(ctx, &all, 1);
  double *every = s ? NULL : nle__malloc(ctx, ((size_t)all ? (size_t)all : 1) * sizeof(double), "partial sums");
  s = nle__comm_agree(ctx, s ? s : every ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__comm_allgatherv(ctx, partials, count * sizeof(double), every, NULL);
  for (int64_t b = 0; !s && b < all; b++) sum += every[b];
  free(every);
  *total = sum;
  return s;
}

/* Row j's share: the entries (i, j) of W+ for i < j (from the transpose's
 * row, ascending i), row j's own entries in order (a diagonal entry twice,
 * as the pass over row j adds it for both ends), then those for i > j: the
 * order of a pass over the rows of W+ adding w/2 at both ends of each
 * entry. */
double *nle__attraction_degrees(nle_ctx *ctx, const nle_csr *W, const nle_csr *WT, size_t row0) {
  double *deg = nle__calloc(ctx, W->rows ? (size_t)W->rows : 1, sizeof(double), "the attraction's degrees");
  if (!deg) return NULL;
  for (int64_t r = 0; r < W->rows; r++) {
    int32_t j = (int32_t)(row0 + (size_t)r);
    double sum = 0.0;
    int64_t q = WT->rowptr[r], q_end = WT->rowptr[r + 1];
    for (; q < q_end && WT->colind[q] < j; q++) sum += 0.5 * nle_csr_value(WT, q);
    for (int64_t k = W->rowptr[r]; k < W->rowptr[r + 1]; k++) {
      double w = 0.5 * nle_csr_value(W, k);
      sum += w;
      if (W->colind[k] == j) sum += w;
    }
    for (; q < q_end && WT->colind[q] == j; q++) {}
    for (; q < q_end; q++) sum += 0.5 * nle_csr_value(WT, q);
    deg[r] = sum;
  }
  return deg;
}

nle_status nle__dist_chain_sums(nle_ctx *ctx, void (*part)(void *user, double *running), void *user, size_t n,
                                double *running) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  if (n > NLE__CHAIN_MAX) return nle__fail(ctx, NLE_ERR_ARG, "a chain of %zu sums", n);
  memset(running, 0, n * sizeof(double));
  if (ranks == 1 || me == 0) part(user, running);
  nle_status s = NLE_OK;
  /* step k hands rank k - 1's running totals to rank k, which continues them */
  for (int k = 1; !s && k < ranks; k++) {
    double in[NLE__CHAIN_MAX];
    size_t got = 0;
    s = nle__comm_shift(ctx, running, n * sizeof(double), (me + 1) % ranks, in, sizeof in, &got, (me + ranks - 1) % ranks);
    if (!s && me == k) {
      memcpy(running, in, n * sizeof(double));
      part(user, running);
    }
  }
  if (!s && ranks > 1) s = nle__comm_bcast(ctx, running, n * sizeof(double), ranks - 1);
  return s;
}

typedef struct {
  double (*part)(void *user, double start);
  void *user;
} chain_scalar;

static void chain_scalar_part(void *user, double *running) {
  const chain_scalar *c = user;
  running[0] = c->part(c->user, running[0]);
}

nle_status nle__dist_chain_sum(nle_ctx *ctx, double (*part)(void *user, double start), void *user, double *total) {
  chain_scalar c = {part, user};
  return nle__dist_chain_sums(ctx, chain_scalar_part, &c, 1, total);
}

typedef struct {
  const double *force;
  size_t rows, d;
} force_rows;

/* as nle__remove_mean_force's loop adds them */
static void add_forces(void *user, double *mean) {
  const force_rows *f = user;
  for (size_t n = 0; n < f->rows; n++)
    for (size_t t = 0; t < f->d; t++) mean[t] += f->force[n * f->d + t];
}

nle_status nle__dist_remove_mean_force(nle_ctx *ctx, const nle_model *m, double *force, size_t d) {
  double mean[NLE__CHAIN_MAX];
  force_rows f = {force + m->row0 * d, m->row1 - m->row0, d};
  nle_status s = nle__dist_chain_sums(ctx, add_forces, &f, d, mean);
  for (size_t n = m->row0; !s && n < m->row1; n++)
    for (size_t t = 0; t < d; t++) force[n * d + t] -= mean[t] / (double)m->n;
  return s;
}

nle_status nle__dist_normal_rows(nle_ctx *ctx, uint64_t stream, double scale, nle_matd *X) {
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, X->rows, "the random start", &rows);
  if (s) return s;
  nle_rng r;
  nle_rng_init(&r, nle_ctx_seed(ctx), stream);
  for (size_t i = 0; i < rows.mine.begin * X->cols; i++) (void)nle_rng_normal(&r); /* the rows before this rank's */
  for (size_t i = 0; i < X->rows * X->cols; i++) X->data[i] = scale * nle_rng_normal(&r);
  return NLE_OK;
}

nle_status nle__dist_scale_first_column(nle_ctx *ctx, nle_matd *X, double target) {
  size_t n = X->rows, d = X->cols;
  int64_t all = (int64_t)n;
  nle_status s = nle__comm_sum_i64(ctx, &all, 1);
  double *col = s ? NULL : nle__malloc(ctx, (size_t)all * sizeof(double) + sizeof(double) * (n + 1), "the first column");
  s = nle__comm_agree(ctx, s ? s : col ? NLE_OK : NLE_ERR_NOMEM);
  if (s) {
    free(col);
    return s;
  }
  double *mine = col + all, mean = 0.0, var = 0.0;
  for (size_t i = 0; i < n; i++) mine[i] = X->data[i * d];
  s = nle__comm_allgatherv(ctx, mine, n * sizeof(double), col, NULL);
  size_t N = (size_t)all;
  for (size_t i = 0; !s && i < N; i++) mean += col[i] / (double)N;
  for (size_t i = 0; !s && i < N; i++) var += (col[i] - mean) * (col[i] - mean) / (double)N;
  if (!s && var > 0)
    for (size_t i = 0; i < n * d; i++) X->data[i] *= target / sqrt(var);
  free(col);
  return s;
}
