/* optimize.c — partial-Hessian optimisers (dissertation sec. 3.3): the
 * direction solves B p = -g with B = I (gradient descent), 4 D+ (the
 * fixed-point diagonal of Carreira-Perpinan 2010) or 4 L+ + mu I (the
 * spectral direction: the attractive Hessian, sparsified to kappa neighbours,
 * mu = 1e-10 min L+_nn, whose CHOLMOD factor is computed once and reused for
 * every iteration and every one of the d columns); then a backtracking line
 * search for sufficient decrease from the last accepted step (linesearch.c).
 * Fixed-rate descent is in fixed_rate.c, checkpoints in checkpoint.c. */
#include "opt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STALL_ITERS = 5 };

void nle_opt_opts_init(nle_opt_opts *o) {
  o->kind = NLE_OPT_SD;
  o->kappa = 7;
  o->max_iters = 1000;
  o->tol = 1e-6;
  o->grad_tol = 1e-9;
  o->x_tol = 0.0;
  o->time_budget = 0.0;
  o->c1 = 1e-4;
  o->shrink = 0.5;
  o->memory = 10;
  o->learning_rate = 0.0;
  o->learning_rate_final = 0.0;
  o->momentum = 0.8;
  o->gains = 1;
  o->exaggeration = 1.0;
  o->exaggeration_iters = 250;
  o->sdm_tol = 0.1;
  o->sdm_iters = 50;
  o->accuracy_iters = 0;
  o->energy_every = 0;
  o->trace = NULL;
  o->trace_user = NULL;
}

void nle_opt_free(nle_opt **opt) {
  if (!opt || !*opt) return;
  nle_opt *p = *opt;
  if (p->cc_started) {
    nle__factor_solver_free(&p->solver);
    cholmod_l_free_factor(&p->factor, &p->cc);
    cholmod_l_free_dense(&p->rhs, &p->cc);
    cholmod_l_finish(&p->cc);
  }
  free(p->degree);
  free(p->hist_s);
  free(p->hist_y);
  free(p->hist_rho);
  free(p->alpha);
  free(p->prev_g);
  free(p->prev_p);
  free(p->run.velocity);
  free(p->run.gain);
  free(p->ckpt_path);
  free(p->ckpt_fingerprint);
  nle_csr_free(&p->sd_weights);
  nle_matd_free(&p->cg_r);
  nle_matd_free(&p->cg_z);
  nle_matd_free(&p->cg_d);
  nle_matd_free(&p->cg_ad);
  free(p);
  *opt = NULL;
}

typedef struct {
  double w;
  int64_t j; /* an entry of W */
} weighted;

static int heavier_first(const void *a, const void *b) {
  const weighted *x = a, *y = b;
  if (x->w != y->w) return x->w > y->w ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

static int32_t component_root(int32_t *parent, int32_t i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]]; /* path halving */
    i = parent[i];
  }
  return i;
}

/* Marks in kept[] the edges of W that join the components of the kept graph
 * (parent: its union-find forest), a maximum spanning forest over the
 * components by Boruvka's rounds: each component takes its heaviest edge out
 * (ties to the first stored, so the result does not depend on anything but
 * W). Returns how many, or -1 out of memory. */
static int64_t connecting_edges(const nle_csr *W, int32_t *parent, unsigned char *kept) {
  int64_t n = W->rows, count = 0, roots = 0;
  for (int64_t i = 0; i < n; i++) roots += parent[i] == (int32_t)i;
  if (roots <= 1) return 0;
  int64_t *best = malloc((size_t)n * sizeof *best);
  int32_t *row_of = malloc((size_t)W->nnz * sizeof *row_of);
  if (!best || !row_of) {
    free(best);
    free(row_of);
    return -1;
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) row_of[q] = (int32_t)i;
  for (int merged = 1; merged;) {
    merged = 0;
    for (int64_t i = 0; i < n; i++) best[i] = -1;
    for (int64_t i = 0; i < n; i++) {
      int32_t ri = component_root(parent, (int32_t)i);
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
        int32_t rj = component_root(parent, W->colind[q]);
        if (ri == rj) continue;
        double w = nle_csr_value(W, q);
        if (!(w > 0)) continue;
        if (best[ri] < 0 || w > nle_csr_value(W, best[ri])) best[ri] = q;
        if (best[rj] < 0 || w > nle_csr_value(W, best[rj])) best[rj] = q;
      }
    }
    for (int64_t r = 0; r < n; r++) {
      if (best[r] < 0) continue;
      int64_t q = best[r];
      int32_t a = component_root(parent, row_of[q]), b = component_root(parent, W->colind[q]);
      if (a == b) continue; /* the other side already took it */
      parent[a < b ? b : a] = a < b ? a : b;
      kept[q] = 1;
      count++;
      merged = 1;
    }
  }
  free(best);
  free(row_of);
  return count;
}

/* W+ kept to each row's kappa largest weights (0: all), plus the fewest of
 * W's other edges, heaviest first, that keep it connected wherever W is: a
 * component cut off by the sparsification would have only mu's curvature
 * against its translation, and its spectral direction would be huge there
 * (kappa = 3 on 70,000 Fashion-MNIST points stalled the line search in the
 * first iterations). Symmetrised by (W + W^T) / 2 so that its Laplacian is
 * psd; the result is a dense-index CSR with sorted columns (from the
 * affinity symmetrisation). */
static nle_status sparsified_weights(nle_ctx *ctx, const nle_csr *W, int kappa, nle_csr **out) {
  int64_t n = W->rows, count = 0;
  if (n > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "spectral direction: too many points");
  int32_t *parent = nle__malloc(ctx, (size_t)n * sizeof *parent, "components");
  unsigned char *kept = nle__calloc(ctx, (size_t)W->nnz + 1, 1, "the kept edges");
  weighted *row = nle__malloc(ctx, (size_t)(n + 1) * sizeof *row, "a row");
  nle_status s = parent && kept && row ? NLE_OK : NLE_ERR_NOMEM;
  for (int64_t i = 0; !s && i < n; i++) parent[i] = (int32_t)i;
  for (int64_t i = 0; !s && i < n; i++) {
    int64_t len = 0;
    for (int64_t p = W->rowptr[i]; p < W->rowptr[i + 1]; p++)
      if (W->colind[p] != i) row[len++] = (weighted){nle_csr_value(W, p), p};
    if (kappa > 0 && len > kappa) {
      qsort(row, (size_t)len, sizeof *row, heavier_first);
      len = kappa;
    }
    for (int64_t t = 0; t < len; t++) {
      kept[row[t].j] = 1;
      int32_t a = component_root(parent, (int32_t)i), b = component_root(parent, W->colind[row[t].j]);
      if (a != b) parent[a < b ? b : a] = a < b ? a : b;
    }
    count += len;
  }
  if (!s && kappa > 0) {
    int64_t joining = connecting_edges(W, parent, kept);
    if (joining < 0) s = nle__fail(ctx, NLE_ERR_NOMEM, "spectral direction: out of memory for its graph");
    count += joining;
  }
  nle_csr *K = NULL;
  if (!s) s = nle_csr_alloc(ctx, n, n, count, NLE_F64, &K);
  if (!s) {
    int64_t q = 0;
    for (int64_t i = 0; i < n; i++) {
      for (int64_t p = W->rowptr[i]; p < W->rowptr[i + 1]; p++)
        if (kept[p]) {
          K->colind[q] = W->colind[p];
          ((double *)K->val)[q++] = nle_csr_value(W, p);
        }
      K->rowptr[i + 1] = q;
    }
    K->nnz = q;
  }
  free(parent);
  free(kept);
  free(row);
  if (!s) s = nle_affinity_symmetrize(ctx, K, 0, out);
  nle_csr_free(&K);
  return s;
}

/* Factor of 4 L + mu I, L = D - W the Laplacian of the symmetric W. */
static nle_status factor_spectral(nle_ctx *ctx, nle_opt *o, const nle_csr *W) {
  /* mu = 1e-10 min L+_nn (sec. 3.3); a point with no neighbours kept still
   * needs a positive pivot. */
  double dmin = INFINITY;
  for (int64_t i = 0; i < W->rows; i++) {
    double deg = 0.0;
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
      if (W->colind[q] != i) deg += nle_csr_value(W, q);
    dmin = fmin(dmin, 4.0 * deg);
  }
  double mu = dmin > 0 ? 1e-10 * dmin : 1e-10;
  o->mu = mu;
  nle_status s = nle__laplacian_factor(ctx, &o->cc, W, 0, 4.0, mu, &o->factor);
  if (s) nle__fail_prefix(ctx, "spectral direction");
  if (s == NLE_ERR_MEMCAP) nle__fail_suffix(ctx, " (the L-BFGS and fixed-point optimisers need no factor; fewer "
                                                 "neighbours kept in L+ (kappa) make it sparser)");
  return s;
}

nle_status nle_opt_new(nle_ctx *ctx, nle_model *model, const nle_csr *Wp, const nle_opt_opts *opts,
                       nle_opt **out) {
  *out = NULL;
  nle_opt_opts defaults;
  if (!opts) {
    nle_opt_opts_init(&defaults);
    opts = &defaults;
  }
  if (opts->learning_rate < 0 || opts->learning_rate_final < 0 ||
      (opts->learning_rate_final > 0 && !(opts->learning_rate > 0)) || !(opts->momentum >= 0 && opts->momentum < 1) ||
      !(opts->exaggeration >= 1) || opts->exaggeration_iters < 0 || opts->energy_every < 0 ||
      (opts->learning_rate > 0 && opts->kind != NLE_OPT_GD))
    return nle__fail(ctx, NLE_ERR_ARG, "optimiser: a learning rate goes with gradient descent, a final one with a "
                                       "first one; momentum in [0, 1), exaggeration >= 1, energy_every >= 0");
  if ((unsigned)opts->kind > NLE_OPT_SDM || opts->kappa < 0 || opts->memory < 1 || opts->max_iters < 0 || !(opts->tol >= 0) ||
      !(opts->x_tol >= 0) ||
      !(opts->c1 > 0 && opts->c1 < 1) || !(opts->shrink > 0 && opts->shrink < 1) || !(opts->sdm_tol > 0) ||
      opts->sdm_iters < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "optimiser: invalid options");
  nle_opt *o = nle__calloc(ctx, 1, sizeof *o, "the optimiser");
  if (!o) return NLE_ERR_NOMEM;
  o->model = model;
  o->o = *opts;
  o->n = Wp->rows;
  nle_csr *W = NULL;
  int spectral = opts->kind == NLE_OPT_SD || opts->kind == NLE_OPT_SDM;
  /* Only the partial-Hessian directions read W+ (SD, SD-: its sparsified
   * Laplacian; FP: its degrees): gradient descent, L-BFGS and CG need no
   * copy (at 70,000 points the copy and its symmetrisation took 0.5 s of a
   * t-SNE run, at a million several seconds and gigabytes). */
  int needs_graph = spectral || opts->kind == NLE_OPT_FP;
  nle_status s = needs_graph ? sparsified_weights(ctx, Wp, spectral ? opts->kappa : 0, &W) : NLE_OK;
  if (!s && opts->kind == NLE_OPT_FP) {
    o->degree = nle__calloc(ctx, (size_t)o->n, sizeof(double), "degrees");
    if (!o->degree) s = NLE_ERR_NOMEM;
    for (int64_t i = 0; !s && i < o->n; i++) {
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) o->degree[i] += 4.0 * nle_csr_value(W, q);
      if (!(o->degree[i] > 0)) o->degree[i] = 1e-10; /* an isolated point: a (tiny) gradient step */
    }
  }
  if (!s && spectral) {
    cholmod_l_start(&o->cc);
    o->cc_started = 1;
    o->cc.print = 0;
    s = factor_spectral(ctx, o, W);
    if (!s) s = nle__factor_solver_new(ctx, o->factor, &o->solver);
  }
  if (!s && opts->kind == NLE_OPT_SDM) { /* SD- multiplies by the same 4 L+ + mu I */
    o->sd_weights = W;
    W = NULL;
  }
  nle_csr_free(&W);
  if (s) {
    nle_opt_free(&o);
    return s;
  }
  *out = o;
  return NLE_OK;
}

/* (4 L+ + mu I) p = -g by the cached Cholesky factor, all d columns at once:
 * by our parallel supernodal solve (factor_solve.c; 11 against 20-25 ms on
 * the 70,000-point Fashion-MNIST factor at kappa = 3, 30 against 47-51 ms at
 * kappa = 7), or CHOLMOD's for a factor it does not take. */
static nle_status spectral_solve(nle_ctx *ctx, nle_opt *o, const nle_matd *g, nle_matd *p) {
  size_t n = g->rows, d = g->cols;
  if (o->solver) {
    for (size_t i = 0; i < n * d; i++) p->data[i] = -g->data[i];
    return nle__factor_solve(ctx, o->solver, p->data, d);
  }
  if (!o->rhs || o->rhs->ncol != d) {
    cholmod_l_free_dense(&o->rhs, &o->cc);
    o->rhs = cholmod_l_allocate_dense(n, d, n, CHOLMOD_REAL, &o->cc);
    if (!o->rhs) return nle__fail(ctx, NLE_ERR_NOMEM, "spectral direction: out of memory");
  }
  double *b = o->rhs->x;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) b[t * n + i] = -g->data[i * d + t];
  /* one BLAS thread: with more, its idle threads spin against ours */
  int blas_prev = nle__blas_set_threads(1);
  cholmod_dense *x = cholmod_l_solve(CHOLMOD_A, o->factor, o->rhs, &o->cc);
  nle__blas_set_threads(blas_prev);
  if (!x) return nle__fail(ctx, NLE_ERR_NUMERIC, "spectral direction: CHOLMOD solve failed");
  const double *xs = x->x;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) p->data[i * d + t] = xs[t * n + i];
  cholmod_l_free_dense(&x, &o->cc);
  return NLE_OK;
}

static nle_status sdm_direction(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p);

nle_status nle_opt_direction(nle_ctx *ctx, nle_opt *o, const nle_matd *g, nle_matd *p) {
  return nle_opt_direction_at(ctx, o, NULL, g, p);
}

nle_status nle_opt_direction_at(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p) {
  size_t n = g->rows, d = g->cols;
  if (o->o.kind == NLE_OPT_SDM) {
    if (!X || X->rows != n || X->cols != d)
      return nle__fail(ctx, NLE_ERR_ARG, "optimiser: SD- needs the current X (%zu x %zu) for its direction", n, d);
    return sdm_direction(ctx, o, X, g, p);
  }
  if ((int64_t)n != o->n || p->rows != n || p->cols != d)
    return nle__fail(ctx, NLE_ERR_ARG, "optimiser: gradient and direction must be %lld x d", (long long)o->n);
  if (o->o.kind == NLE_OPT_GD || o->o.kind == NLE_OPT_LBFGS || o->o.kind == NLE_OPT_CG) {
    /* The history-free part; nle_opt_run adds the quasi-Newton and
     * conjugate corrections. */
    for (size_t i = 0; i < n * d; i++) p->data[i] = -g->data[i];
    return NLE_OK;
  }
  if (o->o.kind == NLE_OPT_FP) {
    for (size_t i = 0; i < n; i++)
      for (size_t t = 0; t < d; t++) p->data[i * d + t] = -g->data[i * d + t] / o->degree[i];
    return NLE_OK;
  }
  return spectral_solve(ctx, o, g, p);
}

double nle__opt_dot(const double *a, const double *b, size_t len) {
  double s = 0.0;
  for (size_t i = 0; i < len; i++) s += a[i] * b[i];
  return s;
}

nle_status nle__opt_history_reset(nle_ctx *ctx, nle_opt *o, size_t len) {
  o->hist_count = o->hist_head = 0;
  if (o->hist_len == len) return NLE_OK;
  o->hist_len = len;
  size_t m = (size_t)o->o.memory;
  free(o->hist_s);
  free(o->hist_y);
  free(o->hist_rho);
  free(o->alpha);
  free(o->prev_g);
  free(o->prev_p);
  o->hist_s = o->hist_y = o->hist_rho = o->alpha = o->prev_g = o->prev_p = NULL;
  if (o->o.kind == NLE_OPT_LBFGS) {
    o->hist_s = nle__malloc(ctx, m * len * sizeof(double), "L-BFGS history");
    o->hist_y = nle__malloc(ctx, m * len * sizeof(double), "L-BFGS history");
    o->hist_rho = nle__malloc(ctx, m * sizeof(double), "L-BFGS history");
    o->alpha = nle__malloc(ctx, m * sizeof(double), "L-BFGS history");
    if (!o->hist_s || !o->hist_y || !o->hist_rho || !o->alpha) return NLE_ERR_NOMEM;
  } else if (o->o.kind == NLE_OPT_CG) {
    o->prev_g = nle__malloc(ctx, len * sizeof(double), "CG history");
    o->prev_p = nle__malloc(ctx, len * sizeof(double), "CG history");
    if (!o->prev_g || !o->prev_p) return NLE_ERR_NOMEM;
  }
  return NLE_OK;
}

/* L-BFGS two-loop recursion (Nocedal and Wright, alg. 7.4) on p = -g. */
static void lbfgs_direction(nle_opt *o, const double *g, double *p) {
  size_t len = o->hist_len, m = (size_t)o->o.memory;
  for (size_t i = 0; i < len; i++) p[i] = -g[i];
  for (int t = 0; t < o->hist_count; t++) { /* newest to oldest */
    size_t k = ((size_t)o->hist_head + m - 1 - (size_t)t) % m;
    o->alpha[k] = o->hist_rho[k] * nle__opt_dot(o->hist_s + k * len, p, len);
    for (size_t i = 0; i < len; i++) p[i] -= o->alpha[k] * o->hist_y[k * len + i];
  }
  if (o->hist_count) { /* H0 = gamma I with gamma = s'y / y'y of the newest pair */
    size_t k = ((size_t)o->hist_head + m - 1) % m;
    double gamma = 1.0 / (o->hist_rho[k] * nle__opt_dot(o->hist_y + k * len, o->hist_y + k * len, len));
    for (size_t i = 0; i < len; i++) p[i] *= gamma;
  }
  for (int t = o->hist_count - 1; t >= 0; t--) { /* oldest to newest */
    size_t k = ((size_t)o->hist_head + m - 1 - (size_t)t) % m;
    double beta = o->hist_rho[k] * nle__opt_dot(o->hist_y + k * len, p, len);
    for (size_t i = 0; i < len; i++) p[i] += (o->alpha[k] - beta) * o->hist_s[k * len + i];
  }
}

/* After an accepted step from x (gradient g) to xn (gradient gn). */
static void history_update(nle_opt *o, const double *x, const double *xn, const double *g, const double *gn,
                           const double *p) {
  size_t len = o->hist_len, m = (size_t)o->o.memory;
  if (o->o.kind == NLE_OPT_LBFGS) {
    double *s = o->hist_s + (size_t)o->hist_head * len, *y = o->hist_y + (size_t)o->hist_head * len;
    for (size_t i = 0; i < len; i++) {
      s[i] = xn[i] - x[i];
      y[i] = gn[i] - g[i];
    }
    double sy = nle__opt_dot(s, y, len);
    if (sy > 1e-12 * sqrt(nle__opt_dot(s, s, len) * nle__opt_dot(y, y, len))) { /* keep only curvature pairs */
      o->hist_rho[o->hist_head] = 1.0 / sy;
      o->hist_head = (o->hist_head + 1) % (int)m;
      if (o->hist_count < (int)m) o->hist_count++;
    }
  } else if (o->o.kind == NLE_OPT_CG) {
    memcpy(o->prev_g, g, len * sizeof(double));
    memcpy(o->prev_p, p, len * sizeof(double));
    o->hist_count = 1;
  }
}

/* |scale delta| / |x| (Frobenius) for the step x -> x + scale delta: the EE
 * paper's stopping test. */
static double relative_change(const double *delta, const double *x, size_t len, double scale) {
  double dd = 0.0, xx = 0.0;
  for (size_t i = 0; i < len; i++) {
    dd += delta[i] * delta[i];
    xx += x[i] * x[i];
  }
  return xx > 0 ? fabs(scale) * sqrt(dd / xx) : INFINITY;
}

double nle__opt_max_abs(const nle_matd *m) {
  double v = 0.0;
  for (size_t i = 0; i < m->rows * m->cols; i++) v = fmax(v, fabs(m->data[i]));
  return v;
}

nle_opt_state *nle__opt_state(nle_opt *o) { return &o->run; }

/* A cancelled run saves its checkpoint (if one is set) and keeps the
 * cancellation's message. */
nle_status nle__opt_cancelled(nle_ctx *ctx, nle_opt *o, const nle_matd *X) {
  if (!o->ckpt_path) return NLE_ERR_CANCELLED;
  char message[512];
  snprintf(message, sizeof message, "%s", nle_ctx_error(ctx));
  nle_status s = nle__opt_checkpoint(ctx, o, X);
  if (s) return s;
  return nle__fail(ctx, NLE_ERR_CANCELLED, "%s; checkpoint written to %s", message, o->ckpt_path);
}

/* Dissertation sec. 5.4: the fast engines start coarse and reach their
 * set accuracy after accuracy_iters iterations (geometrically; the exact
 * engine ignores it). Returns whether iteration `iteration` runs at an
 * accuracy of its own (inside the schedule, with a fast engine): a fact of
 * the iteration number, so a resumed run does what the uninterrupted one did. */
int nle__opt_schedule_accuracy(nle_ctx *ctx, const nle_opt *o, int iteration) {
  int inside = o->o.accuracy_iters > 0 && iteration < o->o.accuracy_iters;
  nle_model_set_accuracy(ctx, o->model, inside ? (double)iteration / (double)o->o.accuracy_iters : 1.0);
  return inside && nle_model_engine(o->model) != NLE_REPULSION_EXACT;
}

/* A fresh run's state (a resumed one keeps what the checkpoint restored). */
static nle_status run_begin(nle_ctx *ctx, nle_opt *o, size_t len) {
  nle_opt_state *r = &o->run;
  if (r->active) return NLE_OK;
  memset(&r->rep, 0, sizeof r->rep);
  r->E = 0.0;
  r->step = 1.0;
  r->prev_slope = 0.0;
  r->stalled = 0;
  free(r->velocity);
  free(r->gain);
  r->velocity = r->gain = NULL;
  r->active = 1;
  return nle__opt_history_reset(ctx, o, len);
}

static nle_status opt_run(nle_ctx *ctx, nle_opt *o, nle_matd *X, nle_opt_report *out);

nle_status nle_opt_run(nle_ctx *ctx, nle_opt *o, nle_matd *X, nle_opt_report *out) {
  bool opened = nle__stage_begin(ctx, "optimising");
  nle_status s = opt_run(ctx, o, X, out);
  nle__stage_end(ctx, opened);
  return s;
}

/* E and its gradient (into Gt) at X + step P: the line search's trial. */
typedef struct {
  nle_ctx *ctx;
  nle_model *model;
  const nle_matd *X, *P;
  nle_matd *Xt, *Gt;
} model_trial;

static nle_status model_at_step(void *user, double step, double *E) {
  model_trial *t = user;
  size_t len = t->X->rows * t->X->cols;
  for (size_t i = 0; i < len; i++) t->Xt->data[i] = t->X->data[i] + step * t->P->data[i];
  return nle_model_eval(t->ctx, t->model, t->Xt, E, t->Gt);
}

static nle_status opt_run(nle_ctx *ctx, nle_opt *o, nle_matd *X, nle_opt_report *out) {
  size_t n = X->rows, d = X->cols;
  memset(out, 0, sizeof *out);
  if ((int64_t)n != o->n) return nle__fail(ctx, NLE_ERR_ARG, "optimiser: X has %zu rows, the model %lld", n, (long long)o->n);
  int resumed = o->run.active;
  nle_status s = run_begin(ctx, o, n * d);
  if (s) return s;
  if (o->o.learning_rate > 0) return nle__opt_run_fixed_rate(ctx, o, o->model, X, out);
  nle_opt_state *r = &o->run;
  nle_opt_report *rep = &r->rep;
  double t0 = nle_time_seconds(), seconds0 = rep->seconds;
  nle_matd *G = NULL, *P = NULL, *Xt = NULL, *Gt = NULL;
  s = nle_matd_alloc(ctx, n, d, &G);
  if (!s) s = nle_matd_alloc(ctx, n, d, &P);
  if (!s) s = nle_matd_alloc(ctx, n, d, &Xt);
  if (!s) s = nle_matd_alloc(ctx, n, d, &Gt);
  /* The gradient at X: a resumed run recomputes it (bit for bit the same),
   * without counting the evaluation again. */
  double E = 0.0;
  nle__opt_schedule_accuracy(ctx, o, rep->iterations);
  if (!s) s = nle_model_eval(ctx, o->model, X, &E, G);
  if (!s && !resumed) {
    rep->evaluations = 1;
    rep->E0 = r->E = E;
  }
  while (!s && rep->iterations < o->o.max_iters) {
    if (nle__opt_max_abs(G) <= o->o.grad_tol) {
      rep->converged = 1;
      break;
    }
    if (o->o.time_budget > 0 && rep->seconds >= o->o.time_budget) break;
    /* A new accuracy: E and G again at X, so the line search compares values
     * of one approximation. */
    if (rep->iterations > 0 && nle__opt_schedule_accuracy(ctx, o, rep->iterations)) {
      s = nle_model_eval(ctx, o->model, X, &E, G);
      if (s) break;
      rep->evaluations++;
      r->E = E;
    }
    s = nle_opt_direction_at(ctx, o, X, G, P);
    if (s) break;
    if (o->o.kind == NLE_OPT_LBFGS) {
      lbfgs_direction(o, G->data, P->data);
    } else if (o->o.kind == NLE_OPT_CG && o->hist_count) {
      /* Polak-Ribiere+ */
      double gg = nle__opt_dot(o->prev_g, o->prev_g, n * d), beta = 0.0;
      for (size_t i = 0; i < n * d; i++) beta += G->data[i] * (G->data[i] - o->prev_g[i]);
      beta = gg > 0 && beta > 0 ? beta / gg : 0.0;
      for (size_t i = 0; i < n * d; i++) P->data[i] += beta * o->prev_p[i];
    }
    double slope = nle__opt_dot(G->data, P->data, n * d);
    int restarted = 0;
    if (!(slope < 0.0) && (o->o.kind == NLE_OPT_LBFGS || o->o.kind == NLE_OPT_CG)) {
      /* Not downhill (can happen for CG, or L-BFGS after rounding): restart. */
      for (size_t i = 0; i < n * d; i++) P->data[i] = -G->data[i];
      slope = -nle__opt_dot(G->data, G->data, n * d);
      restarted = 1;
    }
    int history = o->hist_count && !restarted;
    /* First trial steps (Nocedal and Wright sec. 3.5): directions without a
     * curvature scale start at 1 / |p| the first time, then at the previous
     * step times the ratio of the slopes; SD and FP keep the last accepted
     * step, L-BFGS with history takes 1. */
    double step = r->step;
    int gradient_like = o->o.kind == NLE_OPT_GD || o->o.kind == NLE_OPT_CG || o->o.kind == NLE_OPT_LBFGS;
    if (o->o.kind == NLE_OPT_LBFGS && history) step = 1.0; /* the quasi-Newton step has its own scale */
    else if (gradient_like) {
      if (rep->iterations == 0 || (!history && o->o.kind != NLE_OPT_GD))
        step = 1.0 / sqrt(nle__opt_dot(P->data, P->data, n * d));
      else if (r->prev_slope < 0) step = fmin(step * r->prev_slope / slope, 1e3 * step);
    }
    if (!(slope < 0.0)) { /* cannot happen for pd B, but rounding near a minimum */
      rep->converged = 1;
      break;
    }
    /* Backtracking from the last accepted step (Armijo sufficient decrease). */
    double Et = 0.0;
    int evaluations = 0;
    bool accepted = false;
    nle__armijo armijo = {o->o.c1, o->o.shrink, 60};
    model_trial trial = {ctx, o->model, X, P, Xt, Gt};
    s = nle__armijo_backtrack(&armijo, E, slope, model_at_step, &trial, &step, &Et, &accepted, &evaluations);
    if (s) break;
    rep->evaluations += evaluations;
    if (!accepted) { /* no decrease at any step: a stationary point to rounding */
      rep->converged = 1;
      break;
    }
    /* The iteration is complete: commit it to X and the run state at once,
     * so that a cancellation anywhere above leaves a resumable state. */
    if (restarted) o->hist_count = 0;
    int x_settled = o->o.x_tol > 0 && relative_change(P->data, X->data, n * d, step) <= o->o.x_tol;
    history_update(o, X->data, Xt->data, G->data, Gt->data, P->data);
    memcpy(X->data, Xt->data, n * d * sizeof(double));
    memcpy(G->data, Gt->data, n * d * sizeof(double));
    double decrease = E - Et;
    E = r->E = Et;
    r->step = step;
    r->prev_slope = slope;
    rep->iterations++;
    rep->seconds = seconds0 + nle_time_seconds() - t0;
    if (o->o.trace) o->o.trace(o->o.trace_user, rep->iterations, rep->seconds, E, rep->evaluations, step);
    /* One small decrease can be a short backtracked step, not convergence:
     * the tolerance must hold for STALL_ITERS iterations in a row. */
    r->stalled = decrease <= o->o.tol * fabs(E) ? r->stalled + 1 : 0;
    if (r->stalled >= STALL_ITERS || x_settled) {
      rep->converged = 1;
      break;
    }
    if (o->ckpt_every && rep->iterations % o->ckpt_every == 0) s = nle__opt_checkpoint(ctx, o, X);
    if (!s && nle__progress(ctx, "optimising", (double)rep->iterations / (double)o->o.max_iters)) s = NLE_ERR_CANCELLED;
  }
  rep->E = E;
  rep->grad_max = G ? nle__opt_max_abs(G) : 0.0;
  rep->seconds = seconds0 + nle_time_seconds() - t0;
  nle_matd_free(&G);
  nle_matd_free(&P);
  nle_matd_free(&Xt);
  nle_matd_free(&Gt);
  *out = *rep;
  if (s == NLE_ERR_CANCELLED) return nle__opt_cancelled(ctx, o, X); /* the run stays resumable */
  r->active = 0;
  if (s) return s;
  if (!rep->converged)
    return nle__fail(ctx, NLE_WARN_NOT_CONVERGED, "optimiser: stopped after %d iterations (%.1f s) before the tolerance",
                     rep->iterations, rep->seconds);
  return NLE_OK;
}

/* ---- SD- ------------------------------------------------------------------ */

/* out = (4 L+ + mu I) v, with the sparsified L+ of the factor. */
static void spectral_apply(const nle_opt *o, const nle_matd *v, nle_matd *out) {
  const nle_csr *W = o->sd_weights;
  size_t d = v->cols;
  for (int64_t i = 0; i < W->rows; i++) {
    double *oi = out->data + (size_t)i * d;
    const double *vi = v->data + (size_t)i * d;
    for (size_t t = 0; t < d; t++) oi[t] = o->mu * vi[t];
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      const double *vj = v->data + (size_t)W->colind[q] * d;
      double w = 4.0 * nle_csr_value(W, q);
      for (size_t t = 0; t < d; t++) oi[t] += w * (vi[t] - vj[t]);
    }
  }
}

/* B p = -g with B = 4 L+ + mu I + the psd diagonal blocks of the repulsive
 * Hessian at X (dissertation sec. 3.3), by linear CG preconditioned with the
 * spectral direction's factor; it exits once the residual is below sdm_tol
 * |g| or after sdm_iters iterations (0.1 and 50 by default, as there). */

static nle_status sdm_direction(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p) {
  size_t n = g->rows, d = g->cols, len = n * d;
  nle_status s = NLE_OK;
  nle_matd **work[4] = {&o->cg_r, &o->cg_z, &o->cg_d, &o->cg_ad};
  for (int i = 0; i < 4 && !s; i++)
    if (!*work[i] || (*work[i])->cols != d) {
      nle_matd_free(work[i]);
      s = nle_matd_alloc(ctx, n, d, work[i]);
    }
  if (!s) s = nle__model_curvature_prepare(ctx, o->model, X);
  if (s) return s;
  nle_matd *r = o->cg_r, *z = o->cg_z, *dir = o->cg_d, *ad = o->cg_ad;
  double gnorm = sqrt(nle__opt_dot(g->data, g->data, len));
  memset(p->data, 0, len * sizeof(double));
  for (size_t i = 0; i < len; i++) r->data[i] = -g->data[i];
  /* z = M^-1 r: the spectral direction solve (M p = -g with g = -r). */
  for (size_t i = 0; i < len; i++) ad->data[i] = -r->data[i];
  s = spectral_solve(ctx, o, ad, z);
  if (s) return s;
  memcpy(dir->data, z->data, len * sizeof(double));
  double rz = nle__opt_dot(r->data, z->data, len);
  for (int it = 0; it < o->o.sdm_iters && !s; it++) {
    spectral_apply(o, dir, ad);
    s = nle__model_curvature_apply(ctx, o->model, X, dir, z); /* z as scratch */
    if (s) break;
    for (size_t i = 0; i < len; i++) ad->data[i] += z->data[i];
    double dad = nle__opt_dot(dir->data, ad->data, len);
    if (!(dad > 0)) break; /* B is pd; rounding only */
    double alpha = rz / dad;
    for (size_t i = 0; i < len; i++) {
      p->data[i] += alpha * dir->data[i];
      r->data[i] -= alpha * ad->data[i];
    }
    if (sqrt(nle__opt_dot(r->data, r->data, len)) <= o->o.sdm_tol * gnorm) break;
    for (size_t i = 0; i < len; i++) ad->data[i] = -r->data[i];
    s = spectral_solve(ctx, o, ad, z);
    double rz_new = nle__opt_dot(r->data, z->data, len), beta = rz_new / rz;
    rz = rz_new;
    for (size_t i = 0; i < len; i++) dir->data[i] = z->data[i] + beta * dir->data[i];
  }
  return s;
}

