#!/usr/bin/python3
"""metrics_vs_sklearn.py — `nlembed metrics` against scikit-learn on the same
points: trustworthiness and continuity on nlembed's subsample (indices saved
with --save-subsample), kNN recall on it, and 5-fold kNN accuracy on all
points. Usage: bench/metrics_vs_sklearn.py DATA.npy EMBEDDING.npy LABELS.npy [k]
(DATA may be the name fashion-mnist). The tool: $NLEMBED (./build/nlembed);
the subsample's indices go to $OUT (out/bench)."""
import json, os, subprocess, sys, time
import numpy as np
from sklearn.manifold import trustworthiness
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors

data, emb, labels = sys.argv[1:4]
k = int(sys.argv[4]) if len(sys.argv) > 4 else 10
nlembed = os.environ.get("NLEMBED", "./build/nlembed")
os.makedirs(os.environ.get("OUT", "out/bench"), exist_ok=True)
sub = os.path.join(os.environ.get("OUT", "out/bench"), "subsample.npy")
t = time.time()
line = subprocess.run([nlembed, "metrics", data, emb, "--labels", labels, "-k", str(k), "--cv-k", str(k), "--quiet",
                       "--save-subsample", sub], check=True, capture_output=True, text=True).stdout
t_ours = time.time() - t
ours = json.loads(line)
print("nlembed:", line.strip())

if data == "fashion-mnist":
    sys.path.insert(0, "bench")
    import fmnist
    Y = fmnist.images()
else:
    Y = np.load(data)
Y = Y.astype(np.float32).astype(np.float64)  # nlembed reads points as float32
X = np.load(emb).astype(np.float64)
y = np.load(labels)
idx = np.load(sub)
Ys, Xs = Y[idx], X[idx]

t = time.time()
T = trustworthiness(Ys, Xs, n_neighbors=k)
C = trustworthiness(Xs, Ys, n_neighbors=k)
ny = NearestNeighbors(n_neighbors=k).fit(Ys).kneighbors(return_distance=False)
nx = NearestNeighbors(n_neighbors=k).fit(Xs).kneighbors(return_distance=False)
R = np.mean([len(set(a) & set(b)) / k for a, b in zip(ny, nx)])
A = cross_val_score(KNeighborsClassifier(n_neighbors=k), X, y, cv=5).mean()
t_sk = time.time() - t
print(f"sklearn: trustworthiness {T:.10f} continuity {C:.10f} recall {R:.10f} knn_accuracy {A:.10f}")
for name, a, b in (("trustworthiness", ours["trustworthiness"], T), ("continuity", ours["continuity"], C),
                   ("recall", ours["recall"], R), ("knn_accuracy", ours["knn_accuracy"], A)):
    print(f"  {name:16s} nlembed {a:.10f}  sklearn {b:.10f}  |diff| {abs(a - b):.2e}")
print(f"time: nlembed {t_ours:.1f} s (whole command, incl. loading), sklearn {t_sk:.1f} s (metrics only)")
