/* test_mpi_tsne.c — the t-SNE/EE iterations distributed (issue 38,
 * src/nle/model_dist.c). Each case builds P alone, runs the fixed-rate
 * optimiser alone on every rank (the reference), then again with the world
 * communicator (tests/mpi.sh: 2 and 3 ranks over TCP), each rank given its
 * canonical rows of P and of the start, and compares its rows of the
 * result and E with the reference bit for bit. Alone (no mpirun) both runs
 * take the single-process path. 9,000 points: three row blocks of 4,096,
 * so 2 and 3 ranks each hold rows (the last a short block). */
#include "harness.h"
#include "../src/core/comm.h"
#include "../src/nle/model_internal.h"
#include "../src/nbody/nbody.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { POINTS = 9000, DIMS = 8 };

/* Rows [begin, end) of W, columns kept global. */
static nle_csr *csr_rows(nle_ctx *ctx, const nle_csr *W, size_t begin, size_t end) {
  int64_t q0 = W->rowptr[begin], nnz = W->rowptr[end] - q0;
  size_t width = W->dtype == NLE_F32 ? sizeof(float) : sizeof(double);
  nle_csr *out = NULL;
  if (nle_csr_alloc(ctx, (int64_t)(end - begin), W->cols, nnz, W->dtype, &out)) return NULL;
  for (size_t i = 0; i <= end - begin; i++) out->rowptr[i] = W->rowptr[begin + i] - q0;
  memcpy(out->colind, W->colind + q0, (size_t)nnz * sizeof(int32_t));
  memcpy(out->val, (const char *)W->val + (size_t)q0 * width, (size_t)nnz * width);
  return out;
}

typedef struct {
  nle_model_kind kind;
  nle_repulsion engine;
  int iterations;
  bool asymmetric; /* W+ the unsymmetrised conditional P: the transpose crosses ranks */
} dist_case;

static nle_status run_once(nle_ctx *ctx, const dist_case *c, const nle_csr *W, nle_matd *X, nle_opt_report *rep) {
  nle_model_spec spec = test_model_spec(c->kind, 1.0, W);
  spec.engine = c->engine;
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  oo.kind = NLE_OPT_GD;
  oo.fixed_rate = true;
  oo.learning_rate = c->kind == NLE_MODEL_TSNE ? POINTS / 12.0 : 0.5;
  oo.exaggeration = c->kind == NLE_MODEL_TSNE ? 12.0 : 1.0;
  oo.exaggeration_iters = c->iterations / 3;
  oo.accuracy_iters = c->iterations / 2; /* the fast engines' schedule too */
  oo.max_iters = c->iterations;
  oo.energy_every = 5;
  oo.x_tol = 1e-12; /* its partition-free test runs each iteration */
  nle_model *m = NULL;
  nle_opt *o = NULL;
  nle_status s = nle_model_new(ctx, &spec, &m);
  if (!s) s = nle_opt_new(ctx, m, W, &oo, &o);
  if (!s) s = nle_opt_run(ctx, o, X, rep);
  if (s > 0) s = NLE_OK; /* not converged in so few iterations */
  if (s) printf("  %s\n", nle_ctx_error(ctx));
  nle_opt_free(&o);
  nle_model_free(&m);
  return s;
}

/* The conditional P (rows sum to 1; not symmetric). */
static nle_csr *conditional_p(nle_ctx *ctx, const nle_matf *Y) {
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = 30;
  nle_csr *g = NULL, *P = NULL;
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  eo.perplexity = 10;
  nle_ea_result *ea = NULL;
  if (!nle_knn_exact(ctx, Y, &ko, &g) && !nle_entropic_affinities(ctx, g, &eo, &ea)) P = ea->P, ea->P = NULL;
  nle_ea_result_free(&ea);
  nle_csr_free(&g);
  return P;
}

/* The cases' two W+ (joint and conditional P), built once per process:
 * the kNN search and the affinities were most of each case's time. */
static nle_csr *cached_p[2];

static void free_cached_p(void) {
  nle_csr_free(&cached_p[0]);
  nle_csr_free(&cached_p[1]);
}

static const nle_csr *shared_p(bool asymmetric) {
  if (!cached_p[asymmetric]) {
    nle_ctx *alone = test_ctx(7);
    nle_matf *Y = test_random_matf(POINTS, DIMS, 11);
    if (!cached_p[0] && !cached_p[1]) atexit(free_cached_p);
    cached_p[asymmetric] = asymmetric ? conditional_p(alone, Y) : test_entropic_p(alone, Y, 10);
    nle_matf_free(&Y);
    nle_ctx_free(&alone);
  }
  return cached_p[asymmetric];
}

static void check_case(const dist_case *c) {
  nle_ctx *alone = test_ctx(7), *ctx = test_comm_ctx(7);
  const nle_csr *P = shared_p(c->asymmetric);
  if (!nle_test(P != NULL)) {
    nle_ctx_free(&ctx);
    nle_ctx_free(&alone);
    return;
  }
  nle_matd *X0 = test_random_matd(POINTS, 2, 1e-2, 5), *ref = test_random_matd(POINTS, 2, 1, 1);
  memcpy(ref->data, X0->data, POINTS * 2 * sizeof(double));
  nle_opt_report want = {0}, got = {0};
  nle_test_ok(run_once(alone, c, P, ref, &want));

  nle__row_range mine = nle__rank_rows(POINTS, nle_ctx_ranks(ctx), nle_ctx_rank(ctx));
  size_t rows = mine.end - mine.begin;
  nle_csr *Pmine = csr_rows(ctx, P, mine.begin, mine.end);
  nle_matd *X = NULL;
  nle_test_ok(nle_matd_alloc(ctx, rows, 2, &X));
  memcpy(X->data, X0->data + mine.begin * 2, rows * 2 * sizeof(double));
  nle_test_ok(run_once(ctx, c, Pmine, X, &got));
  nle_test(memcmp(X->data, ref->data + mine.begin * 2, rows * 2 * sizeof(double)) == 0);
  nle_test(memcmp(&got.E, &want.E, sizeof got.E) == 0 && memcmp(&got.E0, &want.E0, sizeof got.E0) == 0);
  nle_test(got.iterations == want.iterations && got.grad_max == want.grad_max);
  if (memcmp(&got.E, &want.E, sizeof got.E)) printf("  E %.17g, alone %.17g\n", got.E, want.E);

  nle_matd_free(&X);
  nle_csr_free(&Pmine);
  nle_matd_free(&ref);
  nle_matd_free(&X0);
  nle_ctx_free(&ctx);
  nle_ctx_free(&alone);
}

static void tsne_fft(void) { check_case(&(dist_case){NLE_MODEL_TSNE, NLE_REPULSION_FFT, 30, false}); }
static void tsne_bh(void) { check_case(&(dist_case){NLE_MODEL_TSNE, NLE_REPULSION_BH, 12, false}); }
static void tsne_exact(void) { check_case(&(dist_case){NLE_MODEL_TSNE, NLE_REPULSION_EXACT, 3, false}); }
static void tsne_exact_asymmetric(void) { check_case(&(dist_case){NLE_MODEL_TSNE, NLE_REPULSION_EXACT, 3, true}); }
static void tsne_fft_asymmetric(void) { check_case(&(dist_case){NLE_MODEL_TSNE, NLE_REPULSION_FFT, 20, true}); }
static void ee_fft(void) { check_case(&(dist_case){NLE_MODEL_EE, NLE_REPULSION_FFT, 8, false}); }
static void ee_bh(void) { check_case(&(dist_case){NLE_MODEL_EE, NLE_REPULSION_BH, 10, false}); }
static void ee_exact(void) { check_case(&(dist_case){NLE_MODEL_EE, NLE_REPULSION_EXACT, 3, false}); }
static void sne_exact(void) { check_case(&(dist_case){NLE_MODEL_SNE, NLE_REPULSION_EXACT, 2, true}); }

/* Refused alike on every rank, with the option named: a line-search
 * optimiser (a checkpoint is taken: tests/mpi.sh resumes one). */
static void refusals(void) {
  nle_ctx *ctx = test_comm_ctx(7);
  if (nle_ctx_ranks(ctx) < 2) {
    nle_ctx_free(&ctx);
    return;
  }
  const nle_csr *P = shared_p(false);
  nle__row_range mine = nle__rank_rows(POINTS, nle_ctx_ranks(ctx), nle_ctx_rank(ctx));
  nle_csr *Pmine = csr_rows(ctx, P, mine.begin, mine.end);
  nle_model_spec spec = test_model_spec(NLE_MODEL_TSNE, 1.0, Pmine);
  nle_model *m = NULL;
  nle_opt *o = NULL;
  nle_test_ok(nle_model_new(ctx, &spec, &m));
  nle_opt_opts oo;
  nle_opt_opts_init(&oo); /* SD with its line search */
  nle_test(nle_opt_new(ctx, m, Pmine, &oo, &o) == NLE_ERR_ARG);
  nle_test(strstr(nle_ctx_error(ctx), "fixed-rate") != NULL);
  oo.kind = NLE_OPT_GD;
  oo.fixed_rate = true;
  nle_test_ok(nle_opt_new(ctx, m, Pmine, &oo, &o));
  nle_test_ok(nle_opt_set_checkpoint(ctx, o, test_path("ck"), 10, "f"));
  /* nle_embed says it before the graph's work: EE's recipe is the line search */
  nle_matf *Y = test_random_matf(mine.end - mine.begin, DIMS, 11 + (uint64_t)nle_ctx_rank(ctx));
  nle_embed_input in = {.Y = Y};
  nle_embed_opts eo;
  nle_embed_opts_init(&eo);
  eo.model = NLE_MODEL_EE;
  nle_embed_result *r = NULL;
  nle_test(nle_embed(ctx, &in, &eo, &r) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "fixed-rate steps") != NULL);
  nle_embed_result_free(&r);
  nle_matf_free(&Y);
  nle_opt_free(&o);
  nle_model_free(&m);
  nle_csr_free(&Pmine);
  nle_ctx_free(&ctx);
}

typedef struct {
  const double *v;
  size_t begin, end;
} span;

static double span_sum(void *user, double start) {
  const span *sp = user;
  for (size_t i = sp->begin; i < sp->end; i++) start += sp->v[i];
  return start;
}

/* The start's pieces and the one-off totals: a random start from the one
 * stream in point order (as embed.c drew it before: the reference loop
 * here), the PCA start's scale (first column's standard deviation, summed
 * in point order), and a sum continued from rank to rank: each rank's rows
 * the single process's bits. */
static void start_and_totals(void) {
  nle_ctx *alone = test_ctx(3), *ctx = test_comm_ctx(3);
  size_t n = POINTS, d = 2;
  nle_matd *ref = NULL, *X = NULL;
  nle_test_ok(nle_matd_alloc(alone, n, d, &ref));
  nle_rng r;
  nle_rng_init(&r, 3, 0x696e6974ULL);
  for (size_t i = 0; i < n * d; i++) ref->data[i] = 1e-4 * nle_rng_normal(&r);
  nle__row_range mine = nle__rank_rows(n, nle_ctx_ranks(ctx), nle_ctx_rank(ctx));
  size_t rows = mine.end - mine.begin;
  nle_test_ok(nle_matd_alloc(ctx, rows, d, &X));
  nle_test_ok(nle__dist_normal_rows(ctx, 0x696e6974ULL, 1e-4, X));
  nle_test(memcmp(X->data, ref->data + mine.begin * d, rows * d * sizeof(double)) == 0);
  /* the scale: the former single-process loop as the reference */
  double mean = 0.0, var = 0.0;
  for (size_t i = 0; i < n; i++) mean += ref->data[i * d] / (double)n;
  for (size_t i = 0; i < n; i++) var += (ref->data[i * d] - mean) * (ref->data[i * d] - mean) / (double)n;
  for (size_t i = 0; i < n * d; i++) ref->data[i] *= 1e-4 / sqrt(var);
  nle_test_ok(nle__dist_scale_first_column(ctx, X, 1e-4));
  nle_test(memcmp(X->data, ref->data + mine.begin * d, rows * d * sizeof(double)) == 0);
  double want = 0.0, got = -1.0;
  for (size_t i = 0; i < n * d; i++) want += ref->data[i];
  span sp = {ref->data, mine.begin * d, mine.end * d};
  nle_test_ok(nle__dist_chain_sum(ctx, span_sum, &sp, &got));
  nle_test(memcmp(&got, &want, sizeof got) == 0);
  nle_matd_free(&X);
  nle_matd_free(&ref);
  nle_ctx_free(&ctx);
  nle_ctx_free(&alone);
}

/* The rate caps' degrees from a rank's rows of W+ and of its transpose
 * (built by the model's all-to-all) against the single pass over all rows
 * of W+ that fixed_rate.c made before (the reference), bit for bit, for the
 * conditional P (not symmetric) and the joint one. */
static void degrees_from_transpose(void) {
  nle_ctx *ctx = test_comm_ctx(7);
  for (int asymmetric = 0; asymmetric < 2; asymmetric++) {
    const nle_csr *W = shared_p(asymmetric);
    if (!nle_test(W != NULL)) break;
    double *want = calloc(POINTS, sizeof(double));
    for (int64_t i = 0; i < W->rows; i++)
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
        double w = 0.5 * nle_csr_value(W, q);
        want[i] += w;
        want[W->colind[q]] += w;
      }
    nle__row_range mine = nle__rank_rows(POINTS, nle_ctx_ranks(ctx), nle_ctx_rank(ctx));
    nle_csr *Wmine = csr_rows(ctx, W, mine.begin, mine.end);
    nle_model_spec spec = test_model_spec(NLE_MODEL_TSNE, 1.0, Wmine);
    nle_model *m = NULL;
    nle_test_ok(nle_model_new(ctx, &spec, &m));
    nle_test(asymmetric ? m->WpT != NULL : m->WpT == NULL);
    double *got = nle__attraction_degrees(ctx, Wmine, m->WpT ? m->WpT : Wmine, mine.begin);
    nle_test(got && memcmp(got, want + mine.begin, (mine.end - mine.begin) * sizeof(double)) == 0);
    free(got);
    nle_model_free(&m);
    nle_csr_free(&Wmine);
    free(want);
  }
  nle_ctx_free(&ctx);
}

/* The FFT engine's forces with the grid's transforms divided among the
 * ranks (src/nbody/fft_slab.c) against nle__fft_forces alone, bit for bit:
 * 5,000 points (two row blocks of 4,096: at 3 ranks the last rank holds no
 * rows) spread so that the grid has a few hundred nodes a side (about 19
 * column strips of 16 and 8 row chunks: several of each on every rank at 2
 * and 3 ranks), and again narrow (about 30 nodes a side: 2 strips, a rank
 * without one at 3 ranks).
 * Both kernels of the engines (t-SNE's Student-t, EE's Gaussian). */
static void fft_forces_divided(void) {
  enum { N = 5000 };
  nle_ctx *alone = test_ctx(7), *ctx = test_comm_ctx(7);
  nle__row_range mine = nle__rank_rows(N, nle_ctx_ranks(ctx), nle_ctx_rank(ctx));
  double spans[2] = {10.0, 1.0};
  nle_kernel energies[2] = {NLE_KERNEL_STUDENT, NLE_KERNEL_GAUSSIAN}, forces[2] = {NLE_KERNEL_STUDENT2,
                                                                                   NLE_KERNEL_GAUSSIAN};
  nle__fft_ws *ws_alone = nle__fft_ws_new(), *ws = nle__fft_ws_new();
  double *want = malloc(N * 2 * sizeof(double)), *got = malloc(N * 2 * sizeof(double));
  for (int wide = 0; wide < 2; wide++)
    for (int k = 0; k < 2; k++) {
      nle_matd *X = test_random_matd(N, 2, spans[wide], 3 + (uint64_t)wide);
      double z_want = 0.0, z_got = 1.0;
      memset(got, 0, N * 2 * sizeof(double));
      nle_test_ok(nle__fft_forces(alone, ws_alone, X, energies[k], forces[k], NULL, NULL, &z_want, want));
      nle_status st = nle__fft_forces_rows(ctx, ws, X, energies[k], forces[k], NULL, mine.begin, mine.end, &z_got, got);
      nle_test_ok(st);
      if (st) printf("  %s\n", nle_ctx_error(ctx));
      nle_test(memcmp(got + mine.begin * 2, want + mine.begin * 2, (mine.end - mine.begin) * 2 * sizeof(double)) == 0);
      nle_test(memcmp(&z_got, &z_want, sizeof z_got) == 0);
      if (memcmp(&z_got, &z_want, sizeof z_got)) printf("  Z %.17g, alone %.17g\n", z_got, z_want);
      nle_matd_free(&X);
    }
  /* rows not in whole blocks are refused */
  nle_matd *X = test_random_matd(N, 2, 1.0, 3);
  double z = 0.0;
  nle_test(nle__fft_forces_rows(ctx, ws, X, NLE_KERNEL_STUDENT, NLE_KERNEL_STUDENT2, NULL, 100, N, &z, got) ==
           NLE_ERR_ARG);
  nle_matd_free(&X);
  free(want);
  free(got);
  nle__fft_ws_free(&ws);
  nle__fft_ws_free(&ws_alone);
  nle_ctx_free(&ctx);
  nle_ctx_free(&alone);
}

/* --- the locality order and the moves (locality_dist.c) ------------------ */

/* A permutation of n from a seed, alike on every rank. */
static int32_t *shuffled(size_t n, uint64_t seed) {
  int32_t *p = malloc(n * sizeof(int32_t));
  nle_rng rng;
  nle_rng_init(&rng, seed, 0);
  for (size_t i = 0; p && i < n; i++) p[i] = (int32_t)i;
  for (size_t i = n; p && i > 1; i--) {
    size_t j = (size_t)nle_rng_below(&rng, i);
    int32_t x = p[i - 1];
    p[i - 1] = p[j];
    p[j] = x;
  }
  return p;
}

/* The order: the same at any number of ranks as alone, a permutation, and
 * local: the points' nearest neighbours (exact, alone) sit at nearby places
 * in it. The points: a noisy 2-D sheet in 20 dimensions, in a shuffled
 * order (its neighbours' places differ by n / 3 on average, in the tree's
 * order by 0.05 of that). */
static void locality_order(void) {
  nle_ctx *one = test_ctx(5), *ctx = test_comm_ctx(5);
  size_t n = POINTS, d = 20;
  nle_matf *Y = test_random_matf(n, d, 41);
  int32_t *shuffle = shuffled(n, 42), *alone = NULL, *order = NULL;
  /* a sheet: the first two coordinates a 90 x 100 grid of unit steps by
   * the point's place in the shuffle, every coordinate plus noise of 0.05 */
  for (size_t i = 0; Y && shuffle && i < n; i++) {
    for (size_t t = 0; t < d; t++) Y->data[i * d + t] *= 0.05f;
    Y->data[i * d] += (float)((size_t)shuffle[i] % 90);
    Y->data[i * d + 1] += (float)((size_t)shuffle[i] / 90);
  }
  nle__row_range mine = nle__rank_rows(n, nle__ranks(ctx), nle__rank(ctx));
  nle_matf part = {mine.end - mine.begin, d, Y->data + mine.begin * d};
  nle_test_ok(nle__dist_locality_order(one, Y, &alone));
  nle_test_ok(nle__dist_locality_order(ctx, &part, &order));
  nle_test(alone && order && memcmp(alone, order, n * sizeof(int32_t)) == 0);
  int32_t *pos = calloc(n, sizeof(int32_t));
  uint8_t *seen = calloc(n, 1);
  size_t distinct = 0;
  for (size_t i = 0; order && pos && seen && i < n; i++)
    if ((size_t)order[i] < n && !seen[order[i]]++) distinct++, pos[order[i]] = (int32_t)i;
  nle_test(distinct == n);
  nle_csr *G = NULL;
  nle_test_ok(nle_knn_graph(one, Y, 10, NLE_KNN_EXACT, NULL, &G, NULL));
  double in_order = 0.0, in_tree = 0.0;
  for (int64_t i = 0; G && distinct == n && i < G->rows; i++)
    for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1]; q++) {
      in_order += fabs((double)(i - G->colind[q]));
      in_tree += fabs((double)(pos[i] - pos[G->colind[q]]));
    }
  nle_test(in_tree > 0.0 && in_tree < 0.1 * in_order);
  nle_csr_free(&G);
  free(seen);
  free(pos);
  free(order);
  free(alone);
  free(shuffle);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
  nle_ctx_free(&one);
}

/* Rows moved to a permutation's places and back: each rank's rows after
 * the move are the reference's, a matrix's columns renumbered and sorted,
 * its values made single precision. */
static void locality_moves(void) {
  nle_ctx *one = test_ctx(6), *ctx = test_comm_ctx(6);
  size_t n = POINTS;
  const nle_csr *P = shared_p(false);
  int32_t *order = shuffled(n, 43), *pos = malloc(n * sizeof(int32_t));
  for (size_t i = 0; order && pos && i < n; i++) pos[order[i]] = (int32_t)i;
  nle__row_range mine = nle__rank_rows(n, nle__ranks(ctx), nle__rank(ctx));
  nle_csr *W = P ? csr_rows(one, P, mine.begin, mine.end) : NULL;
  nle_test_ok(nle__dist_move_csr(ctx, &W, mine.begin, pos, NLE_F32));
  int rows_ok = W && P && W->rows == (int64_t)(mine.end - mine.begin) && W->dtype == NLE_F32;
  for (size_t r = 0; rows_ok && r < mine.end - mine.begin; r++) {
    size_t from = (size_t)order[mine.begin + r];
    int64_t a = P->rowptr[from], len = P->rowptr[from + 1] - a;
    rows_ok = W->rowptr[r + 1] - W->rowptr[r] == len;
    for (int64_t q = W->rowptr[r]; rows_ok && q < W->rowptr[r + 1]; q++) {
      int32_t c = W->colind[q], found = 0;
      rows_ok = q == W->rowptr[r] || W->colind[q - 1] < c; /* sorted */
      for (int64_t k = a; k < a + len; k++) /* the entry that became (r, c) */
        if (pos[P->colind[k]] == c) {
          found = 1;
          rows_ok = rows_ok && ((const float *)W->val)[q] == (float)nle_csr_value(P, k);
        }
      rows_ok = rows_ok && found;
    }
  }
  nle_test(rows_ok);
  nle_matd *X = test_random_matd(n, 3, 1.0, 44), *there = NULL, *back = NULL;
  nle_matd part = {mine.end - mine.begin, 3, X->data + mine.begin * 3};
  nle_test_ok(nle__dist_move_dense(ctx, &part, mine.begin, n, pos, &there));
  int there_ok = there && there->rows == part.rows;
  for (size_t r = 0; there_ok && r < part.rows; r++)
    there_ok = memcmp(there->data + r * 3, X->data + (size_t)order[mine.begin + r] * 3, 3 * sizeof(double)) == 0;
  nle_test(there_ok);
  if (there) nle_test_ok(nle__dist_move_dense(ctx, there, mine.begin, n, order, &back));
  nle_test(back && back->rows == part.rows && memcmp(back->data, part.data, part.rows * 3 * sizeof(double)) == 0);
  /* not a permutation: refused on every rank, nothing half-made */
  pos[order[1]] = pos[order[0]];
  nle_matd *bad = NULL;
  nle_test(nle__dist_move_dense(ctx, &part, mine.begin, n, pos, &bad) == NLE_ERR_ARG && !bad);
  nle_matd_free(&back);
  nle_matd_free(&there);
  nle_matd_free(&X);
  nle_csr_free(&W);
  free(pos);
  free(order);
  nle_ctx_free(&ctx);
  nle_ctx_free(&one);
}

const nle_test_case mpi_tsne_tests[] = {
    {"mpi/locality_order", locality_order},
    {"mpi/locality_moves", locality_moves},
    {"mpi/tsne_fft_forces_divided", fft_forces_divided},
    {"mpi/tsne_degrees_from_transpose", degrees_from_transpose},
    {"mpi/tsne_start_and_totals", start_and_totals},
    {"mpi/tsne_fft_same_bits", tsne_fft},
    {"mpi/tsne_bh_same_bits", tsne_bh},
    {"mpi/tsne_exact_same_bits", tsne_exact},
    {"mpi/tsne_exact_asymmetric_same_bits", tsne_exact_asymmetric},
    {"mpi/tsne_fft_asymmetric_same_bits", tsne_fft_asymmetric},
    {"mpi/ee_fft_same_bits", ee_fft},
    {"mpi/ee_bh_same_bits", ee_bh},
    {"mpi/ee_exact_same_bits", ee_exact},
    {"mpi/sne_exact_same_bits", sne_exact},
    {"mpi/tsne_refusals", refusals},
    {NULL, NULL},
};
