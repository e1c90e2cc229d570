/* opt_fp.c — the fixed-point diagonal direction (Carreira-Perpinan 2010):
 * B = 4 D+, the degrees of W+. */
#include "opt_internal.h"

#include <stdlib.h>

typedef struct {
  double *degree; /* 4 D+ */
} fp_state;

static nle_status fp_init(nle_ctx *ctx, nle_opt *o, nle_csr **W) {
  fp_state *st = o->state;
  st->degree = nle__calloc(ctx, (size_t)o->n, sizeof(double), "degrees");
  if (!st->degree) return NLE_ERR_NOMEM;
  for (int64_t i = 0; i < o->n; i++) {
    for (int64_t q = (*W)->rowptr[i]; q < (*W)->rowptr[i + 1]; q++) st->degree[i] += 4.0 * nle_csr_value(*W, q);
    if (!(st->degree[i] > 0)) st->degree[i] = 1e-10; /* an isolated point: a (tiny) gradient step */
  }
  return NLE_OK;
}

static void fp_free(nle_opt *o) {
  fp_state *st = o->state;
  free(st->degree);
}

static nle_status fp_direction(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p) {
  (void)ctx, (void)X;
  const fp_state *st = o->state;
  size_t n = g->rows, d = g->cols;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) p->data[i * d + t] = -g->data[i * d + t] / st->degree[i];
  return NLE_OK;
}

const nle__optimizer nle__opt_fp = {.name = "fp", .graph = NLE__GRAPH_WHOLE, .first_step = NLE__FIRST_STEP_KEEP,
                                    .state_size = sizeof(fp_state), .state_init = fp_init, .state_free = fp_free,
                                    .direction = fp_direction};
