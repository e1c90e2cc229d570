/* kpca.c — kernel PCA (dissertation sec. 4.6.4: K = Ybar^T Ybar replaced
 * by a positive-definite kernel, centred by eq. 4.18, K-bar = K - 1_N K -
 * K 1_N + 1_N K 1_N; the kernels themselves are in mds_base.c). The
 * centring is applied inside the eigensolver's product, K-bar x = K x -
 * m (1.x) - 1 (m.x) + g 1 (1.x) with m = K 1 / N and g = mean(m), so the
 * dense centred N x N matrix is never formed (SPEC G06-8) and a sparse kNN
 * Gaussian kernel stays sparse. */
#include "mds_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { DENSE_MAX_N = 500 };

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

/* K-bar x, K dense (BLAS) or sparse (CSR, with the unit diagonal). */
typedef struct {
  size_t n;
  const double *K;
  bool packed; /* K's upper triangle packed by rows (nle__packed_symv) */
  const nle_csr *W;
  const double *m;
  double g;
  int threads;
  double *work; /* the packed product's (NLE__PACKED_BLOCKS + 1) n */
} centred_kernel;

/* Y += the centring's terms for an n x b block X (Y = K X on entry):
 * -m (1.x) - 1 (m.x) + g 1 (1.x), column by column. */
static void centre_columns(const centred_kernel *c, const double *X, double *Y, size_t b) {
  for (size_t t = 0; t < b; t++) {
    double sx = 0, mx = 0;
    for (size_t i = 0; i < c->n; i++) sx += X[i * b + t], mx += c->m[i] * X[i * b + t];
    for (size_t i = 0; i < c->n; i++) Y[i * b + t] += -c->m[i] * sx - mx + c->g * sx;
  }
}

/* Y = K-bar X for the packed K and an n x b block X: the kernel read once
 * for the b columns. */
static int centred_block(void *user, const double *X, double *Y, size_t b) {
  centred_kernel *c = user;
  nle__packed_symm(c->n, c->K, X, Y, b, c->work, c->threads);
  centre_columns(c, X, Y, b);
  return 0;
}

static int centred_apply(void *user, const double *x, double *y) {
  centred_kernel *c = user;
  size_t n = c->n;
  if (c->K && c->packed) nle__packed_symv(n, c->K, x, y, c->work, c->threads);
  else if (c->K) cblas_dsymv(CblasRowMajor, CblasUpper, (int)n, 1.0, c->K, (int)n, x, 1, 0.0, y, 1);
  else {
    const double *v = c->W->val;
#pragma omp parallel for schedule(static) num_threads(c->threads)
    for (size_t i = 0; i < n; i++) {
      double acc = x[i]; /* k(x, x) = 1 */
      for (int64_t q = c->W->rowptr[i]; q < c->W->rowptr[i + 1]; q++) acc += v[q] * x[c->W->colind[q]];
      y[i] = acc;
    }
  }
  centre_columns(c, x, y, 1);
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
  bool packed = false; /* K: its upper triangle packed by rows */
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
  } else if (!s && o.kernel.kind == NLE_PDK_GAUSSIAN && n > DENSE_MAX_N) {
    s = nle__kernel_packed_gaussian(ctx, Y, o.kernel.gamma, &K);
    packed = true;
  } else if (!s) s = nle__kernel_matrix(ctx, Y, &o.kernel, &K);
  r->kernel_seconds = nle_time_seconds() - t0;
  int packed_threads = nle__threads_for(ctx, 0.5 * (double)n * (double)n);
  double *packed_work = NULL; /* the packed product's, for m and every Lanczos step */
  if (!s && packed) { /* m = K 1 / N by the same product */
    double *ones = nle__malloc(ctx, n * sizeof(double), "the kernel's means");
    packed_work = nle__malloc(ctx, (NLE__PACKED_BLOCKS + 1) * n * nle__block_width((int)d) * sizeof(double),
                              "kernel PCA");
    for (size_t i = 0; ones && i < n; i++) ones[i] = 1.0;
    if (!ones || !packed_work) s = NLE_ERR_NOMEM;
    else nle__packed_symv(n, K, ones, m, packed_work, packed_threads);
    free(ones);
    for (size_t i = 0; !s && i < n; i++) m[i] /= (double)n, g += m[i] / (double)n;
    r->nnz = n * n;
  } else if (!s) {
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
  centred_kernel op = {n, K, packed, W, m, g, W ? nle__threads_for(ctx, (double)W->nnz) : packed_threads,
                       packed_work};
  if (!s && K && n <= DENSE_MAX_N) { /* small: the centred matrix itself */
    double *C = nle__malloc(ctx, n * n * sizeof(double), "the centred kernel");
    if (!C) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (size_t j = 0; j < n; j++) C[i * n + j] = K[i * n + j] - m[i] - m[j] + g;
    if (!s) s = nle__eig_dense(ctx, "kernel PCA", n, C, n - d, d, asc, V);
    free(C);
  } else if (!s) {
    /* a short basis for a few components (ARPACK fills it before its
     * first convergence test): 10,000 Fashion-MNIST images, d = 2: 47 ->
     * 27 products; 4,000, d = 5: 56 -> 42; d = 10 keeps the default (24
     * vectors took 140, the default 71). Residuals of 1e-12 of the
     * eigenvalue, not machine precision (the spectral methods' default):
     * 27 -> 20 products, the map the same to 2e-15 of its largest entry. */
    int basis = d <= 5 ? 2 * (int)d + 4 : 0;
    /* The packed dense kernel by blocks: each product is a pass over
     * memory (400 MB at 10,000 points), and a block of b columns costs one
     * pass. 10,000 images, d = 2: Lanczos 20 passes, the block method 11
     * (22 columns, convergence tested after each block). A sparse kernel's
     * product is cheap and keeps Lanczos, which needs fewer columns. */
    if (packed && nle__block_width((int)d) <= NLE__PACKED_MAX_COLUMNS)
      s = nle__block_eigs(ctx, "kernel PCA", n, centred_block, &op, (double)n * (double)n, (int)d,
                          NLE__EIG_LARGEST, 1e-12, asc, V, NULL);
    else
      s = nle__lanczos_basis(ctx, "kernel PCA", n, centred_apply, &op, (int)d, NLE__EIG_LARGEST, 1e-12, basis,
                             asc, V);
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
  free(K), free(m), free(asc), free(V), free(op.work);
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
