/* fuzz_common.h — what every libFuzzer target shares: one context for the
 * whole run, single-threaded (reproducible) and with a 256 MiB memory cap
 * (an input that declares a huge size must be refused, not allocated). */
#ifndef NLE_FUZZ_COMMON_H
#define NLE_FUZZ_COMMON_H

#include "nlembed.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline nle_ctx *fuzz_ctx(void) {
  static nle_ctx *ctx;
  if (!ctx) {
    ctx = nle_ctx_new();
    nle_ctx_set_threads(ctx, 1);
    nle_ctx_set_max_memory(ctx, (size_t)256 << 20);
  }
  return ctx;
}

#endif
