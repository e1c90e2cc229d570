"""spectral_peers.py — one scikit-learn run for bench/spectral_peers.sh, in
its own process so that its peak memory is its own: prints one JSON line
with the seconds (neighbour search included), the peak RSS and, where
scikit-learn exposes them, the eigenvalues. Also the data sets: `gen`
writes the Swiss roll and its true coordinates, `fmnist N` the first N
Fashion-MNIST images and labels; `score` compares embeddings with the
truth (Procrustes with scale, and an affine fit)."""
import json
import resource
import sys
import time

import numpy as np


def swiss_roll(n, out, seed=0, name="roll"):
    # t = 1.5 pi (1 + 2u), height 21 u', points (t cos t, h, t sin t): the
    # scikit-learn generator's shape, drawn here with numpy's seed 0 (other
    # seeds: held-out points of the same roll). The true coordinates: the
    # arc length along the spiral and the height.
    rng = np.random.default_rng(seed)
    t = 1.5 * np.pi * (1 + 2 * rng.random(n))
    h = 21 * rng.random(n)
    np.save(f"{out}/{name}{n}.npy", np.c_[t * np.cos(t), h, t * np.sin(t)].astype(np.float32))
    arc = 0.5 * (t * np.sqrt(1 + t * t) + np.arcsinh(t))
    np.save(f"{out}/{name}{n}_true.npy", np.c_[arc, h])


def fashion(n, out):
    sys.path.insert(0, "bench")
    import fmnist
    np.save(f"{out}/fm{n}.npy", fmnist.images(n).astype(np.float32))
    np.save(f"{out}/fm{n}_labels.npy", fmnist.labels(n).astype(np.int32))


def run(method, path, k, out_path):
    from sklearn.cluster import SpectralClustering
    from sklearn.manifold import Isomap, LocallyLinearEmbedding, SpectralEmbedding
    X = np.load(path).astype(np.float64)
    t0 = time.time()
    eig = None
    if method == "le":  # scikit-learn's n_neighbors counts the point itself
        Y = SpectralEmbedding(n_components=2, affinity="nearest_neighbors", n_neighbors=k + 1,
                              random_state=0).fit_transform(X)
    elif method == "cluster":
        Y = SpectralClustering(n_clusters=10, affinity="nearest_neighbors", n_neighbors=k + 1, assign_labels="kmeans",
                               random_state=0).fit_predict(X)
    elif method == "isomap":
        m = Isomap(n_neighbors=k, n_components=2)
        Y = m.fit_transform(X)
        eig = m.kernel_pca_.eigenvalues_.tolist()
    else:
        kind = {"lle": "standard", "mlle": "modified", "ltsa": "ltsa", "hlle": "hessian"}[method]
        Y = LocallyLinearEmbedding(n_components=2, n_neighbors=k, method=kind, random_state=0).fit_transform(X)
    seconds = time.time() - t0
    np.save(out_path, Y)
    print(json.dumps({"seconds": seconds, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "eigenvalues": eig}))


def transform(method, train_path, test_path, k, out_path):
    """scikit-learn's out-of-sample map where it has one (Isomap.transform;
    LocallyLinearEmbedding.transform, reconstruction weights for every
    variant): fit on the training points, then the seconds of the map."""
    from sklearn.manifold import Isomap, LocallyLinearEmbedding
    X, Q = np.load(train_path).astype(np.float64), np.load(test_path).astype(np.float64)
    if method == "isomap":
        m = Isomap(n_neighbors=k, n_components=2)
    else:
        kind = {"lle": "standard", "mlle": "modified", "ltsa": "ltsa", "hlle": "hessian"}[method]
        m = LocallyLinearEmbedding(n_components=2, n_neighbors=k, method=kind, random_state=0)
    t0 = time.time()
    m.fit(X)
    fit = time.time() - t0
    t0 = time.time()
    Y = m.transform(Q)
    seconds = time.time() - t0
    np.save(out_path, np.r_[m.embedding_, Y])
    print(json.dumps({"fit_seconds": fit, "seconds": seconds}))


def oos_score(truth_train, truth_test, emb_path):
    """The affine map from the training embedding to the truth, fitted on
    the training points, applied to the new points' map: its residual
    relative to the spread of the new points' truth (0 when the map of a
    new point sits where its neighbours' embedding says), and the same on
    the training points."""
    T, Tq = np.load(truth_train), np.load(truth_test)
    E = np.load(emb_path)
    Y, Yq = E[:len(T)], E[len(T):]
    F = np.c_[np.ones(len(Y)), Y]
    coef = np.linalg.lstsq(F, T, rcond=None)[0]
    train = np.linalg.norm(T - F @ coef) / np.linalg.norm(T - T.mean(0))
    test = np.linalg.norm(Tq - np.c_[np.ones(len(Yq)), Yq] @ coef) / np.linalg.norm(Tq - Tq.mean(0))
    print(f"{train:.4f} {test:.4f}")


def le_eigenvalues(path, k):
    """The 3 smallest eigenvalues of the symmetric normalised Laplacian of
    scikit-learn's SpectralEmbedding affinity (kneighbors_graph with the
    point itself, (A + A^T) / 2; scipy's laplacian ignores the diagonal),
    by ARPACK shift-invert as scikit-learn runs it, at full precision."""
    from scipy.sparse import csgraph
    from scipy.sparse.linalg import eigsh
    from sklearn.neighbors import kneighbors_graph
    X = np.load(path).astype(np.float64)
    A = kneighbors_graph(X, k + 1, include_self=True)
    L = csgraph.laplacian(0.5 * (A + A.T), normed=True)
    print(json.dumps(np.sort(-eigsh(-L, k=3, sigma=1.0, which="LM", tol=0)[0]).tolist()))


def score(truth_path, emb_path):
    T = np.load(truth_path)
    Y = np.load(emb_path)
    A, B = T - T.mean(0), Y - Y.mean(0)
    U, S, Vt = np.linalg.svd(B.T @ A)
    procrustes = np.linalg.norm(A - (S.sum() / (B * B).sum()) * B @ (U @ Vt)) / np.linalg.norm(A)
    F = np.c_[np.ones(len(Y)), Y]
    affine = np.linalg.norm(T - F @ np.linalg.lstsq(F, T, rcond=None)[0]) / np.linalg.norm(A)
    print(f"{procrustes:.4f} {affine:.4f}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "gen":
        swiss_roll(int(sys.argv[2]), sys.argv[3])
    elif cmd == "gen_heldout":
        swiss_roll(int(sys.argv[2]), sys.argv[3], seed=1, name="new")
    elif cmd == "transform":
        transform(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6])
    elif cmd == "oos_score":
        oos_score(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "fmnist":
        fashion(int(sys.argv[2]), sys.argv[3])
    elif cmd == "le_eigenvalues":
        le_eigenvalues(sys.argv[2], int(sys.argv[3]))
    elif cmd == "score":
        score(sys.argv[2], sys.argv[3])
    else:
        run(cmd, sys.argv[2], int(sys.argv[3]), sys.argv[4])
