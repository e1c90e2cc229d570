/* datasets.c — built-in datasets: Fashion-MNIST from Debian's package, and
 * seeded synthetic sets (Swiss roll, spiral, Gaussian blobs). */
#include "io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FASHION_DIR_DEFAULT "/usr/share/datasets/fashion-mnist"

static const char *fashion_classes[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

static nle_status read_idx_file(nle_ctx *ctx, const char *dir, const char *file, nle_dataset **out) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  uint8_t *buf;
  size_t len;
  nle_status s = nle__read_file(ctx, path, &buf, &len);
  if (s == NLE_ERR_IO)
    return nle__fail_suffix(ctx, " (install Debian's dataset-fashion-mnist, or set NLE_FASHION_MNIST_DIR)");
  if (s) return s;
  s = nle__parse_buffer(ctx, path, buf, len, NULL, 0, out);
  free(buf);
  return s;
}

/* Reads one split ("train" or "t10k") into rows [offset, offset + n) of ds. */
static nle_status read_fashion_split(nle_ctx *ctx, const char *dir, const char *split, nle_dataset *ds,
                                     size_t offset, size_t n) {
  char file[64];
  nle_dataset *img = NULL, *lab = NULL;
  snprintf(file, sizeof file, "%s-images-idx3-ubyte.gz", split);
  nle_status s = read_idx_file(ctx, dir, file, &img);
  if (!s) {
    snprintf(file, sizeof file, "%s-labels-idx1-ubyte.gz", split);
    s = read_idx_file(ctx, dir, file, &lab);
  }
  if (!s && (img->X->rows != n || img->X->cols != 784 || lab->X->rows != n || lab->X->cols != 1))
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s/%s-*: expected %zu images of 28 x 28 and as many labels",
                  dir, split, n);
  if (!s) {
    memcpy(ds->X->data + offset * 784, img->X->data, n * 784 * sizeof(float));
    for (size_t i = 0; i < n; i++) {
      float v = lab->X->data[i];
      if (v < 0 || v > 9) {
        s = nle__fail(ctx, NLE_ERR_FORMAT, "%s/%s-labels: label %zu is %g, expected 0-9", dir, split, i, v);
        break;
      }
      ds->labels[offset + i] = (int32_t)v;
    }
  }
  nle_dataset_free(&img);
  nle_dataset_free(&lab);
  return s;
}

static nle_status load_fashion(nle_ctx *ctx, const char *name, int train, int test, nle_dataset **out) {
  const char *dir = getenv("NLE_FASHION_MNIST_DIR");
  if (!dir || !*dir) dir = FASHION_DIR_DEFAULT;
  size_t n = (train ? 60000 : 0) + (test ? 10000 : 0);
  nle_status s = nle__dataset_new(ctx, name, n, 784, out);
  if (s) return s;
  nle_dataset *ds = *out;
  ds->labels = nle__malloc(ctx, n * sizeof(int32_t), "labels");
  ds->class_names = calloc(10, sizeof(char *));
  if (!ds->labels || !ds->class_names) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  ds->n_classes = 10;
  for (int c = 0; !s && c < 10; c++)
    if (!(ds->class_names[c] = strdup(fashion_classes[c]))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  if (!s && train) s = read_fashion_split(ctx, dir, "train", ds, 0, 60000);
  if (!s && test) s = read_fashion_split(ctx, dir, "t10k", ds, train ? 60000 : 0, 10000);
  if (s) nle_dataset_free(out);
  return s;
}

/* Swiss roll (3-D): t in [1.5 pi, 4.5 pi], y = (t cos t, h, t sin t); labels
 * are 6 equal bands of t, so an unrolled embedding shows them in order. */
static void gen_swissroll(nle_rng *r, float *y, int32_t *label) {
  double u = nle_rng_uniform(r), t = 1.5 * M_PI * (1.0 + 2.0 * u), h = 21.0 * nle_rng_uniform(r);
  y[0] = (float)(t * cos(t));
  y[1] = (float)h;
  y[2] = (float)(t * sin(t));
  *label = (int32_t)(u * 6.0);
}

/* Two interleaved spiral arms in 2-D with small noise; labels are the arms. */
static void gen_spiral(nle_rng *r, float *y, int32_t *label) {
  int arm = (int)nle_rng_below(r, 2);
  double t = 0.5 + 3.5 * M_PI * sqrt(nle_rng_uniform(r)), phase = arm ? M_PI : 0.0;
  y[0] = (float)(t * cos(t + phase) + 0.15 * nle_rng_normal(r));
  y[1] = (float)(t * sin(t + phase) + 0.15 * nle_rng_normal(r));
  *label = arm;
}

static nle_status make_synthetic(nle_ctx *ctx, const char *source, const char *kind, nle_dataset **out) {
  const char *p = strchr(source, ':') + 1;
  char *end;
  long long n = strtoll(p, &end, 10), dim = 10, classes = 10;
  if (*end == ':' && !strcmp(kind, "blobs")) dim = strtoll(end + 1, &end, 10);
  if (*end == ':' && !strcmp(kind, "blobs")) classes = strtoll(end + 1, &end, 10);
  if (end == p || *end || n < 1 || n > (1LL << 31) - 1 || dim < 1 || dim > 100000 || classes < 1 ||
      classes > 1000)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: expected %s:N%s with N in [1, 2^31)%s", source, kind,
                     !strcmp(kind, "blobs") ? "[:D[:CLASSES]]" : "",
                     !strcmp(kind, "blobs") ? ", D in [1, 100000] and CLASSES in [1, 1000]" : "");
  size_t d = !strcmp(kind, "swissroll") ? 3 : !strcmp(kind, "spiral") ? 2 : (size_t)dim;
  nle_status s = nle__dataset_new(ctx, source, (size_t)n, d, out);
  if (s) return s;
  nle_dataset *ds = *out;
  ds->labels = nle__malloc(ctx, (size_t)n * sizeof(int32_t), "labels");
  if (!ds->labels) {
    nle_dataset_free(out);
    return NLE_ERR_NOMEM;
  }
  uint64_t seed = nle_ctx_seed(ctx);
  if (!strcmp(kind, "blobs")) {
    /* Centres on a scale that keeps the clusters apart but not trivially so. */
    double *centre = nle__malloc(ctx, (size_t)classes * d * sizeof(double), "blob centres");
    if (!centre) {
      nle_dataset_free(out);
      return NLE_ERR_NOMEM;
    }
    nle_rng r;
    nle_rng_init(&r, seed, UINT64_MAX);
    for (size_t i = 0; i < (size_t)classes * d; i++) centre[i] = 4.0 * nle_rng_normal(&r);
    for (long long i = 0; i < n; i++) {
      nle_rng_init(&r, seed, (uint64_t)i);
      int32_t c = (int32_t)nle_rng_below(&r, (uint64_t)classes);
      for (size_t j = 0; j < d; j++)
        ds->X->data[(size_t)i * d + j] = (float)(centre[(size_t)c * d + j] + nle_rng_normal(&r));
      ds->labels[i] = c;
    }
    free(centre);
    ds->n_classes = (int32_t)classes;
    return NLE_OK;
  }
  for (long long i = 0; i < n; i++) {
    nle_rng r;
    nle_rng_init(&r, seed, (uint64_t)i);
    if (!strcmp(kind, "swissroll")) gen_swissroll(&r, ds->X->data + (size_t)i * d, &ds->labels[i]);
    else gen_spiral(&r, ds->X->data + (size_t)i * d, &ds->labels[i]);
  }
  ds->n_classes = !strcmp(kind, "swissroll") ? 6 : 2;
  return NLE_OK;
}

/* "fashion-mnist:N": the first N of the 70,000 (train then test order). */
static nle_status load_fashion_head(nle_ctx *ctx, const char *source, nle_dataset **out) {
  char *end;
  long long n = strtoll(source + 14, &end, 10);
  if (end == source + 14 || *end || n < 1 || n > 70000)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: expected fashion-mnist:N with N in [1, 70000]", source);
  nle_status s = load_fashion(ctx, source, 1, n > 60000, out);
  if (s) return s;
  (*out)->X->rows = (size_t)n; /* the first N rows; the buffers keep their size */
  return NLE_OK;
}

int nle__dataset_builtin(nle_ctx *ctx, const char *source, nle_dataset **out, nle_status *status) {
  if (!strncmp(source, "fashion-mnist:", 14)) *status = load_fashion_head(ctx, source, out);
  else if (!strcmp(source, "fashion-mnist")) *status = load_fashion(ctx, source, 1, 1, out);
  else if (!strcmp(source, "fashion-mnist-train")) *status = load_fashion(ctx, source, 1, 0, out);
  else if (!strcmp(source, "fashion-mnist-test")) *status = load_fashion(ctx, source, 0, 1, out);
  else if (!strncmp(source, "swissroll:", 10)) *status = make_synthetic(ctx, source, "swissroll", out);
  else if (!strncmp(source, "spiral:", 7)) *status = make_synthetic(ctx, source, "spiral", out);
  else if (!strncmp(source, "blobs:", 6)) *status = make_synthetic(ctx, source, "blobs", out);
  else return 0;
  return 1;
}
