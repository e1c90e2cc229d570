/* graph.c — nle_graph_build, the neighbour-graph stage every family stands
 * on: its automatic choices (one rule between k and the perplexity, one set
 * of thresholds for the search among principal components, one rule for
 * the candidates re-ranked in the data), the search, then the weights
 * (weights.c). The families' front doors map their options onto
 * nle_graph_opts and report what it resolved. */
#include "graph_internal.h"
#include "../core/comm.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The search among principal components: from this many points and input
 * dimensions, on this many components (70,000 Fashion-MNIST images: 26 s
 * less kNN for a t-SNE recall@10 of 0.313 against 0.318 with the pixels'
 * neighbours; first 20,000, k = 14: 3.4 s exact in 784 dimensions, 1.0 s
 * among 50 components re-ranked). */
enum { PCA_MIN_N = 5000, PCA_MIN_D = 100, PCA_DIMS = 50 };
/* Candidates per point from the components: at least this many, and at
 * least k (docs/graph.md, bench/graph_candidates.c on the 70,000
 * Fashion-MNIST images: k = 10 from 70 candidates, recall 0.996 against
 * the exact neighbours; k = 90 from 90, 0.95, where more candidates cost
 * more re-ranking than t-SNE's map gains). */
enum { PCA_MIN_CANDIDATES = 70 };

int nle_graph_k_for_perplexity(double perplexity, size_t n) {
  double k = ceil(3.0 * perplexity);
  if (n > 1 && k > (double)(n - 1)) k = (double)(n - 1);
  return k < (double)INT_MAX ? (int)k : INT_MAX;
}

double nle_graph_perplexity_for_k(int k) { return k / 3.0; }

void nle_graph_opts_init(nle_graph_opts *o) {
  memset(o, 0, sizeof *o);
  o->metric = NLE_METRIC_EUCLIDEAN;
  o->k = 10;
  o->perplexity = NLE_AUTO;
  o->method = NLE_KNN_AUTO;
  nle_knn_approx_opts_init(&o->approx);
  o->pca_dims = NLE_AUTO;
  o->pca_candidates = NLE_AUTO;
  o->stop = NLE_GRAPH_WEIGHTS;
  o->weights = NLE_AFF_BINARY;
  o->sigma = NLE_AUTO;
  o->tuning_k = 7;
  o->symmetrize = NLE_SYMMETRIZE_AVERAGE;
  o->components = NLE_COMPONENTS_AUTO;
}

void nle_graph_result_free(nle_graph_result **r) {
  if (!r || !*r) return;
  nle_csr_free(&(*r)->knn);
  nle_csr_free(&(*r)->W);
  free((*r)->beta);
  nle_matf_free(&(*r)->projected);
  free((*r)->pca_mean);
  free((*r)->pca_components);
  free((*r)->candidate_reach);
  free(*r);
  *r = NULL;
}

void nle__graph_resolve(nle_graph_opts *o, size_t n, size_t D) {
  if (o->k == NLE_AUTO && o->perplexity != NLE_AUTO) o->k = nle_graph_k_for_perplexity(o->perplexity, n);
  if (o->perplexity == NLE_AUTO && o->weights == NLE_AFF_ENTROPIC && o->k != NLE_AUTO)
    o->perplexity = nle_graph_perplexity_for_k(o->k);
  if (o->radius > 0) { /* the epsilon ball: every neighbour in reach, exactly */
    o->pca_dims = o->pca_candidates = 0;
    return;
  }
  if (o->pca_dims == NLE_AUTO) o->pca_dims = n > PCA_MIN_N && D > PCA_MIN_D ? PCA_DIMS : 0;
  if (o->pca_dims >= (int)D) o->pca_dims = 0; /* nothing to reduce */
  if (o->pca_candidates == NLE_AUTO && o->pca_dims > 0)
    o->pca_candidates = o->k > PCA_MIN_CANDIDATES ? o->k : PCA_MIN_CANDIDATES;
  if (o->pca_dims == 0) o->pca_candidates = 0;
  if (n > 1 && o->pca_candidates > 0 && (size_t)o->pca_candidates >= n) o->pca_candidates = (int)n - 1;
}

nle_status nle__graph_check(nle_ctx *ctx, const nle_graph_opts *o, size_t n, const char *who) {
#define BAD(...) return nle__fail(ctx, NLE_ERR_ARG, __VA_ARGS__)
  if (o->metric != NLE_METRIC_EUCLIDEAN && o->metric != NLE_METRIC_COSINE && o->metric != NLE_METRIC_CORRELATION)
    BAD("%s: the graph's {@metric} compares points: euclidean, cosine or correlation", who);
  if (!(o->radius > 0) && (o->k < 1 || (size_t)o->k >= n))
    BAD("%s: {@neighbors=%d} neighbours of %zu points (at most N - 1)", who, o->k, n);
  if (o->pca_candidates > 0 && o->pca_candidates < o->k)
    BAD("%s: {@pca-candidates=%d} must be at least the %d neighbours ({@neighbors})", who, o->pca_candidates, o->k);
  if (o->weights == NLE_AFF_ENTROPIC && !(o->perplexity > 1 && o->perplexity < o->k))
    BAD("%s: {@perplexity=%g} needs more than it in neighbours: {@neighbors=%d}", who, o->perplexity, o->k);
  if (o->components == NLE_COMPONENTS_JOIN)
    BAD("%s: {@components=join} is the spectral methods' policy (their front door joins)", who);
  return NLE_OK;
#undef BAD
}

nle_status nle__graph_pca_reduce(nle_ctx *ctx, const nle_matf *Y, int dims, nle_matf **Z, double *kept, double **mean,
                                 double **components) {
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = dims;
  nle_pca_model *pm = NULL;
  nle_matd *Zd = NULL;
  nle_status s = nle_pca_fit(ctx, Y, &po, &pm);
  if (!s) s = nle_pca_transform(ctx, pm, Y, &Zd);
  if (!s) s = nle_matd_to_matf(ctx, Zd, Z);
  if (!s) {
    double sum = 0;
    for (int i = 0; i < pm->n_components; i++) sum += pm->explained_variance[i];
    *kept = pm->total_variance > 0 ? sum / pm->total_variance : 0.0;
  }
  nle_matd_free(&Zd);
  if (!s && mean) *mean = pm->mean, pm->mean = NULL;
  if (!s && components) *components = pm->components, pm->components = NULL;
  nle_pca_model_free(&pm);
  return s;
}

/* The directed graph: the epsilon ball, the k nearest in Y, or candidates
 * among the components re-ranked by their distances in Y. */
static nle_status search(nle_ctx *ctx, const nle_matf *Y, nle_graph_result *r) {
  nle_graph_opts *o = &r->resolved;
  double t0 = nle_time_seconds();
  if (o->radius > 0) {
    o->method = NLE_KNN_EXACT;
    if (nle__distributed(ctx))
      return nle__fail(ctx, NLE_ERR_ARG, "graph: the epsilon ball ({@radius}) is not distributed yet: {@neighbors} "
                       "on %d ranks", nle__ranks(ctx));
    return nle__radius_graph(ctx, Y, o->radius, &r->knn);
  }
  nle_knn_method used = NLE_KNN_AUTO;
  if (!o->pca_dims) {
    nle_status s = nle_knn_graph(ctx, Y, o->k, o->method, &o->approx, &r->knn, &used);
    if (!s) o->method = used;
    return s;
  }
  nle_matf *Z = NULL;
  nle_csr *cand = NULL;
  bool keep = o->keep_projection; /* new points are searched for on the same components */
  uint64_t sent = nle__comm_bytes_sent(ctx);
  nle_status s = nle__graph_pca_reduce(ctx, Y, o->pca_dims, &Z, &r->pca_variance, keep ? &r->pca_mean : NULL,
                                       keep ? &r->pca_components : NULL);
  r->pca_seconds = nle_time_seconds() - t0;
  r->pca_bytes = nle__comm_bytes_sent(ctx) - sent;
  int rerank = o->pca_candidates > 0; /* 0: the neighbours among the components, as they are there */
  if (!s) s = nle_knn_graph(ctx, Z, rerank ? o->pca_candidates : o->k, o->method, &o->approx, &cand, &used);
  if (!s) o->method = used;
  if (!s && o->keep_projection && !(r->candidate_reach = nle__malloc(ctx, Y->rows * sizeof(float), "the candidates")))
    s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && r->candidate_reach && i < Y->rows; i++) /* sorted rows: the last is the farthest */
    r->candidate_reach[i] = cand->rowptr[i + 1] > cand->rowptr[i]
                                ? (float)nle_csr_value(cand, cand->rowptr[i + 1] - 1) : 0.0f;
  double t_rank = nle_time_seconds();
  if (!s && rerank) s = nle_knn_rerank(ctx, Y, cand, o->k, &r->knn);
  if (!s && rerank)
    nle__log(ctx, 2, "kNN: search among the components %.2f s, re-ranking in the data %.2f s",
             t_rank - t0 - r->pca_seconds, nle_time_seconds() - t_rank);
  if (!s && !rerank) r->knn = cand, cand = NULL;
  nle_csr_free(&cand);
  if (!s && o->keep_projection) r->projected = Z, Z = NULL;
  nle_matf_free(&Z);
  return s;
}

nle_status nle_graph_weigh(nle_ctx *ctx, const nle_csr *knn, const nle_graph_opts *opts, nle_graph_result *r) {
  double t0 = nle_time_seconds();
  uint64_t sent = nle__comm_bytes_sent(ctx);
  if (&r->resolved != opts) r->resolved = *opts;
  nle_graph_opts *o = &r->resolved;
  nle_status s = nle__graph_resolve_sigma(ctx, knn, o->weights, &o->sigma);
  if (!s) s = nle__graph_weights(ctx, knn, o, &r->W, &r->beta);
  if (!s && o->components != NLE_COMPONENTS_AUTO && nle__distributed(ctx))
    s = nle__fail(ctx, NLE_ERR_ARG, "graph: counting components ({@components}) is not distributed yet: "
                  "{@components=auto} on %d ranks", nle__ranks(ctx));
  if (!s && o->components != NLE_COMPONENTS_AUTO) {
    int64_t comps = nle__csr_components(ctx, r->W);
    if (comps < 0) s = NLE_ERR_NOMEM;
    r->components = (int)comps;
    if (!s && comps > 1 && o->components == NLE_COMPONENTS_ERROR)
      s = nle__fail(ctx, NLE_ERR_VALUE, "graph: %lld connected components; {@components=error} refuses them (a "
                    "larger {@neighbors} joins them)", (long long)comps);
  }
  r->weights_seconds = nle_time_seconds() - t0;
  r->weights_bytes = nle__comm_bytes_sent(ctx) - sent;
  return s;
}

nle_status nle__graph_build_into(nle_ctx *ctx, const nle_matf *Y, nle_graph_result *r) {
  nle_graph_opts *o = &r->resolved;
  nle__rows all; /* with a communicator, Y is this rank's rows of N (comm.h) */
  nle_status s = nle__comm_rows(ctx, Y->rows, "graph", &all);
  if (s) return s;
  nle__graph_resolve(o, all.n, Y->cols);
  s = nle__graph_check(ctx, o, all.n, "graph");
  nle_matf *rows = NULL;
  if (!s && o->metric != NLE_METRIC_EUCLIDEAN) s = nle_metric_rows(ctx, Y, o->metric, &rows);
  s = nle__comm_agree(ctx, s);
  double t0 = nle_time_seconds();
  uint64_t sent = nle__comm_bytes_sent(ctx);
  if (!s) s = search(ctx, rows ? rows : Y, r);
  nle_matf_free(&rows);
  r->knn_seconds = nle_time_seconds() - t0 - r->pca_seconds;
  r->knn_bytes = nle__comm_bytes_sent(ctx) - sent - r->pca_bytes;
  if (!s && o->stop == NLE_GRAPH_WEIGHTS) s = nle_graph_weigh(ctx, r->knn, o, r);
  return s;
}

nle_status nle_graph_build(nle_ctx *ctx, const nle_matf *Y, const nle_graph_opts *opts, nle_graph_result **out) {
  if (!Y || !out) return nle__fail(ctx, NLE_ERR_ARG, "graph: NULL argument");
  *out = NULL;
  nle_graph_result *r = nle__calloc(ctx, 1, sizeof *r, "the graph");
  if (!r) return NLE_ERR_NOMEM;
  if (opts) r->resolved = *opts;
  else nle_graph_opts_init(&r->resolved);
  nle_status s = nle__graph_build_into(ctx, Y, r);
  if (s) {
    nle_graph_result_free(&r);
    return s;
  }
  *out = r;
  return NLE_OK;
}
