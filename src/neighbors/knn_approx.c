/* knn_approx.c — approximate k nearest neighbours: a forest of
 * random-projection trees gives every point candidates (all pairs within each
 * leaf), then NN-descent (Dong, Charikar and Li 2011) improves them by local
 * joins: a neighbour of a neighbour is likely a neighbour. Distances of
 * gathered candidate blocks come from GEMM on centred data.
 *
 * Determinism: a heap that keeps the k smallest (distance, index) pairs ends
 * with the same content whatever the order of the offers, so with the offers
 * themselves fixed (candidates sampled by a hash of (seed, iteration, u, v),
 * not by thread timing) the graph is the same for any number of threads.
 * Distances are non-negative floats stored as their IEEE bit patterns, which
 * order like the numbers and can be read atomically for the lock-free
 * rejection test. */
#include "../core/internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void nle_knn_approx_opts_init(nle_knn_approx_opts *o) {
  o->k = 10;
  o->n_trees = NLE_AUTO;
  o->leaf_size = NLE_AUTO;
  o->max_candidates = NLE_AUTO;
  o->max_iters = NLE_AUTO;
  o->delta = 0.001;
}

enum { N_LOCKS = 4096, FLAG_OLD = 0, FLAG_NEW = 1 };

static inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Locks striped over the points: few enough to allocate, many enough that
 * two threads rarely meet. Without OpenMP they do nothing. */
typedef struct {
#ifdef _OPENMP
  omp_lock_t lock[N_LOCKS];
#else
  int unused;
#endif
} lock_set;

static void lock_init(lock_set *l) {
#ifdef _OPENMP
  for (int i = 0; i < N_LOCKS; i++) omp_init_lock(&l->lock[i]);
#else
  (void)l;
#endif
}
static void lock_destroy(lock_set *l) {
#ifdef _OPENMP
  for (int i = 0; i < N_LOCKS; i++) omp_destroy_lock(&l->lock[i]);
#else
  (void)l;
#endif
}
static inline void lock_on(lock_set *l, int64_t u) {
#ifdef _OPENMP
  omp_set_lock(&l->lock[u & (N_LOCKS - 1)]);
#else
  (void)l, (void)u;
#endif
}
static inline void lock_off(lock_set *l, int64_t u) {
#ifdef _OPENMP
  omp_unset_lock(&l->lock[u & (N_LOCKS - 1)]);
#else
  (void)l, (void)u;
#endif
}

/* Per point a max-heap of k (distance bits, index) entries with flags. */
typedef struct {
  int k;
  int32_t *idx;
  uint32_t *dist;
  uint8_t *flag;
  lock_set *locks;
} heap_set;

static inline int entry_greater(uint32_t da, int32_t ia, uint32_t db, int32_t ib) {
  return da > db || (da == db && ia > ib);
}

/* Puts (nd, ni, nf) at position p of the max-heap and sifts it down: p = 0
 * replaces the largest; p > 0 lowers that entry's key. */
static void sift_down_from(uint32_t *d, int32_t *ix, uint8_t *fl, int k, int p, uint32_t nd, int32_t ni,
                           uint8_t nf) {
  for (;;) {
    int l = 2 * p + 1, r = l + 1, m = p;
    uint32_t bd = nd;
    int32_t bi = ni;
    if (l < k && entry_greater(d[l], ix[l], bd, bi)) {
      m = l;
      bd = d[l];
      bi = ix[l];
    }
    if (r < k && entry_greater(d[r], ix[r], bd, bi)) m = r;
    if (m == p) break;
    d[p] = d[m];
    ix[p] = ix[m];
    fl[p] = fl[m];
    p = m;
  }
  d[p] = nd;
  ix[p] = ni;
  fl[p] = nf;
}

/* Offers v at squared distance dist to u's heap; 1 if it entered. */
static int heap_offer(heap_set *h, int64_t u, int32_t v, float dist) {
  int k = h->k;
  uint32_t *d = h->dist + u * k, bits = float_bits(dist > 0.0f ? dist : 0.0f);
  int32_t *ix = h->idx + u * k;
  if (!entry_greater(__atomic_load_n(&d[0], __ATOMIC_RELAXED), __atomic_load_n(&ix[0], __ATOMIC_RELAXED), bits, v))
    return 0;
  int entered = 0;
  lock_on(h->locks, u);
  if (entry_greater(d[0], ix[0], bits, v)) {
    int at = -1;
    for (int t = 0; t < k && at < 0; t++)
      if (ix[t] == v) at = t;
    if (at < 0) {
      sift_down_from(d, ix, h->flag + u * k, k, 0, bits, v, FLAG_NEW);
      entered = 1;
    } else if (bits < d[at]) {
      /* The same pair again from another GEMM block, a rounding lower: the
       * smaller is kept, so the stored distance (and the heap's bound) does
       * not depend on which offer came first. (Keeping the first made
       * 200,000-point graphs differ from run to run.) */
      sift_down_from(d, ix, h->flag + u * k, k, at, bits, v, h->flag[u * k + at]);
    }
  }
  lock_off(h->locks, u);
  return entered;
}

typedef struct {
  const float *Yc;    /* centred data */
  const float *sqn;   /* squared norms of the centred rows */
  size_t d;
} points;

/* Squared distances between the listed rows: out[i * nb + j] = |y_a[i] - y_b[j]|^2.
 * When b == a the block is gathered once. */
static void block_distances(const points *P, const int32_t *a, int na, const int32_t *b, int nb, float *ga,
                            float *gb, float *out) {
  size_t d = P->d;
  for (int i = 0; i < na; i++) memcpy(ga + (size_t)i * d, P->Yc + (size_t)a[i] * d, d * sizeof(float));
  if (b != a)
    for (int j = 0; j < nb; j++) memcpy(gb + (size_t)j * d, P->Yc + (size_t)b[j] * d, d * sizeof(float));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, na, nb, (int)d, -2.0f, ga, (int)d, b != a ? gb : ga, (int)d,
              0.0f, out, nb);
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++) out[i * nb + j] += P->sqn[a[i]] + P->sqn[b[j]];
}

/* ---- the random-projection forest ------------------------------------- */

typedef struct {
  int32_t *perm;     /* points, grouped by leaf */
  int64_t *start;    /* leaf l is perm[start[l] .. start[l + 1]) */
  int64_t n_leaves, cap;
} rp_tree;

static int push_leaf(rp_tree *t, int64_t end) {
  if (t->n_leaves + 2 > t->cap) {
    int64_t cap = t->cap * 2 + 64;
    int64_t *s = realloc(t->start, (size_t)cap * sizeof *s);
    if (!s) return -1;
    t->start = s;
    t->cap = cap;
  }
  t->start[++t->n_leaves] = end;
  return 0;
}

/* Splits by the hyperplane equidistant from two random points of the range
 * (ties and one-sided splits fall back to halving); leaves in DFS order. */
static int rp_tree_build(const points *P, int64_t n, int leaf_size, uint64_t seed, uint64_t tree, rp_tree *t,
                         float *normal) {
  nle_rng rng;
  nle_rng_init(&rng, seed, 0x7270747265650000ULL + tree);
  t->perm = malloc((size_t)n * sizeof(int32_t));
  t->start = NULL;
  t->n_leaves = 0;
  t->cap = 0;
  int64_t stack[2 * 128], top = 0;
  if (!t->perm || push_leaf(t, 0)) return -1;
  t->n_leaves = 0;
  t->start[0] = 0;
  for (int64_t i = 0; i < n; i++) t->perm[i] = (int32_t)i;
  stack[top++] = 0;
  stack[top++] = n;
  size_t d = P->d;
  while (top) {
    int64_t hi = stack[--top], lo = stack[--top];
    int32_t *p = t->perm + lo;
    int64_t m = hi - lo, mid = -1;
    if (m > leaf_size && top < 2 * 127) {
      int64_t ia = (int64_t)nle_rng_below(&rng, (uint64_t)m), ib = (int64_t)nle_rng_below(&rng, (uint64_t)m - 1);
      if (ib >= ia) ib++;
      const float *a = P->Yc + (size_t)p[ia] * d, *b = P->Yc + (size_t)p[ib] * d;
      double offset = 0.0;
      for (size_t j = 0; j < d; j++) {
        normal[j] = a[j] - b[j];
        offset += 0.5 * ((double)a[j] * a[j] - (double)b[j] * b[j]);
      }
      int64_t left = 0, right = m - 1;
      while (left <= right) { /* partition: positive margins first */
        const float *y = P->Yc + (size_t)p[left] * d;
        float dot = 0.0f; /* only the side matters: float SIMD is plenty */
#pragma omp simd reduction(+ : dot)
        for (size_t j = 0; j < d; j++) dot += normal[j] * y[j];
        double margin = (double)dot - offset;
        int go_left = margin > 0.0 || (margin == 0.0 && (nle_rng_u64(&rng) & 1));
        if (go_left) {
          left++;
        } else {
          int32_t tmp = p[left];
          p[left] = p[right];
          p[right--] = tmp;
        }
      }
      mid = left > 0 && left < m ? lo + left : lo + m / 2;
    }
    if (mid < 0) {
      /* A leaf; a range still too large (only when the stack is full) is cut
       * into leaf-sized pieces, since the leaf joins assume leaf_size. */
      for (int64_t end = lo + leaf_size; end < hi; end += leaf_size)
        if (push_leaf(t, end)) return -1;
      if (push_leaf(t, hi)) return -1;
    } else { /* right half pushed first so leaves come out left to right */
      stack[top++] = mid;
      stack[top++] = hi;
      stack[top++] = lo;
      stack[top++] = mid;
    }
  }
  return 0;
}

/* ---- NN-descent ----------------------------------------------------------- */

/* Candidate lists: per point up to mc indices with the smallest priorities
 * (a max-heap by priority), filled under the points' locks. */
typedef struct {
  int mc;
  int32_t *idx;
  uint64_t *pri;
  int32_t *count;
} cand_set;

static void cand_push(cand_set *c, lock_set *locks, int64_t u, int32_t v, uint64_t pri) {
  int mc = c->mc;
  int32_t *ix = c->idx + u * mc;
  uint64_t *pr = c->pri + u * mc;
  lock_on(locks, u);
  int n = c->count[u], present = 0;
  for (int t = 0; t < n && !present; t++) present = ix[t] == v;
  if (!present) {
    if (n < mc) { /* sift up */
      int q = n;
      while (q > 0 && (pr[(q - 1) / 2] < pri || (pr[(q - 1) / 2] == pri && ix[(q - 1) / 2] < v))) {
        pr[q] = pr[(q - 1) / 2];
        ix[q] = ix[(q - 1) / 2];
        q = (q - 1) / 2;
      }
      pr[q] = pri;
      ix[q] = v;
      c->count[u] = n + 1;
    } else if (pr[0] > pri || (pr[0] == pri && ix[0] > v)) { /* replace the largest, sift down */
      int q = 0;
      for (;;) {
        int l = 2 * q + 1, r = l + 1, m = q;
        uint64_t bp = pri;
        int32_t bi = v;
        if (l < mc && (pr[l] > bp || (pr[l] == bp && ix[l] > bi))) m = l, bp = pr[l], bi = ix[l];
        if (r < mc && (pr[r] > bp || (pr[r] == bp && ix[r] > bi))) m = r;
        if (m == q) break;
        pr[q] = pr[m];
        ix[q] = ix[m];
        q = m;
      }
      pr[q] = pri;
      ix[q] = v;
    }
  }
  lock_off(locks, u);
}

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

typedef struct {
  nle_ctx *ctx;
  const points *P;
  heap_set *H;
  cand_set *fresh, *old;
  rp_tree *trees;
  int n_trees, leaf_size;
  int64_t n, leaf_blocks; /* blocks of 64 leaves per tree */
  uint64_t seed, iter;
  size_t scratch_floats;
} nnd_job;

/* All pairs of one leaf of the forest. Blocks are tree-major: block b covers
 * leaves [b * 64, ...) of tree b / blocks_per_tree. */
static int leaf_pairs(void *job, size_t b, void *scratch) {
  nnd_job *j = job;
  rp_tree *t = &j->trees[b / (size_t)j->leaf_blocks];
  int64_t l0 = (int64_t)(b % (size_t)j->leaf_blocks) * 64, l1 = l0 + 64 < t->n_leaves ? l0 + 64 : t->n_leaves;
  float *ga = scratch, *out = ga + (size_t)j->leaf_size * j->P->d;
  for (int64_t l = l0; l < l1; l++) {
    const int32_t *pts = t->perm + t->start[l];
    int m = (int)(t->start[l + 1] - t->start[l]);
    block_distances(j->P, pts, m, pts, m, ga, NULL, out);
    for (int a = 0; a < m; a++)
      for (int c = a + 1; c < m; c++) {
        heap_offer(j->H, pts[a], pts[c], out[a * m + c]);
        heap_offer(j->H, pts[c], pts[a], out[a * m + c]);
      }
  }
  return 0;
}

/* Samples this iteration's candidates of the points in block b: each heap
 * entry goes to the new or old list of both its ends, ranked by a hash. */
enum { NODE_BLOCK = 512 };

static int sample_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  nnd_job *j = job;
  int k = j->H->k;
  int64_t u1 = (int64_t)(b + 1) * NODE_BLOCK < j->n ? (int64_t)(b + 1) * NODE_BLOCK : j->n;
  for (int64_t u = (int64_t)b * NODE_BLOCK; u < u1; u++)
    for (int t = 0; t < k; t++) {
      int32_t v = j->H->idx[u * k + t];
      if (v < 0) continue;
      /* Symmetric in (u, v): the pair reaches a list from either end with the
       * same priority, so which push comes first cannot matter. */
      uint64_t lo = (uint64_t)(u < v ? u : v), hi = (uint64_t)(u < v ? v : u);
      uint64_t pri = mix64(j->seed ^ mix64(j->iter * 0x9e3779b97f4a7c15ULL ^ (lo << 32 ^ hi)));
      cand_set *c = j->H->flag[u * k + t] ? j->fresh : j->old;
      cand_push(c, j->H->locks, u, v, pri);
      cand_push(c, j->H->locks, v, (int32_t)u, pri);
    }
  return 0;
}

static int cmp_index(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Local join at u: every pair (new, new) and (new, old) of u's candidates. */
static int join_block(void *job, size_t b, void *scratch) {
  nnd_job *j = job;
  int mc = j->fresh->mc;
  size_t d = j->P->d;
  float *ga = scratch, *gb = ga + (size_t)mc * d, *out = gb + 2 * (size_t)mc * d;
  int32_t all[2 * 512];
  int64_t u1 = (int64_t)(b + 1) * NODE_BLOCK < j->n ? (int64_t)(b + 1) * NODE_BLOCK : j->n;
  for (int64_t u = (int64_t)b * NODE_BLOCK; u < u1; u++) {
    int nn = j->fresh->count[u], no = j->old->count[u];
    if (nn == 0) continue;
    /* The lists are heaps whose layout follows the order of the pushes
     * (thread timing), and a pair's GEMM distance can differ in its last bit
     * with its place in the block: sorted, the block is the same every run. */
    int32_t fresh[512];
    memcpy(fresh, j->fresh->idx + u * mc, (size_t)nn * sizeof(int32_t));
    qsort(fresh, (size_t)nn, sizeof(int32_t), cmp_index);
    memcpy(all, fresh, (size_t)nn * sizeof(int32_t));
    memcpy(all + nn, j->old->idx + u * mc, (size_t)no * sizeof(int32_t));
    qsort(all + nn, (size_t)no, sizeof(int32_t), cmp_index);
    int m = nn + no;
    block_distances(j->P, fresh, nn, all, m, ga, gb, out);
    for (int a = 0; a < nn; a++)
      for (int c = a + 1; c < m; c++) {
        int32_t p = fresh[a], q = all[c];
        if (p == q) continue;
        float dist = out[a * m + c];
        heap_offer(j->H, p, q, dist);
        heap_offer(j->H, q, p, dist);
      }
  }
  return 0;
}

/* Per row, the entries as they were before a join, sorted by index, so the
 * flags after the join do not depend on the order of the offers: an entry
 * that was there keeps its flag, anything else is new. Returns the number of
 * new entries. */
typedef struct {
  int32_t idx;
  uint8_t flag;
} snapshot_entry;

static int snapshot_cmp(const void *a, const void *b) {
  int32_t x = ((const snapshot_entry *)a)->idx, y = ((const snapshot_entry *)b)->idx;
  return (x > y) - (x < y);
}

static void snapshot_take(const heap_set *H, int64_t n, snapshot_entry *snap) {
  int k = H->k;
  for (int64_t u = 0; u < n; u++) {
    for (int t = 0; t < k; t++) snap[u * k + t] = (snapshot_entry){H->idx[u * k + t], H->flag[u * k + t]};
    qsort(snap + u * k, (size_t)k, sizeof *snap, snapshot_cmp);
  }
}

static int64_t snapshot_apply(heap_set *H, int64_t n, const snapshot_entry *snap) {
  int k = H->k;
  int64_t changed = 0;
  for (int64_t u = 0; u < n; u++)
    for (int t = 0; t < k; t++) {
      snapshot_entry key = {H->idx[u * k + t], 0};
      const snapshot_entry *was = bsearch(&key, snap + u * k, (size_t)k, sizeof *snap, snapshot_cmp);
      H->flag[u * k + t] = was ? was->flag : FLAG_NEW;
      changed += !was;
    }
  return changed;
}

/* ---- the driver --------------------------------------------------------- */

static void resolve_opts(const nle_knn_approx_opts *o, int64_t n, nle_knn_approx_opts *r) {
  *r = *o;
  /* Measured on Fashion-MNIST (bench/knn_approx.sh): the GEMM local joins
   * need fewer trees and smaller samples than the usual 5 + N^(1/4) and 60
   * for recall above 0.999 at k = 90; at k = 10 a sample capped at k loses
   * recall (0.973 against 0.987 with 30 on the raw pixels). */
  if (r->n_trees == NLE_AUTO) r->n_trees = (int)fmin(32.0, 4.0 + round(0.5 * pow((double)n, 0.25)));
  if (r->leaf_size == NLE_AUTO) r->leaf_size = r->k > 60 ? r->k : 60;
  if (r->max_candidates == NLE_AUTO) r->max_candidates = 30;
  if (r->max_iters == NLE_AUTO) r->max_iters = (int)fmax(5.0, round(log2((double)n)));
}


/* Sorted rows with exact distances (double accumulation, stored as float). */
static void finalize_rows(const nle_matf *Y, const heap_set *H, nle_csr *g, int threads) {
  int k = H->k;
  size_t d = Y->cols;
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads)
  for (int64_t u = 0; u < g->rows; u++) {
    nle__pair row[1024];
    g->rowptr[u + 1] = (u + 1) * k;
    for (int t = 0; t < k; t++) {
      int32_t v = H->idx[u * k + t];
      double s = 0.0;
      for (size_t c = 0; c < d; c++) {
        double x = (double)Y->data[(size_t)u * d + c] - Y->data[(size_t)v * d + c];
        s += x * x;
      }
      row[t] = (nle__pair){(double)(float)s, v};
    }
    qsort(row, (size_t)k, sizeof *row, nle__pair_cmp);
    for (int t = 0; t < k; t++) {
      g->colind[u * k + t] = (int32_t)row[t].i;
      ((float *)g->val)[u * k + t] = (float)row[t].d;
    }
  }
}

nle_status nle_knn_approx(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *opts, nle_csr **graph) {
  *graph = NULL;
  nle_knn_approx_opts defaults, o;
  if (!opts) {
    nle_knn_approx_opts_init(&defaults);
    opts = &defaults;
  }
  int64_t n = (int64_t)Y->rows;
  size_t d = Y->cols;
  if (n < 2) return nle__fail(ctx, NLE_ERR_ARG, "kNN needs at least 2 points, got %lld", (long long)n);
  if (opts->k < 1 || opts->k >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and below the number of points N = %lld", opts->k,
                     (long long)n);
  if (opts->k > 1024) return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN supports k <= 1024, not {@neighbors=%d} (the exact search takes any k)",
                                          opts->k);
  if (n > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "kNN supports at most 2^31 - 1 points");
  if (!(opts->delta >= 0.0)) return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN: delta must be >= 0");
  resolve_opts(opts, n, &o);
  if (o.n_trees < 1 || o.leaf_size < 1 || o.max_candidates < 1 || o.max_iters < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN: {@trees=%s}, {@leaf-size=%s}, {@max-candidates=%s} and "
                     "iterations %s must be >= 1, or auto", nle__int_text(opts->n_trees).s,
                     nle__int_text(opts->leaf_size).s, nle__int_text(opts->max_candidates).s,
                     nle__int_text(opts->max_iters).s);
  if (o.max_candidates > 512) o.max_candidates = 512;
  int k = o.k, mc = o.max_candidates;
  double need = (double)n * (d * 4.0 + 4 + (double)k * 17 + 2.0 * mc * 12 + 8.0 * o.n_trees * 4) +
                (double)nle_ctx_threads(ctx) * ((double)o.leaf_size * (d + o.leaf_size) + 3.0 * mc * (d + 2 * mc)) * 4;
  nle_status s = nle__check_memory(ctx, need, "approximate kNN");
  if (!s) s = nle__knn_check_range(ctx, Y, NULL);
  if (s) return s;

  float *Yc = nle__malloc(ctx, (size_t)n * d * sizeof(float), "the centred data");
  float *sqn = nle__malloc(ctx, (size_t)n * sizeof(float), "squared norms");
  double *mean = nle__calloc(ctx, d, sizeof(double), "the mean");
  heap_set H = {k, nle__malloc(ctx, (size_t)n * k * sizeof(int32_t), "heaps"),
                nle__malloc(ctx, (size_t)n * k * sizeof(uint32_t), "heap distances"),
                nle__calloc(ctx, (size_t)n * k, 1, "heap flags"), nle__malloc(ctx, sizeof(lock_set), "locks")};
  cand_set fresh = {mc, nle__malloc(ctx, (size_t)n * mc * sizeof(int32_t), "candidates"),
                    nle__malloc(ctx, (size_t)n * mc * sizeof(uint64_t), "priorities"),
                    nle__calloc(ctx, (size_t)n, sizeof(int32_t), "counts")};
  cand_set old = {mc, nle__malloc(ctx, (size_t)n * mc * sizeof(int32_t), "candidates"),
                  nle__malloc(ctx, (size_t)n * mc * sizeof(uint64_t), "priorities"),
                  nle__calloc(ctx, (size_t)n, sizeof(int32_t), "counts")};
  rp_tree *trees = nle__calloc(ctx, (size_t)o.n_trees, sizeof(rp_tree), "the forest");
  snapshot_entry *snap = nle__malloc(ctx, (size_t)n * k * sizeof(snapshot_entry), "heap snapshots");
  if (!Yc || !sqn || !mean || !H.idx || !H.dist || !H.flag || !H.locks || !fresh.idx || !fresh.pri ||
      !fresh.count || !old.idx || !old.pri || !old.count || !trees || !snap)
    s = NLE_ERR_NOMEM;
  int locks_ready = 0;
  if (!s) {
    lock_init(H.locks);
    locks_ready = 1;
    for (int64_t i = 0; i < n; i++)
      for (size_t c = 0; c < d; c++) mean[c] += Y->data[(size_t)i * d + c];
    for (size_t c = 0; c < d; c++) mean[c] /= (double)n;
    for (int64_t i = 0; i < n; i++) {
      double sq = 0.0;
      for (size_t c = 0; c < d; c++) {
        float v = (float)((double)Y->data[(size_t)i * d + c] - mean[c]);
        Yc[(size_t)i * d + c] = v;
        sq += (double)v * v;
      }
      sqn[i] = (float)sq;
    }
    for (int64_t q = 0; q < n * k; q++) {
      H.idx[q] = -1;
      H.dist[q] = float_bits(INFINITY);
    }
  }
  points P = {Yc, sqn, d};
  int threads = nle__threads_for(ctx, (double)n * d * 50);
  uint64_t seed = nle_ctx_seed(ctx);
  nnd_job job = {ctx, &P, &H, &fresh, &old, trees, o.n_trees, o.leaf_size, n, 0, seed, 0, 0};

  /* The forest: trees in parallel (one stream each), then all leaf pairs. */
  if (!s) {
    int failed = 0;
    int blas_prev = nle__blas_set_threads(1);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int t = 0; t < o.n_trees; t++) {
      float *normal = malloc(d * sizeof(float));
      if (!normal || rp_tree_build(&P, n, o.leaf_size, seed, (uint64_t)t, &trees[t], normal)) {
#pragma omp atomic write
        failed = 1;
      }
      free(normal);
    }
    nle__blas_set_threads(blas_prev);
    if (failed) s = nle__fail(ctx, NLE_ERR_NOMEM, "approximate kNN: out of memory building the trees");
  }
  if (!s) {
    for (int t = 0; t < o.n_trees; t++)
      if ((trees[t].n_leaves + 63) / 64 > job.leaf_blocks) job.leaf_blocks = (trees[t].n_leaves + 63) / 64;
    s = nle__for_blocks(ctx, "kNN forest", (size_t)job.leaf_blocks * (size_t)o.n_trees, threads,
                        ((size_t)o.leaf_size * d + (size_t)o.leaf_size * o.leaf_size) * sizeof(float), leaf_pairs,
                        &job);
  }
  /* Rows the leaves left short (tiny leaves) get random points. */
  for (int64_t u = 0; !s && u < n; u++) {
    if (H.idx[u * k] >= 0) continue;
    nle_rng rng;
    nle_rng_init(&rng, seed, 0x66696c6c00000000ULL + (uint64_t)u);
    for (int guard = 0; H.idx[u * k] < 0 && guard < 64 * k; guard++) {
      int64_t v = (int64_t)nle_rng_below(&rng, (uint64_t)n);
      if (v == u) continue;
      const float *a = Yc + (size_t)u * d, *b = Yc + (size_t)v * d;
      double s2 = 0.0;
      for (size_t c = 0; c < d; c++) s2 += ((double)a[c] - b[c]) * ((double)a[c] - b[c]);
      heap_offer(&H, u, (int32_t)v, (float)s2);
    }
    if (H.idx[u * k] < 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "approximate kNN: could not fill row %lld", (long long)u);
  }
  for (int64_t q = 0; !s && q < n * k; q++) H.flag[q] = FLAG_NEW;

  /* NN-descent. */
  size_t nblocks = (size_t)((n + NODE_BLOCK - 1) / NODE_BLOCK);
  for (int it = 0; !s && it < o.max_iters; it++) {
    job.iter = (uint64_t)it + 1;
    memset(fresh.count, 0, (size_t)n * sizeof(int32_t));
    memset(old.count, 0, (size_t)n * sizeof(int32_t));
    s = nle__for_blocks(ctx, "kNN sampling", nblocks, threads, 0, sample_block, &job);
    if (s) break;
    /* New entries that were sampled from their own row become old. */
    for (int64_t u = 0; u < n; u++)
      for (int t = 0; t < k; t++) {
        if (H.flag[u * k + t] != FLAG_NEW) continue;
        const int32_t *c = fresh.idx + u * mc;
        for (int q = 0; q < fresh.count[u]; q++)
          if (c[q] == H.idx[u * k + t]) {
            H.flag[u * k + t] = FLAG_OLD;
            break;
          }
      }
    snapshot_take(&H, n, snap);
    s = nle__for_blocks(ctx, "kNN descent", nblocks, threads, (3 * (size_t)mc * d + 2 * (size_t)mc * mc) * sizeof(float),
                        join_block, &job);
    if (s) break;
    int64_t changed = snapshot_apply(&H, n, snap);
    nle__log(ctx, 2, "NN-descent iteration %d: %lld of %lld entries changed", it + 1, (long long)changed,
             (long long)(n * k));
    if ((double)changed <= o.delta * (double)n * k) break;
  }
  if (!s) s = nle_csr_alloc(ctx, n, n, n * k, NLE_F32, graph);
  if (!s) finalize_rows(Y, &H, *graph, threads);
  if (locks_ready) lock_destroy(H.locks);
  for (int t = 0; trees && t < o.n_trees; t++) {
    free(trees[t].perm);
    free(trees[t].start);
  }
  free(trees);
  free(snap);
  free(Yc);
  free(sqn);
  free(mean);
  free(H.idx);
  free(H.dist);
  free(H.flag);
  free(H.locks);
  free(fresh.idx);
  free(fresh.pri);
  free(fresh.count);
  free(old.idx);
  free(old.pri);
  free(old.count);
  return s;
}
