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

#include "../core/vecmath.h"
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
    e += 2.0 * p->a[t] * (student ? nle__log1p(dn) : dn); /* oos_batch.c's log1p */
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
 * inverse map's): x + step dir (dir = -g / precond for the inverse map's),
 * and the energy there. */
typedef double (*point_energy_fn)(const void *problem, const double *x);
typedef struct {
  point_energy_fn energy;
  const void *problem;
  size_t d;
  const double *x, *dir;
  double *xt;
} point_trial;

static nle_status point_at_step(void *user, double step, double *E) {
  point_trial *t = user;
  for (size_t c = 0; c < t->d; c++) t->xt[c] = t->x[c] + step * t->dir[c];
  *E = t->energy(t->problem, t->xt);
  return NLE_OK;
}

static double forward_energy(const void *problem, const double *x) { return oos_energy(problem, x, NULL); }

/* The doubles oos_minimise's work needs for d dimensions. */
static size_t minimise_work(size_t d) { return 8 * d + d * d; }

/* Minimises from x (overwritten) along the quasi-Newton directions of the
 * point's metric (oos_internal.h); work holds minimise_work(d) doubles. */
static void oos_minimise(const oos_problem *p, double *x, int max_iters, double grad_tol, double *work) {
  size_t d = p->X->cols;
  double *g = work, *xt = work + 3 * d, *dir = xt + d, *g_old = dir + d, *y = g_old + d, *Hy = y + d, *H = Hy + d;
  double precond = 0.0, step = 1.0;
  for (size_t t = 0; t < p->na; t++) precond += 4.0 * p->a[t];
  if (!(precond > 1e-300)) precond = 1.0;
  nle__oos_metric_init(H, d, precond);
  double e = oos_energy(p, x, g);
  for (int it = 0; it < max_iters; it++) {
    double gmax = 0.0;
    for (size_t c = 0; c < d; c++) gmax = fmax(gmax, fabs(g[c]));
    if (gmax <= grad_tol * fmax(1.0, precond)) break;
    double et = e, slope = nle__oos_metric_direction(H, g, d, precond, dir);
    bool accepted = false;
    point_trial trial = {forward_energy, p, d, x, dir, xt};
    nle__armijo armijo = nle__armijo_default();
    nle__armijo_backtrack(&armijo, e, slope, point_at_step, &trial, &step, &et, &accepted, NULL);
    if (!accepted) break;
    for (size_t c = 0; c < d; c++) dir[c] = xt[c] - x[c]; /* the step taken */
    memcpy(x, xt, d * sizeof(double));
    memcpy(g_old, g, d * sizeof(double));
    e = oos_energy(p, x, g);
    for (size_t c = 0; c < d; c++) y[c] = g[c] - g_old[c];
    nle__oos_metric_update(H, dir, y, d, Hy);
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
                      (2 * Y->rows + minimise_work(X->cols)) * sizeof(double), paper_block, &job);
  if (s) nle_matd_free(Xnew);
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

static size_t forward_scratch(const nle_trained *t) {
  return ((size_t)t->k + (t->wneg == NLE_WNEG_SQDIST ? t->X->rows : (size_t)t->k) + minimise_work(t->X->cols)) *
         sizeof(double);
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
  nle_status s = nle__trained_project(ctx, t, Ynew, &Pq);
  if (!s) s = nle_knn_query(ctx, t->pca_Y, Pq, t->pca_candidates, &cand);
  /* Queries near each other in the map (by their nearest candidate) share
   * candidates, whose rows of Y (3 KB each on Fashion-MNIST) then come
   * from cache. */
  size_t *near = NULL, m = Ynew->rows;
  int32_t *order = NULL;
  if (!s) s = nle__oos_map_order(ctx, t, cand, &near);
  if (!s && m <= INT32_MAX && !(order = nle__malloc(ctx, (m ? m : 1) * sizeof *order, "the queries' order")))
    s = NLE_ERR_NOMEM;
  for (size_t i = 0; order && i < m; i++) order[i] = (int32_t)near[i];
  if (!s) s = nle__knn_rerank_queries(ctx, t->Y, Ynew, cand, t->k, order, nbrs);
  free(near);
  free(order);
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

/* Whether F(y) of t can sum its repulsion with `engine` (its row says):
 * each point's exact sums, or all points' by the engine's plan. */
static int engine_serves(const nle_trained *t, nle_repulsion engine) {
  const nle__engine *e = nle__engine_find(engine);
  return e && (e->any_model || nle__oos_batched_engine(t, engine));
}

static nle_status engine_refused(nle_ctx *ctx) {
  char names[128], serves[256];
  nle__oos_engine_names(names, sizeof names, serves, sizeof serves);
  return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: F(y) takes %s repulsion: %s, for EE and t-EE with uniform W-, "
                   "s-SNE and t-SNE in d <= 3", names, serves);
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
  if (max_iters < 0) return nle__fail(ctx, NLE_ERR_ARG, "out-of-sample: {@max-iters=%d} must be >= 0", max_iters);
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
             nle__engine_find(t->engine)->oos->grid);
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
  if (o.max_iters < 0) return nle__fail(ctx, NLE_ERR_ARG, "nle_transform: {@max-iters=%d} must be >= 0, or auto", o.max_iters);
  if (o.engine == NLE_REPULSION_AUTO) o.engine = t->engine;
  if (!nle__engine_find(o.engine))
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
  double *A = scratch, *K = A + n, *wts = K + n, *y = wts + n, *g = y + D, *yt = g + D, *dir = yt + D;
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
      A[i] = student ? nle__log1p(d2) : d2;
      precond += 4.0 * t->lambda * K[i];
    }
    if (!(precond > 1e-300)) precond = 1.0;
    for (size_t c = 0; c < D; c++) y[c] = t->Y->data[nearest * D + c];
    double e = inverse_energy(t, A, K, y, g, wts), step = 1.0;
    for (int it = 0; it < j->max_iters; it++) {
      double gmax = 0.0, slope = 0.0;
      for (size_t c = 0; c < D; c++) {
        gmax = fmax(gmax, fabs(g[c]));
        dir[c] = -g[c] / precond;
        slope += g[c] * dir[c];
      }
      if (gmax <= 1e-10 * fmax(1.0, precond)) break;
      bool accepted = false;
      inverse_problem problem = {t, A, K, wts};
      point_trial trial = {inverse_trial_energy, &problem, D, y, dir, yt};
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
                     "inverse map f(x) is defined for EE and t-EE trained with W- of squared distances "
                     "({@wneg=sqdist}; EE paper sec. 4.5): with other W- its minimum is at infinity");
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
                      nle__threads_for(ctx, (double)m * (double)n * (double)D * 50.0), (3 * n + 4 * D) * sizeof(double),
                      inverse_block, &job);
  if (s) nle_matf_free(Ynew);
  return s;
}
