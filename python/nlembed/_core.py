"""One fitted (or fitting) library estimator: an nle_estimator and the
nle_ctx it keeps, the conversion of numpy and scipy arrays into the
library's structs (without a copy where the layout already matches), the
statuses turned into Python exceptions and warnings, and the progress
callback (a tqdm bar, Ctrl-C as a cancellation)."""

import ctypes
import json
import os
import re
import signal
import sys
import tempfile
import threading
import warnings

import numpy as np
import scipy.sparse as sp

from . import _lib
from ._lib import lib

try:  # the progress bar's, when there is one (python3-tqdm)
    from tqdm.auto import tqdm as _tqdm
except ImportError:  # pragma: no cover - a line per stage instead
    _tqdm = None

try:  # sklearn's class, so that `except ConvergenceWarning` works for users
    from sklearn.exceptions import ConvergenceWarning
except ImportError:  # pragma: no cover - sklearn is a dependency of the estimators
    class ConvergenceWarning(UserWarning):
        pass

__all__ = ["Estimator", "method_names", "ConvergenceWarning", "NlembedError", "warn", "render_markers"]


class NlembedError(RuntimeError):
    """A library failure that is neither bad input nor memory: a numerical
    failure in a linear-algebra routine, an I/O error (the status name is in
    .status)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


def _text(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def method_names():
    """The library's method names (nle_estimator_method_name)."""
    out, i = [], 0
    while True:
        name = lib.nle_estimator_method_name(i)
        if name is None:
            return out
        out.append(_text(name))
        i += 1


_MARKER = re.compile(r"\{@([a-z0-9_-]+)(?:=([^{}]*))?\}")
_NUMBER = re.compile(r"^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")


def _value(text):
    """An option's value as a Python user writes it: numbers as they are,
    true/false as True/False, names quoted."""
    if _NUMBER.match(text):
        return text
    if text in ("true", "false"):
        return text.capitalize()
    return f'"{text}"'


def render_markers(text, names=None):
    """The library's option markers in a message (NLE_SPELL_MARKED:
    {@name}, {@name=value}, name being the tool's long option) in Python's
    spelling: names maps a library option to its parameter (n_neighbors for
    neighbors); an option it lacks is written with '_' for '-'."""
    names = names or {}

    def one(m):
        py = names.get(m.group(1)) or m.group(1).replace("-", "_")
        return py if m.group(2) is None else f"{py}={_value(m.group(2))}"

    return _MARKER.sub(one, text)


def raise_for(status, ctx, render=render_markers):
    """The exception of a status < 0: ValueError for bad input or options
    (NLE_ERR_VALUE, _FORMAT, _ARG, _UNSUPPORTED), MemoryError for the memory
    cap or a failed allocation, OSError for I/O, NlembedError (a
    RuntimeError) otherwise; with nle_ctx_error's text, its option markers
    rendered by render. A status > 0 is a warning, returned as (category,
    text) for the caller to warn with: ConvergenceWarning for
    NLE_WARN_NOT_CONVERGED, else UserWarning."""
    if status == _lib.OK:
        return
    message = render(_text(lib.nle_ctx_error(ctx))) if ctx else ""
    name = _text(lib.nle_status_name(status))
    if not message:
        message = f"nlembed: {name}"
    if status > 0:
        category = ConvergenceWarning if status == _lib.WARN_NOT_CONVERGED else UserWarning
        return category, message
    if status in (_lib.ERR_VALUE, _lib.ERR_FORMAT, _lib.ERR_ARG, _lib.ERR_UNSUPPORTED):
        raise ValueError(message)
    if status in (_lib.ERR_MEMCAP, _lib.ERR_NOMEM):
        raise MemoryError(message)
    if status == _lib.ERR_CANCELLED:
        raise KeyboardInterrupt(message)
    if status == _lib.ERR_IO:
        raise OSError(message)
    raise NlembedError(message, name)


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn(warning):
    """Emits a (category, text) that raise_for returned, or a list of them
    (None: nothing), pointed at the user's line: the first frame outside
    this package and scikit-learn's method wrappers (set_output's)."""
    if warning is None:
        return
    if isinstance(warning, list):
        for w in warning:
            warn(w)
        return
    frame, level = sys._getframe(0), 1
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE_DIR)
                                 or frame.f_code.co_filename.endswith(os.path.join("utils", "_set_output.py"))):
        frame, level = frame.f_back, level + 1
    warnings.warn(warning[1], warning[0], stacklevel=level)


def library_warnings(ctx, status, render=render_markers):
    """What one library call warned, as (category, text) pairs, and the
    context's record cleared for the next call: each warning the library
    recorded (nle_ctx_warning: ConvergenceWarning where its kind is about
    convergence, else UserWarning), a count of those past the record's
    NLE_WARNINGS_KEPT, and the warning status (> 0) of the call itself
    unless its text is one already listed. A status < 0 is left to
    raise_for."""
    out = []
    count = lib.nle_ctx_warning_count(ctx)
    for i in range(min(count, _lib.WARNINGS_KEPT)):
        kind = ctypes.c_int(_lib.WARN_GENERAL)
        text = render(_text(lib.nle_ctx_warning(ctx, i, ctypes.byref(kind))))
        out.append((ConvergenceWarning if kind.value == _lib.WARN_CONVERGENCE else UserWarning, text))
    if count > _lib.WARNINGS_KEPT:
        out.append((UserWarning, f"nlembed: {count - _lib.WARNINGS_KEPT} more warnings of this call not kept "
                                 f"(verbose=1 shows them all)"))
    lib.nle_ctx_clear_warnings(ctx)
    if status > 0:
        own = raise_for(status, ctx, render)
        if all(own[1] != text for _, text in out):
            out.append(own)
    return out


# --- arrays in and out ----------------------------------------------------------


def as_matf(X):
    """(nle_matf, keep-alive) of a 2-D array: the array's own memory when it
    is already C-contiguous float32, else a float32 C-contiguous copy."""
    A = np.ascontiguousarray(X, dtype=np.float32)
    if A.ndim != 2:
        raise ValueError(f"expected a 2-D array, got {A.ndim}-D")
    m = _lib.MatF(A.shape[0], A.shape[1], A.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
    return m, A


def as_matd(X):
    A = np.ascontiguousarray(X, dtype=np.float64)
    m = _lib.MatD(A.shape[0], A.shape[1], A.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))
    return m, A


def as_csr(X):
    """(nle_csr, keep-alive) of a scipy sparse matrix: CSR with sorted
    column indices, int64 row pointers, int32 indices, float32 values
    (float64 kept as is); the caller's arrays are used where they already
    have these types."""
    A = X if sp.isspmatrix_csr(X) else sp.csr_matrix(X)
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()  # also sorts the indices
    indptr = np.ascontiguousarray(A.indptr, dtype=np.int64)
    indices = np.ascontiguousarray(A.indices, dtype=np.int32)
    vdtype = np.float64 if A.dtype == np.float64 else np.float32
    data = np.ascontiguousarray(A.data, dtype=vdtype)
    m = _lib.CSR(A.shape[0], A.shape[1], data.shape[0],
                 indptr.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)),
                 indices.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
                 1 if vdtype == np.float64 else 0, data.ctypes.data)
    return m, (A, indptr, indices, data)


def matd_to_numpy(p):
    """A numpy copy of an nle_matd the library owns."""
    m = p.contents
    if m.rows == 0 or m.cols == 0:
        return np.zeros((m.rows, m.cols))
    return np.ctypeslib.as_array(m.data, shape=(m.rows, m.cols)).copy()


def csr_to_scipy(p):
    """A scipy CSR copy of an nle_csr the library owns."""
    m = p.contents
    indptr = np.ctypeslib.as_array(m.rowptr, shape=(m.rows + 1,)).copy()
    nnz = int(indptr[-1])
    indices = np.ctypeslib.as_array(m.colind, shape=(nnz,)).copy() if nnz else np.zeros(0, np.int32)
    vtype = ctypes.c_double if m.dtype == 1 else ctypes.c_float
    values = (np.ctypeslib.as_array(ctypes.cast(m.val, ctypes.POINTER(vtype)), shape=(nnz,)).copy() if nnz
              else np.zeros(0, np.float64 if m.dtype == 1 else np.float32))
    return sp.csr_matrix((values, indices, indptr), shape=(m.rows, m.cols))


def matf_to_numpy(p):
    m = p.contents
    if m.rows == 0 or m.cols == 0:
        return np.zeros((m.rows, m.cols), dtype=np.float32)
    return np.ctypeslib.as_array(m.data, shape=(m.rows, m.cols)).copy()


# --- progress and Ctrl-C -------------------------------------------------------------


class _Progress:
    """The context's progress callback for one library call: a tqdm bar per
    stage when verbose, and the cancellation: a SIGINT (Ctrl-C) during the
    call sets a flag (our handler, installed for the call when the default
    one is in place and this is the main thread) and the next callback
    returns non-zero, so the library stops with NLE_ERR_CANCELLED. No
    exception ever leaves the callback into C: one raised inside it (a
    KeyboardInterrupt through another handler, a failing bar) is kept and
    re-raised once the library has returned."""

    def __init__(self, verbose, render=render_markers):
        self.verbose = verbose
        self.render = render
        self.bar = None
        self.stage = None
        self.interrupted = False
        self.exception = None
        self.cfunc = _lib.PROGRESS_FN(self._call)
        self.log = _lib.LOG_FN(self._log)

    def _call(self, user, stage, fraction):
        try:
            if self.interrupted or self.exception is not None:
                return 1
            if self.verbose:
                self._show(_text(stage), fraction)
            return 0
        except KeyboardInterrupt:
            self.interrupted = True
            return 1
        except BaseException as e:  # noqa: BLE001 - nothing may escape into C
            self.exception = e
            return 1

    def _show(self, stage, fraction):
        fraction = min(max(fraction, 0.0), 1.0)
        if _tqdm is None:  # no tqdm: a line per stage and per tenth done
            tenth = int(fraction * 10)
            if stage != self.stage or tenth > self.bar:
                self.stage, self.bar = stage, tenth
                print(f"nlembed: {stage}: {10 * tenth}%", file=sys.stderr, flush=True)
            return
        if stage != self.stage:
            self._close_bar()
            self.stage = stage
            self.bar = _tqdm(total=1000, desc=stage, leave=False, file=sys.stderr,
                             bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")
        done = int(round(fraction * 1000))
        if done > self.bar.n:
            self.bar.update(done - self.bar.n)

    def _log(self, user, level, line):
        try:
            line = self.render(_text(line))
            if line.startswith("warning: "):  # raised as a Python warning when the call returns
                return
            text = f"nlembed: {line}"
            if _tqdm is None:
                print(text, file=sys.stderr, flush=True)
            else:
                _tqdm.write(text, file=sys.stderr)
        except BaseException as e:  # noqa: BLE001 - nothing may escape into C
            if self.exception is None:
                self.exception = e

    def _close_bar(self):
        if self.bar is not None and _tqdm is not None:
            try:
                self.bar.close()
            except Exception:  # noqa: BLE001
                pass
            self.bar = None

    def _sigint(self, signum, frame):
        self.interrupted = True

    def run(self, ctx, call, *args):
        """call(*args) with this object as the context's progress callback;
        Ctrl-C during it: KeyboardInterrupt once the library has stopped."""
        lib.nle_ctx_set_progress(ctx, self.cfunc, None)
        if self.verbose:
            lib.nle_ctx_set_log(ctx, self.log, None)
        previous = None
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            previous = signal.signal(signal.SIGINT, self._sigint)
        try:
            status = call(*args)
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            lib.nle_ctx_set_progress(ctx, _lib.PROGRESS_FN(), None)
            lib.nle_ctx_set_log(ctx, _lib.LOG_FN(), None)
            self._close_bar()
        if self.interrupted:
            raise KeyboardInterrupt
        if self.exception is not None:
            raise self.exception
        return status


# --- the estimator handle -------------------------------------------------------------


class Estimator:
    """An nle_estimator with its own nle_ctx (freed together). Calls on one
    handle are serialised (the context keeps the last error's text)."""

    def __init__(self, method=None, *, load_path=None, names=None):
        """names: library option -> Python parameter, for the messages
        (the library leaves option names as markers for us to render)."""
        self.ctx = None
        self.est = None
        self.lock = threading.Lock()
        self.names = dict(names or {})
        ctx = lib.nle_ctx_new()
        if not ctx:
            raise MemoryError("nlembed: out of memory for a context")
        self.ctx = ctypes.c_void_p(ctx)
        lib.nle_ctx_set_option_spelling(self.ctx, _lib.SPELL_MARKED)
        est = ctypes.c_void_p()
        if load_path is not None:
            status = lib.nle_estimator_load(self.ctx, os.fsencode(load_path), ctypes.byref(est))
        else:
            status = lib.nle_estimator_new(self.ctx, method.encode(), ctypes.byref(est))
        if status < 0:
            try:
                raise_for(status, self.ctx, self.render)
            finally:
                self.close()
        self.est = est
        lib.nle_ctx_clear_warnings(self.ctx)

    def render(self, text):
        """A library message with its option markers in Python's names."""
        return render_markers(text, self.names)

    def _checked(self, status):
        """After a library call: its warnings as (category, text) pairs; a
        status < 0 raised (the warnings recorded before the failure are
        emitted first)."""
        found = library_warnings(self.ctx, status, self.render)
        if status < 0:
            warn(found)
            raise_for(status, self.ctx, self.render)
        return found

    def close(self):
        if self.est is not None and self.est.value:
            lib.nle_estimator_free(ctypes.byref(self.est))
        self.est = None
        if self.ctx is not None and self.ctx.value:
            lib.nle_ctx_free(ctypes.byref(self.ctx))
        self.ctx = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # context
    def set_comm(self, comm):
        """The context's communicator: an mpi4py communicator (the library
        keeps a duplicate), or None: alone. Collective over comm."""
        if comm is getattr(self, "comm", None):
            return
        if comm is None:
            address = None
        else:
            from mpi4py import MPI  # noqa: PLC0415 - only for distributed runs

            if not isinstance(comm, MPI.Comm):
                raise TypeError(f"comm must be an mpi4py communicator, not {type(comm).__name__}")
            address = ctypes.c_void_p(MPI._addressof(comm))  # the MPI_Comm's address, as nle_ctx_set_comm takes
        self._checked(lib.nle_ctx_set_comm(self.ctx, address))
        self.comm = comm

    def configure(self, threads=None, seed=None, verbosity=None, max_memory=None, comm=None):
        self.set_comm(comm)
        if threads is not None:
            lib.nle_ctx_set_threads(self.ctx, int(threads))
        if seed is not None:
            lib.nle_ctx_set_seed(self.ctx, int(seed))
        if verbosity is not None:
            lib.nle_ctx_set_verbosity(self.ctx, int(verbosity))
        if max_memory is not None:
            lib.nle_ctx_set_max_memory(self.ctx, int(max_memory))

    @property
    def method(self):
        return _text(lib.nle_estimator_method(self.est))

    # options
    def options(self):
        out, i = [], 0
        while True:
            name = lib.nle_estimator_option(self.est, i)
            if name is None:
                return out
            out.append(_text(name))
            i += 1

    def option_info(self, name):
        """The option's row: kind, help, values, default, auto_ok."""
        info = _lib.OptionInfo()
        status = lib.nle_estimator_option_info(self.est, name.encode(), ctypes.byref(info))
        raise_for(status, self.ctx, self.render)
        return {"name": _text(info.name), "kind": _text(info.kind), "help": _text(info.help),
                "auto_ok": bool(info.auto_ok), "values": _text(info.values),
                "default": _text(info.default_text)}

    def set(self, name, value):
        status = lib.nle_estimator_set(self.est, name.encode(), value.encode())
        raise_for(status, self.ctx, self.render)

    def get(self, name):
        buf = ctypes.create_string_buffer(4096)
        status = lib.nle_estimator_get(self.est, name.encode(), buf, len(buf))
        raise_for(status, self.ctx, self.render)
        return _text(buf.value)

    def set_map(self, name, value):
        """An option of the maps of new points (nle_estimator_set_map)."""
        status = lib.nle_estimator_set_map(self.est, name.encode(), value.encode())
        raise_for(status, self.ctx, self.render)

    def map_default(self, name):
        """The default of a map option of this estimator's maps, as text."""
        info = _lib.OptionInfo()
        status = lib.nle_estimator_map_option_info(self.est, name.encode(), ctypes.byref(info))
        raise_for(status, self.ctx, self.render)
        return _text(info.default_text)

    # fit and its results
    def fit(self, X, labels=None, verbose=0, init=None, weights=None):
        """X: a float32-convertible 2-D array or a scipy sparse matrix;
        labels (lda, klda), init (N x d) and weights (N x N) arrays or None.
        The fit's warnings as a list of (category, text)."""
        inp = _lib.EstimatorInput()
        keep = []
        if sp.issparse(X):
            m, k = as_csr(X)
            inp.sparse = ctypes.pointer(m)
        else:
            m, k = as_matf(X)
            inp.Y = ctypes.pointer(m)
        keep.append((m, k))
        if labels is not None:
            lab = np.ascontiguousarray(labels, dtype=np.int32)
            keep.append(lab)
            inp.labels = lab.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        for field, array in (("init", init), ("weights", weights)):
            if array is not None:
                m, k = as_matd(array)
                keep.append((m, k))
                setattr(inp, field, ctypes.pointer(m))
        with self.lock:
            status = _Progress(verbose, self.render).run(self.ctx, lib.nle_estimator_fit, self.est,
                                                         ctypes.byref(inp))
            found = self._checked(status)
        del keep
        return found

    def embedding(self):
        p = lib.nle_estimator_embedding(self.est)
        return matd_to_numpy(p) if p else None

    def labels(self):
        n = ctypes.c_size_t()
        p = lib.nle_estimator_labels(self.est, ctypes.byref(n))
        if not p:
            return None
        return np.ctypeslib.as_array(p, shape=(n.value,)).copy()

    def graph(self):
        """The graph a graph method made (scipy CSR), or None."""
        p = lib.nle_estimator_graph(self.est)
        return csr_to_scipy(p) if p else None

    def betas(self):
        """Entropic affinities' precisions beta_n, or None."""
        n = ctypes.c_size_t()
        p = lib.nle_estimator_betas(self.est, ctypes.byref(n))
        return np.ctypeslib.as_array(p, shape=(n.value,)).copy() if p else None

    def report(self):
        return json.loads(_text(lib.nle_estimator_report(self.est)))

    # new points
    def _map(self, fn, X, verbose, as_input, out_type, to_numpy, free):
        """A map of new points (transform, inverse): X in, the map's matrix
        out as numpy (the library's freed)."""
        m, keep = as_input(X)
        out = ctypes.POINTER(out_type)()
        with self.lock:
            status = _Progress(verbose, self.render).run(self.ctx, fn, self.est, ctypes.byref(m), ctypes.byref(out))
            try:
                found = self._checked(status)
                result = to_numpy(out)
                warn(found)
                return result
            finally:
                free(ctypes.byref(out))

    def transform(self, X, verbose=0):
        return self._map(lib.nle_estimator_transform, X, verbose, as_matf, _lib.MatD, matd_to_numpy,
                         lib.nle_matd_free)

    def inverse(self, X, verbose=0):
        return self._map(lib.nle_estimator_inverse, X, verbose, as_matd, _lib.MatF, matf_to_numpy,
                         lib.nle_matf_free)

    def predict(self, X, verbose=0):
        m, keep = as_matf(X)
        labels = np.empty(m.rows, dtype=np.int32)
        with self.lock:
            status = _Progress(verbose, self.render).run(self.ctx, lib.nle_estimator_predict, self.est,
                                                         ctypes.byref(m),
                                                         labels.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)))
            warn(self._checked(status))
        return labels

    def decision(self, X, proba=False, verbose=0):
        """A classifier's scores of new points (M x classes), or their
        probabilities with proba=True (lda, klda)."""
        m, keep = as_matf(X)
        out = ctypes.POINTER(_lib.MatD)()
        fn = lib.nle_estimator_predict_proba if proba else lib.nle_estimator_decision
        with self.lock:
            status = _Progress(verbose).run(self.ctx, fn, self.est, ctypes.byref(m), ctypes.byref(out))
            try:
                warn(raise_for(status, self.ctx))
                return matd_to_numpy(out)
            finally:
                lib.nle_matd_free(ctypes.byref(out))

    # model files
    def save_bytes(self):
        """The model file's bytes (nle_estimator_save to a temporary file)."""
        with tempfile.TemporaryDirectory(prefix="nlembed-") as d:
            path = os.path.join(d, "model.nle")
            with self.lock:
                warn(self._checked(lib.nle_estimator_save(self.est, os.fsencode(path))))
            with open(path, "rb") as f:
                return f.read()

    @classmethod
    def load_bytes(cls, data, names=None):
        with tempfile.TemporaryDirectory(prefix="nlembed-") as d:
            path = os.path.join(d, "model.nle")
            with open(path, "wb") as f:
                f.write(data)
            return cls(load_path=path, names=names)
