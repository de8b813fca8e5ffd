#!/bin/sh
# Reproducible outputs: the same .nnk built twice, in two build directories
# with the same relative invocation, gives byte-identical C, CUDA, header
# and depfile, and identical objects (the C compiler reads the generated code
# from stdin, so no temporary file name leaks into the object).
set -u
here=$(cd "$(dirname "$0")" && pwd)
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
case $nnkc in /*) ;; *) nnkc=$(pwd)/$nnkc ;; esac
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/b1" "$work/b2"
cp "$here/common/"*.nnk "$work/src/"
fail=0
for b in b1 b2; do
    (cd "$work/$b" &&
     "$nnkc" -S --target=c ../src/uses_common.nnk -o k.c &&
     "$nnkc" -S --target=cuda ../src/uses_common.nnk -o k.cu &&
     "$nnkc" --emit-header ../src/uses_common.nnk -o k.h &&
     "$nnkc" -c --no-cuda ../src/uses_common.nnk -o k.o -MD -MP -MF k.d) || { echo "FAIL: nnkc failed in $b"; exit 1; }
done
for f in k.c k.cu k.h k.d k.o; do
    if cmp -s "$work/b1/$f" "$work/b2/$f"; then
        echo "ok   $f is identical in both builds"
    else
        echo "FAIL $f differs between the two builds"
        fail=1
    fi
done
exit $fail
