#!/usr/bin/env bash
# add_reader.sh SCRATCH — adds a dummy input reader to SCRATCH (a scratch
# copy of the tree with build/ built) the way CONTRIBUTING.md says: its own
# file, src/io/dummy.c, and its row in the reader table, src/io/readers.def.
# The dummy format is "NLEDUMMY\n" then whitespace-separated rows; the tool
# must refuse such a file before (text with a ragged first line) and read it
# after.
set -eu
S=${1:?usage: add_reader.sh SCRATCH}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf 'NLEDUMMY\n1 2\n3 4\n5 7\n8 9\n' > "$T/points.dummy"
if "$S/build/nlembed" pca "$T/points.dummy" -d 1 -o "$T/out.npy" --quiet > /dev/null 2>&1; then
  echo "add_reader: the tool already reads the dummy format" >&2; exit 1
fi
cat > "$S/src/io/dummy.c" <<'C'
/* dummy.c — a reader for "NLEDUMMY\n" followed by rows of numbers. */
#include "io_internal.h"

#include <string.h>

int nle__dummy_magic(const uint8_t *head, size_t len) { return len >= 9 && !memcmp(head, "NLEDUMMY\n", 9); }

nle_status nle__dummy_parse(nle_ctx *ctx, const char *name, const uint8_t *buf, size_t len, const char *inner,
                            const nle_read_opts *opts, int flags, nle_dataset **out) {
  (void)inner, (void)flags;
  return nle_parse_text(ctx, name, (const char *)buf + 9, len - 9, opts, out);
}
C
sed -i '/^NLE_READER(text,/i NLE_READER(dummy, nle__dummy_magic, nle__dummy_parse, nle__read_by_parsing, nle__gzip_refused, 0, none)' \
  "$S/src/io/readers.def"
make -C "$S" -s -j2 all > /dev/null
"$S/build/nlembed" pca "$T/points.dummy" -d 1 -o "$T/out.npy" --quiet > /dev/null
/usr/bin/python3 -c 'import numpy, sys; x = numpy.load(sys.argv[1]); assert x.shape == (4, 1), x.shape' "$T/out.npy"
echo "add_reader: the dummy reader reads its file"
