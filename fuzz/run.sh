#!/usr/bin/env bash
# run.sh — builds the libFuzzer targets and runs each for SECONDS (default
# 600), two at a time, from small seed inputs made here.
#   fuzz/run.sh [SECONDS] [TARGET...]
# The targets are the reader table's (src/io/readers.def, listed by `make
# fuzz-targets`): all of them when none is named. Target T's seeds are made
# by seed_T below (a target without one starts from nothing). The container
# seeds (a saved model and a checkpoint) need build/nlembed; the npz seeds
# Debian's /usr/bin/python3 with numpy and scipy (without them that target
# starts from nothing). The hdf5 and mat targets read recipes (fuzz_hdf5.c):
# their seeds are bytes from a fixed pseudo-random sequence.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && read -ra targets <<< "$(make -s --no-print-directory fuzz-targets)"
make -s fuzz
work=${FUZZ_WORK:-build-fuzz/work}

# Seeds: one small valid input of each kind the reader handles, written into
# the corpus folder given.
csv_header() { printf 'x,y,label\n1,2,a\n3.5,-4e3,b\n'; }
seed_text() {
  csv_header > "$1/header.csv"
  printf '1\t2\t3\n4\t5\t6\n' > "$1/tabs.tsv"
  printf '# comment\n1 2  3\n4 5 6\r\n\n' > "$1/blanks.txt"
  printf '"a";"b"\n1;2\n' > "$1/quoted.csv"
}
npy_header() { # dict -> a v1.0 header padded to 64 bytes
  local dict=$1 len=$(( ${#1} + 1 )) pad
  pad=$(( (64 - (10 + len) % 64) % 64 ))
  local hlen=$(( len + pad ))
  printf '\x93NUMPY\x01\x00'
  printf "\\x$(printf %02x $((hlen & 255)))\\x$(printf %02x $((hlen >> 8)))"
  printf '%s' "$dict"
  printf '%*s' "$pad" ''
  printf '\n'
}
npy_f4() { npy_header "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }"; printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40'; }
seed_npy() {
  npy_f4 > "$1/f4.npy"
  { npy_header "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 1, 2), }"; printf '\x00\x01\x00\x02\xff\xff\x00\x04'; } > "$1/i2.npy"
  { npy_header "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"; printf '\x01\x02\x03'; } > "$1/u1.npy"
}
idx_images() { printf '\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x02\x00\x01\x02\x03\x04\x05\x06\x07'; }
seed_idx() {
  idx_images > "$1/images"
  printf '\x00\x00\x08\x01\x00\x00\x00\x03\x01\x02\x03' > "$1/labels"
  printf '\x00\x00\x0d\x02\x00\x00\x00\x01\x00\x00\x00\x02\x3f\xc0\x00\x00\xc0\x20\x00\x00' > "$1/float"
}
seed_gunzip() {
  printf 'hello, world\n' | gzip -c > "$1/text.gz"
  idx_images | gzip -c > "$1/idx.gz"
  { printf 'a' | gzip -c; printf 'b' | gzip -c; } > "$1/members.gz"
  { npy_f4; printf 'trailing'; } | gzip -c > "$1/npy.gz"
  csv_header | gzip -c > "$1/csv.gz"
}
# Matrix Market data: coordinate (general, symmetric pattern), array; the
# first byte of each fuzz input is the target's switches
seed_mtx() {
  printf '\x00%%%%MatrixMarket matrix coordinate real general\n%% c\n3 2 3\n1 1 1.5\n3 2 -2\n2 1 4\n' > "$1/coo"
  printf '\x03%%%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 3\n' > "$1/sym"
  printf '\x00%%%%MatrixMarket matrix array integer general\n2 2\n1\n2\n3\n4\n' > "$1/array"
  # a few bytes announcing an enormous matrix, densified and kept sparse
  printf '\x00%%%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 3\n1 1 1\n2 2 1\n3 3 1\n' > "$1/huge"
  printf '\x01%%%%MatrixMarket matrix coordinate real general\n20000000 3 2\n1 1 1\n2 2 1\n' > "$1/tall"
}
seed_npz() {
  /usr/bin/python3 - "$1" > /dev/null 2>&1 <<'PY' || echo "fuzz: no npz seeds (/usr/bin/python3 with numpy and scipy)"
import sys, io, numpy as np, scipy.sparse as sp
corpus = sys.argv[1]
X = np.array([[1.5, 0, 2], [0, 0, -3]], np.float32)
S = sp.csr_matrix(X)
def seed(name, data, switches=0):
    open(f"{corpus}/{name}", "wb").write(bytes([switches]) + data)
def npz(save, *args, **kw):
    b = io.BytesIO(); save(b, *args, **kw); return b.getvalue()
seed("savez", npz(np.savez, X=X), 4)
seed("compressed", npz(np.savez_compressed, X=X, y=np.arange(2)), 4)
seed("csr", npz(sp.save_npz, S))
seed("coo", npz(sp.save_npz, S.tocoo(), compressed=False), 1)
huge = sp.coo_matrix((np.ones(2, np.float32), ([0, 1], [0, 1])), shape=(2000000000, 3))
seed("huge_coo", npz(sp.save_npz, huge, compressed=False), 0)
seed("huge_csc", npz(sp.save_npz, huge.tocsc(), compressed=False), 1)
PY
}
recipe() { # LENGTH SEED: bytes of a linear congruential sequence
  local i x=$2 b out=""
  for ((i = 0; i < $1; i++)); do
    x=$(((x * 1103515245 + 12345) % 2147483648))
    printf -v b '\\%03o' $(((x >> 16) & 255))
    out+=$b
  done
  printf "$out"
}
seed_hdf5() { for i in 1 2 3 4 5 6; do recipe $((40 * i)) "$i" > "$1/recipe$i"; done; }
seed_mat() { for i in 1 2 3 4 5 6; do recipe $((20 * i)) "$((i + 10))" > "$1/recipe$i"; done; }
seed_container() {
  [ -x build/nlembed ] || return 0
  local out=$1/../seed.npy
  build/nlembed tsne blobs:40:3:2 -p 5 --max-iters 20 -o "$out" --save-model "$1/model.nle" --quiet > /dev/null
  build/nlembed ee blobs:40:3:2 -p 5 --optimizer lbfgs --max-iters 20 --checkpoint-every 5 -o "$out" \
    --checkpoint "$1/run.ckpt" --quiet > /dev/null
  rm -f "$out"
}
for t in "${targets[@]}"; do
  mkdir -p "$work/$t/corpus"
  if declare -F "seed_$t" > /dev/null; then "seed_$t" "$work/$t/corpus"; fi
done

run_one() {
  local t=$1
  (cd "$work/$t" && "$root/build-fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 corpus \
     > log.txt 2>&1) || true
  local execs crashes
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log.txt")
  crashes=$(ls "$work/$t" | grep -cE '^(crash|leak|timeout|oom)-' || true)
  echo "fuzz_$t: ${execs:-?} executions in ${secs} s, $crashes findings (log: $work/$t/log.txt)"
}
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  run_one "${targets[i]}" &
  [ $((i + 1)) -lt ${#targets[@]} ] && run_one "${targets[i + 1]}" &
  wait
done
passed=0 failed=0
for t in "${targets[@]}"; do
  if [ "$(ls "$work/$t" | grep -cE '^(crash|leak|timeout|oom)-' || true)" -eq 0 ] && grep -q "^stat::number_of_executed_units: *[1-9]" "$work/$t/log.txt"
  then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
