#!/usr/bin/env bash
# spectral_oos.sh — the spectral methods' out-of-sample maps (nlembed
# transform with a model from --save-model) beside scikit-learn's
# (Isomap.transform, LocallyLinearEmbedding.transform; SpectralEmbedding has
# none) on the Swiss roll of bench/spectral_peers.py: TRAIN points (numpy
# seed 0) embedded with k = 12, then NEW held-out points of the same roll
# (seed 1) mapped. Per method and tool: the seconds of the map alone (nlembed:
# the whole `transform` process, model loading included), and the quality
# of the map: an affine fit from the training embedding to the true (arc
# length, height), its relative residual on the training points and on the
# mapped new points (equal figures: the new points sit where the training
# embedding says). Run by hand; asserts nothing.
# TRAIN (default "2000 20000"), NEW (2000), METHODS (default all: "le diffmap
# lle mlle ltsa hlle isomap"). Example: TRAIN=2000 METHODS=isomap bench/spectral_oos.sh
source "$(dirname "$0")/common.sh"
export OMP_NUM_THREADS=${THREADS:-2} OPENBLAS_NUM_THREADS=${THREADS:-2}
TRAIN=${TRAIN:-$(smoke_or "2000 20000" 300)}
NEW=${NEW:-$(smoke_or 2000 100)}
PEER=1
have_peer python sklearn || PEER=0
METHODS=${METHODS:-"le diffmap lle mlle ltsa hlle isomap"}
row() { printf '%-8s %-7s %-8s %9s s   %s\n' "$@"; }

echo "== Swiss roll out-of-sample, k = 12, $NEW new points (nlembed $("$NLEMBED" --version | cut -d' ' -f2), $(date -u +%F))"
row method train tool "map" "affine residual: training, new"
"$PY" bench/spectral_peers.py gen_heldout "$NEW" "$OUT"
for n in $TRAIN; do
  "$PY" bench/spectral_peers.py gen "$n" "$OUT"
  for m in $METHODS; do
    base="$OUT/oos${n}_$m"
    "$NLEMBED" "$m" "$OUT/roll$n.npy" -k 12 -o "$base.npy" --save-model "$base.nle" --quiet > /dev/null
    /usr/bin/time -f "%e" -o "$OUT/.time" "$NLEMBED" transform "$base.nle" "$OUT/new$NEW.npy" -o "${base}_new.npy" \
      --quiet > /dev/null
    "$PY" -c 'import numpy as np, sys; np.save(sys.argv[3], np.r_[np.load(sys.argv[1]), np.load(sys.argv[2])])' \
      "$base.npy" "${base}_new.npy" "${base}_all.npy"
    q=$("$PY" bench/spectral_peers.py oos_score "$OUT/roll${n}_true.npy" "$OUT/new${NEW}_true.npy" "${base}_all.npy")
    ns=$(cat "$OUT/.time")
    if [ "$m" != le ] && [ "$m" != diffmap ] && [ $PEER = 1 ]; then
      sj=$("$PY" bench/spectral_peers.py transform "$m" "$OUT/roll$n.npy" "$OUT/new$NEW.npy" 12 "${base}_sk.npy")
      ss=$("$PY" -c 'import json,sys; print("%.2f" % json.loads(sys.argv[1])["seconds"])' "$sj")
      sq=$("$PY" bench/spectral_peers.py oos_score "$OUT/roll${n}_true.npy" "$OUT/new${NEW}_true.npy" "${base}_sk.npy")
      row "$m" "$n" scikit "$ss" "$sq"
      row "$m" "$n" nlembed "$ns" "$q $(awk -v a="$ss" -v b="$ns" 'BEGIN {printf "%.1fx", a / b}')"
    else
      row "$m" "$n" nlembed "$ns" "$q"
    fi
  done
done
