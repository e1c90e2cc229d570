/* isomap.c — Isomap (lecture slides 002, "ISOMAP (Algorithm
 * Description)"; Tenenbaum, de Silva and Langford 2000): geodesic
 * distances along the neighbourhood graph, then classical MDS of them.
 *   1. The undirected kNN graph, edges weighted by their Euclidean length
 *      (an edge when either point lists the other, as scikit-learn's);
 *   2. d_G by Dijkstra from every point (binary heap; sources in parallel,
 *      each independent: the same bits on any thread count). The slides'
 *      Floyd-Warshall update is the O(N^3) alternative; its d_X in the
 *      update is a typo for d_G;
 *   3. classical MDS (slides "Classic Metric MDS"): B = -1/2 J S J for the
 *      squared geodesics S, X = V Lambda^1/2 of B's top d eigenpairs.
 * S is kept as an N x N float matrix (half a double one) and B is never
 * formed: its product with a vector centres S's implicitly (row means,
 * grand mean), accumulating in double. A disconnected graph has infinite
 * geodesics, which MDS cannot take: the front door joins its components
 * by the shortest edges between them (join.c; the default) or refuses
 * (SPEC G06-10). */
#include "method.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DENSE_MAX_N = 400, SOURCE_BLOCK = 16 };

typedef struct {
  double d;
  int32_t v;
} heap_item;

/* Binary min-heap on d (ties by vertex, for a fixed order). */
static void heap_push(heap_item *h, size_t *n, heap_item x) {
  size_t i = (*n)++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h[p].d < x.d || (h[p].d == x.d && h[p].v <= x.v)) break;
    h[i] = h[p];
    i = p;
  }
  h[i] = x;
}

static heap_item heap_pop(heap_item *h, size_t *n) {
  heap_item top = h[0], last = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && (h[c + 1].d < h[c].d || (h[c + 1].d == h[c].d && h[c + 1].v < h[c].v))) c++;
    if (last.d < h[c].d || (last.d == h[c].d && last.v <= h[c].v)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = last;
  return top;
}

void nle__dijkstra_from(const nle_csr *G, size_t count, const int32_t *sources, const double *start, double *dist,
                        void *heap_scratch) {
  heap_item *h = heap_scratch;
  size_t n = (size_t)G->rows, len = 0;
  for (size_t i = 0; i < n; i++) dist[i] = INFINITY;
  for (size_t a = 0; a < count; a++)
    if (start[a] < dist[sources[a]]) {
      dist[sources[a]] = start[a];
      heap_push(h, &len, (heap_item){start[a], sources[a]});
    }
  while (len) {
    heap_item it = heap_pop(h, &len);
    if (it.d > dist[it.v]) continue; /* a stale entry */
    for (int64_t q = G->rowptr[it.v]; q < G->rowptr[it.v + 1]; q++) {
      int32_t u = G->colind[q];
      double nd = it.d + nle_csr_value(G, q);
      if (nd < dist[u]) {
        dist[u] = nd;
        heap_push(h, &len, (heap_item){nd, u});
      }
    }
  }
}

void nle__dijkstra(const nle_csr *G, int32_t source, double *dist, void *heap_scratch) {
  const double zero = 0.0;
  nle__dijkstra_from(G, 1, &source, &zero, dist, heap_scratch);
}

size_t nle__dijkstra_scratch(const nle_csr *G) { return ((size_t)G->nnz + 2 * (size_t)G->rows + 1) * sizeof(heap_item); }

/* The undirected graph with Euclidean edge lengths: the union of both
 * directions of the kNN graph (which holds squared distances; a length is
 * the same both ways, so either copy serves). */
nle_status nle__geodesic_graph(nle_ctx *ctx, const nle_csr *knn, nle_csr **G) {
  nle_csr *sq = NULL; /* the kNN graph's squared lengths as doubles */
  nle_status s = nle_csr_alloc(ctx, knn->rows, knn->cols, knn->nnz, NLE_F64, &sq);
  if (s) return s;
  memcpy(sq->rowptr, knn->rowptr, ((size_t)knn->rows + 1) * sizeof(int64_t));
  memcpy(sq->colind, knn->colind, (size_t)knn->nnz * sizeof(int32_t));
  for (int64_t q = 0; q < knn->nnz; q++) ((double *)sq->val)[q] = nle_csr_value(knn, q);
  nle_csr *T = NULL;
  s = nle_csr_transpose(ctx, sq, &T);
  /* merge row i of sq and of T (both carry squared lengths) */
  int64_t n = knn->rows;
  int64_t *rowptr = s ? NULL : nle__calloc(ctx, (size_t)n + 1, sizeof(int64_t), "the geodesic graph");
  int32_t *mark = s ? NULL : nle__malloc(ctx, (size_t)n * sizeof(int32_t), "the geodesic graph");
  if (!s && (!rowptr || !mark)) s = NLE_ERR_NOMEM;
  for (int64_t i = 0; !s && i < n; i++) mark[i] = -1;
  nle_csr *out = NULL;
  for (int pass = 0; !s && pass < 2; pass++) {
    for (int64_t i = 0; i < n; i++) {
      int64_t k = pass ? out->rowptr[i] : 0;
      const nle_csr *src[2] = {sq, T};
      for (int w = 0; w < 2; w++)
        for (int64_t q = src[w]->rowptr[i]; q < src[w]->rowptr[i + 1]; q++) {
          int32_t j = src[w]->colind[q];
          if (j == i || mark[j] == (int32_t)i) continue;
          mark[j] = (int32_t)i;
          if (pass) {
            out->colind[k] = j;
            ((double *)out->val)[k] = sqrt(nle_csr_value(src[w], q));
          }
          k++;
        }
      if (!pass) rowptr[i + 1] = rowptr[i] + k;
    }
    for (int64_t i = 0; i < n; i++) mark[i] = -1;
    if (!pass) {
      s = nle_csr_alloc(ctx, n, n, rowptr[n], NLE_F64, &out);
      if (!s) memcpy(out->rowptr, rowptr, ((size_t)n + 1) * sizeof(int64_t));
    }
  }
  free(rowptr);
  free(mark);
  nle_csr_free(&sq);
  nle_csr_free(&T);
  if (s) nle_csr_free(&out);
  *G = out;
  return s;
}

typedef struct {
  const nle_csr *G;
  float *S; /* N x N squared geodesics */
  size_t n;
  int infinite; /* set when a source reaches fewer than all points */
} geodesic_job;

static int geodesic_block(void *job, size_t b, void *scratch) {
  geodesic_job *j = job;
  double *dist = scratch;
  void *heap = dist + j->n;
  size_t s1 = (b + 1) * SOURCE_BLOCK < j->n ? (b + 1) * SOURCE_BLOCK : j->n;
  for (size_t src = b * SOURCE_BLOCK; src < s1; src++) {
    nle__dijkstra(j->G, (int32_t)src, dist, heap);
    float *row = j->S + src * j->n;
    for (size_t v = 0; v < j->n; v++) {
      if (isinf(dist[v])) j->infinite = 1;
      row[v] = (float)(dist[v] * dist[v]);
    }
  }
  return 0;
}

typedef struct {
  const nle_csr *G;
  const int32_t *landmark; /* the first `count` of a permutation */
  float *S;                /* count x N squared geodesics */
  size_t n, count;
  int infinite;
} landmark_job;

static int landmark_block(void *job, size_t b, void *scratch) {
  landmark_job *j = job;
  double *dist = scratch;
  void *heap = dist + j->n;
  for (size_t a = b * SOURCE_BLOCK; a < (b + 1) * SOURCE_BLOCK && a < j->count; a++) {
    nle__dijkstra(j->G, j->landmark[a], dist, heap);
    float *row = j->S + a * j->n;
    for (size_t v = 0; v < j->n; v++) {
      if (isinf(dist[v])) j->infinite = 1;
      row[v] = (float)(dist[v] * dist[v]);
    }
  }
  return 0;
}

/* Residual variance 1 - R^2 between geodesic and embedding distances
 * (Tenenbaum et al.'s figure 2), accumulated pair by pair. */
typedef struct {
  double sg, se, sgg, see, sge, pairs;
} residual_acc;

static void residual_add(residual_acc *a, const double *X, size_t d, size_t i, size_t j, double g2) {
  double g = sqrt(g2), e2 = 0.0;
  for (size_t t = 0; t < d; t++) {
    double diff = X[i * d + t] - X[j * d + t];
    e2 += diff * diff;
  }
  double e = sqrt(e2);
  a->sg += g, a->se += e, a->sgg += g * g, a->see += e * e, a->sge += g * e, a->pairs += 1;
}

static double residual_variance(const residual_acc *a) {
  double p = a->pairs, cov = a->sge / p - a->sg * a->se / (p * p), vg = a->sgg / p - a->sg * a->sg / (p * p),
         ve = a->see / p - a->se * a->se / (p * p);
  return vg > 0 && ve > 0 ? 1.0 - cov * cov / (vg * ve) : NAN;
}

/* Landmark Isomap (de Silva and Tenenbaum 2004, "Sparse multidimensional
 * scaling using landmark points"; the dissertation's sec. 4.2 calls it a
 * Nystrom approximation of Isomap): L landmarks drawn at random from the
 * context's seed (their paper finds random choice as good as MaxMin once
 * L is a few times d, and it lets the L Dijkstra runs go in parallel),
 * geodesics from the landmarks only (L x N), classical MDS of the
 * landmarks' L x L block, and every point placed by distance-based
 * triangulation: x = -1/2 L# (delta_x - delta_mean), the rows of L# being
 * v_k / sqrt(lambda_k) (their eq. 3). O(L N log N) time, O(L N) memory. */
static nle_status landmark_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  const nle_spectral_opts *o = job->o;
  size_t n = (size_t)job->knn->rows, d = (size_t)o->dim, L = (size_t)o->landmarks;
  if (L <= d || L > n)
    return nle__fail(ctx, NLE_ERR_ARG, "isomap: {@landmarks=%zu} for %zu dimensions of %zu points (d < L <= N)", L, d, n);
  nle_status s = nle__check_memory(ctx, (double)L * (double)n * sizeof(float), "landmark Isomap's L x N geodesics");
  if (s) return s;
  /* L distinct landmarks, a partial Fisher-Yates shuffle */
  int32_t *perm = nle__malloc(ctx, n * sizeof(int32_t), "the landmarks");
  if (!perm) return NLE_ERR_NOMEM;
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6c6d6b73ULL);
  for (size_t i = 0; i < n; i++) perm[i] = (int32_t)i;
  for (size_t i = 0; i < L; i++) {
    size_t j = i + (size_t)(nle_rng_uniform(&rng) * (double)(n - i));
    if (j >= n) j = n - 1;
    int32_t t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  nle_csr *G = NULL;
  s = nle__geodesic_graph(ctx, job->knn, &G);
  landmark_job lj = {G, perm, s ? NULL : nle__malloc(ctx, L * n * sizeof(float), "landmark Isomap's geodesics"), n, L,
                     0};
  if (!s && !lj.S) s = NLE_ERR_NOMEM;
  if (!s)
    s = nle__for_blocks(ctx, "Isomap geodesics", (L + SOURCE_BLOCK - 1) / SOURCE_BLOCK,
                        nle__threads_for(ctx, (double)L * (double)G->nnz * 20.0),
                        n * sizeof(double) + nle__dijkstra_scratch(G), landmark_block, &lj);
  if (!s && lj.infinite) s = nle__fail(ctx, NLE_ERR_VALUE, "isomap: some geodesics are infinite (a disconnected graph)");
  /* classical MDS of the landmarks: B_L = -1/2 J Delta_L J */
  double *B = s ? NULL : nle__malloc(ctx, L * L * sizeof(double), "landmark MDS");
  double *mean = s ? NULL : nle__calloc(ctx, L, sizeof(double), "landmark MDS");
  double *asc = nle__malloc(ctx, d * sizeof(double), "eigenvalues"), *V = nle__malloc(ctx, L * d * sizeof(double), "eigenvectors");
  if (!s && (!B || !mean || !asc || !V)) s = NLE_ERR_NOMEM;
  double gm = 0.0;
  for (size_t a = 0; !s && a < L; a++) {
    for (size_t b = 0; b < L; b++) mean[a] += lj.S[a * n + (size_t)perm[b]];
    mean[a] /= (double)L;
    gm += mean[a] / (double)L;
  }
  for (size_t a = 0; !s && a < L; a++)
    for (size_t b = 0; b < L; b++) B[a * L + b] = -0.5 * (lj.S[a * n + (size_t)perm[b]] - mean[a] - mean[b] + gm);
  if (!s) s = nle__eig_dense(ctx, "landmark isomap", L, B, L - d, d, asc, V);
  double *vals = s ? NULL : nle__malloc(ctx, d * sizeof(double), "eigenvalues");
  if (!s && !vals) s = NLE_ERR_NOMEM;
  for (size_t t = 0; !s && t < d; t++) {
    vals[t] = asc[d - 1 - t];
    if (!(vals[t] > 0))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "isomap: landmark eigenvalue %zu is %g, not positive: fewer than %zu "
                    "dimensions are Euclidean", t + 1, vals[t], d);
  }
  /* triangulation: x_t = -1/2 sum_a v_at / sqrt(lambda_t) (delta_a(x) - mean_a) */
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++)
    for (size_t t = 0; t < d; t++) {
      double v = 0.0;
      for (size_t a = 0; a < L; a++) v += V[a * d + (d - 1 - t)] * ((double)lj.S[a * n + i] - mean[a]);
      r->X->data[i * d + t] = -0.5 * v / sqrt(vals[t]);
    }
  if (!s) nle__fix_signs(r->X->data, n, d);
  r->solver_used = NLE_EIGEN_DENSE;
  if (!s) { /* residual variance over the landmark-to-point pairs */
    residual_acc acc = {0};
    for (size_t a = 0; a < L; a++)
      for (size_t i = 0; i < n; i++)
        if (i != (size_t)perm[a]) residual_add(&acc, r->X->data, d, (size_t)perm[a], i, lj.S[a * n + i]);
    r->residual_variance = residual_variance(&acc);
    r->eigenvalues = vals;
    r->n_eigenvalues = (int)d;
    vals = NULL;
  }
  if (!s && job->model) { /* out-of-sample: the landmarks, their mean squared geodesics, the graph */
    nle_spectral_model *md = job->model;
    md->landmarks = perm, perm = NULL;
    md->landmark_mean = mean, mean = NULL;
    md->n_landmarks = L;
    md->geodesic_graph = G, G = NULL;
  }
  nle_csr_free(&G);
  free(perm);
  free(lj.S);
  free(B);
  free(mean);
  free(asc);
  free(V);
  free(vals);
  return s;
}

static nle_status isomap_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  const nle_spectral_opts *o = job->o;
  if (!job->knn)
    return nle__fail(ctx, NLE_ERR_ARG, "isomap: geodesics need distances: give the points or a kNN graph, not "
                     "affinities");
  if (job->components > 1 && !job->joined) /* the front door refuses first; a direct caller's guard */
    return nle__fail(ctx, NLE_ERR_VALUE, "isomap: the neighbourhood graph has %d connected components: the geodesics "
                     "between them are infinite ({@components=join} or a larger {@neighbors} joins them)",
                     job->components);
  size_t n = (size_t)job->knn->rows, d = (size_t)o->dim;
  if (o->landmarks > 0) return landmark_embed(ctx, job, r);
  double need = (double)n * (double)n * sizeof(float);
  nle_status s = nle__check_memory(ctx, need, "Isomap's N x N geodesic matrix");
  if (s)
    return nle__fail(ctx, s, "isomap: the N x N geodesic matrix needs %.2f GiB, over the memory cap (%.2f GiB); "
                     "landmark Isomap needs L x N ({@landmarks})", need / 1073741824.0,
                     (double)nle_ctx_max_memory(ctx) / 1073741824.0);
  nle_csr *G = NULL;
  s = nle__geodesic_graph(ctx, job->knn, &G);
  geodesic_job gj = {G, s ? NULL : nle__malloc(ctx, n * n * sizeof(float), "Isomap's geodesic matrix"), n, 0};
  if (!s && !gj.S) s = NLE_ERR_NOMEM;
  if (!s)
    s = nle__for_blocks(ctx, "Isomap geodesics", (n + SOURCE_BLOCK - 1) / SOURCE_BLOCK,
                        nle__threads_for(ctx, (double)n * (double)G->nnz * 20.0),
                        n * sizeof(double) + nle__dijkstra_scratch(G), geodesic_block, &gj);
  if (!s && gj.infinite)
    s = nle__fail(ctx, NLE_ERR_VALUE, "isomap: some geodesics are infinite (a disconnected graph)");
  double *rmean = s ? NULL : nle__calloc(ctx, n, sizeof(double), "Isomap");
  if (!s && !rmean) s = NLE_ERR_NOMEM;
  double gmean = 0.0;
  for (size_t i = 0; !s && i < n; i++) {
    double sum = 0.0;
    for (size_t j = 0; j < n; j++) sum += gj.S[i * n + j];
    rmean[i] = sum / (double)n;
    gmean += rmean[i];
  }
  gmean /= (double)n;
  double *vals = nle__malloc(ctx, d * sizeof(double), "eigenvalues"), *U = nle__malloc(ctx, n * d * sizeof(double), "eigenvectors");
  if (!s && (!vals || !U)) s = NLE_ERR_NOMEM;
  r->solver_used = o->solver != NLE_EIGEN_AUTO ? o->solver : n <= DENSE_MAX_N ? NLE_EIGEN_DENSE : NLE_EIGEN_SPARSE;
  if (r->solver_used == NLE_EIGEN_SHIFT_INVERT || r->solver_used == NLE_EIGEN_BLOCK)
    r->solver_used = NLE_EIGEN_SPARSE; /* B's top end needs no inverse; d pairs are few for a block */
  double *asc = nle__malloc(ctx, d * sizeof(double), "eigenvalues"), *Z = nle__malloc(ctx, n * d * sizeof(double), "eigenvectors");
  if (!s && (!asc || !Z)) s = NLE_ERR_NOMEM;
  if (!s && r->solver_used == NLE_EIGEN_DENSE) {
    s = nle__check_memory(ctx, (double)n * (double)n * sizeof(double), "Isomap's dense B");
    double *B = s ? NULL : nle__malloc(ctx, n * n * sizeof(double), "Isomap's dense B");
    if (!s && !B) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++)
      for (size_t j = 0; j < n; j++) B[i * n + j] = -0.5 * (gj.S[i * n + j] - rmean[i] - rmean[j] + gmean);
    if (!s) s = nle__eig_dense(ctx, "isomap", n, B, n - d, d, asc, Z);
    free(B);
  } else if (!s) {
    nle__centred_op op = {ctx, gj.S, NULL, rmean, gmean, n, NULL, NULL, 0.0, 0.0};
    s = nle__lanczos(ctx, "isomap", n, nle__centred_apply, &op, (int)d, NLE__EIG_LARGEST, o->tol, asc, Z);
  }
  for (size_t t = 0; !s && t < d; t++) { /* descending, as X's columns */
    vals[t] = asc[d - 1 - t];
    if (!(vals[t] > 0))
      s = nle__fail(ctx, NLE_ERR_NUMERIC, "isomap: eigenvalue %zu of the double-centred geodesics is %g, not positive: "
                    "fewer than %zu dimensions are Euclidean", t + 1, vals[t], d);
    for (size_t i = 0; !s && i < n; i++) U[i * d + t] = Z[i * d + (d - 1 - t)];
  }
  if (!s) s = nle_matd_alloc(ctx, n, d, &r->X);
  for (size_t i = 0; !s && i < n; i++)
    for (size_t t = 0; t < d; t++) r->X->data[i * d + t] = U[i * d + t] * sqrt(vals[t]);
  if (!s) nle__fix_signs(r->X->data, n, d);
  /* the residual variance over the pairs i < j */
  if (!s) {
    residual_acc acc = {0};
    for (size_t i = 0; i < n; i++)
      for (size_t j = i + 1; j < n; j++) residual_add(&acc, r->X->data, d, i, j, gj.S[i * n + j]);
    r->residual_variance = residual_variance(&acc);
    r->eigenvalues = vals;
    r->n_eigenvalues = (int)d;
    vals = NULL;
  }
  if (!s && job->model) { /* out-of-sample: every point a landmark */
    job->model->landmark_mean = rmean, rmean = NULL;
    job->model->n_landmarks = n;
    job->model->geodesic_graph = G, G = NULL;
  }
  nle_csr_free(&G);
  free(gj.S);
  free(rmean);
  free(vals);
  free(U);
  free(asc);
  free(Z);
  return s;
}

/* ---- new points: geodesics from y through its edges, then landmark
 * MDS's triangulation (de Silva and Tenenbaum 2004) ---- */

/* dist[n] and start[n], the heap, then src[n]. */
static size_t geodesic_scratch(const nle_spectral_model *m) {
  return 2 * m->n * sizeof(double) + nle__dijkstra_scratch(m->geodesic_graph) + m->n * sizeof(int32_t);
}

static int geodesic_point(const nle__oos_point *p, void *scratch, double *x) {
  const nle_spectral_model *m = p->m;
  size_t d = m->dim, L = m->n_landmarks, n = m->n, count = p->count;
  double *dist = scratch, *start = dist + n;
  void *heap = start + n;
  int32_t *src = (int32_t *)((char *)heap + nle__dijkstra_scratch(m->geodesic_graph));
  if (!count) return 0;
  for (size_t a = 0; a < count; a++) src[a] = p->edges[a].j, start[a] = sqrt((double)p->edges[a].d2);
  if (p->self >= 0) src[count] = p->self, start[count++] = 0.0; /* y is that training point: 0 away, not an edge */
  nle__dijkstra_from(m->geodesic_graph, count, src, start, dist, heap);
  for (size_t t = 0; t < d; t++) x[t] = 0.0;
  for (size_t a = 0; a < L; a++) {
    size_t l = m->landmarks ? (size_t)m->landmarks[a] : a;
    double g2 = dist[l] * dist[l] - m->landmark_mean[a];
    for (size_t t = 0; t < d; t++) x[t] += m->X->data[l * d + t] * g2;
  }
  for (size_t t = 0; t < d; t++) x[t] *= -0.5 / m->eigenvalues[t];
  return 1;
}

static void save_geodesics(nle__afile *af, const nle_spectral_model *m) {
  if (!m->geodesic_graph) return;
  const nle_csr *G = m->geodesic_graph;
  nle__rec_put(af, "graph_rowptr", 'l', G->rowptr, m->n + 1);
  nle__rec_put(af, "graph_colind", 'i', G->colind, (uint64_t)G->nnz);
  nle__rec_put(af, "graph_length", 'd', G->val, (uint64_t)G->nnz);
  nle__rec_put(af, "landmark_mean", 'd', m->landmark_mean, m->n_landmarks);
  if (m->landmarks) nle__rec_put(af, "landmarks", 'i', m->landmarks, m->n_landmarks);
}

static nle_status read_graph(nle_ctx *ctx, const nle__rec_file *f, size_t n, nle_csr **G) {
  const void *rp = NULL, *len = NULL;
  int32_t *col = NULL;
  nle_status s = nle__rec_get(ctx, f, "graph_rowptr", 'l', n + 1, &rp);
  const int64_t *rowptr = rp;
  int64_t nnz = s ? 0 : rowptr[n];
  for (size_t i = 0; !s && i < n; i++)
    if (rowptr[0] != 0 || rowptr[i + 1] < rowptr[i] || nnz > INT32_MAX * (int64_t)8)
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged geodesic graph", f->path);
  if (!s) s = nle__spectral_read_ints(ctx, f, "graph_colind", (size_t)nnz, (int64_t)n, &col);
  if (!s) s = nle__rec_get(ctx, f, "graph_length", 'd', (uint64_t)nnz, &len);
  if (!s) s = nle_csr_alloc(ctx, (int64_t)n, (int64_t)n, nnz, NLE_F64, G);
  if (!s) {
    memcpy((*G)->rowptr, rowptr, (n + 1) * sizeof(int64_t));
    memcpy((*G)->colind, col, (size_t)nnz * sizeof(int32_t));
    memcpy((*G)->val, len, (size_t)nnz * sizeof(double));
    for (int64_t q = 0; !s && q < nnz; q++)
      if (!(((double *)(*G)->val)[q] >= 0) || !isfinite(((double *)(*G)->val)[q]))
        s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged geodesic graph (edge length)", f->path);
  }
  free(col);
  return s;
}

static nle_status load_geodesics(nle_ctx *ctx, const nle__rec_file *f, nle_spectral_model *m) {
  size_t n = m->n;
  nle_status s = read_graph(ctx, f, n, &m->geodesic_graph);
  if (!s && m->n_landmarks < m->dim + 1) s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged landmark record", f->path);
  if (!s) s = nle__rec_copy_doubles(ctx, f, "landmark_mean", m->n_landmarks, &m->landmark_mean);
  if (!s && m->opts.landmarks > 0)
    s = nle__spectral_read_ints(ctx, f, "landmarks", m->n_landmarks, (int64_t)n, &m->landmarks);
  if (!s && !m->opts.landmarks && m->n_landmarks != n)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged landmark record", f->path);
  return s;
}

const nle__spectral_map nle__geodesic_map = {"nystrom", false, geodesic_scratch, geodesic_point, NULL, save_geodesics,
                                             load_geodesics};

const nle__spectral_method nle__spectral_isomap = {"isomap", NLE_COMPONENTS_JOIN, true, false, true, false,
                                                   isomap_embed, &nle__geodesic_map};
