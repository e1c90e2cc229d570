/* fuzz_npz.c — libFuzzer target for .npz archives (the zip directory, stored
 * and deflated members, np.savez arrays and scipy.sparse matrices): any input
 * must give a result or a clean error, never a crash, leak or undefined
 * behaviour. */
#include "fuzz_common.h"
#include "../src/io/io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nle_ctx *ctx = fuzz_ctx();
  nle_read_opts o;
  nle_read_opts_init(&o);
  /* The first byte picks sparse or dense, transposed or not, a key or none. */
  const char *key = NULL;
  if (size > 0) {
    o.sparse_ok = data[0] & 1;
    o.transpose = (data[0] >> 1) & 1;
    key = (data[0] >> 2) & 1 ? "X" : NULL;
    data++;
    size--;
  }
  nle_dataset *ds = NULL;
  nle__parse_npz(ctx, "fuzz.npz", data, size, key, &o, 0, &ds);
  nle_dataset_free(&ds);
  return 0;
}
