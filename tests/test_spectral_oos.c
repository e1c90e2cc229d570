/* test_spectral_oos.c — the spectral methods' out-of-sample maps against
 * independent references: every method's map at its training points is
 * its training embedding (the Nystrom identity; ISSUE 21, SPEC 4.1); on a
 * circle Laplacian eigenmaps' map of a midpoint is the analytic
 * cos(delta/2)/cos(delta) times the harmonic there; on a straight line
 * Isomap's (and landmark Isomap's) map is the arc length, interpolating
 * and extrapolating; LLE's map is the barycentric combination computed
 * here by LAPACK; the model file round trip, thread invariance, bad input. */
#include "harness.h"
#include "nle_common.h"

#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

static nle_spectral_result *fit(nle_ctx *ctx, nle_spectral_method method, const nle_matf *Y,
                                const nle_spectral_opts *opts) {
  nle_spectral_opts o = *opts;
  o.keep_model = true;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_spectral_result *r = NULL;
  if (nle_spectral_embed(ctx, method, &in, &o, &r)) printf("  fit: %s\n", nle_ctx_error(ctx));
  return r;
}

/* max |F(y_n) - x_n| over the training points, relative to max |x_n|. */
static double training_gap(nle_ctx *ctx, const nle_spectral_result *r, const nle_matf *Y) {
  nle_matd *X = NULL;
  if (nle_spectral_transform(ctx, r->model, Y, &X)) {
    printf("  transform: %s\n", nle_ctx_error(ctx));
    return INFINITY;
  }
  double gap = 0.0, scale = 0.0;
  for (size_t i = 0; i < X->rows * X->cols; i++) {
    gap = fmax(gap, fabs(X->data[i] - r->X->data[i]));
    scale = fmax(scale, fabs(r->X->data[i]));
  }
  nle_matd_free(&X);
  return gap / scale;
}

/* A noisy Swiss roll, N x 3. */
static nle_matf *roll(size_t n, uint64_t seed) {
  nle_matf *Y = NULL;
  nle_matf_alloc(NULL, n, 3, &Y);
  nle_rng rng;
  nle_rng_init(&rng, seed, 1);
  for (size_t i = 0; i < n; i++) {
    double t = 1.5 * M_PI * (1.0 + 2.0 * nle_rng_uniform(&rng)), h = 10.0 * nle_rng_uniform(&rng);
    Y->data[3 * i] = (float)(t * cos(t) + 0.05 * nle_rng_normal(&rng));
    Y->data[3 * i + 1] = (float)h;
    Y->data[3 * i + 2] = (float)(t * sin(t) + 0.05 * nle_rng_normal(&rng));
  }
  return Y;
}

/* Each method, each Laplacian, affinity and rule, dense and Lanczos,
 * kNN and epsilon ball: F(y_n) = x_n. */
static void training_points(void) {
  nle_ctx *ctx = test_ctx(3);
  nle_matf *Y = roll(500, 11);
  struct {
    nle_spectral_method method;
    nle_laplacian_kind laplacian;
    nle_affinity_kind affinity;
    nle_symmetrize_rule rule;
    double radius, alpha;
    int landmarks, time, k;
    const char *what;
  } cases[] = {
      {NLE_SPECTRAL_LE, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 10, "le"},
      {NLE_SPECTRAL_LE, NLE_LAPLACIAN_SYMMETRIC, NLE_AFF_GAUSSIAN, NLE_SYMMETRIZE_UNION, 0, 1, 0, 1, 10, "le sym"},
      {NLE_SPECTRAL_LE, NLE_LAPLACIAN_UNNORMALISED, NLE_AFF_SELF_TUNING, NLE_SYMMETRIZE_MUTUAL, 0, 1, 0, 1, 14,
       "le unnorm"},
      {NLE_SPECTRAL_LE, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_INVERSE, NLE_SYMMETRIZE_AVERAGE, 2.5, 1, 0, 1, 10,
       "le radius"},
      {NLE_SPECTRAL_DIFFMAP, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_GAUSSIAN, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 10,
       "diffmap"},
      {NLE_SPECTRAL_DIFFMAP, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_UNION, 0, 0.5, 0, 3, 10,
       "diffmap a=0.5 t=3"},
      {NLE_SPECTRAL_LE, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_ENTROPIC, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 15,
       "le entropic"},
      {NLE_SPECTRAL_DIFFMAP, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_ENTROPIC, NLE_SYMMETRIZE_UNION, 0, 1, 0, 1, 15,
       "diffmap entropic"},
      {NLE_SPECTRAL_ISOMAP, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 10,
       "isomap"},
      {NLE_SPECTRAL_ISOMAP, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_AVERAGE, 0, 1, 60, 1, 10,
       "landmark isomap"},
      {NLE_SPECTRAL_LLE, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 10, "lle"},
      {NLE_SPECTRAL_MLLE, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 10, "mlle"},
      {NLE_SPECTRAL_LTSA, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 10, "ltsa"},
      {NLE_SPECTRAL_HLLE, NLE_LAPLACIAN_RANDOM_WALK, NLE_AFF_BINARY, NLE_SYMMETRIZE_AVERAGE, 0, 1, 0, 1, 10, "hlle"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    for (int solver = 0; solver < 2; solver++) {
      nle_spectral_opts o;
      nle_spectral_opts_init(&o);
      o.k = cases[c].k;
      o.laplacian = cases[c].laplacian;
      o.affinity = cases[c].affinity;
      o.symmetrize = cases[c].rule;
      o.radius = cases[c].radius;
      o.alpha = cases[c].alpha;
      o.landmarks = cases[c].landmarks;
      o.diffusion_time = cases[c].time;
      o.knn_method = NLE_KNN_EXACT;
      o.components = NLE_COMPONENTS_ALLOW;
      o.solver = solver ? NLE_EIGEN_SPARSE : NLE_EIGEN_DENSE;
      if (cases[c].method == NLE_SPECTRAL_HLLE) o.dim = 2;
      nle_spectral_result *r = fit(ctx, cases[c].method, Y, &o);
      if (!nle_test(r != NULL)) continue;
      double gap = training_gap(ctx, r, Y);
      if (!nle_test(gap < 1e-6)) printf("  %s (%s): training points mapped %g off\n", cases[c].what,
                                        solver ? "sparse" : "dense", gap);
      nle_spectral_result_free(&r);
    }
  }
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Wide data searched among principal components (the recipe of large
 * inputs, forced here): new points' candidates come from the same
 * components and the reverse edges from a lower bound there, confirmed in
 * Y, so the training points still map to themselves. */
static void training_points_pca(void) {
  nle_ctx *ctx = test_ctx(5);
  nle_matf *Y = test_random_matf(400, 40, 21);
  for (int method = 0; method < 2; method++) {
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.k = 8;
    o.pca_dims = 10;
    o.pca_candidates = 30;
    o.knn_method = NLE_KNN_EXACT;
    nle_spectral_result *r = fit(ctx, method ? NLE_SPECTRAL_ISOMAP : NLE_SPECTRAL_LE, Y, &o);
    if (!nle_test(r != NULL && r->resolved.pca_dims == 10)) continue;
    double gap = training_gap(ctx, r, Y);
    if (!nle_test(gap < 1e-6)) printf("  %s among components: training points %g off\n", method ? "isomap" : "le", gap);
    nle_spectral_result_free(&r);
  }
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* LE on N points equally spaced on a circle, k = 2 (binary): the random
 * walk's eigenvectors are cos and sin of the angle with eigenvalue
 * 1 - cos(delta), delta = 2 pi / N. A new point at the middle of an arc
 * has its two ends as neighbours, and both list it (it is nearer than
 * their own second neighbour): weight 1 each, degree 2, so
 *   x(y) = (x_a + x_b) / (2 cos delta) = cos(delta/2) / cos(delta) h(theta_y)
 * for the training harmonic h (whatever its rotation in the eigenspace). */
static void circle_analytic(void) {
  nle_ctx *ctx = test_ctx(7);
  enum { N = 64 };
  nle_matf *Y = NULL, *Q = NULL;
  nle_test_ok(nle_matf_alloc(ctx, N, 2, &Y));
  nle_test_ok(nle_matf_alloc(ctx, N, 2, &Q));
  double delta = 2 * M_PI / N;
  for (size_t i = 0; i < N; i++) {
    Y->data[2 * i] = (float)cos(delta * (double)i), Y->data[2 * i + 1] = (float)sin(delta * (double)i);
    Q->data[2 * i] = (float)cos(delta * (i + 0.5)), Q->data[2 * i + 1] = (float)sin(delta * (i + 0.5));
  }
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 2;
  o.knn_method = NLE_KNN_EXACT;
  nle_spectral_result *r = fit(ctx, NLE_SPECTRAL_LE, Y, &o);
  nle_matd *X = NULL;
  if (nle_test(r != NULL) && nle_test_ok(nle_spectral_transform(ctx, r->model, Q, &X))) {
    /* the training map is A (cos, sin) for a 2 x 2 A; fit A on two points */
    double worst = 0.0, ratio = cos(delta / 2) / cos(delta);
    for (size_t i = 0; i < N; i++)
      for (size_t t = 0; t < 2; t++) {
        /* h(theta) = r->X at theta interpolated exactly: A (cos, sin) */
        double c0 = r->X->data[0 * 2 + t], s0 = (r->X->data[(N / 4) * 2 + t]); /* A's columns */
        double th = delta * (i + 0.5), want = ratio * (c0 * cos(th) + s0 * sin(th));
        worst = fmax(worst, fabs(X->data[i * 2 + t] - want));
      }
    if (!nle_test(worst < 1e-5 * fabs(r->X->data[0]) + 1e-9)) printf("  midpoints off the analytic map by %g\n", worst);
  }
  nle_matd_free(&X);
  nle_spectral_result_free(&r);
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&ctx);
}

/* Isomap of points along a straight segment in 3-D (irregular spacing):
 * geodesics are |t - t'|, 1-D Isomap is t - mean(t) up to sign, and the
 * map of a new point at t* (inside, or beyond an end: its geodesic runs
 * through the end point) is t* - mean(t), for Isomap and landmark Isomap
 * (mean over the landmarks). */
static void isomap_line(void) {
  nle_ctx *ctx = test_ctx(9);
  enum { N = 120, M = 7 };
  nle_matf *Y = NULL, *Q = NULL;
  nle_test_ok(nle_matf_alloc(ctx, N, 3, &Y));
  nle_test_ok(nle_matf_alloc(ctx, M, 3, &Q));
  const double dir[3] = {2.0 / 7, 3.0 / 7, 6.0 / 7}; /* unit */
  double t[N], mean = 0.0, ts[M] = {-0.3, 0.0, 1.7, 20.3, 40.1, 61.0, 59.5};
  for (size_t i = 0; i < N; i++) {
    t[i] = 0.5 * (double)i + 0.2 * sin(1.3 * (double)i);
    for (int c = 0; c < 3; c++) Y->data[3 * i + c] = (float)(1.0 + t[i] * dir[c]);
  }
  for (size_t i = 0; i < N; i++) t[i] = (double)0; /* recompute from the stored floats: the exact geometry */
  for (size_t i = 0; i < N; i++) {
    double d = 0;
    for (int c = 0; c < 3; c++) d += ((double)Y->data[3 * i + c] - 1.0) * dir[c];
    t[i] = d;
    mean += d / N;
  }
  for (size_t q = 0; q < M; q++)
    for (int c = 0; c < 3; c++) Q->data[3 * q + c] = (float)(1.0 + ts[q] * dir[c]);
  for (int landmarks = 0; landmarks <= 30; landmarks += 30) {
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.k = 4;
    o.dim = 1;
    o.landmarks = landmarks;
    o.knn_method = NLE_KNN_EXACT;
    nle_spectral_result *r = fit(ctx, NLE_SPECTRAL_ISOMAP, Y, &o);
    nle_matd *X = NULL;
    if (!nle_test(r != NULL) || !nle_test_ok(nle_spectral_transform(ctx, r->model, Q, &X))) continue;
    /* centred on the mean of all points (Isomap) or of the landmarks:
     * the offset from the training map itself */
    double sign = r->X->data[N - 1] > r->X->data[0] ? 1.0 : -1.0, worst = 0.0;
    mean = t[0] - sign * r->X->data[0];
    for (size_t q = 0; q < M; q++) {
      double tq = 0;
      for (int c = 0; c < 3; c++) tq += ((double)Q->data[3 * q + c] - 1.0) * dir[c];
      worst = fmax(worst, fabs(sign * X->data[q] - (tq - mean)));
    }
    if (!nle_test(worst < 1e-4)) printf("  %sIsomap's map off the line's arc length by %g\n", landmarks ? "landmark " : "", worst);
    nle_matd_free(&X);
    nle_spectral_result_free(&r);
  }
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&ctx);
}

/* LLE's map with k = 4 neighbours in 3-D and a vanishing regulariser: the
 * weights are y's affine coordinates in its 4 nearest training points
 * (unique), solved here by LAPACK from [y_j; 1] w = [y; 1], and the map is
 * sum_j w_j x_j. */
static void lle_barycentric(void) {
  nle_ctx *ctx = test_ctx(13);
  enum { N = 300, M = 20 };
  nle_matf *Y = test_random_matf(N, 3, 31), *Q = test_random_matf(M, 3, 32);
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 4;
  o.reg = 1e-12;
  o.knn_method = NLE_KNN_EXACT;
  nle_spectral_result *r = fit(ctx, NLE_SPECTRAL_LLE, Y, &o);
  nle_matd *X = NULL;
  if (nle_test(r != NULL) && nle_test_ok(nle_spectral_transform(ctx, r->model, Q, &X))) {
    double worst = 0.0, scale = 0.0;
    for (size_t q = 0; q < M; q++) {
      int nb[4] = {-1, -1, -1, -1};
      double nd[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
      for (int i = 0; i < N; i++) { /* brute force, insertion into the 4 best */
        double d = 0;
        for (int c = 0; c < 3; c++) d += pow((double)Q->data[3 * q + c] - (double)Y->data[3 * i + c], 2);
        for (int a = 0; a < 4; a++)
          if (d < nd[a]) {
            for (int b = 3; b > a; b--) nd[b] = nd[b - 1], nb[b] = nb[b - 1];
            nd[a] = d, nb[a] = i;
            break;
          }
      }
      double A[16], w[4];
      int ipiv[4];
      for (int c = 0; c < 3; c++) {
        for (int a = 0; a < 4; a++) A[c * 4 + a] = Y->data[3 * nb[a] + c];
        w[c] = Q->data[3 * q + c];
      }
      for (int a = 0; a < 4; a++) A[12 + a] = 1.0;
      w[3] = 1.0;
      nle_test(LAPACKE_dgesv(LAPACK_ROW_MAJOR, 4, 1, A, 4, ipiv, w, 1) == 0);
      for (int t = 0; t < 2; t++) {
        double want = 0;
        for (int a = 0; a < 4; a++) want += w[a] * r->X->data[nb[a] * 2 + t];
        worst = fmax(worst, fabs(X->data[q * 2 + t] - want));
        scale = fmax(scale, fabs(want));
      }
    }
    if (!nle_test(worst < 1e-6 * scale)) printf("  LLE's map off the barycentric combination by %g (of %g)\n", worst, scale);
  }
  nle_matd_free(&X);
  nle_spectral_result_free(&r);
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&ctx);
}

/* The model file: the same map after a round trip, with the data copied
 * or referenced (then refused until the same data is attached); a damaged
 * byte refused; 1 and 2 threads the same bits. */
/* Every method of the table (a new one included, by its row alone): its
 * name parses back to it, its map of the training points is its embedding,
 * and a saved and loaded model maps new points to the same bits. */
static void every_method_of_the_table(void) {
  nle_ctx *ctx = test_ctx(5);
  nle_matf *Y = roll(300, 51), *Q = roll(40, 52);
  int methods = 0;
  for (int id = 0; strcmp(nle_spectral_method_name((nle_spectral_method)id), "unknown"); id++, methods++) {
    const char *name = nle_spectral_method_name((nle_spectral_method)id);
    nle_test(nle_spectral_method_parse(name) == id);
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.knn_method = NLE_KNN_EXACT;
    o.solver = NLE_EIGEN_DENSE;
    nle_spectral_result *r = fit(ctx, (nle_spectral_method)id, Y, &o);
    if (!nle_test(r != NULL)) continue;
    double gap = training_gap(ctx, r, Y);
    if (!nle_test(gap < 1e-6)) printf("  %s: the map of the training points is %g off\n", name, gap);
    const char *map = nle_spectral_model_map(r->model);
    nle_test(strcmp(map, "none") != 0);
    nle_matd *X[2] = {NULL, NULL};
    nle_spectral_model *copy = NULL;
    const char *path = test_path("every-method.nle");
    nle_test_ok(nle_spectral_transform(ctx, r->model, Q, &X[0]));
    nle_test_ok(nle_spectral_model_save(ctx, r->model, path, true));
    if (nle_test_ok(nle_spectral_model_load(ctx, path, &copy))) {
      nle_test(copy->method == (nle_spectral_method)id);
      nle_test_ok(nle_spectral_transform(ctx, copy, Q, &X[1]));
      if (!nle_test(X[0] && X[1] && !memcmp(X[0]->data, X[1]->data, X[0]->rows * X[0]->cols * sizeof(double))))
        printf("  %s: the loaded model maps new points elsewhere\n", name);
    }
    for (int i = 0; i < 2; i++) nle_matd_free(&X[i]);
    nle_spectral_model_free(&copy);
    nle_spectral_result_free(&r);
    printf("  %s: maps new points by %s\n", name, map);
  }
  nle_test(methods >= 7);
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&ctx);
}

static void model_file_and_threads(void) {
  nle_ctx *ctx = test_ctx(17);
  nle_matf *Y = roll(600, 41), *Q = roll(50, 42), *other = roll(600, 43);
  nle_spectral_method methods[] = {NLE_SPECTRAL_LE, NLE_SPECTRAL_DIFFMAP, NLE_SPECTRAL_ISOMAP, NLE_SPECTRAL_LLE};
  for (size_t m = 0; m < 4; m++) {
    nle_spectral_opts o;
    nle_spectral_opts_init(&o);
    o.knn_method = NLE_KNN_EXACT;
    o.landmarks = methods[m] == NLE_SPECTRAL_ISOMAP ? 80 : 0;
    o.affinity = methods[m] == NLE_SPECTRAL_DIFFMAP ? NLE_AFF_SELF_TUNING
                 : methods[m] == NLE_SPECTRAL_LE     ? NLE_AFF_ENTROPIC
                                                     : NLE_AFF_BINARY;
    nle_spectral_result *r = fit(ctx, methods[m], Y, &o);
    if (!nle_test(r != NULL)) continue;
    nle_matd *X[3] = {NULL, NULL, NULL};
    nle_spectral_model *copy = NULL, *ref = NULL;
    const char *with = test_path("with-data.nle"), *without = test_path("without-data.nle");
    nle_test_ok(nle_spectral_transform(ctx, r->model, Q, &X[0]));
    nle_test_ok(nle_spectral_model_save(ctx, r->model, with, true));
    nle_test_ok(nle_spectral_model_save(ctx, r->model, without, false));
    char kind[32];
    nle_test(nle_file_kind(ctx, with, kind, sizeof kind) == NLE_OK && !strcmp(kind, "spectral-model"));
    if (nle_test_ok(nle_spectral_model_load(ctx, with, &copy))) {
      nle_ctx_set_threads(ctx, 2);
      nle_test_ok(nle_spectral_transform(ctx, copy, Q, &X[1]));
      nle_ctx_set_threads(ctx, 1);
      nle_test(X[0] && X[1] && !memcmp(X[0]->data, X[1]->data, 50 * 2 * sizeof(double)));
    }
    if (nle_test_ok(nle_spectral_model_load(ctx, without, &ref))) {
      nle_test(nle_spectral_transform(ctx, ref, Q, &X[2]) == NLE_ERR_ARG);
      nle_test(nle_spectral_model_attach_data(ctx, ref, other) == NLE_ERR_VALUE);
      nle_test_ok(nle_spectral_model_attach_data(ctx, ref, Y));
      nle_test_ok(nle_spectral_transform(ctx, ref, Q, &X[2]));
      nle_test(X[0] && X[2] && !memcmp(X[0]->data, X[2]->data, 50 * 2 * sizeof(double)));
    }
    { /* every header bit and every 97th byte damaged: each copy refused */
      char original[4096]; /* test_path's buffer is reused by the copies */
      snprintf(original, sizeof original, "%s", with);
      int tried = 0, accepted = damaged_copies_accepted(ctx, original, load_spectral_model_file, &tried);
      if (!nle_test(tried > 384 && accepted == 0)) printf("  spectral model: %d of %d damaged copies accepted\n", accepted, tried);
    }
    /* one flipped byte in the middle of the file: a CRC names the damage */
    FILE *f = fopen(with, "r+b");
    if (nle_test(f != NULL)) {
      fseek(f, 0, SEEK_END);
      long len = ftell(f);
      fseek(f, len / 2, SEEK_SET);
      int byte = fgetc(f);
      fseek(f, len / 2, SEEK_SET);
      fputc(byte ^ 0x10, f);
      fclose(f);
      nle_spectral_model *bad = NULL;
      nle_test(nle_spectral_model_load(ctx, with, &bad) == NLE_ERR_FORMAT && bad == NULL);
    }
    for (int i = 0; i < 3; i++) nle_matd_free(&X[i]);
    nle_spectral_model_free(&copy);
    nle_spectral_model_free(&ref);
    nle_spectral_result_free(&r);
  }
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_matf_free(&other);
  nle_ctx_free(&ctx);
}

/* The entropic graph (--affinity entropic) against the public pieces put
 * together here: nle_entropic_affinities on the exact kNN graph, then
 * (P + P^T) / 2 by nle_affinity_symmetrize, given as affinities: the same
 * eigenvalues and embedding. Then a new point's p_{n|y} is calibrated to the
 * perplexity: at a training point the map is its embedding (above), and a
 * point near one maps near it. */
static void entropic_graph(void) {
  nle_ctx *ctx = test_ctx(23);
  nle_matf *Y = roll(400, 61);
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.k = 30;
  o.perplexity = 10;
  o.affinity = NLE_AFF_ENTROPIC;
  o.knn_method = NLE_KNN_EXACT;
  nle_spectral_result *r = fit(ctx, NLE_SPECTRAL_LE, Y, &o), *ref = NULL;
  nle_csr *knn = NULL, *W = NULL;
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = 30;
  nle_ea_opts eo;
  nle_ea_opts_init(&eo);
  eo.perplexity = 10;
  nle_ea_result *ea = NULL;
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &knn));
  nle_test(nle_entropic_affinities(ctx, knn, &eo, &ea) >= 0);
  if (ea) nle_test_ok(nle_affinity_symmetrize(ctx, ea->P, false, &W));
  nle_spectral_opts_init(&o);
  nle_spectral_input in = {NULL, NULL, W};
  if (W) nle_test_ok(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &ref));
  if (nle_test(r && ref)) {
    for (int t = 0; t < 3; t++) nle_test_rel(r->eigenvalues[t], ref->eigenvalues[t], 1e-10);
    double worst = 0.0;
    for (size_t i = 0; i < 400 * 2; i++) worst = fmax(worst, fabs(r->X->data[i] - ref->X->data[i]));
    if (!nle_test(worst < 1e-8)) printf("  entropic graph's embedding off the reference by %g\n", worst);
    /* a new point's map against the Nystrom formula assembled here: its 30
     * nearest (nle_knn_query), its p_{n|y} by the library's root finder
     * (nle_entropic_affinities on that 1 x N graph), p_{y|n} from the
     * training beta_n and n's own neighbours, averaged; then
     * x_t = sum_n w x_t(n) / ((1 - lambda_t) d_y) */
    nle_matf *Q = NULL;
    nle_matd *X = NULL;
    nle_csr *qk = NULL;
    nle_ea_result *qa = NULL;
    nle_test_ok(nle_matf_alloc(ctx, 1, 3, &Q));
    for (int c = 0; c < 3; c++) Q->data[c] = 0.5f * (Y->data[21 + c] + Y->data[3 * knn->colind[knn->rowptr[7]] + c]) + 0.1f;
    nle_test_ok(nle_knn_query(ctx, Y, Q, 30, &qk));
    eo.order = NLE_ORDER_BOUNDS; /* query points: each from its own bounds */
    nle_test(nle_entropic_affinities(ctx, qk, &eo, &qa) >= 0);
    double *w = calloc(400, sizeof(double));
    for (int64_t q = 0; qa && q < 30; q++) w[qk->colind[q]] += 0.5 * nle_csr_value(qa->P, q);
    for (int n = 0; n < 400; n++) { /* does n list y? y nearer than n's 30th */
      double d2 = 0;
      for (int c = 0; c < 3; c++) d2 += pow((double)Q->data[c] - (double)Y->data[3 * n + c], 2);
      if (!((float)d2 <= nle_csr_value(knn, knn->rowptr[n + 1] - 1))) continue;
      double z = 0;
      for (int64_t q = knn->rowptr[n]; q < knn->rowptr[n + 1]; q++) z += exp(-ea->beta[n] * nle_csr_value(knn, q));
      w[n] += 0.5 * exp(-ea->beta[n] * (double)(float)d2) / z;
    }
    double dy = 0, want[2] = {0, 0};
    for (int n = 0; n < 400; n++) {
      dy += w[n];
      for (int t = 0; t < 2; t++) want[t] += w[n] * r->X->data[2 * n + t];
    }
    if (nle_test_ok(nle_spectral_transform(ctx, r->model, Q, &X))) {
      double worst = 0, scale = 0;
      for (int t = 0; t < 2; t++) {
        want[t] /= (1 - r->eigenvalues[t + 1]) * dy;
        worst = fmax(worst, fabs(X->data[t] - want[t]));
        scale = fmax(scale, fabs(want[t]));
      }
      if (!nle_test(worst < 1e-7 * scale)) printf("  entropic map %g off the formula assembled here (of %g)\n", worst, scale);
    }
    free(w);
    nle_csr_free(&qk);
    nle_ea_result_free(&qa);
    nle_matd_free(&X);
    nle_matf_free(&Q);
  }
  /* the perplexity needs more neighbours; entropic needs k nearest */
  nle_spectral_opts_init(&o);
  o.affinity = NLE_AFF_ENTROPIC;
  o.perplexity = 12;
  nle_spectral_input pts = {Y, NULL, NULL};
  nle_spectral_result *bad = NULL;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &pts, &o, &bad) == NLE_ERR_ARG && !bad);
  nle_test(strstr(nle_ctx_error(ctx), "perplexity=12 needs more than it in neighbours: neighbors=10") != NULL);
  o.perplexity = NLE_AUTO;
  o.radius = 3;
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &pts, &o, &bad) == NLE_ERR_ARG && !bad);
  nle_test(strstr(nle_ctx_error(ctx), "entropic affinities need k nearest neighbours") != NULL);
  nle_spectral_result_free(&r);
  nle_spectral_result_free(&ref);
  nle_ea_result_free(&ea);
  nle_csr_free(&knn);
  nle_csr_free(&W);
  nle_matf_free(&Y);
  nle_ctx_free(&ctx);
}

/* Spectral clustering's model: LE's map then the nearest centre. On four
 * separated blobs the training points get their k-means labels back, new
 * points from each blob the label of its training points, and the same
 * after a round trip through the file; a model that is not a clustering's
 * is refused. */
static void cluster_assign(void) {
  nle_ctx *ctx = test_ctx(29);
  enum { N = 800, M = 40 };
  nle_matf *Y = NULL, *Q = NULL;
  nle_test_ok(nle_matf_alloc(ctx, N, 5, &Y));
  nle_test_ok(nle_matf_alloc(ctx, M, 5, &Q));
  nle_rng rng;
  nle_rng_init(&rng, 29, 3);
  for (size_t i = 0; i < N + M; i++) { /* blob i % 4 at 10 e_(i % 4) */
    float *row = i < N ? Y->data + i * 5 : Q->data + (i - N) * 5;
    for (int c = 0; c < 5; c++) row[c] = (float)(nle_rng_normal(&rng) + (c == (int)(i % 4) ? 10.0 : 0.0));
  }
  nle_cluster_opts co;
  nle_cluster_opts_init(&co);
  co.clusters = 4;
  co.spectral.keep_model = true;
  co.spectral.knn_method = NLE_KNN_EXACT;
  nle_spectral_input in = {Y, NULL, NULL};
  nle_cluster_result *r = NULL;
  nle_test_ok(nle_spectral_cluster(ctx, &in, &co, &r));
  nle_matd *X = NULL, *Xq = NULL;
  int32_t lab[N], labq[M], labq2[M];
  nle_spectral_model *m = r ? r->embedding->model : NULL, *loaded = NULL;
  if (nle_test(m && m->centres && m->clusters == 4)) {
    double mean[4][3] = {{0}}, count[4] = {0}, worst = 0.0; /* the centres: each cluster's mean row */
    for (int i = 0; i < N; i++) {
      count[r->labels[i]] += 1;
      for (int t = 0; t < 3; t++) mean[r->labels[i]][t] += r->embedding->X->data[i * 3 + t];
    }
    for (int c = 0; c < 4; c++)
      for (int t = 0; t < 3; t++) worst = fmax(worst, fabs(mean[c][t] / count[c] - m->centres[c * 3 + t]));
    nle_test(m->dim == 3 && worst < 1e-12);
    nle_test_ok(nle_spectral_transform(ctx, m, Y, &X));
    nle_test_ok(nle_spectral_assign(ctx, m, X, lab));
    nle_test(!memcmp(lab, r->labels, sizeof lab));
    nle_test_ok(nle_spectral_transform(ctx, m, Q, &Xq));
    nle_test_ok(nle_spectral_assign(ctx, m, Xq, labq));
    int right = 1;
    for (int q = 0; q < M; q++) right &= labq[q] == r->labels[(N + q) % 4]; /* point j % 4 is blob j % 4 */
    nle_test(right);
    const char *path = test_path("cluster.nle");
    nle_test_ok(nle_spectral_model_save(ctx, m, path, true));
    if (nle_test_ok(nle_spectral_model_load(ctx, path, &loaded))) {
      nle_matd_free(&Xq);
      nle_test_ok(nle_spectral_transform(ctx, loaded, Q, &Xq));
      nle_test_ok(nle_spectral_assign(ctx, loaded, Xq, labq2));
      nle_test(!memcmp(labq, labq2, sizeof labq));
    }
  }
  /* an embedding's model has no centres */
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.components = NLE_COMPONENTS_ALLOW; /* four blobs, four components */
  nle_spectral_result *le = fit(ctx, NLE_SPECTRAL_LE, Y, &o);
  if (nle_test(le && X)) {
    nle_test(nle_spectral_assign(ctx, le->model, X, lab) == NLE_ERR_ARG);
    nle_test(strstr(nle_ctx_error(ctx), "not a clustering's") != NULL);
  }
  nle_spectral_result_free(&le);
  nle_spectral_model_free(&loaded);
  nle_matd_free(&X);
  nle_matd_free(&Xq);
  nle_cluster_result_free(&r);
  nle_matf_free(&Y);
  nle_matf_free(&Q);
  nle_ctx_free(&ctx);
}

static void bad_input(void) {
  nle_ctx *ctx = test_ctx(19);
  nle_matf *Y = roll(200, 51), *wide = test_random_matf(3, 4, 52), *far = NULL;
  nle_spectral_opts o;
  nle_spectral_opts_init(&o);
  o.radius = 5.0;
  nle_spectral_result *r = fit(ctx, NLE_SPECTRAL_LE, Y, &o);
  nle_matd *X = NULL;
  if (nle_test(r != NULL)) {
    nle_test(nle_spectral_transform(ctx, r->model, wide, &X) == NLE_ERR_ARG && X == NULL);
    nle_test(strstr(nle_ctx_error(ctx), "columns") != NULL);
    nle_test_ok(nle_matf_alloc(ctx, 2, 3, &far));
    far->data[0] = far->data[1] = far->data[2] = 1e3f; /* first row far away, second at the origin */
    far->data[3] = far->data[4] = far->data[5] = 0.0f;
    nle_test(nle_spectral_transform(ctx, r->model, far, &X) == NLE_ERR_VALUE && X == NULL);
    nle_test(strstr(nle_ctx_error(ctx), "new point (row) 0 has no edge") != NULL);
    far->data[4] = NAN;
    nle_test(nle_spectral_transform(ctx, r->model, far, &X) == NLE_ERR_VALUE);
    nle_test(strstr(nle_ctx_error(ctx), "not finite") != NULL);
  }
  nle_spectral_result_free(&r);
  /* a model needs the points, not only a graph */
  nle_csr *knn = NULL;
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  nle_test_ok(nle_knn_exact(ctx, Y, &ko, &knn));
  nle_spectral_opts_init(&o);
  o.keep_model = true;
  nle_spectral_input in = {NULL, knn, NULL};
  nle_test(nle_spectral_embed(ctx, NLE_SPECTRAL_LE, &in, &o, &r) == NLE_ERR_ARG && r == NULL);
  nle_test(strstr(nle_ctx_error(ctx), "a model for new points needs the points") != NULL);
  nle_csr_free(&knn);
  nle_matf_free(&Y);
  nle_matf_free(&wide);
  nle_matf_free(&far);
  nle_ctx_free(&ctx);
}

const nle_test_case spectral_oos_tests[] = {
    {"spectral_oos/training_points", training_points},
    {"spectral_oos/training_points_pca", training_points_pca},
    {"spectral_oos/circle_analytic", circle_analytic},
    {"spectral_oos/isomap_line", isomap_line},
    {"spectral_oos/lle_barycentric", lle_barycentric},
    {"spectral_oos/model_file_and_threads", model_file_and_threads},
    {"spectral_oos/every_method_of_the_table", every_method_of_the_table},
    {"spectral_oos/entropic_graph", entropic_graph},
    {"spectral_oos/cluster_assign", cluster_assign},
    {"spectral_oos/bad_input", bad_input},
    {NULL, NULL},
};
