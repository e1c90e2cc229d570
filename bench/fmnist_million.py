"""fmnist_million.py — a 1,000,000-point set for issue 5, measurement 4:
Fashion-MNIST images (all 70,000, cycled) each shifted by up to two pixels in
x and y and rotated by up to 10 degrees (uniform, bilinear resampling about
the image centre), seeded. Writes OUT.npy (float32, 1e6 x 784) and
OUT-labels.npy (int32).
  /usr/bin/python3 bench/fmnist_million.py OUT [N]"""
import sys

import numpy as np
from scipy import ndimage

sys.path.insert(0, "bench")
import fmnist  # noqa: E402


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    base = fmnist.images(min(n, 70000)).astype(np.float32).reshape(-1, 28, 28)
    labels = fmnist.labels(min(n, 70000)).astype(np.int32)
    rng = np.random.default_rng(2026)
    X = np.lib.format.open_memmap(out + ".npy", mode="w+", dtype=np.float32, shape=(n, 784))
    rows, cols = np.mgrid[0:28, 0:28].astype(np.float32)
    batch = 10_000
    for start in range(0, n, batch):
        stop = min(n, start + batch)
        m = stop - start
        src = np.arange(start, stop) % len(base)
        angle = np.deg2rad(rng.uniform(-10, 10, m)).astype(np.float32)
        shift = rng.uniform(-2, 2, (m, 2)).astype(np.float32)
        c, s = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
        # Output pixel (r, q) samples the source at the inverse rotation of
        # its offset from the centre, minus the shift.
        dr, dq = rows - 13.5 - shift[:, 0, None, None], cols - 13.5 - shift[:, 1, None, None]
        sr = c * dr + s * dq + 13.5
        sq = -s * dr + c * dq + 13.5
        si = np.broadcast_to(np.arange(m, dtype=np.float32)[:, None, None], sr.shape)
        img = ndimage.map_coordinates(base[src], [si, sr, sq], order=1, mode="constant", cval=0.0)
        X[start:stop] = img.reshape(m, 784)
    X.flush()
    np.save(out + "-labels.npy", labels[np.arange(n) % len(base)])


if __name__ == "__main__":
    main()
