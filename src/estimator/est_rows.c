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
  /* which inputs there are, as every rank learns it (a rank holding no
   * rows may pass no labels) */
  const nle_csr *G = given->sparse ? given->sparse : given->affinities ? given->affinities : given->knn;
  int64_t present[4] = {given->Y != NULL, given->labels != NULL, given->init != NULL, G != NULL};
  if (!s) s = nle__comm_sum_i64(ctx, present, 4);
  s = nle__comm_agree(ctx, s);
  nle__rows rows = {0};
  if (!s && present[0]) {
    void *data = NULL;
    size_t cols = given->Y ? given->Y->cols : 0;
    s = nle__comm_rebalance(ctx, given->Y ? given->Y->data : NULL, given->Y ? given->Y->rows : 0, cols * sizeof(float),
                            NLE__CANONICAL, &data, &rows);
    if (!s && data) {
      moved->Y = (nle_matf){rows.mine.end - rows.mine.begin, cols, data};
      use->Y = &moved->Y;
    }
    s = nle__comm_agree(ctx, s);
  }
  /* sparse rows and graphs come in the canonical shares */
  if (!s && !present[0] && present[3])
    s = nle__comm_rows(ctx, G ? (size_t)G->rows : 0, given->sparse ? "sparse rows" : "the graph", &rows);
  moved->given_rows = given->Y ? given->Y->rows : G ? (size_t)G->rows : 0;
  moved->rows_moved = use->Y != given->Y;
  if (!s && present[1])
    s = nle__comm_rebalance(ctx, given->labels, moved->given_rows, sizeof(int32_t), NLE__CANONICAL, &moved->labels, &rows);
  s = nle__comm_agree(ctx, s);
  if (!s && moved->labels) use->labels = moved->labels;
  if (!s && present[2]) {
    void *data = NULL;
    size_t cols = given->init ? given->init->cols : 0;
    s = nle__comm_rebalance(ctx, given->init ? given->init->data : NULL, given->init ? given->init->rows : 0,
                            cols * sizeof(double), NLE__CANONICAL, &data, &rows);
    if (!s && data) {
      moved->init = (nle_matd){rows.mine.end - rows.mine.begin, cols, data};
      use->init = &moved->init;
    }
  }
  s = nle__comm_agree(ctx, s);
  if (s) nle__est_moved_free(moved);
  *n = rows.n;
  return s;
}

nle_status nle__est_rows_out(nle_estimator *e, const nle__est_moved *moved) {
  if (!nle__distributed(e->ctx)) return NLE_OK;
  int64_t any = moved->rows_moved;
  nle_status s = nle__comm_sum_i64(e->ctx, &any, 1);
  nle__rows rows;
  void *data = NULL;
  if (!s && any && e->X) {
    s = nle__comm_rebalance(e->ctx, e->X->data, e->X->rows, e->X->cols * sizeof(double), moved->given_rows, &data, &rows);
    if (!s && data) {
      free(e->X->data);
      e->X->data = data;
      e->X->rows = moved->given_rows;
    }
  }
  if (!s && any && e->labels) { /* held in the canonical share until now */
    nle__row_range share = nle__rank_rows(e->n, nle__ranks(e->ctx), nle__rank(e->ctx));
    s = nle__comm_rebalance(e->ctx, e->labels, share.end - share.begin, sizeof(int32_t), moved->given_rows, &data,
                            &rows);
    if (!s && data) free(e->labels), e->labels = data;
  }
  return nle__comm_agree(e->ctx, s);
}

nle_status nle__est_rows_map(nle_estimator *e, const char *what) {
  if (!nle__distributed(e->ctx) || nle_estimator_maps_distributed(e)) return NLE_OK;
  return nle__fail(e->ctx, NLE_ERR_UNSUPPORTED, "%s of a %s model does not run on more than one rank yet", what,
                   e->method);
}
