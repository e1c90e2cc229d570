/* metric.h — what knn_metric.c and the sparse searches (knn_sparse*.c)
 * share (private). */
#ifndef NLE_NEIGHBORS_METRIC_H
#define NLE_NEIGHBORS_METRIC_H

#include "neighbors_internal.h"

/* Whether the metric compares rows of points (euclidean, cosine,
 * correlation) rather than naming an input of distances or affinities. */
bool nle__metric_of_rows(nle_metric metric);
/* NLE_OK for a metric of rows; else NLE_ERR_ARG, `what` leading the text. */
nle_status nle__metric_check(nle_ctx *ctx, nle_metric metric, const char *what);

#endif
