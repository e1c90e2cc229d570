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
#define S_INT(T, P, n, f, a, ...) {.name = n, .kind = NLE__OPT_INT, .offset = offsetof(T, P f), .auto_ok = a, __VA_ARGS__}
#define S_REAL(T, P, n, f, a, ...) {.name = n, .kind = NLE__OPT_REAL, .offset = offsetof(T, P f), .auto_ok = a, __VA_ARGS__}
#define S_BOOL(T, P, n, f, ...) {.name = n, .kind = NLE__OPT_BOOL, .offset = offsetof(T, P f), __VA_ARGS__}
#define S_ENUM(T, P, n, f, fn, parse, ...) \
  {.name = n, .kind = NLE__OPT_ENUM, .offset = offsetof(T, P f), .auto_ok = true, .enum_name = fn##_of, .enum_parse = parse, __VA_ARGS__}
#define LE NLE__FOR(NLE_SPECTRAL_LE)
#define DIFFMAP NLE__FOR(NLE_SPECTRAL_DIFFMAP)
#define GRAPH_OPTIONS(T, P)                                                                    \
  S_INT(T, P, "neighbors", k, false, .help = "neighbours per point of the graph, not counting the point"), S_REAL(T, P, "radius", radius, false, .help = "epsilon-ball neighbourhoods of this radius instead of the k nearest (0: kNN)"),                   \
      S_ENUM(T, P, "knn-method", knn_method, nle_knn_method_name, nle_knn_method_parse, .help = "neighbour search: exact, approx (random-projection forest + NN-descent) or auto (a cost model in N and D)"),       \
      S_INT(T, P, "trees", knn_approx.n_trees, true, .help = "approx: random-projection trees (auto: 4 + N^(1/4) / 2)"),                                          \
      S_INT(T, P, "leaf-size", knn_approx.leaf_size, true, .help = "approx: largest leaf (auto: max(60, k))"),                                    \
      S_INT(T, P, "max-candidates", knn_approx.max_candidates, true, .help = "approx: NN-descent sample per point (auto: 30)"),                          \
      S_INT(T, P, "knn-iters", knn_approx.max_iters, true, .help = "approx: most NN-descent iterations (auto: max(5, log2 N))"),                                    \
      S_REAL(T, P, "knn-delta", knn_approx.delta, false, .help = "approx: stop below knn_delta N k changes per iteration"), S_INT(T, P, "pca", pca_dims, true, .help = "search the neighbours among this many principal components, then re-rank them by their distances in X (auto: 50 when N > 5,000 and D > 100; 0: off)"),  \
      S_INT(T, P, "pca-candidates", pca_candidates, true, .help = "pca: candidates per point re-ranked (auto: k, or 7 k for the spectral methods; 0: keep the components' distances)"),                                     \
      S_ENUM(T, P, "symmetrize", symmetrize, nle_symmetrize_name, nle_symmetrize_parse, .help = "making the graph symmetric: average ((A + A^T) / 2), union or mutual"),       \
      S_ENUM(T, P, "affinity", affinity, nle_affinity_kind_name, nle_affinity_kind_parse, .help = "weights on the kNN graph: binary, gaussian, inverse, self-tuning or entropic; 'precomputed': X holds N x N affinities"),     \
      S_REAL(T, P, "sigma", sigma, true, .help = "affinity='gaussian': width in input units (auto: the median distance to the k-th neighbour)"), S_INT(T, P, "tuning-k", tuning_k, false, .help = "affinity='self-tuning': the neighbour that sets each point's scale"),            \
      S_REAL(T, P, "perplexity", perplexity, true, .help = "affinity='entropic': each point's perplexity over its k neighbours (auto: k / 3)"),                                            \
      S_ENUM(T, P, "laplacian", laplacian, nle_laplacian_name, nle_laplacian_parse, .scope = LE, .help = "random-walk (L v = lambda D v), symmetric or unnormalised"),           \
      S_ENUM(T, P, "components", components, nle_components_name, nle_components_parse, .help = "a disconnected neighbourhood graph: auto (the method's policy), error or allow"),       \
      S_ENUM(T, P, "solver", solver, nle_eigen_solver_name, nle_eigen_solver_parse, .help = "eigensolver: auto, dense, sparse (Lanczos) or shift-invert"),           \
      S_REAL(T, P, "tol", tol, false, .help = "Lanczos relative tolerance (0: machine precision)"), S_REAL(T, P, "reg", reg, false, .scope = LE | NLE__FOR(NLE_SPECTRAL_LLE) | NLE__FOR(NLE_SPECTRAL_MLLE), .help = "LLL: the weights' regulariser, times the local Gram matrix's trace"),                        \
      S_INT(T, P, "landmarks", landmarks, false, .scope = LE | NLE__FOR(NLE_SPECTRAL_ISOMAP), .help = "Locally Linear Landmarks: solve on this many landmarks, every point reconstructed from its nearest ones (0: exact)"), S_INT(T, P, "kz", kz, true, .scope = LE, .help = "LLL: landmarks per point (auto: max(d + 1, 5), at most L and D + 1)"),                 \
      S_ENUM(T, P, "landmark-method", landmark_method, nle_landmark_method_name,               \
             nle_landmark_method_parse, .scope = LE, .help = "LLL: random, thinned, kmeans or minmax"),                                                       \
      S_BOOL(T, P, "landmark-graph", landmark_graph, .scope = LE, .help = "LLL's baseline: the landmarks' own kNN graph instead of Z W Z^T"), S_REAL(T, P, "alpha", alpha, false, .scope = DIFFMAP, .help = "density normalisation in [0, 1]: 0 graph Laplacian, 1/2 Fokker-Planck, 1 Laplace-Beltrami"),     \
      S_INT(T, P, "time", diffusion_time, false, .scope = DIFFMAP, .help = "diffusion time t >= 0")

static const nle__option spectral_options[] = {S_INT(nle_spectral_opts, , "dim", dim, false, .help = "embedding dimension"),
                                               GRAPH_OPTIONS(nle_spectral_opts, ),
                                               {.name = NULL}};

static const nle__option cluster_options[] = {
    S_INT(nle_cluster_opts, , "clusters", clusters, false, .help = "number of clusters"),
    S_INT(nle_cluster_opts, , "dims", dims, true, .help = "eigenvectors after the trivial one that k-means clusters (auto: n_clusters - 1)"),
    S_BOOL(nle_cluster_opts, , "normalize-rows", normalize_rows, .help = "each point's eigenvector row to unit length first (Ng, Jordan and Weiss)"),
    S_INT(nle_cluster_opts, , "restarts", restarts, false, .help = "k-means runs from k-means++ seeds"),
    S_BOOL(nle_cluster_opts, , "warm-start", warm_start, .help = "LLL: k-means restarts on the landmarks first"),
    S_INT(nle_cluster_opts, , "max-iters", max_iters, false, .help = "k-means iterations per run"),
    GRAPH_OPTIONS(nle_cluster_opts, spectral.),
    {.name = NULL}};

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
  const nle_spectral_model *m = e->model;
  nle_status s = nle_spectral_transform(e->ctx, m, Y, X);
  if (s >= 0) nle__est_map_report(e, nle_spectral_model_map(m), e->method);
  if (s >= 0) nle__json_printf(&e->map_report, ", \"training_points\": %zu", m->n);
  return s;
}

static const char *data_source(const nle_estimator *e) {
  const nle_spectral_model *m = e->model;
  return m->Y ? NULL : m->source;
}

static nle_status attach_data(nle_estimator *e, const nle_matf *Y) {
  return nle_spectral_model_attach_data(e->ctx, e->model, Y);
}

#define SPECTRAL_MAPS .data_source = data_source, .attach_data = attach_data, \
                      .maps_refusal = "for EE-family models, not a spectral model"


static nle_status predict(nle_estimator *e, const nle_matd *X, int32_t *labels) {
  return nle_spectral_assign(e->ctx, e->model, X, labels);
}

static nle_status save(nle_estimator *e, const char *path) {
  return nle_spectral_model_save(e->ctx, e->model, path, e->model_data_copy == 1);
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
    .graph_k = spectral_graph_k,
    .fit = spectral_fit,
    .transform = transform,
    .file_kind = "spectral-model",
    .save = save,
    .load = load,
    .free_model = free_model,
    SPECTRAL_MAPS,
};

const nle__family nle__family_cluster = {
    .methods = cluster_methods,
    .variant_of = cluster_variant,
    .opts_size = sizeof(nle_cluster_opts),
    .opts_init = cluster_init,
    .options = cluster_options,
    .graph_k = cluster_graph_k,
    .fit = cluster_fit,
    .transform = transform,
    .predict = predict,
    .save = save,
    .free_model = free_model,
    SPECTRAL_MAPS,
};
