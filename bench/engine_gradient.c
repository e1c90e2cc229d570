/* engine_gradient.c — issue 5, measurement 2: time per t-SNE (or, with
 * --ee LAMBDA, elastic-embedding) gradient of each repulsion engine on a
 * given embedding X with given affinities, and the relative errors of what
 * the engine computes:
 *   sums:  ||S - S*|| / ||S*|| over the per-point kernel sums
 *          S_n = sum_m K(x_n, x_m) (dissertation eq. 5.8; the error of its
 *          fig. 5.6), from the engine's kernel-sum function;
 *   force: ||G - G*|| / ||R*||, the gradient's error over the size of its
 *          exact repulsive part R* = (4 / Z*) sum_m K^2 (x_n - x_m) for
 *          t-SNE, 4 lambda sum_m K (x_n - x_m) for EE (uniform W-, Gaussian
 *          K): the error of the repulsion the model uses (the attraction is
 *          exact);
 *   Z, E:  the relative errors of Z = sum S_n and of the objective.
 * Times: with E, and of the gradient alone (what the optimisers ask for on
 * most iterations; the attraction's log terms are then skipped).
 * (The error over the whole gradient's size is not shown: near a minimum
 * attraction and repulsion cancel and it magnifies the engine's error
 * without bound.)
 *   build/engine_gradient W.mtx X.npy [--threads K] [--reps R]
 *                         [--fft P:BOX,...] [--fgt P:R,...] [--ee LAMBDA]
 * W.mtx: `nlembed affinity` output (symmetrised, and for t-SNE normalised,
 * here as `nlembed tsne|ee --affinities` does); X.npy: an N x 2 embedding,
 * e.g. the output of `nlembed tsne` (or `ee`) on the same data. Times are
 * medians of R runs. --fft and --fgt list the settings to run instead of the
 * default list (P: order; BOX: box width; R: the FGT's ratio r). */
#include "nlembed.h"
#include "../src/nle/nle_internal.h" /* nle__model_want_energy: the optimisers' gradient-only evaluations */

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

typedef struct {
  nle_repulsion engine;
  double theta, box; /* BH's theta; FFT's box width or FGT's ratio */
  int order;
} setting;

/* Appends the settings listed in `list` ("P:X,...") for `engine` to out[n..cap). */
static size_t parse_settings(const char *list, nle_repulsion engine, setting *out, size_t n, size_t cap) {
  for (const char *c = list; c && *c && n < cap; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL) {
    int order;
    double box;
    if (sscanf(c, "%d:%lf", &order, &box) != 2) {
      fprintf(stderr, "engine_gradient: --fft and --fgt want P:X,... (got %s)\n", c);
      exit(2);
    }
    out[n++] = (setting){engine, 0, box, order};
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: engine_gradient W.mtx X.npy [--threads K] [--reps R] [--fft P:BOX,...] [--fgt P:R,...] "
                    "[--ee LAMBDA]\n");
    return 2;
  }
  int threads = 2, reps = 5;
  double ee_lambda = 0;                             /* > 0: the EE model */
  const char *fft_list = NULL, *fgt_list = NULL; /* only these settings */
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--fft")) fft_list = argv[i + 1];
    else if (!strcmp(argv[i], "--fgt")) fgt_list = argv[i + 1];
    else if (!strcmp(argv[i], "--ee")) ee_lambda = atof(argv[i + 1]);
  }
  int ee = ee_lambda > 0;
  nle_model_kind kind = ee ? NLE_MODEL_EE : NLE_MODEL_TSNE;
  nle_kernel kernel = ee ? NLE_KERNEL_GAUSSIAN : NLE_KERNEL_STUDENT;
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_threads(ctx, threads);
  nle_csr *A = NULL, *P = NULL;
  nle_dataset *ds = NULL;
  nle_matd *X = NULL, *G = NULL, *Gref = NULL;
  if (nle_read_csr_mtx(ctx, argv[1], &A) || nle_affinity_for_model(ctx, A, kind, &P)) die(ctx);
  if (nle_dataset_read(ctx, argv[2], NULL, &ds) || nle_matf_to_matd(ctx, ds->X, &X)) die(ctx);
  size_t n = X->rows, d = X->cols;
  if (nle_matd_alloc(ctx, n, d, &G) || nle_matd_alloc(ctx, n, d, &Gref)) die(ctx);
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n * d; i++) lo = fmin(lo, X->data[i]), hi = fmax(hi, X->data[i]);
  if (ee)
    printf("# EE gradient (lambda %g, uniform W-), N %zu, d %zu, nnz(W+) %lld, X in [%.1f, %.1f], %d threads, median "
           "of %d\n",
           ee_lambda, n, d, (long long)P->nnz, lo, hi, threads, reps);
  else
    printf("# t-SNE gradient, N %zu, d %zu, nnz(P) %lld, X in [%.1f, %.1f], %d threads, median of %d\n", n, d,
           (long long)P->nnz, lo, hi, threads, reps);
  nle_model_spec spec;
  nle_model_spec_init(&spec);
  spec.kind = kind;
  spec.lambda = ee ? ee_lambda : 1.0;
  spec.Wp = P;
  nle_model *m = NULL;
  double Eref, E;
  if (nle_model_new(ctx, &spec, &m)) die(ctx);
  double t_exact = timed(ctx, m, X, Gref, &Eref, reps < 3 ? reps : 3), rnorm = 0;
  if (ee) {
    /* EE's gradient is affine in lambda: its repulsive part is G(2 lambda) - G(lambda). */
    if (nle_model_set_lambda(ctx, m, 2 * ee_lambda) || nle_model_eval(ctx, m, X, &E, G)) die(ctx);
    for (size_t i = 0; i < n * d; i++) rnorm += (G->data[i] - Gref->data[i]) * (G->data[i] - Gref->data[i]);
    rnorm = sqrt(rnorm);
  }
  nle_model_free(&m);
  printf("exact            %8.1f ms  E %.6f\n", 1e3 * t_exact, Eref);
  setting tsne_cases[] = {{NLE_REPULSION_BH, 0.2, 0, 0},   {NLE_REPULSION_BH, 0.3, 0, 0},   {NLE_REPULSION_BH, 0.5, 0, 0},
                          {NLE_REPULSION_FFT, 0, 0.85, 3}, {NLE_REPULSION_FFT, 0, 1.0, 3},  {NLE_REPULSION_FFT, 0, 0.75, 3},
                          {NLE_REPULSION_FFT, 0, 0.5, 3},  {NLE_REPULSION_FFT, 0, 1.5, 3},  {NLE_REPULSION_FFT, 0, 1.0, 2},
                          {NLE_REPULSION_FFT, 0, 1.2, 4},  {NLE_REPULSION_FFT, 0, 1.0, 4},  {NLE_REPULSION_FFT, 0, 1.0, 5},
                          {NLE_REPULSION_FFT, 0, 0.5, 4}};
  setting ee_cases[] = {{NLE_REPULSION_BH, 0.2, 0, 0},   {NLE_REPULSION_BH, 0.5, 0, 0},   {NLE_REPULSION_FGT, 0, 0.5, 2},
                        {NLE_REPULSION_FGT, 0, 0.5, 3},  {NLE_REPULSION_FGT, 0, 0.5, 4},  {NLE_REPULSION_FGT, 0, 0.5, 6},
                        {NLE_REPULSION_FFT, 0, 0.5, 3},  {NLE_REPULSION_FFT, 0, 0.85, 3}, {NLE_REPULSION_FFT, 0, 1.0, 3},
                        {NLE_REPULSION_FFT, 0, 1.0, 4}};
  setting chosen[64], *cases = ee ? ee_cases : tsne_cases;
  size_t ncases = ee ? sizeof ee_cases / sizeof *ee_cases : sizeof tsne_cases / sizeof *tsne_cases;
  if (fft_list || fgt_list) {
    ncases = parse_settings(fft_list, NLE_REPULSION_FFT, chosen, 0, 32);
    ncases = parse_settings(fgt_list, NLE_REPULSION_FGT, chosen, ncases, 64);
    cases = chosen;
  }
  /* The exact kernel sums, repulsive forces and Z. */
  double *S = malloc(n * sizeof(double)), *Sref = malloc(n * sizeof(double)), *Sx = malloc(n * d * sizeof(double));
  double Zref = 0, snorm = 0;
  if (!ee) {
    if (nle_kernel_sums_exact(ctx, X, NLE_KERNEL_STUDENT2, S, Sx)) die(ctx);
    for (size_t i = 0; i < n; i++)
      for (size_t t = 0; t < d; t++) {
        double f = X->data[i * d + t] * S[i] - Sx[i * d + t];
        rnorm += f * f;
      }
  }
  if (nle_kernel_sums_exact(ctx, X, kernel, Sref, NULL)) die(ctx);
  for (size_t i = 0; i < n; i++) Zref += Sref[i], snorm += Sref[i] * Sref[i];
  if (!ee) rnorm = 4.0 / Zref * sqrt(rnorm);
  for (size_t c = 0; c < ncases; c++) {
    if (cases[c].engine == NLE_REPULSION_FGT && !ee) continue; /* Gaussian only */
    spec.engine = cases[c].engine;
    if (cases[c].engine == NLE_REPULSION_BH) spec.theta = cases[c].theta; /* the others: a valid one they ignore */
    nle_fft_opts_init(&spec.fft);
    nle_fgt_opts_init(&spec.fgt);
    if (cases[c].engine == NLE_REPULSION_FFT) {
      spec.fft.order = cases[c].order;
      spec.fft.box_width = cases[c].box;
      spec.fft.max_nodes = 4096;
    } else if (cases[c].engine == NLE_REPULSION_FGT) {
      spec.fgt.order = cases[c].order;
      spec.fgt.ratio = cases[c].box;
    }
    if (nle_model_new(ctx, &spec, &m)) die(ctx);
    double t = timed(ctx, m, X, G, &E, reps), gerr = 0, serr = 0, Z = 0, Eg;
    nle__model_want_energy(m, 0);
    double t_grad = timed(ctx, m, X, G, &Eg, reps);
    nle__model_want_energy(m, 1);
    nle_model_free(&m);
    for (size_t i = 0; i < n * d; i++) gerr += (G->data[i] - Gref->data[i]) * (G->data[i] - Gref->data[i]);
    nle_status st = cases[c].engine == NLE_REPULSION_BH    ? nle_kernel_sums_bh(ctx, X, kernel, cases[c].theta, S, NULL)
                    : cases[c].engine == NLE_REPULSION_FGT ? nle_kernel_sums_fgt(ctx, X, &spec.fgt, S, NULL)
                                                           : nle_kernel_sums_fft(ctx, X, kernel, &spec.fft, S, NULL);
    if (st) die(ctx);
    for (size_t i = 0; i < n; i++) Z += S[i], serr += (S[i] - Sref[i]) * (S[i] - Sref[i]);
    if (cases[c].engine == NLE_REPULSION_BH)
      printf("bh theta %.2f    ", cases[c].theta);
    else if (cases[c].engine == NLE_REPULSION_FGT)
      printf("fgt p %d r %.2f   ", cases[c].order, cases[c].box);
    else
      printf("fft p %d box %.2f ", cases[c].order, cases[c].box);
    printf("%7.1f ms (gradient alone %5.1f)  sums error %.2e  force error %.2e  Z error %.2e  E error %.2e\n", 1e3 * t,
           1e3 * t_grad, sqrt(serr / snorm), sqrt(gerr) / rnorm, fabs(Z - Zref) / Zref, fabs(E - Eref) / Eref);
    fflush(stdout);
  }
  free(Sref);
  free(S);
  free(Sx);
  nle_matd_free(&X);
  nle_matd_free(&G);
  nle_matd_free(&Gref);
  nle_csr_free(&A);
  nle_csr_free(&P);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
  return 0;
}
