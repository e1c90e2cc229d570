/* test_lll_sparse.c — Locally Linear Landmarks' reduced pencil held sparse
 * (src/spectral/sparse_pencil.c) against independent references: Z^T A Z
 * and Z^T B Z summed by brute force over A's and Z's entries; the sparse
 * pencil's eigenpairs against the dense pencil's (pencil.c) and against
 * exact LE where every point is a landmark; 1 and 2 threads bit for bit;
 * a singular B~ refused by the sparse solver and solved in its range by
 * the dense one. */
#include "harness.h"
#include "../src/spectral/eigen.h"
#include "../src/spectral/method.h"
#include "../src/spectral/spectral_internal.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

/* A symmetric sparse A on n points: each joined to the next `span`
 * (cyclically) and, when `far`, to `span` random others; random positive
 * weights. */
static nle_csr *random_graph(size_t n, size_t span, bool far, uint64_t seed) {
  double *Ad = calloc(n * n, sizeof(double));
  for (size_t i = 0; i < n; i++)
    for (size_t o = 1; o <= span; o++) {
      size_t j = (i + o) % n, r = (size_t)(test_uniform(&seed) * (double)n) % n;
      Ad[i * n + j] = Ad[j * n + i] = 0.5 + test_uniform(&seed);
      if (far && r != i) Ad[i * n + r] = Ad[r * n + i] = 0.5 + test_uniform(&seed);
    }
  int64_t nnz = 0;
  for (size_t i = 0; i < n * n; i++) nnz += Ad[i] != 0;
  nle_csr *A = NULL;
  nle_csr_alloc(NULL, (int64_t)n, (int64_t)n, nnz, NLE_F64, &A);
  int64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < n; j++)
      if (Ad[i * n + j] != 0) A->colind[at] = (int32_t)j, ((double *)A->val)[at++] = Ad[i * n + j];
    A->rowptr[i + 1] = at;
  }
  free(Ad);
  return A;
}

/* Z^T (alpha A + diag) Z dense, entry by entry over A's and Z's nonzeros. */
static double *brute_reduced(const nle_csr *Z, const nle_csr *A, double alpha, const double *diag) {
  size_t n = (size_t)Z->rows, L = (size_t)Z->cols;
  double *out = calloc(L * L, sizeof(double));
  for (size_t i = 0; i < n; i++)
    for (int64_t p = Z->rowptr[i]; p < Z->rowptr[i + 1]; p++) {
      double zi = nle_csr_value(Z, p);
      size_t a = (size_t)Z->colind[p];
      for (int64_t q = A ? A->rowptr[i] : 0; A && q < A->rowptr[i + 1]; q++) {
        int64_t j = A->colind[q];
        for (int64_t r = Z->rowptr[j]; r < Z->rowptr[j + 1]; r++)
          out[a * L + (size_t)Z->colind[r]] += zi * alpha * nle_csr_value(A, q) * nle_csr_value(Z, r);
      }
      for (int64_t r = Z->rowptr[i]; diag && r < Z->rowptr[i + 1]; r++)
        out[a * L + (size_t)Z->colind[r]] += zi * diag[i] * nle_csr_value(Z, r);
    }
  return out;
}

/* The largest |sparse - dense| over the largest |dense|, and whether the
 * CSR's columns ascend strictly within each row. */
static double sparse_vs_dense(const nle_csr *S, const double *D, bool *sorted) {
  size_t L = (size_t)S->rows;
  double *scatter = calloc(L * L, sizeof(double)), worst = 0, big = 0;
  *sorted = true;
  for (size_t a = 0; a < L; a++)
    for (int64_t q = S->rowptr[a]; q < S->rowptr[a + 1]; q++) {
      scatter[a * L + (size_t)S->colind[q]] = nle_csr_value(S, q);
      if (q > S->rowptr[a] && S->colind[q] <= S->colind[q - 1]) *sorted = false;
    }
  for (size_t i = 0; i < L * L; i++) worst = fmax(worst, fabs(scatter[i] - D[i])), big = fmax(big, fabs(D[i]));
  free(scatter);
  return worst / big;
}

/* Z^T A Z and Z^T B Z as CSR equal the brute-force sums (to rounding),
 * with and without A's or the diagonal's part; 1 and 2 threads give the
 * same bits (several row blocks: L > 256). */
static void reduced_matrices_vs_brute_force(void) {
  nle_ctx *ctx = test_ctx(41);
  enum { N = 3000, L = 700, KZ = 5 };
  nle_matf *Y = test_random_matf(N, 3, 17);
  for (size_t i = 0; i < N; i++) Y->data[i * 3] = 300.0f * (float)i / N; /* a strip along A's local edges */
  int32_t idx[L];
  nle_test_ok(nle_landmarks_select(ctx, Y, L, NLE_LANDMARKS_RANDOM, idx));
  nle_matf *Yl = test_rows_of(Y, idx, L);
  nle_csr *Z = NULL, *Zt = NULL, *far = random_graph(N, 4, true, 23), *near = random_graph(N, 4, false, 23);
  nle_test_ok(nle_lll_weights(ctx, Yl, Y, KZ, 1e-3, &Z, NULL));
  nle_test_ok(nle_csr_transpose(ctx, Z, &Zt));
  double *diag = malloc(N * sizeof(double));
  uint64_t seed = 3;
  for (size_t i = 0; i < N; i++) diag[i] = 1 + test_uniform(&seed);
  const struct { const nle_csr *A; double alpha; const double *diag; } cases[] = {
      {far, -1.0, diag}, {near, -1.0, diag}, {near, 1.0, NULL}, {NULL, 1.0, diag}};
  for (size_t c = 0; Z && c < 4; c++) {
    nle_csr *S1 = NULL, *S2 = NULL;
    nle_ctx_set_threads(ctx, 1);
    nle_test_ok(nle__lll_reduce_sparse(ctx, Z, Zt, cases[c].A, cases[c].alpha, cases[c].diag, &S1));
    nle_ctx_set_threads(ctx, 2);
    nle_test_ok(nle__lll_reduce_sparse(ctx, Z, Zt, cases[c].A, cases[c].alpha, cases[c].diag, &S2));
    if (!S1 || !S2) continue;
    double *ref = brute_reduced(Z, cases[c].A, cases[c].alpha, cases[c].diag);
    bool sorted;
    double err = sparse_vs_dense(S1, ref, &sorted);
    if (err >= 1e-13) printf("  case %zu: relative difference %.3g\n", c, err);
    nle_test(err < 1e-13 && sorted);
    if (c == 0) nle_test(S1->nnz > (int64_t)L * L / 4); /* far edges: dense-ish */
    if (c == 1) nle_test(S1->nnz < (int64_t)L * L / 20); /* local edges along the strip: sparse */
    nle_test(S1->nnz == S2->nnz && !memcmp(S1->colind, S2->colind, (size_t)S1->nnz * sizeof(int32_t)) &&
             !memcmp(S1->val, S2->val, (size_t)S1->nnz * sizeof(double)));
    free(ref);
    nle_csr_free(&S1), nle_csr_free(&S2);
  }
  /* every point its own landmark with two stored zero weights (as the
   * weights of a point on a landmark are kept): Z^T A Z has A's pattern */
  nle_csr *I3 = NULL, *I3t = NULL, *S = NULL;
  nle_csr_alloc(NULL, N, N, 3 * N, NLE_F64, &I3);
  for (size_t i = 0; i < N; i++) {
    int32_t c[3] = {(int32_t)i, (int32_t)((i + 1) % N), (int32_t)((i + 2) % N)};
    for (int t = 0; t < 3; t++) {
      int32_t v = c[t], at = (int32_t)(3 * i + (size_t)t);
      while (at > (int32_t)(3 * i) && I3->colind[at - 1] > v) I3->colind[at] = I3->colind[at - 1], ((double *)I3->val)[at] = ((double *)I3->val)[at - 1], at--;
      I3->colind[at] = v, ((double *)I3->val)[at] = t == 0;
    }
    I3->rowptr[i + 1] = 3 * (int64_t)(i + 1);
  }
  nle_test_ok(nle_csr_transpose(ctx, I3, &I3t));
  nle_test_ok(nle__lll_reduce_sparse(ctx, I3, I3t, near, 1.0, NULL, &S));
  nle_test(S && S->nnz == near->nnz);
  nle_csr_free(&I3), nle_csr_free(&I3t), nle_csr_free(&S);
  free(diag);
  nle_csr_free(&Z), nle_csr_free(&Zt), nle_csr_free(&far), nle_csr_free(&near);
  nle_matf_free(&Y), nle_matf_free(&Yl);
  nle_ctx_free(&ctx);
}

static nle_spectral_result *le_run(nle_ctx *ctx, const nle_matf *Y, int landmarks, nle_lll_pencil form, int dim,
                                   nle_eigen_solver solver) {
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 10, o.dim = dim, o.knn_method = NLE_KNN_EXACT, o.affinity = NLE_AFF_GAUSSIAN, o.sigma = 2.0;
  o.landmarks = landmarks, o.pencil = form, o.solver = solver;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  if (!nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r))) printf("  %s\n", nle_ctx_error(ctx));
  return r;
}

/* The largest principal angle between the column spaces of the n x d A
 * and B. */
static double subspace_angle(const double *A, const double *B, size_t n, size_t d) {
  double *Qa = malloc(n * d * sizeof(double)), *Qb = malloc(n * d * sizeof(double)), tau[64], M[64 * 64], S[64];
  memcpy(Qa, A, n * d * sizeof(double)), memcpy(Qb, B, n * d * sizeof(double));
  LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)d, Qa, (lapack_int)d, tau);
  LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)d, (lapack_int)d, Qa, (lapack_int)d, tau);
  LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)d, Qb, (lapack_int)d, tau);
  LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)n, (lapack_int)d, (lapack_int)d, Qb, (lapack_int)d, tau);
  memset(M, 0, sizeof M);
  for (size_t i = 0; i < n; i++)
    for (size_t t = 0; t < d; t++)
      for (size_t u = 0; u < d; u++) M[t * d + u] += Qa[i * d + t] * Qb[i * d + u];
  double sup[64];
  LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'N', 'N', (lapack_int)d, (lapack_int)d, M, (lapack_int)d, S, NULL, (lapack_int)d, NULL,
                 (lapack_int)d, sup);
  free(Qa), free(Qb);
  return acos(fmin(S[d - 1], 1.0));
}

/* LE by LLL on a Swiss roll: the sparse pencil's eigenvalues (1e-8
 * relative) and embedding's subspace (1e-6 rad) against the dense
 * pencil's, by Lanczos and by the block eigensolver; the same bits on 1
 * and 2 threads; the automatic rule takes the sparse pencil above its
 * threshold. */
static void sparse_pencil_vs_dense(void) {
  nle_ctx *ctx = test_ctx(42);
  enum { N = 1500, L = 300, DIM = 6 };
  nle_matf *Y = test_swiss_roll(ctx, N);
  nle_test(Y != NULL);
  if (!Y) return;
  nle_ctx_set_threads(ctx, 2);
  nle_spectral_result *dense = le_run(ctx, Y, L, NLE_PENCIL_DENSE, DIM, NLE_EIGEN_AUTO);
  nle_spectral_result *sparse = le_run(ctx, Y, L, NLE_PENCIL_SPARSE, DIM, NLE_EIGEN_AUTO);
  nle_ctx_set_threads(ctx, 1);
  nle_spectral_result *one = le_run(ctx, Y, L, NLE_PENCIL_SPARSE, DIM, NLE_EIGEN_AUTO);
  nle_test(dense && dense->solver_used == NLE_EIGEN_DENSE && sparse && sparse->solver_used == NLE_EIGEN_SPARSE);
  for (int t = 1; dense && sparse && t <= DIM; t++) {
    double rel = fabs(sparse->eigenvalues[t] - dense->eigenvalues[t]) / dense->eigenvalues[t];
    if (rel >= 1e-8) printf("  eigenvalue %d: %.12g against %.12g\n", t, sparse->eigenvalues[t], dense->eigenvalues[t]);
    nle_test(rel < 1e-8);
  }
  nle_test(dense && sparse && fabs(sparse->eigenvalues[0]) < 1e-10);
  if (dense && sparse) {
    double angle = subspace_angle(sparse->X->data, dense->X->data, N, DIM);
    if (angle >= 1e-6) printf("  subspace angle %.3g\n", angle);
    nle_test(angle < 1e-6);
  }
  nle_test(one && sparse && !memcmp(one->X->data, sparse->X->data, N * DIM * sizeof(double)));
  /* the block eigensolver on the same operator (its C + shift I) */
  nle_spectral_result *block = le_run(ctx, Y, L, NLE_PENCIL_SPARSE, DIM, NLE_EIGEN_BLOCK);
  nle_test(block && block->solver_used == NLE_EIGEN_BLOCK);
  for (int t = 1; block && dense && t <= DIM; t++)
    nle_test(fabs(block->eigenvalues[t] - dense->eigenvalues[t]) < 1e-8 * dense->eigenvalues[t]);
  nle_test(block && dense && subspace_angle(block->X->data, dense->X->data, N, DIM) < 1e-6);
  nle_spectral_result_free(&block);
  size_t saved = nle__lll_sparse_min;
  nle__lll_sparse_min = L - 1;
  nle_test(nle__lll_pencil_sparse(ctx, NLE_PENCIL_AUTO, L) && !nle__lll_pencil_sparse(ctx, NLE_PENCIL_AUTO, L - 1));
  nle_test(!nle__lll_pencil_sparse(ctx, NLE_PENCIL_DENSE, L) && nle__lll_pencil_sparse(ctx, NLE_PENCIL_SPARSE, 10));
  nle__lll_sparse_min = saved;
  nle_spectral_result_free(&dense), nle_spectral_result_free(&sparse), nle_spectral_result_free(&one);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Every point a landmark (L = N, the automatic K_Z): each point's weights
 * are its own landmark alone, Z a permutation, and the sparse pencil is
 * exact LE: eigenvalues to 1e-8, the embedding's subspace to 1e-6. */
static void all_landmarks_exact_le(void) {
  nle_ctx *ctx = test_ctx(43);
  enum { N = 1200, DIM = 4 };
  nle_matf *Y = test_swiss_roll(ctx, N);
  nle_test(Y != NULL);
  if (!Y) return;
  nle_spectral_result *exact = le_run(ctx, Y, 0, NLE_PENCIL_AUTO, DIM, NLE_EIGEN_AUTO);
  nle_spectral_result *full = le_run(ctx, Y, N, NLE_PENCIL_SPARSE, DIM, NLE_EIGEN_AUTO);
  nle_test(full && full->reconstruction_error == 0 && full->solver_used == NLE_EIGEN_SPARSE);
  for (int t = 1; exact && full && t <= DIM; t++)
    nle_test(fabs(full->eigenvalues[t] - exact->eigenvalues[t]) < 1e-8 * exact->eigenvalues[t]);
  nle_test(exact && full && subspace_angle(full->X->data, exact->X->data, N, DIM) < 1e-6);
  nle_spectral_result_free(&exact), nle_spectral_result_free(&full);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* B~ singular. (1) Every point of landmarks 0 and 1 weighs 0 in B: B~'s
 * rows 0 and 1 are zero, the sparse solver leaves them out (their X~
 * rows 0) and agrees with the dense pencil's range route. (2) Two
 * landmarks with the same column of Z: B~ singular without a zero row,
 * refused by the sparse solver by name, and solved by nle_lll_solve
 * through the dense route with the same values. */
static void singular_scale_matrix(void) {
  nle_ctx *ctx = test_ctx(44);
  enum { N = 400, L = 40, KZ = 1, NEV = 3 };
  nle_matf *Y = test_random_matf(N, 2, 29);
  int32_t idx[L];
  nle_test_ok(nle_landmarks_select(ctx, Y, L, NLE_LANDMARKS_MINMAX, idx));
  nle_matf *Yl = test_rows_of(Y, idx, L);
  nle_csr *Z = NULL, *Zt = NULL, *A = random_graph(N, 3, true, 31), *At = NULL, *Bt = NULL;
  nle_test_ok(nle_lll_weights(ctx, Yl, Y, KZ, 1e-3, &Z, NULL));
  if (!Z) return;
  nle_test_ok(nle_csr_transpose(ctx, Z, &Zt));
  double *deg = calloc(N, sizeof(double)), *bdiag = malloc(N * sizeof(double));
  for (size_t i = 0; i < N; i++) {
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) deg[i] += nle_csr_value(A, q);
    bdiag[i] = Z->colind[Z->rowptr[i]] < 2 ? 0.0 : deg[i];
  }
  nle_test_ok(nle__lll_reduce_sparse(ctx, Z, Zt, A, 1.0, deg, &At));
  nle_test_ok(nle__lll_reduce_sparse(ctx, Z, Zt, NULL, 1.0, bdiag, &Bt));
  double vals[NEV], dvals[NEV], *V = malloc(L * NEV * sizeof(double));
  nle__pencil_info info;
  if (At && Bt) nle_test_ok(nle__sparse_pencil_solve(ctx, "test", At, Bt, NEV, NLE__EIG_SMALLEST, 1e-12, false, vals, V, &info));
  nle_test(info.singular && info.rank == L - 2);
  for (int t = 0; t < NEV; t++) nle_test(V[0 * NEV + t] == 0 && V[1 * NEV + t] == 0);
  size_t saved = nle__lll_sparse_min;
  nle__lll_sparse_min = (size_t)-1; /* the dense pencil: B~'s range by its eigendecomposition */
  nle_test_ok(nle_lll_solve(ctx, Z, A, deg, NULL, bdiag, NEV, false, dvals, NULL, NULL));
  for (int t = 0; t < NEV; t++) {
    if (!(fabs(vals[t] - dvals[t]) <= 1e-8 * fabs(dvals[t]))) printf("  eigenvalue %d: %.15g against %.15g\n", t, vals[t], dvals[t]);
    nle_test(fabs(vals[t] - dvals[t]) <= 1e-8 * fabs(dvals[t]));
  }
  /* (2): points reconstructed by landmark 3 split evenly between 2 and 3,
   * those of landmark 2 likewise: columns 2 and 3 of Z the same */
  nle_csr *Z2 = NULL;
  nle_csr_alloc(NULL, N, L, N * 2, NLE_F64, &Z2);
  int64_t at = 0;
  for (size_t i = 0; i < N; i++) {
    int32_t c = Z->colind[Z->rowptr[i]];
    if (c == 2 || c == 3) Z2->colind[at] = 2, ((double *)Z2->val)[at++] = 0.5, Z2->colind[at] = 3, ((double *)Z2->val)[at++] = 0.5;
    else Z2->colind[at] = c, ((double *)Z2->val)[at++] = 1.0;
    Z2->rowptr[i + 1] = at;
  }
  Z2->nnz = at;
  nle_csr *Z2t = NULL, *A2 = NULL, *B2 = NULL;
  nle_test_ok(nle_csr_transpose(ctx, Z2, &Z2t));
  nle_test_ok(nle__lll_reduce_sparse(ctx, Z2, Z2t, A, 1.0, deg, &A2));
  nle_test_ok(nle__lll_reduce_sparse(ctx, Z2, Z2t, NULL, 1.0, deg, &B2));
  nle_status s = A2 && B2 ? nle__sparse_pencil_solve(ctx, "test", A2, B2, NEV, NLE__EIG_SMALLEST, 1e-12, false, vals, V, &info)
                          : NLE_ERR_NOMEM;
  nle_test(s == NLE_ERR_NUMERIC && info.singular && strstr(nle_ctx_error(ctx), "singular"));
  nle_test_ok(nle_lll_solve(ctx, Z2, A, deg, NULL, deg, NEV, false, dvals, NULL, NULL)); /* dense */
  nle__lll_sparse_min = 0; /* the rule picks the sparse pencil, which hands over to the dense one */
  nle_test_ok(nle_lll_solve(ctx, Z2, A, deg, NULL, deg, NEV, false, vals, NULL, NULL));
  nle__lll_sparse_min = saved;
  for (int t = 0; t < NEV; t++) nle_test(vals[t] == dvals[t]);
  free(deg), free(bdiag), free(V);
  nle_csr_free(&Z), nle_csr_free(&Zt), nle_csr_free(&A), nle_csr_free(&At), nle_csr_free(&Bt);
  nle_csr_free(&Z2), nle_csr_free(&Z2t), nle_csr_free(&A2), nle_csr_free(&B2);
  nle_matf_free(&Y), nle_matf_free(&Yl);
  nle_ctx_free(&ctx);
}

const nle_test_case lll_sparse_tests[] = {
    {"lll_sparse/reduced_matrices_vs_brute_force", reduced_matrices_vs_brute_force},
    {"lll_sparse/sparse_pencil_vs_dense", sparse_pencil_vs_dense},
    {"lll_sparse/all_landmarks_exact_le", all_landmarks_exact_le},
    {"lll_sparse/singular_scale_matrix", singular_scale_matrix},
    {NULL, NULL}};
