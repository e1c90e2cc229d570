/* estimator.c — the estimator's front door: a method by name, its options
 * by name (the family's table), the input made by the metric (rows made
 * unit, sparse rows or precomputed distances searched into a kNN graph,
 * dense affinities made sparse), the fit through the family's front door,
 * the report, and the model file. */
#include "estimator_internal.h"

#include "../core/comm.h"
#include "../core/internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const nle__family *const families[] = {&nle__family_embed, &nle__family_pca,  &nle__family_graph, &nle__family_spectral,
                                              &nle__family_cluster, &nle__family_mds, &nle__family_kpca,
                                              &nle__family_lda, &nle__family_kem};
enum { N_FAMILIES = sizeof families / sizeof *families };

/* --- methods and options --------------------------------------------------- */

const char *nle_estimator_method_name(int i) {
  for (int f = 0; f < N_FAMILIES; f++)
    for (const char *const *m = families[f]->methods; *m; m++)
      if (i-- == 0) return *m;
  return NULL;
}

static const nle__family *family_of(const char *method) { return nle__est_family_of(families, N_FAMILIES, method); }

/* The options every method has, kept in the estimator itself. */
static const char *model_data_name(int copy) { return copy == 1 ? "copy" : copy == 0 ? "reference" : "unknown"; }
static int model_data_parse(const char *s) { return !strcmp(s, "copy") ? 1 : !strcmp(s, "reference") ? 0 : -1; }
static const char *metric_name_of(int m) { return nle_metric_name((nle_metric)m); }

static const nle__option common_rows[] = {
    {.name = "metric", .kind = NLE__OPT_ENUM, .offset = offsetof(nle_estimator, metric), .enum_name = metric_name_of,
     .enum_parse = nle_metric_parse, .metavar = "NAME",
     .help = "what the input holds: points compared by euclidean, cosine or correlation distance (rows made unit, "
             "correlation centred first), precomputed distances (N x N, or a sparse graph) or affinities"},
    {.name = "keep-model", .kind = NLE__OPT_BOOL, .offset = offsetof(nle_estimator, keep_model),
     .help = "keep the map for new points (transform, save); false saves its memory"},
    {.name = "model-data", .kind = NLE__OPT_ENUM, .offset = offsetof(nle_estimator, model_data_copy),
     .enum_name = model_data_name, .enum_parse = model_data_parse, .choices = "copy or reference", .metavar = "MODE",
     .help = "a saved model holds a copy of the training data (copy) or only its name and a checksum (reference)"},
    {.name = NULL}};
enum { N_COMMON = sizeof common_rows / sizeof *common_rows - 1 };

/* Where the option's value lives: the estimator's own or the family's
 * options struct (`opts`: e->opts or a resolved copy). */
static char *field_of(const nle_estimator *e, const nle__option *o, const void *opts) {
  bool common = o >= common_rows && o < common_rows + N_COMMON;
  return (char *)(common ? (const void *)e : opts) + o->offset;
}

const char *nle_estimator_option(const nle_estimator *e, int i) {
  if (!e || i < 0) return NULL;
  if (i < N_COMMON) return common_rows[i].name;
  for (const nle__option *o = e->family->options; o->name; o++)
    if (nle__est_takes(e, o) && i-- == N_COMMON) return o->name;
  return NULL;
}

/* The option's name with '_' read as '-', into buf. */
static void canonical(const char *name, char *buf, size_t cap) {
  size_t i = 0;
  for (; name[i] && i + 1 < cap; i++) buf[i] = name[i] == '_' ? '-' : name[i];
  buf[i] = '\0';
}

/* Family f's row of that name or alias (f NULL: the common rows), or
 * NULL; *negated: the name was a switch's "no-" alias. */
static const nle__option *family_row(const nle__family *f, const char *name, bool *negated) {
  *negated = false;
  for (const nle__option *o = f ? f->options : common_rows; o->name; o++) {
    if (!strcmp(o->name, name)) return o;
    if (o->alias && !strcmp(o->alias, name)) {
      *negated = o->kind == NLE__OPT_BOOL && !strncmp(o->alias, "no-", 3);
      return o;
    }
  }
  return NULL;
}

/* The row of that name (or alias) among the common ones and the family's,
 * taken or not. */
static const nle__option *row_named(const nle_estimator *e, const char *name, bool *negated) {
  const nle__option *o = family_row(NULL, name, negated);
  return o ? o : family_row(e->family, name, negated);
}

/* The first family with a row of that name (NULL: the common rows or
 * none, *row NULL then). */
static const nle__family *first_family_of(const char *name, const nle__option **row) {
  bool negated;
  *row = family_row(NULL, name, &negated);
  for (int f = 0; !*row && f < N_FAMILIES; f++)
    if ((*row = family_row(families[f], name, &negated))) return families[f];
  return NULL;
}

const char *nle_estimator_any_option(int i) {
  const nle__option *first;
  for (const nle__option *o = common_rows; o->name; o++)
    if (i-- == 0) return o->name;
  for (int f = 0; f < N_FAMILIES; f++)
    for (const nle__option *o = families[f]->options; o->name; o++)
      if (first_family_of(o->name, &first) == families[f] && first == o && i-- == 0) return o->name;
  return NULL;
}

/* Whether method m of family f takes one of the rows named in `names`
 * ('|' between). */
static bool method_takes_any(const nle__family *f, const char *m, const char *names) {
  for (const char *p = names; *p;) {
    size_t len = strcspn(p, "|");
    char name[64];
    bool negated;
    snprintf(name, sizeof name, "%.*s", (int)len, p);
    const nle__option *o = family_row(NULL, name, &negated);
    if (o) return true;
    o = family_row(f, name, &negated);
    if (o && nle__row_takes(o, f->variant_of(m))) return true;
    p += len + (p[len] == '|');
  }
  return false;
}

const char *nle_estimator_methods_taking(const char *names, char *buf, size_t cap) {
  const char *list[64];
  int n = 0;
  for (int f = 0; names && f < N_FAMILIES; f++)
    for (const char *const *m = families[f]->methods; *m && n < 64; m++)
      if (method_takes_any(families[f], *m, names)) list[n++] = *m;
  nle__join_names(list, n, " and ", buf, cap);
  return buf;
}

/* The family's methods taking a scoped row: "ee and tee". */
static void scope_list(const nle_estimator *e, const nle__option *o, char *list, size_t cap) {
  const char *names[32];
  int n = 0;
  for (const char *const *m = e->family->methods; *m && n < 32; m++)
    if (o->scope & NLE__FOR(e->family->variant_of(*m))) names[n++] = *m;
  nle__join_names(names, n, " and ", list, cap);
}

/* The method's option of that name; NULL with the error set (naming the
 * methods that take it, when other methods of the family do). */
static const nle__option *find_option(const nle_estimator *e, const char *name, bool *negated) {
  const nle__option *o = row_named(e, name, negated);
  if (o && nle__est_takes(e, o)) return o;
  char list[512];
  if (o) {
    if (o->scope_text) snprintf(list, sizeof list, "%s", o->scope_text);
    else scope_list(e, o, list, sizeof list);
    nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@%s} is for %s", e->method, o->name, list);
  } else if (*nle_estimator_methods_taking(name, list, sizeof list)) { /* another family's */
    nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@%s} is for %s", e->method, name, list);
  } else {
    nle__fail(e->ctx, NLE_ERR_VALUE, "%s: no option '%s'", e->method, name);
  }
  return NULL;
}

nle_status nle_estimator_new(nle_ctx *ctx, const char *method, nle_estimator **out) {
  if (!ctx || !method || !out) return ctx ? nle__fail(ctx, NLE_ERR_ARG, "estimator: NULL argument") : NLE_ERR_ARG;
  *out = NULL;
  const nle__family *f = family_of(method);
  if (!f) {
    char list[512];
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; nle_estimator_method_name(i) && used < sizeof list; i++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", nle_estimator_method_name(i));
    return nle__fail(ctx, NLE_ERR_VALUE, "estimator: unknown method '%s' (one of %s)", method, list);
  }
  nle_estimator *e = calloc(1, sizeof *e);
  if (e) e->opts = calloc(1, f->opts_size);
  if (!e || !e->opts) {
    free(e);
    return nle__fail(ctx, NLE_ERR_NOMEM, "estimator: out of memory");
  }
  e->ctx = ctx;
  e->family = f;
  e->variant = f->variant_of(method);
  snprintf(e->method, sizeof e->method, "%s", method);
  f->opts_init(e->opts, e->variant);
  e->metric = NLE_METRIC_EUCLIDEAN;
  e->keep_model = true;
  e->model_data_copy = 1;
  *out = e;
  nle_status s = nle__est_reset_map_opts(e);
  if (s) nle_estimator_free(out);
  return s;
}

/* What a fit leaves, released before the next and at the end. */
static void release_fit(nle_estimator *e) {
  nle_matd_free(&e->X);
  nle_csr_free(&e->graph);
  free(e->beta);
  e->beta = NULL;
  free(e->labels);
  e->labels = NULL;
  free(e->resolved);
  e->resolved = NULL;
  if (e->model) e->family->free_model(&e->model);
  free(e->report.text);
  e->report = (nle__json){0};
  free(e->flat.text);
  e->flat = (nle__json){0};
  e->options_at = e->figures_at = 0;
  nle__est_map_report_release(e);
  e->fitted = false;
}

static void release_input(nle_estimator *e) {
  nle_matf_free(&e->Y_metric);
  nle_csr_free(&e->knn_built);
  nle_csr_free(&e->affinities_built);
}

void nle_estimator_free(nle_estimator **pe) {
  if (!pe || !*pe) return;
  nle_estimator *e = *pe;
  release_fit(e);
  release_input(e);
  nle__est_release_texts(e);
  free(e->opts);
  free(e->map_opts);
  free(e);
  *pe = NULL;
}

const char *nle_estimator_method(const nle_estimator *e) { return e ? e->method : NULL; }

bool nle_estimator_takes_sparse(const nle_estimator *e) {
  return e && e->family->graph_k && e->family->graph_k(e, 1000) > 0;
}

bool nle_estimator_needs_labels(const nle_estimator *e) { return e && e->family->decision != NULL; }

const char *nle_estimator_about(const nle_estimator *e) {
  if (!e || !e->family->abouts) return "";
  for (int i = 0; e->family->methods[i]; i++)
    if (!strcmp(e->family->methods[i], e->method)) return e->family->abouts[i] ? e->family->abouts[i] : "";
  return "";
}

/* The rule of a row's range as the messages say it: "an integer >= 2",
 * "a number in [0, 1)", "a finite number > 0"; `above`: an integer past
 * the top is told the whole range. */
static void range_rule(const nle__option *o, bool above, char *buf, size_t cap) {
  if (o->kind == NLE__OPT_INT) {
    if (o->hi >= INT_MAX && !above) snprintf(buf, cap, "an integer >= %.0f", o->lo);
    else snprintf(buf, cap, "an integer from %.0f to %.0f", o->lo, o->hi);
  } else if (isinf(o->lo) && isinf(o->hi)) {
    snprintf(buf, cap, "a finite number");
  } else if (isinf(o->hi)) {
    snprintf(buf, cap, "a finite number %s %.17g", o->open & NLE__OPEN_LO ? ">" : ">=", o->lo);
  } else if (isinf(o->lo)) {
    snprintf(buf, cap, "a number %s %.17g", o->open & NLE__OPEN_HI ? "<" : "<=", o->hi);
  } else {
    snprintf(buf, cap, "a number in %c%.17g, %.17g%c", o->open & NLE__OPEN_LO ? '(' : '[', o->lo, o->hi,
             o->open & NLE__OPEN_HI ? ')' : ']');
  }
}

/* A name option's values: "auto, exact, bh, fft or fgt". */
static void choices(const nle__option *o, char *list, size_t cap) {
  if (o->choices) {
    snprintf(list, cap, "%s", o->choices);
    return;
  }
  const char *names[64];
  int n = 0;
  if (o->auto_ok) names[n++] = "auto";
  for (int v = 0; n < 64 && strcmp(o->enum_name(v), "unknown"); v++)
    if (!o->enum_takes || o->enum_takes(v)) names[n++] = o->enum_name(v);
  nle__join_names(names, n, " or ", list, cap);
}

static nle_status bad_value(nle_estimator *e, const nle__option *o, const char *value, bool above) {
  char rule[512];
  if (o->kind == NLE__OPT_ENUM) choices(o, rule, sizeof rule);
  else if (o->ranged) range_rule(o, above, rule, sizeof rule);
  else snprintf(rule, sizeof rule, "%s", o->kind == NLE__OPT_INT ? "an integer" : o->kind == NLE__OPT_REAL ? "a number"
                                                                                : "true or false");
  bool or_auto = o->auto_ok && o->kind != NLE__OPT_ENUM;
  if (o->ranged || o->kind == NLE__OPT_ENUM)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@%s} takes %s%s, not \"%s\"", e->method, o->name, rule,
                     or_auto ? " or auto" : "", value);
  return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@%s} takes %s%s, not '%s'", e->method, o->name, rule,
                   or_auto ? " or auto" : "", value);
}

static bool parse_bool(const char *s, bool *out) {
  if (!strcmp(s, "true") || !strcmp(s, "1") || !strcmp(s, "yes")) *out = true;
  else if (!strcmp(s, "false") || !strcmp(s, "0") || !strcmp(s, "no")) *out = false;
  else return false;
  return true;
}

/* An integer or a real option's value, in the row's range. */
static nle_status set_number(nle_estimator *e, const nle__option *o, const char *value, char *field) {
  char *end = NULL;
  errno = 0;
  if (o->kind == NLE__OPT_INT) {
    long long v = strtoll(value, &end, 10);
    bool whole = end != value && !*end;
    bool fits = whole && !errno && v >= -2147483647LL && v <= 2147483647LL;
    if (fits && (!o->ranged || (v >= o->lo && v <= o->hi))) {
      *(int *)field = (int)v;
      return NLE_OK;
    }
    /* above the top only when the text is a whole number past it (strtoll
     * saturates with ERANGE) */
    return bad_value(e, o, value, whole && (errno == ERANGE ? v > 0 : v > o->hi));
  }
  /* no errno test: an underflow to a tiny or zero value is judged by the
   * range like any other (1e-400 is not > 0) */
  double v = strtod(value, &end);
  bool ok = end != value && !*end && isfinite(v);
  if (ok && o->ranged)
    ok = (o->open & NLE__OPEN_LO ? v > o->lo : v >= o->lo) && (o->open & NLE__OPEN_HI ? v < o->hi : v <= o->hi);
  if (!ok) return bad_value(e, o, value, false);
  *(double *)field = v;
  return NLE_OK;
}

/* A text option's value, kept by the estimator (the struct points at it). */
static nle_status set_text(nle_estimator *e, const nle__option *o, const char *value, char *field) {
  size_t slot = (size_t)(o - e->family->options);
  if (slot >= sizeof e->texts / sizeof *e->texts)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: too many text options", e->method);
  char *copy = strdup(value);
  if (!copy) return nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method);
  free(e->texts[slot]);
  e->texts[slot] = copy;
  *(const char **)field = copy;
  return NLE_OK;
}

/* Row o's value from text into its field. */
static nle_status set_row(nle_estimator *e, const nle__option *o, bool negated, const char *value, char *field) {
  if (!strcmp(value, "auto") && o->kind != NLE__OPT_TEXT) {
    if (!o->auto_ok) return bad_value(e, o, value, false);
    if (o->kind == NLE__OPT_REAL) *(double *)field = NLE_AUTO;
    else *(int *)field = NLE_AUTO;
    return NLE_OK;
  }
  switch (o->kind) {
  case NLE__OPT_INT:
  case NLE__OPT_REAL: return set_number(e, o, value, field);
  case NLE__OPT_BOOL: {
    bool b;
    if (!parse_bool(value, &b)) return bad_value(e, o, value, false);
    *(bool *)field = negated ? !b : b;
    return NLE_OK;
  }
  case NLE__OPT_ENUM: {
    int v = o->enum_parse(value);
    if (v == -1 || v == NLE_AUTO || (o->enum_takes && !o->enum_takes(v))) return bad_value(e, o, value, false);
    *(int *)field = v;
    return NLE_OK;
  }
  case NLE__OPT_TEXT: return set_text(e, o, value, field);
  }
  return NLE_ERR_ARG;
}

nle_status nle_estimator_set(nle_estimator *e, const char *name, const char *value) {
  if (!e || !name || !value) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "estimator_set: NULL argument") : NLE_ERR_ARG;
  char key[64];
  canonical(name, key, sizeof key);
  bool negated;
  const nle__option *o = find_option(e, key, &negated);
  if (!o) return NLE_ERR_VALUE;
  return set_row(e, o, negated, value, field_of(e, o, e->opts));
}

nle_status nle_estimator_get(const nle_estimator *e, const char *name, char *buf, size_t cap) {
  if (!e || !name || !buf || !cap) return NLE_ERR_ARG;
  char key[64];
  canonical(name, key, sizeof key);
  bool negated;
  const nle__option *o = find_option(e, key, &negated);
  if (!o) return NLE_ERR_VALUE;
  nle__est_option_text(o, field_of(e, o, e->resolved ? e->resolved : e->opts), buf, cap);
  return NLE_OK;
}

static const char *const kind_names[] = {"int", "number", "switch", "name", "text"};

static void describe(const nle__option *o, const void *defaults, nle_option_info *info);

/* A common row as clients read it, with a fresh estimator's default. */
static void describe_common(const nle__option *o, nle_option_info *info) {
  nle_estimator fresh = {.metric = NLE_METRIC_EUCLIDEAN, .keep_model = true, .model_data_copy = 1};
  describe(o, &fresh, info);
  info->taken = true;
}

/* The row of the first family that has it, its default that family's
 * first method's, taken false. */
static nle_status any_family_info(const char *key, nle_option_info *info) {
  const nle__option *o;
  const nle__family *f = first_family_of(key, &o);
  if (o && !f) { /* a common row: every method's */
    describe_common(o, info);
    return NLE_OK;
  }
  if (!f) return NLE_ERR_VALUE;
  void *opts = calloc(1, f->opts_size);
  if (!opts) return NLE_ERR_NOMEM;
  f->opts_init(opts, f->variant_of(f->methods[0]));
  describe(o, opts, info);
  free(opts);
  return NLE_OK;
}

nle_status nle_estimator_option_info(const nle_estimator *e, const char *name, nle_option_info *info) {
  if (!name || !info) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "option_info: NULL argument") : NLE_ERR_ARG;
  char key[64];
  canonical(name, key, sizeof key);
  if (!e) return any_family_info(key, info);
  bool negated;
  const nle__option *o = row_named(e, key, &negated);
  if (!o) return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: no option '%s'", e->method, name);
  /* the default: what a fresh estimator of this method holds */
  if (o >= common_rows && o < common_rows + N_COMMON) {
    describe_common(o, info);
    return NLE_OK;
  }
  void *opts = calloc(1, e->family->opts_size);
  if (!opts) return nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method);
  e->family->opts_init(opts, e->variant);
  describe(o, opts, info);
  info->taken = nle__est_takes(e, o);
  free(opts);
  return NLE_OK;
}

/* Row o as clients read it, its default from `defaults` (a fresh struct
 * holding its field). */
static void describe(const nle__option *o, const void *defaults, nle_option_info *info) {
  memset(info, 0, sizeof *info);
  info->name = o->name;
  info->alias = o->alias;
  info->short_name = o->short_name;
  info->kind = kind_names[o->kind];
  info->metavar = o->metavar ? o->metavar : o->kind == NLE__OPT_BOOL ? NULL : "VALUE";
  info->help = o->help ? o->help : "";
  info->auto_ok = o->auto_ok;
  if (o->kind == NLE__OPT_ENUM) choices(o, info->values, sizeof info->values);
  else if (o->ranged) range_rule(o, false, info->values, sizeof info->values);
  nle__est_option_text(o, (const char *)defaults + o->offset, info->default_text, sizeof info->default_text);
}

/* --- shared by the families ------------------------------------------------ */

nle_status nle__est_need_model(nle_estimator *e, const char *what) {
  if (!e->fitted) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: %s before a fit", e->method, what);
  if (!e->model && e->input_kind)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: a fit on %s input keeps no model: %s takes a fit on dense points",
                     e->method, e->input_kind, what);
  if (!e->model)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: %s needs the model of a fit with {@keep-model=true}", e->method, what);
  return NLE_OK;
}

nle_status nle__est_metric_rows(nle_estimator *e, const nle_matf *Y, nle_matf **copy, const nle_matf **use) {
  *copy = NULL;
  *use = Y;
  if (e->metric == NLE_METRIC_EUCLIDEAN) return NLE_OK;
  if (e->metric != NLE_METRIC_COSINE && e->metric != NLE_METRIC_CORRELATION)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: new points cannot be mapped by a model fitted on %s input", e->method,
                     nle_metric_name(e->metric));
  nle_status s = nle_metric_rows(e->ctx, Y, e->metric, copy);
  if (!s) *use = *copy;
  return s;
}

/* --- fit -------------------------------------------------------------------- */

static bool rows_metric(nle_metric m) {
  return m == NLE_METRIC_EUCLIDEAN || m == NLE_METRIC_COSINE || m == NLE_METRIC_CORRELATION;
}

/* The input made by the metric into what the family's front door takes. */
static nle_status prepare_input(nle_estimator *e, const nle_estimator_input *input, nle__est_input *in) {
  nle_ctx *ctx = e->ctx;
  const nle_matf *Y = input->Y;
  const nle_csr *S = input->sparse;
  bool graphs = e->family == &nle__family_embed || e->family == &nle__family_spectral ||
                e->family == &nle__family_cluster;
  if ((input->affinities || input->knn) && !graphs)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: takes no given graph or affinities (the embeddings and the spectral "
                     "methods do)", e->method);
  if (input->affinities && input->knn)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: give one of a kNN graph and affinities", e->method);
  if (!Y && !S && (input->affinities || input->knn)) { /* a graph alone: the method's only input */
    const nle_csr *G = input->affinities ? input->affinities : input->knn;
    *in = (nle__est_input){.given_affinities = input->affinities, .knn = input->knn, .init = input->init,
                           .labels = input->labels, .n = (size_t)G->rows};
    e->n = in->n;
    e->D = 0;
    e->input_kind = input->affinities ? "affinities" : "a kNN graph";
    return NLE_OK;
  }
  if (!Y == !S) return nle__fail(ctx, NLE_ERR_ARG, "%s: fit takes exactly one of dense Y and sparse input", e->method);
  size_t n = Y ? Y->rows : (size_t)S->rows, D = Y ? Y->cols : (size_t)S->cols;
  size_t n_all = nle__distributed(ctx) ? e->n : n; /* a rank may hold no rows */
  if (n_all == 0 || D == 0) return nle__fail(ctx, NLE_ERR_VALUE, "%s: the input is empty (%zu x %zu)", e->method, n_all, D);
  if (Y && !Y->data && Y->rows) return nle__fail(ctx, NLE_ERR_ARG, "%s: Y has no data", e->method);
  if (S) {
    nle_status s = nle_csr_validate(ctx, S);
    if (s) return s;
  }
  bool starts = e->family == &nle__family_embed || (e->family == &nle__family_mds && e->variant != NLE_MDS_CLASSICAL &&
                                                    e->variant != NLE_MDS_LANDMARK);
  if (input->init && !starts) return nle__fail(ctx, NLE_ERR_ARG, "%s: takes no given start (init)", e->method);
  if (input->weights && !(e->family == &nle__family_mds && e->variant == NLE_MDS_METRIC))
    return nle__fail(ctx, NLE_ERR_ARG, "%s: takes no weights (metric MDS does)", e->method);
  *in = (nle__est_input){.labels = input->labels, .source = input->source, .init = input->init,
                         .weights = input->weights, .given_affinities = input->affinities, .knn = input->knn,
                         .release_Y = input->release_Y, .release_user = input->release_user, .n = n,
                         .raw_Y = Y, .sparse = S};
  e->n = n;
  e->D = D;
  e->input_kind = S && rows_metric(e->metric) ? "sparse rows" : !rows_metric(e->metric) ? nle_metric_name(e->metric) : NULL;
  int k = e->family->graph_k ? e->family->graph_k(e, n_all) : 0; /* from N, the same on every rank */
  bool rows = e->metric == NLE_METRIC_EUCLIDEAN || e->metric == NLE_METRIC_COSINE ||
              e->metric == NLE_METRIC_CORRELATION;
  if (!rows && n_all != D)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s is %zu x %zu, not square ({@metric=%s} takes an N x N matrix)",
                     e->metric == NLE_METRIC_AFFINITIES ? "affinities" : "dissimilarities", n_all, D,
                     nle_metric_name(e->metric));
  if (rows && Y) { /* points: the method searches them itself */
    const nle_matf *use;
    nle_status s = nle__est_metric_rows(e, Y, &e->Y_metric, &use);
    in->Y = use;
    return s;
  }
  if (e->metric == NLE_METRIC_AFFINITIES) {
    if (S) {
      in->affinities = S;
      return NLE_OK;
    }
    nle_status s = nle_csr_from_dense(ctx, Y, &e->affinities_built);
    in->affinities = e->affinities_built;
    return s;
  }
  if (Y) in->distances = Y; /* precomputed: the MDS family takes them whole */
  if (k <= 0) {
    if (Y) return NLE_OK;
    return nle__fail(ctx, NLE_ERR_ARG, "%s: takes dense %s, not a sparse matrix%s", e->method,
                     rows ? "points" : "distances",
                     e->family == &nle__family_spectral ? " (the method needs the points themselves)" : "");
  }
  nle_knn_method method = NLE_KNN_AUTO;
  const nle_knn_approx_opts *approx = NULL;
  if (e->family->graph_search) e->family->graph_search(e, &method, &approx);
  double t = nle_time_seconds();
  nle_status s = nle_metric_graph(ctx, e->metric, Y, S, k, method, approx, &e->knn_built, &in->search_used);
  in->search_seconds = nle_time_seconds() - t;
  if (s < 0 && input->source && s != NLE_ERR_NOMEM && s != NLE_ERR_MEMCAP && s != NLE_ERR_CANCELLED) {
    /* the input's own fault (a negative distance): name where it came from */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", nle_ctx_error(ctx));
    nle__fail(ctx, s, "%s: %s", input->source, msg);
  }
  in->knn = e->knn_built;
  return s;
}

/* The report with its options block flat: each option under its name
 * with '_' for '-', among the figures. */
static void build_flat(nle_estimator *e) {
  nle__json *f = &e->flat;
  const char *r = e->report.text;
  if (!r || e->figures_at <= e->options_at) {
    nle__json_printf(f, "%s", r ? r : "{}");
    return;
  }
  nle__json_printf(f, "%.*s", (int)e->options_at, r);
  nle__json_printf(f, ", \"metric\": \"%s\"", nle_metric_name(e->metric));
  for (const nle__option *o = e->family->options; o->name; o++) {
    if (!nle__est_takes(e, o) || o->kind == NLE__OPT_TEXT) continue;
    char key[64], v[64];
    canonical(o->json ? o->json : o->name, key, sizeof key);
    for (char *c = key; *c; c++)
      if (*c == '-') *c = '_';
    const char *field = field_of(e, o, e->resolved ? e->resolved : e->opts);
    nle__est_option_text(o, field, v, sizeof v);
    if (o->kind == NLE__OPT_REAL && strcmp(v, "auto")) snprintf(v, sizeof v, "%.10g", *(const double *)field);
    if (o->kind == NLE__OPT_ENUM || !strcmp(v, "auto")) nle__json_string(f, key, v);
    else nle__json_printf(f, ", \"%s\": %s", key, v);
  }
  nle__json_printf(f, "%s", r + e->figures_at);
}

void nle_estimator_observe(nle_estimator *e, const nle_estimator_observer *observer) {
  if (!e) return;
  if (observer) e->observer = *observer;
  else e->observer = (nle_estimator_observer){0};
}

const char *nle_estimator_report_flat(const nle_estimator *e) {
  return e && e->fitted && e->flat.text ? e->flat.text : "{}";
}

nle_status nle_estimator_fit(nle_estimator *e, const nle_estimator_input *input) {
  if (!e || !input) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "estimator_fit: NULL argument") : NLE_ERR_ARG;
  release_fit(e);
  nle__est_input in;
  nle_estimator_input given; /* under a communicator: this rank's canonical rows */
  nle__est_moved moved;
  size_t n_all;
  nle_status s = nle__est_rows_in(e, input, &given, &moved, &n_all);
  e->n = n_all; /* the rows of all ranks, which the input checks need */
  if (s >= 0) s = nle__comm_agree(e->ctx, prepare_input(e, &given, &in));
  if (s >= 0 && nle__distributed(e->ctx)) e->n = n_all;
  if (s >= 0) {
    nle__json_printf(&e->report, "{\"method\": \"%s\", \"n\": %zu, \"D\": %zu", e->method, e->n, e->D);
    s = e->family->fit(e, &in);
    nle__json_printf(&e->report, "}");
  }
  release_input(e);
  if (s >= 0) {
    nle_status back = nle__est_rows_out(e, &moved);
    if (back) s = back;
  }
  nle__est_moved_free(&moved);
  if (s < 0) {
    release_fit(e);
    return s;
  }
  build_flat(e);
  if (e->report.failed || e->flat.failed)
    return nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory for the report", e->method);
  e->fitted = true;
  return s;
}

const nle_matd *nle_estimator_embedding(const nle_estimator *e) { return e && e->fitted ? e->X : NULL; }

nle_estimator_product nle_estimator_makes(const nle_estimator *e) {
  if (!e) return NLE_MAKES_EMBEDDING;
  return e->family->makes ? e->family->makes(e->variant) : NLE_MAKES_EMBEDDING;
}

const nle_csr *nle_estimator_graph(const nle_estimator *e) { return e && e->fitted ? e->graph : NULL; }

const double *nle_estimator_betas(const nle_estimator *e, size_t *n) {
  const double *beta = e && e->fitted ? e->beta : NULL;
  if (n) *n = beta ? e->n : 0;
  return beta;
}

const int32_t *nle_estimator_labels(const nle_estimator *e, size_t *n) {
  /* distributed: this rank's rows' labels, as many as its rows of X */
  if (n) *n = e && e->labels ? (nle__distributed(e->ctx) && e->X ? e->X->rows : e->n) : 0;
  return e && e->fitted ? e->labels : NULL;
}

const char *nle_estimator_report(const nle_estimator *e) {
  return e && e->fitted && e->report.text ? e->report.text : "{}";
}

/* --- new points ------------------------------------------------------------- */

/* Points for a map of a fitted model: as wide as the fit's input. A model
 * loaded from a file is checked by its maps instead, in their own words
 * (those `nlembed transform` has always printed). */
static nle_status check_new_points(nle_estimator *e, const char *what, size_t rows, size_t cols, size_t want) {
  nle_status s = nle__est_need_model(e, what);
  if (!s) s = nle__est_rows_map(e, what); /* under a communicator: each rank's own rows */
  if (!s && !e->file_kind && cols != want)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: %s takes rows of %zu values (as the fit), not %zu", e->method, what,
                     want, cols);
  if (!s && rows == 0 && !nle__distributed(e->ctx)) /* a rank may hold none */
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: %s of no rows", e->method, what);
  return s;
}

/* The map's report closed, or dropped when the map failed. */
static void end_map_report(nle_estimator *e, nle_status s) {
  if (s < 0 || !e->map_report.text) nle__est_map_report_release(e);
  else nle__json_printf(&e->map_report, "}");
}

nle_status nle_estimator_transform(nle_estimator *e, const nle_matf *Ynew, nle_matd **X) {
  if (!e || !Ynew || !X) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "transform: NULL argument") : NLE_ERR_ARG;
  *X = NULL;
  nle_status s = check_new_points(e, "transform", Ynew->rows, Ynew->cols, e->D);
  if (s) return s;
  if (!e->family->transform)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: has no map for new points", e->method);
  nle_matf *copy;
  const nle_matf *use;
  nle__est_map_report_release(e);
  s = nle__est_metric_rows(e, Ynew, &copy, &use);
  if (!s) s = e->family->transform(e, use, X);
  end_map_report(e, s);
  nle_matf_free(&copy);
  return s;
}

nle_status nle_estimator_inverse_exact(nle_estimator *e, const nle_matd *X, nle_matf **Yf, nle_matd **Yd) {
  if (!e || !X || !Yf || !Yd) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "inverse: NULL argument") : NLE_ERR_ARG;
  *Yf = NULL;
  *Yd = NULL;
  nle_status s = check_new_points(e, "inverse", X->rows, X->cols, e->X ? e->X->cols : X->cols);
  if (s) return s;
  if (!e->family->inverse)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: has no map from the embedding back to the data", e->method);
  nle__est_map_report_release(e);
  s = e->family->inverse(e, X, Yf, Yd);
  end_map_report(e, s);
  return s;
}

nle_status nle_estimator_inverse(nle_estimator *e, const nle_matd *X, nle_matf **Y) {
  if (!e || !X || !Y) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "inverse: NULL argument") : NLE_ERR_ARG;
  nle_matd *Yd = NULL;
  nle_status s = nle_estimator_inverse_exact(e, X, Y, &Yd);
  if (s >= 0 && Yd) {
    nle_status c = nle_matd_to_matf(e->ctx, Yd, Y);
    if (c) s = c;
  }
  nle_matd_free(&Yd);
  return s;
}

/* A classifier's scores and probabilities of new points (the rows as the
 * metric compares them), and the label values of their columns. */
static nle_status classify(nle_estimator *e, const char *what, const nle_matf *Ynew, nle_matd **scores,
                           nle_matd **proba, const int32_t **classes) {
  nle_status s = check_new_points(e, what, Ynew->rows, Ynew->cols, e->D);
  if (s) return s;
  if (!e->family->decision) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: is not a classifier", e->method);
  nle_matf *copy;
  const nle_matf *use;
  s = nle__est_metric_rows(e, Ynew, &copy, &use);
  if (!s) s = e->family->decision(e, use, scores, proba, classes);
  nle_matf_free(&copy);
  return s;
}

nle_status nle_estimator_decision(nle_estimator *e, const nle_matf *Ynew, nle_matd **scores) {
  if (!e || !Ynew || !scores) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "decision: NULL argument") : NLE_ERR_ARG;
  *scores = NULL;
  const int32_t *classes;
  return classify(e, "decision", Ynew, scores, NULL, &classes);
}

nle_status nle_estimator_predict_proba(nle_estimator *e, const nle_matf *Ynew, nle_matd **proba) {
  if (!e || !Ynew || !proba) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "predict_proba: NULL argument") : NLE_ERR_ARG;
  *proba = NULL;
  nle_matd *scores = NULL;
  const int32_t *classes;
  nle_status s = classify(e, "predict_proba", Ynew, &scores, proba, &classes);
  nle_matd_free(&scores);
  return s;
}

nle_status nle_estimator_predict(nle_estimator *e, const nle_matf *Ynew, int32_t *labels) {
  if (!e || !Ynew || !labels) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "predict: NULL argument") : NLE_ERR_ARG;
  if (e->family->decision) { /* a classifier: the class of the largest score (the first of equals) */
    nle_matd *scores = NULL;
    const int32_t *classes;
    nle_status s = classify(e, "predict", Ynew, &scores, NULL, &classes);
    for (size_t i = 0; !s && i < scores->rows; i++) {
      const double *z = scores->data + i * scores->cols;
      size_t best = 0;
      for (size_t c = 1; c < scores->cols; c++)
        if (z[c] > z[best]) best = c;
      labels[i] = classes[best];
    }
    nle_matd_free(&scores);
    return s;
  }
  if (!e->family->predict) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: is not a clustering", e->method);
  nle_matd *X = NULL;
  nle_status s = nle_estimator_transform(e, Ynew, &X);
  if (s >= 0) {
    nle_status p = e->family->predict(e, X, labels);
    if (p) s = p;
  }
  nle_matd_free(&X);
  return s;
}

/* --- model files ------------------------------------------------------------ */

nle_status nle_estimator_save(nle_estimator *e, const char *path) {
  if (!e || !path) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "save: NULL argument") : NLE_ERR_ARG;
  nle_status s = nle__est_need_model(e, "save");
  if (!s && nle__distributed(e->ctx))
    s = nle__fail(e->ctx, NLE_ERR_UNSUPPORTED, "%s: saving a model does not run on more than one rank yet", e->method);
  if (s) return s;
  return e->family->save(e, path);
}

nle_status nle_estimator_load(nle_ctx *ctx, const char *path, nle_estimator **out) {
  if (!ctx || !path || !out) return ctx ? nle__fail(ctx, NLE_ERR_ARG, "load: NULL argument") : NLE_ERR_ARG;
  *out = NULL;
  char kind[64];
  nle_status s = nle_file_kind(ctx, path, kind, sizeof kind);
  if (s) return s;
  const nle__family *f = NULL;
  for (int i = 0; i < N_FAMILIES && !f; i++)
    if (families[i]->file_kind && !strcmp(families[i]->file_kind, kind)) f = families[i];
  if (!f) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: a %s file, not a model an estimator loads", path, kind);
  /* the family's first method until the file says which */
  s = nle_estimator_new(ctx, f->methods[0], out);
  if (s) return s;
  nle_estimator *e = *out;
  e->file_kind = f->file_kind;
  s = f->load(e, path);
  if (s) {
    nle_estimator_free(out);
    return s;
  }
  if (!e->resolved) s = nle__est_keep_resolved(e, e->opts);
  if (!s) {
    nle__json_printf(&e->report, "{\"method\": \"%s\", \"n\": %zu, \"D\": %zu, \"loaded\": true", e->method, e->n,
                     e->D);
    nle__json_string(&e->report, "file", path);
    nle__est_report_options(e, e->resolved);
    nle__json_printf(&e->report, "}");
  }
  if (!s && e->report.failed) s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", path);
  if (s) {
    nle_estimator_free(out);
    return s;
  }
  e->fitted = true;
  return NLE_OK;
}

/* --- the maps' options, and what the maps are -------------------------------- */

/* Family f's map row of that name, or NULL. */
static const nle__option *map_row(const nle__family *f, const char *name) {
  for (const nle__option *o = f->map_options; o && o->name; o++)
    if (!strcmp(o->name, name)) return o;
  return NULL;
}

/* The first family with a map row of that name, or NULL. */
static const nle__family *map_family(const char *name) {
  for (int f = 0; f < N_FAMILIES; f++)
    if (map_row(families[f], name)) return families[f];
  return NULL;
}

const char *nle_estimator_map_option(int i) {
  for (int f = 0; f < N_FAMILIES; f++)
    for (const nle__option *o = families[f]->map_options; o && o->name; o++)
      if (map_family(o->name) == families[f] && i-- == 0) return o->name;
  return NULL;
}

nle_status nle_estimator_map_option_info(const nle_estimator *e, const char *name, nle_option_info *info) {
  if (!name || !info) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "map_option_info: NULL argument") : NLE_ERR_ARG;
  char key[64];
  canonical(name, key, sizeof key);
  const nle__family *f = e && map_row(e->family, key) ? e->family : map_family(key);
  if (!f) return e ? nle__fail(e->ctx, NLE_ERR_VALUE, "%s: its maps have no option '%s'", e->method, name)
                   : NLE_ERR_VALUE;
  void *defaults = calloc(1, f->map_opts_size);
  if (!defaults) return e ? nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method) : NLE_ERR_NOMEM;
  f->map_opts_init(defaults);
  describe(map_row(f, key), defaults, info);
  info->taken = e && f == e->family;
  free(defaults);
  return NLE_OK;
}

nle_status nle_estimator_set_map(nle_estimator *e, const char *name, const char *value) {
  if (!e || !name || !value) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "set_map: NULL argument") : NLE_ERR_ARG;
  char key[64];
  canonical(name, key, sizeof key);
  const nle__option *o = map_row(e->family, key);
  if (!o || o->kind == NLE__OPT_TEXT) /* text values are kept by row of the fit's table only */
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: its maps of new points take no {@%s}", e->method, key);
  return set_row(e, o, false, value, (char *)e->map_opts + o->offset);
}

nle_status nle_estimator_maps_info(const nle_estimator *e, nle_estimator_maps *maps) {
  if (!e || !maps) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "maps_info: NULL argument") : NLE_ERR_ARG;
  const nle__family *f = e->family;
  memset(maps, 0, sizeof *maps);
  maps->inverse = f->inverse != NULL;
  maps->labels = f->predict != NULL;
  maps->takes_data = f->attach_data != NULL;
  maps->data_source = f->data_source && e->model ? f->data_source(e) : NULL;
  if (f->maps_refusal) snprintf(maps->refusal, sizeof maps->refusal, "%s", f->maps_refusal);
  else snprintf(maps->refusal, sizeof maps->refusal, "not for a %s model", e->file_kind ? e->file_kind : e->method);
  return NLE_OK;
}

nle_status nle_estimator_attach_data(nle_estimator *e, const nle_matf *Y) {
  if (!e || !Y) return e ? nle__fail(e->ctx, NLE_ERR_ARG, "attach_data: NULL argument") : NLE_ERR_ARG;
  nle_status s = nle__est_need_model(e, "attach_data");
  if (s) return s;
  if (!e->family->attach_data) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: the model holds its own data", e->method);
  return e->family->attach_data(e, Y);
}

const char *nle_estimator_map_report(const nle_estimator *e) {
  return e && e->map_report.text ? e->map_report.text : "{}";
}
