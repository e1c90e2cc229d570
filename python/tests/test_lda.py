"""LDA and kernel LDA beside scikit-learn (issue 34): the default solver is
scikit-learn's LinearDiscriminantAnalysis(solver="svd") (its transform up
to signs, its explained_variance_ratio_, predict, predict_proba,
decision_function, score) on rank-deficient data (load_digits has 3
constant pixels); labels are any values, the classes their distinct
values; n_components defaults to min(C - 1, D)."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_blobs
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis as SkLDA

import nlembed


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X, y, SkLDA().fit(X, y), nlembed.LDA().fit(X, y)


def aligned(ours, theirs):
    """ours with each column's sign flipped to agree with theirs."""
    signs = np.sign(np.sum(ours * theirs, axis=0))
    signs[signs == 0] = 1
    return ours * signs


def test_digits_transform_equals_scikit_learn(digits):
    X, y, sk, ours = digits
    assert np.linalg.matrix_rank(X - X.mean(0)) < X.shape[1]  # rank-deficient: the old solver refused it
    theirs = sk.transform(X)
    assert ours.embedding_.shape == theirs.shape == (len(X), 9)  # n_components None: min(C - 1, D)
    assert ours.n_components is None and ours.library_options()["dim"] == "9"
    assert np.abs(aligned(ours.embedding_, theirs) - theirs).max() < 1e-9 * np.abs(theirs).max()
    assert np.abs(aligned(ours.transform(X[:100]), theirs[:100]) - theirs[:100]).max() < 1e-9 * np.abs(theirs).max()
    np.testing.assert_allclose(ours.explained_variance_ratio_, sk.explained_variance_ratio_, rtol=1e-8, atol=1e-12)


def test_digits_classifier_equals_scikit_learn(digits):
    X, y, sk, ours = digits
    assert (ours.predict(X) == sk.predict(X)).all()
    assert ours.score(X, y) == sk.score(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.decision_function(X), sk.decision_function(X), rtol=1e-9,
                               atol=1e-9 * np.abs(sk.decision_function(X)).max())
    assert list(ours.classes_) == list(sk.classes_)


def test_binary_decision_function_is_one_column():
    X, y = make_blobs(200, 5, centers=2, cluster_std=4.0, random_state=3)
    X = X.astype(np.float32).astype(np.float64)  # the library's points are float32: the same numbers for both
    ours, sk = nlembed.LDA().fit(X, y), SkLDA().fit(X, y)
    assert ours.embedding_.shape == (200, 1)
    np.testing.assert_allclose(ours.decision_function(X), sk.decision_function(X), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(ours.predict_proba(X), sk.predict_proba(X), rtol=1e-8, atol=1e-12)


def test_labels_are_their_values(digits):
    """1..10 (as MATLAB data sets ship), gaps and -1, strings: the same map
    as 0..9; classes_ and predict give the values back."""
    X, y, _, ours = digits
    for labels in (y + 1, np.where(y == 0, -1, 3 * y), np.array([f"digit {v}" for v in y]), y.astype(float)):
        other = nlembed.LDA().fit(X, labels)
        np.testing.assert_array_equal(other.embedding_, ours.embedding_)
        np.testing.assert_array_equal(other.classes_, np.unique(labels))
        assert (other.predict(X[:200]) == labels[:200]).mean() == (ours.predict(X[:200]) == y[:200]).mean()
        assert set(other.predict(X[:50])) <= set(np.unique(labels))


def test_n_components_default_and_limits():
    X, y = make_blobs(120, 3, centers=6, random_state=0)
    assert nlembed.LDA().fit(X, y).embedding_.shape == (120, 3)  # min(C - 1 = 5, D = 3)
    assert nlembed.LDA().fit(X, y).embedding_.shape[1] == SkLDA().fit(X, y).transform(X).shape[1]
    assert nlembed.LDA(n_components=2).fit(X, y).embedding_.shape == (120, 2)
    with pytest.raises(ValueError, match="at most min"):
        nlembed.LDA(n_components=4).fit(X, y)
    assert nlembed.KernelLDA().fit(X, y).embedding_.shape == (120, 5)  # every useful direction, C - 1


def test_ridge_keeps_the_cholesky_path():
    X, y = make_blobs(150, 4, centers=3, random_state=2)
    default, ridged = nlembed.LDA().fit(X, y), nlembed.LDA(ridge=1e-9).fit(X, y)
    # full-rank data: the same directions either way
    assert np.abs(aligned(ridged.embedding_, default.embedding_) - default.embedding_).max() < 1e-5
    X[:, 2] = 1.0  # a constant feature: the Cholesky path needs its ridge > 0
    with pytest.raises(ValueError, match="rank 3 < D = 4.*ridge"):
        nlembed.LDA(ridge=0).fit(X, y)
    assert nlembed.LDA().fit(X, y).score(X, y) > 0.9


def test_bad_labels_name_y():
    X, y = make_blobs(60, 4, centers=3, random_state=1)
    with pytest.raises(ValueError, match="y contains NaN"):
        nlembed.LDA().fit(X, np.where(np.arange(60) == 3, np.nan, y.astype(float)))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        nlembed.LDA().fit(X, y[:-1])
    with pytest.raises(ValueError, match="one class only"):
        nlembed.LDA().fit(X, np.full(60, 4))


def test_pickled_classifier_predicts_alike(digits):
    X, _, _, ours = digits
    back = pickle.loads(pickle.dumps(ours))
    assert (back.predict(X) == ours.predict(X)).all()
    np.testing.assert_array_equal(back.predict_proba(X[:20]), ours.predict_proba(X[:20]))


def test_kernel_lda_on_rank_deficient_data_and_any_labels(digits):
    X, y, _, _ = digits
    base = nlembed.KernelLDA(kernel="gaussian").fit(X[:600], y[:600])
    named = nlembed.KernelLDA(kernel="gaussian").fit(X[:600], np.array([f"d{v}" for v in y[:600]]))
    np.testing.assert_allclose(named.embedding_, base.embedding_, rtol=1e-9, atol=1e-9 * np.abs(base.embedding_).max())
    assert base.score(X[600:1200], y[600:1200]) > 0.9
    assert set(named.predict(X[600:700])) <= set(named.classes_)


def test_wide_data_equals_scikit_learn():
    """More features than points (the N x N route): scikit-learn's map and
    predictions all the same."""
    X, y = make_blobs(80, 300, centers=5, cluster_std=8.0, random_state=4)
    X = X.astype(np.float32).astype(np.float64)
    X[:, 9] = 2.0
    ours, sk = nlembed.LDA().fit(X, y), SkLDA().fit(X, y)
    theirs = sk.transform(X)
    assert ours.embedding_.shape == theirs.shape == (80, 4)
    assert np.abs(aligned(ours.embedding_, theirs) - theirs).max() < 1e-9 * np.abs(theirs).max()
    assert (ours.predict(X) == sk.predict(X)).all()
    np.testing.assert_allclose(ours.explained_variance_ratio_, sk.explained_variance_ratio_, rtol=1e-8, atol=1e-12)
