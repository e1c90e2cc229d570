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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { MAX_DIM = NBODY_MAX_DIM, MAX_ORDER = 12, MAX_CHANNELS = 8, MAX_KERNELS = 4, POINT_BLOCK = 1024,
       SPLIT = 8,  /* row chunks of a 2-D transform */
       STRIP = 16 /* columns transformed together: a strip of a 1,500-row grid
                     fits in the cache */ };

static size_t default_max_nodes(size_t d) { return d == 1 ? 1 << 16 : d == 2 ? 1024 : 128; }

void nle_fft_opts_init(nle_fft_opts *o) {
  o->order = 3;
  o->box_width = 0.85;
  o->min_boxes = 8;
  o->max_nodes = 0;
  o->bh_ratio = 0.0;
}

/* The grid and each point's interpolation weights. */
typedef struct {
  size_t d, p;
  size_t nodes[MAX_DIM]; /* per dimension: boxes * p */
  size_t pad[MAX_DIM];   /* 2 nodes: the circulant embedding */
  size_t real_len;       /* doubles in one in-place r2c array */
  size_t cplx_len;       /* complex values in its transform */
  double lo[MAX_DIM], box, h;
  /* the nodes within a box, (j + 1/2) / p, and 1 / prod_{k != j} (node_j -
   * node_k): the constant half of each Lagrange weight */
  double node[MAX_ORDER], inv_denom[MAX_ORDER];
  fftwf_plan forward, backward; /* in-place, owned by the work space */
} fft_grid;

/* What calls with the same grid shape can reuse: the plans, the channel
 * buffers (no page faults on each call), and the transformed kernels,
 * which depend only on the shape and the node spacing. */
struct nle__fft_ws {
  size_t d, pad[MAX_DIM], real_len;
  size_t grid_cap; /* floats in each of bufs and khat */
  fftwf_plan forward, backward;
  /* d = 2: each transform split into passes over chunks of rows and of
   * columns, run in parallel, the row passes pruned to the rows that hold
   * charges (forward) or wanted values (backward), half of the padded grid.
   * The row plans are made on bufs[0]'s chunks and the column plans run on
   * strips copied to per-thread scratch; the buffers come from allocators
   * of at least 16-byte alignment, as new-array execution requires. */
  size_t row_lo[SPLIT + 1]; /* row chunk bounds */
  size_t strips;            /* column strips: STRIP columns, the last fewer */
  fftwf_plan row_fwd[SPLIT], row_inv[SPLIT];
  fftwf_plan col_fwd[2], col_inv[2]; /* a whole strip, the last strip, copied
                                        out as rows of STRIP values */
  float *bufs[MAX_CHANNELS]; /* single precision: the interpolation error
                                 (1e-4 and up) dwarfs its rounding, and the
                                 transforms run about twice as fast */
  float *charge_hat[MAX_CHANNELS]; /* d != 2: a charge column's transform,
                                      kept for the channels that share it */
  float *khat[MAX_KERNELS];
  nle__grid_kernel khat_kernel[MAX_KERNELS];
  double khat_h[MAX_KERNELS]; /* 0: not computed */
  /* Scratch kept between calls (no allocation per evaluation): the
   * strips' Parseval sums, and nle__fft_forces' gathered sums, self-term
   * table and per-block totals. */
  double *strip_sums, *scratch;
  size_t strip_cap, scratch_cap;
  int32_t *first;    /* the source points' stencils, computed once per call */
  double *weights;
  size_t stencil_cap; /* doubles in weights */
};

/* A grid buffer of `floats` floats. Large grids are aligned to 2 MiB and
 * asked for transparent huge pages: the column passes step a row (tens of
 * kilobytes) at a time, one 4 KiB page per element, and the TLB misses made
 * grids of millions of nodes cost far more per node than small ones. Freed
 * by free(). */
static float *grid_alloc(size_t floats) {
  enum { HUGE_PAGE = 2 << 20 };
  size_t bytes = floats * sizeof(float);
  void *p = NULL;
  if (bytes >= HUGE_PAGE) {
    bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, bytes)) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: a kernel without THP keeps small pages */
#endif
  } else if (posix_memalign(&p, 64, bytes ? bytes : 64)) {
    return NULL;
  }
  return p;
}

nle__fft_ws *nle__fft_ws_new(void) { return calloc(1, sizeof(nle__fft_ws)); }

/* FFTW's planner is not thread-safe. A mutex of this file's own, not a named
 * OpenMP critical section: that would be a global symbol exported by the
 * shared library. */
static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;

static void ws_release_plans(nle__fft_ws *w) {
  pthread_mutex_lock(&planner_lock);
  {
    if (w->forward) fftwf_destroy_plan(w->forward);
    if (w->backward) fftwf_destroy_plan(w->backward);
    for (size_t k = 0; k < SPLIT; k++) {
      if (w->row_fwd[k]) fftwf_destroy_plan(w->row_fwd[k]);
      if (w->row_inv[k]) fftwf_destroy_plan(w->row_inv[k]);
    }
    for (size_t k = 0; k < 2; k++) {
      if (w->col_fwd[k]) fftwf_destroy_plan(w->col_fwd[k]);
      if (w->col_inv[k]) fftwf_destroy_plan(w->col_inv[k]);
    }
  }
  pthread_mutex_unlock(&planner_lock);
  w->forward = w->backward = NULL;
  memset(w->row_fwd, 0, sizeof w->row_fwd);
  memset(w->row_inv, 0, sizeof w->row_inv);
  memset(w->col_fwd, 0, sizeof w->col_fwd);
  memset(w->col_inv, 0, sizeof w->col_inv);
  for (size_t k = 0; k < MAX_KERNELS; k++) w->khat_h[k] = 0.0; /* the kernels belong to the old shape */
}

static void ws_release_grids(nle__fft_ws *w) {
  for (size_t c = 0; c < MAX_CHANNELS; c++) free(w->bufs[c]), free(w->charge_hat[c]);
  for (size_t k = 0; k < MAX_KERNELS; k++) free(w->khat[k]);
  memset(w->bufs, 0, sizeof w->bufs);
  memset(w->charge_hat, 0, sizeof w->charge_hat);
  memset(w->khat, 0, sizeof w->khat);
  w->grid_cap = 0;
}

static void ws_release(nle__fft_ws *w) {
  ws_release_plans(w);
  ws_release_grids(w);
  free(w->first);
  free(w->weights);
  free(w->strip_sums);
  free(w->scratch);
  memset(w, 0, sizeof *w);
}

/* *buf with room for count doubles (grown, not kept in step with shrinking
 * calls), or NULL after recording the failure. */
static double *ws_doubles(nle_ctx *ctx, double **buf, size_t *cap, size_t count, const char *what) {
  if (count > *cap) {
    free(*buf);
    *cap = 0;
    if (!(*buf = nle__malloc(ctx, count * sizeof(double), what))) return NULL;
    *cap = count;
  }
  return *buf;
}

void nle__fft_ws_free(nle__fft_ws **w) {
  if (!w || !*w) return;
  ws_release(*w);
  free(*w);
  *w = NULL;
}

/* Interpolation stencil of one point: its first node per dimension and the
 * p Lagrange weights per dimension, w[t p + j]. */
NLE_HOT static void point_stencil(const fft_grid *g, const double *x, int32_t *first, double *w) {
  size_t p = g->p;
  for (size_t t = 0; t < g->d; t++) {
    double u = (x[t] - g->lo[t]) / g->box;
    size_t boxes = g->nodes[t] / p;
    double bf = floor(u);
    size_t b = bf < 0 ? 0 : (size_t)bf >= boxes ? boxes - 1 : (size_t)bf;
    double local = u - (double)b; /* in [0, 1] */
    first[t] = (int32_t)(b * p);
    for (size_t j = 0; j < p; j++) { /* no division per point and evaluation */
      double l = g->inv_denom[j];
      for (size_t k = 0; k < p; k++)
        if (k != j) l *= local - g->node[k];
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

/* The kernel's circulant column on the padded grid, transformed: entry i
 * holds the kernel at the offset (target - source) of i nodes, negative
 * offsets wrapped to the top half; the node at half the padded length
 * never pairs two grid nodes and holds 0. */
static void kernel_transform(const fft_grid *g, nle__grid_kernel kernel, float *buf) {
  size_t d = g->d, i[MAX_DIM] = {0}, total = 1;
  double offset[MAX_DIM];
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
      offset[t] = off * g->h;
      d2 += offset[t] * offset[t];
    }
    double k = nle__kernel_value(kernel.kernel, d2);
    if (kernel.moment >= 0) k *= offset[kernel.moment];
    buf[real_index(g, i)] = unused ? 0.0f : (float)k;
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
  float *const *charge_hat;    /* d != 2, per lead channel: its charges' transform, when shared */
  int lead_of[MAX_CHANNELS];   /* per channel: the first channel with its charges */
  int shared[MAX_CHANNELS];    /* per lead channel: whether its transform is kept for others */
  int leads[MAX_CHANNELS];     /* stage one: the lead channels */
  int followers[MAX_CHANNELS]; /* stage two: the channels of shared charges */
  size_t nleads, nfollowers;
  const nle__fft_ws *ws;   /* d = 2: the split plans */
  int quad_lead, quad_kernel; /* the quad's lead channel (-1: none) and kernel */
  double *quad_part;          /* per column strip */
  double *phi;             /* tgt rows x nch */
  const double *self;      /* NULL, or per channel its kernel at the (2p - 1)^d
                              node offsets within a stencil: the gathered
                              values then leave out each point's own charge
                              as the grid carries it (targets = sources) */
  double *self_quad;       /* with self: per point block, the sum of the
                              points' own pairs through one more kernel,
                              the table's row nch (for a quad) */
  size_t self_from;        /* the first channel with a self term (a vector
                              kernel's is 0: see self_subtract) */
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

/* Spreads channel c's charges over buf and, unless split, transforms it. */
NLE_HOT static void spread_charges(const conv_job *j, size_t c, float *buf, int split) {
  const fft_grid *g = j->g;
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
  if (!split) fftwf_execute_dft_r2c(g->forward, buf, (fftwf_complex *)buf);
}

/* out = the inverse transform of charges_hat times channel c's kernel
 * (out may be charges_hat). */
static void apply_kernel(const conv_job *j, size_t c, const float *charges_hat, float *out) {
  const fft_grid *g = j->g;
  const fftwf_complex *f = (const fftwf_complex *)charges_hat;
  const fftwf_complex *k = (const fftwf_complex *)j->kernel_hat[j->chan_kernel[c]];
  fftwf_complex *o = (fftwf_complex *)out;
  float scale = 1.0f;
  for (size_t t = 0; t < g->d; t++) scale /= (float)g->pad[t];
  for (size_t i = 0; i < g->cplx_len; i++) {
    float re = f[i][0] * k[i][0] - f[i][1] * k[i][1], im = f[i][0] * k[i][1] + f[i][1] * k[i][0];
    o[i][0] = re * scale;
    o[i][1] = im * scale;
  }
  fftwf_execute_dft_c2r(g->backward, o, out);
}

/* Stage one, per distinct charge column: spread and transform; a charge
 * column of one channel is convolved right away in that channel's grid. */
static int lead_block(void *job, size_t i, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  size_t c = (size_t)j->leads[i];
  if (j->shared[c]) {
    spread_charges(j, c, j->charge_hat[c], 0);
  } else {
    spread_charges(j, c, j->grid[c], 0);
    apply_kernel(j, c, j->grid[c], j->grid[c]);
  }
  return 0;
}

/* sum_w |Q^(w)|^2 K^(w) over the half spectrum of a real transform, for
 * `width` columns from c0 of its last dimension, the transforms' rows
 * `fld` and `kld` values apart, f and k at column c0 of the first row
 * (times 1 / G: q^T (K * q), by Parseval's identity): the columns other
 * than 0 and pad/2 stand for two. */
static double parseval_strip(const fftwf_complex *f, size_t fld, const fftwf_complex *k, size_t kld, size_t rows,
                             size_t c0, size_t width, size_t last) {
  double sum = 0.0;
  for (size_t r = 0; r < rows; r++)
    for (size_t col = 0; col < width; col++) {
      const float *fv = f[r * fld + col], *kv = k[r * kld + col];
      double twice = c0 + col == 0 || 2 * (c0 + col) == last ? 1.0 : 2.0;
      sum += twice * ((double)fv[0] * fv[0] + (double)fv[1] * fv[1]) * kv[0];
    }
  return sum;
}

static double parseval_columns(const fft_grid *g, const float *charges_hat, const float *kernel_hat, size_t c0,
                               size_t c1) {
  size_t last = g->pad[g->d - 1], half = last / 2 + 1, rows = g->cplx_len / half;
  return parseval_strip((const fftwf_complex *)charges_hat + c0, half, (const fftwf_complex *)kernel_hat + c0, half,
                        rows, c0, c1 - c0, last);
}

/* ---- d = 2: split and pruned transforms -------------------------------- */

/* Lead channel c's charges are spread to, and row-transformed in, its own
 * grid, whether or not other channels share them: each strip of columns is
 * copied out before its results are copied back (split_columns_block). */

static int split_spread_block(void *job, size_t i, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  size_t c = (size_t)j->leads[i];
  spread_charges(j, c, j->grid[c], 1);
  return 0;
}

/* The forward row pass of one lead's chunk of rows (rows past nodes0 hold
 * no charges: their transforms are the zeros already there). */
static int split_rows_forward_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  const nle__fft_ws *w = j->ws;
  size_t k = b % SPLIT, c = (size_t)j->leads[b / SPLIT], last = 2 * (j->g->pad[1] / 2 + 1);
  if (w->row_lo[k] == w->row_lo[k + 1]) return 0;
  float *r = j->grid[c] + w->row_lo[k] * last;
  fftwf_execute_dft_r2c(w->row_fwd[k], r, (fftwf_complex *)r);
  return 0;
}

/* One strip of columns: the leads' forward column pass, the quad's share,
 * each channel's product with its kernel and its backward column pass, on
 * the strip copied out to `scratch` as rows of STRIP values. Transformed in
 * place, a strip of a grid of thousands of rows steps tens of kilobytes per
 * element, and the column passes ran 2-3x slower than the copies and the
 * transforms of the compact strip together (1e6 points: 2.2-2.7 -> 1.4-1.6
 * s for the sums; no loss on small grids). Only the rows of grid nodes go
 * in and out: the others hold no charges (forward) and are not wanted
 * (backward). The scratch comes from nle__for_blocks per call; glibc's
 * adaptive mmap threshold serves the repeats of a size from its heap. */
NLE_HOT static int split_columns_block(void *job, size_t k, void *scratch) {
  conv_job *j = job;
  const nle__fft_ws *w = j->ws;
  const fft_grid *g = j->g;
  size_t ncplx = g->pad[1] / 2 + 1, c0 = k * STRIP, c1 = c0 + STRIP < ncplx ? c0 + STRIP : ncplx, width = c1 - c0;
  size_t rows = g->pad[0], nodes0 = g->nodes[0], plan = k + 1 == w->strips;
  fftwf_complex *lead_at[MAX_CHANNELS] = {0}, *out = (fftwf_complex *)scratch + j->nleads * rows * STRIP;
  for (size_t i = 0; i < j->nleads; i++) {
    size_t c = (size_t)j->leads[i];
    const fftwf_complex *a = (const fftwf_complex *)j->grid[c] + c0;
    fftwf_complex *t = (fftwf_complex *)scratch + i * rows * STRIP;
    for (size_t r = 0; r < nodes0; r++) memcpy(t + r * STRIP, a + r * ncplx, width * sizeof(fftwf_complex));
    memset(t + nodes0 * STRIP, 0, (rows - nodes0) * STRIP * sizeof(fftwf_complex));
    fftwf_execute_dft(w->col_fwd[plan], t, t);
    lead_at[c] = t;
  }
  if (j->quad_lead >= 0)
    j->quad_part[k] = parseval_strip(lead_at[j->quad_lead], STRIP,
                                     (const fftwf_complex *)j->kernel_hat[j->quad_kernel] + c0, ncplx, rows, c0,
                                     width, g->pad[1]);
  float scale = 1.0f / ((float)g->pad[0] * (float)g->pad[1]);
  for (size_t c = 0; c < j->nch; c++) {
    const fftwf_complex *f = lead_at[j->lead_of[c]];
    const fftwf_complex *kh = (const fftwf_complex *)j->kernel_hat[j->chan_kernel[c]] + c0;
    for (size_t r = 0; r < rows; r++)
      for (size_t col = 0; col < width; col++) {
        const float *fv = f[r * STRIP + col], *kv = kh[r * ncplx + col];
        float re = fv[0] * kv[0] - fv[1] * kv[1], im = fv[0] * kv[1] + fv[1] * kv[0];
        out[r * STRIP + col][0] = re * scale;
        out[r * STRIP + col][1] = im * scale;
      }
    fftwf_execute_dft(w->col_inv[plan], out, out);
    fftwf_complex *grid = (fftwf_complex *)j->grid[c] + c0;
    for (size_t r = 0; r < nodes0; r++) memcpy(grid + r * ncplx, out + r * STRIP, width * sizeof(fftwf_complex));
  }
  return 0;
}

/* The backward row pass of one channel's chunk of rows: only the rows of
 * grid nodes (the others hold the circulant embedding's wrap-around). */
static int split_rows_backward_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  const nle__fft_ws *w = j->ws;
  size_t k = b % SPLIT, c = b / SPLIT, last = 2 * (j->g->pad[1] / 2 + 1);
  if (w->row_lo[k] == w->row_lo[k + 1]) return 0;
  float *r = j->grid[c] + w->row_lo[k] * last;
  fftwf_execute_dft_c2r(w->row_inv[k], (fftwf_complex *)r, r);
  return 0;
}

/* Stage two: the channels whose charges' transform is shared. */
static int follower_block(void *job, size_t i, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  size_t c = (size_t)j->followers[i];
  apply_kernel(j, c, j->charge_hat[j->lead_of[c]], j->grid[c]);
  return 0;
}

/* The offsets within one stencil: (2p - 1)^d node offsets per dimension
 * from -(p - 1) to p - 1, the last dimension fastest. */
static size_t self_offsets(const fft_grid *g) {
  size_t total = 1;
  for (size_t t = 0; t < g->d; t++) total *= 2 * g->p - 1;
  return total;
}

/* A point's charge, spread with weights w and gathered with the same
 * weights, meets itself through the kernel at the offsets within its
 * stencil: sum_{i,j} w_i w_j K(z_i - z_j), per dimension a correlation of
 * the weights, for table rows from..rows - 1. Subtracting it (not K(0))
 * takes out the grid's error on the pair m = n too: on a 70,000-point
 * t-SNE map it halved the error of E (3.7e-5 to 2.1e-5). The correlations
 * are even in the offset, so for an odd (vector) kernel the term is 0 and
 * its rows are skipped. */
NLE_HOT static void self_subtract(const conv_job *j, const double *w, size_t from, size_t rows, double *acc) {
  const fft_grid *g = j->g;
  size_t p = g->p, d = g->d, span = 2 * p - 1, total = self_offsets(g);
  double corr[MAX_DIM][2 * MAX_ORDER - 1] = {{0}};
  for (size_t t = 0; t < d; t++) /* offset a - b sits at a - b + p - 1 */
    for (size_t a = 0; a < p; a++)
      for (size_t b = 0; b < p; b++) corr[t][a + p - 1 - b] += w[t * p + a] * w[t * p + b];
  /* Each row's sum in a local accumulator: updating acc[c] in memory offset
   * by offset chained every step through a store and a load, and made this
   * the slower half of the gather (t-SNE of 70,000 points). */
  for (size_t c = from; c < rows; c++) {
    const double *table = j->self + c * total;
    double sum = 0.0;
    if (d == 2) {
      for (size_t k0 = 0; k0 < span; k0++) {
        double inner = 0.0;
        for (size_t k1 = 0; k1 < span; k1++) inner += corr[1][k1] * table[k0 * span + k1];
        sum += corr[0][k0] * inner;
      }
    } else {
      size_t k[MAX_DIM] = {0};
      for (size_t q = 0; q < total; q++) {
        double weight = 1.0;
        for (size_t t = 0; t < d; t++) weight *= corr[t][k[t]];
        sum += weight * table[q];
        for (size_t t = d; t-- > 0;) { /* the last dimension fastest */
          if (++k[t] < span) break;
          k[t] = 0;
        }
      }
    }
    acc[c] -= sum;
  }
}

NLE_HOT static int gather_block(void *job, size_t b, void *scratch) {
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
    double acc[MAX_CHANNELS + 1] = {0};
    if (d == 2) { /* channel by channel, each sum in a register */
      size_t p = g->p, last = 2 * (g->pad[1] / 2 + 1);
      size_t base = (size_t)first[0] * last + (size_t)first[1];
      for (size_t c = 0; c < j->nch; c++) {
        const float *patch = j->grid[c] + base;
        double sum = 0.0;
        for (size_t a = 0; a < p; a++) {
          double r = 0.0;
          for (size_t b = 0; b < p; b++) r += w[p + b] * patch[a * last + b];
          sum += w[a] * r;
        }
        acc[c] = sum;
      }
    } else
      FOR_STENCIL(g, first, w, for (size_t c = 0; c < j->nch; c++) acc[c] += weight * j->grid[c][idx]);
    if (j->self) {
      self_subtract(j, w, j->self_from, j->nch + (j->self_quad != NULL), acc);
      if (j->self_quad) j->self_quad[b] -= acc[j->nch];
    }
    memcpy(j->phi + n * j->nch, acc, j->nch * sizeof(double));
  }
  return 0;
}

/* Transform lengths FFTW runs fast here: a power of 2 times a small odd
 * factor (a 1,458 = 2 3^6 column pass took 1.5 times as long as a 1,440 =
 * 2^5 45 one on this machine, and factors of 7 were as slow). */
static int smooth(size_t n) {
  while (n % 2 == 0) n /= 2;
  return n == 1 || n == 3 || n == 5 || n == 9 || n == 15 || n == 25 || n == 45;
}

/* Plans the grid over the bounding box of src and tgt. */
static void plan_grid(const nle_matd *src, const nle_matd *tgt, const nle_fft_opts *o,
                            fft_grid *g) {
  size_t d = src->cols, p = (size_t)o->order;
  memset(g, 0, sizeof *g);
  g->d = d;
  g->p = p;
  for (size_t j = 0; j < p; j++) g->node[j] = ((double)j + 0.5) / (double)p;
  for (size_t j = 0; j < p; j++) {
    double denom = 1.0;
    for (size_t k = 0; k < p; k++)
      if (k != j) denom *= g->node[j] - g->node[k];
    g->inv_denom[j] = 1.0 / denom;
  }
  double hi[MAX_DIM], extent = 0.0;
  for (size_t t = 0; t < d; t++) {
    g->lo[t] = INFINITY;
    hi[t] = -INFINITY;
  }
  const nle_matd *sets[2] = {src, tgt};
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < sets[s]->rows; i++)
      for (size_t t = 0; t < d; t++) {
        double v = sets[s]->data[i * d + t]; /* finite: no fmin (a libm call) */
        g->lo[t] = v < g->lo[t] ? v : g->lo[t];
        hi[t] = v > hi[t] ? v : hi[t];
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
     * few extra boxes make 2 p boxes one it runs fast. */
    while (!smooth(2 * boxes * p)) boxes++;
    g->nodes[t] = boxes * p;
    g->pad[t] = 2 * g->nodes[t];
    total *= g->pad[t];
  }
  g->real_len = total / g->pad[d - 1] * 2 * (g->pad[d - 1] / 2 + 1);
  g->cplx_len = g->real_len / 2;
}

double nle__fft_grid_nodes(const nle_matd *X, const nle_fft_opts *opts) {
  nle_fft_opts o;
  if (opts && opts->order) o = *opts;
  else nle_fft_opts_init(&o);
  size_t d = X->cols, max_nodes = o.max_nodes ? o.max_nodes : default_max_nodes(d);
  double nodes = 1.0;
  for (size_t t = 0; t < d; t++) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < X->rows; i++) {
      double v = X->data[i * d + t];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    double along = (hi - lo) / o.box_width * (double)o.order;
    if (along > (double)max_nodes) return 0.0;
    nodes *= fmax(along, (double)o.order);
  }
  return nodes;
}

int nle__fft_grid_fits(const nle_matd *X, const nle_fft_opts *opts) { return nle__fft_grid_nodes(X, opts) > 0.0; }

/* Bounds of `parts` chunks of n items, each starting at an even item (so
 * that every chunk of a buffer has the alignment of the first). */
static void split_even(size_t n, size_t parts, size_t *lo) {
  for (size_t k = 0; k <= parts; k++) {
    size_t b = n * k / parts;
    lo[k] = k == parts ? n : b & ~(size_t)1;
  }
}

/* The chunked row plans and the column-strip plans of a 2-D grid (under
 * the planner lock). */
static void plan_split(nle__fft_ws *w, const fft_grid *g) {
  int rows = (int)g->pad[0], cols = (int)g->pad[1], ncplx = cols / 2 + 1, last = 2 * ncplx;
  split_even(g->nodes[0], SPLIT, w->row_lo);
  for (size_t k = 0; k < SPLIT; k++) {
    int nr = (int)(w->row_lo[k + 1] - w->row_lo[k]);
    float *r = w->bufs[0] + w->row_lo[k] * (size_t)last;
    if (nr == 0) continue;
    w->row_fwd[k] = fftwf_plan_many_dft_r2c(1, &cols, nr, r, NULL, 1, last, (fftwf_complex *)r, NULL, 1, ncplx,
                                            FFTW_ESTIMATE);
    w->row_inv[k] = fftwf_plan_many_dft_c2r(1, &cols, nr, (fftwf_complex *)r, NULL, 1, ncplx, r, NULL, 1, last,
                                            FFTW_ESTIMATE);
  }
  w->strips = ((size_t)ncplx + STRIP - 1) / STRIP;
  fftwf_complex *c = (fftwf_complex *)w->bufs[0];
  for (size_t k = 0; k < 2; k++) {
    int width = k == 0 ? STRIP : ncplx - (int)(w->strips - 1) * STRIP;
    w->col_fwd[k] = fftwf_plan_many_dft(1, &rows, width, c, NULL, STRIP, 1, c, NULL, STRIP, 1, FFTW_FORWARD,
                                        FFTW_ESTIMATE);
    w->col_inv[k] = fftwf_plan_many_dft(1, &rows, width, c, NULL, STRIP, 1, c, NULL, STRIP, 1, FFTW_BACKWARD,
                                        FFTW_ESTIMATE);
  }
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
      if (!(w->bufs[0] = grid_alloc(cap)))
        return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grid");
      w->grid_cap = cap;
    }
    w->d = g->d;
    memcpy(w->pad, g->pad, sizeof w->pad);
    w->real_len = g->real_len;
    int dims[MAX_DIM];
    for (size_t t = 0; t < g->d; t++) dims[t] = (int)g->pad[t];
    /* FFTW_ESTIMATE leaves the arrays alone. */
    pthread_mutex_lock(&planner_lock);
    w->forward = fftwf_plan_dft_r2c((int)g->d, dims, w->bufs[0], (fftwf_complex *)w->bufs[0], FFTW_ESTIMATE);
    w->backward = fftwf_plan_dft_c2r((int)g->d, dims, (fftwf_complex *)w->bufs[0], w->bufs[0], FFTW_ESTIMATE);
    if (g->d == 2) plan_split(w, g);
    pthread_mutex_unlock(&planner_lock);
    int ok = w->forward && w->backward;
    for (size_t k = 0; g->d == 2 && k < SPLIT; k++)
      ok &= w->row_lo[k] == w->row_lo[k + 1] || (w->row_fwd[k] && w->row_inv[k]);
    for (size_t k = 0; g->d == 2 && k < 2; k++) ok &= w->col_fwd[k] && w->col_inv[k];
    if (!ok) return nle__fail(ctx, NLE_ERR_NUMERIC, "FFT interpolation: FFTW planning failed");
  }
  for (size_t c = 0; c < nch; c++)
    if (!w->bufs[c] && !(w->bufs[c] = grid_alloc(w->grid_cap)))
      return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
  for (size_t k = 0; k < nkernels; k++)
    if (!w->khat[k] && !(w->khat[k] = grid_alloc(w->grid_cap)))
      return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
  g->forward = w->forward;
  g->backward = w->backward;
  return NLE_OK;
}

/* Spreads the sources' charges over a grid spanning src and `extent` (the
 * targets, or the corners of the region they will lie in) and convolves
 * every channel: the grid values are left in w->bufs. Channels with the
 * same charges share one spreading and one forward transform. With quad,
 * also *quad = sum_n sum_m q_n K(x_n - x_m) q_m for the unit charges and
 * kernel quad_kernel, the sum of the unit-charge channel of that kernel over
 * its own sources, by Parseval's identity: no backward transform. */
static nle_status convolve_sources(nle_ctx *ctx, nle__fft_ws *w, const nle_matd *src, const double *charges,
                                   size_t nq, const nle_matd *extent, const nle__grid_kernel *kernels,
                                   size_t nkernels, const int *chan_kernel, const int *chan_charge, size_t nch,
                                   const nle_fft_opts *opts, int quad_kernel, double *quad, fft_grid *g) {
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
  int bad = nch > MAX_CHANNELS || nkernels > MAX_KERNELS || extent->cols != src->cols ||
            (quad && (quad_kernel < 0 || (size_t)quad_kernel >= nkernels));
  for (size_t k = 0; k < nkernels; k++) bad |= kernels[k].moment >= (int)src->cols;
  for (size_t c = 0; c < nch; c++)
    bad |= chan_kernel[c] < 0 || (size_t)chan_kernel[c] >= nkernels || chan_charge[c] < -1 || chan_charge[c] >= (int)nq;
  if (bad) return nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: bad channel set-up");
  conv_job job = {g, src, NULL, charges, nq, chan_kernel, chan_charge, nch, w->khat, w->bufs, w->charge_hat,
                  {0}, {0}, {0}, {0}, 0, 0, NULL, -1, -1, NULL, NULL, NULL, NULL, 0, NULL, NULL};
  /* The channels' charge columns: the first channel of each leads. A quad
   * request counts as one more user of the unit charges. */
  int users[MAX_CHANNELS] = {0}, unit_lead = -1;
  for (size_t c = 0; c < nch; c++) {
    size_t l = 0;
    while (chan_charge[l] != chan_charge[c]) l++;
    job.lead_of[c] = (int)l;
    users[l]++;
    if (l == c) job.leads[job.nleads++] = (int)c;
    if (chan_charge[c] < 0) unit_lead = (int)l;
  }
  if (quad && unit_lead < 0) return nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: bad channel set-up");
  plan_grid(src, extent, &o, g);
  nle_status s = ws_fit(ctx, w, g, nch, nkernels);
  for (size_t c = 0; c < nch; c++) job.shared[c] = users[c] + (quad && (int)c == unit_lead) > 1;
  for (size_t c = 0; c < nch; c++)
    if (job.shared[job.lead_of[c]]) job.followers[job.nfollowers++] = (int)c;
  for (size_t c = 0; !s && c < nch; c++)
    if (g->d != 2 && job.shared[c] && !w->charge_hat[c] &&
        !(w->charge_hat[c] = grid_alloc(w->grid_cap)))
      s = nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
  for (size_t k = 0; !s && k < nkernels; k++)
    if (w->khat_h[k] != g->h || w->khat_kernel[k].kernel != kernels[k].kernel ||
        w->khat_kernel[k].moment != kernels[k].moment) {
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
  job.first = w->first;
  job.weights = w->weights;
  size_t pblocks = (nsrc + POINT_BLOCK - 1) / POINT_BLOCK;
  if (!s) s = nle__for_blocks(ctx, "FFT interpolation", pblocks, nle__threads_for(ctx, (double)nsrc * 100.0), 0,
                              stencil_block, &job);
  double grid_work = (double)g->real_len * log2((double)g->real_len + 2.0) + (double)src->rows * 50.0;
  if (!s && g->d == 2) {
    /* Spread, row pass, column pass with the kernels, row pass back. */
    job.ws = w;
    job.quad_lead = quad ? unit_lead : -1;
    job.quad_kernel = quad_kernel;
    double pass = grid_work / 2.0 / SPLIT;
    s = nle__for_blocks(ctx, "FFT interpolation", job.nleads,
                        nle__threads_for(ctx, (double)src->rows * 50.0 * (double)job.nleads), 0, split_spread_block,
                        &job);
    if (!s) s = nle__for_blocks(ctx, "FFT interpolation", job.nleads * SPLIT,
                                nle__threads_for(ctx, pass * (double)(job.nleads * SPLIT)), 0,
                                split_rows_forward_block, &job);
    job.quad_part = quad ? ws_doubles(ctx, &w->strip_sums, &w->strip_cap, w->strips, "FFT-interpolation sums") : NULL;
    if (quad && !job.quad_part) s = NLE_ERR_NOMEM;
    size_t strip_bytes = (job.nleads + 1) * g->pad[0] * STRIP * sizeof(fftwf_complex);
    if (!s) s = nle__for_blocks(ctx, "FFT interpolation", w->strips,
                                nle__threads_for(ctx, pass * SPLIT * (double)(job.nleads + nch)), strip_bytes,
                                split_columns_block, &job);
    if (!s) s = nle__for_blocks(ctx, "FFT interpolation", nch * SPLIT,
                                nle__threads_for(ctx, pass * (double)(nch * SPLIT)), 0, split_rows_backward_block,
                                &job);
    if (!s && quad) {
      double sum = 0.0;
      for (size_t k = 0; k < w->strips; k++) sum += job.quad_part[k];
      *quad = sum / ((double)g->pad[0] * (double)g->pad[1]);
    }
  } else if (!s) {
    s = nle__for_blocks(ctx, "FFT interpolation", job.nleads, nle__threads_for(ctx, grid_work * (double)job.nleads), 0,
                        lead_block, &job);
    if (!s && quad) {
      double total = 1.0;
      for (size_t t = 0; t < g->d; t++) total *= (double)g->pad[t];
      *quad = parseval_columns(g, w->charge_hat[unit_lead], w->khat[quad_kernel], 0, g->pad[g->d - 1] / 2 + 1) / total;
    }
    if (!s) s = nle__for_blocks(ctx, "FFT interpolation", job.nfollowers,
                                nle__threads_for(ctx, grid_work * (double)job.nfollowers), 0, follower_block, &job);
  }
  if (s)
    for (size_t k = 0; k < MAX_KERNELS; k++) w->khat_h[k] = 0.0; /* a failed call may have left anything */
  return s;
}

/* phi = the convolved grids of w interpolated at tgt; src is the set whose
 * stencils w holds (reused when tgt is src), or NULL. */
static nle_status gather(nle_ctx *ctx, nle__fft_ws *w, const fft_grid *g, const nle_matd *src, const nle_matd *tgt,
                         size_t nch, const double *self, size_t self_from, double *self_quad, double *phi) {
  conv_job job = {g, src, tgt, NULL, 0, NULL, NULL, nch, w->khat, w->bufs, w->charge_hat,
                  {0}, {0}, {0}, {0}, 0, 0, NULL, -1, -1, NULL, phi, self, self_quad, self_from, w->first,
                  w->weights};
  return nle__for_blocks(ctx, "FFT interpolation", (tgt->rows + POINT_BLOCK - 1) / POINT_BLOCK,
                         nle__threads_for(ctx, (double)tgt->rows * 100.0 * (double)nch), 0, gather_block, &job);
}

/* phi[n, c] = sum_m K_c(|tgt_n - src_m|^2) q_c(m) over all sources
 * (including a source at the target itself), for channels c with kernel
 * kernels[chan_kernel[c]] and charge column chan_charge[c] of `charges`
 * (-1: unit charges). */
nle_status nle__fft_convolve(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *src, const double *charges, size_t nq,
                             const nle_matd *tgt, const nle__grid_kernel *kernels, size_t nkernels, const int *chan_kernel,
                             const int *chan_charge, size_t nch, const nle_fft_opts *opts, double *phi) {
  nle__fft_ws *own = ws ? NULL : nle__fft_ws_new();
  if (!ws && !own) return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory");
  nle__fft_ws *w = ws ? ws : own;
  fft_grid g;
  nle_status s = convolve_sources(ctx, w, src, charges, nq, tgt, kernels, nkernels, chan_kernel, chan_charge, nch,
                                  opts, -1, NULL, &g);
  if (!s) s = gather(ctx, w, &g, src, tgt, nch, NULL, 0, NULL, phi);
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
                              const nle_matd *region, const nle__grid_kernel *kernels, size_t nkernels,
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
                                  nch, opts, -1, NULL, &f->g);
  if (s) {
    nle__fft_field_free(&f);
    return s;
  }
  *out = f;
  return NLE_OK;
}

nle_status nle__fft_field_eval(nle_ctx *ctx, const nle__fft_field *f, const nle_matd *tgt, double *phi) {
  if (tgt->cols != f->g.d) return nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: targets of another dimension");
  return gather(ctx, f->ws, &f->g, NULL, tgt, f->nch, NULL, 0, NULL, phi);
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
  nle__grid_kernel k = {kernel, -1};
  s = nle__fft_convolve(ctx, ws, X, X->data, d, X, &k, 1, chan_kernel, chan_charge, nch, opts, phi);
  /* The sums exclude m = n: remove the point's own exact contribution. */
  double k0 = nle__kernel_value(kernel, 0.0);
  for (size_t i = 0; !s && i < n; i++) {
    S[i] = phi[i * nch] - k0;
    for (size_t t = 0; Sx && t < d; t++) Sx[i * d + t] = phi[i * nch + 1 + t] - k0 * X->data[i * d + t];
  }
  free(phi);
  return s;
}

nle_status nle__fft_forces(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel energy_kernel,
                          nle_kernel force_kernel, const nle_fft_opts *opts, double *S, double *z, double *F) {
  nle_status s = nle__kernel_sums_check(ctx, X, energy_kernel, "FFT interpolation");
  if (s) return s;
  size_t n = X->rows, d = X->cols, nch = d + (S != NULL);
  /* Channels, all with unit charges (one spreading, one forward
   * transform): the force kernel's d components, then K when S is wanted.
   * The total of K comes from the same transform (Parseval). */
  nle__grid_kernel kernels[MAX_KERNELS];
  int chan_kernel[MAX_CHANNELS], chan_charge[MAX_CHANNELS];
  for (size_t t = 0; t < d; t++) kernels[t] = (nle__grid_kernel){force_kernel, (int)t};
  kernels[d] = (nle__grid_kernel){energy_kernel, -1};
  for (size_t c = 0; c < nch; c++) chan_kernel[c] = (int)c, chan_charge[c] = -1;
  double quad = 0.0;
  nle__fft_ws *own_ws = ws ? NULL : nle__fft_ws_new();
  if (!ws && !own_ws) s = nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory");
  nle__fft_ws *w = ws ? ws : own_ws;
  fft_grid g;
  if (!s) s = convolve_sources(ctx, w, X, NULL, 0, X, kernels, d + 1, chan_kernel, chan_charge, nch, opts, (int)d,
                               S ? NULL : &quad, &g);
  /* The work space's scratch: the gathered sums (n x nch), each channel's
   * kernel at the offsets within a stencil for the pair m = n as the grid
   * carries it (row nch: K, for the quad), the blocks' own-pair totals. */
  size_t offsets = s ? 0 : self_offsets(&g), span = 2 * g.p - 1, blocks = (n + POINT_BLOCK - 1) / POINT_BLOCK;
  double *phi = s ? NULL
                  : ws_doubles(ctx, &w->scratch, &w->scratch_cap, n * nch + (nch + 1) * offsets + blocks,
                               "FFT-interpolation sums");
  if (!s && !phi) s = NLE_ERR_NOMEM;
  double *self = s ? NULL : phi + n * nch, *own = s ? NULL : self + (nch + 1) * offsets;
  for (size_t c = d; !s && c <= nch; c++) { /* rows < d: the forces' vector kernels, whose term is 0 */
    nle__grid_kernel k = kernels[c < nch ? (size_t)chan_kernel[c] : d];
    for (size_t q = 0; q < offsets; q++) {
      double r[MAX_DIM], d2 = 0.0;
      size_t rem = q;
      for (size_t t = d; t-- > 0;) {
        r[t] = ((double)(rem % span) - (double)(g.p - 1)) * g.h;
        rem /= span;
        d2 += r[t] * r[t];
      }
      double v = nle__kernel_value(k.kernel, d2);
      self[c * offsets + q] = k.moment >= 0 ? v * r[k.moment] : v;
    }
  }
  if (!s) memset(own, 0, blocks * sizeof(double));
  if (!s) s = gather(ctx, w, &g, X, X, nch, self, d, S ? NULL : own, phi);
  double total = 0.0;
  for (size_t i = 0; !s && i < n; i++) {
    for (size_t t = 0; t < d; t++) F[i * d + t] = phi[i * nch + t];
    if (S) total += S[i] = phi[i * nch + d];
  }
  if (!s && z && S) *z = total;
  if (!s && z && !S) {
    for (size_t b = 0; b < blocks; b++) total += own[b];
    *z = quad - total;
  }
  nle__fft_ws_free(&own_ws);
  return s;
}
