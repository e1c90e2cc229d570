#!/usr/bin/env bash
# view.sh — `nlembed view`'s pages at 70,000 points (the t-SNE map of
# Fashion-MNIST, with the class names and the 28 x 28 images on hover) and at
# 1,000,000 (a generated map: 12 classes of curved, stretched clusters), in
# headless chromium with software WebGL (SwiftShader): time to first frame
# (navigation start to the frame that first drew the points, which the page
# reports) and its parts, frames per second while zooming, hover and lasso
# latency, page size, the time `nlembed view` takes to write the page. The
# Fashion-MNIST page's screenshot goes to docs/images/view-fashion-mnist.png.
#   bench/view.sh   [REPS=3]
# Needs ./setup.sh build (the viewer) and chromium (./setup.sh test installs
# it). The t-SNE map (2-3 minutes on 2 cores) is made once in $OUT.
source "$(dirname "$0")/common.sh"
REPS=${REPS:-$(smoke_or 3 1)}
FMDATA=$(smoke_or fashion-mnist fashion-mnist:1000) # a smoke run: 1,000 images, 2,000 generated points
FM=$OUT/view-fm-tsne.npy
# shellcheck disable=SC2046
[ -f "$FM" ] || "$NLEMBED" tsne "$FMDATA" $(smoke_or "" "--max-iters 30") -o "$FM" --quiet > /dev/null
M=$OUT/view-million
[ -f "$M.npy" ] || "$PY" - "$M" "$(smoke_or 1000000 2000)" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(24)
n, k = int(sys.argv[2]), 12
lab = rng.integers(0, k, n).astype(np.int32)
t = rng.standard_normal(n)
s = rng.standard_normal(n) * 0.25
angle = 2 * np.pi * lab / k
centre = np.stack([np.cos(angle), np.sin(angle)], 1) * 10
bend = 0.15 * (lab % 4 + 1)  # each class an arc of its own curvature
x = np.stack([t * 2.0, s + bend * t * t], 1)
c, s_ = np.cos(angle + 1.0), np.sin(angle + 1.0)
xy = centre + np.stack([c * x[:, 0] - s_ * x[:, 1], s_ * x[:, 0] + c * x[:, 1]], 1)
np.save(sys.argv[1] + ".npy", xy.astype(np.float32))
np.save(sys.argv[1] + "-labels.npy", lab)
PY

echo "== nlembed view: writing the pages"
median_run "$FMDATA, labels + images" 1 "$NLEMBED" view "$FM" --labels "$FMDATA" --images "$FMDATA" \
  --title "t-SNE of Fashion-MNIST (70,000 images)" -o "$OUT/view-fm.html"
median_run "$(smoke_or 1,000,000 2,000) generated, labels" 1 "$NLEMBED" view "$M.npy" --labels "$M-labels.npy" \
  --title "1,000,000 generated points" -o "$OUT/view-million.html"
"$NLEMBED" view "$FM" --labels "$FMDATA" -o "$OUT/view-fm-noimages.html" --quiet
ls -l "$OUT/view-fm.html" "$OUT/view-fm-noimages.html" "$OUT/view-million.html" | awk '{printf "%-40s %6.1f MB\n", $NF, $5 / 1e6}'

have_peer command node && have_peer command "${CHROMIUM:-/usr/bin/chromium}" || exit 0
echo "== in chromium $(/usr/bin/chromium --version 2> /dev/null | awk '{print $2}') (SwiftShader), 1200 x 800"
node bench/view.mjs "$OUT/view-fm.html" "$REPS" "$IMAGES/view-fashion-mnist.png"
[ "$SMOKE" = 1 ] || node bench/view.mjs "$OUT/view-fm-noimages.html" "$REPS"
node bench/view.mjs "$OUT/view-million.html" "$REPS"
