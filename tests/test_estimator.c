/* test_estimator.c — the by-name estimator (include/nlembed/estimator.h)
 * against the front doors it wraps: the same options give the same bits
 * as nle_embed and nle_spectral_embed called directly; every option's text
 * reads back as set; every option row is spelt alike by the estimator and
 * the tool (--help, parsing), and no two names differ by a plural or a
 * '-' unawares; PCA's reverse map inverts its map at full rank; cosine
 * equals Euclidean on rows made unit; classical MDS of the precomputed
 * Euclidean distances equals it on the points; model files round trip for
 * every family with a map; errors name the option. */
#include "harness.h"
#include "../src/estimator/estimator_internal.h"
#include "../src/mds/mds_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* K well-separated Gaussian blobs in D dimensions, labels in truth. */
static nle_matf *blobs(size_t n, size_t D, int K, int32_t *truth, uint64_t seed) {
  nle_matf *Y = test_random_matf(n, D, seed);
  for (size_t i = 0; i < n; i++) {
    int c = (int)(i % (size_t)K);
    if (truth) truth[i] = c;
    Y->data[i * D + (size_t)c % D] += 12.0f * (float)(1 + c / (int)D);
  }
  return Y;
}

/* A status that must not be an error; the context's text when it is. */
#define fits(ctx, call) (nle_test((call) >= 0) || (printf("  %s\n", nle_ctx_error(ctx)), 0))

static bool same_matd(const nle_matd *a, const nle_matd *b) {
  return a && b && a->rows == b->rows && a->cols == b->cols &&
         !memcmp(a->data, b->data, a->rows * a->cols * sizeof *a->data);
}

/* Every method: its options read back as set; an unknown option and a bad
 * value are errors naming them. */
static void options_round_trip(void) {
  nle_ctx *ctx = test_ctx(1);
  int methods = 0;
  for (int m = 0; nle_estimator_method_name(m); m++, methods++) {
    nle_estimator *e = NULL;
    if (!nle_test_ok(nle_estimator_new(ctx, nle_estimator_method_name(m), &e))) continue;
    int options = 0;
    for (int i = 0; nle_estimator_option(e, i); i++, options++) {
      const char *name = nle_estimator_option(e, i);
      char before[128], after[128];
      nle_test_ok(nle_estimator_get(e, name, before, sizeof before));
      nle_test_ok(nle_estimator_set(e, name, before));
      nle_test_ok(nle_estimator_get(e, name, after, sizeof after));
      if (!nle_test(!strcmp(before, after))) printf("  %s %s: '%s' then '%s'\n", nle_estimator_method_name(m), name, before, after);
    }
    nle_test(options >= 3);
    nle_test(nle_estimator_set(e, "no-such-option", "1") == NLE_ERR_VALUE);
    nle_test(strstr(nle_ctx_error(ctx), "no-such-option") != NULL);
    nle_test(nle_estimator_set(e, "metric", "manhattan") == NLE_ERR_VALUE);
    nle_test(strstr(nle_ctx_error(ctx), "metric") != NULL);
    nle_estimator_free(&e);
  }
  nle_test(methods == 25);
  nle_estimator *e = NULL;
  nle_test(nle_estimator_new(ctx, "umap", &e) == NLE_ERR_VALUE && !e);
  nle_test(strstr(nle_ctx_error(ctx), "umap") != NULL);
  nle_test_ok(nle_estimator_new(ctx, "tsne", &e));
  nle_test(nle_estimator_set(e, "perplexity", "thirty") == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "perplexity") != NULL);
  nle_test(nle_estimator_set(e, "repulsion", "fmm") == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "fft") != NULL); /* the names it takes */
  nle_test_ok(nle_estimator_set(e, "learning_rate", "150")); /* '_' for '-' */
  char v[64];
  nle_test_ok(nle_estimator_get(e, "learning-rate", v, sizeof v));
  nle_test(!strcmp(v, "150"));
  nle_estimator_free(&e);
  /* an option of another method of the family names the methods taking it */
  nle_test_ok(nle_estimator_new(ctx, "le", &e));
  nle_test(nle_estimator_set(e, "alpha", "0.5") == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "alpha is for diffmap") != NULL);
  for (int i = 0; nle_estimator_option(e, i); i++) nle_test(strcmp(nle_estimator_option(e, i), "alpha"));
  nle_estimator_free(&e);
  nle_test_ok(nle_estimator_new(ctx, "diffmap", &e));
  nle_test_ok(nle_estimator_set(e, "alpha", "0.5"));
  nle_estimator_free(&e);
  nle_ctx_free(&ctx);
}

/* ---- one spelling for every option: the estimator's and the tool's -------
 * Every row of every method (nle_estimator_option_info) is one option under
 * one name: nle_estimator_set takes the row's default under its name and
 * its alias; the command's --help lists --NAME (a switch on by default: its
 * "no-" alias), "-X, --NAME" where the row has a short form and --ALIAS
 * where it has an alias; the command takes --NAME DEFAULT and --ALIAS
 * DEFAULT. Conversely each option the --help lists is a row of the method
 * (by name or alias) or the tool's own (tool_only), and the command refuses
 * the rows of the family's other methods as theirs. Python's side of the
 * same rows: python/tests/test_option_rows.py. The tool is the nlembed next
 * to this test program, or $NLEMBED. */

/* What the commands whose options are not yet read from the rows (their
 * --help and parsing by hand, not cli/cmd_fit.c's) still do otherwise:
 * "unlisted" (--help lacks --NAME), "short" (its short form is not the
 * row's), "alias" (--help lacks --ALIAS), "refused" (the command refuses
 * --NAME DEFAULT), "alias refused", "not a row" (--help lists --NAME, which
 * is no row of the method's family nor an alias), "scope" (the command
 * takes another method's row). `methods`: a space-separated list. An entry
 * that no longer differs for each of its methods fails the test: the list
 * only shrinks, an entry going when its command is converted. */
typedef struct {
  const char *methods, *option, *what;
} known_difference;
static const known_difference known[] = {
    {NULL, NULL, NULL}};
static int known_seen[sizeof known / sizeof *known];

/* files the tool reads or writes (the estimator takes arrays and saves by
 * nle_estimator_save; --labels, --init and --weights are its input
 * struct's), and the tool's own reporting and sweeps */
static const char *const tool_only[] = {"output", "help", "threads", "seed", "max-memory", "quiet", "verbose",
                                        "delimiter", "header", "label-column", "labels", "transpose",
                                        "save-model", "save-labels", "affinities", "distances", "knn",
                                        "kernel-matrix", "init", "weights", "trace", "path-prefix", "betas", "sweep-k",
                                        "sweep-sigma", NULL};

static bool in_list(const char *const *list, const char *name) {
  for (; *list; list++)
    if (!strcmp(*list, name)) return true;
  return false;
}

static bool in_words(const char *words, const char *word) {
  size_t n = strlen(word);
  for (const char *p = words; (p = strstr(p, word)); p += n)
    if ((p == words || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

static int word_count(const char *words) {
  int n = 0;
  for (const char *p = words; *p; p++)
    if (*p != ' ' && (p == words || p[-1] == ' ')) n++;
  return n;
}

static int known_entry(const char *method, const char *option, const char *what) {
  for (int i = 0; known[i].methods; i++)
    if (!strcmp(known[i].option, option) && !strcmp(known[i].what, what) && in_words(known[i].methods, method))
      return i;
  return -1;
}

/* One spelling compared: a difference fails unless it is listed in
 * `known` (where it is counted as seen). */
static void spelling(bool same, const char *method, const char *option, const char *what, const char *detail) {
  if (same) return;
  int i = known_entry(method, option, what);
  if (i >= 0) {
    known_seen[i]++;
    return;
  }
  nle_test_check(0, "one spelling", __FILE__, __LINE__);
  printf("  %s: %s --%s%s%.*s\n", method, what, option, detail ? ": " : "", detail ? (int)strcspn(detail, "\n") : 0,
         detail ? detail : "");
}

/* The tool next to the test program. */
static bool tool_path(char *buf, size_t cap) {
  const char *env = getenv("NLEMBED");
  if (env) {
    snprintf(buf, cap, "%s", env);
    return access(buf, X_OK) == 0;
  }
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return false;
  self[len] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash) return false;
  *slash = '\0';
  snprintf(buf, cap, "%s/nlembed", self);
  return access(buf, X_OK) == 0;
}

/* Runs the command line (its stderr sent to its stdout), that output into
 * out; the exit status. */
static int run_tool(const char *cmd, char *out, size_t cap) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t got = fread(out, 1, cap - 1, p);
  out[got] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

typedef struct {
  char name[48];
  char short_name;  /* "-k, --name": 'k' */
  bool takes_value;
} tool_option;

/* The options a --help page lists: lines "  --name ..." or "  -x, --name
 * ..."; a value follows when one space and a word come before the
 * description's column. */
static int help_options(const char *help, tool_option *opt, int cap) {
  int n = 0;
  for (const char *line = help; line && *line && n < cap; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    const char *p = line;
    if (strncmp(p, "  -", 3)) continue;
    p += 2;
    char short_name = 0;
    if (p[1] != '-' && p[2] == ',' && p[3] == ' ') short_name = p[1], p += 4; /* "-k, " */
    if (strncmp(p, "--", 2)) continue;
    p += 2;
    size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
    if (len == 0 || len >= sizeof opt->name) continue;
    memcpy(opt[n].name, p, len);
    opt[n].name[len] = '\0';
    opt[n].short_name = short_name;
    opt[n].takes_value = p[len] == ' ' && p[len + 1] != ' ' && p[len + 1] != '\n';
    n++;
  }
  return n;
}

static const tool_option *listed(const tool_option *opt, int n, const char *name) {
  for (int t = 0; t < n; t++)
    if (!strcmp(opt[t].name, name)) return &opt[t];
  return NULL;
}

/* "--NAME" as a whole word anywhere in the text. */
static bool mentions(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = text; (p = strstr(p, "--")); p += 2)
    if (!strncmp(p + 2, name, n) && !strchr("abcdefghijklmnopqrstuvwxyz0123456789-", p[2 + n])) return true;
  return false;
}

/* One spelling of a row given to the command: "--NAME 'VALUE'" ("--NAME"
 * for a switch and for a "no-" alias). */
typedef struct {
  char arg[128];
  const char *option, *what;
} tool_arg;

static void arg_of(tool_arg *a, const nle_option_info *info, const char *spelt, const char *what) {
  bool bare = !strcmp(info->kind, "switch");
  snprintf(a->arg, sizeof a->arg, bare ? " --%s" : " --%s '%s'", spelt, info->default_text);
  a->option = spelt;
  a->what = what;
}

/* Whether the command takes these arguments (then --help: nothing runs). */
static bool tool_takes(const char *tool, const char *method, const tool_arg *args, int n, char *out, size_t cap) {
  size_t len = 256 + strlen(tool);
  for (int i = 0; i < n; i++) len += strlen(args[i].arg);
  char *cmd = malloc(len);
  int used = snprintf(cmd, len, "'%s' %s", tool, method);
  for (int i = 0; i < n; i++) used += snprintf(cmd + used, len - (size_t)used, "%s", args[i].arg);
  snprintf(cmd + used, len - (size_t)used, " --help 2>&1");
  bool ok = run_tool(cmd, out, cap) == 0;
  free(cmd);
  return ok;
}

/* The method's rows against its --help page and the estimator's set; the
 * spellings the command must take into args (*n). */
static void rows_against_help(nle_ctx *ctx, nle_estimator *e, const char *help, const tool_option *opt, int n_opt, tool_arg *args,
                              int *n) {
  const char *method = nle_estimator_method(e);
  for (int i = 0; nle_estimator_option(e, i); i++) {
    nle_option_info info;
    if (!nle_test_ok(nle_estimator_option_info(e, nle_estimator_option(e, i), &info))) continue;
    if (!nle_test_ok(nle_estimator_set(e, info.name, info.default_text)))
      printf("  %s: set %s '%s': %s\n", method, info.name, info.default_text, nle_ctx_error(ctx));
    /* the tool's --save-model FILE sets keep-model (a model kept in memory
     * is of no use to a command that ends) */
    if (!strcmp(info.name, "keep-model")) continue;
    bool no_alias = info.alias && !strncmp(info.alias, "no-", 3);
    const tool_option *t = listed(opt, n_opt, info.name);
    if (!t && no_alias && !strcmp(info.default_text, "true")) t = listed(opt, n_opt, info.alias);
    spelling(t != NULL, method, info.name, "unlisted", NULL);
    if (t) spelling(t->short_name == info.short_name, method, info.name, "short", NULL);
    arg_of(&args[(*n)++], &info, info.name, "refused");
    if (!info.alias) continue;
    if (!nle_test_ok(nle_estimator_set(e, info.alias, info.default_text)))
      printf("  %s: set %s (alias of %s): %s\n", method, info.alias, info.name, nle_ctx_error(ctx));
    nle_estimator_set(e, info.name, info.default_text); /* a "no-" alias set it false */
    spelling(mentions(help, info.alias), method, info.alias, "alias", NULL);
    arg_of(&args[(*n)++], &info, info.alias, "alias refused");
  }
}

/* The options the --help page lists against the rows: each one of the
 * method's (by name or alias), or the tool's own; another method's row is
 * refused by the command as that method's. */
static void help_against_rows(const char *tool, nle_estimator *e, const tool_option *opt, int n_opt, char *out,
                              size_t cap, int *refusals) {
  const char *method = nle_estimator_method(e);
  for (int t = 0; t < n_opt; t++) {
    nle_option_info info;
    if (nle_estimator_option_info(e, opt[t].name, &info)) {
      spelling(in_list(tool_only, opt[t].name), method, opt[t].name, "not a row", NULL);
      continue;
    }
    if (info.taken) continue; /* the rows' own check took it */
    char cmd[PATH_MAX + 256], refusal[96];
    if (snprintf(cmd, sizeof cmd, "'%s' %s --%s%s --help 2>&1", tool, method, opt[t].name,
                 opt[t].takes_value ? " 1" : "") >= (int)sizeof cmd ||
        snprintf(refusal, sizeof refusal, "--%s is for", opt[t].name) >= (int)sizeof refusal ||
        !nle_test(run_tool(cmd, out, cap) >= 0))
      continue;
    (*refusals)++;
    spelling(strstr(out, refusal) != NULL, method, opt[t].name, "scope", "the command takes another method's option");
  }
}

static void one_spelling_everywhere(void) {
  char tool[PATH_MAX + 16];
  if (!nle_test(tool_path(tool, sizeof tool))) {
    printf("  no nlembed next to the test program (make all builds both; or set NLEMBED)\n");
    return;
  }
  memset(known_seen, 0, sizeof known_seen);
  nle_ctx *ctx = test_ctx(1);
  size_t cap = 1 << 16;
  char *help = malloc(cap), *out = malloc(cap), cmd[PATH_MAX + 64];
  tool_option opt[200];
  tool_arg args[200];
  int methods = 0, rows = 0, refusals = 0;
  for (int m = 0; nle_estimator_method_name(m); m++) {
    const char *method = nle_estimator_method_name(m);
    nle_estimator *e = NULL;
    if (!nle_test_ok(nle_estimator_new(ctx, method, &e))) continue;
    snprintf(cmd, sizeof cmd, "'%s' %s --help 2>&1", tool, method);
    int rc = run_tool(cmd, help, cap), n_opt = help_options(help, opt, 200), n = 0;
    if (!nle_test(rc == 0 && n_opt >= 10)) printf("  %s --help: exit %d, %d options\n", method, rc, n_opt);
    methods++;
    rows_against_help(ctx, e, help, opt, n_opt, args, &n);
    rows += n;
    /* the command takes every spelling not listed as refused at once, or
     * each alone says which it refuses; each listed one alone must still
     * be refused */
    int expected = 0;
    for (int i = 0; i < n; i++)
      if (known_entry(method, args[i].option, args[i].what) < 0) {
        tool_arg a = args[i];
        args[i] = args[expected], args[expected++] = a;
      }
    bool all = tool_takes(tool, method, args, expected, out, cap);
    for (int i = all ? expected : 0; i < n; i++)
      spelling(tool_takes(tool, method, &args[i], 1, out, cap), method, args[i].option, args[i].what, out);
    help_against_rows(tool, e, opt, n_opt, out, cap, &refusals);
    nle_estimator_free(&e);
  }
  nle_test(methods == 25 && rows > 300);
  for (size_t i = 0; known[i].methods; i++)
    if (!nle_test(known_seen[i] == word_count(known[i].methods)))
      printf("  known difference '%s' of --%s for '%s': seen %d times; remove the methods where it is gone\n",
             known[i].what, known[i].option, known[i].methods, known_seen[i]);
  if (getenv("NLE_TEST_VERBOSE")) printf("  %d methods, %d spellings, %d refusals asked\n", methods, rows, refusals);
  free(help);
  free(out);
  nle_ctx_free(&ctx);
}

/* Names that differ only by a plural "s" or a '-' are one spelling drifted
 * apart, unless they name different things: those are listed, with why. */
static const struct {
  const char *a, *b, *why;
} near_names[] = {
    {"dim", "dims", "cluster's dims: the eigenvectors k-means reads, not an output's dimension"},
    {"kernel", "kernels", "kpca's and klda's kernel: which; kem's kernels: how many"},
    {NULL, NULL, NULL}};

static bool near_spelling(const char *a, const char *b) {
  char x[64], y[64];
  size_t i = 0, j = 0;
  for (; *a && i + 1 < sizeof x; a++)
    if (*a != '-') x[i++] = *a;
  for (; *b && j + 1 < sizeof y; b++)
    if (*b != '-') y[j++] = *b;
  if (i > 0 && x[i - 1] == 's') i--;
  if (j > 0 && y[j - 1] == 's') j--;
  return i == j && !memcmp(x, y, i);
}

static void no_near_duplicate_names(void) {
  nle_ctx *ctx = test_ctx(1);
  const char *names[400];
  int n = 0, listed_seen = 0;
  for (int m = 0; nle_estimator_method_name(m); m++) {
    nle_estimator *e = NULL;
    if (!nle_test_ok(nle_estimator_new(ctx, nle_estimator_method_name(m), &e))) continue;
    for (int i = 0; nle_estimator_option(e, i) && n < 400; i++) {
      const char *name = nle_estimator_option(e, i);
      bool seen = false;
      for (int k = 0; k < n && !seen; k++) seen = !strcmp(names[k], name);
      if (!seen) names[n++] = name; /* the rows' own strings: alive while the library is loaded */
    }
    nle_estimator_free(&e);
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      if (!near_spelling(names[i], names[j])) continue;
      bool listed = false;
      for (int k = 0; near_names[k].a && !listed; k++)
        listed = (!strcmp(near_names[k].a, names[i]) && !strcmp(near_names[k].b, names[j])) ||
                 (!strcmp(near_names[k].a, names[j]) && !strcmp(near_names[k].b, names[i]));
      listed_seen += listed;
      if (!nle_test(listed)) printf("  options %s and %s: one name spelt two ways?\n", names[i], names[j]);
    }
  int entries = 0;
  while (near_names[entries].a) entries++;
  if (!nle_test(listed_seen == entries)) printf("  %d of the %d listed pairs seen: remove the others\n", listed_seen, entries);
  nle_test(n > 80);
  nle_ctx_free(&ctx);
}

/* t-SNE through the estimator is nle_embed with the same options, bit for
 * bit, and its report carries the resolved choices. */
static void tsne_as_front_door(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_matf *Y = blobs(300, 5, 3, NULL, 3);
  nle_estimator *e = NULL;
  nle_test_ok(nle_estimator_new(ctx, "tsne", &e));
  nle_test_ok(nle_estimator_set(e, "perplexity", "12"));
  nle_test_ok(nle_estimator_set(e, "max-iters", "150"));
  nle_estimator_input in = {.Y = Y};
  nle_status s = nle_estimator_fit(e, &in);
  nle_test(s >= 0);
  nle_embed_opts o;
  nle_embed_opts_init(&o);
  o.perplexity = 12;
  o.opt.max_iters = 150;
  nle_embed_input ei = {.Y = Y};
  nle_embed_result *r = NULL;
  nle_test(nle_embed(ctx, &ei, &o, &r) >= 0);
  nle_test(same_matd(nle_estimator_embedding(e), r->X));
  char k[32];
  nle_test_ok(nle_estimator_get(e, "neighbors", k, sizeof k)); /* resolved: 3 x perplexity */
  nle_test(!strcmp(k, "36"));
  const char *rep = nle_estimator_report(e);
  nle_test(strstr(rep, "\"method\": \"tsne\"") && strstr(rep, "\"neighbors\": 36") && strstr(rep, "\"iterations\""));
  /* new points: a training point maps near its own embedding */
  nle_matd *X = NULL;
  nle_matf *Y0 = NULL;
  int64_t first = 0;
  nle_test_ok(nle_matf_select_rows(ctx, Y, &first, 1, &Y0));
  fits(ctx, nle_estimator_transform(e, Y0, &X));
  nle_embed_result_free(&r);
  /* a given start is nle_embed's init_X */
  nle_matd *X0 = test_random_matd(300, 2, 1e-4, 4);
  in.init = X0;
  nle_test(nle_estimator_fit(e, &in) >= 0);
  o.init = NLE_INIT_GIVEN;
  o.init_X = X0;
  nle_test(nle_embed(ctx, &ei, &o, &r) >= 0);
  nle_test(same_matd(nle_estimator_embedding(e), r->X));
  nle_embed_result_free(&r);
  nle_matd_free(&X0);
  nle_matd_free(&X);
  nle_matf_free(&Y0);
  nle_matf_free(&Y);
  nle_estimator_free(&e);
  nle_ctx_free(&ctx);
}

/* PCA at full rank: the reverse map gives the points back; whitened
 * scores have unit variance. */
static void pca_inverse(void) {
  nle_ctx *ctx = test_ctx(5);
  nle_matf *Y = test_random_matf(200, 4, 5);
  for (size_t i = 0; i < 200; i++) Y->data[i * 4] = 3 * Y->data[i * 4] + 1;
  nle_estimator *e = NULL;
  nle_test_ok(nle_estimator_new(ctx, "pca", &e));
  nle_test_ok(nle_estimator_set(e, "dim", "4"));
  nle_estimator_input in = {.Y = Y};
  nle_test_ok(nle_estimator_fit(e, &in));
  nle_matf *back = NULL;
  nle_test_ok(nle_estimator_inverse(e, nle_estimator_embedding(e), &back));
  double worst = 0;
  for (size_t i = 0; back && i < 800; i++) worst = fmax(worst, fabs(back->data[i] - Y->data[i]));
  nle_test(back && worst < 1e-4);
  nle_matf_free(&back);
  nle_test_ok(nle_estimator_set(e, "whiten", "true"));
  nle_test_ok(nle_estimator_set(e, "dim", "2"));
  nle_test_ok(nle_estimator_fit(e, &in));
  const nle_matd *X = nle_estimator_embedding(e);
  for (size_t t = 0; t < 2; t++) {
    double m = 0, v = 0;
    for (size_t i = 0; i < 200; i++) m += X->data[i * 2 + t] / 200;
    for (size_t i = 0; i < 200; i++) v += (X->data[i * 2 + t] - m) * (X->data[i * 2 + t] - m) / 199;
    nle_test_rel(v, 1.0, 1e-6);
  }
  nle_matd *X2 = NULL;
  nle_test_ok(nle_estimator_transform(e, Y, &X2));
  double diff = 0;
  for (size_t i = 0; X2 && i < 400; i++) diff = fmax(diff, fabs(X2->data[i] - X->data[i]));
  nle_test(X2 && diff < 1e-5);
  nle_matd_free(&X2);
  nle_matf_free(&Y);
  nle_estimator_free(&e);
  nle_ctx_free(&ctx);
}

/* Cosine is Euclidean on rows made unit: Laplacian eigenmaps of both agree
 * bit for bit; a zero row is refused under cosine. */
static void cosine_is_unit_rows(void) {
  nle_ctx *ctx = test_ctx(7);
  nle_matf *Y = test_random_matf(240, 6, 7);
  for (size_t i = 0; i < 240; i++) Y->data[i * 6] += 2.0f; /* angles, not lengths, tell the rows apart */
  nle_matf *U = NULL;
  nle_test_ok(nle_matf_select_rows(ctx, Y, (int64_t[]){0}, 1, &U)); /* shape only */
  nle_matf_free(&U);
  nle_test_ok(nle_matf_alloc(ctx, 240, 6, &U));
  for (size_t i = 0; i < 240; i++) {
    double n2 = 0;
    for (size_t j = 0; j < 6; j++) n2 += (double)Y->data[i * 6 + j] * Y->data[i * 6 + j];
    for (size_t j = 0; j < 6; j++) U->data[i * 6 + j] = (float)(Y->data[i * 6 + j] / sqrt(n2));
  }
  nle_estimator *a = NULL, *b = NULL;
  nle_test_ok(nle_estimator_new(ctx, "le", &a));
  nle_test_ok(nle_estimator_new(ctx, "le", &b));
  nle_test_ok(nle_estimator_set(a, "metric", "cosine"));
  nle_estimator_input ia = {.Y = Y}, ib = {.Y = U};
  fits(ctx, nle_estimator_fit(a, &ia));
  fits(ctx, nle_estimator_fit(b, &ib));
  const nle_matd *Xa = nle_estimator_embedding(a), *Xb = nle_estimator_embedding(b);
  double diff = 0;
  for (size_t i = 0; Xa && Xb && i < 480; i++) diff = fmax(diff, fabs(fabs(Xa->data[i]) - fabs(Xb->data[i])));
  nle_test(Xa && Xb && diff < 1e-6);
  for (size_t j = 0; j < 6; j++) Y->data[17 * 6 + j] = 0;
  nle_test(nle_estimator_fit(a, &ia) == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "row 17") != NULL); /* 0-based, as the .npy reader counts */
  nle_test(nle_estimator_embedding(a) == NULL); /* a failed fit leaves none */
  nle_matf_free(&U);
  nle_matf_free(&Y);
  nle_estimator_free(&a);
  nle_estimator_free(&b);
  nle_ctx_free(&ctx);
}

/* Classical MDS of the precomputed Euclidean distances equals classical
 * MDS of the points (up to each column's sign); a non-square matrix is
 * refused under precomputed. */
static void precomputed_distances(void) {
  nle_ctx *ctx = test_ctx(9);
  size_t n = 80;
  nle_matf *Y = test_random_matf(n, 3, 9), *Dm = NULL;
  nle_test_ok(nle_matf_alloc(ctx, n, n, &Dm));
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t t = 0; t < 3; t++) s += pow((double)Y->data[i * 3 + t] - Y->data[j * 3 + t], 2);
      Dm->data[i * n + j] = (float)sqrt(s);
    }
  nle_estimator *a = NULL, *b = NULL;
  nle_test_ok(nle_estimator_new(ctx, "cmds", &a));
  nle_test_ok(nle_estimator_new(ctx, "cmds", &b));
  nle_test_ok(nle_estimator_set(b, "metric", "precomputed"));
  nle_estimator_input ia = {.Y = Y}, ib = {.Y = Dm};
  nle_test(nle_estimator_fit(a, &ia) >= 0);
  nle_test(nle_estimator_fit(b, &ib) >= 0);
  const nle_matd *Xa = nle_estimator_embedding(a), *Xb = nle_estimator_embedding(b);
  double diff = 0;
  for (size_t i = 0; Xa && Xb && i < 2 * n; i++) diff = fmax(diff, fabs(fabs(Xa->data[i]) - fabs(Xb->data[i])));
  nle_test(Xa && Xb && diff < 1e-4);
  /* Isomap on precomputed distances: a kNN graph from them */
  nle_estimator *c = NULL;
  nle_test_ok(nle_estimator_new(ctx, "isomap", &c));
  nle_test_ok(nle_estimator_set(c, "metric", "precomputed"));
  nle_test(nle_estimator_fit(c, &ib) >= 0);
  nle_test(nle_estimator_fit(c, &ia) == NLE_ERR_VALUE); /* 80 x 3 is no distance matrix */
  nle_test(strstr(nle_ctx_error(ctx), "80 x 3") != NULL);
  nle_estimator_free(&c);
  nle_matf_free(&Dm);
  nle_matf_free(&Y);
  nle_estimator_free(&a);
  nle_estimator_free(&b);
  nle_ctx_free(&ctx);
}

/* Save, load, transform: the loaded estimator maps new points as the
 * fitted one did, for each family with a model file. */
static void model_files_round_trip(void) {
  nle_ctx *ctx = test_ctx(11);
  int32_t truth[300];
  /* one connected cloud for the embeddings, separated blobs for the
   * clustering and LDA */
  nle_matf *cloud = test_random_matf(300, 5, 10), *Yb = blobs(300, 5, 3, truth, 11), *Q = test_random_matf(7, 5, 12);
  static const char *const methods[] = {"tsne", "ee", "le", "isomap", "lle", "cluster", "pca", "cmds", "lmds",
                                        "kpca", "kem", "lda"};
  for (size_t m = 0; m < sizeof methods / sizeof *methods; m++) {
    nle_estimator *e = NULL, *back = NULL;
    nle_test_ok(nle_estimator_new(ctx, methods[m], &e));
    if (!strcmp(methods[m], "tsne") || !strcmp(methods[m], "ee")) nle_test_ok(nle_estimator_set(e, "max-iters", "60"));
    if (!strcmp(methods[m], "cluster")) nle_test_ok(nle_estimator_set(e, "clusters", "3"));
    bool labelled = !strcmp(methods[m], "cluster") || !strcmp(methods[m], "lda");
    const nle_matf *Y = labelled ? Yb : cloud;
    nle_estimator_input in = {.Y = Y, .labels = truth};
    if (!fits(ctx, nle_estimator_fit(e, &in))) printf("  (%s)\n", methods[m]);
    nle_matd *X1 = NULL, *X2 = NULL;
    fits(ctx, nle_estimator_transform(e, Q, &X1));
    const char *path = test_path("estimator.model");
    nle_test_ok(nle_estimator_save(e, path));
    nle_test_ok(nle_estimator_load(ctx, path, &back));
    if (back) {
      nle_test(!strcmp(nle_estimator_method(back), methods[m]));
      fits(ctx, nle_estimator_transform(back, Q, &X2));
      if (!nle_test(same_matd(X1, X2))) printf("  %s: transform differs after loading\n", methods[m]);
    }
    if (!strcmp(methods[m], "cluster")) {
      double matched = 1, majority = 1;
      size_t n = 0;
      const int32_t *labels = nle_estimator_labels(e, &n);
      nle_test(labels && n == 300);
      if (labels) nle_test_ok(nle_clustering_error(ctx, labels, truth, 300, &matched, &majority));
      nle_test(matched == 0);
      int32_t predicted[300];
      nle_test(nle_estimator_predict(back, Y, predicted) >= 0);
      nle_test(labels && !memcmp(predicted, labels, sizeof predicted));
    }
    nle_matd_free(&X1);
    nle_matd_free(&X2);
    nle_estimator_free(&back);
    nle_estimator_free(&e);
  }
  nle_matf_free(&Q);
  nle_matf_free(&Yb);
  nle_matf_free(&cloud);
  nle_ctx_free(&ctx);
}

/* A model file becomes only a method of the families that share its kind:
 * a projection model naming t-SNE is refused, not loaded as a t-SNE
 * estimator holding a projection model. */
static void loaded_method_within_its_kind(void) {
  nle_ctx *ctx = test_ctx(14);
  nle_projection_model *p = NULL;
  const char *path = test_path("foreign.model");
  nle_test_ok(nle__projection_new(ctx, "tsne", NLE_MAP_LINEAR, 0, 3, 2, NULL, &p));
  if (p) nle_test_ok(nle_projection_model_save(ctx, p, path));
  nle_estimator *e = NULL;
  nle_test(nle_estimator_load(ctx, path, &e) == NLE_ERR_FORMAT);
  nle_test(e == NULL && strstr(nle_ctx_error(ctx), "unknown method 'tsne'") != NULL);
  nle_estimator_free(&e);
  nle_projection_model_free(&p);
  nle_ctx_free(&ctx);
}

/* What a method cannot do is an error saying so, before or after a fit. */
static void refusals(void) {
  nle_ctx *ctx = test_ctx(13);
  nle_matf *Y = test_random_matf(60, 3, 13);
  nle_estimator *e = NULL;
  nle_test_ok(nle_estimator_new(ctx, "lda", &e));
  nle_estimator_input in = {.Y = Y};
  nle_test(nle_estimator_fit(e, &in) == NLE_ERR_ARG); /* no labels */
  nle_test(strstr(nle_ctx_error(ctx), "labels") != NULL);
  nle_matd *X = NULL;
  nle_test(nle_estimator_transform(e, Y, &X) == NLE_ERR_ARG && !X); /* not fitted */
  nle_estimator_free(&e);
  nle_test_ok(nle_estimator_new(ctx, "le", &e));
  nle_test(nle_estimator_fit(e, &(nle_estimator_input){0}) == NLE_ERR_ARG);
  nle_test(nle_estimator_fit(e, &in) >= 0);
  nle_matf *back = NULL;
  nle_test(nle_estimator_inverse(e, nle_estimator_embedding(e), &back) == NLE_ERR_ARG && !back);
  nle_matf *wrong = test_random_matf(4, 2, 14);
  nle_test(nle_estimator_transform(e, wrong, &X) == NLE_ERR_VALUE && !X);
  nle_matf_free(&wrong);
  nle_estimator_free(&e);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Messages name options by markers, so each client reads its own names
 * (issue 34): a binding (NLE_SPELL_MARKED) gets {@neighbors=0}, never the
 * field's name "k"; a value is shown as given, "auto" never as the
 * sentinel's number; the option's rule in each message. */
static void messages_name_options(void) {
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_MARKED);
  nle_matf *Y = blobs(60, 4, 3, NULL, 7);
  nle_estimator_input in = {.Y = Y};
  nle_estimator *e = NULL;
  /* LaplacianEigenmaps(n_neighbors=0) */
  nle_test_ok(nle_estimator_new(ctx, "le", &e));
  nle_test(nle_estimator_set(e, "neighbors", "0") == NLE_ERR_VALUE); /* the row's range */
  nle_test(strstr(nle_ctx_error(ctx), "{@neighbors} takes an integer >= 1, not \"0\"") != NULL);
  nle_test(strstr(nle_ctx_error(ctx), "option k") == NULL);
  /* an option of another method, a bad value: by marker */
  nle_test(nle_estimator_set(e, "alpha", "0.5") == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "le: {@alpha} is for diffmap") != NULL);
  nle_test(nle_estimator_set(e, "reg", "small") == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "{@reg} takes a finite number >= 0, not \"small\"") != NULL);
  nle_estimator_free(&e);
  /* SpectralClustering(n_clusters=1), dims left auto */
  nle_test_ok(nle_estimator_new(ctx, "cluster", &e));
  nle_test(nle_estimator_set(e, "clusters", "1") == NLE_ERR_VALUE); /* the row's range */
  nle_test(strstr(nle_ctx_error(ctx), "{@clusters} takes an integer >= 2, not \"1\"") != NULL);
  nle_test(strstr(nle_ctx_error(ctx), "-2147483648") == NULL);
  nle_test_ok(nle_estimator_set(e, "clusters", "100"));
  nle_test(nle_estimator_fit(e, &in) == NLE_ERR_ARG);
  nle_test(strstr(nle_ctx_error(ctx), "{@clusters=100} of 60 points") != NULL);
  nle_estimator_free(&e);
  /* a spectral embedding's dim as NLE_AUTO (not a value it takes): "auto" */
  nle_spectral_opts so;
  nle_spectral_opts_init(&so);
  so.dim = NLE_AUTO;
  nle_spectral_input si = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &si, &so, &r) == NLE_ERR_ARG && !r);
  nle_test(strstr(nle_ctx_error(ctx), "{@dim=auto} dimensions: at least 1") != NULL);
  /* the C spelling of the same */
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_C);
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &si, &so, &r) == NLE_ERR_ARG);
  nle_test(strstr(nle_ctx_error(ctx), "dim=auto dimensions") != NULL);
  /* an automatic k past the points is N - 1, not 3 x perplexity converted
   * out of an int (TSNE(perplexity=1e9) on 60 points) */
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_MARKED);
  nle_test_ok(nle_estimator_new(ctx, "tsne", &e));
  nle_test_ok(nle_estimator_set(e, "perplexity", "1e9"));
  nle_test(nle_estimator_fit(e, &in) == NLE_ERR_ARG);
  nle_test(strstr(nle_ctx_error(ctx), "{@perplexity=1e+09} must be above 1 and below the number of neighbours, 59") !=
           NULL);
  nle_estimator_free(&e);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Issue 34: LDA's estimator is scikit-learn's classifier. Labels {5, -2,
 * 9}: predict gives those values, by the rule written out here on the
 * embedding (every direction: C - 1 = 2): the largest -|e - c_k|^2 / 2 +
 * log(N_k / N); the scores' differences and the probabilities agree; the
 * model file keeps it all (a loaded estimator predicts the same bits). */
static void lda_classifier(void) {
  nle_ctx *ctx = test_ctx(3);
  enum { n = 120, D = 4, C = 3 };
  nle_matf *Y = test_random_matf(n, D, 34);
  int32_t labels[n];
  const int32_t value[C] = {5, -2, 9}; /* classes -2 < 5 < 9: columns 1, 0, 2 of value's order */
  for (size_t i = 0; i < n; i++) {
    labels[i] = value[i % C];
    Y->data[i * D + i % C] += 1.5f;
  }
  nle_estimator *e = NULL, *back = NULL;
  nle_test_ok(nle_estimator_new(ctx, "lda", &e));
  nle_estimator_input in = {.Y = Y, .labels = labels};
  int32_t pred[n], pred2[n];
  nle_matd *sc = NULL, *pr = NULL, *sc2 = NULL;
  if (nle_test_ok(nle_estimator_fit(e, &in)) && nle_test_ok(nle_estimator_predict(e, Y, pred)) &&
      nle_test_ok(nle_estimator_decision(e, Y, &sc)) && nle_test_ok(nle_estimator_predict_proba(e, Y, &pr))) {
    const nle_matd *E = nle_estimator_embedding(e);
    nle_test(E->cols == 2 && sc->cols == C && pr->cols == C);
    const int32_t sorted[C] = {-2, 5, 9};
    double cm[C][2] = {{0}}, cnt[C] = {0};
    int code[n];
    for (size_t i = 0; i < n; i++) {
      code[i] = labels[i] == -2 ? 0 : labels[i] == 5 ? 1 : 2;
      cnt[code[i]] += 1, cm[code[i]][0] += E->data[i * 2], cm[code[i]][1] += E->data[i * 2 + 1];
    }
    for (int c = 0; c < C; c++) cm[c][0] /= cnt[c], cm[c][1] /= cnt[c];
    int agree = 0;
    double worst = 0, psum = 0;
    for (size_t i = 0; i < n; i++) {
      double s[C];
      int best = 0;
      for (int c = 0; c < C; c++) {
        double a = E->data[i * 2] - cm[c][0], b = E->data[i * 2 + 1] - cm[c][1];
        s[c] = -0.5 * (a * a + b * b) + log(cnt[c] / n);
        if (s[c] > s[best]) best = c;
      }
      agree += pred[i] == sorted[best];
      for (int c = 1; c < C; c++) worst = fmax(worst, fabs(sc->data[i * C + c] - sc->data[i * C] - (s[c] - s[0])));
      psum = fmax(psum, fabs(pr->data[i * C] + pr->data[i * C + 1] + pr->data[i * C + 2] - 1));
    }
    if (!nle_test(agree == n && worst < 1e-9 && psum < 1e-12))
      printf("  %d of %d predictions agree, scores off by %g, probabilities' sums by %g\n", agree, n, worst, psum);
    const char *path = test_path("lda_classifier.nle");
    nle_test_ok(nle_estimator_save(e, path));
    if (nle_test_ok(nle_estimator_load(ctx, path, &back)) && nle_test_ok(nle_estimator_predict(back, Y, pred2)) &&
        nle_test_ok(nle_estimator_decision(back, Y, &sc2)))
      nle_test(!memcmp(pred, pred2, sizeof pred) && !memcmp(sc->data, sc2->data, n * C * sizeof(double)));
  }
  nle_matd_free(&sc), nle_matd_free(&pr), nle_matd_free(&sc2);
  nle_estimator_free(&back);
  nle_estimator_free(&e);
  /* kernel LDA predicts too; a method that is no classifier says so */
  nle_test_ok(nle_estimator_new(ctx, "klda", &e));
  if (nle_test_ok(nle_estimator_fit(e, &in)) && nle_test_ok(nle_estimator_predict(e, Y, pred))) {
    int right = 0;
    for (size_t i = 0; i < n; i++) right += pred[i] == labels[i];
    nle_test(right > n * 3 / 4);
  }
  nle_estimator_free(&e);
  nle_test_ok(nle_estimator_new(ctx, "pca", &e));
  in.labels = NULL;
  nle_test(nle_estimator_fit(e, &in) >= 0);
  nle_test(nle_estimator_decision(e, Y, &sc) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "not a classifier") && !sc);
  nle_estimator_free(&e);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The maps' own options are est_embed.c's rows: listed for a client that
 * reads them before it knows the model, described with the engines that
 * serve new points, set by name (a value F(y) does not take, and any on a
 * model whose maps take none, refused naming it); max-iters reaches F(y)
 * and f(x), and the map's report says what ran. */
static void map_options(void) {
  nle_ctx *ctx = test_ctx(21);
  nle_test(!strcmp(nle_estimator_map_option(0), "max-iters") && !strcmp(nle_estimator_map_option(1), "repulsion") &&
           !nle_estimator_map_option(2));
  nle_option_info info;
  nle_test(nle_estimator_map_option_info(NULL, "repulsion", &info) == NLE_OK && !info.taken &&
           !strcmp(info.values, "auto, exact, fft or fgt") && !strcmp(info.default_text, "auto"));
  nle_test(nle_estimator_map_option_info(NULL, "theta", &info) == NLE_ERR_VALUE);
  nle_matf *Y = test_random_matf(200, 4, 21), *Q = test_random_matf(5, 4, 22);
  nle_estimator *e = NULL, *le = NULL;
  nle_test_ok(nle_estimator_new(ctx, "ee", &e));
  nle_test_ok(nle_estimator_set(e, "wneg", "sqdist"));
  nle_test_ok(nle_estimator_set(e, "max-iters", "30"));
  nle_estimator_input in = {.Y = Y};
  fits(ctx, nle_estimator_fit(e, &in));
  nle_test(!strcmp(nle_estimator_map_report(e), "{}"));
  nle_test(nle_estimator_map_option_info(e, "repulsion", &info) == NLE_OK && info.taken);
  nle_test(nle_estimator_set_map(e, "repulsion", "bh") == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "takes auto, exact, fft or fgt"));
  nle_matd *X0 = NULL, *X1 = NULL;
  nle_test_ok(nle_estimator_set_map(e, "max-iters", "0"));
  fits(ctx, nle_estimator_transform(e, Q, &X0));
  nle_test(strstr(nle_estimator_map_report(e), "{\"map\": \"F(y)\", \"model_kind\": \"ee\"") &&
           strstr(nle_estimator_map_report(e), "\"max_iters\": 0,"));
  nle_test_ok(nle_estimator_set_map(e, "max_iters", "auto"));
  fits(ctx, nle_estimator_transform(e, Q, &X1));
  nle_test(strstr(nle_estimator_map_report(e), "\"max_iters\": 200,") && !same_matd(X0, X1));
  /* f(x): max-iters reaches it */
  nle_matf *Yf = NULL, *Yref = NULL;
  nle_test_ok(nle_estimator_set_map(e, "max-iters", "200"));
  fits(ctx, nle_estimator_inverse(e, X1, &Yf));
  nle_test(strstr(nle_estimator_map_report(e), "\"map\": \"f(x)\""));
  nle_test_ok(nle_trained_inverse(ctx, e->model, X1, 200, &Yref));
  nle_test(Yf && Yref && !memcmp(Yf->data, Yref->data, Yf->rows * Yf->cols * sizeof *Yf->data));
  nle_test_ok(nle_estimator_new(ctx, "le", &le));
  fits(ctx, nle_estimator_fit(le, &in));
  nle_test(nle_estimator_map_option_info(le, "repulsion", &info) == NLE_OK && !info.taken);
  nle_test(nle_estimator_set_map(le, "repulsion", "exact") == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "take no") && strstr(nle_ctx_error(ctx), "repulsion"));
  nle_matf_free(&Yf);
  nle_matf_free(&Yref);
  nle_matd_free(&X0);
  nle_matd_free(&X1);
  nle_matf_free(&Q);
  nle_matf_free(&Y);
  nle_estimator_free(&le);
  nle_estimator_free(&e);
  nle_ctx_free(&ctx);
}

/* What a client taking any model file asks: a model saved with model-data
 * reference names its data, maps nothing without them and, given them back
 * (checked), maps as the copying one; a clustering's map is its labels;
 * kernel eigenmaps take no data and compute G+ in doubles, which
 * nle_estimator_inverse rounds. */
static void maps_of_loaded_models(void) {
  nle_ctx *ctx = test_ctx(23);
  nle_matf *Y = test_random_matf(200, 4, 23), *Q = test_random_matf(5, 4, 24);
  nle_estimator *e = NULL, *ref = NULL, *copy = NULL;
  nle_test_ok(nle_estimator_new(ctx, "tsne", &e));
  nle_test_ok(nle_estimator_set(e, "max-iters", "30"));
  nle_estimator_input in = {.Y = Y, .source = "the-training-data"};
  fits(ctx, nle_estimator_fit(e, &in));
  char ref_path[4096], copy_path[4096];
  snprintf(ref_path, sizeof ref_path, "%s", test_path("maps_ref.nle"));
  snprintf(copy_path, sizeof copy_path, "%s", test_path("maps_copy.nle"));
  nle_test_ok(nle_estimator_set(e, "model-data", "reference"));
  nle_test_ok(nle_estimator_save(e, ref_path));
  nle_test_ok(nle_estimator_set(e, "model-data", "copy"));
  nle_test_ok(nle_estimator_save(e, copy_path));
  nle_test_ok(nle_estimator_load(ctx, ref_path, &ref));
  nle_test_ok(nle_estimator_load(ctx, copy_path, &copy));
  nle_estimator_maps maps;
  nle_test_ok(nle_estimator_maps_info(ref, &maps));
  nle_test(maps.inverse && !maps.labels && maps.takes_data && maps.data_source &&
           !strcmp(maps.data_source, "the-training-data"));
  nle_matd *X_ref = NULL, *X_copy = NULL;
  nle_test(nle_estimator_transform(ref, Q, &X_ref) < 0 && !X_ref);
  nle_test(nle_estimator_attach_data(ref, Q) < 0 && strstr(nle_ctx_error(ctx), "not the data"));
  nle_test_ok(nle_estimator_attach_data(ref, Y));
  nle_test_ok(nle_estimator_maps_info(ref, &maps));
  nle_test(!maps.data_source);
  fits(ctx, nle_estimator_transform(ref, Q, &X_ref));
  fits(ctx, nle_estimator_transform(copy, Q, &X_copy));
  nle_test(same_matd(X_ref, X_copy));
  nle_matd_free(&X_ref);
  nle_matd_free(&X_copy);
  nle_estimator_free(&ref);
  nle_estimator_free(&copy);
  nle_estimator_free(&e);
  int32_t truth[200];
  nle_matf *B = blobs(200, 4, 3, truth, 25);
  static const char *const methods[] = {"cluster", "kem"};
  for (int m = 0; m < 2; m++) {
    nle_test_ok(nle_estimator_new(ctx, methods[m], &e));
    if (m == 0) nle_test_ok(nle_estimator_set(e, "clusters", "3"));
    nle_estimator_input bin = {.Y = m == 0 ? B : Y};
    fits(ctx, nle_estimator_fit(e, &bin));
    nle_test_ok(nle_estimator_save(e, copy_path));
    nle_test_ok(nle_estimator_load(ctx, copy_path, &copy));
    nle_test_ok(nle_estimator_maps_info(copy, &maps));
    nle_test(maps.labels == (m == 0) && maps.takes_data == (m == 0) && maps.inverse == (m == 1) && !maps.data_source);
    nle_test(!strcmp(maps.refusal, m == 0 ? "for EE-family models, not a spectral model" : "not for a kem-model model"));
    if (m == 1) { /* G+ in doubles; the float form is their rounding */
      nle_matf *Yf = NULL, *Yf2 = NULL;
      nle_matd *Yd = NULL;
      fits(ctx, nle_estimator_inverse_exact(copy, nle_estimator_embedding(e), &Yf, &Yd));
      fits(ctx, nle_estimator_inverse(copy, nle_estimator_embedding(e), &Yf2));
      nle_test(!Yf && Yd && Yf2 && Yd->rows == 200 && Yd->cols == 4);
      bool rounded = Yd && Yf2;
      for (size_t i = 0; rounded && i < Yd->rows * Yd->cols; i++) rounded = Yf2->data[i] == (float)Yd->data[i];
      nle_test(rounded && strstr(nle_estimator_map_report(copy), "\"map\": \"G+(y)\""));
      nle_matd_free(&Yd);
      nle_matf_free(&Yf2);
    }
    nle_estimator_free(&e);
    nle_estimator_free(&copy);
  }
  nle_matf_free(&B);
  nle_matf_free(&Q);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The options of every family, by name: nle_estimator_any_option lists
 * each once, and is every method's options and no more (walked against a
 * set built method by method); nle_estimator_methods_taking names the
 * methods as the rows' scopes say (checked against nle_estimator_option_info
 * of each method); an option of another family is refused naming them. */
static void any_family_options(void) {
  nle_ctx *ctx = test_ctx(1);
  const char *seen[400];
  int n_seen = 0;
  for (int m = 0; nle_estimator_method_name(m); m++) {
    nle_estimator *e = NULL;
    if (!nle_test_ok(nle_estimator_new(ctx, nle_estimator_method_name(m), &e))) continue;
    for (int i = 0; nle_estimator_option(e, i) && n_seen < 400; i++) {
      const char *name = nle_estimator_option(e, i);
      bool dup = false;
      for (int k = 0; k < n_seen && !dup; k++) dup = !strcmp(seen[k], name);
      if (!dup) seen[n_seen++] = name;
    }
    nle_estimator_free(&e);
  }
  int n_any = 0;
  for (; nle_estimator_any_option(n_any); n_any++) {
    const char *name = nle_estimator_any_option(n_any);
    bool in = false;
    for (int k = 0; k < n_seen && !in; k++) in = !strcmp(seen[k], name);
    for (int j = 0; j < n_any; j++) nle_test(strcmp(nle_estimator_any_option(j), name) != 0);
    if (!nle_test(in)) printf("  %s is no method's option\n", name);
    nle_option_info info;
    nle_test_ok(nle_estimator_option_info(NULL, name, &info));
    nle_test(!strcmp(info.name, name));
  }
  if (!nle_test(n_any == n_seen)) printf("  %d names listed, %d options\n", n_any, n_seen);
  /* methods_taking against each method's own rows */
  const char *probes[] = {"wneg", "clusters", "kind", "landmarks", "metric", "alpha", NULL};
  for (int p = 0; probes[p]; p++) {
    char list[512], want[512] = "";
    nle_estimator_methods_taking(probes[p], list, sizeof list);
    const char *taking[64];
    int t = 0;
    for (int m = 0; nle_estimator_method_name(m); m++) {
      nle_estimator *e = NULL;
      nle_option_info info;
      if (nle_estimator_new(ctx, nle_estimator_method_name(m), &e)) continue;
      if (!nle_estimator_option_info(e, probes[p], &info) && info.taken) taking[t++] = nle_estimator_method_name(m);
      nle_estimator_free(&e);
    }
    size_t used = 0;
    for (int i = 0; i < t; i++)
      used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", i == 0 ? "" : i + 1 == t ? " and " : ", ",
                               taking[i]);
    if (!nle_test(!strcmp(list, want))) printf("  %s: '%s', want '%s'\n", probes[p], list, want);
  }
  char list[512];
  nle_test(!strcmp(nle_estimator_methods_taking("wneg|clusters", list, sizeof list), "tee, ee and cluster"));
  nle_test(!strcmp(nle_estimator_methods_taking("no-such", list, sizeof list), ""));
  nle_estimator *e = NULL;
  nle_test_ok(nle_estimator_new(ctx, "le", &e));
  nle_test(nle_estimator_set(e, "clusters", "3") == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "clusters is for cluster") != NULL);
  nle_test(nle_estimator_set(e, "no-such", "3") == NLE_ERR_VALUE);
  nle_test(strstr(nle_ctx_error(ctx), "no option 'no-such'") != NULL);
  nle_estimator_free(&e);
  nle_ctx_free(&ctx);
}

const nle_test_case estimator_tests[] = {
    {"estimator/messages_name_options", messages_name_options},
    {"estimator/options_round_trip", options_round_trip},
    {"estimator/one_spelling_everywhere", one_spelling_everywhere},
    {"estimator/no_near_duplicate_names", no_near_duplicate_names},
    {"estimator/any_family_options", any_family_options},
    {"estimator/tsne_as_front_door", tsne_as_front_door},
    {"estimator/pca_inverse", pca_inverse},
    {"estimator/cosine_is_unit_rows", cosine_is_unit_rows},
    {"estimator/precomputed_distances", precomputed_distances},
    {"estimator/model_files_round_trip", model_files_round_trip},
    {"estimator/loaded_method_within_its_kind", loaded_method_within_its_kind},
    {"estimator/refusals", refusals},
    {"estimator/lda_classifier", lda_classifier},
    {"estimator/map_options", map_options},
    {"estimator/maps_of_loaded_models", maps_of_loaded_models},
    {NULL, NULL},
};
