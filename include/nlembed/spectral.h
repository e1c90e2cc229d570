/* nlembed/spectral.h — graph Laplacians and their eigensolvers, PCA. Part of
 * the public header: include <nlembed.h>, whose opening comment states the
 * conventions every declaration here follows. */
#ifndef NLEMBED_SPECTRAL_H
#define NLEMBED_SPECTRAL_H

#include "affinity.h"
#include "core.h"
#include "graph.h"
#include "neighbors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Spectral: graph Laplacians                                                 */
/* ========================================================================== */

/* The nev smallest eigenvalues (ascending) of the Laplacian of the symmetric
 * W (D - W, or I - D^-1/2 W D^-1/2 when normalised), and when vecs is not
 * NULL their eigenvectors as the columns of an N x nev matrix: ARPACK's
 * Lanczos on (L + eps I)^-1 through a CHOLMOD factor. The zero eigenvalue
 * comes once per connected component. */
NLE_API nle_status nle_laplacian_smallest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals,
                                          nle_matd **vecs);
/* The nev largest eigenvalues (ascending), by Lanczos on L. */
NLE_API nle_status nle_laplacian_largest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals);
/* Laplacian eigenmaps (Belkin and Niyogi; slides 002): the d eigenvectors
 * after the constant one of L v = lambda D v, i.e. D^-1/2 times those of the
 * normalised Laplacian, as an N x d embedding; also the number of connected
 * components of W (more than 1 leaves the embedding degenerate). */
NLE_API nle_status nle_laplacian_eigenmap(nle_ctx *ctx, const nle_csr *W, int d, nle_matd **X, int *components);

/* ========================================================================== */
/* Spectral: the methods' front door                                          */
/* ========================================================================== */

/* The spectral embeddings (lecture slides 002; dissertation ch. 4), each an
 * eigenproblem on a neighbourhood graph of the data. */
typedef enum {
  NLE_SPECTRAL_LE = 0,    /* Laplacian eigenmaps (slides "Laplacian eigenmaps";
                             Belkin and Niyogi 2003): the d eigenvectors after
                             the trivial one of the graph Laplacian */
  NLE_SPECTRAL_LLE = 1,   /* locally linear embedding (slides "Locally Linear
                             Embeddings"; Roweis and Saul 2000): the bottom
                             eigenvectors of (I - W)^T (I - W), W the
                             reconstruction weights */
  NLE_SPECTRAL_ISOMAP = 2, /* Isomap (slides "ISOMAP"; Tenenbaum, de Silva and
                              Langford 2000): classical MDS of the graph's
                              geodesic distances (Dijkstra) */
  NLE_SPECTRAL_DIFFMAP = 3, /* diffusion maps (Coifman and Lafon 2006; the
                               slides name them): P's eigenvectors scaled by
                               mu^t, distances = diffusion distances */
  NLE_SPECTRAL_LTSA = 4,    /* local tangent space alignment (Zhang and Zha
                               2004; named in the slides) */
  NLE_SPECTRAL_HLLE = 5,    /* Hessian LLE (Donoho and Grimes 2003; named in
                               the slides) */
  NLE_SPECTRAL_MLLE = 6     /* modified LLE (Zhang and Wang 2007; named in the
                               slides and the dissertation's sec. 4.2) */
} nle_spectral_method;

/* Which Laplacian, and the normalisation of the embedding it gives (SPEC
 * G06-6: the seeds use all three). */
#define NLE_LAPLACIAN_MAP(XX)                                                                       \
  /* L v = lambda D v, V^T D V = I (dissertation eq. 4.9, Brand eq. 1; scikit-learn's               \
     SpectralEmbedding): the default */                                                             \
  XX(NLE_LAPLACIAN_RANDOM_WALK, 0, "random-walk")                                                   \
  XX(NLE_LAPLACIAN_SYMMETRIC, 1, "symmetric") /* (I - D^-1/2 W D^-1/2) u = lambda u, U^T U = I */   \
  /* (D - W) f = lambda f, F^T F = I (the slides) */                                                \
  XX(NLE_LAPLACIAN_UNNORMALISED, 2, "unnormalised")
typedef enum {
  NLE_LAPLACIAN_MAP(NLE__ENUMERATOR)
  NLE_LAPLACIAN_COUNT /* how many there are (range checks) */
} nle_laplacian_kind;

#define NLE_EIGEN_SOLVER_MAP(XX)                                                                    \
  XX(NLE_EIGEN_DENSE, 0, "dense") /* LAPACK on the dense N x N matrix (under the cap) */            \
  XX(NLE_EIGEN_SPARSE, 1, "sparse") /* ARPACK's Lanczos on the sparse matrix */                     \
  /* Lanczos on the inverse through a CHOLMOD factor: the small end becomes well separated */       \
  XX(NLE_EIGEN_SHIFT_INVERT, 2, "shift-invert")                                                    \
  /* thick-restarted block Krylov (block_eigen.c): the operator applied to blocks of vectors */      \
  XX(NLE_EIGEN_BLOCK, 3, "block")
typedef enum {
  NLE_EIGEN_AUTO = NLE_AUTO, /* the method's choice (LE: dense up to 400
                                points, else shift-invert when the factor
                                stays sparse, else Lanczos) */
  NLE_EIGEN_SOLVER_MAP(NLE__ENUMERATOR)
  NLE_EIGEN_COUNT /* how many there are (range checks) */
} nle_eigen_solver;

/* Where Locally Linear Landmarks puts its landmarks (dissertation sec. 4.4,
 * SPEC G07-5); every landmark is a data point. */
#define NLE_LANDMARK_METHOD_MAP(XX)                                                                 \
  /* uniformly at random (the default; "our experiments confirm" it works best) */                  \
  XX(NLE_LANDMARKS_RANDOM, 0, "random")                                                             \
  /* L + M at random, then one point of each of the M closest pairs dropped (M = L / 10: the        \
     dissertation leaves M open) */                                                                 \
  XX(NLE_LANDMARKS_THINNED, 1, "thinned")                                                           \
  /* k-means with L centres (20 Lloyd iterations), each snapped to its nearest data point */        \
  XX(NLE_LANDMARKS_KMEANS, 2, "kmeans")                                                             \
  /* farthest-point (de Silva and Tenenbaum 2004): each next landmark the point farthest from       \
     those chosen, from a random first */                                                           \
  XX(NLE_LANDMARKS_MINMAX, 3, "minmax")
typedef enum {
  NLE_LANDMARK_METHOD_MAP(NLE__ENUMERATOR)
  NLE_LANDMARKS_COUNT /* how many there are (range checks) */
} nle_landmark_method;

/* How Locally Linear Landmarks holds its reduced L x L pencil. */
#define NLE_LLL_PENCIL_MAP(XX)                                                                      \
  XX(NLE_PENCIL_DENSE, 0, "dense")   /* L x L arrays, LAPACK or Lanczos on dense factors */          \
  XX(NLE_PENCIL_SPARSE, 1, "sparse") /* CSR, Lanczos on B~'s sparse Cholesky factor */
typedef enum {
  NLE_PENCIL_AUTO = NLE_AUTO, /* dense up to 400 landmarks (and while it fits
                                 the memory cap), sparse above */
  NLE_LLL_PENCIL_MAP(NLE__ENUMERATOR)
  NLE_PENCIL_COUNT
} nle_lll_pencil;

typedef struct {
  int dim;                       /* embedding dimension d >= 1 (2) */
  int k;                         /* neighbours per point, not counting the
                                    point itself (10) */
  double radius;                 /* > 0: epsilon-ball neighbourhoods instead,
                                    every point within this distance (the
                                    slides' "within a fixed radius"; brute
                                    force, O(N^2 D)); 0 (default): k nearest */
  nle_knn_method knn_method;     /* NLE_AUTO (default) */
  nle_knn_approx_opts knn_approx;/* approx: its options (k is set from k) */
  int pca_dims;                  /* search the neighbours among this many
                                    principal components, then re-rank the
                                    candidates by their distances in Y;
                                    NLE_AUTO (default): 50 when N > 5,000 and
                                    D > 100, else 0 (search in Y) */
  int pca_candidates;            /* candidates per point from the components
                                    (NLE_AUTO: max(k, 70), the graph stage's) */
  nle_symmetrize_rule symmetrize;/* NLE_SYMMETRIZE_AVERAGE */
  nle_affinity_kind affinity;    /* weights on the graph (NLE_AFF_BINARY: 1 per
                                    listed neighbour, the default) */
  double sigma;                  /* NLE_AFF_GAUSSIAN: width in input units
                                    (NLE_AUTO: the median distance to the
                                    k-th neighbour) */
  int tuning_k;                  /* NLE_AFF_SELF_TUNING: its neighbour (7) */
  double perplexity;             /* NLE_AFF_ENTROPIC: each point's p_{m|n}
                                    over its k neighbours at this perplexity
                                    (dissertation ch. 2), in (1, k);
                                    NLE_AUTO (default): k / 3 */
  nle_laplacian_kind laplacian;  /* LE: NLE_LAPLACIAN_RANDOM_WALK */
  nle_components_policy components; /* NLE_AUTO (default): the method's own */
  nle_eigen_solver solver;       /* NLE_AUTO */
  double tol;                    /* the eigensolver's relative tolerance: a
                                    Ritz pair's residual over its value (1e-12;
                                    0: machine precision) */
  double reg;                    /* LLE: the local Gram matrix's regulariser,
                                    relative to its trace (1e-3; used when
                                    k > D, where the weights are not unique) */
  int landmarks;                 /* Isomap: 0 (default) all points; L > 0:
                                    landmark Isomap on L landmarks. LE (and
                                    spectral clustering): L > 0 solves by
                                    Locally Linear Landmarks (dissertation
                                    ch. 4, algorithm 3): X = X~ Z from the
                                    L x L pencil (Z L Z^T, Z D Z^T) */
  int kz;                        /* LLL: landmarks reconstructing each point
                                    (K_Z); NLE_AUTO (default): d + 1 held within [5, 10],
                                    capped at L and D + 1 (SPEC G07-1) */
  nle_landmark_method landmark_method; /* LLL: NLE_LANDMARKS_RANDOM */
  bool landmark_graph;           /* LLL baseline "LE (Z)" (dissertation sec.
                                    4.8): the eigenproblem of the graph among
                                    the landmarks only (its weights as W's),
                                    then X = X~ Z; false (default): LLL */
  nle_lll_pencil pencil;         /* LLL: the reduced pencil dense or sparse
                                    (NLE_PENCIL_AUTO, default: by L and the
                                    memory cap) */
  double alpha;                  /* diffusion maps: the density normalisation
                                    in [0, 1] (1, default: Laplace-Beltrami) */
  int diffusion_time;            /* diffusion maps: t >= 0 (1) */
  bool keep_model;               /* true: result->model for out-of-sample
                                    maps (nle_spectral_transform) and
                                    nle_spectral_model_save; needs the
                                    points Y (false) */
} nle_spectral_opts;

NLE_API void nle_spectral_opts_init(nle_spectral_opts *o);

/* One of: points Y (N x D; the kNN graph is built), a kNN graph (as
 * nle_knn_exact makes: squared distances, no self), or a symmetric
 * non-negative affinity matrix W (N x N; used as it is). A graph may come
 * with its points: the graph is used, the points serve what needs
 * coordinates (LLL's landmarks and Z; any affinity then works with LLL,
 * SPEC G07-6). */
typedef struct {
  const nle_matf *Y;
  const nle_csr *knn;
  const nle_csr *affinities;
} nle_spectral_input;

/* NLE_OK when W is an affinity matrix the spectral methods take: square,
 * every entry finite and >= 0, symmetric; else the first bad entry by its
 * 0-based row and column, as the readers count (a client that read W from
 * a file puts the file's name in front). */
NLE_API nle_status nle_spectral_check_affinities(nle_ctx *ctx, const nle_csr *W);

typedef struct {
  nle_matd *X;            /* N x dim embedding */
  double *eigenvalues;    /* n_eigenvalues of the method's eigenproblem, in
                             the order of X's columns (LE, the LLE family:
                             ascending,
                             the trivial 0 first; Isomap: descending;
                             diffusion maps: P's, descending, the
                             trivial 1 first) */
  int n_eigenvalues;
  int components;         /* connected components of the graph (before
                             any join) */
  int64_t joined_edges;   /* edges the join policy added: components - 1
                             when it joined, else 0 */
  nle_knn_method knn_used;/* the search that ran (NLE_AUTO: none) */
  double pca_seconds;     /* the search's PCA (0 when none) */
  nle_eigen_solver solver_used;
  double residual_variance;   /* Isomap: 1 - R^2 between geodesic and
                                 embedding distances (NaN otherwise) */
  nle_spectral_opts resolved; /* the options as they ran, no NLE_AUTO left
                                 (a Gaussian's automatic sigma: the width
                                 used) */
  size_t n;
  double knn_seconds, graph_seconds, eigen_seconds, total_seconds;
  /* LLL (landmarks > 0): the landmarks, their embedding X~ (L x dim; a
   * landmark's row of X), the reconstruction error ||Y - Y~ Z||_F / ||Y -
   * mean||_F (NaN without points), the seconds for Z and for the reduced
   * pencil, and whether its scale matrix was singular (solved in its
   * range) */
  int32_t *landmark_index;
  nle_matd *landmark_X;
  size_t n_landmarks;
  double reconstruction_error, z_seconds, reduce_seconds;
  bool reduced_singular;
  struct nle_spectral_model *model; /* keep_model: the out-of-sample model
                                       (owned here; NULL otherwise) */
} nle_spectral_result;

/* The method's embedding of the input: the neighbourhood graph, its
 * weights, the eigenproblem, and the embedding scaled as the method's page
 * in docs/ says. A graph with more components than the policy allows is an
 * NLE_ERR_VALUE naming the count and the option. */
NLE_API nle_status nle_spectral_embed(nle_ctx *ctx, nle_spectral_method method, const nle_spectral_input *input,
                                      const nle_spectral_opts *opts, nle_spectral_result **result);
NLE_API void nle_spectral_result_free(nle_spectral_result **result);
/* ========================================================================== */
/* Spectral: out-of-sample maps                                               */
/* ========================================================================== */

/* What a new point y needs to be placed in a spectral embedding without
 * solving the eigenproblem again (Bengio et al. 2004, "Out-of-sample
 * extensions for LLE, Isomap, MDS, Eigenmaps, and spectral clustering"; the
 * Nystrom formula). y's edges to the training points are built as the
 * training graph's were: its k nearest training points (searched as
 * training searched, among the same principal components when it did), and
 * the training points that would list y among their own k nearest (y
 * closer than their k-th neighbour and, with the component search, among
 * their candidates there), weighted and symmetrised by the same
 * rule; with an epsilon ball, every training point within the radius. A
 * training point given again is not its own neighbour (distance 0), so its
 * edges are its training edges and every map below returns its training
 * embedding.
 *   LE (random walk):  x_t(y) = sum_n w(y,n) x_t(n) / ((1 - lambda_t) d_y)
 *      symmetric:      x_t(y) = sum_n w(y,n) x_t(n) / sqrt(d_n) /
 *                               ((1 - lambda_t) sqrt(d_y))
 *      unnormalised:   x_t(y) = sum_n w(y,n) x_t(n) / (d_y - lambda_t)
 *   diffusion maps:    x_t(y) = sum_n p_a(y,n) x_t(n) / mu_t, with
 *                      p_a(y,n) proportional to w(y,n) / q_n^alpha
 *   Isomap:            x_t(y) = -1/(2 lambda_t) sum_l x_t(l) (g(y,l)^2 -
 *                      mean_l), g the geodesic from y through its edges
 *                      (Dijkstra), l over the landmarks (all points for
 *                      Isomap): landmark MDS's triangulation (de Silva and
 *                      Tenenbaum 2004), which classical MDS's eigenvectors
 *                      satisfy at every training point
 *   LLE, MLLE, HLLE, LTSA: x(y) = sum_j w_j x(n_j), w the regularised
 *                      reconstruction weights of y from its k nearest
 *                      training points (LLE's; slides "Locally Linear
 *                      Embeddings"); a training point's own x. */
typedef struct nle_spectral_model {
  nle_spectral_method method;
  nle_spectral_opts opts;  /* as trained (resolved) */
  size_t n, D, dim;
  nle_matf *Y;             /* training data (NULL when loaded without it) */
  nle_matd *X;             /* the N x dim training embedding */
  double *eigenvalues;     /* as the result's */
  int n_eigenvalues;
  float *reach;            /* N: squared distance within which a training
                              point lists a new point (its k-th neighbour's,
                              or the radius squared) */
  double *scale;           /* self-tuning: each point's scale (else NULL) */
  double *beta, *log_z;    /* entropic: each point's precision and the log
                              of its normaliser over its k neighbours */
  double *degrees;         /* LE, diffusion maps: W's degrees (else NULL) */
  nle_csr *geodesic_graph; /* Isomap: the undirected graph, edge lengths */
  int32_t *landmarks;      /* Isomap: the n_landmarks points of the MDS;
                              LE by LLL: its landmarks */
  nle_matd *landmark_X;    /* LE by LLL: X~ (n_landmarks x dim); a new
                              point x0 = X~^T z0, z0 its weights from its
                              opts.kz nearest landmarks (eq. 4.8) */
  double *landmark_mean;   /* ... and the mean squared geodesic of each */
  size_t n_landmarks;
  /* the neighbour search among principal components, when training ran
   * there: its mean and components, and Y projected (derived) */
  double *pca_mean, *pca_components;
  float *candidate_reach;  /* N: the squared distance there to each point's
                              last candidate (a new point is a training
                              point's candidate within it) */
  nle_matf *pca_Y;
  /* spectral clustering's model (nle_spectral_cluster with keep_model): the
   * k-means centres of its clusters (the means of their rows of the
   * embedding, unit rows when normalize_rows) */
  double *centres;         /* clusters x dim, or NULL */
  int clusters;
  bool normalize_rows;
  uint64_t data_hash;      /* of Y, to check a re-attached copy */
  char source[1024];       /* where Y came from (the CLI's input) */
} nle_spectral_model;

/* The M x dim embedding of new points (M x D, D the training data's). */
NLE_API nle_status nle_spectral_transform(nle_ctx *ctx, const nle_spectral_model *model, const nle_matf *Ynew,
                                          nle_matd **Xnew);
/* The model's map in words: "nystrom", "reconstruction weights" (the LLE
 * family), "landmark weights" (LLL), or either with ", nearest centre" (a
 * clustering's). */
NLE_API const char *nle_spectral_model_map(const nle_spectral_model *model);
/* Spectral clustering's out-of-sample labels: the cluster of the nearest
 * centre to each row of X (M x dim, from nle_spectral_transform with a
 * clustering's model; rows made unit first when the clustering did). */
NLE_API nle_status nle_spectral_assign(nle_ctx *ctx, const nle_spectral_model *model, const nle_matd *X,
                                       int32_t *labels);
/* The model file (nlembed's binary container, kind "spectral-model",
 * written atomically): the training data copied in, or (copy_data false)
 * referenced by model->source and checked by a hash when re-attached. */
NLE_API nle_status nle_spectral_model_save(nle_ctx *ctx, const nle_spectral_model *model, const char *path,
                                           bool copy_data);
NLE_API nle_status nle_spectral_model_load(nle_ctx *ctx, const char *path, nle_spectral_model **model);
NLE_API nle_status nle_spectral_model_attach_data(nle_ctx *ctx, nle_spectral_model *model, const nle_matf *Y);
NLE_API void nle_spectral_model_free(nle_spectral_model **model);

/* ========================================================================== */
/* Spectral: Locally Linear Landmarks (dissertation ch. 4)                    */
/* ========================================================================== */

/* L distinct landmarks of the N x D points by the method (seeded by the
 * context): idx[L], ascending. */
NLE_API nle_status nle_landmarks_select(nle_ctx *ctx, const nle_matf *Y, size_t L, nle_landmark_method method,
                                        int32_t *idx);
/* The reconstruction weights Z (dissertation eqs. 4.6-4.8) of every row of
 * Q from its kz nearest of the landmark points Yl (L x D), as an M x L CSR
 * (double values, kz per row, columns ascending): the local Gram matrix
 * with reg x its trace added to the diagonal (SPEC G07-2; reg 0 is allowed
 * when the Gram matrix is definite), each row summing to 1; a point that
 * coincides with a landmark gets that landmark alone. Invariant to
 * rotating, translating and scaling the data. *error (may be NULL): ||Q -
 * Z Yl||_F / ||Q - mean||_F. */
NLE_API nle_status nle_lll_weights(nle_ctx *ctx, const nle_matf *Yl, const nle_matf *Q, int kz, double reg,
                                   nle_csr **Z, double *error);
/* Locally Linear Landmarks on the generic pencil (dissertation eq. 4.1,
 * SPEC G07-6): min (or max) tr(X A X^T) s.t. X B X^T = I over X = X~ Z,
 * i.e. the L x L pencil A~ = Z^T A Z, B~ = Z^T B Z here (Z as
 * nle_lll_weights gives it, N x L), never forming an N x N matrix. A and
 * B: sparse symmetric N x N plus a diagonal each (either part may be
 * NULL; B's absent entirely means I). nev eigenpairs at the smallest
 * (largest when `largest`) end, values ascending into vals, X~ (L x nev)
 * into *Xl and X = Z X~ (N x nev) into *X (either may be NULL). */
NLE_API nle_status nle_lll_solve(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, const double *A_diag,
                                 const nle_csr *B, const double *B_diag, int nev, bool largest, double *vals,
                                 nle_matd **Xl, nle_matd **X);

/* The same for dense A and B of low rank, given by a factor: A = F M_A F^T
 * with F (N x p) and M_A (p x p, symmetric; NULL: I), B = F M_B F^T (M_B
 * NULL: B = I, the N x N identity). Then A~ = G M_A G^T and B~ = G M_B
 * G^T with G = Z^T F (L x p): O(N K_Z p + L^2 p), never N x N
 * (dissertation sec. 4.6: PCA is F = Y centred, M_A = I, B = I (eq. 4.13,
 * the largest end); LDA is F = Y centred, M_A = S_b, M_B = S_t (eqs.
 * 4.16-4.17: B~ has rank <= D, singular for L > D, solved in its range);
 * linear kernel PCA is PCA). X holds the dual coefficients P: PCA's
 * projections are X sqrt(lambda) (eq. 4.13), LDA's map is M = X^T F. */
NLE_API nle_status nle_lll_factored(nle_ctx *ctx, const nle_csr *Z, const nle_matd *F, const nle_matd *MA,
                                    const nle_matd *MB, int nev, bool largest, double *vals, nle_matd **Xl,
                                    nle_matd **X);

/* Names: methods "le", "lle", "isomap", "diffmap", "ltsa", "hlle", "mlle"; Laplacians "random-walk", "symmetric",
 * "unnormalised"; policies "error", "allow" ("auto"); rules "average",
 * "union", "mutual"; solvers "dense", "sparse" ("auto"); and back (-1 if
 * unknown). */
NLE_API const char *nle_spectral_method_name(nle_spectral_method method);
NLE_API int nle_spectral_method_parse(const char *name);
NLE_API const char *nle_laplacian_name(nle_laplacian_kind kind);
NLE_API int nle_laplacian_parse(const char *name);
NLE_API const char *nle_components_name(nle_components_policy policy);
NLE_API int nle_components_parse(const char *name);
NLE_API const char *nle_symmetrize_name(nle_symmetrize_rule rule);
NLE_API int nle_symmetrize_parse(const char *name);
NLE_API const char *nle_eigen_solver_name(nle_eigen_solver solver);
NLE_API int nle_eigen_solver_parse(const char *name);
/* Landmark methods "random", "thinned", "kmeans", "minmax". */
NLE_API const char *nle_landmark_method_name(nle_landmark_method method);
NLE_API int nle_landmark_method_parse(const char *name);
NLE_API const char *nle_lll_pencil_name(nle_lll_pencil form);
NLE_API int nle_lll_pencil_parse(const char *name);

/* ========================================================================== */
/* Spectral: clustering                                                       */
/* ========================================================================== */

/* k-means (Lloyd) on the rows of X from k-means++ seeds (Arthur and
 * Vassilvitskii 2007) drawn from the context's seed, `restarts` times, the
 * run of least inertia kept (ties to the first): labels[N] in 0..k-1. */
NLE_API nle_status nle_kmeans(nle_ctx *ctx, const nle_matd *X, int k, int restarts, int max_iters, int32_t *labels,
                              double *inertia);

typedef struct {
  int clusters;               /* K >= 2 (2) */
  int dims;                   /* eigenvectors after the trivial one that
                                 k-means runs on; NLE_AUTO (default): K - 1,
                                 the subspace of the K bottom eigenvectors
                                 (scikit-learn's, and Ng et al.'s): on K
                                 separate clusters it is their indicators,
                                 error 0, where eq. 4.19's K after the
                                 trivial one adds a direction that varies
                                 inside clusters (4 separated blobs: error
                                 0.365); dims = K is eq. 4.19 literally */
  bool normalize_rows;        /* scale each point's row of eigenvectors to
                                 unit length first (Ng, Jordan and Weiss
                                 2002); false (default), as eq. 4.19 */
  int restarts;               /* k-means runs (10) */
  bool warm_start;            /* with LLL (spectral.landmarks > 0): the
                                 restarts run on the landmarks' rows X~, the
                                 best one's centres start one k-means on all
                                 N points (dissertation sec. 4.7.1: O(m L K^2
                                 + N K^2) for m restarts, not O(m N K^2));
                                 true (default); rows normalised alike */
  int max_iters;              /* Lloyd iterations per run (300) */
  nle_spectral_opts spectral; /* the graph, the Laplacian and the solver, as
                                 Laplacian eigenmaps takes them (dim is set
                                 from dims); components NLE_AUTO: allowed
                                 (components are clusters) */
} nle_cluster_opts;

NLE_API void nle_cluster_opts_init(nle_cluster_opts *o);

typedef struct {
  int32_t *labels;               /* N cluster labels in 0..K-1 */
  size_t n;
  int clusters;
  double inertia;                /* k-means' sum of squared distances */
  bool warm_started;             /* k-means started from the landmarks' */
  nle_spectral_result *embedding;/* the eigenvectors clustered and their
                                    eigenvalues (owned) */
  nle_cluster_opts resolved;
  double kmeans_seconds;
} nle_cluster_result;

/* Spectral clustering: Laplacian eigenmaps of the input (nle_spectral_embed)
 * into `dims` dimensions, then k-means. */
NLE_API nle_status nle_spectral_cluster(nle_ctx *ctx, const nle_spectral_input *input, const nle_cluster_opts *opts,
                                        nle_cluster_result **result);
NLE_API void nle_cluster_result_free(nle_cluster_result **result);

/* Model selection for spectral clustering over Gaussian widths sigma and
 * neighbour counts K_W (dissertation sec. 4.5 and fig. 4.14): the kNN
 * graph searched once at the largest K_W (each smaller one its rows'
 * first K_W) and, with LLL (spectral.landmarks > 0), the landmarks and Z
 * computed once and reused in every cell (Z depends on the data only;
 * B~ = Z D Z^T changes with sigma and K_W and is not reused, SPEC G07-4).
 * Each cell is scored against the labels: the majority-class error (as
 * fig. 4.14) and the matched (Hungarian) error. */
typedef struct {
  double sigma;
  int k;
  double error_majority, error_matched; /* NAN when the cell failed */
  double seconds;                       /* the cell's weights, eigenproblem
                                           and k-means */
  int components;
} nle_sweep_cell;

typedef struct {
  nle_sweep_cell *cells;  /* n_sigma x n_k, sigma-major */
  size_t n_cells, best;   /* best: least majority error (ties: the first) */
  int32_t *labels;        /* the best cell's clustering (N) */
  size_t n;
  double setup_seconds;   /* the graph, and LLL's landmarks and Z, once */
  double total_seconds;
} nle_sweep_result;

NLE_API nle_status nle_cluster_sweep(nle_ctx *ctx, const nle_matf *Y, const int32_t *truth,
                                     const nle_cluster_opts *opts, const double *sigmas, size_t n_sigma,
                                     const int *ks, size_t n_k, nle_sweep_result **result);
NLE_API void nle_sweep_result_free(nle_sweep_result **result);


/* ========================================================================== */
/* Spectral: PCA                                                              */
/* ========================================================================== */

#define NLE_PCA_SOLVER_MAP(XX)                                                                      \
  XX(NLE_PCA_EXACT, 0, "exact") /* eigendecomposition of the D x D covariance */                    \
  XX(NLE_PCA_RANDOMIZED, 1, "randomized") /* randomized range finder + small SVD (Halko et al.) */
typedef enum {
  NLE_PCA_AUTO = NLE_AUTO, /* exact unless randomized is much cheaper (large D) */
  NLE_PCA_SOLVER_MAP(NLE__ENUMERATOR)
  NLE_PCA_COUNT /* how many there are (range checks) */
} nle_pca_solver;

typedef struct {
  int n_components;      /* d, 1 <= d <= min(N, D) (default 2) */
  bool center;           /* true (default): subtract the mean */
  bool whiten;           /* false (default); true: unit variance per component */
  nle_pca_solver solver; /* default NLE_PCA_AUTO */
  int oversample;        /* randomized: extra directions (default 10) */
  int power_iters;       /* randomized: subspace iterations (default 6) */
} nle_pca_opts;

NLE_API void nle_pca_opts_init(nle_pca_opts *o);
/* Solver names "exact", "randomized" and "auto", and back (-1 if unknown). */
NLE_API const char *nle_pca_solver_name(nle_pca_solver solver);
NLE_API int nle_pca_solver_parse(const char *name);

typedef struct {
  int64_t n_samples;
  int32_t dim, n_components;
  double *mean;               /* dim (zeros when not centred) */
  double *components;         /* n_components x dim, orthonormal rows */
  double *explained_variance; /* n_components, eigenvalues of the covariance */
  double total_variance;      /* trace of the covariance */
  bool whiten;                 /* the opts' whiten, as fitted */
  nle_pca_solver solver_used;
} nle_pca_model;

/* Fits PCA to Y (the covariance uses N - 1). Component signs are fixed so the
 * largest-magnitude loading is positive. */
NLE_API nle_status nle_pca_fit(nle_ctx *ctx, const nle_matf *Y, const nle_pca_opts *opts,
                               nle_pca_model **model);
/* Projects points: X = (Y - mean) V^T, divided by sqrt(variance) if whitened. */
NLE_API nle_status nle_pca_transform(nle_ctx *ctx, const nle_pca_model *model,
                                     const nle_matf *Y, nle_matd **X);
NLE_API void nle_pca_model_free(nle_pca_model **model);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_SPECTRAL_H */
