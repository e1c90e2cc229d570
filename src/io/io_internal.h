/* io_internal.h — shared pieces of the readers and writers: atomic output
 * files, whole-file loading, dataset construction. */
#ifndef NLE_IO_INTERNAL_H
#define NLE_IO_INTERNAL_H

#include "../core/internal.h"

#include <stdio.h>

/* An output file being written under a temporary name in its final folder. */
typedef struct {
  FILE *f;
  char *tmp_path;
  char *final_path;
  int immediate; /* renamed at once even inside an output transaction
                    (checkpoints: they must exist when the run dies) */
} nle__afile;

nle_status nle__afile_open(nle_ctx *ctx, const char *path, nle__afile *af);
/* Flushes, syncs and renames into place, or, inside an output transaction
 * (nle_outputs_begin), hands the completed temporary to the transaction,
 * which renames it at the commit; on any failure removes the temporary. */
nle_status nle__afile_commit(nle_ctx *ctx, nle__afile *af);
void nle__afile_abort(nle__afile *af);

/* nlembed's own binary files (records.c): named arrays after a header that
 * names the kind of file. Writing: open, put records, nle__afile_commit. Types:
 * 'd' double, 'f' float, 'l' int64, 'i' int32, 's' text. */
nle_status nle__rec_open(nle_ctx *ctx, const char *path, const char *kind, nle__afile *af);
void nle__rec_put(nle__afile *af, const char *name, char type, const void *data, uint64_t count);
void nle__rec_put_text(nle__afile *af, const char *name, const char *text);

typedef struct {
  char name[32];
  char type;
  uint64_t count;
  const void *data; /* inside the file's buffer, 8-byte aligned */
} nle__rec_entry;

typedef struct {
  const char *path;
  uint8_t *buf;
  size_t len;
  nle__rec_entry *entries;
  size_t count;
} nle__rec_file;

#define NLE__REC_ANY UINT64_MAX
/* Reads the whole file and checks its kind. */
nle_status nle__rec_read(nle_ctx *ctx, const char *path, const char *kind, nle__rec_file *f);
/* Whether the file has a record `name` (for optional records). */
int nle__rec_has(const nle__rec_file *f, const char *name);
/* The record `name`, of `type` and `count` values (NLE__REC_ANY: any). */
nle_status nle__rec_get(nle_ctx *ctx, const nle__rec_file *f, const char *name, char type, uint64_t count,
                        const void **data);
nle_status nle__rec_text(nle_ctx *ctx, const nle__rec_file *f, const char *name, char *out, size_t cap);
void nle__rec_free(nle__rec_file *f);
/* A copy of record `name` (count doubles, all finite). */
nle_status nle__rec_copy_doubles(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, double **dst);

/* Reads a whole file into memory (checked against the memory cap). */
nle_status nle__read_file(nle_ctx *ctx, const char *path, uint8_t **buf, size_t *len);

/* A dataset with an allocated rows x cols matrix and no labels. */
/* A C-order .npy file read in chunks straight into the matrix (a 3 GB file
 * needs 3 GB, not 6); *handled 0 (and NLE_OK) when the file is not one,
 * for the whole-file reader to take. */
nle_status nle__read_npy_file(nle_ctx *ctx, const char *path, nle_dataset **out, int *handled);
nle_status nle__dataset_new(nle_ctx *ctx, const char *name, size_t rows, size_t cols,
                            nle_dataset **out);
/* Integer labels from a single-column matrix (values must be whole numbers in
 * [0, 2^24)); `where` names the source in error texts. */
nle_status nle__labels_from_column(nle_ctx *ctx, const char *where, const nle_matf *col,
                                   int32_t **labels, int32_t *n_classes);
/* Numbers string labels in sorted order and keeps the sorted names. */
nle_status nle__labels_from_strings(nle_ctx *ctx, char **strings, int64_t n, int32_t **labels,
                                    int32_t *n_classes, char ***class_names);

/* Built-in datasets: returns 1 and fills *out (or an error status in *status)
 * when `source` names one, 0 when it does not. */
int nle__dataset_builtin(nle_ctx *ctx, const char *source, nle_dataset **out, nle_status *status);

/* Lower-case file extension including the dot ("" if none). */
const char *nle__path_ext(const char *path, char *buf, size_t len);

/* Parses a buffer of any supported format, recognised from its first bytes. */
nle_status nle__parse_buffer(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                             const nle_read_opts *opts, int depth, nle_dataset **out);

/* Streamed inflation (gz.c). Once the first MiB (or all, when shorter) is
 * out, the judge sees it: it may refuse it, bound what is kept (*limit, e.g.
 * a header's declared size; the rest is inflated to check the stream, then
 * dropped) or ask that every byte be text (*text: no NUL). */
typedef nle_status (*nle__inflate_judge)(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len,
                                         int whole, const void *user, size_t *limit, int *text);
nle_status nle__gunzip_judged(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                              nle__inflate_judge judge, const void *user, uint8_t **out, size_t *out_len);
/* The bytes an array with this header takes, header included (npy.c, idx.c);
 * whole: head is the entire file. */
nle_status nle__npy_extent(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                           size_t *bytes);
nle_status nle__idx_extent(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, size_t *bytes);
/* The errors of the whole lines in head, the start of a longer text (text.c). */
nle_status nle__probe_text(nle_ctx *ctx, const char *name, const char *head, size_t len,
                           const nle_read_opts *opts);

/* .npy writers (npy.c). */
nle_status nle__write_npy_f64(nle_ctx *ctx, const char *path, const double *a, int64_t r, int64_t c);
nle_status nle__write_npy_f32(nle_ctx *ctx, const char *path, const float *a, int64_t r, int64_t c);
nle_status nle__write_npy_i32(nle_ctx *ctx, const char *path, const int32_t *a, int64_t r, int64_t c,
                              int one_dim);

#endif
