#!/usr/bin/env bash
# bad_input.sh — the catalogue of bad input: malformed and damaged files,
# NaN/Inf, inconsistent or out-of-range requests, unwritable outputs, runs
# that diverge. Each case asserts a non-zero exit, a one-line message naming
# the file (and line, byte or record) and the problem, printable bytes only,
# and, for every output the run would write, that none appears and that a
# file already there is byte-identical afterwards (tests/lib.sh).
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
o=$T/out.npy

# fixtures: small good files of each kind, made here
printf '1,2\n3,4\n5,7\n8,9\n' > "$T/four.csv"
$N pca "$T/four.csv" -d 1 -o "$T/p.csv" --quiet > /dev/null
$N affinity blobs:400:8:4 -p 15 -o "$T/aw.mtx" --quiet > /dev/null
$N tsne blobs:400:8:4 -p 15 --max-iters 30 -o "$T/om.npy" --save-model "$T/om.nle" --quiet > /dev/null
$N ee spiral:300 -k 10 --sigma 0.5 --wneg sqdist --lambda 1 --max-iters 30 -o "$T/oe.npy" --save-model "$T/oe.nle" \
  --model-data reference --quiet > /dev/null
ck_args="tsne blobs:1500:10:5 --optimizer lbfgs --max-iters 15 --tol 0 --quiet"
$N $ck_args -o "$T/ck.npy" --checkpoint "$T/run.ckpt" --checkpoint-every 5 > /dev/null
$N pca swissroll:2000 -d 2 -o "$T/sr.npy" --quiet > /dev/null
$N pca swissroll:2000 -d 3 -o "$T/sr3.npy" --quiet > /dev/null
for f in p.csv aw.mtx om.nle oe.nle run.ckpt sr.npy sr3.npy; do
  [ -s "$T/$f" ] || { echo "FAIL fixtures: $f was not made"; exit 1; }
done

# ---- malformed inputs
printf '' > "$T/empty.csv"
expect_fail empty_file "empty.csv: empty file" "$o" -- $N pca "$T/empty.csv" -o "$o"
printf '1,2,3\n4,5\n' > "$T/ragged.csv"
expect_fail ragged_rows "ragged.csv: line 2: 2 fields where the first row has 3" "$o" -- $N pca "$T/ragged.csv" -o "$o"
printf '1,2\n3,abc\n' > "$T/text.csv"
expect_fail non_numeric "text.csv: line 2, field 2: not a number" "$o" -- $N pca "$T/text.csv" -o "$o"
printf '1,2\n3,NaN\n5,6\n' > "$T/nan.csv"
expect_fail nan_value "nan.csv: line 2, field 2: NaN" "$o" -- $N pca "$T/nan.csv" -o "$o"
printf '1 2\n3 4\n-inf 6\n' > "$T/inf.txt"
expect_fail inf_value "inf.txt: line 3, field 1: infinite" "$o" -- $N knn -k 1 "$T/inf.txt" -o "$o"
printf 'x,y\n' > "$T/header_only.csv"
expect_fail header_only "no data rows" "$o" -- $N pca "$T/header_only.csv" -o "$o"
expect_fail missing_input "nope.csv: cannot open" "$o" -- $N pca "$T/nope.csv" -o "$o"

/usr/bin/python3 - "$T" <<'PY' || bad fixtures "the fixture script failed (python3-numpy is a test package)"
import sys, struct
d = sys.argv[1]
def npy(dict_, payload):
    h = dict_.encode(); pad = (64 - (10 + len(h) + 1) % 64) % 64
    h = h + b' ' * pad + b'\n'
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h + payload
good = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4, 3), }", struct.pack('<12d', *range(12)))
open(d + '/trunc.npy', 'wb').write(good[:-5])
open(d + '/badmagic.npy', 'wb').write(b'\x93NUMPX' + good[6:])
nan = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", struct.pack('<4f', 1, 2, float('nan'), 4))
open(d + '/nan.npy', 'wb').write(nan)
idx = bytes([0, 0, 8, 3]) + struct.pack('>III', 5, 2, 2) + bytes(range(20))
open(d + '/cut.idx', 'wb').write(idx[:-3])
open(d + '/good.idx', 'wb').write(idx)
import gzip
gz = gzip.compress(idx)
open(d + '/cut.idx.gz', 'wb').write(gz[:-10])
bad = bytearray(gz); bad[15] ^= 0xff; bad[16] ^= 0xff
open(d + '/corrupt.idx.gz', 'wb').write(bytes(bad))
open(d + '/complex.npy', 'wb').write(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2, 1), }", bytes(16)))
open(d + '/type7.idx', 'wb').write(bytes([0, 0, 7, 1]) + struct.pack('>I', 3) + bytes(3))
open(d + '/nested.gz', 'wb').write(gzip.compress(gz))
# float32 data whose squared distances overflow or underflow single precision
rng = __import__('random').Random(0)
for name, scale in (('huge', 1e30), ('tiny', 1e-30)):
    payload = struct.pack('<600f', *[rng.gauss(0, 1) * scale for _ in range(600)])
    open(d + '/' + name + '.npy', 'wb').write(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (200, 3), }", payload))
# bombs: 64 MiB that a 16 MiB cap would stop only at the cap, refused from their start
open(d + '/zeros.gz', 'wb').write(gzip.compress(bytes(64 << 20), 1))
open(d + '/typo_bomb.csv.gz', 'wb').write(gzip.compress(b'1,2\n3,4\nx,5\n' + b'1,2\n' * (16 << 20), 1))
PY
expect_fail truncated_npy "trunc.npy: byte" "$o" -- $N pca "$T/trunc.npy" -o "$o"
expect_fail bad_magic_npy "badmagic.npy: byte 0: not a .npy file" "$o" -- $N pca "$T/badmagic.npy" -o "$o"
expect_fail nan_npy "nan.npy: byte" "$o" -- $N pca "$T/nan.npy" -o "$o"
expect_fail truncated_idx "cut.idx: byte" "$o" -- $N pca "$T/cut.idx" -o "$o"
expect_fail truncated_gz "cut.idx.gz: byte" "$o" -- $N pca "$T/cut.idx.gz" -o "$o"
expect_fail corrupt_gz "corrupt.idx.gz: byte" "$o" -- $N pca "$T/corrupt.idx.gz" -o "$o"
expect_fail npy_complex "complex.npy: byte 10: unsupported or missing dtype" "$o" -- $N pca "$T/complex.npy" -o "$o"
expect_fail idx_type_code "type7.idx: byte 2: unknown IDX type code 0x07" "$o" -- $N pca "$T/type7.idx" -o "$o"
expect_fail gzip_in_gzip "nested.gz: gzip data inside gzip data is not supported" "$o" -- $N pca "$T/nested.gz" -o "$o"
expect_fail gzip_bomb_zeros "zeros.gz: byte 2: unknown IDX type code 0x00" "$o" -- $N pca "$T/zeros.gz" --max-memory 16M -o "$o"
expect_fail gzip_bomb_text "typo_bomb.csv.gz: line 3, field 1: not a number" "$o" -- \
  $N pca "$T/typo_bomb.csv.gz" --max-memory 16M -o "$o"
expect_fail distances_overflow "squared distances overflow single precision (3.4e38); scale the data down" "$o" -- \
  $N tsne "$T/huge.npy" -p 10 -o "$o"
expect_fail distances_underflow "squared distances underflow single precision; scale the data up" "$o" -- \
  $N knn "$T/tiny.npy" -k 5 -o "$o"
printf '1,2\n3,\033[31mred\001\377\n' > "$T/ctl.csv"
expect_fail bytes_escaped 'ctl.csv: line 2, field 2: not a number: "\x1b[31mred\x01\xff"' "$o" -- $N pca "$T/ctl.csv" -o "$o"
expect_fail label_column_outside "four.csv: line 1: label column 9 but the row has 2 fields" "$o" -- \
  $N pca "$T/four.csv" --label-column 9 -o "$o"

# ---- inconsistent requests
printf '1,2\n3,4\n5,7\n8,9\n' > "$T/four.csv"
printf '0\n1\n0\n' > "$T/three_labels.txt"
expect_fail label_count "three_labels.txt: 3 labels for 4 points" "$o" -- $N pca "$T/four.csv" --labels "$T/three_labels.txt" -o "$o"
expect_fail k_too_large "--neighbors 4 must be at least 1 and below the number of points N = 4" "$o" -- $N knn -k 4 "$T/four.csv" -o "$o"
expect_fail missing_folder "output folder $T/sub/deeper does not exist" - -- $N pca "$T/four.csv" -o "$T/sub/deeper/x.npy"
expect_fail memory_cap "over the memory cap of 1.0 KiB (raise the cap with --max-memory)" "$o" -- $N pca "$T/good.idx" --max-memory 1K -o "$o"
expect_fail too_many_components "components requested" "$o" -- $N pca "$T/four.csv" -d 3 -o "$o"
expect_fail bad_option_value "--threads takes" "$o" -- $N pca "$T/four.csv" --threads many -o "$o"
expect_fail output_is_folder "output path is a folder" - -- $N pca "$T/four.csv" -d 1 -o "$T"
expect_fail unknown_extension "unknown output extension" "$T/out.xyz" -- $N pca "$T/four.csv" -o "$T/out.xyz"
expect_fail one_point "PCA needs at least 2 points" "$o" -- $N pca spiral:1 -o "$o"

expect_fail plot_one_column "a scatter plot needs 2" "$T/x.png" -- $N plot "$T/p.csv" -o "$T/x.png"
expect_fail plot_extent_bad "--extent takes bulk or all, not \"whole\"" "$T/x.png" -- $N plot spiral:50 --extent whole -o "$T/x.png"

# ---- affinities
printf '1,2\n1,2\n1,2\n1,2\n1,2\n1,2\n1,2\n1,2\n' > "$T/constant.csv"
expect_fail affinity_constant "constant or heavily duplicated data" "$T/c.mtx" -- $N affinity "$T/constant.csv" -p 2 -k 6 -o "$T/c.mtx"
expect_fail affinity_perplexity "--perplexity 30 must be above 1 and below the number of neighbours, 20 (--neighbors" "$T/c.mtx" -- $N affinity swissroll:500 -p 30 -k 20 -o "$T/c.mtx"
expect_fail affinity_k_vs_n "spiral:50: k = 3 x --perplexity 30 = 90 neighbours need more than 50 points" "$T/c.mtx" -- $N affinity spiral:50 -o "$T/c.mtx"
expect_fail affinity_one_point "need more than 1 points" "$T/c.mtx" -- $N affinity spiral:1 -p 2 -k 1 -o "$T/c.mtx"
expect_fail affinity_inverse_duplicates "coincide (remove duplicate points)" "$T/c.mtx" -- $N affinity "$T/constant.csv" --kind inverse -k 3 -o "$T/c.mtx"
expect_fail unknown_root '--root takes householder, halley, euler, newton, bisection, brent, ridder or classic, not "secant"' - -- $N affinity spiral:100 --root secant -o "$T/c.mtx"

# ---- embedding options out of range or in conflict
expect_fail embed_final_rate_alone "--final-learning-rate goes with fixed steps" "$T/x.npy" -- $N tsne spiral:300 --step line-search --final-learning-rate 300 -o "$T/x.npy"
expect_fail embed_bad_final_rate "--final-learning-rate takes a finite number > 0 or auto, not \"-3\"" "$T/x.npy" -- $N tsne spiral:300 --learning-rate 10 --final-learning-rate -3 -o "$T/x.npy"
expect_fail embed_bad_momentum "--momentum takes a number in [0, 1) or auto, not \"1.5\"" - -- $N tsne spiral:300 --momentum 1.5 -o "$T/x.npy"
expect_fail embed_sigma_for_sne "--sigma is for ee, tee, ssne and tsne" - -- $N sne spiral:300 --sigma 1 -o "$T/x.npy"
expect_fail embed_wneg_for_tsne "--wneg is for ee and tee" "$T/x.npy" -- $N tsne spiral:300 --wneg sqdist -o "$T/x.npy"
# the automatic k = 3 x perplexity is at most N - 1 (as scikit-learn's); a perplexity of N or more is refused by name
expect_fail embed_k_vs_n "--perplexity 60 must be above 1 and below the number of neighbours, 59" "$T/x.npy" -- \
  $N tsne spiral:60 -p 60 -o "$T/x.npy"
expect_fail embed_k_given_vs_n "--neighbors 90 neighbours need more than 60 points" "$T/x.npy" -- \
  $N tsne spiral:60 -k 90 -o "$T/x.npy"
expect_fail embed_bad_init "initial X must be 300 x 2" "$T/x.npy" -- $N ee spiral:300 -p 10 --init "$T/p.csv" -o "$T/x.npy"
expect_fail embed_memory_cap "over the memory cap" "$T/x.npy" -- $N ee spiral:3000 -p 10 --wneg sqdist --max-memory 20M -o "$T/x.npy"
expect_fail bh_needs_uniform "Barnes-Hut repulsion serves t-SNE, s-SNE, EE/t-EE with uniform W-" "$T/x.npy" -- $N ee spiral:300 -p 10 --wneg sqdist --repulsion bh -o "$T/x.npy"
expect_fail fft_sparse_wneg "FFT-interpolation repulsion serves t-SNE, s-SNE, EE/t-EE with uniform W-" "$T/x.npy" -- $N ee spiral:300 -p 10 --wneg knn --repulsion fft -o "$T/x.npy"
expect_fail wneg_dims_bad "--wneg-dims takes an integer >= 1, not \"0\"" "$T/x.npy" -- $N ee spiral:300 --wneg sqdist --wneg-dims 0 -o "$T/x.npy"
expect_fail fft_bad_order "--fft-order takes an integer from 1 to 12" "$T/x.npy" -- $N tsne spiral:300 --fft-order 0 -o "$T/x.npy"
expect_fail fgt_gaussian_only "the fast Gauss transform serves the Gaussian kernel (EE, s-SNE)" "$T/x.npy" -- $N tsne spiral:300 --repulsion fgt -o "$T/x.npy"
expect_fail fgt_bad_reach "--fgt-reach takes an integer from 1 to 12" "$T/x.npy" -- $N ee spiral:300 --fgt-reach 0 -o "$T/x.npy"
expect_fail bad_engine "--repulsion takes auto, exact, bh, fft or fgt" "$T/x.npy" -- $N tsne spiral:300 --repulsion fmm -o "$T/x.npy"
expect_fail pca_with_model "--pca with --save-model needs the re-ranking" "$T/x.npy" -- $N tsne fashion-mnist:600 --pca 20 --pca-candidates 0 --save-model "$T/m.nle" -o "$T/x.npy"
expect_fail pca_bad "--pca takes an integer >= 0 or auto" "$T/x.npy" -- $N tsne fashion-mnist:600 --pca -1 -o "$T/x.npy"
expect_fail pca_candidates_few "--pca-candidates 20 must be at least the 30 neighbours (--neighbors)" "$T/x.npy" -- $N tsne fashion-mnist:600 -p 10 --pca 20 --pca-candidates 20 -o "$T/x.npy"
expect_fail fft_four_dims "the FFT-interpolation engine serves embeddings of 1-3 dimensions, not 4" "$T/x.npy" -- \
  $N tsne swissroll:300 --repulsion fft -d 4 -o "$T/x.npy"

# ---- precomputed affinities
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 0.5\n1 2 0.5\n' > "$T/dup.mtx"
expect_fail affinities_duplicate "dup.mtx: line 4: entry (1, 2) given twice" "$T/x.npy" -- $N ee --affinities "$T/dup.mtx" -o "$T/x.npy"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 0.5\n4 1 0.5\n' > "$T/out.mtx"
expect_fail affinities_outside "out.mtx: line 4: entry (4, 1) outside the 3 x 3 matrix" "$T/x.npy" -- $N ee --affinities "$T/out.mtx" -o "$T/x.npy"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 abc\n' > "$T/bad.mtx"
expect_fail affinities_bad_line "bad.mtx: line 3: expected 'row column value'" "$T/x.npy" -- $N ee --affinities "$T/bad.mtx" -o "$T/x.npy"
expect_fail affinities_size_mismatch "the affinities must be N x N with N >= 3 and N the number of INPUT points" "$T/x.npy" -- $N tsne spiral:300 --affinities "$T/aw.mtx" -o "$T/x.npy"
expect_fail affinities_need_data "need the INPUT data" "$T/x.npy" -- $N ee --affinities "$T/aw.mtx" --wneg sqdist -o "$T/x.npy"

# ---- out-of-sample maps
expect_fail transform_fgt_sqdist "F(y) takes exact, fgt or fft repulsion" "$T/x.npy" -- $N transform "$T/oe.nle" spiral:300 --repulsion fgt -o "$T/x.npy"
expect_fail transform_bad_engine "--repulsion takes auto, exact, fft or fgt" "$T/x.npy" -- $N transform "$T/oe.nle" spiral:300 --repulsion bh -o "$T/x.npy"
expect_fail transform_wrong_data "is not the data the model was trained on" "$T/x.npy" -- $N transform "$T/oe.nle" spiral:300 --data spiral:301 -o "$T/x.npy"
expect_fail transform_inverse_uniform "with other W- its minimum is at infinity" "$T/x.npy" -- $N transform "$T/om.nle" "$T/om.npy" --inverse -o "$T/x.npy"
expect_fail transform_columns "new points have 2 columns, the training data 8" "$T/x.npy" -- $N transform "$T/om.nle" spiral:50 -o "$T/x.npy"
head -c 300 "$T/om.nle" > "$T/cut.nle"
expect_fail transform_damaged_model "cut.nle: record 'doubles' (at byte 232) is damaged or truncated" "$T/x.npy" -- $N transform "$T/cut.nle" blobs:400:8:4 -o "$T/x.npy"
expect_fail transform_not_model "not an nlembed model file" "$T/x.npy" -- $N transform "$T/four.csv" blobs:400:8:4 -o "$T/x.npy"

# ---- checkpoints of another run or of nothing
expect_fail ckpt_other_run "the checkpoint is of another run: perplexity was 30 there, 20 now" "$T/ck_x.npy" -- $N tsne blobs:1500:10:5 -p 20 -o "$T/ck_x.npy" --resume "$T/run.ckpt"
expect_fail ckpt_not_checkpoint "not an nlembed checkpoint file" "$T/ck_x.npy" -- $N tsne blobs:1500:10:5 -o "$T/ck_x.npy" --resume "$T/four.csv"

# ---- a failed run leaves every earlier output as it was (one transaction);
# paths and extensions are checked before any work; temporaries of a killed
# run are removed by the next run writing in that folder
$N pca swissroll:300 -d 2 -o "$T/keep.npy" --save-labels "$T/keep_l.npy" --quiet > /dev/null
expect_fail txn_knn_distances 'd.mtx: unknown output extension ".mtx" (use .npy, .csv, .tsv or .txt)' "$T/keep.npy" -- \
  $N knn swissroll:300 -k 5 -o "$T/keep.npy" --distances "$T/d.mtx"
expect_fail txn_pca_labels "output folder $T/none does not exist" "$T/keep.npy" -- \
  $N pca swissroll:300 -d 2 -o "$T/keep.npy" --save-labels "$T/none/l.npy"
expect_fail txn_bad_output_ext 'o.xyz: unknown output extension ".xyz"' "$T/keep_l.npy" -- \
  $N tsne swissroll:300 -o "$T/o.xyz" --save-labels "$T/keep_l.npy"
expect_fail path_prefix_missing_folder "p000.npy: output folder $T/none does not exist" "$T/keep.npy" -- \
  $N ee swissroll:300 --homotopy 3 --path-prefix "$T/none/p" -o "$T/keep.npy"
expect_fail txn_affinity_betas "output folder $T/none does not exist" "$T/keep.mtx" -- \
  $N affinity swissroll:300 -p 10 -o "$T/keep.mtx" --betas "$T/none/b.npy"
# a disk that fills while the model is written (a 16 KiB file size limit;
# the output before it fits): neither file is put in place
expect_fail txn_model_disk_full "m.nle: write failed: File too large" "$T/keep.npy:$T/m.nle" -- \
  bash -c 'trap "" XFSZ; ulimit -f 16; exec "$@"' _ $N tsne swissroll:300 --max-iters 20 --quiet -o "$T/keep.npy" --save-model "$T/m.nle"
expect_fail txn_transform_ext 'x.png: unknown output extension ".png"' - -- $N transform "$T/none.nle" spiral:10 -o "$T/x.png"
sh -c 'exit 0' & dead_pid=$!
wait $dead_pid
touch "$T/.late.npy.tmp.$dead_pid.abcdef"
expect_ok dead_temporary_removed $N pca swissroll:300 -d 2 -o "$T/late.npy"
if [ ! -e "$T/.late.npy.tmp.$dead_pid.abcdef" ] && grep -q "left by a run that died" "$T/stderr"; then ok dead_temporary_note
else bad dead_temporary_note "the dead run's temporary is still there or unreported: $(cat "$T/stderr")"; fi

# ---- a damaged checkpoint or model is refused, naming the file and the
# damaged record (each record carries a CRC-32)
cp "$T/run.ckpt" "$T/flip.ckpt"
ck_size=$(stat -c %s "$T/flip.ckpt")
printf '\x55' | dd of="$T/flip.ckpt" bs=1 seek=$((ck_size / 2)) conv=notrunc 2> /dev/null
expect_fail ckpt_damaged "is damaged (checksum mismatch)" "$T/ck_flip.npy" -- $N $ck_args -o "$T/ck_flip.npy" --resume "$T/flip.ckpt"
cp "$T/om.nle" "$T/flip.nle"
m_size=$(stat -c %s "$T/flip.nle")
printf '\x55' | dd of="$T/flip.nle" bs=1 seek=$((m_size / 2)) conv=notrunc 2> /dev/null
expect_fail model_damaged "flip.nle: record '" "$T/tf_flip.npy" -- $N transform "$T/flip.nle" blobs:50:8:4 -o "$T/tf_flip.npy"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 4\n1 2 0.5\n2 1 0.5\n2 3 -0.5\n3 2 0.5\n' > "$T/neg.mtx"
expect_fail affinities_negative "neg.mtx: affinities: row 1, column 2 holds -0.5; they must be finite and >= 0" "$T/x.npy" -- \
  $N ee --affinities "$T/neg.mtx" -o "$T/x.npy"

# ranges refuse what cannot work (non-finite, <= 0 where positive is needed, an overflow that happens), not a
# magnitude outside a window: tiny lambdas and scales run (tests/cli.sh), an overflowing one is refused by name
expect_fail option_range "(the --init-scale, --lambda or --learning-rate is too large for this data)" "$T/x.npy" -- \
  $N tsne swissroll:300 --init-scale 1e300 --max-iters 20 --quiet -o "$T/x.npy"
expect_fail option_range_lambda_zero '--lambda takes a finite number > 0 or auto, not "0"' "$T/x.npy" -- \
  $N ee swissroll:300 --lambda 0 -o "$T/x.npy"
expect_fail option_range_lambda_inf '--lambda takes a finite number > 0 or auto, not "inf"' "$T/x.npy" -- \
  $N ee swissroll:300 --lambda inf -o "$T/x.npy"
expect_fail option_range_lambda_underflow '--lambda takes a finite number > 0 or auto, not "1e-400"' "$T/x.npy" -- \
  $N ee swissroll:300 --lambda 1e-400 -o "$T/x.npy"
expect_fail option_range_lambda_start_zero '--lambda-start takes a finite number > 0 or auto, not "0"' "$T/x.npy" -- \
  $N ee swissroll:300 --homotopy 3 --lambda-start 0 -o "$T/x.npy"
expect_fail option_range_init_scale_negative '--init-scale takes a finite number > 0, not "-1e-3"' "$T/x.npy" -- \
  $N ssne swissroll:300 --init-scale -1e-3 -o "$T/x.npy"
expect_fail sigma_vanishing "Gaussian affinities: sigma = 1e-300 leaves every weight 0" "$T/x.npy" -- \
  $N ee swissroll:300 --sigma 1e-300 -k 10 -o "$T/x.npy"
expect_fail option_range_lambda "E became inf after 0 iterations (the --init-scale, --lambda or --learning-rate" "$T/x.npy" -- \
  $N ee swissroll:300 --lambda 1e308 --quiet -o "$T/x.npy"

# a fixed rate far past any point's stability bound no longer diverges: each
# point's step is capped at its attraction's bound (docs/embeddings.md), so
# the run ends with a finite map of a sane extent, where it once overflowed
for model in ee tsne; do
  expect_ok "huge_fixed_rate_$model" $N $model swissroll:300 --step fixed --learning-rate 1e300 --max-iters 200 -o "$T/x.npy"
  ext=$(sed -n 's/.*"map_extent": \([0-9.e+-]*\).*/\1/p' "$T/stdout")
  if [ -n "$ext" ] && awk -v e="$ext" 'BEGIN { exit !(e > 0 && e < 1e4) }'; then ok "huge_fixed_rate_${model}_extent"
  else bad "huge_fixed_rate_${model}_extent" "map_extent '$ext'"; fi
done

# ---- readers
printf '1,2x,3\n4,5,6\n7,8,9\n' > "$T/typo.csv"
expect_fail header_typo 'typo.csv: line 1: field 2 ("2x") is not a number but 2 other fields are' "$T/typo.npy" -- \
  $N pca "$T/typo.csv" -d 1 -o "$T/typo.npy"
$N pca swissroll:2000 -d 3 -o "$T/sr3.npy" --quiet > /dev/null
expect_fail metrics_swapped "the order is DATA EMBEDDING" "$T/msw.json" -- $N metrics "$T/sr.npy" "$T/sr3.npy" -o "$T/msw.json"

# ---- commands and options
expect_fail blobs_zero_dims "blobs:100:0: expected blobs:N[:D[:CLASSES]] with N in [1, 2^31), D in [1, 100000] and CLASSES in [1, 1000]" "$o" -- \
  $N pca blobs:100:0 -o "$o"
# ---- spectral methods: a disconnected graph, sizes, a bad W, a bad name
expect_fail le_disconnected "le: the neighbourhood graph has 3 connected components; --components error refuses it (a larger --neighbors joins them; --components join adds the shortest edges between them, --components allow" "$o" -- \
  $N le blobs:600:5:3 -k 5 --components error -o "$o"
expect_fail isomap_disconnected_allow "isomap: the neighbourhood graph has 3 connected components: --components allow leaves the geodesics between them infinite" "$o" -- \
  $N isomap blobs:600:5:3 -k 5 --components allow -o "$o"
expect_fail le_too_many_dims "spectral embedding: --dim 4 dimensions of 4 points" "$o" -- $N le "$T/four.csv" -d 4 -k 2 -o "$o"
expect_fail le_k_too_large "spectral embedding: --neighbors 4 neighbours of 4 points" "$o" -- $N le "$T/four.csv" -d 1 -k 4 -o "$o"
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 4\n1 2 1\n2 1 2\n2 3 1\n3 2 1\n' > "$T/asym.mtx"
expect_fail le_asymmetric "asym.mtx: affinities: not symmetric: row 0, column 1 holds 1 but row 1, column 0 holds 2" "$o" -- $N le --affinities "$T/asym.mtx" -d 1 -o "$o"
expect_fail le_bad_laplacian '--laplacian takes auto, random-walk, symmetric or unnormalised, not "normal"' "$o" -- $N le swissroll:100 --laplacian normal -o "$o"
expect_fail lle_no_reg "lle: --neighbors 5 neighbours in 3 dimensions make the weights not unique; a regulariser --reg > 0 is needed" "$o" -- \
  $N lle swissroll:300 -k 5 --reg 0 -o "$o"
expect_fail lle_affinities_only "lle: the method needs the points themselves" "$o" -- $N lle --affinities "$T/aw.mtx" -o "$o"
expect_fail cluster_option_elsewhere "--clusters is for cluster" "$o" -- $N le swissroll:100 --clusters 3 -o "$o"
expect_fail cluster_one "--clusters takes an integer >= 2" "$o" -- $N cluster swissroll:100 -c 1 -o "$o"
expect_fail cluster_dim "-d is for the embeddings; nlembed cluster takes --dims" "$o" -- $N cluster swissroll:100 -d 3 -o "$o"
expect_fail radius_too_small "point (row) 0 has no neighbour within --radius 1e-06" "$o" -- $N le swissroll:200 --radius 1e-6 -o "$o"
expect_fail diffmap_alpha "--alpha takes a number in [0, 1]" "$o" -- $N diffmap swissroll:100 --alpha 2 -o "$o"
expect_fail hlle_few_neighbours "hlle: --neighbors 6 neighbours; Hessian LLE in 3 dimensions needs k >= d + d(d+1)/2 = 9" "$o" -- \
  $N hlle swissroll:1000 -k 6 -d 3 -o "$o"
expect_fail isomap_affinities "isomap: the method needs distances: give the points or a kNN graph, not affinities" "$o" -- $N isomap --affinities "$T/aw.mtx" -o "$o"
expect_fail isomap_memory_cap "isomap: the N x N geodesic matrix needs 1.49 GiB, over the memory cap (0.06 GiB); landmark Isomap needs L x N (--landmarks)" "$o" -- $N isomap swissroll:20000 --max-memory 64M -o "$o"
# ---- spectral models: what a spectral model does not take, and the maps' own errors
$N le swissroll:400 --radius 5 -o "$T/sle.npy" --save-model "$T/sle.nle" --model-data reference --quiet > /dev/null
expect_fail spectral_transform_inverse "--inverse, --max-iters and --repulsion are for EE-family models, not a spectral model" "$o" -- \
  $N transform "$T/sle.nle" "$T/sle.npy" --inverse -o "$o"
expect_fail spectral_transform_columns "spectral transform: new points have 2 columns, the training data 3" "$o" -- \
  $N transform "$T/sle.nle" spiral:50 -o "$o"
printf '1000,1000,1000\n0,5,0\n' > "$T/far.csv"
expect_fail spectral_transform_no_edge "spectral transform: new point (row) 0 has no edge to the training points" "$o" -- \
  $N transform "$T/sle.nle" "$T/far.csv" -o "$o"
expect_fail spectral_transform_wrong_data "is not the data the model was trained on" "$o" -- \
  $N transform "$T/sle.nle" swissroll:50 --data swissroll:401 -o "$o"
expect_fail spectral_save_model_affinities "--save-model needs the INPUT data" "$o:$T/m.nle" -- \
  $N le --affinities "$T/aw.mtx" -o "$o" --save-model "$T/m.nle"
expect_fail spectral_model_data_name "--model-data takes copy or reference" "$o:$T/m.nle" -- \
  $N lle swissroll:300 -o "$o" --save-model "$T/m.nle" --model-data link
/usr/bin/python3 -c "import numpy as np, sys; D = np.abs(np.subtract.outer(np.arange(6.0), np.arange(6.0))); np.save(sys.argv[4], D.astype(np.float32)); D[1, 2] = -3; np.save(sys.argv[1], D.astype(np.float32)); D[1, 2] = 1; D[0, 0] = 2; np.save(sys.argv[2], D.astype(np.float32)); A = np.ones((4, 4)); A[0, 1] = 2; np.save(sys.argv[3], A)" "$T/dneg.npy" "$T/ddiag.npy" "$T/aasym.npy" "$T/dgood.npy"
expect_fail distances_negative "dneg.npy: distance matrix: row 1, column 2 is -3, not a finite value >= 0" "$o" -- \
  $N isomap --distances "$T/dneg.npy" -k 2 -o "$o"
expect_fail distances_diagonal "ddiag.npy: distance matrix: row 0, column 0 (the diagonal) is 2, not 0" "$o" -- \
  $N isomap --distances "$T/ddiag.npy" -k 2 -o "$o"
expect_fail distances_lle "lle: the method needs the points themselves" "$o" -- \
  $N lle --distances "$T/dgood.npy" -k 2 -o "$o"
expect_fail knn_not_mtx "--knn takes a Matrix Market graph (.mtx) as nlembed knn writes it" "$o" -- \
  $N le --knn "$T/dneg.npy" -o "$o"
expect_fail dense_affinities_asymmetric "not symmetric" "$o" -- $N le --affinities "$T/aasym.npy" -o "$o"
# the distance and kernel methods: dissimilarity matrices, labels, the cap
/usr/bin/python3 -c "
import numpy as np, sys
t = sys.argv[1]
D = np.abs(np.subtract.outer(np.arange(5.0), np.arange(5.0)))
np.save(t + '/mds_rect.npy', D[:4]); np.save(t + '/mds_good.npy', D); A = D.copy(); A[0, 3] = 7; np.save(t + '/mds_asym.npy', A)
A = D.copy(); A[2, 2] = 1; np.save(t + '/mds_diag.npy', A); A = D.copy(); A[1, 4] = A[4, 1] = -2; np.save(t + '/mds_neg.npy', A)
A = D.copy(); A[1, 3] = A[3, 1] = np.nan; np.save(t + '/mds_nan.npy', A); np.save(t + '/mds_zero.npy', np.zeros((5, 5)))
Y = np.random.default_rng(1).standard_normal((40, 3)).astype(np.float32); Y[7] = Y[2]; np.save(t + '/mds_dups.npy', Y)
Y[:, 1] = 1; np.save(t + '/lda_const.npy', Y); np.save(t + '/lda_lab2.npy', (np.arange(40) % 2).astype(np.int32))
np.save(t + '/lda_one.npy', np.zeros(40, np.int32)); l = (np.arange(40) % 2).astype(float); l[5] = np.nan; np.save(t + '/lda_nan.npy', l)
np.save(t + '/lda_short.npy', (np.arange(39) % 2).astype(np.int32)); np.save(t + '/lda_frac.npy', np.arange(40) / 2)" "$T"
expect_fail mds_not_square "mds_rect.npy: dissimilarities is 4 x 5, not square" "$o" -- $N mds --distances "$T/mds_rect.npy" -o "$o"
expect_fail mds_asymmetric "mds_asym.npy: dissimilarities is not symmetric: row 0, column 3 is 7 but row 3, column 0 is 3" "$o" -- $N cmds --distances "$T/mds_asym.npy" -o "$o"
expect_fail mds_diagonal "mds_diag.npy: dissimilarities: row 2, column 2 (the diagonal) is 1, not 0" "$o" -- $N nmds --distances "$T/mds_diag.npy" -o "$o"
expect_fail mds_negative "mds_neg.npy: dissimilarities: row 1, column 4 is -2, negative" "$o" -- $N sammon --distances "$T/mds_neg.npy" -o "$o"
expect_fail mds_nan "mds_nan.npy: byte 192 (row 1, column 3): NaN value" "$o" -- $N lmds --distances "$T/mds_nan.npy" -o "$o"
expect_fail mds_all_zero "mds_zero.npy: dissimilarities: every dissimilarity is 0" "$o" -- $N cmds --distances "$T/mds_zero.npy" -o "$o"
expect_fail mds_too_many_dims "mds: --dim 5 components of 5 points (1 <= dim < N)" "$o" -- $N mds --distances "$T/mds_good.npy" -d 5 -o "$o"
expect_fail sammon_duplicates "sammon: rows 2 and 7 are at distance 0 (duplicates)" "$o" -- $N sammon "$T/mds_dups.npy" -o "$o"
expect_fail mds_memory_cap "over the memory cap (0.06 GiB): landmark MDS needs only L x N (nlembed lmds" "$o" -- $N mds swissroll:20000 --max-memory 64M -o "$o"
# a singular T is the default solver's business; only the Cholesky path asked for by --ridge 0 refuses it
expect_fail lda_singular "lda: the total scatter T has rank 2 < D = 3 (constant or collinear features): give --ridge > 0, or leave --ridge out" "$o" -- $N lda "$T/lda_const.npy" --labels "$T/lda_lab2.npy" --ridge 0 -o "$o"
expect_fail lda_one_class "lda_one.npy: labels: one class only (every label is 0): LDA needs at least 2" "$o" -- $N lda "$T/mds_dups.npy" --labels "$T/lda_one.npy" -o "$o"
expect_fail klda_one_class "lda_one.npy: labels: one class only (every label is 0): kernel LDA needs at least 2" "$o" -- $N klda "$T/mds_dups.npy" --labels "$T/lda_one.npy" -o "$o"
expect_fail lda_no_labels "has no labels: give them with --labels SOURCE" "$o" -- $N lda "$T/mds_dups.npy" -o "$o"
expect_fail lda_too_many_dims "lda: --dim 2 from 2 classes: at most C - 1 = 1 directions are useful" "$o" -- $N lda "$T/mds_dups.npy" --labels "$T/lda_lab2.npy" -d 2 -o "$o"
expect_fail lda_labels_nan "lda_nan.npy: byte 168 (row 5, column 0): NaN value" "$o" -- $N lda "$T/mds_dups.npy" --labels "$T/lda_nan.npy" -o "$o"
expect_fail lda_labels_short "lda_short.npy: 39 labels for 40 points" "$o" -- $N lda "$T/mds_dups.npy" --labels "$T/lda_short.npy" -o "$o"
expect_fail lda_labels_fraction "lda_frac.npy: the label of row 1 is 0.5, not a whole number" "$o" -- $N lda "$T/mds_dups.npy" --labels "$T/lda_frac.npy" -o "$o"
expect_fail metrics_labels_nan "lda_nan.npy: byte 168 (row 5, column 0): NaN value" "$o" -- $N metrics "$T/mds_dups.npy" "$T/mds_dups.npy" --labels "$T/lda_nan.npy" -o "$o"
expect_fail kpca_sparse_polynomial "kpca: a sparse kernel (on 10 neighbours) is Gaussian, not --kernel polynomial" "$o" -- $N kpca "$T/mds_dups.npy" --kernel polynomial --neighbors 10 -o "$o"
expect_fail mds_option_elsewhere "--landmarks is for lmds" "$o" -- $N mds "$T/mds_dups.npy" --landmarks 10 -o "$o"
# kernel eigenmaps: options out of range, too few points, NaN and duplicate
# points, a model given what it does not take
expect_fail kem_bad_variant '--variant takes raw, affine, reweighted or stochastic, not "best"' "$o" -- $N kem swissroll:300 --variant best -o "$o"
expect_fail kem_bad_sigma '--sigma takes a finite number > 0 or auto, not "-1"' "$o" -- $N kem swissroll:300 --sigma -1 -o "$o"
expect_fail kem_too_few "kem: 40 points are too few for --neighbors 40 neighbours" "$o" -- $N kem "$T/mds_dups.npy" -k 40 -o "$o"
expect_fail kem_kernels "kem: --kernels 41 for 40 points" "$o" -- $N kem "$T/mds_dups.npy" --kernels 41 -o "$o"
expect_fail kem_nan "mds_nan.npy: byte 192 (row 1, column 3): NaN value" "$o" -- $N kem "$T/mds_nan.npy" -k 2 -o "$o"
expect_fail kem_duplicates "kem: points (rows) 2 and 7 coincide: the inverse-distance affinity is infinite there" "$o" -- $N kem "$T/mds_dups.npy" -o "$o"
$N kem swissroll:300 --kernels 8 -o "$T/kem_ok.npy" --save-model "$T/kem_ok.nle" --quiet > /dev/null
expect_fail kem_model_data "--data, --max-iters and --repulsion are not for a kem-model model" "$o" -- $N transform "$T/kem_ok.nle" swissroll:300 --data swissroll:300 -o "$o"
expect_fail kem_model_columns "kem transform: the points have 4 columns, the model was trained on 3" "$o" -- $N transform "$T/kem_ok.nle" blobs:50:4:2 -o "$o"
expect_fail kem_inverse_columns "kem inverse: the points have 3 columns, the embedding has 2" "$o" -- $N transform "$T/kem_ok.nle" --inverse swissroll:50 -o "$o"
# Locally Linear Landmarks: options out of range or for the wrong method
expect_fail lll_too_many "le: --landmarks 501 for 2 dimensions of 300 points (d + 1 <= L <= N)" "$o" -- $N le swissroll:300 --landmarks 501 -o "$o"
expect_fail lll_kz_zero '--kz takes an integer >= 1 or auto, not "0"' "$o" -- $N le swissroll:300 --landmarks 50 --kz 0 -o "$o"
expect_fail lll_bad_method '--landmark-method takes auto, random, thinned, kmeans or minmax, not "far"' "$o" -- $N le swissroll:300 --landmarks 50 --landmark-method far -o "$o"
expect_fail lll_not_lle "--landmarks is for le and cluster (Locally Linear Landmarks) and isomap" "$o" -- $N lle swissroll:300 --landmarks 50 -o "$o"
expect_fail lll_kz_isomap "--kz is for Locally Linear Landmarks" "$o" -- $N isomap swissroll:300 --kz 5 -o "$o"
$N knn swissroll:300 -o "$T/lll_bad_g.mtx" --quiet > /dev/null
expect_fail lll_needs_points "Locally Linear Landmarks (--landmarks > 0) needs the points" "$o" -- $N le --knn "$T/lll_bad_g.mtx" --landmarks 50 -o "$o"
expect_fail two_precomputed "give one of --affinities, --distances and --knn" "$o" -- \
  $N le --affinities "$T/aasym.npy" --distances "$T/dneg.npy" -o "$o"
expect_fail spectral_perplexity_k "le: --perplexity 12 needs more than it in neighbours: --neighbors 10" "$o" -- \
  $N le swissroll:300 --affinity entropic --perplexity 12 -o "$o"
expect_fail spectral_perplexity_range '--perplexity takes a finite number > 1 or auto, not "0.5"' "$o" -- \
  $N diffmap swissroll:300 --affinity entropic --perplexity 0.5 -o "$o"
expect_fail unknown_command "unknown command" - -- $N frobnicate
expect_fail unknown_option "unknown option or missing value: --frob" - -- $N pca --frob "$T/four.csv" -o "$o"

# ---- --metric: a distance matrix is not embedded as points unless named;
# a bad metric name; a non-square matrix as distances
/usr/bin/python3 -c "
import numpy as np
Y = np.random.default_rng(1).normal(size=(50, 3))
D = np.sqrt(((Y[:, None] - Y[None]) ** 2).sum(-1))
np.save('$T/dist50.npy', D.astype(np.float32)); np.save('$T/pts50.npy', Y.astype(np.float32))"
o="$T/metric_out.npy"
expect_fail metric_distances_unnamed "give --metric precomputed" "$o" -- $N tsne "$T/dist50.npy" -p 5 -o "$o"
expect_fail metric_distances_unnamed_mds "give --metric precomputed" "$o" -- $N sammon "$T/dist50.npy" -o "$o"
expect_fail metric_unknown "--metric takes euclidean, cosine, correlation, precomputed or affinities" "$o" -- $N le "$T/pts50.npy" --metric manhattan -o "$o"
expect_fail metric_precomputed_not_square "50 x 3" "$o" -- $N tsne "$T/pts50.npy" --metric precomputed -p 5 -o "$o"
expect_fail metric_with_distances "give one of --metric and --distances" "$o" -- $N mds --distances "$T/dist50.npy" --metric cosine -o "$o"

# containers and sparse data (HDF5 and .h5ad, .npz, .mat, Matrix Market data,
# 10x folders): the array inside named, or what is there listed; damaged,
# truncated and unsupported files refused naming the file and the part
if /usr/bin/python3 - "$T" > "$T/fmt_make.log" 2>&1 <<'PY'
import sys, io, gzip, zipfile, numpy as np, scipy.sparse as sp, scipy.io as sio, h5py
t = sys.argv[1] + "/fmt_"
X = np.array([[1, 0, 2], [0, 3, 0]], np.float32)
with h5py.File(t + "cells.h5ad", "w") as f:
    f.attrs["encoding-type"] = "anndata"
    f["X"] = X
    for col, codes in (("cell_type", [0, 0]), ("donor", [0, -1])):
        g = f.create_group("obs/" + col); g.attrs["encoding-type"] = "categorical"
        g["codes"] = np.array(codes, np.int8); g["categories"] = np.array([b"B"], dtype=h5py.string_dtype())
with h5py.File(t + "two.h5", "w") as f:
    f["a"] = X; f["b/c"] = X
    f["table"] = np.zeros(2, dtype=[("x", "<f4"), ("y", "<i4")])
    f["nan"] = np.array([[1, 2], [np.nan, 4]])
open(t + "cut.h5", "wb").write(open(t + "two.h5", "rb").read()[:1500])
open(t + "cut.h5.gz", "wb").write(gzip.compress(open(t + "two.h5", "rb").read()))
np.savez(t + "two.npz", X=X, y=np.arange(2))
open(t + "cut.npz", "wb").write(open(t + "two.npz", "rb").read()[:-30])
with zipfile.ZipFile(t + "notes.npz", "w") as z:
    z.writestr("notes.txt", "hello")
b = io.BytesIO(); sp.save_npz(b, sp.bsr_matrix(X)); open(t + "bsr.npz", "wb").write(b.getvalue())
sio.savemat(t + "two.mat", {"X": X.astype(np.float64), "Y": X.T.astype(np.float64), "note": "text"})
open(t + "cut.mat", "wb").write(open(t + "two.mat", "rb").read()[:200])
open(t + "misnamed.h5", "w").write("1,2\n3,4\n")
open(t + "pickle.bin", "wb").write(b"\x80\x04\x95" + bytes(20))
PY
then ok fmt_fixtures; else bad fmt_fixtures "$(tail -c 300 "$T/fmt_make.log")"; fi
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 0.5\n2 2 1\n1 2 0.5\n' > "$T/fmt_dup.mtx"
printf '%%%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n' > "$T/fmt_short.mtx"
printf '%%%%MatrixMarket matrix coordinate integer general\n100000 100000 2\n1 1 1\n100000 3 4\n' > "$T/fmt_wide.mtx"
mkdir -p "$T/fmt_folder"
expect_fail h5ad_no_such_path "fmt_cells.h5ad: nothing named 'obs/celltype' inside (obs holds: cell_type, donor)" "$o" -- \
  $N pca "$T/fmt_cells.h5ad:obs/celltype" -o "$o"
expect_fail h5ad_labels_column "fmt_cells.h5ad: name the label column as $T/fmt_cells.h5ad:obs/COLUMN (obs columns: cell_type, donor)" "$o" -- \
  $N pca "$T/fmt_cells.h5ad" --labels "$T/fmt_cells.h5ad" -o "$o"
expect_fail h5ad_label_missing "fmt_cells.h5ad:obs/donor: point 1 has no category (a missing value)" "$o" -- \
  $N pca "$T/fmt_cells.h5ad" --labels "$T/fmt_cells.h5ad:obs/donor" -o "$o"
expect_fail h5ad_labels_as_data "fmt_cells.h5ad:obs/cell_type: a categorical column, not data (labels? give them with --labels" "$o" -- \
  $N pca "$T/fmt_cells.h5ad:obs/cell_type" -o "$o"
expect_fail hdf5_several "fmt_two.h5: 3 candidates: name one as $T/fmt_two.h5:PATH (/a, /b/c, /nan)" "$o" -- \
  $N pca "$T/fmt_two.h5" -o "$o"
expect_fail hdf5_compound "fmt_two.h5:table: compound (a table of fields) values are not supported" "$o" -- \
  $N pca "$T/fmt_two.h5:table" -o "$o"
expect_fail hdf5_nan "fmt_two.h5:/nan: element [1, 0]: NaN value" "$o" -- $N pca "$T/fmt_two.h5:/nan" -o "$o"
expect_fail hdf5_group "fmt_two.h5: 'b' is a group, not an array: name one inside it (it holds: c)" "$o" -- \
  $N pca "$T/fmt_two.h5:b" -o "$o"
expect_fail hdf5_truncated "fmt_cut.h5: not a readable HDF5 file (corrupt or truncated?) (HDF5: truncated file" "$o" -- \
  $N pca "$T/fmt_cut.h5" -o "$o"
expect_fail hdf5_gzipped "fmt_cut.h5.gz: a gzip'ed HDF5, .mat or .npz file: decompress it first" "$o" -- \
  $N pca "$T/fmt_cut.h5.gz" -o "$o"
expect_fail hdf5_misnamed "fmt_misnamed.h5: not an HDF5 file (no HDF5 signature): damaged or misnamed?" "$o" -- \
  $N pca "$T/fmt_misnamed.h5" -o "$o"
expect_fail npz_several "fmt_two.npz: 2 arrays: name one as $T/fmt_two.npz:KEY (X, y)" "$o" -- $N pca "$T/fmt_two.npz" -o "$o"
expect_fail npz_no_key "fmt_two.npz: no array 'z' in it (it holds: X, y)" "$o" -- $N pca "$T/fmt_two.npz:z" -o "$o"
expect_fail npz_truncated "(corrupt or truncated zip archive)" "$o" -- $N pca "$T/fmt_cut.npz" -o "$o"
expect_fail npz_not_npy "fmt_notes.npz: member 'notes.txt' is not a .npy array (not a NumPy .npz archive)" "$o" -- \
  $N pca "$T/fmt_notes.npz" -o "$o"
expect_fail npz_bsr "fmt_bsr.npz: sparse format 'bsr' is not supported (csr, csc, coo)" "$o" -- $N pca "$T/fmt_bsr.npz" -o "$o"
expect_fail mat_several "fmt_two.mat: 2 candidate variables: name one as $T/fmt_two.mat:NAME (X, Y)" "$o" -- \
  $N pca "$T/fmt_two.mat" -o "$o"
expect_fail mat_char "fmt_two.mat:note: a char array, not a numeric matrix" "$o" -- $N pca "$T/fmt_two.mat:note" -o "$o"
expect_fail mat_truncated "fmt_cut.mat: byte 128: a variable of" "$o" -- $N pca "$T/fmt_cut.mat" -o "$o"
expect_fail mtx_data_duplicate "fmt_dup.mtx: line 5: entry (1, 2) given twice" "$o" -- $N pca "$T/fmt_dup.mtx" -o "$o"
expect_fail mtx_data_short "fmt_short.mtx: the values end at entry (2, 2) of the 2 x 2 matrix (truncated?)" "$o" -- \
  $N pca "$T/fmt_short.mtx" -o "$o"
expect_fail sparse_over_cap "fmt_wide.mtx: the sparse 100000 x 100000 matrix made dense needs 37.3 GiB, over the memory cap" "$o" -- \
  $N pca "$T/fmt_wide.mtx" --max-memory 1G -o "$o"
expect_fail name_in_plain_file "four.csv: not an HDF5, .mat or .npz file: there is no 'X' inside it" "$o" -- \
  $N pca "$T/four.csv:X" -o "$o"
expect_fail folder_not_10x "fmt_folder: a folder, and not one of 10x Genomics data (no matrix.mtx or matrix.mtx.gz in it)" "$o" -- \
  $N pca "$T/fmt_folder" -o "$o"
expect_fail pickle_refused "fmt_pickle.bin: a Python pickle (not read, being unsafe" "$o" -- $N pca "$T/fmt_pickle.bin" -o "$o"

# ---- a few bytes announcing an enormous matrix (issue 34 item 18): refused
# at once, naming the file, before any row pointer is allocated; densified
# by its dense size, kept sparse (knn) by the CSR it would build
printf '%%%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n' > "$T/huge.mtx"
printf '%%%%MatrixMarket matrix coordinate real general\n200000000 200000000 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n' > "$T/huge2.mtx"
mkdir -p "$T/huge_10x"
printf '%%%%MatrixMarket matrix coordinate integer general\n3 2000000000 3\n1 1 1\n2 2 1\n3 3 1\n' > "$T/huge_10x/matrix.mtx"
/usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np, scipy.sparse as sp, scipy.io as sio, h5py
T = sys.argv[1]
R = 2000000000
i = np.arange(3); v = np.ones(3, np.float32)
sp.save_npz(f"{T}/huge_coo.npz", sp.coo_matrix((v, (i, i)), shape=(R, R)), compressed=False)
csc = sp.csc_matrix((v, (i, i)), shape=(R, 3))
sp.save_npz(f"{T}/huge_csc.npz", csc, compressed=False)
sio.savemat(f"{T}/huge.mat", {"X": csc})
with h5py.File(f"{T}/huge.h5ad", "w") as f:
    f.attrs["encoding-type"] = "anndata"; f.attrs["encoding-version"] = "0.1.0"
    g = f.create_group("X"); g.attrs["encoding-type"] = "csc_matrix"; g.attrs["encoding-version"] = "0.1.0"
    g.attrs["shape"] = np.array([R, 3])
    g["data"] = csc.data; g["indices"] = csc.indices; g["indptr"] = csc.indptr
    f.create_group("obs")
PY
huge_fail() { # NAME SUBSTRING command...: refused, and both runs of expect_fail within 5 s
  local name=$1 want=$2 t0 t1
  shift 2
  t0=$(date +%s%N)
  expect_fail "$name" "$want" "$o" -- "$@"
  t1=$(date +%s%N)
  if [ $(( (t1 - t0) / 1000000 )) -lt 5000 ]; then ok "${name}_fast"
  else bad "${name}_fast" "two refusals took $(( (t1 - t0) / 1000000 )) ms"; fi
}
huge_fail huge_mtx_dense "huge.mtx: the sparse 2000000000 x 2000000000 matrix made dense needs" $N pca "$T/huge.mtx" -d 2 -o "$o"
huge_fail huge2_mtx_dense "huge2.mtx: the sparse 200000000 x 200000000 matrix made dense needs" $N pca "$T/huge2.mtx" -d 2 -o "$o"
huge_fail huge_mtx_sparse "huge.mtx: the sparse 2000000000 x 2000000000 matrix (3 entries) as CSR needs 29.8 GiB, over the memory cap of 4.0 GiB" \
  $N knn "$T/huge.mtx" --max-memory 4G -o "$o"
huge_fail huge_10x_dense "matrix.mtx: the sparse 2000000000 x 3 matrix made dense needs" $N pca "$T/huge_10x" -o "$o"
huge_fail huge_npz_coo_dense "huge_coo.npz: the sparse 2000000000 x 2000000000 matrix made dense needs" $N pca "$T/huge_coo.npz" -o "$o"
huge_fail huge_npz_coo_sparse "huge_coo.npz: the sparse 2000000000 x 2000000000 matrix (3 entries) as CSR needs" \
  $N knn "$T/huge_coo.npz" --max-memory 4G -o "$o"
huge_fail huge_npz_csc_sparse "huge_csc.npz: the sparse 2000000000 x 3 matrix (3 entries) as CSR needs" \
  $N knn "$T/huge_csc.npz" --max-memory 4G -o "$o"
huge_fail huge_mat_dense "huge.mat:X: the sparse 2000000000 x 3 matrix made dense needs" $N pca "$T/huge.mat" -o "$o"
huge_fail huge_mat_sparse "huge.mat:X: the sparse 2000000000 x 3 matrix (3 entries) as CSR needs" \
  $N knn "$T/huge.mat" --max-memory 4G -o "$o"
huge_fail huge_h5ad_dense "huge.h5ad:X: the sparse 2000000000 x 3 matrix made dense needs" $N pca "$T/huge.h5ad" -o "$o"
huge_fail huge_h5ad_sparse "huge.h5ad:X: the sparse 2000000000 x 3 matrix (3 entries) as CSR needs" \
  $N knn "$T/huge.h5ad" --max-memory 4G -o "$o"
# ---- issue 34: numbers converted within what the code holds, messages that quote the rule broken and the
# option the user gave, matrix checks with the file name and 0-based rows as the readers count
expect_fail perplexity_past_int "--perplexity 1e+09 must be above 1 and below the number of neighbours, 59" "$T/x.npy" -- \
  $N tsne blobs:60:4 -p 1e9 -o "$T/x.npy"
expect_fail affinity_perplexity_past_int "k = 3 x --perplexity 1e+300 = 3e+300 neighbours need more than 50 points" \
  "$T/c.mtx" -- $N affinity spiral:50 -p 1e300 -o "$T/c.mtx"
expect_fail landmarks_int_max "le: --landmarks 2147483647 for 2 dimensions of 300 points" "$o" -- \
  $N le swissroll:300 --landmarks 2147483647 -o "$o"
expect_fail landmarks_past_int '--landmarks takes an integer from 0 to 2147483647, not "2147483648"' "$o" -- \
  $N le swissroll:300 --landmarks 2147483648 -o "$o"
expect_fail landmarks_negative '--landmarks takes an integer >= 0, not "-1"' "$o" -- $N le swissroll:300 --landmarks -1 -o "$o"
expect_fail neighbors_past_int '--neighbors takes an integer from 1 to 2147483647 or auto, not "99999999999999999999"' "$o" -- \
  $N knn swissroll:300 -k 99999999999999999999 -o "$o"
expect_fail sweep_k_past_int "--sweep-k takes positive integers up to 2147483647" "$o" -- \
  $N cluster blobs:60:3 --labels blobs:60:3 --sweep-sigma 1 --sweep-k 1e10 -o "$o"
expect_fail cluster_more_than_points "spectral clustering: --clusters 100 of 60 points: at most N - 1" "$o" -- \
  $N cluster blobs:60:3 -c 100 -o "$o"
expect_fail cluster_dims_more_than_points "spectral clustering: --dims 60 dimensions of 60 points (at most N - 2)" "$o" -- \
  $N cluster blobs:60:3 -c 3 --dims 60 -o "$o"
expect_fail kpca_polynomial_overflow "the polynomial kernel overflows at row 0, column 0 (inf): a smaller --gamma, --degree or --coef0" \
  "$o" -- $N kpca swissroll:200 --kernel polynomial --degree 2000 -o "$o"
expect_fail line_search_c1_one '--c1 takes a number in (0, 1), not "1"' "$o" -- $N ee swissroll:200 --c1 1 -o "$o"
# the tool's own commands' rows (cli/rows.c): ranges, choices, a repeated option's limit
expect_fail metrics_k_rule '-k takes an integer >= 1, not "0"' "$T/m0.json" -- $N metrics "$T/sr.npy" "$T/sr.npy" -k 0 -o "$T/m0.json"
expect_fail metrics_subsample_rule '--subsample takes an integer >= 0, not "-1"' "$T/m0.json" -- \
  $N metrics "$T/sr.npy" "$T/sr.npy" --subsample -1 -o "$T/m0.json"
expect_fail view_alpha_rule '--alpha takes a number in (0, 1], not "0"' "$T/v.html" -- $N view "$T/sr.npy" --alpha 0 -o "$T/v.html"
expect_fail plot_info_limit "at most 8 --info files" "$T/p.png" -- \
  $N plot "$T/sr.npy" --info a --info a --info a --info a --info a --info a --info a --info a --info a -o "$T/p.png"
expect_fail plot_labels_count "sr.npy has 2000 rows, --labels $T/three_labels.txt has 3" "$T/p.png" -- \
  $N plot "$T/sr.npy" --labels "$T/three_labels.txt" -o "$T/p.png"
expect_fail plot_width_cairo '--width takes an integer from 1 to 32767, not "40000"' "$T/p.png" -- \
  $N plot "$T/sr.npy" --width 40000 -o "$T/p.png"
/usr/bin/python3 - "$T" <<'PY' || bad fixtures34 "the issue-34 fixtures could not be made (numpy, scipy)"
import sys
import numpy as np, scipy.io as sio
d = sys.argv[1]
rng = np.random.default_rng(0)
X = rng.random((12, 3))
D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
W = np.exp(-D2)
np.fill_diagonal(W, 0)
A = W.copy(); A[0, 5] = A[5, 0] = -0.3; np.save(d + "/w34_neg.npy", A)
B = W.copy(); B[0, 5] = np.nan; np.save(d + "/w34_nan.npy", B)
C = W.copy(); C[0, 5] += 0.1; np.save(d + "/w34_asym.npy", C)
Dm = np.sqrt(D2); Dm[0, 5] = Dm[5, 0] = -1; np.save(d + "/d34_neg.npy", Dm)
sio.savemat(d + "/m34_complex.mat", {"X": np.ones((4, 3)) + 1j})
sio.savemat(d + "/m34_empty.mat", {"X": np.zeros((0, 3))})
PY
expect_fail affinities_npy_negative "w34_neg.npy: affinities: row 0, column 5 holds -0.3" "$o" -- \
  $N le --affinities "$T/w34_neg.npy" -o "$o"
expect_fail affinities_npy_nan "w34_nan.npy: byte 168 (row 0, column 5)" "$o" -- $N le --affinities "$T/w34_nan.npy" -o "$o"
expect_fail affinities_npy_asymmetric "w34_asym.npy: affinities: not symmetric: row 0, column 5 holds" "$o" -- \
  $N le --affinities "$T/w34_asym.npy" -o "$o"
expect_fail precomputed_negative_embed "d34_neg.npy: distance matrix: row 0, column 5 is -1" "$o" -- \
  $N tsne "$T/d34_neg.npy" --metric precomputed -p 3 -o "$o"
expect_fail precomputed_negative_isomap "d34_neg.npy: distance matrix: row 0, column 5 is -1" "$o" -- \
  $N isomap "$T/d34_neg.npy" --metric precomputed -k 3 -o "$o"
expect_fail precomputed_negative_mds "d34_neg.npy: dissimilarities: row 0, column 5 is -1, negative" "$o" -- \
  $N mds "$T/d34_neg.npy" --metric precomputed -o "$o"
expect_fail mat_complex_reason "m34_complex.mat: no two-dimensional numeric or sparse variable in it (it holds: X (complex" "$o" -- \
  $N pca "$T/m34_complex.mat" -o "$o"
expect_fail mat_empty_reason "m34_empty.mat: no two-dimensional numeric or sparse variable in it (it holds: X (numeric, empty: 0 x 3))" \
  "$o" -- $N pca "$T/m34_empty.mat" -o "$o"

finish
