/* nystrom.c — the new-point map of Laplacian eigenmaps and diffusion maps:
 * Nystrom's formula over the new point's weighted edges (both directions:
 * the formulas are in spectral.h beside nle_spectral_model), each training
 * point's share scaled by its degree in W, which the model keeps. */
#include "method.h"
#include "../affinity/affinity_internal.h"

#include <math.h>
#include <stdlib.h>

static int cmp_edge(const void *a, const void *b) {
  int32_t x = ((const nle__oos_edge *)a)->j, y = ((const nle__oos_edge *)b)->j;
  return (x > y) - (x < y);
}

static const nle__oos_edge *edge_to(const nle__oos_point *p, int32_t j) {
  const nle__oos_edge key = {j, 0, 0, 0};
  return bsearch(&key, p->edges, p->count, sizeof *p->edges, cmp_edge);
}

/* pw[count] (entropic: each forward edge's p_{n|y}), dfwd[nf] and q[nf],
 * ea[2 k + 1] (the entropic row solver's). */
static size_t kernel_scratch(const nle_spectral_model *m) {
  size_t extra = m->opts.affinity == NLE_AFF_ENTROPIC ? 2 * (size_t)m->opts.k + 1 : 0;
  return (3 * m->n + extra) * sizeof(double);
}

/* y's own entropic row, solved as training solved its rows, into pw (by
 * edge); a training point given again starts at its training root, and
 * stops there. */
static void entropic_row(const nle__oos_point *p, double *pw, double *dfwd, double *q, double *ea) {
  const nle_spectral_model *m = p->m;
  for (size_t a = 0; a < p->nf; a++) dfwd[a] = (double)edge_to(p, p->fwd[a])->d2;
  nle__ea_row(dfwd, (int)p->nf, m->opts.perplexity, p->self >= 0 ? log(m->beta[p->self]) : NAN, q, ea);
  for (size_t a = 0; a < p->nf; a++) pw[edge_to(p, p->fwd[a]) - p->edges] = q[a];
}

static int kernel_point(const nle__oos_point *p, double *scratch, bool diffusion, double *x) {
  const nle_spectral_model *m = p->m;
  const nle_spectral_opts *o = &m->opts;
  const nle__oos_edge *edges = p->edges;
  size_t d = m->dim, n = m->n, nf = p->nf;
  double *pw = scratch, *dfwd = pw + n, *q = dfwd + n, *ea = q + n;
  double scale_y = 0.0;
  if (!p->count) return 0;
  if (o->affinity == NLE_AFF_SELF_TUNING && nf) { /* its tuning_k-th forward neighbour's distance */
    size_t t = (size_t)o->tuning_k < nf ? (size_t)o->tuning_k : nf;
    scale_y = sqrt((double)edge_to(p, p->fwd[t - 1])->d2);
  }
  if (o->affinity == NLE_AFF_ENTROPIC && nf) entropic_row(p, pw, dfwd, q, ea);
  double deg = 0.0, norm = 0.0;
  for (size_t t = 0; t < d; t++) x[t] = 0.0;
  for (size_t a = 0; a < p->count; a++) {
    const nle__oos_edge *e = &edges[a];
    double sj = m->scale ? m->scale[e->j] : 0.0;
    double w_fwd, w_rev;
    if (o->affinity == NLE_AFF_ENTROPIC) {
      w_fwd = e->forward ? pw[a] : NAN;
      w_rev = e->reverse ? exp(-m->beta[e->j] * e->d2 - m->log_z[e->j]) : NAN;
    } else {
      w_fwd = e->forward ? nle__affinity_weight(o, e->d2, scale_y, sj) : NAN;
      w_rev = e->reverse ? nle__affinity_weight(o, e->d2, sj, scale_y) : NAN;
    }
    double w = nle__symmetrize_pair(o->symmetrize, w_fwd, w_rev);
    if (isnan(w) || !(w > 0) || !(m->degrees[e->j] > 0)) continue;
    deg += w;
    double c = w; /* each training point's share before the normalisation */
    if (diffusion) c = o->alpha == 0 ? w : w / pow(m->degrees[e->j], o->alpha);
    else if (o->laplacian == NLE_LAPLACIAN_SYMMETRIC) c = w / sqrt(m->degrees[e->j]);
    norm += c;
    for (size_t t = 0; t < d; t++) x[t] += c * m->X->data[(size_t)e->j * d + t];
  }
  if (!(deg > 0)) return 0;
  for (size_t t = 0; t < d; t++) {
    double lambda = m->eigenvalues[t + 1], div;
    if (diffusion) div = lambda * norm; /* P's eigenvalue mu_t */
    else if (o->laplacian == NLE_LAPLACIAN_UNNORMALISED) div = deg - lambda;
    else if (o->laplacian == NLE_LAPLACIAN_SYMMETRIC) div = (1.0 - lambda) * sqrt(deg);
    else div = (1.0 - lambda) * deg;
    x[t] /= div;
  }
  return 1;
}

static int laplacian_point(const nle__oos_point *p, void *scratch, double *x) {
  return kernel_point(p, scratch, false, x);
}

static int diffusion_point(const nle__oos_point *p, void *scratch, double *x) {
  return kernel_point(p, scratch, true, x);
}

static nle_status keep_degrees(nle_ctx *ctx, nle_spectral_model *m, const nle_csr *W) {
  return (m->degrees = nle__degrees(ctx, W)) ? NLE_OK : NLE_ERR_NOMEM;
}

static void save_degrees(nle__afile *af, const nle_spectral_model *m) {
  nle__rec_put(af, "degrees", 'd', m->degrees, m->n);
}

static nle_status load_degrees(nle_ctx *ctx, const nle__rec_file *f, nle_spectral_model *m) {
  return nle__rec_copy_doubles(ctx, f, "degrees", m->n, &m->degrees);
}

const nle__spectral_map nle__nystrom_map = {"nystrom", false, kernel_scratch, laplacian_point, keep_degrees,
                                            save_degrees, load_degrees};
const nle__spectral_map nle__diffusion_map = {"nystrom", false, kernel_scratch, diffusion_point, keep_degrees,
                                              save_degrees, load_degrees};
