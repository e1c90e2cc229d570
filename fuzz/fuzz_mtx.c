/* fuzz_mtx.c — libFuzzer target for Matrix Market files read as data
 * (coordinate: sparse; array: dense), and for the graph reader's sibling
 * parser through nle__parse_buffer (plain or gzip'ed): any input must give a
 * result or a clean error, never a crash, leak or undefined behaviour. */
#include "fuzz_common.h"
#include "../src/io/io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nle_ctx *ctx = fuzz_ctx();
  nle_read_opts o;
  nle_read_opts_init(&o);
  int transpose = 0;
  if (size > 0) {
    o.sparse_ok = data[0] & 1;
    transpose = (data[0] >> 1) & 1;
    data++;
    size--;
  }
  nle_dataset *ds = NULL;
  nle__parse_mtx(ctx, "fuzz.mtx", data, size, transpose, &o, &ds);
  nle_dataset_free(&ds);
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    nle__parse_buffer(ctx, "fuzz.mtx.gz", data, size, &o, 0, &ds);
    nle_dataset_free(&ds);
  }
  return 0;
}
