"""Results against independent references: numpy/scipy eigendecompositions
written out here, scikit-learn's own implementations where they compute the
same thing, and the quality of a t-SNE map of well-separated blobs."""

import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from sklearn.datasets import make_blobs, make_swiss_roll
from sklearn.manifold import Isomap as SkIsomap
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier, kneighbors_graph

import nlembed


def same_up_to_sign(a, b, rtol=1e-4, atol=1e-6):
    """Columns equal up to each one's sign."""
    assert a.shape == b.shape
    for j in range(a.shape[1]):
        s = np.sign(np.dot(a[:, j], b[:, j])) or 1.0
        np.testing.assert_allclose(a[:, j], s * b[:, j], rtol=rtol, atol=atol * np.abs(b[:, j]).max())


def knn_accuracy(E, y, k=10):
    return cross_val_score(KNeighborsClassifier(k), E, y, cv=5).mean()


@pytest.fixture(scope="module")
def roll():
    X, t = make_swiss_roll(400, noise=0.05, random_state=0)
    return X.astype(np.float32), t


def test_pca_against_svd():
    rng = np.random.RandomState(0)
    X = (rng.randn(300, 8) @ rng.randn(8, 8)).astype(np.float32)
    p = nlembed.PCA(n_components=3).fit(X)
    Xd = X.astype(np.float64)
    mean = Xd.mean(0)
    U, S, Vt = np.linalg.svd(Xd - mean, full_matrices=False)
    same_up_to_sign(p.embedding_, (Xd - mean) @ Vt[:3].T)
    np.testing.assert_allclose(p.explained_variance_ratio_, S[:3] ** 2 / np.sum(S ** 2), rtol=1e-5)
    # the reverse map: mean + scores V^T
    back = p.inverse_transform(p.embedding_[:5])
    np.testing.assert_allclose(back, mean + ((Xd[:5] - mean) @ Vt[:3].T) @ Vt[:3], rtol=1e-4, atol=1e-4)
    # new points: the same projection
    np.testing.assert_allclose(p.transform(X[:7]), p.embedding_[:7], rtol=1e-5, atol=1e-5)


def test_classical_mds_against_eigendecomposition(roll):
    X, _ = roll
    D = cdist(X.astype(np.float64), X.astype(np.float64))
    n = len(D)
    J = np.eye(n) - 1.0 / n
    B = -0.5 * J @ (D ** 2) @ J
    w, V = np.linalg.eigh(B)
    w, V = w[::-1][:2], V[:, ::-1][:, :2]
    ref = V * np.sqrt(w)
    m = nlembed.ClassicalMDS(metric="precomputed").fit(D.astype(np.float32))
    same_up_to_sign(m.embedding_, ref, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(m.eigenvalues_, w, rtol=1e-4)
    # of the points themselves: the same map (PCA scores)
    same_up_to_sign(nlembed.ClassicalMDS().fit_transform(X), ref, rtol=1e-3, atol=1e-4)


def test_kernel_pca_against_eigendecomposition(roll):
    X, _ = roll
    gamma = 0.02
    K = np.exp(-gamma * cdist(X.astype(np.float64), X.astype(np.float64), "sqeuclidean"))
    n = len(K)
    J = np.eye(n) - 1.0 / n
    w, V = np.linalg.eigh(J @ K @ J)
    w, V = w[::-1][:2], V[:, ::-1][:, :2]
    k = nlembed.KernelPCA(kernel="gaussian", gamma=gamma).fit(X)
    same_up_to_sign(k.embedding_, V * np.sqrt(w), rtol=1e-3, atol=1e-4)
    # the kernel matrix given (scikit-learn's kernel="precomputed")
    p = nlembed.KernelPCA(kernel="precomputed").fit(K.astype(np.float32))
    same_up_to_sign(p.embedding_, V * np.sqrt(w), rtol=1e-3, atol=1e-4)


def test_laplacian_eigenmaps_against_generalised_eigenproblem():
    """LE of given affinities W: L v = lambda D v (random-walk), the d
    vectors after the constant one, V^T D V = I."""
    X, _ = make_blobs(200, 5, centers=1, random_state=2)
    A = kneighbors_graph(X, 8, mode="connectivity", include_self=False)
    W = ((A + A.T) / 2).toarray()
    Dg = np.diag(W.sum(1))
    w, V = scipy.linalg.eigh(Dg - W, Dg)
    le = nlembed.LaplacianEigenmaps(affinity="precomputed").fit(W.astype(np.float32))
    same_up_to_sign(le.embedding_, V[:, 1:3], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(le.eigenvalues_[1:3], w[1:3], rtol=1e-5, atol=1e-9)
    # the same W as a sparse matrix
    les = nlembed.LaplacianEigenmaps(affinity="precomputed").fit(sp.csr_matrix(W))
    same_up_to_sign(les.embedding_, le.embedding_, rtol=1e-6, atol=1e-8)


def test_isomap_against_scikit_learn(roll):
    X, _ = roll
    ours = nlembed.Isomap(n_neighbors=10).fit_transform(X)
    theirs = SkIsomap(n_neighbors=10, n_components=2).fit_transform(X.astype(np.float64))
    same_up_to_sign(ours, theirs, rtol=1e-3, atol=1e-3)


def test_lda_directions_against_scatter_eigenproblem():
    """LDA's axes are the top generalised eigenvectors of (S_b, S_t): the
    projections agree up to each axis's scale and sign."""
    X, y = make_blobs(300, 6, centers=4, cluster_std=3.0, random_state=1)
    X = X.astype(np.float32)
    Xd = X.astype(np.float64)
    mean = Xd.mean(0)
    St = (Xd - mean).T @ (Xd - mean)
    Sb = sum(np.sum(y == c) * np.outer(Xd[y == c].mean(0) - mean, Xd[y == c].mean(0) - mean) for c in range(4))
    w, V = scipy.linalg.eigh(Sb, St)
    ref = (Xd - mean) @ V[:, ::-1][:, :2]
    ours = nlembed.LDA(n_components=2).fit_transform(X, y)
    for j in range(2):
        assert abs(np.corrcoef(ours[:, j], ref[:, j])[0, 1]) > 1 - 1e-6
    # labels may be any hashable values
    named = nlembed.LDA(n_components=2).fit(X, np.array(["a", "b", "c", "d"])[y])
    np.testing.assert_allclose(named.embedding_, ours, rtol=1e-6, atol=1e-9)
    assert list(named.classes_) == ["a", "b", "c", "d"]


def test_tsne_separates_blobs():
    X, y = make_blobs(1000, 50, centers=6, cluster_std=1.0, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nlembed.ConvergenceWarning)
        E = nlembed.TSNE(n_jobs=1).fit_transform(X)
    assert E.shape == (1000, 2) and np.isfinite(E).all()
    assert knn_accuracy(E, y) > 0.99


def test_tsne_on_precomputed_distances_and_cosine():
    X, y = make_blobs(600, 20, centers=5, random_state=4)
    D = cdist(X, X).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nlembed.ConvergenceWarning)
        t = nlembed.TSNE(metric="precomputed", n_jobs=1).fit(D)
        assert knn_accuracy(t.embedding_, y) > 0.99
        # a sparse graph of distances (scikit-learn's mode="distance")
        G = kneighbors_graph(X, 90, mode="distance")
        g = nlembed.TSNE(metric="precomputed", n_jobs=1).fit(G)
        assert knn_accuracy(g.embedding_, y) > 0.99
        c = nlembed.TSNE(metric="cosine", n_jobs=1).fit(X)
        assert knn_accuracy(c.embedding_, y) > 0.95


def test_cosine_is_euclidean_on_unit_rows(roll):
    X, _ = roll
    X = X + np.float32(20)  # away from the origin, so that directions differ
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    a = nlembed.LaplacianEigenmaps(metric="cosine").fit_transform(X)
    b = nlembed.LaplacianEigenmaps().fit_transform(U)
    same_up_to_sign(a, b, rtol=1e-3, atol=1e-4)


def test_spectral_clustering_finds_blobs():
    X, y = make_blobs(400, 5, centers=4, random_state=5)
    c = nlembed.SpectralClustering(n_clusters=4).fit(X)
    assert c.labels_.dtype == np.int32 and set(c.labels_) == {0, 1, 2, 3}
    assert adjusted_rand_score(y, c.labels_) == 1.0
    assert np.array_equal(c.fit_predict(X), c.labels_)
    # new points from the same blobs get their blob's cluster
    Xn, yn = make_blobs(100, 5, centers=4, random_state=5)  # the same centres
    assert adjusted_rand_score(yn, c.predict(Xn)) > 0.95


def test_smacof_lowers_the_classical_start_stress(roll):
    X, _ = roll
    c = nlembed.ClassicalMDS().fit(X)
    m = nlembed.MDS(n_init=1).fit(X)  # one run, from classical MDS
    assert m.stress_ <= c.report_["raw_stress"] * (1 + 1e-9)
    assert m.n_iter_ >= 1
    # a given start, as scikit-learn's MDS init: one run from it
    rng = np.random.RandomState(0)
    start = rng.randn(len(X), 2)
    a = nlembed.MDS(init=start, max_iter=5).fit(X)
    b = nlembed.MDS(init=start, max_iter=5).fit(X)
    assert np.array_equal(a.embedding_, b.embedding_)
    assert not np.allclose(a.embedding_, m.embedding_)


def test_tsne_kl_divergence_as_scikit_learn():
    """kl_divergence_ is KL(P || Q), scikit-learn's figure (within 10% on
    load_digits, whose objective E = KL + H(P) is 15 times larger), and
    objective_ the E the optimiser minimised."""
    from sklearn.datasets import load_digits
    from sklearn.manifold import TSNE as SkTSNE
    X = load_digits().data
    ours = nlembed.TSNE(n_jobs=2).fit(X)
    theirs = SkTSNE(init="pca", learning_rate="auto", random_state=0, n_jobs=2).fit(X)
    assert abs(ours.kl_divergence_ - theirs.kl_divergence_) <= 0.1 * theirs.kl_divergence_, \
        (ours.kl_divergence_, theirs.kl_divergence_)
    assert ours.objective_ > 10 * ours.kl_divergence_  # E holds H(P) (about 11 nats here) besides
    assert ours.report_["kl_divergence"] == ours.kl_divergence_


@pytest.mark.parametrize("affinity,kw", [("nearest_neighbors", {"n_neighbors": 10}), ("rbf", {"gamma": 0.05})])
def test_spectral_clustering_as_scikit_learn(affinity, kw):
    """scikit-learn's affinity values give scikit-learn's clusters (ARI
    against its labels, and against the truth, on separated blobs)."""
    from sklearn.cluster import SpectralClustering as SkSpectralClustering
    X, y = make_blobs(300, 5, centers=4, cluster_std=1.5, random_state=3)
    X = X.astype(np.float32)
    ours = nlembed.SpectralClustering(4, affinity=affinity, n_jobs=1, **kw).fit(X).labels_
    theirs = SkSpectralClustering(4, affinity=affinity, random_state=0, **kw).fit(X).labels_
    assert adjusted_rand_score(theirs, ours) > 0.95
    assert adjusted_rand_score(y, ours) > 0.95
