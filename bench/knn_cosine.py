"""knn_cosine.py — tf-idf-like documents for bench/knn_cosine.sh, and the
peers measured in the same run: scikit-learn's brute-force cosine search and
pynndescent (when installed).

  knn_cosine.py gen N TERMS TOPICS OUT.npz
      N documents over TERMS terms: each token from the corpus-wide Zipf law
      (exponent 1.07; 40% of tokens), its topic's (30%) or its subtopic's
      (30%; 20 subtopics a topic), each the same law over a vocabulary
      rotated by an offset of its own; 70-210 tokens a document (about 105
      distinct terms); weights (1 + log tf) (log((1 + N) / (1 + df)) + 1), as
      scikit-learn's TfidfVectorizer(sublinear_tf=True) before its row
      normalisation. Saved with scipy.sparse.save_npz (CSR, float32).
  knn_cosine.py recall EXACT.npy APPROX.npy
      recall of nlembed's approximate lists against its exact ones.
  knn_cosine.py peers DATA.npz EXACT.npy K THREADS REPS
      scikit-learn NearestNeighbors(metric="cosine", algorithm="brute") and
      pynndescent, each timed (median of REPS, fit and query) with its recall
      against nlembed's exact lists. Recall ignores ties' order: a found
      neighbour counts when it is in the exact list.
"""
import sys
import time

import numpy as np
import scipy.sparse as sp


def tfidf_docs(n, terms, topics, seed=1, avg_len=140, expo=1.07, sub=20, mix=(0.4, 0.3, 0.3)):
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, terms + 1) ** expo
    p /= p.sum()
    lens = rng.integers(avg_len // 2, avg_len * 3 // 2, n)
    topic = rng.integers(0, topics, n)
    subtopic = topic * sub + rng.integers(0, sub, n)
    doc = np.repeat(np.arange(n), lens)
    ranks = rng.choice(terms, size=lens.sum(), p=p)
    source = rng.choice(3, size=lens.sum(), p=mix)
    topic_offset = rng.integers(1, terms, topics)
    sub_offset = rng.integers(1, terms, topics * sub)
    offset = np.where(source == 0, 0,
                      np.where(source == 1, topic_offset[topic[doc]], sub_offset[subtopic[doc]]))
    X = sp.csr_matrix((np.ones(lens.sum(), np.float32), (doc, (ranks + offset) % terms)), shape=(n, terms))
    X.sum_duplicates()
    X.data = 1 + np.log(X.data)
    df = np.bincount(X.indices, minlength=terms)
    X.data = (X.data * (np.log((1 + n) / (1 + df)) + 1)[X.indices]).astype(np.float32)
    X.sort_indices()
    return X


def recall(found, exact):
    k = exact.shape[1]
    return float(np.mean([len(set(a[:k]) & set(b)) / k for a, b in zip(found, exact)]))


def drop_self(idx, k):
    """Each row without its own index (peers list a point first, or, with
    duplicates, anywhere among its equals); the first k others."""
    return np.array([[j for j in row if j != i][:k] for i, row in enumerate(idx)])


def timed(reps, fn):
    times, out = [], None
    for r in range(reps):
        t = time.perf_counter()
        out = fn(r)
        times.append(time.perf_counter() - t)
    return out, times


def peers(data, exact_path, k, threads, reps):
    X = sp.load_npz(data).tocsr()
    exact = np.load(exact_path)
    from sklearn.neighbors import NearestNeighbors

    def sk(_):
        nn = NearestNeighbors(n_neighbors=k + 1, metric="cosine", algorithm="brute", n_jobs=threads).fit(X)
        return nn.kneighbors(X, return_distance=False)

    idx, times = timed(reps, sk)
    print(f"  scikit-learn brute cosine: median {np.median(times):.2f} s (runs {' '.join(f'{t:.2f}' for t in times)}), "
          f"recall {recall(drop_self(idx, k), exact):.4f} against nlembed exact")
    try:
        from pynndescent import NNDescent
    except ImportError:
        print("  pynndescent: not installed")
        return
    # numba compiles on first use: one untimed run on a small slice
    NNDescent(X[:2000], metric="cosine", n_neighbors=k + 1, random_state=0, n_jobs=threads).neighbor_graph

    def pynn(r):
        return NNDescent(X, metric="cosine", n_neighbors=k + 1, random_state=r, n_jobs=threads).neighbor_graph[0]

    idx, times = timed(reps, pynn)
    print(f"  pynndescent cosine: median {np.median(times):.2f} s (runs {' '.join(f'{t:.2f}' for t in times)}), "
          f"recall {recall(drop_self(idx, k), exact):.4f} against nlembed exact")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        n, terms, topics, out = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        X = tfidf_docs(n, terms, topics)
        sp.save_npz(out, X, compressed=False)
        counts = np.bincount(X.indices, minlength=terms).astype(float)
        print(f"  {n} x {terms} tf-idf documents, {topics} topics: {X.nnz} non-zeros ({X.nnz / n:.1f} a row), "
              f"sum over terms of document counts squared {np.sum(counts ** 2):.3g}")
    elif sys.argv[1] == "recall":
        print(f"  nlembed approx: recall {recall(np.load(sys.argv[3]), np.load(sys.argv[2])):.4f} against nlembed exact")
    elif sys.argv[1] == "peers":
        peers(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
    else:
        sys.exit(__doc__)
