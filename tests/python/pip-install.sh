#!/bin/sh
# tests/python/pip-install.sh - `pip install ./python` as a pip user does it
# against an installed libnnk: pkg-config finds libnnk (here a nnk.pc
# pointing into this build tree stands in for an installed one), pip builds
# nnk._nnk with python/setup.py into a private target directory, and the
# installed package runs a jit function on numpy arrays.  About 10 s.
# Skipped (77, saying why) without pip, setuptools and wheel, numpy, or
# pkg-config, and in a sanitizer build (the pip-built module is not
# instrumented; tests/python/run.sh covers the package there).
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
PY=${PYTHON:-}
skip() { echo "SKIP: $*" >&2; exit 77; }
[ -n "$PY" ] && [ "$PY" != : ] || skip "no Python configured"
case "${SAN_FLAGS:-}" in *sanitize=*) skip "sanitizer build: the pip-built module is not instrumented" ;; esac
"$PY" -c 'import setuptools, wheel, pip, numpy' 2>/dev/null || skip "$PY lacks pip, setuptools, wheel or numpy"
command -v pkg-config >/dev/null 2>&1 || skip "no pkg-config"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
[ -e "$top_builddir/.libs/libnnk.so" ] || { echo "no $top_builddir/.libs/libnnk.so" >&2; exit 99; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-pip.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/pc"
cat > "$tmp/pc/nnk.pc" <<PC
Name: nnk
Description: nnk (build tree $top_builddir)
Version: 0.1.0
Cflags: -I$top_srcdir/runtime/include
Libs: -L$top_builddir/.libs -lnnk
PC
# pip builds in a copy: the source tree stays clean
cp -R "$top_srcdir/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src/"*.egg-info "$tmp/src/stage"
PKG_CONFIG_PATH="$tmp/pc" "$PY" -m pip install -q --no-cache-dir --no-build-isolation --no-deps --no-index \
    --target "$tmp/site" "$tmp/src" >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; exit 1; }
cd "$tmp" || exit 99
NNK_CACHE_DIR="$tmp/cache" PYTHONPATH="$tmp/site" "$PY" - <<'PYEOF' || exit 1
import os, sys
import numpy as np
import nnk
assert nnk.__file__.startswith(os.path.join(os.environ["PYTHONPATH"], "nnk")), nnk.__file__
f = nnk.jiterator._create_jit_fn("elementwise k(x: f32[], a: f32 = 2) -> (y: f32[]) { y = a * x + 1; }")
y = f(np.arange(4, dtype=np.float32))
assert type(y) is np.ndarray and y.tolist() == [1, 3, 5, 7], y
print("pip-installed nnk:", nnk.__file__, y)
PYEOF
