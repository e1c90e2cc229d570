/* spectral.c — nle_spectral_embed, the front door of the spectral methods:
 * checks the options and the input, builds the neighbourhood graph and its
 * weights once (kNN search, affinity, symmetrisation), applies the
 * method's policy for disconnected graphs (SPEC G06-10), and hands the
 * rest to the method's row of the table (one file per method). */
#include "method.h"

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One row per method, in the order of nle_spectral_method (a method's value
 * is its place here; its name is its row's). A method defines its row in
 * its own file (method.h). */
extern const nle__spectral_method nle__spectral_le, nle__spectral_lle, nle__spectral_isomap, nle__spectral_diffmap,
    nle__spectral_ltsa, nle__spectral_hlle, nle__spectral_mlle;
static const nle__spectral_method *const methods[] = {
    &nle__spectral_le,
    &nle__spectral_lle,
    &nle__spectral_isomap,
    &nle__spectral_diffmap,
    &nle__spectral_ltsa,
    &nle__spectral_hlle,
    &nle__spectral_mlle,
};

const nle__spectral_method *nle__spectral_row(nle_spectral_method method) {
  return (unsigned)method < NLE__COUNT(methods) ? methods[method] : NULL;
}

const char *nle_spectral_method_name(nle_spectral_method method) {
  const nle__spectral_method *row = nle__spectral_row(method);
  return row ? row->name : "unknown";
}

int nle_spectral_method_parse(const char *name) {
  for (size_t i = 0; name && i < NLE__COUNT(methods); i++)
    if (!strcmp(name, methods[i]->name)) return (int)i;
  return -1;
}
NLE__ENUM_NAMES(nle_laplacian_name, nle_laplacian_parse, nle_laplacian_kind, NLE_LAPLACIAN_MAP, NLE_LAPLACIAN_COUNT, false)
NLE__ENUM_NAMES(nle_components_name, nle_components_parse, nle_components_policy, NLE_COMPONENTS_MAP, NLE_COMPONENTS_COUNT, true)
NLE__ENUM_NAMES(nle_symmetrize_name, nle_symmetrize_parse, nle_symmetrize_rule, NLE_SYMMETRIZE_MAP, NLE_SYMMETRIZE_COUNT, false)
NLE__ENUM_NAMES(nle_eigen_solver_name, nle_eigen_solver_parse, nle_eigen_solver, NLE_EIGEN_SOLVER_MAP, NLE_EIGEN_COUNT, true)

/* The graph stage's options that nle_spectral_opts carries, as (ours, the
 * graph's): one list behind their defaults (the graph's own) and the graph
 * options of a spectral run. */
#define GRAPH_FIELDS(X, o, g)                                                                                     \
  X(o, g, k, k) X(o, g, perplexity, perplexity) X(o, g, radius, radius) X(o, g, knn_method, method)                \
  X(o, g, knn_approx, approx) X(o, g, pca_dims, pca_dims) X(o, g, pca_candidates, pca_candidates)                 \
  X(o, g, affinity, weights) X(o, g, sigma, sigma) X(o, g, tuning_k, tuning_k) X(o, g, symmetrize, symmetrize)

void nle_spectral_opts_init(nle_spectral_opts *o) {
  memset(o, 0, sizeof *o);
  NLE__GRAPH_DEFAULTS(GRAPH_FIELDS, o);
  o->dim = 2;
  o->laplacian = NLE_LAPLACIAN_RANDOM_WALK;
  o->components = NLE_COMPONENTS_AUTO;
  o->solver = NLE_EIGEN_AUTO;
  o->tol = 1e-12; /* residuals 1e-12 of the eigenvalue: 1,472 -> 438 products for 10 pairs of 70,000 images */
  o->reg = 1e-3;
  o->landmarks = 0;
  o->kz = NLE_AUTO;
  o->landmark_method = NLE_LANDMARKS_RANDOM;
  o->pencil = NLE_PENCIL_AUTO;
  o->alpha = 1.0;
  o->diffusion_time = 1;
}

void nle_spectral_result_free(nle_spectral_result **r) {
  if (!r || !*r) return;
  nle_matd_free(&(*r)->X);
  free((*r)->eigenvalues);
  free((*r)->landmark_index);
  nle_matd_free(&(*r)->landmark_X);
  nle_spectral_model_free(&(*r)->model);
  free(*r);
  *r = NULL;
}

static int named(const char *name) { return strcmp(name, "unknown") != 0; }

/* Each option against what can work; a message names the option as a
 * marker ({@neighbors=0}) so each client shows its own spelling. */
static nle_status check_opts(nle_ctx *ctx, nle_spectral_method method, const nle_spectral_opts *o) {
#define BAD(...) return nle__fail(ctx, NLE_ERR_ARG, "spectral embedding: " __VA_ARGS__)
#define INT_TEXT(v) nle__int_text(v).s
#define REAL_TEXT(v) nle__real_text(v).s
  if (!named(nle_spectral_method_name(method))) BAD("no method %d", (int)method);
  if (o->dim < 1) BAD("{@dim=%s} dimensions: at least 1", INT_TEXT(o->dim));
  if (o->k < 1) BAD("{@neighbors=%s}: at least 1 neighbour", INT_TEXT(o->k));
  if (!(o->radius >= 0 && isfinite(o->radius))) BAD("{@radius=%s}: a finite radius >= 0", REAL_TEXT(o->radius));
  if (!named(nle_knn_method_name(o->knn_method))) BAD("{@knn-method} has no value %d", (int)o->knn_method);
  if (!named(nle_symmetrize_name(o->symmetrize))) BAD("{@symmetrize} has no value %d", (int)o->symmetrize);
  if (!named(nle_affinity_kind_name(o->affinity))) BAD("{@affinity} has no value %d", (int)o->affinity);
  if (!(o->sigma == NLE_AUTO || (o->sigma > 0 && isfinite(o->sigma))))
    BAD("{@sigma=%s}: a finite width > 0, or auto", REAL_TEXT(o->sigma));
  if (o->tuning_k < 1) BAD("{@tuning-k=%s}: at least 1", INT_TEXT(o->tuning_k));
  if (!(o->perplexity == NLE_AUTO || (o->perplexity > 1 && isfinite(o->perplexity))))
    BAD("{@perplexity=%s}: a finite number > 1, or auto", REAL_TEXT(o->perplexity));
  if (!named(nle_laplacian_name(o->laplacian))) BAD("{@laplacian} has no value %d", (int)o->laplacian);
  if (!named(nle_components_name(o->components))) BAD("{@components} has no value %d", (int)o->components);
  if (!named(nle_eigen_solver_name(o->solver))) BAD("{@solver} has no value %d", (int)o->solver);
  if (!(o->tol >= 0 && o->tol < 1)) BAD("{@tol=%s}: a number in [0, 1)", REAL_TEXT(o->tol));
  if (!(o->reg >= 0 && isfinite(o->reg))) BAD("{@reg=%s}: a finite number >= 0", REAL_TEXT(o->reg));
  if (o->landmarks < 0) BAD("{@landmarks=%s}: 0 (none) or a count", INT_TEXT(o->landmarks));
  if (!(o->kz == NLE_AUTO || o->kz >= 1)) BAD("{@kz=%d}: at least 1, or auto", o->kz);
  if (!named(nle_landmark_method_name(o->landmark_method)))
    BAD("{@landmark-method} has no value %d", (int)o->landmark_method);
  if (!named(nle_lll_pencil_name(o->pencil))) BAD("{@pencil} has no value %d", (int)o->pencil);
  if (!(o->pca_dims == NLE_AUTO || o->pca_dims >= 0)) BAD("{@pca=%d}: 0 (off), a count, or auto", o->pca_dims);
  if (!(o->pca_candidates == NLE_AUTO || o->pca_candidates == 0 || o->pca_candidates >= o->k))
    BAD("{@pca-candidates=%d}: at least the %d neighbours ({@neighbors}), or auto", o->pca_candidates, o->k);
  if (!(o->alpha >= 0 && o->alpha <= 1)) BAD("{@alpha=%s}: a number in [0, 1]", REAL_TEXT(o->alpha));
  if (o->diffusion_time < 0) BAD("{@time=%s}: at least 0", INT_TEXT(o->diffusion_time));
  return NLE_OK;
#undef BAD
#undef INT_TEXT
#undef REAL_TEXT
}

/* rows_all: the points of all ranks (distributed), else 0. */
static nle_status check_input(nle_ctx *ctx, const nle_spectral_input *in, const nle_spectral_opts *o, size_t rows_all,
                              size_t *n) {
  int graphs = (in->knn != NULL) + (in->affinities != NULL);
  if (graphs > 1 || (graphs == 0 && !in->Y))
    return nle__fail(ctx, NLE_ERR_ARG, "spectral embedding: give points, a kNN graph or affinities (a graph may come "
                     "with the points; %d graphs given)", graphs);
  const nle_csr *g = in->knn ? in->knn : in->affinities;
  if (g && g->rows != g->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral embedding: the %s must be N x N, not %lld x %lld",
                     in->knn ? "kNN graph" : "affinity matrix", (long long)g->rows, (long long)g->cols);
  if (g && in->Y && (int64_t)in->Y->rows != g->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral embedding: %zu points but the %s has %lld rows", in->Y->rows,
                     in->knn ? "kNN graph" : "affinity matrix", (long long)g->rows);
  *n = rows_all ? rows_all : in->Y ? in->Y->rows : (size_t)g->rows;
  if (*n < 3) return nle__fail(ctx, NLE_ERR_ARG, "spectral embedding: %zu points; at least 3 are needed", *n);
  if ((size_t)o->dim + 1 >= *n)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral embedding: {@dim=%d} dimensions of %zu points (at most N - 2)", o->dim,
                     *n);
  if (in->Y && !(o->radius > 0) && (size_t)o->k >= *n)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral embedding: {@neighbors=%d} neighbours of %zu points (at most N - 1)",
                     o->k, *n);
  if (in->affinities) return nle_spectral_check_affinities(ctx, in->affinities);
  return NLE_OK;
}

nle_status nle_spectral_check_affinities(nle_ctx *ctx, const nle_csr *W) {
  nle_status s = nle_affinity_check(ctx, W);
  if (!s) s = nle__csr_check_symmetric(ctx, W, "affinities");
  return s;
}

void nle__spectral_graph_opts(const nle_spectral_opts *o, nle_graph_opts *g) {
  NLE__GRAPH_OPTS_OF(GRAPH_FIELDS, o, g);
}

nle_status nle__spectral_weights(nle_ctx *ctx, const nle_csr *knn, const nle_spectral_opts *o, nle_csr **W,
                                 double **beta) {
  nle_graph_opts g;
  nle__spectral_graph_opts(o, &g);
  return nle__graph_weights(ctx, knn, &g, W, beta);
}

nle_status nle__resolve_sigma(nle_ctx *ctx, const nle_csr *knn, nle_spectral_opts *o) {
  return nle__graph_resolve_sigma(ctx, knn, o->affinity, &o->sigma);
}

double nle__affinity_weight(const nle_spectral_opts *o, double d2, double scale_i, double scale_j) {
  return nle__graph_edge_weight(o->affinity, o->sigma, d2, scale_i, scale_j);
}

/* The search's options as the graph stage resolves them, back into o. */
/* The search's automatic options for n points of Y's columns (n: every
 * rank's, so that all ranks resolve alike). */
static void resolve_search(nle_spectral_opts *o, size_t n, const nle_matf *Y, nle_graph_opts *g) {
  nle__spectral_graph_opts(o, g);
  nle__graph_resolve(g, n, Y->cols);
  o->pca_dims = g->pca_dims;
  o->pca_candidates = g->pca_candidates;
}

/* Points that came with their graph: only LLL's landmark search needs
 * them on principal components (the same rule as the graph's search). */
static nle_status landmark_space(nle_ctx *ctx, const nle_matf *Y, nle_spectral_opts *o, nle_spectral_result *r,
                                 nle_matf **projected) {
  nle_graph_opts g;
  resolve_search(o, Y->rows, Y, &g);
  o->pca_candidates = 0;
  double kept = 0, t0 = nle_time_seconds();
  nle_status s = o->pca_dims ? nle__graph_pca_reduce(ctx, Y, o->pca_dims, projected, &kept, NULL, NULL) : NLE_OK;
  r->pca_seconds = nle_time_seconds() - t0;
  return s;
}

/* The directed kNN graph of the points, by the graph stage (in Y or among
 * components re-ranked in Y). */
nle_status nle__spectral_neighbours(nle_ctx *ctx, const nle_matf *Y, nle_spectral_opts *o, nle_spectral_result *r,
                                   nle_spectral_model *model, nle_csr **graph, nle_matf **projected) {
  nle_graph_result g = {0};
  nle__rows rows; /* with a communicator, Y is this rank's rows of N */
  nle_status s = nle__comm_rows(ctx, Y->rows, "graph", &rows);
  if (s) return s;
  resolve_search(o, rows.n, Y, &g.resolved);
  g.resolved.stop = NLE_GRAPH_NEIGHBOURS;
  g.resolved.keep_projection = true; /* the points where new points (and LLL's landmarks) are searched */
  s = nle__graph_build_into(ctx, Y, &g);
  r->knn_used = g.resolved.method;
  r->pca_seconds = g.pca_seconds;
  *graph = g.knn, g.knn = NULL;
  *projected = g.projected, g.projected = NULL;
  if (model) { /* new points are searched for on the same components */
    model->pca_mean = g.pca_mean, g.pca_mean = NULL;
    model->pca_components = g.pca_components, g.pca_components = NULL;
    model->candidate_reach = g.candidate_reach, g.candidate_reach = NULL;
  }
  free(g.pca_mean);
  free(g.pca_components);
  free(g.candidate_reach);
  return s;
}

/* A graph of several components (*comps > 1) under o->components: refused
 * (error), embedded as it is (allow), or joined by the shortest edges
 * between the components (join: *joined the kNN graph with them, *W its
 * weights made again, *comps those weights' components). The defaults
 * warn; a policy the caller chose is only logged. Joining needs the
 * distances between any two points: given only a graph or affinities, the
 * join falls back to allow, or is refused for Isomap (whose geodesics
 * would be infinite). */
static nle_status components_policy(nle_ctx *ctx, const nle__spectral_method *m, const nle_spectral_input *in,
                                    const nle_csr *knn, nle_spectral_opts *o, bool chosen, nle_spectral_result *r,
                                    nle_csr **joined, nle_csr **W, int64_t *comps) {
  long long c = (long long)*comps;
  bool join_only = m->join_only;
  if (o->components == NLE_COMPONENTS_ERROR)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "%s: the neighbourhood graph has %lld connected components; {@components=error} refuses it (a "
                     "larger {@neighbors} joins them; {@components=join} adds the shortest edges between them%s)",
                     m->name, c, join_only ? "" : ", {@components=allow} embeds them side by side");
  const char *why = o->components != NLE_COMPONENTS_JOIN ? NULL
                    : in->affinities                      ? "given affinities"
                    : !in->Y                              ? "a kNN graph without its points"
                                                          : NULL;
  if (why && join_only)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "%s: the neighbourhood graph has %lld connected components, and %s give no distances to join "
                     "them by (their geodesics would be infinite): give the points, or a graph of larger {@neighbors}",
                     m->name, c, why);
  if (o->components == NLE_COMPONENTS_ALLOW && join_only)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "%s: the neighbourhood graph has %lld connected components: {@components=allow} leaves the "
                     "geodesics between them infinite ({@components=join}, the default, joins them; or a larger "
                     "{@neighbors})", m->name, c);
  if (why) o->components = NLE_COMPONENTS_ALLOW; /* nothing to join by: side by side */
  if (o->components == NLE_COMPONENTS_ALLOW) {
    const char *text = "%s: the neighbourhood graph has %lld connected components%s%s: embedded side by side (the "
                       "first coordinates tell the components apart; a larger {@neighbors} joins them, "
                       "{@components=error} refuses)";
    if (chosen && !why) nle__log(ctx, 1, text, m->name, c, "", "");
    else nle__warn(ctx, NLE_WARN_GENERAL, text, m->name, c, why ? " and no distances to join them by: " : "",
                   why ? why : "");
    return NLE_OK;
  }
  nle__join_space space = {in->Y, NULL};
  nle__join_edge *edges = NULL;
  int64_t count = 0;
  nle_status s = nle__join_components(ctx, &space, *W, &edges, &count);
  if (!s) s = nle__knn_add_edges(ctx, knn, edges, count, joined);
  free(edges);
  nle_csr *W2 = NULL;
  double **beta = r->model ? &r->model->beta : NULL;
  if (beta) free(*beta), *beta = NULL; /* made again with the joined rows */
  if (!s) s = nle__spectral_weights(ctx, *joined, o, &W2, beta);
  if (s) return s;
  nle_csr_free(W);
  *W = W2;
  r->joined_edges = count;
  *comps = nle__csr_components(ctx, W2);
  if (*comps < 0) return NLE_ERR_NOMEM;
  const char *text = "%s: the neighbourhood graph has %lld connected components: joined by the %lld shortest edge%s "
                     "between them%s (a larger {@neighbors} joins them in the graph itself; {@components=error} "
                     "refuses)";
  const char *zero = *comps > 1 ? ", which the affinities weigh 0: the components stay apart" : "";
  const char *plural = count == 1 ? "" : "s";
  if (chosen) nle__log(ctx, 1, text, m->name, c, (long long)count, plural, zero);
  else nle__warn(ctx, NLE_WARN_GENERAL, text, m->name, c, (long long)count, plural, zero);
  return NLE_OK;
}

/* On more than one rank (issue 38, docs/mpi_spectral.md): the points by
 * rows, the graph stage by rows, and the methods whose eigenproblem is a
 * sparse product by rows (LE, diffusion maps; spectral clustering is LE).
 * LLL's landmarks (lll_dist.c: Z by rows, the reduced pencil summed over
 * ranks). What needs the whole graph on one rank is refused, naming the
 * option: the other methods (dense or factorised problems), a given graph,
 * a model for new points, and a components policy that counts components
 * (the graph's components are not counted there). *rows_all:
 * the points of all ranks. Every rank has the same options: all refuse
 * alike. */
static nle_status distributed_refusals(nle_ctx *ctx, nle_spectral_method method, const nle_spectral_input *in,
                                       const nle_spectral_opts *o, size_t *rows_all) {
  const char *name = nle_spectral_method_name(method);
  if (method != NLE_SPECTRAL_LE && method != NLE_SPECTRAL_DIFFMAP)
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s does not run on more than one rank yet (docs/mpi.md)", name);
  if (in->knn || in->affinities || !in->Y)
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: a given kNN graph or affinities do not run on more than one rank "
                     "yet: give the points", name);
  if (o->keep_model)
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: a model for new points is not kept on more than one rank yet", name);
  if (o->components != NLE_COMPONENTS_AUTO && o->components != NLE_COMPONENTS_ALLOW)
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: counting components ({@components=%s}) is not distributed yet: "
                     "{@components=auto} on %d ranks", name, nle_components_name(o->components), nle__ranks(ctx));
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, in->Y->rows, name, &rows);
  *rows_all = rows.n;
  return s;
}

nle_status nle_spectral_embed(nle_ctx *ctx, nle_spectral_method method, const nle_spectral_input *in,
                              const nle_spectral_opts *opts, nle_spectral_result **out) {
  return nle__spectral_embed_with(ctx, method, in, opts, NULL, out);
}

nle_status nle__spectral_embed_with(nle_ctx *ctx, nle_spectral_method method, const nle_spectral_input *in,
                                    const nle_spectral_opts *opts, const nle__lll_basis *basis,
                                    nle_spectral_result **out) {
  *out = NULL;
  nle_spectral_opts defaults;
  if (!opts) {
    nle_spectral_opts_init(&defaults);
    opts = &defaults;
  }
  size_t n = 0, rows_all = 0;
  nle_status s = check_opts(ctx, method, opts);
  if (!s && nle__distributed(ctx)) s = distributed_refusals(ctx, method, in, opts, &rows_all);
  if (!s) s = check_input(ctx, in, opts, rows_all, &n);
  if (s) return s;
  const nle__spectral_method *m = nle__spectral_row(method);
  if (m->needs_points && !in->Y)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: the method needs the points themselves, not only a kNN graph or affinities",
                     m->name);
  if (m->needs_distances && in->affinities)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: the method needs distances: give the points or a kNN graph, not affinities",
                     m->name);
  nle_spectral_result *r = nle__calloc(ctx, 1, sizeof *r, "the spectral result");
  if (!r) return NLE_ERR_NOMEM;
  double t_start = nle_time_seconds(), t0 = t_start;
  r->resolved = *opts;
  nle_spectral_opts *o = &r->resolved;
  r->n = n;
  r->knn_used = NLE_KNN_AUTO;
  r->residual_variance = NAN;
  r->reconstruction_error = NAN;
  /* LLL joins components through Z: the reduced pencil is what must be
   * connected (the dissertation's K_W = 1 runs, sec. 4.8.1) */
  bool lll = m->by_landmarks && o->landmarks > 0;
  bool chosen = o->components != NLE_COMPONENTS_AUTO; /* the caller's choice: logged, not warned */
  if (o->components == NLE_COMPONENTS_AUTO) o->components = lll ? NLE_COMPONENTS_ALLOW : m->components;
  if (o->affinity == NLE_AFF_ENTROPIC) {
    if (o->perplexity == NLE_AUTO) o->perplexity = nle_graph_perplexity_for_k(o->k); /* the graph stage's k = 3 K */
    if (o->radius > 0)
      s = nle__fail(ctx, NLE_ERR_ARG, "%s: entropic affinities need k nearest neighbours ({@neighbors}), not a {@radius}", m->name);
    else if (!(o->perplexity > 1 && o->perplexity < o->k))
      s = nle__fail(ctx, NLE_ERR_ARG, "%s: {@perplexity=%g} needs more than it in neighbours: {@neighbors=%d} (3 x "
                    "perplexity is usual)", m->name, o->perplexity, o->k);
  }
  nle_csr *graph = NULL, *W = NULL;
  nle_matf *projected = NULL;
  if (o->keep_model && !in->Y)
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: a model for new points needs the points (new points are placed by their distances to "
                  "them), not only a kNN graph or affinities", m->name);
  if (!s && o->keep_model && !m->map)
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: the method has no map of new points to keep a model for", m->name);
  if (!s && o->keep_model && !(r->model = nle__calloc(ctx, 1, sizeof *r->model, "the spectral model")))
    s = NLE_ERR_NOMEM;
  if (!s && o->keep_model && !in->knn && in->affinities)
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: a model for new points needs the kNN graph (new points are placed by their distances), "
                  "not affinities", m->name);
  if (!s && in->Y && !in->knn && !in->affinities) s = nle__spectral_neighbours(ctx, in->Y, o, r, r->model, &graph, &projected);
  else if (!s && in->Y && lll && !basis) s = landmark_space(ctx, in->Y, o, r, &projected);
  else o->pca_dims = o->pca_candidates = 0;
  if (o->knn_method == NLE_KNN_AUTO) o->knn_method = r->knn_used;
  r->knn_seconds = nle_time_seconds() - t0;
  t0 = nle_time_seconds();
  const nle_csr *knn = in->knn ? in->knn : graph;
  if (!s && knn) s = nle__resolve_sigma(ctx, knn, o);
  if (!s && knn) s = nle__spectral_weights(ctx, knn, o, &W, r->model ? &r->model->beta : NULL);
  const nle_csr *weights = in->affinities ? in->affinities : W;
  /* distributed: not counted (0); a disconnected graph then has a repeated
   * eigenvalue 1 of the normalised affinity (docs/mpi_spectral.md) */
  int64_t comps = s || nle__distributed(ctx) ? 0 : nle__csr_components(ctx, weights);
  if (comps < 0) s = NLE_ERR_NOMEM;
  if (!s && nle__distributed(ctx))
    nle__log(ctx, 1, "%s: the graph's connected components are not counted on %d ranks", m->name, nle__ranks(ctx));
  r->components = (int)comps;
  nle_csr *joined = NULL;
  int krow = knn ? nle__max_row(knn) : 0;
  if (!s && comps > 1) s = components_policy(ctx, m, in, knn, o, chosen, r, &joined, &W, &comps);
  if (joined) knn = joined, weights = W;
  r->graph_seconds = nle_time_seconds() - t0;
  t0 = nle_time_seconds();
  nle__spectral_job job = {o, in->Y, knn, weights, (int)comps, r->joined_edges, krow, r->model, projected, basis};
  if (!s) s = m->embed(ctx, &job, r);
  r->eigen_seconds = nle_time_seconds() - t0;
  if (!s && r->model) r->model->pca_Y = projected, projected = NULL;
  if (!s && r->model) s = nle__spectral_model_finish(ctx, r->model, method, o, in->Y, knn, weights, r);
  /* a joined graph: new points meet each training point within its k-th
   * neighbour (the graph before the join), as its own search found them;
   * the joining edges stay the training points' own */
  const nle_csr *unjoined = in->knn ? in->knn : graph;
  for (int64_t i = 0; !s && r->model && joined && !(o->radius > 0) && i < unjoined->rows; i++)
    if (unjoined->rowptr[i + 1] > unjoined->rowptr[i])
      r->model->reach[i] = (float)nle_csr_value(unjoined, unjoined->rowptr[i + 1] - 1);
  nle_matf_free(&projected);
  nle_csr_free(&graph);
  nle_csr_free(&joined);
  nle_csr_free(&W);
  r->total_seconds = nle_time_seconds() - t_start;
  if (s) {
    nle_spectral_result_free(&r);
    return s;
  }
  *out = r;
  return NLE_OK;
}
