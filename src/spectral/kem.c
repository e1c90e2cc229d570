/* kem.c — kernel eigenmaps (M. Brand, IJCAI 2003; seed 004): the
 * transformational embedding of a graph (sec. 2, eq. 8) with its row-space
 * corrections (sec. 2.1: raw, affine, reweighted, stochastic eq. 12), and
 * the fit of sec. 3: a kNN graph with inverse-distance weights, K Gaussian
 * kernels at random data points with optional local PCA projections K_k,
 * the basis Z of eqs. 14-15, and the map and inverse kept in a model
 * (kem_map.c). Every eigenproblem goes through the shared reduced-pencil
 * solver nle__pencil_solve (SPEC G07-20) as a MAX problem on
 * (Z W Z^T, Z D Z^T). */
#include "kem_internal.h"
#include "method.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void nle_kem_opts_init(nle_kem_opts *o) {
  memset(o, 0, sizeof *o);
  o->dim = 2;
  o->k = 12;
  o->weights = NLE_AFF_INVERSE;
  o->heat_t = NLE_AUTO;
  o->symmetrize = NLE_SYMMETRIZE_AVERAGE;
  o->plus_identity = false;
  o->kernels = NLE_AUTO;
  o->sigma = NLE_AUTO;
  o->local_dims = NLE_AUTO;
  o->local_points = NLE_AUTO;
  o->truncate = 1e-8;
  o->variant = NLE_KEM_AUTO;
  o->lpp = false;
  o->inverse_steps = 5;
  o->inverse_width = 0.25;
  o->keep_model = true;
}

void nle_kem_result_free(nle_kem_result **r) {
  if (!r || !*r) return;
  nle_matd_free(&(*r)->X);
  nle_csr_free(&(*r)->W);
  free((*r)->eigenvalues);
  nle_kem_model_free(&(*r)->model);
  free(*r);
  *r = NULL;
}

/* ---- the pencil (sec. 2) ------------------------------------------------- */

/* Rows of Zt with at most this fraction of their entries non-zero make the
 * pencil sparse sums instead of GEMMs: narrow kernels keep few posteriors
 * above the truncation (about 22 of 1024 per Fashion-MNIST image at the
 * default width), and the sums then cost N nnz^2 against GEMMs' N m^2. */
#define SPARSE_PENCIL_FILL 0.125

/* The non-zero columns of each row of Zt (rowptr n + 1, cols), or false
 * when the rows are too full for the sparse sums (or out of memory). */
static bool sparse_rows(const double *Zt, size_t n, size_t m, int64_t **rowptr, int32_t **cols) {
  size_t nnz = 0;
  for (size_t e = 0; e < n * m; e++) nnz += Zt[e] != 0;
  *rowptr = NULL, *cols = NULL;
  if ((double)nnz > SPARSE_PENCIL_FILL * (double)n * (double)m) return false;
  *rowptr = malloc((n + 1) * sizeof(int64_t));
  *cols = malloc((nnz ? nnz : 1) * sizeof(int32_t));
  if (!*rowptr || !*cols) {
    free(*rowptr), free(*cols);
    return false;
  }
  size_t t = 0;
  for (size_t i = 0; i < n; i++) {
    (*rowptr)[i] = (int64_t)t;
    for (size_t c = 0; c < m; c++)
      if (Zt[i * m + c] != 0) (*cols)[t++] = (int32_t)c;
  }
  (*rowptr)[n] = (int64_t)t;
  return true;
}

/* The pencil as sums over the points, A = sum_i z_i ((W + [I]) Z^T)_i^T and
 * B = sum_i deg_i z_i z_i^T, over each z_i's non-zero entries only (serial:
 * the same bits at any thread count); row is m doubles of scratch. */
static void sparse_pencil(const nle_csr *W, const double *deg, bool plus_identity, const double *Zt, size_t n,
                          size_t m, const int64_t *rp, const int32_t *cols, double *row, double *A, double *B) {
  memset(A, 0, m * m * sizeof(double));
  memset(B, 0, m * m * sizeof(double));
  memset(row, 0, m * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    const double *zi = Zt + i * m;
    if (plus_identity)
      for (int64_t t = rp[i]; t < rp[i + 1]; t++) row[cols[t]] += zi[cols[t]];
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      size_t j = (size_t)W->colind[q];
      double w = nle_csr_value(W, q);
      for (int64_t t = rp[j]; t < rp[j + 1]; t++) row[cols[t]] += w * Zt[j * m + (size_t)cols[t]];
    }
    for (int64_t a = rp[i]; a < rp[i + 1]; a++) {
      double za = zi[cols[a]];
      double *Aa = A + (size_t)cols[a] * m, *Ba = B + (size_t)cols[a] * m;
      for (size_t c = 0; c < m; c++) Aa[c] += za * row[c];
      for (int64_t b = rp[i]; b < rp[i + 1]; b++) Ba[cols[b]] += deg[i] * za * zi[cols[b]];
    }
    /* clear what the row touched */
    if (plus_identity)
      for (int64_t t = rp[i]; t < rp[i + 1]; t++) row[cols[t]] = 0;
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      size_t j = (size_t)W->colind[q];
      for (int64_t t = rp[j]; t < rp[j + 1]; t++) row[cols[t]] = 0;
    }
  }
}

/* A = Zt^T (W + [I]) Zt and B = Zt^T diag(deg) Zt (m x m), never forming
 * anything N x N: sparse sums when Zt's rows are sparse, else W Zt row by
 * row over W's CSR, then two GEMMs whose inner dimension is N (OpenBLAS
 * splits the output, not the sum, between threads: the same bits at any
 * thread count). */
static nle_status build_pencil(nle_ctx *ctx, const nle_csr *W, const double *deg, bool plus_identity,
                               const double *Zt, size_t n, size_t m, double *A, double *B) {
  int64_t *rp;
  int32_t *cols;
  double *WZ = NULL;
  if (sparse_rows(Zt, n, m, &rp, &cols)) {
    double *row = nle__malloc(ctx, m * sizeof(double), "the pencil's row");
    if (row) sparse_pencil(W, deg, plus_identity, Zt, n, m, rp, cols, row, A, B);
    free(rp), free(cols), free(row);
    if (!row) return NLE_ERR_NOMEM;
  } else {
    WZ = nle__malloc(ctx, n * m * sizeof(double), "the pencil's W Z^T");
    if (!WZ) return NLE_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
      double *row = WZ + i * m;
      if (plus_identity) memcpy(row, Zt + i * m, m * sizeof(double));
      else memset(row, 0, m * sizeof(double));
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
        double w = nle_csr_value(W, q);
        const double *zj = Zt + (size_t)W->colind[q] * m;
        for (size_t c = 0; c < m; c++) row[c] += w * zj[c];
      }
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)m, (int)n, 1.0, Zt, (int)m, WZ, (int)m, 0.0, A,
                (int)m);
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < m; c++) WZ[i * m + c] = deg[i] * Zt[i * m + c];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)m, (int)n, 1.0, Zt, (int)m, WZ, (int)m, 0.0, B,
                (int)m);
    free(WZ);
  }
  /* exact symmetry: A's two triangles differ by rounding */
  for (size_t i = 0; i < m; i++)
    for (size_t j = i + 1; j < m; j++) {
      A[i * m + j] = A[j * m + i] = 0.5 * (A[i * m + j] + A[j * m + i]);
      B[i * m + j] = B[j * m + i] = 0.5 * (B[i * m + j] + B[j * m + i]);
    }
  return NLE_OK;
}

/* The nev = dim + 1 largest eigenpairs of (Zt^T W Zt, Zt^T D Zt) (eq. 8),
 * vectors reordered so that column 0 is v_1 (m x nev), values descending. */
static nle_status solve_pencil(nle_ctx *ctx, const nle_csr *W, const double *deg, bool plus_identity,
                               const double *Zt, size_t n, size_t m, int nev, double *vals, double *V,
                               nle__pencil_info *info) {
  if ((size_t)nev > m)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: the basis has %zu rows, fewer than the %d eigenvectors needed (dim + 1)",
                     m, nev);
  double *A = nle__malloc(ctx, m * m * sizeof(double), "the reduced pencil");
  double *B = nle__malloc(ctx, m * m * sizeof(double), "the reduced pencil");
  double *U = nle__malloc(ctx, m * (size_t)nev * sizeof(double), "the pencil's eigenvectors");
  double *lam = nle__malloc(ctx, (size_t)nev * sizeof(double), "the pencil's eigenvalues");
  nle_status s = A && B && U && lam ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = build_pencil(ctx, W, deg, plus_identity, Zt, n, m, A, B);
  if (!s) s = nle__pencil_solve(ctx, "kernel eigenmaps", m, A, B, nev, NLE__EIG_LARGEST, lam, U, info);
  for (int j = 0; !s && j < nev; j++) { /* ascending -> descending */
    vals[j] = lam[nev - 1 - j];
    for (size_t r = 0; r < m; r++) V[r * (size_t)nev + (size_t)j] = U[r * (size_t)nev + (size_t)(nev - 1 - j)];
  }
  free(A), free(B), free(U), free(lam);
  return s;
}

/* Outcome of the transformational embedding: the map's rows and v_1. */
typedef struct {
  double *G;  /* dim x cols, cols = m (+1 affine) */
  double *v1; /* m (dividing variants) */
} embed_map;

/* Brand sec. 2-2.1 on W (N x N) and Zt (N x m): r->X, eigenvalues, the
 * pencil's report, distortion; the map in *map (allocated here). */
static nle_status transformational(nle_ctx *ctx, const nle_csr *W, const double *Zt, size_t n, size_t m, int dim,
                                   nle_kem_variant variant, bool plus_identity, nle_kem_result *r, embed_map *map) {
  int nev = dim + 1;
  bool affine = variant == NLE_KEM_AFFINE, divides = nle__kem_divides(variant);
  size_t cols = m + affine;
  double *deg = nle__calloc(ctx, n, sizeof(double), "the degrees");
  double *Za = affine ? nle__malloc(ctx, n * cols * sizeof(double), "the affine basis") : NULL;
  double *V = nle__malloc(ctx, cols * (size_t)nev * sizeof(double), "the pencil's eigenvectors");
  double *den = nle__malloc(ctx, n * sizeof(double), "the reweighting");
  double *ZK = variant == NLE_KEM_STOCHASTIC ? nle__malloc(ctx, n * m * sizeof(double), "the reweighted basis") : NULL;
  map->G = nle__calloc(ctx, (size_t)dim * cols, sizeof(double), "the map");
  map->v1 = divides ? nle__calloc(ctx, m, sizeof(double), "the map") : NULL;
  r->eigenvalues = nle__malloc(ctx, (size_t)nev * sizeof(double), "the eigenvalues");
  nle_status s = deg && (Za || !affine) && V && den && (ZK || variant != NLE_KEM_STOCHASTIC) && map->G &&
                         (map->v1 || !divides) && r->eigenvalues
                     ? NLE_OK
                     : NLE_ERR_NOMEM;
  if (!s) s = nle_matd_alloc(ctx, n, (size_t)dim, &r->X);
  r->n_eigenvalues = nev;
  /* D = diag(W 1), of W + I when asked (SPEC G07-22: D - W unchanged) */
  for (size_t i = 0; !s && i < n; i++) {
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) deg[i] += nle_csr_value(W, q);
    deg[i] += plus_identity;
    if (!(deg[i] > 0))
      s = nle__fail(ctx, NLE_ERR_VALUE, "kem: row %zu of W has no edge (degree 0): the pencil's D is singular", i);
  }
  if (!s && affine) { /* z_i -> [z_i; 1] */
    for (size_t i = 0; i < n; i++) {
      memcpy(Za + i * cols, Zt + i * m, m * sizeof(double));
      Za[i * cols + m] = 1.0;
    }
  }
  nle__pencil_info info = {0};
  double t0 = nle_time_seconds();
  if (!s) s = solve_pencil(ctx, W, deg, plus_identity, affine ? Za : Zt, n, cols, nev, r->eigenvalues, V, &info);
  r->denominator_spread = NAN;
  if (!s && divides) {
    /* K = diag(v_1^T Z)^-1: each column of Z divided by v_1^T z_i, so the
     * first row of V^T Z K is all ones (sec. 2.1); v_1's sign chosen so
     * that the denominators are positive on average (on the kernel basis
     * they are all positive and nearly equal; on an arbitrary Z, as in
     * fig. 1, they may change sign) */
    double mean = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
      double t = 0;
      for (size_t c = 0; c < m; c++) t += V[c * (size_t)nev] * Zt[i * m + c];
      den[i] = t, mean += t / (double)n;
    }
    double sign = mean < 0 ? -1.0 : 1.0;
    for (size_t c = 0; c < m; c++) map->v1[c] = sign * V[c * (size_t)nev];
    for (size_t i = 0; i < n; i++) {
      den[i] *= sign;
      lo = fmin(lo, den[i]), hi = fmax(hi, den[i]);
    }
    r->denominator_spread = (hi - lo) / fabs(mean);
    for (size_t i = 0; !s && i < n; i++)
      if (!(den[i] != 0) || !isfinite(den[i]))
        s = nle__fail(ctx, NLE_ERR_NUMERIC, "kem: the reweighting denominator v_1^T z is %g at point %zu (try the "
                      "raw or affine {@variant})", den[i], i);
  }
  if (!s && variant == NLE_KEM_STOCHASTIC) {
    /* eq. 12: the pencil again on Z K */
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < m; c++) ZK[i * m + c] = Zt[i * m + c] / den[i];
    nle__pencil_info info2 = {0};
    s = solve_pencil(ctx, W, deg, plus_identity, ZK, n, m, nev, r->eigenvalues, V, &info2);
    info.singular |= info2.singular;
    info.rank = info2.rank, info.b_rcond = info2.b_rcond;
  }
  r->eigen_seconds = nle_time_seconds() - t0;
  if (!s) {
    /* G = [v_2 .. v_{d+1}]^T (eq. 17), the map of z^ (divided by den) */
    for (int t = 0; t < dim; t++)
      for (size_t c = 0; c < cols; c++) map->G[(size_t)t * cols + c] = V[c * (size_t)nev + (size_t)t + 1];
    const double *src = affine ? Za : Zt;
    for (size_t i = 0; i < n; i++)
      for (int t = 0; t < dim; t++) {
        double y = 0;
        for (size_t c = 0; c < cols; c++) y += map->G[(size_t)t * cols + c] * src[i * cols + c];
        r->X->data[i * (size_t)dim + (size_t)t] = divides ? y / den[i] : y;
      }
    /* signs: each coordinate's largest-magnitude entry positive, the map's
     * row flipped alongside (the results do not depend on LAPACK's signs) */
    nle__fix_signs_map(r->X, map->G, cols);
    /* eq. 5 distortion sum_k sum_ij (y_ik - y_jk)^2 W_ij / 2, Y scaled to
     * trace(Y D Y^T) = d (SPEC G07-17): the figure of Brand's fig. 1 */
    double tr = 0, dist = 0;
    for (size_t i = 0; i < n; i++)
      for (int t = 0; t < dim; t++) tr += deg[i] * r->X->data[i * (size_t)dim + (size_t)t] * r->X->data[i * (size_t)dim + (size_t)t];
    for (size_t i = 0; i < n; i++)
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
        const double *a = r->X->data + i * (size_t)dim, *b = r->X->data + (size_t)W->colind[q] * (size_t)dim;
        double e = 0;
        for (int t = 0; t < dim; t++) e += (a[t] - b[t]) * (a[t] - b[t]);
        dist += 0.5 * nle_csr_value(W, q) * e;
      }
    r->distortion = dist * (double)dim / tr;
    r->pencil_singular = info.singular;
    r->pencil_order = cols;
    r->pencil_rank = info.rank;
    r->pencil_rcond = info.b_rcond;
    r->n = n;
  }
  free(deg), free(Za), free(V), free(den), free(ZK);
  if (s) {
    free(map->G), free(map->v1);
    map->G = map->v1 = NULL;
  }
  return s;
}

static nle_status check_common(nle_ctx *ctx, const nle_kem_opts *o) {
  if (o->dim < 1 || o->dim > 64) return nle__fail(ctx, NLE_ERR_ARG, "kem: {@dim=%s} must be 1 to 64 (the maps' fixed blocks)", nle__int_text(o->dim).s);
  if (o->variant != NLE_KEM_AUTO && (o->variant < NLE_KEM_RAW || o->variant >= NLE_KEM_COUNT))
    return nle__fail(ctx, NLE_ERR_ARG, "kem: unknown variant %d", (int)o->variant);
  return NLE_OK;
}

nle_status nle_kem_graph_embed(nle_ctx *ctx, const nle_csr *W, const nle_matd *Zt, const nle_kem_opts *opts,
                               nle_kem_result **result) {
  if (!W || !Zt || !result) return nle__fail(ctx, NLE_ERR_ARG, "kem: NULL argument");
  *result = NULL;
  nle_kem_opts o;
  if (opts) o = *opts;
  else nle_kem_opts_init(&o);
  nle_status s = check_common(ctx, &o);
  if (s) return s;
  if (o.variant == NLE_KEM_AUTO) o.variant = NLE_KEM_REWEIGHTED;
  size_t n = Zt->rows;
  if (W->rows != W->cols || (size_t)W->rows != n)
    return nle__fail(ctx, NLE_ERR_VALUE, "kem: W is %lld x %lld for a basis of %zu points", (long long)W->rows,
                     (long long)W->cols, n);
  for (int64_t q = 0; q < W->nnz; q++)
    if (!(nle_csr_value(W, q) >= 0) || !isfinite(nle_csr_value(W, q)))
      return nle__fail(ctx, NLE_ERR_VALUE, "kem: W has a negative or non-finite weight");
  for (size_t e = 0; e < n * Zt->cols; e++)
    if (!isfinite(Zt->data[e])) return nle__fail(ctx, NLE_ERR_VALUE, "kem: the basis has a non-finite value");
  s = nle__csr_check_symmetric(ctx, W, "kem: W");
  if (s) return s;
  nle_kem_result *r = nle__calloc(ctx, 1, sizeof *r, "the kem result");
  if (!r) return NLE_ERR_NOMEM;
  double t0 = nle_time_seconds();
  embed_map map = {0};
  s = transformational(ctx, W, Zt->data, n, Zt->cols, o.dim, o.variant, o.plus_identity, r, &map);
  free(map.G), free(map.v1);
  r->components = (int)nle__csr_components(ctx, W);
  r->resolved = o;
  r->total_seconds = nle_time_seconds() - t0;
  if (s) nle_kem_result_free(&r);
  *result = r;
  return s;
}

/* ---- the fit (sec. 3) ---------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* sigma: SIGMA_OF_SPACING times the median over the centres of the
 * distance to the nearest other centre. Brand's "unit sigma" is relative
 * to his roll's unstated scale. The factor was measured (docs/kem.md):
 * on Fashion-MNIST (1,024 kernels) recall@10 of the map rises from 0.041
 * at 0.3 to 0.060 at 0.15 and 0.062 at 0.1, on a 3-D roll it is 0.33-0.34
 * from 0.15 to 0.3 and 0.29 at 0.5 (the old rule); narrow kernels keep few
 * posteriors above the truncation, so Z is sparse (the pencil's sums).
 * One kernel: the RMS distance of the data to it. */
#define SIGMA_OF_SPACING 0.15

static nle_status auto_sigma(nle_ctx *ctx, nle_kem_model *m, const nle_matf *X, double *sigma) {
  size_t K = m->kernels, D = m->D;
  if (K == 1) {
    double t = 0;
    for (size_t i = 0; i < X->rows; i++) {
      double d2 = 0;
      for (size_t j = 0; j < D; j++) d2 += ((double)X->data[i * D + j] - m->centres[j]) * ((double)X->data[i * D + j] - m->centres[j]);
      t += d2 / (double)X->rows;
    }
    *sigma = sqrt(t);
  } else {
    double *near = nle__malloc(ctx, K * sizeof(double), "the kernel width");
    if (!near) return NLE_ERR_NOMEM;
    for (size_t a = 0; a < K; a++) near[a] = INFINITY;
    for (size_t a = 0; a < K; a++) /* each pair once */
      for (size_t b = a + 1; b < K; b++) {
        double d2 = 0;
        for (size_t j = 0; j < D; j++) d2 += (m->centres[a * D + j] - m->centres[b * D + j]) * (m->centres[a * D + j] - m->centres[b * D + j]);
        near[a] = fmin(near[a], d2), near[b] = fmin(near[b], d2);
      }
    for (size_t a = 0; a < K; a++) near[a] = sqrt(near[a]);
    qsort(near, K, sizeof(double), cmp_double);
    *sigma = SIGMA_OF_SPACING * (K % 2 ? near[K / 2] : 0.5 * (near[K / 2 - 1] + near[K / 2]));
    free(near);
  }
  if (!(*sigma > 0) || !isfinite(*sigma))
    return nle__fail(ctx, NLE_ERR_VALUE, "kem: the kernel centres coincide: no automatic width (give {@sigma})");
  return NLE_OK;
}

/* K_k: the q leading principal directions of the L points nearest mu_k,
 * about mu_k (the local homogeneous coordinate is x - mu_k, eq. 14), from
 * the L x L Gram matrix (L is small, D may be 784): direction
 * u = X_l^T e / sqrt(lambda). Directions beyond the local rank stay zero
 * (their rows of Z vanish; the pencil solver then works in B's range). */
static nle_status local_pca(nle_ctx *ctx, nle_kem_model *m, const nle_matf *X, size_t L) {
  size_t K = m->kernels, D = m->D, q = m->q;
  nle_matf *C = NULL;
  nle_csr *g = NULL;
  nle_status s = nle_matf_alloc(ctx, K, D, &C);
  for (size_t e = 0; !s && e < K * D; e++) C->data[e] = (float)m->centres[e];
  if (!s) s = nle_knn_query(ctx, X, C, (int)L, &g);
  double *Xl = s ? NULL : nle__malloc(ctx, L * D * sizeof(double), "the local PCA");
  double *Gm = s ? NULL : nle__malloc(ctx, L * L * sizeof(double), "the local PCA");
  double *ev = s ? NULL : nle__malloc(ctx, L * sizeof(double), "the local PCA");
  double *E = s ? NULL : nle__malloc(ctx, L * q * sizeof(double), "the local PCA");
  if (!s && !(Xl && Gm && ev && E)) s = NLE_ERR_NOMEM;
  for (size_t k = 0; !s && k < K; k++) {
    size_t len = (size_t)(g->rowptr[k + 1] - g->rowptr[k]);
    const double *c = m->centres + k * D;
    for (size_t a = 0; a < len; a++) {
      const float *x = X->data + (size_t)g->colind[g->rowptr[k] + (int64_t)a] * D;
      for (size_t j = 0; j < D; j++) Xl[a * D + j] = (double)x[j] - c[j];
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)len, (int)len, (int)D, 1.0, Xl, (int)D, Xl, (int)D, 0.0,
                Gm, (int)len);
    size_t want = q < len ? q : len;
    s = nle__eig_dense(ctx, "kem local PCA", len, Gm, len - want, want, ev, E);
    double top = want ? ev[want - 1] : 0;
    for (size_t r = 0; !s && r < want; r++) {
      size_t col = want - 1 - r; /* descending */
      double lam = ev[col], *P = m->proj + (k * q + r) * D;
      if (!(lam > 1e-12 * top)) continue;
      for (size_t j = 0; j < D; j++) {
        double t = 0;
        for (size_t a = 0; a < len; a++) t += Xl[a * D + j] * E[a * want + col];
        P[j] = t / sqrt(lam);
      }
    }
  }
  free(Xl), free(Gm), free(ev), free(E);
  nle_csr_free(&g);
  nle_matf_free(&C);
  return s;
}

/* The kernels' centres (data points): random ones from kem's own random
 * stream (the centres kem has always drawn), the other placements by the
 * landmark selector LLL shares. */
static nle_status place_kernels(nle_ctx *ctx, const nle_matf *X, size_t K, nle_landmark_method placement,
                                int64_t *pick) {
  if (placement == NLE_LANDMARKS_RANDOM) {
    nle_rng rng;
    nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6b656d63ULL);
    nle_rng_sample(&rng, (int64_t)X->rows, (int64_t)K, pick);
    return NLE_OK;
  }
  int32_t *idx = nle__malloc(ctx, K * sizeof(int32_t), "the kernel centres");
  if (!idx) return NLE_ERR_NOMEM;
  nle_status s = nle_landmarks_select(ctx, X, K, placement, idx);
  for (size_t k = 0; !s && k < K; k++) pick[k] = idx[k];
  free(idx);
  return s;
}

static nle_status check_fit(nle_ctx *ctx, const nle_matf *X, const nle_kem_opts *o) {
  nle_status s = check_common(ctx, o);
  if (s) return s;
  size_t n = X->rows, D = X->cols;
  if (o->k < 1) return nle__fail(ctx, NLE_ERR_ARG, "kem: {@neighbors=%s} must be >= 1", nle__int_text(o->k).s);
  if (o->weights != NLE_AFF_INVERSE && o->weights != NLE_AFF_GAUSSIAN && o->weights != NLE_AFF_BINARY)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@weights} must be inverse, gaussian or binary");
  if (o->heat_t != NLE_AUTO && !(o->heat_t > 0 && isfinite(o->heat_t)))
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@heat-t=%g} must be a finite number > 0, or auto", o->heat_t);
  if (o->kernels != NLE_AUTO && o->kernels < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@kernels=%d} must be >= 1, or auto", o->kernels);
  if (o->placement < 0 || o->placement >= NLE_LANDMARKS_COUNT)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: unknown {@placement} %d", (int)o->placement);
  if (o->sigma != NLE_AUTO && !(o->sigma > 0 && isfinite(o->sigma)))
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@sigma=%g} must be a finite number > 0, or auto", o->sigma);
  if (o->local_dims != NLE_AUTO && o->local_dims < 0)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@local-dims=%d} must be >= 0, or auto", o->local_dims);
  if (o->local_points != NLE_AUTO && o->local_points < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@local-points=%d} must be >= 1, or auto", o->local_points);
  if (o->inverse_steps < 0)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@inverse-steps=%s} must be >= 0", nle__int_text(o->inverse_steps).s);
  if (!(o->inverse_width > 0 && isfinite(o->inverse_width)))
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@inverse-width=%s} must be a finite number > 0", nle__real_text(o->inverse_width).s);
  if (!(o->truncate >= 0 && o->truncate < 1e-2))
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@truncate=%s} must be in [0, 0.01) (the map's derivative leaves the cut out)",
                     nle__real_text(o->truncate).s);
  if (n < 2 || (size_t)o->k >= n)
    return nle__fail(ctx, NLE_ERR_VALUE, "kem: %zu points are too few for {@neighbors=%d} neighbours (need more than k)", n,
                     o->k);
  if (D < 1) return nle__fail(ctx, NLE_ERR_VALUE, "kem: the points have no columns");
  if (o->kernels != NLE_AUTO && (size_t)o->kernels > n)
    return nle__fail(ctx, NLE_ERR_VALUE, "kem: {@kernels=%d} for %zu points (the centres are data points)", o->kernels,
                     n);
  if (o->local_dims != NLE_AUTO && (size_t)o->local_dims > D)
    return nle__fail(ctx, NLE_ERR_ARG, "kem: {@local-dims=%d} exceeds the data's %zu dimensions", o->local_dims, D);
  for (size_t e = 0; e < n * D; e++)
    if (!isfinite(X->data[e]))
      return nle__fail(ctx, NLE_ERR_VALUE, "kem: row %zu, column %zu is not finite", e / D, e % D);
  return NLE_OK;
}

/* The default basis, chosen by measurement (docs/kem.md, bench/kem.sh):
 * 1,024 kernels at random points with the posteriors alone (q = 0). On
 * Fashion-MNIST (10,000 to train, 60,000 mapped) recall@10 of the map is
 * 0.047 with 512 kernels, 0.060 with 1,024 and 0.071 with 2,048 (LE's
 * Nystrom map 0.039), against 0.022 for the old 64 kernels with q = 10;
 * q = 2 with 1,024 kernels gives 0.042, and 0.21 on a 3-D roll against
 * 0.33 with q = 0 (a rank-deficient pencil of order 3,072). G(x) costs
 * N D K, the fit's dense pencil K^3 (bench/results/kem_sweep.txt). */
enum { DEFAULT_KERNELS = 1024 };

nle_status nle_kem_fit(nle_ctx *ctx, const nle_matf *X, const nle_kem_opts *opts, nle_kem_result **result) {
  if (!X || !result) return nle__fail(ctx, NLE_ERR_ARG, "kem: NULL argument");
  *result = NULL;
  nle_kem_opts o;
  if (opts) o = *opts;
  else nle_kem_opts_init(&o);
  nle_status s = check_fit(ctx, X, &o);
  if (s) return s;
  size_t n = X->rows, D = X->cols;
  double t_start = nle_time_seconds();
  if (o.variant == NLE_KEM_AUTO) o.variant = o.lpp ? NLE_KEM_RAW : NLE_KEM_REWEIGHTED;
  if (o.kernels == NLE_AUTO) o.kernels = n < DEFAULT_KERNELS ? (int)n : DEFAULT_KERNELS;
  if (o.local_dims == NLE_AUTO) o.local_dims = 0;
  if (o.local_points == NLE_AUTO) o.local_points = o.k > 3 * o.local_dims ? o.k : 3 * o.local_dims;
  if ((size_t)o.local_points > n) o.local_points = (int)n;
  nle_kem_result *r = nle__calloc(ctx, 1, sizeof *r, "the kem result");
  if (!r) return NLE_ERR_NOMEM;

  /* W: the kNN graph's weights, symmetrised, scaled so that the largest
   * off-diagonal entry is 1 (sec. 3: scale invariance, df <= 1) */
  nle_csr *W = NULL;
  double t0 = nle_time_seconds();
  nle_graph_opts go;
  nle_graph_opts_init(&go);
  go.k = o.k;
  go.pca_dims = 0; /* the map G(x) is fitted to the data's own neighbours */
  go.weights = o.weights, go.symmetrize = o.symmetrize;
  go.sigma = o.heat_t == NLE_AUTO ? NLE_AUTO : sqrt(o.heat_t / 2.0); /* exp(-d^2 / t) = exp(-d^2 / 2 s^2) */
  nle_graph_result *graph = NULL;
  s = nle_graph_build(ctx, X, &go, &graph);
  if (!s && o.weights == NLE_AFF_GAUSSIAN) o.heat_t = 2.0 * graph->resolved.sigma * graph->resolved.sigma;
  if (!s) W = graph->W, graph->W = NULL;
  nle_graph_result_free(&graph);
  if (s && nle_ctx_last_status(ctx) == s && !strncmp(nle_ctx_error(ctx), "spectral graph: ", 16)) {
    char msg[NLE__ERROR_LEN];
    snprintf(msg, sizeof msg, "kem: %s", nle_ctx_error(ctx) + 16);
    nle__fail(ctx, s, "%s", msg);
  }
  double wmax = 0;
  for (int64_t q = 0; !s && q < W->nnz; q++) wmax = fmax(wmax, nle_csr_value(W, q));
  if (!s && !(wmax > 0)) s = nle__fail(ctx, NLE_ERR_VALUE, "kem: the graph has no positive weight");
  for (int64_t q = 0; !s && q < W->nnz; q++) ((double *)W->val)[q] /= wmax;
  r->knn_seconds = nle_time_seconds() - t0;

  /* the basis: K kernels at random data points, or Z = X (LPP) */
  t0 = nle_time_seconds();
  nle_kem_model *m = NULL;
  if (!s) s = nle__kem_model_new(ctx, o.variant, o.lpp, D, (size_t)o.dim, (size_t)o.kernels, (size_t)o.local_dims, &m);
  int64_t *pick = s ? NULL : nle__malloc(ctx, (size_t)o.kernels * sizeof(int64_t), "the kernel centres");
  if (!s && !pick) s = NLE_ERR_NOMEM;
  if (!s) {
    m->truncate = o.truncate, m->inverse_steps = o.inverse_steps, m->inverse_width = o.inverse_width;
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < D; j++) m->mean[j] += (double)X->data[i * D + j] / (double)n;
    if (!o.lpp) {
      s = place_kernels(ctx, X, (size_t)o.kernels, o.placement, pick);
      for (int k = 0; !s && k < o.kernels; k++)
        for (size_t j = 0; j < D; j++) m->centres[(size_t)k * D + j] = (double)X->data[(size_t)pick[k] * D + j];
      if (!s && o.sigma == NLE_AUTO) s = auto_sigma(ctx, m, X, &o.sigma);
      m->sigma = o.sigma;
      if (!s && m->proj) s = local_pca(ctx, m, X, (size_t)o.local_points);
    } else {
      m->sigma = 1.0;
    }
  }
  free(pick);
  nle_matd *Zt = NULL;
  if (!s) s = nle_matd_alloc(ctx, n, m->m, &Zt);
  if (!s) s = nle__kem_basis(ctx, m, X, Zt->data);
  r->basis_seconds = nle_time_seconds() - t0;

  /* the pencil and the variant (sec. 2) */
  embed_map map = {0};
  t0 = nle_time_seconds();
  if (!s) s = transformational(ctx, W, Zt->data, n, m->m, o.dim, o.variant, o.plus_identity, r, &map);
  r->pencil_seconds = nle_time_seconds() - t0 - r->eigen_seconds;
  if (!s) {
    memcpy(m->G, map.G, (size_t)o.dim * (m->m + (o.variant == NLE_KEM_AFFINE)) * sizeof(double));
    if (m->v1) memcpy(m->v1, map.v1, m->m * sizeof(double));
    r->components = (int)nle__csr_components(ctx, W);
    if (r->components > 1)
      nle__warn(ctx, NLE_WARN_GENERAL, "kem: the graph has %d connected components: the embedding of each is "
                "arbitrary relative to the others (a larger {@neighbors} joins them)", r->components);
  }
  free(map.G), free(map.v1);
  t0 = nle_time_seconds();
  if (!s && o.keep_model) s = nle__kem_build_inverse(ctx, m);
  r->inverse_seconds = nle_time_seconds() - t0;
  if (!s && o.keep_model) r->model = m, m = NULL;
  nle_kem_model_free(&m);
  nle_matd_free(&Zt);
  r->W = W;
  r->resolved = o;
  r->n = n;
  r->total_seconds = nle_time_seconds() - t_start;
  if (s) nle_kem_result_free(&r);
  *result = r;
  return s;
}
