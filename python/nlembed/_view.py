"""nlembed.write_view: the interactive map page of `nlembed view`
(docs/view.md), written by the library (nle_write_view_page) from arrays.
The checks of what a page can hold are the library's; here only what a
numpy array must be to become its structs."""

import ctypes
import os

import numpy as np

from . import _lib
from ._core import NlembedError, as_matd, as_matf, raise_for
from ._lib import lib

__all__ = ["write_view", "view_available"]


def view_available():
    """Whether the loaded libnlembed was built with the page's script (node
    and npm at build time); write_view refuses without it."""
    return bool(lib.nle_view_available())


def _array(value, name, dtype):
    try:
        return np.ascontiguousarray(value, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: not an array of numbers ({e})") from None


def _labels(labels, n):
    """(codes, n_classes, names) of any labels: the distinct values in
    increasing order (strings sorted), shown by their text."""
    values = np.asarray(labels)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values.ravel()
    if values.ndim != 1:
        raise ValueError(f"labels has shape {values.shape}: one label a point of X")
    if values.shape[0] != n:
        raise ValueError(f"X has {n} rows, labels has {values.shape[0]}")
    try:
        classes, codes = np.unique(values, return_inverse=True)
    except TypeError as e:
        raise ValueError(f"labels: values that cannot be ordered ({e})") from None
    names = [str(c).encode("utf-8", "replace") for c in classes.tolist()]
    return np.ascontiguousarray(codes, dtype=np.int32), len(names), names


def write_view(path, X, labels=None, images=None, title=None, point_size=None, alpha=None):
    """Writes the interactive map of the N x 2 embedding X to path (.html or
    .htm): one self-contained page with a WebGL scatter plot (pan, zoom,
    lasso, search), as `nlembed view` writes it.

    labels: one value a point, of any kind (integers, strings, ...); the
    distinct values are the classes, named in the legend by their text.
    images: N x D (or N x w x w, N x w x w x 3): each row a w*w grey or
    w*w*3 RGB picture shown on hover; values in [0, 255] kept, in [0, 1]
    scaled by 255, others stretched from their min..max. title: the page's
    title (default "nlembed"). point_size (pixels across) and alpha (opacity
    in (0, 1]): chosen from N by default.

    ValueError (naming the argument) for what the page cannot hold; no page
    is left behind by a failed call."""
    A = _array(X, "X", np.float64)
    if A.ndim != 2:
        raise ValueError(f"X has shape {A.shape}; the viewer shows a 2-D embedding (N x 2)")
    page = _lib.ViewPage()
    x, keep = as_matd(A)
    page.X = ctypes.pointer(x)
    if labels is not None:
        codes, page.n_classes, names = _labels(labels, A.shape[0])
        name_array = (ctypes.c_char_p * len(names))(*names)
        page.labels = codes.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        page.class_names = ctypes.cast(name_array, ctypes.POINTER(ctypes.c_char_p))
        keep = (keep, codes, name_array)
    if images is not None:
        P = _array(images, "images", np.float32)
        if P.ndim < 2:
            raise ValueError(f"images has shape {P.shape}: one row of w*w or w*w*3 values a point")
        m, pixels = as_matf(P.reshape(P.shape[0], -1))
        page.images = ctypes.pointer(m)
        keep = (keep, pixels)
    page.title = None if title is None else str(title).encode("utf-8", "replace")
    page.point_size = 0.0 if point_size is None else float(point_size)
    page.alpha = 0.0 if alpha is None else float(alpha)
    if not view_available():
        raise NlembedError("nlembed: this libnlembed was built without the viewer: run ./setup.sh build with node "
                           "and npm", "NLE_ERR_UNSUPPORTED")
    ctx = ctypes.c_void_p(lib.nle_ctx_new())
    if not ctx.value:
        raise MemoryError("nlembed: out of memory for a context")
    try:
        lib.nle_ctx_set_option_spelling(ctx, _lib.SPELL_MARKED)
        status = lib.nle_write_view_page(ctx, os.fsencode(path), ctypes.byref(page))
        raise_for(min(status, 0), ctx)
    finally:
        lib.nle_ctx_free(ctypes.byref(ctx))
    del keep  # the arrays the page's structs point into, alive until here
