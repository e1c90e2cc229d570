#!/usr/bin/env bash
# formats.sh — the container and sparse readers end to end, on files made by
# the tools users make them with (/usr/bin/python3: anndata, h5py, scipy,
# numpy): AnnData .h5ad (dense X, CSR and CSC X, categorical obs labels), a
# plain HDF5 file, scipy.sparse.save_npz and np.savez archives, MATLAB files
# from scipy.io.savemat (dense and sparse), a 10x Genomics folder (matrix.mtx
# of genes x cells, gzip'ed, with its barcodes and features), Matrix Market
# files of every symmetry and field from scipy.io.mmwrite (compared with
# scipy.io.mmread's values). Each is read by
# `nlembed pca` and the result compared with the same matrix read from .npy
# (bit for bit) and with numpy's PCA (up to each component's sign); labels
# from obs go through --labels FILE.h5ad:obs/COLUMN to pca, metrics and
# plot. Bad input is in tests/bad_input.sh.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
PY=/usr/bin/python3

if ! $PY -c 'import anndata, h5py, scipy, numpy' 2> /dev/null; then
  bad python_modules "/usr/bin/python3 lacks anndata, h5py, scipy or numpy (Debian: python3-anndata python3-h5py python3-scipy)"
  finish
  exit 1
fi

# ---- the files, and the dense matrix each holds (as float32 .npy)
if $PY - "$T" > "$T/make.log" 2>&1 <<'PY'
import sys, os, gzip
import numpy as np, scipy.sparse as sp, scipy.io as sio, h5py, anndata as ad, pandas as pd
t = sys.argv[1]
rng = np.random.default_rng(7)
n, d = 300, 12
X = (rng.standard_normal((n, d)) * rng.uniform(0.5, 3, d)).astype(np.float32)
np.save(t + "/X.npy", X)
# counts with most entries zero, as single-cell data are
C = rng.poisson(0.4, (n, d)).astype(np.float32) * rng.uniform(1, 5, d).astype(np.float32)
np.save(t + "/C.npy", C)
kinds = np.array(["B cell", "T cell", "monocyte"])[rng.integers(0, 3, n)]
obs = pd.DataFrame({"cell_type": pd.Categorical(kinds), "batch": rng.integers(0, 4, n)},
                   index=[f"cell{i}" for i in range(n)])
np.save(t + "/cell_type.npy", obs["cell_type"].cat.codes.to_numpy().astype(np.int32))
np.save(t + "/batch.npy", obs["batch"].to_numpy().astype(np.int32))
ad.AnnData(X, obs=obs).write_h5ad(t + "/dense.h5ad")
ad.AnnData(sp.csr_matrix(C), obs=obs).write_h5ad(t + "/csr.h5ad")
ad.AnnData(sp.csc_matrix(C), obs=obs).write_h5ad(t + "/csc.h5ad", compression="gzip")
with h5py.File(t + "/plain.h5", "w") as f:
    f["group/data"] = X.astype(np.float64)
    f["names"] = np.array([b"a", b"b"])
sp.save_npz(t + "/csr.npz", sp.csr_matrix(C))
sp.save_npz(t + "/csc.npz", sp.csc_matrix(C), compressed=False)
sp.save_npz(t + "/coo.npz", sp.coo_matrix(C))
np.savez(t + "/two.npz", X=X, y=obs["batch"].to_numpy())
np.savez_compressed(t + "/one.npz", X=X)
sio.savemat(t + "/dense.mat", {"X": X.astype(np.float64)})
sio.savemat(t + "/sparse.mat", {"C": sp.csc_matrix(C.astype(np.float64)), "y": obs["batch"].to_numpy()},
            do_compression=True)
# 10x Genomics: genes x cells, gzip'ed, with the cells' barcodes
os.makedirs(t + "/tenx")
with gzip.open(t + "/tenx/matrix.mtx.gz", "wb") as f:
    sio.mmwrite(f, sp.coo_matrix(C.T.astype(np.int64) if np.all(C == np.round(C)) else C.T))
with gzip.open(t + "/tenx/barcodes.tsv.gz", "wt") as f:
    f.write("".join(f"cell{i}-1\n" for i in range(n)))
with gzip.open(t + "/tenx/features.tsv.gz", "wt") as f:
    f.write("".join(f"ENSG{j}\tgene{j}\tGene Expression\n" for j in range(d)))
sio.mmwrite(t + "/plain.mtx", sp.coo_matrix(C))
# Matrix Market's symmetries and fields as scipy.io.mmwrite writes them,
# dense (array) and sparse (coordinate); each file's reference is what
# scipy.io.mmread reads back from it (a skew-symmetric file stores the lower
# triangle: the upper one is its negative)
m = 40
L = np.tril(sp.random(m, m, density=0.3, random_state=11).toarray(), -1) * 4 - 1
L[np.tril(np.ones((m, m)), -1) == 0] = 0
skew, sym = L - L.T, L + L.T + np.diag(rng.uniform(1, 2, m))
Pg = (sp.random(m, m, density=0.2, random_state=12) != 0).astype(np.float64)
mm = {"mm_skew_coo": (sp.coo_matrix(skew), dict(symmetry="skew-symmetric")),
      "mm_skew_array": (skew, dict(symmetry="skew-symmetric")),
      "mm_sym_coo": (sp.coo_matrix(sym), dict(symmetry="symmetric")),
      "mm_sym_array": (sym, dict(symmetry="symmetric")),
      "mm_pattern_general": (sp.coo_matrix(Pg), dict(field="pattern", symmetry="general")),
      "mm_pattern_sym": (sp.coo_matrix(((Pg + Pg.T) != 0).astype(np.float64)), dict(field="pattern", symmetry="symmetric")),
      "mm_int_skew_coo": (sp.coo_matrix(np.round(skew * 7).astype(np.int64)), dict(field="integer", symmetry="skew-symmetric")),
      "mm_int_sym_array": (np.round(sym * 7).astype(np.int64), dict(field="integer", symmetry="symmetric")),
      "mm_int_general_array": (np.round(skew * 7 + L * 3).astype(np.int64), dict(field="integer", symmetry="general"))}
for name, (a, kw) in mm.items():
    sio.mmwrite(t + "/" + name + ".mtx", a, **kw)
    head = open(t + "/" + name + ".mtx").readline().split()
    assert head[3:] == [kw.get("field", "real"), kw["symmetry"]], (name, head)
    back = sio.mmread(t + "/" + name + ".mtx")
    back = back.toarray() if sp.issparse(back) else np.asarray(back)
    assert (kw["symmetry"] != "skew-symmetric") or (np.abs(back + back.T).max() == 0 and np.abs(back).max() > 0), name
    np.save(t + "/" + name + "_mmread.npy", back.astype(np.float32))
PY
then ok make_files; else bad make_files "$(tail -c 600 "$T/make.log")"; fi

# numpy's PCA scores of a .npy (float64 after the float32 read), columns
# signed alike: nlembed's within 1e-5 of them
cat > "$T/compare.py" <<'PY'
import sys, numpy as np
X = np.load(sys.argv[1]).astype(np.float64)
Y = np.load(sys.argv[2])
Xc = X - X.mean(0)
U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
ref = Xc @ Vt[:Y.shape[1]].T
for j in range(Y.shape[1]):
    if np.dot(ref[:, j], Y[:, j]) < 0:
        ref[:, j] = -ref[:, j]
err = np.abs(ref - Y).max() / np.abs(ref).max()
assert err < 1e-5, err
PY

# pca_matches NAME SOURCE REFERENCE.npy: the source read as the reference
# (the same bits out of pca), and numpy's PCA of the reference
pca_matches() {
  local name=$1 src=$2 ref=$3
  if ! $N pca "$src" -d 3 -o "$T/$name.npy" --quiet > "$T/stdout" 2> "$T/stderr"; then
    bad "$name" "exit $?: $(head -c 300 "$T/stderr")"
    return
  fi
  [ -f "$T/ref_$(basename "$ref")" ] || $N pca "$ref" -d 3 -o "$T/ref_$(basename "$ref")" --quiet > /dev/null
  if ! cmp -s "$T/$name.npy" "$T/ref_$(basename "$ref")"; then bad "$name" "differs from the same matrix read from .npy"
  elif ! $PY "$T/compare.py" "$ref" "$T/$name.npy" 2> "$T/py_err"; then bad "$name" "numpy's PCA differs: $(tail -1 "$T/py_err")"
  else ok "$name"; fi
}

pca_matches h5ad_dense "$T/dense.h5ad" "$T/X.npy"
pca_matches h5ad_dense_named "$T/dense.h5ad:X" "$T/X.npy"
pca_matches h5ad_csr "$T/csr.h5ad" "$T/C.npy"
pca_matches h5ad_csc_gzip "$T/csc.h5ad" "$T/C.npy"
pca_matches hdf5_only_dataset "$T/plain.h5" "$T/X.npy"
pca_matches hdf5_path "$T/plain.h5:/group/data" "$T/X.npy"
pca_matches npz_csr "$T/csr.npz" "$T/C.npy"
pca_matches npz_csc_stored "$T/csc.npz" "$T/C.npy"
pca_matches npz_coo "$T/coo.npz" "$T/C.npy"
pca_matches npz_key "$T/two.npz:X" "$T/X.npy"
pca_matches npz_only_array "$T/one.npz" "$T/X.npy"
pca_matches mat_dense "$T/dense.mat" "$T/X.npy"
pca_matches mat_sparse "$T/sparse.mat:C" "$T/C.npy"
pca_matches tenx_folder "$T/tenx" "$T/C.npy"
pca_matches mtx_plain "$T/plain.mtx" "$T/C.npy"
for f in mm_skew_coo mm_skew_array mm_sym_coo mm_sym_array mm_pattern_general mm_pattern_sym mm_int_skew_coo \
  mm_int_sym_array mm_int_general_array; do
  pca_matches "$f" "$T/$f.mtx" "$T/${f}_mmread.npy"
done

# ---- labels inside the files
expect_ok labels_categorical $N pca "$T/dense.h5ad" -d 2 -o "$T/lab_pca.npy" --labels "$T/dense.h5ad:obs/cell_type" \
  --save-labels "$T/lab_codes.npy" --quiet
expect_ok labels_names $N pca "$T/dense.h5ad" -d 2 -o "$T/lab_pca.npy" --labels "$T/dense.h5ad:obs/cell_type" \
  --save-labels "$T/lab_names.txt" --quiet
expect_ok labels_integer $N pca "$T/csr.h5ad" -d 2 -o "$T/lab_pca2.npy" --labels "$T/csr.h5ad:obs/batch" \
  --save-labels "$T/lab_batch.npy" --quiet
expect_ok labels_npz_key $N pca "$T/two.npz:X" -d 2 -o "$T/lab_pca3.npy" --labels "$T/two.npz:y" \
  --save-labels "$T/lab_npz.npy" --quiet
expect_ok labels_mat_variable $N pca "$T/sparse.mat:C" -d 2 -o "$T/lab_pca4.npy" --labels "$T/sparse.mat:y" \
  --save-labels "$T/lab_mat.npy" --quiet
if $PY - "$T" 2> "$T/py_err" <<'PY'
import sys, numpy as np
t = sys.argv[1]
assert (np.load(t + "/lab_codes.npy") == np.load(t + "/cell_type.npy")).all()
names = open(t + "/lab_names.txt").read().split("\n")[:-1]
want = np.array(["B cell", "T cell", "monocyte"])[np.load(t + "/cell_type.npy")]
assert list(names) == list(want), (names[:5], want[:5])
for f in ("lab_batch", "lab_npz", "lab_mat"):
    assert (np.load(t + "/" + f + ".npy") == np.load(t + "/batch.npy")).all(), f
PY
then ok labels_match_python; else bad labels_match_python "$(tail -3 "$T/py_err")"; fi
expect_ok metrics_h5ad_labels $N metrics "$T/dense.h5ad" "$T/lab_pca.npy" --labels "$T/dense.h5ad:obs/cell_type" -k 5
if grep -q '"knn_accuracy": [01]\.' "$T/stdout"; then ok metrics_h5ad_accuracy; else bad metrics_h5ad_accuracy "$(cat "$T/stdout")"; fi
expect_ok plot_h5ad_labels $N plot "$T/lab_pca.npy" --labels "$T/dense.h5ad:obs/cell_type" -o "$T/cells.png" --quiet
if [ "$(head -c 8 "$T/cells.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then ok plot_h5ad_png
else bad plot_h5ad_png "not a PNG"; fi

finish
