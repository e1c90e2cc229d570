/* cmd_plot.c — `nlembed plot`: a scatter plot of a 2-D embedding. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *help =
    "Usage: nlembed plot [options] EMBEDDING -o OUTPUT.png|.svg\n"
    "\n"
    "Scatter plot of the first two columns of EMBEDDING, coloured by --labels\n"
    "(a one-column file, or a dataset name such as fashion-mnist, which also\n"
    "names the classes in the legend). Point size and opacity follow N.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE   the picture, .png or .svg\n"
    "  --title TEXT        title line (default: the embedding's file name)\n"
    "  --info FILE         append the \"summary\" of a JSON line written by another\n"
    "                      command (pca, metrics) to the title; repeatable\n"
    "  --width W           pixels (default 1000)\n"
    "  --height H          pixels (default 800)\n"
    "  --point-size R      point radius in pixels (default from N)\n"
    "  --alpha A           point opacity in (0, 1] (default from N)\n"
    "  --no-legend         no legend\n"
    "  --extent E          bulk (default): frame the bulk of the points; points far\n"
    "                      from the rest (outside the 1%-99% quantile range widened\n"
    "                      by half its length, on either axis) are drawn as\n"
    "                      triangles on the frame's edge pointing to them, and\n"
    "                      counted under it; all: frame every point\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_TITLE = OPT_COMMAND_BASE, OPT_INFO, OPT_WIDTH, OPT_HEIGHT, OPT_SIZE, OPT_ALPHA, OPT_NO_LEGEND, OPT_EXTENT };

int cmd_plot(int argc, char **argv) {
  static const struct option longopts[] = {
      {"output", required_argument, 0, 'o'}, {"title", required_argument, 0, OPT_TITLE},
      {"info", required_argument, 0, OPT_INFO}, {"width", required_argument, 0, OPT_WIDTH},
      {"height", required_argument, 0, OPT_HEIGHT}, {"point-size", required_argument, 0, OPT_SIZE},
      {"alpha", required_argument, 0, OPT_ALPHA}, {"no-legend", no_argument, 0, OPT_NO_LEGEND},
      {"extent", required_argument, 0, OPT_EXTENT},
      CLI_COMMON_OPTIONS, {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "plot", help)) return 1;
  cli_plot_opts o;
  cli_plot_opts_init(&o);
  const char *output = NULL, *title = NULL, *info[8];
  int n_info = 0;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case OPT_TITLE: title = optarg; break;
    case OPT_INFO:
      if (n_info < 8) info[n_info++] = optarg;
      else env.rc = cli_usage_error("plot", "at most 8 --info files");
      break;
    case OPT_WIDTH:
    case OPT_HEIGHT:
      /* 32767: the largest side of a cairo image surface */
      env.rc = cli_int_field("plot", c == OPT_WIDTH ? "--width" : "--height", optarg, 1, 32767, false,
                             c == OPT_WIDTH ? &o.width : &o.height);
      break;
    case OPT_SIZE:
      env.rc = cli_real_arg("plot", "--point-size", optarg, 0, true, INFINITY, false, false, &o.point_size);
      break;
    case OPT_ALPHA:
      env.rc = cli_real_arg("plot", "--alpha", optarg, 0, true, 1, false, false, &o.alpha);
      break;
    case OPT_NO_LEGEND: o.legend = false; break;
    case OPT_EXTENT:
      if (!strcmp(optarg, "bulk") || !strcmp(optarg, "all")) o.all = !strcmp(optarg, "all");
      else env.rc = cli_usage_error("plot", "--extent takes bulk or all, not \"%s\"", optarg);
      break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && optind != argc - 1) rc = cli_usage_error("plot", "expected one EMBEDDING, got %d", argc - optind);
  if (!rc && !output) rc = cli_usage_error("plot", "no output file (-o FILE.png)");
  char full_title[2048] = "";
  if (!rc) {
    const char *base = strrchr(argv[optind], '/');
    snprintf(full_title, sizeof full_title, "%s", title ? title : base ? base + 1 : argv[optind]);
  }
  for (int i = 0; !rc && i < n_info; i++) {
    char *text = cli_read_small_file(info[i]), summary[512];
    if (!text || !cli_json_string(text, "summary", summary, sizeof summary)) {
      fprintf(stderr, "nlembed plot: error: %s: cannot read a JSON line with a \"summary\"\n", info[i]);
      rc = 1;
    } else {
      size_t len = strlen(full_title);
      snprintf(full_title + len, sizeof full_title - len, "%s%s", len ? " — " : "", summary);
    }
    free(text);
  }
  o.title = full_title;
  nle_status s = NLE_OK;
  if (!rc) s = nle_check_output(env.ctx, output, NLE_OUTPUT_IMAGE);
  nle_matd *X = NULL;
  int32_t *labels = NULL, classes = 0;
  char **names = NULL;
  if (!rc && !s) s = cli_load_embedding(&env, argv[optind], &X);
  if (!rc && !s && X->cols < 2) {
    fprintf(stderr, "nlembed plot: error: %s has %zu column(s); a scatter plot needs 2\n", argv[optind], X->cols);
    rc = 1;
  }
  if (!rc && !s && env.labels_source) {
    int64_t n;
    s = nle_labels_read(env.ctx, env.labels_source, &env.read, (int64_t)X->rows, &labels, &n, &classes, &names);
  }
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) rc = cli_plot_scatter(&env, output, X, labels, classes, names, &o);
  if (!rc) rc = cli_commit(&env); /* every output of the run, or none */
  if (!rc) cli_note(&env, "%zu points; wrote %s", X->rows, output);
  nle_class_names_free(&names, classes);
  free(labels);
  nle_matd_free(&X);
  cli_env_free(&env);
  return rc;
}
