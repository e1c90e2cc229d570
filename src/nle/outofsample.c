/* outofsample.c — out-of-sample maps (EE paper sec. 4.5, eq. 13): a new
 * point's projection minimises the training objective augmented with that
 * point, every training projection kept fixed; and, for EE, the reverse map
 * f(x) to data space. Each new point is a small problem, O(N d) per
 * evaluation, solved by the fixed-point diagonal direction (the attractive
 * Hessian, 4 sum_n a_n) with backtracking from the training projection of its
 * nearest training point. Points run in parallel and independently, so the
 * results do not depend on the number of threads.
 *
 * The augmented terms, with d_n = |x - x_n|^2, K the model's kernel and a_n
 * the new point's attractive weights in the scale of the training W+:
 *   EE, t-EE:     E' = 2 sum_n a_n (-log K_n) + 2 lambda sum_n w-_n K_n
 *   s-SNE, t-SNE: E' = 2 sum_n a_n (-log K_n) + lambda log(Z + 2 sum_n K_n)
 *   SNE:          E' = 2 sum_n a_n d_n + lambda (log sum_n K_n + sum_n log(z_n + K_n))
 * where Z = sum_nm K(|x_n - x_m|^2) and z_n its row sums at the training X. */
#include "oos_internal.h"
#include "../io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nle_oos_opts_init(nle_oos_opts *o) {
  o->lambda = 1.0;
  o->sigma = 1.0;
  o->wneg = NLE_WNEG_UNIFORM;
  o->max_iters = 200;
  o->grad_tol = 1e-10;
}


static double oos_energy(const oos_problem *p, const double *x, double *g) {
  size_t d = p->X->cols;
  int student = p->kind == NLE_MODEL_TSNE || p->kind == NLE_MODEL_TEE;
  double e = 0.0;
  if (g) memset(g, 0, d * sizeof(double));
  for (size_t t = 0; t < p->na; t++) {
    const double *xn = p->X->data + (p->a_idx ? (size_t)p->a_idx[t] : t) * d;
    double dn = 0.0;
    for (size_t c = 0; c < d; c++) dn += (x[c] - xn[c]) * (x[c] - xn[c]);
    double k = student ? 1.0 / (1.0 + dn) : 1.0;
    e += 2.0 * p->a[t] * (student ? log1p(dn) : dn);
    if (g)
      for (size_t c = 0; c < d; c++) g[c] += 4.0 * p->a[t] * k * (x[c] - xn[c]);
  }
  /* Repulsion: sum of w K and of w K' (x - x_n), scaled per model below. */
  double sum_k = 0.0, sum_log = 0.0, *gr = g ? g + d : NULL, *gs = g ? g + 2 * d : NULL;
  if (g) {
    memset(gr, 0, d * sizeof(double));
    memset(gs, 0, d * sizeof(double));
  }
  for (size_t t = 0; t < p->nr; t++) {
    size_t n = p->r_idx ? (size_t)p->r_idx[t] : t;
    const double *xn = p->X->data + n * d;
    double dn = 0.0;
    for (size_t c = 0; c < d; c++) dn += (x[c] - xn[c]) * (x[c] - xn[c]);
    double w = p->r_w ? p->r_w[t] : 1.0, k = student ? 1.0 / (1.0 + dn) : exp(-dn), kp = student ? -k * k : -k;
    sum_k += w * k;
    if (p->kind == NLE_MODEL_SNE) sum_log += log1p(k / p->z_rows[n]);
    if (g)
      for (size_t c = 0; c < d; c++) {
        gr[c] += w * kp * (x[c] - xn[c]);
        if (p->kind == NLE_MODEL_SNE) gs[c] += kp / (p->z_rows[n] + k) * (x[c] - xn[c]);
      }
  }
  double scale; /* d E_rep / d (sum w K') (x - x_n) */
  if (p->kind == NLE_MODEL_EE || p->kind == NLE_MODEL_TEE) {
    e += 2.0 * p->lambda * sum_k;
    scale = 4.0 * p->lambda;
  } else if (p->kind == NLE_MODEL_SNE) {
    e += p->lambda * (log(sum_k) + sum_log);
    scale = 2.0 * p->lambda / sum_k;
  } else {
    e += p->lambda * log(p->z_total + 2.0 * sum_k);
    scale = 4.0 * p->lambda / (p->z_total + 2.0 * sum_k);
  }
  if (g)
    for (size_t c = 0; c < d; c++)
      g[c] += scale * gr[c] + (p->kind == NLE_MODEL_SNE ? 2.0 * p->lambda * gs[c] : 0.0);
  return e;
}

/* A trial of the point-by-point minimisers (the forward map's and the
 * inverse map's): x - step g / precond, and the energy there. */
typedef double (*point_energy_fn)(const void *problem, const double *x);
typedef struct {
  point_energy_fn energy;
  const void *problem;
  size_t d;
  const double *x, *g;
  double precond;
  double *xt;
} point_trial;

static nle_status point_at_step(void *user, double step, double *E) {
  point_trial *t = user;
  for (size_t c = 0; c < t->d; c++) t->xt[c] = t->x[c] - step * t->g[c] / t->precond;
  *E = t->energy(t->problem, t->xt);
  return NLE_OK;
}

static double forward_energy(const void *problem, const double *x) { return oos_energy(problem, x, NULL); }

/* Minimises from x (overwritten); work holds 5 d doubles. */
static void oos_minimise(const oos_problem *p, double *x, int max_iters, double grad_tol, double *work) {
  size_t d = p->X->cols;
  double *g = work, *xt = work + 3 * d, precond = 0.0, step = 1.0;
  for (size_t t = 0; t < p->na; t++) precond += 4.0 * p->a[t];
  if (!(precond > 1e-300)) precond = 1.0;
  double e = oos_energy(p, x, g);
  for (int it = 0; it < max_iters; it++) {
    double gmax = 0.0, slope = 0.0;
    for (size_t c = 0; c < d; c++) {
      gmax = fmax(gmax, fabs(g[c]));
      slope -= g[c] * g[c] / precond;
    }
    if (gmax <= grad_tol * fmax(1.0, precond)) break;
    double et = e;
    bool accepted = false;
    point_trial trial = {forward_energy, p, d, x, g, precond, xt};
    nle__armijo armijo = nle__armijo_default();
    nle__armijo_backtrack(&armijo, e, slope, point_at_step, &trial, &step, &et, &accepted, NULL);
    if (!accepted) break;
    memcpy(x, xt, d * sizeof(double));
    e = oos_energy(p, x, g);
    step = fmin(1.0, 2.0 * step); /* a cheap problem: let the step recover */
  }
}

static double sqdist_f(const float *a, const float *b, size_t D) {
  double s = 0.0;
  for (size_t t = 0; t < D; t++) {
    double u = (double)a[t] - b[t];
    s += u * u;
  }
  return s;
}

/* ---- F(y) with the EE paper's full Gaussian kernels ---------------------- */

typedef struct {
  const nle_matf *Y, *Ynew;
  const nle_matd *X;
  const nle_oos_opts *o;
  nle_matd *out;
} paper_job;

enum { OOS_BLOCK = 16 };

static int paper_block(void *job, size_t b, void *scratch) {
  const paper_job *j = job;
  size_t n = j->Y->rows, D = j->Y->cols, d = j->X->cols, m = j->Ynew->rows;
  double *wp = scratch, *wm = wp + n, *work = wm + n;
  size_t p1 = (b + 1) * OOS_BLOCK < m ? (b + 1) * OOS_BLOCK : m;
  for (size_t q = b * OOS_BLOCK; q < p1; q++) {
    const float *y = j->Ynew->data + q * D;
    size_t nearest = 0;
    double best = INFINITY, c = 1.0 / (2.0 * j->o->sigma * j->o->sigma);
    for (size_t i = 0; i < n; i++) {
      double s = sqdist_f(y, j->Y->data + i * D, D);
      if (s < best) best = s, nearest = i;
      wp[i] = exp(-c * s);
      wm[i] = j->o->wneg == NLE_WNEG_SQDIST ? s : 1.0;
    }
    oos_problem p = {NLE_MODEL_EE, j->o->lambda, j->X, NULL, 0.0, NULL, wp, n, NULL, wm, n};
    double *x = j->out->data + q * d;
    memcpy(x, j->X->data + nearest * d, d * sizeof(double));
    oos_minimise(&p, x, j->o->max_iters, j->o->grad_tol, work);
  }
  return 0;
}

nle_status nle_ee_map_forward(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X, const nle_matf *Ynew,
                              const nle_oos_opts *opts, nle_matd **Xnew) {
  *Xnew = NULL;
  nle_oos_opts defaults;
  if (!opts) {
    nle_oos_opts_init(&defaults);
    opts = &defaults;
  }
  if (Y->rows != X->rows || Y->rows < 1 || Ynew->cols != Y->cols || Y->rows > INT32_MAX)
    return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: %zu training points, %zu embedded; new points have %zu "
                                       "columns, training %zu", Y->rows, X->rows, Ynew->cols, Y->cols);
  if (!(opts->lambda > 0) || !(opts->sigma > 0) || opts->max_iters < 0 ||
      (opts->wneg != NLE_WNEG_UNIFORM && opts->wneg != NLE_WNEG_SQDIST))
    return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: lambda and sigma must be positive, W- uniform or sqdist");
  nle_status s = nle_matd_alloc(ctx, Ynew->rows, X->cols, Xnew);
  if (s) return s;
  paper_job job = {Y, Ynew, X, opts, *Xnew};
  size_t m = Ynew->rows;
  s = nle__for_blocks(ctx, "out-of-sample", (m + OOS_BLOCK - 1) / OOS_BLOCK,
                      nle__threads_for(ctx, (double)m * (double)Y->rows * (double)Y->cols),
                      (2 * Y->rows + 5 * X->cols) * sizeof(double), paper_block, &job);
  if (s) nle_matd_free(Xnew);
  return s;
}

/* ---- Trained embeddings: F(y) and f(x) for any model, saved and loaded ---- */

static uint64_t hash_floats(const nle_matf *Y) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a over the bytes */
  const unsigned char *b = (const unsigned char *)Y->data;
  for (size_t i = 0; i < Y->rows * Y->cols * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h ^ ((uint64_t)Y->rows << 32) ^ (uint64_t)Y->cols;
}

void nle_trained_free(nle_trained **t) {
  if (!t || !*t) return;
  nle_matf_free(&(*t)->Y);
  nle_matd_free(&(*t)->X);
  free((*t)->beta);
  free((*t)->log_z);
  free((*t)->radius);
  free((*t)->z_rows);
  free((*t)->pca_mean);
  free((*t)->pca_components);
  nle_matf_free(&(*t)->pca_Y);
  free(*t);
  *t = NULL;
}

/* Row sums of K(|x_n - x_m|^2) over m != n, exactly (O(N^2 d)). */
static int z_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  nle_trained *t = job;
  size_t n = t->X->rows, d = t->X->cols, i1 = (b + 1) * 64 < n ? (b + 1) * 64 : n;
  int student = t->kind == NLE_MODEL_TSNE;
  for (size_t i = b * 64; i < i1; i++) {
    double z = 0.0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      double dn = 0.0;
      for (size_t c = 0; c < d; c++) dn += (t->X->data[i * d + c] - t->X->data[j * d + c]) *
                                           (t->X->data[i * d + c] - t->X->data[j * d + c]);
      z += student ? 1.0 / (1.0 + dn) : exp(-dn);
    }
    t->z_rows[i] = z;
  }
  return 0;
}

/* The training W+ is w_scale x (P + P^T) for entropic P ((P + P^T) / 2 for EE
 * and SNE's two directions, / 2N for s-SNE and t-SNE), or w_scale x the
 * Gaussian graph (1 for EE, 1 / N for s-SNE and t-SNE). */
static double attraction_scale(nle_model_kind kind, int gaussian, size_t n) {
  int normalised = kind == NLE_MODEL_SSNE || kind == NLE_MODEL_TSNE;
  if (gaussian) return normalised ? 1.0 / (double)n : 1.0;
  return normalised ? 0.5 / (double)n : 0.5;
}


static nle_status trained_finish(nle_ctx *ctx, nle_trained *t) {
  size_t n = t->X->rows;
  int student = t->kind == NLE_MODEL_TSNE || t->kind == NLE_MODEL_TEE;
  t->w_scale = attraction_scale(t->kind, t->sigma > 0, n);
  t->z_total = 0.0;
  t->engine = student ? NLE_REPULSION_FFT : NLE_REPULSION_FGT;
  if (n < 5000 || !nle__oos_batched_engine(t, t->engine)) t->engine = NLE_REPULSION_EXACT;
  if (t->kind == NLE_MODEL_EE || t->kind == NLE_MODEL_TEE) return NLE_OK;
  if (!t->z_rows) {
    t->z_rows = nle__malloc(ctx, n * sizeof(double), "embedding normalisers");
    if (!t->z_rows) return NLE_ERR_NOMEM;
    nle_status s;
    if (t->engine == NLE_REPULSION_FFT)
      s = nle_kernel_sums_fft(ctx, t->X, NLE_KERNEL_STUDENT, NULL, t->z_rows, NULL);
    else if (t->engine == NLE_REPULSION_FGT)
      s = nle_kernel_sums_fgt(ctx, t->X, NULL, t->z_rows, NULL);
    else
      s = nle__for_blocks(ctx, "normalisers", (n + 63) / 64, nle__threads_for(ctx, (double)n * n * (t->X->cols + 10)),
                          0, z_block, t);
    if (s) return s;
  }
  for (size_t i = 0; i < n; i++) t->z_total += t->z_rows[i];
  return NLE_OK;
}

void nle_trained_spec_init(nle_trained_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->kind = NLE_MODEL_TSNE;
  spec->lambda = 1.0;
  spec->wneg = NLE_WNEG_UNIFORM;
  spec->perplexity = 30.0;
  spec->sigma = NLE_AUTO;
  spec->source = "";
}

nle_status nle_trained_new(nle_ctx *ctx, const nle_trained_spec *spec, const nle_matf *Y, const nle_matd *X,
                           const nle_csr *knn, const double *beta, nle_trained **out) {
  *out = NULL;
  size_t n = Y->rows;
  if (X->rows != n || knn->rows != (int64_t)n || n < 2 || knn->nnz < (int64_t)n)
    return nle__fail(ctx, NLE_ERR_ARG, "trained model: Y, X and the kNN graph must have the same N >= 2 rows");
  bool gaussian = spec->sigma != NLE_AUTO;
  if ((unsigned)spec->kind > NLE_MODEL_TEE || !(spec->lambda > 0) || (gaussian && !(spec->sigma > 0)) ||
      (!gaussian && !beta) || (spec->kind == NLE_MODEL_SNE && gaussian))
    return nle__fail(ctx, NLE_ERR_ARG, "trained model: a model kind, lambda > 0, and betas (entropic W+, sigma "
                     "NLE_AUTO) or a sigma > 0");
  nle_trained *t = nle__calloc(ctx, 1, sizeof *t, "the trained model");
  if (!t) return NLE_ERR_NOMEM;
  t->kind = spec->kind;
  t->lambda = spec->lambda;
  t->wneg = spec->wneg;
  t->perplexity = spec->perplexity;
  t->sigma = gaussian ? spec->sigma : 0.0; /* the model file's 0: entropic */
  t->k = (int)(knn->rowptr[1] - knn->rowptr[0]);
  t->D = Y->cols;
  snprintf(t->source, sizeof t->source, "%s", spec->source ? spec->source : "");
  nle_status s = nle_matf_alloc(ctx, n, Y->cols, &t->Y);
  if (!s) s = nle_matd_alloc(ctx, n, X->cols, &t->X);
  t->radius = nle__malloc(ctx, n * sizeof(double), "neighbourhood radii");
  if (beta) {
    t->beta = nle__malloc(ctx, n * sizeof(double), "betas");
    t->log_z = nle__malloc(ctx, n * sizeof(double), "normalisers");
  }
  if (!s && (!t->radius || (beta && (!t->beta || !t->log_z)))) s = NLE_ERR_NOMEM;
  if (!s) {
    memcpy(t->Y->data, Y->data, n * Y->cols * sizeof(float));
    memcpy(t->X->data, X->data, n * X->cols * sizeof(double));
    t->data_hash = hash_floats(Y);
    for (size_t i = 0; i < n; i++) {
      int64_t q0 = knn->rowptr[i], q1 = knn->rowptr[i + 1];
      t->radius[i] = q1 > q0 ? nle_csr_value(knn, q1 - 1) : 0.0;
      if (!beta) continue;
      /* log sum_m exp(-beta d_m) with the nearest factored out, as in the
       * training's conditional p_{m|n}. */
      double d0 = q1 > q0 ? nle_csr_value(knn, q0) : 0.0, z = 0.0;
      for (int64_t q = q0; q < q1; q++) z += exp(-beta[i] * (nle_csr_value(knn, q) - d0));
      t->beta[i] = beta[i];
      t->log_z[i] = log(z) - beta[i] * d0;
    }
  }
  if (!s) s = trained_finish(ctx, t);
  if (s) {
    nle_trained_free(&t);
    return s;
  }
  *out = t;
  return NLE_OK;
}

/* Rows of Y projected on the model's principal components (float). */
static nle_status project(nle_ctx *ctx, const nle_trained *t, const nle_matf *Y, nle_matf **P) {
  nle_pca_model pm;
  memset(&pm, 0, sizeof pm);
  pm.n_components = t->pca_dims;
  pm.dim = (int32_t)t->D;
  pm.mean = t->pca_mean;
  pm.components = t->pca_components;
  nle_matd *Pd = NULL;
  nle_status s = nle_pca_transform(ctx, &pm, Y, &Pd);
  if (!s) s = nle_matd_to_matf(ctx, Pd, P);
  nle_matd_free(&Pd);
  return s;
}

/* The training data on the model's components, once: new points' searches
 * all use it. */
static nle_status project_training(nle_ctx *ctx, nle_trained *t) {
  nle_matf_free(&t->pca_Y);
  return t->pca_dims > 0 && t->Y ? project(ctx, t, t->Y, &t->pca_Y) : NLE_OK;
}

/* ---- the model file ---- */

enum { TR_KIND, TR_WNEG, TR_K, TR_N, TR_D, TR_DIM, TR_HAS_Y, TR_HAS_BETA, TR_HASH, TR_INTS };
enum { TR_LAMBDA, TR_PERPLEXITY, TR_SIGMA, TR_DOUBLES };

nle_status nle_trained_save(nle_ctx *ctx, const nle_trained *t, const char *path, int copy_data) {
  if (!t->Y && copy_data) return nle__fail(ctx, NLE_ERR_ARG, "trained model: no training data to copy");
  size_t n = t->X->rows;
  int64_t ints[TR_INTS] = {t->kind, t->wneg, t->k, (int64_t)n, (int64_t)(t->Y ? t->Y->cols : t->D),
                           (int64_t)t->X->cols, copy_data != 0, t->beta != NULL, (int64_t)t->data_hash};
  double doubles[TR_DOUBLES] = {t->lambda, t->perplexity, t->sigma};
  nle__afile af;
  nle_status s = nle__rec_open(ctx, path, "model", &af);
  if (s) return s;
  nle__rec_put_text(&af, "source", t->source);
  nle__rec_put(&af, "ints", 'l', ints, TR_INTS);
  nle__rec_put(&af, "doubles", 'd', doubles, TR_DOUBLES);
  nle__rec_put(&af, "X", 'd', t->X->data, n * t->X->cols);
  nle__rec_put(&af, "radius", 'd', t->radius, n);
  if (t->beta) {
    nle__rec_put(&af, "beta", 'd', t->beta, n);
    nle__rec_put(&af, "log_z", 'd', t->log_z, n);
  }
  if (t->z_rows) nle__rec_put(&af, "z_rows", 'd', t->z_rows, n);
  if (copy_data) nle__rec_put(&af, "Y", 'f', t->Y->data, n * t->Y->cols);
  int64_t pca[2] = {t->pca_dims, t->pca_candidates};
  if (t->pca_dims > 0) {
    nle__rec_put(&af, "pca", 'l', pca, 2);
    nle__rec_put(&af, "pca_mean", 'd', t->pca_mean, t->D);
    nle__rec_put(&af, "pca_components", 'd', t->pca_components, (uint64_t)t->pca_dims * t->D);
  }
  return nle__afile_commit(ctx, &af);
}

static nle_status copy_record(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, double **dst) {
  const void *src;
  nle_status s = nle__rec_get(ctx, f, name, 'd', count, &src);
  if (s) return s;
  *dst = nle__malloc(ctx, count * sizeof(double), name);
  if (!*dst) return NLE_ERR_NOMEM;
  memcpy(*dst, src, count * sizeof(double));
  for (size_t i = 0; i < count; i++)
    if (!isfinite((*dst)[i])) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' has a non-finite value", f->path, name);
  return NLE_OK;
}

nle_status nle_trained_load(nle_ctx *ctx, const char *path, nle_trained **out) {
  *out = NULL;
  nle__rec_file f;
  nle_status s = nle__rec_read(ctx, path, "model", &f);
  if (s) return s;
  nle_trained *t = nle__calloc(ctx, 1, sizeof *t, "the trained model");
  const void *iv = NULL, *dv = NULL;
  s = t ? nle__rec_get(ctx, &f, "ints", 'l', TR_INTS, &iv) : NLE_ERR_NOMEM;
  if (!s) s = nle__rec_get(ctx, &f, "doubles", 'd', TR_DOUBLES, &dv);
  if (!s) s = nle__rec_text(ctx, &f, "source", t->source, sizeof t->source);
  const int64_t *ints = iv;
  const double *doubles = dv;
  size_t n = 0, D = 0, d = 0;
  if (!s) {
    n = (size_t)ints[TR_N], D = (size_t)ints[TR_D], d = (size_t)ints[TR_DIM];
    t->kind = (nle_model_kind)ints[TR_KIND];
    t->wneg = (nle_wneg_kind)ints[TR_WNEG];
    t->k = (int)ints[TR_K];
    t->D = D;
    t->data_hash = (uint64_t)ints[TR_HASH];
    t->lambda = doubles[TR_LAMBDA];
    t->perplexity = doubles[TR_PERPLEXITY];
    t->sigma = doubles[TR_SIGMA];
    if (ints[TR_N] < 2 || ints[TR_N] > INT32_MAX || ints[TR_D] < 1 || ints[TR_DIM] < 1 || ints[TR_DIM] > 64 ||
        (unsigned)t->kind > NLE_MODEL_TEE || (unsigned)t->wneg > NLE_WNEG_KNN || t->k < 1 || t->k > ints[TR_N] ||
        !(t->lambda > 0) || !(t->sigma >= 0) || (t->sigma == 0 && !ints[TR_HAS_BETA]))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged model header", path);
  }
  if (!s) s = nle_matd_alloc(ctx, n, d, &t->X);
  if (!s) {
    double *x = NULL;
    s = copy_record(ctx, &f, "X", n * d, &x);
    if (!s) memcpy(t->X->data, x, n * d * sizeof(double));
    free(x);
  }
  if (!s) s = copy_record(ctx, &f, "radius", n, &t->radius);
  if (!s && ints[TR_HAS_BETA]) s = copy_record(ctx, &f, "beta", n, &t->beta);
  if (!s && ints[TR_HAS_BETA]) s = copy_record(ctx, &f, "log_z", n, &t->log_z);
  if (!s && t->kind != NLE_MODEL_EE && t->kind != NLE_MODEL_TEE) s = copy_record(ctx, &f, "z_rows", n, &t->z_rows);
  if (!s && ints[TR_HAS_Y]) {
    const void *y;
    s = nle__rec_get(ctx, &f, "Y", 'f', n * D, &y);
    if (!s) s = nle_matf_alloc(ctx, n, D, &t->Y);
    if (!s) memcpy(t->Y->data, y, n * D * sizeof(float));
    if (!s && hash_floats(t->Y) != t->data_hash) s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: training data damaged", path);
  }
  if (!s && nle__rec_has(&f, "pca")) { /* absent from models trained without it */
    const void *pv;
    s = nle__rec_get(ctx, &f, "pca", 'l', 2, &pv);
    const int64_t *pca = pv;
    if (!s && (pca[0] < 1 || pca[0] > (int64_t)D || pca[1] < t->k || pca[1] > ints[TR_N]))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged PCA record", path);
    if (!s) {
      t->pca_dims = (int)pca[0];
      t->pca_candidates = (int)pca[1];
      s = copy_record(ctx, &f, "pca_mean", D, &t->pca_mean);
    }
    if (!s) s = copy_record(ctx, &f, "pca_components", (size_t)t->pca_dims * D, &t->pca_components);
    if (!s) s = project_training(ctx, t);
  }
  if (!s) s = trained_finish(ctx, t);
  nle__rec_free(&f);
  if (s) {
    nle_trained_free(&t);
    return nle__name_error(ctx, path);
  }
  *out = t;
  return NLE_OK;
}

nle_status nle_trained_attach_data(nle_ctx *ctx, nle_trained *t, const nle_matf *Y) {
  if (Y->rows != t->X->rows || Y->cols != t->D || hash_floats(Y) != t->data_hash)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "the training data (%zu x %zu) is not the data the model was trained on (%zu x %zu, %s)", Y->rows,
                     Y->cols, t->X->rows, t->D, t->source);
  nle_matf_free(&t->Y);
  nle_status s = nle_matf_alloc(ctx, Y->rows, Y->cols, &t->Y);
  if (!s) memcpy(t->Y->data, Y->data, Y->rows * Y->cols * sizeof(float));
  if (!s) s = project_training(ctx, t);
  return s;
}

/* ---- F(y) ---- */

typedef struct {
  const nle_trained *t;
  const nle_matf *Ynew;
  const nle_csr *nbrs;  /* M x N kNN of the new points, squared distances */
  const nle_csr *P;     /* entropic: p_{n|y} on those, or NULL */
  int max_iters;
  nle_matd *out;
} forward_job;

/* The problem of new point y (row q of the neighbour lists): attraction
 * weights into a[k], W- values into rw (k, or N for squared distances). */
oos_problem nle__oos_forward_problem(const nle_trained *t, const float *y, const nle_csr *nbrs, const nle_csr *P,
                                   size_t q, double *a, double *rw) {
  size_t n = t->X->rows, D = t->Y->cols, k = (size_t)t->k;
  int64_t r0 = nbrs->rowptr[q];
  const int32_t *idx = nbrs->colind + r0;
  for (size_t c = 0; c < k; c++) {
    size_t nb = (size_t)idx[c];
    double d2 = nle_csr_value(nbrs, r0 + (int64_t)c), raw;
    if (P) { /* p_{n|y} + p_{y|n}, the latter when y falls in n's neighbourhood */
      raw = nle_csr_value(P, r0 + (int64_t)c);
      if (d2 <= t->radius[nb]) raw += exp(-t->beta[nb] * d2 - t->log_z[nb]);
    } else {
      raw = exp(-d2 / (2.0 * t->sigma * t->sigma));
    }
    a[c] = t->w_scale * raw;
    rw[c] = d2; /* W- on the kNN graph: squared distances */
  }
  oos_problem p = {t->kind, t->lambda, t->X, t->z_rows, t->z_total, idx, a, k, NULL, NULL, n};
  int ee = t->kind == NLE_MODEL_EE || t->kind == NLE_MODEL_TEE;
  if (ee && t->wneg == NLE_WNEG_KNN) {
    p.r_idx = idx;
    p.r_w = rw;
    p.nr = k;
  } else if (ee && t->wneg == NLE_WNEG_SQDIST) {
    for (size_t i = 0; i < n; i++) rw[i] = sqdist_f(y, t->Y->data + i * D, D);
    p.r_w = rw;
  }
  return p;
}

static size_t forward_scratch(const nle_trained *t) {
  return ((size_t)t->k + (t->wneg == NLE_WNEG_SQDIST ? t->X->rows : (size_t)t->k) + 5 * t->X->cols) * sizeof(double);
}

static int forward_block(void *job, size_t b, void *scratch) {
  const forward_job *j = job;
  const nle_trained *t = j->t;
  size_t D = t->Y->cols, d = t->X->cols, m = j->Ynew->rows, k = (size_t)t->k;
  double *a = scratch, *rw = a + k, *work = rw + (t->wneg == NLE_WNEG_SQDIST ? t->X->rows : k);
  size_t q1 = (b + 1) * OOS_BLOCK < m ? (b + 1) * OOS_BLOCK : m;
  for (size_t q = b * OOS_BLOCK; q < q1; q++) {
    oos_problem p = nle__oos_forward_problem(t, j->Ynew->data + q * D, j->nbrs, j->P, q, a, rw);
    double *x = j->out->data + q * d;
    memcpy(x, t->X->data + (size_t)p.a_idx[0] * d, d * sizeof(double)); /* from the nearest training point */
    oos_minimise(&p, x, j->max_iters, 1e-10, work);
  }
  return 0;
}

/* Neighbours of the new points among the training points, and their
 * entropic affinities (for an entropic model). */
/* As training searched: candidates among the principal components, the k
 * nearest of them by their distances in Y (70,000-image t-SNE: the exact
 * 784-d query was 60% of a transform). */
static nle_status pca_candidates_query(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, nle_csr **nbrs) {
  if (!t->pca_Y) return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: the model's projected training data is missing");
  nle_matf *Pq = NULL;
  nle_csr *cand = NULL;
  nle_status s = project(ctx, t, Ynew, &Pq);
  if (!s) s = nle_knn_query(ctx, t->pca_Y, Pq, t->pca_candidates, &cand);
  if (!s) s = nle__knn_rerank_queries(ctx, t->Y, Ynew, cand, t->k, nbrs);
  nle_csr_free(&cand);
  nle_matf_free(&Pq);
  return s;
}

static nle_status new_point_weights(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, nle_csr **nbrs,
                                    nle_ea_result **ea) {
  *ea = NULL;
  if (!t->Y) return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: the model's training data is not attached");
  if (Ynew->cols != t->Y->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: new points have %zu columns, the training data %zu", Ynew->cols,
                     t->Y->cols);
  for (size_t i = 0; i < Ynew->rows * Ynew->cols; i++)
    if (!isfinite(Ynew->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "new point %zu, column %zu is not finite", i / Ynew->cols, i % Ynew->cols);
  nle_status s = t->pca_dims > 0 ? pca_candidates_query(ctx, t, Ynew, nbrs) : nle_knn_query(ctx, t->Y, Ynew, t->k, nbrs);
  if (!s && t->beta && Ynew->rows) {
    nle_ea_opts eo;
    nle_ea_opts_init(&eo);
    eo.perplexity = t->perplexity;
    eo.order = NLE_ORDER_BOUNDS;
    s = nle_entropic_affinities(ctx, *nbrs, &eo, ea);
    if (s > 0) s = NLE_OK; /* a point off its perplexity by more than tol still has usable affinities */
  }
  if (s) nle_csr_free(nbrs);
  return s;
}

nle_status nle_trained_objective(nle_ctx *ctx, const nle_trained *t, const float *y, const double *x, double *E,
                                 double *grad) {
  nle_matf ynew = {1, t->D, (float *)y};
  nle_csr *nbrs = NULL;
  nle_ea_result *ea = NULL;
  nle_status s = new_point_weights(ctx, t, &ynew, &nbrs, &ea);
  double *scratch = s ? NULL : nle__malloc(ctx, forward_scratch(t) + 3 * t->X->cols * sizeof(double), "scratch");
  if (!s && !scratch) s = NLE_ERR_NOMEM;
  if (!s) {
    size_t k = (size_t)t->k;
    double *a = scratch, *rw = a + k, *g = rw + (t->wneg == NLE_WNEG_SQDIST ? t->X->rows : k);
    oos_problem p = nle__oos_forward_problem(t, y, nbrs, ea ? ea->P : NULL, 0, a, rw);
    *E = oos_energy(&p, x, grad ? g : NULL);
    if (grad) memcpy(grad, g, t->X->cols * sizeof(double));
  }
  free(scratch);
  nle_ea_result_free(&ea);
  nle_csr_free(&nbrs);
  return s;
}

/* Whether F(y) of t can sum its repulsion with `engine`. */
static int engine_serves(const nle_trained *t, nle_repulsion engine) {
  if (engine == NLE_REPULSION_EXACT) return 1;
  int student = t->kind == NLE_MODEL_TSNE || t->kind == NLE_MODEL_TEE;
  return nle__oos_batched_engine(t, engine) && !(student && engine == NLE_REPULSION_FGT);
}

static nle_status engine_refused(nle_ctx *ctx) {
  return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: F(y) takes exact, fgt or fft repulsion: fgt for the Gaussian "
                   "kernel, both for EE and t-EE with uniform W-, s-SNE and t-SNE in d <= 3");
}

nle_status nle_trained_set_engine(nle_ctx *ctx, nle_trained *t, nle_repulsion engine) {
  if (!engine_serves(t, engine)) return engine_refused(ctx);
  t->engine = engine;
  return NLE_OK;
}

/* F(y) with t's engine; the seconds of the two stages and the engine that
 * ran (exact when the fast one's grid cannot cover the map). */
static nle_status forward_map(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, int max_iters,
                              nle_matd **Xnew, double *weights_seconds, double *optimize_seconds,
                              nle_repulsion *used) {
  *Xnew = NULL;
  if (max_iters < 0) return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: max_iters must be >= 0");
  nle_csr *nbrs = NULL;
  nle_ea_result *ea = NULL;
  double t0 = nle_time_seconds();
  nle_status s = new_point_weights(ctx, t, Ynew, &nbrs, &ea);
  *weights_seconds = nle_time_seconds() - t0;
  nle__log(ctx, 1, "out-of-sample: neighbours and affinities of %zu points in %.2f s", Ynew->rows, *weights_seconds);
  t0 = nle_time_seconds();
  if (!s) s = nle_matd_alloc(ctx, Ynew->rows, t->X->cols, Xnew);
  int batched = !s && nle__oos_batched_engine(t, t->engine);
  if (batched && !nle__oos_engine_fits(t)) {
    nle__log(ctx, 1, "out-of-sample: the embedding is too wide for the %s grid; summing exactly",
             t->engine == NLE_REPULSION_FGT ? "fast Gauss transform's" : "FFT");
    batched = 0;
  }
  *used = batched ? t->engine : NLE_REPULSION_EXACT;
  if (batched) {
    s = nle__oos_forward_batched(ctx, t, Ynew, nbrs, ea ? ea->P : NULL, max_iters, *Xnew);
  } else if (!s) {
    forward_job job = {t, Ynew, nbrs, ea ? ea->P : NULL, max_iters, *Xnew};
    size_t m = Ynew->rows;
    s = nle__for_blocks(ctx, "out-of-sample", (m + OOS_BLOCK - 1) / OOS_BLOCK,
                        nle__threads_for(ctx, (double)m * (double)t->X->rows * 100.0), forward_scratch(t),
                        forward_block, &job);
  }
  *optimize_seconds = nle_time_seconds() - t0;
  nle__log(ctx, 1, "out-of-sample: minimised in %.2f s", *optimize_seconds);
  nle_ea_result_free(&ea);
  nle_csr_free(&nbrs);
  if (s) nle_matd_free(Xnew);
  return s;
}

nle_status nle_trained_transform(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, int max_iters,
                                 nle_matd **Xnew) {
  double weights_seconds, optimize_seconds;
  nle_repulsion used;
  return forward_map(ctx, t, Ynew, max_iters, Xnew, &weights_seconds, &optimize_seconds, &used);
}

void nle_transform_opts_init(nle_transform_opts *o) {
  o->max_iters = NLE_AUTO;
  o->engine = NLE_REPULSION_AUTO;
}

nle_status nle_transform(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, const nle_transform_opts *opts,
                         nle_transform_result **result) {
  *result = NULL;
  if (!t || !Ynew || !opts) return nle__fail(ctx, NLE_ERR_ARG, "nle_transform: the model, the new points and the "
                                             "options must be given");
  nle_transform_opts o = *opts;
  if (o.max_iters == NLE_AUTO) o.max_iters = 200;
  if (o.max_iters < 0 || o.max_iters > 1000000)
    return nle__fail(ctx, NLE_ERR_ARG, "nle_transform: max_iters %d must be NLE_AUTO or in 0..1000000", o.max_iters);
  if (o.engine == NLE_REPULSION_AUTO) o.engine = t->engine;
  if ((unsigned)o.engine > NLE_REPULSION_FGT)
    return nle__fail(ctx, NLE_ERR_ARG, "nle_transform: engine %d is not a repulsion engine", (int)o.engine);
  if (!engine_serves(t, o.engine)) return engine_refused(ctx);
  nle_transform_result *r = nle__calloc(ctx, 1, sizeof *r, "the transform's result");
  if (!r) return NLE_ERR_NOMEM;
  double t0 = nle_time_seconds();
  nle_trained run = *t; /* a shallow copy with the chosen engine: t is not changed */
  run.engine = o.engine;
  nle_status s = forward_map(ctx, &run, Ynew, o.max_iters, &r->X, &r->weights_seconds, &r->optimize_seconds,
                             &o.engine);
  if (s) {
    free(r);
    return s;
  }
  r->resolved = o;
  r->m = Ynew->rows;
  r->total_seconds = nle_time_seconds() - t0;
  *result = r;
  return NLE_OK;
}

void nle_transform_result_free(nle_transform_result **result) {
  if (!result || !*result) return;
  nle_matd_free(&(*result)->X);
  free(*result);
  *result = NULL;
}

/* ---- f(x), EE and t-EE with W- of squared distances ---- */

typedef struct {
  const nle_trained *t;
  const nle_matd *Xnew;
  int max_iters;
  nle_matf *out;
} inverse_job;

/* E'(y) = 2 sum_n (a_n(y) A_n + lambda |y - y_n|^2 K_n), A_n = -log K_n at the
 * fixed x; a_n(y) the attraction the forward map would give (Gaussian of
 * width sigma, or p_{y|n} from the training beta_n). */
static double inverse_energy(const nle_trained *t, const double *A, const double *K, const double *y, double *g,
                             double *dist) {
  size_t n = t->Y->rows, D = t->Y->cols;
  double e = 0.0;
  if (g) memset(g, 0, D * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    const float *yi = t->Y->data + i * D;
    double d2 = 0.0;
    for (size_t c = 0; c < D; c++) d2 += (y[c] - yi[c]) * (y[c] - yi[c]);
    double rate = t->beta ? t->beta[i] : 1.0 / (2.0 * t->sigma * t->sigma);
    double a = t->w_scale * (t->beta ? exp(-rate * d2 - t->log_z[i]) : exp(-rate * d2));
    e += 2.0 * (a * A[i] + t->lambda * d2 * K[i]);
    dist[i] = 4.0 * (t->lambda * K[i] - rate * a * A[i]); /* the weight of (y - y_n) in the gradient */
  }
  if (g)
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < D; c++) g[c] += dist[i] * (y[c] - t->Y->data[i * D + c]);
  return e;
}

/* The inverse map's energy at a trial y, for the line search. */
typedef struct {
  const nle_trained *t;
  const double *A, *K;
  double *wts;
} inverse_problem;

static double inverse_trial_energy(const void *problem, const double *y) {
  const inverse_problem *ip = problem;
  return inverse_energy(ip->t, ip->A, ip->K, y, NULL, ip->wts);
}

static int inverse_block(void *job, size_t b, void *scratch) {
  const inverse_job *j = job;
  const nle_trained *t = j->t;
  size_t n = t->X->rows, D = t->Y->cols, d = t->X->cols, m = j->Xnew->rows;
  double *A = scratch, *K = A + n, *wts = K + n, *y = wts + n, *g = y + D, *yt = g + D;
  int student = t->kind == NLE_MODEL_TEE;
  size_t q1 = (b + 1) * OOS_BLOCK < m ? (b + 1) * OOS_BLOCK : m;
  for (size_t q = b * OOS_BLOCK; q < q1; q++) {
    const double *x = j->Xnew->data + q * d;
    size_t nearest = 0;
    double best = INFINITY, precond = 0.0;
    for (size_t i = 0; i < n; i++) {
      double d2 = 0.0;
      for (size_t c = 0; c < d; c++) d2 += (x[c] - t->X->data[i * d + c]) * (x[c] - t->X->data[i * d + c]);
      if (d2 < best) best = d2, nearest = i;
      K[i] = student ? 1.0 / (1.0 + d2) : exp(-d2);
      A[i] = student ? log1p(d2) : d2;
      precond += 4.0 * t->lambda * K[i];
    }
    if (!(precond > 1e-300)) precond = 1.0;
    for (size_t c = 0; c < D; c++) y[c] = t->Y->data[nearest * D + c];
    double e = inverse_energy(t, A, K, y, g, wts), step = 1.0;
    for (int it = 0; it < j->max_iters; it++) {
      double gmax = 0.0, slope = 0.0;
      for (size_t c = 0; c < D; c++) {
        gmax = fmax(gmax, fabs(g[c]));
        slope -= g[c] * g[c] / precond;
      }
      if (gmax <= 1e-10 * fmax(1.0, precond)) break;
      bool accepted = false;
      inverse_problem problem = {t, A, K, wts};
      point_trial trial = {inverse_trial_energy, &problem, D, y, g, precond, yt};
      nle__armijo armijo = nle__armijo_default();
      double et;
      nle__armijo_backtrack(&armijo, e, slope, point_at_step, &trial, &step, &et, &accepted, NULL);
      if (!accepted) break;
      memcpy(y, yt, D * sizeof(double));
      e = inverse_energy(t, A, K, y, g, wts);
      step = fmin(1.0, 2.0 * step);
    }
    for (size_t c = 0; c < D; c++) j->out->data[q * D + c] = (float)y[c];
  }
  return 0;
}

nle_status nle_trained_inverse(nle_ctx *ctx, const nle_trained *t, const nle_matd *Xnew, int max_iters,
                               nle_matf **Ynew) {
  *Ynew = NULL;
  if (!t->Y) return nle__fail(ctx, NLE_ERR_ARG, "inverse map: the model's training data is not attached");
  if ((t->kind != NLE_MODEL_EE && t->kind != NLE_MODEL_TEE) || t->wneg != NLE_WNEG_SQDIST)
    return nle__fail(ctx, NLE_ERR_ARG,
                     "inverse map f(x) is defined for EE and t-EE trained with W- of squared distances (--wneg "
                     "sqdist; EE paper sec. 4.5): with other W- its minimum is at infinity");
  if (Xnew->cols != t->X->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "inverse map: points have %zu columns, the embedding %zu", Xnew->cols,
                     t->X->cols);
  for (size_t i = 0; i < Xnew->rows * Xnew->cols; i++)
    if (!isfinite(Xnew->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "point %zu, column %zu is not finite", i / Xnew->cols, i % Xnew->cols);
  nle_status s = nle_matf_alloc(ctx, Xnew->rows, t->Y->cols, Ynew);
  if (s) return s;
  inverse_job job = {t, Xnew, max_iters, *Ynew};
  size_t n = t->X->rows, D = t->Y->cols, m = Xnew->rows;
  s = nle__for_blocks(ctx, "inverse map", (m + OOS_BLOCK - 1) / OOS_BLOCK,
                      nle__threads_for(ctx, (double)m * (double)n * (double)D * 50.0), (3 * n + 3 * D) * sizeof(double),
                      inverse_block, &job);
  if (s) nle_matf_free(Ynew);
  return s;
}
