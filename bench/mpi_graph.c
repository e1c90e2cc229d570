/* mpi_graph.c — the graph stage (nle_graph_build with t-SNE's choices:
 * k = 90, entropic weights of perplexity 30, the search among 50 principal
 * components re-ranked in the data) on rows shared out over the ranks of
 * mpirun, or alone. Each rank reads only its canonical rows of a float32
 * .npy and prints one line: its rows, each stage's seconds and the bytes it
 * sent, its peak resident memory (after reading, and at the end), and a
 * checksum of its rows of the kNN graph and of W. Alone, --blocks R prints
 * the checksums of the rows R ranks would hold, to compare bit for bit.
 *   mpirun -np 2 build/mpi_graph X.npy [--threads 1] [--method auto|exact|approx]
 *   build/mpi_graph X.npy --threads 2 --blocks 2
 * --verbose: the stages' own timings on stderr (rank 0); twice: each
 * round's.
 * --search-only: only the approximate search (nle_knn_approx, k = 90) on
 * the rows as they are (t-SNE's 50 principal components, say): its
 * seconds, bytes, peak and the checksum of its rows of the graph. */
#include "nlembed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifdef NLE_WITH_MPI
#include <mpi.h>
#endif

/* nle__rank_rows's rule (src/core/comm.c): whole blocks of 4,096 rows, as
 * evenly as blocks allow, in rank order. */
static void share(size_t n, int ranks, int rank, size_t *begin, size_t *end) {
  size_t blocks = (n + 4095) / 4096, per = blocks / (size_t)ranks, extra = blocks % (size_t)ranks;
  size_t first = per * (size_t)rank + ((size_t)rank < extra ? (size_t)rank : extra);
  size_t count = per + ((size_t)rank < extra);
  *begin = first * 4096 < n ? first * 4096 : n;
  *end = (first + count) * 4096 < n ? (first + count) * 4096 : n;
}

static void fail(const char *what) {
  fprintf(stderr, "mpi_graph: %s\n", what);
  exit(1);
}

/* Rows [begin, end) of a float32 C-order .npy of shape (N, D). */
static nle_matf read_rows(const char *path, int rank, int ranks, size_t *n_out, size_t *begin) {
  FILE *f = fopen(path, "rb");
  unsigned char head[12];
  if (!f || fread(head, 1, 10, f) != 10) fail("cannot read the .npy");
  size_t hlen = head[8] | (size_t)head[9] << 8, pre = 10;
  if (head[6] >= 2) {
    if (fread(head + 10, 1, 2, f) != 2) fail("short header");
    hlen = head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24;
    pre = 12;
  }
  char *h = calloc(hlen + 1, 1);
  if (!h || fread(h, 1, hlen, f) != hlen || !strstr(h, "'<f4'") || strstr(h, "True")) fail("need float32, C order");
  size_t n = 0, d = 0;
  char *shape = strstr(h, "'shape': (");
  if (!shape || sscanf(shape, "'shape': (%zu, %zu)", &n, &d) != 2) fail("need a 2-D array");
  free(h);
  size_t end;
  share(n, ranks, rank, begin, &end);
  nle_matf Y = {end - *begin, d, malloc((end - *begin) * d * sizeof(float) + 1)};
  if (!Y.data || fseek(f, (long)(pre + hlen + *begin * d * sizeof(float)), SEEK_SET) ||
      fread(Y.data, sizeof(float), Y.rows * d, f) != Y.rows * d)
    fail("cannot read the rows");
  fclose(f);
  *n_out = n;
  return Y;
}

static unsigned long long fnv(unsigned long long h, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
  return h;
}

/* The checksum of rows [r0, r1) of a CSR (values of `width` bytes). */
static unsigned long long rows_sum(const nle_csr *A, size_t r0, size_t r1, size_t width) {
  int64_t a = A->rowptr[r0], b = A->rowptr[r1];
  unsigned long long h = fnv(1469598103934665603ull, A->colind + a, (size_t)(b - a) * 4);
  return fnv(h, (const char *)A->val + (size_t)a * width, (size_t)(b - a) * width);
}

static double peak_mib(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_maxrss / 1024.0;
}

/* The checksums of the blocks a run on `blocks` ranks holds (this rank's
 * own rows when distributed) of the kNN graph and, when not NULL, W; the
 * JSON line closed; everything freed. */
static int finish(nle_ctx *ctx, nle_matf *Y, int ranks, int rank, int blocks, size_t n, nle_csr *knn, nle_csr *W) {
  for (int b = 0; b < (ranks > 1 ? 1 : blocks); b++) {
    size_t r0 = 0, r1 = Y->rows;
    if (ranks == 1) share(n, blocks, b, &r0, &r1);
    printf(", \"block%d\": [\"%016llx\"", ranks > 1 ? rank : b, rows_sum(knn, r0, r1, 4));
    if (W) printf(", \"%016llx\"", rows_sum(W, r0, r1, 8));
    printf("]");
  }
  printf("}\n");
  nle_ctx_free(&ctx);
  free(Y->data);
#ifdef NLE_WITH_MPI
  MPI_Finalize();
#endif
  return 0;
}

static void log_line(void *user, int level, const char *line) {
  (void)user, (void)level;
  fprintf(stderr, "%s\n", line);
}

int main(int argc, char **argv) {
  int ranks = 1, rank = 0, threads = 1, blocks = 1, verbose = 0, search_only = 0;
  const char *data = NULL, *method = "auto";
#ifdef NLE_WITH_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--method") && i + 1 < argc) method = argv[++i];
    else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) blocks = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--verbose")) verbose = verbose ? verbose + 1 : 2;
    else if (!strcmp(argv[i], "--search-only")) search_only = 1;
    else data = argv[i];
  }
  if (!data) fail("usage: mpi_graph X.npy [--threads T] [--method auto|exact|approx] [--blocks R]");
  size_t n = 0, begin = 0;
  double t0 = nle_time_seconds();
  nle_matf Y = read_rows(data, rank, ranks, &n, &begin);
  double read_s = nle_time_seconds() - t0, read_peak = peak_mib();
  nle_ctx *ctx = nle_ctx_new();
  if (!ctx) fail("no context");
  nle_ctx_set_threads(ctx, threads);
  nle_ctx_set_verbosity(ctx, rank == 0 ? verbose : 0);
  if (verbose) nle_ctx_set_log(ctx, log_line, NULL);
#ifdef NLE_WITH_MPI
  if (ranks > 1) {
    MPI_Comm world = MPI_COMM_WORLD;
    if (nle_ctx_set_comm(ctx, &world) != NLE_OK) fail(nle_ctx_error(ctx));
  }
#endif
  if (search_only) {
    nle_knn_approx_opts ao;
    nle_knn_approx_opts_init(&ao);
    ao.k = 90;
    nle_csr *g = NULL;
    t0 = nle_time_seconds();
    if (nle_knn_approx(ctx, &Y, &ao, &g) != NLE_OK) fail(nle_ctx_error(ctx));
    double knn_s = nle_time_seconds() - t0;
    printf("{\"ranks\": %d, \"rank\": %d, \"threads\": %d, \"n\": %zu, \"rows\": %zu, \"search_seconds\": %.2f, "
           "\"peak_mib_after_read\": %.0f, \"peak_mib\": %.0f",
           ranks, rank, threads, n, Y.rows, knn_s, read_peak, peak_mib());
    finish(ctx, &Y, ranks, rank, blocks, n, g, NULL);
    nle_csr_free(&g);
    return 0;
  }
  nle_graph_opts go;
  nle_graph_opts_init(&go);
  go.k = 90;
  go.weights = NLE_AFF_ENTROPIC;
  go.perplexity = 30;
  go.method = !strcmp(method, "exact") ? NLE_KNN_EXACT : !strcmp(method, "approx") ? NLE_KNN_APPROX : NLE_KNN_AUTO;
  nle_graph_result *r = NULL;
  t0 = nle_time_seconds();
  nle_status s = nle_graph_build(ctx, &Y, &go, &r);
  double total = nle_time_seconds() - t0;
  if (s < 0) fail(nle_ctx_error(ctx));
  printf("{\"ranks\": %d, \"rank\": %d, \"threads\": %d, \"n\": %zu, \"rows\": %zu, \"method\": \"%s\", "
         "\"read_seconds\": %.2f, \"pca_seconds\": %.2f, \"knn_seconds\": %.2f, \"weights_seconds\": %.2f, "
         "\"graph_seconds\": %.2f, \"pca_bytes\": %llu, \"knn_bytes\": %llu, \"weights_bytes\": %llu, "
         "\"peak_mib_after_read\": %.0f, \"peak_mib\": %.0f",
         ranks, rank, threads, n, Y.rows, nle_knn_method_name(r->resolved.method), read_s, r->pca_seconds,
         r->knn_seconds, r->weights_seconds, total, (unsigned long long)r->pca_bytes,
         (unsigned long long)r->knn_bytes, (unsigned long long)r->weights_bytes, read_peak, peak_mib());
  finish(ctx, &Y, ranks, rank, blocks, n, r->knn, r->W);
  nle_graph_result_free(&r);
  return 0;
}
