/* mds_internal.h — what the distance and kernel methods share (src/mds/):
 * the dissimilarities the SMACOF family iterates on, classical MDS, the
 * kernels and the projection model. */
#ifndef NLE_MDS_INTERNAL_H
#define NLE_MDS_INTERNAL_H

#include "../core/internal.h"
#include "../spectral/eigen.h"

#include <stdint.h>
#include <string.h>

/* exp(x) for x <= 0, to about an ulp, written so that a loop of it
 * vectorises (libm's exp does not without -ffast-math): x = k ln2 + r,
 * |r| <= ln2 / 2 (Cody-Waite, ln2 in two parts), e^r by its Taylor series
 * to r^13 (remainder below 1e-17), times 2^k built in the exponent bits. */
static inline double nle__exp_nonpositive(double x) {
  x = x < -708.0 ? -708.0 : x; /* e^-708 ~ 3e-308: the kernel is 0 to the eigensolver */
  /* round to nearest by the 1.5 * 2^52 shifter: arithmetic only, so it vectorises */
  double k = (x * 1.4426950408889634 + 6755399441055744.0) - 6755399441055744.0;
  double r = (x - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  int64_t bits = ((int64_t)k + 1023) << 52;
  double scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/* A row of Gaussian kernel values exp(-gamma d^2), d^2 = |a|^2 + |b|^2 -
 * 2 a.b from inner products and squared norms (mds_base.c's pairs and
 * kpca_tiles.c's tiles: the same values). */
NLE_HOT static inline void nle__gaussian_row(double gamma, const double *dot, double na, const double *nb, size_t cols,
                                             double *out) {
#pragma omp simd
  for (size_t c = 0; c < cols; c++) {
    double d2 = na + nb[c] - 2.0 * dot[c];
    out[c] = nle__exp_nonpositive(-gamma * (d2 > 0 ? d2 : 0.0));
  }
}

/* The rows of the dissimilarity matrix the SMACOF passes read: N x N
 * floats (both triangles), and the weights: the user's N x N, Sammon's
 * 1 / delta, or none (all 1). */
typedef struct {
  size_t n;
  const float *delta;
  const double *weights;
  bool sammon;
} nle__dissim;

static inline double nle__dissim_weight(const nle__dissim *S, size_t i, size_t j) {
  if (S->weights) return S->weights[i * S->n + j];
  return S->sammon ? 1.0 / (double)S->delta[i * S->n + j] : 1.0;
}

/* mds_base.c (below every file of the folder): an error naming the first
 * entry of Y that is not finite. */
nle_status nle__check_finite_rows(nle_ctx *ctx, const char *what, const nle_matf *Y);

/* classical.c: classical MDS of points (their PCA scores) or of a
 * dissimilarity matrix (B = -1/2 J M J, dense up to 2,000 points, else
 * Lanczos on the implicit B): fills r->X, r->eigenvalues and the spectrum
 * fields. */
nle_status nle__mds_classical(nle_ctx *ctx, const nle_mds_input *in, const nle_mds_opts *o, nle_mds_result *r);
nle_status nle__mds_landmark(nle_ctx *ctx, const nle_mds_input *in, const nle_mds_opts *o, nle_mds_result *r);
/* X = V_d Lambda_d^1/2 from the top d eigenpairs (ascending in asc, the
 * top one at `last`; the vectors the columns of V, n x cols), signed by
 * nle__fix_signs, and the d eigenvalues descending into *vals; an
 * eigenvalue that is not positive is an error naming `what`. */
nle_status nle__scale_eigenvectors(nle_ctx *ctx, const char *what, size_t n, size_t d, const double *asc, size_t last,
                                   const double *V, size_t cols, double **vals, nle_matd **X);

/* smacof.c: the runs of metric or Sammon MDS (S's weights say which) or
 * non-metric MDS from `start` (the classical solution) and o->starts - 1
 * random configurations; the best into r (X, history, iterations,
 * best_start, raw_stress; stress1 for non-metric). */
nle_status nle__mds_smacof(nle_ctx *ctx, bool nonmetric, const nle__dissim *S, const nle_mds_opts *o,
                           const nle_matd *start, nle_mds_result *r);

/* Stress measures of X against S's delta (sums over i < j). */
void nle__mds_measures(nle_ctx *ctx, const float *delta, size_t n, const nle_matd *X, double *stress1,
                       double *normalized, double *sammon, double *raw);

/* mds_base.c: the automatic gamma of kernel k for the points Y (k->gamma NLE_AUTO). */
nle_status nle__kernel_resolve(nle_ctx *ctx, const nle_matf *Y, nle_pdkernel *k);
/* The dense N x N kernel matrix of Y (Gaussian: GEMM for the distances),
 * row-major doubles, in parallel. */
nle_status nle__kernel_matrix(nle_ctx *ctx, const nle_matf *Y, const nle_pdkernel *k, double **K);
/* Its N x N doubles (packed: the N (N + 1) / 2 of the upper triangle),
 * or an error naming the memory cap. */
nle_status nle__kernel_matrix_alloc(nle_ctx *ctx, size_t n, bool packed, double **K);
/* Every pair of a row of Q (M x D) and a row of R (m x D), into out (M x
 * m, row-major), by blocks of DGEMM in double, in parallel: the kernel k's
 * values or the squared distances (doubles), or the distances (floats). */
typedef enum { NLE__PAIR_KERNEL, NLE__PAIR_SQDIST, NLE__PAIR_DIST_FLOAT } nle__pair_output;
nle_status nle__pairwise(nle_ctx *ctx, const nle_matf *Q, const nle_matf *R, nle__pair_output what,
                         const nle_pdkernel *k, void *out);

/* kpca_tiles.c: the dense Gaussian kernel exp(-gamma |x - y|^2) of Y,
 * its upper triangle packed by rows (BLAS's row-major upper packed form:
 * (i, j >= i) at i (2N - i - 1) / 2 + j), each entry nle__kernel_matrix's
 * value, in half its time and memory: for dspmv. */
nle_status nle__kernel_packed_gaussian(nle_ctx *ctx, const nle_matf *Y, double gamma, double **K);
/* Y = K X for such a packed K and an n x b row-major X (b at most
 * NLE__PACKED_MAX_COLUMNS), in parallel with the same bits for any thread
 * count; work holds (NLE__PACKED_BLOCKS + 1) n b doubles. symv: b = 1. */
enum { NLE__PACKED_BLOCKS = 16, NLE__PACKED_MAX_COLUMNS = 16 };
void nle__packed_symm(size_t n, const double *K, const double *X, double *Y, size_t b, double *work, int threads);
void nle__packed_symv(size_t n, const double *K, const double *x, double *y, double *work, int threads);

/* projection.c: a new model with its arrays allocated (R copied from Y
 * when not NULL). */
nle_status nle__projection_new(nle_ctx *ctx, const char *method, nle_map_kind map, size_t m, size_t D, size_t dim,
                               const nle_matf *R, nle_projection_model **out);

/* projection.c: this model's kind of model file (../io/model_file.h). */
struct nle__model_kind;
extern const struct nle__model_kind nle__projection_model_kind;

#endif
