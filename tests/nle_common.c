/* nle_common.c — what the embedding tests share: random weights and maps,
 * and the gradient check against central differences. */
#include "harness.h"
#include "nle_common.h"
#include "../src/nle/nle_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A random sparse W+ with about `per_row` entries per row: symmetric, or
 * with rows normalised to 1 (conditional, for SNE), or summing to 1 overall. */
nle_csr *random_weights(size_t n, int per_row, int conditional, int normalise, uint64_t seed) {
  nle_ctx *ctx = test_ctx(seed);
  double *dense = calloc(n * n, sizeof(double));
  nle_rng r;
  nle_rng_init(&r, seed, 3);
  for (size_t i = 0; i < n; i++)
    for (int t = 0; t < per_row; t++) {
      size_t j = (size_t)nle_rng_below(&r, n);
      if (j == i) continue;
      double w = 0.1 + nle_rng_uniform(&r);
      dense[i * n + j] = w;
      if (!conditional) dense[j * n + i] = w;
    }
  double total = 0;
  for (size_t i = 0; i < n * n; i++) total += dense[i];
  for (size_t i = 0; conditional && i < n; i++) {
    double row = 0;
    for (size_t j = 0; j < n; j++) row += dense[i * n + j];
    for (size_t j = 0; j < n && row > 0; j++) dense[i * n + j] /= row;
  }
  int64_t nnz = 0;
  for (size_t i = 0; i < n * n; i++) nnz += dense[i] != 0;
  nle_csr *W;
  if (nle_csr_alloc(ctx, (int64_t)n, (int64_t)n, nnz, NLE_F64, &W)) exit(2);
  int64_t q = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < n; j++)
      if (dense[i * n + j] != 0) {
        W->colind[q] = (int32_t)j;
        ((double *)W->val)[q++] = normalise && !conditional ? dense[i * n + j] / total : dense[i * n + j];
      }
    W->rowptr[i + 1] = q;
  }
  free(dense);
  nle_ctx_free(&ctx);
  return W;
}

nle_matd *random_x(size_t n, size_t d, double scale, uint64_t seed) {
  return test_random_matd(n, d, scale, seed);
}

/* Largest |analytic - central difference| relative to the gradient's scale. */
double gradient_error(nle_ctx *ctx, nle_model *m, nle_matd *X) {
  nle_matd *G;
  double E, Ep, Em, worst = 0, norm = 0;
  if (nle_matd_alloc(ctx, X->rows, X->cols, &G) || nle_model_eval(ctx, m, X, &E, G)) return INFINITY;
  for (size_t i = 0; i < X->rows * X->cols; i++) norm = fmax(norm, fabs(G->data[i]));
  for (size_t i = 0; i < X->rows * X->cols; i++) {
    double x0 = X->data[i], h = 1e-5;
    X->data[i] = x0 + h;
    nle_model_eval(ctx, m, X, &Ep, NULL);
    X->data[i] = x0 - h;
    nle_model_eval(ctx, m, X, &Em, NULL);
    X->data[i] = x0;
    worst = fmax(worst, fabs((Ep - Em) / (2 * h) - G->data[i]));
  }
  nle_matd_free(&G);
  return worst / fmax(norm, 1e-300);
}

/* The byte-flip sweep of issue 19: every bit of the container's 48-byte
 * header flipped in turn (issue 39: magic, kind, byte-order mark, version,
 * the header's CRC-32 and its 4 zero bytes: a sweep by 97 bytes touched
 * only byte 0, so the header's CRC went unchecked unnoticed), then every
 * 97th byte after it (each copy a fresh file); returns how many damaged
 * copies the loader accepted (0 expected: every record and the header carry
 * a CRC-32); the first accepted byte is printed. */
int damaged_copies_accepted(nle_ctx *ctx, const char *path, file_loader load, int *tried) {
  enum { HEADER = 48 };
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)len);
  size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
  fclose(f);
  int accepted = 0, first = -1;
  *tried = 0;
  int ok = buf && (long)got == len && len > HEADER;
  for (long at = 0; ok && at < len; at += at < HEADER ? 1 : 97) {
    for (int bit = 0; bit < (at < HEADER ? 8 : 1); bit++) {
      unsigned char mask = at < HEADER ? (unsigned char)(1u << bit) : 0x5a;
      buf[at] ^= mask;
      /* beside the original, so that test_path's buffers (the caller's path
       * among them) are left alone */
      char copy[4200];
      snprintf(copy, sizeof copy, "%s.flipped", path);
      FILE *w = fopen(copy, "wb");
      if (!w || fwrite(buf, 1, (size_t)len, w) != (size_t)len) {
        if (w) fclose(w);
        free(buf);
        return -1;
      }
      fclose(w);
      nle_status s = load(ctx, copy);
      if (s != NLE_OK && s != NLE_ERR_FORMAT && s != NLE_ERR_ARG) accepted += 1000; /* a crash-like status */
      if (s == NLE_OK) {
        accepted++;
        if (first < 0) first = (int)at;
      }
      buf[at] ^= mask;
      (*tried)++;
    }
  }
  if (first >= 0) printf("  %s: a flip at byte %d accepted\n", path, first);
  free(buf);
  return ok ? accepted : -1;
}

nle_status load_checkpoint_file(nle_ctx *ctx, const char *path) {
  return nle_opt_check_checkpoint(ctx, path, "test run");
}

/* One loader per container kind: load, free, return the status. */
#define MODEL_LOADER(fn, type, load, release)         \
  nle_status fn(nle_ctx *ctx, const char *path) {     \
    type *m = NULL;                                   \
    nle_status s = load(ctx, path, &m);               \
    release(&m);                                      \
    return s;                                         \
  }
MODEL_LOADER(load_model_file, nle_trained, nle_trained_load, nle_trained_free)
MODEL_LOADER(load_spectral_model_file, nle_spectral_model, nle_spectral_model_load, nle_spectral_model_free)
MODEL_LOADER(load_kem_model_file, nle_kem_model, nle_kem_model_load, nle_kem_model_free)
MODEL_LOADER(load_projection_model_file, nle_projection_model, nle_projection_model_load, nle_projection_model_free)
