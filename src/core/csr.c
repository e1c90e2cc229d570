/* csr.c — compressed sparse rows with int64 row pointers and float or double
 * values. */
#include "internal.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

static size_t dtype_size(nle_dtype t) { return t == NLE_F32 ? sizeof(float) : sizeof(double); }

nle_status nle_csr_alloc(nle_ctx *ctx, int64_t rows, int64_t cols, int64_t nnz,
                         nle_dtype dtype, nle_csr **out) {
  *out = NULL;
  if (rows < 0 || cols < 0 || nnz < 0 || rows > INT32_MAX || cols > INT32_MAX)
    return nle__fail(ctx, NLE_ERR_ARG, "sparse matrix of %lld x %lld with %lld entries is out of range",
                     (long long)rows, (long long)cols, (long long)nnz);
  double bytes = (double)(rows + 1) * 8 + (double)nnz * (4 + (double)dtype_size(dtype));
  nle_status s = nle__check_memory(ctx, bytes, "a sparse matrix");
  if (s) return s;
  nle_csr *m = nle__calloc(ctx, 1, sizeof *m, "a sparse matrix");
  if (!m) return NLE_ERR_NOMEM;
  m->rows = rows;
  m->cols = cols;
  m->nnz = nnz;
  m->dtype = dtype;
  m->rowptr = nle__calloc(ctx, (size_t)rows + 1, sizeof(int64_t), "sparse row pointers");
  m->colind = nle__malloc(ctx, (size_t)nnz * sizeof(int32_t), "sparse column indices");
  m->val = nle__malloc(ctx, (size_t)nnz * dtype_size(dtype), "sparse values");
  if (!m->rowptr || !m->colind || !m->val) {
    nle_csr_free(&m);
    return NLE_ERR_NOMEM;
  }
  *out = m;
  return NLE_OK;
}

void nle_csr_free(nle_csr **m) {
  if (!m || !*m) return;
  free((*m)->rowptr);
  free((*m)->colind);
  free((*m)->val);
  free(*m);
  *m = NULL;
}

double nle_csr_value(const nle_csr *m, int64_t k) {
  return m->dtype == NLE_F32 ? (double)((const float *)m->val)[k] : ((const double *)m->val)[k];
}

/* The transpose by counting: the rows are cut into `chunks` spans of about
 * equal entries, and chunk c's entries of column j go after those of the
 * chunks before it, so every transposed row comes out sorted by column, as
 * one scan in row order leaves it, for any number of chunks (the same bits
 * on any number of threads). Serial, the three transposes of a million-point
 * t-SNE's W+ took about 10 s. */
enum { TRANSPOSE_MAX_CHUNKS = 16 };

#define TRANSPOSE_SPAN(TYPE)                                                                                   \
  do {                                                                                                         \
    const TYPE *v = m->val;                                                                                    \
    TYPE *tv = t->val;                                                                                         \
    for (int64_t i = r0; i < r1; i++)                                                                          \
      for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {                                              \
        int64_t dst = cursor[m->colind[k]]++;                                                                  \
        t->colind[dst] = (int32_t)i;                                                                           \
        tv[dst] = v[k];                                                                                        \
      }                                                                                                        \
  } while (0)
static void transpose_span(const nle_csr *m, nle_csr *t, int64_t r0, int64_t r1, int64_t *cursor) {
  if (m->dtype == NLE_F32) TRANSPOSE_SPAN(float);
  else TRANSPOSE_SPAN(double);
}

nle_status nle_csr_transpose(nle_ctx *ctx, const nle_csr *m, nle_csr **out) {
  nle_status s = nle_csr_alloc(ctx, m->cols, m->rows, m->nnz, m->dtype, out);
  if (s) return s;
  nle_csr *t = *out;
  size_t cols = (size_t)m->cols;
  /* chunks: at most the threads, and their counts (8 bytes a column each)
   * at most a quarter of the entries' bytes */
  int64_t chunks = nle__threads_for(ctx, (double)m->nnz * 8.0);
  int64_t by_size = m->nnz / (2 * (m->cols + 1));
  chunks = chunks < TRANSPOSE_MAX_CHUNKS ? chunks : TRANSPOSE_MAX_CHUNKS;
  chunks = chunks < by_size ? chunks : by_size;
  chunks = chunks < 1 ? 1 : chunks;
  int64_t *cursor = nle__calloc(ctx, (size_t)chunks * cols + 1, sizeof(int64_t), "transpose cursors");
  if (!cursor) {
    nle_csr_free(out);
    return NLE_ERR_NOMEM;
  }
  int64_t first[TRANSPOSE_MAX_CHUNKS + 1] = {0};
  first[chunks] = m->rows;
  for (int64_t c = 1, i = 0; c < chunks; c++) { /* the first row of each span */
    while (i < m->rows && m->rowptr[i] < m->nnz / chunks * c) i++;
    first[c] = i;
  }
#pragma omp parallel for schedule(static, 1) num_threads((int)chunks)
  for (int64_t c = 0; c < chunks; c++) {
    int64_t *count = cursor + (size_t)c * cols;
    for (int64_t k = m->rowptr[first[c]]; k < m->rowptr[first[c + 1]]; k++) count[m->colind[k]]++;
  }
  int64_t pos = 0;
  for (size_t j = 0; j < cols; j++) {
    t->rowptr[j] = pos;
    for (int64_t c = 0; c < chunks; c++) {
      int64_t here = cursor[(size_t)c * cols + j];
      cursor[(size_t)c * cols + j] = pos;
      pos += here;
    }
  }
  t->rowptr[cols] = pos;
#pragma omp parallel for schedule(static, 1) num_threads((int)chunks)
  for (int64_t c = 0; c < chunks; c++) transpose_span(m, t, first[c], first[c + 1], cursor + (size_t)c * cols);
  free(cursor);
  return NLE_OK;
}

nle_status nle_csr_validate(nle_ctx *ctx, const nle_csr *m) {
  if (!m || !m->rowptr || m->rowptr[0] != 0 || m->rowptr[m->rows] != m->nnz)
    return nle__fail(ctx, NLE_ERR_FORMAT, "sparse matrix: row pointers do not span the %lld entries",
                     m ? (long long)m->nnz : 0LL);
  for (int64_t i = 0; i < m->rows; i++) {
    if (m->rowptr[i + 1] < m->rowptr[i])
      return nle__fail(ctx, NLE_ERR_FORMAT, "sparse matrix: row pointers decrease at row %lld",
                       (long long)i);
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
      if (m->colind[k] < 0 || m->colind[k] >= m->cols)
        return nle__fail(ctx, NLE_ERR_FORMAT, "sparse matrix: column %d out of range in row %lld",
                         m->colind[k], (long long)i);
  }
  return NLE_OK;
}

/* Breadth-first search from `start` over the pattern of W + W^T (rows of W
 * and of Wt), appending the newly reached points to order[*len...], each
 * point's new neighbours by increasing degree (Cuthill and McKee 1969);
 * returns the last point reached (one of the farthest from start). `sort`
 * has room for a row of W plus one of Wt. */
static int32_t cuthill_mckee_component(const nle_csr *W, const nle_csr *Wt, int32_t start, int32_t *order,
                                       int64_t *len, uint8_t *seen, nle__pair *sort) {
  int64_t head = *len;
  order[(*len)++] = start;
  seen[start] = 1;
  while (head < *len) {
    int32_t v = order[head++];
    size_t found = 0;
    const nle_csr *both[2] = {W, Wt};
    for (int s = 0; s < (Wt == W ? 1 : 2); s++) /* a symmetric W is its own transpose: once */
      for (int64_t q = both[s]->rowptr[v]; q < both[s]->rowptr[v + 1]; q++) {
        int32_t u = both[s]->colind[q];
        if (seen[u]) continue;
        seen[u] = 1;
        sort[found++] = (nle__pair){(double)((W->rowptr[u + 1] - W->rowptr[u]) + (Wt->rowptr[u + 1] - Wt->rowptr[u])), u};
      }
    qsort(sort, found, sizeof *sort, nle__pair_cmp); /* by degree, then index */
    for (size_t a = 0; a < found; a++) order[(*len)++] = (int32_t)sort[a].i;
  }
  return order[*len - 1];
}

nle_status nle__csr_locality_order(nle_ctx *ctx, const nle_csr *W, const nle_csr *given_Wt, int32_t **order_out) {
  *order_out = NULL;
  if (W->rows != W->cols) return nle__fail(ctx, NLE_ERR_ARG, "locality order: the matrix must be square");
  size_t n = (size_t)W->rows;
  nle_csr *own_Wt = NULL;
  nle_status s = given_Wt ? NLE_OK : nle_csr_transpose(ctx, W, &own_Wt);
  if (s) return s;
  const nle_csr *Wt = given_Wt ? given_Wt : own_Wt;
  int64_t widest = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t w = (W->rowptr[i + 1] - W->rowptr[i]) + (Wt->rowptr[i + 1] - Wt->rowptr[i]);
    widest = w > widest ? w : widest;
  }
  int32_t *order = nle__malloc(ctx, (n ? n : 1) * sizeof(int32_t), "locality order");
  uint8_t *seen = nle__calloc(ctx, n ? n : 1, 1, "locality order");
  nle__pair *sort = nle__malloc(ctx, (size_t)(widest + 1) * sizeof(nle__pair), "locality order");
  if (!order || !seen || !sort) {
    free(order);
    free(seen);
    free(sort);
    nle_csr_free(&own_Wt);
    return NLE_ERR_NOMEM;
  }
  int64_t len = 0;
  for (size_t root = 0; root < n; root++) {
    if (seen[root]) continue;
    /* A pseudo-peripheral start: the last point a search from the
     * component's first point reaches; then the search again from there. */
    int64_t mark = len;
    int32_t far = cuthill_mckee_component(W, Wt, (int32_t)root, order, &len, seen, sort);
    for (int64_t a = mark; a < len; a++) seen[order[a]] = 0;
    len = mark;
    cuthill_mckee_component(W, Wt, far, order, &len, seen, sort);
  }
  /* reversed (RCM): the usual form; for locality either direction serves */
  for (size_t a = 0, b = n; a + 1 < b; a++, b--) {
    int32_t t = order[a];
    order[a] = order[b - 1];
    order[b - 1] = t;
  }
  free(seen);
  free(sort);
  nle_csr_free(&own_Wt);
  *order_out = order;
  return NLE_OK;
}

nle_status nle__csr_permute(nle_ctx *ctx, const nle_csr *W, const int32_t *order, nle_dtype dtype, nle_csr **out) {
  *out = NULL;
  size_t n = (size_t)W->rows, es = dtype_size(W->dtype);
  int32_t *pos = nle__malloc(ctx, (n ? n : 1) * sizeof(int32_t), "permutation");
  if (!pos) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) pos[order[i]] = (int32_t)i;
  nle_status s = nle_csr_alloc(ctx, W->rows, W->cols, W->nnz, dtype, out);
  if (s) {
    free(pos);
    return s;
  }
  nle_csr *P = *out;
  for (size_t i = 0; i < n; i++) {
    int64_t a = W->rowptr[order[i]], len = W->rowptr[order[i] + 1] - a, at = P->rowptr[i];
    P->rowptr[i + 1] = at + len;
    for (int64_t q = 0; q < len; q++) P->colind[at + q] = pos[W->colind[a + q]];
    if (dtype == W->dtype)
      memcpy((char *)P->val + (size_t)at * es, (const char *)W->val + (size_t)a * es, (size_t)len * es);
    else if (dtype == NLE_F32)
      for (int64_t q = 0; q < len; q++) ((float *)P->val)[at + q] = (float)((const double *)W->val)[a + q];
    else
      for (int64_t q = 0; q < len; q++) ((double *)P->val)[at + q] = (double)((const float *)W->val)[a + q];
  }
  free(pos);
  return NLE_OK;
}

/* Connected components of the graph of W, by breadth-first search. */
int64_t nle__csr_components(nle_ctx *ctx, const nle_csr *W) {
  int64_t n = W->rows, count = 0;
  int64_t *queue = nle__malloc(ctx, (size_t)n * sizeof(int64_t), "a queue");
  uint8_t *seen = nle__calloc(ctx, (size_t)n, 1, "flags");
  if (!queue || !seen) {
    free(queue);
    free(seen);
    return -1;
  }
  for (int64_t s = 0; s < n; s++) {
    if (seen[s]) continue;
    count++;
    int64_t head = 0, tail = 0;
    queue[tail++] = s;
    seen[s] = 1;
    while (head < tail) {
      int64_t i = queue[head++];
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
        if (!seen[W->colind[q]] && nle_csr_value(W, q) > 0) {
          seen[W->colind[q]] = 1;
          queue[tail++] = W->colind[q];
        }
    }
  }
  free(queue);
  free(seen);
  return count;
}

nle_status nle_csr_from_dense(nle_ctx *ctx, const nle_matf *A, nle_csr **out) {
  *out = NULL;
  size_t n = A->rows, c = A->cols;
  int64_t nnz = 0;
  for (size_t i = 0; i < n * c; i++) {
    if (!isfinite(A->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "dense matrix: row %zu, column %zu is not finite", i / c, i % c);
    nnz += A->data[i] != 0.0f;
  }
  nle_status s = nle_csr_alloc(ctx, (int64_t)n, (int64_t)c, nnz, NLE_F64, out);
  for (size_t i = 0, at = 0; !s && i < n; i++) {
    for (size_t j = 0; j < c; j++)
      if (A->data[i * c + j] != 0.0f) {
        (*out)->colind[at] = (int32_t)j;
        ((double *)(*out)->val)[at++] = A->data[i * c + j];
      }
    (*out)->rowptr[i + 1] = (int64_t)at;
  }
  return s;
}
