/* estimator_internal.h — what the estimator's front door (estimator.c) and
 * its method families (one file each: est_embed.c, est_spectral.c,
 * est_mds.c, est_kem.c, est_pca.c) share: the option tables by name, the
 * family type table, the input as the metric made it, and a JSON builder. */
#ifndef NLE_ESTIMATOR_INTERNAL_H
#define NLE_ESTIMATOR_INTERNAL_H

#include "nlembed.h"
#include "nlembed/estimator.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>

/* An option by name: the one row every client reads. Its name is the
 * spelling of the tool's long option, the estimator's set/get and (with '_'
 * for '-') Python's parameter; from the rows come the tool's option parsing
 * and --help, Python's parameters and docstrings, and the option tables of
 * docs/ (nle_estimator_option_info). */
typedef enum { NLE__OPT_INT, NLE__OPT_REAL, NLE__OPT_BOOL, NLE__OPT_ENUM, NLE__OPT_TEXT } nle__opt_kind;

enum { NLE__OPEN_LO = 1, NLE__OPEN_HI = 2 };

typedef struct {
  const char *name;
  nle__opt_kind kind;
  size_t offset;                    /* in the family's options struct */
  bool auto_ok;                     /* "auto" is NLE_AUTO */
  const char *(*enum_name)(int);    /* NLE__OPT_ENUM */
  int (*enum_parse)(const char *);  /* -1 if unknown (NLE_AUTO for "auto") */
  bool (*enum_takes)(int);          /* the enum's values the option takes (NULL: all) */
  /* ranged: set refuses a value outside [lo, hi] (INT; hi INT_MAX at most)
   * or from lo to hi with the ends open as `open` says (REAL), naming the
   * option and the rule; a range refuses only what cannot work. Unranged
   * rows are checked by the method's front door at fit. */
  bool ranged;
  double lo, hi;
  unsigned open;
  unsigned scope;                   /* the methods taking it (NLE__FOR bits); 0: all the family's */
  const char *scope_text;           /* what "is for ..." says instead of the method list */
  char short_name;                  /* the tool's one-letter form, or 0 */
  const char *metavar;              /* the value's placeholder in --help */
  const char *help;                 /* one line */
  const char *alias;                /* an older spelling the tool accepts; "no-NAME" for a switch sets it false */
  const char *json;                 /* its key in the flat report where that is not the name ("k") */
  const char *choices;              /* a name option's values as messages list them, where not all the
                                       enum's are meant (or not in its order) */
} nle__option;

/* Ranges of the rows, by the one rule of docs/design.md. */
#define NLE__INT_FROM(a) .ranged = true, .lo = (a), .hi = INT_MAX
#define NLE__INT_IN(a, b) .ranged = true, .lo = (a), .hi = (b)
#define NLE__POSITIVE .ranged = true, .lo = 0, .hi = INFINITY, .open = NLE__OPEN_LO
#define NLE__NONNEGATIVE .ranged = true, .lo = 0, .hi = INFINITY
#define NLE__REAL_IN(a, b, o) .ranged = true, .lo = (a), .hi = (b), .open = (o)

#define NLE__FOR(v) (1u << (unsigned)(v))

/* Whether the method of family value `variant` takes row o (its scope). */
static inline bool nle__row_takes(const nle__option *o, int variant) {
  return !o->scope || (o->scope & NLE__FOR(variant)) != 0;
}

/* names[0..n) as a message lists them, "a, b and c" (last: " and " or
 * " or "), into buf. */
void nle__join_names(const char *const *names, int n, const char *last, char *buf, size_t cap);

/* The neighbour search's rows, one spelling for every family that searches:
 * knn-method and the approximate search's options, on the nle_knn_method
 * field `method` and the nle_knn_approx_opts field `approx` of options
 * struct T. The file defines nle_knn_method_name_of (NLE__ENUM_NAME_OF). */
#define NLE__KNN_SEARCH_ROWS(T, method, approx)                                                                       \
  {.name = "knn-method", .kind = NLE__OPT_ENUM, .offset = offsetof(T, method), .auto_ok = true,                        \
   .enum_name = nle_knn_method_name_of, .enum_parse = nle_knn_method_parse, .metavar = "NAME", .alias = "method",      \
   .help = "neighbour search: exact, approx (random-projection forest + NN-descent) or auto (a cost model in N and "   \
           "D)"},                                                                                                     \
      {.name = "trees", .kind = NLE__OPT_INT, .offset = offsetof(T, approx.n_trees), .auto_ok = true,                  \
       NLE__INT_FROM(1), .metavar = "N", .help = "approx: random-projection trees (auto: 4 + N^(1/4) / 2)"},          \
      {.name = "leaf-size", .kind = NLE__OPT_INT, .offset = offsetof(T, approx.leaf_size), .auto_ok = true,            \
       NLE__INT_FROM(1), .metavar = "N", .help = "approx: largest leaf (auto: max(60, k))"},                          \
      {.name = "max-candidates", .kind = NLE__OPT_INT, .offset = offsetof(T, approx.max_candidates), .auto_ok = true,  \
       NLE__INT_FROM(1), .metavar = "N", .help = "approx: NN-descent sample per point (auto: 30)"},                   \
      {.name = "knn-iters", .kind = NLE__OPT_INT, .offset = offsetof(T, approx.max_iters), .auto_ok = true,            \
       NLE__INT_FROM(1), .metavar = "N", .alias = "iters",                                                            \
       .help = "approx: most NN-descent iterations (auto: max(5, log2 N))"},                                          \
      {.name = "knn-delta", .kind = NLE__OPT_REAL, .offset = offsetof(T, approx.delta), NLE__NONNEGATIVE,             \
       .metavar = "D", .alias = "delta", .help = "approx: stop below D N k changes per iteration"}

/* A family's free_model over its model type's own free (void fn(type **)). */
#define NLE__MODEL_FREE_OF(fn, type)  \
  static void fn##_of(void **model) { \
    type *m = *model;                 \
    fn(&m);                           \
    *model = NULL;                    \
  }

/* An int-typed wrapper of a public name function of an enum. */
#define NLE__ENUM_NAME_OF(fn, type) \
  static const char *fn##_of(int v) { return fn((type)v); }

/* JSON text grown as it is written (out of memory: `failed`, the text
 * cut). */
typedef struct {
  char *text;
  size_t len, cap;
  bool failed;
} nle__json;

/* est_base.c: the JSON report writer. */
void nle__json_printf(nle__json *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ", \"key\": value" with the number as JSON allows (null when not finite). */
void nle__json_number(nle__json *j, const char *key, double v);
void nle__json_string(nle__json *j, const char *key, const char *v);
/* ", \"key\": [v0, v1, ...]" */
void nle__json_numbers(nle__json *j, const char *key, const double *v, size_t n);

/* The fit's input as the metric made it: at most one of the three. */
typedef struct {
  const nle_matf *Y;          /* points (rows made unit for cosine and
                                 correlation) */
  const nle_csr *knn;         /* a kNN graph of squared distances (sparse
                                 points searched, or precomputed distances) */
  const nle_csr *affinities;  /* W */
  const nle_matf *distances;  /* precomputed dense distances (N x N), kept
                                 for the families that take them whole */
  const int32_t *labels;
  const char *source;
  const nle_matd *init;       /* a given start, or NULL */
  const nle_matd *weights;    /* metric MDS's weights, or NULL */
  const nle_csr *given_affinities; /* W+ given beside (or instead of) the points */
  void (*release_Y)(void *release_user);
  void *release_user;
  double search_seconds;      /* the kNN search made here (sparse rows, distances) */
  nle_knn_method search_used; /* the search that ran there (NLE_KNN_AUTO: none) */
  const nle_matf *raw_Y;      /* the caller's dense rows as given (before the
                                 metric made them unit) */
  const nle_csr *sparse;      /* the caller's sparse rows, or NULL */
  size_t n;
} nle__est_input;

struct nle__family;

struct nle_estimator {
  nle_ctx *ctx;
  const struct nle__family *family;
  int variant;               /* the family's method value */
  char method[16];
  void *opts;                /* the family's options struct */
  void *resolved;            /* after a fit: the options as they ran */
  int metric;                /* nle_metric (an int: the rows' enum fields are) */
  bool keep_model;
  int model_data_copy;       /* 1: a saved model copies its data; 0: it references them */
  char *texts[64];           /* the text options' values, by row */
  bool fitted;
  const char *input_kind;    /* the fit's input when not dense points ("sparse
                                rows", "precomputed", "affinities"), else NULL */
  size_t n, D;
  nle_matd *X;               /* the embedding (owned) */
  nle_csr *graph;            /* a graph method's product (owned) */
  double *beta;              /* entropic affinities' precisions (owned) */
  int32_t *labels;           /* a clustering's (owned) */
  void *model;               /* the family's out-of-sample model (owned) */
  nle__json report;
  size_t options_at, figures_at; /* the report's options block: [options_at, figures_at) */
  nle__json flat;            /* the report with the options flat (nle_estimator_report_flat) */
  nle_estimator_observer observer;
  void *map_opts;            /* the family's options of its maps of new points, or NULL */
  const char *file_kind;     /* the model file it was loaded from, or NULL */
  nle__json map_report;      /* the last transform's or inverse's */
  /* the input converted by the metric, owned while fitting */
  nle_matf *Y_metric;
  nle_csr *knn_built, *affinities_built;
};

typedef struct nle__family {
  const char *const *methods;       /* NULL-terminated */
  const char *const *abouts;        /* each method's one paragraph (--help), or NULL */
  int (*variant_of)(const char *method);
  size_t opts_size;
  void (*opts_init)(void *opts, int variant);
  const nle__option *options;       /* {NULL}-terminated */
  /* the kNN size the family's graph uses (for sparse points and
   * precomputed distances, searched before the front door), or 0 when the
   * family takes no graph */
  int (*graph_k)(const nle_estimator *e, size_t n);
  /* the search the options ask for that graph (NULL: automatic) */
  void (*graph_search)(const nle_estimator *e, nle_knn_method *method, const nle_knn_approx_opts **approx);
  /* runs the front door: sets e->X, e->model (keep_model), e->resolved and
   * the report's family fields */
  nle_status (*fit)(nle_estimator *e, const nle__est_input *in);
  /* the maps of new points; each checks the points' columns itself and
   * starts e->map_report (nle__est_map_report) with the map's figures */
  nle_status (*transform)(nle_estimator *e, const nle_matf *Y, nle_matd **X);
  /* the reverse map, in the precision the method computes it: *Yf or *Yd */
  nle_status (*inverse)(nle_estimator *e, const nle_matd *X, nle_matf **Yf, nle_matd **Yd);
  nle_status (*predict)(nle_estimator *e, const nle_matd *X, int32_t *labels);
  /* a classifier's scores of new points (M x classes) and, when proba is
   * not NULL, their probabilities; *classes the label values the columns
   * stand for (LDA, kernel LDA) */
  nle_status (*decision)(nle_estimator *e, const nle_matf *Y, nle_matd **scores, nle_matd **proba,
                         const int32_t **classes);
  /* what a fit of the method makes (NULL: an embedding) */
  nle_estimator_product (*makes)(int variant);
  const char *file_kind;            /* its model file's kind */
  nle_status (*save)(nle_estimator *e, const char *path);
  /* reads the model file: sets e->model, e->variant, e->X and e->resolved */
  nle_status (*load)(nle_estimator *e, const char *path);
  void (*free_model)(void **model);
  /* the maps' own options (F(y)'s iterations and repulsion): rows on a
   * struct of map_opts_size bytes that map_opts_init sets up; NULL: none */
  const nle__option *map_options;
  size_t map_opts_size;
  void (*map_opts_init)(void *opts);
  /* a model that may reference its training data instead of holding them:
   * their source while they are not attached (NULL: attached), and giving
   * them back (checked against the model's checksum); NULL: holds them */
  const char *(*data_source)(const nle_estimator *e);
  nle_status (*attach_data)(nle_estimator *e, const nle_matf *Y);
  /* how a client says its maps do not take options it was given ("for
   * EE-family models, not a spectral model"); NULL: "not for a KIND model" */
  const char *maps_refusal;
  /* Under a communicator of more than one rank (docs/mpi.md): the methods
   * (NLE__FOR bits of their variants) whose fit runs there, every stage it
   * calls taking this rank's rows and giving back its rows; the others are
   * refused there ("does not run on more than one rank yet"). */
  unsigned distributed;
  /* The maps of new points work row by row (each new point's image its
   * own): each rank maps its own rows. */
  bool maps_by_rows;
} nle__family;

extern const nle__family nle__family_embed, nle__family_spectral, nle__family_cluster, nle__family_mds,
    nle__family_kpca, nle__family_lda, nle__family_kem, nle__family_pca, nle__family_graph;

/* est_rows.c: the fit's input under a communicator. Refuses a method not
 * distributed; moves Y, the labels and the start given in another
 * contiguous split to the canonical shares (a sparse input or a graph must
 * come in them); *use is the input to fit (given's fields, or the moved
 * copies held in *moved), *n the rows of all ranks. Alone: *use = *given. */
typedef struct {
  nle_matf Y;
  nle_matd init;
  void *labels;
  size_t given_rows; /* the rows this rank gave */
  bool rows_moved;   /* they were not its canonical share */
} nle__est_moved;
nle_status nle__est_rows_in(nle_estimator *e, const nle_estimator_input *given, nle_estimator_input *use,
                            nle__est_moved *moved, size_t *n);
/* After the fit: the embedding's (and a clustering's labels') rows moved
 * back to the split the rows were given in, so each rank gets its own. */
nle_status nle__est_rows_out(nle_estimator *e, const nle__est_moved *moved);
void nle__est_moved_free(nle__est_moved *moved);
/* A map of new points under a communicator: NLE_ERR_UNSUPPORTED unless
 * the family's maps work by rows. */
nle_status nle__est_rows_map(nle_estimator *e, const char *what);

/* The family of the n in `families` that has `method`, or NULL. */
const nle__family *nle__est_family_of(const nle__family *const *families, size_t n, const char *method);
/* The estimator made one of `method` (a loaded file said which), of one of
 * the n families `among` that share the file's kind (else NLE_ERR_FORMAT),
 * options at their defaults; the model it holds is kept (the families
 * sharing a file kind free models alike). */
nle_status nle__est_become(nle_estimator *e, const nle__family *const *among, size_t n, const char *method);
/* The family's options of its maps at their defaults (none: NULL). */
nle_status nle__est_reset_map_opts(nle_estimator *e);
/* Frees the estimator's option texts. */
void nle__est_release_texts(nle_estimator *e);
/* est_base.c (what the families and estimator.c call, calling none of
 * them), to the end of this list but nle__est_need_model and
 * nle__est_metric_rows (estimator.c's): the families whose model is a
 * projection model (MDS, kernel PCA, LDA, PCA) map, save and free it alike. */
nle_status nle__est_projection_transform(nle_estimator *e, const nle_matf *Y, nle_matd **X);
nle_status nle__est_projection_save(nle_estimator *e, const char *path);
void nle__est_projection_free(void **model);
/* Starts the report of a map of new points: its name ("F(y)") and the
 * model's kind ("tsne"); the family adds its figures after. _release:
 * drops it. */
void nle__est_map_report(nle_estimator *e, const char *map, const char *model_kind);
void nle__est_map_report_release(nle_estimator *e);
/* Whether the estimator's method takes the option (the row's scope). */
bool nle__est_takes(const nle_estimator *e, const nle__option *o);
/* The value of option o in the struct at field, as text. */
void nle__est_option_text(const nle__option *o, const char *field, char *buf, size_t cap);
/* A transform needs a fitted model: NLE_ERR_ARG naming what is missing. */
nle_status nle__est_need_model(nle_estimator *e, const char *what);
/* e->resolved as a copy of the options struct the run reported. */
nle_status nle__est_keep_resolved(nle_estimator *e, const void *resolved);
/* The options' values into the report, from `opts` (the resolved ones). */
void nle__est_report_options(nle_estimator *e, const void *opts);
/* A copy of the embedding into e->X. */
nle_status nle__est_keep_X(nle_estimator *e, const nle_matd *X);
/* Rows of new points as the metric compares them (a copy for cosine and
 * correlation, else Y itself in *use). */
nle_status nle__est_metric_rows(nle_estimator *e, const nle_matf *Y, nle_matf **copy, const nle_matf **use);

#endif /* NLE_ESTIMATOR_INTERNAL_H */
