/* landmarks.c — where Locally Linear Landmarks puts its landmarks
 * (dissertation sec. 4.4, "Location of the landmarks"; SPEC G07-5). The
 * dissertation keeps every landmark a data point ("we avoid dealing with
 * landmarks that are not part of the dataset"), so k-means centres are
 * snapped to their nearest points. */
#include "method.h"
#include "spectral_internal.h"

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

NLE__ENUM_NAMES(nle_landmark_method_name, nle_landmark_method_parse, nle_landmark_method, NLE_LANDMARK_METHOD_MAP, NLE_LANDMARKS_COUNT, false)

/* Lloyd iterations for the k-means landmarks: landmarks need to cover the
 * data, not a converged clustering, and each iteration costs N L D. */
enum { KMEANS_ITERS = 20, THIN_NEIGHBOURS = 8 };

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static int cmp_pair(const void *a, const void *b) {
  nle__pair x = *(const nle__pair *)a, y = *(const nle__pair *)b;
  return nle__pair_greater(x, y) - nle__pair_greater(y, x);
}

/* m distinct points at random, ascending. */
static nle_status random_points(nle_ctx *ctx, nle_rng *rng, size_t n, size_t m, int32_t *out) {
  int64_t *tmp = nle__malloc(ctx, m * sizeof(int64_t), "the landmarks");
  if (!tmp) return NLE_ERR_NOMEM;
  nle_rng_sample(rng, (int64_t)n, (int64_t)m, tmp);
  for (size_t i = 0; i < m; i++) out[i] = (int32_t)tmp[i];
  free(tmp);
  return NLE_OK;
}

static double sqdist_f(const float *a, const float *b, size_t D) {
  double s = 0.0;
  for (size_t t = 0; t < D; t++) {
    double e = (double)a[t] - (double)b[t];
    s += e * e;
  }
  return s;
}

nle_status nle__rows_at(nle_ctx *ctx, const nle_matf *Y, const int32_t *idx, size_t m, nle_matf **out) {
  *out = NULL;
  size_t D = Y->cols, row = D * sizeof(float);
  if (!nle__distributed(ctx)) {
    nle_status s = nle_matf_alloc(ctx, m, D, out);
    for (size_t i = 0; !s && i < m; i++) memcpy((*out)->data + i * D, Y->data + (size_t)idx[i] * D, row);
    return s;
  }
  /* each rank's rows among them in idx's order, gathered in rank order,
   * then dealt back into idx's order */
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, Y->rows, "the landmarks' rows", &rows);
  if (s) return s;
  int ranks = nle__ranks(ctx);
  size_t mine = 0;
  for (size_t i = 0; i < m; i++) mine += (size_t)idx[i] >= rows.mine.begin && (size_t)idx[i] < rows.mine.end;
  float *pack = nle__malloc(ctx, mine * row + 1, "the landmarks' rows");
  char *all = nle__malloc(ctx, m * row + 1, "the landmarks' rows");
  size_t *at = nle__malloc(ctx, ((size_t)ranks + 1) * sizeof(size_t), "the landmarks' rows");
  s = pack && all && at ? nle_matf_alloc(ctx, m, D, out) : NLE_ERR_NOMEM;
  size_t packed = 0;
  for (size_t i = 0; !s && i < m; i++)
    if ((size_t)idx[i] >= rows.mine.begin && (size_t)idx[i] < rows.mine.end)
      memcpy(pack + packed++ * D, Y->data + ((size_t)idx[i] - rows.mine.begin) * D, row);
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, pack, mine * row, all, at);
  for (size_t i = 0; !s && i < m; i++) {
    int r = nle__rank_of_row(rows.n, ranks, (size_t)idx[i]);
    memcpy((*out)->data + i * D, all + at[r], row);
    at[r] += row;
  }
  free(pack), free(all), free(at);
  if (s) nle_matf_free(out);
  return s;
}

/* L + M random points, then the M closest disjoint pairs (from each
 * candidate's few nearest candidates, pairs in ascending distance), the
 * later point of each pair dropped. */
static nle_status thinned(nle_ctx *ctx, const nle_matf *Y, size_t n, size_t L, nle_rng *rng, int32_t *idx) {
  size_t M = L / 10 > 0 ? L / 10 : 1;
  if (L + M > n) M = n - L;
  size_t c = L + M;
  int32_t *cand = nle__malloc(ctx, c * sizeof(int32_t), "the landmark candidates");
  bool *gone = nle__calloc(ctx, c, sizeof(bool), "the landmark candidates");
  nle_matf *C = NULL;
  nle_csr *G = NULL;
  nle__pair *pairs = NULL;
  nle_status s = cand && gone ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = random_points(ctx, rng, n, c, cand);
  if (!s && M > 0) {
    s = nle__rows_at(ctx, Y, cand, c, &C);
    int k = c - 1 < THIN_NEIGHBOURS ? (int)c - 1 : THIN_NEIGHBOURS;
    nle_knn_opts ko = {k};
    int ranks = nle__alone_begin(ctx); /* the candidates, alike on every rank */
    if (!s) s = nle_knn_exact(ctx, C, &ko, &G);
    nle__alone_end(ctx, ranks);
    if (!s && !(pairs = nle__malloc(ctx, (size_t)G->nnz * sizeof *pairs, "the closest pairs"))) s = NLE_ERR_NOMEM;
    size_t np = 0;
    for (int64_t i = 0; !s && i < G->rows; i++)
      for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1]; q++)
        if (G->colind[q] > i) pairs[np++] = (nle__pair){nle_csr_value(G, q), i * (int64_t)c + G->colind[q]};
    if (!s) qsort(pairs, np, sizeof *pairs, cmp_pair);
    size_t dropped = 0;
    for (size_t p = 0; !s && p < np && dropped < M; p++) {
      size_t a = (size_t)(pairs[p].i / (int64_t)c), b = (size_t)(pairs[p].i % (int64_t)c);
      if (gone[a] || gone[b]) continue;
      gone[b] = true, dropped++;
    }
    /* fewer disjoint pairs among the listed neighbours than M: the last
     * candidates go (random already) */
    for (size_t i = c; !s && dropped < M && i-- > 0;)
      if (!gone[i]) gone[i] = true, dropped++;
  }
  size_t kept = 0;
  for (size_t i = 0; !s && i < c; i++)
    if (!gone[i]) idx[kept++] = cand[i];
  free(cand), free(gone), free(pairs);
  nle_matf_free(&C);
  nle_csr_free(&G);
  return s;
}

/* k-means (k-means++ seeds, KMEANS_ITERS Lloyd iterations), each centre
 * snapped to its nearest data point not already taken. */
static nle_status kmeans_points(nle_ctx *ctx, const nle_matf *Y, size_t L, int32_t *idx) {
  size_t n = Y->rows, D = Y->cols;
  nle_matd *X = NULL;
  nle_matf *Cf = NULL;
  nle_csr *G = NULL;
  int32_t *lab = nle__malloc(ctx, n * sizeof(int32_t), "the k-means landmarks");
  double *sum = nle__calloc(ctx, L * D, sizeof(double), "the k-means landmarks");
  double *cnt = nle__calloc(ctx, L, sizeof(double), "the k-means landmarks");
  bool *taken = nle__calloc(ctx, n, sizeof(bool), "the k-means landmarks");
  nle_status s = lab && sum && cnt && taken ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle_matd_alloc(ctx, n, D, &X);
  for (size_t i = 0; !s && i < n * D; i++) X->data[i] = Y->data[i];
  if (!s) s = nle_kmeans(ctx, X, (int)L, 1, KMEANS_ITERS, lab, NULL);
  for (size_t i = 0; !s && i < n; i++) {
    cnt[lab[i]] += 1.0;
    for (size_t t = 0; t < D; t++) sum[(size_t)lab[i] * D + t] += Y->data[i * D + t];
  }
  if (!s) s = nle_matf_alloc(ctx, L, D, &Cf);
  for (size_t c = 0; !s && c < L; c++)
    for (size_t t = 0; t < D; t++) Cf->data[c * D + t] = cnt[c] > 0 ? (float)(sum[c * D + t] / cnt[c]) : 0.0f;
  int kq = L + 1 < n ? (int)L + 1 : (int)n; /* enough that a free point is always listed */
  if (kq > 64) kq = 64;
  if (!s) s = nle_knn_query(ctx, Y, Cf, kq, &G);
  size_t got = 0;
  for (size_t c = 0; !s && c < L; c++) {
    int32_t pick = -1;
    for (int64_t q = G->rowptr[c]; q < G->rowptr[c + 1] && pick < 0; q++)
      if (!taken[G->colind[q]]) pick = G->colind[q];
    if (pick < 0) /* every listed point taken: the first free one */
      for (size_t i = 0; i < n && pick < 0; i++)
        if (!taken[i]) pick = (int32_t)i;
    taken[pick] = true;
    idx[got++] = pick;
  }
  if (!s) qsort(idx, L, sizeof *idx, cmp_i32);
  free(lab), free(sum), free(cnt), free(taken);
  nle_matd_free(&X);
  nle_matf_free(&Cf);
  nle_csr_free(&G);
  return s;
}

typedef struct {
  const nle_matf *Y;
  const float *last; /* the landmark just chosen */
  double *near;
} minmax_job;

enum { MINMAX_BLOCK = 4096 };

static int minmax_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  minmax_job *j = job;
  size_t n = j->Y->rows, D = j->Y->cols, i1 = (b + 1) * MINMAX_BLOCK < n ? (b + 1) * MINMAX_BLOCK : n;
  for (size_t i = b * MINMAX_BLOCK; i < i1; i++) {
    double e = sqdist_f(j->Y->data + i * D, j->last, D);
    if (e < j->near[i]) j->near[i] = e;
  }
  return 0;
}

/* Farthest-point sampling: each next landmark maximises the distance to
 * those chosen (ties to the lowest index). Y is this rank's rows of n
 * (first: its first point's index); over ranks each round's farthest is
 * every rank's farthest compared (the same rule, so the same choice as
 * alone) and its row sent from its rank to all. */
static nle_status minmax(nle_ctx *ctx, const nle_matf *Y, size_t n, size_t first_row, size_t L, nle_rng *rng,
                         int32_t *idx) {
  size_t m = Y->rows, D = Y->cols;
  int ranks = nle__ranks(ctx);
  typedef struct {
    double d;
    int64_t i;
  } far_point;
  double *near = nle__malloc(ctx, (m + 1) * sizeof(double), "the MinMax distances");
  far_point *every = nle__malloc(ctx, (size_t)(ranks > 1 ? ranks : 1) * sizeof(far_point), "the MinMax distances");
  float *last = nle__malloc(ctx, (D + 1) * sizeof(float), "the MinMax distances");
  nle_status s = near && every && last ? NLE_OK : NLE_ERR_NOMEM;
  if (nle__distributed(ctx)) s = nle__comm_agree(ctx, s);
  for (size_t i = 0; !s && i < m; i++) near[i] = INFINITY;
  size_t first = (size_t)(nle_rng_uniform(rng) * (double)n);
  if (!s) idx[0] = (int32_t)(first < n ? first : n - 1);
  minmax_job j = {Y, last, near};
  int threads = nle__threads_for(ctx, (double)m * (double)D);
  for (size_t c = 0; !s && c < L; c++) {
    if (c > 0) {
      far_point mine = {-1.0, -1}; /* a rank without rows offers nothing */
      for (size_t i = 0; i < m; i++)
        if (near[i] > mine.d) mine = (far_point){near[i], (int64_t)(first_row + i)};
      every[0] = mine;
      if (nle__distributed(ctx)) s = nle__comm_allgatherv(ctx, &mine, sizeof mine, every, NULL);
      far_point best = every[0];
      for (int r = 1; !s && r < ranks; r++) /* rank order is index order: ties stay with the lower */
        if (every[r].d > best.d) best = every[r];
      idx[c] = (int32_t)best.i;
    }
    size_t at = (size_t)idx[c];
    bool mine = at >= first_row && at < first_row + m;
    if (!s && mine) memcpy(last, Y->data + (at - first_row) * D, D * sizeof(float));
    if (!s && nle__distributed(ctx)) s = nle__comm_bcast(ctx, last, D * sizeof(float), nle__rank_of_row(n, ranks, at));
    if (!s) s = nle__for_blocks(ctx, "MinMax landmarks", (m + MINMAX_BLOCK - 1) / MINMAX_BLOCK, threads, 0, minmax_block, &j);
  }
  free(near), free(every), free(last);
  if (!s) qsort(idx, L, sizeof *idx, cmp_i32);
  return s;
}

/* The selection over n points of which Y holds rows [first, first +
 * Y->rows) (all of them alone). */
static nle_status select_rows(nle_ctx *ctx, const nle_matf *Y, size_t n, size_t first, size_t L,
                              nle_landmark_method method, int32_t *idx) {
  if (L < 1 || L > n) return nle__fail(ctx, NLE_ERR_ARG, "landmarks: {@landmarks=%zu} of %zu points (1..N)", L, n);
  if (method == NLE_LANDMARKS_KMEANS && L < n && nle__distributed(ctx))
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "landmarks: {@landmark-method=kmeans} does not run on more than one rank "
                     "yet (random, the default, thinned or minmax do)");
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6c6c6c6dULL);
  switch (method) {
  case NLE_LANDMARKS_THINNED:
    if (L < n) return thinned(ctx, Y, n, L, &rng, idx);
    break;
  case NLE_LANDMARKS_KMEANS:
    if (L < n) return kmeans_points(ctx, Y, L, idx);
    break;
  case NLE_LANDMARKS_MINMAX: return minmax(ctx, Y, n, first, L, &rng, idx);
  default: break;
  }
  return random_points(ctx, &rng, n, L, idx);
}

nle_status nle_landmarks_select(nle_ctx *ctx, const nle_matf *Y, size_t L, nle_landmark_method method, int32_t *idx) {
  if (!Y || !idx || !strcmp(nle_landmark_method_name(method), "unknown"))
    return nle__fail(ctx, NLE_ERR_ARG, "landmarks: bad argument (points, method or output)");
  int ranks = nle__alone_begin(ctx); /* the public call: these points, this process */
  nle_status s = select_rows(ctx, Y, Y->rows, 0, L, method, idx);
  nle__alone_end(ctx, ranks);
  return s;
}

nle_status nle__landmarks_select_rows(nle_ctx *ctx, const nle_matf *Y, size_t L, nle_landmark_method method,
                                      int32_t *idx) {
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, Y->rows, "landmarks", &rows);
  return s ? s : select_rows(ctx, Y, rows.n, rows.mine.begin, L, method, idx);
}
