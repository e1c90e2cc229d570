#!/usr/bin/env bash
# cli.sh — the nlembed command end to end on good input: the files and JSON
# lines documented in --help, checkpoints and resume, the same bits on any
# thread count. Bad input has its own catalogue, tests/bad_input.sh.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

printf '1,2\n3,4\n5,7\n8,9\n' > "$T/four.csv"
# ---- good runs
expect_ok pca_text $N pca "$T/four.csv" -d 1 -o "$T/p.csv" --quiet
if [ "$(wc -l < "$T/p.csv")" -eq 4 ] && grep -q '"explained_variance"' "$T/stdout"; then ok pca_text_output; else bad pca_text_output "$(cat "$T/p.csv")"; fi
expect_ok pca_synthetic $N pca swissroll:2000 -d 2 -o "$T/sr.npy" --save-labels "$T/sr_labels.npy" --quiet
expect_ok knn_mtx $N knn blobs:500:5:4 -k 5 -o "$T/g.mtx" --distances "$T/g_dist.npy" --quiet
if head -1 "$T/g.mtx" | grep -q '^%%MatrixMarket matrix coordinate real general' && [ "$(sed -n 3p "$T/g.mtx")" = "500 500 2500" ]; then
  ok knn_mtx_header; else bad knn_mtx_header "$(head -3 "$T/g.mtx")"; fi
expect_ok knn_npy $N knn spiral:300 -k 3 -o "$T/g.npy" --quiet
expect_ok metrics_json $N metrics swissroll:2000 "$T/sr.npy" -k 10 -o "$T/m.json" --quiet
if grep -q '"trustworthiness": 0\.[0-9]' "$T/m.json" && grep -q '"knn_accuracy": 0\.[0-9]' "$T/m.json" && [ "$(wc -l < "$T/stdout")" -eq 1 ]; then
  ok metrics_json_line; else bad metrics_json_line "$(cat "$T/stdout")"; fi
expect_ok metrics_within $N metrics swissroll:2000 "$T/sr.npy" -k 10 --subsample 500 --within-subsample --quiet
if grep -q '"subsample": 500, "within_subsample": true' "$T/stdout"; then ok metrics_within_json; else bad metrics_within_json "$(cat "$T/stdout")"; fi
expect_ok plot_png $N plot "$T/sr.npy" --labels "$T/sr_labels.npy" --info "$T/m.json" -o "$T/sr.png" --quiet
if [ "$(head -c 8 "$T/sr.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then ok plot_png_signature; else bad plot_png_signature "not a PNG"; fi
expect_ok plot_svg $N plot "$T/sr.npy" -o "$T/sr.svg" --quiet
if grep -q '<svg' "$T/sr.svg"; then ok plot_svg_content; else bad plot_svg_content "not an SVG"; fi
# The frame fits the bulk: a 20 x 20 grid with 3 points 60-100 units away is
# drawn as the grid alone is (at the height the note under the frame leaves:
# 800 - 18), except 3 triangles on the frame's edge pointing to the 3 points;
# --extent all shrinks the grid to fit them.
/usr/bin/python3 - "$T" <<'PY' > /dev/null 2>&1 || bad plot_bulk_fixture "numpy failed"
import sys
import numpy as np
d = sys.argv[1]
g = np.linspace(0, 10, 20)
grid = np.c_[np.repeat(g, 20), np.tile(g, 20)]
np.save(d + "/grid.npy", grid)
np.save(d + "/grid_out.npy", np.r_[grid, [[105, 5], [5, -75], [-55, 65]]])
PY
expect_ok plot_bulk_alone $N plot "$T/grid.npy" --title t --height 782 -o "$T/grid_a.png" --quiet
expect_ok plot_bulk_outliers $N plot "$T/grid_out.npy" --title t -o "$T/grid_b.png" --quiet
expect_ok plot_extent_all $N plot "$T/grid_out.npy" --title t --extent all -o "$T/grid_c.png" --quiet
/usr/bin/python3 - "$T" <<'PY' > "$T/plot_bulk.out" 2>&1 && ok plot_bulk_frame || bad plot_bulk_frame "$(tail -c 400 "$T/plot_bulk.out")"
import sys, zlib
import numpy as np
from scipy import ndimage
d = sys.argv[1]
def png(path):  # cairo's 8-bit RGB or RGBA, not interlaced, each row filtered
    b = open(path, "rb").read()
    p, idat = 8, b""
    while p < len(b):
        n = int.from_bytes(b[p:p + 4], "big"); tag = b[p + 4:p + 8]; data = b[p + 8:p + 8 + n]
        if tag == b"IHDR":
            w, h = int.from_bytes(data[:4], "big"), int.from_bytes(data[4:8], "big")
            assert data[8] == 8 and data[9] in (2, 6) and data[12] == 0, data
            ch = 3 if data[9] == 2 else 4
        elif tag == b"IDAT":
            idat += data
        p += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + ch * w)
    out = np.zeros((h, w, ch), np.int32)
    prev = np.zeros((w, ch), np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32).reshape(w, ch)
        if f == 0: cur = line
        elif f == 1: cur = np.cumsum(line, 0) & 255
        elif f == 2: cur = (line + prev) & 255
        else:  # average, Paeth: pixel by pixel
            cur = np.zeros((w, ch), np.int32)
            a = np.zeros(ch, np.int32); c = np.zeros(ch, np.int32)
            for i in range(w):
                up = prev[i]
                if f == 3: v = line[i] + (a + up) // 2
                else:
                    q = a + up - c; pa, pb, pc = abs(q - a), abs(q - up), abs(q - c)
                    v = line[i] + np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, up, c))
                cur[i] = a = v & 255
                c = up
        out[y], prev = cur, cur
    return out[:, :, :3]
A, B, C = (png(d + f"/grid_{k}.png") for k in "abc")
ink = lambda im: np.argwhere((im < 200).any(-1))
top = 29  # below the title's line (the grid's ink starts at 33)
ya, xa = ink(A[top:]).T
y0, y1, x0, x1 = ya.min() + top, ya.max() + top, xa.min(), xa.max()
r = 4  # radius below 1,000 points
scale = (y1 - y0 - 2 * r) / 10.0  # the grid's 10 units fill the frame's height
cy, cx = (y0 + y1) / 2, (x0 + x1) / 2
diff = (A != B[:A.shape[0]]).any(-1)
labels, count = ndimage.label(ndimage.binary_dilation(diff, iterations=2))
assert count == 3, f"{count} differing regions, want 3 triangles"
for k, (px, py) in enumerate([[105, 5], [5, -75], [-55, 65]]):
    want = np.arctan2(-(py - 5) * scale, (px - 5) * scale)
    best = None
    for j in range(1, count + 1):
        yy, xx = np.nonzero(labels == j)
        got = np.arctan2(yy.mean() - cy, xx.mean() - cx)
        turn = abs((got - want + np.pi) % (2 * np.pi) - np.pi)
        if best is None or turn < best[0]:
            best = (turn, yy.mean(), xx.mean())
    turn, my, mx = best
    assert turn < np.radians(3), f"no triangle towards outlier {k}: {np.degrees(turn):.1f} degrees off"
    # on the frame's edge: the grid's centres span its height; across, 16 px
    # of padding and r from each side (no legend)
    edge = min(abs(my - (y0 + r)), abs(my - (y1 - r)), abs(mx - (16 + r)), abs(mx - (A.shape[1] - 16 - r)))
    assert edge < 6, f"triangle {k} is {edge:.1f} px from the frame's edge"
blobs, nb = ndimage.label(ndimage.binary_dilation((C[top:] < 200).any(-1), iterations=3))
yc, xc = np.nonzero(blobs == 1 + np.argmax(np.bincount(blobs.ravel())[1:]))  # the grid: the largest blob
assert nb >= 4 and (yc.max() - yc.min()) < 0.25 * (y1 - y0), "--extent all did not fit the outliers"
print("ok")
PY
# ---- affinities and approximate neighbours
expect_ok affinity_entropic $N affinity swissroll:1500 -p 10 -o "$T/a.mtx" --betas "$T/b.npy" --quiet
if grep -q '"mean_iterations": [0-9]' "$T/stdout" && grep -q '"converged": true' "$T/stdout" && head -1 "$T/a.mtx" | grep -q MatrixMarket; then
  ok affinity_outputs; else bad affinity_outputs "$(cat "$T/stdout")"; fi
expect_ok affinity_gaussian $N affinity blobs:800:5:3 --kind gaussian --sigma 2 -k 10 -o "$T/g.mtx" --quiet
expect_ok knn_approx $N knn blobs:3000:8:5 -k 10 --method approx -o "$T/ga.npy" --quiet
if grep -q '"knn_method": "approx"' "$T/stdout"; then ok knn_approx_method; else bad knn_approx_method "$(cat "$T/stdout")"; fi
printf '0,0\n0,0\n0,0\n1,0\n0,1\n2,2\n3,1\n1,3\n2,0\n0,2\n' > "$T/dups.csv"
expect_ok affinity_duplicates $N affinity "$T/dups.csv" -p 3 -k 6 -o "$T/d.mtx" --quiet
# (1,0) has four neighbours tied at distance 1 >= perplexity 3: documented as degenerate.
if ! grep -qiE 'nan|inf' "$T/d.mtx" && grep -q '"degenerate_points": 2' "$T/stdout"; then ok affinity_duplicates_finite; else bad affinity_duplicates_finite "$(cat "$T/stdout")"; fi

# ---- embeddings
expect_ok tsne_blobs $N tsne blobs:400:8:4 -p 15 -o "$T/ts.npy" --save-labels "$T/tsl.npy" --quiet
if grep -q '"command": "tsne"' "$T/stdout" && grep -q '"iterations": [1-9]' "$T/stdout"; then ok tsne_json; else bad tsne_json "$(cat "$T/stdout")"; fi
# KL(P || Q) beside the objective E = KL + H(P)
if /usr/bin/python3 -c "import json, sys; d = json.loads(open(sys.argv[1]).read().splitlines()[-1]); sys.exit(not 0 < d['kl_divergence'] < d['E'] / 5)" "$T/stdout" 2> /dev/null
then ok tsne_kl_json; else bad tsne_kl_json "$(cat "$T/stdout")"; fi
expect_ok tsne_grad_tol $N tsne blobs:400:8:4 -p 15 --grad-tol 1e9 -o "$T/tgt.npy" --quiet
# the gradient is tested from the first iteration after the exaggeration (125)
if grep -q '"iterations": 125,' "$T/stdout" && grep -q '"converged": true' "$T/stdout"; then ok tsne_grad_tol_stops; else bad tsne_grad_tol_stops "$(cat "$T/stdout")"; fi
expect_ok tsne_metrics $N metrics blobs:400:8:4 "$T/ts.npy" -k 10 --quiet
if grep -q '"knn_accuracy": 0\.9[5-9]\|"knn_accuracy": 1\.0' "$T/stdout"; then ok tsne_separates; else bad tsne_separates "$(cat "$T/stdout")"; fi
expect_ok ee_sqdist $N ee spiral:300 -p 10 --wneg sqdist --lambda 1 --max-iters 30 --optimizer fp -o "$T/ee.npy" --quiet
expect_ok ee_init_file $N ee spiral:300 -p 10 --init "$T/ee.npy" --max-iters 5 -o "$T/ee2.npy" --quiet
expect_ok ee_homotopy $N ee swissroll:300 --sigma 15 -k 10 --wneg uniform --homotopy 3 --lambda 1e-3 --path-prefix "$T/path_" -o "$T/eh.npy" --quiet
if [ -f "$T/path_002.npy" ] && grep -q '"lambda_star_lower": [0-9]' "$T/stdout" && grep -q '"homotopy_steps": 3' "$T/stdout"; then
  ok ee_homotopy_outputs; else bad ee_homotopy_outputs "$(cat "$T/stdout")"; fi
expect_ok tsne_gd_momentum $N tsne blobs:400:8:4 -p 15 --learning-rate auto --exaggeration 12 --exaggeration-iters 50 --max-iters 150 -o "$T/tg.npy" --quiet
if grep -q '"optimizer": "gd"' "$T/stdout" && grep -q '"iterations": 150' "$T/stdout"; then ok tsne_gd_json; else bad tsne_gd_json "$(cat "$T/stdout")"; fi
expect_ok tsne_final_rate $N tsne blobs:400:8:4 -p 15 --learning-rate 100 --final-learning-rate 300 --exaggeration 12 --exaggeration-iters 50 --max-iters 100 -o "$T/tg.npy" --quiet
# t-EE's W+ sums to N: its auto rates are t-SNE's divided by N (300 / 4 / 300), and without an
# exaggeration phase the final rate is the first
if $N tee spiral:300 -p 10 --learning-rate auto --max-iters 20 -o "$T/tee_rate.npy" 2> "$T/stderr" > /dev/null \
  && grep -qF "learning rates 0.25, then 0.25 (auto, for W+ summing to 300)" "$T/stderr"; then ok tee_auto_rates
else bad tee_auto_rates "$(grep -i rate "$T/stderr" | head -c 300)"; fi
# every model's defaults run to the end at a size where the fast engines serve them
for model in ssne tee ee; do
  expect_ok "${model}_defaults_5000" $N $model fashion-mnist:5000 -o "$T/def_$model.npy" --quiet
done

# ---- checkpoint and resume: SIGINT once the first checkpoint exists; the run
# exits 130 without OUTPUT, and --resume gives the uninterrupted result.
ck_args="tsne blobs:1500:10:5 --optimizer lbfgs --max-iters 800 --tol 0 --quiet"
expect_ok ckpt_reference $N $ck_args -o "$T/ck_ref.npy"
$N $ck_args -o "$T/ck_out.npy" --checkpoint "$T/run.ckpt" --checkpoint-every 5 > /dev/null 2> "$T/ck_err" &
pid=$!
for _ in $(seq 1 600); do [ -e "$T/run.ckpt" ] && break; sleep 0.05; done
kill -INT $pid 2> /dev/null
wait $pid
ck_rc=$?
if [ $ck_rc -eq 130 ] && [ ! -e "$T/ck_out.npy" ] && grep -q "stopped by SIGINT.*checkpoint written" "$T/ck_err"; then ok ckpt_sigint
elif [ $ck_rc -eq 0 ]; then bad ckpt_sigint "the run finished before the signal came: nothing was tested"
else bad ckpt_sigint "exit $ck_rc: $(cat "$T/ck_err")"; fi
ck_before=$(md5sum < "$T/run.ckpt")
expect_ok ckpt_resume $N $ck_args -o "$T/ck_out.npy" --resume "$T/run.ckpt"
# --resume goes on checkpointing to its file
if [ "$(md5sum < "$T/run.ckpt")" != "$ck_before" ]; then ok ckpt_resume_keeps_checkpointing
else bad ckpt_resume_keeps_checkpointing "the checkpoint was not written again"; fi
if cmp -s "$T/ck_ref.npy" "$T/ck_out.npy"; then ok ckpt_resume_equal; else bad ckpt_resume_equal "resumed result differs"; fi

expect_ok init_spectral $N ee spiral:300 -p 10 --init spectral --max-iters 20 -o "$T/isp.npy"
if grep -q 'lambda\* = .* (lambda2(L+) / N, exact for uniform W-; EE paper eqs. 11-12, dense eigenvalues)' "$T/stderr"; then ok lambda_star_printed; else bad lambda_star_printed "$(cat "$T/stderr")"; fi
expect_ok bounds_sqdist $N ee spiral:300 -p 10 --wneg sqdist --max-iters 5 -o "$T/isq.npy"
if grep -q 'lambda\* bounds: .* (EE paper eqs. 11-12, dense eigenvalues)' "$T/stderr"; then ok bounds_printed; else bad bounds_printed "$(cat "$T/stderr")"; fi
expect_ok init_spectral_disconnected $N tsne blobs:400:8:4 -p 3 -k 5 --init spectral --max-iters 5 -o "$T/isp2.npy"
if grep -q 'warning: W+ has [0-9]* connected components' "$T/stderr"; then ok spectral_components_warning; else bad spectral_components_warning "$(cat "$T/stderr")"; fi

expect_ok tsne_barnes_hut $N tsne blobs:400:8:4 -p 15 --repulsion bh --theta 0.3 --max-iters 100 -o "$T/tbh.npy" --quiet
expect_ok tsne_fft $N tsne blobs:400:8:4 -p 15 --repulsion fft --fft-box 0.5 --max-iters 100 -o "$T/tfft.npy" --quiet
expect_ok ee_sqdist_fft $N ee blobs:600:10:1 -p 10 --wneg sqdist --wneg-dims 5 --repulsion fft --lambda 1e-4 --max-iters 50 -o "$T/esqf.npy"
if grep -q 'W- of squared distances after PCA 10 -> 5' "$T/stderr" && grep -q 'lambda\* bounds: .*Lanczos and Gershgorin' "$T/stderr"; then ok sqdist_fft_notes; else bad sqdist_fft_notes "$(cat "$T/stderr")"; fi
expect_ok ee_fgt $N ee blobs:400:8:4 -p 15 -d 3 --repulsion fgt --fgt-order 4 --max-iters 50 -o "$T/efgt.npy" --quiet
expect_ok tsne_pca $N tsne fashion-mnist:600 -p 15 --pca 20 --max-iters 50 -o "$T/tpca.npy" --quiet
expect_ok pca_model $N tsne fashion-mnist:600 -p 10 --pca 20 --max-iters 50 --save-model "$T/pm.nle" -o "$T/pm.npy" --quiet
expect_ok pca_model_transform $N transform "$T/pm.nle" fashion-mnist:700 -o "$T/pmt.npy" --quiet
expect_ok tsne_pca_candidates $N tsne fashion-mnist:600 -p 10 --pca 20 --pca-candidates 60 --max-iters 20 -o "$T/tpc.npy" --quiet
expect_ok tsne_pca_no_rerank $N tsne fashion-mnist:600 -p 10 --pca 20 --pca-candidates 0 --max-iters 20 -o "$T/tpn.npy" --quiet

# ---- precomputed affinities
expect_ok affinity_for_embed $N affinity blobs:400:8:4 -p 15 -o "$T/aw.mtx" --quiet
expect_ok embed_affinities_only $N tsne --affinities "$T/aw.mtx" --max-iters 100 -o "$T/ea1.npy" --quiet
expect_ok embed_affinities_with_data $N tsne blobs:400:8:4 --affinities "$T/aw.mtx" --init pca --max-iters 100 -o "$T/ea2.npy" --quiet
expect_ok embed_same_from_data $N tsne blobs:400:8:4 -p 15 --max-iters 100 -o "$T/ea3.npy" --quiet
/usr/bin/python3 - "$T" > /dev/null 2>&1 <<'PY' && ok affinities_same_embedding || bad affinities_same_embedding "embeddings from the file and from the data differ"
import sys, numpy as np
a, b = np.load(sys.argv[1] + "/ea2.npy"), np.load(sys.argv[1] + "/ea3.npy")
assert np.abs(a - b).max() <= 1e-6 * np.abs(b).max()
PY

# ---- out-of-sample maps from a saved model
expect_ok save_model $N tsne blobs:400:8:4 -p 15 --max-iters 200 -o "$T/om.npy" --save-model "$T/om.nle" --quiet
expect_ok transform_forward $N transform "$T/om.nle" blobs:400:8:4 -o "$T/of.npy" --quiet
if grep -q '"map": "F(y)"' "$T/stdout" && grep -q '"n": 400' "$T/stdout"; then ok transform_json; else bad transform_json "$(cat "$T/stdout")"; fi
expect_ok save_model_reference $N ee spiral:300 -k 10 --sigma 0.5 --wneg sqdist --lambda 1 --max-iters 200 -o "$T/oe.npy" --save-model "$T/oe.nle" --model-data reference --quiet
expect_ok transform_reference $N transform "$T/oe.nle" spiral:300 -o "$T/oef.npy" --quiet
expect_ok transform_fft $N transform "$T/om.nle" blobs:400:8:4 --repulsion fft -o "$T/off.npy" --quiet
expect_ok transform_inverse $N transform "$T/oe.nle" "$T/oe.npy" --inverse -o "$T/oei.npy" --quiet

# ---- spectral methods: Laplacian eigenmaps from data and from a saved W
expect_ok le_swissroll $N le swissroll:1000 -k 10 -o "$T/le.npy" --quiet
if grep -q '"eigenvalues": \[' "$T/stdout" && grep -q '"laplacian": "random-walk"' "$T/stdout"; then ok le_json
else bad le_json "$(cat "$T/stdout")"; fi
expect_ok le_affinities_out $N affinity swissroll:600 --kind binary -k 10 -o "$T/lew.mtx" --quiet
expect_ok le_affinities $N le --affinities "$T/lew.mtx" --laplacian symmetric -o "$T/lew.npy" --quiet
/usr/bin/python3 - "$T" > /dev/null 2>&1 <<'PY' && ok le_output_normalised || bad le_output_normalised "U^T U is not I"
import sys, numpy as np
u = np.load(sys.argv[1] + "/lew.npy")
assert u.shape == (600, 2) and np.abs(u.T @ u - np.eye(2)).max() < 1e-8
PY

expect_ok lle_swissroll $N lle swissroll:800 -k 10 -o "$T/lle.npy" --quiet
/usr/bin/python3 - "$T" > /dev/null 2>&1 <<'PY' && ok lle_constraints || bad lle_constraints "sum x != 0 or X^T X / N != I"
import sys, numpy as np
x = np.load(sys.argv[1] + "/lle.npy")
assert x.shape == (800, 2) and np.abs(x.sum(0)).max() < 1e-8 and np.abs(x.T @ x / 800 - np.eye(2)).max() < 1e-8
PY
expect_ok cluster_blobs $N cluster blobs:900:6:3 -c 3 -k 8 -o "$T/cl.txt" --quiet
if [ "$(wc -l < "$T/cl.txt")" -eq 900 ] && grep -q '"error_matched": 0.000000' "$T/stdout"; then ok cluster_labels_and_error
else bad cluster_labels_and_error "$(head -c 300 "$T/stdout")"; fi

expect_ok diffmap_swissroll $N diffmap swissroll:800 -k 10 --alpha 0.5 --time 2 -o "$T/dm.npy" --quiet
if grep -q '"eigenvalues": \[1,' "$T/stdout"; then ok diffmap_trivial_one; else bad diffmap_trivial_one "$(head -c 300 "$T/stdout")"; fi

for m in mlle ltsa hlle; do
  expect_ok "${m}_swissroll" $N $m swissroll:600 -k 10 -o "$T/$m.npy" --quiet
done
expect_ok isomap_swissroll $N isomap swissroll:800 -k 10 -o "$T/iso.npy" --quiet
expect_ok isomap_landmarks $N isomap swissroll:3000 -k 10 --landmarks 100 -o "$T/isol.npy" --quiet
expect_ok isomap_radius $N isomap swissroll:1000 --radius 4 -o "$T/isor.npy" --quiet
if grep -q '"residual_variance": ' "$T/stdout"; then ok isomap_residual_variance; else bad isomap_residual_variance "$(head -c 300 "$T/stdout")"; fi
# a disconnected graph (three blobs at k = 5): joined by the 2 shortest edges between them, with a warning
for m in isomap le lle; do
  expect_ok ${m}_joins_components $N $m blobs:600:5:3 -k 5 -o "$T/join_$m.npy"
  if grep -q 'warning: '$m': the neighbourhood graph has 3 connected components: joined by the 2 shortest edges' "$T/stderr" &&
     grep -q '"components": 3,' "$T/stdout" && grep -q '"components_policy": "join"' "$T/stdout" &&
     grep -q '"joined_edges": 2' "$T/stdout"; then ok ${m}_join_reported
  else bad ${m}_join_reported "$(cat "$T/stderr" "$T/stdout")"; fi
done
# clustering keeps components apart (they are clusters) and kernel eigenmaps embed them as they are: both warn
expect_ok cluster_components_warns $N cluster blobs:600:5:3 -k 5 --clusters 3 -o "$T/join_cl.npy"
if grep -q 'warning: spectral clustering: the graph has 3 connected components: each falls whole in one cluster' "$T/stderr"; then
  ok cluster_components_warning; else bad cluster_components_warning "$(cat "$T/stderr")"; fi
expect_ok kem_components_warns $N kem blobs:600:5:3 -k 5 -o "$T/join_kem.npy"
if grep -q 'warning: kem: the graph has 3 connected components' "$T/stderr"; then ok kem_components_warning
else bad kem_components_warning "$(cat "$T/stderr")"; fi

# ---- spectral models: each method's map of its own training points is its
# embedding (the Nystrom identity; a referenced model finds its data again)
for m in le lle isomap diffmap; do
  expect_ok "${m}_save_model" $N $m swissroll:700 -o "$T/sm_$m.npy" --save-model "$T/sm_$m.nle" --model-data reference --quiet
  expect_ok "${m}_transform" $N transform "$T/sm_$m.nle" swissroll:700 -o "$T/smt_$m.npy" --quiet
  if /usr/bin/python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(not np.abs(a - b).max() <= 1e-6 * np.abs(a).max())" "$T/sm_$m.npy" "$T/smt_$m.npy" 2> /dev/null
  then ok "${m}_transform_training_points"; else bad "${m}_transform_training_points" "the map of the training points is not the embedding"; fi
done
# ---- precomputed input: the kNN graph nlembed knn writes gives the same
# Isomap as the points (bit for bit: the same graph), dense distances the
# same to the float rounding of the distances
$N knn swissroll:500 -k 10 -o "$T/pk.mtx" --quiet > /dev/null
expect_ok isomap_points $N isomap swissroll:500 -k 10 -o "$T/pk0.npy" --quiet
ev0=$(grep -o '"eigenvalues": \[[^]]*\]' "$T/stdout")
expect_ok isomap_knn_graph $N isomap --knn "$T/pk.mtx" -o "$T/pk1.npy" --quiet
if [ -n "$ev0" ] && [ "$ev0" = "$(grep -o '"eigenvalues": \[[^]]*\]' "$T/stdout")" ]; then ok isomap_knn_graph_same
else bad isomap_knn_graph_same "$ev0 / $(cat "$T/stdout")"; fi
$N pca swissroll:500 -d 3 -o "$T/sr500.npy" --quiet > /dev/null 2>&1
/usr/bin/python3 -c "import numpy as np, sys; Y = np.load(sys.argv[1]).astype(np.float64); np.save(sys.argv[2], np.sqrt(((Y[:, None] - Y[None]) ** 2).sum(-1)).astype(np.float32))" "$T/sr500.npy" "$T/srd.npy" 2> /dev/null
expect_ok le_dense_distances $N le --distances "$T/srd.npy" -k 10 -o "$T/pdd.npy" --quiet
expect_ok le_dense_affinities $N le --affinities "$T/srd.npy" -o "$T/pda.npy" --components allow --quiet

# spectral clustering's model: the training points get their own labels back
expect_ok cluster_save_model $N cluster blobs:800:5:4 -c 4 -o "$T/cl.txt" --save-model "$T/cl.nle" --quiet
expect_ok cluster_transform $N transform "$T/cl.nle" blobs:800:5:4 -o "$T/cl2.txt" --quiet
if [ -s "$T/cl.txt" ] && cmp -s "$T/cl.txt" "$T/cl2.txt" && grep -q '"model_kind": "cluster"' "$T/stdout"; then
  ok cluster_transform_labels; else bad cluster_transform_labels "labels differ: $(cat "$T/stdout")"; fi

expect_ok le_entropic $N le swissroll:700 --affinity entropic -k 30 --perplexity 10 -o "$T/sm_lee.npy" --save-model "$T/sm_lee.nle" --quiet
expect_ok le_entropic_transform $N transform "$T/sm_lee.nle" swissroll:700 -o "$T/smt_lee.npy" --quiet
if /usr/bin/python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(not np.abs(a - b).max() <= 1e-6 * np.abs(a).max())" "$T/sm_lee.npy" "$T/smt_lee.npy" 2> /dev/null
then ok le_entropic_transform_training_points; else bad le_entropic_transform_training_points "the map of the training points is not the embedding"; fi
$N transform "$T/sm_diffmap.nle" swissroll:700 -o "$T/smt_diffmap.npy" --quiet > "$T/stdout" 2> /dev/null
if grep -q '"model_kind": "diffmap"' "$T/stdout" && grep -q '"map": "nystrom"' "$T/stdout"; then ok spectral_transform_json
else bad spectral_transform_json "$(cat "$T/stdout")"; fi

# ---- distance and kernel methods
same_arrays() { # same_arrays A B REL: the two .npy arrays agree to REL of their extent
  /usr/bin/python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(not (a.shape == b.shape and np.abs(a - b).max() <= float(sys.argv[3]) * np.abs(a).max()))" "$@" 2> /dev/null
}
/usr/bin/python3 -c "
import numpy as np, sys
rng = np.random.default_rng(0); Y = rng.standard_normal((60, 3)).astype(np.float32)
np.save(sys.argv[1] + '/mds_pts.npy', Y)
D = np.sqrt(((Y[:, None, :].astype(np.float64) - Y[None, :, :]) ** 2).sum(-1)); np.save(sys.argv[1] + '/mds_d.npy', D)" "$T"
expect_ok cmds_points $N cmds "$T/mds_pts.npy" -o "$T/cm1.npy" --quiet
ev_points=$(grep -o '"eigenvalues": \[[^]]*\]' "$T/stdout")
expect_ok cmds_distances $N cmds --distances "$T/mds_d.npy" -o "$T/cm2.npy" --quiet
if grep -q '"negative_eigenvalues": 0, "spectrum_complete": true' "$T/stdout" && same_arrays "$T/cm1.npy" "$T/cm2.npy" 1e-5; then
  ok cmds_points_equal_distances; else bad cmds_points_equal_distances "$ev_points / $(cat "$T/stdout")"; fi
for m in mds sammon nmds; do
  expect_ok "${m}_distances" $N $m --distances "$T/mds_d.npy" --starts 2 -o "$T/$m.npy" --quiet
  if grep -q '"starts": 2' "$T/stdout" && grep -q '"stress1": 0\.' "$T/stdout"; then ok "${m}_json"; else bad "${m}_json" "$(cat "$T/stdout")"; fi
done
expect_ok nmds_secondary $N nmds blobs:150:4:3 --ties secondary -o "$T/nm2.npy" --quiet
if grep -q '"ties": "secondary"' "$T/stdout"; then ok nmds_ties_json; else bad nmds_ties_json "$(cat "$T/stdout")"; fi
expect_ok lmds_model $N lmds swissroll:3000 --landmarks 100 -o "$T/lm.npy" --save-model "$T/lm.nle" --quiet
expect_ok lmds_transform $N transform "$T/lm.nle" swissroll:3000 -o "$T/lmt.npy" --quiet
if grep -q '"map": "triangulation"' "$T/stdout" && same_arrays "$T/lm.npy" "$T/lmt.npy" 1e-9; then ok lmds_transform_training
else bad lmds_transform_training "$(cat "$T/stdout")"; fi
for m in cmds kpca lda klda; do
  expect_ok "${m}_model" $N $m blobs:300:5:4 -o "$T/$m.npy" --save-model "$T/$m.nle" --quiet
  expect_ok "${m}_transform" $N transform "$T/$m.nle" blobs:300:5:4 -o "$T/${m}t.npy" --quiet
  if same_arrays "$T/$m.npy" "$T/${m}t.npy" 1e-6; then ok "${m}_transform_training"; else bad "${m}_transform_training" "$(cat "$T/stdout")"; fi
done
# all C - 1 = 3 axes (in 2-D the blobs overlap: scikit-learn's LDA scores 0.807 there too)
expect_ok lda_three_axes $N lda blobs:300:5:4 -d 3 -o "$T/lda3.npy" --quiet
expect_ok lda_separates $N metrics blobs:300:5:4 "$T/lda3.npy" -k 10 --quiet
if grep -q '"knn_accuracy": 0\.9[5-9]\|"knn_accuracy": 1\.0' "$T/stdout"; then ok lda_knn_accuracy; else bad lda_knn_accuracy "$(cat "$T/stdout")"; fi
# labels as classes (issue 34): 1..C as MATLAB ships them, -1 and gaps,
# names with a space: the same map as 0..C-1, the same scores, the values
# in the legend; a constant and a repeated feature need no ridge
expect_ok labels_saved $N pca blobs:300:5:4 -d 2 -o "$T/lb.npy" --save-labels "$T/l0.txt" --quiet
awk '{print $1 + 1}' "$T/l0.txt" > "$T/l1.txt"
awk '{print ($1 == 0 ? -1 : 7 * $1)}' "$T/l0.txt" > "$T/lneg.txt"
awk '{print "class " $1}' "$T/l0.txt" > "$T/lstr.txt"
expect_ok lda_labels_0 $N lda blobs:300:5:4 --labels "$T/l0.txt" -o "$T/ld0.npy" --quiet
expect_ok klda_labels_0 $N klda blobs:300:5:4 --labels "$T/l0.txt" -o "$T/kd0.npy" --quiet
for l in l1 lneg lstr; do
  expect_ok "lda_labels_$l" $N lda blobs:300:5:4 --labels "$T/$l.txt" -o "$T/ld_$l.npy" --quiet
  if same_arrays "$T/ld0.npy" "$T/ld_$l.npy" 0 && grep -q '"classes": 4' "$T/stdout"; then ok "lda_same_map_$l"
  else bad "lda_same_map_$l" "$(cat "$T/stdout")"; fi
  expect_ok "klda_labels_$l" $N klda blobs:300:5:4 --labels "$T/$l.txt" -o "$T/kd_$l.npy" --quiet
  if same_arrays "$T/kd0.npy" "$T/kd_$l.npy" 1e-9; then ok "klda_same_map_$l"; else bad "klda_same_map_$l" "differ"; fi
  expect_ok "metrics_labels_$l" $N metrics blobs:300:5:4 "$T/ld0.npy" --labels "$T/$l.txt" -k 10 --quiet
  if grep -q '"knn_accuracy": 0\.[89]' "$T/stdout"; then ok "metrics_knn_$l"; else bad "metrics_knn_$l" "$(cat "$T/stdout")"; fi
  expect_ok "cluster_labels_$l" $N cluster blobs:300:5:4 -c 4 --labels "$T/$l.txt" -o "$T/cl_$l.txt" --quiet
  if grep -q '"error_matched": 0\.00' "$T/stdout"; then ok "cluster_score_$l"; else bad "cluster_score_$l" "$(cat "$T/stdout")"; fi
  expect_ok "plot_labels_$l" $N plot "$T/ld0.npy" --labels "$T/$l.txt" -o "$T/pl_$l.svg" --quiet
done
# the values are kept for the output (the legends' names): saved labels come back as given
expect_ok labels_values_kept $N pca blobs:300:5:4 --labels "$T/lneg.txt" -o "$T/lv.npy" --save-labels "$T/lv.txt" --quiet
expect_ok labels_values_kept_npy $N pca blobs:300:5:4 --labels "$T/lneg.txt" -o "$T/lv.npy" --save-labels "$T/lv_s.npy" --quiet
if cmp -s "$T/lneg.txt" "$T/lv.txt" && /usr/bin/python3 -c "import numpy as np, sys; sys.exit(not (np.load(sys.argv[1]).ravel() == np.loadtxt(sys.argv[2])).all())" "$T/lv_s.npy" "$T/lneg.txt"
then ok labels_values_round_trip; else bad labels_values_round_trip "$(head -3 "$T/lv.txt")"; fi
if $N --help | grep -q "view is NOT IN THIS BUILD"; then
  echo "skipped view_legend_values: the tool was built without the viewer (tests/viewer.sh says so too)"
else # a 2-D map: the viewer refuses the 3 columns of ld0.npy
  $N pca blobs:300:5:4 -d 2 -o "$T/lv2.npy" --quiet > /dev/null
  expect_ok view_legend $N view "$T/lv2.npy" --labels "$T/lneg.txt" -o "$T/lneg.html" --quiet
  if grep -qF '"names": ["-1", "7", "14", "21"]' "$T/lneg.html"; then ok view_legend_values
  else bad view_legend_values "$(grep -o '"names": \[[^]]*\]' "$T/lneg.html")"; fi
fi
printf '1 2 5 1\n2 1 5 2\n3 3 5 3\n4 1 5 4\n1 4 5 1\n2 2 5 2\n' > "$T/rankdef.txt"
printf '1\n2\n1\n2\n1\n2\n' > "$T/rankdef_l.txt"
expect_ok lda_rank_deficient $N lda "$T/rankdef.txt" --labels "$T/rankdef_l.txt" -o "$T/rd.npy" --quiet
if grep -q '"rank": 2, "solver": "svd"' "$T/stdout"; then ok lda_rank_json; else bad lda_rank_json "$(cat "$T/stdout")"; fi
expect_ok kpca_sparse $N kpca swissroll:2000 --neighbors 30 -o "$T/kps.npy" --quiet
if grep -q '"sparse": true' "$T/stdout"; then ok kpca_sparse_json; else bad kpca_sparse_json "$(cat "$T/stdout")"; fi
# kernel eigenmaps: the map at the training points is the embedding (eq. 18),
# the inverse maps back near the data, the affine pencil is reported
# singular, and the same bits on 1 and 2 threads
expect_ok kem_model $N kem swissroll:1500 --kernels 32 -o "$T/kem.npy" --save-model "$T/kem.nle" --quiet
if grep -q '"variant": "reweighted"' "$T/stdout" && grep -q '"eigenvalues": \[1,' "$T/stdout"; then ok kem_json
else bad kem_json "$(cat "$T/stdout")"; fi
expect_ok kem_transform $N transform "$T/kem.nle" swissroll:1500 -o "$T/kemt.npy" --quiet
if grep -q '"map": "G(x)"' "$T/stdout" && same_arrays "$T/kem.npy" "$T/kemt.npy" 1e-9; then ok kem_transform_training
else bad kem_transform_training "$(cat "$T/stdout")"; fi
expect_ok kem_inverse $N transform "$T/kem.nle" --inverse "$T/kem.npy" -o "$T/kemi.npy" --quiet
if grep -q '"map": "G+(y)"' "$T/stdout" && /usr/bin/python3 -c "import numpy as np,sys; a=np.load(sys.argv[1]); assert a.shape == (1500, 3)" "$T/kemi.npy"
then ok kem_inverse_shape; else bad kem_inverse_shape "$(cat "$T/stdout")"; fi
expect_ok kem_affine $N kem swissroll:600 --variant affine --kernels 16 -o "$T/kema.npy" --quiet
if grep -q '"pencil_singular": true' "$T/stdout"; then ok kem_affine_singular; else bad kem_affine_singular "$(cat "$T/stdout")"; fi
expect_ok kem_lpp $N kem fashion-mnist:500 --lpp --variant affine --weights gaussian -o "$T/keml.npy" --quiet
expect_ok kem_local_pca $N kem fashion-mnist:800 --kernels 16 --local-dims 5 --plus-identity -o "$T/kemf.npy" --quiet
for t in 1 2; do $N kem fashion-mnist:1200 --kernels 24 --threads $t -o "$T/det_kem_$t.npy" --quiet > /dev/null; done
if [ -s "$T/det_kem_1.npy" ] && cmp -s "$T/det_kem_1.npy" "$T/det_kem_2.npy"; then ok threads_same_kem
else bad threads_same_kem "det_kem_1.npy and det_kem_2.npy differ or are missing"; fi
if $N kem --help | grep -q "Usage: nlembed kem" && $N kem --help | grep -qF "(default 80% of RAM)"; then ok help_kem
else bad help_kem "no usage"; fi
# Locally Linear Landmarks: LE and clustering on landmarks, the saved model
# maps the training points to their rows (x0 = X~ z0), a given kNN graph
# with the points gives the same embedding as the search
expect_ok lll_le $N le swissroll:2000 --landmarks 150 --kz 4 -o "$T/lll.npy" --save-model "$T/lll.nle" --quiet
if grep -q '"landmarks": 150, "kz": 4' "$T/stdout" && grep -q '"reconstruction_error": 0\.0' "$T/stdout"; then ok lll_json
else bad lll_json "$(cat "$T/stdout")"; fi
expect_ok lll_transform $N transform "$T/lll.nle" swissroll:2000 -o "$T/lllt.npy" --quiet
if grep -q '"map": "landmark weights"' "$T/stdout" && same_arrays "$T/lll.npy" "$T/lllt.npy" 1e-12; then ok lll_transform_training
else bad lll_transform_training "$(cat "$T/stdout")"; fi
expect_ok lll_knn_given $N knn swissroll:2000 -o "$T/lll_g.mtx" --quiet
expect_ok lll_points_and_graph $N le swissroll:2000 --knn "$T/lll_g.mtx" --landmarks 150 --kz 4 -o "$T/lllg.npy" --quiet
if same_arrays "$T/lll.npy" "$T/lllg.npy" 1e-12; then ok lll_points_and_graph_same; else bad lll_points_and_graph_same "differ"; fi
expect_ok lll_cluster $N cluster blobs:3000:5:4 -c 4 --landmarks 200 --landmark-method kmeans -o "$T/lllc.txt" --quiet
if grep -q '"warm_started": true' "$T/stdout" && grep -q '"error_matched": 0\.0' "$T/stdout"; then ok lll_cluster_json
else bad lll_cluster_json "$(cat "$T/stdout")"; fi
expect_ok lll_baseline $N le swissroll:2000 --landmarks 150 --landmark-graph -o "$T/lllz.npy" --quiet
if grep -q '"landmark_graph": true' "$T/stdout"; then ok lll_baseline_json; else bad lll_baseline_json "$(cat "$T/stdout")"; fi
if $N le --help | grep -q -- "--landmark-method M" && $N cluster --help | grep -q -- "--no-warm-start"; then ok help_lll
else bad help_lll "no LLL options in --help"; fi

for cmd in cmds mds sammon nmds lmds kpca lda klda; do
  if $N $cmd --help | grep -q "Usage: nlembed $cmd"; then ok "help_$cmd"; else bad "help_$cmd" "no usage"; fi
done
for cmd in pca knn affinity ee tee ssne tsne sne metrics plot transform le lle mlle ltsa hlle isomap diffmap cluster; do
  if $N $cmd --help | grep -q "Usage: nlembed $cmd"; then ok "help_$cmd"; else bad "help_$cmd" "no usage"; fi
done

# ---- readers: a byte-order mark, an ambiguous first row, a label column
# named in the header (taken with a note, usable by plot), metrics' order
printf '\xef\xbb\xbf1,2\n3,4\n5,7\n' > "$T/bom.csv"
expect_ok bom_skipped $N pca "$T/bom.csv" -d 1 -o "$T/bom.npy" --quiet
if grep -q '"n": 3' "$T/stdout"; then ok bom_rows; else bad bom_rows "$(cat "$T/stdout")"; fi
{ echo "a,b,c,label"; for i in $(seq 1 40); do echo "$i,$((i % 7)),$((i * i % 11)),$((i % 3))"; done; } > "$T/lab.csv"
expect_ok label_named_column $N pca "$T/lab.csv" -d 2 -o "$T/lab.npy" --save-labels "$T/lab_l.npy"
if grep -q 'column 4 ("label") taken as the labels' "$T/stderr" && grep -q '"D": 3' "$T/stdout"; then ok label_named_note
else bad label_named_note "$(cat "$T/stderr" "$T/stdout")"; fi
expect_ok label_column_none $N pca "$T/lab.csv" -d 2 -o "$T/lab4.npy" --label-column none --quiet
if grep -q '"D": 4' "$T/stdout"; then ok label_column_none_dim; else bad label_column_none_dim "$(cat "$T/stdout")"; fi
expect_ok plot_labels_from_data_file $N plot "$T/lab.npy" --labels "$T/lab.csv" -o "$T/lab.png" --quiet
expect_ok save_label_names $N pca fashion-mnist:200 -d 2 -o "$T/fm200.npy" --save-labels "$T/fm200_names.txt" --quiet
if head -1 "$T/fm200_names.txt" | grep -qx "Ankle boot" && [ "$(wc -l < "$T/fm200_names.txt")" -eq 200 ]; then
  ok save_label_names_text; else bad save_label_names_text "$(head -3 "$T/fm200_names.txt")"; fi
expect_ok plot_saved_names $N plot "$T/fm200.npy" --labels "$T/fm200_names.txt" -o "$T/fm200.png" --quiet

# ---- the same bits on 1 and 2 threads: every command's default path (the
# embeddings above 5,000 points and 100 dimensions, so with the PCA
# neighbour search, its re-ranking and the FFT engine). A property of the
# algorithms, checked on the optimised build; the ASan pass (run.sh sets
# CLI_SKIP_THREADS_SAME) leaves out these 40 runs, 2 of its 5 minutes.
if [ -z "${CLI_SKIP_THREADS_SAME:-}" ]; then
fm=fashion-mnist:5500
for t in 1 2; do
  $N pca $fm -d 2 --threads $t -o "$T/det_pca_$t.npy" --quiet > /dev/null
  $N knn $fm -k 10 --threads $t -o "$T/det_knn_$t.mtx" --quiet > /dev/null
  $N knn $fm -k 10 --method approx --threads $t -o "$T/det_knna_$t.mtx" --quiet > /dev/null
  $N affinity $fm -p 10 --threads $t -o "$T/det_aff_$t.mtx" --quiet > /dev/null
  $N tsne $fm --max-iters 100 --threads $t -o "$T/det_tsne_$t.npy" --save-model "$T/det_$t.nle" --quiet > /dev/null
  for m in tee ee ssne sne; do $N $m $fm --max-iters 20 --threads $t -o "$T/det_${m}_$t.npy" --quiet > /dev/null; done
  $N transform "$T/det_$t.nle" fashion-mnist:5600 --threads $t -o "$T/det_tr_$t.npy" --quiet > /dev/null
  $N metrics $fm "$T/det_tsne_$t.npy" --threads $t --quiet | sed 's/"seconds": [0-9.]*//' > "$T/det_met_$t.json"
  $N plot "$T/det_tsne_1.npy" --labels $fm --threads $t -o "$T/det_plot_$t.png" --quiet > /dev/null
  $N le $fm --threads $t -o "$T/det_le_$t.npy" --save-model "$T/det_le_$t.nle" --quiet > /dev/null
  $N transform "$T/det_le_$t.nle" fashion-mnist:5600 --threads $t -o "$T/det_letr_$t.npy" --quiet > /dev/null
  $N lle $fm --threads $t -o "$T/det_lle_$t.npy" --quiet > /dev/null
  $N cluster $fm -c 10 --threads $t -o "$T/det_cl_$t.txt" --quiet > /dev/null
  $N diffmap $fm --threads $t -o "$T/det_dm_$t.npy" --quiet > /dev/null
  $N hlle $fm --threads $t -o "$T/det_hlle_$t.npy" --quiet > /dev/null
  $N isomap fashion-mnist:1500 --threads $t -o "$T/det_iso_$t.npy" --quiet > /dev/null
  $N lda $fm --threads $t -o "$T/det_lda_$t.npy" --quiet > /dev/null
done
for f in lda_@.npy pca_@.npy knn_@.mtx knna_@.mtx aff_@.mtx tsne_@.npy tee_@.npy ee_@.npy ssne_@.npy sne_@.npy tr_@.npy met_@.json plot_@.png le_@.npy letr_@.npy lle_@.npy cl_@.txt dm_@.npy hlle_@.npy iso_@.npy; do
  a="$T/det_${f/@/1}" b="$T/det_${f/@/2}"
  if [ -s "$a" ] && cmp -s "$a" "$b"; then ok "threads_same_${f%%_@*}"
  else bad "threads_same_${f%%_@*}" "$(basename "$a") and $(basename "$b") differ or are missing"; fi
done
fi

# ---- a one-column file of class names, spaces and all
printf '0,0\n1,1\n2,2\n3,3\n' > "$T/names_emb.csv"
printf 'Ankle boot\nT-shirt/top\nAnkle boot\nBag\n' > "$T/names.txt"
expect_ok label_names_with_spaces $N plot "$T/names_emb.csv" --labels "$T/names.txt" -o "$T/names.svg" --quiet

# ---- JSON lines stay JSON whatever the file names
printf '1,2\n3,4\n5,7\n6,1\n' > "$T/q\"uo\\te.csv"
json_ok=1
for cmd in "pca -d 1" "knn -k 1"; do
  $N $cmd "$T/q\"uo\\te.csv" -o "$T/jq.npy" --quiet > "$T/jq.json" 2>/dev/null || json_ok=0
  /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['input'].endswith('q\"uo\\\\te.csv')" "$T/jq.json" 2>/dev/null || json_ok=0
done
if [ $json_ok = 1 ]; then ok json_escaped_names; else bad json_escaped_names "$(cat "$T/jq.json")"; fi

# ---- the README's library example compiles, links as the README says, and runs
libdir=$(dirname "$N")
san=""
case "$libdir" in *asan*) san="-fsanitize=address,undefined" ;; esac
sed -n '/^```c$/,/^```$/p' README.md | sed '1d;$d' > "$T/readme.c"
links=$(sed -n 's/^Link with `\(.*\)`.*/\1/p' README.md | sed "s#-lnlembed#$libdir/libnlembed.a#")
if cc -std=c11 $san -Iinclude "$T/readme.c" -o "$T/readme" $links 2> "$T/cc_err" && "$T/readme" > "$T/readme_out" 2>&1 \
  && grep -q "^5000 points, E [0-9.]*, 450 iterations" "$T/readme_out"; then ok readme_library_example
else bad readme_library_example "$(head -c 300 "$T/cc_err") $(head -c 300 "$T/readme_out" 2>/dev/null)"; fi

# ---- --metric: cosine is Euclidean on rows made unit, precomputed distances
# are the points' own, sparse rows are searched as the dense ones
/usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np, scipy.sparse as sp
T = sys.argv[1]
rng = np.random.default_rng(5)
Y = rng.normal(size=(240, 6)); Y[:, 0] += 2.0
np.save(f"{T}/mY.npy", Y.astype(np.float32))
U = Y / np.linalg.norm(Y, axis=1, keepdims=True)
np.save(f"{T}/mU.npy", U.astype(np.float32))
D = np.sqrt(((Y[:, None] - Y[None]) ** 2).sum(-1))
np.save(f"{T}/mD.npy", D.astype(np.float32))
S = sp.random(240, 400, density=0.03, random_state=7, format="csr", dtype=np.float64)
S = S + sp.csr_matrix((np.ones(240), (np.arange(240), rng.integers(0, 400, 240))), shape=(240, 400))
sp.save_npz(f"{T}/mS.npz", S.tocsr())
np.save(f"{T}/mSdense.npy", S.toarray().astype(np.float32))
PY
same_up_to_sign() { # two embeddings, column by column up to sign, within tol
  /usr/bin/python3 -c "
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = a.shape == b.shape and all(min(abs(a[:, j] - b[:, j]).max(), abs(a[:, j] + b[:, j]).max()) <= float(sys.argv[3]) * (1 + abs(a[:, j]).max()) for j in range(a.shape[1]))
sys.exit(0 if ok else 1)" "$1" "$2" "$3"
}
$N le "$T/mY.npy" --metric cosine -k 10 -o "$T/m_le_cos.npy" --quiet > /dev/null
$N le "$T/mU.npy" -k 10 -o "$T/m_le_unit.npy" --quiet > /dev/null
if same_up_to_sign "$T/m_le_cos.npy" "$T/m_le_unit.npy" 1e-5; then ok metric_cosine_is_unit_rows
else bad metric_cosine_is_unit_rows "le --metric cosine differs from le of the rows made unit"; fi
$N cmds "$T/mD.npy" --metric precomputed -o "$T/m_cmds_d.npy" --quiet > /dev/null
$N cmds "$T/mY.npy" -o "$T/m_cmds_y.npy" --quiet > /dev/null
if same_up_to_sign "$T/m_cmds_d.npy" "$T/m_cmds_y.npy" 1e-4; then ok metric_precomputed_cmds
else bad metric_precomputed_cmds "cmds of the distances differs from cmds of the points"; fi
$N isomap "$T/mD.npy" --metric precomputed -k 8 -o "$T/m_iso_d.npy" --quiet > /dev/null
$N isomap "$T/mY.npy" -k 8 -o "$T/m_iso_y.npy" --quiet > /dev/null
if same_up_to_sign "$T/m_iso_d.npy" "$T/m_iso_y.npy" 1e-4; then ok metric_precomputed_isomap
else bad metric_precomputed_isomap "isomap of the distances differs from isomap of the points"; fi
expect_ok metric_precomputed_tsne $N tsne "$T/mD.npy" --metric precomputed -p 10 --max-iters 100 -o "$T/m_ts_d.npy" --quiet
$N le "$T/mS.npz" --metric cosine -k 10 -o "$T/m_le_sparse.npy" --quiet > /dev/null
$N le "$T/mSdense.npy" --metric cosine -k 10 -o "$T/m_le_sdense.npy" --quiet > /dev/null
if same_up_to_sign "$T/m_le_sparse.npy" "$T/m_le_sdense.npy" 1e-4; then ok metric_sparse_cosine_as_dense
else bad metric_sparse_cosine_as_dense "le of the sparse rows differs from le of the same rows dense"; fi
expect_ok metric_sparse_tsne $N tsne "$T/mS.npz" --metric cosine -p 10 --max-iters 100 -o "$T/m_ts_s.npy" --quiet
# the search of sparse rows (or of precomputed distances) made before the
# library runs is kNN time, not reading time: knn_seconds is never 0.000
# for it, and total_seconds covers it (issue 34 item 13)
/usr/bin/python3 -c "
import sys, numpy as np, scipy.sparse as sp
sp.save_npz(sys.argv[1], sp.random(1500, 4000, density=0.03, random_state=3, format='csr', dtype=np.float32))" "$T/kt.npz"
# (counted once: read_seconds + total_seconds within the process's wall time)
for run in "tsne --max-iters 2 -p 10" "le" "cluster -c 3" "isomap --metric precomputed"; do
  input="$T/kt.npz"; [ "${run#isomap}" != "$run" ] && input="$T/mD.npy"
  # shellcheck disable=SC2086
  if /usr/bin/python3 -c "
import json, subprocess, sys, time
t = time.monotonic()
out = subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout
wall = time.monotonic() - t
print(out, wall)
j = json.loads(out)
sys.exit(0 if j['knn_seconds'] > 0 and j['total_seconds'] >= j['knn_seconds'] and
         j['read_seconds'] + j['total_seconds'] <= wall + 0.002 else 1)" $N $run "$input" -o "$T/kt_out.txt" --quiet > "$T/stdout"
  then ok "sparse_search_is_knn_time_${run%% *}"; else bad "sparse_search_is_knn_time_${run%% *}" "$(head -c 600 "$T/stdout")"; fi
done

# ---- knn --metric on sparse rows (searched sparse, never densified): the
# lists and squared distances of scikit-learn's brute-force search (cosine:
# 2 (1 - cos), correlation: 2 (1 - r), euclidean: d^2), the dense rows' lists
# under the same metric, approx against exact, the same bits at 1 and 2
# threads, a zero row refused by number
/usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np, scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors
T = sys.argv[1]
rng = np.random.default_rng(11)
S = sp.random(400, 300, density=0.04, random_state=3, format="csr", dtype=np.float64)
S = (S + sp.csr_matrix((rng.random(400) + 0.5, (np.arange(400), rng.integers(0, 300, 400))), shape=(400, 300))).tocsr()
S.sort_indices()
sp.save_npz(f"{T}/kS.npz", S)
np.save(f"{T}/kSdense.npy", S.toarray().astype(np.float32))
for metric in ("cosine", "correlation", "euclidean"):
    d, i = NearestNeighbors(n_neighbors=7, metric=metric, algorithm="brute").fit(S.toarray()).kneighbors(S.toarray())
    np.save(f"{T}/kref_{metric}_i.npy", i[:, 1:])
    np.save(f"{T}/kref_{metric}_d.npy", (d[:, 1:] ** 2 if metric == "euclidean" else 2 * d[:, 1:]))
Z = S.tolil()
Z[17, :] = 0
sp.save_npz(f"{T}/kZ.npz", Z.tocsr())
Y = rng.normal(size=(150, 4))
np.save(f"{T}/kY.npy", Y.astype(np.float32))
np.save(f"{T}/kD.npy", np.sqrt(((Y[:, None] - Y[None]) ** 2).sum(-1)).astype(np.float32))
PY
for metric in cosine correlation euclidean; do
  expect_ok "knn_sparse_$metric" $N knn "$T/kS.npz" --metric $metric -k 6 --method exact -o "$T/k_$metric.npy" \
    --distances "$T/k_${metric}_d.npy" --quiet
  if grep -q "\"metric\": \"$metric\", \"k\": 6, \"knn_method\": \"exact\"" "$T/stdout" &&
     grep -q "\"sparse\": true, \"nnz\": [0-9]*," "$T/stdout" &&
     /usr/bin/python3 -c "
import sys, numpy as np
T, m = sys.argv[1], sys.argv[2]
i, d = np.load(f'{T}/k_{m}.npy'), np.load(f'{T}/k_{m}_d.npy')
ri, rd = np.load(f'{T}/kref_{m}_i.npy'), np.load(f'{T}/kref_{m}_d.npy')
same = np.mean(i == ri)
sys.exit(0 if same > 0.99 and np.allclose(d, rd, rtol=1e-5, atol=1e-6) else 1)" "$T" $metric; then
    ok "knn_sparse_${metric}_vs_sklearn"
  else bad "knn_sparse_${metric}_vs_sklearn" "$(cat "$T/stdout")"; fi
done
$N knn "$T/kSdense.npy" --metric cosine -k 6 --method exact -o "$T/k_dense_cos.npy" --quiet > /dev/null
if /usr/bin/python3 -c "
import sys, numpy as np
sys.exit(0 if np.mean(np.load(sys.argv[1]) == np.load(sys.argv[2])) > 0.99 else 1)" "$T/k_dense_cos.npy" "$T/k_cosine.npy"
then ok knn_sparse_cosine_as_dense; else bad knn_sparse_cosine_as_dense "the dense rows' lists differ"; fi
for t in 1 2; do
  $N knn "$T/kS.npz" --metric cosine -k 6 --method exact --threads $t -o "$T/k_t$t.mtx" --quiet > /dev/null
  $N knn "$T/kS.npz" --metric cosine -k 6 --method approx --threads $t -o "$T/ka_t$t.mtx" --quiet > /dev/null
done
if cmp -s "$T/k_t1.mtx" "$T/k_t2.mtx" && cmp -s "$T/ka_t1.mtx" "$T/ka_t2.mtx"; then ok knn_sparse_threads_same_bits
else bad knn_sparse_threads_same_bits "1 and 2 threads differ"; fi
expect_ok knn_sparse_approx $N knn "$T/kS.npz" --metric cosine -k 6 --method approx -o "$T/k_approx.npy" --quiet
if /usr/bin/python3 -c "
import sys, numpy as np
a, e = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if np.mean([len(set(x) & set(y)) / 6 for x, y in zip(a, e)]) >= 0.9 else 1)" "$T/k_approx.npy" "$T/k_cosine.npy"
then ok knn_sparse_approx_recall; else bad knn_sparse_approx_recall "recall below 0.9"; fi
expect_fail knn_sparse_zero_row "row 17 of the data is all zeros: its cosine distance is undefined" "$T/kz.npy" -- \
  $N knn "$T/kZ.npz" --metric cosine -k 6 -o "$T/kz.npy"
expect_ok knn_sparse_zero_row_euclidean $N knn "$T/kZ.npz" -k 6 -o "$T/kz.npy" --quiet
$N knn "$T/kD.npy" --metric precomputed -k 5 -o "$T/k_pre.npy" --quiet > /dev/null
$N knn "$T/kY.npy" -k 5 --method exact -o "$T/k_pts.npy" --quiet > /dev/null
if /usr/bin/python3 -c "
import sys, numpy as np
sys.exit(0 if np.mean(np.load(sys.argv[1]) == np.load(sys.argv[2])) > 0.99 else 1)" "$T/k_pre.npy" "$T/k_pts.npy"
then ok knn_precomputed_as_points; else bad knn_precomputed_as_points "the distances' lists differ from the points'"; fi
expect_fail knn_distances_unnamed "symmetric matrix with a zero diagonal: give --metric precomputed" "$T/k_pre2.npy" -- \
  $N knn "$T/kD.npy" -k 5 -o "$T/k_pre2.npy"

for cmd in ee tee ssne tsne sne pca knn affinity metrics plot transform le lle mlle ltsa hlle isomap diffmap cluster; do
  if $N $cmd --help | grep -qF "(default 80% of RAM)"; then ok "help_percent_$cmd"; else bad "help_percent_$cmd" "$($N $cmd --help | grep -F max-memory)"; fi
done
if $N --help | grep -q "Commands:" && $N --version | grep -q '^nlembed [0-9]'; then ok help_and_version; else bad help_and_version "missing"; fi
# the command list: every method of the estimator (the first clause of its
# paragraph) and the tool's own commands; each one listed is a command
listed=$($N --help | sed -n '/^Commands:/,/^$/p' | awk '/^  [a-z]/ {print $1}')
missing=""
for cmd in tsne pca le cluster kem knn affinity transform metrics plot view; do
  printf '%s\n' $listed | grep -qx "$cmd" || missing="$missing $cmd"
done
for cmd in $listed; do $N $cmd --help | grep -q "^Usage: nlembed $cmd" || missing="$missing $cmd(no usage)"; done
if [ -z "$missing" ] && $N --help | grep -q '^  pca        Principal component analysis$'; then ok help_command_list
else bad help_command_list "missing:$missing"; fi
# the tool's own commands' --help: a line a row, with its default and values
if $N plot --help | grep -qE -- '--extent E +frame .* \(default bulk; bulk or all\)' &&
  $N plot --help | grep -qE -- '--width W +pixels \(default 1000\)' &&
  $N metrics --help | grep -qE -- '--subsample M +.*\(default 10000; 0: all\)' &&
  $N transform --help | grep -qE -- '--repulsion NAME +.*\(default auto; auto, exact, fft or fgt\)'; then ok help_tool_rows
else bad help_tool_rows "$($N plot --help | grep -E -- '--(extent|width)')"; fi
# --help names every input the readers take (issue 34 item 12): the formats
# of docs/formats.md's input table, and each such file read as --help says
missing=""
for word in CSV .npy .npz save_npz IDX "Matrix Market" .mtx HDF5 .h5ad "10x .h5" MATLAB .mat "10x" gzip FILE:NAME; do
  $N --help | grep -qF -- "$word" || missing="$missing '$word'"
done
for row in text "NumPy \`.npy\`" IDX "Matrix Market" gzip "HDF5, AnnData" "NumPy \`.npz\`" "MATLAB \`.mat\`" "10x Genomics folder"; do
  grep -q "^| $row " docs/formats.md || missing="$missing (docs/formats.md has no row '$row': keep this list and --help in step)"
done
if [ -z "$missing" ]; then ok help_lists_inputs; else bad help_lists_inputs "--help lacks$missing"; fi

# issue 34: valid small magnitudes run (a range refuses only what cannot work). Below the critical lambda the
# minimiser of E is X = 0 (EE paper sec. 4.2): the map shrinks well below its 1e-4 start, and stays finite.
expect_ok ee_lambda_tiny $N ee swissroll:300 -p 10 --lambda 1e-20 --max-iters 50 -o "$T/lt.npy" --quiet
if /usr/bin/python3 -c "
import json, sys, numpy as np
X = np.load('$T/lt.npy'); line = json.loads(open('$T/stdout').read())
assert np.isfinite(X).all() and line['lambda'] == 1e-20 and np.isfinite(line['E'])
assert line['map_extent'] < 1e-5, line['map_extent']"; then ok ee_lambda_tiny_collapses; else bad ee_lambda_tiny_collapses "$(cat "$T/stdout")"; fi
# the EE reference case's homotopy start (1e-4 over the sum of its squared distances) on raw squared distances
expect_ok ee_lambda_start_tiny $N ee spiral:300 -p 10 --wneg sqdist --homotopy 3 --lambda-start 2.8e-18 --lambda 1e-4 \
  --max-iters 30 -o "$T/ls.npy" --quiet
if /usr/bin/python3 -c "
import json, numpy as np
X = np.load('$T/ls.npy'); line = json.loads(open('$T/stdout').read())
assert np.isfinite(X).all() and X.std() > 0 and line['lambda_start'] == 2.8e-18 and np.isfinite(line['E'])"
then ok ee_lambda_start_tiny_finite; else bad ee_lambda_start_tiny_finite "$(cat "$T/stdout")"; fi
# a start so small its gradient is below the optimiser's tolerance: it runs, and says why the map did not move
if $N ee swissroll:300 -p 10 --init-scale 1e-30 -o "$T/is.npy" 2> "$T/is.err" > /dev/null &&
  grep -qF "warning: the optimiser stopped at its start: at --init-scale 1e-30 the gradient is below its tolerance" "$T/is.err"
then ok ee_init_scale_tiny_warns; else bad ee_init_scale_tiny_warns "$(cat "$T/is.err")"; fi
# the automatic k = 3 x perplexity is at most N - 1, as scikit-learn's TSNE: perplexity 30 on 60 points runs
expect_ok tsne_auto_k_capped $N tsne spiral:60 -o "$T/k60.npy" --quiet
if grep -q '"k": 59' "$T/stdout"; then ok tsne_auto_k_is_n_minus_1; else bad tsne_auto_k_is_n_minus_1 "$(cut -c1-200 "$T/stdout")"; fi
# the model-selection sweep: the best cell's labels out (no embedding), the grid in the JSON line,
# the dataset's labels saved beside
expect_ok cluster_sweep $N cluster blobs:300:5:3 -c 3 --sweep-sigma 1:8:3 --sweep-k 5:20:2 -o "$T/sweep.csv" \
  --save-labels "$T/sweep_truth.csv" --quiet
if [ "$(wc -l < "$T/sweep.csv")" -eq 300 ] && [ "$(wc -l < "$T/sweep_truth.csv")" -eq 300 ] && grep -qF '"cells": [' "$T/stdout"
then ok cluster_sweep_outputs; else bad cluster_sweep_outputs "$(wc -l "$T/sweep.csv" "$T/sweep_truth.csv"; cut -c1-200 "$T/stdout")"; fi
# one rule between k and the perplexity, whichever is given: -k 24 alone is perplexity 8
expect_ok tsne_k_given $N tsne spiral:200 -k 24 --max-iters 5 -o "$T/k24.npy" --quiet
if grep -q '"perplexity": 8, "k": 24' "$T/stdout"; then ok tsne_perplexity_from_k; else bad tsne_perplexity_from_k "$(cut -c1-300 "$T/stdout")"; fi

finish
