/* est_rows.c — the estimator's front door under a communicator (issue 38,
 * docs/mpi.md). A client of a distributed run gives each rank's rows of the
 * input; the stages inside take the canonical shares (nle__rank_rows), so
 * rows given in another contiguous split are moved there first (one
 * personalised exchange), and a method whose stages do not yet take rows
 * is refused rather than run on a part of the data. Which methods run
 * distributed is each family's table row (nle__family.distributed). */
#include "estimator_internal.h"

#include "../core/comm.h"

#include <stdlib.h>
#include <string.h>

bool nle_estimator_runs_distributed(const nle_estimator *e) {
  return e && (e->family->distributed & NLE__FOR(e->variant)) != 0;
}

bool nle_estimator_maps_distributed(const nle_estimator *e) { return e && e->family->maps_by_rows; }

void nle__est_moved_free(nle__est_moved *moved) {
  free(moved->Y.data);
  free(moved->init.data);
  free(moved->labels);
  memset(moved, 0, sizeof *moved);
}

nle_status nle__est_rows_in(nle_estimator *e, const nle_estimator_input *given, nle_estimator_input *use,
                            nle__est_moved *moved, size_t *n) {
  nle_ctx *ctx = e->ctx;
  *use = *given;
  memset(moved, 0, sizeof *moved);
  *n = given->Y ? given->Y->rows : given->sparse ? (size_t)given->sparse->rows : 0;
  if (!nle__distributed(ctx)) return NLE_OK;
  nle_status s = nle_estimator_runs_distributed(e)
                     ? NLE_OK
                     : nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s does not run on more than one rank yet (docs/mpi.md)",
                                 e->method);
  if (!s && given->weights) s = nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: weights do not run on more than one rank", e->method);
  s = nle__comm_agree(ctx, s);
  nle__rows rows = {0};
  if (!s && given->Y) {
    void *data = NULL;
    s = nle__comm_rebalance(ctx, given->Y->data, given->Y->rows, given->Y->cols * sizeof(float), &data, &rows);
    if (!s && data) {
      moved->Y = (nle_matf){rows.mine.end - rows.mine.begin, given->Y->cols, data};
      use->Y = &moved->Y;
    }
  }
  /* sparse rows and graphs come in the canonical shares */
  const nle_csr *G = given->sparse ? given->sparse : given->affinities ? given->affinities : given->knn;
  if (!s && !given->Y && G) s = nle__comm_rows(ctx, (size_t)G->rows, given->sparse ? "sparse rows" : "the graph", &rows);
  size_t mine = given->Y ? given->Y->rows : G ? (size_t)G->rows : 0;
  if (!s && given->labels) s = nle__comm_rebalance(ctx, given->labels, mine, sizeof(int32_t), &moved->labels, &rows);
  if (!s && moved->labels) use->labels = moved->labels;
  if (!s && given->init) {
    void *data = NULL;
    int64_t cols = (int64_t)given->init->cols;
    s = nle__comm_same(ctx, &cols, sizeof cols, "start columns (init)");
    if (!s) s = nle__comm_rebalance(ctx, given->init->data, given->init->rows, given->init->cols * sizeof(double), &data, &rows);
    if (!s && data) {
      moved->init = (nle_matd){rows.mine.end - rows.mine.begin, given->init->cols, data};
      use->init = &moved->init;
    }
  }
  s = nle__comm_agree(ctx, s);
  if (s) nle__est_moved_free(moved);
  *n = rows.n;
  return s;
}

nle_status nle__est_rows_map(nle_estimator *e, const char *what) {
  if (!nle__distributed(e->ctx) || nle_estimator_maps_distributed(e)) return NLE_OK;
  return nle__fail(e->ctx, NLE_ERR_UNSUPPORTED, "%s of a %s model does not run on more than one rank yet", what,
                   e->method);
}
