/* test_affinity.c — entropic affinities against independent checks (entropy
 * recomputed from P, a slow dense bisection on beta, the scaling law beta(aY)
 * = beta(Y) / a^2, the bounds bracketing the root), the other kinds against
 * dense formulas, symmetrisation, bad inputs. */
#include "harness.h"
#include "../src/affinity/affinity_internal.h"

#include <stdlib.h>
#include <string.h>

static nle_csr *knn_of(const nle_matf *Y, int k) {
  nle_ctx *ctx = test_ctx(1);
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = k;
  nle_csr *g = NULL;
  if (nle_knn_exact(ctx, Y, &o, &g)) printf("  knn failed: %s\n", nle_ctx_error(ctx));
  nle_ctx_free(&ctx);
  return g;
}

/* Three Gaussian clusters of different spreads: bandwidths differ a lot. */
static nle_matf *clustered(size_t n, size_t d, uint64_t seed) {
  nle_matf *Y = test_random_matf(n, d, seed);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) Y->data[i * d + j] = Y->data[i * d + j] * (float)(0.1 * (double)(1 + i % 3 * 5)) + (float)(i % 3 * 4);
  return Y;
}

/* -sum p log p of every row, computed from P itself. */
static double row_entropy(const nle_csr *P, int64_t i) {
  double h = 0.0, sum = 0.0;
  for (int64_t q = P->rowptr[i]; q < P->rowptr[i + 1]; q++) {
    double p = nle_csr_value(P, q);
    sum += p;
    if (p > 0) h -= p * log(p);
  }
  return fabs(sum - 1.0) < 1e-12 ? h : NAN;
}

static void p1_equation(void) {
  int ns[] = {10, 90, 1000, 69999};
  double ks[] = {2, 5, 30, 500};
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      if (ks[b] >= ns[a]) continue;
      double p1 = nle_ea_p1(ns[a], ks[b]), u = 1 - p1;
      nle_test(p1 >= 0.75 && p1 < 1.0);
      nle_test(fabs(2 * u * log(ns[a] / (2 * u)) - log(fmin(sqrt(2.0 * ns[a]), ks[b]))) < 1e-12);
    }
}

/* Property test: on random and clustered data, over many seeds and
 * perplexities, H(beta_L) > log K > H(beta_U) for every point. */
static void bounds_bracket_root(void) {
  int violations = 0, checked = 0;
  for (uint64_t seed = 1; seed <= 12; seed++) {
    nle_matf *Y = seed % 2 ? test_random_matf(300, 5, seed) : clustered(300, 4, seed);
    nle_csr *g = knn_of(Y, 60);
    double Ks[3] = {2.5, 10, 45};
    for (int kk = 0; kk < 3; kk++) {
      double p1 = nle_ea_p1(60, Ks[kk]);
      for (int64_t i = 0; i < g->rows; i++) {
        double d[60], lo, hi;
        for (int t = 0; t < 60; t++) d[t] = nle_csr_value(g, g->rowptr[i] + t);
        if (nle_ea_bounds(d, 60, Ks[kk], p1, &lo, &hi)) continue;
        double hl = nle_ea_entropy(d, 60, exp(lo)), hu = nle_ea_entropy(d, 60, exp(hi));
        violations += !(hl > log(Ks[kk]) && log(Ks[kk]) > hu && lo < hi);
        checked++;
      }
    }
    nle_csr_free(&g);
    nle_matf_free(&Y);
  }
  nle_test(checked == 12 * 300 * 3);
  nle_test(violations == 0);
}

/* Every order x root finder reaches the perplexity to 1e-10 on every point. */
static void all_methods_converge(void) {
  nle_matf *Y = clustered(600, 6, 3);
  nle_csr *g = knn_of(Y, 45);
  nle_ctx *ctx = test_ctx(2);
  nle_ea_opts o;
  nle_ea_opts_init(&o);
  o.perplexity = 15;
  double *ref = NULL;
  for (int root = 0; root < NLE_ROOT_COUNT; root++)
    for (int order = 0; order < NLE_ORDER_COUNT; order++) {
      o.root = (nle_root_method)root;
      o.order = (nle_ea_order)order;
      nle_ea_result *r = NULL;
      nle_status s = nle_entropic_affinities(ctx, g, &o, &r);
      if (!nle_test(s == NLE_OK && r)) {
        printf("  root %d order %d: %s\n", root, order, nle_ctx_error(ctx));
        continue;
      }
      double worst = 0;
      for (int64_t i = 0; i < 600; i++) worst = fmax(worst, fabs(row_entropy(r->P, i) - log(15.0)));
      if (!nle_test(worst <= 1e-10 && r->max_error <= 1e-10)) printf("  root %d order %d: error %g\n", root, order, worst);
      if (!ref) {
        ref = malloc(600 * sizeof *ref);
        memcpy(ref, r->beta, 600 * sizeof *ref);
      }
      double diff = 0;
      for (int i = 0; i < 600; i++) diff = fmax(diff, fabs(r->beta[i] - ref[i]) / ref[i]);
      nle_test(diff < 1e-8); /* every method finds the same root */
      nle_test(r->degenerate_points == 0);
      /* Local orders make warm starts good; index and random orders jump
       * between the interleaved clusters, so they are not held to this. */
      int local = order == NLE_ORDER_MST || order == NLE_ORDER_MSP || order == NLE_ORDER_DENSITY;
      double most = root == NLE_ROOT_NEWTON ? 4.5 : root == NLE_ROOT_HOUSEHOLDER ? 2.0 : 3.0; /* by order */
      int derivative = root == NLE_ROOT_HALLEY || root == NLE_ROOT_EULER || root == NLE_ROOT_NEWTON ||
                       root == NLE_ROOT_HOUSEHOLDER;
      if (derivative && local && !nle_test(r->mean_iterations < most))
        printf("  root %d order %d: %.2f iterations\n", root, order, r->mean_iterations);
      nle_ea_result_free(&r);
    }
  free(ref);
  nle_ctx_free(&ctx);
  nle_csr_free(&g);
  nle_matf_free(&Y);
}

/* Slow dense reference: all N - 1 neighbours, plain bisection on beta in
 * [0, big], the entropy by its definition. */
static void dense_reference(void) {
  size_t n = 120;
  nle_matf *Y = clustered(n, 3, 9);
  nle_csr *g = knn_of(Y, (int)n - 1);
  nle_ctx *ctx = test_ctx(1);
  nle_ea_opts o;
  nle_ea_opts_init(&o);
  o.perplexity = 20;
  o.tol = 1e-13; /* |dF| = 1e-10 moves beta by up to ~1e-8 where H is flat */
  nle_ea_result *r;
  nle_test_ok(nle_entropic_affinities(ctx, g, &o, &r));
  double worst = 0, worst_weight = 0;
  for (size_t i = 0; i < n; i++) {
    double d[119], lo = 0, hi = 1e6;
    int m = 0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      double s = 0;
      for (int t = 0; t < 3; t++) s += pow((double)Y->data[i * 3 + t] - Y->data[j * 3 + t], 2);
      d[m++] = (double)(float)s; /* the kNN graph stores float squared distances */
    }
    for (int it = 0; it < 200; it++) {
      double beta = 0.5 * (lo + hi), z = 0, h = 0, dmin = d[0];
      for (int t = 1; t < m; t++) dmin = fmin(dmin, d[t]);
      for (int t = 0; t < m; t++) z += exp(-beta * (d[t] - dmin));
      for (int t = 0; t < m; t++) {
        double p = exp(-beta * (d[t] - dmin)) / z;
        if (p > 0) h -= p * log(p);
      }
      if (h > log(20.0)) lo = beta;
      else hi = beta;
    }
    worst = fmax(worst, fabs(r->beta[i] - 0.5 * (lo + hi)) / r->beta[i]);
    /* every neighbour's weight p_{j|i} = exp(-beta d_ij) / sum, at the
     * library's beta, matched to its neighbour by index (a permutation of
     * the weights would keep the entropy) */
    double z = 0, dmin = INFINITY;
    for (size_t j = 0; j < n; j++)
      if (j != i) dmin = fmin(dmin, d[j < i ? j : j - 1]);
    for (int t = 0; t < m; t++) z += exp(-r->beta[i] * (d[t] - dmin));
    for (int64_t q = r->P->rowptr[i]; q < r->P->rowptr[i + 1]; q++) {
      int32_t j = r->P->colind[q];
      double want = exp(-r->beta[i] * (d[(size_t)j < i ? (size_t)j : (size_t)j - 1] - dmin)) / z;
      worst_weight = fmax(worst_weight, fabs(nle_csr_value(r->P, q) - want) / want);
    }
  }
  if (!nle_test(worst < 1e-10)) printf("  worst relative difference %g\n", worst);
  if (!nle_test(worst_weight < 1e-12)) printf("  worst relative weight difference %g\n", worst_weight);
  nle_ea_result_free(&r);
  nle_ctx_free(&ctx);
  nle_csr_free(&g);
  nle_matf_free(&Y);
}

/* F = H - log K and its derivatives in alpha = log beta (sec. 2.3.1) that
 * the root finders step with, against the entropy of the weights computed
 * here and its central differences. */
static void entropy_derivatives(void) {
  nle_rng r;
  nle_rng_init(&r, 5, 0);
  double d[40], worst[3] = {0, 0, 0};
  for (int trial = 0; trial < 20; trial++) {
    for (int j = 0; j < 40; j++) d[j] = (double)j * 0.05 + nle_rng_uniform(&r) * (1 + trial % 4);
    double log_k = log(8.0);
    for (double alpha = -2.0; alpha <= 3.0; alpha += 0.5) {
      double h = 1e-4, H[5];
      for (int s = -2; s <= 2; s++) {
        double beta = exp(alpha + s * h), z = 0, dmin = d[0], ent = 0;
        for (int j = 1; j < 40; j++) dmin = fmin(dmin, d[j]);
        for (int j = 0; j < 40; j++) z += exp(-beta * (d[j] - dmin));
        for (int j = 0; j < 40; j++) {
          double p = exp(-beta * (d[j] - dmin)) / z;
          if (p > 0) ent -= p * log(p);
        }
        H[s + 2] = ent - log_k;
      }
      double f[3];
      nle__ea_evaluate(d, 40, alpha, log_k, f);
      double want[3] = {H[2], (H[3] - H[1]) / (2 * h), (H[3] - 2 * H[2] + H[1]) / (h * h)};
      for (int t = 0; t < 3; t++) worst[t] = fmax(worst[t], fabs(f[t] - want[t]) / fmax(fabs(want[t]), 1e-3));
    }
  }
  if (!nle_test(worst[0] < 1e-12 && worst[1] < 1e-6 && worst[2] < 1e-4))
    printf("  F, F', F'' off by %.3g, %.3g, %.3g\n", worst[0], worst[1], worst[2]);
}

/* Scaling the data by a scales every beta by 1/a^2 (sec. 2.2). */
static void scaling_law(void) {
  nle_matf *Y = clustered(400, 5, 4);
  nle_csr *g = knn_of(Y, 30);
  nle_ctx *ctx = test_ctx(1);
  nle_ea_opts o;
  nle_ea_opts_init(&o);
  o.perplexity = 10;
  nle_ea_result *r, *r2;
  nle_test_ok(nle_entropic_affinities(ctx, g, &o, &r));
  double a = 7.5;
  for (int64_t q = 0; q < g->nnz; q++) ((float *)g->val)[q] *= (float)(a * a);
  nle_test_ok(nle_entropic_affinities(ctx, g, &o, &r2));
  double worst = 0;
  for (int i = 0; i < 400; i++) worst = fmax(worst, fabs(r2->beta[i] * a * a - r->beta[i]) / r->beta[i]);
  nle_test(worst < 1e-7); /* float rounding of the scaled distances */
  nle_ea_result_free(&r);
  nle_ea_result_free(&r2);
  nle_ctx_free(&ctx);
  nle_csr_free(&g);
  nle_matf_free(&Y);
}

/* Duplicates: zero distances are handled; a point with >= K exact duplicates
 * gets equal affinities on them; constant data is an error; no NaN. */
static void duplicates_and_constant(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(200, 4, 6);
  for (int c = 0; c < 4; c++)
    for (int dup = 1; dup <= 3; dup++) Y->data[4 * (size_t)(50 + dup) + (size_t)c] = Y->data[4 * 50 + (size_t)c]; /* 4 copies */
  for (int dup = 1; dup <= 12; dup++)
    for (int c = 0; c < 4; c++) Y->data[4 * (size_t)(100 + dup) + (size_t)c] = Y->data[4 * 100 + (size_t)c]; /* 13 copies */
  nle_csr *g = knn_of(Y, 30);
  nle_ea_opts o;
  nle_ea_opts_init(&o);
  o.perplexity = 8;
  nle_ea_result *r;
  nle_test_ok(nle_entropic_affinities(ctx, g, &o, &r));
  int finite = 1;
  for (int64_t q = 0; q < r->P->nnz; q++) finite &= isfinite(nle_csr_value(r->P, q));
  for (int i = 0; i < 200; i++) finite &= isfinite(r->beta[i]);
  nle_test(finite);
  nle_test(fabs(row_entropy(r->P, 50) - log(8.0)) < 1e-10); /* 3 duplicates < K: normal */
  /* Degenerate: the 13 copies (12 duplicates each), and any point whose
   * nearest neighbour is one of them (13 neighbours tied at the nearest). */
  int64_t tied = 0;
  for (int64_t i = 0; i < 200; i++) {
    int m = 1;
    while (m < 30 && nle_csr_value(g, g->rowptr[i] + m) == nle_csr_value(g, g->rowptr[i])) m++;
    tied += m >= 8;
  }
  nle_test(tied >= 13 && r->degenerate_points == tied);
  int64_t q0 = r->P->rowptr[100];
  for (int t = 0; t < 12; t++) nle_test_rel(nle_csr_value(r->P, q0 + t), 1.0 / 12, 1e-15);
  nle_test(nle_csr_value(r->P, q0 + 12) == 0.0);
  nle_ea_result_free(&r);
  nle_csr_free(&g);
  for (size_t i = 0; i < 200 * 4; i++) Y->data[i] = 3.0f; /* constant */
  g = knn_of(Y, 30);
  r = NULL;
  nle_test(nle_entropic_affinities(ctx, g, &o, &r) == NLE_ERR_VALUE && r == NULL);
  nle_test(strstr(nle_ctx_error(ctx), "constant") != NULL);
  o.perplexity = 30; /* not below k */
  nle_test(nle_entropic_affinities(ctx, g, &o, &r) == NLE_ERR_ARG);
  nle_test(strstr(nle_ctx_error(ctx), "perplexity=30 must be") != NULL);
  nle_csr_free(&g);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

static void threads_identical(void) {
  nle_matf *Y = clustered(3000, 5, 8);
  nle_csr *g = knn_of(Y, 30);
  nle_ctx *one = test_ctx(1), *two = test_ctx(1);
  nle_ctx_set_threads(two, 2);
  nle_ea_opts o;
  nle_ea_opts_init(&o);
  o.perplexity = 9;
  for (int order = 0; order < NLE_ORDER_COUNT; order++) {
    o.order = (nle_ea_order)order;
    nle_ea_result *a, *b;
    nle_test_ok(nle_entropic_affinities(one, g, &o, &a));
    nle_test_ok(nle_entropic_affinities(two, g, &o, &b));
    nle_test(!memcmp(a->beta, b->beta, 3000 * sizeof(double)));
    nle_test(!memcmp(a->P->val, b->P->val, (size_t)a->P->nnz * sizeof(double)));
    nle_ea_result_free(&a);
    nle_ea_result_free(&b);
  }
  nle_ctx_free(&one);
  nle_ctx_free(&two);
  nle_csr_free(&g);
  nle_matf_free(&Y);
}

/* (P + P^T) / 2 against a dense computation; normalised sums to 1. */
static void symmetrize(void) {
  nle_matf *Y = test_random_matf(80, 3, 2);
  nle_csr *g = knn_of(Y, 12);
  nle_ctx *ctx = test_ctx(1);
  nle_ea_opts o;
  nle_ea_opts_init(&o);
  o.perplexity = 5;
  nle_ea_result *r;
  nle_test_ok(nle_entropic_affinities(ctx, g, &o, &r));
  double dense[80][80] = {{0}};
  for (int i = 0; i < 80; i++)
    for (int64_t q = r->P->rowptr[i]; q < r->P->rowptr[i + 1]; q++) dense[i][r->P->colind[q]] = nle_csr_value(r->P, q);
  nle_csr *W, *Wn;
  nle_test_ok(nle_affinity_symmetrize(ctx, r->P, 0, &W));
  nle_test_ok(nle_affinity_symmetrize(ctx, r->P, 1, &Wn));
  double got[80][80] = {{0}}, total = 0;
  for (int i = 0; i < 80; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      got[i][W->colind[q]] = nle_csr_value(W, q);
      if (q > W->rowptr[i]) nle_test(W->colind[q] > W->colind[q - 1]);
    }
  double worst = 0;
  for (int i = 0; i < 80; i++)
    for (int j = 0; j < 80; j++) worst = fmax(worst, fabs(got[i][j] - 0.5 * (dense[i][j] + dense[j][i])));
  nle_test(worst < 1e-15);
  for (int64_t q = 0; q < Wn->nnz; q++) total += nle_csr_value(Wn, q);
  nle_test_rel(total, 1.0, 1e-12);
  nle_csr_free(&W);
  nle_csr_free(&Wn);
  nle_ea_result_free(&r);
  nle_ctx_free(&ctx);
  nle_csr_free(&g);
  nle_matf_free(&Y);
}

/* Every kind against its formula on the union graph; W- against dense. */
static void other_kinds(void) {
  size_t n = 60;
  nle_matf *Y = test_random_matf(n, 3, 12);
  nle_csr *g = knn_of(Y, 8);
  nle_ctx *ctx = test_ctx(1);
  double d2[60][60];
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (int t = 0; t < 3; t++) s += pow((double)Y->data[i * 3 + t] - Y->data[j * 3 + t], 2);
      d2[i][j] = s;
    }
  double kth[60];
  for (size_t i = 0; i < n; i++) kth[i] = sqrt(nle_csr_value(g, g->rowptr[i] + 6));
  nle_affinity_opts o;
  nle_affinity_opts_init(&o);
  o.sigma = 0.7;
  for (int kind = NLE_AFF_GAUSSIAN; kind <= NLE_AFF_SELF_TUNING; kind++) {
    o.kind = (nle_affinity_kind)kind;
    nle_csr *W;
    nle_test_ok(nle_affinity_graph(ctx, g, &o, &W));
    double worst = 0;
    int symmetric = 1;
    for (int64_t i = 0; i < (int64_t)n; i++)
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
        int32_t j = W->colind[q];
        double d = d2[i][j], want = kind == NLE_AFF_GAUSSIAN ? exp(-d / (2 * 0.49))
                                  : kind == NLE_AFF_BINARY   ? 1.0
                                  : kind == NLE_AFF_INVERSE  ? 1.0 / sqrt(d)
                                                             : exp(-d / (kth[i] * kth[j]));
        worst = fmax(worst, fabs(nle_csr_value(W, q) - want) / want);
        int found = 0;
        for (int64_t p = W->rowptr[j]; p < W->rowptr[j + 1]; p++) found |= W->colind[p] == i;
        symmetric &= found;
      }
    nle_test(worst < 1e-5); /* squared distances are float */
    nle_test(symmetric);
    nle_test(W->nnz >= (int64_t)n * 8);
    nle_csr_free(&W);
  }
  /* a width whose weights all underflow is refused, naming the median
   * nearest-neighbour distance (computed here from d2) */
  o.kind = NLE_AFF_GAUSSIAN;
  o.sigma = 1e-200;
  nle_csr *W0 = NULL;
  nle_test(nle_affinity_graph(ctx, g, &o, &W0) == NLE_ERR_VALUE && !W0);
  double nearest[60];
  for (size_t i = 0; i < n; i++) {
    nearest[i] = INFINITY;
    for (size_t j = 0; j < n; j++)
      if (j != i) nearest[i] = fmin(nearest[i], sqrt(d2[i][j]));
  }
  for (size_t i = 1; i < n; i++) /* insertion sort: the median */
    for (size_t j = i; j > 0 && nearest[j - 1] > nearest[j]; j--) {
      double t = nearest[j];
      nearest[j] = nearest[j - 1];
      nearest[j - 1] = t;
    }
  char want[64];
  snprintf(want, sizeof want, "nearest neighbour is %.3g)", nearest[n / 2]);
  nle_test(strstr(nle_ctx_error(ctx), want) != NULL);
  nle_matd *Wd, *Wu, *Ws;
  nle_test_ok(nle_affinity_gaussian_dense(ctx, Y, 0.7, &Wd));
  nle_test_ok(nle_repulsive_dense(ctx, Y, NLE_WNEG_UNIFORM, &Wu));
  nle_test_ok(nle_repulsive_dense(ctx, Y, NLE_WNEG_SQDIST, &Ws));
  double worst = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      worst = fmax(worst, fabs(Wd->data[i * n + j] - (i == j ? 0 : exp(-d2[i][j] / 0.98))));
      worst = fmax(worst, fabs(Wu->data[i * n + j] - (i != j)));
      worst = fmax(worst, fabs(Ws->data[i * n + j] - d2[i][j]));
    }
  nle_test(worst < 1e-12);
  nle_csr *Wk;
  nle_test_ok(nle_repulsive_knn(ctx, g, &Wk));
  nle_test(Wk->nnz >= (int64_t)n * 8 && fabs(nle_csr_value(Wk, 0) - d2[0][Wk->colind[0]]) < 1e-5 * d2[0][Wk->colind[0]]);
  nle_ctx_set_max_memory(ctx, 1000);
  nle_matd *big = NULL;
  nle_test(nle_repulsive_dense(ctx, Y, NLE_WNEG_UNIFORM, &big) == NLE_ERR_MEMCAP && big == NULL);
  nle_csr_free(&Wk);
  nle_matd_free(&Wd);
  nle_matd_free(&Wu);
  nle_matd_free(&Ws);
  nle_ctx_free(&ctx);
  nle_csr_free(&g);
  nle_matf_free(&Y);
}

const nle_test_case affinity_tests[] = {{"affinity/p1_equation", p1_equation},
                                        {"affinity/bounds_bracket_root", bounds_bracket_root},
                                        {"affinity/all_methods_converge", all_methods_converge},
                                        {"affinity/dense_reference", dense_reference},
                                        {"affinity/entropy_derivatives", entropy_derivatives},
                                        {"affinity/scaling_law", scaling_law},
                                        {"affinity/duplicates_and_constant", duplicates_and_constant},
                                        {"affinity/threads_identical", threads_identical},
                                        {"affinity/symmetrize", symmetrize},
                                        {"affinity/other_kinds", other_kinds},
                                        {NULL, NULL}};
