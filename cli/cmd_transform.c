/* cmd_transform.c — `nlembed transform`: the out-of-sample maps of a saved
 * embedding (EE paper sec. 4.5): F(y) for new data points, or with --inverse
 * f(x) from new embedding points back to data space; and those of a saved
 * spectral embedding (the Nystrom formulas, LLE's weights), the model
 * file's kind telling which. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "Usage: nlembed transform [options] MODEL INPUT -o OUTPUT\n"
    "\n"
    "Maps new points with a model saved by `nlembed ee|tee|ssne|tsne|sne\n"
    "--save-model MODEL` (EE paper sec. 4.5), or by `nlembed le|lle|mlle|ltsa|\n"
    "hlle|isomap|diffmap --save-model MODEL` (the spectral methods' out-of-sample\n"
    "maps: Nystrom's formula for LE, diffusion maps and Isomap, reconstruction\n"
    "weights for the LLE family; docs/transform.md), or by `nlembed cmds|lmds|\n"
    "kpca|lda|klda --save-model MODEL` (triangulation, centred kernel rows, the\n"
    "linear map), or by `nlembed kem --save-model MODEL` (G(x); with --inverse\n"
    "G+(y), docs/kem.md). Each new data point y is\n"
    "placed by an EE-family model at\n"
    "the x minimising the training objective augmented with y, every training\n"
    "point kept where it is, starting from the x of its nearest training point;\n"
    "its affinities to its k nearest training points are built as in training\n"
    "(entropic at the training perplexity, or Gaussian). With --inverse, INPUT\n"
    "holds embedding points and each is mapped to the data point y minimising\n"
    "the same objective (EE and t-EE trained with --wneg sqdist). Prints one\n"
    "JSON line on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE    the mapped points (.npy, .csv, ...)\n"
    "  --inverse            f(x): INPUT is M x d embedding points, OUTPUT M x D\n"
    "  --max-iters N        iterations per point (default 200)\n"
    "  --repulsion NAME     F(y)'s repulsion: auto (default: fgt for the Gaussian,\n"
    "                       fft for the Student-t kernel from 5,000 training\n"
    "                       points, where the model allows; else exact), exact\n"
    "                       (O(M N)), fgt or fft (all points together, O(M + N)\n"
    "                       per iteration; not SNE, nor EE/t-EE with --wneg)\n"
    "  --data SOURCE        the training data, for a model saved with\n"
    "                       --model-data reference (default: the source it names)\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_INVERSE = OPT_COMMAND_BASE, OPT_MAX_ITERS_T, OPT_DATA, OPT_REPULSION_T };

/* The JSON line of a map run: model, input, count, map and kind, then
 * `extra` (", \"key\": value" pairs), the seconds. */
static void print_map_json(const char *model_path, const char *input, size_t n, const char *map, const char *kind,
                           const char *extra, double secs) {
  char model_name[1200], input_name[1200];
  cli_json_escape(model_path, model_name, sizeof model_name);
  cli_json_escape(input, input_name, sizeof input_name);
  printf("{\"command\": \"transform\", \"model\": \"%s\", \"input\": \"%s\", \"n\": %zu, \"map\": \"%s\", "
         "\"model_kind\": \"%s\"%s, \"seconds\": %.3f}\n",
         model_name, input_name, n, map, kind, extra, secs);
}

/* A spectral model's map of the points in `input`. */
static int spectral_transform(cli_env *env, const char *model_path, const char *input, const char *data,
                              const char *output) {
  nle_spectral_model *m = NULL;
  nle_dataset *train = NULL, *ds = NULL;
  nle_matd *X = NULL;
  int32_t *labels = NULL;
  double t0 = nle_time_seconds();
  nle_status s = nle_spectral_model_load(env->ctx, model_path, &m);
  if (!s && (!m->Y || data)) { /* the model names its training data, or the user gives it again */
    s = nle_dataset_read(env->ctx, data ? data : m->source, &env->read, &train);
    if (!s) s = nle_spectral_model_attach_data(env->ctx, m, train->X);
  }
  if (!s) s = cli_load(env, input, &ds);
  if (!s) s = nle_spectral_transform(env->ctx, m, ds->X, &X);
  if (!s && m->centres) { /* a clustering's model: the labels of the nearest centres */
    if (!(labels = malloc((X->rows ? X->rows : 1) * sizeof(int32_t)))) s = NLE_ERR_NOMEM;
    if (!s) s = nle_spectral_assign(env->ctx, m, X, labels);
    if (!s) s = nle_write_labels(env->ctx, output, labels, (int64_t)X->rows);
  } else if (!s) {
    s = nle_write_matd(env->ctx, output, X);
  }
  int rc = s ? cli_fail(env, s) : cli_commit(env); /* every output of the run, or none */
  if (!rc) {
    double secs = nle_time_seconds() - t0;
    char extra[64];
    snprintf(extra, sizeof extra, ", \"training_points\": %zu", m->n);
    print_map_json(model_path, input, X->rows, nle_spectral_model_map(m),
                   m->centres ? "cluster" : nle_spectral_method_name(m->method), extra, secs);
    cli_note(env, "mapped %zu points with the %s model of %zu training points in %.2f s; wrote %s", X->rows,
             m->centres ? "cluster" : nle_spectral_method_name(m->method), m->n, secs, output);
  }
  nle_matd_free(&X);
  free(labels);
  nle_dataset_free(&ds);
  nle_dataset_free(&train);
  nle_spectral_model_free(&m);
  return rc;
}

/* A distance or kernel method's map (classical or landmark MDS, kernel
 * PCA, LDA, kernel LDA): x = A phi(y). */
static int projection_transform(cli_env *env, const char *model_path, const char *input, const char *output) {
  nle_projection_model *m = NULL;
  nle_dataset *ds = NULL;
  nle_matd *X = NULL;
  double t0 = nle_time_seconds();
  nle_status s = nle_projection_model_load(env->ctx, model_path, &m);
  if (!s) s = cli_load(env, input, &ds);
  if (!s) s = nle_projection_transform(env->ctx, m, ds->X, &X);
  if (!s) s = nle_write_matd(env->ctx, output, X);
  int rc = s ? cli_fail(env, s) : cli_commit(env);
  if (!rc) {
    static const char *const maps[] = {"linear", "triangulation", "centred kernel"};
    double secs = nle_time_seconds() - t0;
    char extra[64];
    snprintf(extra, sizeof extra, ", \"reference_points\": %zu", m->m);
    print_map_json(model_path, input, X->rows, maps[m->map], m->method, extra, secs);
    cli_note(env, "mapped %zu points with the %s model in %.2f s; wrote %s", X->rows, m->method, secs, output);
  }
  nle_matd_free(&X);
  nle_dataset_free(&ds);
  nle_projection_model_free(&m);
  return rc;
}

/* A kernel eigenmap's map (Brand 2003): G(x) of eq. 17/18, or with
 * --inverse G+(y) (nlembed/kem.h). */
static int kem_transform(cli_env *env, const char *model_path, const char *input, bool inverse, const char *output) {
  nle_kem_model *m = NULL;
  nle_dataset *ds = NULL;
  nle_matd *Yin = NULL, *X = NULL;
  double t0 = nle_time_seconds();
  nle_status s = nle_kem_model_load(env->ctx, model_path, &m);
  if (!s && inverse) s = cli_load_embedding(env, input, &Yin);
  if (!s && !inverse) s = cli_load(env, input, &ds);
  if (!s) s = inverse ? nle_kem_inverse(env->ctx, m, Yin, &X) : nle_kem_transform(env->ctx, m, ds->X, &X);
  if (!s) s = nle_write_matd(env->ctx, output, X);
  int rc = s ? cli_fail(env, s) : cli_commit(env); /* every output of the run, or none */
  if (!rc) {
    double secs = nle_time_seconds() - t0;
    char extra[128];
    snprintf(extra, sizeof extra, ", \"variant\": \"%s\", \"kernels\": %zu", nle_kem_variant_name(m->variant),
             m->kernels);
    print_map_json(model_path, input, X->rows, inverse ? "G+(y)" : "G(x)", "kem", extra, secs);
    cli_note(env, "mapped %zu points with %s of the kernel eigenmap in %.2f s; wrote %s", X->rows,
             inverse ? "G+(y)" : "G(x)", secs, output);
  }
  nle_matd_free(&Yin);
  nle_matd_free(&X);
  nle_dataset_free(&ds);
  nle_kem_model_free(&m);
  return rc;
}

int cmd_transform(int argc, char **argv) {
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"inverse", no_argument, 0, OPT_INVERSE},
      {"max-iters", required_argument, 0, OPT_MAX_ITERS_T}, {"data", required_argument, 0, OPT_DATA},
      {"repulsion", required_argument, 0, OPT_REPULSION_T},
      CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "transform", help)) return 1;
  const char *output = NULL, *data = NULL;
  int inverse = 0, c;
  nle_transform_opts to;
  nle_transform_opts_init(&to);
  while ((c = cli_next_option(&env, argc, argv, "o:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case OPT_INVERSE: inverse = 1; break;
    case OPT_MAX_ITERS_T:
      env.rc = cli_int_field("transform", "--max-iters", optarg, 0, INT_MAX, false, &to.max_iters);
      break;
    case OPT_DATA: data = optarg; break;
    case OPT_REPULSION_T:
      to.engine = (nle_repulsion)nle_repulsion_parse(optarg);
      if ((int)to.engine == -1 || to.engine == NLE_REPULSION_BH)
        env.rc = cli_usage_error("transform", "--repulsion takes auto, exact, fft or fgt");
      break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && optind != argc - 2) rc = cli_usage_error("transform", "expected MODEL and INPUT, got %d arguments", argc - optind);
  if (!rc && !output) rc = cli_usage_error("transform", "no output file (-o FILE)");
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_DENSE);
  char kind[32] = "";
  if (!rc && !s) s = nle_file_kind(env.ctx, argv[optind], kind, sizeof kind);
  if (!rc && !s && !strcmp(kind, "spectral-model")) {
    if (inverse || to.max_iters != NLE_AUTO || to.engine != NLE_REPULSION_AUTO)
      rc = cli_usage_error("transform", "--inverse, --max-iters and --repulsion are for EE-family models, not a "
                           "spectral model");
    else rc = spectral_transform(&env, argv[optind], argv[optind + 1], data, output);
    cli_env_free(&env);
    return rc;
  }
  if (!rc && !s && !strcmp(kind, "projection-model")) {
    if (inverse || data || to.max_iters != NLE_AUTO || to.engine != NLE_REPULSION_AUTO)
      rc = cli_usage_error("transform", "--inverse, --data, --max-iters and --repulsion are not for a %s model", kind);
    else rc = projection_transform(&env, argv[optind], argv[optind + 1], output);
    cli_env_free(&env);
    return rc;
  }
  if (!rc && !s && !strcmp(kind, "kem-model")) {
    if (data || to.max_iters != NLE_AUTO || to.engine != NLE_REPULSION_AUTO)
      rc = cli_usage_error("transform", "--data, --max-iters and --repulsion are not for a %s model", kind);
    else rc = kem_transform(&env, argv[optind], argv[optind + 1], inverse, output);
    cli_env_free(&env);
    return rc;
  }
  nle_trained *t = NULL;
  nle_dataset *train = NULL, *ds = NULL;
  nle_matd *Xin = NULL;
  nle_transform_result *tr = NULL;
  nle_matf *Yout = NULL;
  double t0 = nle_time_seconds();
  if (!rc && !s) s = nle_trained_load(env.ctx, argv[optind], &t);
  if (!rc && !s && (!t->Y || data)) {
    /* The model names its training data, or the user gives it again. */
    const char *source = data ? data : t->source;
    s = nle_dataset_read(env.ctx, source, &env.read, &train);
    if (!s) s = nle_trained_attach_data(env.ctx, t, train->X);
  }
  size_t m = 0;
  if (!rc && !s && inverse) {
    s = cli_load_embedding(&env, argv[optind + 1], &Xin);
    if (!s) s = nle_trained_inverse(env.ctx, t, Xin, to.max_iters == NLE_AUTO ? 200 : to.max_iters, &Yout);
    if (!s) m = Xin->rows;
    if (!s) s = nle_write_matf(env.ctx, output, Yout);
  } else if (!rc && !s) {
    s = cli_load(&env, argv[optind + 1], &ds);
    if (!s) s = nle_transform(env.ctx, t, ds->X, &to, &tr);
    if (!s) m = ds->X->rows;
    if (!s) s = nle_write_matd(env.ctx, output, tr->X);
  }
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    double secs = nle_time_seconds() - t0;
    char extra[256];
    int len = snprintf(extra, sizeof extra, ", \"training_points\": %zu", t->X->rows);
    if (tr)
      snprintf(extra + len, sizeof extra - (size_t)len,
               ", \"max_iters\": %d, \"repulsion\": \"%s\", \"weights_seconds\": %.3f, \"optimize_seconds\": %.3f",
               tr->resolved.max_iters, nle_repulsion_name(tr->resolved.engine), tr->weights_seconds,
               tr->optimize_seconds);
    print_map_json(argv[optind], argv[optind + 1], m, inverse ? "f(x)" : "F(y)", nle_model_name(t->kind), extra, secs);
    cli_note(&env, "mapped %zu points with %s (%s of %zu training points) in %.2f s; wrote %s", m,
             inverse ? "f(x)" : "F(y)", nle_model_name(t->kind), t->X->rows, secs, output);
  }
  nle_matd_free(&Xin);
  nle_transform_result_free(&tr);
  nle_matf_free(&Yout);
  nle_dataset_free(&ds);
  nle_dataset_free(&train);
  nle_trained_free(&t);
  cli_env_free(&env);
  return rc;
}
