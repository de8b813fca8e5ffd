#!/bin/sh
# tests/opencl/tsan.sh - the opencl extension's concurrency under
# ThreadSanitizer (a build configured with --enable-tsan; `make check-tsan`
# builds what it needs and runs it; tests/run-all.sh has a stage for it):
# tests/opencl/test_opencl's threads mode (the program cache: one source
# built by several threads at once and one source per thread, with the
# unused programs dropped meanwhile; launches of one program; the caching
# allocator; a module's instances at their first launch; the status line
# and memory statistics) and its main mode (four threads launching one
# program among the rest).  A report fails the test (TSan's exit code 66).
#
# No suppressions: PoCL and the ICD loader are not instrumented, so TSan
# sees only their pthread calls (which order our threads as they should)
# and none of their memory accesses.  Should a driver's internals ever
# need one, it belongs in a suppressions file here (TSAN_OPTIONS=
# suppressions=...), each entry with its reason.  In a build without
# ThreadSanitizer the test is skipped (77).
set -eu
: "${top_srcdir:=$(dirname "$0")/../..}" "${top_builddir:=.}"
case "${SAN_FLAGS:-}" in
*sanitize=thread*) ;;
*)
    echo "SKIP: not a ThreadSanitizer build (configure --enable-tsan, then make check-tsan)"
    exit 77 ;;
esac
t="$top_builddir/tests/opencl/test_opencl"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-opencl-tsan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$top_builddir/tests/opencl/pocl-cache"
NNK_EXTENSION_PATH="$top_builddir/.libs"
POCL_CACHE_DIR="$top_builddir/tests/opencl/pocl-cache"
NNK_CACHE_DIR="$tmp/cache"
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}halt_on_error=0:exitcode=66:second_deadlock_stack=1"
export NNK_EXTENSION_PATH POCL_CACHE_DIR NNK_CACHE_DIR TSAN_OPTIONS top_srcdir top_builddir
rc=0
for mode in threads main; do
    echo "== test_opencl $mode under ThreadSanitizer"
    "$t" $mode || { r=$?; echo "FAIL: test_opencl $mode: exit $r"; [ $r -eq 77 ] && exit 77; rc=1; }
done
exit $rc
