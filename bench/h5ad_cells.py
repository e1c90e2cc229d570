#!/usr/bin/python3
"""Writes a synthetic single-cell-like AnnData file with Debian's python3-anndata:
N cells x G genes of negative-binomial counts from K cell types (each type
raises its own block of marker genes), library sizes varying tenfold, log1p of
counts per 10,000; X stored sparse (CSR), obs['cell_type'] categorical.
Usage: h5ad_cells.py OUT.h5ad [N] [G] [K] [seed]"""
import sys

import anndata
import numpy as np
import pandas as pd
import scipy.sparse as sp

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
g = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
k = int(sys.argv[4]) if len(sys.argv) > 4 else 10
rng = np.random.default_rng(int(sys.argv[5]) if len(sys.argv) > 5 else 0)

types = rng.integers(0, k, n)
base = rng.gamma(0.3, 1.0, g)                       # most genes barely expressed
program = np.ones((k, g))
markers = g // (2 * k)
for t in range(k):
    program[t, rng.choice(g, markers, replace=False)] *= rng.uniform(4, 12, markers)
library = np.exp(rng.normal(np.log(1500), 0.6, n))  # counts per cell
rows = []
for start in range(0, n, 2000):
    idx = np.arange(start, min(n, start + 2000))
    mean = base[None, :] * program[types[idx]]
    mean *= (library[idx] / mean.sum(1))[:, None]
    counts = rng.negative_binomial(2, 2 / (2 + mean))  # dispersion 0.5
    rows.append(sp.csr_matrix(counts.astype(np.float32)))
X = sp.vstack(rows).tocsr()
X = sp.diags(1e4 / np.maximum(X.sum(1).A1, 1)) @ X
X.data = np.log1p(X.data)
X = X.astype(np.float32).tocsr()
obs = pd.DataFrame({"cell_type": pd.Categorical([f"type_{t}" for t in types])},
                   index=[f"cell{i}" for i in range(n)])
anndata.AnnData(X=X, obs=obs).write_h5ad(out)
print(f"{out}: {n} cells x {g} genes, {X.nnz / n / g:.1%} non-zero, {k} types")
