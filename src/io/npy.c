/* npy.c — NumPy .npy files (format versions 1-3): reading float32/64, (u)int
 * 8-64 and bool in C or Fortran order, either byte order; writing float64,
 * float32 and int32 in C order. */
#include "binary.h"
#include "io_internal.h"
#include "../core/comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Finds 'key' in the header dict and returns a pointer just past its ':'. */
static const char *dict_value(const char *hdr, size_t len, const char *key) {
  size_t klen = strlen(key);
  for (size_t i = 0; i + klen + 2 <= len; i++) {
    if ((hdr[i] == '\'' || hdr[i] == '"') && memcmp(hdr + i + 1, key, klen) == 0 &&
        hdr[i + 1 + klen] == hdr[i]) {
      const char *p = hdr + i + klen + 2;
      while (p < hdr + len && (*p == ' ' || *p == ':')) p++;
      return p;
    }
  }
  return NULL;
}

static int parse_descr(const char *p, const char *end, elem_kind *kind, int *size, int *big) {
  if (p >= end || (*p != '\'' && *p != '"')) return 0;
  char q = *p++;
  char d[16];
  size_t n = 0;
  while (p < end && *p != q && n + 1 < sizeof d) d[n++] = *p++;
  d[n] = '\0';
  if (n < 3) return 0;
  *big = d[0] == '>' || (d[0] == '!');
  if (d[0] != '<' && d[0] != '>' && d[0] != '|' && d[0] != '=' && d[0] != '!') return 0;
  char t = d[1];
  int sz = atoi(d + 2);
  *size = sz;
  if (t == 'f' && sz == 4) *kind = ELEM_F32;
  else if (t == 'f' && sz == 8) *kind = ELEM_F64;
  else if (t == 'u' && sz == 1) *kind = ELEM_U8;
  else if (t == 'i' && sz == 1) *kind = ELEM_I8;
  else if (t == 'u' && sz == 2) *kind = ELEM_U16;
  else if (t == 'i' && sz == 2) *kind = ELEM_I16;
  else if (t == 'u' && sz == 4) *kind = ELEM_U32;
  else if (t == 'i' && sz == 4) *kind = ELEM_I32;
  else if (t == 'u' && sz == 8) *kind = ELEM_U64;
  else if (t == 'i' && sz == 8) *kind = ELEM_I64;
  else if (t == 'b' && sz == 1) *kind = ELEM_BOOL;
  else return 0;
  return 1;
}

typedef nle__npy_header npy_header;

int nle__npy_magic(const uint8_t *head, size_t len) { return len >= 6 && !memcmp(head, "\x93NUMPY", 6); }

/* Parses the header from buf (len bytes of the file's start) and checks the
 * shape against the file's full length. */
static nle_status parse_header(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, size_t file_len,
                               npy_header *h) {
  if (len < 10 || !nle__npy_magic(buf, len))
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte 0: not a .npy file (bad magic)", name);
  int major = buf[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)buf[8] | ((size_t)buf[9] << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: truncated .npy header", name, len);
    hlen = (size_t)load_uint(buf + 8, 4, 0);
    hstart = 12;
  } else {
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: byte 6: .npy format version %d is not supported",
                     name, major);
  }
  if (hlen > len - hstart)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: truncated .npy header (%zu bytes announced)",
                     name, len, hlen);
  const char *hdr = (const char *)buf + hstart, *hend = hdr + hlen;
  const char *v = dict_value(hdr, hlen, "descr");
  if (!v || !parse_descr(v, hend, &h->kind, &h->size, &h->big))
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED,
                     "%s: byte %zu: unsupported or missing dtype in the .npy header", name, hstart);
  v = dict_value(hdr, hlen, "fortran_order");
  if (!v || v + 4 > hend)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: .npy header lacks fortran_order", name, hstart);
  h->fortran = memcmp(v, "True", 4) == 0;
  v = dict_value(hdr, hlen, "shape");
  if (!v || v >= hend || *v != '(')
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: .npy header lacks a shape", name, hstart);
  uint64_t dims[8];
  int ndim = 0;
  const char *p = v + 1;
  while (p < hend && *p != ')') {
    while (p < hend && (*p == ' ' || *p == ',')) p++;
    if (p < hend && *p == ')') break;
    if (p >= hend || *p < '0' || *p > '9' || ndim == 8)
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: bad shape in the .npy header", name,
                       hstart + (size_t)(p - hdr));
    uint64_t d = 0;
    while (p < hend && *p >= '0' && *p <= '9') {
      if (d > (UINT64_MAX - 9) / 10)
        return nle__fail(ctx, NLE_ERR_FORMAT, "%s: shape too large in the .npy header", name);
      d = d * 10 + (uint64_t)(*p++ - '0');
    }
    dims[ndim++] = d;
  }
  if (ndim == 0)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: .npy array is a scalar, expected N x D", name);
  /* (N,) is N x 1; (N, a, b, ...) is N x (a*b*...), e.g. images flattened. */
  uint64_t rows = dims[0], cols = 1;
  for (int i = 1; i < ndim; i++) {
    if (dims[i] && cols > UINT64_MAX / dims[i])
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: shape too large in the .npy header", name);
    cols *= dims[i];
  }
  if (rows == 0 || cols == 0)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: empty .npy array (%llu x %llu)", name,
                     (unsigned long long)rows, (unsigned long long)cols);
  size_t data = hstart + hlen;
  if (cols > (file_len - data) || rows > (file_len - data) / cols / (uint64_t)h->size)
    return nle__fail(ctx, NLE_ERR_FORMAT,
                     "%s: byte %zu: truncated .npy data (%llu x %llu of %d bytes need %.0f bytes, %zu present)",
                     name, file_len, (unsigned long long)rows, (unsigned long long)cols, h->size,
                     (double)rows * (double)cols * h->size, file_len - data);
  h->rows = rows;
  h->cols = cols;
  h->data = data;
  return NLE_OK;
}

nle_status nle__npy_header_parse(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                                 nle__npy_header *h) {
  return parse_header(ctx, name, buf, len, len, h);
}

/* Rows [r0, r0 + count) of a C-order array from src (their bytes) into
 * dst (count rows), each value checked; r0 is the row's number in the
 * file, which the messages give. */
static nle_status convert_rows(nle_ctx *ctx, const char *name, const npy_header *h, const uint8_t *src, size_t r0,
                               size_t count, float *dst) {
  size_t cols = (size_t)h->cols;
  for (size_t i = 0; i < count; i++) {
    float *row = dst + i * cols;
    for (size_t j = 0; j < cols; j++) {
      double x = load_elem(src + (i * cols + j) * (size_t)h->size, h->kind, h->size, h->big);
      if (!isfinite(x) || !isfinite((float)x))
        return nle__fail(ctx, NLE_ERR_VALUE, "%s: byte %zu (row %zu, column %zu): %s value", name,
                         h->data + ((r0 + i) * cols + j) * (size_t)h->size, r0 + i, j,
                         isnan(x) ? "NaN" : "infinite (or beyond float range)");
      row[j] = (float)x;
    }
  }
  return NLE_OK;
}

/* Gzip'ed: what is kept is the size its header declares. */
nle_status nle__npy_judge(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                          const void *opts, size_t *bytes, int *text) {
  (void)opts, (void)text;
  /* A version 2 or 3 header may announce up to 4 GiB: one that does not fit
   * in what was read is refused rather than inflated blind. */
  size_t announced = len >= 12 && head[6] != 1 ? (size_t)load_uint(head + 8, 4, 0) : 0;
  if (!whole && announced > len - 12)
    return nle__fail(ctx, NLE_ERR_FORMAT,
                     "%s: byte 8: a .npy header of %zu bytes announced, longer than the %zu bytes read before it",
                     name, announced, len - 12);
  npy_header h;
  nle_status s = parse_header(ctx, name, head, len, whole ? len : SIZE_MAX, &h);
  if (!s) *bytes = h.data + (size_t)(h.rows * h.cols) * (size_t)h.size;
  return s;
}

nle_status nle_parse_npy(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                         nle_dataset **out) {
  *out = NULL;
  npy_header h;
  nle_status s = parse_header(ctx, name, buf, len, len, &h);
  if (s) return s;
  size_t rows = (size_t)h.rows, cols = (size_t)h.cols;
  nle_dataset *ds;
  s = nle__dataset_new(ctx, name, rows, cols, &ds);
  if (s) return s;
  const uint8_t *src = buf + h.data;
  if (!h.fortran) {
    s = convert_rows(ctx, name, &h, src, 0, rows, ds->X->data);
  } else {
    for (size_t i = 0; !s && i < rows; i++) {
      float *row = ds->X->data + i * cols;
      for (size_t j = 0; j < cols; j++) {
        size_t e = j * rows + i;
        double x = load_elem(src + e * (size_t)h.size, h.kind, h.size, h.big);
        if (!isfinite(x) || !isfinite((float)x)) {
          s = nle__fail(ctx, NLE_ERR_VALUE, "%s: byte %zu (row %zu, column %zu): %s value", name,
                        h.data + e * (size_t)h.size, i, j, isnan(x) ? "NaN" : "infinite (or beyond float range)");
          break;
        }
        row[j] = (float)x;
      }
    }
  }
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

enum { NPY_HEAD_BYTES = 65536, NPY_CHUNK_BYTES = 16 << 20 };

nle_status nle__read_npy_file(nle_ctx *ctx, const char *path, nle_dataset **out, int *handled) {
  *out = NULL;
  *handled = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NLE_OK; /* the whole-file reader names the problem */
  struct stat st;
  uint8_t head[NPY_HEAD_BYTES];
  size_t got = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? fread(head, 1, sizeof head, f) : 0;
  npy_header h;
  /* Only C-order arrays whose header this parses; the rest (Fortran order,
   * damaged headers) go through the whole-file reader and its messages. */
  if (got < 10 || !nle__npy_magic(head, got) || parse_header(NULL, path, head, got, (size_t)st.st_size, &h) ||
      h.fortran) {
    fclose(f);
    return NLE_OK;
  }
  *handled = 1;
  nle_dataset *ds = NULL;
  size_t rows = (size_t)h.rows, row_bytes = (size_t)h.cols * (size_t)h.size;
  size_t per_chunk = NPY_CHUNK_BYTES / row_bytes ? NPY_CHUNK_BYTES / row_bytes : 1;
  uint8_t *chunk = NULL;
  nle_status s = nle__dataset_new(ctx, path, rows, (size_t)h.cols, &ds);
  if (!s) chunk = nle__malloc(ctx, per_chunk * row_bytes, "a .npy chunk");
  if (!s && !chunk) s = NLE_ERR_NOMEM;
  if (!s && fseek(f, (long)h.data, SEEK_SET) != 0) s = nle__fail(ctx, NLE_ERR_IO, "%s: cannot seek to its data", path);
  for (size_t r0 = 0; !s && r0 < rows; r0 += per_chunk) {
    size_t count = rows - r0 < per_chunk ? rows - r0 : per_chunk;
    size_t want = count * row_bytes, read = fread(chunk, 1, want, f);
    if (read != want)
      s = nle__fail(ctx, NLE_ERR_IO, "%s: read error at byte %zu", path, h.data + r0 * row_bytes + read);
    if (!s) s = convert_rows(ctx, path, &h, chunk, r0, count, ds->X->data + r0 * (size_t)h.cols);
  }
  free(chunk);
  fclose(f);
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

/* n bytes at offset off of fd, all of them (pread may return fewer). */
static bool pread_all(int fd, void *buf, size_t n, size_t off) {
  for (size_t got = 0; got < n;) {
    ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += (size_t)r;
  }
  return true;
}

/* Rows [b, b + count) of a Fortran-order array into X (count rows): each
 * column's run read at once, then the values checked in row order so that
 * the first bad one named is the one a whole read names. */
static nle_status read_fortran_share(nle_ctx *ctx, const char *path, int fd, const npy_header *h, size_t b,
                                     size_t count, nle_matf *X) {
  size_t cols = (size_t)h->cols, size = (size_t)h->size;
  uint8_t *run = nle__malloc(ctx, (count ? count : 1) * size, "a .npy column's rows");
  if (!run) return NLE_ERR_NOMEM;
  nle_status s = NLE_OK;
  for (size_t j = 0; !s && j < cols; j++) {
    size_t at = h->data + (j * (size_t)h->rows + b) * size;
    if (!pread_all(fd, run, count * size, at)) s = nle__fail(ctx, NLE_ERR_IO, "%s: read error at byte %zu", path, at);
    for (size_t i = 0; !s && i < count; i++) X->data[i * cols + j] = (float)load_elem(run + i * size, h->kind, h->size, h->big);
  }
  free(run);
  for (size_t i = 0; !s && i < count; i++)
    for (size_t j = 0; !s && j < cols; j++)
      if (!isfinite(X->data[i * cols + j]))
        s = nle__fail(ctx, NLE_ERR_VALUE, "%s: byte %zu (row %zu, column %zu): %s value", path,
                      h->data + (j * (size_t)h->rows + b + i) * size, b + i, j,
                      isnan(X->data[i * cols + j]) ? "NaN" : "infinite (or beyond float range)");
  return s;
}

nle_status nle__npy_read_share(nle_ctx *ctx, const char *path, int ranks, int rank, nle_dataset **out, int *handled) {
  *out = NULL;
  *handled = 0;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return NLE_OK; /* the whole-file reader names the problem */
  struct stat st;
  uint8_t head[NPY_HEAD_BYTES];
  ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, head, sizeof head, 0) : 0;
  npy_header h;
  if (got < 10 || !nle__npy_magic(head, (size_t)got) || parse_header(NULL, path, head, (size_t)got, (size_t)st.st_size, &h)) {
    close(fd);
    return NLE_OK;
  }
  *handled = 1;
  nle__row_range share = nle__rank_rows((size_t)h.rows, ranks, rank);
  size_t count = share.end - share.begin, row_bytes = (size_t)h.cols * (size_t)h.size;
  nle_dataset *ds = NULL;
  nle_status s = nle__dataset_new(ctx, path, count, (size_t)h.cols, &ds);
  if (!s && h.fortran) s = read_fortran_share(ctx, path, fd, &h, share.begin, count, ds->X);
  size_t per_chunk = NPY_CHUNK_BYTES / row_bytes ? NPY_CHUNK_BYTES / row_bytes : 1;
  uint8_t *chunk = !s && !h.fortran ? nle__malloc(ctx, per_chunk * row_bytes, "a .npy chunk") : NULL;
  if (!s && !h.fortran && !chunk) s = NLE_ERR_NOMEM;
  for (size_t r0 = 0; !s && !h.fortran && r0 < count; r0 += per_chunk) {
    size_t n = count - r0 < per_chunk ? count - r0 : per_chunk, at = h.data + (share.begin + r0) * row_bytes;
    if (!pread_all(fd, chunk, n * row_bytes, at)) s = nle__fail(ctx, NLE_ERR_IO, "%s: read error at byte %zu", path, at);
    if (!s) s = convert_rows(ctx, path, &h, chunk, share.begin + r0, n, ds->X->data + r0 * (size_t)h.cols);
  }
  free(chunk);
  close(fd);
  if (s) nle_dataset_free(&ds);
  *out = ds;
  return s;
}

nle_status nle__npy_read(nle_ctx *ctx, const char *path, const char *inner, const nle_read_opts *opts, int flags,
                        nle_dataset **out) {
  (void)inner, (void)flags;
  int handled;
  nle_status s = nle__read_npy_file(ctx, path, out, &handled);
  return handled ? nle__transpose_if_asked(ctx, path, opts, s, out) : s;
}

nle_status nle__npy_parse(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                          const nle_read_opts *opts, int flags, nle_dataset **out) {
  (void)inner, (void)flags;
  return nle__transpose_if_asked(ctx, name, opts, nle_parse_npy(ctx, name, buf, len, out), out);
}

size_t nle__npy_header_text(const char *descr, int64_t rows, int64_t cols, int one_dim, char *buf) {
  char dict[160];
  int n = one_dim ? snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld,), }",
                             descr, (long long)rows)
                  : snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %lld), }",
                             descr, (long long)rows, (long long)cols);
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t hlen = (size_t)n + pad + 1;
  uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(hlen & 0xff), (uint8_t)(hlen >> 8)};
  memcpy(buf, pre, 10);
  memcpy(buf + 10, dict, (size_t)n);
  memset(buf + 10 + n, ' ', pad);
  buf[10 + (size_t)n + pad] = '\n';
  return 10 + hlen;
}

/* Writes a C-order little-endian .npy with a header padded to 64 bytes;
 * under a communicator every rank's rows into the one file. */
static nle_status write_npy(nle_ctx *ctx, const char *path, const char *descr, const void *data,
                            size_t elem, int64_t rows, int64_t cols, int one_dim) {
  if (nle__distributed(ctx)) return nle__write_npy_rows(ctx, path, descr, data, elem, rows, cols, one_dim);
  nle__afile af;
  nle_status s = nle__afile_open(ctx, path, &af);
  if (s) return s;
  char header[256];
  fwrite(header, 1, nle__npy_header_text(descr, rows, cols, one_dim, header), af.f);
  fwrite(data, elem, (size_t)rows * (size_t)cols, af.f);
  return nle__afile_commit(ctx, &af);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy writer assumes a little-endian host"
#endif

nle_status nle__write_npy_f64(nle_ctx *ctx, const char *path, const double *a, int64_t r, int64_t c) {
  return write_npy(ctx, path, "<f8", a, 8, r, c, 0);
}
nle_status nle__write_npy_f32(nle_ctx *ctx, const char *path, const float *a, int64_t r, int64_t c) {
  return write_npy(ctx, path, "<f4", a, 4, r, c, 0);
}
nle_status nle__write_npy_i32(nle_ctx *ctx, const char *path, const int32_t *a, int64_t r, int64_t c,
                              int one_dim) {
  return write_npy(ctx, path, "<i4", a, 4, r, c, one_dim);
}
