/* locality_dist.c — a run's points renumbered for locality under a
 * communicator (issue 38, docs/mpi.md).
 *
 * Why. The attraction of a row reads its neighbours' places in the map, and
 * the map is N x d doubles (16 MB at a million points in 2-D). In the
 * input's order a row's neighbours lie anywhere in it: t-SNE of 1,000,000
 * Fashion-MNIST images on 2 ranks spent 594 ms an evaluation on the
 * attraction of its 500,000 rows (perf: attract_row 22% of the run, cache
 * misses), against 64 ms on the repulsion. A process alone renumbers the
 * points in a Cuthill-McKee order of the whole graph (model.c); ranks hold
 * a block of rows each, and no rank holds the whole graph.
 *
 * The order here is the leaf order of one random-projection tree (the
 * approximate search's tree, knn_approx.c) over the first LOCALITY_COLS
 * columns of the search's space (principal components: the leading ones),
 * gathered on every rank and built alike there from the seed: the same
 * order on any number of ranks, so the run's bits stay those of any other
 * number of ranks. Close points share a leaf or a subtree, so a row's
 * neighbours sit at nearby indices, and so on a rank's own rows and in a
 * small part of the gathered map.
 *
 * The rows of W+ and of the start move to the owners of their new places
 * (one personalised exchange each, its columns renumbered and each row
 * sorted by them); the result moves back to the input's order. */
#include "model_internal.h"

#include "../core/comm.h"
#include "../neighbors/knn_approx_internal.h"

#include <stdlib.h>
#include <string.h>

enum {
  LOCALITY_COLS = 16, /* gathered: 64 bytes a point (64 MB at 1,000,000) */
  LOCALITY_LEAF = 32,
  LOCALITY_TREE = 0x10ca1 /* the tree's stream: not one of the search's */
};

nle_status nle__dist_locality_order(nle_ctx *ctx, const nle_matf *space, int32_t **order) {
  *order = NULL;
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, space->rows, "the locality order", &rows);
  if (s) return s;
  size_t n = rows.n, c = space->cols < LOCALITY_COLS ? space->cols : LOCALITY_COLS, m = space->rows;
  if (n > INT32_MAX || c == 0) return NLE_OK; /* nothing to order by: the input's order */
  double t0 = nle_time_seconds();
  s = nle__check_memory(ctx, (double)n * (double)(c * sizeof(float) + 2 * sizeof(int32_t)), "the locality order");
  float *mine = s ? NULL : nle__malloc(ctx, (m ? m : 1) * c * sizeof(float), "the locality order");
  float *all = s ? NULL : nle__malloc(ctx, n * c * sizeof(float), "the locality order");
  float *normal = s ? NULL : nle__malloc(ctx, 2 * c * sizeof(float), "the locality order");
  if (!s && (!mine || !all || !normal)) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < m; i++) memcpy(mine + i * c, space->data + i * space->cols, c * sizeof(float));
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgather_rows(ctx, mine, n, c * sizeof(float), all);
  free(mine);
  nnd_points P = {all, c, nle__nnd_wide_from()};
  nnd_tree tree = {0};
  if (!s && nle__nnd_tree_build(&P, (int64_t)n, LOCALITY_LEAF, nle_ctx_seed(ctx), LOCALITY_TREE, &tree, normal))
    s = nle__fail(ctx, NLE_ERR_NOMEM, "the locality order: out of memory building its tree");
  free(all);
  free(normal);
  free(tree.start);
  if (!s) *order = tree.perm;
  else free(tree.perm);
  if (!s)
    nle__log(ctx, 1, "the points renumbered for locality (a tree over %zu leading columns): %.2f s", c,
             nle_time_seconds() - t0);
  s = nle__comm_agree(ctx, s);
  if (s) {
    free(*order);
    *order = NULL;
  }
  return s;
}

/* The exchange's layout from each rank's bytes (3 ranks: next slot,
 * offsets, sizes); the send buffer. */
static char *layout(nle_ctx *ctx, int ranks, size_t *sizes, size_t *offsets) {
  size_t total = 0;
  for (int r = 0; r < ranks; r++) {
    offsets[r] = total;
    total += sizes[r];
  }
  return nle__malloc(ctx, total ? total : 1, "rows on their way");
}

nle_status nle__dist_move_dense(nle_ctx *ctx, const nle_matd *X, size_t row0, size_t n, const int32_t *to,
                                nle_matd **out) {
  *out = NULL;
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  size_t d = X->cols, rec = sizeof(int64_t) + d * sizeof(double);
  size_t *sizes = nle__calloc(ctx, 3 * (size_t)ranks + 1, sizeof(size_t), "ranks");
  nle_status s = sizes ? NLE_OK : NLE_ERR_NOMEM;
  size_t *offsets = sizes ? sizes + ranks : NULL, *cursor = sizes ? sizes + 2 * ranks : NULL;
  char *send = NULL;
  void *recv = NULL;
  size_t *recv_offsets = nle__malloc(ctx, ((size_t)ranks + 1) * sizeof(size_t), "ranks");
  if (!recv_offsets) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < X->rows; i++) sizes[nle__rank_of_row(n, ranks, (size_t)to[row0 + i])] += rec;
  if (!s && !(send = layout(ctx, ranks, sizes, offsets))) s = NLE_ERR_NOMEM;
  if (!s) memcpy(cursor, offsets, (size_t)ranks * sizeof(size_t));
  for (size_t i = 0; !s && i < X->rows; i++) {
    int64_t p = to[row0 + i];
    int r = nle__rank_of_row(n, ranks, (size_t)p);
    char *at = send + cursor[r];
    cursor[r] += rec;
    memcpy(at, &p, sizeof p);
    memcpy(at + sizeof p, X->data + i * d, d * sizeof(double));
  }
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_alltoallv(ctx, send, offsets, sizes, &recv, recv_offsets);
  free(send);
  nle__row_range mine = nle__rank_rows(n, ranks, me);
  size_t got = s ? 0 : recv_offsets[ranks] / rec;
  if (!s && got != mine.end - mine.begin)
    s = nle__fail(ctx, NLE_ERR_ARG, "moving rows: %zu arrived for this rank's %zu (not a permutation)", got,
                  mine.end - mine.begin);
  if (!s) s = nle_matd_alloc(ctx, got, d, out);
  uint8_t *filled = s ? NULL : nle__calloc(ctx, got ? got : 1, 1, "the moved rows");
  if (!s && !filled) s = NLE_ERR_NOMEM;
  for (size_t q = 0; !s && q < got; q++) {
    const char *at = (const char *)recv + q * rec;
    int64_t p;
    memcpy(&p, at, sizeof p);
    if ((size_t)p < mine.begin || (size_t)p >= mine.end || filled[(size_t)p - mine.begin]++)
      s = nle__fail(ctx, NLE_ERR_ARG, "moving rows: row %lld arrived where it does not belong (not a permutation)",
                    (long long)p);
    else memcpy((*out)->data + ((size_t)p - mine.begin) * d, at + sizeof p, d * sizeof(double));
  }
  free(filled);
  free(recv);
  free(sizes);
  free(recv_offsets);
  s = nle__comm_agree(ctx, s);
  if (s) nle_matd_free(out);
  return s;
}

typedef struct {
  int32_t col;
  int32_t at; /* the entry's place in the row as it arrived: its value */
} moved_col;

static inline int moved_greater(moved_col a, moved_col b) { return a.col > b.col; }
NLE__DEFINE_SORT(moved_sort, moved_col, moved_greater)

nle_status nle__dist_move_csr(nle_ctx *ctx, nle_csr **W, size_t row0, const int32_t *to, nle_dtype dtype) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  const nle_csr *A = *W;
  size_t n = (size_t)A->cols, es = A->dtype == NLE_F32 ? sizeof(float) : sizeof(double);
  size_t *sizes = nle__calloc(ctx, 3 * (size_t)ranks + 1, sizeof(size_t), "ranks");
  nle_status s = sizes ? NLE_OK : NLE_ERR_NOMEM;
  size_t *offsets = sizes ? sizes + ranks : NULL, *cursor = sizes ? sizes + 2 * ranks : NULL;
  size_t *recv_offsets = nle__malloc(ctx, ((size_t)ranks + 1) * sizeof(size_t), "ranks");
  if (!recv_offsets) s = NLE_ERR_NOMEM;
  /* a record: the row's new index and length, its columns renumbered, its values */
  for (int64_t i = 0; !s && i < A->rows; i++)
    sizes[nle__rank_of_row(n, ranks, (size_t)to[row0 + (size_t)i])] +=
        2 * sizeof(int32_t) + (size_t)(A->rowptr[i + 1] - A->rowptr[i]) * (sizeof(int32_t) + es);
  char *send = s ? NULL : layout(ctx, ranks, sizes, offsets);
  if (!s && !send) s = NLE_ERR_NOMEM;
  if (!s) memcpy(cursor, offsets, (size_t)ranks * sizeof(size_t));
  for (int64_t i = 0; !s && i < A->rows; i++) {
    int32_t head[2] = {to[row0 + (size_t)i], (int32_t)(A->rowptr[i + 1] - A->rowptr[i])};
    int r = nle__rank_of_row(n, ranks, (size_t)head[0]);
    char *at = send + cursor[r];
    memcpy(at, head, sizeof head);
    int32_t *cols = (int32_t *)(void *)(at + sizeof head); /* 4-byte aligned: records are made of 4-byte units */
    for (int32_t q = 0; q < head[1]; q++) cols[q] = to[A->colind[A->rowptr[i] + q]];
    memcpy(at + sizeof head + (size_t)head[1] * sizeof(int32_t), (const char *)A->val + (size_t)A->rowptr[i] * es,
           (size_t)head[1] * es);
    cursor[r] += sizeof head + (size_t)head[1] * (sizeof(int32_t) + es);
  }
  s = nle__comm_agree(ctx, s);
  nle_dtype sent_dtype = A->dtype;
  if (!s) nle_csr_free(W); /* the records hold it now: two copies at a time, not three */
  void *recv = NULL;
  if (!s) s = nle__comm_alltoallv(ctx, send, offsets, sizes, &recv, recv_offsets);
  free(send);
  nle__row_range mine = nle__rank_rows(n, ranks, me);
  size_t rows = mine.end - mine.begin, arrived = 0;
  int64_t nnz = 0;
  const char *end = s ? NULL : (const char *)recv + recv_offsets[ranks];
  int64_t *len = s ? NULL : nle__calloc(ctx, rows + 1, sizeof(int64_t), "the moved rows");
  if (!s && !len) s = NLE_ERR_NOMEM;
  for (const char *at = recv; !s && at < end;) {
    int32_t head[2];
    memcpy(head, at, sizeof head);
    if ((size_t)head[0] < mine.begin || (size_t)head[0] >= mine.end || len[(size_t)head[0] - mine.begin + 1])
      s = nle__fail(ctx, NLE_ERR_ARG, "moving rows: row %d arrived where it does not belong (not a permutation)",
                    head[0]);
    else len[(size_t)head[0] - mine.begin + 1] = head[1] + 1; /* + 1: seen, even empty */
    nnz += head[1];
    arrived++;
    at += sizeof head + (size_t)head[1] * (sizeof(int32_t) + es);
  }
  if (!s && arrived != rows)
    s = nle__fail(ctx, NLE_ERR_ARG, "moving rows: %zu arrived for this rank's %zu (not a permutation)", arrived, rows);
  nle_csr *B = NULL;
  if (!s) s = nle_csr_alloc(ctx, (int64_t)rows, (int64_t)n, nnz, dtype, &B);
  if (!s) {
    B->rowptr[0] = 0;
    for (size_t r = 0; r < rows; r++) B->rowptr[r + 1] = B->rowptr[r] + len[r + 1] - 1;
  }
  int64_t widest = 0;
  for (size_t r = 0; !s && r < rows; r++)
    widest = B->rowptr[r + 1] - B->rowptr[r] > widest ? B->rowptr[r + 1] - B->rowptr[r] : widest;
  moved_col *sort = s ? NULL : nle__malloc(ctx, (size_t)(widest ? widest : 1) * sizeof *sort, "the moved rows");
  if (!s && !sort) s = NLE_ERR_NOMEM;
  for (const char *at = recv; !s && at < end;) {
    int32_t head[2];
    memcpy(head, at, sizeof head);
    const int32_t *cols = (const int32_t *)(const void *)(at + sizeof head);
    const char *vals = at + sizeof head + (size_t)head[1] * sizeof(int32_t);
    int64_t into = B->rowptr[(size_t)head[0] - mine.begin];
    for (int32_t q = 0; q < head[1]; q++) sort[q] = (moved_col){cols[q], q};
    moved_sort(sort, (size_t)head[1]); /* columns distinct within a row: a total order */
    for (int32_t q = 0; q < head[1]; q++) {
      B->colind[into + q] = sort[q].col;
      const char *v = vals + (size_t)sort[q].at * es;
      if (dtype == sent_dtype) {
        memcpy((char *)B->val + (size_t)(into + q) * es, v, es);
      } else if (dtype == NLE_F32) {
        double x;
        memcpy(&x, v, sizeof x);
        ((float *)B->val)[into + q] = (float)x;
      } else {
        float x;
        memcpy(&x, v, sizeof x);
        ((double *)B->val)[into + q] = (double)x;
      }
    }
    at += sizeof head + (size_t)head[1] * (sizeof(int32_t) + es);
  }
  free(sort);
  free(len);
  free(recv);
  free(sizes);
  free(recv_offsets);
  s = nle__comm_agree(ctx, s);
  if (s) nle_csr_free(&B);
  else *W = B;
  return s;
}
