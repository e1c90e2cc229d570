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
    "NN-descent). Output by extension: .mtx (Matrix Market, values are\n"
    "squared distances), or .npy/.csv (N x k neighbour indices, 0-based).\n"
    "Prints one JSON line with the timing on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE     the graph (.mtx) or the indices (.npy, .csv, ...)\n"
    "  -k, --neighbors K     neighbours per point, 1 <= K < N (default 10)\n"
    "  --distances FILE      also write the N x k squared distances\n"
    "\n" CLI_KNN_HELP "\n" CLI_COMMON_HELP;

enum { OPT_DISTANCES = OPT_COMMAND_BASE };

static nle_status write_graph(nle_ctx *ctx, const char *path, const nle_csr *g, int k, int distances) {
  size_t len = strlen(path);
  if (!distances && len >= 4 && !strcmp(path + len - 4, ".mtx")) return nle_write_csr_mtx(ctx, path, g);
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
  const char *output = NULL, *dist_out = NULL, *method = "exact";
  long long v;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:k:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'k':
      if (cli_parse_int(optarg, 1, 1 << 20, &v)) o.k = (int)v;
      else env.rc = cli_usage_error("knn", "-k takes a positive integer, not \"%s\"", optarg);
      break;
    case OPT_DISTANCES: dist_out = optarg; break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && optind != argc - 1) rc = cli_usage_error("knn", "expected one INPUT, got %d", argc - optind);
  if (!rc && !output) rc = cli_usage_error("knn", "no output file (-o FILE)");
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_DENSE | NLE_OUTPUT_MTX);
  if (!rc && !s && dist_out) s = nle_check_output(env.ctx, dist_out, NLE_OUTPUT_DENSE);
  nle_dataset *ds = NULL;
  nle_csr *g = NULL;
  double t = 0;
  if (!rc && !s) s = cli_load(&env, argv[optind], &ds);
  if (!rc && !s) {
    double t0 = nle_time_seconds();
    s = cli_knn(&env, ds->X, o.k, &choice, &g, &method);
    t = nle_time_seconds() - t0;
  }
  if (!rc && !s) s = write_graph(env.ctx, output, g, o.k, 0);
  if (!rc && !s && dist_out) s = write_graph(env.ctx, dist_out, g, o.k, 1);
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    char name[1200];
    cli_json_escape(ds->name, name, sizeof name);
    printf("{\"command\": \"knn\", \"input\": \"%s\", \"n\": %zu, \"dim\": %zu, \"k\": %d, \"method\": \"%s\", "
           "\"threads\": %d, \"seconds\": %.3f}\n",
           name, ds->X->rows, ds->X->cols, o.k, method, nle_ctx_threads(env.ctx), t);
    cli_note(&env, "%s %d-NN of %zu x %zu in %.2f s; wrote %s", method, o.k, ds->X->rows, ds->X->cols, t, output);
  }
  nle_csr_free(&g);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
