"""fmnist.py — Fashion-MNIST from Debian's dataset-fashion-mnist as numpy
arrays, for the benchmark scripts (train + test, 70,000 points)."""
import gzip

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist/"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def _read(name, offset, width, rows):
    """The first `rows` records (all when None) of an IDX file, decompressing
    only as far as they go."""
    with gzip.open(DIR + name) as f:
        data = f.read() if rows is None else f.read(offset + rows * width)
    return np.frombuffer(data, np.uint8, offset=offset).reshape(-1, width) if width > 1 else \
        np.frombuffer(data, np.uint8, offset=offset)


def _first(n, read):
    train = read("train", None if n is None else min(n, 60000))
    if n is not None and n <= 60000:
        return train
    return np.concatenate([train, read("t10k", None if n is None else n - 60000)])


def images(n=None):
    """70,000 x 784 float64 pixels, train then test (nlembed's order); the
    first n of them when n is given (the smoke runs read a few hundred)."""
    return _first(n, lambda s, r: _read(f"{s}-images-idx3-ubyte.gz", 16, 784, r)).astype(np.float64)


def labels(n=None):
    return _first(n, lambda s, r: _read(f"{s}-labels-idx1-ubyte.gz", 8, 1, r))
