/* test_formats.c — the container and sparse readers: .npz (zip archives
 * built here byte by byte, stored and deflated), Matrix Market data files
 * and 10x folders, HDF5 and AnnData (written here with libhdf5), MATLAB
 * (written with libmatio, v5, compressed and v7.3); sparse data kept or
 * densified under the memory cap; damaged files refused, never crashed on. */
#include "harness.h"
#include "../src/io/io_internal.h"

#include <hdf5.h>
#include <matio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/* ---- building files ------------------------------------------------------ */

typedef struct {
  uint8_t *p;
  size_t len, cap;
} bytes;

static void put(bytes *b, const void *data, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    if (!b->p) exit(2);
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static void put_le(bytes *b, uint64_t v, int n) {
  uint8_t x[8];
  for (int i = 0; i < n; i++) x[i] = (uint8_t)(v >> (8 * i));
  put(b, x, (size_t)n);
}

/* A .npy (version 1.0) of the given descr and shape text, then the data. */
static bytes npy(const char *descr, const char *shape, const void *data, size_t n) {
  bytes b = {0};
  char dict[200];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
  size_t total = 10 + (size_t)len + 1, pad = (64 - total % 64) % 64, hlen = (size_t)len + pad + 1;
  put(&b, "\x93NUMPY\x01\x00", 8);
  put_le(&b, hlen, 2);
  put(&b, dict, (size_t)len);
  for (size_t i = 0; i < pad; i++) put(&b, " ", 1);
  put(&b, "\n", 1);
  put(&b, data, n);
  return b;
}

typedef struct {
  const char *name;
  bytes data;
  int deflate;
} zmember;

/* A zip archive as np.savez writes one (local headers, the data stored or
 * raw-deflated, the central directory, the end record); zip64: sizes,
 * offsets and counts in the 64-bit records, as for archives past 4 GiB. */
static bytes zip_as(const zmember *m, int n, int zip64) {
  bytes z = {0}, dir = {0};
  for (int i = 0; i < n; i++) {
    uLong crc = crc32(crc32(0L, Z_NULL, 0), m[i].data.p, (uInt)m[i].data.len);
    bytes body = {0};
    if (m[i].deflate) {
      z_stream s;
      memset(&s, 0, sizeof s);
      if (deflateInit2(&s, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) exit(2);
      size_t cap = deflateBound(&s, m[i].data.len);
      body.p = malloc(cap);
      s.next_in = m[i].data.p;
      s.avail_in = (uInt)m[i].data.len;
      s.next_out = body.p;
      s.avail_out = (uInt)cap;
      if (deflate(&s, Z_FINISH) != Z_STREAM_END) exit(2);
      body.len = cap - s.avail_out;
      deflateEnd(&s);
    } else {
      put(&body, m[i].data.p, m[i].data.len);
    }
    size_t offset = z.len, nl = strlen(m[i].name);
    put_le(&z, 0x04034b50, 4);
    put_le(&z, 20, 2);
    put_le(&z, 0, 2);
    put_le(&z, m[i].deflate ? 8 : 0, 2);
    put_le(&z, 0, 4);
    put_le(&z, crc, 4);
    put_le(&z, body.len, 4);
    put_le(&z, m[i].data.len, 4);
    put_le(&z, nl, 2);
    put_le(&z, 0, 2);
    put(&z, m[i].name, nl);
    put(&z, body.p, body.len);
    put_le(&dir, 0x02014b50, 4);
    put_le(&dir, 20, 2);
    put_le(&dir, 20, 2);
    put_le(&dir, 0, 2);
    put_le(&dir, m[i].deflate ? 8 : 0, 2);
    put_le(&dir, 0, 4);
    put_le(&dir, crc, 4);
    put_le(&dir, zip64 ? 0xffffffff : body.len, 4);
    put_le(&dir, zip64 ? 0xffffffff : m[i].data.len, 4);
    put_le(&dir, nl, 2);
    put_le(&dir, zip64 ? 28 : 0, 2);
    put_le(&dir, 0, 2);
    put_le(&dir, 0, 2);
    put_le(&dir, 0, 2);
    put_le(&dir, 0, 4);
    put_le(&dir, zip64 ? 0xffffffff : offset, 4);
    put(&dir, m[i].name, nl);
    if (zip64) {
      put_le(&dir, 1, 2);
      put_le(&dir, 24, 2);
      put_le(&dir, m[i].data.len, 8);
      put_le(&dir, body.len, 8);
      put_le(&dir, offset, 8);
    }
    free(body.p);
  }
  size_t dir_at = z.len;
  put(&z, dir.p, dir.len);
  if (zip64) {
    size_t rec = z.len;
    put_le(&z, 0x06064b50, 4);
    put_le(&z, 44, 8);
    put_le(&z, 45, 2);
    put_le(&z, 45, 2);
    put_le(&z, 0, 4);
    put_le(&z, 0, 4);
    put_le(&z, (uint64_t)n, 8);
    put_le(&z, (uint64_t)n, 8);
    put_le(&z, dir.len, 8);
    put_le(&z, dir_at, 8);
    put_le(&z, 0x07064b50, 4);
    put_le(&z, 0, 4);
    put_le(&z, rec, 8);
    put_le(&z, 1, 4);
  }
  put_le(&z, 0x06054b50, 4);
  put_le(&z, 0, 4);
  put_le(&z, zip64 ? 0xffff : (uint64_t)n, 2);
  put_le(&z, zip64 ? 0xffff : (uint64_t)n, 2);
  put_le(&z, zip64 ? 0xffffffff : dir.len, 4);
  put_le(&z, zip64 ? 0xffffffff : dir_at, 4);
  put_le(&z, 0, 2);
  free(dir.p);
  return z;
}

static bytes zip(const zmember *m, int n) { return zip_as(m, n, 0); }

static void free_members(zmember *m, int n) {
  for (int i = 0; i < n; i++) free(m[i].data.p);
}

static const char *write_bytes(const char *name, bytes b) {
  const char *p = test_write_file(name, b.p, b.len);
  free(b.p);
  return p;
}

static int has(nle_ctx *ctx, const char *text) {
  int ok = strstr(nle_ctx_error(ctx), text) != NULL;
  if (!ok) printf("  error text: %s\n  lacks: %s\n", nle_ctx_error(ctx), text);
  return ok;
}

/* A 4 x 3 test matrix with zeros, as floats, and its CSR parts. */
static const float dense4x3[12] = {1, 0, 2, 0, 0, 3, 4, 5, 0, 0, 0, 6};
static const int32_t csr_indptr[5] = {0, 2, 3, 5, 6}, csr_indices[6] = {0, 2, 2, 0, 1, 2};
static const float csr_data[6] = {1, 2, 3, 4, 5, 6};

static int equals_dense(const nle_dataset *ds, const float *want, size_t rows, size_t cols) {
  if (!ds || !ds->X || ds->X->rows != rows || ds->X->cols != cols) return 0;
  return !memcmp(ds->X->data, want, rows * cols * sizeof(float));
}

static int equals_transposed(const nle_dataset *ds, const float *want, size_t rows, size_t cols) {
  if (!ds || !ds->X || ds->X->rows != cols || ds->X->cols != rows) return 0;
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++)
      if (ds->X->data[j * rows + i] != want[i * cols + j]) return 0;
  return 1;
}

/* The sparse dataset, as a dense matrix, equals want; columns sorted. */
static int sparse_equals(const nle_dataset *ds, const float *want, size_t rows, size_t cols) {
  if (!ds || ds->X || !ds->sparse || ds->sparse->rows != (int64_t)rows || ds->sparse->cols != (int64_t)cols ||
      ds->sparse->dtype != NLE_F32)
    return 0;
  float *d = calloc(rows * cols, sizeof *d);
  const nle_csr *m = ds->sparse;
  int ok = 1;
  for (int64_t r = 0; r < m->rows; r++)
    for (int64_t k = m->rowptr[r]; k < m->rowptr[r + 1]; k++) {
      if (k > m->rowptr[r] && m->colind[k] <= m->colind[k - 1]) ok = 0;
      d[r * (int64_t)cols + m->colind[k]] = ((const float *)m->val)[k];
    }
  ok = ok && !memcmp(d, want, rows * cols * sizeof *d);
  free(d);
  return ok;
}

/* ---- .npz ---------------------------------------------------------------- */

static void npz_savez(void) {
  nle_ctx *ctx = test_ctx(1);
  const double X[6] = {1.5, -2, 3, 4, 5, 6.25};
  const int64_t y[3] = {2, 0, 1};
  for (int deflate = 0; deflate < 2; deflate++) {
    zmember m[2] = {{"X.npy", npy("<f8", "(3, 2)", X, sizeof X), deflate},
                    {"y.npy", npy("<i8", "(3,)", y, sizeof y), deflate}};
    bytes z = zip(m, 2);
    free_members(m, 2);
    const char *path = write_bytes("two.npz", z);
    char src[600];
    nle_dataset *ds = NULL;
    snprintf(src, sizeof src, "%s:X", path);
    nle_test_ok(nle_dataset_read(ctx, src, NULL, &ds));
    nle_test(ds && ds->X->rows == 3 && ds->X->cols == 2 && ds->X->data[0] == 1.5f && ds->X->data[5] == 6.25f);
    nle_test(ds && !strcmp(ds->name, src));
    nle_dataset_free(&ds);
    /* two arrays and no name: the keys listed */
    nle_test(nle_dataset_read(ctx, path, NULL, &ds) == NLE_ERR_ARG && has(ctx, "2 arrays: name one as") &&
             has(ctx, "(X, y)"));
    snprintf(src, sizeof src, "%s:z", path);
    nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_ARG && has(ctx, "no array 'z' in it (it holds: X, y)"));
    /* labels from a member */
    int32_t *labels = NULL;
    int64_t n = 0;
    int32_t classes = 0;
    snprintf(src, sizeof src, "%s:y", path);
    nle_test_ok(nle_labels_read(ctx, src, NULL, 3, &labels, &n, &classes, NULL));
    nle_test(labels && n == 3 && classes == 3 && labels[0] == 2 && labels[1] == 0);
    free(labels);
  }
  /* one array: the default; transposed on request */
  zmember one[1] = {{"X.npy", npy("<f8", "(3, 2)", X, sizeof X), 1}};
  const char *path = write_bytes("one.npz", zip(one, 1));
  free_members(one, 1);
  nle_dataset *ds = NULL;
  nle_test_ok(nle_dataset_read(ctx, path, NULL, &ds));
  nle_test(ds && ds->X->rows == 3 && ds->X->data[1] == -2.0f);
  nle_dataset_free(&ds);
  nle_read_opts o;
  nle_read_opts_init(&o);
  o.transpose = true;
  nle_test_ok(nle_dataset_read(ctx, path, &o, &ds));
  nle_test(ds && ds->X->rows == 2 && ds->X->cols == 3 && ds->X->data[1] == 3.0f && ds->X->data[3] == -2.0f);
  nle_dataset_free(&ds);
  /* zip64 records, stored and deflated members */
  zmember z64[2] = {{"X.npy", npy("<f8", "(3, 2)", X, sizeof X), 0}, {"y.npy", npy("<i8", "(3,)", y, sizeof y), 1}};
  bytes z = zip_as(z64, 2, 1);
  free_members(z64, 2);
  nle_test_ok(nle__parse_npz(ctx, "z64.npz", z.p, z.len, "y", NULL, 0, &ds));
  nle_test(ds && ds->X->rows == 3 && ds->X->data[0] == 2.0f);
  nle_dataset_free(&ds);
  nle_test_ok(nle__parse_npz(ctx, "z64.npz", z.p, z.len, "X", NULL, 0, &ds));
  nle_test(ds && ds->X->rows == 3 && ds->X->data[5] == 6.25f);
  nle_dataset_free(&ds);
  z.p[z.len - 22 - 20 + 8] ^= 0x10; /* the locator's pointer */
  nle_test(nle__parse_npz(ctx, "z64.npz", z.p, z.len, "X", NULL, 0, &ds) == NLE_ERR_FORMAT &&
           has(ctx, "the zip64 locator points outside the file"));
  free(z.p);
  nle_ctx_free(&ctx);
}

static void npz_damaged(void) {
  nle_ctx *ctx = test_ctx(1);
  const float X[4] = {1, 2, 3, 4};
  zmember m[1] = {{"X.npy", npy("<f4", "(2, 2)", X, sizeof X), 1}};
  bytes z = zip(m, 1);
  free_members(m, 1);
  nle_dataset *ds = NULL;
  nle_test_ok(nle__parse_npz(ctx, "ok.npz", z.p, z.len, NULL, NULL, 0, &ds));
  nle_dataset_free(&ds);
  /* every truncation is refused */
  int refused = 0;
  for (size_t len = 0; len < z.len; len++) {
    nle_status s = nle__parse_npz(ctx, "cut.npz", z.p, len, NULL, NULL, 0, &ds);
    refused += s != NLE_OK && !ds;
    nle_dataset_free(&ds);
  }
  nle_test(refused == (int)z.len);
  /* a flipped byte in the compressed data: the stream or its checksum says so */
  int flipped = 0, total = 0;
  for (size_t at = 30 + 5; at < z.len - 22 - 51; at++) {
    z.p[at] ^= 0x41;
    nle_status s = nle__parse_npz(ctx, "flip.npz", z.p, z.len, NULL, NULL, 0, &ds);
    flipped += s != NLE_OK || (ds && !memcmp(ds->X->data, X, sizeof X));
    total++;
    nle_dataset_free(&ds);
    z.p[at] ^= 0x41;
  }
  nle_test(flipped == total);
  z.p[z.len - 22 - 51 + 16] ^= 1; /* the directory's CRC */
  nle_test(nle__parse_npz(ctx, "crc.npz", z.p, z.len, NULL, NULL, 0, &ds) == NLE_ERR_FORMAT &&
           has(ctx, "crc.npz: member 'X.npy' is damaged (checksum mismatch)"));
  free(z.p);
  /* a member that is not an array, and a method that is not read */
  zmember txt[1] = {{"notes.txt", {0}, 0}};
  put(&txt[0].data, "hello", 5);
  z = zip(txt, 1);
  free_members(txt, 1);
  nle_test(nle__parse_npz(ctx, "t.npz", z.p, z.len, NULL, NULL, 0, &ds) == NLE_ERR_FORMAT &&
           has(ctx, "t.npz: member 'notes.txt' is not a .npy array"));
  z.p[8] = 12; /* bzip2, in the local header and the directory */
  z.p[z.len - 22 - 46 - 9 + 10] = 12;
  nle_test(nle__parse_npz(ctx, "bz.npz", z.p, z.len, "notes", NULL, 0, &ds) != NLE_OK && !ds);
  free(z.p);
  zmember bz[1] = {{"X.npy", npy("<f4", "(2, 2)", X, sizeof X), 0}};
  z = zip(bz, 1);
  free_members(bz, 1);
  z.p[8] = 12;
  z.p[z.len - 22 - 46 - 5 + 10] = 12;
  nle_test(nle__parse_npz(ctx, "bz.npz", z.p, z.len, NULL, NULL, 0, &ds) == NLE_ERR_UNSUPPORTED &&
           has(ctx, "bz.npz: member 'X.npy' uses compression method 12"));
  free(z.p);
  nle_ctx_free(&ctx);
}

/* scipy.sparse.save_npz's members for dense4x3 in csr, csc or coo; the
 * format as bytes (S3) or unicode (U3). */
static bytes sparse_npz(const char *format, int unicode, int deflate) {
  int64_t shape[2] = {4, 3};
  zmember m[5];
  int n = 0;
  if (unicode) {
    uint32_t u[3] = {(uint32_t)format[0], (uint32_t)format[1], (uint32_t)format[2]};
    m[n++] = (zmember){"format.npy", npy("<U3", "()", u, sizeof u), deflate};
  } else {
    m[n++] = (zmember){"format.npy", npy("|S3", "()", format, 3), deflate};
  }
  m[n++] = (zmember){"shape.npy", npy("<i8", "(2,)", shape, sizeof shape), deflate};
  if (!strcmp(format, "csr")) {
    /* row 2's columns out of order, as scipy allows */
    int32_t idx[6] = {0, 2, 2, 1, 0, 2};
    float val[6] = {1, 2, 3, 5, 4, 6};
    m[n++] = (zmember){"data.npy", npy("<f4", "(6,)", val, sizeof val), deflate};
    m[n++] = (zmember){"indices.npy", npy("<i4", "(6,)", idx, sizeof idx), deflate};
    m[n++] = (zmember){"indptr.npy", npy("<i4", "(5,)", csr_indptr, sizeof csr_indptr), deflate};
  } else if (!strcmp(format, "csc")) {
    int64_t ptr[4] = {0, 2, 3, 6}, idx[6] = {0, 2, 2, 0, 1, 3};
    double val[6] = {1, 4, 5, 2, 3, 6};
    m[n++] = (zmember){"data.npy", npy("<f8", "(6,)", val, sizeof val), deflate};
    m[n++] = (zmember){"indices.npy", npy("<i8", "(6,)", idx, sizeof idx), deflate};
    m[n++] = (zmember){"indptr.npy", npy("<i8", "(4,)", ptr, sizeof ptr), deflate};
  } else {
    int32_t row[6] = {3, 0, 2, 1, 0, 2}, col[6] = {2, 0, 1, 2, 2, 0};
    int16_t val[6] = {6, 1, 5, 3, 2, 4};
    m[n++] = (zmember){"data.npy", npy("<i2", "(6,)", val, sizeof val), deflate};
    m[n++] = (zmember){"row.npy", npy("<i4", "(6,)", row, sizeof row), deflate};
    m[n++] = (zmember){"col.npy", npy("<i4", "(6,)", col, sizeof col), deflate};
  }
  bytes z = zip(m, n);
  free_members(m, n);
  return z;
}

static void npz_sparse(void) {
  nle_ctx *ctx = test_ctx(1);
  const char *formats[3] = {"csr", "csc", "coo"};
  nle_read_opts keep;
  nle_read_opts_init(&keep);
  keep.sparse_ok = true;
  for (int f = 0; f < 3; f++)
    for (int variant = 0; variant < 2; variant++) {
      bytes z = sparse_npz(formats[f], variant, variant);
      nle_dataset *ds = NULL;
      /* densified by default, kept sparse on request, either way round */
      nle_test_ok(nle__parse_npz(ctx, "s.npz", z.p, z.len, NULL, NULL, 0, &ds));
      nle_test(equals_dense(ds, dense4x3, 4, 3));
      nle_dataset_free(&ds);
      nle_test_ok(nle__parse_npz(ctx, "s.npz", z.p, z.len, NULL, &keep, 0, &ds));
      nle_test(sparse_equals(ds, dense4x3, 4, 3));
      nle_dataset_free(&ds);
      nle_read_opts t = keep;
      t.transpose = true;
      t.sparse_ok = false;
      nle_test_ok(nle__parse_npz(ctx, "s.npz", z.p, z.len, NULL, &t, 0, &ds));
      nle_test(equals_transposed(ds, dense4x3, 4, 3));
      nle_dataset_free(&ds);
      free(z.p);
    }
  /* a repeated entry and an index out of range */
  int64_t shape[2] = {2, 2};
  int32_t ptr[3] = {0, 2, 2}, dup[2] = {1, 1}, far[2] = {0, 2};
  float val[2] = {1, 2};
  for (int which = 0; which < 2; which++) {
    zmember m[5] = {{"format.npy", npy("|S3", "()", "csr", 3), 0},
                    {"shape.npy", npy("<i8", "(2,)", shape, sizeof shape), 0},
                    {"data.npy", npy("<f4", "(2,)", val, sizeof val), 0},
                    {"indices.npy", npy("<i4", "(2,)", which ? far : dup, 8), 0},
                    {"indptr.npy", npy("<i4", "(3,)", ptr, sizeof ptr), 0}};
    bytes z = zip(m, 5);
    free_members(m, 5);
    nle_dataset *ds = NULL;
    nle_status s = nle__parse_npz(ctx, "bad.npz", z.p, z.len, NULL, NULL, 0, &ds);
    if (which) nle_test(s == NLE_ERR_FORMAT && has(ctx, "bad.npz: sparse entry 1: column index -1 outside [0, 2)"));
    else nle_test(s == NLE_ERR_VALUE && has(ctx, "bad.npz: entry (row 0, column 1) stored twice"));
    free(z.p);
  }
  nle_ctx_free(&ctx);
}

/* ---- Matrix Market -------------------------------------------------------- */

static void mtx_data(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_dataset *ds = NULL;
  nle_read_opts keep;
  nle_read_opts_init(&keep);
  keep.sparse_ok = true;
  const char *coo = "%%MatrixMarket matrix coordinate real general\n% a comment\n4 3 6\n"
                    "1 1 1\n3 2 5\n1 3 2\n2 3 3\n3 1 4\n4 3 6\n";
  const char *p = test_write_file("m.mtx", coo, strlen(coo));
  nle_test_ok(nle_dataset_read(ctx, p, NULL, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  nle_test_ok(nle_dataset_read(ctx, p, &keep, &ds));
  nle_test(sparse_equals(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  /* gzip'ed, transposed */
  uLongf zlen = compressBound(strlen(coo)) + 32;
  bytes gz = {malloc(zlen + 32), 0, zlen + 32};
  {
    z_stream s;
    memset(&s, 0, sizeof s);
    deflateInit2(&s, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    s.next_in = (Bytef *)coo;
    s.avail_in = (uInt)strlen(coo);
    s.next_out = gz.p;
    s.avail_out = (uInt)gz.cap;
    deflate(&s, Z_FINISH);
    gz.len = gz.cap - s.avail_out;
    deflateEnd(&s);
  }
  nle_read_opts t;
  nle_read_opts_init(&t);
  t.transpose = true;
  p = test_write_file("m.mtx.gz", gz.p, gz.len);
  nle_test_ok(nle_dataset_read(ctx, p, &t, &ds));
  nle_test(equals_transposed(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  /* a 10x folder: matrix.mtx.gz of features x cells, the cells as points */
  mkdir(test_path("tenx"), 0755);
  test_write_file("tenx/matrix.mtx.gz", gz.p, gz.len);
  test_write_file("tenx/barcodes.tsv", "a\nb\nc\n", 6);
  nle_test_ok(nle_dataset_read(ctx, test_path("tenx"), NULL, &ds));
  nle_test(equals_transposed(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  nle_test_ok(nle_dataset_read(ctx, test_path("tenx"), &t, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  free(gz.p);
  mkdir(test_path("empty_dir"), 0755);
  nle_test(nle_dataset_read(ctx, test_path("empty_dir"), NULL, &ds) == NLE_ERR_IO && has(ctx, "no matrix.mtx"));
  /* symmetric, pattern, array (by columns), array symmetric */
  const char *sym = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n2 1\n3 2\n";
  const float sym_want[9] = {1, 1, 0, 1, 0, 1, 0, 1, 0};
  nle_test_ok(nle__parse_mtx(ctx, "s.mtx", (const uint8_t *)sym, strlen(sym), 0, NULL, &ds));
  nle_test(equals_dense(ds, sym_want, 3, 3));
  nle_dataset_free(&ds);
  const char *arr = "%%MatrixMarket matrix array real general\n%\n4 3\n1\n0\n4\n0\n0\n0\n5\n0\n2\n3\n0\n6\n";
  nle_test_ok(nle__parse_buffer(ctx, "a.mtx", (const uint8_t *)arr, strlen(arr), NULL, 0, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  const char *arr_sym = "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n";
  const float arr_sym_want[4] = {1, 2, 2, 3};
  nle_test_ok(nle__parse_buffer(ctx, "as.mtx", (const uint8_t *)arr_sym, strlen(arr_sym), NULL, 0, &ds));
  nle_test(equals_dense(ds, arr_sym_want, 2, 2));
  nle_dataset_free(&ds);
  /* errors name the line: a repeat (after a comment line), a value, the count */
  const char *twice = "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 0.5\n% note\n2 2 1\n1 2 0.5\n";
  nle_test(nle__parse_mtx(ctx, "d.mtx", (const uint8_t *)twice, strlen(twice), 0, NULL, &ds) == NLE_ERR_VALUE &&
           has(ctx, "d.mtx: line 6: entry (1, 2) given twice"));
  const char *nan = "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 nan\n";
  nle_test(nle__parse_mtx(ctx, "n.mtx", (const uint8_t *)nan, strlen(nan), 0, NULL, &ds) == NLE_ERR_VALUE &&
           has(ctx, "n.mtx: line 3: NaN value"));
  const char *few = "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1\n";
  nle_test(nle__parse_mtx(ctx, "f.mtx", (const uint8_t *)few, strlen(few), 0, NULL, &ds) == NLE_ERR_FORMAT &&
           has(ctx, "f.mtx: 2 entries announced, 1 found (truncated?)"));
  const char *bomb = "%%MatrixMarket matrix coordinate real general\n100000 100000 1000000000\n1 2 1\n";
  nle_test(nle__parse_mtx(ctx, "b.mtx", (const uint8_t *)bomb, strlen(bomb), 0, NULL, &ds) == NLE_ERR_FORMAT &&
           has(ctx, "b.mtx: line 2: 1000000000 entries announced, more than the"));
  const char *cplx = "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n";
  nle_test(nle__parse_mtx(ctx, "c.mtx", (const uint8_t *)cplx, strlen(cplx), 0, NULL, &ds) == NLE_ERR_UNSUPPORTED &&
           has(ctx, "field 'complex' is not read"));
  /* every prefix of a valid file: a result or a clean error */
  for (size_t len = 0; len <= strlen(coo); len++) {
    nle_status s = nle__parse_mtx(ctx, "cut.mtx", (const uint8_t *)coo, len, 0, NULL, &ds);
    nle_test(s != NLE_OK ? !ds : len == strlen(coo) || len + 1 == strlen(coo));
    nle_dataset_free(&ds);
  }
  nle_ctx_free(&ctx);
}

/* ---- HDF5 ----------------------------------------------------------------- */

static hid_t h5_lcpl(void) {
  hid_t p = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(p, 1);
  return p;
}

/* A dataset stored as ftype, written from memory of type mtype. */
static void h5_put_as(hid_t loc, const char *name, hid_t ftype, hid_t mtype, int rank, const hsize_t *dims,
                      const void *data) {
  hid_t sp = H5Screate_simple(rank, dims, NULL), lcpl = h5_lcpl();
  hid_t d = H5Dcreate2(loc, name, ftype, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  if (d < 0 || H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    printf("  could not write %s\n", name);
    exit(2);
  }
  H5Dclose(d);
  H5Pclose(lcpl);
  H5Sclose(sp);
}

static void h5_put(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims, const void *data) {
  h5_put_as(loc, name, type, type, rank, dims, data);
}

static hid_t h5_vlen_utf8(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return t;
}

/* a string attribute as h5py writes them: scalar, variable length, UTF-8 */
static void h5_attr(hid_t obj, const char *name, const char *value) {
  hid_t t = h5_vlen_utf8(), sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, t, &value);
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
}

static void h5_attr_ints(hid_t obj, const char *name, const int64_t *v, hsize_t n) {
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t a = H5Acreate2(obj, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT64, v);
  H5Aclose(a);
  H5Sclose(sp);
}

static void h5_strings(hid_t loc, const char *name, const char *const *s, hsize_t n) {
  hid_t t = h5_vlen_utf8();
  h5_put(loc, name, t, 1, &n, s);
  H5Tclose(t);
}

static hid_t h5_group(hid_t loc, const char *name) {
  hid_t lcpl = h5_lcpl(), g = H5Gcreate2(loc, name, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Pclose(lcpl);
  return g;
}

/* An AnnData file as anndata 0.8 writes it: X dense or a CSR/CSC group,
 * obs with a categorical, a string, an integer and a boolean column, the
 * older categorical layout too, obsm/X_pca. */
static const char *write_h5ad(const char *name, int x_kind) {
  const char *path = test_path(name);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t root = H5Gopen2(f, "/", H5P_DEFAULT);
  h5_attr(root, "encoding-type", "anndata");
  H5Gclose(root);
  hsize_t d2[2] = {4, 3}, n4 = 4;
  if (x_kind == 0) {
    h5_put(f, "X", H5T_NATIVE_FLOAT, 2, d2, dense4x3);
  } else {
    hid_t g = h5_group(f, "X");
    h5_attr(g, "encoding-type", x_kind == 1 ? "csr_matrix" : "csc_matrix");
    int64_t shape[2] = {4, 3};
    h5_attr_ints(g, "shape", shape, 2);
    hsize_t nnz = 6, np = x_kind == 1 ? 5 : 4;
    const int32_t csc_ptr[4] = {0, 2, 3, 6}, csc_idx[6] = {0, 2, 2, 0, 1, 3};
    const double csc_val[6] = {1, 4, 5, 2, 3, 6};
    if (x_kind == 1) {
      h5_put(g, "data", H5T_NATIVE_FLOAT, 1, &nnz, csr_data);
      h5_put(g, "indices", H5T_NATIVE_INT32, 1, &nnz, csr_indices);
      h5_put(g, "indptr", H5T_NATIVE_INT32, 1, &np, csr_indptr);
    } else {
      h5_put(g, "data", H5T_NATIVE_DOUBLE, 1, &nnz, csc_val);
      h5_put(g, "indices", H5T_NATIVE_INT32, 1, &nnz, csc_idx);
      h5_put(g, "indptr", H5T_NATIVE_INT32, 1, &np, csc_ptr);
    }
    H5Gclose(g);
  }
  hid_t obs = h5_group(f, "obs");
  h5_attr(obs, "encoding-type", "dataframe");
  H5Gclose(obs);
  const char *index[4] = {"c0", "c1", "c2", "c3"};
  h5_strings(f, "obs/_index", index, 4);
  hid_t ct = h5_group(f, "obs/cell_type");
  h5_attr(ct, "encoding-type", "categorical");
  H5Gclose(ct);
  const char *cats[3] = {"B cell", "T cell", "monocyte"};
  const int8_t codes[4] = {2, 0, 1, 0};
  hsize_t n3 = 3;
  h5_strings(f, "obs/cell_type/categories", cats, n3);
  h5_put(f, "obs/cell_type/codes", H5T_NATIVE_INT8, 1, &n4, codes);
  const char *names[4] = {"x", "y", "x", "z"};
  h5_strings(f, "obs/name", names, 4);
  const int64_t batch[4] = {1, 1, 0, 3};
  h5_put(f, "obs/batch", H5T_NATIVE_INT64, 1, &n4, batch);
  /* h5py's booleans: an enum over int8 */
  hid_t b = H5Tenum_create(H5T_NATIVE_INT8);
  int8_t no = 0, yes = 1;
  H5Tenum_insert(b, "FALSE", &no);
  H5Tenum_insert(b, "TRUE", &yes);
  const int8_t flags[4] = {1, 0, 0, 1};
  h5_put(f, "obs/flag", b, 1, &n4, flags);
  H5Tclose(b);
  /* anndata < 0.8: codes beside obs/__categories/NAME */
  const int16_t old_codes[4] = {1, 1, 0, -1};
  const char *old_cats[2] = {"left", "right"};
  hsize_t n2 = 2;
  h5_put(f, "obs/side", H5T_NATIVE_INT16, 1, &n4, old_codes);
  h5_strings(f, "obs/__categories/side", old_cats, n2);
  hsize_t dp[2] = {4, 2};
  const double pca[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  h5_put(f, "obsm/X_pca", H5T_NATIVE_DOUBLE, 2, dp, pca);
  H5Fclose(f);
  return path;
}

/* Files and objects open in libhdf5 (a reader that forgets to close one
 * keeps its file, and its memory, open). */
static ssize_t open_ids(void) { return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); }

static void hdf5_anndata(void) {
  nle_ctx *ctx = test_ctx(1);
  write_h5ad("dense.h5ad", 0);
  ssize_t ids = open_ids();
  nle_read_opts keep;
  nle_read_opts_init(&keep);
  keep.sparse_ok = true;
  char src[600];
  for (int kind = 0; kind < 3; kind++) {
    const char *path = write_h5ad(kind == 0 ? "dense.h5ad" : kind == 1 ? "csr.h5ad" : "csc.h5ad", kind);
    nle_dataset *ds = NULL;
    nle_test_ok(nle_dataset_read(ctx, path, NULL, &ds));
    nle_test(equals_dense(ds, dense4x3, 4, 3));
    nle_dataset_free(&ds);
    nle_test_ok(nle_dataset_read(ctx, path, &keep, &ds));
    nle_test(kind ? sparse_equals(ds, dense4x3, 4, 3) : equals_dense(ds, dense4x3, 4, 3));
    nle_dataset_free(&ds);
    snprintf(src, sizeof src, "%s:obsm/X_pca", path);
    nle_test_ok(nle_dataset_read(ctx, src, NULL, &ds));
    nle_test(ds && ds->X->rows == 4 && ds->X->cols == 2 && ds->X->data[5] == 6.0f && !strcmp(ds->name, src));
    nle_dataset_free(&ds);
  }
  const char *path = test_path("dense.h5ad");
  /* label columns: categorical (its categories as the names), strings
   * (numbered in sorted order), integers, booleans, the older layout */
  int32_t *labels = NULL, classes = 0;
  int64_t n = 0;
  char **names = NULL;
  snprintf(src, sizeof src, "%s:obs/cell_type", path);
  nle_test_ok(nle_labels_read(ctx, src, NULL, 4, &labels, &n, &classes, &names));
  nle_test(labels && classes == 3 && labels[0] == 2 && labels[1] == 0 && labels[2] == 1 && names &&
           !strcmp(names[0], "B cell") && !strcmp(names[2], "monocyte"));
  free(labels);
  nle_class_names_free(&names, classes);
  snprintf(src, sizeof src, "%s:/obs/name", path);
  nle_test_ok(nle_labels_read(ctx, src, NULL, 4, &labels, &n, &classes, &names));
  nle_test(labels && classes == 3 && labels[0] == 0 && labels[1] == 1 && labels[3] == 2 && names && !strcmp(names[2], "z"));
  free(labels);
  nle_class_names_free(&names, classes);
  snprintf(src, sizeof src, "%s:obs/batch", path);
  nle_test_ok(nle_labels_read(ctx, src, NULL, 4, &labels, &n, &classes, &names));
  /* batch = {1, 1, 0, 3}: three classes, their values as names */
  nle_test(labels && classes == 3 && labels[0] == 1 && labels[2] == 0 && labels[3] == 2 && names &&
           !strcmp(names[0], "0") && !strcmp(names[2], "3"));
  free(labels);
  nle_class_names_free(&names, classes);
  snprintf(src, sizeof src, "%s:obs/flag", path);
  nle_test_ok(nle_labels_read(ctx, src, NULL, 4, &labels, &n, &classes, NULL));
  nle_test(labels && classes == 2 && labels[0] == 1 && labels[1] == 0);
  free(labels);
  snprintf(src, sizeof src, "%s:obs/side", path);
  nle_test(nle_labels_read(ctx, src, NULL, 4, &labels, &n, &classes, NULL) == NLE_ERR_VALUE &&
           has(ctx, "obs/side: point 3 has no category (a missing value)"));
  /* the default of an .h5ad for labels: a column must be named */
  nle_test(nle_labels_read(ctx, path, NULL, 4, &labels, &n, &classes, NULL) == NLE_ERR_ARG &&
           has(ctx, ":obs/COLUMN (obs columns: batch, cell_type, flag, name, side)"));
  /* a wrong path lists what is there */
  nle_dataset *ds = NULL;
  snprintf(src, sizeof src, "%s:obs/celltype", path);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_ARG &&
           has(ctx, "nothing named 'obs/celltype' inside (obs holds: __categories, _index, batch, cell_type"));
  snprintf(src, sizeof src, "%s:obs", path);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_ARG && has(ctx, "'obs' is a group, not an array"));
  /* label columns are not data */
  snprintf(src, sizeof src, "%s:obs/cell_type", path);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_UNSUPPORTED &&
           has(ctx, "dense.h5ad:obs/cell_type: a categorical column, not data (labels? give them with labels="));
  snprintf(src, sizeof src, "%s:obs/name", path);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_UNSUPPORTED &&
           has(ctx, "dense.h5ad:obs/name: string values are not data (a label column?"));
  snprintf(src, sizeof src, "%s:obs/side", path);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_UNSUPPORTED && has(ctx, "a categorical column, not data"));
  /* every identifier the reads opened was closed */
  nle_test(open_ids() == ids && ids == 0);
  nle_ctx_free(&ctx);
}

static void hdf5_plain(void) {
  nle_ctx *ctx = test_ctx(1);
  const char *path = test_path("plain.h5");
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t d[3] = {4, 3, 1}, n4 = 4;
  const uint16_t u[12] = {1, 0, 2, 0, 0, 3, 4, 5, 0, 0, 0, 6};
  h5_put_as(f, "/deep/inside/x", H5T_STD_U16BE, H5T_NATIVE_UINT16, 2, d, u);
  const double v[4] = {1, 2, 3, 4};
  h5_put(f, "/vector", H5T_NATIVE_DOUBLE, 1, &n4, v);
  H5Fclose(f);
  nle_dataset *ds = NULL;
  /* the only 2-D numeric dataset, converted from big-endian uint16 */
  nle_test_ok(nle_dataset_read(ctx, path, NULL, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  /* the same from a memory image */
  uint8_t *buf;
  size_t len;
  nle_test_ok(nle__read_file(ctx, path, &buf, &len));
  nle_test_ok(nle__parse_buffer(ctx, "image.h5", buf, len, NULL, 0, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  /* every cut of the file: a clean error */
  int refused = 0, cuts = 0;
  for (size_t cut = 0; cut < len; cut += len / 97 + 1, cuts++) {
    nle_status s = nle__parse_hdf5(ctx, "cut.h5", buf, cut, NULL, NULL, 0, &ds);
    refused += s != NLE_OK && !ds;
    nle_dataset_free(&ds);
  }
  nle_test(refused == cuts);
  free(buf);
  nle_test(nle_dataset_read(ctx, path, NULL, &ds) == NLE_OK);
  nle_dataset_free(&ds);
  /* three dimensions, flattened; NaN named; several candidates listed;
   * a compound dataset refused by type */
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  d[0] = 2;
  d[1] = 2;
  d[2] = 3;
  h5_put(f, "/cube", H5T_NATIVE_FLOAT, 3, d, dense4x3);
  float bad[4] = {1, 2, NAN, 4};
  hsize_t b2[2] = {2, 2};
  h5_put(f, "/nan", H5T_NATIVE_FLOAT, 2, b2, bad);
  hid_t c = H5Tcreate(H5T_COMPOUND, 8);
  H5Tinsert(c, "a", 0, H5T_NATIVE_FLOAT);
  H5Tinsert(c, "b", 4, H5T_NATIVE_FLOAT);
  h5_put(f, "/table", c, 1, &n4, dense4x3);
  H5Tclose(c);
  H5Fclose(f);
  char src[600];
  snprintf(src, sizeof src, "%s:cube", path);
  nle_test_ok(nle_dataset_read(ctx, src, NULL, &ds));
  nle_test(ds && ds->X->rows == 2 && ds->X->cols == 6 && ds->X->data[7] == 5.0f);
  nle_dataset_free(&ds);
  nle_test(nle_dataset_read(ctx, path, NULL, &ds) == NLE_ERR_ARG &&
           has(ctx, "plain.h5: 2 candidates: name one as") && has(ctx, "(/deep/inside/x, /nan)"));
  snprintf(src, sizeof src, "%s:/nan", path);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_VALUE && has(ctx, "plain.h5:/nan: element [1, 0]: NaN value"));
  snprintf(src, sizeof src, "%s:/table", path);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_UNSUPPORTED &&
           has(ctx, "plain.h5:/table: compound (a table of fields) values are not supported"));
  /* a 10x Genomics .h5: matrix/{data, indices, indptr, shape}, features x
   * barcodes by columns: the barcodes are the points */
  const char *tenx = test_path("tenx.h5");
  f = H5Fcreate(tenx, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t nnz = 6, np = 5, two = 2;
  const int32_t shape[2] = {3, 4};
  h5_put(f, "matrix/data", H5T_NATIVE_FLOAT, 1, &nnz, csr_data);
  h5_put(f, "matrix/indices", H5T_NATIVE_INT32, 1, &nnz, csr_indices);
  h5_put(f, "matrix/indptr", H5T_NATIVE_INT32, 1, &np, csr_indptr);
  h5_put(f, "matrix/shape", H5T_NATIVE_INT32, 1, &two, shape);
  const char *bc[4] = {"AAA", "CCC", "GGG", "TTT"};
  h5_strings(f, "matrix/barcodes", bc, 4);
  H5Fclose(f);
  nle_test_ok(nle_dataset_read(ctx, tenx, NULL, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* ---- MATLAB --------------------------------------------------------------- */

/* X (4 x 3, dense4x3), S (the same sparse), y (1 x 4) and a char array. */
static const char *write_mat(const char *name, enum mat_ft version, enum matio_compression z, int only_x) {
  const char *path = test_path(name);
  mat_t *mat = Mat_CreateVer(path, NULL, version);
  if (!mat) exit(2);
  size_t dims[2] = {4, 3};
  double colmajor[12];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) colmajor[i + 4 * j] = dense4x3[i * 3 + j];
  matvar_t *v = Mat_VarCreate("X", MAT_C_DOUBLE, MAT_T_DOUBLE, 2, dims, colmajor, 0);
  Mat_VarWrite(mat, v, z);
  Mat_VarFree(v);
  if (!only_x) {
    mat_uint32_t jc[4] = {0, 2, 3, 6}, ir[6] = {0, 2, 2, 0, 1, 3};
    double sv[6] = {1, 4, 5, 2, 3, 6};
    mat_sparse_t sp = {6, ir, 6, jc, 4, 6, sv};
    v = Mat_VarCreate("S", MAT_C_SPARSE, MAT_T_DOUBLE, 2, dims, &sp, 0);
    Mat_VarWrite(mat, v, z);
    Mat_VarFree(v);
    size_t yd[2] = {1, 4};
    int32_t y[4] = {3, 1, 0, 1};
    v = Mat_VarCreate("y", MAT_C_INT32, MAT_T_INT32, 2, yd, y, 0);
    Mat_VarWrite(mat, v, z);
    Mat_VarFree(v);
    size_t cd[2] = {1, 5};
    v = Mat_VarCreate("note", MAT_C_CHAR, MAT_T_UINT8, 2, cd, "hello", 0);
    Mat_VarWrite(mat, v, z);
    Mat_VarFree(v);
  }
  Mat_Close(mat);
  return path;
}

static void mat_files(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_read_opts keep;
  nle_read_opts_init(&keep);
  keep.sparse_ok = true;
  const struct {
    const char *name;
    enum mat_ft version;
    enum matio_compression z;
  } kinds[3] = {{"v5.mat", MAT_FT_MAT5, MAT_COMPRESSION_NONE},
                {"v7.mat", MAT_FT_MAT5, MAT_COMPRESSION_ZLIB},
                {"v73.mat", MAT_FT_MAT73, MAT_COMPRESSION_NONE}};
  char src[600];
  for (int k = 0; k < 3; k++) {
    const char *path = write_mat(kinds[k].name, kinds[k].version, kinds[k].z, 0);
    nle_dataset *ds = NULL;
    snprintf(src, sizeof src, "%s:X", path);
    nle_test_ok(nle_dataset_read(ctx, src, NULL, &ds));
    nle_test(equals_dense(ds, dense4x3, 4, 3));
    nle_dataset_free(&ds);
    snprintf(src, sizeof src, "%s:S", path);
    nle_test_ok(nle_dataset_read(ctx, src, &keep, &ds));
    nle_test(sparse_equals(ds, dense4x3, 4, 3));
    nle_dataset_free(&ds);
    nle_test(nle_dataset_read(ctx, path, NULL, &ds) == NLE_ERR_ARG && has(ctx, "3 candidate variables: name one as") &&
             has(ctx, "X") && has(ctx, "S") && !strstr(nle_ctx_error(ctx), "note"));
    snprintf(src, sizeof src, "%s:note", path);
    nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_UNSUPPORTED && has(ctx, "a char array, not a numeric matrix"));
    snprintf(src, sizeof src, "%s:Z", path);
    nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_ARG && has(ctx, "no variable 'Z' in it (it holds: ") &&
             has(ctx, "note"));
    /* labels from a row vector */
    int32_t *labels = NULL, classes = 0;
    int64_t n = 0;
    snprintf(src, sizeof src, "%s:y", path);
    char **names = NULL;
    nle_test_ok(nle_labels_read(ctx, src, NULL, 4, &labels, &n, &classes, &names));
    /* y = {3, 1, 0, 1}: the classes 0, 1, 3 (nle_labels_encode), the values kept as names */
    nle_test(labels && n == 4 && classes == 3 && labels[0] == 2 && labels[1] == 1 && labels[2] == 0 && names &&
             !strcmp(names[2], "3"));
    free(labels);
    nle_class_names_free(&names, classes);
    /* the same through a memory file */
    uint8_t *buf;
    size_t len;
    nle_test_ok(nle__read_file(ctx, path, &buf, &len));
    nle_test_ok(nle__parse_mat(ctx, "mem.mat", buf, len, "X", NULL, 0, &ds));
    nle_test(equals_dense(ds, dense4x3, 4, 3));
    nle_dataset_free(&ds);
    for (size_t cut = 0; cut < len; cut += len / 61 + 1) {
      nle_status s = nle__parse_mat(ctx, "cut.mat", buf, cut, "X", NULL, 0, &ds);
      nle_test(s != NLE_OK || equals_dense(ds, dense4x3, 4, 3));
      nle_dataset_free(&ds);
    }
    free(buf);
  }
  /* the only variable is the default; v7.3 through the HDF5 reader (as
   * when libmatio has no HDF5) reads the same */
  const char *one = write_mat("one.mat", MAT_FT_MAT5, MAT_COMPRESSION_ZLIB, 1);
  nle_dataset *ds = NULL;
  nle_test_ok(nle_dataset_read(ctx, one, NULL, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  const char *v73 = test_path("v73.mat");
  nle_test_ok(nle__read_hdf5(ctx, v73, "X", NULL, NLE__READ_MATLAB, &ds));
  nle_test(equals_dense(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  nle_test_ok(nle__read_hdf5(ctx, v73, "S", &keep, NLE__READ_MATLAB, &ds));
  nle_test(sparse_equals(ds, dense4x3, 4, 3));
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

/* ---- sparse data and the memory cap; formats refused ---------------------- */

static void sparse_memory_cap(void) {
  nle_ctx *ctx = test_ctx(1);
  /* 100,000 x 100,000 with 3 entries: 40 GB dense */
  const char *big = "%%MatrixMarket matrix coordinate integer general\n100000 100000 3\n1 1 1\n5 7 2\n100000 3 4\n";
  const char *p = test_write_file("big.mtx", big, strlen(big));
  nle_dataset *ds = NULL;
  nle_ctx_set_max_memory(ctx, (size_t)1 << 30);
  nle_test(nle_dataset_read(ctx, p, NULL, &ds) == NLE_ERR_MEMCAP && has(ctx, "big.mtx: the sparse 100000 x 100000 matrix made dense needs") &&
           has(ctx, "embedding commands"));
  nle_read_opts keep;
  nle_read_opts_init(&keep);
  keep.sparse_ok = true;
  nle_test_ok(nle_dataset_read(ctx, p, &keep, &ds));
  nle_test(ds && ds->sparse && ds->sparse->nnz == 3 && ds->sparse->rowptr[1] == 1 && ds->sparse->colind[2] == 2 &&
           ((float *)ds->sparse->val)[2] == 4.0f && !ds->X);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

static void formats_refused(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_dataset *ds = NULL;
  const struct {
    const char *file, *content, *message;
  } cases[] = {{"t.parquet", "PAR1xxxx", "a Parquet file"},
               {"p.bin", "\x80\x04\x95xxxx", "a Python pickle"},
               {"r.rds", "whatever", "R data"},
               {"x.h5", "1,2\n3,4\n", "x.h5: not an HDF5 file (no HDF5 signature): damaged or misnamed?"},
               {"x.mat", "1,2\n3,4\n", "MATLAB v4 files are not read"},
               {"x.npz", "1,2\n3,4\n", "x.npz: not a .npz file (not a zip archive)"},
               {"z.bz2", "BZh91AY&SY", "bzip2-compressed data"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *p = test_write_file(cases[i].file, cases[i].content, strlen(cases[i].content));
    nle_status s = nle_dataset_read(ctx, p, NULL, &ds);
    nle_test(s != NLE_OK && !ds && has(ctx, cases[i].message));
  }
  /* a name inside a file that holds no names */
  const char *csv = test_write_file("plain.csv", "1,2\n3,4\n", 8);
  char src[600];
  snprintf(src, sizeof src, "%s:X", csv);
  nle_test(nle_dataset_read(ctx, src, NULL, &ds) == NLE_ERR_ARG && has(ctx, "not an HDF5, .mat or .npz file"));
  /* transposing a plain file */
  nle_read_opts t;
  nle_read_opts_init(&t);
  t.transpose = true;
  nle_test_ok(nle_dataset_read(ctx, csv, &t, &ds));
  nle_test(ds && ds->X->rows == 2 && ds->X->data[1] == 3.0f);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
}

#ifdef NLE_ALLOC_FAULTS
/* Each reader with its n-th allocation failing, n = 1, 2, ...: an error
 * or the clean result, never a crash or a leak. */
static void formats_alloc_faults(void) {
  bytes z = sparse_npz("csr", 1, 1);
  const char *mtx = "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 1\n2 1 2\n3 2 3\n";
  const char *h5 = write_h5ad("faults.h5ad", 1);
  char cat[600];
  snprintf(cat, sizeof cat, "%s:obs/cell_type", h5);
  for (int which = 0; which < 4; which++) {
    int completed = 0, crashed_or_wrong = 0;
    for (long n = 1; n < 4000 && !completed; n++) {
      nle_ctx *ctx = test_ctx(1);
      nle_dataset *ds = NULL;
      int32_t *labels = NULL, classes = 0;
      int64_t count = 0;
      char **names = NULL;
      nle__alloc_fail_at(n);
      nle_status s = which == 0   ? nle__parse_npz(ctx, "f.npz", z.p, z.len, NULL, NULL, 0, &ds)
                     : which == 1 ? nle__parse_mtx(ctx, "f.mtx", (const uint8_t *)mtx, strlen(mtx), 0, NULL, &ds)
                     : which == 2 ? nle_dataset_read(ctx, h5, NULL, &ds)
                                  : nle_labels_read(ctx, cat, NULL, 4, &labels, &count, &classes, &names);
      long seen = nle__alloc_count();
      nle__alloc_fail_at(0);
      if (s == NLE_OK && seen < n) completed = 1;
      if (s != NLE_OK && s != NLE_ERR_NOMEM && seen >= n && which != 2 && which != 3) crashed_or_wrong++;
      if (s != NLE_OK && ds) crashed_or_wrong++;
      nle_dataset_free(&ds);
      free(labels);
      nle_class_names_free(&names, classes);
      nle_ctx_free(&ctx);
    }
    nle_test(completed);
    nle_test(crashed_or_wrong == 0);
  }
  free(z.p);
}
#endif

const nle_test_case formats_tests[] = {{"formats/npz_savez", npz_savez},
                                       {"formats/npz_damaged", npz_damaged},
                                       {"formats/npz_sparse", npz_sparse},
                                       {"formats/mtx_data", mtx_data},
                                       {"formats/hdf5_anndata", hdf5_anndata},
                                       {"formats/hdf5_plain", hdf5_plain},
                                       {"formats/mat_files", mat_files},
                                       {"formats/sparse_memory_cap", sparse_memory_cap},
                                       {"formats/refused", formats_refused},
#ifdef NLE_ALLOC_FAULTS
                                       {"formats/alloc_faults", formats_alloc_faults},
#endif
                                       {NULL, NULL}};
