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
typedef enum { T_OUTPUT, T_SAVE_MODEL, T_SAVE_LABELS, T_AFFINITIES, T_INIT, T_TRACE, T_PATH_PREFIX, T_COUNT } tool_key;

static const struct {
  const char *name, *metavar, *help;
} tool_rows[T_COUNT] = {
    [T_OUTPUT] = {"output", "FILE", "the N x d embedding (.npy, .csv, ...)"},
    [T_SAVE_MODEL] = {"save-model", "FILE", "also write the model for `nlembed transform` (sets keep-model)"},
    [T_SAVE_LABELS] = {"save-labels", "FILE", "also write the dataset's labels: class names one a line in .txt/.csv, "
                                              "integer codes in .npy"},
    [T_AFFINITIES] = {"affinities", "FILE", "W+ given as an N x N Matrix Market file (e.g. from `nlembed affinity`) "
                                            "instead of built from INPUT, which is then optional"},
    [T_INIT] = {"init", "NAME|FILE", NULL}, /* the library's init row, or an N x d start read from FILE */
    [T_TRACE] = {"trace", "FILE", "write 'iteration,seconds,E,evaluations' per iteration"},
    [T_PATH_PREFIX] = {"path-prefix", "P", "write X after every homotopy step to P000.npy, P001.npy, ..."},
};

enum { KEY_TOOL = OPT_COMMAND_BASE, KEY_LIBRARY = OPT_COMMAND_BASE + 100, MAX_NAMES = 400 };

/* Every option name of every method (and every alias), so that an option of
 * another method is refused by name ("--wneg is for ee and tee") rather
 * than as unknown. */
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

static void collect_names(nle_ctx *ctx, library_names *ln) {
  ln->n = 0;
  for (int m = 0; nle_estimator_method_name(m); m++) {
    nle_estimator *e = NULL;
    if (nle_estimator_new(ctx, nle_estimator_method_name(m), &e)) continue;
    for (int i = 0; nle_estimator_option(e, i); i++) {
      nle_option_info info;
      if (nle_estimator_option_info(e, nle_estimator_option(e, i), &info)) continue;
      bool sw = !strcmp(info.kind, "switch");
      add_name(ln, info.name, sw);
      if (info.alias) add_name(ln, info.alias, sw);
    }
    nle_estimator_free(&e);
  }
}

/* getopt's tables: the tool's rows, the library's names, the common
 * options; short forms from the rows. */
static void getopt_tables(const nle_estimator *e, const library_names *ln, struct option *longopts, char *shortopts) {
  size_t n = 0;
  strcpy(shortopts, "o:");
  for (int t = 0; t < T_COUNT; t++)
    longopts[n++] = (struct option){tool_rows[t].name, required_argument, 0, KEY_TOOL + t};
  for (int i = 0; i < ln->n; i++) {
    if (!strcmp(ln->names[i], "init")) continue; /* the tool's row reads it */
    longopts[n++] = (struct option){ln->names[i], ln->is_switch[i] ? no_argument : required_argument, 0, KEY_LIBRARY + i};
  }
  for (int i = 0; nle_estimator_option(e, i); i++) {
    nle_option_info info;
    if (nle_estimator_option_info(e, nle_estimator_option(e, i), &info) || !info.short_name) continue;
    size_t l = strlen(shortopts);
    shortopts[l] = info.short_name;
    shortopts[l + 1] = ':';
    shortopts[l + 2] = '\0';
  }
  static const struct option common[] = {CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  for (size_t i = 0; i < sizeof common / sizeof *common; i++) longopts[n++] = common[i];
}

/* One --help line: "  -d, --dim N          help (default 2; values)". */
static size_t help_line(char *buf, size_t cap, char short_name, const char *name, const char *metavar, const char *help,
                        const char *values, const char *def) {
  char head[64];
  if (short_name) snprintf(head, sizeof head, "-%c, --%s%s%s", short_name, name, metavar ? " " : "", metavar ? metavar : "");
  else snprintf(head, sizeof head, "--%s%s%s", name, metavar ? " " : "", metavar ? metavar : "");
  char tail[640] = "";
  if (def && *def && values && *values) snprintf(tail, sizeof tail, " (default %s; %s)", def, values);
  else if (def && *def) snprintf(tail, sizeof tail, " (default %s)", def);
  else if (values && *values) snprintf(tail, sizeof tail, " (%s)", values);
  int w = snprintf(buf, cap, "  %-22s %s%s\n", head, help, tail);
  return w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap;
}

/* The command's --help, from the rows. */
static char *help_text(const nle_estimator *e) {
  size_t cap = 1 << 16, used = 0;
  char *help = malloc(cap);
  if (!help) return NULL;
  const char *m = nle_estimator_method(e);
  used += (size_t)snprintf(help, cap,
                           "Usage: nlembed %s [options] INPUT -o OUTPUT\n"
                           "       nlembed %s [options] --affinities W.mtx [INPUT] -o OUTPUT\n\n"
                           "Options (auto: chosen from N, D and the method; every choice is printed in the\n"
                           "JSON line on stdout):\n",
                           m, m);
  for (int t = 0; t < T_COUNT && used < cap; t++)
    if (tool_rows[t].help)
      used += help_line(help + used, cap - used, t == T_OUTPUT ? 'o' : 0, tool_rows[t].name, tool_rows[t].metavar,
                        tool_rows[t].help, NULL, NULL);
  for (int i = 0; nle_estimator_option(e, i) && used < cap; i++) {
    nle_option_info info;
    if (nle_estimator_option_info(e, nle_estimator_option(e, i), &info)) continue;
    bool sw = !strcmp(info.kind, "switch");
    /* a switch on by default is shown by its "no-" form */
    bool negated = sw && info.alias && !strncmp(info.alias, "no-", 3) && !strcmp(info.default_text, "true");
    char text[640];
    snprintf(text, sizeof text, "%s%s", info.help, !strcmp(info.name, "init") ? "; or an N x d start read from a FILE" : "");
    used += help_line(help + used, cap - used, info.short_name, negated ? info.alias : info.name,
                      sw ? NULL : !strcmp(info.name, "init") ? "NAME|FILE" : info.metavar, text,
                      sw ? NULL : info.values, negated ? NULL : info.default_text);
  }
  if (used < cap) snprintf(help + used, cap - used, "\n%s", CLI_COMMON_HELP);
  return help;
}

/* An option of no method of this command's family: say whose it is. */
static int foreign_option(const char *command, nle_ctx *ctx, const char *name) {
  char list[256] = "";
  size_t used = 0;
  for (int m = 0; nle_estimator_method_name(m) && used < sizeof list; m++) {
    nle_estimator *e = NULL;
    nle_option_info info;
    if (nle_estimator_new(ctx, nle_estimator_method_name(m), &e)) continue;
    if (!nle_estimator_option_info(e, name, &info) && info.taken)
      used += (size_t)snprintf(list + used, sizeof list - used, "%snlembed %s", used ? ", " : "",
                               nle_estimator_method_name(m));
    nle_estimator_free(&e);
  }
  return cli_usage_error(command, "--%s is for %s", name, list);
}

/* The run's choices made by the command line. */
typedef struct {
  const char *tool[T_COUNT];
  const char *init_file;
  int rc;
} fit_args;

/* One option of the command: the tool's own, or the library's by name. */
static void take_option(cli_env *env, nle_estimator *e, const library_names *ln, int c, const char *arg, fit_args *a) {
  const char *name = NULL;
  if (c == 'o') c = KEY_TOOL + T_OUTPUT;
  if (c >= KEY_TOOL && c < KEY_TOOL + T_COUNT) {
    a->tool[c - KEY_TOOL] = arg;
    if (c != KEY_TOOL + T_INIT) return;
    /* init: a name of the library's, else a file's start */
    if (nle_estimator_set(e, "init", arg) == NLE_OK) return;
    a->init_file = arg;
    return;
  }
  if (c >= KEY_LIBRARY && c < KEY_LIBRARY + ln->n) name = ln->names[c - KEY_LIBRARY];
  for (int i = 0; !name && nle_estimator_option(e, i); i++) {
    nle_option_info info;
    if (!nle_estimator_option_info(e, nle_estimator_option(e, i), &info) && info.short_name == c) name = info.name;
  }
  if (!name) {
    a->rc = 2;
    return;
  }
  nle_option_info info;
  if (nle_estimator_option_info(e, name, &info)) {
    a->rc = foreign_option(env->command, env->ctx, name);
    return;
  }
  if (!strcmp(name, "metric")) env->metric_given = true;
  nle_status s = nle_estimator_set(e, name, arg ? arg : "true");
  if (s) a->rc = cli_usage_fail(env, s);
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

/* Every output path before any work. */
static nle_status check_outputs(cli_env *env, const fit_args *a) {
  nle_status s = nle_check_output(env->ctx, a->tool[T_OUTPUT], NLE_OUTPUT_DENSE);
  if (!s && a->tool[T_SAVE_LABELS]) s = nle_check_output(env->ctx, a->tool[T_SAVE_LABELS], NLE_OUTPUT_DENSE);
  if (!s && a->tool[T_SAVE_MODEL]) s = nle_check_output(env->ctx, a->tool[T_SAVE_MODEL], 0);
  if (!s && a->tool[T_PATH_PREFIX]) {
    char first[4096];
    snprintf(first, sizeof first, "%s%03d.npy", a->tool[T_PATH_PREFIX], 0);
    s = nle_check_output(env->ctx, first, NLE_OUTPUT_DENSE);
  }
  return s;
}

/* The inputs: INPUT (points, sparse rows, distances), --affinities, the
 * start of --init FILE. 0, or the exit code after the error. */
static int read_inputs(cli_env *env, nle_estimator *e, const char *input, const fit_args *a, nle_dataset **ds,
                       nle_csr **A, nle_matd **X0) {
  env->read.sparse_ok = true;
  nle_status s = input ? cli_load(env, input, ds) : NLE_OK;
  if (s) return cli_fail_in(env, s, input);
  char metric[32];
  nle_estimator_get(e, "metric", metric, sizeof metric);
  if (*ds && (*ds)->X && !env->metric_given && nle_looks_like_distances((*ds)->X)) {
    fprintf(stderr,
            "nlembed %s: error: %s is a %zu x %zu symmetric matrix with a zero diagonal: give --metric precomputed "
            "to use it as distances, or --metric euclidean to embed its rows as points\n",
            env->command, input, (*ds)->X->rows, (*ds)->X->cols);
    return 1;
  }
  if (a->tool[T_AFFINITIES]) {
    s = nle_read_csr_mtx(env->ctx, a->tool[T_AFFINITIES], A);
    if (!s && (*A)->rows == (*A)->cols) s = nle_affinity_check(env->ctx, *A);
    if (s) return cli_fail_in(env, s, a->tool[T_AFFINITIES]);
  }
  if (a->init_file) {
    s = cli_load_embedding(env, a->init_file, X0);
    if (s) return cli_fail_in(env, s, a->init_file);
    char dim[32];
    nle_estimator_get(e, "dim", dim, sizeof dim);
    size_t n = *ds ? ((*ds)->X ? (*ds)->X->rows : (size_t)(*ds)->sparse->rows) : *A ? (size_t)(*A)->rows : 0;
    if ((*X0)->rows != n || (*X0)->cols != (size_t)atoi(dim)) {
      fprintf(stderr, "nlembed %s: error: %s: initial X must be %zu x %s, not %zu x %zu\n", env->command,
              a->init_file, n, dim, (*X0)->rows, (*X0)->cols);
      return 1;
    }
  }
  if (a->tool[T_SAVE_LABELS] && !(*ds)->labels)
    return cli_usage_error(env->command, "%s has no labels to save (give them with --labels)", input);
  return 0;
}

/* Fits, then writes every output (committed together). */
static int run_fit(cli_env *env, nle_estimator *e, const char *input, const fit_args *a) {
  nle_dataset *ds = NULL;
  nle_csr *A = NULL;
  nle_matd *X0 = NULL;
  double t_read = nle_time_seconds();
  int rc = read_inputs(env, e, input, a, &ds, &A, &X0);
  t_read = nle_time_seconds() - t_read;
  run_observer ob = {.env = env, .prefix = a->tool[T_PATH_PREFIX],
                     .lines = !env->quiet && (env->verbosity > 0 || !isatty(STDERR_FILENO))};
  if (!rc && a->tool[T_TRACE]) {
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
  nle_estimator_observer observer = {.iteration = ob.file || ob.lines ? on_iteration : NULL,
                                     .energy_every = ob.file ? 1 : 25, .homotopy_step = on_homotopy_step, .user = &ob};
  nle_estimator_observe(e, &observer);
  char checkpoint[8] = "", resume[8] = "";
  nle_estimator_get(e, "checkpoint", checkpoint, sizeof checkpoint);
  nle_estimator_get(e, "resume", resume, sizeof resume);
  if (*checkpoint || *resume) cli_catch_interrupts();
  nle_status s = NLE_OK;
  if (!rc) {
    nle_estimator_input in = {.Y = ds ? ds->X : NULL, .sparse = ds ? ds->sparse : NULL, .source = input, .init = X0,
                              .affinities = A, .labels = ds ? ds->labels : NULL,
                              .release_Y = ds && ds->X ? release_points : NULL, .release_user = ds};
    s = nle_estimator_fit(e, &in);
    if (s > 0) cli_note(env, "%s", nle_ctx_error(env->ctx));
    if (s > 0) s = NLE_OK;
    if (!s && ob.error[0]) {
      fprintf(stderr, "nlembed %s: error: %s\n", env->command, ob.error);
      rc = 1;
    }
  }
  if (!rc && !s) s = nle_write_matd(env->ctx, a->tool[T_OUTPUT], nle_estimator_embedding(e));
  if (!rc && !s && a->tool[T_SAVE_MODEL]) s = nle_estimator_save(e, a->tool[T_SAVE_MODEL]);
  if (!rc && !s && a->tool[T_SAVE_LABELS])
    s = nle_write_labels_named(env->ctx, a->tool[T_SAVE_LABELS], ds->labels, (int64_t)nle_estimator_embedding(e)->rows,
                               ds->class_names, ds->n_classes);
  if (!rc && s) rc = cli_fail(env, s);
  if (!rc) rc = cli_commit(env); /* every output of the run, or none */
  if (!rc) {
    char source[1200];
    cli_json_escape(ds ? ds->name : input, source, sizeof source);
    printf("{\"command\": \"%s\", \"input\": \"%s\", \"read_seconds\": %.3f, %s\n", env->command, source, t_read,
           nle_estimator_report_flat(e) + 1);
    char summary[256] = "";
    cli_json_string(nle_estimator_report(e), "summary", summary, sizeof summary);
    cli_note(env, "%s; wrote %s", summary, a->tool[T_OUTPUT]);
  }
  if (ob.file) fclose(ob.file);
  nle_matd_free(&X0);
  nle_csr_free(&A);
  nle_dataset_free(&ds);
  return rc;
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
  collect_names(env.ctx, &ln);
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
  int n_inputs = argc - optind;
  if (!rc && !env.help_shown && !(n_inputs == 1 || (a.tool[T_AFFINITIES] && n_inputs == 0)))
    rc = cli_usage_error(method, "expected one INPUT%s, got %d", a.tool[T_AFFINITIES] ? " or none" : "", n_inputs);
  if (!rc && !env.help_shown && !n_inputs && (a.tool[T_SAVE_MODEL] || a.tool[T_SAVE_LABELS]))
    rc = cli_usage_error(method, "--save-model and --save-labels need the INPUT data");
  if (!rc && !env.help_shown && !a.tool[T_OUTPUT]) rc = cli_usage_error(method, "no output file (-o FILE)");
  if (!rc && !env.help_shown && a.tool[T_SAVE_MODEL]) nle_estimator_set(e, "keep-model", "true");
  if (!rc && !env.help_shown) {
    s = check_outputs(&env, &a);
    rc = s ? cli_fail(&env, s) : run_fit(&env, e, n_inputs ? argv[optind] : NULL, &a);
  }
  nle_estimator_free(&e);
  free(help);
  cli_env_free(&env);
  return rc;
}
