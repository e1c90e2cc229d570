/* entropic.c — entropic affinities (dissertation ch. 2): for every point the
 * precision beta_n at which its Gaussian distribution over its k nearest
 * neighbours has perplexity K, i.e. the root of F(log beta) = H - log K
 * (eq. 2.7), solved in log beta (sec. 2.3.1) inside the bounds of theorem
 * 2.2.2 by derivative steps safeguarded by bisection (algorithm 1), each
 * point warm-started from an earlier one (sec. 2.3.4). */
#include "affinity_internal.h"
#include "../neighbors/neighbors_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/vecmath.h"

void nle_ea_opts_init(nle_ea_opts *o) {
  o->perplexity = 30.0;
  o->root = NLE_ROOT_HOUSEHOLDER;
  o->order = NLE_ORDER_MST;
  o->kappa = 10;
  o->tol = 1e-10;
  o->maxit = 20;
  o->max_evals = 200;
  o->rescale = true;
}

void nle_ea_result_free(nle_ea_result **r) {
  if (!r || !*r) return;
  free((*r)->beta);
  nle_csr_free(&(*r)->P);
  free(*r);
  *r = NULL;
}

/* F and its first two derivatives in alpha = log beta (sec. 2.3.1), from the
 * weights w (n + 1 slots: the weights, then the alpha they were made at),
 * distances shifted by the nearest one (the entropy does not change, and
 * exp(-beta e) cannot underflow for the nearest). Central moments keep the
 * variance and the third moment accurate: F' = -beta^2 var,
 * F'' = -2 beta^2 var + beta^3 mu3 (eq. 2.5 in log form). */
typedef struct {
  double f, df, d2f;
} feval;

static feval evaluate(const double *e, int n, double alpha, double log_k, double *w) {
  double beta = exp(alpha), z = 0.0, s1 = 0.0;
  /* Vectorised exponentials (libmvec; the build uses -fno-math-errno). */
#pragma omp simd reduction(+ : z, s1)
  for (int j = 0; j < n; j++) {
    w[j] = exp(-beta * e[j]);
    z += w[j];
    s1 += w[j] * e[j];
  }
  w[n] = alpha; /* which log beta the weights belong to (see solve_point) */
  double m1 = s1 / z, var = 0.0, mu3 = 0.0;
#pragma omp simd reduction(+ : var, mu3)
  for (int j = 0; j < n; j++) {
    double c = e[j] - m1, pc2 = w[j] * c * c;
    var += pc2;
    mu3 += pc2 * c;
  }
  var /= z;
  mu3 /= z;
  feval r = {beta * m1 + log(z) - log_k, -beta * beta * var, -2.0 * beta * beta * var + beta * beta * beta * mu3};
  return r;
}

void nle__ea_evaluate(const double *d, int n, double alpha, double log_k, double f[3]) {
  double *e = malloc(2 * ((size_t)n + 1) * sizeof *e), d0 = d[0];
  if (!e) {
    f[0] = f[1] = f[2] = NAN;
    return;
  }
  for (int j = 1; j < n; j++) d0 = fmin(d0, d[j]);
  for (int j = 0; j < n; j++) e[j] = d[j] - d0;
  feval v = evaluate(e, n, alpha, log_k, e + n + 1);
  f[0] = v.f;
  f[1] = v.df;
  f[2] = v.d2f;
  free(e);
}

double nle_ea_entropy(const double *d, int n, double beta) {
  double d0 = d[0], z = 0.0, s1 = 0.0;
  for (int j = 0; j < n; j++) {
    double w = exp(-beta * (d[j] - d0));
    z += w;
    s1 += w * (d[j] - d0);
  }
  return beta * s1 / z + log(z);
}

/* Eq. 2.11 for u = 1 - p1 in (0, 1/4]: g(u) = 2u log(n / 2u) - log min(sqrt(2n), K)
 * increases on that interval; Newton safeguarded by bisection. */
double nle_ea_p1(int n, double K) {
  double c = log(fmin(sqrt(2.0 * n), K)), lo = 1e-300, hi = 0.25, u = 0.125;
  for (int it = 0; it < 200; it++) {
    double g = 2.0 * u * log(n / (2.0 * u)) - c;
    if (g > 0) hi = u;
    else lo = u;
    double dg = 2.0 * log(n / (2.0 * u)) - 2.0, next = u - g / dg;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (fabs(next - u) <= 1e-16 * u) {
      u = next;
      break;
    }
    u = next;
  }
  return 1.0 - u;
}

int nle_ea_bounds(const double *d, int n, double K, double p1, double *log_lo, double *log_hi) {
  double span = d[n - 1] - d[0];
  if (!(span > 0.0)) return -1;
  /* Delta_2: the gap to the first neighbour farther than the nearest (the
   * text's remedy for d_1 = d_2, e.g. exact duplicates). */
  int j = 1;
  while (d[j] == d[0]) j++;
  double gap2 = d[j] - d[0], lk = log(n / K);
  /* Eq. 2.9 on the shifted distances (d_1 = 0), where its second term is
   * tightest; eq. 2.10. */
  double lo = fmax((double)n / (n - 1.0) * lk / span, sqrt(lk) / span);
  double hi = log(p1 / (1.0 - p1) * (n - 1.0)) / gap2;
  *log_lo = log(lo);
  *log_hi = log(hi);
  return 0;
}

typedef struct {
  double alpha;  /* the solution, log beta */
  int steps;     /* iterates after the starting point */
  int evals;     /* evaluations of F */
  int bisected;  /* a bisection step was taken */
  int converged;
  double error;  /* |F| at the solution */
} root_result;

enum { SERIES_ORDER = 8 };

/* A Householder step of order SERIES_ORDER. With Y = beta0 e (dimensionless)
 * and kappa_n its cumulants under p, F(beta0 (1 + t)) = sum_n a_n t^n with
 * a_0 = F and a_n = (-1)^n / n! (kappa_{n+1} - (n - 1) kappa_n) for n >= 1
 * (from log Z(beta0 + D) = log Z0 + sum kappa_n (-D)^n / n! and
 * H = beta m_1 + log Z). The root of the truncated series nearest 0 is found
 * by Newton on the polynomial from the Halley step; the result is a step in
 * log beta, NAN if the polynomial gives no usable root. */
static double series_step(const double *e, int n, double alpha, double f, const double *w, double halley) {
  double beta = exp(alpha), z = 0.0, mean = 0.0;
#pragma omp simd reduction(+ : z, mean)
  for (int j = 0; j < n; j++) {
    z += w[j];
    mean += w[j] * e[j];
  }
  mean = beta * mean / z;
  /* Central moments 2..9 of Y = beta e, one accumulator each so the loop
   * vectorises over the neighbours. */
  double m2 = 0, m3 = 0, m4 = 0, m5 = 0, m6 = 0, m7 = 0, m8 = 0, m9 = 0;
#pragma omp simd reduction(+ : m2, m3, m4, m5, m6, m7, m8, m9)
  for (int j = 0; j < n; j++) {
    double c = beta * e[j] - mean, p2 = w[j] * c * c, p4 = p2 * c * c, p6 = p4 * c * c, p8 = p6 * c * c;
    m2 += p2;
    m3 += p2 * c;
    m4 += p4;
    m5 += p4 * c;
    m6 += p6;
    m7 += p6 * c;
    m8 += p8;
    m9 += p8 * c;
  }
  double mu[SERIES_ORDER + 2] = {0, 0, m2 / z, m3 / z, m4 / z, m5 / z, m6 / z, m7 / z, m8 / z, m9 / z};
  /* Cumulants from central moments: kappa_q = mu_q - sum_{m=2}^{q-2} C(q-1, m-1) kappa_m mu_{q-m}. */
  double kappa[SERIES_ORDER + 2] = {0, mean};
  for (int q = 2; q <= SERIES_ORDER + 1; q++) {
    double k = mu[q], binom = 1.0; /* C(q-1, m-1), starting at m = 1 */
    for (int m = 2; m <= q - 2; m++) {
      binom = binom * (double)(q - m + 1) / (double)(m - 1);
      k -= binom * kappa[m] * mu[q - m];
    }
    kappa[q] = k;
  }
  double a[SERIES_ORDER + 1] = {f}, fact = 1.0;
  for (int q = 1; q <= SERIES_ORDER; q++) {
    fact *= q;
    a[q] = ((q % 2) ? -1.0 : 1.0) / fact * (kappa[q + 1] - (q - 1) * kappa[q]);
  }
  double t = expm1(halley);
  for (int it = 0; it < 40; it++) {
    double p = a[SERIES_ORDER], dp = 0.0;
    for (int q = SERIES_ORDER - 1; q >= 0; q--) {
      dp = dp * t + p;
      p = p * t + a[q];
    }
    double next = t - p / dp;
    if (!isfinite(next) || next <= -1.0) return NAN;
    if (fabs(next - t) <= 1e-15 * (1.0 + fabs(t))) {
      t = next;
      break;
    }
    t = next;
  }
  return t > -1.0 ? log1p(t) : NAN;
}

/* One derivative step of the chosen method (eqs. 2.13, 2.14, Newton). */
static double derivative_step(nle_root_method m, feval v) {
  double newton = -v.f / v.df;
  if (m == NLE_ROOT_NEWTON) return newton;
  if (m == NLE_ROOT_HALLEY) return -2.0 * v.f * v.df / (2.0 * v.df * v.df - v.f * v.d2f);
  /* Euler: the root of F + F' p + F'' p^2 / 2 nearer to 0; Newton when the
   * parabola misses the axis or is flat. */
  double disc = v.df * v.df - 2.0 * v.d2f * v.f;
  if (disc < 0.0 || fabs(v.d2f) < 1e-300) return newton;
  double q = -0.5 * (v.df + copysign(sqrt(disc), v.df)); /* stable roots q/a, c/q */
  double r1 = q / (0.5 * v.d2f), r2 = v.f / q;
  return fabs(r1) < fabs(r2) ? r1 : r2;
}

/* Algorithm 1: derivative steps while they stay inside the bracket (at most
 * maxit in a row), otherwise bisection; the bracket shrinks with every
 * evaluation because F decreases in log beta. Plain bisection when the method
 * is NLE_ROOT_BISECTION. */
static root_result solve_safeguarded(const double *e, int n, double log_k, double lo, double hi, double x,
                                     const nle_ea_opts *o, double *w) {
  root_result r = {x, 0, 0, 0, 0, INFINITY};
  int inner = 0, derivative = o->root == NLE_ROOT_HALLEY || o->root == NLE_ROOT_EULER ||
                             o->root == NLE_ROOT_NEWTON || o->root == NLE_ROOT_HOUSEHOLDER;
  for (;;) {
    feval v = evaluate(e, n, x, log_k, w);
    r.evals++;
    r.alpha = x;
    r.error = fabs(v.f);
    if (r.error <= o->tol) {
      r.converged = 1;
      return r;
    }
    if (v.f > 0) lo = x;
    else hi = x;
    if (hi - lo <= 4e-16 * fmax(1.0, fabs(x))) { /* the bracket is one float wide */
      r.converged = 1;
      return r;
    }
    if (r.evals >= o->max_evals) return r;
    double next = NAN;
    if (derivative && inner < o->maxit) {
      if (o->root == NLE_ROOT_HOUSEHOLDER) {
        double h = derivative_step(NLE_ROOT_HALLEY, v), step = series_step(e, n, x, v.f, w, h);
        next = x + (isfinite(step) ? step : h);
      } else {
        next = x + derivative_step(o->root, v);
      }
    }
    if (next > lo && next < hi) {
      inner++;
    } else {
      next = 0.5 * (lo + hi);
      inner = 0;
      r.bisected = 1;
    }
    x = next;
    r.steps++;
  }
}

/* Brent's method (van Wijngaarden-Dekker-Brent) and Ridder's method on a
 * bracket [a, b] with F(a) > 0 > F(b); the starting point is evaluated first
 * and narrows the bracket. Stops at |F| <= tol. */
static root_result solve_bracketing(const double *e, int n, double log_k, double a, double b, double x0,
                                    const nle_ea_opts *o, double *w) {
  root_result r = {x0, 0, 0, 0, 0, INFINITY};
#define EVAL(x) (r.evals++, evaluate(e, n, (x), log_k, w).f)
  double f0 = EVAL(x0);
  r.error = fabs(f0);
  if (r.error <= o->tol) {
    r.converged = 1;
    return r;
  }
  double fa, fb;
  if (f0 > 0) {
    a = x0;
    fa = f0;
    fb = EVAL(b);
  } else {
    b = x0;
    fb = f0;
    fa = EVAL(a);
  }
  r.steps++;
  if (o->root == NLE_ROOT_RIDDER) {
    while (r.evals < o->max_evals) {
      double m = 0.5 * (a + b), fm = EVAL(m), s = sqrt(fm * fm - fa * fb);
      r.steps++;
      if (fabs(fm) <= o->tol || s == 0.0) {
        r.alpha = m, r.error = fabs(fm), r.converged = fabs(fm) <= o->tol;
        break;
      }
      double x = m + (m - a) * (fa > fb ? 1.0 : -1.0) * fm / s, fx = EVAL(x);
      r.steps++;
      r.alpha = x;
      r.error = fabs(fx);
      if (r.error <= o->tol) {
        r.converged = 1;
        break;
      }
      if ((fm > 0) != (fx > 0)) {
        a = m, fa = fm, b = x, fb = fx;
        if (a > b) { double t = a; a = b; b = t; t = fa; fa = fb; fb = t; }
      } else if ((fa > 0) != (fx > 0)) {
        b = x, fb = fx;
      } else {
        a = x, fa = fx;
      }
      if (b - a <= 4e-16 * fmax(1.0, fabs(x))) {
        r.converged = 1;
        break;
      }
    }
    return r;
  }
  /* Brent: b is the best iterate, a the previous one, c the contrapoint. */
  double c = b, fc = fb, d = b - a, ee = d;
  for (;;) {
    if ((fb > 0) == (fc > 0)) { c = a; fc = fa; d = b - a; ee = d; }
    if (fabs(fc) < fabs(fb)) { a = b; b = c; c = a; fa = fb; fb = fc; fc = fa; }
    r.alpha = b;
    r.error = fabs(fb);
    double tol1 = 2e-16 * fabs(b) + 1e-300, xm = 0.5 * (c - b);
    if (r.error <= o->tol || fabs(xm) <= tol1) {
      r.converged = 1;
      break;
    }
    if (r.evals >= o->max_evals) break;
    if (fabs(ee) >= tol1 && fabs(fa) > fabs(fb)) {
      double s = fb / fa, p, q;
      if (a == c) {
        p = 2.0 * xm * s;
        q = 1.0 - s;
      } else {
        double qq = fa / fc, rr = fb / fc;
        p = s * (2.0 * xm * qq * (qq - rr) - (b - a) * (rr - 1.0));
        q = (qq - 1.0) * (rr - 1.0) * (s - 1.0);
      }
      if (p > 0) q = -q;
      p = fabs(p);
      if (2.0 * p < fmin(3.0 * xm * q - fabs(tol1 * q), fabs(ee * q))) {
        ee = d;
        d = p / q;
      } else {
        d = xm;
        ee = d;
      }
    } else {
      d = xm;
      ee = d;
    }
    a = b;
    fa = fb;
    b += fabs(d) > tol1 ? d : copysign(tol1, xm);
    fb = EVAL(b);
    r.steps++;
  }
#undef EVAL
  return r;
}

/* The SNE/t-SNE reference codes' search: bisection on beta itself, starting
 * at beta = 1 and doubling or halving until the root is bracketed. */
static root_result solve_classic(const double *e, int n, double log_k, const nle_ea_opts *o, double *w) {
  root_result r = {0.0, 0, 0, 1, 0, INFINITY};
  double beta = 1.0, bmin = 0.0, bmax = INFINITY;
  while (r.evals < o->max_evals) {
    double f = evaluate(e, n, log(beta), log_k, w).f;
    r.evals++;
    r.alpha = log(beta);
    r.error = fabs(f);
    if (r.error <= o->tol) {
      r.converged = 1;
      break;
    }
    if (f > 0) {
      bmin = beta;
      beta = isinf(bmax) ? beta * 2.0 : 0.5 * (beta + bmax);
    } else {
      bmax = beta;
      beta = 0.5 * (beta + bmin);
    }
    if (isfinite(bmax) && bmax - bmin <= 4e-16 * bmax) {
      r.converged = 1;
      break;
    }
    r.steps++;
  }
  return r;
}

/* Counts the neighbours tied with the nearest. */
static int nearest_ties(const double *d, int n) {
  int m = 1;
  while (m < n && d[m] == d[0]) m++;
  return m;
}

typedef struct {
  const nle_csr *knn;
  const nle_ea_opts *o;
  double log_k, p1;
  int k;
  double *alpha;      /* per point, NAN until solved */
  double *scale;      /* per point distance scale for rescaled warm starts, or NULL */
  nle_ea_result *res;
  int *steps, *evals; /* per point */
  uint8_t *bisected, *converged, *degenerate;
  double *error;
} ea_job;

/* The warm start of point i from its parent (sec. 2.3.4), rescaled when
 * asked: H depends on the distances only through beta d, so for a child whose
 * shifted distance profile is c times the parent's the root is the parent's
 * beta / c. c is the ratio of the points' scales (see point_scales). */
static double warm_start(const ea_job *j, int64_t i, int64_t parent) {
  if (parent < 0 || !isfinite(j->alpha[parent])) return NAN;
  double start = j->alpha[parent];
  if (!j->scale || !(j->scale[parent] > 0.0) || !(j->scale[i] > 0.0)) return start;
  return start + log(j->scale[parent] / j->scale[i]);
}

/* Per point the sum of its first 2K squared distances minus the nearest: of
 * the statistics tried (the K-th distance, geometric means, affinity-weighted
 * means) the one whose rescaled warm starts were closest on Fashion-MNIST,
 * blobs and the Swiss roll. */
static void point_scales(const nle_csr *g, int k, double perplexity, double *scale, int threads) {
  double twice = 2.0 * ceil(perplexity); /* in double: no int overflow for a huge perplexity */
  int m = twice < (double)k ? (int)twice : k;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < g->rows; i++) {
    int64_t q = g->rowptr[i];
    double d0 = nle_csr_value(g, q), sum = 0.0;
    if (g->dtype == NLE_F32)
      for (int t = 1; t < m; t++) sum += (double)((const float *)g->val)[q + t] - d0;
    else
      for (int t = 1; t < m; t++) sum += ((const double *)g->val)[q + t] - d0;
    scale[i] = sum;
  }
}

/* One row: e[0..k) its sorted squared distances (shifted by the nearest in
 * place), from the starting log beta `start` (NAN: middle of the bounds);
 * writes p[0..k) (normalised), *beta and *degenerate; w: k + 1 doubles. */
static root_result solve_row(const nle_ea_opts *o, double log_k, double p1, double *e, int k, double start, double *p,
                             double *w, double *beta, int *degenerate) {
  root_result r = {NAN, 0, 0, 0, 1, 0.0};
  int ties = nearest_ties(e, k);
  /* No beta reaches K when at least K neighbours share the nearest distance
   * (e.g. K exact duplicates): the limit beta -> infinity is uniform over
   * those ties, beta = 0 when all k are tied. */
  *degenerate = (double)ties >= o->perplexity;
  if (*degenerate) {
    for (int t = 0; t < k; t++) p[t] = t < ties ? 1.0 / ties : 0.0;
    double lo, hi;
    *beta = ties == k || nle_ea_bounds(e, k, o->perplexity, p1, &lo, &hi) ? 0.0 : exp(hi);
    return r;
  }
  double d0 = e[0], lo, hi;
  for (int t = 0; t < k; t++) e[t] -= d0;
  nle_ea_bounds(e, k, o->perplexity, p1, &lo, &hi);
  double x = (isfinite(start) && start > lo && start < hi) ? start : 0.5 * (lo + hi);
  if (o->root == NLE_ROOT_CLASSIC) r = solve_classic(e, k, log_k, o, w);
  else if (o->root == NLE_ROOT_BRENT || o->root == NLE_ROOT_RIDDER) r = solve_bracketing(e, k, log_k, lo, hi, x, o, w);
  else r = solve_safeguarded(e, k, log_k, lo, hi, x, o, w);
  /* P from the weights of the last evaluation when it was at the solution
   * (always, for the safeguarded solvers), otherwise afresh. */
  double z = 0.0;
  if (w[k] != r.alpha) evaluate(e, k, r.alpha, log_k, w);
  for (int t = 0; t < k; t++) z += w[t];
  for (int t = 0; t < k; t++) p[t] = w[t] / z;
  *beta = exp(r.alpha);
  return r;
}

double nle__ea_row(const double *d, int k, double perplexity, double start, double *p, double *scratch) {
  nle_ea_opts o;
  nle_ea_opts_init(&o);
  o.perplexity = perplexity;
  double *e = scratch, *w = e + k, beta = 0.0;
  int degenerate;
  memcpy(e, d, (size_t)k * sizeof(double));
  solve_row(&o, log(perplexity), nle_ea_p1(k, perplexity), e, k, start, p, w, &beta, &degenerate);
  return beta;
}

/* Solves point i from the starting log beta `start` (NAN: middle of the
 * bounds); writes beta, P's row and the statistics. */
static void solve_point(ea_job *j, int64_t i, double start, double *e, double *w) {
  int k = j->k, degenerate;
  int64_t row = j->knn->rowptr[i];
  double *p = (double *)j->res->P->val + row;
  if (j->knn->dtype == NLE_F32)
    for (int t = 0; t < k; t++) e[t] = ((const float *)j->knn->val)[row + t];
  else
    memcpy(e, (const double *)j->knn->val + row, (size_t)k * sizeof(double));
  root_result r = solve_row(j->o, j->log_k, j->p1, e, k, start, p, w, &j->res->beta[i], &degenerate);
  j->degenerate[i] = (uint8_t)degenerate;
  j->converged[i] = (uint8_t)r.converged;
  j->alpha[i] = degenerate ? NAN : r.alpha;
  if (degenerate) return;
  j->steps[i] = r.steps;
  j->evals[i] = r.evals;
  j->bisected[i] = (uint8_t)r.bisected;
  j->error[i] = r.error;
}

static nle_status check_graph(nle_ctx *ctx, const nle_csr *knn, int64_t n, const nle_ea_opts *o, int *k) {
  /* Query points (rows) against training points (columns) have no order to
   * follow: they are solved independently, from their bounds. n: the rows
   * of every rank. */
  if (n < 1 || knn->cols < 2 || (n != knn->cols && o->order != NLE_ORDER_BOUNDS))
    return nle__fail(ctx, NLE_ERR_ARG, "entropic affinities need a square kNN graph of at least 2 points (or the "
                                       "bounds order for query points)");
  double widest = knn->rows ? (double)(knn->rowptr[1] - knn->rowptr[0]) : 0.0;
  nle_status s = nle__comm_max_d(ctx, &widest, 1); /* a rank without rows learns k from the others */
  if (s) return s;
  int64_t kk = (int64_t)widest;
  for (int64_t i = 0; i < knn->rows; i++) {
    if (knn->rowptr[i + 1] - knn->rowptr[i] != kk)
      return nle__fail(ctx, NLE_ERR_ARG, "entropic affinities need k neighbours on every row (row %lld differs)",
                       (long long)i);
    for (int64_t t = knn->rowptr[i]; t < knn->rowptr[i + 1]; t++) {
      double v = nle_csr_value(knn, t);
      if (!(v >= 0.0) || !isfinite(v) || (t > knn->rowptr[i] && v < nle_csr_value(knn, t - 1)))
        return nle__fail(ctx, NLE_ERR_ARG, "kNN graph row %lld: squared distances must be finite, >= 0 and sorted",
                         (long long)i);
    }
  }
  if (!(o->perplexity > 1.0) || o->perplexity >= (double)kk || o->perplexity >= (double)knn->cols)
    return nle__fail(ctx, NLE_ERR_ARG,
                     "{@perplexity=%g} must be above 1 and below the number of neighbours, %lld ({@neighbors}; "
                     "about 3 x perplexity is usual), and of points, %lld",
                     o->perplexity, (long long)kk, (long long)knn->cols);
  if (!(o->tol > 0.0) || o->maxit < 1 || o->max_evals < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "entropic affinities: tol, maxit and max_evals must be positive");
  if ((unsigned)o->root >= NLE_ROOT_COUNT) return nle__fail(ctx, NLE_ERR_ARG, "entropic affinities: unknown root finder %d", (int)o->root);
  *k = (int)kk;
  return NLE_OK;
}

static nle_status ea_allocate(nle_ctx *ctx, const nle_csr *knn, ea_job *j) {
  int64_t n = knn->rows;
  nle_ea_result *r = nle__calloc(ctx, 1, sizeof *r, "the affinity result");
  if (!r) return NLE_ERR_NOMEM;
  j->res = r;
  r->n = n;
  r->beta = nle__calloc(ctx, (size_t)n, sizeof(double), "betas");
  nle_status s = nle_csr_alloc(ctx, n, knn->cols, knn->nnz, NLE_F64, &r->P);
  j->alpha = nle__malloc(ctx, (size_t)n * sizeof(double), "log betas");
  j->error = nle__calloc(ctx, (size_t)n, sizeof(double), "errors");
  j->steps = nle__calloc(ctx, (size_t)n, sizeof(int), "iteration counts");
  j->evals = nle__calloc(ctx, (size_t)n, sizeof(int), "evaluation counts");
  j->bisected = nle__calloc(ctx, (size_t)n, 4, "flags");
  if (s || !r->beta || !j->alpha || !j->error || !j->steps || !j->evals || !j->bisected)
    return s ? s : NLE_ERR_NOMEM;
  j->converged = j->bisected + n;
  j->degenerate = j->bisected + 2 * n;
  memcpy(r->P->rowptr, knn->rowptr, (size_t)(n + 1) * sizeof(int64_t));
  memcpy(r->P->colind, knn->colind, (size_t)knn->nnz * sizeof(int32_t));
  for (int64_t i = 0; i < n; i++) j->alpha[i] = NAN;
  return NLE_OK;
}

static void ea_job_free(ea_job *j) {
  free(j->alpha);
  free(j->scale);
  free(j->error);
  free(j->steps);
  free(j->evals);
  free(j->bisected);
}

/* Points of the "bounds" order are independent: blocks run in parallel. */
enum { EA_BLOCK = 1024 };

static int ea_block(void *job, size_t b, void *scratch) {
  ea_job *j = job;
  double *e = scratch, *w = e + j->k;
  int64_t i1 = (int64_t)((b + 1) * EA_BLOCK) < j->knn->rows ? (int64_t)((b + 1) * EA_BLOCK) : j->knn->rows;
  for (int64_t i = (int64_t)(b * EA_BLOCK); i < i1; i++) solve_point(j, i, NAN, e, w);
  return 0;
}

/* The counts over rows [from, to) of the job, summed over ranks (each
 * rank's own rows); n_total: the points of every rank. */
static nle_status ea_summarise(nle_ctx *ctx, ea_job *j, int64_t from, int64_t to, int64_t n_total) {
  nle_ea_result *r = j->res;
  int64_t counts[13] = {0}; /* steps, evaluations, unconverged, bisected, degenerate, the histogram */
  for (int64_t i = from; i < to; i++) {
    counts[0] += j->steps[i];
    counts[1] += j->evals[i];
    counts[2] += !j->converged[i];
    counts[3] += j->bisected[i];
    counts[4] += j->degenerate[i];
    counts[5 + (j->steps[i] < 7 ? j->steps[i] : 7)]++;
    if (!j->degenerate[i] && j->error[i] > r->max_error) r->max_error = j->error[i];
  }
  nle_status s = nle__comm_sum_i64(ctx, counts, 13);
  if (!s) s = nle__comm_max_d(ctx, &r->max_error, 1);
  if (s) return s;
  int64_t steps = counts[0], evals = counts[1], unconverged = counts[2], n = n_total;
  r->bisection_points = counts[3];
  r->degenerate_points = counts[4];
  memcpy(r->steps_histogram, counts + 5, sizeof r->steps_histogram);
  r->mean_iterations = (double)steps / (double)n;
  r->mean_evaluations = (double)evals / (double)n;
  if (r->degenerate_points == n)
    return nle__fail(ctx, NLE_ERR_VALUE,
                     "entropic affinities: every point has at least perplexity %g neighbours at its nearest distance "
                     "(constant or heavily duplicated data); no bandwidth gives that perplexity",
                     j->o->perplexity);
  nle__log(ctx, 1, "entropic affinities: %.3f iterations (%.3f evaluations) per point, %lld points bisected, %lld degenerate",
           r->mean_iterations, r->mean_evaluations, (long long)r->bisection_points, (long long)r->degenerate_points);
  if (unconverged)
    return nle__fail(ctx, NLE_WARN_NOT_CONVERGED,
                     "entropic affinities: %lld points missed the tolerance %g within %d evaluations (largest error %g)",
                     (long long)unconverged, j->o->tol, j->o->max_evals, r->max_error);
  return NLE_OK;
}

/* Marks the rows [mine) and their ancestors in the warm-start order: what
 * a rank solves to have its own rows' results as they are alone. */
static uint8_t *with_ancestors(nle_ctx *ctx, const int64_t *parent, int64_t n, const nle__row_range *mine) {
  uint8_t *solve = nle__calloc(ctx, (size_t)n, 1, "the points to solve");
  for (int64_t i = (int64_t)mine->begin; solve && i < (int64_t)mine->end; i++)
    for (int64_t up = i; up >= 0 && !solve[up]; up = parent[up]) solve[up] = 1;
  return solve;
}

/* Solves j's points: all of them, or (only != NULL) those rows and their
 * ancestors in the order. */
static nle_status ea_solve(nle_ctx *ctx, ea_job *j, const nle__row_range *only) {
  const nle_csr *knn = j->knn;
  const nle_ea_opts *opts = j->o;
  int64_t n = knn->rows;
  int k = j->k;
  nle_status s = ea_allocate(ctx, knn, j);
  if (!s && opts->order == NLE_ORDER_BOUNDS)
    return nle__for_blocks(ctx, "entropic affinities", (size_t)(n + EA_BLOCK - 1) / EA_BLOCK,
                           nle__threads_for(ctx, (double)n * k * 50), (2 * (size_t)k + 1) * sizeof(double), ea_block, j);
  if (!s && opts->rescale) {
    j->scale = nle__malloc(ctx, (size_t)n * sizeof(double), "point scales");
    if (!j->scale) s = NLE_ERR_NOMEM;
    else point_scales(knn, k, opts->perplexity, j->scale, nle__threads_for(ctx, (double)n * k));
  }
  int64_t *order = nle__malloc(ctx, (size_t)n * sizeof(int64_t), "the order");
  int64_t *parent = nle__malloc(ctx, (size_t)n * sizeof(int64_t), "the order's parents");
  double *work = nle__malloc(ctx, (2 * (size_t)k + 1) * sizeof(double), "work space");
  if (!s) s = (order && parent && work) ? nle__ea_order(ctx, knn, opts->order, opts->kappa, order, parent) : NLE_ERR_NOMEM;
  uint8_t *solve = !s && only ? with_ancestors(ctx, parent, n, only) : NULL;
  if (!s && only && !solve) s = NLE_ERR_NOMEM;
  for (int64_t t = 0; !s && t < n; t++) {
    int64_t i = order[t];
    if (!solve || solve[i]) solve_point(j, i, warm_start(j, i, parent[i]), work, work + k);
    if ((t & 4095) == 4095) s = nle__progress(ctx, "entropic affinities", (double)(t + 1) / (double)n);
  }
  if (!s) s = nle__progress(ctx, "entropic affinities", 1.0);
  free(solve);
  free(order);
  free(parent);
  free(work);
  return s;
}

/* Every rank's rows of the kNN graph (k on each), in rank order. */
static nle_status gather_graph(nle_ctx *ctx, const nle_csr *knn, const nle__rows *rows, int k, nle_csr **whole) {
  size_t width = knn->dtype == NLE_F64 ? sizeof(double) : sizeof(float), mine = (size_t)knn->rows * (size_t)k;
  nle_status s = nle__comm_agree(ctx, nle_csr_alloc(ctx, (int64_t)rows->n, knn->cols, (int64_t)rows->n * k,
                                                    knn->dtype, whole));
  if (!s) s = nle__comm_allgatherv(ctx, knn->colind, mine * sizeof(int32_t), (*whole)->colind, NULL);
  if (!s) s = nle__comm_allgatherv(ctx, knn->val, mine * width, (*whole)->val, NULL);
  for (size_t i = 0; !s && i <= rows->n; i++) (*whole)->rowptr[i] = (int64_t)i * k;
  return s;
}

/* The result's rows [mine) of the whole graph's, as this rank's result. */
static nle_status keep_rows(nle_ctx *ctx, nle_ea_result *r, const nle__row_range *mine) {
  nle_csr *P = NULL;
  nle_status s = nle__csr_rows(ctx, r->P, mine->begin, mine->end, &P);
  if (s) return s;
  nle_csr_free(&r->P);
  r->P = P;
  r->n = (int64_t)(mine->end - mine->begin);
  memmove(r->beta, r->beta + mine->begin, (size_t)r->n * sizeof(double));
  return NLE_OK;
}

nle_status nle_entropic_affinities(nle_ctx *ctx, const nle_csr *knn, const nle_ea_opts *opts, nle_ea_result **out) {
  *out = NULL;
  nle_ea_opts defaults;
  if (!opts) {
    nle_ea_opts_init(&defaults);
    opts = &defaults;
  }
  /* with a communicator, knn is this rank's rows of N (comm.h) */
  nle__rows rows;
  int k = 0;
  nle_status s = nle__comm_rows(ctx, (size_t)knn->rows, "entropic affinities", &rows);
  if (!s) s = nle__comm_agree(ctx, check_graph(ctx, knn, (int64_t)rows.n, opts, &k));
  if (s) return s;
  /* Points of the bounds order are independent: each rank solves its own.
   * The warm-start orders are global and sequential (a point starts from
   * its parent's root): each rank solves its rows and their ancestors in
   * the order, on the whole graph gathered. */
  bool gathered = nle__distributed(ctx) && opts->order != NLE_ORDER_BOUNDS;
  nle_csr *whole = NULL;
  if (gathered) s = gather_graph(ctx, knn, &rows, k, &whole);
  ea_job j = {gathered ? whole : knn, opts, log(opts->perplexity), nle_ea_p1(k, opts->perplexity), k, NULL, NULL, NULL,
              NULL, NULL, NULL, NULL, NULL, NULL};
  if (!s) s = ea_solve(ctx, &j, gathered ? &rows.mine : NULL);
  s = nle__comm_agree(ctx, s);
  if (!s) s = gathered ? ea_summarise(ctx, &j, (int64_t)rows.mine.begin, (int64_t)rows.mine.end, (int64_t)rows.n)
                       : ea_summarise(ctx, &j, 0, knn->rows, (int64_t)rows.n);
  if (s >= 0 && gathered) {
    nle_status kept = nle__comm_agree(ctx, keep_rows(ctx, j.res, &rows.mine));
    s = kept ? kept : s;
  }
  ea_job_free(&j);
  nle_csr_free(&whole);
  if (s < 0) {
    nle_ea_result_free(&j.res);
    return s;
  }
  *out = j.res;
  return s;
}
