/* kem_map.c — the continuous maps of kernel eigenmaps (Brand 2003, sec. 3):
 * the kernel basis z(x) (eq. 17), the forward map G(x) (eq. 17, or eq. 18
 * for the reweighted and stochastic variants), its Jacobian, the inverse
 * G+(y) as a mixture of local affine inverses (SPEC G07-18's reading of
 * eq. 19, which does not close dimensionally as printed) and the model
 * file ("kem-model"). */
#include "kem_internal.h"
#include "../io/model_file.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows per block: the inverse's points one by one; the forward maps' rows
 * as one GEMM per block (fixed blocks, BLAS serial inside nle__for_blocks:
 * the same bits for any thread count). */
enum { MAP_ROWS = 64, BASIS_ROWS = 256 };

static bool spd_inverse(double *S, size_t d, double *logdet);

/* The variants' names: here, with the model file that writes and checks
 * them, below the fit (kem.c), which calls this file and is not called back. */
NLE__ENUM_NAMES(nle_kem_variant_name, nle_kem_variant_parse, nle_kem_variant, NLE_KEM_VARIANT_MAP, NLE_KEM_COUNT, true)

void nle_kem_model_free(nle_kem_model **p) {
  if (!p || !*p) return;
  nle_kem_model *m = *p;
  free(m->mean), free(m->centres), free(m->proj), free(m->G), free(m->v1);
  free(m->inv_mu), free(m->inv_b), free(m->inv_pinv), free(m->inv_prec), free(m->inv_logdet);
  free(m);
  *p = NULL;
}

nle_status nle__kem_model_new(nle_ctx *ctx, nle_kem_variant variant, bool lpp, size_t D, size_t dim, size_t kernels,
                              size_t q, nle_kem_model **out) {
  *out = NULL;
  nle_kem_model *m = nle__calloc(ctx, 1, sizeof *m, "the kernel eigenmap model");
  if (!m) return NLE_ERR_NOMEM;
  m->variant = variant, m->lpp = lpp, m->D = D, m->dim = dim;
  m->kernels = lpp ? 0 : kernels;
  m->q = lpp ? D : q;
  m->m = lpp ? D : kernels * (q + 1);
  m->inv_kernels = lpp ? 1 : kernels;
  const char *what = "the kernel eigenmap model";
  size_t cols = m->m + (variant == NLE_KEM_AFFINE), K = m->kernels, IK = m->inv_kernels;
  bool ok = (m->mean = nle__calloc(ctx, D, sizeof(double), what)) &&
            (m->centres = nle__calloc(ctx, K ? K * D : 1, sizeof(double), what)) &&
            (m->G = nle__calloc(ctx, dim * cols, sizeof(double), what)) &&
            (m->inv_mu = nle__calloc(ctx, IK * D, sizeof(double), what)) &&
            (m->inv_b = nle__calloc(ctx, IK * dim, sizeof(double), what)) &&
            (m->inv_pinv = nle__calloc(ctx, IK * D * dim, sizeof(double), what)) &&
            (m->inv_prec = nle__calloc(ctx, IK * dim * dim, sizeof(double), what)) &&
            (m->inv_logdet = nle__calloc(ctx, IK, sizeof(double), what));
  if (ok && !lpp && q < D && q > 0) ok = (m->proj = nle__calloc(ctx, K * q * D, sizeof(double), what)) != NULL;
  if (ok && nle__kem_divides(variant)) ok = (m->v1 = nle__calloc(ctx, m->m, sizeof(double), what)) != NULL;
  if (!ok) {
    nle_kem_model_free(&m);
    return NLE_ERR_NOMEM;
  }
  *out = m;
  return NLE_OK;
}

/* Scratch of one point's evaluation. */
typedef struct {
  double *x;     /* D: the point */
  double *logp;  /* K: log p_k, then posteriors */
  double *rel;   /* K: p_k / max_j p_j (each exponential once) */
  size_t *act;   /* K: the kernels kept after truncation */
  double *coord; /* K x q: their local coordinates K_k (x - mu_k) */
  double *z;     /* m (+1): the basis */
  double *grad;  /* (dim + 1) x D: the Jacobian's rows */
  double *mubar; /* D */
  double *J;     /* dim x D: the Jacobian (inverse refinement) */
  double *x2;    /* D: the refinement's trial point */
} point_scratch;

static size_t scratch_doubles(const nle_kem_model *m) {
  size_t K = m->kernels ? m->kernels : 1;
  return m->D + K + K + K + K * (m->q ? m->q : 1) + m->m + 1 + (m->dim + 1) * m->D + m->D + m->dim * m->D + m->D;
}

static void scratch_carve(const nle_kem_model *m, double *buf, point_scratch *p) {
  size_t K = m->kernels ? m->kernels : 1;
  p->x = buf, buf += m->D;
  p->logp = buf, buf += K;
  p->rel = buf, buf += K;
  p->act = (size_t *)buf, buf += K; /* size_t fits a double's slot */
  p->coord = buf, buf += K * (m->q ? m->q : 1);
  p->z = buf, buf += m->m + 1;
  p->grad = buf, buf += (m->dim + 1) * m->D;
  p->mubar = buf, buf += m->D;
  p->J = buf, buf += m->dim * m->D;
  p->x2 = buf;
}

/* z(x) of eq. 17 into p->z (m entries, zeroed here): for each kernel the
 * local homogeneous coordinate [K_k (x - mu_k); 1] times its posterior
 * p_k(x) / sum_j p_j(x). The posteriors by log-sum-exp: far from every
 * centre each p_k underflows and the ratio would be 0/0 (SPEC G07-17).
 * Posteriors under `truncate` are dropped and the rest renormalised, so
 * the homogeneous rows still sum to 1 (1 stays in range(Z^T), sec. 2.1).
 * d2 (K squared distances |x - mu_k|^2) and coords (K x q local
 * coordinates K_k (x - mu_k)) come from the batched GEMM (kernel_rows);
 * NULL: computed here from p->x, the coordinates for the kept kernels only.
 * Returns the number of kernels kept (p->act, posteriors in p->logp[a]). */
static size_t point_basis(const nle_kem_model *m, point_scratch *p, const double *d2, const double *coords) {
  size_t D = m->D, q = m->q, b = q + 1;
  memset(p->z, 0, m->m * sizeof(double));
  if (m->lpp) {
    memcpy(p->z, p->x, D * sizeof(double));
    return 0;
  }
  double inv2s2 = 1.0 / (2.0 * m->sigma * m->sigma), top = -INFINITY;
  for (size_t k = 0; k < m->kernels; k++) {
    double e = 0;
    if (d2) e = d2[k];
    else
      for (size_t j = 0; j < D; j++) e += (p->x[j] - m->centres[k * D + j]) * (p->x[j] - m->centres[k * D + j]);
    p->logp[k] = -e * inv2s2;
    top = fmax(top, p->logp[k]);
  }
  double total = 0;
  for (size_t k = 0; k < m->kernels; k++) total += p->rel[k] = exp(p->logp[k] - top);
  size_t n = 0;
  double kept = 0;
  for (size_t k = 0; k < m->kernels; k++) {
    double post = p->rel[k] / total;
    if (post >= m->truncate || p->logp[k] == top) p->act[n] = k, p->logp[n++] = post, kept += post;
  }
  for (size_t a = 0; a < n; a++) {
    size_t k = p->act[a];
    double post = p->logp[a] /= kept, *coord = p->coord + a * q, *zk = p->z + k * b;
    const double *c = m->centres + k * D;
    if (coords) {
      memcpy(coord, coords + k * q, q * sizeof(double));
    } else if (!m->proj) {
      for (size_t j = 0; j < q; j++) coord[j] = p->x[j] - c[j];
    } else {
      const double *P = m->proj + k * q * D;
      for (size_t r = 0; r < q; r++) {
        double s = 0;
        for (size_t j = 0; j < D; j++) s += P[r * D + j] * (p->x[j] - c[j]);
        coord[r] = s;
      }
    }
    for (size_t j = 0; j < q; j++) zk[j] = coord[j] * post;
    zk[q] = post;
  }
  return n;
}

/* y = G z^ / den (eqs. 17-18) from p->z; returns den. */
static double point_map(const nle_kem_model *m, const point_scratch *p, double *y) {
  size_t cols = m->m + (m->variant == NLE_KEM_AFFINE);
  double den = 1.0;
  if (m->v1) {
    den = 0;
    for (size_t c = 0; c < m->m; c++) den += m->v1[c] * p->z[c];
  }
  for (size_t r = 0; r < m->dim; r++) {
    const double *g = m->G + r * cols;
    double s = m->variant == NLE_KEM_AFFINE ? g[m->m] : 0.0;
    for (size_t c = 0; c < m->m; c++) s += g[c] * p->z[c];
    y[r] = s / den;
  }
  return den;
}

/* d(g^T z)/dx for a row g over z's m entries into out (D). With
 * pi_k the posteriors, c_k = K_k (x - mu_k) and d pi_k / dx =
 * pi_k (mu_k - mubar) / sigma^2 (mubar = sum_k pi_k mu_k, from
 * log p_k = -|x - mu_k|^2 / 2 sigma^2 + const):
 * d(g^T z)/dx = sum_k pi_k [K_k^T g_k,lin + (g_k^T [c_k; 1]) (mu_k - mubar) / sigma^2].
 * Truncation's renormalisation is ignored (its effect is below truncate). */
static void grad_row(const nle_kem_model *m, const point_scratch *p, size_t n, const double *g, double *out) {
  size_t D = m->D, q = m->q, b = q + 1;
  if (m->lpp) {
    memcpy(out, g, D * sizeof(double));
    return;
  }
  memset(out, 0, D * sizeof(double));
  double inv_s2 = 1.0 / (m->sigma * m->sigma);
  for (size_t a = 0; a < n; a++) {
    size_t k = p->act[a];
    double post = p->logp[a];
    const double *gk = g + k * b, *c = m->centres + k * D, *coord = p->coord + a * q;
    double s = gk[q];
    for (size_t j = 0; j < q; j++) s += gk[j] * coord[j];
    for (size_t j = 0; j < D; j++) out[j] += post * s * (c[j] - p->mubar[j]) * inv_s2;
    if (!m->proj) {
      for (size_t j = 0; j < q; j++) out[j] += post * gk[j];
    } else {
      const double *P = m->proj + k * q * D;
      for (size_t r = 0; r < q; r++)
        for (size_t j = 0; j < D; j++) out[j] += post * gk[r] * P[r * D + j];
    }
  }
}

/* G(x) and its Jacobian J (dim x D) at p->x: J = (dN/dx - y dden/dx) / den. */
static void point_jacobian(const nle_kem_model *m, point_scratch *p, double *y, double *J) {
  size_t D = m->D, n = point_basis(m, p, NULL, NULL), cols = m->m + (m->variant == NLE_KEM_AFFINE);
  double den = point_map(m, p, y);
  memset(p->mubar, 0, D * sizeof(double));
  for (size_t a = 0; a < n; a++)
    for (size_t j = 0; j < D; j++) p->mubar[j] += p->logp[a] * m->centres[p->act[a] * D + j];
  double *gden = p->grad + m->dim * D;
  if (m->v1) grad_row(m, p, n, m->v1, gden);
  for (size_t r = 0; r < m->dim; r++) {
    grad_row(m, p, n, m->G + r * cols, J + r * D);
    for (size_t j = 0; j < D; j++) J[r * D + j] = (J[r * D + j] - (m->v1 ? y[r] * gden[j] : 0.0)) / den;
  }
}

nle_status nle__kem_jacobian(nle_ctx *ctx, const nle_kem_model *m, const double *x, double *y, double *J) {
  double *buf = nle__malloc(ctx, scratch_doubles(m) * sizeof(double), "the Jacobian");
  if (!buf) return NLE_ERR_NOMEM;
  point_scratch p;
  scratch_carve(m, buf, &p);
  memcpy(p.x, x, m->D * sizeof(double));
  point_jacobian(m, &p, y, J);
  free(buf);
  return NLE_OK;
}

/* The kernels as the rows of one matrix, so that a GEMM of a block of
 * (centred) points gives every kernel's squared distance and local
 * coordinates at once: |x - mu_k|^2 = |x'|^2 + |mu'_k|^2 - 2 x'.mu'_k and
 * K_k (x - mu_k) = K_k x' - K_k mu'_k, with x' = x - mean and mu'_k = mu_k -
 * mean (centring on the training mean keeps the expansion's cancellation
 * at the data's spread, not its offset from the origin). */
typedef struct {
  size_t cols; /* K, + K q with projections */
  double *R;   /* cols x D: mu'_k, then the rows of each K_k */
  double *cc;  /* K: |mu'_k|^2 */
  double *pc;  /* K q: K_k mu'_k (with projections) */
} kernel_rows;

static void kernel_rows_free(kernel_rows *kr) {
  free(kr->R), free(kr->cc), free(kr->pc);
}

static nle_status kernel_rows_build(nle_ctx *ctx, const nle_kem_model *m, kernel_rows *kr) {
  size_t K = m->kernels, D = m->D, q = m->proj ? m->q : 0;
  kr->cols = K + K * q;
  kr->R = nle__malloc(ctx, kr->cols * D * sizeof(double), "the kernels' rows");
  kr->cc = nle__malloc(ctx, K * sizeof(double), "the kernels' rows");
  kr->pc = nle__malloc(ctx, (K * q > 0 ? K * q : 1) * sizeof(double), "the kernels' rows");
  if (!kr->R || !kr->cc || !kr->pc) return NLE_ERR_NOMEM;
  for (size_t k = 0; k < K; k++) {
    double *c = kr->R + k * D, t = 0;
    for (size_t j = 0; j < D; j++) c[j] = m->centres[k * D + j] - m->mean[j], t += c[j] * c[j];
    kr->cc[k] = t;
    for (size_t r = 0; r < q; r++) {
      const double *P = m->proj + (k * q + r) * D;
      double u = 0;
      for (size_t j = 0; j < D; j++) u += P[j] * c[j];
      kr->pc[k * q + r] = u;
    }
  }
  if (q) memcpy(kr->R + K * D, m->proj, K * q * D * sizeof(double));
  return NLE_OK;
}

typedef struct {
  const nle_kem_model *m;
  const nle_matf *X;
  const nle_matd *Yin;
  double *out; /* rows x (m, dim or D) */
  int what;    /* 0 basis, 1 forward map, 2 inverse */
  const kernel_rows *kr; /* the forward maps of a kernel basis, else NULL */
} map_job;

static void inverse_point(const nle_kem_model *m, const double *y, double *x, point_scratch *p);

static void emit_point(const map_job *job, point_scratch *p, size_t i, const double *d2, const double *coords) {
  const nle_kem_model *m = job->m;
  point_basis(m, p, d2, coords);
  if (job->what == 0) memcpy(job->out + i * m->m, p->z, m->m * sizeof(double));
  else point_map(m, p, job->out + i * m->dim);
}

/* The forward maps of BASIS_ROWS rows: S = X' R^T (one GEMM), turned in
 * place into the squared distances (clamped at 0: the expansion may round
 * below) and the local coordinates, then each row's z(x) (and G(x)). */
static void basis_block(const map_job *job, size_t i0, size_t i1, double *scratch, point_scratch *p) {
  const nle_kem_model *m = job->m;
  const kernel_rows *kr = job->kr;
  size_t D = m->D, K = m->kernels, q = m->q, cols = kr->cols, B = i1 - i0;
  double *Xb = scratch, *S = Xb + BASIS_ROWS * D;
  for (size_t i = 0; i < B; i++)
    for (size_t j = 0; j < D; j++) Xb[i * D + j] = (double)job->X->data[(i0 + i) * D + j] - m->mean[j];
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B, (int)cols, (int)D, 1.0, Xb, (int)D, kr->R, (int)D, 0.0,
              S, (int)cols);
  for (size_t i = 0; i < B; i++) {
    double *s = S + i * cols, xx = 0;
    const double *x = Xb + i * D;
    for (size_t j = 0; j < D; j++) xx += x[j] * x[j], p->x[j] = (double)job->X->data[(i0 + i) * D + j];
    for (size_t k = 0; k < K; k++) s[k] = fmax(0.0, xx + kr->cc[k] - 2.0 * s[k]);
    if (m->proj)
      for (size_t e = 0; e < K * q; e++) s[K + e] -= kr->pc[e];
    emit_point(job, p, i0 + i, s, m->proj ? s + K : NULL);
  }
}

static int map_block(void *job_, size_t block, void *scratch) {
  map_job *job = job_;
  const nle_kem_model *m = job->m;
  point_scratch p;
  scratch_carve(m, scratch, &p);
  size_t rows = job->what == 2 ? job->Yin->rows : job->X->rows, per = job->kr ? BASIS_ROWS : MAP_ROWS;
  size_t r0 = block * per, r1 = r0 + per < rows ? r0 + per : rows;
  if (job->kr) {
    basis_block(job, r0, r1, (double *)scratch + scratch_doubles(m), &p);
    return 0;
  }
  for (size_t i = r0; i < r1; i++) {
    if (job->what == 2) {
      inverse_point(m, job->Yin->data + i * m->dim, job->out + i * m->D, &p);
      continue;
    }
    for (size_t j = 0; j < m->D; j++) p.x[j] = job->X->data[i * m->D + j];
    emit_point(job, &p, i, NULL, NULL);
  }
  return 0;
}

/* The forward maps of a kernel basis go by blocks of BASIS_ROWS through
 * kernel_rows' GEMM; LPP's and the inverse point by point. */
static nle_status run_map(nle_ctx *ctx, map_job *job, size_t rows, const char *stage) {
  const nle_kem_model *m = job->m;
  kernel_rows kr = {0};
  nle_status s = NLE_OK;
  if (job->what != 2 && m->kernels) {
    s = kernel_rows_build(ctx, m, &kr);
    job->kr = &kr;
  }
  size_t per = job->kr ? BASIS_ROWS : MAP_ROWS, nb = (rows + per - 1) / per;
  double work = (double)rows * (double)(m->kernels ? m->kernels : 1) * (double)m->D * (double)(m->q + 1);
  size_t bytes = (scratch_doubles(m) + m->inv_kernels + (job->kr ? BASIS_ROWS * (m->D + kr.cols) : 0)) * sizeof(double);
  if (!s && nb) s = nle__for_blocks(ctx, stage, nb, nle__threads_for(ctx, work), bytes, map_block, job);
  kernel_rows_free(&kr);
  job->kr = NULL;
  return s;
}

nle_status nle__kem_basis(nle_ctx *ctx, const nle_kem_model *m, const nle_matf *X, double *Zt) {
  map_job job = {m, X, NULL, Zt, 0, NULL};
  return run_map(ctx, &job, X->rows, "kernel basis");
}

static nle_status check_points(nle_ctx *ctx, const nle_kem_model *m, const nle_matf *X, const char *what) {
  if (X->cols != m->D)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s: the points have %zu columns, the model was trained on %zu", what,
                     X->cols, m->D);
  for (size_t e = 0; e < X->rows * X->cols; e++)
    if (!isfinite(X->data[e]))
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: row %zu, column %zu is not finite", what, e / X->cols,
                       e % X->cols);
  return NLE_OK;
}

nle_status nle_kem_basis(nle_ctx *ctx, const nle_kem_model *m, const nle_matf *X, nle_matd **Zt) {
  if (!m || !X || !Zt) return nle__fail(ctx, NLE_ERR_ARG, "kem basis: NULL argument");
  *Zt = NULL;
  nle_status s = check_points(ctx, m, X, "kem basis");
  if (!s) s = nle_matd_alloc(ctx, X->rows, m->m, Zt);
  if (!s) s = nle__kem_basis(ctx, m, X, (*Zt)->data);
  if (s) nle_matd_free(Zt);
  return s;
}

nle_status nle_kem_transform(nle_ctx *ctx, const nle_kem_model *m, const nle_matf *X, nle_matd **Y) {
  if (!m || !X || !Y) return nle__fail(ctx, NLE_ERR_ARG, "kem transform: NULL argument");
  *Y = NULL;
  nle_status s = check_points(ctx, m, X, "kem transform");
  if (!s) s = nle_matd_alloc(ctx, X->rows, m->dim, Y);
  map_job job = {m, X, NULL, s ? NULL : (*Y)->data, 1, NULL};
  if (!s) s = run_map(ctx, &job, X->rows, "kem transform");
  if (s) nle_matd_free(Y);
  return s;
}

/* |y - G(x)|^2 at p->x, G(x) into g. */
static double residual(const nle_kem_model *m, point_scratch *p, const double *y, double *g) {
  point_basis(m, p, NULL, NULL);
  point_map(m, p, g);
  double e = 0;
  for (size_t i = 0; i < m->dim; i++) e += (y[i] - g[i]) * (y[i] - g[i]);
  return e;
}

/* G+(y) = sum_k p'_k(y) / sum_j p'_j(y) [mu_k + A_k^+ (y - b_k)], the
 * posteriors by log-sum-exp and truncated as the forward ones; then
 * m->inverse_steps Gauss-Newton steps x <- x + J^+ (y - G(x)) (J^+ the
 * minimum-norm inverse: the step stays in the map's row space, along the
 * manifold), each kept only where it lowers |y - G(x)| (halved up to four
 * times otherwise). The blend of neighbouring local inverses misses by
 * their curvature terms; the steps remove that miss. */
static void inverse_point(const nle_kem_model *m, const double *y, double *x, point_scratch *p) {
  size_t d = m->dim, D = m->D, K = m->inv_kernels;
  double top = -INFINITY, r[64], g[64], *logp = p->logp;
  for (size_t k = 0; k < K; k++) {
    const double *b = m->inv_b + k * d, *P = m->inv_prec + k * d * d;
    for (size_t i = 0; i < d; i++) r[i] = y[i] - b[i];
    double quad = 0;
    for (size_t i = 0; i < d; i++)
      for (size_t j = 0; j < d; j++) quad += r[i] * P[i * d + j] * r[j];
    logp[k] = -0.5 * quad - 0.5 * m->inv_logdet[k];
    top = fmax(top, logp[k]);
  }
  double total = 0, kept = 0;
  for (size_t k = 0; k < K; k++) total += exp(logp[k] - top);
  for (size_t k = 0; k < K; k++) {
    double post = exp(logp[k] - top) / total;
    logp[k] = post >= m->truncate || logp[k] == top ? post : 0.0;
    kept += logp[k];
  }
  memset(x, 0, D * sizeof(double));
  for (size_t k = 0; k < K; k++) {
    if (logp[k] == 0) continue;
    double w = logp[k] / kept;
    const double *b = m->inv_b + k * d, *A = m->inv_pinv + k * D * d, *mu = m->inv_mu + k * D;
    for (size_t i = 0; i < d; i++) r[i] = y[i] - b[i];
    for (size_t j = 0; j < D; j++) {
      double s = mu[j];
      for (size_t i = 0; i < d; i++) s += A[j * d + i] * r[i];
      x[j] += w * s;
    }
  }
  if (!m->inverse_steps) return;
  memcpy(p->x, x, D * sizeof(double));
  double err = residual(m, p, y, g);
  for (int it = 0; it < m->inverse_steps && err > 0; it++) {
    memcpy(p->x, x, D * sizeof(double));
    point_jacobian(m, p, g, p->J);
    for (size_t i = 0; i < d; i++) r[i] = y[i] - g[i];
    /* dx = J^T (J J^T + delta I)^-1 r */
    double S[64 * 64], tr = 0, logdet;
    for (size_t a = 0; a < d; a++)
      for (size_t b = 0; b < d; b++) {
        double t = 0;
        for (size_t j = 0; j < D; j++) t += p->J[a * D + j] * p->J[b * D + j];
        S[a * d + b] = t;
      }
    for (size_t a = 0; a < d; a++) tr += S[a * d + a];
    for (size_t a = 0; a < d; a++) S[a * d + a] += 1e-12 * tr / (double)d + 1e-300;
    if (!spd_inverse(S, d, &logdet)) break;
    double c[64];
    for (size_t a = 0; a < d; a++) {
      c[a] = 0;
      for (size_t b = 0; b < d; b++) c[a] += S[a * d + b] * r[b];
    }
    double step = 1.0, e2 = err;
    for (int half = 0; half < 5; half++, step *= 0.5) {
      for (size_t j = 0; j < D; j++) {
        double t = 0;
        for (size_t a = 0; a < d; a++) t += p->J[a * D + j] * c[a];
        p->x[j] = x[j] + step * t;
      }
      memcpy(p->x2, p->x, D * sizeof(double));
      e2 = residual(m, p, y, g);
      if (e2 < err) break;
    }
    if (!(e2 < err)) break;
    memcpy(x, p->x2, D * sizeof(double));
    err = e2;
  }
}

nle_status nle_kem_inverse(nle_ctx *ctx, const nle_kem_model *m, const nle_matd *Y, nle_matd **X) {
  if (!m || !Y || !X) return nle__fail(ctx, NLE_ERR_ARG, "kem inverse: NULL argument");
  *X = NULL;
  if (Y->cols != m->dim)
    return nle__fail(ctx, NLE_ERR_VALUE, "kem inverse: the points have %zu columns, the embedding has %zu", Y->cols,
                     m->dim);
  for (size_t e = 0; e < Y->rows * Y->cols; e++)
    if (!isfinite(Y->data[e]))
      return nle__fail(ctx, NLE_ERR_VALUE, "kem inverse: row %zu, column %zu is not finite", e / Y->cols,
                       e % Y->cols);
  nle_status s = nle_matd_alloc(ctx, Y->rows, m->D, X);
  map_job job = {m, NULL, Y, s ? NULL : (*X)->data, 2, NULL};
  if (!s) s = run_map(ctx, &job, Y->rows, "kem inverse");
  if (s) nle_matd_free(X);
  return s;
}

/* Inverse and log-determinant of the symmetric positive definite d x d S
 * (overwritten by its inverse); false when not definite. */
static bool spd_inverse(double *S, size_t d, double *logdet) {
  if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, S, (lapack_int)d) != 0) return false;
  *logdet = 0;
  for (size_t i = 0; i < d; i++) *logdet += 2.0 * log(S[i * d + i]);
  if (LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', (lapack_int)d, S, (lapack_int)d) != 0) return false;
  for (size_t i = 0; i < d; i++)
    for (size_t j = 0; j < i; j++) S[i * d + j] = S[j * d + i];
  return true;
}

nle_status nle__kem_build_inverse(nle_ctx *ctx, nle_kem_model *m) {
  size_t d = m->dim, D = m->D, K = m->inv_kernels;
  if (d > 64) return nle__fail(ctx, NLE_ERR_ARG, "kem: the inverse map supports up to 64 dimensions, not %zu", d);
  double *buf = nle__malloc(ctx, scratch_doubles(m) * sizeof(double), "the inverse map");
  double *J = nle__malloc(ctx, K * d * D * sizeof(double), "the inverse map");
  double *S = nle__malloc(ctx, K * d * d * sizeof(double), "the inverse map");
  nle_status s = buf && J && S ? NLE_OK : NLE_ERR_NOMEM;
  point_scratch p;
  if (!s) scratch_carve(m, buf, &p);
  /* b_k = G(mu_k) and A_k = dG/dx at mu_k: the map's local affine
   * approximation around each kernel (lpp: one, at the data's mean). */
  double mean_tr = 0;
  for (size_t k = 0; !s && k < K; k++) {
    const double *mu = m->lpp ? m->mean : m->centres + k * D;
    memcpy(m->inv_mu + k * D, mu, D * sizeof(double));
    memcpy(p.x, mu, D * sizeof(double));
    double *Jk = J + k * d * D, *Sk = S + k * d * d;
    point_jacobian(m, &p, m->inv_b + k * d, Jk);
    for (size_t a = 0; a < d; a++)
      for (size_t b = 0; b < d; b++) {
        double t = 0;
        for (size_t j = 0; j < D; j++) t += Jk[a * D + j] * Jk[b * D + j];
        Sk[a * d + b] = t;
      }
    for (size_t a = 0; a < d; a++) mean_tr += Sk[a * d + a] / (double)(K * d);
  }
  /* A_k^+ = A_k^T (A_k A_k^T + delta I)^-1: delta, 1e-12 of the mean
   * squared gain, only keeps a rank-deficient A_k invertible. Sigma'_k =
   * sigma^2 A_k A_k^T + eps I (the kernel's covariance carried through the
   * local map, SPEC G07-18), eps 1e-6 of the mean so that a kernel whose map
   * is flat in one direction keeps a proper density. The mapped width is
   * inverse_width sigma (0.25 by default, not SPEC's sigma): the blend of
   * neighbouring local inverses misses by their curvature terms, and on
   * the test roll the centres' round trip is 16% of the data's radius at
   * width sigma, 8% at sigma/2, 3.8% at sigma/4, 1.6% at sigma/10 (the
   * narrower, the closer to a piecewise, discontinuous inverse). */
  double delta = mean_tr > 0 ? 1e-12 * mean_tr : 1e-300;
  double s2 = m->lpp ? 1.0 : m->inverse_width * m->inverse_width * m->sigma * m->sigma, eps = mean_tr > 0 ? 1e-6 * s2 * mean_tr : 1.0;
  double T[64 * 64];
  for (size_t k = 0; !s && k < K; k++) {
    const double *Jk = J + k * d * D, *Sk = S + k * d * d;
    for (size_t e = 0; e < d * d; e++) T[e] = Sk[e] + (e % (d + 1) == 0 ? delta : 0.0);
    double logdet;
    if (!spd_inverse(T, d, &logdet))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "kem: kernel %zu's local map is degenerate", k + 1);
    double *Pk = m->inv_pinv + k * D * d;
    for (size_t j = 0; !s && j < D; j++)
      for (size_t b = 0; b < d; b++) {
        double t = 0;
        for (size_t a = 0; a < d; a++) t += Jk[a * D + j] * T[a * d + b];
        Pk[j * d + b] = t;
      }
    double *prec = m->inv_prec + k * d * d;
    for (size_t e = 0; !s && e < d * d; e++) prec[e] = s2 * Sk[e] + (e % (d + 1) == 0 ? eps : 0.0);
    if (!s && !spd_inverse(prec, d, &m->inv_logdet[k]))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "kem: kernel %zu's mapped covariance is not definite", k + 1);
  }
  free(buf), free(J), free(S);
  return s;
}

/* ---- the file ----------------------------------------------------------- */

enum { KM_VARIANT, KM_LPP, KM_D, KM_DIM, KM_KERNELS, KM_Q, KM_HAS_PROJ, KM_STEPS, KM_INTS };
enum { KM_SIGMA, KM_TRUNCATE, KM_WIDTH, KM_DOUBLES };

static void write_model(nle__afile *af, const void *model, bool copy_data) {
  (void)copy_data; /* G(x) needs no training data */
  const nle_kem_model *m = model;
  int64_t ints[KM_INTS] = {m->variant, m->lpp, (int64_t)m->D, (int64_t)m->dim, (int64_t)m->kernels, (int64_t)m->q,
                           m->proj != NULL, m->inverse_steps};
  double doubles[KM_DOUBLES] = {m->sigma, m->truncate, m->inverse_width};
  size_t cols = m->m + (m->variant == NLE_KEM_AFFINE), d = m->dim, D = m->D, K = m->inv_kernels;
  nle__rec_put(af, "ints", 'l', ints, KM_INTS);
  nle__rec_put(af, "doubles", 'd', doubles, KM_DOUBLES);
  nle__rec_put(af, "mean", 'd', m->mean, D);
  if (m->kernels) nle__rec_put(af, "centres", 'd', m->centres, m->kernels * D);
  if (m->proj) nle__rec_put(af, "proj", 'd', m->proj, m->kernels * m->q * D);
  nle__rec_put(af, "G", 'd', m->G, d * cols);
  if (m->v1) nle__rec_put(af, "v1", 'd', m->v1, m->m);
  nle__rec_put(af, "inv_mu", 'd', m->inv_mu, K * D);
  nle__rec_put(af, "inv_b", 'd', m->inv_b, K * d);
  nle__rec_put(af, "inv_pinv", 'd', m->inv_pinv, K * D * d);
  nle__rec_put(af, "inv_prec", 'd', m->inv_prec, K * d * d);
  nle__rec_put(af, "inv_logdet", 'd', m->inv_logdet, K);
}

/* Record `name` (count doubles, all finite) into dst (allocated). */
static nle_status load_doubles(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, double *dst) {
  const void *v;
  nle_status s = nle__rec_get(ctx, f, name, 'd', count, &v);
  if (s) return s;
  memcpy(dst, v, count * sizeof(double));
  for (size_t e = 0; e < count; e++)
    if (!isfinite(dst[e])) return nle__fail(ctx, NLE_ERR_FORMAT, "damaged kem model: %s has a non-finite value", name);
  return NLE_OK;
}

static nle_status read_model(nle_ctx *ctx, nle__rec_file *f, void **out) {
  const void *iv = NULL, *dv = NULL;
  nle_status s = nle__rec_get(ctx, f, "ints", 'l', KM_INTS, &iv);
  if (!s) s = nle__rec_get(ctx, f, "doubles", 'd', KM_DOUBLES, &dv);
  const int64_t *h = iv;
  const double *hd = dv;
  if (!s && !(NLE__MODEL_NAMED(h[KM_VARIANT], nle_kem_variant_name) && (h[KM_LPP] == 0 || h[KM_LPP] == 1) &&
              h[KM_D] >= 1 && h[KM_D] <= INT32_MAX && h[KM_DIM] >= 1 && h[KM_DIM] <= 64 && h[KM_KERNELS] >= 0 &&
              h[KM_KERNELS] <= INT32_MAX && h[KM_Q] >= 0 && h[KM_Q] <= h[KM_D] &&
              (h[KM_LPP] ? h[KM_KERNELS] == 0 : h[KM_KERNELS] >= 1) &&
              h[KM_HAS_PROJ] == (!h[KM_LPP] && h[KM_Q] > 0 && h[KM_Q] < h[KM_D]) && hd[KM_SIGMA] > 0 &&
              isfinite(hd[KM_SIGMA]) && h[KM_STEPS] >= 0 && h[KM_STEPS] <= 1000 && hd[KM_TRUNCATE] >= 0 && hd[KM_TRUNCATE] < 1 && hd[KM_WIDTH] > 0 && isfinite(hd[KM_WIDTH])))
    s = nle__fail(ctx, NLE_ERR_FORMAT, "damaged kem model header");
  nle_kem_model *m = NULL;
  if (!s)
    s = nle__kem_model_new(ctx, (nle_kem_variant)h[KM_VARIANT], h[KM_LPP], (size_t)h[KM_D], (size_t)h[KM_DIM],
                           (size_t)h[KM_KERNELS], (size_t)h[KM_Q], &m);
  if (!s) {
    m->sigma = hd[KM_SIGMA], m->truncate = hd[KM_TRUNCATE], m->inverse_steps = (int)h[KM_STEPS];
    m->inverse_width = hd[KM_WIDTH];
    size_t cols = m->m + (m->variant == NLE_KEM_AFFINE), d = m->dim, D = m->D, K = m->inv_kernels;
    s = load_doubles(ctx, f, "mean", D, m->mean);
    if (!s && m->kernels) s = load_doubles(ctx, f, "centres", m->kernels * D, m->centres);
    if (!s && m->proj) s = load_doubles(ctx, f, "proj", m->kernels * m->q * D, m->proj);
    if (!s) s = load_doubles(ctx, f, "G", d * cols, m->G);
    if (!s && m->v1) s = load_doubles(ctx, f, "v1", m->m, m->v1);
    if (!s) s = load_doubles(ctx, f, "inv_mu", K * D, m->inv_mu);
    if (!s) s = load_doubles(ctx, f, "inv_b", K * d, m->inv_b);
    if (!s) s = load_doubles(ctx, f, "inv_pinv", K * D * d, m->inv_pinv);
    if (!s) s = load_doubles(ctx, f, "inv_prec", K * d * d, m->inv_prec);
    if (!s) s = load_doubles(ctx, f, "inv_logdet", K, m->inv_logdet);
  }
  *out = m;
  return s;
}

static void free_model(void *model) {
  nle_kem_model *m = model;
  nle_kem_model_free(&m);
}

const nle__model_kind nle__kem_model_kind = {"kem-model", false, NULL, write_model, read_model, free_model, NULL, NULL};

nle_status nle_kem_model_save(nle_ctx *ctx, const nle_kem_model *m, const char *path) {
  if (!m || !path) return nle__fail(ctx, NLE_ERR_ARG, "kem model save: NULL argument");
  return nle__model_save(ctx, &nle__kem_model_kind, m, path, true);
}

NLE__MODEL_LOAD_FN(nle_kem_model_load, nle_kem_model, nle__kem_model_kind, "kem model load")
