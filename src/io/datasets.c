/* datasets.c — built-in datasets: Fashion-MNIST from Debian's package, and
 * seeded synthetic sets (Swiss roll, spiral, Gaussian blobs). */
#include "io_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define FASHION_DIR_DEFAULT "/usr/share/datasets/fashion-mnist"

static const char *fashion_classes[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* zlib's reason for a failed read, without the path it puts first */
static const char *gz_reason(gzFile gz, const char *path, int *err) {
  const char *msg = gzerror(gz, err);
  size_t len = strlen(path);
  return !strncmp(msg, path, len) && !strncmp(msg + len, ": ", 2) ? msg + len + 2 : msg;
}

/* The first n records of a Fashion-MNIST IDX file (gzip'ed as Debian ships
 * it; a plain file reads too) into dst, n x cols bytes made floats: the
 * header must announce `total` records of `cols` unsigned bytes each, and
 * inflation stops after the n records asked for, so fashion-mnist:N holds
 * N rows and inflates only theirs. */
static nle_status read_idx_head(nle_ctx *ctx, const char *dir, const char *file, size_t total, size_t cols,
                                size_t n, float *dst) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  gzFile gz = gzopen(path, "rb");
  if (!gz)
    return nle__fail(ctx, NLE_ERR_IO, "%s: cannot open: %s (install Debian's dataset-fashion-mnist, or set "
                     "NLE_FASHION_MNIST_DIR)", path, strerror(errno));
  nle_status s = NLE_OK;
  /* magic: two zero bytes, type 0x08 (unsigned bytes), the dimensions:
   * records, then 28 x 28 for the images */
  int ndim = cols == 1 ? 1 : 3;
  uint8_t head[16], chunk[1 << 16];
  size_t head_len = 4 + 4 * (size_t)ndim, done = 0;
  int got = gzread(gz, head, (unsigned)head_len), err = Z_OK;
  /* zlib inflates ahead: a damaged stream (its CRC-32 too, in a small file)
   * may show at the first read */
  if (got < 0) s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: corrupt compressed data (%s)", path, gz_reason(gz, path, &err));
  uint64_t per = 1;
  for (int i = 1; got == (int)head_len && i < ndim; i++) per *= load_uint(head + 4 + 4 * i, 4, 1);
  if (!s && (got != (int)head_len || head[0] || head[1] || head[2] != 0x08 || head[3] != ndim ||
      load_uint(head + 4, 4, 1) != total || per != cols))
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte 0: not Fashion-MNIST's IDX header (%d dimensions of unsigned "
                  "bytes: %zu records of %zu values)", path, ndim, total, cols);
  size_t want = n * cols;
  while (!s && done < want) {
    size_t part = want - done < sizeof chunk ? want - done : sizeof chunk;
    got = gzread(gz, chunk, (unsigned)part);
    if (got <= 0) {
      const char *msg = gz_reason(gz, path, &err);
      s = err != Z_OK && err != Z_BUF_ERROR
              ? nle__fail(ctx, NLE_ERR_FORMAT, "%s: corrupt compressed data (%s)", path, msg)
              : nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: truncated IDX data (record %zu of the %zu read)", path,
                          head_len + done, done / cols, n);
      break;
    }
    for (int b = 0; b < got; b++) dst[done + (size_t)b] = (float)chunk[b];
    done += (size_t)got;
  }
  /* all of it read: on to the end, where zlib checks the CRC-32 */
  if (!s && n == total && (gzread(gz, chunk, 1) < 0 || (gzerror(gz, &err), err != Z_OK)))
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: corrupt compressed data (%s)", path, gz_reason(gz, path, &err));
  gzclose(gz);
  return s;
}

/* Records [0, n) of one split ("train" or "t10k", `total` records) into
 * rows [offset, offset + n) of ds. */
static nle_status read_fashion_split(nle_ctx *ctx, const char *dir, const char *split, size_t total, nle_dataset *ds,
                                     size_t offset, size_t n) {
  char file[64];
  snprintf(file, sizeof file, "%s-images-idx3-ubyte.gz", split);
  nle_status s = read_idx_head(ctx, dir, file, total, 784, n, ds->X->data + offset * 784);
  float *lab = NULL;
  if (!s && !(lab = nle__malloc(ctx, n * sizeof *lab, "labels"))) s = NLE_ERR_NOMEM;
  snprintf(file, sizeof file, "%s-labels-idx1-ubyte.gz", split);
  if (!s) s = read_idx_head(ctx, dir, file, total, 1, n, lab);
  for (size_t i = 0; !s && i < n; i++) {
    if (lab[i] > 9)
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s/%s: byte %zu: label %zu is %g, expected 0-9", dir, file, 8 + i, i,
                    lab[i]);
    ds->labels[offset + i] = (int32_t)lab[i];
  }
  free(lab);
  return s;
}

/* Rows [first, first + n) of the 70,000 (train then test), first 0 or
 * 60,000: only those rows are allocated and inflated, so the memory cap and
 * its message see the size asked for. */
static nle_status load_fashion(nle_ctx *ctx, const char *name, size_t first, size_t n, nle_dataset **out) {
  const char *dir = getenv("NLE_FASHION_MNIST_DIR");
  if (!dir || !*dir) dir = FASHION_DIR_DEFAULT;
  nle_status s = nle__dataset_new(ctx, name, n, 784, out);
  if (s) return s;
  nle_dataset *ds = *out;
  ds->labels = nle__malloc(ctx, n * sizeof(int32_t), "labels");
  ds->class_names = calloc(10, sizeof(char *));
  if (!ds->labels || !ds->class_names) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  ds->n_classes = 10;
  for (int c = 0; !s && c < 10; c++)
    if (!(ds->class_names[c] = strdup(fashion_classes[c]))) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  size_t train = first < 60000 ? (n < 60000 - first ? n : 60000 - first) : 0;
  if (!s && train) s = read_fashion_split(ctx, dir, "train", 60000, ds, 0, train);
  if (!s && n > train) s = read_fashion_split(ctx, dir, "t10k", 10000, ds, train, n - train);
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
  return load_fashion(ctx, source, 0, (size_t)n, out);
}

int nle__dataset_builtin(nle_ctx *ctx, const char *source, nle_dataset **out, nle_status *status) {
  if (!strncmp(source, "fashion-mnist:", 14)) *status = load_fashion_head(ctx, source, out);
  else if (!strcmp(source, "fashion-mnist")) *status = load_fashion(ctx, source, 0, 70000, out);
  else if (!strcmp(source, "fashion-mnist-train")) *status = load_fashion(ctx, source, 0, 60000, out);
  else if (!strcmp(source, "fashion-mnist-test")) *status = load_fashion(ctx, source, 60000, 10000, out);
  else if (!strncmp(source, "swissroll:", 10)) *status = make_synthetic(ctx, source, "swissroll", out);
  else if (!strncmp(source, "spiral:", 7)) *status = make_synthetic(ctx, source, "spiral", out);
  else if (!strncmp(source, "blobs:", 6)) *status = make_synthetic(ctx, source, "blobs", out);
  else return 0;
  return 1;
}
