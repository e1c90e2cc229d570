/* fuzz_gunzip.c — libFuzzer target for the gunzip reader: any input must give a
 * result or a clean error, never a crash, leak or undefined behaviour. */
#include "nlembed.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static nle_ctx *ctx;
  if (!ctx) {
    ctx = nle_ctx_new();
    nle_ctx_set_threads(ctx, 1);
    nle_ctx_set_max_memory(ctx, (size_t)256 << 20);
  }
  uint8_t *out = NULL;
  size_t len = 0;
  nle_gunzip(ctx, "fuzz", data, size, &out, &len);
  free(out);
  return 0;
}
