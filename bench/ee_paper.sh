#!/usr/bin/env bash
# ee_paper.sh — the EE paper's Swiss roll (sec. 5, fig. 3): N = 2000, k = 12
# Gaussian affinities with sigma = 15; the lambda* bounds for W- = squared
# input distances (the paper's eq. 6 with w- bar = 1) and for uniform W-;
# then the homotopy from above the bifurcation over the paper's range, with
# the embedding plotted along the path.
#   STEPS=50 bench/ee_paper.sh
source "$(dirname "$0")/common.sh"
steps=${STEPS:-$(smoke_or 50 3)}
N=$(smoke_or 2000 300) # the paper's roll; a smoke run's
for wneg in sqdist uniform; do
  "$NLEMBED" ee swissroll:$N --sigma 15 -k 12 --wneg $wneg --max-iters 0 -o "$OUT/sr-bounds.npy" 2>&1 |
    sed -n -e "s/.*lambda\* bounds: /swissroll N=$N k=12 sigma=15, W- $wneg: /p" \
      -e "s/.*lambda\* = /swissroll N=$N k=12 sigma=15, W- $wneg: lambda* = /p"
done
echo "paper (fig. 3): lambda* in [5e-9, 1e-8]"
rm -f "$OUT"/srpath_*.npy
# shellcheck disable=SC2046
/usr/bin/time -f "homotopy wall time %e s" "$NLEMBED" ee swissroll:$N --sigma 15 -k 12 --wneg sqdist \
  --homotopy "$steps" --lambda "$(smoke_or 1e7 1e-3)" $(smoke_or "" "--max-iters 20") --path-prefix "$OUT/srpath_" --save-labels "$OUT/sr-labels.npy" \
  -o "$OUT/sr-ee.npy" > "$OUT/sr-ee.json" 2> "$OUT/sr-ee.log"
grep -E "homotopy step [0-9]+:" "$OUT/sr-ee.log" | awk 'NR % 5 == 1'
tail -1 "$OUT/sr-ee.log"
cat "$OUT/sr-ee.json"
for i in 000 010 020 030 040 $(printf %03d $((steps - 1))); do
  [ -f "$OUT/srpath_$i.npy" ] || continue
  lam=$(grep -E "homotopy step $((10#$i + 1)):" "$OUT/sr-ee.log" | sed 's/.*lambda \([^,]*\),.*/\1/')
  "$NLEMBED" plot "$OUT/srpath_$i.npy" --labels "$OUT/sr-labels.npy" --no-legend --width 400 --height 400 \
    --title "EE homotopy, lambda = $lam" -o "$OUT/srpath_$i.png" --quiet
done
"$NLEMBED" metrics swissroll:$N "$OUT/sr-ee.npy" --quiet
