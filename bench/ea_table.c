/* ea_table.c — entropic affinities on one kNN graph for every warm-start
 * order x root finder: mean iterations and evaluations per point, points
 * that needed bisection, largest error, wall time (median of REPS), like
 * dissertation fig. 2.15. Usage:
 *   build/ea_table DATA [-d PCA_DIM] [-k 90] [-p 30] [--reps 3] [--threads 2]
 * DATA is anything nlembed reads (e.g. fashion-mnist). */
#include "nlembed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(nle_ctx *ctx, const char *what) {
  fprintf(stderr, "ea_table: %s: %s\n", what, nle_ctx_error(ctx));
  exit(1);
}

int main(int argc, char **argv) {
  const char *data = NULL, *only = NULL;
  int dim = 0, k = 90, reps = 3, threads = 2;
  double perplexity = 30;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-d") && i + 1 < argc) dim = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-k") && i + 1 < argc) k = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-p") && i + 1 < argc) perplexity = atof(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i]; /* ORDER:ROOT */
    else data = argv[i];
  }
  if (!data || reps < 1) {
    fprintf(stderr, "usage: ea_table DATA [-d PCA_DIM] [-k K] [-p PERPLEXITY] [--reps R] [--threads T] [--only ORDER:ROOT]\n");
    return 2;
  }
  nle_ctx *ctx = nle_ctx_new();
  nle_ctx_set_threads(ctx, threads);
  nle_dataset *ds;
  if (nle_dataset_read(ctx, data, NULL, &ds)) die(ctx, "reading");
  nle_matf *Y = ds->X, *reduced = NULL;
  if (dim > 0) {
    nle_pca_opts po;
    nle_pca_opts_init(&po);
    po.n_components = dim;
    nle_pca_model *m;
    nle_matd *X;
    if (nle_pca_fit(ctx, Y, &po, &m) || nle_pca_transform(ctx, m, Y, &X) || nle_matd_to_matf(ctx, X, &reduced))
      die(ctx, "PCA");
    nle_pca_model_free(&m);
    nle_matd_free(&X);
    Y = reduced;
  }
  nle_knn_opts ko;
  nle_knn_opts_init(&ko);
  ko.k = k;
  nle_csr *g;
  double t0 = nle_time_seconds();
  if (nle_knn_exact(ctx, Y, &ko, &g)) die(ctx, "kNN");
  printf("# %s%s: N = %zu, D = %zu, exact %d-NN in %.1f s, perplexity %g, tol 1e-10, %d threads, median of %d\n",
         data, dim ? " after PCA" : "", Y->rows, Y->cols, k, nle_time_seconds() - t0, perplexity, threads, reps);
  printf("%-10s %-12s %9s %9s %10s %10s %9s %s\n", "order", "root", "iters/pt", "evals/pt", "bisected", "max |err|",
         "seconds", "steps histogram 0..6,7+");
  static const char *orders[] = {"mst", "msp", "density", "sequential", "random", "bounds"};
  static const char *roots[] = {"halley", "euler", "newton", "bisection", "brent", "ridder", "classic", "householder"};
  static const int root_order[] = {7, 0, 1, 2, 5, 4, 3, 6};
  for (int oi = 0; oi < 6; oi++)
    for (int ri = 0; ri < 8; ri++) {
      int r = root_order[ri];
      if (r == NLE_ROOT_CLASSIC && oi != NLE_ORDER_SEQUENTIAL) continue; /* classic ignores the warm start */
      char name[64];
      snprintf(name, sizeof name, "%s:%s", orders[oi], roots[r]);
      if (only && strcmp(only, name)) continue;
      nle_ea_opts o;
      nle_ea_opts_init(&o);
      o.perplexity = perplexity;
      o.order = (nle_ea_order)oi;
      o.root = (nle_root_method)r;
      double times[16];
      nle_ea_result *res = NULL;
      for (int rep = 0; rep < reps && rep < 16; rep++) {
        nle_ea_result_free(&res);
        double t = nle_time_seconds();
        nle_status s = nle_entropic_affinities(ctx, g, &o, &res);
        times[rep] = nle_time_seconds() - t;
        if (s < 0) die(ctx, "affinities");
      }
      qsort(times, (size_t)(reps < 16 ? reps : 16), sizeof(double), cmp_double);
      printf("%-10s %-12s %9.3f %9.3f %10lld %10.2g %9.3f ", orders[oi], r == NLE_ROOT_CLASSIC ? "classic(beta)" : roots[r],
             res->mean_iterations, res->mean_evaluations, (long long)res->bisection_points, res->max_error,
             times[(reps < 16 ? reps : 16) / 2]);
      for (int h = 0; h < 8; h++) printf("%s%lld", h ? "," : "", (long long)res->steps_histogram[h]);
      printf("\n");
      fflush(stdout);
      nle_ea_result_free(&res);
    }
  /* The dissertation's warm start (no rescaling), for the record. */
  for (int ri = 0; !only && ri < 2; ri++) {
    nle_ea_opts o;
    nle_ea_opts_init(&o);
    o.perplexity = perplexity;
    o.rescale = 0;
    o.root = ri ? NLE_ROOT_HALLEY : NLE_ROOT_HOUSEHOLDER;
    nle_ea_result *res = NULL;
    double t = nle_time_seconds();
    if (nle_entropic_affinities(ctx, g, &o, &res) < 0) die(ctx, "affinities");
    printf("mst (no rescale) %-12s %9.3f %9.3f %10lld %10.2g %9.3f\n", ri ? "halley" : "householder",
           res->mean_iterations, res->mean_evaluations, (long long)res->bisection_points, res->max_error,
           nle_time_seconds() - t);
    nle_ea_result_free(&res);
  }
  nle_csr_free(&g);
  nle_matf_free(&reduced);
  nle_dataset_free(&ds);
  nle_ctx_free(&ctx);
  return 0;
}
