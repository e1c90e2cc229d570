#!/usr/bin/python3
"""lda_sklearn.py — nlembed's LDA beside scikit-learn's
LinearDiscriminantAnalysis (solver "svd", its default) on load_digits
(1,797 points, 64 pixels of which 3 are always blank: rank-deficient),
side by side in one run: the transform (max |difference| after aligning
each axis's sign), explained_variance_ratio_, predict (accuracy of each,
agreement), predict_proba; through the Python package and the tool; and the
tool's map from labels 1..10 and from string labels against 0..9's.

Usage (from the repository root, after make):
  /usr/bin/python3 bench/lda_sklearn.py
  SMOKE=1 /usr/bin/python3 bench/lda_sklearn.py   # 300 points, seconds; exits 1 on a gross mismatch
NLEMBED (the tool, default build/nlembed) and NLEMBED_LIBRARY (default
build/libnlembed.so) say which build."""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "python"))
os.environ.setdefault("NLEMBED_LIBRARY", os.path.join(root, "build", "libnlembed.so"))
import nlembed  # noqa: E402

tool = os.environ.get("NLEMBED", os.path.join(root, "build", "nlembed"))
smoke = os.environ.get("SMOKE") == "1"

X, y = load_digits(return_X_y=True)
if smoke:
    X, y = X[:300], y[:300]
X = X.astype(np.float32).astype(np.float64)  # the library reads points as float32: the same numbers for both
n, D = X.shape
C = len(np.unique(y))
print(f"load_digits{' (SMOKE: first 300)' if smoke else ''}: {n} points, D = {D}, C = {C}, "
      f"rank of the centred data {np.linalg.matrix_rank(X - X.mean(0))}")


def aligned_diff(ours, theirs):
    signs = np.sign(np.sum(ours * theirs, axis=0))
    signs[signs == 0] = 1
    return np.abs(ours * signs - theirs).max()


t = time.time()
sk = LinearDiscriminantAnalysis().fit(X, y)
Zs = sk.transform(X)
pred_s = sk.predict(X)
t_sk = time.time() - t
t = time.time()
ours = nlembed.LDA(n_jobs=1).fit(X, y)
Zo = ours.transform(X)
pred_o = ours.predict(X)
t_ours = time.time() - t

figures = {
    "n_components": (ours.embedding_.shape[1], Zs.shape[1]),
    "transform_max_abs_diff": aligned_diff(Zo, Zs),
    "embedding_max_abs_diff": aligned_diff(ours.embedding_, Zs),
    "transform_extent": np.abs(Zs).max(),
    "evr_max_abs_diff": np.abs(ours.explained_variance_ratio_ - sk.explained_variance_ratio_).max(),
    "accuracy": ((pred_o == y).mean(), (pred_s == y).mean()),
    "prediction_agreement": (pred_o == pred_s).mean(),
    "proba_max_abs_diff": np.abs(ours.predict_proba(X) - sk.predict_proba(X)).max(),
}
print(f"python: nlembed.LDA {t_ours:.3f} s, scikit-learn {t_sk:.3f} s (fit, transform, predict)")
print(f"  n_components (default)        nlembed {figures['n_components'][0]}  sklearn {figures['n_components'][1]}")
print(f"  transform  max |diff| (signs aligned) {figures['transform_max_abs_diff']:.3e} "
      f"(embedding_ {figures['embedding_max_abs_diff']:.3e}; the map's extent {figures['transform_extent']:.2f})")
print(f"  explained_variance_ratio_ max |diff| {figures['evr_max_abs_diff']:.3e}")
print(f"  predict accuracy (training)   nlembed {figures['accuracy'][0]:.6f}  sklearn {figures['accuracy'][1]:.6f}  "
      f"agreement {figures['prediction_agreement']:.6f}")
print(f"  predict_proba max |diff|      {figures['proba_max_abs_diff']:.3e}")

# the tool: labels 0..9, 1..10 (.npy int64) and strings (text) give one map
with tempfile.TemporaryDirectory(prefix="lda-bench-") as d:
    np.save(f"{d}/X.npy", X.astype(np.float32))
    np.save(f"{d}/y0.npy", y)
    np.save(f"{d}/y1.npy", y + 1)
    with open(f"{d}/ys.txt", "w") as f:
        f.write("".join(f"digit {v}\n" for v in y))
    maps = {}
    for name in ("y0.npy", "y1.npy", "ys.txt"):
        t = time.time()
        line = subprocess.run([tool, "lda", f"{d}/X.npy", "--labels", f"{d}/{name}", "-d", str(C - 1), "-o",
                               f"{d}/{name}.out.npy", "--quiet", "--threads", "1"],
                              check=True, capture_output=True, text=True).stdout
        maps[name] = (np.load(f"{d}/{name}.out.npy"), time.time() - t, json.loads(line))
    base = maps["y0.npy"][0]
    tool_diff = aligned_diff(base, Zs)
    print(f"tool: nlembed lda -d {C - 1}: {maps['y0.npy'][1]:.3f} s (whole command), solver "
          f"{maps['y0.npy'][2].get('solver')}, rank {maps['y0.npy'][2].get('rank')}; "
          f"max |diff| from scikit-learn's transform {tool_diff:.3e}")
    same = {name: np.abs(maps[name][0] - base).max() for name in ("y1.npy", "ys.txt")}
    print(f"  labels 1..10 vs 0..9: max |diff| {same['y1.npy']:.3e}; strings vs 0..9: {same['ys.txt']:.3e}")

if smoke:
    bad = []
    if figures["transform_max_abs_diff"] > 1e-6 * figures["transform_extent"] or tool_diff > 1e-6 * figures["transform_extent"]:
        bad.append("transform")
    if figures["prediction_agreement"] < 1.0:
        bad.append("predict")
    if max(same.values()) > 0:
        bad.append("labels")
    if bad:
        print("SMOKE: mismatch in " + ", ".join(bad))
        sys.exit(1)
    print("SMOKE: ok")
