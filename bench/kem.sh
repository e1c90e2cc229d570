#!/usr/bin/env bash
# kem.sh — kernel eigenmaps (Brand, IJCAI 2003): (a) sec. 4's twisted Swiss
# roll, the four variants against the exact Laplacian eigenmap over 100
# kernel placements, and G(x) of held-out points (bench/kem_roll.py
# documents the roll); (b) Fashion-MNIST: trained on 10,000 images, G(x) of
# the other 60,000 timed and its recall@10, against the Laplacian
# eigenmap's Nystrom map (nlembed le --save-model, transform) on the same
# split. Results: bench/results/kem_roll.txt, kem_fashion.txt.
. "$(dirname "$0")/common.sh"
R=$RESULTS
NTRAIN=$(smoke_or 10000 300) NREST=$(smoke_or 60000 200) REPS=$(smoke_or 3 1)
$PY bench/kem_roll.py "$NLEMBED" "$OUT" "${TRIALS:-$(smoke_or 100 1)}" | tee $R/kem_roll.txt

{
echo "Fashion-MNIST: first $NTRAIN of the 70,000 images to train, the next $NREST mapped; $(nproc) cores"
$PY -c "
import sys; sys.path.insert(0, 'bench'); import fmnist, numpy as np
X = fmnist.images($NTRAIN + $NREST).astype(np.float32); np.save('$OUT/fm_train.npy', X[:$NTRAIN]); np.save('$OUT/fm_rest.npy', X[$NTRAIN:])"
median_run "kem fit, $NTRAIN (defaults: 1,024 kernels, q = 0)" 1 $NLEMBED kem "$OUT/fm_train.npy" -o "$OUT/fm_kem.npy" --save-model "$OUT/fm_kem.nle"
cat "$OUT/.stdout"
median_run "kem G(x) of $NREST" "$REPS" $NLEMBED transform "$OUT/fm_kem.nle" "$OUT/fm_rest.npy" -o "$OUT/fm_kem_rest.npy"
cat "$OUT/.stdout"
median_run "le fit, $NTRAIN (peer: Nystrom map)" 1 $NLEMBED le "$OUT/fm_train.npy" -o "$OUT/fm_le.npy" --save-model "$OUT/fm_le.nle"
median_run "le Nystrom of $NREST" "$REPS" $NLEMBED transform "$OUT/fm_le.nle" "$OUT/fm_rest.npy" -o "$OUT/fm_le_rest.npy"
for e in kem le; do
  echo "recall@10, $e, training $NTRAIN: $($NLEMBED metrics "$OUT/fm_train.npy" "$OUT/fm_$e.npy" -k 10 --quiet | $PY -c 'import json,sys; print(json.load(sys.stdin)["recall"])')"
  echo "recall@10, $e, mapped $NREST:   $($NLEMBED metrics "$OUT/fm_rest.npy" "$OUT/fm_${e}_rest.npy" -k 10 --quiet | $PY -c 'import json,sys; print(json.load(sys.stdin)["recall"])')"
done
} | tee $R/kem_fashion.txt
