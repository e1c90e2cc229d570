/* classical.c — classical MDS (lecture slides 002, "Classic Metric MDS":
 * B = X'^T X' = -1/2 J M J, M the squared dissimilarities, X' the top
 * eigenvectors scaled by sqrt(lambda); SPEC G06-1) and landmark MDS (de
 * Silva and Tenenbaum 2004, "Sparse multidimensional scaling using
 * landmark points": classical MDS of L landmarks, every point placed by
 * distance-based triangulation, their eq. 3). */
#include "mds_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DENSE_MAX_N = 2000 };

/* Below this fraction of the largest |lambda| an eigenvalue counts as 0:
 * dissimilarities read from single-precision data carry rounding noise of
 * about 1e-7 of it. */
#define ZERO_EIGENVALUE 1e-6

/* The spectrum of B beyond the embedding: count and mass of its negative
 * eigenvalues (the input is not Euclidean) and the positive mass. */
static void spectrum_summary(const double *asc, size_t count, nle_mds_result *r) {
  double big = fmax(fabs(asc[0]), fabs(asc[count - 1])), pos = 0, neg = 0;
  int negatives = 0;
  for (size_t t = 0; t < count; t++) {
    if (asc[t] > ZERO_EIGENVALUE * big) pos += asc[t];
    if (asc[t] < -ZERO_EIGENVALUE * big) neg -= asc[t], negatives++;
  }
  r->positive_mass = pos, r->negative_mass = neg, r->negative_count = negatives;
}

nle_status nle__scale_eigenvectors(nle_ctx *ctx, const char *what, size_t n, size_t d, const double *asc, size_t last,
                                   const double *V, size_t cols, double **vals, nle_matd **X) {
  *vals = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
  if (!*vals) return NLE_ERR_NOMEM;
  for (size_t t = 0; t < d; t++) {
    (*vals)[t] = asc[last - t];
    if (!((*vals)[t] > 0))
      return nle__fail(ctx, NLE_ERR_NUMERIC, "%s: eigenvalue %zu is %g, not positive: fewer than %zu useful "
                       "dimensions", what, t + 1, (*vals)[t], d);
  }
  nle_status s = nle_matd_alloc(ctx, n, d, X);
  for (size_t i = 0; !s && i < n; i++)
    for (size_t t = 0; t < d; t++) (*X)->data[i * d + t] = V[i * cols + (last - t)] * sqrt((*vals)[t]);
  if (!s) nle__fix_signs((*X)->data, n, d);
  return s;
}

/* Points: B = Ybar Ybar^T, whose eigenpairs are PCA's (LLL eq. 4.13: X =
 * Lambda^1/2 P are the PCA scores), found on the D x D covariance; X is
 * the linear map of the points (the model kept when asked). */
static nle_status classical_points(nle_ctx *ctx, const nle_matf *Y, const nle_mds_opts *o, nle_mds_result *r) {
  size_t n = Y->rows, D = Y->cols, d = (size_t)o->dim;
  if (d > D)
    return nle__fail(ctx, NLE_ERR_ARG, "mds: %zu components of %zu-dimensional points: B has rank <= %zu", d, D, D);
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = (int)d;
  po.solver = NLE_PCA_EXACT;
  nle_pca_model *pm = NULL;
  nle_projection_model *map = NULL;
  nle_status s = nle_pca_fit(ctx, Y, &po, &pm);
  if (!s) s = nle__projection_new(ctx, "classical", NLE_MAP_LINEAR, 0, D, d, NULL, &map);
  if (!s) {
    memcpy(map->mean, pm->mean, D * sizeof(double));
    memcpy(map->A, pm->components, d * D * sizeof(double));
    s = nle_projection_transform(ctx, map, Y, &r->X);
  }
  if (!s) {
    nle__fix_signs_map(r->X, map->A, D);
    r->eigenvalues = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
    if (!r->eigenvalues) s = NLE_ERR_NOMEM;
  }
  for (size_t t = 0; !s && t < d; t++) {
    r->eigenvalues[t] = pm->explained_variance[t] * (double)(n - 1);
    if (!(r->eigenvalues[t] > 0))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "mds: eigenvalue %zu of B is %g: the points span fewer than %zu dimensions",
                    t + 1, r->eigenvalues[t], d);
  }
  if (!s) {
    r->n_eigenvalues = (int)d;
    r->trace = r->positive_mass = pm->total_variance * (double)(n - 1);
    r->negative_mass = 0, r->negative_count = 0, r->spectrum_complete = true;
    if (o->keep_model) r->model = map, map = NULL; /* triangulation equals the linear map on Euclidean input */
  }
  nle_projection_model_free(&map);
  nle_pca_model_free(&pm);
  return s;
}

static nle_status classical_matrix(nle_ctx *ctx, const nle_matd *M, const nle_mds_opts *o, nle_mds_result *r) {
  size_t n = M->rows, d = (size_t)o->dim;
  double *rmean = nle__calloc(ctx, n, sizeof(double), "classical MDS"), gmean = 0;
  if (!rmean) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < n; j++) rmean[i] += M->data[i * n + j] * M->data[i * n + j];
    rmean[i] /= (double)n;
    gmean += rmean[i] / (double)n;
  }
  r->trace = 0.5 * (double)n * gmean; /* tr B, M's diagonal 0 */
  nle_status s = NLE_OK;
  if (n <= DENSE_MAX_N) { /* the whole spectrum: the negative eigenvalues counted exactly */
    double *B = nle__malloc(ctx, n * n * sizeof(double), "classical MDS's B"),
           *V = nle__malloc(ctx, n * n * sizeof(double), "classical MDS's eigenvectors"),
           *asc = nle__malloc(ctx, n * sizeof(double), "eigenvalues");
    s = B && V && asc ? NLE_OK : NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (size_t j = 0; j < n; j++) {
        double m = M->data[i * n + j] * M->data[i * n + j];
        B[i * n + j] = -0.5 * (m - rmean[i] - rmean[j] + gmean); /* slides: -1/2 J M J */
      }
    if (!s) s = nle__eig_dense(ctx, "classical MDS", n, B, 0, n, asc, V);
    if (!s) {
      spectrum_summary(asc, n, r);
      r->spectrum_complete = true;
      s = nle__scale_eigenvectors(ctx, "mds", n, d, asc, n - 1, V, n, &r->eigenvalues, &r->X);
    }
    free(B);
    free(V);
    free(asc);
  } else { /* Lanczos at both ends of the implicit B */
    nle__centred_op op = {ctx, NULL, M->data, rmean, gmean, n, NULL, NULL, 0, 0};
    double *asc = nle__malloc(ctx, d * sizeof(double), "eigenvalues"),
           *V = nle__malloc(ctx, n * d * sizeof(double), "eigenvectors"),
           *low = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
    s = asc && V && low ? NLE_OK : NLE_ERR_NOMEM;
    if (!s) s = nle__lanczos(ctx, "classical MDS", n, nle__centred_apply, &op, (int)d, NLE__EIG_LARGEST, 0.0, asc, V);
    if (!s) s = nle__lanczos(ctx, "classical MDS", n, nle__centred_apply, &op, (int)d, NLE__EIG_SMALLEST, 0.0, low, NULL);
    if (!s) { /* only the two ends are known: the negatives among the bottom d */
      double big = fmax(fabs(asc[d - 1]), fabs(low[0]));
      for (size_t t = 0; t < d; t++) r->negative_count += low[t] < -ZERO_EIGENVALUE * big;
      r->positive_mass = r->negative_mass = NAN;
      r->spectrum_complete = false;
      s = nle__scale_eigenvectors(ctx, "mds", n, d, asc, d - 1, V, d, &r->eigenvalues, &r->X);
    }
    free(asc);
    free(V);
    free(low);
  }
  if (r->eigenvalues) r->n_eigenvalues = (int)d;
  free(rmean);
  return s;
}

nle_status nle__mds_classical(nle_ctx *ctx, const nle_mds_input *in, const nle_mds_opts *o, nle_mds_result *r) {
  return in->Y ? classical_points(ctx, in->Y, o, r) : classical_matrix(ctx, in->dissimilarities, o, r);
}

nle_status nle__mds_landmark(nle_ctx *ctx, const nle_mds_input *in, const nle_mds_opts *o, nle_mds_result *r) {
  const nle_matf *Y = in->Y;
  const nle_matd *M = in->dissimilarities;
  size_t n = Y ? Y->rows : M->rows, d = (size_t)o->dim, L = (size_t)o->landmarks;
  if (L <= d || L > n)
    return nle__fail(ctx, NLE_ERR_ARG, "landmark MDS: {@landmarks=%zu} for %zu dimensions of %zu points (d < L <= N)", L,
                     d, n);
  nle_status s = nle__check_memory(ctx, (double)L * (double)n * sizeof(double), "landmark MDS's L x N distances");
  if (s) return s;
  int64_t *land = nle__malloc(ctx, L * sizeof(int64_t), "the landmarks");
  double *sq = nle__malloc(ctx, L * n * sizeof(double), "landmark MDS's L x N distances");
  double *B = nle__malloc(ctx, L * L * sizeof(double), "landmark MDS"), *V = nle__malloc(ctx, L * L * sizeof(double), "landmark MDS"),
         *asc = nle__malloc(ctx, L * sizeof(double), "eigenvalues"), *mean = nle__calloc(ctx, L, sizeof(double), "landmark MDS");
  nle_matf *R = NULL;
  nle_projection_model *map = NULL;
  if (!land || !sq || !B || !V || !asc || !mean) s = NLE_ERR_NOMEM;
  if (!s) { /* L distinct landmarks at random (their paper: as good as MaxMin once L is a few times d) */
    nle_rng rng;
    nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6c6d6473ULL);
    nle_rng_sample(&rng, (int64_t)n, (int64_t)L, land);
  }
  if (!s && M) {
    for (size_t a = 0; a < L; a++)
      for (size_t i = 0; i < n; i++) {
        double v = M->data[(size_t)land[a] * n + i];
        sq[a * n + i] = v * v;
      }
  } else if (!s) { /* the landmarks' squared distances to every point */
    s = nle_matf_select_rows(ctx, Y, land, L, &R);
    if (!s) s = nle__pairwise(ctx, R, Y, NLE__PAIR_SQDIST, NULL, sq);
    for (size_t a = 0; !s && a < L; a++) sq[a * n + (size_t)land[a]] = 0.0; /* exact, whatever the rounding */
  }
  /* classical MDS of the landmarks: B_L = -1/2 J Delta_L J */
  double gm = 0.0;
  for (size_t a = 0; !s && a < L; a++) {
    for (size_t b = 0; b < L; b++) mean[a] += sq[a * n + (size_t)land[b]];
    mean[a] /= (double)L;
    gm += mean[a] / (double)L;
  }
  for (size_t a = 0; !s && a < L; a++)
    for (size_t b = 0; b < L; b++) B[a * L + b] = -0.5 * (sq[a * n + (size_t)land[b]] - mean[a] - mean[b] + gm);
  if (!s) {
    r->trace = 0;
    for (size_t a = 0; a < L; a++) r->trace += B[a * L + a];
    s = nle__eig_dense(ctx, "landmark MDS", L, B, 0, L, asc, V);
  }
  if (!s) {
    spectrum_summary(asc, L, r);
    r->spectrum_complete = true;
    r->eigenvalues = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
    if (!r->eigenvalues) s = NLE_ERR_NOMEM;
    else r->n_eigenvalues = (int)d;
  }
  if (!s) s = nle__projection_new(ctx, "landmark", NLE_MAP_TRIANGULATION, L, Y ? Y->cols : 1, d, R, &map);
  for (size_t t = 0; !s && t < d; t++) {
    double lambda = r->eigenvalues[t] = asc[L - 1 - t];
    if (!(lambda > 0))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "landmark MDS: eigenvalue %zu of the landmarks' B is %g, not positive: "
                    "fewer than %zu dimensions are Euclidean", t + 1, lambda, d);
    for (size_t a = 0; !s && a < L; a++) map->A[t * L + a] = V[a * L + (L - 1 - t)] / sqrt(lambda); /* L#'s row t */
  }
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  if (!s) { /* triangulation: x = -1/2 L# (delta_x - mean), every point at once */
    memcpy(map->mean, mean, L * sizeof(double));
    for (size_t a = 0; a < L; a++)
      for (size_t i = 0; i < n; i++) sq[a * n + i] -= mean[a];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, (int)n, (int)d, (int)L, -0.5, sq, (int)n, map->A, (int)L, 0.0,
                r->X->data, (int)d);
    nle__fix_signs_map(r->X, map->A, L);
    if (o->keep_model && Y) r->model = map, map = NULL;
  }
  nle_projection_model_free(&map);
  nle_matf_free(&R);
  free(land);
  free(sq);
  free(B);
  free(V);
  free(asc);
  free(mean);
  return s;
}
