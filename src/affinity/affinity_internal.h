/* affinity_internal.h — pieces shared by the affinity files: warm-start
 * orders for the entropic affinities. */
#ifndef NLE_AFFINITY_INTERNAL_H
#define NLE_AFFINITY_INTERNAL_H

#include "../core/internal.h"
#include "../core/comm.h"

/* The processing order of the points and, for each point, the point whose
 * solution initialises it (-1: the middle of its own bounds). order and parent
 * have knn->rows entries. */
nle_status nle__ea_order(nle_ctx *ctx, const nle_csr *knn, nle_ea_order kind, int kappa, int64_t *order,
                         int64_t *parent);

/* One point's entropic affinities over its sorted squared distances
 * d[0..k) at perplexity K, solved as nle_entropic_affinities solves each
 * row (from `start`, a log beta, or NAN: the middle of the bounds): p[0..k)
 * normalised, beta returned; scratch 2 k + 1 doubles. */
double nle__ea_row(const double *d, int k, double perplexity, double start, double *p, double *scratch);

/* F = H - log K, F' and F'' at alpha = log beta for the squared distances
 * d[0..n-1] (sec. 2.3.1): what the root finders step with, for tests. */
void nle__ea_evaluate(const double *d, int n, double alpha, double log_k, double f[3]);

/* symmetrize_rows.c. A matrix P whose rows are shared out over ranks
 * (this rank's rows of rows->n, global columns): _transpose_rows gives this
 * rank's rows of P^T (columns ascending, values in double) by an all-to-all;
 * _sorted_rows P's rows sorted by column (equal ones in their order), in
 * double; _rows_total the sum of all ranks' values by blocks of rows, the same
 * bits alone and on any number of ranks. */
nle_status nle__csr_transpose_rows(nle_ctx *ctx, const nle_csr *P, const nle__rows *rows, nle_csr **T);
nle_status nle__csr_sorted_rows(nle_ctx *ctx, const nle_csr *P, nle_csr **S);
nle_status nle__csr_rows_total(nle_ctx *ctx, const nle_csr *W, double *total);

#endif
