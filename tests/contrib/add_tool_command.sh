#!/usr/bin/env bash
# add_tool_command.sh SCRATCH — adds a command of the tool alone the way
# CONTRIBUTING.md says: its file cli/cmd_NAME.c (its options as cli_row
# rows) and its line in cli/main.c's tool_commands. Then builds and shows
# the command reached: listed by `nlembed --help`, its --help made from its
# rows, its options parsed and range-checked by them.
set -eu
S=${1:?usage: add_tool_command.sh SCRATCH}
N=$S/build/nlembed
if "$N" dummy --help > /dev/null 2>&1; then echo "add_tool_command: the tool already has dummy" >&2; exit 1; fi
cat > "$S/cli/cmd_dummy.c" <<'C'
/* cmd_dummy.c — `nlembed dummy`: prints its count (a row of tests/contrib). */
#include "cli.h"

#include <stddef.h>
#include <stdio.h>

typedef struct {
  int count;
} dummy_settings;

static const cli_row rows[] = {
    {"count", 'c', "N", CLI_INT, offsetof(dummy_settings, count), .lo = 1, .hi = 9, .help = "a number", .def = "3"},
    {NULL}};

int cmd_dummy(int argc, char **argv) {
  cli_env env;
  if (cli_env_init(&env, "dummy", NULL)) return 1;
  dummy_settings o = {.count = 3};
  int rc = cli_read_options(&env, argc, argv, "Usage: nlembed dummy [options]\n", rows, &o);
  if (!rc && !env.help_shown) printf("{\"command\": \"dummy\", \"count\": %d}\n", o.count);
  cli_env_free(&env);
  return rc;
}
C
sed -i 's|^static const struct {$|int cmd_dummy(int argc, char **argv);\n&|; s|^    {"view", cmd_view, .*|&\n    {"dummy", cmd_dummy, "a dummy command of tests/contrib", false},|' "$S/cli/main.c"
grep -q '"dummy", cmd_dummy' "$S/cli/main.c" || { echo "add_tool_command: no tool_commands table in cli/main.c"; exit 1; }
make -C "$S" -s -j2 all > /dev/null
"$N" --help | grep -q '^  dummy  *a dummy command' || { echo "add_tool_command: nlembed --help does not list it"; exit 1; }
"$N" dummy --help | grep -q -- '-c, --count N .*a number (default 3)' || { echo "add_tool_command: no --help line of its row"; exit 1; }
"$N" dummy -c 7 | grep -q '"count": 7' || { echo "add_tool_command: -c 7 not taken"; exit 1; }
"$N" dummy --count 10 2>&1 | grep -qF -- '-c takes an integer from 1 to 9, not "10"' || { echo "add_tool_command: no range check"; exit 1; }
echo "add_tool_command: nlembed dummy is listed, its --help and options come from its row"
