/* comm.h — what a distributed stage calls (issue 38, docs/mpi.md).
 *
 * A context holds a communicator when its client set one (nle_ctx_set_comm);
 * without one, or with one of a single rank, every call here is local and
 * costs nothing, so a stage is written once for both. Every call is
 * collective: all ranks make the same calls in the same order. No call
 * returns a partial result: a failure of the MPI library is an error on the
 * calling rank, and nle__comm_agree spreads any rank's failure to all.
 *
 * Sums of floating-point numbers over ranks are not offered: their order
 * would follow the partition, and the results must not (same bits for any
 * number of ranks). A stage sums integers (fixed point, exact in any order:
 * nle__comm_sum_i64) or gathers the parts and adds them in an order fixed by
 * point index (nle__comm_allgatherv). */
#ifndef NLEMBED_COMM_H
#define NLEMBED_COMM_H

#include "internal.h"

/* Ranks are assigned whole blocks of this many rows (the last block may be
 * short), so work done per row block is the same for any number of ranks. */
#define NLE__RANK_ROW_BLOCK 4096

typedef struct {
  size_t begin, end; /* rows [begin, end) */
} nle__row_range;

/* A distributed matrix's rows as one rank sees them: n rows in all, this
 * rank holding [mine.begin, mine.end). */
typedef struct {
  size_t n;
  nle__row_range mine;
} nle__rows;

/* Work this rank does alone inside a distributed run (rank 0 reading a
 * whole file, writing a gathered text; every rank solving the same small
 * problem, as LLL's reduced pencil): the context's collective calls
 * are local until nle__alone_end, which returns what ranks it had. */
static inline int nle__alone_begin(nle_ctx *ctx) {
  int ranks = ctx->ranks;
  ctx->ranks = 0;
  return ranks;
}
static inline void nle__alone_end(nle_ctx *ctx, int ranks) { ctx->ranks = ranks; }

/* 1 and 0 without a communicator. */
int nle__ranks(const nle_ctx *ctx);
int nle__rank(const nle_ctx *ctx);
static inline bool nle__distributed(const nle_ctx *ctx) { return nle__ranks(ctx) > 1; }
/* Whether the client set a communicator, even one of a single rank: a
 * stage whose single-process bits the ranks cannot reproduce takes the
 * ranks' way then, so mpirun gives the same bits at 1 rank as at several. */
static inline bool nle__has_comm(const nle_ctx *ctx) { return ctx && ctx->comm; }

/* The rows of n that `rank` of `ranks` holds: contiguous, in rank order, in
 * whole NLE__RANK_ROW_BLOCK blocks shared out as evenly as blocks allow (a
 * rank may hold none when there are fewer blocks than ranks). */
nle__row_range nle__rank_rows(size_t n, int ranks, int rank);
/* The rank whose nle__rank_rows hold global row `row` (< n), in O(1). */
int nle__rank_of_row(size_t n, int ranks, size_t row);

/* The rows each rank holds when every rank passes how many it holds
 * (n_local): the ranks' counts in rank order must be nle__rank_rows's for
 * their total, else NLE_ERR_ARG naming `what` (the front door shares rows
 * out that way; a stage inside may rely on it). Alone: n_local rows, all of
 * them. */
nle_status nle__comm_rows(nle_ctx *ctx, size_t n_local, const char *what, nle__rows *out);

/* Every rank's status s combined: NLE_OK (or the largest warning) when all
 * succeeded; otherwise the most severe error of the lowest rank having it,
 * with that rank's message recorded on every rank (prefixed "rank R: " on
 * the others). Call it after a stage that can fail on one rank alone
 * (reading its rows, an allocation) and before any message that stage's
 * peers would wait for. */
nle_status nle__comm_agree(nle_ctx *ctx, nle_status s);

/* NLE_ERR_ARG naming `what` unless every rank passed the same n bytes (a
 * file's size, the options): refuses mismatched inputs between ranks. */
nle_status nle__comm_same(nle_ctx *ctx, const void *bytes, size_t n, const char *what);

/* In place over all ranks: exact integer sums; maxima and minima (exact, in
 * any order). */
nle_status nle__comm_sum_i64(nle_ctx *ctx, int64_t *buf, size_t n);
nle_status nle__comm_max_d(nle_ctx *ctx, double *buf, size_t n);
nle_status nle__comm_min_d(nle_ctx *ctx, double *buf, size_t n);

/* Sums that do not depend on the partition: the caller computes one
 * partial of n numbers per row block it holds (blocks of
 * NLE__RANK_ROW_BLOCK rows, or any blocking that does not follow the ranks;
 * inside a block in a fixed order), and out receives on every rank the sums
 * of every rank's partials, element by element. Each partial is rounded to
 * one fixed point shared by all ranks (from the largest partial and the
 * number of blocks) and the integers are summed exactly, so any number of
 * ranks, and one process alone, gives the same bits. The error is below
 * 2^-62 times the number of blocks of the sum of the partials' magnitudes
 * (about 1e-14 of it at 100 million rows). NLE_ERR_VALUE on a non-finite
 * partial. partials: nblocks x n, row-major; nblocks may be 0. */
nle_status nle__comm_sum_blocks(nle_ctx *ctx, const double *partials, size_t nblocks, size_t n, double *out);

/* root's bytes to every rank. */
nle_status nle__comm_bcast(nle_ctx *ctx, void *buf, size_t bytes, int root);

/* Every rank's `mine` (my_bytes, which may differ between ranks) into
 * `all`, in rank order, on every rank; all holds the sum of the sizes, and
 * offsets (ranks + 1 entries, may be NULL) receives where each rank's part
 * starts. */
nle_status nle__comm_allgatherv(nle_ctx *ctx, const void *mine, size_t my_bytes, void *all, size_t *offsets);

/* The same for parts known alike on every rank: rank r's canonical rows of
 * n (nle__rank_rows), row_bytes each, into all (n rows). No exchange of
 * sizes: for a per-iteration gather (the map, each evaluation). */
nle_status nle__comm_allgather_rows(nle_ctx *ctx, const void *mine, size_t n, size_t row_bytes, void *all);

/* Personalised exchange: send_bytes[r] bytes from send + send_offsets[r] to
 * rank r. *recv is allocated here (free it) and holds what each rank sent
 * this one, in rank order; recv_offsets (ranks + 1 entries) where each part
 * starts. */
nle_status nle__comm_alltoallv(nle_ctx *ctx, const void *send, const size_t *send_offsets, const size_t *send_bytes,
                               void **recv, size_t *recv_offsets);

/* The same when each rank knows what every other sends it (a layout known
 * alike, as the FFT grids' slabs): recv_bytes[r] bytes from rank r land at
 * recv + recv_offsets[r], in the caller's buffer. No exchange of sizes, no
 * allocation: for a per-evaluation exchange. */
nle_status nle__comm_alltoallv_known(nle_ctx *ctx, const void *send, const size_t *send_offsets,
                                     const size_t *send_bytes, void *recv, const size_t *recv_offsets,
                                     const size_t *recv_bytes);

/* Sends send_bytes to rank `to` while receiving from rank `from` into recv
 * (recv_cap bytes; *recv_bytes what arrived): one step of a ring. */
nle_status nle__comm_shift(nle_ctx *ctx, const void *send, size_t send_bytes, int to, void *recv, size_t recv_cap,
                           size_t *recv_bytes, int from);

nle_status nle__comm_barrier(nle_ctx *ctx);

/* The payload bytes this rank has handed to MPI to send since the context
 * was made (the JSON report's bytes per stage are differences of it). */
uint64_t nle__comm_bytes_sent(const nle_ctx *ctx);

/* ctx.c calls it from nle_ctx_free. */
void nle__comm_release(nle_ctx *ctx);

/* The fixed point nle__comm_sum_blocks rounds to, for sums streamed by a
 * stage itself (too many partials to keep): 2^scale units to 1, so that
 * `blocks` partials each at most `largest` in magnitude (a bound every rank
 * knows alike) sum within 2^62 units. A partial x becomes
 * llrint(ldexp(x, scale)); the integers add exactly in any order. */
int nle__fixed_point_scale(double largest, double blocks);

/* Rows held in any contiguous split in rank order (this rank's n_local rows
 * of row_bytes bytes each, the ranks' rows following one another) moved to
 * another such split by one personalised exchange: this rank ends with
 * `want` rows (NLE__CANONICAL on every rank: the canonical shares,
 * nle__rank_rows). *out receives them (allocated here, free it), *rows
 * where they are (.mine) among all (.n). When every rank holds what it
 * wants already nothing moves and *out is NULL. Rank 0 holding every row
 * is a scatter; NLE_ERR_ARG when the wants do not add up to the rows. */
#define NLE__CANONICAL SIZE_MAX
nle_status nle__comm_rebalance(nle_ctx *ctx, const void *mine, size_t n_local, size_t row_bytes, size_t want,
                               void **out, nle__rows *rows);

#endif
