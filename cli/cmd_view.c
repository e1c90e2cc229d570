/* cmd_view.c — `nlembed view`: one self-contained HTML page with an
 * interactive WebGL scatter plot of a 2-D embedding (viewer/: the page's
 * script, regl-scatterplot bundled with esbuild, compiled into the tool as
 * bytes by the Makefile). The data go into the page as base64 blocks the
 * script decodes: float32 positions, uint8/uint16 label codes, uint8 images
 * (decoded one row at a time on hover). Written through the library's staged
 * outputs, so a failed run leaves no partial page. */
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *help =
    "Usage: nlembed view [options] EMBEDDING -o PAGE.html\n"
    "\n"
    "Writes one self-contained HTML page (it loads nothing over the network)\n"
    "with an interactive WebGL scatter plot of the N x 2 EMBEDDING: pan (drag)\n"
    "and zoom (wheel); hovering a point shows its index, its label and, with\n"
    "--images, its image; colours by --labels with a legend (class names when\n"
    "the labels have them: fashion-mnist, string labels); lasso selection\n"
    "(shift+drag, or the Lasso mode) whose indices are copied or downloaded as\n"
    "a JSON list; a search box that centres on a point's index and highlights\n"
    "it. Fine at 70,000 and at 1,000,000 points.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE   the page, .html or .htm\n"
    "  --images DATA       the data the embedding was made from, shown on hover:\n"
    "                      rows of w*w grey or w*w*3 RGB values (e.g.\n"
    "                      fashion-mnist, 28 x 28), a file or a dataset name;\n"
    "                      values in [0, 255] are taken as they are, in [0, 1]\n"
    "                      scaled by 255, others stretched from min..max\n"
    "  --title TEXT        title of the page (default: the embedding's file name)\n"
    "  --point-size D      point diameter in pixels (default from N: 8 up to 1,000\n"
    "                      points, 2.5 at 100,000, 1.4 at 1,000,000)\n"
    "  --alpha A           point opacity in (0, 1] (default from N)\n"
    "\n"
    "Page size: 8 N bytes of positions, N or 2 N of labels, N D of images, all\n"
    "times 4/3 (base64), plus ~240 KB of script: 1,000,000 points with labels\n"
    "take 12 MB; 70,000 Fashion-MNIST points with images 74 MB.\n"
    "\n" CLI_COMMON_HELP;

enum { OPT_IMAGES = OPT_COMMAND_BASE, OPT_TITLE, OPT_SIZE, OPT_ALPHA };

/* A browser reads each block of the page as one string: V8 caps strings at
 * 2^29 - 24 characters. */
#define MAX_BLOCK_CHARS 500000000ULL

static int view_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int view_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("nlembed view: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

static void write_base64(FILE *f, const uint8_t *p, size_t n) {
  static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char buf[4096];
  size_t k = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    buf[k++] = a[v >> 18];
    buf[k++] = a[(v >> 12) & 63];
    buf[k++] = i + 1 < n ? a[(v >> 6) & 63] : '=';
    buf[k++] = i + 2 < n ? a[v & 63] : '=';
    if (k == sizeof buf) {
      fwrite(buf, 1, k, f);
      k = 0;
    }
  }
  fwrite(buf, 1, k, f);
}

/* s as a JSON string that is also safe inside a <script> element: <, > and &
 * as \u escapes, so no "</script>" can appear. */
static void write_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void write_html_text(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, f);
  }
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

typedef struct {
  const char *title, *emb_source, *labels_source, *images_source;
  double point_size, alpha;
  const nle_matd *X;
  const int32_t *labels;
  int32_t n_classes;
  char *const *names;
  const uint8_t *pixels; /* N x (w h channels), or NULL */
  int img_w, img_h, img_channels;
} page;

static void write_page(FILE *f, const page *p) {
  size_t n = p->X->rows;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"nlembed " NLE_VERSION_STRING " view\">\n<title>",
        f);
  write_html_text(f, p->title);
  fputs("</title>\n</head>\n<body>\n<script id=\"nle-meta\" type=\"application/json\">", f);
  fprintf(f, "{\"format\": \"nlembed-view\", \"version\": 1, \"n\": %zu, \"title\": ", n);
  write_json_string(f, p->title);
  fputs(", \"embedding\": ", f);
  write_json_string(f, p->emb_source);
  fprintf(f, ", \"pointSize\": %.9g, \"opacity\": %.9g, \"labels\": ", p->point_size, p->alpha);
  if (p->labels) {
    fputs("{\"source\": ", f);
    write_json_string(f, p->labels_source);
    fprintf(f, ", \"type\": \"%s\", \"classes\": %d, \"names\": ", p->n_classes <= 256 ? "uint8" : "uint16",
            (int)p->n_classes);
    if (p->names) {
      fputc('[', f);
      for (int32_t c = 0; c < p->n_classes; c++) {
        if (c) fputs(", ", f);
        write_json_string(f, p->names[c]);
      }
      fputc(']', f);
    } else {
      fputs("null", f);
    }
    fputc('}', f);
  } else {
    fputs("null", f);
  }
  fputs(", \"images\": ", f);
  if (p->pixels) {
    fputs("{\"source\": ", f);
    write_json_string(f, p->images_source);
    fprintf(f, ", \"width\": %d, \"height\": %d, \"channels\": %d}", p->img_w, p->img_h, p->img_channels);
  } else {
    fputs("null", f);
  }
  fputs("}</script>\n", f);

  /* Positions: float32, little-endian, x0 y0 x1 y1 ... */
  fputs("<script id=\"nle-xy\" type=\"application/octet-stream\">", f);
  uint8_t chunk[3 * 1024 * 8]; /* a multiple of 3 and of 8: no padding mid-stream */
  size_t k = 0;
  for (size_t i = 0; i < 2 * n; i++) {
    float v = (float)p->X->data[i];
    uint32_t u;
    memcpy(&u, &v, 4);
    for (int b = 0; b < 4; b++) chunk[k++] = (uint8_t)(u >> (8 * b));
    if (k == sizeof chunk) {
      write_base64(f, chunk, k);
      k = 0;
    }
  }
  write_base64(f, chunk, k);
  fputs("</script>\n", f);

  if (p->labels) {
    fputs("<script id=\"nle-labels\" type=\"application/octet-stream\">", f);
    int wide = p->n_classes > 256;
    k = 0;
    for (size_t i = 0; i < n; i++) {
      uint32_t c = (uint32_t)p->labels[i];
      chunk[k++] = (uint8_t)c;
      if (wide) chunk[k++] = (uint8_t)(c >> 8);
      if (k == sizeof chunk) {
        write_base64(f, chunk, k);
        k = 0;
      }
    }
    write_base64(f, chunk, k);
    fputs("</script>\n", f);
  }
  fputs("<script>", f);
  fwrite(nle_viewer_js, 1, nle_viewer_js_len, f);
  fputs("</script>\n", f);
  /* The images after the script: the plot is drawn while the browser still
   * parses them (6 of the 8 seconds to a first frame at 70,000 Fashion-MNIST
   * images when they came first); the page reads them once it has them. */
  if (p->pixels) {
    fputs("<script id=\"nle-images\" type=\"application/octet-stream\">", f);
    write_base64(f, p->pixels, n * (size_t)p->img_w * (size_t)p->img_h * (size_t)p->img_channels);
    fputs("</script>\n", f);
  }
  fputs("</body>\n</html>\n", f);
}

/* The image data as bytes: values already in [0, 255] kept, [0, 1] scaled by
 * 255, anything else stretched linearly from its min..max. */
static uint8_t *image_bytes(const nle_matf *Y) {
  size_t len = Y->rows * Y->cols;
  uint8_t *out = malloc(len ? len : 1);
  if (!out) return NULL;
  float lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < len; i++) {
    lo = fminf(lo, Y->data[i]);
    hi = fmaxf(hi, Y->data[i]);
  }
  double offset = 0, scale = 1;
  if (lo >= 0 && hi <= 1) scale = 255;
  else if (!(lo >= 0 && hi <= 255)) {
    offset = lo;
    scale = hi > lo ? 255.0 / ((double)hi - lo) : 0;
  }
  for (size_t i = 0; i < len; i++) {
    double v = ((double)Y->data[i] - offset) * scale;
    out[i] = (uint8_t)(v <= 0 ? 0 : v >= 255 ? 255 : lrint(v));
  }
  return out;
}

static int image_shape(size_t d, int *w, int *h, int *channels) {
  for (int ch = 1; ch <= 3; ch += 2) {
    if (d % (size_t)ch) continue;
    size_t side = (size_t)llround(sqrt((double)(d / (size_t)ch)));
    if (side > 0 && side * side * (size_t)ch == d && side <= 4096) {
      *w = *h = (int)side;
      *channels = ch;
      return 1;
    }
  }
  return 0;
}

/* --images: the rows' pictures, as many as the embedding's points, into
 * pg->pixels; --labels naming the same source (fashion-mnist twice) take
 * its labels, read once (the dataset takes 1-2 s to read). 0, or the exit
 * code after the error (*s: a library failure left to the caller). */
static int read_images(cli_env *env, page *pg, const nle_matd *X, const char *emb, int32_t **labels, int32_t *classes,
                       char ***names, nle_status *s) {
  nle_dataset *img = NULL;
  int rc = 0;
  *s = nle_dataset_read(env->ctx, pg->images_source, &env->read, &img);
  if (!*s && img->X->rows != X->rows)
    rc = view_error("%s has %zu rows, --images %s has %zu", emb, X->rows, pg->images_source, img->X->rows);
  else if (!*s && !image_shape(img->X->cols, &pg->img_w, &pg->img_h, &pg->img_channels))
    rc = view_error("--images %s: rows of %zu values are not square images (w*w grey or w*w*3 RGB)",
                    pg->images_source, img->X->cols);
  else if (!*s && (double)img->X->rows * (double)img->X->cols * 4 / 3 > MAX_BLOCK_CHARS)
    rc = view_error("--images %s: %.0f MB of pixels are more than one page can hold (%.0f MB)", pg->images_source,
                    (double)img->X->rows * (double)img->X->cols / 1e6, MAX_BLOCK_CHARS * 0.75 / 1e6);
  else if (!*s && !(pg->pixels = image_bytes(img->X)))
    *s = NLE_ERR_NOMEM;
  if (!rc && !*s && env->labels_source && img->labels && !strcmp(env->labels_source, pg->images_source)) {
    *labels = img->labels;
    img->labels = NULL;
    *classes = img->n_classes;
    *names = img->class_names;
    img->class_names = NULL;
  }
  nle_dataset_free(&img);
  return rc;
}

int cmd_view(int argc, char **argv) {
  static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                           {"images", required_argument, 0, OPT_IMAGES},
                                           {"title", required_argument, 0, OPT_TITLE},
                                           {"point-size", required_argument, 0, OPT_SIZE},
                                           {"alpha", required_argument, 0, OPT_ALPHA},
                                           CLI_COMMON_OPTIONS,
                                           {0, 0, 0, 0}};
  cli_env env;
  if (cli_env_init(&env, "view", help)) return 1;
  page pg;
  memset(&pg, 0, sizeof pg);
  const char *output = NULL;
  int c;
  while ((c = cli_next_option(&env, argc, argv, "o:", longopts)) != -1) {
    switch (c) {
    case 'o': output = optarg; break;
    case OPT_IMAGES: pg.images_source = optarg; break;
    case OPT_TITLE: pg.title = optarg; break;
    case OPT_SIZE:
      env.rc = cli_real_arg("view", "--point-size", optarg, 0, true, INFINITY, false, false, &pg.point_size);
      break;
    case OPT_ALPHA:
      env.rc = cli_real_arg("view", "--alpha", optarg, 0, true, 1, false, false, &pg.alpha);
      break;
    default: env.rc = 2; break;
    }
  }
  if (env.help_shown) {
    cli_env_free(&env);
    return 0;
  }
  int rc = env.rc;
  if (!rc && optind != argc - 1) rc = cli_usage_error("view", "expected one EMBEDDING, got %d", argc - optind);
  if (!rc && !output) rc = cli_usage_error("view", "no output file (-o PAGE.html)");
  if (!rc) {
    const char *dot = strrchr(base_name(output), '.');
    if (!dot || (strcasecmp(dot, ".html") && strcasecmp(dot, ".htm")))
      rc = cli_usage_error("view", "%s: the page is written as .html or .htm", output);
  }
  if (!rc && nle_viewer_js_len == 0)
    rc = view_error("built without the viewer: run ./setup.sh build with node and npm");
  const char *emb = rc ? NULL : argv[optind];
  pg.emb_source = emb;
  pg.labels_source = env.labels_source;
  if (!pg.title && emb) pg.title = base_name(emb);

  nle_status s = NLE_OK;
  nle_matd *X = NULL;
  int32_t *labels = NULL, classes = 0;
  char **names = NULL;
  if (!rc) s = nle_check_output(env.ctx, output, 0);
  if (!rc && !s) s = cli_load_embedding(&env, emb, &X);
  if (!rc && !s && X->cols != 2)
    rc = view_error("%s has %zu column%s; the viewer shows a 2-D embedding (N x 2)", emb, X->cols,
                    X->cols == 1 ? "" : "s");
  for (size_t i = 0; !rc && !s && i < 2 * X->rows; i++)
    if (!isfinite(X->data[i]) || fabs(X->data[i]) > 3e38)
      rc = view_error("%s: value %zu (row %zu) is not a finite single-precision number", emb, i, i / 2);
  if (!rc && !s && 8.0 * (double)X->rows * 4 / 3 > MAX_BLOCK_CHARS)
    rc = view_error("%s: %zu points are more than one page can hold (46,875,000)", emb, X->rows);
  if (!rc && !s && pg.images_source) rc = read_images(&env, &pg, X, emb, &labels, &classes, &names, &s);
  bool labels_from_images = labels != NULL;
  if (!rc && !s && env.labels_source) {
    int64_t n = (int64_t)X->rows;
    if (!labels_from_images)
      s = nle_labels_read(env.ctx, env.labels_source, &env.read, 0, &labels, &n, &classes, &names);
    if (!s && n != (int64_t)X->rows)
      rc = view_error("%s has %zu rows, --labels %s has %lld", emb, X->rows, env.labels_source, (long long)n);
    else if (!s && classes > 65536)
      rc = view_error("--labels %s: label %d is past the 65,536 classes the viewer colours", env.labels_source,
                      (int)classes - 1);
  }
  if (!rc && s) rc = cli_fail(&env, s);
  if (!rc) {
    pg.X = X;
    pg.labels = labels;
    pg.n_classes = classes;
    pg.names = names;
    nle_output *out;
    s = nle_output_open(env.ctx, output, &out);
    if (!s) {
      write_page(nle_output_stream(out), &pg);
      s = nle_output_close(env.ctx, &out); /* a failed write is reported here */
    }
    if (s) rc = cli_fail(&env, s);
  }
  if (!rc) rc = cli_commit(&env); /* the page appears only now, whole */
  if (!rc) {
    FILE *f = fopen(output, "rb");
    long size = -1;
    if (f && !fseek(f, 0, SEEK_END)) size = ftell(f);
    if (f) fclose(f);
    cli_note(&env, "%zu points%s%s; wrote %s (%.1f MB)", X->rows, labels ? ", labels" : "", pg.pixels ? ", images" : "",
             output, size / 1e6);
  }
  free((void *)pg.pixels);
  nle_class_names_free(&names, classes);
  free(labels);
  nle_matd_free(&X);
  cli_env_free(&env);
  return rc;
}
