/* common.c — shared pieces of the nlembed commands: common options, input
 * loading, progress bar, error lines. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  cli_env *env;
  char stage[64];
  double start, last_draw;
  int last_step;
  bool tty;
  bool finished; /* the stage's bar reached 100% and ended its line */
} progress_state;

static progress_state progress;

/* Set by SIGINT/SIGTERM once cli_catch_interrupts was called; the progress
 * callback then cancels the work, which a checkpointed run saves. */
static volatile sig_atomic_t interrupted_by;

static void on_interrupt(int sig) { interrupted_by = sig; }

void cli_catch_interrupts(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}



static void format_duration(double s, char *buf, size_t len) {
  if (!isfinite(s) || s < 0) s = 0;
  long t = (long)(s + 0.5);
  if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

/* A bar with elapsed time and ETA on a terminal; a plain line every 10%
 * otherwise, so logs stay readable. */
static int show_progress(void *user, const char *stage, double fraction) {
  (void)user;
  if (interrupted_by) return 1;
  progress_state *p = &progress;
  if (!p->env || p->env->quiet) return 0;
  double now = nle_time_seconds();
  if (strncmp(p->stage, stage, sizeof p->stage - 1) != 0) {
    snprintf(p->stage, sizeof p->stage, "%s", stage);
    p->start = now;
    p->last_draw = 0;
    p->last_step = -1;
    p->finished = false;
  }
  if (p->finished) return 0; /* its closing reports (a last check, a final E) */
  if (fraction < 0) fraction = 0;
  if (fraction > 1) fraction = 1;
  double elapsed = now - p->start;
  char el[32], eta[32];
  format_duration(elapsed, el, sizeof el);
  format_duration(fraction > 0 ? elapsed * (1 - fraction) / fraction : 0, eta, sizeof eta);
  if (p->tty) {
    if (fraction < 1 && now - p->last_draw < 0.1) return 0;
    p->last_draw = now;
    char bar[31];
    int filled = (int)(fraction * 30);
    for (int i = 0; i < 30; i++) bar[i] = i < filled ? '#' : '-';
    bar[30] = '\0';
    fprintf(stderr, "\r%-22s [%s] %3.0f%%  %s elapsed, ETA %s ", stage, bar, 100 * fraction, el, eta);
    if (fraction >= 1) {
      fputc('\n', stderr);
      p->finished = true;
    }
  } else {
    int step = (int)(fraction * 10);
    if (step == p->last_step || elapsed < 1.0) return 0;
    p->last_step = step;
    fprintf(stderr, "nlembed: %s %3.0f%% (%s elapsed, ETA %s)\n", stage, 100 * fraction, el, eta);
  }
  return 0;
}

/* A line for the user: on a terminal, first wipe a bar drawn mid-line (the
 * next update draws it again below). */
static void clear_bar(void) {
  if (progress.tty && progress.last_draw > 0 && !progress.finished) fputs("\r\033[K", stderr);
}

void cli_spell(const char *in, char *out, size_t cap) {
  size_t o = 0;
  while (*in && o + 1 < cap) {
    const char *end = in[0] == '{' && in[1] == '@' ? strchr(in, '}') : NULL;
    if (!end) {
      out[o++] = *in++;
      continue;
    }
    const char *eq = memchr(in, '=', (size_t)(end - in));
    int name_len = (int)((eq ? eq : end) - in - 2);
    const char *name = in + 2;
    if (name_len == 10 && !strncmp(name, "keep-model", 10)) {
      name = "save-model";
      eq = NULL; /* --save-model FILE, not its value */
    }
    int w = eq ? snprintf(out + o, cap - o, "--%.*s %.*s", name_len, name, (int)(end - eq - 1), eq + 1)
               : snprintf(out + o, cap - o, "--%.*s", name_len, name);
    if (w < 0 || (size_t)w >= cap - o) break;
    o += (size_t)w;
    in = end + 1;
  }
  out[o] = '\0';
}

static void show_log(void *user, int level, const char *line) {
  (void)user;
  (void)level;
  clear_bar();
  char spelled[1024];
  cli_spell(line, spelled, sizeof spelled);
  fprintf(stderr, "nlembed: %s\n", spelled);
}

int cli_env_init(cli_env *env, const char *command, const char *help) {
  memset(env, 0, sizeof *env);
  env->command = command;
  env->help = help;
  optind = 1;
  opterr = 0; /* unknown options get our one-line error, not getopt's */
  env->ctx = nle_ctx_new();
  if (!env->ctx) {
    fprintf(stderr, "nlembed %s: error: out of memory\n", command);
    return 1;
  }
  nle_status s = nle_ctx_set_comm(env->ctx, cli_world()); /* NULL alone: nothing */
  if (s) {
    fprintf(stderr, "nlembed %s: error: %s\n", command, nle_ctx_error(env->ctx));
    nle_ctx_free(&env->ctx);
    return 1;
  }
  nle_ctx_set_option_spelling(env->ctx, NLE_SPELL_CLI); /* messages say --components allow */
  nle_read_opts_init(&env->read);
  env->t0 = nle_time_seconds();
  nle_outputs_begin(env->ctx); /* committed by cli_commit once the run succeeded */
  return 0;
}

void cli_json_number(char *buf, size_t len, const char *fmt, double v) {
  if (isfinite(v)) snprintf(buf, len, fmt, v);
  else snprintf(buf, len, "null");
}

int cli_commit(cli_env *env) {
  nle_status s = nle_outputs_commit(env->ctx);
  return s ? cli_fail(env, s) : 0;
}

/* An uncommitted transaction (a failed run) is removed with the context. */
void cli_env_free(cli_env *env) { nle_ctx_free(&env->ctx); }

/* "8G", "512M", "1.5T", or bytes. */
static bool parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || v <= 0) return false;
  double mult = 1;
  switch (toupper((unsigned char)*end)) {
  case 'K': mult = 1024.0; end++; break;
  case 'M': mult = 1024.0 * 1024; end++; break;
  case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
  case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
  default: break;
  }
  if (*end == 'i' || *end == 'I') end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end || v * mult < 1 || !(v * mult < 0x1p64)) return false; /* what a size_t holds */
  *out = (size_t)(v * mult);
  return true;
}

static int common_option(cli_env *env, int opt, const char *arg) {
  long long v;
  switch (opt) {
  case OPT_THREADS:
    /* 4096: the OpenMP runtime ends the process when the system refuses it
     * a thread, which a count past the usual limits on processes (ulimit
     * -u) would bring; 0 is all cores */
    if (cli_int_arg(env->command, "--threads", arg, 0, 4096, false, &v)) return -1;
    nle_ctx_set_threads(env->ctx, (int)v);
    return 1;
  case OPT_SEED: {
    char *end;
    errno = 0;
    unsigned long long seed = strtoull(arg, &end, 10);
    if (end == arg || *end || errno || *arg == '-')
      return cli_usage_error(env->command, "--seed takes a non-negative integer, not \"%s\"", arg), -1;
    nle_ctx_set_seed(env->ctx, seed);
    return 1;
  }
  case OPT_LABELS: env->labels_source = arg; return 1;
  case OPT_QUIET: env->quiet = true; return 1;
  case OPT_VERBOSE: env->verbosity++; return 1;
  case OPT_MAX_MEMORY: {
    size_t bytes;
    if (!parse_size(arg, &bytes))
      return cli_usage_error(env->command, "--max-memory takes a size such as 512M or 8G, not \"%s\"", arg), -1;
    nle_ctx_set_max_memory(env->ctx, bytes);
    return 1;
  }
  case OPT_DELIMITER:
    if (!strcmp(arg, "tab") || !strcmp(arg, "\\t")) env->read.delimiter = '\t';
    else if (!strcmp(arg, "space")) env->read.delimiter = ' ';
    else if (strlen(arg) == 1) env->read.delimiter = arg[0];
    else return cli_usage_error(env->command, "--delimiter takes one character, 'tab' or 'space'"), -1;
    return 1;
  case OPT_HEADER:
    if (!strcmp(arg, "auto")) env->read.header = NLE_HEADER_AUTO;
    else if (!strcmp(arg, "yes")) env->read.header = NLE_HEADER_YES;
    else if (!strcmp(arg, "no")) env->read.header = NLE_HEADER_NO;
    else return cli_usage_error(env->command, "--header takes auto, yes or no"), -1;
    return 1;
  case OPT_LABEL_COLUMN:
    if (!strcmp(arg, "last")) env->read.label_column = NLE_LABEL_LAST;
    else if (!strcmp(arg, "none")) env->read.label_column = NLE_LABEL_NONE;
    else if (!strcmp(arg, "auto")) env->read.label_column = NLE_LABEL_AUTO;
    else if (cli_parse_int(arg, 1, INT_MAX, &v)) env->read.label_column = (int)v - 1;
    else return cli_usage_error(env->command, "--label-column takes a 1-based column, last, none or auto"), -1;
    return 1;
  case OPT_TRANSPOSE: env->read.transpose = true; return 1;
  default: return 0;
  }
}

int cli_next_option(cli_env *env, int argc, char **argv, const char *shortopts, const struct option *longopts) {
  while (!env->rc && !env->help_shown) {
    int c = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (c == -1) return -1;
    if (c == '?') {
      env->rc = cli_usage_error(env->command, "unknown option or missing value: %s", argv[optind - 1]);
      return -1;
    }
    if (c == OPT_HELP) {
      fputs(env->help, stdout);
      env->help_shown = true;
      return -1;
    }
    int common = common_option(env, c, optarg);
    if (common < 0) env->rc = 2;
    else if (common == 0) return c;
  }
  return -1;
}

/* Installs callbacks once the options are known. */
static void env_ready(cli_env *env) {
  progress.env = env;
  progress.tty = isatty(STDERR_FILENO);
  nle_ctx_set_progress(env->ctx, show_progress, NULL); /* also the interrupt check */
  if (!env->quiet) {
    nle_ctx_set_log(env->ctx, show_log, NULL);
    nle_ctx_set_verbosity(env->ctx, env->verbosity);
  }
}

/* The context's error in the tool's spelling. */
static const char *spelled_error(cli_env *env, char *buf, size_t cap) {
  cli_spell(nle_ctx_error(env->ctx), buf, cap);
  return buf;
}

int cli_usage_fail(cli_env *env, nle_status s, char typed) {
  char buf[1024];
  const char *msg = spelled_error(env, buf, sizeof buf);
  size_t len = strlen(env->command);
  if (!strncmp(msg, env->command, len) && msg[len] == ':' && msg[len + 1] == ' ') msg += len + 2;
  (void)s;
  /* an option refused as another method's is named as the user typed it
   * (-d, not --dim) */
  if (typed && !strncmp(msg, "--", 2) && strstr(msg, " is for ")) {
    size_t name_len = strcspn(msg + 2, " ");
    return cli_usage_error(env->command, "-%c%s", typed, msg + 2 + name_len);
  }
  return cli_usage_error(env->command, "%s", msg);
}

int cli_fail(cli_env *env, nle_status s) {
  char spelled[1024];
  const char *msg = spelled_error(env, spelled, sizeof spelled);
  if (progress.tty && !env->quiet) fputc('\n', stderr);
  if (s == NLE_ERR_CANCELLED && interrupted_by) {
    fprintf(stderr, "nlembed %s: stopped by %s: %s\n", env->command, interrupted_by == SIGINT ? "SIGINT" : "SIGTERM", msg);
    return 128 + interrupted_by; /* as the shell reports a signal */
  }
  fprintf(stderr, "nlembed %s: error: %s%s\n", env->command, *msg ? msg : nle_status_message(s),
          s == NLE_ERR_MEMCAP ? " (raise the cap with --max-memory)" : "");
  return s == NLE_ERR_ARG ? 2 : 1;
}

int cli_fail_in(cli_env *env, nle_status s, const char *source) {
  char spelled[1024];
  const char *msg = spelled_error(env, spelled, sizeof spelled);
  size_t len = strlen(source);
  if (!*msg || s == NLE_ERR_CANCELLED || s == NLE_ERR_MEMCAP || s == NLE_ERR_NOMEM ||
      (!strncmp(msg, source, len) && msg[len] == ':'))
    return cli_fail(env, s);
  if (progress.tty && !env->quiet) fputc('\n', stderr);
  fprintf(stderr, "nlembed %s: error: %s: %s\n", env->command, source, msg);
  return s == NLE_ERR_ARG ? 2 : 1;
}

int cli_usage_error(const char *command, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nlembed %s: error: ", command);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see nlembed %s --help)\n", command);
  va_end(ap);
  return 2;
}

nle_status cli_load(cli_env *env, const char *source, nle_dataset **ds) {
  env_ready(env);
  nle_status s = nle_dataset_read(env->ctx, source, &env->read, ds);
  if (s || !env->labels_source) return s;
  int32_t *labels;
  int64_t n;
  int32_t classes;
  char **names;
  int64_t rows = (*ds)->X ? (int64_t)(*ds)->X->rows : (*ds)->sparse->rows;
  nle_read_opts label_opts = env->read;
  label_opts.transpose = false; /* --transpose is INPUT's */
  s = nle_labels_read(env->ctx, env->labels_source, &label_opts, rows, &labels, &n, &classes, &names);
  if (s) {
    nle_dataset_free(ds);
    return s;
  }
  free((*ds)->labels);
  nle_class_names_free(&(*ds)->class_names, (*ds)->n_classes);
  (*ds)->labels = labels;
  (*ds)->n_classes = classes;
  (*ds)->class_names = names;
  return NLE_OK;
}

nle_status cli_load_embedding(cli_env *env, const char *source, nle_matd **X) {
  env_ready(env);
  nle_read_opts o;
  nle_read_opts_init(&o);
  nle_dataset *ds;
  nle_status s = nle_dataset_read(env->ctx, source, &o, &ds);
  if (s) return s;
  s = nle_matf_to_matd(env->ctx, ds->X, X);
  nle_dataset_free(&ds);
  return s;
}

void cli_note(cli_env *env, const char *fmt, ...) {
  if (env->quiet) return;
  clear_bar();
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "nlembed %s: ", env->command);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

bool cli_parse_int(const char *s, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* The rule of a range as the messages say it: "an integer >= 2", "a
 * number in [0, 1)", "a finite number > 0". */
static void int_rule(long long lo, long long hi, bool above, char *buf, size_t len) {
  if (hi >= INT_MAX && !above) snprintf(buf, len, "an integer >= %lld", lo);
  else snprintf(buf, len, "an integer from %lld to %lld", lo, hi);
}

static void real_rule(double lo, bool lo_open, double hi, bool hi_open, char *buf, size_t len) {
  if (isinf(lo) && isinf(hi)) snprintf(buf, len, "a finite number");
  else if (isinf(hi)) snprintf(buf, len, "a finite number %s %.17g", lo_open ? ">" : ">=", lo);
  else if (isinf(lo)) snprintf(buf, len, "a number %s %.17g", hi_open ? "<" : "<=", hi);
  else snprintf(buf, len, "a number in %c%.17g, %.17g%c", lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
}

int cli_int_arg(const char *command, const char *option, const char *arg, long long lo, long long hi, bool auto_ok,
                long long *out) {
  if (auto_ok && !strcmp(arg, "auto")) {
    *out = NLE_AUTO;
    return 0;
  }
  char *end;
  errno = 0;
  long long v = strtoll(arg, &end, 10);
  if (end != arg && !*end && !errno && v >= lo && v <= hi) {
    *out = v;
    return 0;
  }
  char rule[96];
  /* above the top only when the text is a whole number past it (strtoll
   * saturates with ERANGE) */
  bool above = end != arg && !*end && (errno == ERANGE ? v > 0 : v > hi);
  int_rule(lo, hi, above, rule, sizeof rule);
  return cli_usage_error(command, "%s takes %s%s, not \"%s\"", option, rule, auto_ok ? " or auto" : "", arg);
}

int cli_int_field(const char *command, const char *option, const char *arg, long long lo, long long hi, bool auto_ok,
                  int *field) {
  long long v = 0;
  int rc = cli_int_arg(command, option, arg, lo, hi < INT_MAX ? hi : INT_MAX, auto_ok, &v);
  if (!rc) *field = (int)v;
  return rc;
}

int cli_real_arg(const char *command, const char *option, const char *arg, double lo, bool lo_open, double hi,
                 bool hi_open, bool auto_ok, double *out) {
  if (auto_ok && !strcmp(arg, "auto")) {
    *out = NLE_AUTO;
    return 0;
  }
  char *end;
  double v = strtod(arg, &end);
  /* no errno test: an underflow to a tiny or zero value is judged by the
   * range like any other (1e-400 is not > 0) */
  if (end != arg && !*end && isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi)) {
    *out = v;
    return 0;
  }
  char rule[128];
  real_rule(lo, lo_open, hi, hi_open, rule, sizeof rule);
  return cli_usage_error(command, "%s takes %s%s, not \"%s\"", option, rule, auto_ok ? " or auto" : "", arg);
}

bool cli_json_string(const char *json, const char *key, char *buf, size_t len) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  const char *p = strstr(json, pat);
  if (!p || len == 0) return false;
  p += strlen(pat);
  size_t n = 0;
  while (*p && *p != '"' && n + 1 < len) {
    if (*p == '\\' && p[1]) p++;
    buf[n++] = *p++;
  }
  buf[n] = '\0';
  return true;
}

char *cli_read_small_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(65537);
  size_t n = buf ? fread(buf, 1, 65536, f) : 0;
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

void cli_json_escape(const char *s, char *buf, size_t len) {
  size_t n = 0;
  for (; s && *s && n + 7 < len; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      buf[n++] = '\\';
      buf[n++] = (char)ch;
    } else if (ch < 0x20) {
      n += (size_t)snprintf(buf + n, len - n, "\\u%04x", ch);
    } else {
      buf[n++] = (char)ch;
    }
  }
  if (len) buf[n < len ? n : len - 1] = '\0';
}

size_t cli_help_line(char *buf, size_t cap, char short_name, const char *name, const char *metavar, const char *help,
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

int cli_read_labels(cli_env *env, const char *embedding, size_t rows, cli_labels *l) {
  if (!env->labels_source) return 0;
  int64_t n = (int64_t)rows;
  /* the count tells a header from a first label ("class 3" twice) */
  nle_status s = l->codes ? NLE_OK
                          : nle_labels_read(env->ctx, env->labels_source, &env->read, n, &l->codes, &n, &l->n_classes,
                                            &l->names);
  /* read again without the count to say what the file holds */
  if (s) s = nle_labels_read(env->ctx, env->labels_source, &env->read, 0, &l->codes, &n, &l->n_classes, &l->names);
  if (s) return cli_fail(env, s);
  if (n == (int64_t)rows) return 0;
  fprintf(stderr, "nlembed %s: error: %s has %zu rows, --labels %s has %lld\n", env->command, embedding, rows,
          env->labels_source, (long long)n);
  return 1;
}

void cli_labels_free(cli_labels *l) {
  nle_class_names_free(&l->names, l->n_classes);
  free(l->codes);
  l->codes = NULL;
}
