/* graph_candidates.c — the graph stage's automatic PCA candidates, measured:
 * for each k and candidate count c, the neighbours searched among the first
 * principal components (c per point, the search nle_graph_build runs), then
 * re-ranked by their distances in the data, against the exact k nearest in
 * the data: recall (the fraction of the exact neighbours found) and the
 * seconds of the search and of the re-ranking. Usage:
 *   build/graph_candidates DATA [-d 50] [--threads 2] K:C[,C...] ...
 * e.g. build/graph_candidates fashion-mnist 10:10,30,70 90:90,270,630 */
#include "nlembed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(nle_ctx *ctx, const char *what) {
  fprintf(stderr, "graph_candidates: %s: %s\n", what, nle_ctx_error(ctx));
  exit(1);
}

/* The fraction of truth's first k neighbours of each row found in g's. */
static double recall(const nle_csr *truth, const nle_csr *g, int k) {
  size_t hits = 0, total = 0;
  for (int64_t i = 0; i < g->rows; i++)
    for (int64_t a = truth->rowptr[i]; a < truth->rowptr[i] + k; a++, total++)
      for (int64_t b = g->rowptr[i]; b < g->rowptr[i + 1]; b++)
        if (g->colind[b] == truth->colind[a]) {
          hits++;
          break;
        }
  return total ? (double)hits / (double)total : 0.0;
}

int main(int argc, char **argv) {
  const char *data = NULL;
  int dims = 50, threads = 2, kmax = 0, first_spec = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-d") && i + 1 < argc) dims = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!data) data = argv[i];
    else {
      if (!first_spec) first_spec = i;
      int k = atoi(argv[i]);
      kmax = k > kmax ? k : kmax;
    }
  }
  if (!data || !first_spec) {
    fprintf(stderr, "usage: graph_candidates DATA [-d DIMS] [--threads T] K:C[,C...] ...\n");
    return 2;
  }
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_threads(ctx, threads);
  nle_dataset *ds;
  if (nle_dataset_read(ctx, data, NULL, &ds)) die(ctx, "reading");
  nle_matf *Y = ds->X, *Z = NULL;
  nle_csr *truth = NULL;
  double t0 = nle_time_seconds();
  if (nle_knn_graph(ctx, Y, kmax, NLE_KNN_EXACT, NULL, &truth, NULL)) die(ctx, "exact kNN");
  double t_exact = nle_time_seconds() - t0;
  t0 = nle_time_seconds();
  nle_pca_opts po;
  nle_pca_opts_init(&po);
  po.n_components = dims;
  nle_pca_model *m;
  nle_matd *X;
  if (nle_pca_fit(ctx, Y, &po, &m) || nle_pca_transform(ctx, m, Y, &X) || nle_matd_to_matf(ctx, X, &Z)) die(ctx, "PCA");
  double t_pca = nle_time_seconds() - t0;
  printf("# %s: N = %zu, D = %zu; exact %d-NN in the data %.1f s; PCA to %d: %.1f s; %d threads\n", data, Y->rows,
         Y->cols, kmax, t_exact, dims, t_pca, threads);
  printf("%5s %6s %8s %10s %10s %10s %8s\n", "k", "c", "c/k", "search s", "rerank s", "recall", "method");
  for (int i = first_spec; i < argc; i++) {
    int k = atoi(argv[i]);
    for (char *c = strchr(argv[i], ':'); c; c = strchr(c + 1, ',')) {
      int cand = atoi(c + 1);
      nle_csr *g = NULL, *ranked = NULL;
      nle_knn_method used;
      t0 = nle_time_seconds();
      if (nle_knn_graph(ctx, Z, cand, NLE_KNN_AUTO, NULL, &g, &used)) die(ctx, "search among the components");
      double t_search = nle_time_seconds() - t0;
      t0 = nle_time_seconds();
      if (nle_knn_rerank(ctx, Y, g, k, &ranked)) die(ctx, "re-ranking");
      double t_rank = nle_time_seconds() - t0;
      printf("%5d %6d %8.1f %10.2f %10.2f %10.4f %8s\n", k, cand, (double)cand / k, t_search, t_rank,
             recall(truth, ranked, k), nle_knn_method_name(used));
      fflush(stdout);
      nle_csr_free(&g);
      nle_csr_free(&ranked);
    }
  }
  nle_csr_free(&truth);
  nle_matf_free(&Z);
  nle_matd_free(&X);
  nle_pca_model_free(&m);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
  return 0;
}
