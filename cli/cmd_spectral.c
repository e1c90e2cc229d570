/* cmd_spectral.c — `nlembed le` (and the other spectral methods as they
 * come): one command per method, as the embeddings have, over the
 * library's front door nle_spectral_embed; the names of every option's
 * values come from the library. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help_fmt =
    "Usage: nlembed %s [options] INPUT -o OUTPUT\n"
    "       nlembed %s [options] --affinities W.mtx|W.npy -o OUTPUT\n"
    "       nlembed %s [options] --distances D.npy|G.mtx -o OUTPUT\n"
    "       nlembed %s [options] --knn G.mtx -o OUTPUT\n"
    "\n"
    "%s\n"
    "%s"
    "\n"
    "Options:\n"
    "%s"
    "  -k, --neighbors K    neighbours per point, not counting the point (10)\n"
    "  --radius R           epsilon-ball neighbourhoods instead: every point within\n"
    "                       distance R (exact, O(N^2 D)); default 0: k nearest\n"
    "  --pca N              search the neighbours among N principal components,\n"
    "                       then re-rank the candidates by their distances in\n"
    "                       INPUT (default auto: 50 when N > 5,000 points and\n"
    "                       D > 100, else 0: the search runs in INPUT itself)\n"
    "  --pca-candidates C   candidates per point from the components (7 k)\n"
    "%s"
    "  --affinity NAME      weights on the kNN graph: binary (default), gaussian,\n"
    "                       inverse, self-tuning, entropic\n"
    "  --perplexity P       entropic: each point's p_{m|n} over its k neighbours\n"
    "                       at perplexity P (default k / 3; -k 90 --perplexity 30\n"
    "                       is t-SNE's graph)\n"
    "  --sigma S            gaussian: width in input units (default: the median\n"
    "                       distance to the k-th neighbour)\n"
    "  --tuning-k N         self-tuning: the neighbour that sets each scale (7)\n"
    "  --symmetrize RULE    average (default: (A + A^T) / 2), union, mutual\n"
    "  --components NAME    a disconnected graph: join (add the shortest edges\n"
    "                       between its components), allow (side by side) or\n"
    "                       error; the default is the method's (warns)\n"
    "  --affinities FILE    a precomputed symmetric affinity matrix (.mtx sparse, or\n"
    "                       any dense input: .npy, text, ...): no neighbour search,\n"
    "                       no INPUT\n"
    "  --metric NAME        euclidean (default), cosine or correlation (the rows made\n"
    "                       unit, correlation centred first; sparse INPUT searched\n"
    "                       as it is), or precomputed (INPUT holds distances, as\n"
    "                       --distances INPUT); a square symmetric INPUT with a\n"
    "                       zero diagonal needs it named\n"
    "  --distances FILE     precomputed distances instead of INPUT: a dense N x N\n"
    "                       matrix (.npy, text or any dense input; each row's k\n"
    "                       nearest, or those within --radius) or a sparse graph\n"
    "                       (.mtx; its rows as the neighbourhoods); not for the\n"
    "                       LLE family, which needs the points\n"
    "  --knn FILE           a kNN graph as `nlembed knn -o G.mtx` writes it (squared\n"
    "                       distances), instead of INPUT\n"
    "  --solver NAME        auto (dense up to 400 points, else shift-invert when\n"
    "                       the Cholesky factor stays sparse, else sparse),\n"
    "                       dense, sparse (Lanczos), shift-invert (Lanczos on the\n"
    "                       inverse through a CHOLMOD factor)\n"
    "  --tol T              Lanczos relative tolerance (default 0: machine\n"
    "                       precision)\n"
    "%s"
    "\n";
/* after the formatted part: these hold literal percent signs */
static const char *help_tail = CLI_KNN_HELP "\n" CLI_COMMON_HELP;

/* Locally Linear Landmarks' options, for le and cluster (docs/lll.md). */
#define LLL_HELP                                                                      \
  "  --landmarks L        Locally Linear Landmarks (dissertation ch. 4): solve\n"      \
  "                       on L landmarks, X = X~ Z, every point reconstructed\n"     \
  "                       from its nearest landmarks (default 0: exact)\n"           \
  "  --kz K               LLL: landmarks per point (default max(d + 1, 5),\n"        \
  "                       at most L and D + 1)\n"                                    \
  "  --landmark-method M  LLL: random (default), thinned, kmeans, minmax\n"          \
  "  --landmark-graph     LLL's baseline LE(Z): the landmarks' own kNN graph\n"      \
  "                       instead of Z W Z^T (for comparisons)\n"                   \
  "  --reg R              LLL: the weights' regulariser, times the local Gram\n"     \
  "                       matrix's trace (default 1e-3)\n"

typedef struct {
  const char *name;
  nle_spectral_method method;
  const char *about;
  const char *options; /* the method's own lines of --help */
  bool cluster;        /* spectral clustering: labels out, not an embedding */
} spectral_command;

static const spectral_command commands[] = {
    {"le", NLE_SPECTRAL_LE,
     "Laplacian eigenmaps (lecture slides 002; Belkin and Niyogi 2003): the d\n"
     "eigenvectors after the trivial one of the kNN graph's Laplacian.\n",
     "  --laplacian NAME     random-walk (default: L v = lambda D v, V^T D V = I),\n"
     "                       symmetric (I - D^-1/2 W D^-1/2, U^T U = I),\n"
     "                       unnormalised (D - W, F^T F = I, as the slides)\n"
     LLL_HELP, false},
    {"lle", NLE_SPECTRAL_LLE,
     "Locally linear embedding (lecture slides 002; Roweis and Saul 2000): each point\n"
     "reconstructed from its k neighbours (weights summing to 1), then the d\n"
     "bottom eigenvectors after the constant one of (I - W)^T (I - W), scaled so\n"
     "that sum_i x_i = 0 and (1/N) sum_i x_i x_i^T = I (the slides' constraints).\n",
     "  --reg R              the local Gram matrix's regulariser, times its trace\n"
     "                       (default 1e-3)\n", false},
    {"mlle", NLE_SPECTRAL_MLLE,
     "Modified LLE (Zhang and Wang 2007; named in the lecture slides 002): several\n"
     "weight vectors per point (the local Gram matrix's bottom eigenvectors,\n"
     "their number from the median spectral ratio), where LLE's one is\n"
     "ill-determined for k > d; sum_i x_i = 0 and (1/N) X^T X = I, as LLE.\n",
     "  --reg R              the regularised weights' regulariser, times the local\n"
     "                       Gram matrix's trace (default 1e-3)\n", false},
    {"ltsa", NLE_SPECTRAL_LTSA,
     "Local tangent space alignment (Zhang and Zha 2004; named in the lecture\n"
     "slides 002): each neighbourhood's tangent coordinates (local PCA), aligned\n"
     "by the bottom eigenvectors of one sparse matrix; sum_i x_i = 0 and\n"
     "(1/N) X^T X = I, as LLE.\n",
     "", false},
    {"hlle", NLE_SPECTRAL_HLLE,
     "Hessian LLE (Donoho and Grimes 2003; named in the lecture slides 002): the\n"
     "null space of a local Hessian estimator on each neighbourhood's tangent\n"
     "coordinates; needs k >= 1 + d + d(d+1)/2; sum_i x_i = 0 and\n"
     "(1/N) X^T X = I, as LLE.\n",
     "", false},
    {"isomap", NLE_SPECTRAL_ISOMAP,
     "Isomap (lecture slides 002; Tenenbaum, de Silva and Langford 2000): geodesic\n"
     "distances along the kNN graph (Dijkstra from every point), then classical\n"
     "MDS of their squares: X = V Lambda^1/2 of the top d eigenpairs.\n",
     "  --landmarks L        landmark Isomap: geodesics from L landmarks only, the\n"
     "                       rest placed by triangulation (default 0: all points)\n", false},
    {"diffmap", NLE_SPECTRAL_DIFFMAP,
     "Diffusion maps (Coifman and Lafon 2006; named in the lecture slides 002): the\n"
     "Markov chain P = D_a^-1 W_a on the kNN graph, W_a = Q^-a W Q^-a, and the\n"
     "embedding mu_k^t psi_k of P's right eigenvectors after the constant one\n"
     "(psi orthonormal under P's stationary distribution): Euclidean distances\n"
     "in it are diffusion distances at time t.\n",
     "  --alpha A            density normalisation in [0, 1]: 0 graph Laplacian,\n"
     "                       1/2 Fokker-Planck, 1 Laplace-Beltrami (default 1)\n"
     "  --time T             diffusion time t >= 0 (default 1)\n", false},
    {"cluster", NLE_SPECTRAL_LE,
     "Spectral clustering (dissertation eq. 4.19; lecture slides 002, \"Spirals\n"
     "Again\"): the K - 1 eigenvectors after the trivial one of the kNN graph's\n"
     "random-walk Laplacian (the bottom-K subspace), then k-means (k-means++\n"
     "seeds, restarts). A graph with several components is allowed (they are\n"
     "clusters).\n",
     "  -c, --clusters K     number of clusters (default 2)\n"
     "  --dims N             eigenvectors after the trivial one clustered (default\n"
     "                       K - 1; K is eq. 4.19 literally)\n"
     "  --normalize-rows     each point's eigenvector row to unit length first\n"
     "                       (Ng, Jordan and Weiss); off by default, as eq. 4.19\n"
     "  --restarts N         k-means runs from k-means++ seeds (10)\n"
     "  --laplacian NAME     random-walk (default), symmetric, unnormalised\n"
     "  --no-warm-start      LLL: k-means restarts on all points, not on the\n"
     "                       landmarks first (sec. 4.7.1)\n"
     "  --sweep-sigma LIST   model selection (sec. 4.5): cluster with Gaussian\n"
     "                       weights for each sigma in LIST (a,b,c or lo:hi:n,\n"
     "                       n log-spaced values) and each k of --sweep-k LIST;\n"
     "                       the graph (and with --landmarks, Z) made once;\n"
     "                       every cell's errors against the labels in the JSON\n"
     "                       line, the best cell's labels into -o\n"
     "  --sweep-k LIST       the neighbour counts of the sweep (a,b,c or\n"
     "                       lo:hi:n, rounded)\n"
     LLL_HELP,
     true},
};

enum { OPT_AFFINITY = OPT_COMMAND_BASE, OPT_SIGMA, OPT_TUNING, OPT_SYMMETRIZE, OPT_COMPONENTS, OPT_AFFINITIES,
       OPT_SOLVER, OPT_TOL, OPT_LAPLACIAN, OPT_REG, OPT_LANDMARKS, OPT_DIMS, OPT_NORMALIZE_ROWS, OPT_RESTARTS, OPT_ALPHA, OPT_TIME, OPT_PCA, OPT_PCA_CANDIDATES, OPT_RADIUS, OPT_SAVE_MODEL, OPT_MODEL_DATA, OPT_PERPLEXITY, OPT_DISTANCES, OPT_KNN_GRAPH, OPT_KZ, OPT_LANDMARK_METHOD, OPT_LANDMARK_GRAPH, OPT_NO_WARM_START, OPT_SWEEP_SIGMA, OPT_SWEEP_K, OPT_METRIC };

enum { SWEEP_MAX = 64 };

/* "a,b,c" or "lo:hi:n" (n values log-spaced from lo to hi) into v, each
 * positive and at most `most` (what the field holds: INT_MAX for the k of
 * --sweep-k, rounded to an int); the count, or 0 when malformed. */
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

/* nlembed cluster --sweep-sigma --sweep-k: one JSON line with every
 * cell, the best cell's labels into the output. */
static int run_sweep(cli_env *env, const char *command, const nle_dataset *ds, const nle_cluster_opts *co,
                     const double *sigmas, size_t n_sigma, const double *kv, size_t n_k, const char *output,
                     double t_read) {
  int ks[SWEEP_MAX];
  for (size_t b = 0; b < n_k; b++) ks[b] = (int)lround(kv[b]);
  nle_sweep_result *r = NULL;
  nle_status s = nle_cluster_sweep(env->ctx, ds->X, ds->labels, co, sigmas, n_sigma, ks, n_k, &r);
  if (!s) s = nle_write_labels(env->ctx, output, r->labels, (int64_t)r->n);
  int rc = s ? cli_fail(env, s) : cli_commit(env);
  if (!rc) {
    char name[1200];
    cli_json_escape(ds->name, name, sizeof name);
    const nle_sweep_cell *b = &r->cells[r->best];
    printf("{\"command\": \"%s\", \"input\": \"%s\", \"n\": %zu, \"clusters\": %d, \"landmarks\": %d, "
           "\"read_seconds\": %.3f, \"setup_seconds\": %.3f, \"total_seconds\": %.3f, \"best\": {\"sigma\": %.10g, "
           "\"k\": %d, \"error_majority\": %.6f, \"error_matched\": %.6f}, \"cells\": [",
           command, name, r->n, co->clusters, co->spectral.landmarks, t_read, r->setup_seconds, r->total_seconds,
           b->sigma, b->k, b->error_majority, b->error_matched);
    for (size_t c = 0; c < r->n_cells; c++) {
      char em[32], ex[32];
      cli_json_number(em, sizeof em, "%.6f", r->cells[c].error_majority);
      cli_json_number(ex, sizeof ex, "%.6f", r->cells[c].error_matched);
      printf("%s{\"sigma\": %.10g, \"k\": %d, \"error_majority\": %s, \"error_matched\": %s, \"components\": %d, "
             "\"seconds\": %.3f}", c ? ", " : "", r->cells[c].sigma, r->cells[c].k, em, ex, r->cells[c].components,
             r->cells[c].seconds);
    }
    printf("]}\n");
    cli_note(env, "%s: %zu cells in %.2f s (setup %.2f s); best sigma %g, k %d: majority error %.4f; wrote %s",
             command, r->n_cells, r->total_seconds, r->setup_seconds, b->sigma, b->k, b->error_majority, output);
  }
  nle_sweep_result_free(&r);
  return rc;
}

/* value = parse(arg) or a usage error naming the values name(0), name(1)... */
static int parse_name(const char *command, const char *option, const char *arg, int (*parse)(const char *),
                      int *value) {
  int v = parse(arg);
  if (v == -1) return cli_usage_error(command, "unknown --%s \"%s\"", option, arg);
  *value = v;
  return 0;
}

static void print_json(const char *command, const char *input, double read_seconds, double search_seconds,
                       const nle_spectral_result *r, const char *extra) {
  const nle_spectral_opts *o = &r->resolved;
  char name[1200];
  cli_json_escape(input, name, sizeof name);
  printf("{\"command\": \"%s\", \"input\": \"%s\", \"n\": %zu, \"dim\": %d, \"k\": %d, \"knn_method\": \"%s\", "
         "\"affinity\": \"%s\", \"symmetrize\": \"%s\", \"laplacian\": \"%s\", \"components\": %d, "
         "\"components_policy\": \"%s\", \"joined_edges\": %lld, \"solver\": \"%s\", \"read_seconds\": %.3f, \"knn_seconds\": %.3f, \"graph_seconds\": %.3f, "
         "\"eigen_seconds\": %.3f, \"total_seconds\": %.3f, \"pca\": %d, \"pca_candidates\": %d, \"eigenvalues\": [",
         command, name, r->n, o->dim, o->k, nle_knn_method_name(o->knn_method), nle_affinity_kind_name(o->affinity),
         nle_symmetrize_name(o->symmetrize), nle_laplacian_name(o->laplacian), r->components,
         nle_components_name(o->components), (long long)r->joined_edges, nle_eigen_solver_name(r->solver_used),
         read_seconds, r->knn_seconds + search_seconds, r->graph_seconds, r->eigen_seconds,
         r->total_seconds + search_seconds, o->pca_dims, o->pca_candidates);
  for (int i = 0; i < r->n_eigenvalues; i++) printf("%s%.12g", i ? ", " : "", r->eigenvalues[i]);
  printf("]");
  if (!isnan(r->residual_variance)) printf(", \"residual_variance\": %.8g", r->residual_variance);
  if (o->affinity == NLE_AFF_GAUSSIAN) printf(", \"sigma\": %.10g", o->sigma); /* the width used */
  if (o->affinity == NLE_AFF_ENTROPIC) printf(", \"perplexity\": %.10g", o->perplexity);
  if (r->landmark_X)
    printf(", \"landmarks\": %zu, \"kz\": %d, \"landmark_method\": \"%s\", \"landmark_graph\": %s, "
           "\"reconstruction_error\": %.6g, \"z_seconds\": %.3f, \"reduce_seconds\": %.3f, \"reduced_singular\": %s",
           r->n_landmarks, o->kz, nle_landmark_method_name(o->landmark_method), o->landmark_graph ? "true" : "false",
           r->reconstruction_error, r->z_seconds, r->reduce_seconds, r->reduced_singular ? "true" : "false");
  printf("%s}\n", extra);
}

int cmd_spectral(int argc, char **argv, const char *command) {
  const spectral_command *sc = NULL;
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(command, commands[i].name)) sc = &commands[i];
  if (!sc) return 2;
  char help[8192];
  static const char *const writes[2] = {
      "Writes the N x d embedding (.npy float64, or text) and prints one JSON line\n"
      "with the eigenvalues and the time of each stage on stdout.\n",
      "Writes one cluster label per point (0..K-1; .txt, .csv or int32 .npy) and\n"
      "prints one JSON line with the eigenvalues, the cluster sizes and the time of\n"
      "each stage on stdout; with labelled data, the clustering errors by\n"
      "matching (Hungarian) and by majority class.\n"};
  static const char *const output_lines[2] = {
      "  -o, --output FILE    the embedding (.npy, .csv, .tsv, .txt)\n"
      "  -d, --dim N          embedding dimension (default 2)\n",
      "  -o, --output FILE    the labels (.txt, .csv, .npy)\n"};
  static const char *const model_lines[2] = {
      "  --save-model FILE    also write a model file for `nlembed transform`: new\n"
      "                       points placed by the method's out-of-sample map\n"
      "                       (docs/transform.md); needs INPUT\n"
      "  --model-data MODE    copy (default): the training data goes into the model\n"
      "                       file; reference: only its source and a checksum\n",
      "  --save-model FILE    also write a model file for `nlembed transform`: new\n"
      "                       points labelled by the nearest cluster centre after\n"
      "                       Laplacian eigenmaps' out-of-sample map; needs INPUT\n"
      "  --model-data MODE    copy (default): the training data goes into the model\n"
      "                       file; reference: only its source and a checksum\n"};
  snprintf(help, sizeof help, help_fmt, command, command, command, command, sc->about, writes[sc->cluster], output_lines[sc->cluster],
           sc->options, model_lines[sc->cluster]);
  strncat(help, help_tail, sizeof help - strlen(help) - 1);
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"dim", required_argument, 0, 'd'},
      {"neighbors", required_argument, 0, 'k'}, {"affinity", required_argument, 0, OPT_AFFINITY},
      {"sigma", required_argument, 0, OPT_SIGMA}, {"tuning-k", required_argument, 0, OPT_TUNING},
      {"symmetrize", required_argument, 0, OPT_SYMMETRIZE}, {"components", required_argument, 0, OPT_COMPONENTS},
      {"affinities", required_argument, 0, OPT_AFFINITIES}, {"solver", required_argument, 0, OPT_SOLVER},
      {"tol", required_argument, 0, OPT_TOL}, {"laplacian", required_argument, 0, OPT_LAPLACIAN},
      {"reg", required_argument, 0, OPT_REG}, {"landmarks", required_argument, 0, OPT_LANDMARKS},
      {"clusters", required_argument, 0, 'c'}, {"dims", required_argument, 0, OPT_DIMS},
      {"normalize-rows", no_argument, 0, OPT_NORMALIZE_ROWS}, {"restarts", required_argument, 0, OPT_RESTARTS},
      {"alpha", required_argument, 0, OPT_ALPHA}, {"time", required_argument, 0, OPT_TIME},
      {"pca", required_argument, 0, OPT_PCA}, {"pca-candidates", required_argument, 0, OPT_PCA_CANDIDATES},
      {"radius", required_argument, 0, OPT_RADIUS}, {"save-model", required_argument, 0, OPT_SAVE_MODEL},
      {"model-data", required_argument, 0, OPT_MODEL_DATA}, {"perplexity", required_argument, 0, OPT_PERPLEXITY},
      {"distances", required_argument, 0, OPT_DISTANCES}, {"knn", required_argument, 0, OPT_KNN_GRAPH},
      {"kz", required_argument, 0, OPT_KZ}, {"landmark-method", required_argument, 0, OPT_LANDMARK_METHOD},
      {"landmark-graph", no_argument, 0, OPT_LANDMARK_GRAPH}, {"no-warm-start", no_argument, 0, OPT_NO_WARM_START},
      {"sweep-sigma", required_argument, 0, OPT_SWEEP_SIGMA}, {"sweep-k", required_argument, 0, OPT_SWEEP_K},
      {"metric", required_argument, 0, OPT_METRIC},
      CLI_KNN_OPTIONS, CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, command, help)) return 1;
  cli_knn_choice choice;
  cli_knn_choice_init(&choice);
  env.knn = &choice;
  nle_cluster_opts co;
  nle_cluster_opts_init(&co);
  nle_spectral_opts o = co.spectral;
  const char *output = NULL, *affinities = NULL, *save_model = NULL, *distances = NULL, *metric_name = NULL;
  bool squared = false; /* --knn: the graph's values are squared distances */
  bool copy_data = true;
  double sigmas[SWEEP_MAX], kvals[SWEEP_MAX];
  size_t n_sigma = 0, n_k = 0;
  int c, value = 0;
  while ((c = cli_next_option(&env, argc, argv, sc->cluster ? "o:d:k:c:" : "o:d:k:", longopts)) != -1) {
    if (c == OPT_LANDMARKS && sc->method != NLE_SPECTRAL_LE && sc->method != NLE_SPECTRAL_ISOMAP) {
      env.rc = cli_usage_error(command, "--landmarks is for le and cluster (Locally Linear Landmarks) and isomap "
                               "(landmark Isomap); the dissertation's sec. 4.10 leaves LLE and its family out");
      break;
    }
    if (sc->method != NLE_SPECTRAL_LE && (c == OPT_KZ || c == OPT_LANDMARK_METHOD || c == OPT_LANDMARK_GRAPH)) {
      env.rc = cli_usage_error(command, "--%s is for Locally Linear Landmarks (nlembed le and cluster; the "
                               "dissertation's sec. 4.10 leaves Isomap, MDS and LLE out)",
                               c == OPT_KZ ? "kz" : c == OPT_LANDMARK_METHOD ? "landmark-method" : "landmark-graph");
      break;
    }
    if (!sc->cluster && (c == 'c' || c == OPT_DIMS || c == OPT_NORMALIZE_ROWS || c == OPT_RESTARTS ||
                         c == OPT_NO_WARM_START || c == OPT_SWEEP_SIGMA || c == OPT_SWEEP_K)) {
      env.rc = cli_usage_error(command, "--%s is for nlembed cluster", c == 'c' ? "clusters" : c == OPT_DIMS ? "dims" : c == OPT_RESTARTS ? "restarts" : c == OPT_NO_WARM_START ? "no-warm-start" : c == OPT_SWEEP_SIGMA ? "sweep-sigma" : c == OPT_SWEEP_K ? "sweep-k" : "normalize-rows");
      continue;
    }
    if (sc->cluster && c == 'd') {
      env.rc = cli_usage_error(command, "-d is for the embeddings; nlembed cluster takes --dims");
      continue;
    }
    switch (c) {
    case 'c':
      env.rc = cli_int_field(command, "--clusters", optarg, 2, INT_MAX, false, &co.clusters);
      break;
    case OPT_DIMS:
      env.rc = cli_int_field(command, "--dims", optarg, 1, INT_MAX, false, &co.dims);
      break;
    case OPT_NORMALIZE_ROWS: co.normalize_rows = true; break;
    case OPT_NO_WARM_START: co.warm_start = false; break;
    case OPT_SWEEP_SIGMA:
      if (!(n_sigma = parse_list(optarg, INFINITY, sigmas)))
        env.rc = cli_usage_error(command, "--sweep-sigma takes positive numbers a,b,c or lo:hi:n (n <= %d), not \"%s\"",
                                 SWEEP_MAX, optarg);
      break;
    case OPT_SWEEP_K:
      if (!(n_k = parse_list(optarg, INT_MAX, kvals)))
        env.rc = cli_usage_error(command, "--sweep-k takes positive integers up to %d, a,b,c or lo:hi:n (n <= %d), "
                                 "not \"%s\"", INT_MAX, SWEEP_MAX, optarg);
      break;
    case OPT_RESTARTS:
      env.rc = cli_int_field(command, "--restarts", optarg, 1, INT_MAX, false, &co.restarts);
      break;
    case 'o': output = optarg; break;
    case 'd':
      env.rc = cli_int_field(command, "-d", optarg, 1, INT_MAX, false, &o.dim);
      break;
    case 'k':
      env.rc = cli_int_field(command, "-k", optarg, 1, INT_MAX, false, &o.k);
      break;
    case OPT_AFFINITY:
      if (!(env.rc = parse_name(command, "affinity", optarg, nle_affinity_kind_parse, &value)))
        o.affinity = (nle_affinity_kind)value;
      break;
    case OPT_SYMMETRIZE:
      if (!(env.rc = parse_name(command, "symmetrize", optarg, nle_symmetrize_parse, &value)))
        o.symmetrize = (nle_symmetrize_rule)value;
      break;
    case OPT_COMPONENTS:
      if (!(env.rc = parse_name(command, "components", optarg, nle_components_parse, &value)))
        o.components = (nle_components_policy)value;
      break;
    case OPT_SOLVER:
      if (!(env.rc = parse_name(command, "solver", optarg, nle_eigen_solver_parse, &value)))
        o.solver = (nle_eigen_solver)value;
      break;
    case OPT_LAPLACIAN:
      if (!(env.rc = parse_name(command, "laplacian", optarg, nle_laplacian_parse, &value)))
        o.laplacian = (nle_laplacian_kind)value;
      break;
    case OPT_SIGMA:
      env.rc = cli_real_arg(command, "--sigma", optarg, 0, true, INFINITY, false, false, &o.sigma);
      break;
    case OPT_PERPLEXITY:
      env.rc = cli_real_arg(command, "--perplexity", optarg, 1, true, INFINITY, false, false, &o.perplexity);
      break;
    case OPT_TUNING:
      env.rc = cli_int_field(command, "--tuning-k", optarg, 1, INT_MAX, false, &o.tuning_k);
      break;
    case OPT_TOL:
      env.rc = cli_real_arg(command, "--tol", optarg, 0, false, 1, true, false, &o.tol);
      break;
    case OPT_REG:
      env.rc = cli_real_arg(command, "--reg", optarg, 0, false, INFINITY, false, false, &o.reg);
      break;
    case OPT_LANDMARKS:
      env.rc = cli_int_field(command, "--landmarks", optarg, 0, INT_MAX, false, &o.landmarks);
      break;
    case OPT_KZ:
      env.rc = cli_int_field(command, "--kz", optarg, 1, INT_MAX, false, &o.kz);
      break;
    case OPT_LANDMARK_METHOD: {
      int m = 0;
      env.rc = parse_name(command, "landmark-method", optarg, nle_landmark_method_parse, &m);
      o.landmark_method = (nle_landmark_method)m;
      break;
    }
    case OPT_LANDMARK_GRAPH: o.landmark_graph = true; break;
    case OPT_ALPHA:
      env.rc = cli_real_arg(command, "--alpha", optarg, 0, false, 1, false, false, &o.alpha);
      break;
    case OPT_TIME:
      env.rc = cli_int_field(command, "--time", optarg, 0, INT_MAX, false, &o.diffusion_time);
      break;
    case OPT_RADIUS:
      env.rc = cli_real_arg(command, "--radius", optarg, 0, true, INFINITY, false, false, &o.radius);
      break;
    case OPT_PCA:
      env.rc = cli_int_field(command, "--pca", optarg, 0, INT_MAX, true, &o.pca_dims);
      break;
    case OPT_PCA_CANDIDATES:
      env.rc = cli_int_field(command, "--pca-candidates", optarg, 1, INT_MAX, false, &o.pca_candidates);
      break;
    case OPT_AFFINITIES: affinities = optarg; break;
    case OPT_METRIC: metric_name = optarg; break;
    case OPT_DISTANCES: distances = optarg, squared = false; break;
    case OPT_KNN_GRAPH: distances = optarg, squared = true; break;
    case OPT_SAVE_MODEL: save_model = optarg; break;
    case OPT_MODEL_DATA:
      if (!strcmp(optarg, "copy") || !strcmp(optarg, "reference")) copy_data = !strcmp(optarg, "copy");
      else env.rc = cli_usage_error(command, "--model-data takes copy or reference, not \"%s\"", optarg);
      break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  o.knn_method = (nle_knn_method)choice.method;
  o.knn_approx = choice.approx;
  int rc = env.rc, n_inputs = argc - optind;
  nle_metric metric = NLE_METRIC_EUCLIDEAN;
  if (!rc) rc = cli_metric_parse(command, metric_name, false, &metric);
  if (!rc && metric_name && (affinities || distances))
    rc = cli_usage_error(command, "--metric reads INPUT; --affinities, --distances and --knn are read as they are");
  if (!rc && save_model && (metric == NLE_METRIC_COSINE || metric == NLE_METRIC_CORRELATION))
    rc = cli_usage_error(command, "--save-model with --metric %s: the model's map takes Euclidean points (use the "
                         "Python or C estimator, which normalises new points)", metric_name);
  if (!rc && affinities && distances) rc = cli_usage_error(command, "give one of --affinities, --distances and --knn");
  const char *given = affinities ? "--affinities" : squared ? "--knn" : "--distances";
  if (!rc && squared && !(strlen(distances) > 4 && !strcmp(distances + strlen(distances) - 4, ".mtx")))
    rc = cli_usage_error(command, "--knn takes a Matrix Market graph (.mtx) as nlembed knn writes it");
  /* INPUT with --knn or --affinities: the points for what needs coordinates (LLL) */
  bool with_points = n_inputs == 1 && (affinities || squared);
  if (!rc && !with_points && !((n_inputs == 1 && !affinities && !distances) || (n_inputs == 0 && (affinities || distances))))
    rc = affinities || distances ? cli_usage_error(command, "expected no INPUT with %s, got %d", given, n_inputs)
                                 : cli_usage_error(command, "expected one INPUT, got %d", n_inputs);
  if (!rc && !output) rc = cli_usage_error(command, "no output file (-o FILE)");
  if (!rc && save_model && !n_inputs)
    rc = cli_usage_error(command, "--save-model needs the INPUT data (new points are placed by their distances to it)");
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_DENSE);
  if (!rc && !s && save_model) s = nle_check_output(env.ctx, save_model, 0);
  o.keep_model = save_model != NULL;
  nle_dataset *ds = NULL;
  nle_csr *W = NULL;
  nle_spectral_result *res = NULL;
  double t_read = nle_time_seconds();
  /* INPUT alone: sparse rows and precomputed distances searched into the
   * graph here, points (made unit for cosine) searched by the method */
  bool graph_from_input = n_inputs == 1 && !affinities && !distances;
  env.read.sparse_ok = graph_from_input;
  if (!rc && !s && n_inputs) s = cli_load(&env, argv[optind], &ds);
  const nle_matf *points = ds ? ds->X : NULL;
  nle_matf *unit_rows = NULL;
  nle_csr *input_graph = NULL;
  double t_search = 0.0; /* searches made here: kNN time, not reading time */
  if (!rc && !s && graph_from_input) {
    rc = cli_metric_input(&env, argv[optind], metric_name, metric, ds, o.k, &points, &unit_rows, &input_graph,
                          &t_search);
    if (!rc && input_graph && save_model)
      rc = cli_usage_error(command, "--save-model needs dense points, not %s",
                           ds->sparse ? "a sparse matrix" : "precomputed distances");
  }
  nle_dataset *dense = NULL;
  nle_csr *knn = NULL, *sparse = NULL;
  const char *matrix = affinities ? affinities : distances;
  size_t len = matrix ? strlen(matrix) : 0;
  bool mtx = len > 4 && !strcmp(matrix + len - 4, ".mtx");
  if (!rc && !s && matrix && mtx) s = nle_read_csr_mtx(env.ctx, matrix, affinities ? &W : &sparse);
  if (!rc && !s && matrix && !mtx) s = cli_load(&env, matrix, &dense);
  /* the readers name the file; the conversions only the matrix, so the
   * file goes before their message */
  nle_status converted = NLE_OK;
  if (!rc && !s && affinities && !mtx) converted = nle_csr_from_dense(env.ctx, dense->X, &W);
  if (!rc && !s && !converted && W) converted = nle_spectral_check_affinities(env.ctx, W);
  if (!rc && !s && distances) {
    double t = nle_time_seconds();
    converted = mtx ? nle_knn_from_sparse_distances(env.ctx, sparse, squared, &knn)
                    : nle_knn_from_distances(env.ctx, dense->X, o.k, o.radius, &knn);
    t_search += nle_time_seconds() - t;
  }
  if (converted) {
    fprintf(stderr, "nlembed %s: error: %s: %s\n", command, matrix, nle_ctx_error(env.ctx));
    rc = converted == NLE_ERR_ARG ? 2 : 1;
  }
  t_read = nle_time_seconds() - t_read - t_search;
  if (!rc && !s && (n_sigma || n_k)) { /* model selection: its own run and output */
    if (!n_sigma || !n_k) rc = cli_usage_error(command, "give both --sweep-sigma and --sweep-k");
    else if (!ds || matrix || input_graph || unit_rows)
      rc = cli_usage_error(command, "the sweep needs INPUT points, not a precomputed graph");
    else if (!ds->labels) rc = cli_usage_error(command, "the sweep scores each cell against labels: give them with --labels SOURCE");
    if (!rc) {
      co.spectral = o;
      rc = run_sweep(&env, command, ds, &co, sigmas, n_sigma, kvals, n_k, output, t_read);
    }
    nle_dataset_free(&dense);
    nle_dataset_free(&ds);
    nle_matf_free(&unit_rows);
    nle_csr_free(&input_graph);
    cli_env_free(&env);
    return rc;
  }
  nle_cluster_result *cres = NULL;
  if (!rc && !s) {
    nle_spectral_input in = {input_graph ? NULL : points, input_graph ? input_graph : knn, W};
    co.spectral = o;
    if (sc->cluster) {
      s = nle_spectral_cluster(env.ctx, &in, &co, &cres);
      if (!s) res = cres->embedding;
    } else {
      s = nle_spectral_embed(env.ctx, sc->method, &in, &o, &res);
    }
  }
  if (!rc && !s) s = sc->cluster ? nle_write_labels(env.ctx, output, cres->labels, (int64_t)cres->n)
                                 : nle_write_matd(env.ctx, output, res->X);
  if (!rc && !s && save_model) {
    snprintf(res->model->source, sizeof res->model->source, "%s", argv[optind]);
    s = nle_spectral_model_save(env.ctx, res->model, save_model, copy_data);
  }
  /* clustering: the sizes, and the errors against the data's own labels */
  char extra[4096] = "";
  if (!rc && !s && sc->cluster) {
    size_t len = (size_t)snprintf(extra, sizeof extra, ", \"clusters\": %d, \"inertia\": %.10g, \"kmeans_seconds\": %.3f, "
                                  "\"warm_started\": %s, \"sizes\": [", cres->clusters, cres->inertia, cres->kmeans_seconds,
                                  cres->warm_started ? "true" : "false");
    for (int k = 0; k < cres->clusters && len < sizeof extra - 64; k++) {
      size_t size = 0;
      for (size_t i = 0; i < cres->n; i++) size += cres->labels[i] == k;
      len += (size_t)snprintf(extra + len, sizeof extra - len, "%s%zu", k ? ", " : "", size);
    }
    len += (size_t)snprintf(extra + len, sizeof extra - len, "]");
    if (ds && ds->labels) {
      double matched = 0.0, majority = 0.0;
      s = nle_clustering_error(env.ctx, cres->labels, ds->labels, cres->n, &matched, &majority);
      if (!s) snprintf(extra + len, sizeof extra - len, ", \"error_matched\": %.6f, \"error_majority\": %.6f", matched,
                       majority);
    }
  }
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* the output whole, or none */
  if (!rc) {
    const char *input = ds ? ds->name : matrix;
    print_json(command, input, t_read, t_search, res, extra);
    cli_note(&env, "%s of %zu points: %d eigenvalues from %.3g (%s), %.2f s; wrote %s", command, res->n,
             res->n_eigenvalues, res->eigenvalues[0], nle_eigen_solver_name(res->solver_used),
             res->total_seconds + t_search, output);
  }
  if (cres) nle_cluster_result_free(&cres);
  else nle_spectral_result_free(&res);
  nle_csr_free(&W);
  nle_csr_free(&knn);
  nle_csr_free(&sparse);
  nle_csr_free(&input_graph);
  nle_matf_free(&unit_rows);
  nle_dataset_free(&dense);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
