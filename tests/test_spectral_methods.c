/* test_spectral_methods.c — the spectral front door and its methods
 * against independent references (SPEC 4.1, 4.2, 4.6): the slides'
 * Laplacian example, the analytic spectra of cycles and paths, a dense
 * generalised LAPACK solve (dsygvd) written out here, Brand's identities,
 * the policy for disconnected graphs, and thread invariance. */
#include "harness.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

/* A symmetric binary W from an undirected edge list (0-based). */
static nle_csr *graph_from_edges(size_t n, const int *edges, size_t m) {
  nle_csr *W = NULL;
  if (nle_csr_alloc(NULL, (int64_t)n, (int64_t)n, (int64_t)(2 * m), NLE_F64, &W)) exit(2);
  size_t *count = calloc(n + 1, sizeof(size_t));
  for (size_t e = 0; e < m; e++) count[edges[2 * e]]++, count[edges[2 * e + 1]]++;
  for (size_t i = 0; i < n; i++) W->rowptr[i + 1] = W->rowptr[i] + (int64_t)count[i];
  memset(count, 0, (n + 1) * sizeof(size_t));
  for (size_t e = 0; e < m; e++)
    for (int side = 0; side < 2; side++) {
      size_t i = (size_t)edges[2 * e + side], j = (size_t)edges[2 * e + 1 - side];
      int64_t q = W->rowptr[i] + (int64_t)count[i]++;
      W->colind[q] = (int32_t)j;
      ((double *)W->val)[q] = 1.0;
    }
  free(count);
  return W;
}

static nle_spectral_result *embed_w(nle_ctx *ctx, const nle_csr *W, nle_laplacian_kind kind, int dim,
                                    nle_eigen_solver solver) {
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.laplacian = kind;
  o.dim = dim;
  o.solver = solver;
  nle_spectral_input in = {NULL, NULL, W};
  nle_spectral_result *r = NULL;
  nle_status s = nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r);
  if (s) printf("  %s\n", nle_ctx_error(ctx));
  return r;
}

/* Slides 002, "The Laplacian": edges 1-2, 1-3, 2-3, 2-4; L's eigenvalues
 * are {0, 1, 3, 4} and the Fiedler vector is (-1, 0, -1, 2) / sqrt 6. */
static void slides_laplacian(void) {
  nle_ctx *ctx = test_ctx(1);
  const int edges[] = {0, 1, 0, 2, 1, 2, 1, 3};
  nle_csr *W = graph_from_edges(4, edges, 4);
  nle_spectral_result *r = embed_w(ctx, W, NLE_LAPLACIAN_UNNORMALISED, 2, NLE_EIGEN_DENSE);
  nle_test(r && r->n_eigenvalues == 3);
  if (r) {
    nle_test_rel(r->eigenvalues[0], 0.0, 1e-12);
    nle_test_rel(r->eigenvalues[1], 1.0, 1e-12);
    nle_test_rel(r->eigenvalues[2], 3.0, 1e-12);
    const double fiedler[4] = {-1 / sqrt(6.0), 0.0, -1 / sqrt(6.0), 2 / sqrt(6.0)};
    for (int i = 0; i < 4; i++) nle_test_rel(r->X->data[i * 2], fiedler[i], 1e-12);
    nle_test(r->components == 1 && r->solver_used == NLE_EIGEN_DENSE);
  }
  nle_spectral_result_free(&r);
  nle_csr_free(&W);
  nle_ctx_free(&ctx);
}

/* Cycle C_n: L's eigenvalues 2 - 2 cos(2 pi k / n), each twice, and the
 * 2-D embedding a regular n-gon (every point at the same radius); path P_n:
 * 2 - 2 cos(pi k / n) and a monotone Fiedler vector. On these regular
 * graphs (D = 2 I inside the cycle) random-walk eigenvalues are half. */
static void cycle_and_path(void) {
  nle_ctx *ctx = test_ctx(1);
  enum { N = 40 };
  int edges[2 * N];
  for (int i = 0; i < N; i++) edges[2 * i] = i, edges[2 * i + 1] = (i + 1) % N;
  nle_csr *C = graph_from_edges(N, edges, N), *P = graph_from_edges(N, edges, N - 1);
  for (int solver = 0; solver < NLE_EIGEN_COUNT; solver++) { /* dense, Lanczos, shift-invert, block */
    nle_spectral_result *r = embed_w(ctx, C, NLE_LAPLACIAN_UNNORMALISED, 2, (nle_eigen_solver)solver);
    nle_spectral_result *rw = embed_w(ctx, C, NLE_LAPLACIAN_RANDOM_WALK, 2, (nle_eigen_solver)solver);
    nle_test(r && rw);
    if (!r || !rw) continue;
    double want = 2 - 2 * cos(2 * M_PI / N);
    nle_test(fabs(r->eigenvalues[0]) < 1e-10);
    nle_test_rel(r->eigenvalues[1], want, 1e-10);
    nle_test_rel(r->eigenvalues[2], want, 1e-10);
    nle_test_rel(rw->eigenvalues[1], want / 2, 1e-10);
    double r0 = hypot(r->X->data[0], r->X->data[1]);
    for (int i = 1; i < N; i++) nle_test_rel(hypot(r->X->data[2 * i], r->X->data[2 * i + 1]), r0, 1e-8);
    nle_spectral_result_free(&r);
    nle_spectral_result_free(&rw);
    r = embed_w(ctx, P, NLE_LAPLACIAN_UNNORMALISED, 2, (nle_eigen_solver)solver);
    nle_test(r != NULL);
    if (!r) continue;
    nle_test_rel(r->eigenvalues[1], 2 - 2 * cos(M_PI / N), 1e-10);
    nle_test_rel(r->eigenvalues[2], 2 - 2 * cos(2 * M_PI / N), 1e-10);
    int monotone = 1;
    for (int i = 1; i < N; i++) monotone &= r->X->data[2 * i] < r->X->data[2 * (i - 1)];
    int increasing = 1;
    for (int i = 1; i < N; i++) increasing &= r->X->data[2 * i] > r->X->data[2 * (i - 1)];
    nle_test(monotone || increasing);
    nle_spectral_result_free(&r);
  }
  nle_csr_free(&C);
  nle_csr_free(&P);
  nle_ctx_free(&ctx);
}

/* Dense reference: L v = lambda D v by LAPACK's dsygvd on the dense
 * matrices built here from the result's own W (kNN, average rule). */
static void reference_pencil(const nle_csr *W, size_t n, size_t nev, double *vals, double *V) {
  double *L = calloc(n * n, sizeof(double)), *D = calloc(n * n, sizeof(double)), *w = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
      size_t j = (size_t)W->colind[q];
      double v = nle_csr_value(W, q);
      L[i * n + j] -= v;
      L[i * n + i] += v;
      D[i * n + i] += v;
    }
  if (LAPACKE_dsygvd(LAPACK_ROW_MAJOR, 1, 'V', 'U', (lapack_int)n, L, (lapack_int)n, D, (lapack_int)n, w)) exit(2);
  for (size_t t = 0; t < nev; t++) vals[t] = w[t];
  for (size_t i = 0; V && i < n; i++)
    for (size_t t = 0; t < nev; t++) V[i * nev + t] = L[i * n + t];
  free(L);
  free(D);
  free(w);
}

/* The kNN graph's W as the front door builds it: average rule, binary. */
static nle_csr *knn_weights(nle_ctx *ctx, const nle_matf *Y, int k) {
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = k;
  nle_csr *knn = NULL, *W = NULL;
  if (nle_knn_exact(ctx, Y, &ko, &knn)) exit(2);
  nle_csr *A = NULL;
  if (nle_csr_alloc(ctx, knn->rows, knn->cols, knn->nnz, NLE_F64, &A)) exit(2);
  memcpy(A->rowptr, knn->rowptr, ((size_t)knn->rows + 1) * sizeof(int64_t));
  memcpy(A->colind, knn->colind, (size_t)knn->nnz * sizeof(int32_t));
  for (int64_t q = 0; q < knn->nnz; q++) ((double *)A->val)[q] = 1.0;
  if (nle_affinity_symmetrize(ctx, A, false, &W)) exit(2); /* (A + A^T) / 2 */
  nle_csr_free(&A);
  nle_csr_free(&knn);
  return W;
}

/* Largest |cos| between column t of X and the same column of R, both
 * normalised: 1 when they span the same line. */
static double column_cosine(const double *X, const double *R, size_t n, size_t cols, size_t tx, size_t tr,
                            size_t rcols) {
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < n; i++) {
    xy += X[i * cols + tx] * R[i * rcols + tr];
    xx += X[i * cols + tx] * X[i * cols + tx];
    yy += R[i * rcols + tr] * R[i * rcols + tr];
  }
  return fabs(xy) / sqrt(xx * yy);
}

/* Points in 5-D, k = 10: the front door's LE (random walk) from the points,
 * by each solver, against dsygvd on the pencil (L, D): eigenvalues to
 * 1e-8, each eigenvector's direction to 1e-6, V^T D V = I, and Brand's eq.
 * 3: lambda_t = sum_ij (v_it - v_jt)^2 W_ij / 2. */
static void le_against_dense_pencil(void) {
  nle_ctx *ctx = test_ctx(2);
  enum { N = 600, K = 10, DIM = 3 };
  nle_matf *Y = test_random_matf(N, 5, 21);
  nle_csr *W = knn_weights(ctx, Y, K);
  double ref[DIM + 1], *V = malloc(N * (DIM + 1) * sizeof(double));
  reference_pencil(W, N, DIM + 1, ref, V);
  double *deg = calloc(N, sizeof(double));
  for (size_t i = 0; i < N; i++)
    for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) deg[i] += nle_csr_value(W, q);
  for (int solver = 0; solver < NLE_EIGEN_COUNT; solver++) { /* dense, Lanczos, shift-invert, block */
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.k = K;
    o.dim = DIM;
    o.knn_method = NLE_KNN_EXACT;
    o.solver = (nle_eigen_solver)solver;
    nle_spectral_input in = {Y, NULL, NULL};
    nle_spectral_result *r = NULL;
    nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r));
    if (!r) continue;
    for (int t = 0; t <= DIM; t++) nle_test(fabs(r->eigenvalues[t] - ref[t]) <= 1e-8 * fmax(ref[t], 1e-3));
    for (int t = 0; t < DIM; t++) nle_test(column_cosine(r->X->data, V, N, DIM, t, t + 1, DIM + 1) > 1 - 1e-6);
    for (int a = 0; a < DIM; a++)
      for (int b = 0; b < DIM; b++) {
        double g = 0;
        for (size_t i = 0; i < N; i++) g += r->X->data[i * DIM + a] * deg[i] * r->X->data[i * DIM + b];
        nle_test(fabs(g - (a == b)) < 1e-9);
      }
    for (int t = 0; t < DIM; t++) {
      double sum = 0;
      for (size_t i = 0; i < N; i++)
        for (int64_t q = W->rowptr[i]; q < W->rowptr[i + 1]; q++) {
          double diff = r->X->data[i * DIM + t] - r->X->data[(size_t)W->colind[q] * DIM + t];
          sum += diff * diff * nle_csr_value(W, q) / 2;
        }
      nle_test_rel(sum, r->eigenvalues[t + 1], 1e-8);
    }
    nle_spectral_result_free(&r);
  }
  free(deg);
  free(V);
  nle_csr_free(&W);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The three normalisations on the same graph: symmetric = random walk's
 * eigenvalues with u = D^1/2 v; U^T U = I; unnormalised against dsyevr-free
 * Rayleigh quotients f^T L f = lambda. */
static void normalisations_agree(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_matf *Y = test_random_matf(400, 4, 5);
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r[3] = {NULL, NULL, NULL};
  for (int kind = 0; kind < 3; kind++) {
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.laplacian = (nle_laplacian_kind)kind;
    o.solver = NLE_EIGEN_SPARSE;
    nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r[kind]));
  }
  if (r[0] && r[1] && r[2]) {
    for (int t = 0; t < 3; t++) nle_test_rel(r[1]->eigenvalues[t], r[0]->eigenvalues[t], 1e-9);
    for (int a = 0; a < 2; a++) {
      double uu = 0, ff = 0;
      for (size_t i = 0; i < 400; i++) {
        uu += r[1]->X->data[i * 2 + a] * r[1]->X->data[i * 2 + a];
        ff += r[2]->X->data[i * 2 + a] * r[2]->X->data[i * 2 + a];
      }
      nle_test_rel(uu, 1.0, 1e-9);
      nle_test_rel(ff, 1.0, 1e-9);
    }
    nle_test(r[2]->eigenvalues[1] > 0 && r[2]->eigenvalues[1] != r[0]->eigenvalues[1]);
  }
  for (int kind = 0; kind < 3; kind++) nle_spectral_result_free(&r[kind]);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Three far-apart blobs at k = 5: three components. components = error
 * refuses, naming the count and the options (the default joins them:
 * isomap/join_against_reference); allowed, the dense solve has three zero
 * eigenvalues (SPEC 4.1.3) and each eigenvector is constant on every blob. */
static void disconnected_graph(void) {
  nle_ctx *ctx = test_ctx(4);
  enum { PER = 60, N = 3 * PER };
  nle_matf *Y = test_random_matf(N, 3, 9);
  for (size_t i = 0; i < N; i++) Y->data[i * 3] += 100.0f * (float)(i / PER);
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 5;
  o.components = NLE_COMPONENTS_ERROR;
  nle_spectral_result *r = NULL;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r) == NLE_ERR_VALUE && !r &&
           strstr(nle_ctx_error(ctx), "3 connected components") && strstr(nle_ctx_error(ctx), "allow"));
  o.components = NLE_COMPONENTS_ALLOW;
  o.solver = NLE_EIGEN_DENSE;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r));
  if (r) {
    nle_test(r->components == 3);
    for (int t = 0; t < 3; t++) nle_test(fabs(r->eigenvalues[t]) < 1e-10);
    nle_test(r->eigenvalues[2] < 1e-10);
    for (int t = 0; t < 2; t++)
      for (size_t i = 0; i < N; i++)
        nle_test(fabs(r->X->data[i * 2 + t] - r->X->data[(i / PER) * PER * 2 + t]) < 1e-8);
  }
  nle_spectral_result_free(&r);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The same bits for 1 and 2 threads (the sparse path's products are cut
 * into fixed row blocks). */
static void same_for_threads(void) {
  nle_matf *Y = test_random_matf(5000, 6, 8);
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r[2] = {NULL, NULL};
  for (int t = 0; t < 2; t++) {
    nle_ctx *ctx = test_ctx(6);
    nle_ctx_set_threads(ctx, t + 1);
    nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, NULL, &r[t]));
    nle_ctx_free(&ctx);
  }
  nle_test(r[0] && r[1] && r[0]->solver_used == NLE_EIGEN_SPARSE &&
           !memcmp(r[0]->X->data, r[1]->X->data, 5000 * 2 * sizeof(double)));
  nle_spectral_result_free(&r[0]);
  nle_spectral_result_free(&r[1]);
  nle_matf_free(&Y);
}

/* The LLE family at 1 and 2 threads, bit for bit: the alignment matrix's
 * rows in parallel blocks (LLE's rank-one blocks and LTSA's full ones) and
 * the shift-invert solve, on a 3,000-point roll. */
static void alignment_same_for_threads(void) {
  enum { N = 3000 };
  nle_matf *Y = test_random_matf(N, 3, 12);
  for (size_t i = 0; i < N; i++) {
    double t = 3 + 6 * (Y->data[i * 3] + 0.5);
    Y->data[i * 3] = (float)(t * cos(t) / 4), Y->data[i * 3 + 1] = (float)(t * sin(t) / 4);
  }
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_method methods[] = {NLE_SPECTRAL_LLE, NLE_SPECTRAL_LTSA};
  for (int mi = 0; mi < 2; mi++) {
    nle_spectral_result *r[2] = {NULL, NULL};
    for (int t = 0; t < 2; t++) {
      nle_ctx *ctx = test_ctx(6);
      nle_ctx_set_threads(ctx, t + 1);
      nle_spectral_opts o;
      nle_spectral_opts_init(&o);
      o.k = 10;
      nle_test_ok(nle_spectral_embed(ctx, methods[mi], &in, &o, &r[t]));
      nle_ctx_free(&ctx);
    }
    if (!nle_test(r[0] && r[1] && r[0]->solver_used == NLE_EIGEN_SHIFT_INVERT &&
                  !memcmp(r[0]->X->data, r[1]->X->data, N * 2 * sizeof(double))))
      printf("  method %d differs between 1 and 2 threads\n", mi);
    nle_spectral_result_free(&r[0]);
    nle_spectral_result_free(&r[1]);
  }
  nle_matf_free(&Y);
}

/* The neighbour search among principal components: with every point a
 * candidate, the re-ranking by distances in Y is the exact search, so the
 * embedding is the exact one's bit for bit; on wide data (N > 5,000,
 * D > 100) the automatic recipe is 50 components and 7 k candidates. */
static void pca_candidates(void) {
  nle_ctx *ctx = test_ctx(9);
  nle_matf *Y = test_random_matf(600, 20, 17);
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.knn_method = NLE_KNN_EXACT;
  o.pca_dims = 0;
  nle_spectral_result *a = NULL, *b = NULL;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &a));
  o.pca_dims = 5;
  o.pca_candidates = 599;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &b));
  nle_test(a && b && b->resolved.pca_dims == 5 && !memcmp(a->X->data, b->X->data, 600 * 2 * sizeof(double)));
  nle_spectral_result_free(&a);
  nle_spectral_result_free(&b);
  nle_matf_free(&Y);
  Y = test_random_matf(5100, 101, 18);
  nle_spectral_input wide = {Y, NULL, NULL};
  nle_spectral_opts_init(&o);
  o.solver = NLE_EIGEN_SPARSE;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &wide, &o, &a));
  nle_test(a && a->resolved.pca_dims == 50 && a->resolved.pca_candidates == 70 && a->pca_seconds > 0);
  nle_spectral_result_free(&a);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Epsilon balls (the slides' "within a fixed radius"): on points equally
 * spaced around a circle, a radius between the nearest two neighbours'
 * distance and the next gives the graph of k = 2, so the same embedding
 * bit for bit; a radius below every distance is refused naming the point
 * and its nearest distance. */
static void radius_graph(void) {
  nle_ctx *ctx = test_ctx(11);
  enum { N = 60 };
  nle_matf *Y = NULL;
  nle_test_ok(nle_matf_alloc(ctx, N, 2, &Y));
  for (size_t i = 0; i < N; i++)
    Y->data[2 * i] = (float)(10 * cos(2 * M_PI * i / N)), Y->data[2 * i + 1] = (float)(10 * sin(2 * M_PI * i / N));
  double chord = 20 * sin(M_PI / N); /* neighbours at chord, the next at about 2 chord */
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 2;
  o.knn_method = NLE_KNN_EXACT;
  o.solver = NLE_EIGEN_DENSE;
  nle_spectral_result *a = NULL, *b = NULL;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &a));
  o.radius = 1.5 * chord;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &b));
  nle_test(a && b && !memcmp(a->X->data, b->X->data, N * 2 * sizeof(double)) &&
           !memcmp(a->eigenvalues, b->eigenvalues, 3 * sizeof(double)));
  nle_spectral_result_free(&a);
  nle_spectral_result_free(&b);
  o.radius = 0.5 * chord;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &a) == NLE_ERR_VALUE && !a &&
           strstr(nle_ctx_error(ctx), "point (row) 0 has no neighbour within radius="));
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Bad input: an asymmetric or negative W, k or dim too large, bad options. */
static void bad_input(void) {
  nle_ctx *ctx = test_ctx(1);
  const int edges[] = {0, 1, 1, 2, 2, 3, 3, 4};
  nle_csr *W = graph_from_edges(5, edges, 4);
  nle_spectral_result *r = NULL;
  nle_spectral_input in = {NULL, NULL, W};
  ((double *)W->val)[0] = 2.0; /* W[1,2] = 2, W[2,1] = 1 */
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, NULL, &r) == NLE_ERR_VALUE &&
           strstr(nle_ctx_error(ctx), "not symmetric"));
  ((double *)W->val)[0] = -1.0;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, NULL, &r) == NLE_ERR_VALUE);
  ((double *)W->val)[0] = 1.0;
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.dim = 4;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "4 dimensions"));
  nle_spectral_opts_init(&o);
  o.laplacian = (nle_laplacian_kind)7;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "laplacian"));
  nle_matf *Y = test_random_matf(20, 3, 1);
  nle_spectral_input pts = {Y, NULL, NULL};
  nle_spectral_opts_init(&o);
  o.k = 20;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &pts, &o, &r) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "neighbors=20"));
  nle_spectral_input both = {Y, NULL, W}; /* a graph may come with its points, of the same N */
  if (!nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &both, NULL, &r) == NLE_ERR_ARG && !r &&
           strstr(nle_ctx_error(ctx), "20 points but the affinity matrix has 5 rows"))) printf("  %s\n", nle_ctx_error(ctx));
  nle_spectral_input two = {NULL, W, W};
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &two, NULL, &r) == NLE_ERR_ARG && !r &&
           strstr(nle_ctx_error(ctx), "2 graphs given"));
  nle_matf_free(&Y);
  nle_csr_free(&W);
  nle_ctx_free(&ctx);
}

/* ---- LLE ------------------------------------------------------------- */

static nle_spectral_result *lle_of(nle_ctx *ctx, const nle_matf *Y, int k, double reg, nle_eigen_solver solver) {
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = k;
  o.reg = reg;
  o.solver = solver;
  o.knn_method = NLE_KNN_EXACT;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  if (nle_spectral_embed(ctx, NLE_SPECTRAL_LLE, &in, &o, &r)) printf("  %s\n", nle_ctx_error(ctx));
  return r;
}

/* A dense LLE written out here: the weights from the Lagrange (KKT) system
 * [G 1; 1^T 0] [w; mu] = [0; 1] by LAPACK dgesv (the library solves
 * G w = 1 by its own Cholesky and normalises), M = (I - W)^T (I - W) by
 * explicit products, its bottom eigenpairs by dsyevd, scaled by sqrt N. */
static void reference_lle(const nle_matf *Y, const nle_csr *knn, double reg, size_t d, double *vals, double *X) {
  size_t n = Y->rows, D = Y->cols;
  double *W = calloc(n * n, sizeof(double)), *M = calloc(n * n, sizeof(double)), *ev = malloc(n * sizeof(double));
  for (size_t i = 0; i < n; i++) {
    int k = (int)(knn->rowptr[i + 1] - knn->rowptr[i]);
    double *A = calloc((size_t)(k + 1) * (size_t)(k + 1), sizeof(double)), *b = calloc((size_t)k + 1, sizeof(double));
    lapack_int *piv = malloc(((size_t)k + 1) * sizeof(lapack_int));
    double trace = 0;
    for (int a = 0; a < k; a++)
      for (int c = 0; c < k; c++) {
        double g = 0;
        for (size_t t = 0; t < D; t++)
          g += ((double)Y->data[(size_t)knn->colind[knn->rowptr[i] + a] * D + t] - Y->data[i * D + t]) *
               ((double)Y->data[(size_t)knn->colind[knn->rowptr[i] + c] * D + t] - Y->data[i * D + t]);
        A[a * (k + 1) + c] = g;
      }
    for (int a = 0; a < k; a++) trace += A[a * (k + 1) + a];
    for (int a = 0; a < k; a++) {
      A[a * (k + 1) + a] += reg * trace;
      A[a * (k + 1) + k] = A[k * (k + 1) + a] = 1.0;
    }
    b[k] = 1.0;
    if (LAPACKE_dgesv(LAPACK_ROW_MAJOR, k + 1, 1, A, k + 1, piv, b, 1)) exit(2);
    for (int a = 0; a < k; a++) W[i * n + (size_t)knn->colind[knn->rowptr[i] + a]] = b[a];
    free(A);
    free(b);
    free(piv);
  }
  for (size_t a = 0; a < n; a++) /* M = (I - W)^T (I - W) */
    for (size_t c = 0; c < n; c++) {
      double v = 0;
      for (size_t i = 0; i < n; i++) v += ((i == a) - W[i * n + a]) * ((i == c) - W[i * n + c]);
      M[a * n + c] = v;
    }
  if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)n, M, (lapack_int)n, ev)) exit(2);
  for (size_t t = 0; t <= d; t++) vals[t] = ev[t];
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) X[i * d + t] = sqrt((double)n) * M[i * n + t + 1];
  free(W);
  free(M);
  free(ev);
}

/* A neighbourhood of every point (N = 9, k = 8): each row of M touches all
 * N columns, the alignment's row buffers full; the eigenvalues against the
 * dense reference LLE (1e-8 relative + 1e-14). */
static void lle_full_rows(void) {
  nle_ctx *ctx = test_ctx(3);
  enum { N = 9, K = 8, DIM = 2 };
  nle_matf *Y = test_random_matf(N, 3, 41);
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = K;
  nle_csr *knn = NULL;
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &knn));
  double ref[DIM + 1], X[N * DIM];
  reference_lle(Y, knn, 1e-3, DIM, ref, X);
  nle_spectral_result *r = lle_of(ctx, Y, K, 1e-3, NLE_EIGEN_DENSE);
  for (int t = 0; r && t <= DIM; t++)
    if (!nle_test(fabs(r->eigenvalues[t] - ref[t]) <= 1e-8 * fabs(ref[t]) + 1e-14))
      printf("  %.12g vs %.12g\n", r->eigenvalues[t], ref[t]);
  nle_test(r != NULL);
  nle_spectral_result_free(&r);
  nle_csr_free(&knn);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Swiss-roll-like points in 3-D: LLE by the library (dense and sparse)
 * against the reference above: eigenvalues to 1e-8 relative plus 1e-14
 * absolute (M's norm is O(1) and its bottom eigenvalues ~1e-8: double
 * precision's floor, eps ||M||, is the absolute term), directions to 1e-6;
 * the slides' constraints sum_i x_i = 0 and (1/N) X^T X = I to 1e-9. */
static void lle_against_reference(void) {
  nle_ctx *ctx = test_ctx(2);
  enum { N = 300, K = 8, DIM = 2 };
  nle_matf *Y = test_random_matf(N, 3, 33);
  for (size_t i = 0; i < N; i++) { /* roll the first two coordinates */
    double t = 3 + 6 * (Y->data[i * 3] + 0.5);
    Y->data[i * 3] = (float)(t * cos(t) / 4), Y->data[i * 3 + 1] = (float)(t * sin(t) / 4);
  }
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = K;
  nle_csr *knn = NULL;
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &knn));
  double ref[DIM + 1], *X = malloc(N * DIM * sizeof(double));
  reference_lle(Y, knn, 1e-3, DIM, ref, X);
  for (int solver = 0; solver < 2; solver++) {
    nle_spectral_result *r = lle_of(ctx, Y, K, 1e-3, (nle_eigen_solver)solver);
    nle_test(r != NULL);
    if (!r) continue;
    for (int t = 0; t <= DIM; t++)
      if (!nle_test(fabs(r->eigenvalues[t] - ref[t]) <= 1e-8 * fabs(ref[t]) + 1e-14)) printf("  solver %d: %.12g vs %.12g\n", solver, r->eigenvalues[t], ref[t]);
    for (int t = 0; t < DIM; t++) nle_test(column_cosine(r->X->data, X, N, DIM, t, t, DIM) > 1 - 1e-6);
    for (int a = 0; a < DIM; a++) {
      double sum = 0;
      for (size_t i = 0; i < N; i++) sum += r->X->data[i * DIM + a];
      if (!nle_test(fabs(sum) < 1e-9 * N)) printf("  solver %d: column %d sums to %g\n", solver, a, sum);
      for (int b = 0; b < DIM; b++) {
        double g = 0;
        for (size_t i = 0; i < N; i++) g += r->X->data[i * DIM + a] * r->X->data[i * DIM + b];
        nle_test(fabs(g / N - (a == b)) < 1e-9);
      }
    }
    nle_spectral_result_free(&r);
  }
  free(X);
  nle_csr_free(&knn);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* The weights do not change under rotation, translation and uniform
 * scaling of the data (the slides), so neither does the embedding. */
static void lle_invariances(void) {
  nle_ctx *ctx = test_ctx(3);
  enum { N = 500 };
  nle_matf *Y = test_random_matf(N, 3, 34), *Z = test_random_matf(N, 3, 34);
  double c = cos(0.7), s = sin(0.7);
  for (size_t i = 0; i < N; i++) {
    double x = Y->data[i * 3], y = Y->data[i * 3 + 1];
    Z->data[i * 3] = (float)(2.0 * (c * x - s * y) + 5.0);
    Z->data[i * 3 + 1] = (float)(2.0 * (s * x + c * y) - 3.0);
    Z->data[i * 3 + 2] = (float)(2.0 * Y->data[i * 3 + 2] + 1.0);
  }
  nle_spectral_result *a = lle_of(ctx, Y, 10, 1e-3, NLE_EIGEN_SPARSE), *b = lle_of(ctx, Z, 10, 1e-3, NLE_EIGEN_SPARSE);
  nle_test(a && b);
  if (a && b)
    for (int t = 0; t < 2; t++) nle_test(column_cosine(a->X->data, b->X->data, N, 2, t, t, 2) > 1 - 1e-5);
  nle_spectral_result_free(&a);
  nle_spectral_result_free(&b);
  nle_matf_free(&Y);
  nle_matf_free(&Z);
  nle_ctx_free(&ctx);
}

/* Points on a 2-D plane in R^5 (an affine image of the plane's
 * coordinates P): the LLE family recovers an affine image of P. */
static nle_matf *plane_in_r5(nle_ctx *ctx, const nle_matf *P) {
  nle_matf *Y = NULL;
  nle_test_ok(nle_matf_alloc(ctx, P->rows, 5, &Y));
  const double basis[2][5] = {{0.3, -0.5, 0.2, 0.7, 0.1}, {0.6, 0.1, -0.4, 0.0, 0.5}};
  for (size_t i = 0; i < P->rows; i++)
    for (int t = 0; t < 5; t++)
      Y->data[i * 5 + t] = (float)(basis[0][t] * P->data[i * 2] + basis[1][t] * P->data[i * 2 + 1] + 0.25 * t);
  return Y;
}

/* The residual of P's coordinate c regressed on (1, X's two columns), by
 * the normal equations, over P's variance. */
static double affine_residual(const nle_matf *P, const double *X, int c) {
  size_t n = P->rows;
  double A[9] = {0}, b[3] = {0}, tot = 0, mean = 0, res = 0;
  for (size_t i = 0; i < n; i++) mean += P->data[i * 2 + c] / (double)n;
  for (size_t i = 0; i < n; i++) {
    double f[3] = {1, X[i * 2], X[i * 2 + 1]};
    for (int p = 0; p < 3; p++) {
      b[p] += f[p] * P->data[i * 2 + c];
      for (int q = 0; q < 3; q++) A[p * 3 + q] += f[p] * f[q];
    }
    tot += (P->data[i * 2 + c] - mean) * (P->data[i * 2 + c] - mean);
  }
  lapack_int piv[3];
  if (LAPACKE_dgesv(LAPACK_ROW_MAJOR, 3, 1, A, 3, piv, b, 1)) exit(2);
  for (size_t i = 0; i < n; i++) {
    double e = P->data[i * 2 + c] - (b[0] + b[1] * X[i * 2] + b[2] * X[i * 2 + 1]);
    res += e * e;
  }
  return res / tot;
}

/* Points on a 2-D plane in R^5 (SPEC 4.5): the bottom eigenvector is
 * constant (eigenvalue ~0) and the next two span an affine image of the
 * plane's coordinates: regressing them on (1, u, v) leaves ~0. */
static void lle_plane(void) {
  nle_ctx *ctx = test_ctx(4);
  enum { N = 400 };
  nle_matf *P = test_random_matf(N, 2, 35), *Y = plane_in_r5(ctx, P);
  nle_spectral_result *r = lle_of(ctx, Y, 8, 1e-6, NLE_EIGEN_DENSE);
  nle_test(r != NULL);
  if (r) {
    nle_test(fabs(r->eigenvalues[0]) < 1e-12);
    for (int c = 0; c < 2; c++) {
      double res = affine_residual(P, r->X->data, c);
      if (!nle_test(res < 1e-4)) printf("  coordinate %d: relative residual %g\n", c, res);
    }
  }
  nle_spectral_result_free(&r);
  nle_matf_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* k > D without a regulariser is refused; LLE from affinities alone too. */
static void lle_bad_input(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(50, 3, 2);
  nle_spectral_result *r = lle_of(ctx, Y, 5, 0.0, NLE_EIGEN_AUTO);
  nle_test(!r && strstr(nle_ctx_error(ctx), "neighbors=5 neighbours in 3 dimensions"));
  const int edges[] = {0, 1, 1, 2, 2, 3, 3, 4};
  nle_csr *W = graph_from_edges(5, edges, 4);
  nle_spectral_input in = {NULL, NULL, W};
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.dim = 1;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LLE, &in, &o, &r) == NLE_ERR_ARG && !r &&
           strstr(nle_ctx_error(ctx), "needs the points"));
  nle_csr_free(&W);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* ---- LTSA and Hessian LLE ---------------------------------------------- */

/* Dense references written here with LAPACK for the local steps: the
 * tangent coordinates from dsyevd on each neighbourhood's centred Gram
 * matrix, Hessian LLE's orthonormal design by dgeqrf/dorgqr (not the
 * library's Jacobi and Gram-Schmidt), M = sum_i S_i B_i S_i^T dense, its
 * bottom eigenvectors by dsyevd, scaled to (1/N) X^T X = I. */
static void reference_alignment(const nle_matf *Y, const nle_csr *knn, int hessian, size_t d, double *vals,
                                double *X) {
  size_t n = Y->rows, D = Y->cols, dp = d * (d + 1) / 2, cols = 1 + d + dp;
  double *M = calloc(n * n, sizeof(double)), *ev = malloc(n * sizeof(double));
  int32_t nb[64];
  for (size_t i = 0; i < n; i++) { /* the neighbourhood: the point, then its neighbours */
    int k = (int)(knn->rowptr[i + 1] - knn->rowptr[i]) + 1;
    nb[0] = (int32_t)i;
    for (int a = 1; a < k; a++) nb[a] = knn->colind[knn->rowptr[i] + a - 1];
    double *Z = calloc((size_t)k * D, sizeof(double)), *C = calloc((size_t)k * (size_t)k, sizeof(double));
    double *w = malloc((size_t)k * sizeof(double)), *B = calloc((size_t)k * (size_t)k, sizeof(double));
    for (size_t t = 0; t < D; t++) {
      double mean = 0;
      for (int a = 0; a < k; a++) mean += (double)Y->data[(size_t)nb[a] * D + t] / k;
      for (int a = 0; a < k; a++) Z[(size_t)a * D + t] = Y->data[(size_t)nb[a] * D + t] - mean;
    }
    for (int a = 0; a < k; a++)
      for (int c = 0; c < k; c++)
        for (size_t t = 0; t < D; t++) C[a * k + c] += Z[(size_t)a * D + t] * Z[(size_t)c * D + t];
    if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', k, C, k, w)) exit(2); /* ascending: top d at k-1, k-2, ... */
    if (!hessian) {
      for (int a = 0; a < k; a++)
        for (int c = 0; c < k; c++) {
          double g = 1.0 / k;
          for (size_t t = 0; t < d; t++) g += C[a * k + (k - 1 - (int)t)] * C[c * k + (k - 1 - (int)t)];
          B[a * k + c] = (a == c) - g;
        }
    } else {
      double *A = calloc((size_t)k * cols, sizeof(double)), tau[64];
      for (int a = 0; a < k; a++) {
        size_t c = 0;
        A[(size_t)a * cols + c++] = 1.0;
        for (size_t t = 0; t < d; t++) A[(size_t)a * cols + c++] = C[a * k + (k - 1 - (int)t)];
        for (size_t t = 0; t < d; t++)
          for (size_t u = t; u < d; u++) A[(size_t)a * cols + c++] = C[a * k + (k - 1 - (int)t)] * C[a * k + (k - 1 - (int)u)];
      }
      if (LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, k, (lapack_int)cols, A, (lapack_int)cols, tau) ||
          LAPACKE_dorgqr(LAPACK_ROW_MAJOR, k, (lapack_int)cols, (lapack_int)cols, A, (lapack_int)cols, tau))
        exit(2);
      for (int a = 0; a < k; a++)
        for (int c = 0; c < k; c++)
          for (size_t p = 1 + d; p < cols; p++) B[a * k + c] += A[(size_t)a * cols + p] * A[(size_t)c * cols + p];
      free(A);
    }
    for (int a = 0; a < k; a++)
      for (int c = 0; c < k; c++) M[(size_t)nb[a] * n + (size_t)nb[c]] += B[a * k + c];
    free(Z);
    free(C);
    free(w);
    free(B);
  }
  if (LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)n, M, (lapack_int)n, ev)) exit(2);
  for (size_t t = 0; t <= d; t++) vals[t] = ev[t];
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++) X[i * d + t] = sqrt((double)n) * M[i * n + t + 1];
  free(M);
  free(ev);
}

/* A rolled sheet in 3-D: LTSA and Hessian LLE by the library (dense and
 * shift-invert) against the references above: eigenvalues to 1e-8
 * relative + 1e-13, directions to 1e-6. Then a plane in R^5: both recover
 * an affine image of the plane's coordinates (regression residual ~0). */
static void ltsa_hlle_against_reference(void) {
  nle_ctx *ctx = test_ctx(8);
  enum { N = 300, K = 10, DIM = 2 };
  nle_matf *Y = test_random_matf(N, 3, 71);
  for (size_t i = 0; i < N; i++) {
    double t = 3 + 6 * (Y->data[i * 3] + 0.5);
    Y->data[i * 3] = (float)(t * cos(t) / 4), Y->data[i * 3 + 1] = (float)(t * sin(t) / 4);
  }
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = K;
  nle_csr *knn = NULL;
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &knn));
  const nle_spectral_method methods[2] = {NLE_SPECTRAL_LTSA, NLE_SPECTRAL_HLLE};
  for (int m = 0; m < 2; m++) {
    double ref[DIM + 1], *X = malloc(N * DIM * sizeof(double));
    reference_alignment(Y, knn, m, DIM, ref, X);
    for (int solver = 0; solver < 2; solver++) {
      nle_spectral_opts o;
      nle_spectral_opts_init(&o);
      o.k = K;
      o.knn_method = NLE_KNN_EXACT;
      o.solver = solver ? NLE_EIGEN_SHIFT_INVERT : NLE_EIGEN_DENSE;
      nle_spectral_input in = {Y, NULL, NULL};
      nle_spectral_result *r = NULL;
      nle_test_ok(nle_spectral_embed(ctx, methods[m], &in, &o, &r));
      if (!r) continue;
      for (int t = 0; t <= DIM; t++)
        if (!nle_test(fabs(r->eigenvalues[t] - ref[t]) <= 1e-8 * fabs(ref[t]) + 1e-13))
          printf("  %s, solver %d: %.12g vs %.12g\n", nle_spectral_method_name(methods[m]), solver, r->eigenvalues[t], ref[t]);
      for (int t = 0; t < DIM; t++)
        if (!nle_test(column_cosine(r->X->data, X, N, DIM, t, t, DIM) > 1 - 1e-6))
          printf("  %s, solver %d, column %d: cosine %.12g; eigenvalues %g %g %g\n", nle_spectral_method_name(methods[m]),
                 solver, t, column_cosine(r->X->data, X, N, DIM, t, t, DIM), ref[0], ref[1], ref[2]);
      nle_spectral_result_free(&r);
    }
    free(X);
  }
  nle_csr_free(&knn);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}


/* Neighbourhoods of lower rank than d: points on a straight line in R^3
 * (each neighbourhood spans one direction), d = 2. The tangent basis must
 * stay orthogonal to the constant vector, or LTSA's blocks I - G G^T lose
 * their semi-definiteness (the bottom eigenvalues were -2.5 here). The
 * alignment matrix's eigenvalues are >= 0 to rounding, the first
 * coordinate is the line's parameter (affine in it: every neighbourhood's
 * tangent holds it), and d above the data's dimension is refused naming
 * the option. */
static void ltsa_rank_deficient(void) {
  nle_ctx *ctx = test_ctx(8);
  enum { N = 80 };
  nle_matf *Y = NULL, *T = NULL;
  nle_test_ok(nle_matf_alloc(ctx, N, 3, &Y));
  nle_test_ok(nle_matf_alloc(ctx, N, 2, &T)); /* the parameter, and 0 (affine_residual's layout) */
  memset(T->data, 0, sizeof(float) * N * 2);
  nle_rng rng;
  nle_rng_init(&rng, 8, 1);
  const double dir[3] = {1.0, 2.0, 0.5};
  for (size_t i = 0; i < N; i++) { /* increasing, irregular steps */
    T->data[2 * i] = (float)((i ? T->data[2 * i - 2] : 0.0) + 0.05 + 0.1 * nle_rng_uniform(&rng));
    for (int t = 0; t < 3; t++) Y->data[i * 3 + t] = (float)(T->data[2 * i] * dir[t]);
  }
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 6, o.dim = 2, o.solver = NLE_EIGEN_DENSE;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LTSA, &in, &o, &r));
  if (r) {
    for (int t = 0; t < 3; t++)
      if (!nle_test(r->eigenvalues[t] > -1e-10)) printf("  eigenvalue %d: %g\n", t, r->eigenvalues[t]);
    double res = affine_residual(T, r->X->data, 0);
    if (!nle_test(res < 1e-6)) printf("  first coordinate vs the line's parameter: relative residual %g\n", res);
  }
  nle_spectral_result_free(&r);
  o.dim = 4;
  for (int m = 0; m < 3; m++) {
    nle_spectral_method method = m == 0 ? NLE_SPECTRAL_LTSA : m == 1 ? NLE_SPECTRAL_HLLE : NLE_SPECTRAL_MLLE;
    o.k = 20;
    nle_test(nle_spectral_embed(ctx, method, &in, &o, &r) == NLE_ERR_ARG && !r &&
             strstr(nle_ctx_error(ctx), "dim=4 exceeds the data's 3 dimensions"));
  }
  nle_matf_free(&Y);
  nle_matf_free(&T);
  nle_ctx_free(&ctx);
}

/* Modified LLE: on points of a plane in R^5 (k = 10 > d, where LLE's
 * weights are not unique; reg 1e-6) the embedding from either solver is
 * an affine image of the plane's coordinates (regression residual < 1e-6
 * of their variance) and three eigenvalues are ~0; k <= d is refused. */
static void mlle_plane_and_solvers(void) {
  nle_ctx *ctx = test_ctx(10);
  enum { N = 400 };
  nle_matf *P = test_random_matf(N, 2, 36), *Y = plane_in_r5(ctx, P);
  nle_spectral_result *r[2] = {NULL, NULL};
  for (int solver = 0; solver < 2; solver++) {
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.k = 10;
    o.reg = 1e-6;
    o.knn_method = NLE_KNN_EXACT;
    o.solver = solver ? NLE_EIGEN_SHIFT_INVERT : NLE_EIGEN_DENSE;
    nle_spectral_input in = {Y, NULL, NULL};
    nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_MLLE, &in, &o, &r[solver]));
  }
  for (int solver = 0; r[0] && r[1] && solver < 2; solver++) {
    /* the plane's two coordinates span M's null space beside the constant:
     * three eigenvalues ~0, the embedding any basis of it */
    for (int t = 0; t < 3; t++) nle_test(fabs(r[solver]->eigenvalues[t]) < 1e-9);
    for (int c = 0; c < 2; c++) {
      double res = affine_residual(P, r[solver]->X->data, c);
      if (!nle_test(res < 1e-6)) printf("  solver %d, coordinate %d: relative residual %g\n", solver, c, res);
    }
  }
  nle_spectral_result_free(&r[0]);
  nle_spectral_result_free(&r[1]);
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 2;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *bad = NULL;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_MLLE, &in, &o, &bad) != NLE_OK && !bad);
  nle_matf_free(&P);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* ---- diffusion maps ----------------------------------------------------- */

/* The chain P = D_a^-1 W_a built here from the front door's own W (kNN,
 * binary, average rule), its right eigenvectors by LAPACK's nonsymmetric
 * dgeev (not through the symmetric form the library uses), sorted by
 * eigenvalue, normalised so that psi_0 = 1 and psi^T D_a psi = sum D_a:
 * the library's eigenvalues to 1e-9 and columns mu^t psi to 1e-6, for
 * alpha 0, 1/2, 1 and t 0, 1, 3. */
static void diffmap_against_dgeev(void) {
  nle_ctx *ctx = test_ctx(7);
  enum { N = 250, K = 8, DIM = 2 };
  nle_matf *Y = test_random_matf(N, 3, 44);
  nle_csr *W = knn_weights(ctx, Y, K);
  const double alphas[3] = {0.0, 0.5, 1.0};
  const int times[3] = {0, 1, 3};
  for (int c = 0; c < 3; c++) {
    double q[N] = {0}, da[N] = {0}, *P = calloc(N * N, sizeof(double));
    for (size_t i = 0; i < N; i++)
      for (int64_t p = W->rowptr[i]; p < W->rowptr[i + 1]; p++) q[i] += nle_csr_value(W, p);
    for (size_t i = 0; i < N; i++)
      for (int64_t p = W->rowptr[i]; p < W->rowptr[i + 1]; p++) {
        size_t j = (size_t)W->colind[p];
        P[i * N + j] = nle_csr_value(W, p) / pow(q[i] * q[j], alphas[c]);
        da[i] += P[i * N + j];
      }
    double total = 0;
    for (size_t i = 0; i < N; i++) {
      total += da[i];
      for (size_t j = 0; j < N; j++) P[i * N + j] /= da[i];
    }
    double *wr = malloc(N * sizeof(double)), *wi = malloc(N * sizeof(double)), *vr = malloc(N * N * sizeof(double));
    if (LAPACKE_dgeev(LAPACK_ROW_MAJOR, 'N', 'V', N, P, N, wr, wi, NULL, N, vr, N)) exit(2);
    int order[DIM + 1];
    for (int t = 0; t <= DIM; t++) { /* the DIM + 1 largest, by selection */
      int best = -1;
      for (int e = 0; e < N; e++) {
        int taken = 0;
        for (int u = 0; u < t; u++) taken |= order[u] == e;
        if (!taken && (best < 0 || wr[e] > wr[best])) best = e;
      }
      order[t] = best;
    }
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.k = K;
    o.dim = DIM;
    o.knn_method = NLE_KNN_EXACT;
    o.alpha = alphas[c];
    o.diffusion_time = times[c];
    nle_spectral_input in = {Y, NULL, NULL};
    nle_spectral_result *r = NULL;
    nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_DIFFMAP, &in, &o, &r));
    if (r) {
      for (int t = 0; t <= DIM; t++) nle_test(fabs(r->eigenvalues[t] - wr[order[t]]) < 1e-9 && fabs(wi[order[t]]) < 1e-12);
      for (int t = 0; t < DIM; t++) {
        int e = order[t + 1];
        double norm = 0;
        for (size_t i = 0; i < N; i++) norm += vr[i * N + (size_t)e] * vr[i * N + (size_t)e] * da[i];
        double scale = sqrt(total / norm) * pow(wr[e], times[c]), dot = 0;
        for (size_t i = 0; i < N; i++) dot += r->X->data[i * DIM + (size_t)t] * vr[i * N + (size_t)e] * scale;
        double xx = 0;
        for (size_t i = 0; i < N; i++) xx += r->X->data[i * DIM + (size_t)t] * r->X->data[i * DIM + (size_t)t];
        /* the same vector up to sign: |x . ref| = |x|^2 = |ref|^2 */
        nle_test_rel(fabs(dot), xx, 1e-6);
      }
    }
    nle_spectral_result_free(&r);
    free(P);
    free(wr);
    free(wi);
    free(vr);
  }
  nle_csr_free(&W);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* ---- spectral clustering ---------------------------------------------- */

/* The matched error by brute force over all assignments of clusters to
 * classes (both in 0..m-1, m <= 7), and the majority error by counting. */
static void brute_errors(const int32_t *lab, const int32_t *truth, size_t n, int m, double *matched, double *majority) {
  int perm[8], best = 0;
  for (int a = 0; a < m; a++) perm[a] = a;
  for (;;) { /* lexicographic permutations */
    int hit = 0;
    for (size_t i = 0; i < n; i++) hit += perm[lab[i]] == truth[i];
    best = hit > best ? hit : best;
    int a = m - 2;
    while (a >= 0 && perm[a] > perm[a + 1]) a--;
    if (a < 0) break;
    int b = m - 1;
    while (perm[b] < perm[a]) b--;
    int tmp = perm[a];
    perm[a] = perm[b], perm[b] = tmp;
    for (int x = a + 1, y = m - 1; x < y; x++, y--) tmp = perm[x], perm[x] = perm[y], perm[y] = tmp;
  }
  int maj = 0;
  for (int c = 0; c < m; c++) {
    int top = 0;
    for (int t = 0; t < m; t++) {
      int cnt = 0;
      for (size_t i = 0; i < n; i++) cnt += lab[i] == c && truth[i] == t;
      top = cnt > top ? cnt : top;
    }
    maj += top;
  }
  *matched = 1.0 - (double)best / (double)n;
  *majority = 1.0 - (double)maj / (double)n;
}

/* Random labelings against brute force; a permutation of the truth is
 * error 0; the majority error never exceeds the matched one. */
static void clustering_error_brute_force(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_rng r;
  nle_rng_init(&r, 77, 0);
  enum { N = 60 };
  int32_t lab[N], truth[N];
  for (int trial = 0; trial < 50; trial++) {
    int m = 2 + trial % 6;
    for (size_t i = 0; i < N; i++) {
      truth[i] = (int32_t)(nle_rng_uniform(&r) * m);
      lab[i] = nle_rng_uniform(&r) < 0.6 ? (truth[i] + 1) % m : (int32_t)(nle_rng_uniform(&r) * m);
    }
    double a, b, ra, rb;
    nle_test_ok(nle_clustering_error(ctx, lab, truth, N, &a, &b));
    brute_errors(lab, truth, N, m, &ra, &rb);
    nle_test(fabs(a - ra) < 1e-12 && fabs(b - rb) < 1e-12 && b <= a + 1e-12);
  }
  for (size_t i = 0; i < N; i++) lab[i] = (truth[i] + 3) % 7, truth[i] %= 7;
  for (size_t i = 0; i < N; i++) lab[i] = (truth[i] + 3) % 7;
  double a, b;
  nle_test_ok(nle_clustering_error(ctx, lab, truth, N, &a, &b));
  nle_test(a == 0 && b == 0);
  /* labels are any integers (nle_labels_encode): -1 is a cluster like 7 */
  double a7, b7;
  lab[0] = 7;
  nle_test_ok(nle_clustering_error(ctx, lab, truth, N, &a7, &b7));
  lab[0] = -1;
  nle_test_ok(nle_clustering_error(ctx, lab, truth, N, &a, &b));
  nle_test(a == a7 && b == b7 && a > 0);
  nle_ctx_free(&ctx);
}

/* k-means on four well-separated blobs recovers them (error 0), its
 * inertia is the sum of squared distances to the clusters' means computed
 * here, and the labels repeat for the seed. */
static void kmeans_blobs(void) {
  nle_ctx *ctx = test_ctx(5);
  enum { N = 400, K = 4 };
  nle_matd *X = NULL;
  nle_test_ok(nle_matd_alloc(ctx, N, 2, &X));
  nle_rng r;
  nle_rng_init(&r, 5, 1);
  int32_t truth[N], lab[N], again[N];
  for (size_t i = 0; i < N; i++) {
    truth[i] = (int32_t)(i % K);
    X->data[2 * i] = 10.0 * (truth[i] % 2) + nle_rng_uniform(&r);
    X->data[2 * i + 1] = 10.0 * (truth[i] / 2) + nle_rng_uniform(&r);
  }
  double inertia, inertia2, err, maj;
  nle_test_ok(nle_kmeans(ctx, X, K, 5, 100, lab, &inertia));
  nle_test_ok(nle_clustering_error(ctx, lab, truth, N, &err, &maj));
  nle_test(err == 0);
  double mean[K][2] = {{0}}, cnt[K] = {0}, want = 0;
  for (size_t i = 0; i < N; i++) cnt[lab[i]]++, mean[lab[i]][0] += X->data[2 * i], mean[lab[i]][1] += X->data[2 * i + 1];
  for (size_t i = 0; i < N; i++) {
    double dx = X->data[2 * i] - mean[lab[i]][0] / cnt[lab[i]], dy = X->data[2 * i + 1] - mean[lab[i]][1] / cnt[lab[i]];
    want += dx * dx + dy * dy;
  }
  nle_test_rel(inertia, want, 1e-10);
  nle_ctx *ctx2 = test_ctx(5);
  nle_test_ok(nle_kmeans(ctx2, X, K, 5, 100, again, &inertia2));
  nle_test(!memcmp(lab, again, sizeof lab) && inertia == inertia2);
  nle_test(nle_kmeans(ctx, X, N + 1, 5, 100, lab, &inertia) == NLE_ERR_ARG);
  nle_matd_free(&X);
  nle_ctx_free(&ctx);
  nle_ctx_free(&ctx2);
}

/* Ideal clusters (SPEC 4.6): K separated blobs give K zero eigenvalues and
 * error 0. Two interleaved spirals (the slides' "Spirals Again"): k-means
 * on the coordinates fails, spectral clustering on a 4-NN graph does not
 * (with 6 neighbours the sparse outer tips, whose neighbours all lie
 * behind them, reach across the gap of pi to the other arm). */
static void spectral_clustering_cases(void) {
  nle_ctx *ctx = test_ctx(6);
  enum { PER = 150, K = 3, N = PER * K };
  nle_matf *Y = test_random_matf(N, 4, 12);
  int32_t truth[N];
  for (size_t i = 0; i < N; i++) truth[i] = (int32_t)(i / PER), Y->data[i * 4 + 1] += 50.0f * (float)(i / PER);
  nle_cluster_opts co;
  nle_cluster_opts_init(&co);
  co.clusters = K;
  co.spectral.k = 6;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_cluster_result *r = NULL;
  nle_test_ok(nle_spectral_cluster(ctx, &in, &co, &r));
  double err = 1, maj = 1;
  if (r) {
    nle_test_ok(nle_clustering_error(ctx, r->labels, truth, N, &err, &maj));
    nle_test(err == 0 && r->embedding->components == K);
    for (int t = 0; t < K; t++) nle_test(fabs(r->embedding->eigenvalues[t]) < 1e-10);
  }
  nle_cluster_result_free(&r);
  nle_matf_free(&Y);
  /* two spirals, r = t, t in [1, 4 pi], the second turned by pi */
  enum { S = 300 };
  nle_matf *P = NULL;
  nle_test_ok(nle_matf_alloc(ctx, 2 * S, 2, &P));
  int32_t spiral[2 * S];
  for (size_t i = 0; i < 2 * S; i++) {
    double t = 1.0 + 4 * M_PI * (double)(i % S) / S, phase = i < S ? 0.0 : M_PI;
    P->data[2 * i] = (float)(t * cos(t + phase)), P->data[2 * i + 1] = (float)(t * sin(t + phase));
    spiral[i] = i >= S;
  }
  nle_matd *Pd = NULL;
  nle_test_ok(nle_matd_alloc(ctx, 2 * S, 2, &Pd));
  for (size_t i = 0; i < 4 * S; i++) Pd->data[i] = P->data[i];
  int32_t lab[2 * S];
  nle_test_ok(nle_kmeans(ctx, Pd, 2, 10, 300, lab, NULL));
  nle_test_ok(nle_clustering_error(ctx, lab, spiral, 2 * S, &err, &maj));
  nle_test(err > 0.2);
  nle_spectral_input sp = {P, NULL, NULL};
  co.clusters = 2;
  co.spectral.k = 4;
  nle_test_ok(nle_spectral_cluster(ctx, &sp, &co, &r));
  if (r) {
    nle_test_ok(nle_clustering_error(ctx, r->labels, spiral, 2 * S, &err, &maj));
    if (!nle_test(err == 0)) printf("  spirals: error %g, %d components, eigenvalues %g %g\n", err, r->embedding->components,
                                     r->embedding->eigenvalues[0], r->embedding->eigenvalues[1]);
  }
  nle_cluster_result_free(&r);
  nle_matd_free(&Pd);
  nle_matf_free(&P);
  nle_ctx_free(&ctx);
}

const nle_test_case spectral_method_tests[] = {
    {"le/slides_laplacian", slides_laplacian},
    {"le/cycle_and_path", cycle_and_path},
    {"le/against_dense_pencil", le_against_dense_pencil},
    {"le/normalisations_agree", normalisations_agree},
    {"le/disconnected_graph", disconnected_graph},
    {"le/same_for_threads", same_for_threads},
    {"le/pca_candidates", pca_candidates},
    {"le/radius_graph", radius_graph},
    {"le/bad_input", bad_input},
    {"lle/against_reference", lle_against_reference},
    {"lle/invariances", lle_invariances},
    {"lle/plane", lle_plane},
    {"lle/bad_input", lle_bad_input},
    {"lle/same_for_threads", alignment_same_for_threads},
    {"lle/full_rows", lle_full_rows},
    {"ltsa/hlle_against_reference", ltsa_hlle_against_reference},
    {"ltsa/rank_deficient", ltsa_rank_deficient},
    {"mlle/plane_and_solvers", mlle_plane_and_solvers},
    {"diffmap/against_dgeev", diffmap_against_dgeev},
    {"cluster/error_brute_force", clustering_error_brute_force},
    {"cluster/kmeans_blobs", kmeans_blobs},
    {"cluster/spectral_cases", spectral_clustering_cases},
    {NULL, NULL}};
