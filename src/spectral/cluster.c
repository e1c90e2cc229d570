/* cluster.c — spectral clustering (dissertation eq. 4.19: eigenvectors
 * after the trivial one of L v = lambda D v, then k-means; by default K - 1
 * of them, the bottom-K subspace: see nle_cluster_opts.dims;
 * the lecture slides' "Spirals Again") and the k-means it ends with:
 * Lloyd's iterations from k-means++ seeds (Arthur and Vassilvitskii 2007),
 * restarted, the run of least inertia kept. Everything is drawn from the
 * context's seed and runs in a fixed order: the same labels on any number
 * of threads. */
#include "method.h"

#include "../core/comm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sqdist(const double *a, const double *b, size_t d) {
  double s = 0.0;
  for (size_t t = 0; t < d; t++) s += (a[t] - b[t]) * (a[t] - b[t]);
  return s;
}

/* k-means++: the first centre uniform, each next one drawn with
 * probability proportional to the squared distance to the nearest centre
 * so far. */
static void seed_centres(const nle_matd *X, int k, nle_rng *rng, double *C, double *near) {
  size_t n = X->rows, d = X->cols;
  size_t first = (size_t)(nle_rng_uniform(rng) * (double)n);
  if (first >= n) first = n - 1;
  memcpy(C, X->data + first * d, d * sizeof(double));
  for (size_t i = 0; i < n; i++) near[i] = sqdist(X->data + i * d, C, d);
  for (int c = 1; c < k; c++) {
    double total = 0.0;
    for (size_t i = 0; i < n; i++) total += near[i];
    double target = nle_rng_uniform(rng) * total, acc = 0.0;
    size_t pick = n - 1;
    for (size_t i = 0; i < n && total > 0; i++) {
      acc += near[i];
      if (acc > target) {
        pick = i;
        break;
      }
    }
    if (!(total > 0)) pick = (size_t)c % n; /* every point on a centre already */
    memcpy(C + (size_t)c * d, X->data + pick * d, d * sizeof(double));
    for (size_t i = 0; i < n; i++) near[i] = fmin(near[i], sqdist(X->data + i * d, C + (size_t)c * d, d));
  }
}

/* Lloyd's iterations until no label changes (or max_iters); an emptied
 * cluster takes the point farthest from its centre. Returns the inertia. */
static double lloyd(const nle_matd *X, int k, int max_iters, double *C, int32_t *lab, double *sum, double *cnt,
                    double *near) {
  size_t n = X->rows, d = X->cols;
  for (size_t i = 0; i < n; i++) lab[i] = -1;
  double inertia = 0.0;
  for (int it = 0; it < max_iters; it++) {
    int changed = 0;
    inertia = 0.0;
    for (size_t i = 0; i < n; i++) {
      int32_t best = 0;
      double bd = INFINITY;
      for (int c = 0; c < k; c++) {
        double dd = sqdist(X->data + i * d, C + (size_t)c * d, d);
        if (dd < bd) bd = dd, best = c;
      }
      changed |= lab[i] != best;
      lab[i] = best;
      near[i] = bd;
      inertia += bd;
    }
    if (!changed) break;
    memset(sum, 0, (size_t)k * d * sizeof(double));
    memset(cnt, 0, (size_t)k * sizeof(double));
    for (size_t i = 0; i < n; i++) {
      cnt[lab[i]] += 1.0;
      for (size_t t = 0; t < d; t++) sum[(size_t)lab[i] * d + t] += X->data[i * d + t];
    }
    for (int c = 0; c < k; c++) {
      if (cnt[c] > 0) {
        for (size_t t = 0; t < d; t++) C[(size_t)c * d + t] = sum[(size_t)c * d + t] / cnt[c];
      } else {
        size_t far = 0;
        for (size_t i = 1; i < n; i++) far = near[i] > near[far] ? i : far;
        memcpy(C + (size_t)c * d, X->data + far * d, d * sizeof(double));
        near[far] = 0.0;
      }
    }
  }
  return inertia;
}

nle_status nle_kmeans(nle_ctx *ctx, const nle_matd *X, int k, int restarts, int max_iters, int32_t *labels,
                      double *inertia) {
  size_t n = X->rows, d = X->cols;
  if (k < 1 || (size_t)k > n || restarts < 1 || max_iters < 1 || d < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "k-means: %d clusters of %zu points, %d restarts, %d iterations (k in 1..N, "
                     "the others >= 1)", k, n, restarts, max_iters);
  for (size_t i = 0; i < n * d; i++)
    if (!isfinite(X->data[i]))
      return nle__fail(ctx, NLE_ERR_VALUE, "k-means: row %zu, column %zu is not finite", i / d, i % d);
  double *C = nle__malloc(ctx, (size_t)k * d * sizeof(double), "k-means"), *sum = nle__malloc(ctx, (size_t)k * d * sizeof(double), "k-means");
  double *cnt = nle__malloc(ctx, (size_t)k * sizeof(double), "k-means"), *near = nle__malloc(ctx, n * sizeof(double), "k-means");
  int32_t *lab = nle__malloc(ctx, n * sizeof(int32_t), "k-means");
  nle_status s = C && sum && cnt && near && lab ? NLE_OK : NLE_ERR_NOMEM;
  nle_rng rng;
  nle_rng_init(&rng, nle_ctx_seed(ctx), 0x6b6d6e73ULL);
  double best = INFINITY;
  for (int r = 0; !s && r < restarts; r++) {
    seed_centres(X, k, &rng, C, near);
    double e = lloyd(X, k, max_iters, C, lab, sum, cnt, near);
    if (e < best) {
      best = e;
      memcpy(labels, lab, n * sizeof(int32_t));
    }
  }
  if (!s && inertia) *inertia = best;
  free(C);
  free(sum);
  free(cnt);
  free(near);
  free(lab);
  return s;
}

/* Unit rows (Ng, Jordan and Weiss), a zero row left as it is. */
static void normalise_rows(nle_matd *Z) {
  for (size_t i = 0; i < Z->rows; i++) {
    double norm = 0.0, *z = Z->data + i * Z->cols;
    for (size_t t = 0; t < Z->cols; t++) norm += z[t] * z[t];
    norm = sqrt(norm);
    for (size_t t = 0; norm > 0 && t < Z->cols; t++) z[t] /= norm;
  }
}

/* C (k x d) = each label's mean row of X (a label no row has: 0); count
 * (k) is scratch. */
static void label_means(const nle_matd *X, const int32_t *lab, int k, double *C, double *count) {
  size_t d = X->cols;
  memset(C, 0, (size_t)k * d * sizeof(double));
  memset(count, 0, (size_t)k * sizeof(double));
  for (size_t i = 0; i < X->rows; i++) {
    count[lab[i]] += 1.0;
    for (size_t t = 0; t < d; t++) C[(size_t)lab[i] * d + t] += X->data[i * d + t];
  }
  for (int c = 0; c < k; c++)
    for (size_t t = 0; t < d; t++) C[(size_t)c * d + t] /= count[c] > 0 ? count[c] : 1.0;
}

/* Dissertation sec. 4.7.1: the restarts on the L landmark rows, then one
 * Lloyd run on all N from the best restart's centres. */
static nle_status warm_kmeans(nle_ctx *ctx, const nle_matd *Z, const nle_matd *Xl, int k, int restarts,
                              int max_iters, int32_t *labels, double *inertia) {
  size_t n = Z->rows, d = Z->cols, L = Xl->rows;
  if ((size_t)k > L) return nle_kmeans(ctx, Z, k, restarts, max_iters, labels, inertia);
  int32_t *lab_l = nle__malloc(ctx, L * sizeof(int32_t), "k-means");
  double *C = nle__malloc(ctx, (size_t)k * d * sizeof(double), "k-means");
  double *sum = nle__malloc(ctx, (size_t)k * d * sizeof(double), "k-means");
  double *cnt = nle__malloc(ctx, (size_t)k * sizeof(double), "k-means");
  double *near = nle__malloc(ctx, n * sizeof(double), "k-means");
  nle_status s = lab_l && C && sum && cnt && near ? NLE_OK : NLE_ERR_NOMEM;
  if (!s) s = nle_kmeans(ctx, Xl, k, restarts, max_iters, lab_l, NULL);
  if (!s) label_means(Xl, lab_l, k, C, cnt);
  if (!s) *inertia = lloyd(Z, k, max_iters, C, labels, sum, cnt, near);
  free(lab_l), free(C), free(sum), free(cnt), free(near);
  return s;
}

/* Distributed (issue 38): every rank gathers the N rows of Z (N x dims
 * doubles, dims = K - 1 by default: small beside the graph) and runs the
 * single process's k-means on them (warm-started from the landmarks' rows
 * Xl when LLL gave them), the same on every rank (its draws come from the
 * seed, its sums in point order), keeping its own rows' labels: the single
 * process's labels from the same Z. */
static nle_status kmeans_gathered(nle_ctx *ctx, const nle_matd *Z, size_t n_all, const nle_cluster_opts *o,
                                  const nle_matd *Xl, int32_t *labels, double *inertia) {
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, Z->rows, "k-means", &rows);
  nle_matd *all = NULL;
  int32_t *every = s ? NULL : nle__malloc(ctx, n_all * sizeof(int32_t), "the cluster labels");
  if (!s) s = every ? nle_matd_alloc(ctx, n_all, Z->cols, &all) : NLE_ERR_NOMEM;
  s = nle__comm_agree(ctx, s);
  if (!s) s = nle__comm_allgather_rows(ctx, Z->data, n_all, Z->cols * sizeof(double), all->data);
  if (!s && Xl) s = warm_kmeans(ctx, all, Xl, o->clusters, o->restarts, o->max_iters, every, inertia);
  else if (!s) s = nle_kmeans(ctx, all, o->clusters, o->restarts, o->max_iters, every, inertia);
  if (!s) memcpy(labels, every + rows.mine.begin, Z->rows * sizeof(int32_t));
  nle_matd_free(&all);
  free(every);
  return s;
}

void nle_cluster_opts_init(nle_cluster_opts *o) {
  memset(o, 0, sizeof *o);
  o->clusters = 2;
  o->dims = NLE_AUTO;
  o->normalize_rows = false;
  o->restarts = 10;
  o->warm_start = true;
  o->max_iters = 300;
  nle_spectral_opts_init(&o->spectral);
}

void nle_cluster_result_free(nle_cluster_result **r) {
  if (!r || !*r) return;
  free((*r)->labels);
  nle_spectral_result_free(&(*r)->embedding);
  free(*r);
  *r = NULL;
}

nle_status nle_spectral_cluster(nle_ctx *ctx, const nle_spectral_input *in, const nle_cluster_opts *opts,
                                nle_cluster_result **out) {
  return nle__spectral_cluster_with(ctx, in, opts, NULL, out);
}

nle_status nle__spectral_cluster_with(nle_ctx *ctx, const nle_spectral_input *in, const nle_cluster_opts *opts,
                                      const nle__lll_basis *basis, nle_cluster_result **out) {
  *out = NULL;
  nle_cluster_opts defaults;
  if (!opts) {
    nle_cluster_opts_init(&defaults);
    opts = &defaults;
  }
  /* each option by its marker, its value as given ("auto", never the
   * sentinel's number), and the rule it breaks */
  if (opts->clusters < 2)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral clustering: {@clusters=%s}: at least 2", nle__int_text(opts->clusters).s);
  if (!(opts->dims == NLE_AUTO || opts->dims >= 1))
    return nle__fail(ctx, NLE_ERR_ARG, "spectral clustering: {@dims=%d}: at least 1, or auto", opts->dims);
  if (opts->restarts < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral clustering: {@restarts=%s}: at least 1", nle__int_text(opts->restarts).s);
  if (opts->max_iters < 1)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral clustering: {@max-iters=%s}: at least 1",
                     nle__int_text(opts->max_iters).s);
  /* the embedding below needs dims + 1 < N: said here in the options the
   * caller gave (clusters, dims), not the embedding's dim */
  const nle_csr *graph = in ? (in->knn ? in->knn : in->affinities) : NULL;
  size_t n = in && in->Y ? in->Y->rows : graph ? (size_t)graph->rows : 0;
  if (nle__distributed(ctx) && in && in->Y) { /* the points of all ranks */
    nle__rows rows;
    nle_status s = nle__comm_rows(ctx, in->Y->rows, "spectral clustering", &rows);
    if (s) return s;
    n = rows.n;
  }
  if (n && opts->dims == NLE_AUTO && (size_t)opts->clusters >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral clustering: {@clusters=%d} of %zu points: at most N - 1 (the "
                     "clusters are found in an embedding of clusters - 1 dimensions)", opts->clusters, n);
  if (n && opts->dims != NLE_AUTO && (size_t)opts->dims + 1 >= n)
    return nle__fail(ctx, NLE_ERR_ARG, "spectral clustering: {@dims=%d} dimensions of %zu points (at most N - 2)",
                     opts->dims, n);
  nle_cluster_result *r = nle__calloc(ctx, 1, sizeof *r, "the clustering");
  if (!r) return NLE_ERR_NOMEM;
  r->resolved = *opts;
  nle_cluster_opts *o = &r->resolved;
  if (o->dims == NLE_AUTO) o->dims = o->clusters - 1;
  o->spectral.dim = o->dims;
  /* components are clusters: a disconnected graph is what clustering
   * wants, kept apart (not joined), with a warning as scikit-learn's */
  bool warn = o->spectral.components == NLE_COMPONENTS_AUTO && o->spectral.landmarks == 0;
  if (o->spectral.components == NLE_COMPONENTS_AUTO) o->spectral.components = NLE_COMPONENTS_ALLOW;
  nle_status s = nle__spectral_embed_with(ctx, NLE_SPECTRAL_LE, in, &o->spectral, basis, &r->embedding);
  int c = s ? 0 : r->embedding->components;
  if (warn && c > o->clusters)
    nle__warn(ctx, NLE_WARN_GENERAL, "spectral clustering: the graph has %d connected components, more than the %d "
              "clusters: the eigenvectors mix the components' indicators and k-means groups whole components (a larger "
              "{@neighbors} joins them)", c, o->clusters);
  else if (warn && c > 1)
    nle__warn(ctx, NLE_WARN_GENERAL, "spectral clustering: the graph has %d connected components: each falls whole "
              "in one cluster (a larger {@neighbors} joins them)", c);
  if (!s) {
    o->spectral = r->embedding->resolved;
    r->n = r->embedding->n;
    r->clusters = o->clusters;
    if ((size_t)o->clusters > r->n)
      s = nle__fail(ctx, NLE_ERR_ARG, "spectral clustering: {@clusters=%d} of %zu points", o->clusters, r->n);
  }
  /* distributed: the embedding, Z and the labels are this rank's rows
   * (r->n counts all ranks') */
  size_t mine = !s ? r->embedding->X->rows : 0;
  nle_matd *Z = NULL;
  if (!s) s = nle_matd_alloc(ctx, mine, (size_t)o->dims, &Z);
  nle_matd *Xl = NULL;
  const nle_matd *landmark_rows = r && r->embedding ? r->embedding->landmark_X : NULL;
  if (!s && landmark_rows && o->warm_start) s = nle_matd_alloc(ctx, landmark_rows->rows, landmark_rows->cols, &Xl);
  if (!s && Xl) {
    memcpy(Xl->data, landmark_rows->data, Xl->rows * Xl->cols * sizeof(double));
    if (o->normalize_rows) normalise_rows(Xl);
  }
  if (!s) {
    memcpy(Z->data, r->embedding->X->data, mine * (size_t)o->dims * sizeof(double));
    if (o->normalize_rows) normalise_rows(Z);
    r->labels = nle__malloc(ctx, mine * sizeof(int32_t), "the cluster labels");
    if (!r->labels) s = NLE_ERR_NOMEM;
  }
  double t0 = nle_time_seconds();
  if (!s && nle__distributed(ctx)) s = kmeans_gathered(ctx, Z, r->n, o, Xl, r->labels, &r->inertia);
  else if (!s && Xl) s = warm_kmeans(ctx, Z, Xl, o->clusters, o->restarts, o->max_iters, r->labels, &r->inertia);
  else if (!s) s = nle_kmeans(ctx, Z, o->clusters, o->restarts, o->max_iters, r->labels, &r->inertia);
  r->warm_started = Xl != NULL;
  nle_matd_free(&Xl);
  r->kmeans_seconds = nle_time_seconds() - t0;
  nle_spectral_model *md = r->embedding ? r->embedding->model : NULL;
  if (!s && md) { /* the out-of-sample model: each cluster's mean row */
    size_t d = (size_t)o->dims, K = (size_t)o->clusters;
    double *count = nle__malloc(ctx, K * sizeof(double), "the clusters");
    md->centres = nle__malloc(ctx, K * d * sizeof(double), "the cluster centres");
    if (!count || !md->centres) s = NLE_ERR_NOMEM;
    if (!s) label_means(Z, r->labels, o->clusters, md->centres, count);
    md->clusters = o->clusters;
    md->normalize_rows = o->normalize_rows;
    free(count);
  }
  nle_matd_free(&Z);
  if (s) {
    nle_cluster_result_free(&r);
    return s;
  }
  *out = r;
  return NLE_OK;
}
