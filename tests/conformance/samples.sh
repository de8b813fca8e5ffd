#!/bin/sh
# The samples: samples/demo.sh builds them (as a project of their own, with
# the build tree's nnkc) and runs them; every app checks its own results.
: "${top_builddir:=$(pwd)}"
exec "$(dirname "$0")/../../samples/demo.sh" "$top_builddir"
