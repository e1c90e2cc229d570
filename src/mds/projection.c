/* projection.c — the out-of-sample maps of the distance and kernel methods
 * (nlembed/mds.h): x(y) = A phi(y), phi linear, triangulation (landmark
 * MDS; de Silva and Tenenbaum 2004, eq. 3) or a centred kernel row (kernel
 * PCA and kernel LDA; dissertation eq. 4.18 applied to y's row), and its
 * file. */
#include "mds_internal.h"
#include "../io/model_file.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TRANSFORM_ROWS = 1024 };

nle_status nle__projection_new(nle_ctx *ctx, const char *method, nle_map_kind map, size_t m, size_t D, size_t dim,
                               const nle_matf *R, nle_projection_model **out) {
  nle_projection_model *p = nle__calloc(ctx, 1, sizeof *p, "the projection model");
  if (!p) return NLE_ERR_NOMEM;
  snprintf(p->method, sizeof p->method, "%s", method);
  p->map = map, p->m = m, p->D = D, p->dim = dim;
  nle_pdkernel_init(&p->kernel);
  size_t cols = map == NLE_MAP_LINEAR ? D : m;
  p->mean = nle__calloc(ctx, cols ? cols : 1, sizeof(double), "the projection model");
  p->A = nle__calloc(ctx, dim * cols, sizeof(double), "the projection model");
  nle_status s = p->mean && p->A ? NLE_OK : NLE_ERR_NOMEM;
  if (!s && R) s = nle_matf_alloc(ctx, R->rows, R->cols, &p->R);
  if (!s && R) memcpy(p->R->data, R->data, R->rows * R->cols * sizeof(float));
  if (s) {
    nle_projection_model_free(&p);
    return s;
  }
  *out = p;
  return NLE_OK;
}

void nle_projection_model_free(nle_projection_model **p) {
  if (!p || !*p) return;
  nle_matf_free(&(*p)->R);
  free((*p)->mean);
  free((*p)->A);
  free((*p)->coef), free((*p)->intercept), free((*p)->class_labels);
  free(*p);
  *p = NULL;
}

/* x = A phi for the rows of Phi (M x cols) into X's rows from `first`. */
static void apply_map(const nle_projection_model *p, const double *Phi, size_t M, size_t cols, nle_matd *X,
                      size_t first) {
  if (M)
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)p->dim, (int)cols, 1.0, Phi, (int)cols, p->A,
                (int)cols, 0.0, X->data + first * p->dim, (int)p->dim);
}

/* The kernel map's phi from y's kernel row (in place). */
static void centre_kernel_rows(const nle_projection_model *p, double *K, size_t M) {
  for (size_t i = 0; i < M; i++) {
    double *row = K + i * p->m, mean_y = 0;
    for (size_t l = 0; l < p->m; l++) mean_y += row[l];
    mean_y /= (double)p->m;
    for (size_t l = 0; l < p->m; l++) row[l] = row[l] - p->mean[l] - mean_y + p->grand;
  }
}

nle_status nle_projection_transform(nle_ctx *ctx, const nle_projection_model *p, const nle_matf *Y, nle_matd **X) {
  if (!p || !Y || !X) return nle__fail(ctx, NLE_ERR_ARG, "transform: NULL argument");
  *X = NULL;
  if (Y->cols != p->D)
    return nle__fail(ctx, NLE_ERR_VALUE, "transform: new points have %zu columns, the model was trained on %zu",
                     Y->cols, p->D);
  nle_status s = nle__check_finite_rows(ctx, "transform", Y);
  if (s) return s;
  if (p->map != NLE_MAP_LINEAR && (!p->R || p->kernel.kind == NLE_PDK_PRECOMPUTED))
    return nle__fail(ctx, NLE_ERR_ARG, "transform: the %s model has no reference points (a precomputed kernel: give "
                     "the new points' kernel rows)", p->method);
  /* by blocks of rows: the features of a block (rows x cols) at a time,
   * then one GEMM */
  size_t M = Y->rows, D = p->D, cols = p->map == NLE_MAP_LINEAR ? D : p->m;
  size_t block = M < TRANSFORM_ROWS ? (M ? M : 1) : TRANSFORM_ROWS;
  s = nle__check_memory(ctx, (double)block * (double)cols * sizeof(double), "the new points' features");
  double *Phi = s ? NULL : nle__malloc(ctx, block * cols * sizeof(double), "the new points' features");
  if (!s && !Phi) s = NLE_ERR_NOMEM;
  if (!s) s = nle_matd_alloc(ctx, M, p->dim, X);
  for (size_t r0 = 0; !s && r0 < M; r0 += block) {
    size_t rows = M - r0 < block ? M - r0 : block;
    nle_matf view = {rows, D, Y->data + r0 * D};
    if (p->map == NLE_MAP_LINEAR) {
      for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < D; c++) Phi[i * D + c] = (double)view.data[i * D + c] - p->mean[c];
    } else if (p->map == NLE_MAP_TRIANGULATION) { /* -1/2 (|y - r_l|^2 - mean_l) */
      s = nle__pairwise(ctx, &view, p->R, NLE__PAIR_SQDIST, NULL, Phi);
      for (size_t i = 0; !s && i < rows; i++)
        for (size_t l = 0; l < p->m; l++) Phi[i * p->m + l] = -0.5 * (Phi[i * p->m + l] - p->mean[l]);
    } else {
      s = nle__pairwise(ctx, &view, p->R, NLE__PAIR_KERNEL, &p->kernel, Phi);
      if (!s) centre_kernel_rows(p, Phi, rows);
    }
    if (!s) apply_map(p, Phi, rows, cols, *X, r0);
  }
  free(Phi);
  if (s) nle_matd_free(X);
  return s;
}

nle_status nle_projection_decision(nle_ctx *ctx, const nle_projection_model *p, const nle_matf *Y, nle_matd **scores,
                                   nle_matd **proba) {
  if (!p || !Y || !scores) return nle__fail(ctx, NLE_ERR_ARG, "decision: NULL argument");
  *scores = NULL;
  if (proba) *proba = NULL;
  if (!p->classes || !p->coef)
    return nle__fail(ctx, NLE_ERR_ARG, "decision: the %s model is not a classifier", p->method);
  /* the classifier is a map like the model's: its coef rows for A, dim for
   * classes, its intercepts added */
  nle_projection_model view = *p;
  view.A = p->coef, view.dim = p->classes;
  nle_status s = nle_projection_transform(ctx, &view, Y, scores);
  for (size_t i = 0; !s && i < Y->rows; i++)
    for (size_t c = 0; c < p->classes; c++) (*scores)->data[i * p->classes + c] += p->intercept[c];
  if (!s && proba) s = nle_matd_alloc(ctx, Y->rows, p->classes, proba);
  for (size_t i = 0; !s && proba && i < Y->rows; i++) { /* softmax, from the largest score */
    const double *z = (*scores)->data + i * p->classes;
    double *pr = (*proba)->data + i * p->classes, top = z[0], sum = 0;
    for (size_t c = 1; c < p->classes; c++) top = fmax(top, z[c]);
    for (size_t c = 0; c < p->classes; c++) sum += pr[c] = exp(z[c] - top);
    for (size_t c = 0; c < p->classes; c++) pr[c] /= sum;
  }
  if (s) nle_matd_free(scores);
  return s;
}

nle_status nle_projection_transform_kernel(nle_ctx *ctx, const nle_projection_model *p, const nle_matd *Knew,
                                           nle_matd **X) {
  if (!p || !Knew || !X) return nle__fail(ctx, NLE_ERR_ARG, "transform: NULL argument");
  *X = NULL;
  if (p->map != NLE_MAP_KERNEL) return nle__fail(ctx, NLE_ERR_ARG, "transform: the %s model is not a kernel map", p->method);
  if (Knew->cols != p->m)
    return nle__fail(ctx, NLE_ERR_VALUE, "transform: kernel rows of %zu values for %zu training points", Knew->cols,
                     p->m);
  size_t M = Knew->rows;
  double *Phi = nle__malloc(ctx, (M ? M : 1) * p->m * sizeof(double), "the new points' kernel rows");
  if (!Phi) return NLE_ERR_NOMEM;
  memcpy(Phi, Knew->data, M * p->m * sizeof(double));
  centre_kernel_rows(p, Phi, M);
  nle_status s = nle_matd_alloc(ctx, M, p->dim, X);
  if (!s) apply_map(p, Phi, M, p->m, *X, 0);
  free(Phi);
  return s;
}

enum { PM_MAP, PM_M, PM_D, PM_DIM, PM_KERNEL, PM_DEGREE, PM_NEIGHBORS, PM_INTS };
enum { PM_GRAND, PM_GAMMA, PM_COEF0, PM_DOUBLES };

static void write_model(nle__afile *af, const void *model, bool copy_data) {
  (void)copy_data; /* the reference points, which the map needs, are always kept */
  const nle_projection_model *p = model;
  size_t cols = p->map == NLE_MAP_LINEAR ? p->D : p->m;
  int64_t ints[PM_INTS] = {p->map, (int64_t)p->m, (int64_t)p->D, (int64_t)p->dim, p->kernel.kind, p->kernel.degree,
                           p->kernel.neighbors};
  double doubles[PM_DOUBLES] = {p->grand, p->kernel.gamma, p->kernel.coef0};
  nle__rec_put_text(af, "method", p->method);
  nle__rec_put(af, "ints", 'l', ints, PM_INTS);
  nle__rec_put(af, "doubles", 'd', doubles, PM_DOUBLES);
  nle__rec_put(af, "mean", 'd', p->mean, cols);
  nle__rec_put(af, "A", 'd', p->A, p->dim * cols);
  if (p->R) nle__rec_put(af, "R", 'f', p->R->data, p->m * p->D);
  if (p->classes) { /* LDA's classifier */
    nle__rec_put(af, "class-labels", 'i', p->class_labels, p->classes);
    nle__rec_put(af, "coef", 'd', p->coef, p->classes * cols);
    nle__rec_put(af, "intercept", 'd', p->intercept, p->classes);
  }
}

static nle_status read_model(nle_ctx *ctx, nle__rec_file *f, void **out) {
  const void *iv = NULL, *dv = NULL;
  char method[16] = "";
  nle_status s = nle__rec_get(ctx, f, "ints", 'l', PM_INTS, &iv);
  if (!s) s = nle__rec_get(ctx, f, "doubles", 'd', PM_DOUBLES, &dv);
  if (!s) s = nle__rec_text(ctx, f, "method", method, sizeof method);
  const int64_t *hdr = iv;
  const double *Dv = dv;
  if (!s && !(hdr[PM_MAP] >= 0 && hdr[PM_MAP] < NLE_MAP_COUNT && hdr[PM_M] >= 0 && hdr[PM_M] <= INT32_MAX && hdr[PM_D] >= 1 &&
              hdr[PM_D] <= INT32_MAX && hdr[PM_DIM] >= 1 && hdr[PM_DIM] <= 100000 && NLE__MODEL_NAMED(hdr[PM_KERNEL], nle_pdkernel_name) && hdr[PM_DEGREE] >= 1 && hdr[PM_DEGREE] <= 100 &&
              hdr[PM_NEIGHBORS] >= 0 && (hdr[PM_MAP] == NLE_MAP_LINEAR || hdr[PM_M] >= 1) && isfinite(Dv[PM_GRAND]) &&
              isfinite(Dv[PM_GAMMA]) && isfinite(Dv[PM_COEF0])))
    s = nle__fail(ctx, NLE_ERR_FORMAT, "damaged projection model header");
  nle_projection_model *p = NULL;
  if (!s)
    s = nle__projection_new(ctx, method, (nle_map_kind)hdr[PM_MAP], (size_t)hdr[PM_M], (size_t)hdr[PM_D],
                            (size_t)hdr[PM_DIM], NULL, &p);
  size_t cols = p ? (p->map == NLE_MAP_LINEAR ? p->D : p->m) : 0;
  double *mean = NULL, *A = NULL;
  if (!s) {
    p->grand = Dv[PM_GRAND];
    p->kernel.kind = (nle_pdkernel_kind)hdr[PM_KERNEL], p->kernel.degree = (int)hdr[PM_DEGREE];
    p->kernel.neighbors = (int)hdr[PM_NEIGHBORS], p->kernel.gamma = Dv[PM_GAMMA], p->kernel.coef0 = Dv[PM_COEF0];
    s = nle__rec_copy_doubles(ctx, f, "mean", cols, &mean);
  }
  if (!s) s = nle__rec_copy_doubles(ctx, f, "A", p->dim * cols, &A);
  if (!s) {
    free(p->mean), free(p->A);
    p->mean = mean, p->A = A, mean = A = NULL;
  }
  if (!s && nle__rec_has(f, "R")) {
    const void *r;
    s = nle__rec_get(ctx, f, "R", 'f', p->m * p->D, &r);
    if (!s) s = nle_matf_alloc(ctx, p->m, p->D, &p->R);
    if (!s) memcpy(p->R->data, r, p->m * p->D * sizeof(float));
    for (size_t e = 0; !s && e < p->m * p->D; e++)
      if (!isfinite(p->R->data[e])) s = nle__fail(ctx, NLE_ERR_FORMAT, "damaged reference points");
  }
  if (!s && nle__rec_has(f, "class-labels")) { /* LDA's classifier */
    const void *lv = NULL;
    size_t C = 0;
    for (size_t i = 0; i < f->count; i++)
      if (!strcmp(f->entries[i].name, "class-labels")) C = (size_t)f->entries[i].count;
    s = C >= 2 && C <= 1u << 30 ? nle__rec_get(ctx, f, "class-labels", 'i', C, &lv)
                                 : nle__fail(ctx, NLE_ERR_FORMAT, "damaged classifier (%zu classes)", C);
    if (!s && !(p->class_labels = nle__malloc(ctx, C * sizeof(int32_t), "the class labels"))) s = NLE_ERR_NOMEM;
    if (!s) memcpy(p->class_labels, lv, C * sizeof(int32_t));
    for (size_t c = 1; !s && c < C; c++)
      if (p->class_labels[c] <= p->class_labels[c - 1])
        s = nle__fail(ctx, NLE_ERR_FORMAT, "damaged classifier (class labels out of order)");
    if (!s) s = nle__rec_copy_doubles(ctx, f, "coef", C * cols, &p->coef);
    if (!s) s = nle__rec_copy_doubles(ctx, f, "intercept", C, &p->intercept);
    if (!s) p->classes = C;
  }
  if (!s && p->map != NLE_MAP_LINEAR && !p->R && p->kernel.kind != NLE_PDK_PRECOMPUTED)
    s = nle__fail(ctx, NLE_ERR_FORMAT, "the model's reference points are missing");
  free(mean), free(A);
  *out = p;
  return s;
}

static void free_model(void *model) {
  nle_projection_model *p = model;
  nle_projection_model_free(&p);
}

const nle__model_kind nle__projection_model_kind = {"projection-model", false, NULL, write_model, read_model,
                                                    free_model, NULL, NULL};

nle_status nle_projection_model_save(nle_ctx *ctx, const nle_projection_model *p, const char *path) {
  return nle__model_save(ctx, &nle__projection_model_kind, p, path, true);
}

NLE__MODEL_LOAD_FN(nle_projection_model_load, nle_projection_model, nle__projection_model_kind, "projection model load")
