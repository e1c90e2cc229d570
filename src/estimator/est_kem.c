/* est_kem.c — the estimator family of kernel eigenmaps: nle_kem_fit, the
 * continuous map G(x) for new points, its inverse G+(y), the "kem-model"
 * file. */
#include "estimator_internal.h"

#include "../core/internal.h"

#include <string.h>

static const char *const methods[] = {"kem", NULL};

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

#define K_INT(n, f, a, ...) {.name = n, .kind = NLE__OPT_INT, .offset = offsetof(nle_kem_opts, f), .auto_ok = a, __VA_ARGS__}
#define K_REAL(n, f, a, ...) {.name = n, .kind = NLE__OPT_REAL, .offset = offsetof(nle_kem_opts, f), .auto_ok = a, __VA_ARGS__}
#define K_BOOL(n, f, ...) {.name = n, .kind = NLE__OPT_BOOL, .offset = offsetof(nle_kem_opts, f), __VA_ARGS__}

static const nle__option options[] = {
    K_INT("dim", dim, false, .help = "embedding dimension"),
    K_INT("neighbors", k, false, .help = "neighbours of the graph W"),
    {.name = "weights", .kind = NLE__OPT_ENUM, .offset = offsetof(nle_kem_opts, weights), .enum_name = nle_affinity_kind_name_of, .enum_parse = nle_affinity_kind_parse, .help = "the graph's weights: inverse (1/|x_i - x_j|), gaussian or binary"},
    K_REAL("heat-t", heat_t, true, .help = "gaussian weights' t (auto: 2 s^2, s the median neighbour distance)"),
    {.name = "symmetrize", .kind = NLE__OPT_ENUM, .offset = offsetof(nle_kem_opts, symmetrize), .enum_name = nle_symmetrize_name_of, .enum_parse = nle_symmetrize_parse, .help = "making the graph symmetric: average ((A + A^T) / 2), union or mutual"},
    K_BOOL("plus-identity", plus_identity, .help = "W + I (more isometric), D from W + I"),
    K_INT("kernels", kernels, true, .help = "kernels at random data points (auto: min(64, N))"),
    K_REAL("sigma", sigma, true, .help = "the kernels' width (auto: half the median distance from a kernel centre to its nearest data points)"),
    K_INT("local-dims", local_dims, true, .help = "the leading local principal directions per kernel (auto: D when D <= 10, else 10; 0: posteriors only)"),
    K_INT("local-points", local_points, true, .help = "points of each local PCA (auto: max(k, 3 local_dims))"),
    K_REAL("truncate", truncate, false, .help = "posteriors below this dropped (0: none)"),
    {.name = "variant", .kind = NLE__OPT_ENUM, .offset = offsetof(nle_kem_opts, variant), .auto_ok = true, .enum_name = nle_kem_variant_name_of, .enum_parse = nle_kem_variant_parse, .help = "auto, reweighted, raw, affine or stochastic"},
    K_BOOL("lpp", lpp, .help = "Z = X: Locality Preserving Projections"),
    K_INT("inverse-steps", inverse_steps, false, .help = "Gauss-Newton steps refining the inverse map G+(y)"),
    K_REAL("inverse-width", inverse_width, false, .help = "the inverse map's kernel width, in sigma"),
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
    nle__json_numbers(j, "eigenvalues", r->eigenvalues, (size_t)r->n_eigenvalues);
    nle__json_number(j, "distortion", r->distortion);
    nle__json_printf(j, ", \"components\": %d, \"pencil_singular\": %s", r->components,
                     r->pencil_singular ? "true" : "false");
    nle__json_printf(j, ", \"seconds\": {\"knn\": %.3f, \"basis\": %.3f, \"eigen\": %.3f, \"total\": %.3f}",
                     r->knn_seconds, r->basis_seconds, r->eigen_seconds, r->total_seconds);
  }
  nle_kem_result_free(&r);
  return k ? k : s;
}

static nle_status transform(nle_estimator *e, const nle_matf *Y, nle_matd **X) {
  return nle_kem_transform(e->ctx, e->model, Y, X);
}

static nle_status inverse(nle_estimator *e, const nle_matd *X, nle_matf **Y) {
  nle_matd *Yd = NULL;
  nle_status s = nle_kem_inverse(e->ctx, e->model, X, &Yd);
  if (s >= 0) {
    nle_status c = nle_matd_to_matf(e->ctx, Yd, Y);
    if (c) s = c;
  }
  nle_matd_free(&Yd);
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

static void free_model(void **model) {
  nle_kem_model *m = *model;
  nle_kem_model_free(&m);
  *model = NULL;
}

const nle__family nle__family_kem = {
    .methods = methods,
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
    .free_model = free_model,
};
