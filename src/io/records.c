/* records.c — the container of nlembed's own binary files (checkpoints and
 * saved models): a header naming the file's kind, then named arrays, each
 * padded to 8 bytes so that a file read into one allocation, or mapped
 * (nle__rec_map), can be used in place. Everything is little-endian, as on every machine we build for; a
 * byte-order mark refuses files from any other.
 *
 *   "NLEMBED\0" | kind (24 bytes) | 0x01020304 (u32) | version (u32) |
 *   CRC-32 of the 40 bytes before (u32) | 4 zero bytes
 *   per record: name (32 bytes) | type (u8) | 3 zero bytes | CRC-32 (u32) |
 *   count (u64) | data | zero padding to 8 bytes
 *
 * A record's CRC-32 (zlib's) covers its head (with the CRC field zero), its
 * data and its padding, so that any damaged byte is found and the message
 * names the record. Version 1 files (no CRCs, a 40-byte header) are still
 * read. Saved models of every kind go through one container at the end
 * (model_file.h): the header's kind, then the kind's records by its row's
 * hooks. */
#include "model_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum { KIND_LEN = 24, NAME_LEN = 32, HEADER_V1 = 8 + KIND_LEN + 8, HEADER_LEN = HEADER_V1 + 8,
       RECORD_HEAD = NAME_LEN + 8 + 8, CRC_AT = NAME_LEN + 4 };
static const uint32_t BYTE_ORDER_MARK = 0x01020304u, VERSION = 2;
static const char ZEROS[8];

static uint32_t crc_of(uint32_t crc, const void *data, size_t len) {
  const unsigned char *p = data;
  while (len > 0) { /* zlib takes lengths in uInt */
    uInt piece = len > (1u << 30) ? (1u << 30) : (uInt)len;
    crc = (uint32_t)crc32(crc, p, piece);
    p += piece;
    len -= piece;
  }
  return crc;
}

/* crc_of over a long record in pieces on the context's threads, combined
 * in order (zlib's crc32_combine): the same checksum. A 60,000-image t-SNE
 * model (203 MB) took 0.09 s to check on one thread, 6% of a transform. */
enum { CRC_PIECE = 8 << 20 };
typedef struct {
  const unsigned char *data;
  size_t len;
  uint32_t *part;
} crc_job;

static int crc_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const crc_job *j = job;
  size_t from = b * CRC_PIECE, len = j->len - from < CRC_PIECE ? j->len - from : CRC_PIECE;
  j->part[b] = crc_of(0, j->data + from, len);
  return 0;
}

static uint32_t crc_of_long(nle_ctx *ctx, uint32_t crc, const void *data, size_t len) {
  size_t pieces = (len + CRC_PIECE - 1) / CRC_PIECE;
  uint32_t *part = pieces > 1 ? malloc(pieces * sizeof *part) : NULL;
  crc_job job = {data, len, part};
  if (!part || nle__for_blocks(ctx, "checksum", pieces, nle__threads_for(ctx, (double)len), 0, crc_block, &job)) {
    free(part);
    return crc_of(crc, data, len);
  }
  for (size_t b = 0; b < pieces; b++)
    crc = (uint32_t)crc32_combine(crc, part[b], (z_off_t)(b + 1 < pieces ? CRC_PIECE : len - b * CRC_PIECE));
  free(part);
  return crc;
}

/* A record name as read from a file, printable: other bytes as \xNN. */
static void printable_name(const char *name, char *out, size_t cap) {
  size_t o = 0;
  for (size_t i = 0; name[i] && o + 5 < cap; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c >= 0x20 && c < 0x7f && c != '\\') out[o++] = (char)c;
    else o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
  }
  out[o] = '\0';
}

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
  uint32_t crc = crc_of(0, head, HEADER_V1);
  memcpy(head + HEADER_V1, &crc, 4);
  fwrite(head, 1, sizeof head, af->f);
  return NLE_OK;
}

void nle__rec_put(nle__afile *af, const char *name, char type, const void *data, uint64_t count) {
  char head[RECORD_HEAD] = {0};
  strncpy(head, name, NAME_LEN - 1);
  head[NAME_LEN] = type;
  memcpy(head + NAME_LEN + 8, &count, 8);
  size_t bytes = (size_t)count * type_size(type), pad = (8 - bytes % 8) % 8;
  uint32_t crc = crc_of(crc_of(crc_of(0, head, sizeof head), bytes ? data : ZEROS, bytes), ZEROS, pad);
  memcpy(head + CRC_AT, &crc, 4);
  fwrite(head, 1, sizeof head, af->f);
  if (bytes) fwrite(data, 1, bytes, af->f);
  fwrite(ZEROS, 1, pad, af->f);
}

void nle__rec_put_text(nle__afile *af, const char *name, const char *text) {
  nle__rec_put(af, name, 's', text, strlen(text));
}

void nle__rec_free(nle__rec_file *f) {
  if (f->mapped) nle__rec_unmap(f->buf, f->len);
  else free(f->buf);
  free(f->entries);
  memset(f, 0, sizeof *f);
}

void nle__rec_unmap(void *map, size_t len) {
  if (map) munmap(map, len);
}

/* The records of f->buf, checked: the header, then each record's bounds and
 * CRC. */
static nle_status parse_records(nle_ctx *ctx, const char *path, const char *kind, nle__rec_file *f) {
  nle_status s = NLE_OK;
  uint32_t bom = 0, version = 0, crc = 0;
  if (f->len >= HEADER_V1) {
    memcpy(&bom, f->buf + 8 + KIND_LEN, 4);
    memcpy(&version, f->buf + 12 + KIND_LEN, 4);
  }
  size_t header = version >= 2 ? HEADER_LEN : HEADER_V1;
  if (f->len >= HEADER_LEN) memcpy(&crc, f->buf + HEADER_V1, 4);
  char kind_read[KIND_LEN + 1], shown[4 * KIND_LEN + 1];
  memcpy(kind_read, f->len >= HEADER_V1 ? (const char *)f->buf + 8 : "", f->len >= HEADER_V1 ? KIND_LEN : 1);
  kind_read[KIND_LEN] = '\0';
  printable_name(kind_read, shown, sizeof shown);
  if (f->len < HEADER_V1 || memcmp(f->buf, "NLEMBED", 8) != 0)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: not an nlembed %s file", path, kind);
  else if (bom != BYTE_ORDER_MARK || version < 1 || version > VERSION)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: written by another byte order or format version (%u), or damaged", path,
                  version);
  else if (version >= 2 && (f->len < HEADER_LEN || crc_of(0, f->buf, HEADER_V1) != crc))
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: the file's header is damaged (checksum mismatch)", path);
  else if (version >= 2 && memcmp(f->buf + HEADER_V1 + 4, ZEROS, 4) != 0) /* outside the CRC: checked as written */
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: the file's header is damaged (its last 4 bytes are not zero)", path);
  else if (strncmp(kind_read, kind, KIND_LEN) != 0)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: an nlembed %s file, not a %s", path, shown, kind);
  size_t pos = header, cap = 0;
  while (!s && pos < f->len) {
    uint64_t count;
    if (f->len - pos < RECORD_HEAD) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: truncated at byte %zu", path, pos);
      break;
    }
    nle__rec_entry e;
    char shown_name[4 * NAME_LEN + 1];
    memcpy(e.name, f->buf + pos, NAME_LEN);
    e.name[NAME_LEN - 1] = '\0';
    printable_name(e.name, shown_name, sizeof shown_name);
    e.type = (char)f->buf[pos + NAME_LEN];
    memcpy(&count, f->buf + pos + NAME_LEN + 8, 8);
    size_t size = type_size(e.type), at = pos;
    pos += RECORD_HEAD;
    size_t bytes = size ? (size_t)count * size : 0, pad = (8 - bytes % 8) % 8;
    if (!size || count > (f->len - pos) / size || (version >= 2 && f->len - pos - bytes < pad)) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' (at byte %zu) is damaged or truncated", path, shown_name, at);
      break;
    }
    if (version >= 2) {
      unsigned char head[RECORD_HEAD];
      uint32_t stored;
      memcpy(head, f->buf + at, RECORD_HEAD);
      memcpy(&stored, head + CRC_AT, 4);
      memset(head + CRC_AT, 0, 4);
      if (crc_of_long(ctx, crc_of(0, head, RECORD_HEAD), f->buf + pos, bytes + pad) != stored) {
        s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' (at byte %zu) is damaged (checksum mismatch)", path,
                      shown_name, at);
        break;
      }
    }
    e.count = count;
    e.data = f->buf + pos;
    pos += bytes;
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
  f->version = version;
  if (s) nle__rec_free(f);
  return s;
}

nle_status nle__rec_read(nle_ctx *ctx, const char *path, const char *kind, nle__rec_file *f) {
  memset(f, 0, sizeof *f);
  f->path = path;
  nle_status s = nle__read_file(ctx, path, &f->buf, &f->len);
  return s ? s : parse_records(ctx, path, kind, f);
}

nle_status nle__rec_map(nle_ctx *ctx, const char *path, const char *kind, nle__rec_file *f) {
  memset(f, 0, sizeof *f);
  f->path = path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX) {
    if (fd >= 0) close(fd);
    return nle__rec_read(ctx, path, kind, f); /* its messages */
  }
  /* The mapped pages count against the cap as the copy read did. */
  nle_status s = nle__check_memory(ctx, (double)st.st_size, "reading the file");
  if (s) {
    close(fd);
    return nle__fail_prefix(ctx, path);
  }
  /* Private and writable: callers may change what they are given (the
   * pages are then copied, the file never written). Populated at once: the
   * CRCs read every byte. */
  int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
  flags |= MAP_POPULATE;
#endif
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, flags, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return nle__rec_read(ctx, path, kind, f);
  f->buf = map;
  f->len = (size_t)st.st_size;
  f->mapped = 1;
  return parse_records(ctx, path, kind, f);
}

void *nle__rec_keep_mapping(nle__rec_file *f, size_t *len) {
  if (!f->mapped) return NULL;
  void *map = f->buf;
  *len = f->len;
  f->mapped = 0;
  f->buf = NULL; /* nle__rec_free no longer releases it */
  return map;
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

nle_status nle__rec_copy_doubles(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, double **dst) {
  const void *src;
  nle_status s = nle__rec_get(ctx, f, name, 'd', count, &src);
  if (s) return s;
  *dst = nle__malloc(ctx, (count ? count : 1) * sizeof(double), name);
  if (!*dst) return NLE_ERR_NOMEM;
  if (count) memcpy(*dst, src, count * sizeof(double));
  for (size_t i = 0; i < count; i++)
    if (!isfinite((*dst)[i])) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' has a non-finite value", f->path, name);
  return NLE_OK;
}

nle_status nle_file_kind(nle_ctx *ctx, const char *path, char *kind, size_t cap) {
  if (cap) kind[0] = '\0';
  FILE *fp = fopen(path, "rb");
  if (!fp) return nle__fail(ctx, NLE_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  char head[8 + KIND_LEN];
  size_t got = fread(head, 1, sizeof head, fp);
  fclose(fp);
  if (got < sizeof head || memcmp(head, "NLEMBED", 8) != 0)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: not an nlembed model file", path);
  char name[KIND_LEN + 1];
  memcpy(name, head + 8, KIND_LEN);
  name[KIND_LEN] = '\0';
  if (cap) snprintf(kind, cap, "%s", name);
  return NLE_OK;
}

/* ---- the model container (model_file.h) ---- */

nle_status nle__model_save(nle_ctx *ctx, const nle__model_kind *kind, const void *model, const char *path,
                           bool copy_data) {
  nle_status s = kind->check ? kind->check(ctx, model, copy_data) : NLE_OK;
  nle__afile af;
  if (!s) s = nle__rec_open(ctx, path, kind->kind, &af);
  if (s) return s;
  kind->write(&af, model, copy_data);
  return nle__afile_commit(ctx, &af);
}

nle_status nle__model_load(nle_ctx *ctx, const nle__model_kind *kind, const char *path, void **model) {
  *model = NULL;
  nle__rec_file f;
  nle_status s = kind->mapped ? nle__rec_map(ctx, path, kind->kind, &f) : nle__rec_read(ctx, path, kind->kind, &f);
  if (s) return nle__name_error(ctx, path);
  void *m = NULL;
  s = kind->read(ctx, &f, &m);
  nle__rec_free(&f);
  if (s) {
    if (m) kind->free(m);
    return nle__name_error(ctx, path);
  }
  *model = m;
  return NLE_OK;
}

nle_status nle__model_attach(nle_ctx *ctx, const nle__model_kind *kind, void *model, const nle_matf *Y) {
  if (!kind->attach) return nle__fail(ctx, NLE_ERR_ARG, "a %s keeps no training data to attach", kind->kind);
  return kind->attach(ctx, model, Y);
}
