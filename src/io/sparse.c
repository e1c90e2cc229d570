/* sparse.c — sparse data as the readers hand it over (CSR, CSC, triplets):
 * the structure checked, each row's columns sorted, repeated entries
 * refused, then kept sparse or densified under the memory cap; and a
 * dense dataset transposed, as the read options may ask. */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>

nle_status nle__dataset_shell(nle_ctx *ctx, const char *name, nle_dataset **out) {
  *out = NULL;
  nle_dataset *ds = nle__calloc(ctx, 1, sizeof *ds, "a dataset");
  if (!ds) return NLE_ERR_NOMEM;
  if (!(ds->name = strdup(name ? name : ""))) {
    free(ds);
    return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  }
  *out = ds;
  return NLE_OK;
}

void nle__name_list_add(nle__name_list *l, const char *name) {
  enum { SHOWN = 8 };
  l->count++;
  if (l->shown >= SHOWN) return;
  size_t used = strlen(l->text);
  /* room for this name and the tail " ... (N in all)" */
  if (used + strlen(name) + 2 + 24 >= sizeof l->text) {
    l->shown = SHOWN;
    return;
  }
  snprintf(l->text + used, sizeof l->text - used, "%s%s", used ? ", " : "", name);
  l->shown++;
}

const char *nle__name_list_text(nle__name_list *l) {
  size_t used = strlen(l->text);
  if (l->count > l->shown)
    snprintf(l->text + used, sizeof l->text - used, ", ... (%d in all)", l->count);
  return l->text;
}

typedef struct {
  int32_t col;
  float val;
  int64_t src;
} entry;

static int by_column(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->col != y->col) return x->col < y->col ? -1 : 1;
  return (x->src > y->src) - (x->src < y->src);
}

/* Sorts the rows whose columns are not increasing (src: each entry's input
 * index, moved along; NULL when not kept). */
static nle_status sort_rows(nle_ctx *ctx, nle_csr *M, int64_t *src) {
  int64_t widest = 0;
  for (int64_t r = 0; r < M->rows; r++) {
    int64_t a = M->rowptr[r], b = M->rowptr[r + 1];
    int sorted = 1;
    for (int64_t k = a + 1; k < b && sorted; k++) sorted = M->colind[k - 1] < M->colind[k];
    if (!sorted && b - a > widest) widest = b - a;
  }
  if (!widest) return NLE_OK;
  entry *e = nle__malloc(ctx, (size_t)widest * sizeof *e, "a row being sorted");
  if (!e) return NLE_ERR_NOMEM;
  float *val = M->val;
  for (int64_t r = 0; r < M->rows; r++) {
    int64_t a = M->rowptr[r], b = M->rowptr[r + 1];
    int sorted = 1;
    for (int64_t k = a + 1; k < b && sorted; k++) sorted = M->colind[k - 1] < M->colind[k];
    if (sorted) continue;
    for (int64_t k = a; k < b; k++) e[k - a] = (entry){M->colind[k], val[k], src ? src[k] : k};
    qsort(e, (size_t)(b - a), sizeof *e, by_column);
    for (int64_t k = a; k < b; k++) {
      M->colind[k] = e[k - a].col;
      val[k] = e[k - a].val;
      if (src) src[k] = e[k - a].src;
    }
  }
  free(e);
  return NLE_OK;
}

/* The first repeated position of a row-sorted M: its entry k (k - 1 holds
 * the same), or -1. */
static int64_t first_repeat(const nle_csr *M, int64_t *row) {
  for (int64_t r = 0; r < M->rows; r++)
    for (int64_t k = M->rowptr[r] + 1; k < M->rowptr[r + 1]; k++)
      if (M->colind[k] == M->colind[k - 1]) {
        *row = r;
        return k;
      }
  return -1;
}

static nle_status check_structure(nle_ctx *ctx, const char *name, const nle_csr *M, int by_columns) {
  const char *major = by_columns ? "column" : "row", *minor = by_columns ? "row" : "column";
  if (M->rowptr[0] != 0)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: sparse %s pointers start at %lld, not 0", name, major,
                     (long long)M->rowptr[0]);
  for (int64_t r = 0; r < M->rows; r++)
    if (M->rowptr[r + 1] < M->rowptr[r] || M->rowptr[r + 1] > M->nnz)
      return nle__fail(ctx, NLE_ERR_FORMAT,
                       "%s: sparse %s pointer %lld is %lld, %s (corrupt structure)", name, major, (long long)r + 1,
                       (long long)M->rowptr[r + 1],
                       M->rowptr[r + 1] < M->rowptr[r] ? "below the one before it" : "past the stored entries");
  if (M->rowptr[M->rows] != M->nnz)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: sparse %s pointers end at %lld, but %lld entries are stored", name,
                     major, (long long)M->rowptr[M->rows], (long long)M->nnz);
  for (int64_t k = 0; k < M->nnz; k++)
    if (M->colind[k] < 0 || M->colind[k] >= M->cols)
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: sparse entry %lld: %s index %d outside [0, %lld)", name,
                       (long long)k, minor, M->colind[k], (long long)M->cols);
  return NLE_OK;
}

/* Densified, the rows x cols matrix must fit the memory cap. */
static nle_status dense_fits(nle_ctx *ctx, const char *name, int64_t rows, int64_t cols) {
  char what[96];
  snprintf(what, sizeof what, "the sparse %lld x %lld matrix made dense", (long long)rows, (long long)cols);
  nle_status s = nle__check_memory(ctx, (double)rows * (double)cols * sizeof(float), what);
  if (s) {
    nle__fail_prefix(ctx, name);
    nle__fail_suffix(ctx, " (readers that take sparse data keep it sparse: the embedding commands)");
  }
  return s;
}

nle_status nle__sparse_fits(nle_ctx *ctx, const char *name, int64_t rows, int64_t cols, int64_t nnz, int sparse_ok) {
  if (!sparse_ok && dense_fits(ctx, name, rows, cols)) return NLE_ERR_MEMCAP;
  /* the row pointers and the cursors that fill them (rows + 1 each), the
   * entries with their input order: a header's size the entries cannot
   * back is refused by its cost, not after building it */
  char what[128];
  snprintf(what, sizeof what, "the sparse %lld x %lld matrix (%lld entries) as CSR", (long long)rows,
           (long long)cols, (long long)nnz);
  nle_status s = nle__check_memory(ctx, ((double)rows + 1) * 16.0 + (double)nnz * 16.0, what);
  if (s) nle__fail_prefix(ctx, name);
  return s;
}

nle_status nle__dataset_from_sparse(nle_ctx *ctx, const char *name, nle_csr *M, int by_columns, int transpose,
                                    int sparse_ok, nle_dataset **out) {
  *out = NULL;
  nle_status s = check_structure(ctx, name, M, by_columns);
  /* The dataset is M when by_columns == transpose, else M^T; a transpose
   * comes out with its rows sorted. */
  int flip = by_columns != transpose;
  if (!s && flip) {
    nle_csr *T = NULL;
    s = nle_csr_transpose(ctx, M, &T);
    nle_csr_free(&M);
    M = T;
  } else if (!s) {
    s = sort_rows(ctx, M, NULL);
  }
  int64_t row = 0, k = s ? -1 : first_repeat(M, &row);
  if (k >= 0) {
    /* in the file's terms: its rows and columns, 0-based as the arrays are */
    int64_t r = row, c = M->colind[k];
    if (transpose) {
      int64_t t = r;
      r = c;
      c = t;
    }
    s = nle__fail(ctx, NLE_ERR_VALUE, "%s: entry (row %lld, column %lld) stored twice (0-based)", name,
                  (long long)r, (long long)c);
  }
  nle_dataset *ds = NULL;
  if (!s) s = nle__dataset_shell(ctx, name, &ds);
  if (!s && sparse_ok) {
    ds->sparse = M;
    M = NULL;
  } else if (!s) {
    s = dense_fits(ctx, name, M->rows, M->cols);
    if (!s) s = nle_matf_alloc(ctx, (size_t)M->rows, (size_t)M->cols, &ds->X);
    const float *val = M ? M->val : NULL;
    for (int64_t r = 0; !s && r < M->rows; r++)
      for (int64_t q = M->rowptr[r]; q < M->rowptr[r + 1]; q++)
        ds->X->data[(size_t)r * (size_t)M->cols + (size_t)M->colind[q]] = val[q];
  }
  nle_csr_free(&M);
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

nle_status nle__csr_from_triplets(nle_ctx *ctx, int64_t rows, int64_t cols, int64_t n, const int32_t *i,
                                  const int32_t *j, const float *v, nle_csr **out, int64_t dup[2]) {
  *out = NULL;
  dup[0] = dup[1] = -1;
  nle_csr *M = NULL;
  nle_status s = nle_csr_alloc(ctx, rows, cols, n, NLE_F32, &M);
  if (s) return s;
  int64_t *src = nle__malloc(ctx, (size_t)(n ? n : 1) * sizeof *src, "sparse entry order");
  int64_t *next = nle__malloc(ctx, (size_t)(rows + 1) * sizeof *next, "sparse row cursors");
  if (!src || !next) {
    free(src);
    free(next);
    nle_csr_free(&M);
    return NLE_ERR_NOMEM;
  }
  /* counting sort by row (stable: input order within a row), then each
   * row by column */
  for (int64_t k = 0; k < n; k++) M->rowptr[i[k] + 1]++;
  for (int64_t r = 0; r < rows; r++) M->rowptr[r + 1] += M->rowptr[r];
  memcpy(next, M->rowptr, (size_t)(rows + 1) * sizeof *next);
  float *val = M->val;
  for (int64_t k = 0; k < n; k++) {
    int64_t d = next[i[k]]++;
    M->colind[d] = j[k];
    val[d] = v[k];
    src[d] = k;
  }
  free(next);
  s = sort_rows(ctx, M, src);
  int64_t row, k = s ? -1 : first_repeat(M, &row);
  if (k >= 0) {
    dup[0] = src[k - 1] < src[k] ? src[k - 1] : src[k];
    dup[1] = src[k - 1] < src[k] ? src[k] : src[k - 1];
    s = NLE_ERR_VALUE;
  }
  free(src);
  if (s) {
    nle_csr_free(&M);
    return s;
  }
  *out = M;
  return NLE_OK;
}

nle_status nle__dataset_transpose(nle_ctx *ctx, nle_dataset *ds) {
  const nle_matf *A = ds->X;
  nle_matf *T = NULL;
  nle_status s = nle_matf_alloc(ctx, A->cols, A->rows, &T);
  if (s) return s;
  /* in tiles, so that neither side is walked with a long stride alone */
  enum { TILE = 64 };
  for (size_t i0 = 0; i0 < A->rows; i0 += TILE)
    for (size_t j0 = 0; j0 < A->cols; j0 += TILE)
      for (size_t i = i0; i < i0 + TILE && i < A->rows; i++)
        for (size_t j = j0; j < j0 + TILE && j < A->cols; j++) T->data[j * A->rows + i] = A->data[i * A->cols + j];
  nle_matf_free(&ds->X);
  ds->X = T;
  return NLE_OK;
}

nle_status nle__transpose_if_asked(nle_ctx *ctx, const char *name, const nle_read_opts *opts, nle_status read,
                                   nle_dataset **ds) {
  if (read || !opts || !opts->transpose || !*ds) return read;
  nle_status s = NLE_OK;
  if ((*ds)->labels)
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: the data have a label column: transposed, it would be a row (give "
                  "{@label-column=none}, or the labels apart)", name);
  if (!s) s = nle__dataset_transpose(ctx, *ds);
  if (s) nle_dataset_free(ds);
  return s;
}
