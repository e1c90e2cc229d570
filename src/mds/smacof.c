/* smacof.c — metric, Sammon and non-metric MDS by SMACOF (de Leeuw 1977;
 * Borg and Groenen, "Modern Multidimensional Scaling", ch. 8-9): the
 * stress sum_{i<j} w_ij (delta_ij - d_ij(X))^2 is majorised at Z by the
 * quadratic tr X^T V X - 2 tr X^T B(Z) Z + const, V the Laplacian of the
 * weights and B(Z)_ij = -w_ij delta_ij / d_ij(Z), so any X that lowers the
 * quadratic lowers the stress: the iteration is monotone by construction.
 *   Unweighted: V+ = J / N, the Guttman transform X = B(Z) Z / N.
 *   Weighted (Sammon's w = 1/delta, or the user's): V X = B(Z) Z by
 *   conjugate gradients started at Z, preconditioned by V's diagonal. CG's
 *   iterates lower the quadratic from its value at Z, so even an inexact
 *   solve keeps the stress monotone, and no N x N pseudo-inverse is
 *   formed (it converges to the exact transform: up to N - 1 steps).
 *   Non-metric (slides "Non-Metric MDS"): the disparities are the
 *   pool-adjacent-violators fit of d(X) in the order of delta (ties:
 *   primary, each tie block in the order of d(X); secondary, pooled
 *   first), scaled to sum_{i<j} dhat^2 = N(N-1)/2, then one Guttman step
 *   towards them; its stress is Kruskal's stress-1 of d(X) and dhat.
 * Every pass is O(N^2 d) over the rows of the N x N matrix, in parallel,
 * summed in row order (the same bits for any number of threads). */
#include "mds_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS_PER_BLOCK = 32, CG_MAX_STEPS = 20 };
#define CG_TOL 1e-2

/* One pass over the rows at Z (d x n, transposed): G = B(Z) Z, the
 * weighted stress of each row, and (weighted) VZ = V Z. */
typedef struct {
  const nle__dissim *S;
  const float *delta; /* S->delta, or the disparities */
  bool weighted;
  size_t d;
  const double *Zt;
  double *G, *VZ, *row_stress;
} pass_job;

/* sum_j a_j b_j in fixed lanes (inlined into the clones below). */
static inline double lane_dot(const double *a, const double *b, size_t n) {
  double lane[NLE__LANES] = {0};
  size_t j = 0;
  for (; j + NLE__LANES <= n; j += NLE__LANES)
    for (size_t l = 0; l < NLE__LANES; l++) lane[l] += a[j + l] * b[j + l];
  for (size_t l = 0; j + l < n; l++) lane[l] += a[j + l] * b[j + l];
  return nle__lanes_total(lane);
}

/* Element j of a row's sums, in lane l: B(Z)'s off-diagonal c_j, the
 * stress and, weighted, the weights' sum. */
#define PASS_TERM(j, l)                                    \
  do {                                                     \
    double dist = sqrt(d2[j]), dl = drow[j];               \
    c[j] = dist > 0 ? dl / dist : 0.0;                     \
    ls[l] += (dl - dist) * (dl - dist);                    \
    lc[l] += c[j];                                         \
  } while (0)
#define PASS_TERM_WEIGHTED(j, l)                           \
  do {                                                     \
    double dist = sqrt(d2[j]), dl = drow[j];               \
    c[j] = dist > 0 ? w[j] * dl / dist : 0.0;              \
    ls[l] += w[j] * (dl - dist) * (dl - dist);             \
    lc[l] += c[j];                                         \
    lw[l] += w[j];                                         \
  } while (0)

NLE_HOT static void pass_row(const pass_job *p, size_t i, double *d2, double *c, double *w) {
  size_t n = p->S->n, d = p->d;
  const float *drow = p->delta + i * n;
  for (size_t j = 0; j < n; j++) d2[j] = 0.0;
  for (size_t t = 0; t < d; t++) {
    const double *z = p->Zt + t * n;
    double zi = z[i];
    for (size_t j = 0; j < n; j++) d2[j] += (zi - z[j]) * (zi - z[j]);
  }
  /* The row's sums in fixed lanes (NLE__LANES: the same bits in every
   * clone and for any thread count), vectorised. */
  double ls[NLE__LANES] = {0}, lc[NLE__LANES] = {0}, lw[NLE__LANES] = {0};
  size_t j = 0;
  if (!p->weighted) {
    for (; j + NLE__LANES <= n; j += NLE__LANES)
      for (size_t l = 0; l < NLE__LANES; l++) PASS_TERM(j + l, l);
    for (size_t l = 0; j + l < n; l++) PASS_TERM(j + l, l);
  } else {
    for (size_t q = 0; q < n; q++) w[q] = q == i ? 0.0 : nle__dissim_weight(p->S, i, q);
    for (; j + NLE__LANES <= n; j += NLE__LANES)
      for (size_t l = 0; l < NLE__LANES; l++) PASS_TERM_WEIGHTED(j + l, l);
    for (size_t l = 0; j + l < n; l++) PASS_TERM_WEIGHTED(j + l, l);
  }
  double stress = nle__lanes_total(ls), csum = nle__lanes_total(lc), wsum = nle__lanes_total(lw);
  if (!p->weighted) stress -= (double)drow[i] * drow[i]; /* j = i: delta 0, d 0 */
  p->row_stress[i] = stress;
  for (size_t t = 0; t < d; t++) {
    const double *z = p->Zt + t * n;
    p->G[i * d + t] = csum * z[i] - lane_dot(c, z, n);
    if (p->weighted) p->VZ[i * d + t] = wsum * z[i] - lane_dot(w, z, n);
  }
}

static int pass_block(void *job, size_t b, void *scratch) {
  pass_job *p = job;
  size_t n = p->S->n, i1 = (b + 1) * ROWS_PER_BLOCK < n ? (b + 1) * ROWS_PER_BLOCK : n;
  double *d2 = scratch, *c = d2 + n, *w = c + n;
  for (size_t i = b * ROWS_PER_BLOCK; i < i1; i++) pass_row(p, i, d2, c, w);
  return 0;
}

/* q = V v for the weights' Laplacian (v as n x d rows, Vt its transpose). */
typedef struct {
  const nle__dissim *S;
  size_t d;
  const double *vt, *degree;
  double *q;
} laplacian_job;

NLE_HOT static int laplacian_block(void *job, size_t b, void *scratch) {
  laplacian_job *p = job;
  size_t n = p->S->n, d = p->d, i1 = (b + 1) * ROWS_PER_BLOCK < n ? (b + 1) * ROWS_PER_BLOCK : n;
  double *w = scratch;
  for (size_t i = b * ROWS_PER_BLOCK; i < i1; i++) {
    for (size_t j = 0; j < n; j++) w[j] = j == i ? 0.0 : nle__dissim_weight(p->S, i, j);
    for (size_t t = 0; t < d; t++) {
      const double *v = p->vt + t * n;
      p->q[i * d + t] = p->degree[i] * v[i] - lane_dot(w, v, n);
    }
  }
  return 0;
}

static void transpose(const double *X, size_t n, size_t d, double *Xt) {
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) Xt[t * n + i] = X[i * d + t];
}

static void centre(double *X, size_t n, size_t d) {
  for (size_t t = 0; t < d; t++) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m += X[i * d + t];
    m /= (double)n;
    for (size_t i = 0; i < n; i++) X[i * d + t] -= m;
  }
}

static double dot(const double *a, const double *b, size_t len) {
  double s = 0;
  for (size_t e = 0; e < len; e++) s += a[e] * b[e];
  return s;
}

/* A run's working arrays. */
typedef struct {
  nle_ctx *ctx;
  const nle__dissim *S;
  size_t n, d;
  int threads;
  double *Zt, *G, *VZ, *row_stress, *degree;
  double *r, *z, *p, *q, *pt; /* CG */
} work;

static nle_status run_pass(work *wk, const double *Z, const float *delta, bool weighted, double *stress) {
  transpose(Z, wk->n, wk->d, wk->Zt);
  pass_job job = {wk->S, delta, weighted, wk->d, wk->Zt, wk->G, wk->VZ, wk->row_stress};
  nle_status s = nle__for_blocks(wk->ctx, NULL, (wk->n + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, wk->threads,
                                 3 * wk->n * sizeof(double), pass_block, &job);
  double total = 0;
  for (size_t i = 0; i < wk->n; i++) total += wk->row_stress[i];
  *stress = 0.5 * total; /* each pair counted from both rows */
  return s;
}

/* X: from Z (in X) towards the solution of V X = G by preconditioned CG. */
static nle_status cg_solve(work *wk, double *X) {
  size_t n = wk->n, d = wk->d, len = n * d;
  for (size_t e = 0; e < len; e++) wk->r[e] = wk->G[e] - wk->VZ[e];
  double r0 = sqrt(dot(wk->r, wk->r, len)), rz = 0;
  if (!(r0 > 0)) return NLE_OK;
  for (size_t e = 0; e < len; e++) wk->z[e] = wk->degree[e / d] > 0 ? wk->r[e] / wk->degree[e / d] : 0.0;
  centre(wk->z, n, d); /* J diag(V)^-1 J: the preconditioner on V's range */
  memcpy(wk->p, wk->z, len * sizeof(double));
  rz = dot(wk->r, wk->z, len);
  for (int step = 0; step < CG_MAX_STEPS; step++) {
    transpose(wk->p, n, d, wk->pt);
    laplacian_job lj = {wk->S, d, wk->pt, wk->degree, wk->q};
    nle_status s = nle__for_blocks(wk->ctx, NULL, (n + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, wk->threads,
                                   n * sizeof(double), laplacian_block, &lj);
    if (s) return s;
    double pq = dot(wk->p, wk->q, len);
    if (!(pq > 0)) break;
    double alpha = rz / pq;
    for (size_t e = 0; e < len; e++) X[e] += alpha * wk->p[e], wk->r[e] -= alpha * wk->q[e];
    if (sqrt(dot(wk->r, wk->r, len)) <= CG_TOL * r0) break;
    for (size_t e = 0; e < len; e++) wk->z[e] = wk->degree[e / d] > 0 ? wk->r[e] / wk->degree[e / d] : 0.0;
    centre(wk->z, n, d);
    double rz_new = dot(wk->r, wk->z, len), beta = rz_new / rz;
    rz = rz_new;
    for (size_t e = 0; e < len; e++) wk->p[e] = wk->z[e] + beta * wk->p[e];
  }
  return NLE_OK;
}

/* ---- non-metric: the pairs in the order of delta, and PAV ---- */

/* The pairs i < j as (i << 16) | j: non-metric MDS keeps N <= 65,536
 * (its O(N^2) pairs would not fit memory beyond). */
enum { PAIR_SHIFT = 16, PAIR_MASK = 0xffff, NONMETRIC_MAX_N = 65536, GUTTMAN_CHUNKS = 16, PAV_CHUNKS = 16 };

/* Stable LSD radix sort of the pairs by their (non-negative) float
 * dissimilarities: ties keep the (i, j) order. */
static nle_status sort_pairs(nle_ctx *ctx, const float *delta, size_t n, uint64_t pairs, uint32_t **order_out,
                             float **keys_out) {
  uint32_t *ord = nle__malloc(ctx, pairs * sizeof(uint32_t), "non-metric MDS's order"),
           *ord2 = nle__malloc(ctx, pairs * sizeof(uint32_t), "non-metric MDS's order");
  float *key = nle__malloc(ctx, pairs * sizeof(float), "non-metric MDS's order"),
        *key2 = nle__malloc(ctx, pairs * sizeof(float), "non-metric MDS's order");
  size_t *count = nle__malloc(ctx, 65537 * sizeof(size_t), "non-metric MDS's order");
  if (!ord || !ord2 || !key || !key2 || !count) {
    free(ord), free(ord2), free(key), free(key2), free(count);
    return NLE_ERR_NOMEM;
  }
  uint64_t p = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++, p++) ord[p] = (uint32_t)(i << PAIR_SHIFT | j), key[p] = delta[i * n + j];
  for (int pass = 0; pass < 2; pass++) {
    int shift = 16 * pass;
    memset(count, 0, 65537 * sizeof(size_t));
    for (uint64_t e = 0; e < pairs; e++) {
      uint32_t bits;
      memcpy(&bits, key + e, 4);
      count[((bits >> shift) & 0xffff) + 1]++;
    }
    for (size_t b = 1; b <= 65536; b++) count[b] += count[b - 1];
    for (uint64_t e = 0; e < pairs; e++) {
      uint32_t bits;
      memcpy(&bits, key + e, 4);
      size_t at = count[(bits >> shift) & 0xffff]++;
      ord2[at] = ord[e], key2[at] = key[e];
    }
    uint32_t *to = ord;
    ord = ord2, ord2 = to;
    float *tk = key;
    key = key2, key2 = tk;
  }
  free(ord2), free(key2), free(count);
  *order_out = ord, *keys_out = key;
  return NLE_OK;
}

typedef struct {
  double sum, weight;
} pav_block;

/* Pool-adjacent-violators on y[0..m) with weights w (NULL: 1): the
 * blocks of the fit on `stack` (their weighted sums and weights) and, when
 * ends is not NULL, where each block ends. */
static void pav(size_t m, const double *y, const double *w, pav_block *stack, size_t *ends, size_t *len_out) {
  if (!m) {
    *len_out = 0;
    return;
  }
  /* the open block in registers; finished blocks on the stack (a store
   * followed at once by its load would stall every step) */
  size_t top = 0, end = 1;
  double cs = y[0] * (w ? w[0] : 1.0), cw = w ? w[0] : 1.0;
  for (size_t e = 1; e < m; e++) {
    double nw = w ? w[e] : 1.0, ns = y[e] * nw;
    if (cs * nw <= ns * cw) { /* in order: close the open block */
      stack[top].sum = cs, stack[top].weight = cw;
      if (ends) ends[top] = end;
      top++;
      cs = ns, cw = nw;
    } else { /* a violation: pool, then with earlier blocks while they violate */
      cs += ns, cw += nw;
      while (top > 0 && stack[top - 1].sum * cw > cs * stack[top - 1].weight) {
        top--;
        cs += stack[top].sum, cw += stack[top].weight;
      }
    }
    end = e + 1;
  }
  stack[top].sum = cs, stack[top].weight = cw;
  if (ends) ends[top] = end;
  *len_out = top + 1;
}

void nle_isotonic(size_t n, const double *y, const double *w, double *z) {
  pav_block *stack = malloc(n * sizeof *stack);
  size_t *ends = malloc(n * sizeof *ends), top = 0;
  if (!stack || !ends) { /* no memory: z = y (a valid call never crashes) */
    free(stack), free(ends);
    if (z != y) memmove(z, y, n * sizeof *z);
    return;
  }
  pav(n, y, w, stack, ends, &top);
  size_t e = 0;
  for (size_t b = 0; b < top; b++) {
    double v = stack[b].weight > 0 ? stack[b].sum / stack[b].weight : y[e];
    for (; e < ends[b]; e++) z[e] = v;
  }
  free(stack), free(ends);
}

typedef struct {
  double d;
  uint32_t p;
} tie_item;

/* Non-metric state: the pairs in the order of delta, the tie blocks, the
 * distances d(X) and the disparities in that order. */
typedef struct {
  uint64_t pairs;
  uint32_t *order;
  float *dist;     /* d(X) */
  double *y;       /* the disparities */
  double *tw;      /* secondary: tie-block weights */
  size_t *tstart;  /* the tie blocks' starts (blocks + 1) */
  size_t blocks;
  pav_block *stack;
  double *block_mean; /* secondary: PAV's input, one per tie block */
  double scale;    /* dhat's scaling to sum dhat^2 = N (N - 1) / 2 */
  tie_item *ties;  /* primary: room for the largest tie block */
  double *parts;   /* the Guttman step's partial sums, one per chunk */
} nonmetric_state;

static int tie_cmp(const void *a, const void *b) {
  const tie_item *x = a, *y = b;
  return x->d < y->d ? -1 : x->d > y->d ? 1 : x->p < y->p ? -1 : x->p > y->p;
}

static nle_status nonmetric_init(nle_ctx *ctx, const nle__dissim *S, nle_mds_ties ties, size_t d,
                                 nonmetric_state *st) {
  size_t n = S->n;
  memset(st, 0, sizeof *st);
  st->pairs = (uint64_t)n * (n - 1) / 2;
  if (n > NONMETRIC_MAX_N)
    return nle__fail(ctx, NLE_ERR_ARG, "non-metric MDS: %zu points, over %d (its %llu pairs would not fit memory)", n,
                     NONMETRIC_MAX_N, (unsigned long long)st->pairs);
  nle_status s = nle__check_memory(ctx, (double)st->pairs * 40.0, "non-metric MDS's pairs");
  if (s) return s;
  float *keys = NULL;
  s = sort_pairs(ctx, S->delta, n, st->pairs, &st->order, &keys);
  if (s) return s;
  st->dist = nle__malloc(ctx, st->pairs * sizeof(float), "non-metric MDS's distances");
  st->y = nle__malloc(ctx, st->pairs * sizeof(double), "non-metric MDS's disparities");
  st->stack = nle__malloc(ctx, st->pairs * sizeof(pav_block), "non-metric MDS's PAV");
  st->parts = nle__malloc(ctx, GUTTMAN_CHUNKS * n * d * sizeof(double), "non-metric MDS's Guttman step");
  s = st->dist && st->y && st->stack && st->parts ? NLE_OK : NLE_ERR_NOMEM;
  /* the tie blocks: runs of equal dissimilarities */
  size_t blocks = 0;
  for (uint64_t e = 0; !s && e < st->pairs; e++)
    if (e == 0 || keys[e] != keys[e - 1]) blocks++;
  st->blocks = blocks;
  if (!s && (ties == NLE_TIES_SECONDARY || blocks < st->pairs)) {
    st->tstart = nle__malloc(ctx, (blocks + 1) * sizeof(size_t), "the tie blocks");
    st->tw = nle__malloc(ctx, (blocks ? blocks : 1) * sizeof(double), "the tie blocks");
    st->block_mean = nle__malloc(ctx, (blocks ? blocks : 1) * sizeof(double), "the tie blocks");
    if (!st->tstart || !st->tw || !st->block_mean) s = NLE_ERR_NOMEM;
    size_t b = 0;
    for (uint64_t e = 0; !s && e < st->pairs; e++)
      if (e == 0 || keys[e] != keys[e - 1]) st->tstart[b++] = e;
    if (!s) st->tstart[blocks] = st->pairs;
    size_t largest = 0;
    for (size_t k = 0; !s && k < blocks; k++)
      if (st->tstart[k + 1] - st->tstart[k] > largest) largest = st->tstart[k + 1] - st->tstart[k];
    if (!s && ties == NLE_TIES_PRIMARY && !(st->ties = nle__malloc(ctx, largest * sizeof(tie_item), "the tie blocks")))
      s = NLE_ERR_NOMEM;
  }
  free(keys);
  return s;
}

static void nonmetric_free(nonmetric_state *st) {
  free(st->order), free(st->dist), free(st->y), free(st->tw), free(st->tstart), free(st->stack), free(st->block_mean);
  free(st->parts), free(st->ties);
}

/* PAV of st->y in place, in parallel: each of PAV_CHUNKS fixed chunks
 * pooled on its own, then PAV over the chunks' blocks in order (a pool of
 * a chunk is a pool of the whole: the whole's level sets are unions of
 * the chunks'), then the levels written back, chunk by chunk; num[c] the
 * chunk's sum of (fit - y)^2. The same bits for any number of threads. */
static void chunked_pav(nonmetric_state *st, int threads, double *num) {
  uint64_t P = st->pairs;
  size_t blocks[PAV_CHUNKS];
#pragma omp parallel for schedule(static, 1) num_threads(threads)
  for (size_t c = 0; c < PAV_CHUNKS; c++) {
    uint64_t e0 = P * c / PAV_CHUNKS, e1 = P * (c + 1) / PAV_CHUNKS;
    pav(e1 - e0, st->y + e0, NULL, st->stack + e0, NULL, &blocks[c]);
  }
  size_t top = 0; /* the merge, in place: it never writes past what it has read */
  for (size_t c = 0; c < PAV_CHUNKS; c++) {
    const pav_block *b = st->stack + P * c / PAV_CHUNKS;
    for (size_t k = 0; k < blocks[c]; k++) {
      st->stack[top++] = b[k];
      while (top > 1 && st->stack[top - 2].sum * st->stack[top - 1].weight >
                            st->stack[top - 1].sum * st->stack[top - 2].weight) {
        st->stack[top - 2].sum += st->stack[top - 1].sum, st->stack[top - 2].weight += st->stack[top - 1].weight;
        top--;
      }
    }
  }
  /* each chunk's first block: where its first element falls */
  size_t first[PAV_CHUNKS];
  uint64_t start[PAV_CHUNKS], at = 0;
  for (size_t k = 0, c = 0; k < top && c < PAV_CHUNKS; k++) {
    uint64_t end = at + (uint64_t)st->stack[k].weight;
    while (c < PAV_CHUNKS && P * c / PAV_CHUNKS < end) first[c] = k, start[c] = at, c++;
    at = end;
  }
#pragma omp parallel for schedule(static, 1) num_threads(threads)
  for (size_t c = 0; c < PAV_CHUNKS; c++) {
    uint64_t e = P * c / PAV_CHUNKS, e1 = P * (c + 1) / PAV_CHUNKS, stop = start[c];
    double sq = 0;
    for (size_t k = first[c]; e < e1; k++) {
      double v = st->stack[k].sum / st->stack[k].weight;
      stop += (uint64_t)st->stack[k].weight;
      for (; e < e1 && e < stop; e++) sq += (v - st->y[e]) * (v - st->y[e]), st->y[e] = v;
    }
    num[c] = sq;
  }
}

/* The disparities of X: returns Kruskal's stress-1, st->y the fitted
 * disparities (their scaling in st->scale). */
static double nonmetric_disparities(nonmetric_state *st, const double *X, size_t d, nle_mds_ties ties, int threads) {
  uint64_t P = st->pairs;
  double sum_d2 = 0;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (uint64_t e = 0; e < P; e++) {
    size_t i = st->order[e] >> PAIR_SHIFT, j = st->order[e] & PAIR_MASK;
    double d2 = 0;
    for (size_t t = 0; t < d; t++) d2 += (X[i * d + t] - X[j * d + t]) * (X[i * d + t] - X[j * d + t]);
    st->y[e] = sqrt(d2);
  }
  if (ties == NLE_TIES_PRIMARY && st->ties) /* each tie block in the order of d(X) */
    for (size_t b = 0; b < st->blocks; b++) {
      size_t a = st->tstart[b], m = st->tstart[b + 1] - a;
      if (m < 2) continue;
      for (size_t e = 0; e < m; e++) st->ties[e].d = st->y[a + e], st->ties[e].p = st->order[a + e];
      qsort(st->ties, m, sizeof *st->ties, tie_cmp);
      for (size_t e = 0; e < m; e++) st->y[a + e] = st->ties[e].d, st->order[a + e] = st->ties[e].p;
    }
  double part_d2[PAV_CHUNKS] = {0}, part_num[PAV_CHUNKS] = {0}, part_h2[PAV_CHUNKS] = {0};
#pragma omp parallel for schedule(static, 1) num_threads(threads)
  for (size_t c = 0; c < PAV_CHUNKS; c++)
    for (uint64_t e = P * c / PAV_CHUNKS; e < P * (c + 1) / PAV_CHUNKS; e++)
      st->dist[e] = (float)st->y[e], part_d2[c] += st->y[e] * st->y[e];
  for (size_t c = 0; c < PAV_CHUNKS; c++) sum_d2 += part_d2[c];
  /* PAV: on the pairs (primary), or on the tie blocks' means (secondary) */
  size_t top;
  double num = 0, sum_h2 = 0;
  if (ties == NLE_TIES_SECONDARY) {
    for (size_t b = 0; b < st->blocks; b++) {
      double sum = 0;
      for (size_t e = st->tstart[b]; e < st->tstart[b + 1]; e++) sum += st->y[e];
      st->tw[b] = (double)(st->tstart[b + 1] - st->tstart[b]);
      st->block_mean[b] = sum / st->tw[b];
    }
    pav(st->blocks, st->block_mean, st->tw, st->stack, NULL, &top);
    size_t b = 0;
    for (size_t k = 0; k < top; k++) {
      double v = st->stack[k].sum / st->stack[k].weight, filled = 0;
      while (b < st->blocks && filled < st->stack[k].weight) {
        for (size_t e = st->tstart[b]; e < st->tstart[b + 1]; e++) {
          num += (v - st->y[e]) * (v - st->y[e]);
          st->y[e] = v;
        }
        filled += st->tw[b++];
      }
    }
  } else {
    chunked_pav(st, threads, part_num);
    for (size_t c = 0; c < PAV_CHUNKS; c++) num += part_num[c];
  }
#pragma omp parallel for schedule(static, 1) num_threads(threads)
  for (size_t c = 0; c < PAV_CHUNKS; c++)
    for (uint64_t e = P * c / PAV_CHUNKS; e < P * (c + 1) / PAV_CHUNKS; e++) part_h2[c] += st->y[e] * st->y[e];
  for (size_t c = 0; c < PAV_CHUNKS; c++) sum_h2 += part_h2[c];
  st->scale = sum_h2 > 0 ? sqrt((double)P / sum_h2) : 1.0;
  return sum_d2 > 0 ? sqrt(num / sum_d2) : NAN;
}

/* The Guttman step towards the disparities, pair by pair (each pair once):
 * G_i = sum_j (dhat_ij / d_ij) (x_i - x_j), in GUTTMAN_CHUNKS fixed chunks
 * of the pairs (their partial sums added in chunk order: the same bits for
 * any number of threads). */
typedef struct {
  const nonmetric_state *st;
  const double *X;
  size_t n, d;
} guttman_job;

static int guttman_chunk(void *job, size_t c, void *scratch) {
  (void)scratch;
  const guttman_job *g = job;
  const nonmetric_state *st = g->st;
  size_t d = g->d;
  double *G = st->parts + c * g->n * d;
  memset(G, 0, g->n * d * sizeof(double));
  uint64_t e0 = st->pairs * c / GUTTMAN_CHUNKS, e1 = st->pairs * (c + 1) / GUTTMAN_CHUNKS;
  for (uint64_t e = e0; e < e1; e++) {
    if (!(st->dist[e] > 0)) continue;
    size_t i = st->order[e] >> PAIR_SHIFT, j = st->order[e] & PAIR_MASK;
    double b = st->scale * st->y[e] / st->dist[e];
    for (size_t t = 0; t < d; t++) {
      double diff = b * (g->X[i * d + t] - g->X[j * d + t]);
      G[i * d + t] += diff, G[j * d + t] -= diff;
    }
  }
  return 0;
}

static nle_status nonmetric_step(nle_ctx *ctx, const nonmetric_state *st, double *X, size_t n, size_t d) {
  guttman_job job = {st, X, n, d};
  nle_status s = nle__for_blocks(ctx, NULL, GUTTMAN_CHUNKS, nle__threads_for(ctx, (double)st->pairs * 4), 0,
                                 guttman_chunk, &job);
  if (s) return s;
  for (size_t e = 0; e < n * d; e++) {
    double g = 0;
    for (size_t c = 0; c < GUTTMAN_CHUNKS; c++) g += st->parts[c * n * d + e];
    X[e] = g / (double)n;
  }
  return NLE_OK;
}

/* The spread of a random start of the dissimilarities' scale: its
 * coordinates N(0, sigma^2) give E d^2 = 2 d sigma^2 = mean delta^2. */
static double random_start_sigma(const nle__dissim *S, size_t d) {
  size_t n = S->n;
  double ss = 0;
  for (size_t e = 0; e < n * n; e++) ss += (double)S->delta[e] * S->delta[e];
  return sqrt(ss / ((double)n * (double)(n - 1)) / (2.0 * (double)d));
}

nle_status nle__mds_smacof(nle_ctx *ctx, bool nonmetric, const nle__dissim *S, const nle_mds_opts *o,
                           const nle_matd *start, nle_mds_result *r) {
  size_t n = S->n, d = (size_t)o->dim, len = n * d;
  bool weighted = !nonmetric && (S->weights || S->sammon);
  work wk = {ctx, S, n, d, nle__threads_for(ctx, (double)n * (double)n * (double)d), NULL, NULL, NULL, NULL, NULL,
             NULL, NULL, NULL, NULL, NULL};
  double *X = nle__malloc(ctx, len * sizeof(double), "SMACOF"), *best = nle__malloc(ctx, len * sizeof(double), "SMACOF");
  double *hist = nle__malloc(ctx, ((size_t)o->max_iter + 1) * sizeof(double), "SMACOF's history");
  wk.Zt = nle__malloc(ctx, len * sizeof(double), "SMACOF");
  wk.G = nle__malloc(ctx, len * sizeof(double), "SMACOF");
  wk.row_stress = nle__malloc(ctx, n * sizeof(double), "SMACOF");
  nle_status s = X && best && hist && wk.Zt && wk.G && wk.row_stress ? NLE_OK : NLE_ERR_NOMEM;
  if (!s && weighted) {
    wk.VZ = nle__malloc(ctx, len * sizeof(double), "SMACOF");
    wk.degree = nle__calloc(ctx, n, sizeof(double), "SMACOF");
    wk.r = nle__malloc(ctx, len * sizeof(double), "SMACOF");
    wk.z = nle__malloc(ctx, len * sizeof(double), "SMACOF");
    wk.p = nle__malloc(ctx, len * sizeof(double), "SMACOF");
    wk.q = nle__malloc(ctx, len * sizeof(double), "SMACOF");
    wk.pt = nle__malloc(ctx, len * sizeof(double), "SMACOF");
    if (!wk.VZ || !wk.degree || !wk.r || !wk.z || !wk.p || !wk.q || !wk.pt) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (size_t j = 0; j < n; j++)
        if (j != i) wk.degree[i] += nle__dissim_weight(S, i, j);
  }
  nonmetric_state st;
  memset(&st, 0, sizeof st);
  if (!s && nonmetric) s = nonmetric_init(ctx, S, o->ties, d, &st);
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(ctx), 0x736d6163ULL);
  double sigma = o->starts > 1 ? random_start_sigma(S, d) : 0.0;
  double best_stress = INFINITY;
  for (int run = 0; !s && run < o->starts; run++) {
    if (run == 0) memcpy(X, start->data, len * sizeof(double));
    else
      for (size_t e = 0; e < len; e++) X[e] = sigma * nle_rng_normal(&rng);
    centre(X, n, d);
    double prev = NAN, cur = NAN;
    int it = 0;
    for (;; it++) { /* the objective at X, then (unless done) the step */
      if (nonmetric) cur = nonmetric_disparities(&st, X, d, o->ties, wk.threads);
      else s = run_pass(&wk, X, S->delta, weighted, &cur);
      if (s) break;
      hist[it] = cur;
      if ((it > 0 && !(prev - cur >= o->tol * prev)) || it == o->max_iter) break;
      /* a later start is abandoned once its present rate of decrease, kept
       * up for every remaining iteration, would not take it below the best
       * start's stress (the decrease per iteration shrinks as SMACOF
       * converges) */
      if (run > 0 && it > 0 && cur - (prev - cur) * (double)(o->max_iter - it) > best_stress) {
        r->starts_abandoned++;
        break;
      }
      if (nonmetric) s = nonmetric_step(ctx, &st, X, n, d); /* one Guttman step towards dhat */
      else if (weighted) s = cg_solve(&wk, X);
      if (s) break;
      if (!weighted && !nonmetric)
        for (size_t e = 0; e < len; e++) X[e] = wk.G[e] / (double)n;
      prev = cur;
      s = nle__progress_inner(ctx, "SMACOF", ((double)run + (double)it / o->max_iter) / o->starts);
      if (s) break;
    }
    if (s) break;
    if (cur < best_stress) {
      best_stress = cur;
      memcpy(best, X, len * sizeof(double));
      free(r->history);
      r->history = nle__malloc(ctx, ((size_t)it + 1) * sizeof(double), "SMACOF's history");
      if (!r->history) {
        s = NLE_ERR_NOMEM;
        break;
      }
      memcpy(r->history, hist, ((size_t)it + 1) * sizeof(double));
      r->iterations = it;
      r->best_start = run;
      r->start_stress = hist[0];
    }
    r->starts_run = run + 1;
  }
  if (!s) {
    nle_matd_free(&r->X);
    s = nle_matd_alloc(ctx, n, d, &r->X);
  }
  if (!s) {
    memcpy(r->X->data, best, len * sizeof(double));
    r->raw_stress = nonmetric ? NAN : best_stress;
    if (nonmetric) r->stress1 = best_stress;
  }
  if (nonmetric) nonmetric_free(&st);
  free(X), free(best), free(hist), free(wk.Zt), free(wk.G), free(wk.row_stress), free(wk.VZ), free(wk.degree);
  free(wk.r), free(wk.z), free(wk.p), free(wk.q), free(wk.pt);
  return s;
}
