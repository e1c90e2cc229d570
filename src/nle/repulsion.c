/* repulsion.c — the table of repulsion engines: names, what each serves,
 * and the check of a model's request against it. */
#include "model_internal.h"

#include <stdio.h>
#include <string.h>

/* The exact pairwise sums: any model, W- and dimension (model.c's own); for
 * new points, each point's own exact sums (outofsample.c). */
static const nle__engine engine_exact = {.name = "exact", .title = "exact", .any_model = true};

/* One row per engine; an engine's value in nle_repulsion is its place. */
extern const nle__engine nle__engine_bh, nle__engine_fft, nle__engine_fgt;
static const nle__engine *const engines[] = {
    &engine_exact,
    &nle__engine_bh,
    &nle__engine_fft,
    &nle__engine_fgt,
};
enum { N_ENGINES = sizeof engines / sizeof *engines };

const nle__engine *nle__engine_find(nle_repulsion id) {
  return (unsigned)id < N_ENGINES ? engines[id] : NULL;
}

const char *nle_repulsion_name(nle_repulsion engine) {
  if (engine == NLE_REPULSION_AUTO) return "auto";
  const nle__engine *e = nle__engine_find(engine);
  return e ? e->name : "unknown";
}

int nle_repulsion_parse(const char *name) {
  if (name && !strcmp(name, "auto")) return NLE_REPULSION_AUTO;
  for (size_t i = 0; name && i < N_ENGINES; i++)
    if (!strcmp(name, engines[i]->name)) return (int)i;
  return -1;
}

bool nle_repulsion_serves_new_points(nle_repulsion engine) {
  const nle__engine *e = nle__engine_find(engine);
  return e && (e->any_model || e->oos);
}

nle_repulsion nle__oos_default_engine(unsigned kernel) {
  for (size_t i = 0; i < N_ENGINES; i++)
    if (engines[i]->oos && (engines[i]->oos->default_for & kernel)) return (nle_repulsion)i;
  return NLE_REPULSION_EXACT;
}

static unsigned kernel_count(unsigned kernels) { return (kernels & 1u) + (kernels >> 1 & 1u); }

void nle__oos_engine_names(char *names, size_t names_len, char *serves, size_t serves_len) {
  size_t total = 0, count = 0, used = 0, said = 0;
  for (size_t i = 0; i < N_ENGINES; i++) total += engines[i]->any_model || engines[i]->oos;
  names[0] = serves[0] = '\0';
  /* the any-model engine (kernels 0) first, then the narrowest */
  for (unsigned width = 0; width <= 2; width++)
    for (size_t i = 0; i < N_ENGINES; i++) {
      const nle__engine *e = engines[i];
      if (!(e->any_model || e->oos) || (e->oos ? kernel_count(e->oos->kernels) : 0) != width) continue;
      count++;
      if (used < names_len)
        used += (size_t)snprintf(names + used, names_len - used, "%s%s",
                                 count == 1 ? "" : count == total ? " or " : ", ", e->name);
      if (e->oos && said < serves_len)
        said += (size_t)snprintf(serves + said, serves_len - said, "%s%s for %s", said ? ", " : "", e->name,
                                 width == 2 ? "both" : e->oos->kernels & NLE__KERNEL_GAUSSIAN ? "the Gaussian kernel"
                                                                                               : "the Student-t kernel");
    }
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
