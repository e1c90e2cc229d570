/* fuzz_gunzip.c — libFuzzer target for gzip input: the plain inflater, and
 * the streamed one the readers use, which judges the first MiB (format,
 * declared size, text errors) before inflating the rest. Any input must give
 * a result or a clean error, never a crash, leak or undefined behaviour. */
#include "fuzz_common.h"
#include "../src/io/io_internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nle_ctx *ctx = fuzz_ctx();
  uint8_t *out = NULL;
  size_t len = 0;
  nle_gunzip(ctx, "fuzz", data, size, &out, &len);
  free(out);
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    nle_dataset *ds = NULL;
    nle__parse_buffer(ctx, "fuzz", data, size, NULL, 0, &ds);
    nle_dataset_free(&ds);
  }
  return 0;
}
