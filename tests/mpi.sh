#!/usr/bin/env bash
# mpi.sh — distributed runs (issue 38, docs/mpi.md): the unit cases written
# for any number of ranks (their names start with comm/ or mpi/; each takes
# the world communicator through test_comm_ctx and compares with the same
# work done alone, bit for bit) at 2 and 3 ranks, forced through TCP as
# between hosts. CI has one machine: the ranks are oversubscribed processes.
# BUILD: the build to run (default build). Skipped, saying so, in a build
# without MPI.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
BUILD=${BUILD:-build}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self)

if ! command -v mpirun > /dev/null || ! grep -q -- '-DNLE_WITH_MPI' "$BUILD/.cflags" 2> /dev/null; then
  echo "skip: $BUILD was built without MPI (install libopenmpi-dev and rebuild)"
  finish
  exit
fi

for prefix in comm/ mpi/; do
  [ -n "$(./"$BUILD"/test_runner "$prefix" | grep '^ok ')" ] || continue
  for ranks in 2 3; do
    out=$(timeout 300 "${MPIRUN[@]}" -np "$ranks" "./$BUILD/test_runner" "$prefix" 2>&1)
    rc=$?
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' <<< "$out" | tail -n 1)
    if [ $rc -eq 0 ] && [[ $summary == *" 0 failed" ]]; then ok "units_${prefix%/}_ranks_$ranks ($summary)"
    else bad "units_${prefix%/}_ranks_$ranks" "exit $rc: $(grep -E '^FAILED|rror' <<< "$out" | head -n 3 | tr '\n' ' ')"; fi
  done
done
finish
