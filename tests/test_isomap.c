/* test_isomap.c — Isomap against independent references (SPEC 4.2, 4.4):
 * a curve's geodesics are its chord lengths; Dijkstra against
 * Floyd-Warshall written here; on a complete graph Isomap is classical MDS,
 * checked against LAPACK on the double-centred squared distances; the
 * policy for disconnected graphs, the memory cap, thread invariance. */
#include "harness.h"
#include "../src/spectral/method.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

static nle_spectral_result *isomap_of(nle_ctx *ctx, const nle_matf *Y, int k, int dim, nle_eigen_solver solver) {
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = k;
  o.dim = dim;
  o.solver = solver;
  o.knn_method = NLE_KNN_EXACT;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  if (nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &in, &o, &r)) printf("  %s\n", nle_ctx_error(ctx));
  return r;
}

/* Points along an arc of a planar spiral, in order, close enough that
 * each point's 2 nearest neighbours are the next and the previous: the
 * graph is the path, geodesics are sums of chords, and 1-D Isomap is the
 * cumulative chord length up to sign and translation (exact). */
static void curve_chord_length(void) {
  nle_ctx *ctx = test_ctx(1);
  enum { N = 200 };
  nle_matf *Y = NULL;
  nle_test_ok(nle_matf_alloc(ctx, N, 2, &Y));
  for (size_t i = 0; i < N; i++) {
    double t = 1.0 + 2.0 * (double)i / N;
    Y->data[2 * i] = (float)(t * cos(t)), Y->data[2 * i + 1] = (float)(t * sin(t));
  }
  nle_spectral_result *r = isomap_of(ctx, Y, 2, 1, NLE_EIGEN_DENSE);
  nle_test(r != NULL);
  if (r) {
    double s[N], mean = 0, dot = 0;
    s[0] = 0;
    for (size_t i = 1; i < N; i++)
      s[i] = s[i - 1] + hypot((double)Y->data[2 * i] - Y->data[2 * i - 2], (double)Y->data[2 * i + 1] - Y->data[2 * i - 1]);
    for (size_t i = 0; i < N; i++) mean += s[i] / N;
    for (size_t i = 0; i < N; i++) dot += (s[i] - mean) * r->X->data[i];
    double sign = dot < 0 ? -1 : 1, worst = 0;
    for (size_t i = 0; i < N; i++) worst = fmax(worst, fabs(sign * r->X->data[i] - (s[i] - mean)));
    if (!nle_test(worst < 1e-6 * s[N - 1])) printf("  worst deviation %g of %g\n", worst, s[N - 1]);
    nle_test(r->residual_variance < 1e-10);
  }
  nle_spectral_result_free(&r);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Dijkstra from every vertex against Floyd-Warshall on a random sparse
 * weighted graph (symmetric, some vertices unreachable). */
static void dijkstra_vs_floyd(void) {
  enum { N = 60, E = 150 };
  nle_rng rng;
  nle_rng_init(&rng, 3, 0);
  double *F = malloc(N * N * sizeof(double));
  for (size_t i = 0; i < N * N; i++) F[i] = i % (N + 1) == 0 ? 0.0 : INFINITY;
  int ei[E], ej[E];
  double ew[E];
  for (int e = 0; e < E; e++) {
    ei[e] = (int)(nle_rng_uniform(&rng) * (N - 5)), ej[e] = (int)(nle_rng_uniform(&rng) * (N - 5)); /* the last 5 isolated */
    ew[e] = 0.1 + nle_rng_uniform(&rng);
    if (ei[e] != ej[e]) {
      F[ei[e] * N + ej[e]] = fmin(F[ei[e] * N + ej[e]], ew[e]);
      F[ej[e] * N + ei[e]] = F[ei[e] * N + ej[e]];
    }
  }
  nle_csr *G = NULL;
  nle_test_ok(nle_csr_alloc(NULL, N, N, 2 * E, NLE_F64, &G));
  int64_t k = 0;
  for (int i = 0; i < N; i++) { /* every stored edge, both ways, duplicates kept */
    G->rowptr[i] = k;
    for (int e = 0; e < E; e++) {
      if (ei[e] == ej[e]) continue;
      if (ei[e] == i) G->colind[k] = ej[e], ((double *)G->val)[k++] = ew[e];
      else if (ej[e] == i) G->colind[k] = ei[e], ((double *)G->val)[k++] = ew[e];
    }
  }
  G->rowptr[N] = k;
  G->nnz = k;
  for (int m = 0; m < N; m++)
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) F[i * N + j] = fmin(F[i * N + j], F[i * N + m] + F[m * N + j]);
  double dist[N];
  void *heap = malloc(nle__dijkstra_scratch(G));
  int same = 1;
  for (int s = 0; s < N; s++) {
    nle__dijkstra(G, s, dist, heap);
    for (int v = 0; v < N; v++)
      same &= (isinf(dist[v]) && isinf(F[s * N + v])) || fabs(dist[v] - F[s * N + v]) <= 1e-12 * fmax(1.0, F[s * N + v]);
  }
  nle_test(same);
  free(heap);
  free(F);
  nle_csr_free(&G);
}

/* k = N - 1: every pair is an edge, and where the straight line is the
 * shortest path (points in general position in the plane) the geodesics
 * are the Euclidean distances: Isomap is classical MDS. Against LAPACK's
 * dsyevd on B = -1/2 J D^2 J built here: the two eigenvalues to 1e-6
 * relative (the library keeps S in single precision), the configuration
 * recovered up to a rigid motion (Procrustes in the test), dense and
 * Lanczos. The slides' 5-point path |i - j|: B's eigenvalue 10. */
static void complete_graph_is_mds(void) {
  nle_ctx *ctx = test_ctx(2);
  enum { N = 60 };
  nle_matf *Y = test_random_matf(N, 2, 5);
  double *B = malloc(N * N * sizeof(double)), w[N], D2[N][N];
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++) {
      double dx = (double)Y->data[2 * i] - Y->data[2 * j], dy = (double)Y->data[2 * i + 1] - Y->data[2 * j + 1];
      D2[i][j] = dx * dx + dy * dy;
    }
  double rm[N] = {0}, gm = 0;
  for (size_t i = 0; i < N; i++) {
    for (size_t j = 0; j < N; j++) rm[i] += D2[i][j] / N;
    gm += rm[i] / N;
  }
  for (size_t i = 0; i < N; i++)
    for (size_t j = 0; j < N; j++) B[i * N + j] = -0.5 * (D2[i][j] - rm[i] - rm[j] + gm);
  if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'U', N, B, N, w)) exit(2);
  for (int solver = 0; solver < 2; solver++) {
    nle_spectral_result *r = isomap_of(ctx, Y, N - 1, 2, solver ? NLE_EIGEN_SPARSE : NLE_EIGEN_DENSE);
    nle_test(r != NULL);
    if (!r) continue;
    nle_test_rel(r->eigenvalues[0], w[N - 1], 1e-6);
    nle_test_rel(r->eigenvalues[1], w[N - 2], 1e-6);
    /* Procrustes: the embedding's distances equal the data's */
    double worst = 0;
    for (size_t i = 0; i < N; i++)
      for (size_t j = 0; j < N; j++) {
        double dx = r->X->data[2 * i] - r->X->data[2 * j], dy = r->X->data[2 * i + 1] - r->X->data[2 * j + 1];
        worst = fmax(worst, fabs(sqrt(dx * dx + dy * dy) - sqrt(D2[i][j])));
      }
    nle_test(worst < 1e-5);
    nle_spectral_result_free(&r);
  }
  free(B);
  nle_matf_free(&Y);
  /* the slides' path: 5 points on a line, |i - j| */
  nle_matf *P = NULL;
  nle_test_ok(nle_matf_alloc(ctx, 5, 1, &P));
  for (int i = 0; i < 5; i++) P->data[i] = (float)i;
  nle_spectral_result *r = isomap_of(ctx, P, 4, 1, NLE_EIGEN_DENSE);
  nle_test(r && fabs(r->eigenvalues[0] - 10.0) < 1e-9);
  nle_spectral_result_free(&r);
  nle_matf_free(&P);
  nle_ctx_free(&ctx);
}

/* Disconnected graphs, affinities alone, the memory cap, and the same bits
 * for 1 and 2 threads. */
static void policies_and_threads(void) {
  nle_ctx *ctx = test_ctx(3);
  enum { PER = 80 };
  nle_matf *Y = test_random_matf(2 * PER, 3, 6);
  for (size_t i = PER; i < 2 * PER; i++) Y->data[i * 3] += 100.0f;
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 5;
  o.components = NLE_COMPONENTS_ALLOW;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &in, &o, &r) == NLE_ERR_VALUE && !r &&
           strstr(nle_ctx_error(ctx), "2 connected components") && strstr(nle_ctx_error(ctx), "infinite"));
  nle_matf_free(&Y);
  Y = test_random_matf(3000, 3, 7);
  nle_spectral_input pts = {Y, NULL, NULL};
  nle_ctx_set_max_memory(ctx, 8 << 20); /* the kNN search fits, the 3,000^2 geodesics do not */
  nle_spectral_opts_init(&o);
  nle_status got = nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &pts, &o, &r);
  if (!nle_test(got == NLE_ERR_MEMCAP && strstr(nle_ctx_error(ctx), "geodesic")))
    printf("  status %d: %s\n", (int)got, nle_ctx_error(ctx));
  nle_ctx_free(&ctx);
  nle_spectral_result *t[2] = {NULL, NULL};
  for (int th = 0; th < 2; th++) {
    nle_ctx *c = test_ctx(3);
    nle_ctx_set_threads(c, th + 1);
    nle_test_ok(nle_spectral_embed(c, NLE_SPECTRAL_ISOMAP, &pts, NULL, &t[th]));
    nle_ctx_free(&c);
  }
  nle_test(t[0] && t[1] && !memcmp(t[0]->X->data, t[1]->X->data, 3000 * 2 * sizeof(double)));
  nle_spectral_result_free(&t[0]);
  nle_spectral_result_free(&t[1]);
  nle_matf_free(&Y);
}

/* Landmark Isomap (de Silva and Tenenbaum 2004): with every point a
 * landmark it is full Isomap (the triangulation of a landmark returns its
 * own MDS coordinates); on exactly Euclidean geodesics (points in the
 * plane, the complete graph) 10 landmarks of 300 place every point where
 * full Isomap does up to a rigid motion (their exactness claim: the
 * frame is the landmarks' principal axes), so all distances agree;
 * L <= d is refused. */
static void landmarks(void) {
  nle_ctx *ctx = test_ctx(4);
  enum { N = 300 };
  nle_matf *Y = test_random_matf(N, 2, 9);
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.knn_method = NLE_KNN_EXACT;
  o.solver = NLE_EIGEN_DENSE;
  o.k = N - 1;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *full = NULL, *all = NULL, *some = NULL;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &in, &o, &full));
  o.landmarks = N;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &in, &o, &all));
  o.landmarks = 10;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &in, &o, &some));
  if (full && all && some) {
    double extent = 0, worst_all = 0, worst_some = 0;
    for (size_t i = 0; i < N * 2; i++) extent = fmax(extent, fabs(full->X->data[i]));
    for (size_t i = 0; i < N * 2; i++) worst_all = fmax(worst_all, fabs(all->X->data[i] - full->X->data[i]));
    for (size_t i = 0; i < N; i++) /* a rigid motion apart: compare the distances */
      for (size_t j = 0; j < i; j++) {
        double a = hypot(some->X->data[2 * i] - some->X->data[2 * j], some->X->data[2 * i + 1] - some->X->data[2 * j + 1]);
        double b = hypot(full->X->data[2 * i] - full->X->data[2 * j], full->X->data[2 * i + 1] - full->X->data[2 * j + 1]);
        worst_some = fmax(worst_some, fabs(a - b));
      }
    nle_test(worst_all < 1e-9 * extent);
    if (!nle_test(worst_some < 1e-5 * extent)) printf("  10 landmarks: worst %g of extent %g\n", worst_some, extent);
    nle_test_rel(all->eigenvalues[0], full->eigenvalues[0], 1e-12);
  }
  nle_spectral_result_free(&full);
  nle_spectral_result_free(&all);
  nle_spectral_result_free(&some);
  o.landmarks = 2;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &in, &o, &some) == NLE_ERR_ARG &&
           strstr(nle_ctx_error(ctx), "landmarks=2 for 2 dimensions"));
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}


/* ---- joining a disconnected graph (the join policy) ----------------------
 * The reference, written out here by brute force: each point's k nearest
 * by a full scan (ties by index), the components of that graph by
 * union-find, and the minimum spanning tree of the components by Kruskal
 * over every pair of points in different components, ordered by squared
 * length, then by indices. */
typedef struct {
  int a, b;
  double d2;
} ref_edge;

static int ref_root(int *p, int i) {
  while (p[i] != i) i = p[i];
  return i;
}

static int cmp_ref_edge(const void *x, const void *y) {
  const ref_edge *e = x, *f = y;
  if (e->d2 != f->d2) return e->d2 < f->d2 ? -1 : 1;
  if (e->a != f->a) return e->a < f->a ? -1 : 1;
  return (e->b > f->b) - (e->b < f->b);
}

static double ref_d2(const nle_matf *Y, size_t i, size_t j) {
  double s = 0;
  for (size_t t = 0; t < Y->cols; t++) {
    double e = (double)Y->data[i * Y->cols + t] - (double)Y->data[j * Y->cols + t];
    s += e * e;
  }
  return s;
}

/* nn[i * k ..]: the k nearest of i; tree[c - 1] the joining edges (a < b);
 * returns c, the number of components. */
static int ref_join(const nle_matf *Y, int k, int *nn, ref_edge *tree) {
  int n = (int)Y->rows, *p = malloc((size_t)n * sizeof(int));
  ref_edge *all = malloc((size_t)n * (size_t)n * sizeof(ref_edge));
  for (int i = 0; i < n; i++) p[i] = i;
  for (int i = 0; i < n; i++) {
    int m = 0;
    for (int j = 0; j < n; j++)
      if (j != i) all[m++] = (ref_edge){0, j, ref_d2(Y, (size_t)i, (size_t)j)};
    qsort(all, (size_t)m, sizeof(ref_edge), cmp_ref_edge);
    for (int a = 0; a < k; a++) {
      nn[i * k + a] = all[a].b;
      int r1 = ref_root(p, i), r2 = ref_root(p, all[a].b);
      if (r1 != r2) p[r1] = r2;
    }
  }
  int *comp = malloc((size_t)n * sizeof(int)), c = 0;
  for (int i = 0; i < n; i++) comp[i] = ref_root(p, i);
  for (int i = 0; i < n; i++) c += comp[i] == i;
  size_t m = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (comp[i] != comp[j]) all[m++] = (ref_edge){i, j, ref_d2(Y, (size_t)i, (size_t)j)};
  qsort(all, m, sizeof(ref_edge), cmp_ref_edge);
  int t = 0;
  for (size_t e = 0; e < m && t < c - 1; e++) {
    int r1 = ref_root(p, all[e].a), r2 = ref_root(p, all[e].b);
    if (r1 != r2) p[r1] = r2, tree[t++] = all[e];
  }
  free(p), free(all), free(comp);
  return c;
}

/* Clusters of the given sizes at random centres in a box of side `box`. */
static nle_matf *clusters(const int *sizes, int count, size_t D, double box, uint64_t seed) {
  int n = 0;
  for (int c = 0; c < count; c++) n += sizes[c];
  nle_matf *Y = test_random_matf((size_t)n, D, seed);
  nle_rng rng;
  nle_rng_init(&rng, seed, 5);
  for (int c = 0, i = 0; c < count; c++) {
    double centre[8];
    for (size_t t = 0; t < D; t++) centre[t] = box * nle_rng_uniform(&rng);
    for (int a = 0; a < sizes[c]; a++, i++)
      for (size_t t = 0; t < D; t++) Y->data[(size_t)i * D + t] = (float)(0.7 * Y->data[(size_t)i * D + t] + centre[t]);
  }
  return Y;
}

static int cmp_edge_pairs(const void *x, const void *y) {
  const nle__join_edge *e = x, *f = y;
  int ea = e->a < e->b ? e->a : e->b, fa = f->a < f->b ? f->a : f->b;
  int eb = e->a < e->b ? e->b : e->a, fb = f->a < f->b ? f->b : f->a;
  return ea != fa ? (ea > fa) - (ea < fa) : (eb > fb) - (eb < fb);
}

/* The edges nle__join_components adds are the minimum spanning tree of
 * the components, exactly (the same pairs, the same lengths), on 1 and 2
 * threads; many components of equal size take several Boruvka rounds. */
static void join_spanning_tree(void) {
  const int sizes[] = {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 9, 4, 4};
  enum { K = 3, COUNT = 15 };
  nle_matf *Y = clusters(sizes, COUNT, 3, 60.0, 21);
  int n = (int)Y->rows, *nn = malloc((size_t)n * K * sizeof(int));
  ref_edge *tree = malloc((size_t)n * sizeof(ref_edge));
  int c = ref_join(Y, K, nn, tree);
  if (!nle_test(c >= 10)) printf("  only %d components\n", c);
  /* the kNN graph as a directed CSR of the reference's lists (positive values) */
  nle_csr *A = NULL;
  nle_test_ok(nle_csr_alloc(NULL, n, n, (int64_t)n * K, NLE_F64, &A));
  for (int i = 0; i < n; i++) {
    A->rowptr[i + 1] = (int64_t)(i + 1) * K;
    for (int a = 0; a < K; a++) A->colind[i * K + a] = nn[i * K + a], ((double *)A->val)[i * K + a] = ref_d2(Y, (size_t)i, (size_t)nn[i * K + a]);
  }
  for (int th = 1; th <= 2; th++) {
    nle_ctx *ctx = test_ctx(1);
    nle_ctx_set_threads(ctx, th);
    nle__join_space space = {Y, NULL};
    nle__join_edge *got = NULL;
    int64_t count = 0;
    nle_test_ok(nle__join_components(ctx, &space, A, &got, &count));
    if (!nle_test(count == c - 1)) printf("  %lld edges for %d components\n", (long long)count, c);
    if (got && count == c - 1) {
      nle__join_edge *want = malloc((size_t)count * sizeof *want);
      for (int e = 0; e < c - 1; e++) want[e] = (nle__join_edge){tree[e].a, tree[e].b, tree[e].d2};
      qsort(got, (size_t)count, sizeof *got, cmp_edge_pairs);
      qsort(want, (size_t)count, sizeof *want, cmp_edge_pairs);
      int same = 1;
      for (int64_t e = 0; e < count; e++)
        same &= !cmp_edge_pairs(&got[e], &want[e]) && got[e].d2 == want[e].d2;
      nle_test(same);
      free(want);
      /* the kNN graph with them: each row the old one with its new ends
       * inserted where their lengths sort them */
      nle_csr *J = NULL;
      nle_test_ok(nle__knn_add_edges(ctx, A, got, count, &J));
      int sorted = J && J->nnz == A->nnz + 2 * count, found = 0;
      for (int64_t i = 0; sorted && i < n; i++)
        for (int64_t q = J->rowptr[i] + 1; q < J->rowptr[i + 1]; q++)
          sorted &= nle_csr_value(J, q - 1) <= nle_csr_value(J, q);
      for (int64_t e = 0; J && e < count; e++)
        for (int64_t q = J->rowptr[got[e].a]; q < J->rowptr[got[e].a + 1]; q++)
          found += J->colind[q] == got[e].b && nle_csr_value(J, q) == got[e].d2;
      nle_test(sorted && found == count);
      nle_csr_free(&J);
    }
    free(got);
    nle_ctx_free(&ctx);
  }
  nle_csr_free(&A);
  free(nn), free(tree);
  nle_matf_free(&Y);
}

/* Isomap's default on four clusters in the plane: a warning, the four
 * components joined by 3 edges, and the embedding of the joined graph:
 * against Floyd-Warshall over the reference's kNN edges and spanning tree,
 * then classical MDS by LAPACK. Laplacian eigenmaps' default joins the
 * same way: its eigenvalues against dsygvd on the reference's joined
 * binary W (no second zero eigenvalue: the map is not degenerate). With
 * components = error both refuse, naming the count. */
static void join_against_reference(void) {
  const int sizes[] = {40, 25, 15, 8};
  enum { K = 5, N = 88 };
  nle_matf *Y = clusters(sizes, 4, 2, 80.0, 3);
  int nn[N * K];
  ref_edge tree[N];
  int c = ref_join(Y, K, nn, tree);
  nle_test(c == 4);
  double *G = malloc(N * N * sizeof(double)), *W = calloc(N * N, sizeof(double));
  for (int i = 0; i < N * N; i++) G[i] = i % (N + 1) ? INFINITY : 0.0;
  for (int i = 0; i < N; i++)
    for (int a = 0; a < K; a++) {
      int j = nn[i * K + a];
      G[i * N + j] = G[j * N + i] = sqrt(ref_d2(Y, (size_t)i, (size_t)j));
      W[i * N + j] += 0.5, W[j * N + i] += 0.5; /* binary weights, averaged with the transpose */
    }
  for (int e = 0; e < c - 1; e++) {
    G[tree[e].a * N + tree[e].b] = G[tree[e].b * N + tree[e].a] = sqrt(tree[e].d2);
    W[tree[e].a * N + tree[e].b] = W[tree[e].b * N + tree[e].a] = 1.0;
  }
  for (int m = 0; m < N; m++)
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) G[i * N + j] = fmin(G[i * N + j], G[i * N + m] + G[m * N + j]);
  double rm[N] = {0}, gm = 0, w[N], *B = malloc(N * N * sizeof(double));
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < N; j++) rm[i] += G[i * N + j] * G[i * N + j] / N;
    gm += rm[i] / N;
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) B[i * N + j] = -0.5 * (G[i * N + j] * G[i * N + j] - rm[i] - rm[j] + gm);
  if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', N, B, N, w)) exit(2);
  nle_ctx *ctx = test_ctx(5);
  int warned = nle_ctx_warning_count(ctx);
  nle_spectral_result *r = NULL;
  nle_spectral_opts io;
  nle_spectral_opts_init(&io);
  io.k = K, io.solver = NLE_EIGEN_DENSE, io.knn_method = NLE_KNN_EXACT, io.keep_model = true;
  nle_spectral_input pts = {Y, NULL, NULL};
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_ISOMAP, &pts, &io, &r));
  nle_test(r && r->components == 4 && r->joined_edges == 3 && r->resolved.components == NLE_COMPONENTS_JOIN);
  nle_matd *back = NULL; /* the training points placed again: their own embedding (new points meet each
                            training point within its k-th neighbour, not within its joining edge) */
  if (r) nle_test_ok(nle_spectral_transform(ctx, r->model, Y, &back));
  if (r && back) {
    double worst = 0;
    for (size_t e = 0; e < N * 2; e++) worst = fmax(worst, fabs(back->data[e] - r->X->data[e]));
    if (!nle_test(worst < 1e-6 * sqrt(r->eigenvalues[0]))) printf("  transform of the training points: %g off\n", worst);
  }
  nle_matd_free(&back);
  nle_test(nle_ctx_warning_count(ctx) == warned + 1 &&
           strstr(nle_ctx_warning(ctx, nle_ctx_warning_count(ctx) - 1, NULL), "joined by the 3 shortest edges"));
  if (r) {
    nle_test_rel(r->eigenvalues[0], w[N - 1], 1e-5);
    nle_test_rel(r->eigenvalues[1], w[N - 2], 1e-5);
    double worst = 0, extent = sqrt(w[N - 1]);
    for (int i = 0; i < N; i++) /* up to signs: compare the distances */
      for (int j = 0; j < i; j++) {
        double a = hypot(r->X->data[2 * i] - r->X->data[2 * j], r->X->data[2 * i + 1] - r->X->data[2 * j + 1]), b2 = 0;
        for (int t = 1; t <= 2; t++) {
          double e = (B[i * N + N - t] - B[j * N + N - t]) * sqrt(w[N - t]);
          b2 += e * e;
        }
        worst = fmax(worst, fabs(a - sqrt(b2)));
      }
    if (!nle_test(worst < 1e-4 * extent)) printf("  worst distance error %g of %g\n", worst, extent);
  }
  nle_spectral_result_free(&r);
  /* LE: L v = lambda D v on the joined W, by dsygvd */
  double *L = malloc(N * N * sizeof(double)), *Dg = calloc(N * N, sizeof(double));
  for (int i = 0; i < N; i++) {
    double deg = 0;
    for (int j = 0; j < N; j++) deg += W[i * N + j];
    Dg[i * N + i] = deg;
    for (int j = 0; j < N; j++) L[i * N + j] = (i == j) * deg - W[i * N + j];
  }
  if (LAPACKE_dsygvd(LAPACK_ROW_MAJOR, 1, 'N', 'U', N, L, N, Dg, N, w)) exit(2);
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = K, o.dim = 3, o.solver = NLE_EIGEN_DENSE, o.knn_method = NLE_KNN_EXACT;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r));
  if (r) {
    nle_test(r->components == 4 && r->joined_edges == 3);
    for (int t = 1; t < 4; t++) nle_test_rel(r->eigenvalues[t], w[t], 1e-8);
    nle_test(w[1] > 1e-6); /* the join leaves one zero eigenvalue */
  }
  nle_spectral_result_free(&r);
  o.components = NLE_COMPONENTS_ERROR;
  for (int m = 0; m < 2; m++)
    nle_test(nle_spectral_embed(ctx, m ? NLE_SPECTRAL_ISOMAP : NLE_SPECTRAL_LE, &in, &o, &r) == NLE_ERR_VALUE && !r &&
             strstr(nle_ctx_error(ctx), "4 connected components") && strstr(nle_ctx_error(ctx), "components=error"));
  free(G), free(W), free(B), free(L), free(Dg);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The spectral graph's symmetrisation rules (graph.c) against a dense
 * brute force on an asymmetric directed graph: entropic affinities
 * p_{m|n} (nle_entropic_affinities, tested on its own) differ from
 * p_{n|m} wherever both exist, and the kNN pattern itself is asymmetric.
 * average: (A + A^T) / 2; union: max where both, else the one present;
 * mutual: min where both, else no edge. Every entry and every absence. */
static void symmetrize_rules(void) {
  nle_ctx *ctx = test_ctx(6);
  enum { N = 70, K = 7 };
  nle_matf *Y = test_random_matf(N, 3, 12);
  for (size_t i = 0; i < N / 3; i++) Y->data[i * 3] *= 4.0f; /* uneven density: more asymmetry */
  nle_csr *knn = NULL;
  nle_test_ok(nle_knn_graph(ctx, Y, K, NLE_KNN_EXACT, NULL, &knn, NULL));
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  eo.perplexity = 3.0;
  nle_ea_result *ea = NULL;
  nle_status es = nle_entropic_affinities(ctx, knn, &eo, &ea);
  nle_test(es == NLE_OK || es == NLE_WARN_NOT_CONVERGED);
  double *A = malloc(N * N * sizeof(double));
  for (int i = 0; i < N * N; i++) A[i] = NAN;
  for (int64_t i = 0; ea && i < N; i++)
    for (int64_t q = ea->P->rowptr[i]; q < ea->P->rowptr[i + 1]; q++) A[i * N + ea->P->colind[q]] = nle_csr_value(ea->P, q);
  int asym = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) asym += !isnan(A[i * N + j]) && !isnan(A[j * N + i]) && A[i * N + j] != A[j * N + i];
  nle_test(asym > 20); /* the case exercises max and min */
  for (int rule = 0; rule < 3; rule++) {
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.k = K, o.affinity = NLE_AFF_ENTROPIC, o.perplexity = 3.0, o.symmetrize = (nle_symmetrize_rule)rule;
    nle_csr *W = NULL;
    nle_test_ok(nle__spectral_weights(ctx, knn, &o, &W, NULL));
    if (!W) continue;
    double *got = malloc(N * N * sizeof(double));
    for (int i = 0; i < N * N; i++) got[i] = NAN;
    for (int64_t i = 0; i < N; i++)
      for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) got[i * N + W->colind[q]] = nle_csr_value(W, q);
    int bad = 0;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double a = A[i * N + j], at = A[j * N + i], want;
        if (i == j) want = NAN;
        else if (rule == NLE_SYMMETRIZE_AVERAGE) want = isnan(a) && isnan(at) ? NAN : 0.5 * ((isnan(a) ? 0 : a) + (isnan(at) ? 0 : at));
        else if (rule == NLE_SYMMETRIZE_UNION) want = isnan(a) ? at : isnan(at) ? a : (a > at ? a : at);
        else want = isnan(a) || isnan(at) ? NAN : (a < at ? a : at);
        double g = got[i * N + j];
        bad += isnan(want) != isnan(g) || (!isnan(want) && fabs(g - want) > 1e-15 * fmax(1.0, fabs(want)));
      }
    if (!nle_test(bad == 0)) printf("  rule %s: %d entries differ\n", nle_symmetrize_name((nle_symmetrize_rule)rule), bad);
    free(got);
    nle_csr_free(&W);
  }
  free(A);
  nle_ea_result_free(&ea);
  nle_csr_free(&knn);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

const nle_test_case isomap_tests[] = {
    {"isomap/landmarks", landmarks},
    {"isomap/curve_chord_length", curve_chord_length},
    {"isomap/dijkstra_vs_floyd", dijkstra_vs_floyd},
    {"isomap/complete_graph_is_mds", complete_graph_is_mds},
    {"isomap/policies_and_threads", policies_and_threads},
    {"isomap/join_spanning_tree", join_spanning_tree},
    {"isomap/join_against_reference", join_against_reference},
    {"graph/symmetrize_rules", symmetrize_rules},
    {NULL, NULL}};
