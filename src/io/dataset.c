/* dataset.c — reading points and labels from any supported source: format
 * recognised from the content, built-in names, label handling. */
#include "io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  free((*ds)->labels);
  nle_class_names_free(&(*ds)->class_names, (*ds)->n_classes);
  free((*ds)->name);
  free(*ds);
  *ds = NULL;
}

static int is_label_integer(double v) { return v == floor(v) && v >= 0 && v < 16777216.0; }

nle_status nle__labels_from_column(nle_ctx *ctx, const char *where, const nle_matf *col,
                                   int32_t **labels, int32_t *n_classes) {
  *labels = NULL;
  *n_classes = 0;
  if (col->cols != 1)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: labels must be one column, found %zu", where, col->cols);
  int32_t *l = nle__malloc(ctx, col->rows * sizeof *l, "labels");
  if (!l) return NLE_ERR_NOMEM;
  int32_t top = -1;
  for (size_t i = 0; i < col->rows; i++) {
    double v = col->data[i];
    if (!is_label_integer(v)) {
      free(l);
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: label %zu is %g, expected a whole number in [0, 2^24)",
                       where, i + 1, v);
    }
    l[i] = (int32_t)v;
    if (l[i] > top) top = l[i];
  }
  *labels = l;
  *n_classes = top + 1;
  return NLE_OK;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

nle_status nle__labels_from_strings(nle_ctx *ctx, char **strings, int64_t n, int32_t **labels,
                                    int32_t *n_classes, char ***class_names) {
  *labels = NULL;
  *n_classes = 0;
  *class_names = NULL;
  int all_integer = 1;
  for (int64_t i = 0; i < n && all_integer; i++) {
    char *end;
    double v = strtod(strings[i], &end);
    all_integer = *strings[i] && *end == '\0' && is_label_integer(v);
  }
  int32_t *l = nle__malloc(ctx, (size_t)n * sizeof *l, "labels");
  if (!l) return NLE_ERR_NOMEM;
  if (all_integer) {
    int32_t top = -1;
    for (int64_t i = 0; i < n; i++) {
      l[i] = (int32_t)strtod(strings[i], NULL);
      if (l[i] > top) top = l[i];
    }
    *labels = l;
    *n_classes = top + 1;
    return NLE_OK;
  }
  /* String labels: number the distinct names in sorted order. */
  char **sorted = nle__malloc(ctx, (size_t)n * sizeof *sorted, "label names");
  if (!sorted) {
    free(l);
    return NLE_ERR_NOMEM;
  }
  memcpy(sorted, strings, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_str);
  int64_t distinct = 0;
  for (int64_t i = 0; i < n; i++)
    if (i == 0 || strcmp(sorted[i], sorted[distinct - 1]) != 0) sorted[distinct++] = sorted[i];
  char **names = calloc((size_t)distinct, sizeof *names);
  nle_status s = names ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for label names");
  for (int64_t c = 0; !s && c < distinct; c++)
    if (!(names[c] = strdup(sorted[c]))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  for (int64_t i = 0; !s && i < n; i++) {
    char **hit = bsearch(&strings[i], sorted, (size_t)distinct, sizeof *sorted, cmp_str);
    l[i] = (int32_t)(hit - sorted);
  }
  free(sorted);
  if (s) {
    free(l);
    nle_class_names_free(&names, (int32_t)distinct);
    return s;
  }
  *labels = l;
  *n_classes = (int32_t)distinct;
  *class_names = names;
  return NLE_OK;
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
  if (len >= 6 && memcmp(head, "\x93NUMPY", 6) == 0) return nle__npy_extent(ctx, name, head, len, whole, limit);
  if (len >= 4 && head[0] == 0 && head[1] == 0) return nle__idx_extent(ctx, name, head, len, limit);
  *text = 1;
  return whole ? NLE_OK : nle__probe_text(ctx, name, (const char *)head, len, opts);
}

/* Parses a buffer whose format is recognised from its first bytes. */
nle_status nle__parse_buffer(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                               const nle_read_opts *opts, int depth, nle_dataset **out) {
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
  if (len >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0) return nle_parse_npy(ctx, name, buf, len, out);
  if (len >= 4 && buf[0] == 0 && buf[1] == 0) return nle_parse_idx(ctx, name, buf, len, out);
  return nle_parse_text(ctx, name, (const char *)buf, len, opts, out);
}

static nle_status read_any(nle_ctx *ctx, const char *source, const nle_read_opts *opts,
                           nle_dataset **out) {
  nle_status s;
  if (nle__dataset_builtin(ctx, source, out, &s)) return s;
  int handled = 0;
  s = nle__read_npy_file(ctx, source, out, &handled);
  if (handled || s) return s;
  uint8_t *buf;
  size_t len;
  s = nle__read_file(ctx, source, &buf, &len);
  if (s) return s;
  /* The content decides the format, but a file named .npy that does not
   * start like one is a damaged .npy, not text to be parsed as numbers. */
  char ext[16];
  int gz = len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
  if (!gz && !strcmp(nle__path_ext(source, ext, sizeof ext), ".npy"))
    s = nle_parse_npy(ctx, source, buf, len, out);
  else
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
  if ((*out)->X->cols == 0) {
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
  if (nle__dataset_builtin(ctx, source, &ds, &s)) {
    if (!s && !ds->labels) s = nle__fail(ctx, NLE_ERR_ARG, "%s: this dataset has no labels", source);
  } else {
    uint8_t *buf;
    size_t len;
    s = nle__read_file(ctx, source, &buf, &len);
    /* A data file with a label column (named with --label-column, or by its
     * header): its labels. An explicit column's errors are the answer; an
     * automatic attempt that finds none falls back to the one-column file. */
    if (!s && opts && opts->label_column != NLE_LABEL_NONE) {
      nle_read_opts wide = *opts;
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
      /* A one-column text file of names ("Ankle boot"): with no comma, tab
       * or semicolon anywhere, each line is one field, spaces and all. */
      if (!memchr(buf, ',', len) && !memchr(buf, '\t', len) && !memchr(buf, ';', len) && !memchr(buf, '\0', len) &&
          !(len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) && !(len >= 6 && !memcmp(buf, "\x93NUMPY", 6)))
        o.delimiter = '\t';
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
      s = nle__labels_from_column(ctx, source, ds->X, &ds->labels, &ds->n_classes);
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
