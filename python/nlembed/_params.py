"""What each parameter means, for the classes' docstrings: one line per
library option (by the tool's long-option name, as nle_estimator_option
lists it), with a method's own line where the option means something else
there. The type and the default come from the library (the default is the
value a fresh nle_estimator reports, or the class's own where it follows
scikit-learn); a test checks that every parameter of every class has a line
here."""

# option -> (type, meaning); "auto" in a meaning: what the library chooses
OPTIONS = {
    # the embedding and its graph
    "dim": ("int", "embedding dimension"),
    "perplexity": ("float or 'auto'", "perplexity of the entropic affinities (auto: 30 for t-SNE and t-EE, 5 for "
                                      "EE, s-SNE and SNE; spectral methods with affinity='entropic': k / 3)"),
    "neighbors": ("int or 'auto'", "neighbours per point of the kNN graph, not counting the point (auto: 3 x "
                                   "perplexity, 12 with sigma)"),
    "sigma": ("float or 'auto'", "width of Gaussian affinities exp(-d^2 / 2 sigma^2) on the kNN graph instead of "
                                 "entropic ones (auto: entropic)"),
    "metric": ("str", "euclidean, cosine, correlation, precomputed (X holds N x N distances) or affinities (X "
                      "holds N x N affinities, where the method takes them)"),
    "keep-model": ("bool", "keep the map for new points (transform); False saves its memory"),
    # neighbour search
    "knn-method": ("str", "neighbour search: exact, approx (random-projection forest + NN-descent) or auto (a cost "
                          "model in N and D)"),
    "trees": ("int or 'auto'", "approx: random-projection trees (auto: 4 + N^(1/4) / 2)"),
    "leaf-size": ("int or 'auto'", "approx: largest leaf (auto: max(60, k))"),
    "max-candidates": ("int or 'auto'", "approx: NN-descent sample per point (auto: 30)"),
    "knn-iters": ("int or 'auto'", "approx: most NN-descent iterations (auto: max(5, log2 N))"),
    "knn-delta": ("float", "approx: stop below knn_delta N k changes per iteration"),
    "pca": ("int or 'auto'", "search the neighbours among this many principal components, then re-rank them by "
                             "their distances in X (auto: 50 when N > 5,000 and D > 100; 0: off)"),
    "pca-candidates": ("int or 'auto'", "pca: candidates per point re-ranked (auto: k, or 7 k for the spectral "
                                        "methods; 0: keep the components' distances)"),
    # nonlinear embeddings
    "lambda": ("float or 'auto'", "weight of the repulsion (auto: 1 for the SNE family, 100 / N for EE)"),
    "wneg": ("str", "repulsive weights: uniform, sqdist (squared input distances) or knn (on the kNN graph)"),
    "wneg-dims": ("int", "wneg='sqdist' with a fast engine: principal components of the distances"),
    "repulsion": ("str", "repulsion engine: auto (by N and the model), exact, bh (Barnes-Hut), fft (FFT "
                         "interpolation) or fgt (fast Gauss transform)"),
    "theta": ("float", "Barnes-Hut's opening angle (error about 0.1 theta^2)"),
    "fft-order": ("int", "fft: interpolation nodes per box and axis"),
    "fft-box": ("float or 'auto'", "fft: box side in kernel lengths (auto: 1.5 with fixed-rate steps, 0.85 with "
                                   "a line search)"),
    "fgt-order": ("int", "fgt: terms per axis of its series"),
    "fgt-reach": ("int", "fgt: boxes further apart than this many sides do not interact"),
    "accuracy-iters": ("int", "fast engines: start coarse and reach the set accuracy after this many iterations "
                              "(0: off)"),
    "optimizer": ("str", "auto, sd (spectral direction), sd-, fp, gd, lbfgs or cg"),
    "step": ("str", "auto, fixed (a learning rate with momentum and gains, as the t-SNE codes) or line-search"),
    "kappa": ("int", "sd, sd-: neighbours per point kept in L+ (0: all)"),
    "sdm-tol": ("float", "sd-: its CG stops at this relative residual"),
    "sdm-iters": ("int", "sd-: or after this many CG iterations"),
    "c1": ("float", "line search: sufficient-decrease constant"),
    "shrink": ("float", "line search: step shrink factor"),
    "learning-rate": ("float or 'auto'", "fixed steps: the rate (auto: max(N / (4 exaggeration), 50) / sum(W+))"),
    "final-learning-rate": ("float or 'auto'", "fixed steps: the rate after the exaggeration phase (auto: "
                                               "max(N / 2, 200) / sum(W+) after an automatic first rate)"),
    "momentum": ("float or 'auto'", "fixed steps: momentum after the first phase (auto: 0.95 with automatic "
                                    "rates, else 0.8)"),
    "exaggeration": ("float or 'auto'", "fixed steps: the attraction times this at first (auto: 12 for t-SNE "
                                        "and s-SNE, else 1)"),
    "exaggeration-iters": ("int or 'auto'", "the exaggeration phase's iterations (auto: 125, 30 per homotopy "
                                            "step)"),
    "gains": ("bool", "fixed steps: per-coordinate gains (delta-bar-delta)"),
    "init": ("str or array", "the start: auto (pca with points, else spectral), pca, spectral, random, or an "
                             "N x n_components array"),
    "init-scale": ("float", "standard deviation of the start's first dimension (pca, spectral, random)"),
    "max-iters": ("int or 'auto'", "iterations (auto: 450 for fixed steps, 1000 for line searches)"),
    "tol": ("float or 'auto'", "stop below this relative decrease of E, 5 iterations in a row (auto: 1e-6)"),
    "x-tol": ("float or 'auto'", "stop when |X - X_old| <= x_tol |X_old| (auto: 1e-3 in a line-search homotopy, "
                                 "else 0: off)"),
    "grad-tol": ("float", "stop when every entry of the gradient is below this in size"),
    "time-budget": ("float", "stop after this many seconds (0: no limit)"),
    "homotopy": ("int or 'auto'", "EE, t-EE: minimise over this many log-spaced lambda values from lambda_start "
                                  "(auto: 5 for t-EE with fixed steps, else 0)"),
    "lambda-start": ("float or 'auto'", "the homotopy's first lambda (auto: lambda / 100 with fixed steps, else "
                                        "1.5 x the upper bound of lambda*)"),
    "lambda-bounds": ("int or 'auto'", "compute the bounds of lambda* (1) or not (0); auto: where they are cheap "
                                       "or the homotopy needs them"),
    # spectral methods
    "radius": ("float", "epsilon-ball neighbourhoods of this radius instead of the k nearest (0: kNN)"),
    "affinity": ("str", "weights on the kNN graph: binary, gaussian, inverse, self-tuning or entropic; "
                        "'precomputed': X holds N x N affinities"),
    "tuning-k": ("int", "affinity='self-tuning': the neighbour that sets each point's scale"),
    "symmetrize": ("str", "making the graph symmetric: average ((A + A^T) / 2), union or mutual"),
    "components": ("str", "a disconnected neighbourhood graph: auto (the method's policy), error or allow"),
    "solver": ("str", "eigensolver: auto, dense, sparse (Lanczos) or shift-invert"),
    "laplacian": ("str", "random-walk (L v = lambda D v), symmetric or unnormalised"),
    "landmarks": ("int or 'auto'", "Locally Linear Landmarks: solve on this many landmarks, every point "
                                   "reconstructed from its nearest ones (0: exact)"),
    "kz": ("int or 'auto'", "LLL: landmarks per point (auto: max(d + 1, 5), at most L and D + 1)"),
    "landmark-method": ("str", "LLL: random, thinned, kmeans or minmax"),
    "landmark-graph": ("bool", "LLL's baseline: the landmarks' own kNN graph instead of Z W Z^T"),
    "reg": ("float", "the local Gram matrix's regulariser, times its trace"),
    "alpha": ("float", "density normalisation in [0, 1]: 0 graph Laplacian, 1/2 Fokker-Planck, 1 "
                       "Laplace-Beltrami"),
    "time": ("float", "diffusion time t >= 0"),
    # clustering
    "clusters": ("int", "number of clusters"),
    "dims": ("int or 'auto'", "eigenvectors after the trivial one that k-means clusters (auto: n_clusters - 1)"),
    "normalize-rows": ("bool", "each point's eigenvector row to unit length first (Ng, Jordan and Weiss)"),
    "restarts": ("int", "k-means runs from k-means++ seeds"),
    "warm-start": ("bool", "LLL: k-means restarts on the landmarks first"),
    "max-iter": ("int", "iterations per run"),
    # PCA
    "center": ("bool", "subtract the mean"),
    "whiten": ("bool", "scale every component to unit variance"),
    "oversample": ("int", "randomized: extra directions"),
    "power-iters": ("int", "randomized: subspace iterations"),
    # MDS
    "starts": ("int", "runs: the first from classical MDS, the others from random starts; the best is kept"),
    "ties": ("str", "non-metric: primary (tied dissimilarities may get different disparities) or secondary"),
    # kernels
    "kernel": ("str", "gaussian (exp(-gamma |x - y|^2)), polynomial, linear or precomputed"),
    "gamma": ("float or 'auto'", "the kernel's gamma (auto, gaussian: 1 / (2 s^2), s^2 the median squared "
                                 "distance)"),
    "degree": ("int", "polynomial degree"),
    "coef0": ("float", "polynomial offset"),
    "kernel-neighbors": ("int", "a sparse Gaussian kernel on the kNN graph of this many neighbours (0: dense)"),
    "ridge": ("float or 'auto'", "added to the total scatter's diagonal"),
    # kernel eigenmaps
    "weights": ("str", "the graph's weights: inverse (1/|x_i - x_j|), gaussian or binary"),
    "heat-t": ("float or 'auto'", "gaussian weights' t (auto: 2 s^2, s the median neighbour distance)"),
    "plus-identity": ("bool", "W + I (more isometric), D from W + I"),
    "kernels": ("int or 'auto'", "kernels at random data points (auto: min(64, N))"),
    "local-dims": ("int or 'auto'", "the leading local principal directions per kernel (auto: D when D <= 10, "
                                    "else 10; 0: posteriors only)"),
    "local-points": ("int or 'auto'", "points of each local PCA (auto: max(k, 3 local_dims))"),
    "truncate": ("float", "posteriors below this dropped (0: none)"),
    "variant": ("str", "auto, reweighted, raw, affine or stochastic"),
    "lpp": ("bool", "Z = X: Locality Preserving Projections"),
    "inverse-steps": ("int", "Gauss-Newton steps refining the inverse map G+(y)"),
    "inverse-width": ("float", "the inverse map's kernel width, in sigma"),
}

# (method, option) -> (type, meaning) where a method's option differs
METHOD_OPTIONS = {
    ("le", "neighbors"): ("int", "neighbours per point of the graph, not counting the point"),
    ("lle", "neighbors"): ("int", "neighbours per point of the graph, not counting the point"),
    ("mlle", "neighbors"): ("int", "neighbours per point of the graph, not counting the point"),
    ("ltsa", "neighbors"): ("int", "neighbours per point of the graph, not counting the point"),
    ("hlle", "neighbors"): ("int", "neighbours per point of the graph, not counting the point"),
    ("isomap", "neighbors"): ("int", "neighbours per point of the graph, not counting the point (10, not "
                                     "scikit-learn's 5: the tool's default, whose results the class reproduces; 5 "
                                     "neighbours leave the graph of real data sets in pieces far more often, and "
                                     "geodesics across joined pieces are poor)"),
    ("diffmap", "neighbors"): ("int", "neighbours per point of the graph, not counting the point"),
    ("cluster", "neighbors"): ("int", "affinity='nearest_neighbors' or a library affinity: neighbours per point "
                                      "of the graph"),
    ("kem", "neighbors"): ("int", "neighbours of the graph W"),
    ("kem", "sigma"): ("float or 'auto'", "the kernels' width (auto: half the median distance from a kernel "
                                          "centre to its nearest data points)"),
    ("le", "sigma"): ("float or 'auto'", "affinity='gaussian': width in input units (auto: the median distance "
                                         "to the k-th neighbour)"),
    ("le", "perplexity"): ("float or 'auto'", "affinity='entropic': each point's perplexity over its k "
                                              "neighbours (auto: k / 3)"),
    ("pca", "solver"): ("str", "auto, exact (covariance eigendecomposition) or randomized"),
    ("mds", "tol"): ("float", "stop when the stress falls by less than this fraction of itself"),
    ("mds", "init"): ("array", "an N x n_components start (one run)"),
    ("mds", "weights"): ("array", "N x N weights w_ij (symmetric, >= 0)"),
    ("lmds", "landmarks"): ("int or 'auto'", "landmarks (auto: min(N, 1000))"),
    ("isomap", "landmarks"): ("int", "landmark Isomap: geodesics from this many landmarks only (0: all points)"),
    ("cluster", "max-iters"): ("int", "k-means iterations per run"),
    ("klda", "dim"): ("int or 'auto'", "discriminant directions"),
    ("lda", "dim"): ("int or 'auto'", "discriminant directions"),
}
for _m in ("sammon", "nmds"):
    METHOD_OPTIONS[(_m, "tol")] = METHOD_OPTIONS[("mds", "tol")]
    METHOD_OPTIONS[(_m, "init")] = METHOD_OPTIONS[("mds", "init")]
for _m in ("cluster", "diffmap", "isomap", "lle", "mlle", "ltsa", "hlle"):
    for _o in ("sigma", "perplexity"):
        METHOD_OPTIONS[(_m, _o)] = METHOD_OPTIONS[("le", _o)]
for _m in ("cluster", "diffmap", "isomap", "lle", "mlle", "ltsa", "hlle", "le"):
    METHOD_OPTIONS[(_m, "tol")] = ("float", "Lanczos relative tolerance (0: machine precision)")
METHOD_OPTIONS[("cluster", "reg")] = METHOD_OPTIONS[("le", "reg")] = ("float", "LLL: the weights' regulariser, "
                                                                              "times the local Gram matrix's trace")


def describe(method, option):
    """(type, meaning) of a method's option; KeyError for one not listed."""
    return METHOD_OPTIONS.get((method, option)) or OPTIONS[option]
