/* oos_batch.c — the out-of-sample map F(y) for many points with the fast
 * engines (dissertation ch. 5 applied to EE paper sec. 4.5): all new points
 * are minimised together, so that each evaluation sums the repulsion of
 * every point at once by the engine's plan of the training map (its row's
 * oos part: the fast Gauss transform for the Gaussian kernel, FFT
 * interpolation for both), O(M + N) instead of O(M N); the attraction
 * over each point's k neighbours stays exact. The steps, line searches and
 * stopping tests are the per-point minimiser's (outofsample.c), per point. */
#include "oos_internal.h"
#include "../core/vecmath.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { FAR_MARGIN = 8 }; /* kernel lengths beyond the training map */

/* What the evaluations share, read-only while the points are minimised. */
typedef struct {
  const nle_trained *t;
  const nle__oos_engine *engine; /* the row's part for new points (model_internal.h) */
  nle_matd Xc; /* the training X about its centre */
  double centre[3], lo[3], hi[3];
  void *plan;  /* the engine's plan of the training map's sums */
} batch_engine;

/* The engine's scratch for the points of one range (rows of the run's
 * arrays from the range's first position on). */
typedef struct {
  double *tgt, *phi, *S, *F;
  size_t *slot; /* per listed point: its row in tgt, or SIZE_MAX (summed directly) */
} engine_scratch;

/* S[i] = sum_n K(|x - x_n|^2) and R[i] = sum_n K'(x - x_n) (K' = dK/d(d^2))
 * at the positions pos[list[i]]. Points thrown beyond the training map by a
 * trial step are summed directly, so the grids keep the map's extent.
 * serial: called from inside a parallel block (the FFT grids are only
 * read, so ranges of points run at once). */
static nle_status batch_repulsion(nle_ctx *ctx, const batch_engine *b, const engine_scratch *w, const double *pos,
                                  const size_t *list, size_t count, double *S, double *R, int serial) {
  const nle_matd *X = &b->Xc;
  size_t d = X->cols, n = X->rows, inside = 0;
  int student = b->t->kind == NLE_MODEL_TSNE || b->t->kind == NLE_MODEL_TEE;
  for (size_t i = 0; i < count; i++) {
    const double *x = pos + list[i] * d;
    int far = 0;
    for (size_t c = 0; c < d; c++) far |= x[c] - b->centre[c] < b->lo[c] || x[c] - b->centre[c] > b->hi[c];
    w->slot[i] = far ? SIZE_MAX : inside;
    if (!far) {
      for (size_t c = 0; c < d; c++) w->tgt[inside * d + c] = x[c] - b->centre[c];
      inside++;
      continue;
    }
    double s = 0.0, r[3] = {0, 0, 0};
    for (size_t m = 0; m < n; m++) {
      double u[3], dn = 0.0;
      for (size_t c = 0; c < d; c++) u[c] = x[c] - b->centre[c] - X->data[m * d + c], dn += u[c] * u[c];
      double k = student ? 1.0 / (1.0 + dn) : exp(-dn), kp = student ? -k * k : -k;
      s += k;
      for (size_t c = 0; c < d; c++) r[c] += kp * u[c];
    }
    S[i] = s;
    for (size_t c = 0; c < d; c++) R[i * d + c] = r[c];
  }
  nle_matd T = {inside, d, w->tgt};
  nle_status s = inside ? b->engine->sums(ctx, b->plan, &T, w->S, w->F, w->phi, serial) : NLE_OK;
  for (size_t i = 0; !s && i < count; i++) { /* back in list order */
    size_t j = w->slot[i];
    if (j == SIZE_MAX) continue;
    S[i] = w->S[j];
    for (size_t c = 0; c < d; c++) R[i * d + c] = w->F[j * d + c];
  }
  return s;
}

typedef struct {
  const nle_trained *t;
  const int32_t *idx; /* M x k neighbours */
  const double *a;    /* M x k attraction weights */
  size_t k;
} batch_attraction;

/* E'(x) and its gradient (oos_energy's) for the listed points at pos. */
/* One listed point's E and gradient: the attraction over its k training
 * neighbours (one SIMD loop with the vector log1p for the Student kernel)
 * plus the repulsion's sums S and R. */
typedef struct {
  const batch_attraction *at;
  const double *pos, *S, *R;
  const size_t *list;
  size_t count;
  double *E, *G;
} energy_job;

enum { ENERGY_BLOCK = 256, LOG1P_CHUNK = 128 };

/* The attraction's log1p over a chunk of a point's neighbours, at the
 * instruction set's full width: elementwise in nle__log1p, the same bits in
 * every clone (libmvec's log1p, one version per set, kept these loops in
 * 2-lane SSE; 15% of a 10,000-point t-SNE transform). */
NLE_HOT static void log1p_chunk(double *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i] = nle__log1p(v[i]);
}

static int energy_block(void *job, size_t blk, void *scratch) {
  (void)scratch;
  const energy_job *j = job;
  const nle_trained *t = j->at->t;
  size_t d = t->X->cols, k = j->at->k, i1 = (blk + 1) * ENERGY_BLOCK < j->count ? (blk + 1) * ENERGY_BLOCK : j->count;
  int student = t->kind == NLE_MODEL_TSNE || t->kind == NLE_MODEL_TEE;
  int ee = t->kind == NLE_MODEL_EE || t->kind == NLE_MODEL_TEE;
  const double *X = t->X->data;
  for (size_t i = blk * ENERGY_BLOCK; i < i1; i++) {
    size_t q = j->list[i];
    const double *x = j->pos + q * d, *w = j->at->a + q * k;
    const int32_t *idx = j->at->idx + q * k;
    double e = 0.0, g[3] = {0, 0, 0};
    if (d == 2) {
      double x0 = x[0], x1 = x[1], g0 = 0.0, g1 = 0.0;
      if (student) {
        for (size_t m0 = 0; m0 < k; m0 += LOG1P_CHUNK) {
          size_t len = k - m0 < LOG1P_CHUNK ? k - m0 : LOG1P_CHUNK;
          const double *wm = w + m0;
          const int32_t *im = idx + m0;
          double dn[LOG1P_CHUNK];
#pragma omp simd reduction(+ : g0, g1)
          for (size_t m = 0; m < len; m++) {
            double u0 = x0 - X[2 * (size_t)im[m]], u1 = x1 - X[2 * (size_t)im[m] + 1];
            dn[m] = u0 * u0 + u1 * u1;
            double c = 4.0 * wm[m] / (1.0 + dn[m]);
            g0 += c * u0;
            g1 += c * u1;
          }
          log1p_chunk(dn, len);
#pragma omp simd reduction(+ : e)
          for (size_t m = 0; m < len; m++) e += 2.0 * wm[m] * dn[m];
        }
      } else {
#pragma omp simd reduction(+ : e, g0, g1)
        for (size_t m = 0; m < k; m++) {
          double u0 = x0 - X[2 * (size_t)idx[m]], u1 = x1 - X[2 * (size_t)idx[m] + 1];
          e += 2.0 * w[m] * (u0 * u0 + u1 * u1);
          g0 += 4.0 * w[m] * u0;
          g1 += 4.0 * w[m] * u1;
        }
      }
      g[0] = g0;
      g[1] = g1;
    } else {
      for (size_t m = 0; m < k; m++) {
        const double *xn = X + (size_t)idx[m] * d;
        double dn = 0.0;
        for (size_t c = 0; c < d; c++) dn += (x[c] - xn[c]) * (x[c] - xn[c]);
        double kk = student ? 1.0 / (1.0 + dn) : 1.0;
        e += 2.0 * w[m] * (student ? nle__log1p(dn) : dn);
        for (size_t c = 0; c < d; c++) g[c] += 4.0 * w[m] * kk * (x[c] - xn[c]);
      }
    }
    double scale;
    if (ee) {
      e += 2.0 * t->lambda * j->S[i];
      scale = 4.0 * t->lambda;
    } else {
      e += t->lambda * log(t->z_total + 2.0 * j->S[i]);
      scale = 4.0 * t->lambda / (t->z_total + 2.0 * j->S[i]);
    }
    j->E[q] = e;
    for (size_t c = 0; j->G && c < d; c++) j->G[q * d + c] = g[c] + scale * j->R[i * d + c];
  }
  return 0;
}

/* Energies (and gradients when G) of the listed points: S and R hold count
 * sums each. serial: inside a parallel block, no threads of its own. */
static nle_status batch_energy(nle_ctx *ctx, const batch_engine *b, const engine_scratch *w,
                               const batch_attraction *at, const double *pos, const size_t *list, size_t count,
                               double *E, double *G, double *S, double *R, int serial) {
  nle_status s = batch_repulsion(ctx, b, w, pos, list, count, S, R, serial);
  if (s) return s;
  energy_job job = {at, pos, S, R, list, count, E, G};
  size_t blocks = (count + ENERGY_BLOCK - 1) / ENERGY_BLOCK;
  if (serial) {
    for (size_t blk = 0; blk < blocks; blk++) energy_block(&job, blk, NULL);
    return NLE_OK;
  }
  return nle__for_blocks(ctx, "out-of-sample", blocks, nle__threads_for(ctx, (double)count * (double)at->k * 20.0), 0,
                         energy_block, &job);
}

/* The run's arrays, one row per new point q (pos: out's rows), and the
 * points' order: the minimiser takes ranges of order[]. Every point's
 * steps depend on its own energies alone, so a range gives each point the
 * bits the whole set would. */
typedef struct {
  const batch_engine *b;
  const batch_attraction *at;
  size_t m, d;
  int max_iters;
  double scale; /* rms distance of the training map from its centre */
  const size_t *order;
  double *X, *Xt, *E, *Et, *G, *step, *precond, *slope, *rep;
  double *H, *dir, *Gold; /* per point: its metric (d x d), direction or step taken, gradient before it */
  size_t *list, *pending;
  unsigned char *done;
  engine_scratch w; /* rows for all m points */
} minimiser;

/* The per-point minimiser (outofsample.c's metric, steps, line search and
 * stopping tests) for the points order[i0..i1), each evaluation summing
 * all of them at once. */
static nle_status minimise_range(nle_ctx *ctx, const minimiser *z, size_t i0, size_t i1, int serial) {
  size_t d = z->d, m = z->m, count = i1 - i0;
  size_t *list = z->list + i0, *pending = z->pending + i0;
  double *E = z->E, *Et = z->Et, *G = z->G, *Xt = z->Xt, *X = z->X, *step = z->step, *precond = z->precond;
  double *slope = z->slope, *S = z->rep + i0, *R = z->rep + m + i0 * d, *H = z->H, *dir = z->dir, *Gold = z->Gold;
  unsigned char *done = z->done;
  engine_scratch w = {z->w.tgt + i0 * d, z->w.phi + i0 * (d + 1), z->w.S + i0, z->w.F + i0 * d, z->w.slot + i0};
  memcpy(list, z->order + i0, count * sizeof(size_t));
  for (size_t i = i0; i < i1; i++) nle__oos_metric_init(H + z->order[i] * d * d, d, precond[z->order[i]]);
  nle_status s = batch_energy(ctx, z->b, &w, z->at, X, list, count, E, G, S, R, serial);
  for (int it = 0; !s && it < z->max_iters; it++) {
    size_t active = 0;
    for (size_t i = i0; i < i1; i++) {
      size_t q = z->order[i];
      if (done[q]) continue;
      double gmax = 0.0;
      for (size_t c = 0; c < d; c++) gmax = fmax(gmax, fabs(G[q * d + c]));
      slope[q] = nle__oos_metric_direction(H + q * d * d, G + q * d, d, precond[q], dir + q * d);
      if (gmax <= 1e-10 * fmax(1.0, precond[q])) done[q] = 1;
      else pending[active++] = q;
    }
    if (!active) break;
    size_t accepted = 0;
    nle__armijo armijo = nle__armijo_default(); /* the one line search's test, per point of the batch */
    while (!s && active) {
      for (size_t i = 0; i < active; i++)
        for (size_t c = 0; c < d; c++) {
          size_t q = pending[i];
          Xt[q * d + c] = X[q * d + c] + step[q] * dir[q * d + c];
        }
      s = batch_energy(ctx, z->b, &w, z->at, Xt, pending, active, Et, NULL, S, R, serial);
      size_t still = 0;
      for (size_t i = 0; !s && i < active; i++) {
        size_t q = pending[i];
        if (nle__armijo_accepts(&armijo, E[q], Et[q], step[q], slope[q])) {
          double move = 0.0;
          for (size_t c = 0; c < d; c++) {
            dir[q * d + c] = Xt[q * d + c] - X[q * d + c]; /* the step taken, for the metric's update */
            move += dir[q * d + c] * dir[q * d + c];
          }
          memcpy(X + q * d, Xt + q * d, d * sizeof(double));
          memcpy(Gold + q * d, G + q * d, d * sizeof(double));
          list[accepted++] = q;
          /* The approximate gradient does not vanish at the minimum: a
           * point whose move fell below 1e-6 of the map's scale is done. */
          if (sqrt(move) < 1e-6 * z->scale) done[q] = 1;
        } else if (step[q] < 1e-9) {
          done[q] = 1; /* no descent found along this direction */
        } else {
          step[q] *= armijo.shrink;
          pending[still++] = q;
        }
      }
      active = still;
    }
    if (!s && accepted) s = batch_energy(ctx, z->b, &w, z->at, X, list, accepted, E, G, S, R, serial);
    for (size_t i = 0; !s && i < accepted; i++) {
      size_t q = list[i];
      double y[3], Hy[3];
      for (size_t c = 0; c < d; c++) y[c] = G[q * d + c] - Gold[q * d + c];
      nle__oos_metric_update(H + q * d * d, dir + q * d, y, d, Hy);
      step[q] = fmin(1.0, 2.0 * step[q]);
    }
  }
  return s;
}

/* FFT: the points in ranges of RANGE points, run in parallel, each range's
 * evaluations on its own thread. One parallel loop for the whole
 * minimisation: evaluating all points together forked and joined the
 * threads twice per line-search trial, ~2,800 trials for 10,000 points,
 * and on a 2-core machine shared with another job each join waited for a
 * descheduled thread (minimisation 9-12 s at 2 threads, 1.1 s at 1). */
enum { RANGE = 256 };

static int range_block(void *job, size_t r, void *scratch) {
  (void)scratch;
  const minimiser *z = job;
  size_t i1 = (r + 1) * RANGE < z->m ? (r + 1) * RANGE : z->m;
  return minimise_range(NULL, z, r * RANGE, i1, 1) != NLE_OK; /* serial evaluations cannot fail */
}

nle_status nle__oos_forward_batched(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, const nle_csr *nbrs,
                                    const nle_csr *P, int max_iters, nle_matd *out) {
  size_t m = Ynew->rows, d = t->X->cols, n = t->X->rows, k = (size_t)t->k, D = t->Y->cols;
  batch_engine b = {t, nle__engine_find(t->engine)->oos, {n, d, NULL}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, NULL};
  batch_attraction at = {t, NULL, NULL, k};
  minimiser z;
  memset(&z, 0, sizeof z);
  z.b = &b;
  z.at = &at;
  z.m = m;
  z.d = d;
  z.max_iters = max_iters;
  z.X = out->data;
  double *a = nle__malloc(ctx, (m * k + k) * sizeof(double), "out-of-sample weights");
  int32_t *idx = nle__malloc(ctx, m * k * sizeof(int32_t), "out-of-sample neighbours");
  z.E = nle__malloc(ctx, 2 * m * sizeof(double), "out-of-sample energies");
  z.G = nle__malloc(ctx, 2 * m * d * sizeof(double), "out-of-sample gradients");
  z.H = nle__malloc(ctx, (m * d * d + 2 * m * d) * sizeof(double), "out-of-sample metrics");
  z.step = nle__malloc(ctx, 3 * m * sizeof(double), "out-of-sample steps");
  z.list = nle__malloc(ctx, 2 * m * sizeof(size_t), "out-of-sample lists");
  z.done = nle__calloc(ctx, m ? m : 1, 1, "out-of-sample flags");
  z.rep = nle__malloc(ctx, m * (d + 1) * sizeof(double), "out-of-sample sums");
  b.Xc.data = nle__malloc(ctx, n * d * sizeof(double), "centred X");
  z.w.tgt = nle__malloc(ctx, m * d * sizeof(double), "targets");
  z.w.phi = nle__malloc(ctx, m * (d + 1) * sizeof(double), "engine sums");
  z.w.S = nle__malloc(ctx, m * (d + 1) * sizeof(double), "engine sums");
  z.w.slot = nle__malloc(ctx, (m ? m : 1) * sizeof(size_t), "engine slots");
  size_t *order = NULL;
  nle_status s = NLE_OK;
  if (!a || !idx || !z.E || !z.G || !z.H || !z.step || !z.list || !z.done || !z.rep || !b.Xc.data || !z.w.tgt || !z.w.phi ||
      !z.w.S || !z.w.slot)
    s = NLE_ERR_NOMEM;
  if (!s) {
    z.Et = z.E + m;
    z.Xt = z.G + m * d;
    z.dir = z.H + m * d * d;
    z.Gold = z.dir + m * d;
    z.precond = z.step + m;
    z.slope = z.step + 2 * m;
    z.pending = z.list + m;
    z.w.F = z.w.S + m;
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < d; c++) b.centre[c] += t->X->data[i * d + c] / (double)n;
    for (size_t c = 0; c < d; c++) b.lo[c] = INFINITY, b.hi[c] = -INFINITY;
    for (size_t i = 0; i < n; i++)
      for (size_t c = 0; c < d; c++) {
        double v = b.Xc.data[i * d + c] = t->X->data[i * d + c] - b.centre[c];
        b.lo[c] = fmin(b.lo[c], v - FAR_MARGIN);
        b.hi[c] = fmax(b.hi[c], v + FAR_MARGIN);
      }
    for (size_t i = 0; i < n * d; i++) z.scale += b.Xc.data[i] * b.Xc.data[i];
    z.scale = sqrt(z.scale / (double)n) + 1e-300;
    double corners[6];
    for (size_t c = 0; c < d; c++) corners[c] = b.lo[c], corners[d + c] = b.hi[c];
    nle_matd region = {2, d, corners};
    /* The sources never move: their sums are planned once. */
    int student = t->kind == NLE_MODEL_TSNE || t->kind == NLE_MODEL_TEE;
    s = b.engine->plan(ctx, &b.Xc, &region, student, &b.plan);
    at.idx = idx;
    at.a = a;
    for (size_t q = 0; q < m; q++) {
      oos_problem p = nle__oos_forward_problem(t, Ynew->data + q * D, nbrs, P, q, a + q * k, a + m * k);
      memcpy(idx + q * k, p.a_idx, k * sizeof(int32_t));
      memcpy(out->data + q * d, t->X->data + (size_t)p.a_idx[0] * d, d * sizeof(double));
      z.precond[q] = 0.0;
      for (size_t j = 0; j < k; j++) z.precond[q] += 4.0 * a[q * k + j];
      if (!(z.precond[q] > 1e-300)) z.precond[q] = 1.0;
      z.step[q] = 1.0;
    }
    /* Points near each other in the map read the same grid nodes. */
    if (!s) s = nle__oos_map_order(ctx, t, nbrs, &order);
    z.order = order;
  }
  if (!s && b.engine->parallel_ranges)
    s = nle__for_blocks(ctx, "out-of-sample", (m + RANGE - 1) / RANGE,
                        nle__threads_for(ctx, (double)m * (double)k * 1000.0), 0, range_block, &z);
  else if (!s)
    s = minimise_range(ctx, &z, 0, m, 0); /* evaluations that keep state: one range, each evaluation parallel */
  free(order);
  free(a);
  free(idx);
  free(z.E);
  free(z.G);
  free(z.H);
  free(z.step);
  free(z.list);
  free(z.done);
  free(z.rep);
  free(b.Xc.data);
  free(z.w.tgt);
  free(z.w.phi);
  free(z.w.S);
  free(z.w.slot);
  if (b.plan) b.engine->free_plan(b.plan);
  return s;
}

int nle__oos_batched_engine(const nle_trained *t, nle_repulsion engine) {
  const nle__engine *e = nle__engine_find(engine);
  int ee = t->kind == NLE_MODEL_EE || t->kind == NLE_MODEL_TEE;
  unsigned kernel = t->kind == NLE_MODEL_TSNE || t->kind == NLE_MODEL_TEE ? NLE__KERNEL_STUDENT : NLE__KERNEL_GAUSSIAN;
  return e && e->oos && (e->oos->kernels & kernel) && t->X->cols <= 3 && t->kind != NLE_MODEL_SNE &&
         !(ee && t->wneg != NLE_WNEG_UNIFORM);
}

/* Clusters flung far apart, as t-SNE does with a disconnected W+, make a
 * map too wide for the grids. */
int nle__oos_engine_fits(const nle_trained *t) {
  size_t n = t->X->rows, d = t->X->cols;
  double corners[6];
  for (size_t c = 0; c < d; c++) corners[c] = INFINITY, corners[d + c] = -INFINITY;
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < d; c++) {
      corners[c] = fmin(corners[c], t->X->data[i * d + c] - FAR_MARGIN);
      corners[d + c] = fmax(corners[d + c], t->X->data[i * d + c] + FAR_MARGIN);
    }
  nle_matd box = {2, d, corners};
  return nle__engine_find(t->engine)->oos->fits(&box);
}

