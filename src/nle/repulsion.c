/* repulsion.c — the table of repulsion engines: names, what each serves,
 * and the check of a model's request against it. */
#include "model_internal.h"

#include <string.h>

/* The exact pairwise sums: any model, W- and dimension (model.c's own). */
static const nle__engine engine_exact = {.id = NLE_REPULSION_EXACT, .name = "exact", .title = "exact",
                                         .any_model = true};

extern const nle__engine nle__engine_bh, nle__engine_fft, nle__engine_fgt;

/* One row per engine, in the order of nle_repulsion. */
static const nle__engine *const engines[] = {&engine_exact, &nle__engine_bh, &nle__engine_fft, &nle__engine_fgt};
enum { N_ENGINES = sizeof engines / sizeof *engines };

const nle__engine *nle__engine_find(nle_repulsion id) {
  for (size_t i = 0; i < N_ENGINES; i++)
    if (engines[i]->id == id) return engines[i];
  return NULL;
}

const char *nle_repulsion_name(nle_repulsion engine) {
  if (engine == NLE_REPULSION_AUTO) return "auto";
  const nle__engine *e = nle__engine_find(engine);
  return e ? e->name : "unknown";
}

int nle_repulsion_parse(const char *name) {
  if (name && !strcmp(name, "auto")) return NLE_REPULSION_AUTO;
  for (size_t i = 0; name && i < N_ENGINES; i++)
    if (!strcmp(name, engines[i]->name)) return (int)engines[i]->id;
  return -1;
}

/* The names of the engines that serve the kernel, "a, b or c". */
static void names_serving(unsigned kernel, char *buf, size_t len) {
  size_t count = 0, total = 0, used = 0;
  for (size_t i = 0; i < N_ENGINES; i++) total += !engines[i]->any_model && (engines[i]->kernels & kernel);
  buf[0] = '\0';
  for (size_t i = 0; i < N_ENGINES && used < len; i++) {
    if (engines[i]->any_model || !(engines[i]->kernels & kernel)) continue;
    count++;
    used += (size_t)snprintf(buf + used, len - used, "%s%s", count == 1 ? "" : count == total ? " or " : ", ",
                             engines[i]->name);
  }
}

nle_status nle__model_check_engine(nle_ctx *ctx, nle_model_kind kind, nle_wneg_kind wneg, nle_repulsion engine,
                                   int sq_features, size_t d) {
  const nle__engine *e = nle__engine_find(engine);
  if (!e) return nle__fail(ctx, NLE_ERR_ARG, "model: unknown repulsion engine %d", (int)engine);
  if (e->any_model) return NLE_OK;
  int unnormalised = kind == NLE_MODEL_EE || kind == NLE_MODEL_TEE;
  int sq = unnormalised && wneg == NLE_WNEG_SQDIST && sq_features && e->sqdist_features;
  if (!sq && (kind == NLE_MODEL_SNE || (unnormalised && wneg != NLE_WNEG_UNIFORM)))
    return nle__fail(ctx, NLE_ERR_ARG, "model: %s repulsion serves t-SNE, s-SNE, EE/t-EE with uniform W-%s (else use "
                     "the exact engine)", e->title,
                     e->sqdist_features ? ", and EE/t-EE with W- of squared distances between features" : "");
  unsigned kernel = kind == NLE_MODEL_TSNE || kind == NLE_MODEL_TEE ? NLE__KERNEL_STUDENT : NLE__KERNEL_GAUSSIAN;
  if (!(e->kernels & kernel)) {
    char others[128];
    names_serving(kernel, others, sizeof others);
    return nle__fail(ctx, NLE_ERR_ARG, "model: the %s serves the %s; %s take %s", e->title,
                     kernel == NLE__KERNEL_GAUSSIAN ? "Student-t kernel (t-SNE, t-EE)" : "Gaussian kernel (EE, s-SNE)",
                     kernel == NLE__KERNEL_GAUSSIAN ? "EE and s-SNE" : "t-SNE and t-EE", others);
  }
  if (e->max_dim && d > (size_t)e->max_dim)
    return nle__fail(ctx, NLE_ERR_ARG, "model: the %s engine serves embeddings of 1-%d dimensions, not %zu (use the "
                     "exact engine)", e->title, e->max_dim, d);
  return NLE_OK;
}
