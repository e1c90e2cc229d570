# common.sh — helpers for the benchmark scripts (sourced, not run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
NLEMBED=${NLEMBED:-./build/nlembed}
PY=/usr/bin/python3
OUT=${OUT:-out/bench}
mkdir -p "$OUT"
[ -x "$NLEMBED" ] || { echo "build first: ./setup.sh bench" >&2; exit 2; }

# median_run LABEL REPEATS command... — prints the median wall time and the
# largest peak RSS over REPEATS runs (GNU time).
median_run() {
  local label=$1 reps=$2
  shift 2
  local times=() rss=0
  for _ in $(seq "$reps"); do
    /usr/bin/time -f "%e %M" -o "$OUT/.time" "$@" > "$OUT/.stdout" 2> "$OUT/.stderr" || {
      echo "$label: failed: $(tail -1 "$OUT/.stderr")"; return 1; }
    read -r t m < "$OUT/.time"
    times+=("$t")
    [ "$m" -gt "$rss" ] && rss=$m
  done
  local med
  med=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  printf '%-44s median %7.2f s of %d (runs: %s), peak RSS %.0f MiB\n' "$label" "$med" "$reps" "${times[*]}" "$((rss / 1024))"
}
