/* cmd_transform.c — `nlembed transform`: new points through a saved model,
 * whatever its kind. nle_estimator_load reads the model file, the
 * estimator's maps place the points (F(y) and f(x) of the EE family, the
 * spectral methods' Nystrom and weight maps, the projections, G and G+ of
 * kernel eigenmaps; a clustering's labels), and the outputs go through the
 * transaction. The maps' options (F(y)'s --max-iters, --repulsion) are the
 * library's rows (nle_estimator_map_option); the tool keeps only its own:
 * the output, --inverse and --data. */
#include "cli.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *head =
    "Usage: nlembed transform [options] MODEL INPUT -o OUTPUT\n"
    "\n"
    "Maps new points with a model saved by `nlembed METHOD --save-model MODEL`,\n"
    "whatever the method (docs/transform.md): F(y) of the EE family (ee, tee, ssne,\n"
    "tsne, sne; EE paper sec. 4.5) places each new data point y at the x minimising\n"
    "the training objective augmented with y, every training point kept where it\n"
    "is, from the x of its nearest training point, its affinities to its k nearest\n"
    "training points built as in training; the spectral methods map by Nystrom's\n"
    "formula (le, diffmap, isomap) or reconstruction weights (the LLE family), a\n"
    "clustering gives labels, cmds|lmds|kpca|lda|klda project (triangulation,\n"
    "centred kernel rows, the linear map), kem applies G(x) (docs/kem.md). With\n"
    "--inverse, INPUT holds embedding points mapped back to data space: f(x) of EE\n"
    "and t-EE trained with --wneg sqdist, G+(y) of kem. Prints one JSON line on\n"
    "stdout.\n";

enum { MAX_MAP = 16 };

typedef struct {
  const char *model, *input, *output, *data;
  bool inverse;
  const char *map[MAX_MAP]; /* the maps' options given, by nle_estimator_map_option's index */
} transform_args;

/* The tool's rows, then one a map option of the library's (its row's help,
 * default and values). */
static void make_rows(cli_row *rows, nle_option_info *infos) {
  int n = 0;
  rows[n++] = (cli_row){"output", 'o', "FILE", CLI_TEXT, offsetof(transform_args, output),
                        .help = "the mapped points (.npy, .csv, ...)"};
  rows[n++] = (cli_row){"inverse", 0, NULL, CLI_SWITCH, offsetof(transform_args, inverse),
                        .help = "the reverse map: INPUT is M x d embedding points, OUTPUT M x D"};
  rows[n++] = (cli_row){"data", 0, "SOURCE", CLI_TEXT, offsetof(transform_args, data),
                        .help = "the training data, for a model saved with --model-data reference",
                        .def = "the source it names"};
  for (int i = 0; i < MAX_MAP && nle_estimator_map_option(i); i++) {
    nle_option_info *info = &infos[i];
    if (nle_estimator_map_option_info(NULL, nle_estimator_map_option(i), info)) continue;
    rows[n++] = (cli_row){nle_estimator_map_option(i), 0, info->metavar, CLI_TEXT,
                          offsetof(transform_args, map) + (size_t)i * sizeof(const char *), .help = info->help,
                          .def = info->default_text, .values = info->values};
  }
  rows[n] = (cli_row){NULL};
}

/* Options given that the model's maps do not take: a usage error naming
 * every option these maps refuse (the tool's, then the library's), in the
 * family's words. */
static int refuse_untaken(cli_env *env, nle_estimator *e, const nle_estimator_maps *maps, const transform_args *a) {
  const char *names[MAX_MAP + 2];
  int n = 0;
  bool given = false;
  if (!maps->inverse) {
    names[n++] = "inverse";
    given |= a->inverse;
  }
  if (!maps->takes_data) {
    names[n++] = "data";
    given |= a->data != NULL;
  }
  for (int i = 0; nle_estimator_map_option(i) && i < MAX_MAP; i++) {
    nle_option_info info;
    if (!nle_estimator_map_option_info(e, nle_estimator_map_option(i), &info) && info.taken) continue;
    names[n++] = nle_estimator_map_option(i);
    given |= a->map[i] != NULL;
  }
  if (!given) return 0;
  char list[512] = "", refusal[256];
  for (int i = 0, used = 0; i < n && used < (int)sizeof list; i++)
    used += snprintf(list + used, sizeof list - (size_t)used, "%s--%s", i == 0 ? "" : i + 1 == n ? " and " : ", ",
                     names[i]);
  cli_spell(maps->refusal, refusal, sizeof refusal);
  return cli_usage_error(env->command, "%s are %s", list, refusal);
}

/* The model's map of INPUT (or its reverse) into OUTPUT; 0, or the exit code. */
static int map_points(cli_env *env, nle_estimator *e, const transform_args *a, size_t *n) {
  nle_estimator_maps maps;
  nle_estimator_maps_info(e, &maps);
  int rc = refuse_untaken(env, e, &maps, a);
  /* the tool's reverse maps iterate 200 times unless told (the estimator's
   * auto for f(x) is the start alone); maps without iterations take none */
  if (!rc && a->inverse) (void)nle_estimator_set_map(e, "max-iters", "200");
  nle_status s = NLE_OK;
  for (int i = 0; !rc && i < MAX_MAP && nle_estimator_map_option(i); i++)
    if (a->map[i] && (s = nle_estimator_set_map(e, nle_estimator_map_option(i), a->map[i]))) rc = cli_usage_fail(env, s, 0);
  if (rc) return rc;
  nle_dataset *train = NULL, *ds = NULL;
  nle_matd *Xin = NULL, *X = NULL, *Yd = NULL;
  nle_matf *Yf = NULL;
  int32_t *labels = NULL;
  if ((maps.data_source || a->data) && cli_ranks() > 1)
    return cli_usage_error(env->command, "a model referencing its training data (--data) does not run on more than one "
                           "rank yet: save it with --model-data copy");
  if (maps.data_source || a->data) { /* the model names its training data, or the user gives them again */
    s = nle_dataset_read(env->ctx, a->data ? a->data : maps.data_source, &env->read, &train);
    if (!s) s = nle_estimator_attach_data(e, train->X);
  }
  if (!s && a->inverse) {
    s = cli_load_embedding(env, a->input, &Xin);
    if (!s) s = nle_estimator_inverse_exact(e, Xin, &Yf, &Yd);
    if (!s) s = Yd ? nle_write_matd(env->ctx, a->output, Yd) : nle_write_matf(env->ctx, a->output, Yf);
    if (!s) *n = Xin->rows;
  } else if (!s) {
    s = cli_load(env, a->input, &ds);
    if (!s) *n = ds->X->rows;
    if (!s && maps.labels && !(labels = malloc((*n ? *n : 1) * sizeof *labels))) s = NLE_ERR_NOMEM;
    if (!s && labels) s = nle_estimator_predict(e, ds->X, labels);
    if (!s && labels) s = nle_write_labels(env->ctx, a->output, labels, (int64_t)*n);
    if (!s && !labels) s = nle_estimator_transform(e, ds->X, &X);
    if (!s && !labels) s = nle_write_matd(env->ctx, a->output, X);
  }
  free(labels);
  nle_matd_free(&Xin);
  nle_matd_free(&X);
  nle_matd_free(&Yd);
  nle_matf_free(&Yf);
  nle_dataset_free(&ds);
  nle_dataset_free(&train);
  return s ? cli_fail(env, s) : 0;
}

/* Loads the model, maps, commits every output of the run (or none), prints
 * the JSON line. */
static int run_transform(cli_env *env, const transform_args *a) {
  double t0 = nle_time_seconds();
  nle_estimator *e = NULL;
  size_t n = 0;
  nle_status s = nle_check_output(env->ctx, a->output, NLE_OUTPUT_DENSE);
  if (!s) s = nle_estimator_load(env->ctx, a->model, &e);
  int rc = s ? cli_fail(env, s) : map_points(env, e, a, &n);
  if (!rc) rc = cli_commit(env);
  if (!rc) n = cli_sum_over_ranks(n); /* each rank mapped its rows */
  if (!rc) {
    double secs = nle_time_seconds() - t0;
    char model[1200], input[1200], map[64] = "", kind[64] = "";
    const char *report = nle_estimator_map_report(e);
    cli_json_escape(a->model, model, sizeof model);
    cli_json_escape(a->input, input, sizeof input);
    int figures = (int)strlen(report) - 2; /* the report's inside */
    printf("{\"command\": \"transform\", \"model\": \"%s\", \"input\": \"%s\", \"ranks\": %d, \"n\": %zu%s%.*s, "
           "\"seconds\": %.3f}\n", model, input, cli_ranks(), n, figures > 0 ? ", " : "", figures, report + 1, secs);
    cli_json_string(report, "map", map, sizeof map);
    cli_json_string(report, "model_kind", kind, sizeof kind);
    cli_note(env, "mapped %zu points with %s of the %s model in %.2f s; wrote %s", n, map, kind, secs, a->output);
  }
  nle_estimator_free(&e);
  return rc;
}

int cmd_transform(int argc, char **argv) {
  cli_env env;
  if (cli_env_init(&env, "transform", NULL)) return 1;
  nle_ctx_set_option_spelling(env.ctx, NLE_SPELL_MARKED); /* cli_spell renders them */
  static cli_row rows[MAX_MAP + 4];
  static nle_option_info infos[MAX_MAP];
  make_rows(rows, infos);
  transform_args a = {0};
  int rc = cli_read_options(&env, argc, argv, head, rows, &a);
  if (!rc && !env.help_shown && optind != argc - 2)
    rc = cli_usage_error("transform", "expected MODEL and INPUT, got %d arguments", argc - optind);
  if (!rc && !env.help_shown && !a.output) rc = cli_usage_error("transform", "no output file (-o FILE)");
  if (!rc && !env.help_shown) {
    a.model = argv[optind];
    a.input = argv[optind + 1];
    rc = run_transform(&env, &a);
  }
  cli_env_free(&env);
  return rc;
}
