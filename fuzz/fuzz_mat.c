/* fuzz_mat.c — libFuzzer target for the MATLAB reader. The input is a
 * recipe: libmatio writes a .mat file from it (v5, v7 compressed or v7.3;
 * variables of every numeric class, logical, char and sparse, of any shape,
 * sparse row indices anywhere, values from NaN to 1e300), and nlembed reads
 * its bytes (v5 and v7 through libmatio from a memory file, v7.3 through
 * the HDF5 reader), by default or by name, as data or labels. Any recipe
 * must give a result or a clean error, never a crash, leak or undefined
 * behaviour. Written this way the file is always well-formed: the target
 * explores nlembed's side, not libmatio's parser, whose own weaknesses on
 * damaged files (allocations sized from damaged headers) would drown it.
 * NLE_FUZZ_RAW=1 hands the input to the reader as raw file bytes instead. */
#include "fuzz_common.h"
#include "../src/io/io_internal.h"
#include "fuzz_recipe.h"

#include <hdf5.h>
#include <matio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>



static const struct {
  enum matio_classes c;
  enum matio_types t;
  size_t size;
} classes[] = {{MAT_C_DOUBLE, MAT_T_DOUBLE, 8}, {MAT_C_SINGLE, MAT_T_SINGLE, 4}, {MAT_C_INT8, MAT_T_INT8, 1},
               {MAT_C_UINT8, MAT_T_UINT8, 1},   {MAT_C_INT16, MAT_T_INT16, 2},   {MAT_C_INT32, MAT_T_INT32, 4},
               {MAT_C_INT64, MAT_T_INT64, 8},   {MAT_C_UINT64, MAT_T_UINT64, 8}};

/* One value of the class, from the table, converted as a cast would (the
 * integer classes get what fits). */
static void put_value(void *dst, int k, double v) {
  switch (classes[k].c) {
  case MAT_C_DOUBLE: *(double *)dst = v; break;
  case MAT_C_SINGLE: *(float *)dst = (float)(isfinite(v) && fabs(v) > 3e38 ? 3e38 : v); break;
  default: {
    long long x = isfinite(v) && fabs(v) < 1e9 ? (long long)v : 5;
    memcpy(dst, &x, classes[k].size); /* the low bytes (little-endian) */
  }
  }
}

static void add_variable(mat_t *mat, recipe *r, enum matio_compression z) {
  static const char *const names[] = {"X", "S", "y", "note", "Z"};
  const char *name = names[take(r, 5)];
  size_t dims[3] = {take(r, 6), take(r, 6), 1 + take(r, 3)};
  int rank = 2 + (take(r, 6) == 0);
  unsigned kind = take(r, 11);
  matvar_t *v = NULL;
  if (kind < 8 || kind == 10) {
    int k = kind < 8 ? (int)kind : 3;
    size_t count = dims[0] * dims[1] * (rank == 3 ? dims[2] : 1);
    uint8_t *data = calloc(count ? count : 1, 8);
    for (size_t i = 0; i < count; i++) put_value(data + i * classes[k].size, k, recipe_values[take(r, 16)]);
    v = Mat_VarCreate(name, classes[k].c, classes[k].t, rank, dims, data, kind == 10 ? MAT_F_LOGICAL : 0);
    free(data);
  } else if (kind == 8) {
    size_t cd[2] = {1, 4};
    v = Mat_VarCreate(name, MAT_C_CHAR, MAT_T_UINT8, 2, cd, "text", 0);
  } else {
    /* sparse, by columns: pointers that grow, row indices anywhere (out of
     * range and repeated ones included) */
    size_t cols = dims[1];
    mat_uint32_t jc[8] = {0}, ir[24];
    double d[24];
    for (size_t c = 0; c < cols; c++) jc[c + 1] = jc[c] + take(r, 4);
    mat_uint32_t nnz = jc[cols];
    for (mat_uint32_t k = 0; k < nnz; k++) {
      ir[k] = take(r, (unsigned)dims[0] + 2);
      d[k] = recipe_values[take(r, 16)];
    }
    mat_sparse_t sp = {nnz, ir, nnz, jc, (mat_uint32_t)cols + 1, nnz, d};
    size_t sd[2] = {dims[0], cols};
    v = Mat_VarCreate(name, MAT_C_SPARSE, MAT_T_DOUBLE, 2, sd, &sp, 0);
  }
  if (v) {
    Mat_VarWrite(mat, v, z);
    Mat_VarFree(v);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  nle_ctx *ctx = fuzz_ctx();
  if (!size) return 0;
  static char path[64];
  if (!path[0]) snprintf(path, sizeof path, "/tmp/nle-fuzz-mat-%ld.mat", (long)getpid());
  nle_read_opts o;
  nle_read_opts_init(&o);
  static const char *const inner[] = {NULL, NULL, "X", "S"};
  o.sparse_ok = data[0] & 1;
  o.transpose = (data[0] >> 1) & 1;
  int flags = data[0] & 4 ? NLE__READ_LABELS : 0;
  const char *var = inner[(data[0] >> 3) & 3];
  nle_dataset *ds = NULL;
  if (getenv("NLE_FUZZ_RAW")) {
    nle__parse_mat(ctx, "fuzz.mat", data + 1, size - 1, var, &o, flags, &ds);
    nle_dataset_free(&ds);
    return 0;
  }
  recipe r = {data + 1, size - 1};
  unsigned version = take(&r, 3);
  unlink(path);
  mat_t *mat = Mat_CreateVer(path, NULL, version == 2 ? MAT_FT_MAT73 : MAT_FT_MAT5);
  if (!mat) return 0;
  for (int i = 0; i < 6 && r.n; i++) add_variable(mat, &r, version == 1 ? MAT_COMPRESSION_ZLIB : MAT_COMPRESSION_NONE);
  Mat_Close(mat);
  uint8_t *buf = NULL;
  size_t len = 0;
  FILE *f = fopen(path, "rb");
  if (f && fseek(f, 0, SEEK_END) == 0 && (len = (size_t)ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc(len)) && fread(buf, 1, len, f) == len)
    nle__parse_mat(ctx, "fuzz.mat", buf, len, var, &o, flags, &ds);
  if (f) fclose(f);
  /* whatever the outcome, the readers closed every HDF5 object they opened */
  if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) > 0) abort();
  free(buf);
  nle_dataset_free(&ds);
  return 0;
}
