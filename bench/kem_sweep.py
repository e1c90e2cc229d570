"""kem_sweep.py — the measurement behind kernel eigenmaps' default basis
(docs/kem.md, "The default basis"), for bench/kem_sweep.sh: recall@10 of
the map G(x) of held-out points for kernel counts, widths, local
dimensions and placements, against the Laplacian eigenmap's Nystrom map
on the same split, on Fashion-MNIST and on a twisted Swiss roll.

    kem_sweep.py NLEMBED OUT FM_TRAIN FM_REST ROLL_TRAIN ROLL_REST QUERIES CONFIG...

FM_TRAIN 0 skips Fashion-MNIST. CONFIG is "K,Q,F[,PLACEMENT]": K kernels,
Q local dimensions (at most D), F the width
over the median distance from a centre to the nearest other centre (the
library's automatic width is 0.15 of it: one fit with the automatic width
gives the spacing of the same centres, then the fit with F; random
centres do not depend on the width). Recall: the mean share of each
point's 10 nearest neighbours in the input among its 10 nearest in the
embedding (nlembed metrics' recall), of all training points and of QUERIES
held-out points drawn at random, against their neighbours among all the
held-out points. Times are wall seconds of the fit and of G(x)."""
import json
import os
import subprocess
import sys
import time

import numpy as np
from sklearn.neighbors import NearestNeighbors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
NLE, OUT = sys.argv[1], sys.argv[2]
FM_TRAIN, FM_REST, ROLL_TRAIN, ROLL_REST, QUERIES = (int(a) for a in sys.argv[3:8])
CONFIGS = sys.argv[8:]
DEFAULT_F = 0.15


def roll(n, rng):
    """kem_roll.py's twisted roll at random (u, v), its noise 0.05"""
    u, v = rng.random(n), rng.random(n)
    t = 1.5 * np.pi * (1 + 2 * u)
    h = 21 * v - 10.5
    tw = 0.4 * u
    X = np.stack([t * np.cos(t), h * np.cos(tw), t * np.sin(t) + h * np.sin(tw)], 1)
    return X + 0.05 * rng.standard_normal(X.shape)


def knn(ref, queries):
    return NearestNeighbors(n_neighbors=11).fit(ref).kneighbors(queries, return_distance=False)[:, 1:]


def recall(a, b):
    return np.mean([len(set(x) & set(y)) / 10 for x, y in zip(a, b)])


def run(method, train, rest, opts):
    t0 = time.time()
    p = subprocess.run([NLE, method, train, "-o", f"{OUT}/sw_y.npy", "--save-model", f"{OUT}/sw.nle", "--quiet"]
                       + opts, capture_output=True, text=True, check=True)
    fit = time.time() - t0
    t0 = time.time()
    subprocess.run([NLE, "transform", f"{OUT}/sw.nle", rest, "-o", f"{OUT}/sw_g.npy", "--quiet"], capture_output=True,
                   check=True)
    return json.loads(p.stdout), fit, time.time() - t0


def sweep(name, X, NTRAIN, NREST):
    train, rest = f"{OUT}/sw_train.npy", f"{OUT}/sw_rest.npy"
    np.save(train, X[:NTRAIN])
    np.save(rest, X[NTRAIN:NTRAIN + NREST])
    q = np.random.default_rng(0).choice(NREST, min(QUERIES, NREST), replace=False)
    true_train = knn(X[:NTRAIN], X[:NTRAIN])
    true_rest = knn(X[NTRAIN:NTRAIN + NREST], X[NTRAIN:NTRAIN + NREST][q])

    def score():
        Y, G = np.load(f"{OUT}/sw_y.npy"), np.load(f"{OUT}/sw_g.npy")
        return recall(knn(Y, Y), true_train), recall(knn(G, G[q]), true_rest)

    print(f"{name}: {NTRAIN} to train, {NREST} mapped, recall of {len(q)} of them; load {os.getloadavg()[0]:.1f}")
    print(f"{'basis':36s} {'sigma':>10s} {'fit s':>7s} {'G(x) s':>7s} {'train':>7s} {'mapped':>7s}")
    _, fit, gx = run("le", train, rest, [])
    rt, rm = score()
    print(f"{'LE, Nystrom map':36s} {'':>10s} {fit:7.2f} {gx:7.2f} {rt:7.4f} {rm:7.4f}", flush=True)
    for c in CONFIGS:
        parts = c.split(",")
        k, qd, f = int(parts[0]), int(parts[1]), float(parts[2])
        k, qd = min(k, NTRAIN), min(qd, X.shape[1])  # q = D at most (the roll: 3)
        opts = ["--kernels", str(k), "--local-dims", str(qd)] + (["--placement", parts[3]] if len(parts) > 3 else [])
        j, fit, gx = run("kem", train, rest, opts)
        if f != DEFAULT_F:
            j, fit, gx = run("kem", train, rest, opts + ["--sigma", repr(j["sigma"] * f / DEFAULT_F)])
        label = f"{k} kernels, q = {qd}, f = {f}" + (f", {parts[3]}" if len(parts) > 3 else "")
        rt, rm = score()
        print(f"{label:36s} {j['sigma']:10.4g} {fit:7.2f} {gx:7.2f} {rt:7.4f} {rm:7.4f}", flush=True)


import fmnist  # noqa: E402

if FM_TRAIN:  # 0: the roll alone
    sweep("Fashion-MNIST", fmnist.images(FM_TRAIN + FM_REST).astype(np.float32), FM_TRAIN, FM_REST)
sweep("twisted Swiss roll (D = 3)", roll(ROLL_TRAIN + ROLL_REST, np.random.default_rng(5)).astype(np.float32),
      ROLL_TRAIN, ROLL_REST)
