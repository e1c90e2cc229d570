/* matfile.c — MATLAB .mat files (v5, v7 compressed, v7.3) through libmatio:
 * a variable named as FILE.mat:NAME, by default the file's only
 * two-dimensional numeric (or sparse) variable. MATLAB's rows are the
 * points; sparse variables (stored by columns) become CSR. A v7.3 file
 * libmatio cannot open (built without HDF5) goes to the HDF5 reader in its
 * MATLAB layout. A buffer is handed to libmatio through a memory file. */
#include "io_internal.h"

#include <matio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* libmatio logs through a process-wide function (by default: nowhere); its
 * last message is kept here for our error texts. */
static _Thread_local char last_message[240];

static void keep_message(int level, char *message) {
  (void)level;
  if (message) snprintf(last_message, sizeof last_message, "%s", message);
}

static void start_matio(void) {
  static atomic_int started;
  if (atomic_exchange(&started, 1)) return;
  Mat_LogInitFunc("nlembed", keep_message);
}

static nle_status fail(nle_ctx *ctx, nle_status s, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static nle_status fail(nle_ctx *ctx, nle_status s, const char *name, const char *fmt, ...) {
  char what[1024], why[sizeof last_message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(why, sizeof why, "%s", last_message);
  last_message[0] = '\0';
  for (char *p = why; *p; p++)
    if (*p == '\n') *p = ' ';
  return nle__fail(ctx, s, "%s: %s%s%s%s", name, what, why[0] ? " (matio: " : "", why, why[0] ? ")" : "");
}

static const char *class_name(enum matio_classes c) {
  switch (c) {
  case MAT_C_EMPTY: return "empty";
  case MAT_C_CELL: return "cell array";
  case MAT_C_STRUCT: return "struct";
  case MAT_C_OBJECT: return "object";
  case MAT_C_CHAR: return "char array";
  case MAT_C_SPARSE: return "sparse";
  case MAT_C_FUNCTION: return "function handle";
  case MAT_C_OPAQUE: return "opaque object";
  default: return "numeric";
  }
}

static int numeric_class(enum matio_classes c) { return c >= MAT_C_DOUBLE && c <= MAT_C_UINT64; }

/* Element k of an array of type t as a double; 0 with *ok = 0 for a type
 * that is not a number. */
static double element(const void *data, enum matio_types t, size_t k, int *ok) {
  switch (t) {
  case MAT_T_DOUBLE: return ((const double *)data)[k];
  case MAT_T_SINGLE: return ((const float *)data)[k];
  case MAT_T_INT8: return ((const int8_t *)data)[k];
  case MAT_T_UINT8: return ((const uint8_t *)data)[k];
  case MAT_T_INT16: return ((const int16_t *)data)[k];
  case MAT_T_UINT16: return ((const uint16_t *)data)[k];
  case MAT_T_INT32: return ((const int32_t *)data)[k];
  case MAT_T_UINT32: return ((const uint32_t *)data)[k];
  case MAT_T_INT64: return (double)((const int64_t *)data)[k];
  case MAT_T_UINT64: return (double)((const uint64_t *)data)[k];
  default: *ok = 0; return 0;
  }
}

static size_t element_size(enum matio_types t) {
  switch (t) {
  case MAT_T_DOUBLE: case MAT_T_INT64: case MAT_T_UINT64: return 8;
  case MAT_T_SINGLE: case MAT_T_INT32: case MAT_T_UINT32: return 4;
  case MAT_T_INT16: case MAT_T_UINT16: return 2;
  case MAT_T_INT8: case MAT_T_UINT8: return 1;
  default: return 0;
  }
}

/* rows x (the product of the other dimensions); 0 when empty or too large. */
static int var_shape(const matvar_t *v, size_t *rows, size_t *cols) {
  if (v->rank < 2 || !v->dims) return 0;
  uint64_t c = 1;
  for (int i = 1; i < v->rank; i++) {
    if (v->dims[i] && c > ((uint64_t)1 << 40) / v->dims[i]) return 0;
    c *= v->dims[i];
  }
  *rows = v->dims[0];
  *cols = (size_t)c;
  return *rows > 0 && c > 0 && *rows < ((size_t)1 << 40);
}

static nle_status read_dense(nle_ctx *ctx, const char *where, const matvar_t *v, int transpose, nle_dataset **out) {
  size_t rows, cols, es = element_size(v->data_type);
  if (!var_shape(v, &rows, &cols)) return fail(ctx, NLE_ERR_FORMAT, where, "empty or of an impossible shape");
  if (!es || !v->data || v->nbytes / es < rows * cols)
    return fail(ctx, NLE_ERR_FORMAT, where, "its data are missing or short (corrupt file?)");
  nle_dataset *ds;
  nle_status s = nle__dataset_new(ctx, where, transpose ? cols : rows, transpose ? rows : cols, &ds);
  if (s) return s;
  /* column-major: element (i, j) at i + j rows, dimensions past the second
   * flattened into j */
  for (size_t j = 0; !s && j < cols; j++)
    for (size_t i = 0; i < rows; i++) {
      int ok = 1;
      double x = element(v->data, v->data_type, i + j * rows, &ok);
      const char *bad = nle__float_problem(x);
      if (bad) {
        s = nle__fail(ctx, NLE_ERR_VALUE, "%s: element (%zu, %zu): %s value", where, i + 1, j + 1, bad);
        break;
      }
      ds->X->data[transpose ? j * rows + i : i * cols + j] = (float)x;
    }
  if (s) {
    nle_dataset_free(&ds);
    return s;
  }
  *out = ds;
  return NLE_OK;
}

static nle_status read_sparse(nle_ctx *ctx, const char *where, const matvar_t *v, const nle_read_opts *opts,
                              nle_dataset **out) {
  const mat_sparse_t *sp = v->data;
  if (v->rank != 2 || !v->dims || !sp) return fail(ctx, NLE_ERR_FORMAT, where, "a sparse variable without its data");
  size_t rows = v->dims[0], cols = v->dims[1];
  if (rows < 1 || cols < 1 || rows > INT32_MAX || cols > INT32_MAX)
    return fail(ctx, NLE_ERR_FORMAT, where, "a sparse matrix of %zu x %zu", rows, cols);
  if (!sp->jc || sp->njc != cols + 1)
    return fail(ctx, NLE_ERR_FORMAT, where, "%u column pointers for %zu columns (corrupt file?)", sp->njc, cols);
  size_t nnz = sp->jc[cols];
  if (nnz > sp->nir || nnz > sp->ndata || (nnz && (!sp->ir || !sp->data)) || !element_size(v->data_type))
    return fail(ctx, NLE_ERR_FORMAT, where, "%zu entries announced, %u row indices and %u values stored", nnz,
                sp->nir, sp->ndata);
  nle_csr *M = NULL;
  nle_status s = nle__sparse_fits(ctx, where, (int64_t)(opts->transpose ? cols : rows),
                                  (int64_t)(opts->transpose ? rows : cols), (int64_t)nnz, opts->sparse_ok);
  if (s) return s;
  s = nle_csr_alloc(ctx, (int64_t)cols, (int64_t)rows, (int64_t)nnz, NLE_F32, &M);
  if (s) return s == NLE_ERR_MEMCAP ? nle__fail_prefix(ctx, where) : s;
  for (size_t c = 0; c <= cols; c++) M->rowptr[c] = sp->jc[c];
  float *val = M->val;
  for (size_t k = 0; !s && k < nnz; k++) {
    /* a row index past INT32_MAX is out of range, as a negative one is */
    M->colind[k] = sp->ir[k] > INT32_MAX ? -1 : (int32_t)sp->ir[k];
    int ok = 1;
    double x = element(sp->data, v->data_type, k, &ok);
    const char *bad = nle__float_problem(x);
    if (bad) s = nle__fail(ctx, NLE_ERR_VALUE, "%s: sparse entry %zu: %s value", where, k + 1, bad);
    else val[k] = (float)x;
  }
  if (s) {
    nle_csr_free(&M);
    return s;
  }
  return nle__dataset_from_sparse(ctx, where, M, 1, opts->transpose, opts->sparse_ok, out);
}

static nle_status read_variable(nle_ctx *ctx, mat_t *mat, const char *name, const char *varname,
                                const nle_read_opts *opts, nle_dataset **out) {
  char where[1200];
  snprintf(where, sizeof where, "%s:%s", name, varname);
  matvar_t *info = Mat_VarReadInfo(mat, varname);
  if (!info) return fail(ctx, NLE_ERR_FORMAT, where, "cannot read the variable's header");
  size_t rows = 0, cols = 0;
  nle_status s = NLE_OK;
  if (info->isComplex)
    s = fail(ctx, NLE_ERR_UNSUPPORTED, where, "complex values are not supported");
  else if (!numeric_class(info->class_type) && info->class_type != MAT_C_SPARSE)
    s = fail(ctx, NLE_ERR_UNSUPPORTED, where, "a %s, not a numeric matrix", class_name(info->class_type));
  else if (info->class_type != MAT_C_SPARSE && !var_shape(info, &rows, &cols))
    s = fail(ctx, NLE_ERR_FORMAT, where, "an empty matrix");
  /* libmatio holds the variable in its own type before it is converted */
  else if (info->class_type != MAT_C_SPARSE &&
           nle__check_memory(ctx, (double)rows * (double)cols * 8, "the MATLAB variable"))
    s = nle__fail_prefix(ctx, where);
  Mat_VarFree(info);
  if (s) return s;
  matvar_t *v = Mat_VarRead(mat, varname);
  if (!v) return fail(ctx, NLE_ERR_FORMAT, where, "cannot read the variable (corrupt or truncated file?)");
  if (v->isComplex || (!numeric_class(v->class_type) && v->class_type != MAT_C_SPARSE))
    s = fail(ctx, NLE_ERR_UNSUPPORTED, where, "a %s, not a real numeric matrix", class_name(v->class_type));
  else if (v->class_type == MAT_C_SPARSE)
    s = read_sparse(ctx, where, v, opts, out);
  else
    s = read_dense(ctx, where, v, opts->transpose, out);
  Mat_VarFree(v);
  return s;
}

/* The variables that could be meant (2-D numeric or sparse; with labels,
 * vectors), for the default and for messages. */
static nle_status choose(nle_ctx *ctx, mat_t *mat, const char *name, int labels, char *chosen, size_t cap) {
  nle__name_list found = {0}, others = {0};
  matvar_t *v;
  Mat_Rewind(mat);
  int visits = 0;
  while ((v = Mat_VarReadNextInfo(mat)) && ++visits < 100000) {
    int real = !v->isComplex && (numeric_class(v->class_type) || v->class_type == MAT_C_SPARSE);
    int fits = real && v->rank == 2 && v->dims && v->dims[0] > 0 && v->dims[1] > 0 &&
               (!labels || v->dims[0] == 1 || v->dims[1] == 1);
    const char *vn = v->name ? v->name : "?";
    if (fits) {
      if (!found.count) snprintf(chosen, cap, "%s", vn);
      nle__name_list_add(&found, vn);
    } else {
      /* the reason it does not fit, not only its class: "X (numeric)" for
       * a complex or empty matrix said nothing */
      char note[200];
      const char *cls = class_name(v->class_type);
      size_t r0 = v->dims && v->rank >= 1 ? v->dims[0] : 0, c0 = v->dims && v->rank >= 2 ? v->dims[1] : 0;
      if (!real) snprintf(note, sizeof note, "%.100s (%s%s)", vn, v->isComplex ? "complex " : "", cls);
      else if (v->rank != 2) snprintf(note, sizeof note, "%.100s (%s with %d dimensions, not 2)", vn, cls, v->rank);
      else if (!r0 || !c0) snprintf(note, sizeof note, "%.100s (%s, empty: %zu x %zu)", vn, cls, r0, c0);
      else snprintf(note, sizeof note, "%.100s (%s %zu x %zu, not a vector)", vn, cls, r0, c0);
      nle__name_list_add(&others, note);
    }
    Mat_VarFree(v);
  }
  if (v) Mat_VarFree(v);
  if (found.count == 1) return NLE_OK;
  if (found.count > 1)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d candidate variables: name one as %s:NAME (%s)", name, found.count,
                     name, nle__name_list_text(&found));
  return fail(ctx, NLE_ERR_FORMAT, name, "no %s variable in it (it holds: %s)",
              labels ? "numeric vector" : "two-dimensional numeric or sparse",
              others.count ? nle__name_list_text(&others) : "no variables");
}

/* Whether varname is in the file; its variables listed into names if not. */
static int has_variable(mat_t *mat, const char *varname, nle__name_list *names) {
  matvar_t *v;
  int found = 0, visits = 0;
  Mat_Rewind(mat);
  while (!found && (v = Mat_VarReadNextInfo(mat)) && ++visits < 100000) {
    if (v->name && !strcmp(v->name, varname)) found = 1;
    else nle__name_list_add(names, v->name ? v->name : "?");
    Mat_VarFree(v);
  }
  Mat_Rewind(mat);
  return found;
}

/* A v5 file's variables are tagged elements after its 128-byte header:
 * each must end within the file (libmatio reads a truncated one as zeros). */
static nle_status check_v5_extent(nle_ctx *ctx, const char *name, const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NLE_OK; /* libmatio names the problem */
  uint8_t head[128];
  nle_status s = NLE_OK;
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (size < 128 || fseek(f, 0, SEEK_SET) != 0 || fread(head, 1, 128, f) != 128) {
    fclose(f);
    return fail(ctx, NLE_ERR_FORMAT, name, "truncated MATLAB header (%ld bytes)", size);
  }
  int big = head[126] == 'M' && head[127] == 'I';
  uint64_t version = load_uint(head + 124, 2, big);
  /* v7.3's text header says 0x0200: HDF5 checks itself */
  for (uint64_t at = 128, count = 0; !s && version == 0x0100 && at < (uint64_t)size && count < 1000000; count++) {
    uint8_t tag[8];
    if ((uint64_t)size - at < 8 || fseek(f, (long)at, SEEK_SET) != 0 || fread(tag, 1, 8, f) != 8) {
      s = fail(ctx, NLE_ERR_FORMAT, name, "byte %llu: a partial variable header (truncated file?)",
               (unsigned long long)at);
      break;
    }
    uint64_t type = load_uint(tag, 4, big), bytes = load_uint(tag + 4, 4, big);
    uint64_t end = at + 8 + bytes;
    if (type == 14) end = (end + 7) / 8 * 8; /* miMATRIX is padded to 8 bytes, miCOMPRESSED is not */
    if (bytes > (uint64_t)size || end > (uint64_t)size + (type == 14 ? 7 : 0))
      s = fail(ctx, NLE_ERR_FORMAT, name, "byte %llu: a variable of %llu bytes runs past the end of the file (truncated?)",
               (unsigned long long)at, (unsigned long long)bytes);
    at = end;
  }
  fclose(f);
  return s;
}

/* path: what libmatio opens; name: the file in messages. */
static nle_status read_mat(nle_ctx *ctx, const char *name, const char *path, const uint8_t *image, size_t len,
                           const char *inner, const nle_read_opts *opts, int flags, nle_dataset **out) {
  *out = NULL;
  nle_read_opts defaults;
  opts = nle__read_opts_or_defaults(opts, &defaults);
  nle__hdf5_quiet quiet;
  nle__hdf5_quiet_begin(&quiet);
  start_matio();
  nle__hdf5_silence(); /* Mat_LogInitFunc sets its own handler */
  last_message[0] = '\0';
  nle_status s = check_v5_extent(ctx, name, path);
  if (s) {
    nle__hdf5_quiet_end(&quiet);
    return s;
  }
  mat_t *mat = Mat_Open(path, MAT_ACC_RDONLY);
  if (!mat) {
    int v73 = image ? len >= 20 && !memcmp(image, "MATLAB 7.3 MAT-file", 19) : 0;
    if (!image) {
      FILE *f = fopen(path, "rb");
      char head[20] = "";
      v73 = f && fread(head, 1, 19, f) == 19 && !memcmp(head, "MATLAB 7.3 MAT-file", 19);
      if (f) fclose(f);
    }
    nle__hdf5_quiet_end(&quiet);
    if (v73) /* libmatio without HDF5: the file is HDF5 inside */
      return image ? nle__parse_hdf5(ctx, name, image, len, inner, opts, flags | NLE__READ_MATLAB, out)
                   : nle__read_hdf5(ctx, path, inner, opts, flags | NLE__READ_MATLAB, out);
    return fail(ctx, NLE_ERR_FORMAT, name, "not a readable MATLAB file (corrupt or truncated?)");
  }
  char chosen[256] = "";
  nle__name_list names = {0};
  if (inner && *inner) {
    if (!has_variable(mat, inner, &names))
      s = nle__fail(ctx, NLE_ERR_ARG, "%s: no variable '%s' in it (it holds: %s)", name, inner,
                    names.count ? nle__name_list_text(&names) : "no variables");
    else
      snprintf(chosen, sizeof chosen, "%s", inner);
  } else {
    s = choose(ctx, mat, name, (flags & NLE__READ_LABELS) != 0, chosen, sizeof chosen);
  }
  if (!s) s = read_variable(ctx, mat, name, chosen, opts, out);
  Mat_Close(mat);
  nle__hdf5_quiet_end(&quiet);
  return s;
}

/* The text header of a MATLAB v5, v7 or v7.3 file. */
int nle__mat_magic(const uint8_t *head, size_t len) {
  return len >= 20 && !memcmp(head, "MATLAB ", 7) && memmem(head, len < 116 ? len : 116, "MAT-file", 8);
}

nle_status nle__read_mat(nle_ctx *ctx, const char *path, const char *inner, const nle_read_opts *opts, int flags,
                         nle_dataset **out) {
  return read_mat(ctx, path, path, NULL, 0, inner, opts, flags, out);
}

nle_status nle__parse_mat(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                          const nle_read_opts *opts, int flags, nle_dataset **out) {
  *out = NULL;
  /* libmatio reads files: the buffer becomes one in memory */
  /* v7.3 is HDF5 inside, which a memory file does not serve (HDF5 resolves
   * the file's name): the HDF5 reader takes the image */
  if (len >= 19 && !memcmp(buf, "MATLAB 7.3 MAT-file", 19))
    return nle__parse_hdf5(ctx, name, buf, len, inner, opts, flags | NLE__READ_MATLAB, out);
  int fd = memfd_create("nlembed-mat", MFD_CLOEXEC);
  if (fd < 0) return nle__fail(ctx, NLE_ERR_IO, "%s: cannot make a memory file for libmatio", name);
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, buf + done, len - done);
    if (w <= 0) {
      close(fd);
      return nle__fail(ctx, NLE_ERR_IO, "%s: cannot write the memory file for libmatio", name);
    }
    done += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  nle_status s = read_mat(ctx, name, path, buf, len, inner, opts, flags, out);
  close(fd);
  return s;
}
