/* method.h — the spectral methods' type table (Tapkee's pattern: each
 * method a thin adaptor over the shared graph and eigensolver pieces, one
 * file per method, one row in spectral.c's table). */
#ifndef NLE_SPECTRAL_METHOD_H
#define NLE_SPECTRAL_METHOD_H

#include "../graph/graph_internal.h"
#include "eigen.h"
#include "newpoint.h"

/* What the front door hands a method: the resolved options, the points
 * (or NULL), the directed kNN graph (or NULL when W was given), the
 * symmetric weights W and its component count. */
typedef struct {
  const nle_spectral_opts *o;
  const nle_matf *Y;
  const nle_csr *knn;
  const nle_csr *W;
  int components;             /* of W as the method gets it (after a join) */
  int64_t joined;             /* edges the join policy added (0: none) */
  int k;                      /* the largest row of the kNN graph before any
                                 join: what bounds on k judge (a joined row
                                 is one or more longer; scratch is sized by
                                 nle__max_row(knn)) */
  nle_spectral_model *model; /* keep_model: what the method adds to the
                                out-of-sample model (else NULL) */
  const nle_matf *pca_Y;     /* the points on the search's principal
                                components (NULL when it searched in Y) */
  const struct nle__lll_basis *basis; /* LLL: its landmarks and Z made
                                         beforehand (a sweep's), or NULL */
} nle__spectral_job;

typedef struct {
  const char *name;
  nle_components_policy components; /* its policy when the options say auto */
  bool join_only;                   /* a disconnected graph must be joined:
                                       side by side cannot work (Isomap: the
                                       geodesics between components are
                                       infinite) */
  bool needs_points;                /* the coordinates, not only a graph */
  bool needs_distances;             /* points or a kNN graph: not affinities */
  bool by_landmarks;                /* solved by Locally Linear Landmarks when
                                       opts landmarks > 0 (lll.c): the
                                       front door allows a disconnected
                                       graph (Z joins its pieces) and puts
                                       given-graph points on components */
  /* Fills r->X, r->eigenvalues, r->n_eigenvalues and r->solver_used. */
  nle_status (*embed)(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r);
  /* Its map of new points and what the model file keeps for it
   * (newpoint.h); NULL: the method keeps no model. */
  const nle__spectral_map *map;
} nle__spectral_method;

/* spectral.c: the row of the table for this method, or NULL. */
const nle__spectral_method *nle__spectral_row(nle_spectral_method method);


/* le.c: the nev smallest eigenpairs (ascending) of W's Laplacian of the
 * given kind, dense or by Lanczos as `solver` says (auto: by size); U the
 * eigenvectors of the symmetric form (u, not v = D^-1/2 u) row-major
 * n x nev; inv_sqrt[n] receives D^-1/2 (0 for isolated points). */
nle_status nle__laplacian_eigs(nle_ctx *ctx, const nle_csr *W, nle_laplacian_kind kind, int nev,
                               nle_eigen_solver solver, double tol, double *vals, double *U, double *inv_sqrt,
                               nle_eigen_solver *used);

/* alignment.c: the LLE family's local models. local() fills, for point
 * i, at most max_m indices idx and the m x m block (row-major, stride m)
 * of its contribution to M, using `scratch` (scratch_doubles); returns m,
 * or -1 for a degenerate neighbourhood. A rank_one model (LLE's v v^T)
 * fills only v (m values): the assembly forms v_a v_c itself, the same
 * products, from a max_m-th of the memory it would read scattered. */
typedef struct {
  const char *name;
  const void *model;
  int max_m;
  size_t scratch_doubles;
  int (*local)(const void *model, const nle__spectral_job *job, size_t i, int32_t *idx, double *block,
               double *scratch);
  bool rank_one;
} nle__local_model;
/* M = sum_i S_i B_i S_i^T, its d + 1 bottom eigenpairs (dense up to 400
 * points, else shift-invert), the constant one dropped, the embedding held
 * to sum_i x_i = 0 and (1/N) X^T X = I. */
nle_status nle__alignment_embed(nle_ctx *ctx, const nle__spectral_job *job, const nle__local_model *lm,
                                nle_spectral_result *r);
/* Eigenpairs of the symmetric n x n A (destroyed) by cyclic Jacobi,
 * values descending, vectors the columns of V (row-major): for the small
 * local matrices, no BLAS inside parallel loops. */
void nle__jacobi_eig(double *A, int n, double *vals, double *V);
/* The neighbourhood of point i (the point, then its m - 1 neighbours) in
 * idx, and its tangent directions: in scratch, after the centred m x D
 * coordinates and their m x m Gram matrix, its eigenvectors V (m x m,
 * orthonormal, columns by descending eigenvalue, all orthogonal to the
 * constant vector but the last, which is it) and the m eigenvalues. */
void nle__tangent_space(const nle__spectral_job *job, size_t i, int m, int32_t *idx, double *scratch);
/* Refuses a dim above the data's: a neighbourhood spans at most D tangent
 * directions (who: the method, for the message). */
nle_status nle__check_tangent_dim(nle_ctx *ctx, const nle__spectral_job *job, const char *who);
/* isomap.c: shortest path lengths from `source` over the graph G (edge
 * lengths its values, >= 0) by Dijkstra with a binary heap: dist[N]
 * (INFINITY where unreachable); heap_scratch of nle__dijkstra_scratch(G)
 * bytes. */
void nle__dijkstra(const nle_csr *G, int32_t source, double *dist, void *heap_scratch);
/* The same from several sources at start distances (a new point's edges):
 * dist[v] = min_a start[a] + d_G(sources[a], v). */
void nle__dijkstra_from(const nle_csr *G, size_t count, const int32_t *sources, const double *start, double *dist,
                        void *heap_scratch);
/* The undirected graph of the kNN graph (an edge when either lists the
 * other), its values the Euclidean lengths. */
nle_status nle__geodesic_graph(nle_ctx *ctx, const nle_csr *knn, nle_csr **G);
size_t nle__dijkstra_scratch(const nle_csr *G);
/* lle.c: the reconstruction weights w[k] (summing to 1) of y from the k
 * rows idx of Y (N x D): the local Gram system with reg x its trace added
 * to the diagonal (the centroid where it is singular); scratch k D + k^2. */
void nle__barycentre_weights(const float *y, const float *Y, size_t D, const int32_t *idx, int k, double reg,
                             double *scratch, double *w);
/* lle.c: the same weights from the local Gram matrix G (k x k, destroyed):
 * reg x its trace added to the diagonal, G w = 1, w summing to 1 (the
 * centroid where G stays singular). */
void nle__gram_weights(double *G, int k, double reg, double *w);
/* lle.c: the largest row length of the kNN graph. */
int nle__max_row(const nle_csr *knn);

/* lll.c: Laplacian eigenmaps by Locally Linear Landmarks (o->landmarks >
 * 0; dissertation eqs. 4.9-4.10): fills r as le_embed does, plus the
 * landmarks, their X~ and the reconstruction error. */
nle_status nle__lll_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r);
/* lll.c: x0 = X~^T z0 for each new point (finite, the training data's
 * columns; eq. 4.8 and sec. 4.3 "Out-of-sample mapping"): its landmarks
 * searched as training searched them. */
nle_status nle__lll_transform(nle_ctx *ctx, const nle_spectral_model *m, const nle_matf *Ynew, nle_matd **Xnew);
/* LLL's landmarks (ascending rows of Y), their weights Z (N x L) and its
 * reconstruction error, known beforehand: Z depends on the data, not on
 * the graph or its weights, so a sweep over those reuses it (dissertation
 * sec. 4.5, SPEC G07-4). */
typedef struct nle__lll_basis {
  const int32_t *landmarks;
  const nle_csr *Z;
  double error;
} nle__lll_basis;
/* spectral.c: nle_spectral_embed with LLL's basis given (or NULL). */
nle_status nle__spectral_embed_with(nle_ctx *ctx, nle_spectral_method method, const nle_spectral_input *in,
                                    const nle_spectral_opts *opts, const nle__lll_basis *basis,
                                    nle_spectral_result **out);
/* spectral.c: the directed kNN graph of the points as the front door
 * builds it (in Y, or among principal components re-ranked in Y: then the
 * projected points into *projected), o's automatic search options
 * resolved; r receives the search used and the PCA's seconds. */
nle_status nle__spectral_neighbours(nle_ctx *ctx, const nle_matf *Y, nle_spectral_opts *o, nle_spectral_result *r,
                                   nle_spectral_model *model, nle_csr **graph, nle_matf **projected);
/* lll.c: L landmarks by the method (in `space`, Y or its projection P)
 * and each point's weights Z over its kz nearest. */
nle_status nle__lll_basis_build(nle_ctx *ctx, const nle_matf *Y, const nle_matf *P, size_t L, int kz,
                                nle_landmark_method method, double reg, int32_t **landmarks, nle_csr **Z,
                                double *error);
/* cluster.c: nle_spectral_cluster with LLL's basis given (or NULL). */
nle_status nle__spectral_cluster_with(nle_ctx *ctx, const nle_spectral_input *in, const nle_cluster_opts *opts,
                                      const nle__lll_basis *basis, nle_cluster_result **out);
/* lll.c: the nev eigenpairs at one end of the reduced pencil (At, Bt),
 * both L x L (Bt NULL: Z^T Z, the case B = I), signs fixed: vals, X~ into
 * *Xl and X = Z X~ into *X (either may be NULL). Shared by LLL's solvers
 * and kernel PCA by LLL (src/mds/kpca_lll.c). */
nle_status nle__lll_solve_reduced(nle_ctx *ctx, const nle_csr *Z, const double *At, const double *Bt, int nev,
                                  bool largest, double *vals, nle_matd **Xl, nle_matd **X, nle__pencil_info *info);
/* lll.c: each of Q's rows' kz nearest landmarks (Yl), nearest first:
 * exactly, or among candidates found in the projections (Pl, Pq; NULL:
 * none) and re-ranked in the data. Row by row: the same rows give the
 * same lists in any company. */
nle_status nle__lll_nearest(nle_ctx *ctx, const nle_matf *Yl, const nle_matf *Q, const nle_matf *Pl,
                            const nle_matf *Pq, int kz, nle_csr **near);
nle_status nle__lll_weights_from(nle_ctx *ctx, const nle_matf *Yl, const nle_matf *Q, const nle_csr *near, int kz,
                                 double reg, bool over_ranks, size_t n_all, nle_csr **Z, double *error);
/* lll.c: X = Z Xl, Z's rows. */
nle_status nle__lll_expand(nle_ctx *ctx, const nle_csr *Z, const nle_matd *Xl, nle_matd **X);
/* lll.c: the reduced pencil (Z^T (alpha A + diag A_diag) Z, Z^T (B +
 * diag B_diag) Z; B and B_diag NULL: I) and its nev eigenpairs at one end:
 * vals, X~ into *Xl (signs fixed), X = Z X~ into *X when asked; dense or
 * sparse as `form` says. */
nle_status nle__lll_pencil(nle_ctx *ctx, const nle_csr *Z, const nle_csr *A, double alpha, const double *A_diag,
                           const nle_csr *B, const double *B_diag, int nev, bool largest, nle_lll_pencil form,
                           double tol, bool block, double *vals, nle_matd **Xl, nle_matd **X, nle__pencil_info *info);
/* lll.c: the nev eigenpairs at one end of the reduced pencil given as
 * CSR (At, Bt, L x L, both triangles): held sparse or dense as `form`
 * says (auto: nle__lll_pencil_sparse), a singular B~ on the sparse route
 * solved in its range by the dense one when that fits; *V (L x nev) with
 * its signs fixed. */
nle_status nle__lll_solve_csr(nle_ctx *ctx, const nle_csr *At, const nle_csr *Bt, int nev, bool largest,
                              nle_lll_pencil form, double tol, bool block, double *vals, nle_matd **V,
                              nle__pencil_info *info);
/* lll_dist.c: the reduced pencil (Z^T (alpha W + diag A_diag) Z, Z^T
 * diag(B_diag) Z; B_diag NULL: I) over ranks: Z, W (global columns),
 * A_diag and B_diag this rank's rows of N, in whole blocks of
 * NLE__RANK_ROW_BLOCK; each entry summed in fixed point (the same bits for
 * any number of ranks, one included), then solved alike on every rank
 * (nle__lll_solve_csr) into vals and *V, L x nev. Collective. */
nle_status nle__lll_pencil_rows(nle_ctx *ctx, const nle_csr *Z, int kz, const nle_csr *W, double alpha,
                                const double *A_diag, const double *B_diag, int nev, bool largest, nle_lll_pencil form,
                                double tol, bool block, double *vals, nle_matd **V, nle__pencil_info *info);
/* landmarks.c: rows idx[0..m) of the points Y holds: alone Y's own rows;
 * over ranks (Y this rank's rows) every rank's among them, gathered on
 * every rank. Collective over ranks. */
nle_status nle__rows_at(nle_ctx *ctx, const nle_matf *Y, const int32_t *idx, size_t m, nle_matf **out);
/* landmarks.c: nle_landmarks_select over ranks (Y this rank's rows): the
 * same landmarks as alone (k-means refused on more than one rank). */
nle_status nle__landmarks_select_rows(nle_ctx *ctx, const nle_matf *Y, size_t L, nle_landmark_method method,
                                      int32_t *idx);
/* K_Z as it runs: NLE_AUTO is d + 1 held within [5, 10], capped at D + 1; at most L. */
int nle__lll_kz(const nle_spectral_opts *o, size_t L, size_t D);
/* lll.c: whether the reduced pencil of L landmarks is held sparse: as
 * `form` says, or (auto) above nle__lll_sparse_min landmarks or when the
 * dense pencil exceeds the memory cap. Tests lower the threshold. */
bool nle__lll_pencil_sparse(nle_ctx *ctx, nle_lll_pencil form, size_t L);
extern size_t nle__lll_sparse_min;

/* The graph stage's options as the spectral options say (k, radius, the
 * search, PCA, weights, symmetrisation). */
void nle__spectral_graph_opts(const nle_spectral_opts *o, nle_graph_opts *g);
/* nle__graph_weights with the spectral options' weights. */
nle_status nle__spectral_weights(nle_ctx *ctx, const nle_csr *knn, const nle_spectral_opts *o, nle_csr **W,
                                 double **beta);
/* A Gaussian's automatic width (o->sigma NLE_AUTO), as the graph stage
 * resolves it. */
nle_status nle__resolve_sigma(nle_ctx *ctx, const nle_csr *knn, nle_spectral_opts *o);
/* The weight of an edge of squared length d2 under o's weights (the
 * new-point maps weigh their edges as training did). */
double nle__affinity_weight(const nle_spectral_opts *o, double d2, double scale_i, double scale_j);
/* join.c: where the distances between any two points come from: the
 * points (Euclidean) or, without them, an N x N distance matrix. */
typedef struct {
  const nle_matf *Y;
  const nle_matf *distances;
} nle__join_space;
typedef struct {
  int32_t a, b; /* its ends */
  double d2;    /* its squared length */
} nle__join_edge;
/* The shortest edges that join W's connected components (positive weights):
 * a minimum spanning tree of the components, exact (Boruvka; see join.c),
 * c - 1 edges for c components, into *edges (malloc'd; *count of them). */
nle_status nle__join_components(nle_ctx *ctx, const nle__join_space *space, const nle_csr *W, nle__join_edge **edges,
                                int64_t *count);
/* The kNN graph with the edges added in both ends' rows, each where its
 * squared length sorts it (the rows stay sorted). */
nle_status nle__knn_add_edges(nle_ctx *ctx, const nle_csr *knn, const nle__join_edge *edges, int64_t count,
                              nle_csr **out);

/* model.c: the out-of-sample model of a finished run (r's embedding and
 * eigenvalues, the graph's reach, scales and degrees; the method has added
 * its own parts, the search its components and the entropic weights their
 * betas). */
nle_status nle__spectral_model_finish(nle_ctx *ctx, nle_spectral_model *m, nle_spectral_method method,
                                      const nle_spectral_opts *o, const nle_matf *Y, const nle_csr *knn,
                                      const nle_csr *W, const nle_spectral_result *r);
/* Points on the model's search components (float). */
nle_status nle__spectral_project(nle_ctx *ctx, const nle_spectral_model *m, const nle_matf *Y, nle_matf **P);

#endif
