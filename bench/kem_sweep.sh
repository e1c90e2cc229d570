#!/usr/bin/env bash
# kem_sweep.sh — the sweep behind kernel eigenmaps' default basis
# (docs/kem.md, "The default basis"; bench/kem_sweep.py documents it):
# recall@10 of the map G(x) of held-out points against LE's Nystrom map,
# on Fashion-MNIST (the first 10,000 images to train, the next 60,000
# mapped, as bench/kem.sh) and on a 3-D twisted roll (3,000 / 20,000).
# Configurations "kernels,q,f[,placement]" (f: the width over the centres'
# median spacing; the default is 1024,0,0.15). Results:
# bench/results/kem_sweep.txt. Heavy (the k-means placement alone is
# minutes); SMOKE=1 runs three tiny configurations.
. "$(dirname "$0")/common.sh"
if [ "$SMOKE" = 1 ]; then
  CONFIGS="1024,0,0.15 64,3,0.5 64,0,0.3,kmeans"
else
  CONFIGS="64,10,0.5 256,4,0.5 512,0,0.15 1024,2,0.15 1024,0,0.5 1024,0,0.3 1024,0,0.2 1024,0,0.15 1024,0,0.1 2048,0,0.15 1024,0,0.15,kmeans 1024,0,0.15,minmax"
fi
read -r FM_TRAIN FM_REST ROLL_TRAIN ROLL_REST QUERIES <<< "$(smoke_or "10000 60000 3000 20000 10000" "300 200 300 200 100")"
# shellcheck disable=SC2086 # the configurations are words
$PY bench/kem_sweep.py "$NLEMBED" "$OUT" "$FM_TRAIN" "$FM_REST" "$ROLL_TRAIN" "$ROLL_REST" "$QUERIES" $CONFIGS \
  | tee "$RESULTS/kem_sweep.txt"
