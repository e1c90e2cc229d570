/* knn_approx_internal.h — the approximate search's pieces (knn_approx.c)
 * that its driver alone and its driver over ranks (knn_approx_dist.c) both
 * run: the trees, the heaps, the sampling, the joins. A search owns the
 * rows [lo, hi) of the N in the leaf-order numbering (alone: all of them):
 * it holds their heaps and candidate lists; offers to other rows are
 * dropped (the forest, whose leaves every rank sees) or put in an outbox
 * for their owner (the joins). */
#ifndef NLE_KNN_APPROX_INTERNAL_H
#define NLE_KNN_APPROX_INTERNAL_H

#include "neighbors_internal.h"

enum { NLE__NND_LOCKS = 1 << 16, NLE__NND_NODE_BLOCK = 512 };

/* Spin locks striped over the points, a byte each. */
typedef struct {
  uint8_t lock[NLE__NND_LOCKS];
} nnd_locks;

/* Per owned point a max-heap of k (distance bits, index) entries with
 * flags (row u at (u - lo) * k); bound[u] each heap's largest distance, for
 * every point u of the N: live for the owned rows, as they stood at the
 * round's start for the others (gathered each round). */
typedef struct {
  int k;
  int64_t lo, hi;
  int32_t *idx;
  uint32_t *dist;
  uint8_t *flag;
  uint32_t *bound;
  nnd_locks *locks;
} nnd_heaps;

typedef struct {
  const float *Yr;  /* the data, rows in the search's numbering */
  size_t d;
  size_t wide_from; /* from this dimension the joins screen by GEMM */
} nnd_points;

typedef struct {
  int32_t *perm;  /* points, grouped by leaf */
  int64_t *start; /* leaf l is perm[start[l] .. start[l + 1]) */
  int64_t n_leaves, cap;
} nnd_tree;

/* Candidate lists of the owned points (row u at u - lo): up to mc indices
 * with the smallest priorities. */
typedef struct {
  int mc;
  int32_t *idx;
  uint64_t *pri;
  int32_t *count;
} nnd_cands;

/* An offer of `from` at distance bits to the heap of `to` (another rank's
 * row), and a reverse candidate: `from` for the list of `to` (the high bit
 * set: the old list) at priority pri. */
typedef struct {
  int32_t to, from;
  uint32_t bits;
} nnd_offer;
typedef struct {
  uint32_t to_old;
  int32_t from;
  uint64_t pri;
} nnd_reverse;
enum { NLE__NND_OLD_BIT = 1u << 31 };

/* A growing list of offers, one per thread, and the pairs it was offered
 * lately (NLE__NND_SEEN keys, 0 for none; NULL: no such table). */
enum { NLE__NND_SEEN = 1 << 15 };
typedef struct {
  nnd_offer *at;
  size_t count, cap;
  int failed;
  uint64_t *seen;
} nnd_outbox;

typedef struct nnd_job nnd_job;
/* What a search over ranks does between the stages of a round (NULL alone). */
typedef struct {
  /* Each is called on every rank with the rank's status so far, agrees it
   * over the ranks first, and returns the agreed one. */
  nle_status (*before_sampling)(nnd_job *job, nle_status s); /* the bounds, the reverse candidates */
  nle_status (*after_joins)(nnd_job *job, nle_status s);     /* the offers to other ranks' rows */
  nle_status (*sum_changed)(nnd_job *job, nle_status s, int64_t *changed);
  /* Trees [first, last) of the forest, each built by one rank, to every rank. */
  nle_status (*share_trees)(nnd_job *job, int first, int last, nle_status s);
  void *user;
} nnd_rounds;

struct nnd_job {
  nle_ctx *ctx;
  const nnd_points *P;
  nnd_heaps *H;
  nnd_cands *fresh, *old;
  nnd_tree *trees;
  int n_trees, leaf_size;
  int64_t n, leaf_blocks; /* blocks of 64 leaves per tree */
  uint64_t seed, iter;
  int64_t *inserted;      /* per block: entries a join's block left as FLAG_INSERTED */
  int stripes;            /* of the sampling: one a thread */
  int64_t lo, hi;         /* the owned rows */
  const nnd_reverse *received; /* reverse candidates for owned rows from other ranks */
  size_t n_received;
  nnd_outbox *outboxes;   /* per thread: the joins' offers to other ranks' rows (NULL: alone) */
  const nnd_rounds *rounds;
  int tree_ranks, tree_rank; /* tree t is built here when t % tree_ranks == tree_rank */
};

/* The request checked and its automatic choices resolved. */
nle_status nle__nnd_check_request(nle_ctx *ctx, const nle_knn_approx_opts *opts, int64_t n, nle_knn_approx_opts *o);
/* The joins' choice of screening for rows of d dimensions. */
size_t nle__nnd_wide_from(void);
/* Tree `tree` of the forest over the n rows of P (normal: 2 d floats). */
int nle__nnd_tree_build(const nnd_points *P, int64_t n, int leaf_size, uint64_t seed, uint64_t tree, nnd_tree *t,
                        float *normal);
void nle__nnd_free_trees(nnd_tree *trees, int n_trees);
/* Heaps and lists for the rows [lo, hi), bounds for all n; free with
 * nle__nnd_release (any of its arguments may be NULL; what it frees is
 * left NULL). */
nle_status nle__nnd_alloc(nle_ctx *ctx, int k, int mc, int64_t lo, int64_t hi, int64_t n, nnd_heaps *H,
                          nnd_cands *fresh, nnd_cands *old);
void nle__nnd_release(nnd_heaps *H, nnd_cands *fresh, nnd_cands *old);
/* The forest (job->trees[0] built, the rows renumbered in its leaf order)
 * grown `batch` trees at a time (over ranks: each built by one, shared by
 * rounds->share_trees), each batch's leaf pairs offered to the owned rows,
 * then freed; short rows filled. *t_built: seconds building and sharing. */
nle_status nle__nnd_grow_forest(nnd_job *job, const nle_knn_approx_opts *o, int batch, double *t_built);
/* NN-descent's rounds; *it: how many ran. */
nle_status nle__nnd_descend(nnd_job *job, const nle_knn_approx_opts *o, int *it);
/* The sampling's priority of the pair (u, v) (symmetric). */
uint64_t nle__nnd_priority(uint64_t seed, uint64_t iter, int64_t u, int64_t v);
/* Offers v at distance bits to the owned row u's heap (FLAG_INSERTED). */
void nle__nnd_offer(nnd_heaps *H, int64_t u, int32_t v, uint32_t bits);
/* Whether entry t of owned row u is old. */
bool nle__nnd_entry_old(const nnd_heaps *H, int64_t u, int t);
/* Owned row u's k neighbours sorted by exact distance (nle__sqdist_fd),
 * their indices mapped through order (the input's numbering). */
void nle__nnd_exact_row(const float *Yr, size_t d, const nnd_heaps *H, const int32_t *order, int64_t u, int32_t *cols,
                        float *vals);
/* The search over ranks (knn_approx_dist.c): Y this rank's canonical rows,
 * the graph its rows with global column indices, the same bits as alone. */
nle_status nle__knn_approx_dist(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *opts, nle_csr **graph);
/* Scratch of a join of lists up to na and nb entries, in floats. */
size_t nle__nnd_join_scratch_floats(size_t na, size_t nb, size_t d);

#endif
