#!/bin/sh
# The opencl extension on the machine's OpenCL device (PoCL in CI):
# tests/opencl/test_opencl in each of its modes, one process each.
#  - main, then cached in a second process with the same NNK_CACHE_DIR
#    (NNK_OPENCL_BINARY_CACHE=1: PoCL's default is off): the second one
#    loads the program binary from the disk cache instead of building it;
#  - uncached: that default on PoCL, programs built and never stored;
#  - none: no ICD loader at all (NNK_OPENCL_LIBRARY names no file), and an
#    ICD loader that finds no driver (OCL_ICD_VENDORS, an empty directory);
#  - reductions with NNK_OPENCL_FORCE=1, 2, 3: every reduction case of
#    main in each layout;
#  - nofp64: f64 on a device without cl_khr_fp64 (hidden);
#  - oom: a device of 1 MiB (NNK_OPENCL_MEM_LIMIT);
#  - threads: the program cache, launches, the allocator and a module's
#    instances from four threads at once (tsan.sh runs it under
#    ThreadSanitizer; here plainly, and under ASan in the sanitizer build).
# PoCL compiles each kernel with LLVM the first time; POCL_CACHE_DIR under
# the build tree keeps its own cache between runs of make check.
# Exit 77 without a device unless NNK_OPENCL_REQUIRED=1 (CI sets it).
set -e
: "${top_srcdir:=.}" "${top_builddir:=.}"
t="$top_builddir/tests/opencl/test_opencl"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-opencl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$top_builddir/tests/opencl/pocl-cache" "$tmp/vendors"
NNK_EXTENSION_PATH="$top_builddir/.libs"
POCL_CACHE_DIR="$top_builddir/tests/opencl/pocl-cache"
NNK_CACHE_DIR="$tmp/cache"
export NNK_EXTENSION_PATH POCL_CACHE_DIR NNK_CACHE_DIR
# under the sanitizers: what PoCL and LLVM keep until exit is theirs
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$top_srcdir/tests/opencl/lsan.supp"
export LSAN_OPTIONS
rc=0
NNK_OPENCL_BINARY_CACHE=1 "$t" main || rc=$?
[ $rc -eq 0 ] || exit $rc
NNK_OPENCL_BINARY_CACHE=1 "$t" cached
NNK_CACHE_DIR="$tmp/cache-auto" "$t" uncached
# every reduction layout on every case: a work-group per output (1), a
# work-item per output (2), split (3), whatever dispatch.c would choose
for f in 1 2 3; do
    NNK_OPENCL_FORCE=$f "$t" reductions
done
NNK_OPENCL_LIBRARY="$tmp/libOpenCL-none.so.1" "$t" none
OCL_ICD_VENDORS="$tmp/vendors" OPENCL_VENDOR_PATH="$tmp/vendors" "$t" none
NNK_OPENCL_HIDE_EXTENSIONS=cl_khr_fp64 "$t" nofp64
NNK_OPENCL_MEM_LIMIT=1048576 "$t" oom
# without the leak check: LeakSanitizer stops every thread at exit, and with
# PoCL's worker threads of this mode its tracer once died of SIGSEGV in CI
# (all 242 checks had passed); the other modes check leaks, ASan stays on
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$t" threads
