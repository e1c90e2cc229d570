/* nlembed/nonlinear.h — the nonlinear embeddings: models, optimisers,
 * homotopy, the front door nle_embed, trained models and out-of-sample maps.
 * Part of the public header: include <nlembed.h>, whose opening comment
 * states the conventions every declaration here follows. */
#ifndef NLEMBED_NONLINEAR_H
#define NLEMBED_NONLINEAR_H

#include "core.h"
#include "neighbors.h"
#include "affinity.h"
#include "nbody.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Nonlinear embeddings: models                                               */
/* ========================================================================== */

/* The models of dissertation sec. 3.2, written with a kernel K(d^2) of the
 * embedding distances: Gaussian exp(-d^2) or Student-t 1 / (1 + d^2).
 *   EE, t-EE (unnormalised): E = sum_nm w+_nm (-log K_nm) + lambda sum_nm w-_nm K_nm
 *   s-SNE, t-SNE:            E = sum_nm p_nm (-log K_nm) + lambda log sum_nm K_nm
 *   SNE (per point):         E = sum_n [sum_m p_m|n d_nm^2 + lambda log sum_m exp(-d_nm^2)]
 * Sums run over ordered pairs n != m; lambda = 1 gives the usual s-SNE, t-SNE
 * and SNE. The gradient is 4 sum_m [w+ (-K'/K) + lambda w- K'] (x_n - x_m)
 * (K' = dK/d(d^2); with K'/Z for the normalised models), i.e. 4 X L with
 * graph Laplacians (dissertation eqs. 3.3, 3.4). */
#define NLE_MODEL_MAP(XX)                                                                           \
  XX(NLE_MODEL_EE, 0, "ee") /* elastic embedding (EE paper eq. 5) */                                \
  XX(NLE_MODEL_SSNE, 1, "ssne") /* symmetric SNE */                                                 \
  XX(NLE_MODEL_TSNE, 2, "tsne") /* t-SNE */                                                         \
  XX(NLE_MODEL_SNE, 3, "sne") /* SNE, conditional P (rows sum to 1) */                              \
  XX(NLE_MODEL_TEE, 4, "tee") /* EE with the Student-t kernel (notes 001) */
typedef enum {
  NLE_MODEL_MAP(NLE__ENUMERATOR)
  NLE_MODEL_COUNT /* how many there are (range checks) */
} nle_model_kind;

/* Repulsion engines (dissertation ch. 5). The fast ones serve the models
 * whose repulsion is a plain kernel sum: t-SNE, s-SNE, and EE and t-EE with
 * uniform W-, for d <= 3; E and the gradient are then approximate. EE and
 * t-EE with squared-distance W- given by features (Wneg_features) take the
 * FFT engine too: sum_m |f_n - f_m|^2 K_nm = |f_n|^2 S_n + S^{|f|^2}_n
 * - 2 f_n . S^f_n, kernel sums with D' + 2 charges (D' + 2 times the work). */
typedef enum {
  NLE_REPULSION_AUTO = NLE_AUTO, /* nle_embed: chosen from N, d and the model */
  NLE_REPULSION_EXACT = 0, /* all pairs, blocked, O(N^2 d) */
  NLE_REPULSION_BH = 1,    /* Barnes-Hut kernel sums, O(N log N) */
  NLE_REPULSION_FFT = 2,   /* FFT-interpolation kernel sums, O(N) */
  NLE_REPULSION_FGT = 3    /* fast Gauss transform, O(N); Gaussian models */
} nle_repulsion;

typedef struct {
  nle_model_kind kind;
  double lambda;        /* homotopy parameter, > 0 (EE paper's lambda) */
  const nle_csr *Wp;    /* attractive weights W+ (N x N): symmetric for EE,
                           t-EE, s-SNE, t-SNE (P summing to 1 for the last
                           two); conditional P for SNE */
  nle_wneg_kind wneg;   /* EE, t-EE: the repulsive weights W- */
  const nle_matd *Wneg_dense;  /* NLE_WNEG_SQDIST: the dense W- (or NULL) */
  const nle_csr *Wneg_sparse;  /* NLE_WNEG_KNN: the sparse W- (or NULL) */
  nle_repulsion engine;        /* how the repulsion is summed (default exact) */
  double theta;                /* Barnes-Hut opening angle, > 0 (0.5) */
  nle_fft_opts fft;            /* FFT interpolation (nle_fft_opts_init's) */
  nle_fgt_opts fgt;            /* fast Gauss transform (nle_fgt_opts_init's) */
  const nle_matf *Wneg_features; /* NLE_WNEG_SQDIST without the dense matrix:
                                    w-_nm = |f_n - f_m|^2 over these N x D'
                                    rows (e.g. the data after PCA); for the
                                    exact and FFT engines */
} nle_model_spec;

/* The defaults: t-SNE, lambda 1, uniform W-, the exact engine, theta 0.5,
 * the engines' default options; no W+ (the caller sets Wp). */
NLE_API void nle_model_spec_init(nle_model_spec *spec);

typedef struct nle_model nle_model;

/* Checks the spec against N and plans what every evaluation reuses (for SNE
 * the transpose of P). The model keeps pointers to the spec's matrices, which
 * must outlive it. */
NLE_API nle_status nle_model_new(nle_ctx *ctx, const nle_model_spec *spec, nle_model **model);
NLE_API void nle_model_free(nle_model **model);
/* E(X) and, when G is not NULL, its gradient (N x d, same shape as X), by the
 * exact all-pairs repulsion (blocked, OpenMP; deterministic). The model keeps
 * its work space between calls, so one model is not for evaluations from two
 * threads at once. */
NLE_API nle_status nle_model_eval(nle_ctx *ctx, nle_model *model, const nle_matd *X, double *E, nle_matd *G);
/* W+ for a model from a given affinity matrix A (N x N, >= 0): (A + A^T) / 2
 * for EE and t-EE, the same divided by its sum for s-SNE and t-SNE, and for
 * SNE A with every row normalised to 1. */
NLE_API nle_status nle_affinity_for_model(nle_ctx *ctx, const nle_csr *A, nle_model_kind kind, nle_csr **W);
/* NLE_OK when A is square with finite entries >= 0; else the first bad
 * entry's row and column (0-based, as the readers count). */
NLE_API nle_status nle_affinity_check(nle_ctx *ctx, const nle_csr *A);
/* Changes lambda (for the homotopy; an optimiser planned on the model stays valid). */
NLE_API nle_status nle_model_set_lambda(nle_ctx *ctx, nle_model *model, double lambda);
NLE_API double nle_model_lambda(const nle_model *model);
/* Multiplies the attractive term by alpha >= 1 (t-SNE's early exaggeration;
 * 1 restores the model). */
NLE_API nle_status nle_model_set_exaggeration(nle_ctx *ctx, nle_model *model, double alpha);
/* Accuracy of the fast engines (dissertation sec. 5.4): t in [0, 1] runs
 * geometrically from coarse (t = 0: Barnes-Hut theta max(2, theta), FFT boxes
 * 4x the set width) to the spec's setting (t = 1, the default). */
NLE_API nle_status nle_model_set_accuracy(nle_ctx *ctx, nle_model *model, double t);
NLE_API double nle_model_accuracy(const nle_model *model);
NLE_API nle_repulsion nle_model_engine(const nle_model *model);

/* Bounds l1 <= lambda1* <= u1 on EE's critical lambda, where X = 0 stops
 * being the minimiser (EE paper eqs. 11-12): l1 = max(lambda_2(L+) /
 * lambda_N(L-), min w+/w-), u1 = min(min_i lambda_i(L+) / lambda_i(L-),
 * min_n L+_nn / L-_nn), eigenvalues ascending, from dense symmetric
 * eigendecompositions (N x N, under the memory cap). The paper prints the
 * first term of l1 as lambda_2+ / lambda_N+; lambda_N- is what the bound
 * L+ - lambda L- >= (lambda_2+ - lambda lambda_N-) I on 1^perp needs. */
NLE_API nle_status nle_ee_lambda_bounds(nle_ctx *ctx, const nle_csr *Wp, nle_wneg_kind wneg, const nle_matd *Wneg_dense,
                                        const nle_csr *Wneg_sparse, double *l1, double *u1);

/* The same bounds for large N without dense matrices: lambda_2 (and a few
 * more) of L+ by Lanczos on its sparse factor, lambda_N of L- by Lanczos (and
 * its small eigenvalues for a sparse W-; N for uniform W-); the diagonal and
 * pair terms exactly. Every term of u1 bounds lambda* on its own, so using
 * the first 12 eigenvalues instead of all N gives a valid, possibly looser,
 * u1; with dense W- (sqdist) u1 is the diagonal term alone. */
NLE_API nle_status nle_ee_lambda_bounds_lanczos(nle_ctx *ctx, const nle_csr *Wp, nle_wneg_kind wneg,
                                                const nle_matd *Wneg_dense, const nle_csr *Wneg_sparse, double *l1,
                                                double *u1);

/* The same for squared-distance W- given by features F (N x D'), in
 * O(nnz(W+) + N D'): the degrees of W- are N |f_n|^2 + sum_m |f_m|^2 for f
 * about its mean, lambda_N(L-) is bounded by twice the largest degree
 * (Gershgorin), and u1 is the diagonal term. */
NLE_API nle_status nle_ee_lambda_bounds_features(nle_ctx *ctx, const nle_csr *Wp, const nle_matf *F, double *l1,
                                                 double *u1);

/* ========================================================================== */
/* Nonlinear embeddings: optimisers                                           */
/* ========================================================================== */

/* Search directions B p = -g from partial Hessians (dissertation sec. 3.3),
 * with a backtracking line search (sufficient decrease; the first trial step
 * is the last accepted one). */
typedef enum {
  NLE_OPT_AUTO = NLE_AUTO, /* nle_embed: the model's recipe (SD for line searches, L-BFGS
                              where SD's factor would pass the memory cap) */
  NLE_OPT_SD = 0, /* spectral direction: B = 4 L+ + mu I, L+ the Laplacian of
                     W+ sparsified to kappa neighbours (at X = 0 for t-SNE), its
                     sparse Cholesky factor (CHOLMOD) computed once */
  NLE_OPT_FP = 1, /* fixed-point diagonal: B = 4 D+ */
  NLE_OPT_GD = 2, /* gradient descent: B = I */
  NLE_OPT_LBFGS = 3, /* limited-memory BFGS (two-loop recursion, memory m);
                        the first trial step of each line search is 1 */
  NLE_OPT_CG = 4, /* nonlinear conjugate gradients (Polak-Ribiere+, restart
                     to -g when not a descent direction) */
  NLE_OPT_SDM = 5 /* SD-: B = 4 L+ + mu I plus the psd diagonal blocks
                     (i = j) of the repulsive Hessian's 8 L^xx at X, solved by
                     linear CG preconditioned with SD's factor, exiting at a
                     relative residual of 0.1 or 50 iterations */
} nle_opt_kind;

typedef struct {
  nle_opt_kind kind;  /* default NLE_OPT_SD */
  int kappa;          /* SD: neighbours per point kept in L+, the largest
                         weights (default 7; 0 = all of W+) */
  int max_iters;      /* default 1000 */
  double tol;         /* stop when E_k - E_k+1 <= tol |E_k| five iterations in
                         a row (default 1e-6) */
  double grad_tol;    /* stop when max |g| <= grad_tol (default 1e-9); the
                         fixed-rate method tests it after the exaggeration */
  double x_tol;       /* stop when |X_k+1 - X_k|_F <= x_tol |X_k|_F (the EE
                         paper's test for each lambda of a homotopy;
                         default 0: off) */
  double time_budget; /* seconds, 0 (default) for none */
  double c1;          /* sufficient-decrease constant (default 1e-4) */
  double shrink;      /* step shrink factor (default 0.5) */
  int memory;         /* L-BFGS: pairs kept (default 10) */
  /* Gradient descent as the t-SNE codes run it (fixed_rate, kind
   * NLE_OPT_GD, no line search): X += momentum * U - rate_i * gains * g,
   * point i's rate capped at its attraction's stability bound, rate_i =
   * min(rate, (1 + momentum) / (2 exaggeration deg_i)), deg_i = sum_j
   * (w_ij + w_ji) / 2 over W+ (hubs would otherwise oscillate out of the
   * map). */
  bool fixed_rate;       /* false (default): the line search */
  double learning_rate;  /* fixed_rate: > 0 (default 200); nle_embed's
                            auto: max(N / (4 exaggeration), 50), then a
                            final rate of max(N / 2, 200), momentum 0.95 */
  double learning_rate_final; /* after the exaggeration phase: > 0, or
                            NLE_AUTO (default): learning_rate */
  double momentum;       /* after the exaggeration phase (default 0.8;
                            0.5 during it) */
  bool gains;            /* true (default): per-coordinate gains, +0.2 when the
                            gradient changes sign, x0.8 otherwise, >= 0.01 */
  double exaggeration;   /* attractive term x this for the first
                            exaggeration_iters (default 1 = none; t-SNE: 12) */
  int exaggeration_iters; /* default 250 */
  double sdm_tol;        /* SD-: CG exits at this relative residual (0.1) */
  int sdm_iters;         /* SD-: or after this many CG iterations (50) */
  int accuracy_iters;    /* fast engines: coarse to set accuracy over the
                            first this many iterations (0, the default: set
                            from the start); the line-search optimisers
                            re-evaluate E at X at each new accuracy */
  int energy_every;      /* fixed-rate runs: E at every this many iterations
                            (0, the default: at the start and the end only);
                            it needs a log1p per W+ entry, a third of a
                            t-SNE iteration, and the steps do not use it */
  /* Called after every iteration with the iteration count, the seconds
   * since the run started, E (with the exaggeration of a fixed-rate run's
   * early phase; NaN on the iterations energy_every skips), the evaluations
   * so far and the accepted step (the learning rate for a fixed-rate run);
   * NULL (default) for none. */
  void (*trace)(void *user, int iteration, double seconds, double E, int evaluations, double step);
  void *trace_user;
} nle_opt_opts;

NLE_API void nle_opt_opts_init(nle_opt_opts *o);
/* Names: "sd", "fp", "gd", "lbfgs", "cg", "sd-" (also "sdm"), "auto" and back
 * (-1 if unknown); from the optimisers' table, where a row's place is its
 * kind (an optimiser added after SD- has the next value, named or not). */
NLE_API const char *nle_opt_name(nle_opt_kind kind);
NLE_API int nle_opt_parse(const char *name);

typedef struct {
  int iterations;
  int evaluations;     /* objective evaluations (with or without gradient) */
  double E0, E;        /* initial and final objective */
  double grad_max;     /* final max |g| */
  double seconds;
  bool converged;      /* a tolerance was met (not the iteration or time cap) */
} nle_opt_report;

typedef struct nle_opt nle_opt;

/* Plans the optimiser for a model: for SD builds L+ and its factor. Wp is the
 * model's W+ (symmetrised here if it is not symmetric). The optimiser may
 * change the model's exaggeration during a run and restores it after. */
NLE_API nle_status nle_opt_new(nle_ctx *ctx, nle_model *model, const nle_csr *Wp, const nle_opt_opts *opts,
                               nle_opt **opt);
NLE_API void nle_opt_free(nle_opt **opt);
/* The direction p for gradient g (both N x d), solving B p = -g; SD-, whose
 * B depends on X, needs nle_opt_direction_at. */
NLE_API nle_status nle_opt_direction(nle_ctx *ctx, nle_opt *opt, const nle_matd *g, nle_matd *p);
NLE_API nle_status nle_opt_direction_at(nle_ctx *ctx, nle_opt *opt, const nle_matd *X, const nle_matd *g, nle_matd *p);
/* Minimises the model from X (overwritten with the result). Returns
 * NLE_WARN_NOT_CONVERGED when the iteration or time cap ended the run. */
NLE_API nle_status nle_opt_run(nle_ctx *ctx, nle_opt *opt, nle_matd *X, nle_opt_report *report);

/* Checkpoints. A run (or a homotopy path) keeps its state between
 * iterations: X, counters, the last step, the L-BFGS/CG history, the momentum
 * and gains. With a checkpoint set, nle_opt_run writes that state to `path`
 * (atomically) every `every` iterations (0: never), after every homotopy step,
 * and when cancelled through the progress callback (the CLI does that on
 * SIGINT and SIGTERM); a cancelled run returns NLE_ERR_CANCELLED and stays
 * resumable. `fingerprint` names the run's data and options; loading checks
 * it, restores X and the state, and the next nle_opt_run (or
 * nle_homotopy_run) continues to the result an uninterrupted run would have
 * given, bit for bit. */
NLE_API nle_status nle_opt_set_checkpoint(nle_ctx *ctx, nle_opt *opt, const char *path, int every,
                                          const char *fingerprint);
NLE_API nle_status nle_opt_save_checkpoint(nle_ctx *ctx, nle_opt *opt, const nle_matd *X, const char *path,
                                           const char *fingerprint);
NLE_API nle_status nle_opt_load_checkpoint(nle_ctx *ctx, nle_opt *opt, nle_matd *X, const char *path,
                                           const char *fingerprint);
/* Whether `path` is a checkpoint of the run `fingerprint` names, without
 * loading it; a mismatch names the first option that differs. */
NLE_API nle_status nle_opt_check_checkpoint(nle_ctx *ctx, const char *path, const char *fingerprint);

/* Homotopy over lambda (EE paper sec. 4.4; dissertation sec. 3.4.1): steps
 * log-spaced values from lambda_start to lambda_end, minimising at each from
 * the previous X with one optimiser planned once. */
typedef struct {
  double lambda_start, lambda_end; /* > 0 */
  int steps;                       /* >= 1 (default 50) */
} nle_homotopy_opts;

NLE_API void nle_homotopy_opts_init(nle_homotopy_opts *o);

/* Called after every lambda; a non-zero return stops the path. */
typedef int (*nle_homotopy_fn)(void *user, int step, double lambda, const nle_matd *X, const nle_opt_report *rep);

NLE_API nle_status nle_homotopy_run(nle_ctx *ctx, nle_model *model, nle_opt *opt, nle_matd *X,
                                    const nle_homotopy_opts *opts,
                                    nle_homotopy_fn fn, void *user, nle_opt_report *total);

/* Out-of-sample map F(y) of EE (EE paper sec. 4.5): for each new point y,
 * argmin_x E'(x, y) = 2 sum_n (w+(y, y_n) |x - x_n|^2 + lambda w-(y, y_n)
 * exp(-|x - x_n|^2)) with the training embedding X fixed, from the x_n of the
 * nearest y_n; w+ = exp(-|y - y_n|^2 / (2 sigma^2)), w- = 1 (uniform) or
 * |y - y_n|^2 (squared distances), as in training. */
typedef struct {
  double lambda;      /* as in training (> 0) */
  double sigma;       /* Gaussian width of w+ (> 0) */
  nle_wneg_kind wneg; /* NLE_WNEG_UNIFORM or NLE_WNEG_SQDIST */
  int max_iters;      /* per point (default 200) */
  double grad_tol;    /* stop when |grad E'| <= grad_tol * scale (default 1e-10) */
} nle_oos_opts;

NLE_API void nle_oos_opts_init(nle_oos_opts *o);
NLE_API nle_status nle_ee_map_forward(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X, const nle_matf *Ynew,
                                      const nle_oos_opts *opts, nle_matd **Xnew);

/* A trained embedding with what its out-of-sample maps need: the training
 * data Y (or a reference to it), the embedding X, the entropic betas and
 * per-point normalisers, and the embedding's kernel sums. The new point's
 * weights follow the training ones "with the same neighbourhood structure"
 * (EE paper sec. 4.5): its k nearest training points, its own entropic
 * p_{n|y} (perplexity-calibrated) plus p_{y|n} from the training beta_n when
 * y falls within n's k-th neighbour, scaled as the training W+ was; or the
 * Gaussian of width sigma. */
typedef struct {
  nle_model_kind kind;
  double lambda;
  nle_wneg_kind wneg;   /* EE, t-EE */
  double perplexity;    /* entropic W+ */
  double sigma;         /* > 0: Gaussian W+ of this width; NLE_AUTO:
                           entropic (perplexity-calibrated) */
  const char *source;   /* where Y came from (kept in the model file) */
} nle_trained_spec;

/* The defaults: t-SNE, lambda 1, uniform W-, perplexity 30, entropic W+
 * (sigma NLE_AUTO), source "". */
NLE_API void nle_trained_spec_init(nle_trained_spec *spec);

typedef struct {
  nle_model_kind kind;
  double lambda;
  nle_wneg_kind wneg;
  double perplexity, sigma;
  int k;                /* neighbours of the training kNN graph */
  nle_matf *Y;          /* training data (NULL when loaded without it) */
  nle_matd *X;          /* training embedding */
  double *beta, *log_z; /* entropic: per point (NULL for Gaussian W+) */
  double *radius;       /* squared distance to each point's k-th neighbour */
  double *z_rows;       /* s-SNE, t-SNE, SNE: sum_m K(|x_n - x_m|^2) */
  double z_total, w_scale;
  size_t D;             /* columns of Y */
  nle_repulsion engine; /* of F(y)'s repulsion: set on creation and loading
                           to the fast Gauss transform (Gaussian kernel) or
                           FFT interpolation (Student-t) from 5,000 training
                           points where the model allows (not SNE, EE/t-EE
                           with uniform W- only, d <= 3), else exact; may be
                           changed before nle_trained_transform */
  uint64_t data_hash;   /* of Y, to check a re-attached copy */
  char source[1024];
  /* The neighbour search of training, when it ran among principal
   * components (nle_embed's pca_dims): new points' candidates are found
   * there too and re-ranked by their distances in Y. */
  int pca_dims;         /* 0: neighbours searched in Y itself */
  int pca_candidates;   /* candidates per new point */
  double *pca_mean;     /* D */
  double *pca_components; /* pca_dims x D, row-major */
  nle_matf *pca_Y;      /* Y on those components (N x pca_dims): derived once
                           when Y is there (training, loading, attaching) */
} nle_trained;

/* Keeps copies of Y and X; knn is the training kNN graph (squared distances),
 * beta the entropic precisions (NULL with sigma > 0). */
NLE_API nle_status nle_trained_new(nle_ctx *ctx, const nle_trained_spec *spec, const nle_matf *Y, const nle_matd *X,
                                   const nle_csr *knn, const double *beta, nle_trained **out);
NLE_API void nle_trained_free(nle_trained **t);
/* The model file (nlembed's binary container, written atomically); the
 * training data is copied into it, or (copy_data 0) only referenced by its
 * source and checked by a hash when re-attached. */
NLE_API nle_status nle_trained_save(nle_ctx *ctx, const nle_trained *t, const char *path, bool copy_data);
NLE_API nle_status nle_trained_load(nle_ctx *ctx, const char *path, nle_trained **t);
NLE_API nle_status nle_trained_attach_data(nle_ctx *ctx, nle_trained *t, const nle_matf *Y);
/* F(y) for new points (M x D): argmin_x of the training objective augmented
 * with y, the training X fixed (EE paper eq. 13; the same construction for
 * s-SNE, t-SNE and SNE), from the x of the nearest training point. With a
 * fast t->engine all points are minimised together and each evaluation is
 * O(M + N) instead of O(M N). */
NLE_API nle_status nle_trained_transform(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, int max_iters,
                                         nle_matd **Xnew);
/* E'(x, y) of one new point y (D values) at x (d values), and its gradient in
 * x when grad is not NULL: what nle_trained_transform minimises. */
NLE_API nle_status nle_trained_objective(nle_ctx *ctx, const nle_trained *t, const float *y, const double *x, double *E,
                                         double *grad);
/* Sets t->engine: exact, or NLE_REPULSION_FGT (Gaussian kernel) or
 * NLE_REPULSION_FFT where the model allows (errors otherwise). */
NLE_API nle_status nle_trained_set_engine(nle_ctx *ctx, nle_trained *t, nle_repulsion engine);
/* f(x) for new latent points (M x d): argmin_y of the same E', EE and t-EE
 * with W- of squared distances only (EE paper eq. 13). */
NLE_API nle_status nle_trained_inverse(nle_ctx *ctx, const nle_trained *t, const nle_matd *Xnew, int max_iters,
                                       nle_matf **Ynew);

/* ========================================================================== */
/* Nonlinear embeddings: the front door                                       */
/* ========================================================================== */

/* nle_embed runs the whole pipeline (PCA for the neighbour search, kNN graph,
 * re-ranking, affinities, repulsive weights, initialisation, engine,
 * optimiser and its schedule, homotopy) and makes every automatic choice in
 * one place. Every field that takes NLE_AUTO defaults to it; the result
 * carries the options as they ran, with each NLE_AUTO resolved. The
 * defaults are each model's best measured recipe (docs/embeddings.md). */

/* The input: data points (N x D), or a kNN graph of them (N x N, squared
 * distances, as nle_knn_exact makes), or an affinity matrix W (N x N, >= 0,
 * made into W+ as nle_affinity_for_model says). Y may come with either of
 * the other two (it then serves the PCA initialisation, squared-distance
 * W- and the saved model); knn and affinities exclude each other. */
typedef struct {
  const nle_matf *Y;
  const nle_csr *knn;
  const nle_csr *affinities;
  const char *source; /* where Y came from, kept in the model (or NULL) */
  /* Called once (with release_user) as soon as nle_embed reads Y no more:
   * after the neighbour search, the squared-distance W- or the PCA start,
   * whichever needs Y last; never with keep_model. A caller with no other
   * use for Y frees it there: 3 GB of a million 784-d points, held through
   * the affinities and the optimisation otherwise. NULL: not called. */
  void (*release_Y)(void *release_user);
  void *release_user;
} nle_embed_input;

#define NLE_INIT_MAP(XX)                                                                            \
  XX(NLE_INIT_PCA, 0, "pca") /* the first d principal components of Y */                            \
  XX(NLE_INIT_SPECTRAL, 1, "spectral") /* Laplacian eigenmaps of W+ (ARPACK) */                     \
  XX(NLE_INIT_RANDOM, 2, "random") /* Gaussian noise from the context's seed */                     \
  XX(NLE_INIT_GIVEN, 3, "given") /* opts.init_X, used as it is */
typedef enum {
  NLE_INIT_AUTO = NLE_AUTO, /* PCA of Y when given, else spectral */
  NLE_INIT_MAP(NLE__ENUMERATOR)
  NLE_INIT_COUNT /* how many there are (range checks) */
} nle_init_kind;

/* How the optimiser steps. */
#define NLE_STEP_MAP(XX)                                                                            \
  XX(NLE_STEP_LINE_SEARCH, 0, "line-search") /* backtracking (Armijo) along B p = -g */             \
  /* gradient descent with a learning rate, momentum and gains, as the t-SNE codes */               \
  XX(NLE_STEP_FIXED_RATE, 1, "fixed")
typedef enum {
  NLE_STEP_AUTO = NLE_AUTO,   /* the model's recipe: fixed rate for t-SNE
                                 and t-EE, line search for EE, s-SNE and SNE
                                 (and whenever the optimiser is not gd) */
  NLE_STEP_MAP(NLE__ENUMERATOR)
  NLE_STEP_COUNT /* how many there are (range checks) */
} nle_step_kind;

typedef struct {
  nle_model_kind model;     /* default NLE_MODEL_TSNE */
  int dim;                  /* embedding dimension d, 1..64 (2) */
  /* affinities W+ */
  double perplexity;        /* entropic W+ (NLE_AUTO: k / 3 when k is
                               given, the graph stage's rule; else 5 for the
                               Gaussian kernel's EE, s-SNE and SNE, 30 for
                               t-SNE and t-EE) */
  double sigma;             /* NLE_AUTO (default): entropic W+; > 0:
                               Gaussian W+ of this width on the kNN graph */
  int k;                    /* kNN graph size (NLE_AUTO: 3 x perplexity,
                               or 12 for Gaussian W+) */
  nle_knn_method knn_method;     /* NLE_AUTO (default) */
  nle_knn_approx_opts knn_approx; /* approx: its options (k is set from k) */
  int pca_dims;             /* neighbours searched among the first pca_dims
                               principal components of Y, then re-ranked by
                               their distances in Y (NLE_AUTO: 50 when D > 100
                               and N > 5,000; 0: in Y itself) */
  int pca_candidates;       /* candidates per point found among the
                               components (NLE_AUTO: k; 0: keep the
                               components' distances, no re-ranking) */
  /* the objective */
  double lambda;            /* NLE_AUTO: 1 for t-SNE, s-SNE, SNE; 100 / N for
                               EE (the EE paper's lambda = 100 for W+ and W-
                               each summing to 1; ours sum to N and N^2);
                               0.03 for t-EE (about N / Z of a t-SNE map,
                               where t-EE's gradient is N times t-SNE's) */
  nle_wneg_kind wneg;       /* EE, t-EE: W- (uniform) */
  int wneg_dims;            /* squared-distance W- with a fast engine: PCA
                               dimensions of its features (30) */
  /* repulsion */
  nle_repulsion engine;     /* NLE_AUTO: exact below 5,000 points and for
                               what the fast engines do not serve; else FFT
                               in 1-2-D (Barnes-Hut where the map outgrows
                               the grid), Barnes-Hut or the fast Gauss
                               transform in 3-D */
  double theta;             /* Barnes-Hut opening angle (0.5) */
  nle_fft_opts fft;         /* box_width NLE_AUTO: 1.5 for fixed-rate
                               steps, 0.85 for line searches */
  nle_fgt_opts fgt;
  /* optimiser and schedule: opt.kind, opt.max_iters, opt.tol,
   * opt.learning_rate, opt.learning_rate_final, opt.momentum,
   * opt.exaggeration, opt.exaggeration_iters and opt.x_tol are NLE_AUTO
   * here (x_tol: 1e-3 for a homotopy with line searches, the EE paper's
   * test, with tol 0 then; else 0) (see
   * docs/embeddings.md for each model's recipe); a rate NLE_AUTO is
   * max(N / (4 exaggeration), 50) / sum(W+), the final one max(N / 2, 200) /
   * sum(W+) after an exaggeration phase, else the first. */
  nle_opt_opts opt;
  nle_step_kind step;       /* NLE_AUTO */
  /* homotopy over lambda (EE paper sec. 4.4), EE and t-EE only */
  int homotopy_steps;       /* NLE_AUTO: 5 for t-EE's fixed-rate recipe,
                               else 0 (none) */
  double lambda_start;      /* NLE_AUTO: lambda / 100 for fixed-rate steps,
                               else from the lambda* bounds */
  nle_homotopy_fn on_step;  /* after every lambda (or NULL) */
  void *on_step_user;
  /* initialisation */
  nle_init_kind init;       /* NLE_AUTO */
  const nle_matd *init_X;   /* NLE_INIT_GIVEN: N x d */
  double init_scale;        /* standard deviation of the first column of a
                               PCA, spectral or random start (1e-4) */
  /* checkpoints (nle_opt_set_checkpoint) */
  const char *checkpoint;   /* NULL (default): none */
  int checkpoint_every;     /* iterations (50) */
  const char *resume;       /* a checkpoint of the same run to continue */
  /* what to keep */
  int lambda_bounds;        /* EE, t-EE: compute lambda*'s bounds (NLE_AUTO:
                               up to 20,000 points, or when a line-search
                               homotopy starts from them; 0 no, 1 yes) */
  bool keep_model;          /* true: result->trained for nle_trained_save (needs
                               Y and a kNN graph: not with affinities) */
} nle_embed_opts;

NLE_API void nle_embed_opts_init(nle_embed_opts *o);
/* The kNN graph's size nle_embed builds with these options (k, or the
 * recipe's: 3 x perplexity, 12 for Gaussian W+): for a caller that searches
 * the graph itself (sparse rows, precomputed distances). */
NLE_API int nle_embed_knn_size(const nle_embed_opts *o);

/* Seconds per stage of a run. */
typedef struct {
  double pca, knn, affinities, init, plan, optimize, total;
} nle_embed_times;

/* A distributed run (docs/mpi.md): what one rank sent per stage, in bytes
 * handed to MPI, and its peak resident memory. */
typedef struct {
  uint64_t pca, knn, affinities, init, optimize, total;
  uint64_t peak_memory; /* bytes, the process's high-water mark */
} nle_embed_rank_usage;

typedef struct {
  nle_matd *X;              /* the N x d embedding */
  nle_opt_report report;    /* of the run (the whole path for a homotopy);
                               report.E is the objective, not the KL */
  double kl;                /* t-SNE, s-SNE: KL(P || Q) at X; SNE: the sum
                               over points of KL(P_n || Q_n); EE, t-EE: NaN */
  nle_embed_opts resolved;  /* the options as they ran, no NLE_AUTO left */
  nle_knn_method knn_used;  /* the search that ran (NLE_AUTO: none) */
  double pca_variance;      /* fraction of the variance the PCA kept (or 0) */
  double lambda_lower, lambda_upper; /* lambda* bounds (NaN: not computed) */
  double w_total;           /* sum of W+'s entries */
  double map_extent;        /* max |x_nj| of the result */
  int components;           /* connected components of W+ */
  size_t n, D;
  bool resumed;             /* the run continued a checkpoint */
  int resumed_iteration;    /* ... from this iteration */
  nle_embed_times seconds;
  int ranks;                /* the communicator's ranks (1 alone) */
  nle_embed_rank_usage *rank_usage; /* ranks > 1: every rank's, rank by
                               rank, the same on every rank; else NULL */
  nle_trained *trained;     /* keep_model: the model (owned here) */
  char fingerprint[1536];   /* what decides the result (the checkpoints') */
} nle_embed_result;

/* Validates the whole options struct before any work (naming the field and
 * its range), resolves every NLE_AUTO, runs the pipeline and returns the
 * result (freed with nle_embed_result_free). NLE_WARN_NOT_CONVERGED and
 * the other warnings leave a usable result; the last warning's text is in
 * nle_ctx_error(ctx). */
NLE_API nle_status nle_embed(nle_ctx *ctx, const nle_embed_input *input, const nle_embed_opts *opts,
                             nle_embed_result **result);
NLE_API void nle_embed_result_free(nle_embed_result **result);
/* nle_transform: the front door of F(y) for new data points (M x D) with a
 * trained model (keep_model, or nle_trained_load): their neighbours among
 * the training points (in the model's PCA space and re-ranked, when
 * training searched there), their affinities, then the minimisation of
 * nle_trained_transform. The model is not changed. */
typedef struct {
  int max_iters;            /* per new point (NLE_AUTO: 200) */
  nle_repulsion engine;     /* NLE_AUTO: the model's t->engine (the fast
                               Gauss transform for the Gaussian kernel, FFT
                               interpolation for the Student-t, from 5,000
                               training points where the model allows; else
                               exact); a fast engine falls back to the exact
                               sums when the grid cannot cover the map */
} nle_transform_opts;

NLE_API void nle_transform_opts_init(nle_transform_opts *o);

typedef struct {
  nle_matd *X;              /* the M x d mapped points */
  nle_transform_opts resolved; /* as they ran: engine is the one used */
  size_t m;                 /* new points */
  double weights_seconds;   /* neighbours and affinities */
  double optimize_seconds;  /* the minimisation */
  double total_seconds;
} nle_transform_result;

NLE_API nle_status nle_transform(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew,
                                 const nle_transform_opts *opts,
                                 nle_transform_result **result);
NLE_API void nle_transform_result_free(nle_transform_result **result);

/* Names: "ee", "tee", "ssne", "tsne", "sne" and back (-1 if unknown). */
NLE_API const char *nle_model_name(nle_model_kind kind);
NLE_API int nle_model_parse(const char *name);
/* Initialisations "pca", "spectral", "random", "given", and "auto"; steps
 * "line-search", "fixed", and "auto"; and back (-1 if unknown). */
NLE_API const char *nle_init_name(nle_init_kind init);
NLE_API int nle_init_parse(const char *name);
NLE_API const char *nle_step_name(nle_step_kind step);
NLE_API int nle_step_parse(const char *name);
/* Engines: "exact", "bh", "fft", "fgt" (and "auto": NLE_REPULSION_AUTO) and
 * back (-1 if unknown). */
NLE_API const char *nle_repulsion_name(nle_repulsion engine);
NLE_API int nle_repulsion_parse(const char *name);
/* Whether nle_transform's F(y) can sum its repulsion with the engine (for
 * the models the engine serves): the engines `nlembed transform
 * --repulsion` takes are these, by their names (ids from 0 up to the first
 * "unknown" name). */
NLE_API bool nle_repulsion_serves_new_points(nle_repulsion engine);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_NONLINEAR_H */
