#!/bin/sh
# bench/opencl/run.sh BUILDDIR - the opencl extension on this machine's
# OpenCL device (PoCL here) against nnk's CPU path and the OpenMP limit
# (each case as a plain OpenMP C loop, compiled in the bench) as ratios
# (`make bench-opencl`), then the first-call time of the three kernels:
# with every cache empty (nnk's and PoCL's) and with PoCL's filled, as by
# default; then with NNK_OPENCL_BINARY_CACHE=1: every cache empty, nnk's
# disk cache filled (the binary is loaded, not built) but PoCL's empty,
# and both filled.  Not part of
# make check: nothing is asserted about times.  docs/opencl.md has figures.
set -eu
b=$(cd "${1:-.}" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-oclbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
NNK_EXTENSION_PATH="$b/.libs"
export NNK_EXTENSION_PATH
# the limit loops' threads sleep when a region ends (no core taken from the next case)
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
export OMP_WAIT_POLICY
run() { "$b/bench/opencl/opencl_bench" "$@"; }
echo "== kernels (median of 9; omp: the plain OpenMP loop; cpu: nnk on host arrays; opencl on device arrays, synchronised)"
uptime
NNK_CACHE_DIR="$tmp/warm" POCL_CACHE_DIR="$tmp/pocl-warm" run all
echo "== first calls, every cache empty (default: on PoCL no binaries in nnk's disk cache)"
NNK_CACHE_DIR="$tmp/nnk0" POCL_CACHE_DIR="$tmp/pocl0" run first
echo "== first calls, PoCL's cache filled (a second process, the default)"
NNK_CACHE_DIR="$tmp/nnk0" POCL_CACHE_DIR="$tmp/pocl0" run first
echo "== first calls, every cache empty, NNK_OPENCL_BINARY_CACHE=1 (binaries stored)"
NNK_OPENCL_BINARY_CACHE=1 NNK_CACHE_DIR="$tmp/nnk" POCL_CACHE_DIR="$tmp/pocl1" run first
echo "== first calls, NNK_OPENCL_BINARY_CACHE=1, nnk's disk cache filled, PoCL's empty"
NNK_OPENCL_BINARY_CACHE=1 NNK_CACHE_DIR="$tmp/nnk" POCL_CACHE_DIR="$tmp/pocl2" run first
echo "== first calls, NNK_OPENCL_BINARY_CACHE=1, both filled"
NNK_OPENCL_BINARY_CACHE=1 NNK_CACHE_DIR="$tmp/nnk" POCL_CACHE_DIR="$tmp/pocl2" run first
uptime
