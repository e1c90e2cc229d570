/* knn_rerank.c — the k nearest among given candidates, by distances in the
 * full space: a neighbour search run in a reduced space (the first principal
 * components) finds a few more candidates than it needs, and their exact
 * distances in the input space pick the k kept. On Fashion-MNIST the 90
 * nearest among 50 principal components share 70% with the 90 nearest in the
 * 784 pixels; re-ranking the candidates gives the affinities the input's
 * distances and order, which is what kNN recall against the input measures. */
#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  float d;
  int32_t i;
} ranked;

static int ranked_cmp(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->d != y->d) return x->d < y->d ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

typedef struct {
  const nle_matf *Y;
  const nle_csr *cand;
  nle_csr *out;
  int k;
} rerank_job;

enum { RERANK_BLOCK = 128 };

/* In double, rounded once to float (as nle_knn_exact's), summed in SIMD
 * lanes: the last bit may differ from a sequential sum. */
static float sqdist_rows(const float *a, const float *b, size_t d) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (size_t t = 0; t < d; t++) {
    double u = (double)a[t] - (double)b[t];
    s += u * u;
  }
  return (float)s;
}

static int rerank_block(void *job, size_t b, void *scratch) {
  const rerank_job *j = job;
  const nle_csr *c = j->cand;
  size_t d = j->Y->cols, i1 = (b + 1) * RERANK_BLOCK < (size_t)c->rows ? (b + 1) * RERANK_BLOCK : (size_t)c->rows;
  ranked *row = scratch;
  float *val = j->out->val;
  for (size_t i = b * RERANK_BLOCK; i < i1; i++) {
    const float *yi = j->Y->data + i * d;
    int len = 0;
    for (int64_t q = c->rowptr[i]; q < c->rowptr[i + 1]; q++)
      row[len++] = (ranked){sqdist_rows(yi, j->Y->data + (size_t)c->colind[q] * d, d), c->colind[q]};
    qsort(row, (size_t)len, sizeof *row, ranked_cmp);
    size_t out = i * (size_t)j->k;
    for (int t = 0; t < j->k; t++) {
      j->out->colind[out + (size_t)t] = row[t].i;
      val[out + (size_t)t] = row[t].d;
    }
  }
  return 0;
}

nle_status nle_knn_rerank(nle_ctx *ctx, const nle_matf *Y, const nle_csr *candidates, int k, nle_csr **graph) {
  *graph = NULL;
  if (!Y || !candidates || candidates->rows != (int64_t)Y->rows || candidates->cols != (int64_t)Y->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: the candidates must be an N x N graph of the N points");
  if (k < 1) return nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: k = %d must be >= 1", k);
  int64_t n = candidates->rows, widest = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t len = candidates->rowptr[i + 1] - candidates->rowptr[i];
    if (len < k)
      return nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: point %lld has %lld candidates for k = %d",
                       (long long)i, (long long)len, k);
    widest = len > widest ? len : widest;
  }
  nle_status s = nle_csr_alloc(ctx, n, n, n * (int64_t)k, NLE_F32, graph);
  if (s) return s;
  for (int64_t i = 0; i <= n; i++) (*graph)->rowptr[i] = i * (int64_t)k;
  rerank_job job = {Y, candidates, *graph, k};
  s = nle__for_blocks(ctx, "kNN re-ranking", ((size_t)n + RERANK_BLOCK - 1) / RERANK_BLOCK,
                      nle__threads_for(ctx, (double)n * (double)widest * (double)Y->cols), (size_t)widest * sizeof(ranked),
                      rerank_block, &job);
  if (s) nle_csr_free(graph);
  return s;
}
