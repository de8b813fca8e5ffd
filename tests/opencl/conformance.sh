#!/bin/sh
# tests/opencl/conformance.sh - the numeric conformance suite of the C back
# end (tests/conformance) through the opencl extension on the machine's
# device (PoCL in CI): tests/gpu/gpu_conformance.py --ext opencl, the
# modules in two processes (PoCL and its LLVM start once in each), each NAME_strided
# call of the C code also run on the device through libnnk (module,
# instance, clBuildProgram, launch) and compared with the C result; then
# strided device views (test_device_views: ew_s, every reduction layout).
#
# Every instance of every module runs on the device, test_complex and
# test_inout included (an in-out parameter's output is its input, read
# back), and test_raw's hostile views run in C only (strides past int64_t:
# no copy of them can be made, so none can reach a device; the C code must
# refuse them).
#
# Cost.  PoCL compiles every instance with LLVM: clBuildProgram and, at the
# first launch of each kernel, its work-group function, most of which is
# LLVM's optimiser at -O3 (about 1.2 CPU s per reduction instance, 0.25 s
# with -cl-opt-disable).  So by default the instances build with
# -cl-opt-disable (NNK_OPENCL_CONF_OPTIONS, a test-only setting: the
# results stay within the same tolerances, docs/opencl.md "Tests") but for
# a fixed share, NNK_OPENCL_CONF_REAL (default 0.1; sha256 of
# "real:SEED:NAME"), built with the extension's real options.  The modules
# run in NNK_OPENCL_CONF_JOBS processes at once (default 2, the CI
# machine's cores; each log is printed after it ends).  The old knob
# NNK_OPENCL_CONF_SHARE (default 1) still puts only a share of the
# instances on the device (sha256 of "SEED:NAME", NNK_GPU_SEED, plus the
# first instance of each test).  The logs' last lines count the instances
# and calls on the device and how many were built with the real options.
# The whole: about 262 CPU s with a cold PoCL cache (the former default,
# a fifth of the instances all at -O3: 132; docs/opencl.md, "Tests").
#
set -eu
: "${top_srcdir:=$(dirname "$0")/../..}" "${top_builddir:=.}"
top_srcdir=$(cd "$top_srcdir" && pwd)
top_builddir=$(cd "$top_builddir" && pwd)
export top_srcdir top_builddir
PY=${PYTHON_NUMPY:-/usr/bin/python3}
case "${SAN_FLAGS:-}" in
*sanitize=*)
    echo "SKIP: sanitizer build: the suite runs in the plain build (Python, numpy and PoCL are not instrumented)"
    exit 77 ;;
esac
req=${NNK_OPENCL_REQUIRED:-0}
if ! "$PY" -c 'import numpy' >/dev/null 2>&1; then
    echo "SKIP: no python3 with numpy"
    [ "$req" = 1 ] && exit 1
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-oclconf.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$top_builddir/tests/opencl/pocl-cache"
NNK_EXTENSION_PATH="$top_builddir/.libs"
POCL_CACHE_DIR="$top_builddir/tests/opencl/pocl-cache"
NNK_CACHE_DIR="$tmp/cache"
# the C objects (the generated C, compiled) in the emulated suites' work
# directory, which builds most of the same ones (tests/cuda/emu-*.sh: the
# same nnkc and flags give the same file names); nnkconf writes every file
# there beside and renames it, so processes may share it
NNKCONF_WORK=${NNKCONF_WORK:-$top_builddir/tests/cuda/work}
NNK_GPU_SHARE=${NNK_OPENCL_CONF_SHARE:-1}
NNK_GPU_REAL_SHARE=${NNK_OPENCL_CONF_REAL:-0.1}
NNK_GPU_TEST_OPTIONS=${NNK_OPENCL_CONF_OPTIONS--cl-opt-disable}
export NNK_EXTENSION_PATH POCL_CACHE_DIR NNK_CACHE_DIR NNKCONF_WORK NNK_GPU_SHARE NNK_GPU_REAL_SHARE NNK_GPU_TEST_OPTIONS
jobs=${NNK_OPENCL_CONF_JOBS:-2}
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/opencl/lsan.supp"
export LSAN_OPTIONS
# a device at all? (gpu_conformance.py fails without one)
n=$("$PY" -c '
import sys; sys.path.insert(0, sys.argv[1])
import nnkrt
rt = nnkrt.Runtime(nnkrt.find_libnnk(sys.argv[2]))
print(rt.device_count(rt.extension("opencl")))' "$top_srcdir/tests/gpu" "$top_builddir" 2>&1) || n="error: $n"
case "$n" in
0 | error*)
    echo "no OpenCL device: $n"
    [ "$req" = 1 ] && { echo "FAIL: NNK_OPENCL_REQUIRED=1"; exit 1; }
    exit 77 ;;
esac
start=$(date +%s)
# two groups, one process each (or one after the other with
# NNK_OPENCL_CONF_JOBS=1), by module: an instance a module's tests share is
# built once (splitting test_elementwise's tests between the processes
# built 1,441 instances instead of 1,114: 321 CPU s instead of 262)
group1="test_elementwise.py test_complex.py test_inout.py"
group2="test_reduction.py test_half.py test_weak.py test_tuple.py test_online.py test_welford.py test_raw.py"
conf="$top_srcdir/tests/gpu/gpu_conformance.py"
run_group() { # log, modules...: then the strided device views in the second group
    log=$1
    shift
    t0=$(date +%s)
    r=0
    "$PY" "$conf" --ext opencl "$@" >"$log" 2>&1 || r=1
    views=
    case "$*" in *test_raw.py*) "$PY" "$conf" --ext opencl --views >>"$log" 2>&1 || r=1; views=" --views" ;; esac
    echo "# group $*$views: $(( $(date +%s) - t0 ))s" >>"$log"
    return $r
}
rc=0
if [ "$jobs" -ge 2 ]; then
    # shellcheck disable=SC2086
    run_group "$tmp/1.log" $group1 &
    p1=$!
    # shellcheck disable=SC2086
    run_group "$tmp/2.log" $group2 || rc=1
    wait $p1 || rc=1
else
    # shellcheck disable=SC2086
    run_group "$tmp/1.log" $group1 || rc=1
    # shellcheck disable=SC2086
    run_group "$tmp/2.log" $group2 || rc=1
fi
cat "$tmp/1.log" "$tmp/2.log"
echo "# conformance.sh: $(( $(date +%s) - start ))s with $jobs process(es)"
exit $rc
