/* cmd_kem.c — `nlembed kem`: kernel eigenmaps (M. Brand, IJCAI 2003; seed
 * 004) over nle_kem_fit: the embedding, the continuous map G(x) and its
 * inverse kept with --save-model for `nlembed transform`. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "Usage: nlembed kem [options] INPUT -o OUTPUT\n"
    "\n"
    "Kernel eigenmaps (Brand 2003, docs/kem.md): the Laplacian-eigenmap problem of a\n"
    "kNN graph W (eq. 1) restricted to linear maps of a kernel basis z(x) (sec. 2,\n"
    "eq. 8): K Gaussian kernels at random data points, each contributing its local\n"
    "homogeneous coordinate [K_k (x - mu_k); 1] times its posterior (eqs. 14-15).\n"
    "The small pencil (Z W Z^T, Z D Z^T) gives a continuous map G(x) (eqs. 17-18)\n"
    "of the whole space and an approximate inverse G+(y) (eq. 19).\n"
    "Writes the N x d embedding (.npy float64, or text) and prints one JSON line\n"
    "on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE    the embedding (.npy, .csv, .tsv, .txt)\n"
    "  -d, --dim N          embedding dimension (default 2)\n"
    "  -k, --neighbors K    neighbours of the graph W (default 12, sec. 4)\n"
    "  --weights NAME       inverse (default: 1/|x_i - x_j|, sec. 3 and footnote 2),\n"
    "                       gaussian (the heat kernel exp(-|x_i - x_j|^2 / t) of\n"
    "                       LPP), binary; W is scaled to a largest entry of 1\n"
    "  --heat-t T           gaussian weights' t (default 2 s^2, s the median\n"
    "                       distance to the k-th neighbour)\n"
    "  --symmetrize RULE    average (default), union, mutual\n"
    "  --plus-identity      W + I (sec. 4: \"more isometric\"), D from W + I\n"
    "  --kernels K          kernels at random data points (default min(64, N))\n"
    "  --sigma S            their width (default: half the median distance from a\n"
    "                       centre to the nearest other centre)\n"
    "  --local-dims Q       K_k: the Q leading local principal directions (sec. 6);\n"
    "                       default D when D <= 10, else 10; 0: posteriors only\n"
    "  --local-points L     points of each local PCA (default max(k, 3 Q))\n"
    "  --truncate T         posteriors below T dropped (default 1e-8; 0: none)\n"
    "  --variant NAME       reweighted (default, eq. 18), raw (eq. 8), affine ([Z; 1]),\n"
    "                       stochastic (eq. 12) (sec. 2.1)\n"
    "  --lpp                Z = X: Locality Preserving Projections (sec. 4; variant\n"
    "                       default raw; affine is Brand's affine upgrade)\n"
    "  --inverse-steps N    Gauss-Newton steps refining G+(y) (default 5)\n"
    "  --inverse-width W    the inverse's kernel width, in sigma (default 0.25)\n"
    "  --save-model FILE    also write the maps for `nlembed transform` (G(x), and\n"
    "                       G+(y) with --inverse)\n"
    "\n" CLI_COMMON_HELP;

enum {
  OPT_WEIGHTS_K = OPT_COMMAND_BASE, OPT_HEAT_T, OPT_SYMMETRIZE_K, OPT_PLUS_IDENTITY, OPT_KERNELS, OPT_SIGMA_K,
  OPT_LOCAL_DIMS, OPT_LOCAL_POINTS, OPT_TRUNCATE, OPT_VARIANT, OPT_LPP, OPT_INV_STEPS, OPT_INV_WIDTH, OPT_SAVE_MODEL_K
};

static void print_number(const char *key, double v) {
  char buf[64];
  cli_json_number(buf, sizeof buf, "%.10g", v);
  printf(", \"%s\": %s", key, buf);
}

int cmd_kem(int argc, char **argv) {
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"dim", required_argument, 0, 'd'},
      {"neighbors", required_argument, 0, 'k'}, {"weights", required_argument, 0, OPT_WEIGHTS_K},
      {"heat-t", required_argument, 0, OPT_HEAT_T}, {"symmetrize", required_argument, 0, OPT_SYMMETRIZE_K},
      {"plus-identity", no_argument, 0, OPT_PLUS_IDENTITY}, {"kernels", required_argument, 0, OPT_KERNELS},
      {"sigma", required_argument, 0, OPT_SIGMA_K}, {"local-dims", required_argument, 0, OPT_LOCAL_DIMS},
      {"local-points", required_argument, 0, OPT_LOCAL_POINTS}, {"truncate", required_argument, 0, OPT_TRUNCATE},
      {"variant", required_argument, 0, OPT_VARIANT}, {"lpp", no_argument, 0, OPT_LPP},
      {"inverse-steps", required_argument, 0, OPT_INV_STEPS}, {"inverse-width", required_argument, 0, OPT_INV_WIDTH},
      {"save-model", required_argument, 0, OPT_SAVE_MODEL_K}, CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "kem", help)) return 1;
  nle_kem_opts o;
  nle_kem_opts_init(&o);
  const char *output = NULL, *save_model = NULL;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:d:k:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case 'd':
      env.rc = cli_int_field("kem", "-d", optarg, 1, INT_MAX, false, &o.dim);
      break;
    case 'k':
      env.rc = cli_int_field("kem", "-k", optarg, 1, INT_MAX, false, &o.k);
      break;
    case OPT_WEIGHTS_K: {
      int w = nle_affinity_kind_parse(optarg);
      if (w == NLE_AFF_INVERSE || w == NLE_AFF_GAUSSIAN || w == NLE_AFF_BINARY) o.weights = (nle_affinity_kind)w;
      else env.rc = cli_usage_error("kem", "--weights takes inverse, gaussian or binary, not \"%s\"", optarg);
      break;
    }
    case OPT_HEAT_T:
      env.rc = cli_real_arg("kem", "--heat-t", optarg, 0, true, INFINITY, false, false, &o.heat_t);
      break;
    case OPT_SYMMETRIZE_K: {
      int r = nle_symmetrize_parse(optarg);
      if (r >= 0) o.symmetrize = (nle_symmetrize_rule)r;
      else env.rc = cli_usage_error("kem", "--symmetrize takes average, union or mutual, not \"%s\"", optarg);
      break;
    }
    case OPT_PLUS_IDENTITY: o.plus_identity = true; break;
    case OPT_KERNELS:
      env.rc = cli_int_field("kem", "--kernels", optarg, 1, INT_MAX, false, &o.kernels);
      break;
    case OPT_SIGMA_K:
      env.rc = cli_real_arg("kem", "--sigma", optarg, 0, true, INFINITY, false, false, &o.sigma);
      break;
    case OPT_LOCAL_DIMS:
      env.rc = cli_int_field("kem", "--local-dims", optarg, 0, INT_MAX, false, &o.local_dims);
      break;
    case OPT_LOCAL_POINTS:
      env.rc = cli_int_field("kem", "--local-points", optarg, 1, INT_MAX, false, &o.local_points);
      break;
    case OPT_TRUNCATE:
      /* below 0.01: the map's derivative leaves out the renormalisation
       * after the cut, an error of the order of truncate (kem_map.c) */
      env.rc = cli_real_arg("kem", "--truncate", optarg, 0, false, 1e-2, true, false, &o.truncate);
      break;
    case OPT_VARIANT: {
      int r = nle_kem_variant_parse(optarg);
      if (r >= 0) o.variant = (nle_kem_variant)r;
      else env.rc = cli_usage_error("kem", "--variant takes raw, affine, reweighted or stochastic, not \"%s\"", optarg);
      break;
    }
    case OPT_LPP: o.lpp = true; break;
    case OPT_INV_STEPS:
      env.rc = cli_int_field("kem", "--inverse-steps", optarg, 0, INT_MAX, false, &o.inverse_steps);
      break;
    case OPT_INV_WIDTH:
      env.rc = cli_real_arg("kem", "--inverse-width", optarg, 0, true, INFINITY, false, false, &o.inverse_width);
      break;
    case OPT_SAVE_MODEL_K: save_model = optarg; break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && argc - optind != 1) rc = cli_usage_error("kem", "expected one INPUT, got %d", argc - optind);
  if (!rc && !output) rc = cli_usage_error("kem", "no output file (-o FILE)");
  o.keep_model = save_model != NULL;
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_DENSE);
  if (!rc && !s && save_model) s = nle_check_output(env.ctx, save_model, 0);
  nle_dataset *ds = NULL;
  double t_read = nle_time_seconds();
  if (!rc && !s) s = cli_load(&env, argv[optind], &ds);
  t_read = nle_time_seconds() - t_read;
  nle_kem_result *r = NULL;
  if (!rc && !s) s = nle_kem_fit(env.ctx, ds->X, &o, &r);
  if (!rc && !s) s = nle_write_matd(env.ctx, output, r->X);
  if (!rc && !s && save_model) s = nle_kem_model_save(env.ctx, r->model, save_model);
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    const nle_kem_opts *ro = &r->resolved;
    char name[1200];
    cli_json_escape(ds->name, name, sizeof name);
    printf("{\"command\": \"kem\", \"input\": \"%s\", \"n\": %zu, \"dim\": %d, \"read_seconds\": %.3f, "
           "\"seconds\": %.3f, \"knn_seconds\": %.3f, \"basis_seconds\": %.3f, \"pencil_seconds\": %.3f, "
           "\"eigen_seconds\": %.3f, \"inverse_seconds\": %.3f, \"variant\": \"%s\", \"lpp\": %s, \"k\": %d, "
           "\"weights\": \"%s\", \"plus_identity\": %s, \"kernels\": %d, \"local_dims\": %d",
           name, r->n, ro->dim, t_read, r->total_seconds, r->knn_seconds, r->basis_seconds, r->pencil_seconds,
           r->eigen_seconds, r->inverse_seconds, nle_kem_variant_name(ro->variant), ro->lpp ? "true" : "false", ro->k,
           nle_affinity_kind_name(ro->weights), ro->plus_identity ? "true" : "false", ro->lpp ? 0 : ro->kernels,
           ro->lpp ? 0 : ro->local_dims);
    if (!ro->lpp) print_number("sigma", ro->sigma);
    if (ro->weights == NLE_AFF_GAUSSIAN) print_number("heat_t", ro->heat_t);
    printf(", \"pencil_order\": %zu, \"pencil_rank\": %zu, \"pencil_singular\": %s", r->pencil_order, r->pencil_rank,
           r->pencil_singular ? "true" : "false");
    print_number("pencil_rcond", r->pencil_rcond);
    print_number("distortion", r->distortion);
    if (!isnan(r->denominator_spread)) print_number("denominator_spread", r->denominator_spread);
    printf(", \"components\": %d, \"eigenvalues\": [", r->components);
    for (int i = 0; i < r->n_eigenvalues; i++) printf("%s%.12g", i ? ", " : "", r->eigenvalues[i]);
    printf("]}\n");
    cli_note(&env, "kernel eigenmap (%s) of %zu points in %.2f s: distortion %.6g%s; wrote %s",
             nle_kem_variant_name(ro->variant), r->n, r->total_seconds, r->distortion,
             r->pencil_singular ? " (singular pencil, solved in its range)" : "", output);
  }
  nle_kem_result_free(&r);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
