/* fgt.c — sums of the Gaussian kernel exp(-|t - s|^2) by the fast Gauss
 * transform (Greengard and Strain 1991; dissertation sec. 5.2.2). Space is
 * cut into boxes of side sqrt(2) r (kernel length units, sigma = 1). A box
 * with many sources gets a Hermite expansion about its centre (eq. 5.2), a
 * box with many targets a Taylor expansion about its centre (eq. 5.3), and
 * where both are crowded the Hermite series is translated into the Taylor
 * one (eq. 5.4); pairs of sparse boxes are summed directly (eq. 5.1). Only
 * boxes within `reach` box sides interact: beyond, exp(-(reach sqrt(2) r)^2)
 * is below the series' own error at the defaults.
 *
 * The dissertation's list of cases pairs "few sources, many targets" with
 * the Hermite expansion; its fig. 5.2 and Greengard and Strain pair it with
 * the Taylor expansion, whose coefficients eq. 5.3 forms one source at a time.
 * This file follows the figure: the series is formed on the crowded side.
 *
 * Along with S(t) = sum_s K(t, s) every call returns the force-like
 * moments F(t) = sum_s (s - t) K(t, s), with charges taken relative to the
 * expansion centres, so F keeps its accuracy however far the points lie
 * from the origin (S^x = F + t S loses digits to cancellation there). */
#include "nbody_internal.h"
#include "../core/vecmath.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_DIM = NBODY_MAX_DIM, MAX_ORDER = 12, MAX_REACH = 12 };

/* Dense box arrays cost 12 bytes a box; beyond this the model falls back
 * to Barnes-Hut (a map thrown far by a trial step). */
#define FGT_MAX_BOXES ((size_t)1 << 24)

void nle_fgt_opts_init(nle_fgt_opts *o) {
  o->order = 6;
  o->ratio = 0.5;
  o->cutoff = NLE_AUTO;
  o->reach = 4;
}

/* The default cut-off for a box's series: about p^d points (p^d / 2 in
 * 3-D). The dissertation's 5 made the series 2-3x slower than direct sums
 * on 2-D sets with about ten points a box (order 6, 36 terms), and a
 * 3-D set with 7 points a box 2.5x slower (bench figures in
 * docs/embeddings.md). */
static int default_cutoff(size_t d, size_t p) {
  size_t P = d == 1 ? p : d == 2 ? p * p : p * p * p / 2;
  return P > 5 ? (int)P : 5;
}

static nle_status resolve_opts(nle_ctx *ctx, const nle_fgt_opts *in, size_t d, nle_fgt_opts *o) {
  if (in) *o = *in;
  else nle_fgt_opts_init(o);
  if (o->order < 1 || o->order > MAX_ORDER)
    return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: order %d must be in 1..%d", o->order, MAX_ORDER);
  if (!(o->ratio > 0.0 && o->ratio < M_SQRT1_2))
    return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: ratio r = %g must be in (0, 1/sqrt 2)", o->ratio);
  if (o->reach < 1 || o->reach > MAX_REACH)
    return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: reach %d must be in 1..%d boxes", o->reach, MAX_REACH);
  if (o->cutoff == NLE_AUTO) o->cutoff = default_cutoff(d, (size_t)o->order);
  if (o->cutoff < 0) return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: cut-off %d must be >= 0", o->cutoff);
  return NLE_OK;
}

/* Dissertation eqs. 5.5-5.7 (Baxter and Roussos), per unit of total charge:
 * the Hermite-then-Taylor bound (the largest of the three), plus the
 * truncation at `reach` boxes. */
double nle_fgt_error_bound(size_t d, const nle_fgt_opts *opts) {
  nle_fgt_opts o;
  if (opts) o = *opts;
  else nle_fgt_opts_init(&o);
  double p = o.order, r = o.ratio, rs = M_SQRT2 * r, sqfact = sqrt(tgamma(p + 1.0));
  double eh = 0.0, eth = 0.0;
  for (size_t k = 0; k < d; k++) {
    double binom = tgamma((double)d + 1.0) / (tgamma((double)k + 1.0) * tgamma((double)(d - k) + 1.0));
    eh += binom * pow(1.0 - pow(r, p), (double)k) * pow(pow(r, p) / sqfact, (double)(d - k));
    eth += binom * pow(1.0 - pow(rs, p), (double)k) * pow(pow(rs, p) / sqfact, (double)(d - k));
  }
  eh /= pow(1.0 - r, (double)d);
  double bound = eh;
  if (rs < 1.0) bound += eth * eth / pow(1.0 - rs, 2.0 * (double)d);
  else bound = INFINITY;
  double cut = o.reach * M_SQRT2 * r;
  return bound + exp(-cut * cut);
}

/* ---- the boxes ------------------------------------------------------------ */

typedef struct {
  int32_t *start; /* nboxes + 1: the points of box b are idx[start[b] .. start[b + 1]) */
  int32_t *idx;
  int32_t *occupied; /* the non-empty boxes */
  size_t n_occupied;
} box_list;

typedef struct {
  size_t d, p, P; /* P = p^d terms per series */
  int cutoff;
  double side, lo[MAX_DIM];
  int64_t nb[MAX_DIM], stride[MAX_DIM];
  size_t nboxes;
  const double *src, *tgt;
  double *src_sorted; /* the sources' coordinates in box order */
  box_list sb, tb; /* tb aliases sb when the targets are the sources */
  int32_t *herm_slot; /* per box: its Hermite coefficients, or -1 */
  double *herm;       /* (d + 1) P per slot: unit charges, then the d moments */
  int (*nbr)[MAX_DIM];
  size_t n_nbr;
  double *trans; /* per axis offset -reach-1 .. reach+1: the p x p translation matrix */
  int trans_span;
  double *S, *F;
} fgt_plan;

static int64_t box_of(const fgt_plan *g, const double *x, int64_t *coord) {
  int64_t b = 0;
  for (size_t t = 0; t < g->d; t++) {
    double u = floor((x[t] - g->lo[t]) / g->side);
    int64_t i = u < 0 ? 0 : u >= (double)g->nb[t] ? g->nb[t] - 1 : (int64_t)u;
    if (coord) coord[t] = i;
    b += i * g->stride[t];
  }
  return b;
}

static void box_centre(const fgt_plan *g, int64_t b, double *c) {
  for (size_t t = 0; t < g->d; t++) {
    int64_t i = (b / g->stride[t]) % g->nb[t];
    c[t] = g->lo[t] + ((double)i + 0.5) * g->side;
  }
}

/* Counting sort of n points into the boxes. */
static nle_status sort_points(nle_ctx *ctx, const fgt_plan *g, const double *x, size_t n, box_list *bl) {
  bl->start = nle__calloc(ctx, g->nboxes + 1, sizeof(int32_t), "the Gauss-transform boxes");
  bl->idx = nle__malloc(ctx, n * sizeof(int32_t), "the Gauss-transform boxes");
  int32_t *box = nle__malloc(ctx, n * sizeof(int32_t), "the Gauss-transform boxes");
  if (!bl->start || !bl->idx || !box) {
    free(box);
    return NLE_ERR_NOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    box[i] = (int32_t)box_of(g, x + i * g->d, NULL);
    bl->start[box[i] + 1]++;
  }
  size_t occ = 0;
  for (size_t b = 0; b < g->nboxes; b++) {
    occ += bl->start[b + 1] > 0;
    bl->start[b + 1] += bl->start[b];
  }
  bl->occupied = nle__malloc(ctx, (occ ? occ : 1) * sizeof(int32_t), "the Gauss-transform boxes");
  if (!bl->occupied) {
    free(box);
    return NLE_ERR_NOMEM;
  }
  bl->n_occupied = 0;
  for (size_t b = 0; b < g->nboxes; b++)
    if (bl->start[b + 1] > bl->start[b]) bl->occupied[bl->n_occupied++] = (int32_t)b;
  /* A stable scatter: within a box the points keep their index order, so
   * the sums do not depend on the thread count. */
  int32_t *fill = nle__malloc(ctx, g->nboxes * sizeof(int32_t), "the Gauss-transform boxes");
  if (!fill) {
    free(box);
    return NLE_ERR_NOMEM;
  }
  memcpy(fill, bl->start, g->nboxes * sizeof(int32_t));
  for (size_t i = 0; i < n; i++) bl->idx[fill[box[i]]++] = (int32_t)i;
  free(fill);
  free(box);
  return NLE_OK;
}

static void free_boxes(box_list *bl) {
  free(bl->start);
  free(bl->idx);
  free(bl->occupied);
  memset(bl, 0, sizeof *bl);
}

/* ---- one-dimensional factors ---------------------------------------------- */

/* h[k] = h_k(x) = exp(-x^2) H_k(x) (physicists' Hermite polynomials), k < n:
 * h_{k+1} = 2 x h_k - 2 k h_{k-1}. */
static void hermite_functions(double x, size_t n, double *h) {
  h[0] = exp(-x * x);
  if (n > 1) h[1] = 2.0 * x * h[0];
  for (size_t k = 1; k + 1 < n; k++) h[k + 1] = 2.0 * x * h[k] - 2.0 * (double)k * h[k - 1];
}

/* v[k] = u^k / k!, k < n. */
static void scaled_powers(double u, size_t n, double *v) {
  v[0] = 1.0;
  for (size_t k = 1; k < n; k++) v[k] = v[k - 1] * u / (double)k;
}

/* out[a] = prod_t v[t][a_t] over the multi-indices a (row-major, p^d). */
static void outer_product(size_t d, size_t p, const double v[][MAX_ORDER], double *out) {
  if (d == 1) {
    memcpy(out, v[0], p * sizeof(double));
  } else if (d == 2) {
    for (size_t i = 0; i < p; i++)
      for (size_t j = 0; j < p; j++) out[i * p + j] = v[0][i] * v[1][j];
  } else {
    for (size_t i = 0; i < p; i++)
      for (size_t j = 0; j < p; j++) {
        double vij = v[0][i] * v[1][j];
        for (size_t k = 0; k < p; k++) out[(i * p + j) * p + k] = vij * v[2][k];
      }
  }
}

static double dot(const double *a, const double *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* ---- the expansions ------------------------------------------------------- */

/* Eq. 5.1 for one target x and n consecutive sources ys, added to *S and
 * F[0 .. d), as SIMD loops (vector exp). */
static void direct_sums(size_t d, const double *x, const double *ys, int32_t n, double *S, double *F) {
  double s = 0.0, f0 = 0.0, f1 = 0.0, f2 = 0.0;
  if (d == 1) {
#pragma omp simd reduction(+ : s, f0)
    for (int32_t r = 0; r < n; r++) {
      double u = ys[r] - x[0], k = exp(-u * u);
      s += k;
      f0 += k * u;
    }
  } else if (d == 2) {
#pragma omp simd reduction(+ : s, f0, f1)
    for (int32_t r = 0; r < n; r++) {
      double u = ys[2 * r] - x[0], v = ys[2 * r + 1] - x[1], k = exp(-(u * u + v * v));
      s += k;
      f0 += k * u;
      f1 += k * v;
    }
  } else {
#pragma omp simd reduction(+ : s, f0, f1, f2)
    for (int32_t r = 0; r < n; r++) {
      double u = ys[3 * r] - x[0], v = ys[3 * r + 1] - x[1], w = ys[3 * r + 2] - x[2];
      double k = exp(-(u * u + v * v + w * w));
      s += k;
      f0 += k * u;
      f1 += k * v;
      f2 += k * w;
    }
  }
  *S += s;
  double f[MAX_DIM] = {f0, f1, f2};
  for (size_t t = 0; t < d; t++) F[t] += f[t];
}

/* Hermite coefficients of one crowded source box (eq. 5.2): channel 0 has
 * unit charges, channel 1 + t the charges (s - c_B)_t;
 * A_a = sum_s q_s prod_t ((s - c_B)_t)^{a_t} / a_t!. */
static void hermite_coefficients(const fgt_plan *g, int64_t b, double *A, double *term) {
  size_t d = g->d, p = g->p, P = g->P;
  double c[MAX_DIM], v[MAX_DIM][MAX_ORDER];
  box_centre(g, b, c);
  memset(A, 0, (d + 1) * P * sizeof(double));
  for (int32_t k = g->sb.start[b]; k < g->sb.start[b + 1]; k++) {
    const double *s = g->src + (size_t)g->sb.idx[k] * d;
    for (size_t t = 0; t < d; t++) scaled_powers(s[t] - c[t], p, v[t]);
    outer_product(d, p, (const double(*)[MAX_ORDER])v, term);
    for (size_t a = 0; a < P; a++) A[a] += term[a];
    for (size_t t = 0; t < d; t++) {
      double q = s[t] - c[t];
      for (size_t a = 0; a < P; a++) A[(1 + t) * P + a] += q * term[a];
    }
  }
}

/* out = the mode-`axis` product of the p^d tensor `in` with the p x p
 * matrix M (out[.., b, ..] = sum_a M[b p + a] in[.., a, ..]). */
static void mode_product(size_t d, size_t p, size_t axis, const double *M, const double *in, double *out) {
  size_t pre = 1, post = 1;
  for (size_t t = 0; t < axis; t++) pre *= p;
  for (size_t t = axis + 1; t < d; t++) post *= p;
  for (size_t i = 0; i < pre; i++)
    for (size_t b = 0; b < p; b++) {
      double *o = out + (i * p + b) * post;
      for (size_t j = 0; j < post; j++) o[j] = 0.0;
      for (size_t a = 0; a < p; a++) {
        double m = M[b * p + a];
        const double *x = in + (i * p + a) * post;
        for (size_t j = 0; j < post; j++) o[j] += m * x[j];
      }
    }
}

/* Translation matrix along one axis for centres delta = c_B - c_C apart
 * (eq. 5.4): M[b p + a] = (-1)^a h_{a+b}(delta) / b!. */
static void translation_matrix(double delta, size_t p, double *M) {
  double h[2 * MAX_ORDER], fact = 1.0;
  hermite_functions(delta, 2 * p - 1, h);
  for (size_t b = 0; b < p; b++) {
    if (b > 0) fact *= (double)b;
    for (size_t a = 0; a < p; a++) M[b * p + a] = ((a & 1) ? -h[a + b] : h[a + b]) / fact;
  }
}

/* The translated series of one coefficient tensor, through d mode products
 * (d p^(d+1) operations instead of p^(2d)). */
static void translate(const fgt_plan *g, const int *delta, const double *A, double *out, double *tmp) {
  size_t d = g->d, p = g->p;
  const double *in = A;
  double *bufs[2] = {out, tmp};
  /* an odd number of products must end in out */
  int which = (d % 2 == 1) ? 0 : 1;
  for (size_t t = 0; t < d; t++) {
    const double *M = g->trans + (size_t)(delta[t] + g->trans_span) * p * p;
    mode_product(d, p, t, M, in, bufs[which]);
    in = bufs[which];
    which ^= 1;
  }
}

/* ---- the interactions of one target box ----------------------------------- */

typedef struct {
  const fgt_plan *g;
} fgt_job;

/* The cheapest way to sum one box pair, among those its boxes' series allow
 * (costs in multiply-adds; a direct pair, with its vector exp, as 20): the dissertation's
 * rule by counts alone translates between any two crowded boxes, which
 * costs (d + 1) d p^(d+1) per pair and was 5x slower than direct sums on a
 * 2-D map with about ten points a box. */
static int pair_method(const fgt_plan *g, int32_t n_src, int32_t n_tgt, int src_series, int tgt_series) {
  double d = (double)g->d, P = (double)g->P, p = (double)g->p;
  double direct = 20.0 * (double)n_src * (double)n_tgt, eval = (d + 1.0) * P + d * (p + 20.0);
  double best = direct, hermite = src_series ? eval * (double)n_tgt : INFINITY;
  double taylor = tgt_series ? eval * (double)n_src : INFINITY;
  double translate = src_series && tgt_series ? (d + 1.0) * d * P * p : INFINITY;
  int how = 0;
  if (hermite < best) best = hermite, how = 1;
  if (taylor < best) best = taylor, how = 2;
  if (translate < best) how = 3;
  return how;
}

static int target_box(void *job, size_t k, void *scratch) {
  const fgt_plan *g = ((const fgt_job *)job)->g;
  size_t d = g->d, p = g->p, P = g->P;
  int64_t cbox = g->tb.occupied[k], ccoord[MAX_DIM];
  double cc[MAX_DIM];
  box_centre(g, cbox, cc);
  for (size_t t = 0; t < d; t++) ccoord[t] = (cbox / g->stride[t]) % g->nb[t];
  int32_t t0 = g->tb.start[cbox], t1 = g->tb.start[cbox + 1];
  int big_c = t1 - t0 >= g->cutoff;
  double *T = scratch, *term = T + (d + 1) * P, *tr = term + P, *tmp = tr + P, *tr1 = tmp + P;
  if (big_c) memset(T, 0, (d + 1) * P * sizeof(double));
  for (int32_t q = t0; q < t1; q++) {
    size_t i = (size_t)g->tb.idx[q];
    g->S[i] = 0.0;
    for (size_t t = 0; t < d; t++) g->F[i * d + t] = 0.0;
  }
  double v[MAX_DIM][MAX_ORDER];
  for (size_t e = 0; e < g->n_nbr; e++) {
    const int *delta = g->nbr[e];
    int64_t bbox = 0;
    int inside = 1;
    for (size_t t = 0; t < d && inside; t++) {
      int64_t c = ccoord[t] + delta[t];
      inside = c >= 0 && c < g->nb[t];
      bbox += c * g->stride[t];
    }
    if (!inside) continue;
    int32_t s0 = g->sb.start[bbox], s1 = g->sb.start[bbox + 1];
    if (s0 == s1) continue;
    int32_t slot = g->herm_slot[bbox];
    enum { DIRECT, HERMITE, TAYLOR, TRANSLATE } how = pair_method(g, s1 - s0, t1 - t0, slot >= 0, big_c);
    if (how == DIRECT) { /* eq. 5.1 */
      for (int32_t q = t0; q < t1; q++) {
        size_t i = (size_t)g->tb.idx[q];
        direct_sums(d, g->tgt + i * d, g->src_sorted + (size_t)s0 * d, s1 - s0, &g->S[i], &g->F[i * d]);
      }
    } else if (how == HERMITE) { /* eq. 5.2: the source box's series at each target */
      const double *A = g->herm + (size_t)slot * (d + 1) * P;
      double cb[MAX_DIM];
      box_centre(g, bbox, cb);
      for (int32_t q = t0; q < t1; q++) {
        size_t i = (size_t)g->tb.idx[q];
        const double *x = g->tgt + i * d;
        for (size_t t = 0; t < d; t++) hermite_functions(x[t] - cb[t], p, v[t]);
        outer_product(d, p, (const double(*)[MAX_ORDER])v, term);
        double s = dot(A, term, P);
        g->S[i] += s;
        for (size_t t = 0; t < d; t++) g->F[i * d + t] += dot(A + (1 + t) * P, term, P) + (cb[t] - x[t]) * s;
      }
    } else if (how == TAYLOR) { /* eq. 5.3: each source into the target box's series */
      for (int32_t r = s0; r < s1; r++) {
        const double *y = g->src + (size_t)g->sb.idx[r] * d;
        for (size_t t = 0; t < d; t++) {
          hermite_functions(y[t] - cc[t], p, v[t]);
          double fact = 1.0;
          for (size_t b = 1; b < p; b++) v[t][b] /= (fact *= (double)b);
        }
        outer_product(d, p, (const double(*)[MAX_ORDER])v, term);
        for (size_t a = 0; a < P; a++) T[a] += term[a];
        for (size_t t = 0; t < d; t++) {
          double c = y[t] - cc[t];
          for (size_t a = 0; a < P; a++) T[(1 + t) * P + a] += c * term[a];
        }
      }
    } else { /* eq. 5.4: the Hermite series translated into the Taylor series */
      const double *A = g->herm + (size_t)slot * (d + 1) * P;
      translate(g, delta, A, tr1, tmp);
      for (size_t a = 0; a < P; a++) T[a] += tr1[a];
      for (size_t t = 0; t < d; t++) {
        double shift = (double)delta[t] * g->side; /* c_B - c_C: moments about c_C */
        translate(g, delta, A + (1 + t) * P, tr, tmp);
        for (size_t a = 0; a < P; a++) T[(1 + t) * P + a] += tr[a] + shift * tr1[a];
      }
    }
  }
  if (big_c)
    for (int32_t q = t0; q < t1; q++) {
      size_t i = (size_t)g->tb.idx[q];
      const double *x = g->tgt + i * d;
      for (size_t t = 0; t < d; t++) {
        v[t][0] = 1.0;
        for (size_t b = 1; b < p; b++) v[t][b] = v[t][b - 1] * (x[t] - cc[t]);
      }
      outer_product(d, p, (const double(*)[MAX_ORDER])v, term);
      double s = dot(T, term, P);
      g->S[i] += s;
      for (size_t t = 0; t < d; t++) g->F[i * d + t] += dot(T + (1 + t) * P, term, P) + (cc[t] - x[t]) * s;
    }
  return 0;
}

typedef struct {
  const fgt_plan *g;
  int32_t *crowded; /* source boxes with series */
} herm_job;

static int hermite_box(void *job, size_t k, void *scratch) {
  const herm_job *j = job;
  const fgt_plan *g = j->g;
  int64_t b = j->crowded[k];
  hermite_coefficients(g, b, g->herm + (size_t)g->herm_slot[b] * (g->d + 1) * g->P, scratch);
  return 0;
}

/* The neighbour offsets: boxes whose nearest points lie closer than reach
 * box sides (a ball, not the cube of (2 reach + 1)^d boxes: the same bound
 * on what is left out, with about 20% fewer pairs in 2-D). */
static size_t neighbour_offsets(size_t d, int reach, int (*out)[MAX_DIM]) {
  size_t n = 0;
  int span[MAX_DIM] = {0, 0, 0};
  for (size_t t = 0; t < d; t++) span[t] = reach;
  for (int a = -span[0]; a <= span[0]; a++)
    for (int b = -span[1]; b <= span[1]; b++)
      for (int c = -span[2]; c <= span[2]; c++) {
        int dl[3] = {a, b, c};
        long gap = 0;
        for (size_t t = 0; t < d; t++) {
          long g = labs((long)dl[t]) - 1;
          if (g > 0) gap += g * g;
        }
        if (gap >= (long)reach * reach) continue;
        if (out) memcpy(out[n], dl, sizeof dl);
        n++;
      }
  return n;
}

/* Box grid over the sources and targets; 0 when it has too many boxes. */
static int plan_grid(fgt_plan *g, const nle_matd *src, const nle_matd *tgt, double ratio) {
  size_t d = src->cols;
  g->d = d;
  g->side = M_SQRT2 * ratio;
  size_t total = 1;
  for (size_t t = 0; t < d; t++) {
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < src->rows; i++) lo = fmin(lo, src->data[i * d + t]), hi = fmax(hi, src->data[i * d + t]);
    for (size_t i = 0; i < tgt->rows; i++) lo = fmin(lo, tgt->data[i * d + t]), hi = fmax(hi, tgt->data[i * d + t]);
    double boxes = floor((hi - lo) / g->side) + 1.0;
    if (boxes > (double)FGT_MAX_BOXES) return 0;
    /* The points centred in the boxes: a map much smaller than a box (the
     * start of an embedding) then sits at the expansion centre, where the
     * series are nearly exact, not at a corner at distance r. */
    g->lo[t] = 0.5 * (lo + hi) - 0.5 * boxes * g->side;
    g->nb[t] = (int64_t)boxes;
    if (!nle__mul_size(total, (size_t)boxes, &total) || total > FGT_MAX_BOXES) return 0;
  }
  /* the first coordinate varies slowest */
  int64_t stride = 1;
  for (size_t t = d; t-- > 0;) {
    g->stride[t] = stride;
    stride *= g->nb[t];
  }
  g->nboxes = total;
  return 1;
}

int nle__fgt_grid_fits(const nle_matd *X, const nle_fgt_opts *opts) {
  nle_fgt_opts o;
  if (opts) o = *opts;
  else nle_fgt_opts_init(&o);
  fgt_plan g;
  memset(&g, 0, sizeof g);
  return plan_grid(&g, X, X, o.ratio > 0 ? o.ratio : 0.5);
}

/* What the sources alone decide, kept between evaluations at new targets:
 * the box grid, the sorted sources, their Hermite series and the
 * translation matrices. */
struct nle__fgt_plan {
  fgt_plan g;
  size_t n_src;
  const nle_matd *src;
};

void nle__fgt_plan_free(nle__fgt_plan **pp) {
  if (!pp || !*pp) return;
  fgt_plan *g = &(*pp)->g;
  free(g->src_sorted);
  free(g->herm_slot);
  free(g->herm);
  free(g->nbr);
  free(g->trans);
  free_boxes(&g->sb);
  free(*pp);
  *pp = NULL;
}

nle_status nle__fgt_plan_new(nle_ctx *ctx, const nle_matd *src, const nle_matd *region, const nle_fgt_opts *opts,
                             nle__fgt_plan **out) {
  *out = NULL;
  size_t d = src->cols;
  nle_fgt_opts o;
  nle_status s = resolve_opts(ctx, opts, d, &o);
  if (s) return s;
  if (region->cols != d)
    return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: sources and targets differ in dimension");
  if (src->rows > INT32_MAX || region->rows > INT32_MAX)
    return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: at most %d points", INT32_MAX);
  nle__fgt_plan *plan = nle__calloc(ctx, 1, sizeof *plan, "the Gauss-transform plan");
  if (!plan) return NLE_ERR_NOMEM;
  fgt_plan *g = &plan->g;
  plan->src = src;
  plan->n_src = src->rows;
  if (!plan_grid(g, src, region, o.ratio)) {
    free(plan);
    return nle__fail(ctx, NLE_ERR_MEMCAP, "fast Gauss transform: the points span more than %zu boxes of side %.3g",
                     FGT_MAX_BOXES, M_SQRT2 * o.ratio);
  }
  g->p = (size_t)o.order;
  g->P = 1;
  for (size_t t = 0; t < d; t++) g->P *= g->p;
  g->cutoff = o.cutoff;
  g->src = src->data;
  s = sort_points(ctx, g, src->data, src->rows, &g->sb);
  if (!s && !(g->src_sorted = nle__malloc(ctx, (src->rows ? src->rows : 1) * d * sizeof(double), "sorted sources")))
    s = NLE_ERR_NOMEM;
  for (size_t k = 0; !s && k < src->rows; k++)
    memcpy(g->src_sorted + k * d, src->data + (size_t)g->sb.idx[k] * d, d * sizeof(double));
  size_t n_crowded = 0;
  int32_t *crowded = NULL;
  if (!s) {
    g->herm_slot = nle__malloc(ctx, g->nboxes * sizeof(int32_t), "the Gauss-transform boxes");
    crowded = nle__malloc(ctx, (g->sb.n_occupied ? g->sb.n_occupied : 1) * sizeof(int32_t), "the Gauss-transform boxes");
    if (!g->herm_slot || !crowded) s = NLE_ERR_NOMEM;
  }
  if (!s) {
    memset(g->herm_slot, 0xff, g->nboxes * sizeof(int32_t));
    for (size_t k = 0; k < g->sb.n_occupied; k++) {
      int32_t b = g->sb.occupied[k];
      if (g->sb.start[b + 1] - g->sb.start[b] >= o.cutoff) {
        g->herm_slot[b] = (int32_t)n_crowded;
        crowded[n_crowded++] = b;
      }
    }
    s = nle__check_memory(ctx, (double)n_crowded * (double)((d + 1) * g->P) * sizeof(double), "Hermite series");
  }
  if (!s && !(g->herm = nle__malloc(ctx, (n_crowded ? n_crowded : 1) * (d + 1) * g->P * sizeof(double), "Hermite series")))
    s = NLE_ERR_NOMEM;
  size_t n_nbr = neighbour_offsets(d, o.reach, NULL);
  g->trans_span = o.reach + 1;
  if (!s) {
    g->nbr = nle__malloc(ctx, n_nbr * sizeof *g->nbr, "the Gauss-transform neighbours");
    g->trans = nle__malloc(ctx, (size_t)(2 * g->trans_span + 1) * g->p * g->p * sizeof(double), "translation matrices");
    if (!g->nbr || !g->trans) s = NLE_ERR_NOMEM;
  }
  if (!s) {
    g->n_nbr = neighbour_offsets(d, o.reach, g->nbr);
    for (int k = -g->trans_span; k <= g->trans_span; k++)
      translation_matrix((double)k * g->side, g->p, g->trans + (size_t)(k + g->trans_span) * g->p * g->p);
    herm_job hj = {g, crowded};
    s = nle__for_blocks(ctx, "Gauss transform", n_crowded,
                        nle__threads_for(ctx, (double)src->rows * (double)((d + 1) * g->P)), g->P * sizeof(double),
                        hermite_box, &hj);
  }
  free(crowded);
  if (s) {
    nle__fgt_plan_free(&plan);
    return s;
  }
  *out = plan;
  return NLE_OK;
}

nle_status nle__fgt_plan_eval(nle_ctx *ctx, nle__fgt_plan *plan, const nle_matd *tgt, double *S, double *F) {
  fgt_plan *g = &plan->g;
  if (tgt->cols != g->d) return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: targets of another dimension");
  if (tgt->rows > INT32_MAX) return nle__fail(ctx, NLE_ERR_ARG, "fast Gauss transform: at most %d points", INT32_MAX);
  int same = tgt == plan->src || (tgt->data == plan->src->data && tgt->rows == plan->n_src);
  g->tgt = tgt->data;
  g->S = S;
  g->F = F;
  nle_status s = NLE_OK;
  if (same) g->tb = g->sb;
  else s = sort_points(ctx, g, tgt->data, tgt->rows, &g->tb);
  fgt_job job = {g};
  if (!s)
    s = nle__for_blocks(ctx, "Gauss transform", g->tb.n_occupied, nle__threads_for(ctx, (double)tgt->rows * 400.0),
                        (g->d + 5) * g->P * sizeof(double), target_box, &job);
  if (!same) free_boxes(&g->tb);
  memset(&g->tb, 0, sizeof g->tb);
  return s;
}

nle_status nle__fgt_sums(nle_ctx *ctx, const nle_matd *src, const nle_matd *tgt, const nle_fgt_opts *opts,
                         double *S, double *F) {
  nle__fgt_plan *plan = NULL;
  nle_status s = nle__fgt_plan_new(ctx, src, tgt, opts, &plan);
  if (!s) s = nle__fgt_plan_eval(ctx, plan, tgt, S, F);
  nle__fgt_plan_free(&plan);
  return s;
}

nle_status nle_kernel_sums_fgt(nle_ctx *ctx, const nle_matd *X, const nle_fgt_opts *opts, double *S, double *Sx) {
  nle_status s = nle__kernel_sums_check(ctx, X, NLE_KERNEL_GAUSSIAN, "fast Gauss transform");
  if (s) return s;
  size_t n = X->rows, d = X->cols;
  double *F = nle__malloc(ctx, n * d * sizeof(double), "Gauss-transform moments");
  if (!F) return NLE_ERR_NOMEM;
  s = nle__fgt_sums(ctx, X, X, opts, S, F);
  for (size_t i = 0; !s && i < n; i++) {
    S[i] -= 1.0; /* the point itself: K(0) = 1, and no moment */
    for (size_t t = 0; Sx && t < d; t++) Sx[i * d + t] = F[i * d + t] + X->data[i * d + t] * (S[i]);
  }
  free(F);
  return s;
}
