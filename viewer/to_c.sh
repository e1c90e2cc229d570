#!/bin/sh
# to_c.sh [BUNDLE] — a C source defining the viewer's script as bytes
# (nle_viewer_js, nle_viewer_js_len), for libnlembed's map page (Makefile rule
# $(BUILD)/viewer_bundle.c). Without BUNDLE (node and npm were not there to
# build it) the array is empty and `nlembed view` says how to build it.
# od and awk only: no package beyond the base system.
set -e
echo '/* Generated from viewer/dist/nlembed-view.js by viewer/to_c.sh; do not edit. */'
echo '#include <stddef.h>'
if [ -n "${1:-}" ]; then
  echo 'const unsigned char nle_viewer_js[] = {'
  od -An -v -tu1 "$1" | awk '{ s = ""; for (i = 1; i <= NF; i++) s = s $i ","; print s }'
  echo '};'
  echo 'const size_t nle_viewer_js_len = sizeof nle_viewer_js;'
else
  echo 'const unsigned char nle_viewer_js[1] = {0};'
  echo 'const size_t nle_viewer_js_len = 0;'
fi
