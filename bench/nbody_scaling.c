/* nbody_scaling.c — issue 5, measurement 1 (like dissertation fig. 5.6):
 * time and relative error of the kernel-sum engines against N, for uniform
 * and clustered 2-D points, and the fitted slope of log time against log N.
 * The error is measured on 500 sampled points against their exact sums.
 *   build/nbody_scaling [--max-n N] [--theta T] [--threads K]
 * Prints one line per (set, N) and the slopes. */
#include "nlembed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nle_matd *make_points(nle_ctx *ctx, size_t n, int clustered) {
  nle_matd *X;
  if (nle_matd_alloc(ctx, n, 2, &X)) exit(2);
  nle_rng r;
  nle_rng_init(&r, 7, clustered);
  /* Spread like a t-SNE map of n points: side about sqrt(n). */
  double side = sqrt((double)n);
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
  size_t max_n = 1000000;
  double theta = 0.5;
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--max-n")) max_n = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--theta")) theta = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
  }
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_threads(ctx, threads);
  printf("# Barnes-Hut Student-t kernel sums (S and S^x), theta %.2f, %d threads; error: |S - S_exact|_2 / "
         "|S_exact|_2 on 500 sampled points; time: median of 3\n", theta, threads);
  for (int clustered = 0; clustered <= 1; clustered++) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int count = 0;
    static const size_t sizes[] = {1000, 3000, 10000, 30000, 100000, 300000, 1000000};
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes && sizes[z] <= max_n; z++) {
      size_t n = sizes[z];
      nle_matd *X = make_points(ctx, n, clustered);
      double *S = malloc(n * sizeof(double)), *Sx = malloc(2 * n * sizeof(double)), times[3];
      for (int r = 0; r < 3; r++) {
        double t0 = nle_time_seconds();
        if (nle_kernel_sums_bh(ctx, X, NLE_KERNEL_STUDENT, theta, S, Sx)) return 1;
        times[r] = nle_time_seconds() - t0;
      }
      qsort(times, 3, sizeof(double), cmp);
      double num = 0, den = 0;
      for (size_t q = 0; q < 500; q++) {
        size_t i = (q * 2654435761u) % n;
        double e = 0;
        for (size_t m = 0; m < n; m++)
          if (m != i)
            e += 1.0 / (1.0 + pow(X->data[2 * i] - X->data[2 * m], 2) + pow(X->data[2 * i + 1] - X->data[2 * m + 1], 2));
        num += (S[i] - e) * (S[i] - e);
        den += e * e;
      }
      printf("%-9s N %8zu  time %9.4f s  relative error %.2e\n", clustered ? "clustered" : "uniform", n, times[1],
             sqrt(num / den));
      fflush(stdout);
      if (n >= 10000) { /* the slope over the range where the O(N log N) regime holds */
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
