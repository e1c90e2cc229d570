/* est_spectral.c — the estimator families of the spectral methods (LE, LLE,
 * MLLE, LTSA, HLLE, Isomap, diffusion maps) and of spectral clustering:
 * one option table for the graph, the weights and the solver, read at the
 * spectral options' place in either struct; the Nystrom and weights maps;
 * the "spectral-model" file (a clustering's carries its centres). */
#include "estimator_internal.h"

#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const spectral_methods[] = {"le", "lle", "mlle", "ltsa", "hlle", "isomap", "diffmap", NULL};
static const char *const cluster_methods[] = {"cluster", NULL};

static int spectral_variant(const char *method) {
  return !strcmp(method, "le") ? NLE_SPECTRAL_LE : nle_spectral_method_parse(method);
}
static int cluster_variant(const char *method) {
  (void)method;
  return NLE_SPECTRAL_LE;
}

static void spectral_init(void *opts, int variant) {
  (void)variant;
  nle_spectral_opts_init(opts);
}
static void cluster_init(void *opts, int variant) {
  (void)variant;
  nle_cluster_opts_init(opts);
}

NLE__ENUM_NAME_OF(nle_knn_method_name, nle_knn_method)
NLE__ENUM_NAME_OF(nle_symmetrize_name, nle_symmetrize_rule)
NLE__ENUM_NAME_OF(nle_affinity_kind_name, nle_affinity_kind)
NLE__ENUM_NAME_OF(nle_laplacian_name, nle_laplacian_kind)
NLE__ENUM_NAME_OF(nle_components_name, nle_components_policy)
NLE__ENUM_NAME_OF(nle_eigen_solver_name, nle_eigen_solver)
NLE__ENUM_NAME_OF(nle_landmark_method_name, nle_landmark_method)

/* The spectral options at member path P of struct T ("" in the spectral
 * options themselves, "spectral." in a clustering's). */
#define S_INT(T, P, n, f, a) {n, NLE__OPT_INT, offsetof(T, P f), a, NULL, NULL}
#define S_REAL(T, P, n, f, a) {n, NLE__OPT_REAL, offsetof(T, P f), a, NULL, NULL}
#define S_BOOL(T, P, n, f) {n, NLE__OPT_BOOL, offsetof(T, P f), false, NULL, NULL}
#define S_ENUM(T, P, n, f, fn, parse) {n, NLE__OPT_ENUM, offsetof(T, P f), true, fn##_of, parse}
#define GRAPH_OPTIONS(T, P)                                                                    \
  S_INT(T, P, "neighbors", k, false), S_REAL(T, P, "radius", radius, false),                   \
      S_ENUM(T, P, "knn-method", knn_method, nle_knn_method_name, nle_knn_method_parse),       \
      S_INT(T, P, "trees", knn_approx.n_trees, true),                                          \
      S_INT(T, P, "leaf-size", knn_approx.leaf_size, true),                                    \
      S_INT(T, P, "max-candidates", knn_approx.max_candidates, true),                          \
      S_INT(T, P, "knn-iters", knn_approx.max_iters, true),                                    \
      S_REAL(T, P, "knn-delta", knn_approx.delta, false), S_INT(T, P, "pca", pca_dims, true),  \
      S_INT(T, P, "pca-candidates", pca_candidates, true),                                     \
      S_ENUM(T, P, "symmetrize", symmetrize, nle_symmetrize_name, nle_symmetrize_parse),       \
      S_ENUM(T, P, "affinity", affinity, nle_affinity_kind_name, nle_affinity_kind_parse),     \
      S_REAL(T, P, "sigma", sigma, true), S_INT(T, P, "tuning-k", tuning_k, false),            \
      S_REAL(T, P, "perplexity", perplexity, true),                                            \
      S_ENUM(T, P, "laplacian", laplacian, nle_laplacian_name, nle_laplacian_parse),           \
      S_ENUM(T, P, "components", components, nle_components_name, nle_components_parse),       \
      S_ENUM(T, P, "solver", solver, nle_eigen_solver_name, nle_eigen_solver_parse),           \
      S_REAL(T, P, "tol", tol, false), S_REAL(T, P, "reg", reg, false),                        \
      S_INT(T, P, "landmarks", landmarks, false), S_INT(T, P, "kz", kz, true),                 \
      S_ENUM(T, P, "landmark-method", landmark_method, nle_landmark_method_name,               \
             nle_landmark_method_parse),                                                       \
      S_BOOL(T, P, "landmark-graph", landmark_graph), S_REAL(T, P, "alpha", alpha, false),     \
      S_INT(T, P, "time", diffusion_time, false)

static const nle__option spectral_options[] = {S_INT(nle_spectral_opts, , "dim", dim, false),
                                               GRAPH_OPTIONS(nle_spectral_opts, ),
                                               {NULL, 0, 0, false, NULL, NULL}};

static const nle__option cluster_options[] = {
    S_INT(nle_cluster_opts, , "clusters", clusters, false),
    S_INT(nle_cluster_opts, , "dims", dims, true),
    S_BOOL(nle_cluster_opts, , "normalize-rows", normalize_rows),
    S_INT(nle_cluster_opts, , "restarts", restarts, false),
    S_BOOL(nle_cluster_opts, , "warm-start", warm_start),
    S_INT(nle_cluster_opts, , "max-iters", max_iters, false),
    GRAPH_OPTIONS(nle_cluster_opts, spectral.),
    {NULL, 0, 0, false, NULL, NULL}};

#define LE NLE__FOR(NLE_SPECTRAL_LE)
static const nle__option_scope spectral_scopes[] = {
    {"laplacian", LE},
    {"landmarks", LE | NLE__FOR(NLE_SPECTRAL_ISOMAP)},
    {"kz", LE},
    {"landmark-method", LE},
    {"landmark-graph", LE},
    {"reg", LE | NLE__FOR(NLE_SPECTRAL_LLE) | NLE__FOR(NLE_SPECTRAL_MLLE)},
    {"alpha", NLE__FOR(NLE_SPECTRAL_DIFFMAP)},
    {"time", NLE__FOR(NLE_SPECTRAL_DIFFMAP)},
    {NULL, 0}};

/* The LLE family reconstructs each point from its neighbours' coordinates:
 * it takes points only (a graph of sparse rows or of distances would not
 * do), so it searches no graph here. */
static bool needs_points(int variant) {
  return variant == NLE_SPECTRAL_LLE || variant == NLE_SPECTRAL_MLLE || variant == NLE_SPECTRAL_LTSA ||
         variant == NLE_SPECTRAL_HLLE;
}

static int spectral_graph_k(const nle_estimator *e, size_t n) {
  (void)n;
  return needs_points(e->variant) ? 0 : ((const nle_spectral_opts *)e->opts)->k;
}
static int cluster_graph_k(const nle_estimator *e, size_t n) {
  (void)n;
  return ((const nle_cluster_opts *)e->opts)->spectral.k;
}

/* The report's figures of a spectral embedding. */
static void report_spectral(nle__json *j, const nle_spectral_result *r) {
  nle__json_numbers(j, "eigenvalues", r->eigenvalues, (size_t)r->n_eigenvalues);
  nle__json_printf(j, ", \"components\": %d, \"joined_edges\": %lld", r->components, (long long)r->joined_edges);
  nle__json_string(j, "components_policy", nle_components_name(r->resolved.components));
  nle__json_string(j, "knn", r->knn_used == NLE_KNN_AUTO ? "none" : nle_knn_method_name(r->knn_used));
  nle__json_string(j, "solver_used", nle_eigen_solver_name(r->solver_used));
  nle__json_number(j, "residual_variance", r->residual_variance);
  if (r->n_landmarks) {
    nle__json_printf(j, ", \"landmarks_used\": %zu", r->n_landmarks);
    nle__json_number(j, "reconstruction_error", r->reconstruction_error);
  }
  nle__json_printf(j, ", \"seconds\": {\"knn\": %.3f, \"graph\": %.3f, \"eigen\": %.3f, \"total\": %.3f}",
                   r->knn_seconds, r->graph_seconds, r->eigen_seconds, r->total_seconds);
}

static nle_status spectral_fit(nle_estimator *e, const nle__est_input *in) {
  if (!in->Y && !in->knn && !in->affinities)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: takes dense points, not precomputed distances (the method needs the "
                     "points themselves)", e->method);
  nle_spectral_opts o = *(const nle_spectral_opts *)e->opts;
  o.keep_model = e->keep_model && in->Y;
  nle_spectral_input si = {.Y = in->Y, .knn = in->knn, .affinities = in->affinities};
  nle_spectral_result *r = NULL;
  nle_status s = nle_spectral_embed(e->ctx, (nle_spectral_method)e->variant, &si, &o, &r);
  if (s < 0) return s;
  nle_status k = nle__est_keep_X(e, r->X);
  if (!k) k = nle__est_keep_resolved(e, &r->resolved);
  if (!k) {
    e->model = r->model;
    r->model = NULL;
    nle__est_report_options(e, &r->resolved);
    report_spectral(&e->report, r);
  }
  nle_spectral_result_free(&r);
  return k ? k : s;
}

static nle_status cluster_fit(nle_estimator *e, const nle__est_input *in) {
  nle_cluster_opts o = *(const nle_cluster_opts *)e->opts;
  o.spectral.keep_model = e->keep_model && in->Y;
  nle_spectral_input si = {.Y = in->Y, .knn = in->knn, .affinities = in->affinities};
  nle_cluster_result *r = NULL;
  nle_status s = nle_spectral_cluster(e->ctx, &si, &o, &r);
  if (s < 0) return s;
  nle_status k = nle__est_keep_X(e, r->embedding->X);
  if (!k) k = nle__est_keep_resolved(e, &r->resolved);
  if (!k) {
    e->labels = malloc(r->n * sizeof *e->labels);
    if (!e->labels) k = nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method);
  }
  if (!k) {
    memcpy(e->labels, r->labels, r->n * sizeof *e->labels);
    e->model = r->embedding->model;
    r->embedding->model = NULL;
    nle__est_report_options(e, &r->resolved);
    nle__json_number(&e->report, "inertia", r->inertia);
    nle__json_printf(&e->report, ", \"warm_started\": %s, \"kmeans_seconds\": %.3f",
                     r->warm_started ? "true" : "false", r->kmeans_seconds);
    report_spectral(&e->report, r->embedding);
  }
  nle_cluster_result_free(&r);
  return k ? k : s;
}

static nle_status transform(nle_estimator *e, const nle_matf *Y, nle_matd **X) {
  return nle_spectral_transform(e->ctx, e->model, Y, X);
}

static nle_status predict(nle_estimator *e, const nle_matd *X, int32_t *labels) {
  return nle_spectral_assign(e->ctx, e->model, X, labels);
}

static nle_status save(nle_estimator *e, const char *path) {
  return nle_spectral_model_save(e->ctx, e->model, path, true);
}

/* A spectral model's file; a clustering's (it has centres) makes the
 * estimator a clustering. */
static nle_status load(nle_estimator *e, const char *path) {
  nle_spectral_model *m = NULL;
  nle_status s = nle_spectral_model_load(e->ctx, path, &m);
  if (s) return s;
  e->model = m;
  e->n = m->n;
  e->D = m->D;
  if (m->centres) {
    s = nle__est_become(e, "cluster");
    if (s) return s;
    nle_cluster_opts *o = e->opts;
    o->spectral = m->opts;
    o->clusters = m->clusters;
    o->dims = (int)m->dim;
    o->normalize_rows = m->normalize_rows;
  } else {
    s = nle__est_become(e, nle_spectral_method_name(m->method));
    if (s) return s;
    *(nle_spectral_opts *)e->opts = m->opts;
  }
  return nle__est_keep_X(e, m->X);
}

static void free_model(void **model) {
  nle_spectral_model *m = *model;
  nle_spectral_model_free(&m);
  *model = NULL;
}

const nle__family nle__family_spectral = {
    .methods = spectral_methods,
    .variant_of = spectral_variant,
    .opts_size = sizeof(nle_spectral_opts),
    .opts_init = spectral_init,
    .options = spectral_options,
    .scopes = spectral_scopes,
    .graph_k = spectral_graph_k,
    .fit = spectral_fit,
    .transform = transform,
    .file_kind = "spectral-model",
    .save = save,
    .load = load,
    .free_model = free_model,
};

const nle__family nle__family_cluster = {
    .methods = cluster_methods,
    .variant_of = cluster_variant,
    .opts_size = sizeof(nle_cluster_opts),
    .opts_init = cluster_init,
    .options = cluster_options,
    .scopes = spectral_scopes, /* a clustering is LE's */
    .graph_k = cluster_graph_k,
    .fit = cluster_fit,
    .transform = transform,
    .predict = predict,
    .save = save,
    .free_model = free_model,
};
