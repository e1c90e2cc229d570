/* block_eigen.c — many eigenpairs at one end of a symmetric operator by a
 * thick-restarted block Krylov method with explicit Rayleigh-Ritz: the
 * basis grows by blocks (A times the newest block, orthogonalised against
 * the basis twice, then QR), the projection H = V^T A V is formed from
 * the stored products, and when the basis is full it restarts from its
 * best Ritz vectors plus the next Krylov block (Stathopoulos and Saad's
 * thick restart, in the block form of Zhou and Saad's block Krylov-Schur;
 * in exact arithmetic this is block Lanczos).
 *
 * Why a block method: the single-vector Lanczos of eigen.c streams the
 * operator (a kNN graph's W, a dense kernel matrix, a Cholesky factor)
 * once per vector per step, and ARPACK reorthogonalises each step against
 * the whole basis with matrix-vector products: spectral clustering of
 * 70,000 images spent 8 of its 15 eigen seconds there and 1,493 products.
 * Applied to an n x b block the operator is read once for b vectors (a
 * factor's solve runs over its tree once in parallel for all of them), and
 * everything else is a GEMM on n x b panels. A block also holds up to b
 * copies of a repeated eigenvalue, which one Krylov vector cannot see.
 *
 * The same bits for any number of threads: the operator's apply is
 * expected to give them (rows computed whole by one thread); the inner
 * products are sums over fixed row chunks added in chunk order; the QR and
 * the small eigenproblems run with serial BLAS. */
#include "eigen.h"
#include "spectral_internal.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

/* Inner products sum rows in chunks of CHUNK_ROWS; at most MAX_PARTIALS
 * partial sums, each over a fixed run of chunks, whatever the threads. */
enum { CHUNK_ROWS = 2048, MAX_PARTIALS = 64 };

/* ---- panels: n rows, a row's columns at stride ld ---- */

typedef struct {
  const double *A, *B;
  double *C;
  const double *M;
  size_t n, a, b, lda, ldb, ldc, chunks_per_partial;
  bool subtract; /* times: C -= A M rather than C = A M */
} panel_job;

static int gram_partial(void *job, size_t part, void *scratch) {
  (void)scratch;
  panel_job *p = job;
  size_t r0 = part * p->chunks_per_partial * CHUNK_ROWS, r1 = r0 + p->chunks_per_partial * CHUNK_ROWS;
  if (r1 > p->n) r1 = p->n;
  /* one serial GEMM over the partial's rows: its sum order is BLAS's, the
   * same whichever thread runs it */
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)p->a, (int)p->b, (int)(r1 - r0), 1.0, p->A + r0 * p->lda,
              (int)p->lda, p->B + r0 * p->ldb, (int)p->ldb, 0.0, p->C + part * p->a * p->b, (int)p->b);
  return 0;
}

/* G = A^T B (a x b, contiguous), summed in a fixed order; partials holds
 * MAX_PARTIALS a b doubles (the solver's, allocated once). */
static nle_status gram(nle_ctx *ctx, const char *what, const double *A, size_t lda, const double *B, size_t ldb,
                       size_t n, size_t a, size_t b, double *G, double *partials) {
  size_t chunks = (n + CHUNK_ROWS - 1) / CHUNK_ROWS;
  size_t per = (chunks + MAX_PARTIALS - 1) / MAX_PARTIALS, parts = (chunks + per - 1) / per;
  panel_job job = {.A = A, .B = B, .C = partials, .n = n, .a = a, .b = b, .lda = lda, .ldb = ldb,
                   .chunks_per_partial = per};
  nle_status s = nle__for_blocks(ctx, what, parts, nle__threads_for(ctx, (double)n * (double)(a * b)), 0,
                                 gram_partial, &job);
  if (!s) {
    memcpy(G, partials, a * b * sizeof(double));
    for (size_t q = 1; q < parts; q++)
      for (size_t t = 0; t < a * b; t++) G[t] += partials[q * a * b + t];
  }
  return s;
}

static int times_chunk(void *job, size_t chunk, void *scratch) {
  (void)scratch;
  panel_job *p = job;
  size_t r = chunk * CHUNK_ROWS, rows = r + CHUNK_ROWS < p->n ? CHUNK_ROWS : p->n - r;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)p->b, (int)p->a, p->subtract ? -1.0 : 1.0,
              p->A + r * p->lda, (int)p->lda, p->M, (int)p->b, p->subtract ? 1.0 : 0.0, p->C + r * p->ldc,
              (int)p->ldc);
  return 0;
}

/* C = A M, or C -= A M (subtract): A n x a (stride lda), M a x b
 * contiguous, C n x b (stride ldc), not overlapping A. */
static nle_status times(nle_ctx *ctx, const char *what, const double *A, size_t lda, const double *M, size_t n,
                        size_t a, size_t b, double *C, size_t ldc, bool subtract) {
  panel_job job = {.A = A, .C = C, .M = M, .n = n, .a = a, .b = b, .lda = lda, .ldc = ldc, .subtract = subtract};
  return nle__for_blocks(ctx, what, (n + CHUNK_ROWS - 1) / CHUNK_ROWS,
                         nle__threads_for(ctx, (double)n * (double)(a * b)), 0, times_chunk, &job);
}

/* The eigenpairs of the symmetric b x b H, descending (the wanted end first). */
static nle_status small_eigen(nle_ctx *ctx, const char *what, double *H, size_t b, double *theta, double *V) {
  double *w = nle__malloc(ctx, b * sizeof(double), "the block eigensolver");
  nle_status s = w ? NLE_OK : NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < b; i++) /* symmetrise: the two triangles differ by rounding */
    for (size_t j = i + 1; j < b; j++) H[i * b + j] = H[j * b + i] = 0.5 * (H[i * b + j] + H[j * b + i]);
  if (!s) {
    int before = nle__blas_set_threads(1);
    lapack_int info = LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)b, H, (lapack_int)b, w);
    nle__blas_set_threads(before);
    if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "%s: the Rayleigh-Ritz eigenproblem failed (info %d)", what, (int)info);
  }
  for (size_t t = 0; !s && t < b; t++) { /* ascending to descending */
    theta[t] = w[b - 1 - t];
    for (size_t i = 0; i < b; i++) V[i * b + t] = H[i * b + (b - 1 - t)];
  }
  free(w);
  return s;
}


/* ---- the Krylov basis ---- */

/* tol 0: relative residuals ||A x - theta x|| / |theta| of 1e-10 (the
 * basis is re-orthogonalised by blocks: ARPACK's machine precision is
 * below what the rounding of the stored products allows). */
#define DEFAULT_TOL 1e-10
enum { MAX_RESTARTS = 2000, MAX_BLOCK = 16, MAX_REDRAWS = 4 };

typedef struct {
  nle_ctx *ctx;
  const char *what;
  nle__block_apply apply;
  void *user;
  double sign;         /* +1: the largest end of A; -1: of -A (A's smallest) */
  size_t n, nev, b, keep, kmax;
  double *V, *AV;      /* n x kmax each: the basis and its products */
  double *X, *AX;      /* n x kmax each: Ritz vectors and theirs (restart scratch) */
  double *in, *out;    /* n x b each: a block's contiguous operand and product */
  double *H, *Hs, *Y;  /* kmax x kmax: V^T A V; its copy for LAPACK; its eigenvectors */
  double *theta;       /* kmax */
  double *partials;    /* MAX_PARTIALS x kmax x b: the inner products' partial sums */
  nle_rng rng;
  long products;
  double column_flops; /* the caller's cost of one column's product; 0: unknown */
} krylov;

static void get_columns(const double *from, size_t ld, size_t c0, size_t b, size_t n, double *to) {
  for (size_t i = 0; i < n; i++) memcpy(to + i * b, from + i * ld + c0, b * sizeof(double));
}

static void put_columns(const double *from, size_t b, size_t n, double *to, size_t ld, size_t c0) {
  for (size_t i = 0; i < n; i++) memcpy(to + i * ld + c0, from + i * b, b * sizeof(double));
}

/* kr->out = sign A kr->in. */
static nle_status apply_in(krylov *kr) {
  kr->products += (long)kr->b;
  if (kr->apply(kr->user, kr->in, kr->out, kr->b)) return NLE_ERR_NUMERIC; /* recorded by apply */
  if (kr->sign < 0)
    for (size_t q = 0; q < kr->n * kr->b; q++) kr->out[q] = -kr->out[q];
  return nle__progress_inner(kr->ctx, kr->what, 0.0);
}

static double column_norm(const double *A, size_t ld, size_t c, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += A[i * ld + c] * A[i * ld + c];
  return sqrt(s);
}

/* kr->in := an orthonormal basis of kr->in's columns orthogonal to the
 * first k of V: two passes of block Gram-Schmidt ("twice is enough") and a
 * Householder QR; a column that was (nearly) in the span already is
 * replaced by a random one and the whole done again. */
static nle_status extend_basis(krylov *kr, size_t k) {
  size_t n = kr->n, b = kr->b;
  double *G = kr->Hs, before[MAX_BLOCK], tau[MAX_BLOCK];
  for (int draw = 0; draw <= MAX_REDRAWS; draw++) {
    for (size_t t = 0; t < b; t++) before[t] = column_norm(kr->in, b, t, n);
    nle_status s = NLE_OK;
    for (int pass = 0; !s && k && pass < 2; pass++) {
      s = gram(kr->ctx, kr->what, kr->V, kr->kmax, kr->in, b, n, k, b, G, kr->partials);
      if (!s) s = times(kr->ctx, kr->what, kr->V, kr->kmax, G, n, k, b, kr->in, b, true);
    }
    if (s) return s;
    int before_threads = nle__blas_set_threads(1);
    lapack_int info = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)b, kr->in, (lapack_int)b, tau);
    bool redraw = false;
    for (size_t t = 0; !info && t < b; t++)
      if (!(fabs(kr->in[t * b + t]) > 1e-8 * before[t])) { /* R's diagonal: what was new in column t */
        redraw = true;
        for (size_t i = 0; i < n; i++) kr->in[i * b + t] = nle_rng_uniform(&kr->rng) - 0.5;
      }
    if (!info && !redraw)
      info = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)b, (lapack_int)b, kr->in, (lapack_int)b, tau);
    nle__blas_set_threads(before_threads);
    if (info) return nle__fail(kr->ctx, NLE_ERR_NUMERIC, "%s: QR of a block failed (LAPACK info %d)", kr->what, (int)info);
    if (!redraw) return NLE_OK;
    if (redraw) /* the columns kept were overwritten by the factorisation: draw them all again */
      for (size_t q = 0; q < n * b; q++) kr->in[q] = nle_rng_uniform(&kr->rng) - 0.5;
  }
  return nle__fail(kr->ctx, NLE_ERR_NUMERIC, "%s: the Krylov basis cannot grow (the operator has fewer than %zu "
                   "independent directions)", kr->what, kr->kmax);
}

/* Columns k..k+b of V from kr->in (orthonormal, orthogonal to V's first
 * k), their products, and their rows and columns of H. */
static nle_status append_block(krylov *kr, size_t k) {
  size_t n = kr->n, b = kr->b, kmax = kr->kmax;
  put_columns(kr->in, b, n, kr->V, kmax, k);
  nle_status s = apply_in(kr);
  if (!s) put_columns(kr->out, b, n, kr->AV, kmax, k);
  if (!s) s = gram(kr->ctx, kr->what, kr->V, kmax, kr->out, b, n, k + b, b, kr->Hs, kr->partials);
  for (size_t i = 0; !s && i < k + b; i++)
    for (size_t t = 0; t < b; t++) kr->H[i * kmax + k + t] = kr->H[(k + t) * kmax + i] = kr->Hs[i * b + t];
  return s;
}

/* The Rayleigh-Ritz pairs of the first k columns: theta descending, Y. */
static nle_status ritz(krylov *kr, size_t k) {
  for (size_t i = 0; i < k; i++) memcpy(kr->Hs + i * k, kr->H + i * kr->kmax, k * sizeof(double));
  return small_eigen(kr->ctx, kr->what, kr->Hs, k, kr->theta, kr->Y);
}

typedef struct {
  const krylov *kr;
  double *partial; /* per chunk, nev sums of squares */
} residual_job;

static int residual_chunk(void *job, size_t c, void *scratch) {
  (void)scratch;
  residual_job *j = job;
  const krylov *kr = j->kr;
  size_t r1 = (c + 1) * CHUNK_ROWS < kr->n ? (c + 1) * CHUNK_ROWS : kr->n;
  double *sum = j->partial + c * kr->nev;
  memset(sum, 0, kr->nev * sizeof(double));
  for (size_t i = c * CHUNK_ROWS; i < r1; i++)
    for (size_t t = 0; t < kr->nev; t++) {
      double r = kr->AX[i * kr->keep + t] - kr->theta[t] * kr->X[i * kr->keep + t];
      sum[t] += r * r;
    }
  return 0;
}

/* The largest relative residual of the nev wanted Ritz pairs (X, AX hold
 * the first keep Ritz vectors and their products). */
static nle_status worst_residual(krylov *kr, double *worst) {
  size_t chunks = (kr->n + CHUNK_ROWS - 1) / CHUNK_ROWS;
  residual_job job = {kr, nle__malloc(kr->ctx, chunks * kr->nev * sizeof(double), "residuals")};
  if (!job.partial) return NLE_ERR_NOMEM;
  nle_status s = nle__for_blocks(kr->ctx, kr->what, chunks, nle__threads_for(kr->ctx, (double)kr->n * kr->nev), 0,
                                 residual_chunk, &job);
  double big = 0.0;
  for (size_t t = 0; t < kr->nev; t++) big = fmax(big, fabs(kr->theta[t]));
  *worst = 0.0;
  for (size_t t = 0; !s && t < kr->nev; t++) {
    double r2 = 0.0;
    for (size_t c = 0; c < chunks; c++) r2 += job.partial[c * kr->nev + t];
    *worst = fmax(*worst, sqrt(r2) / fmax(fabs(kr->theta[t]), 1e-10 * big));
  }
  free(job.partial);
  return s;
}

/* The first keep Ritz vectors and their products into X and AX (n x keep,
 * contiguous). */
static nle_status ritz_vectors(krylov *kr, size_t k) {
  double *Yk = kr->Hs; /* k x keep: Y's first keep columns */
  for (size_t i = 0; i < k; i++) memcpy(Yk + i * kr->keep, kr->Y + i * k, kr->keep * sizeof(double));
  nle_status s = times(kr->ctx, kr->what, kr->V, kr->kmax, Yk, kr->n, k, kr->keep, kr->X, kr->keep, false);
  if (!s) s = times(kr->ctx, kr->what, kr->AV, kr->kmax, Yk, kr->n, k, kr->keep, kr->AX, kr->keep, false);
  return s;
}

/* Restart: V = [X, next Krylov block], H = [diag(theta), its couplings]. */
static nle_status restart(krylov *kr, size_t k) {
  size_t n = kr->n, b = kr->b, kmax = kr->kmax, keep = kr->keep;
  get_columns(kr->AV, kmax, k - b, b, n, kr->in); /* the newest block's product: the next Krylov block */
  nle_status s = extend_basis(kr, k);
  if (s) return s;
  put_columns(kr->X, keep, n, kr->V, kmax, 0);
  put_columns(kr->AX, keep, n, kr->AV, kmax, 0);
  for (size_t i = 0; i < keep; i++) {
    memset(kr->H + i * kmax, 0, keep * sizeof(double));
    kr->H[i * kmax + i] = kr->theta[i];
  }
  return append_block(kr, keep);
}

/* The Ritz pairs of the first k columns and whether the wanted ones have
 * converged. */
static nle_status converged(krylov *kr, size_t k, double tol, double *worst, bool *done) {
  nle_status s = ritz(kr, k);
  if (!s) s = ritz_vectors(kr, k);
  if (!s) s = worst_residual(kr, worst);
  *done = !s && *worst <= tol;
  return s;
}

/* Whether to test convergence before the basis is full: when the products
 * made since the last test cost more than a test (its Ritz vectors, two
 * n x k x keep GEMMs). A dense kernel's product (kernel PCA) is read once
 * per block, so a test after every block saves whole passes over it (10,000
 * images, 2 pairs: 32 columns to 22); a sparse graph's products are cheap
 * and the test waits for the restart. A rule of sizes alone: the same bits
 * on every machine. */
static bool test_early(const krylov *kr, size_t k, double *since) {
  if (kr->column_flops <= 0 || k < kr->keep) return false;
  *since += (double)kr->b * kr->column_flops;
  if (*since < 4.0 * (double)kr->n * (double)k * (double)kr->keep) return false;
  *since = 0;
  return true;
}

static nle_status iterate(krylov *kr, double tol, int *restarts) {
  size_t n = kr->n, b = kr->b;
  for (size_t q = 0; q < n * b; q++) kr->in[q] = nle_rng_uniform(&kr->rng) - 0.5;
  nle_status s = extend_basis(kr, 0);
  if (!s) s = append_block(kr, 0);
  size_t k = b;
  double since = 0.0, worst = INFINITY;
  bool done = false;
  for (*restarts = 0; !s; ++*restarts) {
    while (!s && !done && k + b <= kr->kmax) {
      get_columns(kr->AV, kr->kmax, k - b, b, n, kr->in);
      s = extend_basis(kr, k);
      if (!s) s = append_block(kr, k);
      k += b;
      if (!s && k < kr->kmax && test_early(kr, k, &since)) s = converged(kr, k, tol, &worst, &done);
    }
    if (!s && !done) s = converged(kr, k, tol, &worst, &done);
    if (s || done) break;
    if (*restarts >= MAX_RESTARTS)
      return nle__fail(kr->ctx, NLE_ERR_NUMERIC,
                       "%s: the block eigensolver did not converge: relative residual %.2g after %d restarts "
                       "(tolerance %.2g)", kr->what, worst, *restarts, tol);
    s = restart(kr, k);
    k = kr->keep + b;
  }
  return s;
}

/* Block size: half the pairs asked for (a block's product costs little
 * more than one vector's; too wide a block slows the Krylov rate per
 * product), at least 2, at most MAX_BLOCK. The basis keeps nev + b Ritz
 * vectors over a restart and grows by nev + 20 + 3 b more, rounded up to
 * blocks (ARPACK's advice for one vector is 2 nev + 20 in all). */
static void sizes(size_t nev, size_t *b, size_t *keep, size_t *kmax) {
  *b = (nev + 1) / 2 < 2 ? 2 : (nev + 1) / 2 > MAX_BLOCK ? MAX_BLOCK : (nev + 1) / 2;
  *keep = nev + *b;
  *kmax = *keep + *b * ((nev + 20 + 4 * *b - 1) / *b);
}

size_t nle__block_width(int nev) {
  size_t b, keep, kmax;
  sizes(nev < 1 ? 1 : (size_t)nev, &b, &keep, &kmax);
  return b;
}

nle_status nle__block_eigs(nle_ctx *ctx, const char *what, size_t n, nle__block_apply apply, void *user,
                           double column_flops, int nev, nle__eig_end end, double tol, double *vals, double *vecs,
                           nle__block_info *info) {
  size_t b, keep, kmax;
  sizes(nev < 1 ? 1 : (size_t)nev, &b, &keep, &kmax);
  if (nev < 1 || kmax > n)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: %d eigenpairs of a %zu x %zu operator by blocks (a basis of %zu vectors)",
                     what, nev, n, n, kmax);
  krylov kr = {.ctx = ctx, .what = what, .apply = apply, .user = user, .column_flops = column_flops,
               .sign = end == NLE__EIG_LARGEST ? 1.0 : -1.0,
               .n = n, .nev = (size_t)nev, .b = b, .keep = keep, .kmax = kmax};
  nle_rng_init(&kr.rng, nle_ctx_seed(ctx), 0x626c6f63ULL);
  double vectors = (double)n * (double)(4 * kmax + 2 * b);
  nle_status s = nle__check_memory(ctx, vectors * sizeof(double), "the block eigensolver's basis");
  size_t small = 3 * kmax * kmax + kmax + MAX_PARTIALS * kmax * b;
  double *all = s ? NULL : nle__malloc(ctx, ((size_t)vectors + small) * sizeof(double), "the block eigensolver's basis");
  if (!s && !all) s = NLE_ERR_NOMEM;
  if (s) return s;
  kr.V = all, kr.AV = kr.V + n * kmax, kr.X = kr.AV + n * kmax, kr.AX = kr.X + n * kmax;
  kr.in = kr.AX + n * kmax, kr.out = kr.in + n * b;
  kr.H = kr.out + n * b, kr.Hs = kr.H + kmax * kmax, kr.Y = kr.Hs + kmax * kmax, kr.theta = kr.Y + kmax * kmax;
  kr.partials = kr.theta + kmax;
  memset(kr.H, 0, kmax * kmax * sizeof(double));
  int restarts = 0;
  s = iterate(&kr, tol > 0 ? tol : DEFAULT_TOL, &restarts);
  for (int t = 0; !s && t < nev; t++) { /* ascending: the largest end reversed; the smallest end negated */
    size_t from = kr.sign > 0 ? (size_t)(nev - 1 - t) : (size_t)t;
    vals[t] = kr.sign * kr.theta[from];
    for (size_t i = 0; vecs && i < n; i++) vecs[i * (size_t)nev + (size_t)t] = kr.X[i * keep + from];
  }
  if (!s)
    nle__log(ctx, 2, "%s: block eigensolver, %ld products, %d restarts (block %zu, basis %zu)", what, kr.products,
             restarts, b, kmax);
  if (info) *info = (nle__block_info){restarts, kr.products, (int)b, (int)kmax};
  free(all);
  return s;
}
