/* lda.c — LDA and kernel LDA in the dissertation's form (sec. 4.6.3,
 * eqs. 4.14-4.17; SPEC G06-7): the directions of S_b v = lambda_w S_w v,
 * equivalently S_b v = lambda T v with T = S_b + S_w the total scatter
 * (lambda = lambda_w / (1 + lambda_w)). At most C - 1 directions are useful
 * (S_b has rank C - 1). Labels are any integers: the classes are the
 * distinct values (nle_labels_encode).
 *
 * The default solver is scikit-learn's "svd" solver, in the range of the
 * data, so constant or collinear features (any image set with a blank
 * pixel) need nothing: the within-class deviations are scaled by their
 * per-feature standard deviations, their scatter's eigenvectors with
 * singular values above tol whiten S_w in its range (the null space
 * dropped), and the class means, whitened and weighted by sqrt(N_k / (C -
 * 1)), are rotated by their SVD; their squared singular values give the
 * explained variance ratios. Scikit-learn does this by an SVD of the N x D
 * deviations; the D x D scatter gives the same right singular vectors and
 * singular values with O(D^2) memory whatever N. With a ridge the older
 * path runs: T + ridge I by Cholesky (a singular T without one is an
 * error naming its rank).
 *
 * Kernel LDA (Baudat and Anouar 2000) is eq. 4.16 with the centred kernel
 * for Ybar^T Ybar: H p = lambda (K^2 + ridge I) p, H = K Q K of rank C - 1,
 * solved through the C x C matrix M^T (K^2 + ridge I)^-1 M, M's columns
 * sqrt(N_k) times the class means of K's columns.
 *
 * Both keep a classifier, scikit-learn's rule: in every discriminant
 * direction (whitened so that the within-class covariance is I) the score
 * of class k is -|z - c_k|^2 / 2 + log(N_k / N), z the point, c_k the
 * class mean; linear in phi(y) (the centred point or kernel row), so it is
 * stored as coef[k] . phi + intercept[k]. */
#include "mds_internal.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SCATTER_BLOCK = 512 };

/* scikit-learn's LinearDiscriminantAnalysis(tol=1e-4) */
#define LDA_TOL 1e-4

void nle_lda_opts_init(nle_lda_opts *o) {
  memset(o, 0, sizeof *o);
  o->dim = NLE_AUTO;
  o->ridge = NLE_AUTO;
  o->tol = LDA_TOL;
  nle_pdkernel_init(&o->kernel);
}

void nle_lda_result_free(nle_lda_result **r) {
  if (!r || !*r) return;
  nle_matd_free(&(*r)->X);
  free((*r)->eigenvalues);
  free((*r)->explained_variance_ratio);
  nle_projection_model_free(&(*r)->model);
  free(*r);
  *r = NULL;
}

/* The classes of the labels (nle_labels_encode): codes[n], counts[C], the
 * label values[C]; at least two classes. */
typedef struct {
  int32_t *codes, *values;
  size_t *counts;
  int C;
} classes;

static void classes_free(classes *k) {
  free(k->codes), free(k->values), free(k->counts);
  memset(k, 0, sizeof *k);
}

static nle_status classes_of(nle_ctx *ctx, const char *what, const int32_t *labels, size_t n, classes *k) {
  memset(k, 0, sizeof *k);
  int32_t C = 0;
  k->codes = nle__malloc(ctx, (n ? n : 1) * sizeof(int32_t), "the class codes");
  nle_status s = k->codes ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle_labels_encode(ctx, "labels", labels, n, k->codes, &C, &k->values);
  const char *method = !strcmp(what, "klda") ? "kernel LDA" : "LDA";
  if (!s && C < 2)
    s = n ? nle__fail(ctx, NLE_ERR_VALUE, "labels: one class only (every label is %d): %s needs at least 2", labels[0],
                      method)
          : nle__fail(ctx, NLE_ERR_VALUE, "labels: no points: %s needs at least 2 classes", method);
  if (!s && !(k->counts = nle__calloc(ctx, (size_t)C, sizeof(size_t), "the class counts"))) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < n; i++) k->counts[k->codes[i]]++;
  if (s) classes_free(k);
  else k->C = C;
  return s;
}

/* A scatter by blocks of SYRK: sum_i (y_i - centre(i)) (y_i - centre(i))^T,
 * centre(i) the mean (centres NULL) or its class's. */
typedef struct {
  const nle_matf *Y;
  const int32_t *labels;
  const double *mean, *centres;
  size_t splits;
  double *parts;
} scatter_job;

static int scatter_split(void *job, size_t b, void *scratch) {
  scatter_job *j = job;
  size_t n = j->Y->rows, D = j->Y->cols, r0 = n * b / j->splits, r1 = n * (b + 1) / j->splits;
  double *S = j->parts + b * D * D, *block = scratch;
  memset(S, 0, D * D * sizeof(double));
  for (size_t r = r0; r < r1; r += SCATTER_BLOCK) {
    size_t rows = r1 - r < SCATTER_BLOCK ? r1 - r : SCATTER_BLOCK;
    for (size_t i = 0; i < rows; i++) {
      const double *c = j->centres ? j->centres + (size_t)j->labels[r + i] * D : j->mean;
      for (size_t t = 0; t < D; t++) block[i * D + t] = (double)j->Y->data[(r + i) * D + t] - c[t];
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)D, (int)rows, 1.0, block, (int)D, 1.0, S, (int)D);
  }
  return 0;
}

static nle_status scatter(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const double *mean,
                          const double *centres, double *S) {
  size_t D = Y->cols, splits = 8;
  double *parts = nle__malloc(ctx, splits * D * D * sizeof(double), "the scatter");
  if (!parts) return NLE_ERR_NOMEM;
  scatter_job job = {Y, labels, mean, centres, splits, parts};
  nle_status s = nle__for_blocks(ctx, "scatter", splits, nle__threads_for(ctx, (double)Y->rows * D * D),
                                 SCATTER_BLOCK * D * sizeof(double), scatter_split, &job);
  if (!s) { /* the splits in order, then the lower triangle */
    memcpy(S, parts, D * D * sizeof(double));
    for (size_t b = 1; b < splits; b++)
      for (size_t e = 0; e < D * D; e++) S[e] += parts[b * D * D + e];
    for (size_t a = 0; a < D; a++)
      for (size_t c = 0; c < a; c++) S[a * D + c] = S[c * D + a];
  }
  free(parts);
  return s;
}

/* The mean and the class means (C x D). */
static nle_status means(nle_ctx *ctx, const nle_matf *Y, const classes *k, double **mean, double **centres) {
  size_t n = Y->rows, D = Y->cols;
  *mean = nle__calloc(ctx, D, sizeof(double), "the mean");
  *centres = nle__calloc(ctx, (size_t)k->C * D, sizeof(double), "the class means");
  if (!*mean || !*centres) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < D; t++) {
      (*mean)[t] += Y->data[i * D + t];
      (*centres)[(size_t)k->codes[i] * D + t] += Y->data[i * D + t];
    }
  for (size_t t = 0; t < D; t++) (*mean)[t] /= (double)n;
  for (int c = 0; c < k->C; c++)
    for (size_t t = 0; t < D; t++) (*centres)[(size_t)c * D + t] /= (double)k->counts[c];
  return NLE_OK;
}

/* Mc (D x C), column k sqrt(N_k) (mu_k - mu): S_b = sum_k N_k (mu_k -
 * mu)(mu_k - mu)^T = Mc Mc^T (eq. 4.14), of rank <= C - 1. */
static void class_offsets(const double *mean, const double *centres, const size_t *counts, int C, size_t D,
                          double *Mc) {
  for (size_t a = 0; a < D; a++)
    for (int c = 0; c < C; c++)
      Mc[a * (size_t)C + (size_t)c] = sqrt((double)counts[c]) * (centres[(size_t)c * D + a] - mean[a]);
}

nle_status nle_scatter(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, double *Sb, double *Sw, double *St) {
  if (!Y || !labels) return nle__fail(ctx, NLE_ERR_ARG, "nle_scatter: NULL argument");
  classes k;
  double *mean = NULL, *centres = NULL, *Mc = NULL;
  size_t D = Y->cols;
  nle_status s = classes_of(ctx, "scatter", labels, Y->rows, &k);
  if (!s) s = means(ctx, Y, &k, &mean, &centres);
  if (!s && Sb && !(Mc = nle__malloc(ctx, D * (size_t)k.C * sizeof(double), "the class means"))) s = NLE_ERR_NOMEM;
  if (!s && Sb) {
    class_offsets(mean, centres, k.counts, k.C, D, Mc);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)D, (int)D, k.C, 1.0, Mc, k.C, Mc, k.C, 0.0, Sb, (int)D);
  }
  if (!s && Sw) s = scatter(ctx, Y, k.codes, mean, centres, Sw);
  if (!s && St) s = scatter(ctx, Y, k.codes, mean, NULL, St);
  classes_free(&k);
  free(mean), free(centres), free(Mc);
  return s;
}

/* The points, the classes, the options' ranges; dim resolved (NLE_AUTO:
 * every useful direction, C - 1, and at most D for LDA, as scikit-learn's
 * n_components=None). */
static nle_status check_common(nle_ctx *ctx, const char *what, const nle_matf *Y, const int32_t *labels,
                               nle_lda_opts *o, classes *k) {
  memset(k, 0, sizeof *k);
  if (!Y || !labels) return nle__fail(ctx, NLE_ERR_ARG, "%s: NULL points or labels", what);
  nle_status s = nle__check_finite_rows(ctx, "points", Y);
  if (!s) s = classes_of(ctx, what, labels, Y->rows, k);
  if (s) return s;
  size_t cap = (size_t)k->C - 1, D = Y->cols;
  bool linear = !strcmp(what, "lda");
  if (linear && D < cap) cap = D;
  if (o->dim == NLE_AUTO) o->dim = (int)cap;
  if (o->dim < 1 || (size_t)o->dim > cap)
    return (size_t)o->dim > (size_t)k->C - 1 || o->dim < 1
               ? nle__fail(ctx, NLE_ERR_ARG, "%s: {@dim=%d} from %d classes: at most C - 1 = %d directions are useful",
                           what, o->dim, k->C, k->C - 1)
               : nle__fail(ctx, NLE_ERR_ARG, "%s: {@dim=%d} of %zu-dimensional points: at most min(C - 1, D) = %zu",
                           what, o->dim, D, cap);
  if (o->ridge != NLE_AUTO && (!(o->ridge >= 0) || !isfinite(o->ridge)))
    return nle__fail(ctx, NLE_ERR_ARG, "%s: {@ridge=%g} is not a finite number >= 0", what, o->ridge);
  if (!(o->tol >= 0) || !isfinite(o->tol))
    return nle__fail(ctx, NLE_ERR_ARG, "%s: {@tol=%g} is not a finite number >= 0", what, o->tol);
  if (Y->rows <= (size_t)k->C)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s: %zu points in %d classes: the within-class scatter needs more points "
                     "than classes", what, Y->rows, k->C);
  return NLE_OK;
}

/* Each axis of X (and its row of the map A, dim x cols) scaled so that
 * the within-class covariance S_w / (N - C) of X is I. */
static nle_status within_whiten(nle_ctx *ctx, const classes *k, nle_matd *X, double *A, size_t cols) {
  size_t n = X->rows, dim = X->cols, C = (size_t)k->C;
  double *cm = nle__malloc(ctx, C * sizeof(double), "the class means");
  if (!cm) return NLE_ERR_NOMEM;
  for (size_t t = 0; t < dim; t++) {
    double sw = 0, *x = X->data;
    memset(cm, 0, C * sizeof(double));
    for (size_t i = 0; i < n; i++) cm[k->codes[i]] += x[i * dim + t] / (double)k->counts[k->codes[i]];
    for (size_t i = 0; i < n; i++) sw += (x[i * dim + t] - cm[k->codes[i]]) * (x[i * dim + t] - cm[k->codes[i]]);
    double scale = sw > 0 && n > C ? sqrt((double)(n - C) / sw) : 1.0;
    for (size_t i = 0; i < n; i++) x[i * dim + t] *= scale;
    for (size_t c = 0; c < cols; c++) A[t * cols + c] *= scale;
  }
  free(cm);
  return NLE_OK;
}

/* The discriminant directions of H p = lambda T p for H = M M^T of rank
 * <= C (M: m x C) and T (m x m, positive definite, overwritten by its
 * Cholesky factor): T Z = M by Cholesky, the C x C problem M^T Z a =
 * lambda a, p = Z a / sqrt(lambda) (T-orthonormal). O(m^3 / 3 + m^2 C)
 * instead of a generalised m x m eigenproblem. Up to `want` directions,
 * those whose lambda is above 1e-12 of the largest: their count in *got,
 * their lambda_w = lambda / (1 - lambda) in vals[*got] descending, P the
 * directions as the rows of a *got x m matrix. */
static nle_status reduced_discriminants(nle_ctx *ctx, const char *what, size_t m, double *T, const double *M,
                                        size_t C, size_t want, double *vals, double *P, size_t *got) {
  *got = 0;
  double *Z = nle__malloc(ctx, m * C * sizeof(double), what), *G = nle__malloc(ctx, C * C * sizeof(double), what),
         *gv = nle__malloc(ctx, C * sizeof(double), what), *ga = nle__malloc(ctx, C * want * sizeof(double), what);
  nle_status s = Z && G && gv && ga ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    memcpy(Z, M, m * C * sizeof(double));
    lapack_int info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', (lapack_int)m, (lapack_int)C, T, (lapack_int)m, Z,
                                    (lapack_int)C);
    if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the total scatter is not positive definite (LAPACK %d)", what,
                            (int)info);
  }
  if (!s) {
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)C, (int)C, (int)m, 1.0, M, (int)C, Z, (int)C, 0.0, G,
                (int)C);
    for (size_t a = 0; a < C; a++)
      for (size_t b = 0; b < a; b++) G[a * C + b] = G[b * C + a] = 0.5 * (G[a * C + b] + G[b * C + a]);
    s = nle__eig_dense(ctx, what, C, G, C - want, want, gv, ga);
  }
  size_t q = 0;
  while (!s && q < want && gv[want - 1 - q] > 1e-12 * fmax(gv[want - 1], 0)) q++;
  for (size_t t = 0; !s && t < q; t++) {
    vals[t] = gv[want - 1 - t];
    for (size_t i = 0; i < m; i++) {
      double v = 0;
      for (size_t c = 0; c < C; c++) v += Z[i * C + c] * ga[c * want + (want - 1 - t)];
      P[t * m + i] = v / sqrt(vals[t]);
    }
  }
  /* as lambda_w = lambda / (1 - lambda), S_w's form (lambda < 1 with a ridge) */
  for (size_t t = 0; !s && t < q; t++) vals[t] = vals[t] / fmax(1 - vals[t], 1e-300);
  *got = q;
  free(Z), free(G), free(gv), free(ga);
  return s;
}

/* The within-class whitening of scikit-learn's svd solver: the deviations
 * y_i - mu_k scaled per feature by s_a = sqrt(S_w,aa / N) (a constant
 * feature left as it is) and by 1 / sqrt(N - C), Xs; its right singular
 * vectors v_t with singular values sigma_t > tol (r of them) make the
 * whitening S1 (D x r, column t = Dinv v_t / sigma_t, descending). Narrow
 * data (D <= N): S1 itself, from Xs^T Xs = Dinv S_w Dinv / (N - C), D x D
 * by blocked SYRK whatever N. Wide data: the N x N Gram Xs Xs^T's
 * eigenvectors u_t, v_t = Xs^T u_t / sigma_t, S1 kept as Dinv Xs^T W with
 * W = U_r Sigma_r^-2 (N x r), never formed: 20,000 genes of 2,000 cells
 * cost N^2 D, not D^3 nor D N r. */
typedef struct {
  size_t r, n, D;
  double *S1;     /* narrow: D x r */
  double *Xs, *W; /* wide: N x D and N x r */
  double *sd;     /* D */
} whitening;

static void whitening_free(whitening *h) {
  free(h->S1), free(h->Xs), free(h->W), free(h->sd);
  memset(h, 0, sizeof *h);
}

static nle_status within_whitening(nle_ctx *ctx, const nle_matf *Y, const classes *k, const double *mean,
                                   const double *centres, double tol, whitening *h) {
  size_t n = Y->rows, D = Y->cols, C = (size_t)k->C;
  bool wide = D > n;
  size_t m = wide ? n : D; /* the side of the eigenproblem */
  memset(h, 0, sizeof *h);
  h->n = n, h->D = D;
  double *G = nle__malloc(ctx, m * m * sizeof(double), "the within-class scatter"),
         *V = nle__malloc(ctx, m * m * sizeof(double), "its eigenvectors"),
         *w = nle__malloc(ctx, m * sizeof(double), "its eigenvalues");
  h->sd = nle__calloc(ctx, D, sizeof(double), "the features' deviations");
  if (wide) h->Xs = nle__malloc(ctx, n * D * sizeof(double), "the within-class deviations");
  nle_status s = G && V && w && h->sd && (!wide || h->Xs) ? NLE_OK : NLE_ERR_NOMEM;
  double *sd = h->sd, *Xs = h->Xs;
  if (!s && !wide) {
    s = scatter(ctx, Y, k->codes, mean, centres, G);
    for (size_t a = 0; !s && a < D; a++) sd[a] = G[a * D + a];
  } else if (!s) {
    for (size_t i = 0; i < n; i++)
      for (size_t a = 0; a < D; a++) {
        double v = (double)Y->data[i * D + a] - centres[(size_t)k->codes[i] * D + a];
        Xs[i * D + a] = v, sd[a] += v * v;
      }
  }
  if (!s) {
    for (size_t a = 0; a < D; a++) sd[a] = sd[a] > 0 ? sqrt(sd[a] / (double)n) : 1.0;
    if (!wide) {
      for (size_t a = 0; a < D; a++)
        for (size_t b = 0; b < D; b++) G[a * D + b] /= sd[a] * sd[b] * (double)(n - C);
    } else {
      double f = 1 / sqrt((double)(n - C));
      for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < D; a++) Xs[i * D + a] *= f / sd[a];
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)n, (int)D, 1.0, Xs, (int)D, 0.0, G, (int)n);
    }
    s = nle__eig_dense(ctx, "lda", m, G, 0, m, w, V);
  }
  size_t r = 0;
  while (!s && r < m && sqrt(fmax(w[m - 1 - r], 0)) > tol) r++;
  if (!s && !r)
    s = nle__fail(ctx, NLE_ERR_VALUE, "lda: every class is a single repeated point: the within-class scatter is 0");
  if (!s && !(wide ? (h->W = nle__malloc(ctx, n * r * sizeof(double), "the within-class whitening"))
                   : (h->S1 = nle__malloc(ctx, D * r * sizeof(double), "the within-class whitening"))))
    s = NLE_ERR_NOMEM;
  for (size_t t = 0; !s && t < r; t++) {
    double sigma2 = w[m - 1 - t], sigma = sqrt(sigma2);
    if (wide)
      for (size_t i = 0; i < n; i++) h->W[i * r + t] = V[i * n + (n - 1 - t)] / sigma2;
    else
      for (size_t a = 0; a < D; a++) h->S1[a * r + t] = V[a * D + (D - 1 - t)] / sd[a] / sigma;
  }
  if (!s) h->r = r;
  free(G), free(V), free(w);
  if (s) whitening_free(h);
  return s;
}

/* out (rows x r) = M S1 for M (rows x D); wide: ((M Dinv) Xs^T) W. */
static nle_status whitening_apply(nle_ctx *ctx, const whitening *h, const double *M, size_t rows, double *out) {
  size_t D = h->D, n = h->n, r = h->r;
  if (h->S1) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)r, (int)D, 1.0, M, (int)D, h->S1, (int)r,
                0.0, out, (int)r);
    return NLE_OK;
  }
  double *Ms = nle__malloc(ctx, rows * D * sizeof(double), "the whitening"),
         *Q = nle__malloc(ctx, rows * n * sizeof(double), "the whitening");
  nle_status s = Ms && Q ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    for (size_t i = 0; i < rows; i++)
      for (size_t a = 0; a < D; a++) Ms[i * D + a] = M[i * D + a] / h->sd[a];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)n, (int)D, 1.0, Ms, (int)D, h->Xs, (int)D,
                0.0, Q, (int)n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)r, (int)n, 1.0, Q, (int)n, h->W, (int)r,
                0.0, out, (int)r);
  }
  free(Ms), free(Q);
  return s;
}

/* A (q x D) = (S1 Vt^T)^T for Vt's first q rows (q x r); wide: ((Vt W^T)
 * Xs) Dinv. */
static nle_status whitening_directions(nle_ctx *ctx, const whitening *h, const double *Vt, size_t q, double *A) {
  size_t D = h->D, n = h->n, r = h->r;
  if (h->S1) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)q, (int)D, (int)r, 1.0, Vt, (int)r, h->S1, (int)r, 0.0,
                A, (int)D);
    return NLE_OK;
  }
  double *R = nle__malloc(ctx, q * n * sizeof(double), "the directions");
  if (!R) return NLE_ERR_NOMEM;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)q, (int)n, (int)r, 1.0, Vt, (int)r, h->W, (int)r, 0.0, R,
              (int)n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)q, (int)D, (int)n, 1.0, R, (int)n, h->Xs, (int)D, 0.0, A,
              (int)D);
  for (size_t t = 0; t < q; t++)
    for (size_t a = 0; a < D; a++) A[t * D + a] /= h->sd[a];
  free(R);
  return NLE_OK;
}

/* scikit-learn's svd solver: into the model's A (q x D) the q
 * discriminant directions, whitened (S_w / (N - C) is I on them), and
 * their lambda_w into vals (and the sum of all of them, those past tol
 * too, into *total); the within-class rank in *rank. */
static nle_status svd_discriminants(nle_ctx *ctx, const nle_matf *Y, const classes *k, const double *mean,
                                    const double *centres, double tol, double *A, double *vals, double *total,
                                    size_t *q, int *rank) {
  size_t n = Y->rows, D = Y->cols, C = (size_t)k->C;
  *q = 0;
  whitening h;
  double *Mc = NULL, *B = NULL, *S2 = NULL, *Vt = NULL;
  nle_status s = within_whitening(ctx, Y, k, mean, centres, tol, &h);
  size_t r = h.r, m = C < r ? C : r;
  *rank = (int)r;
  if (!s) {
    Mc = nle__malloc(ctx, C * D * sizeof(double), "the class means");
    B = nle__malloc(ctx, C * r * sizeof(double), "the whitened class means");
    S2 = nle__malloc(ctx, m * sizeof(double), "their singular values");
    Vt = nle__malloc(ctx, m * r * sizeof(double), "their directions");
    if (!Mc || !B || !S2 || !Vt) s = NLE_ERR_NOMEM;
  }
  if (!s) { /* B (C x r): row k = sqrt(N_k / (C - 1)) (mu_k - mu) S1 */
    for (size_t c = 0; c < C; c++) {
      double f = sqrt((double)k->counts[c] / (double)(C - 1));
      for (size_t a = 0; a < D; a++) Mc[c * D + a] = f * (centres[c * D + a] - mean[a]);
    }
    s = whitening_apply(ctx, &h, Mc, C, B);
  }
  if (!s) {
    double *superb = nle__malloc(ctx, m * sizeof(double), "the SVD's work space"), u = 0;
    lapack_int info = superb ? LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'S', (lapack_int)C, (lapack_int)r, B,
                                              (lapack_int)r, S2, &u, 1, Vt, (lapack_int)r, superb)
                             : 0;
    if (!superb) s = NLE_ERR_NOMEM;
    else if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "lda: LAPACK dgesvd failed (%d)", (int)info);
    free(superb);
  }
  size_t got = 0, most = C - 1 < D ? C - 1 : D; /* S_b has rank C - 1: the C-th is rounding */
  while (!s && got < m && got < most && S2[got] > tol * S2[0]) got++;
  *total = 0; /* the ratios' denominator: every singular value, as scikit-learn's */
  for (size_t t = 0; !s && t < m; t++) *total += S2[t] * S2[t] * (double)(C - 1) / (double)(n - C);
  if (!s && !got) s = nle__fail(ctx, NLE_ERR_VALUE, "lda: the class means coincide: no discriminant direction");
  /* direction t = S1 v2_t; lambda_w = sigma2^2 (C - 1) / (N - C) */
  if (!s) s = whitening_directions(ctx, &h, Vt, got, A);
  for (size_t t = 0; !s && t < got; t++) vals[t] = S2[t] * S2[t] * (double)(C - 1) / (double)(n - C);
  if (!s) *q = got;
  whitening_free(&h);
  free(Mc), free(B), free(S2), free(Vt);
  return s;
}

/* From the q directions in the model's A (q x cols) and the points'
 * coordinates X (n x q) on them, both whitened, and their lambda_w in
 * vals (total: their sum's denominator, 0 for the sum of vals): the signs fixed (nle__fix_signs_map), the classifier on all q,
 * then the first dim kept as the output and the map; the eigenvalues
 * lambda = lambda_w / (1 + lambda_w) and the explained variance ratios
 * lambda_w / sum lambda_w (scikit-learn's explained_variance_ratio_). */
static nle_status classify_and_keep(nle_ctx *ctx, const classes *k, nle_lda_result *r, size_t q, size_t dim,
                                    const double *vals, double total) {
  nle_projection_model *p = r->model;
  size_t n = r->X->rows, C = (size_t)k->C, cols = p->map == NLE_MAP_LINEAR ? p->D : p->m;
  nle__fix_signs_map(r->X, p->A, cols);
  double *cm = nle__calloc(ctx, C * q, sizeof(double), "the class means");
  p->coef = nle__calloc(ctx, C * cols, sizeof(double), "the classifier");
  p->intercept = nle__malloc(ctx, C * sizeof(double), "the classifier");
  p->class_labels = nle__malloc(ctx, C * sizeof(int32_t), "the classes");
  r->eigenvalues = nle__malloc(ctx, dim * sizeof(double), "eigenvalues");
  r->explained_variance_ratio = nle__malloc(ctx, dim * sizeof(double), "explained variance ratios");
  nle_matd *X = NULL;
  nle_status s = cm && p->coef && p->intercept && p->class_labels && r->eigenvalues && r->explained_variance_ratio
                     ? nle_matd_alloc(ctx, n, dim, &X)
                     : NLE_ERR_NOMEM;
  if (s) {
    free(cm);
    return s;
  }
  p->classes = C;
  memcpy(p->class_labels, k->values, C * sizeof(int32_t));
  /* c_k = the class means of X; score_k = z . c_k - |c_k|^2 / 2 + log
   * prior_k, z = A phi: coef_k = A^T c_k */
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < q; t++) cm[(size_t)k->codes[i] * q + t] += r->X->data[i * q + t];
  for (size_t c = 0; c < C; c++) {
    double sq = 0;
    for (size_t t = 0; t < q; t++) cm[c * q + t] /= (double)k->counts[c], sq += cm[c * q + t] * cm[c * q + t];
    p->intercept[c] = -0.5 * sq + log((double)k->counts[c] / (double)n);
    for (size_t t = 0; t < q; t++)
      for (size_t a = 0; a < cols; a++) p->coef[c * cols + a] += cm[c * q + t] * p->A[t * cols + a];
  }
  free(cm);
  if (!(total > 0))
    for (size_t t = 0; t < q; t++) total += vals[t];
  for (size_t t = 0; t < dim; t++) {
    r->eigenvalues[t] = vals[t] / (1 + vals[t]);
    r->explained_variance_ratio[t] = vals[t] / total;
  }
  for (size_t i = 0; i < n; i++) memcpy(X->data + i * dim, r->X->data + i * q, dim * sizeof(double));
  nle_matd_free(&r->X);
  r->X = X;
  p->dim = dim; /* A's first dim rows */
  r->n_eigenvalues = (int)dim;
  return NLE_OK;
}

/* Fewer useful directions than asked for (the class means span fewer):
 * scikit-learn gives them, so do we, with a word. */
static size_t fewer(nle_ctx *ctx, const char *what, size_t dim, size_t q, bool asked) {
  if (q >= dim) return dim;
  if (asked)
    nle__warn(ctx, NLE_WARN_GENERAL, "%s: %zu discriminant directions of the %zu asked for ({@dim}): the class means "
              "span no more", what, q, dim);
  return q;
}

nle_status nle_lda(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const nle_lda_opts *opts,
                   nle_lda_result **result) {
  if (!result) return nle__fail(ctx, NLE_ERR_ARG, "nle_lda: NULL result");
  *result = NULL;
  nle_lda_opts o;
  if (opts) o = *opts;
  else nle_lda_opts_init(&o);
  bool asked = o.dim != NLE_AUTO;
  classes k;
  nle_status s = check_common(ctx, "lda", Y, labels, &o, &k);
  size_t n = Y ? Y->rows : 0, D = Y ? Y->cols : 0, dim = (size_t)o.dim, C = (size_t)k.C;
  size_t want = C - 1 < D ? C - 1 : D, q = 0;
  double t0 = nle_time_seconds();
  double *mean = NULL, *centres = NULL, *Mc = NULL, *T = NULL, *E = NULL, *vals = NULL, total = 0;
  lapack_int *piv = NULL;
  nle_lda_result *r = s ? NULL : nle__calloc(ctx, 1, sizeof *r, "the LDA result");
  if (!s && !r) s = NLE_ERR_NOMEM;
  /* the svd solver: D x D matrices, or for wide data the N x D deviations
   * and N x N matrices; the ridge's: three D x D */
  bool wide = o.ridge == NLE_AUTO && D > n;
  if (!s)
    s = wide ? nle__check_memory(ctx, (2.0 * (double)n * D + 3.0 * (double)n * n) * sizeof(double),
                                 "LDA's N x D deviations and N x N Gram matrix")
             : nle__check_memory(ctx, 4.0 * (double)D * D * sizeof(double), "LDA's D x D scatters");
  if (!s) s = means(ctx, Y, &k, &mean, &centres);
  if (!s) s = nle__projection_new(ctx, "lda", NLE_MAP_LINEAR, 0, D, want, NULL, &r->model);
  if (!s && !(vals = nle__malloc(ctx, want * sizeof(double), "eigenvalues"))) s = NLE_ERR_NOMEM;
  if (!s && o.ridge == NLE_AUTO) {
    s = svd_discriminants(ctx, Y, &k, mean, centres, o.tol, r->model->A, vals, &total, &q, &r->rank);
  } else if (!s) {
    Mc = nle__malloc(ctx, D * C * sizeof(double), "the class means");
    T = nle__malloc(ctx, D * D * sizeof(double), "T");
    E = nle__malloc(ctx, D * D * sizeof(double), "T's factor");
    piv = nle__malloc(ctx, D * sizeof(lapack_int), "T's pivots");
    if (!Mc || !T || !E || !piv) s = NLE_ERR_NOMEM;
    if (!s) {
      class_offsets(mean, centres, k.counts, k.C, D, Mc);
      s = scatter(ctx, Y, k.codes, mean, NULL, T);
    }
    if (!s) { /* T's rank: pivoted Cholesky, pivots above 1e-10 of the largest diagonal */
      double big = 0;
      for (size_t a = 0; a < D; a++) big = fmax(big, T[a * D + a]);
      memcpy(E, T, D * D * sizeof(double));
      lapack_int rank = 0;
      lapack_int info = LAPACKE_dpstrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)D, E, (lapack_int)D, piv, &rank, 1e-10 * big);
      if (info < 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "lda: LAPACK dpstrf failed (%d)", (int)info);
      r->rank = (int)rank;
      if (!s && (size_t)rank < D && o.ridge == 0)
        s = nle__fail(ctx, NLE_ERR_VALUE, "lda: the total scatter T has rank %d < D = %zu (constant or collinear "
                      "features): give {@ridge} > 0, or leave {@ridge} out for the default solver, which works in "
                      "the range of the data", (int)rank, D);
    }
    for (size_t t = 0; !s && t < D; t++) T[t * D + t] += o.ridge;
    if (!s) s = reduced_discriminants(ctx, "lda", D, T, Mc, C, want, vals, r->model->A, &q);
    if (!s && !q) s = nle__fail(ctx, NLE_ERR_VALUE, "lda: the class means coincide: no discriminant direction");
  }
  if (!s) {
    r->model->dim = q;
    memcpy(r->model->mean, mean, D * sizeof(double));
    s = nle_projection_transform(ctx, r->model, Y, &r->X);
  }
  if (!s && o.ridge != NLE_AUTO) s = within_whiten(ctx, &k, r->X, r->model->A, D);
  if (!s) s = classify_and_keep(ctx, &k, r, q, fewer(ctx, "lda", dim, q, asked), vals, total);
  if (!s) {
    o.dim = (int)r->X->cols;
    r->classes = k.C;
    r->n = n;
    r->resolved = o;
    if (!o.keep_model) nle_projection_model_free(&r->model);
    r->seconds = nle_time_seconds() - t0;
  }
  classes_free(&k);
  free(mean), free(centres), free(Mc), free(T), free(E), free(piv), free(vals);
  if (s) {
    nle_lda_result_free(&r);
    return s;
  }
  *result = r;
  return NLE_OK;
}

nle_status nle_klda(nle_ctx *ctx, const nle_matf *Y, const int32_t *labels, const nle_lda_opts *opts,
                    nle_lda_result **result) {
  if (!result) return nle__fail(ctx, NLE_ERR_ARG, "nle_klda: NULL result");
  *result = NULL;
  nle_lda_opts o;
  if (opts) o = *opts;
  else nle_lda_opts_init(&o);
  bool asked = o.dim != NLE_AUTO;
  classes k;
  nle_status s = check_common(ctx, "klda", Y, labels, &o, &k);
  if (!s && o.kernel.kind == NLE_PDK_PRECOMPUTED)
    s = nle__fail(ctx, NLE_ERR_ARG, "klda: the kernel of the points (linear, gaussian, polynomial), not precomputed");
  if (!s && o.kernel.neighbors) s = nle__fail(ctx, NLE_ERR_ARG, "klda: a dense kernel (no {@kernel-neighbors})");
  if (!s) s = nle__kernel_resolve(ctx, Y, &o.kernel);
  size_t n = Y ? Y->rows : 0, Cn = (size_t)k.C, want = Cn - 1, q = 0;
  double t0 = nle_time_seconds();
  if (!s) s = nle__check_memory(ctx, 2.0 * (double)n * n * sizeof(double), "kernel LDA's two N x N matrices");
  double *K = NULL, *T = NULL, *m = NULL, *M = NULL, *vals = NULL, g = 0;
  nle_lda_result *r = s ? NULL : nle__calloc(ctx, 1, sizeof *r, "the kernel LDA result");
  if (!s && !r) s = NLE_ERR_NOMEM;
  if (!s) s = nle__kernel_matrix(ctx, Y, &o.kernel, &K);
  if (!s) {
    T = nle__malloc(ctx, n * n * sizeof(double), "kernel LDA's T");
    m = nle__calloc(ctx, n, sizeof(double), "the kernel's means");
    M = nle__calloc(ctx, n * Cn, sizeof(double), "the class means");
    vals = nle__malloc(ctx, want * sizeof(double), "eigenvalues");
    if (!T || !m || !M || !vals) s = NLE_ERR_NOMEM;
  }
  if (!s) { /* centre K in place (eq. 4.18), keeping the means for new points */
    for (size_t i = 0; i < n; i++) {
      for (size_t j = 0; j < n; j++) m[i] += K[i * n + j];
      m[i] /= (double)n;
      g += m[i] / (double)n;
    }
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) K[i * n + j] += -m[i] - m[j] + g;
    /* T = K K (+ ridge I) */
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)n, (int)n, 1.0, K, (int)n, 0.0, T, (int)n);
    double trace = 0;
    for (size_t i = 0; i < n; i++) trace += T[i * n + i];
    if (o.ridge == NLE_AUTO) o.ridge = 1e-3 * trace / (double)n;
    if (!(o.ridge > 0))
      s = nle__fail(ctx, NLE_ERR_VALUE, "klda: {@ridge=%g}: the centred kernel's K^2 is singular (rank <= N - 1), "
                    "kernel LDA needs a ridge > 0", o.ridge);
    for (size_t i = 0; i < n; i++) T[i * n + i] += o.ridge;
    /* M's column k: sqrt(N_k) times the mean of the class's columns of K */
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < n; j++) M[i * Cn + (size_t)k.codes[j]] += K[i * n + j];
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < Cn; c++) M[i * Cn + c] /= sqrt((double)k.counts[c]);
  }
  if (!s) s = nle__projection_new(ctx, "klda", NLE_MAP_KERNEL, n, Y->cols, want, Y, &r->model);
  if (!s) s = reduced_discriminants(ctx, "klda", n, T, M, Cn, want, vals, r->model->A, &q);
  if (!s && !q) s = nle__fail(ctx, NLE_ERR_VALUE, "klda: the class means coincide in the kernel's space");
  if (!s) { /* X = K-bar P */
    r->model->kernel = o.kernel, r->model->grand = g, r->model->dim = q;
    memcpy(r->model->mean, m, n * sizeof(double));
    s = nle_matd_alloc(ctx, n, q, &r->X);
  }
  if (!s) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)q, (int)n, 1.0, K, (int)n, r->model->A, (int)n,
                0.0, r->X->data, (int)q);
    s = within_whiten(ctx, &k, r->X, r->model->A, n);
  }
  if (!s) s = classify_and_keep(ctx, &k, r, q, fewer(ctx, "klda", (size_t)o.dim, q, asked), vals, 0);
  if (!s) {
    o.dim = (int)r->X->cols;
    r->classes = k.C, r->n = n, r->rank = -1;
    r->resolved = o;
    if (!o.keep_model) nle_projection_model_free(&r->model);
    r->seconds = nle_time_seconds() - t0;
  }
  classes_free(&k);
  free(K), free(T), free(m), free(M), free(vals);
  if (s) {
    nle_lda_result_free(&r);
    return s;
  }
  *result = r;
  return NLE_OK;
}
