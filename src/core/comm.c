/* comm.c — the context's communicator and the collective calls distributed
 * stages make (comm.h). Built with MPI when NLE_WITH_MPI is defined (the
 * default where mpi.h is found, Makefile); without it a context has one rank
 * and nle_ctx_set_comm refuses a communicator. */
#include "comm.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int nle__ranks(const nle_ctx *ctx) { return ctx && ctx->ranks > 1 ? ctx->ranks : 1; }
int nle__rank(const nle_ctx *ctx) { return ctx && ctx->ranks > 1 ? ctx->rank : 0; }
int nle_ctx_ranks(const nle_ctx *ctx) { return nle__ranks(ctx); }
int nle_ctx_rank(const nle_ctx *ctx) { return nle__rank(ctx); }
uint64_t nle__comm_bytes_sent(const nle_ctx *ctx) { return ctx->bytes_sent; }

nle__row_range nle__rank_rows(size_t n, int ranks, int rank) {
  size_t blocks = (n + NLE__RANK_ROW_BLOCK - 1) / NLE__RANK_ROW_BLOCK;
  size_t r = (size_t)rank, p = (size_t)(ranks > 0 ? ranks : 1);
  size_t b0 = blocks / p * r + (r < blocks % p ? r : blocks % p);
  size_t b1 = b0 + blocks / p + (r < blocks % p);
  nle__row_range range = {b0 * NLE__RANK_ROW_BLOCK, b1 * NLE__RANK_ROW_BLOCK};
  if (range.begin > n) range.begin = n;
  if (range.end > n) range.end = n;
  return range;
}

int nle__rank_of_row(size_t n, int ranks, size_t row) {
  size_t blocks = (n + NLE__RANK_ROW_BLOCK - 1) / NLE__RANK_ROW_BLOCK, p = (size_t)(ranks > 0 ? ranks : 1);
  size_t b = row / NLE__RANK_ROW_BLOCK, q = blocks / p, rem = blocks % p;
  /* the first rem ranks hold q + 1 blocks each, the others q */
  return (int)(b < rem * (q + 1) ? b / (q + 1) : rem + (b - rem * (q + 1)) / q);
}

nle_status nle__comm_rows(nle_ctx *ctx, size_t n_local, const char *what, nle__rows *out) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  uint64_t *counts = calloc((size_t)ranks, sizeof *counts);
  if (!counts) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %d ranks' row counts", ranks);
  uint64_t mine = n_local;
  nle_status s = nle__comm_allgatherv(ctx, &mine, sizeof mine, counts, NULL);
  size_t n = 0;
  for (int r = 0; r < ranks; r++) n += (size_t)counts[r];
  for (int r = 0; s == NLE_OK && r < ranks; r++) {
    nle__row_range want = nle__rank_rows(n, ranks, r);
    if (counts[r] != want.end - want.begin)
      s = nle__fail(ctx, NLE_ERR_ARG, "%s: rank %d holds %llu of the %zu rows, not the %zu its share is", what, r,
                    (unsigned long long)counts[r], n, want.end - want.begin);
  }
  free(counts);
  if (s == NLE_OK) *out = (nle__rows){n, nle__rank_rows(n, ranks, me)};
  return s;
}

/* A ring step with one rank: the message comes back to its sender. */
static nle_status shift_alone(nle_ctx *ctx, const void *send, size_t send_bytes, void *recv, size_t recv_cap,
                              size_t *recv_bytes) {
  if (send_bytes > recv_cap) return nle__fail(ctx, NLE_ERR_ARG, "a ring step's message exceeds its buffer");
  memmove(recv, send, send_bytes);
  *recv_bytes = send_bytes;
  return NLE_OK;
}

/* FNV-1a: a mismatch test, not a checksum anyone relies on for integrity. */
static uint64_t fingerprint(const void *bytes, size_t n) {
  uint64_t h = 1469598103934665603ull ^ n;
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)bytes)[i]) * 1099511628211ull;
  return h;
}

nle_status nle__comm_sum_blocks(nle_ctx *ctx, const double *partials, size_t nblocks, size_t n, double *out) {
  double largest = 0;
  for (size_t i = 0; i < nblocks * n; i++) {
    double a = fabs(partials[i]);
    if (!(a <= DBL_MAX)) largest = INFINITY;
    else if (a > largest) largest = a;
  }
  int64_t *units = calloc(n + 1, sizeof *units);
  nle_status s = units ? NLE_OK : nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %zu sums", n);
  if (s == NLE_OK) {
    units[n] = (int64_t)nblocks;
    s = nle__comm_max_d(ctx, &largest, 1);
  }
  if (s == NLE_OK) s = nle__comm_sum_i64(ctx, units + n, 1);
  if (s == NLE_OK && !(largest * (double)units[n] <= DBL_MAX))
    s = nle__fail(ctx, NLE_ERR_VALUE, "a partial sum is not finite, or its total would not be");
  if (s == NLE_OK && largest > 0) {
    /* 2^scale units to 1: every partial and every sum of them within 2^62 */
    int scale = nle__fixed_point_scale(largest, (double)units[n]);
    for (size_t b = 0; b < nblocks; b++)
      for (size_t j = 0; j < n; j++) units[j] += (int64_t)llrint(ldexp(partials[b * n + j], scale));
    s = nle__comm_sum_i64(ctx, units, n);
    for (size_t j = 0; s == NLE_OK && j < n; j++) out[j] = ldexp((double)units[j], -scale);
  } else if (s == NLE_OK) {
    for (size_t j = 0; j < n; j++) out[j] = 0;
  }
  free(units);
  return s;
}

#ifdef NLE_WITH_MPI
#include <mpi.h>

/* MPI counts are ints: messages go in pieces of at most this many bytes. */
#define PIECE ((size_t)1 << 30)
#define COMM(ctx) (*(MPI_Comm *)(ctx)->comm)

bool nle_mpi_available(void) { return true; }

static nle_status mpi_failed(nle_ctx *ctx, int code, const char *what) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(code, text, &len);
  return nle__fail(ctx, NLE_ERR_IO, "MPI's %s failed on rank %d: %s", what, nle__rank(ctx), text);
}
#define MPI_TRY(ctx, call, what)                  \
  do {                                            \
    int mpi_code_ = (call);                       \
    if (mpi_code_ != MPI_SUCCESS) return mpi_failed(ctx, mpi_code_, what); \
  } while (0)

void nle__comm_release(nle_ctx *ctx) {
  if (!ctx->comm) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free((MPI_Comm *)ctx->comm);
  free(ctx->comm);
  ctx->comm = NULL;
  ctx->ranks = ctx->rank = 0;
}

nle_status nle_ctx_set_comm(nle_ctx *ctx, const void *mpi_comm) {
  nle__comm_release(ctx);
  if (!mpi_comm) return NLE_OK;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return nle__fail(ctx, NLE_ERR_ARG, "MPI is not initialised: call MPI_Init before nle_ctx_set_comm");
  MPI_Comm *own = malloc(sizeof *own);
  if (!own) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for the communicator");
  /* A duplicate: the library's messages never match the caller's. */
  int code = MPI_Comm_dup(*(const MPI_Comm *)mpi_comm, own);
  if (code != MPI_SUCCESS) {
    free(own);
    return mpi_failed(ctx, code, "MPI_Comm_dup");
  }
  MPI_Comm_set_errhandler(*own, MPI_ERRORS_RETURN);
  ctx->comm = own;
  MPI_Comm_size(*own, &ctx->ranks);
  MPI_Comm_rank(*own, &ctx->rank);
  return NLE_OK;
}

nle_status nle__comm_agree(nle_ctx *ctx, nle_status s) {
  if (!nle__distributed(ctx)) return s;
  struct {
    int ok, rank;
  } mine = {s >= 0, ctx->rank}, first;
  MPI_TRY(ctx, MPI_Allreduce(&mine, &first, 1, MPI_2INT, MPI_MINLOC, COMM(ctx)), "MPI_Allreduce");
  if (first.ok) {
    int worst = s;
    MPI_TRY(ctx, MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, COMM(ctx)), "MPI_Allreduce");
    return (nle_status)worst;
  }
  struct {
    int status;
    char text[NLE__ERROR_LEN];
  } failure = {s, ""};
  if (ctx->rank == first.rank) memcpy(failure.text, ctx->error, sizeof failure.text);
  MPI_TRY(ctx, MPI_Bcast(&failure, sizeof failure, MPI_BYTE, first.rank, COMM(ctx)), "MPI_Bcast");
  if (ctx->rank == first.rank) return (nle_status)failure.status;
  failure.text[sizeof failure.text - 1] = '\0';
  return nle__fail(ctx, (nle_status)failure.status, "rank %d: %s", first.rank, failure.text);
}

static nle_status reduce_pieces(nle_ctx *ctx, void *buf, size_t n, size_t size, MPI_Datatype type, MPI_Op op) {
  if (!nle__distributed(ctx)) return NLE_OK;
  size_t per_piece = PIECE / size;
  for (size_t at = 0; at < n; at += per_piece) {
    size_t count = n - at < per_piece ? n - at : per_piece;
    MPI_TRY(ctx, MPI_Allreduce(MPI_IN_PLACE, (char *)buf + at * size, (int)count, type, op, COMM(ctx)),
            "MPI_Allreduce");
  }
  /* A ring allreduce sends each rank's share twice: 2 (R - 1) / R of it. */
  ctx->bytes_sent += 2 * n * size * (uint64_t)(ctx->ranks - 1) / (uint64_t)ctx->ranks;
  return NLE_OK;
}

nle_status nle__comm_sum_i64(nle_ctx *ctx, int64_t *buf, size_t n) {
  return reduce_pieces(ctx, buf, n, sizeof *buf, MPI_INT64_T, MPI_SUM);
}
nle_status nle__comm_max_d(nle_ctx *ctx, double *buf, size_t n) {
  return reduce_pieces(ctx, buf, n, sizeof *buf, MPI_DOUBLE, MPI_MAX);
}
nle_status nle__comm_min_d(nle_ctx *ctx, double *buf, size_t n) {
  return reduce_pieces(ctx, buf, n, sizeof *buf, MPI_DOUBLE, MPI_MIN);
}

nle_status nle__comm_same(nle_ctx *ctx, const void *bytes, size_t n, const char *what) {
  if (!nle__distributed(ctx)) return NLE_OK;
  uint64_t h[2] = {fingerprint(bytes, n), 0}, lo, hi;
  h[1] = ~h[0];
  MPI_TRY(ctx, MPI_Allreduce(&h[0], &hi, 1, MPI_UINT64_T, MPI_MAX, COMM(ctx)), "MPI_Allreduce");
  MPI_TRY(ctx, MPI_Allreduce(&h[1], &lo, 1, MPI_UINT64_T, MPI_MAX, COMM(ctx)), "MPI_Allreduce");
  if (hi != ~lo) return nle__fail(ctx, NLE_ERR_ARG, "the ranks were given different %s", what);
  return NLE_OK;
}

nle_status nle__comm_bcast(nle_ctx *ctx, void *buf, size_t bytes, int root) {
  if (!nle__distributed(ctx)) return NLE_OK;
  for (size_t at = 0; at < bytes; at += PIECE) {
    size_t count = bytes - at < PIECE ? bytes - at : PIECE;
    MPI_TRY(ctx, MPI_Bcast((char *)buf + at, (int)count, MPI_BYTE, root, COMM(ctx)), "MPI_Bcast");
  }
  if (ctx->rank == root) ctx->bytes_sent += bytes * (uint64_t)(ctx->ranks - 1);
  return NLE_OK;
}

/* Each rank's part to every rank, in rank order: sizes[r] bytes, or (sizes
 * NULL) rank r's canonical rows of n, row_bytes each. */
static nle_status bcast_parts(nle_ctx *ctx, const void *mine, void *all, size_t *offsets, const uint64_t *sizes,
                              size_t n, size_t row_bytes) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  size_t at = 0;
  nle_status s = NLE_OK;
  for (int r = 0; s == NLE_OK && r < ranks; r++) {
    nle__row_range rows = nle__rank_rows(n, ranks, r);
    size_t bytes = sizes ? (size_t)sizes[r] : (rows.end - rows.begin) * row_bytes;
    if (offsets) offsets[r] = at;
    if (r == me && bytes) memmove((char *)all + at, mine, bytes);
    s = nle__comm_bcast(ctx, (char *)all + at, bytes, r);
    at += bytes;
  }
  if (offsets && s == NLE_OK) offsets[ranks] = at;
  return s;
}

nle_status nle__comm_allgatherv(nle_ctx *ctx, const void *mine, size_t my_bytes, void *all, size_t *offsets) {
  int ranks = nle__ranks(ctx);
  uint64_t *sizes = calloc((size_t)ranks, sizeof *sizes);
  if (!sizes) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %d ranks' sizes", ranks);
  uint64_t me = my_bytes;
  nle_status s = NLE_OK;
  if (ranks > 1) {
    int code = MPI_Allgather(&me, 1, MPI_UINT64_T, sizes, 1, MPI_UINT64_T, COMM(ctx));
    if (code != MPI_SUCCESS) s = mpi_failed(ctx, code, "MPI_Allgather");
  } else {
    sizes[0] = me;
  }
  if (!s) s = bcast_parts(ctx, mine, all, offsets, sizes, 0, 0);
  free(sizes);
  return s;
}

nle_status nle__comm_allgather_rows(nle_ctx *ctx, const void *mine, size_t n, size_t row_bytes, void *all) {
  return bcast_parts(ctx, mine, all, NULL, NULL, n, row_bytes);
}

/* Posts the pieces of one message each way and waits for all of them. */
static nle_status exchange(nle_ctx *ctx, const void *send, size_t send_bytes, int to, void *recv,
                           size_t recv_bytes, int from) {
  size_t send_pieces = (send_bytes + PIECE - 1) / PIECE, recv_pieces = (recv_bytes + PIECE - 1) / PIECE;
  MPI_Request *requests = malloc((send_pieces + recv_pieces + 1) * sizeof *requests);
  if (!requests) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for a message's pieces");
  int posted = 0, code = MPI_SUCCESS;
  for (size_t p = 0; p < recv_pieces && code == MPI_SUCCESS; p++) {
    size_t count = recv_bytes - p * PIECE < PIECE ? recv_bytes - p * PIECE : PIECE;
    code = MPI_Irecv((char *)recv + p * PIECE, (int)count, MPI_BYTE, from, (int)p, COMM(ctx), &requests[posted++]);
  }
  for (size_t p = 0; p < send_pieces && code == MPI_SUCCESS; p++) {
    size_t count = send_bytes - p * PIECE < PIECE ? send_bytes - p * PIECE : PIECE;
    code = MPI_Isend((const char *)send + p * PIECE, (int)count, MPI_BYTE, to, (int)p, COMM(ctx),
                     &requests[posted++]);
  }
  int waited = MPI_Waitall(posted, requests, MPI_STATUSES_IGNORE);
  free(requests);
  if (code == MPI_SUCCESS) code = waited;
  if (code != MPI_SUCCESS) return mpi_failed(ctx, code, "point-to-point exchange");
  ctx->bytes_sent += send_bytes;
  return NLE_OK;
}

nle_status nle__comm_shift(nle_ctx *ctx, const void *send, size_t send_bytes, int to, void *recv, size_t recv_cap,
                           size_t *recv_bytes, int from) {
  if (!nle__distributed(ctx)) return shift_alone(ctx, send, send_bytes, recv, recv_cap, recv_bytes);
  uint64_t out = send_bytes, in = 0;
  MPI_TRY(ctx, MPI_Sendrecv(&out, 1, MPI_UINT64_T, to, 0, &in, 1, MPI_UINT64_T, from, 0, COMM(ctx), MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
  if (in > recv_cap) return nle__fail(ctx, NLE_ERR_ARG, "a ring step's message exceeds its buffer");
  *recv_bytes = (size_t)in;
  return exchange(ctx, send, send_bytes, to, recv, (size_t)in, from);
}

nle_status nle__comm_alltoallv(nle_ctx *ctx, const void *send, const size_t *send_offsets, const size_t *send_bytes,
                               void **recv, size_t *recv_offsets) {
  int ranks = nle__ranks(ctx);
  uint64_t *out = malloc(2 * (size_t)ranks * sizeof *out), *in = out ? out + ranks : NULL;
  if (!out) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %d ranks' sizes", ranks);
  for (int r = 0; r < ranks; r++) out[r] = send_bytes[r];
  nle_status s = NLE_OK;
  if (ranks > 1) {
    int code = MPI_Alltoall(out, 1, MPI_UINT64_T, in, 1, MPI_UINT64_T, COMM(ctx));
    if (code != MPI_SUCCESS) s = mpi_failed(ctx, code, "MPI_Alltoall");
  } else {
    in[0] = out[0];
  }
  size_t total = 0, *recv_bytes = malloc(((size_t)ranks + 1) * sizeof(size_t));
  if (!recv_bytes) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %d ranks' sizes", ranks);
  for (int r = 0; s == NLE_OK && r < ranks; r++) {
    recv_offsets[r] = total;
    recv_bytes[r] = (size_t)in[r];
    total += (size_t)in[r];
  }
  recv_offsets[ranks] = total;
  *recv = s == NLE_OK ? malloc(total ? total : 1) : NULL;
  if (s == NLE_OK && !*recv) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %zu bytes from other ranks", total);
  if (s == NLE_OK) s = nle__comm_alltoallv_known(ctx, send, send_offsets, send_bytes, *recv, recv_offsets, recv_bytes);
  free(out);
  free(recv_bytes);
  if (s != NLE_OK) {
    free(*recv);
    *recv = NULL;
  }
  return s;
}

nle_status nle__comm_alltoallv_known(nle_ctx *ctx, const void *send, const size_t *send_offsets,
                                     const size_t *send_bytes, void *recv, const size_t *recv_offsets,
                                     const size_t *recv_bytes) {
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  memcpy((char *)recv + recv_offsets[me], (const char *)send + send_offsets[me], send_bytes[me]);
  nle_status s = NLE_OK;
  /* Step k pairs each rank with the ranks k after and k before it. */
  for (int k = 1; s == NLE_OK && k < ranks; k++) {
    int to = (me + k) % ranks, from = (me - k + ranks) % ranks;
    s = exchange(ctx, (const char *)send + send_offsets[to], send_bytes[to], to, (char *)recv + recv_offsets[from],
                 recv_bytes[from], from);
  }
  return s;
}

nle_status nle__comm_barrier(nle_ctx *ctx) {
  if (nle__distributed(ctx)) MPI_TRY(ctx, MPI_Barrier(COMM(ctx)), "MPI_Barrier");
  return NLE_OK;
}

#else /* built without MPI: one rank, and the calls are local */

bool nle_mpi_available(void) { return false; }
void nle__comm_release(nle_ctx *ctx) { (void)ctx; }

nle_status nle_ctx_set_comm(nle_ctx *ctx, const void *mpi_comm) {
  if (!mpi_comm) return NLE_OK;
  return nle__fail(ctx, NLE_ERR_UNSUPPORTED,
                   "this nlembed was built without MPI: install libopenmpi-dev and rebuild (make MPI=1)");
}

nle_status nle__comm_agree(nle_ctx *ctx, nle_status s) {
  (void)ctx;
  return s;
}
nle_status nle__comm_same(nle_ctx *ctx, const void *bytes, size_t n, const char *what) {
  (void)ctx, (void)bytes, (void)n, (void)what, (void)fingerprint;
  return NLE_OK;
}
nle_status nle__comm_sum_i64(nle_ctx *ctx, int64_t *buf, size_t n) { return (void)ctx, (void)buf, (void)n, NLE_OK; }
nle_status nle__comm_max_d(nle_ctx *ctx, double *buf, size_t n) { return (void)ctx, (void)buf, (void)n, NLE_OK; }
nle_status nle__comm_min_d(nle_ctx *ctx, double *buf, size_t n) { return (void)ctx, (void)buf, (void)n, NLE_OK; }
nle_status nle__comm_bcast(nle_ctx *ctx, void *buf, size_t bytes, int root) {
  return (void)ctx, (void)buf, (void)bytes, (void)root, NLE_OK;
}
nle_status nle__comm_allgather_rows(nle_ctx *ctx, const void *mine, size_t n, size_t row_bytes, void *all) {
  (void)ctx;
  if (n) memmove(all, mine, n * row_bytes);
  return NLE_OK;
}
nle_status nle__comm_allgatherv(nle_ctx *ctx, const void *mine, size_t my_bytes, void *all, size_t *offsets) {
  (void)ctx;
  if (my_bytes) memmove(all, mine, my_bytes);
  if (offsets) offsets[0] = 0, offsets[1] = my_bytes;
  return NLE_OK;
}
nle_status nle__comm_alltoallv(nle_ctx *ctx, const void *send, const size_t *send_offsets, const size_t *send_bytes,
                               void **recv, size_t *recv_offsets) {
  *recv = malloc(send_bytes[0] ? send_bytes[0] : 1);
  if (!*recv) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %zu bytes", send_bytes[0]);
  memcpy(*recv, (const char *)send + send_offsets[0], send_bytes[0]);
  recv_offsets[0] = 0, recv_offsets[1] = send_bytes[0];
  return NLE_OK;
}
nle_status nle__comm_alltoallv_known(nle_ctx *ctx, const void *send, const size_t *send_offsets,
                                     const size_t *send_bytes, void *recv, const size_t *recv_offsets,
                                     const size_t *recv_bytes) {
  (void)ctx, (void)recv_bytes;
  memcpy((char *)recv + recv_offsets[0], (const char *)send + send_offsets[0], send_bytes[0]);
  return NLE_OK;
}
nle_status nle__comm_shift(nle_ctx *ctx, const void *send, size_t send_bytes, int to, void *recv, size_t recv_cap,
                           size_t *recv_bytes, int from) {
  (void)to, (void)from;
  return shift_alone(ctx, send, send_bytes, recv, recv_cap, recv_bytes);
}
nle_status nle__comm_barrier(nle_ctx *ctx) { return (void)ctx, NLE_OK; }

#endif

int nle__fixed_point_scale(double largest, double blocks) {
  int exponent = 0;
  frexp(largest * blocks, &exponent);
  return 62 - exponent;
}

/* --- rows moved to their canonical shares (issue 38: the front door, the
 * readers that cannot read by rows) --------------------------------------- */

/* Rank r's rows [begin, end) in the split `counts` (NULL: canonical). */
static nle__row_range split_rows(const uint64_t *counts, size_t n, int ranks, int r) {
  if (!counts) return nle__rank_rows(n, ranks, r);
  size_t begin = 0;
  for (int q = 0; q < r; q++) begin += (size_t)counts[q];
  return (nle__row_range){begin, begin + (size_t)counts[r]};
}

nle_status nle__comm_rebalance(nle_ctx *ctx, const void *mine, size_t n_local, size_t row_bytes, size_t want,
                               void **out, nle__rows *rows) {
  *out = NULL;
  int ranks = nle__ranks(ctx), me = nle__rank(ctx);
  uint64_t row_size = row_bytes, mine_counts[2] = {n_local, want == NLE__CANONICAL ? UINT64_MAX : want};
  nle_status s = nle__comm_same(ctx, &row_size, sizeof row_size, "row sizes");
  /* every rank's (held, wanted) pair, then the two lists */
  uint64_t *pairs = s ? NULL : calloc(4 * (size_t)ranks, sizeof *pairs);
  uint64_t *counts = pairs ? pairs + 2 * ranks : NULL, *wants = pairs ? pairs + 3 * ranks : NULL;
  size_t *plan = pairs ? calloc(3 * (size_t)ranks + 1, sizeof *plan) : NULL;
  if (!s && !plan) s = nle__fail(ctx, NLE_ERR_NOMEM, "out of memory for %d ranks' row counts", ranks);
  s = nle__comm_agree(ctx, s); /* before the next collective call */
  if (!s) s = nle__comm_allgatherv(ctx, mine_counts, sizeof mine_counts, pairs, NULL);
  size_t n = 0, wanted = 0;
  bool canonical = true, in_place = true;
  for (int r = 0; !s && r < ranks; r++) {
    counts[r] = pairs[2 * r];
    wants[r] = pairs[2 * r + 1];
    canonical = canonical && wants[r] == UINT64_MAX;
    n += (size_t)counts[r];
    wanted += (size_t)wants[r];
  }
  if (!s && !canonical && wanted != n)
    s = nle__fail(ctx, NLE_ERR_ARG, "the ranks want %zu rows in all, they hold %zu", wanted, n);
  const uint64_t *target = canonical ? NULL : wants;
  for (int r = 0; !s && r < ranks; r++) {
    nle__row_range t = split_rows(target, n, ranks, r), h = split_rows(counts, n, ranks, r);
    in_place = in_place && t.begin == h.begin && t.end == h.end;
  }
  if (!s) *rows = (nle__rows){n, split_rows(target, n, ranks, me)};
  if (!s && !in_place) {
    /* send_offsets, send_bytes, recv_offsets: what of mine falls in each
     * rank's target */
    size_t *send_offsets = plan, *send_bytes = plan + ranks, *recv_offsets = plan + 2 * ranks;
    nle__row_range held = split_rows(counts, n, ranks, me);
    for (int r = 0; r < ranks; r++) {
      nle__row_range t = split_rows(target, n, ranks, r);
      size_t lo = t.begin > held.begin ? t.begin : held.begin, hi = t.end < held.end ? t.end : held.end;
      send_offsets[r] = hi > lo ? (lo - held.begin) * row_bytes : 0;
      send_bytes[r] = hi > lo ? (hi - lo) * row_bytes : 0;
    }
    static const char nothing = 0;
    s = nle__comm_alltoallv(ctx, mine ? mine : &nothing, send_offsets, send_bytes, out, recv_offsets);
  }
  free(plan);
  free(pairs);
  return s;
}
