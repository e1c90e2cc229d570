/* model.c — objective and gradient of the nonlinear-embedding models
 * (dissertation sec. 3.2; EE paper eq. 5): attraction over the sparse W+,
 * repulsion over all pairs (the exact engine: blocked rows, OpenMP, per-row
 * results summed in index order so the value does not depend on threads).
 * With a kernel K(d^2): -log K and -K'/K for the attraction, K and K' for the
 * repulsion; Gaussian K = exp(-d^2) (-log K = d^2, K' = -K), Student-t
 * K = 1 / (1 + d^2) (-log K = log(1 + d^2), K' = -K^2). */
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/vecmath.h"


enum { REP_BLOCK = 64, LOCALITY_MIN_POINTS = 20000 };
static const double EXP_FLOOR = 700.0;

/* The models' names: here with the models, which the recipe (embed_recipe.c)
 * and the trained model's file (trained.c) both read, so neither calls the other back. */
NLE__ENUM_NAMES(nle_model_name, nle_model_parse, nle_model_kind, NLE_MODEL_MAP, NLE_MODEL_COUNT, false)

/* Same structure and values, bit for bit. */
static int csr_equal(const nle_csr *a, const nle_csr *b) {
  if (a->rows != b->rows || a->nnz != b->nnz || a->dtype != b->dtype) return 0;
  if (memcmp(a->rowptr, b->rowptr, (size_t)(a->rows + 1) * sizeof(int64_t))) return 0;
  if (memcmp(a->colind, b->colind, (size_t)a->nnz * sizeof(int32_t))) return 0;
  return !memcmp(a->val, b->val, (size_t)a->nnz * (a->dtype == NLE_F32 ? sizeof(float) : sizeof(double)));
}

nle_status nle__centre_features(nle_ctx *ctx, const nle_matf *F, double **centred, double **sq_norms) {
  size_t n = F->rows, nf = F->cols;
  if (centred) *centred = nle__malloc(ctx, n * nf * sizeof(double), "W- features");
  *sq_norms = nle__malloc(ctx, n * sizeof(double), "W- features");
  double *mean = nle__calloc(ctx, nf, sizeof(double), "W- features");
  if ((centred && !*centred) || !*sq_norms || !mean) {
    free(mean);
    if (centred) free(*centred), *centred = NULL;
    free(*sq_norms), *sq_norms = NULL;
    return NLE_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < nf; c++) mean[c] += F->data[i * nf + c];
  for (size_t c = 0; c < nf; c++) mean[c] /= (double)n;
  for (size_t i = 0; i < n; i++) {
    double a = 0.0;
    for (size_t c = 0; c < nf; c++) {
      double f = (double)F->data[i * nf + c] - mean[c];
      if (centred) (*centred)[i * nf + c] = f;
      a += f * f;
    }
    (*sq_norms)[i] = a;
  }
  free(mean);
  return NLE_OK;
}

void nle_model_spec_init(nle_model_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->kind = NLE_MODEL_TSNE;
  spec->lambda = 1.0;
  spec->wneg = NLE_WNEG_UNIFORM;
  spec->engine = NLE_REPULSION_EXACT;
  spec->theta = 0.5;
  nle_fft_opts_init(&spec->fft);
  nle_fgt_opts_init(&spec->fgt);
}

nle_status nle_model_new(nle_ctx *ctx, const nle_model_spec *spec, nle_model **model) {
  *model = NULL;
  const nle_csr *W = spec->Wp;
  /* distributed: this rank's rows of W+, global columns (model_dist.c) */
  int distributed = nle__distributed(ctx);
  if (!W || (!distributed && (W->rows != W->cols || W->rows < 2)))
    return nle__fail(ctx, NLE_ERR_ARG, "model: W+ must be a square matrix of at least 2 points");
  if (distributed && (spec->kind == NLE_MODEL_EE || spec->kind == NLE_MODEL_TEE) && spec->wneg != NLE_WNEG_UNIFORM)
    return nle__fail(ctx, NLE_ERR_ARG, "model: a distributed run takes uniform W- ({@wneg=uniform}); W- of squared "
                     "distances or of the kNN graph is not distributed");
  if (!(spec->lambda > 0.0) || !isfinite(spec->lambda))
    return nle__fail(ctx, NLE_ERR_ARG, "model: {@lambda=%g} must be positive and finite", spec->lambda);
  if ((unsigned)spec->kind >= NLE_MODEL_COUNT) return nle__fail(ctx, NLE_ERR_ARG, "model: unknown kind %d", spec->kind);
  nle_status bad = NLE_OK;
  for (int64_t q = 0; !bad && q < W->nnz; q++) {
    double w = nle_csr_value(W, q);
    if (!(w >= 0.0) || !isfinite(w))
      bad = nle__fail(ctx, NLE_ERR_VALUE, "model: W+ entry %lld is %g; weights must be finite and >= 0", (long long)q, w);
  }
  if (distributed) bad = nle__comm_agree(ctx, bad); /* before any rank waits in the transpose */
  if (bad) return bad;
  int unnormalised = spec->kind == NLE_MODEL_EE || spec->kind == NLE_MODEL_TEE;
  const nle_matd *Wd = spec->Wneg_dense;
  const nle_matf *Ft = spec->Wneg_features;
  int sq_dense = Wd && Wd->rows == (size_t)W->rows && Wd->cols == (size_t)W->rows;
  int sq_feat = !Wd && Ft && Ft->rows == (size_t)W->rows && Ft->cols >= 1;
  if (unnormalised && spec->wneg == NLE_WNEG_SQDIST && !sq_dense && !sq_feat)
    return nle__fail(ctx, NLE_ERR_ARG, "model: W- of squared distances needs the dense N x N matrix or N rows of "
                     "features (one of the two)");
  for (size_t i = 0; unnormalised && spec->wneg == NLE_WNEG_SQDIST && sq_feat && i < Ft->rows * Ft->cols; i++)
    if (!isfinite(Ft->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "model: W- feature [%zu, %zu] is not finite", i / Ft->cols, i % Ft->cols);
  if (unnormalised && spec->wneg == NLE_WNEG_KNN && (!spec->Wneg_sparse || spec->Wneg_sparse->rows != W->rows))
    return nle__fail(ctx, NLE_ERR_ARG, "model: sparse W- needs its N x N matrix");
  if (!(spec->theta > 0) || !isfinite(spec->theta))
    return nle__fail(ctx, NLE_ERR_ARG, "model: {@theta=%g} must be positive (nle_model_spec_init sets 0.5)", spec->theta);
  if (spec->fft.order < 1 || spec->fft.order > 12 || spec->fgt.order < 1 || spec->fgt.order > 12)
    return nle__fail(ctx, NLE_ERR_ARG, "model: FFT order %d and FGT order %d must be in 1..12 (nle_model_spec_init "
                     "sets the defaults)", spec->fft.order, spec->fgt.order);
  nle_status checked = nle__model_check_engine(ctx, spec->kind, spec->wneg, spec->engine, sq_feat != 0, 0);
  if (checked) return checked;
  nle_model *m = nle__calloc(ctx, 1, sizeof *m, "the model");
  if (!m) return NLE_ERR_NOMEM;
  m->spec = *spec;
  m->engine = nle__engine_find(spec->engine);
  if (m->engine->attach && m->engine->attach(ctx, m)) {
    const char *title = m->engine->title;
    nle_model_free(&m);
    return nle__fail(ctx, NLE_ERR_NOMEM, "model: out of memory for the %s engine", title);
  }
  m->exaggeration = 1.0;
  m->accuracy = 1.0;
  m->locality_min = LOCALITY_MIN_POINTS;
  m->n = W->rows;
  m->student = spec->kind == NLE_MODEL_TSNE || spec->kind == NLE_MODEL_TEE;
  m->normalised = spec->kind == NLE_MODEL_SSNE || spec->kind == NLE_MODEL_TSNE;
  m->row1 = (size_t)m->n;
  nle_status s = distributed ? nle__model_dist_attach(ctx, m) : nle_csr_transpose(ctx, W, &m->WpT);
  if (!s && !distributed && csr_equal(W, m->WpT)) nle_csr_free(&m->WpT);
  if (!s && unnormalised && spec->wneg == NLE_WNEG_SQDIST && sq_feat) {
    m->spec.Wneg_dense = NULL;
    m->nf = Ft->cols;
    s = nle__centre_features(ctx, Ft, &m->feat, &m->feat_sq);
  }
  for (int64_t i = 0; !s && i < W->rows; i++) {
    size_t a = (size_t)(W->rowptr[i + 1] - W->rowptr[i]);
    size_t b = m->WpT ? (size_t)(m->WpT->rowptr[i + 1] - m->WpT->rowptr[i]) : 0;
    m->max_row = a > m->max_row ? a : m->max_row;
    m->max_row = b > m->max_row ? b : m->max_row;
  }
  if (s) {
    nle_model_free(&m);
    return s;
  }
  *model = m;
  return NLE_OK;
}

void nle_model_free(nle_model **model) {
  if (!model || !*model) return;
  nle_csr_free(&(*model)->WpT);
  nle_csr_free(&(*model)->Wp_local);
  nle_csr_free(&(*model)->WpT_local);
  free((*model)->order);
  free((*model)->row_e);
  free((*model)->force);
  free((*model)->inv_z);
  free((*model)->centred);
  free((*model)->curv_inv_z);
  free((*model)->last_x);
  free((*model)->map);
  free((*model)->gathered);
  if ((*model)->engine && (*model)->engine->detach) (*model)->engine->detach(*model);
  free((*model)->feat);
  free((*model)->feat_sq);
  free(*model);
  *model = NULL;
}

static inline double sqdist_rows(const double *a, const double *b, size_t d) {
  double s = 0.0;
  for (size_t t = 0; t < d; t++) {
    double u = a[t] - b[t];
    s += u * u;
  }
  return s;
}

/* One d = 2 row: the squared distances into d2 and the gradient's
 * sum_q 2 w_q K_q^(Student-t: 1) (x_n - x_m) into g0, g1, summed in
 * NLE__LANES fixed lanes (term q in lane q % NLE__LANES, the same sums in
 * every clone) for W+ in its own precision. A full group of lanes is one
 * vector: its x_m gathered, then the arithmetic on all eight at once (as
 * one loop over lanes GCC left it scalar, each term's load chained into its
 * divide: 15 ms an evaluation at 70,000 points). */
typedef double attract_lanes __attribute__((vector_size(NLE__LANES * sizeof(double))));
#define ATTRACT_TERM_2D(WVAL, STUDENT, q, lane)                                                                \
  do {                                                                                                        \
    size_t c = (size_t)col[q];                                                                                \
    double a = x0 - xs[2 * c], b = x1 - xs[2 * c + 1], r = a * a + b * b;                                     \
    double k = 2.0 * (double)(WVAL)[q] / ((STUDENT) ? 1.0 + r : 1.0);                                         \
    d2[q] = r;                                                                                                \
    l0[lane] += k * a;                                                                                        \
    l1[lane] += k * b;                                                                                        \
  } while (0)
#define ATTRACT_ROW_2D(WVAL, STUDENT)                                                                         \
  do {                                                                                                        \
    size_t q = 0;                                                                                             \
    attract_lanes v0 = {0}, v1 = {0};                                                                         \
    for (; q + NLE__LANES <= len; q += NLE__LANES) {                                                          \
      attract_lanes xa, xb, w;                                                                                \
      for (size_t l = 0; l < NLE__LANES; l++) {                                                               \
        size_t c = (size_t)col[q + l];                                                                        \
        xa[l] = xs[2 * c];                                                                                    \
        xb[l] = xs[2 * c + 1];                                                                                \
        w[l] = (double)(WVAL)[q + l];                                                                         \
      }                                                                                                       \
      attract_lanes a = x0 - xa, b = x1 - xb, r = a * a + b * b;                                              \
      attract_lanes k = (STUDENT) ? 2.0 * w / (1.0 + r) : 2.0 * w;                                      \
      memcpy(d2 + q, &r, sizeof r);                                                                           \
      v0 += k * a;                                                                                            \
      v1 += k * b;                                                                                            \
    }                                                                                                         \
    memcpy(l0, &v0, sizeof v0);                                                                               \
    memcpy(l1, &v1, sizeof v1);                                                                               \
    for (size_t l = 0; q + l < len; l++) ATTRACT_TERM_2D(WVAL, STUDENT, q + l, l);                            \
  } while (0)

/* sum_q w_q (-log K_q) of a row from its squared distances. Not inlined
 * into attract_row's clones: there the log1p loop took each instruction
 * set's libmvec log1p, and the energy differed in the last bits between
 * CPUs; here it is the one portable build's. */
__attribute__((noinline)) static double attract_energy(const nle_model *m, const float *wf, const double *wd,
                                                       double *d2, size_t len) {
  double e = 0.0;
  /* log1p in a loop of its own: with float weights in the same loop it
   * stayed scalar (0.5 s of 20 in t-SNE of 70,000 points, at one energy
   * every 25 iterations). */
  if (m->student)
    for (size_t q = 0; q < len; q++) d2[q] = log1p(d2[q]);
  for (size_t q = 0; q < len; q++) e += (wf ? (double)wf[q] : wd[q]) * d2[q];
  return e;
}

/* Row n's attraction over the entries of W (row n of W+ or of its
 * transpose): returns sum_m w_nm (-log K_nm) (unless the energy is skipped)
 * and adds sum_m 2 w_nm K_nm^(t-SNE: 1) (x_n - x_m) to g. The squared
 * distances are kept in `d2` (the row's length), so that log1p then runs
 * vectorised over them. W's values are read in their own precision (float
 * affinities are not copied to double: at 70,000 points that is 80 MB less
 * to stream per gradient). */
NLE_HOT static double attract_row(const nle_model *m, const nle_csr *W, const nle_matd *X, int64_t n, size_t xrow,
                                  double *g, double *d2) {
  size_t d = X->cols, len = (size_t)(W->rowptr[n + 1] - W->rowptr[n]);
  const double *xn = X->data + xrow * d; /* row n of W is point xrow of the map */
  const int32_t *col = W->colind + W->rowptr[n];
  const float *wf = W->dtype == NLE_F32 ? (const float *)W->val + W->rowptr[n] : NULL;
  const double *wd = W->dtype == NLE_F32 ? NULL : (const double *)W->val + W->rowptr[n];
  if (d == 2) {
    const double x0 = xn[0], x1 = xn[1], *xs = X->data;
    double l0[NLE__LANES] = {0}, l1[NLE__LANES] = {0};
    if (wf && m->student) ATTRACT_ROW_2D(wf, 1);
    else if (wf) ATTRACT_ROW_2D(wf, 0);
    else if (m->student) ATTRACT_ROW_2D(wd, 1);
    else ATTRACT_ROW_2D(wd, 0);
    g[0] += nle__lanes_total(l0);
    g[1] += nle__lanes_total(l1);
  } else {
    for (size_t q = 0; q < len; q++) {
      const double *xm = X->data + (size_t)col[q] * d;
      double w = wf ? (double)wf[q] : wd[q];
      double r = sqdist_rows(xn, xm, d), c = 2.0 * w * (m->student ? 1.0 / (1.0 + r) : 1.0);
      d2[q] = r;
      for (size_t t = 0; t < d; t++) g[t] += c * (xn[t] - xm[t]);
    }
  }
  return m->skip_energy ? 0.0 : attract_energy(m, wf, wd, d2, len);
}

typedef struct {
  const nle_model *m;
  const nle_matd *X;
  const nle_csr *Wp, *WpT; /* W+ and its transpose (NULL: W+ symmetric) in X's order */
  const int32_t *order; /* row n of X is point order[n] of g (NULL: n) */
  double *g;           /* N x d, or NULL */
  const double *force; /* repulsive forces, in X's order */
  double scale;        /* on the forces */
  double *e_block;     /* per block: its rows' attractive energy */
  size_t row0;         /* the map's row of W's row 0 (distributed: this rank's first) */
} attract_job;

enum { ATTRACT_BLOCK = 512 };

/* Attraction and the total gradient for a block of rows; the energies are
 * summed per block and the blocks in index order afterwards, so the result
 * does not depend on the number of threads. */
static int attract_block(void *job, size_t b, void *scratch) {
  const attract_job *j = job;
  const nle_model *m = j->m;
  size_t N = (size_t)j->Wp->rows, d = j->X->cols, n1 = (b + 1) * ATTRACT_BLOCK < N ? (b + 1) * ATTRACT_BLOCK : N;
  double *d2 = scratch, *tmp = d2 + m->max_row, e = 0.0;
  for (size_t n = b * ATTRACT_BLOCK; n < n1; n++) {
    double *gn = j->g ? j->g + (j->order ? (size_t)j->order[n] : n) * d : tmp;
    size_t x = j->row0 + n;
    memset(gn, 0, d * sizeof(double));
    e += attract_row(m, j->Wp, j->X, (int64_t)n, x, gn, d2);
    if (j->WpT) /* the m-n half of each pair */
      attract_row(m, j->WpT, j->X, (int64_t)n, x, gn, d2);
    double twice = j->WpT ? 1.0 : 2.0;
    for (size_t t = 0; t < d; t++) gn[t] = twice * m->exaggeration * gn[t] + j->scale * j->force[x * d + t];
  }
  j->e_block[b] = e;
  return 0;
}

typedef struct {
  const nle_model *m;
  const nle_matd *X;
  double *row_e;   /* per row: repulsive energy part (or Z_n) */
  double *force;   /* per row: sum over m of weight * K' * (x_n - x_m), N x d */
  const double *inv_z; /* SNE second pass: 1 / Z_n, else NULL */
  double exp_floor;    /* largest argument given to the vector exp */
  size_t block0;       /* the first block's place (distributed: this rank's rows) */
} rep_job;

/* All-pairs repulsion of a block of rows. For the unnormalised models
 * row_e = sum w- K and force = sum w- K' (x_n - x_m); for s-SNE/t-SNE the
 * same with w- = 1 (row_e is then row n's share of Z); for SNE the first
 * pass gives Z_n, the second force = sum (1/Z_n + 1/Z_m) K' (x_n - x_m). */
static int rep_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const rep_job *j = job;
  const nle_model *m = j->m;
  const nle_matd *X = j->X;
  size_t d = X->cols, N = X->rows;
  const nle_matd *Wd = m->spec.wneg == NLE_WNEG_SQDIST ? m->spec.Wneg_dense : NULL;
  int uniform = m->normalised || m->spec.kind == NLE_MODEL_SNE || m->spec.wneg == NLE_WNEG_UNIFORM;
  const double *feat = !uniform && m->spec.wneg == NLE_WNEG_SQDIST ? m->feat : NULL;
  b += j->block0;
  size_t nf = m->nf, n1 = (b + 1) * REP_BLOCK < N ? (b + 1) * REP_BLOCK : N;
  for (size_t n = b * REP_BLOCK; n < n1; n++) {
    const double *xn = X->data + n * d;
    double *f = j->force + n * d, e = 0.0;
    memset(f, 0, d * sizeof(double));
    if (!uniform && !Wd && !feat) { /* sparse W-: only its pairs */
      const nle_csr *Ws = m->spec.Wneg_sparse;
      for (int64_t q = Ws->rowptr[n]; q < Ws->rowptr[n + 1]; q++) {
        size_t mm = (size_t)Ws->colind[q];
        if (mm == n) continue;
        const double *xm = X->data + mm * d;
        double d2 = sqdist_rows(xn, xm, d), k = m->student ? 1.0 / (1.0 + d2) : exp(-d2);
        double w = nle_csr_value(Ws, q), kp = m->student ? -k * k : -k;
        e += w * k;
        for (size_t t = 0; t < d; t++) f[t] += w * kp * (xn[t] - xm[t]);
      }
      j->row_e[n] = e;
      continue;
    }
    if (d == 2 && uniform && !Wd && !j->inv_z) {
      /* The common case as one SIMD loop over all m; the pair m = n adds
       * K(0) = 1 to the sum and nothing to the force, so it is taken out
       * afterwards instead of branched around. */
      double x0 = xn[0], x1 = xn[1], f0 = 0.0, f1 = 0.0;
      const double *xs = X->data;
      if (m->student) {
#pragma omp simd reduction(+ : e, f0, f1)
        for (size_t mm = 0; mm < N; mm++) {
          double u0 = x0 - xs[2 * mm], u1 = x1 - xs[2 * mm + 1], k = 1.0 / (1.0 + u0 * u0 + u1 * u1);
          e += k;
          f0 -= k * k * u0;
          f1 -= k * k * u1;
        }
      } else {
        /* exp(-700) = 1e-304 stands in for anything smaller: the vector exp
         * takes a slow scalar path for arguments beyond underflow, which made
         * a spread-out EE 10x dearer; the change is below 1e-300 relative.
         * The bound is read from the job, not written as a constant, or GCC
         * turns exp(min(a, C)) back into a < C ? exp(a) : exp(C). */
        const double floor_arg = j->exp_floor;
#pragma omp simd reduction(+ : e, f0, f1)
        for (size_t mm = 0; mm < N; mm++) {
          double u0 = x0 - xs[2 * mm], u1 = x1 - xs[2 * mm + 1], a = u0 * u0 + u1 * u1;
          double k = exp(-(a < floor_arg ? a : floor_arg));
          e += k;
          f0 -= k * u0;
          f1 -= k * u1;
        }
      }
      f[0] = f0;
      f[1] = f1;
      j->row_e[n] = e - 1.0;
      continue;
    }
    if (d == 2 && Wd && !j->inv_z) {
      /* Dense W- (squared distances) as one SIMD loop over the row of W-;
       * the pair m = n adds w_nn K(0) = w_nn to the sum (0 for distances)
       * and nothing to the force, so it is taken out afterwards. */
      double x0 = xn[0], x1 = xn[1], f0 = 0.0, f1 = 0.0;
      const double *xs = X->data, *wrow = Wd->data + n * N;
      if (m->student) {
#pragma omp simd reduction(+ : e, f0, f1)
        for (size_t mm = 0; mm < N; mm++) {
          double u0 = x0 - xs[2 * mm], u1 = x1 - xs[2 * mm + 1], k = 1.0 / (1.0 + u0 * u0 + u1 * u1);
          double wk = wrow[mm] * k;
          e += wk;
          f0 -= wk * k * u0;
          f1 -= wk * k * u1;
        }
      } else {
        const double floor_arg = j->exp_floor;
#pragma omp simd reduction(+ : e, f0, f1)
        for (size_t mm = 0; mm < N; mm++) {
          double u0 = x0 - xs[2 * mm], u1 = x1 - xs[2 * mm + 1], a = u0 * u0 + u1 * u1;
          double wk = wrow[mm] * exp(-(a < floor_arg ? a : floor_arg));
          e += wk;
          f0 -= wk * u0;
          f1 -= wk * u1;
        }
      }
      f[0] = f0;
      f[1] = f1;
      j->row_e[n] = e - wrow[n];
      continue;
    }
    for (size_t mm = 0; mm < N; mm++) {
      if (mm == n) continue;
      const double *xm = X->data + mm * d;
      double d2 = sqdist_rows(xn, xm, d), k = m->student ? 1.0 / (1.0 + d2) : exp(-d2);
      double w = Wd ? Wd->data[n * N + mm] : feat ? sqdist_rows(feat + n * nf, feat + mm * nf, nf) : 1.0;
      double kp = m->student ? -k * k : -k;
      if (j->inv_z) w = j->inv_z[n] + j->inv_z[mm];
      e += w * k;
      for (size_t t = 0; t < d; t++) f[t] += w * kp * (xn[t] - xm[t]);
    }
    j->row_e[n] = e;
  }
  return 0;
}

/* All pairs (blocked, OpenMP; per-row results, so no dependence on threads). */
nle_status nle__exact_repulsion(nle_ctx *ctx, nle_model *m, const nle_matd *X) {
  size_t N = X->rows;
  rep_job job = {m, X, m->row_e, m->force, NULL, EXP_FLOOR, 0};
  return nle__for_blocks(ctx, "repulsion", (N + REP_BLOCK - 1) / REP_BLOCK,
                         nle__threads_for(ctx, (double)N * (double)N * (double)(X->cols + 10)), 0, rep_block, &job);
}

/* The exact forces come in equal and opposite pairs and sum to zero; the
 * approximate ones do not quite, and SD's direction (L+ + mu I)^-1 g
 * amplifies a mean of g by 1/mu into a drift of the whole map. Newton's
 * third law restored: */
void nle__remove_mean_force(double *force, size_t N, size_t d) {
  double mean[3] = {0, 0, 0};
  for (size_t n = 0; n < N; n++)
    for (size_t t = 0; t < d; t++) mean[t] += force[n * d + t];
  for (size_t n = 0; n < N; n++)
    for (size_t t = 0; t < d; t++) force[n * d + t] -= mean[t] / (double)N;
}

/* The engines' sums for X about its centroid, in the locality order when
 * `order` is given (the sums and forces are then in that order too). */
static nle_status fast_repulsion(nle_ctx *ctx, nle_model *m, const nle_matd *Xin, const int32_t *order) {
  size_t N = Xin->rows, d = Xin->cols;
  /* The sums run on X about its centroid: S^x and x_n S_n then stay of the
   * size of the map however far it has drifted (the FFT grid holds single
   * precision values). */
  double centre[3] = {0, 0, 0};
  for (size_t n = 0; n < N; n++)
    for (size_t t = 0; t < d; t++) centre[t] += Xin->data[n * d + t];
  nle_matd Xc = {N, d, m->centred};
  double *out = m->centred;
  const double *in = Xin->data;
#pragma omp parallel for schedule(static) num_threads(nle__threads_for(ctx, 4.0 * (double)N * (double)d))
  for (size_t n = 0; n < N; n++) {
    size_t from = order ? (size_t)order[n] : n;
    for (size_t t = 0; t < d; t++) out[n * d + t] = in[from * d + t] - centre[t] / (double)N;
  }
  return m->engine->forces(ctx, m, &Xc, m->accuracy);
}

/* The evaluation work space, allocated once per embedding dimension. */
static nle_status workspace(nle_ctx *ctx, nle_model *m, size_t d) {
  if (m->row_e && m->ws_dim == d) return NLE_OK;
  size_t n = (size_t)m->n;
  free(m->row_e);
  free(m->force);
  free(m->inv_z);
  free(m->centred);
  m->row_e = nle__malloc(ctx, n * sizeof(double), "row energies");
  m->force = nle__malloc(ctx, n * d * sizeof(double), "repulsive forces");
  m->inv_z = nle__malloc(ctx, n * sizeof(double), "normalisers");
  m->centred = m->spec.engine != NLE_REPULSION_EXACT ? nle__malloc(ctx, n * d * sizeof(double), "centred X") : NULL;
  m->ws_dim = d;
  if (m->distributed) {
    free(m->map);
    free(m->gathered);
    m->map = nle__malloc(ctx, n * d * sizeof(double), "the gathered map");
    m->gathered = nle__malloc(ctx, n * sizeof(double), "gathered row sums");
    if (!m->map || !m->gathered) {
      free(m->row_e);
      m->row_e = NULL; /* allocated again at the next call */
      return NLE_ERR_NOMEM;
    }
  }
  if (m->row_e && m->force && m->inv_z && (m->centred || m->spec.engine == NLE_REPULSION_EXACT)) return NLE_OK;
  free(m->row_e);
  free(m->force);
  free(m->inv_z);
  free(m->centred);
  m->row_e = m->force = m->inv_z = m->centred = NULL;
  return NLE_ERR_NOMEM;
}

static nle_status locality_order(nle_ctx *ctx, nle_model *m) {
  /* without WpT, W+ is symmetric: its own transpose */
  nle_status s = nle__csr_locality_order(ctx, m->spec.Wp, m->WpT ? m->WpT : m->spec.Wp, &m->order);
  int single = m->engine->single_precision;
  if (!s) s = nle__csr_permute(ctx, m->spec.Wp, m->order, single ? NLE_F32 : m->spec.Wp->dtype, &m->Wp_local);
  if (!s && m->WpT)
    s = nle__csr_permute(ctx, m->WpT, m->order, single ? NLE_F32 : m->WpT->dtype, &m->WpT_local);
  if (s) {
    free(m->order);
    m->order = NULL;
    nle_csr_free(&m->Wp_local);
  }
  return s;
}

void nle__model_set_locality_min(nle_model *m, int64_t points) { m->locality_min = points; }

void nle__model_log_times(nle_ctx *ctx, const nle_model *m, double total) {
  if (!m || m->evaluations < 1) return;
  double per = 1e3 / (double)m->evaluations;
  nle__log(ctx, 2, "optimisation: %lld evaluations, repulsion %.2f s (%.1f ms each), attraction %.2f s (%.1f ms each), "
           "the rest %.2f s", (long long)m->evaluations, m->seconds_repulsion, per * m->seconds_repulsion,
           m->seconds_attraction, per * m->seconds_attraction, total - m->seconds_repulsion - m->seconds_attraction);
}

/* The checks of X and G, agreed between ranks, and the work space. */
static nle_status eval_begin(nle_ctx *ctx, nle_model *m, const nle_matd *X, const nle_matd *G) {
  size_t rows = m->row1 - m->row0, d = X->cols;
  nle_status s = NLE_OK;
  if (X->rows != rows || d < 1)
    s = m->distributed ? nle__fail(ctx, NLE_ERR_ARG, "model: X has %zu rows where this rank holds %zu of the %lld points",
                                   X->rows, rows, (long long)m->n)
                       : nle__fail(ctx, NLE_ERR_ARG, "model: X has %zu rows for a model of %lld points", X->rows,
                                   (long long)m->n);
  else if (G && (G->rows != rows || G->cols != d))
    s = nle__fail(ctx, NLE_ERR_ARG, "model: the gradient must be %zu x %zu", rows, d);
  for (size_t i = 0; !s && i < rows * d; i++)
    if (!isfinite(X->data[i]))
      s = nle__fail(ctx, NLE_ERR_VALUE, "model: X[%zu, %zu] is not finite", m->row0 + i / d, i % d);
  if (!s) s = workspace(ctx, m, d);
  if (m->distributed) s = nle__comm_agree(ctx, s);
  if (!s && m->distributed) s = nle__model_dist_map(ctx, m, X);
  return s;
}

/* The repulsion over the whole map Xmap: a fast engine's sums (on every
 * rank alike), or the exact per-row sums of this rank's rows, their row
 * sums then gathered (Z and SNE's Z_n read every row); E's repulsive part
 * into *e_rep and Z into *z. */
static nle_status repulsion(nle_ctx *ctx, nle_model *m, const nle_matd *Xmap, int fast, const int32_t *order, bool grad,
                            double *e_rep, double *z) {
  size_t N = Xmap->rows, d = Xmap->cols;
  double *row_e = m->row_e, *inv_z = m->inv_z;
  rep_job job = {m, Xmap, row_e, m->force, NULL, EXP_FLOOR, m->row0 / REP_BLOCK};
  size_t nblocks = (m->row1 - m->row0 + REP_BLOCK - 1) / REP_BLOCK;
  int threads = nle__threads_for(ctx, (double)N * (double)(m->row1 - m->row0) * (double)(d + 10));
  m->fast_z_only = 0;
  nle_status s = fast ? fast_repulsion(ctx, m, Xmap, order)
                      : nle__for_blocks(ctx, "repulsion", nblocks, threads, 0, rep_block, &job);
  if (m->distributed) s = nle__comm_agree(ctx, s);
  if (!s && m->distributed && !fast) s = nle__model_dist_rows(ctx, m, row_e);
  double lambda = m->spec.lambda;
  *e_rep = *z = 0.0;
  if (!s && m->spec.kind == NLE_MODEL_SNE) {
    /* Per-point normalisers: E_rep = lambda sum_n log Z_n, and the forces
     * weighted by 1/Z_n + 1/Z_m in a second pass. */
    for (size_t n = 0; n < N; n++) {
      *e_rep += log(row_e[n]);
      inv_z[n] = 1.0 / row_e[n];
    }
    job.inv_z = inv_z;
    if (grad) s = nle__for_blocks(ctx, "repulsion", nblocks, threads, 0, rep_block, &job);
    if (m->distributed) s = nle__comm_agree(ctx, s);
    *e_rep *= lambda;
  } else if (!s) {
    if (m->fast_z_only) *z = m->fast_z;
    else
      for (size_t n = 0; n < N; n++) *z += row_e[n];
    *e_rep = m->normalised ? lambda * log(*z) : lambda * *z;
  }
  return s;
}

nle_status nle_model_eval(nle_ctx *ctx, nle_model *m, const nle_matd *X, double *E, nle_matd *G) {
  nle_status s = eval_begin(ctx, m, X, G);
  if (s) return s;
  size_t N = (size_t)m->n, d = X->cols, rows = m->row1 - m->row0;
  nle_matd Xmap = {N, d, m->distributed ? m->map : X->data};
  int fast = m->engine->forces && (m->engine->max_dim == 0 || d <= (size_t)m->engine->max_dim);
  /* The locality order renumbers all points: a single process's alone. */
  int local = fast && !m->feat && m->n >= m->locality_min && !m->distributed;
  if (local && !m->order) s = locality_order(ctx, m);
  if (s) return s;
  double t_rep = nle_time_seconds(), lambda = m->spec.lambda, e_rep = 0.0, z = 0.0;
  s = repulsion(ctx, m, &Xmap, fast, local ? m->order : NULL, G != NULL, &e_rep, &z);
  double t_att = nle_time_seconds();
  m->seconds_repulsion += t_att - t_rep;
  if (!s) {
    /* Attraction (sparse) over this rank's rows, and the total. */
    double scale = m->spec.kind == NLE_MODEL_SNE ? 2.0 * lambda : m->normalised ? 4.0 * lambda / z : 4.0 * lambda;
    size_t ablocks = (rows + ATTRACT_BLOCK - 1) / ATTRACT_BLOCK;
    double *e_block = nle__malloc(ctx, (ablocks ? ablocks : 1) * sizeof(double), "attraction sums");
    nle_matd Xl = {N, d, m->centred};
    attract_job aj = {m, local ? &Xl : &Xmap, local ? m->Wp_local : m->spec.Wp, local ? m->WpT_local : m->WpT,
                      local ? m->order : NULL, G ? G->data : NULL, m->force, scale, e_block, m->row0};
    int64_t nnz = m->spec.Wp->nnz;
    s = e_block ? nle__for_blocks(ctx, "attraction", ablocks, nle__threads_for(ctx, (double)nnz * 40.0),
                                  (m->max_row + d) * sizeof(double), attract_block, &aj)
                : NLE_ERR_NOMEM;
    if (m->distributed) s = nle__comm_agree(ctx, s);
    /* the blocks' energies added in block order: the same bits for any
     * number of threads or ranks */
    double e_att = 0.0;
    if (!s && !m->skip_energy) s = nle__dist_ordered_sum(ctx, e_block, ablocks, &e_att);
    free(e_block);
    if (!s) *E = m->skip_energy ? NAN : m->exaggeration * e_att + e_rep;
  }
  m->seconds_attraction += nle_time_seconds() - t_att;
  m->evaluations++;
  m->last_valid = 0;
  if (!s && m->last_x && m->last_dim == d && !m->distributed) {
    memcpy(m->last_x, X->data, N * d * sizeof(double));
    m->last_z = z;
    m->last_valid = 1;
  }
  return s;
}

nle_status nle_model_set_lambda(nle_ctx *ctx, nle_model *m, double lambda) {
  if (!(lambda > 0.0) || !isfinite(lambda))
    return nle__fail(ctx, NLE_ERR_ARG, "model: {@lambda=%g} must be positive and finite", lambda);
  m->spec.lambda = lambda;
  return NLE_OK;
}

double nle_model_lambda(const nle_model *m) { return m->spec.lambda; }

nle_status nle_model_set_accuracy(nle_ctx *ctx, nle_model *m, double t) {
  if (!(t >= 0.0 && t <= 1.0)) return nle__fail(ctx, NLE_ERR_ARG, "model: accuracy %g must be in [0, 1]", t);
  m->accuracy = t;
  return NLE_OK;
}

double nle_model_accuracy(const nle_model *m) { return m->accuracy; }

nle_repulsion nle_model_engine(const nle_model *m) { return m->spec.engine; }

void nle__model_want_energy(nle_model *m, int want) { m->skip_energy = !want; }

nle_status nle_model_set_exaggeration(nle_ctx *ctx, nle_model *m, double alpha) {
  if (!(alpha >= 1.0) || !isfinite(alpha))
    return nle__fail(ctx, NLE_ERR_ARG, "model: {@exaggeration=%g} must be >= 1 and finite", alpha);
  m->exaggeration = alpha;
  return NLE_OK;
}

/* ---- The psd diagonal blocks of the repulsive Hessian (SD-) ------------- */

/* Dissertation eqs. 3.3-3.4: the Hessian's 8 L^xx term, for i = j, has weights
 * r_nm (x_in - x_im)^2 whose psd parts are r = lambda w- K (EE), 2 lambda w-
 * K^3 (t-EE), lambda K / Z (s-SNE), 2 lambda K^3 / Z (t-SNE), and lambda K
 * (1/Z_n + 1/Z_m) / 2 for SNE's per-point normalisers. */
typedef struct {
  const nle_model *m;
  const nle_matd *X, *V;
  nle_matd *out;
} curv_job;

static inline double curvature_weight(const nle_model *m, size_t n, size_t j, double d2, double w) {
  double lambda = m->spec.lambda;
  if (m->student) {
    double k = 1.0 / (1.0 + d2);
    return 2.0 * lambda * w * k * k * k * (m->normalised ? m->curv_inv_z[0] : 1.0);
  }
  double k = exp(-d2);
  if (m->spec.kind == NLE_MODEL_SNE) return 0.5 * lambda * k * (m->curv_inv_z[n] + m->curv_inv_z[j]);
  return lambda * w * k * (m->normalised ? m->curv_inv_z[0] : 1.0);
}

static int curv_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const curv_job *c = job;
  const nle_model *m = c->m;
  size_t N = c->X->rows, d = c->X->cols, n1 = (b + 1) * REP_BLOCK < N ? (b + 1) * REP_BLOCK : N;
  int unnormalised = m->spec.kind == NLE_MODEL_EE || m->spec.kind == NLE_MODEL_TEE;
  const nle_matd *Wd = unnormalised && m->spec.wneg == NLE_WNEG_SQDIST ? m->spec.Wneg_dense : NULL;
  const double *feat = unnormalised && m->spec.wneg == NLE_WNEG_SQDIST ? m->feat : NULL;
  const nle_csr *Ws = unnormalised && m->spec.wneg == NLE_WNEG_KNN ? m->spec.Wneg_sparse : NULL;
  size_t nf = m->nf;
  for (size_t n = b * REP_BLOCK; n < n1; n++) {
    const double *xn = c->X->data + n * d, *vn = c->V->data + n * d;
    double *o = c->out->data + n * d;
    memset(o, 0, d * sizeof(double));
    int64_t q0 = Ws ? Ws->rowptr[n] : 0, q1 = Ws ? Ws->rowptr[n + 1] : (int64_t)N;
    for (int64_t q = q0; q < q1; q++) {
      size_t j = Ws ? (size_t)Ws->colind[q] : (size_t)q;
      if (j == n) continue;
      const double *xj = c->X->data + j * d, *vj = c->V->data + j * d;
      double w = Ws ? nle_csr_value(Ws, q)
                 : Wd ? Wd->data[n * N + j]
                 : feat ? sqdist_rows(feat + n * nf, feat + j * nf, nf)
                        : 1.0;
      double r = 8.0 * curvature_weight(m, n, j, sqdist_rows(xn, xj, d), w);
      for (size_t t = 0; t < d; t++) {
        double u = xn[t] - xj[t];
        o[t] += r * u * u * (vn[t] - vj[t]);
      }
    }
  }
  return 0;
}

nle_status nle__model_curvature_prepare(nle_ctx *ctx, nle_model *m, const nle_matd *X) {
  size_t N = X->rows;
  if (!m->curv_inv_z) {
    m->curv_inv_z = nle__malloc(ctx, N * sizeof(double), "normalisers");
    if (!m->curv_inv_z) return NLE_ERR_NOMEM;
  }
  if (!m->normalised && m->spec.kind != NLE_MODEL_SNE) return NLE_OK;
  size_t nd = N * X->cols;
  if (m->last_valid && m->last_dim == X->cols && !memcmp(m->last_x, X->data, nd * sizeof(double))) {
    /* The last evaluation was at this X: its Z (or its 1/Z_n) serve. */
    if (m->normalised) m->curv_inv_z[0] = 1.0 / m->last_z;
    else memcpy(m->curv_inv_z, m->inv_z, N * sizeof(double));
    return NLE_OK;
  }
  if (!m->last_x || m->last_dim != X->cols) {
    free(m->last_x);
    m->last_x = nle__malloc(ctx, nd * sizeof(double), "the last evaluated X");
    if (!m->last_x) return NLE_ERR_NOMEM;
    m->last_dim = X->cols;
  }
  /* Z (or the Z_n) at X, by one repulsion pass. */
  nle_status s = workspace(ctx, m, X->cols);
  if (s) return s;
  s = nle__exact_repulsion(ctx, m, X);
  if (s) return s;
  double z = 0.0;
  for (size_t n = 0; n < N; n++) {
    z += m->row_e[n];
    m->curv_inv_z[n] = 1.0 / m->row_e[n];
  }
  if (m->normalised) m->curv_inv_z[0] = 1.0 / z;
  return NLE_OK;
}

nle_status nle__model_curvature_apply(nle_ctx *ctx, nle_model *m, const nle_matd *X, const nle_matd *V, nle_matd *out) {
  size_t N = X->rows;
  curv_job job = {m, X, V, out};
  return nle__for_blocks(ctx, "curvature", (N + REP_BLOCK - 1) / REP_BLOCK,
                         nle__threads_for(ctx, (double)N * (double)N * (double)(X->cols + 10)), 0, curv_block, &job);
}
