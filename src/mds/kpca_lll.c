/* kpca_lll.c — kernel PCA by Locally Linear Landmarks (dissertation sec.
 * 4.6.3, eq. 4.18): max tr(X K~ X^T) s.t. X X^T = I over X = X~ Z, i.e. the
 * L x L pencil (Z^T K-bar Z, Z^T Z). K-bar = J K J is dense even where K is
 * not, so it is never formed: Z^T K-bar Z = Z^T K Z - (s r^T + r s^T) / N +
 * (1^T K 1 / N^2) s s^T with s = Z^T 1 and r = Z^T (K 1) (SPEC 1.2.6,
 * verified by check_lll.py), and Z^T K Z is accumulated from blocks of K
 * rows (nle__pairwise), O(N^2 (D + K_Z) + N K_Z L) time and O(B N + L^2)
 * memory. */
#include "mds_internal.h"
#include "../spectral/method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { KBLOCK = 256 };

typedef struct {
  const nle_csr *Z;
  const double *K; /* rows [i0, i0 + rows) of K, N columns */
  size_t rows, L;
  double *P;       /* rows x L: K Z */
  double *rowsum;  /* rows: K 1 */
} kz_job;

static int kz_rows(void *job, size_t b, void *scratch) {
  (void)scratch;
  kz_job *j = job;
  size_t n = (size_t)j->Z->rows, L = j->L;
  const double *zv = j->Z->val;
  for (size_t i = b * 16; i < (b + 1) * 16 && i < j->rows; i++) {
    const double *k = j->K + i * n;
    double *p = j->P + i * L, sum = 0.0;
    memset(p, 0, L * sizeof(double));
    for (size_t m = 0; m < n; m++) {
      sum += k[m];
      for (int64_t q = j->Z->rowptr[m]; q < j->Z->rowptr[m + 1]; q++) p[j->Z->colind[q]] += k[m] * zv[q];
    }
    j->rowsum[i] = sum;
  }
  return 0;
}

nle_status nle_lll_kernel_pca(nle_ctx *ctx, const nle_csr *Z, const nle_matf *Y, const nle_pdkernel *kernel, int nev,
                              double *vals, nle_matd **Xl, nle_matd **X) {
  if (Xl) *Xl = NULL;
  if (X) *X = NULL;
  size_t n = Y ? Y->rows : 0, L = Z ? (size_t)Z->cols : 0;
  if (!Z || !Y || Z->dtype != NLE_F64 || (size_t)Z->rows != n || L < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "LLL kernel PCA: Z must be the N x L weights of the N points");
  if (!kernel || kernel->kind == NLE_PDK_PRECOMPUTED || kernel->neighbors > 0)
    return nle__fail(ctx, NLE_ERR_ARG, "LLL kernel PCA: a dense kernel of the points (Gaussian, polynomial or linear)");
  if (nev < 1 || (size_t)nev > L)
    return nle__fail(ctx, NLE_ERR_ARG, "LLL kernel PCA: %d eigenpairs of %zu landmarks (1..L)", nev, L);
  nle_status s = nle__check_memory(ctx, 4.0 * (double)L * L * sizeof(double) + (double)KBLOCK * n * sizeof(double),
                                   "LLL kernel PCA's reduced pencil");
  if (s) return s;
  nle_pdkernel k = *kernel;
  s = nle__kernel_resolve(ctx, Y, &k);
  double *A = nle__calloc(ctx, L * L, sizeof(double), "LLL's reduced A");
  double *sv = nle__calloc(ctx, L, sizeof(double), "LLL kernel PCA");
  double *rv = nle__calloc(ctx, L, sizeof(double), "LLL kernel PCA");
  double *Kb = nle__malloc(ctx, (size_t)KBLOCK * n * sizeof(double), "a block of kernel rows");
  double *P = nle__malloc(ctx, (size_t)KBLOCK * L * sizeof(double), "LLL kernel PCA");
  double *rowsum = nle__malloc(ctx, KBLOCK * sizeof(double), "LLL kernel PCA");
  if (!s && !(A && sv && rv && Kb && P && rowsum)) s = NLE_ERR_NOMEM;
  const double *zv = Z->val;
  double total = 0.0;
  for (size_t i0 = 0; !s && i0 < n; i0 += KBLOCK) {
    size_t rows = n - i0 < KBLOCK ? n - i0 : KBLOCK;
    nle_matf view = {rows, Y->cols, Y->data + i0 * Y->cols};
    s = nle__pairwise(ctx, &view, Y, NLE__PAIR_KERNEL, &k, Kb);
    kz_job j = {Z, Kb, rows, L, P, rowsum};
    if (!s)
      s = nle__for_blocks(ctx, "LLL kernel PCA", (rows + 15) / 16, nle__threads_for(ctx, (double)rows * n * 8), 0,
                          kz_rows, &j);
    for (size_t i = 0; !s && i < rows; i++) { /* Z^T (K Z), r and s, in a fixed order */
      size_t row = i0 + i;
      total += rowsum[i];
      for (int64_t q = Z->rowptr[row]; q < Z->rowptr[row + 1]; q++) {
        size_t a = (size_t)Z->colind[q];
        double z = zv[q];
        for (size_t c = 0; c < L; c++) A[a * L + c] += z * P[i * L + c];
        rv[a] += z * rowsum[i];
        sv[a] += z;
      }
    }
  }
  if (!s) { /* the centring J K J (eq. 4.18) as a rank-2 update */
    double g = total / ((double)n * (double)n);
    for (size_t a = 0; a < L; a++)
      for (size_t c = 0; c < L; c++)
        A[a * L + c] += -(sv[a] * rv[c] + rv[a] * sv[c]) / (double)n + g * sv[a] * sv[c];
    for (size_t a = 0; a < L; a++)
      for (size_t c = a + 1; c < L; c++) A[a * L + c] = A[c * L + a] = 0.5 * (A[a * L + c] + A[c * L + a]);
  }
  /* B = I: the reduced pencil's scale is Z^T Z */
  if (!s) s = nle__lll_solve_reduced(ctx, Z, A, NULL, nev, true, vals, Xl, X, NULL);
  free(A), free(sv), free(rv), free(Kb), free(P), free(rowsum);
  return s;
}
