/* checkpoint.c — a run's state in a checkpoint file (CRC-checked records,
 * written atomically at once) and its resumption, bit for bit. */
#include "opt_internal.h"
#include "../core/comm.h"
#include "../io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Checkpoints ---------------------------------------------------------- */

/* A distributed run's checkpoint (issue 38, docs/mpi.md) is one part file
 * per rank, PATH.SERIAL.rankR, holding the rank's rows of the state and the
 * run's global counters (the same on every rank), written atomically; then
 * rank 0 writes the manifest at PATH (the fingerprint, the ranks, the
 * serial), atomically too. Only then does each rank remove its previous
 * part: a run that dies while writing leaves the previous manifest and the
 * parts it names whole. It resumes on the same number of ranks (each rank's
 * rows are its canonical block). */
enum { MF_RANKS, MF_SERIAL, MF_N, MF_D, MF_INTS };

static void part_path(const char *path, int64_t serial, int rank, char *out, size_t cap) {
  snprintf(out, cap, "%s.%lld.rank%d", path, (long long)serial, rank);
}

nle_status nle_opt_set_checkpoint(nle_ctx *ctx, nle_opt *o, const char *path, int every, const char *fingerprint) {
  free(o->ckpt_path);
  free(o->ckpt_fingerprint);
  o->ckpt_path = o->ckpt_fingerprint = NULL;
  o->ckpt_every = 0;
  if (!path) return NLE_OK;
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

/* The state's records, in a checkpoint or in a rank's part of one. */
static void put_state(nle__afile *af, nle_opt *o, const nle_matd *X, const char *fingerprint) {
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
  af->immediate = 1; /* a checkpoint must be there if the run dies */
  nle__rec_put_text(af, "fingerprint", fingerprint ? fingerprint : "");
  nle__rec_put(af, "ints", 'l', ints, CK_INTS);
  nle__rec_put(af, "doubles", 'd', doubles, CK_DOUBLES);
  nle__rec_put(af, "X", 'd', X->data, len);
  if (type->history_write) type->history_write(o, af, len); /* after X, as files have always had it */
  if (r->velocity) {
    nle__rec_put(af, "velocity", 'd', r->velocity, len);
    nle__rec_put(af, "gain", 'd', r->gain, len);
  }
}

static nle_status save_distributed(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const char *path,
                                   const char *fingerprint) {
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, X->rows, "the checkpoint's rows", &rows);
  if (s) return s;
  int me = nle__rank(ctx);
  int64_t serial = o->ckpt_serial + 1;
  char part[4096];
  part_path(path, serial, me, part, sizeof part);
  nle__afile af;
  s = nle__rec_open(ctx, part, "checkpoint part", &af);
  if (!s) {
    int64_t range[3] = {(int64_t)rows.mine.begin, (int64_t)rows.mine.end, (int64_t)rows.n};
    put_state(&af, o, X, fingerprint);
    nle__rec_put(&af, "rows", 'l', range, 3);
    s = nle__afile_commit(ctx, &af);
  }
  s = nle__comm_agree(ctx, s); /* every part is whole before the manifest names them */
  if (!s && me == 0) {
    int64_t manifest[MF_INTS] = {nle__ranks(ctx), serial, (int64_t)rows.n, (int64_t)X->cols};
    s = nle__rec_open(ctx, path, "checkpoint", &af);
    if (!s) {
      af.immediate = 1;
      nle__rec_put_text(&af, "fingerprint", fingerprint ? fingerprint : "");
      nle__rec_put(&af, "manifest", 'l', manifest, MF_INTS);
      s = nle__afile_commit(ctx, &af);
    }
  }
  s = nle__comm_agree(ctx, s);
  if (s) {
    remove(part); /* the manifest still names the previous parts */
    return s;
  }
  if (o->ckpt_serial > 0) {
    part_path(path, o->ckpt_serial, me, part, sizeof part);
    remove(part);
  }
  o->ckpt_serial = serial;
  return NLE_OK;
}

nle_status nle_opt_save_checkpoint(nle_ctx *ctx, nle_opt *o, const nle_matd *X, const char *path,
                                   const char *fingerprint) {
  if (nle__has_comm(ctx)) return save_distributed(ctx, o, X, path, fingerprint);
  nle__afile af;
  nle_status s = nle__rec_open(ctx, path, "checkpoint", &af);
  if (s) return s;
  put_state(&af, o, X, fingerprint);
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

/* Whether the checkpoint at f was written the way this run goes: by as
 * many ranks (a manifest), or by one process. *manifest: the manifest's. */
static nle_status check_writer(nle_ctx *ctx, const nle__rec_file *f, const char *path, int64_t *manifest) {
  int ranks = nle__ranks(ctx), has = nle__rec_has(f, "manifest");
  if (!has && nle__has_comm(ctx))
    return nle__fail(ctx, NLE_ERR_ARG, "%s: the checkpoint was written by one process; resume it without mpirun", path);
  if (!has) return NLE_OK;
  const void *mv = NULL;
  nle_status s = nle__rec_get(ctx, f, "manifest", 'l', MF_INTS, &mv);
  if (s) return s;
  memcpy(manifest, mv, MF_INTS * sizeof(int64_t));
  if (!nle__has_comm(ctx) || manifest[MF_RANKS] != ranks)
    return nle__fail(ctx, NLE_ERR_ARG, "%s: the checkpoint was written by %lld ranks; resume it with mpirun -np %lld",
                     path, (long long)manifest[MF_RANKS], (long long)manifest[MF_RANKS]);
  return NLE_OK;
}

/* The stored fingerprint against the run's, and the writer (above). */
static nle_status check_file(nle_ctx *ctx, const nle__rec_file *f, const char *path, const char *fingerprint,
                             int64_t *manifest) {
  char stored[4096];
  nle_status s = nle__rec_text(ctx, f, "fingerprint", stored, sizeof stored);
  if (!s) s = compare_fingerprint(ctx, path, stored, fingerprint ? fingerprint : "");
  if (!s) s = check_writer(ctx, f, path, manifest);
  return s;
}

nle_status nle_opt_check_checkpoint(nle_ctx *ctx, const char *path, const char *fingerprint) {
  nle__rec_file f;
  int64_t manifest[MF_INTS];
  nle_status s = nle__rec_read(ctx, path, "checkpoint", &f);
  if (!s) {
    s = check_file(ctx, &f, path, fingerprint, manifest);
    nle__rec_free(&f);
  }
  return nle__comm_agree(ctx, s);
}

/* The optimiser's history (its records and the two counters of "ints"),
 * read by its own hook; an optimiser without one kept none. */
static nle_status restore_history(nle_ctx *ctx, nle_opt *o, const nle__rec_file *f, size_t len, const int64_t *ints) {
  nle__history_counters counters = {ints[CK_HIST_COUNT], ints[CK_HIST_HEAD]};
  if (o->type->history_read) return o->type->history_read(ctx, o, f, len, &counters);
  if (counters.count || counters.head) return nle__fail(ctx, NLE_ERR_FORMAT, "%s: damaged optimiser history", f->path);
  return NLE_OK;
}

/* The state from a checkpoint's records (f: the checkpoint, or this rank's
 * part of one; n: the rows in all). */
static nle_status restore_state(nle_ctx *ctx, nle_opt *o, nle_matd *X, const nle__rec_file *f, const char *path,
                                int64_t n) {
  const void *iv = NULL, *dv = NULL, *xv = NULL;
  size_t len = X->rows * X->cols;
  nle_status s = nle__rec_get(ctx, f, "ints", 'l', CK_INTS, &iv);
  if (!s) s = nle__rec_get(ctx, f, "doubles", 'd', CK_DOUBLES, &dv);
  const int64_t *ints = iv;
  const double *doubles = dv;
  if (!s && (ints[CK_N] != (int64_t)X->rows || ints[CK_D] != (int64_t)X->cols || ints[CK_KIND] != o->o.kind))
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: the checkpoint is of a %lld x %lld embedding with optimiser %lld", path,
                  (long long)(ints[CK_N] == (int64_t)X->rows ? n : ints[CK_N]), (long long)ints[CK_D],
                  (long long)ints[CK_KIND]);
  if (!s) s = nle__rec_get(ctx, f, "X", 'd', len, &xv);
  for (size_t i = 0; !s && i < len; i++)
    if (!isfinite(((const double *)xv)[i]))
      s = nle__fail(ctx, NLE_ERR_VALUE, "%s: the checkpoint's X[%zu, %zu] is not finite (a run that diverged)", path,
                    i / X->cols, i % X->cols);
  if (!s) s = nle__opt_history_reset(ctx, o, len);
  nle_opt_state *r = &o->run;
  if (!s) s = restore_history(ctx, o, f, len, ints);
  if (!s && ints[CK_HAS_VELOCITY]) {
    s = restore_array(ctx, f, "velocity", &r->velocity, len);
    if (!s) s = restore_array(ctx, f, "gain", &r->gain, len);
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
  return s;
}

/* This rank's part of a distributed checkpoint whose manifest was read:
 * the part the manifest names, of this rank's rows, of the same run. */
static nle_status load_part(nle_ctx *ctx, nle_opt *o, nle_matd *X, const char *fingerprint, const char *path,
                            const int64_t *manifest) {
  nle__rows rows;
  nle_status s = nle__comm_rows(ctx, X->rows, "the checkpoint's rows", &rows);
  if (s) return s;
  char part[4096];
  part_path(path, manifest[MF_SERIAL], nle__rank(ctx), part, sizeof part);
  nle__rec_file f;
  s = nle__rec_read(ctx, part, "checkpoint part", &f);
  if (s) return s;
  const void *rv = NULL;
  s = nle__rec_get(ctx, &f, "rows", 'l', 3, &rv);
  const int64_t *range = rv;
  if (!s && (range[0] != (int64_t)rows.mine.begin || range[1] != (int64_t)rows.mine.end || range[2] != (int64_t)rows.n))
    s = nle__fail(ctx, NLE_ERR_ARG, "%s: holds rows %lld..%lld of %lld, not this rank's %zu..%zu of %zu", part,
                  (long long)range[0], (long long)range[1], (long long)range[2], rows.mine.begin, rows.mine.end, rows.n);
  char stored[4096];
  if (!s) s = nle__rec_text(ctx, &f, "fingerprint", stored, sizeof stored);
  if (!s) s = compare_fingerprint(ctx, part, stored, fingerprint ? fingerprint : "");
  if (!s) s = restore_state(ctx, o, X, &f, part, (int64_t)rows.n);
  nle__rec_free(&f);
  if (!s) o->ckpt_serial = manifest[MF_SERIAL]; /* removed once the next checkpoint's manifest is written */
  return s;
}

nle_status nle_opt_load_checkpoint(nle_ctx *ctx, nle_opt *o, nle_matd *X, const char *path, const char *fingerprint) {
  nle__rec_file f;
  int64_t manifest[MF_INTS];
  nle_status s = nle__rec_read(ctx, path, "checkpoint", &f);
  if (!s) {
    s = check_file(ctx, &f, path, fingerprint, manifest);
    if (!s && !nle__has_comm(ctx)) s = restore_state(ctx, o, X, &f, path, (int64_t)X->rows);
    nle__rec_free(&f);
    if (!s && nle__has_comm(ctx)) s = load_part(ctx, o, X, fingerprint, path, manifest);
  }
  if (s) s = nle__name_error(ctx, path);
  return nle__comm_agree(ctx, s);
}
