#!/usr/bin/env bash
# ee_table31.sh — like dissertation table 3.1: homotopy EE (50 log-spaced
# lambda from 1e-4 to 1e2, tol 1e-6, at most MAXIT iterations per lambda) on
# 720 Fashion-MNIST test images (the first 72 of each class), perplexity 20,
# from the same random start: objective evaluations, iterations, final E and
# time per optimiser. GD and CG get SLOW_MAXIT (they are orders of magnitude
# slower; the cap is printed).
source "$(dirname "$0")/common.sh"
maxit=${MAXIT:-10000}
slow=${SLOW_MAXIT:-1000}
"$PY" - "$OUT" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out = sys.argv[1]
Y, y = fmnist.images()[60000:], fmnist.labels()[60000:]
idx = np.concatenate([np.flatnonzero(y == c)[:72] for c in range(10)])
np.save(f"{out}/fm720.npy", Y[idx].astype(np.float32))
np.save(f"{out}/fm720-labels.npy", y[idx].astype(np.int32))
PY
printf '%-7s %10s %10s %14s %10s %s\n' optimizer evaluations iterations "final E" seconds cap
for opt in sd sd-all sd- fp lbfgs cg gd; do
  cap=$maxit
  case $opt in cg|gd) cap=$slow ;; esac
  extra=""
  [ $opt = sd-all ] && extra="--kappa 0" # L+ from all of W+, not 7 neighbours
  "$NLEMBED" ee "$OUT/fm720.npy" -p 20 --homotopy 50 --lambda-start 1e-4 --lambda 1e2 --tol 1e-6 \
    --max-iters "$cap" --optimizer "${opt%-all}" $extra --init random --init-scale 1e-5 --quiet \
    -o "$OUT/fm720-$opt.npy" > "$OUT/fm720-$opt.json"
  "$PY" -c "
import json; r = json.load(open('$OUT/fm720-$opt.json'))
print('%-7s %10d %10d %14.6f %10.1f %s' % ('$opt', r['evaluations'], r['iterations'], r['E'], r['optimize_seconds'], '$cap'))"
done
for opt in sd fp lbfgs; do
  "$NLEMBED" metrics "$OUT/fm720.npy" "$OUT/fm720-$opt.npy" --labels "$OUT/fm720-labels.npy" --quiet |
    sed -n "s/.*\"summary\": \"\([^\"]*\)\".*/$opt: \1/p"
done
