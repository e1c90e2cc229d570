/* cli.h — what the nlembed commands share: global options, loading inputs,
 * progress display and error reporting. */
#ifndef NLE_CLI_H
#define NLE_CLI_H

#include "nlembed.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>

/* Options every command accepts; the long-option values start at 1000. */
enum {
  OPT_THREADS = 1000, OPT_SEED, OPT_LABELS, OPT_QUIET, OPT_VERBOSE, OPT_MAX_MEMORY, OPT_HELP,
  OPT_DELIMITER, OPT_HEADER, OPT_LABEL_COLUMN, OPT_TRANSPOSE, OPT_COMMAND_BASE = 1100
};

#define CLI_COMMON_OPTIONS                                             \
  {"threads", required_argument, 0, OPT_THREADS},                     \
  {"seed", required_argument, 0, OPT_SEED},                           \
  {"labels", required_argument, 0, OPT_LABELS},                       \
  {"quiet", no_argument, 0, OPT_QUIET},                               \
  {"verbose", no_argument, 0, OPT_VERBOSE},                           \
  {"max-memory", required_argument, 0, OPT_MAX_MEMORY},               \
  {"help", no_argument, 0, OPT_HELP},                                 \
  {"delimiter", required_argument, 0, OPT_DELIMITER},                 \
  {"header", required_argument, 0, OPT_HEADER},                       \
  {"label-column", required_argument, 0, OPT_LABEL_COLUMN},          \
  {"transpose", no_argument, 0, OPT_TRANSPOSE}

#define CLI_COMMON_HELP                                                                  \
  "Common options:\n"                                                                    \
  "  --threads N          threads to use (default: all cores)\n"                         \
  "  --seed S             seed of every random choice (default 1)\n"                     \
  "  --labels SOURCE      labels: a one-column file, a dataset name, or a column\n"    \
  "                       inside a file: data.h5ad:obs/cell_type, data.npz:y\n"        \
  "  --max-memory SIZE    cap on one dense allocation, e.g. 8G (default 80% of RAM)\n"  \
  "                       per rank under mpirun (docs/mpi.md)\n"                        \
  "  --quiet              no progress or summary on stderr\n"                            \
  "  --verbose            more detail on stderr\n"                                       \
  "  --delimiter C        text input delimiter (default: detected; 'tab' for a tab)\n"   \
  "  --header auto|yes|no text input header row (default auto)\n"                        \
  "  --label-column N     text input column holding labels: 1-based, last, none, or\n"  \
  "                       auto (default: the column a header names label, class,\n"    \
  "                       target, or y without an x)\n"                                 \
  "  --transpose          read INPUT's columns as the points (a genes x cells\n"     \
  "                       matrix; a 10x folder is read cells as points already)\n"  \
  "  --help               this help\n"

typedef struct {
  const char *command;
  const char *help;   /* the command's --help text */
  int rc;             /* exit code once an option was bad (or 0) */
  bool help_shown;    /* --help was printed: exit 0 */
  nle_ctx *ctx;
  const char *labels_source;
  nle_read_opts read;
  bool quiet;
  bool metric_given;  /* --metric was named */
  int verbosity;
  double t0;
} cli_env;

/* Under mpirun (mpi.c; docs/mpi.md): MPI started when the launcher's
 * environment names a world (else nothing: the tool as alone); 0 to go on,
 * else the exit code after its one-line error. */
int cli_mpi_start(int *argc, char ***argv);
/* The world's ranks (1 alone), and the communicator a context takes (NULL
 * alone or on one rank). */
int cli_ranks(void);
/* A rank other than 0 of a distributed run (its output held back). */
bool cli_quiet_rank(void);
/* n summed over the ranks (every rank calls it at the same point). */
size_t cli_sum_over_ranks(size_t n);
const void *cli_world(void);
/* MPI finished; returns rc. A rank whose failure its peers did not share
 * prints its error and ends the job. */
int cli_mpi_end(int rc);

/* Sets up the context (with the world's communicator under mpirun) and
 * defaults. */
int cli_env_init(cli_env *env, const char *command, const char *help);
void cli_env_free(cli_env *env);
/* The next option that is the command's own, after handling the common ones
 * and --help; -1 at the end of the options, or once env->rc is set (a bad
 * value, an unknown option) or env->help_shown. */
int cli_next_option(cli_env *env, int argc, char **argv, const char *shortopts, const struct option *longopts);

/* From now on SIGINT and SIGTERM cancel the work at its next progress
 * report instead of killing the process (so a checkpoint can be written). */
void cli_catch_interrupts(void);

/* A library message with its option markers ({@name}, {@name=value}) in
 * the tool's spelling: --name, --name value; keep-model is --save-model's. */
void cli_spell(const char *in, char *out, size_t cap);
/* A usage error (exit 2) from the library's refusal of an option's value;
 * typed: the one-letter form the user gave (the message then says -d), or 0. */
int cli_usage_fail(cli_env *env, nle_status s, char typed);
/* Prints "nlembed CMD: error: MESSAGE" (one line) and returns the exit code. */
int cli_fail(cli_env *env, nle_status s);
/* The same for an error about the matrix read from `source` (a file): its
 * name goes in front unless the message starts with it. */
int cli_fail_in(cli_env *env, nle_status s, const char *source);
/* Renames every file the run wrote into place (the output transaction opened
 * by cli_env_init); 0, or cli_fail's exit code. */
int cli_commit(cli_env *env);
/* A number for a JSON line in printf format fmt, or null when not finite
 * (JSON has no nan or inf). */
void cli_json_number(char *buf, size_t len, const char *fmt, double v);
int cli_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Loads a dataset and, when --labels was given, its labels (checked count). */
nle_status cli_load(cli_env *env, const char *source, nle_dataset **ds);
/* Loads an embedding (any readable format) as doubles. */
nle_status cli_load_embedding(cli_env *env, const char *source, nle_matd **X);

/* Summary lines for the user on stderr unless --quiet. */
void cli_note(cli_env *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

bool cli_parse_int(const char *s, long long lo, long long hi, long long *out);
/* An option's number, checked by one rule (docs/design.md): a range refuses
 * only what cannot work (non-finite, <= 0 where a positive number is
 * needed, more than the field or the code can hold), never a magnitude
 * outside a window; what depends on the data (k against N) is the
 * library's check. On a bad value: a usage error naming the option (as
 * `option`, e.g. "--landmarks"), the value and the rule it breaks, and the
 * exit code; else 0. auto_ok: "auto" gives NLE_AUTO. */
int cli_int_arg(const char *command, const char *option, const char *arg, long long lo, long long hi, bool auto_ok,
                long long *out);
/* A finite number in the range from lo to hi, each end open or closed
 * (-INFINITY / INFINITY: no bound on that side). */
int cli_real_arg(const char *command, const char *option, const char *arg, double lo, bool lo_open, double hi,
                 bool hi_open, bool auto_ok, double *out);
/* The same into an int field (hi at most INT_MAX) or a double field. */
int cli_int_field(const char *command, const char *option, const char *arg, long long lo, long long hi, bool auto_ok,
                  int *field);
/* s as the inside of a JSON string (quotes, backslashes and control bytes
 * escaped), into buf (cut short to fit). */
void cli_json_escape(const char *s, char *buf, size_t len);
/* The value of "key": "..." in a one-line JSON text, into buf. */
bool cli_json_string(const char *json, const char *key, char *buf, size_t len);
/* Reads a small text file whole (NULL on failure). */
char *cli_read_small_file(const char *path);

/* The labels of an embedding's points (plot, view). */
typedef struct {
  int32_t *codes;     /* one a point, or NULL (no --labels) */
  int32_t n_classes;
  char **names;       /* the class names, or NULL */
} cli_labels;
/* --labels for the `rows` points of `embedding` (a file name, for the
 * message when the counts differ), unless l->codes holds them already;
 * 0, or the exit code after the error. */
int cli_read_labels(cli_env *env, const char *embedding, size_t rows, cli_labels *l);
void cli_labels_free(cli_labels *l);

/* Scatter plots (plot.c, with cairo): the first two columns of X coloured by
 * labels (may be NULL), PNG or SVG by the extension of path. */
typedef struct {
  int width, height;  /* pixels (default 1000 x 800) */
  double point_size;  /* radius in pixels; 0 (default): chosen from N */
  double alpha;       /* opacity in (0, 1]; 0 (default): chosen from N */
  const char *title;  /* title line, NULL for none */
  bool no_legend;     /* false (default): a legend when there are labels */
  int extent;         /* CLI_EXTENT_BULK (default): frame the bulk, outliers marked at the edge; ALL: every point */
} cli_plot_opts;
enum { CLI_EXTENT_BULK, CLI_EXTENT_ALL };
void cli_plot_opts_init(cli_plot_opts *o);
int cli_plot_scatter(cli_env *env, const char *path, const nle_matd *X, const cli_labels *labels,
                     const cli_plot_opts *o);

/* A method of the estimator as a command (cmd_fit.c): its options are the
 * library's rows. */
int cmd_fit(int argc, char **argv, const char *method);

/* The tool's own commands (plot, view, metrics, transform) read their
 * options from rows (rows.c), as cmd_fit reads the library's: getopt's
 * tables, the parsing into the command's settings struct and --help come
 * from one row an option. */
typedef enum {
  CLI_INT,    /* an int field, in [lo, hi] (hi INFINITY: up to INT_MAX) */
  CLI_INT64,  /* an int64_t field, in [lo, hi] */
  CLI_NUMBER, /* a double field, in the range of lo, hi, lo_open, hi_open */
  CLI_SWITCH, /* a bool field, set true */
  CLI_TEXT,   /* a const char * field */
  CLI_FILES,  /* a cli_files field: the option repeated */
  CLI_CHOICE  /* an int field: the index of the value among `choices` */
} cli_kind;

enum { CLI_MAX_FILES = 8 };
typedef struct {
  const char *names[CLI_MAX_FILES];
  int n;
} cli_files;

typedef struct {
  const char *name;
  char short_name; /* the one-letter form, or 0; messages name the option by it */
  const char *metavar;
  cli_kind kind;
  size_t field; /* offsetof the field in the command's settings struct */
  double lo, hi;
  bool lo_open, hi_open;
  const char *const *choices; /* NULL-terminated */
  const char *help;           /* one line */
  const char *def, *values;   /* for --help: the default, what it takes (or NULL) */
} cli_row;

#define CLI_POSITIVE .lo = 0, .lo_open = true, .hi = INFINITY

/* Reads the options of argv into `settings` by the rows (ended by a row
 * without a name) and the common ones into env; --help is `head`, a line a
 * row, the common options. 0 (also after --help: env->help_shown), or the
 * usage error's exit code. */
int cli_read_options(cli_env *env, int argc, char **argv, const char *head, const cli_row *rows, void *settings);
/* One --help line: "  -d, --dim N          help (default 2; values)". */
size_t cli_help_line(char *buf, size_t cap, char short_name, const char *name, const char *metavar, const char *help,
                     const char *values, const char *def);

#endif
