#!/usr/bin/env bash
# mpi.sh — distributed runs (issue 38, docs/mpi.md) on 1, 2 and 4 ranks
# (this machine's cores are few: 4 ranks are oversubscribed, and so is 2
# when other work runs; say so beside the figures). For each: every rank's
# wall time and peak memory (RSS) and whether the output is the single
# process's, byte for byte.
# - reading and writing by rows: `nlembed transform` of N x 50 points through
#   a PCA model, from a .npy (read by offset) and from a .csv (read by rank
#   0 and scattered), to a .npy written by offset;
# - the whole t-SNE, once its stages run distributed (refused until then:
#   the script says so and goes on).
# Full: 1,000,000 points (.csv: 200,000); SMOKE=1: 20,000 (t-SNE: 2,000).
. "$(dirname "$0")/common.sh"
command -v mpirun > /dev/null || { echo "mpirun is not installed (./setup.sh installs OpenMPI): skipped"; exit 0; }
N_NPY=$(smoke_or 1000000 20000)
N_CSV=$(smoke_or 200000 20000)
N_TSNE=$(smoke_or 1000000 2000)
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -q)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo "load: $(uptime)"
"$PY" -c "
import numpy as np
Y = np.random.default_rng(1).standard_normal(($N_NPY, 50)).astype(np.float32)
np.save('$W/Y.npy', Y)
np.savetxt('$W/Y.csv', Y[:$N_CSV], delimiter=',', fmt='%.7g')
np.save('$W/Yt.npy', Y[:$N_TSNE])"
"$NLEMBED" pca "$W/Y.npy" -d 2 --save-model "$W/m.nle" -o "$W/pca.npy" --quiet > /dev/null

# run LABEL RANKS OUT ALONE -- command: one line per rank, "same" when OUT
# is ALONE's bytes
run() {
  local label=$1 ranks=$2 out=$3 alone=$4
  shift 5
  if [ "$ranks" = 1 ]; then
    /usr/bin/time -f "%e %M" -o "$W/time.0" "$@" > "$W/json" 2> "$W/err"
  else
    "${MPIRUN[@]}" -np "$ranks" bash -c "exec /usr/bin/time -f '%e %M' -o $W/time.\$OMPI_COMM_WORLD_RANK \"\$@\"" _ "$@" \
      > "$W/json" 2> "$W/err"
  fi
  local rc=$? same=""
  if [ $rc -ne 0 ]; then
    echo "$label, $ranks ranks: not run: $(head -n 1 "$W/err")"
    return 1
  fi
  [ "$out" = "$alone" ] || { cmp -s "$out" "$alone" && same=", output the same bytes as 1 rank" || same=", OUTPUT DIFFERS"; }
  for ((r = 0; r < ranks; r++)); do
    read -r wall kb < "$W/time.$r"
    printf '%s, %d ranks, rank %d: %.2f s, peak %.0f MiB%s\n' "$label" "$ranks" "$r" "$wall" "$((kb / 1024))" "$same"
  done
}

for input in Y.npy Y.csv; do
  for ranks in 1 2 4; do
    run "transform $input" "$ranks" "$W/x$ranks.npy" "$W/x1.npy" -- \
      "$NLEMBED" transform "$W/m.nle" "$W/$input" -o "$W/x$ranks.npy" --threads 1 --quiet
  done
done
for ranks in 1 2 4; do
  run "tsne ($N_TSNE points)" "$ranks" "$W/t$ranks.npy" "$W/t1.npy" -- \
    "$NLEMBED" tsne "$W/Yt.npy" -o "$W/t$ranks.npy" --threads 1 --quiet --max-iters "$(smoke_or 1000 50)" || break
done
