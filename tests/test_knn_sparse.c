/* test_knn_sparse.c — kNN under the cosine and correlation metrics, dense
 * and sparse rows, against brute force in long double: every distance
 * computed from its definition (Euclidean |u - v|^2, cosine
 * |u/|u| - v/|v||^2, correlation the same of the centred rows), every row's
 * list compared up to ties. */
#include "harness.h"
#include "../src/core/internal.h"

#include <stdlib.h>
#include <string.h>

static const nle_metric row_metrics[] = {NLE_METRIC_EUCLIDEAN, NLE_METRIC_COSINE, NLE_METRIC_CORRELATION};

/* ---- test data ---------------------------------------------------------- */

/* A dense n x d matrix with about density * d non-zeros a row (uniform in
 * [-1, 1] when signed, else [0, 1]), as floats, with a few special rows:
 * 5 is a copy of 9, 20 is 21 with one entry nudged by 1e-6 relative, 30 is
 * 31 times 3, 40 is 41 with every entry offset by 1e-3 of its size (near
 * neighbours for every metric). */
static nle_matf *random_rows_opt(size_t n, size_t d, double density, bool sign, bool special, uint64_t seed) {
  nle_matf *Y = NULL;
  nle_ctx *ctx = test_ctx(seed);
  if (nle_matf_alloc(ctx, n, d, &Y)) exit(2);
  nle_ctx_free(&ctx);
  nle_rng r;
  nle_rng_init(&r, seed, 3);
  for (size_t i = 0; i < n; i++) {
    bool any = false;
    for (size_t j = 0; j < d; j++)
      if (nle_rng_uniform(&r) < density) {
        double u = nle_rng_uniform(&r);
        Y->data[i * d + j] = (float)(sign ? 2 * u - 1 : u + 0.01);
        any = true;
      }
    if (!any) Y->data[i * d + (i % d)] = 1.0f;
  }
  if (special && n > 41) {
    memcpy(Y->data + 5 * d, Y->data + 9 * d, d * sizeof(float));
    memcpy(Y->data + 20 * d, Y->data + 21 * d, d * sizeof(float));
    for (size_t j = 0; j < d; j++)
      if (Y->data[20 * d + j] != 0) {
        Y->data[20 * d + j] *= 1.000001f;
        break;
      }
    for (size_t j = 0; j < d; j++) Y->data[30 * d + j] = 3 * Y->data[31 * d + j];
    for (size_t j = 0; j < d; j++)
      if (Y->data[41 * d + j] != 0) Y->data[40 * d + j] = Y->data[41 * d + j] * 1.001f;
  }
  return Y;
}

static nle_matf *random_rows(size_t n, size_t d, double density, bool sign, uint64_t seed) {
  return random_rows_opt(n, d, density, sign, true, seed);
}

/* The same with the rows around `clusters` centres (each coordinate offset
 * by its centre's, normal with standard deviation 2): structure for the
 * approximate search, as real data has. */
static nle_matf *clustered_rows(size_t n, size_t d, double density, int clusters, uint64_t seed) {
  nle_matf *Y = random_rows_opt(n, d, density, true, false, seed);
  nle_rng r;
  nle_rng_init(&r, seed, 4);
  double *centre = malloc((size_t)clusters * d * sizeof *centre);
  for (size_t t = 0; t < (size_t)clusters * d; t++) centre[t] = 2 * nle_rng_normal(&r);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++) Y->data[i * d + j] += (float)centre[(i % (size_t)clusters) * d + j];
  free(centre);
  return Y;
}

/* Y's non-zeros as a CSR of the given value type (columns sorted). */
static nle_csr *to_csr(const nle_matf *Y, nle_dtype dtype) {
  nle_ctx *ctx = test_ctx(1);
  int64_t nnz = 0;
  for (size_t t = 0; t < Y->rows * Y->cols; t++) nnz += Y->data[t] != 0;
  nle_csr *X = NULL;
  if (nle_csr_alloc(ctx, (int64_t)Y->rows, (int64_t)Y->cols, nnz, dtype, &X)) exit(2);
  nle_ctx_free(&ctx);
  int64_t at = 0;
  for (size_t i = 0; i < Y->rows; i++) {
    for (size_t j = 0; j < Y->cols; j++) {
      float v = Y->data[i * Y->cols + j];
      if (v == 0) continue;
      X->colind[at] = (int32_t)j;
      if (dtype == NLE_F32) ((float *)X->val)[at] = v;
      else ((double *)X->val)[at] = v;
      at++;
    }
    X->rowptr[i + 1] = at;
  }
  return X;
}

/* Dense rows as the metric compares them, in long double. */
static long double *reference_rows(const nle_matf *Y, nle_metric metric) {
  size_t n = Y->rows, d = Y->cols;
  long double *R = malloc(n * d * sizeof *R);
  for (size_t i = 0; i < n; i++) {
    long double mean = 0, sq = 0;
    for (size_t j = 0; j < d; j++) mean += Y->data[i * d + j];
    mean = metric == NLE_METRIC_CORRELATION ? mean / (long double)d : 0;
    for (size_t j = 0; j < d; j++) sq += (Y->data[i * d + j] - mean) * (Y->data[i * d + j] - mean);
    long double scale = metric == NLE_METRIC_EUCLIDEAN ? 1 : 1 / sqrtl(sq);
    for (size_t j = 0; j < d; j++) R[i * d + j] = (Y->data[i * d + j] - mean) * scale;
  }
  return R;
}

static double ref_dist(const long double *A, size_t i, const long double *B, size_t r, size_t d) {
  long double s = 0;
  for (size_t j = 0; j < d; j++) s += (A[i * d + j] - B[r * d + j]) * (A[i * d + j] - B[r * d + j]);
  return (double)s;
}

typedef struct {
  double d;
  int i;
} ref_pair;

static int ref_cmp(const void *a, const void *b) {
  const ref_pair *x = a, *y = b;
  if (x->d != y->d) return x->d < y->d ? -1 : 1;
  return x->i - y->i;
}

/* The graph g (rows: Q's, columns: Y's; Q NULL: Y's own graph, no self)
 * against brute force: per row, the k values are the k smallest true
 * distances, and each listed neighbour's true distance is its value, both
 * within rel (relative) + abs; returns the fraction of entries whose index
 * is the brute force's exactly (ties by index). */
static double check_graph(const nle_matf *Y, const nle_matf *Q, nle_metric metric, const nle_csr *g, int k,
                          double rel, double abs_tol, const char *what) {
  size_t n = Y->rows, d = Y->cols, m = Q ? Q->rows : n;
  long double *A = reference_rows(Q ? Q : Y, metric), *B = Q ? reference_rows(Y, metric) : A;
  ref_pair *row = malloc(n * sizeof *row);
  int bad = 0;
  size_t same = 0;
  nle_test(g && g->rows == (int64_t)m && g->cols == (int64_t)n && g->nnz == (int64_t)m * k);
  for (size_t i = 0; g && i < m && bad < 3; i++) {
    size_t len = 0;
    for (size_t r = 0; r < n; r++)
      if (Q || r != i) row[len++] = (ref_pair){ref_dist(A, i, B, r, d), (int)r};
    qsort(row, len, sizeof *row, ref_cmp);
    for (int c = 0; c < k; c++) {
      int64_t q = g->rowptr[i] + c;
      int got = g->colind[q];
      double v = nle_csr_value(g, q), want = row[c].d, own = ref_dist(A, i, B, (size_t)got, d);
      bool ok = fabs(v - want) <= rel * want + abs_tol && fabs(v - own) <= rel * own + abs_tol &&
                (Q || got != (int)i) && (c == 0 || v >= nle_csr_value(g, q - 1));
      if (!ok && bad++ < 3)
        printf("  %s (%s) row %zu rank %d: got %d at %.9g (true %.9g), brute force %d at %.9g\n", what,
               nle_metric_name(metric), i, c, got, v, own, row[c].i, want);
      same += got == row[c].i;
    }
  }
  nle_test(bad == 0);
  free(row);
  if (B != A) free(B);
  free(A);
  return (double)same / (double)(m * (size_t)k);
}

/* ---- exact, sparse and dense --------------------------------------------- */

static void sparse_exact_vs_brute(void) {
  nle_ctx *ctx = test_ctx(1);
  /* 400 rows: the column lists make some rows touch most rows and others
   * few (the two paths), with and without negative values */
  for (int sign = 0; sign < 2; sign++) {
    nle_matf *Y = random_rows(400, 200, sign ? 0.03 : 0.015, sign, 7 + (uint64_t)sign);
    for (int d = 0; d < 2; d++) {
      /* a dense block of columns: rows that touch everything */
      if (d)
        for (size_t i = 1; i < 400; i += 7) Y->data[i * 200 + 199] = 0.5f;
      nle_csr *X32 = to_csr(Y, NLE_F32), *X64 = to_csr(Y, NLE_F64);
      for (size_t t = 0; t < 3; t++) {
        nle_csr *g = NULL, *g64 = NULL;
        nle_knn_method used = NLE_KNN_AUTO;
        nle_test_ok(nle_knn_sparse(ctx, X32, 8, row_metrics[t], NLE_KNN_EXACT, NULL, &g, &used));
        nle_test(used == NLE_KNN_EXACT);
        double same = check_graph(Y, NULL, row_metrics[t], g, 8, 3e-7, 1e-25, "sparse exact");
        nle_test(same > 0.99);
        /* the value type of X does not matter when the values are floats */
        nle_test_ok(nle_knn_sparse(ctx, X64, 8, row_metrics[t], NLE_KNN_EXACT, NULL, &g64, NULL));
        nle_test(g && g64 && !memcmp(g->colind, g64->colind, (size_t)g->nnz * 4) &&
                 !memcmp(g->val, g64->val, (size_t)g->nnz * 4));
        /* duplicates at 0, each the other's first */
        nle_test(g && g->colind[5 * 8] == 9 && nle_csr_value(g, 5 * 8) == 0.0 && g->colind[9 * 8] == 5);
        if (row_metrics[t] != NLE_METRIC_EUCLIDEAN) /* a row and its multiple */
          nle_test(g && g->colind[30 * 8] == 31 && nle_csr_value(g, 30 * 8) < 1e-14);
        /* symmetric values: row 20's nearest is 21 and back */
        nle_test(g && g->colind[20 * 8] == 21 && g->colind[21 * 8] == 20 &&
                 nle_csr_value(g, 20 * 8) == nle_csr_value(g, 21 * 8) && nle_csr_value(g, 20 * 8) > 0);
        nle_csr_free(&g);
        nle_csr_free(&g64);
      }
      nle_csr_free(&X32);
      nle_csr_free(&X64);
    }
    nle_matf_free(&Y);
  }
  nle_ctx_free(&ctx);
}

/* Dense rows under each metric, exact and approximate, and the sparse search
 * on the same rows finds the same lists (values to float rounding of the
 * dense unit rows). */
static void dense_metric_vs_brute(void) {
  nle_ctx *ctx = test_ctx(2);
  nle_matf *Y = clustered_rows(700, 40, 0.6, 12, 11);
  nle_csr *X = to_csr(Y, NLE_F32);
  for (size_t t = 0; t < 3; t++) {
    nle_csr *g = NULL, *a = NULL, *s = NULL;
    nle_knn_method used = NLE_KNN_AUTO;
    nle_test_ok(nle_knn_metric(ctx, Y, 7, row_metrics[t], NLE_KNN_EXACT, NULL, &g, &used));
    nle_test(used == NLE_KNN_EXACT);
    /* unit rows in float: about 1e-7 absolute */
    double same = check_graph(Y, NULL, row_metrics[t], g, 7, 1e-6, row_metrics[t] ? 1e-6 : 0, "dense exact");
    nle_test(same > 0.97);
    nle_test_ok(nle_knn_metric(ctx, Y, 7, row_metrics[t], NLE_KNN_APPROX, NULL, &a, &used));
    nle_test(used == NLE_KNN_APPROX);
    size_t hit = 0;
    for (int64_t i = 0; g && a && i < g->rows; i++)
      for (int c = 0; c < 7; c++)
        for (int e = 0; e < 7; e++) hit += g->colind[i * 7 + c] == a->colind[i * 7 + e];
    printf("  dense approx %s: recall %.4f\n", nle_metric_name(row_metrics[t]),
           g && a ? (double)hit / (double)g->nnz : 0);
    nle_test(g && a && (double)hit / (double)g->nnz > 0.9);
    nle_test_ok(nle_knn_sparse(ctx, X, 7, row_metrics[t], NLE_KNN_EXACT, NULL, &s, NULL));
    size_t agree = 0;
    for (int64_t q = 0; g && s && q < g->nnz; q++) agree += g->colind[q] == s->colind[q];
    nle_test(g && s && (double)agree / (double)g->nnz > 0.97);
    nle_csr_free(&g);
    nle_csr_free(&a);
    nle_csr_free(&s);
  }
  /* nle_metric_rows: unit rows, centred for correlation */
  nle_matf *U = NULL;
  nle_test_ok(nle_metric_rows(ctx, Y, NLE_METRIC_CORRELATION, &U));
  double mean = 0, sq = 0;
  for (size_t j = 0; U && j < 40; j++) {
    mean += U->data[3 * 40 + j];
    sq += (double)U->data[3 * 40 + j] * U->data[3 * 40 + j];
  }
  nle_test(fabs(mean) < 1e-5 && fabs(sq - 1) < 1e-5);
  nle_matf_free(&U);
  nle_test_ok(nle_metric_rows(ctx, Y, NLE_METRIC_EUCLIDEAN, &U));
  nle_test(U && !memcmp(U->data, Y->data, 700 * 40 * sizeof(float)));
  nle_matf_free(&U);
  nle_csr_free(&X);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

static void sparse_query_vs_brute(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_matf *Y = random_rows(500, 200, 0.03, true, 13), *Qm = random_rows(120, 200, 0.03, true, 14);
  memcpy(Qm->data + 3 * 200, Y->data + 77 * 200, 200 * sizeof(float)); /* query 3 is row 77 */
  memcpy(Qm->data + 4 * 200, Y->data + 5 * 200, 200 * sizeof(float));  /* query 4 is row 5 = row 9 */
  nle_csr *X = to_csr(Y, NLE_F64), *Q = to_csr(Qm, NLE_F32);
  for (size_t t = 0; t < 3; t++) {
    nle_csr *g = NULL;
    nle_test_ok(nle_knn_sparse_query(ctx, X, Q, 6, row_metrics[t], &g));
    check_graph(Y, Qm, row_metrics[t], g, 6, 3e-7, 1e-25, "sparse query");
    nle_test(g && g->colind[3 * 6] == 77 && nle_csr_value(g, 3 * 6) == 0.0);
    nle_test(g && g->colind[4 * 6] == 5 && g->colind[4 * 6 + 1] == 9 && nle_csr_value(g, 4 * 6 + 1) == 0.0);
    nle_csr_free(&g);
    /* the rows themselves as queries: the graph with each row's self first */
    nle_csr *self = NULL, *graph = NULL;
    nle_test_ok(nle_knn_sparse_query(ctx, X, X, 7, row_metrics[t], &self));
    nle_test_ok(nle_knn_sparse(ctx, X, 6, row_metrics[t], NLE_KNN_EXACT, NULL, &graph, NULL));
    int same = 1;
    for (int64_t i = 0; self && graph && i < 500; i++) {
      int off = self->colind[i * 7] == i ? 1 : 0; /* a duplicate may come first */
      if (!off && !(self->colind[i * 7 + 1] == i && nle_csr_value(self, i * 7) == 0.0)) same = 0;
      for (int c = 0, e = 0; c < 6; c++, e++) {
        if (self->colind[i * 7 + e] == i) e++;
        same &= self->colind[i * 7 + e] == graph->colind[i * 6 + c] &&
                nle_csr_value(self, i * 7 + e) == nle_csr_value(graph, i * 6 + c);
      }
    }
    nle_test(same);
    nle_csr_free(&self);
    nle_csr_free(&graph);
  }
  /* k = N is allowed for queries; no query rows gives an empty graph */
  nle_csr *g = NULL;
  nle_test_ok(nle_knn_sparse_query(ctx, X, Q, 500, NLE_METRIC_COSINE, &g));
  nle_test(g && g->nnz == 120 * 500);
  nle_csr_free(&g);
  nle_csr empty = {0, 200, 0, (int64_t[]){0}, NULL, NLE_F32, NULL};
  nle_test_ok(nle_knn_sparse_query(ctx, X, &empty, 3, NLE_METRIC_COSINE, &g));
  nle_test(g && g->rows == 0 && g->cols == 500);
  nle_csr_free(&g);
  nle_csr_free(&X);
  nle_csr_free(&Q);
  nle_matf_free(&Y);
  nle_matf_free(&Qm);
  nle_ctx_free(&ctx);
}

/* ---- approximate: tf-idf-like documents ----------------------------------- */

/* n documents over v terms from t topics: each token from the corpus-wide
 * Zipf law (exponent 1.1) or, half the time, from its topic's (the same law
 * over a rotated vocabulary); tf-idf weighted (1 + log tf) log((1 + n) /
 * (1 + df)) + 1, as scikit-learn's TfidfVectorizer(sublinear_tf=True). */
static nle_csr *tfidf_docs(int64_t n, int32_t v, int t, uint64_t seed) {
  double *cdf = malloc((size_t)v * sizeof *cdf), tot = 0;
  for (int32_t j = 0; j < v; j++) cdf[j] = tot += pow(j + 1.0, -1.1);
  for (int32_t j = 0; j < v; j++) cdf[j] /= tot;
  nle_rng r;
  nle_rng_init(&r, seed, 5);
  int32_t *count = calloc((size_t)v, sizeof *count), *df = calloc((size_t)v, sizeof *df);
  int64_t cap = n * 160, nnz = 0;
  int32_t *col = malloc((size_t)cap * sizeof *col);
  double *val = malloc((size_t)cap * sizeof *val);
  int64_t *ptr = calloc((size_t)n + 1, sizeof *ptr);
  for (int64_t i = 0; i < n; i++) {
    int topic = (int)nle_rng_below(&r, (uint64_t)t), len = 40 + (int)nle_rng_below(&r, 80);
    for (int s = 0; s < len; s++) {
      double u = nle_rng_uniform(&r);
      int32_t lo = 0, hi = v - 1;
      while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (cdf[mid] < u) lo = mid + 1;
        else hi = mid;
      }
      int32_t term = nle_rng_uniform(&r) < 0.5 ? lo : (int32_t)((lo + 1 + (int64_t)topic * v / t) % v);
      count[term]++;
    }
    for (int32_t j = 0; j < v; j++)
      if (count[j]) {
        col[nnz] = j;
        val[nnz++] = 1 + log(count[j]);
        df[j]++;
        count[j] = 0;
      }
    ptr[i + 1] = nnz;
  }
  nle_ctx *ctx = test_ctx(1);
  nle_csr *X = NULL;
  if (nle_csr_alloc(ctx, n, v, nnz, NLE_F32, &X)) exit(2);
  nle_ctx_free(&ctx);
  memcpy(X->rowptr, ptr, ((size_t)n + 1) * sizeof *ptr);
  memcpy(X->colind, col, (size_t)nnz * sizeof *col);
  for (int64_t q = 0; q < nnz; q++) ((float *)X->val)[q] = (float)(val[q] * (log((1.0 + n) / (1.0 + df[col[q]])) + 1));
  free(cdf);
  free(count);
  free(df);
  free(col);
  free(val);
  free(ptr);
  return X;
}

static double recall(const nle_csr *exact, const nle_csr *approx, int k) {
  size_t hit = 0;
  for (int64_t i = 0; i < exact->rows; i++)
    for (int c = 0; c < k; c++)
      for (int e = 0; e < k; e++) hit += exact->colind[i * k + c] == approx->colind[i * k + e];
  return (double)hit / (double)exact->nnz;
}

static void sparse_approx_recall(void) {
  nle_ctx *ctx = test_ctx(4);
  nle_ctx_set_threads(ctx, 2);
  nle_csr *X = tfidf_docs(3000, 5000, 30, 21);
  for (size_t t = 0; t < 3; t++) {
    nle_csr *e = NULL, *a = NULL;
    nle_test_ok(nle_knn_sparse(ctx, X, 10, row_metrics[t], NLE_KNN_EXACT, NULL, &e, NULL));
    nle_test_ok(nle_knn_sparse(ctx, X, 10, row_metrics[t], NLE_KNN_APPROX, NULL, &a, NULL));
    double rc = e && a ? recall(e, a, 10) : 0;
    printf("  %s: recall %.4f\n", nle_metric_name(row_metrics[t]), rc);
    nle_test(rc >= 0.9);
    /* an approximate list's values are its neighbours' exact distances */
    size_t same = 0, both = 0;
    for (int64_t q = 0; e && a && q < e->nnz; q++)
      if (e->colind[q] == a->colind[q]) both++, same += nle_csr_value(e, q) == nle_csr_value(a, q);
    nle_test(same == both && both > 0);
    nle_csr_free(&e);
    nle_csr_free(&a);
  }
  nle_csr_free(&X);
  nle_ctx_free(&ctx);
}

static void sparse_threads_identical(void) {
  nle_csr *X = tfidf_docs(1500, 3000, 20, 22);
  /* (exact duplicates under the approximate search: approx_duplicates_identical) */
  nle_matf *Y = random_rows_opt(1500, 60, 0.3, true, false, 23);
  for (size_t t = 0; t < 3; t++)
    for (int method = 0; method < NLE_KNN_COUNT; method++) {
      nle_csr *g[2] = {NULL, NULL}, *h[2] = {NULL, NULL};
      for (int th = 0; th < 2; th++) {
        nle_ctx *ctx = test_ctx(5);
        nle_ctx_set_threads(ctx, th + 1);
        nle_test_ok(nle_knn_sparse(ctx, X, 9, row_metrics[t], (nle_knn_method)method, NULL, &g[th], NULL));
        nle_test_ok(nle_knn_metric(ctx, Y, 9, row_metrics[t], (nle_knn_method)method, NULL, &h[th], NULL));
        nle_ctx_free(&ctx);
      }
      nle_test(g[0] && g[1] && !memcmp(g[0]->colind, g[1]->colind, (size_t)g[0]->nnz * 4) &&
               !memcmp(g[0]->val, g[1]->val, (size_t)g[0]->nnz * 4));
      nle_test(h[0] && h[1] && !memcmp(h[0]->colind, h[1]->colind, (size_t)h[0]->nnz * 4) &&
               !memcmp(h[0]->val, h[1]->val, (size_t)h[0]->nnz * 4));
      for (int th = 0; th < 2; th++) {
        nle_csr_free(&g[th]);
        nle_csr_free(&h[th]);
      }
    }
  nle_matf_free(&Y);
  nle_csr_free(&X);
}

/* Exact duplicates under the dense approximate search at 2 threads: the
 * NN-descent joins see their candidates in index order, so ties between a
 * pair's GEMM roundings fall the same way every run (they followed thread
 * timing before: 1 entry in 22,500 differed in about half the runs). */
static void approx_duplicates_identical(void) {
  nle_matf *Y = random_rows_opt(2500, 60, 0.3, true, false, 29), *U = NULL;
  for (size_t i = 0; i < 40; i++) /* 40 rows repeated elsewhere */
    memcpy(Y->data + (1000 + i * 30) * 60, Y->data + i * 60, 60 * sizeof(float));
  nle_csr *first = NULL;
  for (int run = 0; run < 6; run++) {
    nle_ctx *ctx = test_ctx(7);
    nle_ctx_set_threads(ctx, run == 0 ? 1 : 2);
    if (!U) nle_test_ok(nle_metric_rows(ctx, Y, NLE_METRIC_COSINE, &U));
    nle_csr *g = NULL;
    nle_test_ok(nle_knn_approx(ctx, U, &(nle_knn_approx_opts){.k = 9, .n_trees = NLE_AUTO, .leaf_size = NLE_AUTO,
                                                              .max_candidates = NLE_AUTO, .max_iters = NLE_AUTO,
                                                              .delta = 0.001},
                               &g));
    if (!first) first = g;
    else {
      nle_test(g && !memcmp(first->colind, g->colind, (size_t)g->nnz * 4) &&
               !memcmp(first->val, g->val, (size_t)g->nnz * 4));
      nle_csr_free(&g);
    }
    nle_ctx_free(&ctx);
  }
  nle_csr_free(&first);
  nle_matf_free(&U);
  nle_matf_free(&Y);
}

/* ---- refusals, names, the memory cap, cancellation ----------------------- */

static int cancel_at_once(void *user, const char *stage, double fraction) {
  (void)user, (void)stage, (void)fraction;
  return 1;
}

static void sparse_refusals(void) {
  nle_ctx *ctx = test_ctx(6);
  for (int m = 0; m < NLE_METRIC_COUNT; m++)
    nle_test(nle_metric_parse(nle_metric_name((nle_metric)m)) == m);
  nle_test(nle_metric_parse("cosine") == NLE_METRIC_COSINE && nle_metric_parse("Cosine") == -1 &&
           nle_metric_parse(NULL) == -1 && nle_metric_parse("auto") == -1);
  nle_test(!strcmp(nle_metric_name((nle_metric)99), "unknown"));

  nle_matf *Y = random_rows(50, 20, 0.3, true, 31);
  memset(Y->data + 16 * 20, 0, 20 * sizeof(float)); /* row 16 (0-based, as the readers count) all zeros */
  nle_csr *X = to_csr(Y, NLE_F32), *g = NULL;
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "row 16 of the data is all zeros: its cosine distance is undefined") && !g);
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_CORRELATION, NLE_KNN_APPROX, NULL, &g, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "row 16 of the data is all zeros: its correlation distance") && !g);
  nle_test(nle_knn_metric(ctx, Y, 3, NLE_METRIC_COSINE, NLE_KNN_AUTO, NULL, &g, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "row 16 of the data is all zeros") && !g);
  nle_test(nle_knn_sparse_query(ctx, X, X, 3, NLE_METRIC_COSINE, &g) == NLE_ERR_VALUE && !g);
  /* Euclidean takes a zero row: every other row at its squared norm */
  nle_test_ok(nle_knn_sparse(ctx, X, 3, NLE_METRIC_EUCLIDEAN, NLE_KNN_EXACT, NULL, &g, NULL));
  check_graph(Y, NULL, NLE_METRIC_EUCLIDEAN, g, 3, 3e-7, 0, "zero row");
  nle_csr_free(&g);
  /* a constant row: correlation undefined, cosine fine */
  for (int j = 0; j < 20; j++) Y->data[16 * 20 + j] = 2.5f;
  nle_csr_free(&X);
  X = to_csr(Y, NLE_F64);
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_CORRELATION, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "row 16 of the data is constant"));
  nle_test(nle_knn_metric(ctx, Y, 3, NLE_METRIC_CORRELATION, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "row 16 of the data is constant"));
  nle_test_ok(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL));
  nle_csr_free(&g);
  /* non-finite values, unsorted columns, bad k, metric and method */
  double *v = X->val;
  double keep = v[7];
  v[7] = NAN;
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "is nan"));
  v[7] = keep;
  int32_t c0 = X->colind[X->rowptr[2]];
  X->colind[X->rowptr[2]] = X->colind[X->rowptr[2] + 1];
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_ARG &&
           strstr(nle_ctx_error(ctx), "row 3 of the data"));
  X->colind[X->rowptr[2]] = c0;
  nle_test(nle_knn_sparse(ctx, X, 50, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_ARG);
  nle_test(nle_knn_sparse(ctx, X, 0, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_ARG);
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_PRECOMPUTED, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_ARG &&
           strstr(nle_ctx_error(ctx), "precomputed"));
  nle_test(nle_knn_metric(ctx, Y, 3, NLE_METRIC_AFFINITIES, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_ARG);
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, (nle_knn_method)7, NULL, &g, NULL) == NLE_ERR_ARG);
  nle_test(nle_knn_metric(ctx, Y, 3, NLE_METRIC_COSINE, (nle_knn_method)7, NULL, &g, NULL) == NLE_ERR_ARG);
  nle_csr narrow = *X;
  narrow.cols = 25;
  nle_test(nle_knn_sparse_query(ctx, X, &narrow, 3, NLE_METRIC_COSINE, &g) == NLE_ERR_ARG &&
           strstr(nle_ctx_error(ctx), "25 columns"));
  /* the memory cap and cancellation */
  nle_ctx_set_max_memory(ctx, 1000);
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_MEMCAP && !g);
  nle_ctx_set_max_memory(ctx, 0);
  nle_ctx_set_progress(ctx, cancel_at_once, NULL);
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL) == NLE_ERR_CANCELLED && !g);
  nle_test(nle_knn_sparse(ctx, X, 3, NLE_METRIC_COSINE, NLE_KNN_APPROX, NULL, &g, NULL) == NLE_ERR_CANCELLED && !g);
  nle_csr_free(&X);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* auto: exact for a small set, approximate for many documents, and what
 * ran is reported */
static void sparse_auto(void) {
  nle_ctx *ctx = test_ctx(7);
  nle_matf *Y = random_rows(300, 100, 0.05, false, 41);
  nle_csr *X = to_csr(Y, NLE_F32), *g = NULL;
  nle_knn_method used = NLE_KNN_AUTO;
  nle_test_ok(nle_knn_sparse(ctx, X, 5, NLE_METRIC_COSINE, NLE_KNN_AUTO, NULL, &g, &used));
  nle_test(used == NLE_KNN_EXACT);
  check_graph(Y, NULL, NLE_METRIC_COSINE, g, 5, 3e-7, 1e-25, "auto");
  nle_csr_free(&g);
  nle_csr_free(&X);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

#ifdef NLE_ALLOC_FAULTS
/* Every allocation of the sparse searches failing in turn: NLE_ERR_NOMEM
 * and nothing handed back, or the clean result. */
static void sparse_allocation_failures(void) {
  nle_ctx *ctx = test_ctx(8);
  nle_csr *X = tfidf_docs(300, 400, 5, 9);
  for (int w = 0; w < 3; w++) {
    nle_csr *clean = NULL;
    nle_status s0 = w == 0   ? nle_knn_sparse(ctx, X, 5, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &clean, NULL)
                    : w == 1 ? nle_knn_sparse(ctx, X, 5, NLE_METRIC_CORRELATION, NLE_KNN_APPROX, NULL, &clean, NULL)
                             : nle_knn_sparse_query(ctx, X, X, 5, NLE_METRIC_EUCLIDEAN, &clean);
    nle_test_ok(s0);
    long bad = 0, n = 1;
    for (;; n++) {
      nle_csr *g = NULL;
      nle__alloc_fail_at(n);
      nle_status s = w == 0   ? nle_knn_sparse(ctx, X, 5, NLE_METRIC_COSINE, NLE_KNN_EXACT, NULL, &g, NULL)
                     : w == 1 ? nle_knn_sparse(ctx, X, 5, NLE_METRIC_CORRELATION, NLE_KNN_APPROX, NULL, &g, NULL)
                              : nle_knn_sparse_query(ctx, X, X, 5, NLE_METRIC_EUCLIDEAN, &g);
      long reached = nle__alloc_count();
      nle__alloc_fail_at(0);
      bool same = g && clean && !memcmp(g->colind, clean->colind, (size_t)g->nnz * 4);
      if (reached < n) {
        nle_test(s == NLE_OK && same);
        nle_csr_free(&g);
        break;
      }
      if (!((s == NLE_ERR_NOMEM && !g) || (s == NLE_OK && same)) && bad++ < 3)
        printf("  workload %d, allocation %ld: status %d: %s\n", w, n, (int)s, nle_ctx_error(ctx));
      nle_csr_free(&g);
    }
    nle_test(bad == 0 && n > 5);
    nle_csr_free(&clean);
  }
  nle_csr_free(&X);
  nle_ctx_free(&ctx);
}
#endif

const nle_test_case knn_sparse_tests[] = {{"knn_sparse/exact_vs_brute", sparse_exact_vs_brute},
                                          {"knn_sparse/dense_metric_vs_brute", dense_metric_vs_brute},
                                          {"knn_sparse/query_vs_brute", sparse_query_vs_brute},
                                          {"knn_sparse/approx_recall", sparse_approx_recall},
                                          {"knn_sparse/threads_identical", sparse_threads_identical},
                                          {"knn_sparse/approx_duplicates_identical", approx_duplicates_identical},
                                          {"knn_sparse/refusals", sparse_refusals},
                                          {"knn_sparse/auto", sparse_auto},
#ifdef NLE_ALLOC_FAULTS
                                          {"knn_sparse/allocation_failures", sparse_allocation_failures},
#endif
                                          {NULL, NULL}};
