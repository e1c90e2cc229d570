#!/usr/bin/env bash
# python_tsne.sh — t-SNE of all 70,000 Fashion-MNIST images from Python
# (nlembed.TSNE().fit_transform, the package over libnlembed) against the
# tool (`nlembed tsne fashion-mnist -o ...`), same build, same machine, in
# one run and interleaved (tool, Python, tool, Python, ...), REPEATS times
# each (default 3); then umap-learn's UMAP().fit_transform once. Prints
# each run's figures, the medians, the Python / tool ratio (target: within
# 5%), whether the two maps are the same bits, and `nlembed metrics` of
# the Python and UMAP maps.
#   bench/python_tsne.sh     [REPEATS=3] [UMAP=1] [METRICS=1] [N=70000]
# Times: "embed" is the library's own total (the tool's JSON total_seconds,
# the package's report_["seconds"]["total"]); "call" is the Python
# fit_transform call (the embedding, plus the package's input checks and
# copies); "process" is the whole process, reading the data included (the
# tool's IDX reader, or numpy on the same gzip files) and, for Python,
# importing numpy, scikit-learn and the package.
source "$(dirname "$0")/common.sh"
REPEATS=${REPEATS:-$(smoke_or 3 1)}
N=${N:-$(smoke_or 70000 300)}
DATA=fashion-mnist
[ "$N" -lt 70000 ] && DATA=fashion-mnist:$N
BUILD_DIR=$(dirname "$NLEMBED")
export NLEMBED_LIBRARY=${NLEMBED_LIBRARY:-$BUILD_DIR/libnlembed.so}
[ -e "$NLEMBED_LIBRARY" ] || { echo "no $NLEMBED_LIBRARY: build the shared library first" >&2; exit 2; }

printf "# t-SNE of Fashion-MNIST ($N x 784), tool vs Python package, same build (%s); %s; %s cores\n" \
  "$NLEMBED_LIBRARY" "$(date -u '+%F %H:%M')" "$(nproc)"
printf '# %s; load average at the start: %s\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
  "$(cut -d' ' -f1-3 /proc/loadavg)"
cli_embed=() cli_proc=() py_embed=() py_call=() py_proc=()
for i in $(seq "$REPEATS"); do
  /usr/bin/time -f "%e %M" -o "$OUT/pytsne.time" "$NLEMBED" tsne "$DATA" -o "$OUT/pytsne-cli.npy" \
    > "$OUT/pytsne-cli.json" 2> "$OUT/pytsne-cli.err" || { echo "tool failed: $(tail -2 "$OUT/pytsne-cli.err")"; exit 1; }
  read -r wall rss < "$OUT/pytsne.time"
  read -r embed stages < <("$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["total_seconds"], " ".join("%s %.1f" % (k, j[k + "_seconds"]) for k in ("pca", "knn", "affinity", "init", "plan", "optimize")))' "$OUT/pytsne-cli.json")
  cli_embed+=("$embed") cli_proc+=("$wall")
  printf 'run %d  tool    embed %7.2f s  process %7.2f s  peak %5d MiB  (%s)\n' "$i" "$embed" "$wall" "$((rss / 1024))" \
    "$stages"
  /usr/bin/time -f "%e %M" -o "$OUT/pytsne.time" "$PY" bench/python_tsne.py tsne "$OUT/pytsne-py.npy" "$N" \
    > "$OUT/pytsne-py.json" 2> "$OUT/pytsne-py.err" || { echo "Python failed: $(tail -2 "$OUT/pytsne-py.err")"; exit 1; }
  read -r wall rss < "$OUT/pytsne.time"
  read -r embed call stages < <("$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); s=j["library_seconds"]; print(s["total"], j["fit_seconds"], " ".join("%s %.1f" % (k, s[k]) for k in ("pca", "knn", "affinity", "init", "plan", "optimize")))' "$OUT/pytsne-py.json")
  py_embed+=("$embed") py_call+=("$call") py_proc+=("$wall")
  printf 'run %d  Python  embed %7.2f s  call %7.2f s  process %7.2f s  peak %5d MiB  (%s)\n' "$i" "$embed" "$call" \
    "$wall" "$((rss / 1024))" "$stages"
  same=$("$PY" -c 'import numpy as np,sys; a,b=np.load(sys.argv[1]),np.load(sys.argv[2]); print("same bits" if a.dtype==b.dtype and np.array_equal(a,b) else "DIFFERENT (max |diff| %g)" % np.abs(a-b).max())' \
    "$OUT/pytsne-cli.npy" "$OUT/pytsne-py.npy")
  echo "run $i  maps: $same"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ce=$(median "${cli_embed[@]}") cp=$(median "${cli_proc[@]}")
pe=$(median "${py_embed[@]}") pc=$(median "${py_call[@]}") pp=$(median "${py_proc[@]}")
printf 'median of %d  tool: embed %.2f s, process %.2f s;  Python: embed %.2f s, call %.2f s, process %.2f s\n' \
  "$REPEATS" "$ce" "$cp" "$pe" "$pc" "$pp"
awk -v ce="$ce" -v cp="$cp" -v pc="$pc" -v pp="$pp" 'BEGIN {
  printf "Python / tool: fit_transform call / tool embed %.3f (%+.1f%%), process / process %.3f (%+.1f%%)\n",
    pc / ce, 100 * (pc / ce - 1), pp / cp, 100 * (pp / cp - 1) }'
if [ "${METRICS:-1}" = 1 ]; then
  "$NLEMBED" metrics "$DATA" "$OUT/pytsne-py.npy" --subsample "$(smoke_or 10000 200)" --quiet > "$OUT/pytsne-py-metrics.json"
  echo "Python t-SNE metrics: $(cat "$OUT/pytsne-py-metrics.json")"
fi
if [ "${UMAP:-1}" = 1 ] && have_peer python umap; then
  /usr/bin/time -f "%e %M" -o "$OUT/pytsne.time" "$PY" bench/python_tsne.py umap "$OUT/pytsne-umap.npy" "$N" \
    > "$OUT/pytsne-umap.json" 2> "$OUT/pytsne-umap.err" || { echo "UMAP failed: $(tail -2 "$OUT/pytsne-umap.err")"; exit 1; }
  read -r wall rss < "$OUT/pytsne.time"
  call=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["fit_seconds"])' "$OUT/pytsne-umap.json")
  printf 'umap-learn UMAP().fit_transform  call %7.2f s  process %7.2f s  peak %5d MiB\n' "$call" "$wall" "$((rss / 1024))"
  if [ "${METRICS:-1}" = 1 ]; then
    "$NLEMBED" metrics "$DATA" "$OUT/pytsne-umap.npy" --subsample "$(smoke_or 10000 200)" --quiet > "$OUT/pytsne-umap-metrics.json"
    echo "UMAP metrics: $(cat "$OUT/pytsne-umap-metrics.json")"
  fi
fi
