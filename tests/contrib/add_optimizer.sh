#!/usr/bin/env bash
# add_optimizer.sh SCRATCH — adds a dummy optimiser with resumable state to
# SCRATCH (a copy of the tree with a built build/): its own file
# src/nle/opt_dummy.c and its row, X(dummy), in the one list of
# src/nle/optimize.c. Then builds, and proves that the tool runs it by name
# and that a run resumed from its checkpoint (which carries the dummy's
# one-number history) ends on the uninterrupted run's bits.
set -eu
S=${1:?usage: add_optimizer.sh SCRATCH}
cat > "$S/src/nle/opt_dummy.c" <<'EOF'
/* opt_dummy.c — gradient descent whose direction grows by 10% with every
 * accepted step: its history is that one number. */
#include "opt_internal.h"

typedef struct {
  double boldness;
  size_t len;
} dummy_state;

static nle_status dummy_reset(nle_ctx *ctx, nle_opt *o, size_t len) {
  (void)ctx;
  *(dummy_state *)o->state = (dummy_state){1.0, len};
  return NLE_OK;
}

static bool dummy_apply(nle_opt *o, const double *g, double *p) {
  const dummy_state *st = o->state;
  for (size_t i = 0; i < st->len; i++) p[i] = -st->boldness * g[i];
  return true;
}

static void dummy_update(nle_opt *o, bool forget, const double *x, const double *xn, const double *g,
                         const double *gn, const double *p) {
  (void)x, (void)xn, (void)g, (void)gn, (void)p;
  dummy_state *st = o->state;
  st->boldness = forget ? 1.0 : 1.1 * st->boldness;
}

static void dummy_write(const nle_opt *o, nle__afile *af, size_t len) {
  (void)len;
  nle__rec_put(af, "dummy_boldness", 'd', &((const dummy_state *)o->state)->boldness, 1);
}

static nle_status dummy_read(nle_ctx *ctx, nle_opt *o, const nle__rec_file *f, size_t len,
                             const nle__history_counters *counters) {
  (void)len, (void)counters;
  return nle__opt_restore(ctx, f, "dummy_boldness", &((dummy_state *)o->state)->boldness, 1);
}

const nle__optimizer nle__opt_dummy = {.name = "dummy", .first_step = NLE__FIRST_STEP_KEEP,
                                       .state_size = sizeof(dummy_state), .direction = nle__opt_steepest,
                                       .history_reset = dummy_reset, .history_apply = dummy_apply,
                                       .history_update = dummy_update, .history_write = dummy_write,
                                       .history_read = dummy_read};
EOF
sed -i 's/^\(#define NLE__OPTIMIZERS(X) .*\)$/\1 X(dummy)/' "$S/src/nle/optimize.c"
grep -q ' X(dummy)$' "$S/src/nle/optimize.c" || { echo "add_optimizer: no optimiser list in optimize.c"; exit 1; }
make -C "$S" -s -j2 all
N=$S/build/nlembed
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
args="ee swissroll:300 --optimizer dummy --max-iters 30 --tol 0 --quiet"
"$N" $args -o "$T/a.npy" --checkpoint "$T/run.ckpt" --checkpoint-every 20 > "$T/a.json"
grep -q '"optimizer": "dummy"' "$T/a.json" || { echo "add_optimizer: the run did not use the dummy"; exit 1; }
grep -aq dummy_boldness "$T/run.ckpt" || { echo "add_optimizer: the checkpoint lacks the dummy's history"; exit 1; }
"$N" $args -o "$T/b.npy" --resume "$T/run.ckpt" > /dev/null
cmp "$T/a.npy" "$T/b.npy" || { echo "add_optimizer: the resumed run differs"; exit 1; }
echo "add_optimizer: ok (dummy optimiser built, run, checkpointed and resumed bit for bit)"
