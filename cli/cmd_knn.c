/* cmd_knn.c — `nlembed knn`: the k-nearest-neighbour graph of a dataset. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "Usage: nlembed knn [options] INPUT -o OUTPUT\n"
    "\n"
    "The k nearest neighbours of every point (itself excluded): exact (blocked\n"
    "GEMM distances, certified) or approximate (random-projection forest +\n"
    "NN-descent). Sparse input (.npz, .h5ad, Matrix Market coordinates, ...)\n"
    "is searched as it is, never densified. Output by extension: .mtx (Matrix\n"
    "Market, values are squared distances: 2 (1 - cos) under --metric cosine),\n"
    "or .npy/.csv (N x k neighbour indices, 0-based). Prints one JSON line with\n"
    "the timing on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE     the graph (.mtx) or the indices (.npy, .csv, ...)\n"
    "  -k, --neighbors K     neighbours per point, 1 <= K < N (default 10)\n"
    "  --distances FILE      also write the N x k squared distances\n"
    "  --metric NAME         euclidean (default), cosine, correlation (Pearson's,\n"
    "                        rows centred), or precomputed (the input is N x N\n"
    "                        distances, or a sparse graph of distances)\n"
    "\n" CLI_KNN_HELP "\n" CLI_COMMON_HELP;

enum { OPT_DISTANCES = OPT_COMMAND_BASE, OPT_METRIC };

static bool is_mtx(const char *path) {
  size_t len = strlen(path);
  return len >= 4 && !strcmp(path + len - 4, ".mtx");
}

/* Entries in every row of g, or -1 when rows differ (a sparse graph of
 * precomputed distances keeps each row's own), with *row the first that
 * differs. */
static int row_length(const nle_csr *g, int64_t *row) {
  int len = g->rows ? (int)(g->rowptr[1] - g->rowptr[0]) : 0;
  for (int64_t i = 0; i < g->rows; i++)
    if (g->rowptr[i + 1] - g->rowptr[i] != len) {
      *row = i;
      return -1;
    }
  return len;
}

static nle_status write_graph(nle_ctx *ctx, const char *path, const nle_csr *g, int k, int distances) {
  if (!distances && is_mtx(path)) return nle_write_csr_mtx(ctx, path, g);
  if (distances) {
    nle_matf m = {(size_t)g->rows, (size_t)k, g->val};
    return nle_write_matf(ctx, path, &m);
  }
  return nle_write_mati32(ctx, path, g->colind, g->rows, k);
}

int cmd_knn(int argc, char **argv) {
  static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                           {"neighbors", required_argument, 0, 'k'},
                                           {"distances", required_argument, 0, OPT_DISTANCES},
                                           {"metric", required_argument, 0, OPT_METRIC},
                                           CLI_KNN_OPTIONS,
                                           CLI_COMMON_OPTIONS,
                                           {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "knn", help)) return 1;
  nle_knn_opts o;
  nle_knn_opts_init(&o);
  cli_knn_choice choice;
  cli_knn_choice_init(&choice);
  env.knn = &choice;
  const char *output = NULL, *dist_out = NULL, *method = "exact", *metric_name = NULL;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:k:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'k':
      env.rc = cli_int_field("knn", "-k", optarg, 1, INT_MAX, false, &o.k);
      break;
    case OPT_DISTANCES: dist_out = optarg; break;
    case OPT_METRIC: metric_name = optarg; break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  nle_metric metric = NLE_METRIC_EUCLIDEAN;
  if (!rc) rc = cli_metric_parse("knn", metric_name, false, &metric);
  if (!rc && optind != argc - 1) rc = cli_usage_error("knn", "expected one INPUT, got %d", argc - optind);
  if (!rc && !output) rc = cli_usage_error("knn", "no output file (-o FILE)");
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_DENSE | NLE_OUTPUT_MTX);
  if (!rc && !s && dist_out) s = nle_check_output(env.ctx, dist_out, NLE_OUTPUT_DENSE);
  nle_dataset *ds = NULL;
  nle_csr *g = NULL;
  double t = 0;
  env.read.sparse_ok = true; /* sparse rows are searched as they are */
  if (!rc && !s) s = cli_load(&env, argv[optind], &ds);
  if (!rc && !s && !metric_name && ds->X && nle_looks_like_distances(ds->X)) {
    fprintf(stderr,
            "nlembed knn: error: %s is a %zu x %zu symmetric matrix with a zero diagonal: give --metric precomputed "
            "to use it as distances, or --metric euclidean to search its rows as points\n",
            argv[optind], ds->X->rows, ds->X->cols);
    rc = 1;
  }
  if (!rc && !s) {
    double t0 = nle_time_seconds();
    nle_knn_method ran = NLE_KNN_AUTO;
    s = nle_metric_graph(env.ctx, metric, ds->X, ds->sparse, o.k, choice.method, &choice.approx, &g, &ran);
    method = metric == NLE_METRIC_PRECOMPUTED ? "precomputed" : nle_knn_method_name(ran);
    t = nle_time_seconds() - t0;
  }
  int per_row = o.k;
  if (!rc && !s) {
    int64_t row = 0;
    per_row = row_length(g, &row);
    if (per_row < 0 && (dist_out || !is_mtx(output))) {
      fprintf(stderr, "nlembed knn: error: %s: row %lld of the distance graph has %lld neighbours, row 1 %lld: "
              "rows of different lengths go to a .mtx output only\n", argv[optind], (long long)row + 1,
              (long long)(g->rowptr[row + 1] - g->rowptr[row]), (long long)(g->rowptr[1] - g->rowptr[0]));
      rc = 1;
    }
  }
  if (!rc && !s) s = write_graph(env.ctx, output, g, per_row, 0);
  if (!rc && !s && dist_out) s = write_graph(env.ctx, dist_out, g, per_row, 1);
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    char name[1200];
    cli_json_escape(ds->name, name, sizeof name);
    size_t n = ds->X ? ds->X->rows : (size_t)ds->sparse->rows, dim = ds->X ? ds->X->cols : (size_t)ds->sparse->cols;
    printf("{\"command\": \"knn\", \"input\": \"%s\", \"n\": %zu, \"dim\": %zu, \"sparse\": %s, \"nnz\": %lld, "
           "\"k\": %d, \"metric\": \"%s\", \"method\": \"%s\", \"threads\": %d, \"seconds\": %.3f}\n",
           name, n, dim, ds->sparse ? "true" : "false", ds->sparse ? (long long)ds->sparse->nnz : (long long)(n * dim),
           o.k, nle_metric_name(metric), method, nle_ctx_threads(env.ctx), t);
    cli_note(&env, "%s %d-NN (%s) of %zu x %zu%s in %.2f s; wrote %s", method, o.k, nle_metric_name(metric), n, dim,
             ds->sparse ? " sparse" : "", t, output);
  }
  nle_csr_free(&g);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
