/* fft_split2d.c — the 2-D convolutions of FFT interpolation, split and
 * pruned: each transform runs as passes over chunks of rows and strips of
 * columns in parallel, the row passes only over the half of the padded
 * grid that holds charges (forward) or wanted values (backward). */
#include "fft_internal.h"

#include "../core/comm.h"

double nle__fft_parseval_strip(const fft_grid *g, const fftwf_complex *f, size_t fld, const float *kernel_hat,
                               size_t rows, size_t c0, size_t width) {
  size_t last = g->pad[g->d - 1];
  double sum = 0.0;
  for (size_t r = 0; r < rows; r++) {
    float one;
    const float *k = nle__fft_kernel_row(g, kernel_hat, r, -1, &one) + c0;
    for (size_t col = 0; col < width; col++) {
      const float *fv = f[r * fld + col];
      double twice = c0 + col == 0 || 2 * (c0 + col) == last ? 1.0 : 2.0;
      sum += twice * ((double)fv[0] * fv[0] + (double)fv[1] * fv[1]) * k[col];
    }
  }
  return sum;
}

/* Lead channel c's charges are spread to, and row-transformed in, its own
 * grid, whether or not other channels share them: each strip of columns is
 * copied out before its results are copied back (split_columns_block). */

static int split_spread_block(void *job, size_t i, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  size_t c = (size_t)j->leads[i];
  nle__fft_spread_for_split(j, c, j->grid[c]);
  return 0;
}

/* The forward row pass of one lead's chunk of rows (rows past nodes0 hold
 * no charges: their transforms are the zeros already there). */
static int split_rows_forward_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const conv_job *j = job;
  const nle__fft_ws *w = j->ws;
  size_t chunks = j->share.chunk1 - j->share.chunk0, k = j->share.chunk0 + b % chunks;
  size_t c = (size_t)j->leads[b / chunks], last = 2 * (j->g->pad[1] / 2 + 1);
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
NLE_HOT static int split_columns_block(void *job, size_t b, void *scratch) {
  conv_job *j = job;
  size_t k = j->share.strip0 + b;
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
    j->quad_part[k] = nle__fft_parseval_strip(g, lead_at[j->quad_lead], STRIP, j->kernel_hat[j->quad_kernel], rows,
                                               c0, width);
  float scale = 1.0f / ((float)g->pad[0] * (float)g->pad[1]);
  for (size_t c = 0; c < j->nch; c++) {
    const fftwf_complex *f = lead_at[j->lead_of[c]];
    const float *kh = j->kernel_hat[j->chan_kernel[c]];
    int moment = j->kernels[j->chan_kernel[c]].moment;
    for (size_t r = 0; r < rows; r++) {
      float factor;
      const float *k_row = nle__fft_kernel_row(g, kh, r, moment, &factor) + c0;
      nle__fft_kernel_product(f + r * STRIP, k_row, moment >= 0, scale * factor, out + r * STRIP, width);
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
  size_t chunks = j->share.chunk1 - j->share.chunk0, k = j->share.chunk0 + b % chunks, c = b / chunks;
  size_t last = 2 * (j->g->pad[1] / 2 + 1);
  if (w->row_lo[k] == w->row_lo[k + 1]) return 0;
  float *r = j->grid[c] + w->row_lo[k] * last;
  fftwf_execute_dft_c2r(w->row_inv[k], (fftwf_complex *)r, r);
  return 0;
}
/* Alone, every unit; divided among ranks (job->divided), this rank's
 * share of the row chunks and column strips, with the exchanges between
 * the passes (fft_slab.c). Each unit's arithmetic is the same either way,
 * and the strips' quad partials are added in strip order: the grids and
 * the quad are the single process's bits. The spreading stays whole on
 * every rank: the float sums of a node in point order, and cheap (one pass
 * over the points). */
nle_status nle__fft_convolve_split2d(nle_ctx *ctx, nle__fft_ws *w, conv_job *job, double grid_work, double *quad) {
  const fft_grid *g = job->g;
  size_t nch = job->nch;
  double pass = grid_work / 2.0 / SPLIT;
  job->ws = w;
  job->share = (unit_share){0, SPLIT, 0, w->strips};
  if (job->divided) nle__fft_slab_share(w, nle__ranks(ctx), nle__rank(ctx), &job->share);
  size_t chunks = job->share.chunk1 - job->share.chunk0, strips = job->share.strip1 - job->share.strip0;
  nle_status s = nle__for_blocks(ctx, "FFT interpolation", job->nleads,
                                 nle__threads_for(ctx, (double)job->src->rows * 50.0 * (double)job->nleads), 0,
                                 split_spread_block, job);
  if (!s) s = nle__for_blocks(ctx, "FFT interpolation", job->nleads * chunks,
                              nle__threads_for(ctx, pass * (double)(job->nleads * chunks)), 0,
                              split_rows_forward_block, job);
  job->quad_part = quad ? nle__fft_ws_doubles(ctx, &w->strip_sums, &w->strip_cap, w->strips, "FFT-interpolation sums")
                        : NULL;
  if (quad && !job->quad_part) s = NLE_ERR_NOMEM;
  if (job->divided) s = nle__fft_slab_to_columns(ctx, job, s);
  size_t strip_bytes = (job->nleads + 1) * g->pad[0] * STRIP * sizeof(fftwf_complex);
  if (!s) s = nle__for_blocks(ctx, "FFT interpolation", strips,
                              nle__threads_for(ctx, pass * SPLIT * (double)strips / (double)w->strips *
                                                        (double)(job->nleads + nch)),
                              strip_bytes, split_columns_block, job);
  if (job->divided) s = nle__fft_slab_to_rows(ctx, job, s);
  if (!s) s = nle__for_blocks(ctx, "FFT interpolation", nch * chunks,
                              nle__threads_for(ctx, pass * (double)(nch * chunks)), 0, split_rows_backward_block, job);
  if (job->divided) s = nle__fft_slab_share_rows(ctx, job, s);
  if (quad) {
    double sum = 0.0;
    if (job->divided) /* every rank's strips, in strip order */
      s = nle__fft_slab_ordered(ctx, s ? NULL : job->quad_part + job->share.strip0, strips, job->quad_part, &sum, s);
    else
      for (size_t k = 0; !s && k < w->strips; k++) sum += job->quad_part[k];
    if (!s) *quad = sum / ((double)g->pad[0] * (double)g->pad[1]);
  }
  return s;
}
