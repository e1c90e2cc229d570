/* test_metrics.c — metrics on hand-computed cases and against a naive
 * full-sort reference. */
#include "../src/metrics/metrics_internal.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* 1-D data 0, 1, 3, 7, 15 embedded at 0, 10, 1, 11, 30 with k = 1: worked by
 * hand, trustworthiness = continuity = 1 - (2 / 30) * 5 = 2/3, recall 1/5. */
static void hand_case(void) {
  nle_ctx *ctx = test_ctx(1);
  float y[5] = {0, 1, 3, 7, 15};
  double x[5] = {0, 10, 1, 11, 30};
  nle_matf Y = {5, 1, y};
  nle_matd X = {5, 1, x};
  nle_metrics_opts o;
  nle_metrics_opts_init(&o);
  o.k = 1;
  o.subsample = 0;
  nle_metrics *m;
  nle_test_ok(nle_metrics_compute(ctx, &Y, &X, NULL, &o, &m));
  nle_test_rel(m->trustworthiness, 2.0 / 3.0, 1e-15);
  nle_test_rel(m->continuity, 2.0 / 3.0, 1e-15);
  nle_test_rel(m->recall, 0.2, 1e-15);
  nle_test(isnan(m->knn_accuracy));
  nle_metrics_free(&m);
  o.k = 3; /* k must stay below N / 2 */
  nle_test(nle_metrics_compute(ctx, &Y, &X, NULL, &o, &m) == NLE_ERR_ARG);
  nle_ctx_free(&ctx);
}

typedef struct {
  double d;
  int i;
} rp;

static int rp_cmp(const void *a, const void *b) {
  const rp *x = a, *y = b;
  if (x->d != y->d) return x->d < y->d ? -1 : 1;
  return x->i - y->i;
}

/* Full ranks by sorting every row: the textbook definitions, for the nq
 * query rows `rows` (NULL: all n), neighbours and ranks among all n points;
 * out = {trustworthiness, continuity, recall}. */
static void naive_scores(const double *Y, size_t D, const double *X, size_t d, size_t n, const int64_t *rows,
                         size_t nq, int k, double out[3]) {
  rp *ry = malloc(n * sizeof *ry), *rx = malloc(n * sizeof *rx);
  int *rank_y = malloc(n * sizeof *rank_y), *rank_x = malloc(n * sizeof *rank_x);
  double t = 0, c = 0, hits = 0;
  for (size_t q = 0; q < nq; q++) {
    size_t i = rows ? (size_t)rows[q] : q, m = 0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      double sy = 0, sx = 0;
      for (size_t a = 0; a < D; a++) sy += (Y[i * D + a] - Y[j * D + a]) * (Y[i * D + a] - Y[j * D + a]);
      for (size_t a = 0; a < d; a++) sx += (X[i * d + a] - X[j * d + a]) * (X[i * d + a] - X[j * d + a]);
      ry[m] = (rp){sy, (int)j};
      rx[m++] = (rp){sx, (int)j};
    }
    qsort(ry, m, sizeof *ry, rp_cmp);
    qsort(rx, m, sizeof *rx, rp_cmp);
    for (size_t r = 0; r < m; r++) {
      rank_y[ry[r].i] = (int)r + 1;
      rank_x[rx[r].i] = (int)r + 1;
    }
    for (int a = 0; a < k; a++) {
      if (rank_y[rx[a].i] > k) t += rank_y[rx[a].i] - k;
      if (rank_x[ry[a].i] > k) c += rank_x[ry[a].i] - k;
      else hits++;
    }
  }
  free(ry);
  free(rx);
  free(rank_y);
  free(rank_x);
  double norm = 2.0 / ((double)nq * k * (2.0 * (double)n - 3.0 * k - 1.0));
  out[0] = 1.0 - t * norm;
  out[1] = 1.0 - c * norm;
  out[2] = hits / ((double)nq * k);
}

static double naive_trust(const double *Y, size_t D, const double *X, size_t d, size_t n, int k) {
  double sc[3];
  naive_scores(Y, D, X, d, n, NULL, n, k, sc);
  return sc[0];
}

/* A subsample's scores against the textbook ones: its points' neighbours
 * and ranks among all points by default, among the subsample alone when
 * asked. */
static void subsample_scores(void) {
  nle_ctx *ctx = test_ctx(2);
  size_t n = 160, D = 5, d = 2, m = 45;
  nle_matf *Yf = test_random_matf(n, D, 33);
  nle_matd *Y, *X, *Ys, *Xs;
  nle_test_ok(nle_matf_to_matd(ctx, Yf, &Y));
  nle_test_ok(nle_matd_alloc(ctx, n, d, &X));
  for (size_t i = 0; i < n; i++) {
    X->data[i * 2] = Y->data[i * D] - 0.4 * Y->data[i * D + 4];
    X->data[i * 2 + 1] = Y->data[i * D + 1] + 0.7 * Y->data[i * D + 2];
  }
  nle_metrics_opts o;
  nle_metrics_opts_init(&o);
  o.k = 7;
  o.subsample = (int64_t)m;
  nle_metrics *full, *within;
  nle_test_ok(nle_metrics_compute(ctx, Yf, X, NULL, &o, &full));
  o.within_subsample = 1;
  nle_test_ok(nle_metrics_compute(ctx, Yf, X, NULL, &o, &within));
  nle_test(full->subsample_n == (int64_t)m && !memcmp(full->subsample_idx, within->subsample_idx, m * sizeof(int64_t)));
  double want[3];
  naive_scores(Y->data, D, X->data, d, n, full->subsample_idx, m, o.k, want);
  nle_test_rel(full->trustworthiness, want[0], 1e-12);
  nle_test_rel(full->continuity, want[1], 1e-12);
  nle_test_rel(full->recall, want[2], 1e-12);
  nle_test_ok(nle_matd_select_rows(ctx, Y, full->subsample_idx, m, &Ys));
  nle_test_ok(nle_matd_select_rows(ctx, X, full->subsample_idx, m, &Xs));
  naive_scores(Ys->data, D, Xs->data, d, m, NULL, m, o.k, want);
  nle_test_rel(within->trustworthiness, want[0], 1e-12);
  nle_test_rel(within->continuity, want[1], 1e-12);
  nle_test_rel(within->recall, want[2], 1e-12);
  /* The two differ here: fewer points leave the neighbourhoods wider. */
  nle_test(fabs(full->recall - within->recall) > 1e-3);
  nle_metrics_free(&full);
  nle_metrics_free(&within);
  nle_matd_free(&Ys);
  nle_matd_free(&Xs);
  nle_matd_free(&Y);
  nle_matd_free(&X);
  nle_matf_free(&Yf);
  nle_ctx_free(&ctx);
}

static void trust_vs_naive(void) {
  nle_ctx *ctx = test_ctx(1);
  size_t n = 150, D = 6, d = 2;
  nle_matf *Yf = test_random_matf(n, D, 21);
  nle_matd *Y, *X;
  nle_test_ok(nle_matf_to_matd(ctx, Yf, &Y));
  nle_test_ok(nle_matd_alloc(ctx, n, d, &X));
  /* A noisy projection: neither perfect nor random. */
  for (size_t i = 0; i < n; i++) {
    X->data[i * 2] = Y->data[i * D] + 0.5 * Y->data[i * D + 2];
    X->data[i * 2 + 1] = Y->data[i * D + 1] - 0.3 * Y->data[i * D + 3];
  }
  for (int k = 1; k <= 12; k += 5) {
    double t, want = naive_trust(Y->data, D, X->data, d, n, k);
    nle_test_ok(nle_trustworthiness(ctx, Y, X, k, &t));
    nle_test_rel(t, want, 1e-12);
    nle_test(t > 0.5 && t < 1.0);
  }
  /* Invariance: rotating, scaling and translating the embedding changes nothing. */
  double t0, t1;
  nle_test_ok(nle_trustworthiness(ctx, Y, X, 5, &t0));
  for (size_t i = 0; i < n; i++) {
    double a = X->data[i * 2], b = X->data[i * 2 + 1];
    X->data[i * 2] = 3.0 * (0.6 * a - 0.8 * b) + 7.0;
    X->data[i * 2 + 1] = 3.0 * (0.8 * a + 0.6 * b) - 2.0;
  }
  nle_test_ok(nle_trustworthiness(ctx, Y, X, 5, &t1));
  nle_test_rel(t1, t0, 1e-12);
  /* An embedding equal to the data is perfect. */
  nle_matd *Z;
  nle_test_ok(nle_matf_to_matd(ctx, Yf, &Z));
  nle_test_ok(nle_trustworthiness(ctx, Y, Z, 5, &t1));
  nle_test_rel(t1, 1.0, 1e-15);
  nle_matd_free(&Z);
  nle_matd_free(&Y);
  nle_matd_free(&X);
  nle_matf_free(&Yf);
  nle_ctx_free(&ctx);
}

/* The fold assignment of scikit-learn's StratifiedKFold worked by hand for
 * labels (0 0 0 1 1 1 1 1 1 1), 3 folds: class quotas per fold (1,3), (1,2),
 * (1,2); members fill the quotas in data order. */
static void stratified_folds(void) {
  nle_ctx *ctx = test_ctx(1);
  int32_t y[10] = {0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, f[10];
  int32_t want[10] = {0, 1, 2, 0, 0, 0, 1, 1, 2, 2};
  nle_test_ok(nle__stratified_folds(ctx, y, 10, 3, f));
  nle_test(!memcmp(f, want, sizeof f));
  /* Classes are numbered by first appearance, not by value. */
  int32_t y2[6] = {5, 2, 5, 2, 5, 2}, f2[6], want2[6] = {0, 0, 0, 1, 1, 1};
  nle_test_ok(nle__stratified_folds(ctx, y2, 6, 2, f2));
  nle_test(!memcmp(f2, want2, sizeof f2));
  nle_test(nle__stratified_folds(ctx, y, 10, 8, f) == NLE_ERR_ARG);
  nle_ctx_free(&ctx);
}

static void knn_accuracy(void) {
  nle_ctx *ctx = test_ctx(1);
  size_t n = 200;
  nle_matd *X;
  int32_t *y = malloc(n * sizeof *y);
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &X));
  nle_rng r;
  nle_rng_init(&r, 4, 0);
  for (size_t i = 0; i < n; i++) {
    y[i] = (int32_t)(i % 3);
    X->data[i * 2] = 100.0 * y[i] + nle_rng_normal(&r);
    X->data[i * 2 + 1] = nle_rng_normal(&r);
  }
  double acc;
  nle_test_ok(nle_knn_accuracy_cv(ctx, X, y, 5, 5, &acc));
  nle_test_rel(acc, 1.0, 1e-15);
  /* Labels unrelated to position: accuracy near chance. */
  for (size_t i = 0; i < n; i++) y[i] = (int32_t)nle_rng_below(&r, 2);
  nle_test_ok(nle_knn_accuracy_cv(ctx, X, y, 5, 5, &acc));
  nle_test(acc > 0.3 && acc < 0.7);
  /* One point of class 1 among class 0, with k = 1: its nearest neighbour is
   * class 0, so exactly it is misclassified; its fold has 40 points. */
  for (size_t i = 0; i < n; i++) y[i] = 0;
  nle_test(nle_knn_accuracy_cv(ctx, X, y, 1, 5, &acc) == NLE_OK && acc == 1.0);
  nle_test(nle_knn_accuracy_cv(ctx, X, y, 500, 5, &acc) == NLE_ERR_ARG);
  free(y);
  nle_matd_free(&X);
  nle_ctx_free(&ctx);
}

/* Votes with ties (k = 2 and 4 among three labels) against a brute-force
 * cross-validation written here: the k nearest training points of each
 * held-out point (no distance ties in random data), the majority label,
 * ties to the smallest label. */
static void knn_accuracy_vote_ties(void) {
  nle_ctx *ctx = test_ctx(1);
  size_t n = 150;
  nle_matd *X;
  int32_t *y = malloc(n * sizeof *y), *fold = malloc(n * sizeof *fold);
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &X));
  nle_rng r;
  nle_rng_init(&r, 17, 0);
  for (size_t i = 0; i < n; i++) {
    y[i] = (int32_t)nle_rng_below(&r, 3);
    X->data[2 * i] = nle_rng_normal(&r);
    X->data[2 * i + 1] = nle_rng_normal(&r);
  }
  nle_test_ok(nle__stratified_folds(ctx, y, n, 5, fold));
  const int ks[2] = {2, 4};
  for (int t = 0; t < 2; t++) {
    int k = ks[t], ties = 0;
    double correct[5] = {0}, size[5] = {0};
    for (size_t i = 0; i < n; i++) {
      int nb[4], m = 0;
      double nd[4];
      for (size_t j = 0; j < n; j++) {
        if (fold[j] == fold[i]) continue;
        double d = pow(X->data[2 * i] - X->data[2 * j], 2) + pow(X->data[2 * i + 1] - X->data[2 * j + 1], 2);
        int at = m < k ? m++ : k;
        if (at == k && d >= nd[k - 1]) continue;
        if (at == k) at = k - 1;
        while (at > 0 && nd[at - 1] > d) {
          nd[at] = nd[at - 1];
          nb[at] = nb[at - 1];
          at--;
        }
        nd[at] = d;
        nb[at] = (int)j;
      }
      int votes[3] = {0};
      for (int a = 0; a < k; a++) votes[y[nb[a]]]++;
      int best = 0;
      for (int c = 1; c < 3; c++)
        if (votes[c] > votes[best]) best = c;
      for (int c = 0; c < 3; c++) ties += c != best && votes[c] == votes[best];
      size[fold[i]] += 1;
      correct[fold[i]] += best == y[i];
    }
    double want = 0, acc;
    for (int f = 0; f < 5; f++) want += correct[f] / size[f] / 5;
    nle_test_ok(nle_knn_accuracy_cv(ctx, X, y, k, 5, &acc));
    nle_test(ties > 10); /* the rule is exercised */
    nle_test_rel(acc, want, 1e-12);
  }
  free(y);
  free(fold);
  nle_matd_free(&X);
  nle_ctx_free(&ctx);
}

/* The cell-grid search of maps (d = 2) against the scan over all points
 * (the same points with a third, zero column): the same accuracy to the
 * bit, on data full of exact distance ties (integer coordinates, repeated
 * points) and with a far outlier that leaves most cells empty. */
static void knn_accuracy_grid_vs_scan(void) {
  nle_ctx *ctx = test_ctx(2);
  size_t n = 3000;
  nle_matd *X2, *X3;
  int32_t *y = malloc(n * sizeof *y);
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &X2));
  nle_test_ok(nle_matd_alloc(ctx, n, 3, &X3));
  nle_rng r;
  nle_rng_init(&r, 6, 0);
  for (int layout = 0; layout < 2; layout++) {
    for (size_t i = 0; i < n; i++) {
      double a = floor(20 * nle_rng_uniform(&r)), b = floor(20 * nle_rng_uniform(&r));
      X2->data[2 * i] = a + (layout ? 0.0 : 30.0 * (double)(i % 4));
      X2->data[2 * i + 1] = b;
      y[i] = (int32_t)((a + b < 20 ? 0 : 2) + (nle_rng_uniform(&r) < 0.2)); /* 4 classes, noisy */
    }
    if (layout) X2->data[0] = 1e6; /* one point far out: the grid is mostly empty */
    for (size_t i = 0; i < n; i++) {
      X3->data[3 * i] = X2->data[2 * i];
      X3->data[3 * i + 1] = X2->data[2 * i + 1];
      X3->data[3 * i + 2] = 0.0;
    }
    int ks[3] = {1, 10, 25};
    for (int c = 0; c < 3; c++) {
      double grid = -1, scan = -2;
      nle_test_ok(nle_knn_accuracy_cv(ctx, X2, y, ks[c], 5, &grid));
      nle_test_ok(nle_knn_accuracy_cv(ctx, X3, y, ks[c], 5, &scan));
      if (!nle_test(grid == scan)) printf("  layout %d, k = %d: grid %.17g, scan %.17g\n", layout, ks[c], grid, scan);
    }
  }
  free(y);
  nle_matd_free(&X2);
  nle_matd_free(&X3);
  nle_ctx_free(&ctx);
}

static void recall_of_graphs(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(300, 4, 9);
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = 5;
  nle_csr *g, *h;
  nle_test_ok(nle_knn_exact(ctx, Y, &o, &g));
  nle_test_ok(nle_knn_exact(ctx, Y, &o, &h));
  double rec;
  nle_test_ok(nle_knn_recall(ctx, h, g, &rec));
  nle_test(rec == 1.0);
  for (int64_t i = 0; i < h->rows; i++) h->colind[h->rowptr[i]] = -1; /* lose one of five */
  nle_test_ok(nle_knn_recall(ctx, h, g, &rec));
  nle_test_rel(rec, 0.8, 1e-12);
  nle_csr_free(&g);
  nle_csr_free(&h);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

const nle_test_case metrics_tests[] = {{"metrics/hand_case", hand_case},
                                       {"metrics/trust_vs_naive", trust_vs_naive},
                                       {"metrics/subsample_scores", subsample_scores},
                                       {"metrics/stratified_folds", stratified_folds},
                                       {"metrics/knn_accuracy", knn_accuracy},
    {"metrics/knn_accuracy_vote_ties", knn_accuracy_vote_ties},
                                       {"metrics/knn_accuracy_grid_vs_scan", knn_accuracy_grid_vs_scan},
                                       {"metrics/recall_of_graphs", recall_of_graphs},
                                       {NULL, NULL}};
