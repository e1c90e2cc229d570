/* kpca.c — kernels and kernel PCA (dissertation sec. 4.6.4: K = Ybar^T
 * Ybar replaced by a positive-definite kernel, centred by eq. 4.18,
 * K-bar = K - 1_N K - K 1_N + 1_N K 1_N). The centring is applied inside
 * the eigensolver's product, K-bar x = K x - m (1.x) - 1 (m.x) + g 1 (1.x)
 * with m = K 1 / N and g = mean(m), so the dense centred N x N matrix is
 * never formed (SPEC G06-8) and a sparse kNN Gaussian kernel stays sparse. */
#include "mds_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

NLE__ENUM_NAMES(nle_pdkernel_name, nle_pdkernel_parse, nle_pdkernel_kind, NLE_PDKERNEL_MAP, NLE_PDK_COUNT, false)

enum { DENSE_MAX_N = 500, KBLOCK = 256, GAMMA_PAIRS = 10000 };

void nle_pdkernel_init(nle_pdkernel *k) {
  memset(k, 0, sizeof *k);
  k->kind = NLE_PDK_GAUSSIAN;
  k->gamma = NLE_AUTO;
  k->coef0 = 1.0;
  k->degree = 3;
}

void nle_kpca_opts_init(nle_kpca_opts *o) {
  memset(o, 0, sizeof *o);
  o->dim = 2;
  nle_pdkernel_init(&o->kernel);
}

void nle_kpca_result_free(nle_kpca_result **r) {
  if (!r || !*r) return;
  nle_matd_free(&(*r)->X);
  free((*r)->eigenvalues);
  nle_projection_model_free(&(*r)->model);
  free(*r);
  *r = NULL;
}

/* exp(x) for x <= 0, to about an ulp, written so that a loop of it
 * vectorises (libm's exp does not without -ffast-math): x = k ln2 + r,
 * |r| <= ln2 / 2 (Cody-Waite, ln2 in two parts), e^r by its Taylor series
 * to r^13 (remainder below 1e-17), times 2^k built in the exponent bits. */
static inline double exp_nonpositive(double x) {
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

/* The kernel from the inner product and the squared norms. */
static inline double kernel_of(const nle_pdkernel *k, double dot, double na, double nb) {
  switch (k->kind) {
  case NLE_PDK_GAUSSIAN: {
    double d2 = na + nb - 2.0 * dot;
    return exp_nonpositive(-k->gamma * (d2 > 0 ? d2 : 0.0));
  }
  case NLE_PDK_POLYNOMIAL: return pow(k->gamma * dot + k->coef0, k->degree);
  default: return dot;
  }
}

/* A block of Gaussian kernel values from inner products and norms. */
NLE_HOT static void gaussian_row(double gamma, const double *dot, double na, const double *nb, size_t cols,
                                 double *out) {
#pragma omp simd
  for (size_t c = 0; c < cols; c++) {
    double d2 = na + nb[c] - 2.0 * dot[c];
    out[c] = exp_nonpositive(-gamma * (d2 > 0 ? d2 : 0.0));
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
        gaussian_row(j->k->gamma, g, qn, rn, cols, (double *)j->out + at);
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

nle_status nle__kernel_matrix(nle_ctx *ctx, const nle_matf *Y, const nle_pdkernel *k, double **K) {
  size_t n = Y->rows;
  double bytes = (double)n * (double)n * sizeof(double);
  nle_status s = nle__check_memory(ctx, bytes, "the N x N kernel matrix");
  if (s)
    return nle__fail(ctx, s, "the N x N kernel matrix of %zu points needs %.2f GiB, over the memory cap (%.2f GiB): "
                     "a sparse kernel on the kNN graph needs N k (a kernel's neighbour count k > 0)", n,
                     bytes / 1073741824.0, (double)nle__memory_cap(ctx) / 1073741824.0);
  *K = nle__malloc_huge(n * n * sizeof(double));
  if (!*K) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for the N x N kernel matrix");
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

/* K-bar x, K dense (BLAS) or sparse (CSR, with the unit diagonal). */
typedef struct {
  size_t n;
  const double *K;
  const nle_csr *W;
  const double *m;
  double g;
  int threads;
} centred_kernel;

static int centred_apply(void *user, const double *x, double *y) {
  centred_kernel *c = user;
  size_t n = c->n;
  if (c->K) cblas_dsymv(CblasRowMajor, CblasUpper, (int)n, 1.0, c->K, (int)n, x, 1, 0.0, y, 1);
  else {
    const double *v = c->W->val;
#pragma omp parallel for schedule(static) num_threads(c->threads)
    for (size_t i = 0; i < n; i++) {
      double acc = x[i]; /* k(x, x) = 1 */
      for (int64_t q = c->W->rowptr[i]; q < c->W->rowptr[i + 1]; q++) acc += v[q] * x[c->W->colind[q]];
      y[i] = acc;
    }
  }
  double sx = 0, mx = 0;
  for (size_t i = 0; i < n; i++) sx += x[i], mx += c->m[i] * x[i];
  for (size_t i = 0; i < n; i++) y[i] += -c->m[i] * sx - mx + c->g * sx;
  return 0;
}

/* The sparse Gaussian kernel: exp(-gamma d^2) on the kNN graph, averaged
 * with its transpose (as the graph methods' W; the diagonal implicit). */
static nle_status sparse_kernel(nle_ctx *ctx, const nle_matf *Y, const nle_pdkernel *k, nle_csr **W) {
  if ((size_t)k->neighbors >= Y->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "kpca: %d neighbours of %zu points (k < N)", k->neighbors, Y->rows);
  nle_graph_opts go;
  nle_graph_opts_init(&go);
  go.k = k->neighbors;
  go.pca_dims = 0; /* the kernel's own distances */
  go.weights = NLE_AFF_GAUSSIAN;
  go.sigma = 1.0 / sqrt(2.0 * k->gamma); /* exp(-d^2 / (2 sigma^2)) = exp(-gamma d^2) */
  go.symmetrize = NLE_SYMMETRIZE_AVERAGE;
  nle_graph_result *graph = NULL;
  nle_status s = nle_graph_build(ctx, Y, &go, &graph);
  if (!s) *W = graph->W, graph->W = NULL;
  nle_graph_result_free(&graph);
  return s;
}

nle_status nle_kpca(nle_ctx *ctx, const nle_matf *Y, const nle_matd *Kin, const nle_kpca_opts *opts,
                    nle_kpca_result **result) {
  if (!result) return nle__fail(ctx, NLE_ERR_ARG, "nle_kpca: NULL result");
  *result = NULL;
  nle_kpca_opts o;
  if (opts) o = *opts;
  else nle_kpca_opts_init(&o);
  bool pre = o.kernel.kind == NLE_PDK_PRECOMPUTED;
  if ((int)o.kernel.kind < 0 || o.kernel.kind >= NLE_PDK_COUNT)
    return nle__fail(ctx, NLE_ERR_ARG, "kpca: unknown kernel %d", (int)o.kernel.kind);
  if (pre ? !Kin : !Y)
    return nle__fail(ctx, NLE_ERR_ARG, pre ? "kpca: a precomputed kernel needs the kernel matrix"
                                            : "kpca: the %s kernel needs the points", nle_pdkernel_name(o.kernel.kind));
  size_t n = pre ? Kin->rows : Y->rows;
  if (pre && Kin->cols != n) return nle__fail(ctx, NLE_ERR_VALUE, "kernel matrix: %zu x %zu, not square", n, Kin->cols);
  if (o.dim < 1 || (size_t)o.dim >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "kpca: {@dim=%s} components of %zu points (1 <= dim < N)", nle__int_text(o.dim).s, n);
  if (o.kernel.neighbors < 0 || (o.kernel.neighbors > 0 && o.kernel.kind != NLE_PDK_GAUSSIAN))
    return nle__fail(ctx, NLE_ERR_ARG, "kpca: a sparse kernel (on %d neighbours) is Gaussian, not {@kernel=%s}", o.kernel.neighbors,
                     nle_pdkernel_name(o.kernel.kind));
  if (o.kernel.kind == NLE_PDK_POLYNOMIAL && o.kernel.degree < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "kpca: polynomial {@degree=%d} must be >= 1", o.kernel.degree);
  if (o.keep_model && (pre || o.kernel.neighbors > 0))
    return nle__fail(ctx, NLE_ERR_ARG, "kpca: no out-of-sample map for a %s kernel (the dense kernels of points have "
                     "one)", pre ? "precomputed" : "sparse kNN");
  nle_status s = NLE_OK;
  for (size_t e = 0; pre && e < n * n; e++) {
    size_t i = e / n, j = e % n;
    if (!isfinite(Kin->data[e]) || Kin->data[e] != Kin->data[j * n + i])
      return nle__fail(ctx, NLE_ERR_VALUE, "kernel matrix: row %zu, column %zu is %g: a kernel matrix is finite "
                       "and symmetric", i, j, Kin->data[e]);
  }
  if (!pre) s = nle__check_finite_rows(ctx, "points", Y);
  if (!pre && !s) s = nle__kernel_resolve(ctx, Y, &o.kernel);
  if (s) return s;
  double t0 = nle_time_seconds();
  nle_kpca_result *r = nle__calloc(ctx, 1, sizeof *r, "the kernel PCA result");
  if (!r) return NLE_ERR_NOMEM;
  r->n = n;
  double *K = NULL, *m = nle__calloc(ctx, n, sizeof(double), "the kernel's means"), g = 0;
  nle_csr *W = NULL;
  size_t d = (size_t)o.dim;
  double *asc = nle__malloc(ctx, d * sizeof(double), "eigenvalues"), *V = nle__malloc(ctx, n * d * sizeof(double), "eigenvectors");
  if (!m || !asc || !V) s = NLE_ERR_NOMEM;
  bool opened = nle__stage_begin(ctx, "kernel PCA");
  if (!s && o.kernel.neighbors > 0) s = sparse_kernel(ctx, Y, &o.kernel, &W);
  else if (!s && pre) {
    s = nle__check_memory(ctx, (double)n * n * sizeof(double), "the kernel matrix");
    K = s ? NULL : nle__malloc(ctx, n * n * sizeof(double), "the kernel matrix");
    if (!s && !K) s = NLE_ERR_NOMEM;
    if (!s) memcpy(K, Kin->data, n * n * sizeof(double));
  } else if (!s) s = nle__kernel_matrix(ctx, Y, &o.kernel, &K);
  r->kernel_seconds = nle_time_seconds() - t0;
  if (!s) {
    r->sparse = W != NULL;
    r->nnz = W ? (size_t)W->nnz + n : n * n;
    for (size_t i = 0; i < n; i++) { /* m = K 1 / N (K symmetric) */
      double acc = 0;
      if (K)
        for (size_t j = 0; j < n; j++) acc += K[i * n + j];
      else {
        acc = 1.0;
        for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) acc += ((const double *)W->val)[q];
      }
      m[i] = acc / (double)n;
      g += m[i] / (double)n;
    }
  }
  double t1 = nle_time_seconds();
  centred_kernel op = {n, K, W, m, g, W ? nle__threads_for(ctx, (double)W->nnz) : 1};
  if (!s && K && n <= DENSE_MAX_N) { /* small: the centred matrix itself */
    double *C = nle__malloc(ctx, n * n * sizeof(double), "the centred kernel");
    if (!C) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (size_t j = 0; j < n; j++) C[i * n + j] = K[i * n + j] - m[i] - m[j] + g;
    if (!s) s = nle__eig_dense(ctx, "kernel PCA", n, C, n - d, d, asc, V);
    free(C);
  } else if (!s) {
    s = nle__lanczos(ctx, "kernel PCA", n, centred_apply, &op, (int)d, NLE__EIG_LARGEST, 0.0, asc, V);
  }
  r->eigen_seconds = nle_time_seconds() - t1;
  if (!s) s = nle__scale_eigenvectors(ctx, "kpca", n, d, asc, d - 1, V, d, &r->eigenvalues, &r->X);
  if (r->eigenvalues) r->n_eigenvalues = (int)d;
  if (!s && o.keep_model) { /* x(y) = Lambda^-1/2 V^T k-bar(y): a training point gets its row of X back */
    s = nle__projection_new(ctx, "kpca", NLE_MAP_KERNEL, n, Y->cols, d, Y, &r->model);
    if (!s) {
      r->model->kernel = o.kernel;
      r->model->grand = g;
      memcpy(r->model->mean, m, n * sizeof(double));
      for (size_t t = 0; t < d; t++)
        for (size_t i = 0; i < n; i++) r->model->A[t * n + i] = r->X->data[i * d + t] / r->eigenvalues[t];
    }
  }
  nle__stage_end(ctx, opened);
  free(K), free(m), free(asc), free(V);
  nle_csr_free(&W);
  if (s) {
    nle_kpca_result_free(&r);
    return s;
  }
  r->resolved = o;
  r->seconds = nle_time_seconds() - t0;
  *result = r;
  return NLE_OK;
}
