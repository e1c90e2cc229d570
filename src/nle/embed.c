/* embed.c — nle_embed, the front door of the nonlinear embeddings: checks
 * the options, resolves every NLE_AUTO into each model's measured recipe,
 * and runs the pipeline (PCA for the neighbour search, kNN graph and its
 * re-ranking, W+, W-, initial X, model, optimiser, lambda* bounds, homotopy
 * or one run). Every choice a client relies on is made here, so the CLI and
 * the bindings print what ran instead of deciding it. */
#include "nle_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- recipes (docs/embeddings.md has the measurements behind each) ------- */

/* Below this many points the exact engine is as fast as the fast ones and
 * gives exact E. */
enum { AUTO_EXACT_BELOW = 5000 };
/* The neighbour search among principal components: from this many points
 * and input dimensions (70,000 Fashion-MNIST images: 26 s less kNN for a
 * t-SNE recall@10 of 0.313 against 0.318 with the pixels' neighbours). */
enum { AUTO_PCA_MIN_N = 5000, AUTO_PCA_MIN_D = 100, AUTO_PCA_DIMS = 50 };
/* Dense lambda* bounds need two N x N eigendecompositions: for small N,
 * Lanczos above. Lanczos needs a sparse Cholesky factor of L+, which fills
 * in (30 s of a 70 s EE run on 70,000 points, only to print a note): above
 * BOUNDS_INFO_MAX_N the bounds are computed only when a homotopy needs them. */
enum { BOUNDS_DENSE_MAX_N = 2000, BOUNDS_INFO_MAX_N = 20000 };
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

static const char *const model_names[] = {"ee", "ssne", "tsne", "sne", "tee"};

const char *nle_model_name(nle_model_kind kind) {
  return (unsigned)kind < sizeof model_names / sizeof *model_names ? model_names[kind] : "unknown";
}

int nle_model_parse(const char *name) {
  for (size_t i = 0; name && i < sizeof model_names / sizeof *model_names; i++)
    if (!strcmp(name, model_names[i])) return (int)i;
  return -1;
}

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

static int is_unnormalised(nle_model_kind kind) { return kind == NLE_MODEL_EE || kind == NLE_MODEL_TEE; }
static int gaussian_kernel(nle_model_kind kind) {
  return kind == NLE_MODEL_EE || kind == NLE_MODEL_SSNE || kind == NLE_MODEL_SNE;
}

void nle_embed_opts_init(nle_embed_opts *o) {
  memset(o, 0, sizeof *o);
  o->model = NLE_MODEL_TSNE;
  o->dim = 2;
  o->perplexity = NLE_AUTO;
  o->sigma = NLE_AUTO;
  o->k = NLE_AUTO;
  o->knn_method = NLE_KNN_AUTO;
  nle_knn_approx_opts_init(&o->knn_approx);
  o->pca_dims = NLE_AUTO;
  o->pca_candidates = NLE_AUTO;
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
  free(*r);
  *r = NULL;
}

/* --- checks ----------------------------------------------------------------- */

#define AUTO(x) ((x) == NLE_AUTO)

/* Every field against its range, before any work; the message names the
 * field as the library calls it. */
static nle_status check_opts(nle_ctx *ctx, const nle_embed_input *in, const nle_embed_opts *o) {
#define BAD(...) return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: " __VA_ARGS__)
  if (!in || (!in->Y && !in->knn && !in->affinities)) BAD("input: give data Y, a kNN graph or affinities");
  if (in->knn && in->affinities) BAD("input: a kNN graph or affinities, not both");
  if ((unsigned)o->model > NLE_MODEL_TEE) BAD("model %d is not one of ee, ssne, tsne, sne, tee", (int)o->model);
  if (o->dim < 1 || o->dim > 64) BAD("dim %d outside 1..64", o->dim);
  if (!AUTO(o->perplexity) && !(o->perplexity > 1 && isfinite(o->perplexity)))
    BAD("perplexity %g must be NLE_AUTO or a number above 1", o->perplexity);
  if (!AUTO(o->sigma) && !(o->sigma > 0 && isfinite(o->sigma))) BAD("sigma %g must be NLE_AUTO or positive", o->sigma);
  if (!AUTO(o->sigma) && o->model == NLE_MODEL_SNE) BAD("sigma: SNE needs entropic (conditional) affinities");
  if (!AUTO(o->k) && o->k < 2) BAD("k %d must be NLE_AUTO or at least 2", o->k);
  if (!AUTO(o->knn_method) && o->knn_method != NLE_KNN_EXACT && o->knn_method != NLE_KNN_APPROX)
    BAD("knn_method %d is not NLE_AUTO, exact or approx", (int)o->knn_method);
  if (!AUTO(o->pca_dims) && o->pca_dims < 0) BAD("pca_dims %d must be NLE_AUTO, 0 or positive", o->pca_dims);
  if (!AUTO(o->pca_candidates) && o->pca_candidates < 0)
    BAD("pca_candidates %d must be NLE_AUTO, 0 or positive", o->pca_candidates);
  if (!AUTO(o->lambda) && !(o->lambda > 0 && isfinite(o->lambda))) BAD("lambda %g must be NLE_AUTO or positive", o->lambda);
  if ((unsigned)o->wneg > NLE_WNEG_KNN) BAD("wneg %d is not uniform, sqdist or knn", (int)o->wneg);
  if (o->wneg != NLE_WNEG_UNIFORM && !is_unnormalised(o->model)) BAD("wneg: repulsive weights are for ee and tee");
  if (o->wneg_dims < 1) BAD("wneg_dims %d must be positive", o->wneg_dims);
  if (!AUTO(o->engine) && (unsigned)o->engine > NLE_REPULSION_FGT) BAD("engine %d is not a repulsion engine", (int)o->engine);
  if (!(o->theta > 0)) BAD("theta %g must be positive", o->theta);
  if (!AUTO(o->fft.box_width) && !(o->fft.box_width > 0)) BAD("fft.box_width %g must be NLE_AUTO or positive", o->fft.box_width);
  if (!AUTO(o->opt.kind) && (unsigned)o->opt.kind > NLE_OPT_SDM) BAD("opt.kind %d is not an optimiser", (int)o->opt.kind);
  if (!AUTO(o->opt.max_iters) && o->opt.max_iters < 0) BAD("opt.max_iters %d must be NLE_AUTO or >= 0", o->opt.max_iters);
  if (!AUTO(o->opt.tol) && !(o->opt.tol >= 0)) BAD("opt.tol %g must be NLE_AUTO or >= 0", o->opt.tol);
  if (!AUTO(o->opt.x_tol) && !(o->opt.x_tol >= 0)) BAD("opt.x_tol %g must be NLE_AUTO or >= 0", o->opt.x_tol);
  if (!AUTO(o->opt.learning_rate) && !(o->opt.learning_rate > 0 && isfinite(o->opt.learning_rate)))
    BAD("opt.learning_rate %g must be NLE_AUTO or positive", o->opt.learning_rate);
  if (!AUTO(o->opt.learning_rate_final) && !(o->opt.learning_rate_final > 0 && isfinite(o->opt.learning_rate_final)))
    BAD("opt.learning_rate_final %g must be NLE_AUTO or positive", o->opt.learning_rate_final);
  if (!AUTO(o->opt.momentum) && !(o->opt.momentum >= 0 && o->opt.momentum < 1))
    BAD("opt.momentum %g must be NLE_AUTO or in [0, 1)", o->opt.momentum);
  if (!AUTO(o->opt.exaggeration) && !(o->opt.exaggeration >= 1 && isfinite(o->opt.exaggeration)))
    BAD("opt.exaggeration %g must be NLE_AUTO or >= 1", o->opt.exaggeration);
  if (!AUTO(o->opt.exaggeration_iters) && o->opt.exaggeration_iters < 0)
    BAD("opt.exaggeration_iters %d must be NLE_AUTO or >= 0", o->opt.exaggeration_iters);
  if (!AUTO(o->step) && o->step != NLE_STEP_LINE_SEARCH && o->step != NLE_STEP_FIXED_RATE)
    BAD("step %d is not NLE_AUTO, line search or fixed rate", (int)o->step);
  int gd_or_auto = AUTO(o->opt.kind) || o->opt.kind == NLE_OPT_GD;
  if (o->step == NLE_STEP_FIXED_RATE && !gd_or_auto) BAD("step: fixed-rate steps are gradient descent's (opt.kind gd)");
  int rate_given = !AUTO(o->opt.learning_rate) || !AUTO(o->opt.learning_rate_final) || !AUTO(o->opt.momentum) ||
                   (!AUTO(o->opt.exaggeration) && o->opt.exaggeration > 1);
  if (rate_given && o->step == NLE_STEP_LINE_SEARCH)
    BAD("opt.learning_rate, momentum and exaggeration are for fixed-rate steps, not a line search");
  if (rate_given && !gd_or_auto)
    BAD("opt.learning_rate, momentum and exaggeration are for fixed-rate gradient descent, not opt.kind %d",
        (int)o->opt.kind);
  if (!AUTO(o->homotopy_steps) && o->homotopy_steps < 0) BAD("homotopy_steps %d must be NLE_AUTO or >= 0", o->homotopy_steps);
  if (!AUTO(o->homotopy_steps) && o->homotopy_steps > 0 && !is_unnormalised(o->model))
    BAD("homotopy_steps: the homotopy over lambda is for ee and tee (lambda is 1 in the SNE family)");
  if (!AUTO(o->lambda_start) && !(o->lambda_start > 0 && isfinite(o->lambda_start)))
    BAD("lambda_start %g must be NLE_AUTO or positive", o->lambda_start);
  if (!AUTO(o->init) && (unsigned)o->init > NLE_INIT_GIVEN) BAD("init %d is not an initialisation", (int)o->init);
  if (o->init == NLE_INIT_GIVEN && !o->init_X) BAD("init: NLE_INIT_GIVEN needs init_X");
  if (o->init == NLE_INIT_PCA && !in->Y) BAD("init: a PCA start needs the data Y");
  if (!(o->init_scale > 0 && isfinite(o->init_scale))) BAD("init_scale %g must be positive", o->init_scale);
  if (o->checkpoint_every < 0) BAD("checkpoint_every %d must be >= 0", o->checkpoint_every);
  if (!AUTO(o->lambda_bounds) && o->lambda_bounds != 0 && o->lambda_bounds != 1) BAD("lambda_bounds must be NLE_AUTO, 0 or 1");
  if (o->keep_model && (!in->Y || in->affinities)) BAD("keep_model: a model needs the data Y and its kNN graph, not given affinities");
  if (o->keep_model && o->pca_dims > 0 && o->pca_candidates == 0)
    BAD("keep_model: the model's neighbours are in Y's space; with pca_dims, keep the re-ranking (pca_candidates)");
  if (o->wneg != NLE_WNEG_UNIFORM && !in->Y) BAD("wneg: squared-distance and kNN W- need the data Y");
  if (o->wneg == NLE_WNEG_KNN && in->affinities) BAD("wneg: kNN W- needs a kNN graph, not affinities");
  return NLE_OK;
#undef BAD
}

/* --- resolution ------------------------------------------------------------ */

static double csr_total(const nle_csr *W) {
  double total = 0;
  for (int64_t k = 0; k < W->nnz; k++) total += nle_csr_value(W, k);
  return total > 0 ? total : 1.0;
}

/* exact for small N and for what the fast engines do not serve, FFT
 * interpolation in 1-2 dimensions, Barnes-Hut or the fast Gauss transform
 * in 3 (measured on 70,000 points, docs/embeddings.md). */
static nle_repulsion auto_engine(nle_model_kind kind, nle_wneg_kind wneg, size_t n, size_t d) {
  int unnormalised = is_unnormalised(kind);
  if (n < AUTO_EXACT_BELOW || d > 3 || kind == NLE_MODEL_SNE || (unnormalised && wneg == NLE_WNEG_KNN))
    return NLE_REPULSION_EXACT;
  /* Squared-distance W- as kernel sums with charges of both signs: the FFT
   * engine takes those (Barnes-Hut and the Gauss transform here do not). */
  if (unnormalised && wneg == NLE_WNEG_SQDIST) return NLE_REPULSION_FFT;
  if (d <= 2) return NLE_REPULSION_FFT;
  return kind == NLE_MODEL_EE || kind == NLE_MODEL_SSNE ? NLE_REPULSION_FGT : NLE_REPULSION_BH;
}

/* The choices that need only N, D and the options (before any work). */
static nle_status resolve_early(nle_ctx *ctx, const nle_embed_input *in, size_t n, size_t D, nle_embed_opts *o) {
  nle_model_kind m = o->model;
  int gaussian_wplus = !AUTO(o->sigma);
  /* The Gaussian kernel's recall falls with N as it crowds the map; small
   * neighbourhoods hold it up (bench/default_sweep.sh on Fashion-MNIST, EE:
   * recall@10 at perplexity 5 / 15 / 30 0.288 / 0.260 / 0.238 at 5,000
   * points, 0.170 / 0.142 / 0.128 at 20,000, trustworthiness within 1%;
   * s-SNE 0.289 / 0.256 / 0.237 and SNE 0.296 / - / 0.245 at 5,000). */
  if (AUTO(o->perplexity)) o->perplexity = gaussian_kernel(m) ? GAUSSIAN_PERPLEXITY : 30.0;
  if (AUTO(o->k)) o->k = gaussian_wplus ? 12 : (int)ceil(3.0 * o->perplexity);
  if (AUTO(o->pca_dims))
    o->pca_dims = in->Y && !in->knn && !in->affinities && n > AUTO_PCA_MIN_N && D > AUTO_PCA_MIN_D ? AUTO_PCA_DIMS : 0;
  if (o->pca_dims >= (int)D) o->pca_dims = 0; /* nothing to reduce */
  if (AUTO(o->pca_candidates)) o->pca_candidates = o->pca_dims > 0 ? o->k : 0;
  if (o->pca_dims == 0) o->pca_candidates = 0;
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
    return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: pca_candidates %d must be at least k = %d and below the %zu points",
                     o->pca_candidates, o->k, n);
  if (!in->knn && !in->affinities && (size_t)o->k >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: k = %d neighbours need more than %zu points (lower k or the perplexity)",
                     o->k, n);
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
static void resolve_rates(nle_embed_opts *o, size_t n, double w_total) {
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

/* --- stages ----------------------------------------------------------------- */

/* Replaces Y by its first `dims` principal components (the kNN search's
 * space); *kept is the fraction of the variance they hold. */
static nle_status pca_reduce(nle_ctx *ctx, const nle_matf *Y, int dims, nle_matf **Z, double *kept,
                             nle_pca_model **keep) {
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = dims;
  nle_pca_model *pm = NULL;
  nle_matd *Zd = NULL;
  nle_status s = nle_pca_fit(ctx, Y, &po, &pm);
  if (!s) s = nle_pca_transform(ctx, pm, Y, &Zd);
  if (!s) s = nle_matd_to_matf(ctx, Zd, Z);
  if (!s) {
    double sum = 0;
    for (int i = 0; i < pm->n_components; i++) sum += pm->explained_variance[i];
    *kept = pm->total_variance > 0 ? sum / pm->total_variance : 0.0;
  }
  nle_matd_free(&Zd);
  if (!s && keep) *keep = pm;
  else nle_pca_model_free(&pm);
  return s;
}

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
    nle_ea_result *ea = NULL;
    s = nle_entropic_affinities(ctx, graph, &eo, &ea);
    if (s > 0) {
      nle__log(ctx, 0, "warning: %s", nle_ctx_error(ctx));
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
  nle_status s = pca_reduce(ctx, Y, dims, F, &kept, NULL);
  if (!s) nle__log(ctx, 0, "W- of squared distances after PCA %zu -> %d: %.4f of the variance", Y->cols, dims, kept);
  return s;
}

static void scale_first_column(nle_matd *X, double target) {
  size_t n = X->rows, d = X->cols;
  double mean = 0.0, var = 0.0;
  for (size_t i = 0; i < n; i++) mean += X->data[i * d] / (double)n;
  for (size_t i = 0; i < n; i++) var += (X->data[i * d] - mean) * (X->data[i * d] - mean) / (double)n;
  if (var > 0)
    for (size_t i = 0; i < n * d; i++) X->data[i] *= target / sqrt(var);
}

/* PCA, Laplacian eigenmaps of W+, Gaussian noise (each scaled so the first
 * column has standard deviation init_scale), or the given X. */
static nle_status initial_x(nle_ctx *ctx, const nle_matf *Y, size_t n, const nle_csr *Wp, const nle_embed_opts *o,
                            nle_matd **X) {
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
    if (!s) scale_first_column(*X, o->init_scale);
    return s;
  }
  case NLE_INIT_RANDOM: {
    s = nle_matd_alloc(ctx, n, d, X);
    nle_rng r;
    nle_rng_init(&r, nle_ctx_seed(ctx), 0x696e6974ULL);
    for (size_t i = 0; !s && i < n * d; i++) (*X)->data[i] = o->init_scale * nle_rng_normal(&r);
    return s;
  }
  case NLE_INIT_SPECTRAL: {
    /* Laplacian eigenmaps of W+ (symmetrised for SNE's conditional P). */
    nle_csr *S = NULL;
    int comps = 0, sym = o->model != NLE_MODEL_SNE;
    s = sym ? NLE_OK : nle_affinity_symmetrize(ctx, Wp, 0, &S);
    if (!s) s = nle_laplacian_eigenmap(ctx, sym ? Wp : S, o->dim, X, &comps);
    nle_csr_free(&S);
    if (!s) scale_first_column(*X, o->init_scale);
    return s;
  }
  case NLE_INIT_GIVEN:
    if (o->init_X->rows != n || o->init_X->cols != d)
      return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: init_X must be %zu x %zu, not %zu x %zu", n, d, o->init_X->rows,
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

typedef struct {
  nle_matf *Ysearch;  /* the space of the neighbour search (PCA or NULL: Y) */
  nle_csr *graph;     /* kNN graph (owned) */
  nle_csr *W, *Wk;    /* W+, sparse W- */
  nle_matd *Wsq;      /* dense squared-distance W- */
  nle_matf *Wfeat;    /* squared-distance W- features */
  double *beta;
  nle_pca_model *pca; /* the search's projection, for the model (keep_model) */
  nle_model *model;
  nle_opt *opt;
} embed_work;

static void work_free(embed_work *w) {
  nle_matf_free(&w->Ysearch);
  nle_csr_free(&w->graph);
  nle_csr_free(&w->W);
  nle_csr_free(&w->Wk);
  nle_matd_free(&w->Wsq);
  nle_matf_free(&w->Wfeat);
  free(w->beta);
  nle_pca_model_free(&w->pca);
  nle_opt_free(&w->opt);
  nle_model_free(&w->model);
}

static double max_abs(const nle_matd *X) {
  double m = 0.0;
  for (size_t i = 0; i < X->rows * X->cols; i++) m = fmax(m, fabs(X->data[i]));
  return m;
}

nle_status nle_embed(nle_ctx *ctx, const nle_embed_input *in, const nle_embed_opts *opts, nle_embed_result **out) {
  *out = NULL;
  nle_embed_opts defaults;
  if (!opts) {
    nle_embed_opts_init(&defaults);
    opts = &defaults;
  }
  nle_status s = check_opts(ctx, in, opts);
  if (s) return s;
  size_t n = in->Y ? in->Y->rows : in->knn ? (size_t)in->knn->rows : (size_t)in->affinities->rows;
  size_t D = in->Y ? in->Y->cols : 0;
  const nle_csr *given = in->knn ? in->knn : in->affinities;
  if (given && (given->rows != given->cols || given->rows < 3 || (in->Y && (size_t)given->rows != in->Y->rows)))
    return nle__fail(ctx, NLE_ERR_ARG, "nle_embed: the %s must be N x N with N >= 3%s, not %lld x %lld",
                     in->knn ? "kNN graph" : "affinities", in->Y ? " and N the number of data points" : "",
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
  double t_start = nle_time_seconds(), t0;
  embed_work w = {0};
  s = resolve_early(ctx, in, n, D, o);
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

  /* the neighbour search's space */
  t0 = nle_time_seconds();
  if (!s && o->pca_dims > 0) {
    s = pca_reduce(ctx, in->Y, o->pca_dims, &w.Ysearch, &r->pca_variance, opts->keep_model ? &w.pca : NULL);
    if (!s) nle__log(ctx, 0, "PCA %zu x %zu -> %d for the neighbour search: %.4f of the variance", n, D, o->pca_dims,
                     r->pca_variance);
  }
  r->seconds.pca = nle_time_seconds() - t0;

  /* the kNN graph: the candidates found among the components re-ranked by
   * their distances in Y (70,000 Fashion-MNIST images, 50 components, k =
   * 90: t-SNE's recall@10 0.282 without, 0.313 with, 0.318 with the pixels'
   * exact neighbours; 1.5 s against 26 s more for the exact search in 784
   * dimensions) */
  t0 = nle_time_seconds();
  if (!s && !in->affinities && !in->knn) {
    const nle_matf *space = w.Ysearch ? w.Ysearch : in->Y;
    int candidates = o->pca_candidates > 0 ? o->pca_candidates : o->k;
    s = nle_knn_graph(ctx, space, candidates, o->knn_method, &o->knn_approx, &w.graph, &r->knn_used);
    if (!s && o->pca_candidates > 0) {
      nle_csr *ranked = NULL;
      s = nle_knn_rerank(ctx, in->Y, w.graph, o->k, &ranked);
      nle_csr_free(&w.graph);
      w.graph = ranked;
    }
  }
  const nle_csr *graph = in->knn ? in->knn : w.graph;
  if (o->knn_method == NLE_KNN_AUTO) o->knn_method = r->knn_used;
  r->seconds.knn = nle_time_seconds() - t0;
  int y_released = 0;
  if (!s) release_y_after(in, o, w.Ysearch != NULL, 1, &y_released);

  /* W+ and W- */
  t0 = nle_time_seconds();
  if (!s) s = in->affinities ? nle_affinity_for_model(ctx, in->affinities, o->model, &w.W)
                             : attractive_weights(ctx, graph, o, &w.W, &w.beta);
  if (!s) {
    r->w_total = csr_total(w.W);
    nle_csr *S = NULL;
    if (o->model == NLE_MODEL_SNE) s = nle_affinity_symmetrize(ctx, w.W, 0, &S);
    int64_t comps = s ? 0 : nle__csr_components(ctx, S ? S : w.W);
    if (comps < 0) s = NLE_ERR_NOMEM;
    r->components = (int)comps;
    nle_csr_free(&S);
    if (!s && r->components > 1)
      nle__log(ctx, 0, "warning: W+ has %d connected components: they drift apart on their own, and a spectral "
               "start puts each at one point (a larger k or perplexity joins them)", r->components);
  }
  if (!s && o->wneg == NLE_WNEG_SQDIST)
    s = o->engine == NLE_REPULSION_EXACT ? nle_repulsive_dense(ctx, in->Y, o->wneg, &w.Wsq)
                                         : wneg_features(ctx, in->Y, o->wneg_dims, &w.Wfeat);
  if (!s && o->wneg == NLE_WNEG_KNN) s = nle_repulsive_knn(ctx, graph, &w.Wk);
  if (!s) release_y_after(in, o, w.Ysearch != NULL, 2, &y_released);
  r->seconds.affinities = nle_time_seconds() - t0;
  if (!s) resolve_rates(o, n, r->w_total);

  /* the initial X */
  t0 = nle_time_seconds();
  if (!s && opts->resume) s = nle_matd_alloc(ctx, n, (size_t)o->dim, &r->X);
  else if (!s) s = initial_x(ctx, w.Ysearch ? w.Ysearch : in->Y, n, w.W, o, &r->X);
  if (!opts->keep_model) nle_matf_free(&w.Ysearch); /* else the model's search space */
  if (!s) release_y_after(in, o, 1, 3, &y_released);
  r->seconds.init = nle_time_seconds() - t0;

  /* the model, the optimiser and lambda*'s bounds */
  t0 = nle_time_seconds();
  if (!s) {
    nle_model_spec spec;
    nle_model_spec_init(&spec);
    spec.kind = o->model;
    spec.lambda = o->lambda;
    spec.Wp = w.W;
    spec.wneg = o->wneg;
    spec.Wneg_dense = w.Wsq;
    spec.Wneg_sparse = w.Wk;
    spec.engine = o->engine;
    spec.theta = o->theta;
    spec.fft = o->fft;
    spec.fgt = o->fgt;
    spec.Wneg_features = w.Wfeat;
    s = nle_model_new(ctx, &spec, &w.model);
  }
  if (!s) {
    s = nle_opt_new(ctx, w.model, w.W, &o->opt, &w.opt);
    if (s == NLE_ERR_MEMCAP && AUTO(opts->opt.kind) && o->opt.kind == NLE_OPT_SD) {
      /* The automatic line-search optimiser is SD where its factor fits (a
       * million-point Fashion-MNIST graph's needed 51.7 GiB at kappa 7),
       * else L-BFGS, which needs none. */
      nle__log(ctx, 0, "note: %s; L-BFGS instead", nle_ctx_error(ctx));
      o->opt.kind = NLE_OPT_LBFGS;
      s = nle_opt_new(ctx, w.model, w.W, &o->opt, &w.opt);
    }
  }
  if (!s && o->lambda_bounds) {
    int dense = n <= BOUNDS_DENSE_MAX_N;
    s = w.Wfeat ? nle_ee_lambda_bounds_features(ctx, w.W, w.Wfeat, &r->lambda_lower, &r->lambda_upper)
        : dense ? nle_ee_lambda_bounds(ctx, w.W, o->wneg, w.Wsq, w.Wk, &r->lambda_lower, &r->lambda_upper)
                : nle_ee_lambda_bounds_lanczos(ctx, w.W, o->wneg, w.Wsq, w.Wk, &r->lambda_lower, &r->lambda_upper);
    /* With uniform W- the spectrum of L- is 0 and N (N - 1 times), and the
     * two bounds meet at lambda2(L+) / N: lambda* itself. */
    if (!s && o->wneg == NLE_WNEG_UNIFORM)
      nle__log(ctx, 0, "lambda* = %.4g (lambda2(L+) / N, exact for uniform W-; EE paper eqs. 11-12, %s)",
               r->lambda_lower, dense ? "dense eigenvalues" : "Lanczos");
    else if (!s)
      nle__log(ctx, 0, "lambda* bounds: %.4g <= lambda* <= %.4g (EE paper eqs. 11-12, %s)", r->lambda_lower,
               r->lambda_upper, w.Wfeat ? "Lanczos and Gershgorin" : dense ? "dense eigenvalues" : "Lanczos");
    else if (!(o->homotopy_steps > 0 && AUTO(o->lambda_start))) { /* only informative: go on without them */
      nle__log(ctx, 0, "warning: no lambda* bounds: %s", nle_ctx_error(ctx));
      r->lambda_lower = r->lambda_upper = NAN;
      s = NLE_OK;
    }
  }
  if (!s && o->homotopy_steps > 0 && AUTO(o->lambda_start)) {
    /* fixed rates: from lambda / 100 (the t-EE recipe); line searches: from
     * 1.5 x the upper bound of lambda*, where X = 0 is still the minimiser
     * and the path starts on its one branch (EE paper sec. 4.4) */
    if (o->step == NLE_STEP_FIXED_RATE) o->lambda_start = o->lambda / 100.0;
    else if (isfinite(r->lambda_upper)) o->lambda_start = 1.5 * r->lambda_upper;
    else s = nle__fail(ctx, NLE_ERR_ARG, "nle_embed: lambda_start: no lambda* bounds to start the homotopy from; give it");
  }
  if (o->homotopy_steps == 0 && AUTO(o->lambda_start)) o->lambda_start = 0.0;
  r->seconds.plan = nle_time_seconds() - t0;
  if (!s && o->lambda_start > 0 && o->homotopy_steps > 0 && o->lambda_start > o->lambda)
    nle__log(ctx, 1, "homotopy from lambda %.4g down to %.4g", o->lambda_start, o->lambda);

  /* checkpoints */
  if (!s && opts->resume) {
    s = nle_opt_load_checkpoint(ctx, w.opt, r->X, opts->resume, r->fingerprint);
    if (!s) {
      nle_opt_state *st = nle__opt_state(w.opt);
      r->resumed = 1;
      r->resumed_iteration = st->path_total.iterations + st->rep.iterations;
    }
  }
  if (!s && opts->checkpoint) s = nle_opt_set_checkpoint(ctx, w.opt, opts->checkpoint, o->checkpoint_every, r->fingerprint);

  /* the run */
  t0 = nle_time_seconds();
  if (!s) {
    if (o->homotopy_steps > 0) {
      nle_homotopy_opts ho;
      nle_homotopy_opts_init(&ho);
      ho.lambda_start = o->lambda_start;
      ho.lambda_end = o->lambda;
      ho.steps = o->homotopy_steps;
      s = nle_homotopy_run(ctx, w.model, w.opt, r->X, &ho, opts->on_step, opts->on_step_user, &r->report);
    } else {
      s = nle_opt_run(ctx, w.opt, r->X, &r->report);
    }
  }
  r->seconds.optimize = nle_time_seconds() - t0;
  nle_status warning = s > 0 ? s : NLE_OK;
  if (s > 0) s = NLE_OK;
  if (!s && !(isfinite(r->report.E) && isfinite(r->report.E0)))
    s = nle__fail(ctx, NLE_ERR_NUMERIC, "nle_embed: E became %g after %d iterations (the initial scale, lambda or "
                  "learning rate is too large for this data)", r->report.E, r->report.iterations);
  if (!s) {
    r->map_extent = max_abs(r->X);
    if (!isfinite(r->map_extent))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "nle_embed: the embedding has non-finite coordinates after %d iterations",
                    r->report.iterations);
    else if (r->map_extent > 1e5)
      nle__log(ctx, 0, "warning: the map reaches |x| = %.3g: its scale exploded (well-separated clusters drift apart; "
               "a smaller learning rate or lambda keeps them in view)", r->map_extent);
  }
  if (!s && opts->keep_model) {
    nle_trained_spec ts;
    nle_trained_spec_init(&ts);
    ts.kind = o->model;
    ts.lambda = o->lambda;
    ts.wneg = o->wneg;
    ts.perplexity = o->perplexity;
    ts.sigma = o->sigma; /* NLE_AUTO: entropic */
    ts.source = in->source ? in->source : "";
    s = nle_trained_new(ctx, &ts, in->Y, r->X, graph, w.beta, &r->trained);
    if (!s && w.pca) { /* new points search as training did */
      r->trained->pca_dims = o->pca_dims;
      r->trained->pca_candidates = o->pca_candidates;
      r->trained->pca_mean = w.pca->mean;
      r->trained->pca_components = w.pca->components;
      r->trained->pca_Y = w.Ysearch;
      w.pca->mean = w.pca->components = NULL;
      w.Ysearch = NULL;
    }
  }
  work_free(&w);
  r->seconds.total = nle_time_seconds() - t_start;
  if (s < 0) {
    nle_embed_result_free(&r);
    return s;
  }
  *out = r;
  return warning;
}
