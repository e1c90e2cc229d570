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

/* The whole x (N) from every holding rank's rows, over `active`. */
typedef struct {
  nle_ctx *ctx;
  MPI_Comm active;
  int *counts, *starts; /* per active rank, in doubles */
  double *x_all;
  size_t mine;
} gather_t;

static nle_status gather(gather_t *g, const double *x_mine) {
  int code = MPI_Allgatherv(x_mine, (int)g->mine, MPI_DOUBLE, g->x_all, g->counts, g->starts, MPI_DOUBLE, g->active);
  int size = 1;
  MPI_Comm_size(g->active, &size);
  g->ctx->bytes_sent += (uint64_t)g->mine * sizeof(double) * (uint64_t)(size - 1);
  return code == MPI_SUCCESS ? NLE_OK : nle__fail(g->ctx, NLE_ERR_IO, "MPI_Allgatherv failed in the eigensolver");
}

/* The reverse-communication loop and the vectors, on the holding ranks. */
static nle_status solve_active(nle_ctx *ctx, const char *what, const nle__rows *rows, MPI_Comm active,
                               nle__rows_apply apply, void *user, int nev, nle__eig_end end, double tol, double *vals,
                               double *vecs) {
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
  gather_t g = {ctx, active, NULL, NULL, NULL, n};
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
  int failed = s != NLE_OK;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, active);
  if (failed && !s) s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: another rank ran out of memory", what);
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
  MPI_Fint comm = MPI_Comm_c2f(active);
  long napply = 0;
  while (!s) {
    pdsaupd_c(comm, &ido, "I", nn, which, nev, tol, resid, ncv, v, nn, iparam, ipntr, workd, workl, lworkl, &info);
    if (ido != -1 && ido != 1) break;
    s = gather(&g, workd + ipntr[0] - 1);
    if (!s && apply(user, g.x_all, workd + ipntr[1] - 1))
      s = nle_ctx_last_status(ctx) != NLE_OK ? nle_ctx_last_status(ctx) : NLE_ERR_NUMERIC;
    failed = s != NLE_OK; /* a rank's failure (a cancel) stops all: none waits inside PARPACK */
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, active);
    if (failed && !s) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the product failed on another rank", what);
    napply++;
  }
  nle__log(ctx, 2, "%s: PARPACK Lanczos on %d ranks, %ld products, %d restarts", what, size, napply, (int)iparam[2]);
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
  free(g.counts), free(g.starts), free(g.x_all);
  free(resid), free(v), free(workd), free(workl), free(d), free(select), free(z);
  return s;
}

nle_status nle__lanczos_rows(nle_ctx *ctx, const char *what, const nle__rows *rows, nle__rows_apply apply, void *user,
                             int nev, nle__eig_end end, double tol, double *vals, double *vecs) {
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
  if (!s && holds) s = solve_active(ctx, what, rows, active, apply, user, nev, end, tol, vals, vecs);
  if (active != MPI_COMM_NULL) MPI_Comm_free(&active);
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_bcast(ctx, vals, (size_t)nev * sizeof(double), 0); /* rank 0 holds rows */
  return s;
}

#else

nle_status nle__lanczos_rows(nle_ctx *ctx, const char *what, const nle__rows *rows, nle__rows_apply apply, void *user,
                             int nev, nle__eig_end end, double tol, double *vals, double *vecs) {
  (void)rows, (void)apply, (void)user, (void)nev, (void)end, (void)tol, (void)vals, (void)vecs;
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
