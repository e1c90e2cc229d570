"""python_tsne.py — one timed run of t-SNE (nlembed's Python package) or
UMAP (umap-learn) on all 70,000 Fashion-MNIST images, for
bench/python_tsne.sh. Reads the pixels with numpy (bench/fmnist.py) as
float32, the values the tool's IDX reader gives, so that the package's map
can be compared with the tool's bit for bit.
  python_tsne.py tsne|umap OUT.npy [N]     (N: the first N images; default all)
Prints one JSON line: the seconds to import, to read the data, of
fit_transform alone, and of the whole process so far."""
import json
import os
import sys
import time

t_start = time.perf_counter()
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import fmnist  # noqa: E402

which, out = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 70000
if which == "tsne":
    import nlembed
    make = nlembed.TSNE  # no options: the tool's defaults, seed 1, every core
else:
    import umap
    make = umap.UMAP  # its defaults (n_jobs=-1: every core)
t_import = time.perf_counter() - t_start

t0 = time.perf_counter()
X = fmnist.images(n).astype(np.float32)  # N x 784, C order
t_read = time.perf_counter() - t0

t0 = time.perf_counter()
est = make()
E = est.fit_transform(X)
t_fit = time.perf_counter() - t0
np.save(out, np.asarray(E, dtype=np.float64))
line = {"tool": which, "n": int(X.shape[0]), "import_seconds": round(t_import, 3), "read_seconds": round(t_read, 3),
        "fit_seconds": round(t_fit, 3), "process_seconds": round(time.perf_counter() - t_start, 3)}
if which == "tsne":
    line["library_seconds"] = {k[:-len("_seconds")]: v for k, v in est.report_.items() if k.endswith("_seconds")}
print(json.dumps(line), flush=True)
