/* model.c — a spectral embedding as an object for its out-of-sample maps
 * (Bengio et al. 2004; the maps are in transform.c): what the front door
 * keeps of a run (the training points and embedding, the eigenvalues, each
 * point's neighbourhood reach, the degrees or geodesic graph the method's
 * Nystrom formula needs), saved to and loaded from nlembed's CRC-checked
 * record file, and given back its training data. */
#include "method.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nle_spectral_model_free(nle_spectral_model **m) {
  if (!m || !*m) return;
  nle_spectral_model *p = *m;
  nle_matf_free(&p->Y);
  nle_matd_free(&p->X);
  free(p->eigenvalues);
  free(p->reach);
  free(p->scale);
  free(p->beta);
  free(p->log_z);
  free(p->degrees);
  nle_csr_free(&p->geodesic_graph);
  free(p->landmarks);
  nle_matd_free(&p->landmark_X);
  free(p->landmark_mean);
  free(p->pca_mean);
  free(p->pca_components);
  free(p->candidate_reach);
  free(p->centres);
  nle_matf_free(&p->pca_Y);
  free(p);
  *m = NULL;
}

nle_status nle__spectral_project(nle_ctx *ctx, const nle_spectral_model *m, const nle_matf *Y, nle_matf **P) {
  return nle__pca_project(ctx, m->opts.pca_dims, m->D, m->pca_mean, m->pca_components, Y, P);
}

/* The training points on the search's components, once per model. */
static nle_status project_training(nle_ctx *ctx, nle_spectral_model *m) {
  nle_matf_free(&m->pca_Y);
  return m->opts.pca_dims > 0 && m->Y ? nle__spectral_project(ctx, m, m->Y, &m->pca_Y) : NLE_OK;
}

nle_status nle__spectral_model_finish(nle_ctx *ctx, nle_spectral_model *m, nle_spectral_method method,
                                      const nle_spectral_opts *o, const nle_matf *Y, const nle_csr *knn,
                                      const nle_csr *W, const nle_spectral_result *r) {
  size_t n = Y->rows;
  m->method = method;
  m->opts = *o;
  m->opts.keep_model = false;
  m->n = n;
  m->D = Y->cols;
  m->dim = r->X->cols;
  m->data_hash = nle__hash_floats(Y);
  nle_status s = nle_matf_alloc(ctx, n, Y->cols, &m->Y);
  if (!s) memcpy(m->Y->data, Y->data, n * Y->cols * sizeof(float));
  if (!s) s = nle_matd_alloc(ctx, n, r->X->cols, &m->X);
  if (!s) memcpy(m->X->data, r->X->data, n * r->X->cols * sizeof(double));
  m->n_eigenvalues = r->n_eigenvalues;
  if (!s && !(m->eigenvalues = nle__malloc(ctx, (size_t)r->n_eigenvalues * sizeof(double), "the model's eigenvalues")))
    s = NLE_ERR_NOMEM;
  if (!s) memcpy(m->eigenvalues, r->eigenvalues, (size_t)r->n_eigenvalues * sizeof(double));
  if (!s && !(m->reach = nle__malloc(ctx, n * sizeof(float), "the model's neighbourhoods"))) s = NLE_ERR_NOMEM;
  for (size_t i = 0; !s && i < n; i++) /* sorted rows: the k-th neighbour is the last */
    m->reach[i] = o->radius > 0 ? (float)(o->radius * o->radius)
                                : knn->rowptr[i + 1] > knn->rowptr[i] ? (float)nle_csr_value(knn, knn->rowptr[i + 1] - 1)
                                                                     : 0.0f;
  if (!s && o->affinity == NLE_AFF_SELF_TUNING) s = nle__self_tuning_scales(ctx, knn, o->tuning_k, &m->scale);
  if (!s && m->beta) { /* entropic: the betas came with the weights */
    if (!(m->log_z = nle__malloc(ctx, n * sizeof(double), "the model's normalisers"))) s = NLE_ERR_NOMEM;
    for (size_t i = 0; !s && i < n; i++) { /* log sum_m exp(-beta d_nm^2), shifted by the nearest */
      int64_t q0 = knn->rowptr[i], q1 = knn->rowptr[i + 1];
      double d0 = nle_csr_value(knn, q0), sum = 0.0;
      for (int64_t q = q0; q < q1; q++) sum += exp(-m->beta[i] * (nle_csr_value(knn, q) - d0));
      m->log_z[i] = log(sum) - m->beta[i] * d0;
    }
  }
  const nle__spectral_map *map = nle__spectral_row(method)->map;
  if (!s && map->keep) s = map->keep(ctx, m, W);
  if (!s && r->landmark_X) { /* LLL: the landmarks and X~ carry the map */
    m->n_landmarks = r->n_landmarks;
    if (!(m->landmarks = nle__malloc(ctx, r->n_landmarks * sizeof(int32_t), "the model's landmarks"))) s = NLE_ERR_NOMEM;
    if (!s) memcpy(m->landmarks, r->landmark_index, r->n_landmarks * sizeof(int32_t));
    if (!s) s = nle_matd_alloc(ctx, r->n_landmarks, m->dim, &m->landmark_X);
    if (!s) memcpy(m->landmark_X->data, r->landmark_X->data, r->n_landmarks * m->dim * sizeof(double));
  }
  return s; /* pca_Y: the search's own projection, kept by the front door */
}

/* ---- the model file ---- */

enum { SM_METHOD, SM_N, SM_D, SM_DIM, SM_K, SM_HAS_Y, SM_HASH, SM_AFFINITY, SM_SYMMETRIZE, SM_LAPLACIAN,
       SM_TUNING_K, SM_TIME, SM_PCA_DIMS, SM_PCA_CANDIDATES, SM_LANDMARKS, SM_ALL_LANDMARKS, SM_EIGENVALUES,
       SM_INTS };
enum { SM_RADIUS, SM_SIGMA, SM_REG, SM_ALPHA, SM_PERPLEXITY, SM_DOUBLES };

static nle_status check_save(nle_ctx *ctx, const void *model, bool copy_data) {
  const nle_spectral_model *m = model;
  return !m->Y && copy_data ? nle__fail(ctx, NLE_ERR_ARG, "spectral model: no training data to copy") : NLE_OK;
}

static void write_model(nle__afile *af, const void *model, bool copy_data) {
  const nle_spectral_model *m = model;
  const nle_spectral_opts *o = &m->opts;
  size_t n = m->n;
  int64_t ints[SM_INTS] = {m->method, (int64_t)n, (int64_t)m->D, (int64_t)m->dim, o->k, copy_data != 0,
                           (int64_t)m->data_hash, o->affinity, o->symmetrize, o->laplacian, o->tuning_k,
                           o->diffusion_time, o->pca_dims, o->pca_candidates, (int64_t)m->n_landmarks,
                           m->landmarks == NULL, m->n_eigenvalues};
  double doubles[SM_DOUBLES] = {o->radius, o->sigma, o->reg, o->alpha, o->perplexity};
  nle__rec_put_text(af, "source", m->source);
  nle__rec_put(af, "ints", 'l', ints, SM_INTS);
  nle__rec_put(af, "doubles", 'd', doubles, SM_DOUBLES);
  nle__rec_put(af, "X", 'd', m->X->data, n * m->dim);
  nle__rec_put(af, "eigenvalues", 'd', m->eigenvalues, (uint64_t)m->n_eigenvalues);
  nle__rec_put(af, "reach", 'f', m->reach, n);
  if (m->scale) nle__rec_put(af, "scale", 'd', m->scale, n);
  if (m->beta) {
    nle__rec_put(af, "beta", 'd', m->beta, n);
    nle__rec_put(af, "log_z", 'd', m->log_z, n);
  }
  const nle__spectral_map *map = nle__spectral_row(m->method)->map;
  if (map->save) map->save(af, m);
  if (o->pca_dims > 0) {
    nle__rec_put(af, "pca_mean", 'd', m->pca_mean, m->D);
    nle__rec_put(af, "pca_components", 'd', m->pca_components, (uint64_t)o->pca_dims * m->D);
    nle__rec_put(af, "candidate_reach", 'f', m->candidate_reach, n);
  }
  if (m->landmark_X) {
    int64_t lll[2] = {(int64_t)m->n_landmarks, o->kz};
    nle__rec_put(af, "lll", 'l', lll, 2);
    nle__rec_put(af, "lll_landmarks", 'i', m->landmarks, m->n_landmarks);
    nle__rec_put(af, "lll_X", 'd', m->landmark_X->data, m->n_landmarks * m->dim);
  }
  if (m->centres) {
    int64_t cl[2] = {m->clusters, m->normalize_rows};
    nle__rec_put(af, "clusters", 'l', cl, 2);
    nle__rec_put(af, "centres", 'd', m->centres, (uint64_t)m->clusters * m->dim);
  }
  if (copy_data) nle__rec_put(af, "Y", 'f', m->Y->data, n * m->D);
}

/* A method of the table that keeps a model (a map of new points). */
static bool known_method(int64_t method) {
  const nle__spectral_method *row =
      method >= 0 && method < INT32_MAX ? nle__spectral_row((nle_spectral_method)method) : NULL;
  return row && row->map;
}

/* The header's values, in range, into m (the rest is checked as read). */
static nle_status read_header(nle_ctx *ctx, const char *path, const int64_t *iv, const double *dv,
                              nle_spectral_model *m) {
  nle_spectral_opts *o = &m->opts;
  nle_spectral_opts_init(o);
  int64_t n = iv[SM_N];
  bool ok = known_method(iv[SM_METHOD]) && n >= 3 && n <= INT32_MAX && iv[SM_D] >= 1 &&
            iv[SM_D] <= INT32_MAX && iv[SM_DIM] >= 1 && iv[SM_DIM] < n && iv[SM_K] >= 1 && iv[SM_K] < n &&
            iv[SM_AFFINITY] >= 0 && iv[SM_AFFINITY] <= 16 && NLE__MODEL_NAMED(iv[SM_SYMMETRIZE], nle_symmetrize_name) &&
            NLE__MODEL_NAMED(iv[SM_LAPLACIAN], nle_laplacian_name) && iv[SM_TUNING_K] >= 1 && iv[SM_TUNING_K] < n &&
            iv[SM_TIME] >= 0 && iv[SM_TIME] <= 1000000 && iv[SM_PCA_DIMS] >= 0 && iv[SM_PCA_DIMS] <= iv[SM_D] &&
            iv[SM_PCA_CANDIDATES] >= 0 && iv[SM_PCA_CANDIDATES] < n && iv[SM_LANDMARKS] >= 0 &&
            iv[SM_LANDMARKS] <= n && iv[SM_EIGENVALUES] >= iv[SM_DIM] && iv[SM_EIGENVALUES] <= iv[SM_DIM] + 1 &&
            (iv[SM_PCA_DIMS] == 0 || iv[SM_PCA_CANDIDATES] >= iv[SM_K]) && dv[SM_RADIUS] >= 0 &&
            (dv[SM_SIGMA] > 0 || dv[SM_SIGMA] == NLE_AUTO) && dv[SM_REG] >= 0 && dv[SM_ALPHA] >= 0 &&
            dv[SM_ALPHA] <= 1 && isfinite(dv[SM_RADIUS]) && isfinite(dv[SM_REG]);
  if (!ok) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged spectral model header", path);
  m->method = (nle_spectral_method)iv[SM_METHOD];
  m->n = (size_t)n, m->D = (size_t)iv[SM_D], m->dim = (size_t)iv[SM_DIM];
  m->data_hash = (uint64_t)iv[SM_HASH];
  m->n_landmarks = (size_t)iv[SM_LANDMARKS];
  m->n_eigenvalues = (int)iv[SM_EIGENVALUES];
  o->dim = (int)iv[SM_DIM], o->k = (int)iv[SM_K];
  o->affinity = (nle_affinity_kind)iv[SM_AFFINITY];
  o->symmetrize = (nle_symmetrize_rule)iv[SM_SYMMETRIZE];
  o->laplacian = (nle_laplacian_kind)iv[SM_LAPLACIAN];
  o->tuning_k = (int)iv[SM_TUNING_K], o->diffusion_time = (int)iv[SM_TIME];
  o->pca_dims = (int)iv[SM_PCA_DIMS], o->pca_candidates = (int)iv[SM_PCA_CANDIDATES];
  o->radius = dv[SM_RADIUS], o->sigma = dv[SM_SIGMA], o->reg = dv[SM_REG], o->alpha = dv[SM_ALPHA];
  o->perplexity = dv[SM_PERPLEXITY];
  if (o->affinity == NLE_AFF_ENTROPIC && !(o->perplexity > 1 && o->perplexity < o->k))
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged spectral model header (perplexity)", path);
  o->landmarks = iv[SM_ALL_LANDMARKS] ? 0 : (int)iv[SM_LANDMARKS];
  if (strcmp(nle_affinity_kind_name(o->affinity), "unknown") == 0)
    return nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged spectral model header (affinity)", path);
  return NLE_OK;
}

/* A copy of record `name` (count floats, each finite and >= 0). */
nle_status nle__spectral_read_floats(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, float **dst) {
  const void *src;
  nle_status s = nle__rec_get(ctx, f, name, 'f', count, &src);
  if (!s && !(*dst = nle__malloc(ctx, (count ? count : 1) * sizeof(float), name))) s = NLE_ERR_NOMEM;
  if (!s && count) memcpy(*dst, src, count * sizeof(float));
  for (size_t i = 0; !s && i < count; i++)
    if (!((*dst)[i] >= 0) || !isfinite((*dst)[i]))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' has a negative or non-finite value", f->path, name);
  return s;
}

nle_status nle__spectral_read_ints(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, int64_t bound,
                                   int32_t **dst) {
  const void *src;
  nle_status s = nle__rec_get(ctx, f, name, 'i', count, &src);
  if (!s && !(*dst = nle__malloc(ctx, (count ? count : 1) * sizeof(int32_t), name))) s = NLE_ERR_NOMEM;
  if (!s && count) memcpy(*dst, src, count * sizeof(int32_t));
  for (size_t i = 0; !s && i < count; i++)
    if ((*dst)[i] < 0 || (*dst)[i] >= bound)
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: record '%s' has an index out of range", f->path, name);
  return s;
}

static nle_status read_model(nle_ctx *ctx, nle__rec_file *f, void **out) {
  const char *path = f->path;
  nle_spectral_model *m = nle__calloc(ctx, 1, sizeof *m, "the spectral model");
  *out = m;
  const void *iv = NULL, *dv = NULL;
  nle_status s = m ? nle__rec_get(ctx, f, "ints", 'l', SM_INTS, &iv) : NLE_ERR_NOMEM;
  if (!s) s = nle__rec_get(ctx, f, "doubles", 'd', SM_DOUBLES, &dv);
  if (!s) s = nle__rec_text(ctx, f, "source", m->source, sizeof m->source);
  if (!s) s = read_header(ctx, path, iv, dv, m);
  size_t n = m && !s ? m->n : 0;
  double *x = NULL;
  if (!s) s = nle__rec_copy_doubles(ctx, f, "X", n * m->dim, &x);
  if (!s) s = nle_matd_alloc(ctx, n, m->dim, &m->X);
  if (!s) memcpy(m->X->data, x, n * m->dim * sizeof(double));
  free(x);
  if (!s) s = nle__rec_copy_doubles(ctx, f, "eigenvalues", (size_t)m->n_eigenvalues, &m->eigenvalues);
  if (!s) s = nle__spectral_read_floats(ctx, f, "reach", n, &m->reach);
  if (!s && m->opts.affinity == NLE_AFF_SELF_TUNING) s = nle__rec_copy_doubles(ctx, f, "scale", n, &m->scale);
  if (!s && m->opts.affinity == NLE_AFF_ENTROPIC) s = nle__rec_copy_doubles(ctx, f, "beta", n, &m->beta);
  if (!s && m->opts.affinity == NLE_AFF_ENTROPIC) s = nle__rec_copy_doubles(ctx, f, "log_z", n, &m->log_z);
  const nle__spectral_map *map = s ? NULL : nle__spectral_row(m->method)->map;
  if (!s && map->load) s = map->load(ctx, f, m);
  if (!s && m->opts.pca_dims > 0) {
    s = nle__rec_copy_doubles(ctx, f, "pca_mean", m->D, &m->pca_mean);
    if (!s) s = nle__rec_copy_doubles(ctx, f, "pca_components", (size_t)m->opts.pca_dims * m->D, &m->pca_components);
    if (!s) s = nle__spectral_read_floats(ctx, f, "candidate_reach", n, &m->candidate_reach);
  }
  if (!s && nle__rec_has(f, "lll")) { /* Laplacian eigenmaps by LLL */
    const void *lv;
    double *xl = NULL;
    s = nle__rec_get(ctx, f, "lll", 'l', 2, &lv);
    const int64_t *lll = lv;
    if (!s && (!nle__spectral_row(m->method)->by_landmarks || lll[0] <= (int64_t)m->dim || lll[0] > (int64_t)n || lll[1] < 1 ||
               lll[1] > lll[0]))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged landmark record", path);
    if (!s) {
      m->n_landmarks = (size_t)lll[0], m->opts.landmarks = (int)lll[0], m->opts.kz = (int)lll[1];
      s = nle__spectral_read_ints(ctx, f, "lll_landmarks", m->n_landmarks, (int64_t)n, &m->landmarks);
    }
    if (!s) s = nle__rec_copy_doubles(ctx, f, "lll_X", m->n_landmarks * m->dim, &xl);
    if (!s) s = nle_matd_alloc(ctx, m->n_landmarks, m->dim, &m->landmark_X);
    if (!s) memcpy(m->landmark_X->data, xl, m->n_landmarks * m->dim * sizeof(double));
    free(xl);
  }
  if (!s && nle__rec_has(f, "clusters")) { /* a spectral clustering's model */
    const void *cv;
    s = nle__rec_get(ctx, f, "clusters", 'l', 2, &cv);
    const int64_t *cl = cv;
    if (!s && (m->method != NLE_SPECTRAL_LE || cl[0] < 2 || cl[0] > (int64_t)n || (cl[1] != 0 && cl[1] != 1)))
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged clustering record", path);
    if (!s) {
      m->clusters = (int)cl[0], m->normalize_rows = cl[1] != 0;
      s = nle__rec_copy_doubles(ctx, f, "centres", (size_t)m->clusters * m->dim, &m->centres);
    }
  }
  if (!s && nle__rec_has(f, "Y")) {
    const void *y;
    s = nle__rec_get(ctx, f, "Y", 'f', n * m->D, &y);
    if (!s) s = nle_matf_alloc(ctx, n, m->D, &m->Y);
    if (!s) memcpy(m->Y->data, y, n * m->D * sizeof(float));
    if (!s && nle__hash_floats(m->Y) != m->data_hash)
      s = nle__fail(ctx, NLE_ERR_FORMAT, "%s: training data damaged", path);
  }
  if (!s) s = project_training(ctx, m);
  return s;
}

nle_status nle_spectral_model_attach_data(nle_ctx *ctx, nle_spectral_model *m, const nle_matf *Y) {
  nle_status s = nle__attach_training_data(ctx, Y, m->n, m->D, m->data_hash, m->source, &m->Y);
  return s ? s : project_training(ctx, m);
}

static void free_model(void *model) {
  nle_spectral_model *m = model;
  nle_spectral_model_free(&m);
}

static nle_status attach(nle_ctx *ctx, void *model, const nle_matf *Y) {
  return nle_spectral_model_attach_data(ctx, model, Y);
}

static const char *data_source(const void *model) {
  const nle_spectral_model *m = model;
  return m->Y ? NULL : m->source;
}

const nle__model_kind nle__spectral_model_kind = {"spectral-model", false, check_save, write_model, read_model,
                                                  free_model, attach, data_source};

nle_status nle_spectral_model_save(nle_ctx *ctx, const nle_spectral_model *m, const char *path, bool copy_data) {
  return nle__model_save(ctx, &nle__spectral_model_kind, m, path, copy_data);
}

NLE__MODEL_LOAD_FN(nle_spectral_model_load, nle_spectral_model, nle__spectral_model_kind, "spectral model load")
