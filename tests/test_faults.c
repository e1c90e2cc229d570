/* test_faults.c — allocation-failure injection (the sanitizer build, with
 * NLE_ALLOC_FAULTS): each workload runs with its n-th allocation failing for
 * n = 1, 2, ... until it completes without reaching n. Every run must return
 * NLE_ERR_NOMEM (or, where a failure is absorbed by a fallback, the same
 * result as the clean run), never crash; LeakSanitizer at exit checks that
 * nothing was leaked on the way out. */
#include "harness.h"
#include "../src/core/internal.h"

#include <string.h>

#ifdef NLE_ALLOC_FAULTS

typedef struct {
  nle_matd *X;       /* the embedding, or NULL */
  nle_csr *G;        /* the graph, or NULL */
  nle_dataset *ds;   /* the data read, or NULL */
} outcome;

static void outcome_free(outcome *o) {
  nle_matd_free(&o->X);
  nle_csr_free(&o->G);
  nle_dataset_free(&o->ds);
}

static int outcome_equal(const outcome *a, const outcome *b) {
  if (a->X && b->X)
    return a->X->rows == b->X->rows && !memcmp(a->X->data, b->X->data, a->X->rows * a->X->cols * sizeof(double));
  if (a->G && b->G)
    return a->G->nnz == b->G->nnz && !memcmp(a->G->colind, b->G->colind, (size_t)a->G->nnz * sizeof(int32_t));
  if (a->ds && b->ds)
    return a->ds->X->rows == b->ds->X->rows && a->ds->n_classes == b->ds->n_classes &&
           !memcmp(a->ds->X->data, b->ds->X->data, a->ds->X->rows * a->ds->X->cols * sizeof(float)) &&
           !memcmp(a->ds->labels, b->ds->labels, a->ds->X->rows * sizeof(int32_t));
  return 0;
}

typedef nle_status (*workload)(nle_ctx *ctx, const nle_matf *Y, outcome *out);

static nle_status knn_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  o.k = 8;
  return nle_knn_exact(ctx, Y, &o, &out->G);
}

/* Queries from elsewhere (Y's rows moved): the sorted queries and the
 * column blocks' boxes. */
static nle_status knn_query_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  nle_matf *Q = NULL;
  nle_status s = nle_matf_alloc(ctx, 40, Y->cols, &Q);
  for (size_t i = 0; !s && i < 40 * Y->cols; i++) Q->data[i] = Y->data[i] + 0.25f;
  if (!s) s = nle_knn_query(ctx, Y, Q, 8, &out->G);
  nle_matf_free(&Q);
  return s;
}

/* A t-SNE model kept, saved, loaded (mapped) and F(y) of 40 moved rows by
 * the FFT engine in ranges. */
static const char *model_path;

static nle_status transform_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  nle_embed_input in = {.Y = Y, .source = "faults"};
  nle_embed_opts o;
  nle_embed_opts_init(&o);
  o.perplexity = 5;
  o.opt.max_iters = 20;
  o.keep_model = 1;
  nle_embed_result *r = NULL;
  nle_trained *t = NULL;
  nle_matf *Q = NULL;
  nle_status s = nle_embed(ctx, &in, &o, &r);
  if (s >= 0) s = nle_trained_save(ctx, r->trained, model_path, true);
  if (!s) s = nle_trained_load(ctx, model_path, &t);
  if (!s) s = nle_trained_set_engine(ctx, t, NLE_REPULSION_FFT);
  if (!s) s = nle_matf_alloc(ctx, 40, Y->cols, &Q);
  for (size_t i = 0; !s && i < 40 * Y->cols; i++) Q->data[i] = Y->data[i] + 0.25f;
  if (!s) s = nle_trained_transform(ctx, t, Q, 50, &out->X);
  nle_matf_free(&Q);
  nle_trained_free(&t);
  nle_embed_result_free(&r);
  return s;
}

static nle_status approx_knn_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  nle_knn_approx_opts o;
  nle_knn_approx_opts_init(&o);
  o.k = 8;
  return nle_knn_approx(ctx, Y, &o, &out->G);
}

/* A gzip'ed CSV with a header and a column of class names:
 * printf 'a,b,label\n1,2,orange\n3,4,rabbit\n5,6,orange\n' | gzip -9 -n */
static const char *csv_path;

static nle_status read_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  (void)Y;
  return nle_dataset_read(ctx, csv_path, NULL, &out->ds);
}

static nle_status embed_workload(nle_ctx *ctx, const nle_matf *Y, nle_model_kind model, nle_repulsion engine,
                                 outcome *out) {
  nle_embed_input in = {.Y = Y, .source = "faults"};
  nle_embed_opts o;
  nle_embed_opts_init(&o);
  o.model = model;
  o.perplexity = 5;
  o.engine = engine;
  o.opt.max_iters = 4;
  nle_embed_result *r = NULL;
  nle_status s = nle_embed(ctx, &in, &o, &r);
  if (r) {
    out->X = r->X;
    r->X = NULL;
  }
  nle_embed_result_free(&r);
  return s;
}

static nle_status ee_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  return embed_workload(ctx, Y, NLE_MODEL_EE, NLE_REPULSION_EXACT, out);
}

static nle_status tsne_fft_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  return embed_workload(ctx, Y, NLE_MODEL_TSNE, NLE_REPULSION_FFT, out);
}

/* Laplacian eigenmaps from the points, both solvers (the sparse one is
 * ARPACK's, the dense one LAPACK's). */
static nle_status le_workload(nle_ctx *ctx, const nle_matf *Y, nle_eigen_solver solver, outcome *out) {
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 8;
  o.solver = solver;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  nle_status s = nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r);
  if (r) {
    out->X = r->X;
    r->X = NULL;
  }
  nle_spectral_result_free(&r);
  return s;
}

static nle_status le_sparse_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  return le_workload(ctx, Y, NLE_EIGEN_SPARSE, out);
}

static nle_status le_dense_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  return le_workload(ctx, Y, NLE_EIGEN_DENSE, out);
}

/* LDA (the svd solver, the classifier kept) with labels 1..3 (encoded). */
static nle_status lda_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  int32_t labels[120];
  for (size_t i = 0; i < Y->rows && i < 120; i++) labels[i] = (int32_t)(i % 3) + 1;
  nle_lda_opts o;
  nle_lda_opts_init(&o);
  o.keep_model = true;
  nle_lda_result *r = NULL;
  nle_status s = nle_lda(ctx, Y, labels, &o, &r);
  nle_matd *sc = NULL;
  if (s >= 0) s = nle_projection_decision(ctx, r->model, Y, &sc, NULL);
  if (s >= 0) {
    out->X = r->X;
    r->X = NULL;
  }
  nle_matd_free(&sc);
  nle_lda_result_free(&r);
  return s;
}

/* The same on 5 of the points: wide (D = 6 > N), the N x N route. */
static nle_status lda_wide_workload(nle_ctx *ctx, const nle_matf *Y, outcome *out) {
  nle_matf five = {5, Y->cols, Y->data};
  return lda_workload(ctx, &five, out);
}

/* Runs `work` failing allocation n = 1, 2, ...; returns how many
 * allocation points were exercised. */
static long inject(const char *name, workload work, const nle_matf *Y) {
  nle_ctx *ctx = test_ctx(3);
  outcome clean = {0};
  nle_status s0 = work(ctx, Y, &clean);
  nle_test(s0 >= 0);
  long n = 1, bad = 0, absorbed = 0;
  for (;; n++) {
    outcome got = {0};
    nle__alloc_fail_at(n);
    nle_status s = work(ctx, Y, &got);
    long reached = nle__alloc_count();
    nle__alloc_fail_at(0);
    if (reached < n) { /* the n-th allocation never came: the run is whole */
      nle_test(s >= 0 && outcome_equal(&got, &clean));
      outcome_free(&got);
      break;
    }
    if (s == NLE_ERR_NOMEM) {
      if (got.X || got.G) bad++; /* a failed call hands nothing back */
    } else if (s >= 0 && outcome_equal(&got, &clean)) {
      absorbed++;
    } else {
      if (bad++ < 3) printf("  %s: allocation %ld failed -> status %d: %s\n", name, n, (int)s, nle_ctx_error(ctx));
    }
    outcome_free(&got);
  }
  if (!nle_test(bad == 0)) printf("  %s: %ld of %ld runs went wrong\n", name, bad, n - 1);
  printf("  %s: %ld allocation points, %ld failures absorbed with the clean result\n", name, n - 1, absorbed);
  outcome_free(&clean);
  nle_ctx_free(&ctx);
  return n - 1;
}

static void allocation_failures(void) {
  nle_matf *Y = test_random_matf(120, 6, 21);
  static const uint8_t csv_gz[] = {
      0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x4b, 0xd4, 0x49, 0xd2, 0xc9, 0x49, 0x4c, 0x4a,
      0xcd, 0xe1, 0x32, 0xd4, 0x31, 0xd2, 0xc9, 0x2f, 0x4a, 0xcc, 0x4b, 0x4f, 0xe5, 0x32, 0xd6, 0x31, 0xd1, 0x29,
      0x4a, 0x4c, 0x4a, 0xca, 0x2c, 0xe1, 0x32, 0xd5, 0x31, 0x83, 0x89, 0x02, 0x00, 0xe6, 0x31, 0xc3, 0x28, 0x2b,
      0x00, 0x00, 0x00};
  static char path[512];
  snprintf(path, sizeof path, "%s", test_write_file("faults.csv.gz", csv_gz, sizeof csv_gz));
  csv_path = path;
  static char model[4096];
  snprintf(model, sizeof model, "%s", test_path("faults_model.nle"));
  model_path = model;
  long points = inject("gzip'ed CSV", read_workload, Y);
  points += inject("exact kNN", knn_workload, Y);
  points += inject("exact kNN of queries", knn_query_workload, Y);
  points += inject("t-SNE model saved, loaded, F(y) by FFT", transform_workload, Y);
  points += inject("approximate kNN", approx_knn_workload, Y);
  points += inject("EE, exact engine", ee_workload, Y);
  points += inject("t-SNE, FFT engine", tsne_fft_workload, Y);
  points += inject("LE, Lanczos", le_sparse_workload, Y);
  points += inject("LE, dense", le_dense_workload, Y);
  points += inject("LDA", lda_workload, Y);
  points += inject("LDA, wide", lda_wide_workload, Y);
  nle_test(points > 200); /* the workloads reach far into the library */
  printf("  %ld allocation points in all\n", points);
  nle_matf_free(&Y);
}

const nle_test_case faults_tests[] = {{"faults/allocation_failures", allocation_failures}, {NULL, NULL}};

#else

const nle_test_case faults_tests[] = {{NULL, NULL}}; /* built with NLE_ALLOC_FAULTS only (make asan) */

#endif
