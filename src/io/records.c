/* records.c — the container of nlembed's own binary files (checkpoints and
 * saved models): a header naming the file's kind, then named arrays, each
 * padded to 8 bytes so that a file read into one allocation can be used in
 * place. Everything is little-endian, as on every machine we build for; a
 * byte-order mark refuses files from any other.
 *
 *   "NLEMBED\0" | kind (24 bytes) | 0x01020304 (u32) | version (u32)
 *   per record: name (32 bytes) | type (u8) + 7 zero bytes | count (u64) | data
 */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>

enum { KIND_LEN = 24, NAME_LEN = 32, HEADER_LEN = 8 + KIND_LEN + 8, RECORD_HEAD = NAME_LEN + 8 + 8 };
static const uint32_t BYTE_ORDER_MARK = 0x01020304u, VERSION = 1;

static size_t type_size(char type) {
  switch (type) {
  case 'd': return 8; /* double */
  case 'f': return 4; /* float */
  case 'l': return 8; /* int64 */
  case 'i': return 4; /* int32 */
  case 's': return 1; /* text */
  default: return 0;
  }
}

nle_status nle__rec_open(nle_ctx *ctx, const char *path, const char *kind, nle__afile *af) {
  nle_status s = nle__afile_open(ctx, path, af);
  if (s) return s;
  char head[HEADER_LEN] = "NLEMBED";
  strncpy(head + 8, kind, KIND_LEN - 1);
  memcpy(head + 8 + KIND_LEN, &BYTE_ORDER_MARK, 4);
  memcpy(head + 12 + KIND_LEN, &VERSION, 4);
  fwrite(head, 1, sizeof head, af->f);
  return NLE_OK;
}

void nle__rec_put(nle__afile *af, const char *name, char type, const void *data, uint64_t count) {
  char head[RECORD_HEAD] = {0};
  strncpy(head, name, NAME_LEN - 1);
  head[NAME_LEN] = type;
  memcpy(head + NAME_LEN + 8, &count, 8);
  fwrite(head, 1, sizeof head, af->f);
  size_t bytes = (size_t)count * type_size(type), pad = (8 - bytes % 8) % 8;
  static const char zeros[8];
  if (bytes) fwrite(data, 1, bytes, af->f);
  fwrite(zeros, 1, pad, af->f);
}

void nle__rec_put_text(nle__afile *af, const char *name, const char *text) {
  nle__rec_put(af, name, 's', text, strlen(text));
}

void nle__rec_free(nle__rec_file *f) {
  free(f->buf);
  free(f->entries);
  memset(f, 0, sizeof *f);
}

nle_status nle__rec_read(nle_ctx *ctx, const char *path, const char *kind, nle__rec_file *f) {
  memset(f, 0, sizeof *f);
  f->path = path;
  nle_status s = nle__read_file(ctx, path, &f->buf, &f->len);
  if (s) return s;
  uint32_t bom = 0, version = 0;
  if (f->len >= HEADER_LEN) {
    memcpy(&bom, f->buf + 8 + KIND_LEN, 4);
    memcpy(&version, f->buf + 12 + KIND_LEN, 4);
  }
  if (f->len < HEADER_LEN || memcmp(f->buf, "NLEMBED", 8) != 0)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: not an nlembed %s file", path, kind);
  else if (strncmp((const char *)f->buf + 8, kind, KIND_LEN) != 0)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: an nlembed %.*s file, not a %s", path, KIND_LEN, (const char *)f->buf + 8,
                  kind);
  else if (bom != BYTE_ORDER_MARK || version != VERSION)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: written by another byte order or format version (%u)", path, version);
  size_t pos = HEADER_LEN, cap = 0;
  while (!s && pos < f->len) {
    uint64_t count;
    if (f->len - pos < RECORD_HEAD) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: truncated at byte %zu", path, pos);
      break;
    }
    nle__rec_entry e;
    memcpy(e.name, f->buf + pos, NAME_LEN);
    e.name[NAME_LEN - 1] = '\0';
    e.type = (char)f->buf[pos + NAME_LEN];
    memcpy(&count, f->buf + pos + NAME_LEN + 8, 8);
    size_t size = type_size(e.type);
    pos += RECORD_HEAD;
    if (!size || count > (f->len - pos) / size) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' is damaged or truncated", path, e.name);
      break;
    }
    e.count = count;
    e.data = f->buf + pos;
    pos += (size_t)count * size;
    pos += (8 - pos % 8) % 8;
    if (f->count == cap) {
      cap = cap ? 2 * cap : 16;
      nle__rec_entry *grown = realloc(f->entries, cap * sizeof *grown);
      if (!grown) {
        s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
        break;
      }
      f->entries = grown;
    }
    f->entries[f->count++] = e;
  }
  if (s) nle__rec_free(f);
  return s;
}

int nle__rec_has(const nle__rec_file *f, const char *name) {
  for (size_t i = 0; i < f->count; i++)
    if (!strcmp(f->entries[i].name, name)) return 1;
  return 0;
}

nle_status nle__rec_get(nle_ctx *ctx, const nle__rec_file *f, const char *name, char type, uint64_t count,
                        const void **data) {
  *data = NULL;
  for (size_t i = 0; i < f->count; i++) {
    const nle__rec_entry *e = &f->entries[i];
    if (strcmp(e->name, name) != 0) continue;
    if (e->type != type || (count != NLE__REC_ANY && e->count != count))
      return nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' has %llu values of type %c, expected %llu of %c", f->path,
                       name, (unsigned long long)e->count, e->type, (unsigned long long)count, type);
    *data = e->data;
    return NLE_OK;
  }
  return nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' is missing", f->path, name);
}

nle_status nle__rec_text(nle_ctx *ctx, const nle__rec_file *f, const char *name, char *out, size_t cap) {
  const void *data;
  nle_status s = nle__rec_get(ctx, f, name, 's', NLE__REC_ANY, &data);
  if (s) return s;
  size_t len = 0;
  for (size_t i = 0; i < f->count; i++)
    if (!strcmp(f->entries[i].name, name)) len = (size_t)f->entries[i].count;
  if (len >= cap) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' is too long", f->path, name);
  memcpy(out, data, len);
  out[len] = '\0';
  return NLE_OK;
}
