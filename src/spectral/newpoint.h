/* newpoint.h — the second half of a spectral method: its map of new points
 * (Bengio, Paiement, Vincent, Delalleau, Le Roux and Ouimet 2004) and what
 * the model file keeps for it. transform.c finds each new point's edges to
 * the training points, as training found its graph's, and hands them to the
 * map of the method's row (method.h); model.c saves and loads the model's
 * common parts and calls the map for its own records. A method brings its
 * map in its own file (or points at another method's: the LLE family shares
 * the reconstruction weights of lle.c). */
#ifndef NLE_SPECTRAL_NEWPOINT_H
#define NLE_SPECTRAL_NEWPOINT_H

#include "../io/model_file.h"

/* One edge between a new point y and training point j. */
typedef struct {
  int32_t j;
  float d2;                 /* |y - y_j|^2 */
  uint8_t forward, reverse; /* y lists j; j would list y */
} nle__oos_edge;

/* What a map gets of one new point. */
typedef struct {
  const nle_spectral_model *m;
  const float *y;              /* the new point (m->D floats) */
  const nle__oos_edge *edges;  /* sorted by training index */
  size_t count;
  const int32_t *fwd;          /* the forward neighbours, nearest first */
  size_t nf;
  int32_t self;                /* the training point y coincides with (not an edge), or -1 */
  const double *sd;            /* squared distances to every training point, in the search space */
  double **grown;              /* a buffer the map may grow for a point that needs more than
                                  its scratch (*grown_doubles of them); freed by the caller */
  size_t *grown_doubles;
} nle__oos_point;

typedef struct nle__spectral_map {
  const char *name;  /* nle_spectral_model_map's words ("nystrom") */
  bool forward_only; /* y's own neighbours carry the map: the reverse edges
                        (a scan of every training point) are not searched */
  /* Scratch per block of points, in bytes (8-byte aligned when given). */
  size_t (*scratch_bytes)(const nle_spectral_model *m);
  /* y's place into x[m->dim]: 1, or 0 when y has no usable edge, -1 when
   * out of memory. */
  int (*point)(const nle__oos_point *p, void *scratch, double *x);
  /* What the map keeps of a finished run beyond the common model (W the
   * weights the method solved on); NULL: nothing. */
  nle_status (*keep)(nle_ctx *ctx, nle_spectral_model *m, const nle_csr *W);
  /* Its records in the model file, and reading them back (checked); NULL:
   * none. */
  void (*save)(nle__afile *af, const nle_spectral_model *m);
  nle_status (*load)(nle_ctx *ctx, const nle__rec_file *f, nle_spectral_model *m);
} nle__spectral_map;

/* The maps the methods of the tree share. */
extern const nle__spectral_map nle__nystrom_map, nle__diffusion_map, nle__geodesic_map, nle__weights_map;

/* model.c: the spectral model's kind of model file. */
extern const nle__model_kind nle__spectral_model_kind;

/* model.c: copies of records, checked as they are read: floats finite and
 * >= 0; indices in [0, bound). */
nle_status nle__spectral_read_floats(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, float **dst);
nle_status nle__spectral_read_ints(nle_ctx *ctx, const nle__rec_file *f, const char *name, size_t count, int64_t bound,
                                   int32_t **dst);

#endif
