/* cmd_plot.c — `nlembed plot`: a scatter plot of a 2-D embedding. */
#include "cli.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *head =
    "Usage: nlembed plot [options] EMBEDDING -o OUTPUT.png|.svg\n"
    "\n"
    "Scatter plot of the first two columns of EMBEDDING, coloured by --labels\n"
    "(a one-column file, or a dataset name such as fashion-mnist, which also\n"
    "names the classes in the legend). Point size and opacity follow N. The\n"
    "frame holds the bulk of the points: points far from the rest (outside the\n"
    "1%-99% quantile range widened by half its length, on either axis) are\n"
    "drawn as triangles on the frame's edge pointing to them, and counted\n"
    "under it (--extent all frames every point).\n";

typedef struct {
  const char *output, *title;
  cli_files info;
  cli_plot_opts plot;
} plot_settings;

#define FIELD(name) .field = offsetof(plot_settings, name)
static const cli_row rows[] = {
    {"output", 'o', "FILE", CLI_TEXT, FIELD(output), .help = "the picture, .png or .svg"},
    {"title", 0, "TEXT", CLI_TEXT, FIELD(title), .help = "title line", .def = "the embedding's file name"},
    {"info", 0, "FILE", CLI_FILES, FIELD(info),
     .help = "append the \"summary\" of a JSON line written by another command (pca, metrics) to the title; "
             "repeatable"},
    /* 32767: the largest side of a cairo image surface */
    {"width", 0, "W", CLI_INT, FIELD(plot.width), .lo = 1, .hi = 32767, .help = "pixels", .def = "1000"},
    {"height", 0, "H", CLI_INT, FIELD(plot.height), .lo = 1, .hi = 32767, .help = "pixels", .def = "800"},
    {"point-size", 0, "R", CLI_NUMBER, FIELD(plot.point_size), CLI_POSITIVE, .help = "point radius in pixels",
     .def = "from N"},
    {"alpha", 0, "A", CLI_NUMBER, FIELD(plot.alpha), .lo = 0, .lo_open = true, .hi = 1, .help = "point opacity",
     .def = "from N", .values = "a number in (0, 1]"},
    {"no-legend", 0, NULL, CLI_SWITCH, FIELD(plot.no_legend), .help = "no legend"},
    {"extent", 0, "E", CLI_CHOICE, FIELD(plot.extent), .choices = (const char *const[]){"bulk", "all", NULL},
     .help = "frame the bulk of the points, or all of them", .def = "bulk"},
    {NULL}};

/* The title: --title or the file's name, then each --info's summary. */
static int full_title(const plot_settings *o, const char *embedding, char *title, size_t cap) {
  const char *base = strrchr(embedding, '/');
  snprintf(title, cap, "%s", o->title ? o->title : base ? base + 1 : embedding);
  for (int i = 0; i < o->info.n; i++) {
    char *text = cli_read_small_file(o->info.names[i]), summary[512];
    bool read = text && cli_json_string(text, "summary", summary, sizeof summary);
    free(text);
    if (!read) {
      fprintf(stderr, "nlembed plot: error: %s: cannot read a JSON line with a \"summary\"\n", o->info.names[i]);
      return 1;
    }
    size_t len = strlen(title);
    snprintf(title + len, cap - len, "%s%s", len ? " — " : "", summary);
  }
  return 0;
}

int cmd_plot(int argc, char **argv) {
  cli_env env;
  if (cli_env_init(&env, "plot", NULL)) return 1;
  plot_settings o = {0};
  cli_plot_opts_init(&o.plot);
  int rc = cli_read_options(&env, argc, argv, head, rows, &o);
  if (!rc && !env.help_shown && optind != argc - 1)
    rc = cli_usage_error("plot", "expected one EMBEDDING, got %d", argc - optind);
  if (!rc && !env.help_shown && !o.output) rc = cli_usage_error("plot", "no output file (-o FILE.png)");
  if (rc || env.help_shown) {
    cli_env_free(&env);
    return rc;
  }
  const char *embedding = argv[optind];
  char title[2048];
  rc = full_title(&o, embedding, title, sizeof title);
  o.plot.title = title;
  nle_status s = rc ? NLE_OK : nle_check_output(env.ctx, o.output, NLE_OUTPUT_IMAGE);
  nle_matd *X = NULL;
  cli_labels labels = {0};
  if (!rc && !s) s = cli_load_embedding(&env, embedding, &X);
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc && X->cols < 2) {
    fprintf(stderr, "nlembed plot: error: %s has %zu column(s); a scatter plot needs 2\n", embedding, X->cols);
    rc = 1;
  }
  if (!rc) rc = cli_read_labels(&env, embedding, X->rows, &labels);
  if (!rc) rc = cli_plot_scatter(&env, o.output, X, &labels, &o.plot);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) cli_note(&env, "%zu points; wrote %s", X->rows, o.output);
  cli_labels_free(&labels);
  nle_matd_free(&X);
  cli_env_free(&env);
  return rc;
}
