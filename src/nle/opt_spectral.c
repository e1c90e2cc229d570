/* opt_spectral.c — the spectral direction (dissertation sec. 3.3): SD solves
 * (4 L+ + mu I) p = -g with L+ the attractive Laplacian sparsified to kappa
 * neighbours per point, mu = 1e-10 min L+_nn, by a CHOLMOD factor computed
 * once and reused for every iteration and every column; SD- adds the psd
 * diagonal blocks of the repulsive Hessian and solves by preconditioned CG.
 * Also the W+ copy the partial-Hessian optimisers read (nle__opt_graph). */
#include "opt_internal.h"
#include "../spectral/spectral_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* SD's factor and its solves; SD- adds the sparsified W+ of the factor, mu
 * and the work vectors of its CG. */
typedef struct {
  cholmod_common cc;
  int cc_started;
  cholmod_factor *factor;      /* of 4 L+ + mu I */
  nle__factor_solver *solver;  /* its solves (NULL: CHOLMOD's) */
  cholmod_dense *rhs;          /* N x d workspace, column-major */
  nle_csr *sd_weights;
  double mu;
  nle_matd *cg_r, *cg_z, *cg_d, *cg_ad;
} sd_state;

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
nle_status nle__opt_graph(nle_ctx *ctx, const nle_csr *W, int kappa, nle_csr **out) {
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
static nle_status factor_spectral(nle_ctx *ctx, sd_state *o, const nle_csr *W) {
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

/* (4 L+ + mu I) p = -g by the cached Cholesky factor, all d columns at once:
 * by our parallel supernodal solve (factor_solve.c; 11 against 20-25 ms on
 * the 70,000-point Fashion-MNIST factor at kappa = 3, 30 against 47-51 ms at
 * kappa = 7), or CHOLMOD's for a factor it does not take. */
static nle_status spectral_solve(nle_ctx *ctx, sd_state *o, const nle_matd *g, nle_matd *p) {
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

/* out = (4 L+ + mu I) v, with the sparsified L+ of the factor. */
static void spectral_apply(const sd_state *o, const nle_matd *v, nle_matd *out) {
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

static nle_status sdm_direction(nle_ctx *ctx, nle_opt *opt, const nle_matd *X, const nle_matd *g, nle_matd *p) {
  size_t n = g->rows, d = g->cols, len = n * d;
  sd_state *o = opt->state;
  nle_status s = NLE_OK;
  nle_matd **work[4] = {&o->cg_r, &o->cg_z, &o->cg_d, &o->cg_ad};
  for (int i = 0; i < 4 && !s; i++)
    if (!*work[i] || (*work[i])->cols != d) {
      nle_matd_free(work[i]);
      s = nle_matd_alloc(ctx, n, d, work[i]);
    }
  if (!s) s = nle__model_curvature_prepare(ctx, opt->model, X);
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
  for (int it = 0; it < opt->o.sdm_iters && !s; it++) {
    spectral_apply(o, dir, ad);
    s = nle__model_curvature_apply(ctx, opt->model, X, dir, z); /* z as scratch */
    if (s) break;
    for (size_t i = 0; i < len; i++) ad->data[i] += z->data[i];
    double dad = nle__opt_dot(dir->data, ad->data, len);
    if (!(dad > 0)) break; /* B is pd; rounding only */
    double alpha = rz / dad;
    for (size_t i = 0; i < len; i++) {
      p->data[i] += alpha * dir->data[i];
      r->data[i] -= alpha * ad->data[i];
    }
    if (sqrt(nle__opt_dot(r->data, r->data, len)) <= opt->o.sdm_tol * gnorm) break;
    for (size_t i = 0; i < len; i++) ad->data[i] = -r->data[i];
    s = spectral_solve(ctx, o, ad, z);
    double rz_new = nle__opt_dot(r->data, z->data, len), beta = rz_new / rz;
    rz = rz_new;
    for (size_t i = 0; i < len; i++) dir->data[i] = z->data[i] + beta * dir->data[i];
  }
  return s;
}

static nle_status sd_init(nle_ctx *ctx, nle_opt *opt, nle_csr **W) {
  sd_state *o = opt->state;
  cholmod_l_start(&o->cc);
  o->cc_started = 1;
  o->cc.print = 0;
  nle_status s = factor_spectral(ctx, o, *W);
  if (!s) s = nle__factor_solver_new(ctx, o->factor, &o->solver);
  return s;
}

static nle_status sdm_init(nle_ctx *ctx, nle_opt *opt, nle_csr **W) {
  nle_status s = sd_init(ctx, opt, W);
  if (!s) { /* SD- multiplies by the same 4 L+ + mu I */
    sd_state *o = opt->state;
    o->sd_weights = *W;
    *W = NULL;
  }
  return s;
}

static void sd_free(nle_opt *opt) {
  sd_state *o = opt->state;
  if (o->cc_started) {
    nle__factor_solver_free(&o->solver);
    cholmod_l_free_factor(&o->factor, &o->cc);
    cholmod_l_free_dense(&o->rhs, &o->cc);
    cholmod_l_finish(&o->cc);
  }
  nle_csr_free(&o->sd_weights);
  nle_matd_free(&o->cg_r);
  nle_matd_free(&o->cg_z);
  nle_matd_free(&o->cg_d);
  nle_matd_free(&o->cg_ad);
}

static nle_status sd_direction(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p) {
  (void)X;
  return spectral_solve(ctx, o->state, g, p);
}

const nle__optimizer nle__opt_sd = {.name = "sd", .graph = NLE__GRAPH_SPARSIFIED, .first_step = NLE__FIRST_STEP_KEEP,
                                    .state_size = sizeof(sd_state), .state_init = sd_init, .state_free = sd_free,
                                    .direction = sd_direction};
const nle__optimizer nle__opt_sdm = {.name = "sd-", .alias = "sdm", .graph = NLE__GRAPH_SPARSIFIED, .needs_x = true,
                                     .first_step = NLE__FIRST_STEP_KEEP, .state_size = sizeof(sd_state),
                                     .state_init = sdm_init, .state_free = sd_free, .direction = sdm_direction};
