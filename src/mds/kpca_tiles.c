/* kpca_tiles.c — kernel PCA's dense Gaussian kernel (dissertation sec.
 * 4.6.4, exp(-gamma |x - y|^2)) as the upper triangle of an N x N
 * row-major matrix, all that the eigensolver's dsymv reads.
 *
 * Why: the full kernel matrix of 10,000 x 784 points cost 3 s of DGEMM
 * (mds_base.c's pairs), half of it for the lower triangle nothing read.
 * Here only the TILE x TILE tiles (I, J), I <= J, are computed, each by the
 * same DGEMM as there, so the entries read are the same values; the tiles
 * in fixed blocks (the same bits for any thread count), ordered so that a
 * thread takes the next tile (the rows' counts differ). Tried and left: the
 * tiles kept as floats (eigenvalues 6e-10 off on N = 600 and the model's
 * map of the training points 1e-9 off: tests/test_mds.c's kpca checks),
 * inner products in float (SGEMM, 2x faster again, but the eigenvalues of
 * 10,000 Fashion-MNIST images 2-3e-8 relative off, where one ulp of the
 * float input moves them 1e-10), and a product from packed tiles by lane
 * sums or two DGEMVs a tile (2x slower than dsymv). */
#include "mds_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TILE = 256 };

static size_t tile_len(size_t n, size_t bi) { return n - bi * TILE < TILE ? n - bi * TILE : TILE; }

typedef struct {
  double *K; /* n x n, row-major */
  size_t n, nt;
  const double *P;    /* the points in double */
  const double *norm; /* their squared norms */
  size_t D;
  double gamma;
} tiles_job;

static int tile_block(void *job, size_t b, void *scratch) {
  tiles_job *j = job;
  size_t nt = j->nt, n = j->n, bi = 0;
  while (b >= nt - bi) b -= nt - bi, bi++;
  size_t bj = bi + b, rows = tile_len(n, bi), cols = tile_len(n, bj);
  double *G = scratch, *out = j->K + bi * TILE * n + bj * TILE;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cols, (int)j->D, 1.0, j->P + bi * TILE * j->D,
              (int)j->D, j->P + bj * TILE * j->D, (int)j->D, 0.0, G, TILE);
  for (size_t r = 0; r < rows; r++)
    nle__gaussian_row(j->gamma, G + r * TILE, j->norm[bi * TILE + r], j->norm + bj * TILE, cols, out + r * n);
  return 0;
}

nle_status nle__kernel_upper_gaussian(nle_ctx *ctx, const nle_matf *Y, double gamma, double **K) {
  size_t n = Y->rows, D = Y->cols, nt = (n + TILE - 1) / TILE;
  nle_status s = nle__kernel_matrix_alloc(ctx, n, K);
  if (s) return s;
  double *P = nle__malloc(ctx, (n * D > 0 ? n * D : 1) * sizeof(double), "the points in double");
  double *norm = nle__malloc(ctx, n * sizeof(double), "the points' norms");
  if (!P || !norm) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < n; i++) {
    double acc = 0.0;
    for (size_t t = 0; t < D; t++) P[i * D + t] = (double)Y->data[i * D + t], acc += P[i * D + t] * P[i * D + t];
    norm[i] = acc;
  }
  tiles_job job = {*K, n, nt, P, norm, D, gamma};
  if (!s)
    s = nle__for_blocks(ctx, "kernel matrix", nt * (nt + 1) / 2,
                        nle__threads_for(ctx, (double)n * (double)n * (double)D), TILE * TILE * sizeof(double),
                        tile_block, &job);
  free(P), free(norm);
  if (s) free(*K), *K = NULL;
  return s;
}
