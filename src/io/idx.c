/* idx.c — IDX files, the format of MNIST and Fashion-MNIST: a big-endian
 * header (two zero bytes, a type code, the number of dimensions, one uint32
 * per dimension) followed by the data. */
#include "binary.h"
#include "io_internal.h"

#include <math.h>
#include <string.h>

typedef struct {
  elem_kind kind;
  int size;
  size_t data; /* offset of the first element */
  uint64_t rows, cols;
} idx_header;

int nle__idx_magic(const uint8_t *head, size_t len) { return len >= 4 && head[0] == 0 && head[1] == 0; }

/* Reads the header of buf[0, len); the data must fit in file_len bytes. */
static nle_status parse_header(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, size_t file_len,
                               idx_header *h) {
  if (!nle__idx_magic(buf, len))
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte 0: not an IDX file (bad magic)", name);
  switch (buf[2]) {
  case 0x08: h->kind = ELEM_U8; h->size = 1; break;
  case 0x09: h->kind = ELEM_I8; h->size = 1; break;
  case 0x0B: h->kind = ELEM_I16; h->size = 2; break;
  case 0x0C: h->kind = ELEM_I32; h->size = 4; break;
  case 0x0D: h->kind = ELEM_F32; h->size = 4; break;
  case 0x0E: h->kind = ELEM_F64; h->size = 8; break;
  default:
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte 2: unknown IDX type code 0x%02x", name, buf[2]);
  }
  int ndim = buf[3];
  if (ndim < 1)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte 3: IDX file with no dimensions", name);
  size_t data = 4 + 4 * (size_t)ndim;
  if (len < data)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: truncated IDX header (%d dimensions)", name,
                     len, ndim);
  uint64_t rows = load_uint(buf + 4, 4, 1), cols = 1;
  size_t avail = file_len - data;
  for (int i = 1; i < ndim; i++) {
    uint64_t d = load_uint(buf + 4 + 4 * (size_t)i, 4, 1);
    /* Stop the product before it can overflow; it is then larger than the file. */
    cols = (d == 0) ? 0 : (cols > (avail + 1) / d ? (uint64_t)avail + 1 : cols * d);
  }
  if (rows == 0 || cols == 0)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte 4: empty IDX array", name);
  if (cols > avail || rows > avail / cols / (uint64_t)h->size)
    return nle__fail(ctx, NLE_ERR_FORMAT,
                     "%s: byte %zu: truncated IDX data (%llu x %llu of %d bytes need %.0f bytes, %zu present)",
                     name, file_len, (unsigned long long)rows, (unsigned long long)cols, h->size,
                     (double)rows * (double)cols * h->size, avail);
  h->data = data;
  h->rows = rows;
  h->cols = cols;
  return NLE_OK;
}

/* Gzip'ed: what is kept is the size its header declares. */
nle_status nle__idx_judge(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                          const void *opts, size_t *bytes, int *text) {
  (void)whole, (void)opts, (void)text;
  idx_header h;
  nle_status s = parse_header(ctx, name, head, len, SIZE_MAX, &h);
  if (!s) *bytes = h.data + (size_t)(h.rows * h.cols) * (size_t)h.size;
  return s;
}

nle_status nle_parse_idx(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                         nle_dataset **out) {
  *out = NULL;
  idx_header h;
  nle_status hs = parse_header(ctx, name, buf, len, len, &h);
  if (hs) return hs;
  uint64_t rows = h.rows, cols = h.cols;
  size_t data = h.data;
  elem_kind kind = h.kind;
  int size = h.size;
  nle_dataset *ds;
  nle_status s = nle__dataset_new(ctx, name, (size_t)rows, (size_t)cols, &ds);
  if (s) return s;
  size_t n = (size_t)rows * (size_t)cols;
  const uint8_t *src = buf + data;
  for (size_t e = 0; e < n; e++) {
    double x = load_elem(src + e * (size_t)size, kind, size, 1);
    if (!isfinite(x) || !isfinite((float)x)) {
      nle_dataset_free(&ds);
      return nle__fail(ctx, NLE_ERR_VALUE, "%s: byte %zu (row %zu, column %zu): %s value", name,
                       data + e * (size_t)size, e / cols, e % cols, isnan(x) ? "NaN" : "infinite");
    }
    ds->X->data[e] = (float)x;
  }
  *out = ds;
  return NLE_OK;
}

nle_status nle__idx_parse(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                          const nle_read_opts *opts, int flags, nle_dataset **out) {
  (void)inner, (void)flags;
  return nle__transpose_if_asked(ctx, name, opts, nle_parse_idx(ctx, name, buf, len, out), out);
}
