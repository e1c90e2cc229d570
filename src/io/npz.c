/* npz.c — NumPy .npz archives: a zip file (members stored or deflated, read
 * from its central directory, zip64 included) of .npy arrays. np.savez's
 * arrays are named by key (FILE.npz:key; by default the only one);
 * scipy.sparse.save_npz's matrices (members format, shape, data, and
 * indices and indptr (csr, csc) or row and col (coo)) become sparse data.
 * Every offset and size is checked against the file, each member's CRC-32
 * against its bytes. */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { LOCAL_SIG = 0x04034b50, CENTRAL_SIG = 0x02014b50, END_SIG = 0x06054b50, END64_SIG = 0x06064b50,
       LOCATOR64_SIG = 0x07064b50 };

typedef struct {
  char name[256];
  size_t name_len;
  int method, flags;
  uint32_t crc;
  uint64_t csize, usize, offset;
} member;

typedef struct {
  nle_ctx *ctx;
  const char *name;
  const uint8_t *buf;
  size_t len;
  member *m;
  size_t count;
} archive;

static uint64_t le(const uint8_t *p, int n) { return load_uint(p, n, 0); }

static nle_status corrupt(archive *a, size_t at, const char *what) {
  return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: byte %zu: %s (corrupt or truncated zip archive)", a->name, at, what);
}

/* The end of the central directory: its record is in the last 64 KiB + 22
 * bytes (after it only a comment). */
static nle_status find_directory(archive *a, uint64_t *entries, uint64_t *offset, uint64_t *size) {
  if (a->len < 22) return corrupt(a, a->len, "too short for a zip archive");
  size_t lowest = a->len > 65535 + 22 ? a->len - 65535 - 22 : 0, at = a->len - 22;
  for (;; at--) {
    if (le(a->buf + at, 4) == END_SIG && at + 22 + le(a->buf + at + 20, 2) == a->len) break;
    if (at == lowest) return corrupt(a, a->len, "no end-of-directory record");
  }
  const uint8_t *e = a->buf + at;
  if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0)
    return nle__fail(a->ctx, NLE_ERR_UNSUPPORTED, "%s: a zip archive split over several files", a->name);
  *entries = le(e + 10, 2);
  *size = le(e + 12, 4);
  *offset = le(e + 16, 4);
  if (*entries == 0xffff || *size == 0xffffffff || *offset == 0xffffffff) {
    /* zip64: a locator just before points to the 64-bit record */
    if (at < 20 || le(e - 20, 4) != LOCATOR64_SIG) return corrupt(a, at, "zip64 fields without a zip64 locator");
    uint64_t rec = le(e - 20 + 8, 8);
    if (rec > a->len || a->len - rec < 56 || le(a->buf + rec, 4) != END64_SIG)
      return corrupt(a, at - 20, "the zip64 locator points outside the file");
    const uint8_t *r = a->buf + rec;
    *entries = le(r + 32, 8);
    *size = le(r + 40, 8);
    *offset = le(r + 48, 8);
  }
  if (*offset > a->len || *size > a->len - *offset) return corrupt(a, at, "the directory lies outside the file");
  if (*entries > *size / 46) return corrupt(a, at, "more directory entries than the directory holds");
  return NLE_OK;
}

static nle_status read_directory(archive *a) {
  uint64_t entries = 0, offset = 0, size = 0;
  nle_status s = find_directory(a, &entries, &offset, &size);
  if (s) return s;
  if (nle__check_memory(a->ctx, (double)entries * sizeof *a->m, "the zip directory"))
    return nle__fail_prefix(a->ctx, a->name);
  a->m = nle__calloc(a->ctx, entries ? (size_t)entries : 1, sizeof *a->m, "the zip directory");
  if (!a->m) return NLE_ERR_NOMEM;
  size_t at = (size_t)offset, end = (size_t)(offset + size);
  for (uint64_t i = 0; i < entries; i++) {
    if (end - at < 46 || le(a->buf + at, 4) != CENTRAL_SIG) return corrupt(a, at, "a damaged directory entry");
    const uint8_t *c = a->buf + at;
    member *m = &a->m[a->count];
    m->flags = (int)le(c + 8, 2);
    m->method = (int)le(c + 10, 2);
    m->crc = (uint32_t)le(c + 16, 4);
    m->csize = le(c + 20, 4);
    m->usize = le(c + 24, 4);
    size_t n = (size_t)le(c + 28, 2), x = (size_t)le(c + 30, 2), k = (size_t)le(c + 32, 2);
    m->offset = le(c + 42, 4);
    if (end - at - 46 < n + x + k) return corrupt(a, at, "a directory entry runs past the directory");
    if (n >= sizeof m->name) return corrupt(a, at, "a member name longer than 255 bytes");
    memcpy(m->name, c + 46, n);
    m->name[n] = '\0';
    m->name_len = n;
    if (memchr(m->name, '\0', n)) return corrupt(a, at, "a member name holding a NUL byte");
    /* zip64 extra field: the 64-bit values of the fields saturated above, in order */
    const uint8_t *ex = c + 46 + n, *ex_end = ex + x;
    while (ex_end - ex >= 4) {
      size_t id = (size_t)le(ex, 2), sz = (size_t)le(ex + 2, 2);
      if ((size_t)(ex_end - ex - 4) < sz) return corrupt(a, at, "a damaged extra field");
      if (id == 1) {
        const uint8_t *p = ex + 4, *q = ex + 4 + sz;
        uint64_t *fields[3] = {&m->usize, &m->csize, &m->offset};
        for (int f = 0; f < 3; f++) {
          if (*fields[f] != 0xffffffff) continue;
          if (q - p < 8) return corrupt(a, at, "a short zip64 extra field");
          *fields[f] = le(p, 8);
          p += 8;
        }
      }
      ex += 4 + sz;
    }
    at += 46 + n + x + k;
    a->count++;
  }
  return NLE_OK;
}

static member *find(archive *a, const char *key) {
  for (size_t i = 0; i < a->count; i++) {
    const member *m = &a->m[i];
    size_t kl = strlen(key);
    if (m->name_len == kl + 4 && !memcmp(m->name, key, kl) && !strcmp(m->name + kl, ".npy")) return &a->m[i];
  }
  return NULL;
}

/* A member's bytes: inside the buffer when stored, else inflated into *owned. */
static nle_status member_bytes(archive *a, const member *m, const uint8_t **data, uint8_t **owned) {
  *data = NULL;
  *owned = NULL;
  if (m->flags & 1) return nle__fail(a->ctx, NLE_ERR_UNSUPPORTED, "%s: member '%s' is encrypted", a->name, m->name);
  if (m->method != 0 && m->method != 8)
    return nle__fail(a->ctx, NLE_ERR_UNSUPPORTED, "%s: member '%s' uses compression method %d (stored and deflated are read)",
                     a->name, m->name, m->method);
  if (m->offset > a->len || a->len - m->offset < 30 || le(a->buf + m->offset, 4) != LOCAL_SIG)
    return corrupt(a, (size_t)(m->offset < a->len ? m->offset : a->len), "a member's local header is missing");
  const uint8_t *h = a->buf + m->offset;
  uint64_t start = m->offset + 30 + le(h + 26, 2) + le(h + 28, 2);
  if (start > a->len || m->csize > a->len - start)
    return corrupt(a, (size_t)m->offset, "a member's data run past the end of the file");
  const uint8_t *src = a->buf + start;
  if (m->method == 0) {
    if (m->csize != m->usize) return corrupt(a, (size_t)m->offset, "a stored member whose sizes differ");
    *data = src;
  } else {
    if (nle__check_memory(a->ctx, (double)m->usize, "an inflated .npz member")) return nle__fail_prefix(a->ctx, a->name);
    uint8_t *dst = nle__malloc(a->ctx, m->usize ? (size_t)m->usize : 1, "an inflated .npz member");
    if (!dst) return NLE_ERR_NOMEM;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) {
      free(dst);
      return nle__fail(a->ctx, NLE_ERR_NOMEM, "%s: cannot start zlib", a->name);
    }
    /* in pieces below 4 GiB: zlib counts in unsigned ints */
    uint64_t in_left = m->csize, out_left = m->usize;
    int ret = Z_OK;
    z.next_in = (Bytef *)src;
    z.next_out = dst;
    while (ret == Z_OK) {
      uInt in_now = in_left > (1u << 30) ? 1u << 30 : (uInt)in_left, out_now = out_left > (1u << 30) ? 1u << 30 : (uInt)out_left;
      z.avail_in = in_now;
      z.avail_out = out_now;
      ret = inflate(&z, Z_NO_FLUSH);
      in_left -= in_now - z.avail_in;
      out_left -= out_now - z.avail_out;
      if (ret == Z_BUF_ERROR || (ret == Z_OK && in_now == z.avail_in && out_now == z.avail_out)) break;
    }
    inflateEnd(&z);
    if (ret != Z_STREAM_END || out_left != 0) {
      free(dst);
      return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: member '%s': %s", a->name, m->name,
                       ret == Z_STREAM_END ? "shorter than its declared size"
                       : ret == Z_DATA_ERROR ? "corrupt compressed data"
                       : out_left == 0 ? "longer than its declared size"
                                       : "truncated compressed data");
    }
    *data = *owned = dst;
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32_z(crc, *data, (z_size_t)m->usize);
  if ((uint32_t)crc != m->crc) {
    free(*owned);
    *owned = NULL;
    *data = NULL;
    return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: member '%s' is damaged (checksum mismatch)", a->name, m->name);
  }
  return NLE_OK;
}

/* ---- sparse matrices (scipy.sparse.save_npz) ---------------------------- */

typedef struct {
  const uint8_t *data;
  uint8_t *owned;
  size_t len;
  nle__npy_header h;
  char where[300];
} array;

static nle_status open_array(archive *a, const char *key, array *x) {
  memset(x, 0, sizeof *x);
  snprintf(x->where, sizeof x->where, "%s:%s", a->name, key);
  const member *m = find(a, key);
  if (!m) return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: a sparse matrix without its '%s' array", a->name, key);
  nle_status s = member_bytes(a, m, &x->data, &x->owned);
  x->len = (size_t)m->usize;
  if (!s) s = nle__npy_header_parse(a->ctx, x->where, x->data, x->len, &x->h);
  return s;
}

static void close_array(array *x) {
  free(x->owned);
  x->owned = NULL;
}

static double value(const array *x, size_t k) {
  return load_elem(x->data + x->h.data + k * (size_t)x->h.size, x->h.kind, x->h.size, x->h.big);
}

static int integer_kind(elem_kind k) { return k != ELEM_F32 && k != ELEM_F64; }

/* A one-dimensional array of n values (n < 0: any), integers if asked. */
static nle_status check_vector(archive *a, const array *x, int64_t n, int integers) {
  if (x->h.cols != 1)
    return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: %llu x %llu, expected one dimension", x->where,
                     (unsigned long long)x->h.rows, (unsigned long long)x->h.cols);
  if (n >= 0 && x->h.rows != (uint64_t)n)
    return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: %llu values, expected %lld", x->where,
                     (unsigned long long)x->h.rows, (long long)n);
  if (integers && !integer_kind(x->h.kind))
    return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: floating-point values, expected integers", x->where);
  return NLE_OK;
}

/* The 'format' member: a 0-d bytes ('S') or unicode ('U') array. */
static nle_status sparse_format(archive *a, char *fmt, size_t cap) {
  const member *m = find(a, "format");
  const uint8_t *d;
  uint8_t *owned;
  nle_status s = member_bytes(a, m, &d, &owned);
  if (s) return s;
  size_t len = (size_t)m->usize, hlen = 0, hstart = 0;
  if (len >= 10 && nle__npy_magic(d, len)) {
    hstart = d[6] == 1 ? 10 : 12;
    hlen = len >= 12 ? (size_t)(d[6] == 1 ? le(d + 8, 2) : le(d + 8, 4)) : 0;
  }
  const char *hdr = (const char *)d + hstart;
  const char *descr = hstart && hlen <= len - hstart ? memmem(hdr, hlen, "'descr'", 7) : NULL;
  const char *q = descr ? memchr(descr + 7, '\'', hlen - (size_t)(descr + 7 - hdr)) : NULL;
  size_t n = 0;
  if (q && q + 3 < hdr + hlen && (q[2] == 'S' || q[2] == 'U')) {
    int wide = q[2] == 'U', big = q[1] == '>';
    const uint8_t *p = d + hstart + hlen, *end = d + len;
    /* ASCII letters: one byte each, or four (UTF-32) */
    for (; p + (wide ? 4 : 1) <= end && n + 1 < cap; p += wide ? 4 : 1) {
      uint32_t c = wide ? (uint32_t)load_uint(p, 4, big) : *p;
      if (!c) break;
      fmt[n++] = c < 128 ? (char)c : '?';
    }
  }
  fmt[n] = '\0';
  free(owned);
  if (!n) return nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: the sparse matrix's 'format' is not a string", a->name);
  return NLE_OK;
}

static nle_status read_sparse(archive *a, const nle_read_opts *opts, nle_dataset **out) {
  char fmt[16];
  nle_status s = sparse_format(a, fmt, sizeof fmt);
  if (s) return s;
  int coo = !strcmp(fmt, "coo"), csc = !strcmp(fmt, "csc");
  if (!coo && !csc && strcmp(fmt, "csr"))
    return nle__fail(a->ctx, NLE_ERR_UNSUPPORTED, "%s: sparse format '%s' is not supported (csr, csc, coo)", a->name, fmt);
  array shp, data, ia, ib;
  memset(&ia, 0, sizeof ia);
  memset(&ib, 0, sizeof ib);
  memset(&data, 0, sizeof data);
  s = open_array(a, "shape", &shp);
  if (!s) s = check_vector(a, &shp, 2, 1);
  int64_t rows = s ? 0 : (int64_t)value(&shp, 0), cols = s ? 0 : (int64_t)value(&shp, 1);
  close_array(&shp);
  if (!s && (rows < 1 || cols < 1 || rows > INT32_MAX || cols > INT32_MAX))
    s = nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: a sparse matrix of shape %lld x %lld", a->name, (long long)rows,
                  (long long)cols);
  if (!s) s = open_array(a, "data", &data);
  if (!s) s = check_vector(a, &data, -1, 0);
  int64_t nnz = s ? 0 : (int64_t)data.h.rows;
  if (!s) s = nle__sparse_fits(a->ctx, a->name, opts->transpose ? cols : rows, opts->transpose ? rows : cols, nnz,
                               opts->sparse_ok);
  if (!s) s = open_array(a, coo ? "row" : "indices", &ia);
  if (!s) s = check_vector(a, &ia, nnz, 1);
  int64_t major = csc ? cols : rows, minor = csc ? rows : cols;
  if (!s) s = open_array(a, coo ? "col" : "indptr", &ib);
  if (!s) s = check_vector(a, &ib, coo ? nnz : major + 1, 1);
  float *val = NULL;
  if (!s && !(val = nle__malloc(a->ctx, (size_t)(nnz ? nnz : 1) * sizeof *val, "sparse values"))) s = NLE_ERR_NOMEM;
  for (int64_t k = 0; !s && k < nnz; k++) {
    double x = value(&data, (size_t)k);
    const char *bad = nle__float_problem(x);
    if (bad) s = nle__fail(a->ctx, NLE_ERR_VALUE, "%s: entry %lld: %s value", data.where, (long long)k, bad);
    else val[k] = (float)x;
  }
  nle_csr *M = NULL;
  if (!s && coo) {
    /* triplets: checked in range here, then sorted into rows */
    int32_t *ri = nle__malloc(a->ctx, (size_t)(nnz ? nnz : 1) * sizeof *ri, "sparse rows");
    int32_t *ci = nle__malloc(a->ctx, (size_t)(nnz ? nnz : 1) * sizeof *ci, "sparse columns");
    if (!ri || !ci) s = NLE_ERR_NOMEM;
    for (int64_t k = 0; !s && k < nnz; k++) {
      double r = value(&ia, (size_t)k), c = value(&ib, (size_t)k);
      if (r < 0 || r >= (double)rows || c < 0 || c >= (double)cols)
        s = nle__fail(a->ctx, NLE_ERR_FORMAT, "%s: entry %lld at (%.0f, %.0f) outside the %lld x %lld matrix", a->name,
                      (long long)k, r, c, (long long)rows, (long long)cols);
      else if (opts->transpose)
        ri[k] = (int32_t)c, ci[k] = (int32_t)r;
      else
        ri[k] = (int32_t)r, ci[k] = (int32_t)c;
    }
    int64_t dup[2];
    if (!s) s = nle__csr_from_triplets(a->ctx, opts->transpose ? cols : rows, opts->transpose ? rows : cols, nnz, ri,
                                       ci, val, &M, dup);
    if (s == NLE_ERR_VALUE && dup[0] >= 0)
      s = nle__fail(a->ctx, NLE_ERR_VALUE, "%s: entries %lld and %lld are at the same position (%.0f, %.0f)", a->name,
                    (long long)dup[0], (long long)dup[1], value(&ia, (size_t)dup[0]), value(&ib, (size_t)dup[0]));
    free(ri);
    free(ci);
    free(val);
    val = NULL;
    nle_dataset *ds = NULL;
    /* already in the requested orientation: no transpose left to do */
    if (!s) s = nle__dataset_from_sparse(a->ctx, a->name, M, 0, 0, opts->sparse_ok, &ds);
    *out = ds;
  } else if (!s) {
    s = nle_csr_alloc(a->ctx, major, minor, nnz, NLE_F32, &M);
    if (s == NLE_ERR_MEMCAP) nle__fail_prefix(a->ctx, a->name);
    for (int64_t p = 0; !s && p <= major; p++) {
      double v = value(&ib, (size_t)p);
      M->rowptr[p] = v < 0 || v > (double)nnz ? -1 : (int64_t)v; /* out of range: refused as corrupt */
    }
    for (int64_t k = 0; !s && k < nnz; k++) {
      double v = value(&ia, (size_t)k);
      M->colind[k] = v < 0 || v >= (double)minor ? -1 : (int32_t)v;
    }
    if (!s) {
      memcpy(M->val, val, (size_t)nnz * sizeof *val);
      s = nle__dataset_from_sparse(a->ctx, a->name, M, csc, opts->transpose, opts->sparse_ok, out);
    } else {
      nle_csr_free(&M);
    }
  }
  free(val);
  close_array(&data);
  close_array(&ia);
  close_array(&ib);
  return s;
}

/* ---- the archive -------------------------------------------------------- */

static nle_status read_array(archive *a, const char *key, const nle_read_opts *opts, nle_dataset **out) {
  const member *m = find(a, key);
  const uint8_t *d;
  uint8_t *owned;
  nle_status s = member_bytes(a, m, &d, &owned);
  if (s) return s;
  char where[300];
  snprintf(where, sizeof where, "%s:%s", a->name, key);
  nle_dataset *ds = NULL;
  s = nle_parse_npy(a->ctx, where, d, (size_t)m->usize, &ds);
  free(owned);
  if (!s && opts->transpose) s = nle__dataset_transpose(a->ctx, ds);
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

/* A zip archive's local header or, empty, its end record. */
int nle__npz_magic(const uint8_t *head, size_t len) {
  return len >= 4 && (!memcmp(head, "PK\x03\x04", 4) || !memcmp(head, "PK\x05\x06", 4));
}

nle_status nle__parse_npz(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                          const nle_read_opts *opts, int flags, nle_dataset **out) {
  *out = NULL;
  (void)flags;
  nle_read_opts defaults;
  opts = nle__read_opts_or_defaults(opts, &defaults);
  archive a = {ctx, name, buf, len, NULL, 0};
  nle_status s = read_directory(&a);
  nle__name_list keys = {0};
  char key[256] = "";
  for (size_t i = 0; !s && i < a.count; i++) {
    const member *m = &a.m[i];
    if (m->name_len < 4 || strcmp(m->name + m->name_len - 4, ".npy")) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: member '%s' is not a .npy array (not a NumPy .npz archive)", name,
                    m->name);
      break;
    }
    char k[256];
    snprintf(k, sizeof k, "%.*s", (int)m->name_len - 4, m->name);
    if (!keys.count) snprintf(key, sizeof key, "%s", k);
    nle__name_list_add(&keys, k);
  }
  if (!s && !a.count) s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: an empty archive (no arrays)", name);
  int sparse = !s && find(&a, "format") && find(&a, "shape") && find(&a, "data");
  if (s) {
  } else if (inner && *inner) {
    if (!find(&a, inner))
      s = nle__fail(ctx, NLE_ERR_ARG, "%s: no array '%s' in it (it holds: %s)", name, inner, nle__name_list_text(&keys));
    else
      s = read_array(&a, inner, opts, out);
  } else if (sparse) {
    s = read_sparse(&a, opts, out);
  } else if (keys.count > 1) {
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: %d arrays: name one as %s:KEY (%s)", name, keys.count, name,
                  nle__name_list_text(&keys));
  } else {
    s = read_array(&a, key, opts, out);
  }
  free(a.m);
  if (s) nle_dataset_free(out);
  return s;
}
