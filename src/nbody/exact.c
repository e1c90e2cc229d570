/* exact.c — kernel sums over all pairs (the reference the fast engines are
 * tested against), input checks shared by the engines, and the measured
 * error of approximate sums on a sample of points. */
#include "nbody_internal.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_DIM = NBODY_MAX_DIM };

nle_status nle__kernel_sums_check(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const char *engine) {
  if (X->cols < 1 || X->cols > MAX_DIM || X->rows < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: X must have 1 to 3 columns and a row (got %zu x %zu)", engine, X->rows,
                     X->cols);
  if ((unsigned)kernel >= NLE_KERNEL_COUNT) return nle__fail(ctx, NLE_ERR_ARG, "%s: unknown kernel", engine);
  for (size_t i = 0; i < X->rows * X->cols; i++)
    if (!isfinite(X->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: X[%zu, %zu] is not finite", engine, i / X->cols, i % X->cols);
  return NLE_OK;
}

/* ---- exact ---------------------------------------------------------------- */

typedef struct {
  const nle_matd *X;
  nle_kernel kernel;
  double *S, *Sx;
} exact_job;

enum { EXACT_BLOCK = 64 };

static int exact_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const exact_job *j = job;
  size_t n = j->X->rows, d = j->X->cols, i1 = (b + 1) * EXACT_BLOCK < n ? (b + 1) * EXACT_BLOCK : n;
  const double *x = j->X->data;
  for (size_t i = b * EXACT_BLOCK; i < i1; i++) {
    double s = 0.0, sx[MAX_DIM] = {0};
    for (size_t m = 0; m < n; m++) {
      if (m == i) continue;
      double d2 = 0.0;
      for (size_t t = 0; t < d; t++) d2 += (x[i * d + t] - x[m * d + t]) * (x[i * d + t] - x[m * d + t]);
      double k = nle__kernel_value(j->kernel, d2);
      s += k;
      for (size_t t = 0; t < d; t++) sx[t] += k * x[m * d + t];
    }
    j->S[i] = s;
    if (j->Sx)
      for (size_t t = 0; t < d; t++) j->Sx[i * d + t] = sx[t];
  }
  return 0;
}

nle_status nle_kernel_sums_exact(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, double *S, double *Sx) {
  nle_status s = nle__kernel_sums_check(ctx, X, kernel, "kernel sums");
  if (s) return s;
  exact_job job = {X, kernel, S, Sx};
  size_t n = X->rows;
  return nle__for_blocks(ctx, "kernel sums", (n + EXACT_BLOCK - 1) / EXACT_BLOCK,
                         nle__threads_for(ctx, (double)n * (double)n * 10.0), 0, exact_block, &job);
}


nle_status nle_kernel_sums_error(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const double *S,
                                 const double *Sx, size_t sample, uint64_t seed, nle_sums_error *err) {
  memset(err, 0, sizeof *err);
  nle_status s = nle__kernel_sums_check(ctx, X, kernel, "kernel-sum error");
  if (s) return s;
  size_t n = X->rows, d = X->cols, m = sample < n ? sample : n;
  if (m < 1) return nle__fail(ctx, NLE_ERR_ARG, "kernel-sum error: the sample must hold at least one point");
  int64_t *pick = nle__malloc(ctx, m * sizeof(int64_t), "the error sample");
  if (!pick) return NLE_ERR_NOMEM;
  nle_rng rng;
  nle_rng_init(&rng, seed, 0x5e77);
  nle_rng_sample(&rng, (int64_t)n, (int64_t)m, pick);
  const double *x = X->data;
  double abs_s = 0.0, ref_s = 0.0, abs_x = 0.0, ref_x = 0.0;
  for (size_t q = 0; q < m; q++) {
    size_t i = (size_t)pick[q];
    double si = 0.0, sx[MAX_DIM] = {0};
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      double d2 = 0.0;
      for (size_t t = 0; t < d; t++) d2 += (x[i * d + t] - x[j * d + t]) * (x[i * d + t] - x[j * d + t]);
      double k = nle__kernel_value(kernel, d2);
      si += k;
      for (size_t t = 0; t < d; t++) sx[t] += k * x[j * d + t];
    }
    double e = fabs(S[i] - si);
    abs_s += e;
    ref_s += fabs(si);
    if (si > 0) err->worst = fmax(err->worst, e / si);
    for (size_t t = 0; Sx && t < d; t++) {
      abs_x += (Sx[i * d + t] - sx[t]) * (Sx[i * d + t] - sx[t]);
      ref_x += sx[t] * sx[t];
    }
  }
  free(pick);
  err->sums = ref_s > 0 ? abs_s / ref_s : abs_s;
  err->moments = Sx ? (ref_x > 0 ? sqrt(abs_x / ref_x) : sqrt(abs_x)) : 0.0;
  err->sample = m;
  return NLE_OK;
}
