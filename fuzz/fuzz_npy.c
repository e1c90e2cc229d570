/* fuzz_npy.c — libFuzzer target for the npy reader: any input must give a
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
  nle_dataset *ds = NULL;
  nle_parse_npy(ctx, "fuzz", data, size, &ds);
  nle_dataset_free(&ds);
  return 0;
}
