#!/usr/bin/env bash
# add_tool_option.sh SCRATCH — adds an option to a command of the tool alone
# the way CONTRIBUTING.md says: one row in the command's rows (cli/cmd_plot.c).
# The row, "dummy-width", is a second name for a field that has a row
# already (the plot's width), so that only the command's file changes; a
# real new option may need its field too. Then builds and shows the row
# reached: plot's --help lists it, its value is range-checked and taken.
set -eu
S=${1:?usage: add_tool_option.sh SCRATCH}
N=$S/build/nlembed T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sed -i 's|^    {"no-legend", .*|    {"dummy-width", 0, "W", CLI_INT, FIELD(plot.width), .lo = 100, .hi = 200, .help = "a row of tests/contrib"},\n&|' \
  "$S/cli/cmd_plot.c"
grep -q '"dummy-width"' "$S/cli/cmd_plot.c" || { echo "add_tool_option: no rows in cli/cmd_plot.c"; exit 1; }
make -C "$S" -s -j2 all > /dev/null
"$N" plot --help | grep -q -- '--dummy-width W .*a row of tests/contrib' || { echo "add_tool_option: no --help line"; exit 1; }
"$N" pca spiral:50 -o "$T/x.npy" --quiet > /dev/null
"$N" plot "$T/x.npy" --dummy-width 99 -o "$T/x.png" 2>&1 | grep -qF -- '--dummy-width takes an integer from 100 to 200, not "99"' ||
  { echo "add_tool_option: no range check"; exit 1; }
"$N" plot "$T/x.npy" --dummy-width 150 -o "$T/x.svg" --quiet
grep -q 'width="150' "$T/x.svg" || { echo "add_tool_option: the value was not taken"; exit 1; }
echo "add_tool_option: plot's --dummy-width is listed, checked and taken from its row"
