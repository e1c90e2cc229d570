/* est_embed.c — the estimator family of the nonlinear embeddings (EE, t-EE,
 * s-SNE, t-SNE, SNE): nle_embed's options by the tool's names, F(y) and
 * f(x) through the trained model, its "model" file. */
#include "estimator_internal.h"

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const methods[] = {"tsne", "tee", "ee", "ssne", "sne", NULL};
#define EMBED_ABOUT(what, norm, recipe)                                                                     \
  what " embedding of INPUT (dissertation ch. 3; EE paper). Affinities W+ are entropic (perplexity) on the " \
       "kNN graph, symmetrised as (P + P^T) / 2" norm ". With no options it runs the model's best measured "  \
       "recipe (docs/embeddings.md): " recipe
static const char *const abouts[] = {
    EMBED_ABOUT("t-SNE", " and normalised to sum 1",
                "PCA-50 neighbours re-ranked in INPUT (large D and N), fixed-rate gradient descent with "
                "exaggeration 12 for 125 of 450 iterations, FFT repulsion."),
    EMBED_ABOUT("t-EE", "", "the homotopy over 5 lambda values from lambda / 100 to 0.03, 90 fixed-rate iterations each."),
    EMBED_ABOUT("EE", "", "perplexity 5, line-search spectral direction, lambda 100 / N."),
    EMBED_ABOUT("s-SNE", " and normalised to sum 1", "perplexity 5, line-search spectral direction."),
    EMBED_ABOUT("SNE", " (conditional P)", "perplexity 5, line-search spectral direction, exact repulsion."),
    NULL};

static int variant_of(const char *method) { return nle_model_parse(method); }

static void opts_init(void *opts, int variant) {
  nle_embed_opts *o = opts;
  nle_embed_opts_init(o);
  o->model = (nle_model_kind)variant;
}

NLE__ENUM_NAME_OF(nle_wneg_name, nle_wneg_kind)
NLE__ENUM_NAME_OF(nle_repulsion_name, nle_repulsion)
NLE__ENUM_NAME_OF(nle_opt_name, nle_opt_kind)
NLE__ENUM_NAME_OF(nle_step_name, nle_step_kind)
NLE__ENUM_NAME_OF(nle_init_name, nle_init_kind)
NLE__ENUM_NAME_OF(nle_knn_method_name, nle_knn_method)

#define AT(f) offsetof(nle_embed_opts, f)
#define INT(n, f) .name = n, .kind = NLE__OPT_INT, .offset = AT(f)
#define REAL(n, f) .name = n, .kind = NLE__OPT_REAL, .offset = AT(f)
#define ENUM(n, f, fn) .name = n, .kind = NLE__OPT_ENUM, .offset = AT(f), .auto_ok = true, .enum_name = fn##_of, \
                       .enum_parse = fn##_parse_int
#define EE_FAMILY (NLE__FOR(NLE_MODEL_EE) | NLE__FOR(NLE_MODEL_TEE))
#define EE_ONLY .scope = EE_FAMILY, .scope_text = "ee and tee"

/* The parse functions return int already; the names only need the cast. */
#define nle_wneg_name_parse_int nle_wneg_parse
#define nle_repulsion_name_parse_int nle_repulsion_parse
#define nle_opt_name_parse_int nle_opt_parse
#define nle_step_name_parse_int nle_step_parse
#define nle_init_name_parse_int nle_init_parse
#define nle_knn_method_name_parse_int nle_knn_method_parse

static const nle__option options[] = {
    {INT("dim", dim), NLE__INT_IN(1, 64), .short_name = 'd', .metavar = "N", .help = "embedding dimension"},
    {REAL("perplexity", perplexity), .auto_ok = true, NLE__REAL_IN(1, INFINITY, NLE__OPEN_LO), .short_name = 'p',
     .metavar = "K", .help = "perplexity of the entropic affinities (auto: neighbors / 3 when neighbors is given, else 30 for t-SNE "
             "and t-EE, 5 for EE, s-SNE and SNE)"},
    {INT("neighbors", k), .auto_ok = true, NLE__INT_FROM(2), .short_name = 'k', .metavar = "K", .json = "k",
     .help = "neighbours per point of the kNN graph, not counting the point (auto: 3 x perplexity, 12 with sigma)"},
    {REAL("sigma", sigma), .auto_ok = true, NLE__POSITIVE, .metavar = "S",
     .scope = EE_FAMILY | NLE__FOR(NLE_MODEL_SSNE) | NLE__FOR(NLE_MODEL_TSNE),
     .scope_text = "ee, tee, ssne and tsne (SNE needs conditional P)",
     .help = "W+ = Gaussian affinities exp(-d^2 / 2 sigma^2) on the kNN graph instead of entropic ones"},
    NLE__KNN_SEARCH_ROWS(nle_embed_opts, knn_method, knn_approx),
    {INT("pca", pca_dims), .auto_ok = true, NLE__INT_FROM(0), .metavar = "N",
     .help = "search the neighbours among N principal components, then re-rank them by their input distances "
             "(auto: 50 when D > 100 and N > 5,000; 0: off)"},
    {INT("pca-candidates", pca_candidates), .auto_ok = true, NLE__INT_FROM(0), .metavar = "C",
     .help = "pca: candidates per point re-ranked (auto: k; 0: keep the components' distances)"},
    {REAL("lambda", lambda), .auto_ok = true, NLE__POSITIVE, .metavar = "L",
     .help = "weight of the repulsion (auto: 1 for the SNE family, 100 / N for EE, 0.03 for t-EE)"},
    {ENUM("wneg", wneg, nle_wneg_name), EE_ONLY, .metavar = "NAME",
     .help = "repulsive weights: uniform, sqdist (squared input distances) or knn (on the kNN graph)"},
    {INT("wneg-dims", wneg_dims), NLE__INT_FROM(1), EE_ONLY, .metavar = "N",
     .help = "wneg sqdist with a fast engine: principal components of the distances"},
    {ENUM("repulsion", engine, nle_repulsion_name), .metavar = "NAME",
     .help = "repulsion engine: auto (by N and the model), exact, bh (Barnes-Hut), fft (FFT interpolation) or fgt "
             "(fast Gauss transform); bh, fft, fgt: dim <= 3"},
    {REAL("theta", theta), NLE__POSITIVE, .metavar = "T",
     .help = "bh: opening angle (error about 0.1 theta^2)"},
    {INT("fft-order", fft.order), NLE__INT_IN(1, 12), .metavar = "P",
     .help = "fft: interpolation nodes per box and axis"},
    {REAL("fft-box", fft.box_width), .auto_ok = true, NLE__POSITIVE, .metavar = "W",
     .help = "fft: box side in kernel lengths (auto: 1.5 with fixed-rate steps, 0.85 with a line search)"},
    {INT("fgt-order", fgt.order), NLE__INT_IN(1, 12), .metavar = "P", .help = "fgt: terms per axis of its series"},
    {INT("fgt-reach", fgt.reach), NLE__INT_IN(1, 12), .metavar = "K",
     .help = "fgt: boxes further apart than K sides do not interact"},
    {INT("accuracy-iters", opt.accuracy_iters), NLE__INT_FROM(0), .metavar = "N",
     .help = "bh, fft, fgt: start coarse and reach the set accuracy after N iterations (0: off)"},
    {ENUM("optimizer", opt.kind, nle_opt_name), .metavar = "NAME",
     .help = "auto, sd (spectral direction), sd- (SD plus the repulsion's psd diagonal blocks, by CG), fp "
             "(fixed-point diagonal), gd, lbfgs or cg"},
    {ENUM("step", step, nle_step_name), .metavar = "NAME",
     .help = "auto, fixed (a learning rate with momentum and gains, as the t-SNE codes) or line-search"},
    {INT("kappa", opt.kappa), NLE__INT_FROM(0), .metavar = "N",
     .help = "sd, sd-: neighbours per point kept in L+ (0: all)"},
    {REAL("sdm-tol", opt.sdm_tol), NLE__POSITIVE, .metavar = "T", .help = "sd-: its CG stops at this relative residual"},
    {INT("sdm-iters", opt.sdm_iters), NLE__INT_FROM(1), .metavar = "N", .help = "sd-: or after N CG iterations"},
    {REAL("c1", opt.c1), NLE__REAL_IN(0, 1, NLE__OPEN_LO | NLE__OPEN_HI), .metavar = "C",
     .help = "line search: sufficient-decrease constant"},
    {REAL("shrink", opt.shrink), NLE__REAL_IN(0, 1, NLE__OPEN_LO | NLE__OPEN_HI), .metavar = "S",
     .help = "line search: step shrink factor"},
    {REAL("learning-rate", opt.learning_rate), .auto_ok = true, NLE__POSITIVE, .metavar = "R",
     .help = "fixed steps: the rate (auto: max(N / (4 exaggeration), 50) / sum(W+)), each point's capped at its "
             "attraction's stability bound"},
    {REAL("final-learning-rate", opt.learning_rate_final), .auto_ok = true, NLE__POSITIVE, .metavar = "R",
     .help = "fixed steps: the rate after the exaggeration phase (auto: max(N / 2, 200) / sum(W+) after an "
             "automatic first rate, else the first rate)"},
    {REAL("momentum", opt.momentum), .auto_ok = true, NLE__REAL_IN(0, 1, NLE__OPEN_HI), .metavar = "M",
     .help = "fixed steps: momentum after the first phase (auto: 0.95 with automatic rates, else 0.8; 0.5 during it)"},
    {REAL("exaggeration", opt.exaggeration), .auto_ok = true, NLE__REAL_IN(1, INFINITY, 0), .metavar = "A",
     .help = "fixed steps: the attraction times A at first (auto: 12 for t-SNE and s-SNE, else 1)"},
    {INT("exaggeration-iters", opt.exaggeration_iters), .auto_ok = true, NLE__INT_FROM(0), .metavar = "N",
     .help = "the exaggeration phase's iterations (auto: 125, 30 per homotopy step)"},
    {.name = "gains", .kind = NLE__OPT_BOOL, .offset = AT(opt.gains), .alias = "no-gains",
     .help = "fixed steps: per-coordinate gains (delta-bar-delta)"},
    {ENUM("init", init, nle_init_name), .metavar = "NAME",
     .help = "the start: auto (pca with points, else spectral), pca, spectral (Laplacian eigenmaps of W+) or "
             "random, scaled to init-scale"},
    {REAL("init-scale", init_scale), NLE__POSITIVE, .metavar = "S",
     .help = "standard deviation of the start's first dimension"},
    {INT("max-iters", opt.max_iters), .auto_ok = true, NLE__INT_FROM(0), .metavar = "N",
     .help = "iterations (auto: 450 for fixed steps, 90 per homotopy step with fixed steps, else 1000)"},
    {REAL("tol", opt.tol), .auto_ok = true, NLE__NONNEGATIVE, .metavar = "T",
     .help = "stop below this relative decrease of E, 5 iterations in a row (auto: 1e-6; 0 in a line-search "
             "homotopy)"},
    {REAL("x-tol", opt.x_tol), .auto_ok = true, NLE__NONNEGATIVE, .metavar = "T",
     .help = "stop when |X - X_old| <= T |X_old| (auto: 1e-3 in a line-search homotopy, else 0: off)"},
    {REAL("grad-tol", opt.grad_tol), .auto_ok = true, NLE__NONNEGATIVE, .metavar = "G",
     .help = "stop when every gradient entry is below G in size (fixed steps: after the exaggeration phase)"},
    {REAL("time-budget", opt.time_budget), NLE__NONNEGATIVE, .metavar = "S",
     .help = "stop after S seconds (0: no limit)"},
    {INT("homotopy", homotopy_steps), .auto_ok = true, NLE__INT_FROM(0), .scope = EE_FAMILY, .metavar = "STEPS", .json = "homotopy-steps",
     .scope_text = "ee and tee (lambda is 1 in the SNE family)",
     .help = "minimise over STEPS log-spaced lambda values from lambda-start to lambda (EE paper 4.4; auto: 5 for "
             "t-EE with fixed steps, else 0 = none)"},
    {REAL("lambda-start", lambda_start), .auto_ok = true, NLE__POSITIVE, EE_ONLY, .metavar = "L",
     .help = "the homotopy's first lambda (auto: lambda / 100 with fixed steps, else 1.5 x the upper bound of "
             "lambda*)"},
    {INT("lambda-bounds", lambda_bounds), .auto_ok = true, NLE__INT_IN(0, 1), EE_ONLY, .metavar = "0|1",
     .help = "compute the bounds of lambda* (1) or not (0); auto: where they are cheap or the homotopy needs them"},
    {.name = "checkpoint", .kind = NLE__OPT_TEXT, .offset = AT(checkpoint), .metavar = "FILE",
     .help = "save the run's state to FILE every checkpoint-every iterations and after every homotopy step"},
    {INT("checkpoint-every", checkpoint_every), NLE__INT_FROM(1), .metavar = "N",
     .help = "iterations between checkpoints"},
    {.name = "resume", .kind = NLE__OPT_TEXT, .offset = AT(resume), .metavar = "FILE",
     .help = "continue the checkpointed run (same input and options; max-iters and time-budget may change), "
             "checkpointing on to FILE unless checkpoint names another; the result is the uninterrupted run's"},
    {.name = NULL}};

/* The k the recipe gives, for a graph searched before nle_embed. */
static int graph_k(const nle_estimator *e, size_t n) {
  const nle_embed_opts *o = e->opts;
  int k = nle_embed_knn_size(o);
  /* an automatic k at most the other N - 1 points, as nle_embed resolves it */
  return o->k == NLE_AUTO && n > 1 && (size_t)k >= n ? (int)(n - 1) : k;
}

static const char *const titles[] = {"EE", "s-SNE", "t-SNE", "SNE", "t-EE"};

/* What the estimator's input cannot give (nle_embed checks the options
 * against each other and the input it is given). */
static nle_status check_request(nle_estimator *e, const nle__est_input *in, const nle_embed_opts *o) {
  if (o->init == NLE_INIT_GIVEN)
    return nle__fail(e->ctx, NLE_ERR_VALUE, "%s: {@init} takes pca, spectral, random or auto", e->method);
  if (in->distances && !in->knn) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: distances without a graph", e->method);
  return NLE_OK;
}

/* The observer's homotopy callback, in nle_embed's form. */
static int homotopy_step(void *user, int step, double lambda, const nle_matd *X, const nle_opt_report *rep) {
  const nle_estimator_observer *ob = user;
  return ob->homotopy_step(ob->user, step, lambda, X, rep->iterations, rep->E);
}

/* The report's figures: what ran and the time of every stage. */
/* A distributed run: every rank's bytes sent per stage and per iteration,
 * and its peak memory (docs/mpi.md), one array entry a rank. */
static void report_ranks(nle__json *j, const nle_embed_result *r) {
  if (r->ranks <= 1 || !r->rank_usage) return;
  size_t R = (size_t)r->ranks;
  double v[7][64];
  size_t shown = R < 64 ? R : 64;
  for (size_t q = 0; q < shown; q++) {
    const nle_embed_rank_usage *u = &r->rank_usage[q];
    double per_field[7] = {(double)u->pca, (double)u->knn, (double)u->affinities, (double)u->optimize,
                           (double)u->optimize / (r->report.iterations > 0 ? r->report.iterations : 1),
                           (double)u->total, (double)u->peak_memory / 1048576.0};
    for (int f = 0; f < 7; f++) v[f][q] = per_field[f];
  }
  static const char *keys[7] = {"pca_bytes", "knn_bytes", "affinity_bytes", "optimize_bytes",
                                "bytes_per_iteration", "bytes_sent", "peak_mib"};
  for (int f = 0; f < 7; f++) nle__json_numbers(j, keys[f], v[f], shown);
}

static void report_run(nle_estimator *e, const nle_embed_result *r, double search_seconds) {
  nle__json *j = &e->report;
  const nle_embed_opts *o = &r->resolved;
  nle__json_string(j, "knn", r->knn_used == NLE_KNN_AUTO ? "none" : nle_knn_method_name(r->knn_used));
  nle__json_printf(j, ", \"iterations\": %d, \"evaluations\": %d", r->report.iterations, r->report.evaluations);
  nle__json_number(j, "E0", r->report.E0);
  nle__json_number(j, "E", r->report.E);
  if (isfinite(r->kl)) nle__json_number(j, "kl_divergence", r->kl); /* the SNE family's */
  nle__json_printf(j, ", \"converged\": %s, \"components\": %d", r->report.converged ? "true" : "false",
                   r->components);
  nle__json_number(j, "lambda_star_lower", r->lambda_lower); /* null: not computed */
  nle__json_number(j, "lambda_star_upper", r->lambda_upper);
  nle__json_number(j, "map_extent", r->map_extent);
  nle__json_number(j, "w_total", r->w_total);
  nle__json_number(j, "pca_variance", r->pca_variance);
  if (r->resumed) nle__json_printf(j, ", \"resumed_iteration\": %d", r->resumed_iteration);
  nle__json_printf(j, ", \"pca_seconds\": %.3f, \"knn_seconds\": %.3f, \"affinity_seconds\": %.3f, "
                      "\"init_seconds\": %.3f, \"plan_seconds\": %.3f, \"optimize_seconds\": %.3f, "
                      "\"total_seconds\": %.3f",
                   r->seconds.pca, r->seconds.knn + search_seconds, r->seconds.affinities, r->seconds.init,
                   r->seconds.plan, r->seconds.optimize, r->seconds.total + search_seconds);
  report_ranks(j, r);
  char summary[256];
  snprintf(summary, sizeof summary, "%s, perplexity %g, %s%s, %d iterations, %.1f s", titles[e->variant],
           o->perplexity, o->homotopy_steps > 0 ? "homotopy, " : "",
           o->step == NLE_STEP_FIXED_RATE ? "fixed-rate gd" : nle_opt_name(o->opt.kind), r->report.iterations,
           r->seconds.total + search_seconds);
  nle__json_string(j, "summary", summary);
}

/* Lines for the user about choices that depend on the data. */
static void tell(nle_estimator *e, const nle_embed_result *r) {
  const nle_embed_opts *o = &r->resolved;
  bool unnormalised = e->variant == NLE_MODEL_EE || e->variant == NLE_MODEL_TEE;
  if (r->resumed) nle__log(e->ctx, 0, "resumed %s at iteration %d", o->resume, r->resumed_iteration);
  if (o->step == NLE_STEP_FIXED_RATE && r->w_total != 1.0 && unnormalised)
    nle__log(e->ctx, 0, "learning rates %.6g, then %.6g (auto, for W+ summing to %.6g)", o->opt.learning_rate,
             o->opt.learning_rate_final, r->w_total);
}

static nle_status fit(nle_estimator *e, const nle__est_input *in) {
  nle_embed_opts o = *(const nle_embed_opts *)e->opts;
  /* A distributed run keeps no model yet (docs/mpi.md): the estimator's
   * default of keeping one is dropped there; transform then says none was
   * kept. */
  o.keep_model = e->keep_model && in->Y && !nle__distributed(e->ctx);
  nle_status s = check_request(e, in, &o);
  if (s) return s;
  if (o.resume && !o.checkpoint) o.checkpoint = o.resume; /* a resumed run checkpoints on to its file */
  if (in->init) {
    o.init = NLE_INIT_GIVEN;
    o.init_X = in->init;
  }
  const nle_estimator_observer *ob = &e->observer;
  if (ob->iteration) {
    o.opt.trace = ob->iteration;
    o.opt.trace_user = ob->user;
    if (ob->energy_every > 0) o.opt.energy_every = ob->energy_every;
  }
  if (ob->homotopy_step) {
    o.on_step = homotopy_step;
    o.on_step_user = (void *)ob;
  }
  nle_embed_input ei = {.Y = in->Y, .knn = in->knn, .affinities = in->affinities ? in->affinities : in->given_affinities,
                        .source = in->source, .release_Y = in->release_Y, .release_user = in->release_user};
  nle_embed_result *r = NULL;
  s = nle_embed(e->ctx, &ei, &o, &r);
  if (s < 0) return s;
  nle_status k = nle__est_keep_X(e, r->X);
  if (!k) k = nle__est_keep_resolved(e, &r->resolved);
  if (!k) {
    e->model = r->trained;
    r->trained = NULL;
    nle__est_report_options(e, &r->resolved);
    report_run(e, r, in->search_seconds);
    tell(e, r);
  }
  nle_embed_result_free(&r);
  return k ? k : s;
}

static void graph_search(const nle_estimator *e, nle_knn_method *method, const nle_knn_approx_opts **approx) {
  const nle_embed_opts *o = e->opts;
  *method = o->knn_method;
  *approx = &o->knn_approx;
}

/* The options of F(y) and f(x) (nle_transform_opts), read by
 * nle_estimator_set_map: the same names as the fit's rows, another struct. */
static bool serves_new_points(int engine) { return nle_repulsion_serves_new_points((nle_repulsion)engine); }

static void map_opts_init(void *opts) { nle_transform_opts_init(opts); }

static const nle__option map_options[] = {
    {.name = "max-iters", .kind = NLE__OPT_INT, .offset = offsetof(nle_transform_opts, max_iters), .auto_ok = true,
     NLE__INT_FROM(0), .metavar = "N", .help = "iterations per point (auto: 200)"},
    {.name = "repulsion", .kind = NLE__OPT_ENUM, .offset = offsetof(nle_transform_opts, engine), .auto_ok = true,
     .enum_name = nle_repulsion_name_of, .enum_parse = nle_repulsion_parse, .enum_takes = serves_new_points,
     .metavar = "NAME",
     .help = "F(y)'s repulsion: auto (fgt for the Gaussian, fft for the Student-t kernel from 5,000 training points, "
             "where the model allows; else exact), exact (O(M N)), fgt or fft (all points together, O(M + N) per "
             "iteration; not SNE, nor EE/t-EE with --wneg)"},
    {.name = NULL} /* the maps' rows end (the fit's table ends as "{.name = NULL}};") */};

static nle_status transform(nle_estimator *e, const nle_matf *Y, nle_matd **X) {
  const nle_trained *t = e->model;
  nle_transform_result *r = NULL;
  nle_status s = nle_transform(e->ctx, t, Y, e->map_opts, &r);
  if (s >= 0) {
    *X = r->X;
    r->X = NULL;
    nle__est_map_report(e, "F(y)", e->method);
    nle__json_printf(&e->map_report,
                     ", \"training_points\": %zu, \"max_iters\": %d, \"repulsion\": \"%s\", \"weights_seconds\": %.3f, "
                     "\"optimize_seconds\": %.3f",
                     t->X->rows, r->resolved.max_iters, nle_repulsion_name(r->resolved.engine), r->weights_seconds,
                     r->optimize_seconds);
  }
  nle_transform_result_free(&r);
  return s;
}

static nle_status inverse(nle_estimator *e, const nle_matd *X, nle_matf **Y, nle_matd **Yd) {
  (void)Yd; /* f(x) is computed in floats */
  const nle_trained *t = e->model;
  /* auto stays what it was for the estimator's clients: no iteration, the
   * start (the nearest training point's y; python/tests hold that);
   * `nlembed transform` asks for its 200 */
  nle_status s = nle_trained_inverse(e->ctx, t, X, ((const nle_transform_opts *)e->map_opts)->max_iters, Y);
  if (s >= 0) {
    nle__est_map_report(e, "f(x)", e->method);
    nle__json_printf(&e->map_report, ", \"training_points\": %zu", t->X->rows);
  }
  return s;
}

static const char *data_source(const nle_estimator *e) {
  const nle_trained *t = e->model;
  return t->Y ? NULL : t->source;
}

static nle_status attach_data(nle_estimator *e, const nle_matf *Y) {
  return nle_trained_attach_data(e->ctx, e->model, Y);
}

static nle_status save(nle_estimator *e, const char *path) {
  return nle_trained_save(e->ctx, e->model, path, e->model_data_copy == 1);
}

static nle_status load(nle_estimator *e, const char *path) {
  nle_trained *t = NULL;
  nle_status s = nle_trained_load(e->ctx, path, &t);
  if (s) return s;
  e->model = t;
  e->variant = t->kind;
  snprintf(e->method, sizeof e->method, "%s", nle_model_name(t->kind));
  nle_embed_opts *o = e->opts;
  opts_init(o, t->kind);
  o->lambda = t->lambda;
  o->wneg = t->wneg;
  o->perplexity = t->perplexity;
  o->sigma = t->sigma;
  o->k = t->k;
  o->dim = (int)t->X->cols;
  e->n = t->X->rows;
  e->D = t->D;
  return nle__est_keep_X(e, t->X);
}

NLE__MODEL_FREE_OF(nle_trained_free, nle_trained)

const nle__family nle__family_embed = {
    .methods = methods,
    .abouts = abouts,
    .variant_of = variant_of,
    .opts_size = sizeof(nle_embed_opts),
    .opts_init = opts_init,
    .options = options,
    .graph_k = graph_k,
    .graph_search = graph_search,
    .fit = fit,
    .transform = transform,
    .inverse = inverse,
    .file_kind = "model",
    .save = save,
    .load = load,
    .free_model = nle_trained_free_of,
    .map_options = map_options,
    .map_opts_size = sizeof(nle_transform_opts),
    .map_opts_init = map_opts_init,
    .data_source = data_source,
    .attach_data = attach_data,
    /* t-SNE's and t-EE's stages take rows (docs/mpi.md): the graph stage,
     * its affinities and the fixed-rate iterations (t-EE's homotopy over
     * lambda of them). The other models' defaults (line searches) do not
     * run there yet. */
    .distributed = NLE__FOR(NLE_MODEL_TSNE) | NLE__FOR(NLE_MODEL_TEE),
};
