"""Maps of new points, reverse maps, and pickling (through the library's
model file) within a process and across processes."""

import copy
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_swiss_roll
from sklearn.neighbors import KNeighborsClassifier

import nlembed

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)


@pytest.fixture(autouse=True)
def quiet_fixed_rate():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nlembed.ConvergenceWarning)
        yield


@pytest.fixture(scope="module")
def roll():
    X, _ = make_swiss_roll(500, noise=0.05, random_state=0)
    return X.astype(np.float32)


# Classes whose map returns a training point's own coordinates (exactly, or
# to rounding): the projections and the spectral maps of training points.
EXACT_ON_TRAINING = [nlembed.PCA, nlembed.ClassicalMDS, nlembed.LandmarkMDS, nlembed.KernelPCA,
                     nlembed.LaplacianEigenmaps, nlembed.LLE, nlembed.MLLE, nlembed.LTSA, nlembed.HLLE,
                     nlembed.Isomap, nlembed.DiffusionMaps, nlembed.KernelEigenmaps]


@pytest.mark.parametrize("cls", EXACT_ON_TRAINING, ids=lambda c: c.__name__)
def test_map_of_training_points(cls, roll):
    est = cls().fit(roll)
    np.testing.assert_allclose(est.transform(roll[:60]), est.embedding_[:60], rtol=1e-6,
                               atol=1e-6 * np.abs(est.embedding_).max())


def test_lda_map_of_training_points():
    X, y = make_blobs(300, 6, centers=4, random_state=1)
    lda = nlembed.LDA().fit(X, y)
    np.testing.assert_allclose(lda.transform(X), lda.embedding_, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [nlembed.TSNE, nlembed.TEE, nlembed.EE], ids=lambda c: c.__name__)
def test_embedding_maps_place_new_points_in_their_class(cls):
    """F(y) of held-out points: a kNN classifier trained on the map labels
    them as their blob; training points land near their own place."""
    X, y = make_blobs(600, 30, centers=5, random_state=7)
    Xtr, ytr, Xte, yte = X[:450], y[:450], X[450:], y[450:]
    est = cls(n_jobs=1).fit(Xtr)
    clf = KNeighborsClassifier(10).fit(est.embedding_, ytr)
    assert clf.score(est.transform(Xte), yte) > 0.97
    spread = est.embedding_.std()
    assert np.median(np.linalg.norm(est.transform(Xtr[:50]) - est.embedding_[:50], axis=1)) < 0.1 * spread


def test_ee_reverse_map(roll):
    """EE's f(x) (W- of squared distances): training points' coordinates
    map back to the training points; every row finite."""
    ee = nlembed.EE(wneg="sqdist", max_iter=100, n_jobs=1).fit(roll)
    np.testing.assert_allclose(ee.inverse_transform(ee.embedding_[:20]), roll[:20], rtol=1e-4, atol=1e-3)
    mid = (ee.embedding_[:20] + ee.embedding_[20:40]) / 2
    assert np.isfinite(ee.inverse_transform(mid)).all()
    with pytest.raises(ValueError, match="sqdist"):  # the library's condition, its words
        nlembed.EE(max_iter=5, n_jobs=1).fit(roll).inverse_transform(ee.embedding_[:3])


def test_kernel_eigenmaps_reverse_map(roll):
    k = nlembed.KernelEigenmaps().fit(roll)
    back = k.inverse_transform(k.transform(roll))
    base = np.linalg.norm(roll - roll.mean(0), axis=1).mean()
    assert back.shape == roll.shape and back.dtype == np.float32
    assert np.linalg.norm(back - roll, axis=1).mean() < 0.8 * base


def test_no_model_after_precomputed_fit(roll):
    from scipy.spatial.distance import cdist
    D = cdist(roll, roll).astype(np.float32)
    t = nlembed.TSNE(metric="precomputed", n_jobs=1).fit(D)
    with pytest.raises(ValueError, match="precomputed"):
        t.transform(D[:3])
    k = nlembed.PCA(keep_model=False).fit(roll)
    with pytest.raises(ValueError, match="keep_model"):
        k.transform(roll[:3])


def test_mds_has_no_transform(roll):
    assert not hasattr(nlembed.MDS(), "transform") and not hasattr(nlembed.MDS(), "inverse_transform")
    assert not hasattr(nlembed.TSNE(), "inverse_transform")
    assert hasattr(nlembed.EE(), "inverse_transform")


# --- pickling ------------------------------------------------------------------------------------

PICKLED = [(nlembed.TSNE, {}), (nlembed.EE, {"wneg": "sqdist", "max_iter": 100}), (nlembed.PCA, {}),
           (nlembed.LaplacianEigenmaps, {}), (nlembed.LLE, {}), (nlembed.KernelEigenmaps, {}),
           (nlembed.KernelPCA, {}), (nlembed.LandmarkMDS, {}), (nlembed.SpectralClustering, {"n_clusters": 3}),
           (nlembed.Isomap, {"metric": "cosine"})]


@pytest.mark.parametrize("cls,kw", PICKLED, ids=[c.__name__ for c, _ in PICKLED])
def test_pickle_round_trip(cls, kw, roll):
    est = cls(n_jobs=1, **kw).fit(roll)
    again = pickle.loads(pickle.dumps(est))
    assert again.get_params() == est.get_params()
    assert np.array_equal(again.embedding_, est.embedding_)
    assert again.report_ == est.report_
    new = roll[:40] + np.float32(0.3)
    if hasattr(est, "transform"):
        assert np.array_equal(again.transform(new), est.transform(new))
    else:
        assert np.array_equal(again.predict(new), est.predict(new))
        assert np.array_equal(again.labels_, est.labels_)
    if hasattr(est, "inverse_transform"):
        assert np.array_equal(again.inverse_transform(est.embedding_[:5]), est.inverse_transform(est.embedding_[:5]))
    twin = copy.deepcopy(est)
    assert np.array_equal(twin.embedding_, est.embedding_)


def test_pickle_unfitted_and_modelless(roll):
    t = pickle.loads(pickle.dumps(nlembed.TSNE(perplexity=7)))
    assert t.perplexity == 7 and not hasattr(t, "embedding_")
    k = pickle.loads(pickle.dumps(nlembed.PCA(keep_model=False).fit(roll)))
    assert k.embedding_.shape == (len(roll), 2)
    with pytest.raises(ValueError, match="kept no model"):
        k.transform(roll[:3])


CHILD = r"""
import pickle, sys
import numpy as np
import nlembed
with open(sys.argv[1], "rb") as f:
    models = pickle.load(f)
new = np.load(sys.argv[2])
out = {}
for name, est in models.items():
    out[name] = est.transform(new) if hasattr(est, "transform") else est.predict(new).astype(np.float64)
np.savez(sys.argv[3], **out)
"""


def test_pickle_across_processes(tmp_path, roll):
    """Models pickled here transform in a fresh interpreter, with the same
    results."""
    models = {cls.__name__: cls(n_jobs=1, **kw).fit(roll) for cls, kw in PICKLED}
    new = roll[:50] * np.float32(1.01)
    with open(tmp_path / "models.pkl", "wb") as f:
        pickle.dump(models, f)
    np.save(tmp_path / "new.npy", new)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "models.pkl"), str(tmp_path / "new.npy"),
                        str(tmp_path / "out.npz")], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "out.npz")
    for name, est in models.items():
        mine = est.transform(new) if hasattr(est, "transform") else est.predict(new)
        assert np.array_equal(out[name], mine), name


def test_map_options_for_one_call(roll):
    """The maps' own options (the library's rows of `nlembed transform`) go
    with a call: F(y) with max_iter=0 is its start, which more iterations
    move; the next call without them is the default map again; EE's f(x)
    iterates from the nearest training point's y when asked; a bad value or
    an option the map lacks is a ValueError naming it."""
    tsne = nlembed.TSNE(perplexity=10, max_iter=200, n_jobs=1).fit(roll[:400])
    new = roll[400:450]
    default = tsne.transform(new)
    start = tsne.transform(new, max_iter=0)
    assert np.abs(start - default).max() > 1e-3
    np.testing.assert_array_equal(tsne.transform(new), default)  # back to the default after the call
    np.testing.assert_array_equal(tsne.transform(new, max_iter=0, repulsion="exact"), start)
    with pytest.raises(ValueError, match="max_iter"):
        tsne.transform(new, max_iter=-1)
    with pytest.raises(ValueError, match="fgt_reach|fgt-reach"):
        tsne.transform(new, fgt_reach=3)
    ee = nlembed.EE(wneg="sqdist", max_iter=100, n_jobs=1).fit(roll[:400])
    mid = (ee.embedding_[:20] + ee.embedding_[20:40]) / 2
    nearest = ee.inverse_transform(mid)
    moved = ee.inverse_transform(mid, max_iter=50)
    assert np.isfinite(moved).all() and np.abs(moved - nearest).max() > 1e-3
    np.testing.assert_array_equal(ee.inverse_transform(mid), nearest)
