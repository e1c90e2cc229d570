#!/bin/bash
# add_engine.sh SCRATCH — adds a dummy repulsion engine that serves new
# points to SCRATCH (a copy of the tree with build/ built): its file,
# src/nle/repulsion_dummy.c (training by the model's exact sums; F(y) of
# many points by direct sums), and its row in src/nle/repulsion.c's table;
# then builds and reaches it by name: a tiny t-SNE with --repulsion dummy
# (the bits of the exact engine) and its transform with --repulsion dummy.
set -eu
S=${1:?usage: add_engine.sh SCRATCH}
cat > "$S/src/nle/repulsion_dummy.c" <<'C'
/* repulsion_dummy.c — an engine for tests/contrib: the exact sums, for
 * training (forces NULL) and for new points (direct sums over the map). */
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
  const nle_matd *X;
  bool student;
} direct_plan;

static bool always_fits(const nle_matd *box) { (void)box; return true; }

static nle_status direct_new(nle_ctx *ctx, const nle_matd *Xc, const nle_matd *region, bool student, void **plan) {
  (void)region;
  direct_plan *p = nle__malloc(ctx, sizeof *p, "the dummy engine's plan");
  if (!p) return NLE_ERR_NOMEM;
  *p = (direct_plan){Xc, student};
  *plan = p;
  return NLE_OK;
}

static nle_status direct_sums(nle_ctx *ctx, void *plan, const nle_matd *T, double *S, double *R, double *scratch,
                              int serial) {
  (void)ctx, (void)scratch, (void)serial;
  const direct_plan *p = plan;
  size_t d = T->cols;
  for (size_t i = 0; i < T->rows; i++) {
    S[i] = 0.0;
    for (size_t c = 0; c < d; c++) R[i * d + c] = 0.0;
    for (size_t n = 0; n < p->X->rows; n++) {
      double u[3], dn = 0.0;
      for (size_t c = 0; c < d; c++) u[c] = T->data[i * d + c] - p->X->data[n * d + c], dn += u[c] * u[c];
      double k = p->student ? 1.0 / (1.0 + dn) : exp(-dn), kp = p->student ? -k * k : -k;
      S[i] += k;
      for (size_t c = 0; c < d; c++) R[i * d + c] += kp * u[c];
    }
  }
  return NLE_OK;
}

static const nle__oos_engine direct_oos = {NLE__KERNEL_GAUSSIAN | NLE__KERNEL_STUDENT, 0, true, "dummy", always_fits,
                                           direct_new, direct_sums, free, NULL};
const nle__engine nle__engine_dummy = {.name = "dummy", .title = "dummy", .kernels = NLE__KERNEL_GAUSSIAN |
                                       NLE__KERNEL_STUDENT, .max_dim = 3, .oos = &direct_oos};
C
sed -i 's|^    &nle__engine_fgt,$|&\n    \&nle__engine_dummy,|; s|^extern const nle__engine nle__engine_bh, nle__engine_fft, nle__engine_fgt;$|&\nextern const nle__engine nle__engine_dummy;|' \
  "$S/src/nle/repulsion.c"
make -C "$S" -s -j2 all
N="$S/build/nlembed" T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$N tsne blobs:300:5:3 -p 10 --max-iters 60 --repulsion exact -o "$T/exact.npy" --quiet > /dev/null
$N tsne blobs:300:5:3 -p 10 --max-iters 60 --repulsion dummy -o "$T/dummy.npy" --save-model "$T/m.nle" --quiet > "$T/fit.json"
$N transform "$T/m.nle" blobs:200:5:3 --repulsion dummy -o "$T/new.npy" --quiet > "$T/tr.json"
grep -q '"repulsion": "dummy"' "$T/fit.json" && cmp -s "$T/exact.npy" "$T/dummy.npy" &&
  grep -q '"repulsion": "dummy"' "$T/tr.json" && [ -s "$T/new.npy" ] ||
  { cat "$T"/*.json; echo "add_engine: the dummy engine is not reached"; exit 1; }
echo "add_engine: t-SNE and its transform ran with the dummy engine"
