/* cmd_pca.c — `nlembed pca`: principal components of a dataset. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "Usage: nlembed pca [options] INPUT -o OUTPUT\n"
    "\n"
    "Projects INPUT on its leading principal components and writes the N x d\n"
    "projection (.npy float64, or text). Prints one JSON line with the explained\n"
    "variances on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE    the projection (.npy, .csv, .tsv, .txt)\n"
    "  -d, --dim N          components to keep (default 2)\n"
    "  --solver NAME        auto (default), exact (covariance eigendecomposition),\n"
    "                       randomized (range finder + SVD; auto picks it for\n"
    "                       D > 1000 and d <= D/10)\n"
    "  --whiten             scale every component to unit variance\n"
    "  --no-center          do not subtract the mean\n"
    "  --power-iters N      randomized: subspace iterations (default 6)\n"
    "  --oversample N       randomized: extra directions (default 10)\n"
    "  --save-labels FILE   also write the dataset's labels (e.g. for plot): class\n"
    "                       names one a line in .txt/.csv, integer codes in .npy\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_SOLVER = OPT_COMMAND_BASE, OPT_WHITEN, OPT_NO_CENTER, OPT_POWER, OPT_OVERSAMPLE, OPT_SAVE_LABELS };

int cmd_pca(int argc, char **argv) {
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"dim", required_argument, 0, 'd'},
      {"solver", required_argument, 0, OPT_SOLVER}, {"whiten", no_argument, 0, OPT_WHITEN},
      {"no-center", no_argument, 0, OPT_NO_CENTER}, {"power-iters", required_argument, 0, OPT_POWER},
      {"oversample", required_argument, 0, OPT_OVERSAMPLE}, {"save-labels", required_argument, 0, OPT_SAVE_LABELS},
      CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "pca", help)) return 1;
  nle_pca_opts o;
  nle_pca_opts_init(&o);
  const char *output = NULL, *save_labels = NULL;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:d:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'd':
      env.rc = cli_int_field("pca", "-d", optarg, 1, INT_MAX, false, &o.n_components);
      break;
    case OPT_SOLVER:
      if (nle_pca_solver_parse(optarg) != -1) o.solver = (nle_pca_solver)nle_pca_solver_parse(optarg);
      else env.rc = cli_usage_error("pca", "--solver takes auto, exact or randomized");
      break;
    case OPT_WHITEN: o.whiten = true; break;
    case OPT_NO_CENTER: o.center = false; break;
    case OPT_POWER:
      env.rc = cli_int_field("pca", "--power-iters", optarg, 0, INT_MAX, false, &o.power_iters);
      break;
    case OPT_OVERSAMPLE:
      env.rc = cli_int_field("pca", "--oversample", optarg, 0, INT_MAX, false, &o.oversample);
      break;
    case OPT_SAVE_LABELS: save_labels = optarg; break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && optind != argc - 1) rc = cli_usage_error("pca", "expected one INPUT, got %d", argc - optind);
  if (!rc && !output) rc = cli_usage_error("pca", "no output file (-o FILE)");
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_DENSE);
  if (!rc && !s && save_labels) s = nle_check_output(env.ctx, save_labels, NLE_OUTPUT_DENSE);
  nle_dataset *ds = NULL;
  nle_pca_model *model = NULL;
  nle_matd *X = NULL;
  double t_fit = 0;
  if (!rc && !s) s = cli_load(&env, argv[optind], &ds);
  if (!rc && !s && save_labels && !ds->labels)
    rc = cli_usage_error("pca", "%s has no labels to save (give them with --labels)", argv[optind]);
  if (!rc && !s) {
    double t = nle_time_seconds();
    s = nle_pca_fit(env.ctx, ds->X, &o, &model);
    if (!s) s = nle_pca_transform(env.ctx, model, ds->X, &X);
    t_fit = nle_time_seconds() - t;
  }
  if (!rc && !s) s = nle_write_matd(env.ctx, output, X);
  if (!rc && !s && save_labels) s = nle_write_labels_named(env.ctx, save_labels, ds->labels, (int64_t)ds->X->rows, ds->class_names,
                                                                     ds->n_classes);
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    double kept = 0;
    for (int i = 0; i < model->n_components; i++) kept += model->explained_variance[i];
    double ratio = model->total_variance > 0 ? kept / model->total_variance : 0;
    const char *solver = nle_pca_solver_name(model->solver_used);
    char name[1200];
    cli_json_escape(ds->name, name, sizeof name);
    printf("{\"command\": \"pca\", \"input\": \"%s\", \"n\": %zu, \"dim\": %zu, \"components\": %d, "
           "\"solver\": \"%s\", \"seconds\": %.3f, \"total_variance\": %.10g, \"explained_variance_ratio_sum\": %.8f, "
           "\"summary\": \"PCA %zu-D to %d-D (%s), %.1f%% of the variance\", \"explained_variance\": [",
           name, ds->X->rows, ds->X->cols, model->n_components, solver, t_fit, model->total_variance, ratio,
           ds->X->cols, model->n_components, solver, 100 * ratio);
    for (int i = 0; i < model->n_components; i++)
      printf("%s%.12g", i ? ", " : "", model->explained_variance[i]);
    printf("]}\n");
    cli_note(&env, "%zu x %zu -> %d components (%s) in %.2f s; %.2f%% of the variance; wrote %s", ds->X->rows,
             ds->X->cols, model->n_components, solver, t_fit, 100 * ratio, output);
  }
  nle_matd_free(&X);
  nle_pca_model_free(&model);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
