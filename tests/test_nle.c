/* test_nle.c — the embedding models: gradients against central finite
 * differences for every model and W- kind, the analytic N = 2 elastic
 * embedding (EE paper sec. 4.1), invariances, determinism, the lambda*
 * bounds and the homotopy. Optimisers: test_optimize.c; out-of-sample maps:
 * test_oos.c; the fast engines: test_engines.c. */
#include "harness.h"
#include "nle_common.h"
#include "../src/nle/nle_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void gradients_all_models(void) {
  size_t n = 24;
  nle_ctx *ctx = test_ctx(1);
  nle_csr *Wsym = random_weights(n, 4, 0, 0, 5), *P = random_weights(n, 4, 0, 1, 6), *Pc = random_weights(n, 5, 1, 0, 7);
  nle_matf *Y = test_random_matf(n, 3, 8);
  nle_matd *Wsq;
  nle_test_ok(nle_repulsive_dense(ctx, Y, NLE_WNEG_SQDIST, &Wsq));
  nle_csr *Wk = random_weights(n, 3, 0, 0, 9);
  struct {
    nle_model_kind kind;
    nle_wneg_kind wneg;
    const nle_csr *Wp;
    double lambda;
    const char *name;
  } cases[] = {
      {NLE_MODEL_EE, NLE_WNEG_UNIFORM, Wsym, 3.0, "EE uniform"},   {NLE_MODEL_EE, NLE_WNEG_SQDIST, Wsym, 0.7, "EE sqdist"},
      {NLE_MODEL_EE, NLE_WNEG_KNN, Wsym, 2.0, "EE sparse"},        {NLE_MODEL_TEE, NLE_WNEG_UNIFORM, Wsym, 3.0, "t-EE"},
      {NLE_MODEL_TEE, NLE_WNEG_SQDIST, Wsym, 0.7, "t-EE sqdist"},
      {NLE_MODEL_SSNE, NLE_WNEG_UNIFORM, P, 1.0, "s-SNE"},         {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, P, 1.0, "t-SNE"},
      {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, P, 4.0, "t-SNE lambda 4"}, {NLE_MODEL_SNE, NLE_WNEG_UNIFORM, Pc, 1.0, "SNE"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    nle_model_spec spec = test_model_spec(cases[c].kind, cases[c].lambda, cases[c].Wp);
    spec.wneg = cases[c].wneg;
    spec.Wneg_dense = Wsq;
    spec.Wneg_sparse = Wk;
    nle_model *m;
    nle_test_ok(nle_model_new(ctx, &spec, &m));
    for (size_t d = 1; d <= 3; d++) { /* d = 2 takes the SIMD repulsion path */
      nle_matd *X = random_x(n, d, 0.8, 10 + c);
      double err = gradient_error(ctx, m, X);
      if (!nle_test(err < 1e-7)) printf("  %s, d = %zu: relative gradient error %g\n", cases[c].name, d, err);
      nle_test_ok(nle_model_set_exaggeration(ctx, m, 4.0)); /* early exaggeration changes E consistently */
      err = gradient_error(ctx, m, X);
      if (!nle_test(err < 1e-7)) printf("  %s, d = %zu, exaggerated: relative gradient error %g\n", cases[c].name, d, err);
      nle_test_ok(nle_model_set_exaggeration(ctx, m, 1.0));
      nle_matd_free(&X);
    }
    nle_model_free(&m);
  }
  nle_csr_free(&Wsym);
  nle_csr_free(&P);
  nle_csr_free(&Pc);
  nle_csr_free(&Wk);
  nle_matd_free(&Wsq);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* EE paper sec. 4.1: two points in 1D, E(x) = 2 (w+ x^2 + lambda w- exp(-x^2)),
 * lambda* = w+ / w-; above it the minimiser is x = sqrt(log(lambda / lambda*)),
 * below it the points coincide. */
static void ee_two_points(void) {
  nle_ctx *ctx = test_ctx(1);
  double wplus = 0.5;
  nle_csr *W;
  nle_test_ok(nle_csr_alloc(ctx, 2, 2, 2, NLE_F64, &W));
  W->rowptr[1] = 1;
  W->rowptr[2] = 2;
  W->colind[0] = 1;
  W->colind[1] = 0;
  ((double *)W->val)[0] = ((double *)W->val)[1] = wplus;
  double lambdas[3] = {3.0, 0.9, 40.0};
  for (int l = 0; l < 3; l++) {
    nle_model_spec spec = test_model_spec(NLE_MODEL_EE, lambdas[l], W);
    nle_model *m;
    nle_test_ok(nle_model_new(ctx, &spec, &m));
    nle_matd *X, *G;
    nle_test_ok(nle_matd_alloc(ctx, 2, 1, &X));
    nle_test_ok(nle_matd_alloc(ctx, 2, 1, &G));
    double E;
    if (lambdas[l] > wplus) {
      double xs = sqrt(log(lambdas[l] / wplus)), Elo, Ehi;
      X->data[1] = xs;
      nle_test_ok(nle_model_eval(ctx, m, X, &E, G));
      nle_test_rel(E, 2 * (wplus * xs * xs + lambdas[l] * exp(-xs * xs)), 1e-14);
      nle_test(fabs(G->data[0]) < 1e-12 && fabs(G->data[1]) < 1e-12);
      X->data[1] = xs * 0.99;
      nle_model_eval(ctx, m, X, &Elo, NULL);
      X->data[1] = xs * 1.01;
      nle_model_eval(ctx, m, X, &Ehi, NULL);
      nle_test(Elo > E && Ehi > E);
      X->data[1] = 1e-3; /* x = 0 is a maximum: the gradient pushes apart */
      nle_test_ok(nle_model_eval(ctx, m, X, &E, G));
      nle_test(G->data[1] < 0);
    } else {
      X->data[1] = 0.3; /* below lambda*: pulled together from anywhere */
      nle_test_ok(nle_model_eval(ctx, m, X, &E, G));
      nle_test(G->data[1] > 0 && G->data[0] < 0);
    }
    nle_matd_free(&X);
    nle_matd_free(&G);
    nle_model_free(&m);
  }
  nle_csr_free(&W);
  nle_ctx_free(&ctx);
}

/* Translating X changes nothing; the gradient sums to zero; 1 and 2 threads
 * give the same bits. */
static void invariances_and_threads(void) {
  size_t n = 300;
  nle_csr *P = random_weights(n, 6, 0, 1, 21);
  nle_ctx *one = test_ctx(1), *two = test_ctx(1);
  nle_ctx_set_threads(two, 2);
  nle_model_kind kinds[3] = {NLE_MODEL_EE, NLE_MODEL_TSNE, NLE_MODEL_SSNE};
  for (int c = 0; c < 3; c++) {
    nle_model_spec spec = test_model_spec(kinds[c], kinds[c] == NLE_MODEL_EE ? 100.0 : 1.0, P);
    nle_model *m;
    nle_test_ok(nle_model_new(one, &spec, &m));
    nle_matd *X = random_x(n, 2, 2.0, 30), *G1, *G2;
    nle_test_ok(nle_matd_alloc(one, n, 2, &G1));
    nle_test_ok(nle_matd_alloc(one, n, 2, &G2));
    double E1, E2, Et, sum[2] = {0, 0};
    nle_test_ok(nle_model_eval(one, m, X, &E1, G1));
    nle_test_ok(nle_model_eval(two, m, X, &E2, G2));
    nle_test(E1 == E2 && !memcmp(G1->data, G2->data, n * 2 * sizeof(double)));
    for (size_t i = 0; i < n; i++) {
      sum[0] += G1->data[2 * i];
      sum[1] += G1->data[2 * i + 1];
      X->data[2 * i] += 5.0;
      X->data[2 * i + 1] -= 3.0;
    }
    nle_test(fabs(sum[0]) < 1e-9 * (1 + fabs(E1)) && fabs(sum[1]) < 1e-9 * (1 + fabs(E1)));
    nle_test_ok(nle_model_eval(one, m, X, &Et, NULL));
    nle_test_rel(Et, E1, 1e-12);
    nle_matd_free(&X);
    nle_matd_free(&G1);
    nle_matd_free(&G2);
    nle_model_free(&m);
  }
  nle_model_spec bad = test_model_spec(NLE_MODEL_EE, -1.0, P);
  nle_model *m = NULL;
  nle_test(nle_model_new(one, &bad, &m) == NLE_ERR_ARG && m == NULL);
  bad.lambda = 1.0;
  bad.wneg = NLE_WNEG_SQDIST; /* no dense matrix given */
  nle_test(nle_model_new(one, &bad, &m) == NLE_ERR_ARG);
  /* no sentinels: a zeroed theta or engine order is an error, not "default" */
  bad = test_model_spec(NLE_MODEL_EE, 1.0, P);
  bad.theta = 0;
  nle_test(nle_model_new(one, &bad, &m) == NLE_ERR_ARG && strstr(nle_ctx_error(one), "theta=0"));
  bad = test_model_spec(NLE_MODEL_EE, 1.0, P);
  bad.fft.order = 0;
  nle_test(nle_model_new(one, &bad, &m) == NLE_ERR_ARG && strstr(nle_ctx_error(one), "FFT order 0"));
  nle_model_spec fine = test_model_spec(NLE_MODEL_EE, 1.0, P);
  nle_test_ok(nle_model_new(one, &fine, &m));
  nle_model_free(&m);
  nle_csr_free(&P);
  nle_ctx_free(&one);
  nle_ctx_free(&two);
}

/* Smallest eigenvalue of L+ - lambda L- (dense, from the weights), relative
 * to the largest: 0 (the constant vector) until lambda* , negative after. */
static double second_eigenvalue(const double *Wp, const double *Wm, size_t n, double lambda) {
  double *L = calloc(n * n, sizeof(double)), *ev = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      if (i == j) continue;
      double w = Wp[i * n + j] - lambda * Wm[i * n + j];
      L[i * n + j] = -w;
      L[i * n + i] += w;
    }
  LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'N', 'U', (lapack_int)n, L, (lapack_int)n, ev);
  double v = ev[0] / fmax(fabs(ev[0]), fabs(ev[n - 1])) + 1e-9; /* > 0 while only rounding is negative */
  free(L);
  free(ev);
  return v;
}

/* EE's lambda* bounds bracket the bifurcation found numerically (where the
 * second eigenvalue of L+ - lambda L- crosses 0), for uniform and
 * squared-distance W-; and from a small X the optimiser collapses the points
 * below l1 and spreads them above u1. */
static void lambda_bounds(void) {
  size_t n = 40;
  nle_ctx *ctx = test_ctx(1);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "spiral:40", NULL, &ds));
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = (int)n - 1; /* full graph, as in the EE paper's spiral */
  nle_csr *g, *Wp;
  nle_test_ok(nle_knn_exact(ctx, ds->X, &ko, &g));
  nle_affinity_opts ao;
  nle_affinity_opts_init(&ao);
  ao.sigma = 1.5;
  nle_test_ok(nle_affinity_graph(ctx, g, &ao, &Wp));
  nle_matd *Wsq;
  nle_test_ok(nle_repulsive_dense(ctx, ds->X, NLE_WNEG_SQDIST, &Wsq));
  double *dp = calloc(n * n, sizeof(double)), *du = malloc(n * n * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    for (int64_t q = Wp->rowptr[i]; q < Wp->rowptr[i + 1]; q++) dp[i * n + (size_t)Wp->colind[q]] = nle_csr_value(Wp, q);
    for (size_t j = 0; j < n; j++) du[i * n + j] = i != j;
  }
  nle_wneg_kind kinds[2] = {NLE_WNEG_UNIFORM, NLE_WNEG_SQDIST};
  for (int c = 0; c < 2; c++) {
    const double *wm = kinds[c] == NLE_WNEG_UNIFORM ? du : Wsq->data;
    double l1, u1;
    nle_test_ok(nle_ee_lambda_bounds(ctx, Wp, kinds[c], Wsq, NULL, &l1, &u1));
    double lo = 0, hi = 1e-12;
    while (second_eigenvalue(dp, wm, n, hi) > 0) hi *= 2;
    for (int it = 0; it < 100; it++) {
      double mid = 0.5 * (lo + hi);
      if (second_eigenvalue(dp, wm, n, mid) > 0) lo = mid;
      else hi = mid;
    }
    double star = 0.5 * (lo + hi);
    if (!nle_test(l1 <= star * (1 + 1e-6) && star <= u1 * (1 + 1e-6) && l1 > 0)) /* bisection resolution */
      printf("  W- kind %d: l1 %g, lambda* %g, u1 %g\n", kinds[c], l1, star, u1);
    /* Uniform W-: L- has eigenvalues 0 and N only, so the bounds meet. */
    if (kinds[c] == NLE_WNEG_UNIFORM) nle_test(fabs(u1 - l1) <= 1e-12 * l1);
    /* The large-N path: the same l1, a valid (possibly looser) u1. */
    double l1z, u1z;
    nle_test_ok(nle_ee_lambda_bounds_lanczos(ctx, Wp, kinds[c], Wsq, NULL, &l1z, &u1z));
    if (!nle_test(fabs(l1z - l1) <= 1e-8 * l1 && u1z >= u1 * (1 - 1e-8) && star <= u1z * (1 + 1e-6)))
      printf("  Lanczos, W- kind %d: l1 %g (dense %g), u1 %g (dense %g), lambda* %g\n", kinds[c], l1z, l1, u1z, u1, star);
    /* Numerically: collapse below, spread above. */
    nle_model_spec spec = test_model_spec(NLE_MODEL_EE, 0.5 * l1, Wp);
    spec.wneg = kinds[c];
    spec.Wneg_dense = Wsq;
    nle_model *m;
    nle_test_ok(nle_model_new(ctx, &spec, &m));
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kappa = 0;
    oo.max_iters = 300;
    oo.tol = 0;
    nle_opt *opt;
    nle_test_ok(nle_opt_new(ctx, m, Wp, &oo, &opt));
    for (int side = 0; side < 2; side++) {
      nle_test_ok(nle_model_set_lambda(ctx, m, side ? 2.0 * u1 : 0.5 * l1));
      nle_matd *X = random_x(n, 1, 1e-3, 71);
      double before = 0, after = 0, mean = 0;
      for (size_t i = 0; i < n; i++) mean += X->data[i] / n;
      for (size_t i = 0; i < n; i++) before += pow(X->data[i] - mean, 2);
      nle_opt_report rep;
      nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0);
      mean = 0;
      for (size_t i = 0; i < n; i++) mean += X->data[i] / n;
      for (size_t i = 0; i < n; i++) after += pow(X->data[i] - mean, 2);
      if (!nle_test(side ? after > 10 * before : after < 0.1 * before))
        printf("  W- kind %d, %s: spread %g -> %g\n", kinds[c], side ? "above u1" : "below l1", before, after);
      nle_matd_free(&X);
    }
    nle_opt_free(&opt);
    nle_model_free(&m);
  }
  /* Sparse W- (here on the full graph): Lanczos against dense. */
  nle_csr *Wk;
  nle_test_ok(nle_repulsive_knn(ctx, g, &Wk));
  double l1d, u1d, l1z, u1z;
  nle_test_ok(nle_ee_lambda_bounds(ctx, Wp, NLE_WNEG_KNN, NULL, Wk, &l1d, &u1d));
  nle_test_ok(nle_ee_lambda_bounds_lanczos(ctx, Wp, NLE_WNEG_KNN, NULL, Wk, &l1z, &u1z));
  if (!nle_test(fabs(l1z - l1d) <= 1e-8 * l1d && u1z >= u1d * (1 - 1e-8) && l1d <= u1d))
    printf("  Lanczos, sparse W-: l1 %g (dense %g), u1 %g (dense %g)\n", l1z, l1d, u1z, u1d);
  nle_csr_free(&Wk);
  free(dp);
  free(du);
  nle_matd_free(&Wsq);
  nle_csr_free(&Wp);
  nle_csr_free(&g);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* The homotopy tracks X(lambda) with growing scale and calls back per step. */
static int count_steps(void *user, int step, double lambda, const nle_matd *X, const nle_opt_report *rep) {
  (void)lambda;
  (void)X;
  (void)rep;
  *(int *)user = step + 1;
  return 0;
}

static void homotopy_path(void) {
  nle_ctx *ctx = test_ctx(1);
  size_t n = 60;
  nle_csr *W = random_weights(n, 6, 0, 0, 81);
  nle_model_spec spec = test_model_spec(NLE_MODEL_EE, 1.0, W);
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  double l1, u1;
  nle_test_ok(nle_ee_lambda_bounds(ctx, W, NLE_WNEG_UNIFORM, NULL, NULL, &l1, &u1));
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  nle_opt *opt;
  nle_test_ok(nle_opt_new(ctx, m, W, &oo, &opt));
  nle_homotopy_opts ho;
  nle_homotopy_opts_init(&ho);
  ho.lambda_start = 1.5 * u1;
  ho.lambda_end = 100 * u1;
  ho.steps = 8;
  nle_matd *X = random_x(n, 2, 1e-3, 82);
  nle_opt_report total;
  int steps = 0;
  nle_test(nle_homotopy_run(ctx, m, opt, X, &ho, count_steps, &steps, &total) >= 0);
  nle_test(steps == 8 && total.iterations > 0);
  double spread = 0;
  for (size_t i = 0; i < 2 * n; i++) spread += X->data[i] * X->data[i];
  nle_test(spread > 1.0); /* expanded well beyond the 1e-3 start */
  nle_matd_free(&X);
  nle_opt_free(&opt);
  nle_model_free(&m);
  nle_csr_free(&W);
  nle_ctx_free(&ctx);
}

const nle_test_case nle_tests[] = {
    {"nle/gradients_all_models", gradients_all_models},
    {"nle/ee_two_points", ee_two_points},
    {"nle/invariances_and_threads", invariances_and_threads},
    {"nle/lambda_bounds", lambda_bounds},
    {"nle/homotopy_path", homotopy_path},
    {NULL, NULL}};
