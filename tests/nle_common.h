/* nle_common.h — helpers of the embedding tests (nle_common.c). */
#ifndef NLE_TESTS_NLE_COMMON_H
#define NLE_TESTS_NLE_COMMON_H

#include "nlembed.h"

/* A random sparse W+ with about `per_row` entries per row: symmetric, or
 * with rows normalised to 1 (conditional, for SNE), or summing to 1 overall. */
nle_csr *random_weights(size_t n, int per_row, int conditional, int normalise, uint64_t seed);
nle_matd *random_x(size_t n, size_t d, double scale, uint64_t seed);
/* Largest |analytic - central difference| relative to the gradient's scale. */
double gradient_error(nle_ctx *ctx, nle_model *m, nle_matd *X);

/* The byte-flip sweep of issues 19 and 39 over a container file: how many
 * damaged copies `load` accepted (every bit of the 48-byte header, then
 * every 97th byte, flipped in turn; *tried counts; -1: no such file). */
typedef nle_status (*file_loader)(nle_ctx *ctx, const char *path);
int damaged_copies_accepted(nle_ctx *ctx, const char *path, file_loader load, int *tried);
nle_status load_checkpoint_file(nle_ctx *ctx, const char *path);
nle_status load_model_file(nle_ctx *ctx, const char *path);
nle_status load_spectral_model_file(nle_ctx *ctx, const char *path);
nle_status load_kem_model_file(nle_ctx *ctx, const char *path);
nle_status load_projection_model_file(nle_ctx *ctx, const char *path);

#endif
