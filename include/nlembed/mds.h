/* nlembed/mds.h — the distance and kernel methods: classical, metric
 * (SMACOF), Sammon, non-metric and landmark MDS (lecture slides 002), kernel
 * PCA, LDA and kernel LDA (dissertation ch. 4, eqs. 4.13-4.18), and their
 * out-of-sample maps. Part of the public header: include <nlembed.h>, whose
 * opening comment states the conventions every declaration here follows. */
#ifndef NLEMBED_MDS_H
#define NLEMBED_MDS_H

#include "core.h"
#include "neighbors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* MDS                                                                        */
/* ========================================================================== */

#define NLE_MDS_METHOD_MAP(XX)                                                                      \
  /* slides "Classic Metric MDS": B = -1/2 J M J, M the squared dissimilarities; the top            \
     eigenvectors scaled by sqrt(lambda) */                                                         \
  XX(NLE_MDS_CLASSICAL, 0, "classical")                                                             \
  /* slides "More General Metric MDS": raw stress sum_{i<j} w_ij (delta_ij - d_ij(X))^2 by SMACOF   \
     (de Leeuw 1977; Guttman transform) */                                                          \
  XX(NLE_MDS_METRIC, 1, "metric")                                                                   \
  XX(NLE_MDS_SAMMON, 2, "sammon") /* slides' Sammon stress: SMACOF with w_ij = 1/delta_ij */        \
  /* slides "Non-Metric MDS": Kruskal stress-1, PAV monotone regression alternating with a Guttman  \
     step */                                                                                        \
  XX(NLE_MDS_NONMETRIC, 3, "nonmetric")                                                             \
  /* de Silva and Tenenbaum (2004): classical MDS of L landmarks, the rest placed by                \
     triangulation */                                                                               \
  XX(NLE_MDS_LANDMARK, 4, "landmark")
typedef enum {
  NLE_MDS_METHOD_MAP(NLE__ENUMERATOR)
  NLE_MDS_COUNT /* how many there are (range checks) */
} nle_mds_method;

/* Non-metric MDS: what equal dissimilarities may become (Kruskal 1964). */
#define NLE_MDS_TIES_MAP(XX)                                                                        \
  XX(NLE_TIES_PRIMARY, 0, "primary") /* their disparities are free to differ (default) */           \
  XX(NLE_TIES_SECONDARY, 1, "secondary") /* their disparities are equal */
typedef enum {
  NLE_MDS_TIES_MAP(NLE__ENUMERATOR)
  NLE_TIES_COUNT /* how many there are (range checks) */
} nle_mds_ties;

typedef struct {
  int dim;           /* d >= 1, d < N (2) */
  int starts;        /* SMACOF family: runs, the first from the classical
                        solution, the others from random configurations of
                        the data's scale (seeded); the least stress kept (4,
                        scikit-learn's n_init) */
  int max_iter;      /* SMACOF iterations per run (300) */
  double tol;        /* stop when the stress falls by less than tol of its
                        value in one iteration (1e-6) */
  nle_mds_ties ties; /* non-metric (NLE_TIES_PRIMARY) */
  int landmarks;     /* landmark MDS: L, d < L <= N; NLE_AUTO (default):
                        min(N, 1000) */
  const nle_matd *init; /* N x dim start instead (then one run); NULL */
  bool keep_model;   /* classical and landmark MDS: result->model, the
                        triangulation map for new points (needs points) */
} nle_mds_opts;

NLE_API void nle_mds_opts_init(nle_mds_opts *o);

/* Points Y (N x D; Euclidean dissimilarities) or a dissimilarity matrix
 * (N x N: symmetric, zero diagonal, finite, non-negative); with optional
 * N x N non-negative weights (metric MDS only). */
typedef struct {
  const nle_matf *Y;
  const nle_matd *dissimilarities;
  const nle_matd *weights;
} nle_mds_input;

struct nle_projection_model;

typedef struct {
  nle_matd *X;            /* N x dim, centred (landmark MDS: the landmarks'
                             centroid at 0) */
  double *eigenvalues;    /* classical/landmark: B's top dim, descending (the
                             SMACOF family: those of its classical start) */
  int n_eigenvalues;
  /* classical/landmark: B's spectrum beyond the embedding. Dense solves
   * (N <= 2000, and every landmark solve) see all of it; Lanczos only its
   * two ends (spectrum_complete false: negative_count counts the dim
   * smallest that are negative, a lower bound). */
  int negative_count;
  double negative_mass, positive_mass, trace; /* sum |lambda < 0|, sum lambda > 0, tr B */
  bool spectrum_complete;
  /* the fit of X to the dissimilarities delta (non-metric: to its
   * disparities), sums over i < j; NaN where undefined */
  double raw_stress;        /* sum w (delta - d)^2 (the method's objective;
                               Sammon: unnormalised) */
  double stress1;           /* Kruskal: sqrt(sum (delta - d)^2 / sum d^2) */
  double normalized_stress; /* slides: sqrt(sum (delta - d)^2 / sum delta^2) */
  double sammon_stress;     /* sum (delta - d)^2 / delta / sum delta */
  double start_stress;      /* the kept run's objective at its start */
  int iterations, best_start, starts_run;
  int starts_abandoned;     /* later starts stopped once even their present
                               rate of decrease, kept up for every remaining
                               iteration, would not beat the best start */
  double *history;          /* the kept run's objective at its start and
                               after each iteration (iterations + 1) */
  nle_mds_opts resolved;
  size_t n;
  double seconds;
  struct nle_projection_model *model; /* keep_model (owned) */
} nle_mds_result;

NLE_API nle_status nle_mds(nle_ctx *ctx, nle_mds_method method, const nle_mds_input *input, const nle_mds_opts *opts,
                           nle_mds_result **result);
NLE_API void nle_mds_result_free(nle_mds_result **result);

/* The stress measures of a configuration X against dissimilarities
 * (nle_mds_result's fields, all pairs i < j). */
NLE_API nle_status nle_mds_stress(nle_ctx *ctx, const nle_matd *dissimilarities, const nle_matd *X, double *stress1,
                                  double *normalized_stress, double *sammon_stress);

/* Pool-adjacent-violators: the non-decreasing z minimising
 * sum w_i (z_i - y_i)^2 (w NULL: all 1), z may alias y. */
NLE_API void nle_isotonic(size_t n, const double *y, const double *w, double *z);

/* Names: "classical", "metric", "sammon", "nonmetric", "landmark"; ties
 * "primary", "secondary"; and back (-1 if unknown). */
NLE_API const char *nle_mds_method_name(nle_mds_method method);
NLE_API int nle_mds_method_parse(const char *name);
NLE_API const char *nle_mds_ties_name(nle_mds_ties ties);
NLE_API int nle_mds_ties_parse(const char *name);

/* ========================================================================== */
/* Kernels, kernel PCA, LDA and kernel LDA                                    */
/* ========================================================================== */

#define NLE_PDKERNEL_MAP(XX)                                                                        \
  XX(NLE_PDK_LINEAR, 0, "linear") /* x^T y (kernel PCA = PCA) */                                    \
  XX(NLE_PDK_GAUSSIAN, 1, "gaussian") /* exp(-gamma |x - y|^2) */                                   \
  XX(NLE_PDK_POLYNOMIAL, 2, "polynomial") /* (gamma x^T y + coef0)^degree */                        \
  XX(NLE_PDK_PRECOMPUTED, 3, "precomputed") /* the N x N kernel matrix is the input */
typedef enum {
  NLE_PDKERNEL_MAP(NLE__ENUMERATOR)
  NLE_PDK_COUNT /* how many there are (range checks) */
} nle_pdkernel_kind;

typedef struct {
  nle_pdkernel_kind kind;  /* NLE_PDK_GAUSSIAN */
  double gamma;          /* NLE_AUTO: Gaussian 1 / (2 s^2), s^2 the median
                            squared distance of 10,000 random pairs;
                            polynomial 1 / mean |x|^2 */
  double coef0;          /* polynomial (1) */
  int degree;            /* polynomial (3) */
  int neighbors;         /* Gaussian: > 0 keeps k(x, y) only for y among x's
                            k nearest (symmetrised by the average; the
                            diagonal 1): a sparse N x N kernel, the
                            dissertation's "for some kernels (e.g. Gaussian)
                            this matrix is sparse"; 0 (default): dense */
} nle_pdkernel;

NLE_API void nle_pdkernel_init(nle_pdkernel *k);
/* Kernel PCA by Locally Linear Landmarks (dissertation sec. 4.6.3, eq.
 * 4.18): the nev largest eigenpairs (ascending in vals) of the L x L
 * pencil (Z^T K-bar Z, Z^T Z), K-bar the centred kernel matrix of the
 * points Y (a dense kernel: Gaussian, polynomial or linear), Z their LLL
 * weights (N x L, nle_lll_weights); K-bar never formed (its rows in
 * blocks, the centring as a rank-2 update). X~ (L x nev) into *Xl and the
 * dual coefficients X = Z X~ into *X (either may be NULL); the points'
 * kernel principal components are X sqrt(lambda). O(N^2 D) time as kernel
 * PCA itself, O(L^2) memory instead of O(N^2). */
NLE_API nle_status nle_lll_kernel_pca(nle_ctx *ctx, const nle_csr *Z, const nle_matf *Y, const nle_pdkernel *kernel,
                                      int nev, double *vals, nle_matd **Xl, nle_matd **X);
NLE_API const char *nle_pdkernel_name(nle_pdkernel_kind kind);
NLE_API int nle_pdkernel_parse(const char *name);

/* Out-of-sample maps of the distance and kernel methods, all of the form
 * x(y) = A phi(y) with phi(y) over m reference points r_l:
 *   linear (LDA):           phi = y - mean (the reference points unused);
 *   triangulation (MDS):    phi_l = -1/2 (|y - r_l|^2 - mean_l)
 *                           (de Silva and Tenenbaum 2004, eq. 3);
 *   centred kernel (KPCA, kernel LDA): phi_l = k(y, r_l) - mean_l -
 *                           mean_y + grand, mean_l the column means of the
 *                           training K, mean_y = sum_l k(y, r_l) / m, grand
 *                           their mean (eq. 4.18 applied to y's row). */
typedef enum { NLE_MAP_LINEAR = 0, NLE_MAP_TRIANGULATION = 1, NLE_MAP_KERNEL = 2, NLE_MAP_COUNT } nle_map_kind;

typedef struct nle_projection_model {
  char method[16];   /* "classical", "landmark", "kpca", "lda", "klda" */
  nle_map_kind map;
  nle_pdkernel kernel; /* NLE_MAP_KERNEL (gamma resolved) */
  size_t m, D, dim;
  nle_matf *R;       /* m x D reference points (NULL for linear maps) */
  double *mean;      /* m (triangulation, kernel) or D (linear) */
  double grand;      /* kernel: the mean of K */
  double *A;         /* dim x m (dim x D for linear) */
  /* LDA's and kernel LDA's classifier (classes 0 for the other maps),
   * scikit-learn's rule: the score of class k for a point y is coef[k] .
   * phi(y) + intercept[k], phi(y) the centred point (y - mean) or kernel
   * row the map takes; the prediction is the class of the largest score */
  size_t classes;
  double *coef;          /* classes x D (linear) or x m (kernel) */
  double *intercept;     /* classes */
  int32_t *class_labels; /* classes: the label values, increasing */
} nle_projection_model;

NLE_API nle_status nle_projection_transform(nle_ctx *ctx, const nle_projection_model *model, const nle_matf *Y,
                                            nle_matd **X);
/* The classifier's scores of new points (M x classes; model->classes > 0),
 * and their probabilities (softmax of the scores, scikit-learn's
 * predict_proba; proba NULL to skip). */
NLE_API nle_status nle_projection_decision(nle_ctx *ctx, const nle_projection_model *model, const nle_matf *Y,
                                           nle_matd **scores, nle_matd **proba);
/* A precomputed kernel's map: Knew the M x m kernel values of new points
 * against the reference points. */
NLE_API nle_status nle_projection_transform_kernel(nle_ctx *ctx, const nle_projection_model *model,
                                                   const nle_matd *Knew, nle_matd **X);
/* The model file (nlembed's binary container, kind "projection-model",
 * written atomically). */
NLE_API nle_status nle_projection_model_save(nle_ctx *ctx, const nle_projection_model *model, const char *path);
NLE_API nle_status nle_projection_model_load(nle_ctx *ctx, const char *path, nle_projection_model **model);
NLE_API void nle_projection_model_free(nle_projection_model **model);

typedef struct {
  int dim;          /* components (2) */
  nle_pdkernel kernel;
  bool keep_model;  /* result->model (not for precomputed kernels given
                       without points) */
} nle_kpca_opts;

NLE_API void nle_kpca_opts_init(nle_kpca_opts *o);

typedef struct {
  nle_matd *X;          /* N x dim: sqrt(lambda) times the eigenvectors of
                           the centred kernel, never formed (SPEC G06-8) */
  double *eigenvalues;  /* dim, descending, of the centred K */
  int n_eigenvalues;
  nle_kpca_opts resolved;
  bool sparse;          /* the kernel was the sparse kNN one */
  size_t n, nnz;        /* the kernel's stored entries */
  double kernel_seconds, eigen_seconds, seconds;
  nle_projection_model *model;
} nle_kpca_result;

/* Kernel PCA (dissertation sec. 4.6.4, eq. 4.18) of points Y or, for a
 * precomputed kernel, of the N x N kernel matrix K (symmetric). */
NLE_API nle_status nle_kpca(nle_ctx *ctx, const nle_matf *Y, const nle_matd *K, const nle_kpca_opts *opts,
                            nle_kpca_result **result);
NLE_API void nle_kpca_result_free(nle_kpca_result **result);

typedef struct {
  int dim;          /* NLE_AUTO (default): every useful direction, C - 1
                       (LDA: at most D), as scikit-learn's n_components=None;
                       fewer come out when the class means span fewer */
  double ridge;     /* LDA: NLE_AUTO (default) scikit-learn's svd solver,
                       in the range of the data (constant or collinear
                       features are fine); a number: added to the diagonal
                       of the total scatter T, solved by Cholesky (a
                       singular T with ridge 0 is an error naming its
                       rank). Kernel LDA: added to K^2's diagonal, NLE_AUTO
                       (default) 1e-3 of its mean diagonal (K^2 is always
                       singular) */
  double tol;       /* LDA's svd solver: singular values of the scaled
                       within-class deviations at or below tol are their
                       null space, and between-class ones at or below tol
                       times the largest (scikit-learn's tol; default 1e-4) */
  nle_pdkernel kernel;/* kernel LDA */
  bool keep_model;
} nle_lda_opts;

NLE_API void nle_lda_opts_init(nle_lda_opts *o);

typedef struct {
  nle_matd *X;          /* N x dim: (y - mean) M, M scaled so that the
                           within-class covariance S_w / (N - C) of X is I
                           (LDA: scikit-learn's transform, up to signs) */
  double *eigenvalues;  /* dim, descending: of S_b v = lambda S_t v (in
                           [0, 1]; lambda_w = lambda / (1 - lambda)) */
  double *explained_variance_ratio; /* dim: lambda_w over the sum of every
                           direction's (scikit-learn's) */
  int n_eigenvalues, classes; /* classes: the distinct labels */
  int rank;             /* LDA: of the scaled within-class scatter (svd
                           solver) or of T (with a ridge); -1 kernel LDA */
  nle_lda_opts resolved;
  double seconds;
  size_t n;
  nle_projection_model *model;
} nle_lda_result;

/* LDA (dissertation eqs. 4.14-4.17): the directions maximising between-
 * class over within-class scatter. labels[N]: any integers, the classes
 * being the distinct values (nle_labels_encode), at least 2 of them; the
 * model (keep_model) keeps the classifier with the label values. */
NLE_API nle_status nle_lda(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const nle_lda_opts *opts,
                           nle_lda_result **result);
/* Kernel LDA (Baudat and Anouar 2000; eqs. 4.16-4.17 with K for Y^T Y):
 * H p = lambda (T + ridge I) p, H = K Q K, T = K K, K centred; O(N^3). */
NLE_API nle_status nle_klda(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const nle_lda_opts *opts,
                            nle_lda_result **result);
NLE_API void nle_lda_result_free(nle_lda_result **result);

/* The scatter matrices of eq. 4.14 (D x D each, row-major, any NULL):
 * between S_b, within S_w, total S_t = S_b + S_w; labels any integers,
 * the classes their distinct values (nle_labels_encode). */
NLE_API nle_status nle_scatter(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, double *Sb, double *Sw,
                               double *St);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_MDS_H */
