/* test_oos.c — the out-of-sample maps F(y) and f(x) (EE paper sec. 4.5):
 * training points map to themselves, objectives against finite
 * differences and against the augmented objective written out here,
 * saved models, and the batched fast engines against exact sums. */
#include "harness.h"
#include "nle_common.h"
#include "../src/nle/nle_internal.h"
#include "../src/nle/oos_internal.h"
#include "../src/io/io_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


/* EE paper sec. 4.5: with X a converged full-graph Gaussian EE, a training
 * point's own out-of-sample projection is its embedding (the gradient of E'
 * at x_n is the training stationarity condition); a point midway between two
 * neighbours lands near their embeddings; 1 and 2 threads agree. */
static void out_of_sample(void) {
  nle_ctx *ctx = test_ctx(1), *two = test_ctx(1);
  nle_ctx_set_threads(two, 2);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "spiral:60", NULL, &ds));
  size_t n = 60;
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = (int)n - 1;
  nle_csr *g, *Wp;
  nle_test_ok(nle_knn_exact(ctx, ds->X, &ko, &g));
  nle_affinity_opts ao;
  nle_affinity_opts_init(&ao);
  ao.sigma = 1.5;
  nle_test_ok(nle_affinity_graph(ctx, g, &ao, &Wp));
  nle_matd *Wsq;
  nle_test_ok(nle_repulsive_dense(ctx, ds->X, NLE_WNEG_SQDIST, &Wsq));
  double l1, u1;
  nle_test_ok(nle_ee_lambda_bounds(ctx, Wp, NLE_WNEG_SQDIST, Wsq, NULL, &l1, &u1));
  double lambda = 50 * u1;
  nle_model_spec spec = test_model_spec(NLE_MODEL_EE, lambda, Wp);
  spec.wneg = NLE_WNEG_SQDIST;
  spec.Wneg_dense = Wsq;
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  oo.kappa = 0;
  oo.tol = 0;
  oo.max_iters = 5000;
  oo.grad_tol = 1e-11;
  nle_opt *opt;
  nle_test_ok(nle_opt_new(ctx, m, Wp, &oo, &opt));
  nle_matd *X = random_x(n, 2, 1e-3, 101);
  nle_opt_report rep;
  nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0);
  double scale = 0;
  for (size_t i = 0; i < 2 * n; i++) scale = fmax(scale, fabs(X->data[i]));
  nle_oos_opts oos;
  nle_oos_opts_init(&oos);
  oos.lambda = lambda;
  oos.sigma = 1.5;
  oos.wneg = NLE_WNEG_SQDIST;
  nle_matd *F, *F2;
  nle_test_ok(nle_ee_map_forward(ctx, ds->X, X, ds->X, &oos, &F));
  nle_test_ok(nle_ee_map_forward(two, ds->X, X, ds->X, &oos, &F2));
  double worst = 0;
  for (size_t i = 0; i < 2 * n; i++) worst = fmax(worst, fabs(F->data[i] - X->data[i]));
  if (!nle_test(rep.grad_max < 1e-6 && worst < 1e-6 * scale))
    printf("  |grad| %g after %d iterations; max |F(y_n) - x_n| = %g (scale %g)\n", rep.grad_max, rep.iterations, worst, scale);
  nle_test(!memcmp(F->data, F2->data, 2 * n * sizeof(double)));
  /* A point midway between y_0 and its nearest neighbour. */
  int32_t nb = g->colind[g->rowptr[0]];
  nle_matf *mid;
  nle_test_ok(nle_matf_alloc(ctx, 1, 2, &mid));
  for (int t = 0; t < 2; t++) mid->data[t] = 0.5f * (ds->X->data[t] + ds->X->data[2 * (size_t)nb + t]);
  nle_matd *Fm;
  nle_test_ok(nle_ee_map_forward(ctx, ds->X, X, mid, &oos, &Fm));
  double gap = hypot(X->data[0] - X->data[2 * (size_t)nb], X->data[1] - X->data[2 * (size_t)nb + 1]);
  double to0 = hypot(Fm->data[0] - X->data[0], Fm->data[1] - X->data[1]);
  double tonb = hypot(Fm->data[0] - X->data[2 * (size_t)nb], Fm->data[1] - X->data[2 * (size_t)nb + 1]);
  if (!nle_test(to0 <= gap && tonb <= gap)) printf("  midpoint: %g and %g from the two, which are %g apart\n", to0, tonb, gap);
  nle_matd_free(&Fm);
  nle_matf_free(&mid);
  nle_matd_free(&F);
  nle_matd_free(&F2);
  nle_matd_free(&X);
  nle_opt_free(&opt);
  nle_model_free(&m);
  nle_matd_free(&Wsq);
  nle_csr_free(&Wp);
  nle_csr_free(&g);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
  nle_ctx_free(&two);
}

/* A trained model of Y with the embedding X: entropic W+ (sigma 0) or
 * Gaussian, on the exact kNN graph of k neighbours. */
static nle_trained *trained_of(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X, nle_model_kind kind,
                               nle_wneg_kind wneg, double sigma, int k) {
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = k;
  nle_csr *g = NULL;
  nle_ea_result *ea = NULL;
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  eo.perplexity = k / 3.0;
  nle_trained *t = NULL;
  nle_trained_spec spec;
  nle_trained_spec_init(&spec);
  spec.kind = kind;
  spec.lambda = kind == NLE_MODEL_EE || kind == NLE_MODEL_TEE ? 0.5 : 1.0;
  spec.wneg = wneg;
  spec.perplexity = eo.perplexity;
  spec.sigma = sigma == 0 ? NLE_AUTO : sigma; /* 0 here: entropic */
  spec.source = "test data";
  if (nle_knn_exact(ctx, Y, &ko, &g) || (sigma == 0 && nle_entropic_affinities(ctx, g, &eo, &ea)) ||
      nle_trained_new(ctx, &spec, Y, X, g, ea ? ea->beta : NULL, &t))
    printf("  trained model failed: %s\n", nle_ctx_error(ctx));
  nle_ea_result_free(&ea);
  nle_csr_free(&g);
  return t;
}

/* The out-of-sample objective E'(x, y) of every model, W- kind and W+ kind
 * against central differences in x, for a new point and a training point. */
static void oos_objective_gradients(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(120, 4, 71), *Ynew = test_random_matf(1, 4, 72);
  nle_matd *X = random_x(120, 2, 1.0, 73);
  struct {
    nle_model_kind kind;
    nle_wneg_kind wneg;
    double sigma;
  } cases[] = {{NLE_MODEL_EE, NLE_WNEG_UNIFORM, 0},   {NLE_MODEL_EE, NLE_WNEG_SQDIST, 0},
               {NLE_MODEL_EE, NLE_WNEG_KNN, 0.7},     {NLE_MODEL_TEE, NLE_WNEG_UNIFORM, 0},
               {NLE_MODEL_TEE, NLE_WNEG_SQDIST, 0.7}, {NLE_MODEL_SSNE, NLE_WNEG_UNIFORM, 0},
               {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, 0}, {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, 0.7},
               {NLE_MODEL_SNE, NLE_WNEG_UNIFORM, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    nle_trained *t = trained_of(ctx, Y, X, cases[c].kind, cases[c].wneg, cases[c].sigma, 15);
    if (!nle_test(t != NULL)) continue;
    for (int which = 0; which < 2; which++) {
      const float *y = which ? Y->data + 5 * 4 : Ynew->data;
      double x[2] = {0.3, -0.2}, g[2], E, Ep, Em, worst = 0, scale = 0;
      if (!nle_test_ok(nle_trained_objective(ctx, t, y, x, &E, g))) printf("  %s\n", nle_ctx_error(ctx));
      for (int i = 0; i < 2; i++) {
        double x0 = x[i], h = 1e-6;
        x[i] = x0 + h;
        nle_trained_objective(ctx, t, y, x, &Ep, NULL);
        x[i] = x0 - h;
        nle_trained_objective(ctx, t, y, x, &Em, NULL);
        x[i] = x0;
        worst = fmax(worst, fabs((Ep - Em) / (2 * h) - g[i]));
        scale = fmax(scale, fabs(g[i]));
      }
      if (!nle_test(worst <= 1e-6 * fmax(scale, 1e-12)))
        printf("  case %zu point %d: gradient error %.3g of %.3g\n", c, which, worst, scale);
    }
    nle_trained_free(&t);
  }
  nle_matd_free(&X);
  nle_matf_free(&Ynew);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* ---- E'(x, y) written out (EE paper sec. 4.5), independent of the code ----
 * The new point y joins the training objective as one more point whose
 * projection x alone moves (the paper's E'(x, y)); its W+ entries follow the
 * training's rule for W+ applied to the augmented set, in the training's
 * scale: for entropic W+ (P + P^T) / 2 (EE, t-EE, SNE) or / 2N (s-SNE,
 * t-SNE) with p_{n|y} over y's k nearest training points at the training's
 * perplexity and p_{y|n} = exp(-beta_n d) / sum_{m in kNN(n)} exp(-beta_n
 * d_nm) for those of them whose k-neighbourhood y falls within (the map's
 * rule: a training point farther than y's k nearest that would still count
 * y among its own is left out); for Gaussian W+ exp(-d / (2
 * sigma^2)) on y's k nearest, times 1 (EE) or 1 / N (s-SNE, t-SNE). Every
 * quantity here is recomputed by brute force: the neighbours, the betas (by
 * bisection on the entropy in nats), Z. */

/* beta with -sum p log p = log(perplexity), p ∝ exp(-beta d) over the k
 * squared distances d (sorted), by bisection on log beta. */
static double beta_by_bisection(const double *d, int k, double perplexity) {
  double lo = -60, hi = 60;
  for (int it = 0; it < 200; it++) {
    double mid = 0.5 * (lo + hi), beta = exp(mid), z = 0, h = 0;
    for (int c = 0; c < k; c++) z += exp(-beta * (d[c] - d[0]));
    for (int c = 0; c < k; c++) {
      double p = exp(-beta * (d[c] - d[0])) / z;
      if (p > 0) h -= p * log(p);
    }
    if (h > log(perplexity)) lo = mid; /* too flat: a larger beta */
    else hi = mid;
  }
  return exp(0.5 * (lo + hi));
}

static double sqdist_ff(const float *a, const float *b, size_t D) {
  double s = 0;
  for (size_t c = 0; c < D; c++) s += ((double)a[c] - b[c]) * ((double)a[c] - b[c]);
  return s;
}

/* The k nearest of the N rows of Y to y (excluding row `self`, -1 for
 * none), by selection: idx[k], their squared distances d[k], ascending. */
static void nearest_k(const nle_matf *Y, const float *y, long self, int k, int32_t *idx, double *d) {
  size_t n = Y->rows, D = Y->cols;
  for (int c = 0; c < k; c++) d[c] = INFINITY, idx[c] = -1;
  for (size_t i = 0; i < n; i++) {
    if ((long)i == self) continue;
    double s = sqdist_ff(y, Y->data + i * D, D);
    if (s >= d[k - 1]) continue;
    int c = k - 1;
    for (; c > 0 && d[c - 1] > s; c--) d[c] = d[c - 1], idx[c] = idx[c - 1];
    d[c] = s, idx[c] = (int32_t)i;
  }
}

typedef struct {
  nle_model_kind kind;
  nle_wneg_kind wneg;
  double sigma, lambda, perplexity;
  int k;
} oos_formula_case;

/* E'(x, y) by the formula above. */
static double oos_formula(const oos_formula_case *fc, const nle_matf *Y, const nle_matd *X, const double *beta,
                          const double *radius, const double *logz, const float *y, const double *x) {
  size_t n = Y->rows, D = Y->cols, dx = X->cols;
  int k = fc->k;
  int32_t *idx = malloc((size_t)k * sizeof(int32_t));
  double *d = malloc((size_t)k * sizeof(double)), *a = calloc(n, sizeof(double));
  nearest_k(Y, y, -1, k, idx, d);
  int normalised = fc->kind == NLE_MODEL_SSNE || fc->kind == NLE_MODEL_TSNE;
  if (fc->sigma > 0) {
    for (int c = 0; c < k; c++) a[idx[c]] = exp(-d[c] / (2 * fc->sigma * fc->sigma)) / (normalised ? (double)n : 1.0);
  } else {
    double by = beta_by_bisection(d, k, fc->perplexity), z = 0;
    for (int c = 0; c < k; c++) z += exp(-by * (d[c] - d[0]));
    for (int c = 0; c < k; c++) a[idx[c]] += exp(-by * (d[c] - d[0])) / z; /* p_{n|y} */
    for (int c = 0; c < k; c++) { /* p_{y|n} */
      int32_t i = idx[c];
      if (d[c] <= radius[i]) a[i] += exp(-beta[i] * d[c] - logz[i]);
    }
    for (size_t i = 0; i < n; i++) a[i] *= normalised ? 0.5 / (double)n : 0.5;
  }
  int student = fc->kind == NLE_MODEL_TSNE || fc->kind == NLE_MODEL_TEE;
  double att = 0, rep = 0, snelog = 0, Z = 0;
  for (size_t i = 0; i < n; i++) {
    double dn = 0;
    for (size_t c = 0; c < dx; c++) dn += (x[c] - X->data[i * dx + c]) * (x[c] - X->data[i * dx + c]);
    double K = student ? 1 / (1 + dn) : exp(-dn);
    att += 2 * a[i] * -log(K); /* -log K: d for the Gaussian kernel, log(1 + d) for Student's */
    double wm = fc->wneg == NLE_WNEG_SQDIST ? sqdist_ff(y, Y->data + i * D, D) : 1.0;
    rep += wm * K;
    if (fc->kind == NLE_MODEL_SNE || normalised) {
      double zi = 0; /* row i's normaliser at the training X */
      for (size_t j = 0; j < n; j++) {
        if (j == i) continue;
        double dij = 0;
        for (size_t c = 0; c < dx; c++) dij += (X->data[i * dx + c] - X->data[j * dx + c]) * (X->data[i * dx + c] - X->data[j * dx + c]);
        zi += student ? 1 / (1 + dij) : exp(-dij);
      }
      Z += zi;
      snelog += log1p(K / zi); /* log(z_i + K_i) less the constant log z_i */
    }
  }
  double E;
  if (fc->kind == NLE_MODEL_EE || fc->kind == NLE_MODEL_TEE) E = att + 2 * fc->lambda * rep; /* the paper's E' */
  else if (fc->kind == NLE_MODEL_SNE) E = att + fc->lambda * (log(rep) + snelog);
  else E = att + fc->lambda * log(Z + 2 * rep); /* Z over the augmented set: y's pairs both ways */
  free(idx), free(d), free(a);
  return E;
}

/* nle_trained_objective against the formula, for each model and W+ kind, at
 * new points and at several x; then a training point of a converged
 * full-graph EE maps onto its own embedding. */
static void oos_objective_formula(void) {
  nle_ctx *ctx = test_ctx(1);
  size_t n = 150, D = 4;
  nle_matf *Y = test_random_matf(n, D, 81), *Ynew = test_random_matf(3, D, 82);
  nle_matd *X = random_x(n, 2, 1.5, 83);
  oos_formula_case cases[] = {
      {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, 0, 1.0, 5, 15},   {NLE_MODEL_SSNE, NLE_WNEG_UNIFORM, 0, 1.0, 5, 15},
      {NLE_MODEL_TSNE, NLE_WNEG_UNIFORM, 0.7, 1.0, 5, 12}, {NLE_MODEL_SSNE, NLE_WNEG_UNIFORM, 0.7, 1.0, 5, 12},
      {NLE_MODEL_EE, NLE_WNEG_UNIFORM, 0, 0.5, 5, 15},     {NLE_MODEL_EE, NLE_WNEG_SQDIST, 0, 0.02, 5, 15},
      {NLE_MODEL_EE, NLE_WNEG_UNIFORM, 0.7, 0.5, 5, 12},   {NLE_MODEL_TEE, NLE_WNEG_UNIFORM, 0, 0.5, 5, 15},
      {NLE_MODEL_SNE, NLE_WNEG_UNIFORM, 0, 1.0, 5, 15}};
  double *beta = malloc(n * sizeof(double)), *radius = malloc(n * sizeof(double)), *logz = malloc(n * sizeof(double));
  for (size_t cc = 0; cc < sizeof cases / sizeof *cases; cc++) {
    const oos_formula_case *fc = &cases[cc];
    int k = fc->k;
    /* the training graph, its betas and normalisers, by brute force */
    int32_t idx[64];
    double d[64];
    for (size_t i = 0; i < n; i++) {
      nearest_k(Y, Y->data + i * D, (long)i, k, idx, d);
      beta[i] = beta_by_bisection(d, k, fc->perplexity);
      radius[i] = d[k - 1];
      double z = 0;
      for (int c = 0; c < k; c++) z += exp(-beta[i] * d[c]);
      logz[i] = log(z);
    }
    nle_knn_opts ko;
    nle_knn_opts_init(&ko);
    ko.k = k;
    nle_csr *g = NULL;
    nle_trained_spec spec;
    nle_trained_spec_init(&spec);
    spec.kind = fc->kind, spec.lambda = fc->lambda, spec.wneg = fc->wneg, spec.perplexity = fc->perplexity;
    spec.sigma = fc->sigma > 0 ? fc->sigma : NLE_AUTO;
    nle_trained *t = NULL;
    if (!nle_test_ok(nle_knn_exact(ctx, Y, &ko, &g)) ||
        !nle_test_ok(nle_trained_new(ctx, &spec, Y, X, g, fc->sigma > 0 ? NULL : beta, &t))) {
      nle_csr_free(&g);
      continue;
    }
    double worst = 0;
    for (size_t q = 0; q < Ynew->rows; q++)
      for (int at = 0; at < 3; at++) {
        double x[2] = {0.4 * at - 0.3, 0.25 * (double)q - 0.2}, E = NAN;
        nle_test_ok(nle_trained_objective(ctx, t, Ynew->data + q * D, x, &E, NULL));
        double want = oos_formula(fc, Y, X, beta, radius, logz, Ynew->data + q * D, x);
        worst = fmax(worst, fabs(E - want) / fmax(fabs(want), 1e-300));
      }
    /* float data searched in double: 6e-8 at most here; the planted 1 / N for
     * 0.5 / N in t-SNE's W+ scale moved E' by 10% */
    if (!nle_test(worst < 1e-6) || getenv("NLE_TEST_VERBOSE"))
      printf("  case %zu (%s, sigma %g): E' off the formula by %.3g (relative)\n", cc, nle_model_name(fc->kind),
             fc->sigma, worst);
    nle_trained_free(&t);
    nle_csr_free(&g);
  }
  free(beta), free(radius), free(logz);
  nle_matd_free(&X);
  nle_matf_free(&Ynew);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* F(y) of the training points of converged EE and t-EE with full-graph
 * Gaussian W+ (EE paper sec. 4.5): at x_n the gradient of E'(x, y_n) is the
 * training's stationarity condition for point n (the one difference: y_n's
 * own pair, whose force at x_n is 0, takes the place of its farthest
 * neighbour, whose weight is printed with NLE_TEST_VERBOSE), so each
 * training point maps onto its own embedding to the optimiser's tolerance
 * (measured: 2e-9 and 4e-9 of the map's scale). */
static void oos_training_points_fixed(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "spiral:80", NULL, &ds));
  size_t n = ds->X->rows;
  double sigma = 1.5;
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = (int)n - 1;
  nle_csr *g = NULL, *Wp = NULL;
  nle_test_ok(nle_knn_exact(ctx, ds->X, &ko, &g));
  nle_affinity_opts ao;
  nle_affinity_opts_init(&ao);
  ao.sigma = sigma;
  nle_test_ok(nle_affinity_graph(ctx, g, &ao, &Wp));
  double far = 0; /* the largest squared distance of any point's farthest pair */
  for (int64_t q = 0; q < g->nnz; q++) far = fmax(far, nle_csr_value(g, q));
  nle_model_kind kinds[] = {NLE_MODEL_EE, NLE_MODEL_TEE};
  for (int kk = 0; kk < 2; kk++) {
    double lambda = kinds[kk] == NLE_MODEL_EE ? 0.05 : 0.02;
    nle_model_spec spec = test_model_spec(kinds[kk], lambda, Wp);
    nle_model *m = NULL;
    nle_opt *opt = NULL;
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kappa = 0, oo.tol = 0, oo.max_iters = 20000, oo.grad_tol = 1e-12;
    nle_matd *X = random_x(n, 2, 1e-2, 91), *F = NULL;
    nle_opt_report rep;
    nle_test_ok(nle_model_new(ctx, &spec, &m));
    if (!nle_test_ok(nle_opt_new(ctx, m, Wp, &oo, &opt)) || !nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0))
      printf("  %s\n", nle_ctx_error(ctx));
    nle_trained_spec ts;
    nle_trained_spec_init(&ts);
    ts.kind = kinds[kk], ts.lambda = lambda, ts.sigma = sigma, ts.source = "spiral:80";
    nle_trained *t = NULL;
    nle_test_ok(nle_trained_new(ctx, &ts, ds->X, X, g, NULL, &t));
    if (t) nle_test_ok(nle_trained_transform(ctx, t, ds->X, 2000, &F));
    double worst = 0, scale = 0;
    for (size_t i = 0; i < 2 * n; i++) scale = fmax(scale, fabs(X->data[i]));
    for (size_t i = 0; F && i < 2 * n; i++) worst = fmax(worst, fabs(F->data[i] - X->data[i]));
    if (!nle_test(F && rep.grad_max < 1e-6 && worst < 1e-7 * scale) || getenv("NLE_TEST_VERBOSE"))
      printf("  %s: |grad| %.3g after %d iterations; max |F(y_n) - x_n| = %.3g (map scale %.3g; farthest pair's "
             "weight %.3g)\n", nle_model_name(kinds[kk]), rep.grad_max, rep.iterations, worst, scale,
             exp(-far / (2 * sigma * sigma)));
    nle_matd_free(&F);
    nle_trained_free(&t);
    nle_matd_free(&X);
    nle_opt_free(&opt);
    nle_model_free(&m);
  }
  nle_csr_free(&Wp);
  nle_csr_free(&g);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* A trained map for the out-of-sample tests: exact kNN (k), entropic W+
 * (perplexity), `iters` iterations of the default optimiser with the exact
 * engine from a small random start; X, the kNN graph and the betas are kept
 * in the trained model. `scale` > 0 rescales X to that extent first. */
static nle_trained *train_for_oos(nle_ctx *ctx, const nle_matf *train, nle_model_kind kind, int k, double perplexity,
                                  double lambda, int iters, double scale, const char *source, nle_matd **Xout) {
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = k;
  nle_csr *g = NULL, *W = NULL;
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  eo.perplexity = perplexity;
  nle_ea_result *ea = NULL;
  nle_test_ok(nle_knn_exact(ctx, train, &ko, &g));
  nle_test_ok(nle_entropic_affinities(ctx, g, &eo, &ea));
  nle_test_ok(nle_affinity_symmetrize(ctx, ea->P, kind == NLE_MODEL_TSNE, &W));
  nle_model_spec spec = test_model_spec(kind, lambda, W);
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  oo.max_iters = iters;
  nle_opt *opt;
  nle_test_ok(nle_opt_new(ctx, m, W, &oo, &opt));
  size_t n = train->rows;
  nle_matd *X = random_x(n, 2, 1e-3, 74);
  nle_opt_report rep;
  nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0);
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n * 2; i++) lo = fmin(lo, X->data[i]), hi = fmax(hi, X->data[i]);
  for (size_t i = 0; scale > 0 && i < n * 2; i++) X->data[i] *= scale / (hi - lo);
  nle_trained_spec ts;
  nle_trained_spec_init(&ts);
  ts.kind = kind;
  ts.lambda = lambda;
  ts.perplexity = perplexity;
  ts.source = source;
  nle_trained *t = NULL;
  nle_test_ok(nle_trained_new(ctx, &ts, train, X, g, ea->beta, &t));
  nle_opt_free(&opt);
  nle_model_free(&m);
  nle_csr_free(&W);
  nle_ea_result_free(&ea);
  nle_csr_free(&g);
  *Xout = X;
  return t;
}

/* F(y) of trained t-SNE and EE: training points map (close) to their own
 * embedding, held-out points into their class's cluster; the model file
 * gives the same maps after loading, with the data copied or referenced. */
static void oos_trained_maps(void) {
  nle_ctx *ctx = test_ctx(5);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "blobs:600:10:4", NULL, &ds));
  size_t ntr = 500, D = 10;
  nle_matf train = {ntr, D, ds->X->data}, held = {600 - ntr, D, ds->X->data + ntr * D};
  nle_model_kind kinds[] = {NLE_MODEL_TSNE, NLE_MODEL_EE};
  for (int kk = 0; kk < 2; kk++) {
    nle_matd *X = NULL;
    nle_trained *t = train_for_oos(ctx, &train, kinds[kk], 45, 15, 1.0, 400, 0, "blobs:600:10:4", &X);
    /* Training points: |F(y_n) - x_n| against the distance to x_n's nearest
     * embedded neighbour, median over points. */
    nle_matd *F = NULL, *Fh = NULL;
    nle_test_ok(nle_trained_transform(ctx, t, &train, 500, &F));
    double *ratio = malloc(ntr * sizeof(double));
    for (size_t i = 0; i < ntr; i++) {
      double nn = INFINITY;
      for (size_t j = 0; j < ntr; j++)
        if (j != i) nn = fmin(nn, hypot(X->data[2 * i] - X->data[2 * j], X->data[2 * i + 1] - X->data[2 * j + 1]));
      ratio[i] = hypot(F->data[2 * i] - X->data[2 * i], F->data[2 * i + 1] - X->data[2 * i + 1]) / fmax(nn, 1e-300);
    }
    int below = 0;
    for (size_t i = 0; i < ntr; i++) below += ratio[i] < 0.5;
    if (!nle_test(below >= (int)(0.8 * ntr))) printf("  model %d: %d of %zu training points map within half a NN distance\n", kk, below, ntr);
    /* Held-out points land among their class: 1-NN labels from training. */
    nle_test_ok(nle_trained_transform(ctx, t, &held, 500, &Fh));
    int right = 0;
    for (size_t i = 0; i < held.rows; i++) {
      size_t best = 0;
      double bd = INFINITY;
      for (size_t j = 0; j < ntr; j++) {
        double dd = hypot(Fh->data[2 * i] - X->data[2 * j], Fh->data[2 * i + 1] - X->data[2 * j + 1]);
        if (dd < bd) bd = dd, best = j;
      }
      right += ds->labels[best] == ds->labels[ntr + i];
    }
    if (!nle_test(right >= (int)(0.95 * held.rows))) printf("  model %d: %d of %zu held-out points in their class\n", kk, right, held.rows);
    /* These maps hold clusters flung far apart (W+ is disconnected): too
     * wide for the fast engines' grids, so F(y) falls back to exact sums. */
    nle_matd *Ff = NULL;
    nle_test_ok(nle_trained_set_engine(ctx, t, kinds[kk] == NLE_MODEL_TSNE ? NLE_REPULSION_FFT : NLE_REPULSION_FGT));
    nle_test_ok(nle_trained_transform(ctx, t, &held, 500, &Ff));
    nle_test(!memcmp(Ff->data, Fh->data, held.rows * 2 * sizeof(double)));
    nle_matd_free(&Ff);
    nle_test_ok(nle_trained_set_engine(ctx, t, NLE_REPULSION_EXACT));
    /* The model file, with the data copied and referenced. */
    for (int copy = 1; copy >= 0; copy--) {
      const char *path = test_path(copy ? "copy.nle" : "ref.nle");
      nle_test_ok(nle_trained_save(ctx, t, path, copy));
      nle_trained *back = NULL;
      nle_matd *Fb = NULL;
      nle_test_ok(nle_trained_load(ctx, path, &back));
      if (!copy) {
        nle_test(back->Y == NULL && nle_trained_transform(ctx, back, &held, 500, &Fb) == NLE_ERR_ARG);
        nle_test(nle_trained_attach_data(ctx, back, &held) == NLE_ERR_VALUE);
        nle_test_ok(nle_trained_attach_data(ctx, back, &train));
      }
      nle_test_ok(nle_trained_transform(ctx, back, &held, 500, &Fb));
      nle_test(Fb && !memcmp(Fb->data, Fh->data, held.rows * 2 * sizeof(double)));
      nle_matd_free(&Fb);
      nle_trained_free(&back);
      if (copy && kk == 0) {
        char original[4096]; /* test_path's buffer is reused by the copies */
        snprintf(original, sizeof original, "%s", path);
        int tried = 0, accepted = damaged_copies_accepted(ctx, original, load_model_file, &tried);
        if (!nle_test(tried > 384 && accepted == 0)) printf("  model: %d of %d damaged copies accepted\n", accepted, tried);
      }
    }
    free(ratio);
    nle_matd_free(&F);
    nle_matd_free(&Fh);
    nle_trained_free(&t);
    nle_matd_free(&X);
  }
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* spiral:700: the first 600 points to train on, the last 100 held out. */
static nle_dataset *spiral_split(nle_ctx *ctx, nle_matf *train, nle_matf *held) {
  nle_dataset *ds = NULL;
  nle_test_ok(nle_dataset_read(ctx, "spiral:700", NULL, &ds));
  size_t ntr = 600, D = ds->X->cols;
  *train = (nle_matf){ntr, D, ds->X->data};
  *held = (nle_matf){700 - ntr, D, ds->X->data + ntr * D};
  return ds;
}

/* A t-SNE or EE map of the training points for the fast engines' tests.
 * F(y) needs no optimal X: the t-SNE map, which keeps expanding, is scaled
 * to 40 kernel lengths so that the FFT grid holds it. */
static nle_trained *spiral_model(nle_ctx *ctx, const nle_matf *train, nle_model_kind kind, int iters, nle_matd **X) {
  double lambda = kind == NLE_MODEL_EE ? 1e-3 : 1.0, scale = kind == NLE_MODEL_TSNE ? 40.0 : 0.0;
  return train_for_oos(ctx, train, kind, 30, 10, lambda, iters, scale, "spiral:700", X);
}

/* F(y) with the fast engines (all new points minimised together, O(M + N)
 * per iteration) against the exact sums, on a connected map: each point
 * within 5e-3 (FFT) or 2e-5 (FGT) of the map's rms radius of its
 * exact-engine position. Barnes-Hut does not serve F(y). nle_transform
 * gives the same bits as nle_trained_transform with the engine it
 * resolves, and leaves the model's engine alone. */
static void oos_fast_engines(void) {
  nle_ctx *ctx = test_ctx(6);
  nle_matf train, held;
  nle_dataset *ds = spiral_split(ctx, &train, &held);
  size_t ntr = train.rows;
  nle_model_kind kinds[] = {NLE_MODEL_TSNE, NLE_MODEL_EE};
  for (int kk = 0; kk < 2; kk++) {
    nle_matd *X = NULL;
    nle_trained *t = spiral_model(ctx, &train, kinds[kk], 200, &X);
    nle_test(t->engine == NLE_REPULSION_EXACT); /* below 5,000 training points */
    nle_matd *Fe = NULL, *Ff = NULL;
    nle_test_ok(nle_trained_transform(ctx, t, &held, 300, &Fe));
    nle_test_ok(nle_trained_set_engine(ctx, t, kinds[kk] == NLE_MODEL_TSNE ? NLE_REPULSION_FFT : NLE_REPULSION_FGT));
    nle_test(nle_trained_set_engine(ctx, t, NLE_REPULSION_BH) == NLE_ERR_ARG);
    if (kinds[kk] == NLE_MODEL_TSNE) nle_test(nle_trained_set_engine(ctx, t, NLE_REPULSION_FGT) == NLE_ERR_ARG);
    nle_test_ok(nle_trained_transform(ctx, t, &held, 300, &Ff));
    /* the front door: the same maps, NLE_AUTO resolved and reported, the
     * model left as it was */
    nle_repulsion fast = kinds[kk] == NLE_MODEL_TSNE ? NLE_REPULSION_FFT : NLE_REPULSION_FGT;
    nle_test_ok(nle_trained_set_engine(ctx, t, NLE_REPULSION_EXACT));
    nle_transform_opts to;
    nle_transform_opts_init(&to);
    nle_test(to.max_iters == NLE_AUTO && to.engine == NLE_REPULSION_AUTO);
    nle_transform_result *auto_run = NULL, *fast_run = NULL, *bad = NULL;
    to.max_iters = 300;
    nle_test_ok(nle_transform(ctx, t, &held, &to, &auto_run));
    to.engine = fast;
    nle_test_ok(nle_transform(ctx, t, &held, &to, &fast_run));
    nle_test(t->engine == NLE_REPULSION_EXACT);
    nle_test(auto_run && auto_run->resolved.engine == NLE_REPULSION_EXACT && auto_run->resolved.max_iters == 300 &&
             auto_run->m == held.rows && Fe && !memcmp(auto_run->X->data, Fe->data, held.rows * 2 * sizeof(double)));
    nle_test(fast_run && fast_run->resolved.engine == fast && Ff &&
             !memcmp(fast_run->X->data, Ff->data, held.rows * 2 * sizeof(double)));
    to.engine = NLE_REPULSION_BH;
    nle_test(nle_transform(ctx, t, &held, &to, &bad) == NLE_ERR_ARG && bad == NULL);
    to.engine = NLE_REPULSION_AUTO;
    to.max_iters = -3;
    nle_test(nle_transform(ctx, t, &held, &to, &bad) == NLE_ERR_ARG && bad == NULL &&
             strstr(nle_ctx_error(ctx), "max_iters"));
    nle_transform_result_free(&auto_run);
    nle_transform_result_free(&fast_run);
    double rms = 0.0, worst = 0.0, cx = 0.0, cy = 0.0;
    for (size_t i = 0; i < ntr; i++) cx += X->data[2 * i] / (double)ntr, cy += X->data[2 * i + 1] / (double)ntr;
    for (size_t i = 0; i < ntr; i++) rms += (pow(X->data[2 * i] - cx, 2) + pow(X->data[2 * i + 1] - cy, 2)) / (double)ntr;
    rms = sqrt(rms);
    for (size_t i = 0; Fe && Ff && i < held.rows; i++)
      worst = fmax(worst, hypot(Ff->data[2 * i] - Fe->data[2 * i], Ff->data[2 * i + 1] - Fe->data[2 * i + 1]));
    double bound = kinds[kk] == NLE_MODEL_TSNE ? 5e-3 : 2e-5; /* FFT, FGT: measured 1.4e-3 to 3.1e-3, 1e-6 to 4e-6 */
    if (!nle_test(Fe && Ff && worst <= bound * rms) || getenv("NLE_TEST_VERBOSE"))
      printf("  model %d: fast-engine F(y) up to %.3g from the exact one (map radius %.3g)\n", kk, worst, rms);
    nle_matd_free(&Fe);
    nle_matd_free(&Ff);
    nle_matd_free(&X);
    nle_trained_free(&t);
  }
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* Every engine of the table (a new one included, by its row alone): one
 * that says it serves new points is taken by F(y) of the models it serves
 * and places them near the exact engine's places; one that does not is
 * refused. */
static void oos_every_engine_of_the_table(void) {
  int served[32] = {0}, engines = 0; /* served[id]: the models (of 2) whose F(y) took engine id */
  nle_ctx *ctx = test_ctx(6);
  nle_matf train, held;
  nle_dataset *ds = spiral_split(ctx, &train, &held);
  size_t ntr = train.rows;
  for (nle_model_kind kind = NLE_MODEL_EE;; kind = NLE_MODEL_TSNE) {
    nle_matd *X = NULL;
    nle_trained *t = spiral_model(ctx, &train, kind, 100, &X);
    nle_transform_opts to;
    nle_transform_opts_init(&to);
    to.max_iters = 300;
    to.engine = NLE_REPULSION_EXACT;
    nle_transform_result *exact = NULL;
    nle_test_ok(nle_transform(ctx, t, &held, &to, &exact));
    double rms = 0.0;
    for (size_t i = 0; i < ntr * 2; i++) rms += X->data[i] * X->data[i] / (double)ntr;
    rms = sqrt(rms);
    engines = 0;
    for (int id = 0; id < 32 && strcmp(nle_repulsion_name((nle_repulsion)id), "unknown"); id++, engines++) {
      const char *name = nle_repulsion_name((nle_repulsion)id);
      nle_transform_result *r = NULL;
      to.engine = (nle_repulsion)id;
      nle_status s = nle_transform(ctx, t, &held, &to, &r);
      nle_test(s == NLE_OK || s == NLE_ERR_ARG);
      if (s) {
        nle_test(strstr(nle_ctx_error(ctx), "F(y) takes") != NULL);
        continue;
      }
      served[id]++;
      nle_test(nle_repulsion_serves_new_points((nle_repulsion)id));
      nle_test(r->resolved.engine == (nle_repulsion)id);
      double worst = 0.0;
      for (size_t i = 0; exact && i < held.rows * 2; i++) worst = fmax(worst, fabs(r->X->data[i] - exact->X->data[i]));
      if (!nle_test(exact && worst <= 5e-3 * rms))
        printf("  %s: F(y) up to %.3g from the exact one (map scale %.3g)\n", name, worst, rms);
      nle_transform_result_free(&r);
    }
    nle_transform_result_free(&exact);
    nle_matd_free(&X);
    nle_trained_free(&t);
    if (kind == NLE_MODEL_TSNE) break;
  }
  for (int id = 0; id < engines; id++) {
    nle_test(!served[id] == !nle_repulsion_serves_new_points((nle_repulsion)id));
    printf("  %s: %s\n", nle_repulsion_name((nle_repulsion)id), served[id] ? "serves new points" : "not for new points");
  }
  nle_test(engines >= 4 && served[NLE_REPULSION_EXACT] == 2 && !served[NLE_REPULSION_BH] &&
           served[NLE_REPULSION_FFT] == 2 && served[NLE_REPULSION_FGT] == 1);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* The new points' quasi-Newton metric (oos_internal.h), against the
 * properties the BFGS update promises: after an update with y's > 0 the
 * metric maps y to s exactly (the secant condition), stays symmetric and
 * positive definite (Cholesky), and a pair with y's <= 0 leaves it alone;
 * the direction is -H g with slope g'(-H g) < 0, and a metric that is not
 * positive definite restarts at the diagonal. d = 1 to 4, random pairs. */
static void oos_metric_secant(void) {
  nle_matd *R = test_random_matd(4 * 50 * 30, 1, 1.0, 12345); /* uniform values, consumed in turn */
  size_t used = 0;
#define NEXT() (R->data[used++ % R->rows])
  for (size_t d = 1; d <= 4; d++)
    for (int rep = 0; rep < 50; rep++) {
      double H[16], s[4], y[4], g[4], dir[4], Hy[4], chol[16];
      nle__oos_metric_init(H, d, 0.5 + (double)rep);
      for (int step = 0; step < 3; step++) { /* a few updates in a row, each checked */
        double sy = 0.0;
        for (size_t a = 0; a < d; a++) s[a] = NEXT(), y[a] = NEXT();
        for (size_t a = 0; a < d; a++) sy += s[a] * y[a];
        if (sy <= 0) /* flip y so that the pair has curvature */
          for (size_t a = 0; a < d; a++) y[a] = -y[a];
        nle__oos_metric_update(H, s, y, d, Hy);
        double worst = 0.0, asym = 0.0;
        for (size_t a = 0; a < d; a++) {
          double v = 0.0, size = fabs(s[a]);
          for (size_t b = 0; b < d; b++) {
            v += H[a * d + b] * y[b];
            size += fabs(H[a * d + b] * y[b]);
            asym = fmax(asym, fabs(H[a * d + b] - H[b * d + a]));
          }
          worst = fmax(worst, fabs(v - s[a]) / size); /* relative to the sum's terms */
        }
        memcpy(chol, H, d * d * sizeof(double));
        int pd = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', (lapack_int)d, chol, (lapack_int)d) == 0;
        if (!nle_test(worst <= 1e-12 && asym == 0.0 && pd))
          printf("  d %zu rep %d step %d: secant error %.3g, asymmetry %.3g, positive definite %d\n", d, rep, step, worst,
                 asym, pd);
      }
      double before[16];
      memcpy(before, H, sizeof before);
      for (size_t a = 0; a < d; a++) y[a] = -s[a] * (1.0 + fabs(NEXT())); /* y's < 0 */
      nle__oos_metric_update(H, s, y, d, Hy);
      nle_test(!memcmp(before, H, d * d * sizeof(double)));
      for (size_t a = 0; a < d; a++) g[a] = NEXT();
      double slope = nle__oos_metric_direction(H, g, d, 1.0, dir), gap = 0.0;
      for (size_t a = 0; a < d; a++) {
        double v = 0.0;
        for (size_t b = 0; b < d; b++) v -= H[a * d + b] * g[b];
        gap = fmax(gap, fabs(v - dir[a]));
      }
      nle_test(slope < 0.0 && gap == 0.0);
    }
  /* a metric that is no longer positive definite (rounding) restarts at
   * the diagonal I / precond: a descent direction again */
  double H[4] = {-1.0, 0.0, 0.0, -2.0}, g[2] = {0.3, -0.4}, dir[2];
  double slope = nle__oos_metric_direction(H, g, 2, 4.0, dir);
  nle_test(slope < 0.0 && H[0] == 0.25 && H[1] == 0.0 && H[2] == 0.0 && H[3] == 0.25 && dir[0] == -0.075 &&
           dir[1] == 0.1);
#undef NEXT
  nle_matd_free(&R);
}

/* The batched FFT F(y) runs the new points in ranges of a few hundred, in
 * an order with locality in the map, each range minimised on one thread:
 * every point's steps depend on its own energies alone. So 700 points
 * (three ranges) give the same bits for 1 and 3 threads, and any subset of
 * them maps to the bits the whole set gave its points. */
static void oos_ranges_independent(void) {
  nle_ctx *one = test_ctx(6), *three = test_ctx(6);
  nle_ctx_set_threads(three, 3);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(one, "spiral:700", NULL, &ds));
  size_t D = ds->X->cols;
  nle_matf train = {600, D, ds->X->data}, all = {700, D, ds->X->data}, tail = {400, D, ds->X->data + 300 * D};
  nle_matd *X = NULL, *F1 = NULL, *F3 = NULL, *Ft = NULL;
  nle_trained *t = train_for_oos(one, &train, NLE_MODEL_TSNE, 30, 10, 1.0, 200, 40.0, "spiral:700", &X);
  nle_test_ok(nle_trained_set_engine(one, t, NLE_REPULSION_FFT));
  nle_test_ok(nle_trained_transform(one, t, &all, 300, &F1));
  nle_test_ok(nle_trained_transform(three, t, &all, 300, &F3));
  nle_test_ok(nle_trained_transform(three, t, &tail, 300, &Ft));
  nle_test(F1 && F3 && !memcmp(F1->data, F3->data, 700 * 2 * sizeof(double)));
  nle_test(F1 && Ft && !memcmp(F1->data + 300 * 2, Ft->data, 400 * 2 * sizeof(double)));
  /* and the right minima: within oos/fast_engines' bound of the exact
   * engine's, every range */
  nle_matd *Fe = NULL;
  nle_test_ok(nle_trained_set_engine(one, t, NLE_REPULSION_EXACT));
  nle_test_ok(nle_trained_transform(one, t, &all, 300, &Fe));
  double cx = 0.0, cy = 0.0, rms = 0.0, worst = 0.0;
  for (size_t i = 0; i < 600; i++) cx += X->data[2 * i] / 600.0, cy += X->data[2 * i + 1] / 600.0;
  for (size_t i = 0; i < 600; i++) rms += (pow(X->data[2 * i] - cx, 2) + pow(X->data[2 * i + 1] - cy, 2)) / 600.0;
  for (size_t i = 0; F1 && Fe && i < 700; i++)
    worst = fmax(worst, hypot(F1->data[2 * i] - Fe->data[2 * i], F1->data[2 * i + 1] - Fe->data[2 * i + 1]));
  if (!nle_test(F1 && Fe && worst <= 5e-3 * sqrt(rms)))
    printf("  FFT F(y) up to %g from the exact one (map radius %g)\n", worst, sqrt(rms));
  nle_matd_free(&Fe);
  nle_matd_free(&F1);
  nle_matd_free(&F3);
  nle_matd_free(&Ft);
  nle_matd_free(&X);
  nle_trained_free(&t);
  nle_dataset_free(&ds);
  nle_ctx_free(&one);
  nle_ctx_free(&three);
}

/* The first `len` bytes of file `from` (all when len < 0) written to `to`;
 * the file's length, or -1. */
static long copy_head(const char *from, const char *to, long len) {
  FILE *f = fopen(from, "rb"), *w = NULL;
  long size = -1;
  if (f && !fseek(f, 0, SEEK_END)) size = ftell(f);
  char *buf = size > 0 ? malloc((size_t)size) : NULL;
  if (f && buf) rewind(f);
  int ok = f && buf && fread(buf, 1, (size_t)size, f) == (size_t)size && (w = fopen(to, "wb"));
  long n = len < 0 || len > size ? size : len;
  ok = ok && fwrite(buf, 1, (size_t)n, w) == (size_t)n;
  if (f) fclose(f);
  if (w) fclose(w);
  free(buf);
  return ok ? size : -1;
}

/* A model is loaded with its training data mapped, not copied: the same
 * maps as the model in memory, the same records as the file read into
 * memory; a change to the loaded rows stays in the process (the mapping is
 * private); an empty file, or one cut short anywhere, is refused, naming
 * the file. */
static void oos_model_mapped(void) {
  nle_ctx *ctx = test_ctx(5);
  nle_dataset *ds;
  nle_test_ok(nle_dataset_read(ctx, "blobs:600:10:4", NULL, &ds));
  size_t D = 10;
  nle_matf train = {500, D, ds->X->data}, held = {100, D, ds->X->data + 500 * D};
  nle_matd *X = NULL, *F = NULL, *Fm = NULL;
  nle_trained *t = train_for_oos(ctx, &train, NLE_MODEL_TSNE, 45, 15, 1.0, 300, 0, "blobs:600:10:4", &X), *back = NULL;
  char path[4096], cut[4096];
  snprintf(path, sizeof path, "%s", test_path("mapped.nle"));
  snprintf(cut, sizeof cut, "%s", test_path("cut.nle"));
  nle_test_ok(nle_trained_save(ctx, t, path, true));
  nle_test_ok(nle_trained_transform(ctx, t, &held, 300, &F));
  nle_test_ok(nle_trained_load(ctx, path, &back));
  nle_test_ok(nle_trained_transform(ctx, back, &held, 300, &Fm));
  nle_test(F && Fm && !memcmp(F->data, Fm->data, 100 * 2 * sizeof(double)));
  if (!back) goto done;
  float was = back->Y->data[0];
  back->Y->data[0] = was + 1.0f; /* a caller's change: in this copy only */
  nle_trained_free(&back);
  nle_test_ok(nle_trained_load(ctx, path, &back));
  nle_test(back && back->Y->data[0] == was);
  nle_trained_free(&back);
  /* the records as mapped and as read into memory: the same */
  nle__rec_file a, b;
  nle_test_ok(nle__rec_map(ctx, path, "model", &a));
  nle_test_ok(nle__rec_read(ctx, path, "model", &b));
  int same = a.mapped && !b.mapped && a.count == b.count && a.count > 5;
  for (size_t i = 0; same && i < a.count; i++)
    same = !strcmp(a.entries[i].name, b.entries[i].name) && a.entries[i].count == b.entries[i].count &&
           (const uint8_t *)a.entries[i].data - a.buf == (const uint8_t *)b.entries[i].data - b.buf;
  nle_test(same && a.len == b.len && !memcmp(a.buf, b.buf, a.len));
  nle__rec_free(&a);
  nle__rec_free(&b);
  /* an empty file (nothing to map) */
  copy_head(path, cut, 0);
  nle_test(nle_trained_load(ctx, cut, &back) == NLE_ERR_FORMAT && !back && strstr(nle_ctx_error(ctx), cut));
  /* cut short: by a byte, in the middle (inside the training data), after
   * the header */
  long size = copy_head(path, cut, -1);
  long lengths[] = {size - 1, size / 2, 60};
  for (int i = 0; size > 0 && i < 3; i++) {
    copy_head(path, cut, lengths[i]);
    nle_status s = nle_trained_load(ctx, cut, &back);
    if (!nle_test(s == NLE_ERR_FORMAT && !back && strstr(nle_ctx_error(ctx), cut) &&
                  strstr(nle_ctx_error(ctx), "truncated")))
      printf("  cut to %ld of %ld bytes: status %d, %s\n", lengths[i], size, (int)s, nle_ctx_error(ctx));
    nle_trained_free(&back);
  }
done:
  nle_matd_free(&F);
  nle_matd_free(&Fm);
  nle_matd_free(&X);
  nle_trained_free(&t);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

const nle_test_case oos_tests[] = {
    {"oos/out_of_sample", out_of_sample},
    {"oos/objective_gradients", oos_objective_gradients},
    {"oos/objective_formula", oos_objective_formula},
    {"oos/training_points_fixed", oos_training_points_fixed},
    {"oos/trained_maps", oos_trained_maps},
    {"oos/fast_engines", oos_fast_engines},
    {"oos/every_engine_of_the_table", oos_every_engine_of_the_table},
    {"oos/ranges_independent", oos_ranges_independent},
    {"oos/metric_secant", oos_metric_secant},
    {"oos/model_mapped", oos_model_mapped},
    {NULL, NULL}};
