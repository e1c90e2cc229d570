#!/usr/bin/env bash
# isa.sh — the hot loops (NLE_HOT) give the same bits on every instruction
# set: the tools of `make isa`, their hot loops built for x86-64, x86-64-v3
# (AVX2, FMA) or x86-64-v4 (AVX-512) alone, and the dispatching tool run
# commands that between them reach every NLE_HOT function, and every output
# must be byte-identical. A level this CPU lacks is skipped, saying so.
# ISA_DIR: where the three tools are (default build/isa).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
ISA_DIR=${ISA_DIR:-build/isa}

# x86-64-v3 and -v4 as GCC defines them, from the kernel's CPU flags
flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
has() { local f; for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
levels=(0)
if has avx avx2 bmi1 bmi2 f16c fma abm movbe xsave; then levels+=(3); else echo "skip: this CPU lacks x86-64-v3 (AVX2, FMA)"; fi
if has avx512f avx512bw avx512cd avx512dq avx512vl && [[ ${levels[*]} == *3* ]]; then levels+=(4)
else echo "skip: this CPU lacks x86-64-v4 (AVX-512)"; fi
for l in "${levels[@]}"; do
  [ -x "$ISA_DIR/nlembed-$l" ] || { bad "isa_tool_$l" "$ISA_DIR/nlembed-$l missing (make isa)"; finish; exit; }
done
# the tools differ where they should: AVX-512 registers in the v4 build's
# hot loops alone (or the comparisons below would be of one build)
zmm() { objdump -d --no-show-raw-insn "$1" | grep -c '%zmm'; }
if command -v objdump > /dev/null; then
  if [ "$(zmm "$ISA_DIR/nlembed-0")" -lt "$(zmm "$ISA_DIR/nlembed-4")" ] && [ "$(zmm "$ISA_DIR/nlembed-3")" -lt "$(zmm "$ISA_DIR/nlembed-4")" ]
  then ok isa_tools_differ; else bad isa_tools_differ "the v4 tool has no more AVX-512 code than the others"; fi
fi

# A sparse matrix (Matrix Market) for the sparse rows' exact neighbours.
awk 'BEGIN { srand(3); n = 700; m = 400; print "%%MatrixMarket matrix coordinate real general";
  for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) if (rand() < 0.03) { r[++z] = i " " j " " int(1 + 9 * rand()) }
  print n, m, z; for (q = 1; q <= z; q++) print r[q] }' > "$T/sparse.mtx"

# name, then the command's arguments; the output file is $T/<tool>_<name>.npy
runs=(
  # exact kNN among PCA-50 components re-ranked in the 784 pixels
  # (knn_exact.c), FFT interpolation with its split 2-D passes
  # (fft_interp.c, fft_split2d.c), the 2-D attraction (model.c)
  "tsne_fft|tsne fashion-mnist:5200 --max-iters 40"
  # from 20,000 points (model.c's LOCALITY_MIN_POINTS) the fast engines'
  # locality order, and the attraction's vector lanes over W+ in float
  "tsne_local|tsne fashion-mnist:20000 --max-iters 20"
  # the attraction in 3-D, the exact kNN's GEMM blocks
  "tsne_3d|tsne swissroll:1200 -d 3 --max-iters 40"
  # SMACOF, unweighted and weighted (the latter's conjugate gradients on V)
  "smacof|mds blobs:300:6:4 --starts 1"
  "sammon|sammon blobs:300:6:4 --starts 1"
  # the Gaussian kernel's rows (kpca.c)
  "kpca|kpca swissroll:900 --kernel gaussian"
  # Locally Linear Landmarks with principal components: the landmarks'
  # re-ranking and the reconstruction weights (lll.c)
  "lll|le fashion-mnist:2000 --pca 20 --landmarks 400"
  # the sparse rows' exact neighbours (knn_sparse_exact.c), under cosine
  "sparse_knn|tsne $T/sparse.mtx --metric cosine --method exact --max-iters 30"
)
for run in "${runs[@]}"; do
  name=${run%%|*}
  read -r -a args <<< "${run#*|}"
  for tool in dispatch "${levels[@]}"; do
    exe=$N
    [ "$tool" != dispatch ] && exe=$ISA_DIR/nlembed-$tool
    trace=()
    [ "${args[0]}" = tsne ] && trace=(--trace "$T/${tool}_$name.csv") # E's every bit, every iteration
    if ! "$exe" "${args[@]}" "${trace[@]}" --threads 2 --quiet -o "$T/${tool}_$name.npy" > "$T/${tool}_$name.json" 2> "$T/stderr"; then
      bad "isa_${name}_$tool" "$(head -c 300 "$T/stderr")"
      continue
    fi
    # the JSON line without its timings must agree too (E, stress, ...)
    sed -E 's/"[a-z_]*seconds": [0-9.e+-]*//g; s/, "summary": "[^"]*"//' "$T/${tool}_$name.json" > "$T/${tool}_$name.txt"
    if [ ${#trace[@]} -gt 0 ]; then
      [ "$(wc -l < "$T/${tool}_$name.csv")" -ge 20 ] || bad "isa_${name}_${tool}_trace" "no trace written"
      cut -d, -f1,3,4 "$T/${tool}_$name.csv" >> "$T/${tool}_$name.txt"
    fi
  done
  # each level and the dispatching tool against the portable x86-64 build
  for l in "${levels[@]:1}"; do
    isa=x86-64-v$l
    if cmp -s "$T/0_$name.npy" "$T/${l}_$name.npy" && cmp -s "$T/0_$name.txt" "$T/${l}_$name.txt"; then ok "isa_${name}_${isa}_same_bits"
    else bad "isa_${name}_${isa}_same_bits" "$(cmp "$T/0_$name.npy" "$T/${l}_$name.npy" 2>&1; diff "$T/0_$name.txt" "$T/${l}_$name.txt" | head -c 400)"; fi
  done
  if cmp -s "$T/0_$name.npy" "$T/dispatch_$name.npy" && cmp -s "$T/0_$name.txt" "$T/dispatch_$name.txt"; then
    ok "isa_${name}_dispatch_same_bits"
  else bad "isa_${name}_dispatch_same_bits" "$(cmp "$T/0_$name.npy" "$T/dispatch_$name.npy" 2>&1; diff "$T/0_$name.txt" "$T/dispatch_$name.txt" | head -c 400)"; fi
done
# new points by F(y) with the FFT engine (oos_batch.c: the batched minimiser,
# its line searches on energies from nle__log1p at each set's width), into
# one model, by each build
if "$N" tsne fashion-mnist:5200 --max-iters 40 --save-model "$T/oos.nle" --threads 2 --quiet -o "$T/oos_train.npy" > /dev/null; then
  for tool in dispatch "${levels[@]}"; do
    exe=$N
    [ "$tool" != dispatch ] && exe=$ISA_DIR/nlembed-$tool
    "$exe" transform "$T/oos.nle" fashion-mnist-test --threads 2 --quiet -o "$T/${tool}_oos.npy" > /dev/null 2> "$T/stderr" ||
      bad "isa_transform_$tool" "$(head -c 300 "$T/stderr")"
  done
  for tool in "${levels[@]:1}" dispatch; do
    if cmp -s "$T/0_oos.npy" "$T/${tool}_oos.npy"; then ok "isa_transform_${tool}_same_bits"
    else bad "isa_transform_${tool}_same_bits" "$(cmp "$T/0_oos.npy" "$T/${tool}_oos.npy" 2>&1)"; fi
  done
else bad isa_transform_model "training the model failed"; fi
finish
