/* test_nle.c — the embedding models: gradients against central finite
 * differences for every model and W- kind, the analytic N = 2 elastic
 * embedding (EE paper sec. 4.1), invariances, determinism. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* A random sparse W+ with about `per_row` entries per row: symmetric, or
 * with rows normalised to 1 (conditional, for SNE), or summing to 1 overall. */
static nle_csr *random_weights(size_t n, int per_row, int conditional, int normalise, uint64_t seed) {
  nle_ctx *ctx = test_ctx(seed);
  double *dense = calloc(n * n, sizeof(double));
  nle_rng r;
  nle_rng_init(&r, seed, 3);
  for (size_t i = 0; i < n; i++)
    for (int t = 0; t < per_row; t++) {
      size_t j = (size_t)nle_rng_below(&r, n);
      if (j == i) continue;
      double w = 0.1 + nle_rng_uniform(&r);
      dense[i * n + j] = w;
      if (!conditional) dense[j * n + i] = w;
    }
  double total = 0;
  for (size_t i = 0; i < n * n; i++) total += dense[i];
  for (size_t i = 0; conditional && i < n; i++) {
    double row = 0;
    for (size_t j = 0; j < n; j++) row += dense[i * n + j];
    for (size_t j = 0; j < n && row > 0; j++) dense[i * n + j] /= row;
  }
  int64_t nnz = 0;
  for (size_t i = 0; i < n * n; i++) nnz += dense[i] != 0;
  nle_csr *W;
  if (nle_csr_alloc(ctx, (int64_t)n, (int64_t)n, nnz, NLE_F64, &W)) exit(2);
  int64_t q = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < n; j++)
      if (dense[i * n + j] != 0) {
        W->colind[q] = (int32_t)j;
        ((double *)W->val)[q++] = normalise && !conditional ? dense[i * n + j] / total : dense[i * n + j];
      }
    W->rowptr[i + 1] = q;
  }
  free(dense);
  nle_ctx_free(&ctx);
  return W;
}

static nle_matd *random_x(size_t n, size_t d, double scale, uint64_t seed) {
  nle_ctx *ctx = test_ctx(seed);
  nle_matd *X;
  if (nle_matd_alloc(ctx, n, d, &X)) exit(2);
  nle_rng r;
  nle_rng_init(&r, seed, 11);
  for (size_t i = 0; i < n * d; i++) X->data[i] = scale * nle_rng_normal(&r);
  nle_ctx_free(&ctx);
  return X;
}

/* Largest |analytic - central difference| relative to the gradient's scale. */
static double gradient_error(nle_ctx *ctx, const nle_model *m, nle_matd *X) {
  nle_matd *G;
  double E, Ep, Em, worst = 0, norm = 0;
  if (nle_matd_alloc(ctx, X->rows, X->cols, &G) || nle_model_eval(ctx, m, X, &E, G)) return INFINITY;
  for (size_t i = 0; i < X->rows * X->cols; i++) norm = fmax(norm, fabs(G->data[i]));
  for (size_t i = 0; i < X->rows * X->cols; i++) {
    double x0 = X->data[i], h = 1e-5;
    X->data[i] = x0 + h;
    nle_model_eval(ctx, m, X, &Ep, NULL);
    X->data[i] = x0 - h;
    nle_model_eval(ctx, m, X, &Em, NULL);
    X->data[i] = x0;
    worst = fmax(worst, fabs((Ep - Em) / (2 * h) - G->data[i]));
  }
  nle_matd_free(&G);
  return worst / fmax(norm, 1e-300);
}

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
      {NLE_MODEL_SSNE, NLE_WNEG_UNIFORM, P, 1.0, "s-SNE"},         {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, P, 1.0, "t-SNE"},
      {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, P, 4.0, "t-SNE lambda 4"}, {NLE_MODEL_SNE, NLE_WNEG_UNIFORM, Pc, 1.0, "SNE"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    nle_model_spec spec = {cases[c].kind, cases[c].lambda, cases[c].Wp, cases[c].wneg, Wsq, Wk};
    nle_model *m;
    nle_test_ok(nle_model_new(ctx, &spec, &m));
    for (size_t d = 1; d <= 3; d += 2) {
      nle_matd *X = random_x(n, d, 0.8, 10 + c);
      double err = gradient_error(ctx, m, X);
      if (!nle_test(err < 1e-7)) printf("  %s, d = %zu: relative gradient error %g\n", cases[c].name, d, err);
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
    nle_model_spec spec = {NLE_MODEL_EE, lambdas[l], W, NLE_WNEG_UNIFORM, NULL, NULL};
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
    nle_model_spec spec = {kinds[c], kinds[c] == NLE_MODEL_EE ? 100.0 : 1.0, P, NLE_WNEG_UNIFORM, NULL, NULL};
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
  nle_model_spec bad = {NLE_MODEL_EE, -1.0, P, NLE_WNEG_UNIFORM, NULL, NULL};
  nle_model *m = NULL;
  nle_test(nle_model_new(one, &bad, &m) == NLE_ERR_ARG && m == NULL);
  bad.lambda = 1.0;
  bad.wneg = NLE_WNEG_SQDIST; /* no dense matrix given */
  nle_test(nle_model_new(one, &bad, &m) == NLE_ERR_ARG);
  nle_csr_free(&P);
  nle_ctx_free(&one);
  nle_ctx_free(&two);
}

const nle_test_case nle_tests[] = {{"nle/gradients_all_models", gradients_all_models},
                                   {"nle/ee_two_points", ee_two_points},
                                   {"nle/invariances_and_threads", invariances_and_threads},
                                   {NULL, NULL}};
