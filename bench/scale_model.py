#!/usr/bin/env python3
"""scale_model.py — a model of a distributed t-SNE run (issue 38, docs/scale.md).

Time and memory of each stage per rank for N points on R ranks, from the
per-point costs measured on one machine (bench/results/million_tsne.txt:
1,000,000 augmented Fashion-MNIST images, 2 threads) and the bytes each
stage sends (counted by the stages themselves, bench/mpi.sh), with the
network's bandwidth and latency as parameters. A stage's time is its
compute (per-point cost x rows per rank / cores) plus its messages (bytes /
bandwidth + messages x latency); the model says where the messages
overtake the compute: the stage that stops scaling first.

  /usr/bin/python3 bench/scale_model.py [--n 1e8] [--machines 64] [--cores 16]
      [--bandwidth 1.25e9] [--latency 2e-5] [--cut 0.3] [--iters 450]

Only the standard library: it is arithmetic on measured constants.
"""
import argparse
import math

# Measured on the project's 2-core Xeon VM, 2 threads, 1,000,000 points, the
# defaults (bench/results/million_tsne.txt, 2026-11-28): seconds per stage.
MEASURED_POINTS = 1_000_000
MEASURED_THREADS = 2
MEASURED = {
    "read": 11.1,        # .npy of 1e6 x 784 float32 (3.1 GB) from local disk
    "pca": 7.3,          # to 50 components
    "knn": 104.5,        # approximate, k = 90 (forest + NN-descent + re-ranking)
    "affinity": 17.5,    # entropic affinities, perplexity 30, and symmetrisation
    "attraction": 0.1625,  # one evaluation's attractive forces
    "repulsion": 0.1285,   # one evaluation's FFT repulsion (spreading, convolution, gathering)
}
PEAK_BYTES_MEASURED = 5.51 * 2**30  # the run's peak resident memory
D, PCA_DIMS, K, DIMS = 784, 50, 90, 2
P_PER_ROW = 1.5 * K          # P's entries a row after symmetrisation
FFT_NODES_CAP = 1024 ** 2    # the FFT engine's largest 2-D grid (fft_plan.c)
FFT_TERMS = 4                # charges a node carries for t-SNE (1, x, y, |x|^2)
FFT_CHANNELS = 2             # the convolved grids t-SNE's forces read (2-D): the transposes back, the rows shared
SPREAD_SHARE = 0.1           # the spreading's share of the repulsion (docs/mpi_tsne.md's profile: under 10%)
KNN_EXCHANGE_2 = 1.7e3       # offers and reverse candidates a rank's row, 2 ranks (bench/results/mpi.txt)
KNN_EXCHANGE_MAX = 7e3       # taken as the most, many ranks
# As built, a rank's work per row against this model's: 1,000,000 points,
# 2 ranks x 1 thread against the model's 1 x 2 (bench/results/mpi.txt,
# medians of 3, with the ranks' locality order): the iterations 102.6 s
# against 138.1 modelled (one process took 103.6 s in the same bench: the
# model's per-point costs come from an earlier, slower run), the search
# 127.4 against 105.3 (its re-ranking ring, docs/mpi.md). Before the ranks'
# locality order the iterations took 273.8 s.
ITER_BUILT_SLOWER = 102.6 / 138.1
KNN_BUILT_SLOWER = 127.4 / 105.3


def per_point(stage):
    """core-seconds per point of a stage, as measured"""
    return MEASURED[stage] * MEASURED_THREADS / MEASURED_POINTS


def model(n, ranks, threads, bandwidth, latency, cut, iters, thread_efficiency, knn_rounds, fs_bandwidth, fft_seconds):
    rows = n / ranks
    cores = threads * thread_efficiency
    remote = cut * (1 - 1 / ranks)  # the share of a row's neighbours on other ranks
    grow = math.log(n) / math.log(MEASURED_POINTS)  # the kNN forest's depth grows with log N
    send = lambda b, messages: b / bandwidth + messages * latency  # noqa: E731
    logr = max(1.0, math.log2(ranks))
    stages = []
    # reading: each rank reads its rows by offset from a parallel file system
    stages.append(("read", rows * D * 4 / fs_bandwidth, 0.0, 0.0, 0))
    # PCA: the randomised range finder's D x 60 products summed over ranks (a few passes)
    b = 4 * D * 60 * 8 * 2
    stages.append(("pca", rows * per_point("pca") / cores, send(b, 8 * logr), b, 0))
    # kNN as built (docs/mpi_graph.md, this sitting): the 50-component rows
    # gathered to every rank (200 B a point); the joins, heaps and
    # candidates of a rank's share of the leaf order; offers and reverse
    # candidates to other ranks' rows: 1.7 KB an owned row at 2 ranks and
    # 5 KB at 4 (bench/results/mpi.txt, 1,000,000 points), taken as growing
    # with the ranks to at most 7 KB; then the re-ranking in the data's D
    # dimensions by a ring: every rank's rows of the data pass every rank
    rows_gathered = n * PCA_DIMS * 4 * (ranks - 1) / ranks
    exchange = rows * min(KNN_EXCHANGE_MAX, KNN_EXCHANGE_2 * (ranks - 1)) if ranks > 1 else 0.0
    ring = n * D * 4 * (ranks - 1) / ranks
    b = rows_gathered + exchange + ring
    stages.append(("knn-built", KNN_BUILT_SLOWER * rows * per_point("knn") * grow / cores,
                   send(b, knn_rounds * ranks + ranks), b, 0))
    # planned: the rows in a locality order before they are shared out, so
    # the re-ranking fetches only its candidates' rows from other ranks (a
    # halo: the cut's share of them) instead of the ring
    halo_rows = min(rows * K * remote, n - rows)
    b = rows_gathered + exchange * cut + halo_rows * D * 4
    stages.append(("knn", rows * per_point("knn") * grow / cores, send(b, knn_rounds * ranks + ranks), b, 0))
    # affinities per row; symmetrisation sends each remote transposed entry once
    b = rows * K * remote * 12
    stages.append(("affinity", rows * per_point("affinity") / cores, send(b, ranks), b, 0))
    # one iteration as built (docs/mpi_tsne.md): the whole map gathered to
    # every rank (N x 2 doubles), the attraction where the rows live, the
    # FFT engine's spreading over the whole map on every rank (its share of
    # the repulsion, SPREAD_SHARE, grows with N, not with the rows a rank
    # holds), its transforms divided among the ranks (two transposes of the
    # grid and its node rows shared: about 45 MB an evaluation at 2 ranks
    # near the cap, 8 bytes a node a channel), the interpolation by rows
    whole_map = n * DIMS * 8
    grid = min(FFT_NODES_CAP, 4 * n / 64)
    slabs = grid * 8 * (1 + FFT_CHANNELS) * (ranks - 1) / ranks + grid * 4 * FFT_CHANNELS * (ranks - 1) / ranks
    b_built = whole_map * (ranks - 1) / ranks + slabs
    compute = (rows * per_point("attraction") + rows * per_point("repulsion") * (1 - SPREAD_SHARE) +
               n * per_point("repulsion") * SPREAD_SHARE) / cores
    stages.append(("iterations", ITER_BUILT_SLOWER * iters * compute, iters * send(b_built, 3 * ranks), iters * b_built,
                   b_built))
    # planned: neighbours' positions for the attraction (a halo of the
    # distinct remote rows, at most the whole map), the grid's charges
    # summed over ranks (allreduce of the capped grid in 64-bit fixed
    # point), each rank spreading and gathering its own rows; the grid's
    # transforms divided as built (fft_seconds / ranks, a floor)
    halo = min(rows * P_PER_ROW * remote, n - rows) * DIMS * 8
    b_iter = halo + (2 * grid * FFT_TERMS * 8 * (ranks - 1) / ranks if ranks > 1 else 0) + slabs
    compute = rows * (per_point("attraction") + per_point("repulsion")) / cores + fft_seconds / ranks
    stages.append(("iter-split", iters * compute, iters * send(b_iter, ranks + 3 * logr), iters * b_iter, b_iter))
    # memory per rank: the measured bytes a row, plus what every rank holds
    # whole as built: the gathered 50-component rows (200 B a point), the
    # map's vectors (72 B, docs/mpi_tsne.md), the search's numbering and
    # bounds (8 B; the entropic affinities take the bounds order on ranks,
    # which gathers nothing), the locality order and its inverse (8 B); as
    # planned the halo and the grid, and the
    # 50-component rows
    per_row = PEAK_BYTES_MEASURED / MEASURED_POINTS
    memory = (rows * per_row + n * (PCA_DIMS * 4 + 72 + 8 + 8), rows * per_row + halo + 3 * grid * 8 + n * PCA_DIMS * 4)
    return stages, memory


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e8)
    ap.add_argument("--machines", type=int, default=64)
    ap.add_argument("--cores", type=int, default=16, help="cores a machine (one rank a machine, a thread a core)")
    ap.add_argument("--bandwidth", type=float, default=1.25e9, help="bytes/s a rank sends (1.25e9: 10 Gb Ethernet)")
    ap.add_argument("--latency", type=float, default=2e-5, help="seconds a message (2e-5: TCP)")
    ap.add_argument("--cut", type=float, default=0.3,
                    help="share of neighbours on other ranks relative to a random order (1: rows in input order; "
                         "the ranks' locality order: 0.17 at 2 ranks, 0.26 at 4, measured on 200,000 points)")
    ap.add_argument("--iters", type=int, default=450)
    ap.add_argument("--thread-efficiency", type=float, default=0.8)
    ap.add_argument("--knn-rounds", type=int, default=10)
    ap.add_argument("--fs-bandwidth", type=float, default=1e9, help="bytes/s a rank reads")
    ap.add_argument("--fft-seconds", type=float, default=MEASURED["repulsion"] / 4,
                    help="the grid's transforms an iteration at the grid's cap, with a machine's cores")
    a = ap.parse_args()
    n, ranks = a.n, a.machines
    args = (a.cores, a.bandwidth, a.latency, a.cut, a.iters, a.thread_efficiency, a.knn_rounds, a.fs_bandwidth,
            a.fft_seconds)
    stages, memory = model(n, ranks, *args)
    print(f"model: {n:.3g} points on {ranks} ranks x {a.cores} threads; bandwidth {a.bandwidth:.3g} B/s, "
          f"latency {a.latency:.3g} s, cut {a.cut}, {a.iters} iterations")
    print(f"{'stage':<11} {'compute s':>10} {'messages s':>11} {'total s':>9} {'GB sent/rank':>13}")
    total = 0.0
    for name, comp, comm, sent, _ in stages:
        total += comp + comm
        print(f"{name:<11} {comp:>10.1f} {comm:>11.1f} {comp + comm:>9.1f} {sent / 1e9:>13.2f}")
    built = total - sum(st[1] + st[2] for st in stages if st[0] in ("iter-split", "knn"))
    planned = total - sum(st[1] + st[2] for st in stages if st[0] in ("iterations", "knn-built"))
    print(f"whole run as built (knn-built, iterations): {built:.1f} s ({built / 60:.1f} min); "
          f"as planned (knn, iter-split): {planned:.1f} s ({planned / 60:.1f} min)")
    print(f"bytes sent per iteration per rank: as built {stages[-2][4] / 1e6:.1f} MB, planned {stages[-1][4] / 1e6:.1f} MB")
    print(f"memory per rank: as built {memory[0] / 2**30:.1f} GiB, planned {memory[1] / 2**30:.1f} GiB")
    # where each stage stops scaling: the fewest ranks (powers of 2) at which
    # its messages take longer than its compute, or its time stops falling
    print("stops scaling from (messages >= compute, or no faster with twice the ranks):")
    for i, st in enumerate(stages):
        where = None
        for e in range(1, 17):
            r = 2 ** e
            now = model(n, r, *args)[0][i]
            nxt = model(n, 2 * r, *args)[0][i]
            if (now[2] >= now[1] > 0) or (now[1] + now[2] > 0 and nxt[1] + nxt[2] > 0.95 * (now[1] + now[2])):
                where = r
                break
        print(f"  {st[0]:<11} {'never (to 65,536 ranks)' if where is None else f'{where} ranks'}")


if __name__ == "__main__":
    main()
