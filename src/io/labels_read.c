/* labels_read.c — nle_labels_read: class labels from any source the readers
 * take (a one-column file, a data file's label column, a column inside a
 * container, a built-in dataset's). */
#include "io_internal.h"
#include "../core/comm.h"

#include <stdlib.h>
#include <string.h>

nle_status nle_labels_read(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int64_t expected_n,
                           int32_t **labels, int64_t *n, int32_t *n_classes, char ***class_names) {
  *labels = NULL;
  *n = 0;
  *n_classes = 0;
  if (class_names) *class_names = NULL;
  if (nle__distributed(ctx)) /* this rank's rows' labels (rows.c) */
    return nle__labels_read_rows(ctx, source, opts, expected_n, labels, n, n_classes, class_names);
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
  } else if ((s = nle__read_container(ctx, source, &o, NLE__READ_LABELS, &ds, &container)) || container) {
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
                     !memchr(buf, '\0', len) && nle__is_plain_text(buf, len);
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
