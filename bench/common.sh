# common.sh — helpers for the benchmark scripts (sourced, not run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
NLEMBED=${NLEMBED:-./build/nlembed}
PY=/usr/bin/python3
# SMOKE=1 (tests/bench_smoke.sh runs every script so): each script at a tiny
# size, in seconds, so that a change that breaks a benchmark (an option
# renamed, a range check) fails the suite. Its figures mean nothing. What a
# full run writes into bench/results or docs/images ($RESULTS, $IMAGES) goes
# to $OUT instead. smoke_or FULL TINY gives the value for the mode.
SMOKE=${SMOKE:-0}
export SMOKE
# shellcheck disable=SC2034 # RESULTS and IMAGES: for the scripts that source this
if [ "$SMOKE" = 1 ]; then
  OUT=${OUT:-out/bench-smoke}
  RESULTS=$OUT IMAGES=$OUT
else
  OUT=${OUT:-out/bench}
  RESULTS=bench/results IMAGES=docs/images
fi
mkdir -p "$OUT"
[ -x "$NLEMBED" ] || { echo "build first: ./setup.sh bench" >&2; exit 2; }
smoke_or() { if [ "$SMOKE" = 1 ]; then echo "$2"; else echo "$1"; fi; }

# have_peer python|R|command NAME — whether a peer is installed (./setup.sh
# bench installs them); when not, says so on stdout: that peer's side is
# skipped and nlembed's still runs.
have_peer() {
  local ok=1
  case $1 in
    python) "$PY" -c "import $2" 2> /dev/null || ok=0 ;;
    R) { command -v Rscript > /dev/null && Rscript -e "library($2)" > /dev/null 2>&1; } || ok=0 ;;
    command) command -v "$2" > /dev/null || ok=0 ;;
  esac
  [ $ok = 1 ] && return 0
  echo "peer $2 ($1) is not installed: skipped (./setup.sh bench installs it)"
  return 1
}

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

# ranks_run DIR LABEL RANKS command...: the command alone with 2 threads
# (RANKS 0) or under mpirun -np RANKS with 1 thread a rank (bench/mpi*.sh):
# its stdout into DIR/LABEL.json, its stderr into DIR/err, every rank's
# "wall peak_kb" (GNU time) into DIR/LABEL.time. Non-zero when it failed.
ranks_run() {
  local dir=$1 label=$2 ranks=$3
  shift 3
  rm -f "$dir/time".*
  if [ "$ranks" = 0 ]; then
    /usr/bin/time -f '%e %M' -o "$dir/time.0" "$@" --threads 2 > "$dir/$label.json" 2> "$dir/err"
  else
    mpirun --allow-run-as-root --oversubscribe -q -np "$ranks" \
      bash -c "exec /usr/bin/time -f '%e %M' -o $dir/time.\$OMPI_COMM_WORLD_RANK \"\$@\"" _ \
      "$@" --threads 1 > "$dir/$label.json" 2> "$dir/err"
  fi
  local rc=$?
  [ $rc -eq 0 ] && cat "$dir"/time.* > "$dir/$label.time"
  return $rc
}
