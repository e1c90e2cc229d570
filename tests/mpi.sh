#!/usr/bin/env bash
# mpi.sh — distributed runs (issue 38, docs/mpi.md), forced through TCP as
# between hosts. CI has one machine: the ranks are oversubscribed processes.
# - the unit cases written for any number of ranks (their names start with
#   comm/ or mpi/; each takes the world communicator through test_comm_ctx
#   and compares with the same work done alone, bit for bit) at 2 and 3
#   ranks;
# - the tool under mpirun at 2 and 3 ranks: inputs read by rows (.npy in C
#   and Fortran order by offset, text read by rank 0 and scattered), the
#   outputs (.npy by offset, .csv gathered) cmp-identical to a single
#   process's, one JSON line with "ranks"; --max-memory per rank; a NaN in rank 1's rows, a method
#   not yet distributed, a command that is not, and a killed rank: one error
#   line, non-zero exit, no output; a build without MPI (build-nompi, when
#   built) refusing mpirun;
# - the Python estimators with an mpi4py communicator.
# BUILD: the build to run (default build). Skipped, saying so, in a build
# without MPI.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
BUILD=${BUILD:-build}
N=$BUILD/nlembed
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

# --- the tool under mpirun ----------------------------------------------------
if ! /usr/bin/python3 -c "import numpy" 2> /dev/null; then
  echo "skip: the tool's runs need /usr/bin/python3 with numpy to make their inputs"
  finish
  exit
fi
# inputs: 3 blocks of rows and a short one, so every rank of 2 or 3 holds some
/usr/bin/python3 -c "
import numpy as np
t = '$T'
Y = np.random.default_rng(1).standard_normal((3 * 4096 + 50, 12)).astype(np.float32)
np.save(t + '/Y.npy', Y)
np.save(t + '/Yf.npy', np.asfortranarray(Y.astype(np.float64)))
np.savetxt(t + '/Y.csv', Y, delimiter=',', fmt='%.7g')
Y[9000, 7] = np.nan  # rank 1's rows at 2 ranks (it holds 8192 on)
np.save(t + '/Ynan.npy', Y)
np.savetxt(t + '/big.csv', np.random.default_rng(2).standard_normal((60000, 12)), delimiter=',', fmt='%.7g')"
$N pca "$T/Y.npy" -d 3 --save-model "$T/m.nle" -o "$T/pca.npy" --quiet > /dev/null || bad pca_model "exit $?"
for input in Y.npy Yf.npy Y.csv; do
  for ext in npy csv; do $N transform "$T/m.nle" "$T/$input" -o "$T/alone_${input/./_}.$ext" --quiet > /dev/null; done
done

# cmp_run NAME RANKS WANT_N OUTPUT ALONE -- command: a distributed run whose
# output is the single process's, bit for bit, and one JSON line saying the
# ranks and all the rows.
cmp_run() {
  local name=$1 ranks=$2 n=$3 out=$4 alone=$5 rc lines
  shift 6
  timeout 120 "${MPIRUN[@]}" -q -np "$ranks" "$@" > "$T/stdout" 2> "$T/stderr"
  rc=$?
  lines=$(grep -c '^{' "$T/stdout")
  if [ $rc -ne 0 ]; then bad "$name" "exit $rc: $(head -c 300 "$T/stderr")"
  elif [ "$lines" -ne 1 ] || ! grep -q "\"ranks\": $ranks," "$T/stdout" || ! grep -q "\"n\": $n," "$T/stdout"; then
    bad "$name" "$lines JSON lines: $(head -c 300 "$T/stdout")"
  elif ! cmp -s "$out" "$alone"; then bad "$name" "$out differs from the single process's"
  else ok "$name"; fi
}
for ranks in 2 3; do
  for input in Y.npy Yf.npy Y.csv; do
    for ext in npy csv; do
      out="$T/r${ranks}_${input/./_}.$ext"
      cmp_run "cli_transform_${input/./_}_to_${ext}_ranks_$ranks" "$ranks" 12338 "$out" "$T/alone_${input/./_}.$ext" -- \
        "$N" transform "$T/m.nle" "$T/$input" -o "$out" --quiet
    done
  done
done

# t-SNE end to end (the graph stage, the affinities, the locality order,
# the iterations): 1, 2 and 3 ranks give the same bits. 21,000 points: past
# the approximate search's threshold (20,000); a process alone takes
# another locality order (docs/mpi.md), so the reference is 1 rank under
# mpirun.
timeout 120 "${MPIRUN[@]}" -q -np 1 "$N" tsne fashion-mnist:21000 --max-iters 30 -o "$T/tsne1.npy" --quiet > /dev/null 2>&1 ||
  bad cli_tsne_one_rank "mpirun -np 1 nlembed tsne failed"
for ranks in 2 3; do
  cmp_run "cli_tsne_ranks_$ranks" "$ranks" 21000 "$T/tsne$ranks.npy" "$T/tsne1.npy" -- \
    "$N" tsne fashion-mnist:21000 --max-iters 30 -o "$T/tsne$ranks.npy" --quiet
  # the JSON line: every rank's bytes per stage and peak memory, one entry a rank, some sent
  usage=$(grep -o '"bytes_sent": \[[^]]*\]' "$T/stdout")
  entries=$(tr ',' '\n' <<< "$usage" | grep -c '[0-9]')
  if [ "$entries" -eq "$ranks" ] && ! grep -q '\[0, \|, 0\]' <<< "$usage" &&
     grep -q "\"peak_mib\": \[" "$T/stdout" && grep -q "\"bytes_per_iteration\": \[" "$T/stdout"
  then ok "cli_tsne_usage_ranks_$ranks"; else bad "cli_tsne_usage_ranks_$ranks" "${usage:-no bytes_sent}"; fi
done

# t-EE's default, a homotopy over lambda of fixed-rate steps, on ranks: 2
# and 3 ranks give 1 rank's bits
timeout 120 "${MPIRUN[@]}" -q -np 1 "$N" tee fashion-mnist:21000 --max-iters 4 -o "$T/tee1.npy" --quiet > /dev/null 2>&1 ||
  bad cli_tee_one_rank "mpirun -np 1 nlembed tee failed"
for ranks in 2 3; do
  cmp_run "cli_tee_ranks_$ranks" "$ranks" 21000 "$T/tee$ranks.npy" "$T/tee1.npy" -- \
    "$N" tee fashion-mnist:21000 --max-iters 4 -o "$T/tee$ranks.npy" --quiet
done

# wide rows (D = 1,100 > 1,000): the PCA start (init: pca) takes the
# randomized solver, distributed by TSQR (docs/pca.md): 2 ranks give 1
# rank's bits
/usr/bin/python3 -c "
import numpy as np
r = np.random.default_rng(5)
C = 3 * r.standard_normal((8, 1100))
np.save('$T/wide.npy', (C[r.integers(0, 8, 5000)] + r.standard_normal((5000, 1100))).astype(np.float32))"
timeout 120 "${MPIRUN[@]}" -q -np 1 "$N" tsne "$T/wide.npy" --max-iters 10 -o "$T/wide1.npy" --quiet > /dev/null 2>&1 ||
  bad cli_tsne_wide_one_rank "mpirun -np 1 nlembed tsne failed"
cmp_run cli_tsne_wide_ranks_2 2 5000 "$T/wide2.npy" "$T/wide1.npy" -- \
  "$N" tsne "$T/wide.npy" --max-iters 10 -o "$T/wide2.npy" --quiet

# checkpoints per rank with a manifest (docs/mpi.md): 40 iterations
# checkpointed every 20, resumed to 60 on the same ranks, give the 60
# iterations' bits; the previous parts are removed; another number of ranks,
# one process, or a part missing: one error line, no output. 5,000 points:
# two row blocks, so at 3 ranks one rank holds none.
ck=(tsne fashion-mnist:5000 -p 10 --quiet)
timeout 120 "${MPIRUN[@]}" -q -np 3 "$N" "${ck[@]}" --max-iters 60 -o "$T/ck60.npy" > /dev/null 2>&1
timeout 120 "${MPIRUN[@]}" -q -np 3 "$N" "${ck[@]}" --max-iters 40 --checkpoint "$T/run.ck" --checkpoint-every 20 \
  -o "$T/ck40.npy" > /dev/null 2>&1
parts=$(cd "$T" && echo run.ck.*)
timeout 120 "${MPIRUN[@]}" -q -np 3 "$N" "${ck[@]}" --max-iters 60 --resume "$T/run.ck" -o "$T/ckr.npy" > /dev/null 2> "$T/ck_err"
rc=$?
if [ $rc -ne 0 ]; then bad cli_checkpoint_resume_ranks_3 "exit $rc: $(head -c 300 "$T/ck_err")"
elif [ "$parts" != "run.ck.2.rank0 run.ck.2.rank1 run.ck.2.rank2" ]; then bad cli_checkpoint_resume_ranks_3 "parts: $parts"
elif ! cmp -s "$T/ckr.npy" "$T/ck60.npy"; then bad cli_checkpoint_resume_ranks_3 "the resumed run differs from 60 iterations"
elif [ "$(cd "$T" && echo run.ck.*)" != "run.ck.3.rank0 run.ck.3.rank1 run.ck.3.rank2" ]; then
  bad cli_checkpoint_resume_ranks_3 "after the resume: $(cd "$T" && echo run.ck.*)"
else ok cli_checkpoint_resume_ranks_3; fi
ck_refused() { # NAME WANT CHECKPOINT -- launcher (none: alone)
  local name=$1 want=$2 resume=$3
  shift 4
  rm -f "$T/ckx.npy"
  timeout 120 "$@" "$N" "${ck[@]}" --max-iters 60 --resume "$resume" -o "$T/ckx.npy" > /dev/null 2> "$T/ck_err"
  local rc=$?
  if [ $rc -ne 0 ] && [ ! -e "$T/ckx.npy" ] && grep -q "$want" "$T/ck_err"; then ok "$name"
  else bad "$name" "exit $rc: $(head -c 300 "$T/ck_err")"; fi
}
ck_refused cli_checkpoint_other_ranks "written by 3 ranks; resume it with mpirun -np 3" "$T/run.ck" -- \
  "${MPIRUN[@]}" -q -np 2
ck_refused cli_checkpoint_alone "written by 3 ranks; resume it with mpirun -np 3" "$T/run.ck" --
$N "${ck[@]}" --max-iters 20 --checkpoint "$T/alone.ck" --checkpoint-every 10 -o "$T/cka.npy" > /dev/null 2>&1
ck_refused cli_checkpoint_of_one_process "written by one process; resume it without mpirun" "$T/alone.ck" -- \
  "${MPIRUN[@]}" -q -np 2
rm -f "$T/run.ck.3.rank1"
ck_refused cli_checkpoint_part_missing "run.ck.3.rank1: cannot open" "$T/run.ck" -- "${MPIRUN[@]}" -q -np 3

# the spectral methods (docs/mpi_spectral.md): PARPACK sums over the ranks
# in arrival order, so not the same bits: within 1e-7 of the largest
# coordinate of the single process's embedding (its sparse Lanczos on the
# same operator; a unit case checks the residuals), the same cluster labels
/usr/bin/python3 -c "
import numpy as np
rng = np.random.default_rng(3)
Y = rng.standard_normal((2 * 4096 + 800, 10))
Y[:, 0] += 2.5 * (np.arange(len(Y)) % 3 - 1)  # three clusters, one connected graph
np.save('$T/blobs.npy', rng.permutation(Y).astype(np.float32))"
$N le "$T/blobs.npy" --solver sparse -o "$T/le1.npy" --quiet > /dev/null || bad cli_le_alone "exit $?"
$N cluster "$T/blobs.npy" -c 3 --solver sparse -o "$T/cl1.npy" --quiet > /dev/null || bad cli_cluster_alone "exit $?"
for ranks in 2 3; do
  timeout 120 "${MPIRUN[@]}" -q -np "$ranks" "$N" le "$T/blobs.npy" -o "$T/le$ranks.npy" --quiet > "$T/stdout" 2> "$T/stderr" &&
    timeout 120 "${MPIRUN[@]}" -q -np "$ranks" "$N" cluster "$T/blobs.npy" -c 3 -o "$T/cl$ranks.npy" --quiet > /dev/null 2>> "$T/stderr"
  rc=$?
  verdict=$(/usr/bin/python3 -c "
import numpy as np
a, b = np.load('$T/le1.npy'), np.load('$T/le$ranks.npy')
la, lb = np.load('$T/cl1.npy'), np.load('$T/cl$ranks.npy')
d = np.abs(a - b).max() if a.shape == b.shape else np.inf
print('same' if d <= 1e-7 * np.abs(a).max() and np.array_equal(la, lb) else 'differs by %g, labels %s' % (d, np.array_equal(la, lb)))" 2>&1)
  if [ $rc -ne 0 ]; then bad "cli_le_cluster_ranks_$ranks" "exit $rc: $(head -c 300 "$T/stderr")"
  elif [ "$verdict" != same ]; then bad "cli_le_cluster_ranks_$ranks" "$verdict"
  else ok "cli_le_cluster_ranks_$ranks"; fi
done

# LLL (lll_dist.c): Z by rows, the reduced pencil summed over ranks in fixed
# point, so the same bytes at 1, 2 and 3 ranks, and within 1e-6 of the
# single process's (its sums in double). 120 columns: the search runs among
# principal components, which every rank must resolve for all N (at 3 ranks
# the last holds 800 rows)
/usr/bin/python3 -c "
import numpy as np
rng = np.random.default_rng(4)
Y = rng.standard_normal((2 * 4096 + 800, 120))
Y[:, 0] += 4.0 * (np.arange(len(Y)) % 3 - 1)
np.save('$T/wide.npy', rng.permutation(Y).astype(np.float32))"
$N le "$T/wide.npy" --landmarks 300 -o "$T/lll0.npy" --quiet > /dev/null || bad cli_lll_alone "exit $?"
for ranks in 1 2 3; do
  timeout 120 "${MPIRUN[@]}" -q -np "$ranks" "$N" le "$T/wide.npy" --landmarks 300 -o "$T/lll$ranks.npy" --quiet \
    > /dev/null 2> "$T/stderr" &&
    timeout 120 "${MPIRUN[@]}" -q -np "$ranks" "$N" cluster "$T/wide.npy" -c 3 --landmarks 300 --landmark-method thinned \
      -o "$T/lllc$ranks.npy" --quiet > /dev/null 2>> "$T/stderr" &&
    timeout 120 "${MPIRUN[@]}" -q -np "$ranks" "$N" le "$T/wide.npy" --landmarks 300 --landmark-graph \
      --laplacian symmetric -o "$T/lllg$ranks.npy" --quiet > /dev/null 2>> "$T/stderr"
  rc=$?
  # (3 oversubscribed ranks come unbound, with 2 threads each: the bits
  # must not follow the threads)
  if [ $rc -ne 0 ]; then bad "cli_lll_ranks_$ranks" "exit $rc: $(head -c 300 "$T/stderr")"
  elif [ "$ranks" -gt 1 ] && ! { cmp -s "$T/lll1.npy" "$T/lll$ranks.npy" && cmp -s "$T/lllc1.npy" "$T/lllc$ranks.npy" &&
    cmp -s "$T/lllg1.npy" "$T/lllg$ranks.npy"; }; then
    bad "cli_lll_ranks_$ranks" "not the bytes of 1 rank"
  else ok "cli_lll_ranks_$ranks"; fi
done
verdict=$(/usr/bin/python3 -c "
import numpy as np
a, b = np.load('$T/lll0.npy'), np.load('$T/lll1.npy')
d = np.abs(a - b).max() if a.shape == b.shape else np.inf
print('near' if d <= 1e-6 * np.abs(a).max() else 'differs by %g' % d)" 2>&1)
[ "$verdict" = near ] && ok cli_lll_near_alone || bad cli_lll_near_alone "$verdict"

# one rank bound to one core by mpirun's default on a machine with more:
# rank 0 says so once; unbound, nothing
if [ "$(nproc)" -ge 2 ]; then
  bound=$(timeout 60 mpirun --allow-run-as-root -q -np 1 "$N" tsne fashion-mnist:500 --max-iters 5 -o "$T/b.npy" --quiet 2>&1 > /dev/null)
  free_=$(timeout 60 mpirun --allow-run-as-root -q --bind-to none -np 1 "$N" tsne fashion-mnist:500 --max-iters 5 -o "$T/b.npy" --quiet 2>&1 > /dev/null)
  if [ "$(grep -c 'warning: mpirun bound each rank to 1 of' <<< "$bound")" = 1 ] && [ -z "$free_" ]; then ok cli_bound_core_warning
  else bad cli_bound_core_warning "bound: '$bound'; unbound: '$free_'"; fi
fi

# --max-memory is per rank: a cap under the whole matrix (12338 x 12 floats,
# 578 KiB) and over a rank's share (8192 rows at 2 ranks, 384 KiB) refuses
# the single process and lets 2 ranks run, with the same bytes
$N transform "$T/m.nle" "$T/Y.npy" -o "$T/cap1.npy" --max-memory 450K --quiet > /dev/null 2>&1
rc=$?
cmp_run cli_memory_cap_per_rank 2 12338 "$T/cap2.npy" "$T/alone_Y_npy.npy" -- \
  "$N" transform "$T/m.nle" "$T/Y.npy" -o "$T/cap2.npy" --max-memory 450K --quiet
[ $rc -ne 0 ] || bad cli_memory_cap_alone "the single process ran under a cap below its matrix"

# mpi_fail NAME WANT OUTPUT RANKS -- command: a non-zero exit, the tool's one
# error line (mpirun -q adds none), no output and no temporary left
mpi_fail() {
  local name=$1 want=$2 out=$3 ranks=$4 rc lines
  shift 5
  timeout 120 "${MPIRUN[@]}" -q -np "$ranks" "$@" > "$T/stdout" 2> "$T/stderr"
  rc=$?
  lines=$(grep -c 'error' "$T/stderr")
  if [ $rc -eq 0 ]; then bad "$name" "exit 0"
  elif [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$T/stderr"; then bad "$name" "exit $rc: $(head -c 400 "$T/stderr")"
  elif [ -e "$out" ] || ls -a "$(dirname "$out")" | grep -q '\.tmp\.'; then bad "$name" "left $out or a temporary"
  else ok "$name"; fi
}
mpi_fail cli_nan_in_rank_1_rows "Ynan.npy: byte 432156 (row 9000, column 7): NaN value" "$T/nan.npy" 2 -- \
  "$N" transform "$T/m.nle" "$T/Ynan.npy" -o "$T/nan.npy" --quiet
# (a method whose stages stay whole: SMACOF's N x N dissimilarities)
mpi_fail cli_method_not_distributed "sammon does not run on more than one rank yet" "$T/ts.npy" 3 -- \
  "$N" sammon "$T/Y.npy" -o "$T/ts.npy" --quiet
# (a solver that needs the whole graph on one rank, named)
mpi_fail cli_le_solver_refused "--solver shift-invert does not run on more than one rank" "$T/lesi.npy" 2 -- \
  "$N" le "$T/blobs.npy" --solver shift-invert -o "$T/lesi.npy" --quiet
mpi_fail cli_plot_refused "plot does not run on more than one rank" "$T/p.png" 2 -- \
  "$N" plot "$T/pca.npy" -o "$T/p.png" --quiet
mpi_fail cli_ranks_given_other_files "the ranks were given different inputs" "$T/other.npy" 2 -- \
  bash -c "exec $N transform $T/m.nle $T/Y\$([ \"\$OMPI_COMM_WORLD_RANK\" = 1 ] && echo f).npy -o $T/other.npy --quiet"

# a rank failing alone (a bad option on rank 1 only: rank 0 waits in the
# reading's first collective call): rank 1 tells its error and ends the job
# after its 10 s wait at the exit, instead of a hang
mpi_fail cli_rank_failing_alone "--threads takes an integer" "$T/alone_fail.npy" 2 -- \
  bash -c "exec $N transform $T/m.nle $T/Y.npy -o $T/alone_fail.npy --quiet --threads \$([ \"\$OMPI_COMM_WORLD_RANK\" = 1 ] && echo abc || echo 1)"

# a rank killed (-9) while rank 0 reads a text input whole: mpirun ends the
# job, non-zero exit, no output
"${MPIRUN[@]}" -q -np 2 "$N" transform "$T/m.nle" "$T/big.csv" -o "$T/killed.npy" --quiet > /dev/null 2> "$T/kill_err" &
launcher=$!
victim=""
for _ in $(seq 500); do
  for pid in $(pgrep -P "$launcher" 2> /dev/null); do
    tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$pid
  done
  [ -n "$victim" ] && break
  sleep 0.02
done
[ -n "$victim" ] && kill -9 "$victim"
wait "$launcher"
rc=$?
if [ -z "$victim" ]; then bad cli_killed_rank "rank 1 was not found to kill"
elif [ $rc -eq 0 ]; then bad cli_killed_rank "exit 0 after rank 1 was killed"
elif [ -e "$T/killed.npy" ]; then bad cli_killed_rank "left $T/killed.npy"
else ok "cli_killed_rank (exit $rc)"; fi

# a build without MPI refuses more than one rank (make MPI=0 BUILD=build-nompi)
if [ -x build-nompi/nlembed ]; then
  mpi_fail cli_nompi_refuses "built without MPI and cannot run on 2 ranks" "$T/nompi.npy" 2 -- \
    build-nompi/nlembed transform "$T/m.nle" "$T/Y.npy" -o "$T/nompi.npy"
else
  echo "skip: build-nompi/nlembed not built (make MPI=0 BUILD=build-nompi): the refusal without MPI"
fi

# --- Python with mpi4py ---------------------------------------------------------
if /usr/bin/python3 -c "import mpi4py, sklearn" 2> /dev/null; then
  for ranks in 2 3; do
    out=$(PYTHONPATH=$PWD/python NLEMBED_LIBRARY=$PWD/$BUILD/libnlembed.so timeout 300 "${MPIRUN[@]}" -q -np "$ranks" \
      -x PYTHONPATH -x NLEMBED_LIBRARY /usr/bin/python3 python/tests/mpi_estimators.py 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q "^ok python_mpi_ranks_$ranks" <<< "$out"; then ok "python_mpi_ranks_$ranks"
    else bad "python_mpi_ranks_$ranks" "exit $rc: $(tail -c 400 <<< "$out")"; fi
  done
else
  echo "skip: /usr/bin/python3 has no mpi4py or scikit-learn (python3-mpi4py)"
fi
finish
