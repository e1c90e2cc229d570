/* isomap.c — placeholder while the method is written: refuses with a status. */
#include "method.h"

static nle_status isomap_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  (void)job;
  (void)r;
  return nle__fail(ctx, NLE_ERR_UNSUPPORTED, "isomap: not written yet");
}

const nle__spectral_method nle__spectral_isomap = {"isomap", NLE_COMPONENTS_ERROR, false, isomap_embed};
