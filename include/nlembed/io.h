/* nlembed/io.h — data in and out: readers recognised from content, built-in
 * datasets, writers, staged outputs. Part of the public header: include
 * <nlembed.h>, whose opening comment states the conventions every
 * declaration here follows. */
#ifndef NLEMBED_IO_H
#define NLEMBED_IO_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Data in and out                                                            */
/* ========================================================================== */

typedef enum {
  NLE_HEADER_AUTO = 0, /* a first row of names is a header; numbers beside
                          words in it are refused as ambiguous */
  NLE_HEADER_YES = 1,
  NLE_HEADER_NO = 2
} nle_header_mode;

typedef struct {
  char delimiter;         /* 0 (default): detect among ',', '\t', ';', ' ' */
  nle_header_mode header; /* default NLE_HEADER_AUTO */
  /* Column holding labels in a text file, 0-based; NLE_LABEL_NONE;
   * NLE_LABEL_LAST; NLE_LABEL_AUTO (default): the column a header names label,
   * labels, class, target, or y when there is no x (any case; a note says
   * so), else none.
   * Labels may be integers or strings: the classes are the distinct values
   * (numbers in numeric order, strings sorted), kept as class names. */
  int label_column;
  /* Reads the matrix transposed: its columns are the points (default
   * false). A folder of 10x Genomics files (matrix.mtx, features x cells) is
   * read with its cells as the points; transpose then gives the features. */
  bool transpose;
  /* Sparse files (CSR/CSC/COO in .h5ad, HDF5, .npz, .mat, Matrix Market
   * coordinates) stay sparse in nle_dataset.sparse (default false: they are
   * densified into X when N x D floats fit under the memory cap, else
   * NLE_ERR_MEMCAP). */
  bool sparse_ok;
} nle_read_opts;

#define NLE_LABEL_AUTO NLE_AUTO
#define NLE_LABEL_NONE (-1) /* no label column */
#define NLE_LABEL_LAST (-2) /* the last column */

NLE_API void nle_read_opts_init(nle_read_opts *o);

typedef struct {
  nle_matf *X;         /* N x D points, or NULL when sparse is set */
  nle_csr *sparse;     /* N x D points as a CSR with float values, columns
                          sorted, no repeated entries; only with the read
                          option sparse_ok (exactly one of X and sparse is
                          set) */
  int32_t *labels;     /* N class codes 0..n_classes-1, or NULL: the labels
                          read encoded by nle_labels_encode's rule (the
                          distinct values present, in increasing order) */
  int32_t n_classes;   /* the classes present (0 when no labels) */
  char **class_names;  /* n_classes names: the labels' values as read
                          ("1", "-1", "Ankle boot"); NULL for the
                          synthetic datasets, whose codes are their labels */
  char *name;          /* what was read: a path or a dataset name */
} nle_dataset;

/* Reads points from a file or a built-in dataset name.
 *   files:  CSV/TSV/whitespace text, NumPy .npy (float32/64, (u)int8-64, bool,
 *           C or Fortran order), IDX (MNIST format), Matrix Market
 *           (coordinate: sparse; array: dense), any of these gzip'ed; HDF5
 *           and AnnData .h5ad, NumPy .npz (np.savez, scipy.sparse.save_npz),
 *           MATLAB .mat (v5, v7, v7.3); the format is recognised from the
 *           content, not the name.
 *   inside: "FILE:NAME" names an array inside an HDF5 file ("data.h5:/g/x",
 *           "cells.h5ad:obsm/X_pca"), a .npz member ("a.npz:key") or a .mat
 *           variable ("b.mat:X"). Without a name: an .h5ad's X, else the
 *           file's only two-dimensional numeric array (several: an error
 *           listing them).
 *   folder: a folder of 10x Genomics files (matrix.mtx[.gz]): cells as points.
 *   names:  "fashion-mnist" (Debian's dataset-fashion-mnist: 70,000 x 784 with
 *           labels), "fashion-mnist-train", "fashion-mnist-test"; synthetic
 *           "swissroll:N", "spiral:N", "blobs:N" (seeded by the context).
 * Rejects NaN/Inf, ragged rows, empty and truncated files with NLE_ERR_FORMAT
 * or NLE_ERR_VALUE and an error text naming the file and the line/offset (or
 * the array inside it). */
NLE_API nle_status nle_dataset_read(nle_ctx *ctx, const char *source,
                                    const nle_read_opts *opts, nle_dataset **out);
NLE_API void nle_dataset_free(nle_dataset **ds);

/* Reads labels (one integer or string per point) from a file of any supported
 * format with a single column, from a data file's label column (opts'
 * label_column, or the header's label column with NLE_LABEL_AUTO; opts NULL:
 * single columns only), from a column inside a container
 * ("cells.h5ad:obs/cell_type": categorical, string, integer or boolean
 * columns; "a.npz:y"; "b.mat:y"), or from a dataset name. When
 * expected_n > 0 a different count is an error. */
NLE_API nle_status nle_labels_read(nle_ctx *ctx, const char *source, const nle_read_opts *opts, int64_t expected_n,
                                   int32_t **labels, int64_t *n, int32_t *n_classes, char ***class_names);
NLE_API void nle_class_names_free(char ***names, int32_t n_classes);

/* Parsers on a memory buffer (what the file readers use; handy for fuzzing).
 * name is used in error texts only. */
NLE_API nle_status nle_parse_text(nle_ctx *ctx, const char *name, const char *buf,
                                  size_t len, const nle_read_opts *opts, nle_dataset **out);
NLE_API nle_status nle_parse_npy(nle_ctx *ctx, const char *name, const uint8_t *buf,
                                 size_t len, nle_dataset **out);
NLE_API nle_status nle_parse_idx(nle_ctx *ctx, const char *name, const uint8_t *buf,
                                 size_t len, nle_dataset **out);
/* Inflates a gzip/zlib buffer; NLE_ERR_FORMAT for corrupt or truncated data. */
NLE_API nle_status nle_gunzip(nle_ctx *ctx, const char *name, const uint8_t *buf,
                              size_t len, uint8_t **out, size_t *out_len);

/* Writers. Every file is written to a temporary name in the same folder and
 * renamed into place when complete, so a failure never leaves a partial file
 * nor replaces a good one. The format follows the extension: ".npy", or text
 * (".csv", ".tsv", ".txt"). */
NLE_API nle_status nle_write_matd(nle_ctx *ctx, const char *path, const nle_matd *m);
NLE_API nle_status nle_write_matf(nle_ctx *ctx, const char *path, const nle_matf *m);
NLE_API nle_status nle_write_labels(nle_ctx *ctx, const char *path, const int32_t *labels,
                                    int64_t n);
/* The same, written as the class names (one a line) when there are names
 * and the file is text; .npy holds the labels' values when every name is
 * an integer (labels read as numbers), else the codes. */
NLE_API nle_status nle_write_labels_named(nle_ctx *ctx, const char *path, const int32_t *labels, int64_t n,
                                          char *const *class_names, int32_t n_classes);
/* N x k int32 matrix (e.g. neighbour indices) as .npy or text. */
NLE_API nle_status nle_write_mati32(nle_ctx *ctx, const char *path, const int32_t *a,
                                    int64_t rows, int64_t cols);
/* Matrix Market coordinate (real, integer or pattern; general or symmetric,
 * 1-based) into a CSR with sorted columns; duplicates are an error. */
NLE_API nle_status nle_read_csr_mtx(nle_ctx *ctx, const char *path, nle_csr **m);
/* Matrix Market coordinate real general, 1-based. */
NLE_API nle_status nle_write_csr_mtx(nle_ctx *ctx, const char *path, const nle_csr *m);
/* Output transactions: between nle_outputs_begin and nle_outputs_commit
 * every file the library writes (checkpoints excepted) is completed under a
 * temporary name beside its target, and the commit renames them all into
 * place; nle_outputs_abort, or nle_ctx_free with the transaction open,
 * removes them, so a run that fails part-way leaves every earlier file as it
 * was. Temporaries are named .NAME.tmp.PID.XXXXXX; those of a process that
 * no longer exists are removed by the next write in their folder. */
NLE_API nle_status nle_outputs_begin(nle_ctx *ctx);
NLE_API nle_status nle_outputs_commit(nle_ctx *ctx);
NLE_API void nle_outputs_abort(nle_ctx *ctx);

/* Arbitrary text (e.g. a JSON line), atomically. */
NLE_API nle_status nle_write_text(nle_ctx *ctx, const char *path, const char *text);
/* NLE_OK when path's folder exists and is writable (checked before long work,
 * so a run does not fail only at its end). */
NLE_API nle_status nle_check_output_path(nle_ctx *ctx, const char *path);
/* The same, and that path's extension names one of `formats` (a mask; 0:
 * any name, e.g. a model file or a JSON line). */
enum {
  NLE_OUTPUT_DENSE = 1, /* .npy, .csv, .tsv, .txt (nle_write_matd and kin) */
  NLE_OUTPUT_MTX = 2,   /* .mtx (nle_write_csr_mtx) */
  NLE_OUTPUT_IMAGE = 4  /* .png, .svg (the tool's plots) */
};
NLE_API nle_status nle_check_output(nle_ctx *ctx, const char *path, unsigned formats);

/* A file of the caller's own format written as the library writes its own:
 * nle_output_open creates a temporary beside path and nle_output_stream
 * gives its stream (the caller writes, but does not close, it);
 * nle_output_close puts it in place (inside a transaction: at
 * nle_outputs_commit), and nle_output_abort removes it. Both free *out. */
typedef struct nle_output nle_output;
NLE_API nle_status nle_output_open(nle_ctx *ctx, const char *path, nle_output **out);
NLE_API FILE *nle_output_stream(nle_output *out);
NLE_API nle_status nle_output_close(nle_ctx *ctx, nle_output **out);
NLE_API void nle_output_abort(nle_output **out);

/* The interactive map page (`nlembed view`, docs/view.md): one
 * self-contained HTML file with a WebGL scatter plot of a 2-D embedding,
 * its labels as colours and a legend, its images on hover. The page's
 * script is compiled into the library when it was built with node and npm
 * (viewer/); nle_view_available says whether it was. */
typedef struct {
  const nle_matd *X;        /* N x 2 positions, finite as float32 */
  const int32_t *labels;    /* N class codes 0..n_classes-1, or NULL */
  int32_t n_classes;        /* 1..65,536 with labels */
  char *const *class_names; /* n_classes names for the legend, or NULL (the codes) */
  const nle_matf *images;   /* N rows of w*w grey or w*w*3 RGB values, or NULL:
                               [0, 255] kept, [0, 1] scaled by 255, others
                               stretched from their min..max */
  const char *title;        /* NULL: the file name of embedding_source */
  /* what X, the labels and the images were read from, recorded in the page
   * and named in messages; NULL: named as the fields ("X", "labels") */
  const char *embedding_source, *labels_source, *images_source;
  double point_size, alpha; /* pixels across, opacity in (0, 1]; 0: from N */
} nle_view_page;
NLE_API bool nle_view_available(void);
/* What nle_write_view_page checks of path before anything else, for a
 * caller to check before reading its inputs: the viewer built in, a name
 * ending in .html or .htm (else NLE_ERR_ARG), a writable folder. */
NLE_API nle_status nle_view_check_output(nle_ctx *ctx, const char *path);
/* Writes the page, staged as nle_output_open's files: a failed call leaves
 * no page. NLE_ERR_VALUE for data the page cannot hold. */
NLE_API nle_status nle_write_view_page(nle_ctx *ctx, const char *path, const nle_view_page *page);

/* The kind of one of nlembed's own binary files (a saved model "model",
 * a spectral model "spectral-model", a checkpoint), from its header. */
NLE_API nle_status nle_file_kind(nle_ctx *ctx, const char *path, char *kind, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_IO_H */
