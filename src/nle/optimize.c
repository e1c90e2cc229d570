/* optimize.c — partial-Hessian optimisers (dissertation sec. 3.3): the
 * direction solves B p = -g with B = I (gradient descent), 4 D+ (the
 * fixed-point diagonal of Carreira-Perpinan 2010) or 4 L+ + mu I (the
 * spectral direction: the attractive Hessian, sparsified to kappa neighbours,
 * mu = 1e-10 min L+_nn, whose CHOLMOD factor is computed once and reused for
 * every iteration and every one of the d columns); then a backtracking line
 * search for sufficient decrease from the last accepted step (linesearch.c).
 * Fixed-rate descent is in fixed_rate.c, checkpoints in checkpoint.c, the
 * helpers they all share in opt_base.c. */
#include "opt_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"

enum { STALL_ITERS = 5 };

void nle_opt_opts_init(nle_opt_opts *o) {
  o->kind = NLE_OPT_SD;
  o->kappa = 7;
  o->max_iters = 1000;
  o->tol = 1e-6;
  o->grad_tol = 1e-9;
  o->x_tol = 0.0;
  o->time_budget = 0.0;
  o->c1 = 1e-4;
  o->shrink = 0.5;
  o->memory = 10;
  o->fixed_rate = false;
  o->learning_rate = 200.0;
  o->learning_rate_final = NLE_AUTO;
  o->momentum = 0.8;
  o->gains = true;
  o->exaggeration = 1.0;
  o->exaggeration_iters = 250;
  o->sdm_tol = 0.1;
  o->sdm_iters = 50;
  o->accuracy_iters = 0;
  o->energy_every = 0;
  o->trace = NULL;
  o->trace_user = NULL;
}

/* The optimisers, one file each (opt_NAME.c defines nle__opt_NAME): the
 * one list of them. A row's place is its nle_opt_kind value, so the
 * public enum's names must follow this order; a new optimiser is appended. */
#define NLE__OPTIMIZERS(X) X(sd) X(fp) X(gd) X(lbfgs) X(cg) X(sdm)

#define DECLARE(name) extern const nle__optimizer nle__opt_##name;
NLE__OPTIMIZERS(DECLARE)
#undef DECLARE
#define ROW(name) &nle__opt_##name,
static const nle__optimizer *const optimizers[] = {NLE__OPTIMIZERS(ROW)};
#undef ROW
enum { N_OPTIMIZERS = sizeof optimizers / sizeof *optimizers };

const nle__optimizer *nle__optimizer_find(nle_opt_kind kind) {
  return kind >= 0 && (size_t)kind < N_OPTIMIZERS ? optimizers[kind] : NULL;
}

bool nle__opt_kind_known(nle_opt_kind kind) { return nle__optimizer_find(kind) != NULL; }

const char *nle_opt_name(nle_opt_kind kind) {
  if (kind == NLE_OPT_AUTO) return "auto";
  const nle__optimizer *t = nle__optimizer_find(kind);
  return t ? t->name : "unknown";
}

int nle_opt_parse(const char *name) {
  if (!name) return -1;
  if (!strcmp(name, "auto")) return NLE_OPT_AUTO;
  for (size_t i = 0; i < N_OPTIMIZERS; i++)
    if (!strcmp(name, optimizers[i]->name) || (optimizers[i]->alias && !strcmp(name, optimizers[i]->alias)))
      return (int)i;
  return -1;
}

void nle_opt_free(nle_opt **opt) {
  if (!opt || !*opt) return;
  nle_opt *p = *opt;
  if (p->state && p->type->state_free) p->type->state_free(p);
  free(p->state);
  free(p->run.velocity);
  free(p->run.gain);
  free(p->ckpt_path);
  free(p->ckpt_fingerprint);
  free(p);
  *opt = NULL;
}

nle_status nle_opt_new(nle_ctx *ctx, nle_model *model, const nle_csr *Wp, const nle_opt_opts *opts,
                       nle_opt **out) {
  *out = NULL;
  nle_opt_opts defaults;
  if (!opts) {
    nle_opt_opts_init(&defaults);
    opts = &defaults;
  }
  /* each option by its marker, so every client reads its own name */
#define BAD(...) return nle__fail(ctx, NLE_ERR_ARG, "optimiser: " __VA_ARGS__)
  bool final_ok = opts->learning_rate_final == NLE_AUTO || (opts->learning_rate_final > 0 && isfinite(opts->learning_rate_final));
  if (opts->fixed_rate && opts->kind != NLE_OPT_GD) BAD("fixed rates go with gradient descent ({@optimizer=gd})");
  if (opts->fixed_rate && !(opts->learning_rate > 0 && isfinite(opts->learning_rate)))
    BAD("{@learning-rate=%g} must be a finite number > 0", opts->learning_rate);
  if (opts->fixed_rate && !final_ok)
    BAD("{@final-learning-rate=%g} must be a finite number > 0, or auto", opts->learning_rate_final);
  if (!(opts->momentum >= 0 && opts->momentum < 1)) BAD("{@momentum=%g} must be in [0, 1)", opts->momentum);
  if (!(opts->exaggeration >= 1)) BAD("{@exaggeration=%g} must be >= 1", opts->exaggeration);
  if (opts->exaggeration_iters < 0) BAD("{@exaggeration-iters=%d} must be >= 0", opts->exaggeration_iters);
  if (opts->energy_every < 0) BAD("energy_every %d must be >= 0", opts->energy_every);
  const nle__optimizer *type = nle__optimizer_find(opts->kind);
  if (!type) BAD("{@optimizer} has no value %d", (int)opts->kind);
  if (opts->kappa < 0) BAD("{@kappa=%d} must be >= 0", opts->kappa);
  if (opts->memory < 1) BAD("memory %d (L-BFGS pairs) must be >= 1", opts->memory);
  if (opts->max_iters < 0) BAD("{@max-iters=%s} must be >= 0", nle__int_text(opts->max_iters).s);
  if (!(opts->tol >= 0)) BAD("{@tol=%s} must be >= 0", nle__real_text(opts->tol).s);
  if (!(opts->x_tol >= 0)) BAD("{@x-tol=%s} must be >= 0", nle__real_text(opts->x_tol).s);
  if (!(opts->c1 > 0 && opts->c1 < 1)) BAD("{@c1=%g} must be in (0, 1)", opts->c1);
  if (!(opts->shrink > 0 && opts->shrink < 1)) BAD("{@shrink=%g} must be in (0, 1)", opts->shrink);
  if (!(opts->sdm_tol > 0)) BAD("{@sdm-tol=%g} must be > 0", opts->sdm_tol);
  if (opts->sdm_iters < 1) BAD("{@sdm-iters=%d} must be >= 1", opts->sdm_iters);
  /* Distributed (issue 38): the fixed-rate schedule's sums are partition-
   * free; the line searches' inner products and SD's sparse solve are not
   * distributed yet. */
  if (nle__distributed(ctx) && !opts->fixed_rate)
    BAD("a distributed run takes the fixed-rate schedule ({@optimizer=gd} with fixed rates, t-SNE's default); "
        "{@optimizer=%s} with its line search runs in one process", type ? type->name : "?");
#undef BAD
  nle_opt *o = nle__calloc(ctx, 1, sizeof *o, "the optimiser");
  if (!o) return NLE_ERR_NOMEM;
  o->type = type;
  if (type->state_size && !(o->state = nle__calloc(ctx, 1, type->state_size, "the optimiser's state"))) {
    free(o);
    return NLE_ERR_NOMEM;
  }
  o->model = model;
  o->o = *opts;
  o->n = Wp->rows;
  /* Only the partial-Hessian directions read W+ (SD, SD-: its sparsified
   * Laplacian; FP: its degrees): gradient descent, L-BFGS and CG need no
   * copy (at 70,000 points the copy and its symmetrisation took 0.5 s of a
   * t-SNE run, at a million several seconds and gigabytes). */
  nle_csr *W = NULL;
  nle_status s = type->graph ? nle__opt_graph(ctx, Wp, type->graph == NLE__GRAPH_SPARSIFIED ? opts->kappa : 0, &W)
                             : NLE_OK;
  if (!s && type->state_init) s = type->state_init(ctx, o, &W);
  nle_csr_free(&W);
  if (s) {
    nle_opt_free(&o);
    return s;
  }
  *out = o;
  return NLE_OK;
}

nle_status nle_opt_direction(nle_ctx *ctx, nle_opt *o, const nle_matd *g, nle_matd *p) {
  return nle_opt_direction_at(ctx, o, NULL, g, p);
}

nle_status nle_opt_direction_at(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p) {
  size_t n = g->rows, d = g->cols;
  if (o->type->needs_x && (!X || X->rows != n || X->cols != d))
    return nle__fail(ctx, NLE_ERR_ARG, "optimiser: %s needs the current X (%zu x %zu) for its direction",
                     o->type->name, n, d);
  if ((int64_t)n != o->n || p->rows != n || p->cols != d)
    return nle__fail(ctx, NLE_ERR_ARG, "optimiser: gradient and direction must be %lld x d", (long long)o->n);
  /* The history-free part; nle_opt_run adds the quasi-Newton and conjugate
   * corrections. */
  return o->type->direction(ctx, o, o->type->needs_x ? X : NULL, g, p);
}

/* |scale delta| / |x| (Frobenius) for the step x -> x + scale delta: the EE
 * paper's stopping test. */
static double relative_change(const double *delta, const double *x, size_t len, double scale) {
  double dd = 0.0, xx = 0.0;
  for (size_t i = 0; i < len; i++) {
    dd += delta[i] * delta[i];
    xx += x[i] * x[i];
  }
  return xx > 0 ? fabs(scale) * sqrt(dd / xx) : INFINITY;
}

nle_opt_state *nle__opt_state(nle_opt *o) { return &o->run; }

/* A fresh run's state (a resumed one keeps what the checkpoint restored). */
static nle_status run_begin(nle_ctx *ctx, nle_opt *o, size_t len) {
  nle_opt_state *r = &o->run;
  if (r->active) return NLE_OK;
  memset(&r->rep, 0, sizeof r->rep);
  r->E = 0.0;
  r->step = 1.0;
  r->prev_slope = 0.0;
  r->stalled = 0;
  free(r->velocity);
  free(r->gain);
  r->velocity = r->gain = NULL;
  r->active = 1;
  return nle__opt_history_reset(ctx, o, len);
}

static nle_status opt_run(nle_ctx *ctx, nle_opt *o, nle_matd *X, nle_opt_report *out);

nle_status nle_opt_run(nle_ctx *ctx, nle_opt *o, nle_matd *X, nle_opt_report *out) {
  bool opened = nle__stage_begin(ctx, "optimising");
  nle_status s = opt_run(ctx, o, X, out);
  nle__stage_end(ctx, opened);
  return s;
}

/* E and its gradient (into Gt) at X + step P: the line search's trial. */
typedef struct {
  nle_ctx *ctx;
  nle_model *model;
  const nle_matd *X, *P;
  nle_matd *Xt, *Gt;
} model_trial;

static nle_status model_at_step(void *user, double step, double *E) {
  model_trial *t = user;
  size_t len = t->X->rows * t->X->cols;
  for (size_t i = 0; i < len; i++) t->Xt->data[i] = t->X->data[i] + step * t->P->data[i];
  return nle_model_eval(t->ctx, t->model, t->Xt, E, t->Gt);
}

static nle_status opt_run(nle_ctx *ctx, nle_opt *o, nle_matd *X, nle_opt_report *out) {
  size_t n = X->rows, d = X->cols;
  memset(out, 0, sizeof *out);
  if ((int64_t)n != o->n) return nle__fail(ctx, NLE_ERR_ARG, "optimiser: X has %zu rows, the model %lld", n, (long long)o->n);
  int resumed = o->run.active;
  nle_status s = run_begin(ctx, o, n * d);
  if (s) return s;
  if (o->o.fixed_rate) return nle__opt_run_fixed_rate(ctx, o, o->model, X, out);
  nle_opt_state *r = &o->run;
  nle_opt_report *rep = &r->rep;
  double t0 = nle_time_seconds(), seconds0 = rep->seconds;
  nle_matd *G = NULL, *P = NULL, *Xt = NULL, *Gt = NULL;
  s = nle_matd_alloc(ctx, n, d, &G);
  if (!s) s = nle_matd_alloc(ctx, n, d, &P);
  if (!s) s = nle_matd_alloc(ctx, n, d, &Xt);
  if (!s) s = nle_matd_alloc(ctx, n, d, &Gt);
  /* The gradient at X: a resumed run recomputes it (bit for bit the same),
   * without counting the evaluation again. */
  double E = 0.0;
  nle__opt_schedule_accuracy(ctx, o, rep->iterations);
  if (!s) s = nle_model_eval(ctx, o->model, X, &E, G);
  if (!s && !resumed) {
    rep->evaluations = 1;
    rep->E0 = r->E = E;
  }
  while (!s && rep->iterations < o->o.max_iters) {
    if (nle__opt_max_abs(ctx, G) <= o->o.grad_tol) {
      rep->converged = true;
      break;
    }
    if (o->o.time_budget > 0 && rep->seconds >= o->o.time_budget) break;
    /* A new accuracy: E and G again at X, so the line search compares values
     * of one approximation. */
    if (rep->iterations > 0 && nle__opt_schedule_accuracy(ctx, o, rep->iterations)) {
      s = nle_model_eval(ctx, o->model, X, &E, G);
      if (s) break;
      rep->evaluations++;
      r->E = E;
    }
    s = nle_opt_direction_at(ctx, o, X, G, P);
    if (s) break;
    const nle__optimizer *type = o->type;
    bool had_history = type->history_apply && type->history_apply(o, G->data, P->data);
    double slope = nle__opt_dot(G->data, P->data, n * d);
    int restarted = 0;
    if (!(slope < 0.0) && type->history_apply) {
      /* Not downhill (can happen for CG, or L-BFGS after rounding): restart. */
      for (size_t i = 0; i < n * d; i++) P->data[i] = -G->data[i];
      slope = -nle__opt_dot(G->data, G->data, n * d);
      restarted = 1;
    }
    int history = had_history && !restarted;
    /* First trial steps (Nocedal and Wright sec. 3.5): directions without a
     * curvature scale start at 1 / |p| the first time, then at the previous
     * step times the ratio of the slopes; SD and FP keep the last accepted
     * step, L-BFGS with history takes 1. */
    double step = r->step;
    if (type->first_step == NLE__FIRST_STEP_QUASI_NEWTON && history) step = 1.0; /* its own scale */
    else if (type->first_step != NLE__FIRST_STEP_KEEP) {
      if (rep->iterations == 0 || (!history && type->history_apply))
        step = 1.0 / sqrt(nle__opt_dot(P->data, P->data, n * d));
      else if (r->prev_slope < 0) step = fmin(step * r->prev_slope / slope, 1e3 * step);
    }
    if (!(slope < 0.0)) { /* cannot happen for pd B, but rounding near a minimum */
      rep->converged = true;
      break;
    }
    /* Backtracking from the last accepted step (Armijo sufficient decrease). */
    double Et = 0.0;
    int evaluations = 0;
    bool accepted = false;
    nle__armijo armijo = {o->o.c1, o->o.shrink, 60};
    model_trial trial = {ctx, o->model, X, P, Xt, Gt};
    s = nle__armijo_backtrack(&armijo, E, slope, model_at_step, &trial, &step, &Et, &accepted, &evaluations);
    if (s) break;
    rep->evaluations += evaluations;
    if (!accepted) { /* no decrease at any step: a stationary point to rounding */
      rep->converged = true;
      break;
    }
    /* The iteration is complete: commit it to X and the run state at once,
     * so that a cancellation anywhere above leaves a resumable state. */
    int x_settled = o->o.x_tol > 0 && relative_change(P->data, X->data, n * d, step) <= o->o.x_tol;
    if (type->history_update) type->history_update(o, restarted, X->data, Xt->data, G->data, Gt->data, P->data);
    memcpy(X->data, Xt->data, n * d * sizeof(double));
    memcpy(G->data, Gt->data, n * d * sizeof(double));
    double decrease = E - Et;
    E = r->E = Et;
    r->step = step;
    r->prev_slope = slope;
    rep->iterations++;
    rep->seconds = seconds0 + nle_time_seconds() - t0;
    if (o->o.trace) o->o.trace(o->o.trace_user, rep->iterations, rep->seconds, E, rep->evaluations, step);
    /* One small decrease can be a short backtracked step, not convergence:
     * the tolerance must hold for STALL_ITERS iterations in a row. */
    r->stalled = decrease <= o->o.tol * fabs(E) ? r->stalled + 1 : 0;
    if (r->stalled >= STALL_ITERS || x_settled) {
      rep->converged = true;
      break;
    }
    if (o->ckpt_every && rep->iterations % o->ckpt_every == 0) s = nle__opt_checkpoint(ctx, o, X);
    if (!s && nle__progress(ctx, "optimising", (double)rep->iterations / (double)o->o.max_iters)) s = NLE_ERR_CANCELLED;
  }
  rep->E = E;
  rep->grad_max = G ? nle__opt_max_abs(ctx, G) : 0.0;
  rep->seconds = seconds0 + nle_time_seconds() - t0;
  nle_matd_free(&G);
  nle_matd_free(&P);
  nle_matd_free(&Xt);
  nle_matd_free(&Gt);
  *out = *rep;
  if (s == NLE_ERR_CANCELLED) return nle__opt_cancelled(ctx, o, X); /* the run stays resumable */
  r->active = 0;
  if (s) return s;
  if (!rep->converged)
    return nle__fail(ctx, NLE_WARN_NOT_CONVERGED, "optimiser: stopped after %d iterations (%.1f s) before the tolerance",
                     rep->iterations, rep->seconds);
  return NLE_OK;
}

