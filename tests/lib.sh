# lib.sh — what the command-line test scripts share (sourced, not run): a
# scratch folder, the counters, and the two assertions.
set -u
NLEMBED=${NLEMBED:-./build/nlembed}
N=$NLEMBED
T=$(mktemp -d /tmp/nlembed-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
passed=0
failed=0

ok() { echo "ok $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

# One run of a command that must fail: a non-zero exit that is not a crash,
# one line on stderr holding `want`, no control bytes or broken UTF-8 in it
# (bytes quoted from files come out escaped), no temporary left behind.
# Sets `why` when it did not.
fail_once() {
  local want=$1 rc lines
  shift
  why=""
  "$@" > "$T/stdout" 2> "$T/stderr"
  rc=$?
  lines=$(wc -l < "$T/stderr")
  if [ $rc -eq 0 ]; then why="exit 0"
  elif [ $rc -ge 128 ]; then why="crashed (exit $rc): $(head -c 300 "$T/stderr")"
  elif [ "$lines" -ne 1 ]; then why="$lines lines on stderr: $(head -c 300 "$T/stderr")"
  elif ! grep -qF -- "$want" "$T/stderr"; then why="message lacks '$want': $(cat "$T/stderr")"
  elif LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$T/stderr" || ! iconv -f UTF-8 -t UTF-8 "$T/stderr" > /dev/null 2>&1
  then why="raw control bytes or broken UTF-8 in the message: $(od -c "$T/stderr" | head -5)"
  elif ls -a "$T" "$T"/*/ 2> /dev/null | grep -q '\.tmp\.'; then why="left a temporary file"
  fi
}

# expect_fail NAME SUBSTRING OUTPUTS -- command...
# OUTPUTS: the files the command would write, colon-separated ("-" for
# none). The command runs twice: with none of them present (none may
# appear), then with each holding a sentinel (each must be byte-identical
# afterwards), so a failed run neither leaves a file nor touches one.
expect_fail() {
  local name=$1 want=$2 outs=$3 f
  shift 4
  local -a files=()
  [ "$outs" != "-" ] && IFS=: read -r -a files <<< "$outs"
  for f in "${files[@]}"; do rm -f "$f"; done
  fail_once "$want" "$@"
  for f in "${files[@]}"; do [ -z "$why" ] && [ -e "$f" ] && why="left an output file $f"; done
  if [ -z "$why" ] && [ ${#files[@]} -gt 0 ]; then
    for f in "${files[@]}"; do printf 'sentinel for %s\n' "$name" > "$f"; done
    fail_once "$want" "$@"
    for f in "${files[@]}"; do
      [ -z "$why" ] && [ "$(cat "$f" 2> /dev/null)" != "sentinel for $name" ] && why="changed the existing $f"
      rm -f "$f"
    done
  fi
  if [ -n "$why" ]; then bad "$name" "$why"; else ok "$name"; fi
}

expect_ok() {
  local name=$1
  shift
  if "$@" > "$T/stdout" 2> "$T/stderr"; then ok "$name"; else bad "$name" "exit $?: $(head -c 300 "$T/stderr")"; fi
}

finish() {
  echo "$passed passed, $failed failed"
  [ $failed -eq 0 ]
}
