"""The library at work under Python: other threads run during a fit (the
GIL is released), progress bars, Ctrl-C cancels a fit cleanly, and the
results are the command-line tool's bit for bit."""

import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import nlembed
from nlembed import _core

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)


@pytest.fixture(autouse=True)
def quiet_fixed_rate():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nlembed.ConvergenceWarning)
        yield


def test_other_threads_run_during_a_fit():
    """A thread counting in Python keeps counting while the main thread is
    inside the library: its rate during the fit stays near its rate alone
    (a held GIL would stop it for the whole fit)."""
    X, _ = make_blobs(1500, 20, centers=5, random_state=0)
    X = X.astype(np.float32)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    th = threading.Thread(target=spin, daemon=True)
    th.start()
    try:
        c0, t0 = count[0], time.perf_counter()
        time.sleep(0.5)  # the main thread idle: the spinner's own rate
        alone = (count[0] - c0) / (time.perf_counter() - t0)
        c0, t0 = count[0], time.perf_counter()
        nlembed.TSNE(n_jobs=1, max_iter=250).fit(X)
        elapsed = time.perf_counter() - t0
        during = (count[0] - c0) / elapsed
    finally:
        stop.set()
        th.join()
    assert elapsed > 0.2, "the fit was too short to tell"
    assert during > 0.25 * alone, (during, alone)


def test_progress_bar_and_log_lines(capsys):
    X, _ = make_blobs(500, 10, centers=3, random_state=0)
    nlembed.TSNE(verbose=1, n_jobs=1).fit(X)
    err = capsys.readouterr().err
    assert "optimising" in err and "%|" in err  # a tqdm bar of the optimiser's stage
    assert "nlembed: " in err  # the library's summary lines
    nlembed.TSNE(n_jobs=1).fit(X)
    assert capsys.readouterr().err == ""  # silent by default


def test_progress_without_tqdm(monkeypatch, capsys):
    """Without tqdm, verbose prints a line per stage and per tenth done."""
    monkeypatch.setattr(_core, "_tqdm", None)
    X, _ = make_blobs(500, 10, centers=3, random_state=0)
    nlembed.TSNE(verbose=1, n_jobs=1).fit(X)
    err = capsys.readouterr().err
    assert "nlembed: optimising: 50%" in err and "nlembed: optimising: 100%" in err


def test_an_exception_in_the_callback_cancels_the_fit(monkeypatch, capfd):
    """An exception inside the progress callback (here a KeyboardInterrupt
    raised by the bar itself) never escapes into C: the callback returns
    non-zero, the library stops, and the fit raises it."""
    calls = [0]

    def show(self, stage, fraction):
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(_core._Progress, "_show", show)
    handler = signal.getsignal(signal.SIGINT)  # default, or ignored when the suite runs in the background
    X, _ = make_blobs(800, 10, centers=3, random_state=0)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        nlembed.TSNE(verbose=1, n_jobs=1, max_iter=100000).fit(X)
    assert time.perf_counter() - t0 < 60
    assert "Exception ignored" not in capfd.readouterr().err
    assert signal.getsignal(signal.SIGINT) is handler  # the fit put back what it found

    def show_error(self, stage, fraction):
        raise RuntimeError("bar failed")

    monkeypatch.setattr(_core._Progress, "_show", show_error)
    with pytest.raises(RuntimeError, match="bar failed"):
        nlembed.PCA(verbose=1).fit(X)


CHILD = r"""
import signal, sys, time
# Python's own Ctrl-C handler, as in a terminal: a process started in the
# background by a non-interactive shell (a CI job, `cmd &`) inherits SIGINT
# ignored, and Python then leaves it ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import nlembed
rng = np.random.RandomState(0)
X = rng.randn(20000, 50).astype(np.float32)
# grad_tol=0: this isotropic cloud's gradient falls below the default 1e-9
# within 34 iterations (the map at its initial scale), and the fit, then
# done in about 1.4 s, could end before the signal came
est = nlembed.TSNE(max_iter=1000000, grad_tol=0)
print("fitting", flush=True)
try:
    est.fit(X)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not hasattr(est, "embedding_")
    print(nlembed.PCA().fit_transform(X[:100]).shape, flush=True)  # the library still works
    print("done", flush=True)
"""


def test_ctrl_c_cancels_a_fit():
    """SIGINT during a fit (as Ctrl-C sends) stops the library at its next
    progress report (NLE_ERR_CANCELLED) and fit raises KeyboardInterrupt,
    with nothing printed about ignored exceptions."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    p = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    watchdog = threading.Timer(120, p.kill)
    watchdog.start()
    try:
        assert p.stdout.readline().strip() == "fitting"
        time.sleep(1.5)
        sent = time.perf_counter()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        latency = time.perf_counter() - sent
        # the rest through the same file object: readline may have buffered
        # the lines after its own, which communicate() (reading the pipe
        # itself) would miss
        out = p.stdout.read()
        err = p.stderr.read()
        p.wait()
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
    assert line == "interrupted", (line, err)
    assert latency < 15, latency
    assert "(100, 2)" in out and "done" in out, (out, err, p.returncode)
    assert p.returncode == 0, err
    assert "Exception ignored" not in err and "Traceback" not in err, err


# --- the command-line tool, bit for bit ----------------------------------------------------------


def cli_path():
    path = os.environ.get("NLEMBED_CLI") or os.path.join(REPO, "build", "nlembed")
    if not os.access(path, os.X_OK):
        pytest.skip(f"no nlembed tool at {path} (set NLEMBED_CLI)")
    return path


CLI_CASES = [
    ("tsne", [], lambda: nlembed.TSNE()),
    ("tsne", ["--threads", "1", "--seed", "5", "--perplexity", "10", "--init", "random"],
     lambda: nlembed.TSNE(n_jobs=1, random_state=5, perplexity=10, init="random")),
    ("ee", ["--max-iters", "50"], lambda: nlembed.EE(max_iter=50)),
    ("le", ["-k", "12"], lambda: nlembed.LaplacianEigenmaps(n_neighbors=12, components="allow")),
    ("pca", ["-d", "3"], lambda: nlembed.PCA(n_components=3)),
    ("kpca", [], lambda: nlembed.KernelPCA()),
]


@pytest.mark.parametrize("command,args,make", CLI_CASES, ids=[f"{c}{' '.join(a)}" for c, a, _ in CLI_CASES])
def test_same_bits_as_the_tool(tmp_path, command, args, make):
    tool = cli_path()
    X, _ = make_blobs(1000, 20, centers=5, random_state=0)
    X = X.astype(np.float32)
    np.save(tmp_path / "X.npy", X)
    if command == "le":  # the tool's components default is "error"; blobs need "allow"
        args = args + ["--components", "allow"]
    subprocess.run([tool, command, str(tmp_path / "X.npy"), "-o", str(tmp_path / "E.npy"), "--quiet"] + args,
                   check=True, stdout=subprocess.DEVNULL)
    cli = np.load(tmp_path / "E.npy")
    est = make()
    ours = est.fit_transform(X)
    assert cli.shape == ours.shape
    # the library's double-precision result, bit for bit; TSNE returns it as
    # float32 (scikit-learn's TSNE does), the others as it is
    assert np.array_equal(cli, est._handle.embedding()), np.abs(cli - est._handle.embedding()).max()
    assert ours.dtype == (np.float32 if command == "tsne" else cli.dtype)
    assert np.array_equal(cli.astype(ours.dtype), ours)
