/* cmd_fit.c — a method of the estimator as a command: `nlembed METHOD
 * [options] INPUT -o OUTPUT` makes the method's estimator, sets each option
 * by name, fits, writes the outputs through the transaction, saves the
 * model and prints the flat report as the JSON line. The method's options,
 * their --help lines and their checks are the library's rows
 * (nle_estimator_option_info); this file holds only the options that are
 * the tool's own: files in and out, the trace and the homotopy's path. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tool's own options of a fit. */
typedef enum {
  T_OUTPUT, T_SAVE_MODEL, T_SAVE_LABELS, T_AFFINITIES, T_DISTANCES, T_KNN, T_KERNEL_MATRIX, T_WEIGHTS, T_INIT, T_TRACE,
  T_PATH_PREFIX, T_NEIGHBOUR_DISTANCES, T_BETAS, T_COUNT
} tool_key;

/* What a method makes, as bits of the rows' `makes`. */
#define MAKES(p) (1u << (p))
#define EMBEDDINGS (MAKES(NLE_MAKES_EMBEDDING) | MAKES(NLE_MAKES_LABELS))

/* `needs`: the library options ('|' between; "@name" a method) of which the
 * method must take one for the tool's option to apply (NULL: every method);
 * `makes`: the products of the methods it is for (0: all). */
static const struct {
  const char *name, *metavar, *help, *needs;
  unsigned makes;
} tool_rows[T_COUNT] = {
    [T_OUTPUT] = {"output", "FILE", "what the method makes (output_help)", NULL},
    [T_SAVE_MODEL] = {"save-model", "FILE", "also write the model for `nlembed transform` (sets keep-model)", NULL,
                      EMBEDDINGS},
    [T_SAVE_LABELS] = {"save-labels", "FILE",
                       "also write the dataset's labels: class names one a line in .txt/.csv, integer codes in .npy",
                       NULL},
    [T_AFFINITIES] = {"affinities", "FILE",
                      "W (W+) given as an N x N matrix (.mtx sparse, or any dense input; e.g. from `nlembed affinity`) "
                      "instead of built from INPUT, which is then optional (its points: what LLL and the embeddings' "
                      "PCA start need)",
                      "lambda|affinity"},
    [T_DISTANCES] = {"distances", "FILE",
                     "INPUT is this dissimilarity matrix (N x N, symmetric, zero diagonal; or a sparse graph of "
                     "distances): --metric precomputed",
                     NULL, EMBEDDINGS},
    [T_KNN] = {"knn", "FILE",
               "a kNN graph as `nlembed knn -o G.mtx` writes it (squared distances) instead of searching INPUT, "
               "which is then optional",
               "affinity"},
    [T_KERNEL_MATRIX] = {"kernel-matrix", "FILE", "INPUT is this N x N kernel matrix (kernel precomputed)",
                         "kernel-neighbors"},
    [T_WEIGHTS] = {"weights", "FILE", "N x N weights w_ij (symmetric, >= 0)", "@mds"},
    /* the library's init row, or an N x d start read from FILE */
    [T_INIT] = {"init", "NAME|FILE", "the N x d start read from FILE (one run)", "init|starts"},
    [T_TRACE] = {"trace", "FILE", "write 'iteration,seconds,E,evaluations' per iteration", "optimizer"},
    [T_PATH_PREFIX] = {"path-prefix", "P", "write X after every homotopy step to P000.npy, P001.npy, ...", "homotopy"},
    [T_NEIGHBOUR_DISTANCES] = {"distances", "FILE", "also write the N x k squared distances", NULL,
                               MAKES(NLE_MAKES_NEIGHBOURS)},
    [T_BETAS] = {"betas", "FILE", "entropic: also write the N precisions beta_n", NULL, MAKES(NLE_MAKES_WEIGHTS)},
};

/* Whether the method takes the library option `name`. */
static bool method_takes(const nle_estimator *e, const char *name) {
  for (int i = 0; nle_estimator_option(e, i); i++)
    if (!strcmp(nle_estimator_option(e, i), name)) return true;
  return false;
}

/* Whether the tool's option t applies to the estimator's method. */
static bool tool_applies(const nle_estimator *e, int t) {
  const char *needs = tool_rows[t].needs;
  if (tool_rows[t].makes && !(tool_rows[t].makes & MAKES(nle_estimator_makes(e)))) return false;
  if (!needs) return true;
  for (const char *p = needs; *p;) {
    size_t len = strcspn(p, "|");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, p);
    if (name[0] == '@' ? !strcmp(name + 1, nle_estimator_method(e)) : method_takes(e, name)) return true;
    p += len + (p[len] == '|');
  }
  return false;
}

enum { KEY_TOOL = OPT_COMMAND_BASE, KEY_LIBRARY = OPT_COMMAND_BASE + 100, MAX_NAMES = 400 };

/* Every option name of every method and every alias, so that an option of
 * another method is refused by the library, by name ("--wneg is for ee
 * and tee"), rather than by getopt as unknown. */
typedef struct {
  const char *names[MAX_NAMES];
  bool is_switch[MAX_NAMES];
  int n;
} library_names;

static void add_name(library_names *ln, const char *name, bool is_switch) {
  for (int i = 0; i < ln->n; i++)
    if (!strcmp(ln->names[i], name)) return;
  if (ln->n < MAX_NAMES) {
    ln->names[ln->n] = name;
    ln->is_switch[ln->n++] = is_switch;
  }
}

static void collect_names(library_names *ln) {
  ln->n = 0;
  nle_option_info info;
  for (int i = 0; nle_estimator_any_option(i); i++)
    if (!nle_estimator_option_info(NULL, nle_estimator_any_option(i), &info)) {
      add_name(ln, info.name, !strcmp(info.kind, "switch"));
      if (info.alias) add_name(ln, info.alias, !strcmp(info.kind, "switch"));
    }
}

/* getopt's tables: the tool's rows, the library's names, the common
 * options; short forms from the rows. */
static void getopt_tables(const nle_estimator *e, const library_names *ln, struct option *longopts, char *shortopts) {
  size_t n = 0;
  strcpy(shortopts, "o:");
  /* a tool's row that applies reads its name; one that does not yields it
   * to a library option of that name (kem's --weights) */
  for (int t = 0; t < T_COUNT; t++) {
    bool named_elsewhere = false;
    for (int i = 0; i < ln->n && !named_elsewhere; i++) named_elsewhere = !strcmp(ln->names[i], tool_rows[t].name);
    for (int u = 0; u < T_COUNT && !named_elsewhere; u++)
      named_elsewhere = u != t && !strcmp(tool_rows[u].name, tool_rows[t].name) && tool_applies(e, u);
    if (tool_applies(e, t) || !named_elsewhere)
      longopts[n++] = (struct option){tool_rows[t].name, required_argument, 0, KEY_TOOL + t};
  }
  for (int i = 0; i < ln->n; i++) {
    int t = 0;
    while (t < T_COUNT && (strcmp(ln->names[i], tool_rows[t].name) || !tool_applies(e, t))) t++;
    if (t == T_COUNT)
      longopts[n++] = (struct option){ln->names[i], ln->is_switch[i] ? no_argument : required_argument, 0, KEY_LIBRARY + i};
  }
  /* the one-letter forms of the family's rows, taken by this method or not
   * (cluster's -d is refused with what to give instead) */
  for (int i = 0; i < ln->n; i++) {
    nle_option_info info;
    if (nle_estimator_option_info(e, ln->names[i], &info) || !info.short_name ||
        strchr(shortopts, info.short_name))
      continue;
    size_t l = strlen(shortopts);
    shortopts[l] = info.short_name;
    shortopts[l + 1] = ':';
    shortopts[l + 2] = '\0';
  }
  static const struct option common[] = {CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  for (size_t i = 0; i < sizeof common / sizeof *common; i++) longopts[n++] = common[i];
}

/* The command's --help, from the rows. */
static char *help_text(const nle_estimator *e) {
  size_t cap = 1 << 16, used = 0;
  char *help = malloc(cap);
  if (!help) return NULL;
  const char *m = nle_estimator_method(e);
  used += (size_t)snprintf(help, cap, "Usage: nlembed %s [options] INPUT -o OUTPUT\n", m);
  if (tool_applies(e, T_AFFINITIES))
    used += (size_t)snprintf(help + used, cap - used, "       nlembed %s [options] --affinities W.mtx [INPUT] -o OUTPUT\n", m);
  used += (size_t)snprintf(help + used, cap - used,
                           "\n%s\n\nOptions (auto: chosen from N, D and the method; every choice is printed in the\n"
                           "JSON line on stdout):\n",
                           nle_estimator_about(e));
  static const char *const output_help[NLE_MAKES_COUNT] = {
      [NLE_MAKES_EMBEDDING] = "the N x d embedding (.npy, .csv, ...)",
      [NLE_MAKES_LABELS] = "the N cluster labels (.npy, .csv, ...)",
      [NLE_MAKES_NEIGHBOURS] = "the graph (.mtx) or the N x k neighbour indices (.npy, .csv, ...)",
      [NLE_MAKES_WEIGHTS] = "the affinity matrix (.mtx)"};
  for (int t = 0; t < T_COUNT && used < cap; t++)
    if (tool_applies(e, t) && !method_takes(e, tool_rows[t].name))
      used += cli_help_line(help + used, cap - used, t == T_OUTPUT ? 'o' : 0, tool_rows[t].name, tool_rows[t].metavar,
                            t == T_OUTPUT ? output_help[nle_estimator_makes(e)] : tool_rows[t].help, NULL, NULL);
  for (int i = 0; nle_estimator_option(e, i) && used < cap; i++) {
    nle_option_info info;
    if (nle_estimator_option_info(e, nle_estimator_option(e, i), &info)) continue;
    bool sw = !strcmp(info.kind, "switch");
    /* a switch on by default is shown by its "no-" form */
    bool negated = sw && info.alias && !strncmp(info.alias, "no-", 3) && !strcmp(info.default_text, "true");
    if (!strcmp(info.name, "keep-model")) continue; /* the tool's --save-model sets it */
    char text[640];
    char also[80] = "";
    if (info.alias && !negated) snprintf(also, sizeof also, " (also --%s)", info.alias);
    snprintf(text, sizeof text, "%s%s%s%s", negated ? "off: " : "", info.help,
             !strcmp(info.name, "init") ? "; or an N x d start read from a FILE" : "", also);
    used += cli_help_line(help + used, cap - used, info.short_name, negated ? info.alias : info.name,
                          sw ? NULL : !strcmp(info.name, "init") ? "NAME|FILE" : info.metavar, text,
                          sw ? NULL : info.values, negated ? NULL : info.default_text);
  }
  if (used < cap) snprintf(help + used, cap - used, "\n%s", CLI_COMMON_HELP);
  return help;
}

/* A tool's option the command's method does not take: say whose it is
 * (the methods taking one of the library options `owners`). */
static int foreign_option(const char *command, const char *name, const char *owners) {
  char list[512];
  return cli_usage_error(command, "--%s is for %s", name, nle_estimator_methods_taking(owners, list, sizeof list));
}

/* The run's choices made by the command line. */
typedef struct {
  const char *tool[T_COUNT];
  const char *init_file;
  bool metric_named; /* --metric was given */
  int rc;
} fit_args;

/* One option of the command: the tool's own, or the library's by name. */
static void take_option(cli_env *env, nle_estimator *e, const library_names *ln, int c, const char *arg, fit_args *a) {
  const char *name = NULL;
  if (c == 'o') c = KEY_TOOL + T_OUTPUT;
  if (c >= KEY_TOOL && c < KEY_TOOL + T_COUNT) {
    if (!tool_applies(e, c - KEY_TOOL)) {
      const char *name = tool_rows[c - KEY_TOOL].name, *needs = tool_rows[c - KEY_TOOL].needs;
      a->rc = needs ? foreign_option(env->command, name, needs)
                    : cli_usage_error(env->command, "--%s is not for nlembed %s", name, env->command);
      return;
    }
    a->tool[c - KEY_TOOL] = arg;
    if (c == KEY_TOOL + T_DISTANCES) env->metric_given = true;
    if (c != KEY_TOOL + T_INIT) return;
    /* init: a name of the library's, else a file's start */
    if (method_takes(e, "init") && nle_estimator_set(e, "init", arg) == NLE_OK) return;
    a->init_file = arg;
    return;
  }
  if (c >= KEY_LIBRARY && c < KEY_LIBRARY + ln->n) name = ln->names[c - KEY_LIBRARY];
  for (int i = 0; !name && i < ln->n; i++) {
    nle_option_info info;
    if (!nle_estimator_option_info(e, ln->names[i], &info) && info.short_name == c) name = info.name;
  }
  if (!name) {
    a->rc = 2;
    return;
  }
  if (!strcmp(name, "metric")) env->metric_given = a->metric_named = true;
  nle_status s = nle_estimator_set(e, name, arg ? arg : "true");
  if (s) a->rc = cli_usage_fail(env, s, c > 0 && c < 128 ? (char)c : 0);
}

/* --trace: one CSV line per iteration; a homotopy's runs continue the count
 * and the clock; progress lines on stderr every 2 s. */
typedef struct {
  cli_env *env;
  FILE *file;
  bool lines;
  const char *prefix; /* --path-prefix */
  char error[1024];   /* a path file that could not be written */
  double seconds0, last_seconds, last_line;
  int iterations0, last_iteration, evaluations0, last_evaluations;
} run_observer;

static void on_iteration(void *user, int iteration, double seconds, double E, int evaluations, double step) {
  run_observer *t = user;
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

static int on_homotopy_step(void *user, int step, double lambda, const nle_matd *X, int iterations, double E) {
  run_observer *t = user;
  cli_note(t->env, "homotopy step %d: lambda %.4g, E %.6g, %d iterations", step + 1, lambda, E, iterations);
  if (!t->prefix) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s%03d.npy", t->prefix, step);
  if (nle_write_matd(t->env->ctx, path, X)) {
    snprintf(t->error, sizeof t->error, "%s", nle_ctx_error(t->env->ctx));
    return 1; /* stops the path; the error is reported after the fit */
  }
  return 0;
}

/* The data points go as soon as the library is done with them (the labels
 * stay, for --save-labels): at a million 784-d points that is 3 GB less
 * through the affinities and the optimisation. */
static void release_points(void *dataset) { nle_matf_free(&((nle_dataset *)dataset)->X); }

static bool is_mtx(const char *path) {
  size_t len = strlen(path);
  return len >= 4 && !strcmp(path + len - 4, ".mtx");
}

/* A kNN graph as a .mtx file, or as N x k indices (and its distances) in a
 * dense one: then every row must have k entries, which a sparse graph of
 * precomputed distances need not. 0, or the exit code after the error. */
static int write_neighbours(cli_env *env, const char *input, const nle_csr *g, const fit_args *a) {
  const char *out = a->tool[T_OUTPUT], *dist = a->tool[T_NEIGHBOUR_DISTANCES];
  int64_t k = g->rows ? g->rowptr[1] - g->rowptr[0] : 0, row = 0;
  while (row < g->rows && g->rowptr[row + 1] - g->rowptr[row] == k) row++;
  if (row < g->rows && (dist || !is_mtx(out))) {
    fprintf(stderr, "nlembed %s: error: %s: row %lld of the distance graph has %lld neighbours, row 1 %lld: rows of "
            "different lengths go to a .mtx output only\n", env->command, input, (long long)row + 1,
            (long long)(g->rowptr[row + 1] - g->rowptr[row]), (long long)k);
    return 1;
  }
  nle_status s = is_mtx(out) ? nle_write_csr_mtx(env->ctx, out, g) : nle_write_mati32(env->ctx, out, g->colind, g->rows, (int)k);
  nle_matf distances = {(size_t)g->rows, (size_t)k, g->val};
  if (!s && dist) s = nle_write_matf(env->ctx, dist, &distances);
  return s ? cli_fail(env, s) : 0;
}

/* What the method made: the embedding (or a clustering's labels), or a
 * graph and the betas of entropic affinities. 0, or the exit code. */
static int write_product(cli_env *env, nle_estimator *e, const char *input, const fit_args *a) {
  size_t n = 0;
  const int32_t *labels = nle_estimator_labels(e, &n);
  nle_status s;
  switch (nle_estimator_makes(e)) {
  case NLE_MAKES_NEIGHBOURS: return write_neighbours(env, input, nle_estimator_graph(e), a);
  case NLE_MAKES_WEIGHTS: {
    nle_matd betas = {0, 1, NULL};
    betas.data = (double *)nle_estimator_betas(e, &betas.rows);
    s = nle_write_csr_mtx(env->ctx, a->tool[T_OUTPUT], nle_estimator_graph(e));
    if (!s && a->tool[T_BETAS]) s = nle_write_matd(env->ctx, a->tool[T_BETAS], &betas);
    break;
  }
  case NLE_MAKES_LABELS: s = nle_write_labels(env->ctx, a->tool[T_OUTPUT], labels, (int64_t)n); break;
  default: s = nle_write_matd(env->ctx, a->tool[T_OUTPUT], nle_estimator_embedding(e)); break;
  }
  return s ? cli_fail(env, s) : 0;
}

/* The points of the fit (INPUT's are released by now): a clustering's
 * labels (a sweep makes no embedding), the embedding's or the graph's rows. */
static size_t points_fitted(const nle_estimator *e) {
  size_t n = 0;
  const nle_matd *X = nle_estimator_embedding(e);
  const nle_csr *G = nle_estimator_graph(e);
  if (nle_estimator_labels(e, &n)) return n;
  return X ? X->rows : G ? (size_t)G->rows : 0;
}

/* The product, the model and the labels, committed together. */
static int write_outputs(cli_env *env, nle_estimator *e, const nle_dataset *ds, const char *input, const fit_args *a) {
  int rc = write_product(env, e, input, a);
  nle_status s = NLE_OK;
  if (!rc && a->tool[T_SAVE_MODEL]) s = nle_estimator_save(e, a->tool[T_SAVE_MODEL]);
  if (!rc && !s && a->tool[T_SAVE_LABELS])
    s = nle_write_labels_named(env->ctx, a->tool[T_SAVE_LABELS], ds->labels, (int64_t)points_fitted(e),
                               ds->class_names, ds->n_classes);
  if (s) rc = cli_fail(env, s);
  return rc ? rc : cli_commit(env); /* every output of the run, or none */
}

/* Every output path before any work: a kNN graph goes to .mtx or as
 * indices to a dense file, weights to .mtx only. */
static nle_status check_outputs(cli_env *env, nle_estimator *e, const fit_args *a) {
  static const unsigned formats[NLE_MAKES_COUNT] = {
      [NLE_MAKES_EMBEDDING] = NLE_OUTPUT_DENSE, [NLE_MAKES_LABELS] = NLE_OUTPUT_DENSE,
      [NLE_MAKES_NEIGHBOURS] = NLE_OUTPUT_DENSE | NLE_OUTPUT_MTX, [NLE_MAKES_WEIGHTS] = NLE_OUTPUT_MTX};
  nle_status s = nle_check_output(env->ctx, a->tool[T_OUTPUT], formats[nle_estimator_makes(e)]);
  for (int t = T_NEIGHBOUR_DISTANCES; t <= T_BETAS; t++)
    if (!s && a->tool[t]) s = nle_check_output(env->ctx, a->tool[t], NLE_OUTPUT_DENSE);
  if (!s && a->tool[T_SAVE_LABELS]) s = nle_check_output(env->ctx, a->tool[T_SAVE_LABELS], NLE_OUTPUT_DENSE);
  if (!s && a->tool[T_SAVE_MODEL]) s = nle_check_output(env->ctx, a->tool[T_SAVE_MODEL], 0);
  if (!s && a->tool[T_PATH_PREFIX]) {
    char first[4096];
    snprintf(first, sizeof first, "%s%03d.npy", a->tool[T_PATH_PREFIX], 0);
    s = nle_check_output(env->ctx, first, NLE_OUTPUT_DENSE);
  }
  return s;
}

/* What the run reads: INPUT (points, sparse rows, a matrix), W+ of
 * --affinities, the start of --init FILE, the weights of --weights. */
typedef struct {
  nle_dataset *ds;
  nle_csr *A, *knn;
  nle_matd *X0, *W;
} fit_inputs;

static void fit_inputs_free(fit_inputs *in) {
  nle_matd_free(&in->X0);
  nle_matd_free(&in->W);
  nle_csr_free(&in->A);
  nle_csr_free(&in->knn);
  nle_dataset_free(&in->ds);
}

/* A dense matrix of a tool's option, read as doubles. */
static int read_matrix(cli_env *env, const char *file, nle_matd **M) {
  nle_status s = cli_load_embedding(env, file, M);
  return s ? cli_fail_in(env, s, file) : 0;
}

/* W of --affinities (Matrix Market, or any dense input made sparse), or
 * the kNN graph of --knn (squared distances, as nlembed knn writes it). */
static nle_status read_graph(cli_env *env, const char *file, bool knn, fit_inputs *in) {
  size_t len = strlen(file);
  nle_status s;
  if (len > 4 && !strcmp(file + len - 4, ".mtx")) {
    nle_csr *G = NULL;
    s = nle_read_csr_mtx(env->ctx, file, &G);
    if (!s && knn) s = nle_knn_from_sparse_distances(env->ctx, G, true, &in->knn);
    if (knn) nle_csr_free(&G);
    else in->A = G;
  } else {
    nle_dataset *dense = NULL;
    s = cli_load(env, file, &dense);
    if (!s) s = nle_csr_from_dense(env->ctx, dense->X, &in->A);
    nle_dataset_free(&dense);
  }
  return s;
}

/* Reads every input; 0, or the exit code after the error. */
static int read_inputs(cli_env *env, nle_estimator *e, const char *input, const fit_args *a, fit_inputs *in) {
  env->read.sparse_ok = nle_estimator_takes_sparse(e); /* else densified under the memory cap */
  nle_status s = input ? cli_load(env, input, &in->ds) : NLE_OK;
  if (s) return cli_fail_in(env, s, input);
  const nle_dataset *ds = in->ds;
  if (ds && ds->X && !env->metric_given && !a->tool[T_KERNEL_MATRIX] && nle_looks_like_distances(ds->X)) {
    fprintf(stderr,
            "nlembed %s: error: %s is a %zu x %zu symmetric matrix with a zero diagonal: give --metric precomputed "
            "to use it as distances, or --metric euclidean to use its rows as points\n",
            env->command, input, ds->X->rows, ds->X->cols);
    return 1;
  }
  if (ds && nle_estimator_needs_labels(e) && !ds->labels)
    return cli_usage_error(env->command, "%s has no labels: give them with --labels SOURCE", input);
  if (a->tool[T_SAVE_LABELS] && !ds->labels)
    return cli_usage_error(env->command, "%s has no labels to save (give them with --labels)", input);
  if (a->tool[T_AFFINITIES] || a->tool[T_KNN]) {
    s = read_graph(env, a->tool[T_AFFINITIES] ? a->tool[T_AFFINITIES] : a->tool[T_KNN], a->tool[T_KNN] != NULL, in);
    if (s) return cli_fail_in(env, s, a->tool[T_AFFINITIES] ? a->tool[T_AFFINITIES] : a->tool[T_KNN]);
  }
  if (a->tool[T_WEIGHTS] && read_matrix(env, a->tool[T_WEIGHTS], &in->W)) return 1;
  if (!a->init_file) return 0;
  if (read_matrix(env, a->init_file, &in->X0)) return 1;
  char dim[32];
  nle_estimator_get(e, "dim", dim, sizeof dim);
  size_t n = ds ? (ds->X ? ds->X->rows : (size_t)ds->sparse->rows) : in->A ? (size_t)in->A->rows : 0;
  if (in->X0->rows != n || in->X0->cols != (size_t)atoi(dim)) {
    fprintf(stderr, "nlembed %s: error: %s: initial X must be %zu x %s, not %zu x %zu\n", env->command, a->init_file,
            n, dim, in->X0->rows, in->X0->cols);
    return 1;
  }
  return 0;
}

/* A fit's error about one of the inputs names its file: the library names
 * the matrix by what it is ("dissimilarities", "weights", "labels"). */
static int fit_failed(cli_env *env, nle_status s, const char *input, const fit_args *a) {
  static const struct {
    const char *starts;
    int tool; /* T_COUNT: INPUT */
  } named[] = {{"dissimilarities", T_COUNT}, {"kernel matrix", T_COUNT}, {"weights", T_WEIGHTS}, {"labels:", -1},
               {"affinities:", T_AFFINITIES}, {"distance matrix", T_COUNT}};
  const char *msg = nle_ctx_error(env->ctx);
  for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
    if (strncmp(msg, named[i].starts, strlen(named[i].starts))) continue;
    const char *file = named[i].tool == T_COUNT ? input
                       : named[i].tool < 0       ? (env->labels_source ? env->labels_source : input)
                                                 : a->tool[named[i].tool];
    if (file) return cli_fail_in(env, s, file);
  }
  return cli_fail(env, s);
}

/* Fits, then writes every output (committed together). */
static int run_fit(cli_env *env, nle_estimator *e, const char *input, const fit_args *a) {
  fit_inputs in = {0};
  double t_read = nle_time_seconds();
  int rc = read_inputs(env, e, input, a, &in);
  t_read = nle_time_seconds() - t_read;
  nle_dataset *ds = in.ds;
  run_observer ob = {.env = env, .prefix = a->tool[T_PATH_PREFIX],
                     .lines = !env->quiet && (env->verbosity > 0 || !isatty(STDERR_FILENO))};
  if (!rc && a->tool[T_TRACE] && !cli_quiet_rank()) { /* under mpirun: rank 0's */
    ob.file = fopen(a->tool[T_TRACE], "w");
    if (!ob.file) {
      fprintf(stderr, "nlembed %s: error: %s: cannot write the trace\n", env->command, a->tool[T_TRACE]);
      rc = 1;
    } else {
      fputs("iteration,seconds,E,evaluations\n", ob.file);
    }
  }
  /* a fixed-rate run computes E only for what is shown: every iteration
   * for a --trace file, every 25th for the progress lines */
  nle_estimator_observer observer = {.iteration = a->tool[T_TRACE] || ob.lines ? on_iteration : NULL,
                                     .energy_every = a->tool[T_TRACE] ? 1 : 25, .homotopy_step = on_homotopy_step,
                                     .user = &ob}; /* the same on every rank (E may be a collective) */
  nle_estimator_observe(e, &observer);
  char checkpoint[8] = "", resume[8] = "";
  nle_estimator_get(e, "checkpoint", checkpoint, sizeof checkpoint);
  nle_estimator_get(e, "resume", resume, sizeof resume);
  if (*checkpoint || *resume) cli_catch_interrupts();
  nle_status s = NLE_OK;
  if (!rc) {
    nle_estimator_input fi = {.Y = ds ? ds->X : NULL, .sparse = ds ? ds->sparse : NULL, .source = input,
                              .init = in.X0, .weights = in.W, .affinities = in.A, .knn = in.knn,
                              .labels = ds ? ds->labels : NULL,
                              .release_Y = ds && ds->X ? release_points : NULL, .release_user = ds};
    s = nle_estimator_fit(e, &fi);
    if (s < 0) rc = fit_failed(env, s, input, a);
    if (s > 0) cli_note(env, "%s", nle_ctx_error(env->ctx));
    s = NLE_OK;
    if (!rc && ob.error[0]) {
      fprintf(stderr, "nlembed %s: error: %s\n", env->command, ob.error);
      rc = 1;
    }
  }
  if (!rc) rc = write_outputs(env, e, ds, input, a);
  if (!rc) {
    char source[1200];
    cli_json_escape(ds ? ds->name : input, source, sizeof source);
    printf("{\"command\": \"%s\", \"input\": \"%s\", \"ranks\": %d, \"read_seconds\": %.3f, %s\n", env->command, source,
           cli_ranks(), t_read, nle_estimator_report_flat(e) + 1);
    char summary[256] = "";
    cli_json_string(nle_estimator_report(e), "summary", summary, sizeof summary);
    cli_note(env, "%s; wrote %s", summary, a->tool[T_OUTPUT]);
  }
  if (ob.file) fclose(ob.file);
  fit_inputs_free(&in);
  return rc;
}

/* INPUT, or the matrix a tool's option names instead (--distances,
 * --kernel-matrix; none with --affinities), and what the outputs need of
 * it. 0, or the usage error's exit code. */
static int the_input(cli_env *env, nle_estimator *e, int n_inputs, char **inputs, fit_args *a, const char **input) {
  const char *method = env->command, *matrix = a->tool[T_DISTANCES] ? a->tool[T_DISTANCES] : a->tool[T_KERNEL_MATRIX];
  const char *graph = a->tool[T_AFFINITIES] ? "--affinities" : a->tool[T_KNN] ? "--knn" : NULL;
  if ((a->tool[T_AFFINITIES] != NULL) + (a->tool[T_DISTANCES] != NULL) + (a->tool[T_KNN] != NULL) > 1)
    return cli_usage_error(method, "give one of --affinities, --distances and --knn");
  if (a->tool[T_DISTANCES] && a->metric_named) return cli_usage_error(method, "give one of --metric and --distances");
  if (graph && a->metric_named)
    return cli_usage_error(method, "--metric reads INPUT; --affinities, --distances and --knn are read as they are");
  const char *knn = a->tool[T_KNN];
  if (knn && !(strlen(knn) > 4 && !strcmp(knn + strlen(knn) - 4, ".mtx")))
    return cli_usage_error(method, "--knn takes a Matrix Market graph (.mtx) as nlembed knn writes it");
  if (matrix && n_inputs)
    return cli_usage_error(method, "expected no INPUT with --%s, got %d",
                           a->tool[T_DISTANCES] ? "distances" : "kernel-matrix", n_inputs);
  if (!matrix && !(n_inputs == 1 || (graph && n_inputs == 0)))
    return cli_usage_error(method, "expected one INPUT%s, got %d", graph ? " or none" : "", n_inputs);
  *input = matrix ? matrix : n_inputs ? inputs[0] : NULL;
  if (a->tool[T_DISTANCES]) nle_estimator_set(e, "metric", "precomputed");
  if (a->tool[T_KERNEL_MATRIX]) nle_estimator_set(e, "kernel", "precomputed");
  if (!*input && (a->tool[T_SAVE_MODEL] || a->tool[T_SAVE_LABELS]))
    return cli_usage_error(method, "--%s needs the INPUT data", a->tool[T_SAVE_MODEL] ? "save-model" : "save-labels");
  if (matrix && a->tool[T_SAVE_MODEL])
    return cli_usage_error(method, "--save-model needs the INPUT points (new points are mapped from their coordinates)");
  if (!a->tool[T_OUTPUT]) return cli_usage_error(method, "no output file (-o FILE)");
  char kind[32] = "";
  if (a->tool[T_BETAS] && (nle_estimator_get(e, "kind", kind, sizeof kind) || strcmp(kind, "entropic")))
    return cli_usage_error(method, "--betas goes with --kind entropic");
  if (a->tool[T_SAVE_MODEL]) nle_estimator_set(e, "keep-model", "true");
  return 0;
}

/* Under mpirun on more than one rank: a method whose stages do not take
 * rows yet (the library's table says which), and outputs that are not
 * written by rows yet, refused before any work (docs/mpi.md). */
static int refuse_on_ranks(cli_env *env, const nle_estimator *e, const fit_args *a) {
  if (cli_ranks() <= 1) return 0;
  if (!nle_estimator_runs_distributed(e))
    return cli_usage_error(env->command, "%s does not run on more than one rank yet (docs/mpi.md)", env->command);
  if (a->tool[T_SAVE_MODEL]) return cli_usage_error(env->command, "--save-model does not run on more than one rank yet");
  return 0;
}

int cmd_fit(int argc, char **argv, const char *method) {
  cli_env env;
  if (cli_env_init(&env, method, NULL)) return 1;
  nle_ctx_set_option_spelling(env.ctx, NLE_SPELL_MARKED); /* cli_spell renders them: --save-model sets keep-model */
  nle_estimator *e = NULL;
  library_names ln;
  nle_status s = nle_estimator_new(env.ctx, method, &e);
  if (s) {
    int rc = cli_fail(&env, s);
    cli_env_free(&env);
    return rc;
  }
  collect_names(&ln);
  nle_estimator_set(e, "keep-model", "false"); /* --save-model sets it */
  char *help = help_text(e);
  env.help = help ? help : "";
  static struct option longopts[T_COUNT + MAX_NAMES + 20];
  char shortopts[32];
  getopt_tables(e, &ln, longopts, shortopts);
  fit_args a = {0};
  int c;
  while (!a.rc && (c = cli_next_option(&env, argc, argv, shortopts, longopts)) != -1) {
    take_option(&env, e, &ln, c, optarg, &a);
  }
  int rc = env.rc ? env.rc : a.rc;
  const char *input = NULL;
  if (!rc && !env.help_shown) rc = refuse_on_ranks(&env, e, &a);
  if (!rc && !env.help_shown) rc = the_input(&env, e, argc - optind, argv + optind, &a, &input);
  if (!rc && !env.help_shown) {
    s = check_outputs(&env, e, &a);
    rc = s ? cli_fail(&env, s) : run_fit(&env, e, input, &a);
  }
  nle_estimator_free(&e);
  free(help);
  cli_env_free(&env);
  return rc;
}
