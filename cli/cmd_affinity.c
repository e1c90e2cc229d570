/* cmd_affinity.c — `nlembed affinity`: the kNN graph and an affinity matrix
 * on it (entropic by default), written as Matrix Market, with the betas. */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "Usage: nlembed affinity [options] INPUT -o OUTPUT.mtx\n"
    "\n"
    "Builds the k-nearest-neighbour graph of INPUT and an affinity matrix on it,\n"
    "written as Matrix Market. Entropic affinities (default) give every point the\n"
    "Gaussian bandwidth at which its distribution over its neighbours has the\n"
    "given perplexity (dissertation ch. 2). Prints one JSON line with the\n"
    "root-finding statistics on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE      the affinity matrix (.mtx)\n"
    "  --kind NAME            entropic (default), gaussian, binary, inverse,\n"
    "                         self-tuning\n"
    "  -p, --perplexity K     entropic: perplexity (default 30)\n"
    "  -k, --neighbors K      neighbours in the graph (default 3 x perplexity,\n"
    "                         or 15 for the other kinds)\n"
    "  --root NAME            householder (default; order-8 series step), halley,\n"
    "                         euler, newton, bisection, brent, ridder, classic\n"
    "                         (bisection on beta from 1)\n"
    "  --order NAME           mst (default), msp, density, sequential (fastest on\n"
    "                         70,000 points), random, bounds (warm-start order)\n"
    "  --kappa N              neighbours of the order's graph (default 10)\n"
    "  --no-rescale           start from the parent's beta as is, not rescaled\n"
    "                         by the ratio of the two points' distance scales\n"
    "  --tol T                |H - log K| at convergence (default 1e-10)\n"
    "  --conditional          write the conditional p(m|n) (rows sum to 1)\n"
    "                         instead of (P + P^T) / 2\n"
    "  --normalize            divide (P + P^T) / 2 by N so it sums to 1\n"
    "  --betas FILE           entropic: write the N precisions beta_n\n"
    "  --sigma S              gaussian: the width (default 1)\n"
    "  --tuning-k K           self-tuning: the neighbour giving sigma_n (default 7)\n"
    "\n" CLI_KNN_HELP "\n" CLI_COMMON_HELP;

enum { OPT_KIND = OPT_COMMAND_BASE, OPT_ROOT, OPT_ORDER, OPT_KAPPA, OPT_TOL, OPT_COND, OPT_NORM, OPT_BETAS,
       OPT_SIGMA, OPT_TUNING, OPT_NO_RESCALE };

/* A run's choices and what it made. */
typedef struct {
  nle_ea_opts eo;
  nle_affinity_opts ao;
  cli_knn_choice choice;
  const char *method, *output, *betas;
  int entropic, conditional, normalize, k;
  nle_csr *graph, *W;
  nle_ea_result *ea;
  double t_knn, t_aff;
  nle_status warn;
} affinity_run;

static void take_option(cli_env *env, int c, affinity_run *r) {
  int idx;
  switch (c) {
  case 'o': r->output = optarg; break;
  case 'p':
    env->rc = cli_real_arg("affinity", "--perplexity", optarg, 1, true, INFINITY, false, false, &r->eo.perplexity);
    break;
  case 'k':
    env->rc = cli_int_field("affinity", "-k", optarg, 1, INT_MAX, false, &r->k);
    break;
  case OPT_KIND:
    if (!strcmp(optarg, "entropic")) r->entropic = 1; /* nle_entropic_affinities, not a kernel of nle_affinity_graph */
    else if ((idx = nle_affinity_kind_parse(optarg)) < 0) env->rc = cli_usage_error("affinity", "unknown --kind \"%s\"", optarg);
    else r->entropic = 0, r->ao.kind = (nle_affinity_kind)idx;
    break;
  case OPT_ROOT:
    if ((idx = nle_root_method_parse(optarg)) < 0) env->rc = cli_usage_error("affinity", "unknown --root \"%s\"", optarg);
    else r->eo.root = (nle_root_method)idx;
    break;
  case OPT_ORDER:
    if ((idx = nle_ea_order_parse(optarg)) < 0) env->rc = cli_usage_error("affinity", "unknown --order \"%s\"", optarg);
    else r->eo.order = (nle_ea_order)idx;
    break;
  case OPT_KAPPA:
    env->rc = cli_int_field("affinity", "--kappa", optarg, 1, INT_MAX, false, &r->eo.kappa);
    break;
  case OPT_TOL:
    env->rc = cli_real_arg("affinity", "--tol", optarg, 0, true, INFINITY, false, false, &r->eo.tol);
    break;
  case OPT_COND: r->conditional = 1; break;
  case OPT_NO_RESCALE: r->eo.rescale = false; break;
  case OPT_NORM: r->normalize = 1; break;
  case OPT_BETAS: r->betas = optarg; break;
  case OPT_SIGMA:
    env->rc = cli_real_arg("affinity", "--sigma", optarg, 0, true, INFINITY, false, false, &r->ao.sigma);
    break;
  case OPT_TUNING:
    env->rc = cli_int_field("affinity", "--tuning-k", optarg, 1, INT_MAX, false, &r->ao.tuning_k);
    break;
  default: env->rc = 2; break;
  }
}

/* The kNN graph, then the affinities on it. */
static nle_status compute(cli_env *env, const nle_dataset *ds, affinity_run *r) {
  double t0 = nle_time_seconds();
  nle_status s = cli_knn(env, ds->X, r->k, &r->choice, &r->graph, &r->method);
  r->t_knn = nle_time_seconds() - t0;
  if (s) return s;
  t0 = nle_time_seconds();
  if (r->entropic) {
    s = nle_entropic_affinities(env->ctx, r->graph, &r->eo, &r->ea);
    if (s > 0) {
      r->warn = s;
      cli_note(env, "warning: %s", nle_ctx_error(env->ctx));
      s = NLE_OK;
    }
    if (!s && !r->conditional) s = nle_affinity_symmetrize(env->ctx, r->ea->P, r->normalize, &r->W);
  } else {
    s = nle_affinity_graph(env->ctx, r->graph, &r->ao, &r->W);
  }
  r->t_aff = nle_time_seconds() - t0;
  return s;
}

static void print_json(const nle_dataset *ds, const affinity_run *r) {
  char name[1200];
  cli_json_escape(ds->name, name, sizeof name);
  printf("{\"command\": \"affinity\", \"input\": \"%s\", \"n\": %zu, \"k\": %d, \"kind\": \"%s\", ", name,
         ds->X->rows, r->k, r->entropic ? "entropic" : nle_affinity_kind_name(r->ao.kind));
  if (r->entropic) {
    const nle_ea_result *ea = r->ea;
    printf("\"perplexity\": %g, \"root\": \"%s\", \"order\": \"%s\", \"mean_iterations\": %.4f, "
           "\"mean_evaluations\": %.4f, \"bisection_points\": %lld, \"degenerate_points\": %lld, "
           "\"max_error\": %.3g, \"converged\": %s, \"steps_histogram\": [",
           r->eo.perplexity, nle_root_method_name(r->eo.root), nle_ea_order_name(r->eo.order), ea->mean_iterations,
           ea->mean_evaluations, (long long)ea->bisection_points, (long long)ea->degenerate_points, ea->max_error,
           r->warn ? "false" : "true");
    for (int h = 0; h < 8; h++) printf("%s%lld", h ? ", " : "", (long long)ea->steps_histogram[h]);
    printf("], ");
  }
  printf("\"knn_method\": \"%s\", \"knn_seconds\": %.3f, \"affinity_seconds\": %.4f}\n", r->method, r->t_knn, r->t_aff);
}

int cmd_affinity(int argc, char **argv) {
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"perplexity", required_argument, 0, 'p'},
      {"neighbors", required_argument, 0, 'k'}, {"kind", required_argument, 0, OPT_KIND},
      {"root", required_argument, 0, OPT_ROOT}, {"order", required_argument, 0, OPT_ORDER},
      {"kappa", required_argument, 0, OPT_KAPPA}, {"tol", required_argument, 0, OPT_TOL},
      {"conditional", no_argument, 0, OPT_COND}, {"normalize", no_argument, 0, OPT_NORM},
      {"betas", required_argument, 0, OPT_BETAS}, {"sigma", required_argument, 0, OPT_SIGMA},
      {"tuning-k", required_argument, 0, OPT_TUNING}, {"no-rescale", no_argument, 0, OPT_NO_RESCALE}, CLI_KNN_OPTIONS, CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "affinity", help)) return 1;
  affinity_run r = {.method = "exact", .entropic = 1};
  nle_ea_opts_init(&r.eo);
  nle_affinity_opts_init(&r.ao);
  cli_knn_choice_init(&r.choice);
  env.knn = &r.choice;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:p:k:", longopts)) != -1) take_option(&env, c, &r);
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && optind != argc - 1) rc = cli_usage_error("affinity", "expected one INPUT, got %d", argc - optind);
  if (!rc && !r.output) rc = cli_usage_error("affinity", "no output file (-o FILE.mtx)");
  if (!rc && r.betas && !r.entropic) rc = cli_usage_error("affinity", "--betas goes with --kind entropic");
  if (!rc && r.conditional && !r.entropic) rc = cli_usage_error("affinity", "--conditional goes with --kind entropic");
  /* the automatic k = 3 x perplexity in double: a perplexity past what an
   * int holds is refused below by the points, not converted out of range */
  bool k_auto = r.k == 0;
  double k_wanted = k_auto ? (r.entropic ? ceil(3.0 * r.eo.perplexity) : 15) : r.k;
  r.k = k_wanted < INT_MAX ? (int)k_wanted : INT_MAX;
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, r.output, NLE_OUTPUT_MTX);
  if (!rc && !s && r.betas) s = nle_check_output(env.ctx, r.betas, NLE_OUTPUT_DENSE);
  nle_dataset *ds = NULL;
  if (!rc && !s) s = cli_load(&env, argv[optind], &ds);
  if (!rc && !s && k_wanted >= (double)ds->X->rows) {
    if (k_auto && r.entropic)
      fprintf(stderr, "nlembed affinity: error: %s: k = 3 x --perplexity %g = %g neighbours need more than %zu points "
              "(a smaller --perplexity, or -k)\n", argv[optind], r.eo.perplexity, k_wanted, ds->X->rows);
    else
      fprintf(stderr, "nlembed affinity: error: %s: -k %d neighbours need more than %zu points\n", argv[optind], r.k,
              ds->X->rows);
    rc = 1;
  }
  if (!rc && !s) s = compute(&env, ds, &r);
  if (!rc && !s) s = nle_write_csr_mtx(env.ctx, r.output, r.conditional ? r.ea->P : r.W);
  if (!rc && !s && r.betas) {
    nle_matd m = {(size_t)r.ea->n, 1, r.ea->beta};
    s = nle_write_matd(env.ctx, r.betas, &m);
  }
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    print_json(ds, &r);
    cli_note(&env, "%s affinities of %zu points on %d neighbours in %.3f s (kNN %.2f s); wrote %s",
             r.entropic ? "entropic" : nle_affinity_kind_name(r.ao.kind), ds->X->rows, r.k, r.t_aff, r.t_knn, r.output);
  }
  nle_csr_free(&r.W);
  nle_ea_result_free(&r.ea);
  nle_csr_free(&r.graph);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
