#!/usr/bin/env bash
# install.sh — `make install` into a fresh prefix as a user of the library
# would meet it: the files and links, only public symbols exported, and the
# README's example built with `pkg-config --cflags --libs nlembed` (shared,
# then static) and run against the installed library.
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh
prefix=$T/prefix
# (a stand-in for ldconfig: the test does not touch the machine's loader cache)
printf '#!/bin/sh\necho "$@" > "%s"\n' "$T/ldconfig_ran" > "$T/ldconfig"
chmod +x "$T/ldconfig"
if make -s install PREFIX="$prefix" LDCONFIG="$T/ldconfig" > "$T/install.log" 2>&1; then ok install
else bad install "$(tail -c 300 "$T/install.log")"; fi
# without DESTDIR the loader's cache is refreshed; a staged DESTDIR install leaves it alone
if [ -f "$T/ldconfig_ran" ]; then ok install_runs_ldconfig; else bad install_runs_ldconfig "ldconfig not run"; fi
rm -f "$T/ldconfig_ran"
if make -s install PREFIX=/usr/local DESTDIR="$T/stage" LDCONFIG="$T/ldconfig" > "$T/install.log" 2>&1 \
  && [ -f "$T/stage/usr/local/lib/libnlembed.so" ] && [ ! -f "$T/ldconfig_ran" ]; then ok install_destdir_no_ldconfig
else bad install_destdir_no_ldconfig "$(tail -c 300 "$T/install.log")"; fi
version=$(sed -n 's/^#define NLE_VERSION_STRING "\(.*\)"/\1/p' include/nlembed/core.h)
missing=""
for f in lib/libnlembed.a "lib/libnlembed.so.$version" include/nlembed.h lib/pkgconfig/nlembed.pc bin/nlembed \
  $(cd include && ls nlembed/*.h | sed "s|^|include/|"); do
  [ -f "$prefix/$f" ] || missing="$missing $f"
done
[ "$(readlink "$prefix/lib/libnlembed.so.${version%%.*}")" = "libnlembed.so.$version" ] || missing="$missing libnlembed.so.${version%%.*}"
[ "$(readlink "$prefix/lib/libnlembed.so")" = "libnlembed.so.$version" ] || missing="$missing libnlembed.so"
if [ -z "$missing" ]; then ok install_files; else bad install_files "missing:$missing"; fi
soname=$(objdump -p "$prefix/lib/libnlembed.so.$version" 2> /dev/null | awk '/SONAME/ {print $2}')
if [ "$soname" = "libnlembed.so.${version%%.*}" ]; then ok install_soname; else bad install_soname "soname '$soname'"; fi
# the library needs no graphics: cairo is the tool's
if ! objdump -p "$prefix/lib/libnlembed.so.$version" | grep NEEDED | grep -q cairo; then ok library_without_cairo
else bad library_without_cairo "$(objdump -p "$prefix/lib/libnlembed.so.$version" | grep NEEDED | tr '\n' ' ')"; fi

# every exported symbol is public API: nle_ and a letter (not nle__), and
# the public header declares each
nm -D --defined-only "$prefix/lib/libnlembed.so" | awk '{print $3}' | sort > "$T/exported"
exported=$(wc -l < "$T/exported")
stray=$(grep -cv '^nle_[a-z0-9]' "$T/exported")
undeclared=$(while read -r sym; do grep -qw "$sym" include/nlembed/*.h || echo "$sym"; done < "$T/exported" | head -5)
if [ "$exported" -gt 100 ] && [ "$stray" -eq 0 ] && [ -z "$undeclared" ]; then ok exported_symbols_public
else bad exported_symbols_public "$exported exported, $stray not nle_*: $(grep -v '^nle_[a-z0-9]' "$T/exported" | head -5 | tr '\n' ' ') undeclared: $undeclared"; fi

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# each installed stage header stands on its own (it includes what it uses),
# in C11 and in C++ (its extern "C" block), warnings as errors
alone=""
for h in "$prefix"/include/nlembed.h "$prefix"/include/nlembed/*.h; do
  inc=${h#"$prefix/include/"}
  printf '#include <%s>\nint main(void) { return 0; }\n' "$inc" > "$T/alone.c"
  cc -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$prefix/include" -c "$T/alone.c" -o "$T/alone.o" 2>> "$T/alone_err" || alone="$alone $inc(C)"
  c++ -x c++ -std=c++11 -Wall -Wextra -Werror -I"$prefix/include" -c "$T/alone.c" -o "$T/alone.o" 2>> "$T/alone_err" || alone="$alone $inc(C++)"
done
if [ -z "$alone" ]; then ok headers_stand_alone; else bad headers_stand_alone "$alone: $(head -c 300 "$T/alone_err")"; fi
sed -n '/^```c$/,/^```$/p' README.md | sed '1d;$d' > "$T/example.c"
# shellcheck disable=SC2046
if cc -std=c11 "$T/example.c" -o "$T/example" $(pkg-config --cflags --libs nlembed) 2> "$T/cc_err" \
  && LD_LIBRARY_PATH=$prefix/lib "$T/example" > "$T/out" 2>&1 && grep -q "^5000 points, E [0-9.]*, 450 iterations" "$T/out" \
  && LD_LIBRARY_PATH=$prefix/lib ldd "$T/example" | grep -q "libnlembed.so.${version%%.*} => $prefix/lib/"; then
  ok pkg_config_shared
else bad pkg_config_shared "$(head -c 300 "$T/cc_err") $(head -c 300 "$T/out" 2> /dev/null)"; fi
# the README's static recipe as it is written, with libnlembed.so beside
# libnlembed.a: no libnlembed.so in the program's needs (NEEDED) nor in
# ldd's list, and it runs with the installed folder off the search path
# shellcheck disable=SC2046
if cc -std=c11 "$T/example.c" -o "$T/example_static" $(pkg-config --cflags --libs nlembed-static) 2> "$T/cc_err" \
  && [ -f "$prefix/lib/libnlembed.so" ] && ! objdump -p "$T/example_static" | grep NEEDED | grep -q libnlembed \
  && ! LD_LIBRARY_PATH=$prefix/lib ldd "$T/example_static" | grep -q libnlembed \
  && "$T/example_static" > "$T/out" 2>&1 && grep -q "^5000 points, E [0-9.]*, 450 iterations" "$T/out"; then
  ok pkg_config_static
else bad pkg_config_static "$(head -c 300 "$T/cc_err") $(objdump -p "$T/example_static" 2> /dev/null | grep NEEDED | tr -s ' \n' ' ') $(head -c 300 "$T/out" 2> /dev/null)"; fi
# and the README's recipe is the one tested
if grep -q 'pkg-config --cflags --libs nlembed-static' README.md; then ok readme_static_recipe
else bad readme_static_recipe "README.md does not give the static recipe tested here"; fi
# `import nlembed` finds the installed library with no NLEMBED_LIBRARY: through
# pkg-config's libdir (this prefix is not in the loader's cache)
py_out=$(cd "$T" && env -u NLEMBED_LIBRARY PYTHONPATH="$OLDPWD/python" /usr/bin/python3 -c \
  "import nlembed; print(nlembed.library_path); print(nlembed.library_version())" 2>&1)
if [ "$(echo "$py_out" | head -n 1)" = "$prefix/lib/libnlembed.so.0" ] && [ "$(echo "$py_out" | tail -n 1)" = "$version" ]
then ok python_import_after_install; else bad python_import_after_install "$(echo "$py_out" | tail -c 300)"; fi
if "$prefix/bin/nlembed" --version | grep -qx "nlembed $version"; then ok installed_tool
else bad installed_tool "$("$prefix/bin/nlembed" --version 2>&1 | head -c 200)"; fi
finish
