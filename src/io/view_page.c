/* view_page.c — the interactive map page (nle_write_view_page; `nlembed
 * view` and Python's nlembed.write_view): one self-contained HTML file. The
 * data go into the page as base64 blocks its script decodes: float32
 * positions, uint8/uint16 label codes, uint8 images (decoded one row at a
 * time on hover). The script is viewer/'s bundle, compiled into the library
 * as bytes by the Makefile ($(BUILD)/viewer_bundle.c from viewer/to_c.sh). */
#include "io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The page's script; empty (length 0) when the library was built without
 * node and npm. */
extern const unsigned char nle_viewer_js[];
extern const size_t nle_viewer_js_len;

/* A browser reads each block of the page as one string: V8 caps strings at
 * 2^29 - 24 characters. */
#define MAX_BLOCK_CHARS 500000000ULL
#define MAX_CLASSES 65536

bool nle_view_available(void) { return nle_viewer_js_len > 0; }

nle_status nle_view_check_output(nle_ctx *ctx, const char *path) {
  char ext[16];
  nle__path_ext(path ? path : "", ext, sizeof ext);
  if (strcmp(ext, ".html") && strcmp(ext, ".htm"))
    return nle__fail(ctx, NLE_ERR_ARG, "%s: the page is written as .html or .htm", path ? path : "");
  if (!nle_view_available())
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "built without the viewer: run ./setup.sh build with node and npm");
  return nle_check_output_path(ctx, path);
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

/* The images as the page holds them: uint8, w x h x channels a row. */
typedef struct {
  uint8_t *pixels;
  int w, h, channels;
} page_images;

/* One block of binary data: a script element holding its base64. */
static void write_block(FILE *f, const char *id, const uint8_t *bytes, size_t n) {
  fprintf(f, "<script id=\"%s\" type=\"application/octet-stream\">", id);
  write_base64(f, bytes, n);
  fputs("</script>\n", f);
}

static void write_meta_labels(FILE *f, const nle_view_page *p) {
  fputs("{\"source\": ", f);
  write_json_string(f, p->labels_source);
  fprintf(f, ", \"type\": \"%s\", \"classes\": %d, \"names\": ", p->n_classes <= 256 ? "uint8" : "uint16",
          (int)p->n_classes);
  if (p->class_names) {
    fputc('[', f);
    for (int32_t c = 0; c < p->n_classes; c++) {
      if (c) fputs(", ", f);
      write_json_string(f, p->class_names[c]);
    }
    fputc(']', f);
  } else {
    fputs("null", f);
  }
  fputc('}', f);
}

/* The metadata the page's script reads first: sizes, names, sources. */
static void write_meta(FILE *f, const nle_view_page *p, const char *title, const page_images *img) {
  fprintf(f, "{\"format\": \"nlembed-view\", \"version\": 1, \"n\": %zu, \"title\": ", p->X->rows);
  write_json_string(f, title);
  fputs(", \"embedding\": ", f);
  write_json_string(f, p->embedding_source);
  fprintf(f, ", \"pointSize\": %.9g, \"opacity\": %.9g, \"labels\": ", p->point_size, p->alpha);
  if (p->labels) write_meta_labels(f, p);
  else fputs("null", f);
  fputs(", \"images\": ", f);
  if (img->pixels) {
    fputs("{\"source\": ", f);
    write_json_string(f, p->images_source);
    fprintf(f, ", \"width\": %d, \"height\": %d, \"channels\": %d}", img->w, img->h, img->channels);
  } else {
    fputs("null", f);
  }
}

/* The page: the positions as float32 (little-endian x0 y0 x1 y1 ...), the
 * label codes as uint8 or uint16, the script, then the images. */
static nle_status write_page(FILE *f, const nle_view_page *p, const char *title, const page_images *img) {
  size_t n = p->X->rows;
  uint8_t *bytes = malloc(8 * n + 1);
  if (!bytes) return NLE_ERR_NOMEM;
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"nlembed " NLE_VERSION_STRING " view\">\n<title>",
        f);
  write_html_text(f, title);
  fputs("</title>\n</head>\n<body>\n<script id=\"nle-meta\" type=\"application/json\">", f);
  write_meta(f, p, title, img);
  fputs("}</script>\n", f);
  for (size_t i = 0; i < 2 * n; i++) {
    float v = (float)p->X->data[i];
    uint32_t u;
    memcpy(&u, &v, 4);
    for (int b = 0; b < 4; b++) bytes[4 * i + (size_t)b] = (uint8_t)(u >> (8 * b));
  }
  write_block(f, "nle-xy", bytes, 8 * n);
  if (p->labels) {
    size_t width = p->n_classes > 256 ? 2 : 1;
    for (size_t i = 0; i < n; i++)
      for (size_t b = 0; b < width; b++) bytes[width * i + b] = (uint8_t)((uint32_t)p->labels[i] >> (8 * b));
    write_block(f, "nle-labels", bytes, width * n);
  }
  free(bytes);
  fputs("<script>", f);
  fwrite(nle_viewer_js, 1, nle_viewer_js_len, f);
  fputs("</script>\n", f);
  /* The images after the script: the plot is drawn while the browser still
   * parses them (6 of the 8 seconds to a first frame at 70,000 Fashion-MNIST
   * images when they came first); the page reads them once it has them. */
  if (img->pixels) write_block(f, "nle-images", img->pixels, n * (size_t)img->w * (size_t)img->h * (size_t)img->channels);
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

/* What a message calls an input: its source after the option's marker
 * ("--images data.npy" in the tool), or the option alone (Python's
 * "images"). */
static const char *input_name(char *buf, size_t cap, const char *option, const char *source) {
  snprintf(buf, cap, source ? "{@%s} %s" : "{@%s}", option, source ? source : "");
  return buf;
}

static const char *embedding_name(const nle_view_page *p) { return p->embedding_source ? p->embedding_source : "X"; }

static nle_status check_positions(nle_ctx *ctx, const nle_view_page *p) {
  const nle_matd *X = p->X;
  const char *emb = embedding_name(p);
  if (!X || !X->data) return nle__fail(ctx, NLE_ERR_ARG, "view page: no positions (X)");
  if (X->cols != 2)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s has %zu column%s; the viewer shows a 2-D embedding (N x 2)", emb,
                     X->cols, X->cols == 1 ? "" : "s");
  for (size_t i = 0; i < 2 * X->rows; i++)
    if (!isfinite(X->data[i]) || fabs(X->data[i]) > 3e38)
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: value %zu (row %zu) is not a finite single-precision number", emb,
                       i, i / 2);
  if (8.0 * (double)X->rows * 4 / 3 > MAX_BLOCK_CHARS)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s: %zu points are more than one page can hold (46,875,000)", emb,
                     X->rows);
  if (!(p->point_size >= 0 && isfinite(p->point_size)))
    return nle__fail(ctx, NLE_ERR_VALUE, "{@point-size=%g}: a point's size in pixels is a finite number > 0 (or 0: "
                     "chosen from N)", p->point_size);
  if (!(p->alpha >= 0 && p->alpha <= 1))
    return nle__fail(ctx, NLE_ERR_VALUE, "{@alpha=%g}: the points' opacity is in (0, 1] (or 0: chosen from N)",
                     p->alpha);
  return NLE_OK;
}

/* The images' shape into img (its pixels are made once every check passed). */
static nle_status check_images(nle_ctx *ctx, const nle_view_page *p, page_images *img) {
  char name[1024];
  const nle_matf *Y = p->images;
  if (!Y) return NLE_OK;
  input_name(name, sizeof name, "images", p->images_source);
  size_t rows = Y->rows, cols = Y->cols;
  if (rows != p->X->rows)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s has %zu rows, %s has %zu", embedding_name(p), p->X->rows, name, rows);
  if (!image_shape(cols, &img->w, &img->h, &img->channels))
    return nle__fail(ctx, NLE_ERR_VALUE, "%s: rows of %zu values are not square images (w*w grey or w*w*3 RGB)",
                     name, cols);
  if ((double)rows * (double)cols * 4 / 3 > MAX_BLOCK_CHARS)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s: %.0f MB of pixels are more than one page can hold (%.0f MB)", name,
                     (double)rows * (double)cols / 1e6, MAX_BLOCK_CHARS * 0.75 / 1e6);
  for (size_t i = 0; i < rows * cols; i++)
    if (!isfinite(Y->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: value %zu (row %zu) is not finite", name, i, i / cols);
  return NLE_OK;
}

static nle_status check_labels(nle_ctx *ctx, const nle_view_page *p) {
  char name[1024];
  if (!p->labels) return NLE_OK;
  input_name(name, sizeof name, "labels", p->labels_source);
  if (p->n_classes > MAX_CLASSES)
    return nle__fail(ctx, NLE_ERR_VALUE, "%s: label %d is past the 65,536 classes the viewer colours", name,
                     (int)p->n_classes - 1);
  for (size_t i = 0; i < p->X->rows; i++)
    if (p->labels[i] < 0 || p->labels[i] >= p->n_classes)
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: point %zu has the class code %d, not one of 0..%d", name, i,
                       (int)p->labels[i], (int)p->n_classes - 1);
  return NLE_OK;
}

nle_status nle_write_view_page(nle_ctx *ctx, const char *path, const nle_view_page *p) {
  if (!p) return nle__fail(ctx, NLE_ERR_ARG, "view page: no page");
  nle_status s = nle_view_check_output(ctx, path);
  if (!s) s = check_positions(ctx, p);
  page_images img = {0};
  if (!s) s = check_images(ctx, p, &img);
  if (!s) s = check_labels(ctx, p);
  if (s) return s;
  if (p->images && !(img.pixels = image_bytes(p->images))) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  const char *title = p->title ? p->title : p->embedding_source ? base_name(p->embedding_source) : "nlembed";
  nle_output *out = NULL;
  s = nle_output_open(ctx, path, &out);
  if (!s && write_page(nle_output_stream(out), p, title, &img)) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  if (!s) s = nle_output_close(ctx, &out); /* a failed write is reported here */
  else if (out) nle_output_abort(&out);
  free(img.pixels);
  return s;
}
