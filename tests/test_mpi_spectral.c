/* test_mpi_spectral.c — Laplacian eigenmaps, diffusion maps and spectral
 * clustering on rows shared out over ranks (issue 38,
 * docs/mpi_spectral.md). Each case runs the method alone (test_ctx, all
 * the rows, the single process's sparse Lanczos on the same operator) on
 * every rank, then with test_comm_ctx on this rank's rows (PARPACK), and
 * compares this rank's rows. Not bit for bit: PARPACK sums its inner
 * products over the ranks in arrival order; the tolerances are a few
 * orders above what the solver's tolerance (1e-12 of each eigenvalue's
 * residual) leaves, and each distributed eigenpair is checked on its own
 * against the graph's Laplacian (its residual). Alone (not under mpirun)
 * the second run is the single process again. */
#include "mpi_setting.h"
#include "../src/spectral/method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Three Gaussian-like clusters in 8-D, 2.5 apart along the first axis (one
 * connected kNN graph, its small eigenvalues apart), in shuffled order. */
static nle_matf *clusters(size_t n, uint64_t seed) {
  enum { D = 8 };
  nle_matf *Y = test_random_matf(n, D, seed);
  nle_rng r;
  nle_rng_init(&r, seed, 7);
  for (size_t i = 0; i < n; i++) {
    for (size_t t = 0; t < D; t++) { /* sums of uniforms: bell-shaped */
      double v = 0;
      for (int k = 0; k < 4; k++) v += nle_rng_uniform(&r) - 0.5;
      Y->data[i * D + t] = (float)v;
    }
    Y->data[i * D] += (float)(2.5 * (double)((i * 7919) % 3) - 2.5);
  }
  return Y;
}

static setting open_setting(uint64_t seed, size_t n) { return setting_of(seed, clusters(n, seed + 50)); }

/* The largest |a - b| over this rank's rows, and the largest |a|. */
static double rows_diff(const nle_matd *alone, const nle__row_range *mine, const nle_matd *part, double *scale) {
  double worst = 0;
  *scale = 0;
  size_t d = alone->cols;
  for (size_t i = 0; i < part->rows; i++)
    for (size_t t = 0; t < d; t++) {
      double a = alone->data[(mine->begin + i) * d + t];
      worst = fmax(worst, fabs(a - part->data[i * d + t]));
      *scale = fmax(*scale, fabs(a));
    }
  return worst;
}

/* Each column x of the whole embedding X against the random-walk
 * eigenproblem L x = lambda D x of W (the graph alone): the largest
 * ||(D - W) x - lambda D x|| / ||D x||. */
static double rw_residual(const nle_csr *W, const nle_matd *X, const double *lambda) {
  size_t n = X->rows, d = X->cols;
  double worst = 0;
  for (size_t t = 0; t < d; t++) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
      double deg = 0, wx = 0;
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
        if ((size_t)W->colind[q] != i) {
          deg += nle_csr_value(W, q);
          wx += nle_csr_value(W, q) * X->data[(size_t)W->colind[q] * d + t];
        }
      double xi = X->data[i * d + t], r = deg * xi - wx - lambda[t + 1] * deg * xi;
      num += r * r;
      den += deg * xi * deg * xi;
    }
    worst = fmax(worst, sqrt(num / den));
  }
  return worst;
}

/* LE on 4 row blocks and a short one (2 ranks: 3 and 2 blocks; 3 ranks:
 * 2, 2 and 1): eigenvalues, this rank's rows (signs by the same rule, not
 * aligned afterwards) and every pair's residual. */
static void le_rows(void) {
  enum { N = 4 * NLE__RANK_ROW_BLOCK + 300 };
  setting t = open_setting(21, N);
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.dim = 2;
  o.solver = NLE_EIGEN_SPARSE; /* alone: the same operator, by ARPACK */
  nle_spectral_input all = {.Y = t.Y}, part = {.Y = &t.part};
  nle_spectral_result *a = NULL, *b = NULL;
  nle_test_ok(nle_spectral_embed(t.one, NLE_SPECTRAL_LE, &all, &o, &a));
  nle_test_ok(nle_spectral_embed(t.ctx, NLE_SPECTRAL_LE, &part, &o, &b));
  if (a && b) {
    nle_test(b->n == N && b->X->rows == t.part.rows && b->n_eigenvalues == 3);
    for (int k = 0; k < 3; k++) nle_test(fabs(a->eigenvalues[k] - b->eigenvalues[k]) < 1e-10);
    double scale, diff = rows_diff(a->X, &t.mine, b->X, &scale);
    nle_test(diff <= 1e-7 * scale);
    /* the distributed pairs against the graph's own Laplacian */
    nle_matd *X = NULL;
    nle_test_ok(nle_matd_alloc(t.ctx, N, 2, &X));
    nle_test_ok(nle__comm_allgather_rows(t.ctx, b->X->data, N, 2 * sizeof(double), X->data));
    nle_graph_opts g;
    nle__spectral_graph_opts(&b->resolved, &g);
    nle_graph_result *gr = NULL;
    nle_test_ok(nle_graph_build(t.one, t.Y, &g, &gr));
    if (gr && X) nle_test(rw_residual(gr->W, X, b->eigenvalues) < 1e-8);
    nle_graph_result_free(&gr);
    nle_matd_free(&X);
  }
  nle_spectral_result_free(&a);
  nle_spectral_result_free(&b);
  /* what needs the whole graph on one rank is refused there, alike on
   * every rank */
  o.solver = NLE_EIGEN_SHIFT_INVERT;
  nle_status s = nle_spectral_embed(t.ctx, NLE_SPECTRAL_LE, &part, &o, &b);
  nle_test(nle__distributed(t.ctx) ? s == NLE_ERR_UNSUPPORTED && strstr(nle_ctx_error(t.ctx), "solver") : s == NLE_OK);
  nle_spectral_result_free(&b);
  o.solver = NLE_EIGEN_AUTO;
  s = nle_spectral_embed(t.ctx, NLE_SPECTRAL_LLE, &part, &o, &b);
  nle_test(nle__distributed(t.ctx) ? s == NLE_ERR_UNSUPPORTED : s == NLE_OK);
  nle_spectral_result_free(&b);
  close_setting(&t);
}

/* One block and a short one: at 3 ranks the last holds none. Diffusion
 * maps and spectral clustering (its labels the single process's). */
static void rank_without_rows(void) {
  enum { N = NLE__RANK_ROW_BLOCK + 700 };
  setting t = open_setting(22, N);
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.solver = NLE_EIGEN_SPARSE;
  nle_spectral_input all = {.Y = t.Y}, part = {.Y = &t.part};
  nle_spectral_result *a = NULL, *b = NULL;
  nle_test_ok(nle_spectral_embed(t.one, NLE_SPECTRAL_DIFFMAP, &all, &o, &a));
  nle_test_ok(nle_spectral_embed(t.ctx, NLE_SPECTRAL_DIFFMAP, &part, &o, &b));
  if (a && b) {
    nle_test(b->X->rows == t.part.rows);
    for (int k = 0; k < 3; k++) nle_test(fabs(a->eigenvalues[k] - b->eigenvalues[k]) < 1e-10);
    double scale, diff = rows_diff(a->X, &t.mine, b->X, &scale);
    nle_test(diff <= 1e-7 * (scale > 0 ? scale : 1.0));
  }
  nle_spectral_result_free(&a);
  nle_spectral_result_free(&b);
  nle_cluster_opts co;
  nle_cluster_opts_init(&co);
  co.clusters = 3;
  co.spectral.solver = NLE_EIGEN_SPARSE;
  nle_cluster_result *ca = NULL, *cb = NULL;
  nle_test_ok(nle_spectral_cluster(t.one, &all, &co, &ca));
  nle_test_ok(nle_spectral_cluster(t.ctx, &part, &co, &cb));
  if (ca && cb) {
    nle_test(cb->n == N && cb->embedding->X->rows == t.part.rows);
    nle_test(memcmp(ca->labels + t.mine.begin, cb->labels, t.part.rows * sizeof(int32_t)) == 0);
    nle_test_rel(cb->inertia, ca->inertia, 1e-9);
  }
  nle_cluster_result_free(&ca);
  nle_cluster_result_free(&cb);
  close_setting(&t);
}

/* LLL (lll_dist.c) on 2 row blocks and a short one (3 ranks: one each),
 * the dense pencil (L = 300, 120) and the sparse one (L = 600), random,
 * thinned and MinMax landmarks: the same
 * landmarks as alone; the rows near alone's (the pencil's sums in fixed
 * point there, in double alone); and bit for bit those of this rank's
 * communicator alone (MPI_COMM_SELF, all the rows: the ranks' way at one
 * rank), so the same bits at 1, 2 and 3 ranks. */
static void lll_rows(void) {
  enum { N = 2 * NLE__RANK_ROW_BLOCK + 300 };
  setting t = open_setting(23, N);
  nle_ctx *self = test_self_ctx(23);
  const struct {
    int landmarks;
    nle_landmark_method method;
    nle_laplacian_kind laplacian;
  } cases[] = {{300, NLE_LANDMARKS_RANDOM, NLE_LAPLACIAN_RANDOM_WALK},
               {600, NLE_LANDMARKS_THINNED, NLE_LAPLACIAN_SYMMETRIC},
               {120, NLE_LANDMARKS_MINMAX, NLE_LAPLACIAN_UNNORMALISED}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.dim = 2;
    o.landmarks = cases[c].landmarks;
    o.landmark_method = cases[c].method;
    o.laplacian = cases[c].laplacian;
    nle_spectral_input all = {.Y = t.Y}, part = {.Y = &t.part};
    nle_spectral_result *a = NULL, *b = NULL, *one = NULL;
    nle_test_ok(nle_spectral_embed(t.one, NLE_SPECTRAL_LE, &all, &o, &a));
    nle_test_ok(nle_spectral_embed(t.ctx, NLE_SPECTRAL_LE, &part, &o, &b));
    nle_test_ok(nle_spectral_embed(self, NLE_SPECTRAL_LE, &all, &o, &one));
    if (a && b && one) {
      size_t L = (size_t)o.landmarks, d = 2;
      nle_test(b->n == N && b->X->rows == t.part.rows && b->n_landmarks == L);
      nle_test(memcmp(a->landmark_index, b->landmark_index, L * sizeof(int32_t)) == 0);
      nle_test(fabs(a->reconstruction_error - b->reconstruction_error) < 1e-12);
      for (int k = 0; k < 3; k++) nle_test(fabs(a->eigenvalues[k] - b->eigenvalues[k]) < 1e-9);
      double scale, diff = rows_diff(a->X, &t.mine, b->X, &scale);
      nle_test(diff <= 1e-6 * scale);
      nle_test(memcmp(one->eigenvalues, b->eigenvalues, 3 * sizeof(double)) == 0);
      nle_test(memcmp(one->landmark_X->data, b->landmark_X->data, L * d * sizeof(double)) == 0);
      nle_test(memcmp(one->X->data + t.mine.begin * d, b->X->data, t.part.rows * d * sizeof(double)) == 0);
    }
    nle_spectral_result_free(&a);
    nle_spectral_result_free(&b);
    nle_spectral_result_free(&one);
  }
  /* k-means landmarks need every point on one rank: refused there alike */
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.landmarks = 100;
  o.landmark_method = NLE_LANDMARKS_KMEANS;
  nle_spectral_input part = {.Y = &t.part};
  nle_spectral_result *b = NULL;
  nle_status s = nle_spectral_embed(t.ctx, NLE_SPECTRAL_LE, &part, &o, &b);
  nle_test(nle__distributed(t.ctx) ? s == NLE_ERR_UNSUPPORTED && strstr(nle_ctx_error(t.ctx), "landmark_method=kmeans")
                                   : s == NLE_OK);
  nle_spectral_result_free(&b);
  nle_ctx_free(&self);
  close_setting(&t);
}

/* Spectral clustering by LLL: k-means warm-started from the landmarks'
 * rows, on the gathered rows over ranks: alone's labels. */
static void lll_cluster_rows(void) {
  enum { N = 2 * NLE__RANK_ROW_BLOCK + 500 };
  setting t = open_setting(24, N);
  nle_cluster_opts co;
  nle_cluster_opts_init(&co);
  co.clusters = 3;
  co.spectral.landmarks = 200;
  nle_spectral_input all = {.Y = t.Y}, part = {.Y = &t.part};
  nle_cluster_result *ca = NULL, *cb = NULL;
  nle_test_ok(nle_spectral_cluster(t.one, &all, &co, &ca));
  nle_test_ok(nle_spectral_cluster(t.ctx, &part, &co, &cb));
  if (ca && cb) {
    nle_test(cb->warm_started && cb->embedding->X->rows == t.part.rows);
    nle_test(memcmp(ca->labels + t.mine.begin, cb->labels, t.part.rows * sizeof(int32_t)) == 0);
    nle_test_rel(cb->inertia, ca->inertia, 1e-9);
  }
  nle_cluster_result_free(&ca);
  nle_cluster_result_free(&cb);
  close_setting(&t);
}

const nle_test_case mpi_spectral_tests[] = {{"mpi/spectral_le_rows", le_rows},
                                            {"mpi/spectral_rank_without_rows", rank_without_rows},
                                            {"mpi/spectral_lll_rows", lll_rows},
                                            {"mpi/spectral_lll_cluster_rows", lll_cluster_rows},
                                            {NULL, NULL}};
