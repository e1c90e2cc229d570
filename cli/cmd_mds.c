/* cmd_mds.c — the distance and kernel methods, one command each as the
 * spectral methods have: `nlembed cmds|mds|sammon|nmds|lmds` (the MDS
 * family over nle_mds), `nlembed kpca` (nle_kpca), `nlembed lda|klda`
 * (nle_lda, nle_klda). */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { FAMILY_MDS, FAMILY_KPCA, FAMILY_LDA, FAMILY_KLDA } family;

typedef struct {
  const char *name;
  family fam;
  nle_mds_method method;
  const char *about;
  const char *options; /* the command's own lines of --help */
} mds_command;

#define MDS_INPUT_HELP                                                                  \
  "  --distances FILE     a dissimilarity matrix instead of INPUT: N x N (any dense\n"  \
  "                       input: .npy, text, .npz, .h5, .mat, ...), symmetric,\n"     \
  "                       zero diagonal, finite, >= 0\n"                               \
  "  --metric NAME        euclidean (default), cosine or correlation (INPUT's rows\n"  \
  "                       made unit, correlation centred first), or precomputed\n"    \
  "                       (INPUT is the dissimilarity matrix, as --distances); a\n"   \
  "                       square symmetric INPUT with a zero diagonal needs it\n"     \
  "                       named\n"
#define SMACOF_HELP                                                                     \
  "  --starts N           runs: the first from classical MDS, the others from\n"      \
  "                       random configurations (seeded); least stress kept (4)\n"     \
  "  --max-iter N         iterations per run (300)\n"                                   \
  "  --tol T              stop when the stress falls by less than T of itself in\n"    \
  "                       one iteration (1e-6)\n"                                        \
  "  --init FILE          the N x d start instead (one run)\n"
#define KERNEL_HELP                                                                     \
  "  --kernel NAME        gaussian (default: exp(-gamma |x - y|^2)), polynomial\n"     \
  "                       ((gamma x.y + coef0)^degree), linear (x.y)\n"                \
  "  --gamma G            default: gaussian 1 / (2 s^2), s^2 the median squared\n"   \
  "                       distance of 10,000 random pairs; polynomial 1 / mean|x|^2\n" \
  "  --degree N           polynomial degree (3)\n"                                      \
  "  --coef0 C            polynomial offset (1)\n"
#define SAVE_HELP                                                                       \
  "  --save-model FILE    also write the out-of-sample map for `nlembed transform`\n"

static const mds_command commands[] = {
    {"cmds", FAMILY_MDS, NLE_MDS_CLASSICAL,
     "Classical MDS (lecture slides 002, \"Classic Metric MDS\"): B = -1/2 J M J of the\n"
     "squared dissimilarities M, its top eigenvectors scaled by sqrt(lambda). Of\n"
     "points: their PCA scores. Negative eigenvalues (non-Euclidean input) are\n"
     "counted and their mass reported, then dropped.\n",
     MDS_INPUT_HELP SAVE_HELP "                       (points only: the projection, equal to landmark\n"
                              "                       MDS's triangulation of every point)\n"},
    {"mds", FAMILY_MDS, NLE_MDS_METRIC,
     "Metric MDS (slides \"More General Metric MDS\") by SMACOF: the raw stress\n"
     "sum_{i<j} w_ij (delta_ij - d_ij)^2 lowered monotonely by the Guttman transform\n"
     "(weighted: conjugate gradients on V X = B(Z) Z). Reports Kruskal's stress-1\n"
     "and the slides' normalised stress.\n",
     MDS_INPUT_HELP SMACOF_HELP "  --weights FILE       N x N weights w_ij (symmetric, >= 0)\n"},
    {"sammon", FAMILY_MDS, NLE_MDS_SAMMON,
     "Sammon mapping (slides \"More General Metric MDS\"): Sammon's stress\n"
     "sum (delta - d)^2 / delta / sum delta by SMACOF with weights 1 / delta.\n"
     "Zero dissimilarities between distinct points (duplicates) are refused.\n",
     MDS_INPUT_HELP SMACOF_HELP},
    {"nmds", FAMILY_MDS, NLE_MDS_NONMETRIC,
     "Non-metric MDS (slides \"Non-Metric MDS\"): disparities by monotone (PAV)\n"
     "regression on the order of the dissimilarities, alternating with a Guttman\n"
     "step; Kruskal's stress-1 against the disparities.\n",
     MDS_INPUT_HELP SMACOF_HELP
     "  --ties RULE          primary (default: tied dissimilarities may get different\n"
     "                       disparities), secondary (equal disparities)\n"},
    {"lmds", FAMILY_MDS, NLE_MDS_LANDMARK,
     "Landmark MDS (de Silva and Tenenbaum 2004): classical MDS of L random\n"
     "landmarks, every point placed by distance-based triangulation; O(L N D).\n",
     MDS_INPUT_HELP "  --landmarks L        landmarks (default min(N, 1000))\n" SAVE_HELP},
    {"kpca", FAMILY_KPCA, NLE_MDS_CLASSICAL,
     "Kernel PCA (dissertation sec. 4.6.4, eq. 4.18): the top eigenvectors of the\n"
     "centred kernel matrix, scaled by sqrt(lambda); the centring is applied\n"
     "implicitly (the dense centred N x N matrix is never formed).\n",
     KERNEL_HELP
     "  --neighbors K        a sparse Gaussian kernel on the kNN graph (O(N k)\n"
     "                       memory); default 0: dense\n"
     "  --kernel-matrix FILE a precomputed N x N kernel matrix instead of INPUT\n" SAVE_HELP},
    {"lda", FAMILY_LDA, NLE_MDS_CLASSICAL,
     "Linear discriminant analysis (dissertation eqs. 4.14-4.17): the directions of\n"
     "S_b v = lambda S_w v; at most C - 1 of them. The output is scaled so that the\n"
     "within-class covariance is the identity: scikit-learn's transform (solver\n"
     "\"svd\") up to signs, in the range of the data (constant or collinear\n"
     "features need nothing). Labels: any integers or names; the classes are the\n"
     "distinct values.\n",
     "  --tol T              singular values of the scaled within-class deviations\n"
     "                       at or below T are their null space (default 1e-4)\n"
     "  --ridge R            instead: T + R I by Cholesky, T the total scatter (R = 0:\n"
     "                       a singular T is an error)\n" SAVE_HELP},
    {"klda", FAMILY_KLDA, NLE_MDS_CLASSICAL,
     "Kernel LDA (Baudat and Anouar 2000; eqs. 4.16-4.17 with a kernel): H p =\n"
     "lambda (K^2 + ridge I) p, K the centred kernel; O(N^3) time, O(N^2) memory.\n",
     KERNEL_HELP "  --ridge R            added to K^2's diagonal (default 1e-3 of its mean diagonal)\n" SAVE_HELP},
};

static const char *help_fmt =
    "Usage: nlembed %s [options] INPUT -o OUTPUT\n"
    "%s"
    "\n"
    "%s\n"
    "Writes the N x d embedding (.npy float64, or text) and prints one JSON line\n"
    "on stdout.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE    the embedding (.npy, .csv, .tsv, .txt)\n"
    "  -d, --dim N          embedding dimension (default 2; LDA, kernel LDA:\n"
    "                       min(2, C - 1), C the classes)\n"
    "%s"
    "%s"
    "\n";

enum {
  OPT_DISTANCES_M = OPT_COMMAND_BASE, OPT_STARTS, OPT_MAX_ITER, OPT_TOL_M, OPT_INIT, OPT_WEIGHTS, OPT_TIES,
  OPT_LANDMARKS_M, OPT_KERNEL, OPT_GAMMA, OPT_DEGREE, OPT_COEF0, OPT_NEIGHBORS_K, OPT_KERNEL_MATRIX, OPT_RIDGE,
  OPT_SAVE_MODEL_M, OPT_METRIC_M
};

/* An option this command does not take. */
static bool takes(const mds_command *mc, int c) {
  bool mds = mc->fam == FAMILY_MDS, smacof = mds && mc->method != NLE_MDS_CLASSICAL && mc->method != NLE_MDS_LANDMARK;
  bool kernel = mc->fam == FAMILY_KPCA || mc->fam == FAMILY_KLDA;
  switch (c) {
  case OPT_DISTANCES_M: case OPT_METRIC_M: return mds;
  case OPT_STARTS: case OPT_MAX_ITER: case OPT_INIT: return smacof;
  case OPT_TOL_M: return smacof || mc->fam == FAMILY_LDA;
  case OPT_WEIGHTS: return mds && mc->method == NLE_MDS_METRIC;
  case OPT_TIES: return mds && mc->method == NLE_MDS_NONMETRIC;
  case OPT_LANDMARKS_M: return mds && mc->method == NLE_MDS_LANDMARK;
  case OPT_KERNEL: case OPT_GAMMA: case OPT_DEGREE: case OPT_COEF0: return kernel;
  case OPT_NEIGHBORS_K: case OPT_KERNEL_MATRIX: return mc->fam == FAMILY_KPCA;
  case OPT_RIDGE: return mc->fam == FAMILY_LDA || mc->fam == FAMILY_KLDA;
  case OPT_SAVE_MODEL_M: return !smacof;
  default: return true;
  }
}

static void print_doubles(const char *key, const double *v, int n) {
  printf(", \"%s\": [", key);
  for (int i = 0; i < n; i++) printf("%s%.12g", i ? ", " : "", v[i]);
  printf("]");
}

static void print_number(const char *key, double v) {
  char buf[64];
  cli_json_number(buf, sizeof buf, "%.10g", v);
  printf(", \"%s\": %s", key, buf);
}

bool cmd_mds_has(const char *command) {
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(command, commands[i].name)) return true;
  return false;
}

int cmd_mds(int argc, char **argv, const char *command) {
  const mds_command *mc = NULL;
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(command, commands[i].name)) mc = &commands[i];
  if (!mc) return 2;
  char help[8192];
  const char *alt = mc->fam == FAMILY_MDS ? "       nlembed %s [options] --distances D.npy -o OUTPUT\n"
                    : mc->fam == FAMILY_KPCA ? "       nlembed %s [options] --kernel-matrix K.npy -o OUTPUT\n" : "";
  char alt_line[256];
  snprintf(alt_line, sizeof alt_line, alt, command);
  snprintf(help, sizeof help, help_fmt, command, alt_line, mc->about, mc->options,
           mc->fam == FAMILY_LDA || mc->fam == FAMILY_KLDA ? "  (labels: the dataset's, or --labels SOURCE)\n" : "");
  strncat(help, CLI_COMMON_HELP, sizeof help - strlen(help) - 1);
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"dim", required_argument, 0, 'd'},
      {"distances", required_argument, 0, OPT_DISTANCES_M}, {"metric", required_argument, 0, OPT_METRIC_M}, {"starts", required_argument, 0, OPT_STARTS},
      {"max-iter", required_argument, 0, OPT_MAX_ITER}, {"tol", required_argument, 0, OPT_TOL_M},
      {"init", required_argument, 0, OPT_INIT}, {"weights", required_argument, 0, OPT_WEIGHTS},
      {"ties", required_argument, 0, OPT_TIES}, {"landmarks", required_argument, 0, OPT_LANDMARKS_M},
      {"kernel", required_argument, 0, OPT_KERNEL}, {"gamma", required_argument, 0, OPT_GAMMA},
      {"degree", required_argument, 0, OPT_DEGREE}, {"coef0", required_argument, 0, OPT_COEF0},
      {"neighbors", required_argument, 0, OPT_NEIGHBORS_K}, {"kernel-matrix", required_argument, 0, OPT_KERNEL_MATRIX},
      {"ridge", required_argument, 0, OPT_RIDGE}, {"save-model", required_argument, 0, OPT_SAVE_MODEL_M},
      CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, command, help)) return 1;
  nle_mds_opts mo;
  nle_mds_opts_init(&mo);
  nle_kpca_opts ko;
  nle_kpca_opts_init(&ko);
  nle_lda_opts lo;
  nle_lda_opts_init(&lo);
  const char *output = NULL, *distances = NULL, *init = NULL, *weights = NULL, *kernel_matrix = NULL,
             *save_model = NULL, *metric_name = NULL;
  int dim = NLE_AUTO, c;
  double x;
  while ((c = cli_next_option(&env, argc, argv, "o:d:", longopts)) != -1) {
    if (!takes(mc, c)) {
      for (const struct option *lo2 = longopts; lo2->name; lo2++)
        if (lo2->val == c) env.rc = cli_usage_error(command, "--%s is not an option of nlembed %s", lo2->name, command);
      continue;
    }
    switch (c) {
    case 'o': output = optarg; break;
    case 'd':
      env.rc = cli_int_field(command, "-d", optarg, 1, INT_MAX, false, &dim);
      break;
    case OPT_DISTANCES_M: distances = optarg; break;
    case OPT_METRIC_M: metric_name = optarg; break;
    case OPT_INIT: init = optarg; break;
    case OPT_WEIGHTS: weights = optarg; break;
    case OPT_KERNEL_MATRIX: kernel_matrix = optarg; break;
    case OPT_SAVE_MODEL_M: save_model = optarg; break;
    case OPT_STARTS:
      env.rc = cli_int_field(command, "--starts", optarg, 1, INT_MAX, false, &mo.starts);
      break;
    case OPT_MAX_ITER:
      env.rc = cli_int_field(command, "--max-iter", optarg, 1, INT_MAX, false, &mo.max_iter);
      break;
    case OPT_TOL_M:
      env.rc = cli_real_arg(command, "--tol", optarg, 0, false, 1, true, false, &mo.tol);
      lo.tol = mo.tol; /* LDA's rank tolerance shares the option */
      break;
    case OPT_TIES:
      if (nle_mds_ties_parse(optarg) >= 0) mo.ties = (nle_mds_ties)nle_mds_ties_parse(optarg);
      else env.rc = cli_usage_error(command, "--ties takes primary or secondary, not \"%s\"", optarg);
      break;
    case OPT_LANDMARKS_M:
      env.rc = cli_int_field(command, "--landmarks", optarg, 2, INT_MAX, false, &mo.landmarks);
      break;
    case OPT_KERNEL: {
      int k = nle_pdkernel_parse(optarg);
      if (k >= 0 && k != NLE_PDK_PRECOMPUTED) ko.kernel.kind = lo.kernel.kind = (nle_pdkernel_kind)k;
      else env.rc = cli_usage_error(command, "--kernel takes gaussian, polynomial or linear, not \"%s\"", optarg);
      break;
    }
    case OPT_GAMMA:
      if (!(env.rc = cli_real_arg(command, "--gamma", optarg, 0, true, INFINITY, false, false, &x)))
        ko.kernel.gamma = lo.kernel.gamma = x;
      break;
    case OPT_DEGREE:
      if (!(env.rc = cli_int_field(command, "--degree", optarg, 1, INT_MAX, false, &ko.kernel.degree)))
        lo.kernel.degree = ko.kernel.degree;
      break;
    case OPT_COEF0:
      if (!(env.rc = cli_real_arg(command, "--coef0", optarg, -INFINITY, false, INFINITY, false, false, &x)))
        ko.kernel.coef0 = lo.kernel.coef0 = x;
      break;
    case OPT_NEIGHBORS_K:
      env.rc = cli_int_field(command, "--neighbors", optarg, 0, INT_MAX, false, &ko.kernel.neighbors);
      break;
    case OPT_RIDGE:
      env.rc = cli_real_arg(command, "--ridge", optarg, 0, false, INFINITY, false, false, &lo.ridge);
      break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc, n_inputs = argc - optind;
  nle_metric metric = NLE_METRIC_EUCLIDEAN;
  if (!rc) rc = cli_metric_parse(command, metric_name, false, &metric);
  if (!rc && metric_name && distances) rc = cli_usage_error(command, "give one of --metric and --distances");
  if (!rc && save_model && (metric == NLE_METRIC_COSINE || metric == NLE_METRIC_CORRELATION))
    rc = cli_usage_error(command, "--save-model with --metric %s: the map takes Euclidean points", metric_name);
  if (!rc && metric == NLE_METRIC_PRECOMPUTED && n_inputs == 1) { /* INPUT is the matrix */
    distances = argv[optind++];
    n_inputs = 0;
  }
  const char *matrix = distances ? distances : kernel_matrix;
  if (!rc && !((n_inputs == 1 && !matrix) || (n_inputs == 0 && matrix)))
    rc = matrix ? cli_usage_error(command, "expected no INPUT with --%s, got %d", distances ? "distances" : "kernel-matrix",
                                  n_inputs)
                : cli_usage_error(command, "expected one INPUT, got %d", n_inputs);
  if (!rc && !output) rc = cli_usage_error(command, "no output file (-o FILE)");
  if (!rc && save_model && matrix)
    rc = cli_usage_error(command, "--save-model needs the INPUT points (new points are mapped from their coordinates)");
  if (!rc && kernel_matrix) ko.kernel.kind = NLE_PDK_PRECOMPUTED;
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_DENSE);
  if (!rc && !s && save_model) s = nle_check_output(env.ctx, save_model, 0);
  nle_dataset *ds = NULL;
  nle_matd *M = NULL, *W = NULL, *X0 = NULL;
  double t_read = nle_time_seconds();
  if (!rc && !s && n_inputs) s = cli_load(&env, argv[optind], &ds);
  const nle_matf *points = ds ? ds->X : NULL;
  nle_matf *unit_rows = NULL;
  nle_csr *no_graph = NULL;
  if (!rc && !s && ds && mc->fam == FAMILY_MDS)
    rc = cli_metric_input(&env, argv[optind], metric_name, metric, ds, 0, &points, &unit_rows, &no_graph, NULL);
  if (!rc && !s && matrix) s = cli_load_embedding(&env, matrix, &M);
  if (!rc && !s && weights) s = cli_load_embedding(&env, weights, &W);
  if (!rc && !s && init) s = cli_load_embedding(&env, init, &X0);
  t_read = nle_time_seconds() - t_read;
  if (!rc && !s && (mc->fam == FAMILY_LDA || mc->fam == FAMILY_KLDA) && !ds->labels)
    rc = cli_usage_error(command, "%s has no labels: give them with --labels SOURCE", argv[optind]);
  nle_mds_result *mr = NULL;
  nle_kpca_result *kr = NULL;
  nle_lda_result *lr = NULL;
  const nle_matd *X = NULL;
  nle_projection_model *model = NULL;
  if (!rc && !s) {
    if (mc->fam == FAMILY_MDS) {
      if (dim != NLE_AUTO) mo.dim = dim;
      mo.init = X0, mo.keep_model = save_model != NULL;
      nle_mds_input in = {points, M, W};
      s = nle_mds(env.ctx, mc->method, &in, &mo, &mr);
      if (!s) X = mr->X, model = mr->model;
    } else if (mc->fam == FAMILY_KPCA) {
      if (dim != NLE_AUTO) ko.dim = dim;
      ko.keep_model = save_model != NULL;
      s = nle_kpca(env.ctx, ds ? ds->X : NULL, M, &ko, &kr);
      if (!s) X = kr->X, model = kr->model;
    } else {
      /* a map: 2 axes unless asked (the library's default is every useful one, C - 1) */
      lo.dim = dim != NLE_AUTO ? dim : ds->n_classes > 2 ? 2 : NLE_AUTO;
      lo.keep_model = save_model != NULL;
      s = (mc->fam == FAMILY_LDA ? nle_lda : nle_klda)(env.ctx, ds->X, ds->labels, &lo, &lr);
      if (!s) X = lr->X, model = lr->model;
    }
  }
  if (!rc && !s) s = nle_write_matd(env.ctx, output, X);
  if (!rc && !s && save_model) s = nle_projection_model_save(env.ctx, model, save_model);
  /* the library names the matrix; the user needs the file */
  const char *err = nle_ctx_error(env.ctx);
  const char *file = !s || !err ? NULL
                     : !strncmp(err, "dissimilarities", 15) || !strncmp(err, "kernel matrix", 13) ? matrix
                     : !strncmp(err, "weights", 7) ? weights
                     : !strncmp(err, "labels:", 7) && ds ? (env.labels_source ? env.labels_source : ds->name) : NULL;
  if (!rc && s && file) {
    fprintf(stderr, "nlembed %s: error: %s: %s\n", command, file, err);
    rc = s == NLE_ERR_ARG ? 2 : 1;
  }
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    char name[1200];
    cli_json_escape(ds ? ds->name : matrix, name, sizeof name);
    printf("{\"command\": \"%s\", \"input\": \"%s\", \"n\": %zu, \"dim\": %zu, \"read_seconds\": %.3f", command, name,
           X->rows, X->cols, t_read);
    if (mr) {
      printf(", \"seconds\": %.3f", mr->seconds);
      print_doubles("eigenvalues", mr->eigenvalues, mr->n_eigenvalues);
      if (mc->method == NLE_MDS_CLASSICAL || mc->method == NLE_MDS_LANDMARK) {
        printf(", \"negative_eigenvalues\": %d, \"spectrum_complete\": %s", mr->negative_count,
               mr->spectrum_complete ? "true" : "false");
        print_number("negative_mass", mr->negative_mass);
        print_number("positive_mass", mr->positive_mass);
        print_number("trace", mr->trace);
      }
      if (mc->method == NLE_MDS_LANDMARK) printf(", \"landmarks\": %d", mr->resolved.landmarks);
      print_number("stress1", mr->stress1);
      print_number("normalized_stress", mr->normalized_stress);
      print_number("sammon_stress", mr->sammon_stress);
      print_number("raw_stress", mr->raw_stress);
      if (mc->method != NLE_MDS_CLASSICAL && mc->method != NLE_MDS_LANDMARK) {
        print_number("start_stress", mr->start_stress);
        printf(", \"iterations\": %d, \"starts\": %d, \"best_start\": %d, \"starts_abandoned\": %d", mr->iterations,
               mr->starts_run, mr->best_start, mr->starts_abandoned);
        if (mc->method == NLE_MDS_NONMETRIC) printf(", \"ties\": \"%s\"", nle_mds_ties_name(mr->resolved.ties));
      }
    } else if (kr) {
      printf(", \"seconds\": %.3f, \"kernel_seconds\": %.3f, \"eigen_seconds\": %.3f, \"kernel\": \"%s\", \"sparse\": %s, "
             "\"kernel_entries\": %zu", kr->seconds, kr->kernel_seconds, kr->eigen_seconds,
             nle_pdkernel_name(kr->resolved.kernel.kind), kr->sparse ? "true" : "false", kr->nnz);
      if (kr->resolved.kernel.kind != NLE_PDK_LINEAR && kr->resolved.kernel.kind != NLE_PDK_PRECOMPUTED)
        print_number("gamma", kr->resolved.kernel.gamma);
      print_doubles("eigenvalues", kr->eigenvalues, kr->n_eigenvalues);
    } else {
      printf(", \"seconds\": %.3f, \"classes\": %d", lr->seconds, lr->classes);
      if (lr->rank >= 0) printf(", \"rank\": %d", lr->rank);
      if (mc->fam == FAMILY_LDA && lr->resolved.ridge == NLE_AUTO) printf(", \"solver\": \"svd\"");
      else print_number("ridge", lr->resolved.ridge);
      if (mc->fam == FAMILY_KLDA) printf(", \"kernel\": \"%s\"", nle_pdkernel_name(lr->resolved.kernel.kind));
      print_doubles("eigenvalues", lr->eigenvalues, lr->n_eigenvalues);
      print_doubles("explained_variance_ratio", lr->explained_variance_ratio, lr->n_eigenvalues);
    }
    printf("}\n");
    if (mr && !isnan(mr->stress1))
      cli_note(&env, "%s of %zu points in %.2f s: stress-1 %.6f; wrote %s", command, X->rows, mr->seconds, mr->stress1,
               output);
    else
      cli_note(&env, "%s of %zu points to %zu dimensions in %.2f s; wrote %s", command, X->rows, X->cols,
               mr ? mr->seconds : kr ? kr->seconds : lr->seconds, output);
  }
  nle_mds_result_free(&mr);
  nle_kpca_result_free(&kr);
  nle_lda_result_free(&lr);
  nle_matd_free(&M);
  nle_matd_free(&W);
  nle_matd_free(&X0);
  nle_matf_free(&unit_rows);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
