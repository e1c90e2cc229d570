/* knn_exact.c — exact k nearest neighbours by blocked brute force: GEMM for
 * the inner products (|a-b|^2 = |a|^2 + |b|^2 - 2 a.b) on centred data, a
 * bounded max-heap of k + margin candidates per query row, OpenMP over row
 * blocks. For the kNN graph the points are taken in a spatial (k-d) order
 * and each block of queries scans its own column block first (70,000 x 50
 * PCA of Fashion-MNIST, k = 90: the search with the re-ranking 8.0 -> 6.8
 * s). The candidates are then re-ranked with directly computed distances,
 * and a rounding bound certifies per row that no point outside the candidates
 * can be closer; a row that cannot be certified is recomputed directly. The
 * result is therefore exact, whatever the cancellation in the GEMM form.
 * nle_knn_rerank (at the end) re-ranks candidates found elsewhere the same
 * way, in the full space. */
#include "neighbors_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

enum { BLOCK_ROWS = 256, BLOCK_COLS = 1024 };

void nle_knn_opts_init(nle_knn_opts *o) { o->k = 10; }

typedef struct {
  float d;
  int32_t i;
} cand;

static inline int cand_greater(cand a, cand b) { return a.d > b.d || (a.d == b.d && a.i > b.i); }
NLE__DEFINE_SORT(cand_sort, cand, cand_greater)

NLE__DEFINE_HEAP_REPLACE(heap_replace_top, cand, cand_greater)

/* Squared distance accumulated in double: the re-ranking reference. */
#define sqdist nle__sqdist_fd

typedef struct {
  const nle_matf *Y;  /* the reference points, for exact distances */
  const float *Yc;    /* centred copy, for the GEMM */
  const float *sqnorm; /* squared norms of the centred rows */
  const nle_matf *Q;  /* the query points (Y itself for the kNN graph) */
  const float *Qc, *qnorm; /* centred by Y's mean, and their squared norms */
  int self;           /* queries are the reference points: skip q itself */
  double max_norm;    /* largest centred norm */
  double rel_error;   /* bound on the GEMM form's error per (|a| + |b|)^2 */
  int k, kc;
  const int32_t *perm; /* position -> point: the spatial order of Yc and
                          sqnorm (NULL: identity) */
  const int32_t *qperm; /* position -> query: the order of Qc and qnorm
                           (NULL: identity; perm for the kNN graph) */
  const size_t *qleaf;  /* queries from elsewhere: per query position, the
                           position of its leaf in perm (or NULL) */
  const float *box;     /* per column block of Yc: d lowest, d highest
                           coordinates */
  size_t col_blocks;
  nle_csr *graph;
  size_t fallbacks;   /* rows recomputed directly (atomic) */
} knn_job;

/* Every distance from row q, directly: the fallback for uncertified rows. */
static void knn_row_direct(const knn_job *job, size_t q, cand *heap) {
  const nle_matf *Y = job->Y;
  size_t n = Y->rows, d = Y->cols;
  int k = job->k;
  for (int c = 0; c < k; c++) heap[c] = (cand){INFINITY, INT32_MAX};
  for (size_t j = 0; j < n; j++) {
    if (job->self && j == q) continue;
    cand x = {(float)sqdist(job->Q->data + q * d, Y->data + j * d, d), (int32_t)j};
    if (cand_greater(heap[0], x)) heap_replace_top(heap, k, x);
  }
  cand_sort(heap, (size_t)k);
}

enum { SCAN_CHUNK = 16 };

/* Offers one GEMM row of distances to a query's heap. Chunks are computed
 * with their minimum (vectorised) first, and skipped whole when none can beat
 * the heap's root, which is nearly always once the heap has filled. */
NLE_HOT static void scan_row(cand *h, int kc, const float *g, size_t bc, float nq, const float *sqn, size_t c0, size_t self) {
  for (size_t c = 0; c < bc; c += SCAN_CHUNK) {
    size_t len = bc - c < SCAN_CHUNK ? bc - c : SCAN_CHUNK;
    float dist[SCAN_CHUNK], low = INFINITY;
#pragma omp simd reduction(min : low)
    for (size_t t = 0; t < len; t++) {
      dist[t] = nq + sqn[c + t] - 2.0f * g[c + t];
      low = dist[t] < low ? dist[t] : low;
    }
    if (low > h[0].d) continue;
    for (size_t t = 0; t < len; t++) {
      cand x = {dist[t] > 0.0f ? dist[t] : 0.0f, (int32_t)(c0 + c + t)};
      if (cand_greater(h[0], x) && c0 + c + t != self) heap_replace_top(h, kc, x);
    }
  }
}

/* The squared distance from q to the box lo[d], hi[d]: no point inside
 * is nearer. */
static inline double box_distance(const float *q, const float *lo, const float *hi, size_t d) {
  double lane[NLE__LANES] = {0};
  for (size_t t = 0; t < d; t++) {
    double u = (double)lo[t] - q[t], v = (double)q[t] - hi[t], g = u > v ? u : v;
    lane[t % NLE__LANES] += g > 0.0 ? g * g : 0.0;
  }
  return nle__lanes_total(lane);
}

/* Neighbours of rows [r0, r1): candidates from GEMM blocks, then re-ranked.
 * lower: br x col_blocks scratch, visit: col_blocks. */
NLE_HOT static void knn_row_block(knn_job *job, size_t r0, size_t r1, float *gram, cand *heaps, double *lower,
                                  nle__pair *visit) {
  const nle_matf *Y = job->Y;
  size_t n = Y->rows, d = Y->cols, br = r1 - r0;
  int kc = job->kc;
  const int32_t *perm = job->perm;
  for (size_t r = 0; r < br; r++)
    for (int c = 0; c < kc; c++) heaps[r * (size_t)kc + (size_t)c] = (cand){INFINITY, INT32_MAX};
  /* In spatial order the queries' own column block holds most of their
   * neighbours: scanned first, it makes the heaps' bounds tight at once.
   * Queries from elsewhere, sorted by the leaf they fall in, start from
   * their middle one's. The other blocks follow by their boxes' distance
   * from the queries, nearest first; a block whose box is farther from a
   * query than its heap's bound (by more than the GEMM form's error) holds
   * none of its candidates, and a block far from every query of the block
   * is skipped whole (10,000 Fashion-MNIST test images among 60,000 in 50
   * components: a quarter of the rows' GEMM products left out). The heaps
   * end with the same kc candidates in any order of the blocks: the kc
   * least of a total order. */
  size_t col_blocks = (n + BLOCK_COLS - 1) / BLOCK_COLS;
  size_t own = job->qleaf ? job->qleaf[r0 + br / 2] / BLOCK_COLS : job->self ? r0 / BLOCK_COLS : 0;
  for (size_t b = 0; b < col_blocks; b++) {
    double nearest = INFINITY;
    const float *lo = job->box + 2 * b * d;
    for (size_t r = 0; r < br; r++) {
      double lb = box_distance(job->Qc + (r0 + r) * d, lo, lo + d, d);
      lower[r * col_blocks + b] = lb;
      nearest = lb < nearest ? lb : nearest;
    }
    visit[b] = (nle__pair){b == own ? -1.0 : nearest, (int64_t)b};
  }
  qsort(visit, col_blocks, sizeof *visit, nle__pair_cmp);
  for (size_t v = 0; v < col_blocks; v++) {
    size_t b = (size_t)visit[v].i, c0 = b * BLOCK_COLS, first = br, last = 0;
    size_t bc = n - c0 < BLOCK_COLS ? n - c0 : BLOCK_COLS;
    for (size_t r = 0; r < br; r++) {
      double reach = sqrt((double)job->qnorm[r0 + r]) + job->max_norm;
      if (!(lower[r * col_blocks + b] - 2.0 * job->rel_error * reach * reach > (double)heaps[r * (size_t)kc].d)) {
        first = r < first ? r : first;
        last = r;
      } else {
        lower[r * col_blocks + b] = -1.0; /* marks the row as done with this block */
      }
    }
    if (first > last) continue;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(last + 1 - first), (int)bc, (int)d, 1.0f,
                job->Qc + (r0 + first) * d, (int)d, job->Yc + c0 * d, (int)d, 0.0f, gram, (int)bc);
    for (size_t r = first; r <= last; r++)
      if (lower[r * col_blocks + b] >= 0.0)
        scan_row(heaps + r * (size_t)kc, kc, gram + (r - first) * bc, bc, job->qnorm[r0 + r], job->sqnorm + c0, c0,
                 job->self ? r0 + r : SIZE_MAX);
  }
  float *val = job->graph->val;
  for (size_t r = 0; r < br; r++) {
    cand *h = heaps + r * (size_t)kc;
    size_t row = job->qperm ? (size_t)job->qperm[r0 + r] : r0 + r; /* the query's own index */
    const float *q = job->Q->data + row * d;
    /* Every point outside the heap had a GEMM distance >= the root's. */
    double outside = h[0].d;
    for (int c = 0; c < kc; c++) {
      if (perm) h[c].i = perm[h[c].i];
      h[c].d = (float)sqdist(q, Y->data + (size_t)h[c].i * d, d);
    }
    cand_sort(h, (size_t)kc);
    double reach = sqrt((double)job->qnorm[r0 + r]) + job->max_norm;
    if ((size_t)kc < n - (size_t)job->self && !(outside - job->rel_error * reach * reach > (double)h[job->k - 1].d)) {
      knn_row_direct(job, row, h);
#pragma omp atomic
      job->fallbacks++;
    }
    size_t out = row * (size_t)job->k;
    for (int c = 0; c < job->k; c++) {
      job->graph->colind[out + (size_t)c] = h[c].i;
      val[out + (size_t)c] = h[c].d;
    }
  }
}

/* Spatial order (a k-d tree's leaves left to right): ranges split at the
 * median of their widest coordinate down to SPATIAL_LEAF points. */
enum { SPATIAL_LEAF = 64 };

static float coord(const nle_matf *Y, const int32_t *perm, size_t i, size_t axis) {
  return Y->data[(size_t)perm[i] * Y->cols + axis];
}

/* Hoare's selection: perm[lo, hi) rearranged so that its middle holds the
 * median along axis, smaller before and larger after. */
static void select_median(const nle_matf *Y, int32_t *perm, size_t lo, size_t hi, size_t axis) {
  size_t mid = lo + (hi - lo) / 2;
  while (hi - lo > 1) {
    float pivot = coord(Y, perm, lo + (hi - lo - 1) / 2, axis); /* not the last: j then ends below hi - 1 */
    size_t i = lo, j = hi - 1;
    for (;;) {
      while (coord(Y, perm, i, axis) < pivot) i++;
      while (coord(Y, perm, j, axis) > pivot) j--;
      if (i >= j) break;
      int32_t t = perm[i];
      perm[i++] = perm[j];
      perm[j--] = t;
    }
    /* [lo, j] <= pivot <= [j + 1, hi) */
    if (mid <= j) hi = j + 1;
    else lo = j + 1;
  }
}

/* The tree of the spatial order, in preorder: an inner node's left child
 * follows it, its right child is at `right`; a leaf (axis -1) holds the
 * points from position lo. Leaves hold more than SPATIAL_LEAF / 2 points
 * (halves of more than SPATIAL_LEAF), so there are fewer than
 * 4 n / SPATIAL_LEAF + 1 nodes. */
typedef struct {
  int32_t axis;
  float value;  /* inner: [lo, mid) <= value <= [mid, hi) along axis */
  size_t right; /* inner: the right child's node */
  size_t lo;    /* leaf: its first position */
} kd_node;

/* perm[lo, hi) in spatial order; with tree, its nodes from tree[*used] on. */
static void spatial_order(const nle_matf *Y, int32_t *perm, size_t lo, size_t hi, kd_node *tree, size_t *used) {
  size_t d = Y->cols, at = tree ? (*used)++ : 0;
  size_t axis = 0;
  float widest = -1.0f;
  for (size_t t = 0; hi - lo > SPATIAL_LEAF && t < d; t++) {
    float a = INFINITY, b = -INFINITY;
    for (size_t i = lo; i < hi; i++) {
      float v = coord(Y, perm, i, t);
      a = v < a ? v : a;
      b = v > b ? v : b;
    }
    if (b - a > widest) widest = b - a, axis = t;
  }
  if (!(widest > 0.0f)) { /* a leaf: few points, or all equal */
    if (tree) tree[at] = (kd_node){-1, 0.0f, 0, lo};
    return;
  }
  select_median(Y, perm, lo, hi, axis);
  size_t mid = lo + (hi - lo) / 2;
  spatial_order(Y, perm, lo, mid, tree, used);
  if (tree) tree[at] = (kd_node){(int32_t)axis, coord(Y, perm, mid, axis), *used, 0};
  spatial_order(Y, perm, mid, hi, tree, used);
}

/* The first position of the leaf a query point falls in. */
static size_t leaf_of(const kd_node *tree, const float *q) {
  size_t at = 0;
  while (tree[at].axis >= 0) at = q[tree[at].axis] < tree[at].value ? at + 1 : tree[at].right;
  return tree[at].lo;
}

/* Centring shrinks |a|^2 + |b|^2 and with it the cancellation error of the
 * GEMM form. Fills the centred copy and its squared norms; returns the
 * largest squared norm, or -1 when out of memory. */
static double centre_rows(const nle_matf *Y, const nle_matf *by, const int32_t *perm, float *centred, float *sqnorm) {
  size_t n = Y->rows, d = Y->cols;
  double *mean = calloc(d ? d : 1, sizeof(double)), max_sq = 0.0;
  if (!mean) return -1.0;
  for (size_t i = 0; i < by->rows; i++)
    for (size_t j = 0; j < d; j++) mean[j] += by->data[i * d + j];
  for (size_t j = 0; j < d; j++) mean[j] /= (double)by->rows;
  for (size_t i = 0; i < n; i++) {
    double sq = 0.0;
    const float *y = Y->data + (perm ? (size_t)perm[i] : i) * d;
    for (size_t j = 0; j < d; j++) {
      float c = (float)((double)y[j] - mean[j]);
      centred[i * d + j] = c;
      sq += (double)c * c;
    }
    sqnorm[i] = (float)sq;
    if (sq > max_sq) max_sq = sq;
  }
  free(mean);
  return max_sq;
}

/* One block of query rows for nle__for_blocks; scratch holds the GEMM tile
 * and the candidate heaps. */
NLE_HOT static int knn_block(void *job, size_t b, void *scratch) {
  knn_job *kj = job;
  size_t n = kj->Q->rows, r0 = b * BLOCK_ROWS, r1 = r0 + BLOCK_ROWS < n ? r0 + BLOCK_ROWS : n;
  float *gram = scratch;
  cand *heaps = (cand *)(gram + (size_t)BLOCK_ROWS * BLOCK_COLS);
  double *lower = (double *)(heaps + (size_t)BLOCK_ROWS * (size_t)kj->kc);
  knn_row_block(kj, r0, r1, gram, heaps, lower, (nle__pair *)(lower + (size_t)BLOCK_ROWS * kj->col_blocks));
  return 0;
}

/* k nearest reference points Y of every query row of Q (Q == Y: the kNN
 * graph, each point's own index left out). */
static nle_status knn_search(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, int k, nle_csr **graph) {
  size_t n = Y->rows, d = Y->cols, m = Q->rows;
  int self = Q == Y;
  /* Extra candidates absorb the rounding of the GEMM form before re-ranking. */
  int kc = k + (k / 4 > 8 ? k / 4 : 8);
  if ((size_t)kc > n - (size_t)self) kc = (int)(n - (size_t)self);
  int threads = nle__threads_for(ctx, (double)m * (double)n * (double)d);
  size_t col_blocks = (n + BLOCK_COLS - 1) / BLOCK_COLS;
  size_t scratch = (size_t)BLOCK_ROWS * BLOCK_COLS * sizeof(float) + (size_t)BLOCK_ROWS * (size_t)kc * sizeof(cand) +
                   (size_t)BLOCK_ROWS * col_blocks * sizeof(double) + col_blocks * sizeof(nle__pair);
  double work_bytes = (double)threads * (double)scratch + (double)col_blocks * 2.0 * (double)d * sizeof(float);
  nle_status s = nle__check_memory(ctx, work_bytes + (double)m * k * 8 + (double)(n + m) * (4.0 * (double)d + 4),
                                   "exact kNN");
  if (s) return s;
  s = nle_csr_alloc(ctx, (int64_t)m, (int64_t)n, (int64_t)m * k, NLE_F32, graph);
  if (s) return s;
  for (size_t i = 0; i <= m; i++) (*graph)->rowptr[i] = (int64_t)i * k;
  float *sqnorm = nle__malloc(ctx, n * sizeof(float), "squared norms");
  float *centred = nle__malloc(ctx, n * d * sizeof(float), "the centred data");
  float *qnorm = self ? sqnorm : nle__malloc(ctx, m * sizeof(float), "squared norms");
  float *qcentred = self ? centred : nle__malloc(ctx, m * d * sizeof(float), "the centred queries");
  /* The reference points in spatial order; queries from elsewhere sorted
   * by the leaf of its tree they fall in (10,000 Fashion-MNIST test images
   * among 60,000 in 50 components: the scans 2x faster). The graph is the
   * same in any order: each row's k are certified exact below. */
  int32_t *perm = nle__malloc(ctx, n * sizeof(int32_t), "the spatial order"), *qperm = self ? perm : NULL;
  size_t *qleaf = NULL, used = 0;
  int sorted = !self && m <= INT32_MAX; /* (else the queries in turn) */
  kd_node *tree = sorted ? nle__malloc(ctx, 4 * (n / SPATIAL_LEAF + 1) * sizeof *tree, "the spatial order") : NULL;
  nle__pair *by_leaf = sorted ? nle__malloc(ctx, (m ? m : 1) * sizeof *by_leaf, "the queries' order") : NULL;
  if (sorted) {
    qperm = nle__malloc(ctx, (m ? m : 1) * sizeof *qperm, "the queries' order");
    qleaf = nle__malloc(ctx, (m ? m : 1) * sizeof *qleaf, "the queries' order");
  }
  int ready = perm && (!sorted || (tree && by_leaf && qperm && qleaf));
  for (size_t i = 0; ready && i < n; i++) perm[i] = (int32_t)i;
  if (ready) spatial_order(Y, perm, 0, n, tree, &used);
  for (size_t i = 0; ready && sorted && i < m; i++)
    by_leaf[i] = (nle__pair){(double)leaf_of(tree, Q->data + i * d), (int64_t)i};
  if (ready && sorted) qsort(by_leaf, m, sizeof *by_leaf, nle__pair_cmp);
  for (size_t i = 0; ready && sorted && i < m; i++) {
    qperm[i] = (int32_t)by_leaf[i].i;
    qleaf[i] = (size_t)by_leaf[i].d;
  }
  free(tree);
  free(by_leaf);
  double max_sq = sqnorm && centred && qnorm && qcentred && ready ? centre_rows(Y, Y, perm, centred, sqnorm) : -1.0;
  double q_max = self ? max_sq : max_sq >= 0 ? centre_rows(Q, Y, qperm, qcentred, qnorm) : -1.0;
  if (q_max < 0) max_sq = -1.0;
  if (max_sq < 0) s = nle__fail(ctx, NLE_ERR_NOMEM, "exact kNN: out of memory for the centred data");
  /* the centring found the largest norms: the range check costs a pass over
   * the data only when it fails (to name the point) */
  else if (!nle__knn_range_ok(fmax(max_sq, q_max))) s = nle__knn_check_range(ctx, Y, self ? NULL : Q);
  /* Float dot products of length D err by at most ~D u |a||b| (u = 2^-24);
   * the norms, the centring and the final sum add a few u more. */
  double rel_error = 1.01 * ((double)d + 8.0) * 0x1.0p-24;
  float *box = s ? NULL : nle__malloc(ctx, col_blocks * 2 * d * sizeof(float), "the blocks' boxes");
  if (!s && !box) s = NLE_ERR_NOMEM;
  for (size_t b = 0; !s && b < col_blocks; b++) { /* each column block's bounding box */
    float *lo = box + 2 * b * d, *hi = lo + d;
    size_t c1 = (b + 1) * BLOCK_COLS < n ? (b + 1) * BLOCK_COLS : n;
    for (size_t t = 0; t < d; t++) lo[t] = INFINITY, hi[t] = -INFINITY;
    for (size_t i = b * BLOCK_COLS; i < c1; i++)
      for (size_t t = 0; t < d; t++) {
        float v = centred[i * d + t];
        lo[t] = v < lo[t] ? v : lo[t];
        hi[t] = v > hi[t] ? v : hi[t];
      }
  }
  knn_job job = {Y,     centred, sqnorm, Q,   qcentred,   qnorm, self, sqrt(fmax(max_sq, 0.0)), rel_error, k, kc, perm,
                 qperm, qleaf,   box,    col_blocks, *graph, 0};
  size_t nblocks = (m + BLOCK_ROWS - 1) / BLOCK_ROWS;
  if (!s) s = nle__for_blocks(ctx, "exact kNN", nblocks, threads, scratch, knn_block, &job);
  free(box);
  if (!self) {
    free(qnorm);
    free(qcentred);
  }
  free(sqnorm);
  free(centred);
  if (!self) free(qperm);
  free(qleaf);
  free(perm);
  if (job.fallbacks) nle__log(ctx, 2, "exact kNN: %zu of %zu rows recomputed directly", job.fallbacks, m);
  if (s) nle_csr_free(graph);
  return s;
}

nle_status nle_knn_exact(nle_ctx *ctx, const nle_matf *Y, const nle_knn_opts *opts, nle_csr **graph) {
  *graph = NULL;
  nle_knn_opts defaults;
  if (!opts) {
    nle_knn_opts_init(&defaults);
    opts = &defaults;
  }
  nle__rows rows; /* with a communicator, Y is this rank's rows of N (comm.h) */
  nle_status s = nle__comm_rows(ctx, Y->rows, "exact kNN", &rows);
  if (s) return s;
  size_t n = rows.n;
  if (n < 2) return nle__fail(ctx, NLE_ERR_ARG, "kNN needs at least 2 points, got %zu", n);
  if (opts->k < 1 || (size_t)opts->k >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and below the number of points N = %zu",
                     opts->k, n);
  if (n > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "kNN supports at most 2^31 - 1 points");
  if (nle__distributed(ctx)) return nle__knn_exact_ring(ctx, Y, &rows, opts->k, graph);
  if (nle__knn_kdtree_pays(n, Y->cols)) return nle__knn_kdtree(ctx, Y, NULL, opts->k, graph);
  return knn_search(ctx, Y, Y, opts->k, graph);
}

nle_status nle__knn_gemm(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, int k, nle_csr **graph) {
  *graph = NULL;
  return knn_search(ctx, Y, Q ? Q : Y, k, graph);
}

nle_status nle_knn_query(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, int k, nle_csr **graph) {
  *graph = NULL;
  if (Q->cols != Y->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN query: %zu columns for reference points of %zu", Q->cols, Y->cols);
  if (k < 1 || (size_t)k > Y->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and at most the N = %zu reference points", k,
                     Y->rows);
  if (Y->rows > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "kNN supports at most 2^31 - 1 points");
  if (Q->rows == 0) return nle_csr_alloc(ctx, 0, (int64_t)Y->rows, 0, NLE_F32, graph);
  if (nle__knn_kdtree_pays(Y->rows, Y->cols)) return nle__knn_kdtree(ctx, Y, Q, k, graph);
  return knn_search(ctx, Y, Q, k, graph);
}

/* Re-ranking given candidates (nle_knn_rerank): a neighbour search run in a
 * reduced space (the first principal components) finds candidates, and their
 * exact distances in the full space pick the k kept. On Fashion-MNIST the 90
 * nearest among 50 principal components share 70% with the 90 nearest in the
 * 784 pixels; re-ranking gives the affinities the input's distances and
 * order, which is what kNN recall against the input measures. */
typedef struct {
  const nle_matf *Y, *Q; /* Q: the points whose candidates these are */
  const nle_csr *cand;
  const int32_t *order; /* rows in this order: neighbours in turn (or NULL) */
  nle_csr *out;
  int k;
} rerank_job;

enum { RERANK_BLOCK = 128 };

#define sqdist_rows nle__sqdist_lanes

NLE_HOT static int rerank_block(void *job, size_t b, void *scratch) {
  const rerank_job *j = job;
  const nle_csr *c = j->cand;
  size_t d = j->Y->cols, i1 = (b + 1) * RERANK_BLOCK < (size_t)c->rows ? (b + 1) * RERANK_BLOCK : (size_t)c->rows;
  cand *row = scratch;
  float *val = j->out->val;
  for (size_t at = b * RERANK_BLOCK; at < i1; at++) {
    size_t i = j->order ? (size_t)j->order[at] : at;
    const float *yi = j->Q->data + i * d;
    int len = 0;
    for (int64_t q = c->rowptr[i]; q < c->rowptr[i + 1]; q++)
      row[len++] = (cand){sqdist_rows(yi, j->Y->data + (size_t)c->colind[q] * d, d), c->colind[q]};
    cand_sort(row, (size_t)len);
    size_t out = i * (size_t)j->k;
    for (int t = 0; t < j->k; t++) {
      j->out->colind[out + (size_t)t] = row[t].i;
      val[out + (size_t)t] = row[t].d;
    }
  }
  return 0;
}

/* The longest candidate row; an error if a row has fewer than k. */
static nle_status candidate_width(nle_ctx *ctx, const nle_csr *cand, int k, int64_t *widest) {
  *widest = 0;
  for (int64_t i = 0; i < cand->rows; i++) {
    int64_t len = cand->rowptr[i + 1] - cand->rowptr[i];
    if (len < k)
      return nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: point %lld has %lld candidates for k = %d", (long long)i,
                       (long long)len, k);
    *widest = len > *widest ? len : *widest;
  }
  return NLE_OK;
}

/* The candidates of Q's rows (an M x N graph) re-ranked by their distances
 * in Y; order (or NULL) is the order the rows are taken in. */
static nle_status rerank(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, const nle_csr *candidates, int k,
                         const int32_t *order, nle_csr **graph) {
  int64_t m = candidates->rows, widest = 0;
  nle_status s = candidate_width(ctx, candidates, k, &widest);
  if (!s) s = nle_csr_alloc(ctx, m, candidates->cols, m * (int64_t)k, NLE_F32, graph);
  if (s) return s;
  for (int64_t i = 0; i <= m; i++) (*graph)->rowptr[i] = i * (int64_t)k;
  rerank_job job = {Y, Q, candidates, order, *graph, k};
  s = nle__for_blocks(ctx, "kNN re-ranking", ((size_t)m + RERANK_BLOCK - 1) / RERANK_BLOCK,
                      nle__threads_for(ctx, (double)m * (double)widest * (double)Y->cols), (size_t)widest * sizeof(cand),
                      rerank_block, &job);
  if (s) nle_csr_free(graph);
  return s;
}

/* Grouped re-ranking of a graph's own rows. Row by row, every candidate's
 * row of Y (3 KB on Fashion-MNIST) is read from memory once per use: at a
 * million points, 90 million reads and the whole stage bound by memory
 * (measured: 7.7 GB/s, no reuse left in any row order tried, reverse
 * Cuthill-McKee included). So the rows are taken in groups of neighbours
 * (a breadth-first walk of the candidate graph from a seed, up to
 * GROUP_MAX rows), and each distinct candidate of a group is read once for
 * all the group's rows that list it, whose own rows stay in cache. On
 * 300,000 augmented Fashion-MNIST images with 90 candidates a group's rows
 * share their candidates about three to one. Each distance is the same
 * sqdist_rows(row, candidate) as before, so the graph is the same bits.
 * Measured there (re-ranking seconds, 2 threads): groups of 64 rows walked
 * from 4, 7.8 s; with the candidate's row fetched two ahead, 6.3 s; groups
 * of 128 from 8, 5.6 s; 256 from 16, 5.6 s; 512 from 32, 5.4 s. 256 rows of
 * 784 floats (800 KB) stay within a core's L2. */
enum { GROUP_MAX = 256, GROUP_WALK = 16, GROUPS_PER_BLOCK = 16, RERANK_AHEAD = 2 };

typedef struct {
  const nle_matf *Y;
  const nle_csr *cand;
  const int32_t *members;  /* the rows, group after group */
  const int64_t *gstart;   /* group g is members[gstart[g] .. gstart[g + 1]) */
  int64_t ngroups, widest;
  int32_t *where;          /* per thread, N entries of -1: a candidate's slot */
  nle_csr *out;
  int k;
} group_job;

/* Groups of up to GROUP_MAX rows: from the first row not yet taken, the
 * untaken candidates of the group's first GROUP_WALK rows in turn. */
static int64_t group_rows(const nle_csr *c, int32_t *members, int64_t *gstart, uint8_t *taken) {
  int64_t n = c->rows, len = 0, g = 0;
  for (int64_t seed = 0; seed < n; seed++) {
    if (taken[seed]) continue;
    gstart[g++] = len;
    int64_t first = len;
    members[len++] = (int32_t)seed;
    taken[seed] = 1;
    for (int64_t h = first; h < len && h < first + GROUP_WALK && len - first < GROUP_MAX; h++)
      for (int64_t q = c->rowptr[members[h]]; q < c->rowptr[members[h] + 1] && len - first < GROUP_MAX; q++) {
        int32_t v = c->colind[q];
        if (!taken[v]) {
          taken[v] = 1;
          members[len++] = v;
        }
      }
  }
  gstart[g] = len;
  return g;
}

NLE_HOT static int rerank_group_block(void *job, size_t b, void *scratch) {
  const group_job *j = job;
  const nle_csr *c = j->cand;
  size_t d = j->Y->cols, widest = (size_t)j->widest;
#ifdef _OPENMP
  int32_t *where = j->where + (size_t)omp_get_thread_num() * (size_t)c->rows;
#else
  int32_t *where = j->where;
#endif
  /* scratch: each member's row of (distance, index), the group's distinct
   * candidates, their use counts and offsets, and the uses (member, slot) */
  cand *rows = scratch;
  int32_t *distinct = (int32_t *)(rows + GROUP_MAX * widest), *count = distinct + GROUP_MAX * widest,
          *uses = count + GROUP_MAX * widest + 1;
  int64_t g1 = (int64_t)(b + 1) * GROUPS_PER_BLOCK < j->ngroups ? (int64_t)(b + 1) * GROUPS_PER_BLOCK : j->ngroups;
  for (int64_t g = (int64_t)b * GROUPS_PER_BLOCK; g < g1; g++) {
    const int32_t *mem = j->members + j->gstart[g];
    int m = (int)(j->gstart[g + 1] - j->gstart[g]), nd = 0;
    for (int a = 0; a < m; a++)
      for (int64_t q = c->rowptr[mem[a]]; q < c->rowptr[mem[a] + 1]; q++) {
        int32_t v = c->colind[q];
        if (where[v] < 0) {
          where[v] = nd;
          count[nd] = 0;
          distinct[nd++] = v;
        }
        count[where[v]]++;
      }
    int total = 0;
    for (int t = 0; t < nd; t++) {
      int here = count[t];
      count[t] = total;
      total += here;
    }
    count[nd] = total;
    for (int a = 0; a < m; a++) {
      int slot = 0;
      for (int64_t q = c->rowptr[mem[a]]; q < c->rowptr[mem[a] + 1]; q++, slot++)
        uses[count[where[c->colind[q]]]++] = a * (int32_t)widest + slot;
    }
    /* count[t] now ends candidate t's uses; they start at count[t - 1] */
    for (int t = 0, from = 0; t < nd; from = count[t++]) {
      const float *yc = j->Y->data + (size_t)distinct[t] * d;
      if (t + RERANK_AHEAD < nd) { /* a later candidate's row on its way while this one's are summed */
        const char *next = (const char *)(j->Y->data + (size_t)distinct[t + RERANK_AHEAD] * d);
        for (size_t at = 0; at < d * sizeof(float); at += 64) __builtin_prefetch(next + at);
      }
      for (int u = from; u < count[t]; u++) {
        int a = uses[u] / (int32_t)widest;
        rows[uses[u]] = (cand){sqdist_rows(j->Y->data + (size_t)mem[a] * d, yc, d), distinct[t]};
      }
      where[distinct[t]] = -1;
    }
    for (int a = 0; a < m; a++) {
      cand *row = rows + (size_t)a * widest;
      size_t len = (size_t)(c->rowptr[mem[a] + 1] - c->rowptr[mem[a]]), out = (size_t)mem[a] * (size_t)j->k;
      cand_sort(row, len);
      for (int t = 0; t < j->k; t++) {
        j->out->colind[out + (size_t)t] = row[t].i;
        ((float *)j->out->val)[out + (size_t)t] = row[t].d;
      }
    }
  }
  return 0;
}

static nle_status rerank_grouped(nle_ctx *ctx, const nle_matf *Y, const nle_csr *cand, int k, nle_csr **graph) {
  int64_t n = cand->rows, widest = 0;
  nle_status s = candidate_width(ctx, cand, k, &widest);
  if (s) return s;
  int threads = nle__threads_for(ctx, (double)n * (double)widest * (double)Y->cols);
  s = nle__check_memory(ctx, (double)n * 13 + (double)threads * (double)n * 4, "kNN re-ranking");
  if (s) return s;
  int32_t *members = nle__malloc(ctx, (size_t)n * sizeof(int32_t), "re-ranking groups");
  int64_t *gstart = nle__malloc(ctx, ((size_t)n + 1) * sizeof(int64_t), "re-ranking groups");
  uint8_t *taken = nle__calloc(ctx, (size_t)n, 1, "re-ranking groups");
  int32_t *where = nle__malloc(ctx, (size_t)threads * (size_t)n * sizeof(int32_t), "re-ranking slots");
  s = members && gstart && taken && where ? nle_csr_alloc(ctx, n, cand->cols, n * (int64_t)k, NLE_F32, graph)
                                          : NLE_ERR_NOMEM;
  if (!s) {
    for (int64_t i = 0; i <= n; i++) (*graph)->rowptr[i] = i * (int64_t)k;
    memset(where, 0xff, (size_t)threads * (size_t)n * sizeof(int32_t));
    group_job job = {Y, cand, members, gstart, group_rows(cand, members, gstart, taken), widest, where, *graph, k};
    size_t scratch = GROUP_MAX * (size_t)widest * (sizeof(cand) + 3 * sizeof(int32_t)) + sizeof(int32_t);
    s = nle__for_blocks(ctx, "kNN re-ranking", (size_t)((job.ngroups + GROUPS_PER_BLOCK - 1) / GROUPS_PER_BLOCK),
                        threads, scratch, rerank_group_block, &job);
    if (s) nle_csr_free(graph);
  }
  free(members);
  free(gstart);
  free(taken);
  free(where);
  return s;
}

nle_status nle_knn_rerank(nle_ctx *ctx, const nle_matf *Y, const nle_csr *candidates, int k, nle_csr **graph) {
  *graph = NULL;
  nle__rows rows = {0, {0, 0}}; /* with a communicator, Y is this rank's rows of N (comm.h) */
  nle_status s = Y ? nle__comm_rows(ctx, Y->rows, "kNN re-ranking", &rows) : NLE_OK;
  if (s) return s;
  if (!Y || !candidates || candidates->rows != (int64_t)Y->rows || candidates->cols != (int64_t)rows.n)
    s = nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: the candidates must be an N x N graph of the N points");
  else if (k < 1) s = nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: k = %d must be >= 1", k);
  else s = nle__knn_check_range(ctx, Y, NULL);
  s = nle__comm_agree(ctx, s);
  if (s) return s;
  if (nle__distributed(ctx)) return nle__knn_rerank_ring(ctx, Y, &rows, candidates, k, graph);
  return rerank_grouped(ctx, Y, candidates, k, graph);
}

nle_status nle__knn_rerank_queries(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, const nle_csr *candidates, int k,
                                   const int32_t *order, nle_csr **graph) {
  *graph = NULL;
  if (!Y || !Q || !candidates || candidates->rows != (int64_t)Q->rows || candidates->cols != (int64_t)Y->rows ||
      Q->cols != Y->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: the candidates must be an M x N graph of the M queries");
  if (k < 1) return nle__fail(ctx, NLE_ERR_ARG, "kNN re-ranking: k = %d must be >= 1", k);
  nle_status range = nle__knn_check_range(ctx, Y, Q);
  return range ? range : rerank(ctx, Y, Q, candidates, k, order, graph);
}
