#!/usr/bin/env bash
# ee_spiral.sh — the EE paper's 2-D spiral (sec. 5, fig. 2): N = 200 points
# along a spiral, full-graph Gaussian affinities with sigma = 0.05; the
# lambda* bounds (paper: [4e-5, 1e-4]) for W- = squared distances and
# uniform; then the paper's homotopy, 80 log-spaced lambda from 1e-2 to 1e2,
# each until the relative change of E is below 1e-3 or 50 iterations, with
# the embedding plotted along the path. The paper does not give its spiral's
# equation: ours is r = 0.063 t, t in [0, 4 pi], 200 evenly spaced t (point
# spacing 0.004-0.05, mean 0.026, so sigma = 0.05 spans about two spacings).
source "$(dirname "$0")/common.sh"
STEPS=${STEPS:-$(smoke_or 80 5)} # the paper's 80 homotopy steps; a smoke run's
"$PY" - "$OUT" <<'PY'
import sys
import numpy as np
out = sys.argv[1]
t = np.linspace(0, 4 * np.pi, 200)
np.savetxt(f"{out}/spiral200.csv", np.c_[0.063 * t * np.cos(t), 0.063 * t * np.sin(t)], delimiter=",")
np.savetxt(f"{out}/spiral200-bands.csv", (np.arange(200) * 10 // 200).astype(int), fmt="%d")
PY
for wneg in sqdist uniform; do
  "$NLEMBED" ee "$OUT/spiral200.csv" --sigma 0.05 -k 199 --wneg $wneg --max-iters 0 -o "$OUT/sp-bounds.npy" 2>&1 |
    sed -n -e "s/.*lambda\* bounds: /spiral N=200 sigma=0.05 full graph, W- $wneg: /p" \
      -e "s/.*lambda\* = /spiral N=200 sigma=0.05 full graph, W- $wneg: lambda* = /p"
done
echo "paper (fig. 2): lambda* in [4e-5, 1e-4]"
rm -f "$OUT"/sppath_*.npy
"$NLEMBED" ee "$OUT/spiral200.csv" --sigma 0.05 -k 199 --wneg sqdist --homotopy "$STEPS" --lambda-start 1e-2 \
  --lambda 1e2 --tol 1e-3 --max-iters "$(smoke_or 50 10)" --path-prefix "$OUT/sppath_" -o "$OUT/sp-ee.npy" \
  > "$OUT/sp-ee.json" 2> "$OUT/sp-ee.log"
grep -E "homotopy step [0-9]+:" "$OUT/sp-ee.log" | awk 'NR % 10 == 1'
tail -1 "$OUT/sp-ee.log"
for i in 000 020 040 $(printf %03d $((STEPS - 1))); do
  [ -f "$OUT/sppath_$i.npy" ] || continue
  lam=$(grep -E "homotopy step $((10#$i + 1)):" "$OUT/sp-ee.log" | sed 's/.*lambda \([^,]*\),.*/\1/')
  "$NLEMBED" plot "$OUT/sppath_$i.npy" --labels "$OUT/spiral200-bands.csv" --no-legend --width 400 --height 400 \
    --title "EE homotopy, lambda = $lam" -o "$OUT/sppath_$i.png" --quiet
done
"$PY" - "$OUT" <<'PY'
import sys
import numpy as np
out = sys.argv[1]
X = np.load(f"{out}/sp-ee.npy")
Y = np.loadtxt(f"{out}/spiral200.csv", delimiter=",")
sx, sy = (np.linalg.norm(np.diff(A, axis=0), axis=1) for A in (X, Y))
# Unfolded: the points in their order along one axis, and the spacing in X
# proportional to the data spacing (the paper: "a perfectly spaced sequence
# matching the data spacing").
order = np.argsort(X[:, 0] if np.ptp(X[:, 0]) > np.ptp(X[:, 1]) else X[:, 1])
mono = max(np.mean(np.diff(order) == 1), np.mean(np.diff(order) == -1))
ratio = sx / sy
print(f"final X: {100 * mono:.1f}% of neighbours along the main axis are consecutive points; "
      f"X spacing / data spacing: correlation of the spacings {np.corrcoef(sx, sy)[0, 1]:.3f}, "
      f"ratio {ratio.mean():.2f} with coefficient of variation {ratio.std() / ratio.mean():.3f}")
PY
