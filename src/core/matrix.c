/* matrix.c — dense row-major float and double matrices. */
#include "internal.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static nle_status mat_alloc(nle_ctx *ctx, size_t rows, size_t cols, size_t elem,
                            void **data, const char *what) {
  size_t count, bytes;
  if (!nle__mul_size(rows, cols, &count) || !nle__mul_size(count, elem, &bytes))
    return nle__fail(ctx, NLE_ERR_MEMCAP, "%s of %zu x %zu overflows the address space", what,
                     rows, cols);
  char desc[96];
  snprintf(desc, sizeof desc, "a %zu x %zu %s", rows, cols, what);
  nle_status s = nle__check_memory(ctx, (double)bytes, desc);
  if (s) return s;
  *data = nle__calloc(ctx, count ? count : 1, elem, desc);
  return *data ? NLE_OK : NLE_ERR_NOMEM;
}

/* The float and the double matrix differ only in their element type: one
 * body defines both alloc/free pairs. */
#define MATRIX_ALLOC_FREE(T, ELEM, WHAT)                                                                         \
  nle_status T##_alloc(nle_ctx *ctx, size_t rows, size_t cols, T **out) {                                     \
    *out = NULL;                                                                                               \
    T *m = nle__calloc(ctx, 1, sizeof *m, "a matrix header");                                                  \
    if (!m) return NLE_ERR_NOMEM;                                                                              \
    nle_status s = mat_alloc(ctx, rows, cols, sizeof(ELEM), (void **)&m->data, WHAT);                          \
    if (s) {                                                                                                   \
      free(m);                                                                                                 \
      return s;                                                                                                \
    }                                                                                                          \
    m->rows = rows;                                                                                            \
    m->cols = cols;                                                                                            \
    *out = m;                                                                                                  \
    return NLE_OK;                                                                                             \
  }                                                                                                            \
                                                                                                               \
  void T##_free(T **m) {                                                                                       \
    if (!m || !*m) return;                                                                                     \
    free((*m)->data);                                                                                          \
    free(*m);                                                                                                  \
    *m = NULL;                                                                                                 \
  }

MATRIX_ALLOC_FREE(nle_matf, float, "float matrix")
MATRIX_ALLOC_FREE(nle_matd, double, "double matrix")

nle_status nle_matd_to_matf(nle_ctx *ctx, const nle_matd *in, nle_matf **out) {
  nle_status s = nle_matf_alloc(ctx, in->rows, in->cols, out);
  if (s) return s;
  size_t n = in->rows * in->cols;
  for (size_t i = 0; i < n; i++) (*out)->data[i] = (float)in->data[i];
  return NLE_OK;
}

nle_status nle_matf_to_matd(nle_ctx *ctx, const nle_matf *in, nle_matd **out) {
  nle_status s = nle_matd_alloc(ctx, in->rows, in->cols, out);
  if (s) return s;
  size_t n = in->rows * in->cols;
  for (size_t i = 0; i < n; i++) (*out)->data[i] = in->data[i];
  return NLE_OK;
}

static nle_status check_rows(nle_ctx *ctx, size_t rows, const int64_t *idx, size_t n_idx) {
  for (size_t i = 0; i < n_idx; i++)
    if (idx[i] < 0 || (size_t)idx[i] >= rows)
      return nle__fail(ctx, NLE_ERR_ARG, "row index %lld out of range [0, %zu)",
                       (long long)idx[i], rows);
  return NLE_OK;
}

nle_status nle_matf_select_rows(nle_ctx *ctx, const nle_matf *in, const int64_t *idx,
                                size_t n_idx, nle_matf **out) {
  *out = NULL;
  nle_status s = check_rows(ctx, in->rows, idx, n_idx);
  if (!s) s = nle_matf_alloc(ctx, n_idx, in->cols, out);
  if (s) return s;
  for (size_t i = 0; i < n_idx; i++)
    memcpy((*out)->data + i * in->cols, in->data + (size_t)idx[i] * in->cols,
           in->cols * sizeof(float));
  return NLE_OK;
}

nle_status nle_matd_select_rows(nle_ctx *ctx, const nle_matd *in, const int64_t *idx,
                                size_t n_idx, nle_matd **out) {
  *out = NULL;
  nle_status s = check_rows(ctx, in->rows, idx, n_idx);
  if (!s) s = nle_matd_alloc(ctx, n_idx, in->cols, out);
  if (s) return s;
  for (size_t i = 0; i < n_idx; i++)
    memcpy((*out)->data + i * in->cols, in->data + (size_t)idx[i] * in->cols,
           in->cols * sizeof(double));
  return NLE_OK;
}

nle_status nle__attach_training_data(nle_ctx *ctx, const nle_matf *Y, size_t n, size_t D, uint64_t hash,
                                     const char *source, nle_matf **dst) {
  if (Y->rows != n || Y->cols != D || nle__hash_floats(Y) != hash)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "the training data (%zu x %zu) is not the data the model was trained on (%zu x %zu, %s)", Y->rows,
                     Y->cols, n, D, source);
  nle_matf_free(dst);
  nle_status s = nle_matf_alloc(ctx, n, D, dst);
  if (!s) memcpy((*dst)->data, Y->data, n * D * sizeof(float));
  return s;
}

uint64_t nle__hash_floats(const nle_matf *Y) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a over the bytes */
  const unsigned char *b = (const unsigned char *)Y->data;
  for (size_t i = 0; i < Y->rows * Y->cols * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h ^ ((uint64_t)Y->rows << 32) ^ (uint64_t)Y->cols;
}
