/* fft_internal.h — what the three files of FFT interpolation share: the
 * grid (fft_plan.c plans it and keeps its work space), the job of one
 * convolution (fft_interp.c spreads, convolves and gathers), and the split
 * 2-D transforms (fft_split2d.c). */
#ifndef NLE_FFT_INTERNAL_H
#define NLE_FFT_INTERNAL_H

#include "nbody_internal.h"

#include <fftw3.h>
#include <string.h>

enum { MAX_DIM = NBODY_MAX_DIM, MAX_ORDER = 12, MAX_CHANNELS = 8, MAX_KERNELS = 4, POINT_BLOCK = 1024,
       SPLIT = 8,  /* row chunks of a 2-D transform */
       STRIP = 16 /* columns transformed together: a strip of a 1,500-row grid
                     fits in the cache */ };


/* The grid and each point's interpolation weights. */
typedef struct {
  size_t d, p;
  size_t nodes[MAX_DIM]; /* per dimension: boxes * p */
  size_t pad[MAX_DIM];   /* 2 nodes: the circulant embedding */
  size_t real_len;       /* doubles in one in-place r2c array */
  size_t cplx_len;       /* complex values in its transform */
  size_t kernel_len;     /* floats in a kernel's compact transform: the
                            product of (nodes + 1) (see kernel_row) */
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
  size_t grid_cap; /* floats in each of bufs */
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
  float *khat[MAX_KERNELS]; /* compact transforms (kernel_row), khat_cap floats each */
  size_t khat_cap;
  fftwf_plan khat_plan[MAX_DIM + 1]; /* their DCT/DST, per moment + 1 (0: even) */
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
  /* Divided among ranks (fft_slab.c): the exchanges' buffers, kept (tens
   * of MB near the grid's cap: allocated per call, their page faults took
   * a good part of an exchange). */
  double *slab_send, *slab_recv, *slab_rows;
  size_t slab_send_cap, slab_recv_cap, slab_rows_cap; /* doubles */
};

/* The split 2-D passes' units one process does: row chunks [chunk0,
 * chunk1) and column strips [strip0, strip1); all of them alone, a
 * contiguous share of each when divided among ranks (fft_slab.c). */
typedef struct {
  size_t chunk0, chunk1, strip0, strip1;
} unit_share;

typedef struct {
  const fft_grid *g;
  const nle_matd *src, *tgt;
  const double *charges;   /* src rows x nq, or NULL: unit charges */
  size_t nq;
  const int *chan_kernel;  /* per channel: which kernel transform */
  const int *chan_charge;  /* per channel: charge column, -1 = unit */
  size_t nch;
  float *const *kernel_hat; /* transformed kernels, compact (kernel_row) */
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
  const nle__grid_kernel *kernels; /* those of kernel_hat (a moment kernel is
                                      odd: its transform imaginary) */
  int divided;      /* d = 2: the split passes' units divided among the
                       context's ranks (fft_slab.c) */
  unit_share share; /* the units this process does */
  nle__fft_ws *buffers; /* divided among ranks: where the exchanges' buffers are kept */
} conv_job;

/* Index of grid node (i0, i1, i2) in an in-place r2c array, whose last
 * dimension is padded to 2 (pad/2 + 1) doubles. */
static inline size_t real_index(const fft_grid *g, const size_t *i) {
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


/* fft_plan.c */
/* NLE_OK with *o the options resolved for d dimensions (opts NULL: the
 * defaults), or a recorded error naming the bad option. */
nle_status nle__fft_resolve_opts(nle_ctx *ctx, const nle_fft_opts *opts, size_t d, nle_fft_opts *o);
/* Plans the grid over the bounding box of src and tgt. */
void nle__fft_plan_grid(const nle_matd *src, const nle_matd *tgt, const nle_fft_opts *o, fft_grid *g);
/* Makes the work space fit grid g with nch channel buffers: new plans and
 * buffers only when the shape changed. */
nle_status nle__fft_ws_fit(nle_ctx *ctx, nle__fft_ws *w, fft_grid *g, size_t nch, size_t nkernels);
/* The DCT/DST plans the stale kernels' compact transforms need, made
 * once per grid shape and moment (under the planner lock). */
nle_status nle__fft_plan_kernels(nle_ctx *ctx, nle__fft_ws *w, const fft_grid *g, const nle__grid_kernel *kernels,
                                 const size_t *stale, size_t nstale);
/* A grid buffer of `floats` floats, freed by free(). */
float *nle__fft_grid_alloc(size_t floats);
/* *buf with room for count doubles (grown, not kept in step with shrinking
 * calls), or NULL after recording the failure. */
double *nle__fft_ws_doubles(nle_ctx *ctx, double **buf, size_t *cap, size_t count, const char *what);

/* fft_interp.c: spreads channel c's charges over buf, untransformed. */
void nle__fft_spread_for_split(const conv_job *j, size_t c, float *buf);
/* A kernel's transform on the padded grid, kept compact. The circulant
 * kernel column is even in every dimension (odd in a moment kernel's, x_t
 * K), so its transform is real (imaginary) and even (odd) along each
 * dimension: entry k and entry pad - k hold the same value (negated along
 * the odd dimension), and entries 0..nodes along each dimension say it all.
 * The compact array holds those, row-major, prod (nodes + 1) floats: the
 * real part, or the imaginary part with its sign flipped (the DST's sign).
 * The padded transform's rows (all dimensions but the last, the r2c
 * layout's nodes + 1 complex values) map to compact rows one to one in the
 * last dimension: this returns the compact row of padded row `row` and
 * the factor for its values (-1 past the middle of the odd dimension;
 * then -1 again for the imaginary part's sign for a moment kernel). */
static inline const float *nle__fft_kernel_row(const fft_grid *g, const float *kernel_hat, size_t row, int moment,
                                               float *factor) {
  size_t idx = 0, stride = 1, rem = row;
  float f = moment >= 0 ? -1.0f : 1.0f;
  if (g->d == 2) { /* the usual case, called per row of every column strip: no division */
    size_t n = g->nodes[0], k = row <= n ? row : g->pad[0] - row;
    *factor = moment == 0 && row > n ? -f : f;
    return kernel_hat + k * (g->nodes[1] + 1);
  }
  for (size_t t = g->d - 1; t-- > 0;) {
    size_t k = rem % g->pad[t], n = g->nodes[t];
    rem /= g->pad[t];
    idx += (k <= n ? k : g->pad[t] - k) * stride;
    stride *= n + 1;
    if ((int)t == moment && k > n) f = -f;
  }
  *factor = f;
  return kernel_hat + idx * (g->nodes[g->d - 1] + 1);
}

/* out = f k scale over len complex values (out may be f), k len values of
 * a compact kernel row, scale with its factor: k is the real part of the
 * kernel's transform, or (odd) its imaginary part. The product is two
 * multiplications a value, with no sum for GCC to fuse into vfmaddsub
 * under -ffp-contract=off (as it did with the full complex product in the
 * AVX2 and AVX-512 clones): the same bits at every width, so the clones
 * inline it. */
static inline void nle__fft_kernel_product(const fftwf_complex *f, const float *k, int odd, float scale,
                                           fftwf_complex *out, size_t len) {
  if (!odd) {
    for (size_t i = 0; i < len; i++) {
      float kr = k[i];
      out[i][0] = f[i][0] * kr * scale;
      out[i][1] = f[i][1] * kr * scale;
    }
  } else {
    for (size_t i = 0; i < len; i++) {
      float ki = k[i], re = -(f[i][1] * ki);
      out[i][0] = re * scale;
      out[i][1] = f[i][0] * ki * scale;
    }
  }
}

/* fft_plan.c, with the other plans: the chunked row plans and the
 * column-strip plans of a 2-D grid's split passes (called under the
 * planner lock). */
void nle__fft_plan_split(nle__fft_ws *w, const fft_grid *g);
/* fft_split2d.c */
/* Spread, row pass, column pass with the kernels, row pass back, for the
 * job's channels on a 2-D grid; with quad, also the unit charges' total
 * through the quad kernel by Parseval's identity. grid_work: the cost
 * estimate of one channel's transforms. */
nle_status nle__fft_convolve_split2d(nle_ctx *ctx, nle__fft_ws *w, conv_job *job, double grid_work, double *quad);
/* sum_w |Q^(w)|^2 K^(w) over the half spectrum of a real transform, for
 * `width` columns from c0 of its last dimension and its first `rows` rows,
 * f at column c0 of the first row and fld values a row, kernel_hat an even
 * kernel's compact transform (times 1 / G: q^T (K * q), by Parseval's
 * identity): the columns other than 0 and pad/2 stand for two. */
/* fft_slab.c: the split passes divided among ranks like a slab-decomposed
 * FFT. Each rank does a contiguous share of the row chunks and of the
 * column strips (u); after its forward row passes, nle__fft_slab_to_columns
 * brings it the lead grids' node rows of its strips' columns from the
 * other ranks; after its column passes, nle__fft_slab_to_rows brings it
 * every channel's columns of its chunks' rows; after its backward row
 * passes, nle__fft_slab_share_rows gives every rank every channel's real
 * node rows (for interpolating anywhere). Collective: every rank calls
 * them in this order, each with its own status s, agreed between the
 * ranks before anything is sent (an error anywhere: nothing sent, the
 * error on every rank). */
void nle__fft_slab_share(const nle__fft_ws *w, int ranks, int rank, unit_share *u);
nle_status nle__fft_slab_to_columns(nle_ctx *ctx, const conv_job *j, nle_status s);
nle_status nle__fft_slab_to_rows(nle_ctx *ctx, const conv_job *j, nle_status s);
nle_status nle__fft_slab_share_rows(nle_ctx *ctx, const conv_job *j, nle_status s);
/* *total = the sum of every rank's `count` partials (mine), in rank order
 * (the ranks' parts following one another, as their points or strips do):
 * the single process's sum of them in order. all: room for every rank's
 * (it may hold mine in place). */
nle_status nle__fft_slab_ordered(nle_ctx *ctx, const double *mine, size_t count, double *all, double *total,
                                 nle_status s);

double nle__fft_parseval_strip(const fft_grid *g, const fftwf_complex *f, size_t fld, const float *kernel_hat,
                               size_t rows, size_t c0, size_t width);

#endif
