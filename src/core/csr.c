/* csr.c — compressed sparse rows with int64 row pointers and float or double
 * values. */
#include "internal.h"

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

nle_status nle_csr_transpose(nle_ctx *ctx, const nle_csr *m, nle_csr **out) {
  nle_status s = nle_csr_alloc(ctx, m->cols, m->rows, m->nnz, m->dtype, out);
  if (s) return s;
  nle_csr *t = *out;
  size_t es = dtype_size(m->dtype);
  for (int64_t k = 0; k < m->nnz; k++) t->rowptr[m->colind[k] + 1]++;
  for (int64_t j = 0; j < t->rows; j++) t->rowptr[j + 1] += t->rowptr[j];
  int64_t *next = nle__malloc(ctx, (size_t)t->rows * sizeof(int64_t) + 1, "transpose cursor");
  if (!next) {
    nle_csr_free(out);
    return NLE_ERR_NOMEM;
  }
  memcpy(next, t->rowptr, (size_t)t->rows * sizeof(int64_t));
  /* Scanning rows in order makes every transposed row sorted by column. */
  for (int64_t i = 0; i < m->rows; i++) {
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++) {
      int64_t dst = next[m->colind[k]]++;
      t->colind[dst] = (int32_t)i;
      memcpy((char *)t->val + (size_t)dst * es, (const char *)m->val + (size_t)k * es, es);
    }
  }
  free(next);
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
