/* fft_slab.c — the split 2-D passes of FFT interpolation (fft_split2d.c)
 * divided among ranks like a slab-decomposed FFT (issue 38,
 * docs/mpi_tsne.md). A rank does a contiguous share of the row chunks
 * (its node rows) and of the column strips (its columns of the half
 * spectrum); two all-to-alls move the grids between the two layouts, and
 * an allgather of the real node rows lets every rank interpolate at its
 * own points wherever they lie. The units are the single process's, each
 * computing what it computes alone, so the grid values are its bits.
 *
 * Bytes a rank sends per call, for G = n0 x n1 nodes, R ranks, L lead
 * grids and C channels (t-SNE: L = 1, C = 2): to the columns about
 * 8 L G / R (R - 1) / R, back to the rows 8 C G / R (R - 1) / R (complex
 * values of half the columns: 8 bytes a value, n1 + 1 columns), and the
 * rows shared 4 C G / R (R - 1) (floats, to every other rank). */
#include "fft_internal.h"

#include "../core/comm.h"

#include <stdlib.h>
#include <string.h>

void nle__fft_slab_share(const nle__fft_ws *w, int ranks, int rank, unit_share *u) {
  size_t r = (size_t)rank, n = (size_t)ranks;
  u->chunk0 = SPLIT * r / n;
  u->chunk1 = SPLIT * (r + 1) / n;
  u->strip0 = w->strips * r / n;
  u->strip1 = w->strips * (r + 1) / n;
}

/* A rank's node rows [r0, r1) (its row chunks') and complex columns
 * [c0, c1) (its strips'). */
typedef struct {
  size_t r0, r1, c0, c1;
} slab;

static slab slab_of(const conv_job *j, int ranks, int rank) {
  unit_share u;
  nle__fft_slab_share(j->ws, ranks, rank, &u);
  size_t ncplx = j->g->pad[1] / 2 + 1, c0 = u.strip0 * STRIP, c1 = u.strip1 * STRIP;
  return (slab){j->ws->row_lo[u.chunk0], j->ws->row_lo[u.chunk1], c0 < ncplx ? c0 : ncplx, c1 < ncplx ? c1 : ncplx};
}

/* Rows [r0, r1) of a grid of `stride` bytes a row, `width` bytes from byte
 * `at` of each, copied out to the packed run at p (out) or back from it;
 * returns p past them. */
static char *copy_rows(char *grid, size_t stride, size_t r0, size_t r1, size_t at, size_t width, char *p, int out) {
  for (size_t r = r0; r < r1; r++, p += width)
    if (out) memcpy(p, grid + r * stride + at, width);
    else memcpy(grid + r * stride + at, p, width);
  return p;
}

/* The rectangle of the complex grids that moves between this rank (mine)
 * and rank `other`: to the columns, this rank's rows of the other's
 * columns go out and the other's rows of this rank's columns come in;
 * back to the rows, the reverse. */
static slab moving(slab mine, slab other, int to_columns, int out) {
  return to_columns == out ? (slab){mine.r0, mine.r1, other.c0, other.c1} : (slab){other.r0, other.r1, mine.c0, mine.c1};
}

/* Packs what goes to each other rank into buf at at[q] (out), or unpacks
 * what came from each (!out), the grids one after another. */
static void move_all(const conv_job *j, const int *which, size_t count, int to_columns, int out, char *buf,
                     const size_t *at, int ranks, int me) {
  size_t cell = sizeof(fftwf_complex), stride = (j->g->pad[1] / 2 + 1) * cell;
  slab mine = slab_of(j, ranks, me);
  for (int q = 0; q < ranks; q++) {
    slab rect = moving(mine, slab_of(j, ranks, q), to_columns, out);
    char *p = buf + at[q];
    for (size_t i = 0; q != me && i < count; i++)
      p = copy_rows((char *)j->grid[which[i]], stride, rect.r0, rect.r1, rect.c0 * cell, (rect.c1 - rect.c0) * cell, p,
                    out);
  }
}

/* A kept buffer of at least `bytes` (fft_internal.h), or NULL. */
static void *kept(nle_ctx *ctx, double **buf, size_t *cap, size_t bytes, const char *what) {
  return nle__fft_ws_doubles(ctx, buf, cap, (bytes + sizeof(double) - 1) / sizeof(double) + 1, what);
}

/* The complex grids `which` between the row and the column layouts, in
 * place (each rank keeps whole-sized grids: the split plans' arrays). What
 * each rank sends and receives follows from the slabs, known alike. */
static nle_status transpose(nle_ctx *ctx, const conv_job *j, const int *which, size_t count, int to_columns,
                            nle_status s) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  size_t R = (size_t)ranks;
  size_t *offsets = calloc(4 * R + 2, sizeof(size_t)), *bytes = offsets ? offsets + R + 1 : NULL,
         *recv_at = offsets ? bytes + R : NULL, *recv_bytes = offsets ? recv_at + R + 1 : NULL;
  char *send = NULL, *recv = NULL;
  slab mine = slab_of(j, ranks, me);
  if (!s && offsets) {
    for (int q = 0; q < ranks; q++) {
      slab out = moving(mine, slab_of(j, ranks, q), to_columns, 1), in = moving(mine, slab_of(j, ranks, q), to_columns, 0);
      bytes[q] = q == me ? 0 : count * (out.r1 - out.r0) * (out.c1 - out.c0) * sizeof(fftwf_complex);
      recv_bytes[q] = q == me ? 0 : count * (in.r1 - in.r0) * (in.c1 - in.c0) * sizeof(fftwf_complex);
      offsets[q + 1] = offsets[q] + bytes[q];
      recv_at[q + 1] = recv_at[q] + recv_bytes[q];
    }
    nle__fft_ws *w = j->buffers;
    send = kept(ctx, &w->slab_send, &w->slab_send_cap, offsets[R], "the grids' exchange");
    recv = kept(ctx, &w->slab_recv, &w->slab_recv_cap, recv_at[R], "the grids' exchange");
  }
  if (!s && (!send || !recv)) s = nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids' exchange");
  s = nle__comm_agree(ctx, s);
  if (!s) move_all(j, which, count, to_columns, 1, send, offsets, ranks, me);
  if (!s) s = nle__comm_alltoallv_known(ctx, send, offsets, bytes, recv, recv_at, recv_bytes);
  if (!s) move_all(j, which, count, to_columns, 0, recv, recv_at, ranks, me);
  free(offsets);
  return s;
}

nle_status nle__fft_slab_to_columns(nle_ctx *ctx, const conv_job *j, nle_status s) {
  return transpose(ctx, j, j->leads, j->nleads, 1, s);
}

nle_status nle__fft_slab_to_rows(nle_ctx *ctx, const conv_job *j, nle_status s) {
  int every[MAX_CHANNELS];
  for (size_t c = 0; c < j->nch; c++) every[c] = (int)c;
  return transpose(ctx, j, every, j->nch, 0, s);
}

/* The real values of the node columns (n1 floats a row, of the row's
 * pad + 2) are all the interpolation reads. */
nle_status nle__fft_slab_share_rows(nle_ctx *ctx, const conv_job *j, nle_status s) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  const fft_grid *g = j->g;
  size_t width = g->nodes[1] * sizeof(float), stride = 2 * (g->pad[1] / 2 + 1) * sizeof(float);
  slab mine = slab_of(j, ranks, me);
  size_t mine_bytes = j->nch * (mine.r1 - mine.r0) * width, *offsets = NULL;
  char *all = NULL;
  if (!s) {
    all = kept(ctx, &j->buffers->slab_rows, &j->buffers->slab_rows_cap, j->nch * g->nodes[0] * width,
               "the grids' rows");
    offsets = malloc(((size_t)ranks + 1) * sizeof(size_t));
    if (!all || !offsets) s = nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory for the grids' rows");
  }
  s = nle__comm_agree(ctx, s);
  if (!s) {
    /* packed where allgatherv puts this rank's part: the ranks' rows in order */
    char *p = all + j->nch * mine.r0 * width;
    for (size_t c = 0; c < j->nch; c++) p = copy_rows((char *)j->grid[c], stride, mine.r0, mine.r1, 0, width, p, 1);
    s = nle__comm_allgatherv(ctx, all + j->nch * mine.r0 * width, mine_bytes, all, offsets);
  }
  for (int q = 0; !s && q < ranks; q++) {
    slab other = slab_of(j, ranks, q);
    char *p = all + offsets[q];
    for (size_t c = 0; q != me && c < j->nch; c++)
      p = copy_rows((char *)j->grid[c], stride, other.r0, other.r1, 0, width, p, 0);
  }
  free(offsets);
  return s;
}

nle_status nle__fft_slab_ordered(nle_ctx *ctx, const double *mine, size_t count, double *all, double *total,
                                 nle_status s) {
  int ranks = nle__ranks(ctx);
  size_t *offsets = s ? NULL : malloc(((size_t)ranks + 1) * sizeof(size_t));
  if (!s && !offsets) s = nle__fail(ctx, NLE_ERR_NOMEM, "FFT interpolation: out of memory");
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, mine, count * sizeof(double), all, offsets);
  double sum = 0.0;
  for (size_t k = 0; !s && k < offsets[ranks] / sizeof(double); k++) sum += all[k];
  *total = sum;
  free(offsets);
  return s;
}
