/* affinity_internal.h — pieces shared by the affinity files: warm-start
 * orders for the entropic affinities. */
#ifndef NLE_AFFINITY_INTERNAL_H
#define NLE_AFFINITY_INTERNAL_H

#include "../core/internal.h"

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

#endif
