/* embed_recipe.c — what nle_embed decides before any work: the options'
 * defaults, their checks, and the resolution of every NLE_AUTO into each
 * model's measured recipe (docs/embeddings.md has the measurements behind
 * each). The pipeline that runs them is embed.c. */
#include "embed_internal.h"
#include "../core/comm.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Below this many points the exact engine is as fast as the fast ones and
 * gives exact E. */
enum { AUTO_EXACT_BELOW = 5000 };
/* t-SNE's switch points (bench/tsne_engines.sh, docs/embeddings.md: the
 * default recipe on Fashion-MNIST subsamples and load_digits, CPU seconds
 * of the whole run on one thread, medians, 2026-11-27): exact and
 * Barnes-Hut tie at 1,000 points (1.10 and 1.15 s), Barnes-Hut is ahead
 * from 1,500 (1.50 against 1.65 s; load_digits' 1,797: 0.95 against 1.42
 * s), FFT interpolation from 10,000 (7.8 against 9.4 s; at 5,000 8.0
 * against 5.3 s, at 20,000 11.3 against 20.9 s), each at the others' E
 * (within 0.3%) and 10-NN accuracy. */
enum { TSNE_EXACT_BELOW = 1500, TSNE_FFT_FROM = 10000 };
/* t-SNE's fixed-rate recipe: 125 iterations at exaggeration 12, 325 after
 * at momentum 0.95 (70,000 Fashion-MNIST: recall@10 0.344 in 450 iterations). */
enum { TSNE_ITERS = 450, TSNE_EXAG_ITERS = 125 };
#define TSNE_EXAGGERATION 12.0
/* t-EE's recipe: the homotopy over 5 lambda values from lambda / 100, 90
 * fixed-rate iterations each (30 at momentum 0.5, then 0.95). */
enum { TEE_STEPS = 5, TEE_STEP_ITERS = 90, TEE_WARM_ITERS = 30 };
#define TEE_LAMBDA 0.03
#define GAUSSIAN_PERPLEXITY 5.0
#define FIXED_RATE_FFT_BOX 1.5
#define LINE_SEARCH_FFT_BOX 0.85
#define AUTO_MOMENTUM 0.95
#define HOMOTOPY_X_TOL 1e-3


NLE__ENUM_NAMES(nle_init_name, nle_init_parse, nle_init_kind, NLE_INIT_MAP, NLE_INIT_COUNT, true)
NLE__ENUM_NAMES(nle_step_name, nle_step_parse, nle_step_kind, NLE_STEP_MAP, NLE_STEP_COUNT, true)

static int is_unnormalised(nle_model_kind kind) { return kind == NLE_MODEL_EE || kind == NLE_MODEL_TEE; }
static int gaussian_kernel(nle_model_kind kind) {
  return kind == NLE_MODEL_EE || kind == NLE_MODEL_SSNE || kind == NLE_MODEL_SNE;
}

/* The graph stage's options that nle_embed_opts carries, as (ours, the
 * graph's): one list behind their defaults (the graph's own, but k) and the
 * graph options of an embedding. */
#define GRAPH_FIELDS(X, o, g)                                                                                     \
  X(o, g, k, k) X(o, g, perplexity, perplexity) X(o, g, knn_method, method) X(o, g, knn_approx, approx)            \
  X(o, g, pca_dims, pca_dims) X(o, g, pca_candidates, pca_candidates)

void nle_embed_opts_init(nle_embed_opts *o) {
  memset(o, 0, sizeof *o);
  NLE__GRAPH_DEFAULTS(GRAPH_FIELDS, o);
  o->k = NLE_AUTO; /* from the perplexity, by the graph's rule */
  o->model = NLE_MODEL_TSNE;
  o->dim = 2;
  o->sigma = NLE_AUTO;
  o->lambda = NLE_AUTO;
  o->wneg = NLE_WNEG_UNIFORM;
  o->wneg_dims = 30;
  o->engine = NLE_REPULSION_AUTO;
  o->theta = 0.5;
  nle_fft_opts_init(&o->fft);
  o->fft.box_width = NLE_AUTO;
  nle_fgt_opts_init(&o->fgt);
  nle_opt_opts_init(&o->opt);
  o->opt.kind = NLE_OPT_AUTO;
  o->opt.max_iters = NLE_AUTO;
  o->opt.tol = NLE_AUTO;
  o->opt.x_tol = NLE_AUTO;
  o->opt.learning_rate = NLE_AUTO;
  o->opt.learning_rate_final = NLE_AUTO;
  o->opt.momentum = NLE_AUTO;
  o->opt.exaggeration = NLE_AUTO;
  o->opt.exaggeration_iters = NLE_AUTO;
  o->step = NLE_STEP_AUTO;
  o->homotopy_steps = NLE_AUTO;
  o->lambda_start = NLE_AUTO;
  o->init = NLE_INIT_AUTO;
  o->init_scale = 1e-4;
  o->checkpoint_every = 50;
  o->lambda_bounds = NLE_AUTO;
  o->keep_model = false;
}

void nle_embed_result_free(nle_embed_result **r) {
  if (!r || !*r) return;
  nle_matd_free(&(*r)->X);
  nle_trained_free(&(*r)->trained);
  free((*r)->rank_usage);
  free(*r);
  *r = NULL;
}

/* --- checks ----------------------------------------------------------------- */


/* Every field against its range, before any work; the message names the
 * field as the library calls it. */
nle_status nle__embed_check_opts(nle_ctx *ctx, const nle_embed_input *in, const nle_embed_opts *o) {
#define BAD(...) return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: " __VA_ARGS__)
  if (!in || (!in->Y && !in->knn && !in->affinities)) BAD("input: give data Y, a kNN graph or affinities");
  if (in->knn && in->affinities) BAD("input: a kNN graph or affinities, not both");
  if ((unsigned)o->model >= NLE_MODEL_COUNT) BAD("model %d is not one of ee, ssne, tsne, sne, tee", (int)o->model);
  if (o->dim < 1 || o->dim > 64) BAD("{@dim=%s}: 1 to 64 dimensions", nle__int_text(o->dim).s);
  if (!AUTO(o->perplexity) && !(o->perplexity > 1 && isfinite(o->perplexity)))
    BAD("{@perplexity=%g} must be a finite number above 1, or auto", o->perplexity);
  if (!AUTO(o->sigma) && !(o->sigma > 0 && isfinite(o->sigma))) BAD("{@sigma=%g} must be a finite number > 0, or auto", o->sigma);
  if (!AUTO(o->sigma) && o->model == NLE_MODEL_SNE) BAD("{@sigma}: SNE needs entropic (conditional) affinities");
  if (!AUTO(o->k) && o->k < 2) BAD("{@neighbors=%d} must be at least 2, or auto", o->k);
  if (!AUTO(o->knn_method) && o->knn_method != NLE_KNN_EXACT && o->knn_method != NLE_KNN_APPROX)
    BAD("{@knn-method} has no value %d (auto, exact or approx)", (int)o->knn_method);
  if (!AUTO(o->pca_dims) && o->pca_dims < 0) BAD("{@pca=%d} must be 0 (off), a count, or auto", o->pca_dims);
  if (!AUTO(o->pca_candidates) && o->pca_candidates < 0)
    BAD("{@pca-candidates=%d} must be 0 (off), a count, or auto", o->pca_candidates);
  if (!AUTO(o->lambda) && !(o->lambda > 0 && isfinite(o->lambda))) BAD("{@lambda=%g} must be a finite number > 0, or auto", o->lambda);
  if ((unsigned)o->wneg >= NLE_WNEG_COUNT) BAD("{@wneg} has no value %d (uniform, sqdist or knn)", (int)o->wneg);
  if (o->wneg != NLE_WNEG_UNIFORM && !is_unnormalised(o->model)) BAD("{@wneg}: repulsive weights are for ee and tee");
  if (o->wneg_dims < 1) BAD("{@wneg-dims=%s} must be at least 1", nle__int_text(o->wneg_dims).s);
  if (!AUTO(o->engine) && !strcmp(nle_repulsion_name(o->engine), "unknown")) BAD("{@repulsion} has no value %d", (int)o->engine);
  if (!(o->theta > 0)) BAD("{@theta=%s} must be > 0", nle__real_text(o->theta).s);
  if (!AUTO(o->fft.box_width) && !(o->fft.box_width > 0)) BAD("{@fft-box=%g} must be > 0, or auto", o->fft.box_width);
  if (!AUTO(o->opt.kind) && !nle__opt_kind_known(o->opt.kind)) BAD("{@optimizer} has no value %d", (int)o->opt.kind);
  if (!AUTO(o->opt.max_iters) && o->opt.max_iters < 0) BAD("{@max-iters=%d} must be >= 0, or auto", o->opt.max_iters);
  if (!AUTO(o->opt.tol) && !(o->opt.tol >= 0)) BAD("{@tol=%g} must be >= 0, or auto", o->opt.tol);
  if (!AUTO(o->opt.x_tol) && !(o->opt.x_tol >= 0)) BAD("{@x-tol=%g} must be >= 0, or auto", o->opt.x_tol);
  if (!AUTO(o->opt.learning_rate) && !(o->opt.learning_rate > 0 && isfinite(o->opt.learning_rate)))
    BAD("{@learning-rate=%g} must be a finite number > 0, or auto", o->opt.learning_rate);
  if (!AUTO(o->opt.learning_rate_final) && !(o->opt.learning_rate_final > 0 && isfinite(o->opt.learning_rate_final)))
    BAD("{@final-learning-rate=%g} must be a finite number > 0, or auto", o->opt.learning_rate_final);
  if (!AUTO(o->opt.momentum) && !(o->opt.momentum >= 0 && o->opt.momentum < 1))
    BAD("{@momentum=%g} must be in [0, 1), or auto", o->opt.momentum);
  if (!AUTO(o->opt.exaggeration) && !(o->opt.exaggeration >= 1 && isfinite(o->opt.exaggeration)))
    BAD("{@exaggeration=%g} must be a finite number >= 1, or auto", o->opt.exaggeration);
  if (!AUTO(o->opt.exaggeration_iters) && o->opt.exaggeration_iters < 0)
    BAD("{@exaggeration-iters=%d} must be >= 0, or auto", o->opt.exaggeration_iters);
  if (!AUTO(o->step) && o->step != NLE_STEP_LINE_SEARCH && o->step != NLE_STEP_FIXED_RATE)
    BAD("{@step} has no value %d (auto, fixed or line-search)", (int)o->step);
  int gd_or_auto = AUTO(o->opt.kind) || o->opt.kind == NLE_OPT_GD;
  if (o->step == NLE_STEP_FIXED_RATE && !gd_or_auto) BAD("{@step=fixed}: fixed-rate steps are gradient descent's ({@optimizer=gd})");
  int rate_given = !AUTO(o->opt.learning_rate) || !AUTO(o->opt.learning_rate_final) || !AUTO(o->opt.momentum) ||
                   (!AUTO(o->opt.exaggeration) && o->opt.exaggeration > 1);
  if (rate_given && o->step == NLE_STEP_LINE_SEARCH) /* named as given */
    BAD("{@%s} goes with fixed steps: {@learning-rate}, {@final-learning-rate}, {@momentum} and {@exaggeration} are "
        "for fixed-rate steps, not a line search",
        !AUTO(o->opt.learning_rate)         ? "learning-rate"
        : !AUTO(o->opt.learning_rate_final) ? "final-learning-rate"
        : !AUTO(o->opt.momentum)            ? "momentum"
                                            : "exaggeration");
  if (rate_given && !gd_or_auto)
    BAD("{@learning-rate}, {@momentum} and {@exaggeration} are for fixed-rate gradient descent, not {@optimizer=%s}",
        nle_opt_name(o->opt.kind));
  if (!AUTO(o->homotopy_steps) && o->homotopy_steps < 0) BAD("{@homotopy=%d} must be >= 0, or auto", o->homotopy_steps);
  if (!AUTO(o->homotopy_steps) && o->homotopy_steps > 0 && !is_unnormalised(o->model))
    BAD("{@homotopy}: the homotopy over lambda is for ee and tee (lambda is 1 in the SNE family)");
  if (!AUTO(o->lambda_start) && !(o->lambda_start > 0 && isfinite(o->lambda_start)))
    BAD("{@lambda-start=%g} must be a finite number > 0, or auto", o->lambda_start);
  if (!AUTO(o->init) && (unsigned)o->init >= NLE_INIT_COUNT) BAD("{@init} has no value %d", (int)o->init);
  if (o->init == NLE_INIT_GIVEN && !o->init_X) BAD("{@init}: a given start needs its coordinates (init_X)");
  if (o->init == NLE_INIT_PCA && !in->Y) BAD("{@init=pca}: a PCA start needs the INPUT data (the points)");
  if (!(o->init_scale > 0 && isfinite(o->init_scale))) BAD("{@init-scale=%s} must be a finite number > 0", nle__real_text(o->init_scale).s);
  if (o->checkpoint_every < 0) BAD("{@checkpoint-every=%s} must be >= 0", nle__int_text(o->checkpoint_every).s);
  if (!AUTO(o->lambda_bounds) && o->lambda_bounds != 0 && o->lambda_bounds != 1) BAD("{@lambda-bounds=%d} must be 0, 1 or auto", o->lambda_bounds);
  if (o->keep_model && (!in->Y || in->affinities)) BAD("a model for new points needs the data points and their kNN graph, not given affinities");
  if (o->keep_model && o->pca_dims > 0 && o->pca_candidates == 0)
    BAD("{@pca} with {@keep-model} needs the re-ranking ({@pca-candidates} > 0): a model for new points searches "
        "neighbours in the INPUT space");
  if (o->wneg != NLE_WNEG_UNIFORM && !in->Y)
    BAD("{@wneg}: squared-distance and kNN W- need the INPUT data (the points)%s", in->knn ? ", not a graph" : "");
  if (o->wneg == NLE_WNEG_KNN && in->affinities) BAD("{@wneg=knn}: kNN W- needs a kNN graph, not affinities");
  return NLE_OK;
#undef BAD
}

/* --- resolution ------------------------------------------------------------ */

/* exact for small N and for what the fast engines do not serve, FFT
 * interpolation in 1-2 dimensions, Barnes-Hut or the fast Gauss transform
 * in 3 (measured on 70,000 points, docs/embeddings.md); t-SNE by its own
 * measured switch points (TSNE_EXACT_BELOW, TSNE_FFT_FROM). */
static nle_repulsion auto_engine(nle_model_kind kind, nle_wneg_kind wneg, size_t n, size_t d) {
  int unnormalised = is_unnormalised(kind);
  if (kind == NLE_MODEL_TSNE && d <= 3) {
    if (n < TSNE_EXACT_BELOW) return NLE_REPULSION_EXACT;
    return d <= 2 && n >= TSNE_FFT_FROM ? NLE_REPULSION_FFT : NLE_REPULSION_BH;
  }
  if (n < AUTO_EXACT_BELOW || d > 3 || kind == NLE_MODEL_SNE || (unnormalised && wneg == NLE_WNEG_KNN))
    return NLE_REPULSION_EXACT;
  /* Squared-distance W- as kernel sums with charges of both signs: the FFT
   * engine takes those (Barnes-Hut and the Gauss transform here do not). */
  if (unnormalised && wneg == NLE_WNEG_SQDIST) return NLE_REPULSION_FFT;
  if (d <= 2) return NLE_REPULSION_FFT;
  return kind == NLE_MODEL_EE || kind == NLE_MODEL_SSNE ? NLE_REPULSION_FGT : NLE_REPULSION_BH;
}

/* The affinities' perplexity and the graph's k, the recipe's when auto. */
static void resolve_graph_size(nle_embed_opts *o, size_t n) {
  /* The Gaussian kernel's recall falls with N as it crowds the map; small
   * neighbourhoods hold it up (bench/default_sweep.sh on Fashion-MNIST, EE:
   * recall@10 at perplexity 5 / 15 / 30 0.288 / 0.260 / 0.238 at 5,000
   * points, 0.170 / 0.142 / 0.128 at 20,000, trustworthiness within 1%;
   * s-SNE 0.289 / 0.256 / 0.237 and SNE 0.296 / - / 0.245 at 5,000). */
  if (AUTO(o->perplexity) && !AUTO(o->k) && AUTO(o->sigma))
    o->perplexity = nle_graph_perplexity_for_k(o->k); /* the graph stage's one rule, from the k given */
  else if (AUTO(o->perplexity))
    o->perplexity = gaussian_kernel(o->model) ? GAUSSIAN_PERPLEXITY : 30.0;
  /* the graph stage's rule k = 3 x perplexity; Gaussian W+ of a given
   * width: 12 neighbours */
  if (AUTO(o->k)) o->k = !AUTO(o->sigma) ? nle_graph_k_for_perplexity(4.0, n) : nle_graph_k_for_perplexity(o->perplexity, n);
}

void nle__embed_graph_opts(const nle_embed_opts *o, nle_graph_opts *g) {
  NLE__GRAPH_OPTS_OF(GRAPH_FIELDS, o, g);
  g->stop = NLE_GRAPH_NEIGHBOURS; /* W+ is the model's (attractive_weights) */
}

int nle_embed_knn_size(const nle_embed_opts *o) {
  nle_embed_opts r = *o;
  resolve_graph_size(&r, 0);
  return r.k;
}

nle_status nle__embed_resolve_early(nle_ctx *ctx, const nle_embed_input *in, size_t n, size_t D, nle_embed_opts *o) {
  nle_model_kind m = o->model;
  resolve_graph_size(o, n);
  bool searched = in->Y && !in->knn && !in->affinities;
  bool candidates_given = o->pca_candidates > 0;
  nle_graph_opts g;
  nle__embed_graph_opts(o, &g);
  if (!searched) g.pca_dims = 0; /* no search: no components to search among */
  nle__graph_resolve(&g, n, D);
  o->pca_dims = g.pca_dims;
  /* a given count is checked below as given, not capped */
  o->pca_candidates = candidates_given && o->pca_dims > 0 ? o->pca_candidates : g.pca_candidates;
  if (AUTO(o->lambda))
    o->lambda = m == NLE_MODEL_EE ? 100.0 / (double)n : m == NLE_MODEL_TEE ? TEE_LAMBDA : 1.0;
  /* the steps: fixed rate where the model's recipe has it and the optimiser
   * allows it */
  if (AUTO(o->step)) {
    int rate_given = !AUTO(o->opt.learning_rate) || !AUTO(o->opt.learning_rate_final) || !AUTO(o->opt.momentum);
    /* t-SNE's fixed-rate recipe diverges for s-SNE (its Gaussian kernel
     * takes the N / 2 rate badly: E became infinite after 246 iterations at
     * 5,000 points); the line search serves the Gaussian models */
    int recipe_fixed = m == NLE_MODEL_TSNE || m == NLE_MODEL_TEE;
    int gd_or_auto = AUTO(o->opt.kind) || o->opt.kind == NLE_OPT_GD;
    o->step = gd_or_auto && (rate_given || recipe_fixed) ? NLE_STEP_FIXED_RATE : NLE_STEP_LINE_SEARCH;
  }
  int fixed = o->step == NLE_STEP_FIXED_RATE;
  if (AUTO(o->opt.kind)) o->opt.kind = fixed ? NLE_OPT_GD : NLE_OPT_SD;
  /* refused before the graph's work, not after it (nle_opt_new says it
   * too): the line searches are not distributed (docs/mpi_tsne.md) */
  if (!fixed && nle__distributed(ctx))
    return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: a distributed run takes fixed-rate steps ({@step=fixed}: t-SNE's and "
                     "t-EE's default); {@optimizer=%s} with its line search runs in one process", nle_opt_name(o->opt.kind));
  if (AUTO(o->homotopy_steps)) o->homotopy_steps = m == NLE_MODEL_TEE && fixed ? TEE_STEPS : 0;
  int homotopy = o->homotopy_steps > 0;
  if (AUTO(o->opt.exaggeration)) o->opt.exaggeration = fixed && !homotopy && m != NLE_MODEL_TEE && m != NLE_MODEL_EE ? TSNE_EXAGGERATION : 1.0;
  if (AUTO(o->opt.exaggeration_iters))
    o->opt.exaggeration_iters = !fixed ? 0 : homotopy ? TEE_WARM_ITERS : o->opt.exaggeration > 1 ? TSNE_EXAG_ITERS : 0;
  if (AUTO(o->opt.max_iters)) o->opt.max_iters = !fixed ? 1000 : homotopy ? TEE_STEP_ITERS : TSNE_ITERS;
  if (AUTO(o->opt.x_tol)) o->opt.x_tol = homotopy && !fixed ? HOMOTOPY_X_TOL : 0.0;
  if (AUTO(o->opt.tol)) o->opt.tol = homotopy && !fixed ? 0.0 : 1e-6;
  if (AUTO(o->opt.momentum)) o->opt.momentum = fixed && AUTO(o->opt.learning_rate) ? AUTO_MOMENTUM : 0.8;
  if (AUTO(o->fft.box_width)) o->fft.box_width = fixed ? FIXED_RATE_FFT_BOX : LINE_SEARCH_FFT_BOX;
  if (AUTO(o->engine)) {
    o->engine = auto_engine(m, o->wneg, n, (size_t)o->dim);
    o->fft.bh_ratio = 1.0; /* and Barnes-Hut where the map outgrows the grid */
  }
  if (AUTO(o->init)) o->init = o->init_X ? NLE_INIT_GIVEN : in->Y ? NLE_INIT_PCA : NLE_INIT_SPECTRAL;
  if (AUTO(o->lambda_bounds))
    o->lambda_bounds = is_unnormalised(m) && (n <= BOUNDS_INFO_MAX_N || (homotopy && AUTO(o->lambda_start) && !fixed));
  if (!is_unnormalised(m)) o->lambda_bounds = 0;
  /* what the engines serve (a request they cannot is an error, not a
   * silent change) */
  /* squared-distance W- goes to a fast engine as features */
  nle_status s = nle__model_check_engine(ctx, m, o->wneg, o->engine, 1, (size_t)o->dim);
  if (s) return s;
  if (o->pca_candidates > 0 && (o->pca_candidates < o->k || (size_t)o->pca_candidates >= n))
    return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: {@pca-candidates=%d} must be at least the %d neighbours "
                     "({@neighbors}) and below the %zu points", o->pca_candidates, o->k, n);
  if (!in->knn && !in->affinities && (size_t)o->k >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: {@neighbors=%d} neighbours need more than %zu points (a smaller "
                     "{@neighbors} or {@perplexity})", o->k, n);
  return NLE_OK;
}

/* The rates, once W+'s total is known: while exaggerating, alpha * 4 * rate
 * <= N (our gradient carries t-SNE's factor 4) keeps the attraction's steps
 * from overshooting (Linderman and Steinerberger 2019); after it N / 2 with
 * momentum 0.95 (70,000 Fashion-MNIST: recall@10 0.313 -> 0.345 in 450
 * iterations against 750). These are for W+ summing to 1; the gradient grows
 * with W+'s total (N for EE, t-EE and SNE), so the rates shrink by it. A
 * run without an exaggeration phase (the homotopy) keeps the first rate:
 * N / 2 threw outliers there. */
void nle__embed_resolve_rates(nle_embed_opts *o, size_t n, double w_total) {
  o->opt.fixed_rate = o->step == NLE_STEP_FIXED_RATE;
  if (!o->opt.fixed_rate) {
    o->opt.learning_rate = 0.0; /* not used by the line search (reported as 0) */
    o->opt.learning_rate_final = 0.0;
    return;
  }
  double mass = o->model == NLE_MODEL_TSNE || o->model == NLE_MODEL_SSNE ? 1.0 : w_total;
  int auto_first = AUTO(o->opt.learning_rate);
  if (auto_first) o->opt.learning_rate = fmax((double)n / (4.0 * o->opt.exaggeration), 50.0) / mass;
  if (AUTO(o->opt.learning_rate_final))
    o->opt.learning_rate_final = auto_first && o->opt.exaggeration_iters > 0 && o->opt.exaggeration > 1
                                     ? fmax((double)n / 2.0, 200.0) / mass
                                     : o->opt.learning_rate;
}

