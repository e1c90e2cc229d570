/* test_main.c — runs every test table, or the cases whose names contain the
 * first argument. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef NLE_WITH_MPI
#include <mpi.h>
#endif

int nle_test_case_failures;

static char tmpdir[256];

static void remove_tmpdir(void) {
  if (!tmpdir[0]) return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

const char *test_tmpdir(void) {
  if (!tmpdir[0]) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/nlembed-test-XXXXXX");
    if (!mkdtemp(tmpdir)) {
      perror("mkdtemp");
      exit(2);
    }
    atexit(remove_tmpdir);
  }
  return tmpdir;
}

const char *test_path(const char *name) {
  static char buf[4][512];
  static int slot;
  slot = (slot + 1) % 4;
  snprintf(buf[slot], sizeof buf[slot], "%s/%s", test_tmpdir(), name);
  return buf[slot];
}

const char *test_write_file(const char *name, const void *data, size_t len) {
  const char *p = test_path(name);
  FILE *f = fopen(p, "wb");
  if (!f || fwrite(data, 1, len, f) != len) {
    perror(p);
    exit(2);
  }
  fclose(f);
  return p;
}

nle_ctx *test_ctx(uint64_t seed) {
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_threads(ctx, 1);
  nle_ctx_set_seed(ctx, seed);
  return ctx;
}

/* Started by mpirun: every rank runs the cases, rank 0 prints, and a case
 * fails when it failed on any rank. */
#ifdef NLE_WITH_MPI
static bool under_mpirun;
#endif

/* test_ctx's context with the world's communicator, or with this rank's
 * own (MPI_COMM_SELF), under mpirun. */
static nle_ctx *ctx_with_comm(uint64_t seed, bool world) {
  nle_ctx *ctx = test_ctx(seed);
#ifdef NLE_WITH_MPI
  MPI_Comm comm = world ? MPI_COMM_WORLD : MPI_COMM_SELF;
  if (under_mpirun && nle_ctx_set_comm(ctx, &comm) != NLE_OK) {
    fprintf(stderr, "%s\n", nle_ctx_error(ctx));
    exit(2);
  }
#else
  (void)world;
#endif
  return ctx;
}

nle_ctx *test_comm_ctx(uint64_t seed) { return ctx_with_comm(seed, true); }
nle_ctx *test_self_ctx(uint64_t seed) { return ctx_with_comm(seed, false); }

static int failures_on_any_rank(int failures) {
#ifdef NLE_WITH_MPI
  if (under_mpirun) MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#endif
  return failures;
}

static bool printing_rank(void) {
#ifdef NLE_WITH_MPI
  int rank = 0;
  if (under_mpirun) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
#else
  return true;
#endif
}

static void start_mpi(int *argc, char ***argv) {
#ifdef NLE_WITH_MPI
  if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK")) {
    MPI_Init(argc, argv);
    under_mpirun = true;
  }
#else
  (void)argc, (void)argv;
#endif
}

static void stop_mpi(void) {
#ifdef NLE_WITH_MPI
  if (under_mpirun) MPI_Finalize();
#endif
}

nle_matf *test_random_matf(size_t n, size_t d, uint64_t seed) {
  nle_matf *m = NULL;
  nle_ctx *ctx = test_ctx(seed);
  if (nle_matf_alloc(ctx, n, d, &m)) exit(2);
  nle_rng r;
  nle_rng_init(&r, seed, 7);
  for (size_t i = 0; i < n * d; i++) m->data[i] = (float)nle_rng_normal(&r);
  nle_ctx_free(&ctx);
  return m;
}

nle_matd *test_random_matd(size_t n, size_t d, double scale, uint64_t seed) {
  nle_ctx *ctx = test_ctx(seed);
  nle_matd *X;
  if (nle_matd_alloc(ctx, n, d, &X)) exit(2);
  nle_rng r;
  nle_rng_init(&r, seed, 11);
  for (size_t i = 0; i < n * d; i++) X->data[i] = scale * nle_rng_normal(&r);
  nle_ctx_free(&ctx);
  return X;
}

/* Symmetrised entropic affinities of a dataset, normalised to sum 1. */
nle_csr *test_entropic_p(nle_ctx *ctx, const nle_matf *Y, double perplexity) {
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = (int)(3 * perplexity);
  nle_csr *g = NULL, *P = NULL;
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  eo.perplexity = perplexity;
  nle_ea_result *ea = NULL;
  if (nle_knn_exact(ctx, Y, &ko, &g) || nle_entropic_affinities(ctx, g, &eo, &ea) ||
      nle_affinity_symmetrize(ctx, ea->P, 1, &P))
    printf("  affinities failed: %s\n", nle_ctx_error(ctx));
  nle_ea_result_free(&ea);
  nle_csr_free(&g);
  return P;
}

double test_uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0;
}

nle_matf *test_swiss_roll(nle_ctx *ctx, size_t n) {
  char name[64];
  snprintf(name, sizeof name, "swissroll:%zu", n);
  nle_dataset *ds = NULL;
  if (nle_dataset_read(ctx, name, NULL, &ds)) return NULL;
  nle_matf *Y = ds->X;
  ds->X = NULL;
  nle_dataset_free(&ds);
  return Y;
}

nle_matf *test_rows_of(const nle_matf *Y, const int32_t *idx, size_t m) {
  nle_matf *R = NULL;
  nle_matf_alloc(NULL, m, Y->cols, &R);
  for (size_t i = 0; i < m; i++) memcpy(R->data + i * Y->cols, Y->data + (size_t)idx[i] * Y->cols, Y->cols * sizeof(float));
  return R;
}

nle_model_spec test_model_spec(nle_model_kind kind, double lambda, const nle_csr *Wp) {
  nle_model_spec spec;
  nle_model_spec_init(&spec);
  spec.kind = kind;
  spec.lambda = lambda;
  spec.Wp = Wp;
  return spec;
}

int main(int argc, char **argv) {
  const nle_test_case *tables[] = {core_tests, io_tests, neighbors_tests, affinity_tests, spectral_tests,
                                   metrics_tests, nle_tests, optimize_tests, optimize_run_tests, api_tests, spectral_method_tests, isomap_tests, mds_tests, lll_tests, lll_sparse_tests, kem_tests, spectral_oos_tests, oos_tests, engines_tests, nbody_tests, embed_tests,
                                   faults_tests, estimator_tests, knn_sparse_tests, formats_tests, block_eigen_tests, comm_tests,
                                   mpi_tsne_tests, mpi_graph_tests, mpi_io_tests, mpi_spectral_tests};
  start_mpi(&argc, &argv);
  const char *filter = argc > 1 ? argv[1] : NULL;
  int passed = 0, failed = 0;
  bool printing = printing_rank();
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
    for (const nle_test_case *c = tables[t]; c->name; c++) {
      if (filter && !strstr(c->name, filter)) continue;
      nle_test_case_failures = 0;
      double started = nle_time_seconds();
      c->fn();
      /* each case's seconds, so a slow suite shows which case grew */
      double took = nle_time_seconds() - started;
      if (failures_on_any_rank(nle_test_case_failures)) {
        if (printing) printf("FAILED %s (%.2f s)\n", c->name, took);
        failed++;
      } else {
        if (printing) printf("ok %s (%.2f s)\n", c->name, took);
        passed++;
      }
    }
  if (printing) printf("%d passed, %d failed\n", passed, failed);
  stop_mpi();
  return failed ? 1 : 0;
}
