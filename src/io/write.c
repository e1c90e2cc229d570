/* write.c — writers for dense matrices, labels and sparse matrices; the
 * format follows the extension, and every file is written atomically. */
#include "io_internal.h"
#include "../core/comm.h"

#include <stdlib.h>
#include <string.h>

typedef enum { OUT_NPY, OUT_TEXT } out_format;

static nle_status output_format(nle_ctx *ctx, const char *path, out_format *fmt, char *delim) {
  char ext[16];
  nle__path_ext(path, ext, sizeof ext);
  *delim = ',';
  if (!strcmp(ext, ".npy")) *fmt = OUT_NPY;
  else if (!strcmp(ext, ".csv")) *fmt = OUT_TEXT;
  else if (!strcmp(ext, ".tsv")) {
    *fmt = OUT_TEXT;
    *delim = '\t';
  } else if (!strcmp(ext, ".txt")) {
    *fmt = OUT_TEXT;
    *delim = ' ';
  } else {
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: unknown output extension \"%s\" (use .npy, .csv, .tsv or .txt)",
                     path, ext);
  }
  return NLE_OK;
}

/* One writer for the three element types keeps the formats identical. */
typedef enum { ELEM_DOUBLE, ELEM_FLOAT, ELEM_INT32 } elem_type;

static nle_status write_dense(nle_ctx *ctx, const char *path, const void *data, elem_type t,
                              int64_t rows, int64_t cols, int one_dim);

/* A distributed text output: rank 0 writes the gathered rows. */
typedef struct {
  const char *path;
  elem_type t;
  int64_t cols;
  int one_dim;
} dense_args;

static nle_status write_all_rows(nle_ctx *ctx, const void *all, size_t n, const void *user) {
  const dense_args *a = user;
  return write_dense(ctx, a->path, all, a->t, (int64_t)n, a->cols, a->one_dim);
}

static nle_status write_dense(nle_ctx *ctx, const char *path, const void *data, elem_type t,
                              int64_t rows, int64_t cols, int one_dim) {
  out_format fmt;
  char delim;
  nle_status s = output_format(ctx, path, &fmt, &delim);
  if (s) return s;
  if (fmt != OUT_NPY && nle__distributed(ctx)) { /* text: gathered, written by rank 0 */
    dense_args args = {path, t, cols, one_dim};
    return nle__write_gathered(ctx, data, (size_t)rows, (size_t)cols * (t == ELEM_DOUBLE ? sizeof(double) : 4),
                               write_all_rows, &args);
  }
  if (fmt == OUT_NPY) {
    if (t == ELEM_DOUBLE) return nle__write_npy_f64(ctx, path, data, rows, cols);
    if (t == ELEM_FLOAT) return nle__write_npy_f32(ctx, path, data, rows, cols);
    return nle__write_npy_i32(ctx, path, data, rows, cols, one_dim);
  }
  nle__afile af;
  s = nle__afile_open(ctx, path, &af);
  if (s) return s;
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t j = 0; j < cols; j++) {
      size_t e = (size_t)(i * cols + j);
      if (j) fputc(delim, af.f);
      if (t == ELEM_DOUBLE) fprintf(af.f, "%.17g", ((const double *)data)[e]);
      else if (t == ELEM_FLOAT) fprintf(af.f, "%.9g", (double)((const float *)data)[e]);
      else fprintf(af.f, "%d", ((const int32_t *)data)[e]);
    }
    fputc('\n', af.f);
  }
  return nle__afile_commit(ctx, &af);
}

nle_status nle_write_matd(nle_ctx *ctx, const char *path, const nle_matd *m) {
  return write_dense(ctx, path, m->data, ELEM_DOUBLE, (int64_t)m->rows, (int64_t)m->cols, 0);
}

nle_status nle_write_matf(nle_ctx *ctx, const char *path, const nle_matf *m) {
  return write_dense(ctx, path, m->data, ELEM_FLOAT, (int64_t)m->rows, (int64_t)m->cols, 0);
}

nle_status nle_write_labels(nle_ctx *ctx, const char *path, const int32_t *labels, int64_t n) {
  return write_dense(ctx, path, labels, ELEM_INT32, n, 1, 1);
}

typedef struct {
  const char *path;
  char *const *class_names;
  int32_t n_classes;
} named_args;

static nle_status write_all_named(nle_ctx *ctx, const void *all, size_t n, const void *user) {
  const named_args *a = user;
  return nle_write_labels_named(ctx, a->path, all, (int64_t)n, a->class_names, a->n_classes);
}

nle_status nle_write_labels_named(nle_ctx *ctx, const char *path, const int32_t *labels, int64_t n,
                                  char *const *class_names, int32_t n_classes) {
  out_format fmt;
  char delim;
  nle_status s = output_format(ctx, path, &fmt, &delim);
  if (s) return s;
  if (class_names && fmt != OUT_NPY && nle__distributed(ctx)) {
    named_args args = {path, class_names, n_classes};
    return nle__write_gathered(ctx, labels, (size_t)n, sizeof *labels, write_all_named, &args);
  }
  if (class_names && fmt == OUT_NPY) { /* the values of labels read as numbers */
    int32_t *values = nle__malloc(ctx, (n_classes > 0 ? (size_t)n_classes : 1) * sizeof *values, "the class values");
    if (!values) return NLE_ERR_NOMEM;
    bool numbers = true;
    for (int32_t c = 0; c < n_classes && numbers; c++) {
      char *end;
      long long v = class_names[c] ? strtoll(class_names[c], &end, 10) : 0;
      numbers = class_names[c] && *class_names[c] && !*end && v >= INT32_MIN && v <= INT32_MAX;
      values[c] = (int32_t)v;
    }
    int32_t *out = numbers ? nle__malloc(ctx, (n > 0 ? (size_t)n : 1) * sizeof *out, "the labels") : NULL;
    s = numbers && !out ? NLE_ERR_NOMEM : NLE_OK;
    for (int64_t i = 0; out && i < n; i++) out[i] = labels[i] >= 0 && labels[i] < n_classes ? values[labels[i]] : labels[i];
    if (!s) s = nle_write_labels(ctx, path, out ? out : labels, n);
    free(values), free(out);
    return s;
  }
  if (!class_names) return nle_write_labels(ctx, path, labels, n);
  nle__afile af;
  s = nle__afile_open(ctx, path, &af);
  if (s) return s;
  for (int64_t i = 0; i < n; i++) {
    int32_t c = labels[i];
    const char *name = c >= 0 && c < n_classes && class_names[c] ? class_names[c] : "";
    /* one name a line; quoted when it holds a field separator */
    int quote = strpbrk(name, ",;\t") != NULL;
    fprintf(af.f, quote ? "\"%s\"\n" : "%s\n", name);
  }
  return nle__afile_commit(ctx, &af);
}

nle_status nle_write_mati32(nle_ctx *ctx, const char *path, const int32_t *a, int64_t rows, int64_t cols) {
  return write_dense(ctx, path, a, ELEM_INT32, rows, cols, 0);
}

nle_status nle_write_csr_mtx(nle_ctx *ctx, const char *path, const nle_csr *m) {
  if (nle__distributed(ctx)) return nle__write_csr_gathered(ctx, path, m);
  nle__afile af;
  nle_status s = nle__afile_open(ctx, path, &af);
  if (s) return s;
  fprintf(af.f, "%%%%MatrixMarket matrix coordinate real general\n%% written by nlembed %s\n%lld %lld %lld\n",
          NLE_VERSION_STRING, (long long)m->rows, (long long)m->cols, (long long)m->nnz);
  const char *fmt = m->dtype == NLE_F32 ? "%lld %d %.9g\n" : "%lld %d %.17g\n";
  for (int64_t i = 0; i < m->rows; i++)
    for (int64_t k = m->rowptr[i]; k < m->rowptr[i + 1]; k++)
      fprintf(af.f, fmt, (long long)i + 1, m->colind[k] + 1, nle_csr_value(m, k));
  return nle__afile_commit(ctx, &af);
}
