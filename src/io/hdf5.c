/* hdf5.c — HDF5 files and AnnData .h5ad through libhdf5: a dataset or group
 * named inside the file (FILE:/group/name); by default an .h5ad's X (dense,
 * or a CSR/CSC group) or the file's only two-dimensional numeric dataset.
 * Label columns: an .h5ad's obs columns (categorical with codes and
 * categories, or the older codes beside obs/__categories; strings; numbers;
 * booleans). Sparse groups: AnnData's encoding-type csr_matrix/csc_matrix
 * (or h5sparse_format), 10x Genomics' matrix (data, indices, indptr, shape;
 * cells as points), MATLAB v7.3's data/ir/jc. HDF5's printing of its error
 * stack is switched off for the call (the caller's setting restored after)
 * and its deepest message quoted in ours. */
#include "io_internal.h"
#include "../core/comm.h"

#include <hdf5.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { PATH_CAP = 1024, MAX_DEPTH = 16, MAX_VISITS = 100000 };
/* elements read per HDF5 call (as doubles: 32 MiB) */
enum { CHUNK_ELEMS = 1 << 22 };

typedef struct {
  nle_ctx *ctx;
  const char *name; /* the file, as messages name it */
  hid_t file;
  int flags, transpose, sparse_ok;
} reader;

/* ---- errors ---------------------------------------------------------- */

static herr_t deepest(unsigned n, const H5E_error2_t *e, void *user) {
  if (n == 0 && e->desc) snprintf((char *)user, 200, "%s", e->desc);
  return 0;
}

/* "FILE:PATH: what (HDF5: its deepest message)" ("FILE: what" without a
 * path), HDF5's stack cleared. */
static nle_status fail(reader *r, nle_status s, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static nle_status fail(reader *r, nle_status s, const char *path, const char *fmt, ...) {
  char what[1024], why[200] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, deepest, why);
  H5Eclear2(H5E_DEFAULT);
  return nle__fail(r->ctx, s, "%s%s%s: %s%s%s%s", r->name, path ? ":" : "", path ? path : "", what,
                   why[0] ? " (HDF5: " : "", why, why[0] ? ")" : "");
}

/* A dataset's declared size need not be stored (HDF5 fills what was never
 * written): what is allocated from it is checked against the cap first. */
static nle_status room(reader *r, const char *where, double bytes, const char *what) {
  if (!nle__check_memory(r->ctx, bytes, what)) return NLE_OK;
  char full[1200];
  snprintf(full, sizeof full, "%s:%s", r->name, where);
  return nle__fail_prefix(r->ctx, full);
}

static const char *type_name(hid_t t, char *buf, size_t cap) {
  size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
  case H5T_INTEGER:
    snprintf(buf, cap, "%sint%zu", H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", size * 8);
    break;
  case H5T_FLOAT: snprintf(buf, cap, "float%zu", size * 8); break;
  case H5T_STRING: snprintf(buf, cap, "string"); break;
  case H5T_COMPOUND: snprintf(buf, cap, "compound (a table of fields)"); break;
  case H5T_ENUM: snprintf(buf, cap, "enum"); break;
  case H5T_ARRAY: snprintf(buf, cap, "array-typed"); break;
  case H5T_VLEN: snprintf(buf, cap, "variable-length"); break;
  case H5T_REFERENCE: snprintf(buf, cap, "reference"); break;
  case H5T_OPAQUE: snprintf(buf, cap, "opaque"); break;
  case H5T_BITFIELD: snprintf(buf, cap, "bitfield"); break;
  case H5T_TIME: snprintf(buf, cap, "time"); break;
  default: snprintf(buf, cap, "unknown-typed"); break;
  }
  return buf;
}

/* Integers, floats, and enums over integers (h5py's booleans). */
static int numeric_class(hid_t t) {
  H5T_class_t c = H5Tget_class(t);
  if (c == H5T_INTEGER || c == H5T_FLOAT) return 1;
  if (c != H5T_ENUM) return 0;
  hid_t base = H5Tget_super(t);
  int ok = base >= 0 && H5Tget_class(base) == H5T_INTEGER && H5Tget_size(base) <= 8;
  if (base >= 0) H5Tclose(base);
  return ok;
}

/* ---- small reads ------------------------------------------------------- */

/* A string attribute (fixed or variable length) into buf; 0 when absent or
 * not a single string. */
static int attr_string(hid_t obj, const char *attr, char *buf, size_t cap) {
  buf[0] = '\0';
  if (H5Aexists(obj, attr) <= 0) return 0;
  hid_t a = H5Aopen(obj, attr, H5P_DEFAULT);
  if (a < 0) return 0;
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a), mem = -1;
  int ok = 0;
  if (t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_STRING && H5Sget_simple_extent_npoints(sp) == 1) {
    mem = H5Tcopy(H5T_C_S1);
    /* HDF5 does not convert between character sets: read in the file's */
    if (mem >= 0) H5Tset_cset(mem, H5Tget_cset(t));
    if (H5Tis_variable_str(t) > 0) {
      char *p = NULL;
      if (mem >= 0 && H5Tset_size(mem, H5T_VARIABLE) >= 0 && H5Aread(a, mem, &p) >= 0 && p) {
        snprintf(buf, cap, "%s", p);
        ok = 1;
      }
      if (p) H5free_memory(p);
    } else {
      size_t size = H5Tget_size(t);
      char *tmp = size > 0 && size < 4096 ? calloc(1, size + 1) : NULL;
      if (tmp && mem >= 0 && H5Tset_size(mem, size + 1) >= 0 && H5Tset_strpad(mem, H5T_STR_NULLTERM) >= 0 &&
          H5Aread(a, mem, tmp) >= 0) {
        snprintf(buf, cap, "%s", tmp);
        ok = 1;
      }
      free(tmp);
    }
  }
  if (mem >= 0) H5Tclose(mem);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  H5Aclose(a);
  H5Eclear2(H5E_DEFAULT);
  return ok;
}

/* An integer attribute of `count` values (a shape); 0 when absent or not. */
static int attr_ints(hid_t obj, const char *attr, int64_t *v, hssize_t count) {
  if (H5Aexists(obj, attr) <= 0) return 0;
  hid_t a = H5Aopen(obj, attr, H5P_DEFAULT);
  if (a < 0) return 0;
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
  int ok = t >= 0 && sp >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Sget_simple_extent_npoints(sp) == count &&
           H5Aread(a, H5T_NATIVE_INT64, v) >= 0;
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  H5Aclose(a);
  H5Eclear2(H5E_DEFAULT);
  return ok;
}

/* Whether path (relative to loc) exists, each of its parts checked in turn
 * (H5Lexists wants the parents to exist). */
static int exists(hid_t loc, const char *path) {
  char part[PATH_CAP];
  size_t len = strlen(path);
  if (len >= sizeof part) return 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && path[i] != '/') continue;
    if (i == 0) continue; /* a leading '/' */
    memcpy(part, path, i);
    part[i] = '\0';
    if (H5Lexists(loc, part, H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return 0;
    }
  }
  return 1;
}

/* ---- listing a group's members ---------------------------------------- */

typedef struct {
  nle__name_list list;
  int skip_private; /* leave out _index and __categories (a dataframe's) */
} members;

static herr_t add_member(hid_t g, const char *name, const H5L_info_t *info, void *user) {
  (void)g;
  (void)info;
  members *m = user;
  if (m->skip_private && (!strcmp(name, "_index") || !strcmp(name, "__categories"))) return 0;
  nle__name_list_add(&m->list, name);
  return 0;
}

/* The names in the group at path ("/" the top), for messages. */
static const char *member_names(reader *r, const char *path, int skip_private, members *m) {
  memset(m, 0, sizeof *m);
  m->skip_private = skip_private;
  hid_t g = H5Gopen2(r->file, path, H5P_DEFAULT);
  if (g >= 0) {
    hsize_t idx = 0;
    H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, add_member, m);
    H5Gclose(g);
  }
  H5Eclear2(H5E_DEFAULT);
  return m->list.count ? nle__name_list_text(&m->list) : "nothing";
}

/* ---- numeric arrays ---------------------------------------------------- */

typedef struct {
  int rank;
  hsize_t dims[H5S_MAX_RANK];
  size_t rows, cols; /* dims[0] x the product of the others */
} shape;

static nle_status get_shape(reader *r, hid_t d, const char *where, shape *sh) {
  hid_t sp = H5Dget_space(d);
  int rank = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
  if (rank > 0) H5Sget_simple_extent_dims(sp, sh->dims, NULL);
  if (sp >= 0) H5Sclose(sp);
  if (rank < 0) return fail(r, NLE_ERR_FORMAT, where, "cannot read its shape");
  if (rank == 0) return fail(r, NLE_ERR_FORMAT, where, "a scalar (or no data), not an array");
  sh->rank = rank;
  uint64_t cols = 1;
  for (int i = 1; i < rank; i++) {
    if (sh->dims[i] && cols > ((uint64_t)1 << 62) / sh->dims[i])
      return fail(r, NLE_ERR_FORMAT, where, "shape too large");
    cols *= sh->dims[i];
  }
  if (sh->dims[0] == 0 || cols == 0 || sh->dims[0] > ((uint64_t)1 << 62))
    return fail(r, NLE_ERR_FORMAT, where, "empty array (%llu x %llu)", (unsigned long long)sh->dims[0],
                (unsigned long long)cols);
  sh->rows = (size_t)sh->dims[0];
  sh->cols = (size_t)cols;
  return NLE_OK;
}

/* Rows [r0, r0 + n) of d (its other dimensions whole) as doubles into buf
 * (n * cols of them): HDF5 converts integers and floats; enums (h5py's
 * booleans) are read in their own type and widened here. */
static nle_status read_rows(reader *r, hid_t d, hid_t ftype, const shape *sh, size_t r0, size_t n, double *buf,
                            const char *where) {
  hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
  for (int i = 0; i < sh->rank; i++) count[i] = sh->dims[i];
  start[0] = r0;
  count[0] = n;
  hsize_t total = (hsize_t)n * sh->cols;
  hid_t fsp = H5Dget_space(d), msp = H5Screate_simple(1, &total, NULL), mem = -1;
  herr_t e = fsp < 0 || msp < 0 ? -1 : H5Sselect_hyperslab(fsp, H5S_SELECT_SET, start, NULL, count, NULL);
  int is_enum = H5Tget_class(ftype) == H5T_ENUM;
  size_t esize = 8;
  H5T_sign_t sign = H5T_SGN_2;
  if (e >= 0 && is_enum) {
    mem = H5Tget_native_type(ftype, H5T_DIR_ASCEND);
    hid_t base = mem >= 0 ? H5Tget_super(mem) : -1;
    esize = base >= 0 ? H5Tget_size(base) : 0;
    sign = base >= 0 ? H5Tget_sign(base) : H5T_SGN_ERROR;
    if (base >= 0) H5Tclose(base);
    if (mem < 0 || esize == 0 || esize > 8 || sign == H5T_SGN_ERROR) e = -1;
  }
  if (e >= 0) e = H5Dread(d, is_enum ? mem : H5T_NATIVE_DOUBLE, msp, fsp, H5P_DEFAULT, buf);
  if (mem >= 0) H5Tclose(mem);
  if (msp >= 0) H5Sclose(msp);
  if (fsp >= 0) H5Sclose(fsp);
  if (e < 0) return fail(r, NLE_ERR_FORMAT, where, "cannot read rows %zu to %zu", r0, r0 + n - 1);
  if (is_enum) {
    /* widened from the end, so that no value is overwritten before read */
    const uint8_t *raw = (const uint8_t *)buf;
    for (size_t k = (size_t)total; k-- > 0;) {
      uint64_t u = 0;
      memcpy(&u, raw + k * esize, esize); /* little-endian host */
      if (sign == H5T_SGN_2 && esize < 8 && (u >> (esize * 8 - 1)) & 1) u |= ~(uint64_t)0 << (esize * 8);
      buf[k] = sign == H5T_SGN_2 ? (double)(int64_t)u : (double)u;
    }
  }
  return NLE_OK;
}

/* A numeric dataset as an N x D matrix (more dimensions flattened), in
 * chunks of rows, each value checked. stored_transposed: MATLAB's layout.
 * Under NLE__READ_SHARE: this rank's rows alone (a hyperslab of rows; the
 * messages name a row by its place in the whole array). */
static nle_status read_numeric(reader *r, hid_t d, hid_t ftype, const char *where, int stored_transposed,
                               nle_dataset **out) {
  shape sh;
  nle_status s = get_shape(r, d, where, &sh);
  if (s) return s;
  if (stored_transposed && sh.rank != 2)
    return fail(r, NLE_ERR_FORMAT, where, "a MATLAB variable of %d dimensions, expected 2", sh.rank);
  nle__row_range rows = {0, sh.rows};
  if (r->flags & NLE__READ_SHARE) rows = nle__rank_rows(sh.rows, nle__ranks(r->ctx), nle__rank(r->ctx));
  nle_dataset *ds;
  char full[PATH_CAP + 200];
  snprintf(full, sizeof full, "%s:%s", r->name, where);
  s = nle__dataset_new(r->ctx, full, rows.end - rows.begin, sh.cols, &ds);
  if (s) return s;
  size_t per = CHUNK_ELEMS / sh.cols ? CHUNK_ELEMS / sh.cols : 1;
  if (per > sh.rows) per = sh.rows;
  double *buf = nle__malloc(r->ctx, per * sh.cols * sizeof *buf, "an HDF5 read buffer");
  if (!buf) s = NLE_ERR_NOMEM;
  for (size_t r0 = rows.begin; !s && r0 < rows.end; r0 += per) {
    size_t n = rows.end - r0 < per ? rows.end - r0 : per;
    s = read_rows(r, d, ftype, &sh, r0, n, buf, where);
    for (size_t k = 0; !s && k < n * sh.cols; k++) {
      const char *bad = nle__float_problem(buf[k]);
      if (bad)
        s = nle__fail(r->ctx, NLE_ERR_VALUE, "%s:%s: element [%zu, %zu]: %s value", r->name, where,
                      r0 + k / sh.cols, k % sh.cols, bad);
      else
        ds->X->data[(r0 - rows.begin) * sh.cols + k] = (float)buf[k];
    }
  }
  free(buf);
  if (!s && stored_transposed != r->transpose) s = nle__dataset_transpose(r->ctx, ds);
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

/* A one-dimensional dataset's length, checked to be `want` unless want < 0. */
static nle_status vector_length(reader *r, hid_t d, const char *where, int64_t want, int64_t *len) {
  shape sh;
  nle_status s = get_shape(r, d, where, &sh);
  if (!s && sh.rank != 1)
    s = fail(r, NLE_ERR_FORMAT, where, "%d-dimensional, expected one dimension", sh.rank);
  if (!s && want >= 0 && (int64_t)sh.rows != want)
    s = fail(r, NLE_ERR_FORMAT, where, "%zu values, expected %lld", sh.rows, (long long)want);
  if (!s) *len = (int64_t)sh.rows;
  return s;
}

/* ---- strings and categories -------------------------------------------- */

static void free_strings(char **s, int64_t n) {
  if (!s) return;
  for (int64_t i = 0; i < n; i++) free(s[i]);
  free(s);
}

/* A one-dimensional string dataset, each string copied. */
static nle_status read_strings(reader *r, hid_t d, hid_t ftype, const char *where, char ***out, int64_t *count) {
  *out = NULL;
  int64_t n;
  nle_status s = vector_length(r, d, where, -1, &n);
  if (s) return s;
  int variable = H5Tis_variable_str(ftype) > 0;
  size_t size = variable ? sizeof(char *) : H5Tget_size(ftype) + 1;
  if (!variable && size > 65536) return fail(r, NLE_ERR_FORMAT, where, "strings of %zu bytes", size - 1);
  if (nle__check_memory(r->ctx, (double)n * (double)(size + sizeof(char *)), "the strings"))
    return fail(r, NLE_ERR_MEMCAP, where, "%s", nle_ctx_error(r->ctx));
  char *raw = nle__calloc(r->ctx, (size_t)n, size, "strings");
  char **copy = nle__calloc(r->ctx, (size_t)n, sizeof *copy, "strings");
  hid_t mem = H5Tcopy(H5T_C_S1), sp = H5Dget_space(d);
  if (!raw || !copy) s = NLE_ERR_NOMEM;
  herr_t e = -1;
  if (!s && mem >= 0 && sp >= 0) {
    e = H5Tset_size(mem, variable ? H5T_VARIABLE : size);
    if (e >= 0 && !variable) e = H5Tset_strpad(mem, H5T_STR_NULLTERM);
    if (e >= 0) e = H5Tset_cset(mem, H5Tget_cset(ftype));
    if (e >= 0) e = H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw);
    if (e < 0) s = fail(r, NLE_ERR_FORMAT, where, "cannot read the strings");
  } else if (!s) {
    s = fail(r, NLE_ERR_FORMAT, where, "cannot read the strings");
  }
  for (int64_t i = 0; !s && i < n; i++) {
    const char *p = variable ? ((char **)(void *)raw)[i] : raw + (size_t)i * size;
    if (!(copy[i] = strdup(p ? p : ""))) s = nle__fail(r->ctx, NLE_ERR_NOMEM, "out of memory");
  }
  if (variable && e >= 0) {
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mem, sp, H5P_DEFAULT, raw);
#else
    H5Dvlen_reclaim(mem, sp, H5P_DEFAULT, raw);
#endif
  }
  if (mem >= 0) H5Tclose(mem);
  if (sp >= 0) H5Sclose(sp);
  free(raw);
  if (s) {
    free_strings(copy, n);
    return s;
  }
  *out = copy;
  *count = n;
  return NLE_OK;
}

/* A labels-only dataset (N x 0) from strings numbered in sorted order. */
static nle_status labels_from_strings(reader *r, const char *where, char **str, int64_t n, nle_dataset **out) {
  nle_dataset *ds;
  char full[PATH_CAP + 200];
  snprintf(full, sizeof full, "%s:%s", r->name, where);
  nle_status s = nle__dataset_new(r->ctx, full, (size_t)n, 0, &ds);
  if (!s) s = nle__labels_from_strings(r->ctx, full, str, n, &ds->labels, &ds->n_classes, &ds->class_names);
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

/* Category names: strings, or numbers written out. */
static nle_status read_categories(reader *r, const char *path, char ***names, int64_t *count) {
  *names = NULL;
  hid_t d = H5Dopen2(r->file, path, H5P_DEFAULT);
  if (d < 0) return fail(r, NLE_ERR_FORMAT, path, "cannot open the categories");
  hid_t t = H5Dget_type(d);
  char tn[64];
  nle_status s = NLE_OK;
  if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
    s = read_strings(r, d, t, path, names, count);
  } else if (t >= 0 && numeric_class(t)) {
    shape sh;
    s = get_shape(r, d, path, &sh);
    if (!s && sh.rank != 1) s = fail(r, NLE_ERR_FORMAT, path, "categories must be one-dimensional");
    if (!s) s = room(r, path, (double)sh.rows * 48, "the categories");
    double *v = s ? NULL : nle__malloc(r->ctx, sh.rows * sizeof *v, "categories");
    if (!s && !v) s = NLE_ERR_NOMEM;
    if (!s) s = read_rows(r, d, t, &sh, 0, sh.rows, v, path);
    char **str = s ? NULL : nle__calloc(r->ctx, sh.rows, sizeof *str, "categories");
    if (!s && !str) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < sh.rows; i++) {
      char num[40];
      snprintf(num, sizeof num, "%.9g", v[i]);
      if (!(str[i] = strdup(num))) s = nle__fail(r->ctx, NLE_ERR_NOMEM, "out of memory");
    }
    free(v);
    if (s) free_strings(str, (int64_t)(str ? sh.rows : 0));
    else *names = str, *count = (int64_t)sh.rows;
  } else {
    s = fail(r, NLE_ERR_UNSUPPORTED, path, "%s categories are not supported",
             t >= 0 ? type_name(t, tn, sizeof tn) : "unreadable");
  }
  if (t >= 0) H5Tclose(t);
  H5Dclose(d);
  return s;
}

/* A categorical column: integer codes into categories (-1: missing). */
static nle_status read_categorical(reader *r, const char *codes_path, const char *cats_path, const char *where,
                                   nle_dataset **out) {
  char **names = NULL;
  int64_t ncat = 0, n = 0;
  nle_status s = read_categories(r, cats_path, &names, &ncat);
  if (s) return s;
  hid_t d = H5Dopen2(r->file, codes_path, H5P_DEFAULT), t = d < 0 ? -1 : H5Dget_type(d);
  if (d < 0 || t < 0 || H5Tget_class(t) != H5T_INTEGER)
    s = fail(r, NLE_ERR_FORMAT, codes_path, "the codes are not integers");
  if (!s) s = vector_length(r, d, codes_path, -1, &n);
  if (!s) s = room(r, codes_path, (double)n * 12, "the category codes");
  int64_t *codes = s ? NULL : nle__malloc(r->ctx, (size_t)n * sizeof *codes, "category codes");
  if (!s && !codes) s = NLE_ERR_NOMEM;
  if (!s && H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, codes) < 0)
    s = fail(r, NLE_ERR_FORMAT, codes_path, "cannot read the codes");
  if (t >= 0) H5Tclose(t);
  if (d >= 0) H5Dclose(d);
  for (int64_t i = 0; !s && i < n; i++)
    if (codes[i] < 0 || codes[i] >= ncat)
      s = codes[i] < 0 ? nle__fail(r->ctx, NLE_ERR_VALUE, "%s:%s: point %lld has no category (a missing value)",
                                   r->name, where, (long long)i)
                       : nle__fail(r->ctx, NLE_ERR_FORMAT, "%s:%s: point %lld has code %lld, beyond the %lld categories",
                                   r->name, where, (long long)i, (long long)codes[i], (long long)ncat);
  if (!s && ncat > 16777216) s = nle__fail(r->ctx, NLE_ERR_FORMAT, "%s:%s: too many categories", r->name, where);
  nle_dataset *ds = NULL;
  char full[PATH_CAP + 200];
  snprintf(full, sizeof full, "%s:%s", r->name, where);
  if (!s) s = nle__dataset_new(r->ctx, full, (size_t)n, 0, &ds);
  if (!s && !(ds->labels = nle__malloc(r->ctx, (size_t)n * sizeof *ds->labels, "labels"))) s = NLE_ERR_NOMEM;
  /* the categories present, in the file's order (pandas keeps unused ones) */
  int32_t *used = NULL, C = 0;
  if (!s) {
    for (int64_t i = 0; i < n; i++) ds->labels[i] = (int32_t)codes[i];
    s = nle_labels_encode(r->ctx, full, ds->labels, (size_t)n, ds->labels, &C, &used);
  }
  if (!s && !(ds->class_names = nle__calloc(r->ctx, C ? (size_t)C : 1, sizeof(char *), "the class names")))
    s = NLE_ERR_NOMEM;
  if (!s) {
    for (int32_t c = 0; c < C; c++) ds->class_names[c] = names[used[c]], names[used[c]] = NULL;
    ds->n_classes = C;
  }
  free(used);
  free(codes);
  free_strings(names, ncat);
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

/* ---- sparse groups ----------------------------------------------------- */

typedef struct {
  int by_columns, tenx;
  int64_t rows, cols;
  const char *ptr, *idx; /* member names: indptr/indices, or MATLAB's jc/ir */
} sparse_layout;

/* Whether group g is a sparse matrix, and its layout (rows < 0: it says it
 * is one but its shape is missing). */
static int sparse_group(hid_t g, sparse_layout *L) {
  char enc[64];
  int64_t shp[2] = {-1, -1};
  memset(L, 0, sizeof *L);
  L->ptr = "indptr";
  L->idx = "indices";
  if (attr_string(g, "encoding-type", enc, sizeof enc) && (!strcmp(enc, "csr_matrix") || !strcmp(enc, "csc_matrix"))) {
    L->by_columns = enc[2] == 'c';
  } else if (attr_string(g, "h5sparse_format", enc, sizeof enc) && (!strcmp(enc, "csr") || !strcmp(enc, "csc"))) {
    L->by_columns = enc[2] == 'c';
  } else if (H5Aexists(g, "MATLAB_sparse") > 0) {
    /* MATLAB v7.3: A (rows in the attribute) by columns: jc pointers, ir rows */
    int64_t rows = -1;
    L->by_columns = 1;
    L->ptr = "jc";
    L->idx = "ir";
    L->rows = attr_ints(g, "MATLAB_sparse", &rows, 1) ? rows : -1;
    L->cols = -1; /* from jc's length */
    return 1;
  } else if (exists(g, "data") && exists(g, "indices") && exists(g, "indptr") && exists(g, "shape") &&
             H5Aexists(g, "encoding-type") <= 0) {
    /* 10x Genomics: features x barcodes by columns, shape a dataset */
    hid_t d = H5Dopen2(g, "shape", H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    if (sp >= 0 && H5Sget_simple_extent_npoints(sp) == 2) H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, shp);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    H5Eclear2(H5E_DEFAULT);
    L->by_columns = L->tenx = 1;
    L->rows = shp[0];
    L->cols = shp[1];
    return 1;
  } else {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  if (!attr_ints(g, "shape", shp, 2)) attr_ints(g, "h5sparse_shape", shp, 2);
  L->rows = shp[0];
  L->cols = shp[1];
  return 1;
}

/* Opens member `m` of group g as a one-dimensional dataset of a numeric
 * type (integers when want_int). */
static nle_status open_member(reader *r, hid_t g, const char *where, const char *m, int want_int, hid_t *d, hid_t *t) {
  char tn[64];
  *d = *t = -1;
  if (!exists(g, m)) return fail(r, NLE_ERR_FORMAT, where, "a sparse matrix without its '%s' member", m);
  *d = H5Dopen2(g, m, H5P_DEFAULT);
  *t = *d >= 0 ? H5Dget_type(*d) : -1;
  char w[PATH_CAP + 16];
  snprintf(w, sizeof w, "%s/%s", where, m);
  if (*t < 0) return fail(r, NLE_ERR_FORMAT, w, "cannot open it");
  if (want_int ? H5Tget_class(*t) != H5T_INTEGER : !numeric_class(*t))
    return fail(r, NLE_ERR_UNSUPPORTED, w, "%s values, expected %s", type_name(*t, tn, sizeof tn),
                want_int ? "integers" : "numbers");
  return NLE_OK;
}

static void close_pair(hid_t d, hid_t t) {
  if (t >= 0) H5Tclose(t);
  if (d >= 0) H5Dclose(d);
}

static nle_status read_sparse(reader *r, hid_t g, const sparse_layout *L, const char *where, nle_dataset **out) {
  hid_t dp = -1, tp = -1, di = -1, ti = -1, dv = -1, tv = -1;
  int64_t np = 0, ni = 0, nv = 0;
  nle_status s = open_member(r, g, where, L->ptr, 1, &dp, &tp);
  char w[PATH_CAP + 16];
  snprintf(w, sizeof w, "%s/%s", where, L->ptr);
  if (!s) s = vector_length(r, dp, w, -1, &np);
  if (!s) s = open_member(r, g, where, L->idx, 1, &di, &ti);
  snprintf(w, sizeof w, "%s/%s", where, L->idx);
  if (!s) s = vector_length(r, di, w, -1, &ni);
  if (!s) s = open_member(r, g, where, "data", 0, &dv, &tv);
  snprintf(w, sizeof w, "%s/data", where);
  if (!s) s = vector_length(r, dv, w, ni, &nv);
  int64_t rows = L->rows, cols = L->cols;
  if (!s && L->ptr[0] == 'j') cols = np - 1; /* MATLAB: jc has one per column and one more */
  if (!s && (rows < 1 || cols < 1 || rows > INT32_MAX || cols > INT32_MAX))
    s = rows == -1 && cols == -1 ? fail(r, NLE_ERR_FORMAT, where, "a sparse matrix without its shape")
                                 : fail(r, NLE_ERR_FORMAT, where, "a sparse matrix of shape %lld x %lld",
                                        (long long)rows, (long long)cols);
  int64_t major = L->by_columns ? cols : rows, minor = L->by_columns ? rows : cols;
  snprintf(w, sizeof w, "%s/%s", where, L->ptr);
  if (!s && np != major + 1)
    s = fail(r, NLE_ERR_FORMAT, w, "%lld pointers for %lld %s (expected %lld)", (long long)np,
             (long long)major, L->by_columns ? "columns" : "rows", (long long)major + 1);
  nle_csr *M = NULL;
  char full[PATH_CAP + 200];
  snprintf(full, sizeof full, "%s:%s", r->name, where);
  /* the dataset: rows x cols, read the other way round for 10x and transposed */
  int flip = r->transpose != L->tenx;
  if (!s) s = nle__sparse_fits(r->ctx, full, flip ? cols : rows, flip ? rows : cols, nv, r->sparse_ok);
  if (!s && (s = nle_csr_alloc(r->ctx, major, minor, nv, NLE_F32, &M)) == NLE_ERR_MEMCAP) nle__fail_prefix(r->ctx, full);
  if (!s && H5Dread(dp, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, M->rowptr) < 0)
    s = fail(r, NLE_ERR_FORMAT, w, "cannot read it");
  snprintf(w, sizeof w, "%s/%s", where, L->idx);
  /* indices beyond int32 saturate in HDF5's conversion, and are then out of
   * range (the minor dimension is at most INT32_MAX) */
  if (!s && nv && H5Dread(di, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, M->colind) < 0)
    s = fail(r, NLE_ERR_FORMAT, w, "cannot read it");
  snprintf(w, sizeof w, "%s/data", where);
  if (!s && nv) {
    shape sh = {.rank = 1, .rows = (size_t)nv, .cols = 1};
    sh.dims[0] = (hsize_t)nv;
    size_t per = (size_t)nv < CHUNK_ELEMS ? (size_t)nv : CHUNK_ELEMS;
    double *buf = nle__malloc(r->ctx, per * sizeof *buf, "an HDF5 read buffer");
    if (!buf) s = NLE_ERR_NOMEM;
    float *val = M->val;
    for (size_t k0 = 0; !s && k0 < (size_t)nv; k0 += per) {
      size_t n = (size_t)nv - k0 < per ? (size_t)nv - k0 : per;
      s = read_rows(r, dv, tv, &sh, k0, n, buf, w);
      for (size_t k = 0; !s && k < n; k++) {
        const char *bad = nle__float_problem(buf[k]);
        if (bad) s = nle__fail(r->ctx, NLE_ERR_VALUE, "%s:%s: entry %zu: %s value", r->name, w, k0 + k, bad);
        else val[k0 + k] = (float)buf[k];
      }
    }
    free(buf);
  }
  close_pair(dp, tp);
  close_pair(di, ti);
  close_pair(dv, tv);
  if (s) {
    nle_csr_free(&M);
    return s;
  }
  s = nle__dataset_from_sparse(r->ctx, full, M, L->by_columns, r->transpose != L->tenx, r->sparse_ok, out);
  return s;
}

/* ---- objects ----------------------------------------------------------- */

static int is_categorical_group(hid_t g) {
  char enc[64];
  return (attr_string(g, "encoding-type", enc, sizeof enc) && !strcmp(enc, "categorical")) ||
         (exists(g, "codes") && exists(g, "categories"));
}

/* The older AnnData categorical: integer codes at parent/base, their
 * categories at parent/__categories/base. */
static int old_categories(reader *r, const char *path, char *cats, size_t cap) {
  const char *slash = strrchr(path, '/');
  int parent_len = slash ? (int)(slash - path) : 0;
  const char *base = slash ? slash + 1 : path;
  snprintf(cats, cap, "%.*s%s__categories/%s", parent_len, path, slash ? "/" : "", base);
  return exists(r->file, cats);
}

static nle_status categorical_as_data(reader *r, const char *path) {
  return nle__fail(r->ctx, NLE_ERR_UNSUPPORTED,
                   "%s:%s: a categorical column, not data (labels? give them with {@labels=%s:%s})", r->name, path,
                   r->name, path);
}

static nle_status read_dataset(reader *r, hid_t d, const char *path, nle_dataset **out) {
  hid_t t = H5Dget_type(d);
  char tn[64], cats[PATH_CAP + 32];
  nle_status s;
  if (t < 0) return fail(r, NLE_ERR_FORMAT, path, "cannot read its type");
  if (H5Tget_class(t) == H5T_STRING && !(r->flags & NLE__READ_LABELS)) {
    s = fail(r, NLE_ERR_UNSUPPORTED, path, "string values are not data (a label column? give it with {@labels=%s:%s})",
             r->name, path);
  } else if (H5Tget_class(t) == H5T_STRING) {
    char **str = NULL;
    int64_t n = 0;
    s = read_strings(r, d, t, path, &str, &n);
    if (!s) s = labels_from_strings(r, path, str, n, out);
    free_strings(str, n);
  } else if (numeric_class(t) && (r->flags & NLE__READ_SHARE) && ((r->flags & NLE__READ_MATLAB) || r->transpose)) {
    s = NLE_OK; /* not by rows: rank 0 reads it whole (rows.c) */
  } else if (numeric_class(t)) {
    int matlab = (r->flags & NLE__READ_MATLAB) != 0;
    char cls[32];
    if (matlab && attr_string(d, "MATLAB_class", cls, sizeof cls) &&
        (!strcmp(cls, "char") || !strcmp(cls, "cell") || !strcmp(cls, "struct")))
      s = fail(r, NLE_ERR_UNSUPPORTED, path, "a MATLAB %s variable, not a numeric matrix", cls);
    else if (!matlab && H5Tget_class(t) == H5T_INTEGER && old_categories(r, path, cats, sizeof cats))
      s = r->flags & NLE__READ_LABELS ? read_categorical(r, path, cats, path, out) : categorical_as_data(r, path);
    else
      s = read_numeric(r, d, t, path, matlab, out);
  } else {
    s = fail(r, NLE_ERR_UNSUPPORTED, path, "%s values are not supported (numbers; strings as labels)",
             type_name(t, tn, sizeof tn));
  }
  H5Tclose(t);
  return s;
}

static nle_status read_object(reader *r, const char *path, nle_dataset **out) {
  members m;
  if (strlen(path) >= PATH_CAP) return nle__fail(r->ctx, NLE_ERR_ARG, "%s: the path inside is too long", r->name);
  if (!exists(r->file, path)) {
    /* the deepest existing group, and what it holds */
    char parent[PATH_CAP];
    snprintf(parent, sizeof parent, "%s", path);
    for (;;) {
      char *slash = strrchr(parent, '/');
      if (slash) *slash = '\0';
      if (!slash || !parent[0]) {
        strcpy(parent, "/");
        break;
      }
      if (exists(r->file, parent)) break;
    }
    return nle__fail(r->ctx, NLE_ERR_ARG, "%s: nothing named '%s' inside (%s holds: %s)", r->name, path,
                     strcmp(parent, "/") ? parent : "the top level", member_names(r, parent, 0, &m));
  }
  hid_t o = H5Oopen(r->file, path, H5P_DEFAULT);
  if (o < 0) return fail(r, NLE_ERR_FORMAT, path, "cannot open it");
  nle_status s;
  H5I_type_t kind = H5Iget_type(o);
  sparse_layout L;
  if (kind == H5I_DATASET) {
    s = read_dataset(r, o, path, out);
  } else if (r->flags & NLE__READ_SHARE) {
    s = NLE_OK; /* a group (sparse, categorical): not by rows, rank 0 reads it whole (rows.c) */
  } else if (kind == H5I_GROUP && sparse_group(o, &L)) {
    s = read_sparse(r, o, &L, path, out);
  } else if (kind == H5I_GROUP && is_categorical_group(o) && !(r->flags & NLE__READ_LABELS)) {
    s = categorical_as_data(r, path);
  } else if (kind == H5I_GROUP && is_categorical_group(o)) {
    char codes[PATH_CAP + 16], cats[PATH_CAP + 16];
    snprintf(codes, sizeof codes, "%s/codes", path);
    snprintf(cats, sizeof cats, "%s/categories", path);
    s = read_categorical(r, codes, cats, path, out);
  } else if (kind == H5I_GROUP) {
    s = nle__fail(r->ctx, NLE_ERR_ARG, "%s: '%s' is a group, not an array: name one inside it (it holds: %s)",
                  r->name, path, member_names(r, path, 1, &m));
  } else {
    s = nle__fail(r->ctx, NLE_ERR_ARG, "%s: '%s' is not an array", r->name, path);
  }
  H5Oclose(o);
  return s;
}

/* ---- the default array ------------------------------------------------- */

typedef struct {
  reader *r;
  int labels, matlab, visits, depth;
  char prefix[PATH_CAP];
  char first[PATH_CAP];  /* the first candidate's path */
  nle__name_list found;  /* the candidates */
  nle__name_list others; /* the other datasets, for a message */
} search;

static herr_t visit(hid_t g, const char *name, const H5L_info_t *info, void *user);

static void consider(search *q, hid_t g, const char *name, const char *path) {
  hid_t o = H5Oopen(g, name, H5P_DEFAULT);
  if (o < 0) return;
  H5I_type_t kind = H5Iget_type(o);
  sparse_layout L;
  int candidate = 0;
  char note[PATH_CAP + 64];
  if (kind == H5I_DATASET) {
    hid_t t = H5Dget_type(o), sp = H5Dget_space(o);
    int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    hsize_t dims[H5S_MAX_RANK] = {0};
    if (rank > 0) H5Sget_simple_extent_dims(sp, dims, NULL);
    int numeric = t >= 0 && numeric_class(t), text = t >= 0 && H5Tget_class(t) == H5T_STRING;
    if (q->labels)
      candidate = (numeric || text) && (rank == 1 || (q->matlab && rank == 2 && (dims[0] == 1 || dims[1] == 1)));
    else
      candidate = numeric && rank == 2;
    if (q->matlab && candidate) {
      char cls[32];
      if (attr_string(o, "MATLAB_class", cls, sizeof cls) && (!strcmp(cls, "char") || !strcmp(cls, "cell")))
        candidate = 0;
    }
    if (!candidate) {
      char tn[64];
      snprintf(note, sizeof note, "%s (%d-D %s)", path, rank, t >= 0 ? type_name(t, tn, sizeof tn) : "?");
      nle__name_list_add(&q->others, note);
    }
    if (sp >= 0) H5Sclose(sp);
    if (t >= 0) H5Tclose(t);
  } else if (kind == H5I_GROUP) {
    if (!q->labels && sparse_group(o, &L)) {
      candidate = 1;
    } else if (q->labels && is_categorical_group(o)) {
      candidate = 1;
    } else if (q->depth < MAX_DEPTH && name[0] != '#') { /* MATLAB's #refs# */
      size_t len = strlen(q->prefix);
      if (len + strlen(name) + 2 < sizeof q->prefix) {
        snprintf(q->prefix + len, sizeof q->prefix - len, "%s/", name);
        q->depth++;
        hsize_t idx = 0;
        H5Literate(o, H5_INDEX_NAME, H5_ITER_INC, &idx, visit, q);
        q->depth--;
        q->prefix[len] = '\0';
      }
    }
  }
  if (candidate) {
    if (!q->found.count) snprintf(q->first, sizeof q->first, "%s", path);
    nle__name_list_add(&q->found, path);
  }
  H5Oclose(o);
}

static herr_t visit(hid_t g, const char *name, const H5L_info_t *info, void *user) {
  search *q = user;
  if (info->type != H5L_TYPE_HARD) return 0; /* soft and external links: not followed */
  if (++q->visits > MAX_VISITS) return 1;
  char path[PATH_CAP];
  if ((size_t)snprintf(path, sizeof path, "/%s%s", q->prefix, name) >= sizeof path) return 0;
  consider(q, g, name, path);
  H5Eclear2(H5E_DEFAULT);
  return 0;
}

static int is_anndata(reader *r) {
  char enc[64], ext[16];
  hid_t root = H5Gopen2(r->file, "/", H5P_DEFAULT);
  int yes = root >= 0 && attr_string(root, "encoding-type", enc, sizeof enc) && !strcmp(enc, "anndata");
  if (root >= 0) H5Gclose(root);
  H5Eclear2(H5E_DEFAULT);
  return yes || !strcmp(nle__path_ext(r->name, ext, sizeof ext), ".h5ad") || (exists(r->file, "X") && exists(r->file, "obs"));
}

static nle_status read_default(reader *r, nle_dataset **out) {
  members m;
  if (!(r->flags & NLE__READ_MATLAB) && is_anndata(r)) {
    if (r->flags & NLE__READ_LABELS) {
      const char *cols = exists(r->file, "obs") ? member_names(r, "obs", 1, &m) : "none";
      return nle__fail(r->ctx, NLE_ERR_ARG, "%s: name the label column as %s:obs/COLUMN (obs columns: %s)", r->name,
                       r->name, cols);
    }
    if (!exists(r->file, "X"))
      return nle__fail(r->ctx, NLE_ERR_ARG, "%s: an AnnData file without X: name an array as %s:PATH (it holds: %s)",
                       r->name, r->name, member_names(r, "/", 0, &m));
    return read_object(r, "X", out);
  }
  search *q = nle__calloc(r->ctx, 1, sizeof *q, "an HDF5 search");
  if (!q) return NLE_ERR_NOMEM;
  q->r = r;
  q->labels = (r->flags & NLE__READ_LABELS) != 0;
  q->matlab = (r->flags & NLE__READ_MATLAB) != 0;
  hid_t root = H5Gopen2(r->file, "/", H5P_DEFAULT);
  hsize_t idx = 0;
  if (root >= 0) {
    H5Literate(root, H5_INDEX_NAME, H5_ITER_INC, &idx, visit, q);
    H5Gclose(root);
  }
  H5Eclear2(H5E_DEFAULT);
  const char *what = q->labels ? "one-dimensional dataset (or categorical group)"
                               : "two-dimensional numeric dataset (or sparse group)";
  nle_status s;
  if (q->found.count == 1)
    s = read_object(r, q->first, out);
  else if (q->found.count > 1)
    s = nle__fail(r->ctx, NLE_ERR_ARG, "%s: %d candidates: name one as %s:PATH (%s)", r->name, q->found.count,
                  r->name, nle__name_list_text(&q->found));
  else
    s = nle__fail(r->ctx, NLE_ERR_FORMAT, "%s: no %s in it (it holds: %s)", r->name, what,
                  q->others.count ? nle__name_list_text(&q->others) : "no datasets");
  free(q);
  return s;
}

/* ---- entry points ------------------------------------------------------ */

/* libhdf5 as Debian builds it is not thread-safe: one reader at a time. */
static pthread_mutex_t hdf5_lock = PTHREAD_MUTEX_INITIALIZER;

void nle__hdf5_quiet_begin(nle__hdf5_quiet *q) {
  pthread_mutex_lock(&hdf5_lock);
  H5E_auto2_t fn = NULL;
  q->data = NULL;
  H5Eget_auto2(H5E_DEFAULT, &fn, &q->data);
  q->fn = (void (*)(void))fn;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void nle__hdf5_silence(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

void nle__hdf5_quiet_end(const nle__hdf5_quiet *q) {
  H5Eclear2(H5E_DEFAULT);
  H5Eset_auto2(H5E_DEFAULT, (H5E_auto2_t)q->fn, q->data);
  pthread_mutex_unlock(&hdf5_lock);
}

static nle_status run(nle_ctx *ctx, const char *name, const char *path, const uint8_t *image, size_t len,
                      const char *inner, const nle_read_opts *opts, int flags, nle_dataset **out) {
  *out = NULL;
  nle_read_opts defaults;
  opts = nle__read_opts_or_defaults(opts, &defaults);
  reader r = {ctx, name, -1, flags, opts->transpose, opts->sparse_ok};
  /* HDF5 prints its error stack on stderr unless told not to: off for this
   * call, the caller's own handler put back after */
  nle__hdf5_quiet quiet;
  nle__hdf5_quiet_begin(&quiet);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  nle_status s = NLE_OK;
  if (fapl < 0) s = fail(&r, NLE_ERR_NOMEM, NULL, "cannot start HDF5");
#if H5_VERSION_GE(1, 10, 7)
  /* a reader needs no lock, and some file systems refuse them */
  if (!s) H5Pset_file_locking(fapl, 0, 1);
#endif
  if (!s && image &&
      (H5Pset_fapl_core(fapl, 1 << 16, 0) < 0 || H5Pset_file_image(fapl, (void *)image, len) < 0))
    s = fail(&r, NLE_ERR_NOMEM, NULL, "cannot hold the file image");
  if (!s) {
    r.file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (r.file < 0) s = fail(&r, NLE_ERR_FORMAT, NULL, "not a readable HDF5 file (corrupt or truncated?)");
  }
  if (fapl >= 0) H5Pclose(fapl);
  if (!s) s = inner && *inner ? read_object(&r, inner, out) : read_default(&r, out);
  if (r.file >= 0) H5Fclose(r.file);
  nle__hdf5_quiet_end(&quiet);
  if (s) nle_dataset_free(out);
  return s;
}

/* HDF5's superblock is at 0 or after a user block of 512, 1024, ... bytes
 * (MATLAB v7.3 files start with their own 128-byte text, then HDF5 at 512:
 * the .mat reader, before this one in readers.def, takes them). */
int nle__hdf5_magic(const uint8_t *head, size_t len) {
  static const uint8_t signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (len < 8) return 0;
  if (!memcmp(head, signature, 8)) return 1;
  for (size_t at = 512; at <= len - 8; at *= 2)
    if (!memcmp(head + at, signature, 8)) return 1;
  return 0;
}

nle_status nle__read_hdf5(nle_ctx *ctx, const char *path, const char *inner, const nle_read_opts *opts, int flags,
                          nle_dataset **out) {
  return run(ctx, path, path, NULL, 0, inner, opts, flags, out);
}

nle_status nle__parse_hdf5(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                           const nle_read_opts *opts, int flags, nle_dataset **out) {
  if (len == 0) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: empty file", name);
  if (nle__check_memory(ctx, (double)len, "a copy of the HDF5 image")) return nle__fail_prefix(ctx, name);
  return run(ctx, name, name, buf, len, inner, opts, flags, out);
}
