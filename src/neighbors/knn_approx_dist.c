/* knn_approx_dist.c — the approximate kNN search (knn_approx.c: a forest,
 * then NN-descent) on rows shared out over ranks (issue 38, docs/mpi.md),
 * the same graph as the search alone.
 *
 * Why the same bits: the search alone is already free of order within a
 * round (knn_approx.c's header): candidates are sampled by a hash from the
 * heaps as they stood at the round's start, every pair's distance is one
 * fixed sum, and a heap keeping the k least (distance, index) pairs ends
 * with the same content whatever the order of its offers. So ranks that
 * make the same offers, in any order, end with the same heaps.
 *
 * Who holds what. The rows (N x D floats) are gathered on every rank: the
 * one N-sized array of the search, 4 D bytes a point (200 B at t-SNE's 50
 * components: 20 GB at 100 million points, where it stops fitting; the
 * remedy then is to pass the rows of the joins' candidates, not all rows).
 * Beside it, N x 4 bytes each for the numbering and the heaps' bounds, and
 * a batch of trees (N x 4 each: one per thread of each rank) while the
 * forest grows. Everything else, the heaps (k x 9 B a point) and the
 * candidate lists (2 mc x 12 B), is held for the owned points only. Tree 0 is built alike on every rank from the
 * gathered rows and renumbers them in its leaf order, as alone; rank r
 * owns the renumbered points nle__rank_rows(N, R, r), so a point's nearby
 * points, and most of a join's offers, sit on its rank.
 *
 * A round: the bounds of every heap gathered (N x 4 bytes); each owned
 * heap entry (u, v) sampled into u's list here, and into v's list where v
 * lives (the reverse candidates sent to v's owner, which pushes them with
 * its own: a list keeps the mc least priorities of the same pushes, so the
 * same lists); the joins for the owned points, offers to other ranks' rows
 * screened by those rows' bounds at the round's start (a bound only falls,
 * so the screen lets through at least what the heap would take), most
 * repeated pairs dropped, and sent to their owners, who offer them to their heaps before the round's
 * entries are counted (exactly, nle__comm_sum_i64). Tree t of the forest
 * is built by rank t mod R and broadcast (4 bytes a point: building every
 * tree on every rank took 6% of the search at 2 ranks, 10% at 4, on
 * 70,000 x 50), and each rank offers only its leaves' pairs with an owned
 * end to the owned ends, which the owner of the other end does too. At the
 * end each owned row gets its exact distances and goes, in the input's
 * numbering, to the rank holding that input row. */
#include "knn_approx_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int ranks, me;
  size_t *begin;          /* ranks + 1: where each rank's owned rows begin */
  void *received;         /* the reverse candidates of this round */
  size_t *count;          /* ranks: items for each rank */
  size_t *offset;         /* 3 ranks: the next item's slot, the bytes' offsets and sizes for each rank */
  size_t *recv_offsets;   /* ranks + 1: where each rank's items arrived */
  int threads;
  uint64_t offers_sent, reverse_sent;
} dist_state;

static int owner_of(const dist_state *st, int64_t v) {
  int lo = 0, hi = st->ranks - 1;
  while (lo < hi) { /* the last rank whose rows begin at or before v */
    int mid = (lo + hi + 1) / 2;
    if ((int64_t)st->begin[mid] <= v) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* Items of `size` bytes grouped by destination rank, st->count[r] for rank
 * r (counted by the caller): each rank's first slot, and the bytes'
 * offsets and sizes for nle__comm_alltoallv. */
static void layout(dist_state *st, size_t size) {
  size_t at = 0;
  for (int r = 0; r < st->ranks; r++) {
    st->offset[r] = at;
    st->offset[st->ranks + r] = at * size;
    st->offset[2 * st->ranks + r] = st->count[r] * size;
    at += st->count[r];
  }
}

/* Sends the items laid out by layout; *recv (free it) what arrived, in
 * st->recv_offsets. */
static nle_status send_items(nle_ctx *ctx, dist_state *st, const void *send, void **recv) {
  return nle__comm_alltoallv(ctx, send, st->offset + st->ranks, st->offset + 2 * st->ranks, recv, st->recv_offsets);
}

/* The round's start: every heap's bound, and the reverse candidates of the
 * owned heaps' entries whose other end lives elsewhere, sent there. */
static nle_status before_sampling(nnd_job *job, nle_status s) {
  dist_state *st = (dist_state *)job->rounds->user;
  nle_ctx *ctx = job->ctx;
  const nnd_heaps *H = job->H;
  int k = H->k;
  free(st->received);
  st->received = NULL;
  job->received = NULL;
  job->n_received = 0;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgather_rows(ctx, H->bound + job->lo, (size_t)job->n, sizeof(uint32_t), H->bound);
  if (s) return s;
  memset(st->count, 0, (size_t)st->ranks * sizeof(size_t));
  for (int64_t q = 0; q < (job->hi - job->lo) * k; q++) {
    int32_t v = H->idx[q];
    if (v >= 0 && (v < job->lo || v >= job->hi)) st->count[owner_of(st, v)]++;
  }
  size_t total = 0;
  layout(st, sizeof(nnd_reverse));
  for (int r = 0; r < st->ranks; r++) total += st->count[r];
  nnd_reverse *send = nle__malloc(ctx, (total ? total : 1) * sizeof *send, "reverse candidates");
  s = nle__comm_agree(ctx, send ? NLE_OK : NLE_ERR_NOMEM);
  if (s) {
    free(send);
    return s;
  }
  for (int64_t u = job->lo; u < job->hi; u++)
    for (int t = 0; t < k; t++) {
      int32_t v = H->idx[(u - job->lo) * k + t];
      if (v < 0 || (v >= job->lo && v < job->hi)) continue;
      uint32_t old = nle__nnd_entry_old(H, u, t) ? NLE__NND_OLD_BIT : 0;
      send[st->offset[owner_of(st, v)]++] =
          (nnd_reverse){(uint32_t)v | old, (int32_t)u, nle__nnd_priority(job->seed, job->iter, u, v)};
    }
  s = send_items(ctx, st, send, &st->received);
  st->reverse_sent += total * sizeof *send;
  free(send);
  if (!s) {
    job->received = st->received;
    job->n_received = st->recv_offsets[st->ranks] / sizeof(nnd_reverse);
  }
  return s;
}

/* The threads' offers in the first outbox, grouped by the rank owning
 * their targets (in place, a bucket at a time: no second buffer), counted
 * in st->count and laid out for send_items; the boxes' tables of pairs
 * seen cleared for the next round. */
static nle_status merge_outboxes(nle_ctx *ctx, dist_state *st, nnd_outbox *boxes, size_t *count) {
  size_t total = 0;
  for (int t = 0; t < st->threads; t++) {
    total += boxes[t].count;
    if (boxes[t].seen) memset(boxes[t].seen, 0, NLE__NND_SEEN * sizeof *boxes[t].seen);
  }
  if (total > boxes[0].cap) {
    nnd_offer *at = realloc(boxes[0].at, total * sizeof *at);
    if (!at) return nle__fail(ctx, NLE_ERR_NOMEM, "approximate kNN: out of memory for offers");
    boxes[0].at = at;
    boxes[0].cap = total;
  }
  for (int t = 1; t < st->threads; t++) {
    if (boxes[t].count) memcpy(boxes[0].at + boxes[0].count, boxes[t].at, boxes[t].count * sizeof *boxes[t].at);
    boxes[0].count += boxes[t].count;
    boxes[t].count = 0;
  }
  nnd_offer *at = boxes[0].at;
  memset(st->count, 0, (size_t)st->ranks * sizeof(size_t));
  for (size_t q = 0; q < total; q++) st->count[owner_of(st, at[q].to)]++;
  layout(st, sizeof(nnd_offer));
  /* st->offset[r]: the next slot of rank r's bucket; an item out of place
   * is swapped into its own bucket's next slot */
  for (int r = 0; r < st->ranks; r++) {
    size_t end = st->offset[st->ranks + r] / sizeof(nnd_offer) + st->count[r];
    while (st->offset[r] < end) {
      int o = owner_of(st, at[st->offset[r]].to);
      if (o == r) {
        st->offset[r]++;
        continue;
      }
      nnd_offer x = at[st->offset[o]];
      at[st->offset[o]++] = at[st->offset[r]];
      at[st->offset[r]] = x;
    }
  }
  *count = total;
  return NLE_OK;
}

/* After the joins: their offers to other ranks' rows go to the owners,
 * which offer them to their heaps. */
static nle_status after_joins(nnd_job *job, nle_status s) {
  dist_state *st = (dist_state *)job->rounds->user;
  nle_ctx *ctx = job->ctx;
  size_t total = 0;
  for (int t = 0; t < st->threads; t++)
    if (job->outboxes[t].failed && !s) s = nle__fail(ctx, NLE_ERR_NOMEM, "approximate kNN: out of memory for offers");
  if (!s) s = merge_outboxes(ctx, st, job->outboxes, &total);
  s = nle__comm_agree(ctx, s);
  static const nnd_offer none; /* an empty box has no buffer to send from */
  const nnd_offer *send = job->outboxes[0].at ? job->outboxes[0].at : &none;
  void *recv = NULL;
  if (!s) s = send_items(ctx, st, send, &recv);
  for (int t = 0; t < st->threads; t++) job->outboxes[t].count = 0;
  st->offers_sent += s ? 0 : total * sizeof *send;
  if (!s) {
    const nnd_offer *got = recv;
    size_t m = st->recv_offsets[st->ranks] / sizeof *got;
    for (size_t q = 0; q < m; q++) nle__nnd_offer(job->H, got[q].to, got[q].from, got[q].bits);
  }
  free(recv);
  return s;
}

static nle_status sum_changed(nnd_job *job, nle_status s, int64_t *changed) {
  s = nle__comm_agree(job->ctx, s);
  return s ? s : nle__comm_sum_i64(job->ctx, changed, 1);
}

/* Tree 0 over the gathered rows, whose leaf order renumbers them: the rows
 * are moved into it in place (following the permutation's cycles, one row
 * aside), so the gathered rows are the only copy; tree 0's leaves become
 * ranges of the new numbering. order[new] = the input's row. */
static nle_status rows_in_leaf_order(nle_ctx *ctx, float *rows, size_t n, size_t d, int leaf_size, uint64_t seed,
                                     nnd_tree *tree0, int32_t **order) {
  float *normal = nle__malloc(ctx, 2 * d * sizeof(float), "a split"), *aside = nle__malloc(ctx, d * sizeof(float), "a row");
  uint8_t *placed = nle__calloc(ctx, n, 1, "the renumbering");
  nle_status s = normal && aside && placed ? NLE_OK : NLE_ERR_NOMEM;
  nnd_points P = {rows, d, nle__nnd_wide_from()};
  if (!s && nle__nnd_tree_build(&P, (int64_t)n, leaf_size, seed, 0, tree0, normal))
    s = nle__fail(ctx, NLE_ERR_NOMEM, "approximate kNN: out of memory building the trees");
  if (!s) {
    *order = tree0->perm;
    tree0->perm = nle__malloc(ctx, n * sizeof(int32_t), "a tree");
    if (!tree0->perm) s = NLE_ERR_NOMEM;
  }
  for (size_t i = 0; !s && i < n; i++) {
    tree0->perm[i] = (int32_t)i;
    if (placed[i]) continue;
    memcpy(aside, rows + i * d, d * sizeof(float));
    size_t j = i;
    for (;;) { /* row j receives the input's row order[j] */
      size_t from = (size_t)(*order)[j];
      placed[j] = 1;
      if (from == i) {
        memcpy(rows + j * d, aside, d * sizeof(float));
        break;
      }
      memcpy(rows + j * d, rows + from * d, d * sizeof(float));
      j = from;
    }
  }
  free(normal);
  free(aside);
  free(placed);
  return s;
}

/* The owned rows' exact lists as records (the input's row, k columns, k
 * distances) grouped by the rank holding that input row (the input's rows
 * are shared out as the renumbered ones: owner_of), laid out for
 * send_items. */
static nle_status pack_rows(nle_ctx *ctx, dist_state *st, const nnd_job *job, const int32_t *order, int threads,
                            char **send) {
  int k = job->H->k;
  int64_t m = job->hi - job->lo;
  size_t rec = sizeof(int32_t) * (1 + 2 * (size_t)k);
  *send = nle__malloc(ctx, (size_t)(m ? m : 1) * rec, "the graph's rows");
  int64_t *slot = nle__malloc(ctx, (size_t)(m ? m : 1) * sizeof *slot, "the graph's rows");
  nle_status s = nle__comm_agree(ctx, *send && slot ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) {
    memset(st->count, 0, (size_t)st->ranks * sizeof(size_t));
    for (int64_t u = job->lo; u < job->hi; u++) st->count[owner_of(st, order[u])]++;
    layout(st, rec);
    for (int64_t u = job->lo; u < job->hi; u++) slot[u - job->lo] = (int64_t)st->offset[owner_of(st, order[u])]++;
#pragma omp parallel for schedule(dynamic, 256) num_threads(threads)
    for (int64_t u = job->lo; u < job->hi; u++) {
      int32_t *at = (int32_t *)(*send + (size_t)slot[u - job->lo] * rec);
      at[0] = order[u];
      nle__nnd_exact_row(job->P->Yr, job->P->d, job->H, order, u, at + 1, (float *)(at + 1 + k));
    }
  }
  free(slot);
  return s;
}

/* The records pack_rows laid out, sent; those arriving placed into this
 * rank's rows of the graph. */
static nle_status place_rows(nle_ctx *ctx, dist_state *st, const char *send, int k, const nle__rows *rows,
                             nle_csr **graph) {
  size_t rec = sizeof(int32_t) * (1 + 2 * (size_t)k), mine = rows->mine.end - rows->mine.begin;
  void *recv = NULL;
  nle_status s = send_items(ctx, st, send, &recv);
  if (!s) s = nle_csr_alloc(ctx, (int64_t)mine, (int64_t)rows->n, (int64_t)mine * k, NLE_F32, graph);
  if (!s) {
    for (size_t i = 0; i <= mine; i++) (*graph)->rowptr[i] = (int64_t)i * k;
    size_t got = st->recv_offsets[st->ranks] / rec;
    for (size_t q = 0; q < got; q++) {
      const int32_t *at = (const int32_t *)((const char *)recv + q * rec);
      size_t r = (size_t)at[0] - rows->mine.begin;
      memcpy((*graph)->colind + r * (size_t)k, at + 1, (size_t)k * sizeof(int32_t));
      memcpy((float *)(*graph)->val + r * (size_t)k, at + 1 + k, (size_t)k * sizeof(float));
    }
  }
  free(recv);
  return nle__comm_agree(ctx, s);
}

/* Trees [first, last): tree t built by rank t % R (tree 0 by all) is
 * broadcast: its number of leaves, then its leaves' starts and points. */
static nle_status share_trees(nnd_job *job, int first, int last, nle_status s) {
  nle_ctx *ctx = job->ctx;
  s = nle__comm_agree(ctx, s);
  for (int t = first > 0 ? first : 1; !s && t < last; t++) {
    nnd_tree *tree = &job->trees[t];
    int root = t % job->tree_ranks;
    s = nle__comm_bcast(ctx, &tree->n_leaves, sizeof tree->n_leaves, root);
    if (!s && root != job->tree_rank) {
      tree->cap = tree->n_leaves + 1;
      tree->start = nle__malloc(ctx, (size_t)tree->cap * sizeof(int64_t), "a tree");
      tree->perm = nle__malloc(ctx, (size_t)job->n * sizeof(int32_t), "a tree");
      if (!tree->start || !tree->perm) s = NLE_ERR_NOMEM;
    }
    s = nle__comm_agree(ctx, s);
    if (!s) s = nle__comm_bcast(ctx, tree->start, (size_t)(tree->n_leaves + 1) * sizeof(int64_t), root);
    if (!s) s = nle__comm_bcast(ctx, tree->perm, (size_t)job->n * sizeof(int32_t), root);
  }
  return s;
}

nle_status nle__knn_approx_dist(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *opts, nle_csr **graph) {
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, Y->rows, "approximate kNN", &rows);
  if (s) return s;
  int64_t n = (int64_t)rows.n;
  size_t d = Y->cols;
  nle_knn_approx_opts o;
  s = nle__nnd_check_request(ctx, opts, n, &o); /* alike on every rank: the same n and options */
  if (s) return s;
  int k = o.k, mc = o.max_candidates, ranks = nle__ranks(ctx), me = nle__rank(ctx);
  nle__row_range own = nle__rank_rows((size_t)n, ranks, me);
  int64_t m = (int64_t)(own.end - own.begin);
  int threads = nle__threads_for(ctx, (double)n * d * 50);
  /* N-sized: the gathered rows, the numbering, the bounds, a batch of
   * trees (one per thread of each rank) and tree 0 (4 bytes a point and 8
   * a leaf); per owned row: heaps,
   * candidate lists and their counts, the reverse candidates sent (at most
   * one per heap entry), the graph's rows sent and received; per thread
   * the join's scratch and its table of pairs offered. */
  double need = (double)n * (d * 4.0 + 4 + 4 + ((double)threads * ranks + 1) * (4 + 8.0 / o.leaf_size)) +
                (double)m * ((double)k * 9 + 2.0 * mc * 12 + 8 + (double)k * sizeof(nnd_reverse) + 2 * (4 + 8.0 * k)) +
                (double)threads * ((double)nle__nnd_join_scratch_floats(2 * (size_t)mc, 2 * (size_t)mc, d) * 4 +
                                   NLE__NND_SEEN * 8.0);
  s = nle__comm_agree(ctx, nle__check_memory(ctx, need, "approximate kNN"));
  if (s) return s;

  double t0 = nle_time_seconds();
  uint64_t bytes0 = nle__comm_bytes_sent(ctx), seed = nle_ctx_seed(ctx);
  float *all = nle__malloc(ctx, (size_t)n * d * sizeof(float), "the gathered rows");
  s = nle__comm_agree(ctx, all ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__comm_allgather_rows(ctx, Y->data, (size_t)n, d * sizeof(float), all);
  nle_matf whole = {(size_t)n, d, all};
  if (!s) s = nle__knn_check_range(ctx, &whole, NULL); /* the same rows, the same outcome on every rank */
  if (s) {
    free(all);
    return s;
  }
  uint64_t bytes_rows = nle__comm_bytes_sent(ctx) - bytes0;
  double t_gathered = nle_time_seconds();
  nnd_tree *trees = nle__calloc(ctx, (size_t)o.n_trees, sizeof(nnd_tree), "the forest");
  int32_t *order = NULL;
  s = trees ? rows_in_leaf_order(ctx, all, (size_t)n, d, o.leaf_size, seed, &trees[0], &order) : NLE_ERR_NOMEM;
  nnd_heaps H;
  nnd_cands fresh, old;
  nle_status sa = nle__nnd_alloc(ctx, k, mc, (int64_t)own.begin, (int64_t)own.end, n, &H, &fresh, &old);
  size_t nblocks = (size_t)((m + NLE__NND_NODE_BLOCK - 1) / NLE__NND_NODE_BLOCK);
  int64_t *inserted = nle__calloc(ctx, nblocks ? nblocks : 1, sizeof(int64_t), "join counts");
  nnd_outbox *boxes = nle__calloc(ctx, (size_t)threads, sizeof *boxes, "offers");
  for (int t = 0; boxes && t < threads; t++) boxes[t].seen = nle__calloc(ctx, NLE__NND_SEEN, sizeof(uint64_t), "offers");
  dist_state st = {ranks, me, nle__malloc(ctx, ((size_t)ranks + 1) * sizeof(size_t), "ranks"), NULL,
                   nle__malloc(ctx, (size_t)ranks * sizeof(size_t), "ranks"),
                   nle__malloc(ctx, 3 * (size_t)ranks * sizeof(size_t), "ranks"),
                   nle__malloc(ctx, ((size_t)ranks + 1) * sizeof(size_t), "ranks"), threads, 0, 0};
  for (int t = 0; !s && boxes && t < threads; t++)
    if (!boxes[t].seen) s = NLE_ERR_NOMEM;
  if (!s && (sa || !inserted || !boxes || !st.begin || !st.count || !st.offset || !st.recv_offsets)) s = NLE_ERR_NOMEM;
  for (int r = 0; !s && r <= ranks; r++) st.begin[r] = r < ranks ? nle__rank_rows((size_t)n, ranks, r).begin : (size_t)n;
  nnd_points P = {all, d, nle__nnd_wide_from()};
  nnd_rounds rounds = {before_sampling, after_joins, sum_changed, share_trees, &st};
  nnd_job job = {ctx, &P, &H, &fresh, &old, trees, o.n_trees, o.leaf_size, n, 0, seed, 0, inserted, threads,
                 (int64_t)own.begin, (int64_t)own.end, NULL, 0, boxes, &rounds, ranks, me};
  double t_ordered = nle_time_seconds(), t_built = 0.0;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__nnd_grow_forest(&job, &o, threads * ranks, &t_built);
  s = nle__comm_agree(ctx, s);
  double t_leaves = nle_time_seconds();
  int it = 0;
  if (!s) s = nle__nnd_descend(&job, &o, &it);
  double t_descent = nle_time_seconds();
  /* what the exact rows need is the rows and the heaps; the lists, the
   * messages, and after the packing the rows and heaps, go first */
  nle__nnd_release(NULL, &fresh, &old);
  free(st.received);
  st.received = NULL;
  for (int t = 0; boxes && t < threads; t++) {
    free(boxes[t].at);
    free(boxes[t].seen);
    boxes[t] = (nnd_outbox){NULL, 0, 0, 0, NULL};
  }
  char *send = NULL;
  if (!s) s = pack_rows(ctx, &st, &job, order, threads, &send);
  free(all);
  all = NULL;
  nle__nnd_release(&H, NULL, NULL);
  if (!s) s = place_rows(ctx, &st, send, k, &rows, graph);
  free(send);
  if (!s)
    nle__log(ctx, 2, "approximate kNN over %d ranks: gathering the rows %.2f s, reordering and forest %.2f s, leaves "
             "%.2f s, %d NN-descent iterations %.2f s, exact distances %.2f s; sent %.1f MB of rows, %.1f MB of "
             "reverse candidates, %.1f MB of offers", ranks, t_gathered - t0, t_ordered - t_gathered + t_built,
             t_leaves - t_ordered - t_built, it, t_descent - t_leaves, nle_time_seconds() - t_descent,
             (double)bytes_rows / 1e6, (double)st.reverse_sent / 1e6, (double)st.offers_sent / 1e6);
  nle__nnd_free_trees(trees, o.n_trees);
  for (int t = 0; boxes && t < threads; t++) {
    free(boxes[t].at);
    free(boxes[t].seen);
  }
  free(boxes);
  free(order);
  free(inserted);
  free(all);
  free(st.begin);
  free(st.count);
  free(st.offset);
  free(st.recv_offsets);
  free(st.received);
  nle__nnd_release(&H, &fresh, &old);
  if (s) nle_csr_free(graph);
  return s;
}
