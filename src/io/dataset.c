/* dataset.c — the base the readers build on: a dataset's making and
 * freeing, labels from a column or from strings, its renaming. Which
 * reader takes a source is readers.c's. */
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

nle_status nle__dataset_rename(nle_ctx *ctx, nle_dataset *ds, const char *name) {
  char *copy = strdup(name);
  if (!copy) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  free(ds->name);
  ds->name = copy;
  return NLE_OK;
}
