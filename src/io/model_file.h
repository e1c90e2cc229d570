/* model_file.h — one container for every kind of saved model: nlembed's
 * record file (records.c), whose header names the kind (nle_file_kind, by
 * which the estimator's load finds the family), then the kind's own
 * records. A model kind is one row of hooks, defined beside the model; the
 * container opens, commits, reads or maps, frees on failure and names the
 * file in every message, so that no kind writes its own. */
#ifndef NLE_MODEL_FILE_H
#define NLE_MODEL_FILE_H

#include "io_internal.h"

#include <string.h>

typedef struct nle__model_kind {
  const char *kind; /* in the file's header ("spectral-model") */
  bool mapped;      /* read by mapping the file (the kind may keep the
                       mapping and use its arrays in place) */
  /* Refuses what cannot be saved before the file is opened (NULL: all). */
  nle_status (*check)(nle_ctx *ctx, const void *model, bool copy_data);
  /* The kind's records; copy_data: the training data too, else only what
   * finds it again (its source, its hash). */
  void (*write)(nle__afile *af, const void *model, bool copy_data);
  /* A new model from the file's records, every value checked (*model may
   * be left part-built on failure: the container frees it). */
  nle_status (*read)(nle_ctx *ctx, nle__rec_file *f, void **model);
  void (*free)(void *model);
  /* Gives a model saved without its training data the data back (checked
   * against the model's hash); NULL: the kind keeps what it needs. */
  nle_status (*attach)(nle_ctx *ctx, void *model, const nle_matf *Y);
  /* Where a model without its data says the data are (its source), or
   * NULL when the data are in the model or it needs none. */
  const char *(*data_source)(const void *model);
} nle__model_kind;

/* Whether a header's value is one of an enumeration's values, by the
 * enumeration's name table (no bound on its last value). */
#define NLE__MODEL_NAMED(v, name_fn) ((v) >= 0 && (v) <= INT32_MAX && strcmp(name_fn((int)(v)), "unknown") != 0)

nle_status nle__model_save(nle_ctx *ctx, const nle__model_kind *kind, const void *model, const char *path,
                           bool copy_data);
nle_status nle__model_load(nle_ctx *ctx, const nle__model_kind *kind, const char *path, void **model);
/* A kind's public load: the container's, its model handed out typed (who:
 * the name an argument error goes by). */
#define NLE__MODEL_LOAD_FN(name, T, kind_row, who)                                          \
  nle_status name(nle_ctx *ctx, const char *path, T **out) {                                \
    if (!path || !out) return nle__fail(ctx, NLE_ERR_ARG, who ": NULL argument");           \
    void *model = NULL;                                                                     \
    nle_status s = nle__model_load(ctx, &kind_row, path, &model);                           \
    *out = model;                                                                           \
    return s;                                                                               \
  }
/* kind->attach, or an error for a kind that takes no training data. */
nle_status nle__model_attach(nle_ctx *ctx, const nle__model_kind *kind, void *model, const nle_matf *Y);

#endif
