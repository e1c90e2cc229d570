/* cmd_metrics.c — `nlembed metrics`: how well an embedding keeps the data's
 * neighbourhoods, as one JSON line. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "Usage: nlembed metrics [options] DATA EMBEDDING [-o FILE.json]\n"
    "\n"
    "Scores an N x d EMBEDDING of the N x D DATA and prints one JSON line:\n"
    "  recall           mean fraction of each point's k nearest neighbours in the\n"
    "                   data that are among its k nearest in the embedding\n"
    "  trustworthiness  as sklearn.manifold.trustworthiness\n"
    "  continuity       trustworthiness with data and embedding swapped\n"
    "  knn_accuracy     k-NN classifier accuracy, stratified 5-fold CV as\n"
    "                   sklearn's cross_val_score (needs labels)\n"
    "The first three score a fixed random subsample of M points, each one's\n"
    "neighbours and ranks taken among all N points (cost O(M N D)), so they\n"
    "estimate the scores of all N; the accuracy uses every point.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE         also write the JSON line to FILE\n"
    "  -k, --neighbors K         neighbourhood size (default 10)\n"
    "  --subsample M             points for recall/trust/continuity (default\n"
    "                            10000; 0 = all)\n"
    "  --folds F                 cross-validation folds (default 5)\n"
    "  --cv-k K                  classifier neighbours (default 10)\n"
    "  --within-subsample        neighbours and ranks among the subsample only, as\n"
    "                            sklearn's trustworthiness(Y[s], X[s]) (cost\n"
    "                            O(M^2 D); wider neighbourhoods, higher recall)\n"
    "  --save-subsample FILE     write the subsample's indices (.npy int32)\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_SUBSAMPLE = OPT_COMMAND_BASE, OPT_FOLDS, OPT_CVK, OPT_SAVE_SUB, OPT_WITHIN };

int cmd_metrics(int argc, char **argv) {
  static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                           {"neighbors", required_argument, 0, 'k'},
                                           {"subsample", required_argument, 0, OPT_SUBSAMPLE},
                                           {"folds", required_argument, 0, OPT_FOLDS},
                                           {"cv-k", required_argument, 0, OPT_CVK},
                                           {"save-subsample", required_argument, 0, OPT_SAVE_SUB},
                                           {"within-subsample", no_argument, 0, OPT_WITHIN},
                                           CLI_COMMON_OPTIONS,
                                           {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "metrics", help)) return 1;
  nle_metrics_opts o;
  nle_metrics_opts_init(&o);
  const char *output = NULL, *save_sub = NULL;
  long long v;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:k:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'k':
      env.rc = cli_int_field("metrics", "-k", optarg, 1, INT_MAX, false, &o.k);
      break;
    case OPT_SUBSAMPLE:
      if (!(env.rc = cli_int_arg("metrics", "--subsample", optarg, 0, INT64_MAX, false, &v))) o.subsample = v;
      break;
    case OPT_FOLDS:
      env.rc = cli_int_field("metrics", "--folds", optarg, 2, INT_MAX, false, &o.cv_folds);
      break;
    case OPT_CVK:
      env.rc = cli_int_field("metrics", "--cv-k", optarg, 1, INT_MAX, false, &o.cv_k);
      break;
    case OPT_SAVE_SUB: save_sub = optarg; break;
    case OPT_WITHIN: o.within_subsample = true; break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && optind != argc - 2) rc = cli_usage_error("metrics", "expected DATA and EMBEDDING");
  nle_status s = NLE_OK;
  if (!rc && output) s = nle_check_output_path(env.ctx, output);
  if (!rc && !s && save_sub) s = nle_check_output(env.ctx, save_sub, NLE_OUTPUT_DENSE);
  nle_dataset *ds = NULL;
  nle_matd *X = NULL;
  nle_metrics *m = NULL;
  double t = 0;
  if (!rc && !s) s = cli_load(&env, argv[optind], &ds);
  if (!rc && !s) s = cli_load_embedding(&env, argv[optind + 1], &X);
  if (!rc && !s && X->rows != ds->X->rows) {
    fprintf(stderr, "nlembed metrics: error: %s has %zu points but %s has %zu\n", argv[optind], ds->X->rows,
            argv[optind + 1], X->rows);
    rc = 1;
  }
  if (!rc && !s && X->cols > ds->X->cols) {
    /* scored the wrong way round, trustworthiness and continuity swap */
    fprintf(stderr, "nlembed metrics: error: the embedding %s has %zu columns, more than the data %s (%zu): "
            "the order is DATA EMBEDDING\n", argv[optind + 1], X->cols, argv[optind], ds->X->cols);
    rc = 1;
  }
  if (!rc && !s) {
    double t0 = nle_time_seconds();
    s = nle_metrics_compute(env.ctx, ds->X, X, ds->labels, &o, &m);
    t = nle_time_seconds() - t0;
  }
  if (!rc && !s && save_sub) {
    int32_t *idx = malloc((size_t)m->subsample_n * sizeof *idx);
    if (!idx) {
      fprintf(stderr, "nlembed metrics: error: out of memory\n");
      rc = 1;
    } else {
      for (int64_t i = 0; i < m->subsample_n; i++) idx[i] = (int32_t)m->subsample_idx[i];
      s = nle_write_labels(env.ctx, save_sub, idx, m->subsample_n);
      free(idx);
    }
  }
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) {
    char rec[32], tr[32], co[32], acc[32], line[1024];
    cli_json_number(rec, sizeof rec, "%.10f", m->recall);
    cli_json_number(tr, sizeof tr, "%.10f", m->trustworthiness);
    cli_json_number(co, sizeof co, "%.10f", m->continuity);
    cli_json_number(acc, sizeof acc, "%.10f", m->knn_accuracy);
    char accs[48] = "";
    if (isfinite(m->knn_accuracy)) snprintf(accs, sizeof accs, ", %d-NN accuracy %.3f", o.cv_k, m->knn_accuracy);
    snprintf(line, sizeof line,
             "{\"command\": \"metrics\", \"n\": %lld, \"subsample\": %lld, \"within_subsample\": %s, \"k\": %d, "
             "\"recall\": %s, "
             "\"trustworthiness\": %s, \"continuity\": %s, \"knn_accuracy\": %s, \"cv_folds\": %d, \"cv_k\": %d, "
             "\"seed\": %llu, \"seconds\": %.3f, \"summary\": \"trustworthiness@%d %.3f, continuity %.3f, "
             "recall %.3f%s\"}\n",
             (long long)m->n, (long long)m->subsample_n, o.within_subsample && m->subsample_n < m->n ? "true" : "false",
             m->k, rec, tr, co, acc, o.cv_folds, o.cv_k,
             (unsigned long long)nle_ctx_seed(env.ctx), t, m->k, m->trustworthiness, m->continuity, m->recall, accs);
    fputs(line, stdout);
    if (output) {
      s = nle_write_text(env.ctx, output, line);
      if (s) rc = cli_fail(&env, s);
    }
  }
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  nle_metrics_free(&m);
  nle_matd_free(&X);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
