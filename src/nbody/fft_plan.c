/* fft_plan.c — the grid of FFT interpolation and the work space that
 * keeps it between calls: the options resolved, the boxes and nodes over
 * the points' bounding box, the transform sizes FFTW runs fast, the FFTW
 * plans (made under one lock: the planner is not thread-safe) and the grid
 * buffers. */
#include "fft_internal.h"

#include <pthread.h>
#include <stdlib.h>

static int default_max_nodes(size_t d) { return d == 1 ? 1 << 16 : d == 2 ? 1024 : 128; }

void nle_fft_opts_init(nle_fft_opts *o) {
  o->order = 3;
  o->box_width = 0.85;
  o->min_boxes = 8;
  o->max_nodes = NLE_AUTO;
  o->bh_ratio = 0.0;
}

/* *o = opts (NULL: the defaults) with max_nodes resolved for d
 * dimensions; 0 when an option is out of range. */
static int resolve(const nle_fft_opts *opts, size_t d, nle_fft_opts *o) {
  if (opts) *o = *opts;
  else nle_fft_opts_init(o);
  if (o->max_nodes == NLE_AUTO) o->max_nodes = default_max_nodes(d);
  return o->order >= 1 && o->order <= MAX_ORDER && o->box_width > 0 && isfinite(o->box_width) &&
         o->min_boxes >= 1 && o->max_nodes >= o->order;
}

nle_status nle__fft_resolve_opts(nle_ctx *ctx, const nle_fft_opts *opts, size_t d, nle_fft_opts *o) {
  if (resolve(opts, d, o)) return NLE_OK;
  return nle__fail(ctx, NLE_ERR_ARG,
                   "FFT interpolation: {@fft-order=%d} must be 1 to %d, {@fft-box=%g} a finite number > 0, min "
                   "boxes %d >= 1, max nodes %d >= the order, or auto",
                   o->order, MAX_ORDER, o->box_width, o->min_boxes, o->max_nodes);
}

/* A grid buffer of `floats` floats. Large grids are aligned to 2 MiB and
 * asked for transparent huge pages: the column passes step a row (tens of
 * kilobytes) at a time, one 4 KiB page per element, and the TLB misses made
 * grids of millions of nodes cost far more per node than small ones. Freed
 * by free(). */
float *nle__fft_grid_alloc(size_t floats) { return nle__malloc_huge(floats * sizeof(float)); }

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
    for (size_t k = 0; k <= MAX_DIM; k++)
      if (w->khat_plan[k]) fftwf_destroy_plan(w->khat_plan[k]);
  }
  pthread_mutex_unlock(&planner_lock);
  w->forward = w->backward = NULL;
  memset(w->row_fwd, 0, sizeof w->row_fwd);
  memset(w->row_inv, 0, sizeof w->row_inv);
  memset(w->col_fwd, 0, sizeof w->col_fwd);
  memset(w->col_inv, 0, sizeof w->col_inv);
  memset(w->khat_plan, 0, sizeof w->khat_plan);
  for (size_t k = 0; k < MAX_KERNELS; k++) w->khat_h[k] = 0.0; /* the kernels belong to the old shape */
}

static void ws_release_grids(nle__fft_ws *w) {
  for (size_t c = 0; c < MAX_CHANNELS; c++) free(w->bufs[c]), free(w->charge_hat[c]);
  for (size_t k = 0; k < MAX_KERNELS; k++) free(w->khat[k]);
  memset(w->bufs, 0, sizeof w->bufs);
  memset(w->charge_hat, 0, sizeof w->charge_hat);
  memset(w->khat, 0, sizeof w->khat);
  w->grid_cap = w->khat_cap = 0;
}

static void ws_release(nle__fft_ws *w) {
  ws_release_plans(w);
  ws_release_grids(w);
  free(w->first);
  free(w->weights);
  free(w->strip_sums);
  free(w->scratch);
  free(w->slab_send);
  free(w->slab_recv);
  free(w->slab_rows);
  memset(w, 0, sizeof *w);
}

double *nle__fft_ws_doubles(nle_ctx *ctx, double **buf, size_t *cap, size_t count, const char *what) {
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

/* Transform lengths FFTW runs fast here: a power of 2 times a small odd
 * factor (a 1,458 = 2 3^6 column pass took 1.5 times as long as a 1,440 =
 * 2^5 45 one on this machine, and factors of 7 were as slow). */
static int smooth(size_t n) {
  while (n % 2 == 0) n /= 2;
  return n == 1 || n == 3 || n == 5 || n == 9 || n == 15 || n == 25 || n == 45;
}

void nle__fft_plan_grid(const nle_matd *src, const nle_matd *tgt, const nle_fft_opts *o, fft_grid *g) {
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
  g->kernel_len = 1;
  for (size_t t = 0; t < d; t++) g->kernel_len *= g->nodes[t] + 1;
  g->cplx_len = g->real_len / 2;
}

double nle__fft_grid_nodes(const nle_matd *X, const nle_fft_opts *opts) {
  nle_fft_opts o;
  size_t d = X->cols;
  if (!resolve(opts, d, &o)) return 1.0; /* the convolution will name the bad option */
  double nodes = 1.0;
  for (size_t t = 0; t < d; t++) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < X->rows; i++) {
      double v = X->data[i * d + t];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    double along = (hi - lo) / o.box_width * (double)o.order;
    if (along > (double)o.max_nodes) return 0.0;
    nodes *= fmax(along, (double)o.order);
  }
  return nodes;
}

int nle__fft_grid_fits(const nle_matd *X, const nle_fft_opts *opts) { return nle__fft_grid_nodes(X, opts) > 0.0; }
/* The DCT/DST plan of a kernel of this moment over its compact array buf
 * (NULL where a moment dimension has no interior node); called under the
 * planner lock, before the kernels are transformed in parallel on arrays
 * of buf's alignment (FFTW_ESTIMATE leaves buf alone). */
static fftwf_plan kernel_plan(const fft_grid *g, int moment, float *buf) {
  fftwf_iodim dims[MAX_DIM];
  fftwf_r2r_kind kinds[MAX_DIM];
  size_t stride = 1, offset = 0;
  for (size_t t = g->d; t-- > 0;) {
    int odd = (int)t == moment;
    if (odd && g->nodes[t] < 2) return NULL;
    dims[t].n = (int)(odd ? g->nodes[t] - 1 : g->nodes[t] + 1);
    dims[t].is = dims[t].os = (int)stride;
    kinds[t] = odd ? FFTW_RODFT00 : FFTW_REDFT00;
    if (odd) offset = stride;
    stride *= g->nodes[t] + 1;
  }
  return fftwf_plan_guru_r2r((int)g->d, dims, 0, NULL, buf + offset, buf + offset, kinds, FFTW_ESTIMATE);
}

/* Fresh grid buffers touched first on all threads, a chunk each: the
 * kernel clears each new page on the thread that faults it, and a grid of
 * a few hundred megabytes (an out-of-sample field) took 0.05-0.7 s to fault
 * on one (this VM maps fresh memory at 0.4-6 GB/s). */
enum { TOUCH_CHUNK = 2 << 20, TOUCH_MIN = 16 << 20 };
typedef struct {
  float *buf[MAX_CHANNELS + MAX_KERNELS];
  size_t bytes[MAX_CHANNELS + MAX_KERNELS], chunks[MAX_CHANNELS + MAX_KERNELS + 1], count;
} touch_job;

static int touch_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const touch_job *j = job;
  size_t i = 0;
  while (b >= j->chunks[i + 1]) i++;
  size_t from = (b - j->chunks[i]) * TOUCH_CHUNK, len = j->bytes[i] - from < TOUCH_CHUNK ? j->bytes[i] - from : TOUCH_CHUNK;
  memset((char *)j->buf[i] + from, 0, len);
  return 0;
}

static void touch_add(touch_job *j, float *buf, size_t bytes) {
  j->buf[j->count] = buf;
  j->bytes[j->count++] = bytes;
}

static void touch_fresh(nle_ctx *ctx, touch_job *j) {
  double total = 0.0;
  for (size_t i = 0; i < j->count; i++) {
    j->chunks[i + 1] = j->chunks[i] + (j->bytes[i] + TOUCH_CHUNK - 1) / TOUCH_CHUNK;
    total += (double)j->bytes[i];
  }
  if (total >= TOUCH_MIN) /* a failure (a cancellation) leaves the pages to be faulted later */
    (void)nle__for_blocks(ctx, "FFT interpolation", j->chunks[j->count], nle__threads_for(ctx, total), 0, touch_block, j);
}

nle_status nle__fft_plan_kernels(nle_ctx *ctx, nle__fft_ws *w, const fft_grid *g, const nle__grid_kernel *kernels,
                                 const size_t *stale, size_t nstale) {
  int ok = 1;
  pthread_mutex_lock(&planner_lock);
  for (size_t i = 0; i < nstale; i++) {
    int moment = kernels[stale[i]].moment;
    int plain = moment < 0 || g->nodes[moment] >= 2; /* else no plan: the kernel is 0 on the grid */
    if (plain && !w->khat_plan[moment + 1] && !(w->khat_plan[moment + 1] = kernel_plan(g, moment, w->khat[stale[i]])))
      ok = 0;
  }
  pthread_mutex_unlock(&planner_lock);
  return ok ? NLE_OK : nle__fail(ctx, NLE_ERR_NUMERIC, "FFT interpolation: FFTW planning failed");
}

/* Bounds of `parts` chunks of n items, each starting at an even item (so
 * that every chunk of a buffer has the alignment of the first). */
static void split_even(size_t n, size_t parts, size_t *lo) {
  for (size_t k = 0; k <= parts; k++) {
    size_t b = n * k / parts;
    lo[k] = k == parts ? n : b & ~(size_t)1;
  }
}

void nle__fft_plan_split(nle__fft_ws *w, const fft_grid *g) {
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
nle_status nle__fft_ws_fit(nle_ctx *ctx, nle__fft_ws *w, fft_grid *g, size_t nch, size_t nkernels) {
  int same = w->forward && w->d == g->d;
  for (size_t t = 0; same && t < g->d; t++) same = w->pad[t] == g->pad[t];
  touch_job touch = {{0}, {0}, {0}, 0}; /* the buffers allocated now */
  /* the rows the passes use: the nodes' rows in 2-D, else all */
  size_t used = (g->d == 2 ? g->real_len / g->pad[0] * g->nodes[0] : g->real_len) * sizeof(float);
  if (!same) {
    /* While a map expands the shape changes every few iterations: new plans,
     * but the grids are kept while they are large enough (grown with room). */
    ws_release_plans(w);
    if (g->real_len > w->grid_cap || g->kernel_len > w->khat_cap) {
      ws_release_grids(w);
      size_t cap = g->real_len + g->real_len / 4, kcap = g->kernel_len + g->kernel_len / 4;
      nle_status s = nle__check_memory(ctx, ((double)nch * (double)cap + (double)nkernels * (double)kcap) * sizeof(float),
                                       "the FFT-interpolation grids");
      if (s) return s;
      if (!(w->bufs[0] = nle__fft_grid_alloc(cap)))
        return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grid");
      touch_add(&touch, w->bufs[0], used);
      w->grid_cap = cap;
      w->khat_cap = kcap;
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
    if (g->d == 2) nle__fft_plan_split(w, g);
    pthread_mutex_unlock(&planner_lock);
    int ok = w->forward && w->backward;
    for (size_t k = 0; g->d == 2 && k < SPLIT; k++)
      ok &= w->row_lo[k] == w->row_lo[k + 1] || (w->row_fwd[k] && w->row_inv[k]);
    for (size_t k = 0; g->d == 2 && k < 2; k++) ok &= w->col_fwd[k] && w->col_inv[k];
    if (!ok) return nle__fail(ctx, NLE_ERR_NUMERIC, "FFT interpolation: FFTW planning failed");
  }
  for (size_t c = 0; c < nch; c++) {
    if (w->bufs[c]) continue;
    if (!(w->bufs[c] = nle__fft_grid_alloc(w->grid_cap)))
      return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
    touch_add(&touch, w->bufs[c], used);
  }
  for (size_t k = 0; k < nkernels; k++) {
    if (w->khat[k]) continue;
    if (!(w->khat[k] = nle__fft_grid_alloc(w->khat_cap)))
      return nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids");
    touch_add(&touch, w->khat[k], g->kernel_len * sizeof(float));
  }
  touch_fresh(ctx, &touch);
  g->forward = w->forward;
  g->backward = w->backward;
  return NLE_OK;
}
