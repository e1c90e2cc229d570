/* fft_interp.c — kernel sums by FFT-accelerated interpolation: the charges
 * of the source points are spread to a regular grid by Lagrange
 * interpolation, the kernel is applied on the grid as a convolution (a
 * Toeplitz matrix embedded in a circulant one of twice the size, applied by
 * FFTW), and the grid values are interpolated back to the targets. The
 * space is cut into boxes of side `box_width` (in units of the kernel's
 * length scale) with `order` equispaced nodes per box and dimension; box b
 * node j sits at lo + (b + (j + 1/2) / order) box_width, so all nodes form
 * one grid of spacing box_width / order. The cost is O(N order^d) for the
 * interpolation and O(G log G) for G grid nodes, which depends on the
 * extent of the points, not on N. (This is the grid analogue of the
 * far-field expansions of dissertation sec. 5.2; the kernel sums are its
 * eq. 5.8.) */
#include "nbody_internal.h"

#include <fftw3.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DIM = NBODY_MAX_DIM, MAX_ORDER = 12, MAX_CHANNELS = 8, POINT_BLOCK = 1024 };

static size_t default_max_nodes(size_t d) { return d == 1 ? 1 << 16 : d == 2 ? 1024 : 128; }

void nle_fft_opts_init(nle_fft_opts *o) {
  o->order = 3;
  o->box_width = 1.0;
  o->min_boxes = 8;
  o->max_nodes = 0;
}

/* The grid and each point's interpolation weights. */
typedef struct {
  size_t d, p;
  size_t nodes[MAX_DIM]; /* per dimension: boxes * p */
  size_t pad[MAX_DIM];   /* 2 nodes: the circulant embedding */
  size_t real_len;       /* doubles in one in-place r2c array */
  size_t cplx_len;       /* complex values in its transform */
  double lo[MAX_DIM], box, h;
  fftwf_plan forward, backward; /* in-place, owned by the work space */
} fft_grid;

/* What calls with the same grid shape can reuse: the plans, the channel
 * buffers (no page faults on each call), and the transformed kernels,
 * which depend only on the shape and the node spacing. */
struct nle__fft_ws {
  size_t d, pad[MAX_DIM], real_len;
  size_t grid_cap; /* floats in each of bufs and khat */
  fftwf_plan forward, backward;
  float *bufs[MAX_CHANNELS]; /* single precision: the interpolation error
                                 (1e-4 and up) dwarfs its rounding, and the
                                 transforms run about twice as fast */
  float *khat[2];
  nle_kernel khat_kernel[2];
  double khat_h[2]; /* 0: not computed */
  int32_t *first;    /* the source points' stencils, computed once per call */
  double *weights;
  size_t stencil_cap; /* doubles in weights */
};

nle__fft_ws *nle__fft_ws_new(void) { return calloc(1, sizeof(nle__fft_ws)); }

static void ws_release_plans(nle__fft_ws *w) {
#pragma omp critical(nle_fftwf_planner)
  {
    if (w->forward) fftwf_destroy_plan(w->forward);
    if (w->backward) fftwf_destroy_plan(w->backward);
  }
  w->forward = w->backward = NULL;
  w->khat_h[0] = w->khat_h[1] = 0.0; /* the kernels belong to the old shape */
}

static void ws_release_grids(nle__fft_ws *w) {
  for (size_t c = 0; c < MAX_CHANNELS; c++) fftwf_free(w->bufs[c]);
  for (size_t k = 0; k < 2; k++) fftwf_free(w->khat[k]);
  memset(w->bufs, 0, sizeof w->bufs);
  memset(w->khat, 0, sizeof w->khat);
  w->grid_cap = 0;
}

static void ws_release(nle__fft_ws *w) {
  ws_release_plans(w);
  ws_release_grids(w);
  free(w->first);
  free(w->weights);
  memset(w, 0, sizeof *w);
}

void nle__fft_ws_free(nle__fft_ws **w) {
  if (!w || !*w) return;
  ws_release(*w);
  free(*w);
  *w = NULL;
}

/* Interpolation stencil of one point: its first node per dimension and the
 * p Lagrange weights per dimension, w[t p + j]. */
static void point_stencil(const fft_grid *g, const double *x, int32_t *first, double *w) {
  size_t p = g->p;
  for (size_t t = 0; t < g->d; t++) {
    double u = (x[t] - g->lo[t]) / g->box;
    size_t boxes = g->nodes[t] / p;
    double bf = floor(u);
    size_t b = bf < 0 ? 0 : (size_t)bf >= boxes ? boxes - 1 : (size_t)bf;
    double local = u - (double)b; /* in [0, 1] */
    first[t] = (int32_t)(b * p);
    for (size_t j = 0; j < p; j++) {
      double uj = ((double)j + 0.5) / (double)p, l = 1.0;
      for (size_t k = 0; k < p; k++)
        if (k != j) l *= (local - ((double)k + 0.5) / (double)p) / (uj - ((double)k + 0.5) / (double)p);
      w[t * p + j] = l;
    }
  }
}

/* Index of grid node (i0, i1, i2) in an in-place r2c array, whose last
 * dimension is padded to 2 (pad/2 + 1) doubles. */
static size_t real_index(const fft_grid *g, const size_t *i) {
  size_t last = 2 * (g->pad[g->d - 1] / 2 + 1), idx = 0;
  for (size_t t = 0; t < g->d; t++) idx = idx * (t + 1 == g->d ? last : g->pad[t]) + i[t];
  return idx;
}

/* Calls fn(idx, weight) for the p^d nodes of a stencil. */
#define FOR_STENCIL(g, first, w, BODY)                                                                  \
  do {                                                                                            \
    size_t i_[MAX_DIM] = {0}, c_[MAX_DIM] = {0};                                                  \
    size_t total_ = 1;                                                                            \
    for (size_t t_ = 0; t_ < (g)->d; t_++) total_ *= (g)->p;                                      \
    for (size_t q_ = 0; q_ < total_; q_++) {                                                      \
      double weight = 1.0;                                                                        \
      for (size_t t_ = 0; t_ < (g)->d; t_++) {                                                    \
        i_[t_] = (size_t)(first)[t_] + c_[t_];                                                    \
        weight *= (w)[t_ * (g)->p + c_[t_]];                                                            \
      }                                                                                           \
      size_t idx = real_index((g), i_);                                                           \
      BODY;                                                                                       \
      for (size_t t_ = (g)->d; t_-- > 0;) {                                                       \
        if (++c_[t_] < (g)->p) break;                                                             \
        c_[t_] = 0;                                                                               \
      }                                                                                           \
    }                                                                                             \
  } while (0)

/* The kernel's circulant column on the padded grid, transformed. */
static void kernel_transform(const fft_grid *g, nle_kernel kernel, float *buf) {
  size_t d = g->d, i[MAX_DIM] = {0}, total = 1;
  memset(buf, 0, g->real_len * sizeof(float));
  for (size_t t = 0; t < d; t++) total *= g->pad[t];
  for (size_t q = 0; q < total; q++) {
    size_t rem = q;
    double d2 = 0.0;
    int unused = 0;
    for (size_t t = d; t-- > 0;) {
      i[t] = rem % g->pad[t];
      rem /= g->pad[t];
      size_t n = g->nodes[t];
      double off = i[t] < n ? (double)i[t] : i[t] == n ? 0.0 : (double)i[t] - (double)g->pad[t];
      unused |= i[t] == n;
      d2 += off * off * g->h * g->h;
    }
    buf[real_index(g, i)] = unused ? 0.0f : (float)nle__kernel_value(kernel, d2);
  }
  fftwf_execute_dft_r2c(g->forward, buf, (fftwf_complex *)buf);
}

typedef struct {
  const fft_grid *g;
  const nle_matd *src, *tgt;
  const double *charges;   /* src rows x nq, or NULL: unit charges */
  size_t nq;
  const int *chan_kernel;  /* per channel: which kernel transform */
  const int *chan_charge;  /* per channel: charge column, -1 = unit */
  size_t nch;
  float *const *kernel_hat; /* transformed kernels */
  float *const *grid;          /* per channel: grid values after convolution */
  double *phi;             /* tgt rows x nch */
  int32_t *first;          /* the sources' stencils: N x d first nodes */
  double *weights;         /* and N x d x p weights */
} conv_job;

static int stencil_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  size_t d = j->g->d, n1 = (b + 1) * POINT_BLOCK < j->src->rows ? (b + 1) * POINT_BLOCK : j->src->rows;
  for (size_t n = b * POINT_BLOCK; n < n1; n++)
    point_stencil(j->g, j->src->data + n * d, j->first + n * d, j->weights + n * d * j->g->p);
  return 0;
}

/* One channel: spread, transform, multiply, transform back. */
static int channel_block(void *job, size_t c, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  const fft_grid *g = j->g;
  float *buf = j->grid[c];
  memset(buf, 0, g->real_len * sizeof(float));
  size_t d = g->d, col = (size_t)j->chan_charge[c];
  for (size_t m = 0; m < j->src->rows; m++) {
    const int32_t *first = j->first + m * d;
    const double *w = j->weights + m * d * g->p;
    double q = j->chan_charge[c] < 0 ? 1.0 : j->charges[m * j->nq + col];
    if (d == 2) { /* the usual case: p rows of p nodes */
      size_t p = g->p, last = 2 * (g->pad[1] / 2 + 1);
      for (size_t a = 0; a < p; a++) {
        float *row = buf + ((size_t)first[0] + a) * last + (size_t)first[1];
        double wa = w[a] * q;
        for (size_t b = 0; b < p; b++) row[b] += (float)(wa * w[p + b]);
      }
    } else
      FOR_STENCIL(g, first, w, buf[idx] += (float)(weight * q));
  }
  fftwf_complex *f = (fftwf_complex *)buf;
  const fftwf_complex *k = (const fftwf_complex *)j->kernel_hat[j->chan_kernel[c]];
  fftwf_execute_dft_r2c(g->forward, buf, f);
  float scale = 1.0f;
  for (size_t t = 0; t < d; t++) scale /= (float)g->pad[t];
  for (size_t i = 0; i < g->cplx_len; i++) {
    float re = f[i][0] * k[i][0] - f[i][1] * k[i][1], im = f[i][0] * k[i][1] + f[i][1] * k[i][0];
    f[i][0] = re * scale;
    f[i][1] = im * scale;
  }
  fftwf_execute_dft_c2r(g->backward, f, buf);
  return 0;
}

static int gather_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  const fft_grid *g = j->g;
  size_t d = g->d, n1 = (b + 1) * POINT_BLOCK < j->tgt->rows ? (b + 1) * POINT_BLOCK : j->tgt->rows;
  for (size_t n = b * POINT_BLOCK; n < n1; n++) {
    int32_t own_first[MAX_DIM];
    double own_w[MAX_DIM * MAX_ORDER];
    const int32_t *first = j->first + n * d;
    const double *w = j->weights + n * d * g->p;
    if (j->tgt != j->src) {
      point_stencil(g, j->tgt->data + n * d, own_first, own_w);
      first = own_first;
      w = own_w;
    }
    double acc[MAX_CHANNELS] = {0};
    if (d == 2) {
      size_t p = g->p, last = 2 * (g->pad[1] / 2 + 1);
      for (size_t a = 0; a < p; a++) {
        size_t base = ((size_t)first[0] + a) * last + (size_t)first[1];
        for (size_t c = 0; c < j->nch; c++) {
          const float *row = j->grid[c] + base;
          double r = 0.0;
          for (size_t b = 0; b < p; b++) r += w[p + b] * row[b];
          acc[c] += w[a] * r;
        }
      }
    } else
      FOR_STENCIL(g, first, w, for (size_t c = 0; c < j->nch; c++) acc[c] += weight * j->grid[c][idx]);
    memcpy(j->phi + n * j->nch, acc, j->nch * sizeof(double));
  }
  return 0;
}

static int smooth(size_t n) {
  static const size_t primes[] = {2, 3, 5, 7};
  for (int i = 0; i < 4; i++)
    while (n % primes[i] == 0) n /= primes[i];
  return n == 1;
}

/* Plans the grid over the bounding box of src and tgt. */
static void plan_grid(const nle_matd *src, const nle_matd *tgt, const nle_fft_opts *o,
                            fft_grid *g) {
  size_t d = src->cols, p = (size_t)o->order;
  memset(g, 0, sizeof *g);
  g->d = d;
  g->p = p;
  double hi[MAX_DIM], extent = 0.0;
  for (size_t t = 0; t < d; t++) {
    g->lo[t] = INFINITY;
    hi[t] = -INFINITY;
  }
  const nle_matd *sets[2] = {src, tgt};
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < sets[s]->rows; i++)
      for (size_t t = 0; t < d; t++) {
        g->lo[t] = fmin(g->lo[t], sets[s]->data[i * d + t]);
        hi[t] = fmax(hi[t], sets[s]->data[i * d + t]);
      }
  for (size_t t = 0; t < d; t++) extent = fmax(extent, hi[t] - g->lo[t]);
  extent = extent > 0 ? extent * (1.0 + 1e-9) : 1e-9;
  /* Boxes no wider than box_width kernel lengths, at least min_boxes along
   * the longest side, and at most max_nodes nodes per dimension (beyond
   * that the boxes widen and the accuracy drops, which the error check
   * reports). */
  double box = fmin(o->box_width, extent / (double)o->min_boxes);
  box = fmax(box, extent * (double)p / (double)o->max_nodes);
  g->box = box;
  g->h = box / (double)p;
  size_t total = 1;
  for (size_t t = 0; t < d; t++) {
    size_t boxes = (size_t)ceil((hi[t] - g->lo[t]) * (1.0 + 1e-9) / box);
    if (boxes < 1) boxes = 1;
    /* FFTW is several times slower on sizes with large prime factors: a
     * few extra boxes make 2 p boxes a product of 2, 3, 5 and 7. */
    while (!smooth(2 * boxes * p)) boxes++;
    g->nodes[t] = boxes * p;
    g->pad[t] = 2 * g->nodes[t];
    total *= g->pad[t];
  }
  g->real_len = total / g->pad[d - 1] * 2 * (g->pad[d - 1] / 2 + 1);
  g->cplx_len = g->real_len / 2;
}

int nle__fft_grid_fits(const nle_matd *X, const nle_fft_opts *opts) {
  nle_fft_opts o;
  if (opts && opts->order) o = *opts;
  else nle_fft_opts_init(&o);
  size_t d = X->cols, max_nodes = o.max_nodes ? o.max_nodes : default_max_nodes(d);
  for (size_t t = 0; t < d; t++) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < X->rows; i++) lo = fmin(lo, X->data[i * d + t]), hi = fmax(hi, X->data[i * d + t]);
    if ((hi - lo) / o.box_width * (double)o.order > (double)max_nodes) return 0;
  }
  return 1;
}

/* Makes the work space fit grid g with nch channel buffers: new plans and
 * buffers only when the shape changed. */
static nle_status ws_fit(nle_ctx *ctx, nle__fft_ws *w, fft_grid *g, size_t nch, size_t nkernels) {
  int same = w->forward && w->d == g->d;
  for (size_t t = 0; same && t < g->d; t++) same = w->pad[t] == g->pad[t];
  if (!same) {
    /* While a map expands the shape changes every few iterations: new plans,
     * but the grids are kept while they are large enough (grown with room). */
    ws_release_plans(w);
    if (g->real_len > w->grid_cap) {
      ws_release_grids(w);
      size_t cap = g->real_len + g->real_len / 4;
      nle_status s = nle__check_memory(ctx, (double)(nch + nkernels) * (double)cap * sizeof(float),
                                       "the FFT-interpolation grids");
      if (s) return s;
      if (!(w->bufs[0] = fftwf_malloc(cap * sizeof(float))))
        return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grid");
      w->grid_cap = cap;
    }
    w->d = g->d;
    memcpy(w->pad, g->pad, sizeof w->pad);
    w->real_len = g->real_len;
    int dims[MAX_DIM];
    for (size_t t = 0; t < g->d; t++) dims[t] = (int)g->pad[t];
    /* The planner is not thread-safe; FFTW_ESTIMATE leaves the arrays alone. */
#pragma omp critical(nle_fftwf_planner)
    {
      w->forward = fftwf_plan_dft_r2c((int)g->d, dims, w->bufs[0], (fftwf_complex *)w->bufs[0], FFTW_ESTIMATE);
      w->backward = fftwf_plan_dft_c2r((int)g->d, dims, (fftwf_complex *)w->bufs[0], w->bufs[0], FFTW_ESTIMATE);
    }
    if (!w->forward || !w->backward) return nle__fail(ctx, NLE_ERR_NUMERIC, "FFT interpolation: FFTW planning failed");
  }
  for (size_t c = 0; c < nch; c++)
    if (!w->bufs[c] && !(w->bufs[c] = fftwf_malloc(w->grid_cap * sizeof(float))))
      return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
  for (size_t k = 0; k < nkernels; k++)
    if (!w->khat[k] && !(w->khat[k] = fftwf_malloc(w->grid_cap * sizeof(float))))
      return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
  g->forward = w->forward;
  g->backward = w->backward;
  return NLE_OK;
}

/* Spreads the sources' charges over a grid spanning src and `extent` (the
 * targets, or the corners of the region they will lie in) and convolves
 * every channel: the grid values are left in w->bufs. */
static nle_status convolve_sources(nle_ctx *ctx, nle__fft_ws *w, const nle_matd *src, const double *charges,
                                   size_t nq, const nle_matd *extent, const nle_kernel *kernels, size_t nkernels,
                                   const int *chan_kernel, const int *chan_charge, size_t nch,
                                   const nle_fft_opts *opts, fft_grid *g) {
  nle_fft_opts o;
  if (opts) o = *opts;
  else nle_fft_opts_init(&o);
  if (!o.max_nodes) o.max_nodes = default_max_nodes(src->cols);
  if (o.order < 1 || o.order > MAX_ORDER || !(o.box_width > 0) || !isfinite(o.box_width) || o.min_boxes < 1 ||
      o.max_nodes < (size_t)o.order)
    return nle__fail(ctx, NLE_ERR_ARG,
                     "FFT interpolation: order %d must be 1 to %d, box width %g positive, min boxes %d >= 1, "
                     "max nodes %zu >= order",
                     o.order, MAX_ORDER, o.box_width, o.min_boxes, o.max_nodes);
  if (nch > MAX_CHANNELS || nkernels > 2 || extent->cols != src->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: bad channel set-up");
  plan_grid(src, extent, &o, g);
  nle_status s = ws_fit(ctx, w, g, nch, nkernels);
  for (size_t k = 0; !s && k < nkernels; k++)
    if (w->khat_h[k] != g->h || w->khat_kernel[k] != kernels[k]) {
      kernel_transform(g, kernels[k], w->khat[k]);
      w->khat_h[k] = g->h;
      w->khat_kernel[k] = kernels[k];
    }
  size_t nsrc = src->rows;
  if (!s && w->stencil_cap < nsrc * g->d * g->p) {
    free(w->first);
    free(w->weights);
    w->stencil_cap = 0;
    w->first = nle__malloc(ctx, nsrc * g->d * g->p * sizeof(int32_t), "interpolation stencils");
    w->weights = nle__malloc(ctx, nsrc * g->d * g->p * sizeof(double), "interpolation stencils");
    if (!w->first || !w->weights) s = NLE_ERR_NOMEM;
    else w->stencil_cap = nsrc * g->d * g->p;
  }
  conv_job job = {g, src, NULL, charges, nq, chan_kernel, chan_charge, nch, w->khat, w->bufs, NULL, w->first,
                  w->weights};
  size_t pblocks = (nsrc + POINT_BLOCK - 1) / POINT_BLOCK;
  if (!s) s = nle__for_blocks(ctx, "FFT interpolation", pblocks, nle__threads_for(ctx, (double)nsrc * 100.0), 0,
                              stencil_block, &job);
  double grid_work = (double)g->real_len * log2((double)g->real_len + 2.0) + (double)src->rows * 50.0;
  if (!s) s = nle__for_blocks(ctx, "FFT interpolation", nch, nle__threads_for(ctx, grid_work * (double)nch), 0,
                              channel_block, &job);
  if (s && w->khat_h[0]) w->khat_h[0] = w->khat_h[1] = 0.0; /* a failed call may have left anything */
  return s;
}

/* phi = the convolved grids of w interpolated at tgt; src is the set whose
 * stencils w holds (reused when tgt is src), or NULL. */
static nle_status gather(nle_ctx *ctx, nle__fft_ws *w, const fft_grid *g, const nle_matd *src, const nle_matd *tgt,
                         size_t nch, double *phi) {
  conv_job job = {g, src, tgt, NULL, 0, NULL, NULL, nch, w->khat, w->bufs, phi, w->first, w->weights};
  return nle__for_blocks(ctx, "FFT interpolation", (tgt->rows + POINT_BLOCK - 1) / POINT_BLOCK,
                         nle__threads_for(ctx, (double)tgt->rows * 100.0 * (double)nch), 0, gather_block, &job);
}

/* phi[n, c] = sum_m K_c(|tgt_n - src_m|^2) q_c(m) over all sources
 * (including a source at the target itself), for channels c with kernel
 * kernels[chan_kernel[c]] and charge column chan_charge[c] of `charges`
 * (-1: unit charges). */
nle_status nle__fft_convolve(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *src, const double *charges, size_t nq,
                             const nle_matd *tgt, const nle_kernel *kernels, size_t nkernels, const int *chan_kernel,
                             const int *chan_charge, size_t nch, const nle_fft_opts *opts, double *phi) {
  nle__fft_ws *own = ws ? NULL : nle__fft_ws_new();
  if (!ws && !own) return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory");
  nle__fft_ws *w = ws ? ws : own;
  fft_grid g;
  nle_status s = convolve_sources(ctx, w, src, charges, nq, tgt, kernels, nkernels, chan_kernel, chan_charge, nch,
                                  opts, &g);
  if (!s) s = gather(ctx, w, &g, src, tgt, nch, phi);
  nle__fft_ws_free(&own);
  return s;
}

/* ---- a field of fixed sources --------------------------------------------- */

struct nle__fft_field {
  nle__fft_ws *ws;
  fft_grid g;
  size_t nch;
};

void nle__fft_field_free(nle__fft_field **f) {
  if (!f || !*f) return;
  nle__fft_ws_free(&(*f)->ws);
  free(*f);
  *f = NULL;
}

nle_status nle__fft_field_new(nle_ctx *ctx, const nle_matd *src, const double *charges, size_t nq,
                              const nle_matd *region, const nle_kernel *kernels, size_t nkernels,
                              const int *chan_kernel, const int *chan_charge, size_t nch, const nle_fft_opts *opts,
                              nle__fft_field **out) {
  *out = NULL;
  nle__fft_field *f = calloc(1, sizeof *f);
  if (!f || !(f->ws = nle__fft_ws_new())) {
    free(f);
    return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory");
  }
  f->nch = nch;
  nle_status s = convolve_sources(ctx, f->ws, src, charges, nq, region, kernels, nkernels, chan_kernel, chan_charge,
                                  nch, opts, &f->g);
  if (s) {
    nle__fft_field_free(&f);
    return s;
  }
  *out = f;
  return NLE_OK;
}

nle_status nle__fft_field_eval(nle_ctx *ctx, const nle__fft_field *f, const nle_matd *tgt, double *phi) {
  if (tgt->cols != f->g.d) return nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: targets of another dimension");
  return gather(ctx, f->ws, &f->g, NULL, tgt, f->nch, phi);
}

nle_status nle_kernel_sums_fft(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const nle_fft_opts *opts,
                               double *S, double *Sx) {
  return nle__kernel_sums_fft_ws(ctx, NULL, X, kernel, opts, S, Sx);
}

nle_status nle__kernel_sums_fft_ws(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel kernel,
                                   const nle_fft_opts *opts, double *S, double *Sx) {
  nle_status s = nle__kernel_sums_check(ctx, X, kernel, "FFT interpolation");
  if (s) return s;
  size_t n = X->rows, d = X->cols, nch = Sx ? d + 1 : 1;
  int chan_kernel[MAX_DIM + 1] = {0}, chan_charge[MAX_DIM + 1];
  for (size_t c = 0; c < nch; c++) chan_charge[c] = (int)c - 1;
  double *phi = nle__malloc(ctx, n * nch * sizeof(double), "FFT-interpolation sums");
  if (!phi) return NLE_ERR_NOMEM;
  s = nle__fft_convolve(ctx, ws, X, X->data, d, X, &kernel, 1, chan_kernel, chan_charge, nch, opts, phi);
  /* The sums exclude m = n: remove the point's own exact contribution. */
  double k0 = nle__kernel_value(kernel, 0.0);
  for (size_t i = 0; !s && i < n; i++) {
    S[i] = phi[i * nch] - k0;
    for (size_t t = 0; Sx && t < d; t++) Sx[i * d + t] = phi[i * nch + 1 + t] - k0 * X->data[i * d + t];
  }
  free(phi);
  return s;
}

nle_status nle__kernel_sums_fft_student_pair(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, const nle_fft_opts *opts, double *S,
                                             double *S2, double *S2x) {
  nle_status s = nle__kernel_sums_check(ctx, X, NLE_KERNEL_STUDENT, "FFT interpolation");
  if (s) return s;
  size_t n = X->rows, d = X->cols, nch = d + 2;
  /* Channels: K with unit charges; K^2 with unit charges and with x. */
  nle_kernel kernels[2] = {NLE_KERNEL_STUDENT, NLE_KERNEL_STUDENT2};
  int chan_kernel[MAX_DIM + 2] = {0, 1, 1, 1, 1}, chan_charge[MAX_DIM + 2] = {-1, -1, 0, 1, 2};
  double *phi = nle__malloc(ctx, n * nch * sizeof(double), "FFT-interpolation sums");
  if (!phi) return NLE_ERR_NOMEM;
  s = nle__fft_convolve(ctx, ws, X, X->data, d, X, kernels, 2, chan_kernel, chan_charge, nch, opts, phi);
  for (size_t i = 0; !s && i < n; i++) {
    S[i] = phi[i * nch] - 1.0;
    S2[i] = phi[i * nch + 1] - 1.0;
    for (size_t t = 0; t < d; t++) S2x[i * d + t] = phi[i * nch + 2 + t] - X->data[i * d + t];
  }
  free(phi);
  return s;
}
