#!/usr/bin/env bash
# viewer.sh — `nlembed view` end to end: the page it writes, opened in a real
# browser (Debian's chromium, headless, software WebGL, driven by
# playwright-core from viewer/node_modules: tests/viewer/view.mjs), then its
# bad input. Needs the tool built with the viewer (./setup.sh build with node
# and npm) and chromium (a test package of setup.sh); without them the
# browser checks fail and say why.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# ---- fixtures: a t-SNE of 500 points in 5 clusters, their labels, and images
# made with numpy (whole values in 0-255, which the page shows as they are):
# 8 x 8 grey and 4 x 4 RGB; class names for a second page.
$N tsne blobs:500:10:5 -p 20 -o "$T/emb.npy" --save-labels "$T/lab.npy" --quiet > /dev/null 2>&1 \
  || bad fixtures "nlembed tsne failed"
/usr/bin/python3 - "$T" <<'PY' || bad fixtures "the fixture script failed (python3-numpy is a test package)"
import json, sys
import numpy as np
d = sys.argv[1]
lab = np.load(d + "/lab.npy").astype(int).ravel()
rng = np.random.default_rng(5)
grey = rng.integers(0, 256, size=(500, 64)).astype(np.float32)
rgb = rng.integers(0, 256, size=(500, 48)).astype(np.float32)
np.save(d + "/grey.npy", grey)
np.save(d + "/rgb.npy", rgb)
names = ["Ankle boot", "Bag", "Coat & <tie>", "Dress", "T-shirt/top"]
with open(d + "/names.txt", "w") as f:
    f.write("".join(names[c] + "\n" for c in lab))
# string labels are numbered in sorted order (docs/formats.md)
json.dump({"labels": lab.tolist(), "images": grey.astype(int).tolist(), "names": sorted(names),
           "name_labels": lab.tolist(), "rgb": rgb.astype(int).tolist()}, open(d + "/expect.json", "w"))
wide = (np.arange(500) * 7) % 300  # 300 classes: uint16 codes in the page
np.save(d + "/wide.npy", wide.astype(np.int32))
e = json.load(open(d + "/expect.json"))
e["wide_labels"] = wide.tolist()
json.dump(e, open(d + "/expect.json", "w"))
np.save(d + "/emb3.npy", np.zeros((500, 3)))
np.save(d + "/lab499.npy", lab[:499])
np.save(d + "/img10.npy", np.zeros((500, 10), np.float32))
np.save(d + "/img499.npy", grey[:499])
# a square grid (where its points must be drawn follows from the plot's size
# alone), and the t-SNE with 3 points 8 extents away from its centre: beyond
# the bulk across x alone, y alone, and both
g = np.linspace(0, 3, 31)
gx, gy = np.meshgrid(g, g)
np.save(d + "/grid.npy", np.c_[gx.ravel(), gy.ravel()])
emb = np.load(d + "/emb.npy")
lo, hi = emb.min(0), emb.max(0)
far = (lo + hi) / 2 + 8 * (hi - lo).max() * np.array([[1, 0], [0, -1], [-0.7, 0.7]])
np.save(d + "/outliers.npy", np.r_[emb, far])
np.save(d + "/outliers_lab.npy", np.r_[lab, [0, 1, 2]].astype(np.int32))
PY

# ---- good runs
expect_ok view_page $N view "$T/emb.npy" --labels "$T/lab.npy" --images "$T/grey.npy" -o "$T/page.html" --quiet
if head -1 "$T/page.html" | grep -q '^<!DOCTYPE html>' && grep -q '"images": {"source": "[^"]*grey.npy", "width": 8, "height": 8, "channels": 1}' "$T/page.html" \
  && grep -q '"type": "uint8", "classes": 5' "$T/page.html"; then ok view_page_header
else bad view_page_header "$(head -c 600 "$T/page.html" | tr '\n' ' ')"; fi
expect_ok view_names $N view "$T/emb.npy" --labels "$T/names.txt" --images "$T/rgb.npy" --title 'A <title> & "quotes"' \
  -o "$T/names.html" --quiet
# the names reach the page's JSON escaped, never as markup
if grep -qF '"Coat \u0026 \u003ctie\u003e"' "$T/names.html" && grep -qF '<title>A &lt;title&gt; &amp; &quot;quotes&quot;</title>' "$T/names.html" \
  && ! grep -qF '<tie>' "$T/names.html"; then ok view_names_escaped
else bad view_names_escaped "$(grep -o '"names": \[[^]]*\]' "$T/names.html" | head -c 300)"; fi
expect_ok view_wide_labels $N view "$T/emb.npy" --labels "$T/wide.npy" -o "$T/wide.html" --quiet
if grep -q '"type": "uint16", "classes": 300' "$T/wide.html"; then ok view_wide_labels_uint16
else bad view_wide_labels_uint16 "$(grep -o '"labels": {[^}]*}' "$T/wide.html")"; fi
expect_ok view_no_labels $N view "$T/emb.npy" -o "$T/plain.html" --quiet
if grep -q '"labels": null, "images": null' "$T/plain.html" && ! grep -q 'id="nle-labels"' "$T/plain.html"; then ok view_no_labels_page
else bad view_no_labels_page "$(head -c 600 "$T/plain.html" | tr '\n' ' ')"; fi
# --labels and --images naming one dataset: read once, the same labels
expect_ok view_same_source $N view "$T/emb.npy" --labels blobs:500:16:5 --images blobs:500:16:5 -o "$T/same.html" --quiet
$N view "$T/emb.npy" --labels blobs:500:16:5 -o "$T/same_labels.html" --quiet > /dev/null 2>&1
if [ "$(grep -o 'id="nle-labels"[^<]*' "$T/same.html")" = "$(grep -o 'id="nle-labels"[^<]*' "$T/same_labels.html")" ] \
  && grep -q '"width": 4, "height": 4, "channels": 1' "$T/same.html"; then ok view_same_source_labels
else bad view_same_source_labels "the labels differ from --labels alone"; fi
# the positions, decoded from the page's base64, are the embedding in float32
/usr/bin/python3 - "$T" <<'PY' && ok view_positions_exact || bad view_positions_exact "positions in the page differ from the embedding"
import base64, re, sys
import numpy as np
d = sys.argv[1]
html = open(d + "/page.html").read()
xy = np.frombuffer(base64.b64decode(re.search(r'id="nle-xy"[^>]*>([^<]*)<', html).group(1)), "<f4").reshape(-1, 2)
lab = np.frombuffer(base64.b64decode(re.search(r'id="nle-labels"[^>]*>([^<]*)<', html).group(1)), "u1")
img = np.frombuffer(base64.b64decode(re.search(r'id="nle-images"[^>]*>([^<]*)<', html).group(1)), "u1").reshape(500, 64)
assert np.array_equal(xy, np.load(d + "/emb.npy").astype(np.float32))
assert np.array_equal(lab, np.load(d + "/lab.npy").ravel())
assert np.array_equal(img, np.load(d + "/grey.npy").astype(np.uint8))
PY

expect_ok view_grid $N view "$T/grid.npy" -o "$T/grid.html" --quiet
expect_ok view_outliers $N view "$T/outliers.npy" --labels "$T/outliers_lab.npy" -o "$T/outliers.html" --quiet

# ---- in the browser
if ! command -v node > /dev/null; then bad browser "node is not installed (./setup.sh installs it)"
elif [ ! -d viewer/node_modules/playwright-core ]; then bad browser "viewer/node_modules lacks playwright-core (npm ci in viewer/, as ./setup.sh does)"
elif [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then bad browser "no chromium (Debian's package chromium, a test package of ./setup.sh)"
else
  # the arithmetic under node, the page driven by playwright, then plain
  # `chromium --headless --screenshot`
  for script in units view screenshot; do
    node tests/viewer/$script.mjs "$T" > "$T/browser.out" 2>&1
    rc=$?
    while read -r line; do
      case "$line" in
        "ok "*) ok "${line#ok }" ;;
        "FAIL "*) name=${line#FAIL }; bad "${name%%:*}" "${name#*: }" ;;
      esac
    done < "$T/browser.out"
    if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$T/browser.out"; then bad "browser_$script" "exit $rc: $(tail -c 600 "$T/browser.out")"; fi
  done
fi

# ---- bad input: a non-zero exit, one line, no page left behind
p=$T/bad.html
expect_fail view_labels_count "emb.npy has 500 rows, --labels $T/lab499.npy has 499" "$p" -- \
  $N view "$T/emb.npy" --labels "$T/lab499.npy" -o "$p"
expect_fail view_images_count "emb.npy has 500 rows, --images $T/img499.npy has 499" "$p" -- \
  $N view "$T/emb.npy" --images "$T/img499.npy" -o "$p"
expect_fail view_images_not_square "rows of 10 values are not square images (w*w grey or w*w*3 RGB)" "$p" -- \
  $N view "$T/emb.npy" --images "$T/img10.npy" -o "$p"
expect_fail view_three_columns "emb3.npy has 3 columns; the viewer shows a 2-D embedding" "$p" -- \
  $N view "$T/emb3.npy" -o "$p"
printf '1,2\n3,nan\n5,6\n' > "$T/nan.csv"
expect_fail view_nan "nan.csv: line 2, field 2: NaN" "$p" -- $N view "$T/nan.csv" -o "$p"
expect_fail view_missing_file "nope.npy: cannot open" "$p" -- $N view "$T/nope.npy" -o "$p"
expect_fail view_missing_labels "nope.txt: cannot open" "$p" -- $N view "$T/emb.npy" --labels "$T/nope.txt" -o "$p"
expect_fail view_unwritable "$T/no/such/dir/page.html" - -- $N view "$T/emb.npy" -o "$T/no/such/dir/page.html"
expect_fail view_extension "the page is written as .html or .htm" "$T/bad.png" -- $N view "$T/emb.npy" -o "$T/bad.png"
expect_fail view_no_output "no output file" - -- $N view "$T/emb.npy"
if $N view --help | grep -qF "(default 80% of RAM)" && $N --help | grep -q '^  view ' && ! $N --help | grep -q 'NOT IN THIS BUILD'
then ok view_help
else bad view_help "$($N view --help | head -3)"; fi

# ---- the tool as a build without node makes it (no page script): the build
# says so, `nlembed --help` says so next to view, and view refuses. Linked by
# the Makefile's build/nlembed-noviewer from the objects of build/nlembed.
if [ "$(realpath "$N")" = "$(realpath build/nlembed)" ]; then
  rm -f build/nlembed-noviewer
  make -s build/nlembed-noviewer > "$T/make.out" 2>&1
  if grep -q "make: note: build/nlembed-noviewer is built without its viewer" "$T/make.out" \
    && build/nlembed-noviewer --help | grep -A3 '^  view ' | grep -q 'NOT IN THIS BUILD: the tool was built without node and npm'
  then ok view_noviewer_build_says_so
  else bad view_noviewer_build_says_so "$(head -c 400 "$T/make.out")"; fi
  expect_fail view_noviewer_refuses "built without the viewer: run ./setup.sh build" "$T/nv.html" -- \
    build/nlembed-noviewer view "$T/emb.npy" -o "$T/nv.html"
else
  echo "skip view_noviewer_build_says_so: NLEMBED is not build/nlembed"
fi

finish
