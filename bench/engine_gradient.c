/* engine_gradient.c — issue 5, measurement 2: time per t-SNE gradient of
 * each repulsion engine on a given embedding X with given affinities, and
 * the relative error of what the engine computes: the repulsive forces
 * F_n = sum_m K^2 (x_n - x_m), as ||F - F*|| / ||F*||, and Z = sum K. (The
 * error of the whole gradient is printed too, but near a minimum attraction
 * and repulsion cancel and it magnifies the engine's error without bound.)
 *   build/engine_gradient W.mtx X.npy [--threads K] [--reps R]
 * W.mtx: `nlembed affinity` output (symmetrised and normalised here as
 * `nlembed tsne --affinities` does); X.npy: an N x 2 embedding, e.g. the
 * output of `nlembed tsne` on the same data. Times are medians of R runs. */
#include "nlembed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(nle_ctx *ctx) {
  fprintf(stderr, "engine_gradient: %s\n", nle_ctx_error(ctx));
  exit(1);
}

/* Median seconds of `reps` evaluations; the gradient into G. */
static double timed(nle_ctx *ctx, nle_model *m, const nle_matd *X, nle_matd *G, double *E, int reps) {
  double t[64];
  if (reps > 64) reps = 64;
  for (int r = 0; r < reps; r++) {
    double t0 = nle_time_seconds();
    if (nle_model_eval(ctx, m, X, E, G)) die(ctx);
    t[r] = nle_time_seconds() - t0;
  }
  qsort(t, (size_t)reps, sizeof(double), cmp);
  return t[reps / 2];
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: engine_gradient W.mtx X.npy [--threads K] [--reps R]\n");
    return 2;
  }
  int threads = 2, reps = 5;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
  }
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_threads(ctx, threads);
  nle_csr *A = NULL, *P = NULL;
  nle_dataset *ds = NULL;
  nle_matd *X = NULL, *G = NULL, *Gref = NULL;
  if (nle_read_csr_mtx(ctx, argv[1], &A) || nle_affinity_for_model(ctx, A, NLE_MODEL_TSNE, &P)) die(ctx);
  if (nle_dataset_read(ctx, argv[2], NULL, &ds) || nle_matf_to_matd(ctx, ds->X, &X)) die(ctx);
  size_t n = X->rows, d = X->cols;
  if (nle_matd_alloc(ctx, n, d, &G) || nle_matd_alloc(ctx, n, d, &Gref)) die(ctx);
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n * d; i++) lo = fmin(lo, X->data[i]), hi = fmax(hi, X->data[i]);
  printf("# t-SNE gradient, N %zu, d %zu, nnz(P) %lld, X in [%.1f, %.1f], %d threads, median of %d\n", n, d,
         (long long)P->nnz, lo, hi, threads, reps);
  nle_model_spec spec = {NLE_MODEL_TSNE, 1.0, P, NLE_WNEG_UNIFORM, NULL, NULL, NLE_REPULSION_EXACT, 0, {0}, {0}, NULL};
  nle_model *m = NULL;
  double Eref, E;
  if (nle_model_new(ctx, &spec, &m)) die(ctx);
  double t_exact = timed(ctx, m, X, Gref, &Eref, reps < 3 ? reps : 3);
  nle_model_free(&m);
  double gnorm = 0;
  for (size_t i = 0; i < n * d; i++) gnorm += Gref->data[i] * Gref->data[i];
  gnorm = sqrt(gnorm);
  printf("exact            %8.1f ms  E %.6f\n", 1e3 * t_exact, Eref);
  struct {
    nle_repulsion engine;
    double theta, box;
    int order;
  } cases[] = {{NLE_REPULSION_BH, 0.2, 0, 0},  {NLE_REPULSION_BH, 0.3, 0, 0},  {NLE_REPULSION_BH, 0.5, 0, 0},
               {NLE_REPULSION_FFT, 0, 0.5, 3}, {NLE_REPULSION_FFT, 0, 0.75, 3}, {NLE_REPULSION_FFT, 0, 1.0, 3},
               {NLE_REPULSION_FFT, 0, 1.5, 3}, {NLE_REPULSION_FFT, 0, 0.25, 2}, {NLE_REPULSION_FFT, 0, 0.5, 2},
               {NLE_REPULSION_FFT, 0, 1.0, 2}, {NLE_REPULSION_FFT, 0, 1.0, 4},  {NLE_REPULSION_FFT, 0, 1.0, 5},
               {NLE_REPULSION_FFT, 0, 0.5, 4}};
  /* The exact repulsive forces and Z. */
  double *S = malloc(n * sizeof(double)), *Sx = malloc(n * d * sizeof(double));
  double *F = malloc(n * d * sizeof(double)), *Fref = malloc(n * d * sizeof(double)), Zref = 0, fnorm = 0;
  if (nle_kernel_sums_exact(ctx, X, NLE_KERNEL_STUDENT2, S, Sx)) die(ctx);
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) Fref[i * d + t] = X->data[i * d + t] * S[i] - Sx[i * d + t];
  for (size_t i = 0; i < n * d; i++) fnorm += Fref[i] * Fref[i];
  if (nle_kernel_sums_exact(ctx, X, NLE_KERNEL_STUDENT, S, NULL)) die(ctx);
  for (size_t i = 0; i < n; i++) Zref += S[i];
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    spec.engine = cases[c].engine;
    spec.theta = cases[c].theta;
    nle_fft_opts_init(&spec.fft);
    if (cases[c].order) {
      spec.fft.order = cases[c].order;
      spec.fft.box_width = cases[c].box;
      spec.fft.max_nodes = 4096;
    }
    if (nle_model_new(ctx, &spec, &m)) die(ctx);
    double t = timed(ctx, m, X, G, &E, reps), err = 0, ferr = 0, Z = 0;
    nle_model_free(&m);
    for (size_t i = 0; i < n * d; i++) err += (G->data[i] - Gref->data[i]) * (G->data[i] - Gref->data[i]);
    /* The same engine's forces and Z through the kernel-sum functions. */
    nle_status st = cases[c].engine == NLE_REPULSION_BH
                        ? nle_kernel_sums_bh(ctx, X, NLE_KERNEL_STUDENT2, cases[c].theta, S, Sx)
                        : nle_kernel_sums_fft(ctx, X, NLE_KERNEL_STUDENT2, &spec.fft, S, Sx);
    if (st) die(ctx);
    for (size_t i = 0; i < n; i++)
      for (size_t q = 0; q < d; q++) F[i * d + q] = X->data[i * d + q] * S[i] - Sx[i * d + q];
    for (size_t i = 0; i < n * d; i++) ferr += (F[i] - Fref[i]) * (F[i] - Fref[i]);
    st = cases[c].engine == NLE_REPULSION_BH ? nle_kernel_sums_bh(ctx, X, NLE_KERNEL_STUDENT, cases[c].theta, S, NULL)
                                            : nle_kernel_sums_fft(ctx, X, NLE_KERNEL_STUDENT, &spec.fft, S, NULL);
    if (st) die(ctx);
    for (size_t i = 0; i < n; i++) Z += S[i];
    if (cases[c].engine == NLE_REPULSION_BH)
      printf("bh theta %.2f    ", cases[c].theta);
    else
      printf("fft p %d box %.2f ", cases[c].order, cases[c].box);
    printf("%8.1f ms  force error %.2e  Z error %.2e  (gradient %.2e, E %.2e)\n", 1e3 * t, sqrt(ferr / fnorm),
           fabs(Z - Zref) / Zref, sqrt(err) / gnorm, fabs(E - Eref) / Eref);
    fflush(stdout);
  }
  free(S);
  free(Sx);
  free(F);
  free(Fref);
  nle_matd_free(&X);
  nle_matd_free(&G);
  nle_matd_free(&Gref);
  nle_csr_free(&A);
  nle_csr_free(&P);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
  return 0;
}
