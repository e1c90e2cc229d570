# docs/example.py: t-SNE of the 60,000 Fashion-MNIST training images, the
# map's 10-NN accuracy, and the 10,000 test images placed in it as new points
import gzip, time
import numpy as np
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier
import nlembed

def idx(name, offset):
    with gzip.open(f"/usr/share/datasets/fashion-mnist/{name}-ubyte.gz") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)

X_train = idx("train-images-idx3", 16).reshape(-1, 784).astype(np.float32)
y_train = idx("train-labels-idx1", 8)
X_test = idx("t10k-images-idx3", 16).reshape(-1, 784).astype(np.float32)
y_test = idx("t10k-labels-idx1", 8)

tsne = nlembed.TSNE()                   # the tool's defaults, every core, seed 1
t = time.perf_counter()
E = tsne.fit_transform(X_train)
print(f"t-SNE of {len(E)} images: {time.perf_counter() - t:.1f} s, KL {tsne.kl_divergence_:.3f}")
knn = KNeighborsClassifier(10)
print(f"10-NN accuracy in the map: {cross_val_score(knn, E, y_train, cv=5).mean():.3f}")
t = time.perf_counter()
E_test = tsne.transform(X_test)         # F(y): held-out images placed in the map
print(f"transform of {len(E_test)} new images: {time.perf_counter() - t:.1f} s, "
      f"10-NN accuracy {knn.fit(E, y_train).score(E_test, y_test):.3f}")
