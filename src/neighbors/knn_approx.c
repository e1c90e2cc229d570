/* knn_approx.c — approximate k nearest neighbours: a forest of
 * random-projection trees gives every point candidates (all pairs within each
 * leaf), then NN-descent (Dong, Charikar and Li 2011) improves them by local
 * joins: a neighbour of a neighbour is likely a neighbour.
 *
 * Memory locality. At a million points the joins are bound by scattered
 * reads, not arithmetic: every offer of a pair reads the two points' heaps.
 * So the points are renumbered in the leaf order of the first tree (nearby
 * points get nearby numbers, their rows and heaps sit together), each heap's
 * bound (its largest distance) is kept in one dense array that the joins
 * test before touching a heap (4 bytes a point instead of a cache line per
 * heap), the sampling is cut into one stripe of points per thread (no
 * locks), and the rows a join will read are asked for one list ahead.
 *
 * Distances. A join's block of candidates gets its distances as tiles
 * vectorised across pairs (pair_distances), each pair's sum in one fixed
 * order, so a pair met in two blocks, or from either end, has one distance.
 * Offers to one target go in one batch under its lock.
 *
 * Determinism: a heap that keeps the k smallest (distance, index) pairs ends
 * with the same content whatever the order of the offers; with the offers
 * fixed (candidates sampled by a hash of (seed, iteration, u, v), not by
 * thread timing) and each pair's distance fixed, the graph is the same for
 * any number of threads. An entry once pushed out cannot come back (its key
 * is above the heap's bound from then on), so the entries inserted by a join
 * and their flags do not depend on the order either. Distances are
 * non-negative floats stored as their IEEE bit patterns, which order like the
 * numbers and can be read atomically. The search over ranks
 * (knn_approx_dist.c) rests on the same argument: it makes the same offers
 * from several processes, and the pieces here take the rows a search owns
 * (knn_approx_internal.h). */
#include "knn_approx_internal.h"

#include <cblas.h>
#include <float.h>
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

/* FLAG_INSERTED: entered during this join (new to the next sampling). */
enum { N_LOCKS = NLE__NND_LOCKS, FLAG_OLD = 0, FLAG_NEW = 1, FLAG_INSERTED = 2, NODE_BLOCK = NLE__NND_NODE_BLOCK };

static inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Spin locks striped over the points, a byte each: few enough to stay in
 * cache, many enough that two threads rarely meet; held for a scan of one
 * list, so spinning beats a mutex's call and sleep. */
typedef nnd_locks lock_set;

static void lock_init(lock_set *l) { memset(l->lock, 0, sizeof l->lock); }
static void lock_destroy(lock_set *l) { (void)l; }
static inline void lock_on(lock_set *l, int64_t u) {
  uint8_t *at = &l->lock[u & (N_LOCKS - 1)];
  while (__atomic_exchange_n(at, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(at, __ATOMIC_RELAXED)) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
}
static inline void lock_off(lock_set *l, int64_t u) { __atomic_store_n(&l->lock[u & (N_LOCKS - 1)], 0, __ATOMIC_RELEASE); }

typedef nnd_heaps heap_set;

static inline int entry_greater(uint32_t da, int32_t ia, uint32_t db, int32_t ib) {
  return da > db || (da == db && ia > ib);
}

/* Replaces the largest entry of the max-heap by (nd, ni, nf) and sifts it down. */
static void heap_replace_top(uint32_t *d, int32_t *ix, uint8_t *fl, int k, uint32_t nd, int32_t ni, uint8_t nf) {
  int p = 0;
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

/* Whether v is among the k indices: no early exit, so it vectorises. */
static inline int list_holds(const int32_t *ix, int k, int32_t v) {
  int found = 0;
  for (int t = 0; t < k; t++) found |= ix[t] == v;
  return found;
}

/* Offers v at squared distance bits to u's heap; 1 if it entered. The bound
 * is read without the lock: it only falls, so it can only let an offer
 * through to the test under the lock. */
static int heap_offer(heap_set *h, int64_t u, int32_t v, uint32_t bits) {
  if (bits > __atomic_load_n(&h->bound[u], __ATOMIC_RELAXED)) return 0;
  int k = h->k, entered = 0;
  uint32_t *d = h->dist + (u - h->lo) * k;
  int32_t *ix = h->idx + (u - h->lo) * k;
  lock_on(h->locks, u);
  if (entry_greater(d[0], ix[0], bits, v) && !list_holds(ix, k, v)) {
    heap_replace_top(d, ix, h->flag + (u - h->lo) * k, k, bits, v, FLAG_INSERTED);
    __atomic_store_n(&h->bound[u], d[0], __ATOMIC_RELAXED);
    entered = 1;
  }
  lock_off(h->locks, u);
  return entered;
}

typedef nnd_points points;

/* Measured on Fashion-MNIST, k = 90: the tiles win at D = 50, the GEMM
 * screen at D = 784. nle__knn_approx_wide_from sets it (tests take both
 * paths on the same data: the same graph). */
static size_t wide_from_d = 96;
void nle__knn_approx_wide_from(size_t d) { wide_from_d = d ? d : 96; }
size_t nle__nnd_wide_from(void) { return wide_from_d; }

/* Lists are padded to a multiple of PAIR_TILE for the distance tiles. */
enum { PAIR_TILE = 32 };
static size_t tile_up(size_t m) { return (m + PAIR_TILE - 1) / PAIR_TILE * PAIR_TILE; }

/* Squared distances of the first na rows of g (nb x d) to all nb, from gt
 * (g transposed, d x nbp): out[i * nbp + j] = sum over c in order of
 * (g[i][c] - g[j][c])^2. Each pair's sum is the same sequence of operations
 * wherever the pair sits and whichever end is the row (the squares of a - b
 * and b - a are equal), vectorised across pairs, never across the sum: a
 * pair met in two blocks, or from either end, has one distance, on every
 * instruction set. */
static inline void pair_distances(const float *g, const float *gt, int na, size_t nbp, size_t d, float *out) {
  for (int i = 0; i < na; i++)
    for (size_t j0 = 0; j0 < nbp; j0 += PAIR_TILE) {
      float acc[PAIR_TILE] = {0};
      for (size_t c = 0; c < d; c++) {
        float a = g[(size_t)i * d + c];
        const float *col = gt + c * nbp + j0;
        for (int t = 0; t < PAIR_TILE; t++) {
          float x = a - col[t];
          acc[t] += x * x;
        }
      }
      memcpy(out + (size_t)i * nbp + j0, acc, sizeof acc);
    }
}

/* Asks for what a join will read of point v (its row, heap and bound), so
 * that a list's scattered reads overlap; issued a list ahead. */
static inline void prefetch_point(const points *P, const heap_set *H, int32_t v) {
  const char *row = (const char *)(P->Yr + (size_t)v * P->d);
  for (size_t at = 0; at < P->d * sizeof(float); at += 64) __builtin_prefetch(row + at);
  if (v >= H->lo && v < H->hi) { /* another rank's row has no heap here */
    __builtin_prefetch(H->idx + (size_t)(v - H->lo) * H->k);
    __builtin_prefetch(H->dist + (size_t)(v - H->lo) * H->k);
  }
  __builtin_prefetch(H->bound + v);
}

/* pair_distances' sum for one pair. */
static float one_distance(const float *a, const float *b, size_t d) {
  float acc = 0.0f;
  for (size_t c = 0; c < d; c++) {
    float x = a[c] - b[c];
    acc += x * x;
  }
  return acc;
}

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* Appends an offer to another rank's row, unless the box saw the same pair
 * lately: a pair meets in the joins of several nearby points, and its
 * owner would turn the repeats away (one distance a pair), so a small
 * direct-mapped table of the pairs offered (cleared each round) keeps most
 * repeats out of the box and off the wire. A failed growth is remembered
 * (the round then fails on every rank). */
static void outbox_push(nnd_outbox *box, int32_t to, int32_t from, uint32_t bits) {
  uint64_t key = ((uint64_t)(uint32_t)to << 32 | (uint32_t)from) + 1, *seen = box->seen;
  if (seen) {
    uint64_t slot = mix64(key) & (NLE__NND_SEEN - 1);
    if (seen[slot] == key) return;
    seen[slot] = key;
  }
  if (box->count == box->cap) {
    size_t cap = box->cap * 2 + 1024;
    nnd_offer *at = box->failed ? NULL : realloc(box->at, cap * sizeof *at);
    if (!at) {
      box->failed = 1;
      return;
    }
    box->at = at;
    box->cap = cap;
  }
  box->at[box->count++] = (nnd_offer){to, from, bits};
}

/* The local join of a candidate list b of nb entries whose first na are new:
 * every pair with a new end, offered to both ends, each pair's distance
 * screened against the target's bound. A target's offers that pass go in
 * one batch under its lock; those to another rank's row (outside [H->lo,
 * H->hi)), screened by its bound at the round's start, go to box, or
 * nowhere when box is NULL (the forest: its owner sees the same leaf).
 * Scratch: join_scratch_floats. */
NLE_HOT static void join_lists(const points *P, heap_set *H, const int32_t *b, int na, int nb, float *scratch,
                               nnd_outbox *box) {
  size_t d = P->d, nbp = tile_up((size_t)nb);
  int k = H->k, wide = d >= P->wide_from;
  float *g = scratch, *gt = g + (size_t)nb * d, *out = gt + d * nbp, *sq = out + (size_t)na * nbp, *exact = sq + nb;
  int32_t *pass = (int32_t *)(exact + nb);
  for (int j = 0; j < nb; j++) memcpy(g + (size_t)j * d, P->Yr + (size_t)b[j] * d, d * sizeof(float));
  if (!wide) {
    for (int j = 0; j < nb; j++)
      for (size_t c = 0; c < d; c++) gt[c * nbp + (size_t)j] = g[(size_t)j * d + c];
    for (size_t c = 0; c < d; c++)
      for (size_t j = (size_t)nb; j < nbp; j++) gt[c * nbp + j] = 0.0f;
    pair_distances(g, gt, na, nbp, d, out);
  } else {
    /* Wide rows: the tiles' three operations per coordinate lose to a GEMM,
     * whose distances (rows taken about the list's first, so the sums stay
     * of the size of the distances) only screen: less their rounding bound,
     * a pair above the target's bound cannot enter; one that passes and is
     * not in the heap gets pair_distances' own sum (one_distance). */
    float *gc = gt;
    for (int j = 0; j < nb; j++) {
      float s = 0.0f;
      for (size_t c = 0; c < d; c++) {
        float x = g[(size_t)j * d + c] - g[c];
        gc[(size_t)j * d + c] = x;
        s += x * x;
      }
      sq[j] = s;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, na, nb, (int)d, -2.0f, gc, (int)d, gc, (int)d, 0.0f, out,
                (int)nbp);
    const float keep = 1.0f - (float)((8.0 * (double)d + 32.0) * FLT_EPSILON);
    for (int i = 0; i < na; i++)
      for (int j = 0; j < nb; j++) out[(size_t)i * nbp + j] += keep * (sq[i] + sq[j]);
  }
  for (int i = 0; i < nb; i++) {
    int32_t p = b[i];
    uint32_t bits_p = __atomic_load_n(&H->bound[p], __ATOMIC_RELAXED);
    float bound_p;
    memcpy(&bound_p, &bits_p, 4);
    /* out has the new targets' rows; an old target's column, and the new
     * sources only. The sources under the bound are listed without a branch
     * (which half of them would mispredict). */
    int j_end = i < na ? nb : na, npass = 0;
    const float *dist = i < na ? out + (size_t)i * nbp : out + i;
    size_t step = i < na ? 1 : nbp;
    for (int j = 0; j < j_end; j++) {
      pass[npass] = j;
      npass += (dist[(size_t)j * step] <= bound_p) & (b[j] != p);
    }
    if (!npass) continue;
    if (p < H->lo || p >= H->hi) { /* its owner tests them against the heap */
      for (int t = 0; box && t < npass; t++) {
        int j = pass[t];
        float dj = wide ? one_distance(g + (size_t)i * d, g + (size_t)j * d, d) : dist[(size_t)j * step];
        outbox_push(box, p, b[j], float_bits(dj));
      }
      continue;
    }
    uint32_t *hd = H->dist + (size_t)(p - H->lo) * k;
    int32_t *hi = H->idx + (size_t)(p - H->lo) * k;
    if (wide) { /* the screened: those not in the heap get their own distance */
      int kept = 0;
      lock_on(H->locks, p);
      for (int t = 0; t < npass; t++)
        if (!list_holds(hi, k, b[pass[t]])) pass[kept++] = pass[t];
      lock_off(H->locks, p);
      for (int t = 0; t < kept; t++)
        exact[t] = one_distance(g + (size_t)i * d, g + (size_t)pass[t] * d, d);
      npass = kept;
      if (!npass) continue;
    }
    /* the target's offers in one go under its lock: most are pairs already
     * known (neighbours of neighbours are neighbours), turned away by a scan
     * of the heap, which is in cache after the first */
    int entered = 0; /* counted after the join, by flag (settle_block) */
    lock_on(H->locks, p);
    for (int t = 0; t < npass; t++) {
      int j = pass[t];
      uint32_t bits = float_bits(wide ? exact[t] : dist[(size_t)j * step]);
      if (!entry_greater(hd[0], hi[0], bits, b[j]) || list_holds(hi, k, b[j])) continue;
      heap_replace_top(hd, hi, H->flag + (size_t)(p - H->lo) * k, k, bits, b[j], FLAG_INSERTED);
      entered++;
    }
    if (entered) __atomic_store_n(&H->bound[p], hd[0], __ATOMIC_RELAXED);
    lock_off(H->locks, p);
  }
}

/* ---- the random-projection forest ------------------------------------- */

typedef nnd_tree rp_tree;

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
int nle__nnd_tree_build(const points *P, int64_t n, int leaf_size, uint64_t seed, uint64_t tree, rp_tree *t,
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
      const float *a = P->Yr + (size_t)p[ia] * d, *b = P->Yr + (size_t)p[ib] * d;
      /* the side of the bisecting hyperplane from the offset to the
       * midpoint, which is as precise wherever the data sits (no centring) */
      float *centre = normal + d;
      for (size_t j = 0; j < d; j++) {
        normal[j] = a[j] - b[j];
        centre[j] = 0.5f * (a[j] + b[j]);
      }
      int64_t left = 0, right = m - 1;
      while (left <= right) { /* partition: positive margins first */
        const float *y = P->Yr + (size_t)p[left] * d;
        float margin = 0.0f; /* only the side matters: float SIMD is plenty */
#pragma omp simd reduction(+ : margin)
        for (size_t j = 0; j < d; j++) margin += normal[j] * (y[j] - centre[j]);
        int go_left = margin > 0.0f || (margin == 0.0f && (nle_rng_u64(&rng) & 1));
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
typedef nnd_cands cand_set;

/* Only the thread that owns u's stripe pushes to u's lists: no lock. u is
 * the row among the owned (from lo). */
static void cand_push(cand_set *c, int64_t u, int32_t v, uint64_t pri) {
  int mc = c->mc;
  int32_t *ix = c->idx + u * mc;
  uint64_t *pr = c->pri + u * mc;
  int n = c->count[u];
  if (n == mc && (pr[0] < pri || (pr[0] == pri && ix[0] < v))) return; /* above the kept: most pushes */
  if (!list_holds(ix, n, v)) {
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
}


/* Symmetric in (u, v): the pair reaches a list from either end with the
 * same priority, so which push comes first cannot matter. */
static inline uint64_t priority(uint64_t seed, uint64_t iter, int64_t u, int64_t v) {
  uint64_t a = (uint64_t)(u < v ? u : v), z = (uint64_t)(u < v ? v : u);
  return mix64(seed ^ mix64(iter * 0x9e3779b97f4a7c15ULL ^ (a << 32 ^ z)));
}
uint64_t nle__nnd_priority(uint64_t seed, uint64_t iter, int64_t u, int64_t v) { return priority(seed, iter, u, v); }

void nle__nnd_offer(nnd_heaps *H, int64_t u, int32_t v, uint32_t bits) { (void)heap_offer(H, u, v, bits); }
bool nle__nnd_entry_old(const nnd_heaps *H, int64_t u, int t) {
  return H->flag[(u - H->lo) * H->k + t] == FLAG_OLD;
}

/* Scratch of join_lists for lists of up to na and nb entries. */
static size_t join_scratch_floats(size_t na, size_t nb, size_t d) {
  return nb * d + (d + na) * tile_up(nb) + 3 * nb;
}
size_t nle__nnd_join_scratch_floats(size_t na, size_t nb, size_t d) { return join_scratch_floats(na, nb, d); }

/* The owned rows [lo, hi) of a job. */
static inline int owned(const nnd_job *j, int64_t u) { return u >= j->lo && u < j->hi; }

/* All pairs of each leaf of the forest with an owned end, offered to the
 * owned ends: the leaf's owned points first (the join's targets with every
 * source), the others after (sources only). Blocks are tree-major: block b
 * covers leaves [b * 64, ...) of tree b / blocks_per_tree. Scratch:
 * join_lists' and leaf_size indices. */
static int leaf_pairs(void *job, size_t b, void *scratch) {
  nnd_job *j = job;
  rp_tree *t = &j->trees[b / (size_t)j->leaf_blocks];
  int32_t *pts = (int32_t *)((float *)scratch + join_scratch_floats((size_t)j->leaf_size, (size_t)j->leaf_size, j->P->d));
  int64_t l0 = (int64_t)(b % (size_t)j->leaf_blocks) * 64, l1 = l0 + 64 < t->n_leaves ? l0 + 64 : t->n_leaves;
  for (int64_t l = l0; l < l1; l++) {
    const int32_t *leaf = t->perm + t->start[l];
    int m = (int)(t->start[l + 1] - t->start[l]), mine = 0;
    for (int q = 0; q < m; q++)
      if (owned(j, leaf[q])) pts[mine++] = leaf[q];
    if (!mine) continue;
    for (int q = 0, other = mine; q < m; q++)
      if (!owned(j, leaf[q])) pts[other++] = leaf[q];
    if (l + 1 < l1)
      for (int64_t q = t->start[l + 1]; q < t->start[l + 2]; q++) prefetch_point(j->P, j->H, t->perm[q]);
    join_lists(j->P, j->H, pts, mine, m, scratch, NULL);
  }
  return 0;
}

/* Samples this iteration's candidates: each heap entry goes to the new or
 * old list of both its ends, ranked by a hash. The owned points are cut into
 * one stripe per thread; a stripe's task reads every owned entry (and the
 * reverse candidates other ranks sent) and pushes to its own points' lists
 * only, so no list is shared and none needs a lock (the entries are read
 * sequentially, once per thread). */
static int sample_stripe(void *job, size_t stripe, void *scratch) {
  (void)scratch;
  nnd_job *j = job;
  int k = j->H->k;
  int64_t m = j->hi - j->lo;
  int64_t lo = j->lo + (int64_t)((double)stripe * (double)m / (double)j->stripes),
          hi = j->lo + (int64_t)((double)(stripe + 1) * (double)m / (double)j->stripes);
  for (int64_t u = j->lo; u < j->hi; u++) {
    int mine_u = u >= lo && u < hi;
    const int32_t *ix = j->H->idx + (u - j->lo) * k;
    const uint8_t *fl = j->H->flag + (u - j->lo) * k;
    for (int t = 0; t < k; t++) {
      int32_t v = ix[t];
      int mine_v = v >= lo && v < hi;
      if (v < 0 || !(mine_u | mine_v)) continue;
      uint64_t pri = priority(j->seed, j->iter, u, v);
      cand_set *c = fl[t] != FLAG_OLD ? j->fresh : j->old;
      if (mine_u) cand_push(c, u - j->lo, v, pri);
      if (mine_v) cand_push(c, v - j->lo, (int32_t)u, pri);
    }
  }
  for (size_t q = 0; q < j->n_received; q++) {
    const nnd_reverse *r = &j->received[q];
    int64_t v = (int64_t)(r->to_old & ~(uint32_t)NLE__NND_OLD_BIT);
    if (v >= lo && v < hi) cand_push(r->to_old & NLE__NND_OLD_BIT ? j->old : j->fresh, v - j->lo, r->from, r->pri);
  }
  return 0;
}

/* The owned rows [u0, u1) of node block b, as rows from lo. */
static inline void node_block(const nnd_job *j, size_t b, int64_t *r0, int64_t *r1) {
  *r0 = (int64_t)b * NODE_BLOCK;
  *r1 = *r0 + NODE_BLOCK < j->hi - j->lo ? *r0 + NODE_BLOCK : j->hi - j->lo;
}

/* New entries that were sampled into their own row's new list become old:
 * they are joined this iteration. */
static int age_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  nnd_job *j = job;
  int k = j->H->k, mc = j->fresh->mc;
  int64_t r0, r1;
  node_block(j, b, &r0, &r1);
  for (int64_t u = r0; u < r1; u++)
    for (int t = 0; t < k; t++)
      if (j->H->flag[u * k + t] != FLAG_OLD && list_holds(j->fresh->idx + u * mc, j->fresh->count[u], j->H->idx[u * k + t]))
        j->H->flag[u * k + t] = FLAG_OLD;
  return 0;
}

/* Local join at u: every pair (new, new) and (new, old) of u's candidates. */
static int join_block(void *job, size_t b, void *scratch) {
  nnd_job *j = job;
  int mc = j->fresh->mc, thread = 0;
#ifdef _OPENMP
  thread = omp_get_thread_num();
#endif
  nnd_outbox *box = j->outboxes ? &j->outboxes[thread] : NULL;
  int32_t all[2 * 512];
  int64_t u0, u1;
  node_block(j, b, &u0, &u1);
  for (int64_t u = u0; u < u1; u++) {
    if (u + 1 < u1 && j->fresh->count[u + 1]) {
      for (int t = 0; t < j->fresh->count[u + 1]; t++) prefetch_point(j->P, j->H, j->fresh->idx[(u + 1) * mc + t]);
      for (int t = 0; t < j->old->count[u + 1]; t++) prefetch_point(j->P, j->H, j->old->idx[(u + 1) * mc + t]);
    }
    int nn = j->fresh->count[u], no = j->old->count[u];
    if (nn == 0) continue;
    memcpy(all, j->fresh->idx + u * mc, (size_t)nn * sizeof(int32_t));
    memcpy(all + nn, j->old->idx + u * mc, (size_t)no * sizeof(int32_t));
    join_lists(j->P, j->H, all, nn, nn + no, scratch, box);
  }
  return 0;
}

/* Entries a join inserted become new; counts them per block. */
static int settle_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  nnd_job *j = job;
  int k = j->H->k;
  int64_t r0, r1, count = 0;
  node_block(j, b, &r0, &r1);
  for (int64_t q = r0 * k; q < r1 * k; q++)
    if (j->H->flag[q] == FLAG_INSERTED) {
      j->H->flag[q] = FLAG_NEW;
      count++;
    }
  j->inserted[b] = count;
  return 0;
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


NLE__DEFINE_SORT(pair_sort, nle__pair, nle__pair_greater)

void nle__nnd_exact_row(const float *Yr, size_t d, const nnd_heaps *H, const int32_t *order, int64_t u, int32_t *cols,
                        float *vals) {
  int k = H->k;
  nle__pair row[1024];
  const float *yu = Yr + (size_t)u * d;
  const int32_t *ix = H->idx + (u - H->lo) * k;
  for (int t = 0; t < k; t++) row[t] = (nle__pair){(double)(float)nle__sqdist_fd(yu, Yr + (size_t)ix[t] * d, d), order[ix[t]]};
  pair_sort(row, (size_t)k);
  for (int t = 0; t < k; t++) {
    cols[t] = (int32_t)row[t].i;
    vals[t] = (float)row[t].d;
  }
}

/* Sorted rows with exact distances (nle__sqdist_fd's, as the exact search
 * and the k-d tree give them: double accumulation, stored as float), back
 * in the input's numbering: row order[u] from heap u. Yr holds the input's
 * rows as they are, and reads in the search's order stay local. */
static void finalize_rows(const float *Yr, size_t d, const heap_set *H, const int32_t *order, nle_csr *g, int threads) {
  int k = H->k;
  for (int64_t u = 0; u <= g->rows; u++) g->rowptr[u] = u * k;
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads)
  for (int64_t u = 0; u < g->rows; u++) {
    int64_t r = order[u];
    nle__nnd_exact_row(Yr, d, H, order, u, g->colind + r * k, (float *)g->val + r * k);
  }
}

static void free_tree(rp_tree *t) {
  free(t->perm);
  free(t->start);
  t->perm = NULL;
  t->start = NULL;
}

void nle__nnd_free_trees(nnd_tree *trees, int n_trees) {
  for (int t = 0; trees && t < n_trees; t++) free_tree(&trees[t]);
  free(trees);
}

/* The data's rows in the leaf order of one tree (tree 0 of the forest):
 * order[new] = the input's row. Tree 0's leaves are then ranges of the new
 * numbering. A copy of the rows as they are (not centred: the splits and
 * distances use differences), so the exact distances at the end come from
 * it, read in the same local order. */
static nle_status rows_in_leaf_order(nle_ctx *ctx, const nle_matf *Y, int leaf_size, uint64_t seed, rp_tree *tree0,
                                     float **Yr, int32_t **order) {
  size_t n = Y->rows, d = Y->cols;
  float *normal = nle__malloc(ctx, 2 * d * sizeof(float), "a split");
  *Yr = nle__malloc(ctx, n * d * sizeof(float), "the reordered data");
  nle_status s = normal && *Yr ? NLE_OK : NLE_ERR_NOMEM;
  points P = {Y->data, d, wide_from_d};
  if (!s && nle__nnd_tree_build(&P, (int64_t)n, leaf_size, seed, 0, tree0, normal))
    s = nle__fail(ctx, NLE_ERR_NOMEM, "approximate kNN: out of memory building the trees");
  if (!s) {
    *order = tree0->perm;
    tree0->perm = NULL;
    int64_t nn = (int64_t)n;
#pragma omp parallel for schedule(static) num_threads(nle__threads_for(ctx, (double)n * d))
    for (int64_t i = 0; i < nn; i++) memcpy(*Yr + (size_t)i * d, Y->data + (size_t)(*order)[i] * d, d * sizeof(float));
    tree0->perm = nle__malloc(ctx, n * sizeof(int32_t), "a tree");
    if (!tree0->perm) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++) tree0->perm[i] = (int32_t)i;
  }
  free(normal);
  return s;
}

nle_status nle__nnd_check_request(nle_ctx *ctx, const nle_knn_approx_opts *opts, int64_t n, nle_knn_approx_opts *o) {
  if (n < 2) return nle__fail(ctx, NLE_ERR_ARG, "kNN needs at least 2 points, got %lld", (long long)n);
  if (opts->k < 1 || opts->k >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "{@neighbors=%d} must be at least 1 and below the number of points N = %lld", opts->k,
                     (long long)n);
  if (opts->k > 1024) return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN supports k <= 1024, not {@neighbors=%d} (the exact search takes any k)",
                                          opts->k);
  if (n > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "kNN supports at most 2^31 - 1 points");
  if (!(opts->delta >= 0.0)) return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN: delta must be >= 0");
  resolve_opts(opts, n, o);
  if (o->n_trees < 1 || o->leaf_size < 1 || o->max_candidates < 1 || o->max_iters < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "approximate kNN: {@trees=%s}, {@leaf-size=%s}, {@max-candidates=%s} and "
                     "iterations %s must be >= 1, or auto", nle__int_text(opts->n_trees).s,
                     nle__int_text(opts->leaf_size).s, nle__int_text(opts->max_candidates).s,
                     nle__int_text(opts->max_iters).s);
  if (o->max_candidates > 512) o->max_candidates = 512;
  return NLE_OK;
}

nle_status nle__nnd_alloc(nle_ctx *ctx, int k, int mc, int64_t lo, int64_t hi, int64_t n, nnd_heaps *H,
                          nnd_cands *fresh, nnd_cands *old) {
  size_t m = (size_t)(hi - lo) + 1; /* + 1: no zero-sized allocation on a rank without rows */
  *H = (nnd_heaps){k, lo, hi, nle__malloc(ctx, m * k * sizeof(int32_t), "heaps"),
                   nle__malloc(ctx, m * k * sizeof(uint32_t), "heap distances"), nle__calloc(ctx, m * k, 1, "heap flags"),
                   nle__malloc(ctx, (size_t)n * sizeof(uint32_t), "heap bounds"),
                   nle__malloc(ctx, sizeof(lock_set), "locks")};
  *fresh = (nnd_cands){mc, nle__malloc(ctx, m * mc * sizeof(int32_t), "candidates"),
                       nle__malloc(ctx, m * mc * sizeof(uint64_t), "priorities"),
                       nle__calloc(ctx, m, sizeof(int32_t), "counts")};
  *old = (nnd_cands){mc, nle__malloc(ctx, m * mc * sizeof(int32_t), "candidates"),
                     nle__malloc(ctx, m * mc * sizeof(uint64_t), "priorities"),
                     nle__calloc(ctx, m, sizeof(int32_t), "counts")};
  if (!H->idx || !H->dist || !H->flag || !H->bound || !H->locks || !fresh->idx || !fresh->pri || !fresh->count ||
      !old->idx || !old->pri || !old->count)
    return NLE_ERR_NOMEM;
  lock_init(H->locks);
  for (size_t q = 0; q < m * k; q++) {
    H->idx[q] = -1;
    H->dist[q] = float_bits(INFINITY);
  }
  for (int64_t u = 0; u < n; u++) H->bound[u] = float_bits(INFINITY);
  return NLE_OK;
}

static void release_cands(nnd_cands *c) {
  free(c->idx);
  free(c->pri);
  free(c->count);
  c->idx = NULL;
  c->pri = NULL;
  c->count = NULL;
}

void nle__nnd_release(nnd_heaps *H, nnd_cands *fresh, nnd_cands *old) {
  if (H) {
    if (H->locks) lock_destroy(H->locks);
    free(H->idx);
    free(H->dist);
    free(H->flag);
    free(H->bound);
    free(H->locks);
    *H = (nnd_heaps){H->k, H->lo, H->hi, NULL, NULL, NULL, NULL, NULL};
  }
  if (fresh) release_cands(fresh);
  if (old) release_cands(old);
}

/* Rows the leaves left short (tiny leaves) get random points. */
static nle_status fill_short_rows(nnd_job *job) {
  const float *Yr = job->P->Yr;
  size_t d = job->P->d;
  heap_set *H = job->H;
  int k = H->k;
  for (int64_t u = job->lo; u < job->hi; u++) {
    if (H->idx[(u - job->lo) * k] >= 0) continue;
    nle_rng rng;
    nle_rng_init(&rng, job->seed, 0x66696c6c00000000ULL + (uint64_t)u);
    for (int guard = 0; H->idx[(u - job->lo) * k] < 0 && guard < 64 * k; guard++) {
      int64_t v = (int64_t)nle_rng_below(&rng, (uint64_t)job->n);
      if (v != u) heap_offer(H, u, (int32_t)v, float_bits(one_distance(Yr + (size_t)u * d, Yr + (size_t)v * d, d)));
    }
    if (H->idx[(u - job->lo) * k] < 0)
      return nle__fail(job->ctx, NLE_ERR_NUMERIC, "approximate kNN: could not fill row %lld", (long long)u);
  }
  return NLE_OK;
}

nle_status nle__nnd_grow_forest(nnd_job *job, const nle_knn_approx_opts *o, int batch, double *t_built) {
  nle_ctx *ctx = job->ctx;
  const points *P = job->P;
  rp_tree *forest = job->trees;
  int64_t n = job->n;
  size_t d = P->d;
  int threads = job->stripes; /* a stripe a thread */
  nle_status s = NLE_OK;
  *t_built = 0.0;
  /* over ranks every batch is shared (share_trees agrees the ranks'
   * statuses), so a failure stops every rank at the same batch */
  for (int first = 0; (!s || job->rounds) && first < o->n_trees; first += batch) {
    int last = first + batch < o->n_trees ? first + batch : o->n_trees, failed = 0;
    double t0 = nle_time_seconds();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int t = first > 0 ? first : 1; t < last; t++) {
      if (s) continue;
      if (t % job->tree_ranks != job->tree_rank) continue; /* another rank's */
      float *normal = malloc(2 * d * sizeof(float));
      if (!normal || nle__nnd_tree_build(P, n, o->leaf_size, job->seed, (uint64_t)t, &forest[t], normal)) {
#pragma omp atomic write
        failed = 1;
      }
      free(normal);
    }
    if (failed) s = nle__fail(ctx, NLE_ERR_NOMEM, "approximate kNN: out of memory building the trees");
    if (job->rounds) s = job->rounds->share_trees(job, first, last, s);
    *t_built += nle_time_seconds() - t0;
    if (!s) {
      job->trees = forest + first;
      job->leaf_blocks = 0;
      for (int t = first; t < last; t++)
        if ((forest[t].n_leaves + 63) / 64 > job->leaf_blocks) job->leaf_blocks = (forest[t].n_leaves + 63) / 64;
      size_t scratch = join_scratch_floats((size_t)o->leaf_size, (size_t)o->leaf_size, d) * sizeof(float) +
                       (size_t)o->leaf_size * sizeof(int32_t);
      s = nle__for_blocks(ctx, "kNN forest", (size_t)job->leaf_blocks * (size_t)(last - first), threads, scratch,
                          leaf_pairs, job);
      job->trees = forest;
    }
    for (int t = first; t < last; t++) free_tree(&forest[t]);
  }
  if (!s) s = fill_short_rows(job);
  for (int64_t q = 0; !s && q < (job->hi - job->lo) * job->H->k; q++) job->H->flag[q] = FLAG_NEW;
  return s;
}

nle_status nle__nnd_descend(nnd_job *job, const nle_knn_approx_opts *o, int *it) {
  nle_ctx *ctx = job->ctx;
  int64_t n = job->n, m = job->hi - job->lo;
  int k = job->H->k, mc = job->fresh->mc, threads = job->stripes; /* a stripe a thread */
  size_t d = job->P->d, nblocks = (size_t)((m + NODE_BLOCK - 1) / NODE_BLOCK);
  const nnd_rounds *rounds = job->rounds;
  nle_status s = NLE_OK;
  for (; !s && *it < o->max_iters; (*it)++) {
    job->iter = (uint64_t)*it + 1;
    memset(job->fresh->count, 0, (size_t)m * sizeof(int32_t));
    memset(job->old->count, 0, (size_t)m * sizeof(int32_t));
    double ta = nle_time_seconds();
    if (rounds) s = rounds->before_sampling(job, s);
    if (!s) s = nle__for_blocks(ctx, "kNN sampling", (size_t)job->stripes, threads, 0, sample_stripe, job);
    double tb = nle_time_seconds();
    if (!s) s = nle__for_blocks(ctx, "kNN sampling", nblocks, threads, 0, age_block, job);
    double tc = nle_time_seconds();
    if (!s)
      s = nle__for_blocks(ctx, "kNN descent", nblocks, threads,
                          join_scratch_floats((size_t)mc, 2 * (size_t)mc, d) * sizeof(float), join_block, job);
    if (rounds) s = rounds->after_joins(job, s);
    double td = nle_time_seconds();
    if (!s) s = nle__for_blocks(ctx, "kNN descent", nblocks, threads, 0, settle_block, job);
    nle__log(ctx, 3, "NN-descent: sampling %.2f s, ageing %.2f s, joins %.2f s, settling %.2f s", tb - ta, tc - tb, td - tc, nle_time_seconds() - td);
    int64_t changed = 0;
    for (size_t b = 0; !s && b < nblocks; b++) changed += job->inserted[b];
    if (rounds) s = rounds->sum_changed(job, s, &changed);
    if (s) break;
    nle__log(ctx, 2, "NN-descent iteration %d: %lld of %lld entries changed", *it + 1, (long long)changed,
             (long long)(n * k));
    if ((double)changed <= o->delta * (double)n * k) {
      (*it)++;
      break;
    }
  }
  return s;
}

static nle_status approx_alone(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *opts, nle_csr **graph) {
  int64_t n = (int64_t)Y->rows;
  size_t d = Y->cols;
  nle_knn_approx_opts o;
  nle_status s = nle__nnd_check_request(ctx, opts, n, &o);
  if (s) return s;
  int k = o.k, mc = o.max_candidates;
  size_t nblocks = (size_t)((n + NODE_BLOCK - 1) / NODE_BLOCK);
  /* the reordered rows; heaps, bounds, candidate lists, the numbering, the
   * forest; per thread the join's scratch */
  double need = (double)n * (d * 4.0 + (double)k * 9 + 4 + 2.0 * mc * 12 + 8 + 4 + 8.0 * o.n_trees * 4) +
                (double)nle_ctx_threads(ctx) * (double)join_scratch_floats(2 * (size_t)mc, 2 * (size_t)mc, d) * 4;
  s = nle__check_memory(ctx, need, "approximate kNN");
  if (!s) s = nle__knn_check_range(ctx, Y, NULL);
  if (s) return s;

  double t0 = nle_time_seconds();
  uint64_t seed = nle_ctx_seed(ctx);
  int threads = nle__threads_for(ctx, (double)n * d * 50);
  rp_tree *trees = nle__calloc(ctx, (size_t)o.n_trees, sizeof(rp_tree), "the forest");
  float *Yr = NULL;
  int32_t *order = NULL;
  s = trees ? rows_in_leaf_order(ctx, Y, o.leaf_size, seed, &trees[0], &Yr, &order) : NLE_ERR_NOMEM;
  heap_set H;
  cand_set fresh, old;
  nle_status sa = nle__nnd_alloc(ctx, k, mc, 0, n, n, &H, &fresh, &old);
  int64_t *inserted = nle__calloc(ctx, nblocks, sizeof(int64_t), "join counts");
  if (!s && (sa || !inserted)) s = NLE_ERR_NOMEM;
  points P = {Yr, d, wide_from_d};
  nnd_job job = {ctx, &P, &H, &fresh, &old, trees, o.n_trees, o.leaf_size, n, 0, seed, 0, inserted, threads,
                 0, n, NULL, 0, NULL, NULL, 1, 0};

  double t_ordered = nle_time_seconds(), t_built = 0.0;
  if (!s) s = nle__nnd_grow_forest(&job, &o, o.n_trees, &t_built);
  double t_leaves = nle_time_seconds();

  /* NN-descent. */
  int it = 0;
  if (!s) s = nle__nnd_descend(&job, &o, &it);
  double t_descent = nle_time_seconds();
  if (!s) s = nle_csr_alloc(ctx, n, n, n * k, NLE_F32, graph);
  if (!s) finalize_rows(Yr, d, &H, order, *graph, threads);
  if (!s)
    nle__log(ctx, 2, "approximate kNN: reordering and forest %.2f s, leaves %.2f s, %d NN-descent iterations %.2f s, "
             "exact distances %.2f s", t_ordered - t0 + t_built, t_leaves - t_ordered - t_built, it,
             t_descent - t_leaves, nle_time_seconds() - t_descent);
  nle__nnd_free_trees(trees, o.n_trees);
  free(order);
  free(inserted);
  free(Yr);
  nle__nnd_release(&H, &fresh, &old);
  return s;
}

/* On rows shared out over ranks: knn_approx_dist.c. */
nle_status nle_knn_approx(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *opts, nle_csr **graph) {
  *graph = NULL;
  nle_knn_approx_opts defaults;
  if (!opts) {
    nle_knn_approx_opts_init(&defaults);
    opts = &defaults;
  }
  if (!nle__distributed(ctx)) return approx_alone(ctx, Y, opts, graph);
  return nle__knn_approx_dist(ctx, Y, opts, graph);
}
