/* knn_accuracy.c — accuracy of a k-nearest-neighbour classifier on an
 * embedding by stratified k-fold cross-validation, fold for fold as
 * scikit-learn's cross_val_score(KNeighborsClassifier(k), X, y, cv=folds):
 * StratifiedKFold without shuffling, uniform votes, ties to the smaller label,
 * the mean of the per-fold accuracies. */
#include "../core/internal.h"
#include "metrics_internal.h"
#include "select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* StratifiedKFold(shuffle=False): classes numbered by first appearance; the
 * sorted label vector is dealt round-robin to the folds, and each class's
 * members, in data order, fill its per-fold quotas fold after fold. */
nle_status nle__stratified_folds(nle_ctx *ctx, const int32_t *labels, size_t n, int folds, int32_t *fold) {
  /* the classes (nle_labels_encode: any integers), numbered below by first
   * appearance as StratifiedKFold numbers them */
  int32_t *cls = nle__malloc(ctx, (n ? n : 1) * sizeof(int32_t), "the classes"), present = 0;
  if (!cls) return NLE_ERR_NOMEM;
  nle_status s = nle_labels_encode(ctx, "kNN accuracy: labels", labels, n, cls, &present, NULL);
  if (s) {
    free(cls);
    return s;
  }
  labels = cls;
  size_t nl = (size_t)present + 1;
  int64_t *code = nle__malloc(ctx, nl * sizeof(int64_t), "class codes");
  int64_t *count = nle__calloc(ctx, nl, sizeof(int64_t), "class counts");
  int64_t *quota = nle__calloc(ctx, nl * (size_t)folds, sizeof(int64_t), "fold quotas");
  int64_t *used = nle__calloc(ctx, nl * 2, sizeof(int64_t), "fold cursors");
  s = (code && count && quota && used) ? NLE_OK : NLE_ERR_NOMEM;
  int64_t classes = 0, largest = 0;
  if (!s) {
    for (size_t c = 0; c < nl; c++) code[c] = -1;
    for (size_t i = 0; i < n; i++)
      if (code[labels[i]] < 0) code[labels[i]] = classes++;
    for (size_t i = 0; i < n; i++) count[code[labels[i]]]++;
    int64_t start = 0;
    for (int64_t c = 0; c < classes; c++) {
      for (int f = 0; f < folds; f++) {
        /* positions p in [start, start + count) with p % folds == f */
        int64_t first = start + ((f - start % folds) % folds + folds) % folds;
        int64_t end = start + count[c];
        quota[c * folds + f] = first < end ? (end - 1 - first) / folds + 1 : 0;
      }
      if (count[c] > largest) largest = count[c];
      start += count[c];
    }
    if (largest < folds)
      s = nle__fail(ctx, NLE_ERR_ARG, "kNN accuracy: {@folds=%d} but no class has that many members", folds);
  }
  for (size_t i = 0; !s && i < n; i++) {
    int64_t c = code[labels[i]];
    int64_t *f = used + 2 * c; /* f[0]: current fold, f[1]: members placed in it */
    while (f[1] >= quota[c * folds + f[0]]) {
      f[0]++;
      f[1] = 0;
    }
    fold[i] = (int32_t)f[0];
    f[1]++;
  }
  free(code);
  free(count);
  free(quota);
  free(used);
  free(cls);
  return s;
}

/* Majority label of the k neighbours; ties go to the smallest label. */
static int32_t vote(const nle__pair *nb, int k, const int32_t *labels) {
  int32_t best = -1;
  int best_count = 0;
  for (int a = 0; a < k; a++) {
    int32_t l = labels[nb[a].i];
    int cnt = 0;
    for (int b = 0; b < k; b++) cnt += labels[nb[b].i] == l;
    if (cnt > best_count || (cnt == best_count && l < best)) {
      best = l;
      best_count = cnt;
    }
  }
  return best;
}

enum { CV_BLOCK = 512 };

typedef struct {
  const nle_matd *X;
  const int32_t *labels, *fold;
  uint8_t *correct;
  int k;
} cv_job;

/* Predicts points [b * CV_BLOCK, ...) from the points of the other folds;
 * scratch is the neighbour heap. */
static int cv_block(void *job, size_t b, void *scratch) {
  const cv_job *j = job;
  size_t n = j->X->rows, d = j->X->cols, i1 = (b + 1) * CV_BLOCK < n ? (b + 1) * CV_BLOCK : n;
  nle__pair *heap = scratch;
  for (size_t i = b * CV_BLOCK; i < i1; i++) {
    nle__heap_init(heap, j->k);
    const double *x = j->X->data + i * d;
    for (size_t m = 0; m < n; m++) {
      if (j->fold[m] == j->fold[i]) continue;
      const double *y = j->X->data + m * d;
      double dist = 0.0;
      for (size_t t = 0; t < d; t++) {
        double u = x[t] - y[t];
        dist += u * u;
      }
      if (dist <= heap[0].d) nle__heap_offer(heap, j->k, (nle__pair){dist, (int64_t)m});
    }
    j->correct[i] = vote(heap, j->k, j->labels) == j->labels[i];
  }
  return 0;
}

/* For d = 2 (maps): the points in square cells, each query's neighbours
 * from rings of cells around its own, stopping once the heap is full and
 * the next ring lies further than its largest distance. The same neighbours
 * as the scan over all points (the heap orders by distance, then index), in
 * O(N (k + cells visited)) instead of O(N^2): a million points in seconds. */
typedef struct {
  double lo[2], side;
  int64_t nx, ny;
  int64_t *start;   /* nx * ny + 1: cell c holds members[start[c] .. start[c + 1]) */
  int64_t *members; /* point indices, by cell */
} cell_grid;

static int64_t cell_of(const cell_grid *g, double v, int axis) {
  int64_t c = (int64_t)((v - g->lo[axis]) / g->side);
  int64_t top = axis ? g->ny - 1 : g->nx - 1;
  return c < 0 ? 0 : c > top ? top : c;
}

static nle_status grid_build(nle_ctx *ctx, const nle_matd *X, cell_grid *g) {
  size_t n = X->rows;
  double hi[2] = {-INFINITY, -INFINITY};
  g->lo[0] = g->lo[1] = INFINITY;
  for (size_t i = 0; i < n; i++)
    for (int t = 0; t < 2; t++) {
      g->lo[t] = fmin(g->lo[t], X->data[2 * i + t]);
      hi[t] = fmax(hi[t], X->data[2 * i + t]);
    }
  double span = fmax(hi[0] - g->lo[0], hi[1] - g->lo[1]);
  double per_side = ceil(sqrt((double)n / 4.0)); /* about 4 points a cell on a full square */
  g->side = span > 0 ? span / per_side : 1.0;
  g->nx = (int64_t)((hi[0] - g->lo[0]) / g->side) + 1;
  g->ny = (int64_t)((hi[1] - g->lo[1]) / g->side) + 1;
  size_t cells = (size_t)(g->nx * g->ny);
  g->start = nle__calloc(ctx, cells + 1, sizeof(int64_t), "kNN accuracy cells");
  g->members = nle__malloc(ctx, n * sizeof(int64_t), "kNN accuracy cell members");
  int64_t *fill = nle__malloc(ctx, (cells + 1) * sizeof(int64_t), "kNN accuracy cursors");
  if (!g->start || !g->members || !fill) {
    free(fill);
    return NLE_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    g->start[cell_of(g, X->data[2 * i + 1], 1) * g->nx + cell_of(g, X->data[2 * i], 0) + 1]++;
  for (size_t c = 0; c < cells; c++) g->start[c + 1] += g->start[c];
  memcpy(fill, g->start, (cells + 1) * sizeof(int64_t));
  for (size_t i = 0; i < n; i++)
    g->members[fill[cell_of(g, X->data[2 * i + 1], 1) * g->nx + cell_of(g, X->data[2 * i], 0)]++] = (int64_t)i;
  free(fill);
  return NLE_OK;
}

typedef struct {
  const nle_matd *X;
  const cell_grid *g;
  const int32_t *labels, *fold;
  uint8_t *correct;
  int k;
} grid_job;

static void offer_cell(const grid_job *j, int64_t cx, int64_t cy, size_t i, const double *x, nle__pair *heap) {
  const cell_grid *g = j->g;
  if (cx < 0 || cy < 0 || cx >= g->nx || cy >= g->ny) return;
  int64_t c = cy * g->nx + cx;
  for (int64_t q = g->start[c]; q < g->start[c + 1]; q++) {
    int64_t m = g->members[q];
    if (j->fold[m] == j->fold[i]) continue;
    double u0 = x[0] - j->X->data[2 * m], u1 = x[1] - j->X->data[2 * m + 1], dist = u0 * u0 + u1 * u1;
    if (dist <= heap[0].d) nle__heap_offer(heap, j->k, (nle__pair){dist, m});
  }
}

static int grid_block(void *job, size_t b, void *scratch) {
  const grid_job *j = job;
  const cell_grid *g = j->g;
  size_t n = j->X->rows, i1 = (b + 1) * CV_BLOCK < n ? (b + 1) * CV_BLOCK : n;
  nle__pair *heap = scratch;
  int64_t widest = g->nx > g->ny ? g->nx : g->ny;
  for (size_t i = b * CV_BLOCK; i < i1; i++) {
    nle__heap_init(heap, j->k);
    const double *x = j->X->data + 2 * i;
    int64_t cx = cell_of(g, x[0], 0), cy = cell_of(g, x[1], 1);
    for (int64_t r = 0; r <= widest; r++) {
      if (r == 0) offer_cell(j, cx, cy, i, x, heap);
      for (int64_t t = -r; r > 0 && t <= r; t++) { /* the ring at Chebyshev distance r */
        offer_cell(j, cx + t, cy - r, i, x, heap);
        offer_cell(j, cx + t, cy + r, i, x, heap);
        if (t > -r && t < r) {
          offer_cell(j, cx - r, cy + t, i, x, heap);
          offer_cell(j, cx + r, cy + t, i, x, heap);
        }
      }
      /* every cell of ring r + 1 lies at least r sides away */
      double reach = (double)r * g->side;
      if (heap[0].i != INT64_MAX && reach * reach > heap[0].d) break;
    }
    j->correct[i] = vote(heap, j->k, j->labels) == j->labels[i];
  }
  return 0;
}

nle_status nle_knn_accuracy_cv(nle_ctx *ctx, const nle_matd *X, const int32_t *labels, int k, int folds,
                               double *out) {
  size_t n = X->rows, d = X->cols;
  if (folds < 2 || (size_t)folds > n)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN accuracy: {@folds=%d} for %zu points (need 2 <= folds <= N)", folds, n);
  if (k < 1 || (double)k > (double)n * (folds - 1) / folds - 1)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN accuracy: {@cv-k=%d} is too large for %zu points in %d folds", k, n,
                     folds);
  int32_t *fold = nle__malloc(ctx, n * sizeof(int32_t), "fold assignment");
  uint8_t *correct = nle__calloc(ctx, n, 1, "predictions");
  if (!fold || !correct) {
    free(fold);
    free(correct);
    return NLE_ERR_NOMEM;
  }
  nle_status s = nle__stratified_folds(ctx, labels, n, folds, fold);
  cell_grid grid = {{0, 0}, 0, 0, 0, NULL, NULL};
  if (!s && d == 2) {
    s = grid_build(ctx, X, &grid);
    grid_job job = {X, &grid, labels, fold, correct, k};
    if (!s)
      s = nle__for_blocks(ctx, "kNN accuracy", (n + CV_BLOCK - 1) / CV_BLOCK,
                          nle__threads_for(ctx, (double)n * (double)k * 40.0), (size_t)k * sizeof(nle__pair), grid_block,
                          &job);
  } else if (!s) {
    cv_job job = {X, labels, fold, correct, k};
    s = nle__for_blocks(ctx, "kNN accuracy", (n + CV_BLOCK - 1) / CV_BLOCK,
                        nle__threads_for(ctx, (double)n * (double)n * (double)d), (size_t)k * sizeof(nle__pair),
                        cv_block, &job);
  }
  free(grid.start);
  free(grid.members);
  if (!s) {
    double sum = 0.0;
    for (int f = 0; f < folds; f++) {
      int64_t total = 0, right = 0;
      for (size_t i = 0; i < n; i++)
        if (fold[i] == f) {
          total++;
          right += correct[i];
        }
      sum += total ? (double)right / (double)total : 0.0;
    }
    *out = sum / folds;
  }
  free(fold);
  free(correct);
  return s;
}
