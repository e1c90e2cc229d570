/* est_mds.c — the estimator families of the distance and kernel methods:
 * the MDS family (classical, metric, Sammon, non-metric, landmark), kernel
 * PCA, LDA and kernel LDA; their maps x = A phi(y) and the
 * "projection-model" file they share with PCA (the file's method names the
 * estimator it loads into). */
#include "estimator_internal.h"

#include "../core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mds_methods[] = {"cmds", "mds", "sammon", "nmds", "lmds", NULL};
static const char *const kpca_methods[] = {"kpca", NULL};
static const char *const lda_methods[] = {"lda", "klda", NULL};

static int mds_variant(const char *method) {
  static const char *const names[] = {"cmds", "mds", "sammon", "nmds", "lmds"};
  for (int i = 0; i < 5; i++)
    if (!strcmp(method, names[i])) return i; /* nle_mds_method's order */
  return -1;
}
static int one_variant(const char *method) { return strcmp(method, "klda") ? 0 : 1; }

/* Every variant of these families starts from the same defaults. */
#define OPTS_INIT(name, init)                   \
  static void name(void *opts, int variant) {   \
    (void)variant;                              \
    init(opts);                                 \
  }
OPTS_INIT(mds_init, nle_mds_opts_init)
OPTS_INIT(kpca_init, nle_kpca_opts_init)
OPTS_INIT(lda_init, nle_lda_opts_init)

NLE__ENUM_NAME_OF(nle_mds_ties_name, nle_mds_ties)
NLE__ENUM_NAME_OF(nle_pdkernel_name, nle_pdkernel_kind)

#define O_INT(T, n, f, a, ...) {.name = n, .kind = NLE__OPT_INT, .offset = offsetof(T, f), .auto_ok = a, __VA_ARGS__}
#define O_REAL(T, n, f, a, ...) {.name = n, .kind = NLE__OPT_REAL, .offset = offsetof(T, f), .auto_ok = a, __VA_ARGS__}
#define DIM(T, f, a, what) O_INT(T, "dim", f, a, NLE__INT_FROM(1), .short_name = 'd', .metavar = "N", .help = what)
/* (kernel LDA's kernel is dense: the sparse kNN kernel, --neighbors, is
 * kernel PCA's alone; a precomputed kernel is the tool's --kernel-matrix) */
#define KERNEL_OPTIONS(T, SC)                                                                                      \
  {.name = "kernel", .kind = NLE__OPT_ENUM, .offset = offsetof(T, kernel.kind), .enum_name = nle_pdkernel_name_of, \
   .enum_parse = nle_pdkernel_parse, .scope = SC, .choices = "gaussian, polynomial or linear", .metavar = "NAME", \
   .help = "gaussian (exp(-gamma |x - y|^2)), polynomial ((gamma x.y + coef0)^degree), linear (x.y) or "          \
           "precomputed (the input is the kernel matrix)"},                                                       \
      O_REAL(T, "gamma", kernel.gamma, true, NLE__POSITIVE, .scope = SC, .metavar = "G",                            \
             .help = "the kernel's gamma (auto: gaussian 1 / (2 s^2), s^2 the median squared distance of 10,000 "  \
                     "random pairs; polynomial 1 / mean |x|^2)"),                                                  \
      O_REAL(T, "coef0", kernel.coef0, false, NLE__REAL_IN(-INFINITY, INFINITY, 0), .scope = SC, .metavar = "C",   \
             .help = "polynomial offset"),                                                                         \
      O_INT(T, "degree", kernel.degree, false, NLE__INT_FROM(1), .scope = SC, .metavar = "N", .help = "polynomial degree")

#define SMACOF (NLE__FOR(NLE_MDS_METRIC) | NLE__FOR(NLE_MDS_SAMMON) | NLE__FOR(NLE_MDS_NONMETRIC))
static const nle__option mds_options[] = {
    DIM(nle_mds_opts, dim, false, "embedding dimension"),
    O_INT(nle_mds_opts, "starts", starts, false, NLE__INT_FROM(1), .scope = SMACOF, .metavar = "N",
          .help = "runs: the first from classical MDS, the others from random configurations (seeded); least stress "
                  "kept"),
    O_INT(nle_mds_opts, "max-iters", max_iter, false, NLE__INT_FROM(1), .scope = SMACOF, .metavar = "N",
          .alias = "max-iter", .help = "iterations per run"),
    O_REAL(nle_mds_opts, "tol", tol, false, NLE__REAL_IN(0, 1, NLE__OPEN_HI), .scope = SMACOF, .metavar = "T",
           .help = "stop when the stress falls by less than T of itself in one iteration"),
    {.name = "ties", .kind = NLE__OPT_ENUM, .offset = offsetof(nle_mds_opts, ties), .enum_name = nle_mds_ties_name_of,
     .enum_parse = nle_mds_ties_parse, .scope = NLE__FOR(NLE_MDS_NONMETRIC), .metavar = "RULE",
     .help = "primary (tied dissimilarities may get different disparities) or secondary (equal disparities)"},
    O_INT(nle_mds_opts, "landmarks", landmarks, true, NLE__INT_FROM(2), .scope = NLE__FOR(NLE_MDS_LANDMARK),
          .metavar = "L", .help = "landmarks (auto: min(N, 1000))"),
    {.name = NULL}};

static const nle__option kpca_options[] = {
    DIM(nle_kpca_opts, dim, false, "embedding dimension"), KERNEL_OPTIONS(nle_kpca_opts, 0),
    O_INT(nle_kpca_opts, "kernel-neighbors", kernel.neighbors, false, NLE__INT_FROM(0), .alias = "neighbors",
          .metavar = "K", .help = "a sparse Gaussian kernel on the kNN graph of K neighbours (O(N K) memory; 0: dense)"),
    {.name = NULL}};

static const nle__option lda_options[] = {
    DIM(nle_lda_opts, dim, true, "discriminant directions (auto: min(C - 1, D), C the classes)"),
    O_REAL(nle_lda_opts, "ridge", ridge, true, NLE__NONNEGATIVE, .metavar = "R",
           .help = "lda: T + R I by Cholesky, T the total scatter (auto: the SVD solver in the range of the data); "
                   "klda: added to K^2's diagonal (auto: 1e-3 of its mean diagonal)"),
    O_REAL(nle_lda_opts, "tol", tol, false, NLE__REAL_IN(0, 1, NLE__OPEN_HI), .scope = NLE__FOR(0), .metavar = "T",
           .help = "singular values of the scaled within-class deviations at or below T are their null space"),
    KERNEL_OPTIONS(nle_lda_opts, NLE__FOR(1)), {.name = NULL}};

static const char *const mds_abouts[] = {
    "Classical MDS (lecture slides 002, \"Classic Metric MDS\"): B = -1/2 J M J of the squared dissimilarities M, its "
    "top eigenvectors scaled by sqrt(lambda). Of points: their PCA scores. Negative eigenvalues (non-Euclidean "
    "input) are counted and their mass reported, then dropped.",
    "Metric MDS (slides \"More General Metric MDS\") by SMACOF: the raw stress sum_{i<j} w_ij (delta_ij - d_ij)^2 "
    "lowered monotonely by the Guttman transform (weighted: conjugate gradients on V X = B(Z) Z). Reports Kruskal's "
    "stress-1 and the slides' normalised stress.",
    "Sammon mapping (slides \"More General Metric MDS\"): Sammon's stress sum (delta - d)^2 / delta / sum delta by "
    "SMACOF with weights 1 / delta. Zero dissimilarities between distinct points (duplicates) are refused.",
    "Non-metric MDS (slides \"Non-Metric MDS\"): disparities by monotone (PAV) regression on the order of the "
    "dissimilarities, alternating with a Guttman step; Kruskal's stress-1 against the disparities.",
    "Landmark MDS (de Silva and Tenenbaum 2004): classical MDS of L random landmarks, every point placed by "
    "distance-based triangulation; O(L N D).",
    NULL};
static const char *const kpca_abouts[] = {
    "Kernel PCA (dissertation sec. 4.6.4, eq. 4.18): the top eigenvectors of the centred kernel matrix, scaled by "
    "sqrt(lambda); the centring is applied implicitly (the dense centred N x N matrix is never formed).",
    NULL};
static const char *const lda_abouts[] = {
    "Linear discriminant analysis (dissertation eqs. 4.14-4.17): the directions of S_b v = lambda S_w v; at most "
    "C - 1 of them. The output is scaled so that the within-class covariance is the identity: scikit-learn's "
    "transform (solver \"svd\") up to signs, in the range of the data. Labels: any integers or names (the dataset's, "
    "or --labels); the classes are the distinct values.",
    "Kernel LDA (Baudat and Anouar 2000; eqs. 4.16-4.17 with a kernel): H p = lambda (K^2 + ridge I) p, K the "
    "centred kernel; O(N^3) time, O(N^2) memory. Labels as LDA's.",
    NULL};

/* These take points or whole matrices, never a neighbour graph. */
static nle_status no_graph(nle_estimator *e, const nle__est_input *in) {
  if (in->knn || in->affinities)
    return nle__fail(e->ctx, NLE_ERR_ARG, "%s: takes dense points or a dense N x N matrix, not %s", e->method,
                     in->knn ? "a sparse matrix or graph" : "affinities");
  return NLE_OK;
}

/* What every fit of these families keeps: the points, the resolved
 * options (reported) and the map, taken from the result. */
static nle_status keep_fit(nle_estimator *e, const nle_matd *X, const void *resolved, nle_projection_model **model) {
  nle_status k = nle__est_keep_X(e, X);
  if (!k) k = nle__est_keep_resolved(e, resolved);
  if (k) return k;
  e->model = *model;
  *model = NULL;
  nle__est_report_options(e, resolved);
  return NLE_OK;
}

/* The report's figures of an MDS run (the SMACOF family's or the direct
 * solvers'). */
static void report_mds(nle_estimator *e, const nle_mds_result *r) {
  nle__json *j = &e->report;
  bool direct = e->variant == NLE_MDS_CLASSICAL || e->variant == NLE_MDS_LANDMARK;
  nle__json_printf(j, ", \"seconds\": %.3f", r->seconds);
  nle__json_numbers(j, "eigenvalues", r->eigenvalues, (size_t)r->n_eigenvalues);
  if (direct) {
    nle__json_printf(j, ", \"negative_eigenvalues\": %d, \"spectrum_complete\": %s", r->negative_count,
                     r->spectrum_complete ? "true" : "false");
    nle__json_number(j, "negative_mass", r->negative_mass);
    nle__json_number(j, "positive_mass", r->positive_mass);
    nle__json_number(j, "trace", r->trace);
  }
  nle__json_number(j, "stress1", r->stress1);
  nle__json_number(j, "normalized_stress", r->normalized_stress);
  nle__json_number(j, "sammon_stress", r->sammon_stress);
  nle__json_number(j, "raw_stress", r->raw_stress);
  if (!direct) {
    nle__json_number(j, "start_stress", r->start_stress);
    nle__json_printf(j, ", \"iterations\": %d, \"starts_run\": %d, \"best_start\": %d, \"starts_abandoned\": %d",
                     r->iterations, r->starts_run, r->best_start, r->starts_abandoned);
  }
  char summary[160];
  if (!isnan(r->stress1))
    snprintf(summary, sizeof summary, "%s of %zu points in %.2f s: stress-1 %.6f", e->method, r->X->rows, r->seconds,
             r->stress1);
  else
    snprintf(summary, sizeof summary, "%s of %zu points to %zu dimensions in %.2f s", e->method, r->X->rows,
             r->X->cols, r->seconds);
  nle__json_string(j, "summary", summary);
}

/* The summary line of a projection method. */
static void report_summary(nle_estimator *e, double seconds) {
  char summary[160];
  snprintf(summary, sizeof summary, "%s of %zu points to %zu dimensions in %.2f s", e->method, e->X->rows, e->X->cols,
           seconds);
  nle__json_string(&e->report, "summary", summary);
}

static nle_status mds_fit(nle_estimator *e, const nle__est_input *in) {
  nle_status s = no_graph(e, in);
  if (s) return s;
  nle_mds_opts o = *(const nle_mds_opts *)e->opts;
  o.keep_model = e->keep_model && in->Y && (e->variant == NLE_MDS_CLASSICAL || e->variant == NLE_MDS_LANDMARK);
  nle_matd *delta = NULL;
  if (in->distances) s = nle_matf_to_matd(e->ctx, in->distances, &delta);
  if (s) return s;
  o.init = in->init;
  nle_mds_input mi = {.Y = delta ? NULL : in->Y, .dissimilarities = delta, .weights = in->weights};
  nle_mds_result *r = NULL;
  s = nle_mds(e->ctx, (nle_mds_method)e->variant, &mi, &o, &r);
  nle_matd_free(&delta);
  if (s < 0) return s;
  nle_status k = keep_fit(e, r->X, &r->resolved, &r->model);
  if (!k) {
    report_mds(e, r);
  }
  nle_mds_result_free(&r);
  return k ? k : s;
}

static nle_status kpca_fit(nle_estimator *e, const nle__est_input *in) {
  nle_status s = no_graph(e, in);
  if (s) return s;
  nle_kpca_opts o = *(const nle_kpca_opts *)e->opts;
  if (in->distances) return nle__fail(e->ctx, NLE_ERR_ARG, "kpca: takes points, or kernel precomputed and the kernel");
  /* kernel precomputed: the N x N input is the kernel matrix K */
  bool given = o.kernel.kind == NLE_PDK_PRECOMPUTED;
  nle_matd *K = NULL;
  if (given && (s = nle_matf_to_matd(e->ctx, in->Y, &K))) return s;
  o.keep_model = e->keep_model && !given;
  nle_kpca_result *r = NULL;
  s = nle_kpca(e->ctx, given ? NULL : in->Y, K, &o, &r);
  nle_matd_free(&K);
  if (s < 0) return s;
  nle_status k = keep_fit(e, r->X, &r->resolved, &r->model);
  if (!k) {
    nle__json *j = &e->report;
    nle__json_printf(j, ", \"seconds\": %.3f, \"kernel_seconds\": %.3f, \"eigen_seconds\": %.3f, \"sparse\": %s, "
                        "\"kernel_entries\": %zu", r->seconds, r->kernel_seconds, r->eigen_seconds,
                     r->sparse ? "true" : "false", r->nnz);
    nle__json_numbers(j, "eigenvalues", r->eigenvalues, (size_t)r->n_eigenvalues);
    report_summary(e, r->seconds);
  }
  nle_kpca_result_free(&r);
  return k ? k : s;
}

static nle_status lda_fit(nle_estimator *e, const nle__est_input *in) {
  nle_status s = no_graph(e, in);
  if (s) return s;
  if (!in->Y || in->distances) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: takes points", e->method);
  if (!in->labels) return nle__fail(e->ctx, NLE_ERR_ARG, "%s: needs the labels of the points", e->method);
  nle_lda_opts o = *(const nle_lda_opts *)e->opts;
  o.keep_model = e->keep_model;
  nle_lda_result *r = NULL;
  s = e->variant ? nle_klda(e->ctx, in->Y, in->labels, &o, &r) : nle_lda(e->ctx, in->Y, in->labels, &o, &r);
  if (s < 0) return s;
  nle_status k = keep_fit(e, r->X, &r->resolved, &r->model);
  if (!k) {
    nle__json *j = &e->report;
    nle__json_printf(j, ", \"seconds\": %.3f, \"classes\": %d", r->seconds, r->classes);
    if (r->rank >= 0) nle__json_printf(j, ", \"rank\": %d", r->rank);
    if (!e->variant && r->resolved.ridge == NLE_AUTO) nle__json_string(j, "solver", "svd");
    nle__json_numbers(j, "eigenvalues", r->eigenvalues, (size_t)r->n_eigenvalues);
    nle__json_numbers(j, "explained_variance_ratio", r->explained_variance_ratio, (size_t)r->n_eigenvalues);
    report_summary(e, r->seconds);
  }
  nle_lda_result_free(&r);
  return k ? k : s;
}

/* LDA's classifier: the scores (and probabilities) of new points, and the
 * class labels they index. */
static nle_status lda_decision(nle_estimator *e, const nle_matf *Y, nle_matd **scores, nle_matd **proba,
                               const int32_t **classes) {
  const nle_projection_model *p = e->model;
  *classes = p->class_labels;
  return nle_projection_decision(e->ctx, p, Y, scores, proba);
}

/* The file's method ("classical", "landmark", "kpca", "lda", "klda",
 * "pca") names the estimator. */
static nle_status load(nle_estimator *e, const char *path) {
  nle_projection_model *p = NULL;
  nle_status s = nle_projection_model_load(e->ctx, path, &p);
  if (s) return s;
  e->model = p;
  const char *method = !strcmp(p->method, "classical") ? "cmds" : !strcmp(p->method, "landmark") ? "lmds" : p->method;
  static const nle__family *const sharing[] = {&nle__family_mds, &nle__family_kpca, &nle__family_lda,
                                                &nle__family_pca};
  s = nle__est_become(e, sharing, sizeof sharing / sizeof *sharing, method);
  if (s) return s;
  e->D = p->D;
  /* the options the map carries */
  if (e->family == &nle__family_kpca) {
    nle_kpca_opts *o = e->opts;
    o->dim = (int)p->dim;
    o->kernel = p->kernel;
  } else if (e->family == &nle__family_lda) {
    nle_lda_opts *o = e->opts;
    o->dim = (int)p->dim;
    o->kernel = p->kernel;
  } else if (e->family == &nle__family_mds) {
    ((nle_mds_opts *)e->opts)->dim = (int)p->dim;
  } else if (e->family == &nle__family_pca) {
    ((nle_pca_opts *)e->opts)->n_components = (int)p->dim;
  }
  return NLE_OK;
}

/* The three families keep one kind of map: the projection model. */
#define PROJECTION_MAP                                                                       \
  .transform = nle__est_projection_transform, .save = nle__est_projection_save,              \
  .free_model = nle__est_projection_free

const nle__family nle__family_mds = {
    .methods = mds_methods,
    .abouts = mds_abouts,
    .variant_of = mds_variant,
    .opts_size = sizeof(nle_mds_opts),
    .opts_init = mds_init,
    .options = mds_options,
    .fit = mds_fit,
    .file_kind = "projection-model",
    .load = load,
    PROJECTION_MAP,
};

const nle__family nle__family_kpca = {
    .methods = kpca_methods,
    .abouts = kpca_abouts,
    .variant_of = one_variant,
    .opts_size = sizeof(nle_kpca_opts),
    .opts_init = kpca_init,
    .options = kpca_options,
    .fit = kpca_fit,
    PROJECTION_MAP,
};

const nle__family nle__family_lda = {
    .methods = lda_methods,
    .abouts = lda_abouts,
    .variant_of = one_variant,
    .opts_size = sizeof(nle_lda_opts),
    .opts_init = lda_init,
    .options = lda_options,
    .fit = lda_fit,
    .decision = lda_decision,
    PROJECTION_MAP,
};
