#!/usr/bin/env bash
# pca_fashion.sh — `nlembed pca fashion-mnist -d 50`: wall time (median of 3),
# peak memory, and the explained variances of the first 10 components against
# numpy's SVD of the centred data, run in the same script.
source "$(dirname "$0")/common.sh"
threads=${THREADS:-2}
FM=$(smoke_or fashion-mnist fashion-mnist:500) N=$(smoke_or 70000 500) REPS=$(smoke_or 3 1)
median_run "nlembed pca $FM -d 50 (exact)" "$REPS" \
  "$NLEMBED" pca "$FM" -d 50 --threads "$threads" --quiet -o "$OUT/fmnist-pca50.npy"
cp "$OUT/.stdout" "$OUT/pca50.json"
median_run "nlembed pca $FM -d 50 (randomized)" "$REPS" \
  "$NLEMBED" pca "$FM" -d 50 --solver randomized --threads "$threads" --quiet -o "$OUT/fmnist-pca50r.npy"
cp "$OUT/.stdout" "$OUT/pca50r.json"
"$NLEMBED" pca "$FM" -d 2 --quiet -o "$OUT/fmnist-pca2.npy" --save-labels "$OUT/fmnist-labels.npy" > /dev/null
OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$PY" - "$OUT" "$N" <<'PY'
import json, sys, time
import numpy as np
sys.path.insert(0, "bench")
import fmnist
out = sys.argv[1]
Y = fmnist.images(int(sys.argv[2]))
t = time.time()
Yc = Y - Y.mean(axis=0)
s = np.linalg.svd(Yc, full_matrices=False, compute_uv=False)
t = time.time() - t
ev = s**2 / (Y.shape[0] - 1)
print(f"numpy SVD of the centred {Y.shape[0]} x 784 float64 matrix: {t:.2f} s")
for name in ("pca50.json", "pca50r.json"):
    ours = np.array(json.load(open(f"{out}/{name}"))["explained_variance"][:10])
    rel = np.abs(ours - ev[:10]) / ev[:10]
    print(f"{name}: max relative difference of the first 10 explained variances: {rel.max():.3e}")
    print("  nlembed:", " ".join(f"{v:.6f}" for v in ours))
    print("  numpy:  ", " ".join(f"{v:.6f}" for v in ev[:10]))
ratio = ev[:10] / ev.sum()
print("numpy explained variance ratio, first 10:", " ".join(f"{r:.6f}" for r in ratio))
X = np.load(f"{out}/fmnist-pca2.npy")
print(f"PCA-2 projection: variance of the columns / numpy eigenvalues: {X.var(axis=0, ddof=1)[0] / ev[0]:.9f} {X.var(axis=0, ddof=1)[1] / ev[1]:.9f}")
PY
