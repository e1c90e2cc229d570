/* est_graph.c — the estimator family of the graphs themselves, whose fit
 * makes a sparse matrix rather than an embedding (nle_estimator_graph):
 * "knn", the k nearest neighbours of every point as the metric reads the
 * input (nle_metric_graph: dense or sparse rows, precomputed distances);
 * "affinity", an affinity matrix on that graph: entropic by default
 * (dissertation ch. 2, nle_entropic_affinities, with each point's
 * precision beta_n), or a kernel of nle_affinity_graph. */
#include "estimator_internal.h"

#include "../core/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { GRAPH_KNN, GRAPH_AFFINITY };

static const char *const methods[] = {"knn", "affinity", NULL};
static const char *const abouts[] = {
    "The k-nearest-neighbour graph: the k nearest neighbours of every point (itself excluded), exact (blocked GEMM distances, certified) or "
    "approximate (random-projection forest + NN-descent). Sparse input (.npz, .h5ad, Matrix Market coordinates, "
    "...) is searched as it is, never densified. Output by extension: .mtx (Matrix Market, values are squared "
    "distances: 2 (1 - cos) under --metric cosine), or .npy/.csv (N x k neighbour indices, 0-based).",
    "An affinity matrix on the k-nearest-neighbour graph of INPUT, written as Matrix Market. Entropic "
    "affinities (default) give every point the Gaussian bandwidth at which its distribution over its neighbours "
    "has the given perplexity (dissertation ch. 2); the JSON line has the root-finding statistics.",
    NULL};

/* The default neighbours of a graph with no perplexity (the kNN graph, the
 * affinities other than entropic). */
enum { PLAIN_K = 10, KERNEL_K = 15 };

typedef struct {
  int k;                     /* NLE_AUTO: see resolve_k */
  nle_knn_method knn_method; /* NLE_KNN_AUTO */
  nle_knn_approx_opts knn_approx;
  nle_affinity_opts kernel;  /* kind (entropic by default), sigma, tuning_k */
  nle_ea_opts ea;            /* perplexity, root, order, kappa, tol, rescale */
  bool conditional;          /* p(m|n) itself, not (P + P^T) / 2 */
  bool normalize;            /* (P + P^T) / 2N, summing to 1 */
} graph_options;

static int variant_of(const char *method) { return strcmp(method, "knn") ? GRAPH_AFFINITY : GRAPH_KNN; }

static void opts_init(void *opts, int variant) {
  graph_options *o = opts;
  *o = (graph_options){.k = variant == GRAPH_KNN ? PLAIN_K : NLE_AUTO, .knn_method = NLE_KNN_AUTO};
  nle_knn_approx_opts_init(&o->knn_approx);
  nle_affinity_opts_init(&o->kernel);
  o->kernel.kind = NLE_AFF_ENTROPIC;
  nle_ea_opts_init(&o->ea);
}

NLE__ENUM_NAME_OF(nle_knn_method_name, nle_knn_method)
NLE__ENUM_NAME_OF(nle_affinity_kind_name, nle_affinity_kind)
NLE__ENUM_NAME_OF(nle_root_method_name, nle_root_method)
NLE__ENUM_NAME_OF(nle_ea_order_name, nle_ea_order)

#define AT(f) offsetof(graph_options, f)
#define AFFINITY .scope = NLE__FOR(GRAPH_AFFINITY)
#define ENTROPIC AFFINITY, .scope_text = "nlembed affinity (entropic)"

static const nle__option options[] = {
    {.name = "neighbors", .kind = NLE__OPT_INT, .offset = AT(k), .auto_ok = true, NLE__INT_FROM(1), .short_name = 'k',
     .metavar = "K", .json = "k",
     .help = "neighbours per point, 1 <= K < N (auto: 10; affinity: 3 x perplexity, 15 for the kernels)"},
    NLE__KNN_SEARCH_ROWS(graph_options, knn_method, knn_approx),
    {.name = "kind", .kind = NLE__OPT_ENUM, .offset = AT(kernel.kind), .enum_name = nle_affinity_kind_name_of,
     .enum_parse = nle_affinity_kind_parse, .choices = "entropic, gaussian, binary, inverse or self-tuning", AFFINITY,
     .metavar = "NAME", .help = "the affinities: entropic (perplexity), gaussian, binary, inverse or self-tuning"},
    {.name = "perplexity", .kind = NLE__OPT_REAL, .offset = AT(ea.perplexity), NLE__REAL_IN(1, INFINITY, NLE__OPEN_LO),
     ENTROPIC, .short_name = 'p', .metavar = "K", .help = "entropic: perplexity"},
    {.name = "root", .kind = NLE__OPT_ENUM, .offset = AT(ea.root), .enum_name = nle_root_method_name_of,
     .enum_parse = nle_root_method_parse, ENTROPIC, .metavar = "NAME",
     .choices = "householder, halley, euler, newton, bisection, brent, ridder or classic",
     .help = "entropic: root finder: householder (order-8 series step), halley, euler, newton, bisection, brent, "
             "ridder, classic (bisection on beta from 1)"},
    {.name = "order", .kind = NLE__OPT_ENUM, .offset = AT(ea.order), .enum_name = nle_ea_order_name_of,
     .enum_parse = nle_ea_order_parse, ENTROPIC, .metavar = "NAME",
     .help = "entropic: warm-start order: mst, msp, density, sequential (fastest on 70,000 points), random, bounds"},
    {.name = "kappa", .kind = NLE__OPT_INT, .offset = AT(ea.kappa), NLE__INT_FROM(1), ENTROPIC, .metavar = "N",
     .help = "entropic: neighbours of the order's graph"},
    {.name = "rescale", .kind = NLE__OPT_BOOL, .offset = AT(ea.rescale), ENTROPIC, .alias = "no-rescale",
     .help = "entropic: start from the parent's beta rescaled by the ratio of the two points' distance scales"},
    {.name = "tol", .kind = NLE__OPT_REAL, .offset = AT(ea.tol), NLE__POSITIVE, ENTROPIC, .metavar = "T",
     .help = "entropic: |H - log K| at convergence"},
    {.name = "conditional", .kind = NLE__OPT_BOOL, .offset = AT(conditional), ENTROPIC,
     .help = "entropic: the conditional p(m|n) (rows sum to 1) instead of (P + P^T) / 2"},
    {.name = "normalize", .kind = NLE__OPT_BOOL, .offset = AT(normalize), ENTROPIC,
     .help = "entropic: (P + P^T) / 2 divided by N, summing to 1"},
    {.name = "sigma", .kind = NLE__OPT_REAL, .offset = AT(kernel.sigma), NLE__POSITIVE, AFFINITY, .metavar = "S",
     .help = "gaussian: the width"},
    {.name = "tuning-k", .kind = NLE__OPT_INT, .offset = AT(kernel.tuning_k), NLE__INT_FROM(1), AFFINITY,
     .metavar = "K", .help = "self-tuning: the neighbour giving sigma_n"},
    {.name = NULL}};

static bool entropic(const graph_options *o) { return o->kernel.kind == NLE_AFF_ENTROPIC; }

/* The neighbours: as given, else the kNN graph's 10, the entropic
 * affinities' by the graph stage's one rule (nle_graph_k_for_perplexity,
 * not capped at N - 1 here: too few points are refused, naming the
 * perplexity), the kernels' 15. */
static int graph_k(const nle_estimator *e, size_t n) {
  (void)n;
  const graph_options *o = e->opts;
  if (o->k != NLE_AUTO) return o->k;
  if (e->variant == GRAPH_KNN) return PLAIN_K;
  return entropic(o) ? nle_graph_k_for_perplexity(o->ea.perplexity, 0) : KERNEL_K;
}

static void graph_search(const nle_estimator *e, nle_knn_method *method, const nle_knn_approx_opts **approx) {
  const graph_options *o = e->opts;
  *method = o->knn_method;
  *approx = &o->knn_approx;
}

/* The affinities' checks that need the points and the kind together. */
static nle_status check_affinity(nle_estimator *e, const nle__est_input *in) {
  const graph_options *o = e->opts;
  const char *at = in->source ? in->source : e->method;
  int k = graph_k(e, in->n);
  if (!entropic(o) && o->conditional)
    return nle__fail(e->ctx, NLE_ERR_ARG, "{@conditional} goes with {@kind=entropic}");
  if ((size_t)k < in->n) return NLE_OK;
  /* past INT_MAX the rule's k is capped: say the product itself */
  if (o->k == NLE_AUTO && entropic(o))
    return nle__fail(e->ctx, NLE_ERR_VALUE,
                     "%s: k = 3 x {@perplexity=%g} = %g neighbours need more than %zu points (a smaller "
                     "{@perplexity}, or {@neighbors})",
                     at, o->ea.perplexity, k < INT_MAX ? (double)k : 3.0 * o->ea.perplexity, in->n);
  return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@neighbors=%d} neighbours need more than %zu points", at, k, in->n);
}

/* The weights on the kNN graph G into e->graph (and e->beta); a warning
 * (not converged) is returned and kept. */
static nle_status weigh(nle_estimator *e, const nle_csr *G, nle_ea_result **ea) {
  const graph_options *o = e->opts;
  if (!entropic(o)) return nle_affinity_graph(e->ctx, G, &o->kernel, &e->graph);
  nle_status s = nle_entropic_affinities(e->ctx, G, &o->ea, ea);
  nle_status warning = s > 0 ? s : NLE_OK;
  if (s < 0) return s;
  if (o->conditional) {
    e->graph = (*ea)->P;
    (*ea)->P = NULL;
  } else {
    s = nle_affinity_symmetrize(e->ctx, (*ea)->P, o->normalize, &e->graph);
  }
  e->beta = (*ea)->beta;
  (*ea)->beta = NULL;
  return s ? s : warning;
}

static void report_entropic(nle__json *j, const nle_ea_result *ea, bool converged) {
  nle__json_printf(j, ", \"mean_iterations\": %.4f, \"mean_evaluations\": %.4f, \"bisection_points\": %lld, "
                   "\"degenerate_points\": %lld", ea->mean_iterations, ea->mean_evaluations,
                   (long long)ea->bisection_points, (long long)ea->degenerate_points);
  nle__json_printf(j, ", \"max_error\": %.3g, \"converged\": %s, \"steps_histogram\": [", ea->max_error,
                   converged ? "true" : "false");
  for (int h = 0; h < 8; h++) nle__json_printf(j, "%s%lld", h ? ", " : "", (long long)ea->steps_histogram[h]);
  nle__json_printf(j, "]");
}

static nle_status fit(nle_estimator *e, const nle__est_input *in) {
  const graph_options *o = e->opts;
  nle_status s = e->variant == GRAPH_AFFINITY ? check_affinity(e, in) : NLE_OK;
  if (s) return s;
  /* sparse rows and distances were searched by the front door (e->knn_built) */
  nle_knn_method ran = e->metric == NLE_METRIC_PRECOMPUTED ? NLE_KNN_EXACT : in->search_used;
  nle_csr *G = e->knn_built;
  e->knn_built = NULL;
  double t0 = nle_time_seconds(), search = in->search_seconds;
  if (!G) {
    s = nle_metric_graph(e->ctx, (nle_metric)e->metric, in->raw_Y, NULL, graph_k(e, in->n), o->knn_method,
                         &o->knn_approx, &G, &ran);
    search = nle_time_seconds() - t0;
  }
  nle_ea_result *ea = NULL;
  t0 = nle_time_seconds();
  if (!s && e->variant == GRAPH_KNN) {
    e->graph = G; /* the product itself */
    G = NULL;
  } else if (!s) {
    s = weigh(e, G, &ea);
  }
  double weights = nle_time_seconds() - t0;
  nle_status warning = s > 0 ? s : NLE_OK;
  if (s >= 0) s = nle__est_keep_resolved(e, e->opts);
  if (!s) {
    graph_options *r = e->resolved;
    r->k = graph_k(e, in->n);
    r->knn_method = ran;
    nle__est_report_options(e, r);
    nle__json *j = &e->report;
    nle__json_printf(j, ", \"sparse\": %s, \"nnz\": %lld, \"threads\": %d", in->sparse ? "true" : "false",
                     in->sparse ? (long long)in->sparse->nnz : (long long)(in->n * e->D), nle_ctx_threads(e->ctx));
    if (ea) report_entropic(j, ea, warning == NLE_OK);
    if (e->variant == GRAPH_AFFINITY)
      nle__json_printf(j, ", \"knn_seconds\": %.3f, \"affinity_seconds\": %.4f", search, weights);
    nle__json_printf(j, ", \"seconds\": %.3f", search + weights);
    char summary[200];
    snprintf(summary, sizeof summary, "%s %d-NN graph of %zu points%s", nle_knn_method_name(ran), r->k, in->n,
             e->variant == GRAPH_KNN ? "" : entropic(r) ? ", entropic affinities" : ", affinities");
    nle__json_string(j, "summary", summary);
  }
  nle_ea_result_free(&ea);
  nle_csr_free(&G);
  return s ? s : warning;
}

static nle_estimator_product makes(int variant) { return variant == GRAPH_KNN ? NLE_MAKES_NEIGHBOURS : NLE_MAKES_WEIGHTS; }

const nle__family nle__family_graph = {
    .methods = methods,
    .abouts = abouts,
    .variant_of = variant_of,
    .opts_size = sizeof(graph_options),
    .opts_init = opts_init,
    .options = options,
    .graph_k = graph_k,
    .graph_search = graph_search,
    .fit = fit,
    .makes = makes,
};
