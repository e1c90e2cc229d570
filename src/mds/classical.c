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

enum { DENSE_MAX_N = 2000, ROW_BLOCK = 64 };

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

/* X = V_d Lambda_d^1/2 from the top d eigenpairs (ascending in asc, the
 * vectors the columns of V, n x cols, the top one last); an eigenvalue that
 * is not positive is an error: fewer than d dimensions are Euclidean. */
static nle_status scale_vectors(nle_ctx *ctx, const char *what, size_t n, size_t d, const double *asc, size_t last,
                                const double *V, size_t cols, nle_mds_result *r) {
  r->eigenvalues = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
  if (!r->eigenvalues) return NLE_ERR_NOMEM;
  r->n_eigenvalues = (int)d;
  for (size_t t = 0; t < d; t++) {
    r->eigenvalues[t] = asc[last - t];
    if (!(r->eigenvalues[t] > 0))
      return nle__fail(ctx, NLE_ERR_NUMERIC, "%s: eigenvalue %zu of B = -1/2 J M J is %g, not positive: fewer than "
                       "%zu dimensions are Euclidean", what, t + 1, r->eigenvalues[t], d);
  }
  nle_status s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++)
    for (size_t t = 0; t < d; t++) r->X->data[i * d + t] = V[i * cols + (last - t)] * sqrt(r->eigenvalues[t]);
  if (!s) nle__fix_signs(r->X->data, n, d);
  return s;
}

/* Points: B = Ybar Ybar^T, whose eigenpairs are PCA's (LLL eq. 4.13: X =
 * Lambda^1/2 P are the PCA scores), found on the D x D covariance. */
static nle_status classical_points(nle_ctx *ctx, const nle_matf *Y, const nle_mds_opts *o, nle_mds_result *r) {
  size_t n = Y->rows, D = Y->cols, d = (size_t)o->dim;
  if (d > D)
    return nle__fail(ctx, NLE_ERR_ARG, "mds: %zu components of %zu-dimensional points: B has rank <= %zu", d, D, D);
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = (int)d;
  po.solver = NLE_PCA_EXACT;
  nle_pca_model *pm = NULL;
  nle_status s = nle_pca_fit(ctx, Y, &po, &pm);
  if (!s) s = nle_pca_transform(ctx, pm, Y, &r->X);
  if (!s) {
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
    nle__fix_signs(r->X->data, n, d);
    r->trace = r->positive_mass = pm->total_variance * (double)(n - 1);
    r->negative_mass = 0, r->negative_count = 0, r->spectrum_complete = true;
  }
  if (!s && o->keep_model) { /* the linear map: triangulation equals it on Euclidean input */
    s = nle__projection_new(ctx, "classical", NLE_MAP_LINEAR, 0, D, d, NULL, &r->model);
    if (!s) {
      memcpy(r->model->mean, pm->mean, D * sizeof(double));
      for (size_t t = 0; t < d; t++) { /* the signs fix_signs chose */
        double sign = 0;
        for (size_t i = 0; i < n && sign == 0; i++) {
          double a = r->X->data[i * d + t], b = 0;
          for (size_t c = 0; c < D; c++) b += ((double)Y->data[i * D + c] - pm->mean[c]) * pm->components[t * D + c];
          if (fabs(a) > 1e-12 * (fabs(a) + 1)) sign = (a > 0) == (b > 0) ? 1.0 : -1.0;
        }
        for (size_t c = 0; c < D; c++) r->model->A[t * D + c] = (sign ? sign : 1.0) * pm->components[t * D + c];
      }
    }
  }
  nle_pca_model_free(&pm);
  return s;
}

/* y = B x = -1/2 (M x - r (1.x) - 1 (r.x) + g 1 (1.x)) for M the squares
 * of the dissimilarities, r their row means and g its mean: B applied
 * without forming it (Lanczos for N > 2,000). */
typedef struct {
  nle_ctx *ctx;
  const double *delta;
  const double *rmean;
  double gmean, sign;
  size_t n;
  const double *x;
  double *y;
  double sum_x, r_dot_x;
} centred_op;

static int centred_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  centred_op *op = job;
  size_t i1 = (b + 1) * ROW_BLOCK < op->n ? (b + 1) * ROW_BLOCK : op->n;
  for (size_t i = b * ROW_BLOCK; i < i1; i++) {
    const double *row = op->delta + i * op->n;
    double v = 0.0;
    for (size_t j = 0; j < op->n; j++) v += row[j] * row[j] * op->x[j];
    op->y[i] = op->sign * -0.5 * (v - op->rmean[i] * op->sum_x - op->r_dot_x + op->gmean * op->sum_x);
  }
  return 0;
}

static int centred_apply(void *user, const double *x, double *y) {
  centred_op *op = user;
  op->x = x, op->y = y, op->sum_x = op->r_dot_x = 0.0;
  for (size_t j = 0; j < op->n; j++) op->sum_x += x[j], op->r_dot_x += op->rmean[j] * x[j];
  return nle__for_blocks(op->ctx, "classical MDS", (op->n + ROW_BLOCK - 1) / ROW_BLOCK,
                         nle__threads_for(op->ctx, (double)op->n * (double)op->n), 0, centred_block, op) != NLE_OK;
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
      s = scale_vectors(ctx, "mds", n, d, asc, n - 1, V, n, r);
    }
    free(B);
    free(V);
    free(asc);
  } else { /* Lanczos at both ends of the implicit B */
    centred_op op = {ctx, M->data, rmean, gmean, 1.0, n, NULL, NULL, 0, 0};
    double *asc = nle__malloc(ctx, d * sizeof(double), "eigenvalues"),
           *V = nle__malloc(ctx, n * d * sizeof(double), "eigenvectors"),
           *low = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
    s = asc && V && low ? NLE_OK : NLE_ERR_NOMEM;
    if (!s) s = nle__lanczos(ctx, "classical MDS", n, centred_apply, &op, (int)d, NLE__EIG_LARGEST, 0.0, asc, V);
    if (!s) s = nle__lanczos(ctx, "classical MDS", n, centred_apply, &op, (int)d, NLE__EIG_SMALLEST, 0.0, low, NULL);
    if (!s) {
      double all[2 * 64];
      size_t m = 0;
      for (size_t t = 0; t < d && m < 64; t++) all[m++] = low[t];
      for (size_t t = 0; t < d && m < 128; t++) all[m++] = asc[t];
      spectrum_summary(all, m, r);
      r->positive_mass = NAN; /* unknown without the middle of the spectrum */
      r->negative_mass = NAN;
      r->spectrum_complete = false;
      s = scale_vectors(ctx, "mds", n, d, asc, d - 1, V, d, r);
    }
    free(asc);
    free(V);
    free(low);
  }
  free(rmean);
  return s;
}

nle_status nle__mds_classical(nle_ctx *ctx, const nle_mds_input *in, const nle_mds_opts *o, nle_mds_result *r) {
  return in->Y ? classical_points(ctx, in->Y, o, r) : classical_matrix(ctx, in->dissimilarities, o, r);
}

/* Squared distances from the L landmarks to every point (L x N, doubles):
 * blocks of points against the landmarks by DGEMM. */
typedef struct {
  const nle_matf *Y;
  const double *land, *land_norm;
  size_t L;
  double *sq;
} landmark_job;

enum { LAND_BLOCK = 512 };

static int landmark_block(void *job, size_t b, void *scratch) {
  landmark_job *j = job;
  size_t n = j->Y->rows, D = j->Y->cols, i0 = b * LAND_BLOCK, rows = n - i0 < LAND_BLOCK ? n - i0 : LAND_BLOCK;
  double *P = scratch, *G = P + LAND_BLOCK * D, *norm = G + LAND_BLOCK * j->L;
  for (size_t r = 0; r < rows; r++) {
    norm[r] = 0;
    for (size_t c = 0; c < D; c++) {
      double v = j->Y->data[(i0 + r) * D + c];
      P[r * D + c] = v, norm[r] += v * v;
    }
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)j->L, (int)D, 1.0, P, (int)D, j->land, (int)D,
              0.0, G, (int)j->L);
  for (size_t r = 0; r < rows; r++)
    for (size_t a = 0; a < j->L; a++) {
      double d2 = norm[r] + j->land_norm[a] - 2.0 * G[r * j->L + a];
      j->sq[a * n + i0 + r] = d2 > 0 ? d2 : 0.0;
    }
  return 0;
}

nle_status nle__mds_landmark(nle_ctx *ctx, const nle_mds_input *in, const nle_mds_opts *o, nle_mds_result *r) {
  const nle_matf *Y = in->Y;
  const nle_matd *M = in->dissimilarities;
  size_t n = Y ? Y->rows : M->rows, d = (size_t)o->dim, L = (size_t)o->landmarks;
  if (L <= d || L > n)
    return nle__fail(ctx, NLE_ERR_ARG, "landmark MDS: %zu landmarks for %zu dimensions of %zu points (d < L <= N)", L,
                     d, n);
  nle_status s = nle__check_memory(ctx, (double)L * (double)n * sizeof(double), "landmark MDS's L x N distances");
  if (s) return s;
  int32_t *perm = nle__malloc(ctx, n * sizeof(int32_t), "the landmarks");
  double *sq = nle__malloc(ctx, L * n * sizeof(double), "landmark MDS's L x N distances");
  double *B = nle__malloc(ctx, L * L * sizeof(double), "landmark MDS"), *V = nle__malloc(ctx, L * L * sizeof(double), "landmark MDS"),
         *asc = nle__malloc(ctx, L * sizeof(double), "eigenvalues"), *mean = nle__calloc(ctx, L, sizeof(double), "landmark MDS");
  double *land = NULL, *land_norm = NULL, *A = NULL;
  if (!perm || !sq || !B || !V || !asc || !mean) s = NLE_ERR_NOMEM;
  if (!s) { /* L distinct landmarks at random (their paper: as good as MaxMin once L is a few times d) */
    nle_rng rng;
    nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6c6d6473ULL);
    for (size_t i = 0; i < n; i++) perm[i] = (int32_t)i;
    for (size_t i = 0; i < L; i++) {
      size_t j = i + (size_t)(nle_rng_uniform(&rng) * (double)(n - i));
      if (j >= n) j = n - 1;
      int32_t t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
  }
  if (!s && M) {
    for (size_t a = 0; a < L; a++)
      for (size_t i = 0; i < n; i++) {
        double v = M->data[(size_t)perm[a] * n + i];
        sq[a * n + i] = v * v;
      }
  } else if (!s) {
    size_t D = Y->cols;
    land = nle__malloc(ctx, L * D * sizeof(double), "the landmarks");
    land_norm = nle__calloc(ctx, L, sizeof(double), "the landmarks");
    if (!land || !land_norm) s = NLE_ERR_NOMEM;
    for (size_t a = 0; !s && a < L; a++)
      for (size_t c = 0; c < D; c++) {
        double v = Y->data[(size_t)perm[a] * D + c];
        land[a * D + c] = v, land_norm[a] += v * v;
      }
    landmark_job job = {Y, land, land_norm, L, sq};
    if (!s)
      s = nle__for_blocks(ctx, "landmark distances", (n + LAND_BLOCK - 1) / LAND_BLOCK,
                          nle__threads_for(ctx, (double)n * (double)L * (double)D),
                          (LAND_BLOCK * D + LAND_BLOCK * L + LAND_BLOCK) * sizeof(double), landmark_block, &job);
    for (size_t a = 0; !s && a < L; a++) sq[a * n + (size_t)perm[a]] = 0.0; /* exact, whatever the rounding */
  }
  /* classical MDS of the landmarks: B_L = -1/2 J Delta_L J */
  double gm = 0.0;
  for (size_t a = 0; !s && a < L; a++) {
    for (size_t b = 0; b < L; b++) mean[a] += sq[a * n + (size_t)perm[b]];
    mean[a] /= (double)L;
    gm += mean[a] / (double)L;
  }
  for (size_t a = 0; !s && a < L; a++)
    for (size_t b = 0; b < L; b++) B[a * L + b] = -0.5 * (sq[a * n + (size_t)perm[b]] - mean[a] - mean[b] + gm);
  if (!s) {
    r->trace = 0;
    for (size_t a = 0; a < L; a++) r->trace += B[a * L + a];
    s = nle__eig_dense(ctx, "landmark MDS", L, B, 0, L, asc, V);
  }
  if (!s) {
    spectrum_summary(asc, L, r);
    r->spectrum_complete = true;
    r->eigenvalues = nle__malloc(ctx, d * sizeof(double), "eigenvalues");
    A = nle__malloc(ctx, d * L * sizeof(double), "the triangulation");
    if (!r->eigenvalues || !A) s = NLE_ERR_NOMEM;
    else r->n_eigenvalues = (int)d;
  }
  for (size_t t = 0; !s && t < d; t++) {
    double lambda = r->eigenvalues[t] = asc[L - 1 - t];
    if (!(lambda > 0))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "landmark MDS: eigenvalue %zu of the landmarks' B is %g, not positive: "
                    "fewer than %zu dimensions are Euclidean", t + 1, lambda, d);
    for (size_t a = 0; !s && a < L; a++) A[t * L + a] = V[a * L + (L - 1 - t)] / sqrt(lambda); /* L#'s row t */
  }
  if (!s) { /* a sign per axis: the largest-magnitude landmark coordinate positive */
    for (size_t t = 0; t < d; t++) {
      double big = 0;
      for (size_t a = 0; a < L; a++)
        if (fabs(A[t * L + a]) > fabs(big)) big = A[t * L + a];
      if (big < 0)
        for (size_t a = 0; a < L; a++) A[t * L + a] = -A[t * L + a];
    }
    s = nle_matd_alloc(ctx, n, d, &r->X);
  }
  if (!s) { /* triangulation: x = -1/2 L# (delta_x - mean), every point at once */
    for (size_t a = 0; a < L; a++)
      for (size_t i = 0; i < n; i++) sq[a * n + i] -= mean[a];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, (int)n, (int)d, (int)L, -0.5, sq, (int)n, A, (int)L, 0.0,
                r->X->data, (int)d);
  }
  if (!s && o->keep_model && Y) {
    nle_matf *R = NULL;
    int64_t *idx = nle__malloc(ctx, L * sizeof(int64_t), "the landmarks");
    if (!idx) s = NLE_ERR_NOMEM;
    for (size_t a = 0; !s && a < L; a++) idx[a] = perm[a];
    if (!s) s = nle_matf_select_rows(ctx, Y, idx, L, &R);
    if (!s) s = nle__projection_new(ctx, "landmark", NLE_MAP_TRIANGULATION, L, Y->cols, d, R, &r->model);
    if (!s) {
      memcpy(r->model->mean, mean, L * sizeof(double));
      memcpy(r->model->A, A, d * L * sizeof(double));
    }
    nle_matf_free(&R);
    free(idx);
  }
  free(perm);
  free(sq);
  free(B);
  free(V);
  free(asc);
  free(mean);
  free(land);
  free(land_norm);
  free(A);
  return s;
}
