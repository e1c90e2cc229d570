/* cmd_metrics.c — `nlembed metrics`: how well an embedding keeps the data's
 * neighbourhoods, as one JSON line. */
#include "cli.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *head =
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
    "estimate the scores of all N; the accuracy uses every point.\n";

typedef struct {
  const char *output, *save_subsample;
  nle_metrics_opts metrics;
} metrics_settings;

#define FIELD(name) .field = offsetof(metrics_settings, name)
static const cli_row rows[] = {
    {"output", 'o', "FILE", CLI_TEXT, FIELD(output), .help = "also write the JSON line to FILE"},
    {"neighbors", 'k', "K", CLI_INT, FIELD(metrics.k), .lo = 1, .hi = INFINITY, .help = "neighbourhood size",
     .def = "10"},
    {"subsample", 0, "M", CLI_INT64, FIELD(metrics.subsample), .lo = 0, .hi = INFINITY,
     .help = "points for recall/trust/continuity", .def = "10000", .values = "0: all"},
    {"folds", 0, "F", CLI_INT, FIELD(metrics.cv_folds), .lo = 2, .hi = INFINITY, .help = "cross-validation folds",
     .def = "5"},
    {"cv-k", 0, "K", CLI_INT, FIELD(metrics.cv_k), .lo = 1, .hi = INFINITY, .help = "classifier neighbours",
     .def = "10"},
    {"within-subsample", 0, NULL, CLI_SWITCH, FIELD(metrics.within_subsample),
     .help = "neighbours and ranks among the subsample only, as sklearn's trustworthiness(Y[s], X[s]) (cost "
             "O(M^2 D); wider neighbourhoods, higher recall)"},
    {"save-subsample", 0, "FILE", CLI_TEXT, FIELD(save_subsample),
     .help = "write the subsample's indices (.npy int32)"},
    {NULL}};

/* The JSON line of the scores. */
static void json_line(cli_env *env, const nle_metrics *m, const nle_metrics_opts *o, double seconds, char *line,
                      size_t cap) {
  char rec[32], tr[32], co[32], acc[32];
  cli_json_number(rec, sizeof rec, "%.10f", m->recall);
  cli_json_number(tr, sizeof tr, "%.10f", m->trustworthiness);
  cli_json_number(co, sizeof co, "%.10f", m->continuity);
  cli_json_number(acc, sizeof acc, "%.10f", m->knn_accuracy);
  char accs[48] = "";
  if (isfinite(m->knn_accuracy)) snprintf(accs, sizeof accs, ", %d-NN accuracy %.3f", o->cv_k, m->knn_accuracy);
  snprintf(line, cap,
           "{\"command\": \"metrics\", \"n\": %lld, \"subsample\": %lld, \"within_subsample\": %s, \"k\": %d, "
           "\"recall\": %s, "
           "\"trustworthiness\": %s, \"continuity\": %s, \"knn_accuracy\": %s, \"cv_folds\": %d, \"cv_k\": %d, "
           "\"seed\": %llu, \"seconds\": %.3f, \"summary\": \"trustworthiness@%d %.3f, continuity %.3f, "
           "recall %.3f%s\"}\n",
           (long long)m->n, (long long)m->subsample_n, o->within_subsample && m->subsample_n < m->n ? "true" : "false",
           m->k, rec, tr, co, acc, o->cv_folds, o->cv_k, (unsigned long long)nle_ctx_seed(env->ctx), seconds, m->k,
           m->trustworthiness, m->continuity, m->recall, accs);
}

/* --save-subsample: the subsample's indices as int32. */
static nle_status save_subsample(cli_env *env, const nle_metrics *m, const char *path) {
  int32_t *idx = malloc((size_t)(m->subsample_n ? m->subsample_n : 1) * sizeof *idx);
  if (!idx) return NLE_ERR_NOMEM;
  for (int64_t i = 0; i < m->subsample_n; i++) idx[i] = (int32_t)m->subsample_idx[i];
  nle_status s = nle_write_labels(env->ctx, path, idx, m->subsample_n);
  free(idx);
  return s;
}

/* DATA and EMBEDDING read, their shapes checked; 0, or the exit code. */
static int read_pair(cli_env *env, const char *data, const char *embedding, nle_dataset **ds, nle_matd **X) {
  nle_status s = cli_load(env, data, ds);
  if (!s) s = cli_load_embedding(env, embedding, X);
  if (s) return cli_fail(env, s);
  if ((*X)->rows != (*ds)->X->rows) {
    fprintf(stderr, "nlembed metrics: error: %s has %zu points but %s has %zu\n", data, (*ds)->X->rows, embedding,
            (*X)->rows);
    return 1;
  }
  if ((*X)->cols > (*ds)->X->cols) {
    /* scored the wrong way round, trustworthiness and continuity swap */
    fprintf(stderr,
            "nlembed metrics: error: the embedding %s has %zu columns, more than the data %s (%zu): "
            "the order is DATA EMBEDDING\n",
            embedding, (*X)->cols, data, (*ds)->X->cols);
    return 1;
  }
  return 0;
}

int cmd_metrics(int argc, char **argv) {
  cli_env env;
  if (cli_env_init(&env, "metrics", NULL)) return 1;
  metrics_settings o = {0};
  nle_metrics_opts_init(&o.metrics);
  int rc = cli_read_options(&env, argc, argv, head, rows, &o);
  if (!rc && !env.help_shown && optind != argc - 2) rc = cli_usage_error("metrics", "expected DATA and EMBEDDING");
  nle_status s = NLE_OK;
  if (!rc && o.output) s = nle_check_output_path(env.ctx, o.output);
  if (!rc && !s && o.save_subsample) s = nle_check_output(env.ctx, o.save_subsample, NLE_OUTPUT_DENSE);
  if (!rc && s) rc = cli_fail(&env, s);
  nle_dataset *ds = NULL;
  nle_matd *X = NULL;
  nle_metrics *m = NULL;
  double t = nle_time_seconds();
  bool run = !rc && !env.help_shown;
  if (run) rc = read_pair(&env, argv[optind], argv[optind + 1], &ds, &X);
  if (run && !rc) {
    t = nle_time_seconds();
    s = nle_metrics_compute(env.ctx, ds->X, X, ds->labels, &o.metrics, &m);
    t = nle_time_seconds() - t;
  }
  if (run && !rc && !s && o.save_subsample) s = save_subsample(&env, m, o.save_subsample);
  if (run && !rc && s) rc = cli_fail(&env, s);
  if (run && !rc) {
    char line[1024];
    json_line(&env, m, &o.metrics, t, line, sizeof line);
    fputs(line, stdout);
    s = o.output ? nle_write_text(env.ctx, o.output, line) : NLE_OK;
    rc = s ? cli_fail(&env, s) : cli_commit(&env); /* every output of the run, or none */
  }
  nle_metrics_free(&m);
  nle_matd_free(&X);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
