/* nlembed.h — the one public header of libnlembed, nonlinear dimensionality
 * reduction in C11.
 *
 * Conventions (read these once; every function below follows them):
 *
 *   - Names: `nle_` is public, `nle__` is internal (not in this header), `NLE_`
 *     is a macro or enumerator. Most names read module_object_verb
 *     (`nle_dataset_read`, `nle_model_eval`, `nle_outputs_commit`); the
 *     writers are `nle_write_*`, the kNN searches `nle_knn_<method>` and the
 *     kernel sums `nle_kernel_sums_<engine>`.
 *   - Argument order: the context first, then inputs, then options, then the
 *     out-pointers that receive results.
 *   - Every fallible call returns an `nle_status`: 0 is success, a negative value
 *     is an error, a positive value is a warning (the result is usable, e.g. an
 *     iteration that did not converge). The text of the last error, naming what
 *     failed and where, is in `nle_ctx_error(ctx)`.
 *   - The library never prints, never exits and never aborts; progress and log
 *     lines go through callbacks held by the context.
 *   - Ownership: the caller owns its arrays, and the library keeps no pointer to
 *     them after a call returns, except where a constructor says so: a model
 *     (nle_model_new) keeps its spec's matrices, which must outlive it, and the
 *     context keeps its callbacks' user pointers. What the library creates
 *     comes back through an out-pointer and is released with the matching
 *     `nle_*_free(&p)`, which sets the pointer to NULL and accepts NULL.
 *   - Options are plain structs filled with their defaults by `nle_*_opts_init`
 *     (or `nle_*_spec_init`); a zero means "off" or "none" where its comment
 *     says so, and an automatic choice is NLE_AUTO (a few zeros still stand
 *     for "automatic", each documented at its field);
 *     each field documents its default and range. A field documented as
 *     taking NLE_AUTO leaves the choice to the library, which resolves it
 *     from the data and the other options and reports what it chose.
 *   - Points are row-major `float` (N x D); embeddings row-major `double` (N x d).
 *   - Randomness comes only from the context's seed: the same seed gives the same
 *     result bit for bit, whatever the number of threads.
 */
#ifndef NLEMBED_H
#define NLEMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NLE_VERSION_MAJOR 0
#define NLE_VERSION_MINOR 1
#define NLE_VERSION_PATCH 0
#define NLE_VERSION_STRING "0.1.0"

/* What the shared library exports: the functions below and nothing else
 * (it is built with -fvisibility=hidden). */
#ifndef NLE_API
#if defined(__GNUC__) || defined(__clang__)
#define NLE_API __attribute__((visibility("default")))
#else
#define NLE_API
#endif
#endif

NLE_API const char *nle_version(void);

/* "Let the library choose": the value of an int, double or enum option field
 * that documents it. Never a valid value of any such field. */
#define NLE_AUTO (-2147483647 - 1)

/* ========================================================================== */
/* Core: status codes                                                         */
/* ========================================================================== */

/* One list generates the enum, the names and the messages, so they cannot
 * drift apart. */
#define NLE_STATUS_MAP(X)                                                     \
  X(OK, 0, "success")                                                         \
  X(WARN_NOT_CONVERGED, 1, "did not converge within the iteration limit")     \
  X(ERR_NOMEM, -1, "out of memory")                                           \
  X(ERR_ARG, -2, "invalid argument")                                          \
  X(ERR_IO, -3, "input/output error")                                         \
  X(ERR_FORMAT, -4, "malformed input")                                        \
  X(ERR_VALUE, -5, "NaN or infinite value in the data")                       \
  X(ERR_MEMCAP, -6, "request exceeds the memory cap")                         \
  X(ERR_NUMERIC, -7, "numerical failure in a linear-algebra routine")         \
  X(ERR_UNSUPPORTED, -8, "unsupported format or option")                      \
  X(ERR_CANCELLED, -9, "cancelled by the progress callback")

typedef enum {
#define NLE__STATUS_ENUM(name, code, msg) NLE_##name = code,
  NLE_STATUS_MAP(NLE__STATUS_ENUM)
#undef NLE__STATUS_ENUM
} nle_status;

/* "ERR_FORMAT" etc.; "UNKNOWN" for a value outside the list. */
NLE_API const char *nle_status_name(nle_status s);
/* A one-line description of the status itself (not of the last error). */
NLE_API const char *nle_status_message(nle_status s);

/* ========================================================================== */
/* Core: the context                                                          */
/* ========================================================================== */

typedef struct nle_ctx nle_ctx;

/* Called from the calling thread during long stages with the fraction done in
 * [0, 1]. Return non-zero to cancel: the stage then returns NLE_ERR_CANCELLED. */
typedef int (*nle_progress_fn)(void *user, const char *stage, double fraction);

/* Log lines (level 1 = summary, 2 = details, 3 = debug), sent only when the
 * level is at or below the context's verbosity. */
typedef void (*nle_log_fn)(void *user, int level, const char *line);

/* A context with the defaults: all cores, seed 1, verbosity 0, memory cap of
 * 80% of physical memory, no callbacks. NULL only when out of memory. */
NLE_API nle_ctx *nle_ctx_new(void);
NLE_API void nle_ctx_free(nle_ctx **ctx);

/* Threads for OpenMP kernels and BLAS; 0 (default) means every core. */
NLE_API void nle_ctx_set_threads(nle_ctx *ctx, int threads);
NLE_API int nle_ctx_threads(const nle_ctx *ctx);
/* Seed of every random stream (default 1). */
NLE_API void nle_ctx_set_seed(nle_ctx *ctx, uint64_t seed);
NLE_API uint64_t nle_ctx_seed(const nle_ctx *ctx);
/* 0 (default) silences the log callback; 1-3 let more through. */
NLE_API void nle_ctx_set_verbosity(nle_ctx *ctx, int verbosity);
NLE_API int nle_ctx_verbosity(const nle_ctx *ctx);
/* Largest dense allocation one request may make, in bytes; 0 means the
 * default (80% of physical memory). */
NLE_API void nle_ctx_set_max_memory(nle_ctx *ctx, size_t bytes);
NLE_API size_t nle_ctx_max_memory(const nle_ctx *ctx);
NLE_API void nle_ctx_set_progress(nle_ctx *ctx, nle_progress_fn fn, void *user);
NLE_API void nle_ctx_set_log(nle_ctx *ctx, nle_log_fn fn, void *user);
/* Text of the last error ("" if none): what failed and where. */
NLE_API const char *nle_ctx_error(const nle_ctx *ctx);
/* Status of the last error (NLE_OK if none). */
NLE_API nle_status nle_ctx_last_status(const nle_ctx *ctx);

/* ========================================================================== */
/* Core: dense matrices (row-major)                                           */
/* ========================================================================== */

typedef struct {
  size_t rows, cols;
  float *data; /* rows * cols, row i at data + i * cols */
} nle_matf;

typedef struct {
  size_t rows, cols;
  double *data;
} nle_matd;

/* Zero-filled; fails with NLE_ERR_MEMCAP past the context's memory cap. */
NLE_API nle_status nle_matf_alloc(nle_ctx *ctx, size_t rows, size_t cols, nle_matf **out);
NLE_API nle_status nle_matd_alloc(nle_ctx *ctx, size_t rows, size_t cols, nle_matd **out);
NLE_API void nle_matf_free(nle_matf **m);
NLE_API void nle_matd_free(nle_matd **m);
NLE_API nle_status nle_matd_to_matf(nle_ctx *ctx, const nle_matd *in, nle_matf **out);
NLE_API nle_status nle_matf_to_matd(nle_ctx *ctx, const nle_matf *in, nle_matd **out);
/* A copy of the rows listed in idx (length n_idx), in that order. */
NLE_API nle_status nle_matf_select_rows(nle_ctx *ctx, const nle_matf *in,
                                        const int64_t *idx, size_t n_idx, nle_matf **out);
NLE_API nle_status nle_matd_select_rows(nle_ctx *ctx, const nle_matd *in,
                                        const int64_t *idx, size_t n_idx, nle_matd **out);

/* ========================================================================== */
/* Core: sparse matrices (CSR)                                                */
/* ========================================================================== */

typedef enum { NLE_F32 = 0, NLE_F64 = 1 } nle_dtype;

typedef struct {
  int64_t rows, cols, nnz;
  int64_t *rowptr; /* rows + 1 entries; row i is [rowptr[i], rowptr[i+1]) */
  int32_t *colind; /* nnz column indices */
  nle_dtype dtype; /* type of val */
  void *val;       /* nnz values, float or double as dtype says */
} nle_csr;

/* An empty-structured matrix with room for nnz entries (rowptr zeroed). */
NLE_API nle_status nle_csr_alloc(nle_ctx *ctx, int64_t rows, int64_t cols, int64_t nnz,
                                 nle_dtype dtype, nle_csr **out);
NLE_API void nle_csr_free(nle_csr **m);
/* Value k as a double, whatever the dtype. */
NLE_API double nle_csr_value(const nle_csr *m, int64_t k);
/* The transpose, rows sorted by column index. */
NLE_API nle_status nle_csr_transpose(nle_ctx *ctx, const nle_csr *m, nle_csr **out);
/* Checks the structure: monotone rowptr, indices in range. NLE_ERR_FORMAT if
 * broken, with the first offending row in the error text. */
NLE_API nle_status nle_csr_validate(nle_ctx *ctx, const nle_csr *m);

/* ========================================================================== */
/* Core: random numbers                                                       */
/* ========================================================================== */

/* xoshiro256** seeded through splitmix64 from (seed, stream): every stream is
 * independent, so parallel code draws from stream = item index and the result
 * does not depend on scheduling. */
typedef struct {
  uint64_t s[4];
} nle_rng;

NLE_API void nle_rng_init(nle_rng *rng, uint64_t seed, uint64_t stream);
NLE_API uint64_t nle_rng_u64(nle_rng *rng);
NLE_API double nle_rng_uniform(nle_rng *rng);      /* [0, 1) with 53 random bits */
NLE_API double nle_rng_normal(nle_rng *rng);       /* standard normal */
NLE_API uint64_t nle_rng_below(nle_rng *rng, uint64_t n); /* uniform in [0, n), unbiased */
/* m distinct indices from [0, n), sorted ascending (m <= n). */
NLE_API void nle_rng_sample(nle_rng *rng, int64_t n, int64_t m, int64_t *out);
NLE_API void nle_rng_shuffle(nle_rng *rng, int64_t *a, int64_t n);

/* Monotonic wall-clock seconds, for timings. */
NLE_API double nle_time_seconds(void);

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
   * Labels may be integers or strings (strings are numbered in sorted order
   * and kept as class names). */
  int label_column;
} nle_read_opts;

#define NLE_LABEL_AUTO NLE_AUTO
#define NLE_LABEL_NONE (-1) /* no label column */
#define NLE_LABEL_LAST (-2) /* the last column */

NLE_API void nle_read_opts_init(nle_read_opts *o);

typedef struct {
  nle_matf *X;         /* N x D points */
  int32_t *labels;     /* N labels or NULL */
  int32_t n_classes;   /* 1 + largest label (0 when no labels) */
  char **class_names;  /* n_classes names or NULL */
  char *name;          /* what was read: a path or a dataset name */
} nle_dataset;

/* Reads points from a file or a built-in dataset name.
 *   files:  CSV/TSV/whitespace text, NumPy .npy (float32/64, uint8, int32/64,
 *           C or Fortran order), IDX (MNIST format), any of these gzip'ed; the
 *           format is recognised from the content, not the name.
 *   names:  "fashion-mnist" (Debian's dataset-fashion-mnist: 70,000 x 784 with
 *           labels), "fashion-mnist-train", "fashion-mnist-test"; synthetic
 *           "swissroll:N", "spiral:N", "blobs:N" (seeded by the context).
 * Rejects NaN/Inf, ragged rows, empty and truncated files with NLE_ERR_FORMAT
 * or NLE_ERR_VALUE and an error text naming the file and the line/offset. */
NLE_API nle_status nle_dataset_read(nle_ctx *ctx, const char *source,
                                    const nle_read_opts *opts, nle_dataset **out);
NLE_API void nle_dataset_free(nle_dataset **ds);

/* Reads labels (one integer or string per point) from a file of any supported
 * format with a single column, from a data file's label column (opts'
 * label_column, or the header's label column with NLE_LABEL_AUTO; opts NULL:
 * single columns only), or from a dataset name. When expected_n > 0 a
 * different count is an error. */
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
 * and the file is text; .npy keeps the integer codes. */
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

/* ========================================================================== */
/* Neighbours                                                                 */
/* ========================================================================== */

typedef struct {
  int k; /* neighbours per point, 1 <= k < N (default 10) */
} nle_knn_opts;

NLE_API void nle_knn_opts_init(nle_knn_opts *o);

/* Exact k nearest neighbours of every point among the others (self excluded),
 * by blocked GEMM distances with a partial selection per row; candidates are
 * re-ranked with directly computed distances so the result is exact up to
 * float rounding of |y_n - y_m|^2. Returns an N x N CSR (float values) with k
 * entries per row, sorted by squared distance, ties by index. */
NLE_API nle_status nle_knn_exact(nle_ctx *ctx, const nle_matf *Y, const nle_knn_opts *opts,
                                 nle_csr **graph);

/* The k nearest of the reference points Y to every row of Q (new points), by
 * the same certified GEMM search: an M x N CSR (float squared distances),
 * sorted, ties by index. */
NLE_API nle_status nle_knn_query(nle_ctx *ctx, const nle_matf *Y, const nle_matf *Q, int k, nle_csr **graph);

/* The k nearest among each point's candidates (an N x N graph, at least k
 * entries a row, e.g. the neighbours found among the first principal
 * components) by their squared distances in Y: an N x N CSR like
 * nle_knn_exact's (float squared distances, sorted, ties by index). */
NLE_API nle_status nle_knn_rerank(nle_ctx *ctx, const nle_matf *Y, const nle_csr *candidates, int k, nle_csr **graph);

typedef struct {
  int k;              /* neighbours per point, 1 <= k < N (default 10) */
  int n_trees;        /* random-projection trees, >= 1; NLE_AUTO (default):
                         4 + N^(1/4) / 2, at most 32 */
  int leaf_size;      /* largest leaf, >= 1; NLE_AUTO (default): max(60, k) */
  int max_candidates; /* NN-descent sample per point and iteration, >= 1;
                         NLE_AUTO (default): 30 */
  int max_iters;      /* NN-descent iterations, >= 1; NLE_AUTO (default):
                         max(5, log2 N) */
  double delta;       /* stop when fewer than delta N k entries change in an
                         iteration (default 0.001) */
} nle_knn_approx_opts;

NLE_API void nle_knn_approx_opts_init(nle_knn_approx_opts *o);

/* Approximate k nearest neighbours: a forest of random-projection trees seeds
 * every point's candidates (all pairs within each leaf, by GEMM), then
 * NN-descent refines them by local joins (Dong, Charikar and Li 2011) with
 * sampled new/old candidates and reverse neighbours. Deterministic for a given
 * seed whatever the number of threads. Same output as nle_knn_exact: rows
 * sorted by exact squared distance, ties by index. */
NLE_API nle_status nle_knn_approx(nle_ctx *ctx, const nle_matf *Y, const nle_knn_approx_opts *opts, nle_csr **graph);

typedef enum {
  NLE_KNN_AUTO = NLE_AUTO, /* whichever a cost model in N and D expects to be
                              faster (exact below ~40,000 points at D = 784) */
  NLE_KNN_EXACT = 0,
  NLE_KNN_APPROX = 1
} nle_knn_method;

/* The k-nearest-neighbour graph by the given method (approx: with the
 * options in `approx`, its k replaced by k); *used (may be NULL) receives
 * the method that ran. */
NLE_API nle_status nle_knn_graph(nle_ctx *ctx, const nle_matf *Y, int k, nle_knn_method method,
                                 const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used);
NLE_API const char *nle_knn_method_name(nle_knn_method m);
/* "auto", "exact", "approx" back to the method (-1 if unknown). */
NLE_API int nle_knn_method_parse(const char *name);

/* ========================================================================== */
/* Affinities                                                                 */
/* ========================================================================== */

/* Root finders for the entropic-affinity equation H_n(log beta) = log K.
 * The derivative-based ones run inside the bisection safeguard of
 * dissertation algorithm 1; the others are baselines. */
typedef enum {
  NLE_ROOT_HALLEY = 0,   /* third order, hyperbola through F, F', F'' (eq. 2.14) */
  NLE_ROOT_EULER = 1,    /* third order, parabola through F, F', F'' (eq. 2.13) */
  NLE_ROOT_NEWTON = 2,   /* second order */
  NLE_ROOT_BISECTION = 3,/* bisection in log beta inside the bounds */
  NLE_ROOT_BRENT = 4,    /* Brent's method in log beta inside the bounds */
  NLE_ROOT_RIDDER = 5,   /* Ridder's method in log beta inside the bounds */
  NLE_ROOT_CLASSIC = 6,  /* bisection on beta from beta = 1 with doubling, as in
                            the SNE/t-SNE reference codes (a baseline) */
  NLE_ROOT_HOUSEHOLDER = 7 /* Householder of order 8 (eq. 2.15 generalised): the
                            Taylor series of F in beta to order 8, from the
                            cumulants of the distances under p (no extra
                            exponentials), inverted by Newton on the polynomial */
} nle_root_method;

/* The order in which points are solved; each point starts from the solution
 * of the point before it in the order (dissertation sec. 2.3.4). */
typedef enum {
  NLE_ORDER_MST = 0,       /* BFS over a minimum spanning tree (Kruskal) of the
                              kappa-NN graph; start from the parent */
  NLE_ORDER_MSP = 1,       /* minimum spanning path (algorithm 2) */
  NLE_ORDER_DENSITY = 2,   /* D_kappa: by increasing distance to the kappa-th
                              neighbour */
  NLE_ORDER_SEQUENTIAL = 3,/* index order */
  NLE_ORDER_RANDOM = 4,    /* a seeded random permutation */
  NLE_ORDER_BOUNDS = 5     /* no warm start: every point from the middle of its
                              bounds (parallel) */
} nle_ea_order;

typedef struct {
  double perplexity;    /* K, 1 <= K < number of neighbours (default 30) */
  nle_root_method root; /* default NLE_ROOT_HOUSEHOLDER */
  nle_ea_order order;   /* default NLE_ORDER_MST */
  int kappa;            /* neighbours in the order's graph (default 10; at most k) */
  double tol;           /* |H_n - log K| at convergence (default 1e-10) */
  int maxit;            /* derivative steps before a forced bisection (20) */
  int max_evals;        /* evaluations per point before giving up (default 200) */
  bool rescale;         /* true (default): start from the parent's log beta plus
                           log(s_parent / s_child), s the sum of the first 2K
                           distances minus the nearest (exact when one distance
                           profile is a scaled copy of the other, as beta
                           scales with 1/distance^2); 0: the parent's log beta
                           itself, as in the dissertation */
} nle_ea_opts;

NLE_API void nle_ea_opts_init(nle_ea_opts *o);

typedef struct {
  int64_t n;
  double *beta;            /* N precisions, beta_n = 1 / (2 sigma_n^2) */
  nle_csr *P;              /* conditional p_{m|n} on the kNN graph, rows sum to 1 */
  double mean_iterations;  /* root-finding steps per point (evaluation at the
                              starting point not counted) */
  double mean_evaluations; /* entropy evaluations per point */
  int64_t bisection_points;/* points that needed at least one bisection step */
  int64_t degenerate_points;/* points whose neighbours are all equidistant:
                              uniform affinities, beta = 0 */
  double max_error;        /* max_n |H_n - log K| over non-degenerate points */
  int64_t steps_histogram[8]; /* points that took 0, 1, ..., 6 and >= 7 steps */
} nle_ea_result;

/* Entropic affinities (dissertation ch. 2) on a kNN graph with sorted squared
 * distances (nle_knn_exact): for every point the beta_n whose conditional
 * distribution over its neighbours has perplexity K, found in log beta inside
 * the bounds of theorem 2.2.2 (eqs. 2.9-2.11). Exact duplicates are handled
 * (their distances are zero); a point all of whose neighbours are at the same
 * distance cannot reach K < k and gets uniform affinities (counted in
 * degenerate_points); if every point is so (constant data) it is an error.
 * Returns NLE_WARN_NOT_CONVERGED if some point missed tol within max_evals. */
NLE_API nle_status nle_entropic_affinities(nle_ctx *ctx, const nle_csr *knn, const nle_ea_opts *opts,
                                           nle_ea_result **out);
NLE_API void nle_ea_result_free(nle_ea_result **r);

/* Entropy bounds of theorem 2.2.2 for one point's sorted squared distances
 * d[0..n-1] (n neighbours) and perplexity K, as [log beta_L, log beta_U];
 * p1 from eq. 2.11 (nle_ea_p1). Returns 0, or -1 when all distances are equal. */
NLE_API int nle_ea_bounds(const double *d, int n, double K, double p1, double *log_lo, double *log_hi);
/* The p1 of eq. 2.11 for n neighbours and perplexity K, by Newton's method. */
NLE_API double nle_ea_p1(int n, double K);
/* The entropy of exp(-beta d) / Z over the distances d[0..n-1], in nats. */
NLE_API double nle_ea_entropy(const double *d, int n, double beta);

/* W = (P + P^T) / 2, and divided by N when normalize (then it sums to 1). */
NLE_API nle_status nle_affinity_symmetrize(nle_ctx *ctx, const nle_csr *P, bool normalize, nle_csr **W);

typedef enum {
  NLE_AFF_GAUSSIAN = 0,   /* exp(-d^2 / (2 sigma^2)), one sigma */
  NLE_AFF_BINARY = 1,     /* 1 on the kNN graph */
  NLE_AFF_INVERSE = 2,    /* 1 / |y_n - y_m| (kernel eigenmaps seed) */
  NLE_AFF_SELF_TUNING = 3 /* exp(-d^2 / (sigma_n sigma_m)), sigma_n = distance
                             to the k-th neighbour (Zelnik-Manor and Perona) */
} nle_affinity_kind;

typedef struct {
  nle_affinity_kind kind; /* default NLE_AFF_GAUSSIAN */
  double sigma;           /* Gaussian width (> 0; default 1) */
  int tuning_k;           /* self-tuning neighbour (default 7, <= graph k) */
} nle_affinity_opts;

NLE_API void nle_affinity_opts_init(nle_affinity_opts *o);

/* A symmetric affinity matrix on the kNN graph (the union of both directions),
 * values as the kind says; the diagonal is zero. */
NLE_API nle_status nle_affinity_graph(nle_ctx *ctx, const nle_csr *knn, const nle_affinity_opts *opts, nle_csr **W);
/* The dense Gaussian affinity matrix over all pairs (N x N, under the memory
 * cap), diagonal zero. */
NLE_API nle_status nle_affinity_gaussian_dense(nle_ctx *ctx, const nle_matf *Y, double sigma, nle_matd **W);

/* Repulsive weights W- of the elastic embedding (EE paper eq. 6; notes 001). */
typedef enum {
  NLE_WNEG_UNIFORM = 0, /* w-_nm = 1 for n != m */
  NLE_WNEG_SQDIST = 1,  /* w-_nm = |y_n - y_m|^2 */
  NLE_WNEG_KNN = 2      /* |y_n - y_m|^2 on the kNN graph only (sparse) */
} nle_wneg_kind;

/* Dense N x N W- (uniform or squared distances), under the memory cap. */
NLE_API nle_status nle_repulsive_dense(nle_ctx *ctx, const nle_matf *Y, nle_wneg_kind kind, nle_matd **W);
/* Sparse W- on the symmetrised kNN graph (NLE_WNEG_KNN). */
NLE_API nle_status nle_repulsive_knn(nle_ctx *ctx, const nle_csr *knn, nle_csr **W);

/* ========================================================================== */
/* Spectral: graph Laplacians                                                 */
/* ========================================================================== */

/* The nev smallest eigenvalues (ascending) of the Laplacian of the symmetric
 * W (D - W, or I - D^-1/2 W D^-1/2 when normalised), and when vecs is not
 * NULL their eigenvectors as the columns of an N x nev matrix: ARPACK's
 * Lanczos on (L + eps I)^-1 through a CHOLMOD factor. The zero eigenvalue
 * comes once per connected component. */
NLE_API nle_status nle_laplacian_smallest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals,
                                          nle_matd **vecs);
/* The nev largest eigenvalues (ascending), by Lanczos on L. */
NLE_API nle_status nle_laplacian_largest(nle_ctx *ctx, const nle_csr *W, bool normalised, int nev, double *vals);
/* Laplacian eigenmaps (Belkin and Niyogi; slides 002): the d eigenvectors
 * after the constant one of L v = lambda D v, i.e. D^-1/2 times those of the
 * normalised Laplacian, as an N x d embedding; also the number of connected
 * components of W (more than 1 leaves the embedding degenerate). */
NLE_API nle_status nle_laplacian_eigenmap(nle_ctx *ctx, const nle_csr *W, int d, nle_matd **X, int *components);

/* ========================================================================== */
/* Spectral: PCA                                                              */
/* ========================================================================== */

typedef enum {
  NLE_PCA_AUTO = 0,      /* exact unless randomized is much cheaper (large D) */
  NLE_PCA_EXACT = 1,     /* eigendecomposition of the D x D covariance */
  NLE_PCA_RANDOMIZED = 2 /* randomized range finder + small SVD (Halko et al.) */
} nle_pca_solver;

typedef struct {
  int n_components;      /* d, 1 <= d <= min(N, D) (default 2) */
  bool center;           /* true (default): subtract the mean */
  bool whiten;           /* false (default); true: unit variance per component */
  nle_pca_solver solver; /* default NLE_PCA_AUTO */
  int oversample;        /* randomized: extra directions (default 10) */
  int power_iters;       /* randomized: subspace iterations (default 6) */
} nle_pca_opts;

NLE_API void nle_pca_opts_init(nle_pca_opts *o);

typedef struct {
  int64_t n_samples;
  int32_t dim, n_components;
  double *mean;               /* dim (zeros when not centred) */
  double *components;         /* n_components x dim, orthonormal rows */
  double *explained_variance; /* n_components, eigenvalues of the covariance */
  double total_variance;      /* trace of the covariance */
  int whiten;
  nle_pca_solver solver_used;
} nle_pca_model;

/* Fits PCA to Y (the covariance uses N - 1). Component signs are fixed so the
 * largest-magnitude loading is positive. */
NLE_API nle_status nle_pca_fit(nle_ctx *ctx, const nle_matf *Y, const nle_pca_opts *opts,
                               nle_pca_model **model);
/* Projects points: X = (Y - mean) V^T, divided by sqrt(variance) if whitened. */
NLE_API nle_status nle_pca_transform(nle_ctx *ctx, const nle_pca_model *model,
                                     const nle_matf *Y, nle_matd **X);
NLE_API void nle_pca_model_free(nle_pca_model **model);

/* ========================================================================== */
/* N-body: kernel sums                                                        */
/* ========================================================================== */

/* Kernels of the squared distance t = |x_n - x_m|^2. */
typedef enum {
  NLE_KERNEL_GAUSSIAN = 0, /* exp(-t): EE, s-SNE, SNE */
  NLE_KERNEL_STUDENT = 1,  /* 1 / (1 + t): t-SNE, t-EE */
  NLE_KERNEL_STUDENT2 = 2  /* 1 / (1 + t)^2: their gradients */
} nle_kernel;

/* FFT-accelerated interpolation (the grid method of Linderman et al. for
 * t-SNE, here for every kernel): charges are spread to a regular grid by
 * Lagrange interpolation on `order` equispaced nodes per box and dimension,
 * the kernel is applied by FFT, and the values interpolated back. Cost
 * O(N order^d + G log G) for G grid nodes, which grow with the extent of X,
 * not with N. Accuracy rises with the order and with narrower boxes. */
typedef struct {
  int order;        /* interpolation nodes per box and dimension, 1..12 (3) */
  double box_width; /* widest box side, in kernel length units (0.85) */
  int min_boxes;    /* at least this many boxes along the longest side (8) */
  int max_nodes;    /* at most this many nodes per dimension, >= order;
                       wider boxes beyond. NLE_AUTO (default): 65536 in
                       1-D, 1024 in 2-D, 128 in 3-D */
  double bh_ratio;  /* embedding models: an evaluation whose grid would
                       have more than bh_ratio N log2 N nodes (a map spread
                       far wider than its points need) goes to Barnes-Hut,
                       then the cheaper (0, the default: never; the CLI's
                       --repulsion auto: 1) */
} nle_fft_opts;
NLE_API void nle_fft_opts_init(nle_fft_opts *o);

/* Fast Gauss transform (dissertation sec. 5.2.2), Gaussian kernel only:
 * boxes of side sqrt(2) ratio kernel lengths; Hermite series for boxes
 * holding at least `cutoff` sources, Taylor series for boxes holding that
 * many targets, the Hermite-to-Taylor translation where both do, direct
 * sums otherwise; boxes further than `reach` box sides apart do not
 * interact. O(N order^d). Accuracy rises with the order. */
typedef struct {
  int order;    /* terms per dimension of each series, 1..12 (6) */
  double ratio; /* r, 0 < r < 1/sqrt 2 (0.5) */
  int cutoff;   /* points in a box before it gets a series, >= 0;
                   NLE_AUTO (default): order^d, order^3 / 2 in 3-D, at
                   least 5; each box pair then takes the cheapest of the
                   sums its boxes allow */
  int reach;    /* K, in box sides, 1..12 (4) */
} nle_fgt_opts;
NLE_API void nle_fgt_opts_init(nle_fgt_opts *o);

/* For every point of X (N x d, d = 1, 2 or 3): S[n] = sum_{m != n}
 * K(|x_n - x_m|^2) and, when Sx is not NULL, Sx[n, :] = sum_{m != n} K(...)
 * x_m (dissertation eq. 5.8), exactly in O(N^2 d). */
NLE_API nle_status nle_kernel_sums_exact(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, double *S, double *Sx);
/* The same by Barnes-Hut (dissertation sec. 5.2.1): a 2^d-ary tree of cells
 * (leaves of at most 8 points), and a cell of side l at distance D from x_n
 * to its centre of mass counts as all its points there when l / D < theta
 * (0: exact). O(N log N) for moderate theta; sums do not depend on the
 * number of threads. Accuracy for the Student kernels, measured on uniform
 * and clustered sets in 1-3 dimensions (tests/test_nbody.c): aggregate
 * relative error |S - S_exact| / |S_exact| <= 0.1 theta^2, worst point
 * <= 0.4 theta^2. */
NLE_API nle_status nle_kernel_sums_bh(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, double theta, double *S,
                                      double *Sx);

/* Kernel sums by FFT interpolation (nle_fft_opts above). */
NLE_API nle_status nle_kernel_sums_fft(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const nle_fft_opts *opts,
                                       double *S, double *Sx);

/* Gaussian sums by the fast Gauss transform (nle_fgt_opts, above the
 * models); the kernel is exp(-t). Sums do not depend on the thread count. */
NLE_API nle_status nle_kernel_sums_fgt(nle_ctx *ctx, const nle_matd *X, const nle_fgt_opts *opts, double *S,
                                       double *Sx);
/* The a-priori error bound of the fast Gauss transform in d dimensions per
 * unit of total charge: dissertation eq. 5.7 (the largest of eqs. 5.5-5.7)
 * plus exp(-(reach sqrt(2) ratio)^2) for the boxes left out. Loose: the
 * measured errors (nle_kernel_sums_error) are orders of magnitude lower. */
NLE_API double nle_fgt_error_bound(size_t d, const nle_fgt_opts *opts);

/* Measured error of approximate sums S (and Sx, may be NULL) against the
 * exact ones at `sample` points drawn with `seed`: O(sample N d). */
typedef struct {
  double sums;    /* sum |S_n - S*_n| / sum S*_n over the sample */
  double worst;   /* max |S_n - S*_n| / S*_n */
  double moments; /* |Sx - Sx*| / |Sx*| (Frobenius) over the sample; 0 without Sx */
  size_t sample;
} nle_sums_error;
NLE_API nle_status nle_kernel_sums_error(nle_ctx *ctx, const nle_matd *X, nle_kernel kernel, const double *S,
                                         const double *Sx, size_t sample, uint64_t seed, nle_sums_error *err);

/* ========================================================================== */
/* Nonlinear embeddings: models                                               */
/* ========================================================================== */

/* The models of dissertation sec. 3.2, written with a kernel K(d^2) of the
 * embedding distances: Gaussian exp(-d^2) or Student-t 1 / (1 + d^2).
 *   EE, t-EE (unnormalised): E = sum_nm w+_nm (-log K_nm) + lambda sum_nm w-_nm K_nm
 *   s-SNE, t-SNE:            E = sum_nm p_nm (-log K_nm) + lambda log sum_nm K_nm
 *   SNE (per point):         E = sum_n [sum_m p_m|n d_nm^2 + lambda log sum_m exp(-d_nm^2)]
 * Sums run over ordered pairs n != m; lambda = 1 gives the usual s-SNE, t-SNE
 * and SNE. The gradient is 4 sum_m [w+ (-K'/K) + lambda w- K'] (x_n - x_m)
 * (K' = dK/d(d^2); with K'/Z for the normalised models), i.e. 4 X L with
 * graph Laplacians (dissertation eqs. 3.3, 3.4). */
typedef enum {
  NLE_MODEL_EE = 0,   /* elastic embedding (EE paper eq. 5) */
  NLE_MODEL_SSNE = 1, /* symmetric SNE */
  NLE_MODEL_TSNE = 2, /* t-SNE */
  NLE_MODEL_SNE = 3,  /* SNE, conditional P (rows sum to 1) */
  NLE_MODEL_TEE = 4   /* EE with the Student-t kernel (notes 001) */
} nle_model_kind;

/* Repulsion engines (dissertation ch. 5). The fast ones serve the models
 * whose repulsion is a plain kernel sum: t-SNE, s-SNE, and EE and t-EE with
 * uniform W-, for d <= 3; E and the gradient are then approximate. EE and
 * t-EE with squared-distance W- given by features (Wneg_features) take the
 * FFT engine too: sum_m |f_n - f_m|^2 K_nm = |f_n|^2 S_n + S^{|f|^2}_n
 * - 2 f_n . S^f_n, kernel sums with D' + 2 charges (D' + 2 times the work). */
typedef enum {
  NLE_REPULSION_AUTO = NLE_AUTO, /* nle_embed: chosen from N, d and the model */
  NLE_REPULSION_EXACT = 0, /* all pairs, blocked, O(N^2 d) */
  NLE_REPULSION_BH = 1,    /* Barnes-Hut kernel sums, O(N log N) */
  NLE_REPULSION_FFT = 2,   /* FFT-interpolation kernel sums, O(N) */
  NLE_REPULSION_FGT = 3    /* fast Gauss transform, O(N); Gaussian models */
} nle_repulsion;

typedef struct {
  nle_model_kind kind;
  double lambda;        /* homotopy parameter, > 0 (EE paper's lambda) */
  const nle_csr *Wp;    /* attractive weights W+ (N x N): symmetric for EE,
                           t-EE, s-SNE, t-SNE (P summing to 1 for the last
                           two); conditional P for SNE */
  nle_wneg_kind wneg;   /* EE, t-EE: the repulsive weights W- */
  const nle_matd *Wneg_dense;  /* NLE_WNEG_SQDIST: the dense W- (or NULL) */
  const nle_csr *Wneg_sparse;  /* NLE_WNEG_KNN: the sparse W- (or NULL) */
  nle_repulsion engine;        /* how the repulsion is summed (default exact) */
  double theta;                /* Barnes-Hut opening angle, > 0 (0.5) */
  nle_fft_opts fft;            /* FFT interpolation (nle_fft_opts_init's) */
  nle_fgt_opts fgt;            /* fast Gauss transform (nle_fgt_opts_init's) */
  const nle_matf *Wneg_features; /* NLE_WNEG_SQDIST without the dense matrix:
                                    w-_nm = |f_n - f_m|^2 over these N x D'
                                    rows (e.g. the data after PCA); for the
                                    exact and FFT engines */
} nle_model_spec;

/* The defaults: t-SNE, lambda 1, uniform W-, the exact engine, theta 0.5,
 * the engines' default options; no W+ (the caller sets Wp). */
NLE_API void nle_model_spec_init(nle_model_spec *spec);

typedef struct nle_model nle_model;

/* Checks the spec against N and plans what every evaluation reuses (for SNE
 * the transpose of P). The model keeps pointers to the spec's matrices, which
 * must outlive it. */
NLE_API nle_status nle_model_new(nle_ctx *ctx, const nle_model_spec *spec, nle_model **model);
NLE_API void nle_model_free(nle_model **model);
/* E(X) and, when G is not NULL, its gradient (N x d, same shape as X), by the
 * exact all-pairs repulsion (blocked, OpenMP; deterministic). The model keeps
 * its work space between calls, so one model is not for evaluations from two
 * threads at once. */
NLE_API nle_status nle_model_eval(nle_ctx *ctx, nle_model *model, const nle_matd *X, double *E, nle_matd *G);
/* W+ for a model from a given affinity matrix A (N x N, >= 0): (A + A^T) / 2
 * for EE and t-EE, the same divided by its sum for s-SNE and t-SNE, and for
 * SNE A with every row normalised to 1. */
NLE_API nle_status nle_affinity_for_model(nle_ctx *ctx, const nle_csr *A, nle_model_kind kind, nle_csr **W);
/* NLE_OK when A is square with finite entries >= 0; else the first bad
 * entry's row and column (1-based, as in a Matrix Market file). */
NLE_API nle_status nle_affinity_check(nle_ctx *ctx, const nle_csr *A);
/* Changes lambda (for the homotopy; an optimiser planned on the model stays valid). */
NLE_API nle_status nle_model_set_lambda(nle_ctx *ctx, nle_model *model, double lambda);
NLE_API double nle_model_lambda(const nle_model *model);
/* Multiplies the attractive term by alpha >= 1 (t-SNE's early exaggeration;
 * 1 restores the model). */
NLE_API nle_status nle_model_set_exaggeration(nle_ctx *ctx, nle_model *model, double alpha);
/* Accuracy of the fast engines (dissertation sec. 5.4): t in [0, 1] runs
 * geometrically from coarse (t = 0: Barnes-Hut theta max(2, theta), FFT boxes
 * 4x the set width) to the spec's setting (t = 1, the default). */
NLE_API nle_status nle_model_set_accuracy(nle_ctx *ctx, nle_model *model, double t);
NLE_API double nle_model_accuracy(const nle_model *model);
NLE_API nle_repulsion nle_model_engine(const nle_model *model);

/* Bounds l1 <= lambda1* <= u1 on EE's critical lambda, where X = 0 stops
 * being the minimiser (EE paper eqs. 11-12): l1 = max(lambda_2(L+) /
 * lambda_N(L-), min w+/w-), u1 = min(min_i lambda_i(L+) / lambda_i(L-),
 * min_n L+_nn / L-_nn), eigenvalues ascending, from dense symmetric
 * eigendecompositions (N x N, under the memory cap). The paper prints the
 * first term of l1 as lambda_2+ / lambda_N+; lambda_N- is what the bound
 * L+ - lambda L- >= (lambda_2+ - lambda lambda_N-) I on 1^perp needs. */
NLE_API nle_status nle_ee_lambda_bounds(nle_ctx *ctx, const nle_csr *Wp, nle_wneg_kind wneg, const nle_matd *Wneg_dense,
                                        const nle_csr *Wneg_sparse, double *l1, double *u1);

/* The same bounds for large N without dense matrices: lambda_2 (and a few
 * more) of L+ by Lanczos on its sparse factor, lambda_N of L- by Lanczos (and
 * its small eigenvalues for a sparse W-; N for uniform W-); the diagonal and
 * pair terms exactly. Every term of u1 bounds lambda* on its own, so using
 * the first 12 eigenvalues instead of all N gives a valid, possibly looser,
 * u1; with dense W- (sqdist) u1 is the diagonal term alone. */
NLE_API nle_status nle_ee_lambda_bounds_lanczos(nle_ctx *ctx, const nle_csr *Wp, nle_wneg_kind wneg,
                                                const nle_matd *Wneg_dense, const nle_csr *Wneg_sparse, double *l1,
                                                double *u1);

/* The same for squared-distance W- given by features F (N x D'), in
 * O(nnz(W+) + N D'): the degrees of W- are N |f_n|^2 + sum_m |f_m|^2 for f
 * about its mean, lambda_N(L-) is bounded by twice the largest degree
 * (Gershgorin), and u1 is the diagonal term. */
NLE_API nle_status nle_ee_lambda_bounds_features(nle_ctx *ctx, const nle_csr *Wp, const nle_matf *F, double *l1,
                                                 double *u1);

/* ========================================================================== */
/* Nonlinear embeddings: optimisers                                           */
/* ========================================================================== */

/* Search directions B p = -g from partial Hessians (dissertation sec. 3.3),
 * with a backtracking line search (sufficient decrease; the first trial step
 * is the last accepted one). */
typedef enum {
  NLE_OPT_AUTO = NLE_AUTO, /* nle_embed: the model's recipe (SD for line searches, L-BFGS
                              where SD's factor would pass the memory cap) */
  NLE_OPT_SD = 0, /* spectral direction: B = 4 L+ + mu I, L+ the Laplacian of
                     W+ sparsified to kappa neighbours (at X = 0 for t-SNE), its
                     sparse Cholesky factor (CHOLMOD) computed once */
  NLE_OPT_FP = 1, /* fixed-point diagonal: B = 4 D+ */
  NLE_OPT_GD = 2, /* gradient descent: B = I */
  NLE_OPT_LBFGS = 3, /* limited-memory BFGS (two-loop recursion, memory m);
                        the first trial step of each line search is 1 */
  NLE_OPT_CG = 4, /* nonlinear conjugate gradients (Polak-Ribiere+, restart
                     to -g when not a descent direction) */
  NLE_OPT_SDM = 5 /* SD-: B = 4 L+ + mu I plus the psd diagonal blocks
                     (i = j) of the repulsive Hessian's 8 L^xx at X, solved by
                     linear CG preconditioned with SD's factor, exiting at a
                     relative residual of 0.1 or 50 iterations */
} nle_opt_kind;

typedef struct {
  nle_opt_kind kind;  /* default NLE_OPT_SD */
  int kappa;          /* SD: neighbours per point kept in L+, the largest
                         weights (default 7; 0 = all of W+) */
  int max_iters;      /* default 1000 */
  double tol;         /* stop when E_k - E_k+1 <= tol |E_k| five iterations in
                         a row (default 1e-6) */
  double grad_tol;    /* stop when max |g| <= grad_tol (default 1e-9) */
  double x_tol;       /* stop when |X_k+1 - X_k|_F <= x_tol |X_k|_F (the EE
                         paper's test for each lambda of a homotopy;
                         default 0: off) */
  double time_budget; /* seconds, 0 (default) for none */
  double c1;          /* sufficient-decrease constant (default 1e-4) */
  double shrink;      /* step shrink factor (default 0.5) */
  int memory;         /* L-BFGS: pairs kept (default 10) */
  /* Gradient descent as the t-SNE codes run it (fixed_rate, kind
   * NLE_OPT_GD, no line search): X += momentum * U - rate * gains * g. */
  bool fixed_rate;       /* false (default): the line search */
  double learning_rate;  /* fixed_rate: > 0 (default 200); nle_embed's
                            auto: max(N / (4 exaggeration), 50), then a
                            final rate of max(N / 2, 200), momentum 0.95 */
  double learning_rate_final; /* after the exaggeration phase: > 0, or
                            NLE_AUTO (default): learning_rate */
  double momentum;       /* after the exaggeration phase (default 0.8;
                            0.5 during it) */
  bool gains;            /* true (default): per-coordinate gains, +0.2 when the
                            gradient changes sign, x0.8 otherwise, >= 0.01 */
  double exaggeration;   /* attractive term x this for the first
                            exaggeration_iters (default 1 = none; t-SNE: 12) */
  int exaggeration_iters; /* default 250 */
  double sdm_tol;        /* SD-: CG exits at this relative residual (0.1) */
  int sdm_iters;         /* SD-: or after this many CG iterations (50) */
  int accuracy_iters;    /* fast engines: coarse to set accuracy over the
                            first this many iterations (0, the default: set
                            from the start); the line-search optimisers
                            re-evaluate E at X at each new accuracy */
  int energy_every;      /* fixed-rate runs: E at every this many iterations
                            (0, the default: at the start and the end only);
                            it needs a log1p per W+ entry, a third of a
                            t-SNE iteration, and the steps do not use it */
  /* Called after every iteration with the iteration count, the seconds
   * since the run started, E (with the exaggeration of a fixed-rate run's
   * early phase; NaN on the iterations energy_every skips), the evaluations
   * so far and the accepted step (the learning rate for a fixed-rate run);
   * NULL (default) for none. */
  void (*trace)(void *user, int iteration, double seconds, double E, int evaluations, double step);
  void *trace_user;
} nle_opt_opts;

NLE_API void nle_opt_opts_init(nle_opt_opts *o);
/* Names: "sd", "fp", "gd", "lbfgs", "cg", "sd-" (also "sdm"), "auto" and back
 * (-1 if unknown); from the optimisers' table. */
NLE_API const char *nle_opt_name(nle_opt_kind kind);
NLE_API int nle_opt_parse(const char *name);

typedef struct {
  int iterations;
  int evaluations;     /* objective evaluations (with or without gradient) */
  double E0, E;        /* initial and final objective */
  double grad_max;     /* final max |g| */
  double seconds;
  bool converged;      /* a tolerance was met (not the iteration or time cap) */
} nle_opt_report;

typedef struct nle_opt nle_opt;

/* Plans the optimiser for a model: for SD builds L+ and its factor. Wp is the
 * model's W+ (symmetrised here if it is not symmetric). The optimiser may
 * change the model's exaggeration during a run and restores it after. */
NLE_API nle_status nle_opt_new(nle_ctx *ctx, nle_model *model, const nle_csr *Wp, const nle_opt_opts *opts,
                               nle_opt **opt);
NLE_API void nle_opt_free(nle_opt **opt);
/* The direction p for gradient g (both N x d), solving B p = -g; SD-, whose
 * B depends on X, needs nle_opt_direction_at. */
NLE_API nle_status nle_opt_direction(nle_ctx *ctx, nle_opt *opt, const nle_matd *g, nle_matd *p);
NLE_API nle_status nle_opt_direction_at(nle_ctx *ctx, nle_opt *opt, const nle_matd *X, const nle_matd *g, nle_matd *p);
/* Minimises the model from X (overwritten with the result). Returns
 * NLE_WARN_NOT_CONVERGED when the iteration or time cap ended the run. */
NLE_API nle_status nle_opt_run(nle_ctx *ctx, nle_opt *opt, nle_matd *X, nle_opt_report *report);

/* Checkpoints. A run (or a homotopy path) keeps its state between
 * iterations: X, counters, the last step, the L-BFGS/CG history, the momentum
 * and gains. With a checkpoint set, nle_opt_run writes that state to `path`
 * (atomically) every `every` iterations (0: never), after every homotopy step,
 * and when cancelled through the progress callback (the CLI does that on
 * SIGINT and SIGTERM); a cancelled run returns NLE_ERR_CANCELLED and stays
 * resumable. `fingerprint` names the run's data and options; loading checks
 * it, restores X and the state, and the next nle_opt_run (or
 * nle_homotopy_run) continues to the result an uninterrupted run would have
 * given, bit for bit. */
NLE_API nle_status nle_opt_set_checkpoint(nle_ctx *ctx, nle_opt *opt, const char *path, int every,
                                          const char *fingerprint);
NLE_API nle_status nle_opt_save_checkpoint(nle_ctx *ctx, nle_opt *opt, const nle_matd *X, const char *path,
                                           const char *fingerprint);
NLE_API nle_status nle_opt_load_checkpoint(nle_ctx *ctx, nle_opt *opt, nle_matd *X, const char *path,
                                           const char *fingerprint);
/* Whether `path` is a checkpoint of the run `fingerprint` names, without
 * loading it; a mismatch names the first option that differs. */
NLE_API nle_status nle_opt_check_checkpoint(nle_ctx *ctx, const char *path, const char *fingerprint);

/* Homotopy over lambda (EE paper sec. 4.4; dissertation sec. 3.4.1): steps
 * log-spaced values from lambda_start to lambda_end, minimising at each from
 * the previous X with one optimiser planned once. */
typedef struct {
  double lambda_start, lambda_end; /* > 0 */
  int steps;                       /* >= 1 (default 50) */
} nle_homotopy_opts;

NLE_API void nle_homotopy_opts_init(nle_homotopy_opts *o);

/* Called after every lambda; a non-zero return stops the path. */
typedef int (*nle_homotopy_fn)(void *user, int step, double lambda, const nle_matd *X, const nle_opt_report *rep);

NLE_API nle_status nle_homotopy_run(nle_ctx *ctx, nle_model *model, nle_opt *opt, nle_matd *X,
                                    const nle_homotopy_opts *opts,
                                    nle_homotopy_fn fn, void *user, nle_opt_report *total);

/* Out-of-sample map F(y) of EE (EE paper sec. 4.5): for each new point y,
 * argmin_x E'(x, y) = 2 sum_n (w+(y, y_n) |x - x_n|^2 + lambda w-(y, y_n)
 * exp(-|x - x_n|^2)) with the training embedding X fixed, from the x_n of the
 * nearest y_n; w+ = exp(-|y - y_n|^2 / (2 sigma^2)), w- = 1 (uniform) or
 * |y - y_n|^2 (squared distances), as in training. */
typedef struct {
  double lambda;      /* as in training (> 0) */
  double sigma;       /* Gaussian width of w+ (> 0) */
  nle_wneg_kind wneg; /* NLE_WNEG_UNIFORM or NLE_WNEG_SQDIST */
  int max_iters;      /* per point (default 200) */
  double grad_tol;    /* stop when |grad E'| <= grad_tol * scale (default 1e-10) */
} nle_oos_opts;

NLE_API void nle_oos_opts_init(nle_oos_opts *o);
NLE_API nle_status nle_ee_map_forward(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X, const nle_matf *Ynew,
                                      const nle_oos_opts *opts, nle_matd **Xnew);

/* A trained embedding with what its out-of-sample maps need: the training
 * data Y (or a reference to it), the embedding X, the entropic betas and
 * per-point normalisers, and the embedding's kernel sums. The new point's
 * weights follow the training ones "with the same neighbourhood structure"
 * (EE paper sec. 4.5): its k nearest training points, its own entropic
 * p_{n|y} (perplexity-calibrated) plus p_{y|n} from the training beta_n when
 * y falls within n's k-th neighbour, scaled as the training W+ was; or the
 * Gaussian of width sigma. */
typedef struct {
  nle_model_kind kind;
  double lambda;
  nle_wneg_kind wneg;   /* EE, t-EE */
  double perplexity;    /* entropic W+ */
  double sigma;         /* > 0: Gaussian W+ of this width; NLE_AUTO:
                           entropic (perplexity-calibrated) */
  const char *source;   /* where Y came from (kept in the model file) */
} nle_trained_spec;

/* The defaults: t-SNE, lambda 1, uniform W-, perplexity 30, entropic W+
 * (sigma NLE_AUTO), source "". */
NLE_API void nle_trained_spec_init(nle_trained_spec *spec);

typedef struct {
  nle_model_kind kind;
  double lambda;
  nle_wneg_kind wneg;
  double perplexity, sigma;
  int k;                /* neighbours of the training kNN graph */
  nle_matf *Y;          /* training data (NULL when loaded without it) */
  nle_matd *X;          /* training embedding */
  double *beta, *log_z; /* entropic: per point (NULL for Gaussian W+) */
  double *radius;       /* squared distance to each point's k-th neighbour */
  double *z_rows;       /* s-SNE, t-SNE, SNE: sum_m K(|x_n - x_m|^2) */
  double z_total, w_scale;
  size_t D;             /* columns of Y */
  nle_repulsion engine; /* of F(y)'s repulsion: set on creation and loading
                           to the fast Gauss transform (Gaussian kernel) or
                           FFT interpolation (Student-t) from 5,000 training
                           points where the model allows (not SNE, EE/t-EE
                           with uniform W- only, d <= 3), else exact; may be
                           changed before nle_trained_transform */
  uint64_t data_hash;   /* of Y, to check a re-attached copy */
  char source[1024];
  /* The neighbour search of training, when it ran among principal
   * components (nle_embed's pca_dims): new points' candidates are found
   * there too and re-ranked by their distances in Y. */
  int pca_dims;         /* 0: neighbours searched in Y itself */
  int pca_candidates;   /* candidates per new point */
  double *pca_mean;     /* D */
  double *pca_components; /* pca_dims x D, row-major */
  nle_matf *pca_Y;      /* Y on those components (N x pca_dims): derived once
                           when Y is there (training, loading, attaching) */
} nle_trained;

/* Keeps copies of Y and X; knn is the training kNN graph (squared distances),
 * beta the entropic precisions (NULL with sigma > 0). */
NLE_API nle_status nle_trained_new(nle_ctx *ctx, const nle_trained_spec *spec, const nle_matf *Y, const nle_matd *X,
                                   const nle_csr *knn, const double *beta, nle_trained **out);
NLE_API void nle_trained_free(nle_trained **t);
/* The model file (nlembed's binary container, written atomically); the
 * training data is copied into it, or (copy_data 0) only referenced by its
 * source and checked by a hash when re-attached. */
NLE_API nle_status nle_trained_save(nle_ctx *ctx, const nle_trained *t, const char *path, bool copy_data);
NLE_API nle_status nle_trained_load(nle_ctx *ctx, const char *path, nle_trained **t);
NLE_API nle_status nle_trained_attach_data(nle_ctx *ctx, nle_trained *t, const nle_matf *Y);
/* F(y) for new points (M x D): argmin_x of the training objective augmented
 * with y, the training X fixed (EE paper eq. 13; the same construction for
 * s-SNE, t-SNE and SNE), from the x of the nearest training point. With a
 * fast t->engine all points are minimised together and each evaluation is
 * O(M + N) instead of O(M N). */
NLE_API nle_status nle_trained_transform(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew, int max_iters,
                                         nle_matd **Xnew);
/* E'(x, y) of one new point y (D values) at x (d values), and its gradient in
 * x when grad is not NULL: what nle_trained_transform minimises. */
NLE_API nle_status nle_trained_objective(nle_ctx *ctx, const nle_trained *t, const float *y, const double *x, double *E,
                                         double *grad);
/* Sets t->engine: exact, or NLE_REPULSION_FGT (Gaussian kernel) or
 * NLE_REPULSION_FFT where the model allows (errors otherwise). */
NLE_API nle_status nle_trained_set_engine(nle_ctx *ctx, nle_trained *t, nle_repulsion engine);
/* f(x) for new latent points (M x d): argmin_y of the same E', EE and t-EE
 * with W- of squared distances only (EE paper eq. 13). */
NLE_API nle_status nle_trained_inverse(nle_ctx *ctx, const nle_trained *t, const nle_matd *Xnew, int max_iters,
                                       nle_matf **Ynew);

/* ========================================================================== */
/* Nonlinear embeddings: the front door                                       */
/* ========================================================================== */

/* nle_embed runs the whole pipeline (PCA for the neighbour search, kNN graph,
 * re-ranking, affinities, repulsive weights, initialisation, engine,
 * optimiser and its schedule, homotopy) and makes every automatic choice in
 * one place. Every field that takes NLE_AUTO defaults to it; the result
 * carries the options as they ran, with each NLE_AUTO resolved. The
 * defaults are each model's best measured recipe (docs/embeddings.md). */

/* The input: data points (N x D), or a kNN graph of them (N x N, squared
 * distances, as nle_knn_exact makes), or an affinity matrix W (N x N, >= 0,
 * made into W+ as nle_affinity_for_model says). Y may come with either of
 * the other two (it then serves the PCA initialisation, squared-distance
 * W- and the saved model); knn and affinities exclude each other. */
typedef struct {
  const nle_matf *Y;
  const nle_csr *knn;
  const nle_csr *affinities;
  const char *source; /* where Y came from, kept in the model (or NULL) */
  /* Called once (with release_user) as soon as nle_embed reads Y no more:
   * after the neighbour search, the squared-distance W- or the PCA start,
   * whichever needs Y last; never with keep_model. A caller with no other
   * use for Y frees it there: 3 GB of a million 784-d points, held through
   * the affinities and the optimisation otherwise. NULL: not called. */
  void (*release_Y)(void *release_user);
  void *release_user;
} nle_embed_input;

typedef enum {
  NLE_INIT_AUTO = NLE_AUTO, /* PCA of Y when given, else spectral */
  NLE_INIT_PCA = 0,         /* the first d principal components of Y */
  NLE_INIT_SPECTRAL = 1,    /* Laplacian eigenmaps of W+ (ARPACK) */
  NLE_INIT_RANDOM = 2,      /* Gaussian noise from the context's seed */
  NLE_INIT_GIVEN = 3        /* opts.init_X, used as it is */
} nle_init_kind;

/* How the optimiser steps. */
typedef enum {
  NLE_STEP_AUTO = NLE_AUTO,   /* the model's recipe: fixed rate for t-SNE
                                 and t-EE, line search for EE, s-SNE and SNE
                                 (and whenever the optimiser is not gd) */
  NLE_STEP_LINE_SEARCH = 0,   /* backtracking (Armijo) along B p = -g */
  NLE_STEP_FIXED_RATE = 1     /* gradient descent with a learning rate,
                                 momentum and gains, as the t-SNE codes */
} nle_step_kind;

typedef struct {
  nle_model_kind model;     /* default NLE_MODEL_TSNE */
  int dim;                  /* embedding dimension d, 1..64 (2) */
  /* affinities W+ */
  double perplexity;        /* entropic W+ (NLE_AUTO: 5 for the Gaussian
                               kernel's EE, s-SNE and SNE, 30 for t-SNE and
                               t-EE) */
  double sigma;             /* NLE_AUTO (default): entropic W+; > 0:
                               Gaussian W+ of this width on the kNN graph */
  int k;                    /* kNN graph size (NLE_AUTO: 3 x perplexity,
                               or 12 for Gaussian W+) */
  nle_knn_method knn_method;     /* NLE_AUTO (default) */
  nle_knn_approx_opts knn_approx; /* approx: its options (k is set from k) */
  int pca_dims;             /* neighbours searched among the first pca_dims
                               principal components of Y, then re-ranked by
                               their distances in Y (NLE_AUTO: 50 when D > 100
                               and N > 5,000; 0: in Y itself) */
  int pca_candidates;       /* candidates per point found among the
                               components (NLE_AUTO: k; 0: keep the
                               components' distances, no re-ranking) */
  /* the objective */
  double lambda;            /* NLE_AUTO: 1 for t-SNE, s-SNE, SNE; 100 / N for
                               EE (the EE paper's lambda = 100 for W+ and W-
                               each summing to 1; ours sum to N and N^2);
                               0.03 for t-EE (about N / Z of a t-SNE map,
                               where t-EE's gradient is N times t-SNE's) */
  nle_wneg_kind wneg;       /* EE, t-EE: W- (uniform) */
  int wneg_dims;            /* squared-distance W- with a fast engine: PCA
                               dimensions of its features (30) */
  /* repulsion */
  nle_repulsion engine;     /* NLE_AUTO: exact below 5,000 points and for
                               what the fast engines do not serve; else FFT
                               in 1-2-D (Barnes-Hut where the map outgrows
                               the grid), Barnes-Hut or the fast Gauss
                               transform in 3-D */
  double theta;             /* Barnes-Hut opening angle (0.5) */
  nle_fft_opts fft;         /* box_width NLE_AUTO: 1.5 for fixed-rate
                               steps, 0.85 for line searches */
  nle_fgt_opts fgt;
  /* optimiser and schedule: opt.kind, opt.max_iters, opt.tol,
   * opt.learning_rate, opt.learning_rate_final, opt.momentum,
   * opt.exaggeration, opt.exaggeration_iters and opt.x_tol are NLE_AUTO
   * here (x_tol: 1e-3 for a homotopy with line searches, the EE paper's
   * test, with tol 0 then; else 0) (see
   * docs/embeddings.md for each model's recipe); a rate NLE_AUTO is
   * max(N / (4 exaggeration), 50) / sum(W+), the final one max(N / 2, 200) /
   * sum(W+) after an exaggeration phase, else the first. */
  nle_opt_opts opt;
  nle_step_kind step;       /* NLE_AUTO */
  /* homotopy over lambda (EE paper sec. 4.4), EE and t-EE only */
  int homotopy_steps;       /* NLE_AUTO: 5 for t-EE's fixed-rate recipe,
                               else 0 (none) */
  double lambda_start;      /* NLE_AUTO: lambda / 100 for fixed-rate steps,
                               else from the lambda* bounds */
  nle_homotopy_fn on_step;  /* after every lambda (or NULL) */
  void *on_step_user;
  /* initialisation */
  nle_init_kind init;       /* NLE_AUTO */
  const nle_matd *init_X;   /* NLE_INIT_GIVEN: N x d */
  double init_scale;        /* standard deviation of the first column of a
                               PCA, spectral or random start (1e-4) */
  /* checkpoints (nle_opt_set_checkpoint) */
  const char *checkpoint;   /* NULL (default): none */
  int checkpoint_every;     /* iterations (50) */
  const char *resume;       /* a checkpoint of the same run to continue */
  /* what to keep */
  int lambda_bounds;        /* EE, t-EE: compute lambda*'s bounds (NLE_AUTO:
                               up to 20,000 points, or when a line-search
                               homotopy starts from them; 0 no, 1 yes) */
  bool keep_model;          /* true: result->trained for nle_trained_save (needs
                               Y and a kNN graph: not with affinities) */
} nle_embed_opts;

NLE_API void nle_embed_opts_init(nle_embed_opts *o);

/* Seconds per stage of a run. */
typedef struct {
  double pca, knn, affinities, init, plan, optimize, total;
} nle_embed_times;

typedef struct {
  nle_matd *X;              /* the N x d embedding */
  nle_opt_report report;    /* of the run (the whole path for a homotopy) */
  nle_embed_opts resolved;  /* the options as they ran, no NLE_AUTO left */
  nle_knn_method knn_used;  /* the search that ran (NLE_AUTO: none) */
  double pca_variance;      /* fraction of the variance the PCA kept (or 0) */
  double lambda_lower, lambda_upper; /* lambda* bounds (NaN: not computed) */
  double w_total;           /* sum of W+'s entries */
  double map_extent;        /* max |x_nj| of the result */
  int components;           /* connected components of W+ */
  size_t n, D;
  int resumed;              /* the run continued a checkpoint */
  int resumed_iteration;    /* ... from this iteration */
  nle_embed_times seconds;
  nle_trained *trained;     /* keep_model: the model (owned here) */
  char fingerprint[1536];   /* what decides the result (the checkpoints') */
} nle_embed_result;

/* Validates the whole options struct before any work (naming the field and
 * its range), resolves every NLE_AUTO, runs the pipeline and returns the
 * result (freed with nle_embed_result_free). NLE_WARN_NOT_CONVERGED and
 * the other warnings leave a usable result; the last warning's text is in
 * nle_ctx_error(ctx). */
NLE_API nle_status nle_embed(nle_ctx *ctx, const nle_embed_input *input, const nle_embed_opts *opts,
                             nle_embed_result **result);
NLE_API void nle_embed_result_free(nle_embed_result **result);
/* nle_transform: the front door of F(y) for new data points (M x D) with a
 * trained model (keep_model, or nle_trained_load): their neighbours among
 * the training points (in the model's PCA space and re-ranked, when
 * training searched there), their affinities, then the minimisation of
 * nle_trained_transform. The model is not changed. */
typedef struct {
  int max_iters;            /* per new point (NLE_AUTO: 200) */
  nle_repulsion engine;     /* NLE_AUTO: the model's t->engine (the fast
                               Gauss transform for the Gaussian kernel, FFT
                               interpolation for the Student-t, from 5,000
                               training points where the model allows; else
                               exact); a fast engine falls back to the exact
                               sums when the grid cannot cover the map */
} nle_transform_opts;

NLE_API void nle_transform_opts_init(nle_transform_opts *o);

typedef struct {
  nle_matd *X;              /* the M x d mapped points */
  nle_transform_opts resolved; /* as they ran: engine is the one used */
  size_t m;                 /* new points */
  double weights_seconds;   /* neighbours and affinities */
  double optimize_seconds;  /* the minimisation */
  double total_seconds;
} nle_transform_result;

NLE_API nle_status nle_transform(nle_ctx *ctx, const nle_trained *t, const nle_matf *Ynew,
                                 const nle_transform_opts *opts,
                                 nle_transform_result **result);
NLE_API void nle_transform_result_free(nle_transform_result **result);

/* Names: "ee", "tee", "ssne", "tsne", "sne" and back (-1 if unknown). */
NLE_API const char *nle_model_name(nle_model_kind kind);
NLE_API int nle_model_parse(const char *name);
/* Engines: "exact", "bh", "fft", "fgt" (and "auto": NLE_REPULSION_AUTO) and
 * back (-1 if unknown). */
NLE_API const char *nle_repulsion_name(nle_repulsion engine);
NLE_API int nle_repulsion_parse(const char *name);

/* ========================================================================== */
/* Quality metrics (definitions as in scikit-learn)                           */
/* ========================================================================== */

typedef struct {
  int k;              /* neighbourhood size (default 10) */
  int64_t subsample;  /* points scored for recall, trustworthiness and
                         continuity: 0 = all, default 10000 (a fixed random
                         subset, seeded by the context); each one's neighbours
                         and ranks are among all N points, so the scores
                         estimate the N-point ones (cost O(M N D)) */
  bool within_subsample; /* true: neighbours and ranks among the subsample only,
                           as sklearn's trustworthiness(Y[s], X[s]) (cost
                           O(M^2 D); scores differ from the N-point ones) */
  int cv_folds;       /* folds of the kNN classifier (default 5, >= 2) */
  int cv_k;           /* neighbours of the kNN classifier (default 10) */
} nle_metrics_opts;

NLE_API void nle_metrics_opts_init(nle_metrics_opts *o);

typedef struct {
  int64_t n, subsample_n;
  int k;
  double recall;          /* mean |kNN_data(i) ∩ kNN_emb(i)| / k */
  double trustworthiness; /* sklearn.manifold.trustworthiness */
  double continuity;      /* trustworthiness with the two spaces swapped */
  double knn_accuracy;    /* mean accuracy over stratified folds; NaN w/o labels */
  int64_t *subsample_idx; /* subsample_n sorted indices used (owned) */
} nle_metrics;

/* Y: data (N x D), X: embedding (N x d), labels: N or NULL. */
NLE_API nle_status nle_metrics_compute(nle_ctx *ctx, const nle_matf *Y, const nle_matd *X,
                                       const int32_t *labels, const nle_metrics_opts *opts,
                                       nle_metrics **out);
NLE_API void nle_metrics_free(nle_metrics **m);

/* Trustworthiness T(k) of embedding X for data Y, all points, O(N^2 D):
 * 1 - 2/(N k (2N - 3k - 1)) sum_i sum_{j in U_i} (r(i,j) - k). Needs k < N/2. */
NLE_API nle_status nle_trustworthiness(nle_ctx *ctx, const nle_matd *Y, const nle_matd *X,
                                       int k, double *out);
/* Mean fraction of the k exact neighbours (rows of `exact`) found in `approx`;
 * both are kNN graphs over the same points. */
NLE_API nle_status nle_knn_recall(nle_ctx *ctx, const nle_csr *approx, const nle_csr *exact,
                                  double *out);
/* Mean accuracy of a k-NN classifier (uniform votes, ties to the smallest
 * label) over stratified folds assigned as scikit-learn's StratifiedKFold
 * without shuffling. */
NLE_API nle_status nle_knn_accuracy_cv(nle_ctx *ctx, const nle_matd *X, const int32_t *labels,
                                       int k, int folds, double *out);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_H */
