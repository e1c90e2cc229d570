/* test_comm.c — the communicator's calls (src/core/comm.c). Alone they
 * must be local and exact; run under mpirun (tests/mpi.sh: the runner then
 * gives every case the world communicator, test_comm_ctx) each result is
 * checked against what every rank can compute for itself from the rank
 * formulas below. */
#include "harness.h"
#include "../src/core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* rank r's part of the gathers: r + 1 bytes of value 'a' + r */
static size_t part_bytes(int r) { return (size_t)r + 1; }

static void rank_rows_partition(void) {
  const size_t sizes[] = {0, 1, 4095, 4096, 4097, 3 * 4096 + 17, 1000000};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    for (int ranks = 1; ranks <= 5; ranks++) {
      size_t expect = 0, smallest = (size_t)-1, largest = 0;
      for (int r = 0; r < ranks; r++) {
        nle__row_range rr = nle__rank_rows(sizes[i], ranks, r);
        nle_test(rr.begin == expect && rr.end >= rr.begin);
        nle_test(rr.begin % NLE__RANK_ROW_BLOCK == 0 || rr.begin == sizes[i]);
        int owned = 1; /* the range's rank at each block's first and last row */
        for (size_t row = rr.begin; row < rr.end; row += NLE__RANK_ROW_BLOCK) {
          size_t last = row + NLE__RANK_ROW_BLOCK - 1 < rr.end ? row + NLE__RANK_ROW_BLOCK - 1 : rr.end - 1;
          owned &= nle__rank_of_row(sizes[i], ranks, row) == r && nle__rank_of_row(sizes[i], ranks, last) == r;
        }
        nle_test(owned);
        size_t blocks = (rr.end - rr.begin + NLE__RANK_ROW_BLOCK - 1) / NLE__RANK_ROW_BLOCK;
        smallest = blocks < smallest ? blocks : smallest;
        largest = blocks > largest ? blocks : largest;
        expect = rr.end;
      }
      nle_test(expect == sizes[i]);
      nle_test(largest - smallest <= 1); /* balanced to a block */
    }
}

static void collectives(void) {
  nle_ctx *ctx = test_comm_ctx(1);
  int ranks = nle_ctx_ranks(ctx), me = nle_ctx_rank(ctx);
  nle_test(me >= 0 && me < ranks);

  int64_t sums[2] = {me + 1, -(int64_t)me};
  nle_test_ok(nle__comm_sum_i64(ctx, sums, 2));
  nle_test(sums[0] == (int64_t)ranks * (ranks + 1) / 2 && sums[1] == -(int64_t)ranks * (ranks - 1) / 2);
  double hi = me, lo = me;
  nle_test_ok(nle__comm_max_d(ctx, &hi, 1));
  nle_test_ok(nle__comm_min_d(ctx, &lo, 1));
  nle_test(hi == ranks - 1 && lo == 0);

  char mine[16], all[256];
  size_t offsets[17];
  memset(mine, 'a' + me, part_bytes(me));
  nle_test_ok(nle__comm_allgatherv(ctx, mine, part_bytes(me), all, offsets));
  for (int r = 0, at = 0; r < ranks; at += (int)part_bytes(r), r++) {
    nle_test(offsets[r] == (size_t)at);
    for (size_t b = 0; b < part_bytes(r); b++) nle_test(all[at + b] == 'a' + r);
  }

  nle__rows rows;
  size_t total = 3 * NLE__RANK_ROW_BLOCK + 5;
  nle__row_range share = nle__rank_rows(total, ranks, me);
  nle_test_ok(nle__comm_rows(ctx, share.end - share.begin, "Y", &rows));
  nle_test(rows.n == total && rows.mine.begin == share.begin && rows.mine.end == share.end);
  if (ranks > 1) {
    nle_test(nle__comm_rows(ctx, share.end - share.begin + (me == 0), "Y", &rows) == NLE_ERR_ARG);
    nle_test(strstr(nle_ctx_error(ctx), "Y: rank 0 holds") != NULL);
  }

  /* the canonical rows gathered without a size exchange: row i holds i */
  int32_t *row_ids = malloc(total * sizeof(int32_t)), *gathered = malloc(total * sizeof(int32_t));
  for (size_t i = share.begin; i < share.end; i++) row_ids[i - share.begin] = (int32_t)i;
  nle_test_ok(nle__comm_allgather_rows(ctx, row_ids, total, sizeof(int32_t), gathered));
  for (size_t i = 0; i < total; i++) nle_test(gathered[i] == (int32_t)i);
  free(row_ids), free(gathered);

  char token[8] = "";
  if (me == ranks - 1) strcpy(token, "last");
  nle_test_ok(nle__comm_bcast(ctx, token, sizeof token, ranks - 1));
  nle_test(strcmp(token, "last") == 0);

  /* all-to-all: rank me sends to rank r the bytes (me, r) repeated me + r + 1 times */
  size_t send_offsets[16], send_bytes[16], recv_offsets[17], at = 0;
  unsigned char send[16 * 40];
  for (int r = 0; r < ranks; r++) {
    send_offsets[r] = at, send_bytes[r] = (size_t)(me + r + 1);
    memset(send + at, 16 * me + r, send_bytes[r]);
    at += send_bytes[r];
  }
  void *recv = NULL;
  nle_test_ok(nle__comm_alltoallv(ctx, send, send_offsets, send_bytes, &recv, recv_offsets));
  for (int r = 0; recv && r < ranks; r++) {
    nle_test(recv_offsets[r + 1] - recv_offsets[r] == (size_t)(r + me + 1));
    for (size_t b = recv_offsets[r]; b < recv_offsets[r + 1]; b++)
      nle_test(((unsigned char *)recv)[b] == 16 * r + me);
  }
  free(recv);

  /* a ring: each rank passes its rank to the next */
  int out = me, in = -1;
  size_t got = 0;
  nle_test_ok(nle__comm_shift(ctx, &out, sizeof out, (me + 1) % ranks, &in, sizeof in, &got, (me + ranks - 1) % ranks));
  nle_test(got == sizeof in && in == (me + ranks - 1) % ranks);
  nle_test_ok(nle__comm_barrier(ctx));
  nle_ctx_free(&ctx);
}

/* One rank fails: every rank returns its status, and the others its
 * message named by rank. Mismatched inputs are refused on every rank. */
static void failures_agree(void) {
  nle_ctx *ctx = test_comm_ctx(1);
  int ranks = nle_ctx_ranks(ctx), me = nle_ctx_rank(ctx);
  nle_status s = NLE_OK;
  if (me == ranks - 1) s = nle__fail(ctx, NLE_ERR_FORMAT, "rows.npy: bad header");
  s = nle__comm_agree(ctx, s);
  nle_test(s == NLE_ERR_FORMAT);
  nle_test(strstr(nle_ctx_error(ctx), "rows.npy: bad header") != NULL);
  if (me != ranks - 1) nle_test(strncmp(nle_ctx_error(ctx), "rank ", 5) == 0);
  nle_test(nle__comm_agree(ctx, NLE_OK) == NLE_OK);
  nle_test(nle__comm_agree(ctx, me == 0 ? NLE_WARN_NOT_CONVERGED : NLE_OK) == NLE_WARN_NOT_CONVERGED);

  char options[] = "perplexity=30";
  nle_test_ok(nle__comm_same(ctx, options, sizeof options, "options"));
  if (ranks > 1) {
    if (me == 1) options[11] = '5';
    nle_test(nle__comm_same(ctx, options, sizeof options, "options") == NLE_ERR_ARG);
    nle_test(strstr(nle_ctx_error(ctx), "different options") != NULL);
  }
  nle_ctx_free(&ctx);
}

/* Blocks' partials of mixed signs and magnitudes: the sums equal a long
 * double reference to 1e-14 of the magnitudes, the same bits for the blocks
 * in any order, and under mpirun the same bits with the blocks shared out
 * to the ranks as with every block on one process. */
static void sum_blocks_any_partition(void) {
  enum { BLOCKS = 37, N = 5 };
  double partials[BLOCKS * N], reversed[BLOCKS * N], alone[N], backwards[N], shared[N];
  uint64_t state = 12345;
  for (size_t i = 0; i < BLOCKS * N; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(state >> 11) / 9007199254740992.0 - 0.5;
    partials[i] = ldexp(u, (int)(i % 7) * 9 - 20) * (i % N == 4 ? 0 : 1);
  }
  for (size_t b = 0; b < BLOCKS; b++) memcpy(reversed + b * N, partials + (BLOCKS - 1 - b) * N, sizeof(double) * N);
  nle_ctx *one = test_ctx(1);
  nle_test_ok(nle__comm_sum_blocks(one, partials, BLOCKS, N, alone));
  nle_test_ok(nle__comm_sum_blocks(one, reversed, BLOCKS, N, backwards));
  nle_test(memcmp(alone, backwards, sizeof alone) == 0);
  for (size_t j = 0; j < N; j++) {
    long double want = 0, size = 0;
    for (size_t b = 0; b < BLOCKS; b++) want += partials[b * N + j], size += fabsl(partials[b * N + j]);
    nle_test(fabsl(alone[j] - want) <= 1e-14L * size);
  }
  nle_test(alone[4] == 0);
  double bad = NAN;
  nle_test(nle__comm_sum_blocks(one, &bad, 1, 1, shared) == NLE_ERR_VALUE);

  nle_ctx *ctx = test_comm_ctx(1);
  size_t ranks = (size_t)nle_ctx_ranks(ctx), me = (size_t)nle_ctx_rank(ctx);
  size_t first = BLOCKS * me / ranks, last = BLOCKS * (me + 1) / ranks;
  nle_test_ok(nle__comm_sum_blocks(ctx, partials + first * N, last - first, N, shared));
  nle_test(memcmp(alone, shared, sizeof alone) == 0);
  nle_ctx_free(&ctx);
  nle_ctx_free(&one);
}

static void set_comm_refusals(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_test(nle_ctx_ranks(ctx) == 1 && nle_ctx_rank(ctx) == 0);
  nle_test_ok(nle_ctx_set_comm(ctx, NULL));
  if (!nle_mpi_available()) {
    int fake = 0;
    nle_test(nle_ctx_set_comm(ctx, &fake) == NLE_ERR_UNSUPPORTED);
    nle_test(strstr(nle_ctx_error(ctx), "without MPI") != NULL);
  }
  nle_ctx_free(&ctx);
}

const nle_test_case comm_tests[] = {{"comm/rank_rows_partition", rank_rows_partition},
                                    {"comm/collectives", collectives},
                                    {"comm/failures_agree", failures_agree},
                                    {"comm/sum_blocks_any_partition", sum_blocks_any_partition},
                                    {"comm/set_comm_refusals", set_comm_refusals},
                                    {NULL, NULL}};
