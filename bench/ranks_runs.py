"""ranks_runs.py — what bench/mpi.sh and bench/mpi_lll.sh read back of their
runs (bench/common.sh's ranks_run): each run's JSON line (rank 0's) and
every rank's "wall peak_kb" line, and their medians."""
import json
import statistics


def runs_of(w, label, repeat):
    """The runs LABEL-1 .. LABEL-REPEAT that left both files, as (json,
    [[wall, peak_kb] per rank])."""
    runs = []
    for i in range(1, repeat + 1):
        try:
            j = json.loads(open(f"{w}/{label}-{i}.json").read().strip().splitlines()[-1])
            t = [list(map(float, line.split())) for line in open(f"{w}/{label}-{i}.time")]
        except (OSError, ValueError, IndexError):
            continue
        runs.append((j, t))
    return runs


def wall_and_peak(runs):
    """The median over the runs of the slowest rank's wall seconds, and of
    the largest rank's peak MiB."""
    wall = statistics.median(max(r[0] for r in t) for _, t in runs)
    peak = statistics.median(max(r[1] for r in t) for _, t in runs) / 1024
    return wall, peak
