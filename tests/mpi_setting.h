/* mpi_setting.h — what the mpi/ unit cases share (test_mpi_*.c): a context
 * alone and one with the world communicator, the points, and this rank's
 * canonical rows of them (a header into the points' data). */
#ifndef NLE_TEST_MPI_SETTING_H
#define NLE_TEST_MPI_SETTING_H

#include "harness.h"
#include "../src/core/comm.h"

typedef struct {
  nle_ctx *one, *ctx;
  nle_matf *Y, part;
  nle__row_range mine;
} setting;

/* This rank's rows of Y, as a header into Y's data. */
static inline nle_matf my_rows(nle_ctx *ctx, const nle_matf *Y, nle__row_range *mine) {
  *mine = nle__rank_rows(Y->rows, nle__ranks(ctx), nle__rank(ctx));
  return (nle_matf){mine->end - mine->begin, Y->cols, Y->data + mine->begin * Y->cols};
}

/* The setting of the points Y (owned by it from here). */
static inline setting setting_of(uint64_t seed, nle_matf *Y) {
  setting t = {test_ctx(seed), test_comm_ctx(seed), Y, {0, 0, NULL}, {0, 0}};
  t.part = my_rows(t.ctx, t.Y, &t.mine);
  return t;
}

static inline void close_setting(setting *t) {
  nle_matf_free(&t->Y);
  nle_ctx_free(&t->ctx);
  nle_ctx_free(&t->one);
}

#endif
