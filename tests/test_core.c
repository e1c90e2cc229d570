/* test_core.c — context, status codes, RNG, dense and CSR matrices. */
#include "harness.h"
#include "../src/core/internal.h"
#include "../src/core/vecmath.h"

#include <stdlib.h>
#include <string.h>

static void rng_reproducible(void) {
  nle_rng a, b, c;
  nle_rng_init(&a, 42, 3);
  nle_rng_init(&b, 42, 3);
  nle_rng_init(&c, 42, 4);
  int same = 1, differ = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t x = nle_rng_u64(&a), y = nle_rng_u64(&b), z = nle_rng_u64(&c);
    same &= x == y;
    differ += x != z;
  }
  nle_test(same);
  nle_test(differ > 990);
}

static void rng_distributions(void) {
  nle_rng r;
  nle_rng_init(&r, 1, 0);
  double sum = 0, sq = 0, umin = 1, umax = 0;
  int n = 200000, counts[10] = {0};
  for (int i = 0; i < n; i++) {
    double z = nle_rng_normal(&r), u = nle_rng_uniform(&r);
    sum += z;
    sq += z * z;
    umin = fmin(umin, u);
    umax = fmax(umax, u);
    counts[nle_rng_below(&r, 10)]++;
  }
  nle_test(fabs(sum / n) < 0.01);
  nle_test(fabs(sq / n - 1.0) < 0.02);
  nle_test(umin >= 0.0 && umax < 1.0);
  for (int i = 0; i < 10; i++) nle_test(abs(counts[i] - n / 10) < 600); /* ~4.5 sigma */
}

static void rng_sample_and_shuffle(void) {
  nle_rng r;
  nle_rng_init(&r, 9, 0);
  int64_t s[50];
  nle_rng_sample(&r, 1000, 50, s);
  int sorted = 1;
  for (int i = 1; i < 50; i++) sorted &= s[i] > s[i - 1];
  nle_test(sorted && s[0] >= 0 && s[49] < 1000);
  nle_rng_sample(&r, 7, 7, s);
  for (int i = 0; i < 7; i++) nle_test(s[i] == i);
  int64_t p[100], seen[100] = {0};
  for (int i = 0; i < 100; i++) p[i] = i;
  nle_rng_shuffle(&r, p, 100);
  int moved = 0;
  for (int i = 0; i < 100; i++) {
    seen[p[i]]++;
    moved += p[i] != i;
  }
  for (int i = 0; i < 100; i++) nle_test(seen[i] == 1);
  nle_test(moved > 80);
}

static void status_names(void) {
  nle_test(!strcmp(nle_status_name(NLE_ERR_FORMAT), "ERR_FORMAT"));
  nle_test(!strcmp(nle_status_name(NLE_OK), "OK"));
  nle_test(!strcmp(nle_status_name((nle_status)12345), "UNKNOWN"));
  nle_test(strlen(nle_status_message(NLE_ERR_MEMCAP)) > 5);
}

static void memory_cap(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_ctx_set_max_memory(ctx, 1 << 20);
  nle_matf *m = NULL;
  nle_test(nle_matf_alloc(ctx, 1000, 1000, &m) == NLE_ERR_MEMCAP);
  nle_test(m == NULL);
  nle_test(strstr(nle_ctx_error(ctx), "memory cap of 1.0 MiB") != NULL);
  nle_test(strstr(nle_ctx_error(ctx), "1000 x 1000") != NULL);
  nle_test_ok(nle_matf_alloc(ctx, 100, 100, &m));
  nle_matf_free(&m);
  nle_test(m == NULL);
  nle_matf_free(&m); /* freeing NULL is fine */
  nle_ctx_free(&ctx);
  nle_test(ctx == NULL);
}

static void dense_select(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matd *a, *b;
  nle_test_ok(nle_matd_alloc(ctx, 4, 3, &a));
  for (int i = 0; i < 12; i++) a->data[i] = i;
  int64_t idx[2] = {3, 1};
  nle_test_ok(nle_matd_select_rows(ctx, a, idx, 2, &b));
  nle_test(b->data[0] == 9 && b->data[2] == 11 && b->data[3] == 3);
  int64_t bad[1] = {4};
  nle_matd *c = NULL;
  nle_test(nle_matd_select_rows(ctx, a, bad, 1, &c) == NLE_ERR_ARG);
  nle_matd_free(&a);
  nle_matd_free(&b);
  nle_ctx_free(&ctx);
}

/* A random sparse matrix against its dense copy: small on one thread, and
 * one with empty rows and columns cut into spans on 2, 3 and 7 threads (each
 * transposed row sorted by column, the same arrays as on one thread), in
 * double and float. */
static void csr_transpose(void) {
  nle_ctx *ctx = test_ctx(1);
  const int shapes[2][2] = {{17, 11}, {300, 200}};
  for (int shape = 0; shape < 2; shape++)
    for (int f32 = 0; f32 < 2; f32++) {
      int rows = shapes[shape][0], cols = shapes[shape][1];
      double *dense = calloc((size_t)rows * (size_t)cols, sizeof(double));
      nle_rng r;
      nle_rng_init(&r, 5 + (uint64_t)shape, 0);
      int64_t nnz = 0;
      for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
          if (i % 13 != 4 && j % 17 != 3 && nle_rng_uniform(&r) < 0.3) { /* some rows and columns empty */
            dense[i * cols + j] = f32 ? (double)(float)nle_rng_normal(&r) : nle_rng_normal(&r);
            nnz++;
          }
      nle_csr *m, *t, *tt, *one = NULL;
      nle_test_ok(nle_csr_alloc(ctx, rows, cols, nnz, f32 ? NLE_F32 : NLE_F64, &m));
      int64_t k = 0;
      for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++)
          if (dense[i * cols + j] != 0) {
            m->colind[k] = j;
            if (f32) ((float *)m->val)[k++] = (float)dense[i * cols + j];
            else ((double *)m->val)[k++] = dense[i * cols + j];
          }
        m->rowptr[i + 1] = k;
      }
      nle_test_ok(nle_csr_validate(ctx, m));
      const int threads[] = {1, 2, 3, 7};
      for (int h = 0; h < (shape ? 4 : 1); h++) {
        nle_ctx_set_threads(ctx, threads[h]);
        nle_test_ok(nle_csr_transpose(ctx, m, &t));
        nle_test(t->rows == cols && t->cols == rows && t->nnz == nnz && t->dtype == m->dtype);
        int match = 1;
        for (int j = 0; j < cols; j++)
          for (int64_t q = t->rowptr[j]; q < t->rowptr[j + 1]; q++) {
            match &= nle_csr_value(t, q) == dense[t->colind[q] * cols + j];
            match &= q == t->rowptr[j] || t->colind[q] > t->colind[q - 1];
          }
        if (!nle_test(match)) printf("  %d x %d, float %d, %d threads\n", rows, cols, f32, threads[h]);
        if (one)
          nle_test(!memcmp(one->rowptr, t->rowptr, sizeof(int64_t) * (size_t)(cols + 1)) &&
                   !memcmp(one->colind, t->colind, sizeof(int32_t) * (size_t)nnz) &&
                   !memcmp(one->val, t->val, (size_t)nnz * (f32 ? sizeof(float) : sizeof(double))));
        nle_test_ok(nle_csr_transpose(ctx, t, &tt));
        nle_test(!memcmp(tt->rowptr, m->rowptr, sizeof(int64_t) * (size_t)(rows + 1)));
        nle_test(!memcmp(tt->colind, m->colind, sizeof(int32_t) * (size_t)nnz));
        nle_csr_free(&tt);
        if (one) nle_csr_free(&t);
        else one = t;
      }
      nle_csr_free(&one);
      m->colind[0] = cols; /* out of range */
      nle_test(nle_csr_validate(ctx, m) == NLE_ERR_FORMAT);
      nle_csr_free(&m);
      free(dense);
    }
  nle_ctx_set_threads(ctx, 1);
  nle_ctx_free(&ctx);
}

/* Two grid graphs (20 x 20 and 15 x 15 points, 4-neighbour edges, each
 * edge stored once: the order must use W + W^T) under shuffled labels: the
 * locality order is a permutation, keeps each component contiguous, and
 * puts every edge's ends within two breadth-first levels (at most 2 x 21
 * positions) where the shuffle left them hundreds apart; the renumbered
 * matrix holds W(order[i], order[j]). */
static void csr_locality_order(void) {
  nle_ctx *ctx = test_ctx(1);
  enum { A = 20, B = 15, N = A * A + B * B };
  int32_t label[N];
  for (int i = 0; i < N; i++) label[i] = i;
  nle_rng r;
  nle_rng_init(&r, 9, 0);
  for (int i = N - 1; i > 0; i--) {
    int j = (int)nle_rng_below(&r, (uint64_t)i + 1), t = label[i];
    label[i] = label[j];
    label[j] = t;
  }
  /* grid point (side, offset, row, col) -> shuffled label */
  int64_t nnz = 2 * (A * (A - 1)) + 2 * (B * (B - 1));
  nle_csr *W;
  nle_test_ok(nle_csr_alloc(ctx, N, N, nnz, NLE_F64, &W));
  int64_t *count = calloc(N + 1, sizeof(int64_t));
  int32_t (*edge)[2] = malloc((size_t)nnz * sizeof *edge);
  int64_t e = 0;
  int sides[2] = {A, B}, offsets[2] = {0, A * A};
  for (int g = 0; g < 2; g++)
    for (int i = 0; i < sides[g]; i++)
      for (int j = 0; j < sides[g]; j++) {
        int p = offsets[g] + i * sides[g] + j;
        if (j + 1 < sides[g]) edge[e][0] = label[p], edge[e++][1] = label[p + 1];
        if (i + 1 < sides[g]) edge[e][0] = label[p], edge[e++][1] = label[p + sides[g]];
      }
  nle_test(e == nnz);
  for (int64_t q = 0; q < nnz; q++) count[edge[q][0] + 1]++;
  for (int i = 0; i < N; i++) W->rowptr[i + 1] = W->rowptr[i] + count[i + 1];
  memset(count, 0, (N + 1) * sizeof(int64_t));
  for (int64_t q = 0; q < nnz; q++) {
    int64_t at = W->rowptr[edge[q][0]] + count[edge[q][0]]++;
    W->colind[at] = edge[q][1];
    ((double *)W->val)[at] = (double)(edge[q][0] * 1000 + edge[q][1]);
  }
  int32_t *order, pos[N];
  nle_test_ok(nle__csr_locality_order(ctx, W, NULL, &order));
  for (int i = 0; i < N; i++) pos[i] = -1;
  int perm = 1;
  for (int i = 0; i < N; i++) {
    perm &= order[i] >= 0 && order[i] < N && pos[order[i]] < 0;
    if (perm) pos[order[i]] = i;
  }
  nle_test(perm);
  int64_t widest = 0, widest_shuffled = 0;
  for (int64_t q = 0; q < nnz; q++) {
    int64_t a = llabs((int64_t)pos[edge[q][0]] - pos[edge[q][1]]), b = llabs((int64_t)edge[q][0] - edge[q][1]);
    widest = a > widest ? a : widest;
    widest_shuffled = b > widest_shuffled ? b : widest_shuffled;
  }
  if (!nle_test(widest <= 2 * (A + 1) && widest_shuffled > 200))
    printf("  widest edge %lld positions (shuffled: %lld)\n", (long long)widest, (long long)widest_shuffled);
  /* the 15 x 15 component occupies one contiguous run of positions */
  int lo = N, hi = -1;
  for (int p = A * A; p < N; p++) {
    lo = pos[label[p]] < lo ? pos[label[p]] : lo;
    hi = pos[label[p]] > hi ? pos[label[p]] : hi;
  }
  nle_test(hi - lo == B * B - 1);
  /* the caller's transpose gives the same order */
  nle_csr *Wt;
  int32_t *order2;
  nle_test_ok(nle_csr_transpose(ctx, W, &Wt));
  nle_test_ok(nle__csr_locality_order(ctx, W, Wt, &order2));
  nle_test(!memcmp(order, order2, N * sizeof(int32_t)));
  free(order2);
  nle_csr_free(&Wt);
  nle_csr *P;
  for (int f = 0; f < 2; f++) { /* values kept, then stored in float (exact: integers below 2^24) */
    nle_test_ok(nle__csr_permute(ctx, W, order, f ? NLE_F32 : W->dtype, &P));
    nle_test_ok(nle_csr_validate(ctx, P));
    int same = P->nnz == nnz && P->dtype == (f ? NLE_F32 : W->dtype);
    for (int i = 0; i < N; i++)
      for (int64_t q = P->rowptr[i]; q < P->rowptr[i + 1]; q++)
        same &= nle_csr_value(P, q) == (double)(order[i] * 1000 + order[P->colind[q]]);
    nle_test(same);
    nle_csr_free(&P);
  }
  free(order);
  free(count);
  free(edge);
  nle_csr_free(&W);
  nle_ctx_free(&ctx);
}

/* Errors and log lines quote bytes from files; control bytes and broken
 * UTF-8 come out as \xNN, well-formed UTF-8 (a file name in any script)
 * unchanged, and a prefix added later keeps the escapes as they are. */
static void errors_printable(void) {
  nle_ctx *ctx = nle_ctx_new();
  nle__fail(ctx, NLE_ERR_FORMAT, "f\xc3\xbc.csv: \"%s\"", "a\x1b[31m\x01\xff\xe2\x82\x7f\x80z");
  nle_test(!strcmp(nle_ctx_error(ctx), "f\xc3\xbc.csv: \"a\\x1b[31m\\x01\\xff\\xe2\\x82\\x7f\\x80z\""));
  nle__fail_prefix(ctx, "read \x07");
  nle_test(!strncmp(nle_ctx_error(ctx), "read \\x07: f\xc3\xbc.csv: \"a\\x1b", 26));
  /* a 4-byte sequence cut by the end of the text is escaped, not copied */
  nle__fail(ctx, NLE_ERR_FORMAT, "%s", "\xf0\x9f\x98");
  nle_test(!strcmp(nle_ctx_error(ctx), "\\xf0\\x9f\\x98"));
  nle__fail(ctx, NLE_ERR_FORMAT, "%s", "\xf0\x9f\x98\x80");
  nle_test(!strcmp(nle_ctx_error(ctx), "\xf0\x9f\x98\x80"));
  nle_ctx_free(&ctx);
}

/* Options named in messages come out in the caller's spelling: the C API's
 * names (estimator options, '-' as '_'), the tool's flags, or the markers
 * left for a binding; text that only looks like a marker is kept. */
static void messages_spell_options(void) {
  nle_ctx *ctx = nle_ctx_new();
  const char *text = "give {@ridge} or {@components=allow} or {@lambda-start=1e-3} or {@k}; {@Bad} {@x y} {@}";
  nle__fail(ctx, NLE_ERR_ARG, "%s", text);
  nle_test(!strcmp(nle_ctx_error(ctx),
                   "give ridge or components=allow or lambda_start=1e-3 or k; {@Bad} {@x y} {@}"));
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_CLI);
  nle__fail(ctx, NLE_ERR_ARG, "%s", text);
  nle_test(!strcmp(nle_ctx_error(ctx),
                   "give --ridge or --components allow or --lambda-start 1e-3 or -k; {@Bad} {@x y} {@}"));
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_MARKED);
  nle__fail(ctx, NLE_ERR_ARG, "%s", text);
  nle_test(!strcmp(nle_ctx_error(ctx), text));
  /* warnings: recorded with their kind, spelled, counted past the kept ones */
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_CLI);
  nle_test(nle_ctx_warning_count(ctx) == 0 && !strcmp(nle_ctx_warning(ctx, 0, NULL), ""));
  nle__warn(ctx, NLE_WARN_CONVERGENCE, "stopped at %d iterations: raise {@max-iters}", 7);
  nle_warning_kind kind = NLE_WARN_GENERAL;
  nle_test(nle_ctx_warning_count(ctx) == 1);
  nle_test(!strcmp(nle_ctx_warning(ctx, 0, &kind), "stopped at 7 iterations: raise --max-iters"));
  nle_test(kind == NLE_WARN_CONVERGENCE);
  for (int i = 0; i < NLE_WARNINGS_KEPT + 3; i++) nle__warn(ctx, NLE_WARN_GENERAL, "w%d", i);
  nle_test(nle_ctx_warning_count(ctx) == NLE_WARNINGS_KEPT + 4);
  nle_test(!strcmp(nle_ctx_warning(ctx, NLE_WARNINGS_KEPT - 1, &kind), "w14") && kind == NLE_WARN_GENERAL);
  nle_test(!strcmp(nle_ctx_warning(ctx, NLE_WARNINGS_KEPT, NULL), ""));
  nle_ctx_clear_warnings(ctx);
  nle_test(nle_ctx_warning_count(ctx) == 0);
  nle_ctx_free(&ctx);
}

/* The library's own log1p against libm's (glibc: under 1 ulp) and its
 * special values; and the instruction set's widest vector loop of it (a
 * clone, as the hot loops use it) against the scalar x86-64 call, bit for
 * bit: the promise that lets cloned loops call it. */
NLE_HOT static void log1p_loop(const double *x, double *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = nle__log1p(x[i]);
}

static void log1p_portable(void) {
  enum { N = 200000 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  if (!nle_test(x && y)) goto done;
  nle_rng r;
  nle_rng_init(&r, 5, 1);
  for (size_t i = 0; i < N; i++) {
    double u = nle_rng_uniform(&r);
    x[i] = i % 4 == 0 ? pow(10.0, -30.0 + 330.0 * u) : i % 4 == 1 ? -u : i % 4 == 2 ? 30.0 * u : 1e-8 * (u - 0.5);
  }
  log1p_loop(x, y, N);
  double worst = 0.0, at = 0.0;
  size_t differ = 0;
  for (size_t i = 0; i < N; i++) {
    double want = log1p(x[i]), one = nextafter(fabs(want), INFINITY) - fabs(want);
    double ulps = want == 0.0 ? fabs(y[i]) : fabs(y[i] - want) / one;
    if (ulps > worst) worst = ulps, at = x[i];
    double scalar = nle__log1p(x[i]);
    differ += memcmp(&scalar, &y[i], sizeof scalar) != 0;
  }
  if (!nle_test(worst <= 2.5 && differ == 0))
    printf("  worst %.2f ulp from libm at %.17g; %zu of %d vector values differ from the scalar's\n", worst, at, differ, N);
  double special[] = {INFINITY, -1.0, -2.0, NAN, 0.0, 1e308, 1e-320};
  double got[7];
  log1p_loop(special, got, 7);
  nle_test(got[0] == INFINITY && got[1] == -INFINITY && isnan(got[2]) && isnan(got[3]) && got[4] == 0.0 &&
           fabs(got[5] - log1p(1e308)) <= 1e-13 && got[6] == 1e-320);
done:
  free(x);
  free(y);
}

/* Every named enum, as its list in the headers makes it: the names of
 * 0 .. COUNT - 1 in order (the numbers are stored in model files and the
 * names are the options' values, so neither may change), each parsing back
 * to its value; COUNT and -1 have none; "auto" only where the enum takes
 * NLE_AUTO. The three enums kept by a table of rows (spectral methods,
 * optimisers, engines) run until the first value without a name. */
#define NAME_OF(stem, type) \
  static const char *stem##_of(int v) { return nle_##stem##_name((type)v); }
NAME_OF(affinity_kind, nle_affinity_kind)
NAME_OF(root_method, nle_root_method)
NAME_OF(ea_order, nle_ea_order)
NAME_OF(wneg, nle_wneg_kind)
NAME_OF(kem_variant, nle_kem_variant)
NAME_OF(mds_method, nle_mds_method)
NAME_OF(mds_ties, nle_mds_ties)
NAME_OF(pdkernel, nle_pdkernel_kind)
NAME_OF(knn_method, nle_knn_method)
NAME_OF(metric, nle_metric)
NAME_OF(model, nle_model_kind)
NAME_OF(init, nle_init_kind)
NAME_OF(step, nle_step_kind)
NAME_OF(components, nle_components_policy)
NAME_OF(symmetrize, nle_symmetrize_rule)
NAME_OF(laplacian, nle_laplacian_kind)
NAME_OF(eigen_solver, nle_eigen_solver)
NAME_OF(landmark_method, nle_landmark_method)
NAME_OF(pca_solver, nle_pca_solver)
NAME_OF(spectral_method, nle_spectral_method)
NAME_OF(opt, nle_opt_kind)
NAME_OF(repulsion, nle_repulsion)
#undef NAME_OF

typedef struct {
  const char *stem;
  const char *(*name)(int);
  int (*parse)(const char *);
  int count; /* its _COUNT, or -1: as many as its table names */
  bool has_auto;
  const char *names; /* of 0, 1, ..., space-separated */
} named_enum;

#define ROW(stem, count, has_auto, names) {#stem, stem##_of, nle_##stem##_parse, count, has_auto, names}
static const named_enum named_enums[] = {
    ROW(affinity_kind, NLE_AFF_COUNT, false, "gaussian binary inverse self-tuning entropic"),
    ROW(root_method, NLE_ROOT_COUNT, false, "halley euler newton bisection brent ridder classic householder"),
    ROW(ea_order, NLE_ORDER_COUNT, false, "mst msp density sequential random bounds"),
    ROW(wneg, NLE_WNEG_COUNT, false, "uniform sqdist knn"),
    ROW(kem_variant, NLE_KEM_COUNT, true, "raw affine reweighted stochastic"),
    ROW(mds_method, NLE_MDS_COUNT, false, "classical metric sammon nonmetric landmark"),
    ROW(mds_ties, NLE_TIES_COUNT, false, "primary secondary"),
    ROW(pdkernel, NLE_PDK_COUNT, false, "linear gaussian polynomial precomputed"),
    ROW(knn_method, NLE_KNN_COUNT, true, "exact approx"),
    ROW(metric, NLE_METRIC_COUNT, false, "euclidean cosine correlation precomputed affinities"),
    ROW(model, NLE_MODEL_COUNT, false, "ee ssne tsne sne tee"),
    ROW(init, NLE_INIT_COUNT, true, "pca spectral random given"),
    ROW(step, NLE_STEP_COUNT, true, "line-search fixed"),
    ROW(components, NLE_COMPONENTS_COUNT, true, "error allow join"),
    ROW(symmetrize, NLE_SYMMETRIZE_COUNT, false, "average union mutual"),
    ROW(laplacian, NLE_LAPLACIAN_COUNT, false, "random-walk symmetric unnormalised"),
    ROW(eigen_solver, NLE_EIGEN_COUNT, true, "dense sparse shift-invert block"),
    ROW(landmark_method, NLE_LANDMARKS_COUNT, false, "random thinned kmeans minmax"),
    ROW(pca_solver, NLE_PCA_COUNT, true, "exact randomized"),
    ROW(spectral_method, -1, false, "le lle isomap diffmap ltsa hlle mlle"),
    ROW(opt, -1, true, "sd fp gd lbfgs cg sd-"),
    ROW(repulsion, -1, true, "exact bh fft fgt"),
};
#undef ROW

static void enum_names_round_trip(void) {
  for (size_t e = 0; e < sizeof named_enums / sizeof *named_enums; e++) {
    const named_enum *t = &named_enums[e];
    char names[256];
    snprintf(names, sizeof names, "%s", t->names);
    int v = 0;
    for (char *word = strtok(names, " "); word; word = strtok(NULL, " "), v++) {
      const char *got = t->name(v);
      if (!nle_test(got && !strcmp(got, word) && t->parse(got) == v))
        printf("  %s: value %d is named %s (want %s), which parses to %d\n", t->stem, v, got ? got : "NULL", word,
               got ? t->parse(got) : -1);
    }
    int count = t->count >= 0 ? t->count : v;
    if (!nle_test(v == count)) printf("  %s: %d names listed, its count is %d\n", t->stem, v, count);
    if (!nle_test(!strcmp(t->name(count), "unknown") && !strcmp(t->name(-1), "unknown")))
      printf("  %s: its count %d or -1 has the name %s / %s\n", t->stem, count, t->name(count), t->name(-1));
    nle_test(t->parse("unknown") == -1 && t->parse(NULL) == -1 && t->parse("") == -1);
    if (!nle_test(!strcmp(t->name(NLE_AUTO), t->has_auto ? "auto" : "unknown") &&
                  t->parse("auto") == (t->has_auto ? NLE_AUTO : -1)))
      printf("  %s: NLE_AUTO is named %s, \"auto\" parses to %d\n", t->stem, t->name(NLE_AUTO), t->parse("auto"));
  }
}

/* Each library check of an enum's range refuses its _COUNT, the first value
 * past the list (and an unknown spelling leaves the context's as it was). */
static void enum_counts_refused(void) {
  nle_ctx *ctx = test_ctx(1);
  nle_matf *Y = test_random_matf(20, 3, 1);
  nle_matd *X = test_random_matd(10, 2, 1.0, 2);
  nle_csr *knn = NULL, *W = NULL;
  double S[10], Sx[20];
  nle_test(nle_knn_graph(ctx, Y, 6, NLE_KNN_COUNT, NULL, &knn, NULL) == NLE_ERR_ARG);
  nle_test_ok(nle_knn_graph(ctx, Y, 6, NLE_KNN_EXACT, NULL, &knn, NULL));
  nle_affinity_opts ao;
  nle_affinity_opts_init(&ao);
  ao.kind = NLE_AFF_COUNT;
  nle_test(nle_affinity_graph(ctx, knn, &ao, &W) == NLE_ERR_ARG && !W);
  nle_ea_opts ea;
  nle_ea_opts_init(&ea);
  ea.perplexity = 2;
  ea.root = NLE_ROOT_COUNT;
  nle_ea_result *ear = NULL;
  nle_test(nle_entropic_affinities(ctx, knn, &ea, &ear) == NLE_ERR_ARG);
  nle_ea_result_free(&ear);
  ea.root = NLE_ROOT_HOUSEHOLDER;
  ea.order = NLE_ORDER_COUNT;
  nle_test(nle_entropic_affinities(ctx, knn, &ea, &ear) == NLE_ERR_ARG);
  nle_ea_result_free(&ear);
  nle_test(nle_kernel_sums_exact(ctx, X, NLE_KERNEL_COUNT, S, Sx) == NLE_ERR_ARG);
  nle_mds_opts mo;
  nle_mds_opts_init(&mo);
  mo.dim = 2;
  nle_mds_input in = {.Y = Y};
  nle_mds_result *mr = NULL;
  nle_test(nle_mds(ctx, NLE_MDS_COUNT, &in, &mo, &mr) == NLE_ERR_ARG);
  mo.ties = NLE_TIES_COUNT;
  nle_test(nle_mds(ctx, NLE_MDS_NONMETRIC, &in, &mo, &mr) == NLE_ERR_ARG);
  nle_mds_result_free(&mr);
  nle_kpca_opts ko;
  nle_kpca_opts_init(&ko);
  ko.kernel.kind = NLE_PDK_COUNT;
  nle_kpca_result *kr = NULL;
  nle_test(nle_kpca(ctx, Y, NULL, &ko, &kr) == NLE_ERR_ARG);
  nle_kpca_result_free(&kr);
  ao.kind = NLE_AFF_BINARY;
  nle_test_ok(nle_affinity_graph(ctx, knn, &ao, &W));
  nle_model_spec spec = test_model_spec(NLE_MODEL_COUNT, 1.0, W);
  nle_model *model = NULL;
  nle_test(nle_model_new(ctx, &spec, &model) == NLE_ERR_ARG && !model);
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_CLI);
  nle_ctx_set_option_spelling(ctx, NLE_SPELL_COUNT);
  ao.kind = NLE_AFF_GAUSSIAN;
  ao.sigma = -1;
  nle_csr *W2 = NULL;
  nle_test(nle_affinity_graph(ctx, knn, &ao, &W2) == NLE_ERR_ARG && strstr(nle_ctx_error(ctx), "--sigma"));
  nle_csr_free(&W2);
  nle_csr_free(&W);
  nle_csr_free(&knn);
  nle_matd_free(&X);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

const nle_test_case core_tests[] = {
    {"core/messages_spell_options", messages_spell_options},
    {"core/rng_reproducible", rng_reproducible},
    {"core/rng_distributions", rng_distributions},
    {"core/rng_sample_and_shuffle", rng_sample_and_shuffle},
    {"core/status_names", status_names},
    {"core/enum_names_round_trip", enum_names_round_trip},
    {"core/enum_counts_refused", enum_counts_refused},
    {"core/errors_printable", errors_printable},
    {"core/memory_cap", memory_cap},
    {"core/dense_select", dense_select},
    {"core/csr_transpose", csr_transpose},
    {"core/csr_locality_order", csr_locality_order},
    {"core/log1p_portable", log1p_portable},
    {NULL, NULL}};
