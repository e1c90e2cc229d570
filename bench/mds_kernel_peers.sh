#!/usr/bin/env bash
# mds_kernel_peers.sh — nlembed's MDS family, kernel PCA and LDA beside
# scikit-learn's MDS (metric SMACOF and non-metric), KernelPCA (rbf) and
# LinearDiscriminantAnalysis on the same input (run by hand; asserts nothing).
#   Data (bench/mds_kernel_peers.py): Swiss roll (spectral_peers.py's), labels
#   6 bins of its parameter t; the first N Fashion-MNIST images reduced to 50
#   principal components, labels the classes. The RBF gamma of both tools:
#   1 / (2 s2), s2 the median squared distance of 10,000 random pairs.
#   Same settings: nlembed mds/sammon/nmds --starts 4 --max-iter 300,
#   scikit-learn n_init=4, max_iter=300, random_state=0 (its own defaults).
#   Per method and tool, REPS runs: the median seconds and the largest peak
#   RSS. nlembed: wall time from GNU time (process start and reading the .npy
#   included); scikit-learn: the fit alone, measured in its process
#   (mds_kernel_peers.py run). Quality of the last run's map, both tools by
#   the same code (mds_kernel_peers.py score): stress1 = sqrt(sum (delta -
#   d)^2 / sum d^2), nstress = sqrt(sum (delta - d)^2 / sum delta^2), scaled =
#   nstress after the best scaling of the map (scale-free: non-metric maps
#   have an arbitrary scale), over pairs i < j, delta the input distances
#   (N <= 20,000); knn10: leave-one-out 10-NN accuracy. Extra: iterations and
#   nlembed's own stress1, nm_s1 (Kruskal stress-1 after monotone regression,
#   N <= 5,000), the top-2 eigenvalues of the centred kernel (kpca), and the
#   speed ratio scikit-learn / nlembed.
#   Then the first N raw Fashion-MNIST images (N x 784 pixels, 0..255),
#   RAW_METHODS only (kernel PCA: issue 37's 10,000 x 784 row).
#   Last: nlembed lmds of all 70,000 raw Fashion-MNIST images, median of REPS.
# Env: SIZES (Swiss roll N, "2000"), FASHION_SIZES ("5000 20000"; "" for none),
#   FASHION_RAW_SIZES ("10000"; "" for none), RAW_METHODS ("kpca"), REPS (3),
#   SK_REPS (REPS: scikit-learn's runs), SK_MAX_MDS (5000: the largest N at
#   which scikit-learn's MDS runs; its metric MDS took 416 s and 1.4 GiB a
#   run at 5,000 here, 20,000 takes hours and ~20 GiB), METHODS
#   ("cmds mds sammon nmds lmds kpca lda"; cmds, sammon and lmds have no
#   scikit-learn peer), LMDS70K (1; 0 skips the 70,000 line), THREADS (2).
# Example (small): SIZES=300 FASHION_SIZES=500 REPS=1 LMDS70K=0 bench/mds_kernel_peers.sh
source "$(dirname "$0")/common.sh"
export OMP_NUM_THREADS=${THREADS:-2} OPENBLAS_NUM_THREADS=${THREADS:-2}
SIZES=${SIZES-$(smoke_or 2000 100)}
FASHION_SIZES=${FASHION_SIZES-$(smoke_or "5000 20000" "")} # a smoke run: the roll only
FASHION_RAW_SIZES=${FASHION_RAW_SIZES-$(smoke_or 10000 "")}
RAW_METHODS=${RAW_METHODS:-kpca}
REPS=${REPS:-$(smoke_or 3 1)}
SK_REPS=${SK_REPS:-$REPS}
SK_MAX_MDS=${SK_MAX_MDS:-5000}
METHODS=${METHODS:-"cmds mds sammon nmds lmds kpca lda"}
LMDS70K=${LMDS70K:-$(smoke_or 1 0)}
PEER=1
have_peer python sklearn || PEER=0
MK=bench/mds_kernel_peers.py

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
jf() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; } # jf FILE EXPR(d)
row() { printf '%-7s %6s %-8s %8s %8s %9s %8s %8s %7s  %s\n' "$@"; }

nle_reps() { # nle_reps EMB args...: NT median s, NM peak MiB, last JSON in $OUT/.json; else 1 and ERR
  local emb=$1 times=() rss=0 t m
  shift
  for _ in $(seq "$REPS"); do
    /usr/bin/time -f "%e %M" -o "$OUT/.time" "$NLEMBED" "$@" -o "$emb" --threads "$OMP_NUM_THREADS" --quiet \
      > "$OUT/.json" 2> "$OUT/.stderr" || { ERR="failed: $(tail -1 "$OUT/.stderr")"; return 1; }
    read -r t m < "$OUT/.time"
    times+=("$t")
    [ "$m" -gt "$rss" ] && rss=$m
  done
  NT=$(median "${times[@]}") NM=$((rss / 1024))
}

sk_reps() { # sk_reps METHOD INPUT EMB [options]: ST, SM, last JSON in $OUT/.sk.json; else 1 and ERR
  local times=() rss=0 t m
  for _ in $(seq "$SK_REPS"); do
    "$PY" $MK run "$@" > "$OUT/.sk.json" 2> "$OUT/.sk.stderr" || { ERR="failed: $(tail -1 "$OUT/.sk.stderr")"; return 1; }
    read -r t m <<< "$(jf "$OUT/.sk.json" '"%.3f %.0f" % (d["seconds"], d["peak_mib"])')"
    times+=("$t")
    [ "$m" -gt "$rss" ] && rss=$m
  done
  ST=$(median "${times[@]}") SM=$rss
}

qual() { # qual SCORE.json: stress1 nstress scaled knn10 ("-" where absent)
  jf "$1" '" ".join("%.4g" % d[k] if d.get(k) is not None else "-" for k in ("stress1", "normalized_stress", "scaled_stress", "knn10"))'
}

score() { # score INPUT EMB LABELS [--no-stress] > $OUT/.score.json
  "$PY" $MK score "$@" > "$OUT/.score.json" 2> "$OUT/.score.stderr" || echo '{}' > "$OUT/.score.json"
}

dataset() { # dataset NAME N INPUT LABELS
  local name=$1 n=$2 in=$3 lab=$4 gamma m sk extra ratio stress
  gamma=$("$PY" $MK gamma "$in")
  score "$in" "$in" "$lab" --no-stress
  echo "== $name N = $n, rbf gamma $gamma, knn10 of the input itself $(jf "$OUT/.score.json" 'd.get("knn10")')"
  row method N tool seconds "peak MiB" stress1 nstress scaled knn10 "extra"
  for m in $METHODS; do
    local args=() skargs=() stem="$OUT/mk_${name}${n}"
    stress=()
    case $m in
      mds) sk=smacof args=(--starts 4 --max-iter 300) ;;
      sammon) sk="" args=(--starts 4 --max-iter 300) ;;
      nmds) sk=nonmetric args=(--starts 4 --max-iter 300) ;;
      kpca) sk=kpca args=(--kernel gaussian --gamma "$gamma") skargs=(--gamma "$gamma") stress=(--no-stress) ;;
      lda) sk=lda args=(--labels "$lab") skargs=(--labels "$lab") stress=(--no-stress) ;;
      *) sk="" ;;
    esac
    ST=""
    [ $PEER = 1 ] || sk=""
    if [ -n "$sk" ]; then
      if [ "$sk" != kpca ] && [ "$sk" != lda ] && [ "$n" -gt "$SK_MAX_MDS" ]; then
        row "$m" "$n" scikit - - - - - - "skipped (SK_MAX_MDS=$SK_MAX_MDS)"
      elif sk_reps "$sk" "$in" "${stem}_sk_$m.npy" "${skargs[@]}"; then
        score "$in" "${stem}_sk_$m.npy" "$lab" "${stress[@]}"
        extra=$(jf "$OUT/.sk.json" '" ".join(s for s in ["it=%d" % d["n_iter_"] if "n_iter_" in d else "",
          "eig=%.6g,%.6g" % tuple(d["eigenvalues"][:2]) if "eigenvalues" in d else ""] if s)')
        [ "$sk" = nonmetric ] && extra="$extra nm_s1=$(jf "$OUT/.score.json" '"%.4f" % d["nonmetric_stress1"] if "nonmetric_stress1" in d else "-"')"
        # shellcheck disable=SC2046
        row "$m" "$n" scikit "$ST" "$SM" $(qual "$OUT/.score.json") "$extra"
      else
        row "$m" "$n" scikit - - - - - - "$ERR"
        ST=""
      fi
    fi
    if nle_reps "${stem}_nle_$m.npy" "$m" "$in" "${args[@]}"; then
      score "$in" "${stem}_nle_$m.npy" "$lab" "${stress[@]}"
      extra=$(jf "$OUT/.json" '" ".join(s for s in ["it=%s" % d["iterations"] if "iterations" in d else "",
        "own_s1=%.4g" % d["stress1"] if isinstance(d.get("stress1"), float) else "",
        "eig=%.6g,%.6g" % tuple(d["eigenvalues"][:2]) if len(d.get("eigenvalues") or []) >= 2 else ""] if s)')
      [ "$m" = nmds ] && extra="$extra nm_s1=$(jf "$OUT/.score.json" '"%.4f" % d["nonmetric_stress1"] if "nonmetric_stress1" in d else "-"')"
      ratio=""
      [ -n "$ST" ] && ratio=$(awk -v a="$ST" -v b="$NT" 'BEGIN {printf "sk/nle %.3gx", a / b}')
      # shellcheck disable=SC2046
      row "$m" "$n" nlembed "$NT" "$NM" $(qual "$OUT/.score.json") "$extra $ratio"
    else
      row "$m" "$n" nlembed - - - - - - "$ERR"
    fi
  done
}

echo "# nlembed $("$NLEMBED" --version | cut -d' ' -f2) vs scikit-learn $("$PY" -c 'import sklearn; print(sklearn.__version__)' 2> /dev/null || echo -), $OMP_NUM_THREADS threads, REPS=$REPS, $(date -u +%F)"
for n in $SIZES; do
  "$PY" $MK gen-roll "$n" "$OUT"
  dataset roll "$n" "$OUT/mk_roll$n.npy" "$OUT/mk_roll${n}_labels.npy"
done
for n in $FASHION_SIZES; do
  "$PY" $MK gen-fashion "$n" "$OUT"
  dataset fm "$n" "$OUT/mk_fm$n.npy" "$OUT/mk_fm${n}_labels.npy"
done
for n in $FASHION_RAW_SIZES; do
  "$PY" $MK gen-fashion-raw "$n" "$OUT"
  METHODS=$RAW_METHODS dataset fmraw "$n" "$OUT/mk_fmraw$n.npy" "$OUT/mk_fmraw${n}_labels.npy"
done

[ "$LMDS70K" = 1 ] || exit 0
echo "== landmark MDS of all 70,000 raw Fashion-MNIST images (nlembed's default landmarks)"
"$PY" -c 'import sys; sys.path.insert(0, "bench"); import fmnist, numpy as np
np.save(sys.argv[1], fmnist.labels().astype(np.int32))' "$OUT/mk_fm70000_labels.npy"
if nle_reps "$OUT/mk_fm70000_nle_lmds.npy" lmds fashion-mnist; then
  score - "$OUT/mk_fm70000_nle_lmds.npy" "$OUT/mk_fm70000_labels.npy"
  # shellcheck disable=SC2046
  row lmds 70000 nlembed "$NT" "$NM" $(qual "$OUT/.score.json") "median of $REPS"
else
  row lmds 70000 nlembed - - - - - - "$ERR"
fi
