/* test_mpi_graph.c — the graph stage on rows shared out over ranks (issue
 * 38, docs/mpi.md): PCA, the exact and approximate kNN searches, the
 * re-ranking, entropic affinities and their symmetrisation, and
 * nle_graph_build. Each case computes the result alone (test_ctx, all the
 * rows) on every rank, then with test_comm_ctx on this rank's rows, and
 * compares this rank's part bit for bit. Alone (not under mpirun) the
 * second run is the same call again: the single-process path. */
#include "mpi_setting.h"
#include "../src/neighbors/neighbors_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 2 full row blocks and a short one: at 3 ranks each holds one. */
enum { ROWS = 2 * NLE__RANK_ROW_BLOCK + 900 };

/* Rows [begin, end) of the whole graph `alone` and `part` hold the same
 * bits. */
static int same_rows(const nle_csr *alone, const nle__row_range *mine, const nle_csr *part) {
  if (!alone || !part || part->rows != (int64_t)(mine->end - mine->begin) || part->cols != alone->cols ||
      part->dtype != alone->dtype)
    return 0;
  int64_t at = alone->rowptr[mine->begin];
  size_t width = alone->dtype == NLE_F64 ? 8 : 4;
  for (size_t i = 0; i <= mine->end - mine->begin; i++)
    if (part->rowptr[i] != alone->rowptr[mine->begin + i] - at) return 0;
  return memcmp(part->colind, alone->colind + at, (size_t)part->nnz * 4) == 0 &&
         memcmp(part->val, (const char *)alone->val + (size_t)at * width, (size_t)part->nnz * width) == 0;
}

/* Points in clusters, with exact duplicates (ties broken by index). */
static nle_matf *clustered(size_t n, size_t d, uint64_t seed) {
  nle_matf *Y = test_random_matf(n, d, seed);
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) Y->data[i * d + t] += (float)(3.0 * (double)((i * 7 + t) % 5));
  for (size_t i = 0; i + 4096 < n; i += 97) memcpy(Y->data + (i + 4096) * d, Y->data + i * d, d * sizeof(float));
  return Y;
}

static setting open_rows(uint64_t seed, size_t n, size_t d) { return setting_of(seed, clustered(n, d, seed + 100)); }

static setting open_setting(uint64_t seed, size_t d) { return open_rows(seed, ROWS, d); }

static void pca_rows(void) {
  setting t = open_setting(3, 24);
  nle_ctx *one = t.one, *ctx = t.ctx;
  nle_matf *Y = t.Y, part = t.part;
  nle__row_range mine = t.mine;
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = 6;
  po.solver = NLE_PCA_EXACT;
  nle_pca_model *a = NULL, *b = NULL;
  nle_matd *Xa = NULL, *Xb = NULL;
  nle_test_ok(nle_pca_fit(one, Y, &po, &a));
  nle_test_ok(nle_pca_transform(one, a, Y, &Xa));
  nle_test_ok(nle_pca_fit(ctx, &part, &po, &b));
  nle_test_ok(nle_pca_transform(ctx, b, &part, &Xb));
  if (a && b && Xa && Xb) {
    nle_test(memcmp(a->mean, b->mean, 24 * sizeof(double)) == 0);
    nle_test(memcmp(a->components, b->components, 6 * 24 * sizeof(double)) == 0);
    nle_test(memcmp(a->explained_variance, b->explained_variance, 6 * sizeof(double)) == 0);
    nle_test(a->total_variance == b->total_variance && b->n_samples == (int64_t)ROWS);
    nle_test(memcmp(Xa->data + mine.begin * 6, Xb->data, (mine.end - mine.begin) * 6 * sizeof(double)) == 0);
    /* against the covariance in long double */
    long double mean0 = 0, var0 = 0;
    for (size_t i = 0; i < ROWS; i++) mean0 += Y->data[i * 24];
    mean0 /= ROWS;
    for (size_t i = 0; i < ROWS; i++) var0 += (Y->data[i * 24] - mean0) * (Y->data[i * 24] - mean0);
    nle_test(fabs((double)mean0 - a->mean[0]) < 1e-12 * fabs((double)mean0) + 1e-14);
    double total = 0;
    for (size_t t = 0; t < 24; t++) {
      long double m = 0, v = 0;
      for (size_t i = 0; i < ROWS; i++) m += Y->data[i * 24 + t];
      m /= ROWS;
      for (size_t i = 0; i < ROWS; i++) v += (Y->data[i * 24 + t] - m) * (Y->data[i * 24 + t] - m);
      total += (double)(v / (ROWS - 1));
    }
    nle_test_rel(a->total_variance, total, 1e-12);
  }
  nle_pca_model_free(&a);
  nle_pca_model_free(&b);
  nle_matd_free(&Xa);
  nle_matd_free(&Xb);
  close_setting(&t);
}

/* The randomized solver (TSQR over the 4,096-row blocks, A^T Q in fixed
 * point): the same bits on any number of ranks as alone; with the range
 * basis as wide as the data (oversampled to l = D) it spans every direction,
 * so its components are the exact solver's. rows: 3 blocks, the last short;
 * or a last block of 5 rows, fewer than l. */
static void pca_randomized_case(uint64_t seed, size_t rows) {
  setting t = open_rows(seed, rows, 24);
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = 6;
  po.oversample = 18;
  po.solver = NLE_PCA_RANDOMIZED;
  nle_pca_model *a = NULL, *b = NULL, *e = NULL;
  nle_test_ok(nle_pca_fit(t.one, t.Y, &po, &a));
  nle_test_ok(nle_pca_fit(t.ctx, &t.part, &po, &b));
  po.solver = NLE_PCA_EXACT;
  nle_test_ok(nle_pca_fit(t.one, t.Y, &po, &e));
  if (a && b && e) {
    nle_test(a->solver_used == NLE_PCA_RANDOMIZED && b->solver_used == NLE_PCA_RANDOMIZED);
    nle_test(memcmp(a->components, b->components, 6 * 24 * sizeof(double)) == 0);
    nle_test(memcmp(a->explained_variance, b->explained_variance, 6 * sizeof(double)) == 0);
    nle_test(a->total_variance == b->total_variance);
    nle_test_rel(a->total_variance, e->total_variance, 1e-12);
    for (int c = 0; c < 6; c++) {
      nle_test_rel(a->explained_variance[c], e->explained_variance[c], 1e-10);
      double dot = 0.0;
      for (size_t j = 0; j < 24; j++) dot += a->components[c * 24 + j] * e->components[c * 24 + j];
      nle_test_rel(dot, 1.0, 1e-8); /* the same sign convention too */
    }
  }
  nle_pca_model_free(&a);
  nle_pca_model_free(&b);
  nle_pca_model_free(&e);
  close_setting(&t);
}

static void pca_randomized_rows(void) {
  pca_randomized_case(21, ROWS);
  pca_randomized_case(22, NLE__RANK_ROW_BLOCK + 5);
}

/* nle_knn_exact's graph (ring of blocks) and nle_knn_approx's (over ranks) */
static void knn_searches(void) {
  const size_t dims[] = {3, 40}; /* the k-d tree's and the GEMM's */
  for (size_t at = 0; at < 2; at++) {
    setting t = open_setting(4 + at, dims[at]);
    nle_ctx *one = t.one, *ctx = t.ctx;
    nle_matf *Y = t.Y, part = t.part;
    nle__row_range mine = t.mine;
    nle_knn_opts ko;
    nle_knn_opts_init(&ko);
    ko.k = 12;
    nle_csr *a = NULL, *b = NULL;
    nle_test_ok(nle_knn_exact(one, Y, &ko, &a));
    nle_test_ok(nle_knn_exact(ctx, &part, &ko, &b));
    nle_test(same_rows(a, &mine, b));
    nle_csr_free(&b);
    /* the re-ranking of candidates: the exact graph's 12 re-ranked to 7 */
    nle_csr *ra = NULL, *rb = NULL, *cand = NULL;
    nle_test_ok(nle__csr_rows(one, a, mine.begin, mine.end, &cand));
    nle_test_ok(nle_knn_rerank(one, Y, a, 7, &ra));
    nle_test_ok(nle_knn_rerank(ctx, &part, cand, 7, &rb));
    nle_test(same_rows(ra, &mine, rb));
    nle_csr_free(&ra);
    nle_csr_free(&rb);
    nle_csr_free(&cand);
    nle_csr_free(&a);
    nle_knn_approx_opts ao;
    nle_knn_approx_opts_init(&ao);
    ao.k = 12;
    nle_test_ok(nle_knn_approx(one, Y, &ao, &a));
    nle_test_ok(nle_knn_approx(ctx, &part, &ao, &b));
    nle_test(same_rows(a, &mine, b));
    nle_csr_free(&a);
    nle_csr_free(&b);
    close_setting(&t);
  }
}

/* The ring's blocks cut into pieces of a few rows (the same bits as one
 * piece a block, and as alone): the exact search and the re-ranking, in a
 * setting whose blocks are cut unevenly (the last piece of a block short,
 * a short block with fewer pieces). */
static void knn_ring_pieces(void) {
  setting t = open_setting(7, 40);
  nle_ctx *one = t.one, *ctx = t.ctx;
  nle__row_range mine = t.mine;
  size_t saved = nle__ring_piece_bytes;
  nle__ring_piece_bytes = 1000 * 40 * sizeof(float) + 12; /* 1,000 rows a piece */
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = 9;
  nle_csr *a = NULL, *b = NULL, *ra = NULL, *rb = NULL, *cand = NULL;
  nle_test_ok(nle_knn_exact(one, t.Y, &ko, &a));
  nle_test_ok(nle_knn_exact(ctx, &t.part, &ko, &b));
  nle_test(same_rows(a, &mine, b));
  if (a) nle_test_ok(nle__csr_rows(one, a, mine.begin, mine.end, &cand));
  if (cand) {
    nle_test_ok(nle_knn_rerank(one, t.Y, a, 5, &ra));
    nle_test_ok(nle_knn_rerank(ctx, &t.part, cand, 5, &rb));
    nle_test(same_rows(ra, &mine, rb));
  }
  nle__ring_piece_bytes = saved;
  nle_csr_free(&a);
  nle_csr_free(&b);
  nle_csr_free(&ra);
  nle_csr_free(&rb);
  nle_csr_free(&cand);
  close_setting(&t);
}

/* The memory nle_knn_approx says it needs (on this rank), read from its
 * refusal under a cap of one byte; -1 when it did not refuse so. */
static double approx_need(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *o) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB"};
  nle_csr *g = NULL;
  nle_ctx_set_max_memory(ctx, 1);
  nle_status s = nle_knn_approx(ctx, Y, o, &g);
  nle_ctx_set_max_memory(ctx, 0);
  const char *msg = strstr(nle_ctx_error(ctx), "needs ");
  double v = 0;
  char unit[8] = "";
  if (s != NLE_ERR_MEMCAP || g || !msg || sscanf(msg, "needs %lf %7[A-Za-z]", &v, unit) != 2) return -1;
  for (int u = 0; u < 4; u++)
    if (!strcmp(unit, units[u])) return ldexp(v, 10 * u);
  return -1;
}

/* nle_knn_approx over ranks (knn_approx_dist.c) against alone: rows that
 * give the ranks several blocks and a short one, fewer blocks than ranks,
 * the joins' distance tiles and their GEMM screen (whose offers to other
 * ranks' rows carry their own sums); and each rank's memory need below
 * alone's. */
static void knn_approx_rows(void) {
  const size_t sizes[] = {3 * NLE__RANK_ROW_BLOCK + 700, NLE__RANK_ROW_BLOCK - 96, 2 * NLE__RANK_ROW_BLOCK + 900};
  const size_t dims[] = {6, 24, 40};
  for (int c = 0; c < 3; c++) {
    setting t = open_rows(20 + (uint64_t)c, sizes[c], dims[c]);
    if (c == 2) nle__knn_approx_wide_from(16);
    nle_knn_approx_opts ao;
    nle_knn_approx_opts_init(&ao);
    ao.k = c == 1 ? 15 : 10;
    nle_csr *a = NULL, *b = NULL;
    uint64_t sent = nle__comm_bytes_sent(t.ctx);
    nle_test_ok(nle_knn_approx(t.one, t.Y, &ao, &a));
    nle_test_ok(nle_knn_approx(t.ctx, &t.part, &ao, &b));
    nle_test(same_rows(a, &t.mine, b));
    nle_test(!nle__distributed(t.ctx) || nle__comm_bytes_sent(t.ctx) > sent);
    nle__knn_approx_wide_from(0);
    if (c == 0) {
      double alone = approx_need(t.one, t.Y, &ao), mine = approx_need(t.ctx, &t.part, &ao);
      nle_test(alone > 0 && mine > 0 && (nle__distributed(t.ctx) ? mine < 0.75 * alone : mine == alone));
    }
    nle_csr_free(&a);
    nle_csr_free(&b);
    close_setting(&t);
  }
}

/* Entropic affinities (the MST order and the bounds order) and their
 * symmetrisation, normalised, on this rank's rows of an exact kNN graph. */
static void entropic_symmetrized(void) {
  setting t = open_setting(5, 6);
  nle_ctx *one = t.one, *ctx = t.ctx;
  nle_matf *Y = t.Y, part = t.part;
  nle__row_range mine = t.mine;
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = 30;
  nle_csr *G = NULL, *Gpart = NULL;
  nle_test_ok(nle_knn_exact(one, Y, &ko, &G));
  nle_test_ok(nle_knn_exact(ctx, &part, &ko, &Gpart));
  for (int bounds = 0; bounds < 2 && G && Gpart; bounds++) {
    nle_ea_opts eo;
    nle_ea_opts_init(&eo);
    eo.perplexity = 10;
    if (bounds) eo.order = NLE_ORDER_BOUNDS;
    nle_ea_result *a = NULL, *b = NULL;
    nle_test(nle_entropic_affinities(one, G, &eo, &a) >= 0);
    nle_test(nle_entropic_affinities(ctx, Gpart, &eo, &b) >= 0);
    if (!a || !b) continue;
    nle_test(same_rows(a->P, &mine, b->P));
    nle_test(b->n == (int64_t)(mine.end - mine.begin));
    nle_test(memcmp(a->beta + mine.begin, b->beta, (size_t)b->n * sizeof(double)) == 0);
    nle_test(a->mean_iterations == b->mean_iterations && a->mean_evaluations == b->mean_evaluations);
    nle_test(a->max_error == b->max_error && a->bisection_points == b->bisection_points);
    nle_test(memcmp(a->steps_histogram, b->steps_histogram, sizeof a->steps_histogram) == 0);
    nle_csr *Wa = NULL, *Wb = NULL;
    nle_test_ok(nle_affinity_symmetrize(one, a->P, true, &Wa));
    nle_test_ok(nle_affinity_symmetrize(ctx, b->P, true, &Wb));
    nle_test(same_rows(Wa, &mine, Wb));
    /* the reference: (P + P^T) / 2 entry by entry, summing to 1 */
    double total = 0;
    for (int64_t i = 0; Wa && i < Wa->rows; i++)
      for (int64_t q = Wa->rowptr[i]; q < Wa->rowptr[i + 1]; q++) {
        int64_t j = Wa->colind[q];
        double pij = 0, pji = 0;
        for (int64_t t = a->P->rowptr[i]; t < a->P->rowptr[i + 1]; t++)
          if (a->P->colind[t] == j) pij = nle_csr_value(a->P, t);
        for (int64_t t = a->P->rowptr[j]; t < a->P->rowptr[j + 1]; t++)
          if (a->P->colind[t] == i) pji = nle_csr_value(a->P, t);
        total += nle_csr_value(Wa, q);
        if (i % 997 == 0) nle_test_rel(nle_csr_value(Wa, q) * 2.0 * (double)ROWS, pij + pji, 1e-9);
      }
    nle_test_rel(total, 1.0, 1e-12);
    nle_csr_free(&Wa);
    nle_csr_free(&Wb);
    nle_ea_result_free(&a);
    nle_ea_result_free(&b);
  }
  nle_csr_free(&G);
  nle_csr_free(&Gpart);
  close_setting(&t);
}

/* nle_graph_build: PCA, candidates among the components re-ranked in the
 * data, entropic weights symmetrised; then nle_graph_weigh on its graph:
 * Gaussian weights of automatic width, self-tuning ones. */
static void graph_build_rows(void) {
  setting t = open_setting(6, 101);
  nle_ctx *one = t.one, *ctx = t.ctx;
  nle__row_range mine = t.mine;
  nle_graph_opts go;
  nle_graph_opts_init(&go);
  go.k = 15;
  go.weights = NLE_AFF_ENTROPIC;
  go.perplexity = 5;
  nle_graph_result *a = NULL, *b = NULL;
  nle_test_ok(nle_graph_build(one, t.Y, &go, &a));
  nle_test_ok(nle_graph_build(ctx, &t.part, &go, &b));
  const nle_affinity_kind kinds[] = {NLE_AFF_ENTROPIC, NLE_AFF_GAUSSIAN, NLE_AFF_SELF_TUNING};
  for (int w = 0; w < 3 && a && b; w++) {
    if (w > 0) { /* the same graphs weighed otherwise */
      nle_csr_free(&a->W);
      nle_csr_free(&b->W);
      go.weights = kinds[w];
      go.sigma = NLE_AUTO;
      nle_test_ok(nle_graph_weigh(one, a->knn, &go, a));
      nle_test_ok(nle_graph_weigh(ctx, b->knn, &go, b));
    }
    if (w == 0) nle_test(a->resolved.pca_dims == 50 && b->resolved.pca_dims == 50 && b->resolved.pca_candidates == 70);
    nle_test(a->pca_variance == b->pca_variance && a->resolved.sigma == b->resolved.sigma);
    nle_test(same_rows(a->knn, &mine, b->knn));
    nle_test(same_rows(a->W, &mine, b->W));
    nle_test(!a->beta == !b->beta);
    if (w == 0 && a->beta && b->beta)
      nle_test(memcmp(a->beta + mine.begin, b->beta, (mine.end - mine.begin) * sizeof(double)) == 0);
  }
  if (b) nle_test(nle__distributed(ctx) ? b->knn_bytes > 0 && b->pca_bytes > 0 : b->knn_bytes == 0);
  nle_graph_result_free(&a);
  nle_graph_result_free(&b);
  close_setting(&t);
}

/* Fewer row blocks than ranks: at 3 ranks the last holds no rows and still
 * takes part (the ring, the exchange, the sums). */
static void rank_without_rows(void) {
  setting t = open_rows(7, NLE__RANK_ROW_BLOCK + 300, 5);
  nle_graph_opts go;
  nle_graph_opts_init(&go);
  go.k = 12;
  go.weights = NLE_AFF_ENTROPIC;
  go.perplexity = 4;
  nle_graph_result *a = NULL, *b = NULL;
  nle_test_ok(nle_graph_build(t.one, t.Y, &go, &a));
  nle_test_ok(nle_graph_build(t.ctx, &t.part, &go, &b));
  nle_test(a && b && same_rows(a->knn, &t.mine, b->knn) && same_rows(a->W, &t.mine, b->W));
  nle_graph_result_free(&a);
  nle_graph_result_free(&b);
  close_setting(&t);
}

const nle_test_case mpi_graph_tests[] = {{"mpi/pca_rows", pca_rows},
                                         {"mpi/pca_randomized_rows", pca_randomized_rows},
                                         {"mpi/knn_searches", knn_searches},
                                         {"mpi/knn_ring_pieces", knn_ring_pieces},
                                         {"mpi/knn_approx_rows", knn_approx_rows},
                                         {"mpi/entropic_symmetrized", entropic_symmetrized},
                                         {"mpi/graph_build_rows", graph_build_rows},
                                         {"mpi/rank_without_rows", rank_without_rows},
                                         {NULL, NULL}};
