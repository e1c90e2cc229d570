/* lll.c — Locally Linear Landmarks (dissertation ch. 4; Vladymyrov and
 * Carreira-Perpinan, ECML 2013): a spectral problem min tr(X A X^T) s.t.
 * X B X^T = I on N points (eq. 4.1) restricted to X = X~ Z, Z the weights
 * that reconstruct each point from its K_Z nearest landmarks (eqs. 4.2-4.8):
 * the L x L pencil A~ = Z A Z^T, B~ = Z B Z^T (eq. 4.5), which still sees
 * every point and every edge, solved by the reduced-pencil solver Brand's
 * kernel eigenmaps share (pencil.c, SPEC G07-20); X = X~ Z for every point
 * and x0 = X~ z0 for a new one. Here Z is held transposed, N x L, one row
 * per point. LE and clustering through the front door: lll_le.c; the
 * pencil over ranks: lll_dist.c. */
#include "method.h"
#include "spectral_internal.h"

#include "../core/comm.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ROW_BLOCK = 1024, LANDMARK_BLOCK = 16 };
/* Candidates per reconstructing landmark when the nearest landmarks are
 * searched among principal components and re-ranked in the data (as the
 * graph's own search: 7 per neighbour). */
enum { CANDIDATES_PER_KZ = 7, CANDIDATES_MAX_EXTRA = 100 };
/* The landmarks' distance matrix for the Gram matrices up to 1 GiB
 * (11,585 landmarks); beyond, each point's Gram matrix from its
 * differences. */
#define DELTA_MAX_BYTES 1073741824.0
/* The sparse pencil's Lanczos tolerance where none is given (the spectral
 * methods' default). */
#define LLL_SPARSE_TOL 1e-12
/* A Z held dense up to 2 GiB. */
#define DENSE_P_MAX_BYTES 2147483648.0

/* ------------------------------------------------------------------------ */
/* Z: the reconstruction weights (eqs. 4.6-4.8)                               */
/* ------------------------------------------------------------------------ */

typedef struct {
  const nle_matf *Yl, *Q;
  const nle_csr *near; /* M x L: each point's landmarks, nearest first */
  int kz;
  double reg;
  nle_csr *Z;
  double *err, *spread; /* per block: squared residuals, squared spread */
  const double *mean;
  const double *delta;  /* L x L squared distances between landmarks, or NULL */
} weights_job;

NLE_HOT static int weights_block(void *job, size_t b, void *scratch) {
  weights_job *j = job;
  size_t D = j->Q->cols, m = j->Q->rows, i1 = (b + 1) * ROW_BLOCK < m ? (b + 1) * ROW_BLOCK : m;
  int kz = j->kz;
  double *w = scratch, *work = w + kz;
  int32_t *idx = (int32_t *)(work + (size_t)kz * D + (size_t)kz * kz);
  double err = 0.0, spread = 0.0;
  double *zval = j->Z->val;
  for (size_t i = b * ROW_BLOCK; i < i1; i++) {
    const float *q = j->Q->data + i * D;
    int64_t q0 = j->near->rowptr[i];
    for (int a = 0; a < kz; a++) idx[a] = j->near->colind[q0 + a];
    if (nle_csr_value(j->near, q0) == 0.0) { /* on a landmark: that landmark alone (SPEC G07-2) */
      for (int a = 0; a < kz; a++) w[a] = a == 0;
    } else if (j->delta) {
      /* eq. 4.7 without the D-dimensional differences: (y - l_a).(y - l_c)
       * = (|y - l_a|^2 + |y - l_c|^2 - |l_a - l_c|^2) / 2, every term a
       * squared distance of the local scale (no cancellation of norms) */
      size_t L = j->Yl->rows;
      double *dist = work + (size_t)kz * kz; /* |y - l_a|^2 in double: O(K_Z D), not the search's floats */
      for (int a = 0; a < kz; a++) {
        const float *l = j->Yl->data + (size_t)idx[a] * D;
        double e = 0.0;
        for (size_t t = 0; t < D; t++) e += ((double)q[t] - l[t]) * ((double)q[t] - l[t]);
        dist[a] = e;
      }
      for (int a = 0; a < kz; a++)
        for (int c = 0; c <= a; c++)
          work[a * kz + c] = work[c * kz + a] =
              0.5 * (dist[a] + dist[c] - j->delta[(size_t)idx[a] * L + (size_t)idx[c]]);
      nle__gram_weights(work, kz, j->reg, w);
    } else {
      nle__barycentre_weights(q, j->Yl->data, D, idx, kz, j->reg, work, w);
    }
    /* columns ascending (insertion sort of kz pairs) */
    for (int a = 1; a < kz; a++)
      for (int c = a; c > 0 && idx[c - 1] > idx[c]; c--) {
        int32_t t = idx[c];
        idx[c] = idx[c - 1], idx[c - 1] = t;
        double u = w[c];
        w[c] = w[c - 1], w[c - 1] = u;
      }
    int64_t at = (int64_t)i * kz;
    for (int a = 0; a < kz; a++) j->Z->colind[at + a] = idx[a], zval[at + a] = w[a];
    for (size_t t = 0; t < D; t++) {
      double r = q[t], c = q[t] - j->mean[t];
      for (int a = 0; a < kz; a++) r -= w[a] * j->Yl->data[(size_t)idx[a] * D + t];
      err += r * r, spread += c * c;
    }
  }
  j->err[b] = err, j->spread[b] = spread;
  return 0;
}

/* The landmarks' squared distances |l_a|^2 + |l_c|^2 - 2 l_a.l_c in double
 * by one DGEMM: O(L^2 D) once instead of O(N K_Z^2 D) for the local Gram
 * matrices (the dissertation's dominant term, sec. 4.3). In double the
 * norms' cancellation costs ~1e-16 |l|^2, far below the local scale. */
static nle_status landmark_distances(nle_ctx *ctx, const nle_matf *Yl, double **delta) {
  size_t L = Yl->rows, D = Yl->cols;
  double *Ld = nle__malloc(ctx, L * D * sizeof(double), "the landmarks");
  double *nrm = nle__malloc(ctx, L * sizeof(double), "the landmarks");
  *delta = nle__malloc(ctx, L * L * sizeof(double), "the landmarks' distances");
  if (!Ld || !nrm || !*delta) {
    free(Ld), free(nrm), free(*delta);
    *delta = NULL;
    return NLE_ERR_NOMEM;
  }
  for (size_t i = 0; i < L * D; i++) Ld[i] = Yl->data[i];
  /* under mpirun each rank's threads follow its placement, and OpenBLAS's
   * bits follow its threads: one thread there, the same bits on any
   * number of ranks */
  int blas = nle__has_comm(ctx) ? nle__blas_set_threads(1) : 0;
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)L, (int)D, 1.0, Ld, (int)D, 0.0, *delta, (int)L);
  if (nle__has_comm(ctx)) nle__blas_set_threads(blas);
  for (size_t a = 0; a < L; a++) nrm[a] = (*delta)[a * L + a];
  for (size_t a = 0; a < L; a++) {
    (*delta)[a * L + a] = 0.0;
    for (size_t c = a + 1; c < L; c++)
      (*delta)[a * L + c] = (*delta)[c * L + a] = fmax(nrm[a] + nrm[c] - 2.0 * (*delta)[a * L + c], 0.0);
  }
  free(Ld), free(nrm);
  return NLE_OK;
}

/* The weights of Q's rows from the landmarks `near` lists (first kz of each
 * row, nearest first). Over ranks (over_ranks: Q is this rank's rows of
 * n_all, in whole blocks of NLE__RANK_ROW_BLOCK): the points' mean and the
 * error's sums are per ROW_BLOCK partials added by nle__comm_sum_blocks,
 * the same bits for any partition and alone; the rule for the landmarks'
 * distance matrix reads n_all. Not over ranks, those sums are this
 * process's alone, even with a communicator. */
nle_status nle__lll_weights_from(nle_ctx *ctx, const nle_matf *Yl, const nle_matf *Q, const nle_csr *near, int kz,
                                 double reg, bool over_ranks, size_t n_all, nle_csr **Z, double *error) {
  size_t m = Q->rows, D = Q->cols, blocks = (m + ROW_BLOCK - 1) / ROW_BLOCK;
  weights_job j = {Yl, Q, near, kz, reg, NULL, NULL, NULL, NULL, NULL};
  double *mean = nle__calloc(ctx, D, sizeof(double), "the points' mean");
  double *part = nle__calloc(ctx, (blocks ? blocks : 1) * (D > 2 ? D : 2), sizeof(double), "the points' mean");
  j.err = nle__calloc(ctx, blocks + 1, sizeof(double), "LLL weights");
  j.spread = nle__calloc(ctx, blocks + 1, sizeof(double), "LLL weights");
  nle_status s = mean && part && j.err && j.spread ? NLE_OK : NLE_ERR_NOMEM;
  if (over_ranks) s = nle__comm_agree(ctx, s);
  int ranks = over_ranks ? 0 : nle__alone_begin(ctx);
  for (size_t b = 0; !s && b < blocks; b++)
    for (size_t i = b * ROW_BLOCK; i < m && i < (b + 1) * ROW_BLOCK; i++)
      for (size_t t = 0; t < D; t++) part[b * D + t] += Q->data[i * D + t];
  if (!s) s = nle__comm_sum_blocks(ctx, part, blocks, D, mean);
  for (size_t t = 0; !s && t < D; t++) mean[t] /= (double)n_all;
  j.mean = mean;
  double *delta = NULL;
  if (!s && kz > 1 && (double)Yl->rows * (double)Yl->rows * sizeof(double) <= DELTA_MAX_BYTES &&
      (double)n_all * kz * kz * (double)D > (double)Yl->rows * (double)Yl->rows * (double)D / 8)
    s = landmark_distances(ctx, Yl, &delta);
  if (!s) s = nle_csr_alloc(ctx, (int64_t)m, (int64_t)Yl->rows, (int64_t)m * kz, NLE_F64, &j.Z);
  for (size_t i = 0; !s && i <= m; i++) j.Z->rowptr[i] = (int64_t)i * kz;
  size_t scratch = (size_t)kz * (1 + D + (size_t)kz) * sizeof(double) + (size_t)kz * sizeof(int32_t);
  j.delta = delta;
  if (!s)
    s = nle__for_blocks(ctx, "LLL weights", blocks, nle__threads_for(ctx, (double)m * (double)D * kz * kz), scratch,
                        weights_block, &j);
  if (over_ranks) s = nle__comm_agree(ctx, s);
  for (size_t b = 0; !s && b < blocks; b++) part[2 * b] = j.err[b], part[2 * b + 1] = j.spread[b];
  double sums[2] = {0, 0};
  if (!s && error) s = nle__comm_sum_blocks(ctx, part, blocks, 2, sums);
  if (!s && error) *error = sums[1] > 0 ? sqrt(sums[0] / sums[1]) : 0.0;
  if (!over_ranks) nle__alone_end(ctx, ranks);
  if (!s) *Z = j.Z, j.Z = NULL;
  nle_csr_free(&j.Z);
  free(mean), free(part), free(j.err), free(j.spread), free(delta);
  return s;
}

static nle_status check_finite(nle_ctx *ctx, const nle_matf *M, const char *what) {
  for (size_t i = 0; i < M->rows * M->cols; i++)
    if (!isfinite(M->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "LLL: %s: row %zu, column %zu is not finite", what, i / M->cols,
                       i % M->cols);
  return NLE_OK;
}

nle_status nle_lll_weights(nle_ctx *ctx, const nle_matf *Yl, const nle_matf *Q, int kz, double reg, nle_csr **Z,
                           double *error) {
  *Z = NULL;
  if (!Yl || !Q || Yl->cols != Q->cols || Yl->rows < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "LLL weights: landmarks and points must be given with the same columns");
  if (kz < 1 || (size_t)kz > Yl->rows)
    return nle__fail(ctx, NLE_ERR_ARG, "LLL weights: {@kz=%d} of %zu landmarks (1..L)", kz, Yl->rows);
  if (!(reg >= 0 && isfinite(reg))) return nle__fail(ctx, NLE_ERR_ARG, "LLL weights: {@reg=%g} must be a finite number >= 0", reg);
  nle_status s = check_finite(ctx, Yl, "a landmark");
  if (!s) s = check_finite(ctx, Q, "a point");
  nle_csr *near = NULL;
  if (!s) s = nle_knn_query(ctx, Yl, Q, kz, &near);
  if (!s) s = nle__lll_weights_from(ctx, Yl, Q, near, kz, reg, false, Q->rows, Z, error);
  nle_csr_free(&near);
  return s;
}

typedef struct {
  const nle_matf *Yl, *Q;
  const nle_csr *cand;
  int kz;
  nle_csr *near;
} rerank_job;

/* The kz nearest of each point's candidate landmarks by their distances in
 * the data (ties by index). */
NLE_HOT static int rerank_block(void *job, size_t b, void *scratch) {
  rerank_job *j = job;
  nle__pair *p = scratch;
  size_t D = j->Q->cols, m = j->Q->rows, i1 = (b + 1) * ROW_BLOCK < m ? (b + 1) * ROW_BLOCK : m;
  float *val = j->near->val;
  for (size_t i = b * ROW_BLOCK; i < i1; i++) {
    const float *q = j->Q->data + i * D;
    int64_t c0 = j->cand->rowptr[i], nc = j->cand->rowptr[i + 1] - c0;
    for (int64_t c = 0; c < nc; c++) {
      /* float, vectorised in fixed lanes (the same bits in every clone): a
       * ranking (the Gram matrices recompute the kz kept in double) */
      const float *l = j->Yl->data + (size_t)j->cand->colind[c0 + c] * D;
      float lane[NLE__LANES] = {0};
      size_t t = 0;
      for (; t + NLE__LANES <= D; t += NLE__LANES)
        for (size_t a = 0; a < NLE__LANES; a++) lane[a] += (q[t + a] - l[t + a]) * (q[t + a] - l[t + a]);
      for (size_t a = 0; t + a < D; a++) lane[a] += (q[t + a] - l[t + a]) * (q[t + a] - l[t + a]);
      p[c] = (nle__pair){nle__lanes_total_f(lane), j->cand->colind[c0 + c]};
    }
    for (int a = 0; a < j->kz; a++) { /* partial selection: kz is small */
      int64_t best = a;
      for (int64_t c = a + 1; c < nc; c++)
        if (nle__pair_greater(p[best], p[c])) best = c;
      nle__pair t = p[a];
      p[a] = p[best], p[best] = t;
      j->near->colind[(int64_t)i * j->kz + a] = (int32_t)p[a].i;
      val[(int64_t)i * j->kz + a] = (float)p[a].d;
    }
  }
  return 0;
}

/* Each point's kz nearest landmarks: exactly (GEMM), or, when the points
 * have principal components (Pl, Pq), among CANDIDATES_PER_KZ kz found
 * there and re-ranked in the data: at a million points, 10,000 landmarks
 * and D = 784, the exact search is 8e12 flops (SPEC G07-3). */
nle_status nle__lll_nearest(nle_ctx *ctx, const nle_matf *Yl, const nle_matf *Q, const nle_matf *Pl,
                                    const nle_matf *Pq, int kz, nle_csr **near) {
  size_t L = Yl->rows, m = Q->rows;
  int nc = kz * CANDIDATES_PER_KZ < kz + CANDIDATES_MAX_EXTRA ? kz * CANDIDATES_PER_KZ : kz + CANDIDATES_MAX_EXTRA;
  /* re-ranking costs nc D per point at scalar speed, the exact search L D
   * at GEMM speed: candidates only pay well below L */
  if (!Pl || (size_t)nc * 8 >= L) return nle_knn_query(ctx, Yl, Q, kz, near);
  nle_csr *cand = NULL;
  nle_status s = nle_knn_query(ctx, Pl, Pq, nc, &cand);
  rerank_job j = {Yl, Q, cand, kz, NULL};
  if (!s) s = nle_csr_alloc(ctx, (int64_t)m, (int64_t)L, (int64_t)m * kz, NLE_F32, &j.near);
  for (size_t i = 0; !s && i <= m; i++) j.near->rowptr[i] = (int64_t)i * kz;
  if (!s)
    s = nle__for_blocks(ctx, "LLL landmark search", (m + ROW_BLOCK - 1) / ROW_BLOCK,
                        nle__threads_for(ctx, (double)m * nc * (double)Q->cols), (size_t)nc * sizeof(nle__pair),
                        rerank_block, &j);
  if (!s) *near = j.near, j.near = NULL;
  nle_csr_free(&j.near);
  nle_csr_free(&cand);
  return s;
}

/* ------------------------------------------------------------------------ */
/* The reduced matrices Z^T (A + diag) Z, never N x N                         */
/* ------------------------------------------------------------------------ */

typedef struct {
  const nle_csr *Z, *Zt, *A, *P;
  const double *diag;
  double alpha;
  size_t L;
  int64_t *count; /* pass 1: P's row lengths */
  nle_csr *Pout;  /* pass 2: P's entries */
  double *dense;  /* or P dense, N x L (when nearly every landmark is
                     reached from every point) */
  double *out;
} reduce_job;

/* Row n of P = A Z (the landmarks reached in one step of A from n's
 * landmarks), into a dense accumulator with a list of the touched
 * columns; pass 1 counts them, pass 2 writes them (ascending n order of
 * A's row: the same bits for any thread count). */
static int product_block(void *job, size_t b, void *scratch) {
  reduce_job *j = job;
  const nle_csr *A = j->A, *Z = j->Z;
  double *acc = scratch;
  int32_t *touched = (int32_t *)(acc + j->L);
  size_t n = (size_t)A->rows, i1 = (b + 1) * ROW_BLOCK < n ? (b + 1) * ROW_BLOCK : n;
  const double *zv = Z->val;
  if (j->dense) { /* straight into P's rows (zeroed) */
    for (size_t i = b * ROW_BLOCK; i < i1; i++) {
      double *row = j->dense + i * j->L;
      for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
        int64_t mrow = A->colind[q];
        double a = j->alpha * nle_csr_value(A, q);
        for (int64_t r = Z->rowptr[mrow]; r < Z->rowptr[mrow + 1]; r++) row[Z->colind[r]] += a * zv[r];
      }
    }
    return 0;
  }
  memset(acc, 0, j->L * sizeof(double)); /* the scratch comes uninitialised; rows leave it zero */
  for (size_t i = b * ROW_BLOCK; i < i1; i++) {
    int64_t nt = 0;
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) {
      int64_t mrow = A->colind[q];
      double a = j->alpha * nle_csr_value(A, q);
      for (int64_t r = Z->rowptr[mrow]; r < Z->rowptr[mrow + 1]; r++) {
        int32_t c = Z->colind[r];
        if (acc[c] == 0.0 && !(a * zv[r] == 0.0)) {
          /* first touch (an exactly cancelled sum is touched again: harmless) */
          touched[nt++] = c;
        }
        acc[c] += a * zv[r];
      }
    }
    if (!j->Pout) {
      j->count[i] = nt;
    } else {
      int64_t at = j->Pout->rowptr[i];
      double *pv = j->Pout->val;
      for (int64_t t = 0; t < nt; t++) {
        int32_t c = touched[t];
        if (at < j->Pout->rowptr[i + 1]) j->Pout->colind[at] = c, pv[at++] = acc[c];
      }
      while (at < j->Pout->rowptr[i + 1]) j->Pout->colind[at] = 0, pv[at++] = 0.0; /* unreachable padding */
    }
    for (int64_t t = 0; t < nt; t++) acc[touched[t]] = 0.0;
  }
  return 0;
}

/* Rows a of out = Z^T P + Z^T diag Z: over the points n that landmark a
 * reconstructs (Zt's row a, ascending n). */
static int reduce_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  reduce_job *j = job;
  const nle_csr *Z = j->Z, *Zt = j->Zt, *P = j->P;
  size_t L = j->L, a1 = (b + 1) * LANDMARK_BLOCK < L ? (b + 1) * LANDMARK_BLOCK : L;
  const double *zv = Z->val, *ztv = Zt->val, *pv = P ? P->val : NULL;
  for (size_t a = b * LANDMARK_BLOCK; a < a1; a++) {
    double *row = j->out + a * L;
    memset(row, 0, L * sizeof(double));
    for (int64_t q = Zt->rowptr[a]; q < Zt->rowptr[a + 1]; q++) {
      int64_t n = Zt->colind[q];
      double za = ztv[q];
      if (j->dense) {
        const double *prow = j->dense + (size_t)n * L;
#pragma omp simd
        for (size_t c = 0; c < L; c++) row[c] += za * prow[c];
      } else if (P) {
        for (int64_t r = P->rowptr[n]; r < P->rowptr[n + 1]; r++) row[P->colind[r]] += za * pv[r];
      }
      if (j->diag) {
        double zd = za * j->diag[n];
        for (int64_t r = Z->rowptr[n]; r < Z->rowptr[n + 1]; r++) row[Z->colind[r]] += zd * zv[r];
      }
    }
  }
  return 0;
}

/* P = alpha A Z (N x L) into the job: sparse (*P), or, when dense_ok and
 * the rows' upper bound min(L, |A_n| K_Z) says most landmarks are reached
 * anyway, dense in j->dense (its product with Z^T is then a stream of
 * length-L axpys instead of scattered adds: fig. 4.5's 60,000 points,
 * K_W = 200, K_Z = 50, L = 450: 7.2 -> 5.5 s). */
static nle_status form_product(nle_ctx *ctx, reduce_job *j, bool dense_ok, nle_csr **P) {
  const nle_csr *A = j->A, *Z = j->Z;
  /* A's rows: Z may hold more (over ranks, its halo's: lll_dist.c) */
  size_t n = (size_t)A->rows, L = j->L, blocks = (n + ROW_BLOCK - 1) / ROW_BLOCK;
  double reach = 0.0;
  for (size_t i = 0; dense_ok && i < n; i++) {
    double row = 0.0;
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
      row += (double)(Z->rowptr[A->colind[q] + 1] - Z->rowptr[A->colind[q]]);
    reach += fmin(row, (double)L);
  }
  if (dense_ok && reach >= 0.5 * (double)n * (double)L && (double)n * (double)L * sizeof(double) <= DENSE_P_MAX_BYTES) {
    if (!(j->dense = nle__calloc(ctx, n * L, sizeof(double), "LLL's A Z"))) return NLE_ERR_NOMEM;
    return nle__for_blocks(ctx, "LLL reduced matrix", blocks, nle__threads_for(ctx, (double)A->nnz * 8.0), 0,
                           product_block, j);
  }
  size_t scratch = L * (sizeof(double) + sizeof(int32_t));
  int threads = nle__threads_for(ctx, (double)A->nnz * (double)Z->nnz / (double)Z->rows);
  nle_status s = NLE_OK;
  if (!(j->count = nle__malloc(ctx, n * sizeof(int64_t), "LLL's A Z"))) s = NLE_ERR_NOMEM;
  if (!s) s = nle__for_blocks(ctx, "LLL reduced matrix", blocks, threads, scratch, product_block, j);
  int64_t total = 0;
  for (size_t i = 0; !s && i < n; i++) total += j->count[i];
  if (!s) s = nle_csr_alloc(ctx, (int64_t)n, (int64_t)L, total, NLE_F64, P);
  for (size_t i = 0; !s && i < n; i++) (*P)->rowptr[i + 1] = (*P)->rowptr[i] + j->count[i];
  j->Pout = *P;
  if (!s) s = nle__for_blocks(ctx, "LLL reduced matrix", blocks, threads, scratch, product_block, j);
  j->P = *P, j->Pout = NULL;
  free(j->count);
  j->count = NULL;
  return s;
}

nle_status nle__lll_product(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, double alpha, nle_csr **P) {
  *P = NULL;
  reduce_job j = {Z, NULL, A, NULL, NULL, alpha, (size_t)Z->cols, NULL, NULL, NULL, NULL};
  nle_status s = form_product(ctx, &j, false, P);
  if (s) nle_csr_free(P);
  return s;
}

/* out (L x L) = Z^T (alpha A + diag(diag)) Z; A (N x N, symmetric) or
 * diag may be NULL. */
static nle_status reduce(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, const nle_csr *A, double alpha,
                         const double *diag, double *out) {
  size_t L = (size_t)Z->cols;
  reduce_job j = {Z, Zt, A, NULL, diag, alpha, L, NULL, NULL, NULL, out};
  nle_csr *P = NULL;
  nle_status s = A ? form_product(ctx, &j, true, &P) : NLE_OK;
  if (!s)
    s = nle__for_blocks(ctx, "LLL reduced matrix", (L + LANDMARK_BLOCK - 1) / LANDMARK_BLOCK,
                        nle__threads_for(ctx, (double)(P ? P->nnz : 0) * Z->nnz / (double)Z->rows + (double)Z->nnz * 8),
                        0, reduce_block, &j);
  free(j.dense);
  nle_csr_free(&P);
  return s;
}

/* X = Z Xl (N x c from L x c). */
nle_status nle__lll_expand(nle_ctx *ctx, const nle_csr *Z, const nle_matd *Xl, nle_matd **X) {
  size_t n = (size_t)Z->rows, c = Xl->cols;
  nle_status s = nle_matd_alloc(ctx, n, c, X);
  const double *zv = Z->val;
  for (size_t i = 0; !s && i < n; i++) {
    double *x = (*X)->data + i * c;
    memset(x, 0, c * sizeof(double));
    for (int64_t r = Z->rowptr[i]; r < Z->rowptr[i + 1]; r++)
      for (size_t t = 0; t < c; t++) x[t] += zv[r] * Xl->data[(size_t)Z->colind[r] * c + t];
  }
  return s;
}

/* Z's shape and the number of eigenpairs, for the public solvers (dense:
 * the pencil is formed L x L). */
static nle_status check_pencil(nle_ctx *ctx, const nle_csr *Z, int nev, bool dense) {
  if (!Z || Z->dtype != NLE_F64 || Z->rows < 1 || Z->cols < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "LLL: Z must be the N x L double weights nle_lll_weights gives");
  if (nev < 1 || nev > Z->cols)
    return nle__fail(ctx, NLE_ERR_ARG, "LLL: %d eigenpairs of %lld landmarks (1..L)", nev, (long long)Z->cols);
  return dense ? nle__check_memory(ctx, 4.0 * (double)Z->cols * (double)Z->cols * sizeof(double),
                                   "LLL's reduced L x L pencil")
               : NLE_OK;
}

/* out = Z^T Z (B = I's reduced matrix). */
static nle_status weights_gram(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, double *out) {
  size_t n = (size_t)Z->rows;
  double *ones = nle__malloc(ctx, n * sizeof(double), "LLL's B");
  if (!ones) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) ones[i] = 1.0;
  nle_status s = reduce(ctx, Z, Zt, NULL, 1.0, ones, out);
  free(ones);
  return s;
}

nle_status nle__lll_solve_reduced(nle_ctx *ctx, const nle_csr *Z, const double *At, const double *Bt, int nev,
                                  bool largest, double *vals, nle_matd **Xl, nle_matd **X, nle__pencil_info *info) {
  size_t L = (size_t)Z->cols;
  nle_matd *V = NULL;
  nle_csr *Zt = NULL;
  double *own = NULL;
  nle_status s = NLE_OK;
  if (!Bt) { /* B = I */
    if (!(own = nle__malloc(ctx, L * L * sizeof(double), "LLL's reduced B"))) return NLE_ERR_NOMEM;
    s = nle_csr_transpose(ctx, Z, &Zt);
    if (!s) s = weights_gram(ctx, Z, Zt, own);
    Bt = own;
  }
  if (!s) s = nle_matd_alloc(ctx, L, (size_t)nev, &V);
  if (!s)
    s = nle__pencil_solve(ctx, "LLL", L, At, Bt, nev, largest ? NLE__EIG_LARGEST : NLE__EIG_SMALLEST, vals, V->data,
                          info);
  if (!s) nle__fix_signs(V->data, L, (size_t)nev);
  if (!s && X) s = nle__lll_expand(ctx, Z, V, X);
  if (!s && Xl) *Xl = V, V = NULL;
  nle_matd_free(&V);
  nle_csr_free(&Zt);
  free(own);
  return s;
}

/* The dense pencil's bytes: A~, B~, B~'s factor and the solver's two L x L
 * work matrices (pencil.c). */
static double dense_pencil_bytes(size_t L) { return 5.0 * (double)L * (double)L * sizeof(double); }

/* Above this many landmarks the reduced pencil is held sparse by default
 * (sparse_pencil.c); at or below, dense (pencil.c): there A~ is nearly
 * full and the dense reduction's streamed rows beat the sparse one's
 * scattered adds, while the dense solve is still cheap. Fig. 4.5's
 * problem (Fashion-MNIST, K_W = 200, d = 50): dense faster at L = 300,
 * sparse from 500 (20,000 and 60,000 images; docs/lll.md, "The sparse
 * reduced pencil"). */
size_t nle__lll_sparse_min = 400;

bool nle__lll_pencil_sparse(nle_ctx *ctx, nle_lll_pencil form, size_t L) {
  if (form == NLE_PENCIL_DENSE || form == NLE_PENCIL_SPARSE) return form == NLE_PENCIL_SPARSE;
  return L > nle__lll_sparse_min || dense_pencil_bytes(L) > (double)nle__memory_cap(ctx);
}

/* The dense route: Z^T (alpha A + diag A) Z and Z^T (B + diag B) Z
 * formed L x L, then pencil.c. */
static nle_status lll_pencil_dense(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, double alpha,
                                   const double *A_diag, const nle_csr *B, const double *B_diag, int nev, bool largest,
                                   double *vals, nle_matd **Xl, nle_matd **X, nle__pencil_info *info) {
  size_t L = (size_t)Z->cols;
  bool identity = !B && !B_diag;
  nle_csr *Zt = NULL;
  nle_status s = nle__check_memory(ctx, dense_pencil_bytes(L), "LLL's dense reduced L x L pencil");
  if (s) return s;
  double *At = nle__malloc(ctx, L * L * sizeof(double), "LLL's reduced A");
  double *Bt = identity ? NULL : nle__malloc(ctx, L * L * sizeof(double), "LLL's reduced B");
  s = At && (identity || Bt) ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle_csr_transpose(ctx, Z, &Zt);
  if (!s) s = reduce(ctx, Z, Zt, A, alpha, A_diag, At);
  if (!s && !identity) s = reduce(ctx, Z, Zt, B, 1.0, B_diag, Bt);
  if (!s) s = nle__lll_solve_reduced(ctx, Z, At, Bt, nev, largest, vals, Xl, X, info);
  nle_csr_free(&Zt);
  free(At), free(Bt);
  return s;
}

/* The sparse route (sparse_pencil.c): the same pencil as CSR, solved by
 * Lanczos on B~'s sparse factor. A singular B~ (a landmark whose points
 * all have zero weight) has its range solved by the dense route when that
 * fits the memory cap; beyond, it is refused by name. */
static nle_status lll_pencil_sparse(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, double alpha,
                                    const double *A_diag, const nle_csr *B, const double *B_diag, int nev,
                                    bool largest, double tol, bool block, double *vals, nle_matd **Xl,
                                    nle_matd **X, nle__pencil_info *info) {
  size_t L = (size_t)Z->cols, n = (size_t)Z->rows;
  nle_csr *Zt = NULL, *At = NULL, *Bt = NULL;
  nle_matd *V = NULL;
  double *ones = !B && !B_diag ? nle__malloc(ctx, n * sizeof(double), "LLL's B") : NULL;
  nle_status s = !B && !B_diag && !ones ? NLE_ERR_NOMEM : NLE_OK;
  for (size_t i = 0; ones && i < n; i++) ones[i] = 1.0; /* B = I: B~ = Z^T Z */
  if (!s) s = nle_csr_transpose(ctx, Z, &Zt);
  if (!s) s = nle__lll_reduce_sparse(ctx, Z, Zt, A, alpha, A_diag, &At);
  if (!s) s = nle__lll_reduce_sparse(ctx, Z, Zt, B, 1.0, ones ? ones : B_diag, &Bt);
  if (!s) s = nle_matd_alloc(ctx, L, (size_t)nev, &V);
  if (!s)
    s = nle__sparse_pencil_solve(ctx, "LLL", At, Bt, nev, largest ? NLE__EIG_LARGEST : NLE__EIG_SMALLEST, tol, block,
                                 vals, V->data, info);
  nle_csr_free(&Zt), nle_csr_free(&At), nle_csr_free(&Bt);
  free(ones);
  if (s && info->singular && !nle__check_memory(ctx, dense_pencil_bytes(L), "LLL's dense reduced pencil")) {
    nle__clear_error(ctx);
    nle_matd_free(&V);
    return lll_pencil_dense(ctx, Z, A, alpha, A_diag, B, B_diag, nev, largest, vals, Xl, X, info);
  }
  if (!s) nle__fix_signs(V->data, L, (size_t)nev);
  if (!s && X) s = nle__lll_expand(ctx, Z, V, X);
  if (!s && Xl) *Xl = V, V = NULL;
  nle_matd_free(&V);
  return s;
}

/* The reduced pencil (Z^T (alpha A + diag A) Z, Z^T (B + diag B) Z) (B and
 * its diagonal both absent: I) and its nev eigenpairs at one end: vals,
 * X~ (L x nev, signs fixed), and X = Z X~ when asked; dense or sparse by
 * `form` (auto: nle__lll_pencil_sparse's rule). */
nle_status nle__lll_pencil(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, double alpha, const double *A_diag,
                           const nle_csr *B, const double *B_diag, int nev, bool largest, nle_lll_pencil form,
                           double tol, bool block, double *vals, nle_matd **Xl, nle_matd **X,
                           nle__pencil_info *info) {
  nle__pencil_info local = {0};
  if (!info) info = &local;
  if (nle__lll_pencil_sparse(ctx, form, (size_t)Z->cols))
    return lll_pencil_sparse(ctx, Z, A, alpha, A_diag, B, B_diag, nev, largest, tol, block, vals, Xl, X, info);
  return lll_pencil_dense(ctx, Z, A, alpha, A_diag, B, B_diag, nev, largest, vals, Xl, X, info);
}

/* The dense L x L copy of a CSR (both triangles). */
static double *densified(nle_ctx *ctx, const nle_csr *M) {
  size_t L = (size_t)M->rows;
  double *out = nle__calloc(ctx, L * L, sizeof(double), "LLL's dense reduced pencil");
  for (int64_t a = 0; out && a < M->rows; a++)
    for (int64_t q = M->rowptr[a]; q < M->rowptr[a + 1]; q++) out[(size_t)a * L + (size_t)M->colind[q]] = nle_csr_value(M, q);
  return out;
}

nle_status nle__lll_solve_csr(nle_ctx *ctx, const nle_csr *At, const nle_csr *Bt, int nev, bool largest,
                              nle_lll_pencil form, double tol, bool block, double *vals, nle_matd **V,
                              nle__pencil_info *info) {
  size_t L = (size_t)At->rows;
  nle__eig_end end = largest ? NLE__EIG_LARGEST : NLE__EIG_SMALLEST;
  nle_status s = nle_matd_alloc(ctx, L, (size_t)nev, V);
  bool sparse = nle__lll_pencil_sparse(ctx, form, L);
  if (!s && sparse) s = nle__sparse_pencil_solve(ctx, "LLL", At, Bt, nev, end, tol, block, vals, (*V)->data, info);
  if (s && sparse && info->singular && !nle__check_memory(ctx, dense_pencil_bytes(L), "LLL's dense reduced pencil")) {
    nle__clear_error(ctx); /* its range, which only the dense solver finds */
    s = NLE_OK, sparse = false;
  }
  double *Ad = NULL, *Bd = NULL;
  if (!s && !sparse) s = nle__check_memory(ctx, dense_pencil_bytes(L), "LLL's dense reduced L x L pencil");
  if (!s && !sparse && (!(Ad = densified(ctx, At)) || !(Bd = densified(ctx, Bt)))) s = NLE_ERR_NOMEM;
  if (!s && !sparse) s = nle__pencil_solve(ctx, "LLL", L, Ad, Bd, nev, end, vals, (*V)->data, info);
  if (!s) nle__fix_signs((*V)->data, L, (size_t)nev);
  free(Ad), free(Bd);
  if (s) nle_matd_free(V);
  return s;
}

nle_status nle_lll_solve(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, const double *A_diag, const nle_csr *B,
                         const double *B_diag, int nev, bool largest, double *vals, nle_matd **Xl, nle_matd **X) {
  if (Xl) *Xl = NULL;
  if (X) *X = NULL;
  nle_status s = check_pencil(ctx, Z, nev, false);
  if (s) return s;
  int64_t n = Z->rows;
  if ((A && (A->rows != n || A->cols != n)) || (B && (B->rows != n || B->cols != n)))
    return nle__fail(ctx, NLE_ERR_ARG, "LLL: A and B must be N x N with N = %lld, Z's rows", (long long)n);
  return nle__lll_pencil(ctx, Z, A, 1.0, A_diag, B, B_diag, nev, largest, NLE_PENCIL_AUTO, LLL_SPARSE_TOL, false, vals, Xl, X,
                    NULL);
}

/* G = Z^T F (L x p), one landmark row at a time over the points it
 * reconstructs (ascending: the same bits for any thread count). */
typedef struct {
  const nle_csr *Zt;
  const nle_matd *F;
  double *G;
} factor_job;

static int factor_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  factor_job *j = job;
  size_t L = (size_t)j->Zt->rows, p = j->F->cols, a1 = (b + 1) * LANDMARK_BLOCK < L ? (b + 1) * LANDMARK_BLOCK : L;
  const double *zv = j->Zt->val;
  for (size_t a = b * LANDMARK_BLOCK; a < a1; a++) {
    double *g = j->G + a * p;
    memset(g, 0, p * sizeof(double));
    for (int64_t q = j->Zt->rowptr[a]; q < j->Zt->rowptr[a + 1]; q++) {
      const double *f = j->F->data + (size_t)j->Zt->colind[q] * p;
      for (size_t t = 0; t < p; t++) g[t] += zv[q] * f[t];
    }
  }
  return 0;
}

/* out = G M G^T (M NULL: I), L x L. */
static nle_status sandwich(nle_ctx *ctx, const double *G, size_t L, size_t p, const nle_matd *M, double *out) {
  if (!M) {
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasNoTrans, (int)L, (int)p, 1.0, G, (int)p, 0.0, out, (int)L);
  } else {
    double *T = nle__malloc(ctx, L * p * sizeof(double), "LLL's G M");
    if (!T) return NLE_ERR_NOMEM;
    cblas_dsymm(CblasRowMajor, CblasRight, CblasUpper, (int)L, (int)p, 1.0, M->data, (int)p, G, (int)p, 0.0, T,
                (int)p);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)L, (int)L, (int)p, 1.0, T, (int)p, G, (int)p, 0.0, out,
                (int)L);
    free(T);
  }
  for (size_t a = 0; a < L; a++) /* both triangles, exactly symmetric */
    for (size_t c = a + 1; c < L; c++) out[c * L + a] = out[a * L + c];
  return NLE_OK;
}

nle_status nle_lll_factored(nle_ctx *ctx, const nle_csr *Z, const nle_matd *F, const nle_matd *MA, const nle_matd *MB,
                            int nev, bool largest, double *vals, nle_matd **Xl, nle_matd **X) {
  if (Xl) *Xl = NULL;
  if (X) *X = NULL;
  nle_status s = check_pencil(ctx, Z, nev, true);
  if (s) return s;
  size_t n = (size_t)Z->rows, L = (size_t)Z->cols, p = F ? F->cols : 0;
  if (!F || F->rows != n || p < 1 || (MA && (MA->rows != p || MA->cols != p)) || (MB && (MB->rows != p || MB->cols != p)))
    return nle__fail(ctx, NLE_ERR_ARG, "LLL: F must be N x p (N = %zu) and M_A, M_B p x p", n);
  nle_csr *Zt = NULL;
  double *G = nle__malloc(ctx, L * p * sizeof(double), "LLL's Z^T F");
  double *At = nle__malloc(ctx, L * L * sizeof(double), "LLL's reduced A");
  double *Bt = MB ? nle__malloc(ctx, L * L * sizeof(double), "LLL's reduced B") : NULL;
  s = G && At && (!MB || Bt) ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle_csr_transpose(ctx, Z, &Zt);
  factor_job fj = {Zt, F, G};
  if (!s)
    s = nle__for_blocks(ctx, "LLL reduced matrix", (L + LANDMARK_BLOCK - 1) / LANDMARK_BLOCK,
                        nle__threads_for(ctx, (double)Z->nnz * (double)p), 0, factor_block, &fj);
  if (!s) s = sandwich(ctx, G, L, p, MA, At);
  if (!s && MB) s = sandwich(ctx, G, L, p, MB, Bt);
  if (!s) s = nle__lll_solve_reduced(ctx, Z, At, Bt, nev, largest, vals, Xl, X, NULL); /* MB NULL: B = I */
  nle_csr_free(&Zt);
  free(G), free(At), free(Bt);
  return s;
}

