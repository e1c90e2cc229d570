/* alignment.c — what the LLE family shares (LLE, Hessian LLE, LTSA): each
 * point's local model contributes a small symmetric block on its
 * neighbourhood's indices to one sparse alignment matrix
 *   M = sum_i S_i B_i S_i^T,
 * whose bottom eigenvectors after the constant one are the embedding
 * (Zhang and Zha 2004 call this the alignment; LLE's B_i is v v^T with
 * v = (1, -w)). The blocks are computed in parallel into fixed slots and
 * summed in a fixed order (the same bits for any thread count); the
 * eigenpairs come densely or by shift-invert Lanczos on a CHOLMOD factor;
 * the embedding is held to the lecture slides' LLE constraints
 * sum_i x_i = 0, (1/N) X^T X = I for the whole family. */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DENSE_MAX_N = 400, POINT_BLOCK = 256 };

void nle__jacobi_eig(double *A, int n, double *vals, double *V) {
  for (int i = 0; i < n * n; i++) V[i] = (i % (n + 1)) == 0;
  for (int sweep = 0; sweep < 60; sweep++) {
    double off = 0.0, diag = 0.0;
    for (int p = 0; p < n; p++) {
      diag += A[p * n + p] * A[p * n + p];
      for (int q = p + 1; q < n; q++) off += A[p * n + q] * A[p * n + q];
    }
    if (off <= 1e-30 * diag || off == 0.0) break;
    for (int p = 0; p < n; p++)
      for (int q = p + 1; q < n; q++) {
        if (A[p * n + q] == 0.0) continue;
        double theta = (A[q * n + q] - A[p * n + p]) / (2.0 * A[p * n + q]);
        double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
        double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < n; k++) { /* A = J^T A J */
          double akp = A[k * n + p], akq = A[k * n + q];
          A[k * n + p] = c * akp - s * akq;
          A[k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; k++) {
          double apk = A[p * n + k], aqk = A[q * n + k];
          A[p * n + k] = c * apk - s * aqk;
          A[q * n + k] = s * apk + c * aqk;
        }
        for (int k = 0; k < n; k++) {
          double vkp = V[k * n + p], vkq = V[k * n + q];
          V[k * n + p] = c * vkp - s * vkq;
          V[k * n + q] = s * vkp + c * vkq;
        }
      }
  }
  /* sort descending, columns with their values (selection: n is small) */
  for (int i = 0; i < n; i++) vals[i] = A[i * n + i];
  for (int a = 0; a < n; a++) {
    int best = a;
    for (int b = a + 1; b < n; b++) best = vals[b] > vals[best] ? b : best;
    if (best == a) continue;
    double t = vals[a];
    vals[a] = vals[best], vals[best] = t;
    for (int k = 0; k < n; k++) t = V[k * n + a], V[k * n + a] = V[k * n + best], V[k * n + best] = t;
  }
}

/* scikit-learn refuses the same for the LLE family. */
nle_status nle__check_tangent_dim(nle_ctx *ctx, const nle__spectral_job *job, const char *who) {
  if ((size_t)job->o->dim <= job->Y->cols) return NLE_OK;
  return nle__fail(ctx, NLE_ERR_ARG,
                   "%s: {@dim=%d} exceeds the data's %zu dimensions: a neighbourhood spans at most %zu tangent "
                   "directions", who, job->o->dim, job->Y->cols, job->Y->cols);
}

void nle__tangent_space(const nle__spectral_job *job, size_t i, int m, int32_t *idx, double *scratch) {
  const nle_csr *knn = job->knn;
  size_t D = job->Y->cols;
  double *Z = scratch, *C = Z + (size_t)m * D, *V = C + (size_t)m * (size_t)m, *vals = V + (size_t)m * (size_t)m;
  idx[0] = (int32_t)i;
  for (int a = 1; a < m; a++) idx[a] = knn->colind[knn->rowptr[i] + a - 1];
  for (size_t t = 0; t < D; t++) { /* the neighbourhood about its mean */
    double mean = 0.0;
    for (int a = 0; a < m; a++) mean += job->Y->data[(size_t)idx[a] * D + t];
    mean /= m;
    for (int a = 0; a < m; a++) Z[(size_t)a * D + t] = job->Y->data[(size_t)idx[a] * D + t] - mean;
  }
  for (int a = 0; a < m; a++)
    for (int c = 0; c <= a; c++) {
      double g = 0.0;
      for (size_t t = 0; t < D; t++) g += Z[(size_t)a * D + t] * Z[(size_t)c * D + t];
      C[a * m + c] = C[c * m + a] = g;
    }
  nle__jacobi_eig(C, m, vals, V);
  /* The centred Gram matrix has the constant vector in its null space.
   * Where d exceeds the neighbourhood's rank (repeated points, d above its
   * dimension) the columns beyond the rank are any null vectors, the
   * constant among them, and G_i = [1/sqrt(m), V_i] stops being orthonormal
   * (LTSA's I - G G^T then has negative eigenvalues). Columns in order made
   * orthogonal to the constant and to each other (modified Gram-Schmidt,
   * twice): those of positive eigenvalue are so already and stay; the one
   * left with no norm (the constant's share) goes last, as the constant. */
  double u = 1.0 / sqrt((double)m), *col = Z; /* Z is free now: m doubles */
  int kept = 0, dropped = -1;
  for (int c = 0; c < m; c++) {
    for (int a = 0; a < m; a++) col[a] = V[a * m + c];
    for (int pass = 0; pass < 2; pass++) {
      double dot = 0.0;
      for (int a = 0; a < m; a++) dot += col[a] * u;
      for (int a = 0; a < m; a++) col[a] -= dot * u;
      for (int p = 0; p < kept; p++) {
        dot = 0.0;
        for (int a = 0; a < m; a++) dot += col[a] * V[a * m + p];
        for (int a = 0; a < m; a++) col[a] -= dot * V[a * m + p];
      }
    }
    double norm = 0.0;
    for (int a = 0; a < m; a++) norm += col[a] * col[a];
    if (norm < 1e-16 || kept == m - 1) { /* the constant's direction */
      dropped = c;
      continue;
    }
    norm = 1.0 / sqrt(norm);
    for (int a = 0; a < m; a++) V[a * m + kept] = col[a] * norm;
    vals[kept++] = vals[c];
  }
  for (int a = 0; a < m; a++) V[a * m + m - 1] = u;
  if (dropped >= 0) vals[m - 1] = 0.0;
}

typedef struct {
  const nle__local_model *lm;
  const nle__spectral_job *job;
  int32_t *idx;   /* N x max_m */
  int *m;         /* N */
  double *blocks; /* N x max_m^2 */
} blocks_job;

static int blocks_block(void *job, size_t b, void *scratch) {
  const blocks_job *j = job;
  size_t n = (size_t)j->job->knn->rows, mm = (size_t)j->lm->max_m, i1 = (b + 1) * POINT_BLOCK < n ? (b + 1) * POINT_BLOCK : n;
  for (size_t i = b * POINT_BLOCK; i < i1; i++)
    j->m[i] = j->lm->local(j->lm->model, j->job, i, j->idx + i * mm, j->blocks + i * (j->lm->rank_one ? mm : mm * mm),
                           scratch); /* rank one: v alone */
  return 0;
}

/* M = sum_i S_i B_i S_i^T as CSR. The points that touch each row are
 * listed first (a CSR of row -> (point, slot) pairs, in point order);
 * then each row is summed into a dense accumulator in that order, its
 * columns collected once and sorted: the same sums for any thread count,
 * and no sort over all the triplets. The rows in ROW_BLOCKS fixed blocks
 * in parallel, twice: their column counts, then their entries (the rows
 * of 20,000 LLE points took 0.11-0.2 s serially with qsort). */
enum { ROW_BLOCKS = 64, PREFETCH_AHEAD = 4 };

typedef struct {
  size_t n, mm;
  const int32_t *idx;
  const int *m;
  const double *blocks; /* point i's at i block_len: m x m, or v of v v^T (rank_one) */
  size_t block_len;
  bool rank_one;
  const int64_t *start, *touch;
  int64_t *count; /* pass 0: each row's columns */
  nle_csr *out;   /* pass 1: filled */
} assemble_job;

/* Row `row`'s distinct columns into cols (sorted), their sums into acc
 * when it is not NULL; seen (and acc) are left as found, all zero. */
static size_t row_columns(const assemble_job *j, size_t row, char *seen, int32_t *cols, double *acc) {
  size_t ncols = 0, mm = j->mm;
  for (int64_t p = j->start[row]; p < j->start[row + 1]; p++) {
    size_t i = (size_t)j->touch[p] / mm, a = (size_t)j->touch[p] % mm;
    if (acc && p + PREFETCH_AHEAD < j->start[row + 1]) { /* the touches' block rows lie scattered: fetch ahead */
      size_t ia = (size_t)j->touch[p + PREFETCH_AHEAD] / mm, aa = (size_t)j->touch[p + PREFETCH_AHEAD] % mm;
      const double *ahead = j->blocks + ia * j->block_len + (j->rank_one ? 0 : aa * (size_t)j->m[ia]);
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + mm - 1);
    }
    const double *block = j->blocks + i * j->block_len;
    for (int c = 0; c < j->m[i]; c++) {
      int32_t col = j->idx[i * mm + (size_t)c];
      cols[ncols] = col; /* kept when new: no branch to mispredict */
      ncols += !seen[col];
      seen[col] = 1;
      if (acc) acc[col] += j->rank_one ? block[a] * block[c] : block[a * (size_t)j->m[i] + (size_t)c];
    }
  }
  for (size_t c = 1; c < ncols; c++) { /* insertion sort: a row has a few dozen columns */
    int32_t v = cols[c];
    size_t q = c;
    for (; q > 0 && cols[q - 1] > v; q--) cols[q] = cols[q - 1];
    cols[q] = v;
  }
  for (size_t c = 0; c < ncols; c++) seen[cols[c]] = 0;
  return ncols;
}

static int assemble_block(void *job, size_t b, void *scratch, bool fill) {
  const assemble_job *j = job;
  size_t n = j->n, per = (n + ROW_BLOCKS - 1) / ROW_BLOCKS, r1 = (b + 1) * per < n ? (b + 1) * per : n;
  double *acc = scratch;
  int32_t *cols = (int32_t *)(acc + n);
  char *seen = (char *)(cols + n + 1); /* cols: n + 1, the branchless append writes one past a full row */
  memset(seen, 0, n);
  if (fill) memset(acc, 0, n * sizeof(double));
  for (size_t row = b * per; row < r1; row++) {
    size_t ncols = row_columns(j, row, seen, cols, fill ? acc : NULL);
    if (!fill) {
      j->count[row] = (int64_t)ncols;
      continue;
    }
    int64_t k = j->out->rowptr[row];
    for (size_t c = 0; c < ncols; c++) {
      j->out->colind[k + (int64_t)c] = cols[c];
      ((double *)j->out->val)[k + (int64_t)c] = acc[cols[c]];
      acc[cols[c]] = 0.0;
    }
  }
  return 0;
}

static int count_block(void *job, size_t b, void *scratch) { return assemble_block(job, b, scratch, false); }
static int fill_block(void *job, size_t b, void *scratch) { return assemble_block(job, b, scratch, true); }

static nle_status assemble(nle_ctx *ctx, size_t n, int max_m, const int32_t *idx, const int *m, const double *blocks,
                           bool rank_one, nle_csr **M) {
  size_t mm = (size_t)max_m;
  *M = NULL;
  int64_t *start = nle__calloc(ctx, n + 1, sizeof(int64_t), "the alignment matrix");
  if (!start) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    for (int a = 0; a < m[i]; a++) start[idx[i * mm + (size_t)a] + 1]++;
  for (size_t i = 0; i < n; i++) start[i + 1] += start[i];
  int64_t *touch = nle__malloc(ctx, (size_t)(start[n] ? start[n] : 1) * sizeof(int64_t), "the alignment matrix");
  int64_t *fill = nle__malloc(ctx, (n + 1) * sizeof(int64_t), "the alignment matrix");
  nle_status s = touch && fill ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) {
    memcpy(fill, start, n * sizeof(int64_t));
    for (size_t i = 0; i < n; i++) /* (point i, its slot a) touches row idx[i][a] */
      for (int a = 0; a < m[i]; a++) touch[fill[idx[i * mm + (size_t)a]]++] = (int64_t)(i * mm + (size_t)a);
  }
  assemble_job job = {n, mm, idx, m, blocks, rank_one ? mm : mm * mm, rank_one, start, touch, fill, NULL};
  size_t scratch = n * sizeof(double) + (n + 1) * sizeof(int32_t) + n;
  int threads = nle__threads_for(ctx, (double)start[n] * (double)mm);
  if (!s) s = nle__for_blocks(ctx, "the alignment matrix", ROW_BLOCKS, threads, scratch, count_block, &job);
  int64_t nnz = 0;
  for (size_t row = 0; !s && row < n; row++) nnz += fill[row];
  if (!s) s = nle_csr_alloc(ctx, (int64_t)n, (int64_t)n, nnz, NLE_F64, &job.out);
  for (size_t row = 0; !s && row < n; row++) job.out->rowptr[row + 1] = job.out->rowptr[row] + fill[row];
  if (!s) s = nle__for_blocks(ctx, "the alignment matrix", ROW_BLOCKS, threads, scratch, fill_block, &job);
  free(start);
  free(touch);
  free(fill);
  if (s) nle_csr_free(&job.out);
  *M = job.out;
  return s;
}

/* The slides' constraints made exact: M's bottom eigenvalues sit within
 * ~1e-8 of each other on manifold data, where any eigensolver's vectors
 * carry errors of eps ||M|| / gap ~ 1e-8 along the constant one; the
 * columns are centred (projected off the null vector M 1 = 0, known
 * exactly), orthonormalised by modified Gram-Schmidt run twice, and scaled
 * by sqrt N: sum_i x_i = 0, (1/N) X^T X = I. */
static void constrain(double *X, size_t n, size_t d) {
  for (int pass = 0; pass < 2; pass++)
    for (size_t t = 0; t < d; t++) {
      double mean = 0.0;
      for (size_t i = 0; i < n; i++) mean += X[i * d + t];
      mean /= (double)n;
      for (size_t i = 0; i < n; i++) X[i * d + t] -= mean;
      for (size_t p = 0; p < t; p++) {
        double dot = 0.0, pp = 0.0;
        for (size_t i = 0; i < n; i++) dot += X[i * d + t] * X[i * d + p], pp += X[i * d + p] * X[i * d + p];
        for (size_t i = 0; i < n; i++) X[i * d + t] -= dot / pp * X[i * d + p];
      }
      double norm = 0.0;
      for (size_t i = 0; i < n; i++) norm += X[i * d + t] * X[i * d + t];
      double scale = sqrt((double)n / norm);
      for (size_t i = 0; i < n; i++) X[i * d + t] *= scale;
    }
}

nle_status nle__alignment_embed(nle_ctx *ctx, const nle__spectral_job *job, const nle__local_model *lm,
                                nle_spectral_result *r) {
  const nle_spectral_opts *o = job->o;
  size_t n = (size_t)job->knn->rows, d = (size_t)o->dim, nev = d + 1, mm = (size_t)lm->max_m;
  size_t block_len = lm->rank_one ? mm : mm * mm;
  nle_status s = nle__check_memory(ctx, (double)n * (double)block_len * sizeof(double), "the local blocks");
  if (s) return s;
  blocks_job bj = {lm, job, nle__malloc(ctx, n * mm * sizeof(int32_t), "the local blocks"),
                   nle__malloc(ctx, n * sizeof(int), "the local blocks"),
                   nle__malloc(ctx, n * block_len * sizeof(double), "the local blocks")};
  if (!bj.idx || !bj.m || !bj.blocks) s = NLE_ERR_NOMEM;
  double t0 = nle_time_seconds(), t_blocks = 0, t_assemble = 0;
  if (!s)
    s = nle__for_blocks(ctx, lm->name, (n + POINT_BLOCK - 1) / POINT_BLOCK,
                        nle__threads_for(ctx, (double)n * (double)mm * (double)mm * (double)job->Y->cols),
                        lm->scratch_doubles * sizeof(double), blocks_block, &bj);
  for (size_t i = 0; !s && i < n; i++)
    if (bj.m[i] < 0)
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the local model of point %zu failed (a degenerate neighbourhood)",
                    lm->name, i + 1);
  nle_csr *M = NULL;
  t_blocks = nle_time_seconds() - t0;
  t0 = nle_time_seconds();
  if (!s) s = assemble(ctx, n, lm->max_m, bj.idx, bj.m, bj.blocks, lm->rank_one, &M);
  t_assemble = nle_time_seconds() - t0;
  t0 = nle_time_seconds();
  free(bj.idx);
  free(bj.m);
  free(bj.blocks);
  double *vals = nle__malloc(ctx, nev * sizeof(double), "eigenvalues");
  double *U = nle__malloc(ctx, n * nev * sizeof(double), "eigenvectors");
  if (!s && (!vals || !U)) s = NLE_ERR_NOMEM;
  r->solver_used = o->solver != NLE_EIGEN_AUTO ? o->solver : n <= DENSE_MAX_N ? NLE_EIGEN_DENSE : NLE_EIGEN_SHIFT_INVERT;
  if (r->solver_used == NLE_EIGEN_SPARSE) r->solver_used = NLE_EIGEN_SHIFT_INVERT; /* the small end needs the inverse */
  if (!s && r->solver_used == NLE_EIGEN_DENSE) {
    s = nle__check_memory(ctx, (double)n * (double)n * sizeof(double), "the dense alignment matrix");
    double *A = s ? NULL : nle__calloc(ctx, n * n, sizeof(double), "the dense alignment matrix");
    if (!s && !A) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++) A[i * n + (size_t)M->colind[q]] = nle_csr_value(M, q);
    if (!s) s = nle__eig_dense(ctx, lm->name, n, A, 0, nev, vals, U);
    free(A);
  } else if (!s) {
    /* M is positive semi-definite with M 1 = 0; the shift sits far below
     * the small eigenvalues asked for (1e-4 to 1e-10 of the top on
     * manifold data) yet keeps the factor definite. */
    double diag = 0.0;
    for (size_t i = 0; i < n; i++)
      for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
        if ((size_t)M->colind[q] == i) diag = fmax(diag, nle_csr_value(M, q));
    s = nle__smallest_shift_invert(ctx, lm->name, M, 1e-12 * (diag > 0 ? diag : 1.0), (int)nev, o->tol,
                                    r->solver_used == NLE_EIGEN_BLOCK, vals, U);
  }
  if (!s)
    nle__log(ctx, 1, "%s: local blocks %.3f s, alignment matrix %.3f s (%lld nonzeros), eigenpairs %.3f s", lm->name,
             t_blocks, t_assemble, (long long)M->nnz, nle_time_seconds() - t0);
  /* M is positive semi-definite by construction (a sum of PSD blocks):
   * an eigenvalue below zero beyond rounding means a local model broke
   * it, and its eigenvectors are no embedding. */
  double top = 0.0;
  for (size_t i = 0; !s && i < n; i++)
    for (int64_t q = M->rowptr[i]; q < M->rowptr[i + 1]; q++)
      if ((size_t)M->colind[q] == i) top = fmax(top, nle_csr_value(M, q));
  for (size_t t = 0; !s && t < nev; t++)
    if (!(vals[t] >= -1e-9 * top))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the alignment matrix has eigenvalue %g (%zu of the smallest), below zero "
                    "beyond rounding (%g): it is positive semi-definite by construction, so a local model is broken; no "
                    "map from it ({@dim=%zu})", lm->name, vals[t], t + 1, -1e-9 * top, d);
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++)
    for (size_t t = 0; t < d; t++) r->X->data[i * d + t] = U[i * nev + t + 1];
  if (!s) constrain(r->X->data, n, d);
  if (!s) nle__fix_signs(r->X->data, n, d);
  if (!s) {
    r->eigenvalues = vals;
    r->n_eigenvalues = (int)nev;
    vals = NULL;
  }
  nle_csr_free(&M);
  free(vals);
  free(U);
  return s;
}
