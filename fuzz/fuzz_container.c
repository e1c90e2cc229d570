/* fuzz_container.c — libFuzzer target for nlembed's own files: the input is
 * written to a file and loaded as a saved model and as a checkpoint. Any
 * input must give a model or a clean error (a damaged one: the record's
 * CRC-32 names it), never a crash, leak or undefined behaviour. */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nle_ctx *ctx = fuzz_ctx();
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/nle-fuzz-container-%ld", (long)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  nle_trained *t = NULL;
  if (nle_trained_load(ctx, path, &t) == NLE_OK && t->Y) {
    nle_matd *X = NULL; /* a loaded model must be usable */
    nle_matf one = {1, t->Y->cols, t->Y->data};
    nle_trained_transform(ctx, t, &one, 5, &X);
    nle_matd_free(&X);
  }
  nle_trained_free(&t);
  nle_opt_check_checkpoint(ctx, path, "");
  return 0;
}
