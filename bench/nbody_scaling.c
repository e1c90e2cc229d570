/* nbody_scaling.c — issue 5, measurement 1 (like dissertation fig. 5.6):
 * time and relative error of the kernel-sum engines against N, for uniform
 * and clustered 2-D points, and the fitted slope of log time against log N.
 * The error is nle_kernel_sums_error's on 500 sampled points.
 *   build/nbody_scaling [--engine bh|fft|fgt] [--max-n N] [--min-n N] [--theta T]
 *                       [--order P] [--box W] [--max-nodes M] [--kernel student|gauss]
 *                       [--fgt-order P] [--side S] [--threads K] [--warm]
 * The points spread over a square of side sqrt(N) (as a t-SNE map of N
 * points: constant density), or of a fixed side S (rising density). fgt
 * sums the Gaussian kernel. With --warm the FFT engine keeps one work
 * space (FFTW plans, grids, transformed kernels) across the calls and the
 * first call is not timed: the cost per iteration of an optimisation,
 * which keeps its work space while the grid's shape is unchanged. Without
 * it each call is a one-shot nle_kernel_sums_fft (allocation, planning and
 * the kernels' transforms included).
 * Prints one line per (set, N) and the slopes. */
#include "nlembed.h"
#include "../src/nbody/nbody.h" /* nle__kernel_sums_fft_ws: a work space kept across calls */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nle_matd *make_points(nle_ctx *ctx, size_t n, int clustered, double fixed_side) {
  nle_matd *X;
  if (nle_matd_alloc(ctx, n, 2, &X)) exit(2);
  nle_rng r;
  nle_rng_init(&r, 7, clustered);
  double side = fixed_side > 0 ? fixed_side : sqrt((double)n);
  for (size_t i = 0; i < n; i++) {
    if (clustered) {
      int c = (int)nle_rng_below(&r, 10);
      double cx = side * cos(0.628 * c) * 0.4, cy = side * sin(0.628 * c) * 0.4;
      X->data[2 * i] = cx + 0.05 * side * nle_rng_normal(&r);
      X->data[2 * i + 1] = cy + 0.05 * side * nle_rng_normal(&r);
    } else {
      X->data[2 * i] = side * nle_rng_uniform(&r);
      X->data[2 * i + 1] = side * nle_rng_uniform(&r);
    }
  }
  return X;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  size_t max_n = 1000000, min_n = 1000;
  double theta = 0.5, fixed_side = 0;
  int threads = 2, warm = 0;
  nle_repulsion engine = NLE_REPULSION_BH;
  nle_fgt_opts go;
  nle_fgt_opts_init(&go);
  nle_kernel kernel = NLE_KERNEL_STUDENT;
  nle_fft_opts fo;
  nle_fft_opts_init(&fo);
  for (int i = 1; i < argc; i += 2) {
    if (!strcmp(argv[i], "--warm")) {
      warm = 1;
      i--;
      continue;
    }
    if (i + 1 == argc) break;
    if (!strcmp(argv[i], "--max-n")) max_n = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--min-n")) min_n = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--theta")) theta = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--order")) fo.order = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--box")) fo.box_width = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-nodes")) fo.max_nodes = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--engine"))
      engine = !strcmp(argv[i + 1], "fft") ? NLE_REPULSION_FFT : !strcmp(argv[i + 1], "fgt") ? NLE_REPULSION_FGT : NLE_REPULSION_BH;
    else if (!strcmp(argv[i], "--fgt-order")) go.order = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--side")) fixed_side = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--kernel")) kernel = strcmp(argv[i + 1], "gauss") ? NLE_KERNEL_STUDENT : NLE_KERNEL_GAUSSIAN;
  }
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_threads(ctx, threads);
  if (engine == NLE_REPULSION_FGT) kernel = NLE_KERNEL_GAUSSIAN;
  if (engine == NLE_REPULSION_FFT)
    printf("# FFT interpolation, order %d, box width %.3g", fo.order, fo.box_width);
  else if (engine == NLE_REPULSION_FGT)
    printf("# fast Gauss transform, order %d, r %.2f, reach %d", go.order, go.ratio, go.reach);
  else
    printf("# Barnes-Hut, theta %.2f", theta);
  if (fixed_side > 0) printf(", points in a square of side %g", fixed_side);
  else printf(", points in a square of side sqrt(N)");
  printf(", %s kernel sums (S and S^x), %d threads; error: sum|S - S*| / sum S* on 500 sampled points; time: "
         "median of 3%s\n", kernel == NLE_KERNEL_STUDENT ? "Student-t" : "Gaussian", threads,
         warm && engine == NLE_REPULSION_FFT ? " after an untimed first call, with one work space kept across calls" : "");
  for (int clustered = 0; clustered <= 1; clustered++) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int count = 0;
    static const size_t sizes[] = {1000, 3000, 10000, 30000, 100000, 300000, 1000000};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes && sizes[z] <= max_n; z++) {
      size_t n = sizes[z];
      if (n < min_n) continue;
      nle_matd *X = make_points(ctx, n, clustered, fixed_side);
      double *S = malloc(n * sizeof(double)), *Sx = malloc(2 * n * sizeof(double)), times[3];
      nle__fft_ws *ws = warm && engine == NLE_REPULSION_FFT ? nle__fft_ws_new() : NULL;
      for (int r = ws ? -1 : 0; r < 3; r++) {
        double t0 = nle_time_seconds();
        nle_status st = ws                            ? nle__kernel_sums_fft_ws(ctx, ws, X, kernel, &fo, S, Sx)
                        : engine == NLE_REPULSION_FFT ? nle_kernel_sums_fft(ctx, X, kernel, &fo, S, Sx)
                        : engine == NLE_REPULSION_FGT ? nle_kernel_sums_fgt(ctx, X, &go, S, Sx)
                                                      : nle_kernel_sums_bh(ctx, X, kernel, theta, S, Sx);
        if (st) {
          fprintf(stderr, "%s\n", nle_ctx_error(ctx));
          return 1;
        }
        if (r >= 0) times[r] = nle_time_seconds() - t0;
      }
      nle__fft_ws_free(&ws);
      qsort(times, 3, sizeof(double), cmp);
      nle_sums_error err;
      if (nle_kernel_sums_error(ctx, X, kernel, S, Sx, 500, 1, &err)) return 1;
      printf("%-9s N %8zu  time %9.4f s  relative error %.2e (moments %.2e, worst point %.2e)\n",
             clustered ? "clustered" : "uniform", n, times[1], err.sums, err.moments, err.worst);
      fflush(stdout);
      if (n >= 10000) { /* the slope over the range where the asymptotic regime holds */
        double lx = log((double)n), ly = log(times[1]);
        sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
        count++;
      }
      free(S);
      free(Sx);
      nle_matd_free(&X);
    }
    if (count >= 2)
      printf("%s: slope of log time against log N (N >= 10,000): %.3f\n", clustered ? "clustered" : "uniform",
             (count * sxy - sx * sy) / (count * sxx - sx * sx));
  }
  nle_ctx_free(&ctx);
  return 0;
}
