/* model_internal.h — the model's state, shared by model.c and the
 * repulsion engines' glue (repulsion_*.c), and the engine type table. */
#ifndef NLE_MODEL_INTERNAL_H
#define NLE_MODEL_INTERNAL_H

#include "nle_internal.h"
#include "../nbody/nbody.h"

/* A repulsion engine (dissertation ch. 5): its names, what it serves, and
 * how it sums the model's repulsion. One file per engine defines one of
 * these; the table in repulsion.c lists them. Adding an engine: its file,
 * its row, and its value in the public nle_repulsion enum. */
enum { NLE__KERNEL_GAUSSIAN = 1, NLE__KERNEL_STUDENT = 2 };
typedef struct nle__engine {
  nle_repulsion id;
  const char *name;        /* on the command line and in nle_repulsion_parse ("bh") */
  const char *title;       /* in messages ("Barnes-Hut") */
  bool any_model;          /* serves every model and W- (the exact sums) */
  unsigned kernels;        /* else: NLE__KERNEL_* of the models it serves, with
                              their repulsion a plain kernel sum (uniform W-) */
  bool sqdist_features;    /* also EE/t-EE with W- of squared distances given
                              by features */
  int max_dim;             /* embeddings of 1..max_dim dimensions (0: any) */
  bool single_precision;   /* its sums are good to single precision (a grid of
                              floats): the attraction beside it then reads W+
                              in float too, a third fewer bytes an evaluation */
  /* Keeps state between evaluations in m->engine_state (NULL: none). */
  nle_status (*attach)(nle_ctx *ctx, nle_model *m);
  void (*detach)(nle_model *m);
  /* The repulsion at X (about its centroid), at schedule position t in
   * [0, 1] (1: the spec's accuracy): forces into m->force, the kernel sums
   * per row into m->row_e (or only their total into m->fast_z with
   * m->fast_z_only set). NULL: the model's own exact pairwise sums. */
  nle_status (*forces)(nle_ctx *ctx, nle_model *m, const nle_matd *X, double t);
} nle__engine;

/* The engine with this id, or NULL. */
const nle__engine *nle__engine_find(nle_repulsion id);

struct nle_model {
  nle_model_spec spec;
  double exaggeration; /* factor on the attractive term (1 normally) */
  int64_t n;
  int student;    /* Student-t kernel (t-SNE, t-EE) */
  int normalised; /* s-SNE, t-SNE: log sum K */
  nle_csr *WpT;   /* transpose of W+, so the gradient is exact for any W+;
                     NULL when W+ is symmetric (then each row counts twice) */
  size_t max_row;                 /* longest row of W+ and its transpose */
  /* Work space of nle_model_eval, kept between calls (sized for `ws_dim`). */
  double *row_e, *force, *inv_z;
  /* The FFT engine sums only the total of K, not its rows (model kinds
   * other than SNE need no more): then row_e is not set and this holds it. */
  double fast_z;
  int fast_z_only;
  double *centred; /* fast engines: X about its centroid */
  size_t ws_dim;
  double *curv_inv_z; /* SD-: 1/Z (in [0]) or the 1/Z_n at the prepared X */
  /* SD- asks for the normalisers at the X the optimiser last evaluated: once
   * it has, every evaluation keeps a copy of its X and Z, so they are not
   * summed again. */
  double *last_x, last_z;
  size_t last_dim; /* columns last_x was allocated for */
  int last_valid;
  /* seconds spent in the evaluations' repulsion and attraction, and their
   * number (logged after an embedding's optimisation) */
  double seconds_repulsion, seconds_attraction;
  int64_t evaluations;
  const nle__engine *engine; /* the repulsion engine's type (repulsion.c) */
  void *engine_state;         /* what that engine keeps between calls */
  /* Squared-distance W- from features: the features about their mean (the
   * decomposition's terms then stay of the size of the distances), N x nf,
   * and their squared norms. */
  double *feat, *feat_sq;
  size_t nf;
  /* The fast engines' locality order (built at the first evaluation that
   * uses it): point order[i] sits at position i of the centred X the
   * engines and the attraction sweep, and W+ is renumbered to match, so
   * that a row's neighbours, and the grid nodes the FFT engine spreads to,
   * lie in nearby memory. With points in the data's order those reads are
   * random: on 70,000 Fashion-MNIST points, t-SNE's 750 iterations took 34 s
   * on the data's order and 23 s on its rows put in this order beforehand
   * (single runs on a noisy machine; the whole pipeline went from about 40 s
   * to 32 s with this order built in). */
  int32_t *order;
  nle_csr *Wp_local, *WpT_local;
  int64_t locality_min; /* fewest points for which it pays */
  double accuracy;     /* schedule position in [0, 1] (1: the spec's setting) */
  int skip_energy;     /* nle__model_want_energy(m, 0): gradient only */
};

/* Newton's third law restored on approximate forces (their mean removed). */
void nle__remove_mean_force(double *force, size_t N, size_t d);
/* The exact pairwise repulsion (any model). */
nle_status nle__exact_repulsion(nle_ctx *ctx, nle_model *m, const nle_matd *X);
/* Barnes-Hut's forces at schedule position t: the engine of its own and the
 * fallback of the grid engines for maps their grids cannot hold. */
nle_status nle__bh_forces(nle_ctx *ctx, nle_model *m, const nle_matd *X, double t);

#endif
