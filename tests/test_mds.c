/* test_mds.c — the MDS family, kernel PCA, LDA and kernel LDA against the
 * slides' analytic cases, the reference values of ../shared/spec
 * (reference_values.py, pure Python: the French train-time table), brute
 * force (PAV), dense references computed here (LAPACK) and invariances. */
#include "harness.h"
#include "nle_common.h"
#include "../src/mds/mds_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static nle_matd *matd_from(size_t n, size_t m, const double *v) {
  nle_matd *M = NULL;
  nle_matd_alloc(NULL, n, m, &M);
  memcpy(M->data, v, n * m * sizeof(double));
  return M;
}

static nle_matd *distance_matrix(const nle_matf *Y) {
  size_t n = Y->rows, D = Y->cols;
  nle_matd *M = NULL;
  nle_matd_alloc(NULL, n, n, &M);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t c = 0; c < D; c++) s += ((double)Y->data[i * D + c] - Y->data[j * D + c]) * ((double)Y->data[i * D + c] - Y->data[j * D + c]);
      M->data[i * n + j] = sqrt(s);
    }
  return M;
}

static double dist(const nle_matd *X, size_t i, size_t j) {
  double s = 0;
  for (size_t t = 0; t < X->cols; t++) s += (X->data[i * X->cols + t] - X->data[j * X->cols + t]) * (X->data[i * X->cols + t] - X->data[j * X->cols + t]);
  return sqrt(s);
}

/* The largest |distance in X - delta| over the pairs. */
static double worst_distance_error(const nle_matd *X, const nle_matd *M) {
  double w = 0;
  for (size_t i = 0; i < M->rows; i++)
    for (size_t j = 0; j < i; j++) w = fmax(w, fabs(dist(X, i, j) - M->data[i * M->rows + j]));
  return w;
}

static bool non_increasing(const double *h, int count) {
  for (int k = 1; k < count; k++)
    if (h[k] > h[k - 1] + 1e-12 * h[0]) { /* rounding: relative to the sums' scale */
      printf("  history rises at %d: %.17g -> %.17g\n", k, h[k - 1], h[k]);
      return false;
    }
  return true;
}

/* The slides' "Distances and Dimensionality" (SPEC §4.2). */
static void slide_examples(void) {
  nle_ctx *ctx = test_ctx(1);
  double path[25], tri[9] = {0, 3, 4, 3, 0, 5, 4, 5, 0}, simplex[16];
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) path[i * 5 + j] = abs(i - j);
  for (int i = 0; i < 16; i++) simplex[i] = i % 5 ? 1 : 0;
  nle_mds_opts o;
  nle_mds_opts_init(&o);
  nle_mds_result *r = NULL;
  nle_matd *M = matd_from(5, 5, path);
  nle_mds_input in = {NULL, M, NULL};
  o.dim = 1;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, &o, &r))) {
    nle_test_rel(r->eigenvalues[0], 10.0, 1e-12);
    nle_test(r->negative_count == 0 && r->spectrum_complete);
    for (int i = 0; i < 5; i++) nle_test(fabs(fabs(r->X->data[i]) - fabs(i - 2.0)) < 1e-12);
  }
  nle_mds_result_free(&r);
  nle_matd_free(&M);
  M = matd_from(3, 3, tri);
  in.dissimilarities = M;
  o.dim = 2;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, &o, &r))) {
    nle_test_rel(r->eigenvalues[0], 12.964147996483, 1e-11);
    nle_test_rel(r->eigenvalues[1], 3.702518670183, 1e-11);
    nle_test_rel(r->trace, 50.0 / 3.0, 1e-12);
    nle_test(worst_distance_error(r->X, M) < 1e-12);
  }
  nle_mds_result_free(&r);
  nle_matd_free(&M);
  M = matd_from(4, 4, simplex);
  in.dissimilarities = M;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, &o, &r))) { /* exactly 3-D: d = 2 leaves strain 0.5 */
    nle_test_rel(r->eigenvalues[0], 0.5, 1e-12);
    nle_test_rel(r->positive_mass, 1.5, 1e-12);
    double strain = 0;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        double b = (i == j ? 0.75 : -0.25) * 0.5 * 2 / 1.0 * 0.5 * 2, g = 0; /* B = 1/2 J: -1/2 J M J with M = 11^T - I */
        b = 0.5 * ((i == j) - 0.25);
        for (int t = 0; t < 2; t++) g += r->X->data[i * 2 + t] * r->X->data[j * 2 + t];
        strain += (g - b) * (g - b);
      }
    nle_test_rel(sqrt(strain), 0.5, 1e-12);
    nle_test(r->stress1 > 0.1);
  }
  nle_mds_result_free(&r);
  nle_matd_free(&M);
  nle_ctx_free(&ctx);
}

/* The slides' French train times (minutes), as reference_values.py reads them. */
static nle_matd *french(void) {
  static const char *low[10][9] = {
      {0}, {"9:58"}, {"6:39", "7:11"}, {"8:05", "7:11", "4:52"}, {"5:47", "8:49", "6:12", "1:35"},
      {"8:30", "13:36", "8:20", "4:33", "2:26"}, {"2:59", "4:17", "1:04", "2:01", "3:00", "5:52"},
      {"8:08", "10:16", "6:54", "4:36", "7:04", "11:15", "4:01"},
      {"2:02", "13:52", "9:42", "4:25", "3:26", "6:29", "5:14", "10:56"},
      {"2:36", "5:38", "4:17", "4:21", "5:13", "9:04", "1:13", "6:03", "6:06"}};
  nle_matd *T = NULL;
  nle_matd_alloc(NULL, 10, 10, &T);
  memset(T->data, 0, 100 * sizeof(double));
  for (int i = 1; i < 10; i++)
    for (int j = 0; j < i; j++) {
      int h, m;
      sscanf(low[i][j], "%d:%d", &h, &m);
      T->data[i * 10 + j] = T->data[j * 10 + i] = 60 * h + m;
    }
  return T;
}

static void french_classical(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matd *T = french();
  nle_mds_input in = {NULL, T, NULL};
  nle_mds_result *r = NULL;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, NULL, &r))) {
    nle_test(fabs(r->eigenvalues[0] - 511428.164) < 1e-3 && fabs(r->eigenvalues[1] - 206858.978) < 1e-3);
    nle_test(r->negative_count == 4);
    nle_test(fabs(r->negative_mass - 225295.380) < 1e-3 && fabs(r->positive_mass - 988946.980) < 1e-3);
    nle_test(fabs(r->stress1 - 0.291923) < 1e-6);
    nle_test(fabs(r->normalized_stress - 0.283119) < 1e-6);
    nle_test(fabs(r->sammon_stress - 0.117711) < 1e-6);
    /* the map's distances from Paris (6), ascending: Lille, Strasbourg, Tours, Lyon, Marseille, Bordeaux, Brest,
     * Toulouse, Nice */
    int order[9] = {2, 7, 9, 3, 4, 0, 1, 8, 5};
    for (int k = 1; k < 9; k++) nle_test(dist(r->X, 6, (size_t)order[k - 1]) < dist(r->X, 6, (size_t)order[k]));
  }
  nle_mds_result_free(&r);
  nle_matd_free(&T);
  nle_ctx_free(&ctx);
}

/* Kruskal's stress-1 of the classical 2-D solution against its primary
 * disparities, computed here: the pairs by (delta, d), then PAV. */
static int cmp_pair(const void *a, const void *b) {
  const double *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1];
}

static double primary_stress_at_classical(const nle_matd *T) {
  nle_mds_input in = {NULL, T, NULL};
  nle_mds_result *c = NULL;
  nle_mds(NULL, NLE_MDS_CLASSICAL, &in, NULL, &c);
  double pairs[45][2], y[45], z[45], num = 0, den = 0;
  int k = 0;
  for (size_t i = 0; i < 10; i++)
    for (size_t j = i + 1; j < 10; j++, k++) pairs[k][0] = T->data[i * 10 + j], pairs[k][1] = dist(c->X, i, j);
  qsort(pairs, 45, sizeof pairs[0], cmp_pair);
  for (k = 0; k < 45; k++) y[k] = pairs[k][1];
  nle_isotonic(45, y, NULL, z);
  for (k = 0; k < 45; k++) num += (z[k] - y[k]) * (z[k] - y[k]), den += y[k] * y[k];
  nle_mds_result_free(&c);
  return sqrt(num / den);
}

/* SMACOF, Sammon and non-metric MDS from the classical start (one start),
 * converged as tightly as the reference script: its values and monotone
 * histories. */
static void french_iterative(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matd *T = french();
  nle_mds_input in = {NULL, T, NULL};
  nle_mds_opts o;
  nle_mds_opts_init(&o);
  o.starts = 1, o.tol = 1e-13, o.max_iter = 3000;
  nle_mds_result *r = NULL;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_METRIC, &in, &o, &r))) {
    nle_test(fabs(r->raw_stress - 250671.708) < 1e-2);
    nle_test(fabs(r->start_stress - 612116.399) < 1e-2);
    nle_test(fabs(r->stress1 - 0.184227) < 1e-6 && fabs(r->normalized_stress - 0.181178) < 1e-6);
    nle_test(abs(r->iterations - 102) <= 2);
    nle_test(non_increasing(r->history, r->iterations + 1));
  }
  nle_mds_result_free(&r);
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_SAMMON, &in, &o, &r))) {
    nle_test(fabs(r->sammon_stress - 0.042818) < 1e-6);
    nle_test(abs(r->iterations - 122) <= 3);
    nle_test(non_increasing(r->history, r->iterations + 1));
  }
  nle_mds_result_free(&r);
  o.tol = 1e-11, o.max_iter = 500;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_NONMETRIC, &in, &o, &r))) {
    /* the table has tied times: the reference script keeps ties in input
     * order (0.217882 -> 0.110089); the primary approach orders each tie
     * block by d(X), the best of those orders, so it fits at least as well */
    nle_test(r->stress1 <= 0.110089 + 1e-6);
    nle_test(r->history[0] <= 0.217882 + 1e-6);
    nle_test(fabs(r->history[0] - primary_stress_at_classical(T)) < 1e-12);
    nle_test(non_increasing(r->history, r->iterations + 1));
  }
  nle_mds_result_free(&r);
  /* several starts keep the least stress, never above the classical start's */
  o.starts = 4, o.tol = 1e-6, o.max_iter = 300;
  nle_mds_result *one = NULL;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_METRIC, &in, &o, &r))) {
    nle_test(r->starts_run == 4 && r->raw_stress <= 250671.708 * (1 + 1e-4));
    /* the later starts, abandoned or not, leave the classical start's run as it was */
    o.starts = 1;
    if (r->best_start == 0 && nle_test_ok(nle_mds(ctx, NLE_MDS_METRIC, &in, &o, &one)))
      nle_test(memcmp(one->X->data, r->X->data, 20 * sizeof(double)) == 0 && one->iterations == r->iterations);
  }
  nle_mds_result_free(&r);
  nle_mds_result_free(&one);
  nle_matd_free(&T);
  nle_ctx_free(&ctx);
}

/* PAV against the brute-force projection on the monotone cone: every
 * split into consecutive blocks at their weighted means, the cheapest
 * non-decreasing one. */
static void pav_brute_force(void) {
  nle_rng rng;
  nle_rng_init(&rng, 7, 0);
  for (int trial = 0; trial < 200; trial++) {
    int n = 1 + (int)nle_rng_below(&rng, 8);
    double y[8], w[8], z[8], best[8], best_cost = INFINITY;
    for (int i = 0; i < n; i++) y[i] = nle_rng_normal(&rng), w[i] = trial % 2 ? 0.1 + nle_rng_uniform(&rng) : 1.0;
    if (trial % 5 == 0) y[n / 2] = y[0]; /* ties */
    for (unsigned cuts = 0; cuts < 1u << (n - 1); cuts++) {
      double fit[8], prev = -INFINITY, cost = 0;
      bool ok = true;
      for (int a = 0; a < n && ok;) {
        int b = a + 1;
        while (b < n && !(cuts >> (b - 1) & 1)) b++;
        double sw = 0, sy = 0;
        for (int i = a; i < b; i++) sw += w[i], sy += w[i] * y[i];
        for (int i = a; i < b; i++) fit[i] = sy / sw, cost += w[i] * (y[i] - sy / sw) * (y[i] - sy / sw);
        ok = sy / sw >= prev - 1e-15;
        prev = sy / sw, a = b;
      }
      if (ok && cost < best_cost) best_cost = cost, memcpy(best, fit, sizeof fit);
    }
    nle_isotonic((size_t)n, y, w, z);
    for (int i = 0; i < n; i++) nle_test(fabs(z[i] - best[i]) < 1e-12);
    for (int i = 1; i < n; i++) nle_test(z[i] >= z[i - 1] - 1e-15);
  }
}

/* Non-metric MDS sees only the order: delta^3 from the same start gives
 * the identical configuration; secondary ties keep tied disparities equal. */
static void nonmetric_rank_invariance(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_matf *Y = test_random_matf(25, 4, 11);
  for (size_t e = 0; e < Y->rows * Y->cols; e++) Y->data[e] = roundf(Y->data[e] * 4); /* integer grid: ties */
  nle_matd *M = distance_matrix(Y), *M3 = NULL;
  nle_matd_alloc(NULL, 25, 25, &M3);
  for (size_t e = 0; e < 625; e++) M3->data[e] = M->data[e] * M->data[e] * M->data[e];
  nle_mds_input in = {NULL, M, NULL}, in3 = {NULL, M3, NULL};
  nle_mds_opts o;
  nle_mds_opts_init(&o);
  nle_mds_result *c = NULL, *a = NULL, *b = NULL;
  nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, &o, &c));
  o.init = c->X;
  for (int ties = 0; ties < 2; ties++) {
    o.ties = (nle_mds_ties)ties;
    if (nle_test_ok(nle_mds(ctx, NLE_MDS_NONMETRIC, &in, &o, &a)) &&
        nle_test_ok(nle_mds(ctx, NLE_MDS_NONMETRIC, &in3, &o, &b))) {
      double worst = 0;
      for (size_t e = 0; e < 50; e++) worst = fmax(worst, fabs(a->X->data[e] - b->X->data[e]));
      nle_test(worst == 0);
      nle_test(a->stress1 == b->stress1 && a->stress1 < a->start_stress);
      nle_test(non_increasing(a->history, a->iterations + 1));
    }
    nle_mds_result_free(&a);
    nle_mds_result_free(&b);
  }
  nle_mds_result_free(&c);
  nle_matd_free(&M);
  nle_matd_free(&M3);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Classical MDS of Euclidean distances recovers the configuration, equals
 * PCA's scores (LLL eq. 4.13), and its strain is the dropped eigenvalues'. */
static void classical_euclidean(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(40, 3, 5);
  nle_matd *M = distance_matrix(Y);
  nle_mds_input pts = {Y, NULL, NULL}, dis = {NULL, M, NULL};
  nle_mds_opts o;
  nle_mds_opts_init(&o);
  o.dim = 3;
  nle_mds_result *a = NULL, *b = NULL;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &dis, &o, &a)) &&
      nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &pts, &o, &b))) {
    nle_test(worst_distance_error(a->X, M) < 1e-12 * 10);
    nle_test(a->negative_count == 0);
    double worst = 0;
    for (size_t e = 0; e < 120; e++) worst = fmax(worst, fabs(a->X->data[e] - b->X->data[e]));
    if (!nle_test(worst < 1e-9)) printf("  classical vs PCA: %g\n", worst);
    for (int t = 0; t < 3; t++) nle_test_rel(a->eigenvalues[t], b->eigenvalues[t], 1e-9);
    double lambda3 = a->eigenvalues[2];
    nle_mds_result_free(&a);
    o.dim = 2;
    if (nle_test_ok(nle_mds(ctx, NLE_MDS_CLASSICAL, &dis, &o, &a))) { /* strain = lambda_3 */
      double rm[40] = {0}, gm = 0, strain = 0;
      for (int i = 0; i < 40; i++) {
        for (int j = 0; j < 40; j++) rm[i] += M->data[i * 40 + j] * M->data[i * 40 + j] / 40;
        gm += rm[i] / 40;
      }
      for (int i = 0; i < 40; i++)
        for (int j = 0; j < 40; j++) {
          double bij = -0.5 * (M->data[i * 40 + j] * M->data[i * 40 + j] - rm[i] - rm[j] + gm);
          double g = a->X->data[i * 2] * a->X->data[j * 2] + a->X->data[i * 2 + 1] * a->X->data[j * 2 + 1];
          strain += (g - bij) * (g - bij);
        }
      nle_test_rel(sqrt(strain), lambda3, 1e-9);
    }
  }
  nle_mds_result_free(&a);
  nle_mds_result_free(&b);
  nle_matd_free(&M);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* SMACOF on exact 2-D distances reaches zero stress from a random start,
 * monotonely; with random weights too (the CG transform). */
static void smacof_exact(void) {
  nle_ctx *ctx = test_ctx(2);
  nle_matf *Y = test_random_matf(30, 2, 8);
  nle_matd *M = distance_matrix(Y), *W = NULL, *start = test_random_matd(30, 2, 1.0, 9);
  nle_matd_alloc(NULL, 30, 30, &W);
  nle_rng rng;
  nle_rng_init(&rng, 3, 0);
  for (int i = 0; i < 30; i++)
    for (int j = 0; j <= i; j++) W->data[i * 30 + j] = W->data[j * 30 + i] = i == j ? 0 : 0.2 + nle_rng_uniform(&rng);
  nle_mds_input in = {NULL, M, NULL};
  nle_mds_opts o;
  nle_mds_opts_init(&o);
  o.init = start, o.tol = 0, o.max_iter = 3000;
  nle_mds_result *r = NULL;
  for (int weighted = 0; weighted < 2; weighted++) {
    in.weights = weighted ? W : NULL;
    if (nle_test_ok(nle_mds(ctx, NLE_MDS_METRIC, &in, &o, &r))) {
      if (!nle_test(r->stress1 < 1e-6)) printf("  weighted %d: stress-1 %g\n", weighted, r->stress1);
      nle_test(non_increasing(r->history, r->iterations + 1));
    }
    nle_mds_result_free(&r);
  }
  nle_matd_free(&M);
  nle_matd_free(&W);
  nle_matd_free(&start);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Landmark MDS of Euclidean points is exact with L > d landmarks, and its
 * triangulation map returns a training point's embedding and places a new
 * point at its true distances; the model file keeps the map. */
static void landmark_exact(void) {
  nle_ctx *ctx = test_ctx(4);
  nle_matf *Y = test_random_matf(200, 3, 12), *Q = test_random_matf(5, 3, 13);
  nle_matd *M = distance_matrix(Y);
  nle_mds_input in = {Y, NULL, NULL};
  nle_mds_opts o;
  nle_mds_opts_init(&o);
  o.dim = 3, o.landmarks = 10, o.keep_model = true;
  nle_mds_result *r = NULL;
  nle_matd *Xt = NULL, *Xq = NULL;
  nle_projection_model *loaded = NULL;
  if (nle_test_ok(nle_mds(ctx, NLE_MDS_LANDMARK, &in, &o, &r))) {
    nle_test(worst_distance_error(r->X, M) < 1e-9);
    if (nle_test_ok(nle_projection_transform(ctx, r->model, Y, &Xt))) {
      double worst = 0;
      for (size_t e = 0; e < 600; e++) worst = fmax(worst, fabs(Xt->data[e] - r->X->data[e]));
      nle_test(worst < 1e-9);
    }
    const char *path = test_path("landmark.model");
    nle_test_ok(nle_projection_model_save(ctx, r->model, path));
    { /* every header bit and every 97th byte damaged: each copy refused */
      char original[4096]; /* test_path's buffer is reused by the copies */
      snprintf(original, sizeof original, "%s", path);
      int tried = 0, accepted = damaged_copies_accepted(ctx, original, load_projection_model_file, &tried);
      if (!nle_test(tried > 384 && accepted == 0)) printf("  projection model: %d of %d damaged copies accepted\n", accepted, tried);
    }
    if (nle_test_ok(nle_projection_model_load(ctx, path, &loaded)) &&
        nle_test_ok(nle_projection_transform(ctx, loaded, Q, &Xq)))
      for (size_t q = 0; q < 5; q++)
        for (size_t i = 0; i < 200; i += 37) {
          double truth = 0, got = 0;
          for (int c = 0; c < 3; c++) {
            truth += ((double)Q->data[q * 3 + c] - Y->data[i * 3 + c]) * ((double)Q->data[q * 3 + c] - Y->data[i * 3 + c]);
            got += (Xq->data[q * 3 + c] - r->X->data[i * 3 + c]) * (Xq->data[q * 3 + c] - r->X->data[i * 3 + c]);
          }
          nle_test(fabs(sqrt(got) - sqrt(truth)) < 1e-9);
        }
  }
  o.landmarks = 3;
  nle_mds_result_free(&r);
  nle_test(nle_mds(ctx, NLE_MDS_LANDMARK, &in, &o, &r) == NLE_ERR_ARG &&
           strstr(nle_ctx_error(ctx), "landmarks=3 for 3 dimensions"));
  nle_matd_free(&Xt);
  nle_matd_free(&Xq);
  nle_projection_model_free(&loaded);
  nle_matd_free(&M);
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&ctx);
}

static void kpca_checks(void) {
  nle_ctx *ctx = test_ctx(5);
  for (int big = 0; big < 2; big++) { /* dense eigensolver (N <= 500) and Lanczos */
    size_t n = big ? 600 : 120;
    nle_matf *Y = test_random_matf(n, 5, 21);
    nle_kpca_opts o;
    nle_kpca_opts_init(&o);
    o.kernel.kind = NLE_PDK_LINEAR;
    nle_kpca_result *r = NULL;
    nle_pca_opts po;
    nle_pca_opts_init(&po);
    nle_pca_model *pm = NULL;
    nle_matd *P = NULL;
    if (nle_test_ok(nle_kpca(ctx, Y, NULL, &o, &r)) && nle_test_ok(nle_pca_fit(ctx, Y, &po, &pm)) &&
        nle_test_ok(nle_pca_transform(ctx, pm, Y, &P))) { /* the linear kernel is PCA */
      for (int t = 0; t < 2; t++) {
        nle_test_rel(r->eigenvalues[t], pm->explained_variance[t] * (double)(n - 1), 1e-9);
        double dotp = 0, na = 0, nb = 0;
        for (size_t i = 0; i < n; i++)
          dotp += r->X->data[i * 2 + t] * P->data[i * 2 + t], na += r->X->data[i * 2 + t] * r->X->data[i * 2 + t],
              nb += P->data[i * 2 + t] * P->data[i * 2 + t];
        nle_test(fabs(fabs(dotp) / sqrt(na * nb) - 1) < 1e-9 && fabs(na / nb - 1) < 1e-9);
      }
    }
    nle_kpca_result_free(&r);
    nle_pca_model_free(&pm);
    nle_matd_free(&P);
    /* Gaussian: implicit centring against the explicitly centred kernel
     * given as a precomputed one; training points mapped back; columns of X
     * sum to 0 (the centred rows do) */
    o.kernel.kind = NLE_PDK_GAUSSIAN, o.kernel.gamma = 0.1, o.keep_model = true;
    nle_kpca_result *g = NULL, *p = NULL, *sp = NULL;
    nle_matd *K = NULL, *Xt = NULL, *Xk = NULL;
    nle_matd_alloc(NULL, n, n, &K);
    double *m = calloc(n, sizeof(double)), gm = 0;
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) {
        double d2 = 0;
        for (int c = 0; c < 5; c++) d2 += ((double)Y->data[i * 5 + c] - Y->data[j * 5 + c]) * ((double)Y->data[i * 5 + c] - Y->data[j * 5 + c]);
        K->data[i * n + j] = exp(-0.1 * d2);
        m[i] += K->data[i * n + j] / (double)n;
      }
    for (size_t i = 0; i < n; i++) gm += m[i] / (double)n;
    nle_matd *Kc = NULL;
    nle_matd_alloc(NULL, n, n, &Kc);
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) Kc->data[i * n + j] = K->data[i * n + j] - m[i] - m[j] + gm;
    for (size_t i = 0; i < n; i++) /* exact symmetry for the check */
      for (size_t j = 0; j < i; j++) Kc->data[i * n + j] = Kc->data[j * n + i];
    nle_kpca_opts po2 = o;
    po2.kernel.kind = NLE_PDK_PRECOMPUTED, po2.keep_model = false;
    nle_kpca_opts so = o;
    so.kernel.neighbors = (int)n - 1, so.keep_model = false;
    if (nle_test_ok(nle_kpca(ctx, Y, NULL, &o, &g)) && nle_test_ok(nle_kpca(ctx, NULL, Kc, &po2, &p)) &&
        nle_test_ok(nle_kpca(ctx, Y, NULL, &so, &sp))) {
      for (int t = 0; t < 2; t++) {
        nle_test_rel(g->eigenvalues[t], p->eigenvalues[t], 1e-9);
        nle_test_rel(sp->eigenvalues[t], g->eigenvalues[t], 1e-6); /* all neighbours: the dense kernel */
        double sum = 0;
        for (size_t i = 0; i < n; i++) sum += g->X->data[i * 2 + t];
        nle_test(fabs(sum) < 1e-9 * sqrt(g->eigenvalues[t]));
      }
      nle_test(sp->sparse && !g->sparse);
      if (nle_test_ok(nle_projection_transform(ctx, g->model, Y, &Xt)) &&
          nle_test_ok(nle_projection_transform_kernel(ctx, g->model, K, &Xk))) {
        double worst = 0, worst_k = 0;
        for (size_t e = 0; e < 2 * n; e++)
          worst = fmax(worst, fabs(Xt->data[e] - g->X->data[e])), worst_k = fmax(worst_k, fabs(Xk->data[e] - g->X->data[e]));
        nle_test(worst < 1e-6 && worst_k < 1e-9);
      }
    }
    free(m);
    nle_kpca_result_free(&g);
    nle_kpca_result_free(&p);
    nle_kpca_result_free(&sp);
    nle_matd_free(&K);
    nle_matd_free(&Kc);
    nle_matd_free(&Xt);
    nle_matd_free(&Xk);
    nle_matf_free(&Y);
  }
  nle_ctx_free(&ctx);
}

/* Kernel PCA against the dense eigendecomposition of J K J (J = I - 11^T /
 * N), K built here from each kernel's formula: linear x.y, Gaussian
 * exp(-gamma |x - y|^2), polynomial (gamma x.y + c0)^degree, and the sparse
 * kNN Gaussian (exp(-gamma d^2) for y among x's k nearest, averaged with its
 * transpose, the diagonal 1). Every requested component: its eigenvalue the
 * dense one's, and J K J x = lambda x for its column, |x|^2 = lambda. With
 * d = 80 of a sparse kernel the requested eigenvalues reach below 1, the
 * eigenvalue the constant vector takes when the centring is off by the
 * diagonal. Both solvers: dense (N <= 500) and Lanczos (N = 600; the sparse
 * kernel always). */
static void kpca_dense_reference(void) {
  nle_ctx *ctx = test_ctx(5);
  struct {
    nle_pdkernel_kind kind;
    double gamma, coef0;
    int degree, neighbors;
  } kernels[] = {{NLE_PDK_LINEAR, 0, 0, 0, 0},        {NLE_PDK_GAUSSIAN, 0.15, 0, 0, 0},
                 {NLE_PDK_POLYNOMIAL, 0.2, 1.0, 3, 0}, {NLE_PDK_POLYNOMIAL, 0.3, 0.5, 2, 0},
                 {NLE_PDK_POLYNOMIAL, 0.1, 2.0, 5, 0}, {NLE_PDK_GAUSSIAN, 0.15, 0, 0, 10}};
  size_t D = 5;
  for (int big = 0; big < 2; big++) {
    size_t n = big ? 600 : 150;
    nle_matf *Y = test_random_matf(n, D, 31 + (uint64_t)big);
    double *K = malloc(n * n * sizeof(double)), *C = malloc(n * n * sizeof(double)), *w = malloc(n * sizeof(double));
    double *d2 = malloc(n * sizeof(double));
    for (size_t kk = 0; kk < sizeof kernels / sizeof *kernels; kk++) {
      int sparse = kernels[kk].neighbors > 0;
      /* the sparse kernel's J K J: 94 of its 150 eigenvalues positive, the
       * 80th 0.32 */
      size_t d = sparse && !big ? 80 : 12;
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
          double dot = 0, s = 0;
          for (size_t c = 0; c < D; c++) {
            double a = Y->data[i * D + c], b = Y->data[j * D + c];
            dot += a * b, s += (a - b) * (a - b);
          }
          K[i * n + j] = kernels[kk].kind == NLE_PDK_LINEAR     ? dot
                         : kernels[kk].kind == NLE_PDK_GAUSSIAN ? exp(-kernels[kk].gamma * s)
                                                                : pow(kernels[kk].gamma * dot + kernels[kk].coef0,
                                                                      kernels[kk].degree);
        }
      if (sparse) { /* keep row i's k nearest (the k smallest distances), then average with the transpose */
        int k = kernels[kk].neighbors;
        memset(C, 0, n * n * sizeof(double));
        for (size_t i = 0; i < n; i++) {
          for (size_t j = 0; j < n; j++) d2[j] = j == i ? INFINITY : -log(K[i * n + j]); /* gamma d^2 */
          for (int t = 0; t < k; t++) {
            size_t best = 0;
            for (size_t j = 1; j < n; j++) best = d2[j] < d2[best] ? j : best;
            C[i * n + best] = K[i * n + best];
            d2[best] = INFINITY;
          }
        }
        for (size_t i = 0; i < n; i++)
          for (size_t j = 0; j < n; j++) K[i * n + j] = i == j ? 1.0 : 0.5 * (C[i * n + j] + C[j * n + i]);
      }
      double grand = 0, *mean = calloc(n, sizeof(double));
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) mean[i] += K[i * n + j] / (double)n;
      for (size_t i = 0; i < n; i++) grand += mean[i] / (double)n;
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) C[i * n + j] = K[i * n + j] - mean[i] - mean[j] + grand;
      free(mean);
      double *A = malloc(n * n * sizeof(double));
      memcpy(A, C, n * n * sizeof(double));
      if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', (int)n, A, (int)n, w)) nle_test(0);
      free(A);
      nle_kpca_opts o;
      nle_kpca_opts_init(&o);
      o.dim = (int)d;
      o.kernel.kind = kernels[kk].kind;
      o.kernel.gamma = kernels[kk].kind == NLE_PDK_LINEAR ? NLE_AUTO : kernels[kk].gamma;
      o.kernel.coef0 = kernels[kk].coef0, o.kernel.degree = kernels[kk].degree;
      o.kernel.neighbors = kernels[kk].neighbors;
      nle_kpca_result *r = NULL;
      if (!nle_test_ok(nle_kpca(ctx, Y, NULL, &o, &r))) {
        printf("  %s\n", nle_ctx_error(ctx));
        continue;
      }
      double eig_err = 0, res_err = 0, norm_err = 0;
      for (size_t t = 0; t < d; t++) {
        double want = w[n - 1 - t], lam = r->eigenvalues[t], xx = 0, res = 0;
        eig_err = fmax(eig_err, fabs(lam - want) / w[n - 1]);
        for (size_t i = 0; i < n; i++) xx += r->X->data[i * d + t] * r->X->data[i * d + t];
        for (size_t i = 0; i < n; i++) {
          double y = 0;
          for (size_t j = 0; j < n; j++) y += C[i * n + j] * r->X->data[j * d + t];
          res += (y - want * r->X->data[i * d + t]) * (y - want * r->X->data[i * d + t]);
        }
        res_err = fmax(res_err, sqrt(res / xx) / w[n - 1]);
        norm_err = fmax(norm_err, fabs(xx - want) / w[n - 1]);
      }
      if (!nle_test(eig_err < 1e-8 && res_err < 1e-6 && norm_err < 1e-8 && r->sparse == (sparse != 0)) ||
          getenv("NLE_TEST_VERBOSE"))
        printf("  N %zu, kernel %zu: eigenvalues off by %.3g, residual %.3g, |x|^2 off by %.3g (of the top "
               "eigenvalue %.4g; the %zu-th %.4g)\n", n, kk, eig_err, res_err, norm_err, w[n - 1], d, w[n - d]);
      if (sparse && !big) nle_test(w[n - d] < 1.0); /* the case this covers */
      nle_kpca_result_free(&r);
    }
    free(K), free(C), free(w), free(d2);
    nle_matf_free(&Y);
  }
  nle_ctx_free(&ctx);
}

/* kpca_tiles.c's packed upper triangle against mds_base.c's full DGEMM kernel
 * matrix, bit for bit: real points (its own DGEMM tiles), integer points
 * 200..255 in D = 600 (SGEMM chunks of 258 coordinates, exact), integers
 * up to 3000 (chunks of 1: DGEMM again), N = 700 (a partial last tile);
 * and the kernel PCA of each at 1 and 2 threads, bit for bit. */
static void kpca_upper_kernel_exact(void) {
  nle_ctx *ctx = test_ctx(2);
  size_t n = 700;
  for (int kind = 0; kind < 3; kind++) {
    size_t D = kind == 1 ? 600 : 7;
    nle_matf *Y = test_random_matf(n, D, 77 + (uint64_t)kind);
    /* 200..255: an inner product over all 600 reaches 2.4e7 > 2^24, one
     * chunk's stays below */
    for (size_t e = 0; kind && e < n * D; e++)
      Y->data[e] = kind == 1 ? 200.0f + floorf(Y->data[e] * 56.0f) : floorf(Y->data[e] * 3001.0f);
    nle_pdkernel k;
    nle_pdkernel_init(&k);
    k.gamma = kind == 1 ? 5e-6 : 0.05;
    double *full = NULL, *upper = NULL;
    if (nle_test_ok(nle__kernel_matrix(ctx, Y, &k, &full)) &&
        nle_test_ok(nle__kernel_packed_gaussian(ctx, Y, k.gamma, &upper))) {
      size_t differ = 0, p = 0;
      double spread = 0;
      for (size_t i = 0; i < n; i++)
        for (size_t j = i; j < n; j++, p++) differ += upper[p] != full[i * n + j], spread += full[i * n + j] < 0.5;
      if (!nle_test(differ == 0 && spread > 0)) printf("  kind %d: %zu of the upper entries differ\n", kind, differ);
    }
    free(full), free(upper);
    /* the whole kernel PCA at 1 and 2 threads, bit for bit */
    nle_kpca_opts o;
    nle_kpca_opts_init(&o); /* the automatic gamma */
    nle_kpca_result *r[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) {
      nle_ctx_set_threads(ctx, t + 1);
      if (!nle_test_ok(nle_kpca(ctx, Y, NULL, &o, &r[t]))) printf("  %s\n", nle_ctx_error(ctx));
    }
    nle_ctx_set_threads(ctx, 1);
    if (!nle_test(r[0] && r[1] && !memcmp(r[0]->X->data, r[1]->X->data, n * 2 * sizeof(double))))
      printf("  kind %d: kernel PCA differs between 1 and 2 threads\n", kind);
    nle_kpca_result_free(&r[0]);
    nle_kpca_result_free(&r[1]);
    nle_matf_free(&Y);
  }
  nle_ctx_free(&ctx);
}

/* Three Gaussian classes in 4-D, shifted apart. */
static nle_matf *classes(size_t n, int32_t *labels, uint64_t seed) {
  nle_matf *Y = test_random_matf(n, 4, seed);
  for (size_t i = 0; i < n; i++) {
    labels[i] = (int32_t)(i % 3);
    Y->data[i * 4 + labels[i]] += 2.0f;
    Y->data[i * 4 + 3] *= 3.0f;
  }
  return Y;
}

static void lda_checks(void) {
  nle_ctx *ctx = test_ctx(6);
  size_t n = 150, D = 4;
  int32_t labels[150];
  nle_matf *Y = classes(n, labels, 31);
  double Sb[16], Sw[16], St[16];
  if (nle_test_ok(nle_scatter(ctx, Y, labels, Sb, Sw, St)))
    for (int e = 0; e < 16; e++) nle_test(fabs(Sb[e] + Sw[e] - St[e]) < 1e-10 * St[0]); /* S_b + S_w = S_t */
  nle_lda_opts o;
  nle_lda_opts_init(&o);
  o.keep_model = true;
  nle_lda_result *r = NULL, *k = NULL;
  nle_matd *Xt = NULL;
  if (nle_test_ok(nle_lda(ctx, Y, labels, &o, &r))) {
    nle_test(r->n_eigenvalues == 2 && r->classes == 3 && r->rank == 4);
    /* the S_w form, solved here: the same directions, lambda_t = lambda_w / (1 + lambda_w) */
    double A[16], B[16], w[4];
    memcpy(A, Sb, sizeof A), memcpy(B, Sw, sizeof B);
    nle_test(LAPACKE_dsygv(LAPACK_ROW_MAJOR, 1, 'V', 'U', 4, A, 4, B, 4, w) == 0);
    for (int t = 0; t < 2; t++) {
      nle_test_rel(r->eigenvalues[t], w[3 - t] / (1 + w[3 - t]), 1e-9);
      double dotp = 0, na = 0, nb = 0;
      for (size_t c = 0; c < D; c++) {
        double a = r->model->A[t * D + c], b = A[c * 4 + (3 - t)];
        dotp += a * b, na += a * a, nb += b * b;
      }
      nle_test(fabs(fabs(dotp) / sqrt(na * nb) - 1) < 1e-9);
    }
    if (nle_test_ok(nle_projection_transform(ctx, r->model, Y, &Xt))) {
      double worst = 0;
      for (size_t e = 0; e < 2 * n; e++) worst = fmax(worst, fabs(Xt->data[e] - r->X->data[e]));
      nle_test(worst < 1e-9);
    }
    /* within-class covariance of X is I */
    double cm[3][2] = {{0}}, sw = 0;
    for (size_t i = 0; i < n; i++) cm[labels[i]][0] += r->X->data[i * 2] / 50.0;
    for (size_t i = 0; i < n; i++) sw += (r->X->data[i * 2] - cm[labels[i]][0]) * (r->X->data[i * 2] - cm[labels[i]][0]);
    nle_test_rel(sw / (double)(n - 3), 1.0, 1e-9);
  }
  /* kernel LDA with the linear kernel and a small ridge: LDA's axes */
  nle_lda_opts ko;
  nle_lda_opts_init(&ko);
  ko.kernel.kind = NLE_PDK_LINEAR, ko.keep_model = true, ko.ridge = 1e-6;
  nle_matd *Xk = NULL;
  if (r && nle_test_ok(nle_klda(ctx, Y, labels, &ko, &k))) {
    for (int t = 0; t < 2; t++) {
      nle_test(fabs(k->eigenvalues[t] - r->eigenvalues[t]) < 1e-4);
      double dotp = 0, na = 0, nb = 0;
      for (size_t i = 0; i < n; i++)
        dotp += k->X->data[i * 2 + t] * r->X->data[i * 2 + t], na += k->X->data[i * 2 + t] * k->X->data[i * 2 + t],
            nb += r->X->data[i * 2 + t] * r->X->data[i * 2 + t];
      if (!nle_test(fabs(dotp) / sqrt(na * nb) > 0.9999)) printf("  klda axis %d: cosine %g\n", t, dotp / sqrt(na * nb));
    }
    if (nle_test_ok(nle_projection_transform(ctx, k->model, Y, &Xk))) {
      double worst = 0, big = 0;
      for (size_t e = 0; e < 2 * n; e++) worst = fmax(worst, fabs(Xk->data[e] - k->X->data[e])), big = fmax(big, fabs(k->X->data[e]));
      nle_test(worst < 1e-6 * big);
    }
  }
  nle_lda_result_free(&r);
  nle_lda_result_free(&k);
  nle_matd_free(&Xt);
  nle_matd_free(&Xk);
  /* a constant feature: the default solver works in the data's range; an
   * explicit ridge 0 takes the Cholesky path, where T singular is an error
   * naming the rank */
  for (size_t i = 0; i < n; i++) Y->data[i * 4 + 2] = 1.0f;
  o.keep_model = false;
  nle_test_ok(nle_lda(ctx, Y, labels, &o, &r));
  nle_test(r && r->rank == 3);
  nle_lda_result_free(&r);
  o.ridge = 0;
  nle_test(nle_lda(ctx, Y, labels, &o, &r) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "rank 3 < D = 4"));
  o.ridge = 1e-3;
  nle_test_ok(nle_lda(ctx, Y, labels, &o, &r));
  nle_lda_result_free(&r);
  o.dim = 3;
  nle_test(nle_lda(ctx, Y, labels, &o, &r) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "at most C - 1 = 2"));
  for (size_t i = 0; i < n; i++) labels[i] = 7;
  o.dim = NLE_AUTO;
  nle_test(nle_lda(ctx, Y, labels, &o, &r) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "one class only (every label is 7)"));
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Scatters written out: S_w, S_b, T (D x D) of Y with labels 0..C-1. */
static void dense_scatters(const nle_matf *Y, const int32_t *labels, int C, double *Sb, double *Sw, double *St,
                           double *mean) {
  size_t n = Y->rows, D = Y->cols;
  double *cm = calloc((size_t)C * D, sizeof(double)), *cnt = calloc((size_t)C, sizeof(double));
  memset(mean, 0, D * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    cnt[labels[i]] += 1;
    for (size_t a = 0; a < D; a++) cm[labels[i] * D + a] += Y->data[i * D + a], mean[a] += Y->data[i * D + a] / (double)n;
  }
  for (int c = 0; c < C; c++)
    for (size_t a = 0; a < D; a++) cm[c * D + a] /= cnt[c];
  memset(Sb, 0, D * D * sizeof(double)), memset(Sw, 0, D * D * sizeof(double)), memset(St, 0, D * D * sizeof(double));
  for (size_t i = 0; i < n; i++)
    for (size_t a = 0; a < D; a++)
      for (size_t b = 0; b < D; b++) {
        Sw[a * D + b] += (Y->data[i * D + a] - cm[labels[i] * D + a]) * (Y->data[i * D + b] - cm[labels[i] * D + b]);
        St[a * D + b] += (Y->data[i * D + a] - mean[a]) * (Y->data[i * D + b] - mean[b]);
      }
  for (int c = 0; c < C; c++)
    for (size_t a = 0; a < D; a++)
      for (size_t b = 0; b < D; b++) Sb[a * D + b] += cnt[c] * (cm[c * D + a] - mean[a]) * (cm[c * D + b] - mean[b]);
  free(cm), free(cnt);
}

/* Issue 34: rank-deficient data (a constant feature, a feature twice
 * another) against a dense reference in the range of T, computed here: P
 * = T's eigenvectors above 1e-9 of its largest eigenvalue, the pencil
 * (P^T S_b P, P^T S_w P) by dsygv, each direction scaled to unit
 * within-class variance S_w / (N - C). The same run with the labels
 * renamed {0, 1, 2} -> {10, -1, 7} gives the same map; the classifier's
 * scores are scikit-learn's rule written out on the map. */
static void lda_rank_deficient(void) {
  nle_ctx *ctx = test_ctx(2);
  enum { n = 150, D = 6, C = 3 };
  int32_t labels[n], renamed[n];
  nle_matf *Y4 = classes(n, labels, 77), *Y = NULL;
  nle_test_ok(nle_matf_alloc(ctx, n, D, &Y));
  for (size_t i = 0; i < n; i++) {
    memcpy(Y->data + i * D, Y4->data + i * 4, 4 * sizeof(float));
    Y->data[i * D + 4] = 5.0f;                      /* constant */
    Y->data[i * D + 5] = 2.0f * Y4->data[i * 4 + 1]; /* collinear, exactly */
    renamed[i] = labels[i] == 0 ? 10 : labels[i] == 1 ? -1 : 7;
  }
  double Sb[D * D], Sw[D * D], St[D * D], mean[D], ev[D];
  dense_scatters(Y, labels, C, Sb, Sw, St, mean);
  nle_test(LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', D, St, D, ev) == 0);
  int r = 0;
  double P[D * D];
  for (int t = D - 1; t >= 0; t--)
    if (ev[t] > 1e-9 * ev[D - 1]) {
      for (int a = 0; a < D; a++) P[a * D + r] = St[a * D + t];
      r++;
    }
  nle_test(r == 4);
  double Br[16] = {0}, Wr[16] = {0}, w[4];
  for (int u = 0; u < r; u++)
    for (int v = 0; v < r; v++)
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++)
          Br[u * r + v] += P[a * D + u] * Sb[a * D + b] * P[b * D + v], Wr[u * r + v] += P[a * D + u] * Sw[a * D + b] * P[b * D + v];
  nle_test(LAPACKE_dsygv(LAPACK_ROW_MAJOR, 1, 'V', 'U', r, Br, r, Wr, r, w) == 0);
  nle_lda_opts o;
  nle_lda_opts_init(&o);
  o.keep_model = true;
  nle_lda_result *res = NULL, *ren = NULL;
  nle_matd *sc = NULL, *pr = NULL;
  if (nle_test_ok(nle_lda(ctx, Y, labels, &o, &res))) {
    nle_test(res->X->cols == 2 && res->rank == 4 && res->classes == 3);
    double wsum = 0;
    for (int t = 0; t < r; t++) wsum += fmax(w[t], 0);
    for (int t = 0; t < 2; t++) {
      /* direction t: u = P v_t sqrt(N - C) (v_t is S_w-normalised by dsygv) */
      double u[D] = {0}, worst = 0, big = 0, sign = 0;
      for (int a = 0; a < D; a++)
        for (int b = 0; b < r; b++) u[a] += P[a * D + b] * Br[b * r + (r - 1 - t)] * sqrt((double)(n - C));
      for (size_t i = 0; i < n; i++) {
        double z = 0;
        for (int a = 0; a < D; a++) z += (Y->data[i * D + a] - mean[a]) * u[a];
        if (!sign) sign = z * res->X->data[i * 2 + t] < 0 ? -1 : 1;
        worst = fmax(worst, fabs(sign * z - res->X->data[i * 2 + t])), big = fmax(big, fabs(z));
      }
      if (!nle_test(worst < 1e-6 * big)) printf("  direction %d: off by %g of %g\n", t, worst, big);
      nle_test_rel(res->eigenvalues[t], w[r - 1 - t] / (1 + w[r - 1 - t]), 1e-6);
      nle_test_rel(res->explained_variance_ratio[t], w[r - 1 - t] / wsum, 1e-6);
    }
    /* the classifier: s_k = -|z - c_k|^2 / 2 + log(N_k / N) on the map */
    double cm[C][2] = {{0}}, cnt[C] = {0};
    for (size_t i = 0; i < n; i++) {
      cnt[labels[i]] += 1;
      for (int t = 0; t < 2; t++) cm[labels[i]][t] += res->X->data[i * 2 + t];
    }
    for (int c = 0; c < C; c++) cm[c][0] /= cnt[c], cm[c][1] /= cnt[c];
    nle_test(res->model && res->model->classes == 3 && res->model->class_labels[2] == 2);
    if (nle_test_ok(nle_projection_decision(ctx, res->model, Y, &sc, &pr))) {
      double worst = 0, psum = 0;
      for (size_t i = 0; i < n; i++) {
        double s[C];
        for (int c = 0; c < C; c++) {
          double dz0 = res->X->data[i * 2] - cm[c][0], dz1 = res->X->data[i * 2 + 1] - cm[c][1];
          s[c] = -0.5 * (dz0 * dz0 + dz1 * dz1) + log(cnt[c] / n);
        }
        for (int c = 1; c < C; c++) {
          worst = fmax(worst, fabs((sc->data[i * C + c] - sc->data[i * C]) - (s[c] - s[0])));
          worst = fmax(worst, fabs(pr->data[i * C + c] / pr->data[i * C] - exp(s[c] - s[0])) / exp(s[c] - s[0]));
        }
        psum = fmax(psum, fabs(pr->data[i * C] + pr->data[i * C + 1] + pr->data[i * C + 2] - 1));
      }
      if (!nle_test(worst < 1e-8 && psum < 1e-12)) printf("  scores off by %g, probabilities sum off by %g\n", worst, psum);
    }
  }
  /* labels renamed: the same map; the classes are the values, increasing */
  if (res && nle_test_ok(nle_lda(ctx, Y, renamed, &o, &ren))) {
    double worst = 0;
    for (size_t e = 0; e < 2 * n; e++) worst = fmax(worst, fabs(ren->X->data[e] - res->X->data[e]));
    nle_test(worst < 1e-9);
    nle_test(ren->model->class_labels[0] == -1 && ren->model->class_labels[1] == 7 && ren->model->class_labels[2] == 10);
  }
  nle_lda_result_free(&res);
  nle_lda_result_free(&ren);
  nle_matd_free(&sc), nle_matd_free(&pr);
  /* kernel LDA on the same rank-deficient data and renamed labels: its
   * default ridge makes K^2 + ridge I definite, the map goes through */
  nle_lda_opts_init(&o);
  o.kernel.kind = NLE_PDK_LINEAR, o.ridge = 1e-6;
  if (nle_test_ok(nle_klda(ctx, Y, renamed, &o, &ren))) nle_test(ren->X->cols == 2 && ren->classes == 3);
  nle_lda_result_free(&ren);
  /* too few points for the classes; a wrong dim names the option */
  nle_lda_opts_init(&o);
  o.dim = 5;
  nle_test(nle_lda(ctx, Y, labels, &o, &res) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "dim=5 from 3 classes"));
  nle_matf view = {3, D, Y->data};
  nle_lda_opts_init(&o);
  nle_test(nle_lda(ctx, &view, labels, &o, &res) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "3 points in 3 classes"));
  nle_matf_free(&Y4);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Wide data (D > N: the N x N Gram route) against scikit-learn's route
 * written out densely here: the SVD of the N x D scaled within-class
 * deviations (dgesvd), then the SVD of the whitened, weighted class means;
 * the maps agree up to signs. */
static void lda_wide(void) {
  nle_ctx *ctx = test_ctx(2);
  enum { n = 30, D = 50, C = 3 };
  nle_matf *Y = test_random_matf(n, D, 91);
  int32_t labels[n];
  for (size_t i = 0; i < n; i++) {
    labels[i] = (int32_t)(i % C) * 4 - 1; /* -1, 3, 7 */
    Y->data[i * D + i % C] += 3.0f;
    Y->data[i * D + 7] = 2.0f; /* a constant feature */
  }
  double cm[C][D] = {{0}}, mean[D] = {0}, cnt[C] = {0}, sd[D] = {0};
  static double Xs[n * D], Sv[n], Vt[n * D], superb[n], B[C * n], S2[C], V2t[C * n], u;
  for (size_t i = 0; i < n; i++) {
    int c = (int)(i % C);
    cnt[c] += 1;
    for (int a = 0; a < D; a++) cm[c][a] += Y->data[i * D + a], mean[a] += Y->data[i * D + a] / n;
  }
  for (int c = 0; c < C; c++)
    for (int a = 0; a < D; a++) cm[c][a] /= cnt[c];
  for (size_t i = 0; i < n; i++)
    for (int a = 0; a < D; a++) {
      Xs[i * D + a] = Y->data[i * D + a] - cm[i % C][a];
      sd[a] += Xs[i * D + a] * Xs[i * D + a] / n;
    }
  for (int a = 0; a < D; a++) sd[a] = sd[a] > 0 ? sqrt(sd[a]) : 1.0;
  for (size_t i = 0; i < n; i++)
    for (int a = 0; a < D; a++) Xs[i * D + a] /= sd[a] * sqrt((double)(n - C));
  nle_test(LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'S', n, D, Xs, D, Sv, &u, 1, Vt, D, superb) == 0);
  int r = 0;
  while (r < n && Sv[r] > 1e-4) r++;
  nle_test(r == n - C);
  /* scalings (D x r) = Dinv V_r / S_r; B = sqrt(N_k / (C - 1)) (mu_k - mu) scalings */
  static double sc[D * n];
  for (int a = 0; a < D; a++)
    for (int t = 0; t < r; t++) sc[a * r + t] = Vt[t * D + a] / sd[a] / Sv[t];
  for (int c = 0; c < C; c++)
    for (int t = 0; t < r; t++) {
      double v = 0;
      for (int a = 0; a < D; a++) v += (cm[c][a] - mean[a]) * sc[a * r + t];
      B[c * r + t] = sqrt(cnt[c] / (C - 1)) * v;
    }
  nle_test(LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'S', C, r, B, r, S2, &u, 1, V2t, r, superb) == 0);
  nle_lda_result *res = NULL;
  if (nle_test_ok(nle_lda(ctx, Y, labels, NULL, &res))) {
    nle_test(res->X->cols == 2 && res->rank == r);
    for (int t = 0; t < 2; t++) {
      double worst = 0, big = 0, sign = 0;
      for (size_t i = 0; i < n; i++) {
        double z = 0;
        for (int a = 0; a < D; a++) {
          double w = 0;
          for (int v = 0; v < r; v++) w += sc[a * r + v] * V2t[t * r + v];
          z += (Y->data[i * D + a] - mean[a]) * w;
        }
        if (!sign) sign = z * res->X->data[i * 2 + t] < 0 ? -1 : 1;
        worst = fmax(worst, fabs(sign * z - res->X->data[i * 2 + t])), big = fmax(big, fabs(z));
      }
      if (!nle_test(worst < 1e-8 * big)) printf("  wide direction %d: off by %g of %g\n", t, worst, big);
      nle_test_rel(res->explained_variance_ratio[t], S2[t] * S2[t] / (S2[0] * S2[0] + S2[1] * S2[1] + S2[2] * S2[2]), 1e-8);
    }
  }
  nle_lda_result_free(&res);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

static void bad_input(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matd *T = french();
  nle_mds_input in = {NULL, T, NULL};
  nle_mds_result *r = NULL;
  struct {
    size_t at;
    double v;
    const char *msg;
  } cases[] = {{1, -3, "negative"}, {11, 2, "row 1, column 1 (the diagonal)"}, {1, NAN, "not finite"}, {1, 599, "not symmetric"}};
  for (size_t c = 0; c < 4; c++) {
    double keep = T->data[cases[c].at];
    T->data[cases[c].at] = cases[c].v;
    if (cases[c].v < 0) T->data[10] = cases[c].v; /* symmetric, still negative */
    nle_test(nle_mds(ctx, NLE_MDS_METRIC, &in, NULL, &r) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), cases[c].msg));
    T->data[cases[c].at] = keep, T->data[10] = T->data[1];
  }
  nle_matd *Z = NULL, *R = NULL;
  nle_matd_alloc(NULL, 4, 4, &Z);
  memset(Z->data, 0, 16 * sizeof(double));
  in.dissimilarities = Z;
  nle_test(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, NULL, &r) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "every dissimilarity is 0"));
  nle_matd_alloc(NULL, 4, 3, &R);
  in.dissimilarities = R;
  nle_test(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, NULL, &r) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "not square"));
  in.dissimilarities = T;
  nle_mds_opts o;
  nle_mds_opts_init(&o);
  o.dim = 10;
  nle_test(nle_mds(ctx, NLE_MDS_CLASSICAL, &in, &o, &r) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "dim < N"));
  /* duplicates: Sammon refuses them, naming the pair */
  nle_matf *Y = test_random_matf(20, 3, 2);
  memcpy(Y->data + 15, Y->data + 3, 3 * sizeof(float));
  nle_mds_input pts = {Y, NULL, NULL};
  nle_test(nle_mds(ctx, NLE_MDS_SAMMON, &pts, NULL, &r) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "rows 1 and 5"));
  /* over the memory cap: the error points to landmark MDS */
  nle_ctx_set_max_memory(ctx, 1000);
  nle_test(nle_mds(ctx, NLE_MDS_METRIC, &pts, NULL, &r) == NLE_ERR_MEMCAP && strstr(nle_ctx_error(ctx), "landmark MDS"));
  nle_test(r == NULL);
  nle_matf_free(&Y);
  nle_matd_free(&Z);
  nle_matd_free(&R);
  nle_matd_free(&T);
  nle_ctx_free(&ctx);
}

/* The packed kernel's parallel product against the dense product of the
 * same symmetric matrix (sizes that leave runs empty or uneven), and the
 * same bits at 1, 2 and 3 threads. */
static void packed_symv_vs_dense(void) {
  size_t sizes[] = {1, 5, 17, 300};
  for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++)
    for (size_t b = 1; b <= 5; b++) { /* 1 (symv), the widths inlined (2, 4) and the general loop (3, 5) */
      size_t n = sizes[c];
      double *A = malloc(n * n * sizeof(double)), *P = malloc(n * (n + 1) / 2 * sizeof(double));
      double *x = malloc(n * b * sizeof(double)), *y[3], *work = malloc((NLE__PACKED_BLOCKS + 1) * n * b * sizeof(double));
      nle_rng r;
      nle_rng_init(&r, 5, n);
      for (size_t i = 0; i < n; i++) {
        for (size_t t = 0; t < b; t++) x[i * b + t] = nle_rng_uniform(&r) - 0.5;
        for (size_t j = i; j < n; j++) A[i * n + j] = A[j * n + i] = nle_rng_uniform(&r) - 0.5;
      }
      for (size_t i = 0, k = 0; i < n; i++)
        for (size_t j = i; j < n; j++) P[k++] = A[i * n + j];
      for (int t = 0; t < 3; t++) {
        y[t] = malloc(n * b * sizeof(double));
        if (b == 1) nle__packed_symv(n, P, x, y[t], work, t + 1);
        else nle__packed_symm(n, P, x, y[t], b, work, t + 1);
      }
      double worst = 0.0;
      for (size_t i = 0; i < n; i++)
        for (size_t t = 0; t < b; t++) {
          double want = 0.0, scale = 0.0;
          for (size_t j = 0; j < n; j++) want += A[i * n + j] * x[j * b + t], scale += fabs(A[i * n + j] * x[j * b + t]);
          worst = fmax(worst, fabs(y[0][i * b + t] - want) / scale);
        }
      if (!nle_test(worst < 1e-14)) printf("  n = %zu, %zu columns: relative error %g\n", n, b, worst);
      nle_test(memcmp(y[0], y[1], n * b * sizeof(double)) == 0 && memcmp(y[0], y[2], n * b * sizeof(double)) == 0);
      for (int t = 0; t < 3; t++) free(y[t]);
      free(A), free(P), free(x), free(work);
    }
}

const nle_test_case mds_tests[] = {
    {"mds/packed_symv_vs_dense", packed_symv_vs_dense},
    {"mds/slide_examples", slide_examples},
    {"mds/french_classical", french_classical},
    {"mds/french_iterative", french_iterative},
    {"mds/pav_brute_force", pav_brute_force},
    {"mds/nonmetric_rank_invariance", nonmetric_rank_invariance},
    {"mds/classical_euclidean", classical_euclidean},
    {"mds/smacof_exact", smacof_exact},
    {"mds/landmark_exact", landmark_exact},
    {"mds/kpca", kpca_checks},
    {"mds/kpca_dense_reference", kpca_dense_reference},
    {"mds/kpca_upper_kernel_exact", kpca_upper_kernel_exact},
    {"mds/lda", lda_checks}, {"mds/lda_rank_deficient", lda_rank_deficient}, {"mds/lda_wide", lda_wide},
    {"mds/bad_input", bad_input},
    {NULL, NULL}};
