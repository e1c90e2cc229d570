/* cmd_embed.c — `nlembed ee|tee|ssne|tsne|sne`: nonlinear embeddings from
 * entropic affinities, minimised by a partial-Hessian optimiser. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  const char *name, *title;
  nle_model_kind kind;
  double lambda; /* default */
} model_info;

static const model_info models[] = {
    {"ee", "EE", NLE_MODEL_EE, 100.0},        {"tee", "t-EE", NLE_MODEL_TEE, 100.0},
    {"ssne", "s-SNE", NLE_MODEL_SSNE, 1.0},   {"tsne", "t-SNE", NLE_MODEL_TSNE, 1.0},
    {"sne", "SNE", NLE_MODEL_SNE, 1.0},
};

/* --repulsion auto: below this many points the exact engine is as fast as
 * the fast ones (bench/results/engine_crossover.txt) and gives exact E. */
enum { AUTO_EXACT_BELOW = 5000 };

/* Fixed-rate descent's defaults (measured where they are used). */
#define FIXED_RATE_FFT_BOX 1.5
#define AUTO_MOMENTUM 0.95

/* The sum of W's entries (the auto rates' scale). */
static double csr_total(const nle_csr *W) {
  double total = 0;
  for (int64_t k = 0; k < W->nnz; k++) total += nle_csr_value(W, k);
  return total > 0 ? total : 1.0;
}

/* The engine --repulsion auto picks: exact for small N and for what the fast
 * engines do not serve, FFT interpolation in 1-2 dimensions, Barnes-Hut in 3. */
static nle_repulsion auto_engine(nle_model_kind kind, nle_wneg_kind wneg, size_t n, size_t d) {
  int unnormalised = kind == NLE_MODEL_EE || kind == NLE_MODEL_TEE;
  if (n < AUTO_EXACT_BELOW || d > 3 || kind == NLE_MODEL_SNE || (unnormalised && wneg == NLE_WNEG_KNN))
    return NLE_REPULSION_EXACT;
  /* Squared-distance W- as kernel sums with charges of both signs: the FFT
   * engine takes those (Barnes-Hut and the Gauss transform here do not). */
  if (unnormalised && wneg == NLE_WNEG_SQDIST) return NLE_REPULSION_FFT;
  /* Measured on 70,000 points (docs/embeddings.md): in 1-2-D the FFT grid
   * is fastest for both kernels; in 3-D its grid is capped and coarse, and
   * for the Gaussian kernel the fast Gauss transform is both faster and
   * more accurate than Barnes-Hut. */
  if (d <= 2) return NLE_REPULSION_FFT;
  return kind == NLE_MODEL_EE || kind == NLE_MODEL_SSNE ? NLE_REPULSION_FGT : NLE_REPULSION_BH;
}

static const char *help_fmt =
    "Usage: nlembed %s [options] INPUT -o OUTPUT\n"
    "       nlembed %s [options] --affinities W.mtx [INPUT] -o OUTPUT\n"
    "\n"
    "%s embedding of INPUT (dissertation ch. 3; EE paper). Affinities W+ are\n"
    "entropic (perplexity) on the kNN graph, symmetrised as (P + P^T) / 2%s.\n"
    "The objective is minimised from a small initial X by a partial-Hessian\n"
    "direction with a backtracking line search. Repulsion is exact (all pairs,\n"
    "O(N^2)) for small N and by FFT interpolation (O(N)) above %d points where\n"
    "the model allows (dissertation ch. 5). Prints one JSON line on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE    the N x d embedding (.npy, .csv, ...)\n"
    "  --affinities FILE    W+ given as an N x N Matrix Market file (e.g. from\n"
    "                       `nlembed affinity`) instead of built from INPUT:\n"
    "                       symmetrised (and normalised for ssne/tsne; rows\n"
    "                       normalised for sne); INPUT is then optional (init\n"
    "                       spectral by default without it)\n"
    "  -d, --dim N          embedding dimension (default 2)\n"
    "  -p, --perplexity K   entropic affinities' perplexity (default 30)\n"
    "  -k, --neighbors K    kNN graph size (default 3 x perplexity)\n"    "  --pca N              search neighbours among the first N principal components\n"
    "                       of INPUT (as Rtsne's default of 50) instead of all D\n"
    "                       columns: much faster for large D (default: off); the\n"
    "                       candidates found are re-ranked by their distances in\n"
    "                       INPUT\n"
    "  --pca-candidates C   --pca: candidates per point found among the components\n"
    "                       and re-ranked (default k; 0: keep the components'\n"
    "                       distances, no re-ranking)\n"
    "  --lambda L           weight of the repulsion (default %g)\n"
    "%s"
    "  --repulsion NAME     auto (default: exact below %d points, else fft where\n"
    "                       the model allows), exact (all pairs), bh (Barnes-Hut),\n"
    "                       fft (FFT interpolation) or fgt (fast Gauss transform:\n"
    "                       EE, s-SNE); bh, fft, fgt: d <= 3, t-SNE, s-SNE,\n"
    "                       EE/t-EE with uniform W-\n"
    "  --theta T            bh: opening angle (default 0.5; error about 0.1 T^2)\n"
    "  --fgt-order P        fgt: terms per axis of its series (default 6)\n"
    "  --fgt-reach K        fgt: boxes further apart than K box sides do not\n"
    "                       interact (default 4: error floor about 3e-5)\n"
    "  --accuracy-iters N   bh, fft, fgt: start coarse (theta 2, boxes 4x, order 1)\n"
    "                       and reach the set accuracy after N iterations\n"
    "                       (default 0: off)\n"
    "  --fft-order P        fft: interpolation nodes per box and axis (default 3)\n"
    "  --fft-box W          fft: box side in kernel lengths (default 0.85, 1.5 with\n"
    "                       --learning-rate; on a 70,000-point t-SNE map the sums'\n"
    "                       error is 1e-3 and the forces' 2.6e-2 at 0.85, 6e-3\n"
    "                       at 0.5, 1.4e-1 at 1.5)\n"
    "  --optimizer NAME     sd (spectral direction, default), sd- (SD plus the psd\n"
    "                       diagonal blocks of the repulsive Hessian, by CG), fp\n"
    "                       (fixed-point diagonal), gd (gradient descent), lbfgs, cg\n"
    "  --kappa N            sd, sd-: neighbours per point kept in L+ (default 7;\n"
    "                       0 = all)\n"
    "  --sdm-tol T          sd-: its CG stops at relative residual T (default 0.1)\n"
    "  --sdm-iters N        sd-: or after N CG iterations (default 50)\n"
    "  --learning-rate R    gd: a fixed rate with momentum and gains instead of the\n"
    "                       line search, as t-SNE codes run it; auto = max(N /\n"
    "                       (4 exaggeration), 50) / sum(W+) (N for ee, tee),\n"
    "                       then --final-learning-rate auto, momentum 0.95\n"
    "  --final-learning-rate R  the rate after the exaggeration phase (default:\n"
    "                       the first; auto = max(N / 2, 200) / sum(W+))\n"
    "  --momentum M         gd with a rate: momentum after exaggeration (0.8, or\n"
    "                       0.95 with --learning-rate auto; 0.5 during it)\n"
    "  --exaggeration A     gd with a rate: attraction x A at first (default 1)\n"
    "  --exaggeration-iters N  its length (default 250)\n"
    "  --no-gains           gd with a rate: no per-coordinate gains\n"
    "  --init NAME|FILE     pca (default), spectral (Laplacian eigenmaps of W+, by\n"
    "                       ARPACK), random, or an N x d file; the first three are\n"
    "                       scaled to a standard deviation of 1e-4 (--init-scale)\n"
    "  --init-scale S       initial standard deviation of the first dimension\n"
    "  --max-iters N        iterations (default 1000)\n"
    "  --tol T              stop below this relative decrease of E (default 1e-6)\n"
    "  --time-budget S      stop after S seconds\n"
    "  --trace FILE         write 'iteration,seconds,E,evaluations' per iteration\n"
    "                       (CSV; seconds count from the optimiser's start). When\n"
    "                       stderr is not a terminal, or with --verbose, a line\n"
    "                       with the iteration, E, step and time every 2 s\n"
    "  --save-labels FILE   also write the dataset's labels\n"
    "  --sigma S            W+ = Gaussian affinities exp(-d^2 / 2 S^2) on the kNN\n"
    "                       graph (-k, default 12) instead of entropic ones\n"
    "  --homotopy STEPS     minimise over STEPS log-spaced lambda values from\n"
    "                       --lambda-start (default: 1.5 x the upper bound u1 of\n"
    "                       lambda*, EE and t-EE) to --lambda (EE paper 4.4)\n"
    "  --lambda-start L     first lambda of the homotopy\n"
    "  --path-prefix P      write X after every lambda to P000.npy, P001.npy, ...\n"
    "  --checkpoint FILE    save the run's state to FILE every --checkpoint-every\n"
    "                       iterations, after every homotopy step, and on SIGINT or\n"
    "                       SIGTERM (then exit 130 or 143 without writing OUTPUT)\n"
    "  --checkpoint-every N iterations between checkpoints (default 50)\n"
    "  --resume FILE        continue the checkpointed run: same INPUT and options\n"
    "                       (--max-iters and --time-budget may change); the result\n"
    "                       is the uninterrupted run's, bit for bit\n"
    "  --save-model FILE    also write a model file for `nlembed transform` (the\n"
    "                       out-of-sample maps): X, betas, options and the data\n"
    "  --model-data MODE    copy (default): the training data goes into the model\n"
    "                       file; reference: only its name (INPUT) and a checksum,\n"
    "                       and transform reloads it\n"
    "\n" CLI_KNN_HELP "\n" CLI_COMMON_HELP;

enum { OPT_LAMBDA = OPT_COMMAND_BASE, OPT_WNEG, OPT_OPTIMIZER, OPT_KAPPA_E, OPT_INIT, OPT_INIT_SCALE, OPT_MAX_ITERS,
       OPT_TOL_E, OPT_BUDGET, OPT_SAVE_LABELS_E, OPT_SIGMA_E, OPT_HOMOTOPY, OPT_LAMBDA_START, OPT_PATH,
       OPT_RATE, OPT_RATE_FINAL, OPT_MOMENTUM, OPT_EXAG, OPT_EXAG_ITERS, OPT_NO_GAINS, OPT_CHECKPOINT, OPT_CHECKPOINT_EVERY,
       OPT_RESUME, OPT_SAVE_MODEL, OPT_MODEL_DATA, OPT_SDM_TOL, OPT_SDM_ITERS, OPT_AFFINITIES, OPT_TRACE, OPT_REPULSION, OPT_THETA, OPT_FFT_ORDER, OPT_FFT_BOX, OPT_PCA, OPT_ACCURACY_ITERS, OPT_FGT_ORDER, OPT_FGT_REACH, OPT_WNEG_DIMS, OPT_PCA_CANDIDATES };

/* Dense bounds need two N x N eigendecompositions: for small N; Lanczos
 * above. Lanczos needs a sparse Cholesky factor of L+, which fills in: on
 * 70,000 Fashion-MNIST points (90 neighbours) it took 30 s of a 70 s EE
 * run, only to print a note. Above BOUNDS_INFO_MAX_N the bounds are
 * computed only when --homotopy needs them. */
enum { BOUNDS_DENSE_MAX_N = 2000, BOUNDS_INFO_MAX_N = 20000 };

typedef struct {
  cli_env *env;
  const char *prefix;
  int steps;
} path_writer;

/* --trace: one CSV line per iteration; a homotopy's runs continue the count
 * and the clock. */
typedef struct {
  cli_env *env;
  FILE *file;        /* --trace, or NULL */
  int lines;         /* progress lines on stderr (logs, --verbose) */
  double seconds0, last_seconds, last_line;
  int iterations0, last_iteration, evaluations0, last_evaluations;
} trace_writer;

static trace_writer trace_state;

/* After every iteration: the --trace CSV line, and on stderr (when it is not
 * a terminal showing the bar, or with --verbose) a progress line with E, the
 * step and the time every two seconds. A homotopy's runs continue the count
 * and the clock. */
static void write_trace(void *user, int iteration, double seconds, double E, int evaluations, double step) {
  trace_writer *t = user;
  if (iteration <= t->last_iteration) { /* a new run of the homotopy */
    t->iterations0 += t->last_iteration;
    t->seconds0 += t->last_seconds;
    t->evaluations0 += t->last_evaluations;
  }
  t->last_iteration = iteration;
  t->last_seconds = seconds;
  t->last_evaluations = evaluations;
  double now = t->seconds0 + seconds;
  if (t->file)
    fprintf(t->file, "%d,%.6f,%.12g,%d\n", t->iterations0 + iteration, now, E, t->evaluations0 + evaluations);
  if (t->lines && now - t->last_line >= 2.0 && isfinite(E)) {
    t->last_line = now;
    fprintf(stderr, "nlembed %s: iteration %d, E %.8g, step %.3g, %d evaluations, %.1f s\n", t->env->command,
            t->iterations0 + iteration, E, step, t->evaluations0 + evaluations, now);
  }
}

/* Homotopy callback: a progress line per lambda, and X saved when asked. */
static int write_path(void *user, int step, double lambda, const nle_matd *X, const nle_opt_report *rep) {
  path_writer *pw = user;
  cli_note(pw->env, "homotopy %d/%d: lambda %.4g, E %.6g, %d iterations", step + 1, pw->steps, lambda, rep->E,
           rep->iterations);
  if (!pw->prefix) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s%03d.npy", pw->prefix, step);
  if (nle_write_matd(pw->env->ctx, path, X)) {
    fprintf(stderr, "nlembed %s: error: %s\n", pw->env->command, nle_ctx_error(pw->env->ctx));
    return 1;
  }
  return 0;
}

/* W+ on the kNN graph: entropic affinities (perplexity) or, when sigma > 0,
 * Gaussian ones of that width; symmetrised, and normalised to sum 1 for the
 * normalised models; the conditional P itself for SNE (entropic). */
static nle_status attractive_weights(cli_env *env, const nle_csr *graph, double perplexity, double sigma,
                                     nle_model_kind kind, nle_csr **W, double **beta) {
  int normalised = kind == NLE_MODEL_SSNE || kind == NLE_MODEL_TSNE;
  nle_csr *P = NULL;
  nle_status s;
  if (sigma > 0) {
    nle_affinity_opts ao;
    nle_affinity_opts_init(&ao);
    ao.sigma = sigma;
    s = nle_affinity_graph(env->ctx, graph, &ao, &P); /* already symmetric */
    if (!s && !normalised) { /* EE, t-EE: the symmetric Gaussian W+ as is */
      *W = P;
      return NLE_OK;
    }
  } else {
    nle_ea_opts eo;
    nle_ea_opts_init(&eo);
    eo.perplexity = perplexity;
    nle_ea_result *ea = NULL;
    s = nle_entropic_affinities(env->ctx, graph, &eo, &ea);
    if (s > 0) {
      cli_note(env, "warning: %s", nle_ctx_error(env->ctx));
      s = NLE_OK;
    }
    if (!s) {
      P = ea->P;
      ea->P = NULL;
      *beta = ea->beta; /* kept for the out-of-sample maps */
      ea->beta = NULL;
    }
    nle_ea_result_free(&ea);
    if (!s && kind == NLE_MODEL_SNE) {
      *W = P;
      return NLE_OK;
    }
  }
  if (!s) s = nle_affinity_symmetrize(env->ctx, P, normalised, W);
  nle_csr_free(&P);
  return s;
}

/* --pca: replaces the dataset's points by their first `dims` principal
 * components, on which everything downstream (kNN, W-, PCA start) works. */
static nle_status reduce_input(cli_env *env, nle_dataset *ds, int dims, nle_matf **raw) {
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = dims;
  nle_pca_model *pm = NULL;
  nle_matd *Z = NULL;
  nle_matf *Zf = NULL;
  nle_status s = nle_pca_fit(env->ctx, ds->X, &po, &pm);
  if (!s) s = nle_pca_transform(env->ctx, pm, ds->X, &Z);
  if (!s) s = nle_matd_to_matf(env->ctx, Z, &Zf);
  if (!s) {
    double kept = 0;
    for (int i = 0; i < pm->n_components; i++) kept += pm->explained_variance[i];
    cli_note(env, "PCA %zu x %zu -> %d for the neighbour search: %.4f of the variance", ds->X->rows, ds->X->cols,
             dims, pm->total_variance > 0 ? kept / pm->total_variance : 0.0);
    if (raw) *raw = ds->X;
    else nle_matf_free(&ds->X);
    ds->X = Zf;
  }
  nle_matd_free(&Z);
  nle_pca_model_free(&pm);
  return s;
}

/* The features whose squared distances are W- with a fast engine: the data
 * itself when it has at most `dims` columns, else its first `dims`
 * principal components. */
static nle_status wneg_features(cli_env *env, const nle_matf *Y, int dims, nle_matf **F) {
  if (Y->cols <= (size_t)dims) {
    nle_status s = nle_matf_alloc(env->ctx, Y->rows, Y->cols, F);
    if (!s) memcpy((*F)->data, Y->data, Y->rows * Y->cols * sizeof(float));
    return s;
  }
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = dims;
  nle_pca_model *pm = NULL;
  nle_matd *Z = NULL;
  nle_status s = nle_pca_fit(env->ctx, Y, &po, &pm);
  if (!s) s = nle_pca_transform(env->ctx, pm, Y, &Z);
  if (!s) s = nle_matd_to_matf(env->ctx, Z, F);
  if (!s) {
    double kept = 0;
    for (int i = 0; i < pm->n_components; i++) kept += pm->explained_variance[i];
    cli_note(env, "W- of squared distances after PCA %zu -> %d: %.4f of the variance", Y->cols, dims,
             pm->total_variance > 0 ? kept / pm->total_variance : 0.0);
  }
  nle_matd_free(&Z);
  nle_pca_model_free(&pm);
  return s;
}

/* PCA, Laplacian eigenmaps of W+, or Gaussian noise, scaled so the first
 * column has standard deviation `scale`; or a file of N x d. */
static nle_status initial_x(cli_env *env, const nle_matf *Y, size_t n, const nle_csr *Wp, int Wp_sym, const char *init,
                            size_t d, double scale, nle_matd **X) {
  nle_status s;
  if (!strcmp(init, "pca")) {
    nle_pca_opts po;
    nle_pca_opts_init(&po);
    po.n_components = (int)d;
    nle_pca_model *pm;
    s = nle_pca_fit(env->ctx, Y, &po, &pm);
    if (!s) s = nle_pca_transform(env->ctx, pm, Y, X);
    double sd = s ? 0.0 : sqrt(pm->explained_variance[0]);
    nle_pca_model_free(&pm);
    for (size_t i = 0; !s && sd > 0 && i < (*X)->rows * d; i++) (*X)->data[i] *= scale / sd;
    return s;
  }
  if (!strcmp(init, "random")) {
    s = nle_matd_alloc(env->ctx, n, d, X);
    nle_rng r;
    nle_rng_init(&r, nle_ctx_seed(env->ctx), 0x696e6974ULL);
    for (size_t i = 0; !s && i < n * d; i++) (*X)->data[i] = scale * nle_rng_normal(&r);
    return s;
  }
  if (!strcmp(init, "spectral")) {
    /* Laplacian eigenmaps of W+ (symmetrised for SNE's conditional P). */
    nle_csr *S = NULL;
    int comps = 0;
    s = Wp_sym ? NLE_OK : nle_affinity_symmetrize(env->ctx, Wp, 0, &S);
    if (!s) s = nle_laplacian_eigenmap(env->ctx, Wp_sym ? Wp : S, (int)d, X, &comps);
    nle_csr_free(&S);
    if (!s && comps > 1)
      cli_note(env, "warning: W+ has %d connected components; the spectral initialisation puts each at one point "
               "of a few directions (try a larger -k, or --init pca)", comps);
    double mean = 0.0, var = 0.0;
    for (size_t i = 0; !s && i < n; i++) mean += (*X)->data[i * d] / (double)n;
    for (size_t i = 0; !s && i < n; i++) var += pow((*X)->data[i * d] - mean, 2) / (double)n;
    for (size_t i = 0; !s && var > 0 && i < n * d; i++) (*X)->data[i] *= scale / sqrt(var);
    return s;
  }
  return cli_load_embedding(env, init, X); /* the caller checks its shape */
}

int cmd_embed(int argc, char **argv, const char *name) {
  const model_info *mi = NULL;
  for (size_t i = 0; i < sizeof models / sizeof *models; i++)
    if (!strcmp(models[i].name, name)) mi = &models[i];
  if (!mi) return 2;
  int unnormalised = mi->kind == NLE_MODEL_EE || mi->kind == NLE_MODEL_TEE;
  char help[8192];
  snprintf(help, sizeof help, help_fmt, mi->name, mi->name, mi->title, unnormalised ? "" : " and normalised to sum 1",
           AUTO_EXACT_BELOW, mi->lambda,
           unnormalised ? "  --wneg NAME          repulsive weights: uniform (default), sqdist (squared\n"
                          "                       input distances: a dense N x N matrix with exact\n"
                          "                       repulsion, else distances after PCA to --wneg-dims,\n"
                          "                       summed by FFT), knn (on the kNN graph)\n"
                          "  --wneg-dims N        sqdist with a fast engine: PCA dimensions (30)\n"
                        : "",
           AUTO_EXACT_BELOW);
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"dim", required_argument, 0, 'd'},
      {"perplexity", required_argument, 0, 'p'}, {"neighbors", required_argument, 0, 'k'},
      {"lambda", required_argument, 0, OPT_LAMBDA}, {"wneg", required_argument, 0, OPT_WNEG},
      {"wneg-dims", required_argument, 0, OPT_WNEG_DIMS},
      {"optimizer", required_argument, 0, OPT_OPTIMIZER}, {"kappa", required_argument, 0, OPT_KAPPA_E},
      {"init", required_argument, 0, OPT_INIT}, {"init-scale", required_argument, 0, OPT_INIT_SCALE},
      {"max-iters", required_argument, 0, OPT_MAX_ITERS}, {"tol", required_argument, 0, OPT_TOL_E},
      {"time-budget", required_argument, 0, OPT_BUDGET}, {"save-labels", required_argument, 0, OPT_SAVE_LABELS_E},
      {"sigma", required_argument, 0, OPT_SIGMA_E}, {"homotopy", required_argument, 0, OPT_HOMOTOPY},
      {"lambda-start", required_argument, 0, OPT_LAMBDA_START}, {"path-prefix", required_argument, 0, OPT_PATH},
      {"learning-rate", required_argument, 0, OPT_RATE}, {"final-learning-rate", required_argument, 0, OPT_RATE_FINAL},
      {"momentum", required_argument, 0, OPT_MOMENTUM},
      {"exaggeration", required_argument, 0, OPT_EXAG}, {"exaggeration-iters", required_argument, 0, OPT_EXAG_ITERS},
      {"no-gains", no_argument, 0, OPT_NO_GAINS}, {"checkpoint", required_argument, 0, OPT_CHECKPOINT},
      {"checkpoint-every", required_argument, 0, OPT_CHECKPOINT_EVERY}, {"resume", required_argument, 0, OPT_RESUME},
      {"save-model", required_argument, 0, OPT_SAVE_MODEL}, {"model-data", required_argument, 0, OPT_MODEL_DATA},
      {"affinities", required_argument, 0, OPT_AFFINITIES}, {"trace", required_argument, 0, OPT_TRACE},
      {"repulsion", required_argument, 0, OPT_REPULSION}, {"theta", required_argument, 0, OPT_THETA}, {"fft-order", required_argument, 0, OPT_FFT_ORDER}, {"fft-box", required_argument, 0, OPT_FFT_BOX}, {"fgt-order", required_argument, 0, OPT_FGT_ORDER}, {"fgt-reach", required_argument, 0, OPT_FGT_REACH}, {"pca", required_argument, 0, OPT_PCA}, {"pca-candidates", required_argument, 0, OPT_PCA_CANDIDATES}, {"accuracy-iters", required_argument, 0, OPT_ACCURACY_ITERS}, {"sdm-tol", required_argument, 0, OPT_SDM_TOL}, {"sdm-iters", required_argument, 0, OPT_SDM_ITERS},
      CLI_KNN_OPTIONS, CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, mi->name, help)) return 1;
  cli_knn_choice choice;
  cli_knn_choice_init(&choice);
  env.knn = &choice;
  nle_opt_opts oo;
  nle_opt_opts_init(&oo);
  int engine = -1; /* auto */
  int pca_dims = 0;   /* 0: neighbours in the input space */
  int pca_candidates = -1; /* -1: k; 0: no re-ranking */
  int fft_box_set = 0, momentum_set = 0;
  nle_fft_opts fft;
  nle_fgt_opts fgt;
  nle_fgt_opts_init(&fgt);
  nle_fft_opts_init(&fft);
  double theta = 0.5;
  double perplexity = 30, lambda = mi->lambda, scale = 1e-4, sigma = 0, lambda_start = 0;
  int homotopy = 0;
  const char *path_prefix = NULL;
  int k = 0;
  long long v;
  size_t d = 2;
  nle_wneg_kind wneg = NLE_WNEG_UNIFORM;
  int wneg_dims = 30;
  const char *output = NULL, *init = "pca", *save_labels = NULL, *checkpoint = NULL, *resume = NULL, *save_model = NULL, *affinities = NULL, *trace = NULL;
  int c, checkpoint_every = 50, model_data_copy = 1;
  while ((c = cli_next_option(&env, argc, argv, "o:d:p:k:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'd':
      if (cli_parse_int(optarg, 1, 64, &v)) d = (size_t)v;
      else env.rc = cli_usage_error(mi->name, "-d takes 1-64");
      break;
    case 'p':
      if (!cli_parse_double(optarg, &perplexity) || perplexity <= 1)
        env.rc = cli_usage_error(mi->name, "--perplexity takes a number above 1");
      break;
    case 'k':
      if (cli_parse_int(optarg, 2, 1 << 20, &v)) k = (int)v;
      else env.rc = cli_usage_error(mi->name, "-k takes an integer >= 2");
      break;
    case OPT_LAMBDA:
      if (!cli_parse_double(optarg, &lambda) || lambda <= 0) env.rc = cli_usage_error(mi->name, "--lambda takes a positive number");
      break;
    case OPT_WNEG:
      if (!unnormalised) env.rc = cli_usage_error(mi->name, "--wneg is for ee and tee");
      else if (!strcmp(optarg, "uniform")) wneg = NLE_WNEG_UNIFORM;
      else if (!strcmp(optarg, "sqdist")) wneg = NLE_WNEG_SQDIST;
      else if (!strcmp(optarg, "knn")) wneg = NLE_WNEG_KNN;
      else env.rc = cli_usage_error(mi->name, "--wneg takes uniform, sqdist or knn");
      break;
    case OPT_OPTIMIZER:
      if (!strcmp(optarg, "sd")) oo.kind = NLE_OPT_SD;
      else if (!strcmp(optarg, "fp")) oo.kind = NLE_OPT_FP;
      else if (!strcmp(optarg, "gd")) oo.kind = NLE_OPT_GD;
      else if (!strcmp(optarg, "lbfgs")) oo.kind = NLE_OPT_LBFGS;
      else if (!strcmp(optarg, "cg")) oo.kind = NLE_OPT_CG;
      else if (!strcmp(optarg, "sd-") || !strcmp(optarg, "sdm")) oo.kind = NLE_OPT_SDM;
      else env.rc = cli_usage_error(mi->name, "--optimizer takes sd, sd-, fp, gd, lbfgs or cg");
      break;
    case OPT_KAPPA_E:
      if (cli_parse_int(optarg, 0, 1 << 20, &v)) oo.kappa = (int)v;
      else env.rc = cli_usage_error(mi->name, "--kappa takes an integer >= 0");
      break;
    case OPT_INIT: init = optarg; break;
    case OPT_INIT_SCALE:
      if (!cli_parse_double(optarg, &scale) || scale <= 0) env.rc = cli_usage_error(mi->name, "--init-scale takes a positive number");
      break;
    case OPT_MAX_ITERS:
      if (cli_parse_int(optarg, 0, 100000000, &v)) oo.max_iters = (int)v;
      else env.rc = cli_usage_error(mi->name, "--max-iters takes an integer >= 0");
      break;
    case OPT_TOL_E:
      if (!cli_parse_double(optarg, &oo.tol) || oo.tol < 0) env.rc = cli_usage_error(mi->name, "--tol takes a number >= 0");
      break;
    case OPT_BUDGET:
      if (!cli_parse_double(optarg, &oo.time_budget) || oo.time_budget < 0)
        env.rc = cli_usage_error(mi->name, "--time-budget takes seconds >= 0");
      break;
    case OPT_SAVE_LABELS_E: save_labels = optarg; break;
    case OPT_SIGMA_E:
      if (mi->kind == NLE_MODEL_SNE) env.rc = cli_usage_error(mi->name, "--sigma is for ee, tee, ssne and tsne (SNE needs conditional P)");
      else if (!cli_parse_double(optarg, &sigma) || sigma <= 0) env.rc = cli_usage_error(mi->name, "--sigma takes a positive width");
      break;
    case OPT_HOMOTOPY:
      if (cli_parse_int(optarg, 1, 100000, &v)) homotopy = (int)v;
      else env.rc = cli_usage_error(mi->name, "--homotopy takes a number of lambda values");
      break;
    case OPT_LAMBDA_START:
      if (!cli_parse_double(optarg, &lambda_start) || lambda_start <= 0)
        env.rc = cli_usage_error(mi->name, "--lambda-start takes a positive number");
      break;
    case OPT_PATH: path_prefix = optarg; break;
    case OPT_RATE:
      if (!strcmp(optarg, "auto")) oo.learning_rate = -1.0; /* resolved once N is known */
      else if (!cli_parse_double(optarg, &oo.learning_rate) || oo.learning_rate <= 0)
        env.rc = cli_usage_error(mi->name, "--learning-rate takes a positive number or auto");
      break;
    case OPT_RATE_FINAL:
      if (!strcmp(optarg, "auto")) oo.learning_rate_final = -1.0;
      else if (!cli_parse_double(optarg, &oo.learning_rate_final) || oo.learning_rate_final <= 0)
        env.rc = cli_usage_error(mi->name, "--final-learning-rate takes a positive number or auto");
      break;
    case OPT_MOMENTUM:
      if (!cli_parse_double(optarg, &oo.momentum) || oo.momentum < 0 || oo.momentum >= 1)
        env.rc = cli_usage_error(mi->name, "--momentum takes a number in [0, 1)");
      momentum_set = 1;
      break;
    case OPT_EXAG:
      if (!cli_parse_double(optarg, &oo.exaggeration) || oo.exaggeration < 1)
        env.rc = cli_usage_error(mi->name, "--exaggeration takes a number >= 1");
      break;
    case OPT_EXAG_ITERS:
      if (cli_parse_int(optarg, 0, 100000000, &v)) oo.exaggeration_iters = (int)v;
      else env.rc = cli_usage_error(mi->name, "--exaggeration-iters takes an integer >= 0");
      break;
    case OPT_NO_GAINS: oo.gains = 0; break;
    case OPT_CHECKPOINT: checkpoint = optarg; break;
    case OPT_CHECKPOINT_EVERY:
      if (cli_parse_int(optarg, 1, 100000000, &v)) checkpoint_every = (int)v;
      else env.rc = cli_usage_error(mi->name, "--checkpoint-every takes an integer >= 1");
      break;
    case OPT_RESUME: resume = optarg; break;
    case OPT_SAVE_MODEL: save_model = optarg; break;
    case OPT_AFFINITIES: affinities = optarg; break;
    case OPT_TRACE: trace = optarg; break;
    case OPT_REPULSION:
      if (!cli_parse_engine(optarg, true, &engine)) env.rc = cli_usage_error(mi->name, "--repulsion takes auto, exact, bh, fft or fgt");
      break;
    case OPT_FGT_ORDER: {
      long long v;
      if (cli_parse_int(optarg, 1, 12, &v)) fgt.order = (int)v;
      else env.rc = cli_usage_error(mi->name, "--fgt-order takes an integer from 1 to 12");
      break;
    }
    case OPT_FGT_REACH: {
      long long v;
      if (cli_parse_int(optarg, 1, 12, &v)) fgt.reach = (int)v;
      else env.rc = cli_usage_error(mi->name, "--fgt-reach takes an integer from 1 to 12");
      break;
    }
    case OPT_FFT_ORDER: {
      long long v;
      if (cli_parse_int(optarg, 1, 12, &v)) fft.order = (int)v;
      else env.rc = cli_usage_error(mi->name, "--fft-order takes an integer from 1 to 12");
      break;
    }
    case OPT_ACCURACY_ITERS: {
      long long v;
      if (cli_parse_int(optarg, 0, 100000000, &v)) oo.accuracy_iters = (int)v;
      else env.rc = cli_usage_error(mi->name, "--accuracy-iters takes an integer >= 0");
      break;
    }
    case OPT_WNEG_DIMS: {
      long long v;
      if (cli_parse_int(optarg, 1, 1000, &v)) wneg_dims = (int)v;
      else env.rc = cli_usage_error(mi->name, "--wneg-dims takes an integer from 1 to 1000");
      break;
    }
    case OPT_PCA_CANDIDATES: {
      long long v;
      if (cli_parse_int(optarg, 0, 1 << 20, &v)) pca_candidates = (int)v;
      else env.rc = cli_usage_error(mi->name, "--pca-candidates takes an integer >= 0");
      break;
    }
    case OPT_PCA: {
      long long v;
      if (cli_parse_int(optarg, 1, 100000, &v)) pca_dims = (int)v;
      else env.rc = cli_usage_error(mi->name, "--pca takes a positive integer");
      break;
    }
    case OPT_FFT_BOX:
      if (!cli_parse_double(optarg, &fft.box_width) || fft.box_width <= 0)
        env.rc = cli_usage_error(mi->name, "--fft-box takes a positive number");
      fft_box_set = 1;
      break;
    case OPT_THETA:
      if (!cli_parse_double(optarg, &theta) || theta <= 0) env.rc = cli_usage_error(mi->name, "--theta takes a positive number");
      break;
    case OPT_SDM_TOL:
      if (!cli_parse_double(optarg, &oo.sdm_tol) || oo.sdm_tol <= 0) env.rc = cli_usage_error(mi->name, "--sdm-tol takes a positive number");
      break;
    case OPT_SDM_ITERS:
      if (cli_parse_int(optarg, 1, 100000, &v)) oo.sdm_iters = (int)v;
      else env.rc = cli_usage_error(mi->name, "--sdm-iters takes an integer >= 1");
      break;
    case OPT_MODEL_DATA:
      if (!strcmp(optarg, "copy")) model_data_copy = 1;
      else if (!strcmp(optarg, "reference")) model_data_copy = 0;
      else env.rc = cli_usage_error(mi->name, "--model-data takes copy or reference");
      break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  int n_inputs = argc - optind;
  if (!rc && !(n_inputs == 1 || (affinities && n_inputs == 0)))
    rc = cli_usage_error(mi->name, "expected one INPUT%s, got %d", affinities ? " or none" : "", n_inputs);
  const char *input = n_inputs == 1 ? argv[optind] : affinities;
  if (!rc && !n_inputs && !strcmp(init, "pca")) init = "spectral"; /* PCA needs the data */
  if (!rc && !n_inputs && (save_model || save_labels || (unnormalised && wneg != NLE_WNEG_UNIFORM) || !strcmp(init, "pca")))
    rc = cli_usage_error(mi->name, "--save-model, --save-labels, --wneg sqdist|knn and --init pca need the INPUT data");
  if (!rc && !output) rc = cli_usage_error(mi->name, "no output file (-o FILE)");
  if (!rc && oo.learning_rate_final != 0 && oo.learning_rate == 0)
    rc = cli_usage_error(mi->name, "--final-learning-rate goes with --learning-rate");
  /* Fixed-rate descent (the t-SNE codes' way) takes coarser FFT sums by
   * default: its momentum averages their errors over many steps, and it has
   * no line search to mislead. On 70,000 Fashion-MNIST images box 1.5 gave
   * the recall of 0.85 and 1.25 (0.345) for 12.5 against 16-28 s
   * (docs/embeddings.md). The line searches keep 0.85. */
  if (!fft_box_set && oo.learning_rate != 0) fft.box_width = FIXED_RATE_FFT_BOX;
  if (!momentum_set && oo.learning_rate < 0) oo.momentum = AUTO_MOMENTUM;
  if (k == 0) k = sigma > 0 ? 12 : (int)ceil(3.0 * perplexity);
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output_path(env.ctx, output);
  if (!rc && !s && save_labels) s = nle_check_output_path(env.ctx, save_labels);
  if (!rc && !s && save_model) s = nle_check_output_path(env.ctx, save_model);
  nle_dataset *ds = NULL;
  nle_csr *W = NULL, *Wk = NULL;
  nle_matd *X = NULL, *Wsq = NULL;
  nle_model *model = NULL;
  nle_opt *opt = NULL;
  nle_opt_report rep = {0};
  double t_knn = 0, t_opt = 0;
  nle_matf *raw_X = NULL;
  nle_csr *A = NULL;
  if (!rc && !s && n_inputs) s = cli_load(&env, argv[optind], &ds);
  if (!rc && !s && ds && pca_dims > 0 && save_model)
    rc = cli_usage_error(mi->name, "--pca with --save-model is not supported (the model keeps the INPUT space)");
  if (!rc && !s && ds && pca_dims > 0 && pca_candidates > 0 && (pca_candidates < k || (size_t)pca_candidates >= ds->X->rows)) {
    fprintf(stderr, "nlembed %s: error: --pca-candidates %d must be at least k = %d and below the %zu points\n",
            mi->name, pca_candidates, k, ds->X->rows);
    rc = 1;
  }
  if (!rc && !s && ds && pca_dims > 0 && (size_t)pca_dims < ds->X->cols) s = reduce_input(&env, ds, pca_dims, pca_candidates ? &raw_X : NULL);
  if (!rc && !s && affinities) s = nle_read_csr_mtx(env.ctx, affinities, &A);
  if (!rc && !s && A && (A->rows != A->cols || A->rows < 3 || (ds && (size_t)A->rows != ds->X->rows))) {
    fprintf(stderr, "nlembed %s: error: %s: the affinities must be N x N with N >= 3%s, not %lld x %lld\n", mi->name,
            affinities, ds ? " and N the number of INPUT points" : "", (long long)A->rows, (long long)A->cols);
    rc = 1;
  }
  size_t npts = ds ? ds->X->rows : A ? (size_t)A->rows : 0;
  if (!rc && !s && !A && (size_t)k >= ds->X->rows) {
    fprintf(stderr, "nlembed %s: error: %s: k = %d neighbours need more than %zu points (lower -k or the perplexity)\n",
            mi->name, argv[optind], k, ds->X->rows);
    rc = 1;
  }
  if (!rc && !s && save_labels && !ds->labels)
    rc = cli_usage_error(mi->name, "%s has no labels to save (give them with --labels)", argv[optind]);
  /* One kNN graph serves W+ and, for --wneg knn, W-. */
  nle_csr *graph = NULL;
  if (!rc && !s && !A) {
    const char *method;
    double t0 = nle_time_seconds();
    /* --pca: the candidates found among the components, re-ranked by their
     * distances in the input (70,000 Fashion-MNIST images, 50 components,
     * k = 90: t-SNE's recall@10 against the pixels' neighbours 0.282
     * without, 0.313 with, 0.318 with the pixels' exact neighbours; 1.5 s
     * against the 26 s more of the exact search in 784 dimensions). */
    int candidates = raw_X ? (pca_candidates > 0 ? pca_candidates : k) : k;
    s = cli_knn(&env, ds->X, candidates, &choice, &graph, &method);
    if (!s && raw_X) {
      nle_csr *ranked = NULL;
      s = nle_knn_rerank(env.ctx, raw_X, graph, k, &ranked);
      nle_csr_free(&graph);
      graph = ranked;
    }
    nle_matf_free(&raw_X);
    t_knn = nle_time_seconds() - t0;
  }
  double *beta = NULL;
  if (!rc && !s) s = A ? nle_affinity_for_model(env.ctx, A, mi->kind, &W) : attractive_weights(&env, graph, perplexity, sigma, mi->kind, &W, &beta);
  nle_csr_free(&A);
  if (!rc && !s && engine < 0) {
    engine = (int)auto_engine(mi->kind, wneg, npts, d);
    fft.bh_ratio = 1.0; /* and Barnes-Hut where the map outgrows the grid */
  }
  /* Squared-distance W-: dense for the exact engine, else as features. */
  nle_matf *Wfeat = NULL;
  if (!rc && !s && unnormalised && wneg == NLE_WNEG_SQDIST)
    s = engine == NLE_REPULSION_EXACT ? nle_repulsive_dense(env.ctx, ds->X, wneg, &Wsq)
                                      : wneg_features(&env, ds->X, wneg_dims, &Wfeat);
  if (!rc && !s && unnormalised && wneg == NLE_WNEG_KNN) s = nle_repulsive_knn(env.ctx, graph, &Wk);
  if (!save_model) nle_csr_free(&graph); /* else kept for the model file */
  if (!rc && !s) s = resume ? nle_matd_alloc(env.ctx, npts, d, &X) : initial_x(&env, ds ? ds->X : NULL, npts, W, mi->kind != NLE_MODEL_SNE, init, d, scale, &X);
  if (!rc && !s && (X->rows != npts || X->cols != d)) {
    fprintf(stderr, "nlembed %s: error: %s: initial X must be %zu x %zu, not %zu x %zu\n", mi->name, init,
            npts, d, X->rows, X->cols);
    rc = 1;
  }
  if (!rc && !s) {
    nle_model_spec spec = {mi->kind, lambda, W, wneg, Wsq, Wk, (nle_repulsion)engine, theta, fft, fgt,
                           Wfeat};
    s = nle_model_new(env.ctx, &spec, &model);
  }
  /* auto rates. While exaggerating, alpha * 4 * rate <= N (our gradient
   * carries t-SNE's factor 4) keeps the attraction's steps from overshooting
   * (Linderman and Steinerberger 2019); E then settles in that phase instead
   * of oscillating. After it, a rate of N / 2 with momentum 0.95: on 70,000
   * Fashion-MNIST images recall@10 0.313 -> 0.345 in 450 iterations against
   * 750 (docs/embeddings.md). These are for W+ summing to 1; the gradient
   * grows with W+'s total (N for EE, t-EE and SNE), so the rates shrink by
   * it: the same steps in X as t-SNE's where t-EE's lambda is N / Z. */
  if (!rc && !s && oo.learning_rate < 0 && oo.learning_rate_final == 0) oo.learning_rate_final = -1.0;
  int normalised_w = mi->kind == NLE_MODEL_TSNE || mi->kind == NLE_MODEL_SSNE; /* W+ sums to 1 by construction */
  double w_mass =
      !rc && !s && !normalised_w && (oo.learning_rate < 0 || oo.learning_rate_final < 0) ? csr_total(W) : 1.0;
  if (!rc && !s && oo.learning_rate < 0)
    oo.learning_rate = fmax((double)npts / (4.0 * oo.exaggeration), 50.0) / w_mass;
  if (!rc && !s && oo.learning_rate_final < 0) oo.learning_rate_final = fmax((double)npts / 2.0, 200.0) / w_mass;
  if (!rc && !s && w_mass != 1.0)
    cli_note(&env, "learning rates %.6g, then %.6g (auto, for W+ summing to %.6g)", oo.learning_rate,
             oo.learning_rate_final, w_mass);
  if (!rc && !s && oo.learning_rate > 0) oo.kind = NLE_OPT_GD;
  FILE *trace_file = NULL;
  if (!rc && !s && trace) {
    trace_file = fopen(trace, "w");
    if (!trace_file) {
      fprintf(stderr, "nlembed %s: error: %s: cannot write the trace\n", mi->name, trace);
      rc = 1;
    } else {
      fputs("iteration,seconds,E,evaluations\n", trace_file);
    }
  }
  trace_state.env = &env;
  trace_state.file = trace_file;
  trace_state.lines = !env.quiet && (env.verbosity > 0 || !isatty(STDERR_FILENO));
  if (trace_file || trace_state.lines) {
    oo.trace = write_trace;
    oo.trace_user = &trace_state;
    /* a fixed-rate run computes E only for what is shown: every iteration
     * for a --trace file, every 25th for the progress lines */
    oo.energy_every = trace_file ? 1 : 25;
  }
  if (!rc && !s) s = nle_opt_new(env.ctx, model, W, &oo, &opt);
  double l1 = NAN, u1 = NAN;
  if (!rc && !s && unnormalised && (npts <= BOUNDS_INFO_MAX_N || (homotopy && lambda_start == 0))) {
    int dense = npts <= BOUNDS_DENSE_MAX_N;
    s = Wfeat   ? nle_ee_lambda_bounds_features(env.ctx, W, Wfeat, &l1, &u1)
        : dense ? nle_ee_lambda_bounds(env.ctx, W, wneg, Wsq, Wk, &l1, &u1)
                : nle_ee_lambda_bounds_lanczos(env.ctx, W, wneg, Wsq, Wk, &l1, &u1);
    /* With uniform W- the spectrum of L- is 0 and N (N - 1 times), and the
     * two bounds meet at lambda2(L+) / N: lambda* itself. */
    if (!s && wneg == NLE_WNEG_UNIFORM)
      cli_note(&env, "lambda* = %.4g (lambda2(L+) / N, exact for uniform W-; EE paper eqs. 11-12, %s)", l1,
               dense ? "dense eigenvalues" : "Lanczos");
    else if (!s)
      cli_note(&env, "lambda* bounds: %.4g <= lambda* <= %.4g (EE paper eqs. 11-12, %s)", l1, u1,
               Wfeat ? "Lanczos and Gershgorin" : dense ? "dense eigenvalues" : "Lanczos");
    else if (!homotopy || lambda_start > 0) { /* only informative here: go on without them */
      cli_note(&env, "warning: no lambda* bounds: %s", nle_ctx_error(env.ctx));
      s = NLE_OK;
    }
  }
  if (!rc && !s && homotopy && lambda_start == 0) {
    if (isfinite(u1)) lambda_start = 1.5 * u1;
    else rc = cli_usage_error(mi->name, "--homotopy needs --lambda-start here (no lambda* bounds)");
  }
  /* What decides the result, so that a checkpoint resumes only its own run
   * (the iteration cap and time budget may change). */
  char fingerprint[1024];
  snprintf(fingerprint, sizeof fingerprint,
           "nlembed %s %s n=%zu D=%zu d=%zu perplexity=%.17g k=%d sigma=%.17g lambda=%.17g wneg=%d optimizer=%d "
           "kappa=%d sdm=%.17g/%d init=%s init-scale=%.17g seed=%llu tol=%.17g homotopy=%d lambda-start=%.17g rate=%.17g/%.17g "
           "momentum=%.17g exaggeration=%.17g/%d gains=%d repulsion=%d/%.17g/%d/%.17g/%.17g/%d/%d/%d wneg-dims=%d pca=%d knn=%d/%d/%d/%d/%d/%.17g",
           mi->name, input ? input : "", npts, ds ? ds->X->cols : 0, d, perplexity, k, sigma, lambda,
           (int)wneg, (int)oo.kind, oo.kappa, oo.sdm_tol, oo.sdm_iters, init, scale, (unsigned long long)nle_ctx_seed(env.ctx), oo.tol, homotopy,
           lambda_start, oo.learning_rate, oo.learning_rate_final, oo.momentum, oo.exaggeration, oo.exaggeration_iters, oo.gains, engine, theta, fft.order, fft.box_width, fft.bh_ratio, oo.accuracy_iters, fgt.order, fgt.reach, Wfeat ? (int)Wfeat->cols : 0, pca_dims,
           (int)choice.method, choice.approx.n_trees, choice.approx.leaf_size, choice.approx.max_candidates,
           choice.approx.max_iters, choice.approx.delta);
  if (!rc && !s && resume) {
    s = nle_opt_load_checkpoint(env.ctx, opt, X, resume, fingerprint);
    if (!s) cli_note(&env, "resuming from %s", resume);
  }
  if (!rc && !s && checkpoint) {
    s = nle_opt_set_checkpoint(env.ctx, opt, checkpoint, checkpoint_every, fingerprint);
    cli_catch_interrupts();
  }
  if (!rc && !s) {
    double t0 = nle_time_seconds();
    if (homotopy) {
      nle_homotopy_opts ho = {lambda_start, lambda, homotopy};
      path_writer pw = {&env, path_prefix, homotopy};
      s = nle_homotopy_run(env.ctx, model, opt, X, &ho, write_path, &pw, &rep);
    } else {
      s = nle_opt_run(env.ctx, opt, X, &rep);
    }
    t_opt = nle_time_seconds() - t0;
    if (s > 0) {
      cli_note(&env, "%s", nle_ctx_error(env.ctx));
      s = NLE_OK;
    }
  }
  if (!rc && !s) s = nle_write_matd(env.ctx, output, X);
  if (!rc && !s && save_model) {
    nle_trained_spec ts = {mi->kind, lambda, wneg, perplexity, sigma, argv[optind]};
    nle_trained *tr = NULL;
    s = nle_trained_new(env.ctx, &ts, ds->X, X, graph, beta, &tr);
    if (!s) s = nle_trained_save(env.ctx, tr, save_model, model_data_copy);
    nle_trained_free(&tr);
  }
  if (!rc && !s && save_labels) s = nle_write_labels(env.ctx, save_labels, ds->labels, (int64_t)ds->X->rows);
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) {
    static const char *opt_names[] = {"sd", "fp", "gd", "lbfgs", "cg", "sd-"};
    printf("{\"command\": \"%s\", \"input\": \"%s\", \"n\": %zu, \"dim\": %zu, \"perplexity\": %g, \"k\": %d, "
           "\"lambda\": %g, \"optimizer\": \"%s\", \"kappa\": %d, \"iterations\": %d, \"evaluations\": %d, "
           "\"E0\": %.10g, \"E\": %.10g, \"converged\": %s, \"lambda_star_lower\": %.6g, \"lambda_star_upper\": %.6g, "
           "\"homotopy_steps\": %d, \"knn_seconds\": %.3f, \"optimize_seconds\": %.3f, "
           "\"summary\": \"%s (lambda %g, %s), perplexity %g, E %.4g after %d iterations\"}\n",
           mi->name, ds ? ds->name : input, npts, d, perplexity, k, lambda, opt_names[oo.kind], oo.kappa, rep.iterations,
           rep.evaluations, rep.E0, rep.E, rep.converged ? "true" : "false", isfinite(l1) ? l1 : -1.0,
           isfinite(u1) ? u1 : -1.0, homotopy, t_knn, t_opt, mi->title, lambda, opt_names[oo.kind], perplexity, rep.E,
           rep.iterations);
    cli_note(&env, "%s of %zu points: E %.6g -> %.6g in %d iterations (%d evaluations), %.2f s; wrote %s", mi->title,
             npts, rep.E0, rep.E, rep.iterations, rep.evaluations, t_opt, output);
  }
  if (trace_file) fclose(trace_file);
  nle_csr_free(&graph);
  free(beta);
  nle_opt_free(&opt);
  nle_model_free(&model);
  nle_matd_free(&X);
  nle_matd_free(&Wsq);
  nle_matf_free(&Wfeat);
  nle_matf_free(&raw_X);
  nle_csr_free(&Wk);
  nle_csr_free(&W);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
