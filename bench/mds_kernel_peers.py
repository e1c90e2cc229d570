"""mds_kernel_peers.py — scikit-learn's MDS (metric SMACOF, non-metric),
KernelPCA and LDA for bench/mds_kernel_peers.sh, one run per process so that
its peak RSS is its own; the data sets; and the scores of any embedding.

  gen-roll N OUT      OUT/mk_rollN.npy (Swiss roll of spectral_peers.py,
                      float32) and OUT/mk_rollN_labels.npy: 6 equal-width
                      bins of the roll parameter t (int32)
  gen-fashion N OUT   OUT/mk_fmN.npy: the first N Fashion-MNIST images
                      projected on their own top 50 principal components
                      (float32; what both tools get) and the labels (int32)
  gen-fashion-raw N OUT
                      OUT/mk_fmrawN.npy: the first N images' raw pixels
                      (N x 784, 0..255 as float32) and the labels
  gamma INPUT         prints 1 / (2 s2), s2 the median squared distance of
                      10,000 random pairs (numpy seed 0): the RBF gamma both
                      tools get (nlembed's NLE_AUTO rule, fixed here)
  run METHOD INPUT OUT.npy [--labels L] [--gamma G] [--n-init K] [--max-iter M]
                      METHOD smacof | nonmetric | kpca | lda; prints one JSON
                      line: seconds (fit only: no import, no loading), peak_mib
                      (ru_maxrss before any scoring), and sklearn's stress_,
                      n_iter_ (MDS; plus our measures of the saved embedding)
                      or eigenvalues_ (kpca)
  score INPUT EMB LABELS [--no-stress]
                      prints JSON: knn10 (leave-one-out 10-NN accuracy of EMB)
                      and, for N <= 20,000 (INPUT not "-"), the stress of EMB
                      against INPUT's Euclidean distances (pairs i < j, float64,
                      blockwise): raw_stress, stress1, normalized_stress,
                      scaled_stress (normalized stress after the best scaling
                      of EMB: scale-free), and for N <= 5,000 nonmetric_stress1
                      (Kruskal stress-1 against the monotone regression of d on
                      delta's order, primary ties)."""
import json
import resource
import sys
import time

import numpy as np

sys.path.insert(0, "bench")

STRESS_MAX, NONMETRIC_MAX = 20000, 5000


def gen_roll(n, out):
    import spectral_peers
    spectral_peers.swiss_roll(n, out, name="mk_roll")
    Y = np.load(f"{out}/mk_roll{n}.npy").astype(np.float64)
    # points are (t cos t, h, t sin t) with t > 0: t is their distance from the axis
    t = np.hypot(Y[:, 0], Y[:, 2])
    lo, hi = 1.5 * np.pi, 4.5 * np.pi
    np.save(f"{out}/mk_roll{n}_labels.npy", np.clip((t - lo) / (hi - lo) * 6, 0, 5).astype(np.int32))


def gen_fashion(n, out):
    import fmnist
    X = fmnist.images(n)
    X -= X.mean(0)
    w, V = np.linalg.eigh(X.T @ X)  # 784 x 784 scatter; eigh ascending
    np.save(f"{out}/mk_fm{n}.npy", (X @ V[:, ::-1][:, :50]).astype(np.float32))
    np.save(f"{out}/mk_fm{n}_labels.npy", fmnist.labels(n).astype(np.int32))


def gen_fashion_raw(n, out):
    import fmnist
    np.save(f"{out}/mk_fmraw{n}.npy", fmnist.images(n).astype(np.float32))
    np.save(f"{out}/mk_fmraw{n}_labels.npy", fmnist.labels(n).astype(np.int32))


def gamma(path):
    Y = np.load(path).astype(np.float64)
    rng = np.random.default_rng(0)
    i, j = rng.integers(len(Y), size=(2, 10000))
    keep = i != j
    s2 = np.median(((Y[i[keep]] - Y[j[keep]]) ** 2).sum(1))
    return 1.0 / (2.0 * s2)


def knn10(E, y):
    """Each point's 10 nearest other points vote (ties: the smallest label,
    as KNeighborsClassifier)."""
    from sklearn.neighbors import NearestNeighbors
    if not np.isfinite(E).all():
        return None
    idx = NearestNeighbors(n_neighbors=10).fit(E).kneighbors(return_distance=False)  # self excluded
    votes = np.zeros((len(E), y.max() + 1))
    np.add.at(votes, (np.repeat(np.arange(len(E)), 10), y[idx].ravel()), 1)
    return float((votes.argmax(1) == y).mean())


def stress(Y, E, block=500):
    """Sums over i < j of delta = |y_i - y_j| and d = |e_i - e_j|, by row
    blocks (upper triangle only) with the Gram identity on centred data."""
    Y = Y - Y.mean(0)
    E = E - E.mean(0)
    ny, ne = (Y * Y).sum(1), (E * E).sum(1)
    n = len(Y)
    s_rr = s_dd = s_DD = s_Dd = 0.0
    for a in range(0, n, block):
        b = min(a + block, n)
        upper = np.triu(np.ones((b - a, n - a), bool), 1)  # column c is point a + c: keep c > row
        D = np.sqrt(np.maximum(ny[a:b, None] + ny[None, a:] - 2 * Y[a:b] @ Y[a:].T, 0)) * upper
        d = np.sqrt(np.maximum(ne[a:b, None] + ne[None, a:] - 2 * E[a:b] @ E[a:].T, 0)) * upper
        s_dd += (d * d).sum()
        s_DD += (D * D).sum()
        s_Dd += (D * d).sum()
        D -= d
        s_rr += (D * D).sum()
    return {"raw_stress": s_rr, "stress1": np.sqrt(s_rr / s_dd), "normalized_stress": np.sqrt(s_rr / s_DD),
            "scaled_stress": np.sqrt(max(0.0, 1 - s_Dd * s_Dd / (s_dd * s_DD)))}


def nonmetric_stress1(Y, E):
    """sqrt(sum (d - dhat)^2 / sum d^2), dhat the least-squares non-decreasing
    fit of d in delta's order (primary ties: tied deltas ordered by d)."""
    from scipy.spatial.distance import pdist
    delta, d = pdist(Y), pdist(E)
    d = d[np.lexsort((d, delta))]
    del delta
    try:  # scikit-learn's PAV itself (private; the public class interpolates: 10x slower)
        from sklearn._isotonic import _inplace_contiguous_isotonic_regression as pav
        dhat = d.copy()
        pav(dhat, np.ones_like(dhat))
    except ImportError:
        from sklearn.isotonic import IsotonicRegression
        dhat = IsotonicRegression().fit_transform(np.arange(len(d), dtype=np.float64), d)
    return float(np.sqrt(((d - dhat) ** 2).sum() / (d * d).sum()))


def measures(Y, E, labels=None, with_stress=True):
    out = {}
    if labels is not None:
        out["knn10"] = knn10(E, labels)
    if with_stress and Y is not None and len(Y) <= STRESS_MAX and np.isfinite(E).all():
        out.update(stress(Y, E))
        if len(Y) <= NONMETRIC_MAX:
            out["nonmetric_stress1"] = nonmetric_stress1(Y, E)
    return out


def run(method, path, out_path, labels=None, gamma_=None, n_init=4, max_iter=300):
    import inspect
    from sklearn.decomposition import KernelPCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.manifold import MDS
    Y = np.load(path).astype(np.float64)
    info = {}
    t0 = time.time()
    if method in ("smacof", "nonmetric"):
        kw = dict(n_components=2, metric=method == "smacof", n_init=n_init, max_iter=max_iter,
                  dissimilarity="euclidean", random_state=0)
        if "normalized_stress" in inspect.signature(MDS).parameters:  # 1.2: raw stress, silences the FutureWarning
            kw["normalized_stress"] = False
        m = MDS(**kw)
        E = m.fit_transform(Y)
        info = {"sk_stress_": float(m.stress_), "n_iter_": int(getattr(m, "n_iter_", -1))}
    elif method == "kpca":
        m = KernelPCA(n_components=2, kernel="rbf", gamma=gamma_, random_state=0)
        E = m.fit_transform(Y)
        info = {"eigenvalues": m.eigenvalues_.tolist()}
    elif method == "lda":
        E = LinearDiscriminantAnalysis(n_components=2).fit_transform(Y, labels)
    else:
        sys.exit(f"unknown method {method}")
    seconds = time.time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    np.save(out_path, E)
    if method == "nonmetric":  # its disparities are scaled to sum n(n-1)/4 over i < j
        n = len(Y)
        info["sk_stress_normalized"] = float(np.sqrt(4 * m.stress_ / (n * (n - 1))))
    if method in ("smacof", "nonmetric"):
        info.update(measures(Y, E))
    print(json.dumps({"seconds": seconds, "peak_mib": peak, **info}))


def opt(args, name, default, kind):
    return kind(args[args.index(name) + 1]) if name in args else default


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "gen-roll":
        gen_roll(int(args[0]), args[1])
    elif cmd == "gen-fashion":
        gen_fashion(int(args[0]), args[1])
    elif cmd == "gen-fashion-raw":
        gen_fashion_raw(int(args[0]), args[1])
    elif cmd == "gamma":
        print(repr(gamma(args[0])))
    elif cmd == "score":
        Y = None if args[0] == "-" else np.load(args[0]).astype(np.float64)
        E = np.load(args[1]).astype(np.float64)
        print(json.dumps(measures(Y, E, np.load(args[2]), "--no-stress" not in args)))
    elif cmd == "run":
        lab = opt(args, "--labels", None, str)
        run(args[0], args[1], args[2], labels=None if lab is None else np.load(lab),
            gamma_=opt(args, "--gamma", None, float), n_init=opt(args, "--n-init", 4, int),
            max_iter=opt(args, "--max-iter", 300, int))
    else:
        sys.exit(__doc__)
