/* repulsion_fft.c — the FFT-interpolation engine (Linderman et al.'s grid
 * method, dissertation sec. 5.2) for the models: forces by their own vector
 * kernel, the EE/t-EE squared-distance W- by feature charges, and
 * Barnes-Hut for maps too wide or too sparse for the grid. */
#include "model_internal.h"

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Plans, grids and transformed kernels kept between evaluations, and one
 * batch of charges and sums of the squared-distance W-. */
typedef struct {
  nle__fft_ws *ws;
  double *channel_q, *channel_phi;
} fft_state;

static nle_status fft_attach(nle_ctx *ctx, nle_model *m) {
  fft_state *st = nle__calloc(ctx, 1, sizeof *st, "the FFT engine");
  if (!st || !(st->ws = nle__fft_ws_new())) {
    free(st);
    return NLE_ERR_NOMEM;
  }
  m->engine_state = st;
  return NLE_OK;
}

static void fft_detach(nle_model *m) {
  fft_state *st = m->engine_state;
  if (!st) return;
  nle__fft_ws_free(&st->ws);
  free(st->channel_q);
  free(st->channel_phi);
  free(st);
  m->engine_state = NULL;
}

enum { FFT_BATCH = 8, /* channels per FFT call (each holds a grid) */
       SQDIST_EXACT_MAX = 5000,
       EMBED_MAX_NODES_2D = 2048 };

/* EE and t-EE with w-_nm = |f_n - f_m|^2 by FFT kernel sums (issue 5 item
 * 4): with a_n = |f_n|^2 (f about its mean),
 *   sum_m w_nm K_nm = a_n S_n + S^a_n - 2 f_n . S^f_n,
 * each S a kernel sum with its own charges (1, a_m, f_m), and the forces
 * sum_m w_nm K'_nm (x_n - x_m) the same with the force kernel (-K' = K
 * Gaussian, K^2 Student-t) and the charges times 1 and x_m (eq. 5.8 per
 * charge). A channel is (charge, moment, kernel); they are summed in
 * batches of FFT_BATCH and folded into row_e and the forces as they come.
 * The pair m = n adds a_n + a_n - 2 |f_n|^2 = 0: nothing to take out. */
static nle_status sqdist_fft_repulsion(nle_ctx *ctx, nle_model *m, fft_state *st, const nle_matd *X,
                                       const nle_fft_opts *fo) {
  size_t N = X->rows, d = X->cols, nf = m->nf, ncharge = nf + 2;
  size_t per_charge = m->student ? d + 2 : d + 1, nch = ncharge * per_charge;
  if (!st->channel_q) {
    st->channel_q = nle__malloc(ctx, N * FFT_BATCH * sizeof(double), "FFT charges");
    st->channel_phi = nle__malloc(ctx, N * FFT_BATCH * sizeof(double), "FFT sums");
    if (!st->channel_q || !st->channel_phi) return NLE_ERR_NOMEM;
  }
  double *row_e = m->row_e, *force = m->force, *q = st->channel_q, *phi = st->channel_phi;
  memset(row_e, 0, N * sizeof(double));
  memset(force, 0, N * d * sizeof(double));
  nle__grid_kernel kernels[2] = {{m->student ? NLE_KERNEL_STUDENT : NLE_KERNEL_GAUSSIAN, -1},
                                 {NLE_KERNEL_STUDENT2, -1}};
  for (size_t c0 = 0; c0 < nch; c0 += FFT_BATCH) {
    size_t nb = nch - c0 < FFT_BATCH ? nch - c0 : FFT_BATCH;
    int chan_kernel[FFT_BATCH], chan_charge[FFT_BATCH], charge[FFT_BATCH], moment[FFT_BATCH], energy[FFT_BATCH],
        forcing[FFT_BATCH];
    for (size_t b = 0; b < nb; b++) {
      size_t c = c0 + b, r = c % per_charge;
      charge[b] = (int)(c / per_charge); /* 0: unit, 1: a, 2 + i: f_i */
      chan_charge[b] = (int)b;
      if (m->student) { /* r = 0: K for the energy; 1: K^2; 2 + t: K^2 with x_t */
        chan_kernel[b] = r > 0;
        energy[b] = r == 0;
        forcing[b] = r > 0;
        moment[b] = r >= 2 ? (int)r - 2 : -1;
      } else { /* r = 0: K for the energy and the forces; 1 + t: K with x_t */
        chan_kernel[b] = 0;
        energy[b] = r == 0;
        forcing[b] = 1;
        moment[b] = r >= 1 ? (int)r - 1 : -1;
      }
    }
    for (size_t n = 0; n < N; n++)
      for (size_t b = 0; b < nb; b++) {
        double c = charge[b] == 0 ? 1.0 : charge[b] == 1 ? m->feat_sq[n] : m->feat[n * nf + (size_t)charge[b] - 2];
        q[n * nb + b] = moment[b] < 0 ? c : c * X->data[n * d + (size_t)moment[b]];
      }
    nle_status s = nle__fft_convolve(ctx, st->ws, X, q, nb, X, kernels, m->student ? 2 : 1, chan_kernel,
                                     chan_charge, nb, fo, phi);
    if (s) return s;
    for (size_t n = 0; n < N; n++) {
      const double *xn = X->data + n * d;
      for (size_t b = 0; b < nb; b++) {
        /* the target's factor of this charge's term */
        double coef = charge[b] == 0 ? m->feat_sq[n] : charge[b] == 1 ? 1.0 : -2.0 * m->feat[n * nf + (size_t)charge[b] - 2];
        double v = coef * phi[n * nb + b];
        if (energy[b]) row_e[n] += v;
        if (forcing[b] && moment[b] >= 0) force[n * d + (size_t)moment[b]] += v;
        else if (forcing[b])
          for (size_t t = 0; t < d; t++) force[n * d + t] -= v * xn[t];
      }
    }
  }
  return NLE_OK;
}

static nle_status fft_forces(nle_ctx *ctx, nle_model *m, const nle_matd *X, double t) {
  size_t N = X->rows, d = X->cols;
  fft_state *st = m->engine_state;
  double *S1 = m->force;
  /* The schedule: boxes from 4 times the set width (t = 0) to it (t = 1). */
  nle_fft_opts fft = m->spec.fft;
  fft.box_width = pow(4.0 * fft.box_width, 1.0 - t) * pow(fft.box_width, t);
  const nle_fft_opts *fo = &fft;
  nle_status s;
  if (m->feat) {
    /* A map too wide for its grid (clusters of a disconnected W+ thrown far
     * apart, or a long trial step) is summed exactly up to SQDIST_EXACT_MAX
     * points: Barnes-Hut's centres of mass do not serve charges of both
     * signs. Above, the grid's boxes widen instead; that evaluation is then
     * coarse (the first trial steps from a small start, which the line
     * search rejects anyway, were 90% of a 20,000-point run's time when
     * summed exactly). */
    int fits = nle__fft_grid_fits(X, fo);
    if (!fits && N <= SQDIST_EXACT_MAX) return nle__exact_repulsion(ctx, m, X);
    /* and no finer than it need be: at the node cap its D' + 2 sets of
     * 2048^2 transforms cost seconds */
    nle_fft_opts wide = *fo;
    if (!fits) wide.max_nodes = 128;
    s = sqdist_fft_repulsion(ctx, m, st, X, &wide);
    if (!s) nle__remove_mean_force(S1, N, d);
    return s;
  }
  /* A few points thrown far (a long trial step) would stretch the grid past
   * its node cap and wreck its accuracy; Barnes-Hut adapts to them. With
   * bh_ratio, it also takes maps too sparse for the grid: per node the FFT
   * costs about what Barnes-Hut (theta 0.5) costs per point and log2 N
   * (t-SNE on 70,000 points: 21 ms for 360,000 nodes against 99 ms;
   * bench/engine_gradient), and a t-SNE map of 5,000 points run with large
   * rates spread to 770,000 nodes at box 0.85, 7 times slower than exact. */
  /* A 2-D map of a million points spans about 450-550 kernel lengths: past
   * the 1,024 nodes of the general default at t-SNE's boxes of 1.5, where
   * every later evaluation went to Barnes-Hut (t-SNE of 1,000,000 images:
   * 241 ms an evaluation against 124 ms on the grid, the run 331 s against
   * 265 s, whichever side of the cliff its few outlying points fell). The
   * grid is the cheaper up to bh_ratio's rule, so it may grow to 2,048. */
  if (fft.max_nodes == NLE_AUTO && d == 2) fft.max_nodes = EMBED_MAX_NODES_2D; /* fo points at fft */
  double nodes = nle__fft_grid_nodes(X, fo);
  if (nodes > 0.0 && !(fo->bh_ratio > 0.0 && nodes > fo->bh_ratio * (double)N * log2((double)N))) {
    /* The forces by their own vector kernel, the energy's sums in total
     * (per row only for SNE's normalisers). */
    int rows = m->spec.kind == NLE_MODEL_SNE;
    nle_kernel energy = m->student ? NLE_KERNEL_STUDENT : NLE_KERNEL_GAUSSIAN;
    nle_kernel forcing = m->student ? NLE_KERNEL_STUDENT2 : NLE_KERNEL_GAUSSIAN;
    if (m->distributed && !rows) {
      /* This rank's rows only, the 2-D grid's transforms divided among the
       * ranks, Z and the mean force totalled in the single process's order
       * (docs/mpi_tsne.md). SNE's per-row normalisers read every row: its
       * sums stay whole on every rank (below). */
      s = nle__fft_forces_rows(ctx, st->ws, X, energy, forcing, fo, m->row0, m->row1, &m->fast_z, S1);
      m->fast_z_only = 1;
      for (size_t i = m->row0 * d; i < m->row1 * d; i++) S1[i] = -S1[i];
      s = nle__comm_agree(ctx, s); /* before the mean's ring */
      return s ? s : nle__dist_remove_mean_force(ctx, m, S1, d);
    }
    s = nle__fft_forces(ctx, st->ws, X, energy, forcing, fo, rows ? m->row_e : NULL, &m->fast_z, S1);
    if (s) return s;
    m->fast_z_only = !rows;
    for (size_t i = 0; i < N * d; i++) S1[i] = -S1[i];
    nle__remove_mean_force(S1, N, d);
    return NLE_OK;
  }
  return nle__bh_forces(ctx, m, X, t);
}

/* ---- new points (oos_batch.c): the training map's grids convolved once
 * (the sources never move); an evaluation only reads them ---- */

/* Finer than training's default (force error 4e-4 against 2.5e-2 on a
 * 70,000-point t-SNE map): a map is made once, and the minimum of E' moves
 * with the error of the forces. Boxes of 0.5 kernel lengths, order 4; a
 * map whose span needs more than max_nodes nodes per side at that width
 * gets wider boxes, up to OOS_WIDEST_BOX (70,000-image t-SNE maps span
 * about 350 lengths: boxes of 0.7), where the forces stay within the
 * accuracy the batched line search needs; wider maps are summed exactly.
 * In 2-D the grid may grow to 2,048 nodes a side (about 250 MB for t-SNE's
 * three channel grids and three compact kernel transforms), so that a
 * 60,000-point t-SNE map (about 200 kernel lengths wide) fits at this box
 * width. */
#define OOS_WIDEST_BOX 2.0

static void oos_fft_opts(const nle_matd *region, nle_fft_opts *fo) {
  size_t d = region->cols;
  nle_fft_opts_init(fo);
  fo->order = 4;
  fo->box_width = 0.5;
  fo->max_nodes = d == 1 ? 65536 : d == 2 ? 2048 : 128;
  for (size_t c = 0; c < d; c++) {
    double span = region->data[d + c] - region->data[c];
    double needed = span * (double)fo->order / (double)(fo->max_nodes - fo->order);
    if (needed > fo->box_width) fo->box_width = fmin(needed, OOS_WIDEST_BOX);
  }
}

static bool oos_fits(const nle_matd *box) {
  nle_fft_opts fo;
  oos_fft_opts(box, &fo);
  return nle__fft_grid_fits(box, &fo);
}

/* Channels, all of unit charges (one spreading, one forward transform): K,
 * then the force kernel -K' times each component of the offset (moment
 * kernels: no x R - sum x_n K' to cancel in single precision). */
static nle_status oos_plan(nle_ctx *ctx, const nle_matd *Xc, const nle_matd *region, bool student, void **plan) {
  size_t d = Xc->cols;
  nle_kernel force = student ? NLE_KERNEL_STUDENT2 : NLE_KERNEL_GAUSSIAN;
  nle__grid_kernel kernels[4] = {{student ? NLE_KERNEL_STUDENT : NLE_KERNEL_GAUSSIAN, -1}, {force, 0}, {force, 1}, {force, 2}};
  int chan_kernel[4] = {0, 1, 2, 3}, chan_charge[4] = {-1, -1, -1, -1};
  nle_fft_opts fo;
  oos_fft_opts(region, &fo);
  if (fo.box_width > 0.5) nle__log(ctx, 1, "out-of-sample: FFT boxes of %.3g kernel lengths for a map this wide", fo.box_width);
  double t0 = nle_time_seconds();
  nle__fft_field *field = NULL;
  nle_status s = nle__fft_field_new(ctx, Xc, NULL, 0, region, kernels, d + 1, chan_kernel, chan_charge, d + 1, &fo, &field);
  if (!s) nle__log(ctx, 1, "out-of-sample: the training map's FFT grids in %.2f s", nle_time_seconds() - t0);
  *plan = field;
  return s;
}

static nle_status oos_sums(nle_ctx *ctx, void *plan, const nle_matd *T, double *S, double *R, double *phi,
                           int serial) {
  size_t d = T->cols, nch = d + 1;
  nle_status s = NLE_OK;
  if (serial) nle__fft_field_eval_serial(plan, T, phi);
  else s = nle__fft_field_eval(ctx, plan, T, phi);
  for (size_t i = 0; !s && i < T->rows; i++) {
    S[i] = phi[i * nch];
    for (size_t c = 0; c < d; c++) R[i * d + c] = -phi[i * nch + 1 + c]; /* sum K' (x - x_n) */
  }
  return s;
}

static void oos_free(void *plan) {
  nle__fft_field *field = plan;
  nle__fft_field_free(&field);
}

static nle_status oos_row_sums(nle_ctx *ctx, const nle_matd *X, bool student, double *z) {
  return nle_kernel_sums_fft(ctx, X, student ? NLE_KERNEL_STUDENT : NLE_KERNEL_GAUSSIAN, NULL, z, NULL);
}

static const nle__oos_engine fft_oos = {NLE__KERNEL_GAUSSIAN | NLE__KERNEL_STUDENT, NLE__KERNEL_STUDENT, true, "FFT",
                                        oos_fits, oos_plan, oos_sums, oos_free, oos_row_sums};

const nle__engine nle__engine_fft = {
    .name = "fft", .title = "FFT-interpolation",
    .kernels = NLE__KERNEL_GAUSSIAN | NLE__KERNEL_STUDENT, .sqdist_features = true, .max_dim = 3,
    .single_precision = true, .attach = fft_attach, .detach = fft_detach, .forces = fft_forces, .oos = &fft_oos};
