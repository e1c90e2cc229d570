/* nlembed/kem.h — kernel eigenmaps (M. Brand, "Continuous nonlinear
 * dimensionality reduction by kernel eigenmaps", IJCAI 2003; seed 004): the
 * graph embedding of sec. 1 restricted to linear transforms of a basis Z
 * (the "transformational embedding", eq. 8), its four row-space variants
 * (sec. 2.1), and the kernel basis of sec. 3 (eqs. 14-17) that turns it into
 * a continuous map G(x) of the ambient space with an approximate inverse
 * (eqs. 18-19). Locality Preserving Projections (He and Niyogi 2002) are the
 * case Z = X. Part of the public header: include <nlembed.h>, whose opening
 * comment states the conventions every declaration here follows. */
#ifndef NLEMBED_KEM_H
#define NLEMBED_KEM_H

#include "spectral.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the row space of Z is modified (Brand sec. 2.1). */
#define NLE_KEM_VARIANT_MAP(XX)                                                                     \
  XX(NLE_KEM_RAW, 0, "raw") /* eq. 8 on Z: Y = [v_2..v_{d+1}]^T Z */                                \
  /* eq. 8 on [Z; 1^T]. On the kernel basis the ones row is the sum of the homogeneous rows, so     \
     the pencil is singular (SPEC G07-16): solved in B's range and reported */                      \
  XX(NLE_KEM_AFFINE, 1, "affine")                                                                   \
  /* the raw v's, columns of Z divided by v_1^T z_i (K = diag(v_1^T Z)^-1); no second solve; the    \
     map is eq. 18 */                                                                               \
  XX(NLE_KEM_REWEIGHTED, 2, "reweighted")                                                           \
  XX(NLE_KEM_STOCHASTIC, 3, "stochastic") /* eq. 12: a second solve on Z K */
typedef enum {
  NLE_KEM_AUTO = NLE_AUTO,
  NLE_KEM_VARIANT_MAP(NLE__ENUMERATOR)
  NLE_KEM_COUNT /* how many there are (range checks) */
} nle_kem_variant;

typedef struct {
  int dim;                   /* d >= 1 (2) */
  int k;                     /* neighbours of the graph W, 1 <= k < N (12;
                                Brand sec. 4) */
  nle_affinity_kind weights; /* W on the kNN graph: NLE_AFF_INVERSE (default,
                                Brand sec. 3, f = 1/|x_i - x_j|),
                                NLE_AFF_GAUSSIAN (the heat kernel
                                exp(-|x_i - x_j|^2 / t) of LPP) or
                                NLE_AFF_BINARY */
  double heat_t;             /* NLE_AFF_GAUSSIAN: t > 0; NLE_AUTO (default):
                                2 s^2, s the median distance to the k-th
                                neighbour */
  nle_symmetrize_rule symmetrize; /* W_ij = W_ji from the directed kNN
                                weights (NLE_SYMMETRIZE_AVERAGE); W is then
                                scaled so that its largest off-diagonal
                                entry is 1 (sec. 3) */
  bool plus_identity;        /* W + I, with D = diag((W + I) 1) (sec. 4,
                                SPEC G07-22): D - W unchanged, only the
                                scale side grows */
  int kernels;               /* K Gaussian kernels at data points (placed by
                                `placement`, seeded from the context);
                                NLE_AUTO (default): min(1024, N) (measured:
                                docs/kem.md) */
  nle_landmark_method placement; /* where the kernels sit, every centre a
                                data point (spectral.h's landmark methods):
                                NLE_LANDMARKS_RANDOM (default) */
  double sigma;              /* their common width (Sigma_k = sigma^2 I);
                                NLE_AUTO (default): 0.15 times the median over
                                the centres of the distance to the nearest
                                other centre (measured: docs/kem.md) */
  int local_dims;            /* q: K_k projects x - mu_k on the q leading
                                principal directions of the points nearest
                                mu_k (sec. 6, SPEC G07-19); q = D: K_k = I;
                                0: the homogeneous coordinate only;
                                NLE_AUTO (default): 0 (the inverse map
                                G+(y) needs q > 0: G is flat at each centre
                                without the local coordinates) */
  int local_points;          /* points of each local PCA; NLE_AUTO (default):
                                max(k, 3 q) (at most N) */
  double truncate;           /* posteriors below this are set to 0 and the
                                rest renormalised (Z sparse, sec. 6); 0: none
                                (1e-8) */
  nle_kem_variant variant;   /* NLE_AUTO (default): reweighted (eq. 18, Brand's
                                recommendation), raw with lpp */
  bool lpp;                  /* Z = X (no kernels): LPP, with variant affine
                                Brand's "affine upgrade" (sec. 4) */
  int inverse_steps;         /* Gauss-Newton steps refining G+(y) toward
                                G(x) = y after the mixture of local affine
                                inverses (5; 0: the mixture alone) */
  double inverse_width;      /* the inverse's kernels p'_k have the width
                                inverse_width * sigma carried through the
                                local map (0.25; SPEC G07-18 reads 1) */
  bool keep_model;           /* result->model for nle_kem_transform and
                                nle_kem_inverse (true) */
} nle_kem_opts;

NLE_API void nle_kem_opts_init(nle_kem_opts *o);

/* The continuous map: G(x) = G z^(x) / den(x), z^ = z or [z; 1] (affine),
 * den = v_1^T z(x) (reweighted, stochastic) or 1; and its inverse, a
 * mixture of local affine inverses (SPEC G07-18's reading of eq. 19): each
 * kernel k's forward map linearised at its centre, y ~ b_k + A_k (x - mu_k)
 * with b_k = G(mu_k) and A_k = dG/dx there, inverted as
 * G+(y) = sum_k p'_k(y) / sum_j p'_j(y) [mu_k + A_k^+ (y - b_k)] with
 * p'_k(y) = N(y | b_k, (w sigma)^2 A_k A_k^T + eps I), refined by
 * inverse_steps Gauss-Newton steps on |y - G(x)|^2. */
typedef struct nle_kem_model {
  nle_kem_variant variant;
  bool lpp;
  size_t D, dim;
  size_t kernels;  /* K (lpp: 0) */
  size_t q;        /* local coordinates per kernel (lpp: D) */
  size_t m;        /* rows of z: K (q + 1), or D with lpp */
  double sigma, truncate;
  int inverse_steps;
  double inverse_width;
  double *mean;    /* D: the training mean (centring for the distances) */
  double *centres; /* K x D */
  double *proj;    /* K x q x D local projections K_k, or NULL (q = D: I) */
  double *G;       /* dim x (m + affine): the map's rows */
  double *v1;      /* m: the denominator's v_1 (reweighted, stochastic),
                      else NULL */
  size_t inv_kernels; /* the inverse's components (K; lpp: 1) */
  double *inv_mu;     /* inv_kernels x D: mu_k */
  double *inv_b;      /* inv_kernels x dim: b_k = G(mu_k) */
  double *inv_pinv;   /* inv_kernels x D x dim: A_k^+ */
  double *inv_prec;   /* inv_kernels x dim x dim: Sigma'_k^-1 */
  double *inv_logdet; /* inv_kernels: log det Sigma'_k */
} nle_kem_model;

typedef struct {
  nle_matd *X;            /* N x dim embedding (the map at the training
                             points: G(x_i) of eq. 17/18) */
  double *eigenvalues;    /* the solved pencil's dim + 1 largest, descending
                             (lambda_1 = 1 when v_1 is uniform; stochastic:
                             the second solve's) */
  int n_eigenvalues;
  double distortion;      /* eq. 5: sum_k sum_ij (y_ik - y_jk)^2 W_ij / 2
                             after scaling Y to trace(Y D Y^T) = dim */
  double denominator_spread; /* reweighted, stochastic: (max - min) / mean
                                of v_1^T z_i (0 when uniform; NAN else) */
  bool pencil_singular;   /* the scale side Z D Z^T was singular: solved in
                             its range (Brand's footnote 1) */
  size_t pencil_order, pencil_rank;
  double pencil_rcond;    /* its reciprocal condition number */
  int components;         /* connected components of W (1 expected) */
  nle_csr *W;             /* nle_kem_fit: the graph's weights as used (N x N,
                             symmetric, largest off-diagonal 1, without the
                             + I); NULL from nle_kem_graph_embed */
  nle_kem_opts resolved;  /* the options as they ran (no NLE_AUTO left) */
  size_t n;
  double knn_seconds, basis_seconds, pencil_seconds, eigen_seconds, inverse_seconds, total_seconds;
  nle_kem_model *model;   /* keep_model, else NULL */
} nle_kem_result;

/* Kernel eigenmaps of the points X (N x D, finite): the kNN graph and W,
 * the basis Z (eqs. 14-15, or X with lpp), the pencil (Z W Z^T, Z D Z^T)
 * (eq. 8) and the variant. Errors: NLE_ERR_ARG for options out of range,
 * NLE_ERR_VALUE for data that cannot give them (too few points for k,
 * coinciding points under inverse-distance weights, non-finite values). */
NLE_API nle_status nle_kem_fit(nle_ctx *ctx, const nle_matf *X, const nle_kem_opts *opts, nle_kem_result **result);
/* The transformational embedding of a graph with side information (Brand
 * sec. 2): W symmetric, non-negative (CSR, N x N), Z given as its transpose
 * Zt (N x m, row i = z_i). Uses opts->dim, variant (auto: reweighted) and
 * plus_identity only; the result has no model. */
NLE_API nle_status nle_kem_graph_embed(nle_ctx *ctx, const nle_csr *W, const nle_matd *Zt, const nle_kem_opts *opts,
                                       nle_kem_result **result);
NLE_API void nle_kem_result_free(nle_kem_result **result);

/* G(x) for new points (M x D): M x dim. */
NLE_API nle_status nle_kem_transform(nle_ctx *ctx, const nle_kem_model *model, const nle_matf *X, nle_matd **Y);
/* G+(y) for embedding points (M x dim): M x D. */
NLE_API nle_status nle_kem_inverse(nle_ctx *ctx, const nle_kem_model *model, const nle_matd *Y, nle_matd **X);
/* The basis z(x) of eq. 17 (lpp: x) of each point: M x m, the rows the
 * pencil was built from. */
NLE_API nle_status nle_kem_basis(nle_ctx *ctx, const nle_kem_model *model, const nle_matf *X, nle_matd **Zt);
/* The file's kind is "kem-model" (nle_file_kind). */
NLE_API nle_status nle_kem_model_save(nle_ctx *ctx, const nle_kem_model *model, const char *path);
NLE_API nle_status nle_kem_model_load(nle_ctx *ctx, const char *path, nle_kem_model **model);
NLE_API void nle_kem_model_free(nle_kem_model **model);

/* "raw", "affine", "reweighted", "stochastic" (and "auto"). */
NLE_API const char *nle_kem_variant_name(nle_kem_variant v);
NLE_API int nle_kem_variant_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_KEM_H */
