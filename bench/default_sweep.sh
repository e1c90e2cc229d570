#!/usr/bin/env bash
# default_sweep.sh — are a model's defaults its best map? For MODEL (ee by
# default; ssne, sne, tee, tsne too) on the first N Fashion-MNIST images,
# runs the default (no options) and a sweep of lambda (LAMBDAS, multiples of
# the default lambda) and perplexity (PERPLEXITIES), everything else left to
# the defaults, and prints each run's time, recall@10 (neighbours among all
# N, against the 784-d ones) and trustworthiness@10 (within the 10,000-point
# subsample, as bench/peers.sh prints them) and 10-NN accuracy; then the
# best of the sweep for each figure and the default's ratio to it.
#   MODEL=ee SIZES="5000 20000 70000" bench/default_sweep.sh
source "$(dirname "$0")/common.sh"
MODEL=${MODEL:-ee}
SIZES=${SIZES:-$(smoke_or "5000 20000 70000" 300)}
LAMBDAS=${LAMBDAS:-$(smoke_or "0.1 0.3 1 3 10" 3)}
PERPLEXITIES=${PERPLEXITIES:-$(smoke_or "5 15 30" 5)}
SUBSAMPLE=${SUBSAMPLE:-$(smoke_or 10000 200)}
ITERS=$(smoke_or "" "--max-iters 20")
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
echo "# $MODEL defaults against a sweep of lambda x perplexity, Fashion-MNIST; $(date -u +%F)"
printf '%-7s %-26s %9s %9s %10s %9s\n' N run seconds recall@10 trust@10 10-NN
for n in $SIZES; do
  data=fashion-mnist:$n
  [ "$n" -ge 70000 ] && data=fashion-mnist
  rows="$OUT/sweep_${MODEL}_$n.tsv"
  : > "$rows"
  one() { # LABEL options...
    local label=$1
    shift
    local line
    # shellcheck disable=SC2086
    line=$("$NLEMBED" "$MODEL" "$data" "$@" $ITERS -o "$OUT/sweep.npy" --quiet) || { echo "$label: failed"; return; }
    local lam secs
    lam=$("$PY" -c "import json,sys; d=json.loads(sys.argv[1]); print(d['lambda'], d['total_seconds'])" "$line")
    read -r lam secs <<< "$lam"
    echo "$lam" > "$rows.lambda"
    local all within
    all=$("$NLEMBED" metrics "$data" "$OUT/sweep.npy" -k 10 --subsample "$SUBSAMPLE" --quiet)
    within=$("$NLEMBED" metrics "$data" "$OUT/sweep.npy" -k 10 --subsample "$SUBSAMPLE" --within-subsample --quiet)
    "$PY" - "$n" "$label" "$secs" "$all" "$within" "$rows" <<'PY'
import json, sys
n, label, secs, a, w, rows = sys.argv[1], sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5]), sys.argv[6]
r, t, acc = a["recall"], w["trustworthiness"], a["knn_accuracy"]
print(f"{n:7s} {label:26s} {secs:9.1f} {r:9.4f} {t:10.5f} {acc:9.4f}")
open(rows, "a").write(f"{label}\t{secs}\t{r}\t{t}\t{acc}\n")
PY
  }
  one default
  base=$(cat "$rows.lambda") # the default's lambda, as it resolved
  for p in $PERPLEXITIES; do
    for c in $LAMBDAS; do
      lam=$("$PY" -c "print(repr($base * $c))")
      one "lambda ${c}x, perplexity $p" --lambda "$lam" -p "$p"
    done
  done
  "$PY" - "$n" "$rows" <<'PY'
import sys
n, rows = sys.argv[1], [l.rstrip("\n").split("\t") for l in open(sys.argv[2])]
default = rows[0]
for col, name in ((2, "recall@10"), (3, "trust@10")):
    best = max(rows[1:], key=lambda r: float(r[col]))
    print(f"# N = {n}: best {name} {float(best[col]):.4f} ({best[0]}); default {float(default[col]):.4f} = "
          f"{float(default[col]) / float(best[col]):.3f} of it")
PY
done
