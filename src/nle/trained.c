/* trained.c — a trained embedding as an object (EE paper sec. 4.5: what the
 * out-of-sample maps F(y) and f(x) need of the training run): built from
 * the training Y and X, saved to and loaded from nlembed's CRC-checked
 * record file, and given back its training data. The maps themselves are
 * in outofsample.c and oos_batch.c. */
#include "oos_internal.h"
#include "../io/model_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A trained model as this file allocates it. A loaded model's training
 * data and its projection are not copied: their rows are the model file's,
 * mapped (190 MB for 60,000 Fashion-MNIST images). */
typedef struct {
  nle_trained t; /* first: the public pointer is this struct's */
  void *map;     /* the mapped model file, or NULL */
  size_t map_len;
} trained_box;

static nle_trained *trained_alloc(nle_ctx *ctx) {
  trained_box *b = nle__calloc(ctx, 1, sizeof *b, "the trained model");
  return b ? &b->t : NULL;
}

/* Frees *m, its rows too unless they lie in the model's mapping. */
static void free_rows(nle_trained *t, nle_matf **m) {
  const trained_box *b = (const trained_box *)t;
  uintptr_t at = *m ? (uintptr_t)(*m)->data : 0, lo = (uintptr_t)b->map;
  if (b->map && at >= lo && at < lo + b->map_len) (*m)->data = NULL;
  nle_matf_free(m);
}

/* A matrix of the rows at `data` in the loaded file: in place when the
 * file is mapped (b->map), else a copy. */
static nle_status file_rows(nle_ctx *ctx, const trained_box *b, const void *data, size_t rows, size_t cols,
                            nle_matf **m) {
  if (!b->map) {
    nle_status s = nle_matf_alloc(ctx, rows, cols, m);
    if (!s) memcpy((*m)->data, data, rows * cols * sizeof(float));
    return s;
  }
  *m = nle__calloc(ctx, 1, sizeof **m, "a matrix header");
  if (!*m) return NLE_ERR_NOMEM;
  **m = (nle_matf){rows, cols, (float *)data};
  return NLE_OK;
}

void nle_trained_free(nle_trained **t) {
  if (!t || !*t) return;
  free_rows(*t, &(*t)->Y);
  free_rows(*t, &(*t)->pca_Y);
  trained_box *b = (trained_box *)*t;
  nle__rec_unmap(b->map, b->map_len);
  nle_matd_free(&(*t)->X);
  free((*t)->beta);
  free((*t)->log_z);
  free((*t)->radius);
  free((*t)->z_rows);
  free((*t)->pca_mean);
  free((*t)->pca_components);
  free(*t);
  *t = NULL;
}

/* Row sums of K(|x_n - x_m|^2) over m != n, exactly (O(N^2 d)). */
static int z_block(void *job, size_t b, void *scratch) {
  (void)scratch;
  nle_trained *t = job;
  size_t n = t->X->rows, d = t->X->cols, i1 = (b + 1) * 64 < n ? (b + 1) * 64 : n;
  int student = t->kind == NLE_MODEL_TSNE;
  for (size_t i = b * 64; i < i1; i++) {
    double z = 0.0;
    for (size_t j = 0; j < n; j++) {
      if (j == i) continue;
      double dn = 0.0;
      for (size_t c = 0; c < d; c++) dn += (t->X->data[i * d + c] - t->X->data[j * d + c]) *
                                           (t->X->data[i * d + c] - t->X->data[j * d + c]);
      z += student ? 1.0 / (1.0 + dn) : exp(-dn);
    }
    t->z_rows[i] = z;
  }
  return 0;
}

/* The training W+ is w_scale x (P + P^T) for entropic P ((P + P^T) / 2 for EE
 * and SNE's two directions, / 2N for s-SNE and t-SNE), or w_scale x the
 * Gaussian graph (1 for EE, 1 / N for s-SNE and t-SNE). */
static double attraction_scale(nle_model_kind kind, int gaussian, size_t n) {
  int normalised = kind == NLE_MODEL_SSNE || kind == NLE_MODEL_TSNE;
  if (gaussian) return normalised ? 1.0 / (double)n : 1.0;
  return normalised ? 0.5 / (double)n : 0.5;
}


static nle_status trained_finish(nle_ctx *ctx, nle_trained *t) {
  size_t n = t->X->rows;
  int student = t->kind == NLE_MODEL_TSNE || t->kind == NLE_MODEL_TEE;
  t->w_scale = attraction_scale(t->kind, t->sigma > 0, n);
  t->z_total = 0.0;
  t->engine = nle__oos_default_engine(student ? NLE__KERNEL_STUDENT : NLE__KERNEL_GAUSSIAN);
  if (n < 5000 || !nle__oos_batched_engine(t, t->engine)) t->engine = NLE_REPULSION_EXACT;
  if (t->kind == NLE_MODEL_EE || t->kind == NLE_MODEL_TEE) return NLE_OK;
  if (!t->z_rows) {
    t->z_rows = nle__malloc(ctx, n * sizeof(double), "embedding normalisers");
    if (!t->z_rows) return NLE_ERR_NOMEM;
    const nle__oos_engine *fast = nle__engine_find(t->engine)->oos;
    nle_status s;
    if (fast && fast->row_sums)
      s = fast->row_sums(ctx, t->X, student, t->z_rows);
    else
      s = nle__for_blocks(ctx, "normalisers", (n + 63) / 64, nle__threads_for(ctx, (double)n * n * (t->X->cols + 10)),
                          0, z_block, t);
    if (s) return s;
  }
  for (size_t i = 0; i < n; i++) t->z_total += t->z_rows[i];
  return NLE_OK;
}

void nle_trained_spec_init(nle_trained_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->kind = NLE_MODEL_TSNE;
  spec->lambda = 1.0;
  spec->wneg = NLE_WNEG_UNIFORM;
  spec->perplexity = 30.0;
  spec->sigma = NLE_AUTO;
  spec->source = "";
}

nle_status nle_trained_new(nle_ctx *ctx, const nle_trained_spec *spec, const nle_matf *Y, const nle_matd *X,
                           const nle_csr *knn, const double *beta, nle_trained **out) {
  *out = NULL;
  size_t n = Y->rows;
  if (X->rows != n || knn->rows != (int64_t)n || n < 2 || knn->nnz < (int64_t)n)
    return nle__fail(ctx, NLE_ERR_ARG, "trained model: Y, X and the kNN graph must have the same N >= 2 rows");
  bool gaussian = spec->sigma != NLE_AUTO;
  if ((unsigned)spec->kind >= NLE_MODEL_COUNT || !(spec->lambda > 0) || (gaussian && !(spec->sigma > 0)) ||
      (!gaussian && !beta) || (spec->kind == NLE_MODEL_SNE && gaussian))
    return nle__fail(ctx, NLE_ERR_ARG, "trained model: a model kind, lambda > 0, and betas (entropic W+, sigma "
                     "NLE_AUTO) or a sigma > 0");
  nle_trained *t = trained_alloc(ctx);
  if (!t) return NLE_ERR_NOMEM;
  t->kind = spec->kind;
  t->lambda = spec->lambda;
  t->wneg = spec->wneg;
  t->perplexity = spec->perplexity;
  t->sigma = gaussian ? spec->sigma : 0.0; /* the model file's 0: entropic */
  t->k = (int)(knn->rowptr[1] - knn->rowptr[0]);
  t->D = Y->cols;
  snprintf(t->source, sizeof t->source, "%s", spec->source ? spec->source : "");
  nle_status s = nle_matf_alloc(ctx, n, Y->cols, &t->Y);
  if (!s) s = nle_matd_alloc(ctx, n, X->cols, &t->X);
  t->radius = nle__malloc(ctx, n * sizeof(double), "neighbourhood radii");
  if (beta) {
    t->beta = nle__malloc(ctx, n * sizeof(double), "betas");
    t->log_z = nle__malloc(ctx, n * sizeof(double), "normalisers");
  }
  if (!s && (!t->radius || (beta && (!t->beta || !t->log_z)))) s = NLE_ERR_NOMEM;
  if (!s) {
    memcpy(t->Y->data, Y->data, n * Y->cols * sizeof(float));
    memcpy(t->X->data, X->data, n * X->cols * sizeof(double));
    t->data_hash = nle__hash_floats(Y);
    for (size_t i = 0; i < n; i++) {
      int64_t q0 = knn->rowptr[i], q1 = knn->rowptr[i + 1];
      t->radius[i] = q1 > q0 ? nle_csr_value(knn, q1 - 1) : 0.0;
      if (!beta) continue;
      /* log sum_m exp(-beta d_m) with the nearest factored out, as in the
       * training's conditional p_{m|n}. */
      double d0 = q1 > q0 ? nle_csr_value(knn, q0) : 0.0, z = 0.0;
      for (int64_t q = q0; q < q1; q++) z += exp(-beta[i] * (nle_csr_value(knn, q) - d0));
      t->beta[i] = beta[i];
      t->log_z[i] = log(z) - beta[i] * d0;
    }
  }
  if (!s) s = trained_finish(ctx, t);
  if (s) {
    nle_trained_free(&t);
    return s;
  }
  *out = t;
  return NLE_OK;
}

nle_status nle__trained_project(nle_ctx *ctx, const nle_trained *t, const nle_matf *Y, nle_matf **P) {
  return nle__pca_project(ctx, t->pca_dims, t->D, t->pca_mean, t->pca_components, Y, P);
}

/* The training data on the model's components, once: new points' searches
 * all use it. */
static nle_status project_training(nle_ctx *ctx, nle_trained *t) {
  free_rows(t, &t->pca_Y);
  return t->pca_dims > 0 && t->Y ? nle__trained_project(ctx, t, t->Y, &t->pca_Y) : NLE_OK;
}

/* ---- the model file ---- */

enum { TR_KIND, TR_WNEG, TR_K, TR_N, TR_D, TR_DIM, TR_HAS_Y, TR_HAS_BETA, TR_HASH, TR_INTS };
enum { TR_LAMBDA, TR_PERPLEXITY, TR_SIGMA, TR_DOUBLES };

static nle_status check_save(nle_ctx *ctx, const void *model, bool copy_data) {
  const nle_trained *t = model;
  return !t->Y && copy_data ? nle__fail(ctx, NLE_ERR_ARG, "trained model: no training data to copy") : NLE_OK;
}

static void write_model(nle__afile *af, const void *model, bool copy_data) {
  const nle_trained *t = model;
  size_t n = t->X->rows;
  int64_t ints[TR_INTS] = {t->kind, t->wneg, t->k, (int64_t)n, (int64_t)(t->Y ? t->Y->cols : t->D),
                           (int64_t)t->X->cols, copy_data != 0, t->beta != NULL, (int64_t)t->data_hash};
  double doubles[TR_DOUBLES] = {t->lambda, t->perplexity, t->sigma};
  nle__rec_put_text(af, "source", t->source);
  nle__rec_put(af, "ints", 'l', ints, TR_INTS);
  nle__rec_put(af, "doubles", 'd', doubles, TR_DOUBLES);
  nle__rec_put(af, "X", 'd', t->X->data, n * t->X->cols);
  nle__rec_put(af, "radius", 'd', t->radius, n);
  if (t->beta) {
    nle__rec_put(af, "beta", 'd', t->beta, n);
    nle__rec_put(af, "log_z", 'd', t->log_z, n);
  }
  if (t->z_rows) nle__rec_put(af, "z_rows", 'd', t->z_rows, n);
  if (copy_data) nle__rec_put(af, "Y", 'f', t->Y->data, n * t->Y->cols);
  int64_t pca[2] = {t->pca_dims, t->pca_candidates};
  if (t->pca_dims > 0) {
    nle__rec_put(af, "pca", 'l', pca, 2);
    nle__rec_put(af, "pca_mean", 'd', t->pca_mean, t->D);
    nle__rec_put(af, "pca_components", 'd', t->pca_components, (uint64_t)t->pca_dims * t->D);
    /* the training data's projection, as the searches of training and of
     * new points use it: read back, not recomputed (0.2 s of a 60,000-image
     * model's load) */
    if (copy_data && t->pca_Y) nle__rec_put(af, "pca_Y", 'f', t->pca_Y->data, n * (uint64_t)t->pca_dims);
  }
}

static nle_status read_model(nle_ctx *ctx, nle__rec_file *f, void **out) {
  const char *path = f->path;
  nle_trained *t = trained_alloc(ctx);
  *out = t;
  trained_box *b = (trained_box *)t;
  if (t) b->map = nle__rec_keep_mapping(f, &b->map_len); /* t's from now on: freed with it */
  const void *iv = NULL, *dv = NULL;
  nle_status s = t ? nle__rec_get(ctx, f, "ints", 'l', TR_INTS, &iv) : NLE_ERR_NOMEM;
  if (!s) s = nle__rec_get(ctx, f, "doubles", 'd', TR_DOUBLES, &dv);
  if (!s) s = nle__rec_text(ctx, f, "source", t->source, sizeof t->source);
  const int64_t *ints = iv;
  const double *doubles = dv;
  size_t n = 0, D = 0, d = 0;
  if (!s) {
    n = (size_t)ints[TR_N], D = (size_t)ints[TR_D], d = (size_t)ints[TR_DIM];
    t->kind = (nle_model_kind)ints[TR_KIND];
    t->wneg = (nle_wneg_kind)ints[TR_WNEG];
    t->k = (int)ints[TR_K];
    t->D = D;
    t->data_hash = (uint64_t)ints[TR_HASH];
    t->lambda = doubles[TR_LAMBDA];
    t->perplexity = doubles[TR_PERPLEXITY];
    t->sigma = doubles[TR_SIGMA];
    if (ints[TR_N] < 2 || ints[TR_N] > INT32_MAX || ints[TR_D] < 1 || ints[TR_DIM] < 1 || ints[TR_DIM] > 64 ||
        !NLE__MODEL_NAMED(ints[TR_KIND], nle_model_name) || !NLE__MODEL_NAMED(ints[TR_WNEG], nle_wneg_name) || t->k < 1 || t->k > ints[TR_N] ||
        !(t->lambda > 0) || !(t->sigma >= 0) || (t->sigma == 0 && !ints[TR_HAS_BETA]))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged model header", path);
  }
  if (!s) s = nle_matd_alloc(ctx, n, d, &t->X);
  if (!s) {
    double *x = NULL;
    s = nle__rec_copy_doubles(ctx, f, "X", n * d, &x);
    if (!s) memcpy(t->X->data, x, n * d * sizeof(double));
    free(x);
  }
  if (!s) s = nle__rec_copy_doubles(ctx, f, "radius", n, &t->radius);
  if (!s && ints[TR_HAS_BETA]) s = nle__rec_copy_doubles(ctx, f, "beta", n, &t->beta);
  if (!s && ints[TR_HAS_BETA]) s = nle__rec_copy_doubles(ctx, f, "log_z", n, &t->log_z);
  if (!s && t->kind != NLE_MODEL_EE && t->kind != NLE_MODEL_TEE) s = nle__rec_copy_doubles(ctx, f, "z_rows", n, &t->z_rows);
  if (!s && ints[TR_HAS_Y]) {
    const void *y;
    s = nle__rec_get(ctx, f, "Y", 'f', n * D, &y);
    if (!s) s = file_rows(ctx, b, y, n, D, &t->Y);
    /* A version-2 file's CRCs have checked the rows; version 1 has only
     * the hash. */
    if (!s && f->version < 2 && nle__hash_floats(t->Y) != t->data_hash)
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: training data damaged", path);
  }
  if (!s && nle__rec_has(f, "pca")) { /* absent from models trained without it */
    const void *pv;
    s = nle__rec_get(ctx, f, "pca", 'l', 2, &pv);
    const int64_t *pca = pv;
    if (!s && (pca[0] < 1 || pca[0] > (int64_t)D || pca[1] < t->k || pca[1] > ints[TR_N]))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged PCA record", path);
    if (!s) {
      t->pca_dims = (int)pca[0];
      t->pca_candidates = (int)pca[1];
      s = nle__rec_copy_doubles(ctx, f, "pca_mean", D, &t->pca_mean);
    }
    if (!s) s = nle__rec_copy_doubles(ctx, f, "pca_components", (size_t)t->pca_dims * D, &t->pca_components);
    const void *py = NULL;
    if (!s && t->Y && nle__rec_has(f, "pca_Y")) {
      s = nle__rec_get(ctx, f, "pca_Y", 'f', n * (size_t)t->pca_dims, &py);
      if (!s) s = file_rows(ctx, b, py, n, (size_t)t->pca_dims, &t->pca_Y);
    } else if (!s) {
      s = project_training(ctx, t); /* files from before it was kept */
    }
  }
  if (!s && b->map && !t->Y) { /* nothing used in place */
    nle__rec_unmap(b->map, b->map_len);
    b->map = NULL;
  }
  if (!s) s = trained_finish(ctx, t);
  return s;
}

nle_status nle_trained_attach_data(nle_ctx *ctx, nle_trained *t, const nle_matf *Y) {
  nle_matf *copy = NULL;
  nle_status s = nle__attach_training_data(ctx, Y, t->X->rows, t->D, t->data_hash, t->source, &copy);
  if (!s) {
    free_rows(t, &t->Y);
    t->Y = copy;
  }
  return s ? s : project_training(ctx, t);
}

static void free_model(void *model) {
  nle_trained *t = model;
  nle_trained_free(&t);
}

static nle_status attach(nle_ctx *ctx, void *model, const nle_matf *Y) { return nle_trained_attach_data(ctx, model, Y); }

static const char *data_source(const void *model) {
  const nle_trained *t = model;
  return t->Y ? NULL : t->source;
}

/* Mapped: the training rows are used in place (a 60,000-image model's
 * 188 MB are not copied). */
const nle__model_kind nle__trained_model_kind = {"model", true, check_save, write_model, read_model, free_model,
                                                 attach, data_source};

nle_status nle_trained_save(nle_ctx *ctx, const nle_trained *t, const char *path, bool copy_data) {
  return nle__model_save(ctx, &nle__trained_model_kind, t, path, copy_data);
}

NLE__MODEL_LOAD_FN(nle_trained_load, nle_trained, nle__trained_model_kind, "trained model load")
