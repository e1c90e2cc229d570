/* knn_sparse_approx.c — the approximate search of sparse rows (knn_sparse.c
 * has the metric's expansion and its accuracy).
 *
 * Approximate search: the scaled (and, for correlation, centred) rows'
 * coordinates in their leading singular subspace (a randomised range finder:
 * Gaussian directions from the context's seed and one power product; the
 * plain random projection ranks true neighbours far worse on text), the
 * dense approximate search (random-projection forest + NN-descent) there for
 * candidates, re-ranked by the exact sparse distances, then local joins in
 * the sparse metric (neighbours' neighbours and reverse neighbours, exact
 * distances) until the lists settle. docs/knn.md has the measurements. */
#include "knn_sparse.h"

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <string.h>

/* ---- approximate search ------------------------------------------------- */

/* Measured on tf-idf documents (bench/knn_cosine.sh, 20,000 x 20,000, k =
 * 10): on the coordinates with one power product, the approximate search's
 * 20 candidates (4 trees, 3 iterations) hold 86% of a row's 10 nearest (96
 * directions; 64: 79%; the plain random projection, without the power
 * product: 17% among 30); the local joins then take recall to 0.99 in 3-6
 * passes. More directions, trees or iterations there cost more than the
 * joins they save. */
enum { PROJ_DIMS = 96, PROJ_POWER = 1, PROJ_TREES = 4, PROJ_ITERS = 3, RERANK_BLOCK = 128, MAX_JOINS = 32 };

/* Products with A, the scaled rows as the metric compares them (correlation:
 * centred, A = W - m 1^T, never formed): A M for M of D x l (by rows) and
 * A^T Y for Y of N x l (by the column lists). The l x something matrices
 * are stored in single precision (each product reads a row of them per
 * non-zero: the memory traffic is the cost), each output row accumulated in
 * double by one thread in a fixed order. */
typedef struct {
  const sp_rows *R;
  const sp_transpose *T;
  int l;
  const float *in;     /* M (D x l) or Y (N x l) */
  const double *shift; /* 1^T M, or m^T Y (correlation), else NULL */
  float *out;          /* A M (N x l) or A^T Y (D x l) */
} op_job;

enum { OP_BLOCK = 256, PROJ_MAX_DIMS = 256 };

static int rows_times_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const op_job *j = job;
  const sp_rows *R = j->R;
  size_t l = (size_t)j->l;
  double acc[PROJ_MAX_DIMS];
  int64_t i0 = (int64_t)b * OP_BLOCK, i1 = i0 + OP_BLOCK < R->n ? i0 + OP_BLOCK : R->n;
  for (int64_t i = i0; i < i1; i++) {
    for (size_t t = 0; t < l; t++) acc[t] = j->shift ? -R->m[i] * j->shift[t] : 0.0;
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) {
      const float *g = j->in + (size_t)R->colind[p] * l;
      double v = R->w[p];
      for (size_t t = 0; t < l; t++) acc[t] += v * g[t];
    }
    for (size_t t = 0; t < l; t++) j->out[(size_t)i * l + t] = (float)acc[t];
  }
  return 0;
}

static int columns_times_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  const op_job *j = job;
  size_t l = (size_t)j->l;
  double acc[PROJ_MAX_DIMS];
  int64_t c0 = (int64_t)b * OP_BLOCK, c1 = c0 + OP_BLOCK < j->R->d ? c0 + OP_BLOCK : j->R->d;
  for (int64_t c = c0; c < c1; c++) {
    for (size_t t = 0; t < l; t++) acc[t] = j->shift ? -j->shift[t] : 0.0;
    for (int64_t p = j->T->ptr[c]; p < j->T->ptr[c + 1]; p++) {
      const float *y = j->in + (size_t)j->T->row[p] * l;
      double v = j->T->val[p];
      for (size_t t = 0; t < l; t++) acc[t] += v * y[t];
    }
    for (size_t t = 0; t < l; t++) j->out[(size_t)c * l + t] = (float)acc[t];
  }
  return 0;
}

/* out = A M (transposed = false) or A^T M (true). */
static nle_status apply_rows(nle_ctx *ctx, const sp_rows *R, const sp_transpose *T, int l, const float *M,
                             bool transposed, float *out, double *shift) {
  int64_t count = transposed ? R->n : R->d;
  if (R->m) { /* the centring's term: 1^T M, or m^T M */
    memset(shift, 0, (size_t)l * sizeof *shift);
    for (int64_t r = 0; r < count; r++)
      for (int t = 0; t < l; t++) shift[t] += (transposed ? R->m[r] : 1.0) * M[(size_t)r * (size_t)l + (size_t)t];
  }
  op_job job = {R, T, l, M, R->m ? shift : NULL, out};
  int64_t outs = transposed ? R->d : R->n;
  return nle__for_blocks(ctx, "sparse kNN projection", (size_t)((outs + OP_BLOCK - 1) / OP_BLOCK),
                         nle__threads_for(ctx, (double)R->rowptr[R->n] * l), 0,
                         transposed ? columns_times_block : rows_times_block, &job);
}

/* G = M^T M (l x l, double) for M of `rows` x l: partial sums over fixed
 * blocks of rows (one DGEMM each), added in block order. */
enum { GRAM_BLOCK = 2048 };

typedef struct {
  const float *M;
  int64_t rows;
  int l;
  double *part; /* per block: l x l */
} gram_job;

static int gram_block(void *job, size_t b, void *scratch) {
  const gram_job *j = job;
  double *M = scratch;
  size_t l = (size_t)j->l;
  int64_t r0 = (int64_t)b * GRAM_BLOCK, rows = j->rows - r0 < GRAM_BLOCK ? j->rows - r0 : GRAM_BLOCK;
  for (size_t t = 0; t < (size_t)rows * l; t++) M[t] = j->M[(size_t)r0 * l + t];
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, j->l, j->l, (int)rows, 1.0, M, j->l, M, j->l, 0.0,
              j->part + b * l * l, j->l);
  return 0;
}

static nle_status gram(nle_ctx *ctx, const float *M, int64_t rows, int l, double *G) {
  size_t nb = (size_t)((rows + GRAM_BLOCK - 1) / GRAM_BLOCK), ll = (size_t)l * (size_t)l;
  double *part = nle__malloc(ctx, (nb ? nb : 1) * ll * sizeof *part, "the projection's Gram matrix");
  if (!part) return NLE_ERR_NOMEM;
  gram_job job = {M, rows, l, part};
  nle_status s = nle__for_blocks(ctx, "sparse kNN projection", nb, nle__threads_for(ctx, (double)rows * l * l),
                                 (size_t)GRAM_BLOCK * (size_t)l * sizeof(double), gram_block, &job);
  memset(G, 0, ll * sizeof *G);
  for (size_t b = 0; !s && b < nb; b++)
    for (size_t t = 0; t < ll; t++) G[t] += part[b * ll + t];
  free(part);
  return s;
}

/* P = Y W (N x l) for the l x l matrix W, a DGEMM per block of rows. */
typedef struct {
  const float *Y;
  const double *W;
  int l;
  int64_t n;
  float *P;
} coord_job;

static int coord_block(void *job, size_t b, void *scratch) {
  const coord_job *j = job;
  size_t l = (size_t)j->l;
  double *in = scratch, *out = in + (size_t)OP_BLOCK * l;
  int64_t r0 = (int64_t)b * OP_BLOCK, rows = j->n - r0 < OP_BLOCK ? j->n - r0 : OP_BLOCK;
  for (size_t t = 0; t < (size_t)rows * l; t++) in[t] = j->Y[(size_t)r0 * l + t];
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, j->l, j->l, 1.0, in, j->l, j->W, j->l, 0.0, out,
              j->l);
  for (size_t t = 0; t < (size_t)rows * l; t++) j->P[(size_t)r0 * l + t] = (float)out[t];
  return 0;
}

/* The rows' coordinates in their leading right singular subspace (latent
 * semantic analysis, for text), by the randomised range finder of Halko,
 * Martinsson and Tropp (2011, alg. 4.3-4.4, 5.1): Y = A Omega with Gaussian
 * Omega (D x l, a stream per column from the context's seed), `power`
 * products Y = A A^T Y (power 0: the plain random projection), then with
 * Y^T Y = R^T R (Cholesky; Q = Y R^-1 is an orthonormal basis of Y) and
 * B = Q^T A = U S V^T: the coordinates A V = Q U S = Y R^-1 U S, found from
 * the l x l matrices B B^T and R without an N x l or D x l factorisation.
 * Distances among the coordinates are those of the rows' projections on
 * the subspace. Rows of at most l columns are made dense instead. */
static nle_status project_rows(nle_ctx *ctx, const sp_rows *R, nle_matf **P) {
  int64_t n = R->n, d = R->d;
  int l = PROJ_DIMS, power = PROJ_POWER;
  if (l > PROJ_MAX_DIMS) l = PROJ_MAX_DIMS;
  if (d <= l) {
    nle_status s = nle_matf_alloc(ctx, (size_t)n, (size_t)d, P);
    for (int64_t i = 0; !s && i < n; i++) {
      float *y = (*P)->data + (size_t)i * (size_t)d;
      double mi = R->m ? R->m[i] : 0.0;
      for (int64_t c = 0; c < d; c++) y[c] = (float)-mi;
      for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) y[R->colind[p]] = (float)(R->w[p] - mi);
    }
    return s;
  }
  size_t ll = (size_t)l * (size_t)l;
  int threads = nle_ctx_threads(ctx);
  /* the transpose, Omega, Z, Y, P, the Gram blocks, the small matrices */
  double need = (double)R->rowptr[n] * 12 + (double)(d + 1) * 8 + ((double)d * 2 + (double)n * 2) * l * 4 +
                ((double)n / GRAM_BLOCK + 6) * (double)ll * 8 + (double)threads * GRAM_BLOCK * l * 8;
  nle_status s = nle__check_memory(ctx, need, "the sparse rows' projection");
  if (s) return s;
  sp_transpose T = {0};
  float *Om = nle__malloc(ctx, (size_t)d * (size_t)l * sizeof(float), "the projection");
  float *Z = nle__malloc(ctx, (size_t)d * (size_t)l * sizeof(float), "the projection");
  float *Y = nle__malloc(ctx, (size_t)n * (size_t)l * sizeof(float), "the projection");
  double *small = nle__malloc(ctx, (5 * ll + 2 * (size_t)l) * sizeof(double), "the projection");
  if (!Om || !Z || !Y || !small) s = NLE_ERR_NOMEM;
  if (!s) s = nle__sp_transpose_build(ctx, R, &T);
  double *G = small, *Rf = small + ll, *C = small + 2 * ll, *W = small + 3 * ll, *tmp = small + 4 * ll;
  double *lam = small + 5 * ll, *shift = lam + l;
  if (!s) {
    uint64_t seed = nle_ctx_seed(ctx);
    for (int64_t c = 0; c < d; c++) {
      nle_rng rng;
      nle_rng_init(&rng, seed, 0x7370726f6a000000ULL + (uint64_t)c);
      for (int t = 0; t < l; t++) Om[(size_t)c * (size_t)l + (size_t)t] = (float)nle_rng_normal(&rng);
    }
    s = apply_rows(ctx, R, &T, l, Om, false, Y, shift);
  }
  for (int q = 0; !s && q < power; q++) {
    s = apply_rows(ctx, R, &T, l, Y, true, Z, shift);
    if (!s) s = apply_rows(ctx, R, &T, l, Z, false, Y, shift);
  }
  if (!s) s = gram(ctx, Y, n, l, G);
  /* Cholesky G = Rf^T Rf (upper Rf), with a ridge at the rounding level so
   * that a rank-deficient Y (duplicate rows, N < l) still factors */
  if (!s) {
    double top = 0.0;
    for (int t = 0; t < l; t++) top = fmax(top, G[(size_t)t * l + t]);
    double ridge = 1e-10 * top + DBL_MIN;
    memset(Rf, 0, ll * sizeof *Rf);
    for (int a = 0; a < l; a++) {
      double diag = G[(size_t)a * l + a] + ridge;
      for (int t = 0; t < a; t++) diag -= Rf[(size_t)t * l + a] * Rf[(size_t)t * l + a];
      Rf[(size_t)a * l + a] = sqrt(diag > ridge ? diag : ridge); /* a direction Y lacks */
      for (int b = a + 1; b < l; b++) {
        double v = G[(size_t)a * l + b];
        for (int t = 0; t < a; t++) v -= Rf[(size_t)t * l + a] * Rf[(size_t)t * l + b];
        Rf[(size_t)a * l + b] = v / Rf[(size_t)a * l + a];
      }
    }
  }
  /* Z = A^T Y, then Bt = A^T Q = Z Rf^-1 (row by row, forward substitution) */
  if (!s) s = apply_rows(ctx, R, &T, l, Y, true, Z, shift);
  if (!s) {
    for (int64_t c = 0; c < d; c++) {
      float *z = Z + (size_t)c * (size_t)l;
      for (int b = 0; b < l; b++) {
        double v = z[b];
        for (int t = 0; t < b; t++) v -= (double)z[t] * Rf[(size_t)t * l + b];
        z[b] = (float)(v / Rf[(size_t)b * l + b]);
      }
    }
    s = gram(ctx, Z, d, l, C); /* B B^T */
  }
  if (!s) {
    int prev = nle__blas_set_threads(1); /* an l x l problem: one thread, the same bits */
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', l, C, l, lam);
    nle__blas_set_threads(prev);
    if (info) s = nle__fail(ctx, NLE_ERR_NUMERIC, "sparse kNN projection: eigensolver failed (%d)", (int)info);
  }
  if (!s) {
    /* W = Rf^-1 U Lambda^1/2 (back substitution on each column of U) */
    for (int col = 0; col < l; col++) {
      double sc = sqrt(fmax(lam[col], 0.0));
      for (int a = l - 1; a >= 0; a--) {
        double v = C[(size_t)a * l + col];
        for (int t = a + 1; t < l; t++) v -= Rf[(size_t)a * l + t] * tmp[(size_t)t * l + col];
        tmp[(size_t)a * l + col] = v / Rf[(size_t)a * l + a];
      }
      for (int a = 0; a < l; a++) W[(size_t)a * l + col] = tmp[(size_t)a * l + col] * sc;
    }
    s = nle_matf_alloc(ctx, (size_t)n, (size_t)l, P);
  }
  if (!s) {
    coord_job job = {Y, W, l, n, (*P)->data};
    s = nle__for_blocks(ctx, "sparse kNN projection", (size_t)((n + OP_BLOCK - 1) / OP_BLOCK),
                        nle__threads_for(ctx, (double)n * l * l), 2 * (size_t)OP_BLOCK * (size_t)l * sizeof(double),
                        coord_block, &job);
  }
  nle__sp_transpose_free(&T);
  free(Om);
  free(Z);
  free(Y);
  free(small);
  if (s) nle_matf_free(P);
  return s;
}

/* The re-ranking of the projected search's candidates, and the local joins
 * (NN-descent, Dong, Charikar and Li 2011, in its "pull" form): row i's new
 * candidates are its neighbours' neighbours and their reverse neighbours
 * (rows that list them), reached through at least one link that is new
 * since the previous pass (a pair reached only through old links was
 * considered then). Each row reads the previous graph only and writes its
 * own list, so a pass is the same at any thread count; a row's list never
 * gets worse, as its members keep their distances. */
typedef struct {
  const sp_rows *R;
  const nle_csr *cand;     /* the projected search's candidates (re-ranking) */
  const nle_csr *prev;     /* the current graph (joins), else NULL */
  const uint8_t *fresh;    /* per entry of prev: new in the last pass */
  const int64_t *rptr;     /* reverse lists of prev: rows listing v are */
  const int32_t *rrow;     /* rrow[rptr[v] ..], by index, with their entry's */
  const uint8_t *rfresh;   /* flag */
  const int32_t *hubs;     /* re-ranking: rows offered to every row, or NULL */
  int n_hubs;
  int k, width;            /* kept; most candidates of a row */
  nle_csr *out;
  uint8_t *out_fresh;      /* per entry of out: not in prev's row */
  int64_t *changed;        /* per block: the count of out_fresh */
} rerank_job;

static int cmp_int32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Reverse neighbours taken per row: enough to reach the rows that list it
 * (hubs are listed by many), few enough to bound a row's work. */
enum { REVERSE_TAKEN = 16 };

static int rerank_block(void *job, size_t b, void *scratch) {
  const rerank_job *j = job;
  const sp_rows *R = j->R;
  int k = j->k;
  double *x = scratch; /* row i scattered over the D columns (zeros elsewhere) */
  int32_t *ids = (int32_t *)(x + R->d);
  sp_cand *h = (sp_cand *)(ids + j->width);
  int64_t i0 = (int64_t)b * RERANK_BLOCK, i1 = i0 + RERANK_BLOCK < R->n ? i0 + RERANK_BLOCK : R->n, changed = 0;
  float *val = j->out->val;
  memset(x, 0, (size_t)R->d * sizeof *x);
  for (int64_t i = i0; i < i1; i++) {
    int len = 0;
    heap_reset(h, k);
    if (!j->prev) {
      for (int64_t q = j->cand->rowptr[i]; q < j->cand->rowptr[i + 1]; q++) ids[len++] = j->cand->colind[q];
      for (int t = 0; t < j->n_hubs; t++) ids[len++] = j->hubs[t];
      qsort(ids, (size_t)len, sizeof *ids, cmp_int32);
      int u = 0;
      for (int t = 0; t < len; t++)
        if (ids[t] != i && (t == 0 || ids[t] != ids[t - 1])) ids[u++] = ids[t];
      len = u;
    } else {
      const nle_csr *G = j->prev;
      int rtake = REVERSE_TAKEN;
      for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1]; q++) {
        int32_t u = G->colind[q];
        bool link = j->fresh[q];
        /* the members keep their distances */
        heap_offer(h, k, (sp_cand){((const float *)G->val)[q], u});
        for (int64_t t = G->rowptr[u]; t < G->rowptr[u + 1]; t++)
          if (link || j->fresh[t]) ids[len++] = G->colind[t];
        for (int64_t t = j->rptr[u]; t < j->rptr[u + 1] && t - j->rptr[u] < rtake; t++)
          if (link || j->rfresh[t]) ids[len++] = j->rrow[t];
      }
      for (int64_t t = j->rptr[i]; t < j->rptr[i + 1] && t - j->rptr[i] < rtake; t++)
        if (j->rfresh[t]) ids[len++] = j->rrow[t];
      /* without repeats, without i and its members */
      qsort(ids, (size_t)len, sizeof *ids, cmp_int32);
      int u = 0;
      for (int t = 0; t < len; t++) {
        if (ids[t] == i || (t > 0 && ids[t] == ids[t - 1])) continue; /* (ids[t - 1] is intact: u <= t) */
        bool member = false;
        for (int64_t q = G->rowptr[i]; q < G->rowptr[i + 1] && !member; q++) member = G->colind[q] == ids[t];
        if (!member) ids[u++] = ids[t];
      }
      len = u;
    }
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) x[R->colind[p]] = R->w[p];
    for (int t = 0; t < len; t++) {
      int64_t r = ids[t];
      if (r == i) continue;
      /* row i's dot product with r: the shared columns' products in
       * increasing column order, the others adding zeros (which leave the
       * sum's bits as they are): the exact search's value */
      double dot = 0.0;
      for (int64_t q = R->rowptr[r]; q < R->rowptr[r + 1]; q++) dot += x[R->colind[q]] * R->w[q];
      heap_offer(h, k, (sp_cand){(float)pair_value(R, i, R, r, dot), (int32_t)r});
    }
    for (int64_t p = R->rowptr[i]; p < R->rowptr[i + 1]; p++) x[R->colind[p]] = 0.0;
    qsort(h, (size_t)k, sizeof *h, sp_cand_cmp);
    size_t out = (size_t)i * (size_t)k;
    for (int c = 0; c < k; c++) {
      bool was = false;
      for (int e = 0; j->prev && e < k && !was; e++) was = j->prev->colind[out + (size_t)e] == h[c].i;
      j->out_fresh[out + (size_t)c] = !was;
      changed += !was;
      j->out->colind[out + (size_t)c] = h[c].i;
      val[out + (size_t)c] = h[c].d;
    }
  }
  j->changed[b] = changed;
  return 0;
}

static size_t rerank_scratch(const sp_rows *R, int width, int k) {
  return (size_t)R->d * sizeof(double) + (size_t)width * sizeof(int32_t) + (size_t)k * sizeof(sp_cand);
}

/* Reverse lists of the graph G (rows listing each row, by index) with the
 * flags of their entries. */
static nle_status reverse_lists(nle_ctx *ctx, const nle_csr *G, const uint8_t *fresh, int64_t *rptr, int32_t *rrow,
                                uint8_t *rfresh) {
  int64_t n = G->rows;
  int64_t *next = nle__malloc(ctx, (size_t)n * sizeof *next + 1, "the reverse lists");
  if (!next) return NLE_ERR_NOMEM;
  memset(rptr, 0, ((size_t)n + 1) * sizeof *rptr);
  for (int64_t q = 0; q < G->nnz; q++) rptr[G->colind[q] + 1]++;
  for (int64_t v = 0; v < n; v++) rptr[v + 1] += rptr[v];
  memcpy(next, rptr, (size_t)n * sizeof *next);
  for (int64_t w = 0; w < n; w++)
    for (int64_t q = G->rowptr[w]; q < G->rowptr[w + 1]; q++) {
      int64_t at = next[G->colind[q]]++;
      rrow[at] = (int32_t)w;
      rfresh[at] = fresh[q];
    }
  free(next);
  return NLE_OK;
}

nle_status nle__sp_approx(nle_ctx *ctx, const sp_rows *R, int k, const nle_knn_approx_opts *approx,
                                nle_csr **graph) {
  int64_t n = R->n;
  nle_knn_approx_opts o;
  if (approx) o = *approx;
  else nle_knn_approx_opts_init(&o);
  /* 2k candidates from the projection (at least k + 10), re-ranked */
  int64_t want = 2 * (int64_t)k > k + 10 ? 2 * (int64_t)k : k + 10;
  o.k = (int)(want < n - 1 ? want : n - 1);
  if (o.k > 1024) o.k = k > 1024 ? k : 1024;
  if (o.n_trees == NLE_AUTO) o.n_trees = PROJ_TREES;
  if (o.max_iters == NLE_AUTO) o.max_iters = PROJ_ITERS;
  int rtake = REVERSE_TAKEN;
  int width = k * (1 + k + rtake) + rtake;
  width = width > o.k + k ? width : o.k + k;
  size_t nblocks = (size_t)((n + RERANK_BLOCK - 1) / RERANK_BLOCK);
  int threads = nle__threads_for(ctx, (double)n * width * 64);
  nle_status s = nle__check_memory(ctx, (double)n * k * (3 * 8.0 + 2) + (double)threads * rerank_scratch(R, width, k),
                                   "sparse approximate kNN");
  if (s) return s;
  nle_matf *P = NULL;
  nle_csr *cand = NULL, *cur = NULL, *next = NULL;
  double t0 = nle_time_seconds();
  s = project_rows(ctx, R, &P);
  double t1 = nle_time_seconds();
  if (!s) s = nle_knn_approx(ctx, P, &o, &cand);
  nle_matf_free(&P);
  double t2 = nle_time_seconds();
  int64_t *changed = nle__calloc(ctx, nblocks, sizeof(int64_t), "the joins");
  uint8_t *fresh = nle__malloc(ctx, (size_t)(n * k), "the joins");
  uint8_t *fresh_next = nle__malloc(ctx, (size_t)(n * k), "the joins");
  uint8_t *rfresh = nle__malloc(ctx, (size_t)(n * k), "the joins");
  int64_t *rptr = nle__malloc(ctx, ((size_t)n + 1) * sizeof(int64_t), "the joins");
  int32_t *rrow = nle__malloc(ctx, (size_t)(n * k) * sizeof(int32_t), "the joins");
  if (!s && (!changed || !fresh || !fresh_next || !rfresh || !rptr || !rrow)) s = NLE_ERR_NOMEM;
  if (!s) s = nle_csr_alloc(ctx, n, n, n * (int64_t)k, NLE_F32, &cur);
  if (!s) {
    for (int64_t i = 0; i <= n; i++) cur->rowptr[i] = i * (int64_t)k;
    /* Euclidean: the rows nearest the origin are near many rows (hubs: on
     * tf-idf rows, the shortest documents are among the 10 nearest of most
     * rows), which the local joins reach badly through truncated reverse
     * lists; they are offered to every row. */
    int32_t *hubs = R->metric == NLE_METRIC_EUCLIDEAN ? nle__sp_walk_order(ctx, R, R->a) : NULL;
    if (R->metric == NLE_METRIC_EUCLIDEAN && !hubs) s = NLE_ERR_NOMEM;
    rerank_job job = {R, cand, NULL, NULL, NULL, NULL, NULL, hubs, hubs ? (int)(k < n ? k : n) : 0, k, o.k + k, cur,
                      fresh, changed};
    if (!s)
      s = nle__for_blocks(ctx, "sparse kNN re-ranking", nblocks, threads, rerank_scratch(R, o.k + k, k), rerank_block,
                          &job);
    free(hubs);
  }
  nle_csr_free(&cand);
  nle__log(ctx, 2, "sparse kNN: projection %.2f s, search among projections %.2f s, re-ranking %.2f s", t1 - t0,
           t2 - t1, nle_time_seconds() - t2);
  for (int pass = 0; !s && pass < MAX_JOINS; pass++) {
    s = reverse_lists(ctx, cur, fresh, rptr, rrow, rfresh);
    if (!s) s = nle_csr_alloc(ctx, n, n, n * (int64_t)k, NLE_F32, &next);
    if (s) break;
    for (int64_t i = 0; i <= n; i++) next->rowptr[i] = i * (int64_t)k;
    rerank_job job = {R, NULL, cur, fresh, rptr, rrow, rfresh, NULL, 0, k, width, next, fresh_next, changed};
    s = nle__for_blocks(ctx, "sparse kNN joins", nblocks, threads, rerank_scratch(R, width, k), rerank_block, &job);
    if (s) break;
    int64_t total = 0;
    for (size_t b = 0; b < nblocks; b++) total += changed[b];
    nle__log(ctx, 2, "sparse kNN: join %d brought %lld of %lld entries (%.2f s)", pass + 1, (long long)total,
             (long long)(n * k), nle_time_seconds() - t2);
    nle_csr_free(&cur);
    cur = next;
    next = NULL;
    uint8_t *t = fresh;
    fresh = fresh_next;
    fresh_next = t;
    if ((double)total <= o.delta * (double)n * k) break;
  }
  free(changed);
  free(fresh);
  free(fresh_next);
  free(rfresh);
  free(rptr);
  free(rrow);
  nle_csr_free(&next);
  if (s) nle_csr_free(&cur);
  *graph = cur;
  return s;
}
