/* est_base.c — what the families' files (est_*.c) and the front door
 * (estimator.c) build on, calling none of them: the JSON report writer, an
 * option row's scope and value as text, the fit's report of its options,
 * the kept results, the maps of the projection model that the PCA and the
 * distance and kernel families share, and becoming the method a loaded
 * file names among the families sharing its kind (the front door's table
 * of every family stays estimator.c's alone). */
#include "estimator_internal.h"

#include "../core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- JSON ----------------------------------------------------------------- */

void nle__json_printf(nle__json *j, const char *fmt, ...) {
  if (j->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = j->cap - j->len;
    int n = vsnprintf(j->text ? j->text + j->len : NULL, j->text ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      j->failed = true;
      return;
    }
    if (j->text && (size_t)n < room) {
      j->len += (size_t)n;
      return;
    }
    size_t cap = j->cap ? j->cap : 256;
    while (cap < j->len + (size_t)n + 1) cap *= 2;
    char *t = realloc(j->text, cap);
    if (!t) {
      j->failed = true;
      return;
    }
    j->text = t;
    j->cap = cap;
  }
}

void nle__json_number(nle__json *j, const char *key, double v) {
  if (isfinite(v)) nle__json_printf(j, ", \"%s\": %.10g", key, v);
  else nle__json_printf(j, ", \"%s\": null", key);
}

/* The inside of a JSON string: quotes, backslashes and control bytes
 * escaped. */
static void json_escaped(nle__json *j, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') nle__json_printf(j, "\\%c", c);
    else if (c < 0x20) nle__json_printf(j, "\\u%04x", c);
    else nle__json_printf(j, "%c", c);
  }
}

void nle__json_string(nle__json *j, const char *key, const char *v) {
  nle__json_printf(j, ", \"%s\": \"", key);
  json_escaped(j, v ? v : "");
  nle__json_printf(j, "\"");
}

void nle__json_numbers(nle__json *j, const char *key, const double *v, size_t n) {
  nle__json_printf(j, ", \"%s\": [", key);
  for (size_t i = 0; i < n; i++) {
    if (isfinite(v[i])) nle__json_printf(j, "%s%.10g", i ? ", " : "", v[i]);
    else nle__json_printf(j, "%snull", i ? ", " : "");
  }
  nle__json_printf(j, "]");
}

/* --- option rows and the report -------------------------------------------- */

/* Whether the estimator's method takes the option (the row's scope). */
bool nle__est_takes(const nle_estimator *e, const nle__option *o) { return nle__row_takes(o, e->variant); }

void nle__join_names(const char *const *names, int n, const char *last, char *buf, size_t cap) {
  size_t used = 0;
  if (cap) buf[0] = '\0';
  for (int i = 0; i < n && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i == 0 ? "" : i + 1 == n ? last : ", ", names[i]);
}

/* The value of option o in the struct at base, as text. */
void nle__est_option_text(const nle__option *o, const char *field, char *buf, size_t cap) {
  switch (o->kind) {
  case NLE__OPT_INT: {
    int v = *(const int *)field;
    if (v == NLE_AUTO) snprintf(buf, cap, "auto");
    else snprintf(buf, cap, "%d", v);
    return;
  }
  case NLE__OPT_REAL: {
    double v = *(const double *)field;
    if (v == NLE_AUTO) snprintf(buf, cap, "auto");
    else snprintf(buf, cap, "%.17g", v);
    return;
  }
  case NLE__OPT_BOOL: snprintf(buf, cap, "%s", *(const bool *)field ? "true" : "false"); return;
  case NLE__OPT_ENUM: {
    int v = *(const int *)field;
    snprintf(buf, cap, "%s", v == NLE_AUTO ? "auto" : o->enum_name(v));
    return;
  }
  case NLE__OPT_TEXT: {
    const char *t = *(const char *const *)field;
    snprintf(buf, cap, "%s", t ? t : "");
    return;
  }
  }
}

nle_status nle__est_keep_resolved(nle_estimator *e, const void *resolved) {
  free(e->resolved);
  e->resolved = malloc(e->family->opts_size);
  if (!e->resolved) return nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method);
  memcpy(e->resolved, resolved, e->family->opts_size);
  return NLE_OK;
}

void nle__est_report_options(nle_estimator *e, const void *opts) {
  e->options_at = e->report.len;
  nle__json_printf(&e->report, ", \"options\": {\"metric\": \"%s\"", nle_metric_name(e->metric));
  for (const nle__option *o = e->family->options; o->name; o++) {
    if (!nle__est_takes(e, o) || o->kind == NLE__OPT_TEXT) continue;
    char v[64];
    nle__est_option_text(o, (const char *)opts + o->offset, v, sizeof v);
    if (o->kind == NLE__OPT_ENUM || !strcmp(v, "auto")) nle__json_string(&e->report, o->name, v);
    else nle__json_printf(&e->report, ", \"%s\": %s", o->name, v);
  }
  nle__json_printf(&e->report, "}");
  e->figures_at = e->report.len;
}

nle_status nle__est_keep_X(nle_estimator *e, const nle_matd *X) {
  nle_matd_free(&e->X);
  nle_status s = nle_matd_alloc(e->ctx, X->rows, X->cols, &e->X);
  if (s) return s;
  memcpy(e->X->data, X->data, X->rows * X->cols * sizeof *X->data);
  return NLE_OK;
}

void nle__est_map_report_release(nle_estimator *e) {
  free(e->map_report.text);
  e->map_report = (nle__json){0};
}

void nle__est_map_report(nle_estimator *e, const char *map, const char *model_kind) {
  nle__est_map_report_release(e);
  nle__json_printf(&e->map_report, "{\"map\": \"%s\", \"model_kind\": \"%s\"", map, model_kind);
}

/* --- the projection model's maps --------------------------------------------- */

nle_status nle__est_projection_transform(nle_estimator *e, const nle_matf *Y, nle_matd **X) {
  static const char *const maps[] = {"linear", "triangulation", "centred kernel"};
  const nle_projection_model *p = e->model;
  nle_status s = nle_projection_transform(e->ctx, p, Y, X);
  if (s >= 0) nle__est_map_report(e, maps[p->map], p->method);
  if (s >= 0) nle__json_printf(&e->map_report, ", \"reference_points\": %zu", p->m);
  return s;
}

nle_status nle__est_projection_save(nle_estimator *e, const char *path) {
  return nle_projection_model_save(e->ctx, e->model, path);
}

void nle__est_projection_free(void **model) {
  nle_projection_model *p = *model;
  nle_projection_model_free(&p);
  *model = NULL;
}

/* --- becoming another method ------------------------------------------------ */

void nle__est_release_texts(nle_estimator *e) {
  for (size_t i = 0; i < sizeof e->texts / sizeof *e->texts; i++) {
    free(e->texts[i]);
    e->texts[i] = NULL;
  }
}

nle_status nle__est_reset_map_opts(nle_estimator *e) {
  free(e->map_opts);
  e->map_opts = NULL;
  if (!e->family->map_opts_size) return NLE_OK;
  e->map_opts = calloc(1, e->family->map_opts_size);
  if (!e->map_opts) return nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method);
  e->family->map_opts_init(e->map_opts);
  return NLE_OK;
}

const nle__family *nle__est_family_of(const nle__family *const *families, size_t n, const char *method) {
  for (size_t f = 0; f < n; f++)
    for (const char *const *m = families[f]->methods; *m; m++)
      if (!strcmp(*m, method)) return families[f];
  return NULL;
}

nle_status nle__est_become(nle_estimator *e, const nle__family *const *among, size_t n, const char *method) {
  const nle__family *f = nle__est_family_of(among, n, method);
  if (!f) return nle__fail(e->ctx, NLE_ERR_FORMAT, "a model of an unknown method '%s'", method);
  void *opts = calloc(1, f->opts_size);
  if (!opts) return nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", method);
  free(e->opts);
  nle__est_release_texts(e);
  e->opts = opts;
  e->family = f;
  e->variant = f->variant_of(method);
  snprintf(e->method, sizeof e->method, "%s", method);
  f->opts_init(e->opts, e->variant);
  return nle__est_reset_map_opts(e);
}
