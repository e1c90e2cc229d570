#!/usr/bin/env bash
# add_option.sh SCRATCH — adds an option to an existing method the way
# CONTRIBUTING.md says: one row in its family's option table. The row,
# "dummy-memory", is a second name for a field that has no row (nle_opt_opts'
# memory, L-BFGS's pairs), so that only the table file changes; a real new
# option may need its field too. Then builds and shows the row reached by
# every client with no other line written: the tool's --help lists it and
# its run takes it (the JSON line reports it), the estimator sets it by
# name, the Python class has the parameter and its docstring, and
# docs/options_md.py writes its line.
set -eu
S=${1:?usage: add_option.sh SCRATCH}
N=$S/build/nlembed T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if "$N" tsne blobs:100:5:2 --dummy-memory 3 -o "$T/x.npy" --quiet > /dev/null 2>&1; then
  echo "add_option: the tool already takes --dummy-memory" >&2; exit 1
fi
sed -i '/^    {.name = NULL}};$/i \    {INT("dummy-memory", opt.memory), NLE__INT_FROM(1), .metavar = "M",\n     .help = "lbfgs: correction pairs kept (a row of tests/contrib)"},' \
  "$S/src/estimator/est_embed.c"
grep -q '"dummy-memory"' "$S/src/estimator/est_embed.c" || { echo "add_option: no option table in est_embed.c"; exit 1; }
make -C "$S" -s -j2 all > /dev/null
"$N" tsne --help | grep -q -- '--dummy-memory M .*lbfgs: correction pairs kept .*(default 10; an integer >= 1)' ||
  { echo "add_option: nlembed tsne --help lacks the row"; exit 1; }
"$N" tsne blobs:200:5:2 -p 10 --optimizer lbfgs --max-iters 20 --dummy-memory 3 -o "$T/x.npy" --quiet > "$T/fit.json"
grep -q '"dummy_memory": 3' "$T/fit.json" || { cat "$T/fit.json"; echo "add_option: the run does not report it"; exit 1; }
PYTHONPATH=$S/python NLEMBED_LIBRARY=$S/build/libnlembed.so /usr/bin/python3 - <<'PY'
import nlembed
t = nlembed.TSNE(dummy_memory=3)
assert t.get_params()["dummy_memory"] == 3 and nlembed.TSNE().dummy_memory == 10
assert t.library_options()["dummy-memory"] == "3"
assert "\ndummy_memory : int, default=10\n    lbfgs: correction pairs kept" in nlembed.TSNE.__doc__, nlembed.TSNE.__doc__
PY
PYTHONPATH=$S/python NLEMBED_LIBRARY=$S/build/libnlembed.so /usr/bin/python3 "$S/docs/options_md.py"
grep -q '^| `dummy-memory` |  |  | int | `10` | an integer >= 1 | lbfgs: correction pairs kept' "$S/docs/options.md" ||
  { echo "add_option: docs/options.md lacks the row"; exit 1; }
echo "add_option: the row reaches the tool's --help and run, Python's TSNE and docs/options.md"
