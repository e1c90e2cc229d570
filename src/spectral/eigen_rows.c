/* eigen_rows.c — Lanczos on a symmetric operator whose rows are shared out
 * over the context's ranks (issue 38; docs/mpi_spectral.md): PARPACK's
 * pdsaupd/pdseupd, the distributed form of the ARPACK route of eigen.c,
 * with the same which, tolerance, basis size and start vector (the
 * context's seeded stream, drawn for all N points and cut to this rank's
 * rows), so that a run on R ranks follows the single process's iterations
 * up to rounding. PARPACK's inner products are MPI_Allreduce sums in the
 * order the ranks' parts arrive: the results differ from one process's in
 * the last bits (measured in docs/mpi_spectral.md), unlike the stages that
 * sum by fixed blocks (comm.h).
 *
 * PARPACK refuses a rank of no rows (pdsaupd's n <= 0 is its error -1), and
 * a rank may hold none (comm.h), so the eigensolver runs on the ranks that
 * hold rows (a communicator split off the context's); the others wait at
 * the next collective call, where the values are broadcast from rank 0. */
#include "eigen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef NLE_WITH_MPI
#include <arpack/parpack.h>
#include <mpi.h>

/* What a product needs of x, over `active` (the holding ranks): this
 * rank's rows and (halo) the entries of the other ranks' rows that its
 * rows' columns name, fetched from their owners by one MPI_Alltoallv a
 * product; or (no pattern) the whole x by MPI_Allgatherv. On a kNN graph
 * the halo is the rows' neighbours that live elsewhere: at most the whole
 * gather's bytes, much less when the rows' order follows the data's
 * locality. */
typedef struct {
  nle_ctx *ctx;
  MPI_Comm active;
  int size;
  int *counts, *starts; /* whole gather: per active rank, in doubles */
  double *x_all;        /* N entries; only those needed are written */
  size_t begin, mine;
  bool halo;
  int *send_counts, *send_starts, *recv_counts, *recv_starts; /* halo: per active rank, in entries */
  int32_t *send_rows; /* the rows of mine each rank asked for (local indices), by rank */
  int32_t *recv_rows; /* the global indices of what arrives, by rank */
  double *send_buf, *recv_buf;
} gather_t;

static void gather_free(gather_t *g) {
  free(g->counts), free(g->starts), free(g->x_all);
  free(g->send_counts), free(g->send_starts), free(g->recv_counts), free(g->recv_starts);
  free(g->send_rows), free(g->recv_rows), free(g->send_buf), free(g->recv_buf);
}

/* s on every active rank: a failure on any of them (its memory) fails all,
 * before the next collective call that rank would miss. */
static nle_status agreed(gather_t *g, nle_status s, const char *what) {
  int failed = s != NLE_OK;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, g->active);
  return failed && !s ? nle__fail(g->ctx, NLE_ERR_NOMEM, "%s: another rank ran out of memory", what) : s;
}

/* The halo's lists, once: which of the others' rows this rank's columns
 * name (ascending, by owner), and which of its own rows each other rank
 * asked for. The owners are the active ranks' canonical rows. */
static nle_status halo_setup(gather_t *g, const nle_csr *pattern, const nle__rows *rows, uint64_t *halo_bytes) {
  nle_ctx *ctx = g->ctx;
  size_t N = rows->n, P = (size_t)g->size;
  uint8_t *needed = nle__calloc(ctx, N, 1, "the halo");
  g->send_counts = nle__calloc(ctx, P, sizeof(int), "the halo");
  g->send_starts = nle__calloc(ctx, P, sizeof(int), "the halo");
  g->recv_counts = nle__calloc(ctx, P, sizeof(int), "the halo");
  g->recv_starts = nle__calloc(ctx, P, sizeof(int), "the halo");
  nle_status s = needed && g->send_counts && g->send_starts && g->recv_counts && g->recv_starts ? NLE_OK : NLE_ERR_NOMEM;
  size_t halo = 0;
  for (size_t q = 0; !s && q < (size_t)pattern->nnz; q++) {
    size_t j = (size_t)pattern->colind[q];
    if ((j < g->begin || j >= g->begin + g->mine) && !needed[j]) needed[j] = 1, halo++;
  }
  if (!s && !(g->recv_rows = nle__malloc(ctx, (halo ? halo : 1) * sizeof(int32_t), "the halo"))) s = NLE_ERR_NOMEM;
  for (size_t k = 0, at = 0, j = 0; !s && k < P; k++) { /* the owners in rank order: their rows ascend */
    g->recv_starts[k] = (int)at;
    size_t end = (size_t)g->starts[k] + (size_t)g->counts[k];
    for (j = (size_t)g->starts[k]; j < end; j++)
      if (needed[j]) g->recv_rows[at++] = (int32_t)j;
    g->recv_counts[k] = (int)(at - (size_t)g->recv_starts[k]);
  }
  free(needed);
  s = agreed(g, s, "the eigensolver's halo");
  if (!s && MPI_Alltoall(g->recv_counts, 1, MPI_INT, g->send_counts, 1, MPI_INT, g->active) != MPI_SUCCESS)
    s = nle__fail(ctx, NLE_ERR_IO, "MPI_Alltoall failed in the eigensolver's halo");
  size_t asked = 0;
  for (size_t k = 0; !s && k < P; k++) g->send_starts[k] = (int)asked, asked += (size_t)g->send_counts[k];
  if (!s) {
    g->send_rows = nle__malloc(ctx, (asked ? asked : 1) * sizeof(int32_t), "the halo");
    g->send_buf = nle__malloc(ctx, (asked ? asked : 1) * sizeof(double), "the halo");
    g->recv_buf = nle__malloc(ctx, (halo ? halo : 1) * sizeof(double), "the halo");
    if (!g->send_rows || !g->send_buf || !g->recv_buf) s = NLE_ERR_NOMEM;
  }
  s = agreed(g, s, "the eigensolver's halo");
  if (!s && MPI_Alltoallv(g->recv_rows, g->recv_counts, g->recv_starts, MPI_INT32_T, g->send_rows, g->send_counts,
                          g->send_starts, MPI_INT32_T, g->active) != MPI_SUCCESS)
    s = nle__fail(ctx, NLE_ERR_IO, "MPI_Alltoallv failed in the eigensolver's halo");
  if (!s) ctx->bytes_sent += halo * sizeof(int32_t);
  for (size_t q = 0; !s && q < asked; q++) g->send_rows[q] -= (int32_t)g->begin;
  *halo_bytes = asked * sizeof(double);
  g->halo = true;
  return s;
}

static nle_status gather(gather_t *g, const double *x_mine) {
  int code;
  if (g->halo) {
    size_t asked = (size_t)g->send_starts[g->size - 1] + (size_t)g->send_counts[g->size - 1];
    for (size_t q = 0; q < asked; q++) g->send_buf[q] = x_mine[g->send_rows[q]];
    code = MPI_Alltoallv(g->send_buf, g->send_counts, g->send_starts, MPI_DOUBLE, g->recv_buf, g->recv_counts,
                         g->recv_starts, MPI_DOUBLE, g->active);
    size_t halo = (size_t)g->recv_starts[g->size - 1] + (size_t)g->recv_counts[g->size - 1];
    for (size_t q = 0; code == MPI_SUCCESS && q < halo; q++) g->x_all[g->recv_rows[q]] = g->recv_buf[q];
    memcpy(g->x_all + g->begin, x_mine, g->mine * sizeof(double));
    g->ctx->bytes_sent += asked * sizeof(double);
  } else {
    code = MPI_Allgatherv(x_mine, (int)g->mine, MPI_DOUBLE, g->x_all, g->counts, g->starts, MPI_DOUBLE, g->active);
    g->ctx->bytes_sent += (uint64_t)g->mine * sizeof(double) * (uint64_t)(g->size - 1);
  }
  return code == MPI_SUCCESS ? NLE_OK : nle__fail(g->ctx, NLE_ERR_IO, "MPI's exchange failed in the eigensolver");
}

/* The reverse-communication loop and the vectors, on the holding ranks. */
static nle_status solve_active(nle_ctx *ctx, const char *what, const nle__rows *rows, MPI_Comm active,
                               const nle_csr *pattern, nle__rows_apply apply, void *user, int nev, nle__eig_end end,
                               double tol, double *vals, double *vecs) {
  size_t n = rows->mine.end - rows->mine.begin, N = rows->n;
  int size = 1;
  MPI_Comm_size(active, &size);
  a_int nn = (a_int)n, ncv = 2 * nev + 20; /* eigen.c's basis */
  ncv = (size_t)ncv < N ? ncv : (a_int)N;
  a_int lworkl = ncv * (ncv + 8);
  a_int ido = 0, info = 1, iparam[11] = {0}, ipntr[14] = {0};
  iparam[0] = 1;     /* exact shifts */
  iparam[2] = 10000; /* restarts */
  iparam[6] = 1;     /* regular mode */
  const char *which = end == NLE__EIG_LARGEST ? "LA" : "SA";
  gather_t g = {.ctx = ctx, .active = active, .size = size, .begin = rows->mine.begin, .mine = n};
  g.counts = nle__malloc(ctx, (size_t)size * sizeof(int), "Lanczos");
  g.starts = nle__malloc(ctx, (size_t)size * sizeof(int), "Lanczos");
  g.x_all = nle__malloc(ctx, N * sizeof(double), "the gathered Lanczos vector");
  double *resid = nle__malloc(ctx, N * sizeof(double), "Lanczos");
  double *v = nle__malloc(ctx, n * (size_t)ncv * sizeof(double), "the Lanczos basis");
  double *workd = nle__malloc(ctx, 3 * n * sizeof(double), "Lanczos");
  double *workl = nle__malloc(ctx, (size_t)lworkl * sizeof(double), "Lanczos");
  double *d = nle__malloc(ctx, (size_t)ncv * 2 * sizeof(double), "Lanczos");
  a_int *select = nle__calloc(ctx, (size_t)ncv, sizeof(a_int), "Lanczos");
  double *z = vecs ? nle__malloc(ctx, n * (size_t)nev * sizeof(double), "eigenvectors") : NULL;
  nle_status s = g.counts && g.starts && g.x_all && resid && v && workd && workl && d && select && (!vecs || z)
                     ? NLE_OK
                     : NLE_ERR_NOMEM;
  s = agreed(&g, s, what);
  if (!s) { /* the split kept the holding ranks in rank order */
    int ranks = nle__ranks(ctx), k = 0;
    for (int r = 0; r < ranks; r++) {
      nle__row_range rr = nle__rank_rows(N, ranks, r);
      if (rr.end > rr.begin && k < size) g.counts[k] = (int)(rr.end - rr.begin), g.starts[k++] = (int)rr.begin;
    }
    nle_rng r; /* the single process's start vector (eigen.c), this rank's rows of it */
    nle_rng_init(&r, nle_ctx_seed(ctx), 0x6c616e63ULL);
    for (size_t i = 0; i < N; i++) resid[i] = nle_rng_uniform(&r) - 0.5;
    memmove(resid, resid + rows->mine.begin, n * sizeof(double));
  }
  uint64_t halo_bytes = 0, whole_bytes = (uint64_t)n * sizeof(double) * (uint64_t)(size - 1);
  if (!s && pattern) s = halo_setup(&g, pattern, rows, &halo_bytes);
  MPI_Fint comm = MPI_Comm_c2f(active);
  long napply = 0;
  while (!s) {
    pdsaupd_c(comm, &ido, "I", nn, which, nev, tol, resid, ncv, v, nn, iparam, ipntr, workd, workl, lworkl, &info);
    if (ido != -1 && ido != 1) break;
    s = gather(&g, workd + ipntr[0] - 1);
    if (!s && apply(user, g.x_all, workd + ipntr[1] - 1))
      s = nle_ctx_last_status(ctx) != NLE_OK ? nle_ctx_last_status(ctx) : NLE_ERR_NUMERIC;
    int failed = s != NLE_OK; /* a rank's failure (a cancel) stops all: none waits inside PARPACK */
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, active);
    if (failed && !s) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the product failed on another rank", what);
    napply++;
  }
  nle__log(ctx, 1, "%s: PARPACK Lanczos on %d ranks, %ld products, %d restarts; rank %d sent %.3g MB a product (%s; "
           "the whole vector's gather: %.3g MB)", what, size, napply, (int)iparam[2], nle__rank(ctx),
           (double)(pattern ? halo_bytes : whole_bytes) / 1e6, pattern ? "its rows' halo" : "the whole vector",
           (double)whole_bytes / 1e6);
  if (!s && info < 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: PARPACK pdsaupd error %d", what, (int)info);
  if (!s && info == 1)
    s = nle__fail(ctx, NLE_ERR_NUMERIC,
                  "%s: Lanczos did not converge: %d of %d eigenpairs after %d restarts (a graph with more connected "
                  "components than eigenpairs asked for has a repeated eigenvalue; see the components policy)",
                  what, (int)iparam[4], nev, (int)iparam[2]);
  if (!s) {
    pdseupd_c(comm, vecs != NULL, "A", select, d, z ? z : v, nn, 0.0, "I", nn, which, nev, tol, resid, ncv, v, nn,
              iparam, ipntr, workd, workl, lworkl, &info);
    if (info != 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: PARPACK pdseupd error %d", what, (int)info);
  }
  if (!s) {
    memcpy(vals, d, (size_t)nev * sizeof(double));
    for (size_t i = 0; vecs && i < n; i++) /* PARPACK's columns of this rank's rows to our rows */
      for (int t = 0; t < nev; t++) vecs[i * (size_t)nev + (size_t)t] = z[(size_t)t * n + i];
  }
  gather_free(&g);
  free(resid), free(v), free(workd), free(workl), free(d), free(select), free(z);
  return s;
}

nle_status nle__lanczos_rows(nle_ctx *ctx, const char *what, const nle__rows *rows, const nle_csr *pattern,
                             nle__rows_apply apply, void *user, int nev, nle__eig_end end, double tol, double *vals,
                             double *vecs) {
  if (nev < 1 || (size_t)nev >= rows->n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d eigenpairs of a %zu x %zu operator (at most N - 1)", what, nev, rows->n,
                     rows->n);
  if (!nle__distributed(ctx))
    return nle__fail(ctx, NLE_ERR_ARG, "%s: the distributed eigensolver needs more than one rank", what);
  bool holds = rows->mine.end > rows->mine.begin;
  MPI_Comm active = MPI_COMM_NULL;
  nle_status s = NLE_OK;
  if (MPI_Comm_split(*(MPI_Comm *)ctx->comm, holds ? 0 : MPI_UNDEFINED, nle__rank(ctx), &active) != MPI_SUCCESS)
    s = nle__fail(ctx, NLE_ERR_IO, "%s: MPI_Comm_split failed", what);
  if (!s && holds) s = solve_active(ctx, what, rows, active, pattern, apply, user, nev, end, tol, vals, vecs);
  if (active != MPI_COMM_NULL) MPI_Comm_free(&active);
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_bcast(ctx, vals, (size_t)nev * sizeof(double), 0); /* rank 0 holds rows */
  return s;
}

#else

nle_status nle__lanczos_rows(nle_ctx *ctx, const char *what, const nle__rows *rows, const nle_csr *pattern,
                             nle__rows_apply apply, void *user, int nev, nle__eig_end end, double tol, double *vals,
                             double *vecs) {
  (void)rows, (void)pattern, (void)apply, (void)user, (void)nev, (void)end, (void)tol, (void)vals, (void)vecs;
  return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "%s: this build has no MPI (and no PARPACK)", what);
}

#endif

nle_status nle__fix_signs_rows(nle_ctx *ctx, double *V, size_t n, size_t count) {
  /* nle__fix_signs' rule over all ranks: the first largest |entry| in point
   * order decides. Each rank's first largest, then the first strictly
   * larger in rank order: the same entry for any partition. */
  int ranks = nle__ranks(ctx);
  double *mine = nle__calloc(ctx, count, sizeof(double), "signs");
  double *all = nle__malloc(ctx, (size_t)ranks * count * sizeof(double), "signs");
  nle_status s = mine && all ? NLE_OK : NLE_ERR_NOMEM;
  for (size_t t = 0; !s && t < count; t++)
    for (size_t i = 0; i < n; i++)
      if (fabs(V[i * count + t]) > fabs(mine[t])) mine[t] = V[i * count + t];
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgatherv(ctx, mine, count * sizeof(double), all, NULL);
  for (size_t t = 0; !s && t < count; t++) {
    double big = 0.0;
    for (int r = 0; r < ranks; r++)
      if (fabs(all[(size_t)r * count + t]) > fabs(big)) big = all[(size_t)r * count + t];
    if (big < 0)
      for (size_t i = 0; i < n; i++) V[i * count + t] = -V[i * count + t];
  }
  free(mine);
  free(all);
  return s;
}
