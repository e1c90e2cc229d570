/* factor_solve.c — A x = b with a cached CHOLMOD supernodal factor
 * (P A P^T = L L^T), for the spectral direction (dissertation sec. 3.3: two
 * backsolves per iteration with the cached factor of 4 L+ + mu I).
 *
 * CHOLMOD's own supernodal solve hands every supernode to BLAS (dtrsm, then
 * dgemm), which first packs the block into a copy. With the small supernodes
 * of a kNN graph's factor (a few columns each) the packing and the calls cost
 * more than the arithmetic, and the solve runs on one core: 50 ms of the
 * 80 ms of an EE iteration on 70,000 points. Here each block is read once, in
 * place, for all d right-hand sides at once (stored row-major, as the
 * embeddings are), and the elimination tree is cut into NBINS independent
 * groups of subtrees solved in parallel; the few supernodes above the cut
 * ("top", the large dense separators) are solved one after the other, each
 * in blocks of columns with the rectangle below a block split among the
 * threads. A group's forward updates to the top's rows go into the group's
 * own buffer, added in group order, so the result does not depend on the
 * number of threads. 70,000 Fashion-MNIST points (factor of 5.7 million
 * nonzeros at kappa = 3, 22.7 million at 7), 2 threads: 11 and 30 ms per
 * solve with two right-hand sides, against CHOLMOD's 20-25 and 47-51 ms. */
#include "spectral_internal.h"

#include <stdlib.h>
#include <string.h>

enum { NBINS = 4 };

struct nle__factor_solver {
  const cholmod_factor *L;
  size_t n, nsuper;
  const nle__chol_int *perm;
  int64_t *bin_start;   /* subtrees of bin b: roots bin_root[bin_start[b] .. bin_start[b + 1]) */
  int64_t *bin_root;
  int64_t *first_desc;  /* supernode s's subtree is [first_desc[s], s] (postorder) */
  int64_t *top;         /* the supernodes above the cut, ascending */
  size_t ntop;
  int32_t *top_slot;    /* a column's slot in the top buffers, or -1 */
  size_t top_cols;
  size_t max_rows;      /* the most rows of a supernode */
  double *work;         /* y (n x d), the bins' top buffers (NBINS x top_cols x d) and
                           supernode scratch ((NBINS + 1) x max_rows x d), grown as d needs */
  size_t work_d;
};

/* Supernode parents, subtree works and first descendants; -1 when the
 * supernodes are not postordered (CHOLMOD solves then), -2 out of memory. */
static int tree(const cholmod_factor *L, int64_t *parent, double *work, int64_t *first_desc) {
  const nle__chol_int *super = L->super, *pi = L->pi, *ls = L->s;
  size_t ns = L->nsuper;
  int64_t *of_col = malloc(L->n * sizeof *of_col);
  if (!of_col) return -2;
  for (size_t s = 0; s < ns; s++)
    for (int64_t k = super[s]; k < super[s + 1]; k++) of_col[k] = (int64_t)s;
  int ok = 0;
  for (size_t s = 0; s < ns; s++) {
    int64_t nscol = super[s + 1] - super[s], nsrow = pi[s + 1] - pi[s];
    parent[s] = nsrow > nscol ? of_col[ls[pi[s] + nscol]] : -1;
    work[s] = (double)nscol * (double)nsrow;
    first_desc[s] = (int64_t)s;
  }
  for (size_t s = 0; s < ns; s++) {
    if (parent[s] >= 0 && parent[s] <= (int64_t)s) ok = -1;
    if (parent[s] > (int64_t)s) {
      work[parent[s]] += work[s];
      if (first_desc[s] < first_desc[parent[s]]) first_desc[parent[s]] = first_desc[s];
    }
  }
  /* postorder: each subtree's supernodes are exactly [first_desc, s] */
  int64_t *count = calloc(ns ? ns : 1, sizeof *count);
  if (!count) ok = -2;
  for (size_t s = 0; !ok && s < ns; s++) {
    count[s] += 1;
    if (parent[s] >= 0) count[parent[s]] += count[s];
  }
  for (size_t s = 0; !ok && s < ns; s++)
    if (count[s] != (int64_t)s - first_desc[s] + 1) ok = -1;
  free(count);
  free(of_col);
  return ok;
}

static int heavier(const void *a, const void *b, void *w) {
  const double *work = w;
  double x = work[*(const int64_t *)a], y = work[*(const int64_t *)b];
  if (x != y) return x > y ? -1 : 1;
  return (*(const int64_t *)a > *(const int64_t *)b) - (*(const int64_t *)a < *(const int64_t *)b);
}

/* Longest-processing-time assignment of the candidate subtrees to the bins;
 * returns the heaviest bin's work. */
static double assign(int64_t *cand, size_t ncand, const double *work, int *bin_of) {
  double load[NBINS] = {0};
  qsort_r(cand, ncand, sizeof *cand, heavier, (void *)work);
  for (size_t c = 0; c < ncand; c++) {
    int best = 0;
    for (int b = 1; b < NBINS; b++)
      if (load[b] < load[best]) best = b;
    load[best] += work[cand[c]];
    bin_of[c] = best;
  }
  double most = 0.0;
  for (int b = 0; b < NBINS; b++) most = load[b] > most ? load[b] : most;
  return most;
}

/* Cuts the tree: starting from the roots, the heaviest candidate subtree is
 * split into its children (its own supernode goes to the top), up to 64
 * times or until it is a leaf; the cut kept is the one with the least
 * estimated time, top + heaviest bin (work counted as block sizes). */
static nle_status cut(nle_ctx *ctx, nle__factor_solver *f, const int64_t *parent, const double *work) {
  size_t ns = f->nsuper;
  const nle__chol_int *super = f->L->super, *pi = f->L->pi;
  int64_t *child_start = calloc(ns + 2, sizeof *child_start), *children = malloc((ns ? ns : 1) * sizeof *children);
  int64_t *cand = malloc((ns + 1) * sizeof *cand), *best_cand = malloc((ns + 1) * sizeof *best_cand);
  int64_t *fill = malloc((ns + 1) * sizeof *fill);
  int *bin_of = malloc((ns + 1) * sizeof *bin_of);
  char *is_top = calloc(ns ? ns : 1, 1), *best_top = calloc(ns ? ns : 1, 1);
  if (!child_start || !children || !cand || !best_cand || !fill || !bin_of || !is_top || !best_top) {
    free(child_start), free(children), free(cand), free(best_cand), free(fill), free(bin_of), free(is_top), free(best_top);
    return nle__fail(ctx, NLE_ERR_NOMEM, "spectral direction: out of memory for the solve's schedule");
  }
  size_t ncand = 0;
  for (size_t s = 0; s < ns; s++) {
    if (parent[s] < 0) cand[ncand++] = (int64_t)s;
    else child_start[parent[s] + 1]++;
  }
  for (size_t s = 0; s < ns; s++) child_start[s + 1] += child_start[s];
  memcpy(fill, child_start, ns * sizeof *fill);
  for (size_t s = 0; s < ns; s++)
    if (parent[s] >= 0) children[fill[parent[s]]++] = (int64_t)s;
  free(fill);
  double top_work = 0.0, best_time = 0.0;
  size_t best_ncand = 0;
  for (size_t c = 0; c < ncand; c++) best_time += work[cand[c]];
  memcpy(best_cand, cand, ncand * sizeof *cand);
  best_ncand = ncand;
  for (int split = 0; split < 64 && ncand > 0; split++) {
    double most = assign(cand, ncand, work, bin_of);
    double time = top_work + most;
    if (time < best_time) {
      best_time = time;
      best_ncand = ncand;
      memcpy(best_cand, cand, ncand * sizeof *cand);
      memcpy(best_top, is_top, ns);
    }
    int64_t heavy = cand[0]; /* sorted by assign */
    if (child_start[heavy + 1] == child_start[heavy]) break; /* a leaf */
    int64_t nscol = super[heavy + 1] - super[heavy], nsrow = pi[heavy + 1] - pi[heavy];
    top_work += (double)nscol * (double)nsrow;
    is_top[heavy] = 1;
    cand[0] = cand[--ncand];
    for (int64_t q = child_start[heavy]; q < child_start[heavy + 1]; q++) cand[ncand++] = children[q];
  }
  /* the chosen cut: bins, then the top in ascending order */
  nle_status s = NLE_OK;
  f->bin_start = calloc(NBINS + 1, sizeof *f->bin_start);
  f->bin_root = malloc((best_ncand ? best_ncand : 1) * sizeof *f->bin_root);
  f->top = malloc((ns ? ns : 1) * sizeof *f->top);
  f->top_slot = malloc((f->n ? f->n : 1) * sizeof *f->top_slot);
  if (!f->bin_start || !f->bin_root || !f->top || !f->top_slot)
    s = nle__fail(ctx, NLE_ERR_NOMEM, "spectral direction: out of memory for the solve's schedule");
  if (!s) {
    assign(best_cand, best_ncand, work, bin_of);
    for (size_t c = 0; c < best_ncand; c++) f->bin_start[bin_of[c] + 1]++;
    for (int b = 0; b < NBINS; b++) f->bin_start[b + 1] += f->bin_start[b];
    int64_t fill[NBINS];
    memcpy(fill, f->bin_start, sizeof fill);
    for (size_t c = 0; c < best_ncand; c++) f->bin_root[fill[bin_of[c]]++] = best_cand[c];
    f->ntop = 0;
    f->top_cols = 0;
    for (size_t k = 0; k < f->n; k++) f->top_slot[k] = -1;
    for (size_t t = 0; t < ns; t++)
      if (best_top[t]) {
        f->top[f->ntop++] = (int64_t)t;
        for (int64_t k = super[t]; k < super[t + 1]; k++) f->top_slot[k] = (int32_t)f->top_cols++;
      }
  }
  free(child_start), free(children), free(cand), free(best_cand), free(bin_of), free(is_top), free(best_top);
  return s;
}

nle_status nle__factor_solver_new(nle_ctx *ctx, const cholmod_factor *L, nle__factor_solver **out) {
  *out = NULL;
  if (!L->is_super || L->xtype != CHOLMOD_REAL || L->dtype != CHOLMOD_DOUBLE || L->itype != CHOLMOD_LONG)
    return NLE_OK; /* CHOLMOD solves it */
  nle__factor_solver *f = nle__calloc(ctx, 1, sizeof *f, "the solve's schedule");
  if (!f) return NLE_ERR_NOMEM;
  f->L = L;
  f->n = L->n;
  f->nsuper = L->nsuper;
  f->perm = L->Perm;
  for (size_t t = 0; t < L->nsuper; t++) {
    size_t rows = (size_t)(((const nle__chol_int *)L->pi)[t + 1] - ((const nle__chol_int *)L->pi)[t]);
    f->max_rows = rows > f->max_rows ? rows : f->max_rows;
  }
  size_t ns = f->nsuper;
  int64_t *parent = malloc((ns ? ns : 1) * sizeof *parent);
  double *work = malloc((ns ? ns : 1) * sizeof *work);
  f->first_desc = malloc((ns ? ns : 1) * sizeof *f->first_desc);
  nle_status s = parent && work && f->first_desc ? NLE_OK : NLE_ERR_NOMEM;
  int shape = s ? -2 : tree(L, parent, work, f->first_desc);
  if (shape == -2) s = nle__fail(ctx, NLE_ERR_NOMEM, "spectral direction: out of memory for the solve's schedule");
  if (!s && shape == 0) s = cut(ctx, f, parent, work);
  free(parent);
  free(work);
  if (!s && shape == -1) { /* not postordered: CHOLMOD solves it */
    nle__factor_solver_free(&f);
    return NLE_OK;
  }
  if (s) {
    nle__factor_solver_free(&f);
    return s;
  }
  *out = f;
  return NLE_OK;
}

void nle__factor_solver_free(nle__factor_solver **f) {
  if (!f || !*f) return;
  free((*f)->bin_start);
  free((*f)->bin_root);
  free((*f)->first_desc);
  free((*f)->top);
  free((*f)->top_slot);
  free((*f)->work);
  free(*f);
  *f = NULL;
}

/* The dense kernels of one supernode: its block Lx (nsrow x nscol,
 * column-major) against z, the block's rows of the right-hand sides (nsrow x
 * d, row-major). Written for a d the compiler knows (1, 2, 3) and any d.
 * Every z_i sums its terms in ascending (forward) or descending (backward)
 * column order whatever the blocking and threads, so the bits do not depend
 * on them. */
static inline __attribute__((always_inline)) void rows_update(const double *Lx, size_t nsrow, int j0, int j1, int i0,
                                                              int i1, double *z, size_t d) {
  int j = j0;
  for (; j + 4 <= j1; j += 4) { /* four columns a pass over z */
    const double *c0 = Lx + (size_t)j * nsrow, *c1 = c0 + nsrow, *c2 = c1 + nsrow, *c3 = c2 + nsrow;
    const double *zj = z + (size_t)j * d;
    for (int i = i0; i < i1; i++)
      for (size_t t = 0; t < d; t++)
        z[(size_t)i * d + t] -= c0[i] * zj[t] + c1[i] * zj[d + t] + c2[i] * zj[2 * d + t] + c3[i] * zj[3 * d + t];
  }
  for (; j < j1; j++) {
    const double *col = Lx + (size_t)j * nsrow, *zj = z + (size_t)j * d;
    for (int i = i0; i < i1; i++)
      for (size_t t = 0; t < d; t++) z[(size_t)i * d + t] -= col[i] * zj[t];
  }
}

static inline __attribute__((always_inline)) void triangle_forward(const double *Lx, size_t nsrow, int j0, int j1,
                                                                   double *z, size_t d) {
  for (int j = j0; j < j1; j++) {
    double inv = 1.0 / Lx[(size_t)j * nsrow + (size_t)j];
    for (size_t t = 0; t < d; t++) z[(size_t)j * d + t] *= inv;
    rows_update(Lx, nsrow, j, j + 1, j + 1, j1, z, d);
  }
}

/* z_j -= sum_{i in [i0, i1)} L_ij z_i for the columns j in [j0, j1). */
static inline __attribute__((always_inline)) void columns_dot(const double *Lx, size_t nsrow, int j0, int j1, int i0,
                                                              int i1, double *z, size_t d) {
  for (size_t t0 = 0; t0 < d; t0 += 4) {
    size_t tn = d - t0 < 4 ? d - t0 : 4;
    int j = j0;
    for (; j + 4 <= j1; j += 4) { /* four columns a pass over z */
      const double *c0 = Lx + (size_t)j * nsrow, *c1 = c0 + nsrow, *c2 = c1 + nsrow, *c3 = c2 + nsrow;
      double a0[4] = {0}, a1[4] = {0}, a2[4] = {0}, a3[4] = {0};
      for (int i = i0; i < i1; i++)
        for (size_t t = 0; t < tn; t++) {
          double zi = z[(size_t)i * d + t0 + t];
          a0[t] += c0[i] * zi;
          a1[t] += c1[i] * zi;
          a2[t] += c2[i] * zi;
          a3[t] += c3[i] * zi;
        }
      for (size_t t = 0; t < tn; t++) {
        z[(size_t)j * d + t0 + t] -= a0[t];
        z[(size_t)(j + 1) * d + t0 + t] -= a1[t];
        z[(size_t)(j + 2) * d + t0 + t] -= a2[t];
        z[(size_t)(j + 3) * d + t0 + t] -= a3[t];
      }
    }
    for (; j < j1; j++) {
      const double *col = Lx + (size_t)j * nsrow;
      double acc[4] = {0};
      for (int i = i0; i < i1; i++)
        for (size_t t = 0; t < tn; t++) acc[t] += col[i] * z[(size_t)i * d + t0 + t];
      for (size_t t = 0; t < tn; t++) z[(size_t)j * d + t0 + t] -= acc[t];
    }
  }
}

static inline __attribute__((always_inline)) void triangle_backward(const double *Lx, size_t nsrow, int j0, int j1,
                                                                    double *z, size_t d) {
  for (int j = j1 - 1; j >= j0; j--) {
    columns_dot(Lx, nsrow, j, j + 1, j + 1, j1, z, d);
    double inv = 1.0 / Lx[(size_t)j * nsrow + (size_t)j];
    for (size_t t = 0; t < d; t++) z[(size_t)j * d + t] *= inv;
  }
}

enum { BLOCK = 48, PARALLEL_MIN = 1 << 15 }; /* columns per block; entries worth a fork */

/* L z = z on a supernode, blocks of columns; the rectangle below each block
 * split among `threads` threads when it is large enough. */
static inline __attribute__((always_inline)) void supernode_forward(const double *Lx, int nsrow, int nscol, double *z,
                                                                    size_t d, int threads) {
  for (int jb = 0; jb < nscol; jb += BLOCK) {
    int je = jb + BLOCK < nscol ? jb + BLOCK : nscol;
    triangle_forward(Lx, (size_t)nsrow, jb, je, z, d);
    int rows = nsrow - je;
    if (threads > 1 && (double)rows * (je - jb) >= PARALLEL_MIN) {
      int chunks = rows / 256 < 64 ? rows / 256 + 1 : 64;
#pragma omp parallel for schedule(static) num_threads(threads)
      for (int c = 0; c < chunks; c++)
        rows_update(Lx, (size_t)nsrow, jb, je, je + (int)((int64_t)rows * c / chunks),
                    je + (int)((int64_t)rows * (c + 1) / chunks), z, d);
    } else {
      rows_update(Lx, (size_t)nsrow, jb, je, je, nsrow, z, d);
    }
  }
}

static inline __attribute__((always_inline)) void supernode_backward(const double *Lx, int nsrow, int nscol, double *z,
                                                                     size_t d, int threads) {
  for (int jb = (nscol - 1) / BLOCK * BLOCK; jb >= 0; jb -= BLOCK) {
    int je = jb + BLOCK < nscol ? jb + BLOCK : nscol;
    if (threads > 1 && (double)(nsrow - je) * (je - jb) >= PARALLEL_MIN) {
#pragma omp parallel for schedule(static) num_threads(threads)
      for (int j = jb; j < je; j += 4) columns_dot(Lx, (size_t)nsrow, j, j + 4 < je ? j + 4 : je, je, nsrow, z, d);
    } else {
      columns_dot(Lx, (size_t)nsrow, jb, je, je, nsrow, z, d);
    }
    triangle_backward(Lx, (size_t)nsrow, jb, je, z, d);
  }
}

/* L y = y on supernode s (z: scratch of its rows); the updates to rows of the
 * top go to delta when given (a bin's pass), else into y. */
static void forward(const nle__factor_solver *f, size_t s, double *y, size_t d, double *delta, double *z,
                    int threads) {
  const nle__chol_int *super = f->L->super, *pi = f->L->pi, *px = f->L->px;
  const double *Lx = (const double *)f->L->x + px[s];
  int64_t k1 = super[s];
  int nscol = (int)(super[s + 1] - k1), nsrow = (int)(pi[s + 1] - pi[s]);
  const nle__chol_int *rows = (const nle__chol_int *)f->L->s + pi[s];
  memcpy(z, y + (size_t)k1 * d, (size_t)nscol * d * sizeof *z);
  memset(z + (size_t)nscol * d, 0, (size_t)(nsrow - nscol) * d * sizeof *z);
  if (d == 2) supernode_forward(Lx, nsrow, nscol, z, 2, threads);
  else if (d == 1) supernode_forward(Lx, nsrow, nscol, z, 1, threads);
  else if (d == 3) supernode_forward(Lx, nsrow, nscol, z, 3, threads);
  else supernode_forward(Lx, nsrow, nscol, z, d, threads);
  memcpy(y + (size_t)k1 * d, z, (size_t)nscol * d * sizeof *z);
  for (int i = nscol; i < nsrow; i++) {
    size_t r = (size_t)rows[i];
    double *dst = delta && f->top_slot[r] >= 0 ? delta + (size_t)f->top_slot[r] * d : y + r * d;
    for (size_t t = 0; t < d; t++) dst[t] += z[(size_t)i * d + t];
  }
}

/* L^T x = x on supernode s, its rows below already solved. */
static void backward(const nle__factor_solver *f, size_t s, double *x, size_t d, double *z, int threads) {
  const nle__chol_int *super = f->L->super, *pi = f->L->pi, *px = f->L->px;
  const double *Lx = (const double *)f->L->x + px[s];
  int64_t k1 = super[s];
  int nscol = (int)(super[s + 1] - k1), nsrow = (int)(pi[s + 1] - pi[s]);
  const nle__chol_int *rows = (const nle__chol_int *)f->L->s + pi[s];
  memcpy(z, x + (size_t)k1 * d, (size_t)nscol * d * sizeof *z);
  for (int i = nscol; i < nsrow; i++) memcpy(z + (size_t)i * d, x + (size_t)rows[i] * d, d * sizeof *z);
  if (d == 2) supernode_backward(Lx, nsrow, nscol, z, 2, threads);
  else if (d == 1) supernode_backward(Lx, nsrow, nscol, z, 1, threads);
  else if (d == 3) supernode_backward(Lx, nsrow, nscol, z, 3, threads);
  else supernode_backward(Lx, nsrow, nscol, z, d, threads);
  memcpy(x + (size_t)k1 * d, z, (size_t)nscol * d * sizeof *z);
}

nle_status nle__factor_solve(nle_ctx *ctx, nle__factor_solver *f, double *B, size_t d) {
  size_t n = f->n, zlen = f->max_rows * d;
  if (f->work_d < d) {
    free(f->work);
    f->work = malloc((n * d + NBINS * f->top_cols * d + (NBINS + 1) * zlen) * sizeof *f->work);
    f->work_d = f->work ? d : 0;
    if (!f->work) return nle__fail(ctx, NLE_ERR_NOMEM, "spectral direction: out of memory for the solve");
  }
  double *y = f->work, *delta = y + n * d, *scratch = delta + NBINS * f->top_cols * d;
  for (size_t k = 0; k < n; k++) memcpy(y + k * d, B + (size_t)f->perm[k] * d, d * sizeof *y);
  memset(delta, 0, NBINS * f->top_cols * d * sizeof *delta);
  int threads = nle__threads_for(ctx, (double)f->L->xsize * (double)d);
  const nle__chol_int *super = f->L->super;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > NBINS ? NBINS : threads)
  for (int b = 0; b < NBINS; b++)
    for (int64_t q = f->bin_start[b]; q < f->bin_start[b + 1]; q++)
      for (int64_t s = f->first_desc[f->bin_root[q]]; s <= f->bin_root[q]; s++)
        forward(f, (size_t)s, y, d, delta + (size_t)b * f->top_cols * d, scratch + (size_t)b * zlen, 1);
  for (int b = 0; b < NBINS; b++)
    for (size_t q = 0; q < f->ntop; q++)
      for (int64_t k = super[f->top[q]]; k < super[f->top[q] + 1]; k++)
        for (size_t t = 0; t < d; t++)
          y[(size_t)k * d + t] += delta[((size_t)b * f->top_cols + (size_t)f->top_slot[k]) * d + t];
  double *top_z = scratch + NBINS * zlen;
  for (size_t q = 0; q < f->ntop; q++) forward(f, (size_t)f->top[q], y, d, NULL, top_z, threads);
  for (size_t q = f->ntop; q-- > 0;) backward(f, (size_t)f->top[q], y, d, top_z, threads);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > NBINS ? NBINS : threads)
  for (int b = 0; b < NBINS; b++)
    for (int64_t q = f->bin_start[b]; q < f->bin_start[b + 1]; q++)
      for (int64_t s = f->bin_root[q]; s >= f->first_desc[f->bin_root[q]]; s--)
        backward(f, (size_t)s, y, d, scratch + (size_t)b * zlen, 1);
  for (size_t k = 0; k < n; k++) memcpy(B + (size_t)f->perm[k] * d, y + k * d, d * sizeof *y);
  return NLE_OK;
}
