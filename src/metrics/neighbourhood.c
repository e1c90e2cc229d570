/* neighbourhood.c — neighbourhood-preservation scores of an embedding:
 * kNN recall, trustworthiness and continuity (Venna and Kaski 2001), with the
 * definitions and normalisation of scikit-learn's
 * sklearn.manifold.trustworthiness. Data-space distances use the GEMM form in
 * double (as scikit-learn's pairwise_distances does), embedding distances are
 * computed directly (as its tree-based NearestNeighbors does). */
#include "../core/internal.h"
#include "select.h"

#include <cblas.h>
#include <string.h>

enum { QUERY_BLOCK = 32 };

/* Squared distances from the b rows of Q (b x d, squared norms qnorm) to
 * all m rows of A. */
static void gemm_distances(const double *Q, const double *qnorm, size_t b, const double *A, const double *sqnorm,
                           size_t m, size_t d, double *out) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)b, (int)m, (int)d, -2.0, Q, (int)d, A, (int)d, 0.0,
              out, (int)m);
  for (size_t i = 0; i < b; i++)
    for (size_t j = 0; j < m; j++) {
      double v = out[i * m + j] + qnorm[i] + sqnorm[j];
      out[i * m + j] = v < 0.0 ? 0.0 : v;
    }
}

static void direct_distances(const double *A, size_t m, size_t d, const int64_t *rows, size_t b, double *out) {
  for (size_t i = 0; i < b; i++) {
    const double *a = A + (size_t)rows[i] * d;
    for (size_t j = 0; j < m; j++) {
      const double *c = A + j * d;
      double s = 0.0;
      for (size_t t = 0; t < d; t++) {
        double u = a[t] - c[t];
        s += u * u;
      }
      out[i * m + j] = s;
    }
  }
}

/* The k nearest of point `self` given its distance row, sorted. */
static void row_knn(const double *row, size_t m, size_t self, int k, nle__pair *heap) {
  nle__heap_init(heap, k);
  for (size_t j = 0; j < m; j++)
    if (j != self) nle__heap_offer(heap, k, (nle__pair){row[j], (int64_t)j});
  qsort(heap, (size_t)k, sizeof *heap, nle__pair_cmp);
}

static int contains(const nle__pair *set, int k, int64_t j) {
  for (int c = 0; c < k; c++)
    if (set[c].i == j) return 1;
  return 0;
}

/* Sum over j in `found` but not in `truth` of (rank of j in `row`) - k, the
 * rank being 1-based among the other points with ties broken by index. */
static double rank_excess(const double *row, size_t m, size_t self, int k, const nle__pair *found,
                          const nle__pair *truth) {
  double sum = 0.0;
  for (int c = 0; c < k; c++) {
    int64_t j = found[c].i;
    if (contains(truth, k, j)) continue;
    double dj = row[j];
    int64_t rank = 1;
    for (size_t t = 0; t < m; t++)
      if (t != self && (row[t] < dj || (row[t] == dj && (int64_t)t < j))) rank++;
    if (rank > k) sum += (double)(rank - k);
  }
  return sum;
}

typedef struct {
  double recall, trust, cont;
} scores;

typedef struct {
  const nle_matd *Y, *X; /* the reference points: data and embedding */
  const double *sqnorm;
  const int64_t *queries; /* rows of Y and X scored */
  size_t nq;
  int k;
  double *per_row; /* recall, trust excess, continuity excess per query */
} score_job;

/* Scores of one block of query points against every reference point;
 * scratch holds both distance blocks, the block's data rows and norms and
 * the two neighbour lists. */
static int score_block(void *job, size_t b, void *scratch) {
  const score_job *j = job;
  size_t m = j->Y->rows, D = j->Y->cols, d = j->X->cols, q0 = b * QUERY_BLOCK;
  size_t nb = j->nq - q0 < QUERY_BLOCK ? j->nq - q0 : QUERY_BLOCK;
  const int64_t *rows = j->queries + q0;
  int k = j->k;
  double *dy = scratch, *dx = dy + (size_t)QUERY_BLOCK * m, *qy = dx + (size_t)QUERY_BLOCK * m;
  double *qnorm = qy + (size_t)QUERY_BLOCK * D;
  nle__pair *ny = (nle__pair *)(qnorm + QUERY_BLOCK), *nx = ny + k;
  for (size_t q = 0; q < nb; q++) {
    memcpy(qy + q * D, j->Y->data + (size_t)rows[q] * D, D * sizeof(double));
    qnorm[q] = j->sqnorm[rows[q]];
  }
  gemm_distances(qy, qnorm, nb, j->Y->data, j->sqnorm, m, D, dy);
  direct_distances(j->X->data, m, d, rows, nb, dx);
  for (size_t q = 0; q < nb; q++) {
    size_t i = (size_t)rows[q];
    const double *rowy = dy + q * m, *rowx = dx + q * m;
    row_knn(rowy, m, i, k, ny);
    row_knn(rowx, m, i, k, nx);
    int common = 0;
    for (int c = 0; c < k; c++) common += contains(ny, k, nx[c].i);
    double *out = j->per_row + 3 * (q0 + q);
    out[0] = (double)common / k;
    out[1] = rank_excess(rowy, m, i, k, nx, ny);
    out[2] = rank_excess(rowx, m, i, k, ny, nx);
  }
  return 0;
}

/* Y: data (m x D), X: embedding (m x d), both double; the scores of the nq
 * query rows (NULL: all m), each point's neighbours and ranks taken among
 * all m. Trustworthiness's normalisation is the full set's, so the mean over
 * a random subset of queries estimates the m-point score without bias. */
static nle_status neighbourhood_scores(nle_ctx *ctx, const nle_matd *Y, const nle_matd *X, const int64_t *queries,
                                       size_t nq, int k, scores *out) {
  size_t m = Y->rows, D = Y->cols, d = X->cols;
  nle_status s = nle__check_memory(ctx, (double)nle_ctx_threads(ctx) * QUERY_BLOCK * ((double)m * 16 + (double)D * 8) +
                                            (double)m * 16 + (double)nq * 24, "neighbourhood scores");
  if (s) return s;
  double *sqnorm = nle__malloc(ctx, m * sizeof(double), "squared norms");
  double *per_row = nle__calloc(ctx, 3 * nq, sizeof(double), "per-point scores");
  int64_t *all = queries ? NULL : nle__malloc(ctx, m * sizeof(int64_t), "query rows");
  if (!sqnorm || !per_row || (!queries && !all)) {
    free(sqnorm);
    free(per_row);
    free(all);
    return NLE_ERR_NOMEM;
  }
  if (!queries) {
    for (size_t i = 0; i < m; i++) all[i] = (int64_t)i;
    queries = all;
  }
  for (size_t i = 0; i < m; i++) sqnorm[i] = cblas_ddot((int)D, Y->data + i * D, 1, Y->data + i * D, 1);
  score_job job = {Y, X, sqnorm, queries, nq, k, per_row};
  size_t nblocks = (nq + QUERY_BLOCK - 1) / QUERY_BLOCK;
  int threads = nle__threads_for(ctx, (double)nq * (double)m * (double)(D + d));
  s = nle__for_blocks(ctx, "neighbourhood scores", nblocks, threads,
                      (2 * (size_t)QUERY_BLOCK * m + (size_t)QUERY_BLOCK * (D + 1)) * sizeof(double) +
                          2 * (size_t)k * sizeof(nle__pair),
                      score_block, &job);
  free(sqnorm);
  free(all);
  if (s) {
    free(per_row);
    return s;
  }
  /* Summed in query order, so the result does not depend on the threads. */
  double recall = 0.0, t = 0.0, c = 0.0;
  for (size_t i = 0; i < nq; i++) {
    recall += per_row[3 * i];
    t += per_row[3 * i + 1];
    c += per_row[3 * i + 2];
  }
  free(per_row);
  double nn = (double)m, kk = (double)k, norm = 2.0 / ((double)nq * kk * (2.0 * nn - 3.0 * kk - 1.0));
  out->recall = recall / (double)nq;
  out->trust = 1.0 - t * norm;
  out->cont = 1.0 - c * norm;
  return NLE_OK;
}

static nle_status check_k(nle_ctx *ctx, size_t m, int k) {
  if (k < 1 || 2.0 * k >= (double)m)
    return nle__fail(ctx, NLE_ERR_ARG,
                     "neighbourhood size {@neighbors=%d} must be at least 1 and below half the %zu points used", k, m);
  return NLE_OK;
}

nle_status nle_trustworthiness(nle_ctx *ctx, const nle_matd *Y, const nle_matd *X, int k, double *out) {
  if (Y->rows != X->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "trustworthiness: %zu data points but %zu embedded", Y->rows, X->rows);
  nle_status s = check_k(ctx, Y->rows, k);
  if (s) return s;
  scores sc;
  s = neighbourhood_scores(ctx, Y, X, NULL, Y->rows, k, &sc);
  if (!s) *out = sc.trust;
  return s;
}

void nle_metrics_opts_init(nle_metrics_opts *o) {
  o->k = 10;
  o->subsample = 10000;
  o->within_subsample = false;
  o->cv_folds = 5;
  o->cv_k = 10;
}

void nle_metrics_free(nle_metrics **m) {
  if (!m || !*m) return;
  free((*m)->subsample_idx);
  free(*m);
  *m = NULL;
}

/* Stream of the metrics subsample: fixed, so that every method evaluated
 * with the same seed is scored on the same points. */
#define SUBSAMPLE_STREAM 0x6d6574726963ULL

nle_status nle_metrics_compute(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X, const int32_t *labels,
                               const nle_metrics_opts *opts, nle_metrics **out) {
  *out = NULL;
  nle_metrics_opts defaults;
  if (!opts) {
    nle_metrics_opts_init(&defaults);
    opts = &defaults;
  }
  if (Y->rows != X->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "metrics: %zu data points but %zu embedded points", Y->rows, X->rows);
  size_t n = Y->rows;
  size_t m = (opts->subsample <= 0 || (size_t)opts->subsample >= n) ? n : (size_t)opts->subsample;
  int within = opts->within_subsample && m < n;
  nle_status s = check_k(ctx, within ? m : n, opts->k);
  if (s) return s;
  nle_metrics *r = nle__calloc(ctx, 1, sizeof *r, "metrics");
  if (!r) return NLE_ERR_NOMEM;
  r->n = (int64_t)n;
  r->subsample_n = (int64_t)m;
  r->k = opts->k;
  r->knn_accuracy = NAN;
  r->subsample_idx = nle__malloc(ctx, m * sizeof(int64_t), "the subsample");
  /* The data in double (all of it, or the subsample's rows when the scores
   * stay within it); the embedding likewise. */
  size_t rows = within ? m : n;
  nle_matd *ys = NULL, *xs = NULL;
  if (!r->subsample_idx) s = NLE_ERR_NOMEM;
  if (!s) {
    nle_rng rng;
    nle_rng_init(&rng, nle_ctx_seed(ctx), SUBSAMPLE_STREAM);
    nle_rng_sample(&rng, (int64_t)n, (int64_t)m, r->subsample_idx);
    s = nle_matd_alloc(ctx, rows, Y->cols, &ys);
  }
  if (!s) {
    for (size_t i = 0; i < rows; i++) {
      size_t src = within ? (size_t)r->subsample_idx[i] : i;
      for (size_t j = 0; j < Y->cols; j++) ys->data[i * Y->cols + j] = Y->data[src * Y->cols + j];
    }
    s = within ? nle_matd_select_rows(ctx, X, r->subsample_idx, m, &xs) : NLE_OK;
  }
  if (!s) {
    scores sc;
    s = within ? neighbourhood_scores(ctx, ys, xs, NULL, m, opts->k, &sc)
               : neighbourhood_scores(ctx, ys, X, m < n ? r->subsample_idx : NULL, m, opts->k, &sc);
    r->recall = sc.recall;
    r->trustworthiness = sc.trust;
    r->continuity = sc.cont;
  }
  nle_matd_free(&ys);
  nle_matd_free(&xs);
  if (!s && labels) s = nle_knn_accuracy_cv(ctx, X, labels, opts->cv_k, opts->cv_folds, &r->knn_accuracy);
  if (s) {
    nle_metrics_free(&r);
    return s;
  }
  *out = r;
  return NLE_OK;
}

nle_status nle_knn_recall(nle_ctx *ctx, const nle_csr *approx, const nle_csr *exact, double *out) {
  if (approx->rows != exact->rows || exact->rows == 0)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN recall: graphs of %lld and %lld rows", (long long)approx->rows,
                     (long long)exact->rows);
  double total = 0.0;
  for (int64_t i = 0; i < exact->rows; i++) {
    int64_t hit = 0, want = exact->rowptr[i + 1] - exact->rowptr[i];
    for (int64_t a = exact->rowptr[i]; a < exact->rowptr[i + 1]; a++)
      for (int64_t b = approx->rowptr[i]; b < approx->rowptr[i + 1]; b++)
        if (approx->colind[b] == exact->colind[a]) {
          hit++;
          break;
        }
    total += want ? (double)hit / (double)want : 1.0;
  }
  *out = total / (double)exact->rows;
  return NLE_OK;
}
