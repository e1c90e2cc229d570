"""The binding itself: parameters against the library's options, the
context settings (seeds, threads), input conversion without copies, errors
and warnings, the ImportError when the library is missing."""

import ctypes
import inspect
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import make_blobs

import nlembed
from nlembed import _core
from nlembed._estimators import CONTEXT, METHODS, _from_text

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)


def blobs(n=300, d=10, centers=4, seed=0):
    X, y = make_blobs(n, d, centers=centers, random_state=seed)
    return X.astype(np.float32), y


# --- the table against the library -----------------------------------------------------------


def test_every_method_has_a_class():
    assert sorted(nlembed.ESTIMATORS) == sorted(nlembed.method_names())


@pytest.mark.parametrize("spec", METHODS, ids=lambda s: s.cls)
def test_every_parameter_is_a_library_option(spec):
    """Each Python parameter names a real option of the method (or a field
    of the fit's input: init, weights)."""
    options = set(_core.Estimator(spec.method).options())
    for py, libname in spec.params:
        if libname.startswith("@"):
            assert libname[1:] in ("init", "weights"), (py, libname)
        else:
            assert libname in options, f"{spec.cls}.{py} -> {libname!r}, not an option of {spec.method}"


@pytest.mark.parametrize("spec", METHODS, ids=lambda s: s.cls)
def test_every_library_option_is_reachable(spec):
    """Each option the library lists for the method is some parameter's."""
    reached = {libname for _, libname in spec.params}
    missing = [o for o in _core.Estimator(spec.method).options() if o not in reached]
    assert not missing, f"{spec.cls} does not reach the library options {missing}"


@pytest.mark.parametrize("spec", METHODS, ids=lambda s: s.cls)
def test_signature_is_explicit(spec):
    cls = nlembed.ESTIMATORS[spec.method]
    sig = inspect.signature(cls.__init__)
    kinds = {p.kind for p in sig.parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD not in kinds and inspect.Parameter.VAR_POSITIONAL not in kinds
    names = [n for n in sig.parameters if n != "self"]
    assert names == [py for py, _ in spec.params] + list(spec.own) + list(spec.aliases) + CONTEXT
    assert names[0] == ("n_neighbors" if spec.kind == "graph" else "n_clusters" if spec.kind == "cluster"
                        else "n_components")
    est = cls()
    assert set(est.get_params()) == set(names)
    # the real defaults: what a fresh library estimator of the method reports
    # (or scikit-learn's, where the class follows it), never all None
    fresh = _core.Estimator(spec.method)
    for py, libname in spec.params:
        if libname.startswith("@"):
            assert est.get_params()[py] is None
            continue
        value = est.get_params()[py]
        assert sig.parameters[py].default == value
        want = spec.py_defaults.get(py, _from_text(fresh.get(libname)))
        assert value == want and type(value) is type(want), (py, value, want)
    assert all(est.get_params()[a] is None for a in spec.aliases)
    # one docstring entry per parameter: "name : type, default=value" and its meaning
    doc = cls.__doc__
    for n in names:
        m = re.search(rf"^{n} : ([^,\n]+), default=([^\n]+)\n    (\S.*)$", doc, re.M)
        assert m, f"{spec.cls}: no docstring line for {n}"
        if n in est.get_params() and n not in CONTEXT:
            assert m.group(2) == repr(est.get_params()[n]), (n, m.group(2))


def test_scikit_learn_defaults():
    assert nlembed.SpectralClustering().n_clusters == 8
    assert nlembed.SpectralClustering().library_options()["clusters"] == "8"
    assert nlembed.TSNE().perplexity == "auto" and nlembed.TSNE().theta == 0.5
    assert "scikit-learn's 5" in nlembed.Isomap.__doc__  # why its n_neighbors is not 5


def test_params_round_trip_and_clone():
    t = nlembed.TSNE(perplexity=12.5, n_neighbors=40, max_iter=100, random_state=3, n_jobs=1)
    assert t.get_params()["perplexity"] == 12.5
    t2 = clone(t).set_params(learning_rate=200.0)
    assert t2.get_params()["n_neighbors"] == 40 and t2.learning_rate == 200.0
    assert "perplexity=12.5" in repr(t)


def test_library_options_before_and_after_fit():
    X, _ = blobs(200)
    t = nlembed.TSNE(n_neighbors=30, perplexity=8, n_jobs=1)
    before = t.library_options()
    assert before["neighbors"] == "30" and before["perplexity"] == "8" and before["learning-rate"] == "auto"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.fit(X)
    after = t.library_options()
    assert after["learning-rate"] != "auto"  # resolved by the library
    assert t.report_["options"]["perplexity"] == 8


def test_values_as_text():
    """Booleans, integers, floats (full precision) and names reach the
    library as it reads them."""
    t = nlembed.TSNE(gains=False, n_neighbors=np.int64(31), early_exaggeration=np.float32(6.0),
                     theta=0.123456789012345, repulsion="bh", init="random")
    o = t.library_options()
    assert o["gains"] == "false" and o["neighbors"] == "31" and o["exaggeration"] == "6"
    assert float(o["theta"]) == 0.123456789012345
    assert o["repulsion"] == "bh" and o["init"] == "random"


# --- input -------------------------------------------------------------------------------------


def test_float32_c_contiguous_is_not_copied(monkeypatch):
    """The library reads the caller's own float32 C-contiguous array."""
    X, _ = blobs(100)
    seen = []
    real = _core.as_matf

    def spy(A):
        m, keep = real(A)
        seen.append(ctypes.cast(m.data, ctypes.c_void_p).value)
        return m, keep

    monkeypatch.setattr(_core, "as_matf", spy)
    nlembed.PCA().fit(X)
    assert seen == [X.ctypes.data]
    # a float64 or Fortran-ordered array is converted once, not in place
    seen.clear()
    nlembed.PCA().fit(np.asfortranarray(X))
    assert seen and seen[0] != X.ctypes.data


def test_float64_and_int_inputs_give_the_float32_result():
    X, _ = blobs(150)
    a = nlembed.PCA().fit_transform(X)
    b = nlembed.PCA().fit_transform(X.astype(np.float64))
    assert np.array_equal(a, b)
    Xi = np.round(X * 10).astype(np.int32)
    assert np.array_equal(nlembed.PCA().fit_transform(Xi), nlembed.PCA().fit_transform(Xi.astype(np.float32)))


def test_sparse_conversion_keeps_arrays_and_sorts():
    """CSR with int64 row pointers and int32 indices reaches the library as
    nle_csr; unsorted or duplicate entries are made canonical first; COO is
    converted; float64 values stay float64."""
    A = sp.random(30, 8, density=0.4, format="csr", random_state=1, dtype=np.float64)
    m, keep = _core.as_csr(A)
    assert m.dtype == 1 and m.nnz == A.nnz and m.rows == 30 and m.cols == 8
    assert keep[3].ctypes.data == A.data.ctypes.data  # the values are the caller's
    B = sp.csr_matrix((np.array([1.0, 2.0, 3.0], np.float32), np.array([2, 0, 2]), np.array([0, 3, 3])),
                      shape=(2, 3))  # unsorted, with a duplicate
    m, keep = _core.as_csr(B)
    assert list(keep[2]) == [0, 2] and list(keep[3]) == [2.0, 4.0] and m.dtype == 0
    m, keep = _core.as_csr(B.tocoo())
    assert m.nnz == 2


def test_sparse_points_equal_dense_points():
    """A kNN method on a CSR of points gives the embedding of the same dense
    points (the same exact neighbours)."""
    X, _ = blobs(200, centers=1)
    X[np.abs(X) < 3] = 0
    dense = nlembed.LaplacianEigenmaps(n_neighbors=8).fit_transform(X)
    sparse = nlembed.LaplacianEigenmaps(n_neighbors=8).fit_transform(sp.csr_matrix(X))
    np.testing.assert_allclose(np.abs(sparse), np.abs(dense), rtol=1e-4, atol=1e-6)


# --- seeds and threads -------------------------------------------------------------------------


def test_random_state():
    X, _ = blobs(300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = nlembed.TSNE(init="random", n_jobs=1).fit_transform(X)
        b = nlembed.TSNE(init="random", n_jobs=1, random_state=1).fit_transform(X)  # None: the library's seed 1
        c = nlembed.TSNE(init="random", n_jobs=1, random_state=7).fit_transform(X)
        d = nlembed.TSNE(init="random", n_jobs=1, random_state=7).fit_transform(X)
        e = nlembed.TSNE(init="random", n_jobs=1, random_state=np.random.RandomState(0)).fit_transform(X)
    assert np.array_equal(a, b) and np.array_equal(c, d) and not np.array_equal(a, c)
    assert e.shape == a.shape
    with pytest.raises(ValueError, match="random_state"):
        nlembed.TSNE(random_state=-1).fit(X)
    with pytest.raises(ValueError, match="random_state"):
        nlembed.TSNE(random_state="seed").fit(X)


@pytest.mark.parametrize("cls,kw", [(nlembed.TSNE, {"max_iter": 200}), (nlembed.EE, {"max_iter": 60}),
                                    (nlembed.LaplacianEigenmaps, {"components": "allow"}),
                                    (nlembed.MDS, {}), (nlembed.KernelPCA, {}),
                                    (nlembed.SpectralClustering, {"n_clusters": 4})],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_threads_give_the_same_bits(cls, kw):
    X, _ = blobs(400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = cls(n_jobs=1, **kw).fit(X)
        two = cls(n_jobs=2, **kw).fit(X)
    assert np.array_equal(one.embedding_, two.embedding_)
    if hasattr(one, "labels_"):
        assert np.array_equal(one.labels_, two.labels_)


def test_n_jobs_values():
    X, _ = blobs(100)
    for n_jobs in (None, -1, -2, 1, 2):
        nlembed.PCA(n_jobs=n_jobs).fit(X)
    for bad in (0, 1.5, "all"):
        with pytest.raises(ValueError, match="n_jobs"):
            nlembed.PCA(n_jobs=bad).fit(X)


# --- errors --------------------------------------------------------------------------------------


def test_bad_option_values_name_the_parameter():
    X, _ = blobs(100)
    with pytest.raises(ValueError, match=r"perplexity.*parameter perplexity"):
        nlembed.TSNE(perplexity="high").fit(X)
    with pytest.raises(ValueError, match=r"neighbors.*parameter n_neighbors"):
        nlembed.TSNE(n_neighbors=2.5).fit(X)
    with pytest.raises(ValueError, match=r"repulsion.*parameter repulsion"):
        nlembed.TSNE(repulsion="magic").fit(X)
    with pytest.raises(ValueError, match="metric"):
        nlembed.TSNE(metric="manhattan").fit(X)
    with pytest.raises(ValueError, match="theta"):
        nlembed.TSNE(theta=[1, 2]).fit(X)


def test_range_errors_at_fit_name_the_python_parameter():
    """The library checks ranges at fit and names its option; a renamed
    one gets its Python name added."""
    X, _ = blobs(50)
    with pytest.raises(ValueError, match=r"dim .*\[ClassicalMDS: dim is parameter n_components\]"):
        nlembed.ClassicalMDS(n_components=60).fit(X)
    with pytest.raises(ValueError, match=r"neighbors=500 neighbours of 50 points"):
        nlembed.LaplacianEigenmaps(n_neighbors=500).fit(X)


@pytest.mark.parametrize("cls", [nlembed.TSNE, nlembed.PCA, nlembed.LaplacianEigenmaps, nlembed.MDS,
                                 nlembed.KernelPCA, nlembed.SpectralClustering, nlembed.KernelEigenmaps],
                         ids=lambda c: c.__name__)
def test_bad_input_raises_value_error_naming_x(cls):
    X, _ = blobs(60)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match=r"Input X contains NaN"):
        cls().fit(bad)
    bad[3, 2] = np.inf
    with pytest.raises(ValueError, match=r"X contains infinity"):
        cls().fit(bad)
    with pytest.raises(ValueError, match=r"Expected 2D array"):
        cls().fit(X[0])
    with pytest.raises(ValueError, match=r"Found array with dim 3"):
        cls().fit(X.reshape(6, 10, 10))
    with pytest.raises(ValueError, match=r"0 sample"):
        cls().fit(X[:0])
    with pytest.raises(ValueError, match=r"could not convert|Complex data not supported"):
        cls().fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match=r"Complex data not supported"):
        cls().fit(X.astype(np.complex64))


def test_transform_input_errors():
    X, _ = blobs(100)
    p = nlembed.PCA().fit(X)
    with pytest.raises(ValueError, match=r"X has 3 features, but PCA is expecting 10 features"):
        p.transform(X[:, :3])
    bad = X[:4].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"Input X contains NaN"):
        p.transform(bad)
    with pytest.raises(ValueError, match=r"expects 2"):
        p.inverse_transform(np.zeros((3, 5)))
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        nlembed.PCA().transform(X)


def test_precomputed_input_errors():
    X, _ = blobs(50)
    with pytest.raises(ValueError, match=r"precomputed.*N x N"):
        nlembed.TSNE(metric="precomputed").fit(X)
    with pytest.raises(ValueError, match=r"affinities"):
        nlembed.LaplacianEigenmaps(affinity="precomputed", metric="cosine").fit(X)


def test_lda_needs_y():
    X, y = blobs(100)
    with pytest.raises(ValueError, match="requires y"):
        nlembed.LDA().fit(X, None)
    with pytest.raises(ValueError, match="Unknown label type"):
        nlembed.LDA().fit(X, np.linspace(0, 1, len(X)))


def test_memory_cap_is_memory_error():
    X, _ = blobs(400)
    with pytest.raises(MemoryError, match="memory cap"):
        nlembed.MDS(max_memory=10_000).fit(X)  # 400 x 400 dissimilarities are 640 kB
    with pytest.raises(MemoryError, match="memory cap"):
        nlembed.MDS(max_memory="10K").fit(X)
    with pytest.raises(ValueError, match="max_memory"):
        nlembed.MDS(max_memory="lots").fit(X)


def test_not_converged_is_a_convergence_warning():
    X, _ = blobs(200)
    with pytest.warns(nlembed.ConvergenceWarning) as record:
        nlembed.EE(max_iter=2, step="line-search", n_jobs=1).fit(X)
    assert record[0].filename == __file__  # pointed at the caller's line
    with pytest.warns(nlembed.ConvergenceWarning) as record:
        nlembed.EE(max_iter=2, step="line-search", n_jobs=1).fit_transform(X)  # through set_output's wrapper
    assert record[0].filename == __file__


def separated(n=300):
    """Four tight blobs far apart: a kNN graph of small k has 4 components."""
    X, y = make_blobs(n, 10, centers=4, cluster_std=0.3, center_box=(-100, 100), random_state=0)
    return X.astype(np.float32), y


def test_library_warnings_are_python_warnings():
    """What the library records (nle_ctx_warning) is raised as a Python
    warning at verbose=0, its options in Python's names, pointed at the
    caller's line; the record is cleared, so the next call does not repeat
    it."""
    X, _ = separated()
    t = nlembed.TSNE(metric="cosine", perplexity=5, n_jobs=1)
    with pytest.warns(UserWarning, match=r"W\+ has 4 connected components.*a larger n_neighbors or perplexity") \
            as record:
        t.fit(X)
    assert record[0].filename == __file__
    assert not any("{@" in str(w.message) for w in record)
    assert not any(issubclass(w.category, nlembed.ConvergenceWarning) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.transform(X[:3])
    assert _core.lib.nle_ctx_warning_count(t._handle.ctx) == 0


def test_warning_kinds_and_status_warnings(monkeypatch):
    """A warning of kind NLE_WARN_CONVERGENCE and a status NOT_CONVERGED
    are ConvergenceWarnings, each once; the others UserWarnings."""
    X, _ = blobs(200)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        nlembed.EE(max_iter=2, step="line-search", n_jobs=1).fit(X)
    conv = [w for w in record if issubclass(w.category, nlembed.ConvergenceWarning)]
    assert len(conv) == 1 and "stopped after 2 iterations" in str(conv[0].message)
    kinds = []
    real = _core.lib

    class Fake:  # the record as the library keeps it: one warning of each kind
        def nle_ctx_warning_count(self, ctx):
            return 18

        def nle_ctx_warning(self, ctx, i, kind):
            kind._obj.value = i % 2
            kinds.append(i)
            return b"{@neighbors} and {@components=allow}" if i % 2 == 0 else b"stopped early"

        def __getattr__(self, name):
            return getattr(real, name)

    monkeypatch.setattr(_core, "lib", Fake())
    found = _core.library_warnings(None, 0, lambda t: _core.render_markers(t, {"neighbors": "n_neighbors"}))
    monkeypatch.undo()
    assert kinds == list(range(16))  # NLE_WARNINGS_KEPT of them read
    assert found[0] == (UserWarning, 'n_neighbors and components="allow"')
    assert found[1] == (nlembed.ConvergenceWarning, "stopped early")
    assert found[16][0] is UserWarning and "2 more warnings" in found[16][1] and len(found) == 17


def test_markers_rendered_with_python_names():
    r = _core.render_markers
    names = {"neighbors": "n_neighbors", "lambda": "lambda_value", "max-iters": "max_iter"}
    assert r("a larger {@neighbors} or {@perplexity}", names) == "a larger n_neighbors or perplexity"
    assert r("{@components=allow} embeds them", names) == 'components="allow" embeds them'
    assert r("{@lambda=0.5}, {@max-iters=300}, {@gains=true}, {@lambda-start}", names) == \
        "lambda_value=0.5, max_iter=300, gains=True, lambda_start"
    assert r("file {@x.npy} and {@} {@a", names) == "file {@x.npy} and {@} {@a"  # not markers: as they are
    # the library's own error, with Python's names
    X, _ = separated(200)
    with pytest.raises(ValueError) as e:
        nlembed.Isomap(n_neighbors=5, components="error", n_jobs=1).fit(X)
    assert "n_neighbors" in str(e.value) and 'components="join"' in str(e.value) and "{@" not in str(e.value)


def test_a_default_tsne_run_warns_nothing():
    """The fixed-rate schedule ends at its planned iteration count: the
    library reports success, so Python warns nothing."""
    X, _ = blobs(300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nlembed.TSNE(n_jobs=1).fit(X)


def test_a_failed_fit_keeps_the_last_good_fit():
    X, _ = blobs(50)
    t = nlembed.PCA().fit(X)
    first = t.embedding_.copy()
    with pytest.raises(ValueError):
        t.set_params(n_components=500).fit(X)
    with pytest.raises(ValueError):
        t.fit(np.zeros((40, 3), np.float32))
    assert np.array_equal(t.embedding_, first) and t.n_features_in_ == 10
    assert t.transform(X[:2]).shape == (2, 2)


# --- the library not found ------------------------------------------------------------------------


def test_import_error_says_how_to_build(tmp_path):
    env = dict(os.environ, NLEMBED_LIBRARY=str(tmp_path / "missing" / "libnlembed.so"), PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", "import nlembed"], env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "ImportError: libnlembed not found: run ./setup.sh build (or make && sudo make install), " \
           "or set NLEMBED_LIBRARY=/path/to/libnlembed.so" in r.stderr
    assert "missing/libnlembed.so" in r.stderr  # and where it looked


def test_import_error_for_a_library_without_the_estimator(tmp_path):
    """A libnlembed too old for the package (no nle_estimator_new): the
    ImportError says so rather than failing at the first call."""
    libz = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    path = next((line.split("=>")[-1].strip() for line in libz.splitlines() if "libz.so.1 " in line), None)
    if path is None:
        pytest.skip("no libz.so.1 to stand in for an old library")
    env = dict(os.environ, NLEMBED_LIBRARY=path, PYTHONPATH=PYTHON_DIR)
    r = subprocess.run([sys.executable, "-c", "import nlembed"], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "without the estimator API" in r.stderr


# --- arrays as parameters: a given start, MDS weights ----------------------------------------


def test_given_start_and_weights():
    """init=array and MDS(weights=array) reach the library in the fit's
    input; wrong shapes are the library's ValueErrors."""
    X, _ = blobs(200, 5)
    start = np.random.RandomState(1).randn(200, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nlembed.ConvergenceWarning)
        a = nlembed.TSNE(init=start, perplexity=10, n_jobs=1, max_iter=100).fit(X)
        b = nlembed.TSNE(init=start, perplexity=10, n_jobs=1, max_iter=100).fit(X)
        c = nlembed.TSNE(init="random", perplexity=10, n_jobs=1, max_iter=100).fit(X)
    assert np.array_equal(a.embedding_, b.embedding_) and not np.array_equal(a.embedding_, c.embedding_)
    assert a.report_["options"]["init"] == "given"
    with pytest.raises(ValueError, match="200 x 2"):
        nlembed.TSNE(init=np.ones((5, 2))).fit(X)
    with pytest.raises(ValueError, match="init"):
        nlembed.TSNE(init=np.full((200, 2), np.nan)).fit(X)
    ones = np.ones((200, 200)) - np.eye(200)
    plain = nlembed.MDS(n_jobs=1).fit(X)
    uniform = nlembed.MDS(weights=ones, n_jobs=1).fit(X)
    np.testing.assert_allclose(uniform.stress_, plain.stress_, rtol=1e-9)
    R = np.random.RandomState(0).rand(200, 200)
    R = (R + R.T) / 2
    np.fill_diagonal(R, 0)
    assert nlembed.MDS(weights=R, n_jobs=1).fit(X).stress_ < plain.stress_
    with pytest.raises(ValueError, match=r"weights: 5 x 5 for 200 points"):
        nlembed.MDS(weights=np.ones((5, 5))).fit(X)
    with pytest.raises(ValueError, match=r"weights: row 0, column 1 is -1"):
        nlembed.MDS(weights=-ones).fit(X)
    with pytest.raises(ValueError, match=r"MDS: parameter init takes an array"):
        nlembed.MDS(init="random").fit(X)


# --- scikit-learn 1.2's names and values ------------------------------------------------------


def test_tsne_takes_scikit_learn_names():
    o = nlembed.TSNE(n_iter=100, method="barnes_hut", angle=0.3, min_grad_norm=1e-7).library_options()
    assert o["max-iters"] == "100" and o["repulsion"] == "bh" and float(o["theta"]) == 0.3
    assert float(o["grad-tol"]) == 1e-7
    assert nlembed.TSNE(method="exact").library_options()["repulsion"] == "exact"
    with pytest.raises(ValueError, match=r"n_iter=100 and max_iter=200 set the same option"):
        nlembed.TSNE(n_iter=100, max_iter=200).fit(blobs(50)[0])
    X, _ = blobs(120)
    a = nlembed.TSNE(n_iter=60, method="exact", n_jobs=1).fit(X)
    assert a.n_iter_ == 60 and a.report_["options"]["repulsion"] == "exact"


def test_output_dtype_as_scikit_learn():
    """TSNE gives float32 (scikit-learn's does, for float64 input too); the
    others float64, as their scikit-learn counterparts."""
    X, _ = blobs(120)
    t = nlembed.TSNE(max_iter=50, n_jobs=1)
    assert t.fit_transform(X.astype(np.float64)).dtype == np.float32 and t.embedding_.dtype == np.float32
    assert t.transform(X[:4]).dtype == np.float32
    assert nlembed.PCA().fit_transform(X.astype(np.float64)).dtype == np.float64
    assert nlembed.LLE(n_jobs=1).fit_transform(blobs(120, centers=1)[0].astype(np.float64)).dtype == np.float64


def test_spectral_clustering_takes_scikit_learn_values():
    X, y = blobs(200, centers=3)
    with pytest.raises(ValueError, match=r"assign_labels='discretize'.*k-means"):
        nlembed.SpectralClustering(3, assign_labels="discretize").fit(X)
    with pytest.raises(MemoryError, match=r"affinity='rbf' is the dense N x N Gaussian kernel: 200 points"):
        nlembed.SpectralClustering(3, affinity="rbf", max_memory="100K").fit(X)
    o = nlembed.SpectralClustering(3, affinity="nearest_neighbors").library_options()
    assert o["affinity"] == "binary" and o["symmetrize"] == "average"
    rbf = nlembed.SpectralClustering(3, affinity="rbf", gamma=0.02, n_jobs=1).fit(X)
    assert rbf.report_["options"]["neighbors"] == 199 and rbf.report_["options"]["affinity"] == "gaussian"
    assert abs(rbf.report_["options"]["sigma"] - 5.0) < 1e-12  # exp(-gamma d^2) = exp(-d^2 / 2 sigma^2)
    with pytest.raises(ValueError, match="gamma > 0"):
        nlembed.SpectralClustering(3, affinity="rbf", gamma=0).fit(X)


def test_graph_classes_match_a_brute_force_search():
    """KNNGraph: each point's k nearest by exact distances (itself out),
    squared; Affinities: symmetric rows of (P + P^T) / 2 whose conditional
    rows have the asked perplexity, 2^H(p_n) = K."""
    X = np.random.RandomState(3).randn(200, 6).astype(np.float32)
    g = nlembed.KNNGraph(n_neighbors=7, knn_method="exact").fit(X)
    D2 = ((X[:, None, :].astype(np.float64) - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(D2, np.inf)
    want = np.argsort(D2, axis=1)[:, :7]
    got = g.graph_.indices.reshape(200, 7)
    assert (np.sort(got, 1) == np.sort(want, 1)).mean() == 1.0
    assert np.allclose(g.graph_.data.reshape(200, 7), np.take_along_axis(D2, want, 1), rtol=1e-4)
    assert g.fit_transform(X).shape == (200, 200)
    a = nlembed.Affinities(perplexity=5, conditional=True).fit(X)
    P = a.graph_.toarray()
    assert np.allclose(P.sum(1), 1)
    H = -np.sum(np.where(P > 0, P * np.log(np.where(P > 0, P, 1)), 0), axis=1)
    assert np.allclose(np.exp(H), 5, rtol=1e-6)
    assert a.betas_.shape == (200,) and (a.betas_ > 0).all()
    W = nlembed.Affinities(perplexity=5).fit(X).graph_
    assert abs(W - W.T).max() < 1e-12 and np.allclose(W.toarray(), (P + P.T) / 2, atol=1e-12)
