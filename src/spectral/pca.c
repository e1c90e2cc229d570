/* pca.c — principal component analysis: the exact eigendecomposition of the
 * D x D covariance (LAPACK dsyevr) and, for wide data, the randomized range
 * finder with subspace iteration followed by a small SVD (Halko, Martinsson
 * and Tropp 2011, algorithms 4.4 and 5.1). Data are read in row blocks
 * converted to double, so the float input is never copied whole.
 * Every BLAS and LAPACK call runs single-threaded on a fixed split of the
 * rows (our threads take the splits; partial sums are added in split
 * order), so the result is the same bits for any thread count. */
#include "../graph/graph_internal.h"
#include "../core/comm.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PCA_BLOCK = 2048 };
/* Row splits whose partial sums are reduced in order: a fixed count (by D
 * only, never by the thread count), fewer where D x D partials would take
 * more than SPLIT_BYTES. */
enum { PCA_SPLITS = 8 };
#define SPLIT_BYTES (256.0 * 1024 * 1024)

static size_t split_count(size_t n, size_t partial_doubles) {
  size_t k = (size_t)(SPLIT_BYTES / (8.0 * (double)partial_doubles));
  if (k > PCA_SPLITS) k = PCA_SPLITS;
  if (k > (n + PCA_BLOCK - 1) / PCA_BLOCK) k = (n + PCA_BLOCK - 1) / PCA_BLOCK;
  return k < 1 ? 1 : k;
}


NLE__ENUM_NAMES(nle_pca_solver_name, nle_pca_solver_parse, nle_pca_solver, NLE_PCA_SOLVER_MAP, NLE_PCA_COUNT, true)

void nle_pca_opts_init(nle_pca_opts *o) {
  o->n_components = 2;
  o->center = true;
  o->whiten = false;
  o->solver = NLE_PCA_AUTO;
  o->oversample = 10;
  o->power_iters = 6;
}

void nle_pca_model_free(nle_pca_model **m) {
  if (!m || !*m) return;
  free((*m)->mean);
  free((*m)->components);
  free((*m)->explained_variance);
  free(*m);
  *m = NULL;
}

/* Rows [r0, r0 + rows) of Y, minus the mean, as doubles in buf. */
static void centred_block(const nle_matf *Y, const double *mean, size_t r0, size_t rows, double *buf) {
  size_t d = Y->cols;
  for (size_t i = 0; i < rows; i++) {
    const float *y = Y->data + (r0 + i) * d;
    double *b = buf + i * d;
    for (size_t j = 0; j < d; j++) b[j] = (double)y[j] - mean[j];
  }
}

/* Sums over rows go per block of NLE__RANK_ROW_BLOCK rows (every rank's
 * rows start at a whole block, so a block's partial is the same on any
 * number of ranks), rounded to one fixed point and added as integers
 * (comm.h): the same bits alone, on any number of ranks and threads. */
enum { SUM_BLOCK = NLE__RANK_ROW_BLOCK };

static size_t sum_blocks_of(size_t n) { return (n + SUM_BLOCK - 1) / SUM_BLOCK; }

typedef struct {
  const nle_matf *Y;
  double *sums, *lo, *hi; /* per block: D column sums, lowest and highest */
} extent_job;

static int extent_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  extent_job *j = job;
  size_t n = j->Y->rows, d = j->Y->cols, r1 = (b + 1) * SUM_BLOCK < n ? (b + 1) * SUM_BLOCK : n;
  double *sum = j->sums + b * d, *lo = j->lo + b * d, *hi = j->hi + b * d;
  for (size_t t = 0; t < d; t++) sum[t] = 0.0, lo[t] = INFINITY, hi[t] = -INFINITY;
  for (size_t i = b * SUM_BLOCK; i < r1; i++)
    for (size_t t = 0; t < d; t++) {
      double v = j->Y->data[i * d + t];
      sum[t] += v;
      lo[t] = v < lo[t] ? v : lo[t];
      hi[t] = v > hi[t] ? v : hi[t];
    }
  return 0;
}

/* The column means over all N rows of every rank (when centring) and
 * *reach, the largest |y - mean| of any entry: what bounds the blocks'
 * partial sums of products for their fixed point. */
static nle_status column_extent(nle_ctx *ctx, const nle_matf *Y, size_t n_total, bool center, double *mean,
                                double *reach) {
  size_t d = Y->cols, blocks = sum_blocks_of(Y->rows);
  double *part = nle__malloc(ctx, (3 * blocks + 2) * d * sizeof(double), "the column means");
  if (!part) return NLE_ERR_NOMEM;
  double *lo = part + blocks * d, *hi = lo + blocks * d, *low = hi + blocks * d, *high = low + d;
  extent_job job = {Y, part, lo, hi};
  nle_status s = nle__for_blocks(ctx, "PCA means", blocks, nle__threads_for(ctx, (double)Y->rows * d), 0,
                                 extent_block, &job);
  for (size_t t = 0; t < d; t++) low[t] = INFINITY, high[t] = -INFINITY;
  for (size_t b = 0; b < blocks; b++)
    for (size_t t = 0; t < d; t++) {
      low[t] = lo[b * d + t] < low[t] ? lo[b * d + t] : low[t];
      high[t] = hi[b * d + t] > high[t] ? hi[b * d + t] : high[t];
    }
  if (!s) s = nle__comm_min_d(ctx, low, d);
  if (!s) s = nle__comm_max_d(ctx, high, d);
  if (!s && center) s = nle__comm_sum_blocks(ctx, part, blocks, d, mean);
  *reach = 0.0;
  for (size_t t = 0; !s && t < d; t++) {
    if (center) mean[t] /= (double)n_total;
    double far = fmax(high[t] - mean[t], mean[t] - low[t]);
    *reach = far > *reach ? far : *reach;
  }
  free(part);
  if (!s && !(*reach <= 1e150)) s = nle__fail(ctx, NLE_ERR_VALUE, "PCA: the data hold values too large or not finite");
  return s;
}

/* Products over rows, summed per SUM_BLOCK in double, then in fixed point
 * into their split's integers: the covariance (Q NULL: D x D, SYRK upper)
 * or A^T Q (D x l). */
typedef struct {
  const nle_matf *Y;
  const double *mean, *Q;
  size_t width; /* the product's columns: D or l */
  size_t splits;
  int scale;
  int64_t *units; /* per split: D x width */
} product_job;

static int product_split(void *job, size_t sp, void *scratch) {
  product_job *j = job;
  size_t n = j->Y->rows, d = j->Y->cols, w = j->width, blocks = sum_blocks_of(n);
  double *block = scratch, *partial = block + (size_t)PCA_BLOCK * d;
  int64_t *units = j->units + sp * d * w;
  memset(units, 0, d * w * sizeof *units);
  for (size_t b = blocks * sp / j->splits; b < blocks * (sp + 1) / j->splits; b++) {
    size_t r1 = (b + 1) * SUM_BLOCK < n ? (b + 1) * SUM_BLOCK : n;
    memset(partial, 0, d * w * sizeof(double));
    for (size_t r = b * SUM_BLOCK; r < r1; r += PCA_BLOCK) {
      size_t rows = r1 - r < PCA_BLOCK ? r1 - r : PCA_BLOCK;
      centred_block(j->Y, j->mean, r, rows, block);
      if (j->Q)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d, (int)w, (int)rows, 1.0, block, (int)d,
                    j->Q + r * w, (int)w, 1.0, partial, (int)w);
      else
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d, (int)rows, 1.0, block, (int)d, 1.0, partial,
                    (int)d);
    }
    for (size_t e = 0; e < d * w; e++) units[e] += (int64_t)llrint(ldexp(partial[e], j->scale));
  }
  return 0;
}

/* The product over every rank's rows into out (D x width), each block's
 * partial bounded by `bound`. */
static nle_status fixed_point_product(nle_ctx *ctx, const nle_matf *Y, const double *mean, const double *Q,
                                      size_t width, size_t n_total, double bound, double *out) {
  size_t n = Y->rows, d = Y->cols, splits = split_count(n, d * width);
  int64_t *units = nle__malloc(ctx, splits * d * width * sizeof(int64_t), "partial products");
  nle_status s = nle__comm_agree(ctx, units ? NLE_OK : NLE_ERR_NOMEM);
  if (s) {
    free(units);
    return s;
  }
  product_job job = {Y, mean, Q, width, splits, nle__fixed_point_scale(bound, (double)sum_blocks_of(n_total)), units};
  s = nle__for_blocks(ctx, "PCA products", splits, nle__threads_for(ctx, (double)n * d * width),
                      ((size_t)PCA_BLOCK * d + d * width) * sizeof(double), product_split, &job);
  for (size_t sp = 1; !s && sp < splits; sp++)
    for (size_t e = 0; e < d * width; e++) units[e] += units[sp * d * width + e];
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_sum_i64(ctx, units, d * width);
  for (size_t e = 0; !s && e < d * width; e++) out[e] = ldexp((double)units[e], -job.scale);
  free(units);
  return s;
}

/* The covariance (upper triangle) over every rank's rows: SUM_BLOCK
 * partials in fixed point, bounded by SUM_BLOCK reach^2 each. */
static nle_status covariance(nle_ctx *ctx, const nle_matf *Y, const double *mean, size_t n_total, double reach,
                             double *cov) {
  size_t d = Y->cols;
  nle_status s = fixed_point_product(ctx, Y, mean, NULL, d, n_total, (double)SUM_BLOCK * reach * reach, cov);
  for (size_t e = 0; !s && e < d * d; e++) cov[e] /= (double)(n_total - 1);
  return s;
}

/* Exact: the covariance over every rank's rows, then the top n_components
 * eigenpairs, the same on every rank. */
static nle_status pca_exact(nle_ctx *ctx, const nle_matf *Y, size_t n_total, double reach, nle_pca_model *m) {
  size_t d = Y->cols;
  int nc = m->n_components;
  double *cov = nle__calloc(ctx, d * d, sizeof(double), "the covariance matrix");
  double *w = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
  double *z = nle__malloc(ctx, d * (size_t)nc * sizeof(double), "eigenvectors");
  lapack_int *support = nle__malloc(ctx, 2 * (size_t)nc * sizeof(lapack_int), "eigenvector support");
  nle_status s = (cov && w && z && support) ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = covariance(ctx, Y, m->mean, n_total, reach, cov);
  if (!s) {
    double total = 0.0;
    for (size_t j = 0; j < d; j++) total += cov[j * d + j];
    m->total_variance = total;
    lapack_int found = 0;
    lapack_int info = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'I', 'U', (lapack_int)d, cov, (lapack_int)d, 0.0,
                                     0.0, (lapack_int)(d - (size_t)nc + 1), (lapack_int)d, 0.0, &found, w, z,
                                     (lapack_int)nc, support);
    if (info != 0 || found != nc)
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "PCA: LAPACK dsyevr failed (info %d)", (int)info);
    /* dsyevr returns ascending eigenvalues; components go largest first. */
    for (int c = 0; !s && c < nc; c++) {
      int src = nc - 1 - c;
      m->explained_variance[c] = w[src] > 0.0 ? w[src] : 0.0;
      for (size_t j = 0; j < d; j++) m->components[(size_t)c * d + j] = z[j * (size_t)nc + (size_t)src];
    }
  }
  free(cov);
  free(w);
  free(z);
  free(support);
  return s;
}

/* out (N x l) = (Y - 1 mean^T) M (M: D x l, or its transpose l x D when
 * transposed), one row block at a time: each output row is one block's. */
typedef struct {
  const nle_matf *Y;
  const double *mean, *M;
  size_t l;
  int transposed;
  double *out;
} apply_job;

static int apply_block(void *job, size_t b, void *scratch) {
  apply_job *j = job;
  size_t n = j->Y->rows, d = j->Y->cols, r0 = b * PCA_BLOCK, rows = n - r0 < PCA_BLOCK ? n - r0 : PCA_BLOCK;
  double *block = scratch;
  centred_block(j->Y, j->mean, r0, rows, block);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, j->transposed ? CblasTrans : CblasNoTrans, (int)rows, (int)j->l, (int)d,
              1.0, block, (int)d, j->M, j->transposed ? (int)d : (int)j->l, 0.0, j->out + r0 * j->l, (int)j->l);
  return 0;
}

static nle_status apply_centred(nle_ctx *ctx, const nle_matf *Y, const double *mean, const double *M, size_t l,
                                int transposed, double *out) {
  size_t n = Y->rows, d = Y->cols;
  apply_job job = {Y, mean, M, l, transposed, out};
  return nle__for_blocks(ctx, "PCA projection", (n + PCA_BLOCK - 1) / PCA_BLOCK,
                         nle__threads_for(ctx, (double)n * d * l), (size_t)PCA_BLOCK * d * sizeof(double), apply_block,
                         &job);
}

/* out (D x l) = (Y - 1 mean^T)^T Q over every rank's rows, Q (this rank's
 * rows, N x l in all) with orthonormal columns: a block's partial is at
 * most SUM_BLOCK reach in magnitude. */
static nle_status apply_centred_t(nle_ctx *ctx, const nle_matf *Y, const double *mean, const double *Q, size_t l,
                                  size_t n_total, double reach, double *out) {
  return fixed_point_product(ctx, Y, mean, Q, l, n_total, (double)SUM_BLOCK * reach, out);
}

/* In-place orthonormal basis of the columns of A (rows x cols, row-major). */
static nle_status orthonormalise(nle_ctx *ctx, double *A, size_t rows, size_t cols, double *tau) {
  lapack_int info = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)rows, (lapack_int)cols, A, (lapack_int)cols, tau);
  if (!info)
    info = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)rows, (lapack_int)cols, (lapack_int)cols, A,
                          (lapack_int)cols, tau);
  return info ? nle__fail(ctx, NLE_ERR_NUMERIC, "PCA: QR factorisation failed (info %d)", (int)info) : NLE_OK;
}

/* The tall range basis (every rank's rows, N x l) orthonormalised by a
 * QR of each SUM_BLOCK of rows, then of their R factors stacked in block
 * order on every rank (Demmel et al.'s TSQR, one level): each block's
 * factor and the stack's are the same bits on any number of ranks. */
typedef struct {
  double *A;
  size_t n, l;
  double *tau, *stack, *q_stack; /* per block: l scalars; l x l R; the stack's Q rows */
  lapack_int failed;
} tsqr_job;

static size_t block_rows(size_t n, size_t b) { return (b + 1) * SUM_BLOCK < n ? SUM_BLOCK : n - b * SUM_BLOCK; }

static int tsqr_factor_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  tsqr_job *j = job;
  size_t l = j->l, rows = block_rows(j->n, b), k = rows < l ? rows : l;
  double *a = j->A + b * SUM_BLOCK * l, *r = j->stack + b * l * l;
  lapack_int info = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)rows, (lapack_int)l, a, (lapack_int)l, j->tau + b * l);
  memset(r, 0, l * l * sizeof(double)); /* a short block's R: its k rows, zeros below */
  for (size_t i = 0; i < k; i++) memcpy(r + i * l + i, a + i * l + i, (l - i) * sizeof(double));
  if (!info) info = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)rows, (lapack_int)k, (lapack_int)k, a, (lapack_int)l,
                                   j->tau + b * l);
  if (info) j->failed = info;
  return 0;
}

static int tsqr_apply_block(void *job, size_t b, void *scratch) {
  tsqr_job *j = job;
  size_t l = j->l, rows = block_rows(j->n, b), k = rows < l ? rows : l;
  double *a = j->A + b * SUM_BLOCK * l, *tmp = scratch;
  /* the block's Q (rows x k) times its k rows of the stack's Q (k x l) */
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)l, (int)k, 1.0, a, (int)l,
              j->q_stack + b * l * l, (int)l, 0.0, tmp, (int)l);
  memcpy(a, tmp, rows * l * sizeof(double));
  return 0;
}

static nle_status orthonormalise_rows(nle_ctx *ctx, double *A, size_t n, size_t n_total, size_t l) {
  size_t blocks = sum_blocks_of(n), all = sum_blocks_of(n_total);
  tsqr_job job = {A, n, l, nle__malloc(ctx, (blocks ? blocks : 1) * l * sizeof(double), "QR scalars"),
                  nle__malloc(ctx, (blocks ? blocks : 1) * l * l * sizeof(double), "the QR factors"),
                  nle__malloc(ctx, all * l * l * sizeof(double), "the stacked QR factors"), 0};
  double *tau = nle__malloc(ctx, l * sizeof(double), "QR scalars");
  nle_status s = job.tau && job.stack && job.q_stack && tau ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle__for_blocks(ctx, "PCA range", blocks, nle__threads_for(ctx, (double)n * l * l), 0, tsqr_factor_block,
                              &job);
  if (!s && job.failed) s = nle__fail(ctx, NLE_ERR_NUMERIC, "PCA: QR factorisation failed (info %d)", (int)job.failed);
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, job.stack, blocks * l * l * sizeof(double), job.q_stack, NULL);
  if (!s) s = orthonormalise(ctx, job.q_stack, all * l, l, tau);
  if (!s) {
    /* this rank's blocks' rows of the stack's Q */
    size_t first = nle__rank_rows(n_total, nle__ranks(ctx), nle__rank(ctx)).begin / SUM_BLOCK;
    job.q_stack += first * l * l;
    s = nle__for_blocks(ctx, "PCA range", blocks, nle__threads_for(ctx, (double)n * l * l),
                        (size_t)SUM_BLOCK * l * sizeof(double), tsqr_apply_block, &job);
    job.q_stack -= first * l * l;
  }
  free(job.tau);
  free(job.stack);
  free(job.q_stack);
  free(tau);
  return nle__comm_agree(ctx, s);
}

typedef struct {
  const nle_matf *Y;
  const double *mean;
  double *sums; /* per SUM_BLOCK: its sum of squares */
} squares_job;

static int squares_block(void *job, size_t b, void *scratch) {
  squares_job *j = job;
  size_t n = j->Y->rows, d = j->Y->cols, r1 = (b + 1) * SUM_BLOCK < n ? (b + 1) * SUM_BLOCK : n;
  double *block = scratch, total = 0.0;
  for (size_t r = b * SUM_BLOCK; r < r1; r += PCA_BLOCK) {
    size_t rows = r1 - r < PCA_BLOCK ? r1 - r : PCA_BLOCK;
    centred_block(j->Y, j->mean, r, rows, block);
    for (size_t e = 0; e < rows * d; e++) total += block[e] * block[e];
  }
  j->sums[b] = total;
  return 0;
}

/* The total variance over every rank's rows: per SUM_BLOCK, summed in
 * fixed point. */
static nle_status total_variance(nle_ctx *ctx, const nle_matf *Y, const double *mean, size_t n_total, double *out) {
  size_t blocks = sum_blocks_of(Y->rows);
  squares_job job = {Y, mean, nle__malloc(ctx, (blocks ? blocks : 1) * sizeof(double), "the total variance")};
  nle_status s = nle__comm_agree(ctx, job.sums ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__for_blocks(ctx, "PCA variance", blocks, nle__threads_for(ctx, (double)Y->rows * Y->cols),
                              (size_t)PCA_BLOCK * Y->cols * sizeof(double), squares_block, &job);
  s = nle__comm_agree(ctx, s);
  double total = 0.0;
  if (!s) s = nle__comm_sum_blocks(ctx, job.sums, blocks, 1, &total);
  *out = total / (double)(n_total - 1);
  free(job.sums);
  return s;
}

/* Halko et al.'s algorithms 4.4 and 5.1 on every rank's rows: the range
 * basis Q (N x l) held by rows, A^T Q summed over ranks, the small factors
 * (D x l, l x D) the same on every rank. */
static nle_status pca_randomized(nle_ctx *ctx, const nle_matf *Y, const nle_pca_opts *o, nle_pca_model *m,
                                 size_t n_total, double reach) {
  size_t n = Y->rows, d = Y->cols, nc = (size_t)m->n_components;
  size_t l = nc + (size_t)(o->oversample > 0 ? o->oversample : 0);
  if (l > d) l = d;
  if (l > n_total) l = n_total;
  double *omega = nle__malloc(ctx, d * l * sizeof(double), "the random test matrix");
  double *q = nle__malloc(ctx, (n ? n : 1) * l * sizeof(double), "the range basis");
  double *tau = nle__malloc(ctx, l * sizeof(double), "QR scalars");
  double *sv = nle__malloc(ctx, l * sizeof(double), "singular values");
  double *vt = nle__malloc(ctx, l * d * sizeof(double), "right singular vectors");
  double *superb = nle__malloc(ctx, l * sizeof(double), "SVD workspace");
  nle_status s = (omega && q && tau && sv && vt && superb) ? NLE_OK : NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
  if (!s) {
    for (size_t i = 0; i < d; i++) {
      nle_rng r;
      nle_rng_init(&r, nle_ctx_seed(ctx), (uint64_t)i);
      for (size_t j = 0; j < l; j++) omega[i * l + j] = nle_rng_normal(&r);
    }
    s = nle__comm_agree(ctx, apply_centred(ctx, Y, m->mean, omega, l, 0, q));
  }
  if (!s) s = orthonormalise_rows(ctx, q, n, n_total, l);
  for (int it = 0; !s && it < o->power_iters; it++) {
    s = apply_centred_t(ctx, Y, m->mean, q, l, n_total, reach, omega); /* omega now holds A^T Q (D x l) */
    if (!s) s = orthonormalise(ctx, omega, d, l, tau);
    if (!s) s = nle__comm_agree(ctx, apply_centred(ctx, Y, m->mean, omega, l, 0, q));
    if (!s) s = orthonormalise_rows(ctx, q, n, n_total, l);
    if (!s) s = nle__progress(ctx, "PCA randomized", (double)(it + 1) / ((double)o->power_iters + 1.0));
  }
  if (!s) {
    /* B = Q^T A (l x D) is the transpose of A^T Q; its SVD gives the components. */
    s = apply_centred_t(ctx, Y, m->mean, q, l, n_total, reach, omega);
    double *bt = s ? NULL : nle__malloc(ctx, l * d * sizeof(double), "the projected matrix");
    if (!s && !bt) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < l; i++)
      for (size_t j = 0; j < d; j++) bt[i * d + j] = omega[j * l + i];
    if (!s) {
      lapack_int info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'S', (lapack_int)l, (lapack_int)d, bt,
                                       (lapack_int)d, sv, NULL, 1, vt, (lapack_int)d, superb);
      if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "PCA: LAPACK dgesvd failed (info %d)", (int)info);
    }
    free(bt);
    for (size_t c = 0; !s && c < nc; c++) {
      m->explained_variance[c] = sv[c] * sv[c] / (double)(n_total - 1);
      memcpy(m->components + c * d, vt + c * d, d * sizeof(double));
    }
  }
  /* The total variance is known exactly without the full spectrum. */
  if (!s) s = total_variance(ctx, Y, m->mean, n_total, &m->total_variance);
  free(omega);
  free(q);
  free(tau);
  free(sv);
  free(vt);
  free(superb);
  return s;
}

/* Randomized only for wide data and few components, where it is much
 * cheaper than the D x D covariance and as accurate in practice. */
static nle_pca_solver choose_solver(size_t n, size_t d, int nc) {
  if (d > 1000 && n > 1000 && (size_t)nc * 10 <= d) return NLE_PCA_RANDOMIZED;
  return NLE_PCA_EXACT;
}

static void fix_signs(nle_pca_model *m) {
  size_t d = (size_t)m->dim;
  for (int c = 0; c < m->n_components; c++) {
    double *v = m->components + (size_t)c * d;
    size_t arg = 0;
    for (size_t j = 1; j < d; j++)
      if (fabs(v[j]) > fabs(v[arg])) arg = j;
    if (v[arg] < 0)
      for (size_t j = 0; j < d; j++) v[j] = -v[j];
  }
}

nle_status nle_pca_fit(nle_ctx *ctx, const nle_matf *Y, const nle_pca_opts *opts, nle_pca_model **model) {
  *model = NULL;
  nle_pca_opts defaults;
  if (!opts) {
    nle_pca_opts_init(&defaults);
    opts = &defaults;
  }
  /* with a communicator, Y is this rank's rows of N (comm.h) */
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, Y->rows, "PCA", &rows);
  if (s) return s;
  size_t n = rows.n, d = Y->cols;
  if (n < 2) return nle__fail(ctx, NLE_ERR_ARG, "PCA needs at least 2 points, got %zu", n);
  size_t most = n < d ? n : d;
  if (opts->n_components < 1 || (size_t)opts->n_components > most)
    return nle__fail(ctx, NLE_ERR_ARG, "PCA: {@dim=%d} components requested, must be in [1, min(N, D) = %zu]",
                     opts->n_components, most);
  if (opts->power_iters < 0) return nle__fail(ctx, NLE_ERR_ARG, "PCA: {@power-iters=%d} must be >= 0", opts->power_iters);
  if (opts->oversample < 0) return nle__fail(ctx, NLE_ERR_ARG, "PCA: {@oversample=%d} must be >= 0", opts->oversample);
  if (!strcmp(nle_pca_solver_name(opts->solver), "unknown"))
    return nle__fail(ctx, NLE_ERR_ARG, "PCA: {@solver} has no value %d (auto, exact or randomized)", (int)opts->solver);
  nle_pca_solver solver = opts->solver == NLE_PCA_AUTO ? choose_solver(n, d, opts->n_components) : opts->solver;
  size_t l = (size_t)opts->n_components + (size_t)opts->oversample;
  /* randomized: this rank's rows of the range basis, the D x l factors,
   * the splits' integer partials, every block's R factor stacked */
  double need = solver == NLE_PCA_EXACT ? (double)d * d * 8 * 1.5
                                        : ((double)(Y->rows + 2 * d) * (double)l + (double)PCA_SPLITS * d * l +
                                           2.0 * (double)sum_blocks_of(n) * (double)l * l) * 8;
  s = nle__check_memory(ctx, need + (double)PCA_BLOCK * d * 8, "PCA workspace");
  if (s) return s;
  nle_pca_model *m = nle__calloc(ctx, 1, sizeof *m, "the PCA model");
  if (!m) return NLE_ERR_NOMEM;
  m->n_samples = (int64_t)n;
  m->dim = (int32_t)d;
  m->n_components = opts->n_components;
  m->whiten = opts->whiten;
  m->solver_used = solver;
  m->mean = nle__calloc(ctx, d, sizeof(double), "the mean");
  m->components = nle__calloc(ctx, (size_t)m->n_components * d, sizeof(double), "components");
  m->explained_variance = nle__calloc(ctx, (size_t)m->n_components, sizeof(double), "variances");
  s = (m->mean && m->components && m->explained_variance) ? NLE_OK : NLE_ERR_NOMEM;
  double reach = 0.0;
  if (!s) s = column_extent(ctx, Y, n, opts->center, m->mean, &reach);
  /* the LAPACK calls on the small matrices single-threaded: their results
   * depend on BLAS's thread count */
  int blas_prev = nle__blas_set_threads(1);
  if (!s) s = solver == NLE_PCA_EXACT ? pca_exact(ctx, Y, n, reach, m) : pca_randomized(ctx, Y, opts, m, n, reach);
  nle__blas_set_threads(blas_prev);
  if (s) {
    nle_pca_model_free(&m);
    return s;
  }
  fix_signs(m);
  double kept = 0.0;
  for (int c = 0; c < m->n_components; c++) kept += m->explained_variance[c];
  nle__log(ctx, 1, "PCA %zu x %zu -> %d (%s): %.4f of the variance", n, d, m->n_components,
           solver == NLE_PCA_EXACT ? "exact" : "randomized",
           m->total_variance > 0 ? kept / m->total_variance : 0.0);
  *model = m;
  return NLE_OK;
}

nle_status nle_pca_transform(nle_ctx *ctx, const nle_pca_model *m, const nle_matf *Y, nle_matd **X) {
  *X = NULL;
  if ((int64_t)Y->cols != m->dim)
    return nle__fail(ctx, NLE_ERR_ARG, "PCA transform: data have %zu columns, the model %d", Y->cols, m->dim);
  size_t n = Y->rows, nc = (size_t)m->n_components;
  nle_status s = nle_matd_alloc(ctx, n, nc, X);
  if (s) return s;
  s = apply_centred(ctx, Y, m->mean, m->components, nc, 1, (*X)->data);
  if (s) {
    nle_matd_free(X);
    return s;
  }
  if (m->whiten)
    for (size_t c = 0; c < nc; c++) {
      double scale = m->explained_variance[c] > 0 ? 1.0 / sqrt(m->explained_variance[c]) : 0.0;
      for (size_t i = 0; i < n; i++) (*X)->data[i * nc + c] *= scale;
    }
  return NLE_OK;
}

nle_status nle__pca_project(nle_ctx *ctx, int dims, size_t D, const double *mean, const double *components,
                            const nle_matf *Y, nle_matf **P) {
  nle_pca_model pm;
  memset(&pm, 0, sizeof pm);
  pm.n_components = dims;
  pm.dim = (int32_t)D;
  pm.mean = (double *)mean;
  pm.components = (double *)components;
  nle_matd *Pd = NULL;
  nle_status s = nle_pca_transform(ctx, &pm, Y, &Pd);
  if (!s) s = nle_matd_to_matf(ctx, Pd, P);
  nle_matd_free(&Pd);
  return s;
}
