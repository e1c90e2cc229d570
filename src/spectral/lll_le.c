/* lll_le.c — Laplacian eigenmaps and spectral clustering by Locally Linear
 * Landmarks through the spectral front door (dissertation eqs. 4.9-4.10,
 * sec. 4.7-4.8): K_Z, the landmarks and Z (alone or over ranks), the LE(Z)
 * baseline, the embedding and its map of new points. The reduced pencil
 * itself is lll.c's (lll_dist.c's over ranks). */
#include "method.h"
#include "spectral_internal.h"

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Laplacian eigenmaps through LLL (eqs. 4.9-4.10), and the LE(Z) baseline   */
/* ------------------------------------------------------------------------ */

/* The automatic K_Z: d + 1 (algorithm 3) held within [5, 10]. Sec. 4.4 ties
 * K_Z to the manifold's intrinsic dimension, not to d ("[d^ + 1, D + 1] ...
 * should not be much bigger than d^ + 1"), and at d = 50 K_Z = 51 makes
 * each point's weights non-local: on a 20,000-point curved sheet and on
 * 20,000 Fashion-MNIST images, K_Z = 5-10 cut LLL's error against exact LE
 * at every L from 100 to 3,000 (sheet, L = 1,000: 13% against 40%;
 * Fashion: 31% against 42%; bench/results/lll_fig45_causes_*.txt). */
enum { KZ_AUTO_MIN = 5, KZ_AUTO_MAX = 10 };

int nle__lll_kz(const nle_spectral_opts *o, size_t L, size_t D) {
  int kz = o->kz;
  if (kz == NLE_AUTO) {
    kz = o->dim + 1 < KZ_AUTO_MIN ? KZ_AUTO_MIN : o->dim + 1 > KZ_AUTO_MAX ? KZ_AUTO_MAX : o->dim + 1;
    if (D > 0 && (size_t)kz > D + 1) kz = (int)D + 1;
  }
  if ((size_t)kz > L) kz = (int)L;
  return kz;
}

/* The graph among the landmarks alone (the "LE (Z)" baseline, dissertation
 * sec. 4.8: the dissertation does not say how it was built, SPEC G07-10):
 * their own k nearest (k capped at L - 1), weighted and symmetrised as W. */
static nle_status landmark_graph(nle_ctx *ctx, const nle_matf *Yl, const nle_spectral_opts *o, nle_csr **Wl) {
  nle_graph_opts go;
  nle__spectral_graph_opts(o, &go);
  if ((size_t)go.k >= Yl->rows) go.k = (int)Yl->rows - 1;
  go.method = NLE_KNN_EXACT, go.pca_dims = 0, go.radius = 0; /* a few landmarks: their exact neighbours */
  nle_graph_result *g = NULL;
  nle_status s = nle_graph_build(ctx, Yl, &go, &g);
  if (!s) *Wl = g->W, g->W = NULL;
  nle_graph_result_free(&g);
  return s;
}

/* The identity weights of the landmarks themselves (for LE(Z)'s own
 * pencil on the landmark graph). */
static nle_status identity_weights(nle_ctx *ctx, size_t L, nle_csr **I_L) {
  nle_status s = nle_csr_alloc(ctx, (int64_t)L, (int64_t)L, (int64_t)L, NLE_F64, I_L);
  for (size_t i = 0; !s && i < L; i++) {
    (*I_L)->rowptr[i + 1] = (int64_t)i + 1;
    (*I_L)->colind[i] = (int32_t)i;
    ((double *)(*I_L)->val)[i] = 1.0;
  }
  return s;
}

nle_status nle__lll_basis_build(nle_ctx *ctx, const nle_matf *Y, const nle_matf *P, size_t L, int kz,
                                nle_landmark_method method, double reg, int32_t **landmarks, nle_csr **Z,
                                double *error) {
  *landmarks = NULL, *Z = NULL;
  nle__rows rows; /* with a communicator, Y (and P) this rank's rows of N (comm.h) */
  nle_status s = nle__comm_rows(ctx, Y->rows, "LLL", &rows);
  if (s) return s;
  nle_matf *Yl = NULL, *Pl = NULL;
  nle_csr *near = NULL;
  int32_t *idx = nle__malloc(ctx, L * sizeof(int32_t), "the landmarks");
  s = nle__comm_agree(ctx, idx ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__landmarks_select_rows(ctx, P ? P : Y, L, method, idx);
  if (!s) s = nle__rows_at(ctx, Y, idx, L, &Yl);
  if (!s && P) s = nle__rows_at(ctx, P, idx, L, &Pl);
  if (!s) s = nle__lll_nearest(ctx, Yl, Y, Pl, P, kz, &near);
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__lll_weights_from(ctx, Yl, Y, near, kz, reg, true, rows.n, Z, error);
  if (!s) *landmarks = idx, idx = NULL;
  free(idx);
  nle_matf_free(&Yl), nle_matf_free(&Pl);
  nle_csr_free(&near);
  return s;
}

/* LE(Z)'s pencil: the landmarks' own graph (their rows Yl, on every rank
 * alike), Z = I there; *deg its degrees. */
static nle_status landmark_pencil(nle_ctx *ctx, const nle_matf *Yl, const nle_spectral_opts *o, int nev, double *vals,
                                  nle_matd **Xl, nle__pencil_info *info) {
  nle_csr *Wl = NULL, *Il = NULL;
  double *deg = NULL;
  /* L points, alike on every rank: BLAS on one thread there, as the
   * pencil over ranks (lll_dist.c) */
  int ranks = nle__alone_begin(ctx), blas = nle__has_comm(ctx) ? nle__blas_set_threads(1) : 0;
  nle_status s = landmark_graph(ctx, Yl, o, &Wl);
  if (!s) s = identity_weights(ctx, Yl->rows, &Il);
  if (!s && !(deg = nle__degrees(ctx, Wl))) s = NLE_ERR_NOMEM;
  bool unnormalised = o->laplacian == NLE_LAPLACIAN_UNNORMALISED;
  if (!s)
    s = nle__lll_pencil(ctx, Il, Wl, -1.0, deg, NULL, unnormalised ? NULL : deg, nev, false, o->pencil, o->tol,
                   o->solver == NLE_EIGEN_BLOCK, vals, Xl, NULL, info);
  if (nle__has_comm(ctx)) nle__blas_set_threads(blas);
  nle__alone_end(ctx, ranks);
  nle_csr_free(&Wl), nle_csr_free(&Il);
  free(deg);
  return s;
}

nle_status nle__lll_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  const nle_spectral_opts *o = job->o;
  const nle_matf *Y = job->Y;
  if (!Y)
    return nle__fail(ctx, NLE_ERR_ARG, "le: Locally Linear Landmarks ({@landmarks} > 0) needs the points: Z reconstructs "
                     "each from its nearest landmarks");
  /* with a communicator, Y and W are this rank's rows of N, and the
   * pencil is summed over ranks (lll_dist.c): the ranks' way even at one
   * rank, so that mpirun gives the same bits at any number */
  bool ranks = nle__has_comm(ctx);
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, Y->rows, "le", &rows);
  if (s) return s;
  size_t n = Y->rows, N = rows.n, D = Y->cols, L = (size_t)o->landmarks, d = (size_t)o->dim, nev = d + 1;
  if (L < nev || L > N)
    return nle__fail(ctx, NLE_ERR_ARG, "le: {@landmarks=%zu} for %zu dimensions of %zu points (d + 1 <= L <= N)", L, d,
                     N);
  const nle__lll_basis *given = job->basis;
  if (given && ranks)
    return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "le: a sweep's landmarks do not run on more than one rank yet");
  int kz = nle__lll_kz(o, L, D);
  double t0 = nle_time_seconds();
  nle_matf *Yl = NULL;
  nle_csr *Z = NULL;
  nle_matd *Xl = NULL;
  double *deg = NULL;
  int32_t *idx = NULL;
  if (given) { /* a sweep's: its landmarks, its own K_Z and error */
    kz = (int)(given->Z->nnz / (int64_t)n);
    r->reconstruction_error = given->error;
    if (!(idx = nle__malloc(ctx, L * sizeof(int32_t), "the landmarks"))) s = NLE_ERR_NOMEM;
    else memcpy(idx, given->landmarks, L * sizeof(int32_t));
  } else { /* landmarks and their search among the principal components the front door made, if it did */
    s = nle__lll_basis_build(ctx, Y, job->pca_Y, L, kz, o->landmark_method, o->reg, &idx, &Z, &r->reconstruction_error);
  }
  const nle_csr *Zu = given ? given->Z : Z;
  r->z_seconds = nle_time_seconds() - t0;
  t0 = nle_time_seconds();
  /* LE's pencil (Z (D - W) Z^T, Z D Z^T), eq. 4.10: A = -W plus the
   * diagonal D; the unnormalised Laplacian's B is I. LE(Z): the same
   * pencil on the landmarks' own graph, Z = I there. */
  double *vals = s ? NULL : nle__malloc(ctx, nev * sizeof(double), "eigenvalues");
  if (!s && !vals) s = NLE_ERR_NOMEM;
  if (!s && !(deg = nle__degrees_from(ctx, job->W, rows.mine.begin))) s = NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
  nle__pencil_info info = {0};
  bool unnormalised = o->laplacian == NLE_LAPLACIAN_UNNORMALISED, block = o->solver == NLE_EIGEN_BLOCK;
  if (!s && o->landmark_graph) {
    s = nle__rows_at(ctx, Y, idx, L, &Yl);
    if (!s) s = landmark_pencil(ctx, Yl, o, (int)nev, vals, &Xl, &info);
  } else if (!s && ranks) {
    s = nle__lll_pencil_rows(ctx, Zu, kz, job->W, -1.0, deg, unnormalised ? NULL : deg, (int)nev, false, o->pencil,
                             o->tol, block, vals, &Xl, &info);
  } else if (!s) {
    s = nle__lll_pencil(ctx, Zu, job->W, -1.0, deg, NULL, unnormalised ? NULL : deg, (int)nev, false, o->pencil, o->tol,
                   block, vals, &Xl, NULL, &info);
  }
  r->reduce_seconds = nle_time_seconds() - t0;
  nle_matd *X = NULL;
  if (!s) s = nle__lll_expand(ctx, Zu, Xl, &X);
  /* symmetric: u = D^1/2 v with W's degrees (the pencil's, unless LE(Z),
   * whose pencil has the landmarks' own) */
  const double *sym_deg = o->laplacian == NLE_LAPLACIAN_SYMMETRIC ? deg : NULL;
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++) {
    double scale = sym_deg ? sqrt(sym_deg[i]) : 1.0;
    for (size_t t = 0; t < d; t++) r->X->data[i * d + t] = scale * X->data[i * nev + t + 1];
  }
  if (!s) s = nle_matd_alloc(ctx, L, d, &r->landmark_X);
  for (size_t a = 0; !s && a < L; a++)
    for (size_t t = 0; t < d; t++) r->landmark_X->data[a * d + t] = Xl->data[a * nev + t + 1];
  if (!s) {
    r->eigenvalues = vals, vals = NULL;
    r->n_eigenvalues = (int)nev;
    r->landmark_index = idx, idx = NULL;
    r->n_landmarks = L;
    r->reduced_singular = info.singular;
    r->solver_used = info.sparse ? (block ? NLE_EIGEN_BLOCK : NLE_EIGEN_SPARSE) : info.lanczos ? NLE_EIGEN_SHIFT_INVERT : NLE_EIGEN_DENSE;
    r->resolved.kz = kz;
    nle__log(ctx, 1, "le: LLL with %zu landmarks, kz = %d: reconstruction error %.4f, Z %.2f s, pencil %.2f s%s", L,
             kz, r->reconstruction_error, r->z_seconds, r->reduce_seconds,
             info.singular ? " (singular B~: solved in its range)" : "");
  }
  if (ranks) s = nle__comm_agree(ctx, s);
  free(vals);
  nle_matd_free(&X);
  free(idx);
  nle_matf_free(&Yl);
  nle_csr_free(&Z);
  nle_matd_free(&Xl);
  free(deg);
  return s;
}

/* Landmark rows of the model's training points (and of their projection
 * when the model searched among components). */
nle_status nle__lll_transform(nle_ctx *ctx, const nle_spectral_model *m, const nle_matf *Ynew, nle_matd **Xnew) {
  size_t L = m->n_landmarks, D = m->D;
  nle_matf *Yl = NULL, *Pl = NULL, *Pq = NULL;
  nle_csr *near = NULL, *Z = NULL;
  nle_status s = nle_matf_alloc(ctx, L, D, &Yl);
  for (size_t a = 0; !s && a < L; a++)
    memcpy(Yl->data + a * D, m->Y->data + (size_t)m->landmarks[a] * D, D * sizeof(float));
  if (!s && m->opts.pca_dims > 0 && m->pca_Y) {
    size_t p = m->pca_Y->cols;
    s = nle_matf_alloc(ctx, L, p, &Pl);
    for (size_t a = 0; !s && a < L; a++)
      memcpy(Pl->data + a * p, m->pca_Y->data + (size_t)m->landmarks[a] * p, p * sizeof(float));
    if (!s) s = nle__spectral_project(ctx, m, Ynew, &Pq);
  }
  if (!s) s = nle__lll_nearest(ctx, Yl, Ynew, Pl, Pq, m->opts.kz, &near);
  if (!s) s = nle__lll_weights_from(ctx, Yl, Ynew, near, m->opts.kz, m->opts.reg, false, Ynew->rows, &Z, NULL);
  if (!s) s = nle__lll_expand(ctx, Z, m->landmark_X, Xnew);
  nle_matf_free(&Yl), nle_matf_free(&Pl), nle_matf_free(&Pq);
  nle_csr_free(&near), nle_csr_free(&Z);
  return s;
}
