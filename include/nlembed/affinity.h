/* nlembed/affinity.h — entropic affinities, kernels on a graph,
 * symmetrisation, repulsive weights. Part of the public header: include
 * <nlembed.h>, whose opening comment states the conventions every
 * declaration here follows. */
#ifndef NLEMBED_AFFINITY_H
#define NLEMBED_AFFINITY_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Affinities                                                                 */
/* ========================================================================== */

/* Root finders for the entropic-affinity equation H_n(log beta) = log K.
 * The derivative-based ones run inside the bisection safeguard of
 * dissertation algorithm 1; the others are baselines. */
#define NLE_ROOT_METHOD_MAP(XX)                                                                     \
  XX(NLE_ROOT_HALLEY, 0, "halley") /* third order, hyperbola through F, F', F'' (eq. 2.14) */       \
  XX(NLE_ROOT_EULER, 1, "euler") /* third order, parabola through F, F', F'' (eq. 2.13) */          \
  XX(NLE_ROOT_NEWTON, 2, "newton") /* second order */                                               \
  XX(NLE_ROOT_BISECTION, 3, "bisection") /* bisection in log beta inside the bounds */              \
  XX(NLE_ROOT_BRENT, 4, "brent") /* Brent's method in log beta inside the bounds */                 \
  XX(NLE_ROOT_RIDDER, 5, "ridder") /* Ridder's method in log beta inside the bounds */              \
  /* bisection on beta from beta = 1 with doubling, as in the SNE/t-SNE reference codes (a          \
     baseline) */                                                                                   \
  XX(NLE_ROOT_CLASSIC, 6, "classic")                                                                \
  /* Householder of order 8 (eq. 2.15 generalised): the Taylor series of F in beta to order 8,      \
     from the cumulants of the distances under p (no extra exponentials), inverted by Newton on     \
     the polynomial */                                                                              \
  XX(NLE_ROOT_HOUSEHOLDER, 7, "householder")
typedef enum {
  NLE_ROOT_METHOD_MAP(NLE__ENUMERATOR)
  NLE_ROOT_COUNT /* how many there are (range checks) */
} nle_root_method;

/* The order in which points are solved; each point starts from the solution
 * of the point before it in the order (dissertation sec. 2.3.4). */
#define NLE_EA_ORDER_MAP(XX)                                                                        \
  /* BFS over a minimum spanning tree (Kruskal) of the kappa-NN graph; start from the parent */     \
  XX(NLE_ORDER_MST, 0, "mst")                                                                       \
  XX(NLE_ORDER_MSP, 1, "msp") /* minimum spanning path (algorithm 2) */                             \
  /* D_kappa: by increasing distance to the kappa-th neighbour */                                   \
  XX(NLE_ORDER_DENSITY, 2, "density")                                                               \
  XX(NLE_ORDER_SEQUENTIAL, 3, "sequential") /* index order */                                       \
  XX(NLE_ORDER_RANDOM, 4, "random") /* a seeded random permutation */                               \
  /* no warm start: every point from the middle of its bounds (parallel) */                         \
  XX(NLE_ORDER_BOUNDS, 5, "bounds")
typedef enum {
  NLE_EA_ORDER_MAP(NLE__ENUMERATOR)
  NLE_ORDER_COUNT /* how many there are (range checks) */
} nle_ea_order;

typedef struct {
  double perplexity;    /* K, 1 <= K < number of neighbours (default 30) */
  nle_root_method root; /* default NLE_ROOT_HOUSEHOLDER */
  nle_ea_order order;   /* default NLE_ORDER_MST */
  int kappa;            /* neighbours in the order's graph (default 10; at most k) */
  double tol;           /* |H_n - log K| at convergence (default 1e-10) */
  int maxit;            /* derivative steps before a forced bisection (20) */
  int max_evals;        /* evaluations per point before giving up (default 200) */
  bool rescale;         /* true (default): start from the parent's log beta plus
                           log(s_parent / s_child), s the sum of the first 2K
                           distances minus the nearest (exact when one distance
                           profile is a scaled copy of the other, as beta
                           scales with 1/distance^2); 0: the parent's log beta
                           itself, as in the dissertation */
} nle_ea_opts;

NLE_API void nle_ea_opts_init(nle_ea_opts *o);

typedef struct {
  int64_t n;
  double *beta;            /* N precisions, beta_n = 1 / (2 sigma_n^2) */
  nle_csr *P;              /* conditional p_{m|n} on the kNN graph, rows sum to 1 */
  double mean_iterations;  /* root-finding steps per point (evaluation at the
                              starting point not counted) */
  double mean_evaluations; /* entropy evaluations per point */
  int64_t bisection_points;/* points that needed at least one bisection step */
  int64_t degenerate_points;/* points whose neighbours are all equidistant:
                              uniform affinities, beta = 0 */
  double max_error;        /* max_n |H_n - log K| over non-degenerate points */
  int64_t steps_histogram[8]; /* points that took 0, 1, ..., 6 and >= 7 steps */
} nle_ea_result;

/* Entropic affinities (dissertation ch. 2) on a kNN graph with sorted squared
 * distances (nle_knn_exact): for every point the beta_n whose conditional
 * distribution over its neighbours has perplexity K, found in log beta inside
 * the bounds of theorem 2.2.2 (eqs. 2.9-2.11). Exact duplicates are handled
 * (their distances are zero); a point all of whose neighbours are at the same
 * distance cannot reach K < k and gets uniform affinities (counted in
 * degenerate_points); if every point is so (constant data) it is an error.
 * Returns NLE_WARN_NOT_CONVERGED if some point missed tol within max_evals. */
NLE_API nle_status nle_entropic_affinities(nle_ctx *ctx, const nle_csr *knn, const nle_ea_opts *opts,
                                           nle_ea_result **out);
NLE_API void nle_ea_result_free(nle_ea_result **r);

/* Entropy bounds of theorem 2.2.2 for one point's sorted squared distances
 * d[0..n-1] (n neighbours) and perplexity K, as [log beta_L, log beta_U];
 * p1 from eq. 2.11 (nle_ea_p1). Returns 0, or -1 when all distances are equal. */
NLE_API int nle_ea_bounds(const double *d, int n, double K, double p1, double *log_lo, double *log_hi);
/* The p1 of eq. 2.11 for n neighbours and perplexity K, by Newton's method. */
NLE_API double nle_ea_p1(int n, double K);
/* The entropy of exp(-beta d) / Z over the distances d[0..n-1], in nats. */
NLE_API double nle_ea_entropy(const double *d, int n, double beta);

/* W = (P + P^T) / 2, and divided by N when normalize (then it sums to 1). */
NLE_API nle_status nle_affinity_symmetrize(nle_ctx *ctx, const nle_csr *P, bool normalize, nle_csr **W);

#define NLE_AFFINITY_KIND_MAP(XX)                                                                   \
  XX(NLE_AFF_GAUSSIAN, 0, "gaussian") /* exp(-d^2 / (2 sigma^2)), one sigma */                      \
  XX(NLE_AFF_BINARY, 1, "binary") /* 1 on the kNN graph */                                          \
  XX(NLE_AFF_INVERSE, 2, "inverse") /* 1 / |y_n - y_m| (kernel eigenmaps seed) */                   \
  /* exp(-d^2 / (sigma_n sigma_m)), sigma_n = distance to the k-th neighbour (Zelnik-Manor and      \
     Perona) */                                                                                     \
  XX(NLE_AFF_SELF_TUNING, 3, "self-tuning")                                                         \
  /* p_{m|n} at a perplexity (dissertation ch. 2): nle_entropic_affinities; the spectral methods'   \
     graphs take it, nle_affinity_graph does not */                                                 \
  XX(NLE_AFF_ENTROPIC, 4, "entropic")
typedef enum {
  NLE_AFFINITY_KIND_MAP(NLE__ENUMERATOR)
  NLE_AFF_COUNT /* how many there are (range checks) */
} nle_affinity_kind;

typedef struct {
  nle_affinity_kind kind; /* default NLE_AFF_GAUSSIAN */
  double sigma;           /* Gaussian width (> 0; default 1) */
  int tuning_k;           /* self-tuning neighbour (default 7, <= graph k) */
} nle_affinity_opts;

NLE_API void nle_affinity_opts_init(nle_affinity_opts *o);

/* A symmetric affinity matrix on the kNN graph (the union of both directions),
 * values as the kind says; the diagonal is zero. */
NLE_API nle_status nle_affinity_graph(nle_ctx *ctx, const nle_csr *knn, const nle_affinity_opts *opts, nle_csr **W);
/* The dense Gaussian affinity matrix over all pairs (N x N, under the memory
 * cap), diagonal zero. */
NLE_API nle_status nle_affinity_gaussian_dense(nle_ctx *ctx, const nle_matf *Y, double sigma, nle_matd **W);

/* Repulsive weights W- of the elastic embedding (EE paper eq. 6; notes 001). */
#define NLE_WNEG_MAP(XX)                                                                            \
  XX(NLE_WNEG_UNIFORM, 0, "uniform") /* w-_nm = 1 for n != m */                                     \
  XX(NLE_WNEG_SQDIST, 1, "sqdist") /* w-_nm = |y_n - y_m|^2 */                                      \
  XX(NLE_WNEG_KNN, 2, "knn") /* |y_n - y_m|^2 on the kNN graph only (sparse) */
typedef enum {
  NLE_WNEG_MAP(NLE__ENUMERATOR)
  NLE_WNEG_COUNT /* how many there are (range checks) */
} nle_wneg_kind;

/* Names of the affinity stage's options and back (-1 if unknown): kinds
 * "gaussian", "binary", "inverse", "self-tuning"; root finders "halley",
 * "euler", "newton", "bisection", "brent", "ridder", "classic",
 * "householder"; orders "mst", "msp", "density", "sequential", "random",
 * "bounds"; W- "uniform", "sqdist", "knn". An unknown value is "unknown". */
NLE_API const char *nle_affinity_kind_name(nle_affinity_kind kind);
NLE_API int nle_affinity_kind_parse(const char *name);
NLE_API const char *nle_root_method_name(nle_root_method root);
NLE_API int nle_root_method_parse(const char *name);
NLE_API const char *nle_ea_order_name(nle_ea_order order);
NLE_API int nle_ea_order_parse(const char *name);
NLE_API const char *nle_wneg_name(nle_wneg_kind kind);
NLE_API int nle_wneg_parse(const char *name);

/* Dense N x N W- (uniform or squared distances), under the memory cap. */
NLE_API nle_status nle_repulsive_dense(nle_ctx *ctx, const nle_matf *Y, nle_wneg_kind kind, nle_matd **W);
/* Sparse W- on the symmetrised kNN graph (NLE_WNEG_KNN). */
NLE_API nle_status nle_repulsive_knn(nle_ctx *ctx, const nle_csr *knn, nle_csr **W);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_AFFINITY_H */
