/* kpca_tiles.c — kernel PCA's dense Gaussian kernel (dissertation sec.
 * 4.6.4, exp(-gamma |x - y|^2)) as its upper triangle packed by rows, for
 * the eigensolver's dspmv.
 *
 * Why: the full kernel matrix of 10,000 x 784 points cost 3 s of DGEMM
 * (mds_base.c's pairs), half of it for the lower triangle dsymv never
 * read, and 800 MB whose fresh huge pages the kernel zeroed and compacted
 * (44% of the run's samples under perf on this machine). Here only the
 * TILE x TILE tiles (I, J), I <= J, are computed, in fixed blocks (the
 * same bits for any thread count), into the N (N + 1) / 2 packed entries,
 * each the same value as there: by the same DGEMM, or, for integer points
 * (pixels 0..255, counts), by SGEMMs over chunks of coordinates short
 * enough that float holds every product and partial sum exactly (twice
 * DGEMM's speed, the same exact inner products; tests/test_mds.c's
 * kpca_upper_kernel_exact compares bit for bit). 10,000 Fashion-MNIST
 * images, load 10, one run after the other: kernel 4.4-6.5 s (full
 * matrix, upper tiles) -> 1.9-2.2 s, eigenpairs 1.4-1.9 s (dsymv) ->
 * 2.4-2.6 s (dspmv), total 6.1-8.2 -> 4.6-5.3 s, peak 833 -> 442 MB.
 * Tried and left: the tiles kept as floats (eigenvalues 6e-10 off on
 * N = 600, the model's map of the training points 1e-9 off), inner
 * products of real points in float (SGEMM: the eigenvalues of the 10,000
 * images 2-3e-8 relative off, where one ulp of the float input moves them
 * 1e-10), and products from packed tiles by lane sums or two DGEMVs a
 * tile (slower than dsymv). */
#include "mds_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TILE = 256 };

static size_t tile_len(size_t n, size_t bi) { return n - bi * TILE < TILE ? n - bi * TILE : TILE; }

typedef struct {
  double *K; /* the upper triangle, packed by rows */
  size_t n, nt;
  const double *P;    /* the points in double (NULL: the float points, exact chunks) */
  const float *Pf;    /* the points as given */
  const double *norm; /* their squared norms */
  size_t D, chunk;    /* chunk: coordinates per exact SGEMM (integer points) */
  double gamma;
} tiles_job;

/* G = the inner products of rows bi x rows bj. Integer points with
 * |x| <= M: SGEMMs over `chunk` coordinates at a time, chunk M^2 <= 2^24,
 * so every product and partial sum is an integer float holds exactly
 * (whatever order BLAS adds in), then the chunks added in double: exactly
 * DGEMM's values at SGEMM's speed. Else DGEMM. */
static void inner_products(const tiles_job *j, size_t bi, size_t bj, size_t rows, size_t cols, double *G, float *Gf) {
  size_t D = j->D;
  if (j->P) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cols, (int)D, 1.0, j->P + bi * TILE * D,
                (int)D, j->P + bj * TILE * D, (int)D, 0.0, G, TILE);
    return;
  }
  for (size_t k0 = 0; k0 < D; k0 += j->chunk) {
    size_t len = D - k0 < j->chunk ? D - k0 : j->chunk;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)cols, (int)len, 1.0f,
                j->Pf + bi * TILE * D + k0, (int)D, j->Pf + bj * TILE * D + k0, (int)D, 0.0f, Gf, TILE);
    for (size_t r = 0; r < rows; r++)
      for (size_t c = 0; c < cols; c++) G[r * TILE + c] = (k0 ? G[r * TILE + c] : 0.0) + (double)Gf[r * TILE + c];
  }
}

static int tile_block(void *job, size_t b, void *scratch) {
  tiles_job *j = job;
  size_t nt = j->nt, n = j->n, bi = 0;
  while (b >= nt - bi) b -= nt - bi, bi++;
  size_t bj = bi + b, rows = tile_len(n, bi), cols = tile_len(n, bj);
  double *G = scratch;
  inner_products(j, bi, bj, rows, cols, G, (float *)(G + TILE * TILE));
  for (size_t r = 0; r < rows; r++) {
    size_t i = bi * TILE + r, c0 = bi == bj ? r : 0, j0 = bj * TILE + c0;
    nle__gaussian_row(j->gamma, G + r * TILE + c0, j->norm[i], j->norm + j0, cols - c0,
                      j->K + i * (2 * n - i - 1) / 2 + j0);
  }
  return 0;
}

/* The coordinates an exact SGEMM can take at once when every coordinate
 * is an integer of magnitude <= 4096 (pixels, counts): 2^24 / M^2; 0
 * otherwise, or when fewer than 32 (DGEMM then). */
static size_t exact_chunk(const nle_matf *Y) {
  float big = 0.0f;
  for (size_t e = 0; e < Y->rows * Y->cols; e++) {
    float v = Y->data[e];
    if (v != rintf(v) || !(fabsf(v) <= 4096.0f)) return 0;
    big = fabsf(v) > big ? fabsf(v) : big;
  }
  size_t chunk = big > 0 ? (size_t)(16777216.0 / ((double)big * big)) : Y->cols;
  return chunk >= 32 ? chunk : 0;
}

nle_status nle__kernel_packed_gaussian(nle_ctx *ctx, const nle_matf *Y, double gamma, double **K) {
  size_t n = Y->rows, D = Y->cols, nt = (n + TILE - 1) / TILE;
  nle_status s = nle__kernel_matrix_alloc(ctx, n, true, K);
  if (s) return s;
  size_t chunk = exact_chunk(Y);
  double *P = chunk ? NULL : nle__malloc(ctx, (n * D > 0 ? n * D : 1) * sizeof(double), "the points in double");
  double *norm = nle__malloc(ctx, n * sizeof(double), "the points' norms");
  if ((!chunk && !P) || !norm) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < n; i++) {
    double acc = 0.0;
    for (size_t t = 0; t < D; t++) {
      double v = (double)Y->data[i * D + t];
      if (P) P[i * D + t] = v;
      acc += v * v;
    }
    norm[i] = acc;
  }
  tiles_job job = {*K, n, nt, P, Y->data, norm, D, chunk, gamma};
  if (!s)
    s = nle__for_blocks(ctx, "kernel matrix", nt * (nt + 1) / 2,
                        nle__threads_for(ctx, (double)n * (double)n * (double)D),
                        TILE * TILE * (sizeof(double) + sizeof(float)), tile_block, &job);
  free(P), free(norm);
  if (s) free(*K), *K = NULL;
  return s;
}

/* ---- the packed kernel's product, in parallel ---- */

/* Y = K X for the symmetric K whose upper triangle is packed by rows (the
 * form above) and an n x b row-major block X, on `threads` threads with
 * the same bits for any number: the rows are cut into NLE__PACKED_BLOCKS
 * fixed runs of equal work; each run sums its rows' upper parts (a_ij x_j,
 * j >= i, in NLE__LANES fixed lanes a column) and scatters the mirrored
 * a_ij x_i (j > i) into its own buffer; the buffers are added in run
 * order. Memory-bound: the kernel is read once for the b columns, which is
 * why kernel PCA's eigensolver takes it by blocks. BLAS's dspmv was one
 * thread here: 10,000 x 10,000, 0.84 s for kernel PCA's 20 products at 1
 * or 2 threads. work: (NLE__PACKED_BLOCKS + 1) n b doubles. */
static size_t packed_row_start(size_t n, size_t i) { return i * n - (i * (i - (i > 0))) / 2; }

/* One run's rows for b columns; inlined with b a constant for the common
 * widths, so the column loops unroll. */
static inline __attribute__((always_inline)) void packed_run(size_t n, const double *K, const double *X,
                                                             double *direct, double *mirror, size_t r0, size_t r1,
                                                             size_t b) {
  if (r0 < n) memset(mirror + r0 * b, 0, (n - r0) * b * sizeof(double));
  for (size_t r = r0; r < r1; r++) {
    const double *a = K + packed_row_start(n, r), *xr = X + r * b;
    size_t len = n - r, k = 0;
    double lane[NLE__LANES][NLE__PACKED_MAX_COLUMNS] = {{0}};
    for (; k + NLE__LANES <= len; k += NLE__LANES)
      for (int l = 0; l < NLE__LANES; l++)
        for (size_t c = 0; c < b; c++) lane[l][c] += a[k + l] * xr[(k + l) * b + c];
    for (; k < len; k++)
      for (size_t c = 0; c < b; c++) lane[k % NLE__LANES][c] += a[k] * xr[k * b + c];
    for (size_t c = 0; c < b; c++) {
      double v = 0.0;
      for (int l = 0; l < NLE__LANES; l++) v += lane[l][c];
      direct[r * b + c] = v;
    }
    double *m = mirror + r * b;
    for (k = 1; k < len; k++)
      for (size_t c = 0; c < b; c++) m[k * b + c] += a[k] * xr[c];
  }
}

void nle__packed_symm(size_t n, const double *K, const double *X, double *Y, size_t b, double *work, int threads) {
  size_t bound[NLE__PACKED_BLOCKS + 1], total = n * (n + 1) / 2, i = 0;
  bound[0] = 0;
  for (size_t p = 1; p < NLE__PACKED_BLOCKS; p++) { /* equal shares of the entries */
    double want = (double)total * (double)p / NLE__PACKED_BLOCKS;
    while (i < n && (double)packed_row_start(n, i) < want) i++;
    bound[p] = i;
  }
  bound[NLE__PACKED_BLOCKS] = n;
  double *direct = work + (size_t)NLE__PACKED_BLOCKS * n * b;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : 1)
  for (size_t p = 0; p < NLE__PACKED_BLOCKS; p++) {
    double *mirror = work + p * n * b;
    switch (b) {
      case 1: packed_run(n, K, X, direct, mirror, bound[p], bound[p + 1], 1); break;
      case 2: packed_run(n, K, X, direct, mirror, bound[p], bound[p + 1], 2); break;
      case 4: packed_run(n, K, X, direct, mirror, bound[p], bound[p + 1], 4); break;
      default: packed_run(n, K, X, direct, mirror, bound[p], bound[p + 1], b); break;
    }
  }
#pragma omp parallel for schedule(static) num_threads(threads > 0 ? threads : 1)
  for (size_t j = 0; j < n; j++)
    for (size_t c = 0; c < b; c++) {
      double v = direct[j * b + c];
      for (size_t p = 0; p < NLE__PACKED_BLOCKS && bound[p] <= j; p++) v += work[(p * n + j) * b + c];
      Y[j * b + c] = v;
    }
}

void nle__packed_symv(size_t n, const double *K, const double *x, double *y, double *work, int threads) {
  nle__packed_symm(n, K, x, y, 1, work, threads);
}
