/* labels.c — class labels encoded as scikit-learn's LabelEncoder does: the
 * classes are the distinct values present, in increasing order (numbers by
 * value, names by their bytes), and each point's code 0..C-1 indexes them.
 * Every reader and every front door that takes labels comes through here,
 * so labels 1..20 (as MATLAB data sets ship them), labels with gaps, -1 (a
 * noise label in some data sets: a class like any other) and names all
 * give the same classes. */
#include "internal.h"

#include <math.h>
#include <stdio.h>

typedef struct {
  double v;
  size_t i;
} keyed;

static int by_value(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i; /* qsort is not stable: ties in point order */
}

nle_status nle__labels_encode_real(nle_ctx *ctx, const char *where, const double *v, size_t n, double limit,
                                   int32_t *codes, int32_t *n_classes, double **values) {
  *n_classes = 0;
  if (values) *values = NULL;
  if (n > (size_t)INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "%s: %zu labels (at most 2^31 - 1)", where, n);
  for (size_t i = 0; i < n; i++) {
    if (isnan(v[i])) return nle__fail(ctx, NLE_ERR_VALUE, "%s: the label of row %zu is NaN (a missing label)", where, i);
    if (v[i] != floor(v[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: the label of row %zu is %.17g, not a whole number (labels are classes: "
                       "integers or names)", where, i, v[i]);
    if (fabs(v[i]) > limit)
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: the label of row %zu is %.17g, past %.0f in magnitude (the largest "
                       "this source holds exactly)", where, i, v[i], limit);
  }
  keyed *k = nle__malloc(ctx, (n ? n : 1) * sizeof *k, "the labels' order");
  if (!k) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) k[i].v = v[i] == 0 ? 0.0 : v[i], k[i].i = i; /* -0 is 0 */
  qsort(k, n, sizeof *k, by_value);
  int32_t C = 0;
  for (size_t a = 0; a < n; a++) {
    if (a && k[a].v != k[a - 1].v) C++;
    codes[k[a].i] = C;
  }
  C = n ? C + 1 : 0;
  nle_status s = NLE_OK;
  if (values) {
    *values = nle__malloc(ctx, (C ? (size_t)C : 1) * sizeof(double), "the class values");
    if (!*values) s = NLE_ERR_NOMEM;
    for (size_t a = 0, c = 0; !s && a < n; a++)
      if (!a || k[a].v != k[a - 1].v) (*values)[c++] = k[a].v;
  }
  free(k);
  if (!s) *n_classes = C;
  return s;
}

nle_status nle_labels_encode(nle_ctx *ctx, const char *where, const int32_t *labels, size_t n, int32_t *codes,
                             int32_t *n_classes, int32_t **values) {
  if (n_classes) *n_classes = 0;
  if (values) *values = NULL;
  if (!labels || !codes || !n_classes) return nle__fail(ctx, NLE_ERR_ARG, "nle_labels_encode: NULL argument");
  if (!where) where = "labels";
  double *v = nle__malloc(ctx, (n ? n : 1) * sizeof *v, "the labels"), *cv = NULL;
  if (!v) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) v[i] = labels[i];
  nle_status s = nle__labels_encode_real(ctx, where, v, n, 2147483648.0, codes, n_classes, values ? &cv : NULL);
  if (!s && values) {
    *values = nle__malloc(ctx, (*n_classes ? (size_t)*n_classes : 1) * sizeof(int32_t), "the class values");
    if (!*values) s = NLE_ERR_NOMEM;
    for (int32_t c = 0; !s && c < *n_classes; c++) (*values)[c] = (int32_t)cv[c];
  }
  free(v), free(cv);
  if (s) *n_classes = 0;
  return s;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

nle_status nle__labels_encode_strings(nle_ctx *ctx, char *const *strings, size_t n, int32_t *codes,
                                      int32_t *n_classes, char ***names) {
  *n_classes = 0;
  *names = NULL;
  if (n > (size_t)INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "%zu labels (at most 2^31 - 1)", n);
  char **sorted = nle__malloc(ctx, (n ? n : 1) * sizeof *sorted, "the label names");
  if (!sorted) return NLE_ERR_NOMEM;
  memcpy(sorted, strings, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, by_name);
  size_t distinct = 0;
  for (size_t i = 0; i < n; i++)
    if (!i || strcmp(sorted[i], sorted[distinct - 1])) sorted[distinct++] = sorted[i];
  char **out = nle__calloc(ctx, distinct ? distinct : 1, sizeof *out, "the label names");
  nle_status s = out ? NLE_OK : NLE_ERR_NOMEM;
  for (size_t c = 0; !s && c < distinct; c++)
    if (!(out[c] = strdup(sorted[c]))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for the label names");
  for (size_t i = 0; !s && i < n; i++) {
    char *const *hit = bsearch(&strings[i], sorted, distinct, sizeof *sorted, by_name);
    codes[i] = (int32_t)(hit - sorted);
  }
  free(sorted);
  if (s) {
    for (size_t c = 0; out && c < distinct; c++) free(out[c]);
    free(out);
    return s;
  }
  *n_classes = (int32_t)distinct;
  *names = out;
  return NLE_OK;
}
