"""fmnist.py — Fashion-MNIST from Debian's dataset-fashion-mnist as numpy
arrays, for the benchmark scripts (train + test, 70,000 points)."""
import gzip

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist/"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def _read(name, offset, shape):
    with gzip.open(DIR + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset).reshape(shape)


def images():
    """70,000 x 784 float64 pixels, train then test (nlembed's order)."""
    parts = [_read(f"{s}-images-idx3-ubyte.gz", 16, (-1, 784)) for s in ("train", "t10k")]
    return np.vstack(parts).astype(np.float64)


def labels():
    return np.concatenate([_read(f"{s}-labels-idx1-ubyte.gz", 8, (-1,)) for s in ("train", "t10k")])
