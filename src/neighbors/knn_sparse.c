/* knn_sparse.c — k nearest neighbours of sparse rows (CSR: text as tf-idf,
 * single-cell counts) under the Euclidean, cosine and correlation distances,
 * never densified.
 *
 * Every metric is one expansion. With w the rows as the metric scales them
 * (Euclidean: as they are; cosine: divided by their norm; correlation:
 * divided by the norm of the centred row, whose mean mu over all D columns
 * counts the implicit zeros) and m = mu / |u - mu| (correlation, else 0):
 *
 *     d(i, r) = a_i + a_r - 2 w_i.w_r + 2 D m_i m_r
 *
 * with a = |w|^2 (Euclidean) or 1: |u - v|^2, 2 (1 - cos) and 2 (1 - r),
 * since (u - mu_u).(v - mu_v) = u.v - D mu_u mu_v. The dot products are
 * sums over the columns two rows share, in double, added in increasing column
 * order by every path (the exact search's column lists, the re-ranking's
 * scattered row), so a pair's value does not depend on the path that
 * computed it.
 *
 * Accuracy. The expansion errs by at most about (nnz_i + nnz_r + 8) 2^-52 S
 * with S = |w_i|^2 + |w_r|^2 + 2 D |m_i m_r| (the dot product's rounding,
 * bounded by |w_i||w_r|, and the few roundings of the norms). Where the
 * value is below 16 times that bound over single precision's unit
 * (d < (nnz_i + nnz_r + 8) 2^-24 S: near-duplicates, cancellation), it is
 * recomputed directly as sum (x_j - y_j)^2 over the union of the two rows'
 * columns (plus the shared implicit zeros' (m_i - m_r)^2 for correlation),
 * which has no cancellation; elsewhere its relative error is below 2^-28.
 * Each distance is therefore within about an ulp of the float-rounded true
 * value, exact duplicates are at 0, and distances are symmetric bit for
 * bit. The lists are sorted by the float value, ties by index, as the dense
 * searches' are.
 *
 *
 * The two searches are knn_sparse_exact.c and knn_sparse_approx.c, on the
 * column lists and walk order of knn_sparse_base.c; here the rows as the
 * metric compares them and the choice between the searches. docs/knn.md has
 * the measurements. */
#include "knn_sparse.h"

#include <float.h>
#include <string.h>

static void sp_rows_free(sp_rows *R) {
  free(R->w);
  free(R->a);
  free(R->q);
  free(R->m);
  memset(R, 0, sizeof *R);
}

/* The scaled rows of X (`name` names it in errors: "the data", "the queries"):
 * columns strictly increasing within rows, values finite, rows that the
 * metric cannot scale refused by number (1-based, as the readers count). */
static nle_status sp_rows_prepare(nle_ctx *ctx, const nle_csr *X, nle_metric metric, const char *name, sp_rows *R) {
  memset(R, 0, sizeof *R);
  if (!X) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN: %s is NULL", name);
  nle_status s = nle_csr_validate(ctx, X);
  if (s) return s;
  if (X->cols < 1) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN: %s has no columns", name);
  if (X->rows > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "kNN supports at most 2^31 - 1 points");
  int64_t n = X->rows;
  const char *mname = nle_metric_name(metric);
  for (int64_t i = 0; i < n; i++) {
    for (int64_t p = X->rowptr[i]; p < X->rowptr[i + 1]; p++) {
      if (p > X->rowptr[i] && X->colind[p] <= X->colind[p - 1])
        return nle__fail(ctx, NLE_ERR_ARG,
                         "sparse kNN: row %lld of %s has column %d after column %d: columns must be sorted and "
                         "unrepeated within rows (scipy: X.sum_duplicates())",
                         (long long)i + 1, name, X->colind[p] + 1, X->colind[p - 1] + 1);
      double v = nle_csr_value(X, p);
      if (!isfinite(v))
        return nle__fail(ctx, NLE_ERR_VALUE, "sparse kNN: row %lld, column %d of %s is %g: the %s distance needs "
                         "finite values", (long long)i, X->colind[p], name, v, mname);
    }
  }
  s = nle__check_memory(ctx, (double)X->nnz * 8 + (double)n * 24, "the scaled sparse rows");
  if (s) return s;
  R->metric = metric;
  R->n = n;
  R->d = X->cols;
  R->rowptr = X->rowptr;
  R->colind = X->colind;
  R->w = nle__malloc(ctx, (size_t)(X->nnz ? X->nnz : 1) * sizeof(double), "the scaled sparse rows");
  R->a = nle__malloc(ctx, (size_t)n * sizeof(double) + 1, "the rows' norms");
  R->q = nle__malloc(ctx, (size_t)n * sizeof(double) + 1, "the rows' norms");
  if (metric == NLE_METRIC_CORRELATION) R->m = nle__malloc(ctx, (size_t)n * sizeof(double) + 1, "the rows' means");
  if (!R->w || !R->a || !R->q || (metric == NLE_METRIC_CORRELATION && !R->m)) {
    sp_rows_free(R);
    return NLE_ERR_NOMEM;
  }
  R->dm = metric == NLE_METRIC_CORRELATION ? (double)X->cols : 0.0;
  for (int64_t i = 0; i < n && !s; i++) {
    int64_t p0 = X->rowptr[i], p1 = X->rowptr[i + 1];
    double sum = 0.0, sq = 0.0;
    for (int64_t p = p0; p < p1; p++) {
      double v = nle_csr_value(X, p);
      sum += v;
      sq += v * v;
    }
    double mean = 0.0, scale = 1.0;
    if (metric == NLE_METRIC_CORRELATION) {
      mean = sum / (double)X->cols;
      sq = 0.0;
      for (int64_t p = p0; p < p1; p++) sq += (nle_csr_value(X, p) - mean) * (nle_csr_value(X, p) - mean);
      sq += (double)(X->cols - (p1 - p0)) * (mean * mean);
    }
    if (metric != NLE_METRIC_EUCLIDEAN) {
      if (!(sq > 0.0)) {
        bool zero = true;
        for (int64_t p = p0; p < p1 && zero; p++) zero = nle_csr_value(X, p) == 0.0;
        s = zero ? nle__fail(ctx, NLE_ERR_VALUE, "row %lld of %s is all zeros: its %s distance is undefined",
                             (long long)i, name, mname)
                 : nle__fail(ctx, NLE_ERR_VALUE, "row %lld of %s is constant: its correlation distance is undefined",
                             (long long)i, name);
        break;
      }
      scale = sqrt(sq);
    }
    double q = 0.0;
    for (int64_t p = p0; p < p1; p++) {
      double w = metric == NLE_METRIC_EUCLIDEAN ? nle_csr_value(X, p) : nle_csr_value(X, p) / scale;
      R->w[p] = w;
      q += w * w;
    }
    R->q[i] = q;
    R->a[i] = metric == NLE_METRIC_EUCLIDEAN ? q : 1.0;
    if (R->m) R->m[i] = mean / scale;
    R->q_max = fmax(R->q_max, q);
    if (R->m) R->m_max = fmax(R->m_max, fabs(R->m[i]));
    if (p1 - p0 > R->nnz_max) R->nnz_max = p1 - p0;
  }
  /* Euclidean distances are stored in single precision: as the dense
   * searches, refuse data whose squared distances overflow or underflow. */
  if (!s && metric == NLE_METRIC_EUCLIDEAN && !nle__knn_range_ok(R->q_max)) {
    if (R->q_max > FLT_MAX / 4) {
      int64_t at = 0;
      for (int64_t i = 0; i < n; i++)
        if (R->q[i] == R->q_max) at = i;
      s = nle__fail(ctx, NLE_ERR_VALUE,
                    "row %lld of %s has norm %.3g: squared distances overflow single precision (3.4e38); scale the "
                    "data down", (long long)at, name, sqrt(R->q_max));
    } else {
      s = nle__fail(ctx, NLE_ERR_VALUE,
                    "every row of %s has norm below %.3g: squared distances underflow single precision; scale the "
                    "data up", name, sqrt(R->q_max));
    }
  }
  if (s) sp_rows_free(R);
  return s;
}

/* ---- the choice and the front doors ------------------------------------- */

/* Whether the exact search is expected to be faster. Its cost is its
 * multiply-adds W (the sum over columns of their squared counts: a column in
 * most rows costs N^2) plus a scan of the N^2 pairs; the approximate
 * search's grows as N nnz_avg (projection, re-ranking and joins), a little
 * faster than linearly in N (the joins' passes) and with k. Seconds on this
 * project's 2-core machine, fitted to bench/knn_cosine.sh (tf-idf documents,
 * k = 10: about even at 20,000 x 20,000, exact 3.2 times slower at 100,000 x
 * 50,000); only their ratio matters. */
static nle_status sparse_exact_is_faster(nle_ctx *ctx, const sp_rows *R, int k, bool *faster) {
  double n = (double)R->n, nnz_avg = (double)R->rowptr[R->n] / (n > 0 ? n : 1.0), work = 0.0;
  nle_status s = nle__sp_exact_work(ctx, R, R, &work);
  double exact = 6.5e-10 * work + 5e-10 * n * n;
  double approx = 1e-6 * n * (nnz_avg + 4.0) * pow(n / 2e4, 0.4) * (0.5 + k / 20.0);
  *faster = exact < approx;
  return s;
}

static nle_status check_k(nle_ctx *ctx, int64_t n, int k) {
  if (n < 2) return nle__fail(ctx, NLE_ERR_ARG, "kNN needs at least 2 points, got %lld", (long long)n);
  if (k < 1 || k >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and below the number of points N = %lld", k,
                     (long long)n);
  return NLE_OK;
}

nle_status nle_knn_sparse(nle_ctx *ctx, const nle_csr *X, int k, nle_metric metric, nle_knn_method method,
                          const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used) {
  *graph = NULL;
  nle_status s = nle__metric_check(ctx, metric, "sparse kNN");
  if (s) return s;
  if (method != NLE_KNN_AUTO && method != NLE_KNN_EXACT && method != NLE_KNN_APPROX)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN graph: method %d is not auto, exact or approx", (int)method);
  if (!X) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN: X is NULL");
  s = check_k(ctx, X->rows, k);
  if (s) return s;
  if (method == NLE_KNN_APPROX && k > 1024)
    return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN supports k <= 1024, not {@neighbors=%d} (the exact search takes any k)", k);
  sp_rows R;
  s = sp_rows_prepare(ctx, X, metric, "the data", &R);
  if (s) return s;
  if (method == NLE_KNN_AUTO) {
    bool faster = true;
    if (k <= 1024) s = sparse_exact_is_faster(ctx, &R, k, &faster);
    method = faster ? NLE_KNN_EXACT : NLE_KNN_APPROX;
  }
  if (used) *used = method;
  if (!s)
    s = method == NLE_KNN_EXACT ? nle__sp_exact(ctx, &R, &R, 1, k, graph) : nle__sp_approx(ctx, &R, k, approx, graph);
  sp_rows_free(&R);
  return s;
}

nle_status nle_knn_sparse_query(nle_ctx *ctx, const nle_csr *X, const nle_csr *Q, int k, nle_metric metric,
                                nle_csr **graph) {
  *graph = NULL;
  nle_status s = nle__metric_check(ctx, metric, "sparse kNN query");
  if (s) return s;
  if (!X || !Q) return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN query: X or Q is NULL");
  if (Q->cols != X->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "sparse kNN query: %lld columns for reference rows of %lld", (long long)Q->cols,
                     (long long)X->cols);
  if (k < 1 || k > X->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and at most the N = %lld reference points", k,
                     (long long)X->rows);
  sp_rows R, Qr;
  s = sp_rows_prepare(ctx, X, metric, "the data", &R);
  if (s) return s;
  s = sp_rows_prepare(ctx, Q, metric, "the queries", &Qr);
  if (!s && metric == NLE_METRIC_CORRELATION) Qr.dm = R.dm;
  if (!s) s = Q->rows ? nle__sp_exact(ctx, &R, &Qr, 0, k, graph) : nle_csr_alloc(ctx, 0, X->rows, 0, NLE_F32, graph);
  sp_rows_free(&Qr);
  sp_rows_free(&R);
  return s;
}
