/* test_block_eigen.c — the block Krylov eigensolver (src/spectral/
 * block_eigen.c) against LAPACK's dsyevr on the same dense matrix: both
 * ends of the spectrum, eigenvalues to 1e-8 relative, the subspace to 1e-6;
 * an eigenvalue repeated three times (which one Krylov vector cannot
 * resolve); the same bits at 1 and 2 threads; and the shift-invert route
 * through a Cholesky factor against a dense solve. */
#include "harness.h"
#include "../src/spectral/eigen.h"
#include "../src/spectral/spectral_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const double *A;
  size_t n;
} dense_op;

/* Rows of Y = A X computed whole, in a fixed order: the same bits for any
 * thread count, as the solver requires of its operator. */
static int dense_apply(void *user, const double *X, double *Y, size_t b) {
  const dense_op *op = user;
  for (size_t i = 0; i < op->n; i++)
    for (size_t t = 0; t < b; t++) {
      double v = 0.0;
      for (size_t j = 0; j < op->n; j++) v += op->A[i * op->n + j] * X[j * b + t];
      Y[i * b + t] = v;
    }
  return 0;
}

/* Q diag(lambda) Q^T, Q a random orthogonal matrix (QR of a Gaussian-ish
 * one): a symmetric matrix with a chosen spectrum. */
static double *with_spectrum(size_t n, const double *lambda, uint64_t seed) {
  double *Q = malloc(n * n * sizeof(double)), *A = calloc(n * n, sizeof(double)), *tau = malloc(n * sizeof(double));
  nle_rng r;
  nle_rng_init(&r, seed, 7);
  for (size_t q = 0; q < n * n; q++) Q[q] = nle_rng_uniform(&r) - 0.5;
  LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, Q, (lapack_int)n, tau);
  LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)n, (lapack_int)n, Q, (lapack_int)n, tau);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j <= i; j++) {
      double v = 0.0;
      for (size_t k = 0; k < n; k++) v += Q[i * n + k] * lambda[k] * Q[j * n + k];
      A[i * n + j] = A[j * n + i] = v;
    }
  free(Q);
  free(tau);
  return A;
}

/* ||V - R (R^T V)||_F for n x k V and R with orthonormal columns: the sine
 * of the angles between the two subspaces, summed in quadrature. */
static double subspace_gap(const double *V, const double *R, size_t n, size_t k) {
  double *G = calloc(k * k, sizeof(double)), gap = 0.0;
  for (size_t i = 0; i < n; i++)
    for (size_t a = 0; a < k; a++)
      for (size_t c = 0; c < k; c++) G[a * k + c] += R[i * k + a] * V[i * k + c];
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < k; c++) {
      double v = V[i * k + c];
      for (size_t a = 0; a < k; a++) v -= R[i * k + a] * G[a * k + c];
      gap += v * v;
    }
  free(G);
  return sqrt(gap);
}

/* Both ends of a spectrum with a cluster of close values (gaps 1e-3 of its
 * width, as a kNN graph's are) against dsyevr on the same matrix. */
static void block_vs_dense(void) {
  nle_ctx *ctx = test_ctx(3);
  enum { N = 240, NEV = 7 };
  double lambda[N];
  for (size_t k = 0; k < N; k++) lambda[k] = (double)k / N + (k > N - 10 ? 1e-3 * (double)(k - N + 10) : 0.0);
  lambda[0] = -0.5; /* a spectrum not centred on 0 */
  double *A = with_spectrum(N, lambda, 11);
  dense_op op = {A, N};
  long products[2][2];
  /* convergence tested at restarts only (a product's cost unknown), or
   * early as a dense product's cost allows */
  for (int ends_and_tests = 0; ends_and_tests < 4; ends_and_tests++) {
    int end = ends_and_tests & 1, early = ends_and_tests >> 1;
    double column_flops = early ? 2.0 * N * N : 0.0;
    nle__eig_end which = end ? NLE__EIG_SMALLEST : NLE__EIG_LARGEST;
    double vals[NEV], ref[NEV], *V = malloc(N * NEV * sizeof(double)), *R = malloc(N * NEV * sizeof(double));
    double *Ac = malloc(N * N * sizeof(double));
    memcpy(Ac, A, N * N * sizeof(double));
    nle_test_ok(nle__eig_dense(ctx, "test", N, Ac, end ? 0 : N - NEV, NEV, ref, R));
    nle__block_info info;
    nle_test_ok(nle__block_eigs(ctx, "test", N, dense_apply, &op, column_flops, NEV, which, 1e-12, vals, V, &info));
    for (int t = 0; t < NEV; t++) nle_test_rel(vals[t], ref[t], 1e-8);
    nle_test(subspace_gap(V, R, N, NEV) < 1e-6);
    nle_test(info.products > 0 && info.block >= 2);
    products[early][end] = info.products;
    free(V);
    free(R);
    free(Ac);
  }
  /* tested early, it stops no later */
  nle_test(products[1][0] <= products[0][0] && products[1][1] <= products[0][1]);
  free(A);
  nle_ctx_free(&ctx);
}

/* The top eigenvalue three times over: a block of at least 3 holds all
 * three copies; the pairs after them are found too. */
static void block_repeated(void) {
  nle_ctx *ctx = test_ctx(5);
  enum { N = 200, NEV = 6 };
  double lambda[N];
  for (size_t k = 0; k < N; k++) lambda[k] = (double)k / N;
  lambda[N - 1] = lambda[N - 2] = lambda[N - 3] = 2.0;
  double *A = with_spectrum(N, lambda, 13);
  dense_op op = {A, N};
  double vals[NEV], *V = malloc(N * NEV * sizeof(double)), column_flops = 2.0 * N * N;
  nle_test_ok(nle__block_eigs(ctx, "test", N, dense_apply, &op, column_flops, NEV, NLE__EIG_LARGEST, 0.0, vals, V, NULL));
  nle_test_rel(vals[NEV - 1], 2.0, 1e-10);
  nle_test_rel(vals[NEV - 2], 2.0, 1e-10);
  nle_test_rel(vals[NEV - 3], 2.0, 1e-10);
  nle_test_rel(vals[NEV - 4], lambda[N - 4], 1e-8);
  nle_test_rel(vals[0], lambda[N - 6], 1e-8);
  free(V);
  free(A);
  nle_ctx_free(&ctx);
}

/* The same bits at 1 and 2 threads (inner products in fixed chunks); n
 * above one chunk so that the partial sums are several. */
static void block_threads(void) {
  enum { N = 5000, NEV = 4 };
  double *vals[2], *V[2];
  for (int th = 0; th < 2; th++) {
    nle_ctx *ctx = test_ctx(9);
    nle_ctx_set_threads(ctx, th + 1);
    /* a weighted path graph's Laplacian D - W (positive semi-definite) */
    vals[th] = malloc(NEV * sizeof(double));
    V[th] = malloc(N * NEV * sizeof(double));
    nle_csr *W = NULL;
    nle_test_ok(nle_csr_alloc(ctx, N, N, 3 * N - 2, NLE_F64, &W));
    double *val = W->val;
    int64_t q = 0;
    for (int i = 0; i < N; i++) {
      double left = i > 0 ? 1.0 + 0.001 * (i % 7) : 0.0, right = i < N - 1 ? 1.0 + 0.001 * ((i + 1) % 7) : 0.0;
      W->rowptr[i] = q;
      if (i > 0) W->colind[q] = i - 1, val[q++] = -left;
      W->colind[q] = i, val[q++] = left + right;
      if (i < N - 1) W->colind[q] = i + 1, val[q++] = -right;
    }
    W->rowptr[N] = q;
    nle_test_ok(nle__smallest_shift_invert(ctx, "test", W, 1e-9, NEV, 0.0, true, vals[th], V[th]));
    nle_csr_free(&W);
    nle_ctx_free(&ctx);
  }
  nle_test(memcmp(vals[0], vals[1], NEV * sizeof(double)) == 0);
  nle_test(memcmp(V[0], V[1], N * NEV * sizeof(double)) == 0);
  for (int th = 0; th < 2; th++) free(vals[th]), free(V[th]);
}

const nle_test_case block_eigen_tests[] = {{"eigen/block_vs_dense", block_vs_dense},
                                           {"eigen/block_repeated", block_repeated},
                                           {"eigen/block_threads", block_threads},
                                           {NULL, NULL}};
