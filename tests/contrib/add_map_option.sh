#!/usr/bin/env bash
# add_map_option.sh SCRATCH — adds an option of a map of new points the way
# CONTRIBUTING.md says: one row in its family's map_options table
# (est_embed.c, over nle_transform_opts). The row, "dummy-iters", is a
# second name for F(y)'s iterations, so that only the table file changes.
# Then builds and shows the row reached with no other line written:
# `nlembed transform --help` lists it, a run takes it (the JSON line reports
# the iterations), and a model whose maps do not take it refuses it by name.
set -eu
S=${1:?usage: add_map_option.sh SCRATCH}
N=$S/build/nlembed T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$N" tsne blobs:300:5:3 --max-iters 30 -o "$T/x.npy" --save-model "$T/m.nle" --quiet > /dev/null
"$N" le swissroll:300 -o "$T/le.npy" --save-model "$T/le.nle" --quiet > /dev/null
if "$N" transform "$T/m.nle" blobs:20:5:3 --dummy-iters 7 -o "$T/y.npy" --quiet > /dev/null 2>&1; then
  echo "add_map_option: the tool already takes --dummy-iters" >&2; exit 1
fi
sed -i "/the maps' rows end/i \\    {.name = \"dummy-iters\", .kind = NLE__OPT_INT, .offset = offsetof(nle_transform_opts, max_iters),\\n     NLE__INT_FROM(0), .metavar = \"N\", .help = \"F(y): iterations per point (a row of tests/contrib)\"}," \
  "$S/src/estimator/est_embed.c"
grep -q '"dummy-iters"' "$S/src/estimator/est_embed.c" || { echo "add_map_option: no map_options table in est_embed.c"; exit 1; }
make -C "$S" -s -j2 all > /dev/null
"$N" transform --help | grep -q -- '--dummy-iters N .*F(y): iterations per point' ||
  { echo "add_map_option: nlembed transform --help lacks the row"; exit 1; }
"$N" transform "$T/m.nle" blobs:20:5:3 --dummy-iters 7 -o "$T/y.npy" --quiet > "$T/map.json"
grep -q '"max_iters": 7,' "$T/map.json" || { cat "$T/map.json"; echo "add_map_option: the run does not take it"; exit 1; }
if "$N" transform "$T/le.nle" swissroll:20 --dummy-iters 7 -o "$T/z.npy" 2> "$T/err"; then
  echo "add_map_option: a spectral model took it"; exit 1
fi
grep -q -- '--dummy-iters' "$T/err" || { cat "$T/err"; echo "add_map_option: the refusal does not name it"; exit 1; }
echo "add_map_option: the row reaches nlembed transform's --help, its run and its refusals"
