/* gz.c — in-memory gzip/zlib inflation with exact errors for corrupt and
 * truncated streams. */
#include "io_internal.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

nle_status nle_gunzip(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                      uint8_t **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 32) != Z_OK) /* 32: accept gzip or zlib headers */
    return nle__fail(ctx, NLE_ERR_NOMEM, "%s: cannot start zlib", name);
  size_t cap = len * 4 + 1024, used = 0;
  uint8_t *dst = NULL;
  nle_status s = NLE_OK;
  const uint8_t *in = buf;
  size_t in_left = len;
  int ret = Z_OK;
  while (!s) {
    if (used == cap || !dst) {
      cap = dst ? cap * 2 : cap;
      s = nle__check_memory(ctx, (double)cap, "the decompressed data");
      if (s) {
        s = nle__fail_prefix(ctx, name);
        break;
      }
      uint8_t *grown = realloc(dst, cap);
      if (!grown) {
        s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory while decompressing", name);
        break;
      }
      dst = grown;
    }
    size_t chunk_in = in_left > (1u << 30) ? (1u << 30) : in_left;
    size_t chunk_out = cap - used > (1u << 30) ? (1u << 30) : cap - used;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)chunk_in;
    z.next_out = dst + used;
    z.avail_out = (uInt)chunk_out;
    ret = inflate(&z, Z_NO_FLUSH);
    in += chunk_in - z.avail_in;
    in_left -= chunk_in - z.avail_in;
    used += chunk_out - z.avail_out;
    if (ret == Z_STREAM_END) {
      /* Concatenated gzip members are one file (as gzip -d treats them). */
      if (in_left == 0) break;
      if (inflateReset(&z) != Z_OK) ret = Z_DATA_ERROR;
      else continue;
    }
    if (ret == Z_NEED_DICT || ret == Z_DATA_ERROR || ret == Z_MEM_ERROR) {
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: byte %zu: corrupt compressed data (%s)", name,
                    len - in_left, z.msg ? z.msg : "invalid stream");
      break;
    }
    if (z.avail_out > 0 && (in_left == 0 || chunk_in == z.avail_in)) {
      /* Room left for output but no input to make it from: the stream ended
       * before its end marker, or inflate is stuck on what remains. */
      s = nle__fail(ctx, NLE_ERR_FORMAT,
                    "%s: byte %zu: truncated compressed data (stream ends early)", name,
                    len - in_left);
      break;
    }
  }
  inflateEnd(&z);
  if (s) {
    free(dst);
    return s;
  }
  *out = dst;
  *out_len = used;
  return NLE_OK;
}
