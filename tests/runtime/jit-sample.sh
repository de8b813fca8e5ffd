#!/bin/sh
# Runs samples/jit/jit_demo (a kernel from a string, JIT-compiled for the
# CPU) with a fresh disk cache, twice: the second run loads from the cache.
set -e
: "${top_builddir:=.}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-jit-sample.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
NNK_CACHE_DIR="$tmp" "$top_builddir/samples/jit/jit_demo"
NNK_CACHE_DIR="$tmp" "$top_builddir/samples/jit/jit_demo" >/dev/null
ls "$tmp"/*.so >/dev/null
