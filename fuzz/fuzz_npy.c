/* fuzz_npy.c — libFuzzer target for the npy reader: any input must give a
 * result or a clean error, never a crash, leak or undefined behaviour. */
#include "fuzz_common.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nle_ctx *ctx = fuzz_ctx();
  nle_dataset *ds = NULL;
  nle_parse_npy(ctx, "fuzz", data, size, &ds);
  nle_dataset_free(&ds);
  return 0;
}
