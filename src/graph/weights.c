/* weights.c — the graph stage's weights on the directed kNN graph and
 * their symmetrisation (the components policies live in the families'
 * front doors, SPEC G06-10), the epsilon-ball search, degrees, and the
 * symmetry check of a given W. */
#include "graph_internal.h"
#include "../affinity/affinity_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* sqrt of the median over points of the squared distance to the last
 * (k-th) neighbour: a Gaussian width in the scale of the neighbourhoods. */
/* Every rank's `count` doubles `mine`, in rank order, into *all (allocated,
 * *total of them); alone a copy. */
static nle_status gather_doubles(nle_ctx *ctx, const double *mine, size_t count, double **all, size_t *total) {
  int ranks = nle__ranks(ctx);
  uint64_t own = count, *counts = nle__malloc(ctx, (size_t)ranks * sizeof(uint64_t), "counts");
  nle_status s = nle__comm_agree(ctx, counts ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__comm_allgatherv(ctx, &own, sizeof own, counts, NULL);
  *total = 0;
  for (int r = 0; !s && r < ranks; r++) *total += (size_t)counts[r];
  free(counts);
  *all = s ? NULL : nle__malloc(ctx, (*total ? *total : 1) * sizeof(double), "the gathered values");
  if (!s) s = nle__comm_agree(ctx, *all ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = nle__comm_allgatherv(ctx, mine, count * sizeof(double), *all, NULL);
  if (s) free(*all), *all = NULL;
  return s;
}

/* sqrt of the median over points (of every rank) of the squared distance to
 * the last (k-th) neighbour: a Gaussian width in the scale of the
 * neighbourhoods. */
static nle_status median_kth_distance(nle_ctx *ctx, const nle_csr *knn, double *sigma) {
  double *mine = nle__malloc(ctx, (size_t)(knn->rows ? knn->rows : 1) * sizeof(double), "neighbour distances"), *last;
  size_t m = 0;
  for (int64_t i = 0; mine && i < knn->rows; i++)
    if (knn->rowptr[i + 1] > knn->rowptr[i]) mine[m++] = nle_csr_value(knn, knn->rowptr[i + 1] - 1);
  nle_status s = nle__comm_agree(ctx, mine ? NLE_OK : NLE_ERR_NOMEM);
  if (!s) s = gather_doubles(ctx, mine, m, &last, &m);
  free(mine);
  if (s) return s;
  qsort(last, m, sizeof(double), cmp_double);
  *sigma = m ? sqrt(m % 2 ? last[m / 2] : 0.5 * (last[m / 2 - 1] + last[m / 2])) : 0.0;
  free(last);
  if (!(*sigma > 0))
    return nle__fail(ctx, NLE_ERR_VALUE, "spectral graph: every point's k-th neighbour is at distance 0 (duplicate "
                                         "points): no automatic Gaussian width");
  return NLE_OK;
}

nle_status nle__graph_resolve_sigma(nle_ctx *ctx, const nle_csr *knn, nle_affinity_kind weights, double *sigma) {
  return weights == NLE_AFF_GAUSSIAN && *sigma == NLE_AUTO ? median_kth_distance(ctx, knn, sigma) : NLE_OK;
}

double nle__graph_edge_weight(nle_affinity_kind weights, double sigma, double d2, double scale_i, double scale_j) {
  switch (weights) {
  case NLE_AFF_GAUSSIAN: return exp(-d2 / (2.0 * sigma * sigma));
  case NLE_AFF_INVERSE: return 1.0 / sqrt(d2);
  case NLE_AFF_SELF_TUNING: return exp(-d2 / (scale_i * scale_j));
  default: return 1.0;
  }
}

nle_status nle__self_tuning_scales(nle_ctx *ctx, const nle_csr *knn, int tuning_k, double **scale) {
  int64_t n = knn->rows;
  if (!(*scale = nle__malloc(ctx, (size_t)n * sizeof(double), "self-tuning scales"))) return NLE_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) {
    int64_t len = knn->rowptr[i + 1] - knn->rowptr[i], t = tuning_k < len ? tuning_k : len;
    (*scale)[i] = t > 0 ? sqrt(nle_csr_value(knn, knn->rowptr[i] + t - 1)) : 0.0;
    if (!((*scale)[i] > 0)) {
      free(*scale);
      *scale = NULL;
      return nle__fail(ctx, NLE_ERR_VALUE, "spectral graph: point (row) %lld's self-tuning scale is 0 (its "
                       "{@tuning-k=%d} nearest neighbours are duplicates of it)", (long long)i, tuning_k);
    }
  }
  return NLE_OK;
}

/* Entropic affinities on the kNN graph: the directed p_{m|n} as A, each
 * point's precision beta_n into *beta (when not NULL). */
static nle_status entropic_weights(nle_ctx *ctx, const nle_csr *knn, double perplexity, nle_csr **A, double **beta) {
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  eo.perplexity = perplexity;
  nle_ea_result *ea = NULL;
  nle_status s = nle_entropic_affinities(ctx, knn, &eo, &ea);
  if (s == NLE_WARN_NOT_CONVERGED) s = NLE_OK; /* off its perplexity by more than tol: still usable */
  if (!s) s = nle_csr_alloc(ctx, knn->rows, knn->cols, knn->nnz, NLE_F64, A);
  if (!s) {
    memcpy((*A)->rowptr, ea->P->rowptr, ((size_t)knn->rows + 1) * sizeof(int64_t));
    memcpy((*A)->colind, ea->P->colind, (size_t)knn->nnz * sizeof(int32_t));
    for (int64_t q = 0; q < knn->nnz; q++) ((double *)(*A)->val)[q] = nle_csr_value(ea->P, q);
  }
  if (!s && beta) *beta = ea->beta, ea->beta = NULL;
  nle_ea_result_free(&ea);
  return s;
}

/* The directed weights A on the kNN graph's pattern (o->sigma resolved). */
static nle_status directed_weights(nle_ctx *ctx, const nle_csr *knn, const nle_graph_opts *o, nle_csr **A,
                                   double **beta) {
  int64_t n = knn->rows;
  double *own = NULL, *scale = NULL; /* every rank's scales: a row's neighbours' too */
  if (o->weights == NLE_AFF_ENTROPIC) return entropic_weights(ctx, knn, o->perplexity, A, beta);
  nle__rows rows; /* with a communicator, knn is this rank's rows (comm.h) */
  nle_status s = nle__comm_rows(ctx, (size_t)n, "spectral graph", &rows);
  if (!s && o->weights == NLE_AFF_SELF_TUNING) {
    s = nle__comm_agree(ctx, nle__self_tuning_scales(ctx, knn, o->tuning_k, &own));
    size_t all = 0;
    if (!s) s = gather_doubles(ctx, own, (size_t)n, &scale, &all);
    free(own);
  }
  int64_t begin = (int64_t)rows.mine.begin;
  if (!s) s = nle_csr_alloc(ctx, n, knn->cols, knn->nnz, NLE_F64, A);
  for (int64_t i = 0; !s && i < n; i++) {
    (*A)->rowptr[i + 1] = knn->rowptr[i + 1];
    for (int64_t q = knn->rowptr[i]; !s && q < knn->rowptr[i + 1]; q++) {
      double d2 = nle_csr_value(knn, q);
      if (o->weights == NLE_AFF_INVERSE && !(d2 > 0))
        s = nle__fail(ctx, NLE_ERR_VALUE, "spectral graph: points (rows) %lld and %lld coincide: the "
                      "inverse-distance affinity is infinite there", (long long)(begin + i), (long long)knn->colind[q]);
      (*A)->colind[q] = knn->colind[q];
      ((double *)(*A)->val)[q] = nle__graph_edge_weight(o->weights, o->sigma, d2, scale ? scale[begin + i] : 0.0,
                                                        scale ? scale[knn->colind[q]] : 0.0);
    }
  }
  free(scale);
  s = nle__comm_agree(ctx, s);
  if (s) nle_csr_free(A);
  return s;
}

typedef struct {
  int32_t col;
  double a, at; /* A_ij and A_ji; NAN when absent */
} entry;

static int cmp_entry(const void *x, const void *y) {
  int32_t a = ((const entry *)x)->col, b = ((const entry *)y)->col;
  return (a > b) - (a < b);
}

double nle__symmetrize_pair(nle_symmetrize_rule rule, double a, double at) {
  int has_a = !isnan(a), has_at = !isnan(at);
  switch (rule) {
  case NLE_SYMMETRIZE_UNION: return has_a && has_at ? fmax(a, at) : has_a ? a : at;
  case NLE_SYMMETRIZE_MUTUAL: return has_a && has_at ? fmin(a, at) : NAN;
  default: return 0.5 * ((has_a ? a : 0.0) + (has_at ? at : 0.0));
  }
}

nle_status nle__graph_weights(nle_ctx *ctx, const nle_csr *knn, const nle_graph_opts *o, nle_csr **W, double **beta) {
  *W = NULL;
  nle_csr *A = NULL, *AT = NULL;
  nle_status s = directed_weights(ctx, knn, o, &A, beta);
  nle__rows rows; /* with a communicator, knn is this rank's rows (comm.h) */
  if (!s) s = nle__comm_rows(ctx, (size_t)knn->rows, "spectral graph", &rows);
  if (!s) s = nle__distributed(ctx) ? nle__csr_transpose_rows(ctx, A, &rows, &AT) : nle_csr_transpose(ctx, A, &AT);
  int64_t n = knn->rows, cap = 0, begin = s ? 0 : (int64_t)rows.mine.begin;
  for (int64_t i = 0; !s && i < n; i++) {
    int64_t len = (A->rowptr[i + 1] - A->rowptr[i]) + (AT->rowptr[i + 1] - AT->rowptr[i]);
    cap = len > cap ? len : cap;
  }
  entry *row = s ? NULL : nle__malloc(ctx, (size_t)(cap ? cap : 1) * sizeof(entry), "the symmetrised graph");
  int64_t *rowptr = s ? NULL : nle__calloc(ctx, (size_t)n + 1, sizeof(int64_t), "the symmetrised graph");
  if (!s && (!row || !rowptr)) s = NLE_ERR_NOMEM;
  /* Two passes over the rows: count, then fill. Each row's entries of A and
   * A^T sorted by column and merged: the result is sorted by column. */
  nle_csr *out = NULL;
  for (int pass = 0; !s && pass < 2; pass++) {
    for (int64_t i = 0; !s && i < n; i++) {
      size_t m = 0;
      for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
        if (A->colind[q] != begin + i) row[m++] = (entry){A->colind[q], ((double *)A->val)[q], NAN};
      for (int64_t q = AT->rowptr[i]; q < AT->rowptr[i + 1]; q++)
        if (AT->colind[q] != begin + i) row[m++] = (entry){AT->colind[q], NAN, ((double *)AT->val)[q]};
      qsort(row, m, sizeof(entry), cmp_entry);
      int64_t k = pass ? out->rowptr[i] : 0;
      for (size_t a = 0; a < m;) {
        size_t b = a + 1;
        double va = row[a].a, vt = row[a].at;
        for (; b < m && row[b].col == row[a].col; b++) {
          if (!isnan(row[b].a)) va = row[b].a;
          if (!isnan(row[b].at)) vt = row[b].at;
        }
        double w = nle__symmetrize_pair(o->symmetrize, va, vt);
        if (!isnan(w)) {
          if (pass) {
            out->colind[k] = row[a].col;
            ((double *)out->val)[k] = w;
          }
          k++;
        }
        a = b;
      }
      if (!pass) rowptr[i + 1] = rowptr[i] + k;
    }
    if (!pass) {
      s = nle_csr_alloc(ctx, n, knn->cols, rowptr[n], NLE_F64, &out);
      if (!s) memcpy(out->rowptr, rowptr, ((size_t)n + 1) * sizeof(int64_t));
    }
  }
  free(row);
  free(rowptr);
  nle_csr_free(&A);
  nle_csr_free(&AT);
  if (s) nle_csr_free(&out);
  *W = out;
  return s;
}

nle_status nle__csr_check_symmetric(nle_ctx *ctx, const nle_csr *A, const char *what) {
  nle_csr *AT = NULL;
  nle_status s = nle_csr_transpose(ctx, A, &AT);
  if (s) return s;
  /* Row by row, both sorted by column, compared entry by entry. */
  int64_t cap = 0;
  for (int64_t i = 0; i < A->rows; i++) {
    int64_t len = A->rowptr[i + 1] - A->rowptr[i];
    cap = len > cap ? len : cap;
  }
  entry *a = nle__malloc(ctx, (size_t)(cap ? cap : 1) * sizeof(entry), "the symmetry check");
  entry *b = nle__malloc(ctx, (size_t)(cap ? cap : 1) * sizeof(entry), "the symmetry check");
  if (!a || !b) s = NLE_ERR_NOMEM;
  for (int64_t i = 0; !s && i < A->rows; i++) {
    int64_t la = A->rowptr[i + 1] - A->rowptr[i], lb = AT->rowptr[i + 1] - AT->rowptr[i];
    for (int64_t q = 0; q < la; q++) a[q] = (entry){A->colind[A->rowptr[i] + q], nle_csr_value(A, A->rowptr[i] + q), 0};
    for (int64_t q = 0; q < lb; q++)
      b[q] = (entry){AT->colind[AT->rowptr[i] + q], nle_csr_value(AT, AT->rowptr[i] + q), 0};
    qsort(a, (size_t)la, sizeof(entry), cmp_entry);
    qsort(b, (size_t)lb, sizeof(entry), cmp_entry);
    int64_t p = 0, r = 0;
    while (!s && (p < la || r < lb)) {
      /* explicit zeros count as absent */
      if (p < la && a[p].a == 0.0) { p++; continue; }
      if (r < lb && b[r].a == 0.0) { r++; continue; }
      int ok = p < la && r < lb && a[p].col == b[r].col &&
               fabs(a[p].a - b[r].a) <= 1e-12 * fmax(fabs(a[p].a), fabs(b[r].a));
      if (!ok) {
        int64_t j = p < la && (r >= lb || a[p].col <= b[r].col) ? a[p].col : b[r].col;
        double wij = p < la && a[p].col == j ? a[p].a : 0.0, wji = r < lb && b[r].col == j ? b[r].a : 0.0;
        s = nle__fail(ctx, NLE_ERR_VALUE, "%s: not symmetric: row %lld, column %lld holds %g but row %lld, "
                      "column %lld holds %g", what, (long long)i, (long long)j, wij, (long long)j, (long long)i, wji);
      }
      p++, r++;
    }
  }
  free(a);
  free(b);
  nle_csr_free(&AT);
  return s;
}

double *nle__degrees_from(nle_ctx *ctx, const nle_csr *W, size_t first) {
  double *deg = nle__calloc(ctx, (size_t)W->rows + 1, sizeof(double), "degrees");
  if (!deg) return NULL;
  for (int64_t i = 0; i < W->rows; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++)
      if (W->colind[q] != (int64_t)first + i) deg[i] += nle_csr_value(W, q);
  return deg;
}

double *nle__degrees(nle_ctx *ctx, const nle_csr *W) { return nle__degrees_from(ctx, W, 0); }

/* ---- epsilon-ball neighbourhoods (the slides' "within a fixed radius") -- */

typedef struct {
  const nle_matf *Y;
  double r2;
  int64_t *count; /* per row: neighbours within the radius (pass 1) */
  nle_csr *G;     /* pass 2: filled */
  double *nearest; /* per row: the nearest other point's squared distance */
} radius_job;

enum { RADIUS_BLOCK = 64 };

typedef struct {
  float d2;
  int32_t j;
} neighbour;

static int cmp_neighbour(const void *a, const void *b) {
  const neighbour *x = a, *y = b;
  return x->d2 < y->d2 ? -1 : x->d2 > y->d2 ? 1 : (x->j > y->j) - (x->j < y->j);
}

static int radius_block(void *job, size_t b, void *scratch) {
  radius_job *j = job;
  size_t n = j->Y->rows, D = j->Y->cols, i1 = (b + 1) * RADIUS_BLOCK < n ? (b + 1) * RADIUS_BLOCK : n;
  neighbour *row = scratch;
  for (size_t i = b * RADIUS_BLOCK; i < i1; i++) {
    int64_t m = 0;
    double nearest = INFINITY;
    for (size_t k = 0; k < n; k++) {
      if (k == i) continue;
      double d2 = nle__sqdist_fd(j->Y->data + i * D, j->Y->data + k * D, D);
      nearest = fmin(nearest, d2);
      if (d2 <= j->r2) {
        if (j->G) row[m] = (neighbour){(float)d2, (int32_t)k};
        m++;
      }
    }
    if (!j->G) {
      j->count[i] = m;
      j->nearest[i] = nearest;
      continue;
    }
    qsort(row, (size_t)m, sizeof(neighbour), cmp_neighbour); /* as the kNN graphs: by distance, ties by index */
    int64_t q0 = j->G->rowptr[i];
    for (int64_t a = 0; a < m; a++) {
      j->G->colind[q0 + a] = row[a].j;
      ((float *)j->G->val)[q0 + a] = row[a].d2;
    }
  }
  return 0;
}

nle_status nle__radius_graph(nle_ctx *ctx, const nle_matf *Y, double radius, nle_csr **out) {
  *out = NULL;
  size_t n = Y->rows;
  radius_job j = {Y, radius * radius, nle__malloc(ctx, n * sizeof(int64_t), "the radius graph"), NULL,
                  nle__malloc(ctx, n * sizeof(double), "the radius graph")};
  nle_status s = j.count && j.nearest ? NLE_OK : NLE_ERR_NOMEM;
  double work = (double)n * (double)n * (double)Y->cols;
  size_t blocks = (n + RADIUS_BLOCK - 1) / RADIUS_BLOCK;
  if (!s) s = nle__for_blocks(ctx, "radius graph", blocks, nle__threads_for(ctx, work), 0, radius_block, &j);
  int64_t nnz = 0, widest = 0;
  for (size_t i = 0; !s && i < n; i++) {
    if (j.count[i] == 0)
      s = nle__fail(ctx, NLE_ERR_VALUE, "spectral graph: point (row) %zu has no neighbour within {@radius=%g} (its "
                    "nearest is at %g): a larger radius, or k nearest neighbours ({@neighbors})", i, radius,
                    sqrt(j.nearest[i]));
    nnz += j.count[i];
    widest = j.count[i] > widest ? j.count[i] : widest;
  }
  if (!s) s = nle_csr_alloc(ctx, (int64_t)n, (int64_t)n, nnz, NLE_F32, &j.G);
  for (size_t i = 0; !s && i < n; i++) j.G->rowptr[i + 1] = j.G->rowptr[i] + j.count[i];
  if (!s)
    s = nle__for_blocks(ctx, "radius graph", blocks, nle__threads_for(ctx, work), (size_t)widest * sizeof(neighbour),
                        radius_block, &j);
  free(j.count);
  free(j.nearest);
  if (s) nle_csr_free(&j.G);
  *out = j.G;
  return s;
}
