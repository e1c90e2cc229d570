/* nlembed/graph.h — the neighbour-graph stage: one builder for the graph
 * every method stands on (the neighbour search, among principal components
 * and re-ranked in the data where that pays, then the weights and their
 * symmetrisation), with one rule between k and the perplexity and one set
 * of automatic thresholds. Part of the public header: include <nlembed.h>,
 * whose opening comment states the conventions every declaration here
 * follows. */
#ifndef NLEMBED_GRAPH_H
#define NLEMBED_GRAPH_H

#include "affinity.h"
#include "core.h"
#include "neighbors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a method does with a graph of several connected components. The
 * defaults (NLE_AUTO) warn (nle_ctx_warning) and go on: Isomap joins,
 * the others as their pages in docs/ say. */
#define NLE_COMPONENTS_MAP(XX)                                                                      \
  XX(NLE_COMPONENTS_ERROR, 0, "error") /* refuse, naming the count */                               \
  /* go on: zero eigenvalues come once per component, and the embedding separates them (Isomap      \
     cannot: infinite geodesics) */                                                                 \
  XX(NLE_COMPONENTS_ALLOW, 1, "allow")                                                              \
  /* add the shortest edges between components (a minimum spanning tree of them, exact: c - 1       \
     edges for c components; needs the points), then embed the joined graph */                      \
  XX(NLE_COMPONENTS_JOIN, 2, "join")
typedef enum {
  NLE_COMPONENTS_AUTO = NLE_AUTO, /* the method's own policy */
  NLE_COMPONENTS_MAP(NLE__ENUMERATOR)
  NLE_COMPONENTS_COUNT /* how many there are (range checks) */
} nle_components_policy;

/* How the directed kNN graph A becomes a symmetric W. */
#define NLE_SYMMETRIZE_MAP(XX)                                                                      \
  XX(NLE_SYMMETRIZE_AVERAGE, 0, "average") /* (A + A^T) / 2 (the default; scikit-learn's) */        \
  XX(NLE_SYMMETRIZE_UNION, 1, "union") /* max(A, A^T): an edge when either lists the other */       \
  XX(NLE_SYMMETRIZE_MUTUAL, 2, "mutual") /* min(A, A^T): only mutual neighbours */
typedef enum {
  NLE_SYMMETRIZE_MAP(NLE__ENUMERATOR)
  NLE_SYMMETRIZE_COUNT /* how many there are (range checks) */
} nle_symmetrize_rule;

/* Where the builder stops. */
typedef enum {
  NLE_GRAPH_NEIGHBOURS = 0, /* the directed kNN graph only (a family that
                               weighs it its own way: the embeddings) */
  NLE_GRAPH_WEIGHTS = 1     /* and its symmetric weights W (the default) */
} nle_graph_stop;

/* The one rule between the neighbours k and the perplexity K: k = 3 K
 * (scikit-learn's and the t-SNE codes'), whichever of the two is given.
 * nle_graph_k_for_perplexity: ceil(3 K), at most N - 1 when N (> 1) is
 * known, never past INT_MAX. nle_graph_perplexity_for_k: k / 3. */
NLE_API int nle_graph_k_for_perplexity(double perplexity, size_t n);
NLE_API double nle_graph_perplexity_for_k(int k);

typedef struct {
  nle_metric metric;          /* how points compare: Euclidean (default),
                                 cosine, correlation (dense rows) */
  int k;                      /* neighbours per point, not counting the point
                                 (10); NLE_AUTO: from the perplexity, by
                                 nle_graph_k_for_perplexity */
  double perplexity;          /* entropic weights; NLE_AUTO (default): k / 3
                                 (nle_graph_perplexity_for_k) */
  double radius;              /* > 0: every point within it instead of k
                                 nearest (exact, O(N^2 D)); 0 (default) */
  nle_knn_method method;      /* NLE_KNN_AUTO (default) */
  nle_knn_approx_opts approx; /* approx: its options (k set from k) */
  int pca_dims;               /* search among this many principal
                                 components; NLE_AUTO (default): 50 when
                                 N > 5,000 and D > 100, else 0 (in the data) */
  int pca_candidates;         /* candidates per point from the components,
                                 re-ranked by their distances in the data
                                 (>= k; 0: none, the k nearest among the
                                 components as they are there); NLE_AUTO
                                 (default): max(k, 70), measured
                                 (docs/graph.md) */
  nle_graph_stop stop;        /* NLE_GRAPH_WEIGHTS (default) */
  nle_affinity_kind weights;  /* NLE_AFF_BINARY (default) */
  double sigma;               /* Gaussian width; NLE_AUTO (default): the
                                 median distance to the k-th neighbour */
  int tuning_k;               /* self-tuning: its neighbour (7) */
  nle_symmetrize_rule symmetrize; /* NLE_SYMMETRIZE_AVERAGE */
  nle_components_policy components; /* NLE_COMPONENTS_ALLOW (default): count
                                 W's components and go on; ERROR refuses
                                 more than one; JOIN is the spectral
                                 methods' (their front door applies it) */
  bool keep_projection;       /* true: the result keeps the search's points
                                 on the components and the PCA (false) */
} nle_graph_opts;

NLE_API void nle_graph_opts_init(nle_graph_opts *o);

typedef struct {
  nle_graph_opts resolved;  /* the options as they ran: every NLE_AUTO
                               resolved (k, perplexity, method, pca_dims,
                               pca_candidates, sigma) */
  nle_csr *knn;             /* the directed graph: N x N, squared distances,
                               rows sorted, ties by index, no self */
  nle_csr *W;               /* symmetric weights (NLE_GRAPH_WEIGHTS), the
                               diagonal left out */
  double *beta;             /* entropic weights: each point's precision */
  int components;           /* W's connected components (0: not counted) */
  double pca_variance;      /* the fraction of the variance the search's
                               components keep (0: no PCA) */
  nle_matf *projected;      /* keep_projection: the points on the components */
  double *pca_mean;         /* keep_projection: the PCA's mean [D] and */
  double *pca_components;   /* components [pca_dims x D] */
  float *candidate_reach;   /* keep_projection: each point's farthest
                               candidate among the components (squared) */
  double pca_seconds, knn_seconds, weights_seconds;
  /* with a communicator (nle_ctx_set_comm): the bytes this rank sent in
   * each stage; knn, W, beta, projected and candidate_reach are then this
   * rank's rows (global column indices) */
  uint64_t pca_bytes, knn_bytes, weights_bytes;
} nle_graph_result;

/* The graph of the points Y (N x D dense rows) as opts say; NULL opts: the
 * defaults. The automatic choices are resolved in one place and reported
 * in (*result)->resolved. */
NLE_API nle_status nle_graph_build(nle_ctx *ctx, const nle_matf *Y, const nle_graph_opts *opts,
                                   nle_graph_result **result);
/* Weights on a given directed kNN graph (squared distances), as the builder
 * makes them: into result->W (and beta); opts->sigma NLE_AUTO resolved into
 * result->resolved. result is the caller's (zeroed or from the builder). */
NLE_API nle_status nle_graph_weigh(nle_ctx *ctx, const nle_csr *knn, const nle_graph_opts *opts,
                                   nle_graph_result *result);
NLE_API void nle_graph_result_free(nle_graph_result **result);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_GRAPH_H */
