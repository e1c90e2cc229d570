/* embed_internal.h — what the front door's two halves share: the options'
 * checks and recipes (embed_recipe.c) and the pipeline (embed.c). */
#ifndef NLE_EMBED_INTERNAL_H
#define NLE_EMBED_INTERNAL_H

#include "nle_internal.h"

#define AUTO(x) ((x) == NLE_AUTO)

/* Dense lambda* bounds need two N x N eigendecompositions: for small N,
 * Lanczos above. Lanczos needs a sparse Cholesky factor of L+, which fills
 * in (30 s of a 70 s EE run on 70,000 points, only to print a note): above
 * BOUNDS_INFO_MAX_N the bounds are computed only when a homotopy needs them. */
enum { BOUNDS_DENSE_MAX_N = 2000, BOUNDS_INFO_MAX_N = 20000 };

/* NLE_OK when the options and the input agree, or a recorded error naming
 * the option. */
nle_status nle__embed_check_opts(nle_ctx *ctx, const nle_embed_input *in, const nle_embed_opts *o);
/* The choices that need only N, D and the options (before any work). */
nle_status nle__embed_resolve_early(nle_ctx *ctx, const nle_embed_input *in, size_t n, size_t D, nle_embed_opts *o);
/* The graph stage's options for the embedding's neighbour search (its k,
 * perplexity, search and PCA as resolved so far; neighbours only). */
void nle__embed_graph_opts(const nle_embed_opts *o, nle_graph_opts *g);
/* The fixed-rate recipe's learning rates, for N points and W+ summing to
 * w_total. */
void nle__embed_resolve_rates(nle_embed_opts *o, size_t n, double w_total);

#endif
