/* barnes_hut.c — kernel sums S_n = sum_{m != n} K(|x_n - x_m|^2) and
 * S^x_n = sum_{m != n} K(|x_n - x_m|^2) x_m (dissertation eq. 5.8) for the
 * Gaussian, Student-t and squared Student-t kernels, exactly (blocked
 * all-pairs) and by Barnes-Hut (dissertation sec. 5.2.1): a 2^d-ary tree of
 * cells (d = 1, 2, 3), and a cell whose side l and distance D to its centre
 * of mass satisfy l / D < theta counts as all its points at that centre.
 * Queries run per point in parallel, each in a fixed order, so the sums do
 * not depend on the number of threads. */
#include "nbody_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LEAF_POINTS = 8, MAX_DIM = NBODY_MAX_DIM, MAX_CHILDREN = 8, MAX_DEPTH = 48 };

/* ---- Barnes-Hut ----------------------------------------------------------- */

typedef struct {
  double centre[MAX_DIM]; /* of the cell */
  double half;            /* half its side */
  double com[MAX_DIM];    /* centre of mass of its points */
  int64_t first, count;   /* its points: order[first .. first + count) */
  int64_t child[MAX_CHILDREN]; /* -1: none; all -1 for a leaf */
} bh_cell;

typedef struct {
  bh_cell *cells;
  int64_t count, cap;
  int64_t *order; /* point indices grouped by cell */
  const nle_matd *X;
  int children;   /* 2^d */
} bh_tree;

static int64_t new_cell(bh_tree *t) {
  if (t->count == t->cap) {
    int64_t cap = t->cap ? 2 * t->cap : 1024;
    bh_cell *grown = realloc(t->cells, (size_t)cap * sizeof *grown);
    if (!grown) return -1;
    t->cells = grown;
    t->cap = cap;
  }
  return t->count++;
}

/* Builds the cell over order[first .. first + count) recursively: splits
 * the points among the 2^d sub-cells in place (a counting pass, then a
 * stable scatter through `tmp`). Returns the cell index or -1. */
static int64_t build(bh_tree *t, const double *centre, double half, int64_t first, int64_t count, int depth,
                     int64_t *tmp) {
  size_t d = t->X->cols;
  const double *x = t->X->data;
  int64_t c = new_cell(t);
  if (c < 0) return -1;
  bh_cell cell;
  memset(&cell, 0, sizeof cell);
  memcpy(cell.centre, centre, d * sizeof(double));
  cell.half = half;
  cell.first = first;
  cell.count = count;
  for (int q = 0; q < MAX_CHILDREN; q++) cell.child[q] = -1;
  for (int64_t i = first; i < first + count; i++)
    for (size_t k = 0; k < d; k++) cell.com[k] += x[(size_t)t->order[i] * d + k];
  for (size_t k = 0; k < d; k++) cell.com[k] /= (double)count;
  t->cells[c] = cell;
  /* Coincident points cannot be separated: a deep cell stays a leaf. */
  if (count <= LEAF_POINTS || depth >= MAX_DEPTH) return c;
  int64_t counts[MAX_CHILDREN] = {0}, start[MAX_CHILDREN];
  for (int64_t i = first; i < first + count; i++) {
    int q = 0;
    for (size_t k = 0; k < d; k++) q |= (x[(size_t)t->order[i] * d + k] >= centre[k]) << k;
    counts[q]++;
  }
  start[0] = 0;
  for (int q = 1; q < t->children; q++) start[q] = start[q - 1] + counts[q - 1];
  for (int64_t i = first; i < first + count; i++) {
    int q = 0;
    for (size_t k = 0; k < d; k++) q |= (x[(size_t)t->order[i] * d + k] >= centre[k]) << k;
    tmp[start[q]++] = t->order[i];
  }
  memcpy(t->order + first, tmp, (size_t)count * sizeof(int64_t));
  int64_t offset = first;
  for (int q = 0; q < t->children; q++) {
    if (!counts[q]) continue;
    double sub[MAX_DIM];
    for (size_t k = 0; k < d; k++) sub[k] = centre[k] + ((q >> k) & 1 ? 0.5 : -0.5) * half;
    int64_t child = build(t, sub, 0.5 * half, offset, counts[q], depth + 1, tmp);
    if (child < 0) return -1;
    t->cells[c].child[q] = child;
    offset += counts[q];
  }
  return c;
}

typedef struct {
  const bh_tree *t;
  nle_kernel kernel;
  double theta2; /* theta^2, compared with (2 half)^2 / D^2 */
  double *S, *Sx;
  double *S2;    /* Student-t pair: also the sums of K^2, with Sx of K^2 */
  /* Gaussian: log(N) - log(1e-16). A cell is skipped when each of its
   * points adds at most exp(-r^2) < 1e-16 / N of the sum so far, so that all
   * skipped points together change a sum by under 1e-16 of itself. Cells
   * beyond the reach of every point cost nothing then (EE's first 30
   * iterations on 70,000 points, whose long trial steps spread the map past
   * the FFT grid, 5.45 s to 4.9 s). */
  double gauss_cut;
} bh_job;

enum { BH_BLOCK = 256 };

/* Depth-first over the tree with an explicit stack (children in a fixed
 * order, so each point's sum is always accumulated the same way). */
static void bh_query(const bh_job *j, size_t i, int64_t *stack) {
  const bh_tree *t = j->t;
  size_t d = t->X->cols;
  const double *x = t->X->data, *xi = x + i * d;
  /* s: sums of K; s2 and sx: of the kernel the position sums use (K, or K^2
   * for the Student-t pair). */
  int pair = j->S2 != NULL, gauss = j->kernel == NLE_KERNEL_GAUSSIAN;
  double s_logged = 0.0, log_s = 0.0;
  double s = 0.0, s2 = 0.0, sx[MAX_DIM] = {0};
  int64_t top = 0;
  stack[top++] = 0;
  while (top) {
    const bh_cell *c = &t->cells[stack[--top]];
    double d2 = 0.0, side = 2.0 * c->half;
    for (size_t k = 0; k < d; k++) d2 += (xi[k] - c->com[k]) * (xi[k] - c->com[k]);
    if (gauss && s > 0.0) {
      /* each of the cell's points is at least `reach` away (the log of a sum
       * at most 2 times smaller than s, kept lazily, is on the safe side) */
      double reach = sqrt(d2) - side * sqrt((double)d);
      if (s > 2.0 * s_logged) {
        s_logged = s;
        log_s = log(s);
      }
      if (reach > 0.0 && reach * reach > j->gauss_cut - log_s) continue;
    }
    int leaf = 1;
    for (int q = 0; q < t->children; q++) leaf &= c->child[q] < 0;
    if (!leaf && side * side < j->theta2 * d2) { /* far enough: the cell as one mass */
      double k = nle__kernel_value(j->kernel, d2), w = pair ? k * k : k, count = (double)c->count;
      s += count * k;
      s2 += count * w;
      for (size_t e = 0; e < d; e++) sx[e] += count * w * c->com[e];
      continue;
    }
    if (leaf) {
      for (int64_t p = c->first; p < c->first + c->count; p++) {
        size_t m = (size_t)t->order[p];
        if (m == i) continue;
        double e2 = 0.0;
        for (size_t k = 0; k < d; k++) e2 += (xi[k] - x[m * d + k]) * (xi[k] - x[m * d + k]);
        double k = nle__kernel_value(j->kernel, e2), w = pair ? k * k : k;
        s += k;
        s2 += w;
        for (size_t e = 0; e < d; e++) sx[e] += w * x[m * d + e];
      }
      continue;
    }
    for (int q = t->children - 1; q >= 0; q--)
      if (c->child[q] >= 0) stack[top++] = c->child[q];
  }
  j->S[i] = s;
  if (pair) j->S2[i] = s2;
  if (j->Sx)
    for (size_t e = 0; e < d; e++) j->Sx[i * d + e] = sx[e];
}

/* Points are visited in the tree's order, so that neighbouring queries walk
 * the same cells while they are in cache (4x faster at N = 1e6 than index
 * order); each point's sum does not depend on the order. */
static int bh_block(void *job, size_t b, void *scratch) {
  const bh_job *j = job;
  size_t n = j->t->X->rows, i1 = (b + 1) * BH_BLOCK < n ? (b + 1) * BH_BLOCK : n;
  for (size_t p = b * BH_BLOCK; p < i1; p++) bh_query(j, (size_t)j->t->order[p], scratch);
  return 0;
}

static nle_status sums_bh(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, double theta, double *S, double *Sx,
                          double *S2) {
  nle_status s = nle__kernel_sums_check(ctx, X, kernel, "Barnes-Hut");
  if (s) return s;
  if (!(theta >= 0.0) || !isfinite(theta))
    return nle__fail(ctx, NLE_ERR_ARG, "Barnes-Hut: {@theta=%g} must be finite and >= 0", theta);
  size_t n = X->rows, d = X->cols;
  bh_tree t = {NULL, 0, 0, NULL, X, 1 << d};
  t.order = nle__malloc(ctx, n * sizeof(int64_t), "the Barnes-Hut tree");
  int64_t *tmp = nle__malloc(ctx, n * sizeof(int64_t), "the Barnes-Hut tree");
  if (!t.order || !tmp) s = NLE_ERR_NOMEM;
  double lo[MAX_DIM], hi[MAX_DIM], centre[MAX_DIM], half = 0.0;
  for (size_t k = 0; !s && k < d; k++) {
    lo[k] = INFINITY;
    hi[k] = -INFINITY;
    for (size_t i = 0; i < n; i++) {
      lo[k] = fmin(lo[k], X->data[i * d + k]);
      hi[k] = fmax(hi[k], X->data[i * d + k]);
    }
    centre[k] = 0.5 * (lo[k] + hi[k]);
    half = fmax(half, 0.5 * (hi[k] - lo[k]));
  }
  half = half > 0 ? half * (1.0 + 1e-12) : 1.0; /* every point strictly inside */
  for (size_t i = 0; !s && i < n; i++) t.order[i] = (int64_t)i;
  if (!s && build(&t, centre, half, 0, (int64_t)n, 0, tmp) < 0)
    s = nle__fail(ctx, NLE_ERR_NOMEM, "Barnes-Hut: out of memory for the tree");
  free(tmp);
  if (!s) {
    bh_job job = {&t, kernel, theta * theta, S, Sx, S2, log((double)n) - log(1e-16)};
    /* The stack holds at most (2^d - 1) cells per level plus one. */
    size_t stack = ((size_t)MAX_DEPTH + 2) * (size_t)t.children * sizeof(int64_t);
    s = nle__for_blocks(ctx, "Barnes-Hut", (n + BH_BLOCK - 1) / BH_BLOCK,
                        nle__threads_for(ctx, (double)n * 2000.0), stack, bh_block, &job);
  }
  free(t.cells);
  free(t.order);
  return s;
}

nle_status nle_kernel_sums_bh(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, double theta, double *S,
                              double *Sx) {
  return sums_bh(ctx, X, kernel, theta, S, Sx, NULL);
}

nle_status nle__kernel_sums_bh_student_pair(nle_ctx *ctx, const nle_matd *X, double theta, double *S, double *S2,
                                            double *S2x) {
  return sums_bh(ctx, X, NLE_KERNEL_STUDENT, theta, S, S2x, S2);
}
