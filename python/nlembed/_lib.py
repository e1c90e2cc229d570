"""The shared library libnlembed through ctypes: finding it, the few core
structs it takes (nle_matf, nle_matd, nle_csr, nle_estimator_input,
nle_view_page) and the prototypes of the calls the package makes (the
context's and the estimator's of include/nlembed/estimator.h, the map
page's of io.h). No options struct is mirrored: every option goes through
nle_estimator_set by name, as text.

ctypes.CDLL releases the GIL for every call, so other Python threads run
while the library works; the progress callback takes it back for the time
of the call."""

import ctypes
import ctypes.util
import os
import subprocess

__all__ = ["lib", "path", "MatF", "MatD", "CSR", "EstimatorInput", "ViewPage", "PROGRESS_FN", "LOG_FN"]

_HOW_TO_BUILD = ("libnlembed not found: run ./setup.sh build (or make && sudo make install), "
                 "or set NLEMBED_LIBRARY=/path/to/libnlembed.so")

# Status codes of core.h (NLE_STATUS_MAP).
OK = 0
WARN_NOT_CONVERGED = 1
ERR_NOMEM = -1
ERR_ARG = -2
ERR_IO = -3
ERR_FORMAT = -4
ERR_VALUE = -5
ERR_MEMCAP = -6
ERR_NUMERIC = -7
ERR_UNSUPPORTED = -8
ERR_CANCELLED = -9

# core.h: nle_option_spelling, nle_warning_kind, NLE_WARNINGS_KEPT.
SPELL_MARKED = 2
WARN_GENERAL = 0
WARN_CONVERGENCE = 1
WARNINGS_KEPT = 16


class MatF(ctypes.Structure):
    """nle_matf: row-major float rows x cols."""
    _fields_ = [("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t), ("data", ctypes.POINTER(ctypes.c_float))]


class MatD(ctypes.Structure):
    """nle_matd: row-major double rows x cols."""
    _fields_ = [("rows", ctypes.c_size_t), ("cols", ctypes.c_size_t), ("data", ctypes.POINTER(ctypes.c_double))]


class CSR(ctypes.Structure):
    """nle_csr: int64 row pointers, int32 column indices, float (dtype 0)
    or double (dtype 1) values."""
    _fields_ = [("rows", ctypes.c_int64), ("cols", ctypes.c_int64), ("nnz", ctypes.c_int64),
                ("rowptr", ctypes.POINTER(ctypes.c_int64)), ("colind", ctypes.POINTER(ctypes.c_int32)),
                ("dtype", ctypes.c_int), ("val", ctypes.c_void_p)]


class EstimatorInput(ctypes.Structure):
    """nle_estimator_input: exactly one of Y and sparse; labels for lda and
    klda; source (or NULL); a given start init (N x d) and metric MDS's
    weights (N x N), or NULL."""
    _fields_ = [("Y", ctypes.POINTER(MatF)), ("sparse", ctypes.POINTER(CSR)),
                ("labels", ctypes.POINTER(ctypes.c_int32)), ("source", ctypes.c_char_p),
                ("init", ctypes.POINTER(MatD)), ("weights", ctypes.POINTER(MatD)),
                ("affinities", ctypes.POINTER(CSR)), ("release_Y", ctypes.c_void_p), ("release_user", ctypes.c_void_p),
                ("knn", ctypes.POINTER(CSR))]


class OptionInfo(ctypes.Structure):
    """nle_option_info: an option's row (include/nlembed/estimator.h)."""
    _fields_ = [("name", ctypes.c_char_p), ("alias", ctypes.c_char_p), ("short_name", ctypes.c_char),
                ("kind", ctypes.c_char_p), ("metavar", ctypes.c_char_p), ("help", ctypes.c_char_p),
                ("auto_ok", ctypes.c_bool), ("taken", ctypes.c_bool), ("values", ctypes.c_char * 512),
                ("default_text", ctypes.c_char * 64)]


class ViewPage(ctypes.Structure):
    """nle_view_page: the map page's data (include/nlembed/io.h)."""
    _fields_ = [("X", ctypes.POINTER(MatD)), ("labels", ctypes.POINTER(ctypes.c_int32)), ("n_classes", ctypes.c_int32),
                ("class_names", ctypes.POINTER(ctypes.c_char_p)), ("images", ctypes.POINTER(MatF)),
                ("title", ctypes.c_char_p), ("embedding_source", ctypes.c_char_p),
                ("labels_source", ctypes.c_char_p), ("images_source", ctypes.c_char_p),
                ("point_size", ctypes.c_double), ("alpha", ctypes.c_double)]


# int (*)(void *user, const char *stage, double fraction)
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double)
# void (*)(void *user, int level, const char *line)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)

_c = ctypes
_P = ctypes.c_void_p  # nle_ctx *, nle_estimator * (opaque)
_PROTOTYPES = {
    "nle_version": (_c.c_char_p, []),
    "nle_status_name": (_c.c_char_p, [_c.c_int]),
    "nle_ctx_new": (_P, []),
    "nle_ctx_free": (None, [_c.POINTER(_P)]),
    "nle_ctx_set_threads": (None, [_P, _c.c_int]),
    "nle_ctx_set_seed": (None, [_P, _c.c_uint64]),
    "nle_ctx_set_verbosity": (None, [_P, _c.c_int]),
    "nle_ctx_set_max_memory": (None, [_P, _c.c_size_t]),
    "nle_ctx_set_comm": (_c.c_int, [_P, _P]),
    "nle_ctx_set_progress": (None, [_P, PROGRESS_FN, _c.c_void_p]),
    "nle_ctx_set_log": (None, [_P, LOG_FN, _c.c_void_p]),
    "nle_ctx_error": (_c.c_char_p, [_P]),
    "nle_ctx_set_option_spelling": (None, [_P, _c.c_int]),
    "nle_ctx_warning_count": (_c.c_int, [_P]),
    "nle_ctx_warning": (_c.c_char_p, [_P, _c.c_int, _c.POINTER(_c.c_int)]),
    "nle_ctx_clear_warnings": (None, [_P]),
    "nle_estimator_new": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(_P)]),
    "nle_estimator_free": (None, [_c.POINTER(_P)]),
    "nle_estimator_method": (_c.c_char_p, [_P]),
    "nle_estimator_set": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p]),
    "nle_estimator_get": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p, _c.c_size_t]),
    "nle_estimator_option": (_c.c_char_p, [_P, _c.c_int]),
    "nle_estimator_option_info": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(OptionInfo)]),
    "nle_estimator_method_name": (_c.c_char_p, [_c.c_int]),
    "nle_estimator_fit": (_c.c_int, [_P, _c.POINTER(EstimatorInput)]),
    "nle_estimator_embedding": (_c.POINTER(MatD), [_P]),
    "nle_estimator_labels": (_c.POINTER(_c.c_int32), [_P, _c.POINTER(_c.c_size_t)]),
    "nle_estimator_graph": (_c.POINTER(CSR), [_P]),
    "nle_estimator_map_option": (_c.c_char_p, [_c.c_int]),
    "nle_estimator_set_map": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p]),
    "nle_estimator_map_option_info": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(OptionInfo)]),
    "nle_estimator_betas": (_c.POINTER(_c.c_double), [_P, _c.POINTER(_c.c_size_t)]),
    "nle_estimator_report": (_c.c_char_p, [_P]),
    "nle_estimator_transform": (_c.c_int, [_P, _c.POINTER(MatF), _c.POINTER(_c.POINTER(MatD))]),
    "nle_estimator_inverse": (_c.c_int, [_P, _c.POINTER(MatD), _c.POINTER(_c.POINTER(MatF))]),
    "nle_estimator_predict": (_c.c_int, [_P, _c.POINTER(MatF), _c.POINTER(_c.c_int32)]),
    "nle_estimator_decision": (_c.c_int, [_P, _c.POINTER(MatF), _c.POINTER(_c.POINTER(MatD))]),
    "nle_estimator_predict_proba": (_c.c_int, [_P, _c.POINTER(MatF), _c.POINTER(_c.POINTER(MatD))]),
    "nle_estimator_save": (_c.c_int, [_P, _c.c_char_p]),
    "nle_estimator_load": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(_P)]),
    "nle_view_available": (_c.c_bool, []),
    "nle_write_view_page": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(ViewPage)]),
    "nle_matd_free": (None, [_c.POINTER(_c.POINTER(MatD))]),
    "nle_matf_free": (None, [_c.POINTER(_c.POINTER(MatF))]),
}


def _pkg_config_libdir():
    """The libdir pkg-config knows for nlembed (`make install` writes its
    nlembed.pc; PKG_CONFIG_PATH finds one in another prefix), or None."""
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "nlembed"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    libdir = out.stdout.strip()
    return libdir if out.returncode == 0 and libdir else None


def _repository_build():
    """build/ of the repository the package sits in (python/nlembed of a
    checkout), or None for an installed package (a venv's site-packages is
    no repository)."""
    package = os.path.dirname(os.path.abspath(__file__))
    python_dir = os.path.dirname(package)
    repo = os.path.dirname(python_dir)
    if os.path.basename(python_dir) != "python" or not os.path.isfile(os.path.join(repo, "include", "nlembed.h")):
        return None
    return os.path.join(repo, "build")


def _candidates():
    """Where the library may be, in order, each once: NLEMBED_LIBRARY alone
    when set; else the libdir of pkg-config's nlembed.pc (the prefix `make
    install` wrote, also one outside the loader's cache), the loader's own
    search (its cache, which `make install` refreshes, and
    LD_LIBRARY_PATH), then build/ of the repository checkout the package
    sits in."""
    env = os.environ.get("NLEMBED_LIBRARY")
    if env:
        return [env]
    found = []
    libdir = _pkg_config_libdir()
    if libdir:
        found.append(os.path.join(libdir, "libnlembed.so.0"))
    found.append(ctypes.util.find_library("nlembed") or "libnlembed.so.0")
    found.append("libnlembed.so.0")
    build = _repository_build()
    if build:
        found.append(os.path.join(build, "libnlembed.so.0"))
    return list(dict.fromkeys(found))


def _load():
    errors = []
    for cand in _candidates():
        try:
            handle = ctypes.CDLL(cand)
        except OSError as e:
            errors.append(str(e))
            continue
        if not hasattr(handle, "nle_estimator_new"):
            errors.append(f"{cand}: a libnlembed without the estimator API (nle_estimator_new); rebuild it")
            continue
        for fn, (res, args) in _PROTOTYPES.items():
            f = getattr(handle, fn)
            f.restype = res
            f.argtypes = args
        return handle, cand
    raise ImportError(_HOW_TO_BUILD + "\n(tried: " + "; ".join(errors) + ")")


lib, path = _load()
