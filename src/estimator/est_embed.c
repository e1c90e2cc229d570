/* est_embed.c — the estimator family of the nonlinear embeddings (EE, t-EE,
 * s-SNE, t-SNE, SNE): nle_embed's options by the tool's names, F(y) and
 * f(x) through the trained model, its "model" file. */
#include "estimator_internal.h"

#include "../core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const methods[] = {"tsne", "tee", "ee", "ssne", "sne", NULL};

static int variant_of(const char *method) { return nle_model_parse(method); }

static void opts_init(void *opts, int variant) {
  nle_embed_opts *o = opts;
  nle_embed_opts_init(o);
  o->model = (nle_model_kind)variant;
}

NLE__ENUM_NAME_OF(nle_wneg_name, nle_wneg_kind)
NLE__ENUM_NAME_OF(nle_repulsion_name, nle_repulsion)
NLE__ENUM_NAME_OF(nle_opt_name, nle_opt_kind)
NLE__ENUM_NAME_OF(nle_step_name, nle_step_kind)
NLE__ENUM_NAME_OF(nle_init_name, nle_init_kind)
NLE__ENUM_NAME_OF(nle_knn_method_name, nle_knn_method)

#define AT(f) offsetof(nle_embed_opts, f)
#define INT(n, f, a) {n, NLE__OPT_INT, AT(f), a, NULL, NULL}
#define REAL(n, f, a) {n, NLE__OPT_REAL, AT(f), a, NULL, NULL}
#define ENUM(n, f, fn) {n, NLE__OPT_ENUM, AT(f), true, fn##_of, fn##_parse_int}

/* The parse functions return int already; the names only need the cast. */
#define nle_wneg_name_parse_int nle_wneg_parse
#define nle_repulsion_name_parse_int nle_repulsion_parse
#define nle_opt_name_parse_int nle_opt_parse
#define nle_step_name_parse_int nle_step_parse
#define nle_init_name_parse_int nle_init_parse
#define nle_knn_method_name_parse_int nle_knn_method_parse

static const nle__option options[] = {
    INT("dim", dim, false),
    REAL("perplexity", perplexity, true),
    INT("neighbors", k, true),
    REAL("sigma", sigma, true),
    ENUM("knn-method", knn_method, nle_knn_method_name),
    INT("trees", knn_approx.n_trees, true),
    INT("leaf-size", knn_approx.leaf_size, true),
    INT("max-candidates", knn_approx.max_candidates, true),
    INT("knn-iters", knn_approx.max_iters, true),
    REAL("knn-delta", knn_approx.delta, false),
    INT("pca", pca_dims, true),
    INT("pca-candidates", pca_candidates, true),
    REAL("lambda", lambda, true),
    ENUM("wneg", wneg, nle_wneg_name),
    INT("wneg-dims", wneg_dims, false),
    ENUM("repulsion", engine, nle_repulsion_name),
    REAL("theta", theta, false),
    INT("fft-order", fft.order, false),
    REAL("fft-box", fft.box_width, true),
    INT("fgt-order", fgt.order, false),
    INT("fgt-reach", fgt.reach, false),
    INT("accuracy-iters", opt.accuracy_iters, false),
    ENUM("optimizer", opt.kind, nle_opt_name),
    ENUM("step", step, nle_step_name),
    INT("kappa", opt.kappa, false),
    REAL("sdm-tol", opt.sdm_tol, false),
    INT("sdm-iters", opt.sdm_iters, false),
    REAL("c1", opt.c1, false),
    REAL("shrink", opt.shrink, false),
    REAL("learning-rate", opt.learning_rate, true),
    REAL("final-learning-rate", opt.learning_rate_final, true),
    REAL("momentum", opt.momentum, true),
    REAL("exaggeration", opt.exaggeration, true),
    INT("exaggeration-iters", opt.exaggeration_iters, true),
    {"gains", NLE__OPT_BOOL, AT(opt.gains), false, NULL, NULL},
    ENUM("init", init, nle_init_name),
    REAL("init-scale", init_scale, false),
    INT("max-iters", opt.max_iters, true),
    REAL("tol", opt.tol, true),
    REAL("x-tol", opt.x_tol, true),
    REAL("grad-tol", opt.grad_tol, false),
    REAL("time-budget", opt.time_budget, false),
    INT("homotopy", homotopy_steps, true),
    REAL("lambda-start", lambda_start, true),
    INT("lambda-bounds", lambda_bounds, true),
    {NULL, 0, 0, false, NULL, NULL}};

#define EE_FAMILY (NLE__FOR(NLE_MODEL_EE) | NLE__FOR(NLE_MODEL_TEE))
static const nle__option_scope scopes[] = {
    {"wneg", EE_FAMILY},
    {"wneg-dims", EE_FAMILY},
    {"homotopy", EE_FAMILY},
    {"lambda-start", EE_FAMILY},
    {"lambda-bounds", EE_FAMILY},
    /* SNE needs conditional P: entropic W+ only */
    {"sigma", EE_FAMILY | NLE__FOR(NLE_MODEL_SSNE) | NLE__FOR(NLE_MODEL_TSNE)},
    {NULL, 0}};

/* The k the recipe gives, for a graph searched before nle_embed. */
static int graph_k(const nle_estimator *e, size_t n) {
  const nle_embed_opts *o = e->opts;
  int k = nle_embed_knn_size(o);
  /* an automatic k at most the other N - 1 points, as nle_embed resolves it */
  return o->k == NLE_AUTO && n > 1 && (size_t)k >= n ? (int)(n - 1) : k;
}

static nle_status fit(nle_estimator *e, const nle__est_input *in) {
  nle_embed_opts o = *(const nle_embed_opts *)e->opts;
  if (o.init == NLE_INIT_GIVEN)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@init} takes pca, spectral, random or auto", e->method);
  if (in->distances && !in->knn) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: distances without a graph", e->method);
  o.keep_model = e->keep_model && in->Y;
  if (in->init) {
    o.init = NLE_INIT_GIVEN;
    o.init_X = in->init;
  }
  nle_embed_input ei = {.Y = in->Y, .knn = in->knn, .affinities = in->affinities, .source = in->source};
  nle_embed_result *r = NULL;
  nle_status s = nle_embed(e->ctx, &ei, &o, &r);
  if (s < 0) return s;
  nle_status k = nle__est_keep_X(e, r->X);
  if (!k) k = nle__est_keep_resolved(e, &r->resolved);
  if (!k) {
    e->model = r->trained;
    r->trained = NULL;
    nle__json *j = &e->report;
    nle__est_report_options(e, &r->resolved);
    nle__json_string(j, "knn", r->knn_used == NLE_KNN_AUTO ? "none" : nle_knn_method_name(r->knn_used));
    nle__json_printf(j, ", \"iterations\": %d, \"evaluations\": %d", r->report.iterations, r->report.evaluations);
    nle__json_number(j, "E0", r->report.E0);
    nle__json_number(j, "E", r->report.E);
    if (isfinite(r->kl)) nle__json_number(j, "kl_divergence", r->kl); /* the SNE family's */
    nle__json_printf(j, ", \"converged\": %s, \"components\": %d", r->report.converged ? "true" : "false",
                     r->components);
    nle__json_number(j, "lambda_lower", r->lambda_lower);
    nle__json_number(j, "lambda_upper", r->lambda_upper);
    nle__json_number(j, "pca_variance", r->pca_variance);
    nle__json_printf(j, ", \"seconds\": {\"pca\": %.3f, \"knn\": %.3f, \"affinities\": %.3f, \"init\": %.3f, "
                        "\"plan\": %.3f, \"optimize\": %.3f, \"total\": %.3f}",
                     r->seconds.pca, r->seconds.knn, r->seconds.affinities, r->seconds.init, r->seconds.plan,
                     r->seconds.optimize, r->seconds.total);
  }
  nle_embed_result_free(&r);
  return k ? k : s;
}

static nle_status transform(nle_estimator *e, const nle_matf *Y, nle_matd **X) {
  nle_transform_opts o;
  nle_transform_opts_init(&o);
  nle_transform_result *r = NULL;
  nle_status s = nle_transform(e->ctx, e->model, Y, &o, &r);
  if (s >= 0) {
    *X = r->X;
    r->X = NULL;
  }
  nle_transform_result_free(&r);
  return s;
}

static nle_status inverse(nle_estimator *e, const nle_matd *X, nle_matf **Y) {
  return nle_trained_inverse(e->ctx, e->model, X, NLE_AUTO, Y);
}

static nle_status save(nle_estimator *e, const char *path) { return nle_trained_save(e->ctx, e->model, path, true); }

static nle_status load(nle_estimator *e, const char *path) {
  nle_trained *t = NULL;
  nle_status s = nle_trained_load(e->ctx, path, &t);
  if (s) return s;
  e->model = t;
  e->variant = t->kind;
  snprintf(e->method, sizeof e->method, "%s", nle_model_name(t->kind));
  nle_embed_opts *o = e->opts;
  opts_init(o, t->kind);
  o->lambda = t->lambda;
  o->wneg = t->wneg;
  o->perplexity = t->perplexity;
  o->sigma = t->sigma;
  o->k = t->k;
  o->dim = (int)t->X->cols;
  e->n = t->X->rows;
  e->D = t->D;
  return nle__est_keep_X(e, t->X);
}

static void free_model(void **model) {
  nle_trained *t = *model;
  nle_trained_free(&t);
  *model = NULL;
}

const nle__family nle__family_embed = {
    .methods = methods,
    .variant_of = variant_of,
    .opts_size = sizeof(nle_embed_opts),
    .opts_init = opts_init,
    .options = options,
    .scopes = scopes,
    .graph_k = graph_k,
    .fit = fit,
    .transform = transform,
    .inverse = inverse,
    .file_kind = "model",
    .save = save,
    .load = load,
    .free_model = free_model,
};
