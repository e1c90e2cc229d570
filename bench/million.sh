#!/usr/bin/env bash
# million.sh — issue 5, measurement 4: a 1,000,000-point set through the
# whole pipeline with EE (PCA to 50 for the neighbour search, approximate
# 90-NN, entropic affinities at perplexity 30, EE to 2-D with the default
# engine, L-BFGS: the SD factor of a million-point L+ overflows CHOLMOD's
# 32-bit indices), 2 threads: wall time and peak memory (GNU time) of the one
# `nlembed ee` command, and a PNG of the result.
#   bench/million.sh   [N=1000000] [LAMBDA=0.002] [ITERS=200] [BUDGET=360 (s of optimisation)]
# The data (bench/fmnist_million.py: Fashion-MNIST shifted by up to two
# pixels and rotated by up to 10 degrees, 3 GB of float32) is made once in
# $OUT and is not part of the timing.
source "$(dirname "$0")/common.sh"
N=${N:-1000000}
LAMBDA=${LAMBDA:-0.002}
ITERS=${ITERS:-200}
MODEL=${MODEL:-ee}
DATA=$OUT/fm-augmented-$N
[ -f "$DATA.npy" ] || "$PY" bench/fmnist_million.py "$DATA" "$N"
/usr/bin/time -f "%e %M" -o "$OUT/million-$MODEL.time" "$NLEMBED" "$MODEL" "$DATA.npy" --pca 50 --lambda "$LAMBDA" \
  --optimizer "${OPTIMIZER:-lbfgs}" --max-iters "$ITERS" --time-budget "${BUDGET:-360}" --threads 2 --verbose -o "$OUT/million-$MODEL.npy" > "$OUT/million-$MODEL.json" \
  2> "$OUT/million-$MODEL.log"
read -r t m < "$OUT/million-$MODEL.time"
grep -v '%' "$OUT/million-$MODEL.log" | tail -n 4
printf '%s of %s points: wall %.0f s (%.1f min), peak RSS %.2f GiB\n' "$MODEL" "$N" "$t" "$(echo "$t / 60" | bc -l)" \
  "$(echo "$m / 1048576" | bc -l)"
# (No quality figures here: `nlembed metrics` cross-validates its 10-NN
# accuracy by brute force, O(N^2), which takes far longer than the run.)
"$NLEMBED" plot "$OUT/million-$MODEL.npy" --labels "$DATA-labels.npy" --title "$MODEL of $N augmented Fashion-MNIST images" \
  -o "docs/images/million-$MODEL.png" --quiet
