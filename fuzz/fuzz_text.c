/* fuzz_text.c — libFuzzer target for the text reader: any input must give a
 * result or a clean error, never a crash, leak or undefined behaviour. */
#include "fuzz_common.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nle_ctx *ctx = fuzz_ctx();
  nle_dataset *ds = NULL;
  nle_read_opts o;
  nle_read_opts_init(&o);
  /* The first byte picks the label column, so both paths are explored. */
  if (size > 0) {
    o.label_column = (int)(data[0] % 4) - 2;
    data++;
    size--;
  }
  nle_parse_text(ctx, "fuzz", (const char *)data, size, &o, &ds);
  nle_dataset_free(&ds);
  return 0;
}
