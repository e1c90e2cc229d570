/* test_spectral.c — PCA against an independent dense reference (covariance
 * by definition, eigenvalues by cyclic Jacobi rotations). */
#include "harness.h"

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
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

const nle_test_case spectral_tests[] = {{"spectral/pca_vs_reference", pca_vs_reference},
                                        {"spectral/pca_transform_properties", pca_transform_properties},
                                        {NULL, NULL}};
