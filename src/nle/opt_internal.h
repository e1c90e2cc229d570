/* opt_internal.h — the optimiser's state and the pieces its files share
 * (optimize.c: the table, planning, directions and the line-search loop;
 * fixed_rate.c: t-SNE-style descent; checkpoint.c: saving and resuming a
 * run; opt_*.c: the optimisers, each with its own state; opt_base.c: what
 * they all call, calling none of them). */
#ifndef NLE_OPT_INTERNAL_H
#define NLE_OPT_INTERNAL_H

#include "nle_internal.h"
#include "../io/io_internal.h"

/* An optimiser (a row of the table in optimize.c, one file each): how it
 * plans, the direction B p = -g it solves, how it picks its first trial
 * step, and the state it keeps (GSL's state_size pattern: the run holds an
 * opaque block of state_size bytes that only the row's hooks read), with,
 * for L-BFGS and CG, the history that corrects the direction and that a
 * checkpoint carries. */
typedef enum { NLE__GRAPH_NONE, NLE__GRAPH_WHOLE, NLE__GRAPH_SPARSIFIED } nle__graph_need;
typedef enum {
  NLE__FIRST_STEP_KEEP,         /* the last accepted step (SD, SD-, FP: B has W+'s scale) */
  NLE__FIRST_STEP_GRADIENT,     /* 1 / |p| at first, then scaled by the slopes' ratio */
  NLE__FIRST_STEP_QUASI_NEWTON  /* 1 once there is history, else as GRADIENT */
} nle__first_step;
typedef struct nle_opt nle_opt;
/* Two counters of a history that the checkpoint's "ints" record keeps (its
 * layout predates the hooks; L-BFGS: pairs kept and the ring's head; CG:
 * whether it has a previous step); 0 for an optimiser without history. */
typedef struct {
  int64_t count, head;
} nle__history_counters;
typedef struct nle__optimizer {
  const char *name;              /* on the command line ("lbfgs"); its kind is its place in the table */
  const char *alias;             /* another accepted spelling (NULL: none) */
  nle__graph_need graph;         /* the W+ copy plan receives (kappa neighbours or whole) */
  bool needs_x;                  /* the direction depends on X (SD-) */
  nle__first_step first_step;
  size_t state_size;             /* bytes of o->state, zeroed at nle_opt_new (0: none) */
  /* At nle_opt_new, with the W+ copy (it may keep it, setting *W NULL); NULL: none. */
  nle_status (*state_init)(nle_ctx *ctx, nle_opt *o, nle_csr **W);
  /* Frees what the state points to (not the block itself); NULL: nothing. */
  void (*state_free)(nle_opt *o);
  /* B p = -g (X NULL unless needs_x). */
  nle_status (*direction)(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p);
  /* A history of len-long vectors (NULL hooks: none). reset: emptied and
   * sized for len at each run's start and before a checkpoint is read;
   * apply: corrects p, returning whether the history had anything; update:
   * after each accepted step from x (gradient g) to xn (gn) along p, first
   * forgetting the history when the run restarted the direction to -g. */
  nle_status (*history_reset)(nle_ctx *ctx, nle_opt *o, size_t len);
  bool (*history_apply)(nle_opt *o, const double *g, double *p);
  void (*history_update)(nle_opt *o, bool forget, const double *x, const double *xn, const double *g,
                         const double *gn, const double *p);
  /* The checkpoint's share of the history: its counters, its records (when
   * the history is sized for len); read restores both after a reset to len. */
  nle__history_counters (*history_counters)(const nle_opt *o);
  void (*history_write)(const nle_opt *o, nle__afile *af, size_t len);
  nle_status (*history_read)(nle_ctx *ctx, nle_opt *o, const nle__rec_file *f, size_t len,
                             const nle__history_counters *counters);
} nle__optimizer;

/* The optimiser of this kind, or NULL. */
const nle__optimizer *nle__optimizer_find(nle_opt_kind kind);
/* W+ kept to each row's kappa largest weights (0: all), connected and
 * symmetrised: what the partial-Hessian directions read (opt_spectral.c). */
nle_status nle__opt_graph(nle_ctx *ctx, const nle_csr *W, int kappa, nle_csr **out);
/* p = -g (opt_gd.c). */
nle_status nle__opt_steepest(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const nle_matd *g, nle_matd *p);

struct nle_opt {
  const nle__optimizer *type;
  void *state;             /* type->state_size bytes, the type's own */
  nle_model *model;
  nle_opt_opts o;
  int64_t n;
  nle_opt_state run;       /* the run in progress, as of its last iteration */
  /* Checkpoints (nle_opt_set_checkpoint). */
  char *ckpt_path, *ckpt_fingerprint;
  int ckpt_every;
  int64_t ckpt_serial; /* distributed: the serial of the parts last written or resumed from (0: none) */
};

/* opt_base.c */
double nle__opt_dot(const double *a, const double *b, size_t len);
double nle__opt_max_abs(nle_ctx *ctx, const nle_matd *m);
/* Sets the model's accuracy for this iteration of the schedule; whether it
 * is an accuracy of its own (inside the schedule, with a fast engine). */
int nle__opt_schedule_accuracy(nle_ctx *ctx, const nle_opt *o, int iteration);
/* Empties (and sizes for len values) the optimiser's history, if it keeps one. */
nle_status nle__opt_history_reset(nle_ctx *ctx, nle_opt *o, size_t len);
/* A cancelled run: its checkpoint written, a resumable state kept (checkpoint.c). */
nle_status nle__opt_cancelled(nle_ctx *ctx, nle_opt *o, const nle_matd *X);
/* Copies the checkpoint's record `name` (count doubles) into dst
 * (checkpoint.c, for the history_read hooks). */
nle_status nle__opt_restore(nle_ctx *ctx, const nle__rec_file *f, const char *name, double *dst, size_t count);
/* Fixed-rate gradient descent (fixed_rate.c). */
nle_status nle__opt_run_fixed_rate(nle_ctx *ctx, nle_opt *o, nle_model *model, nle_matd *X, nle_opt_report *out);

#endif
