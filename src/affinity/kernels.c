/* kernels.c — symmetrisation, the other affinity kinds (fixed-width
 * Gaussian, binary kNN, inverse distance, self-tuning), and the repulsive
 * weights W- of the elastic embedding. Sparse kinds live on the union of the
 * kNN graph and its transpose. */
#include "affinity_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nle_affinity_opts_init(nle_affinity_opts *o) {
  o->kind = NLE_AFF_GAUSSIAN;
  o->sigma = 1.0;
  o->tuning_k = 7;
}

/* Merges row i of two column-sorted matrices: calls emit(col, a, b, have_a,
 * have_b) per distinct column, in order. */
#define MERGE_ROWS(A, B, i, EMIT)                                                                      \
  do {                                                                                                 \
    int64_t pa = (A)->rowptr[i], ea = (A)->rowptr[(i) + 1], pb = (B)->rowptr[i], eb = (B)->rowptr[(i) + 1]; \
    while (pa < ea || pb < eb) {                                                                       \
      int32_t ca = pa < ea ? (A)->colind[pa] : INT32_MAX, cb = pb < eb ? (B)->colind[pb] : INT32_MAX;  \
      int32_t col = ca < cb ? ca : cb;                                                                 \
      int has_a = ca == col, has_b = cb == col;                                                        \
      double va = has_a ? nle_csr_value(A, pa) : 0.0, vb = has_b ? nle_csr_value(B, pb) : 0.0;        \
      EMIT;                                                                                            \
      pa += has_a;                                                                                     \
      pb += has_b;                                                                                     \
    }                                                                                                  \
  } while (0)

/* The union of the pattern of A and of its transpose. Values: the mean
 * (a + b) / 2 with a missing entry counting as 0 (symmetrisation), or, when
 * `mean` is 0, whichever is present (for symmetric quantities such as
 * distances). Transposing twice sorts A's rows by column with two counting
 * passes, so the whole union is O(nnz): no comparison sort. */
static nle_status csr_union_transpose(nle_ctx *ctx, const nle_csr *A, int mean, nle_csr **out) {
  *out = NULL;
  nle_csr *T = NULL, *S = NULL, *W = NULL;
  /* with a communicator, A is this rank's rows of N (comm.h) */
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, (size_t)A->rows, "symmetrize", &rows);
  if (!s && A->cols != (int64_t)rows.n) s = nle__fail(ctx, NLE_ERR_ARG, "symmetrize: the matrix is not square");
  if (!s && nle__distributed(ctx)) {
    s = nle__csr_transpose_rows(ctx, A, &rows, &T);
    if (!s) s = nle__csr_sorted_rows(ctx, A, &S);
  } else if (!s) {
    s = nle_csr_transpose(ctx, A, &T);
    if (!s) s = nle_csr_transpose(ctx, T, &S); /* S = A with sorted rows */
  }
  int64_t n = A->rows;
  /* each row's length, then the rows merged in parallel into their places */
  int64_t *start = s ? NULL : nle__malloc(ctx, ((size_t)n + 1) * sizeof(int64_t), "the union's rows");
  if (!s && !start) s = NLE_ERR_NOMEM;
  int threads = nle__threads_for(ctx, 4.0 * (double)A->nnz);
  if (!s) {
#pragma omp parallel for schedule(static, 4096) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
      int64_t len = 0;
      MERGE_ROWS(S, T, i, (void)va; (void)vb; len++);
      start[i + 1] = len;
    }
    start[0] = 0;
    for (int64_t i = 0; i < n; i++) start[i + 1] += start[i];
    s = nle_csr_alloc(ctx, n, A->cols, start[n], NLE_F64, &W);
  }
  if (!s) {
    double *val = W->val;
    memcpy(W->rowptr, start, ((size_t)n + 1) * sizeof(int64_t));
#pragma omp parallel for schedule(static, 4096) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
      int64_t q = start[i];
      MERGE_ROWS(S, T, i, {
        W->colind[q] = col;
        val[q++] = mean ? 0.5 * (va + vb) : (has_a ? va : vb);
      });
    }
  }
  free(start);
  nle_csr_free(&T);
  nle_csr_free(&S);
  *out = W;
  return s;
}

nle_status nle_affinity_symmetrize(nle_ctx *ctx, const nle_csr *P, bool normalize, nle_csr **W) {
  nle_status s = csr_union_transpose(ctx, P, 1, W);
  if (s || !normalize) return s;
  double total = 0.0;
  s = nle__csr_rows_total(ctx, *W, &total);
  if (s) {
    nle_csr_free(W);
    return s;
  }
  if (!(total > 0.0)) {
    nle_csr_free(W);
    return nle__fail(ctx, NLE_ERR_VALUE, "symmetrize: the affinities sum to %g, cannot normalise", total);
  }
  for (int64_t q = 0; q < (*W)->nnz; q++) ((double *)(*W)->val)[q] /= total;
  return NLE_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* A width far below the neighbour distances makes every Gaussian weight
 * exp(-d^2 / 2 sigma^2) underflow to 0: no attraction is left and any
 * optimiser "converges" at once. Refused, with the distances a width
 * should be near; points left with no weight at all are counted. */
static nle_status gaussian_not_vanished(nle_ctx *ctx, const nle_csr *knn, const nle_csr *W, double sigma) {
  int64_t n = W->rows, isolated = 0;
  for (int64_t i = 0; i < n; i++) {
    int any = 0;
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1] && !any; q++) any = ((const double *)W->val)[q] > 0.0;
    isolated += !any;
  }
  if (isolated == 0) return NLE_OK;
  double *nearest = nle__malloc(ctx, (size_t)n * sizeof *nearest, "nearest distances");
  if (!nearest) return NLE_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) nearest[i] = sqrt(nle_csr_value(knn, knn->rowptr[i]));
  qsort(nearest, (size_t)n, sizeof *nearest, cmp_double);
  double median = nearest[n / 2];
  free(nearest);
  if (isolated == n)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "Gaussian affinities: sigma = %g leaves every weight 0 (exp(-d^2 / 2 sigma^2) underflows; the "
                     "median distance to the nearest neighbour is %.3g): use a sigma near that, or a perplexity",
                     sigma, median);
  nle__warn(ctx, NLE_WARN_GENERAL,
           "Gaussian affinities: {@sigma=%g} leaves %lld of %lld points with no weight (the median distance "
           "to the nearest neighbour is %.3g)", sigma, (long long)isolated, (long long)n, median);
  return NLE_OK;
}

nle_status nle_affinity_graph(nle_ctx *ctx, const nle_csr *knn, const nle_affinity_opts *opts, nle_csr **W) {
  *W = NULL;
  nle_affinity_opts defaults;
  if (!opts) {
    nle_affinity_opts_init(&defaults);
    opts = &defaults;
  }
  int64_t n = knn->rows, k = n ? knn->rowptr[1] - knn->rowptr[0] : 0;
  if (opts->kind == NLE_AFF_GAUSSIAN && !(opts->sigma > 0.0 && isfinite(opts->sigma)))
    return nle__fail(ctx, NLE_ERR_ARG, "Gaussian affinities: {@sigma=%s} must be a finite number > 0", nle__real_text(opts->sigma).s);
  if ((unsigned)opts->kind >= NLE_AFF_COUNT) return nle__fail(ctx, NLE_ERR_ARG, "affinities: unknown kind %d", (int)opts->kind);
  if (opts->kind == NLE_AFF_ENTROPIC)
    return nle__fail(ctx, NLE_ERR_ARG, "entropic affinities need a perplexity: nle_entropic_affinities, not "
                     "nle_affinity_graph");
  if (opts->kind == NLE_AFF_SELF_TUNING && (opts->tuning_k < 1 || opts->tuning_k > k))
    return nle__fail(ctx, NLE_ERR_ARG, "self-tuning affinities: {@tuning-k=%d} must be in [1, k = %lld] (its neighbours)",
                     opts->tuning_k, (long long)k);
  double *scale = NULL;
  if (opts->kind == NLE_AFF_SELF_TUNING) {
    scale = nle__malloc(ctx, (size_t)n * sizeof(double), "self-tuning widths");
    if (!scale) return NLE_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++) scale[i] = sqrt(nle_csr_value(knn, knn->rowptr[i] + opts->tuning_k - 1));
  }
  nle_status s = csr_union_transpose(ctx, knn, 0, W); /* values: squared distances */
  for (int64_t i = 0; !s && i < n; i++)
    for (int64_t q = (*W)->rowptr[i]; q < (*W)->rowptr[i + 1]; q++) {
      double *v = (double *)(*W)->val + q, d2 = *v;
      int32_t j = (*W)->colind[q];
      switch (opts->kind) {
      case NLE_AFF_GAUSSIAN: *v = exp(-d2 / (2.0 * opts->sigma * opts->sigma)); break;
      case NLE_AFF_BINARY: *v = 1.0; break;
      case NLE_AFF_INVERSE:
        if (d2 == 0.0)
          s = nle__fail(ctx, NLE_ERR_VALUE,
                        "inverse-distance affinities: points %lld and %d coincide (remove duplicate points)",
                        (long long)i, j);
        else *v = 1.0 / sqrt(d2);
        break;
      case NLE_AFF_SELF_TUNING: {
        /* exp(-d^2 / (sigma_n sigma_m)); coincident points get 1, and a zero
         * width (duplicates up to the k-th neighbour) gives 0 elsewhere. */
        double ss = scale[i] * scale[j];
        *v = d2 == 0.0 ? 1.0 : ss > 0.0 ? exp(-d2 / ss) : 0.0;
        break;
      }
      case NLE_AFF_ENTROPIC:
      case NLE_AFF_COUNT: break; /* refused above */
      }
    }
  free(scale);
  if (!s && opts->kind == NLE_AFF_GAUSSIAN) s = gaussian_not_vanished(ctx, knn, *W, opts->sigma);
  if (s) nle_csr_free(W);
  return s;
}

/* Squared distance of rows i and j in double. */
static double row_sqdist(const nle_matf *Y, size_t i, size_t j) {
  double s = 0.0;
  for (size_t t = 0; t < Y->cols; t++) {
    double u = (double)Y->data[i * Y->cols + t] - Y->data[j * Y->cols + t];
    s += u * u;
  }
  return s;
}

nle_status nle_affinity_gaussian_dense(nle_ctx *ctx, const nle_matf *Y, double sigma, nle_matd **W) {
  *W = NULL;
  if (!(sigma > 0.0 && isfinite(sigma)))
    return nle__fail(ctx, NLE_ERR_ARG, "Gaussian affinities: {@sigma=%s} must be a finite number > 0", nle__real_text(sigma).s);
  nle_status s = nle_matd_alloc(ctx, Y->rows, Y->rows, W);
  if (s) return s;
  size_t n = Y->rows;
  double c = 1.0 / (2.0 * sigma * sigma);
#pragma omp parallel for schedule(dynamic, 64) num_threads(nle__threads_for(ctx, (double)n * n * Y->cols))
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) (*W)->data[i * n + j] = i == j ? 0.0 : exp(-c * row_sqdist(Y, i, j));
  return NLE_OK;
}

nle_status nle_repulsive_dense(nle_ctx *ctx, const nle_matf *Y, nle_wneg_kind kind, nle_matd **W) {
  *W = NULL;
  if (kind != NLE_WNEG_UNIFORM && kind != NLE_WNEG_SQDIST)
    return nle__fail(ctx, NLE_ERR_ARG, "dense repulsive weights are uniform or squared distances");
  nle_status s = nle_matd_alloc(ctx, Y->rows, Y->rows, W);
  if (s) return s;
  size_t n = Y->rows;
#pragma omp parallel for schedule(dynamic, 64) num_threads(nle__threads_for(ctx, (double)n * n * Y->cols))
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      (*W)->data[i * n + j] = i == j ? 0.0 : kind == NLE_WNEG_UNIFORM ? 1.0 : row_sqdist(Y, i, j);
  return NLE_OK;
}

nle_status nle_repulsive_knn(nle_ctx *ctx, const nle_csr *knn, nle_csr **W) {
  return csr_union_transpose(ctx, knn, 0, W);
}

nle_status nle_affinity_check(nle_ctx *ctx, const nle_csr *A) {
  if (A->rows != A->cols) return nle__fail(ctx, NLE_ERR_ARG, "affinities: the matrix must be square");
  for (int64_t i = 0; i < A->rows; i++)
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
      if (!(nle_csr_value(A, q) >= 0) || !isfinite(nle_csr_value(A, q)))
        return nle__fail(ctx, NLE_ERR_VALUE, "affinities: row %lld, column %lld holds %g; they must be finite and >= 0",
                         (long long)i, (long long)A->colind[q], nle_csr_value(A, q));
  return NLE_OK;
}

/* W+ for a model from a given affinity matrix A (the --affinities input). */
nle_status nle_affinity_for_model(nle_ctx *ctx, const nle_csr *A, nle_model_kind kind, nle_csr **W) {
  *W = NULL;
  nle_status checked = nle_affinity_check(ctx, A);
  if (checked) return checked;
  if (kind == NLE_MODEL_SNE) {
    nle_status s = nle_csr_alloc(ctx, A->rows, A->cols, A->nnz, NLE_F64, W);
    for (int64_t i = 0; !s && i < A->rows; i++) {
      double sum = 0.0;
      for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
        if (A->colind[q] != i) sum += nle_csr_value(A, q);
      if (!(sum > 0))
        s = nle__fail(ctx, NLE_ERR_VALUE, "affinities: row %lld has no positive weight off the diagonal (SNE "
                                          "normalises every row)", (long long)i);
      (*W)->rowptr[i + 1] = A->rowptr[i + 1];
      for (int64_t q = A->rowptr[i]; !s && q < A->rowptr[i + 1]; q++) {
        (*W)->colind[q] = A->colind[q];
        ((double *)(*W)->val)[q] = A->colind[q] != i ? nle_csr_value(A, q) / sum : 0.0;
      }
    }
    if (s) nle_csr_free(W);
    return s;
  }
  nle_status s = nle_affinity_symmetrize(ctx, A, 0, W);
  if (s || (kind != NLE_MODEL_SSNE && kind != NLE_MODEL_TSNE)) return s;
  double total = 0.0;
  for (int64_t i = 0; i < (*W)->rows; i++)
    for (int64_t q = (*W)->rowptr[i]; q < (*W)->rowptr[i + 1]; q++)
      if ((*W)->colind[q] != i) total += nle_csr_value(*W, q);
  if (!(total > 0)) {
    nle_csr_free(W);
    return nle__fail(ctx, NLE_ERR_VALUE, "affinities: all off-diagonal weights are zero");
  }
  for (int64_t q = 0; q < (*W)->nnz; q++) ((double *)(*W)->val)[q] /= total;
  return NLE_OK;
}
