/* cmd_view.c — `nlembed view`: one self-contained HTML page with an
 * interactive WebGL scatter plot of a 2-D embedding (viewer/: the page's
 * script, regl-scatterplot bundled with esbuild, compiled into the tool as
 * bytes by the Makefile). The data go into the page as base64 blocks the
 * script decodes: float32 positions, uint8/uint16 label codes, uint8 images
 * (decoded one row at a time on hover). Written through the library's staged
 * outputs, so a failed run leaves no partial page. */
#include "cli.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
  cli_labels labels;
  uint8_t *pixels; /* N x (w h channels), or NULL */
  int img_w, img_h, img_channels;
} page;

/* One block of binary data: a script element holding its base64. */
static void write_block(FILE *f, const char *id, const uint8_t *bytes, size_t n) {
  fprintf(f, "<script id=\"%s\" type=\"application/octet-stream\">", id);
  write_base64(f, bytes, n);
  fputs("</script>\n", f);
}

/* The metadata the page's script reads first: sizes, names, sources. */
static void write_meta(FILE *f, const page *p) {
  fprintf(f, "{\"format\": \"nlembed-view\", \"version\": 1, \"n\": %zu, \"title\": ", p->X->rows);
  write_json_string(f, p->title);
  fputs(", \"embedding\": ", f);
  write_json_string(f, p->emb_source);
  fprintf(f, ", \"pointSize\": %.9g, \"opacity\": %.9g, \"labels\": ", p->point_size, p->alpha);
  const cli_labels *l = &p->labels;
  if (l->codes) {
    fputs("{\"source\": ", f);
    write_json_string(f, p->labels_source);
    fprintf(f, ", \"type\": \"%s\", \"classes\": %d, \"names\": ", l->n_classes <= 256 ? "uint8" : "uint16",
            (int)l->n_classes);
    if (l->names) {
      fputc('[', f);
      for (int32_t c = 0; c < l->n_classes; c++) {
        if (c) fputs(", ", f);
        write_json_string(f, l->names[c]);
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
}

/* The page: the positions as float32 (little-endian x0 y0 x1 y1 ...), the
 * label codes as uint8 or uint16, the script, then the images. */
static nle_status write_page(FILE *f, const page *p) {
  size_t n = p->X->rows;
  uint8_t *bytes = malloc(8 * n + 1);
  if (!bytes) return NLE_ERR_NOMEM;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"nlembed " NLE_VERSION_STRING " view\">\n<title>",
        f);
  write_html_text(f, p->title);
  fputs("</title>\n</head>\n<body>\n<script id=\"nle-meta\" type=\"application/json\">", f);
  write_meta(f, p);
  fputs("}</script>\n", f);
  for (size_t i = 0; i < 2 * n; i++) {
    float v = (float)p->X->data[i];
    uint32_t u;
    memcpy(&u, &v, 4);
    for (int b = 0; b < 4; b++) bytes[4 * i + (size_t)b] = (uint8_t)(u >> (8 * b));
  }
  write_block(f, "nle-xy", bytes, 8 * n);
  if (p->labels.codes) {
    size_t width = p->labels.n_classes > 256 ? 2 : 1;
    for (size_t i = 0; i < n; i++)
      for (size_t b = 0; b < width; b++) bytes[width * i + b] = (uint8_t)((uint32_t)p->labels.codes[i] >> (8 * b));
    write_block(f, "nle-labels", bytes, width * n);
  }
  free(bytes);
  fputs("<script>", f);
  fwrite(nle_viewer_js, 1, nle_viewer_js_len, f);
  fputs("</script>\n", f);
  /* The images after the script: the plot is drawn while the browser still
   * parses them (6 of the 8 seconds to a first frame at 70,000 Fashion-MNIST
   * images when they came first); the page reads them once it has them. */
  if (p->pixels)
    write_block(f, "nle-images", p->pixels, n * (size_t)p->img_w * (size_t)p->img_h * (size_t)p->img_channels);
  fputs("</body>\n</html>\n", f);
  return NLE_OK;
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
 * code after the error. */
static int read_images(cli_env *env, page *pg) {
  nle_dataset *img = NULL;
  int rc = 0;
  const char *emb = pg->emb_source, *source = pg->images_source;
  nle_status s = nle_dataset_read(env->ctx, source, &env->read, &img);
  if (s) return cli_fail(env, s);
  size_t rows = img->X->rows, cols = img->X->cols;
  if (rows != pg->X->rows)
    rc = view_error("%s has %zu rows, --images %s has %zu", emb, pg->X->rows, source, rows);
  else if (!image_shape(cols, &pg->img_w, &pg->img_h, &pg->img_channels))
    rc = view_error("--images %s: rows of %zu values are not square images (w*w grey or w*w*3 RGB)", source, cols);
  else if ((double)rows * (double)cols * 4 / 3 > MAX_BLOCK_CHARS)
    rc = view_error("--images %s: %.0f MB of pixels are more than one page can hold (%.0f MB)", source,
                    (double)rows * (double)cols / 1e6, MAX_BLOCK_CHARS * 0.75 / 1e6);
  else if (!(pg->pixels = image_bytes(img->X)))
    rc = cli_fail(env, NLE_ERR_NOMEM);
  if (!rc && env->labels_source && img->labels && !strcmp(env->labels_source, source)) {
    pg->labels = (cli_labels){img->labels, img->n_classes, img->class_names};
    img->labels = NULL;
    img->class_names = NULL;
  }
  nle_dataset_free(&img);
  return rc;
}

/* The embedding, its checks for the page, its images and labels; 0, or
 * the exit code after the error. */
static int read_page(cli_env *env, page *pg, nle_matd **X) {
  const char *emb = pg->emb_source;
  nle_status s = cli_load_embedding(env, emb, X);
  if (s) return cli_fail(env, s);
  pg->X = *X;
  if ((*X)->cols != 2)
    return view_error("%s has %zu column%s; the viewer shows a 2-D embedding (N x 2)", emb, (*X)->cols,
                      (*X)->cols == 1 ? "" : "s");
  for (size_t i = 0; i < 2 * (*X)->rows; i++)
    if (!isfinite((*X)->data[i]) || fabs((*X)->data[i]) > 3e38)
      return view_error("%s: value %zu (row %zu) is not a finite single-precision number", emb, i, i / 2);
  if (8.0 * (double)(*X)->rows * 4 / 3 > MAX_BLOCK_CHARS)
    return view_error("%s: %zu points are more than one page can hold (46,875,000)", emb, (*X)->rows);
  int rc = pg->images_source ? read_images(env, pg) : 0;
  if (!rc) rc = cli_read_labels(env, emb, (*X)->rows, &pg->labels);
  if (!rc && pg->labels.n_classes > 65536)
    rc = view_error("--labels %s: label %d is past the 65,536 classes the viewer colours", env->labels_source,
                    (int)pg->labels.n_classes - 1);
  return rc;
}

typedef struct {
  const char *output;
  page page;
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

/* The command line's checks; 0, or the usage error's exit code. */
static int check_request(const view_settings *o, int n_args) {
  if (n_args != 1) return cli_usage_error("view", "expected one EMBEDDING, got %d", n_args);
  if (!o->output) return cli_usage_error("view", "no output file (-o PAGE.html)");
  const char *dot = strrchr(base_name(o->output), '.');
  if (!dot || (strcasecmp(dot, ".html") && strcasecmp(dot, ".htm")))
    return cli_usage_error("view", "%s: the page is written as .html or .htm", o->output);
  if (nle_viewer_js_len == 0) return view_error("built without the viewer: run ./setup.sh build with node and npm");
  return 0;
}

/* The page, staged: it appears only once written whole. */
static int write_output(cli_env *env, const char *output, const page *pg) {
  nle_output *out = NULL;
  nle_status s = nle_output_open(env->ctx, output, &out);
  if (!s) s = write_page(nle_output_stream(out), pg);
  if (!s) s = nle_output_close(env->ctx, &out); /* a failed write is reported here */
  else if (out) nle_output_abort(&out);
  return s ? cli_fail(env, s) : cli_commit(env);
}

int cmd_view(int argc, char **argv) {
  cli_env env;
  if (cli_env_init(&env, "view", NULL)) return 1;
  view_settings o = {0};
  page *pg = &o.page;
  int rc = cli_read_options(&env, argc, argv, head, rows, &o);
  if (!rc && !env.help_shown) rc = check_request(&o, argc - optind);
  if (rc || env.help_shown) {
    cli_env_free(&env);
    return rc;
  }
  pg->emb_source = argv[optind];
  pg->labels_source = env.labels_source;
  if (!pg->title) pg->title = base_name(pg->emb_source);
  nle_matd *X = NULL;
  nle_status s = nle_check_output(env.ctx, o.output, 0);
  rc = s ? cli_fail(&env, s) : read_page(&env, pg, &X);
  if (!rc) rc = write_output(&env, o.output, pg);
  if (!rc) {
    FILE *f = fopen(o.output, "rb");
    long size = -1;
    if (f && !fseek(f, 0, SEEK_END)) size = ftell(f);
    if (f) fclose(f);
    cli_note(&env, "%zu points%s%s; wrote %s (%.1f MB)", X->rows, pg->labels.codes ? ", labels" : "",
             pg->pixels ? ", images" : "", o.output, size / 1e6);
  }
  free(pg->pixels);
  cli_labels_free(&pg->labels);
  nle_matd_free(&X);
  cli_env_free(&env);
  return rc;
}
