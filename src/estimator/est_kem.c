/* est_kem.c — the estimator family of kernel eigenmaps: nle_kem_fit, the
 * continuous map G(x) for new points, its inverse G+(y), the "kem-model"
 * file. */
#include "estimator_internal.h"

#include "../core/internal.h"

#include <string.h>

static const char *const methods[] = {"kem", NULL};
static const char *const abouts[] = {
    "Kernel eigenmaps (Brand 2003, docs/kem.md): the Laplacian-eigenmap problem of a kNN graph W (eq. 1) restricted "
    "to linear maps of a kernel basis z(x) (sec. 2, eq. 8): K Gaussian kernels at data points, each "
    "contributing its local homogeneous coordinate [K_k (x - mu_k); 1] times its posterior (eqs. 14-15). The small "
    "pencil (Z W Z^T, Z D Z^T) gives a continuous map G(x) (eqs. 17-18) of the whole space and an approximate "
    "inverse G+(y) (eq. 19), kept with --save-model for `nlembed transform`.",
    NULL};

static int variant_of(const char *method) {
  (void)method;
  return 0;
}

static void opts_init(void *opts, int variant) {
  (void)variant;
  nle_kem_opts_init(opts);
}

NLE__ENUM_NAME_OF(nle_affinity_kind_name, nle_affinity_kind)
NLE__ENUM_NAME_OF(nle_symmetrize_name, nle_symmetrize_rule)
NLE__ENUM_NAME_OF(nle_kem_variant_name, nle_kem_variant)
NLE__ENUM_NAME_OF(nle_landmark_method_name, nle_landmark_method)

#define AT(f) offsetof(nle_kem_opts, f)
#define K_INT(n, f, a, ...) {.name = n, .kind = NLE__OPT_INT, .offset = AT(f), .auto_ok = a, __VA_ARGS__}
#define K_REAL(n, f, a, ...) {.name = n, .kind = NLE__OPT_REAL, .offset = AT(f), .auto_ok = a, __VA_ARGS__}
#define K_BOOL(n, f, ...) {.name = n, .kind = NLE__OPT_BOOL, .offset = AT(f), __VA_ARGS__}

static const nle__option options[] = {
    K_INT("dim", dim, false, NLE__INT_FROM(1), .short_name = 'd', .metavar = "N", .help = "embedding dimension"),
    K_INT("neighbors", k, false, NLE__INT_FROM(1), .short_name = 'k', .metavar = "K", .json = "k",
          .help = "neighbours of the graph W (sec. 4)"),
    {.name = "weights", .kind = NLE__OPT_ENUM, .offset = AT(weights), .enum_name = nle_affinity_kind_name_of,
     .enum_parse = nle_affinity_kind_parse, .choices = "inverse, gaussian or binary", .metavar = "NAME",
     .help = "the graph's weights: inverse (1/|x_i - x_j|, sec. 3), gaussian (the heat kernel of LPP) or binary; W "
             "scaled to a largest entry of 1"},
    K_REAL("heat-t", heat_t, true, NLE__POSITIVE, .metavar = "T",
           .help = "gaussian weights' t (auto: 2 s^2, s the median distance to the k-th neighbour)"),
    {.name = "symmetrize", .kind = NLE__OPT_ENUM, .offset = AT(symmetrize), .enum_name = nle_symmetrize_name_of,
     .enum_parse = nle_symmetrize_parse, .metavar = "RULE",
     .help = "making the graph symmetric: average ((A + A^T) / 2), union or mutual"},
    K_BOOL("plus-identity", plus_identity, .help = "W + I (sec. 4: more isometric), D from W + I"),
    K_INT("kernels", kernels, true, NLE__INT_FROM(1), .metavar = "K",
          .help = "kernels (auto: min(1024, N), measured: docs/kem.md)"),
    {.name = "placement", .kind = NLE__OPT_ENUM, .offset = AT(placement), .enum_name = nle_landmark_method_name_of,
     .enum_parse = nle_landmark_method_parse, .choices = "random, thinned, kmeans or minmax", .metavar = "NAME",
     .help = "where the kernels sit, each centre a data point: random (default), thinned, kmeans (snapped) or "
             "minmax (farthest-point), as LLL's landmarks"},
    K_REAL("sigma", sigma, true, NLE__POSITIVE, .metavar = "S",
           .help = "the kernels' width (auto: 0.15 times the median distance from a centre to the nearest other centre)"),
    K_INT("local-dims", local_dims, true, NLE__INT_FROM(0), .metavar = "Q",
          .help = "the Q leading local principal directions per kernel (sec. 6; auto: 0, the posteriors only; the "
                  "inverse map G+(y) needs Q > 0)"),
    K_INT("local-points", local_points, true, NLE__INT_FROM(1), .metavar = "L",
          .help = "points of each local PCA (auto: max(k, 3 Q))"),
    /* below 0.01: the map's derivative leaves out the renormalisation after
     * the cut, an error of the order of truncate (kem_map.c) */
    K_REAL("truncate", truncate, false, NLE__REAL_IN(0, 1e-2, NLE__OPEN_HI), .metavar = "T",
           .help = "posteriors below T dropped (0: none)"),
    {.name = "variant", .kind = NLE__OPT_ENUM, .offset = AT(variant), .auto_ok = true, .enum_name = nle_kem_variant_name_of,
     .enum_parse = nle_kem_variant_parse, .choices = "raw, affine, reweighted or stochastic", .metavar = "NAME",
     .help = "reweighted (eq. 18), raw (eq. 8), affine ([Z; 1]) or stochastic (eq. 12) (auto: reweighted, raw with "
             "lpp)"},
    K_BOOL("lpp", lpp, .help = "Z = X: Locality Preserving Projections (sec. 4)"),
    K_INT("inverse-steps", inverse_steps, false, NLE__INT_FROM(0), .metavar = "N",
          .help = "Gauss-Newton steps refining the inverse map G+(y)"),
    K_REAL("inverse-width", inverse_width, false, NLE__POSITIVE, .metavar = "W",
           .help = "the inverse map's kernel width, in sigma"),
    {.name = NULL}};

static nle_status fit(nle_estimator *e, const nle__est_input *in) {
  if (!in->Y || in->distances) return nle__fail(e->ctx, NLE_ERR_ARG, "kem: takes dense points");
  nle_kem_opts o = *(const nle_kem_opts *)e->opts;
  o.keep_model = e->keep_model;
  nle_kem_result *r = NULL;
  nle_status s = nle_kem_fit(e->ctx, in->Y, &o, &r);
  if (s < 0) return s;
  nle_status k = nle__est_keep_X(e, r->X);
  if (!k) k = nle__est_keep_resolved(e, &r->resolved);
  if (!k) {
    e->model = r->model;
    r->model = NULL;
    nle__json *j = &e->report;
    nle__est_report_options(e, &r->resolved);
    nle__json_printf(j, ", \"seconds\": %.3f, \"knn_seconds\": %.3f, \"basis_seconds\": %.3f, \"pencil_seconds\": %.3f, "
                        "\"eigen_seconds\": %.3f, \"inverse_seconds\": %.3f",
                     r->total_seconds, r->knn_seconds, r->basis_seconds, r->pencil_seconds, r->eigen_seconds,
                     r->inverse_seconds);
    nle__json_printf(j, ", \"pencil_order\": %zu, \"pencil_rank\": %zu, \"pencil_singular\": %s", r->pencil_order,
                     r->pencil_rank, r->pencil_singular ? "true" : "false");
    nle__json_number(j, "pencil_rcond", r->pencil_rcond);
    nle__json_number(j, "distortion", r->distortion);
    if (!isnan(r->denominator_spread)) nle__json_number(j, "denominator_spread", r->denominator_spread);
    nle__json_printf(j, ", \"components\": %d", r->components);
    nle__json_numbers(j, "eigenvalues", r->eigenvalues, (size_t)r->n_eigenvalues);
    char summary[200];
    snprintf(summary, sizeof summary, "kernel eigenmap (%s) of %zu points in %.2f s: distortion %.6g%s",
             nle_kem_variant_name(r->resolved.variant), r->n, r->total_seconds, r->distortion,
             r->pencil_singular ? " (singular pencil, solved in its range)" : "");
    nle__json_string(j, "summary", summary);
  }
  nle_kem_result_free(&r);
  return k ? k : s;
}

/* The map's report: its name, the variant and the kernels. */
static void map_report(nle_estimator *e, const char *map) {
  const nle_kem_model *m = e->model;
  nle__est_map_report(e, map, e->method);
  nle__json_printf(&e->map_report, ", \"variant\": \"%s\", \"kernels\": %zu", nle_kem_variant_name(m->variant), m->kernels);
}

static nle_status transform(nle_estimator *e, const nle_matf *Y, nle_matd **X) {
  nle_status s = nle_kem_transform(e->ctx, e->model, Y, X);
  if (s >= 0) map_report(e, "G(x)");
  return s;
}

static nle_status inverse(nle_estimator *e, const nle_matd *X, nle_matf **Yf, nle_matd **Yd) {
  (void)Yf; /* G+ is computed in doubles */
  nle_status s = nle_kem_inverse(e->ctx, e->model, X, Yd);
  if (s >= 0) map_report(e, "G+(y)");
  return s;
}

static nle_status save(nle_estimator *e, const char *path) { return nle_kem_model_save(e->ctx, e->model, path); }

static nle_status load(nle_estimator *e, const char *path) {
  nle_kem_model *m = NULL;
  nle_status s = nle_kem_model_load(e->ctx, path, &m);
  if (s) return s;
  e->model = m;
  e->D = m->D;
  nle_kem_opts *o = e->opts;
  o->dim = (int)m->dim;
  o->variant = m->variant;
  o->lpp = m->lpp;
  o->sigma = m->sigma;
  o->truncate = m->truncate;
  o->inverse_steps = m->inverse_steps;
  o->inverse_width = m->inverse_width;
  o->kernels = (int)m->kernels;
  return NLE_OK;
}

NLE__MODEL_FREE_OF(nle_kem_model_free, nle_kem_model)

const nle__family nle__family_kem = {
    .methods = methods,
    .abouts = abouts,
    .variant_of = variant_of,
    .opts_size = sizeof(nle_kem_opts),
    .opts_init = opts_init,
    .options = options,
    .fit = fit,
    .transform = transform,
    .inverse = inverse,
    .file_kind = "kem-model",
    .save = save,
    .load = load,
    .free_model = nle_kem_model_free_of,
};
