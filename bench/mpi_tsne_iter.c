/* mpi_tsne_iter.c — issue 38: the t-SNE iterations distributed, per
 * iteration: seconds, bytes each rank sends, and peak memory per rank.
 *   build/mpi_tsne_iter P.mtx X.npy [--iters N] [--threads K] [--engine fft|bh|exact] [--check X.npy]
 *   mpirun -np R build/mpi_tsne_iter P.mtx X.npy ...
 * P.mtx: `nlembed affinity` output (symmetrised and normalised here as
 * t-SNE does); X.npy: the start (N x 2), e.g. a finished `nlembed tsne`
 * map, whose extent sets the FFT grid's size as in the late iterations.
 * Every rank reads both whole (a bench, not the front door) and keeps its
 * canonical rows; the iterations are t-SNE's fixed-rate ones without
 * exaggeration. Rank 0 prints one line per run; --out writes rank 0's
 * gathered result for a bit comparison between runs. */
#include "nlembed.h"
#include "../src/core/comm.h"
#include "../src/nle/model_internal.h" /* nle__model_set_locality_min, the evaluations' seconds */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void die(nle_ctx *ctx) {
  fprintf(stderr, "mpi_tsne_iter: %s\n", nle_ctx_error(ctx));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static nle_csr *csr_rows(nle_ctx *ctx, const nle_csr *W, size_t begin, size_t end) {
  int64_t q0 = W->rowptr[begin], nnz = W->rowptr[end] - q0;
  size_t width = W->dtype == NLE_F32 ? sizeof(float) : sizeof(double);
  nle_csr *out = NULL;
  if (nle_csr_alloc(ctx, (int64_t)(end - begin), W->cols, nnz, W->dtype, &out)) die(ctx);
  for (size_t i = 0; i <= end - begin; i++) out->rowptr[i] = W->rowptr[begin + i] - q0;
  memcpy(out->colind, W->colind + q0, (size_t)nnz * sizeof(int32_t));
  memcpy(out->val, (const char *)W->val + (size_t)q0 * width, (size_t)nnz * width);
  return out;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 3) {
    fprintf(stderr, "usage: mpi_tsne_iter P.mtx X.npy [--iters N] [--threads K] [--engine fft|bh|exact] [--out F]\n");
    return 2;
  }
  int iters = 50, threads = 1, locality = 1;
  const char *engine = "fft", *out = NULL;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--engine")) engine = argv[i + 1];
    else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
    else if (!strcmp(argv[i], "--locality")) locality = atoi(argv[i + 1]);
  }
  nle_ctx *ctx = nle_ctx_new();
  MPI_Comm world = MPI_COMM_WORLD;
  if (!ctx || nle_ctx_set_comm(ctx, &world)) die(ctx);
  nle_ctx_set_threads(ctx, threads);
  int ranks = nle_ctx_ranks(ctx), me = nle_ctx_rank(ctx);
  nle_csr *A = NULL, *P = NULL;
  nle_dataset *ds = NULL;
  nle_matd *Xall = NULL, *X = NULL;
  /* read whole on every rank: a context without the communicator (with
   * one, the readers give each rank its rows) */
  nle_ctx *alone = nle_ctx_new();
  if (!alone) die(ctx);
  if (nle_read_csr_mtx(alone, argv[1], &A) || nle_affinity_for_model(alone, A, NLE_MODEL_TSNE, &P)) die(alone);
  if (nle_dataset_read(alone, argv[2], NULL, &ds) || nle_matf_to_matd(alone, ds->X, &Xall)) die(alone);
  nle_ctx_free(&alone);
  nle_csr_free(&A);
  size_t n = Xall->rows, d = Xall->cols;
  nle__row_range mine = nle__rank_rows(n, ranks, me);
  nle_csr *Pmine = csr_rows(ctx, P, mine.begin, mine.end);
  nle_csr_free(&P);
  if (nle_matd_alloc(ctx, mine.end - mine.begin, d, &X)) die(ctx);
  memcpy(X->data, Xall->data + mine.begin * d, (mine.end - mine.begin) * d * sizeof(double));
  nle_model_spec spec;
  nle_model_spec_init(&spec);
  spec.kind = NLE_MODEL_TSNE;
  spec.Wp = Pmine;
  spec.engine = nle_repulsion_parse(engine);
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  oo.kind = NLE_OPT_GD;
  oo.fixed_rate = true;
  oo.learning_rate = (double)n / 12.0;
  oo.exaggeration_iters = 0;
  oo.max_iters = iters;
  nle_model *m = NULL;
  nle_opt *o = NULL;
  nle_opt_report rep;
  if (nle_model_new(ctx, &spec, &m) || nle_opt_new(ctx, m, Pmine, &oo, &o)) die(ctx);
  /* --locality 0: the single process without its locality order, as the
   * distributed runs (then the same bits) */
  if (!locality) nle__model_set_locality_min(m, INT64_MAX);
  /* a halo exchange would send each rank the rows its rows' neighbours
   * live in: how many of the others' rows that is */
  unsigned char *seen = calloc(n, 1);
  double halo = 0;
  for (int64_t q = 0; seen && q < Pmine->nnz; q++) {
    size_t c = (size_t)Pmine->colind[q];
    if ((c < mine.begin || c >= mine.end) && !seen[c]) seen[c] = 1, halo++;
  }
  free(seen);
  if (nle__comm_max_d(ctx, &halo, 1)) die(ctx);
  uint64_t sent0 = nle__comm_bytes_sent(ctx);
  double t0 = nle_time_seconds();
  if (nle_opt_run(ctx, o, X, &rep) < 0) die(ctx);
  double seconds = nle_time_seconds() - t0;
  double per_rank[2] = {(double)(nle__comm_bytes_sent(ctx) - sent0), 0};
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  per_rank[1] = (double)ru.ru_maxrss / 1024.0;
  double worst[2] = {per_rank[0], per_rank[1]};
  if (nle__comm_max_d(ctx, worst, 2)) die(ctx);
  /* the run's evaluations: iters + 1 (the final E) */
  if (me == 0)
    printf("{\"ranks\": %d, \"threads\": %d, \"engine\": \"%s\", \"n\": %zu, \"locality\": %d, \"iterations\": %d, "
           "\"seconds\": %.3f, \"ms_per_iteration\": %.2f, \"bytes_per_iteration_per_rank\": %.0f, \"halo_rows_max\": %.0f, "
           "\"peak_mb_per_rank\": %.0f, \"repulsion_ms\": %.2f, \"attraction_ms\": %.2f, \"E\": %.17g}\n",
           ranks, threads, engine, n, locality, rep.iterations, seconds, 1e3 * seconds / (rep.iterations + 1),
           worst[0] / (rep.iterations + 1), halo, worst[1], 1e3 * m->seconds_repulsion / (double)m->evaluations,
           1e3 * m->seconds_attraction / (double)m->evaluations, rep.E);
  nle_matd *full = NULL;
  if (out && !nle_matd_alloc(ctx, n, d, &full) &&
      !nle__comm_allgatherv(ctx, X->data, X->rows * d * sizeof(double), full->data, NULL) && me == 0) {
    FILE *f = fopen(out, "wb");
    if (f) fwrite(full->data, sizeof(double), n * d, f), fclose(f);
  }
  nle_matd_free(&full);
  nle_opt_free(&o);
  nle_model_free(&m);
  nle_csr_free(&Pmine);
  nle_matd_free(&X);
  nle_matd_free(&Xall);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
  MPI_Finalize();
  return 0;
}
