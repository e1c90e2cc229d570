/* mds_base.c — what the distance and kernel methods build on (mds.c,
 * classical.c, kpca.c, kpca_lll.c, lda.c, projection.c call it; it calls
 * none of them): the points' finite check, the kernels (names, defaults,
 * width, values), every pair of rows by DGEMM blocks (kernel values or
 * distances) and the dense kernel matrix. */
#include "mds_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

nle_status nle__check_finite_rows(nle_ctx *ctx, const char *what, const nle_matf *Y) {
  size_t n = Y->rows * Y->cols;
  for (size_t e = 0; e < n; e++)
    if (!isfinite(Y->data[e]))
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: row %zu, column %zu is %g, not finite", what, e / Y->cols,
                       e % Y->cols, (double)Y->data[e]);
  return NLE_OK;
}

NLE__ENUM_NAMES(nle_pdkernel_name, nle_pdkernel_parse, nle_pdkernel_kind, NLE_PDKERNEL_MAP, NLE_PDK_COUNT, false)

enum { KBLOCK = 256, GAMMA_PAIRS = 10000 };

void nle_pdkernel_init(nle_pdkernel *k) {
  memset(k, 0, sizeof *k);
  k->kind = NLE_PDK_GAUSSIAN;
  k->gamma = NLE_AUTO;
  k->coef0 = 1.0;
  k->degree = 3;
}

/* The kernel from the inner product and the squared norms. */
static inline double kernel_of(const nle_pdkernel *k, double dot, double na, double nb) {
  switch (k->kind) {
  case NLE_PDK_GAUSSIAN: {
    double d2 = na + nb - 2.0 * dot;
    return nle__exp_nonpositive(-k->gamma * (d2 > 0 ? d2 : 0.0));
  }
  case NLE_PDK_POLYNOMIAL: return pow(k->gamma * dot + k->coef0, k->degree);
  default: return dot;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

nle_status nle__kernel_resolve(nle_ctx *ctx, const nle_matf *Y, nle_pdkernel *k) {
  if (k->gamma != NLE_AUTO) {
    if (!(k->gamma > 0) || !isfinite(k->gamma))
      return nle__fail(ctx, NLE_ERR_ARG, "kernel: {@gamma=%g} must be a finite number > 0", k->gamma);
    return NLE_OK;
  }
  size_t n = Y->rows, D = Y->cols;
  if (k->kind == NLE_PDK_POLYNOMIAL) { /* 1 / mean |x|^2: gamma x.y of order 1 */
    double s = 0;
    for (size_t e = 0; e < n * D; e++) s += (double)Y->data[e] * Y->data[e];
    k->gamma = s > 0 ? (double)n / s : 1.0;
    return NLE_OK;
  }
  if (k->kind != NLE_PDK_GAUSSIAN) return NLE_OK;
  /* the median heuristic: s^2 the median squared distance of random pairs */
  double *d2 = nle__malloc(ctx, GAMMA_PAIRS * sizeof(double), "the kernel width");
  if (!d2) return NLE_ERR_NOMEM;
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6b67616dULL);
  size_t m = 0;
  for (size_t t = 0; t < GAMMA_PAIRS; t++) {
    size_t i = (size_t)nle_rng_below(&rng, n), j = (size_t)nle_rng_below(&rng, n);
    if (i == j) continue;
    d2[m++] = nle__sqdist_fd(Y->data + i * D, Y->data + j * D, D);
  }
  qsort(d2, m, sizeof(double), cmp_double);
  double med = m ? d2[m / 2] : 0.0;
  free(d2);
  if (!(med > 0)) return nle__fail(ctx, NLE_ERR_VALUE, "kernel: the points are all equal: no Gaussian width");
  k->gamma = 1.0 / (2.0 * med);
  return NLE_OK;
}

/* Rows of Q against R by DGEMM blocks (inner products in double), then
 * what the caller asked of each pair. */
typedef struct {
  const nle_matf *Q, *R;
  nle__pair_output what;
  const nle_pdkernel *k;
  const double *qn, *rn;
  void *out;
} cross_job;

static int cross_block(void *job, size_t b, void *scratch) {
  cross_job *j = job;
  size_t M = j->Q->rows, m = j->R->rows, D = j->Q->cols, i0 = b * KBLOCK, rows = M - i0 < KBLOCK ? M - i0 : KBLOCK;
  double *A = scratch, *Bm = A + KBLOCK * D, *G = Bm + KBLOCK * D;
  for (size_t e = 0; e < rows * D; e++) A[e] = j->Q->data[i0 * D + e];
  for (size_t c0 = 0; c0 < m; c0 += KBLOCK) {
    size_t cols = m - c0 < KBLOCK ? m - c0 : KBLOCK;
    for (size_t e = 0; e < cols * D; e++) Bm[e] = j->R->data[c0 * D + e];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cols, (int)D, 1.0, A, (int)D, Bm, (int)D,
                0.0, G, KBLOCK);
    for (size_t r = 0; r < rows; r++) {
      const double *g = G + r * KBLOCK, *rn = j->rn + c0;
      double qn = j->qn[i0 + r];
      size_t at = (i0 + r) * m + c0;
      if (j->what == NLE__PAIR_KERNEL && j->k->kind == NLE_PDK_GAUSSIAN) {
        nle__gaussian_row(j->k->gamma, g, qn, rn, cols, (double *)j->out + at);
      } else if (j->what == NLE__PAIR_KERNEL) {
        for (size_t c = 0; c < cols; c++) ((double *)j->out)[at + c] = kernel_of(j->k, g[c], qn, rn[c]);
      } else {
        for (size_t c = 0; c < cols; c++) {
          double d2 = qn + rn[c] - 2.0 * g[c];
          d2 = d2 > 0 ? d2 : 0.0;
          if (j->what == NLE__PAIR_SQDIST) ((double *)j->out)[at + c] = d2;
          else ((float *)j->out)[at + c] = (float)sqrt(d2);
        }
      }
    }
  }
  return 0;
}

static double *squared_norms(nle_ctx *ctx, const nle_matf *Y) {
  double *v = nle__malloc(ctx, (Y->rows ? Y->rows : 1) * sizeof(double), "the points' norms");
  for (size_t i = 0; v && i < Y->rows; i++) {
    v[i] = 0;
    for (size_t c = 0; c < Y->cols; c++) v[i] += (double)Y->data[i * Y->cols + c] * Y->data[i * Y->cols + c];
  }
  return v;
}

nle_status nle__pairwise(nle_ctx *ctx, const nle_matf *Q, const nle_matf *R, nle__pair_output what,
                         const nle_pdkernel *k, void *out) {
  double *qn = squared_norms(ctx, Q), *rn = squared_norms(ctx, R);
  nle_status s = qn && rn ? NLE_OK : NLE_ERR_NOMEM;
  cross_job job = {Q, R, what, k, qn, rn, out};
  if (!s)
    s = nle__for_blocks(ctx, "pairs", (Q->rows + KBLOCK - 1) / KBLOCK,
                        nle__threads_for(ctx, (double)Q->rows * (double)R->rows * (double)Q->cols),
                        (2 * KBLOCK * Q->cols + KBLOCK * KBLOCK) * sizeof(double), cross_block, &job);
  free(qn), free(rn);
  return s;
}

nle_status nle__kernel_matrix_alloc(nle_ctx *ctx, size_t n, bool packed, double **K) {
  double bytes = (packed ? (double)n * (double)(n + 1) / 2 : (double)n * (double)n) * sizeof(double);
  *K = NULL;
  const char *what = packed ? "the N x N kernel matrix's upper triangle" : "the N x N kernel matrix";
  nle_status s = nle__check_memory(ctx, bytes, what);
  if (s)
    return nle__fail(ctx, s, "%s of %zu points needs %.2f GiB, over the memory cap (%.2f GiB): a sparse kernel on the "
                     "kNN graph needs N k (a kernel's neighbour count k > 0)", what, n, bytes / 1073741824.0,
                     (double)nle__memory_cap(ctx) / 1073741824.0);
  *K = nle__malloc_huge((size_t)bytes);
  return *K ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %s", what);
}

nle_status nle__kernel_matrix(nle_ctx *ctx, const nle_matf *Y, const nle_pdkernel *k, double **K) {
  size_t n = Y->rows;
  nle_status s = nle__kernel_matrix_alloc(ctx, n, false, K);
  if (s) return s;
  s = nle__pairwise(ctx, Y, Y, NLE__PAIR_KERNEL, k, *K);
  /* (gamma x.y + coef0)^degree overflows for a large degree or gamma: an
   * overflow that happened is refused, naming what to lower */
  for (size_t e = 0; !s && e < n * n; e++)
    if (!isfinite((*K)[e]))
      s = nle__fail(ctx, NLE_ERR_VALUE, "the %s kernel overflows at row %zu, column %zu (%g): a smaller {@gamma}%s",
                    nle_pdkernel_name(k->kind), e / n, e % n, (*K)[e],
                    k->kind == NLE_PDK_POLYNOMIAL ? ", {@degree} or {@coef0}" : "");
  if (s) free(*K), *K = NULL;
  return s;
}
