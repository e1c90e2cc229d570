/* fuzz_hdf5.c — libFuzzer target for the HDF5 and AnnData reader. The input
 * is a recipe: libhdf5 builds an in-memory file from it (datasets of any
 * type, rank and shape at the paths AnnData, 10x and MATLAB use, groups,
 * the attributes that mark sparse, categorical and MATLAB objects, values
 * from NaN to 1e300), and nlembed reads the image (the default array, a path
 * inside, labels, the MATLAB layout). Any recipe must give a result or a
 * clean error, never a crash, leak or undefined behaviour. Built this way
 * the file's structure is always well-formed: the target explores nlembed's
 * side (what libhdf5 hands back, checked), not libhdf5's parser, whose own
 * weaknesses on damaged metadata (huge allocations, leaks on failed opens in
 * 1.10) would drown it. NLE_FUZZ_RAW=1 hands the input to the reader as raw
 * file bytes instead. */
#include "fuzz_common.h"
#include "../src/io/io_internal.h"
#include "fuzz_recipe.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>


static const char *const paths[] = {"X", "X/data", "X/indices", "X/indptr", "obs/cell_type",
                                    "obs/cell_type/codes", "obs/cell_type/categories", "obs/side",
                                    "obs/__categories/side", "obsm/X_pca", "matrix/data", "matrix/indices",
                                    "matrix/indptr", "matrix/shape", "g/x", "g/y", "data", "ir", "jc", "#refs#/a"};
enum { PATHS = sizeof paths / sizeof *paths };
static const char *const strings[] = {"a", "b", "T cell", "", "anndata", "csr_matrix", "csc_matrix",
                                      "categorical", "dataframe", "csr", "csc", "double", "char", "array"};
enum { STRINGS = sizeof strings / sizeof *strings };

static hid_t pick_type(unsigned k, int *text) {
  static const hid_t *numeric[] = {&H5T_NATIVE_FLOAT_g, &H5T_NATIVE_DOUBLE_g, &H5T_NATIVE_SCHAR_g,
                                   &H5T_NATIVE_UCHAR_g, &H5T_NATIVE_SHORT_g,  &H5T_NATIVE_INT_g,
                                   &H5T_NATIVE_LLONG_g, &H5T_NATIVE_ULLONG_g, &H5T_STD_I32BE_g};
  *text = 0;
  if (k < 9) return H5Tcopy(*numeric[k]);
  hid_t t;
  switch (k) {
  case 9: /* variable-length UTF-8, as h5py writes */
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    *text = 1;
    return t;
  case 10: /* fixed length */
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 4);
    *text = 2;
    return t;
  case 11: { /* h5py's booleans */
    signed char no = 0, yes = 1;
    t = H5Tenum_create(H5T_NATIVE_SCHAR);
    H5Tenum_insert(t, "FALSE", &no);
    H5Tenum_insert(t, "TRUE", &yes);
    return t;
  }
  default: /* a table */
    t = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(t, "a", 0, H5T_NATIVE_FLOAT);
    H5Tinsert(t, "b", 4, H5T_NATIVE_FLOAT);
    return t;
  }
}

static void make_dataset(hid_t f, hid_t lcpl, recipe *r) {
  const char *path = paths[take(r, PATHS)];
  int text;
  hid_t t = pick_type(take(r, 13), &text);
  int rank = (int)take(r, 4);
  hsize_t dims[3] = {1, 1, 1}, count = 1;
  for (int i = 0; i < rank; i++) count *= dims[i] = take(r, 7);
  hid_t sp = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
  hid_t d = H5Dcreate2(f, path, t, sp, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  if (d >= 0 && count) {
    H5T_class_t c = H5Tget_class(t);
    if (text == 1) {
      const char **s = malloc(count * sizeof *s);
      for (hsize_t i = 0; i < count; i++) s[i] = strings[take(r, STRINGS)];
      H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
      free(s);
    } else if (text == 2 || c == H5T_COMPOUND || c == H5T_ENUM) {
      size_t size = H5Tget_size(t);
      uint8_t *raw = calloc(count, size);
      for (hsize_t i = 0; i < count * size; i++) raw[i] = (uint8_t)(c == H5T_ENUM ? take(r, 2) : take(r, 256));
      H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw);
      free(raw);
    } else {
      double *v = malloc(count * sizeof *v);
      for (hsize_t i = 0; i < count; i++) v[i] = recipe_values[take(r, 16)];
      H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
      free(v);
    }
  }
  if (d >= 0) H5Dclose(d);
  H5Sclose(sp);
  H5Tclose(t);
}

/* An attribute on the top, or on an object already made. */
static void make_attribute(hid_t f, recipe *r, int integers) {
  hid_t o = take(r, 3) ? H5Oopen(f, paths[take(r, PATHS)], H5P_DEFAULT) : H5Oopen(f, "/", H5P_DEFAULT);
  if (o < 0) return;
  static const char *const text_names[] = {"encoding-type", "h5sparse_format", "MATLAB_class"};
  static const char *const int_names[] = {"shape", "h5sparse_shape", "MATLAB_sparse"};
  const char *name = integers ? int_names[take(r, 3)] : text_names[take(r, 3)];
  if (H5Aexists(o, name) > 0) H5Adelete(o, name);
  if (integers) {
    hsize_t n = 1 + take(r, 3);
    int64_t v[3];
    for (hsize_t i = 0; i < n; i++) v[i] = (int64_t)take(r, 12) - 2;
    if (take(r, 8) == 0) v[0] = (int64_t)1 << 40;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t a = H5Acreate2(o, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, H5T_NATIVE_INT64, v), H5Aclose(a);
    H5Sclose(sp);
  } else {
    const char *value = strings[take(r, STRINGS)];
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t a = H5Acreate2(o, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) H5Awrite(a, t, &value), H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
  }
  H5Oclose(o);
}

/* The file the recipe describes, as an image (NULL when none came out). */
static uint8_t *build(recipe *r, size_t *len) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_fapl_core(fapl, 4096, 0);
  H5Pset_create_intermediate_group(lcpl, 1);
  hid_t f = H5Fcreate("recipe.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  for (int op = 0; f >= 0 && op < 24 && r->n; op++) {
    switch (take(r, 5)) {
    case 0: case 1: make_dataset(f, lcpl, r); break;
    case 2: {
      hid_t g = H5Gcreate2(f, paths[take(r, PATHS)], lcpl, H5P_DEFAULT, H5P_DEFAULT);
      if (g >= 0) H5Gclose(g);
      break;
    }
    case 3: make_attribute(f, r, 0); break;
    default: make_attribute(f, r, 1); break;
    }
  }
  uint8_t *image = NULL;
  if (f >= 0 && H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0) {
    ssize_t size = H5Fget_file_image(f, NULL, 0);
    if (size > 0 && (image = malloc((size_t)size)) && H5Fget_file_image(f, image, (size_t)size) != size) {
      free(image);
      image = NULL;
    }
    *len = size > 0 ? (size_t)size : 0;
  }
  if (f >= 0) H5Fclose(f);
  H5Pclose(lcpl);
  H5Pclose(fapl);
  return image;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int raw = -1;
  if (raw < 0) {
    raw = getenv("NLE_FUZZ_RAW") != NULL;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* the recipe's failed steps are expected */
  }
  nle_ctx *ctx = fuzz_ctx();
  if (!size) return 0;
  nle_read_opts o;
  nle_read_opts_init(&o);
  static const char *const inner[] = {NULL, NULL, NULL, "X", "obs/cell_type", "obs/side", "g/x", "matrix"};
  o.sparse_ok = data[0] & 1;
  o.transpose = (data[0] >> 1) & 1;
  int flags = (data[0] & 4 ? NLE__READ_LABELS : 0) | (data[0] & 8 ? NLE__READ_MATLAB : 0);
  const char *path = inner[(data[0] >> 4) & 7], *name = data[0] & 128 ? "fuzz.h5ad" : "fuzz.h5";
  recipe r = {data + 1, size - 1};
  size_t len = 0;
  uint8_t *image = raw ? NULL : build(&r, &len);
  nle_dataset *ds = NULL;
  if (raw) nle__parse_hdf5(ctx, name, data + 1, size - 1, path, &o, flags, &ds);
  else if (image) nle__parse_hdf5(ctx, name, image, len, path, &o, flags, &ds);
  nle_dataset_free(&ds);
  /* whatever the outcome, the reader closed everything it opened */
  if (!raw && H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) abort();
  free(image);
  return 0;
}
