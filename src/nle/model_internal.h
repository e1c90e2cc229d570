/* model_internal.h — the model's state, shared by model.c and the
 * repulsion engines' glue (repulsion_*.c), and the engine type table. */
#ifndef NLE_MODEL_INTERNAL_H
#define NLE_MODEL_INTERNAL_H

#include "nle_internal.h"
#include "../nbody/nbody.h"

/* An engine's part in the out-of-sample map F(y) of a trained map
 * (oos_batch.c): all new points minimised together, each evaluation
 * summing the training map's kernel at every point at once. */
typedef struct nle__oos_engine {
  unsigned kernels;     /* NLE__KERNEL_* of the trained maps whose F(y) it sums */
  unsigned default_for; /* the kernels whose maps of 5,000 points or more take it by default */
  bool parallel_ranges; /* sums(serial = 1) only reads the plan: ranges of points are
                           minimised on threads of their own (else one range, each
                           evaluation on the context's threads) */
  const char *grid;     /* in "too wide for the %s grid" */
  /* Whether its grid covers the box (2 x d: lower corner, upper corner). */
  bool (*fits)(const nle_matd *box);
  /* Plans the sums over the sources Xc (they never move) inside region. */
  nle_status (*plan)(nle_ctx *ctx, const nle_matd *Xc, const nle_matd *region, bool student, void **plan);
  /* At each target t_i: S[i] = sum_n K(|t_i - x_n|^2) and R[i] (d values)
   * = sum_n K'(|t_i - x_n|^2) (t_i - x_n), K' = dK/d(d^2); scratch of
   * T->rows x (d + 1) doubles. serial: from inside a parallel block. */
  nle_status (*sums)(nle_ctx *ctx, void *plan, const nle_matd *T, double *S, double *R, double *scratch, int serial);
  void (*free_plan)(void *plan);
  /* z[n] = sum_{m != n} K(|x_n - x_m|^2) over the training map (its
   * normalisers); NULL: summed exactly. */
  nle_status (*row_sums)(nle_ctx *ctx, const nle_matd *X, bool student, double *z);
} nle__oos_engine;

/* A repulsion engine (dissertation ch. 5): its names, what it serves, and
 * how it sums the model's repulsion. One file per engine defines one of
 * these; the table in repulsion.c lists them, and an engine's value in
 * nle_repulsion is its place there. Adding an engine: its file and its
 * row. */
enum { NLE__KERNEL_GAUSSIAN = 1, NLE__KERNEL_STUDENT = 2 };
typedef struct nle__engine {
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
  /* How F(y) of a trained map sums with it (NULL: the per-point exact sums
   * when any_model, else F(y) does not take it). */
  const nle__oos_engine *oos;
} nle__engine;

/* The engine with this id, or NULL. */
const nle__engine *nle__engine_find(nle_repulsion id);
/* The engine whose oos row is the default for the kernel (NLE__KERNEL_*),
 * or NLE_REPULSION_EXACT. */
nle_repulsion nle__oos_default_engine(unsigned kernel);
/* "exact, fgt or fft": the engines F(y) takes, the any-model one first,
 * then by the kernels they serve, fewest first; and "fgt for the Gaussian
 * kernel, fft for both": what each fast one serves. */
void nle__oos_engine_names(char *names, size_t names_len, char *serves, size_t serves_len);

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
  /* Distributed (issue 38, model_dist.c): with a communicator of several
   * ranks this rank holds rows [row0, row1) of the N points: W+ (and WpT)
   * are those rows with global columns, X and G those rows of the map;
   * `map` receives the whole map at each evaluation. Alone: 0 and N. */
  size_t row0, row1;
  int distributed;
  double *map;
  double *gathered; /* N doubles: every rank's part of a per-row vector */
};

/* Distributed models (model_dist.c). */
/* Learns N and this rank's rows from W+'s local rows, checks W+'s columns,
 * and builds the local rows of W+'s transpose by an all-to-all (kept in
 * m->WpT unless W+ is symmetric on every rank). */
nle_status nle__model_dist_attach(nle_ctx *ctx, nle_model *m);
/* Every rank's rows of X (m->row1 - m->row0 of them) into m->map, N x d. */
nle_status nle__model_dist_map(nle_ctx *ctx, nle_model *m, const nle_matd *X);
/* Every rank's values of v[row0..row1) into all of v[0..N), in place. */
nle_status nle__model_dist_rows(nle_ctx *ctx, nle_model *m, double *v);
/* The sum, in block order, of every rank's per-block partials (its blocks
 * in order, `count` of them): the single process's sum of the same
 * partials, bit for bit, on every rank. */
nle_status nle__dist_ordered_sum(nle_ctx *ctx, const double *partials, size_t count, double *total);
/* deg_i = sum_j (w_ij + w_ji) / 2 over the local rows of W+ (WT: the local
 * rows of its transpose), added in the order a single pass over all rows
 * of W+ would add them, so that any partition gives the same bits. */
double *nle__attraction_degrees(nle_ctx *ctx, const nle_csr *W, const nle_csr *WT, size_t row0);
/* A sum whose order runs over the points, continued from rank to rank:
 * part(user, start) adds this rank's terms, in order, to start; rank 0
 * starts at 0, each next rank from the previous one's result (ranks - 1
 * ring steps, then a broadcast): the single process's bits on every rank,
 * at a latency per rank. For one-off totals (W+'s total, KL's sum p log p). */
nle_status nle__dist_chain_sum(nle_ctx *ctx, double (*part)(void *user, double start), void *user, double *total);
/* The same for n <= NLE__CHAIN_MAX sums at once: part(user, running) adds
 * this rank's terms to running[0..n) (zeros on rank 0), which ends on every
 * rank with the totals. Per evaluation where a running sum over all points must be
 * continued (the mean force). */
enum { NLE__CHAIN_MAX = 3 /* a map's dimensions */ };
nle_status nle__dist_chain_sums(nle_ctx *ctx, void (*part)(void *user, double *running), void *user, size_t n,
                                double *running);
/* nle__remove_mean_force for the forces of every rank's rows, this rank
 * holding its rows [row0, row1) of them (indexed as in the map): the mean
 * by nle__dist_chain_sums (the single process's one running sum over the
 * points), taken from this rank's rows. */
nle_status nle__dist_remove_mean_force(nle_ctx *ctx, const nle_model *m, double *force, size_t d);
/* This rank's rows of an N x d start of normal values times scale, from the
 * one stream (seed, stream) drawn in point order: the values before this
 * rank's rows are drawn and dropped, so every rank count gives the single
 * process's start. X: this rank's rows, allocated. */
nle_status nle__dist_normal_rows(nle_ctx *ctx, uint64_t stream, double scale, nle_matd *X);
/* X (this rank's rows) scaled so that its first column over all ranks has
 * standard deviation target, the column gathered (N doubles, once) and its
 * mean and variance summed in point order as one process does. */
nle_status nle__dist_scale_first_column(nle_ctx *ctx, nle_matd *X, double target);

/* locality_dist.c: the points renumbered for locality under a
 * communicator. *order (N entries, order[new] = the input's index; NULL
 * when there is nothing to order by) from the leaf order of one
 * random-projection tree over the leading columns of `space` (this rank's
 * canonical rows), built alike on every rank: the same on any number of
 * ranks. */
nle_status nle__dist_locality_order(nle_ctx *ctx, const nle_matf *space, int32_t **order);
/* This rank's rows of X (global rows row0..) moved to global places
 * to[row]: *out holds this rank's canonical rows of the n afterwards. */
nle_status nle__dist_move_dense(nle_ctx *ctx, const nle_matd *X, size_t row0, size_t n, const int32_t *to,
                                nle_matd **out);
/* The same for a square matrix's rows, its columns renumbered by `to` too
 * and each row sorted by them, its values made `dtype`; *W replaced
 * (freed on failure). */
nle_status nle__dist_move_csr(nle_ctx *ctx, nle_csr **W, size_t row0, const int32_t *to, nle_dtype dtype);

/* Newton's third law restored on approximate forces (their mean removed). */
void nle__remove_mean_force(double *force, size_t N, size_t d);
/* The exact pairwise repulsion (any model). */
nle_status nle__exact_repulsion(nle_ctx *ctx, nle_model *m, const nle_matd *X);
/* Barnes-Hut's forces at schedule position t: the engine of its own and the
 * fallback of the grid engines for maps their grids cannot hold. */
nle_status nle__bh_forces(nle_ctx *ctx, nle_model *m, const nle_matd *X, double t);

#endif
