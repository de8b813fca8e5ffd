#!/bin/sh
# Builds samples/extension/host2.c out of tree, as a third party would
# (one shared object against the public headers), and runs
# samples/extension/run_host2, which finds it through NNK_EXTENSION_PATH,
# lists, imports and uses it.
set -e
: "${top_srcdir:=.}" "${top_builddir:=.}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-ext-sample.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=c11 -Wall -Werror -shared -fPIC -I"$top_srcdir/runtime/include" \
    "$top_srcdir/samples/extension/host2.c" -o "$tmp/libnnk_ext_host2.so"
NNK_EXTENSION_PATH="$tmp/none:$tmp" NNK_CACHE_DIR="$tmp/cache" "$top_builddir/samples/extension/run_host2"
