/* nlembed/core.h — the context, status codes, dense and sparse matrices,
 * random numbers; the version, and the NLE_API and NLE_AUTO macros every
 * other header uses. Part of the public header: include <nlembed.h>, whose
 * opening comment states the conventions every declaration here follows. */
#ifndef NLEMBED_CORE_H
#define NLEMBED_CORE_H

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

/* An enumeration with names is made from one list, NLE_..._MAP(XX), whose
 * rows XX(ENUMERATOR, value, "name") give its enumerators here (through
 * NLE__ENUMERATOR) and its name table in the library: the numbers, the
 * names and the enumeration's _COUNT cannot drift apart (libuv's XX map).
 * The values are written out: they are stored in model files. */
#define NLE__ENUMERATOR(id, value, name) id = value,

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

/* How messages (errors, warnings, log lines) name the options a user set.
 * The library writes an option as a marker, {@NAME} or {@NAME=VALUE}, NAME
 * being the option's name in the estimator API and the tool (the tool's
 * long option, e.g. "lambda-start"); the context renders it for its client:
 *   NLE_SPELL_C (default)  lambda_start, components=allow  (the names
 *                          nle_estimator_set takes, '-' as '_')
 *   NLE_SPELL_CLI          --lambda-start, --components allow (a one-letter
 *                          name as -k)
 *   NLE_SPELL_MARKED       the markers left in, for a binding that renders
 *                          them with its own names (Python's n_neighbors). */
typedef enum { NLE_SPELL_C = 0, NLE_SPELL_CLI = 1, NLE_SPELL_MARKED = 2, NLE_SPELL_COUNT } nle_option_spelling;
NLE_API void nle_ctx_set_option_spelling(nle_ctx *ctx, nle_option_spelling spelling);

/* Distributed runs (MPI; docs/mpi.md). mpi_comm is the address of an
 * MPI_Comm (in C &comm; in Python mpi4py's MPI._addressof(comm)); the library
 * works on a duplicate of it, so the caller's messages never meet its own.
 * MPI must be initialised by the caller. Every rank then makes the same
 * calls with the same options, and each call is collective: the ranks share
 * the rows and the work, and every rank returns the same status. NULL makes
 * the context one process again. NLE_ERR_UNSUPPORTED when this library was
 * built without MPI (nle_mpi_available). */
NLE_API nle_status nle_ctx_set_comm(nle_ctx *ctx, const void *mpi_comm);
/* The communicator's size and this process's rank in it: 1 and 0 alone. */
NLE_API int nle_ctx_ranks(const nle_ctx *ctx);
NLE_API int nle_ctx_rank(const nle_ctx *ctx);
NLE_API bool nle_mpi_available(void);

/* Warnings: what the user should know about a run that succeeded (a
 * disconnected graph joined, a scale that exploded, an optimiser stopped
 * early). Each is recorded in the context (the first NLE_WARNINGS_KEPT of a
 * run; the count goes on) and sent to the log callback at level 0 as
 * "warning: TEXT". A binding reads them after a call to raise its own. */
#define NLE_WARNINGS_KEPT 16
typedef enum {
  NLE_WARN_GENERAL = 0,
  NLE_WARN_CONVERGENCE = 1 /* about the optimiser's or eigensolver's stop */
} nle_warning_kind;
/* Warnings recorded since the context was made or last cleared. */
NLE_API int nle_ctx_warning_count(const nle_ctx *ctx);
/* Text of warning i (0-based, < min(count, NLE_WARNINGS_KEPT)), "" outside;
 * its kind in *kind when kind is not NULL. */
NLE_API const char *nle_ctx_warning(const nle_ctx *ctx, int i, nle_warning_kind *kind);
NLE_API void nle_ctx_clear_warnings(nle_ctx *ctx);

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
/* The non-zero entries of a dense matrix (non-finite entries refused,
 * naming the first), as doubles. */
NLE_API nle_status nle_csr_from_dense(nle_ctx *ctx, const nle_matf *A, nle_csr **out);
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

/* ========================================================================== */
/* Core: class labels                                                         */
/* ========================================================================== */

/* Class labels encoded as scikit-learn's LabelEncoder: the classes are the
 * distinct values present, in increasing order, and codes[i] in 0..C-1 is
 * label i's class (codes may alias labels). Every front door and reader
 * that takes labels encodes them so: labels may be any integers (1..20,
 * with gaps, -1 for noise: a class like any other). values (or NULL) gets
 * the C class values in increasing order (free() them). `where` names the
 * labels in errors (NULL: "labels"). */
NLE_API nle_status nle_labels_encode(nle_ctx *ctx, const char *where, const int32_t *labels, size_t n,
                                     int32_t *codes, int32_t *n_classes, int32_t **values);

/* Monotonic wall-clock seconds, for timings. */
NLE_API double nle_time_seconds(void);

#ifdef __cplusplus
}
#endif
#endif /* NLEMBED_CORE_H */
