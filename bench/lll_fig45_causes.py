"""lll_fig45_causes.py — why fig. 4.5 (dissertation 003_*, sec. 4.8.1) is or
is not reproduced: Laplacian eigenmaps to d dimensions by Locally Linear
Landmarks against exact LE on the same graph, with each candidate
difference between the seed's setting and ours changed one at a time.

  lll_fig45_causes.py DATA.npy GRAPH.mtx CASES [LS] [SEEDS]

DATA: N x D points; GRAPH: nlembed knn's K_W-NN graph (squared distances).
CASES: comma-separated names from CASES below, or kzN for any K_Z (or "all"); LS, SEEDS: space-
separated lists (default "100 300 1000 3000" and "1 2").

Everything here is an independent NumPy/SciPy implementation of eqs.
4.4-4.10 (Z from eqs. 4.6-4.8 with the regulariser relative to trace(G);
the reduced pencil (Z L Z^T, Z D Z^T) solved densely by LAPACK; X = X~ Z):
the case `nlembed` runs the C code on the same graph and weights, so the two
can be compared. Exact LE: the d + 1 largest eigenpairs of D^-1/2 W D^-1/2
(ARPACK, tolerance EXACT_TOL, default 0 = machine precision), v = D^-1/2 u.

Error (the bench's, sec. 4.8: "Procrustes alignment ... then the relative
error between aligned embeddings"): ||procr(X_lll) - X||_F / ||X - mean||_F,
Procrustes by translation, rotation and scaling, over the d non-trivial
dimensions, both embeddings D-orthonormal (eq. 4.9).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import scipy.io
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def procrustes_error(A, B, scaling=True, centre=True):
    """||procr(A) - B|| / ||B|| with A aligned onto B."""
    if centre:
        A = A - A.mean(0)
        B = B - B.mean(0)
    U, s, Vt = np.linalg.svd(A.T @ B, full_matrices=False)
    R = U @ Vt
    c = s.sum() / (A * A).sum() if scaling else 1.0
    return float(np.linalg.norm(c * A @ R - B) / np.linalg.norm(B))


def load_graph(path):
    cache = path + ".npz"
    if os.path.exists(cache):
        return sp.load_npz(cache)
    G = scipy.io.mmread(path).tocsr()
    sp.save_npz(cache, G)
    return G


def weights(G2, sigma):
    """W = (A + A^T) / 2 with A_ij = exp(-d_ij^2 / 2 sigma^2) on the directed
    K_W-NN graph (nlembed le --affinity gaussian --symmetrize average);
    sigma = inf: binary."""
    A = G2.copy()
    A.data = np.ones_like(A.data) if np.isinf(sigma) else np.exp(-A.data / (2 * sigma * sigma))
    return ((A + A.T) * 0.5).tocsr()


def exact_le(W, d, tol=0.0):
    deg = np.asarray(W.sum(1)).ravel()
    s = 1 / np.sqrt(deg)
    S = sp.diags(s) @ W @ sp.diags(s)
    vals, U = spla.eigsh(S, k=d + 1, which="LA", tol=tol, ncv=max(2 * (d + 1) + 20, 120))
    order = np.argsort(-vals)
    V = U[:, order] * s[:, None]  # D-orthonormal
    return 1 - vals[order], V


def landmark_weights(Y, lm, kz, reg):
    """Z (N x L sparse, rows summing to 1): each point's affine weights over
    its kz nearest landmarks, (G + reg trace(G) I) z = 1 rescaled (eqs.
    4.7-4.8); a landmark reconstructs itself."""
    N, L = len(Y), len(lm)
    Yl = Y[lm].astype(np.float64)
    nl = (Yl * Yl).sum(1)
    rows, cols, vals = [], [], []
    err = 0.0
    delta = nl[:, None] + nl[None, :] - 2 * Yl @ Yl.T
    for i0 in range(0, N, 2000):
        Q = Y[i0:i0 + 2000].astype(np.float64)
        d2 = (Q * Q).sum(1)[:, None] + nl[None, :] - 2 * Q @ Yl.T
        idx = np.argpartition(d2, kz - 1, axis=1)[:, :kz] if kz < L else np.tile(np.arange(L), (len(Q), 1))
        da = np.take_along_axis(d2, idx, 1)
        order = np.argsort(da, 1)
        idx, da = np.take_along_axis(idx, order, 1), np.take_along_axis(da, order, 1)
        G = 0.5 * (da[:, :, None] + da[:, None, :] - delta[idx[:, :, None], idx[:, None, :]])
        tr = np.trace(G, axis1=1, axis2=2)
        G += (reg * np.maximum(tr, 1e-300))[:, None, None] * np.eye(kz)[None]
        w = np.linalg.solve(G, np.ones((len(Q), kz, 1)))[:, :, 0]
        w /= w.sum(1, keepdims=True)
        on = da[:, 0] <= 1e-9 * np.maximum(da.mean(1), 1e-300)
        w[on] = 0.0
        w[on, 0] = 1.0
        rec = np.einsum("nk,nkd->nd", w, Yl[idx]) - Q
        err += (rec * rec).sum()
        rows.append(np.repeat(np.arange(i0, i0 + len(Q)), kz))
        cols.append(idx.ravel())
        vals.append(w.ravel())
    Z = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(N, L))
    spread = ((Y - Y.mean(0)) ** 2).sum()
    return Z, float(np.sqrt(err / spread))


def lll(W, Z, d, bnorm="degree"):
    """The reduced pencil (Z^T L Z, Z^T B Z) (eqs. 4.5, 4.10; Z here is N x L)
    solved densely; X = Z X~ without the trivial vector."""
    deg = np.asarray(W.sum(1)).ravel()
    Lap = sp.diags(deg) - W
    At = (Z.T @ (Lap @ Z)).toarray()
    B = sp.diags(deg) if bnorm == "degree" else sp.identity(W.shape[0])
    Bt = (Z.T @ (B @ Z)).toarray()
    At, Bt = (At + At.T) / 2, (Bt + Bt.T) / 2
    vals, V = scipy.linalg.eigh(At, Bt, subset_by_index=[0, d])
    X = Z @ V
    if bnorm != "degree":  # make the result D-orthonormal as exact LE's (each column rescaled)
        X /= np.sqrt((X * X * deg[:, None]).sum(0))
    return vals, X


def best_in_range(W, Z, Xe):
    """Exact LE's vectors projected D-orthogonally onto range(Z) (every
    X = Z C): the best any method restricted to X = X~ Z can do; LLL's
    Rayleigh-Ritz error against it tells the reduced problem's own loss."""
    deg = np.asarray(W.sum(1)).ravel()
    Bt = (Z.T @ (Z.multiply(deg[:, None]))).toarray()
    C = scipy.linalg.solve((Bt + Bt.T) / 2, Z.T @ (Xe * deg[:, None]), assume_a="pos")
    return Z @ C


# Each case: the settings that differ from the baseline (ours).
BASE = dict(sigma="median", scale=1.0, space="input", kz=int(os.environ.get("KZ", "50")), reg=1e-3, bnorm="degree", metric="d", exact_tol=0.0)
CASES = {
    "base": {},
    "sigma200_255": dict(sigma=200.0),                 # sigma = 200 on the 0..255 pixels
    "sigma200_01": dict(sigma=200.0, scale=1 / 255),  # sigma = 200 on the 0..1 pixels (= binary)
    "binary": dict(sigma=np.inf),
    "pca50": dict(space="pca50"),                     # Z from the 50 principal components
    "kz3": dict(kz=3),
    "kz4": dict(kz=4),
    "kz5": dict(kz=5),
    "kz10": dict(kz=10),
    "kz20": dict(kz=20),
    "kz51": dict(kz=51),                              # algorithm 3: K_Z = d + 1
    "kz100": dict(kz=100),
    "reg1e-9": dict(reg=1e-9),
    "reg1e-1": dict(reg=1e-1),
    "reg1": dict(reg=1.0),
    "bident": dict(bnorm="identity"),                 # B~ = Z Z^T instead of Z D Z^T
    "exacttol1e-3": dict(exact_tol=1e-3),             # exact LE's ARPACK tolerance 1e-3
    "nlembed": dict(engine="nlembed"),                # the C code, same graph and weights
}


def error_of(X, Xe, metric):
    if metric == "d":
        return procrustes_error(X[:, 1:], Xe[:, 1:])
    if metric == "d+trivial":
        return procrustes_error(X, Xe, centre=False)
    if metric == "d-1 +trivial":
        return procrustes_error(X[:, :-1], Xe[:, :-1], centre=False)
    if metric == "noscale":
        return procrustes_error(X[:, 1:], Xe[:, 1:], scaling=False)
    if metric == "unitcols":
        Xn, Xen = X[:, 1:] / np.linalg.norm(X[:, 1:], axis=0), Xe[:, 1:] / np.linalg.norm(Xe[:, 1:], axis=0)
        return procrustes_error(Xn, Xen)
    raise ValueError(metric)


def main():
    data, graph, names = sys.argv[1:4]
    Ls = [int(v) for v in (sys.argv[4] if len(sys.argv) > 4 else "100 300 1000 3000").split()]
    seeds = [int(v) for v in (sys.argv[5] if len(sys.argv) > 5 else "1 2").split()]
    d = int(os.environ.get("DIM", "50"))
    nle = os.environ.get("NLEMBED", "./build/nlembed")
    Y = np.load(data).astype(np.float64)
    G2 = load_graph(graph)
    kw = G2.getnnz(1).max()
    med = float(np.sqrt(np.median(G2.max(1).toarray())))
    names = list(CASES) if names == "all" else names.split(",")
    exact_cache = {}
    print(f"# N = {len(Y)}, D = {Y.shape[1]}, K_W = {kw}, d = {d}; the median distance to the K_W-th neighbour "
          f"{med:.6g}; baseline: {BASE}")
    print(f"# {'case':14} {'L':>6} {'seed':>4} {'error':>8} {'first2':>7} {'first10':>7} {'recon':>6} {'lll_s':>6}"
          "  other errors: +trivial, 49+trivial, no scaling, unit columns, squared (MATLAB procrustes' d)")
    for name in names:
        c = dict(BASE, **(CASES[name] if name in CASES else dict(kz=int(name[2:]))))  # "kzN": any K_Z
        sigma = med if c["sigma"] == "median" else c["sigma"] / c["scale"]  # in the data's units
        key = (sigma, c["exact_tol"])
        if key not in exact_cache:
            t0 = time.time()
            W = weights(G2, sigma)
            lam, Xe = exact_le(W, d, c["exact_tol"])
            exact_cache[key] = (W, lam, Xe, time.time() - t0)
            deg = np.asarray(W.sum(1)).ravel()
            print(f"# exact LE sigma = {sigma:.6g} (data units), tol {c['exact_tol']}: {time.time() - t0:.1f} s, "
                  f"eigenvalues {lam[1]:.4g} .. {lam[-1]:.4g}, degree min/median/max "
                  f"{deg.min():.3g}/{np.median(deg):.3g}/{deg.max():.3g}", flush=True)
        W, lam, Xe, _ = exact_cache[key]
        if c["exact_tol"] != 0.0:  # the loose reference against the tight one
            W0, lam0, Xe0, _ = exact_cache.get((sigma, 0.0)) or (None, None, None, None)
            if Xe0 is not None:
                print(f"# exact tol {c['exact_tol']} vs tol 0: error {100 * error_of(Xe, Xe0, 'd'):.3f}%")
        Yz = Y
        if c["space"] == "pca50":
            Yc = Y - Y.mean(0)
            _, _, Vt = np.linalg.svd(Yc[:: max(1, len(Y) // 10000)], full_matrices=False)
            Yz = Yc @ Vt[:50].T
        for L in Ls:
            for seed in seeds:
                lm = np.sort(np.random.default_rng(seed).choice(len(Y), L, replace=False))
                t0 = time.time()
                if c.get("engine") == "nlembed":
                    out = "/tmp/lll-causes-x.npy"
                    af = ["--affinity", "binary"] if np.isinf(sigma) else ["--affinity", "gaussian", "--sigma", repr(sigma)]
                    p = subprocess.run([nle, "le", data, "--knn", graph, "-k", str(kw), "--landmarks", str(L),
                                        "--kz", str(min(c["kz"], L)), "--components", "allow", "-d", str(d),
                                        "--seed", str(seed), "--quiet", "--threads", "2", "-o", out] + af,
                                       capture_output=True, text=True)
                    if p.returncode:
                        print(f"  {name:14} {L:6d} {seed:4d} failed: {p.stderr.strip()[-200:]}")
                        continue
                    js = json.loads(p.stdout.strip().splitlines()[-1])
                    X = np.hstack([Xe[:, :1], np.load(out)])  # the trivial vector is exactly exact LE's (Z 1 = 1)
                    rec = js["reconstruction_error"]
                    others_best = ""
                else:
                    Z, rec = landmark_weights(Yz, lm, min(c["kz"], L), c["reg"])
                    _, X = lll(W, Z, d, c["bnorm"])
                    others_best = f" best in range(Z) {100 * procrustes_error(best_in_range(W, Z, Xe)[:, 1:], Xe[:, 1:]):6.2f}%"
                secs = time.time() - t0
                e = error_of(X, Xe, c["metric"])
                others = " ".join(f"{100 * error_of(X, Xe, m):6.2f}%" for m in ("d+trivial", "d-1 +trivial", "noscale",
                                                                                "unitcols"))
                others += f" {100 * e * e:6.2f}%" + others_best
                e2 = procrustes_error(X[:, 1:3], Xe[:, 1:3])
                e10 = procrustes_error(X[:, 1:11], Xe[:, 1:11])
                print(f"  {name:14} {L:6d} {seed:4d} {100 * e:7.2f}% {100 * e2:6.1f}% {100 * e10:6.1f}% {rec:6.3f} "
                      f"{secs:6.1f}  {others}", flush=True)


if __name__ == "__main__":
    main()
