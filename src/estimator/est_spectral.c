/* est_spectral.c — the estimator families of the spectral methods (LE, LLE,
 * MLLE, LTSA, HLLE, Isomap, diffusion maps) and of spectral clustering:
 * one option table for the graph, the weights and the solver, read at the
 * spectral options' place in either struct; the Nystrom and weights maps;
 * the "spectral-model" file (a clustering's carries its centres). */
#include "estimator_internal.h"

#include "../core/comm.h"
#include "../core/internal.h"

#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
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
NLE__ENUM_NAME_OF(nle_lll_pencil_name, nle_lll_pencil)

/* The spectral options at member path P of struct T ("" in the spectral
 * options themselves, "spectral." in a clustering's). */
#define S_INT(T, P, n, f, a, ...) {.name = n, .kind = NLE__OPT_INT, .offset = offsetof(T, P f), .auto_ok = a, __VA_ARGS__}
#define S_REAL(T, P, n, f, a, ...) {.name = n, .kind = NLE__OPT_REAL, .offset = offsetof(T, P f), .auto_ok = a, __VA_ARGS__}
#define S_BOOL(T, P, n, f, ...) {.name = n, .kind = NLE__OPT_BOOL, .offset = offsetof(T, P f), __VA_ARGS__}
#define S_ENUM(T, P, n, f, fn, parse, ...) \
  {.name = n, .kind = NLE__OPT_ENUM, .offset = offsetof(T, P f), .auto_ok = true, .enum_name = fn##_of, .enum_parse = parse, __VA_ARGS__}
#define LE NLE__FOR(NLE_SPECTRAL_LE)
#define DIFFMAP NLE__FOR(NLE_SPECTRAL_DIFFMAP)
#define LLL_ONLY .scope = LE, .scope_text = "Locally Linear Landmarks (nlembed le and cluster; the dissertation's sec. " \
                                           "4.10 leaves Isomap, MDS and LLE out)"
#define GRAPH_OPTIONS(T, P)                                                                                            \
  S_INT(T, P, "neighbors", k, false, NLE__INT_FROM(1), .short_name = 'k', .metavar = "K", .json = "k",                 \
        .help = "neighbours per point, not counting the point"),                                                       \
      S_REAL(T, P, "radius", radius, false, NLE__NONNEGATIVE, .metavar = "R",                                          \
             .help = "epsilon-ball neighbourhoods instead: every point within distance R (exact, O(N^2 D)); 0: the k " \
                     "nearest"),                                                                                       \
      NLE__KNN_SEARCH_ROWS(T, P knn_method, P knn_approx),                                                          \
      S_INT(T, P, "pca", pca_dims, true, NLE__INT_FROM(0), .metavar = "N",                                             \
            .help = "search the neighbours among N principal components, then re-rank them by their distances in "     \
                    "INPUT (auto: 50 when N > 5,000 and D > 100; 0: off)"),                                            \
      S_INT(T, P, "pca-candidates", pca_candidates, true, NLE__INT_FROM(0), .metavar = "C",                            \
            .help = "pca: candidates per point re-ranked (auto: max(k, 70); 0: keep the components' distances)"),      \
      S_ENUM(T, P, "symmetrize", symmetrize, nle_symmetrize_name, nle_symmetrize_parse, .metavar = "RULE",             \
             .help = "making the graph symmetric: average ((A + A^T) / 2), union or mutual"),                          \
      S_ENUM(T, P, "affinity", affinity, nle_affinity_kind_name, nle_affinity_kind_parse, .metavar = "NAME",           \
             .help = "weights on the kNN graph: binary, gaussian, inverse, self-tuning or entropic"),                   \
      S_REAL(T, P, "sigma", sigma, true, NLE__POSITIVE, .metavar = "S",                                                \
             .help = "gaussian: width in input units (auto: the median distance to the k-th neighbour)"),              \
      S_INT(T, P, "tuning-k", tuning_k, false, NLE__INT_FROM(1), .metavar = "N",                                       \
            .help = "self-tuning: the neighbour that sets each point's scale"),                                        \
      S_REAL(T, P, "perplexity", perplexity, true, NLE__REAL_IN(1, INFINITY, NLE__OPEN_LO), .metavar = "P",            \
             .help = "entropic: each point's p_{m|n} over its k neighbours at perplexity P (auto: k / 3; -k 90 "       \
                     "--perplexity 30 is t-SNE's graph)"),                                                             \
      S_ENUM(T, P, "laplacian", laplacian, nle_laplacian_name, nle_laplacian_parse, .scope = LE, .metavar = "NAME",    \
             .help = "random-walk (L v = lambda D v, V^T D V = I), symmetric (I - D^-1/2 W D^-1/2) or unnormalised "   \
                     "(D - W)"),                                                                                       \
      S_ENUM(T, P, "components", components, nle_components_name, nle_components_parse, .metavar = "NAME",             \
             .json = "components-policy",                                                                              \
             .help = "a disconnected graph: join (the shortest edges between its components), allow (side by side) "   \
                     "or error (auto: the method's policy, with a warning)"),                                          \
      S_ENUM(T, P, "solver", solver, nle_eigen_solver_name, nle_eigen_solver_parse, .metavar = "NAME",                 \
             .help = "auto (dense up to 400 points, else shift-invert when the Cholesky factor stays sparse and "      \
                     "cheap, else sparse), dense, sparse (Lanczos), shift-invert (Lanczos on the inverse by CHOLMOD) "  \
                     "or block (block Krylov: on the product; the LLE family's on the inverse)"),                      \
      S_REAL(T, P, "tol", tol, false, NLE__REAL_IN(0, 1, NLE__OPEN_HI), .metavar = "T",                                \
             .help = "Lanczos and block relative tolerance: a pair's residual over its eigenvalue (0: machine "       \
                     "precision)"),                                             \
      S_REAL(T, P, "reg", reg, false, NLE__NONNEGATIVE, .scope = LE | NLE__FOR(NLE_SPECTRAL_LLE) |                     \
                                                                 NLE__FOR(NLE_SPECTRAL_MLLE), .metavar = "R",          \
             .help = "the local Gram matrix's regulariser, times its trace (LLE, MLLE; LLL's weights)"),               \
      S_INT(T, P, "landmarks", landmarks, false, NLE__INT_FROM(0), .scope = LE | NLE__FOR(NLE_SPECTRAL_ISOMAP),        \
            .scope_text = "le and cluster (Locally Linear Landmarks) and isomap (landmark Isomap); the dissertation's " \
                          "sec. 4.10 leaves LLE and its family out",                                                   \
            .metavar = "L",                                                                                            \
            .help = "Locally Linear Landmarks (dissertation ch. 4; le, cluster) or landmark Isomap: solve on L "       \
                    "landmarks (0: exact)"),                                                                           \
      S_INT(T, P, "kz", kz, true, NLE__INT_FROM(1), LLL_ONLY, .metavar = "K",                                          \
            .help = "LLL: landmarks per point (auto: d + 1 within [5, 10], at most L and D + 1)"),                     \
      S_ENUM(T, P, "landmark-method", landmark_method, nle_landmark_method_name, nle_landmark_method_parse, LLL_ONLY,   \
             .metavar = "M", .help = "LLL: random, thinned, kmeans or minmax"),                                        \
      S_BOOL(T, P, "landmark-graph", landmark_graph, LLL_ONLY,                                                         \
             .help = "LLL's baseline LE(Z): the landmarks' own kNN graph instead of Z W Z^T"),                         \
      S_ENUM(T, P, "pencil", pencil, nle_lll_pencil_name, nle_lll_pencil_parse, LLL_ONLY, .metavar = "FORM",          \
             .help = "LLL's reduced L x L pencil: auto (dense up to 400 landmarks while it fits the memory cap, "     \
                     "else sparse), dense (LAPACK or Lanczos on dense factors) or sparse (CSR, Lanczos on the "        \
                     "sparse Cholesky factor of B~)"),                                                                 \
      S_REAL(T, P, "alpha", alpha, false, NLE__REAL_IN(0, 1, 0), .scope = DIFFMAP, .metavar = "A",                     \
             .help = "density normalisation in [0, 1]: 0 graph Laplacian, 1/2 Fokker-Planck, 1 Laplace-Beltrami"),     \
      S_INT(T, P, "time", diffusion_time, false, NLE__INT_FROM(0), .scope = DIFFMAP, .metavar = "T",                   \
            .help = "diffusion time t >= 0")

static const nle__option spectral_options[] = {
    S_INT(nle_spectral_opts, , "dim", dim, false, NLE__INT_FROM(1), .short_name = 'd', .metavar = "N",
          .help = "embedding dimension"),
    GRAPH_OPTIONS(nle_spectral_opts, ), {.name = NULL}};

/* The clustering family's options: the library's, and the model
 * selection's lists (dissertation sec. 4.5), which run the sweep instead. */
typedef struct {
  nle_cluster_opts c; /* first: the struct is the library's where it is read as one */
  const char *sweep_sigma, *sweep_k;
} cluster_options_t;

/* A clustering has no embedding dimension; its "dim" row only refuses -d
 * with what to give instead (no method takes it). */
#define NO_METHOD NLE__FOR(30)
static const nle__option cluster_options[] = {
    S_INT(cluster_options_t, c., "clusters", clusters, false, NLE__INT_FROM(2), .short_name = 'c', .metavar = "K",
          .help = "number of clusters"),
    S_INT(cluster_options_t, c., "dims", dims, true, NLE__INT_FROM(1), .metavar = "N",
          .help = "eigenvectors after the trivial one clustered (auto: clusters - 1; eq. 4.19 literally)"),
    S_BOOL(cluster_options_t, c., "normalize-rows", normalize_rows,
           .help = "each point's eigenvector row to unit length first (Ng, Jordan and Weiss; off as eq. 4.19)"),
    S_INT(cluster_options_t, c., "restarts", restarts, false, NLE__INT_FROM(1), .metavar = "N",
          .help = "k-means runs from k-means++ seeds"),
    S_BOOL(cluster_options_t, c., "warm-start", warm_start, .alias = "no-warm-start",
           .help = "LLL: k-means restarts on the landmarks first (sec. 4.7.1)"),
    S_INT(cluster_options_t, c., "max-iters", max_iters, false, NLE__INT_FROM(1), .metavar = "N",
          .help = "k-means iterations per run"),
    S_INT(cluster_options_t, c., "dim", dims, true, .short_name = 'd', .scope = NO_METHOD,
          .scope_text = "the embeddings; nlembed cluster takes --dims"),
    GRAPH_OPTIONS(cluster_options_t, c.spectral.), {.name = "sweep-sigma", .kind = NLE__OPT_TEXT, .offset = offsetof(cluster_options_t, sweep_sigma), .metavar = "LIST",
     .help = "model selection (sec. 4.5): cluster with gaussian weights for each sigma in LIST (a,b,c or lo:hi:n, n "
             "log-spaced values) and each k of sweep-k; the graph (and with landmarks, Z) made once; every cell's "
             "errors against the labels in the report, the best cell's labels the result"},
    {.name = "sweep-k", .kind = NLE__OPT_TEXT, .offset = offsetof(cluster_options_t, sweep_k), .metavar = "LIST",
     .help = "the neighbour counts of the sweep (a,b,c or lo:hi:n, rounded)"},
    {.name = NULL}};

static const char *const spectral_abouts[] = {
    "Laplacian eigenmaps (lecture slides 002; Belkin and Niyogi 2003): the d eigenvectors after the trivial one of "
    "the kNN graph's Laplacian.",
    "Locally linear embedding (lecture slides 002; Roweis and Saul 2000): each point reconstructed from its k "
    "neighbours (weights summing to 1), then the d bottom eigenvectors after the constant one of (I - W)^T (I - W), "
    "scaled so that sum_i x_i = 0 and (1/N) sum_i x_i x_i^T = I (the slides' constraints).",
    "Modified LLE (Zhang and Wang 2007; named in the lecture slides 002): several weight vectors per point (the local "
    "Gram matrix's bottom eigenvectors, their number from the median spectral ratio), where LLE's one is "
    "ill-determined for k > d; sum_i x_i = 0 and (1/N) X^T X = I, as LLE.",
    "Local tangent space alignment (Zhang and Zha 2004; named in the lecture slides 002): each neighbourhood's "
    "tangent coordinates (local PCA), aligned by the bottom eigenvectors of one sparse matrix; sum_i x_i = 0 and "
    "(1/N) X^T X = I, as LLE.",
    "Hessian LLE (Donoho and Grimes 2003; named in the lecture slides 002): the null space of a local Hessian "
    "estimator on each neighbourhood's tangent coordinates; needs k >= 1 + d + d(d+1)/2; sum_i x_i = 0 and "
    "(1/N) X^T X = I, as LLE.",
    "Isomap (lecture slides 002; Tenenbaum, de Silva and Langford 2000): geodesic distances along the kNN graph "
    "(Dijkstra from every point), then classical MDS of their squares: X = V Lambda^1/2 of the top d eigenpairs.",
    "Diffusion maps (Coifman and Lafon 2006; named in the lecture slides 002): the Markov chain P = D_a^-1 W_a on the "
    "kNN graph, W_a = Q^-a W Q^-a, and the embedding mu_k^t psi_k of P's right eigenvectors after the constant one: "
    "Euclidean distances in it are diffusion distances at time t.",
    NULL};
static const char *const cluster_abouts[] = {
    "Spectral clustering (dissertation eq. 4.19; lecture slides 002, \"Spirals Again\"): the K - 1 eigenvectors "
    "after the trivial one of the kNN graph's random-walk Laplacian, then k-means (k-means++ seeds, restarts). "
    "Writes one label per point (0..K-1); with labelled data, the clustering errors by matching (Hungarian) and by "
    "majority class. A graph with several components is allowed (they are clusters).",
    NULL};

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

/* The report's figures of a spectral embedding (search_seconds: the
 * estimator's own search of sparse rows or distances, kNN time). */
static void report_spectral(nle__json *j, const nle_spectral_result *r, double search_seconds, const char *method) {
  nle__json_string(j, "knn", r->knn_used == NLE_KNN_AUTO ? "none" : nle_knn_method_name(r->knn_used));
  nle__json_printf(j, ", \"components\": %d, \"joined_edges\": %lld", r->components, (long long)r->joined_edges);
  nle__json_printf(j, ", \"knn_seconds\": %.3f, \"graph_seconds\": %.3f, \"eigen_seconds\": %.3f, \"total_seconds\": %.3f",
                   r->knn_seconds + search_seconds, r->graph_seconds, r->eigen_seconds, r->total_seconds + search_seconds);
  nle__json_numbers(j, "eigenvalues", r->eigenvalues, (size_t)r->n_eigenvalues);
  if (!isnan(r->residual_variance)) nle__json_number(j, "residual_variance", r->residual_variance);
  if (r->landmark_X) {
    nle__json_printf(j, ", \"landmarks_used\": %zu", r->n_landmarks);
    nle__json_number(j, "reconstruction_error", r->reconstruction_error);
    nle__json_printf(j, ", \"z_seconds\": %.3f, \"reduce_seconds\": %.3f, \"reduced_singular\": %s", r->z_seconds,
                     r->reduce_seconds, r->reduced_singular ? "true" : "false");
  }
  char summary[200];
  snprintf(summary, sizeof summary, "%s of %zu points: %d eigenvalues from %.3g (%s), %.2f s", method, r->n,
           r->n_eigenvalues, r->n_eigenvalues ? r->eigenvalues[0] : NAN, nle_eigen_solver_name(r->solver_used),
           r->total_seconds + search_seconds);
  nle__json_string(j, "summary", summary);
}

/* A distributed run (docs/mpi_spectral.md): every rank's bytes sent by the
 * fit (graph stage and eigensolver) and its peak memory, one array entry a
 * rank. Collective. */
static nle_status report_ranks(nle_estimator *e, uint64_t sent_before) {
  if (!nle__distributed(e->ctx)) return NLE_OK;
  struct rusage ru;
  double mine[2] = {(double)(nle__comm_bytes_sent(e->ctx) - sent_before),
                    getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : NAN};
  int R = nle__ranks(e->ctx);
  double *all = nle__malloc(e->ctx, (size_t)R * sizeof mine, "the ranks' usage");
  double *column = nle__malloc(e->ctx, (size_t)R * sizeof(double), "the ranks' usage");
  nle_status s = nle__comm_agree(e->ctx, all && column ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__comm_allgatherv(e->ctx, mine, sizeof mine, all, NULL);
  static const char *const keys[2] = {"bytes_sent", "peak_mib"};
  for (int f = 0; !s && f < 2; f++) {
    for (int r = 0; r < R; r++) column[r] = all[2 * r + f];
    nle__json_numbers(&e->report, keys[f], column, (size_t)R);
  }
  free(all);
  free(column);
  return s;
}

/* Where the training data came from, for a model that references them
 * (model-data reference). */
static void keep_source(nle_spectral_model *m, const char *source) {
  if (m && source) snprintf(m->source, sizeof m->source, "%s", source);
}

static nle_status spectral_fit(nle_estimator *e, const nle__est_input *in) {
  if (!in->Y && !in->knn && !in->affinities && !in->given_affinities)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: the method needs the points themselves, not precomputed "
                     "distances", e->method);
  nle_spectral_opts o = *(const nle_spectral_opts *)e->opts;
  o.keep_model = e->keep_model && in->Y && !nle__distributed(e->ctx); /* no model on ranks yet, as t-SNE's */
  uint64_t sent = nle__comm_bytes_sent(e->ctx);
  nle_spectral_input si = {.Y = in->Y, .knn = in->knn, .affinities = in->affinities ? in->affinities : in->given_affinities};
  nle_spectral_result *r = NULL;
  nle_status s = nle_spectral_embed(e->ctx, (nle_spectral_method)e->variant, &si, &o, &r);
  if (s < 0) return s;
  nle_status k = nle__est_keep_X(e, r->X);
  if (!k) k = nle__est_keep_resolved(e, &r->resolved);
  if (!k) {
    e->model = r->model;
    r->model = NULL;
    keep_source(e->model, in->source);
    ((nle_spectral_opts *)e->resolved)->solver = r->solver_used;
    nle__est_report_options(e, e->resolved);
    report_spectral(&e->report, r, in->search_seconds, e->method);
  }
  nle_spectral_result_free(&r);
  if (!k) k = report_ranks(e, sent);
  return k ? k : s;
}

/* A clustering's figures: its k-means, the clusters' sizes and, with the
 * points' own labels, the errors by matching (Hungarian) and by majority.
 * Distributed, r->labels and truth are this rank's `mine` rows: both are
 * gathered (4 bytes a point) and the figures made from all of them. */
static nle_status report_whole(nle_estimator *e, const nle_cluster_result *r, const int32_t *truth);
static nle_status report_clusters(nle_estimator *e, const nle_cluster_result *r, const int32_t *truth, size_t mine) {
  if (!nle__distributed(e->ctx)) return report_whole(e, r, truth);
  int64_t have = truth != NULL || mine == 0; /* a rank of no rows may pass no labels */
  nle_status s = nle__comm_sum_i64(e->ctx, &have, 1);
  bool labelled = have == nle__ranks(e->ctx);
  int32_t *labels = nle__malloc(e->ctx, r->n * sizeof(int32_t), "the cluster labels");
  int32_t *all_truth = labelled ? nle__malloc(e->ctx, r->n * sizeof(int32_t), "the labels") : NULL;
  if (!s) s = nle__comm_agree(e->ctx, labels && (!labelled || all_truth) ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__comm_allgather_rows(e->ctx, r->labels, r->n, sizeof(int32_t), labels);
  if (!s && labelled) s = nle__comm_allgather_rows(e->ctx, truth, r->n, sizeof(int32_t), all_truth);
  nle_cluster_result whole = *r;
  whole.labels = labels;
  if (!s) s = report_whole(e, &whole, all_truth);
  free(labels);
  free(all_truth);
  return s;
}

static nle_status report_whole(nle_estimator *e, const nle_cluster_result *r, const int32_t *truth) {
  nle__json *j = &e->report;
  nle__json_number(j, "inertia", r->inertia);
  nle__json_printf(j, ", \"kmeans_seconds\": %.3f, \"warm_started\": %s, \"sizes\": [", r->kmeans_seconds,
                   r->warm_started ? "true" : "false");
  for (int c = 0; c < r->clusters; c++) {
    size_t size = 0;
    for (size_t i = 0; i < r->n; i++) size += r->labels[i] == c;
    nle__json_printf(j, "%s%zu", c ? ", " : "", size);
  }
  nle__json_printf(j, "]");
  if (!truth) return NLE_OK;
  double matched = 0.0, majority = 0.0;
  nle_status s = nle_clustering_error(e->ctx, r->labels, truth, r->n, &matched, &majority);
  if (!s) nle__json_printf(j, ", \"error_matched\": %.6f, \"error_majority\": %.6f", matched, majority);
  return s;
}

enum { SWEEP_MAX = 64 };

/* "a,b,c" or "lo:hi:n" (n values log-spaced from lo to hi) into v, each
 * positive and at most `most`; the count, or 0 when malformed. */
static size_t parse_list(const char *arg, double most, double *v) {
  double lo, hi;
  int count, used = 0;
  if (sscanf(arg, "%lf:%lf:%d%n", &lo, &hi, &count, &used) == 3 && arg[used] == '\0') {
    if (!(lo > 0 && hi >= lo && hi <= most && isfinite(hi) && count >= 1 && count <= SWEEP_MAX)) return 0;
    for (int i = 0; i < count; i++) v[i] = count == 1 ? lo : lo * pow(hi / lo, (double)i / (count - 1));
    return (size_t)count;
  }
  size_t m = 0;
  for (const char *p = arg; *p && m < SWEEP_MAX; m++) {
    char *end;
    v[m] = strtod(p, &end);
    if (end == p || !(v[m] > 0) || !(v[m] <= most) || !isfinite(v[m])) return 0;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return 0;
  }
  return m;
}

/* The sweep's report: the best cell and every cell's errors. */
static void report_sweep(nle_estimator *e, const nle_sweep_result *r) {
  nle__json *j = &e->report;
  const nle_sweep_cell *b = &r->cells[r->best];
  nle__json_printf(j, ", \"setup_seconds\": %.3f, \"total_seconds\": %.3f, \"best\": {\"sigma\": %.10g, \"k\": %d, "
                      "\"error_majority\": %.6f, \"error_matched\": %.6f}, \"cells\": [",
                   r->setup_seconds, r->total_seconds, b->sigma, b->k, b->error_majority, b->error_matched);
  for (size_t c = 0; c < r->n_cells; c++) {
    const nle_sweep_cell *cell = &r->cells[c];
    nle__json_printf(j, "%s{\"sigma\": %.10g, \"k\": %d", c ? ", " : "", cell->sigma, cell->k);
    nle__json_number(j, "error_majority", cell->error_majority);
    nle__json_number(j, "error_matched", cell->error_matched);
    nle__json_printf(j, ", \"components\": %d, \"seconds\": %.3f}", cell->components, cell->seconds);
  }
  nle__json_printf(j, "]");
  char summary[200];
  snprintf(summary, sizeof summary, "%zu cells in %.2f s (setup %.2f s); best sigma %g, k %d: majority error %.4f",
           r->n_cells, r->total_seconds, r->setup_seconds, b->sigma, b->k, b->error_majority);
  nle__json_string(j, "summary", summary);
}

/* Model selection: every cell of the sigma x k grid clustered and scored
 * against the labels; the best cell's labels are the fit's. */
static nle_status sweep_fit(nle_estimator *e, const nle__est_input *in, const cluster_options_t *o) {
  double sigmas[SWEEP_MAX], kv[SWEEP_MAX];
  int ks[SWEEP_MAX];
  if (!o->sweep_sigma || !o->sweep_k)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: give both {@sweep-sigma} and {@sweep-k}", e->method);
  size_t n_sigma = parse_list(o->sweep_sigma, INFINITY, sigmas), n_k = parse_list(o->sweep_k, INT_MAX, kv);
  if (!n_sigma)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@sweep-sigma} takes positive numbers a,b,c or lo:hi:n (n <= %d), "
                     "not \"%s\"", e->method, SWEEP_MAX, o->sweep_sigma);
  if (!n_k)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@sweep-k} takes positive integers up to %d, a,b,c or lo:hi:n (n <= "
                     "%d), not \"%s\"", e->method, INT_MAX, SWEEP_MAX, o->sweep_k);
  if (!in->Y || in->knn || in->affinities || in->given_affinities || e->Y_metric)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: the sweep needs INPUT points, not a precomputed graph", e->method);
  if (!in->labels)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: the sweep scores each cell against labels: give the points' labels",
                     e->method);
  for (size_t b = 0; b < n_k; b++) ks[b] = (int)lround(kv[b]);
  nle_sweep_result *r = NULL;
  nle_status s = nle_cluster_sweep(e->ctx, in->Y, in->labels, &o->c, sigmas, n_sigma, ks, n_k, &r);
  if (s < 0) return s;
  nle_status k = nle__est_keep_resolved(e, o);
  if (!k) {
    e->labels = malloc(r->n * sizeof *e->labels);
    if (!e->labels) k = nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method);
  }
  if (!k) {
    memcpy(e->labels, r->labels, r->n * sizeof *e->labels);
    nle__est_report_options(e, e->resolved);
    report_sweep(e, r);
  }
  nle_sweep_result_free(&r);
  return k ? k : s;
}

static nle_status cluster_fit(nle_estimator *e, const nle__est_input *in) {
  const cluster_options_t *co = e->opts;
  if ((co->sweep_sigma || co->sweep_k) && nle__distributed(e->ctx))
    return nle__fail(e->ctx, NLE_ERR_UNSUPPORTED, "%s: the sweep ({@sweep-sigma}, {@sweep-k}) does not run on more "
                     "than one rank yet", e->method);
  if (co->sweep_sigma || co->sweep_k) return sweep_fit(e, in, co);
  nle_cluster_opts o = *(const nle_cluster_opts *)e->opts;
  o.spectral.keep_model = e->keep_model && in->Y && !nle__distributed(e->ctx);
  uint64_t sent = nle__comm_bytes_sent(e->ctx);
  nle_spectral_input si = {.Y = in->Y, .knn = in->knn, .affinities = in->affinities ? in->affinities : in->given_affinities};
  nle_cluster_result *r = NULL;
  nle_status s = nle_spectral_cluster(e->ctx, &si, &o, &r);
  if (s < 0) return s;
  cluster_options_t resolved = *co;
  resolved.c = r->resolved;
  nle_status k = nle__est_keep_X(e, r->embedding->X);
  size_t mine = r->embedding->X->rows; /* distributed: this rank's rows */
  if (!k) k = nle__est_keep_resolved(e, &resolved);
  if (!k) {
    e->labels = malloc((mine ? mine : 1) * sizeof *e->labels);
    if (!e->labels) k = nle__fail(e->ctx, NLE_ERR_NOMEM, "%s: out of memory", e->method);
  }
  if (!k) {
    memcpy(e->labels, r->labels, mine * sizeof *e->labels);
    e->model = r->embedding->model;
    r->embedding->model = NULL;
    keep_source(e->model, in->source);
    ((nle_cluster_opts *)e->resolved)->spectral.solver = r->embedding->solver_used;
    nle__est_report_options(e, e->resolved);
    k = report_clusters(e, r, in->labels, mine);
    report_spectral(&e->report, r->embedding, in->search_seconds, e->method);
  }
  nle_cluster_result_free(&r);
  if (!k) k = report_ranks(e, sent);
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
  static const nle__family *const sharing[] = {&nle__family_spectral, &nle__family_cluster};
  e->model = m;
  e->n = m->n;
  e->D = m->D;
  if (m->centres) {
    s = nle__est_become(e, sharing, sizeof sharing / sizeof *sharing, "cluster");
    if (s) return s;
    nle_cluster_opts *o = e->opts;
    o->spectral = m->opts;
    o->clusters = m->clusters;
    o->dims = (int)m->dim;
    o->normalize_rows = m->normalize_rows;
  } else {
    s = nle__est_become(e, sharing, sizeof sharing / sizeof *sharing, nle_spectral_method_name(m->method));
    if (s) return s;
    *(nle_spectral_opts *)e->opts = m->opts;
  }
  return nle__est_keep_X(e, m->X);
}

NLE__MODEL_FREE_OF(nle_spectral_model_free, nle_spectral_model)

const nle__family nle__family_spectral = {
    .methods = spectral_methods,
    .abouts = spectral_abouts,
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
    .free_model = nle_spectral_model_free_of,
    /* LE and diffusion maps by rows over ranks (docs/mpi_spectral.md) */
    .distributed = NLE__FOR(NLE_SPECTRAL_LE) | NLE__FOR(NLE_SPECTRAL_DIFFMAP),
    SPECTRAL_MAPS,
};

static nle_estimator_product cluster_makes(int variant) {
  (void)variant;
  return NLE_MAKES_LABELS;
}

const nle__family nle__family_cluster = {
    .methods = cluster_methods,
    .abouts = cluster_abouts,
    .variant_of = cluster_variant,
    .opts_size = sizeof(cluster_options_t),
    .opts_init = cluster_init,
    .options = cluster_options,
    .graph_k = cluster_graph_k,
    .fit = cluster_fit,
    .makes = cluster_makes,
    .transform = transform,
    .predict = predict,
    .save = save,
    .free_model = nle_spectral_model_free_of,
    .distributed = NLE__FOR(NLE_SPECTRAL_LE), /* spectral clustering (its one variant) */
    SPECTRAL_MAPS,
};
