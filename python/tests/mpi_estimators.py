"""The estimators with an mpi4py communicator (docs/mpi.md), run by
tests/mpi.sh under mpirun (not collected by pytest: it needs the ranks).
Every rank computes the single-process result itself and checks its own
rows of the distributed one bit for bit. Prints "ok NAME" lines on rank 0;
exits non-zero when a check failed on any rank."""
import sys

import numpy as np
from mpi4py import MPI

import nlembed

comm = MPI.COMM_WORLD
rank, ranks = comm.Get_rank(), comm.Get_size()
BLOCK = 4096  # NLE__RANK_ROW_BLOCK: ranks hold whole blocks of rows
N = 3 * BLOCK + 50
failures = []


def share(n, r):
    """Rank r's canonical rows (src/core/comm.c, nle__rank_rows)."""
    blocks = -(-n // BLOCK)
    b0 = blocks // ranks * r + min(r, blocks % ranks)
    b1 = b0 + blocks // ranks + (r < blocks % ranks)
    return min(b0 * BLOCK, n), min(b1 * BLOCK, n)


def check(name, cond):
    if not cond:
        failures.append(name)


Y = np.random.default_rng(5).standard_normal((N, 6)).astype(np.float32)
begin, end = share(N, rank)

# transform of a fitted model: each rank maps its own rows (here an uneven
# split, not the canonical one), the same bits as alone
alone = nlembed.PCA(n_components=3).fit(Y)
want = alone.transform(Y)
lo, hi = N * rank // (3 * ranks), (N if rank == ranks - 1 else N * (rank + 1) // (3 * ranks))
alone.set_params(comm=comm)
got = alone.transform(Y[lo:hi])
check("transform_rows", got.shape == (hi - lo, 3) and np.array_equal(got, want[lo:hi]))

# fit: a method whose stages do not take rows yet is refused on more than
# one rank with a clear message; once it runs, each rank gets its rows of
# the embedding of one rank (a communicator of one: t-SNE's affinities take
# the bounds order under any communicator, docs/mpi.md)
for cls, params in [(nlembed.PCA, {"n_components": 2}), (nlembed.TSNE, {"max_iter": 100, "perplexity": 10})]:
    try:
        mine = cls(**params, comm=comm).fit_transform(Y[begin:end])
    except (ValueError, RuntimeError, NotImplementedError) as e:
        check(f"{cls.__name__}_refused", ranks > 1 and "does not run on more than one rank yet" in str(e))
    else:
        one = cls(**params, comm=MPI.COMM_SELF).fit_transform(Y)
        check(f"{cls.__name__}_rows", np.array_equal(mine, one[begin:end]))

# LLL (docs/mpi_spectral.md): each rank its rows of the embedding, the bits
# of a communicator of one rank holding every row
Yc = Y.copy()
Yc[:, 0] += 3.0 * (np.arange(N) % 2)
mine = nlembed.LaplacianEigenmaps(landmarks=200, comm=comm).fit_transform(Yc[begin:end])
one = nlembed.LaplacianEigenmaps(landmarks=200, comm=MPI.COMM_SELF).fit_transform(Yc)
check("LaplacianEigenmaps_landmarks_rows", mine.shape == (end - begin, 2) and np.array_equal(mine, one[begin:end]))

# a wrong communicator is refused by type
try:
    nlembed.PCA(comm="world").fit(Y)
    check("comm_type", False)
except TypeError:
    pass

failed = comm.allreduce(len(failures), op=MPI.MAX)
names = comm.gather(failures, root=0)
if rank == 0:
    for r, f in enumerate(names):
        for name in f:
            print(f"FAIL python_mpi {name} (rank {r})")
    if not failed:
        print(f"ok python_mpi_ranks_{ranks}")
sys.exit(1 if failed else 0)
