/* test_neighbors.c — exact kNN against a naive O(N^2) loop. */
#include "harness.h"
#include "../src/neighbors/neighbors_internal.h"

#include <limits.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double d;
  int i;
} ref_pair;

static int ref_cmp(const void *a, const void *b) {
  const ref_pair *x = a, *y = b;
  if (x->d != y->d) return x->d < y->d ? -1 : 1;
  return x->i - y->i;
}

/* The `count` candidates of query row q of Q sorted by their squared
 * distances to their rows of Y, computed directly in double: the
 * re-ranking's reference. */
static void sorted_candidates(const nle_matf *Q, size_t q, const nle_matf *Y, const nle_csr *cand, int count,
                              ref_pair *row) {
  size_t d = Y->cols;
  for (int c = 0; c < count; c++) {
    int j = cand->colind[cand->rowptr[q] + c];
    double s = 0;
    for (size_t t = 0; t < d; t++) {
      double u = (double)Q->data[q * d + t] - Y->data[(size_t)j * d + t];
      s += u * u;
    }
    row[c] = (ref_pair){s, j};
  }
  qsort(row, (size_t)count, sizeof *row, ref_cmp);
}

/* Naive reference: every distance in double, full sort, ties by index; the
 * queries are Q's rows (Y's own rows, themselves left out, when Q is NULL). */
static int matches_naive_query(const nle_matf *Y, const nle_matf *Q, const nle_csr *g, int k) {
  size_t n = Y->rows, d = Y->cols, nq = Q ? Q->rows : n;
  const float *qs = Q ? Q->data : Y->data;
  ref_pair *row = malloc(n * sizeof *row);
  int ok = 1;
  for (size_t i = 0; i < nq && ok; i++) {
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
      if (!Q && j == i) continue;
      double s = 0;
      for (size_t t = 0; t < d; t++) {
        double u = (double)qs[i * d + t] - Y->data[j * d + t];
        s += u * u;
      }
      row[m++] = (ref_pair){(double)(float)s, (int)j};
    }
    qsort(row, m, sizeof *row, ref_cmp);
    for (int c = 0; c < k; c++) {
      int64_t q = g->rowptr[i] + c;
      if (g->colind[q] != row[c].i || nle_csr_value(g, q) != row[c].d) {
        printf("  row %zu rank %d: got %d (%g), want %d (%g)\n", i, c, g->colind[q], nle_csr_value(g, q), row[c].i,
               row[c].d);
        ok = 0;
        break;
      }
    }
  }
  free(row);
  return ok;
}

static int matches_naive(const nle_matf *Y, const nle_csr *g, int k) { return matches_naive_query(Y, NULL, g, k); }

/* Queries against reference points: new points, and copies of reference
 * points (found at distance 0, first). */
static void knn_query_vs_naive(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(1500, 9, 21), *Q = test_random_matf(300, 9, 22);
  memcpy(Q->data, Y->data + 17 * 9, 9 * sizeof(float)); /* query 0 is reference point 17 */
  nle_csr *g;
  nle_test_ok(nle_knn_query(ctx, Y, Q, 6, &g));
  nle_test(g->rows == 300 && g->cols == 1500 && g->nnz == 300 * 6);
  nle_test(matches_naive_query(Y, Q, g, 6));
  nle_test(g->colind[0] == 17 && nle_csr_value(g, 0) == 0.0);
  nle_csr_free(&g);
  nle_test(nle_knn_query(ctx, Y, Q, 1501, &g) == NLE_ERR_ARG);
  nle_matf_free(&Q);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Normal points of deviation `spread` about 8 centres 12 apart in 24-d
 * (row i's centre: i % 8). */
static nle_matf *clustered(size_t n, uint64_t seed, float spread) {
  nle_matf *Y = test_random_matf(n, 24, seed);
  for (size_t i = 0; i < n * 24; i++) Y->data[i] *= spread;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < 3; t++) Y->data[i * 24 + t] += 12.0f * (float)((i % 8) >> t & 1);
  return Y;
}

/* Queries from elsewhere on the GEMM path, several row and column blocks of
 * clustered points: the queries sorted by the leaf of the reference points'
 * tree they fall in, the column blocks visited nearest box first and those
 * whose box is beyond a query's bound left out (most of them here). The
 * graph is the naive one, in the original query order, and the same bits
 * for 1 and 2 threads; also with a large offset (the GEMM form's
 * cancellation), and with tight clusters beside one far reference point
 * (the GEMM form's error bound, which grows with the largest norm, then
 * exceeds the distances within a cluster: a box is left out only beyond
 * the bound by more than that error). */
static void knn_query_blocks_vs_naive(void) {
  nle_ctx *one = test_ctx(1), *two = test_ctx(1);
  nle_ctx_set_threads(two, 2);
  nle_matf *Y = clustered(3000, 31, 1.0f), *Q = clustered(700, 32, 1.0f);
  for (int pass = 0; pass < 3; pass++) {
    nle_csr *g = NULL, *g2 = NULL;
    nle_test_ok(nle_knn_query(one, Y, Q, 10, &g));
    nle_test_ok(nle_knn_query(two, Y, Q, 10, &g2));
    nle_test(g && g->rows == 700 && g->nnz == 700 * 10 && matches_naive_query(Y, Q, g, 10));
    nle_test(g && g2 && !memcmp(g->colind, g2->colind, sizeof(int32_t) * 7000) &&
             !memcmp(g->val, g2->val, sizeof(float) * 7000));
    nle_csr_free(&g);
    nle_csr_free(&g2);
    if (pass == 0) {
      for (size_t i = 0; i < 3000 * 24; i++) Y->data[i] = Y->data[i] * 0.01f + 300.0f;
      for (size_t i = 0; i < 700 * 24; i++) Q->data[i] = Q->data[i] * 0.01f + 300.0f;
    } else if (pass == 1) {
      nle_matf_free(&Y);
      nle_matf_free(&Q);
      Y = clustered(3000, 33, 0.1f);
      Q = clustered(700, 34, 0.1f);
      Y->data[5] = 1000.0f;
    }
  }
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&one);
  nle_ctx_free(&two);
}

static void knn_vs_naive(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(2300, 13, 11); /* spans several row and column blocks */
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = 7;
  nle_csr *g;
  nle_test_ok(nle_knn_exact(ctx, Y, &o, &g));
  nle_test(g->rows == 2300 && g->nnz == 2300 * 7);
  nle_test(matches_naive(Y, g, 7));
  nle_csr_free(&g);
  /* A large offset makes |a|^2 + |b|^2 - 2ab cancel badly; the re-ranking
   * must still give the exact order. */
  for (size_t i = 0; i < Y->rows * Y->cols; i++) Y->data[i] = Y->data[i] * 0.01f + 300.0f;
  nle_test_ok(nle_knn_exact(ctx, Y, &o, &g));
  nle_test(matches_naive(Y, g, 7));
  nle_csr_free(&g);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

static void knn_threads_identical(void) {
  nle_matf *Y = test_random_matf(1500, 20, 5);
  nle_ctx *one = test_ctx(1), *two = test_ctx(1);
  nle_ctx_set_threads(two, 2);
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = 15;
  nle_csr *a, *b;
  nle_test_ok(nle_knn_exact(one, Y, &o, &a));
  nle_test_ok(nle_knn_exact(two, Y, &o, &b));
  nle_test(!memcmp(a->colind, b->colind, sizeof(int32_t) * (size_t)a->nnz));
  nle_test(!memcmp(a->val, b->val, sizeof(float) * (size_t)a->nnz));
  nle_csr_free(&a);
  nle_csr_free(&b);
  nle_matf_free(&Y);
  nle_ctx_free(&one);
  nle_ctx_free(&two);
}

static void knn_duplicates_and_errors(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(50, 3, 2);
  for (int c = 0; c < 3; c++) Y->data[3 * 7 + c] = Y->data[3 * 4 + c] = Y->data[c]; /* 0, 4, 7 equal */
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = 2;
  nle_csr *g = NULL;
  nle_test_ok(nle_knn_exact(ctx, Y, &o, &g));
  nle_test(g->colind[0] == 4 && g->colind[1] == 7 && nle_csr_value(g, 0) == 0 && nle_csr_value(g, 1) == 0);
  nle_test(matches_naive(Y, g, 2));
  nle_csr_free(&g);
  o.k = 50;
  nle_test(nle_knn_exact(ctx, Y, &o, &g) == NLE_ERR_ARG && g == NULL);
  nle_test(strstr(nle_ctx_error(ctx), "neighbors=50") != NULL);
  o.k = 0;
  nle_test(nle_knn_exact(ctx, Y, &o, &g) == NLE_ERR_ARG);
  o.k = 49;
  nle_test_ok(nle_knn_exact(ctx, Y, &o, &g));
  nle_test(matches_naive(Y, g, 49));
  nle_csr_free(&g);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Mean fraction of the exact neighbours found. */
static double recall_vs_exact(const nle_csr *a, const nle_csr *e) {
  double hit = 0;
  for (int64_t i = 0; i < e->rows; i++)
    for (int64_t p = e->rowptr[i]; p < e->rowptr[i + 1]; p++)
      for (int64_t q = a->rowptr[i]; q < a->rowptr[i + 1]; q++)
        if (a->colind[q] == e->colind[p]) {
          hit++;
          break;
        }
  return hit / (double)e->nnz;
}

/* Recall against the exact graph above a floor on clustered and on uniform
 * data, rows sorted with exact distances, no self, no repeats. */
static void approx_recall(void) {
  nle_ctx *ctx = test_ctx(1);
  const char *sets[2] = {"blobs:4000:20:12", "swissroll:4000"};
  for (int d = 0; d < 2; d++) {
    nle_dataset *ds;
    nle_test_ok(nle_dataset_read(ctx, sets[d], NULL, &ds));
    nle_knn_opts eo;
    nle_knn_opts_init(&eo);
    eo.k = 15;
    nle_knn_approx_opts ao;
    nle_knn_approx_opts_init(&ao);
    ao.k = 15;
    nle_csr *e, *a;
    nle_test_ok(nle_knn_exact(ctx, ds->X, &eo, &e));
    nle_test_ok(nle_knn_approx(ctx, ds->X, &ao, &a));
    double r = recall_vs_exact(a, e);
    if (!nle_test(r >= 0.99)) printf("  %s: recall %.4f\n", sets[d], r);
    int sane = 1;
    for (int64_t i = 0; i < a->rows; i++)
      for (int64_t q = a->rowptr[i]; q < a->rowptr[i + 1]; q++) {
        sane &= a->colind[q] != i && a->colind[q] >= 0;
        if (q > a->rowptr[i]) sane &= nle_csr_value(a, q) > nle_csr_value(a, q - 1) ||
                                      (nle_csr_value(a, q) == nle_csr_value(a, q - 1) && a->colind[q] > a->colind[q - 1]);
      }
    nle_test(sane);
    nle_csr_free(&e);
    nle_csr_free(&a);
    nle_dataset_free(&ds);
  }
  nle_ctx_free(&ctx);
}

/* The same graph bit for bit with 1 and 2 threads, and for a repeated seed. */
static void approx_deterministic(void) {
  nle_matf *Y = test_random_matf(3000, 12, 17);
  nle_ctx *one = test_ctx(5), *two = test_ctx(5);
  nle_ctx_set_threads(two, 2);
  nle_knn_approx_opts o;
  nle_knn_approx_opts_init(&o);
  o.k = 12;
  o.max_candidates = 8; /* small samples leave work for several iterations */
  nle_csr *a, *b, *c;
  nle_test_ok(nle_knn_approx(one, Y, &o, &a));
  nle_test_ok(nle_knn_approx(two, Y, &o, &b));
  nle_test_ok(nle_knn_approx(two, Y, &o, &c));
  nle_test(!memcmp(a->colind, b->colind, sizeof(int32_t) * (size_t)a->nnz));
  nle_test(!memcmp(a->val, b->val, sizeof(float) * (size_t)a->nnz));
  nle_test(!memcmp(b->colind, c->colind, sizeof(int32_t) * (size_t)b->nnz));
  nle_csr_free(&a);
  nle_csr_free(&b);
  nle_csr_free(&c);
  nle_matf_free(&Y);
  nle_ctx_free(&one);
  nle_ctx_free(&two);
}

/* The joins' two ways to distances, the tiles (narrow rows) and the GEMM
 * screen with each passing pair's own sum (wide rows), give the same graph
 * bit for bit, on narrow and on wide data with an offset (the screen's
 * rounding bound about the list's first row), at 2 threads. (A screen that
 * turned away a pair the tiles insert would change the graph.) */
static void approx_wide_path_same(void) {
  nle_ctx *ctx = test_ctx(9);
  nle_ctx_set_threads(ctx, 2);
  const size_t dims[2] = {12, 130};
  for (int w = 0; w < 2; w++) {
    nle_matf *Y = test_random_matf(2500, dims[w], 40 + (uint64_t)w);
    for (size_t i = 0; i < Y->rows * Y->cols; i++) Y->data[i] = Y->data[i] * (1.0f + (float)(i % 7)) + 50.0f;
    nle_knn_approx_opts o;
    nle_knn_approx_opts_init(&o);
    o.k = 15;
    o.max_candidates = 10;
    nle_csr *tiles, *screened;
    nle__knn_approx_wide_from(100000); /* tiles everywhere */
    nle_test_ok(nle_knn_approx(ctx, Y, &o, &tiles));
    nle__knn_approx_wide_from(1); /* the GEMM screen everywhere */
    nle_test_ok(nle_knn_approx(ctx, Y, &o, &screened));
    nle__knn_approx_wide_from(0);
    nle_test(!memcmp(tiles->colind, screened->colind, sizeof(int32_t) * (size_t)tiles->nnz) &&
             !memcmp(tiles->val, screened->val, sizeof(float) * (size_t)tiles->nnz));
    nle_test(tiles->nnz == (int64_t)Y->rows * 15);
    nle_csr_free(&tiles);
    nle_csr_free(&screened);
    nle_matf_free(&Y);
  }
  nle_ctx_free(&ctx);
}

/* Many exact duplicates and tiny inputs: still valid graphs. */
static void approx_edge_cases(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(500, 3, 4);
  for (int i = 1; i < 200; i++)
    for (int c = 0; c < 3; c++) Y->data[i * 3 + c] = Y->data[c]; /* 200 copies of point 0 */
  nle_knn_approx_opts o;
  nle_knn_approx_opts_init(&o);
  o.k = 5;
  nle_csr *g = NULL;
  nle_test_ok(nle_knn_approx(ctx, Y, &o, &g));
  nle_test(g && nle_csr_value(g, 0) == 0.0f && nle_csr_value(g, 4) == 0.0f);
  nle_csr_free(&g);
  nle_matf small = {6, 3, Y->data + 600};
  o.k = 5;
  nle_test_ok(nle_knn_approx(ctx, &small, &o, &g));
  nle_test(matches_naive(&small, g, 5));
  nle_csr_free(&g);
  o.k = 6;
  nle_test(nle_knn_approx(ctx, &small, &o, &g) == NLE_ERR_ARG && g == NULL);
  /* 0 is not "automatic" (NLE_AUTO is): a forest of no trees is refused */
  o.k = 5;
  o.n_trees = 0;
  nle_test(nle_knn_approx(ctx, Y, &o, &g) == NLE_ERR_ARG && g == NULL);
  nle_test(strstr(nle_ctx_error(ctx), "trees=0") != NULL);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Re-ranking: the candidates are the 25 nearest among the first 3 of 12
 * columns; the 8 kept must be the nearest of them in all 12 (double
 * reference, sorted, ties by index), with their 12-column distances. */
static void knn_rerank_vs_naive(void) {
  nle_ctx *ctx = test_ctx(2);
  size_t n = 700, d = 12;
  nle_matf *Y = test_random_matf(n, d, 31), *Y3;
  nle_test_ok(nle_matf_alloc(ctx, n, 3, &Y3));
  for (size_t i = 0; i < n; i++) memcpy(Y3->data + i * 3, Y->data + i * d, 3 * sizeof(float));
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = 25;
  nle_csr *cand, *g;
  nle_test_ok(nle_knn_exact(ctx, Y3, &o, &cand));
  nle_test_ok(nle_knn_rerank(ctx, Y, cand, 8, &g));
  nle_test(g->rows == (int64_t)n && g->nnz == (int64_t)n * 8);
  int bad = 0, moved = 0;
  for (size_t i = 0; i < n; i++) {
    ref_pair row[25];
    sorted_candidates(Y, i, Y, cand, 25, row);
    for (int c = 0; c < 8; c++) {
      int64_t q = g->rowptr[i] + c;
      bad += g->colind[q] != row[c].i || fabs(nle_csr_value(g, q) - row[c].d) > 1e-6 * row[c].d;
      moved += row[c].i != cand->colind[cand->rowptr[i] + c];
    }
  }
  nle_test(bad == 0);
  nle_test(moved > 0); /* the re-ranking changed something */
  nle_csr_free(&g);
  /* rows of different lengths (20 to 25 candidates: the re-ranking works in
   * groups of rows with room for the longest), at 1 and 2 threads */
  nle_csr *uneven;
  nle_test_ok(nle_csr_alloc(ctx, (int64_t)n, (int64_t)n, cand->nnz, NLE_F32, &uneven));
  uneven->rowptr[0] = 0;
  for (size_t i = 0; i < n; i++) {
    int len = 25 - (int)(i % 6);
    for (int c = 0; c < len; c++) {
      uneven->colind[uneven->rowptr[i] + c] = cand->colind[cand->rowptr[i] + c];
      ((float *)uneven->val)[uneven->rowptr[i] + c] = nle_csr_value(cand, cand->rowptr[i] + c);
    }
    uneven->rowptr[i + 1] = uneven->rowptr[i] + len;
  }
  uneven->nnz = uneven->rowptr[n];
  nle_ctx *one = test_ctx(2);
  nle_ctx_set_threads(one, 1);
  nle_csr *g1;
  nle_test_ok(nle_knn_rerank(ctx, Y, uneven, 8, &g));
  nle_test_ok(nle_knn_rerank(one, Y, uneven, 8, &g1));
  bad = 0;
  for (size_t i = 0; i < n; i++) {
    ref_pair row[25];
    sorted_candidates(Y, i, Y, uneven, 25 - (int)(i % 6), row);
    for (int c = 0; c < 8; c++) {
      int64_t q = g->rowptr[i] + c;
      bad += g->colind[q] != row[c].i || fabs(nle_csr_value(g, q) - row[c].d) > 1e-6 * row[c].d;
    }
  }
  nle_test(bad == 0);
  nle_test(!memcmp(g->colind, g1->colind, (size_t)g->nnz * sizeof(int32_t)) &&
           !memcmp(g->val, g1->val, (size_t)g->nnz * sizeof(float)));
  nle_csr_free(&g);
  nle_csr_free(&g1);
  nle_csr_free(&uneven);
  nle_ctx_free(&one);
  nle_test(nle_knn_rerank(ctx, Y, cand, 26, &g) == NLE_ERR_ARG && !g);
  nle_test(nle_knn_rerank(ctx, Y3, cand, 0, &g) == NLE_ERR_ARG);
  nle_csr_free(&cand);
  nle_matf_free(&Y3);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Queries' candidates (found among 3 of 12 columns) re-ranked by their
 * 12-d distances to the reference points, against a direct sort. */
static void knn_rerank_queries_vs_naive(void) {
  nle_ctx *ctx = test_ctx(3);
  size_t n = 500, m = 120, d = 12;
  nle_matf *Y = test_random_matf(n, d, 41), *Q = test_random_matf(m, d, 42), *Y3, *Q3;
  nle_test_ok(nle_matf_alloc(ctx, n, 3, &Y3));
  nle_test_ok(nle_matf_alloc(ctx, m, 3, &Q3));
  for (size_t i = 0; i < n; i++) memcpy(Y3->data + i * 3, Y->data + i * d, 3 * sizeof(float));
  for (size_t i = 0; i < m; i++) memcpy(Q3->data + i * 3, Q->data + i * d, 3 * sizeof(float));
  nle_csr *cand, *g;
  nle_test_ok(nle_knn_query(ctx, Y3, Q3, 20, &cand));
  nle_test_ok(nle__knn_rerank_queries(ctx, Y, Q, cand, 6, NULL, &g));
  nle_test(g->rows == (int64_t)m && g->cols == (int64_t)n && g->nnz == (int64_t)m * 6);
  int bad = 0;
  for (size_t i = 0; i < m; i++) {
    ref_pair row[20];
    sorted_candidates(Q, i, Y, cand, 20, row);
    for (int c = 0; c < 6; c++) {
      int64_t q = g->rowptr[i] + c;
      bad += g->colind[q] != row[c].i || fabs(nle_csr_value(g, q) - row[c].d) > 1e-6 * row[c].d;
    }
  }
  nle_test(bad == 0);
  /* taken in another order (reversed), the same graph, bit for bit */
  int32_t order[120];
  for (int i = 0; i < 120; i++) order[i] = 119 - i;
  nle_csr *r = NULL;
  nle_test_ok(nle__knn_rerank_queries(ctx, Y, Q, cand, 6, order, &r));
  nle_test(r && !memcmp(r->colind, g->colind, sizeof(int32_t) * 720) && !memcmp(r->val, g->val, sizeof(float) * 720));
  nle_csr_free(&r);
  nle_csr_free(&g);
  nle_test(nle__knn_rerank_queries(ctx, Y, Q, cand, 21, NULL, &g) == NLE_ERR_ARG && !g);
  nle_test(nle__knn_rerank_queries(ctx, Y3, Q, cand, 6, NULL, &g) == NLE_ERR_ARG && !g); /* columns differ */
  nle_csr_free(&cand);
  nle_matf_free(&Y3);
  nle_matf_free(&Q3);
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&ctx);
}

/* Neighbours do not depend on the data's scale (an exact power of two keeps
 * every float's mantissa): 2^50 and 2^-50 give the indices of 1; past the
 * single-precision range, every search refuses the data, naming the
 * farthest point's row, instead of returning infinite distances. */
static void knn_scale_range(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(600, 6, 9);
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = 5;
  nle_csr *ref, *g;
  nle_test_ok(nle_knn_exact(ctx, Y, &o, &ref));
  const float scales[2] = {0x1p50f, 0x1p-50f};
  for (int t = 0; t < 2; t++) {
    nle_matf *S = test_random_matf(600, 6, 9);
    for (size_t i = 0; i < S->rows * S->cols; i++) S->data[i] *= scales[t];
    nle_test_ok(nle_knn_exact(ctx, S, &o, &g));
    nle_test(g && !memcmp(g->colind, ref->colind, sizeof(int32_t) * (size_t)ref->nnz));
    nle_csr_free(&g);
    nle_matf_free(&S);
  }
  Y->data[6 * 321 + 2] = 3e30f; /* row 322 */
  nle_test(nle_knn_exact(ctx, Y, &o, &g) == NLE_ERR_VALUE && !g);
  nle_test(strstr(nle_ctx_error(ctx), "point in row 322 lies ") != NULL);
  nle_knn_approx_opts ao;
  nle_knn_approx_opts_init(&ao);
  ao.k = 5;
  nle_test(nle_knn_approx(ctx, Y, &ao, &g) == NLE_ERR_VALUE && !g);
  nle_test(nle_knn_rerank(ctx, Y, ref, 5, &g) == NLE_ERR_VALUE && !g);
  Y->data[6 * 321 + 2] = 0.5f;
  nle_matf one = {1, 6, Y->data + 6 * 321};
  float far[6] = {0, 0, 0, 0, 0, 1e35f};
  nle_matf Q = {1, 6, far};
  nle_test_ok(nle_knn_query(ctx, Y, &one, 5, &g));
  nle_csr_free(&g);
  nle_test(nle_knn_query(ctx, Y, &Q, 5, &g) == NLE_ERR_VALUE && !g);
  nle_test(strstr(nle_ctx_error(ctx), "query point in row 1") != NULL);
  for (size_t i = 0; i < Y->rows * Y->cols; i++) Y->data[i] *= 1e-20f;
  nle_test(nle_knn_exact(ctx, Y, &o, &g) == NLE_ERR_VALUE && !g);
  nle_test(strstr(nle_ctx_error(ctx), "squared distances underflow") != NULL);
  nle_csr_free(&ref);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The k-d tree (low-dimensional data) against the GEMM search: the same
 * lists, bit for bit, ties by index included: random points in 2, 3, 5 and
 * 8 dimensions, and a grid with duplicates (every distance tied many
 * times); the graph (self left out) and queries from elsewhere; 1 and 2
 * threads. */
static void kdtree_vs_gemm(void) {
  const size_t dims[] = {2, 3, 5, 8, 2};
  for (size_t c = 0; c < 5; c++) {
    size_t n = 2500, d = dims[c];
    nle_matf *Y = test_random_matf(n, d, 100 + c), *Q = test_random_matf(300, d, 200 + c);
    if (c == 4) /* a 25 x 50 grid, each node twice: ties everywhere */
      for (size_t i = 0; i < n; i++) Y->data[2 * i] = (float)((i / 2) % 25), Y->data[2 * i + 1] = (float)((i / 2) / 25);
    for (int threads = 1; threads <= 2; threads++) {
      nle_ctx *ctx = test_ctx(5);
      nle_ctx_set_threads(ctx, threads);
      for (int query = 0; query < 2; query++) {
        nle_csr *a = NULL, *b = NULL;
        int k = c == 4 ? 9 : 15;
        nle_test_ok(nle__knn_kdtree(ctx, Y, query ? Q : NULL, k, &a));
        nle_test_ok(nle__knn_gemm(ctx, Y, query ? Q : NULL, k, &b));
        if (nle_test(a && b && a->nnz == b->nnz)) {
          int same = !memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof(int32_t)) &&
                     !memcmp(a->val, b->val, (size_t)a->nnz * sizeof(float));
          if (!nle_test(same)) printf("  d = %zu%s, %s: the k-d tree's lists differ from the GEMM search's\n", d,
                                      c == 4 ? " (grid)" : "", query ? "queries" : "graph");
        }
        nle_csr_free(&a);
        nle_csr_free(&b);
      }
      nle_ctx_free(&ctx);
    }
    nle_matf_free(&Y);
    nle_matf_free(&Q);
  }
  nle_test(nle__knn_kdtree_pays(20000, 3) && !nle__knn_kdtree_pays(20000, 50));
}

/* Graphs from precomputed distances against the searches on the points:
 * the dense matrix's k nearest are nle_knn_exact's (values: the squares of
 * the float distances, to 1e-6), its radius rows every point within; a
 * sparse graph of distances (the exact graph's, square-rooted) gives the
 * exact graph back, and with squared values as they are; bad matrices
 * named. */
static void from_distances(void) {
  nle_ctx *ctx = test_ctx(3);
  enum { N = 300, K = 7 };
  nle_matf *Y = test_random_matf(N, 4, 77), *D = NULL;
  nle_test_ok(nle_matf_alloc(ctx, N, N, &D));
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++) D->data[i * N + j] = (float)sqrt(nle__sqdist_fd(Y->data + i * 4, Y->data + j * 4, 4));
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = K;
  nle_csr *exact = NULL, *g = NULL, *ball = NULL, *root = NULL, *back = NULL, *same = NULL;
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &exact));
  nle_test_ok(nle_knn_from_distances(ctx, D, K, 0.0, &g));
  if (nle_test(exact && g && g->nnz == exact->nnz)) {
    int idx = !memcmp(g->colind, exact->colind, (size_t)g->nnz * sizeof(int32_t)), close = 1;
    for (int64_t q = 0; q < g->nnz; q++)
      close &= fabs(nle_csr_value(g, q) - nle_csr_value(exact, q)) <= 1e-6 * nle_csr_value(exact, q);
    nle_test(idx && close);
  }
  double reach = 0.0; /* every point's nearest within it */
  for (size_t i = 0; i < N; i++) {
    double nearest = INFINITY;
    for (size_t j = 0; j < N; j++) nearest = j != i ? fmin(nearest, D->data[i * N + j]) : nearest;
    reach = fmax(reach, nearest);
  }
  reach *= 1.01;
  nle_test_ok(nle_knn_from_distances(ctx, D, K, reach, &ball));
  for (int64_t i = 0; ball && i < N; i++) {
    int64_t want = 0;
    for (size_t j = 0; j < N; j++) want += j != (size_t)i && D->data[(size_t)i * N + j] <= reach;
    nle_test(ball->rowptr[i + 1] - ball->rowptr[i] == want);
  }
  /* the exact graph as distances, and as it is (squared) */
  nle_test_ok(nle_csr_alloc(ctx, N, N, exact->nnz, NLE_F64, &root));
  memcpy(root->rowptr, exact->rowptr, (N + 1) * sizeof(int64_t));
  for (int64_t q = 0; q < exact->nnz; q++) /* reversed in each row: the order must come back */
    root->colind[q] = exact->colind[exact->rowptr[q / K] + K - 1 - q % K],
    ((double *)root->val)[q] = sqrt(nle_csr_value(exact, exact->rowptr[q / K] + K - 1 - q % K));
  nle_test_ok(nle_knn_from_sparse_distances(ctx, root, false, &back));
  nle_test_ok(nle_knn_from_sparse_distances(ctx, exact, true, &same));
  if (nle_test(back && same)) {
    nle_test(!memcmp(back->colind, exact->colind, (size_t)exact->nnz * sizeof(int32_t)));
    nle_test(!memcmp(same->colind, exact->colind, (size_t)exact->nnz * sizeof(int32_t)) &&
             !memcmp(same->val, exact->val, (size_t)exact->nnz * sizeof(float)));
    int close = 1;
    for (int64_t q = 0; q < exact->nnz; q++)
      close &= fabs(nle_csr_value(back, q) - nle_csr_value(exact, q)) <= 1e-6 * nle_csr_value(exact, q);
    nle_test(close);
  }
  /* bad matrices */
  nle_csr *bad = NULL;
  D->data[3 * N + 5] = -1.0f;
  nle_test(nle_knn_from_distances(ctx, D, K, 0.0, &bad) == NLE_ERR_VALUE && !bad);
  nle_test(strstr(nle_ctx_error(ctx), "row 3, column 5 is -1") != NULL);
  D->data[3 * N + 5] = D->data[5 * N + 3] * 1.5f;
  nle_test(nle_knn_from_distances(ctx, D, K, 0.0, &bad) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "not symmetric"));
  D->data[3 * N + 5] = D->data[5 * N + 3];
  D->data[2 * N + 2] = 0.5f;
  nle_test(nle_knn_from_distances(ctx, D, K, 0.0, &bad) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "row 2, column 2 (the diagonal)"));
  D->data[2 * N + 2] = 0.0f;
  nle_test(nle_knn_from_distances(ctx, D, N, 0.0, &bad) == NLE_ERR_ARG);
  nle_test(nle_knn_from_distances(ctx, D, K, 1e-9, &bad) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "row 0 has no neighbour within radius="));
  nle_matf *W = test_random_matf(5, 3, 9);
  nle_csr *sw = NULL;
  W->data[4] = 0.0f;
  nle_test_ok(nle_csr_from_dense(ctx, W, &sw));
  nle_test(sw && sw->nnz == 14 && nle_csr_value(sw, 4) == (double)W->data[5]);
  W->data[7] = NAN;
  nle_csr_free(&sw);
  nle_test(nle_csr_from_dense(ctx, W, &sw) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "row 2, column 1"));
  nle_csr_free(&sw);
  nle_matf_free(&W);
  nle_csr_free(&exact);
  nle_csr_free(&g);
  nle_csr_free(&ball);
  nle_csr_free(&root);
  nle_csr_free(&back);
  nle_csr_free(&same);
  nle_matf_free(&D);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The range test's one-pass bound (each column's extremes) is up to d times
 * the largest distance: where it alone would refuse or accept wrongly, the
 * exact pass decides. 100 columns, each with its outlier in a row of its
 * own: every row's squared distance about 1/20 of the overflow limit, the
 * bound 5 times it: accepted. One row holding all outliers: refused. Then
 * the underflow end: a bound above 1e-34 whose rows lie below it. */
static void range_bound_falls_back(void) {
  nle_ctx *ctx = test_ctx(2);
  size_t n = 400, d = 100;
  nle_matf *Y = NULL;
  nle_test_ok(nle_matf_alloc(ctx, n, d, &Y));
  if (!Y) goto done;
  float big = (float)sqrt(FLT_MAX / 4.0 / 20.0);
  memset(Y->data, 0, n * d * sizeof(float));
  for (size_t j = 0; j < d; j++) Y->data[(2 * j) * d + j] = big;
  nle_test_ok(nle__knn_check_range(ctx, Y, NULL));
  for (size_t j = 0; j < d; j++) Y->data[(2 * j) * d + j] = 0.0f, Y->data[7 * d + j] = big;
  nle_test(nle__knn_check_range(ctx, Y, NULL) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "point in row 8 lies "));
  /* rows at 1e-17 in one column each: each squared distance about 1e-34 /
   * (a little), the bound d times more */
  memset(Y->data, 0, n * d * sizeof(float));
  for (size_t j = 0; j < d; j++) Y->data[(2 * j) * d + j] = 5e-18f;
  nle_test(nle__knn_check_range(ctx, Y, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "squared distances underflow"));
  /* the queries' rows count too: one far query among tame points */
  nle_matf *T = test_random_matf(n, d, 3), Q = {1, d, NULL};
  float far[100] = {0};
  far[99] = 1e35f;
  Q.data = far;
  nle_test_ok(nle__knn_check_range(ctx, T, NULL));
  nle_test(nle__knn_check_range(ctx, T, &Q) == NLE_ERR_VALUE && strstr(nle_ctx_error(ctx), "query point in row 1"));
  nle_matf_free(&T);
done:
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The graph stage's one rule between k and the perplexity, both ways. */
static void graph_k_perplexity_rule(void) {
  nle_test(nle_graph_k_for_perplexity(30, 0) == 90 && nle_graph_k_for_perplexity(30, 50) == 49);
  nle_test(nle_graph_k_for_perplexity(4.5, 0) == 14 && nle_graph_perplexity_for_k(12) == 4.0);
  nle_test(nle_graph_k_for_perplexity(1e12, 0) == INT_MAX);
}

/* Every automatic choice resolved and reported: no PCA on narrow data (the
 * exact graph, symmetric binary W), 50 components and max(k, 70) candidates
 * on wide data, the entropic perplexity k / 3; a refused component count. */
static void graph_build_resolves(void) {
  nle_ctx *ctx = test_ctx(5);
  nle_matf *Y = test_random_matf(600, 20, 3);
  nle_graph_result *g = NULL;
  nle_test_ok(nle_graph_build(ctx, Y, NULL, &g));
  nle_test(g && g->resolved.k == 10 && g->resolved.pca_dims == 0 && g->resolved.pca_candidates == 0);
  nle_test(g && g->resolved.method == NLE_KNN_EXACT && g->knn->nnz == 6000 && g->W && !g->projected);
  nle_csr *exact = NULL;
  nle_test_ok(nle_knn_graph(ctx, Y, 10, NLE_KNN_EXACT, NULL, &exact, NULL));
  nle_test(g && exact && !memcmp(g->knn->colind, exact->colind, 6000 * sizeof(int32_t)));
  nle_csr_free(&exact);
  nle_graph_result_free(&g);
  nle_graph_opts o;
  nle_graph_opts_init(&o);
  o.k = 12, o.weights = NLE_AFF_ENTROPIC, o.stop = NLE_GRAPH_WEIGHTS;
  nle_test_ok(nle_graph_build(ctx, Y, &o, &g));
  nle_test(g && g->resolved.perplexity == 4.0 && g->beta);
  nle_graph_result_free(&g);
  nle_matf_free(&Y);
  Y = test_random_matf(5100, 101, 4);
  nle_graph_opts_init(&o);
  o.stop = NLE_GRAPH_NEIGHBOURS, o.keep_projection = true;
  nle_test_ok(nle_graph_build(ctx, Y, &o, &g));
  nle_test(g && g->resolved.pca_dims == 50 && g->resolved.pca_candidates == 70 && g->projected && g->pca_mean &&
           g->candidate_reach && !g->W && g->pca_variance > 0 && g->pca_variance < 1);
  nle_graph_result_free(&g);
  o.k = 90, o.keep_projection = false, o.method = NLE_KNN_APPROX;
  nle_test_ok(nle_graph_build(ctx, Y, &o, &g));
  nle_test(g && g->resolved.pca_candidates == 90 && g->resolved.method == NLE_KNN_APPROX && !g->projected);
  nle_graph_result_free(&g);
  nle_matf_free(&Y);
  nle_dataset *ds = NULL;
  nle_test_ok(nle_dataset_read(ctx, "blobs:300:3:3", NULL, &ds));
  nle_graph_opts_init(&o);
  o.k = 3, o.components = NLE_COMPONENTS_ERROR;
  nle_test(ds && nle_graph_build(ctx, ds->X, &o, &g) == NLE_ERR_VALUE && !g);
  nle_test(strstr(nle_ctx_error(ctx), "connected components") != NULL);
  o.components = NLE_COMPONENTS_ALLOW;
  nle_test_ok(nle_graph_build(ctx, ds->X, &o, &g));
  nle_test(g && g->components > 1);
  nle_graph_result_free(&g);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

const nle_test_case neighbors_tests[] = {
    {"graph/k_perplexity_rule", graph_k_perplexity_rule},
    {"graph/build_resolves", graph_build_resolves},{"neighbors/knn_query_vs_naive", knn_query_vs_naive},
                                         {"neighbors/kdtree_vs_gemm", kdtree_vs_gemm},
                                         {"neighbors/from_distances", from_distances},
    {"neighbors/knn_scale_range", knn_scale_range},
    {"neighbors/range_bound_falls_back", range_bound_falls_back},
                                         {"neighbors/knn_rerank_queries_vs_naive", knn_rerank_queries_vs_naive},
                                         {"neighbors/knn_query_blocks_vs_naive", knn_query_blocks_vs_naive},
                                         {"neighbors/knn_rerank_vs_naive", knn_rerank_vs_naive},
                                         {"neighbors/approx_recall", approx_recall},
                                         {"neighbors/approx_deterministic", approx_deterministic},
                                         {"neighbors/approx_wide_path_same", approx_wide_path_same},
                                         {"neighbors/approx_edge_cases", approx_edge_cases},
                                         {"neighbors/knn_vs_naive", knn_vs_naive},
                                         {"neighbors/knn_threads_identical", knn_threads_identical},
                                         {"neighbors/knn_duplicates_and_errors", knn_duplicates_and_errors},
                                         {NULL, NULL}};
