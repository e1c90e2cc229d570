/* cmd_view.c — `nlembed view`: the library's interactive map page
 * (nle_write_view_page, src/io/view_page.c) of a 2-D embedding read from a
 * file, with the labels and images the options name. */
#include "cli.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *head =
    "Usage: nlembed view [options] EMBEDDING -o PAGE.html\n"
    "\n"
    "Writes one self-contained HTML page (it loads nothing over the network)\n"
    "with an interactive WebGL scatter plot of the N x 2 EMBEDDING: pan (drag)\n"
    "and zoom (wheel); hovering a point shows its index, its label and, with\n"
    "--images, its image; colours by --labels with a legend (class names when\n"
    "the labels have them: fashion-mnist, string labels); lasso selection\n"
    "(shift+drag, or the Lasso mode) whose indices are copied or downloaded as\n"
    "a JSON list; a search box that centres on a point's index and highlights\n"
    "it. Fine at 70,000 and at 1,000,000 points. --images: rows of w*w grey or\n"
    "w*w*3 RGB values (e.g. fashion-mnist, 28 x 28); values in [0, 255] are\n"
    "taken as they are, in [0, 1] scaled by 255, others stretched from min..max.\n"
    "\n"
    "Page size: 8 N bytes of positions, N or 2 N of labels, N D of images, all\n"
    "times 4/3 (base64), plus ~240 KB of script: 1,000,000 points with labels\n"
    "take 12 MB; 70,000 Fashion-MNIST points with images 74 MB.\n";

/* The embedding, --images and --labels; --labels naming the same source as
 * --images (fashion-mnist twice) takes the images' labels, read once (the
 * dataset takes 1-2 s to read). 0, or the exit code after the error. */
static int read_inputs(cli_env *env, nle_view_page *pg, nle_matd **X, nle_dataset **images, cli_labels *labels) {
  nle_status s = cli_load_embedding(env, pg->embedding_source, X);
  if (!s && pg->images_source) s = nle_dataset_read(env->ctx, pg->images_source, &env->read, images);
  if (s) return cli_fail(env, s);
  if (*images && (*images)->labels && env->labels_source && !strcmp(env->labels_source, pg->images_source)) {
    *labels = (cli_labels){(*images)->labels, (*images)->n_classes, (*images)->class_names};
    (*images)->labels = NULL;
    (*images)->class_names = NULL;
  }
  int rc = cli_read_labels(env, pg->embedding_source, (*X)->rows, labels);
  pg->X = *X;
  pg->images = *images ? (*images)->X : NULL;
  pg->labels = labels->codes;
  pg->n_classes = labels->n_classes;
  pg->class_names = labels->names;
  return rc;
}

typedef struct {
  const char *output;
  nle_view_page page;
} view_settings;

#define FIELD(name) .field = offsetof(view_settings, name)
static const cli_row rows[] = {
    {"output", 'o', "FILE", CLI_TEXT, FIELD(output), .help = "the page, .html or .htm"},
    {"images", 0, "DATA", CLI_TEXT, FIELD(page.images_source),
     .help = "the data the embedding was made from, shown on hover: a file or a dataset name"},
    {"title", 0, "TEXT", CLI_TEXT, FIELD(page.title), .help = "title of the page",
     .def = "the embedding's file name"},
    {"point-size", 0, "D", CLI_NUMBER, FIELD(page.point_size), CLI_POSITIVE, .help = "point diameter in pixels",
     .def = "from N: 8 up to 1,000 points, 2.5 at 100,000, 1.4 at 1,000,000"},
    {"alpha", 0, "A", CLI_NUMBER, FIELD(page.alpha), .lo = 0, .lo_open = true, .hi = 1, .help = "point opacity",
     .def = "from N", .values = "a number in (0, 1]"},
    {NULL}};

/* The command line's checks, and the page's of its file before any input is
 * read; 0, or the exit code after the error. */
static int check_request(cli_env *env, const view_settings *o, int n_args) {
  if (n_args != 1) return cli_usage_error("view", "expected one EMBEDDING, got %d", n_args);
  if (!o->output) return cli_usage_error("view", "no output file (-o PAGE.html)");
  nle_status s = nle_view_check_output(env->ctx, o->output);
  return !s ? 0 : s == NLE_ERR_ARG ? cli_usage_fail(env, s, 0) : cli_fail(env, s);
}

int cmd_view(int argc, char **argv) {
  cli_env env;
  if (cli_env_init(&env, "view", NULL)) return 1;
  view_settings o = {0};
  nle_view_page *pg = &o.page;
  int rc = cli_read_options(&env, argc, argv, head, rows, &o);
  if (!rc && !env.help_shown) rc = check_request(&env, &o, argc - optind);
  if (rc || env.help_shown) {
    cli_env_free(&env);
    return rc;
  }
  pg->embedding_source = argv[optind];
  pg->labels_source = env.labels_source;
  nle_matd *X = NULL;
  nle_dataset *images = NULL;
  cli_labels labels = {0};
  rc = read_inputs(&env, pg, &X, &images, &labels);
  if (!rc) {
    nle_status s = nle_write_view_page(env.ctx, o.output, pg);
    rc = s ? cli_fail(&env, s) : cli_commit(&env);
  }
  if (!rc) {
    FILE *f = fopen(o.output, "rb");
    long size = -1;
    if (f && !fseek(f, 0, SEEK_END)) size = ftell(f);
    if (f) fclose(f);
    cli_note(&env, "%zu points%s%s; wrote %s (%.1f MB)", X->rows, labels.codes ? ", labels" : "",
             images ? ", images" : "", o.output, size / 1e6);
  }
  nle_dataset_free(&images);
  cli_labels_free(&labels);
  nle_matd_free(&X);
  cli_env_free(&env);
  return rc;
}
