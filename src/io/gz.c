/* gz.c — gzip/zlib inflation with exact errors for corrupt and truncated
 * streams, streamed so that what the data is decides how much of it is kept:
 * a header's declared size, or text that must hold no NUL byte. */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The start judged before the rest is inflated; enough for any header and a
 * few thousand text rows. */
enum { HEAD_BYTES = 1 << 20, DISCARD_BYTES = 1 << 16, ZLIB_MAX_CHUNK = 1 << 30 };

int nle__gzip_magic(const uint8_t *head, size_t len) { return len >= 2 && head[0] == 0x1f && head[1] == 0x8b; }

static nle_status nul_in_text(nle_ctx *ctx, const char *name, const uint8_t *data, size_t from, size_t to) {
  const uint8_t *nul = memchr(data + from, '\0', to - from);
  if (!nul) return NLE_OK;
  return nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: NUL byte in a text file (not a supported format)", name,
                   (size_t)(nul - data));
}

/* A kept-output buffer of `want` bytes, never past `limit`. */
static nle_status grow(nle_ctx *ctx, const char *name, size_t want, size_t limit, uint8_t **dst, size_t *cap) {
  if (want > limit) want = limit;
  if (nle__check_memory(ctx, (double)want, "the decompressed data")) return nle__fail_prefix(ctx, name);
  uint8_t *grown = realloc(*dst, want);
  if (!grown) return nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory while decompressing", name);
  *dst = grown;
  *cap = want;
  return NLE_OK;
}

nle_status nle__gunzip_judged(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                              nle__inflate_judge judge, const void *user, uint8_t **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 32) != Z_OK) /* 32: accept gzip or zlib headers */
    return nle__fail(ctx, NLE_ERR_NOMEM, "%s: cannot start zlib", name);
  uint8_t *dst = NULL, *discard = NULL;
  size_t cap = 0, used = 0, limit = SIZE_MAX, dropped = 0;
  int judged = judge == NULL, text = 0;
  nle_status s = NLE_OK;
  const uint8_t *in = buf;
  size_t in_left = len;
  while (!s) {
    /* Kept output goes to dst up to the limit; beyond it, output is only
     * inflated (to check the stream) and counted. */
    uint8_t *region;
    size_t room;
    int keep = used < limit;
    if (keep) {
      size_t doubled = !dst ? len * 4 + 1024 : cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
      if (used == cap && (s = grow(ctx, name, doubled, limit, &dst, &cap))) break;
      region = dst + used;
      room = cap - used;
      if (!judged && used < HEAD_BYTES && room > HEAD_BYTES - used) room = HEAD_BYTES - used;
    } else {
      if (!discard && !(discard = malloc(DISCARD_BYTES))) {
        s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory while decompressing", name);
        break;
      }
      region = discard;
      room = DISCARD_BYTES;
    }
    size_t chunk_in = in_left > ZLIB_MAX_CHUNK ? ZLIB_MAX_CHUNK : in_left;
    size_t chunk_out = room > ZLIB_MAX_CHUNK ? ZLIB_MAX_CHUNK : room;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)chunk_in;
    z.next_out = region;
    z.avail_out = (uInt)chunk_out;
    int ret = inflate(&z, Z_NO_FLUSH);
    in += chunk_in - z.avail_in;
    in_left -= chunk_in - z.avail_in;
    size_t produced = chunk_out - z.avail_out;
    if (keep) {
      if (text && (s = nul_in_text(ctx, name, dst, used, used + produced))) break;
      used += produced;
    } else {
      dropped += produced;
    }
    int ended = ret == Z_STREAM_END && in_left == 0;
    if (!judged && (used >= HEAD_BYTES || ended)) {
      /* The start decides the format: a header's size bounds what is kept,
       * text is scanned as it comes, and data the reader would refuse is
       * refused now instead of after inflating all of it. */
      judged = 1;
      if ((s = judge(ctx, name, dst, used, ended, user, &limit, &text))) break;
      if (text && (s = nul_in_text(ctx, name, dst, 0, used))) break;
      if (used > limit) {
        dropped += used - limit;
        used = limit;
      } else if (limit != SIZE_MAX && limit > cap && (s = grow(ctx, name, limit, limit, &dst, &cap))) {
        break; /* the declared size, checked against the memory cap at once */
      }
    }
    if (ret == Z_STREAM_END) {
      /* Concatenated gzip members are one file (as gzip -d treats them). */
      if (in_left == 0) break;
      if (inflateReset(&z) != Z_OK) ret = Z_DATA_ERROR;
      else continue;
    }
    if (ret == Z_NEED_DICT || ret == Z_DATA_ERROR || ret == Z_MEM_ERROR) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: corrupt compressed data (%s)", name, len - in_left,
                    z.msg ? z.msg : "invalid stream");
      break;
    }
    if (z.avail_out > 0 && (in_left == 0 || chunk_in == z.avail_in)) {
      /* Room left for output but no input to make it from: the stream ended
       * before its end marker, or inflate is stuck on what remains. */
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: truncated compressed data (stream ends early)", name,
                    len - in_left);
      break;
    }
  }
  inflateEnd(&z);
  free(discard);
  if (s) {
    free(dst);
    return s;
  }
  if (dropped) nle__log(ctx, 1, "%s: %zu bytes after the data its header declares ignored", name, dropped);
  *out = dst;
  *out_len = used;
  return NLE_OK;
}

nle_status nle_gunzip(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, uint8_t **out,
                      size_t *out_len) {
  return nle__gunzip_judged(ctx, name, buf, len, NULL, NULL, out, out_len);
}
