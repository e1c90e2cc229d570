/* cmd_embed.c — `nlembed ee|tee|ssne|tsne|sne`: a table of options that
 * fills nle_embed_opts, the call to nle_embed (which makes every choice),
 * and the printing of what ran. */
#include "cli.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *help_fmt =
    "Usage: nlembed %s [options] INPUT -o OUTPUT\n"
    "       nlembed %s [options] --affinities W.mtx [INPUT] -o OUTPUT\n"
    "\n"
    "%s embedding of INPUT (dissertation ch. 3; EE paper). Affinities W+ are\n"
    "entropic (perplexity) on the kNN graph, symmetrised as (P + P^T) / 2%s.\n"
    "With no options it runs the model's best measured recipe (docs/embeddings.md):\n"
    "%s"
    "Every automatic choice is printed in the JSON line on stdout.\n"
    "\n"
    "Options (auto: chosen from N, D and the model):\n"
    "  -o, --output FILE    the N x d embedding (.npy, .csv, ...)\n"
    "  --affinities FILE    W+ given as an N x N Matrix Market file (e.g. from\n"
    "                       `nlembed affinity`) instead of built from INPUT:\n"
    "                       symmetrised (and normalised for ssne/tsne; rows\n"
    "                       normalised for sne); INPUT is then optional (init\n"
    "                       spectral without it)\n"
    "  -d, --dim N          embedding dimension (default 2)\n"
    "  -p, --perplexity K   entropic affinities' perplexity (auto: 5 for ee, ssne and\n"
    "                       sne, 30 for tsne and tee)\n"
    "  -k, --neighbors K    kNN graph size (auto: 3 x perplexity, 12 with --sigma)\n"
    "  --sigma S            W+ = Gaussian affinities exp(-d^2 / 2 S^2) on the kNN\n"
    "                       graph instead of entropic ones\n"
    "  --metric NAME        euclidean (default), cosine or correlation (the rows made\n"
    "                       unit, correlation centred first; sparse INPUT searched\n"
    "                       as it is), or precomputed: INPUT is an N x N distance\n"
    "                       matrix, or a sparse graph of distances (.mtx, .npz);\n"
    "                       a square symmetric INPUT with a zero diagonal needs it\n"
    "                       named\n"
    "  --pca N              search neighbours among the first N principal components\n"
    "                       of INPUT, then re-rank them by their INPUT distances\n"
    "                       (auto: 50 when D > 100 and N > 5,000; 0: off)\n"
    "  --pca-candidates C   --pca: candidates per point re-ranked (auto: k; 0: keep\n"
    "                       the components' distances)\n"
    "  --lambda L           weight of the repulsion (auto: %s)\n"
    "%s"
    "  --repulsion NAME     auto (exact below 5,000 points, else fft where the model\n"
    "                       allows, Barnes-Hut where the map outgrows the grid;\n"
    "                       t-SNE: exact below 1,500, bh below 10,000, then fft),\n"
    "                       exact, bh, fft or fgt (EE, s-SNE); bh, fft, fgt: d <= 3\n"
    "  --theta T            bh: opening angle (default 0.5; error about 0.1 T^2)\n"
    "  --fft-order P        fft: interpolation nodes per box and axis (default 3)\n"
    "  --fft-box W          fft: box side in kernel lengths (auto: 1.5 with fixed-rate\n"
    "                       steps, 0.85 with a line search)\n"
    "  --fgt-order P        fgt: terms per axis of its series (default 6)\n"
    "  --fgt-reach K        fgt: boxes further apart than K sides do not interact (4)\n"
    "  --accuracy-iters N   bh, fft, fgt: start coarse and reach the set accuracy\n"
    "                       after N iterations (default 0: off)\n"
    "  --optimizer NAME     auto (gd for fixed-rate steps; for line searches sd, or\n"
    "                       lbfgs where sd's factor would pass the memory cap),\n"
    "                       sd (spectral direction), sd- (SD plus the psd\n"
    "                       diagonal blocks of the repulsive Hessian, by CG), fp\n"
    "                       (fixed-point diagonal), gd (gradient descent), lbfgs, cg\n"
    "  --step NAME          auto, fixed (gd with a learning rate, momentum and gains,\n"
    "                       as the t-SNE codes) or line-search (backtracking)\n"
    "  --kappa N            sd, sd-: neighbours per point kept in L+ (default 7;\n"
    "                       0 = all)\n"
    "  --sdm-tol T          sd-: its CG stops at relative residual T (default 0.1)\n"
    "  --sdm-iters N        sd-: or after N CG iterations (default 50)\n"
    "  --c1 C               line search: sufficient-decrease constant (1e-4)\n"
    "  --shrink S           line search: step shrink factor (0.5)\n"
    "  --learning-rate R    fixed steps: the rate (auto: max(N / (4 exaggeration),\n"
    "                       50) / sum(W+)); each point's is capped at its\n"
    "                       attraction's stability bound (docs/embeddings.md)\n"
    "  --final-learning-rate R  after the exaggeration phase (auto: max(N / 2, 200)\n"
    "                       / sum(W+) after an auto first rate and an exaggeration\n"
    "                       phase, else the first rate)\n"
    "  --momentum M         fixed steps: momentum after the first phase (auto: 0.95\n"
    "                       with auto rates, else 0.8; 0.5 during it)\n"
    "  --exaggeration A     fixed steps: attraction x A at first (auto: 12 for\n"
    "                       t-SNE and s-SNE, else 1)\n"
    "  --exaggeration-iters N  the first phase's length (auto: 125 with\n"
    "                       exaggeration, 30 in each homotopy step)\n"
    "  --no-gains           fixed steps: no per-coordinate gains\n"
    "  --init NAME|FILE     auto (pca with INPUT, else spectral), pca, spectral\n"
    "                       (Laplacian eigenmaps of W+), random, or an N x d file;\n"
    "                       the first three scaled to --init-scale\n"
    "  --init-scale S       initial standard deviation of the first dimension (1e-4)\n"
    "  --max-iters N        iterations (auto: 450 for fixed steps, 90 per homotopy\n"
    "                       step with fixed steps, else 1000)\n"
    "  --tol T              stop below this relative decrease of E, 5 iterations in\n"
    "                       a row (auto: 1e-6; 0 in a line-search homotopy)\n"
    "  --x-tol T            stop when |X - X_old| <= T |X_old| (auto: 1e-3 in a\n"
    "                       line-search homotopy, the EE paper's test; else 0, off)\n"
    "  --grad-tol G         stop when every gradient entry is below G in size\n"
    "                       (fixed steps: tested after the exaggeration phase)\n"
    "                       (default 1e-9)\n"
    "  --time-budget S      stop after S seconds\n"
    "  --homotopy STEPS     EE, t-EE: minimise over STEPS log-spaced lambda values\n"
    "                       from --lambda-start to --lambda (EE paper 4.4; auto: 5\n"
    "                       for t-EE with fixed steps, else 0 = none)\n"
    "  --lambda-start L     first lambda of the homotopy (auto: lambda / 100 with\n"
    "                       fixed steps, else 1.5 x the upper bound of lambda*)\n"
    "  --path-prefix P      write X after every lambda to P000.npy, P001.npy, ...\n"
    "  --trace FILE         write 'iteration,seconds,E,evaluations' per iteration\n"
    "  --save-labels FILE   also write the dataset's labels: class names one a line\n"
    "                       in .txt/.csv, integer codes in .npy\n"
    "  --checkpoint FILE    save the run's state to FILE every --checkpoint-every\n"
    "                       iterations, after every homotopy step, and on SIGINT or\n"
    "                       SIGTERM (then exit 130 or 143 without writing OUTPUT)\n"
    "  --checkpoint-every N iterations between checkpoints (default 50)\n"
    "  --resume FILE        continue the checkpointed run (same INPUT and options;\n"
    "                       --max-iters and --time-budget may change), checkpointing\n"
    "                       on to FILE unless --checkpoint names another; the result\n"
    "                       is the uninterrupted run's, bit for bit\n"
    "  --save-model FILE    also write a model file for `nlembed transform`\n"
    "  --model-data MODE    copy (default): the training data goes into the model\n"
    "                       file; reference: only its name (INPUT) and a checksum\n"
    "\n";
/* appended after the formatting: the common help holds a literal '%' */
static const char *help_tail = CLI_KNN_HELP "\n" CLI_COMMON_HELP;

/* What the command line fills: the library's options and the CLI's own. */
typedef struct {
  nle_embed_opts eo;
  const char *output, *init, *save_labels, *save_model, *affinities, *trace, *path_prefix, *checkpoint, *resume,
      *metric;
  int model_data_copy;
} embed_args;

typedef struct {
  const char *name;
  int value;
} cli_name;

/* auto, then the library's optimisers and engines by their names (its
 * type tables): filled by cmd_embed before the options are read. */
static cli_name optimizer_names[16], engine_names[16], wneg_names[8], step_names[8];

static const char *optimizer_name(int id) { return nle_opt_name((nle_opt_kind)id); }
static const char *engine_name(int id) { return nle_repulsion_name((nle_repulsion)id); }
static const char *wneg_name(int id) { return nle_wneg_name((nle_wneg_kind)id); }
static const char *step_name(int id) { return nle_step_name((nle_step_kind)id); }

/* names[] = auto (when the option takes it), then name(0), name(1), ... up
 * to "unknown". */
static void names_fill(cli_name *names, size_t cap, bool with_auto, const char *(*name)(int)) {
  size_t k = 0;
  if (with_auto) names[k++] = (cli_name){"auto", NLE_AUTO};
  for (int id = 0; k + 1 < cap && strcmp(name(id), "unknown"); id++) names[k++] = (cli_name){name(id), id};
  names[k] = (cli_name){NULL, 0};
}
static const cli_name model_data_names[] = {{"copy", 1}, {"reference", 0}, {NULL, 0}};

typedef enum {
  V_INT,   /* an integer in [lo, hi] */
  V_REAL,  /* a finite number from lo to hi (open at lo, at hi as `open` says) */
  V_TEXT,  /* a string kept as given */
  V_FLAG,  /* no argument: stores `lo` != 0 as a bool */
  V_NAME   /* one of `names` */
} value_kind;

enum { OPEN_LO = 1, OPEN_HI = 2 };
enum { FOR_EE = 1, FOR_TEE = 2, FOR_SSNE = 4, FOR_TSNE = 8, FOR_SNE = 16, FOR_ALL = 31 };

typedef struct {
  const char *name;
  char short_name;
  value_kind kind;
  size_t offset;        /* into embed_args */
  double lo, hi;
  int open; /* V_REAL: OPEN_LO (x > lo) and OPEN_HI (x < hi) */
  bool auto_ok;
  const cli_name *names;
  int models;           /* FOR_* of the commands that take it */
  const char *error;    /* "--x takes ..." or, for the wrong model, "--x is for ..." */
} embed_option;

#define AT(field) offsetof(embed_args, field)
#define BIG INFINITY /* any finite number: a range refuses only what cannot work */
static const embed_option table[] = {
    {"output", 'o', V_TEXT, AT(output), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"dim", 'd', V_INT, AT(eo.dim), 1, 64, 0, 0, NULL, FOR_ALL, "-d takes 1-64"},
    {"perplexity", 'p', V_REAL, AT(eo.perplexity), 1, BIG, 1, 1, NULL, FOR_ALL, "--perplexity takes a number above 1 or auto"},
    {"neighbors", 'k', V_INT, AT(eo.k), 2, INT_MAX, 0, 1, NULL, FOR_ALL, "-k takes an integer >= 2"},
    {"sigma", 0, V_REAL, AT(eo.sigma), 0, BIG, 1, 1, NULL, FOR_ALL & ~FOR_SNE,
     "--sigma takes a positive width|--sigma is for ee, tee, ssne and tsne (SNE needs conditional P)"},
    {"pca", 0, V_INT, AT(eo.pca_dims), 0, INT_MAX, 0, 1, NULL, FOR_ALL, "--pca takes an integer >= 0 or auto"},
    {"pca-candidates", 0, V_INT, AT(eo.pca_candidates), 0, INT_MAX, 0, 1, NULL, FOR_ALL,
     "--pca-candidates takes an integer >= 0 or auto"},
    {"lambda", 0, V_REAL, AT(eo.lambda), 0, BIG, 1, 1, NULL, FOR_ALL, "--lambda takes a positive number or auto"},
    {"wneg", 0, V_NAME, AT(eo.wneg), 0, 0, 0, 0, wneg_names, FOR_EE | FOR_TEE,
     "--wneg takes uniform, sqdist or knn|--wneg is for ee and tee"},
    {"wneg-dims", 0, V_INT, AT(eo.wneg_dims), 1, INT_MAX, 0, 0, NULL, FOR_EE | FOR_TEE,
     "--wneg-dims takes an integer >= 1|--wneg-dims is for ee and tee"},
    {"repulsion", 0, V_NAME, AT(eo.engine), 0, 0, 0, 0, engine_names, FOR_ALL, "--repulsion takes"},
    {"theta", 0, V_REAL, AT(eo.theta), 0, BIG, 1, 0, NULL, FOR_ALL, "--theta takes a positive number"},
    {"fft-order", 0, V_INT, AT(eo.fft.order), 1, 12, 0, 0, NULL, FOR_ALL, "--fft-order takes an integer from 1 to 12"},
    {"fft-box", 0, V_REAL, AT(eo.fft.box_width), 0, BIG, 1, 1, NULL, FOR_ALL, "--fft-box takes a positive number or auto"},
    {"fgt-order", 0, V_INT, AT(eo.fgt.order), 1, 12, 0, 0, NULL, FOR_ALL, "--fgt-order takes an integer from 1 to 12"},
    {"fgt-reach", 0, V_INT, AT(eo.fgt.reach), 1, 12, 0, 0, NULL, FOR_ALL, "--fgt-reach takes an integer from 1 to 12"},
    {"accuracy-iters", 0, V_INT, AT(eo.opt.accuracy_iters), 0, INT_MAX, 0, 0, NULL, FOR_ALL,
     "--accuracy-iters takes an integer >= 0"},
    {"optimizer", 0, V_NAME, AT(eo.opt.kind), 0, 0, 0, 0, optimizer_names, FOR_ALL,
     "--optimizer takes"},
    {"step", 0, V_NAME, AT(eo.step), 0, 0, 0, 0, step_names, FOR_ALL, "--step takes auto, fixed or line-search"},
    {"kappa", 0, V_INT, AT(eo.opt.kappa), 0, INT_MAX, 0, 0, NULL, FOR_ALL, "--kappa takes an integer >= 0"},
    {"sdm-tol", 0, V_REAL, AT(eo.opt.sdm_tol), 0, BIG, 1, 0, NULL, FOR_ALL, "--sdm-tol takes a positive number"},
    {"sdm-iters", 0, V_INT, AT(eo.opt.sdm_iters), 1, INT_MAX, 0, 0, NULL, FOR_ALL, "--sdm-iters takes an integer >= 1"},
    {"c1", 0, V_REAL, AT(eo.opt.c1), 0, 1, OPEN_LO | OPEN_HI, 0, NULL, FOR_ALL, "--c1 takes a number in (0, 1)"},
    {"shrink", 0, V_REAL, AT(eo.opt.shrink), 0, 1, OPEN_LO | OPEN_HI, 0, NULL, FOR_ALL, "--shrink takes a number in (0, 1)"},
    {"learning-rate", 0, V_REAL, AT(eo.opt.learning_rate), 0, BIG, 1, 1, NULL, FOR_ALL,
     "--learning-rate takes a positive number or auto"},
    {"final-learning-rate", 0, V_REAL, AT(eo.opt.learning_rate_final), 0, BIG, 1, 1, NULL, FOR_ALL,
     "--final-learning-rate takes a positive number or auto"},
    {"momentum", 0, V_REAL, AT(eo.opt.momentum), 0, 1, OPEN_HI, 1, NULL, FOR_ALL, "--momentum takes a number in [0, 1)"},
    {"exaggeration", 0, V_REAL, AT(eo.opt.exaggeration), 1, BIG, 0, 1, NULL, FOR_ALL, "--exaggeration takes a number >= 1"},
    {"exaggeration-iters", 0, V_INT, AT(eo.opt.exaggeration_iters), 0, INT_MAX, 0, 1, NULL, FOR_ALL,
     "--exaggeration-iters takes an integer >= 0"},
    {"no-gains", 0, V_FLAG, AT(eo.opt.gains), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"init", 0, V_TEXT, AT(init), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"init-scale", 0, V_REAL, AT(eo.init_scale), 0, BIG, 1, 0, NULL, FOR_ALL, "--init-scale takes a positive number"},
    {"max-iters", 0, V_INT, AT(eo.opt.max_iters), 0, INT_MAX, 0, 1, NULL, FOR_ALL, "--max-iters takes an integer >= 0"},
    {"tol", 0, V_REAL, AT(eo.opt.tol), 0, BIG, 0, 1, NULL, FOR_ALL, "--tol takes a number >= 0"},
    {"x-tol", 0, V_REAL, AT(eo.opt.x_tol), 0, BIG, 0, 1, NULL, FOR_ALL, "--x-tol takes a number >= 0"},
    {"grad-tol", 0, V_REAL, AT(eo.opt.grad_tol), 0, BIG, 0, 1, NULL, FOR_ALL, "--grad-tol takes a number >= 0"},
    {"time-budget", 0, V_REAL, AT(eo.opt.time_budget), 0, BIG, 0, 0, NULL, FOR_ALL, "--time-budget takes seconds >= 0"},
    {"homotopy", 0, V_INT, AT(eo.homotopy_steps), 0, INT_MAX, 0, 1, NULL, FOR_EE | FOR_TEE,
     "--homotopy takes a number of lambda values|--homotopy is for ee and tee (lambda is 1 in the SNE family)"},
    {"lambda-start", 0, V_REAL, AT(eo.lambda_start), 0, BIG, 1, 1, NULL, FOR_EE | FOR_TEE,
     "--lambda-start takes a positive number|--lambda-start is for ee and tee"},
    {"path-prefix", 0, V_TEXT, AT(path_prefix), 0, 0, 0, 0, NULL, FOR_EE | FOR_TEE, "|--path-prefix is for ee and tee"},
    {"trace", 0, V_TEXT, AT(trace), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"save-labels", 0, V_TEXT, AT(save_labels), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"checkpoint", 0, V_TEXT, AT(checkpoint), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"checkpoint-every", 0, V_INT, AT(eo.checkpoint_every), 1, INT_MAX, 0, 0, NULL, FOR_ALL,
     "--checkpoint-every takes an integer >= 1"},
    {"resume", 0, V_TEXT, AT(resume), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"save-model", 0, V_TEXT, AT(save_model), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"model-data", 0, V_NAME, AT(model_data_copy), 0, 0, 0, 0, model_data_names, FOR_ALL,
     "--model-data takes copy or reference"},
    {"affinities", 0, V_TEXT, AT(affinities), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
    {"metric", 0, V_TEXT, AT(metric), 0, 0, 0, 0, NULL, FOR_ALL, NULL},
};
enum { N_OPTIONS = sizeof table / sizeof *table, OPTION_KEY0 = OPT_COMMAND_BASE };

/* The part of an entry's error for a bad value (before '|') or for the
 * wrong command (after it). */
static int option_error(const char *command, const embed_option *e, bool wrong_model) {
  const char *bar = strchr(e->error, '|');
  if (wrong_model) return cli_usage_error(command, "%s", bar ? bar + 1 : e->error);
  int len = bar ? (int)(bar - e->error) : (int)strlen(e->error);
  if (e->kind == V_NAME && len >= 5 && !strncmp(e->error + len - 5, "takes", 5)) { /* the names, from the table */
    char list[256];
    size_t used = 0, count = 0;
    for (const cli_name *nm = e->names; nm->name; nm++) count++;
    list[0] = '\0';
    for (size_t i = 0; i < count && used < sizeof list; i++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i == 0 ? "" : i + 1 == count ? " or " : ", ",
                               e->names[i].name);
    return cli_usage_error(command, "%.*s %s", len, e->error, list);
  }
  return cli_usage_error(command, "%.*s", len, e->error);
}

static int parse_option(const char *command, int model_bit, const embed_option *e, const char *arg, embed_args *a) {
  char *field = (char *)a + e->offset;
  if (!(e->models & model_bit)) return option_error(command, e, true);
  char spelled[64]; /* as the user may have typed it: -d, --lambda */
  snprintf(spelled, sizeof spelled, "%s%s", e->short_name ? "-" : "--",
           e->short_name ? (char[]){e->short_name, '\0'} : e->name);
  switch (e->kind) {
  case V_TEXT: *(const char **)field = arg; return 0;
  case V_FLAG: *(bool *)field = e->lo != 0; return 0;
  case V_NAME:
    for (const cli_name *nm = e->names; nm->name; nm++)
      if (!strcmp(arg, nm->name)) {
        *(int *)field = nm->value;
        return 0;
      }
    if (e->names == optimizer_names && nle_opt_parse(arg) != -1) { /* the library's aliases ("sdm") */
      *(int *)field = nle_opt_parse(arg);
      return 0;
    }
    return option_error(command, e, false);
  case V_INT: return cli_int_field(command, spelled, arg, (long long)e->lo, (long long)e->hi, e->auto_ok, (int *)field);
  case V_REAL:
    return cli_real_arg(command, spelled, arg, e->lo, e->open & OPEN_LO, e->hi, e->open & OPEN_HI, e->auto_ok,
                        (double *)field);
  }
  return 2;
}

/* --- progress, trace and homotopy lines ----------------------------------- */

typedef struct {
  cli_env *env;
  const char *prefix;
  int failed; /* a path file could not be written: the run fails */
  char error[1024];
} path_writer;

/* The path file of homotopy step `step`. */
static void path_file(const char *prefix, int step, char *path, size_t len) {
  snprintf(path, len, "%s%03d.npy", prefix, step);
}

/* --trace: one CSV line per iteration; a homotopy's runs continue the count
 * and the clock. */
typedef struct {
  cli_env *env;
  FILE *file;        /* --trace, or NULL */
  int lines;         /* progress lines on stderr (logs, --verbose) */
  double seconds0, last_seconds, last_line;
  int iterations0, last_iteration, evaluations0, last_evaluations;
} trace_writer;

static void write_trace(void *user, int iteration, double seconds, double E, int evaluations, double step) {
  trace_writer *t = user;
  if (iteration <= t->last_iteration) { /* a new run of the homotopy */
    t->iterations0 += t->last_iteration;
    t->seconds0 += t->last_seconds;
    t->evaluations0 += t->last_evaluations;
  }
  t->last_iteration = iteration;
  t->last_seconds = seconds;
  t->last_evaluations = evaluations;
  double now = t->seconds0 + seconds;
  if (t->file)
    fprintf(t->file, "%d,%.6f,%.17g,%d\n", t->iterations0 + iteration, now, E, t->evaluations0 + evaluations);
  if (t->lines && now - t->last_line >= 2.0 && isfinite(E)) {
    t->last_line = now;
    fprintf(stderr, "nlembed %s: iteration %d, E %.8g, step %.3g, %d evaluations, %.1f s\n", t->env->command,
            t->iterations0 + iteration, E, step, t->evaluations0 + evaluations, now);
  }
}

static int write_path(void *user, int step, double lambda, const nle_matd *X, const nle_opt_report *rep) {
  path_writer *pw = user;
  cli_note(pw->env, "homotopy step %d: lambda %.4g, E %.6g, %d iterations", step + 1, lambda, rep->E,
           rep->iterations);
  if (!pw->prefix) return 0;
  char path[4096];
  path_file(pw->prefix, step, path, sizeof path);
  if (nle_write_matd(pw->env->ctx, path, X)) {
    pw->failed = 1;
    snprintf(pw->error, sizeof pw->error, "%s", nle_ctx_error(pw->env->ctx));
    return 1; /* stops the path; the error is reported after nle_embed */
  }
  return 0;
}

static const char *name_of(const cli_name *names, int value) {
  for (const cli_name *nm = names; nm->name; nm++)
    if (nm->value == value) return nm->name;
  return "?";
}

/* The JSON line: every resolved choice and the time of every stage. */
static void print_json(cli_env *env, const char *title, const char *input, double read_seconds,
                       double search_seconds, const nle_embed_result *r) {
  const nle_embed_opts *o = &r->resolved;
  char source[1200], e0[32], e[32], kl[64] = "", lower[32], upper[32], extent[32];
  cli_json_escape(input, source, sizeof source);
  cli_json_number(e0, sizeof e0, "%.10g", r->report.E0);
  cli_json_number(e, sizeof e, "%.10g", r->report.E);
  if (isfinite(r->kl)) snprintf(kl, sizeof kl, ", \"kl_divergence\": %.10g", r->kl); /* the SNE family's */
  cli_json_number(lower, sizeof lower, "%.6g", r->lambda_lower); /* null: not computed */
  cli_json_number(upper, sizeof upper, "%.6g", r->lambda_upper);
  cli_json_number(extent, sizeof extent, "%.6g", r->map_extent);
  printf("{\"command\": \"%s\", \"input\": \"%s\", \"n\": %zu, \"dim\": %d, \"perplexity\": %g, \"k\": %d, "
         "\"sigma\": %g, \"knn_method\": \"%s\", \"pca\": %d, \"pca_candidates\": %d, \"lambda\": %.6g, "
         "\"repulsion\": \"%s\", \"fft_box\": %g, \"optimizer\": \"%s\", \"step\": \"%s\", \"kappa\": %d, "
         "\"learning_rate\": %.6g, \"final_learning_rate\": %.6g, \"momentum\": %g, \"exaggeration\": %g, "
         "\"exaggeration_iters\": %d, \"max_iters\": %d, \"tol\": %g, \"x_tol\": %g, \"homotopy_steps\": %d, "
         "\"lambda_start\": %.6g, \"init\": \"%s\", \"iterations\": %d, \"evaluations\": %d, \"E0\": %s, "
         "\"E\": %s%s, \"converged\": %s, \"lambda_star_lower\": %s, \"lambda_star_upper\": %s, "
         "\"components\": %d, \"map_extent\": %s, \"read_seconds\": %.3f, \"pca_seconds\": %.3f, \"knn_seconds\": %.3f, "
         "\"affinity_seconds\": %.3f, \"init_seconds\": %.3f, \"plan_seconds\": %.3f, \"optimize_seconds\": %.3f, "
         "\"total_seconds\": %.3f, \"summary\": \"%s, perplexity %g, %s%s, %d iterations, %.1f s\"}\n",
         env->command, source, r->n, o->dim, o->perplexity, o->k, o->sigma == NLE_AUTO ? 0.0 : o->sigma,
         nle_knn_method_name(o->knn_method), o->pca_dims, o->pca_candidates, o->lambda,
         name_of(engine_names, o->engine), o->fft.box_width, name_of(optimizer_names, o->opt.kind),
         nle_step_name(o->step), o->opt.kappa, o->opt.learning_rate,
         o->opt.learning_rate_final, o->opt.momentum, o->opt.exaggeration, o->opt.exaggeration_iters,
         o->opt.max_iters, o->opt.tol, o->opt.x_tol, o->homotopy_steps, o->lambda_start,
         o->init == NLE_INIT_GIVEN ? "file" : nle_init_name(o->init),
         r->report.iterations, r->report.evaluations, e0, e, kl, r->report.converged ? "true" : "false", lower, upper,
         r->components, extent, read_seconds, r->seconds.pca, r->seconds.knn + search_seconds, r->seconds.affinities,
         r->seconds.init, r->seconds.plan, r->seconds.optimize, r->seconds.total + search_seconds, title, o->perplexity,
         o->homotopy_steps > 0 ? "homotopy, " : "", o->step == NLE_STEP_FIXED_RATE ? "fixed-rate gd" : name_of(optimizer_names, o->opt.kind),
         r->report.iterations, r->seconds.total + search_seconds);
}

/* The k of a graph searched here (sparse rows, precomputed distances):
 * the recipe's, an automatic one at most the other N - 1 points as
 * nle_embed itself resolves it. */
static int graph_size(const nle_embed_opts *o, const nle_dataset *ds) {
  int k = nle_embed_knn_size(o);
  size_t n = ds->X ? ds->X->rows : (size_t)ds->sparse->rows;
  return o->k == NLE_AUTO && n > 1 && (size_t)k >= n ? (int)(n - 1) : k;
}

/* The data points go as soon as the library is done with them (the labels
 * stay, for --save-labels): at a million 784-d points that is 3 GB less
 * through the affinities and the optimisation. */
static void release_points(void *dataset) { nle_matf_free(&((nle_dataset *)dataset)->X); }

static const char *const titles[] = {"EE", "s-SNE", "t-SNE", "SNE", "t-EE"};

/* The command's --help: the shared text with the model's recipe. */
static void help_text(nle_model_kind kind, const char *name, char *help, size_t size) {
  static const char *recipes[] = {
      "perplexity 5, line-search spectral direction, lambda 100 / N.\n",
      "perplexity 5, line-search spectral direction.\n",
      "PCA-50 neighbours re-ranked in INPUT (large D and N), fixed-rate gradient\n"
      "descent with exaggeration 12 for 125 of 450 iterations, FFT repulsion.\n",
      "perplexity 5, line-search spectral direction, exact repulsion.\n",
      "the homotopy over 5 lambda values from lambda / 100 to 0.03, 90 fixed-rate\n"
      "iterations each.\n"};
  static const char *lambdas[] = {"100 / N", "1", "1", "1", "0.03"};
  int unnormalised = kind == NLE_MODEL_EE || kind == NLE_MODEL_TEE;
  snprintf(help, size, help_fmt, name, name, titles[kind], unnormalised ? "" : " and normalised to sum 1",
           recipes[kind], lambdas[kind],
           unnormalised ? "  --wneg NAME          repulsive weights: uniform (default), sqdist (squared\n"
                          "                       input distances: a dense N x N matrix with exact\n"
                          "                       repulsion, else distances after PCA to --wneg-dims,\n"
                          "                       summed by FFT), knn (on the kNN graph)\n"
                          "  --wneg-dims N        sqdist with a fast engine: PCA dimensions (30)\n"
                        : "");
  strncat(help, help_tail, size - strlen(help) - 1);
}

/* getopt's tables from ours, then the shared kNN and common options. */
static void getopt_tables(struct option *longopts, char *shortopts) {
  size_t n_long = 0;
  shortopts[0] = '\0';
  for (size_t i = 0; i < N_OPTIONS; i++) {
    int has_arg = table[i].kind == V_FLAG ? no_argument : required_argument;
    longopts[n_long++] = (struct option){table[i].name, has_arg, 0, OPTION_KEY0 + (int)i};
    if (table[i].short_name) {
      size_t l = strlen(shortopts);
      shortopts[l] = table[i].short_name;
      shortopts[l + 1] = ':';
      shortopts[l + 2] = '\0';
    }
  }
  static const struct option shared[] = {CLI_KNN_OPTIONS, CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  for (size_t i = 0; i < sizeof shared / sizeof *shared; i++) longopts[n_long++] = shared[i];
}

int cmd_embed(int argc, char **argv, const char *name) {
  int kind = nle_model_parse(name);
  if (kind < 0) return 2;
  names_fill(optimizer_names, sizeof optimizer_names / sizeof *optimizer_names, true, optimizer_name);
  names_fill(engine_names, sizeof engine_names / sizeof *engine_names, true, engine_name);
  names_fill(wneg_names, sizeof wneg_names / sizeof *wneg_names, false, wneg_name);
  names_fill(step_names, sizeof step_names / sizeof *step_names, true, step_name);
  int unnormalised = kind == NLE_MODEL_EE || kind == NLE_MODEL_TEE;
  char help[12288];
  help_text((nle_model_kind)kind, name, help, sizeof help);
  struct option longopts[N_OPTIONS + 20];
  char shortopts[64];
  getopt_tables(longopts, shortopts);
  cli_env env;
  if (cli_env_init(&env, name, help)) return 1;
  cli_knn_choice choice;
  cli_knn_choice_init(&choice);
  env.knn = &choice;
  embed_args a;
  memset(&a, 0, sizeof a);
  nle_embed_opts_init(&a.eo);
  a.eo.model = (nle_model_kind)kind;
  a.model_data_copy = 1;
  int model_bit = 1 << (kind == NLE_MODEL_EE ? 0 : kind == NLE_MODEL_TEE ? 1 : kind == NLE_MODEL_SSNE ? 2 : kind == NLE_MODEL_TSNE ? 3 : 4);
  int c;
  while ((c = cli_next_option(&env, argc, argv, shortopts, longopts)) != -1) {
    const embed_option *e = NULL;
    if (c >= OPTION_KEY0 && c < OPTION_KEY0 + N_OPTIONS) e = &table[c - OPTION_KEY0];
    for (size_t i = 0; !e && i < N_OPTIONS; i++)
      if (table[i].short_name && table[i].short_name == c) e = &table[i];
    if (!e) env.rc = 2;
    else if (parse_option(name, model_bit, e, optarg, &a)) env.rc = 2;
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  a.eo.knn_method = (nle_knn_method)choice.method;
  a.eo.knn_approx = choice.approx;
  int rc = env.rc;
  int n_inputs = argc - optind;
  if (!rc && !(n_inputs == 1 || (a.affinities && n_inputs == 0)))
    rc = cli_usage_error(name, "expected one INPUT%s, got %d", a.affinities ? " or none" : "", n_inputs);
  const char *input = n_inputs == 1 ? argv[optind] : a.affinities;
  nle_metric metric = NLE_METRIC_EUCLIDEAN;
  if (!rc) rc = cli_metric_parse(name, a.metric, false, &metric);
  const char *init = a.init ? a.init : "auto";
  /* a name of the library's (but "given": that is a file's content), or a file */
  const char *init_file = NULL;
  int init_kind = nle_init_parse(init);
  a.eo.init = init_kind == -1 || init_kind == NLE_INIT_GIVEN ? NLE_INIT_GIVEN : (nle_init_kind)init_kind;
  if (a.eo.init == NLE_INIT_GIVEN) init_file = init;
  if (!rc && !n_inputs && (a.save_model || a.save_labels || a.eo.wneg != NLE_WNEG_UNIFORM || a.eo.init == NLE_INIT_PCA))
    rc = cli_usage_error(name, "--save-model, --save-labels, --wneg sqdist|knn and --init pca need the INPUT data");
  if (!rc && !a.output) rc = cli_usage_error(name, "no output file (-o FILE)");
  if (!rc && a.eo.opt.learning_rate_final != NLE_AUTO && a.eo.step == NLE_STEP_LINE_SEARCH)
    rc = cli_usage_error(name, "--final-learning-rate goes with fixed steps (--learning-rate), not a line search");
  if (!rc && a.save_model && a.eo.pca_dims != NLE_AUTO && a.eo.pca_dims > 0 && a.eo.pca_candidates == 0)
    rc = cli_usage_error(name, "--pca with --save-model needs the re-ranking (--pca-candidates > 0): the model keeps "
                         "the INPUT space");
  /* every output path before any work */
  nle_status s = NLE_OK;
  const char *outputs[] = {a.output, a.save_labels, a.save_model};
  const unsigned formats[] = {NLE_OUTPUT_DENSE, NLE_OUTPUT_DENSE, 0};
  for (size_t i = 0; !rc && !s && i < sizeof outputs / sizeof *outputs; i++)
    if (outputs[i]) s = nle_check_output(env.ctx, outputs[i], formats[i]);
  if (!rc && !s && a.path_prefix) {
    char first[4096];
    path_file(a.path_prefix, 0, first, sizeof first);
    s = nle_check_output(env.ctx, first, NLE_OUTPUT_DENSE);
  }
  nle_dataset *ds = NULL;
  nle_csr *A = NULL;
  nle_matd *X0 = NULL;
  nle_embed_result *res = NULL;
  double t_read = nle_time_seconds();
  env.read.sparse_ok = true; /* sparse rows: their graph searched below */
  if (!rc && !s && n_inputs) s = cli_load(&env, argv[optind], &ds);
  /* the points nle_embed searches, or the graph searched here (sparse rows,
   * precomputed distances) */
  const nle_matf *points = NULL;
  nle_matf *unit_rows = NULL;
  nle_csr *graph = NULL;
  double t_search = 0.0; /* that search's time: kNN time, not reading time */
  if (!rc && !s && ds) {
    rc = cli_metric_input(&env, argv[optind], a.metric, metric, ds, graph_size(&a.eo, ds), &points, &unit_rows,
                          &graph, &t_search);
    if (!rc && graph && (a.save_model || a.eo.wneg != NLE_WNEG_UNIFORM || a.eo.init == NLE_INIT_PCA))
      rc = cli_usage_error(name, "--save-model, --wneg sqdist|knn and --init pca need dense points, not %s",
                           ds->sparse ? "a sparse matrix" : "precomputed distances");
  }
  if (!rc && !s && a.affinities) s = nle_read_csr_mtx(env.ctx, a.affinities, &A);
  if (!rc && !s && A && nle_affinity_check(env.ctx, A) && A->rows == A->cols) {
    fprintf(stderr, "nlembed %s: error: %s: %s\n", name, a.affinities, nle_ctx_error(env.ctx));
    rc = 1;
  }
  t_read = nle_time_seconds() - t_read - t_search;
  if (!rc && !s && a.save_labels && !ds->labels)
    rc = cli_usage_error(name, "%s has no labels to save (give them with --labels)", argv[optind]);
  size_t npts = ds ? (ds->X ? ds->X->rows : (size_t)ds->sparse->rows) : A ? (size_t)A->rows : 0;
  if (!rc && !s && A && graph)
    rc = cli_usage_error(name, "--affinities go with INPUT points, not a graph of INPUT");
  if (!rc && !s && A && (A->rows != A->cols || A->rows < 3 || (ds && (size_t)A->rows != npts))) {
    fprintf(stderr, "nlembed %s: error: %s: the affinities must be N x N with N >= 3%s, not %lld x %lld\n", name,
            a.affinities, ds ? " and N the number of INPUT points" : "", (long long)A->rows, (long long)A->cols);
    rc = 1;
  }
  if (!rc && !s && init_file) {
    s = cli_load_embedding(&env, init_file, &X0);
    if (!s && (X0->rows != npts || X0->cols != (size_t)a.eo.dim)) {
      fprintf(stderr, "nlembed %s: error: %s: initial X must be %zu x %d, not %zu x %zu\n", name, init_file, npts,
              a.eo.dim, X0->rows, X0->cols);
      rc = 1;
    }
    a.eo.init_X = X0;
  }
  /* --trace and the progress lines */
  FILE *trace_file = NULL;
  if (!rc && !s && a.trace) {
    trace_file = fopen(a.trace, "w");
    if (!trace_file) {
      fprintf(stderr, "nlembed %s: error: %s: cannot write the trace\n", name, a.trace);
      rc = 1;
    } else {
      fputs("iteration,seconds,E,evaluations\n", trace_file);
    }
  }
  trace_writer tw = {&env, trace_file, !env.quiet && (env.verbosity > 0 || !isatty(STDERR_FILENO)), 0, 0, 0, 0, 0, 0, 0};
  if (trace_file || tw.lines) {
    a.eo.opt.trace = write_trace;
    a.eo.opt.trace_user = &tw;
    /* a fixed-rate run computes E only for what is shown: every iteration
     * for a --trace file, every 25th for the progress lines */
    a.eo.opt.energy_every = trace_file ? 1 : 25;
  }
  path_writer pw = {&env, a.path_prefix, 0, ""};
  a.eo.on_step = write_path;
  a.eo.on_step_user = &pw;
  /* --resume goes on checkpointing to its file unless told otherwise */
  a.eo.resume = a.resume;
  a.eo.checkpoint = a.checkpoint ? a.checkpoint : a.resume;
  a.eo.keep_model = a.save_model != NULL;
  if (!rc && !s && a.eo.checkpoint) cli_catch_interrupts();
  if (!rc && !s) {
    nle_embed_input in = {.Y = points, .knn = graph, .affinities = A, .source = input,
                          .release_Y = points == (ds ? ds->X : NULL) ? release_points : NULL, .release_user = ds};
    s = nle_embed(env.ctx, &in, &a.eo, &res);
    if (s > 0) cli_note(&env, "%s", nle_ctx_error(env.ctx));
    if (s > 0) s = NLE_OK;
    if (!s && pw.failed) {
      fprintf(stderr, "nlembed %s: error: %s\n", env.command, pw.error);
      rc = 1;
    }
  }
  if (!rc && !s && res->resumed)
    cli_note(&env, "resumed %s at iteration %d", a.resume, res->resumed_iteration);
  if (!rc && !s) {
    const nle_embed_opts *o = &res->resolved;
    if (o->step == NLE_STEP_FIXED_RATE && res->w_total != 1.0 && unnormalised)
      cli_note(&env, "learning rates %.6g, then %.6g (auto, for W+ summing to %.6g)", o->opt.learning_rate,
               o->opt.learning_rate_final, res->w_total);
  }
  /* the outputs, committed together */
  if (!rc && !s) s = nle_write_matd(env.ctx, a.output, res->X);
  if (!rc && !s && a.save_model) s = nle_trained_save(env.ctx, res->trained, a.save_model, a.model_data_copy);
  if (!rc && !s && a.save_labels) s = nle_write_labels_named(env.ctx, a.save_labels, ds->labels, (int64_t)npts,
                                                                     ds->class_names, ds->n_classes);
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) {
    print_json(&env, titles[kind], ds ? ds->name : input, t_read, t_search, res);
    char kl[48] = "";
    if (isfinite(res->kl)) snprintf(kl, sizeof kl, " (KL %.6g)", res->kl);
    cli_note(&env, "%s of %zu points: E %.6g -> %.6g%s in %d iterations (%d evaluations), %.2f s; wrote %s",
             titles[kind], npts, res->report.E0, res->report.E, kl, res->report.iterations, res->report.evaluations,
             res->seconds.total + t_search, a.output);
  }
  if (trace_file) fclose(trace_file);
  nle_embed_result_free(&res);
  nle_matd_free(&X0);
  nle_csr_free(&A);
  nle_csr_free(&graph);
  nle_matf_free(&unit_rows);
  nle_dataset_free(&ds);
  cli_env_free(&env);
  return rc;
}
