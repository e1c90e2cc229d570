#!/usr/bin/env bash
# lll.sh — Locally Linear Landmarks (dissertation ch. 4) measured against
# exact spectral methods and the landmark baselines, 2 threads (run by
# hand; asserts nothing). PART picks (default all three):
#   fig45    the first 60,000 Fashion-MNIST images, their K_W = 200 kNN
#            graph computed once and shared, Gaussian weights (sigma: the
#            median distance to the 200th neighbour), d = 50: exact LE, then
#            LLL (K_Z = 50, random landmarks), LE(Z) and LE(Nystrom) over L
#            and 5 seeds (bench/lll_fig45.py: Procrustes error against
#            exact LE and the seconds after the shared graph)
#   causes   fig. 4.5's candidate differences one at a time (bench/
#            lll_fig45_causes.py, an independent NumPy LLL next to the C
#            code): the first 20,000 images (exact K_W = 200 graph, K_Z = 50
#            baseline) and a 20,000-point curved sheet (K_W = 30, K_Z = 4),
#            CASES_FM / CASES_SHEET pick the cases, LS and SEEDS as fig45
#   cluster  all 70,000 images, 10 clusters, the default graph (k = 10,
#            binary) computed once: exact spectral clustering, LLL at
#            several L and Nystrom (clustering of the landmarks, then the
#            nearest centre after the out-of-sample map): the fraction of
#            points clustered differently from exact (Hungarian) and the
#            seconds after the shared graph
#   sweep    model selection (sec. 4.5, fig. 4.14): the first 20,000 images,
#            10 clusters, a 10 x 10 grid of sigma (300..6000) and K_W
#            (2..200), exact and by LLL with Z made once (L = 1,000): both
#            grids of majority error, their minima, the total times, and
#            the selection curves in docs/images/lll-sweep.svg
#   million  the 1,000,000-image augmented Fashion-MNIST of bench/million.sh,
#            LE to d = 2 with 10,000 random landmarks and K_Z = 5: the time
#            of the graph, of Z and of the embedding, peak RSS, a PNG
# Example: PART=cluster LS_CLUSTER="500 1000" bench/lll.sh
source "$(dirname "$0")/common.sh"
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
PART=${PART:-"fig45 causes cluster sweep million"}
# a smoke run: each part on a few hundred images (2,000 for million), few landmarks (500: the sparse pencil), one seed
if [ "$SMOKE" = 1 ]; then
  export LS=${LS:-"60 500"} SEEDS=${SEEDS:-1} KZ=${KZ:-10} KW=${KW:-20} SIGMAS=${SIGMAS:-"300:6000:2"}
  export KS=${KS:-"2:20:2"} LANDMARKS=${LANDMARKS:-100}
  LS_CLUSTER=${LS_CLUSTER:-100}
fi
KW=${KW:-200}
N_FIG45=$(smoke_or 60000 600) N_CLUSTER=$(smoke_or 70000 600) N_SWEEP=$(smoke_or 20000 600)
json() { "$PY" -c "import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(d$2)" "$1"; }

for part in $PART; do
case $part in
fig45)
  DATA=$OUT/fm60k.npy G=$OUT/fm60k-k200.mtx
  [ -f "$DATA" ] || "$PY" -c "import sys; sys.path.insert(0, 'bench'); import fmnist, numpy as np; np.save('$DATA', fmnist.images($N_FIG45).astype(np.float32))"
  if [ ! -f "$G" ]; then
    /usr/bin/time -f "%e" -o "$OUT/.time" "$NLEMBED" knn "$DATA" -k "$KW" -o "$G" --quiet > /dev/null
    echo "# the K_W = $KW kNN graph of $N_FIG45 images (shared by every method): $(cat "$OUT/.time") s"
  fi
  if [ ! -f "$OUT/fm60k-exact50.json" ]; then
    "$NLEMBED" le "$DATA" --knn "$G" -k "$KW" --affinity gaussian -d 50 -o "$OUT/fm60k-exact50.npy" --quiet \
      > "$OUT/fm60k-exact50.json"
  fi
  "$PY" bench/lll_fig45.py "$NLEMBED" "$DATA" "$G" "$OUT/fm60k-exact50.npy" "$OUT/fm60k-exact50.json" "$OUT"
  ;;
causes)
  N=$(smoke_or 20000 600) KW_FM=$(smoke_or 200 20) KW_SHEET=$(smoke_or 30 10)
  DATA=$OUT/fm$N.npy SHEET=$OUT/sheet$N.npy
  [ -f "$DATA" ] || "$PY" -c "import sys; sys.path.insert(0, 'bench'); import fmnist, numpy as np; np.save('$DATA', fmnist.images($N).astype(np.float32))"
  [ -f "$SHEET" ] || "$PY" -c "import numpy as np; r = np.random.default_rng(0); u, v = r.uniform(0, 3, $N), r.uniform(0, 1, $N); np.save('$SHEET', np.c_[u, v, 0.3 * np.sin(2 * u)].astype(np.float32))"
  "$NLEMBED" knn "$DATA" -k "$KW_FM" --knn-method exact -o "$DATA-k$KW_FM.mtx" --quiet > /dev/null
  "$NLEMBED" knn "$SHEET" -k "$KW_SHEET" --knn-method exact -o "$SHEET-k$KW_SHEET.mtx" --quiet > /dev/null
  NLEMBED=$NLEMBED "$PY" bench/lll_fig45_causes.py "$DATA" "$DATA-k$KW_FM.mtx" \
    "${CASES_FM:-base,sigma200_01,pca50,kz5,kz10,kz20,reg1e-9,reg1e-1,bident,nlembed}" "${LS:-100 300 1000 3000}" "${SEEDS:-1}"
  KZ=4 NLEMBED=$NLEMBED "$PY" bench/lll_fig45_causes.py "$SHEET" "$SHEET-k$KW_SHEET.mtx" \
    "${CASES_SHEET:-base,kz3,kz10,kz51,reg1e-9,reg1e-1,bident,exacttol1e-3,nlembed}" "${LS:-100 300 1000 3000}" "${SEEDS:-1}"
  ;;
cluster)
  DATA=$OUT/fm70k.npy G=$OUT/fm70k-k10.mtx
  [ -f "$DATA" ] || "$PY" -c "import sys; sys.path.insert(0, 'bench'); import fmnist, numpy as np; np.save('$DATA', fmnist.images($N_CLUSTER).astype(np.float32)); np.save('$OUT/fm70k-labels.npy', fmnist.labels($N_CLUSTER).astype(np.int32))"
  [ -f "$G" ] || "$NLEMBED" knn "$DATA" -k 10 -o "$G" --quiet > /dev/null
  spectral() { json "$1" "['graph_seconds'] + d['eigen_seconds'] + d['kmeans_seconds']"; }
  for rep in 1 2 3; do
    "$NLEMBED" cluster "$DATA" --knn "$G" -c 10 --labels "$OUT/fm70k-labels.npy" -o "$OUT/sc-exact.txt" --quiet \
      > "$OUT/sc-exact-$rep.json"
  done
  ex=$(for rep in 1 2 3; do spectral "$OUT/sc-exact-$rep.json"; done | sort -g | sed -n 2p)
  # the floor: exact clusterings from other k-means seeds against the first
  for seed in 2 3; do
    "$NLEMBED" cluster "$DATA" --knn "$G" -c 10 --seed "$seed" --labels "$OUT/sc-exact.txt" -o "$OUT/sc-exact-s.txt" \
      --quiet > "$OUT/sc-exact-s.json"
    echo "# exact with k-means seed $seed against seed 1: $(json "$OUT/sc-exact-s.json" "['error_matched'] * 100")% of the points differ"
  done
  echo "# exact spectral clustering of 70,000 images (k = 10 binary graph, shared): graph + eigen + k-means" \
       "median $ex s; its error against the classes (Hungarian) $(json "$OUT/sc-exact-1.json" "['error_matched']")"
  printf '# %-8s %6s %4s %10s %9s %9s\n' method L seed difference seconds speed-up
  for L in ${LS_CLUSTER:-250 500 1000 2000 4000}; do
    for seed in ${SEEDS:-1 2 3}; do
      "$NLEMBED" cluster "$DATA" --knn "$G" -c 10 --landmarks "$L" --seed "$seed" --labels "$OUT/sc-exact.txt" \
        -o "$OUT/sc-lll.txt" --quiet > "$OUT/sc-lll.json"
      t=$(spectral "$OUT/sc-lll.json")
      printf '  %-8s %6d %4d %9.4f%% %9.2f %8.1fx\n' lll "$L" "$seed" \
        "$(json "$OUT/sc-lll.json" "['error_matched'] * 100")" "$t" "$(echo "$ex / $t" | bc -l)"
      # Nystrom: spectral clustering of the landmarks, the rest by the out-of-sample map and the nearest centre
      "$PY" -c "import numpy as np; Y = np.load('$DATA', mmap_mode='r'); i = np.sort(np.random.default_rng($seed).choice(len(Y), $L, replace=False)); np.save('$OUT/sc-lm.npy', np.asarray(Y[i]))"
      if "$NLEMBED" cluster "$OUT/sc-lm.npy" -c 10 --seed "$seed" --save-model "$OUT/sc-nys.model" \
           -o "$OUT/sc-lm.txt" --quiet > "$OUT/sc-nys.json" 2> "$OUT/sc-nys.err" &&
         "$NLEMBED" transform "$OUT/sc-nys.model" "$DATA" -o "$OUT/sc-nys.txt" --quiet > "$OUT/sc-nys-t.json" \
           2>> "$OUT/sc-nys.err"; then
        t=$(echo "$(json "$OUT/sc-nys.json" "['total_seconds']") + $(json "$OUT/sc-nys-t.json" "['seconds']")" | bc -l)
        diff=$("$PY" -c "
import numpy as np, sys
from scipy.optimize import linear_sum_assignment
a = np.loadtxt('$OUT/sc-nys.txt', dtype=int); b = np.loadtxt('$OUT/sc-exact.txt', dtype=int)
C = np.zeros((10, 10)); np.add.at(C, (a, b), 1); r, c = linear_sum_assignment(-C); print(100 * (1 - C[r, c].sum() / len(a)))")
        printf '  %-8s %6d %4d %9.4f%% %9.2f %8.1fx\n' nystrom "$L" "$seed" "$diff" "$t" "$(echo "$ex / $t" | bc -l)"
      else
        printf '  %-8s %6d %4d failed: %s\n' nystrom "$L" "$seed" "$(tail -1 "$OUT/sc-nys.err")"
      fi
    done
  done
  ;;
sweep)
  DATA=$OUT/fm20k.npy
  [ -f "$DATA" ] || "$PY" -c "import sys; sys.path.insert(0, 'bench'); import fmnist, numpy as np; np.save('$DATA', fmnist.images($N_SWEEP).astype(np.float32)); np.save('$OUT/fm20k-labels.npy', fmnist.labels($N_SWEEP).astype(np.int32))"
  "$PY" bench/lll_sweep.py "$NLEMBED" "$DATA" "$OUT/fm20k-labels.npy" "$IMAGES/lll-sweep.svg"
  ;;
million)
  N=$(smoke_or 1000000 2000) DATA=$OUT/fm-augmented-$(smoke_or 1000000 2000) L=$(smoke_or 10000 200)
  [ -f "$DATA.npy" ] || "$PY" bench/fmnist_million.py "$DATA" "$N"
  /usr/bin/time -f "%e %M" -o "$OUT/lll-million.time" "$NLEMBED" le "$DATA.npy" --landmarks "$L" --kz 5 \
    -o "$OUT/lll-million.npy" > "$OUT/lll-million.json" 2> "$OUT/lll-million.log"
  read -r t m < "$OUT/lll-million.time"
  printf 'LE by LLL of %s points (L = %s, K_Z = 5, defaults otherwise): wall %.0f s (%.1f min), peak RSS %.2f GiB\n' \
    "$N" "$L" "$t" "$(echo "$t / 60" | bc -l)" "$(echo "$m / 1048576" | bc -l)"
  "$PY" -c "import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print({k: d[k] for k in d if k.endswith('seconds') or k in ('k', 'knn_method', 'pca', 'pca_candidates', 'reconstruction_error', 'landmarks', 'kz')})" "$OUT/lll-million.json"
  [ -f "$DATA-names.txt" ] || "$PY" -c "import sys, numpy as np; sys.path.insert(0, 'bench'); import fmnist; open('$DATA-names.txt', 'w').write('\\n'.join(fmnist.CLASSES[i] for i in np.load('$DATA-labels.npy')) + '\\n')"
  "$NLEMBED" plot "$OUT/lll-million.npy" --labels "$DATA-names.txt" \
    --title "Laplacian eigenmaps by LLL of $N augmented Fashion-MNIST images ($L landmarks)" \
    -o "$IMAGES/million-lll.png" --quiet
  ;;
esac
done
