/* harness.h — the test harness: checks print one line per failure; a case
 * passes when none of its checks failed; the runner closes with
 * "N passed, N failed". */
#ifndef NLE_TEST_HARNESS_H
#define NLE_TEST_HARNESS_H

#include "nlembed.h"

#include <math.h>
#include <stdio.h>

extern int nle_test_case_failures;

static inline int nle_test_check(int ok, const char *what, const char *file, int line) {
  if (!ok) {
    printf("FAIL %s:%d: %s\n", file, line, what);
    nle_test_case_failures++;
  }
  return ok;
}

static inline int nle_test_rel_check(double got, double want, double tol, const char *what, const char *file,
                                     int line) {
  double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
  int ok = fabs(got - want) <= tol * scale;
  if (!ok) {
    printf("FAIL %s:%d: %s: got %.17g, want %.17g (tolerance %g)\n", file, line, what, got, want, tol);
    nle_test_case_failures++;
  }
  return ok;
}

#define nle_test(cond) nle_test_check(!!(cond), #cond, __FILE__, __LINE__)
#define nle_test_rel(got, want, tol) nle_test_rel_check((got), (want), (tol), #got, __FILE__, __LINE__)
#define nle_test_ok(status) nle_test_check((status) == NLE_OK, #status " == NLE_OK", __FILE__, __LINE__)

typedef void (*nle_test_fn)(void);
typedef struct {
  const char *name;
  nle_test_fn fn;
} nle_test_case;

/* Each test file exports a NULL-terminated table. */
extern const nle_test_case core_tests[], io_tests[], neighbors_tests[], affinity_tests[], spectral_tests[],
    metrics_tests[], nle_tests[], optimize_tests[], optimize_run_tests[], api_tests[], spectral_method_tests[], isomap_tests[], mds_tests[], lll_tests[], lll_sparse_tests[], kem_tests[], spectral_oos_tests[], oos_tests[], engines_tests[], nbody_tests[], embed_tests[],
    faults_tests[], estimator_tests[], knn_sparse_tests[], formats_tests[], block_eigen_tests[], comm_tests[],
    mpi_tsne_tests[], mpi_graph_tests[], mpi_io_tests[], mpi_spectral_tests[];

/* A fresh context with one thread and the given seed, for tests. */
nle_ctx *test_ctx(uint64_t seed);
/* test_ctx with the world communicator when the runner was started by
 * mpirun (tests/mpi.sh), else test_ctx: for the cases run on every rank. */
nle_ctx *test_comm_ctx(uint64_t seed);
/* The same with a communicator of this rank alone (MPI_COMM_SELF) under
 * mpirun: a stage's ranks' way at one rank, for bits compared with
 * several; test_ctx's otherwise. */
nle_ctx *test_self_ctx(uint64_t seed);
/* A temporary folder for the files a test writes (removed at exit). */
const char *test_tmpdir(void);
/* Path inside it. */
const char *test_path(const char *name);
/* Writes bytes to a file in the temporary folder; returns its path. */
const char *test_write_file(const char *name, const void *data, size_t len);
/* A uniform number in [0, 1) from a 64-bit LCG state. */
double test_uniform(uint64_t *s);
/* The library's Swiss roll of n points (NULL on failure). */
nle_matf *test_swiss_roll(nle_ctx *ctx, size_t n);
/* Rows idx[0..m) of Y, copied. */
nle_matf *test_rows_of(const nle_matf *Y, const int32_t *idx, size_t m);
/* Random N x D float matrix from a seed. */
nle_matf *test_random_matf(size_t n, size_t d, uint64_t seed);
/* Random N x d embedding, normal with standard deviation `scale`. */
nle_matd *test_random_matd(size_t n, size_t d, double scale, uint64_t seed);
/* Symmetrised entropic affinities of a dataset (k = 3 perplexity, exact
 * kNN), normalised to sum 1: a t-SNE P. */
nle_csr *test_entropic_p(nle_ctx *ctx, const nle_matf *Y, double perplexity);
/* nle_model_spec_init's spec with these three set. */
nle_model_spec test_model_spec(nle_model_kind kind, double lambda, const nle_csr *Wp);

#endif
