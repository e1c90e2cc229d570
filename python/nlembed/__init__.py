"""nlembed: nonlinear dimensionality reduction (t-SNE, EE, Laplacian
eigenmaps, LLE, Isomap, MDS, kernel PCA, ...) from the C library libnlembed,
as scikit-learn estimators, and the interactive map page (write_view).
Pure Python over the shared library through ctypes: every option is the
library's, set by name; every check and automatic choice is made in the
library (docs/python.md)."""

from ._lib import path as library_path
from ._core import ConvergenceWarning, NlembedError, method_names
from ._estimators import CLASSES as _CLASSES, METHODS as _METHODS, NlembedEstimator
from ._view import view_available, write_view

__version__ = "0.1.0"

globals().update(_CLASSES)

#: library method name -> class ("tsne" -> TSNE)
ESTIMATORS = {spec.method: _CLASSES[spec.cls] for spec in _METHODS}


def library_version():
    """The loaded libnlembed's version string."""
    from ._lib import lib
    return lib.nle_version().decode()


__all__ = sorted(_CLASSES) + ["ESTIMATORS", "NlembedEstimator", "ConvergenceWarning", "NlembedError",
                              "method_names", "library_path", "library_version", "write_view", "view_available"]
