#!/bin/bash
# add_spectral.sh SCRATCH — adds a dummy spectral method with its own map of
# new points to SCRATCH (a copy of the tree with build/ built): its file,
# src/spectral/dummy.c, and its row in src/spectral/spectral.c's table;
# then builds and shows the method reached by name through the library:
# test_runner's walk over the table fits it, maps its training points and
# new points, and saves and loads its model.
set -eu
S=${1:?usage: add_spectral.sh SCRATCH}
cat > "$S/src/spectral/dummy.c" <<'C'
/* dummy.c — a spectral method for tests/contrib: Laplacian eigenmaps'
 * embedding, and a new point placed where its nearest training point is. */
#include "method.h"

#include <string.h>

static nle_status dummy_embed(nle_ctx *ctx, const nle__spectral_job *job, nle_spectral_result *r) {
  extern const nle__spectral_method nle__spectral_le;
  return nle__spectral_le.embed(ctx, job, r);
}

static size_t no_scratch(const nle_spectral_model *m) { (void)m; return 0; }

static int nearest_point(const nle__oos_point *p, void *scratch, double *x) {
  (void)scratch;
  int32_t at = p->self >= 0 ? p->self : p->nf ? p->fwd[0] : -1;
  if (at < 0) return 0;
  memcpy(x, p->m->X->data + (size_t)at * p->m->dim, p->m->dim * sizeof(double));
  return 1;
}

static const nle__spectral_map nearest_map = {"nearest training point", true, no_scratch, nearest_point,
                                              NULL, NULL, NULL};
const nle__spectral_method nle__spectral_dummy = {"dummy", NLE_COMPONENTS_JOIN, false, false, false, false,
                                                  dummy_embed, &nearest_map};
C
sed -i 's|^    &nle__spectral_mlle,$|&\n    \&nle__spectral_dummy,|; s|^    nle__spectral_ltsa, nle__spectral_hlle, nle__spectral_mlle;$|&\nextern const nle__spectral_method nle__spectral_dummy;|' \
  "$S/src/spectral/spectral.c"
make -C "$S" -s -j2 all
out=$(cd "$S" && ./build/test_runner spectral_oos/every_method_of_the_table 2>&1)
echo "$out" | grep -q "dummy: maps new points by nearest training point" &&
  echo "$out" | grep -q "^1 passed, 0 failed" || { echo "$out"; echo "add_spectral: the dummy method is not reached"; exit 1; }
echo "add_spectral: the dummy method embeds, maps new points and saves its model"
