/* io_internal.h — shared pieces of the readers and writers: atomic output
 * files, whole-file loading, dataset construction. */
#ifndef NLE_IO_INTERNAL_H
#define NLE_IO_INTERNAL_H

#include "../core/internal.h"
#include "binary.h"

#include <float.h>
#include <math.h>
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
  uint32_t version; /* 1: no CRCs */
  int mapped;       /* buf is the file mapped (nle__rec_map) */
} nle__rec_file;

#define NLE__REC_ANY UINT64_MAX
/* Reads the whole file and checks its kind and every record's CRC. */
nle_status nle__rec_read(nle_ctx *ctx, const char *path, const char *kind, nle__rec_file *f);
/* The same with the file mapped (private, copy-on-write) instead of read
 * into an allocation: no copy of the bytes, and records used in place need
 * none either (nle__rec_keep_mapping). What cannot be mapped (an empty or
 * special file, a file system without mmap) is read as nle__rec_read does,
 * with its messages. nlembed replaces files by renaming, so a mapping keeps
 * its bytes while the file is rewritten; a file truncated in place by
 * another program would fault. */
nle_status nle__rec_map(nle_ctx *ctx, const char *path, const char *kind, nle__rec_file *f);
/* Takes the mapping over from f (NULL when f was read, not mapped): the
 * records' data stay valid after nle__rec_free until nle__rec_unmap. */
void *nle__rec_keep_mapping(nle__rec_file *f, size_t *len);
void nle__rec_unmap(void *map, size_t len);
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
/* Labels from a single-column matrix (whole numbers within +-2^24, the
 * single-precision range) and from strings (a column of numbers is numbers,
 * else names), encoded as classes by nle_labels_encode's rule, the class
 * values or names kept; `where` names the source in error texts. */
nle_status nle__labels_from_column(nle_ctx *ctx, const char *where, const nle_matf *col, int32_t **labels,
                                   int32_t *n_classes, char ***class_names);
nle_status nle__labels_from_strings(nle_ctx *ctx, const char *where, char **strings, int64_t n, int32_t **labels,
                                    int32_t *n_classes, char ***class_names);

/* Built-in datasets: returns 1 and fills *out (or an error status in *status)
 * when `source` names one, 0 when it does not. */
int nle__dataset_builtin(nle_ctx *ctx, const char *source, nle_dataset **out, nle_status *status);

/* Lower-case file extension including the dot ("" if none). */
const char *nle__path_ext(const char *path, char *buf, size_t len);

/* ---- The readers (readers.def lists them; readers.c, the dispatcher, walks
 * the list). A reader's entry points have these types (readers.def says
 * what each does); readers.c declares each row's from its row. */
typedef int nle__magic_fn(const uint8_t *head, size_t len);
typedef nle_status nle__parse_fn(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                                 const nle_read_opts *opts, int flags, nle_dataset **out);
typedef nle_status nle__read_fn(nle_ctx *ctx, const char *path, const char *inner, const nle_read_opts *opts,
                                int flags, nle_dataset **out);
enum { NLE__CONTAINER = 1 }; /* a reader's traits */

/* Parses a buffer of any supported format, recognised from its first bytes
 * (gzip'ed or not: depth 0; 1 once inflated). */
nle_status nle__parse_buffer(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                             const nle_read_opts *opts, int depth, nle_dataset **out);
/* A container file (whose first bytes a NLE__CONTAINER reader claims), or
 * "FILE:NAME" inside one: read, *handled set; a plain file: *handled 0 and
 * nothing done. */
nle_status nle__read_container(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int flags,
                               nle_dataset **out, int *handled);
/* Whether buf is text as far as the readers go: no other reader (nor gzip)
 * claims its first bytes. */
int nle__is_plain_text(const uint8_t *buf, size_t len);
/* text.c: opts, or the defaults written into *defaults when opts is NULL. */
const nle_read_opts *nle__read_opts_or_defaults(const nle_read_opts *opts, nle_read_opts *defaults);
/* A dense dataset as read (`read`: the read's status, returned when it
 * failed), transposed when the options ask; *ds freed if that fails. For
 * the readers whose format does not orient the data itself (sparse.c). */
nle_status nle__transpose_if_asked(nle_ctx *ctx, const char *name, const nle_read_opts *opts, nle_status read,
                                   nle_dataset **ds);
/* The dataset named `name` (as its source was given). */
nle_status nle__dataset_rename(nle_ctx *ctx, nle_dataset *ds, const char *name);
/* gz.c: whether the bytes start a gzip stream. */
int nle__gzip_magic(const uint8_t *head, size_t len);

/* Streamed inflation (gz.c). Once the first MiB (or all, when shorter) is
 * out, the judge sees it: it may refuse it, bound what is kept (*limit, e.g.
 * a header's declared size; the rest is inflated to check the stream, then
 * dropped) or ask that every byte be text (*text: no NUL). */
typedef nle_status nle__judge_fn(nle_ctx *ctx, const char *name, const uint8_t *head, size_t len, int whole,
                                const void *user, size_t *limit, int *text);
typedef nle__judge_fn *nle__inflate_judge;
nle_status nle__gunzip_judged(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                              nle__inflate_judge judge, const void *user, uint8_t **out, size_t *out_len);

/* What a .npy header says (npy.c): the element type, the order, the shape
 * as N x D ((N,) is N x 1, more dimensions flattened) and where the data
 * start; parsed from the whole array's bytes. */
typedef struct {
  elem_kind kind;
  int size, big, fortran;
  uint64_t rows, cols;
  size_t data; /* byte offset of the first element */
} nle__npy_header;
/* Whether the bytes start a .npy file (its magic string). */
int nle__npy_magic(const uint8_t *head, size_t len);
nle_status nle__npy_header_parse(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len,
                                 nle__npy_header *h);

/* NULL when x is a finite value within float range, else what it is (the
 * readers' common refusal of NaN and infinities). */
static inline const char *nle__float_problem(double x) {
  if (isnan(x)) return "NaN";
  if (!isfinite(x) || fabs(x) > FLT_MAX) return "infinite (or beyond float range)";
  return NULL;
}

/* ---- Containers: files holding named arrays (HDF5 and .h5ad, .mat, .npz).
 * A source "FILE:NAME" names one inside; without NAME the reader takes the
 * default (an .h5ad's X, else the only 2-D numeric array). */
enum {
  NLE__READ_LABELS = 1, /* for nle_labels_read: a label column (an .h5ad's
                           obs/NAME; a MATLAB row vector taken as a column) */
  NLE__READ_MATLAB = 2, /* HDF5 laid out by MATLAB (v7.3): variables
                           transposed, sparse as data/ir/jc */
  NLE__READ_SHARE = 4   /* hdf5.c under a communicator: a dense numeric
                           array's rows of this rank (nle__rank_rows) by
                           hyperslab; anything else read by no rank (NLE_OK,
                           no dataset) */
};
/* hdf5.c: a file by path, or a memory image (name for the messages). */
nle_status nle__read_hdf5(nle_ctx *ctx, const char *path, const char *inner, const nle_read_opts *opts, int flags,
                          nle_dataset **out);
nle_status nle__parse_hdf5(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                           const nle_read_opts *opts, int flags, nle_dataset **out);
/* HDF5's printing of its error stack (on by default) switched off, and the
 * caller's handler put back (hdf5.c; libmatio reads v7.3 through HDF5); the
 * pair also holds the lock that lets one thread at a time into libhdf5
 * (Debian's serial build is not thread-safe). Not nested. */
typedef struct {
  void (*fn)(void);
  void *data;
} nle__hdf5_quiet;
void nle__hdf5_quiet_begin(nle__hdf5_quiet *q);
void nle__hdf5_quiet_end(const nle__hdf5_quiet *q);
/* Off again, inside a begin/end pair (after a library that switched it on). */
void nle__hdf5_silence(void);
/* matfile.c: MATLAB v5/v7/v7.3 through libmatio (v7.3 through hdf5.c when
 * libmatio cannot open it); a buffer goes through a memory file. */
nle_status nle__read_mat(nle_ctx *ctx, const char *path, const char *inner, const nle_read_opts *opts, int flags,
                         nle_dataset **out);
nle_status nle__parse_mat(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                          const nle_read_opts *opts, int flags, nle_dataset **out);
/* npz.c: a zip of .npy members (np.savez, np.savez_compressed) or a
 * scipy.sparse.save_npz matrix. */
nle_status nle__parse_npz(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                          const nle_read_opts *opts, int flags, nle_dataset **out);
/* mtx.c: a Matrix Market file as data (coordinate: sparse; array: dense). */
nle_status nle__parse_mtx(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, int transpose,
                          const nle_read_opts *opts, nle_dataset **out);

/* ---- Sparse data (sparse.c). A dataset holding no matrix yet. */
nle_status nle__dataset_shell(nle_ctx *ctx, const char *name, nle_dataset **out);
/* Finishes a dataset from M, a compressed sparse matrix as read (float
 * values, each already checked finite; structure unchecked), and takes M:
 * the matrix A is M (by_columns 0: M's rows are A's rows) or M^T (by_columns
 * 1: M is A stored by columns); the dataset is A, or A^T when transpose.
 * Checks the pointers and indices, sorts each row's columns, refuses
 * repeated entries, then keeps it sparse (sparse_ok) or densifies it under
 * the memory cap. */
nle_status nle__dataset_from_sparse(nle_ctx *ctx, const char *name, nle_csr *M, int by_columns, int transpose,
                                    int sparse_ok, nle_dataset **out);
/* Before a sparse reader allocates anything for a dataset of rows x cols
 * (the dataset's orientation) with nnz entries: what it will hold must fit
 * the memory cap: rows x cols floats when it will be densified (not
 * sparse_ok), and the CSR built (rows + 1 pointers and their cursors, the
 * entries). So a 100-byte header announcing 2,000,000,000 rows is refused
 * at once, naming the file, rather than after gigabytes of row pointers. */
nle_status nle__sparse_fits(nle_ctx *ctx, const char *name, int64_t rows, int64_t cols, int64_t nnz, int sparse_ok);
/* A rows x cols CSR (float) from n (i, j, v) triplets (0-based, in range),
 * each row's columns sorted. A position given twice is refused with its two
 * entries' input indices in dup[0] < dup[1] (NLE_ERR_VALUE, nothing
 * recorded: the caller names them). */
nle_status nle__csr_from_triplets(nle_ctx *ctx, int64_t rows, int64_t cols, int64_t n, const int32_t *i,
                                  const int32_t *j, const float *v, nle_csr **out, int64_t dup[2]);
/* ds->X replaced by its transpose (rows become columns); ds unchanged on
 * failure. */
nle_status nle__dataset_transpose(nle_ctx *ctx, nle_dataset *ds);

/* A list of names for messages ("a, b, c, ... (12 in all)"): the first few
 * are kept, all are counted. */
typedef struct {
  char text[400];
  int count, shown;
} nle__name_list;
void nle__name_list_add(nle__name_list *l, const char *name);
const char *nle__name_list_text(nle__name_list *l);

/* .npy writers (npy.c). */
nle_status nle__write_npy_f64(nle_ctx *ctx, const char *path, const double *a, int64_t r, int64_t c);
nle_status nle__write_npy_f32(nle_ctx *ctx, const char *path, const float *a, int64_t r, int64_t c);
nle_status nle__write_npy_i32(nle_ctx *ctx, const char *path, const int32_t *a, int64_t r, int64_t c,
                              int one_dim);


/* ---- Distributed reading and writing (rows.c; issue 38, docs/mpi.md). */

/* INPUT read whole, as nle_dataset_read does alone (readers.c). */
nle_status nle__read_whole(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out);
/* nle_dataset_read under a communicator: this rank's canonical rows
 * (nle__rank_rows) of INPUT; a .npy read by offset, any other source read
 * whole by rank 0 and its rows scattered. */
nle_status nle__read_rows(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out);
/* nle_labels_read under a communicator: expected_n is this rank's count;
 * rank 0 reads them all, each rank receives its rows. */
nle_status nle__labels_read_rows(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int64_t expected_n,
                                 int32_t **labels, int64_t *n, int32_t *n_classes, char ***class_names);
/* Rank `rank`'s rows (nle__rank_rows) of the .npy at path read by offset
 * (C or Fortran order), value errors naming the row and column as a whole
 * read does; *handled 0 (and NLE_OK) when path is not a .npy this parses. */
nle_status nle__npy_read_share(nle_ctx *ctx, const char *path, int ranks, int rank, nle_dataset **out, int *handled);
/* The .npy header of a C-order rows x cols array (one_dim: shape (rows,))
 * into buf (at least 256 bytes); returns its length (a multiple of 64). */
size_t nle__npy_header_text(const char *descr, int64_t rows, int64_t cols, int one_dim, char *buf);
/* A .npy of every rank's rows, in rank order, in one file: rank 0 stages it
 * (header, size), every rank writes its rows at their offset, and rank 0
 * puts it in place (or hands it to the transaction) only when all did. */
nle_status nle__write_npy_rows(nle_ctx *ctx, const char *path, const char *descr, const void *data, size_t elem,
                               int64_t rows, int64_t cols, int one_dim);
/* nle_read_csr_mtx under a communicator: rank 0 reads the graph whole,
 * each rank receives its canonical rows (global column indices). */
nle_status nle__read_csr_rows(nle_ctx *ctx, const char *path, nle_csr **out);
/* Every rank's rows (row_bytes each) gathered in rank order: *all (free
 * it), *n rows in all. */
nle_status nle__gather_rows(nle_ctx *ctx, const void *data, size_t rows, size_t row_bytes, void **all, size_t *n);
/* Under a communicator: every rank's rows (row_bytes each) gathered in
 * rank order, rank 0 alone calling write(ctx, all, n, user) on them (the
 * outputs that cannot be written by offset: text, Matrix Market); the
 * outcome agreed. */
nle_status nle__write_gathered(nle_ctx *ctx, const void *data, size_t rows, size_t row_bytes,
                               nle_status (*write)(nle_ctx *ctx, const void *all, size_t n, const void *user),
                               const void *user);
/* nle_write_csr_mtx of every rank's rows (global column indices) gathered. */
nle_status nle__write_csr_gathered(nle_ctx *ctx, const char *path, const nle_csr *m);
/* readers.c: this rank's rows of an HDF5 file's (or FILE:NAME's) dense
 * numeric array by hyperslab; *out NULL (and NLE_OK) when the source is not
 * one (a sparse group, a MATLAB file, --transpose, not HDF5). */
nle_status nle__read_hdf5_share(nle_ctx *ctx, const char *source, const nle_read_opts *opts, nle_dataset **out);

#endif
