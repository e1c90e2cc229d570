/* nlembed/estimator.h — every method behind one handle whose options are
 * set by name: what bindings (the Python package) and programs that choose
 * the method at run time use instead of each front door's options struct.
 * An estimator holds its options, runs its method's front door
 * (nle_embed, nle_spectral_embed, nle_spectral_cluster, nle_mds, nle_kpca,
 * nle_lda, nle_klda, nle_kem_fit, nle_pca_fit), keeps the embedding and the
 * model for new points, and saves and loads that model as the method's own
 * file. A binding then mirrors no struct and decides nothing: every check
 * and every automatic choice stays in the library. Part of the public
 * header: include <nlembed.h>. */
#ifndef NLEMBED_ESTIMATOR_H
#define NLEMBED_ESTIMATOR_H

#include "core.h"
#include "neighbors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nle_estimator nle_estimator;

/* A new estimator of `method`, a command name of the tool: "tsne", "tee",
 * "ee", "ssne", "sne", "pca", "knn", "affinity", "le", "lle", "mlle", "ltsa", "hlle",
 * "isomap", "diffmap", "cluster", "cmds", "mds", "sammon", "nmds", "lmds",
 * "kpca", "lda", "klda", "kem". Its options are the method's defaults. The
 * estimator keeps ctx (which must outlive it) for every later call. */
NLE_API nle_status nle_estimator_new(nle_ctx *ctx, const char *method, nle_estimator **e);
NLE_API void nle_estimator_free(nle_estimator **e);
NLE_API const char *nle_estimator_method(const nle_estimator *e);

/* Options by name, as the tool's long options spell them ("perplexity",
 * "learning-rate"; '_' may stand for '-'), values as text: a number, a
 * name ("auto", "fft", "cosine"), "true"/"false" for switches. An unknown
 * name, or a value of the wrong kind, is NLE_ERR_VALUE naming the option
 * and what it takes; ranges are checked by the method at fit, naming the
 * option too. "metric" (nle_metric of neighbors.h, default euclidean) and "keep-model"
 * (true: the model for transform and save; default true) are every
 * method's. */
NLE_API nle_status nle_estimator_set(nle_estimator *e, const char *name, const char *value);
/* The option's value as text ("auto" for an automatic one) into buf; after
 * a fit, the value the run resolved. */
NLE_API nle_status nle_estimator_get(const nle_estimator *e, const char *name, char *buf, size_t cap);
/* The method's option names, i = 0, 1, ... (NULL past the last). */
NLE_API const char *nle_estimator_option(const nle_estimator *e, int i);
/* An option's row, as every client reads it: the tool builds its options
 * and --help from it, Python its parameters and docstrings, docs/ its
 * option tables. */
typedef struct {
  const char *name;      /* the one spelling: the tool's --name, this API's, Python's with '_' */
  const char *alias;     /* an older spelling the tool still accepts, or NULL ("no-NAME": a
                            switch set to false) */
  char short_name;       /* the tool's one-letter form ('k' for -k), or 0 */
  const char *kind;      /* "int", "number", "switch", "name" or "text" */
  const char *metavar;   /* the value's placeholder ("N", "NAME", "FILE"); NULL for a switch */
  const char *help;      /* one line */
  bool auto_ok;          /* "auto" is a value */
  bool taken;            /* this method takes it (false: another method of its family does) */
  char values[512];      /* what it takes: "auto, exact, bh, fft or fgt", "an integer from 1
                            to 64", "a finite number > 0"; "" where any value of its kind is */
  char default_text[64]; /* a new estimator's value ("auto", "2", "true") */
} nle_option_info;
/* The row of option `name` (or its alias) of the estimator's method or of
 * another method of its family (then info->taken is false); e NULL: of the
 * first method of any family that has it (taken false), NLE_ERR_VALUE when
 * none has. */
NLE_API nle_status nle_estimator_option_info(const nle_estimator *e, const char *name, nle_option_info *info);
/* Every option of every method, each name once, i = 0, 1, ... (NULL past
 * the last): what a client parsing a command line before it knows the
 * method needs, to name the owners of an option it was given. */
NLE_API const char *nle_estimator_any_option(int i);
/* The methods taking option `names` (a row's name or alias; '|' between
 * several: any of them), as a message lists them ("ee and tee"), into buf;
 * "" when none. Returns buf. */
NLE_API const char *nle_estimator_methods_taking(const char *names, char *buf, size_t cap);
/* Whether a fit takes sparse rows as they are (searched into a neighbour
 * graph); the other methods take dense points (a reader densifies them). */
NLE_API bool nle_estimator_takes_sparse(const nle_estimator *e);
/* Whether the estimator's fit runs under a communicator of more than one
 * rank (docs/mpi.md): each rank then gives its rows of the input (any
 * contiguous split in rank order; the rows are moved to the canonical
 * shares) and gets its rows of the embedding. A method not yet distributed
 * is refused there (NLE_ERR_UNSUPPORTED). */
NLE_API bool nle_estimator_runs_distributed(const nle_estimator *e);
/* Whether a fitted model's maps of new points (transform, predict) run
 * under such a communicator, each rank mapping its own new points. */
NLE_API bool nle_estimator_maps_distributed(const nle_estimator *e);
/* Whether a fit needs the labels of the points (lda, klda). */
NLE_API bool nle_estimator_needs_labels(const nle_estimator *e);
/* What the estimator's method is, one paragraph (the tool's --help). */
NLE_API const char *nle_estimator_about(const nle_estimator *e);
/* The method names, i = 0, 1, ... (NULL past the last). */
NLE_API const char *nle_estimator_method_name(int i);

/* The input of a fit: exactly one of Y (dense N x D rows) and sparse (an
 * N x D CSR); labels where the method takes them (lda, klda: required,
 * any integers: the classes are the distinct values; others: ignored).
 * The metric option says what the matrix holds: points (euclidean,
 * cosine, correlation), distances (precomputed) or affinities.
 * Zero-initialise it ({0}) before filling the fields you use. */
typedef struct {
  const nle_matf *Y;
  const nle_csr *sparse;
  const int32_t *labels;
  const char *source;   /* where the data came from, kept in a model that
                           references its data (or NULL) */
  const nle_matd *init; /* N x d start instead of the init option's (the
                           nonlinear embeddings; the SMACOF family's one
                           run), or NULL */
  const nle_matd *weights; /* metric MDS: N x N weights w_ij, or NULL */
  const nle_csr *affinities; /* the nonlinear embeddings: W+ given (N x N, any
                               scale; symmetrised as the method does); the
                               spectral methods: W (symmetric); with the
                               points Y or without any (Y, sparse NULL) */
  /* Called once (with release_user) as soon as the fit reads Y no more
   * (the nonlinear embeddings, without keep-model): a caller with no other
   * use for Y frees it there. NULL: not called. */
  void (*release_Y)(void *release_user);
  void *release_user;
  const nle_csr *knn; /* the spectral methods: a kNN graph of squared distances
                         (as nle_knn_graph makes it) instead of searching, with
                         the points Y (what LLL needs) or without any */
} nle_estimator_input;

/* What an iterative fit tells as it runs (the nonlinear embeddings; other
 * methods ignore it). Zero-initialise it ({0}) before filling. */
typedef struct {
  /* every iteration: its number, the seconds since the run's start, the
   * objective (NaN on iterations that skip computing it), evaluations so
   * far, the step taken; a homotopy's runs each count from 1 */
  void (*iteration)(void *user, int iteration, double seconds, double E, int evaluations, double step);
  int energy_every;  /* fixed-rate runs: E at every this many iterations (0: the method's own) */
  /* after every step of a homotopy over lambda, with the embedding there
   * and that step's iterations and objective; non-zero stops the fit */
  int (*homotopy_step)(void *user, int step, double lambda, const nle_matd *X, int iterations, double E);
  void *user;
} nle_estimator_observer;
/* Sets (or, NULL, clears) the observer of later fits. */
NLE_API void nle_estimator_observe(nle_estimator *e, const nle_estimator_observer *observer);

/* Fits the method to the input (the caller's arrays are not kept). A
 * warning (> 0) leaves a usable fit; its text is in nle_ctx_error. A
 * second fit replaces the first. */
NLE_API nle_status nle_estimator_fit(nle_estimator *e, const nle_estimator_input *input);
/* The fitted embedding (N x d; owned by the estimator; NULL before a fit). */
NLE_API const nle_matd *nle_estimator_embedding(const nle_estimator *e);
/* What a fit of the estimator's method makes: an embedding (most), an
 * embedding and cluster labels (a clustering), the kNN graph ("knn": rows
 * of k neighbours) or weights on it ("affinity"). */
typedef enum {
  NLE_MAKES_EMBEDDING = 0,
  NLE_MAKES_LABELS = 1,
  NLE_MAKES_NEIGHBOURS = 2,
  NLE_MAKES_WEIGHTS = 3,
  NLE_MAKES_COUNT
} nle_estimator_product;
NLE_API nle_estimator_product nle_estimator_makes(const nle_estimator *e);
/* The graph a graph method made (NULL otherwise; owned by the estimator):
 * "knn", the directed kNN graph (N x N, squared distances, each row's k
 * neighbours by increasing distance, ties by index, no self); "affinity",
 * the affinities (symmetric, or the conditional p(m|n) when asked). */
NLE_API const nle_csr *nle_estimator_graph(const nle_estimator *e);
/* Entropic affinities' precision beta_n = 1 / (2 sigma_n^2) of each point,
 * n of them (NULL otherwise; owned by the estimator). */
NLE_API const double *nle_estimator_betas(const nle_estimator *e, size_t *n);
/* Cluster labels of a clustering ("cluster"; NULL otherwise), n of them. */
NLE_API const int32_t *nle_estimator_labels(const nle_estimator *e, size_t *n);
/* What the fit reported, as one JSON object: the method, the options as
 * they ran (every automatic choice resolved), timings, and the method's
 * figures (eigenvalues, stress, the optimiser's iterations and objective
 * ...); "{}" before a fit. Owned by the estimator. */
NLE_API const char *nle_estimator_report(const nle_estimator *e);
/* The same report with the options as the run resolved them flat among the
 * figures, each under its name with '_' for '-' (the tool's JSON line). */
NLE_API const char *nle_estimator_report_flat(const nle_estimator *e);

/* New points (M x D, as the fit's input; rows made unit as the metric
 * says) through the fitted model: F(y) for the nonlinear embeddings, the
 * Nystrom/weights maps of the spectral methods, the projections of PCA,
 * the MDS family, kernel PCA and LDA, G(x) of kernel eigenmaps. Errors
 * name what the method lacks (a model fitted on distances). */
NLE_API nle_status nle_estimator_transform(nle_estimator *e, const nle_matf *Ynew, nle_matd **X);
/* The reverse map back to data space where the method has one (EE's f(x),
 * kernel eigenmaps' G+, PCA's): M x d in, M x D out. */
NLE_API nle_status nle_estimator_inverse(nle_estimator *e, const nle_matd *X, nle_matf **Y);
/* The same map in the precision the method computes it: exactly one of
 * *Yf (floats: EE's f(x), PCA's) and *Yd (doubles: kernel eigenmaps' G+)
 * is set, the other NULL; what `nlembed transform --inverse` writes. */
NLE_API nle_status nle_estimator_inverse_exact(nle_estimator *e, const nle_matd *X, nle_matf **Yf, nle_matd **Yd);
/* Labels of new points: a clustering's clusters ("cluster"), or a
 * classifier's classes (lda, klda: the label values the fit was given, by
 * scikit-learn's LinearDiscriminantAnalysis rule: the largest score). */
NLE_API nle_status nle_estimator_predict(nle_estimator *e, const nle_matf *Ynew, int32_t *labels);
/* A classifier's (lda, klda) scores of new points, M x C, the columns the
 * classes in increasing label order: -|z - c_k|^2 / 2 + log prior_k, z the
 * point and c_k class k's mean in every discriminant direction
 * (scikit-learn's decision_function, whose columns these are for C > 2;
 * for C = 2 it gives column 1 - column 0); and their probabilities, the
 * softmax of the scores (predict_proba). */
NLE_API nle_status nle_estimator_decision(nle_estimator *e, const nle_matf *Ynew, nle_matd **scores);
NLE_API nle_status nle_estimator_predict_proba(nle_estimator *e, const nle_matf *Ynew, nle_matd **proba);

/* The fitted model as the method's own model file (what `nlembed
 * transform` reads), training data copied in; and back: an estimator of
 * the file's method, fitted, able to transform. */
NLE_API nle_status nle_estimator_save(nle_estimator *e, const char *path);
NLE_API nle_status nle_estimator_load(nle_ctx *ctx, const char *path, nle_estimator **e);

/* --- the maps of new points, for a client that takes any model file
 * (`nlembed transform`): nle_estimator_load, then what follows, then
 * nle_estimator_transform, _inverse_exact or _predict. */

/* The options of the maps themselves, not of the fit: F(y)'s "max-iters"
 * (iterations per new point, f(x)'s too; auto: 200) and "repulsion" (the
 * engines that serve new points: auto, exact, fft, fgt). They live in rows
 * of the family's file beside its fit options (est_embed.c), so a client
 * gets their parsing, checks and help from the library as for the fit's.
 * nle_estimator_map_option: every family's, each name once, i = 0, 1, ...
 * (NULL past the last), for a client that reads its options before it
 * knows the model. nle_estimator_map_option_info: the row, taken when the
 * estimator's maps take it (e NULL: the first family's that has it, taken
 * false); NLE_ERR_VALUE when no family has it. nle_estimator_set_map: sets
 * one for the later maps, values as nle_estimator_set takes them;
 * NLE_ERR_VALUE for a bad value or an option these maps do not take. */
NLE_API const char *nle_estimator_map_option(int i);
NLE_API nle_status nle_estimator_map_option_info(const nle_estimator *e, const char *name, nle_option_info *info);
NLE_API nle_status nle_estimator_set_map(nle_estimator *e, const char *name, const char *value);

/* What the estimator's maps are. */
typedef struct {
  bool inverse;            /* it has a reverse map (nle_estimator_inverse) */
  bool labels;             /* new points get labels: nle_estimator_predict is the map
                              (a clustering) */
  bool takes_data;         /* the model can be given its training data again
                              (nle_estimator_attach_data) */
  const char *data_source; /* the training data it references and lacks (a model
                              saved with model-data reference), or NULL */
  char refusal[128];       /* how a client ends "--a and --b are ..." for options
                              of the maps it was given that these do not take:
                              "not for a kem-model model" ({@name} markers) */
} nle_estimator_maps;
NLE_API nle_status nle_estimator_maps_info(const nle_estimator *e, nle_estimator_maps *maps);
/* Gives a loaded model its training data (N x D, as the fit's), checked
 * against the checksum the model keeps. */
NLE_API nle_status nle_estimator_attach_data(nle_estimator *e, const nle_matf *Y);
/* The last map's report, one JSON object: "map" ("F(y)", "nystrom",
 * "triangulation", "G+(y)"), "model_kind" ("tsne", "le", "cluster",
 * "landmark", "kem"), then the map's figures ("training_points",
 * "reference_points", F(y)'s "max_iters", "repulsion" and timings); "{}"
 * before a map. Owned by the estimator. */
NLE_API const char *nle_estimator_map_report(const nle_estimator *e);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_ESTIMATOR_H */
