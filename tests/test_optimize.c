/* test_optimize.c — the optimisers step by step against the rules written
 * out here: every accepted line-search step meets the sufficient-decrease
 * condition, L-BFGS's and CG's second directions are the two-loop recursion
 * and the Polak-Ribiere+ update, and fixed-rate descent follows its update
 * rule (momentum phases, gains, exaggeration). A second model evaluates E
 * and g, so nothing here relies on the optimiser's own numbers. */
#include "harness.h"
#include "nle_common.h"
#include "../src/nle/nle_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What a trace callback sees of a run: X is the optimiser's live iterate;
 * each call records it (up to 8 iterates) and the step it reports. */
typedef struct {
  nle_ctx *ctx;
  nle_model *judge; /* a model of its own: E and g evaluated independently */
  nle_matd *X;
  nle_matd *prev, *g_prev;
  double E_prev, c1;
  int steps, violations;
  double worst; /* largest E(x+) - (E(x) + c1 g.(x+ - x)), relative */
  nle_matd *iterate[8];
  double step[8];
} trace_probe;

static nle_matd *copy_matd(const nle_matd *X) {
  nle_matd *C;
  if (nle_matd_alloc(NULL, X->rows, X->cols, &C)) exit(2);
  memcpy(C->data, X->data, X->rows * X->cols * sizeof(double));
  return C;
}

static void probe_start(trace_probe *t, nle_ctx *ctx, nle_model *judge, nle_matd *X, double c1) {
  memset(t, 0, sizeof *t);
  t->ctx = ctx;
  t->judge = judge;
  t->X = X;
  t->c1 = c1;
  t->prev = copy_matd(X);
  t->g_prev = copy_matd(X);
  nle_model_eval(ctx, judge, X, &t->E_prev, t->g_prev);
  t->iterate[0] = copy_matd(X);
}

static void probe_free(trace_probe *t) {
  nle_matd_free(&t->prev);
  nle_matd_free(&t->g_prev);
  for (int i = 0; i < 8; i++) nle_matd_free(&t->iterate[i]);
}

/* Armijo: E(x+) <= E(x) + c1 g(x).(x+ - x), with E and g from the judge. */
static void check_armijo(void *user, int iteration, double seconds, double E, int evaluations, double step) {
  (void)seconds, (void)E, (void)evaluations;
  trace_probe *t = user;
  size_t len = t->X->rows * t->X->cols;
  double slope = 0.0, E_new;
  for (size_t i = 0; i < len; i++) slope += t->g_prev->data[i] * (t->X->data[i] - t->prev->data[i]);
  nle_model_eval(t->ctx, t->judge, t->X, &E_new, t->g_prev);
  double excess = (E_new - (t->E_prev + t->c1 * slope)) / fabs(t->E_prev);
  t->worst = fmax(t->worst, excess);
  t->violations += excess > 1e-12;
  t->steps++;
  t->E_prev = E_new;
  memcpy(t->prev->data, t->X->data, len * sizeof(double));
  if (iteration < 8) {
    t->iterate[iteration] = copy_matd(t->X);
    t->step[iteration] = step;
  }
}

static nle_model *tsne_model(nle_ctx *ctx, const nle_csr *P) {
  nle_model_spec spec = test_model_spec(NLE_MODEL_TSNE, 1.0, P);
  nle_model *m = NULL;
  if (nle_model_new(ctx, &spec, &m)) exit(2);
  return m;
}

/* With c1 = 0.99 an accepted step must deliver nearly the decrease its
 * slope promises: a sufficient-decrease test with its sign flipped would
 * accept the first trial step, which overshoots on this t-SNE start. */
static void armijo_every_step(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(120, 5, 61);
  nle_csr *P = test_entropic_p(ctx, Y, 10);
  nle_model *m = tsne_model(ctx, P), *judge = tsne_model(ctx, P);
  static const nle_opt_kind kinds[] = {NLE_OPT_SD, NLE_OPT_FP, NLE_OPT_GD, NLE_OPT_LBFGS, NLE_OPT_CG, NLE_OPT_SDM};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    nle_matd *X = test_random_matd(120, 2, 1.0, 62);
    trace_probe t;
    probe_start(&t, ctx, judge, X, 0.99);
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kind = kinds[k];
    oo.c1 = 0.99;
    oo.max_iters = 15;
    oo.tol = 0;
    oo.trace = check_armijo;
    oo.trace_user = &t;
    nle_opt *opt;
    nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
    nle_opt_report rep;
    nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0);
    if (!nle_test(t.steps >= 10 && t.violations == 0))
      printf("  optimiser %d: %d steps, %d violations, worst excess %.3g\n", (int)kinds[k], t.steps, t.violations,
             t.worst);
    probe_free(&t);
    nle_opt_free(&opt);
    nle_matd_free(&X);
  }
  nle_model_free(&m);
  nle_model_free(&judge);
  nle_csr_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

static double dot(const double *a, const double *b, size_t len) {
  double s = 0.0;
  for (size_t i = 0; i < len; i++) s += a[i] * b[i];
  return s;
}

/* Largest |observed - want| relative to max |want|. */
static double direction_error(const double *observed, const double *want, size_t len) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < len; i++) {
    err = fmax(err, fabs(observed[i] - want[i]));
    scale = fmax(scale, fabs(want[i]));
  }
  return err / scale;
}

/* The second step's direction, (x2 - x1) / step2, against the rule computed
 * here from g0 = g(x0) and g1 = g(x1): L-BFGS's two-loop recursion with the
 * one pair (s, y) and H0 = (s'y / y'y) I; CG's -g1 + beta p1 with
 * Polak-Ribiere+ beta = max(0, g1.(g1 - g0) / g0.g0). Both first
 * directions are -g0. */
static void second_directions(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(100, 5, 71);
  nle_csr *P = test_entropic_p(ctx, Y, 10);
  nle_model *m = tsne_model(ctx, P), *judge = tsne_model(ctx, P);
  static const nle_opt_kind kinds[] = {NLE_OPT_LBFGS, NLE_OPT_CG};
  size_t len = 200;
  for (int k = 0; k < 2; k++) {
    nle_matd *X = test_random_matd(100, 2, 0.1, 72);
    trace_probe t;
    probe_start(&t, ctx, judge, X, 1e-4);
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kind = kinds[k];
    oo.max_iters = 2;
    oo.tol = 0;
    oo.trace = check_armijo;
    oo.trace_user = &t;
    nle_opt *opt;
    nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
    nle_opt_report rep;
    nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0 && rep.iterations == 2);
    double *x0 = t.iterate[0]->data, *x1 = t.iterate[1]->data, *x2 = t.iterate[2]->data;
    double *g0 = malloc(len * sizeof *g0), *g1 = malloc(len * sizeof *g1);
    double *p1 = malloc(len * sizeof *p1), *p2 = malloc(len * sizeof *p2), *want = malloc(len * sizeof *want);
    nle_matd G0 = {100, 2, g0}, G1 = {100, 2, g1};
    double E;
    nle_model_eval(ctx, judge, t.iterate[0], &E, &G0);
    nle_model_eval(ctx, judge, t.iterate[1], &E, &G1);
    for (size_t i = 0; i < len; i++) {
      p1[i] = (x1[i] - x0[i]) / t.step[1];
      p2[i] = (x2[i] - x1[i]) / t.step[2];
      want[i] = -g0[i];
    }
    nle_test(direction_error(p1, want, len) < 1e-9);
    if (kinds[k] == NLE_OPT_LBFGS) {
      double *s = malloc(len * sizeof *s), *y = malloc(len * sizeof *y);
      for (size_t i = 0; i < len; i++) {
        s[i] = x1[i] - x0[i];
        y[i] = g1[i] - g0[i];
      }
      nle_test(dot(s, y, len) > 0); /* a curvature pair: the recursion is exercised, not skipped */
      double rho = 1.0 / dot(y, s, len), gamma = dot(s, y, len) / dot(y, y, len);
      for (size_t i = 0; i < len; i++) want[i] = g1[i];
      double alpha = rho * dot(s, want, len);
      for (size_t i = 0; i < len; i++) want[i] = gamma * (want[i] - alpha * y[i]);
      double beta = rho * dot(y, want, len);
      for (size_t i = 0; i < len; i++) want[i] = -(want[i] + (alpha - beta) * s[i]);
      free(s);
      free(y);
    } else {
      double beta = fmax(0.0, (dot(g1, g1, len) - dot(g1, g0, len)) / dot(g0, g0, len));
      nle_test(beta > 0); /* the update is exercised, not restarted */
      for (size_t i = 0; i < len; i++) want[i] = -g1[i] + beta * p1[i];
    }
    for (size_t i = 0; i < len; i++) p1[i] = -g1[i];
    nle_test(direction_error(want, p1, len) > 0.1); /* far from steepest descent */
    double err = direction_error(p2, want, len);
    if (!nle_test(err < 1e-6)) printf("  optimiser %d: second direction off by %.3g\n", (int)kinds[k], err);
    free(g0);
    free(g1);
    free(p1);
    free(p2);
    free(want);
    probe_free(&t);
    nle_opt_free(&opt);
    nle_matd_free(&X);
  }
  nle_model_free(&m);
  nle_model_free(&judge);
  nle_csr_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Six fixed-rate iterations, three of them exaggerated, against the update
 * rule written out: gains +0.2 where sign(g) differs from sign(u), else
 * x0.8, at least 0.01; u = mu u - rate_i gain g with mu = 0.5 while
 * exaggerating and `momentum` after; g with the attraction x alpha in the
 * first phase; then the final rate; point i's rate capped at its stability
 * bound, rate_i = min(rate, (1 + mu) / (2 alpha deg_i)), deg_i = sum_j
 * (p_ij + p_ji) / 2. The rates put some points over the bound and some
 * under it in both phases. */
static void momentum_phases(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(80, 4, 81);
  nle_csr *P = test_entropic_p(ctx, Y, 8);
  nle_model *m = tsne_model(ctx, P), *judge = tsne_model(ctx, P);
  nle_matd *X = test_random_matd(80, 2, 1e-2, 82), *R = copy_matd(X), *G = copy_matd(X);
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  oo.kind = NLE_OPT_GD;
  oo.fixed_rate = true;
  oo.learning_rate = 12;
  oo.learning_rate_final = 70;
  oo.momentum = 0.8;
  oo.exaggeration = 4;
  oo.exaggeration_iters = 3;
  oo.max_iters = 6;
  nle_opt *opt;
  nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
  nle_opt_report rep;
  nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0 && rep.iterations == 6);
  size_t len = 160;
  double u[160] = {0}, gain[160], E, deg[80] = {0};
  for (size_t i = 0; i < 80; i++) /* P dense, from its entries both ways */
    for (size_t j = 0; j < 80; j++) {
      double pij = 0, pji = 0;
      for (int64_t q = P->rowptr[i]; q < P->rowptr[i + 1]; q++) pij += P->colind[q] == (int32_t)j ? nle_csr_value(P, q) : 0;
      for (int64_t q = P->rowptr[j]; q < P->rowptr[j + 1]; q++) pji += P->colind[q] == (int32_t)i ? nle_csr_value(P, q) : 0;
      deg[i] += (pij + pji) / 2;
    }
  int capped[2] = {0, 0};
  for (size_t i = 0; i < len; i++) gain[i] = 1.0;
  for (int it = 0; it < 6; it++) {
    int early = it < 3;
    nle_test_ok(nle_model_set_exaggeration(ctx, judge, early ? 4.0 : 1.0));
    nle_test_ok(nle_model_eval(ctx, judge, R, &E, G));
    double mu = early ? 0.5 : 0.8, rate = early ? 12 : 70, alpha = early ? 4 : 1;
    for (size_t i = 0; i < len; i++) {
      double bound = (1 + mu) / (2 * alpha * deg[i / 2]), rate_i = fmin(rate, bound);
      if (it % 3 == 0 && i % 2 == 0) capped[!early] += rate_i < rate;
      gain[i] = (G->data[i] > 0) != (u[i] > 0) ? gain[i] + 0.2 : fmax(gain[i] * 0.8, 0.01);
      u[i] = mu * u[i] - rate_i * gain[i] * G->data[i];
      R->data[i] += u[i];
    }
  }
  if (!nle_test(capped[0] > 0 && capped[0] < 80 && capped[1] > 0 && capped[1] < 80))
    printf("  points over the bound: %d and %d of 80\n", capped[0], capped[1]);
  double err = 0, scale = 0;
  for (size_t i = 0; i < len; i++) {
    err = fmax(err, fabs(X->data[i] - R->data[i]));
    scale = fmax(scale, fabs(R->data[i]));
  }
  if (!nle_test(err <= 1e-12 * scale)) printf("  fixed-rate run off the rule by %.3g (scale %.3g)\n", err, scale);
  nle_matd_free(&X);
  nle_matd_free(&R);
  nle_matd_free(&G);
  nle_opt_free(&opt);
  nle_model_free(&m);
  nle_model_free(&judge);
  nle_csr_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Every optimiser gives a descent direction; SD solves (4 L + mu I) p = -g. */
static void directions(void) {
  size_t n = 40;
  nle_ctx *ctx = test_ctx(1);
  nle_csr *W = random_weights(n, 5, 0, 0, 41);
  nle_model_spec spec = test_model_spec(NLE_MODEL_EE, 2.0, W);
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  nle_matd *X = random_x(n, 2, 0.5, 42), *G, *P;
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &G));
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &P));
  double E;
  nle_test_ok(nle_model_eval(ctx, m, X, &E, G));
  for (int kind = NLE_OPT_SD; kind <= NLE_OPT_GD; kind++) {
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kind = (nle_opt_kind)kind;
    oo.kappa = 0; /* all of W+, so B is known exactly below */
    nle_opt *opt;
    nle_test_ok(nle_opt_new(ctx, m, W, &oo, &opt));
    nle_test_ok(nle_opt_direction(ctx, opt, G, P));
    double slope = 0, gg = 0;
    for (size_t i = 0; i < 2 * n; i++) {
      slope += G->data[i] * P->data[i];
      gg += G->data[i] * G->data[i];
    }
    nle_test(slope < 0);
    if (kind == NLE_OPT_SD) {
      /* residual of (4 (D - W) + mu I) p + g */
      double deg[40] = {0}, dmin = INFINITY, worst = 0;
      for (size_t i = 0; i < n; i++)
        for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) deg[i] += nle_csr_value(W, q);
      for (size_t i = 0; i < n; i++) dmin = fmin(dmin, 4 * deg[i]);
      for (size_t i = 0; i < n; i++)
        for (int t = 0; t < 2; t++) {
          double r = (4 * deg[i] + 1e-10 * dmin) * P->data[2 * i + t] + G->data[2 * i + t];
          for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
            r -= 4 * nle_csr_value(W, q) * P->data[2 * (size_t)W->colind[q] + t];
          worst = fmax(worst, fabs(r));
        }
      nle_test(worst < 1e-9 * sqrt(gg));
    }
    nle_opt_free(&opt);
  }
  /* SD-: downhill, and its B solved to CG's exit tolerance: the residual of
   * (4 L+ + mu I + 8 L^xx_ii) p + g, with the curvature term from the
   * model, is at most 0.1 |g| (or CG ran its 50 iterations). */
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  oo.kind = NLE_OPT_SDM;
  oo.kappa = 0;
  nle_opt *opt;
  nle_test_ok(nle_opt_new(ctx, m, W, &oo, &opt));
  nle_test(nle_opt_direction(ctx, opt, G, P) == NLE_ERR_ARG); /* needs X */
  nle_test_ok(nle_opt_direction_at(ctx, opt, X, G, P));
  nle_matd *C;
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &C));
  nle_test_ok(nle__model_curvature_prepare(ctx, m, X));
  nle_test_ok(nle__model_curvature_apply(ctx, m, X, P, C));
  double deg[40] = {0}, dmin = INFINITY, res = 0, gg = 0, slope = 0;
  for (size_t i = 0; i < n; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) deg[i] += nle_csr_value(W, q);
  for (size_t i = 0; i < n; i++) dmin = fmin(dmin, 4 * deg[i]);
  for (size_t i = 0; i < n; i++)
    for (int t = 0; t < 2; t++) {
      double r = (4 * deg[i] + 1e-10 * dmin) * P->data[2 * i + t] + G->data[2 * i + t] + C->data[2 * i + t];
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
        r -= 4 * nle_csr_value(W, q) * P->data[2 * (size_t)W->colind[q] + t];
      res += r * r;
      gg += G->data[2 * i + t] * G->data[2 * i + t];
      slope += G->data[2 * i + t] * P->data[2 * i + t];
    }
  if (!nle_test(slope < 0 && sqrt(res) <= 0.1 * sqrt(gg) * (1 + 1e-9)))
    printf("  SD-: slope %g, residual %g of |g| %g\n", slope, sqrt(res), sqrt(gg));
  nle_matd_free(&C);
  nle_opt_free(&opt);
  nle_matd_free(&X);
  nle_matd_free(&G);
  nle_matd_free(&P);
  nle_model_free(&m);
  nle_csr_free(&W);
  nle_ctx_free(&ctx);
}

/* SD-'s curvature term is the exact Hessian's psd diagonal blocks: for EE
 * with uniform W-, 8 L^xx_ii v = H_ii v - 4 L v with L the Laplacian of
 * w+ - lambda exp(-d^2) (dissertation eq. 3.4), H v by central differences of
 * the gradient. */
static void sdm_curvature_vs_hessian(void) {
  size_t n = 30;
  nle_ctx *ctx = test_ctx(1);
  nle_csr *W = random_weights(n, 5, 0, 0, 43);
  double lambda = 0.7;
  nle_model_spec spec = test_model_spec(NLE_MODEL_EE, lambda, W);
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  nle_matd *X = random_x(n, 2, 0.8, 44), *V = random_x(n, 2, 1.0, 45), *Xp = random_x(n, 2, 0, 1),
           *Xm = random_x(n, 2, 0, 1), *Gp, *Gm, *C;
  for (size_t i = 0; i < n; i++) V->data[2 * i + 1] = 0.0; /* dimension 0 only: the (0, 0) block */
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &Gp));
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &Gm));
  nle_test_ok(nle_matd_alloc(ctx, n, 2, &C));
  double h = 1e-5, E;
  for (size_t i = 0; i < 2 * n; i++) {
    Xp->data[i] = X->data[i] + h * V->data[i];
    Xm->data[i] = X->data[i] - h * V->data[i];
  }
  nle_test_ok(nle_model_eval(ctx, m, Xp, &E, Gp));
  nle_test_ok(nle_model_eval(ctx, m, Xm, &E, Gm));
  nle_test_ok(nle__model_curvature_prepare(ctx, m, X));
  nle_test_ok(nle__model_curvature_apply(ctx, m, X, V, C));
  double *wp = calloc(n * n, sizeof(double)), worst = 0, scale = 0;
  for (size_t i = 0; i < n; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) wp[i * n + (size_t)W->colind[q]] = nle_csr_value(W, q);
  for (size_t i = 0; i < n; i++) {
    double lv = 0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      double d2 = pow(X->data[2 * i] - X->data[2 * j], 2) + pow(X->data[2 * i + 1] - X->data[2 * j + 1], 2);
      lv += (wp[i * n + j] - lambda * exp(-d2)) * (V->data[2 * i] - V->data[2 * j]);
    }
    double hv = (Gp->data[2 * i] - Gm->data[2 * i]) / (2 * h);
    worst = fmax(worst, fabs(C->data[2 * i] - (hv - 4 * lv)));
    scale = fmax(scale, fabs(C->data[2 * i]));
  }
  if (!nle_test(worst <= 1e-6 * scale && scale > 0)) printf("  curvature vs Hessian: error %g of %g\n", worst, scale);
  free(wp);
  nle_matd_free(&C);
  nle_matd_free(&Gp);
  nle_matd_free(&Gm);
  nle_matd_free(&Xp);
  nle_matd_free(&Xm);
  nle_matd_free(&V);
  nle_matd_free(&X);
  nle_model_free(&m);
  nle_csr_free(&W);
  nle_ctx_free(&ctx);
}

static void sd_sparsified_connected(void) {
  nle_ctx *ctx = test_ctx(2);
  nle_matf *Y = test_random_matf(600, 5, 77);
  nle_csr *P = test_entropic_p(ctx, Y, 15);
  nle_model_spec spec = test_model_spec(NLE_MODEL_EE, 1.0, P);
  nle_model *m;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  double end[2];
  int kappas[2] = {1, 3};
  for (int k = 0; k < 2; k++) {
    nle_opt_opts oo;
    nle_opt_opts_init(&oo);
    oo.kappa = kappas[k];
    oo.max_iters = 30;
    oo.tol = 0;
    nle_opt *opt;
    nle_test_ok(nle_opt_new(ctx, m, P, &oo, &opt));
    nle_matd *X = random_x(600, 2, 1e-3, 78);
    nle_opt_report rep;
    nle_test(nle_opt_run(ctx, opt, X, &rep) >= 0);
    end[k] = rep.E;
    nle_test(rep.iterations == 30);
    nle_matd_free(&X);
    nle_opt_free(&opt);
  }
  if (!nle_test(end[0] <= 1.2 * end[1])) printf("  E after 30 iterations: %g at kappa 1, %g at kappa 3\n", end[0], end[1]);
  nle_model_free(&m);
  nle_csr_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* A row's place in the optimisers' table is its kind: the public enum's
 * names must meet the rows they name (and the rows' aliases parse). */
static void kinds_by_table_place(void) {
  static const struct {
    nle_opt_kind kind;
    const char *name;
  } rows[] = {{NLE_OPT_SD, "sd"}, {NLE_OPT_FP, "fp"}, {NLE_OPT_GD, "gd"}, {NLE_OPT_LBFGS, "lbfgs"},
              {NLE_OPT_CG, "cg"}, {NLE_OPT_SDM, "sd-"}};
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
    if (!nle_test(!strcmp(nle_opt_name(rows[i].kind), rows[i].name) && nle_opt_parse(rows[i].name) == (int)rows[i].kind))
      printf("  kind %d is named %s, not %s\n", (int)rows[i].kind, nle_opt_name(rows[i].kind), rows[i].name);
  nle_test(nle_opt_parse("sdm") == NLE_OPT_SDM && nle_opt_parse("auto") == NLE_OPT_AUTO);
  nle_test(!strcmp(nle_opt_name((nle_opt_kind)-2), "unknown") && nle_opt_parse("sgd") == -1);
}

const nle_test_case optimize_tests[] = {
    {"optimize/armijo_every_step", armijo_every_step},
    {"optimize/second_directions", second_directions},
    {"optimize/momentum_phases", momentum_phases},
    {"optimize/directions", directions},
    {"optimize/sdm_curvature_vs_hessian", sdm_curvature_vs_hessian},
    {"optimize/sd_sparsified_connected", sd_sparsified_connected},
    {"optimize/kinds_by_table_place", kinds_by_table_place},
    {NULL, NULL}};
