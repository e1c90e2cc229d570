"""The library's option rows as Python reads them: every row of every method
is a parameter of its class under the row's one spelling (the name with '_'
for '-'), or under a scikit-learn name listed below; and docs/options.md is
what docs/options_md.py writes from the rows today."""

import importlib.util
import os

import pytest

import nlembed
from nlembed import _core
from nlembed._estimators import METHODS, _python_name

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The parameters a scikit-learn (or umap-learn, openTSNE) user knows under
# another name than the library's row: (Python name, row) -> the methods
# whose class takes that name. Every other parameter is the row's name with
# '_' for '-' (a Python keyword with '_value': lambda_value). A rename not
# listed here fails the test below, so that each is chosen, not drifted
# into.
RENAMES = {
    ("n_components", "dim"): {"tsne", "tee", "ee", "ssne", "sne", "pca", "le", "lle", "mlle", "ltsa", "hlle",
                              "isomap", "diffmap", "cmds", "mds", "sammon", "nmds", "lmds", "kpca", "lda", "klda",
                              "kem"},
    ("n_neighbors", "neighbors"): {"tsne", "tee", "ee", "ssne", "sne", "knn", "affinity", "le", "lle", "mlle",
                                   "ltsa", "hlle", "isomap", "diffmap", "cluster", "kem"},
    ("max_iter", "max-iters"): {"tsne", "tee", "ee", "ssne", "sne", "cluster", "mds", "sammon", "nmds"},
    ("early_exaggeration", "exaggeration"): {"tsne", "tee", "ee", "ssne", "sne"},
    ("early_exaggeration_iter", "exaggeration-iters"): {"tsne", "tee", "ee", "ssne", "sne"},
    ("eigen_solver", "solver"): {"le", "lle", "mlle", "ltsa", "hlle", "isomap", "diffmap", "cluster"},
    ("svd_solver", "solver"): {"pca"},
    ("iterated_power", "power-iters"): {"pca"},
    ("n_oversamples", "oversample"): {"pca"},
    ("n_clusters", "clusters"): {"cluster"},
    ("n_init", "restarts"): {"cluster"},
    ("n_init", "starts"): {"mds", "sammon", "nmds"},
}


@pytest.mark.parametrize("spec", METHODS, ids=lambda s: s.cls)
def test_every_row_is_a_parameter_spelled_as_the_row(spec):
    cls = nlembed.ESTIMATORS[spec.method]
    params = cls().get_params()
    handle = _core.Estimator(spec.method)
    try:
        rows = handle.options()
        infos = {name: handle.option_info(name) for name in rows}
    finally:
        handle.close()
    assert len(rows) >= 3
    for name in rows:
        assert infos[name]["name"] == name, (spec.method, name, infos[name]["name"])
        py = spec.names.get(name)
        assert py in params, f"{spec.cls}: row {name!r} is no parameter (its name: {py!r})"
        if py != _python_name(name):
            assert spec.method in RENAMES.get((py, name), ()), \
                f"{spec.cls}.{py} renames row {name!r}: list it in RENAMES or spell it {_python_name(name)!r}"
        assert f"\n{py} : " in cls.__doc__, f"{spec.cls}: no docstring entry for {py}"


def test_every_listed_rename_is_in_use():
    """The list shrinks with the classes: a rename no class makes any more
    fails here."""
    used = {}
    for spec in METHODS:
        for py, libname in spec.params:
            if not libname.startswith("@") and py != _python_name(libname):
                used.setdefault((py, libname), set()).add(spec.method)
    assert used == RENAMES


def _generator():
    spec = importlib.util.spec_from_file_location("options_md", os.path.join(REPO, "docs", "options_md.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_options_doc_is_current():
    gen = _generator()
    with open(gen.OUTPUT, encoding="utf-8") as f:
        written = f.read()
    assert written == gen.render(), ("docs/options.md is stale: run PYTHONPATH=python "
                                     "NLEMBED_LIBRARY=build/libnlembed.so /usr/bin/python3 docs/options_md.py")


def test_options_doc_has_every_row():
    """Each method's heading and each of its rows are in the page, so that
    the staleness test above cannot pass on a page that lost some."""
    text = _generator().render()
    for m in nlembed.method_names():
        assert f"`nlembed {m}`" in text, m
        handle = _core.Estimator(m)
        try:
            for name in handle.options():
                assert f"| `{name}` |" in text, (m, name)
        finally:
            handle.close()
