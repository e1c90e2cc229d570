#!/usr/bin/env bash
# ee_reference.sh — nlembed's EE on the case the EE authors' own code was run
# on (the first 2,000 Fashion-MNIST images; ../shared/reference-ee/README.md
# when this runs inside the project's workspace, REFERENCE=DIR elsewhere):
# W+ entropic affinities (perplexity 20 over all 1,999 other points,
# symmetrised, summing to 1), W- the squared distances divided by their sum
# S, X0 = 1e-5 randn (the reference's file). Runs, with the reference's
# settings (spectral direction with the whole L+, backtracking with shrink
# 0.8 and sufficient-decrease constant 0.1):
#   homotopy: 50 lambda values logspace(-4, 2), each stopped when
#             |X - X_old| <= 1e-3 |X_old| or after 100 iterations;
#   fixed:    lambda = 100, 500 iterations.
# Prints each run's final E, iterations and optimisation time, against the
# reference's E and the time its own code took on this machine kind (the
# issue's table: 62.3 s and 81.5 s), as ratios.
#   bench/ee_reference.sh [REPEATS=3]
source "$(dirname "$0")/common.sh"
REFERENCE=${REFERENCE:-../shared/reference-ee}
REPEATS=${REPEATS:-$(smoke_or 3 1)}
N=$(smoke_or 2000 200) # a smoke run: the same commands on 200 images, a few iterations, its own X0
X0=$REFERENCE/fashion2000_X0.npy
if [ "$SMOKE" = 1 ]; then
  X0=$OUT/smoke_X0.npy
  "$PY" -c "import numpy as np, sys; np.save(sys.argv[1], 1e-5 * np.random.default_rng(0).standard_normal(($N, 2)))" "$X0"
fi
[ -f "$X0" ] || { echo "no $X0 (set REFERENCE=DIR)" >&2; exit 2; }
DATA=fashion-mnist:$N
"$NLEMBED" affinity "$DATA" -p 20 -k $((N - 1)) --method exact --normalize -o "$OUT/ref_W.mtx" --threads 2 --quiet > /dev/null
# S = the sum of all N^2 squared distances (the reference's W- normaliser),
# from the data: lambda on the normalised W- is lambda / S on ours.
S=$("$PY" - "$N" <<'PY'
import sys
sys.path.insert(0, "bench")
import numpy as np, fmnist
Y = fmnist.images(int(sys.argv[1])).astype(np.float64)
sq = (Y * Y).sum(1)
n = len(Y)
print(repr(2 * n * sq.sum() - 2 * float((Y.sum(0) ** 2).sum())))
PY
)
common=(ee "$DATA" --affinities "$OUT/ref_W.mtx" --wneg sqdist --repulsion exact --init "$X0" --optimizer sd
        --kappa 0 --step line-search --c1 0.1 --shrink 0.8 --threads 2 --quiet)
run_case() { # LABEL REF_E REF_SECONDS nlembed-args...
  local label=$1 ref_e=$2 ref_t=$3
  shift 3
  local times=() line=""
  for _ in $(seq "$REPEATS"); do
    line=$("$NLEMBED" "${common[@]}" "$@" -o "$OUT/ref_$label.npy")
    times+=("$("$PY" -c "import json,sys; print(json.loads(sys.argv[1])['optimize_seconds'])" "$line")")
  done
  "$PY" - "$label" "$ref_e" "$ref_t" "$line" "${times[@]}" <<'PY'
import json, statistics, sys
label, ref_e, ref_t, line = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
times = [float(t) for t in sys.argv[5:]]
med = statistics.median(times)
print(f"{label:9s} E {line['E']:.10f} (reference {ref_e:.10f}, {'<=' if line['E'] <= ref_e else '>'}), "
      f"{line['iterations']} iterations, optimise {med:.2f} s median of {len(times)} "
      f"({', '.join(f'{t:.2f}' for t in times)}) = {med / ref_t:.3f} of the reference's {ref_t} s")
PY
}
lam() { "$PY" -c "print(repr($1 / $S))"; }
echo "# EE reference case: $DATA, perplexity 20, normalised W+ and W-; S = $S; $(date -u +%F)"
run_case homotopy 1.5428761963316879 62.3 --homotopy "$(smoke_or 50 3)" --lambda-start "$(lam 1e-4)" --lambda "$(lam 100)" \
  --max-iters "$(smoke_or 100 5)" --x-tol 1e-3 --tol 0
run_case fixed 1.5614545944266556 81.5 --lambda "$(lam 100)" --max-iters "$(smoke_or 500 5)" --tol 0
