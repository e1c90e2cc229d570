#!/usr/bin/env bash
# spectral_peers.sh — nlembed's spectral methods beside scikit-learn's on the
# same points and the same neighbours, one tool after the other (run by
# hand; asserts nothing). For each: wall seconds (the neighbour search
# included; nlembed's from the shell, process start and reading included),
# peak RSS, and the quality of the map.
#   Swiss roll (bench/spectral_peers.py: t = 1.5 pi (1 + 2u), h = 21 u',
#   numpy seed 0), k = 12: LE, LLE, modified LLE, LTSA, Hessian LLE, Isomap; Procrustes
#   error and affine-fit residual against the true (arc length, height).
#   Fashion-MNIST's first 20,000 images, k = 14 (scikit-learn's
#   n_neighbors = 15 counts the point itself): LE and spectral clustering
#   (10 clusters; errors against the labels).
# SIZES (default "2000 20000"), FASHION=0 to skip Fashion-MNIST, ISOMAP_MAX
# (default 20000) the largest Isomap scikit-learn runs (180 s and 12 GiB at
# 20,000 here). Example: SIZES=2000 FASHION=0 bench/spectral_peers.sh
source "$(dirname "$0")/common.sh"
export OMP_NUM_THREADS=${THREADS:-2} OPENBLAS_NUM_THREADS=${THREADS:-2}
SIZES=${SIZES:-$(smoke_or "2000 20000" 300)}
FASHION=${FASHION:-1}
have_peer python sklearn || exit 0 # every line is a comparison
ISOMAP_MAX=${ISOMAP_MAX:-20000}
row() { printf '%-8s %-7s %-10s %9s s %8s MiB  %s\n' "$@"; }

nle_run() { # nle_run OUTPUT args...: "seconds MiB" of one nlembed run
  local out=$1
  shift
  /usr/bin/time -f "%e %M" -o "$OUT/.time" "$NLEMBED" "$@" -o "$out" --threads "$OMP_NUM_THREADS" --quiet \
    > "$OUT/.json" 2> "$OUT/.stderr" || { echo "failed: $(tail -1 "$OUT/.stderr")"; return 1; }
  awk '{printf "%.2f %.0f", $1, $2 / 1024}' "$OUT/.time"
}

sk_run() { # sk_run METHOD INPUT K OUTPUT: "seconds MiB"
  "$PY" bench/spectral_peers.py "$@" > "$OUT/.sk.json" || { echo "failed"; return 1; }
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.2f %.0f" % (d["seconds"], d["peak_mib"]))' "$OUT/.sk.json"
}

echo "== Swiss roll, k = 12 (nlembed $("$NLEMBED" --version | cut -d' ' -f2), $(date -u +%F))"
row method N tool seconds peak "Procrustes affine ratio"
for n in $SIZES; do
  "$PY" bench/spectral_peers.py gen "$n" "$OUT"
  for m in le lle mlle ltsa hlle isomap; do
    [ "$m" = isomap ] && [ "$n" -gt "$ISOMAP_MAX" ] && continue
    read -r ns nm <<< "$(nle_run "$OUT/roll${n}_nle_$m.npy" "$m" "$OUT/roll$n.npy" -k 12)"
    read -r ss sm <<< "$(sk_run "$m" "$OUT/roll$n.npy" 12 "$OUT/roll${n}_sk_$m.npy")"
    nq=$("$PY" bench/spectral_peers.py score "$OUT/roll${n}_true.npy" "$OUT/roll${n}_nle_$m.npy")
    sq=$("$PY" bench/spectral_peers.py score "$OUT/roll${n}_true.npy" "$OUT/roll${n}_sk_$m.npy")
    row "$m" "$n" scikit "$ss" "$sm" "$sq"
    row "$m" "$n" nlembed "$ns" "$nm" "$nq $(awk -v a="$ss" -v b="$ns" 'BEGIN {printf "%.1fx", a / b}')"
  done
done

[ "$FASHION" = 1 ] || exit 0
n=$(smoke_or 20000 500)
echo "== Fashion-MNIST, first $n images, k = 14 (scikit-learn n_neighbors = 15)"
"$PY" bench/spectral_peers.py fmnist $n "$OUT"
for search in auto exact; do
  extra=()
  [ $search = exact ] && extra=(--pca 0 --method exact)
  read -r ns nm <<< "$(nle_run "$OUT/fm_nle_le_$search.npy" le "$OUT/fm$n.npy" -k 14 "${extra[@]}")"
  row le $n "nle-$search" "$ns" "$nm" "$(grep -o '"eigenvalues": \[[^]]*\]' "$OUT/.json")"
  read -r ns nm <<< "$(nle_run "$OUT/fm_nle_cl_$search.txt" cluster "$OUT/fm$n.npy" -c 10 -k 14 "${extra[@]}")"
  err=$("$PY" - unused "$OUT/fm_nle_cl_$search.txt" "$OUT/fm${n}_labels.npy" <<'PY'
import sys, numpy as np
from scipy.optimize import linear_sum_assignment
y = np.load(sys.argv[3]); lab = np.loadtxt(sys.argv[2]).astype(int)
C = np.zeros((lab.max() + 1, y.max() + 1))
np.add.at(C, (lab, y), 1)
r, c = linear_sum_assignment(-C)
print(f"errors {1 - C[r, c].sum() / len(y):.5f} matched, {1 - C.max(1).sum() / len(y):.5f} majority")
PY
)
  row cluster $n "nle-$search" "$ns" "$nm" "$err"
done
echo "scikit-learn's LE eigenvalues on its own graph (the exact search's): $("$PY" bench/spectral_peers.py le_eigenvalues "$OUT/fm$n.npy" 14)"
read -r ss sm <<< "$(sk_run le "$OUT/fm$n.npy" 14 "$OUT/fm_sk_le.npy")"
row le $n scikit "$ss" "$sm" ""
read -r ss sm <<< "$(sk_run cluster "$OUT/fm$n.npy" 14 "$OUT/fm_sk_cl.npy")"
err=$("$PY" - "$OUT/fm_sk_cl.npy" "$OUT/fm${n}_labels.npy" <<'PY'
import sys, numpy as np
from scipy.optimize import linear_sum_assignment
lab = np.load(sys.argv[1]).astype(int); y = np.load(sys.argv[2])
C = np.zeros((lab.max() + 1, y.max() + 1))
np.add.at(C, (lab, y), 1)
r, c = linear_sum_assignment(-C)
print(f"errors {1 - C[r, c].sum() / len(y):.5f} matched, {1 - C.max(1).sum() / len(y):.5f} majority")
PY
)
row cluster $n scikit "$ss" "$sm" "$err"
