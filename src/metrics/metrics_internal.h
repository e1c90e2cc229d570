/* metrics_internal.h — metric pieces exposed to the tests. */
#ifndef NLE_METRICS_INTERNAL_H
#define NLE_METRICS_INTERNAL_H

#include "../core/internal.h"

/* Fold of every point as scikit-learn's StratifiedKFold(folds) without
 * shuffling assigns it. */
nle_status nle__stratified_folds(nle_ctx *ctx, const int32_t *labels, size_t n, int folds, int32_t *fold);

#endif
