/* nlembed/metrics.h — quality metrics of an embedding. Part of the public
 * header: include <nlembed.h>, whose opening comment states the conventions
 * every declaration here follows. */
#ifndef NLEMBED_METRICS_H
#define NLEMBED_METRICS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Quality metrics (definitions as in scikit-learn)                           */
/* ========================================================================== */

typedef struct {
  int k;              /* neighbourhood size (default 10) */
  int64_t subsample;  /* points scored for recall, trustworthiness and
                         continuity: 0 = all, default 10000 (a fixed random
                         subset, seeded by the context); each one's neighbours
                         and ranks are among all N points, so the scores
                         estimate the N-point ones (cost O(M N D)) */
  bool within_subsample; /* true: neighbours and ranks among the subsample only,
                           as sklearn's trustworthiness(Y[s], X[s]) (cost
                           O(M^2 D); scores differ from the N-point ones) */
  int cv_folds;       /* folds of the kNN classifier (default 5, >= 2) */
  int cv_k;           /* neighbours of the kNN classifier (default 10) */
} nle_metrics_opts;

NLE_API void nle_metrics_opts_init(nle_metrics_opts *o);

typedef struct {
  int64_t n, subsample_n;
  int k;
  double recall;          /* mean |kNN_data(i) ∩ kNN_emb(i)| / k */
  double trustworthiness; /* sklearn.manifold.trustworthiness */
  double continuity;      /* trustworthiness with the two spaces swapped */
  double knn_accuracy;    /* mean accuracy over stratified folds; NaN w/o labels */
  int64_t *subsample_idx; /* subsample_n sorted indices used (owned) */
} nle_metrics;

/* Y: data (N x D), X: embedding (N x d), labels: N or NULL (any integers:
 * the classes are the distinct values, nle_labels_encode). */
NLE_API nle_status nle_metrics_compute(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X,
                                       const int32_t *labels, const nle_metrics_opts *opts,
                                       nle_metrics **out);
NLE_API void nle_metrics_free(nle_metrics **m);

/* Trustworthiness T(k) of embedding X for data Y, all points, O(N^2 D):
 * 1 - 2/(N k (2N - 3k - 1)) sum_i sum_{j in U_i} (r(i,j) - k). Needs k < N/2. */
NLE_API nle_status nle_trustworthiness(nle_ctx *ctx, const nle_matd *Y, const nle_matd *X,
                                       int k, double *out);
/* Mean fraction of the k exact neighbours (rows of `exact`) found in `approx`;
 * both are kNN graphs over the same points. */
NLE_API nle_status nle_knn_recall(nle_ctx *ctx, const nle_csr *approx, const nle_csr *exact,
                                  double *out);
/* Mean accuracy of a k-NN classifier (uniform votes, ties to the smallest
 * label) over stratified folds assigned as scikit-learn's StratifiedKFold
 * without shuffling. */
NLE_API nle_status nle_knn_accuracy_cv(nle_ctx *ctx, const nle_matd *X, const int32_t *labels,
                                       int k, int folds, double *out);

/* Clustering error against reference labels (N each, any integers, as
 * classes by nle_labels_encode's rule): by the best
 * one-to-one matching of clusters to classes (the Hungarian algorithm on
 * the contingency table), and by each cluster's majority class (SPEC
 * G06-9; the dissertation's sec. 4.5 uses both). In [0, 1]; the majority
 * error is never above the matched one. */
NLE_API nle_status nle_clustering_error(nle_ctx *ctx, const int32_t *labels, const int32_t *truth, size_t n,
                                        double *matched, double *majority);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_METRICS_H */
