/* checkpoint.c — a run's state in a checkpoint file (CRC-checked records,
 * written atomically at once) and its resumption, bit for bit. */
#include "opt_internal.h"
#include "../core/comm.h"
#include "../io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Checkpoints ---------------------------------------------------------- */

/* Issue 38: a distributed run's checkpoint would be one file per rank and
 * a manifest; until then it is refused on every rank alike. */
static nle_status distributed_refused(nle_ctx *ctx) {
  return nle__fail(ctx, NLE_ERR_ARG, "checkpoint: a distributed run writes and resumes no checkpoints yet ({@checkpoint} "
                   "and {@resume} run in one process)");
}

nle_status nle_opt_set_checkpoint(nle_ctx *ctx, nle_opt *o, const char *path, int every, const char *fingerprint) {
  free(o->ckpt_path);
  free(o->ckpt_fingerprint);
  o->ckpt_path = o->ckpt_fingerprint = NULL;
  o->ckpt_every = 0;
  if (!path) return NLE_OK;
  if (nle__distributed(ctx)) return distributed_refused(ctx);
  if (every < 0) return nle__fail(ctx, NLE_ERR_ARG, "checkpoint: every %d iterations must be >= 0", every);
  nle_status s = nle_check_output_path(ctx, path);
  if (s) return s;
  o->ckpt_path = strdup(path);
  o->ckpt_fingerprint = strdup(fingerprint ? fingerprint : "");
  if (!o->ckpt_path || !o->ckpt_fingerprint) return nle__fail(ctx, NLE_ERR_NOMEM, "out of memory");
  o->ckpt_every = every;
  return NLE_OK;
}

enum { CK_ACTIVE, CK_ITERS, CK_EVALS, CK_STALLED, CK_CONVERGED, CK_PATH_STEP, CK_PATH_ALL, CK_PATH_ITERS,
       CK_PATH_EVALS, CK_HIST_COUNT, CK_HIST_HEAD, CK_HAS_VELOCITY, CK_KIND, CK_N, CK_D, CK_INTS };
enum { CK_E0, CK_E, CK_STEP, CK_PREV_SLOPE, CK_SECONDS, CK_GRAD, CK_PATH_E0, CK_PATH_E, CK_PATH_SECONDS, CK_LAMBDA,
       CK_DOUBLES };

nle_status nle_opt_save_checkpoint(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const char *path,
                                   const char *fingerprint) {
  const nle_opt_state *r = &o->run;
  const nle__optimizer *type = o->type;
  size_t len = X->rows * X->cols;
  nle__history_counters history = type->history_counters ? type->history_counters(o) : (nle__history_counters){0, 0};
  int64_t ints[CK_INTS] = {r->active, r->rep.iterations, r->rep.evaluations, r->stalled, r->rep.converged,
                           r->path_step, r->path_all_converged, r->path_total.iterations, r->path_total.evaluations,
                           history.count, history.head, r->velocity != NULL, o->o.kind, (int64_t)X->rows,
                           (int64_t)X->cols};
  double doubles[CK_DOUBLES] = {r->rep.E0, r->E, r->step, r->prev_slope, r->rep.seconds, r->rep.grad_max,
                                r->path_total.E0, r->path_total.E, r->path_total.seconds, nle_model_lambda(o->model)};
  nle__afile af;
  nle_status s = nle__rec_open(ctx, path, "checkpoint", &af);
  if (s) return s;
  af.immediate = 1; /* a checkpoint must be there if the run dies */
  nle__rec_put_text(&af, "fingerprint", fingerprint ? fingerprint : "");
  nle__rec_put(&af, "ints", 'l', ints, CK_INTS);
  nle__rec_put(&af, "doubles", 'd', doubles, CK_DOUBLES);
  nle__rec_put(&af, "X", 'd', X->data, len);
  if (type->history_write) type->history_write(o, &af, len); /* after X, as files have always had it */
  if (r->velocity) {
    nle__rec_put(&af, "velocity", 'd', r->velocity, len);
    nle__rec_put(&af, "gain", 'd', r->gain, len);
  }
  return nle__afile_commit(ctx, &af);
}

nle_status nle__opt_checkpoint(nle_ctx *ctx, nle_opt *o, const nle_matd *X) {
  if (!o->ckpt_path) return NLE_OK;
  return nle_opt_save_checkpoint(ctx, o, X, o->ckpt_path, o->ckpt_fingerprint);
}

/* A cancelled run saves its checkpoint (if one is set) and keeps the
 * cancellation's message. */
nle_status nle__opt_cancelled(nle_ctx *ctx, nle_opt *o, const nle_matd *X) {
  if (!o->ckpt_path) return NLE_ERR_CANCELLED;
  char message[512];
  snprintf(message, sizeof message, "%s", nle_ctx_error(ctx));
  nle_status s = nle__opt_checkpoint(ctx, o, X);
  if (s) return s;
  return nle__fail(ctx, NLE_ERR_CANCELLED, "%s; checkpoint written to %s", message, o->ckpt_path);
}

nle_status nle__opt_restore(nle_ctx *ctx, const nle__rec_file *f, const char *name, double *dst, size_t count) {
  const void *src;
  nle_status s = nle__rec_get(ctx, f, name, 'd', count, &src);
  if (!s) memcpy(dst, src, count * sizeof(double));
  return s;
}

static nle_status restore_array(nle_ctx *ctx, const nle__rec_file *f, const char *name, double **dst, size_t count) {
  if (!*dst) *dst = nle__malloc(ctx, count * sizeof(double), name);
  if (!*dst) return NLE_ERR_NOMEM;
  return nle__opt_restore(ctx, f, name, *dst, count);
}

/* The checkpoint's fingerprint against the run's: both are "key=value"
 * words; a mismatch names the first key whose value differs. */
static nle_status compare_fingerprint(nle_ctx *ctx, const char *path, const char *stored, const char *wanted) {
  if (!strcmp(stored, wanted)) return NLE_OK;
  const char *w = wanted;
  while (*w) {
    while (*w == ' ') w++;
    size_t word = strcspn(w, " "), key = strcspn(w, "=");
    if (key < word) {
      /* the same key in the stored text, at a word's start */
      const char *t = stored, *found = NULL;
      while (*t && !found) {
        while (*t == ' ') t++;
        if (!strncmp(t, w, key + 1)) found = t;
        t += strcspn(t, " ");
      }
      size_t stored_word = found ? strcspn(found, " ") : 0;
      if (!found)
        return nle__fail(ctx, NLE_ERR_ARG, "%s: the checkpoint is of another run (it has no %.*s); resume with the same "
                         "data and options", path, (int)key, w);
      if (stored_word != word || strncmp(found, w, word))
        return nle__fail(ctx, NLE_ERR_ARG, "%s: the checkpoint is of another run: %.*s was %.*s there, %.*s now; resume "
                         "with the same data and options", path, (int)key, w, (int)(stored_word - key - 1),
                         found + key + 1, (int)(word - key - 1), w + key + 1);
    }
    w += word;
  }
  return nle__fail(ctx, NLE_ERR_ARG, "%s: the checkpoint is of another run (another command or version); resume with the "
                   "same data and options", path);
}

nle_status nle_opt_check_checkpoint(nle_ctx *ctx, const char *path, const char *fingerprint) {
  nle__rec_file f;
  nle_status s = nle__rec_read(ctx, path, "checkpoint", &f);
  if (s) return s;
  char stored[4096];
  s = nle__rec_text(ctx, &f, "fingerprint", stored, sizeof stored);
  if (!s) s = compare_fingerprint(ctx, path, stored, fingerprint ? fingerprint : "");
  nle__rec_free(&f);
  return s;
}

/* The optimiser's history (its records and the two counters of "ints"),
 * read by its own hook; an optimiser without one kept none. */
static nle_status restore_history(nle_ctx *ctx, nle_opt *o, const nle__rec_file *f, size_t len, const int64_t *ints) {
  nle__history_counters counters = {ints[CK_HIST_COUNT], ints[CK_HIST_HEAD]};
  if (o->type->history_read) return o->type->history_read(ctx, o, f, len, &counters);
  if (counters.count || counters.head) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged optimiser history", f->path);
  return NLE_OK;
}

nle_status nle_opt_load_checkpoint(nle_ctx *ctx, nle_opt *o, nle_matd *X, const char *path, const char *fingerprint) {
  if (nle__distributed(ctx)) return distributed_refused(ctx);
  nle__rec_file f;
  nle_status s = nle__rec_read(ctx, path, "checkpoint", &f);
  if (s) return s;
  char stored[4096];
  const void *iv = NULL, *dv = NULL, *xv = NULL;
  size_t len = X->rows * X->cols;
  s = nle__rec_text(ctx, &f, "fingerprint", stored, sizeof stored);
  if (!s) s = compare_fingerprint(ctx, path, stored, fingerprint ? fingerprint : "");
  if (!s) s = nle__rec_get(ctx, &f, "ints", 'l', CK_INTS, &iv);
  if (!s) s = nle__rec_get(ctx, &f, "doubles", 'd', CK_DOUBLES, &dv);
  const int64_t *ints = iv;
  const double *doubles = dv;
  if (!s && (ints[CK_N] != (int64_t)X->rows || ints[CK_D] != (int64_t)X->cols || ints[CK_KIND] != o->o.kind))
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: the checkpoint is of a %lld x %lld embedding with optimiser %lld", path,
                  (long long)ints[CK_N], (long long)ints[CK_D], (long long)ints[CK_KIND]);
  if (!s) s = nle__rec_get(ctx, &f, "X", 'd', len, &xv);
  for (size_t i = 0; !s && i < len; i++)
    if (!isfinite(((const double *)xv)[i]))
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: the checkpoint's X[%zu, %zu] is not finite (a run that diverged)", path,
                    i / X->cols, i % X->cols);
  if (!s) s = nle__opt_history_reset(ctx, o, len);
  nle_opt_state *r = &o->run;
  if (!s) s = restore_history(ctx, o, &f, len, ints);
  if (!s && ints[CK_HAS_VELOCITY]) {
    s = restore_array(ctx, &f, "velocity", &r->velocity, len);
    if (!s) s = restore_array(ctx, &f, "gain", &r->gain, len);
  }
  if (!s) s = nle_model_set_lambda(ctx, o->model, doubles[CK_LAMBDA]);
  if (!s) {
    memcpy(X->data, xv, len * sizeof(double));
    r->active = (int)ints[CK_ACTIVE];
    r->rep.iterations = (int)ints[CK_ITERS];
    r->rep.evaluations = (int)ints[CK_EVALS];
    r->stalled = (int)ints[CK_STALLED];
    r->rep.converged = ints[CK_CONVERGED] != 0;
    r->path_step = (int)ints[CK_PATH_STEP];
    r->path_all_converged = (int)ints[CK_PATH_ALL];
    r->path_total.iterations = (int)ints[CK_PATH_ITERS];
    r->path_total.evaluations = (int)ints[CK_PATH_EVALS];
    r->rep.E0 = doubles[CK_E0];
    r->E = doubles[CK_E];
    r->step = doubles[CK_STEP];
    r->prev_slope = doubles[CK_PREV_SLOPE];
    r->rep.seconds = doubles[CK_SECONDS];
    r->rep.grad_max = doubles[CK_GRAD];
    r->path_total.E0 = doubles[CK_PATH_E0];
    r->path_total.E = doubles[CK_PATH_E];
    r->path_total.seconds = doubles[CK_PATH_SECONDS];
  }
  nle__rec_free(&f);
  return s ? nle__name_error(ctx, path) : NLE_OK;
}
