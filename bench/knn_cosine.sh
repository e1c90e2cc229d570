#!/usr/bin/env bash
# knn_cosine.sh — the kNN graph of sparse tf-idf-like documents under the
# cosine distance: nlembed's exact and approximate searches (`nlembed knn
# --metric cosine` on the .npz, searched sparse) and what auto picks, then
# scikit-learn's NearestNeighbors(metric="cosine", algorithm="brute") and
# pynndescent in the same run, recall against nlembed's exact lists.
# Documents: bench/knn_cosine.py gen (Zipf word frequencies, topics and
# subtopics). Times: the search as the JSON line reports it (reading the
# file excluded), medians of REPS runs; peers: fit and query.
#   K=10 REPS=3 THREADS=2 SIZES="20000:20000:50 100000:50000:200" bench/knn_cosine.sh
# (PEERS=0: nlembed only; scikit-learn takes 15 minutes at 100,000.)
source "$(dirname "$0")/common.sh"
k=${K:-10}
threads=${THREADS:-2}
reps=${REPS:-$(smoke_or 3 1)}
sizes=${SIZES:-$(smoke_or "20000:20000:50 100000:50000:200" "400:2000:8")}

# search_run LABEL command... — the median of the JSON lines' "seconds"
# over REPS runs, and the method that ran.
search_run() {
  local label=$1 times=()
  shift
  for _ in $(seq "$reps"); do
    "$@" > "$OUT/.stdout" 2> "$OUT/.stderr" || { echo "$label: failed: $(tail -1 "$OUT/.stderr")"; return 1; }
    times+=("$(sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$OUT/.stdout")")
  done
  local med method
  med=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  method=$(sed -n 's/.*"knn_method": "\([a-z]*\)".*/\1/p' "$OUT/.stdout")
  printf '  %-34s median %7.2f s of %d (runs: %s), ran %s\n' "$label" "$med" "$reps" "${times[*]}" "$method"
}

echo "nlembed knn --metric cosine, k = $k, $threads threads ($(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
for spec in $sizes; do
  IFS=: read -r n terms topics <<< "$spec"
  data=$OUT/tfidf-$n.npz
  echo "== $n documents"
  [ -f "$data" ] || "$PY" bench/knn_cosine.py gen "$n" "$terms" "$topics" "$data"
  for method in exact approx auto; do
    search_run "nlembed $method" "$NLEMBED" knn "$data" --metric cosine -k "$k" --method $method \
      --threads "$threads" --quiet -o "$OUT/cos$k-$n-$method.npy"
  done
  "$PY" bench/knn_cosine.py recall "$OUT/cos$k-$n-exact.npy" "$OUT/cos$k-$n-approx.npy"
  [ "${PEERS:-1}" = 0 ] && continue
  have_peer python sklearn || continue
  OMP_NUM_THREADS=$threads NUMBA_NUM_THREADS=$threads "$PY" bench/knn_cosine.py peers "$data" \
    "$OUT/cos$k-$n-exact.npy" "$k" "$threads" "$reps"
done
