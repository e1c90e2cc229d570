/* eigen.c — the eigensolvers every spectral method shares (SPEC 4.1):
 * LAPACK's dsyevr (a range of eigenpairs of a dense symmetric matrix) and
 * dsygvd (the dense generalised pencil A v = lambda B v) for small
 * problems, and ARPACK's implicitly restarted Lanczos (dsaupd/dseupd) on a
 * symmetric operator the caller applies: the sparse matrix itself (regular
 * mode, one end of the spectrum) or its inverse through a factor
 * (shift-invert, done by the caller's apply). A solver that does not
 * converge says so in a status; it never hands back what it has. Start
 * vectors come from the context's seed, so results repeat. */
#include "eigen.h"

#include <arpack/arpack.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

nle_status nle__lanczos(nle_ctx *ctx, const char *what, size_t n, nle__sym_apply apply, void *user, int nev,
                        nle__eig_end end, double tol, double *vals, double *vecs) {
  if (nev < 1 || (size_t)nev >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d eigenpairs of a %zu x %zu operator (at most N - 1)", what, nev, n, n);
  /* ncv: 2 nev + 20 Lanczos vectors (ARPACK's advice is at least 2 nev);
   * more restarts than needed on the clustered spectra of kNN graphs. */
  a_int nn = (a_int)n, ncv = 2 * nev + 20 < nn ? 2 * nev + 20 : nn, lworkl = ncv * (ncv + 8);
  a_int ido = 0, info = 1, iparam[11] = {0}, ipntr[14] = {0};
  iparam[0] = 1;     /* exact shifts */
  iparam[2] = 10000; /* restarts */
  iparam[6] = 1;     /* regular mode on the operator as applied */
  const char *which = end == NLE__EIG_LARGEST ? "LA" : "SA";
  double *resid = nle__malloc(ctx, n * sizeof(double), "Lanczos");
  double *v = nle__malloc(ctx, n * (size_t)ncv * sizeof(double), "the Lanczos basis");
  double *workd = nle__malloc(ctx, 3 * n * sizeof(double), "Lanczos");
  double *workl = nle__malloc(ctx, (size_t)lworkl * sizeof(double), "Lanczos");
  double *d = nle__malloc(ctx, (size_t)ncv * 2 * sizeof(double), "Lanczos");
  a_int *select = nle__calloc(ctx, (size_t)ncv, sizeof(a_int), "Lanczos");
  nle_status s = resid && v && workd && workl && d && select ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    nle_rng r;
    nle_rng_init(&r, nle_ctx_seed(ctx), 0x6c616e63ULL);
    for (size_t i = 0; i < n; i++) resid[i] = nle_rng_uniform(&r) - 0.5;
  }
  while (!s) {
    dsaupd_c(&ido, "I", nn, which, nev, tol, resid, ncv, v, nn, iparam, ipntr, workd, workl, lworkl, &info);
    if (ido != -1 && ido != 1) break;
    if (apply(user, workd + ipntr[0] - 1, workd + ipntr[1] - 1)) s = NLE_ERR_NUMERIC; /* recorded by apply */
  }
  if (!s && info < 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: ARPACK dsaupd error %d", what, (int)info);
  if (!s && info == 1)
    s = nle__fail(ctx, NLE_ERR_NUMERIC,
                  "%s: Lanczos did not converge: %d of %d eigenpairs after %d restarts (a graph with more connected "
                  "components than eigenpairs asked for has a repeated eigenvalue; see the components policy)",
                  what, (int)iparam[4], nev, (int)iparam[2]);
  double *z = !s && vecs ? nle__malloc(ctx, n * (size_t)nev * sizeof(double), "eigenvectors") : NULL;
  if (!s && vecs && !z) s = NLE_ERR_NOMEM;
  if (!s) {
    dseupd_c(vecs != NULL, "A", select, d, z ? z : v, nn, 0.0, "I", nn, which, nev, tol, resid, ncv, v, nn, iparam,
             ipntr, workd, workl, lworkl, &info);
    if (info != 0) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: ARPACK dseupd error %d", what, (int)info);
  }
  if (!s) {
    memcpy(vals, d, (size_t)nev * sizeof(double));
    for (size_t i = 0; vecs && i < n; i++) /* ARPACK's columns to our rows */
      for (int t = 0; t < nev; t++) vecs[i * (size_t)nev + (size_t)t] = z[(size_t)t * n + i];
  }
  free(resid);
  free(v);
  free(workd);
  free(workl);
  free(d);
  free(z);
  free(select);
  return s;
}

nle_status nle__eig_dense(nle_ctx *ctx, const char *what, size_t n, double *A, size_t first, size_t count,
                          double *vals, double *vecs) {
  if (count < 1 || first + count > n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: eigenpairs %zu..%zu of a %zu x %zu matrix", what, first + 1,
                     first + count, n, n);
  lapack_int m = 0, nn = (lapack_int)n;
  lapack_int *support = nle__malloc(ctx, 2 * count * sizeof(lapack_int), "eigenvectors");
  double *w = nle__malloc(ctx, n * sizeof(double), "eigenvalues");
  double *z = vecs ? nle__malloc(ctx, n * count * sizeof(double), "eigenvectors") : NULL;
  nle_status s = support && w && (!vecs || z) ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    lapack_int info = LAPACKE_dsyevr(LAPACK_ROW_MAJOR, vecs ? 'V' : 'N', 'I', 'U', nn, A, nn, 0.0, 0.0,
                                     (lapack_int)first + 1, (lapack_int)(first + count), 0.0, &m, w, z ? z : w,
                                     (lapack_int)count, support);
    if (info || (size_t)m != count)
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: LAPACK dsyevr failed (info %d, %d of %zu eigenpairs)", what, (int)info,
                    (int)m, count);
  }
  if (!s) {
    memcpy(vals, w, count * sizeof(double));
    if (vecs) memcpy(vecs, z, n * count * sizeof(double));
  }
  free(support);
  free(w);
  free(z);
  return s;
}

nle_status nle__eig_dense_general(nle_ctx *ctx, const char *what, size_t n, double *A, double *B, size_t first,
                                  size_t count, double *vals, double *vecs) {
  if (count < 1 || first + count > n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: eigenpairs %zu..%zu of a %zu x %zu pencil", what, first + 1,
                     first + count, n, n);
  double *w = nle__malloc(ctx, n * sizeof(double), "eigenvalues");
  if (!w) return NLE_ERR_NOMEM;
  nle_status s = NLE_OK;
  lapack_int info = LAPACKE_dsygvd(LAPACK_ROW_MAJOR, 1, vecs ? 'V' : 'N', 'U', (lapack_int)n, A, (lapack_int)n, B,
                                   (lapack_int)n, w);
  if (info > (lapack_int)n)
    s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the pencil's B is not positive definite (LAPACK dsygvd, minor %d)",
                  what, (int)(info - (lapack_int)n));
  else if (info)
    s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: LAPACK dsygvd failed (info %d)", what, (int)info);
  if (!s) {
    memcpy(vals, w + first, count * sizeof(double));
    for (size_t i = 0; vecs && i < n; i++) memcpy(vecs + i * count, A + i * n + first, count * sizeof(double));
  }
  free(w);
  return s;
}

void nle__fix_signs(double *V, size_t n, size_t count) {
  for (size_t t = 0; t < count; t++) {
    double big = 0.0;
    for (size_t i = 0; i < n; i++)
      if (fabs(V[i * count + t]) > fabs(big)) big = V[i * count + t];
    if (big < 0)
      for (size_t i = 0; i < n; i++) V[i * count + t] = -V[i * count + t];
  }
}
