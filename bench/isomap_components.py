"""isomap_components.py — Isomap on disconnected neighbourhood graphs, nlembed
beside scikit-learn, measured in the same run.

nlembed joins the components by the shortest edges between them (their
minimum spanning tree: c - 1 edges) and warns; scikit-learn's Isomap joins
every pair of components by its closest pair (c (c - 1) / 2 edges) and
warns. For each data set: both runs' warnings, the edges nlembed added, the
seconds, and the 10-NN accuracy (5-fold, stratified) of the 2-D maps and their
trustworthiness (10 neighbours).

  /usr/bin/python3 bench/isomap_components.py            full sizes
  SMOKE=1 /usr/bin/python3 bench/isomap_components.py    small, a few seconds

NLEMBED names the tool (default build/nlembed).
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.manifold import Isomap, trustworthiness
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier

SMOKE = os.environ.get("SMOKE") == "1"
TOOL = os.environ.get("NLEMBED", "build/nlembed")


def rolls(per, seed=0):
    """Three Swiss rolls, 60 units apart: three components at small k."""
    rng = np.random.default_rng(seed)
    parts, labels = [], []
    for c in range(3):
        t = 1.5 * np.pi * (1 + 2 * rng.uniform(size=per))
        h = 20 * rng.uniform(size=per)
        parts.append(np.c_[t * np.cos(t), h, t * np.sin(t)] + [60.0 * c, 0, 0])
        labels.append(np.full(per, c))
    return np.vstack(parts), np.concatenate(labels)


def accuracy(E, y):
    return cross_val_score(KNeighborsClassifier(10), E, y, cv=5).mean()


def run_nlembed(X, k, tmp):
    src, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "e.npy")
    np.save(src, X.astype(np.float32))
    t0 = time.perf_counter()
    p = subprocess.run([TOOL, "isomap", src, "-k", str(k), "-d", "2", "--threads", "1", "-o", out],
                       capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if p.returncode:
        return None, p.stderr.strip().splitlines()[-1], None, seconds
    info = json.loads(p.stdout.strip().splitlines()[-1])
    warn = [l for l in p.stderr.splitlines() if "warning:" in l]
    return np.load(out), warn[0] if warn else "(no warning)", info, seconds


def run_sklearn(X, k):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        E = Isomap(n_neighbors=k, n_components=2).fit_transform(X)
        seconds = time.perf_counter() - t0
    text = [str(w.message) for w in caught if "connected" in str(w.message)]
    return E, text[0] if text else "(no warning)", seconds


def main():
    digits, labels = load_digits(return_X_y=True)
    if SMOKE:
        digits, labels = digits[:600], labels[:600]
    cases = [("digits k=4", digits, labels, 4),
             ("digits k=2", digits, labels, 2),
             ("3 Swiss rolls k=8", *rolls(150 if SMOKE else 600), 8)]
    print(f"nlembed {TOOL} vs scikit-learn Isomap, 2-D maps, one thread")
    with tempfile.TemporaryDirectory() as tmp:
        for name, X, y, k in cases:
            E, warn, info, sec = run_nlembed(X, k, tmp)
            S, swarn, ssec = run_sklearn(X, k)
            print(f"\n{name}: N = {len(X)}, D = {X.shape[1]}")
            if E is None:
                print(f"  nlembed      failed: {warn}")
            else:
                print(f"  nlembed      {info['components']} components, {info['joined_edges']} edges added, "
                      f"{sec:.2f} s, 10-NN accuracy {accuracy(E, y):.3f}, "
                      f"trustworthiness {trustworthiness(X, E, n_neighbors=10):.3f}")
                print(f"               {warn}")
            print(f"  scikit-learn {ssec:.2f} s, 10-NN accuracy {accuracy(S, y):.3f}, "
                  f"trustworthiness {trustworthiness(X, S, n_neighbors=10):.3f}")
            print(f"               warning: {swarn}")
            if E is None:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
