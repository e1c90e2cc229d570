/* dataset.c — reading points and labels from any supported source: format
 * recognised from the content, built-in names, label handling. */
#include "io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

nle_status nle__dataset_new(nle_ctx *ctx, const char *name, size_t rows, size_t cols,
                            nle_dataset **out) {
  *out = NULL;
  nle_dataset *ds = nle__calloc(ctx, 1, sizeof *ds, "a dataset");
  if (!ds) return NLE_ERR_NOMEM;
  ds->name = strdup(name ? name : "");
  nle_status s = ds->name ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  if (!s) {
    s = nle_matf_alloc(ctx, rows, cols, &ds->X);
    if (s == NLE_ERR_MEMCAP) nle__fail_prefix(ctx, name);
  }
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

void nle_class_names_free(char ***names, int32_t n_classes) {
  if (!names || !*names) return;
  for (int32_t i = 0; i < n_classes; i++) free((*names)[i]);
  free(*names);
  *names = NULL;
}

void nle_dataset_free(nle_dataset **ds) {
  if (!ds || !*ds) return;
  nle_matf_free(&(*ds)->X);
  nle_csr_free(&(*ds)->sparse);
  free((*ds)->labels);
  nle_class_names_free(&(*ds)->class_names, (*ds)->n_classes);
  free((*ds)->name);
  free(*ds);
  *ds = NULL;
}

/* The class values as names ("1", "-1"): what legends and text outputs
 * show, the values the labels had. */
static nle_status value_names(nle_ctx *ctx, const double *values, int32_t C, char ***names) {
  *names = nle__calloc(ctx, C ? (size_t)C : 1, sizeof **names, "the class names");
  if (!*names) return NLE_ERR_NOMEM;
  for (int32_t c = 0; c < C; c++) {
    char num[32];
    snprintf(num, sizeof num, "%.0f", values[c]);
    if (!((*names)[c] = strdup(num))) {
      nle_class_names_free(names, C);
      return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for the class names");
    }
  }
  return NLE_OK;
}

/* Numbers as classes (nle_labels_encode's rule), the values kept as names. */
static nle_status labels_from_numbers(nle_ctx *ctx, const char *where, const double *v, size_t n, double limit,
                                      int32_t **labels, int32_t *n_classes, char ***class_names) {
  int32_t *l = nle__malloc(ctx, (n ? n : 1) * sizeof *l, "labels");
  if (!l) return NLE_ERR_NOMEM;
  double *values = NULL;
  int32_t C = 0;
  nle_status s = nle__labels_encode_real(ctx, where, v, n, limit, l, &C, &values);
  if (!s) s = value_names(ctx, values, C, class_names);
  free(values);
  if (s) {
    free(l);
    return s;
  }
  *labels = l;
  *n_classes = C;
  return NLE_OK;
}

nle_status nle__labels_from_column(nle_ctx *ctx, const char *where, const nle_matf *col, int32_t **labels,
                                   int32_t *n_classes, char ***class_names) {
  *labels = NULL;
  *n_classes = 0;
  *class_names = NULL;
  if (col->cols != 1)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: labels must be one column, found %zu", where, col->cols);
  double *v = nle__malloc(ctx, (col->rows ? col->rows : 1) * sizeof *v, "labels");
  if (!v) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < col->rows; i++) v[i] = col->data[i];
  /* read as single precision: whole numbers are exact up to 2^24 */
  nle_status s = labels_from_numbers(ctx, where, v, col->rows, 16777216.0, labels, n_classes, class_names);
  free(v);
  return s;
}

nle_status nle__labels_from_strings(nle_ctx *ctx, const char *where, char **strings, int64_t n, int32_t **labels,
                                    int32_t *n_classes, char ***class_names) {
  *labels = NULL;
  *n_classes = 0;
  *class_names = NULL;
  /* A column of numbers is numbers (classes in numeric order, "10" after
   * "9"); anything else is names. */
  double *v = nle__malloc(ctx, (n > 0 ? (size_t)n : 1) * sizeof *v, "labels");
  if (!v) return NLE_ERR_NOMEM;
  int numeric = 1;
  for (int64_t i = 0; i < n && numeric; i++) {
    char *end;
    v[i] = strtod(strings[i], &end);
    numeric = *strings[i] && *end == '\0';
  }
  nle_status s;
  if (numeric) {
    s = labels_from_numbers(ctx, where, v, (size_t)n, 9007199254740992.0, labels, n_classes, class_names);
  } else {
    int32_t *l = nle__malloc(ctx, (n > 0 ? (size_t)n : 1) * sizeof *l, "labels");
    s = l ? nle__labels_encode_strings(ctx, strings, (size_t)n, l, n_classes, class_names) : NLE_ERR_NOMEM;
    if (s) free(l);
    else *labels = l;
  }
  free(v);
  return s;
}

static const uint8_t hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

nle__container nle__container_of(const uint8_t *head, size_t len) {
  /* HDF5's superblock is at 0 or after a user block of 512, 1024, ... bytes
   * (MATLAB v7.3 files start with their own 128-byte text, then HDF5 at 512) */
  if (len >= 8 && !memcmp(head, hdf5_signature, 8)) return NLE__HDF5;
  if (len >= 20 && !memcmp(head, "MATLAB ", 7) && memmem(head, len < 116 ? len : 116, "MAT-file", 8))
    return NLE__MATFILE;
  for (size_t at = 512; at <= len - 8 && len >= 8; at *= 2)
    if (!memcmp(head + at, hdf5_signature, 8)) return NLE__HDF5;
  if (len >= 4 && (!memcmp(head, "PK\x03\x04", 4) || !memcmp(head, "PK\x05\x06", 4))) return NLE__ZIP;
  return NLE__PLAIN;
}

static int is_mtx(const uint8_t *buf, size_t len) { return len >= 14 && !memcmp(buf, "%%MatrixMarket", 14); }

/* Formats users bring that nlembed does not read, known by their first
 * bytes: refused by name rather than parsed as text. */
static const char *foreign_format(const uint8_t *b, size_t len) {
  if (len >= 3 && !memcmp(b, "BZh", 3)) return "bzip2-compressed data (decompress it first, or recompress with gzip)";
  if (len >= 6 && !memcmp(b, "\xfd" "7zXZ\0", 6)) return "xz-compressed data (decompress it first, or recompress with gzip)";
  if (len >= 4 && !memcmp(b, "\x28\xb5\x2f\xfd", 4)) return "zstd-compressed data (decompress it first, or recompress with gzip)";
  if (len >= 6 && !memcmp(b, "7z\xbc\xaf\x27\x1c", 6)) return "a 7-Zip archive";
  if (len >= 4 && !memcmp(b, "PAR1", 4)) return "a Parquet file (save as CSV, .npy or .h5ad)";
  if (len >= 6 && !memcmp(b, "ARROW1", 6)) return "an Arrow/Feather file (save as CSV, .npy or .h5ad)";
  if (len >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5) return "a Python pickle (not read, being unsafe: save with np.save or as .h5ad)";
  if (len >= 5 && (!memcmp(b, "RDX2\n", 5) || !memcmp(b, "RDX3\n", 5) || !memcmp(b, "X\n\0\0\0", 5)))
    return "R data (save with write.csv, Matrix::writeMM or as .h5ad)";
  return NULL;
}

/* The same by name, for formats whose content would otherwise be taken for
 * another (a gzip'ed R file, a spreadsheet's zip). */
static const char *foreign_name(const char *path) {
  static const struct {
    const char *ext, *what;
  } names[] = {{".rds", "R data (save with write.csv, Matrix::writeMM or as .h5ad)"},
               {".rda", "R data (save with write.csv, Matrix::writeMM or as .h5ad)"},
               {".rdata", "R data (save with write.csv, Matrix::writeMM or as .h5ad)"},
               {".xlsx", "a spreadsheet (save it as CSV)"},
               {".xls", "a spreadsheet (save it as CSV)"},
               {".ods", "a spreadsheet (save it as CSV)"},
               {".parquet", "a Parquet file (save as CSV, .npy or .h5ad)"},
               {".feather", "an Arrow/Feather file (save as CSV, .npy or .h5ad)"},
               {".pkl", "a Python pickle (not read, being unsafe: save with np.save or as .h5ad)"},
               {".pickle", "a Python pickle (not read, being unsafe: save with np.save or as .h5ad)"}};
  char ext[16];
  nle__path_ext(path, ext, sizeof ext);
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (!strcmp(ext, names[i].ext)) return names[i].what;
  return NULL;
}

/* What a gzip stream is decides how much of it is worth inflating: the size
 * its .npy or IDX header declares, or text that must parse as far as its
 * first MiB goes. A bomb is refused from its start, not after its inflation. */
static nle_status judge_inflated(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                                 const void *opts, size_t *limit, int *text) {
  *limit = SIZE_MAX;
  *text = 0;
  if (len >= 2 && head[0] == 0x1f && head[1] == 0x8b)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: gzip data inside gzip data is not supported", name);
  if (nle__container_of(head, len) != NLE__PLAIN)
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: a gzip'ed HDF5, .mat or .npz file: decompress it first (gunzip)",
                     name);
  if (foreign_format(head, len))
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: gzip'ed %s is not read", name, foreign_format(head, len));
  if (is_mtx(head, len)) {
    /* Matrix Market text: its header now, its size line bounds the rest */
    *text = 1;
    return nle__probe_mtx(ctx, name, head, len);
  }
  if (len >= 6 && memcmp(head, "\x93NUMPY", 6) == 0) return nle__npy_extent(ctx, name, head, len, whole, limit);
  if (len >= 4 && head[0] == 0 && head[1] == 0) return nle__idx_extent(ctx, name, head, len, limit);
  *text = 1;
  return whole ? NLE_OK : nle__probe_text(ctx, name, (const char *)head, len, opts);
}

/* A dense matrix read as stored, transposed when the options ask. */
static nle_status transpose_dense(nle_ctx *ctx, const char *name, const nle_read_opts *opts, nle_dataset **ds) {
  if (!opts || !opts->transpose || !*ds) return NLE_OK;
  nle_status s = NLE_OK;
  if ((*ds)->labels)
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: the data have a label column: transposed, it would be a row (give "
                  "{@label-column=none}, or the labels apart)", name);
  if (!s) s = nle__dataset_transpose(ctx, *ds);
  if (s) nle_dataset_free(ds);
  return s;
}

static nle_status parse_plain(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                              const nle_read_opts *opts, nle_dataset **out) {
  nle_status s;
  if (len >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0) s = nle_parse_npy(ctx, name, buf, len, out);
  else if (len >= 4 && buf[0] == 0 && buf[1] == 0) s = nle_parse_idx(ctx, name, buf, len, out);
  else s = nle_parse_text(ctx, name, (const char *)buf, len, opts, out);
  return s ? s : transpose_dense(ctx, name, opts, out);
}

/* Parses a buffer whose format is recognised from its first bytes. */
nle_status nle__parse_buffer(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                               const nle_read_opts *opts, int depth, nle_dataset **out) {
  *out = NULL;
  if (len == 0) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: empty file", name);
  if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
    if (depth > 0)
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: gzip data inside gzip data is not supported", name);
    uint8_t *raw;
    size_t raw_len;
    nle_status s = nle__gunzip_judged(ctx, name, buf, len, judge_inflated, opts, &raw, &raw_len);
    if (s) return s;
    s = nle__parse_buffer(ctx, name, raw, raw_len, opts, depth + 1, out);
    free(raw);
    return s;
  }
  if (is_mtx(buf, len)) return nle__parse_mtx(ctx, name, buf, len, opts && opts->transpose, opts, out);
  switch (nle__container_of(buf, len)) {
  case NLE__HDF5: return nle__parse_hdf5(ctx, name, buf, len, NULL, opts, 0, out);
  case NLE__MATFILE: return nle__parse_mat(ctx, name, buf, len, NULL, opts, 0, out);
  case NLE__ZIP: return nle__parse_npz(ctx, name, buf, len, NULL, opts, 0, out);
  case NLE__PLAIN: break;
  }
  if (foreign_format(buf, len))
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: %s is not read", name, foreign_format(buf, len));
  return parse_plain(ctx, name, buf, len, opts, out);
}

/* "FILE:NAME" when FILE exists and the whole does not: *file (allocated)
 * and *inner; 0 for a plain path. The rightmost colon that leaves an
 * existing file wins. */
static int split_source(nle_ctx *ctx, const char *source, char **file, const char **inner, nle_status *s) {
  struct stat st;
  *file = NULL;
  *inner = NULL;
  *s = NLE_OK;
  if (stat(source, &st) == 0) return 0;
  for (const char *c = strrchr(source, ':'); c; c = c > source ? memrchr(source, ':', (size_t)(c - source)) : NULL) {
    char *prefix = strndup(source, (size_t)(c - source));
    if (!prefix) {
      *s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
      return 0;
    }
    if (stat(prefix, &st) == 0 && S_ISREG(st.st_mode)) {
      *file = prefix;
      *inner = c + 1;
      return 1;
    }
    free(prefix);
  }
  return 0;
}

/* The first bytes of a file (0 when it cannot be read: the reader that
 * follows names the problem). */
static size_t file_head(const char *path, uint8_t *head, size_t cap) {
  FILE *f = fopen(path, "rb");
  struct stat st;
  size_t got = f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? fread(head, 1, cap, f) : 0;
  if (f) fclose(f);
  return got;
}

/* A container file (HDF5, .mat, .npz), or "FILE:NAME" inside one: read,
 * *handled set; a plain file: *handled 0 and nothing done. */
static nle_status read_container(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int flags,
                                 nle_dataset **out, int *handled) {
  *out = NULL;
  *handled = 0;
  char *file;
  const char *inner;
  nle_status s;
  int split = split_source(ctx, source, &file, &inner, &s);
  if (s) return s;
  const char *path = split ? file : source;
  uint8_t head[4096 + 8];
  size_t got = file_head(path, head, sizeof head);
  nle__container kind = nle__container_of(head, got);
  if (kind == NLE__PLAIN && !split) return NLE_OK;
  *handled = 1;
  if (kind == NLE__HDF5) {
    s = nle__read_hdf5(ctx, path, inner, opts, flags, out);
  } else if (kind == NLE__MATFILE) {
    s = nle__read_mat(ctx, path, inner, opts, flags, out);
  } else if (kind == NLE__ZIP) {
    uint8_t *buf = NULL;
    size_t len;
    s = nle__read_file(ctx, path, &buf, &len);
    if (!s) s = nle__parse_npz(ctx, path, buf, len, inner, opts, flags, out);
    free(buf);
  } else {
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: not an HDF5, .mat or .npz file: there is no '%s' inside it (no such file either)",
                  path, inner);
  }
  if (!s) {
    /* the dataset is named as the source was */
    char *name = strdup(source);
    if (!name) {
      s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
      nle_dataset_free(out);
    } else {
      free((*out)->name);
      (*out)->name = name;
    }
  }
  free(file);
  return s;
}

/* A folder of 10x Genomics files: its matrix.mtx[.gz], features x cells,
 * read with the cells as points. */
static nle_status read_10x(nle_ctx *ctx, const char *dir, const nle_read_opts *opts, nle_dataset **out) {
  static const char *const names[] = {"matrix.mtx", "matrix.mtx.gz"};
  char path[4096];
  struct stat st;
  for (size_t i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    nle_read_opts flipped;
    if (opts) flipped = *opts;
    else nle_read_opts_init(&flipped);
    flipped.transpose = !flipped.transpose;
    uint8_t *buf;
    size_t len;
    nle_status s = nle__read_file(ctx, path, &buf, &len);
    if (s) return s;
    int gz = len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
    const uint8_t *b = buf;
    if (!(gz || is_mtx(b, len)))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: not a Matrix Market file (no %%%%MatrixMarket header)", path);
    else
      s = nle__parse_buffer(ctx, path, buf, len, &flipped, 0, out);
    free(buf);
    char *name = s ? NULL : strdup(dir); /* the dataset is named as the source was */
    if (!s && !name) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
    if (s) {
      nle_dataset_free(out);
      return s;
    }
    free((*out)->name);
    (*out)->name = name;
    return NLE_OK;
  }
  return nle__fail(ctx, NLE_ERR_IO, "%s: a folder, and not one of 10x Genomics data (no matrix.mtx or matrix.mtx.gz in it)",
                   dir);
}

/* A file named as a container or Matrix Market whose content is not one:
 * damaged (or misnamed), not text to be parsed as numbers. */
static nle_status check_named_format(nle_ctx *ctx, const char *path) {
  static const struct {
    const char *ext, *what;
  } named[] = {{".h5", "an HDF5 file (no HDF5 signature)"},
               {".hdf5", "an HDF5 file (no HDF5 signature)"},
               {".h5ad", "an AnnData .h5ad file (no HDF5 signature)"},
               {".loom", "a loom file (no HDF5 signature)"},
               {".mat", "a MATLAB v5, v7 or v7.3 file (MATLAB v4 files are not read: save with -v7)"},
               {".npz", "a .npz file (not a zip archive)"},
               {".mtx", "a Matrix Market file (no %%MatrixMarket header)"}};
  char ext[16];
  nle__path_ext(path, ext, sizeof ext);
  uint8_t head[16];
  size_t got = file_head(path, head, sizeof head);
  if (got >= 2 && head[0] == 0x1f && head[1] == 0x8b) return NLE_OK; /* judged once inflated */
  for (size_t i = 0; got && i < sizeof named / sizeof *named; i++)
    if (!strcmp(ext, named[i].ext) && !(i == 6 && is_mtx(head, got)))
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: not %s: damaged or misnamed?", path, named[i].what);
  return NLE_OK;
}

static nle_status read_any(nle_ctx *ctx, const char *source, const nle_read_opts *opts,
                           nle_dataset **out) {
  nle_status s;
  if (nle__dataset_builtin(ctx, source, out, &s)) return s;
  struct stat st;
  if (stat(source, &st) == 0 && S_ISDIR(st.st_mode)) return read_10x(ctx, source, opts, out);
  if (foreign_name(source))
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: %s is not read", source, foreign_name(source));
  int handled = 0;
  s = read_container(ctx, source, opts, 0, out, &handled);
  if (handled || s) return s;
  s = nle__read_npy_file(ctx, source, out, &handled);
  if (handled || s) return s ? s : transpose_dense(ctx, source, opts, out);
  s = check_named_format(ctx, source);
  if (s) return s;
  uint8_t *buf;
  size_t len;
  s = nle__read_file(ctx, source, &buf, &len);
  if (s) return s;
  /* The content decides the format, but a file named .npy that does not
   * start like one is a damaged .npy, not text to be parsed as numbers. */
  char ext[16];
  int gz = len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
  if (!gz && !strcmp(nle__path_ext(source, ext, sizeof ext), ".npy")) {
    s = nle_parse_npy(ctx, source, buf, len, out);
    if (!s) s = transpose_dense(ctx, source, opts, out);
  } else
    s = nle__parse_buffer(ctx, source, buf, len, opts, 0, out);
  free(buf);
  return s;
}

nle_status nle_dataset_read(nle_ctx *ctx, const char *source, const nle_read_opts *opts,
                            nle_dataset **out) {
  *out = NULL;
  if (!source || !*source) return nle__fail(ctx, NLE_ERR_ARG, "no input given");
  nle_status s = read_any(ctx, source, opts, out);
  if (s) return s;
  if ((*out)->X && (*out)->X->cols == 0) {
    nle_dataset_free(out);
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: no data columns (only labels)", source);
  }
  return NLE_OK;
}

nle_status nle_labels_read(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int64_t expected_n,
                           int32_t **labels, int64_t *n, int32_t *n_classes, char ***class_names) {
  *labels = NULL;
  *n = 0;
  *n_classes = 0;
  if (class_names) *class_names = NULL;
  nle_read_opts o;
  nle_read_opts_init(&o);
  o.label_column = 0;
  nle_dataset *ds = NULL;
  nle_status s;
  int container = 0;
  if (nle__dataset_builtin(ctx, source, &ds, &s)) {
    if (!s && !ds->labels) s = nle__fail(ctx, NLE_ERR_ARG, "%s: this dataset has no labels", source);
    if (s) {
      nle_dataset_free(&ds);
      return s;
    }
  } else if ((s = read_container(ctx, source, &o, NLE__READ_LABELS, &ds, &container)) || container) {
    /* a column inside a container (cells.h5ad:obs/cell_type, a.npz:y); a
     * row vector (MATLAB's habit) is the column */
    if (!s && ds->X && ds->X->rows == 1 && ds->X->cols > 1 && !ds->labels) {
      ds->X->rows = ds->X->cols;
      ds->X->cols = 1;
    }
    size_t width = s ? 1 : ds->X->cols + (ds->labels ? 1 : 0);
    if (width != 1)
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: labels must be a single column, found %zu columns (name one column "
                    "inside the file)", source, width);
    if (!s && !ds->labels)
      s = nle__labels_from_column(ctx, source, ds->X, &ds->labels, &ds->n_classes, &ds->class_names);
  } else {
    uint8_t *buf;
    size_t len;
    s = nle__read_file(ctx, source, &buf, &len);
    /* A one-column text file of names ("Ankle boot"): with no comma, tab
     * or semicolon anywhere, each line is one field, spaces and all. */
    bool one_field = !s && !memchr(buf, ',', len) && !memchr(buf, '\t', len) && !memchr(buf, ';', len) &&
                     !memchr(buf, '\0', len) && !(len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) &&
                     !(len >= 6 && !memcmp(buf, "\x93NUMPY", 6)) && !is_mtx(buf, len);
    if (one_field) o.delimiter = '\t';
    /* Names with a space ("class 3") read as a space-separated data file
     * whose header names a label column: when the lines as one field each
     * are as many labels as points, they are the labels. */
    if (one_field && expected_n > 0 && opts && opts->label_column == NLE_LABEL_AUTO) {
      nle_status os = nle__parse_buffer(ctx, source, buf, len, &o, 0, &ds);
      if (!os && (int64_t)ds->X->rows == expected_n && ds->labels) {
        free(buf);
        buf = NULL;
      } else {
        nle_dataset_free(&ds);
        nle__clear_error(ctx);
      }
    }
    /* A data file with a label column (named with --label-column, or by its
     * header): its labels. An explicit column's errors are the answer; an
     * automatic attempt that finds none falls back to the one-column file. */
    if (!s && buf && opts && opts->label_column != NLE_LABEL_NONE) {
      nle_read_opts wide = *opts;
      wide.transpose = wide.sparse_ok = false;
      nle_status ws = nle__parse_buffer(ctx, source, buf, len, &wide, 0, &ds);
      if (!ws && ds->labels) {
        free(buf);
        buf = NULL;
      } else {
        nle_dataset_free(&ds);
        if (ws && opts->label_column != NLE_LABEL_AUTO) {
          free(buf);
          return ws;
        }
        nle__clear_error(ctx);
      }
    }
    if (!s && buf) {
      s = nle__parse_buffer(ctx, source, buf, len, &o, 0, &ds);
      free(buf);
    }
    /* Text gives labels from column 0 and no data columns; binary formats one
     * numeric column. Anything wider is not a label file (unless its label
     * column was found above). */
    size_t width = s ? 0 : ds->X->cols + (ds->labels ? 1 : 0);
    if (!s && width != 1 && !(opts && opts->label_column != NLE_LABEL_NONE && ds->labels))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: labels must be a single column, found %zu columns",
                    source, width);
    if (!s && !ds->labels)
      s = nle__labels_from_column(ctx, source, ds->X, &ds->labels, &ds->n_classes, &ds->class_names);
  }
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  int64_t count = (int64_t)ds->X->rows;
  if (!s && expected_n > 0 && count != expected_n)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: %lld labels for %lld points", source, (long long)count,
                  (long long)expected_n);
  if (!s) {
    *labels = ds->labels;
    ds->labels = NULL;
    *n = count;
    *n_classes = ds->n_classes;
    if (class_names) {
      *class_names = ds->class_names;
      ds->class_names = NULL;
    }
  }
  nle_dataset_free(&ds);
  return s;
}
