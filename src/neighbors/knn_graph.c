/* knn_graph.c — the kNN graph by a chosen or automatic method: the one
 * place that decides between the exact and the approximate search. */
#include "neighbors_internal.h"

/* Whether exact search is expected to be faster: its cost grows as
 * N^2 (c + e D), the approximate one's as N (a + b D). The constants are
 * seconds fitted on this project's 2-core machine with k = 90 (Fashion-MNIST
 * at D = 50 and 784); only their ratios matter. a and b re-measured for the
 * approximate search renumbered for locality (2026-11-27, quiet: 70,000 x 50
 * in 4.6 s against the exact 5.1 s; 200,000 x 50 in 14 s; 70,000 x 784 in
 * 32 s, the GEMM-screened joins): the switch is at about 51,000 points at
 * D = 50 and 46,000 at D = 784. */
static int exact_is_faster(size_t n, size_t d) {
  const double a = 4.5e-5, b = 5.3e-7, c = 8.4e-10, e = 1.16e-11;
  return (double)n * (c + e * (double)d) < a + b * (double)d;
}

NLE__ENUM_NAMES(nle_knn_method_name, nle_knn_method_parse, nle_knn_method, NLE_KNN_METHOD_MAP, NLE_KNN_COUNT, true)

nle_status nle_knn_graph(nle_ctx *ctx, const nle_matf *Y, int k, nle_knn_method method,
                         const nle_knn_approx_opts *approx, nle_csr **graph, nle_knn_method *used) {
  if (method != NLE_KNN_AUTO && (unsigned)method >= NLE_KNN_COUNT)
    return nle__fail(ctx, NLE_ERR_ARG, "kNN graph: method %d is not auto, exact or approx", (int)method);
  nle__rows rows; /* with a communicator, Y is this rank's rows of N (comm.h) */
  nle_status s = nle__comm_rows(ctx, Y->rows, "kNN graph", &rows);
  if (s) return s;
  if (method == NLE_KNN_AUTO) method = exact_is_faster(rows.n, Y->cols) ? NLE_KNN_EXACT : NLE_KNN_APPROX;
  if (used) *used = method;
  if (method == NLE_KNN_EXACT) {
    nle_knn_opts o;
    nle_knn_opts_init(&o);
    o.k = k;
    return nle_knn_exact(ctx, Y, &o, graph);
  }
  nle_knn_approx_opts o;
  if (approx) o = *approx;
  else nle_knn_approx_opts_init(&o);
  o.k = k;
  return nle_knn_approx(ctx, Y, &o, graph);
}
