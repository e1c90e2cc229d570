/* sparse_pencil.c — Locally Linear Landmarks' reduced pencil held sparse
 * (dissertation eq. 4.5: A~ = Z A Z^T, B~ = Z B Z^T, here with Z held
 * transposed, N x L), for L up to N. With K_Z landmarks per point, A~'s
 * row a couples landmark a with the landmarks of the points one step of A
 * away from a's points: 7% of L at L = 10,000 on 20,000 Fashion-MNIST
 * images (K_Z = 10, K_W = 200), and A itself, permuted, at L = N (every
 * point its own landmark, Z a permutation). The dense L x L pencil
 * (pencil.c) needs 5 L^2 doubles (115 GB at L = 60,000); this one needs
 * A~'s and B~'s nonzeros and B~'s sparse Cholesky factor.
 *
 * The eigenpairs: B~ = P^T R^T R P by CHOLMOD, then Lanczos (ARPACK) on
 * C = R^-T P A~ P^T R^-1 (Brand eqs. 9-11 with a sparse factor), v =
 * P^T R^-1 u, B~-orthonormal. At L = N this is exact LE's own product
 * (D^-1/2 W D^-1/2 up to the identity's shift, B~ = D diagonal). Shift-
 * invert would need a factor of A~ + s B~, whose fill at these densities
 * is nearly dense (A~ has the pattern of a K_W-neighbour graph). */
#include "method.h"
#include "spectral_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

NLE__ENUM_NAMES(nle_lll_pencil_name, nle_lll_pencil_parse, nle_lll_pencil, NLE_LLL_PENCIL_MAP, NLE_PENCIL_COUNT, true)

/* Landmark rows per block: the per-block reset of the column marks is
 * O(L), so blocks are larger than the dense reduction's. */
enum { SPARSE_ROW_BLOCK = 256 };
/* B~'s reciprocal condition (CHOLMOD's estimate from its factor's
 * diagonal) below this is treated as singular, as pencil.c does. */
static const double SPARSE_SINGULAR_RCOND = 1e-10;

/* ------------------------------------------------------------------------ */
/* Z^T P + Z^T diag Z as CSR, P = alpha A Z (N x L, sparse)                  */
/* ------------------------------------------------------------------------ */

typedef struct {
  const nle_csr *Z, *Zt, *P;
  const double *diag;
  size_t L;
  nle_ctx *ctx;
  bool fixed;         /* each term rounded to units of 2^-scale and summed
                         as integers (over ranks: lll_dist.c), the values
                         then int64 units, not doubles */
  double unit;        /* 2^scale */
  int64_t *count;     /* each row's entries */
  int32_t **block_col; /* each block's rows, one after the other, grown as */
  double **block_val;  /* they come; copied into the CSR in block order */
} sparse_reduce_job;

static int ascending_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Row a: over the points n that landmark a reconstructs (Zt's row a,
 * ascending n), P's row n then Z's row n scaled by diag[n]: the dense
 * reduction's order (lll.c, reduce_block), so each entry carries the same
 * bits as there, and the same for any thread count. */
static int sparse_reduce_block(void *job, size_t b, void *scratch) {
  sparse_reduce_job *j = job;
  const nle_csr *Z = j->Z, *Zt = j->Zt, *P = j->P;
  size_t L = j->L, a1 = (b + 1) * SPARSE_ROW_BLOCK < L ? (b + 1) * SPARSE_ROW_BLOCK : L;
  double *acc = scratch;
  int64_t *units = scratch; /* the fixed point's accumulator, in acc's room */
  int32_t *mark = (int32_t *)(acc + L), *touched = mark + L;
  const double *zv = Z->val, *ztv = Zt->val, *pv = P ? P->val : NULL;
  for (size_t c = 0; c < L; c++) mark[c] = -1;
  int64_t used = 0, room = 0;
  for (size_t a = b * SPARSE_ROW_BLOCK; a < a1; a++) {
    int64_t nt = 0;
    for (int64_t q = Zt->rowptr[a]; q < Zt->rowptr[a + 1]; q++) {
      int64_t n = Zt->colind[q];
      double za = ztv[q];
      /* Z's stored zeros (a point on a landmark keeps K_Z slots, one of
       * them 1) add exact zeros: left out, they would only widen the
       * pattern (at L = N, Z^T W Z's 47 million entries instead of W's) */
      if (za == 0.0) continue;
      for (int64_t r = P ? P->rowptr[n] : 0; P && r < P->rowptr[n + 1]; r++) {
        int32_t c = P->colind[r];
        if (mark[c] != (int32_t)a) mark[c] = (int32_t)a, touched[nt++] = c, j->fixed ? (units[c] = 0) : (acc[c] = 0.0);
        if (j->fixed) units[c] += llrint(za * pv[r] * j->unit);
        else acc[c] += za * pv[r];
      }
      if (j->diag) {
        double zd = za * j->diag[n];
        for (int64_t r = Z->rowptr[n]; r < Z->rowptr[n + 1]; r++) {
          int32_t c = Z->colind[r];
          if (zv[r] == 0.0) continue;
          if (mark[c] != (int32_t)a) mark[c] = (int32_t)a, touched[nt++] = c, j->fixed ? (units[c] = 0) : (acc[c] = 0.0);
          if (j->fixed) units[c] += llrint(zd * zv[r] * j->unit);
          else acc[c] += zd * zv[r];
        }
      }
    }
    if (used + nt > room) {
      room = 2 * (used + nt);
      int32_t *col = realloc(j->block_col[b], (size_t)room * sizeof(int32_t));
      if (col) j->block_col[b] = col;
      double *val = col ? realloc(j->block_val[b], (size_t)room * sizeof(double)) : NULL;
      if (val) j->block_val[b] = val;
      if (!val) return nle__fail(j->ctx, NLE_ERR_NOMEM, "LLL's sparse pencil: out of memory"), 1;
    }
    qsort(touched, (size_t)nt, sizeof *touched, ascending_int32);
    int64_t *block_units = (int64_t *)j->block_val[b];
    for (int64_t t = 0; t < nt; t++) {
      j->block_col[b][used + t] = touched[t];
      if (j->fixed) block_units[used + t] = units[touched[t]];
      else j->block_val[b][used + t] = acc[touched[t]];
    }
    used += nt;
    j->count[a] = nt;
  }
  return 0;
}

/* out = Z^T (P + diag(diag)) Z (L x L CSR, columns ascending, both
 * triangles); P (N x L) or diag may be NULL. Never N x N, never dense. */
static nle_status reduce_sparse(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, const nle_csr *P,
                                const double *diag, const int *scale, nle_csr **out) {
  size_t L = (size_t)Z->cols, blocks = (L + SPARSE_ROW_BLOCK - 1) / SPARSE_ROW_BLOCK;
  sparse_reduce_job j = {Z, Zt, P, diag, L, ctx, scale != NULL, scale ? ldexp(1.0, *scale) : 0.0, NULL, NULL, NULL};
  size_t scratch = L * (sizeof(double) + 2 * sizeof(int32_t));
  int threads = nle__threads_for(ctx, (double)(P ? P->nnz : 0) * Z->nnz / (double)Z->rows + (double)Z->nnz * 8);
  j.count = nle__malloc(ctx, L * sizeof(int64_t), "LLL's sparse pencil");
  j.block_col = nle__calloc(ctx, blocks, sizeof(int32_t *), "LLL's sparse pencil");
  j.block_val = nle__calloc(ctx, blocks, sizeof(double *), "LLL's sparse pencil");
  nle_status s = j.count && j.block_col && j.block_val ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle__for_blocks(ctx, "LLL sparse pencil", blocks, threads, scratch, sparse_reduce_block, &j);
  int64_t total = 0;
  for (size_t a = 0; !s && a < L; a++) total += j.count[a];
  if (!s) s = nle__check_memory(ctx, (double)total * (sizeof(double) + sizeof(int32_t)), "LLL's sparse pencil");
  if (!s) s = nle_csr_alloc(ctx, (int64_t)L, (int64_t)L, total, NLE_F64, out);
  for (size_t a = 0; !s && a < L; a++) (*out)->rowptr[a + 1] = (*out)->rowptr[a] + j.count[a];
  for (size_t b = 0; !s && b < blocks; b++) {
    int64_t at = (*out)->rowptr[b * SPARSE_ROW_BLOCK];
    size_t len = (size_t)((*out)->rowptr[(b + 1) * SPARSE_ROW_BLOCK < L ? (b + 1) * SPARSE_ROW_BLOCK : L] - at);
    if (len) memcpy((*out)->colind + at, j.block_col[b], len * sizeof(int32_t));
    if (len) memcpy((double *)(*out)->val + at, j.block_val[b], len * sizeof(double));
  }
  for (size_t b = 0; j.block_col && j.block_val && b < blocks; b++) free(j.block_col[b]), free(j.block_val[b]);
  free(j.count), free(j.block_col), free(j.block_val);
  return s;
}

nle_status nle__lll_reduce_sparse(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, const nle_csr *A, double alpha,
                                  const double *diag, nle_csr **out) {
  *out = NULL;
  nle_csr *P = NULL;
  nle_status s = A ? nle__lll_product(ctx, Z, A, alpha, &P) : NLE_OK;
  if (!s) s = reduce_sparse(ctx, Z, Zt, P, diag, NULL, out);
  nle_csr_free(&P);
  return s;
}

nle_status nle__lll_reduce_units(nle_ctx *ctx, const nle_csr *Z, const nle_csr *Zt, const nle_csr *P, const double *diag,
                                 int scale, nle_csr **out) {
  *out = NULL;
  return reduce_sparse(ctx, Z, Zt, P, diag, &scale, out);
}

/* ------------------------------------------------------------------------ */
/* The eigenpairs: Lanczos on R^-T P A~ P^T R^-1, B~ = P^T R^T R P            */
/* ------------------------------------------------------------------------ */

typedef struct {
  nle_ctx *ctx;
  const char *what;
  const nle_csr *A;
  cholmod_common *cc;
  cholmod_factor *F;
  cholmod_dense *x;
  const double *in; /* the product's operand and result (column-major, n x
                       width), for the row blocks */
  double *out;
  size_t width;
  long products; /* columns the operator was applied to */
  double shift;  /* the block route's C + shift I (see solve_definite) */
} sparse_op;

enum { PRODUCT_ROWS = 2048 };
/* Nonzeros times columns below which a product runs on one thread. */
#define PARALLEL_PRODUCT_MIN 2e6

/* out = A in, rows in fixed blocks, each row's sum in its stored order. */
static int product_rows(void *job, size_t b, void *scratch) {
  (void)scratch;
  sparse_op *op = job;
  const nle_csr *A = op->A;
  const double *av = A->val;
  size_t n = (size_t)A->rows;
  int64_t i1 = (int64_t)((b + 1) * PRODUCT_ROWS) < A->rows ? (int64_t)((b + 1) * PRODUCT_ROWS) : A->rows;
  for (size_t t = 0; t < op->width; t++)
    for (int64_t i = (int64_t)(b * PRODUCT_ROWS); i < i1; i++) {
      const double *in = op->in + t * n;
      double v = 0.0;
      for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) v += av[q] * in[A->colind[q]];
      op->out[t * n + (size_t)i] = v;
    }
  return 0;
}

/* x <- the solves `systems` (CHOLMOD_Lt, CHOLMOD_Pt, ...) applied in turn
 * to the n x k column-major op->x-shaped dense `d`. */
static int solve_in_turn(sparse_op *op, cholmod_dense **d, const int *systems, int count) {
  for (int t = 0; t < count; t++) {
    cholmod_dense *next = cholmod_l_solve(systems[t], op->F, *d, op->cc);
    if (!next) {
      nle__fail(op->ctx, NLE_ERR_NUMERIC, "%s: CHOLMOD solve failed (status %d)", op->what, op->cc->status);
      return 1;
    }
    if (*d != op->x) cholmod_l_free_dense(d, op->cc);
    *d = next;
  }
  return 0;
}

/* op->x <- L^-1 P A~ P^T L^-T op->x (n x width, column-major) in
 * CHOLMOD's terms (P B~ P^T = L L^T, L = R^T): R^-T P A~ P^T R^-1. */
static int whiten_in_place(sparse_op *op) {
  size_t n = (size_t)op->A->rows;
  static const int back[] = {CHOLMOD_Lt, CHOLMOD_Pt}, forth[] = {CHOLMOD_P, CHOLMOD_L};
  cholmod_dense *d = op->x;
  if (solve_in_turn(op, &d, back, 2)) return 1;
  op->in = d->x, op->out = op->x->x; /* A~ (P^T L^-T x) into the operand's own storage */
  /* a parallel region per product pays only for large products: on a
   * loaded 2-core machine each costs about a scheduler slice */
  double work = (double)op->A->nnz * (double)op->width;
  int failed = nle__for_blocks(op->ctx, op->what, (n + PRODUCT_ROWS - 1) / PRODUCT_ROWS,
                               work < PARALLEL_PRODUCT_MIN ? 1 : nle__threads_for(op->ctx, work), 0, product_rows,
                               op) != NLE_OK;
  op->products += (long)op->width;
  cholmod_l_free_dense(&d, op->cc);
  d = op->x;
  if (failed || solve_in_turn(op, &d, forth, 2)) return 1;
  memcpy(op->x->x, d->x, n * op->width * sizeof(double));
  cholmod_l_free_dense(&d, op->cc);
  return 0;
}

static int apply_whitened(void *user, const double *x, double *y) {
  sparse_op *op = user;
  size_t n = (size_t)op->A->rows;
  memcpy(op->x->x, x, n * sizeof(double));
  if (whiten_in_place(op)) return 1;
  memcpy(y, op->x->x, n * sizeof(double));
  return 0;
}

/* The same on the block eigensolver's n x b row-major blocks. */
static int apply_whitened_block(void *user, const double *X, double *Y, size_t b) {
  sparse_op *op = user;
  size_t n = (size_t)op->A->rows;
  if (op->width != b) {
    cholmod_l_free_dense(&op->x, op->cc);
    if (!(op->x = cholmod_l_allocate_dense(n, b, n, CHOLMOD_REAL, op->cc)))
      return nle__fail(op->ctx, NLE_ERR_NOMEM, "%s: out of memory", op->what), 1;
    op->width = b;
  }
  double *x = op->x->x;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < b; t++) x[t * n + i] = X[i * b + t];
  if (whiten_in_place(op)) return 1;
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < b; t++) Y[i * b + t] = x[t * n + i] + op->shift * X[i * b + t];
  return 0;
}

/* The CHOLMOD LL^T factor of B~ (both triangles given; the upper read). */
static nle_status factor_scale(nle_ctx *ctx, const char *what, cholmod_common *cc, const nle_csr *B,
                               cholmod_factor **F, bool *definite, double *rcond) {
  cc->final_ll = 1; /* L L^T: the half solves are R^-1 and R^-T */
  nle_status s = nle__factor_shifted(ctx, what, cc, B, 0.0, definite, F);
  *definite = *definite && !s;
  *rcond = *definite ? cholmod_l_rcond(*F, cc) : 0.0;
  return s;
}

/* The pencil with B definite (else NLE_ERR_NUMERIC, info->singular). */
static nle_status solve_definite(nle_ctx *ctx, const char *what, const nle_csr *A, const nle_csr *B, int nev,
                                 nle__eig_end end, double tol, bool block, double *vals, double *vecs,
                                 nle__pencil_info *info) {
  size_t n = (size_t)A->rows;
  cholmod_common cc;
  cholmod_l_start(&cc);
  cc.print = 0;
  cholmod_factor *F = NULL;
  bool definite = false;
  double rcond = 0.0;
  int blas_prev = nle__blas_set_threads(1); /* CHOLMOD's supernodal solves call BLAS: serial, the same bits */
  nle_status s = factor_scale(ctx, what, &cc, B, &F, &definite, &rcond);
  info->b_rcond = rcond;
  if (!s && !(definite && rcond >= SPARSE_SINGULAR_RCOND)) {
    info->singular = true;
    s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the reduced scale matrix B~ of order %zu is singular or nearly so "
                  "(reciprocal condition %.2g) without zero rows: its range needs the dense pencil", what, n, rcond);
  }
  sparse_op op = {ctx, what, A, &cc, F, NULL, NULL, NULL, 1, 0, 0.0};
  double t0 = nle_time_seconds();
  bool opened = nle__stage_begin(ctx, "LLL eigenpairs"); /* one stage, not one per product */
  double *U = s ? NULL : nle__malloc(ctx, n * (size_t)nev * sizeof(double), "the pencil's eigenvectors");
  if (!s && !U) s = NLE_ERR_NOMEM;
  if (!s && !(op.x = cholmod_l_allocate_dense(n, 1, n, CHOLMOD_REAL, &cc))) s = nle__fail(ctx, NLE_ERR_NOMEM, "%s: out of memory", what);
  if (!s && block) {
    /* the block solver's residuals are relative to |theta|: LE's trivial
     * eigenvalue 0 would never converge. C + shift I, shift the mean
     * Rayleigh quotient trace(A) / trace(B) (about 1 for LE's pencil),
     * moves the wanted end away from 0 without reordering it. */
    double tra = 0.0, trb = 0.0;
    for (size_t i = 0; i < n; i++) {
      for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) tra += (size_t)A->colind[q] == i ? nle_csr_value(A, q) : 0;
      for (int64_t q = B->rowptr[i]; q < B->rowptr[i + 1]; q++) trb += (size_t)B->colind[q] == i ? nle_csr_value(B, q) : 0;
    }
    op.shift = tra > 0 && trb > 0 ? tra / trb : 1.0;
    s = nle__block_eigs(ctx, what, n, apply_whitened_block, &op, 4.0 * cc.lnz + 2.0 * (double)A->nnz, nev, end, tol,
                        vals, U, NULL);
    for (int t = 0; !s && t < nev; t++) vals[t] -= op.shift;
  }
  else if (!s)
    s = nle__lanczos(ctx, what, n, apply_whitened, &op, nev, end, tol, vals, U);
  nle__stage_end(ctx, opened);
  cholmod_l_free_dense(&op.x, &cc);
  if (!s)
    nle__log(ctx, 1, "%s: sparse pencil of order %zu: A~ %lld nonzeros, B~ %lld, its factor %.0f; %ld products "
             "(%s), %.2f s", what, n, (long long)A->nnz, (long long)B->nnz, cc.lnz, op.products,
             block ? "block" : "Lanczos", nle_time_seconds() - t0);
  if (!s && vecs) { /* v = P^T L^-T u, the columns at once */
    if (!(op.x = cholmod_l_allocate_dense(n, (size_t)nev, n, CHOLMOD_REAL, &cc))) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (int t = 0; t < nev; t++) ((double *)op.x->x)[(size_t)t * n + i] = U[i * (size_t)nev + (size_t)t];
    cholmod_dense *d = op.x;
    static const int back[] = {CHOLMOD_Lt, CHOLMOD_Pt};
    if (!s && solve_in_turn(&op, &d, back, 2)) s = NLE_ERR_NUMERIC;
    for (size_t i = 0; !s && i < n; i++)
      for (int t = 0; t < nev; t++) vecs[i * (size_t)nev + (size_t)t] = ((double *)d->x)[(size_t)t * n + i];
    if (d != op.x) cholmod_l_free_dense(&d, &cc);
    cholmod_l_free_dense(&op.x, &cc);
  }
  nle__blas_set_threads(blas_prev);
  free(U);
  cholmod_l_free_factor(&F, &cc);
  cholmod_l_finish(&cc);
  return s;
}

/* M's rows and columns i with map[i] >= 0, renumbered map[i]. */
static nle_status submatrix(nle_ctx *ctx, const nle_csr *M, const int32_t *map, size_t kept, nle_csr **out) {
  int64_t nnz = 0;
  for (int64_t i = 0; i < M->rows; i++)
    for (int64_t q = M->rowptr[i]; map[i] >= 0 && q < M->rowptr[i + 1]; q++) nnz += map[M->colind[q]] >= 0;
  nle_status s = nle_csr_alloc(ctx, (int64_t)kept, (int64_t)kept, nnz, NLE_F64, out);
  int64_t at = 0;
  for (int64_t i = 0; !s && i < M->rows; i++) {
    for (int64_t q = M->rowptr[i]; map[i] >= 0 && q < M->rowptr[i + 1]; q++)
      if (map[M->colind[q]] >= 0) (*out)->colind[at] = map[M->colind[q]], ((double *)(*out)->val)[at++] = nle_csr_value(M, q);
    if (map[i] >= 0) (*out)->rowptr[map[i] + 1] = at;
  }
  return s;
}

nle_status nle__sparse_pencil_solve(nle_ctx *ctx, const char *what, const nle_csr *A, const nle_csr *B, int nev,
                                    nle__eig_end end, double tol, bool block, double *vals, double *vecs,
                                    nle__pencil_info *info) {
  size_t n = (size_t)A->rows, kept = 0;
  memset(info, 0, sizeof *info);
  info->rank = n, info->lanczos = info->sparse = true;
  if (nev < 1 || (size_t)nev > n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d eigenpairs of a pencil of order %zu", what, nev, n);
  const double *av = A->val, *bv = B->val;
  for (int64_t q = 0; q < A->nnz; q++)
    if (!isfinite(av[q])) return nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the reduced pencil has a non-finite entry", what);
  for (int64_t q = 0; q < B->nnz; q++)
    if (!isfinite(bv[q])) return nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the reduced pencil has a non-finite entry", what);
  /* B's zero rows (a semi-definite B's diagonal 0: a landmark that
   * reconstructs no point of positive weight) are null directions of B:
   * the pencil in B's range, pencil.c's footnote-1 route, leaves them
   * out, and so does this one (their rows of X~ are 0) */
  int32_t *map = nle__malloc(ctx, n * sizeof(int32_t), "the pencil's range");
  if (!map) return NLE_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    double diag = 0.0;
    for (int64_t q = B->rowptr[i]; q < B->rowptr[i + 1]; q++)
      if ((size_t)B->colind[q] == i) diag = bv[q];
    map[i] = diag > 0 ? (int32_t)kept++ : -1;
  }
  nle_status s = NLE_OK;
  if (kept == n) {
    s = solve_definite(ctx, what, A, B, nev, end, tol, block, vals, vecs, info);
  } else if ((size_t)nev > kept) {
    info->singular = true, info->rank = kept;
    s = nle__fail(ctx, NLE_ERR_VALUE, "%s: the scale matrix B has %zu non-zero rows, below the %d eigenpairs asked for",
                  what, kept, nev);
  } else {
    nle_csr *As = NULL, *Bs = NULL;
    double *U = vecs ? nle__malloc(ctx, kept * (size_t)nev * sizeof(double), "the pencil's eigenvectors") : NULL;
    s = vecs && !U ? NLE_ERR_NOMEM : NLE_OK;
    if (!s) s = submatrix(ctx, A, map, kept, &As);
    if (!s) s = submatrix(ctx, B, map, kept, &Bs);
    if (!s) s = solve_definite(ctx, what, As, Bs, nev, end, tol, block, vals, U, info);
    info->singular = true, info->rank = kept;
    for (size_t i = 0; !s && vecs && i < n; i++)
      for (int t = 0; t < nev; t++) vecs[i * (size_t)nev + (size_t)t] = map[i] < 0 ? 0.0 : U[(size_t)map[i] * (size_t)nev + (size_t)t];
    nle_csr_free(&As), nle_csr_free(&Bs);
    free(U);
  }
  free(map);
  return s;
}
