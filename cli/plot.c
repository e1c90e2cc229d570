/* plot.c — scatter plots of 2-D embeddings with cairo: coloured by label with
 * a legend, point size and opacity chosen from N, PNG or SVG by extension,
 * drawn in a seeded random order so no class systematically hides another.
 * Part of the tool, not of the library, which so does not need cairo; the
 * file is written through the library's staged outputs (nle_output_open). */
#include "cli.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cli_plot_opts_init(cli_plot_opts *o) {
  o->width = 1000;
  o->height = 800;
  o->point_size = 0.0;
  o->alpha = 0.0;
  o->title = NULL;
  o->no_legend = false;
  o->extent = CLI_EXTENT_BULK;
}

/* Ten well-separated colours (the "tab10" palette); more classes cycle
 * through lighter and darker shades of them. */
static void class_colour(int32_t c, double rgb[3]) {
  static const double base[10][3] = {
      {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157},
      {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498},
      {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812}};
  if (c < 0) {
    rgb[0] = rgb[1] = rgb[2] = 0.35;
    return;
  }
  int shade = (c / 10) % 3;
  double f = shade == 0 ? 1.0 : shade == 1 ? 0.6 : 1.3;
  for (int i = 0; i < 3; i++) {
    double v = base[c % 10][i] * f;
    rgb[i] = v > 1.0 ? 1.0 : v;
  }
}

static cairo_status_t write_to_file(void *closure, const unsigned char *data, unsigned int len) {
  return fwrite(data, 1, len, (FILE *)closure) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

typedef struct {
  double x0, y0, scale; /* data -> pixels */
  double left, top, w, h;
} frame;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The bulk of the map, the rule of the viewer (viewer/src/data.js, bulkBox):
 * per axis, the fence is the range between the 1% and 99% quantiles (the
 * values at sorted index floor(p (N - 1))) widened by half its length on
 * each side; a point outside a fence is an outlier (out[i] = 1). A t-SNE of
 * single cells flings a handful of very high-count cells ~7 times as far as
 * the clusters reach, which would shrink the clusters to a fifth of the
 * picture. Returns the number of outliers, or -1 when out of memory. */
#define BULK_QUANTILE 0.01
#define BULK_WIDEN 0.5
static ptrdiff_t bulk_outliers(const nle_matd *X, unsigned char *out) {
  size_t n = X->rows;
  double fence[2][2];
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) return -1;
  for (int a = 0; a < 2; a++) {
    for (size_t i = 0; i < n; i++) v[i] = X->data[i * X->cols + (size_t)a];
    qsort(v, n, sizeof *v, cmp_double);
    double lo = v[(size_t)(BULK_QUANTILE * (double)(n - 1))], hi = v[(size_t)((1 - BULK_QUANTILE) * (double)(n - 1))];
    fence[a][0] = lo - BULK_WIDEN * (hi - lo);
    fence[a][1] = hi + BULK_WIDEN * (hi - lo);
  }
  free(v);
  ptrdiff_t count = 0;
  for (size_t i = 0; i < n; i++) {
    double x = X->data[i * X->cols], y = X->data[i * X->cols + 1];
    out[i] = x < fence[0][0] || x > fence[0][1] || y < fence[1][0] || y > fence[1][1];
    count += out[i];
  }
  return count;
}

/* Equal scales on both axes (distances in the picture are distances in X),
 * fitted to the points not marked in skip (NULL: all of them). */
static frame fit_frame(const nle_matd *X, const unsigned char *skip, double left, double top, double w, double h) {
  double minx = INFINITY, maxx = -INFINITY, miny = INFINITY, maxy = -INFINITY;
  for (size_t i = 0; i < X->rows; i++) {
    if (skip && skip[i]) continue;
    double x = X->data[i * X->cols], y = X->cols > 1 ? X->data[i * X->cols + 1] : 0.0;
    minx = fmin(minx, x);
    maxx = fmax(maxx, x);
    miny = fmin(miny, y);
    maxy = fmax(maxy, y);
  }
  double sx = maxx > minx ? w / (maxx - minx) : 1.0, sy = maxy > miny ? h / (maxy - miny) : 1.0;
  frame f = {0.5 * (minx + maxx), 0.5 * (miny + maxy), fmin(sx, sy), left, top, w, h};
  if (!(maxx > minx) && !(maxy > miny)) f.scale = 1.0;
  return f;
}

/* An outlier beyond the frame: a triangle on the frame's edge where the line
 * from the frame's centre to the point leaves it, pointing to the point. */
static void edge_mark(cairo_t *cr, const frame *f, double px, double py) {
  double cx = f->left + 0.5 * f->w, cy = f->top + 0.5 * f->h, dx = px - cx, dy = py - cy;
  double t = fmin(fabs(0.5 * f->w / (dx != 0 ? dx : 1e-300)), fabs(0.5 * f->h / (dy != 0 ? dy : 1e-300)));
  double ex = cx + dx * t, ey = cy + dy * t, len = hypot(dx, dy), ux = dx / len, uy = dy / len;
  cairo_move_to(cr, ex + 7 * ux, ey + 7 * uy);
  cairo_line_to(cr, ex - 5 * ux - 5 * uy, ey - 5 * uy + 5 * ux);
  cairo_line_to(cr, ex - 5 * ux + 5 * uy, ey - 5 * uy - 5 * ux);
  cairo_close_path(cr);
  cairo_fill(cr);
}

/* Splits the title at its " — " separators into lines that fit `width`;
 * returns the number of lines (at most max_lines), each written to lines[i]. */
static int wrap_title(cairo_t *cr, const char *title, double width, char lines[][512], int max_lines) {
  static const char sep[] = " \xe2\x80\x94 "; /* " — " */
  int n = 0;
  lines[0][0] = '\0';
  const char *p = title;
  while (*p && n < max_lines) {
    const char *next = strstr(p, sep);
    size_t len = next ? (size_t)(next - p) : strlen(p);
    char trial[1024];
    snprintf(trial, sizeof trial, "%s%s%.*s", lines[n], lines[n][0] ? sep : "", (int)len, p);
    cairo_text_extents_t ext;
    cairo_text_extents(cr, trial, &ext);
    if (ext.x_advance > width && lines[n][0]) {
      if (++n == max_lines) break;
      snprintf(lines[n], 512, "%.*s", (int)len, p);
    } else {
      snprintf(lines[n], 512, "%.511s", trial);
    }
    p = next ? next + strlen(sep) : p + len;
  }
  return n < max_lines ? n + 1 : max_lines;
}

static void draw(cairo_t *cr, const nle_matd *X, const cli_labels *l, const cli_plot_opts *o, const int64_t *order,
                 const unsigned char *outlier, ptrdiff_t n_out) {
  size_t n = X->rows;
  const int32_t *labels = l->codes;
  int32_t n_classes = l->n_classes;
  double W = o->width, H = o->height, pad = 16.0;
  int legend = !o->no_legend && labels && n_classes > 0 && n_classes <= 60;
  double legend_w = legend ? 170.0 : 0.0;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, 14.0);
  char lines[3][512];
  int n_lines = o->title && *o->title ? wrap_title(cr, o->title, W - 2 * pad, lines, 3) : 0;
  double title_h = n_lines ? 14.0 + 19.0 * n_lines : 8.0;
  /* Radius and opacity fall slowly with N: 4 px and 0.9 up to a few thousand
   * points, about 1.4 px and 0.45 at 70,000, 0.7 px and 0.26 at a million. */
  double r = o->point_size > 0 ? o->point_size : fmin(4.0, fmax(0.5, 4.0 * pow(1000.0 / (double)n, 0.25)));
  double alpha = o->alpha > 0 ? o->alpha : fmin(0.9, fmax(0.2, 0.9 * pow(2000.0 / (double)n, 0.2)));
  double note_h = n_out > 0 ? 18.0 : 0.0; /* a line under the frame about the outliers */
  frame f = fit_frame(X, n_out > 0 ? outlier : NULL, pad + r, title_h + r, W - legend_w - 2 * pad - 2 * r,
                      H - title_h - pad - note_h - 2 * r);
  double cx = f.left + 0.5 * f.w, cy = f.top + 0.5 * f.h;
  for (size_t t = 0; t < n; t++) {
    size_t i = (size_t)order[t];
    if (n_out > 0 && outlier[i]) continue;
    double x = X->data[i * X->cols], y = X->cols > 1 ? X->data[i * X->cols + 1] : 0.0;
    double rgb[3];
    class_colour(labels ? labels[i] : -1, rgb);
    cairo_set_source_rgba(cr, rgb[0], rgb[1], rgb[2], alpha);
    cairo_arc(cr, cx + (x - f.x0) * f.scale, cy - (y - f.y0) * f.scale, r, 0, 2 * M_PI);
    cairo_fill(cr);
  }
  if (n_out > 0) {
    /* Outliers as opaque triangles on the frame's edge (over the points, so
     * that none hides them), and a line saying how many. */
    for (size_t i = 0; i < n; i++) {
      if (!outlier[i]) continue;
      double rgb[3];
      class_colour(labels ? labels[i] : -1, rgb);
      cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
      edge_mark(cr, &f, cx + (X->data[i * X->cols] - f.x0) * f.scale, cy - (X->data[i * X->cols + 1] - f.y0) * f.scale);
    }
    char note[160];
    snprintf(note, sizeof note, "%td point%s far from the rest, beyond the frame: triangles at its edge (--extent all shows them)",
             n_out, n_out == 1 ? "" : "s");
    cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
    cairo_set_font_size(cr, 12.0);
    cairo_move_to(cr, pad, H - 8.0);
    cairo_show_text(cr, note);
    cairo_set_font_size(cr, 14.0);
  }
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  for (int l = 0; l < n_lines; l++) {
    cairo_move_to(cr, pad, 24.0 + 19.0 * l);
    cairo_show_text(cr, lines[l]);
  }
  if (legend) {
    cairo_set_font_size(cr, 13.0);
    double lx = W - legend_w + 4, ly = title_h + 12;
    for (int32_t c = 0; c < n_classes; c++) {
      double rgb[3];
      class_colour(c, rgb);
      cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
      cairo_arc(cr, lx + 6, ly + 18.0 * c - 4, 5.0, 0, 2 * M_PI);
      cairo_fill(cr);
      cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
      cairo_move_to(cr, lx + 18, ly + 18.0 * c);
      char name[64];
      if (l->names && l->names[c]) snprintf(name, sizeof name, "%s", l->names[c]);
      else snprintf(name, sizeof name, "%d", c);
      cairo_show_text(cr, name);
    }
  }
}

int cli_plot_scatter(cli_env *env, const char *path, const nle_matd *X, const cli_labels *labels,
                     const cli_plot_opts *o) {
  const char *dot = strrchr(path, '.');
  int svg = dot && !strcasecmp(dot, ".svg");
  if (!svg && !(dot && !strcasecmp(dot, ".png"))) {
    fprintf(stderr, "nlembed plot: error: %s: plots are written as .png or .svg\n", path);
    return 1;
  }
  for (size_t i = 0; i < X->rows * X->cols; i++)
    if (!isfinite(X->data[i])) {
      fprintf(stderr, "nlembed plot: error: embedding value %zu (row %zu) is not finite\n", i, i / X->cols);
      return 1;
    }
  int64_t *order = malloc((X->rows ? X->rows : 1) * sizeof(int64_t));
  if (!order) return cli_fail(env, NLE_ERR_NOMEM);
  for (size_t i = 0; i < X->rows; i++) order[i] = (int64_t)i;
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(env->ctx), 0x706c6f74ULL);
  nle_rng_shuffle(&rng, order, (int64_t)X->rows);
  /* The frame fits the bulk of the points (bulk_outliers) unless --extent all. */
  unsigned char *outlier = NULL;
  ptrdiff_t n_out = 0;
  if (o->extent == CLI_EXTENT_BULK && X->cols >= 2 && X->rows > 0) {
    outlier = malloc(X->rows);
    n_out = outlier ? bulk_outliers(X, outlier) : -1;
    if (n_out < 0) {
      free(outlier);
      free(order);
      return cli_fail(env, NLE_ERR_NOMEM);
    }
  }
  nle_output *out;
  nle_status s = nle_output_open(env->ctx, path, &out);
  if (s) {
    free(outlier);
    free(order);
    return cli_fail(env, s);
  }
  FILE *f = nle_output_stream(out);
  cairo_surface_t *surface = svg ? cairo_svg_surface_create_for_stream(write_to_file, f, o->width, o->height)
                                 : cairo_image_surface_create(CAIRO_FORMAT_ARGB32, o->width, o->height);
  cairo_t *cr = cairo_create(surface);
  draw(cr, X, labels, o, order, outlier, n_out);
  free(outlier);
  cairo_destroy(cr);
  cairo_status_t cs;
  if (svg) {
    cairo_surface_finish(surface);
    cs = cairo_surface_status(surface);
  } else {
    cs = cairo_surface_write_to_png_stream(surface, write_to_file, f);
  }
  cairo_surface_destroy(surface);
  free(order);
  if (cs != CAIRO_STATUS_SUCCESS) {
    nle_output_abort(&out);
    fprintf(stderr, "nlembed plot: error: %s: cairo failed: %s\n", path, cairo_status_to_string(cs));
    return 1;
  }
  s = nle_output_close(env->ctx, &out);
  return s ? cli_fail(env, s) : 0;
}
