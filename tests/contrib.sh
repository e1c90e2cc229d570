#!/usr/bin/env bash
# contrib.sh — CONTRIBUTING.md's "Where does X go" held to its counts. Each
# tests/contrib/add_KIND.sh adds a dummy KIND (a reader, an optimiser, an
# engine, a spectral method, an option of a method or of a map) to its own fresh scratch copy of
# this tree (the working tree's files that git does not ignore, with their
# times, and build/, so that make rebuilds only what the dummy changes),
# builds it and reaches it; the files git then says changed, tests/ and
# docs/ apart, must be at most the kind's figure below, and CONTRIBUTING.md
# must name the script. Ends with "N passed, N failed" (tests/lib.sh).
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

# the files to touch for each kind: its own file and its table row, or (an
# option) its row alone
declare -A most=([reader]=2 [optimizer]=2 [engine]=2 [spectral]=2 [option]=1 [map_option]=1 [tool_command]=2 [tool_option]=1)

if [ ! -x build/nlembed ] || [ ! -f build/libnlembed.so ]; then
  echo "contrib: build/ is not built (make all first)"
  echo "0 passed, 1 failed"
  exit 1
fi

# The base every scratch copy starts from, committed so that git status
# shows what an add script changed.
base=$T/base
mkdir -p "$base"
git ls-files -z -co --exclude-standard | tar -c --null --ignore-failed-read -T - -f - 2> /dev/null | tar -x -C "$base"
cp -a build "$base/build"
(cd "$base" && git init -q && git add -A && git -c user.name=contrib -c user.email=contrib@localhost commit -q -m base) ||
  { bad base "could not commit the scratch copy"; finish; exit; }

for script in tests/contrib/add_*.sh; do
  kind=$(basename "$script" .sh)
  kind=${kind#add_}
  start=$SECONDS
  scratch=$T/$kind
  cp -a "$base" "$scratch"
  if ! bash "$script" "$scratch" > "$T/$kind.log" 2>&1; then
    bad "$kind" "$script failed: $(tail -n 5 "$T/$kind.log")"
    rm -rf "$scratch"
    continue
  fi
  changed=$(cd "$scratch" && git status --porcelain --untracked-files=all | cut -c4- | grep -Ev '^(tests|docs)/')
  n=$(printf '%s' "$changed" | grep -c .)
  touched=$(printf "%s" "$changed" | tr "\n" " ")
  rm -rf "$scratch"
  if [ -z "${most[$kind]:-}" ]; then
    bad "$kind" "no figure for $script in tests/contrib.sh (it touched $n: $touched)"
  elif [ "$n" -gt "${most[$kind]}" ]; then
    bad "$kind" "$n files touched, CONTRIBUTING.md's figure is ${most[$kind]}: $touched"
  elif ! grep -q "tests/contrib/add_$kind.sh" CONTRIBUTING.md; then
    bad "$kind" "CONTRIBUTING.md does not name tests/contrib/add_$kind.sh"
  else
    ok "$kind: $n files ($touched), $((SECONDS - start)) s"
  fi
done
finish
