/* graph_internal.h — the neighbour-graph stage's pieces that the families
 * call beside nle_graph_build (graph.c): the weights of single edges (the
 * new-point maps weigh theirs as training did), the epsilon-ball search,
 * degrees, the symmetry check (weights.c), and the search's projection of
 * new points onto its principal components (spectral/pca.c). */
#ifndef NLE_GRAPH_INTERNAL_H
#define NLE_GRAPH_INTERNAL_H

#include "../neighbors/neighbors_internal.h"

/* A family's options that carry graph-stage fields list them once, as
 * FIELDS(X, o, g) expanding to X(o, g, ours, the graph's) per field; from
 * that list come their defaults (the graph's own) and a run's
 * nle_graph_opts. */
#define NLE__OURS_FROM_GRAPH(o, g, ours, theirs) (o)->ours = (g)->theirs;
#define NLE__GRAPH_FROM_OURS(o, g, ours, theirs) (g)->theirs = (o)->ours;
#define NLE__GRAPH_DEFAULTS(FIELDS, o)                                                                            \
  do {                                                                                                            \
    nle_graph_opts graph_defaults;                                                                                \
    nle_graph_opts_init(&graph_defaults);                                                                         \
    FIELDS(NLE__OURS_FROM_GRAPH, o, &graph_defaults)                                                              \
  } while (0)
#define NLE__GRAPH_OPTS_OF(FIELDS, o, g)                                                                          \
  do {                                                                                                            \
    nle_graph_opts_init(g);                                                                                       \
    FIELDS(NLE__GRAPH_FROM_OURS, o, g)                                                                            \
  } while (0)

/* graph.c: every NLE_AUTO of o resolved for N points of D coordinates (the
 * one place of the stage's rules; idempotent, so a family may resolve early
 * for its fingerprint and build later). */
void nle__graph_resolve(nle_graph_opts *o, size_t n, size_t D);
/* o (resolved) against N points; the message starts with `who`. */
nle_status nle__graph_check(nle_ctx *ctx, const nle_graph_opts *o, size_t n, const char *who);
/* nle_graph_build into a result the caller holds, r->resolved the options
 * (resolved and checked here). */
nle_status nle__graph_build_into(nle_ctx *ctx, const nle_matf *Y, nle_graph_result *r);
/* Y on its first `dims` principal components (float) into *Z, *kept the
 * fraction of the variance they hold; the PCA's mean and components handed
 * over when those pointers are not NULL. */
nle_status nle__graph_pca_reduce(nle_ctx *ctx, const nle_matf *Y, int dims, nle_matf **Z, double *kept, double **mean,
                                 double **components);
/* weights.c: W from the directed kNN graph (squared distances): weights as o->weights
 * says (o->sigma resolved), then symmetrised by o->symmetrize; the diagonal
 * left out. Entropic weights: each point's beta into *beta when beta is not
 * NULL. */
nle_status nle__graph_weights(nle_ctx *ctx, const nle_csr *knn, const nle_graph_opts *o, nle_csr **W, double **beta);
/* A Gaussian's automatic width (*sigma NLE_AUTO): the median over points
 * of the distance to their k-th neighbour; other weights leave it. */
nle_status nle__graph_resolve_sigma(nle_ctx *ctx, const nle_csr *knn, nle_affinity_kind weights, double *sigma);
/* The weight of an edge of squared length d2 (sigma resolved; the
 * self-tuning scales of its two ends). */
double nle__graph_edge_weight(nle_affinity_kind weights, double sigma, double d2, double scale_i, double scale_j);
/* Each point's self-tuning scale: the distance to its tuning_k-th
 * neighbour (Zelnik-Manor and Perona 2004); 0 is an error naming it. */
nle_status nle__self_tuning_scales(nle_ctx *ctx, const nle_csr *knn, int tuning_k, double **scale);
/* W_ij from A_ij and A_ji (NAN when absent) by the rule; NAN: no edge. */
double nle__symmetrize_pair(nle_symmetrize_rule rule, double a, double at);
/* The epsilon-ball graph of the points (lecture slides 002: "within a
 * fixed radius"): every other point within `radius`, as a kNN graph holds
 * its neighbours (squared distances, sorted, ties by index); brute force,
 * O(N^2 D). A point with no neighbour in reach is an error naming it. */
nle_status nle__radius_graph(nle_ctx *ctx, const nle_matf *Y, double radius, nle_csr **G);
/* Whether A is symmetric (the same value at (i, j) and (j, i), to 1e-12
 * relative); names the first asymmetric pair otherwise. */
nle_status nle__csr_check_symmetric(nle_ctx *ctx, const nle_csr *A, const char *what);
/* Degrees of W, its diagonal left out (calloc'd, W->rows + 1 entries so
 * that a rank holding no rows still gets a pointer). _from: W's rows are
 * points first, first + 1, ... (a rank's rows with global columns). */
double *nle__degrees(nle_ctx *ctx, const nle_csr *W);
double *nle__degrees_from(nle_ctx *ctx, const nle_csr *W, size_t first);
/* Y's points on `dims` principal components (a saved model's mean[D] and
 * components[dims x D]), as floats: new points searched where training
 * searched. */
nle_status nle__pca_project(nle_ctx *ctx, int dims, size_t D, const double *mean, const double *components,
                            const nle_matf *Y, nle_matf **P);

#endif
