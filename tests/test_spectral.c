/* test_spectral.c — PCA against an independent dense reference (covariance
 * by definition, eigenvalues by cyclic Jacobi rotations). */
#include "harness.h"
#include "../src/spectral/spectral_internal.h"

#include <stdlib.h>
#include <string.h>

/* Cyclic Jacobi on a symmetric n x n matrix: eigenvalues in a's diagonal,
 * eigenvectors in v's columns. */
static void jacobi(double *a, double *v, int n) {
  for (int i = 0; i < n * n; i++) v[i] = (i % (n + 1)) == 0;
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0;
    for (int p = 0; p < n; p++)
      for (int q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
    if (off < 1e-26) break;
    for (int p = 0; p < n; p++)
      for (int q = p + 1; q < n; q++) {
        if (fabs(a[p * n + q]) < 1e-300) continue;
        double theta = (a[q * n + q] - a[p * n + p]) / (2 * a[p * n + q]);
        double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < n; k++) {
          double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; k++) {
          double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < n; k++) {
          double vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
  }
}

/* Data with a clear spectrum: independent columns scaled by 3/(j+1), mixed by
 * a Householder reflection (orthogonal, so no direction is lost), plus an
 * offset. */
static nle_matf *spectrum_data(size_t n, size_t d, uint64_t seed) {
  nle_matf *Y = test_random_matf(n, d, seed);
  double *row = malloc(d * sizeof *row), *v = malloc(d * sizeof *v), vv = 0;
  for (size_t j = 0; j < d; j++) {
    v[j] = cos(1.7 * (double)j + 0.4);
    vv += v[j] * v[j];
  }
  for (size_t i = 0; i < n; i++) {
    double dot = 0;
    for (size_t j = 0; j < d; j++) {
      row[j] = Y->data[i * d + j] * 3.0 / (double)(j + 1);
      dot += row[j] * v[j];
    }
    for (size_t j = 0; j < d; j++) Y->data[i * d + j] = (float)(row[j] - 2.0 * dot / vv * v[j] + 5.0 + (double)j);
  }
  free(row);
  free(v);
  return Y;
}

static void pca_vs_reference(void) {
  size_t n = 900, d = 12;
  nle_matf *Y = spectrum_data(n, d, 3);
  double mean[12] = {0}, cov[144] = {0}, vec[144];
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) mean[j] += Y->data[i * d + j] / (double)n;
  for (size_t i = 0; i < n; i++)
    for (size_t a = 0; a < d; a++)
      for (size_t b = 0; b < d; b++)
        cov[a * d + b] += (Y->data[i * d + a] - mean[a]) * (Y->data[i * d + b] - mean[b]) / (double)(n - 1);
  double total = 0;
  for (size_t j = 0; j < d; j++) total += cov[j * d + j];
  jacobi(cov, vec, (int)d);
  /* Sort the reference eigenvalues descending. */
  int order[12];
  for (int j = 0; j < 12; j++) order[j] = j;
  for (int a = 0; a < 12; a++)
    for (int b = a + 1; b < 12; b++)
      if (cov[order[b] * 13] > cov[order[a] * 13]) {
        int t = order[a];
        order[a] = order[b];
        order[b] = t;
      }
  nle_ctx *ctx = test_ctx(1);
  nle_pca_opts o;
  nle_pca_opts_init(&o);
  o.n_components = 5;
  nle_pca_solver solvers[2] = {NLE_PCA_EXACT, NLE_PCA_RANDOMIZED};
  for (int s = 0; s < 2; s++) {
    o.solver = solvers[s];
    nle_pca_model *m;
    nle_test_ok(nle_pca_fit(ctx, Y, &o, &m));
    nle_test(m->solver_used == solvers[s]);
    nle_test_rel(m->total_variance, total, 1e-10);
    for (int c = 0; c < 5; c++) {
      nle_test_rel(m->explained_variance[c], cov[order[c] * 13], s == 0 ? 1e-10 : 1e-8);
      double dot = 0, big = 0;
      for (size_t j = 0; j < d; j++) {
        dot += m->components[c * d + j] * vec[j * d + (size_t)order[c]];
        if (fabs(m->components[c * d + j]) > fabs(big)) big = m->components[c * d + j];
      }
      nle_test_rel(fabs(dot), 1.0, 1e-7);
      nle_test(big > 0); /* sign convention */
    }
    for (size_t j = 0; j < d; j++) nle_test_rel(m->mean[j], mean[j], 1e-12);
    nle_pca_model_free(&m);
  }
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Projections are uncorrelated with the component variances; whitening gives
 * unit variances; translating the data changes nothing. */
static void pca_transform_properties(void) {
  size_t n = 600, d = 8;
  nle_matf *Y = spectrum_data(n, d, 8);
  nle_ctx *ctx = test_ctx(1);
  nle_pca_opts o;
  nle_pca_opts_init(&o);
  o.n_components = 3;
  for (int whiten = 0; whiten < 2; whiten++) {
    o.whiten = whiten;
    nle_pca_model *m;
    nle_matd *X;
    nle_test_ok(nle_pca_fit(ctx, Y, &o, &m));
    nle_test_ok(nle_pca_transform(ctx, m, Y, &X));
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) {
        double c = 0;
        for (size_t i = 0; i < n; i++) c += X->data[i * 3 + (size_t)a] * X->data[i * 3 + (size_t)b];
        c /= (double)(n - 1);
        double want = a != b ? 0.0 : whiten ? 1.0 : m->explained_variance[a];
        nle_test(fabs(c - want) <= 1e-6 * (fabs(want) + 1.0));
      }
    if (!whiten) {
      nle_pca_model *m2;
      for (size_t i = 0; i < n * d; i++) Y->data[i] += 64.0f; /* exact in float */
      nle_test_ok(nle_pca_fit(ctx, Y, &o, &m2));
      for (int c = 0; c < 3; c++) nle_test_rel(m2->explained_variance[c], m->explained_variance[c], 1e-5);
      for (size_t i = 0; i < n * d; i++) Y->data[i] -= 64.0f;
      nle_pca_model_free(&m2);
    }
    nle_matd_free(&X);
    nle_pca_model_free(&m);
  }
  o.n_components = 9;
  nle_pca_model *m = NULL;
  nle_test(nle_pca_fit(ctx, Y, &o, &m) == NLE_ERR_ARG && m == NULL);
  o.n_components = 2;
  o.solver = (nle_pca_solver)2; /* past NLE_PCA_RANDOMIZED */
  nle_test(nle_pca_fit(ctx, Y, &o, &m) == NLE_ERR_ARG && m == NULL && strstr(nle_ctx_error(ctx), "solver has no value 2"));
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}


static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A Gaussian kNN affinity graph of data (symmetric). */
static nle_csr *graph_of(nle_ctx *ctx, const nle_matf *Y, int k, double sigma) {
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = k;
  nle_csr *g = NULL, *W = NULL;
  nle_affinity_opts ao;
  nle_affinity_opts_init(&ao);
  ao.sigma = sigma;
  if (nle_knn_exact(ctx, Y, &ko, &g) || nle_affinity_graph(ctx, g, &ao, &W)) printf("  graph: %s\n", nle_ctx_error(ctx));
  nle_csr_free(&g);
  return W;
}

/* ARPACK's smallest and largest Laplacian eigenvalues (plain and normalised)
 * against cyclic Jacobi on the dense Laplacian; eigenvectors by their
 * residual; a graph of two components has two zero eigenvalues. */
static void laplacian_eigen_vs_dense(void) {
  nle_ctx *ctx = test_ctx(1);
  int n = 150;
  nle_matf *Y = test_random_matf((size_t)n, 3, 31);
  nle_csr *W = graph_of(ctx, Y, 8, 0.7);
  for (int normalised = 0; normalised <= 1; normalised++) {
    double *L = calloc((size_t)n * n, sizeof(double)), *V = malloc((size_t)n * n * sizeof(double)), deg[150] = {0};
    for (int i = 0; i < n; i++)
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) deg[i] += nle_csr_value(W, q);
    for (int i = 0; i < n; i++) {
      L[i * n + i] = normalised ? 1.0 : deg[i];
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
        int j = W->colind[q];
        double w = nle_csr_value(W, q);
        L[i * n + j] -= normalised ? w / sqrt(deg[i] * deg[j]) : w;
      }
    }
    double *Lcopy = malloc((size_t)n * n * sizeof(double)), ref[150];
    memcpy(Lcopy, L, (size_t)n * n * sizeof(double));
    jacobi(L, V, n);
    for (int i = 0; i < n; i++) ref[i] = L[i * n + i];
    qsort(ref, (size_t)n, sizeof(double), cmp_double);
    double small[6], large[3];
    nle_matd *U = NULL;
    nle_test_ok(nle_laplacian_smallest(ctx, W, normalised, 6, small, &U));
    nle_test_ok(nle_laplacian_largest(ctx, W, normalised, 3, large));
    for (int i = 0; i < 6; i++) nle_test(fabs(small[i] - ref[i]) <= 1e-8 * ref[n - 1]);
    for (int i = 0; i < 3; i++) nle_test(fabs(large[i] - ref[n - 3 + i]) <= 1e-8 * ref[n - 1]);
    double worst = 0;
    for (int t = 0; U && t < 6; t++)
      for (int i = 0; i < n; i++) {
        double r = -small[t] * U->data[i * 6 + t];
        for (int j = 0; j < n; j++) r += Lcopy[i * n + j] * U->data[j * 6 + t];
        worst = fmax(worst, fabs(r));
      }
    if (!nle_test(worst <= 1e-7 * ref[n - 1])) printf("  eigenvector residual %g\n", worst);
    nle_matd_free(&U);
    free(L);
    free(V);
    free(Lcopy);
  }
  /* Laplacian eigenmaps of a connected graph, and of two far-apart blobs. */
  nle_matd *X = NULL;
  int comps = 0;
  nle_test_ok(nle_laplacian_eigenmap(ctx, W, 2, &X, &comps));
  nle_test(comps == 1 && X && X->rows == (size_t)n && X->cols == 2);
  nle_matd_free(&X);
  for (int i = 0; i < n / 2; i++) Y->data[i * 3] += 100.0f;
  nle_csr *W2 = graph_of(ctx, Y, 8, 0.7);
  double two[3];
  nle_test_ok(nle_laplacian_smallest(ctx, W2, 0, 3, two, NULL));
  nle_test(fabs(two[0]) < 1e-8 && fabs(two[1]) < 1e-8 && two[2] > 1e-4);
  nle_test_ok(nle_laplacian_eigenmap(ctx, W2, 2, &X, &comps));
  nle_test(comps == 2);
  nle_matd_free(&X);
  nle_csr_free(&W2);
  nle_csr_free(&W);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The parallel supernodal solve against the sparse matrix itself (residual)
 * and against cholmod_solve, for 1, 2, 3 and 11 right-hand sides; the same
 * bits on 1 and 2 threads. Points in three far clusters make the tree's top
 * separators small and its subtrees uneven. */
static void factor_solve_vs_cholmod(void) {
  for (int shape = 0; shape < 2; shape++) {
    nle_ctx *ctx = test_ctx(2);
    int n = 4000;
    nle_matf *Y = test_random_matf((size_t)n, 3, 57 + shape);
    if (shape == 1)
      for (int i = 0; i < n; i++) Y->data[i * 3] += 50.0f * (float)(i % 3);
    nle_csr *W = graph_of(ctx, Y, 12, 0.5);
    cholmod_common cc;
    cholmod_l_start(&cc);
    cc.print = 0;
    cholmod_factor *L = NULL;
    double shift = 1e-6;
    nle_test_ok(nle__laplacian_factor(ctx, &cc, W, 0, 4.0, shift, &L));
    nle__factor_solver *f = NULL;
    nle_test_ok(nle__factor_solver_new(ctx, L, &f));
    nle_test(f != NULL);
    int widths[] = {1, 2, 3, 11};
    for (int w = 0; f && w < 4; w++) {
      size_t d = (size_t)widths[w];
      double *B = malloc((size_t)n * d * sizeof(double)), *X1 = malloc((size_t)n * d * sizeof(double));
      double *X2 = malloc((size_t)n * d * sizeof(double));
      for (size_t i = 0; i < (size_t)n * d; i++) B[i] = sin(0.37 * (double)i) + 0.1 * (double)(i % 7);
      memcpy(X1, B, (size_t)n * d * sizeof(double));
      memcpy(X2, B, (size_t)n * d * sizeof(double));
      nle_ctx_set_threads(ctx, 2);
      nle_test_ok(nle__factor_solve(ctx, f, X2, d));
      nle_ctx_set_threads(ctx, 1);
      nle_test_ok(nle__factor_solve(ctx, f, X1, d));
      nle_test(memcmp(X1, X2, (size_t)n * d * sizeof(double)) == 0);
      /* residual (4 (D - W) + shift I) x - b, relative to |A| |x| */
      double res = 0, scale = 0, diff = 0, ref = 0;
      for (int i = 0; i < n; i++) {
        double deg = 0;
        for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
          if (W->colind[q] != i) deg += nle_csr_value(W, q);
        for (size_t t = 0; t < d; t++) {
          double ax = (4.0 * deg + shift) * X1[i * d + t], mag = fabs(ax);
          for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
            if (W->colind[q] != i) {
              ax -= 4.0 * nle_csr_value(W, q) * X1[(size_t)W->colind[q] * d + t];
              mag += fabs(4.0 * nle_csr_value(W, q) * X1[(size_t)W->colind[q] * d + t]);
            }
          res = fmax(res, fabs(ax - B[i * d + t]));
          scale = fmax(scale, mag);
        }
      }
      if (!nle_test(res <= 1e-12 * scale)) printf("  d %zu: residual %g of %g\n", d, res, scale);
      cholmod_dense *Bc = cholmod_l_allocate_dense((size_t)n, d, (size_t)n, CHOLMOD_REAL, &cc);
      for (int i = 0; i < n; i++)
        for (size_t t = 0; t < d; t++) ((double *)Bc->x)[t * (size_t)n + (size_t)i] = B[i * d + t];
      cholmod_dense *Xc = cholmod_l_solve(CHOLMOD_A, L, Bc, &cc);
      for (int i = 0; Xc && i < n; i++)
        for (size_t t = 0; t < d; t++) {
          double want = ((double *)Xc->x)[t * (size_t)n + (size_t)i];
          diff = fmax(diff, fabs(X1[i * d + t] - want));
          ref = fmax(ref, fabs(want));
        }
      if (!nle_test(Xc && diff <= 1e-9 * ref)) printf("  d %zu: against CHOLMOD %g of %g\n", d, diff, ref);
      cholmod_l_free_dense(&Xc, &cc);
      cholmod_l_free_dense(&Bc, &cc);
      free(B);
      free(X1);
      free(X2);
    }
    nle__factor_solver_free(&f);
    cholmod_l_free_factor(&L, &cc);
    cholmod_l_finish(&cc);
    nle_csr_free(&W);
    nle_matf_free(&Y);
    nle_ctx_free(&ctx);
  }
}

const nle_test_case spectral_tests[] = {{"spectral/laplacian_eigen_vs_dense", laplacian_eigen_vs_dense},
                                        {"spectral/pca_vs_reference", pca_vs_reference},
                                        {"spectral/pca_transform_properties", pca_transform_properties},
                                        {"spectral/factor_solve_vs_cholmod", factor_solve_vs_cholmod},
                                        {NULL, NULL}};
