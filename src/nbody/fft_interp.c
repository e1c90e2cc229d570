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
#include "fft_internal.h"

#include "../core/comm.h"

#include <stdlib.h>

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

/* The kernel's compact transform (nle__fft_kernel_row): its samples at
 * the nonnegative node offsets 0..nodes along each dimension (the node at
 * half the padded length never pairs two grid nodes and holds 0, as does
 * the offset 0 of a moment kernel's dimension), transformed by the DCT-I
 * (FFTW's REDFT00) along each even dimension and the DST-I (RODFT00, of the
 * samples 1..nodes - 1) along the odd one: the DFT of the circulant column
 * of twice the length, for a quarter of the 2-D grid sampled, transformed
 * and kept (a 4,096^2 kernel: 0.25 s and 67 MB as a full r2c transform,
 * 0.055 s and 17 MB so). */
static void kernel_transform(const fft_grid *g, nle__grid_kernel kernel, fftwf_plan plan, float *buf) {
  size_t d = g->d, i[MAX_DIM] = {0}, ext[MAX_DIM], stride = 1;
  for (size_t t = 0; t < d; t++) ext[t] = g->nodes[t] + 1;
  for (size_t q = 0; q < g->kernel_len; q++) {
    double d2 = 0.0, along = 0.0;
    int unused = 0;
    for (size_t t = 0; t < d; t++) {
      double off = (double)i[t] * g->h;
      unused |= i[t] == g->nodes[t];
      d2 += off * off;
      if ((int)t == kernel.moment) along = off;
    }
    double k = unused ? 0.0 : nle__kernel_value(kernel.kernel, d2);
    buf[q] = (float)(kernel.moment >= 0 ? k * along : k);
    for (size_t t = d; t-- > 0;) { /* the last dimension fastest */
      if (++i[t] < ext[t]) break;
      i[t] = 0;
    }
  }
  if (!plan) return; /* a moment dimension of one node: the kernel is 0 on the grid */
  for (size_t t = d; t-- > 0;) {
    if ((int)t == kernel.moment) break;
    stride *= ext[t];
  }
  float *first = kernel.moment >= 0 ? buf + stride : buf; /* the DST skips offset 0 */
  fftwf_execute_r2r(plan, first, first);
}

/* The kernels whose transforms are stale, each on a thread of its own
 * (executing one plan on other arrays at once is thread-safe in FFTW). */
typedef struct {
  const fft_grid *g;
  const nle__grid_kernel *kernels;
  float *const *khat;
  const fftwf_plan *plans; /* per moment + 1 */
  size_t stale[MAX_KERNELS], nstale;
} kernel_job;

static int kernel_block(void *job, size_t i, void *scratch) {
  (void)scratch;
  const kernel_job *j = job;
  size_t k = j->stale[i];
  kernel_transform(j->g, j->kernels[k], j->plans[j->kernels[k].moment + 1], j->khat[k]);
  return 0;
}

static int stencil_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  size_t d = j->g->d, n1 = (b + 1) * POINT_BLOCK < j->src->rows ? (b + 1) * POINT_BLOCK : j->src->rows;
  for (size_t n = b * POINT_BLOCK; n < n1; n++)
    point_stencil(j->g, j->src->data + n * d, j->first + n * d, j->weights + n * d * j->g->p);
  return 0;
}

/* Spreads channel c's charges over buf and, unless split, transforms it.
 * Split, only the rows of nodes are cleared: the split passes read and
 * write no others (half the grid's pages never touched). */
NLE_HOT static void spread_charges(const conv_job *j, size_t c, float *buf, int split) {
  const fft_grid *g = j->g;
  memset(buf, 0, (split ? g->real_len / g->pad[0] * g->nodes[0] : g->real_len) * sizeof(float));
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
  float scale = 1.0f;
  for (size_t t = 0; t < g->d; t++) scale /= (float)g->pad[t];
  int k = j->chan_kernel[c], moment = j->kernels[k].moment;
  size_t half = g->pad[g->d - 1] / 2 + 1, rows = g->cplx_len / half;
  for (size_t r = 0; r < rows; r++) {
    float factor;
    const float *k_row = nle__fft_kernel_row(g, j->kernel_hat[k], r, moment, &factor);
    nle__fft_kernel_product((const fftwf_complex *)charges_hat + r * half, k_row, moment >= 0, scale * factor,
                            (fftwf_complex *)out + r * half, half);
  }
  fftwf_execute_dft_c2r(g->backward, (fftwf_complex *)out, out);
}

/* The split 2-D passes' spreading (fft_split2d.c): a plain function, since
 * a target_clones one outside this file would be exported (its resolver
 * ignores -fvisibility=hidden). */
void nle__fft_spread_for_split(const conv_job *j, size_t c, float *buf) { spread_charges(j, c, buf, 1); }

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

/* self_subtract for the points from..n1 of block b on a 2-D grid, a lane
 * per point (NLE__LANES points at once): each lane's arithmetic is the
 * scalar one's, in its order, so the bits are self_subtract's (as one
 * point at a time it was a fifth of the gather: t-SNE of 70,000 points).
 * Applied to the gathered phi, and to the block's quad total in point
 * order. */
typedef double self_lanes __attribute__((vector_size(NLE__LANES * sizeof(double))));
NLE_HOT static void self_subtract_2d(const conv_job *j, size_t from, size_t n1, size_t b) {
  const fft_grid *g = j->g;
  size_t p = g->p, span = 2 * p - 1, total = self_offsets(g), rows = j->nch + (j->self_quad != NULL);
  for (size_t n0 = from; n0 < n1; n0 += NLE__LANES) {
    size_t lanes = n1 - n0 < NLE__LANES ? n1 - n0 : NLE__LANES;
    self_lanes corr[2][2 * MAX_ORDER - 1], wv[2][MAX_ORDER];
    for (size_t t = 0; t < 2; t++)
      for (size_t a = 0; a < p; a++)
        for (size_t l = 0; l < NLE__LANES; l++) /* a short group repeats its first point */
          wv[t][a][l] = j->weights[(n0 + (l < lanes ? l : 0)) * 2 * p + t * p + a];
    for (size_t t = 0; t < 2; t++) {
      for (size_t k = 0; k < span; k++) corr[t][k] = (self_lanes){0};
      for (size_t a = 0; a < p; a++)
        for (size_t bb = 0; bb < p; bb++) corr[t][a + p - 1 - bb] += wv[t][a] * wv[t][bb];
    }
    for (size_t c = j->self_from; c < rows; c++) {
      const double *table = j->self + c * total;
      self_lanes sum = {0};
      for (size_t k0 = 0; k0 < span; k0++) {
        self_lanes inner = {0};
        for (size_t k1 = 0; k1 < span; k1++) inner += corr[1][k1] * table[k0 * span + k1];
        sum += corr[0][k0] * inner;
      }
      for (size_t l = 0; l < lanes; l++) {
        if (c < j->nch) j->phi[(n0 + l) * j->nch + c] -= sum[l];
        else j->self_quad[b] -= 0.0 - sum[l]; /* as self_subtract's acc[nch], from 0 */
      }
    }
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
    if (j->self && d != 2) {
      self_subtract(j, w, j->self_from, j->nch + (j->self_quad != NULL), acc);
      if (j->self_quad) j->self_quad[b] -= acc[j->nch];
    }
    memcpy(j->phi + n * j->nch, acc, j->nch * sizeof(double));
  }
  if (j->self && d == 2) self_subtract_2d(j, b * POINT_BLOCK, n1, b);
  return 0;
}

/* Spreads the sources' charges over a grid spanning src and `extent` (the
 * targets, or the corners of the region they will lie in) and convolves
 * every channel: the grid values are left in w->bufs. Channels with the
 * same charges share one spreading and one forward transform. With quad,
 * also *quad = sum_n sum_m q_n K(x_n - x_m) q_m for the unit charges and
 * kernel quad_kernel, the sum of the unit-charge channel of that kernel over
 * its own sources, by Parseval's identity: no backward transform. With
 * `divided`, a 2-D grid's transforms are divided among ctx's ranks
 * (fft_slab.c; collective: every rank calls it alike). */
static nle_status convolve_sources(nle_ctx *ctx, nle__fft_ws *w, const nle_matd *src, const double *charges,
                                   size_t nq, const nle_matd *extent, const nle__grid_kernel *kernels,
                                   size_t nkernels, const int *chan_kernel, const int *chan_charge, size_t nch,
                                   const nle_fft_opts *opts, int quad_kernel, double *quad, int divided,
                                   fft_grid *g) {
  nle_fft_opts o;
  nle_status s = nle__fft_resolve_opts(ctx, opts, src->cols, &o);
  if (s) return s;
  int bad = nch > MAX_CHANNELS || nkernels > MAX_KERNELS || extent->cols != src->cols ||
            (quad && (quad_kernel < 0 || (size_t)quad_kernel >= nkernels));
  for (size_t k = 0; k < nkernels; k++) bad |= kernels[k].moment >= (int)src->cols;
  for (size_t c = 0; c < nch; c++)
    bad |= chan_kernel[c] < 0 || (size_t)chan_kernel[c] >= nkernels || chan_charge[c] < -1 || chan_charge[c] >= (int)nq;
  if (bad) return nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: bad channel set-up");
  conv_job job = {g, src, NULL, charges, nq, chan_kernel, chan_charge, nch, w->khat, w->bufs, w->charge_hat,
                  {0}, {0}, {0}, {0}, 0, 0, NULL, -1, -1, NULL, NULL, NULL, NULL, 0, NULL, NULL, kernels, 0, {0, 0, 0, 0}, w};
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
  nle__fft_plan_grid(src, extent, &o, g);
  s = nle__fft_ws_fit(ctx, w, g, nch, nkernels);
  for (size_t c = 0; c < nch; c++) job.shared[c] = users[c] + (quad && (int)c == unit_lead) > 1;
  for (size_t c = 0; c < nch; c++)
    if (job.shared[job.lead_of[c]]) job.followers[job.nfollowers++] = (int)c;
  for (size_t c = 0; !s && c < nch; c++)
    if (g->d != 2 && job.shared[c] && !w->charge_hat[c] &&
        !(w->charge_hat[c] = nle__fft_grid_alloc(w->grid_cap)))
      s = nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
  kernel_job kj = {g, kernels, w->khat, w->khat_plan, {0}, 0};
  for (size_t k = 0; !s && k < nkernels; k++)
    if (w->khat_h[k] != g->h || w->khat_kernel[k].kernel != kernels[k].kernel ||
        w->khat_kernel[k].moment != kernels[k].moment)
      kj.stale[kj.nstale++] = k;
  if (!s) s = nle__fft_plan_kernels(ctx, w, g, kernels, kj.stale, kj.nstale);
  double grid_work = (double)g->real_len * log2((double)g->real_len + 2.0) + (double)src->rows * 50.0;
  double kernel_work = (double)g->kernel_len * (log2((double)g->kernel_len + 2.0) + 20.0);
  if (!s) s = nle__for_blocks(ctx, "FFT interpolation", kj.nstale, nle__threads_for(ctx, kernel_work * (double)kj.nstale),
                              0, kernel_block, &kj);
  for (size_t i = 0; !s && i < kj.nstale; i++) {
    w->khat_h[kj.stale[i]] = g->h;
    w->khat_kernel[kj.stale[i]] = kernels[kj.stale[i]];
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
  job.divided = divided && g->d == 2;
  if (job.divided) s = nle__comm_agree(ctx, s); /* before the passes' exchanges */
  if (!s && g->d == 2) {
    job.quad_lead = quad ? unit_lead : -1;
    job.quad_kernel = quad_kernel;
    s = nle__fft_convolve_split2d(ctx, w, &job, grid_work, quad);
  } else if (!s) {
    s = nle__for_blocks(ctx, "FFT interpolation", job.nleads, nle__threads_for(ctx, grid_work * (double)job.nleads), 0,
                        lead_block, &job);
    if (!s && quad) {
      double total = 1.0;
      for (size_t t = 0; t < g->d; t++) total *= (double)g->pad[t];
      size_t half = g->pad[g->d - 1] / 2 + 1;
      *quad = nle__fft_parseval_strip(g, (const fftwf_complex *)w->charge_hat[unit_lead], half, w->khat[quad_kernel],
                                      g->cplx_len / half, 0, half) / total;
    }
    if (!s) s = nle__for_blocks(ctx, "FFT interpolation", job.nfollowers,
                                nle__threads_for(ctx, grid_work * (double)job.nfollowers), 0, follower_block, &job);
  }
  if (s)
    for (size_t k = 0; k < MAX_KERNELS; k++) w->khat_h[k] = 0.0; /* a failed call may have left anything */
  return s;
}

/* phi = the convolved grids of w interpolated at tgt; src is the set whose
 * stencils w holds from its row `from` on (reused when tgt is src: then
 * the sources' rows from..), or NULL. */
static nle_status gather(nle_ctx *ctx, nle__fft_ws *w, const fft_grid *g, const nle_matd *src, const nle_matd *tgt,
                         size_t from, size_t nch, const double *self, size_t self_from, double *self_quad,
                         double *phi) {
  conv_job job = {g, src, tgt, NULL, 0, NULL, NULL, nch, w->khat, w->bufs, w->charge_hat,
                  {0}, {0}, {0}, {0}, 0, 0, NULL, -1, -1, NULL, phi, self, self_quad, self_from,
                  w->first ? w->first + from * g->d : NULL, w->weights ? w->weights + from * g->d * g->p : NULL,
                  NULL, 0, {0, 0, 0, 0}, NULL};
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
                                  opts, -1, NULL, 0, &g);
  if (!s) s = gather(ctx, w, &g, src, tgt, 0, nch, NULL, 0, NULL, phi);
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
                                  nch, opts, -1, NULL, 0, &f->g);
  if (s) {
    nle__fft_field_free(&f);
    return s;
  }
  *out = f;
  return NLE_OK;
}

nle_status nle__fft_field_eval(nle_ctx *ctx, const nle__fft_field *f, const nle_matd *tgt, double *phi) {
  if (tgt->cols != f->g.d) return nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: targets of another dimension");
  return gather(ctx, f->ws, &f->g, NULL, tgt, 0, f->nch, NULL, 0, NULL, phi);
}

void nle__fft_field_eval_serial(const nle__fft_field *f, const nle_matd *tgt, double *phi) {
  const nle__fft_ws *w = f->ws;
  conv_job job = {&f->g, NULL, tgt, NULL, 0, NULL, NULL, f->nch, w->khat, w->bufs, w->charge_hat,
                  {0}, {0}, {0}, {0}, 0, 0, NULL, -1, -1, NULL, phi, NULL, NULL, 0, NULL, NULL, NULL, 0, {0, 0, 0, 0}, NULL};
  for (size_t b = 0; b * POINT_BLOCK < tgt->rows; b++) gather_block(&job, b, NULL);
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

/* nle__fft_forces for the targets [row0, row1) of X (F's rows there, as
 * indexed in X), the sources all of X; with `divided`, the 2-D grid's
 * transforms divided among ctx's ranks and *z (S NULL) the total over all
 * of X from every rank's point blocks (fft_slab.c). */
static nle_status forces_rows(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel energy_kernel,
                              nle_kernel force_kernel, const nle_fft_opts *opts, size_t row0, size_t row1, int divided,
                              double *S, double *z, double *F) {
  nle_status s = nle__kernel_sums_check(ctx, X, energy_kernel, "FFT interpolation");
  if (s) return s;
  size_t n = row1 - row0, d = X->cols, nch = d + (S != NULL);
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
                               S ? NULL : &quad, divided, &g);
  /* The work space's scratch: the gathered sums (n x nch), each channel's
   * kernel at the offsets within a stencil for the pair m = n as the grid
   * carries it (row nch: K, for the quad), the blocks' own-pair totals
   * (divided: every rank's after this rank's). The blocks are the single
   * process's: row0 starts one (ranks hold whole 4,096-row blocks). */
  size_t offsets = s ? 0 : self_offsets(&g), span = 2 * g.p - 1, blocks = (n + POINT_BLOCK - 1) / POINT_BLOCK;
  size_t every = divided ? (X->rows + POINT_BLOCK - 1) / POINT_BLOCK : 0;
  double *phi = s ? NULL
                  : nle__fft_ws_doubles(ctx, &w->scratch, &w->scratch_cap,
                                        n * nch + (nch + 1) * offsets + blocks + every, "FFT-interpolation sums");
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
  nle_matd targets = {n, d, X->data + row0 * d};
  if (!s) s = gather(ctx, w, &g, &targets, &targets, row0, nch, self, d, S ? NULL : own, phi);
  double total = 0.0;
  for (size_t i = 0; !s && i < n; i++) {
    for (size_t t = 0; t < d; t++) F[(row0 + i) * d + t] = phi[i * nch + t];
    if (S) total += S[row0 + i] = phi[i * nch + d];
  }
  if (!s && z && S) *z = total;
  if (divided) { /* every rank's blocks, in block order */
    s = nle__fft_slab_ordered(ctx, s ? NULL : own, blocks, s ? NULL : own + blocks, &total, s);
  } else {
    for (size_t b = 0; !s && b < blocks; b++) total += own[b];
  }
  if (!s && z && !S) *z = quad - total;
  nle__fft_ws_free(&own_ws);
  return s;
}

nle_status nle__fft_forces(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel energy_kernel,
                          nle_kernel force_kernel, const nle_fft_opts *opts, double *S, double *z, double *F) {
  return forces_rows(ctx, ws, X, energy_kernel, force_kernel, opts, 0, X->rows, 0, S, z, F);
}

nle_status nle__fft_forces_rows(nle_ctx *ctx, nle__fft_ws *ws, const nle_matd *X, nle_kernel energy_kernel,
                                nle_kernel force_kernel, const nle_fft_opts *opts, size_t row0, size_t row1, double *z,
                                double *F) {
  nle_status s = NLE_OK;
  if (!ws) /* a rank failing to make its own would leave the others waiting */
    s = nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: the divided forces need a work space");
  else if (row0 > row1 || row1 > X->rows || (row0 < row1 && (row0 % POINT_BLOCK || (row1 % POINT_BLOCK && row1 != X->rows))))
    s = nle__fail(ctx, NLE_ERR_ARG, "FFT interpolation: rows %zu to %zu are not whole blocks of the %zu points", row0,
                  row1, X->rows);
  s = nle__comm_agree(ctx, s);
  return s ? s : forces_rows(ctx, ws, X, energy_kernel, force_kernel, opts, row0, row1, 1, NULL, z, F);
}
