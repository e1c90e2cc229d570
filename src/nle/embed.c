/* embed.c — nle_embed, the front door of the nonlinear embeddings: checks
 * the options and resolves every NLE_AUTO into each model's measured recipe
 * (embed_recipe.c), then runs the pipeline (PCA for the neighbour search,
 * kNN graph and its re-ranking, W+, W-, initial X, model, optimiser,
 * lambda* bounds, homotopy or one run). Every choice a client relies on is
 * made in the library, so the CLI and the bindings print what ran instead
 * of deciding it. */
#include "embed_internal.h"
#include "model_internal.h"
#include "../core/comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>

/* Hands Y back through the input's release_Y once no later stage reads it:
 * stage 1 after the neighbour search, 2 after W-, 3 after the initial X. */
static void release_y_after(const nle_embed_input *in, const nle_embed_opts *o, int searched_components, int stage,
                            int *released) {
  if (*released || !in->release_Y || !in->Y || o->keep_model) return;
  if (stage < 2 && o->wneg == NLE_WNEG_SQDIST) return;
  if (stage < 3 && o->init == NLE_INIT_PCA && !searched_components) return;
  in->release_Y(in->release_user);
  *released = 1;
}

/* --- stages ----------------------------------------------------------------- */

/* W+ on the kNN graph: entropic affinities (perplexity) or Gaussian ones of
 * width sigma; symmetrised, and normalised to sum 1 for the normalised
 * models; the conditional P itself for SNE. */
static nle_status attractive_weights(nle_ctx *ctx, const nle_csr *graph, const nle_embed_opts *o, nle_csr **W,
                                     double **beta) {
  int normalised = o->model == NLE_MODEL_SSNE || o->model == NLE_MODEL_TSNE;
  nle_csr *P = NULL;
  nle_status s;
  if (!AUTO(o->sigma)) {
    nle_affinity_opts ao;
    nle_affinity_opts_init(&ao);
    ao.sigma = o->sigma;
    s = nle_affinity_graph(ctx, graph, &ao, &P); /* already symmetric */
    if (!s && !normalised) {
      *W = P;
      return NLE_OK;
    }
  } else {
    nle_ea_opts eo;
    nle_ea_opts_init(&eo);
    eo.perplexity = o->perplexity;
    /* Under a communicator, the bounds order: its points are independent,
     * each rank solves its own rows. The warm-start orders (MST, alone's
     * default) are sequential over the whole graph, which every rank would
     * gather: 720 MB at 1,000,000 points, the peak of a 4-rank t-SNE's
     * memory (docs/mpi.md). Both solve to the same tolerance; the bits are
     * the same at any number of ranks, 1 included. */
    if (nle__has_comm(ctx)) eo.order = NLE_ORDER_BOUNDS;
    nle_ea_result *ea = NULL;
    s = nle_entropic_affinities(ctx, graph, &eo, &ea);
    if (s > 0) {
      nle__warn(ctx, NLE_WARN_CONVERGENCE, "%s", nle_ctx_error(ctx));
      s = NLE_OK;
    }
    if (!s) {
      P = ea->P;
      ea->P = NULL;
      *beta = ea->beta; /* kept for the out-of-sample maps */
      ea->beta = NULL;
    }
    nle_ea_result_free(&ea);
    if (!s && o->model == NLE_MODEL_SNE) {
      *W = P;
      return NLE_OK;
    }
  }
  if (!s) s = nle_affinity_symmetrize(ctx, P, normalised, W);
  nle_csr_free(&P);
  return s;
}

/* Squared-distance W- for a fast engine: the data's own columns when there
 * are at most `dims`, else its first `dims` principal components. */
static nle_status wneg_features(nle_ctx *ctx, const nle_matf *Y, int dims, nle_matf **F) {
  if (Y->cols <= (size_t)dims) {
    nle_status s = nle_matf_alloc(ctx, Y->rows, Y->cols, F);
    if (!s) memcpy((*F)->data, Y->data, Y->rows * Y->cols * sizeof(float));
    return s;
  }
  double kept = 0;
  nle_status s = nle__graph_pca_reduce(ctx, Y, dims, F, &kept, NULL, NULL);
  if (!s) nle__log(ctx, 0, "W- of squared distances after PCA %zu -> %d: %.4f of the variance", Y->cols, dims, kept);
  return s;
}

/* PCA, Laplacian eigenmaps of W+, Gaussian noise (each scaled so the first
 * column has standard deviation init_scale), or the given X. */
static nle_status initial_x(nle_ctx *ctx, const nle_matf *Y, size_t n, const nle_csr *Wp, const nle_embed_opts *o,
                            nle_matd **X) {
  /* n: this rank's rows when distributed (model_dist.c: the scale and the
   * random stream over all ranks' rows, as one process has them) */
  size_t d = (size_t)o->dim;
  nle_status s;
  switch (o->init) {
  case NLE_INIT_PCA: {
    nle_pca_opts po;
    nle_pca_opts_init(&po);
    po.n_components = o->dim;
    nle_pca_model *pm = NULL;
    s = nle_pca_fit(ctx, Y, &po, &pm);
    if (!s) s = nle_pca_transform(ctx, pm, Y, X);
    nle_pca_model_free(&pm);
    if (!s) s = nle__dist_scale_first_column(ctx, *X, o->init_scale);
    return s;
  }
  case NLE_INIT_RANDOM: {
    s = nle_matd_alloc(ctx, n, d, X);
    return s ? s : nle__dist_normal_rows(ctx, 0x696e6974ULL, o->init_scale, *X);
  }
  case NLE_INIT_SPECTRAL: {
    /* Laplacian eigenmaps of W+ (symmetrised for SNE's conditional P). */
    nle_csr *S = NULL;
    int comps = 0, sym = o->model != NLE_MODEL_SNE;
    s = sym ? NLE_OK : nle_affinity_symmetrize(ctx, Wp, 0, &S);
    if (!s) s = nle_laplacian_eigenmap(ctx, sym ? Wp : S, o->dim, X, &comps);
    nle_csr_free(&S);
    if (!s) s = nle__dist_scale_first_column(ctx, *X, o->init_scale);
    return s;
  }
  case NLE_INIT_GIVEN:
    if (o->init_X->rows != n || o->init_X->cols != d)
      return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: the given start ({@init}) must be %zu x %zu, not %zu x %zu", n, d, o->init_X->rows,
                       o->init_X->cols);
    s = nle_matd_alloc(ctx, n, d, X);
    if (!s) memcpy((*X)->data, o->init_X->data, n * d * sizeof(double));
    return s;
  default: return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: init %d", (int)o->init);
  }
}

/* What decides the result, so that a checkpoint resumes only its own run
 * (the iteration cap and the time budget may change). */
static void fingerprint(const nle_embed_opts *o, const nle_embed_input *in, size_t n, size_t D, uint64_t seed,
                        char *buf, size_t len) {
  snprintf(buf, len,
           "nlembed %s source=%s n=%zu D=%zu d=%d perplexity=%.17g k=%d sigma=%.17g knn=%d/%d/%d/%d/%d/%.17g pca=%d/%d "
           "lambda=%.17g wneg=%d/%d engine=%d theta=%.17g fft=%d/%.17g/%.17g fgt=%d/%d optimizer=%d kappa=%d "
           "sdm=%.17g/%d tol=%.17g/%.17g step=%d rate=%.17g/%.17g momentum=%.17g exaggeration=%.17g/%d gains=%d "
           "accuracy-iters=%d homotopy=%d/%.17g init=%d/%.17g seed=%llu input=%s",
           nle_model_name(o->model), in->source ? in->source : "", n, D, o->dim, o->perplexity, o->k, o->sigma,
           (int)o->knn_method, o->knn_approx.n_trees, o->knn_approx.leaf_size, o->knn_approx.max_candidates,
           o->knn_approx.max_iters, o->knn_approx.delta, o->pca_dims, o->pca_candidates, o->lambda, (int)o->wneg,
           o->wneg_dims, (int)o->engine, o->theta, o->fft.order, o->fft.box_width, o->fft.bh_ratio, o->fgt.order,
           o->fgt.reach, (int)o->opt.kind, o->opt.kappa, o->opt.sdm_tol, o->opt.sdm_iters, o->opt.tol, o->opt.x_tol,
           (int)o->step, o->opt.learning_rate, o->opt.learning_rate_final, o->opt.momentum, o->opt.exaggeration,
           o->opt.exaggeration_iters, o->opt.gains, o->opt.accuracy_iters, o->homotopy_steps, o->lambda_start,
           (int)o->init, o->init_scale, (unsigned long long)seed,
           in->affinities ? "affinities" : in->knn ? "knn" : "data");
}

/* --- the pipeline ----------------------------------------------------------- */

/* What the stages hand on, and the run's input, options and result. */
typedef struct {
  const nle_embed_input *in;
  const nle_embed_opts *asked; /* the caller's options (r->resolved: as they run) */
  nle_embed_result *r;
  nle_matf *Ysearch;  /* the space of the neighbour search (PCA or NULL: Y) */
  nle_csr *graph;     /* kNN graph (owned) */
  const nle_csr *knn; /* the graph W+ is built on: the input's or graph */
  int y_released;     /* release_y_after has run */
  nle_csr *W, *Wk;    /* W+, sparse W- */
  nle_matd *Wsq;      /* dense squared-distance W- */
  nle_matf *Wfeat;    /* squared-distance W- features */
  double *beta;
  double *pca_mean, *pca_components; /* the search's projection, for the model */
  nle_model *model;
  nle_opt *opt;
  size_t rows_here; /* this rank's rows (all N alone) */
  uint64_t pca_bytes; /* what the graph stage's PCA sent (distributed) */
  int32_t *order;     /* under a communicator: the run's numbering of the
                         points (order[new] = the input's index), or NULL */
} embed_work;

static void work_free(embed_work *w) {
  nle_matf_free(&w->Ysearch);
  nle_csr_free(&w->graph);
  nle_csr_free(&w->W);
  nle_csr_free(&w->Wk);
  nle_matd_free(&w->Wsq);
  nle_matf_free(&w->Wfeat);
  free(w->beta);
  free(w->pca_mean);
  free(w->pca_components);
  free(w->order);
  nle_opt_free(&w->opt);
  nle_model_free(&w->model);
}

static double max_abs(const nle_matd *X) {
  double m = 0.0;
  for (size_t i = 0; i < X->rows * X->cols; i++) m = fmax(m, fabs(X->data[i]));
  return m;
}

/* Under a communicator (even of one rank: the same bits at any number),
 * the points' locality order for the rest of the run (locality_dist.c),
 * from the search's space: its components, else the input's rows when
 * they are few columns. Not when W- is built from the input (sqdist, knn):
 * its rows stay in the input's order. */
static nle_status order_stage(nle_ctx *ctx, embed_work *w) {
  const nle_embed_input *in = w->in;
  const nle_embed_opts *o = &w->r->resolved;
  const nle_matf *space = w->Ysearch ? w->Ysearch : in->Y && in->Y->cols <= 64 ? in->Y : NULL;
  if (!space || o->wneg == NLE_WNEG_SQDIST || o->wneg == NLE_WNEG_KNN) return NLE_OK;
  return nle__dist_locality_order(ctx, space, &w->order);
}

/* W+ and the start moved into the locality order (to = the inverse
 * permutation), or the result back to the input's (to = order). */
static nle_status move_rows(nle_ctx *ctx, embed_work *w, int forward) {
  nle_embed_result *r = w->r;
  size_t n = r->n, row0 = nle__rank_rows(n, nle__ranks(ctx), nle__rank(ctx)).begin;
  double t0 = nle_time_seconds();
  int32_t *to = w->order;
  nle_status s = NLE_OK;
  if (forward) {
    to = nle__malloc(ctx, n * sizeof(int32_t), "the locality order");
    if (!to) s = NLE_ERR_NOMEM;
    for (size_t i = 0; to && i < n; i++) to[w->order[i]] = (int32_t)i;
    s = nle__comm_agree(ctx, s);
    /* W+ in single precision for an engine good to single precision, as
     * the model makes its own copy in the locality order alone (model.c):
     * the attraction streams W+, 8 bytes an entry instead of 12 (1.45x its
     * time on 2 ranks at 200,000 points) */
    const nle__engine *engine = nle__engine_find(r->resolved.engine);
    nle_dtype dtype = engine && engine->single_precision ? NLE_F32 : w->W->dtype;
    if (!s) s = nle__dist_move_csr(ctx, &w->W, row0, to, dtype);
  }
  nle_matd *X = NULL;
  if (!s) s = nle__dist_move_dense(ctx, r->X, row0, n, to, &X);
  if (!s) {
    nle_matd_free(&r->X);
    r->X = X;
  }
  if (forward) free(to);
  r->seconds.init += nle_time_seconds() - t0;
  return s;
}

/* The neighbour search's space and the kNN graph, by the graph stage (the
 * candidates found among the components re-ranked by their distances in Y:
 * 70,000 Fashion-MNIST images, 50 components, k = 90: t-SNE's recall@10
 * 0.282 without, 0.313 with, 0.318 with the pixels' exact neighbours; 1.5 s
 * against 26 s more for the exact search in 784 dimensions). */
static nle_status neighbours_stage(nle_ctx *ctx, embed_work *w) {
  const nle_embed_input *in = w->in;
  nle_embed_result *r = w->r;
  nle_embed_opts *o = &r->resolved;
  nle_status s = NLE_OK;
  if (!in->affinities && !in->knn) {
    nle_graph_result g = {0};
    nle__embed_graph_opts(o, &g.resolved);
    g.resolved.keep_projection = true; /* the search's space: the PCA start's, and the model's */
    s = nle__graph_build_into(ctx, in->Y, &g);
    r->knn_used = g.resolved.method;
    r->pca_variance = g.pca_variance;
    r->seconds.pca = g.pca_seconds;
    r->seconds.knn = g.knn_seconds;
    w->pca_bytes = g.pca_bytes;
    if (!s && o->pca_dims > 0)
      nle__log(ctx, 0, "PCA %zu x %zu -> %d for the neighbour search: %.4f of the variance", r->n, r->D, o->pca_dims,
               r->pca_variance);
    w->graph = g.knn, g.knn = NULL;
    w->Ysearch = g.projected, g.projected = NULL;
    w->pca_mean = g.pca_mean, g.pca_mean = NULL;
    w->pca_components = g.pca_components, g.pca_components = NULL;
    free(g.candidate_reach);
  }
  w->knn = in->knn ? in->knn : w->graph;
  if (o->knn_method == NLE_KNN_AUTO) o->knn_method = r->knn_used;
  if (!s && nle__has_comm(ctx)) s = order_stage(ctx, w);
  if (!s) release_y_after(in, o, w->Ysearch != NULL, 1, &w->y_released);
  return s;
}

/* W+ (and its connected components) and W-; then the learning rates,
 * which scale with W+'s total. */
/* W+'s entries added to start in order: W+'s total (1 when not positive),
 * the sum continued from rank to rank. */
static double csr_total_part(void *user, double start) {
  const nle_csr *W = user;
  for (int64_t k = 0; k < W->nnz; k++) start += nle_csr_value(W, k);
  return start;
}

static nle_status weights_stage(nle_ctx *ctx, embed_work *w) {
  const nle_embed_input *in = w->in;
  nle_embed_result *r = w->r;
  nle_embed_opts *o = &r->resolved;
  double t0 = nle_time_seconds();
  nle_status s = in->affinities ? nle_affinity_for_model(ctx, in->affinities, o->model, &w->W)
                                : attractive_weights(ctx, w->knn, o, &w->W, &w->beta);
  if (!s) s = nle__dist_chain_sum(ctx, csr_total_part, w->W, &r->w_total);
  if (!s) r->w_total = r->w_total > 0 ? r->w_total : 1.0;
  if (!s && nle__distributed(ctx)) nle__log(ctx, 1, "W+'s connected components are not counted in a distributed run");
  if (!s && !nle__distributed(ctx)) {
    nle_csr *S = NULL;
    if (o->model == NLE_MODEL_SNE) s = nle_affinity_symmetrize(ctx, w->W, false, &S);
    int64_t comps = s ? 0 : nle__csr_components(ctx, S ? S : w->W);
    if (comps < 0) s = NLE_ERR_NOMEM;
    r->components = (int)comps;
    nle_csr_free(&S);
    if (!s && r->components > 1)
      nle__warn(ctx, NLE_WARN_GENERAL,
                "W+ has %d connected components: they drift apart on their own, and a spectral start puts each at one "
                "point (a larger {@neighbors} or {@perplexity} joins them)",
                r->components);
  }
  if (!s && o->wneg == NLE_WNEG_SQDIST)
    s = o->engine == NLE_REPULSION_EXACT ? nle_repulsive_dense(ctx, in->Y, o->wneg, &w->Wsq)
                                         : wneg_features(ctx, in->Y, o->wneg_dims, &w->Wfeat);
  if (!s && o->wneg == NLE_WNEG_KNN) s = nle_repulsive_knn(ctx, w->knn, &w->Wk);
  if (!s && !o->keep_model) { /* only a kept model reads the graph again: its memory for the iterations */
    nle_csr_free(&w->graph);
    free(w->beta);
    w->beta = NULL;
    w->knn = NULL;
  }
  if (!s) release_y_after(in, o, w->Ysearch != NULL, 2, &w->y_released);
  r->seconds.affinities = nle_time_seconds() - t0;
  if (!s) nle__embed_resolve_rates(o, r->n, r->w_total);
  return s;
}

static nle_status initial_stage(nle_ctx *ctx, embed_work *w) {
  nle_embed_result *r = w->r;
  nle_embed_opts *o = &r->resolved;
  double t0 = nle_time_seconds();
  nle_status s = w->asked->resume ? nle_matd_alloc(ctx, w->rows_here, (size_t)o->dim, &r->X)
                                  : initial_x(ctx, w->Ysearch ? w->Ysearch : w->in->Y, w->rows_here, w->W, o, &r->X);
  if (!w->asked->keep_model) nle_matf_free(&w->Ysearch); /* else the model's search space */
  if (!s) release_y_after(w->in, o, 1, 3, &w->y_released);
  r->seconds.init = nle_time_seconds() - t0;
  return s;
}

/* lambda*'s bounds (EE paper eqs. 11-12), dense for small N, else by
 * Lanczos; only informative unless a homotopy starts from them. */
static nle_status bounds_stage(nle_ctx *ctx, embed_work *w) {
  nle_embed_result *r = w->r;
  nle_embed_opts *o = &r->resolved;
  int dense = r->n <= BOUNDS_DENSE_MAX_N;
  nle_status s = w->Wfeat ? nle_ee_lambda_bounds_features(ctx, w->W, w->Wfeat, &r->lambda_lower, &r->lambda_upper)
                 : dense ? nle_ee_lambda_bounds(ctx, w->W, o->wneg, w->Wsq, w->Wk, &r->lambda_lower, &r->lambda_upper)
                         : nle_ee_lambda_bounds_lanczos(ctx, w->W, o->wneg, w->Wsq, w->Wk, &r->lambda_lower,
                                                        &r->lambda_upper);
  /* With uniform W- the spectrum of L- is 0 and N (N - 1 times), and the
   * two bounds meet at lambda2(L+) / N: lambda* itself. */
  if (!s && o->wneg == NLE_WNEG_UNIFORM)
    nle__log(ctx, 0, "lambda* = %.4g (lambda2(L+) / N, exact for uniform W-; EE paper eqs. 11-12, %s)",
             r->lambda_lower, dense ? "dense eigenvalues" : "Lanczos");
  else if (!s)
    nle__log(ctx, 0, "lambda* bounds: %.4g <= lambda* <= %.4g (EE paper eqs. 11-12, %s)", r->lambda_lower,
             r->lambda_upper, w->Wfeat ? "Lanczos and Gershgorin" : dense ? "dense eigenvalues" : "Lanczos");
  else if (!(o->homotopy_steps > 0 && AUTO(o->lambda_start))) {
    nle__warn(ctx, NLE_WARN_GENERAL, "no lambda* bounds: %s", nle_ctx_error(ctx));
    r->lambda_lower = r->lambda_upper = NAN;
    s = NLE_OK;
  }
  return s;
}

/* The model, the optimiser, lambda*'s bounds and the homotopy's start. */
static nle_status plan_stage(nle_ctx *ctx, embed_work *w) {
  nle_embed_result *r = w->r;
  nle_embed_opts *o = &r->resolved;
  double t0 = nle_time_seconds();
  nle_model_spec spec;
  nle_model_spec_init(&spec);
  spec.kind = o->model;
  spec.lambda = o->lambda;
  spec.Wp = w->W;
  spec.wneg = o->wneg;
  spec.Wneg_dense = w->Wsq;
  spec.Wneg_sparse = w->Wk;
  spec.engine = o->engine;
  spec.theta = o->theta;
  spec.fft = o->fft;
  spec.fgt = o->fgt;
  spec.Wneg_features = w->Wfeat;
  nle_status s = nle_model_new(ctx, &spec, &w->model);
  if (!s) {
    s = nle_opt_new(ctx, w->model, w->W, &o->opt, &w->opt);
    if (s == NLE_ERR_MEMCAP && AUTO(w->asked->opt.kind) && o->opt.kind == NLE_OPT_SD) {
      /* The automatic line-search optimiser is SD where its factor fits (a
       * million-point Fashion-MNIST graph's needed 51.7 GiB at kappa 7),
       * else L-BFGS, which needs none. */
      nle__log(ctx, 0, "note: %s; L-BFGS instead", nle_ctx_error(ctx));
      o->opt.kind = NLE_OPT_LBFGS;
      s = nle_opt_new(ctx, w->model, w->W, &o->opt, &w->opt);
    }
  }
  if (!s && o->lambda_bounds && !nle__distributed(ctx)) s = bounds_stage(ctx, w); /* dense or Lanczos on all of W+ */
  if (!s && o->homotopy_steps > 0 && AUTO(o->lambda_start)) {
    /* fixed rates: from lambda / 100 (the t-EE recipe); line searches: from
     * 1.5 x the upper bound of lambda*, where X = 0 is still the minimiser
     * and the path starts on its one branch (EE paper sec. 4.4) */
    if (o->step == NLE_STEP_FIXED_RATE) o->lambda_start = o->lambda / 100.0;
    else if (isfinite(r->lambda_upper)) o->lambda_start = 1.5 * r->lambda_upper;
    else s = nle__fail(ctx, NLE_ERR_ARG, "nle_embed: {@lambda-start}: no lambda* bounds to start the homotopy from; give it");
  }
  if (o->homotopy_steps == 0 && AUTO(o->lambda_start)) o->lambda_start = 0.0;
  r->seconds.plan = nle_time_seconds() - t0;
  if (!s && o->lambda_start > 0 && o->homotopy_steps > 0 && o->lambda_start > o->lambda)
    nle__log(ctx, 1, "homotopy from lambda %.4g down to %.4g", o->lambda_start, o->lambda);
  return s;
}

/* Checkpoints (resumed from, written to), then the optimisation: one run
 * or the homotopy. A warning (> 0) is passed on. */
static nle_status run_stage(nle_ctx *ctx, embed_work *w) {
  const nle_embed_opts *opts = w->asked;
  nle_embed_result *r = w->r;
  nle_embed_opts *o = &r->resolved;
  nle_status s = NLE_OK;
  if (opts->resume) {
    s = nle_opt_load_checkpoint(ctx, w->opt, r->X, opts->resume, r->fingerprint);
    if (!s) {
      nle_opt_state *st = nle__opt_state(w->opt);
      r->resumed = true;
      r->resumed_iteration = st->path_total.iterations + st->rep.iterations;
    }
  }
  if (!s && opts->checkpoint) s = nle_opt_set_checkpoint(ctx, w->opt, opts->checkpoint, o->checkpoint_every, r->fingerprint);
  double t0 = nle_time_seconds();
  uint64_t sent0 = nle__comm_bytes_sent(ctx);
  if (!s && o->homotopy_steps > 0) {
    nle_homotopy_opts ho;
    nle_homotopy_opts_init(&ho);
    ho.lambda_start = o->lambda_start;
    ho.lambda_end = o->lambda;
    ho.steps = o->homotopy_steps;
    s = nle_homotopy_run(ctx, w->model, w->opt, r->X, &ho, opts->on_step, opts->on_step_user, &r->report);
  } else if (!s) {
    s = nle_opt_run(ctx, w->opt, r->X, &r->report);
  }
  r->seconds.optimize = nle_time_seconds() - t0;
  nle__model_log_times(ctx, w->model, r->seconds.optimize);
  /* the report's bytes per stage take this difference (docs/mpi.md) */
  double sent = (double)(nle__comm_bytes_sent(ctx) - sent0);
  if (nle__distributed(ctx))
    nle__log(ctx, 1, "optimisation: this rank sent %.1f MB, %.0f bytes an iteration", sent / 1e6,
             sent / (r->report.iterations > 0 ? r->report.iterations : 1));
  return s;
}

/* KL(P || Q) at the result, for the SNE family (dissertation sec. 3.2):
 * their objective is E = sum_nm p_nm (-log K_nm) + lambda log Z (per-point
 * Z_n summed for SNE), the cross-entropy of P and Q less the constant
 * part, so KL = E(lambda = 1) + sum_nm p_nm log p_nm, over the W+ the run
 * used (t-SNE and s-SNE: the joint P; SNE: the conditional rows, whose
 * KLs add up). E is the run's own final value when lambda is 1, else one
 * more evaluation at lambda 1. NaN for EE and t-EE (no distribution). */
static double plogp_part(void *user, double start) {
  const nle_csr *W = user;
  for (int64_t q = 0; q < W->nnz; q++) {
    double p = nle_csr_value(W, q);
    if (p > 0) start += p * log(p);
  }
  return start;
}

static nle_status kl_stage(nle_ctx *ctx, embed_work *w) {
  nle_embed_result *r = w->r;
  r->kl = NAN;
  nle_model_kind kind = r->resolved.model;
  if (kind != NLE_MODEL_TSNE && kind != NLE_MODEL_SSNE && kind != NLE_MODEL_SNE) return NLE_OK;
  double plogp = 0.0, E = r->report.E;
  nle_status s = nle__dist_chain_sum(ctx, plogp_part, w->W, &plogp);
  if (s) return s;
  if (nle_model_lambda(w->model) != 1.0) {
    nle_status s = nle_model_set_lambda(ctx, w->model, 1.0);
    if (!s) s = nle_model_eval(ctx, w->model, r->X, &E, NULL);
    if (s) return s;
  }
  r->kl = E + plogp;
  return NLE_OK;
}

/* A finite map, and a warning when its scale exploded. */
static nle_status check_result(nle_ctx *ctx, nle_embed_result *r) {
  if (!(isfinite(r->report.E) && isfinite(r->report.E0)))
    return nle__fail(ctx, NLE_ERR_NUMERIC, "nle_embed: E became %g after %d iterations (the {@init-scale}, {@lambda} or "
                     "{@learning-rate} is too large for this data)", r->report.E, r->report.iterations);
  r->map_extent = max_abs(r->X);
  if (nle__distributed(ctx) && nle__comm_max_d(ctx, &r->map_extent, 1)) return NLE_ERR_NUMERIC;
  if (!isfinite(r->map_extent))
    return nle__fail(ctx, NLE_ERR_NUMERIC, "nle_embed: the embedding has non-finite coordinates after %d iterations",
                     r->report.iterations);
  /* A start scaled so small that its gradient is below the optimiser's
   * tolerance sits at the stationary point X = 0: the run stops there. A
   * valid request (the user's scale), but the map is the start. */
  const nle_embed_opts *o = &r->resolved;
  if (r->report.iterations == 0 && o->opt.max_iters > 0 && o->init != NLE_INIT_GIVEN && r->report.converged)
    nle__warn(ctx, NLE_WARN_CONVERGENCE,
              "the optimiser stopped at its start: at {@init-scale=%g} the gradient is below its tolerance (X = 0 is "
              "stationary); a larger {@init-scale} lets the map unfold", o->init_scale);
  if (r->map_extent > 1e5)
    nle__warn(ctx, NLE_WARN_GENERAL,
              "the map reaches |x| = %.3g: its scale exploded (well-separated clusters drift apart; a smaller "
              "{@learning-rate} or {@lambda} keeps them in view)",
              r->map_extent);
  return NLE_OK;
}

/* keep_model: the trained model for new points, with the search's PCA
 * handed over so that new points search as training did. */
static nle_status keep_model(nle_ctx *ctx, embed_work *w) {
  nle_embed_result *r = w->r;
  const nle_embed_opts *o = &r->resolved;
  nle_trained_spec ts;
  nle_trained_spec_init(&ts);
  ts.kind = o->model;
  ts.lambda = o->lambda;
  ts.wneg = o->wneg;
  ts.perplexity = o->perplexity;
  ts.sigma = o->sigma; /* NLE_AUTO: entropic */
  ts.source = w->in->source ? w->in->source : "";
  nle_status s = nle_trained_new(ctx, &ts, w->in->Y, r->X, w->knn, w->beta, &r->trained);
  if (!s && w->pca_mean) {
    r->trained->pca_dims = o->pca_dims;
    r->trained->pca_candidates = o->pca_candidates;
    r->trained->pca_mean = w->pca_mean;
    r->trained->pca_components = w->pca_components;
    r->trained->pca_Y = w->Ysearch;
    w->pca_mean = w->pca_components = NULL;
    w->Ysearch = NULL;
  }
  return s;
}

/* Every rank's bytes and peak memory, rank by rank on every rank (a
 * collective call: all ranks make it at the same point). */
static nle_status gather_usage(nle_ctx *ctx, nle_embed_rank_usage *mine, nle_embed_result *r) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) mine->peak_memory = (uint64_t)ru.ru_maxrss * 1024; /* Linux: KiB */
  r->ranks = nle_ctx_ranks(ctx);
  r->rank_usage = nle__calloc(ctx, (size_t)r->ranks, sizeof *r->rank_usage, "the ranks' usage");
  if (!r->rank_usage) return nle__comm_agree(ctx, NLE_ERR_NOMEM);
  nle_status s = nle__comm_agree(ctx, NLE_OK);
  if (!s) s = nle__comm_allgatherv(ctx, mine, sizeof *mine, r->rank_usage, NULL);
  return s;
}

nle_status nle_embed(nle_ctx *ctx, const nle_embed_input *in, const nle_embed_opts *opts, nle_embed_result **out) {
  *out = NULL;
  nle_embed_opts defaults;
  if (!opts) {
    nle_embed_opts_init(&defaults);
    opts = &defaults;
  }
  nle_status s = nle__embed_check_opts(ctx, in, opts);
  if (s) return s;
  size_t n = in->Y ? in->Y->rows : in->knn ? (size_t)in->knn->rows : (size_t)in->affinities->rows;
  size_t D = in->Y ? in->Y->cols : 0;
  const nle_csr *given = in->knn ? in->knn : in->affinities;
  /* Distributed (docs/mpi.md): the inputs are this rank's rows, n of them,
   * of rows.n in all; the result is this rank's rows of X. */
  nle__rows rows = {n, {0, n}};
  if (nle__distributed(ctx)) s = nle__comm_rows(ctx, n, "nle_embed's input", &rows);
  if (!s && nle__distributed(ctx) && opts->keep_model)
    s = nle__fail(ctx, NLE_ERR_ARG, "nle_embed: a distributed run keeps no model yet ({@save-model} runs in one "
                  "process)");
  if (s) return s;
  size_t rows_here = n;
  n = rows.n;
  if (given && ((size_t)given->cols != n || n < 3 || (in->Y && (size_t)given->rows != in->Y->rows)))
    return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: the %s must be N x N with N >= 3%s, not %lld x %lld",
                     in->knn ? "kNN graph" : "affinities", in->Y ? " and N the number of INPUT points" : "",
                     (long long)given->rows, (long long)given->cols);
  if (n < 3) return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: %zu points; an embedding needs at least 3", n);
  nle_embed_result *r = nle__calloc(ctx, 1, sizeof *r, "the embedding's result");
  if (!r) return NLE_ERR_NOMEM;
  r->resolved = *opts;
  nle_embed_opts *o = &r->resolved;
  r->n = n;
  r->D = D;
  r->knn_used = NLE_KNN_AUTO;
  r->lambda_lower = r->lambda_upper = NAN;
  double t_start = nle_time_seconds();
  embed_work w = {0};
  w.in = in;
  w.asked = opts;
  w.r = r;
  w.rows_here = rows_here;
  s = nle__embed_resolve_early(ctx, in, n, D, o);
  /* The fingerprint before any work, so that a refused resume costs
   * nothing: the rates enter as asked for (an auto rate follows from the
   * rest). */
  if (!s) {
    nle_embed_opts asked = *o;
    asked.opt.learning_rate = opts->opt.learning_rate;
    asked.opt.learning_rate_final = opts->opt.learning_rate_final;
    asked.lambda_start = opts->lambda_start;
    fingerprint(&asked, in, n, D, nle_ctx_seed(ctx), r->fingerprint, sizeof r->fingerprint);
    if (opts->resume) s = nle_opt_check_checkpoint(ctx, opts->resume, r->fingerprint);
  }
  nle_embed_rank_usage used = {0};
  uint64_t sent = nle__comm_bytes_sent(ctx), first = sent;
  if (!s) s = neighbours_stage(ctx, &w);
  used.knn = nle__comm_bytes_sent(ctx) - sent, sent += used.knn;
  if (!s) s = weights_stage(ctx, &w);
  used.affinities = nle__comm_bytes_sent(ctx) - sent, sent += used.affinities;
  if (!s) s = initial_stage(ctx, &w);
  if (!s && w.order) s = move_rows(ctx, &w, 1);
  if (!s) s = plan_stage(ctx, &w);
  used.init = nle__comm_bytes_sent(ctx) - sent, sent += used.init;
  if (!s) s = run_stage(ctx, &w);
  used.optimize = nle__comm_bytes_sent(ctx) - sent;
  used.pca = w.pca_bytes, used.knn -= w.pca_bytes;
  used.total = nle__comm_bytes_sent(ctx) - first;
  if (nle__distributed(ctx)) s = nle__comm_agree(ctx, s);
  if (nle__distributed(ctx) && s >= 0) s = gather_usage(ctx, &used, r);
  nle_status warning = s > 0 ? s : NLE_OK;
  /* a fixed-rate schedule ends at its iteration count by design (the t-SNE
   * codes' recipe): the run did what was planned, no warning for any
   * caller to explain away */
  if (warning == NLE_WARN_NOT_CONVERGED && o->step == NLE_STEP_FIXED_RATE) warning = NLE_OK;
  if (s > 0) s = NLE_OK;
  if (!s) s = check_result(ctx, r);
  if (!s) s = kl_stage(ctx, &w);
  if (!s && w.order) s = move_rows(ctx, &w, 0); /* the result in the input's order */
  if (!s && opts->keep_model) s = keep_model(ctx, &w);
  work_free(&w);
  r->seconds.total = nle_time_seconds() - t_start;
  if (s < 0) {
    nle_embed_result_free(&r);
    return s;
  }
  *out = r;
  return warning;
}
