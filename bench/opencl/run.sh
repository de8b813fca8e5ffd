#!/bin/sh
# bench/opencl/run.sh BUILDDIR - the opencl extension on this machine's
# OpenCL device (PoCL here) against nnk's CPU path (`make bench-opencl`),
# then the first-call time of the three kernels: with every cache empty
# (nnk's and PoCL's), with nnk's disk cache filled (the program binary is
# loaded, not built) but PoCL's empty, and with both filled.  Not part of
# make check: nothing is asserted about times.  docs/opencl.md has figures.
set -eu
b=$(cd "${1:-.}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-oclbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
NNK_EXTENSION_PATH="$b/.libs"
export NNK_EXTENSION_PATH
run() { "$b/bench/opencl/opencl_bench" "$@"; }
echo "== kernels (median of 9; opencl on device arrays, synchronised; cpu on host arrays)"
NNK_CACHE_DIR="$tmp/warm" POCL_CACHE_DIR="$tmp/pocl-warm" run all
echo "== first calls, every cache empty"
NNK_CACHE_DIR="$tmp/nnk" POCL_CACHE_DIR="$tmp/pocl1" run first
echo "== first calls, nnk's disk cache filled, PoCL's empty"
NNK_CACHE_DIR="$tmp/nnk" POCL_CACHE_DIR="$tmp/pocl2" run first
echo "== first calls, both filled"
NNK_CACHE_DIR="$tmp/nnk" POCL_CACHE_DIR="$tmp/pocl2" run first
