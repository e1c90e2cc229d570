/* oos_internal.h — what the out-of-sample maps share between the trained
 * model (trained.c), the per-point minimiser (outofsample.c) and the
 * batched one with the fast engines (oos_batch.c). */
#ifndef NLE_OOS_INTERNAL_H
#define NLE_OOS_INTERNAL_H

#include "nle_internal.h"

/* One new point's problem: attraction over `na` training points (the first
 * na when a_idx is NULL), repulsion over `nr` (the first nr when r_idx is
 * NULL) with weights r_w (1 when NULL). */
typedef struct {
  nle_model_kind kind;
  double lambda;
  const nle_matd *X;
  const double *z_rows; /* SNE: z_n */
  double z_total;       /* s-SNE, t-SNE: Z */
  const int32_t *a_idx;
  const double *a;
  size_t na;
  const int32_t *r_idx;
  const double *r_w;
  size_t nr;
} oos_problem;

/* The problem of new point y (row q of the neighbour lists nbrs, entropic
 * p_{n|y} in P or NULL): attraction weights into a[k], W- values into rw
 * (k of them, or N for squared distances). */
oos_problem nle__oos_forward_problem(const nle_trained *t, const float *y, const nle_csr *nbrs, const nle_csr *P,
                                     size_t q, double *a, double *rw);
/* Whether F(y)'s repulsion for t's model can run on `engine` (a fast one,
 * all points together), and whether t->engine's grid spans the training map
 * with the margin around it. */
int nle__oos_batched_engine(const nle_trained *t, nle_repulsion engine);
int nle__oos_engine_fits(const nle_trained *t);
/* The new points (the rows of nbrs, their training neighbours nearest
 * first) in an order with locality in the map: the Z-order of their nearest
 * neighbours' training positions. Points taken in turn read the same grid
 * nodes and share training neighbours. */
nle_status nle__oos_map_order(nle_ctx *ctx, const nle_trained *t, const nle_csr *nbrs, size_t **order);
/* Rows of Y projected on the trained model's principal components
 * (trained.c). */
nle_status nle__trained_project(nle_ctx *ctx, const nle_trained *t, const nle_matf *Y, nle_matf **P);
/* F(y) of all new points together with t->engine (oos_batch.c). */
nle_status nle__oos_forward_batched(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, const nle_csr *nbrs,
                                    const nle_csr *P, int max_iters, nle_matd *out);

#endif
