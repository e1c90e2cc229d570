#!/usr/bin/python3
"""sklearn_side_by_side.py — nlembed's Python estimators beside
scikit-learn's on the same data, in one run:

* SpectralClustering(affinity="nearest_neighbors"): the adjusted Rand index
  of nlembed's labels against scikit-learn's and against the truth, on a few
  data sets (load_digits, iris, wine, blobs, two moons, concentric circles);
* TSNE: kl_divergence_ against scikit-learn's on load_digits (the issue's
  bar: within 10%), 10-NN accuracy of both maps and their times.

  PYTHONPATH=python NLEMBED_LIBRARY=build/libnlembed.so bench/sklearn_side_by_side.py
  SMOKE=1 ...   (seconds: small subsets, short runs; checks that it runs)
"""

import os
import time
import warnings

import numpy as np
from sklearn import cluster, datasets, manifold
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

import nlembed

SMOKE = os.environ.get("SMOKE") == "1"
THREADS = int(os.environ.get("THREADS", "2"))
warnings.simplefilter("ignore")  # scikit-learn's "graph is not fully connected" and the like


def data_sets():
    digits = datasets.load_digits()
    iris = datasets.load_iris()
    wine = datasets.load_wine()
    blobs = datasets.make_blobs(1000, 10, centers=6, cluster_std=2.0, random_state=0)
    moons = datasets.make_moons(1000, noise=0.06, random_state=0)
    circles = datasets.make_circles(1000, noise=0.04, factor=0.5, random_state=0)
    sets = [("load_digits", digits.data, digits.target), ("iris", iris.data, iris.target),
            ("wine (standardised)", StandardScaler().fit_transform(wine.data), wine.target),
            ("blobs 1000 x 10, 6", blobs[0], blobs[1]), ("two moons", moons[0], moons[1]),
            ("circles", circles[0], circles[1])]
    if SMOKE:
        sets = [(name, X[:200], y[:200]) for name, X, y in sets[:2]]
    return sets


def spectral_clustering():
    print("SpectralClustering(affinity='nearest_neighbors', n_neighbors=10), k = the classes")
    print(f"{'data':22} {'N':>5} {'ARI ours/sklearn':>16} {'ARI ours/truth':>14} {'ARI sklearn/truth':>17} "
          f"{'ours s':>7} {'sklearn s':>9}")
    for name, X, y in data_sets():
        k = len(np.unique(y))
        t = time.perf_counter()
        ours = nlembed.SpectralClustering(k, affinity="nearest_neighbors", n_neighbors=10, n_jobs=THREADS,
                                          random_state=0).fit(X).labels_
        t_ours = time.perf_counter() - t
        t = time.perf_counter()
        theirs = cluster.SpectralClustering(k, affinity="nearest_neighbors", n_neighbors=10, random_state=0,
                                            n_jobs=THREADS).fit(X).labels_
        t_theirs = time.perf_counter() - t
        print(f"{name:22} {len(X):5d} {adjusted_rand_score(theirs, ours):16.3f} {adjusted_rand_score(y, ours):14.3f} "
              f"{adjusted_rand_score(y, theirs):17.3f} {t_ours:7.2f} {t_theirs:9.2f}")


def tsne_kl():
    digits = datasets.load_digits()
    X, y = digits.data, digits.target
    if SMOKE:
        X, y = X[:300], y[:300]
    iters = {"max_iter": 300} if SMOKE else {}
    print(f"\nTSNE on load_digits ({len(X)} x {X.shape[1]}), defaults, {THREADS} threads")
    t = time.perf_counter()
    ours = nlembed.TSNE(n_jobs=THREADS, **iters)
    E = ours.fit_transform(X)
    t_ours = time.perf_counter() - t
    t = time.perf_counter()
    theirs = manifold.TSNE(init="pca", learning_rate="auto", random_state=0, n_jobs=THREADS,
                           **({"n_iter": 300} if SMOKE else {}))
    F = theirs.fit_transform(X)
    t_theirs = time.perf_counter() - t
    acc = [cross_val_score(KNeighborsClassifier(10), M, y, cv=5).mean() for M in (E, F)]
    ratio = ours.kl_divergence_ / theirs.kl_divergence_
    print(f"{'':10} {'KL':>7} {'objective E':>11} {'10-NN':>6} {'seconds':>8}  engine")
    print(f"{'nlembed':10} {ours.kl_divergence_:7.3f} {ours.objective_:11.3f} {acc[0]:6.3f} {t_ours:8.2f}  "
          f"{ours.report_['options']['repulsion']}")
    print(f"{'sklearn':10} {theirs.kl_divergence_:7.3f} {'':>11} {acc[1]:6.3f} {t_theirs:8.2f}  {theirs.method}")
    print(f"KL ratio nlembed / sklearn: {ratio:.3f} ({'within' if abs(ratio - 1) <= 0.1 else 'NOT within'} 10%)")


if __name__ == "__main__":
    print(f"# nlembed {nlembed.library_version()} ({nlembed.library_path}) beside scikit-learn; "
          f"{time.strftime('%Y-%m-%d', time.gmtime())}{' (SMOKE)' if SMOKE else ''}")
    spectral_clustering()
    tsne_kl()
